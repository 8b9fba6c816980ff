//! Replays the packet-path fuzz corpus (fuzz/corpus/packet_path, seeds and any crash
//! reproducers added there) through the same harness the fuzz target runs, on stable.

use std::path::Path;

#[test]
fn the_fuzz_corpus_runs_through_the_packet_path_without_a_panic() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fuzz/corpus/packet_path");
    let mut n = 0;
    for entry in std::fs::read_dir(&dir).unwrap_or_else(|e| panic!("{}: {e}", dir.display())) {
        let path = entry.unwrap().path();
        let data = std::fs::read(&path).unwrap();
        ccbench_emu::fuzzing::run_packet_path(&data);
        n += 1;
    }
    assert!(n >= 10, "the seed corpus is missing ({n} files)");
}
