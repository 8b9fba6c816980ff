//! `ccbench probe` and the local twin, end to end: probe an emulated path whose settings we
//! know, check the estimates against them, then check that the twin built from the path file
//! gives the same verdict as the path itself.
//!
//! Needs root; outside CI it skips without it, under `CI=true` it fails instead.

mod common;

use std::path::Path;
use std::process::Output;

use common::{
    ccbench, ccbench_ok, counted_through_serve, exec_with_serve, f, have_root, json, lock, one_line, result, run_ok, secret_file, serve_addr, tempdir, text,
    LiveServe, BIN,
};
use serde_json::Value;

/// The test: on a 30 Mbit/s, 60 ms path with 1 % loss (each direction), probe finds the
/// rate within 10 %, the RTT within 1 ms and the loss within ±0.5 points, in both directions;
/// and `run --path` on the file it writes emulates exactly what it found.
#[test]
fn probe_recovers_a_lossy_30mbit_60ms_path_and_its_path_file_makes_that_path() {
    let _g = lock();
    if !have_root() {
        return;
    }
    let dir = tempdir("twin");
    let file = dir.join("path.toml");
    let path = ["--rate", "30mbit", "--rtt", "60ms", "--loss", "1%"];
    let mut args = vec!["probe", "--emulated", "--seed", "3", "--json", "--out", file.to_str().unwrap()];
    args.extend_from_slice(&path);
    let stdout = ccbench_ok(&args);
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

    // The twin built from the path file is the probed path: one short run on it carries the
    // estimates into its own path, each direction. Whether a twin reaches the real path's
    // verdict, and BBR's goodput on it, is `twin_runs_the_real_path_and_its_twin_side_by_side`'s
    // question (the same probe and twin, through serve); this test ran a second 64 s bbr-vs-cubic
    // experiment for it until CI's time ran short.
    run_ok(&["--cc", "cubic", "--runs", "1", "--duration", "1s", "--seed", "5", "--path", file.to_str().unwrap()], &dir.join("twin"));
    let twin = result(&dir.join("twin"));
    let twin_path = &twin["params"]["path"];
    for d in ["down", "up"] {
        let rate = f(&twin_path[d]["rate"]["bits_per_sec"]);
        assert!((rate / f(&e[d]["rate_bps"]) - 1.0).abs() < 1e-3, "the twin's {d} rate is the probed one: {twin_path}\n{stdout}");
        let loss = f(&twin_path[d]["loss"]["p"]);
        assert!((loss / f(&e[d]["loss"]["fraction"]) - 1.0).abs() < 1e-3, "the twin's {d} loss is the probed one: {twin_path}\n{stdout}");
    }
    assert_eq!(twin["runs"][0]["status"], "complete", "{}", twin["runs"][0]);
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
    let good = secret_file(&dir, "good");
    let good = good.to_str().unwrap();
    for (args, says) in [
        (vec!["probe", "127.0.0.1:7070", "--secret-file", bad_file.to_str().unwrap()], "chmod 600"),
        (vec!["probe", "127.0.0.1:9", "--secret-file", good], "HOST:PORT"),
        (vec!["serve", "--secret-file", good, "--max-probe-rate", "unlimited"], "--max-probe-rate"),
        (vec!["run", "--twin"], "--twin"),
        (vec!["run", "--remote", "127.0.0.1:9", "--secret-file", good, "--twin", "--path", bad_file.to_str().unwrap()], "--path"),
        (vec!["run", "--remote", "127.0.0.1:9", "--secret-file", good, "--twin", "--preset", "website-migration"], "--preset"),
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

// ---- Through `ccbench serve`: `ccbench probe HOST:PORT` and `run --remote … --twin` ----

/// The accuracy test over a real far end: `ccbench serve` in the server namespace
/// behind an emulated 30 Mbit/s, 60 ms path with 1 % loss each way, `ccbench probe HOST:PORT`
/// in the client's. The same bounds as the emulated probe: rate within 10 %, base RTT within
/// 1 ms, loss within ±0.5 points, both directions; serve logs the probe in one line.
#[test]
fn probe_through_serve_recovers_a_lossy_30mbit_60ms_path() {
    let _g = lock();
    if !have_root() {
        return;
    }
    let dir = tempdir("serve");
    let secret = secret_file(&dir, "secret");
    let file = dir.join("path.toml");
    let o = exec_with_serve(
        &["--rate", "30mbit", "--rtt", "60ms", "--loss", "1%", "--seed", "3"],
        &secret,
        "",
        &format!("{BIN} probe $S --secret-file {} --json --out {}", secret.display(), file.display()),
    );
    assert!(o.status.success(), "{}", text(&o));
    let (stdout, stderr) = (String::from_utf8_lossy(&o.stdout), String::from_utf8_lossy(&o.stderr));
    let e: Value = serde_json::from_str(&stdout[stdout.find("\n{").expect("JSON after the summary")..]).unwrap();
    let base_rtt_ms = f(&e["base_rtt_ns"]) / 1e6;
    assert!((base_rtt_ms - 60.0).abs() < 1.0, "base RTT {base_rtt_ms} ms:\n{stdout}");
    for dir in ["down", "up"] {
        let d = &e[dir];
        let rate = f(&d["rate_bps"]);
        assert!((rate / 30e6 - 1.0).abs() < 0.10, "{dir} rate {rate}:\n{stdout}");
        assert_eq!(d["rate_is_lower_bound"], false, "{dir}:\n{stdout}");
        let loss = f(&d["loss"]["fraction"]);
        assert!((loss - 0.01).abs() < 0.005, "{dir} loss {loss}:\n{stdout}");
    }
    let path = std::fs::read_to_string(&file).unwrap();
    assert!(path.contains("ccbench probe` (10.77.0.") && path.lines().any(|l| l.starts_with("rate-down = ")), "{path}");
    // One line per probe, with what it cost the server; the client reports the same figures.
    let logged: Vec<&str> = stderr.lines().filter(|l| l.starts_with("ccbench serve: 10.") && l.contains(" probe (UDP port ")).collect();
    assert_eq!(logged.len(), 1, "{stderr}");
    assert!(logged[0].contains("up to 1000000000 bit/s") && logged[0].contains(" bytes sent, ") && !logged[0].contains("error"), "{}", logged[0]);
    assert!(stdout.contains("The server (ccbench serve at 10.77.0."), "{stdout}");
    std::fs::remove_dir_all(&dir).unwrap();
}

/// Bytes into the emulator each way while `ccbench probe` (with `client_secret`) runs against
/// a serve holding `server_secret`; the probe's output and serve's log.
fn counted_probe(server_secret: &Path, client_secret: &Path, out: &Path, probe_flags: &[&str]) -> (u64, u64, Output, String) {
    let mut client: Vec<std::ffi::OsString> =
        vec!["probe".into(), serve_addr().into(), "--secret-file".into(), client_secret.into(), "--out".into(), out.into()];
    client.extend(probe_flags.iter().map(Into::into));
    let (report, o, log) = counted_through_serve(server_secret, out, &client);
    (report.down.stats.bytes_in, report.up.stats.bytes_in, o, log)
}

/// A probe with another secret than serve's: one line, exit 2, no path file, and the
/// emulator saw only the control handshake (well under 4 kB each way) where the same short
/// probe with the right secret moves megabytes.
#[test]
fn a_wrong_secret_gets_one_line_and_no_probe_traffic() {
    let _g = lock();
    if !have_root() {
        return;
    }
    let dir = tempdir("wrong");
    let (right, wrong) = (secret_file(&dir, "right"), secret_file(&dir, "wrong"));
    // A short probe: the rate search stops at 2 Mbit/s, 200 packets for the loss count.
    let short = ["--max-rate", "2mbit", "--loss-packets", "200"];
    let (down, up, o, log) = counted_probe(&right, &wrong, &dir.join("wrong.toml"), &short);
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    let stderr = String::from_utf8_lossy(&o.stderr);
    assert_eq!(stderr.lines().count(), 1, "{stderr}");
    assert!(stderr.starts_with("ccbench: ") && stderr.contains("secrets differ"), "{stderr}");
    assert!(o.stdout.is_empty() && !dir.join("wrong.toml").exists());
    assert!(!log.contains("probe (UDP port") && log.contains("authentication failed"), "{log}");
    assert!(down < 4_000 && up < 4_000, "bytes into the emulator with a wrong secret: down {down}, up {up}");
    eprintln!("bytes into the emulator, wrong secret: down {down}, up {up}");

    let (down, up, o, log) = counted_probe(&right, &right, &dir.join("right.toml"), &short);
    assert!(o.status.success(), "{}\n{log}", text(&o));
    assert!(dir.join("right.toml").exists() && log.contains("probe (UDP port"), "{log}");
    assert!(down > 500_000 && up > 500_000, "bytes into the emulator with the right secret: down {down}, up {up}");
    eprintln!("bytes into the emulator, right secret (a short probe): down {down}, up {up}");
    std::fs::remove_dir_all(&dir).unwrap();
}

/// `run --remote … --twin` end to end on a path where the answer is clear (50 Mbit/s, 10 ms,
/// 2 % random loss: BBR near the link rate, CUBIC near the Mathis bound): the probe, both
/// experiments run by run in turn, the same verdict on both, BBR's goodput on the twin within
/// 10 % of the real one, and every file of both.
#[test]
fn twin_runs_the_real_path_and_its_twin_side_by_side() {
    let _g = lock();
    if !have_root() {
        return;
    }
    let dir = tempdir("twin-remote");
    let secret = secret_file(&dir, "secret");
    let out = dir.join("out");
    let o = exec_with_serve(
        &["--rate", "50mbit", "--rtt", "10ms", "--loss", "2%", "--seed", "4"],
        &secret,
        "",
        &format!("{BIN} run --remote $S --secret-file {} --twin --cc bbr,cubic --runs 4 --duration 2s --seed 9 --out {}", secret.display(), out.display()),
    );
    assert!(o.status.success(), "{}", text(&o));
    let (stdout, stderr) = (String::from_utf8_lossy(&o.stdout), String::from_utf8_lossy(&o.stderr));
    assert!(stdout.contains("The twin predicts the verdict: bbr better than cubic on both."), "{stdout}");
    assert_eq!(stderr.lines().filter(|l| l.contains(" probe (UDP port ")).count(), 1, "one probe:\n{stderr}");
    assert_eq!(stderr.lines().filter(|l| l.contains(" bulk download 2 s")).count(), 8, "8 real runs:\n{stderr}");

    let (real, twin) = (result(&out), result(&out.join("twin")));
    // The real result is a remote run's, its fields unchanged, and gains `twin`.
    assert!(real["params"]["path"].is_null() && real["params"]["remote"].is_string(), "{}", real["params"]);
    let t = &real["twin"];
    assert_eq!((t["dir"].as_str(), t["path_file"].as_str()), (Some("twin"), Some("twin/path.toml")));
    assert_eq!(t["same_verdict"], true, "{t}");
    assert_eq!((t["verdicts"][0]["real_better"].as_str(), t["verdicts"][0]["twin_better"].as_str()), (Some("bbr"), Some("bbr")), "{t}");
    let rate = f(&t["probe"]["down"]["rate_bps"]);
    assert!((rate / 50e6 - 1.0).abs() < 0.10, "probed rate {rate}");
    let bbr = t["per_cc"].as_array().unwrap().iter().find(|m| m["cc"] == "bbr").unwrap();
    let ratio = f(&bbr["goodput_ratio"]);
    assert!((ratio - 1.0).abs() < 0.10, "bbr goodput twin/real {ratio}: {bbr}");
    assert!(bbr["test"]["outcome"].is_string() && bbr["test"]["n_a"] == 4, "{bbr}");
    // The twin is an emulated run of the probed path, with the same seed.
    let down_rate = f(&twin["params"]["path"]["down"]["rate"]["bits_per_sec"]);
    assert!((down_rate / 50e6 - 1.0).abs() < 0.10, "{}", twin["params"]["path"]);
    assert_eq!(twin["params"]["seed"], real["params"]["seed"]);
    assert!(std::fs::read_to_string(out.join("twin/path.toml")).unwrap().contains("loss-down = "));
    // Run by run in turn: real run i, then twin run i, then real run i + 1.
    let starts = |v: &Value| -> Vec<String> { v["runs"].as_array().unwrap().iter().map(|r| sortable_utc(r["started_at"].as_str().unwrap())).collect() };
    let (rs, ts) = (starts(&real), starts(&twin));
    assert_eq!((rs.len(), ts.len()), (8, 8));
    for i in 0..8 {
        assert!(rs[i] < ts[i] && (i == 7 || ts[i] < rs[i + 1]), "not interleaved at run {i}: real {rs:?}, twin {ts:?}");
    }
    // Side by side: compare's record of the four arms, and its report.
    let c = json(&out.join("compare.json"));
    let arms: Vec<&str> = c["arms"].as_array().unwrap().iter().map(|a| a["label"].as_str().unwrap()).collect();
    assert_eq!(arms, ["real:bbr", "real:cubic", "twin:bbr", "twin:cubic"]);
    let html = std::fs::read_to_string(out.join("report.html")).unwrap();
    assert!(html.contains("twin:cubic") && html.contains("Real path against its twin"), "report.html");
    assert!(out.join("twin/report.html").exists() && out.join("runs.csv").exists() && out.join("twin/runs.csv").exists());
    std::fs::remove_dir_all(&dir).unwrap();
}

/// An RFC 3339 UTC time (`2026-11-24T15:03:05.12Z`) with its fraction padded to nine digits,
/// so that times compare as strings.
fn sortable_utc(t: &str) -> String {
    let t = t.strip_suffix('Z').unwrap_or_else(|| panic!("not UTC: {t}"));
    let (whole, frac) = t.split_once('.').unwrap_or((t, ""));
    format!("{whole}.{frac:0<9}Z")
}

/// A probe session through serve on loopback (no root) keeps to serve's limits: its rate to
/// --max-probe-rate, its bytes to --max-bytes (the train over budget is not sent; the client
/// says which limit stopped it), its time to --max-duration, and it counts against
/// --max-tests-per-minute. Each stop is one line naming the flag; serve logs one line per probe.
#[test]
fn probes_through_serve_keep_to_its_limits() {
    let dir = tempdir("limits");
    let secret = secret_file(&dir, "secret");
    let s = secret.to_str().unwrap();
    let quick = ["--max-rate", "50mbit", "--loss-packets", "200"];
    let probe = |serve: &LiveServe| ccbench(&[&["probe", &serve.addr.to_string(), "--secret-file", s][..], &quick[..]].concat());

    let serve = LiveServe::start(&secret, &["--max-bytes", "300kb", "--max-probe-rate", "5mbit", "--max-tests-per-minute", "1"]);
    // The search's first train (4 Mbit/s for 300 ms, 150 kB) fits; the next (5 Mbit/s, the
    // server's cap) would pass 300 kB and is refused.
    let o = probe(&serve);
    one_line(&o, 1, "over its limit of 300000 bytes per test (--max-bytes)");
    let o = probe(&serve);
    one_line(&o, 2, "--max-tests-per-minute");
    let log = serve.log();
    let probes: Vec<&str> = log.lines().filter(|l| l.contains(" probe (UDP port ")).collect();
    assert_eq!(probes.len(), 1, "{log}");
    assert!(probes[0].contains("up to 5000000 bit/s") && probes[0].contains("trains refused over the limit of 300000 bytes"), "{log}");
    let sent: u64 = probes[0].split(", ").find_map(|p| p.strip_suffix(" bytes sent")).and_then(|n| n.parse().ok()).unwrap();
    assert!(sent <= 300_000, "{log}");
    assert!(log.lines().any(|l| l.contains("probe: refused:") && l.contains("--max-tests-per-minute")), "{log}");
    drop(serve);

    let serve = LiveServe::start(&secret, &["--max-duration", "1s"]);
    let o = probe(&serve);
    one_line(&o, 1, "ended the probe at its limit of 1 s per test (--max-duration)");
    assert!(serve.log().lines().any(|l| l.contains(" probe (UDP port ") && l.contains("stopped at the limit of 1 s per test (--max-duration)")));
    std::fs::remove_dir_all(&dir).unwrap();
}

/// One echo to a probe server with `token`: whether it answered within a second.
fn echo_answered(server: std::net::SocketAddr, token: &[u8; 16]) -> bool {
    use ccbench_pathprobe::wire::{self, Message};
    let socket = std::net::UdpSocket::bind("127.0.0.1:0").unwrap();
    socket.connect(server).unwrap();
    socket.set_read_timeout(Some(std::time::Duration::from_secs(1))).unwrap();
    socket.send(&Message::Echo { seq: 7, sent_ns: 1 }.encode(token)).unwrap();
    let mut buf = [0u8; 2048];
    matches!(socket.recv(&mut buf).map(|n| wire::parse_for(&buf[..n], token)), Ok(Some(Message::EchoReply { seq: 7, .. })))
}

/// The UDP probe server lives only as long as its session: it answers while the client holds
/// the control connection, and is gone (logged, with why) once the client leaves mid-probe.
/// A probe asked for before the handshake is refused, and serve goes on serving.
#[test]
fn a_probe_session_ends_with_its_control_connection() {
    use ccbench_remote::proto::{self, ClientMsg, ServerMsg};
    let dir = tempdir("session");
    let secret_path = secret_file(&dir, "secret");
    let secret = ccbench_remote::Secret::from_file(&secret_path).unwrap();
    let serve = LiveServe::start(&secret_path, &[]);
    let addr = serve.addr;

    let mut client = ccbench_remote::Client::connect(addr, &secret).unwrap();
    let session = client.open_probe(&ccbench_remote::ProbeRequest { max_rate_bps: 4_000_000 }).unwrap();
    assert_eq!(session.limits.max_rate_bps, 4_000_000);
    assert!(echo_answered(session.server, &session.token), "the probe server answers its token");
    let mut wrong = session.token;
    wrong[0] ^= 1;
    assert!(!echo_answered(session.server, &wrong), "nothing for another token");
    drop(client);
    std::thread::sleep(std::time::Duration::from_millis(500));
    assert!(!echo_answered(session.server, &session.token), "the probe server outlived its session");
    let log = serve.log();
    assert!(log.lines().any(|l| l.contains(" probe (UDP port ") && l.contains("error: the client left during the probe")), "{log}");

    // Before the handshake a probe gets nothing: since protocol 4 (issue 18) an unauthenticated
    // peer is told nothing either, the connection just closes (no probe session, no port).
    let mut raw = std::net::TcpStream::connect(addr).unwrap();
    raw.set_read_timeout(Some(std::time::Duration::from_secs(10))).unwrap();
    proto::write_msg(&mut raw, &ClientMsg::Probe { request: ccbench_remote::ProbeRequest { max_rate_bps: 4_000_000 } }).unwrap();
    match proto::read_msg::<ServerMsg>(&mut raw) {
        Err(_) | Ok(ServerMsg::Error { .. }) => {}
        other => panic!("a probe before the handshake must get nothing: {other:?}"),
    }
    ccbench_remote::Client::connect(addr, &secret).expect("serve still serves");
    std::fs::remove_dir_all(&dir).unwrap();
}
