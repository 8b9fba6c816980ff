//! The emulator's packet path (vnet header parsing, segmenting, the link model, coalescing)
//! fed arbitrary reads: nothing may panic, and every read is forwarded or counted.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| ccbench_emu::fuzzing::run_packet_path(data));
