//! Replays the control fuzz target's corpus (`fuzz/corpus/control`) on stable: every seed and
//! every crash reproducer added there goes through the same function as the fuzz target.

#[test]
fn every_control_corpus_input_is_handled() {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fuzz/corpus/control");
    let mut n = 0;
    for entry in std::fs::read_dir(&dir).unwrap() {
        let bytes = std::fs::read(entry.unwrap().path()).unwrap();
        ccbench_remote::proto::fuzz_input(&bytes);
        n += 1;
    }
    assert!(n >= 10, "only {n} inputs in {}", dir.display());
}
