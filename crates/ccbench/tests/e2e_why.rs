//! Why one wins (issue 30), end to end: the known-cause matrix. Each path sets one cause on
//! purpose (a small receive buffer, a small send buffer, a slow application, random loss for a
//! loss-based controller, a clean link for BBR) and the dominant limited-by cause recorded in
//! result.json must be that cause in every run; `ccbench explain` says the same of the saved
//! result, and "not recorded" for a result from before the counters. QUIC flows are checked
//! the same way, their accounting from our stack's own send states (vendor/noq-proto/PATCH.md).
//!
//! Needs root. Outside CI it skips without it; under `CI=true` it fails instead.

mod common;

use common::{ccbench, f, have_root, lock, one_line, out_path, result, run_ok, text};
use serde_json::Value;

/// The cause with the largest share of a run's `limited_by`, and that share.
fn dominant(run: &Value) -> (String, f64) {
    let l = run["metrics"]["limited_by"].as_object().unwrap_or_else(|| panic!("no limited_by in run {}: {}", run["index"], run["metrics"]));
    let (k, v) = l.iter().max_by(|a, b| f(a.1).total_cmp(&f(b.1))).unwrap();
    (k.clone(), f(v))
}

/// One path of the matrix: `args` set the cause; every run of `cc` must be dominated by
/// `cause`. Returns the result and its directory (removed by the caller).
fn case(tag: &str, args: &[&str], expect: &[(&str, &str)]) -> (Value, std::path::PathBuf) {
    let out = out_path(tag);
    let printed = run_ok(args, &out);
    let v = result(&out);
    for run in v["runs"].as_array().unwrap() {
        let cc = run["cc"].as_str().unwrap();
        let Some((_, cause)) = expect.iter().find(|(c, _)| *c == cc) else { continue };
        let (got, share) = dominant(run);
        assert_eq!(&got, cause, "{tag}: run {} of {cc} was {got}-limited {share:.2} of the time, not {cause}: {}", run["index"], run["metrics"]["limited_by"]);
        assert!(share >= 0.6, "{tag}: {cc} {cause} only {share:.2} of the time: {}", run["metrics"]["limited_by"]);
        // Every flow's fractions sum to 1.
        for flow in run["workload"]["flows"].as_array().unwrap() {
            let sum: f64 = flow["limited_by"].as_object().unwrap().values().map(f).sum();
            assert!((sum - 1.0).abs() < 1e-6, "{tag}: fractions sum to {sum}: {}", flow["limited_by"]);
        }
    }
    // The terminal says it under the verdict.
    for (cc, _) in expect {
        assert!(printed.lines().any(|l| l.trim_start().starts_with(&format!("why  {cc}"))), "{tag}: no why line for {cc}:\n{printed}");
    }
    (v, out)
}

#[test]
fn the_dominant_cause_is_the_one_set_on_purpose() {
    let _g = lock();
    if !have_root() {
        return;
    }
    let base = ["--rate", "100mbit", "--rtt", "40ms", "--duration", "3s", "--seed", "3"];
    let with = |extra: &[&'static str]| -> Vec<&'static str> { [&base[..], extra].concat() };

    // A 64 KiB receive buffer at 40 ms: about 13 Mbit/s of a 100 Mbit/s link.
    let (_, out) = case("rcvbuf", &with(&["--cc", "cubic", "--runs", "2", "--rcvbuf", "64kib"]), &[("cubic", "rwnd")]);
    let _ = std::fs::remove_dir_all(out);
    // A sending application at 10 Mbit/s on a 100 Mbit/s link.
    let (_, out) = case("app", &with(&["--cc", "cubic", "--runs", "2", "--app-rate", "10mbit"]), &[("cubic", "app")]);
    let _ = std::fs::remove_dir_all(out);
    // A 128 KiB send buffer (a 32 KiB one drains faster than a loaded host wakes the writer: then the idle socket reads as the application's).
    let (_, out) = case("sndbuf", &with(&["--cc", "cubic", "--runs", "2", "--sndbuf", "128kib"]), &[("cubic", "sndbuf")]);
    let _ = std::fs::remove_dir_all(out);
    // 1 % random loss: CUBIC held by its window (bound by the loss), BBR by its pacer.
    let (v, out) = case("loss", &with(&["--cc", "bbr,cubic", "--runs", "4", "--loss", "1%"]), &[("cubic", "cwnd"), ("bbr", "pacing")]);

    // `ccbench explain` on the saved result: the same lines, no rerun.
    let o = ccbench(&["explain", &out.to_string_lossy()]);
    assert!(o.status.success(), "{}", text(&o));
    let said = String::from_utf8_lossy(&o.stdout).into_owned();
    let line = |cc: &str| {
        said.lines().find(|l| l.trim_start().starts_with(&format!("why  {cc} "))).unwrap_or_else(|| panic!("no why line for {cc}:\n{said}")).to_string()
    };
    assert!(line("cubic").contains("cwnd-limited") && line("cubic").contains("bound by random loss"), "{said}");
    assert!(line("bbr").contains("pacing-limited"), "{said}");

    // A result from before the counters: "not recorded", still read.
    let mut old = v.clone();
    for run in old["runs"].as_array_mut().unwrap() {
        run["metrics"].as_object_mut().unwrap().remove("limited_by");
        for flow in run["workload"]["flows"].as_array_mut().unwrap() {
            let o = flow.as_object_mut().unwrap();
            o.remove("limited_by");
            o.remove("mechanism");
        }
    }
    std::fs::write(out.join("result.json"), serde_json::to_string(&old).unwrap()).unwrap();
    let o = ccbench(&["explain", &out.to_string_lossy()]);
    let said = String::from_utf8_lossy(&o.stdout).into_owned();
    assert!(o.status.success() && said.contains("why  cubic  not recorded"), "{}", text(&o));
    let _ = std::fs::remove_dir_all(&out);

    // A directory without a result: one line, exit 2.
    let empty = common::tempdir("why-empty");
    one_line(&ccbench(&["explain", &empty.to_string_lossy()]), 2, "explain directory");
    let _ = std::fs::remove_dir_all(empty);
}

/// QUIC flows, accounted by the stack itself (`vendor/noq-proto/PATCH.md`), on the same paths:
/// CUBIC under 1 % loss held by its window, BBRv3 on a clean link by its pacer, and a small
/// receive window (QUIC's flow-control credit), a small send window and a slow application
/// each holding CUBIC.
#[test]
fn quic_flows_are_held_by_the_cause_set_on_purpose() {
    let _g = lock();
    if !have_root() {
        return;
    }
    let base = ["--rate", "100mbit", "--rtt", "40ms", "--duration", "3s", "--seed", "3"];
    let with = |extra: &[&'static str]| -> Vec<&'static str> { [&base[..], extra].concat() };

    let (v, out) = case("quic-loss", &with(&["--cc", "quic:cubic", "--runs", "2", "--loss", "1%"]), &[("quic:cubic", "cwnd")]);
    for run in v["runs"].as_array().unwrap() {
        let m = &run["workload"]["flows"][0]["mechanism"];
        assert!(f(&m["recoveries"]) > 0.0 && f(&m["retrans_rate"]) > 0.0, "1 % loss, yet no recovery: {m}");
        assert!(m["rtos"].is_u64(), "probe timeouts are counted: {m}");
    }
    let _ = std::fs::remove_dir_all(out);
    let (_, out) = case("quic-clean", &with(&["--cc", "quic:bbr3", "--runs", "2"]), &[("quic:bbr3", "pacing")]);
    let o = ccbench(&["explain", &out.to_string_lossy()]);
    let said = String::from_utf8_lossy(&o.stdout).into_owned();
    assert!(o.status.success() && said.contains("why  quic:bbr3  pacing-limited"), "{}", text(&o));
    let _ = std::fs::remove_dir_all(out);
    for (tag, flag, value, cause) in
        [("quic-rcvbuf", "--rcvbuf", "64kib", "rwnd"), ("quic-sndbuf", "--sndbuf", "128kib", "sndbuf"), ("quic-app", "--app-rate", "10mbit", "app")]
    {
        let (_, out) = case(tag, &with(&["--cc", "quic:cubic", "--runs", "1", flag, value]), &[("quic:cubic", cause)]);
        let _ = std::fs::remove_dir_all(out);
    }
}
