//! `ccbench conform bbr` and `run --qlog`, end to end. Bad input needs nothing; the runs need
//! root (under `CI=true` a missing root is a failure, not a skip). The conformance suite's
//! judging is tested without root in crates/conform (tests/broken.rs); a whole `conform --quick`
//! takes minutes and is measured in docs/conform.md: here one case runs on one path
//! (`--case`), once.

mod common;

use common::{ccbench, have_root, junit_read_back, lock, one_line, out_path, result, run_ok, text};
use serde_json::Value;

#[test]
fn conform_refuses_bad_input_in_one_line_and_leaves_nothing() {
    for (flag, value, needle) in [
        ("--cc", "quic:cubic", "BBR controllers"),
        ("--rates", "unlimited", "64kbit or more"),
        ("--rates", "10kbit", "64kbit or more"),
        ("--runs", "0", "from 1 to 1000"),
        ("--case", "A.99", "case numbers of the suite"),
        ("--case", "A.2", "a case runnable here"),
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
    // After the first state, every change is the controller's own (result.json's bbr_events),
    // in its order, with its rounds, at its times (each a whole number of µs apart).
    let events = result(&out)["runs"][0]["workload"]["flows"][0]["bbr_events"].as_array().expect("QUIC BBR records its changes").clone();
    let changes: Vec<&Value> = records.iter().filter(|r| r["name"] == "recovery:congestion_state_updated").skip(1).collect();
    assert_eq!(changes.len(), events.len(), "{changes:?}\n{events:?}");
    for (c, e) in changes.iter().zip(&events) {
        assert_eq!((&c["data"]["old"], &c["data"]["new"], &c["data"]["round"]), (&e["from"], &e["to"], &e["round"]), "{c} against {e}");
    }
    let (c0, e0) = (changes[0]["time"].as_f64().unwrap(), events[0]["t_us"].as_f64().unwrap());
    for (c, e) in changes.iter().zip(&events) {
        let apart = (c["time"].as_f64().unwrap() - c0) * 1e3 - (e["t_us"].as_f64().unwrap() - e0);
        assert!(apart.abs() < 1.0, "{c} is {apart} µs off its event {e}");
    }
    let _ = std::fs::remove_dir_all(&out);
}

/// One case on one path, once: A.10, the paused sender (`run --app-pause`), on quic:bbr3 at
/// 20 Mbit/s and 20 ms. With one run every cell is undecided over runs (exit 2); the matrix,
/// conform.txt and the JUnit file name the case by its appendix number and the draft's title,
/// and say how many runs passed with the evidence.
#[test]
fn conform_one_case_on_one_path_writes_the_matrix_and_junit() {
    let _g = lock();
    if !have_root() {
        return;
    }
    let out = out_path("conform-one");
    let junit = out.with_extension("xml");
    let (out_s, junit_s) = (out.to_string_lossy().to_string(), junit.to_string_lossy().to_string());
    let o = ccbench(&[
        "conform",
        "bbr",
        "--cc",
        "quic:bbr3",
        "--case",
        "A.10",
        "--rtts",
        "20ms",
        "--rates",
        "20mbit",
        "--runs",
        "1",
        "--seed",
        "3",
        "--out",
        &out_s,
        "--junit",
        &junit_s,
    ]);
    let said = text(&o);
    assert_eq!(o.status.code(), Some(2), "one run: undecided over runs:\n{said}");
    let stdout = String::from_utf8_lossy(&o.stdout).into_owned();
    assert!(stdout.contains("1 cases (1 runnable here), 1 controllers × 1 paths"), "{stdout}");
    assert!(stdout.contains("A.10 Skip PROBE_RTT due to app-limited sending"), "{stdout}");
    assert!(!stdout.contains("A.1 Exiting STARTUP"), "only the chosen case: {stdout}");
    assert!(stdout.contains("--app-pause 4s:6000ms"), "the reproducing command: {stdout}");
    let saved = std::fs::read_to_string(out.join("conform.txt")).unwrap();
    assert!(saved.contains("A.10 Skip PROBE_RTT due to app-limited sending") && saved.contains("--app-pause 4s:6000ms"), "{saved}");
    let suites = junit_read_back(&junit);
    let suites = suites.as_array().unwrap();
    assert_eq!(suites.len(), 1, "{suites:?}");
    assert_eq!(suites[0]["name"], "quic:bbr3");
    let cases = suites[0]["cases"].as_array().unwrap();
    assert_eq!(cases.len(), 1, "A.10's one assertion on the one path, nothing else: {cases:?}");
    for c in cases {
        let name = c["name"].as_str().unwrap();
        assert!(name.starts_with("A.10 Skip PROBE_RTT due to app-limited sending: ") && name.ends_with("[20mbit/20ms]"), "{name}");
        assert_eq!(c["kind"], "undecided", "{c}");
        let msg = c["message"].as_str().unwrap();
        assert!(msg.contains("/1 pass"), "the tally of the one run: {msg}");
    }
    // The run itself is an ordinary `ccbench run` with its result and series.
    assert!(out.join("quic-bbr3/20mbit-20ms/paused/result.json").exists());
    let _ = std::fs::remove_dir_all(&out);
    let _ = std::fs::remove_file(&junit);
}

/// The suite fails a broken controller from the binary (issue 31 §7): quic:bbr3 built with the
/// test-only defect `startup-plateau-rounds=6` (`CCBENCH_TEST_BBR_DEFECTS`, docs/conform.md)
/// leaves STARTUP after 6 rounds of plateau, not 3. Over 5 runs (enough to decide at α = 0.05)
/// A.1's plateau assertion fails, and only it: its other assertions (next state DRAIN, the
/// STARTUP gains) still pass. Exit 1; the matrix, report.html and JUnit all say so, and the
/// result warns that the controller was broken on purpose.
#[test]
fn conform_fails_a_startup_broken_on_purpose_and_only_where_it_is_broken() {
    let _g = lock();
    if !have_root() {
        return;
    }
    let out = out_path("conform-broken");
    let junit = out.with_extension("xml");
    let (out_s, junit_s) = (out.to_string_lossy().to_string(), junit.to_string_lossy().to_string());
    let args = [
        "conform",
        "bbr",
        "--cc",
        "quic:bbr3",
        "--case",
        "A.1",
        "--rtts",
        "40ms",
        "--rates",
        "20mbit",
        "--runs",
        "5",
        "--seed",
        "5",
        "--out",
        &out_s,
        "--junit",
        &junit_s,
    ];
    let o = std::process::Command::new(env!("CARGO_BIN_EXE_ccbench")).args(args).env("CCBENCH_TEST_BBR_DEFECTS", "startup-plateau-rounds=6").output().unwrap();
    let said = text(&o);
    assert_eq!(o.status.code(), Some(1), "a failed cell: exit 1:\n{said}");
    let stdout = String::from_utf8_lossy(&o.stdout).into_owned();
    assert!(stdout.contains("test-only: QUIC BBR built broken on purpose (CCBENCH_TEST_BBR_DEFECTS=startup-plateau-rounds=6)"), "{stdout}");
    let cases = junit_read_back(&junit);
    let cases = cases[0]["cases"].as_array().unwrap().clone();
    let kind = |needle: &str| -> String {
        let c = cases.iter().find(|c| c["name"].as_str().unwrap().contains(needle)).unwrap_or_else(|| panic!("no {needle}: {cases:?}"));
        c["kind"].as_str().unwrap_or("pass").to_string()
    };
    assert_eq!(kind("rounds after the bandwidth estimate stops growing"), "fail", "{cases:?}");
    for c in cases.iter().filter(|c| !c["name"].as_str().unwrap().contains("rounds after the bandwidth estimate")) {
        assert!(c["kind"].is_null() || c["kind"] == "pass", "only the plateau exit is broken: {c}\n{said}");
    }
    let html = std::fs::read_to_string(out.join("report.html")).unwrap();
    assert!(html.contains("A.1 Exiting STARTUP on Bandwidth Plateau <span>[§5.3.1.1"), "the case and its sections in report.html");
    assert!(html.contains("test-only: QUIC BBR built broken on purpose"));
    assert_eq!(html.matches("<td class=\"c fail\"").count(), 1, "one failed cell in report.html");
    assert!(html.contains("href=\"quic-bbr3/20mbit-40ms/bulk/report.html\""), "cells link their runs' report");
    let result: Value = serde_json::from_slice(&std::fs::read(out.join("quic-bbr3/20mbit-40ms/bulk/result.json")).unwrap()).unwrap();
    assert!(result["warnings"].as_array().unwrap().iter().any(|w| w.as_str().unwrap().contains("built broken on purpose")), "{}", result["warnings"]);
    let _ = std::fs::remove_dir_all(&out);
    let _ = std::fs::remove_file(&junit);
}

/// A defect that is not one is refused in one line, naming the variable, before anything runs.
#[test]
fn an_unknown_test_defect_is_refused_in_one_line() {
    let out = out_path("conform-bad-defect");
    let o = std::process::Command::new(env!("CARGO_BIN_EXE_ccbench"))
        .args(["conform", "bbr", "--out", &out.to_string_lossy()])
        .env("CCBENCH_TEST_BBR_DEFECTS", "faster")
        .output()
        .unwrap();
    one_line(&o, 2, "not a defect");
    assert!(String::from_utf8_lossy(&o.stderr).contains("CCBENCH_TEST_BBR_DEFECTS"));
    assert!(!out.exists());
}

/// The second suite from the binary: `conform cubic`, RFC 9438 §4.6 on both CUBICs at
/// 20 Mbit/s and 20 ms, once each. Each run reads β from the controller's own ssthresh against
/// its cwnd before the event (0.7 ± 0.05 passes); one run leaves the cells undecided over runs
/// (exit 2). A BBR controller is refused in one line.
#[test]
fn conform_cubic_judges_both_cubics_on_their_own_ssthresh() {
    let out = out_path("conform-cubic-bad");
    let o = ccbench(&["conform", "cubic", "--cc", "quic:bbr3", "--out", &out.to_string_lossy()]);
    one_line(&o, 2, "--cc");
    assert!(String::from_utf8_lossy(&o.stderr).contains("quic:cubic"), "names what is allowed");
    assert!(!out.exists());
    let _g = lock();
    if !have_root() {
        return;
    }
    let out = out_path("conform-cubic");
    let junit = out.with_extension("xml");
    let (out_s, junit_s) = (out.to_string_lossy().to_string(), junit.to_string_lossy().to_string());
    let o = ccbench(&[
        "conform",
        "cubic",
        "--cc",
        "quic:cubic,tcp:cubic",
        "--case",
        "§4.6",
        "--rtts",
        "20ms",
        "--rates",
        "20mbit",
        "--runs",
        "1",
        "--seed",
        "3",
        "--out",
        &out_s,
        "--junit",
        &junit_s,
    ]);
    let said = text(&o);
    assert_eq!(o.status.code(), Some(2), "one run: undecided over runs:\n{said}");
    let stdout = String::from_utf8_lossy(&o.stdout).into_owned();
    assert!(stdout.contains("§4.6 Multiplicative decrease"), "{stdout}");
    assert!(!stdout.contains("HyStart++ Slow start"), "only the chosen case: {stdout}");
    let suites = junit_read_back(&junit);
    let suites = suites.as_array().unwrap();
    let names: Vec<&str> = suites.iter().map(|s| s["name"].as_str().unwrap()).collect();
    assert_eq!(names, ["quic:cubic", "tcp:cubic"], "{suites:?}");
    for s in suites {
        let cases = s["cases"].as_array().unwrap();
        assert_eq!(cases.len(), 1, "§4.6's one assertion on the one path: {cases:?}");
        let c = &cases[0];
        assert!(c["name"].as_str().unwrap().starts_with("§4.6 Multiplicative decrease: "), "{c}");
        assert_eq!(c["kind"], "undecided", "{c}");
        let msg = c["message"].as_str().unwrap();
        assert!(msg.contains("1/1 pass"), "{}: the one run passed, β near 0.7: {msg}\n{said}", s["name"]);
    }
    let _ = std::fs::remove_dir_all(&out);
    let _ = std::fs::remove_file(&junit);
}
