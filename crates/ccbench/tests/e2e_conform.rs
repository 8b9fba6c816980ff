//! `ccbench conform bbr` and `run --qlog`, end to end. Bad input needs nothing; the qlog run
//! needs root (under `CI=true` a missing root is a failure, not a skip). The conformance suite's
//! judging is tested without root in crates/conform (tests/broken.rs); a whole `conform --quick`
//! takes minutes and is measured in docs/conform.md, not run here.

mod common;

use common::{ccbench, have_root, lock, one_line, out_path, run_ok};
use serde_json::Value;

#[test]
fn conform_refuses_bad_input_in_one_line_and_leaves_nothing() {
    for (flag, value, needle) in [
        ("--cc", "quic:cubic", "BBR controllers"),
        ("--rates", "unlimited", "64kbit or more"),
        ("--rates", "10kbit", "64kbit or more"),
        ("--runs", "0", "from 1 to 1000"),
    ] {
        let out = out_path("conform-bad");
        let o = ccbench(&["conform", "bbr", flag, value, "--out", &out.to_string_lossy()]);
        one_line(&o, 2, needle);
        assert!(String::from_utf8_lossy(&o.stderr).contains(flag));
        assert!(!out.exists(), "{flag} {value}: nothing left behind");
    }
}

/// Each `.sqlog` is JSON-SEQ (RFC 7464): records start with 0x1E and each parses as JSON; the
/// first is the qlog header, the rest QUIC recovery events, BBR's state among them.
#[test]
fn run_qlog_writes_a_qlog_per_quic_connection_that_parses_as_qlog() {
    let _g = lock();
    if !have_root() {
        return;
    }
    let out = out_path("qlog");
    run_ok(&["--cc", "quic:bbr3", "--rate", "20mbit", "--rtt", "20ms", "--duration", "3s", "--runs", "1", "--seed", "3", "--qlog"], &out);
    let files: Vec<_> = std::fs::read_dir(out.join("series"))
        .unwrap()
        .flat_map(|run| std::fs::read_dir(run.unwrap().path()).unwrap())
        .map(|f| f.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "sqlog"))
        .collect();
    assert_eq!(files.len(), 1, "one QUIC connection, one qlog: {files:?}");
    let text = std::fs::read_to_string(&files[0]).unwrap();
    assert!(text.starts_with('\u{1e}'), "JSON-SEQ starts with RS");
    let records: Vec<Value> = text.split('\u{1e}').skip(1).map(|r| serde_json::from_str(r.trim_end()).unwrap_or_else(|e| panic!("{e}: {r}"))).collect();
    assert_eq!(records[0]["qlog_format"], "JSON-SEQ");
    assert_eq!(records[0]["qlog_version"], "0.3");
    assert_eq!(records[0]["trace"]["common_fields"]["protocol_type"][0], "QUIC");
    let names: Vec<&str> = records[1..].iter().map(|r| r["name"].as_str().expect("every event is named")).collect();
    let allowed = ["recovery:metrics_updated", "recovery:congestion_state_updated", "recovery:packet_lost"];
    assert!(names.iter().all(|n| allowed.contains(n)), "{names:?}");
    assert!(records[1..].iter().all(|r| r["time"].is_number() && r["data"].is_object()));
    let states: Vec<&str> = records.iter().filter(|r| r["name"] == "recovery:congestion_state_updated").filter_map(|r| r["data"]["new"].as_str()).collect();
    assert_eq!(states.first(), Some(&"STARTUP"), "{states:?}");
    assert!(states.iter().any(|s| s.starts_with("PROBE_BW_")), "BBRv3 reaches ProbeBW in 3 s: {states:?}");
    assert!(names.iter().filter(|n| **n == "recovery:metrics_updated").count() > 10);
    let _ = std::fs::remove_dir_all(&out);
}
