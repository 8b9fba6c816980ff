//! QUIC beside kernel TCP (issue 8), end to end: the real binary, real namespaces, the emulator
//! in between. Names and bad input need nothing; the runs need root (under `CI=true` a missing
//! root is a failure, not a skip). Each run is a few seconds: the margins below are wide
//! because the figures they guard differ by far more (measured numbers in docs/quic.md).

mod common;

use common::{ccbench, have_root, lock, out_path, run_ok};
use serde_json::Value;

/// `ccbench run ARGS --out DIR`: result.json, runs.csv and the text output.
fn run(args: &[&str], tag: &str) -> (Value, String, String) {
    let out = out_path(tag);
    let text = run_ok(args, &out);
    let v = common::result(&out);
    let csv = std::fs::read_to_string(out.join("runs.csv")).unwrap();
    let _ = std::fs::remove_dir_all(&out);
    (v, csv, text)
}

/// The median of a figure over the completed runs of `cc`.
fn median(v: &Value, cc: &str, f: impl Fn(&Value) -> f64) -> f64 {
    let xs: Vec<f64> = v["runs"].as_array().unwrap().iter().filter(|r| r["cc"] == cc && r["status"] == "complete").map(|r| f(&r["metrics"])).collect();
    assert!(!xs.is_empty(), "no completed run of {cc}");
    common::median(xs)
}

#[test]
fn unknown_transports_and_algorithms_are_refused_listing_what_exists() {
    for (flag, value) in [("--cc", "quic:bbr9,quic:cubic"), ("--cc", "udp:cubic,bbr"), ("--flows", "quic:vegas:1,tcp:cubic:1"), ("--cc", "tcp:nosuch,bbr")] {
        let out = out_path("bad");
        let o = ccbench(&["run", flag, value, "--runs", "4", "--out", &out.to_string_lossy()]);
        let err = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(2), "{flag} {value}: {err}");
        assert_eq!(err.trim().lines().count(), 1, "{err}");
        assert!(err.contains(flag) && err.contains("quic:cubic") && err.contains("quic:bbr3") && err.contains("tcp:cubic"), "{err}");
        assert!(!out.exists(), "nothing left behind");
    }
    // QUIC carries every workload but the real browser's.
    let out = out_path("browser");
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

/// Reordering as each sender saw it (issue 31): on a path that holds 1 % of packets back by
/// 10 packets, every held packet first looks lost. Kernel TCP raises `tcpi_reordering` past
/// its 3, and QUIC raises its loss detection's packet threshold past RFC 9002's 3 once a loss
/// proves spurious (vendor/noq-proto/PATCH.md, "Reordering"): both in the series' `reordering`
/// column, QUIC's in result.json's `final_quic.packet_threshold` too.
#[test]
fn both_senders_raise_their_reordering_threshold_on_a_reordering_path() {
    let _g = lock();
    if !have_root() {
        return;
    }
    for cc in ["quic:bbr3", "tcp:cubic"] {
        let out = out_path("reorder");
        run_ok(&["--cc", cc, "--rate", "20mbit", "--rtt", "20ms", "--reorder", "1%:10pkt", "--duration", "3s", "--runs", "1", "--seed", "31"], &out);
        let run = &common::result(&out)["runs"][0];
        let rows = common::tcp_series(&out, run);
        let header: Vec<&str> = rows.lines().next().unwrap().split(',').collect();
        let col = |name: &str| header.iter().position(|h| *h == name).unwrap_or_else(|| panic!("no {name} column"));
        let last: Vec<&str> = rows.lines().rfind(|l| l.starts_with("flow-0,")).expect("no sample of flow-0").split(',').collect();
        let reordering: u32 = last[col("reordering")].parse().unwrap_or_else(|_| panic!("{}: no reordering in {last:?}", run["cc"]));
        eprintln!("{}: reordering {reordering} at the last sample, spurious losses {:?}", run["cc"], last[col("spurious_losses")]);
        assert!(reordering > 3, "{}: the threshold stayed at {reordering}", run["cc"]);
        if run["cc"] == "quic:bbr3" {
            let flow = &run["workload"]["flows"][0]["final_quic"];
            assert!(flow["spurious_congestion_events"].as_u64().unwrap() > 0, "{flow}");
            assert!(flow["packet_threshold"].as_u64().unwrap() >= u64::from(reordering), "{flow}");
        }
        let _ = std::fs::remove_dir_all(&out);
    }
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

/// Issue 8 (a): a deep buffer (70 Mbit/s, 6 ms, 8 BDP). Every QUIC BBR keeps the RTT near the
/// floor, QUIC CUBIC fills the buffer: each BBR's median RTT is under half of CUBIC's
/// (measured: 9.6 and 9.4 ms against 43 ms, about a fifth, with runs of 4 s; now 3 s for
/// CI's time).
#[test]
fn quic_bbr_keeps_rtt_under_half_of_quic_cubic_in_a_deep_buffer() {
    let _g = lock();
    if !have_root() {
        return;
    }
    let (v, _, _) = run(
        &["--cc", "quic:bbr3,quic:bbr2,quic:cubic", "--rate", "70mbit", "--rtt", "6ms", "--buffer", "8bdp", "--duration", "2s", "--runs", "5", "--seed", "2"],
        "deep",
    );
    let rtt = |cc| median(&v, cc, |m| m["sender_rtt_p50_ms"].as_f64().unwrap());
    // The queue says the same from the emulator's side.
    let queue = |cc| median(&v, cc, |m| m["queue_delay_p50_ms"].as_f64().unwrap());
    let cubic = rtt("quic:cubic");
    for bbr in ["quic:bbr3", "quic:bbr2"] {
        eprintln!("median RTT: {bbr} {:.1} ms, quic:cubic {cubic:.1} ms; queue {:.1} vs {:.1} ms", rtt(bbr), queue(bbr), queue("quic:cubic"));
        assert!(rtt(bbr) < cubic / 2.0, "{bbr} {} ms vs quic:cubic {cubic} ms", rtt(bbr));
        assert!(queue(bbr) < queue("quic:cubic") / 2.0, "queue delay {} vs {} ms", queue(bbr), queue("quic:cubic"));
    }
}

/// Issue 8 (b): 1 % random loss on the data direction. QUIC CUBIC collapses (Mathis: about
/// 1.22 × MSS / (RTT × √p) ≈ 7 Mbit/s at 20 ms); QUIC BBRv3 does not take loss for congestion
/// below its 2 % threshold. Measured (docs/quic.md, 40 runs each on a loaded 2-core VM, load 2–8):
/// BBRv3 85 % of the link (74–88 %, 2 runs in 40 under 80 %), CUBIC 17 %. Gates on the median of
/// 4 runs: BBRv3 ≥ 80 % (the figure) failed about 1 time in 350 (0.3 %) when those 40
/// runs were resampled.
/// (BBRv2 ran here too, 5 runs of 3 controllers, until CI's time ran short: it shares BBRv3's
/// loss threshold (`inflight_hi` at 2 %), measured 85 % (75–89 %) in the same 40 runs, and its
/// queue and pacing are checked beside BBRv3's in the tests above and below.)
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
    let (bbr3, cubic) = (g("quic:bbr3"), g("quic:cubic"));
    eprintln!("1 % loss: quic:bbr3 {:.1}, quic:cubic {:.1} Mbit/s", bbr3 / 1e6, cubic / 1e6);
    // Mathis with MSS ≈ 1400 B, RTT 20 ms, p = 1 %: 6.8 Mbit/s; CUBIC in its range (×0.4–×3).
    let mathis = 1.22 * 1400.0 * 8.0 / (0.020 * 0.01f64.sqrt());
    assert!(cubic > 0.4 * mathis && cubic < 3.0 * mathis, "quic:cubic {cubic} bit/s vs Mathis {mathis}");
    assert!(bbr3 >= 0.80 * 50e6 && bbr3 > 3.0 * cubic, "quic:bbr3 {bbr3} vs quic:cubic {cubic} bit/s");
}

/// Issue 8 (c): above BBRv3's 2 % loss threshold, each probe records where loss crossed 2 %
/// as inflight_hi and QUIC BBRv3 backs off; kernel BBRv1 ignores loss. At 5 % random loss
/// on the data direction TCP BBR keeps most of the link and far more than QUIC BBRv3
/// (measured: 88 % against 47 %). On a clean path both carry over 85 % of the link (this test
/// ran that path too until CI's time ran short; `quic_bbr_outruns_quic_cubic_under_one_percent_loss`
/// holds BBRv3 to 80 % even at 1 % loss), so BBRv3 under 60 % of the link is a back-off to
/// under 0.7 of what it carries clean.
#[test]
fn quic_bbr3_backs_off_under_five_percent_loss_where_tcp_bbr_does_not() {
    let _g = lock();
    if !have_root() {
        return;
    }
    let args = ["--cc", "tcp:bbr,quic:bbr3", "--rate", "50mbit", "--rtt", "20ms", "--loss-down", "5%", "--duration", "3s", "--runs", "4", "--seed", "6"];
    let goodput = |v: &Value, cc| median(v, cc, |m| m["goodput_bps"].as_f64().unwrap());
    let (lossy, _, _) = run(&args, "loss5");
    let (tcp5, quic5) = (goodput(&lossy, "tcp:bbr"), goodput(&lossy, "quic:bbr3"));
    eprintln!("5 %: tcp:bbr {:.1}, quic:bbr3 {:.1} Mbit/s", tcp5 / 1e6, quic5 / 1e6);
    assert!(tcp5 > 0.7 * 50e6, "tcp:bbr at 5 %: {tcp5} bit/s");
    assert!(tcp5 > 1.4 * quic5 && quic5 < 0.6 * 50e6, "5 %: tcp:bbr {tcp5} vs quic:bbr3 {quic5} bit/s");
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

/// noq-proto 1.4's pacer (`connection/pacing.rs`, `rate_capacity`): a token bucket of 2 ms
/// at the pacing rate, at least 10 datagrams and at most 256, never above 10 ms of sending.
/// The longest line-rate burst it lets out, in datagrams of `mtu` bytes.
fn noq_pacer_burst(pacing_bytes_per_s: f64, mtu: f64) -> f64 {
    let bytes_in = |ms: f64| pacing_bytes_per_s * ms / 1e3;
    let capacity = bytes_in(2.0).clamp(10.0 * mtu, 256.0 * mtu).min(bytes_in(10.0).max(mtu));
    (capacity / mtu).ceil()
}

/// Issue 8 (e): pacing is real. With an unlimited buffer a loss-based sender grows the queue
/// without bound, a paced BBR does not: at the bottleneck's entry, before the queue, QUIC BBR's
/// packets arrive paced, 99 % of them in bursts no longer than noq's pacer lets out at
/// ProbeBW_UP's 1.25 × its own estimate (11 datagrams at 50 Mbit/s, 12 when the estimate runs
/// 5 % high: a full local CI run saw bbr2's p99 at 12 against a budget of 11 taken from the
/// link's rate, its estimates 1.024–1.055 of the link); and each QUIC BBR's queue stays
/// under its cwnd's bound while QUIC CUBIC's grows past four times it.
///
/// How short BBR's queue is depends on its bandwidth estimate, which this host can inflate:
/// when our userspace receiver acknowledges late (its task runs late on a loaded 2-core VM)
/// or the emulator catches up after a late wake-up, an interval of about an RTT counts a
/// millisecond's data too many, and the max filter keeps that 5 % for two cycles
/// (docs/quic-fidelity.md, "The bandwidth estimate" and "ACK aggregation"). Paced above the
/// link, BBRv3 then cruises at its cwnd (2 BDP plus extra_acked): a standing queue of about
/// one RTT. So the queue bound here is 1.5 RTTs; with an exact clock the queue is a few ms
/// every time (`quic-cc/tests/noq_in_memory.rs`). The end-of-run estimate does not tell
/// which runs were spared: one ended at 1.010 of the link with a queue p50 of 10.4 ms.
/// Measured: CI's run 7.7 / 23.9 ms against 161 ms; idle here, estimates 50.6–53.4 Mbit/s against the link's
/// 49.05 (UDP payload) and queues 7–28 ms against 145–315 ms (docs/quic.md).
#[test]
fn quic_bbr_is_paced_at_the_bottleneck_entry_and_keeps_an_unlimited_queue_short() {
    let _g = lock();
    if !have_root() {
        return;
    }
    let (v, _, _) = run(
        &[
            "--cc",
            "quic:bbr3,quic:bbr2,quic:cubic",
            "--rate",
            "50mbit",
            "--rtt",
            "20ms",
            "--buffer",
            "unlimited",
            "--duration",
            "3s",
            "--runs",
            "5",
            "--seed",
            "5",
        ],
        "pace",
    );
    let queue = |cc| median(&v, cc, |m| m["queue_delay_p50_ms"].as_f64().unwrap());
    let burst_p99 = |cc| median(&v, cc, |m| m["entry"]["burst_p99_packets"].as_f64().unwrap());
    let mtu = v["runs"][0]["workload"]["flows"][0]["final_quic"]["mtu"].as_f64().unwrap();
    // The link in the bytes BBR counts: UDP payloads, without the 28 bytes of IP and UDP
    // headers that the emulator's rate serializes too.
    let link_bps = 50e6 * mtu / (mtu + 28.0);
    let (rtt_ms, cubic) = (20.0, queue("quic:cubic"));
    for bbr in ["quic:bbr3", "quic:bbr2"] {
        let runs: Vec<&Value> = v["runs"].as_array().unwrap().iter().filter(|r| r["cc"] == bbr && r["status"] == "complete").collect();
        // Each run's estimate at its end (the max filter's, so at least what the last two
        // cycles measured): what set its queue, and the rate its pacer ran at.
        let max_bw = |r: &Value| r["workload"]["flows"][0]["final_quic"]["bbr"]["max_bw_bps"].as_f64().unwrap();
        for r in &runs {
            eprintln!(
                "{bbr} run {}: max_bw {:.3} of the link, queue p50 {:.1} ms",
                r["index"],
                max_bw(r) / link_bps,
                r["metrics"]["queue_delay_p50_ms"].as_f64().unwrap_or(f64::NAN)
            );
        }
        // The pacer's budget at ProbeBW_UP's 1.25 × the controller's own estimate, which this
        // host inflates by up to ~5 % (above): at 1.055 of the link, 12 datagrams instead of 11.
        let budget = common::median(runs.iter().map(|r| noq_pacer_burst(1.25 * max_bw(r) / 8.0, mtu)).collect());
        eprintln!("{bbr}: queue p50 {:.1} ms (quic:cubic {cubic:.0} ms); 99 % of packets in bursts of ≤ {} (noq's burst {budget})", queue(bbr), burst_p99(bbr));
        assert!(queue(bbr) < 1.5 * rtt_ms && cubic > 4.0 * queue(bbr).max(2.5), "{bbr} queue {} ms vs quic:cubic {cubic} ms", queue(bbr));
        assert!(burst_p99(bbr) <= budget, "{bbr}: 99 % of packets in bursts of up to {} packets, noq paces at most {budget}", burst_p99(bbr));
    }
    // With HyStart++ (issue 17) quic:cubic leaves slow start on the RTT rise instead of at the
    // first loss, so without a buffer limit its queue grows in congestion avoidance only
    // (p50 38 ms in one run, 145–315 ms in others, in 3 s; noq's CUBIC, without HyStart,
    // reached 965 ms). Still a standing queue of over a base RTT.
    assert!(cubic > rtt_ms, "quic:cubic's queue should grow without a buffer limit: {cubic} ms");
    // The entry figures are there for every run, measured before loss and the queue.
    for r in v["runs"].as_array().unwrap() {
        let e = &r["metrics"]["entry"];
        assert!(e["gap_p50_us"].as_f64().is_some() && e["burst_max_packets"].as_u64().unwrap() >= 1, "{e}");
        let stats = &r["path"]["down"]["window"]["stats"]["entry"];
        assert_eq!(stats["bursts"]["packets"].as_u64(), r["path"]["down"]["window"]["stats"]["packets_in"].as_u64(), "every arrival is in one burst");
    }
}

/// `--quic-receiver-cc` (a diagnostic) runs the receiving end with another controller, so
/// scenario 5's mix-up — server and client controllers differ — can be shown on purpose: the
/// sender still runs what --cc asks for, the receiver is read back as the other, and the
/// mismatch warning is in the flow, in result.json's warnings and in the text output. Bad
/// values and misplaced uses are refused in one line naming the flag.
#[test]
fn quic_receiver_cc_shows_the_mismatch_warning_on_purpose() {
    for (args, needle) in [
        (vec!["--cc", "quic:bbr3", "--quic-receiver-cc", "vegas"], "a QUIC algorithm"),
        (vec!["--cc", "tcp:cubic", "--quic-receiver-cc", "cubic"], "only when a QUIC algorithm"),
        (vec!["--cc", "quic:bbr3", "--workload", "page", "--quic-receiver-cc", "cubic"], "only with --workload bulk, file or objects"),
    ] {
        let out = out_path("recv-bad");
        let o = ccbench(&[&["run"], &args[..], &["--runs", "1", "--out", &out.to_string_lossy()]].concat());
        common::one_line(&o, 2, needle);
        assert!(String::from_utf8_lossy(&o.stderr).contains("--quic-receiver-cc"));
        assert!(!out.exists(), "nothing left behind");
    }
    let _g = lock();
    if !have_root() {
        return;
    }
    let out = out_path("recv-cc");
    let o = ccbench(&[
        "run",
        "--cc",
        "quic:bbr3",
        "--quic-receiver-cc",
        "quic:cubic",
        "--rate",
        "20mbit",
        "--rtt",
        "10ms",
        "--duration",
        "2s",
        "--runs",
        "1",
        "--out",
        &out.to_string_lossy(),
    ]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let v = common::result(&out);
    let _ = std::fs::remove_dir_all(&out);
    let stderr = String::from_utf8_lossy(&o.stderr);
    let flow = &v["runs"][0]["workload"]["flows"][0];
    assert_eq!((flow["cc_read_back"].as_str(), flow["cc_receiver"].as_str()), (Some("quic:bbr3"), Some("quic:cubic")), "{flow}");
    let warning = flow["warning"].as_str().expect("the flow carries the mismatch warning");
    assert!(warning.contains("sender runs quic:bbr3") && warning.contains("receiver runs quic:cubic"), "{warning}");
    let warnings: Vec<&str> = v["warnings"].as_array().unwrap().iter().filter_map(|w| w.as_str()).collect();
    assert!(warnings.iter().any(|w| w.contains("receiver runs quic:cubic")), "{warnings:?}");
    assert!(stderr.lines().any(|l| l.starts_with("warning: ") && l.contains("receiver runs quic:cubic")), "not said on stderr: {stderr}");
}
