//! End-to-end tests: the real binary, real namespaces, real kernel TCP, checked against tools
//! nobody here wrote (ping, iperf3) and against theory (link rate, the Mathis formula).
//!
//! They need root. Outside CI they skip without it; under `CI=true` they fail instead.
//! They run one at a time (a global lock), because throughput tests on a 2-core machine would
//! otherwise measure each other.

mod common;

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use common::{ccbench, f, have_root_and, lock, out_path, result, run_ok, tempdir, BIN};
use serde_json::Value;

/// TCP payload per 1500-byte IP packet with timestamps (1500 - 20 IP - 32 TCP).
const PAYLOAD_FRACTION: f64 = 1448.0 / 1500.0;

/// `ccbench run … --out DIR`, returning the parsed result.json.
fn run_json(args: &[&str], tag: &str) -> Value {
    let (v, out) = run_json_kept(args, tag);
    let _ = std::fs::remove_dir_all(&out);
    v
}

/// As [`run_json`], keeping the results directory (for its series files); the caller removes it.
fn run_json_kept(args: &[&str], tag: &str) -> (Value, PathBuf) {
    let out = out_path(tag);
    run_ok(args, &out);
    let v = result(&out);
    let html = std::fs::read_to_string(out.join("report.html")).expect("report.html beside result.json");
    assert!(html.contains("<svg") && html.contains("Sender's smoothed RTT"), "report.html has no plots");
    assert_no_leak(&v);
    (v, out)
}

/// Every row of one of a run's series files (`which`: "tcp", "goodput", "link_down", "link_up").
fn series_rows<T: serde::de::DeserializeOwned>(out: &Path, run: &Value, which: &str) -> Vec<T> {
    let file = out.join(run["series"][which].as_str().unwrap_or_else(|| panic!("run has no {which} series: {}", run["series"])));
    let mut rows = Vec::new();
    ccbench::series::for_each_row(&file, |r: T| rows.push(r)).unwrap_or_else(|e| panic!("{}: {e}", file.display()));
    rows
}

/// Every namespace inode any process (or any open descriptor) still refers to.
fn live_netns_inodes() -> Vec<u64> {
    let mut inodes = Vec::new();
    let parse = |link: PathBuf| -> Option<u64> {
        let t = std::fs::read_link(link).ok()?;
        let s = t.to_string_lossy().to_string();
        s.strip_prefix("net:[")?.strip_suffix(']')?.parse().ok()
    };
    for proc_dir in std::fs::read_dir("/proc").into_iter().flatten().flatten() {
        let p = proc_dir.path();
        if let Some(i) = parse(p.join("ns/net")) {
            inodes.push(i);
        }
        for fd in std::fs::read_dir(p.join("fd")).into_iter().flatten().flatten() {
            if let Some(i) = parse(fd.path()) {
                inodes.push(i);
            }
        }
    }
    inodes
}

fn wait_gone(inodes: &[u64]) {
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let live = live_netns_inodes();
        let leaked: Vec<&u64> = inodes.iter().filter(|i| live.contains(i)).collect();
        if leaked.is_empty() {
            return;
        }
        assert!(Instant::now() < deadline, "namespaces {leaked:?} are still referenced by some process");
        std::thread::sleep(Duration::from_millis(50));
    }
}

fn host_has_no_leftovers() {
    let tuns = Command::new("ip").args(["-o", "link", "show", "type", "tun"]).output().expect("ip");
    assert!(String::from_utf8_lossy(&tuns.stdout).trim().is_empty(), "TUN devices in the host namespace: {}", String::from_utf8_lossy(&tuns.stdout));
    let named = Command::new("ip").args(["netns", "list"]).output().expect("ip");
    assert!(String::from_utf8_lossy(&named.stdout).trim().is_empty(), "named namespaces exist");
    let reapers = own_reapers();
    assert!(reapers.is_empty(), "reaper processes left running: {reapers:?}");
}

/// The reapers this checkout's binary started that still run (by pid). Only this binary's: the
/// tests of another checkout, running at the same time, have reapers of their own.
fn own_reapers() -> Vec<u32> {
    let ours = std::fs::canonicalize(env!("CARGO_BIN_EXE_ccbench")).expect("the binary under test");
    let mut pids = Vec::new();
    for proc_dir in std::fs::read_dir("/proc").into_iter().flatten().flatten() {
        let Some(pid) = proc_dir.file_name().to_str().and_then(|n| n.parse::<u32>().ok()) else { continue };
        let Ok(cmdline) = std::fs::read(proc_dir.path().join("cmdline")) else { continue };
        if !cmdline.split(|b| *b == 0).any(|arg| arg == b"__ccbench-reaper") {
            continue;
        }
        // A binary rebuilt while its process runs reads as `PATH (deleted)`.
        let exe = std::fs::read_link(proc_dir.path().join("exe")).map(|e| e.to_string_lossy().trim_end_matches(" (deleted)").to_string());
        if exe.is_ok_and(|e| Path::new(&e) == ours) {
            pids.push(pid);
        }
    }
    pids
}

fn assert_no_leak(result: &Value) {
    let inodes: Vec<u64> =
        result["runs"].as_array().expect("runs").iter().filter_map(|r| r["netns_inodes"].as_array()).flat_map(|a| a.iter().filter_map(Value::as_u64)).collect();
    assert!(!inodes.is_empty(), "runs must record their namespace inodes");
    wait_gone(&inodes);
    host_has_no_leftovers();
}

fn metrics(result: &Value, run: usize) -> &Value {
    &result["runs"][run]["metrics"]
}

#[test]
fn ping_rtt_matches_configured_delay() {
    let _g = lock();
    if !have_root_and(&["ping"]) {
        return;
    }
    for (flags, want_ms) in [(vec!["--rtt", "30ms"], 30.0), (vec!["--delay-down", "2ms", "--delay-up", "48ms"], 50.0), (vec!["--rtt", "0"], 0.0)] {
        let mut args = vec!["exec", "--rate", "100mbit"];
        args.extend(flags.iter().copied());
        args.extend_from_slice(&["--", "sh", "-c", "ping -n -c 30 -i 0.02 $CCBENCH_SERVER_ADDR"]);
        let o = ccbench(&args);
        let text = String::from_utf8_lossy(&o.stdout);
        assert!(o.status.success(), "ping failed: {text} {}", String::from_utf8_lossy(&o.stderr));
        // "64 bytes from 10.0.0.2: icmp_seq=1 ttl=64 time=30.2 ms", one line per reply.
        let mut rtts: Vec<f64> =
            text.lines().filter_map(|l| l.split("time=").nth(1)).filter_map(|t| t.split_whitespace().next()).filter_map(|t| t.parse().ok()).collect();
        assert!(rtts.len() >= 25, "{flags:?}: only {} of 30 pings answered: {text}", rtts.len());
        rtts.sort_by(f64::total_cmp);
        let (min, median) = (rtts[0], rtts[rtts.len() / 2]);
        // Nothing may arrive before the configured delay; the emulator may add a little. The
        // median, not the mean: one wake-up delayed by the hypervisor (this VM's CPU steal comes
        // in bursts of milliseconds) must not decide the test; a systematic delay still does.
        assert!(min >= want_ms, "{flags:?}: ping min {min} ms is below the configured {want_ms} ms");
        assert!(median <= want_ms + 1.0, "{flags:?}: ping median {median} ms is more than 1 ms above the configured {want_ms} ms: {rtts:?}");
    }
}

#[test]
fn ping_loss_matches_configured_loss() {
    let _g = lock();
    if !have_root_and(&["ping"]) {
        return;
    }
    let o = ccbench(&[
        "exec",
        "--rtt",
        "2ms",
        "--loss-down",
        "20%",
        "--loss-up",
        "0",
        "--seed",
        "7",
        "--",
        "sh",
        "-c",
        "ping -n -q -c 800 -i 0.002 -W 1 $CCBENCH_SERVER_ADDR",
    ]);
    let text = String::from_utf8_lossy(&o.stdout);
    let line = text.lines().find(|l| l.contains("packet loss")).expect("ping loss line");
    let pct: f64 = line.split(',').find(|p| p.contains("packet loss")).unwrap().trim().split('%').next().unwrap().parse().unwrap();
    // 800 echoes at 20 % loss on replies only: sd = 1.4 %; allow ±5 sd.
    assert!((13.0..=27.0).contains(&pct), "ping saw {pct}% loss, configured 20%");
}

#[test]
fn lossless_goodput_matches_the_link_rate() {
    let _g = lock();
    if !have_root_and(&[]) {
        return;
    }
    for rate_mbit in [10.0, 30.0] {
        let rate = format!("{rate_mbit}mbit");
        let v = run_json(&["--cc", "cubic", "--runs", "1", "--rate", &rate, "--rtt", "10ms", "--duration", "4s", "--seed", "1"], "rate");
        let m = metrics(&v, 0);
        let goodput = f(&m["goodput_bps"]);
        let ceiling = rate_mbit * 1e6 * PAYLOAD_FRACTION;
        // Slow start costs a little at the beginning; nothing may exceed the link.
        assert!(goodput <= ceiling * 1.005, "{rate}: goodput {goodput} exceeds the link's payload rate {ceiling}");
        assert!(goodput >= ceiling * 0.85, "{rate}: goodput {goodput} is far below the link's payload rate {ceiling}");
        assert_eq!(f(&m["drops_loss"]), 0.0, "no loss was configured");
    }
}

#[test]
fn a_gigabit_path_carries_cubic_near_line_rate_without_retransmissions() {
    let _g = lock();
    if !have_root_and(&[]) {
        return;
    }
    // A buffer CUBIC cannot overflow in 5 s: any drop or retransmission is the emulator's.
    let v = run_json(&["--cc", "cubic", "--runs", "1", "--rate", "1gbit", "--rtt", "10ms", "--buffer", "unlimited", "--duration", "5s", "--seed", "2"], "gbit");
    let m = metrics(&v, 0);
    let goodput = f(&m["goodput_bps"]);
    assert!(goodput >= 1e9 * PAYLOAD_FRACTION * 0.85, "1 Gbit/s path carried only {goodput}");
    assert!(goodput <= 1e9 * PAYLOAD_FRACTION * 1.005, "faster than the link: {goodput}");
    assert_eq!(f(&m["retrans_segments"]), 0.0, "retransmissions on a lossless path with an unlimited buffer");
    for dir in ["down", "up"] {
        let d = &v["runs"][0]["path"][dir];
        assert_eq!(f(&d["tun_tx_dropped"]) + f(&d["tun_rx_dropped"]) + f(&d["malformed"]), 0.0, "{dir}: unconfigured drops");
    }
    // Offload is on: the kernel handed over superframes and the emulator cut them per MTU.
    let down = &v["runs"][0]["path"]["down"];
    assert!(f(&down["superframes"]) > 0.0);
    assert!(f(&down["stats"]["packets_out"]) > f(&down["superframes"]) * 5.0);
}

#[test]
fn iperf3_and_ccbench_measure_the_same_goodput() {
    let _g = lock();
    if !have_root_and(&["iperf3"]) {
        return;
    }
    let path = ["--rate", "40mbit", "--rtt", "20ms", "--seed", "3"];
    let mut args = vec!["exec"];
    args.extend_from_slice(&path);
    args.extend_from_slice(&["--server-cmd", "iperf3 -s -1", "--", "sh", "-c", "iperf3 -J -c $CCBENCH_SERVER_ADDR -t 5 -C cubic"]);
    let o = ccbench(&args);
    assert!(o.status.success(), "iperf3 failed: {}", String::from_utf8_lossy(&o.stderr));
    // The server's output goes to stderr: the client's stdout is its JSON and nothing else,
    // so `ccbench exec … -- iperf3 -J … | jq` works.
    let ip: Value =
        serde_json::from_slice(&o.stdout).unwrap_or_else(|e| panic!("stdout is not only iperf3's JSON ({e}): {}", String::from_utf8_lossy(&o.stdout)));
    assert!(String::from_utf8_lossy(&o.stderr).contains("Server listening"), "the server's output is on stderr");
    let iperf = f(&ip["end"]["sum_received"]["bits_per_second"]);
    assert_eq!(ip["end"]["sender_tcp_congestion"], "cubic");

    let mut run = vec!["--cc", "cubic", "--runs", "1", "--duration", "5s", "--direction", "upload"];
    run.extend_from_slice(&path);
    let v = run_json(&run, "iperf");
    let ours = f(&metrics(&v, 0)["goodput_bps"]);
    let ratio = ours / iperf;
    assert!((0.9..=1.1).contains(&ratio), "ccbench {ours} vs iperf3 {iperf}: ratio {ratio}");
    assert!(iperf > 40e6 * PAYLOAD_FRACTION * 0.85, "iperf3 itself is far below the link rate: {iperf}");
}

#[test]
fn reno_under_random_loss_follows_mathis() {
    let _g = lock();
    if !have_root_and(&[]) {
        return;
    }
    // Loss on data only, a link far faster than the loss allows: the Mathis regime.
    let mut measured = Vec::new();
    for loss in ["1%", "4%"] {
        let v = run_json(
            &["--cc", "reno", "--runs", "2", "--rate", "200mbit", "--rtt", "20ms", "--loss-down", loss, "--loss-up", "0", "--duration", "6s", "--seed", "5"],
            "mathis",
        );
        let p = f(&v["params"]["path"]["down"]["loss"]["p"]);
        let s = &v["summary"][0];
        let goodput = f(&s["goodput_bps"]["median"]);
        let rtt_s = f(&s["sender_rtt_p50_ms"]["median"]) / 1000.0;
        // BW = MSS/RTT · sqrt(3/2) / sqrt(p)
        let mathis = 1448.0 * 8.0 / rtt_s * (1.5f64).sqrt() / p.sqrt();
        let ratio = goodput / mathis;
        assert!((0.6..=1.6).contains(&ratio), "reno at {loss}: goodput {goodput} vs Mathis {mathis} (ratio {ratio})");
        measured.push(goodput);
    }
    // Four times the loss, half the goodput: the 1/sqrt(p) law itself.
    let scaling = measured[0] / measured[1];
    assert!((1.5..=2.8).contains(&scaling), "goodput(1%)/goodput(4%) = {scaling}, theory says 2");
}

#[test]
fn bbr_is_far_ahead_of_cubic_under_random_loss() {
    let _g = lock();
    if !have_root_and(&[]) {
        return;
    }
    // Runs until decided: a difference this large is decided at the first look whose level is
    // exact enough to stop at: 4 runs each, or 6 when the two spreads differ so much at 4 that
    // the level there is only approximate (issue 28: such a look does not stop the design).
    let v = run_json(
        &["--cc", "bbr,cubic", "--runs", "auto", "--max-runs", "6", "--rate", "50mbit", "--rtt", "20ms", "--loss", "3%", "--duration", "2s", "--seed", "11"],
        "bbr",
    );
    let c = &v["comparisons"][0];
    assert_eq!(c["significant"], true, "comparison: {c}");
    assert_eq!(c["better"], "bbr");
    assert_eq!(c["better_is"], "higher");
    assert!(f(&c["ratio_ci"]["lo"]) > 3.0, "bbr should be several times cubic: {c}");
    assert_eq!(v["params"]["runs_auto"], true);
    let decided = v["sequential"]["decided_after_runs"].as_u64().unwrap_or(0) as usize;
    assert_eq!(v["runs"].as_array().unwrap().len(), 2 * decided, "stopped after the deciding look: {}", v["sequential"]);
    // The looks of the Lan–DeMets design with at most 6 runs: 4 runs spending α(4/6), then 6.
    let looks = ccbench_stats::sequential::looks(0.05, 6, 2);
    assert_eq!(looks[0].runs, 4);
    let at = looks.iter().find(|l| l.runs == decided).unwrap_or_else(|| panic!("decided at a look of the design: {}", v["sequential"]));
    assert!((f(&c["alpha"]) - at.alpha).abs() < 1e-12, "decided at its look's share of alpha: {c}");
    assert_eq!(v["sequential"]["design"], "lan_demets_pocock");
    // The RTT comparison is there too: lower is better, and `better`, if any, is the lower one.
    let r = &v["rtt_comparisons"][0];
    assert_eq!(r["better_is"], "lower", "{r}");
    if let Some(better) = r["better"].as_str() {
        let rtt = |cc: &str| f(&v["summary"].as_array().unwrap().iter().find(|s| s["cc"] == cc).unwrap()["sender_rtt_p50_ms"]["median"]);
        let other = if better == "bbr" { "cubic" } else { "bbr" };
        assert!(rtt(better) < rtt(other), "{r}");
    }
    // Drops counted in the measured window are what the senders had to retransmit.
    for run in v["runs"].as_array().unwrap() {
        let m = &run["metrics"];
        assert!(f(&m["drops_loss"]) + f(&m["drops_buffer"]) <= f(&m["retrans_segments"]) * 1.2 + 20.0, "more drops than retransmissions: {m}");
    }
    // Provenance: every flow's algorithm was read back from the sending socket.
    for run in v["runs"].as_array().unwrap() {
        for flow in run["workload"]["flows"].as_array().unwrap() {
            assert_eq!(flow["cc_read_back"], run["cc"]);
            assert_eq!(flow["sender"], "server");
        }
    }
}

#[test]
fn result_json_has_time_series_and_provenance() {
    let _g = lock();
    if !have_root_and(&[]) {
        return;
    }
    let (v, out) = run_json_kept(
        &["--cc", "bbr", "--runs", "1", "--rate", "30mbit", "--rtt", "30ms", "--duration", "2s", "--flows", "2", "--sample-interval", "20ms"],
        "json",
    );
    assert_eq!(v["schema"], "ccbench.result.v3");
    assert_eq!(v["status"], "complete");
    let prov = &v["provenance"];
    assert!(!prov["host"]["kernel_release"].as_str().unwrap().is_empty());
    assert!(prov["host"]["available_congestion_controls"].as_array().unwrap().iter().any(|c| c == "bbr"));
    assert!(prov["command_line"].as_array().unwrap().len() > 3);
    assert!(v["params"]["seed"].is_u64());
    let run = &v["runs"][0];
    let flows = run["workload"]["flows"].as_array().unwrap();
    assert_eq!(flows.len(), 2);
    // The time series are in the run's files, not in result.json.
    let tcp: Vec<ccbench::series::TcpRow> = series_rows(&out, run, "tcp");
    let goodput: Vec<ccbench::series::GoodputRow> = series_rows(&out, run, "goodput");
    let link: Vec<ccbench_emu::LinkSample> = series_rows(&out, run, "link_down");
    for flow in flows {
        assert!(flow.get("samples").is_none() && flow.get("received").is_none(), "per-sample data in result.json (flow {})", flow["id"]);
        let id = flow["id"].as_u64().unwrap();
        let samples: Vec<&ccbench::series::TcpRow> = tcp.iter().filter(|r| r.socket == format!("flow-{id}")).collect();
        // 2 s at 20 ms: about 100 samples.
        assert!((60..=140).contains(&samples.len()), "{} samples", samples.len());
        let last = samples.last().unwrap();
        assert!(last.rtt_us >= 30_000, "sender RTT below the base RTT: {last:?}");
        assert!(samples.iter().any(|s| matches!(s.bbr_mode.as_deref(), Some("PROBE_BW" | "DRAIN"))), "BBR never left STARTUP");
        assert!(goodput.iter().any(|g| u64::from(g.flow) == id));
    }
    assert!(link.len() >= 60);
    // runs.csv: one row per run, every parameter and metric, loadable by Python's csv module.
    let check = r#"
import csv, sys
rows = list(csv.DictReader(open(sys.argv[1])))
assert len(rows) == 1, len(rows)
for col in ["index", "cc", "status", "goodput_bps", "sender_rtt_p50_ms", "jain_index", "params.path.down.delay_ns", "params.workload.kind", "series.tcp"]:
    assert col in rows[0], (col, list(rows[0]))
assert rows[0]["cc"] == "bbr" and rows[0]["params.workload.kind"] == "bulk", rows[0]
assert float(rows[0]["goodput_bps"]) > 1e6, rows[0]["goodput_bps"]
print(len(rows[0]))
"#;
    let py = Command::new("python3").args(["-c", check, &out.join("runs.csv").to_string_lossy()]).output().expect("python3");
    assert!(py.status.success(), "runs.csv: {}", String::from_utf8_lossy(&py.stderr));
    let down = &run["path"]["down"];
    assert!(down["series"].as_array().is_none_or(|s| s.is_empty()), "the emulator's series is in its file");

    assert!(f(&down["stats"]["packets_out"]) > 1000.0);
    // The two flows share the link: together they fill it, neither gets everything.
    let total = f(&run["metrics"]["goodput_bps"]);
    assert!(total > 30e6 * PAYLOAD_FRACTION * 0.8, "two flows together: {total}");
    for flow in flows {
        assert!(f(&flow["goodput_bps"]) < total * 0.9);
    }
    let _ = std::fs::remove_dir_all(out);
}

fn assert_usage_error(args: &[&str], flag: &str) {
    let before = live_netns_inodes().len();
    let o = ccbench(args);
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "{args:?} should exit 2; stderr: {err}");
    assert_eq!(err.trim().lines().count(), 1, "{args:?}: error must be one line: {err}");
    assert!(err.contains(flag), "{args:?}: error must name {flag}: {err}");
    assert!(o.stdout.is_empty(), "{args:?}: nothing on stdout");
    assert!(live_netns_inodes().len() <= before, "{args:?} left a namespace behind");
}

#[test]
fn bad_input_is_one_line_exit_2_and_leaves_nothing() {
    let _g = lock();
    let out = out_path("bad");
    let out_s = out.to_string_lossy().to_string();
    let cases: Vec<(Vec<&str>, &str)> = vec![
        (vec!["run", "--cc", "bbr,vegas2"], "--cc"),
        (vec!["run", "--cc", "bbr,bbr"], "--cc"),
        (vec!["run", "--rate", "-5mbit"], "--rate"),
        (vec!["run", "--rate", "1000gbit"], "--rate"),
        (vec!["run", "--rate", "100mbps"], "--rate"),
        (vec!["run", "--loss", "150%"], "--loss"),
        (vec!["run", "--loss", "0.5"], "--loss"),
        (vec!["run", "--loss-up", "gilbert:p=1%"], "--loss-up"),
        (vec!["run", "--rtt", "forty"], "--rtt"),
        (vec!["run", "--buffer", "0bdp"], "--buffer"),
        (vec!["run", "--duration", "0s"], "--duration"),
        (vec!["run", "--cc", "bbr,cubic", "--runs", "2"], "--runs"),
        (vec!["run", "--flows", "0"], "--flows"),
        (vec!["run", "--mtu", "100"], "--mtu"),
        (vec!["run", "--runs", "many"], "--runs"),
        (vec!["run", "--cc", "bbr", "--runs", "auto"], "--runs"),
        (vec!["run", "--cc", "bbr,cubic", "--runs", "auto", "--max-runs", "3"], "--max-runs"),
        (vec!["run", "--direction", "sideways"], "--direction"),
        (vec!["run", "--rate", "5furlongs"], "--rate"),
        (vec!["run", "--at", "5s:rtt=30s"], "--at"),
        (vec!["run", "--size", "1mb"], "--size"),
        (vec!["run", "--app-pause", "4s"], "--app-pause"),
        (vec!["run", "--app-pause", "4s:0s"], "--app-pause"),
        (vec!["run", "--app-pause", "4s:2s,5s:1s"], "--app-pause"),
        (vec!["run", "--app-rate-from", "4s"], "--app-rate-from"),
        (vec!["run", "--app-rate", "5mbit", "--app-rate-from", "soon"], "--app-rate-from"),
        (vec!["run", "--workload", "page", "--http", "2", "--max-connections", "3"], "--max-connections"),
        (vec!["run", "--stagger", "1s"], "--stagger"),
        (vec!["run", "--flows", "bbr:1,cubic:1", "--cc", "bbr"], "--cc"),
        (vec!["run", "--preset", "website-migration", "--workload", "bulk"], "--page (preset website-migration"),
        (vec!["exec", "--rate", "fast", "--", "true"], "--rate"),
        (vec!["run", "--rate", "--rtt", "40ms"], "--rate"),
        (vec!["exec", "--loss", "--rtt", "10ms", "--", "true"], "--loss"),
        // The algorithm is the same typed name everywhere `--cc` is taken (issue 29 §4).
        (vec!["bench", "emulator", "--cc", "vegas2"], "--cc"),
        (vec!["bench", "emulator", "--cc", "quic:nope"], "--cc"),
        (vec!["bench", "transports", "--cc", "tcp:cubic,tcp:cubic"], "--cc"),
        (vec!["tune", "--cc", "quic:bbr3"], "--cc"),
        (vec!["tune", "--cc", "udp:bbr"], "--cc"),
    ];
    for (mut args, flag) in cases {
        if args[0] == "run" {
            args.extend_from_slice(&["--out", &out_s]);
        }
        assert_usage_error(&args, flag);
    }
    assert!(!out.exists(), "bad input must not create the results directory");
}

#[test]
fn non_root_is_told_clearly() {
    let _g = lock();
    if !have_root_and(&["setpriv"]) {
        return;
    }
    let o = Command::new("setpriv")
        .args(["--reuid=65534", "--regid=65534", "--clear-groups", BIN, "run", "--cc", "cubic", "--runs", "1", "--duration", "1s", "--out", "/nonexistent/x"])
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert!(err.contains("needs root"), "{err}");
    assert_eq!(err.trim().lines().count(), 1);
}

#[test]
fn kill_9_leaves_no_namespace_device_or_process() {
    let _g = lock();
    if !have_root_and(&[]) {
        return;
    }
    // The server command daemonises a grandchild on purpose: it must die too.
    let mut child = Command::new(BIN)
        .args([
            "exec",
            "--rtt",
            "10ms",
            "--server-cmd",
            "sh -c 'sleep 300 &' ; sleep 300",
            "--",
            "sh",
            "-c",
            "echo $CCBENCH_CLIENT_NETNS $CCBENCH_SERVER_NETNS; exec sleep 300",
        ])
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let mut line = String::new();
    std::io::BufRead::read_line(&mut std::io::BufReader::new(child.stdout.take().unwrap()), &mut line).unwrap();
    let inodes: Vec<u64> = line.split_whitespace().map(|s| s.parse().unwrap()).collect();
    assert_eq!(inodes.len(), 2);
    let live = live_netns_inodes();
    assert!(inodes.iter().all(|i| live.contains(i)), "namespaces should be alive while ccbench runs");
    // SAFETY: killing our own child.
    unsafe { libc::kill(child.id() as i32, libc::SIGKILL) };
    let _ = child.wait();
    wait_gone(&inodes);
    host_has_no_leftovers();
}

#[test]
fn ctrl_c_keeps_finished_runs() {
    let _g = lock();
    if !have_root_and(&[]) {
        return;
    }
    let out = out_path("int");
    let child = Command::new(BIN)
        .args(["run", "--cc", "bbr,cubic", "--runs", "4", "--duration", "2s", "--rate", "20mbit", "--rtt", "10ms", "--out"])
        .arg(&out)
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    std::thread::sleep(Duration::from_millis(5500));
    // SAFETY: signalling our own child.
    unsafe { libc::kill(child.id() as i32, libc::SIGINT) };
    let o = child.wait_with_output().unwrap();
    assert_eq!(o.status.code(), Some(130));
    let v = result(&out);
    assert_eq!(v["status"], "interrupted");
    let complete = v["runs"].as_array().unwrap().iter().filter(|r| r["status"] == "complete").count();
    assert!((1..8).contains(&complete), "{complete} complete runs kept");
    assert_no_leak(&v);
    let _ = std::fs::remove_dir_all(Path::new(&out));
}

#[test]
fn shipped_traces_are_what_the_generators_print() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../traces");
    for (file, args) in [
        ("constant-12mbit.trace", vec!["trace", "constant", "--rate", "12mbit"]),
        ("step-50-10mbit.trace", vec!["trace", "step", "--rates", "50mbit,10mbit", "--every", "5s"]),
        ("cellular-10mbit.trace", vec!["trace", "cellular", "--mean", "10mbit", "--period", "30s", "--seed", "1"]),
    ] {
        let o = ccbench(&args);
        assert!(o.status.success());
        let shipped = std::fs::read(root.join(file)).expect(file);
        assert!(o.stdout == shipped, "traces/{file} differs from `ccbench {}`", args.join(" "));
    }
}

/// The emulator's delivery rate (bit/s) between two times over the sampling intervals with a
/// standing queue at both ends, and how long those intervals last: with a queue the link is never
/// idle, so this is the link's own rate whatever the sender managed on a loaded host.
fn busy_rate_between(link: &[ccbench_emu::LinkSample], from_s: f64, to_s: f64) -> (f64, f64) {
    let (mut bytes, mut secs) = (0.0, 0.0);
    for w in link.windows(2) {
        let t = w[1].t_us as f64 / 1e6;
        if t > from_s && t <= to_s && w[0].backlog_bytes > 0 && w[1].backlog_bytes > 0 {
            bytes += w[1].delivered_bytes as f64;
            secs += (w[1].t_us - w[0].t_us) as f64 / 1e6;
        }
    }
    (if secs > 0.0 { bytes * 8.0 / secs } else { 0.0 }, secs)
}

#[test]
fn a_trace_sets_the_rate_and_a_schedule_changes_it_mid_run() {
    let _g = lock();
    if !have_root_and(&[]) {
        return;
    }
    let trace = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../traces/constant-12mbit.trace");
    let trace = trace.to_string_lossy().to_string();
    let v = run_json(&["--cc", "cubic", "--runs", "1", "--trace", &trace, "--rtt", "20ms", "--buffer", "100pkt", "--duration", "5s"], "trace");
    let goodput = f(&metrics(&v, 0)["goodput_bps"]);
    let ceiling = 12e6 * PAYLOAD_FRACTION;
    assert!(goodput <= ceiling * 1.005 && goodput >= ceiling * 0.85, "a 12 Mbit/s trace carried {goodput}");

    // 20 Mbit/s, then 5 Mbit/s from 3 s on: the link's own delivery rate must follow. CUBIC keeps
    // a standing queue in the default buffer (BBR drains it every gain cycle, and on a loaded CI
    // host once left the link 5 % idle), and only intervals with a queue are counted.
    let (v, out) = run_json_kept(&["--cc", "cubic", "--runs", "1", "--rate", "20mbit", "--rtt", "10ms", "--at", "3s:rate=5mbit", "--duration", "6s"], "sched");
    let link: Vec<ccbench_emu::LinkSample> = series_rows(&out, &v["runs"][0], "link_down");
    let _ = std::fs::remove_dir_all(out);
    let (before, busy_before) = busy_rate_between(&link, 1.0, 3.0);
    let (after, busy_after) = busy_rate_between(&link, 3.5, 5.5);
    assert!(busy_before > 1.0 && busy_after > 1.0, "the queue stood for only {busy_before} s and {busy_after} s of the 2 s windows");
    assert!((before / 20e6 - 1.0).abs() < 0.03, "before the step the busy link carried {before} bit/s");
    assert!((after / 5e6 - 1.0).abs() < 0.03, "after the step the busy link carried {after} bit/s");
}

#[test]
fn codel_keeps_the_queue_short_where_droptail_bloats() {
    let _g = lock();
    if !have_root_and(&[]) {
        return;
    }
    let common = ["--cc", "cubic", "--runs", "1", "--rate", "20mbit", "--rtt", "20ms", "--buffer", "20bdp", "--duration", "6s", "--seed", "4"];
    let mut droptail = common.to_vec();
    droptail.extend_from_slice(&["--aqm", "droptail"]);
    let mut codel = common.to_vec();
    codel.extend_from_slice(&["--aqm", "codel"]);
    let dt = run_json(&droptail, "droptail");
    let cd = run_json(&codel, "codel");
    let q = |v: &Value| f(&v["runs"][0]["path"]["down"]["queue_delay"]["p50_us"]) / 1000.0;
    assert!(q(&dt) > 50.0, "drop-tail with a 20-BDP buffer should bloat: p50 queue delay {} ms", q(&dt));
    assert!(q(&cd) < 20.0, "CoDel should keep the queue near its 5 ms target: p50 {} ms", q(&cd));
    assert!(f(&cd["runs"][0]["path"]["down"]["stats"]["drops_aqm"]) > 0.0);
    // And the link stays busy.
    assert!(f(&metrics(&cd, 0)["goodput_bps"]) > 20e6 * PAYLOAD_FRACTION * 0.8);
}

#[test]
fn a_policer_caps_goodput_at_its_rate() {
    let _g = lock();
    if !have_root_and(&[]) {
        return;
    }
    let v = run_json(&["--cc", "cubic", "--runs", "1", "--rate", "50mbit", "--rtt", "10ms", "--policer-down", "8mbit:30kb", "--duration", "5s"], "policer");
    let goodput = f(&metrics(&v, 0)["goodput_bps"]);
    assert!(goodput < 8e6, "policed at 8 Mbit/s but carried {goodput}");
    assert!(goodput > 8e6 * 0.4, "a policed TCP flow should still get a good part of the rate: {goodput}");
    assert!(f(&v["runs"][0]["path"]["down"]["stats"]["drops_policer"]) > 0.0);
}

#[test]
fn file_workload_reports_completion_time() {
    let _g = lock();
    if !have_root_and(&[]) {
        return;
    }
    let v = run_json(&["--workload", "file", "--size", "2mb", "--cc", "cubic", "--runs", "1", "--rate", "20mbit", "--rtt", "10ms"], "file");
    let m = metrics(&v, 0);
    let t = f(&m["completion_time_s"]);
    // 2 MB cannot arrive faster than the link's payload rate allows.
    let floor = 2e6 * 8.0 / (20e6 * PAYLOAD_FRACTION);
    assert!(t >= floor && t < floor * 3.0, "2 MB over 20 Mbit/s took {t} s (floor {floor} s)");
    assert_eq!(m["all_completed"], true);
    assert_eq!(v["params"]["workload"]["kind"], "bulk");
    assert!(v["params"]["workload"]["amount"]["bytes"].as_u64() == Some(2_000_000));
}

#[test]
fn objects_workload_completes_every_request_on_reused_connections() {
    let _g = lock();
    if !have_root_and(&[]) {
        return;
    }
    let v = run_json(
        &[
            "--workload",
            "objects",
            "--requests",
            "12",
            "--size",
            "256kib",
            "--concurrency",
            "4",
            "--method",
            "put",
            "--cc",
            "bbr",
            "--runs",
            "1",
            "--rate",
            "50mbit",
            "--rtt",
            "20ms",
        ],
        "objects",
    );
    let w = &v["runs"][0]["workload"];
    assert_eq!(w["kind"], "objects");
    assert_eq!(w["requests_completed"], 12);
    assert_eq!(w["server_connections"], 4, "persistent connections, reused");
    for c in w["connections"].as_array().unwrap() {
        assert_eq!(c["cc_read_back"], "bbr");
        assert_eq!(c["sender"], "client", "PUT: the client sends");
    }
    let throughput = f(&metrics(&v, 0)["goodput_bps"]);
    assert!(throughput < 50e6 * PAYLOAD_FRACTION && throughput > 50e6 * 0.3, "{throughput}");
}

#[test]
fn page_workload_over_http2_uses_one_connection() {
    let _g = lock();
    if !have_root_and(&[]) {
        return;
    }
    let v = run_json(&["--workload", "page", "--page", "small", "--http", "2", "--cc", "cubic", "--runs", "1", "--rate", "50mbit", "--rtt", "40ms"], "page");
    let w = &v["runs"][0]["workload"];
    assert_eq!(w["kind"], "page");
    assert_eq!(w["connections_used"], 1);
    assert_eq!(w["requests_completed"], w["requests_total"]);
    // Handshake + HTML + objects: at least two round trips.
    let plt = f(&w["page_load_s"]);
    assert!(plt >= 0.080, "page loaded in {plt} s over a 40 ms RTT");
    assert!(f(&w["html_ttfb_s"]) >= 0.040);
}

#[test]
fn a_mix_reports_each_algorithms_share_and_fairness() {
    let _g = lock();
    if !have_root_and(&[]) {
        return;
    }
    let v = run_json(
        &["--flows", "bbr:1,cubic:2", "--stagger", "1s", "--runs", "1", "--rate", "30mbit", "--rtt", "20ms", "--buffer", "2bdp", "--duration", "8s"],
        "mix",
    );
    let flows = v["runs"][0]["workload"]["flows"].as_array().unwrap();
    let ccs: Vec<&str> = flows.iter().map(|f| f["cc_read_back"].as_str().unwrap()).collect();
    assert_eq!(ccs, ["bbr", "cubic", "cubic"], "each flow runs its own algorithm, read back from its socket");
    let starts: Vec<f64> = flows.iter().map(|fl| f(&fl["start_s"])).collect();
    assert_eq!(starts, [0.0, 1.0, 2.0]);
    let m = metrics(&v, 0);
    let shares = m["shares"].as_array().unwrap();
    assert_eq!(shares.len(), 2);
    let total: f64 = shares.iter().map(|s| f(&s["share"])).sum();
    assert!((total - 1.0).abs() < 1e-6);
    let jain = f(&m["jain_index"]);
    assert!(jain > 1.0 / 3.0 && jain <= 1.0, "{jain}");
    assert!(!m["jain_per_second"].as_array().unwrap().is_empty());
    // Together the flows fill the link, and never exceed it.
    let g = f(&m["goodput_bps"]);
    assert!(g <= 30e6 * PAYLOAD_FRACTION * 1.005 && g > 30e6 * PAYLOAD_FRACTION * 0.8, "{g}");
}

#[test]
fn a_preset_with_a_bad_field_is_rejected_before_anything_runs() {
    let _g = lock();
    let dir = tempdir("preset");
    let file = dir.join("mine.toml");
    std::fs::write(
        &file,
        "description = \"mine\"\n[defaults]\nrate = \"10mbit\"\n[[conditions]]\nname = \"a\"\nloss = \"1%\"\n[[conditions]]\nname = \"b\"\nloss = \"200%\"\n",
    )
    .unwrap();
    let out = dir.join("out");
    let o = ccbench(&["run", "--preset", file.to_str().unwrap(), "--out", out.to_str().unwrap()]);
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert_eq!(err.trim().lines().count(), 1, "{err}");
    assert!(err.contains("--loss") && err.contains("condition \"b\"") && err.contains("200%"), "{err}");
    assert!(!out.exists(), "condition a must not have run");
    let o = ccbench(&["presets"]);
    let list = String::from_utf8_lossy(&o.stdout);
    for name in ["far-object-store", "website-migration", "loss-sweep", "lossy-gigabit-lan", "deep-buffer-rtt"] {
        assert!(list.contains(name), "{list}");
    }
    let _ = std::fs::remove_dir_all(dir);
}

/// Drops, queue delay, utilization and lateness all cover the span the workload measured: the
/// emulator's window opens and closes at the instants the goodput is counted over, for a timed
/// transfer (end known in advance) and for a file (end learnt when it arrives).
#[test]
fn every_path_figure_covers_the_measured_window() {
    let _g = lock();
    if !have_root_and(&[]) {
        return;
    }
    let timed =
        run_json(&["--cc", "cubic", "--runs", "1", "--rate", "20mbit", "--rtt", "20ms", "--buffer", "8bdp", "--duration", "4s", "--seed", "3"], "window");
    let file = run_json(
        &["--workload", "file", "--size", "3mb", "--cc", "cubic", "--runs", "1", "--rate", "20mbit", "--rtt", "20ms", "--buffer", "8bdp"],
        "window-file",
    );
    for v in [&timed, &file] {
        let run = &v["runs"][0];
        let (m, w, wl) = (&run["metrics"], &run["path"]["down"]["window"], &run["workload"]);
        assert_eq!(m["path_figures_over_whole_life"], false, "{m}");
        let start_us = f(&wl["start_us"]);
        let end_us = start_us + f(&wl["elapsed_s"]) * 1e6;
        assert!((f(&w["from_us"]) - start_us).abs() <= 1.0, "window opens with the workload: {w} vs {start_us}");
        assert!((f(&w["to_us"]) - end_us).abs() <= 1000.0, "window closes with the workload: {w} vs {end_us}");
        // The metrics are the window's figures, not the path's whole life.
        assert_eq!(f(&m["queue_delay_p95_ms"]), f(&w["queue_delay"]["p95_us"]) / 1000.0);
        assert_eq!(f(&m["utilization"]), f(&w["utilization"]));
        assert_eq!(f(&m["emulator_lateness_p99_us"]), f(&w["lateness"]["p99_us"]));
        assert_eq!(f(&m["drops_buffer"]), f(&w["stats"]["drops_buffer"]));
        // CUBIC keeps a 20 Mbit/s link busy while it sends; the whole life includes the idle
        // set-up and tear-down, so it is less busy.
        assert!(f(&w["utilization"]) > 0.85, "window utilization {w}");
        assert!(f(&run["path"]["down"]["utilization"]) < f(&w["utilization"]), "{}", run["path"]["down"]["utilization"]);
        // The window holds the data: bytes out of the bottleneck are at least the goodput's bytes.
        let goodput_bytes = f(&wl["goodput_bps"]) / 8.0 * f(&wl["elapsed_s"]);
        assert!(f(&w["stats"]["bytes_out"]) >= goodput_bytes * 0.95, "{w} vs {goodput_bytes}");
    }
}

/// `ccbench exec` with a command that, as PID 1 of its PID namespace, ignores SIGINT: Ctrl-C
/// in a terminal and `kill -INT` must both end it within a second or so, leaving nothing.
#[test]
fn sigint_ends_exec_from_a_terminal_and_from_kill() {
    let _g = lock();
    if !have_root_and(&[]) {
        return;
    }
    // kill -INT on ccbench alone (no terminal: only ccbench gets the signal).
    let mut child = Command::new(BIN).args(["exec", "--rtt", "10ms", "--", "sleep", "44"]).stdout(Stdio::null()).spawn().unwrap();
    std::thread::sleep(Duration::from_millis(1500));
    let t0 = Instant::now();
    // SAFETY: signalling our own child.
    unsafe { libc::kill(child.id() as i32, libc::SIGINT) };
    let status = child.wait().unwrap();
    assert!(t0.elapsed() < Duration::from_secs(2), "kill -INT took {:?}", t0.elapsed());
    assert_eq!(status.code(), Some(130));
    host_has_no_leftovers();

    // ^C typed into the controlling terminal: the whole foreground process group gets SIGINT.
    let (mut master, mut slave) = (0, 0);
    // SAFETY: openpty fills two descriptors we then own.
    assert_eq!(unsafe { libc::openpty(&mut master, &mut slave, std::ptr::null_mut(), std::ptr::null(), std::ptr::null()) }, 0);
    let mut cmd = Command::new(BIN);
    cmd.args(["exec", "--rtt", "10ms", "--", "sleep", "44"]);
    // SAFETY: the child only calls async-signal-safe setsid/ioctl/dup2 before exec.
    unsafe {
        use std::os::unix::process::CommandExt;
        cmd.pre_exec(move || {
            libc::setsid();
            libc::ioctl(slave, libc::TIOCSCTTY, 0);
            for fd in 0..3 {
                libc::dup2(slave, fd);
            }
            Ok(())
        });
    }
    let mut child = cmd.spawn().unwrap();
    std::thread::sleep(Duration::from_millis(1500));
    let t0 = Instant::now();
    // SAFETY: writing one byte (^C) to the pty master we own.
    assert_eq!(unsafe { libc::write(master, [3u8].as_ptr().cast(), 1) }, 1);
    let deadline = Instant::now() + Duration::from_secs(5);
    let status = loop {
        if let Some(s) = child.try_wait().unwrap() {
            break s;
        }
        assert!(Instant::now() < deadline, "Ctrl-C did not end ccbench exec");
        std::thread::sleep(Duration::from_millis(10));
    };
    assert!(t0.elapsed() < Duration::from_secs(2), "Ctrl-C took {:?}", t0.elapsed());
    assert_eq!(status.code(), Some(130));
    // SAFETY: closing descriptors we own.
    unsafe {
        libc::close(master);
        libc::close(slave);
    }
    let sleeps = Command::new("pgrep").args(["-f", "sleep 44"]).output().unwrap();
    assert!(sleeps.stdout.is_empty(), "the command outlived ccbench: {}", String::from_utf8_lossy(&sleeps.stdout));
    host_has_no_leftovers();
}

/// `bench emulator` takes the same typed algorithm as `run --cc` (issue 29 §4): `tcp:cubic` was
/// refused while `run --cc tcp:cubic` worked. A short cell at 0 ms, so no capacity figure is saved.
#[test]
fn bench_emulator_takes_a_transport_prefixed_algorithm() {
    let _g = lock();
    let out = out_path("bench-typed-cc");
    let o = ccbench(&["bench", "emulator", "--cc", "tcp:cubic", "--rates", "10mbit", "--rtts", "0", "--duration", "1s", "--out", &out.to_string_lossy()]);
    assert_eq!(o.status.code(), Some(0), "stderr: {}", String::from_utf8_lossy(&o.stderr));
    let bench: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(out.join("bench.json")).unwrap()).unwrap();
    assert_eq!(bench["cc"], "tcp:cubic");
    let emulated: Vec<f64> = bench["rows"].as_array().unwrap().iter().filter(|r| r["path"] == "emulator").map(|r| r["goodput_bps"].as_f64().unwrap()).collect();
    assert!(!emulated.is_empty() && emulated.iter().all(|&g| g > 5e6), "the 10 Mbit/s cells carried {emulated:?}");
    let _ = std::fs::remove_dir_all(&out);
}

/// `bench emulator` records the host's own timer floor, idle before each cell and during it,
/// beside each emulator row's delay error and the forwarders' CPU per GB (issue 33 §2, §4);
/// `--compare-wake` adds the same cell with early wake-ups off and `--emulator-batch` a cell
/// per batch, so their effects show in one run.
#[test]
fn bench_emulator_shows_the_host_timer_floor_beside_the_delay_error() {
    let _g = lock();
    let out = out_path("bench-timer-floor");
    let args = ["bench", "emulator", "--rates", "10mbit", "--rtts", "10ms", "--duration", "1s", "--compare-wake", "--emulator-batch", "25us,auto"];
    let o = ccbench(&[&args[..], &["--out", &out.to_string_lossy()]].concat());
    assert_eq!(o.status.code(), Some(0), "stderr: {}", String::from_utf8_lossy(&o.stderr));
    let stdout = String::from_utf8_lossy(&o.stdout);
    assert!(stdout.contains("| host timer p50 / p99 (idle) | host timer p50 / p99 (during the cell) |"), "{stdout}");
    let bench: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(out.join("bench.json")).unwrap()).unwrap();
    let rows = bench["rows"].as_array().unwrap();
    let paths: Vec<&str> = rows.iter().map(|r| r["path"].as_str().unwrap()).collect();
    // auto at 10 Mbit/s and 10 ms: 1 % of the RTT, 100 µs (two packet times would be 2.4 ms).
    assert_eq!(
        paths,
        ["veth", "emulator, batch 25us", "emulator, batch auto (100 µs)", "emulator, no early wake, batch 25us", "emulator, no offload, batch 25us"]
    );
    let batches: Vec<u64> = rows[1..].iter().map(|r| r["batch_us"].as_u64().unwrap()).collect();
    assert_eq!(batches, [25, 100, 25, 25]);
    for r in rows.iter().filter(|r| r["path"] != "veth") {
        for when in ["host_timer", "host_timer_cell"] {
            let floor = (r[format!("{when}_p50_us")].as_f64(), r[format!("{when}_p99_us")].as_f64());
            assert!(matches!(floor, (Some(a), Some(b)) if a >= 0.0 && b >= a), "{when} floor of {r}");
        }
        assert!(r["delay_error_p99_us"].as_f64().is_some(), "{r}");
        assert!(r["emulator_cpu_s_per_gb"].as_f64().is_some_and(|x| x > 0.0), "CPU per GB of {r}");
    }
    let _ = std::fs::remove_dir_all(&out);
}

/// The host's orphaned TCP sockets and the pages TCP holds (`/proc/net/sockstat`): both are
/// the host's, not a namespace's, whatever namespace the sockets lived in.
fn tcp_orphans_and_pages() -> (u64, u64) {
    let stat = std::fs::read_to_string("/proc/net/sockstat").unwrap();
    let line = stat.lines().find(|l| l.starts_with("TCP:")).unwrap();
    let field = |name: &str| -> u64 {
        let words: Vec<&str> = line.split_whitespace().collect();
        let i = words.iter().position(|w| *w == name).unwrap_or_else(|| panic!("no {name} in {line}"));
        words[i + 1].parse().unwrap()
    };
    (field("orphan"), field("mem"))
}

/// A time-bound flow's send buffer still holds megabytes when the deadline ends it; closed
/// gracefully, that data went to an orphaned socket retransmitting into a namespace that was
/// gone, holding the host's TCP memory for minutes (1.16 GB after one `bench emulator` at
/// unlimited rate and 50 ms, which starved the next cell). Flows now close with a reset.
#[test]
fn a_run_leaves_no_orphaned_socket_holding_the_hosts_memory() {
    let _g = lock();
    if !have_root_and(&[]) {
        return;
    }
    let (orphans_before, _) = tcp_orphans_and_pages();
    let v = run_json(&["--cc", "cubic", "--runs", "1", "--rate", "1gbit", "--rtt", "50ms", "--buffer", "2bdp", "--duration", "2s"], "orphans");
    assert!(f(&metrics(&v, 0)["goodput_bps"]) > 100e6, "the flow filled its buffers");
    let (orphans_after, pages) = tcp_orphans_and_pages();
    assert!(orphans_after <= orphans_before, "{orphans_before} orphaned TCP sockets before the run, {orphans_after} after ({pages} pages of TCP memory held)");
}
