//! `ccbench serve`'s control protocol: arbitrary bytes through the frame reader and the message
//! decoder of both directions, as serve and its client read them. Nothing may panic.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let _ = ccbench_remote::proto::decode_stream(data);
    let _ = ccbench_remote::proto::decode::<ccbench_remote::proto::ServerMsg>(data);
    if let Ok(s) = std::str::from_utf8(data) {
        let _ = ccbench_remote::proto::unhex::<32>(s);
    }
    // A path probe's messages of both directions, every probe request through serve's check.
    let _ = ccbench_remote::probe::fuzz_input(data);
});
