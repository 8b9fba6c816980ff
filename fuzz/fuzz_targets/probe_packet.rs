//! The path prober's datagram parser (both halves parse bytes from the network) and the
//! estimators it feeds: nothing may panic, and what parses re-encodes to itself.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| ccbench_pathprobe::fuzzing::fuzz_datagram(data));
