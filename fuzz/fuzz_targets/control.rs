//! `ccbench serve`'s control protocol: arbitrary bytes through the frame reader and the message
//! decoders of both directions, as serve and its client read them, and every decoded probe
//! request through serve's check of it against its limits
//! (`ccbench_remote::fuzzing::control_input`). Nothing may panic.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let _ = ccbench_remote::fuzzing::control_input(data);
});
