//! result.json files written by ccbench before the algorithm was typed in its summaries and
//! judged expectations (when `CcShare`, `ShareSummary` and `ExpectationResult` held a `String`)
//! still read, with every algorithm typed, and write out the same JSON.
//!
//! The fixtures are real results of that version (`ccbench run`, schema `ccbench.result.v3`),
//! cut to their first run and with that run's path report (the emulator's histograms) nulled to
//! keep them small:
//! - `result-v3-mix-shares.json`: `--flows quic:prague:1,tcp:cubic:1` (a mix: a summary with
//!   each algorithm's share, and each run's shares);
//! - `result-v3-expect.json`: `--cc cubic --expect 'goodput >= 5mbit'` (a judged expectation).

use ccbench_model::results::ExperimentResult;
use ccbench_model::workload::Cc;

fn read(name: &str) -> (serde_json::Value, ExperimentResult) {
    let path = format!("{}/tests/fixtures/{name}", env!("CARGO_MANIFEST_DIR"));
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{path}: {e}"));
    let value: serde_json::Value = serde_json::from_str(&text).unwrap();
    let result: ExperimentResult = serde_json::from_str(&text).unwrap_or_else(|e| panic!("{path} no longer reads: {e}"));
    (value, result)
}

#[test]
fn a_mix_written_with_string_algorithms_reads_typed_and_writes_the_same() {
    let (written, result) = read("result-v3-mix-shares.json");
    let prague: Cc = "quic:prague".parse::<ccbench_model::workload::Algorithm>().map(|a| Cc::from(&a)).unwrap();
    let cubic = Cc::new("tcp:cubic");

    // The contender is the mix's label: no one algorithm.
    assert_eq!(result.summary.len(), 1);
    assert_eq!(result.summary[0].cc.algorithm(), None);
    // Each share names a typed algorithm, in the order it was written.
    let shares = &result.summary[0].shares;
    assert_eq!(shares.iter().map(|s| &s.cc).collect::<Vec<_>>(), [&prague, &cubic]);
    assert!(shares[0].cc.algorithm().is_some_and(|a| a.is_quic() && a.name() == "prague"));
    assert!(shares[1].cc.algorithm().is_some_and(|a| !a.is_quic() && a.kernel_name() == Some("cubic")));
    let run_shares = &result.runs[0].metrics.as_ref().expect("a completed run").shares;
    assert_eq!(run_shares.iter().map(|s| &s.cc).collect::<Vec<_>>(), [&prague, &cubic]);

    // The parts that name an algorithm write out as they were read (other fields of these
    // older files gained defaults since, which is not this test's business).
    let again = serde_json::to_value(&result).unwrap();
    for part in ["/summary", "/expectations", "/params/ccs"] {
        let strip = |v: &serde_json::Value| v.pointer(part).map(|x| x.to_string().len());
        assert_eq!(strip(&again).is_some(), strip(&written).is_some(), "{part}");
    }
    for (a, b) in again["runs"].as_array().unwrap().iter().zip(written["runs"].as_array().unwrap()) {
        assert_eq!((&a["cc"], &a["metrics"]["shares"]), (&b["cc"], &b["metrics"]["shares"]), "a run's contender or shares written back differently");
    }
    assert_eq!((&again["expectations"], &again["params"]["ccs"]), (&written["expectations"], &written["params"]["ccs"]), "written back differently");
    for (a, b) in again["summary"].as_array().unwrap().iter().zip(written["summary"].as_array().unwrap()) {
        assert_eq!((&a["cc"], &a["shares"]), (&b["cc"], &b["shares"]), "a summary's contender or shares written back differently");
    }
}

#[test]
fn a_judged_expectation_written_with_a_string_algorithm_reads_typed_and_writes_the_same() {
    let (written, result) = read("result-v3-expect.json");
    assert_eq!(result.expectations.len(), 1);
    let e = &result.expectations[0];
    assert_eq!(e.cc, Cc::new("cubic"));
    assert!(e.cc.algorithm().is_some_and(|a| a.same_as(&"tcp:cubic".parse().unwrap())));
    // The judged algorithm is the summary's, compared typed.
    assert_eq!(e.cc, result.summary[0].cc);

    // The parts that name an algorithm write out as they were read (other fields of these
    // older files gained defaults since, which is not this test's business).
    let again = serde_json::to_value(&result).unwrap();
    for part in ["/summary", "/expectations", "/params/ccs"] {
        let strip = |v: &serde_json::Value| v.pointer(part).map(|x| x.to_string().len());
        assert_eq!(strip(&again).is_some(), strip(&written).is_some(), "{part}");
    }
    for (a, b) in again["runs"].as_array().unwrap().iter().zip(written["runs"].as_array().unwrap()) {
        assert_eq!((&a["cc"], &a["metrics"]["shares"]), (&b["cc"], &b["metrics"]["shares"]), "a run's contender or shares written back differently");
    }
    assert_eq!((&again["expectations"], &again["params"]["ccs"]), (&written["expectations"], &written["params"]["ccs"]), "written back differently");
    for (a, b) in again["summary"].as_array().unwrap().iter().zip(written["summary"].as_array().unwrap()) {
        assert_eq!((&a["cc"], &a["shares"]), (&b["cc"], &b["shares"]), "a summary's contender or shares written back differently");
    }
}
