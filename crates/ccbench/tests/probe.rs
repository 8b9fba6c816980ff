//! `ccbench probe` and the local twin, end to end: probe an emulated path whose settings we
//! know, check the estimates against them, then check that the twin built from the path file
//! gives the same verdict as the path itself.
//!
//! Needs root; outside CI it skips without it, under `CI=true` it fails instead.

use std::path::PathBuf;
use std::process::{Command, Output};
use std::sync::{Mutex, MutexGuard};
use std::time::Instant;

use serde_json::Value;

static SERIAL: Mutex<()> = Mutex::new(());
const BIN: &str = env!("CARGO_BIN_EXE_ccbench");

fn lock() -> MutexGuard<'static, ()> {
    SERIAL.lock().unwrap_or_else(|e| e.into_inner())
}

fn have_root() -> bool {
    // SAFETY: geteuid has no preconditions.
    let root = unsafe { libc::geteuid() } == 0;
    let ci = std::env::var("CI").map(|v| v == "true").unwrap_or(false);
    assert!(root || !ci, "end-to-end test cannot run under CI=true: not root");
    if !root {
        eprintln!("skipping: not root");
    }
    root
}

fn tempdir(tag: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("ccbench-probe-{tag}-{}-{}", std::process::id(), Instant::now().elapsed().as_nanos()));
    std::fs::create_dir_all(&d).unwrap();
    d
}

fn ccbench(args: &[&str]) -> Output {
    Command::new(BIN).args(args).output().expect("run ccbench")
}

fn ok(args: &[&str]) -> String {
    let o = ccbench(args);
    assert!(o.status.success(), "ccbench {args:?} failed: {}\n{}", String::from_utf8_lossy(&o.stderr), String::from_utf8_lossy(&o.stdout));
    String::from_utf8(o.stdout).unwrap()
}

fn f(v: &Value) -> f64 {
    v.as_f64().unwrap_or_else(|| panic!("not a number: {v}"))
}

/// `ccbench run … --out DIR`'s result.json.
fn run(args: &[&str], out: &std::path::Path) -> Value {
    let mut full = vec!["run"];
    full.extend_from_slice(args);
    full.extend_from_slice(&["--out", out.to_str().unwrap()]);
    ok(&full);
    serde_json::from_str(&std::fs::read_to_string(out.join("result.json")).unwrap()).unwrap()
}

fn median_goodput(v: &Value, cc: &str) -> f64 {
    f(&v["summary"].as_array().unwrap().iter().find(|s| s["cc"] == cc).unwrap()["goodput_bps"]["median"])
}

/// The test: on a 30 Mbit/s, 60 ms path with 1 % loss (each direction), probe finds the
/// rate within 10 %, the RTT within 1 ms and the loss within ±0.5 points, in both directions;
/// and a bbr-vs-cubic experiment on the twin from its path file reaches the original's verdict.
#[test]
fn probe_recovers_a_lossy_30mbit_60ms_path_and_its_twin_reaches_the_same_verdict() {
    let _g = lock();
    if !have_root() {
        return;
    }
    let dir = tempdir("twin");
    let file = dir.join("path.toml");
    let path = ["--rate", "30mbit", "--rtt", "60ms", "--loss", "1%"];
    let mut args = vec!["probe", "--emulated", "--seed", "3", "--json", "--out", file.to_str().unwrap()];
    args.extend_from_slice(&path);
    let stdout = ok(&args);
    let json = &stdout[stdout.find("\n{").expect("JSON after the summary")..];
    let e: Value = serde_json::from_str(json).unwrap();
    let base_rtt_ms = f(&e["base_rtt_ns"]) / 1e6;
    assert!((base_rtt_ms - 60.0).abs() < 1.0, "base RTT {base_rtt_ms} ms:\n{stdout}");
    for dir in ["down", "up"] {
        let d = &e[dir];
        let rate = f(&d["rate_bps"]);
        assert!((rate / 30e6 - 1.0).abs() < 0.10, "{dir} rate {rate}:\n{stdout}");
        assert_eq!(d["rate_is_lower_bound"], false, "{dir}:\n{stdout}");
        // 10 000 packets: binomial sd 0.1 points at 1 %, so ±0.5 is five of them.
        let loss = f(&d["loss"]["fraction"]);
        assert!((loss - 0.01).abs() < 0.005, "{dir} loss {loss}:\n{stdout}");
        assert!(f(&d["loss"]["sent"]) >= 10_000.0);
        // A 1-BDP buffer (225 kB) holds 60 ms at 30 Mbit/s: the RTT under load doubles. The
        // margin covers packets in service and the host's scheduling, both well under 25 %.
        assert_eq!(d["buffer_filled"], true, "{dir}:\n{stdout}");
        let buffer = f(&d["buffer_bytes"]);
        assert!((buffer / 225_000.0 - 1.0).abs() < 0.25, "{dir} buffer {buffer}:\n{stdout}");
    }
    let text = std::fs::read_to_string(&file).unwrap();
    for field in ["rate-down", "rate-up", "rtt", "loss-down", "loss-up", "buffer-down", "buffer-up"] {
        assert!(text.lines().any(|l| l.starts_with(&format!("{field} = "))), "{field} missing from:\n{text}");
    }

    // The "real" path (here the original emulated one) against its twin: same experiment, same seed.
    let experiment = ["--cc", "bbr,cubic", "--runs", "4", "--duration", "4s", "--seed", "5"];
    let real = run(&[&experiment[..], &path[..]].concat(), &dir.join("real"));
    let twin = run(&[&experiment[..], &["--path", file.to_str().unwrap()][..]].concat(), &dir.join("twin"));
    let (rc, tc) = (&real["comparisons"][0], &twin["comparisons"][0]);
    assert_eq!((&rc["better"], &rc["significant"]), (&tc["better"], &tc["significant"]), "verdicts differ:\nreal {rc}\ntwin {tc}");
    assert_eq!(rc["better"], "bbr", "CUBIC is Mathis-bound at 1 % loss: {rc}");
    // The twin predicts the size of the difference too: its ratio lies in the real one's 95 % CI.
    // (Each comparison's ratio is a/b; turned into bbr/cubic for both.)
    let bbr_over_cubic = |c: &Value, x: f64| if c["a"] == "bbr" { x } else { 1.0 / x };
    let ratio = bbr_over_cubic(tc, f(&tc["ratio_ci"]["ratio"]));
    let (lo, hi) = (bbr_over_cubic(rc, f(&rc["ratio_ci"]["lo"])), bbr_over_cubic(rc, f(&rc["ratio_ci"]["hi"])));
    assert!(lo.min(hi) <= ratio && ratio <= lo.max(hi), "twin ratio {ratio} outside the real CI {rc}");
    // BBR's goodput is set by the bottleneck rate, which probe found within a few percent; its
    // run-to-run spread is about ±3 %.
    let (r, t) = (median_goodput(&real, "bbr"), median_goodput(&twin, "bbr"));
    assert!((t / r - 1.0).abs() < 0.10, "bbr goodput: real {r}, twin {t}");
    std::fs::remove_dir_all(&dir).unwrap();
}

/// Bad input: one line naming the flag and what is allowed, exit status 2, nothing created.
#[test]
fn bad_probe_and_path_input_is_one_line_and_exit_2() {
    let dir = tempdir("bad");
    let bad_file = dir.join("bad.toml");
    std::fs::write(&bad_file, "rate = \"30mbps\"\n").unwrap();
    let missing = dir.join("missing.toml");
    let out_in_missing_dir = dir.join("no/such/dir/path.toml");
    for (args, says) in [
        (vec!["probe"], "HOST:PORT"),
        (vec!["probe", "127.0.0.1:7070", "--emulated"], "--emulated"),
        (vec!["probe", "127.0.0.1:7070"], "--secret-file"),
        (vec!["probe", "127.0.0.1:7070", "--rate", "10mbit"], "--emulated"),
        (vec!["probe", "not-a-host-port", "--secret-file", bad_file.to_str().unwrap()], "HOST:PORT"),
        (vec!["probe", "--emulated", "--rate", "fast"], "--rate"),
        (vec!["probe", "--emulated", "--max-rate", "unlimited"], "--max-rate"),
        (vec!["probe", "--emulated", "--loss-packets", "5"], "--loss-packets"),
        (vec!["probe", "--emulated", "--out", out_in_missing_dir.to_str().unwrap()], "--out"),
        (vec!["run", "--path", missing.to_str().unwrap()], "--path"),
        (vec!["run", "--path", bad_file.to_str().unwrap()], "--rate (path file"),
    ] {
        let o = ccbench(&args);
        let err = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(2), "{args:?}: {err}");
        assert_eq!(err.trim_end().lines().count(), 1, "{args:?}: {err}");
        assert!(err.contains(says), "{args:?} should name {says}: {err}");
        assert!(o.stdout.is_empty(), "{args:?}");
    }
    assert!(!out_in_missing_dir.exists());
    std::fs::remove_dir_all(&dir).unwrap();
}
