//! The request and status lines of objects over QUIC, as they come off a stream cut anyhow:
//! nothing may panic, and whatever parses writes back as the same bytes.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| ccbench_workload::fuzzing::quic_objects_wire(data));
