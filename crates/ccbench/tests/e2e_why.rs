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

/// One path of the matrix: `args` set the cause; over the runs of `cc` (weighted by each run's
/// active time, as the why line weighs them) `cause` must dominate, as the why line would name
/// it: more of the time than any other cause and at least half of it; and in every run it must
/// hold at least 40 %. A run may lose some of its share to the host (a loaded machine wakes a
/// slow writer late, and Linux's window validation, RFC 7661, makes an application-limited
/// flow read partly cwnd-limited: the app case read 0.80 here, 0.55 once in CI, where 60 % was
/// asked), but an accounting that named another cause would leave it near zero. Returns the
/// result and its directory (removed by the caller).
fn case(tag: &str, args: &[&str], expect: &[(&str, &str)]) -> (Value, std::path::PathBuf) {
    let out = out_path(tag);
    let printed = run_ok(args, &out);
    let v = result(&out);
    for (cc, cause) in expect {
        let runs: Vec<&Value> = v["runs"].as_array().unwrap().iter().filter(|r| r["cc"] == *cc).collect();
        assert!(!runs.is_empty(), "{tag}: no run of {cc}");
        let (mut weight, mut held) = (0.0, 0.0);
        let mut by_cause: std::collections::BTreeMap<String, f64> = std::collections::BTreeMap::new();
        for run in &runs {
            let share = f(&run["metrics"]["limited_by"][*cause]);
            let (got, top) = dominant(run);
            eprintln!("{tag}: run {} of {cc}: {}", run["index"], run["metrics"]["limited_by"]);
            assert!(
                share >= 0.4,
                "{tag}: run {} of {cc} was {cause}-limited only {share:.2} of the time ({got} {top:.2}): {}",
                run["index"],
                run["metrics"]["limited_by"]
            );
            let active: f64 = run["workload"]["flows"].as_array().unwrap().iter().map(|fl| f(&fl["mechanism"]["active_s"])).sum();
            weight += active;
            held += share * active;
            for (k, v) in run["metrics"]["limited_by"].as_object().unwrap() {
                *by_cause.entry(k.clone()).or_default() += f(v) * active;
            }
            // Every flow's fractions sum to 1.
            for flow in run["workload"]["flows"].as_array().unwrap() {
                let sum: f64 = flow["limited_by"].as_object().unwrap().values().map(f).sum();
                assert!((sum - 1.0).abs() < 1e-6, "{tag}: fractions sum to {sum}: {}", flow["limited_by"]);
            }
        }
        let overall = held / weight;
        let (top, _) = by_cause.iter().max_by(|a, b| a.1.total_cmp(b.1)).unwrap();
        assert!(top == cause && overall >= 0.5, "{tag}: over {} runs {cc} was {cause}-limited {overall:.2} of its active time, {top} the most", runs.len());
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
    // Modelled from the window the receiver advertised (`tcpi_snd_wnd`, Linux 5.4+), shown
    // against the buffer kept: since Linux 6.6 no fixed share of the buffer gives the window.
    let o = ccbench(&["explain", &out.to_string_lossy()]);
    let said = text(&o);
    assert!(
        said.lines().any(|l| l.contains("why  cubic") && l.contains("rwnd/RTT predicts") && l.contains(" kept): bound by the receive window")),
        "rcvbuf: no advertised-window model in the why line:\n{said}"
    );
    let _ = std::fs::remove_dir_all(out);
    // A sending application at 2 Mbit/s on a 100 Mbit/s link. Linux keeps an app-limited
    // flow's window near what it has in flight and restarts it after an idle RTO
    // (tcp_cwnd_validate, RFC 7661; tcp_slow_start_after_idle), so each 16 KB write can meet
    // a full window: standalone runs read app 0.62–0.85 at 10 Mbit/s, 0.76–0.87 at 5, 0.73–0.91
    // at 2 and 0.43–0.91 at 1 (writes further apart than an idle RTO); in this test's sequence
    // 10 and 5 Mbit/s each gave one run of 0.57–0.59.
    let (_, out) = case("app", &with(&["--cc", "cubic", "--runs", "2", "--app-rate", "2mbit"]), &[("cubic", "app")]);
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

    // A mix: one why line per algorithm of the mix (its contender, the label `bbr:1,cubic:1`,
    // is no flow's), and BBR beside a loss-based flow in a deep buffer gets Ware et al.'s model.
    let out = out_path("mix");
    let printed =
        run_ok(&["--rate", "50mbit", "--rtt", "40ms", "--duration", "3s", "--seed", "3", "--flows", "bbr:1,cubic:1", "--buffer", "4bdp", "--runs", "1"], &out);
    let why = |cc: &str| {
        printed.lines().find(|l| l.trim_start().starts_with(&format!("why  {cc} "))).unwrap_or_else(|| panic!("no why line for {cc}:\n{printed}")).to_string()
    };
    assert!(why("bbr").contains("Ware et al. 2019") && !why("bbr").contains("not recorded"), "{printed}");
    assert!(why("cubic").contains("limited"), "{printed}");
    let _ = std::fs::remove_dir_all(out);

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
    // A clean link is one BBRv3 never loses on. In a 1-BDP buffer its STARTUP overshoot drops
    // packets, and the in-flight at that loss becomes `inflight_longterm` (draft-ietf-ccwg-bbr
    // §5.5.10.2), which caps the window in PROBE_BW (§5.3.3.9). On a loaded host the loss can
    // come early and cap the window below the BDP, so the flow is (rightly) cwnd-limited: CI saw
    // 0.61 cwnd. A 3-BDP buffer holds STARTUP's queue (about 1.1 BDP here).
    let (_, out) = case("quic-clean", &with(&["--cc", "quic:bbr3", "--runs", "2", "--buffer", "3bdp"]), &[("quic:bbr3", "pacing")]);
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

/// What the kernel keeps of a socket buffer asked with `force` (`SO_RCVBUFFORCE` or
/// `SO_SNDBUFFORCE`, as ccbench asks as root), read back with `plain`, on a TCP socket of
/// this host: the figure result.json's read-back must equal.
fn kernel_keeps(force: libc::c_int, plain: libc::c_int, bytes: libc::c_int) -> u64 {
    use std::os::fd::AsRawFd;
    let sock = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let fd = sock.as_raw_fd();
    let size = std::mem::size_of::<libc::c_int>() as libc::socklen_t;
    // SAFETY: `bytes` outlives the call and `size` is its size.
    assert_eq!(unsafe { libc::setsockopt(fd, libc::SOL_SOCKET, force, (&bytes as *const libc::c_int).cast(), size) }, 0);
    let (mut got, mut len): (libc::c_int, libc::socklen_t) = (0, size);
    // SAFETY: `got` and `len` outlive the call; `len` is `got`'s size.
    assert_eq!(unsafe { libc::getsockopt(fd, libc::SOL_SOCKET, plain, (&mut got as *mut libc::c_int).cast(), &mut len) }, 0);
    got as u64
}

/// `--rcvbuf` and `--sndbuf` are recorded per flow as asked and as the kernel kept them on
/// the connected sockets (issue 30): doubled for the kernel's bookkeeping (socket(7)), the
/// same figure a socket of this host reads back; no `buffers` where neither was asked.
#[test]
fn socket_buffers_are_read_back_into_each_flows_provenance() {
    let _g = lock();
    if !have_root() {
        return;
    }
    let out = out_path("buffers");
    let args = ["--rate", "50mbit", "--rtt", "20ms", "--duration", "1s", "--cc", "cubic", "--runs", "1", "--flows", "2"];
    run_ok(&[&args[..], &["--rcvbuf", "64kib", "--sndbuf", "96kib"]].concat(), &out);
    let v = result(&out);
    let rcv = kernel_keeps(libc::SO_RCVBUFFORCE, libc::SO_RCVBUF, 65_536);
    let snd = kernel_keeps(libc::SO_SNDBUFFORCE, libc::SO_SNDBUF, 98_304);
    assert_eq!((rcv, snd), (131_072, 196_608), "Linux doubles what it is asked for (socket(7))");
    let flows = v["runs"][0]["workload"]["flows"].as_array().unwrap();
    assert_eq!(flows.len(), 2);
    for flow in flows {
        let b = &flow["buffers"];
        assert_eq!(b["rcvbuf_requested"].as_u64(), Some(65_536), "{b}");
        assert_eq!(b["rcvbuf_effective"].as_u64(), Some(rcv), "{b}");
        assert_eq!(b["sndbuf_requested"].as_u64(), Some(98_304), "{b}");
        assert_eq!(b["sndbuf_effective"].as_u64(), Some(snd), "{b}");
    }
    let _ = std::fs::remove_dir_all(&out);

    // Only the one asked for; none at all without either.
    let out = out_path("buffers-one");
    run_ok(&[&args[..], &["--rcvbuf", "64kib"]].concat(), &out);
    let b = &result(&out)["runs"][0]["workload"]["flows"][0]["buffers"];
    assert_eq!((b["rcvbuf_effective"].as_u64(), b.get("sndbuf_requested"), b.get("sndbuf_effective")), (Some(rcv), None, None), "{b}");
    let _ = std::fs::remove_dir_all(&out);
    let out = out_path("buffers-none");
    run_ok(&args, &out);
    assert!(result(&out)["runs"][0]["workload"]["flows"][0].get("buffers").is_none());
    let _ = std::fs::remove_dir_all(&out);
}
