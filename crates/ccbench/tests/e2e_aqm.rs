//! End-to-end tests of the AQMs (docs/aqm.md): real namespaces, real kernel CUBIC, checked
//! against what each RFC promises and against tools nobody here wrote (ping, iperf3).
//!
//! They need root. Outside CI they skip without it; under `CI=true` they fail instead.

mod common;

use common::{ccbench, f, have_root_and, lock, out_path, result, run_ok, tempdir};
use serde_json::Value;

/// 50 Mbit/s, 20 ms, a buffer of 8 BDPs (1 MB, 160 ms of queue when full): where drop-tail
/// bloats.
const PATH: [&str; 8] = ["--rate", "50mbit", "--rtt", "20ms", "--buffer", "8bdp", "--seed", "4"];

/// One CUBIC download through `PATH` with `aqm`: result.json.
fn cubic_through(aqm: &str) -> Value {
    let out = out_path(&format!("aqm-{aqm}"));
    let mut args = vec!["--cc", "cubic", "--runs", "1", "--duration", "6s", "--aqm", aqm];
    args.extend_from_slice(&PATH);
    run_ok(&args, &out);
    let v = result(&out);
    let _ = std::fs::remove_dir_all(&out);
    v
}

#[test]
fn pie_halves_cubics_median_rtt_over_an_8_bdp_buffer() {
    let _g = lock();
    if !have_root_and(&[]) {
        return;
    }
    let rtt = |v: &Value| f(&v["runs"][0]["metrics"]["sender_rtt_p50_ms"]);
    let droptail = cubic_through("droptail");
    let pie = cubic_through("pie");
    assert!(rtt(&pie) <= rtt(&droptail) / 2.0, "median RTT: PIE {} ms, drop-tail {} ms", rtt(&pie), rtt(&droptail));
    // PIE steers the queueing delay to its 15 ms target (RFC 8033 section 4.2) by dropping at
    // arrival, and the link stays busy.
    let down = &pie["runs"][0]["path"]["down"];
    assert_eq!(down["config"]["aqm"]["kind"], "pie");
    assert!(f(&down["stats"]["drops_aqm"]) > 0.0, "PIE never dropped");
    assert!(f(&down["queue_delay"]["p50_us"]) < 30_000.0, "PIE's p50 queueing delay {} µs", down["queue_delay"]["p50_us"]);
    assert!(f(&pie["runs"][0]["metrics"]["goodput_bps"]) > 50e6 * 0.85, "goodput {}", pie["runs"][0]["metrics"]["goodput_bps"]);
}

/// Two CUBIC downloads (iperf3 -P 2) and a ping every 100 ms beside them, through `PATH` with
/// `aqm`: the two flows' goodputs and the ping's round trips (ms).
fn two_cubics_and_a_ping(aqm: &str) -> (Vec<f64>, Vec<f64>) {
    let dir = tempdir(&format!("fq-{aqm}"));
    let json = dir.join("iperf3.json");
    let client =
        format!("iperf3 -J -c $CCBENCH_SERVER_ADDR -t 6 -P 2 -R -C cubic > {} & sleep 2; ping -n -c 30 -i 0.1 $CCBENCH_SERVER_ADDR; wait", json.display());
    let mut args = vec!["exec", "--aqm", aqm];
    args.extend_from_slice(&PATH);
    args.extend_from_slice(&["--server-cmd", "iperf3 -s -1", "--", "sh", "-c", &client]);
    let o = ccbench(&args);
    let text = String::from_utf8_lossy(&o.stdout).to_string();
    assert!(o.status.success(), "{aqm}: {text} {}", String::from_utf8_lossy(&o.stderr));
    let ip: Value = serde_json::from_slice(&std::fs::read(&json).expect("iperf3's JSON")).expect("iperf3 wrote JSON");
    let _ = std::fs::remove_dir_all(&dir);
    let goodputs: Vec<f64> = ip["end"]["streams"].as_array().expect("per-stream results").iter().map(|s| f(&s["receiver"]["bits_per_second"])).collect();
    // "64 bytes from 10.77.0.2: icmp_seq=1 ttl=64 time=20.2 ms", one line per reply.
    let mut rtts: Vec<f64> =
        text.lines().filter_map(|l| l.split("time=").nth(1)).filter_map(|t| t.split_whitespace().next()).filter_map(|t| t.parse().ok()).collect();
    rtts.sort_by(f64::total_cmp);
    assert!(rtts.len() >= 25, "{aqm}: only {} of 30 pings answered: {text}", rtts.len());
    (goodputs, rtts)
}

#[test]
fn fq_codel_shares_between_two_cubics_and_keeps_a_ping_fast() {
    let _g = lock();
    if !have_root_and(&["iperf3", "ping"]) {
        return;
    }
    let (goodputs, rtts) = two_cubics_and_a_ping("fq_codel");
    assert_eq!(goodputs.len(), 2);
    let sum: f64 = goodputs.iter().sum();
    let jain = sum * sum / (2.0 * goodputs.iter().map(|x| x * x).sum::<f64>());
    assert!(jain >= 0.98, "Jain's index {jain} of {goodputs:?}");
    assert!(sum > 50e6 * 0.85, "the two flows carried {sum} bit/s of 50 Mbit/s");
    // RFC 8290 section 4.2: the ping's queue is empty whenever it sends, so it is served as a
    // new flow, ahead of the bulk queues: its round trip stays at the path's 20 ms.
    let median = rtts[rtts.len() / 2];
    assert!(median <= 25.0, "ping median {median} ms beside two CUBIC flows under FQ-CoDel: {rtts:?}");
    // The same ping through the same drop-tail buffer waits behind the CUBIC flows' queue.
    let (_, tail) = two_cubics_and_a_ping("droptail");
    let tail_median = tail[tail.len() / 2];
    assert!(tail_median > 70.0, "ping median {tail_median} ms through drop-tail's 8-BDP buffer");
}

#[test]
fn a_bad_aqm_is_one_line_naming_the_flag_the_value_and_what_is_allowed() {
    for (args, line) in [
        (
            &["exec", "--aqm", "red", "--", "true"][..],
            "ccbench: invalid --aqm \"red\": expected droptail, codel[:target=5ms,interval=100ms,ecn=off,ce_threshold=off], pie[",
        ),
        (&["exec", "--aqm-down", "pie:alpha=x", "--", "true"], "ccbench: invalid --aqm-down \"pie:alpha=x\": expected pie[:target=15ms,"),
        (&["exec", "--aqm-up", "fq_codel:flows=0", "--", "true"], "(flows is a whole number from 1 to 65536)"),
    ] {
        common::one_line(&ccbench(args), 2, line);
    }
    let out = out_path("bad-aqm");
    let o = ccbench(&["run", "--aqm", "codel:interval=0", "--out", &out.to_string_lossy()]);
    common::one_line(&o, 2, "--aqm \"codel:interval=0\": expected codel[:target=5ms,interval=100ms,ecn=off,ce_threshold=off] (interval must be above zero)");
    assert!(!out.exists(), "bad input must not create the results directory");
}
