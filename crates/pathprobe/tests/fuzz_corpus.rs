//! Replays the probe_packet fuzz corpus (fuzz/corpus/probe_packet: seeds and any crash
//! reproducers) through the same harness as the fuzz target, on stable, and checks that the
//! well-formed seeds do parse (so the corpus really exercises the parser past its header).

use std::path::Path;

#[test]
fn the_fuzz_corpus_runs_through_the_parser_without_a_panic() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fuzz/corpus/probe_packet");
    let mut n = 0;
    for entry in std::fs::read_dir(&dir).unwrap() {
        let path = entry.unwrap().path();
        let data = std::fs::read(&path).unwrap();
        ccbench_pathprobe::fuzzing::fuzz_datagram(&data);
        let name = path.file_name().unwrap().to_string_lossy().to_string();
        let well_formed = !["truncated", "wrong", "unknown", "empty"].iter().any(|bad| name.starts_with(bad));
        assert_eq!(ccbench_pathprobe::wire::parse(&data).is_some(), well_formed, "{name}");
        n += 1;
    }
    assert!(n >= 10, "the seed corpus is missing ({n} files)");
}
