//! QUIC beside kernel TCP (issue 8), end to end: the real binary, real namespaces, the emulator
//! in between. Names and bad input need nothing; the runs need root (under `CI=true` a missing
//! root is a failure, not a skip). Each run is a few seconds: the margins below are wide
//! because the figures they guard differ by far more (measured numbers in the README).

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
    if !root {
        let ci = std::env::var("CI").map(|v| v == "true").unwrap_or(false);
        assert!(!ci, "end-to-end QUIC test cannot run under CI=true: not root");
        eprintln!("skipping: not root");
    }
    root
}

fn tempdir(tag: &str) -> PathBuf {
    std::env::temp_dir().join(format!("ccbench-quic-{tag}-{}-{}", std::process::id(), Instant::now().elapsed().as_nanos()))
}

fn ccbench(args: &[&str]) -> Output {
    Command::new(BIN).args(args).output().expect("run ccbench")
}

/// `ccbench run ARGS --out DIR`: result.json, runs.csv and the text output.
fn run(args: &[&str], tag: &str) -> (Value, String, String) {
    let out = tempdir(tag);
    let out_s = out.to_string_lossy().to_string();
    let mut full = vec!["run"];
    full.extend_from_slice(args);
    full.extend_from_slice(&["--out", &out_s]);
    let o = ccbench(&full);
    let text = String::from_utf8_lossy(&o.stdout).to_string();
    assert!(o.status.success(), "ccbench {full:?} failed: {}\n{text}", String::from_utf8_lossy(&o.stderr));
    let v: Value = serde_json::from_str(&std::fs::read_to_string(out.join("result.json")).unwrap()).unwrap();
    let csv = std::fs::read_to_string(out.join("runs.csv")).unwrap();
    let _ = std::fs::remove_dir_all(&out);
    (v, csv, text)
}

/// The median of a figure over the completed runs of `cc`.
fn median(v: &Value, cc: &str, f: impl Fn(&Value) -> f64) -> f64 {
    let mut xs: Vec<f64> = v["runs"].as_array().unwrap().iter().filter(|r| r["cc"] == cc && r["status"] == "complete").map(|r| f(&r["metrics"])).collect();
    assert!(!xs.is_empty(), "no completed run of {cc}");
    xs.sort_by(f64::total_cmp);
    let n = xs.len();
    if n % 2 == 1 {
        xs[n / 2]
    } else {
        (xs[n / 2 - 1] + xs[n / 2]) / 2.0
    }
}

#[test]
fn unknown_transports_and_algorithms_are_refused_listing_what_exists() {
    for (flag, value) in [("--cc", "quic:bbr9,quic:cubic"), ("--cc", "udp:cubic,bbr"), ("--flows", "quic:vegas:1,tcp:cubic:1"), ("--cc", "tcp:nosuch,bbr")] {
        let out = tempdir("bad");
        let o = ccbench(&["run", flag, value, "--runs", "4", "--out", &out.to_string_lossy()]);
        let err = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(2), "{flag} {value}: {err}");
        assert_eq!(err.trim().lines().count(), 1, "{err}");
        assert!(err.contains(flag) && err.contains("quic:cubic") && err.contains("quic:bbr3") && err.contains("tcp:cubic"), "{err}");
        assert!(!out.exists(), "nothing left behind");
    }
    // QUIC carries every workload but the real browser's.
    let out = tempdir("browser");
    let o = ccbench(&["run", "--cc", "tcp:cubic,quic:cubic", "--workload", "browser", "--runs", "4", "--out", &out.to_string_lossy()]);
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert_eq!(err.trim().lines().count(), 1, "{err}");
    assert!(err.contains("--cc") && err.contains("quic:cubic") && err.contains("every workload but browser"), "{err}");
    assert!(!out.exists(), "nothing left behind");
}

/// A page over QUIC beside the same page over kernel TCP (HTTP/2, one connection each): every
/// resource arrives on both, the load times are of one order (QUIC's handshake is the round
/// trip TCP's connect is), and both QUIC ends are read back into result.json and runs.csv.
#[test]
fn a_quic_page_loads_beside_a_tcp_page() {
    let _g = lock();
    if !have_root() {
        return;
    }
    let (v, csv, text) = run(
        &[
            "--cc",
            "quic:cubic,tcp:cubic",
            "--workload",
            "page",
            "--page",
            "small",
            "--http",
            "2",
            "--rate",
            "30mbit",
            "--rtt",
            "20ms",
            "--runs",
            "4",
            "--seed",
            "5",
        ],
        "page",
    );
    let load = |cc| median(&v, cc, |m| m["completion_time_s"].as_f64().unwrap());
    let (quic, tcp) = (load("quic:cubic"), load("tcp:cubic"));
    eprintln!("small page: quic:cubic {:.0} ms, tcp:cubic {:.0} ms", quic * 1e3, tcp * 1e3);
    assert!(quic / tcp < 2.0 && tcp / quic < 2.0, "quic:cubic {quic} s vs tcp:cubic {tcp} s");
    for r in v["runs"].as_array().unwrap() {
        assert_eq!(r["status"], "complete", "{r}");
        let w = &r["workload"];
        assert_eq!((w["requests_completed"].as_u64(), w["errors"].as_u64()), (Some(21), Some(0)), "{w}");
        let c = &w["connections"][0];
        if r["cc"] == "quic:cubic" {
            assert_eq!(
                (c["transport"].as_str(), c["cc_read_back"].as_str(), c["cc_receiver"].as_str()),
                (Some("quic"), Some("quic:cubic"), Some("quic:cubic"))
            );
            assert!(w["html_ttfb_s"].as_f64().unwrap() >= 0.039, "two round trips before the HTML's first byte");
        } else {
            assert_eq!((c["transport"].as_str(), c["cc_read_back"].as_str()), (Some("tcp"), Some("tcp:cubic")));
        }
    }
    assert!(csv.lines().any(|l| l.contains(",quic,quic:cubic,quic:cubic,")), "{csv}");
    assert!(text.contains("HTTP/2 on one connection (TCP) or one QUIC connection, a stream per object (QUIC)"), "{text}");
}

/// Objects over QUIC beside objects over kernel TCP, interleaved on one path: every request
/// completes on both, content throughput within 25 % of each other (measured: within 3 %), one
/// QUIC connection against `--concurrency` TCP ones, both QUIC ends read back into result.json
/// and runs.csv, and the emulator's figures over the requests' span.
#[test]
fn quic_objects_run_beside_tcp_objects_on_one_path() {
    let _g = lock();
    if !have_root() {
        return;
    }
    let (v, csv, text) = run(
        &[
            "--cc",
            "quic:cubic,tcp:cubic",
            "--workload",
            "objects",
            "--method",
            "get",
            "--requests",
            "24",
            "--size",
            "256kib",
            "--concurrency",
            "8",
            "--rate",
            "30mbit",
            "--rtt",
            "20ms",
            "--runs",
            "4",
            "--seed",
            "4",
        ],
        "objects",
    );
    let quic = median(&v, "quic:cubic", |m| m["goodput_bps"].as_f64().unwrap());
    let tcp = median(&v, "tcp:cubic", |m| m["goodput_bps"].as_f64().unwrap());
    eprintln!("objects: quic:cubic {:.1} Mbit/s, tcp:cubic {:.1} Mbit/s", quic / 1e6, tcp / 1e6);
    assert!((quic / tcp - 1.0).abs() <= 0.25, "quic:cubic {quic} vs tcp:cubic {tcp} bit/s");
    assert!(quic < 30e6 && tcp < 30e6, "content throughput above the link");
    for r in v["runs"].as_array().unwrap() {
        assert_eq!(r["status"], "complete", "{r}");
        let (w, m) = (&r["workload"], &r["metrics"]);
        assert_eq!((w["kind"].as_str(), w["requests_completed"].as_u64(), w["errors"].as_u64()), (Some("objects"), Some(24), Some(0)), "{w}");
        assert_eq!(m["all_completed"], true);
        // The emulator counted over the span the requests ran in, not the path's whole life.
        assert_eq!(m["path_figures_over_whole_life"], false);
        assert!(m["utilization"].as_f64().unwrap() > 0.5, "{m}");
        let conns = w["connections"].as_array().unwrap();
        if r["cc"] == "quic:cubic" {
            assert_eq!(conns.len(), 1, "every request on one QUIC connection");
            let c = &conns[0];
            assert_eq!(
                (c["transport"].as_str(), c["cc_read_back"].as_str(), c["cc_receiver"].as_str()),
                (Some("quic"), Some("quic:cubic"), Some("quic:cubic"))
            );
            assert_eq!((c["requests_completed"].as_u64(), c["sender"].as_str()), (Some(24), Some("server")));
            assert!(c["final_quic"]["packets_sent"].as_u64().unwrap() > 1000);
            assert!(m["sender_rtt_p50_ms"].as_f64().unwrap() >= 20.0, "{m}");
        } else {
            assert_eq!(conns.len(), 8);
            assert!(conns.iter().all(|c| c["transport"] == "tcp" && c["cc_read_back"] == "tcp:cubic"));
        }
    }
    let header = csv.lines().next().unwrap();
    assert!(header.contains(",transport,cc_read_back,cc_receiver,"), "{header}");
    assert!(csv.lines().any(|l| l.contains(",quic,quic:cubic,quic:cubic,")), "{csv}");
    assert!(text.contains("8 concurrent streams on one QUIC connection"), "{text}");
}

/// QUIC CUBIC and kernel TCP CUBIC on the same clean path: goodput within 20 % (the payload
/// per packet differs by ~3 %; the rest is the user-space stack), both ends read back, and the
/// transport in result.json and runs.csv.
#[test]
fn quic_cubic_runs_beside_tcp_cubic_within_20_percent() {
    let _g = lock();
    if !have_root() {
        return;
    }
    let (v, csv, text) = run(&["--cc", "quic:cubic,tcp:cubic", "--rate", "40mbit", "--rtt", "20ms", "--duration", "4s", "--runs", "4", "--seed", "1"], "cubic");
    let quic = median(&v, "quic:cubic", |m| m["goodput_bps"].as_f64().unwrap());
    let tcp = median(&v, "tcp:cubic", |m| m["goodput_bps"].as_f64().unwrap());
    eprintln!("quic:cubic {:.1} Mbit/s, tcp:cubic {:.1} Mbit/s", quic / 1e6, tcp / 1e6);
    assert!((quic / tcp - 1.0).abs() <= 0.2, "quic:cubic {quic} vs tcp:cubic {tcp} bit/s");
    for r in v["runs"].as_array().unwrap() {
        let f = &r["workload"]["flows"][0];
        assert_eq!(f["cc_read_back"], r["cc"]);
        if r["cc"] == "quic:cubic" {
            assert_eq!((f["transport"].as_str(), f["cc_receiver"].as_str()), (Some("quic"), Some("quic:cubic")));
            assert!(f["final_quic"]["packets_sent"].as_u64().unwrap() > 1000);
        } else {
            assert_eq!(f["transport"], "tcp");
        }
    }
    assert!(v["provenance"]["quic_stack"].as_str().unwrap().starts_with("noq"));
    let header = csv.lines().next().unwrap();
    assert!(header.contains(",transport,cc_read_back,cc_receiver,"), "{header}");
    assert!(csv.lines().any(|l| l.contains(",quic,quic:cubic,quic:cubic,")), "{csv}");
    assert!(text.contains("bulk TCP and QUIC download"), "{text}");
}

/// Issue 8 (a): a deep buffer (70 Mbit/s, 6 ms, 8 BDP). QUIC BBR keeps the RTT near the floor,
/// QUIC CUBIC fills the buffer: BBR's median RTT is under half of CUBIC's (measured: about a
/// fifth).
#[test]
fn quic_bbr_keeps_rtt_under_half_of_quic_cubic_in_a_deep_buffer() {
    let _g = lock();
    if !have_root() {
        return;
    }
    let (v, _, _) = run(
        &["--cc", "quic:bbr3,quic:cubic", "--rate", "70mbit", "--rtt", "6ms", "--buffer", "8bdp", "--duration", "4s", "--runs", "4", "--seed", "2"],
        "deep",
    );
    let bbr = median(&v, "quic:bbr3", |m| m["sender_rtt_p50_ms"].as_f64().unwrap());
    let cubic = median(&v, "quic:cubic", |m| m["sender_rtt_p50_ms"].as_f64().unwrap());
    eprintln!("median RTT: quic:bbr3 {bbr:.1} ms, quic:cubic {cubic:.1} ms");
    assert!(bbr < cubic / 2.0, "quic:bbr3 {bbr} ms vs quic:cubic {cubic} ms");
    // The queue says the same from the emulator's side.
    let q = |cc| median(&v, cc, |m| m["queue_delay_p50_ms"].as_f64().unwrap());
    assert!(q("quic:bbr3") < q("quic:cubic") / 2.0, "queue delay {} vs {} ms", q("quic:bbr3"), q("quic:cubic"));
}

/// Issue 8 (b): 1 % random loss on the data direction. QUIC CUBIC collapses (Mathis: about
/// 1.22 × MSS / (RTT × √p) ≈ 7 Mbit/s at 20 ms); QUIC BBR does not depend on loss for its rate.
/// With noq's BBRv3 the margin is "several times CUBIC" (measured: 74 % of the link against
/// CUBIC's 14 %); BBRv3 reacts to rounds above 2 % loss, which 1 % random loss produces in
/// short rounds.
#[test]
fn quic_bbr_outruns_quic_cubic_under_one_percent_loss() {
    let _g = lock();
    if !have_root() {
        return;
    }
    let (v, _, _) = run(
        &["--cc", "quic:bbr3,quic:cubic", "--rate", "50mbit", "--rtt", "20ms", "--loss-down", "1%", "--duration", "4s", "--runs", "4", "--seed", "3"],
        "loss",
    );
    let g = |cc| median(&v, cc, |m| m["goodput_bps"].as_f64().unwrap());
    let (bbr, cubic) = (g("quic:bbr3"), g("quic:cubic"));
    eprintln!("1 % loss: quic:bbr3 {:.1} Mbit/s, quic:cubic {:.1} Mbit/s", bbr / 1e6, cubic / 1e6);
    // Mathis with MSS ≈ 1400 B, RTT 20 ms, p = 1 %: 6.8 Mbit/s; CUBIC in its range (×0.4–×3).
    let mathis = 1.22 * 1400.0 * 8.0 / (0.020 * 0.01f64.sqrt());
    assert!(cubic > 0.4 * mathis && cubic < 3.0 * mathis, "quic:cubic {cubic} bit/s vs Mathis {mathis}");
    assert!(bbr > 3.0 * cubic && bbr > 0.5 * 50e6, "quic:bbr3 {bbr} vs quic:cubic {cubic} bit/s");
}

/// Issue 8 (d): QUIC BBRv3 and kernel TCP CUBIC share one bottleneck in one run: both carry
/// traffic, neither takes it all, and the result has the shares and Jain's index.
#[test]
fn quic_bbr_shares_a_bottleneck_with_tcp_cubic() {
    let _g = lock();
    if !have_root() {
        return;
    }
    let (v, csv, _) =
        run(&["--flows", "quic:bbr3:1,tcp:cubic:1", "--rate", "40mbit", "--rtt", "20ms", "--duration", "5s", "--runs", "1", "--seed", "4"], "share");
    let r = &v["runs"][0];
    let flows = r["workload"]["flows"].as_array().unwrap();
    let ccs: Vec<(&str, &str)> = flows.iter().map(|f| (f["cc_read_back"].as_str().unwrap(), f["transport"].as_str().unwrap())).collect();
    assert_eq!(ccs, [("quic:bbr3", "quic"), ("tcp:cubic", "tcp")]);
    let shares = r["metrics"]["shares"].as_array().unwrap();
    for s in shares {
        let share = s["share"].as_f64().unwrap();
        assert!(share > 0.05 && share < 0.95, "{s}");
    }
    let jain = r["metrics"]["jain_index"].as_f64().unwrap();
    assert!(jain > 0.5 && jain <= 1.0, "{jain}");
    assert!(csv.lines().nth(1).unwrap().contains(",tcp+quic,") || csv.lines().nth(1).unwrap().contains(",quic+tcp,"), "{csv}");
}
