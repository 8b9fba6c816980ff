//! QUIC stream reassembly (vendored noq-proto's `Assembler`, with ccbench's patch) driven by a
//! hostile peer's frames: any offsets, sizes and allocations, interleaved with ordered reads.
//! Nothing may panic, every byte read must be the one sent at its offset, and the connection may
//! be refused only for more than 1,024 gaps (see `vendor/noq-proto/PATCH.md`).
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| noq_proto::fuzzing::fuzz_reassembly(data));
