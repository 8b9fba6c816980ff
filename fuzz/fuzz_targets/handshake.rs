//! `ccbench serve`'s handshake and sealed records (issue 18): arbitrary bytes as the frames an
//! unauthenticated client sends serve, as a server's answers to a client, and as sealed
//! records to open (`ccbench_remote::channel::fuzz_input`). Nothing may panic, whatever the
//! key shares, lengths and MACs say.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    ccbench_remote::channel::fuzz_input(data);
});
