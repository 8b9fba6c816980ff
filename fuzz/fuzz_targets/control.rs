//! `ccbench serve`'s control protocol: arbitrary bytes through the frame reader and the message
//! decoder of both directions, as serve and its client read them, and through the parser of
//! `tc`'s qdisc JSON serve reports (`ccbench_remote::fuzzing::control_input`). Nothing may panic.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    ccbench_remote::fuzzing::control_input(data);
    // A path probe's messages of both directions, every probe request through serve's check.
    let _ = ccbench_remote::probe::fuzz_input(data);
});
