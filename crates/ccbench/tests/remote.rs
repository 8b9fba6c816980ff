//! `ccbench serve` and `ccbench run --remote`: the real binaries, the far end behind an emulated
//! path (`ccbench exec --server-cmd`), checked against the emulated run of the same path, the
//! emulator's own counters, and garbage thrown at a live serve.
//!
//! Tests with namespaces need root: outside CI they skip without it; under `CI=true` they fail.
//! They run one at a time (a global lock), as throughput tests on two cores would otherwise
//! measure each other. The tests on loopback need no root.

mod common;

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::os::unix::fs::PermissionsExt;
use std::path::Path;
use std::process::{Command, Output};
use std::sync::atomic::AtomicBool;
use std::time::{Duration, Instant};

use ccbench_remote::channel::{self, Channel, PreAuth};
use ccbench_remote::proto::{self, hex, unhex, ClientMsg, ServerMsg};
use ccbench_remote::{Client, RemoteError, Secret, TestRequest};
use ccbench_stats::Summary;
use common::{
    ccbench, counted_through_serve, exec_with_serve, fastest, go_on, have_root_and_tun as have_root, lock, loopback_serve, no_chromium, one_line, result,
    run_ok, secret_file, serve_addr, tcp_series, tempdir, text, BIN,
};
use rand::{Rng, SeedableRng};
use serde_json::Value;

/// `ccbench exec PATH --server-cmd "ccbench serve …" -- sh -c CLIENT`: `$R` in `client` is
/// `ccbench run --remote SERVER:PORT --secret-file CLIENT_SECRET`.
fn exec_remote(path: &[&str], server_secret: &Path, serve_flags: &str, client_secret: &Path, client: &str) -> Output {
    exec_with_serve(path, server_secret, serve_flags, &format!("R=\"{BIN} run --remote $S --secret-file {}\"; {client}", client_secret.display()))
}

/// Each run's goodput of `cc`.
fn goodputs(v: &Value, cc: &str) -> Vec<f64> {
    per_run(v, cc, |r| r["metrics"]["goodput_bps"].as_f64())
}

/// A loss-bound run's goodput times its RTT and √(loss rate), bits: Mathis's constant times the
/// packet size, the same whatever losses the run happened to draw (its goodput is not).
fn loss_response(run: &Value) -> Option<f64> {
    let m = &run["metrics"];
    Some(m["goodput_bps"].as_f64()? * m["sender_rtt_p50_ms"].as_f64()? / 1e3 * m["retrans_rate"].as_f64()?.sqrt())
}

/// Each run's `f(run)` of `cc`.
fn per_run(v: &Value, cc: &str, f: impl Fn(&Value) -> Option<f64>) -> Vec<f64> {
    let xs: Vec<f64> = v["runs"].as_array().unwrap().iter().filter(|r| r["cc"] == cc).map(|r| f(r).unwrap_or_else(|| panic!("no figure in {r}"))).collect();
    assert!(!xs.is_empty(), "no runs of {cc}");
    xs
}

/// The remote mean agrees with the emulated one: within `floor` (relative), or within the
/// Welch interval of the difference of the two means that these very runs allow, whichever is
/// wider; but never wider than `cap`, so a real difference still fails.
///
/// The interval's width is Student's t at 1 − 1/2000 (two-sided: a false failure in ~1 of 1000
/// comparisons) with Welch–Satterthwaite's degrees of freedom, times the standard error of the
/// difference. It was 3 standard errors before, which is 1 in 400 only when the spread is
/// known; estimated from 4 runs a side (~6 degrees of freedom) 3 σ is exceeded 1 time in 40,
/// and CI failed on it (objects CUBIC, +12.4 % against ±10.9 %; the same test on a quiet
/// machine gave −1.9 %). t at 6 degrees of freedom is 5.96; at 14 (8 runs a side), 4.14.
fn assert_means_agree(what: &str, emulated: &[f64], remote: &[f64], floor: f64, cap: f64) {
    use statrs::distribution::{ContinuousCDF, StudentsT};
    let runs = |xs: &[f64]| xs.iter().map(|x| format!("{x:.4e}")).collect::<Vec<_>>().join(" ");
    let (e, r) = (Summary::of(emulated).expect("emulated runs"), Summary::of(remote).expect("remote runs"));
    assert!(e.n >= 2 && r.n >= 2, "{what}: need 2 runs a side for a spread");
    let (me, mr) = (e.mean, r.mean);
    let (ve, vr) = (e.stddev.powi(2) / e.n as f64, r.stddev.powi(2) / r.n as f64);
    let se = (ve + vr).sqrt();
    // Welch–Satterthwaite. With no spread on either side the floor decides; df is then moot.
    let df = if se == 0.0 { 1.0 } else { (ve + vr).powi(2) / (ve * ve / (e.n - 1) as f64 + vr * vr / (r.n - 1) as f64) };
    let t = StudentsT::new(0.0, 1.0, df).expect("degrees of freedom").inverse_cdf(1.0 - 0.0005);
    let tolerance = (t * se / me).clamp(floor, cap);
    let diff = mr / me - 1.0;
    eprintln!(
        "{what}: emulated {:.4e} (runs {}), remote {:.4e} (runs {}): {:+.1} %, allowed ±{:.1} % (t {t:.2} at {df:.1} df)",
        me,
        runs(emulated),
        mr,
        runs(remote),
        diff * 100.0,
        tolerance * 100.0
    );
    assert!(
        diff.abs() < tolerance,
        "{what}: emulated mean {me:.4e}, remote mean {mr:.4e} ({:+.1} %), allowed ±{:.1} % (runs {emulated:?} against {remote:?})",
        diff * 100.0,
        tolerance * 100.0
    );
}

/// The same experiment over the same emulated path, once with both ends in ccbench (emulated)
/// and once with the far end in `ccbench serve` behind that path (remote): the same verdict;
/// BBR's mean goodput, and CUBIC's response to its losses (below), within 10 % (or the Welch
/// interval of the runs' own spread, at most 20 %).
///
/// The path (50 Mbit/s, 10 ms, 2 % random loss) makes the verdict clear: BBR keeps near the
/// link rate, CUBIC is held near the Mathis bound, 1.22·MSS/(RTT·√p) ≈ 10 Mbit/s. Measured, an
/// 8 s CUBIC run's goodput varies by ~6.5 % (sd) from run to run. Runs are 3 s (this test was
/// CI's longest, 4.4 min at 8 s, 2.6 min at 5 s): ~11 % a run if the spread goes as
/// 1/√duration, 8 % for the Mathis constant. 8 runs a side (6 for one CI run, which failed on
/// CUBIC's goodput at +27 %; its constant was not compared then): the difference of two means
/// has a standard error near 4 % and the Welch tolerance of `assert_means_agree` is ~17 %.
/// (With 4 runs and a 3 σ rule CI failed on it once, at -11 %: one remote run had started
/// 1.6 s late, a lost `Start`, which a window opened at the first byte no longer counts.)
#[test]
fn remote_gives_the_same_verdict_and_goodput_as_emulated() {
    let _g = lock();
    if !have_root() {
        return;
    }
    let dir = tempdir("equal");
    let secret = secret_file(&dir, "secret");
    let path = ["--rate", "50mbit", "--rtt", "10ms", "--loss", "2%"];
    let common = "--cc bbr,cubic --runs 8 --duration 3s";
    let emulated_out = dir.join("emulated");
    run_ok(&[&path[..], &common.split(' ').collect::<Vec<_>>()].concat(), &emulated_out);
    let remote_out = dir.join("remote");
    let o = exec_remote(&path, &secret, "", &secret, &format!("$R {common} --out {}", remote_out.display()));
    assert!(o.status.success(), "{}", text(&o));
    let stderr = String::from_utf8_lossy(&o.stderr);
    assert_eq!(stderr.lines().filter(|l| l.contains("ccbench serve: 10.") && l.contains("bulk download 3 s")).count(), 16, "one log line per test:\n{stderr}");

    let (e, r) = (result(&emulated_out), result(&remote_out));
    for v in [&e, &r] {
        let c = &v["comparisons"][0];
        assert_eq!((c["a"].as_str(), c["better"].as_str(), c["significant"].as_bool()), (Some("bbr"), Some("bbr"), Some(true)), "{c}");
    }
    assert_means_agree("bbr goodput", &goodputs(&e, "bbr"), &goodputs(&r, "bbr"), 0.10, 0.20);
    // CUBIC's goodput here is set by how many packets the 2 % loss happened to take: a 3 s run
    // loses ~44, so that count alone varies by ~15 % and the goodput by ~7.5 % (1/√p). Its
    // response to the losses each run had is what remote must reproduce: Mathis's constant,
    // goodput · RTT · √p / MSS, per run (measured: spread 8 % against the goodput's 11 %; means
    // 1.13 emulated, 1.09 remote, where the goodputs differed by −9 % and CI once saw +27 %).
    let mathis = |v: &Value| {
        per_run(v, "cubic", |r| {
            let mss = r["workload"]["flows"][0]["final_tcp_info"]["snd_mss"].as_f64()?;
            Some(loss_response(r)? / (mss * 8.0))
        })
    };
    let (ce, cr) = (mathis(&e), mathis(&r));
    for c in ce.iter().chain(&cr) {
        // The Mathis bound's constant is √(3/2) = 1.22 with an ACK per packet, √(3/4) = 0.87
        // with one per two; measured here 1.0–1.3. Far outside, CUBIC was not loss-bound.
        assert!((0.6..1.8).contains(c), "CUBIC's Mathis constant {c:.2} (emulated {ce:.2?}, remote {cr:.2?})");
    }
    assert_means_agree("cubic Mathis constant", &ce, &cr, 0.10, 0.20);
    // The remote run: its own record of the far host, no emulator figures (absent, not 0),
    // and the far end's sockets sampled (BBR's state comes from the server's kernel).
    assert_eq!(r["params"]["path"], Value::Null);
    assert!(r["provenance"]["emulator"].is_null());
    let facts = &r["provenance"]["remote"];
    assert!(facts["congestion_controls"].as_array().unwrap().iter().any(|c| c == "bbr"), "{facts}");
    assert!(facts["kernel_release"].is_string() && facts["control_rtt_us_at_start"].as_u64().unwrap() >= 9_000, "{facts}");
    for run in r["runs"].as_array().unwrap() {
        assert_eq!(run["workload"]["flows"][0]["cc_read_back"], run["cc"]);
        assert!(run["metrics"]["drops_loss"].is_null() && run["metrics"]["queue_delay_p50_ms"].is_null(), "{}", run["metrics"]);
        assert!(run["series"]["link_down"].is_null());
        let rows = tcp_series(&remote_out, run);
        let samples = rows.lines().filter(|l| l.starts_with("flow-0,")).count();
        // 10 ms sampling over 3 s: ~300 samples; a loose floor.
        assert!(samples > 150, "{} samples of the server's socket", samples);
        if run["cc"] == "bbr" {
            assert!(
                rows.contains(",probe_bw,") || rows.contains(",ProbeBw,") || rows.lines().skip(1).any(|l| l.split(',').nth(17).is_some_and(|m| !m.is_empty())),
                "no BBR state in the server's samples"
            );
        }
        let rtt = run["metrics"]["sender_rtt_p50_ms"].as_f64().unwrap();
        assert!(rtt >= 10.0, "the sender's RTT ({rtt} ms) cannot be below the path's 10 ms");
    }
    let _ = std::fs::remove_dir_all(&dir);
}

/// The emulator's bytes out, each direction, of a session between `ccbench serve` (with
/// `server_secret`) and `client` (a `ccbench run --remote` with `client_secret`), and the
/// client's output.
fn counted_session(server_secret: &Path, client_secret: &Path, out: &Path) -> (u64, u64, Output) {
    let client: Vec<std::ffi::OsString> = [
        "run",
        "--remote",
        &serve_addr(),
        "--secret-file",
        &client_secret.to_string_lossy(),
        "--cc",
        "cubic",
        "--runs",
        "1",
        "--duration",
        "2s",
        "--out",
        &out.to_string_lossy(),
    ]
    .iter()
    .map(Into::into)
    .collect();
    let (report, mut o, log) = counted_through_serve(server_secret, out, &client);
    o.stderr.extend(log.bytes());
    (report.down.stats.bytes_out, report.up.stats.bytes_out, o)
}

/// A client with another secret is refused with one clear line, exit 2; the emulator saw only
/// the handshake cross the path (a few hundred bytes each way), where the same session with the
/// right secret moves megabytes.
#[test]
fn a_wrong_secret_is_refused_and_no_test_traffic_flows() {
    let _g = lock();
    if !have_root() {
        return;
    }
    let dir = tempdir("secret");
    let (right, wrong) = (secret_file(&dir, "right"), secret_file(&dir, "wrong"));
    let (down, up, o) = counted_session(&right, &wrong, &dir.join("out-wrong"));
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    let stderr = String::from_utf8_lossy(&o.stderr);
    let client_lines: Vec<&str> = stderr.lines().filter(|l| l.starts_with("ccbench: ")).collect();
    assert_eq!(client_lines.len(), 1, "{stderr}");
    assert!(client_lines[0].contains("secrets differ"), "{stderr}");
    assert!(!dir.join("out-wrong").join("result.json").exists(), "nothing ran");
    // The TCP handshake, the hello, the challenge and the teardown: well under 4 kB each way.
    assert!(down < 4_000 && up < 4_000, "bytes through the emulator with a wrong secret: down {down}, up {up}");

    let (down, _, o) = counted_session(&right, &right, &dir.join("out-right"));
    assert!(o.status.success(), "{}", text(&o));
    // 2 s at 20 Mbit/s is 5 MB: the counters do count a test.
    assert!(down > 2_000_000, "bytes down with the right secret: {down}");
    let _ = std::fs::remove_dir_all(&dir);
}

/// Every limit of serve, exceeded, is refused with one line naming it; the tests within the
/// limits run, and the server logs one line per test.
#[test]
fn limits_are_refused_with_a_clear_error() {
    let _g = lock();
    if !have_root() {
        return;
    }
    let dir = tempdir("limits");
    let secret = secret_file(&dir, "secret");
    let d = dir.display();
    let path = ["--rate", "20mbit", "--rtt", "10ms"];
    let bytes_and_time = format!(
        "$R --cc cubic --runs 1 --duration 9s --out {d}/a; echo duration=$?; \
         $R --cc cubic --runs 1 --workload file --size 2mb --out {d}/b; echo bytes=$?; \
         $R --cc cubic --runs 1 --duration 2s --out {d}/budget; echo budget=$?; \
         $R --cc cubic --runs 1 --duration 1s --rcvbuf 64kib --out {d}/buf; echo rcvbuf=$?"
    );
    let o1 = exec_remote(&path, &secret, "--max-duration 8s --max-bytes 1mb", &secret, &bytes_and_time);
    // The first test holds the only client slot while the second tries; then two more tests
    // within the minute, the second of them one too many.
    let clients_and_rate = format!(
        "$R --cc cubic --runs 1 --duration 6s --out {d}/long & sleep 3; \
         $R --cc cubic --runs 1 --duration 1s --out {d}/c; echo clients=$?; wait; \
         $R --cc cubic --runs 1 --duration 1s --out {d}/second; echo second=$?; \
         $R --cc cubic --runs 1 --duration 1s --out {d}/rate; echo rate=$?"
    );
    let o2 = exec_remote(&path, &secret, "--max-clients 1 --max-tests-per-minute 2", &secret, &clients_and_rate);
    let o = Output { status: o2.status, stdout: [o1.stdout, o2.stdout].concat(), stderr: [o1.stderr, o2.stderr].concat() };
    let (stdout, stderr) = (String::from_utf8_lossy(&o.stdout), String::from_utf8_lossy(&o.stderr));
    let all = text(&o);
    // Socket buffer sizes are not carried to serve: refused, not silently dropped.
    for (marker, limit) in [("duration=2", "--max-duration"), ("bytes=2", "--max-bytes"), ("clients=2", "--max-clients"), ("rcvbuf=2", "--rcvbuf")] {
        assert!(stdout.contains(marker), "{marker}: {all}");
        assert!(stderr.lines().any(|l| l.starts_with("ccbench: ") && l.contains(limit)), "no one-line refusal naming {limit}: {all}");
    }
    assert!(
        stderr.contains("limit of 8 s per test (--max-duration)") && stderr.contains("2000000 bytes in all is over this server's limit of 1000000"),
        "{all}"
    );
    // A timed test runs but is stopped by the byte budget, and says so.
    let budget = result(&dir.join("budget"));
    let err = budget["runs"][0]["error"].as_str().unwrap_or_default();
    assert!(err.contains("--max-bytes"), "{budget}");
    assert!(budget["runs"][0]["workload"]["flows"][0]["bytes_received"].as_u64().unwrap() <= 1_000_000);
    // The third test within a minute: refused by the server when it asks to run.
    assert!(stdout.contains("rate=1"), "{all}");
    let rate = result(&dir.join("rate"));
    assert!(rate["runs"][0]["error"].as_str().unwrap_or_default().contains("--max-tests-per-minute"), "{rate}");
    let tests_logged = stderr.lines().filter(|l| l.starts_with("ccbench serve: 10.") && l.contains(" bytes")).count();
    assert!(stdout.contains("second=0"), "{all}");
    assert_eq!(tests_logged, 3, "the budget, the long and the second test ran, each logged once: {all}");
    let _ = std::fs::remove_dir_all(&dir);
}

/// An algorithm the server lacks is refused before anything runs, listing what it has.
#[test]
fn an_algorithm_the_server_lacks_is_refused_before_anything_runs() {
    let _g = lock();
    if !have_root() {
        return;
    }
    let dir = tempdir("algo");
    let secret = secret_file(&dir, "secret");
    let o = exec_remote(&["--rtt", "2ms"], &secret, "", &secret, &format!("$R --cc bbr,vegas9 --runs 4 --out {}/x", dir.display()));
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    let stderr = String::from_utf8_lossy(&o.stderr);
    let line = stderr.lines().find(|l| l.starts_with("ccbench: ")).unwrap_or_default();
    assert!(line.contains("--cc") && line.contains("vegas9") && line.contains("remote ccbench serve has:") && line.contains("cubic"), "{stderr}");
    assert!(!stderr.contains("ccbench serve: 10.77.0.1"), "no test ran: {stderr}");
    let _ = std::fs::remove_dir_all(&dir);
}

/// Issue 20 §2: transport-qualified kernel names (`tcp:cubic`) run over `--remote` both ways,
/// as a new user would write them. An upload once handed `tcp:cubic` to the client's kernel;
/// a download was refused by serve, which checked it against its kernel's plain names.
#[test]
fn transport_qualified_kernel_names_run_over_remote_both_ways() {
    let _g = lock();
    if !have_root() {
        return;
    }
    let dir = tempdir("tcpnames");
    let secret = secret_file(&dir, "secret");
    let d = dir.display();
    let client = format!(
        "$R --cc tcp:cubic,tcp:reno --direction upload --duration 1s --runs 4 --out {d}/up && $R --cc tcp:cubic,tcp:reno --direction download --duration 1s --runs 4 --out {d}/down"
    );
    let o = exec_remote(&["--rate", "50mbit", "--rtt", "2ms"], &secret, "", &secret, &client);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    for way in ["up", "down"] {
        let v = result(&dir.join(way));
        let runs = v["runs"].as_array().unwrap();
        assert_eq!(runs.len(), 8, "{way}");
        for r in runs {
            assert_eq!(r["status"], "complete", "{way}: {r}");
            // Named as written, and read back from the sending socket written the same way.
            let cc = r["cc"].as_str().unwrap();
            assert!(cc == "tcp:cubic" || cc == "tcp:reno", "{way}: {cc}");
            assert_eq!(r["workload"]["flows"][0]["cc_read_back"], cc, "{way}: {r}");
        }
    }
    let _ = std::fs::remove_dir_all(&dir);
}

fn one_line_exit_2(o: &Output, needle: &str) {
    one_line(o, 2, needle)
}

/// Bad secret files and flag combinations: one line naming the flag, exit 2, nothing started.
#[test]
fn secret_file_problems_exit_2_with_one_line() {
    let dir = tempdir("files");
    let missing = dir.join("missing").display().to_string();
    one_line_exit_2(&ccbench(&["run", "--remote", "127.0.0.1:9", "--secret-file", &missing]), "--secret-file");
    one_line_exit_2(&ccbench(&["serve", "--secret-file", &missing]), "--secret-file");
    one_line_exit_2(&ccbench(&["serve"]), "--secret-file");
    one_line_exit_2(&ccbench(&["run", "--remote", "127.0.0.1:9"]), "--secret-file");
    let open = secret_file(&dir, "open");
    std::fs::set_permissions(&open, std::fs::Permissions::from_mode(0o644)).unwrap();
    let open_s = open.display().to_string();
    one_line_exit_2(&ccbench(&["serve", "--secret-file", &open_s]), "chmod 600");
    let empty = dir.join("empty");
    std::fs::write(&empty, "\n").unwrap();
    std::fs::set_permissions(&empty, std::fs::Permissions::from_mode(0o600)).unwrap();
    one_line_exit_2(&ccbench(&["serve", "--secret-file", &empty.display().to_string()]), "at least 128");
    let good = secret_file(&dir, "good").display().to_string();
    one_line_exit_2(&ccbench(&["run", "--secret-file", &good]), "--remote");
    one_line_exit_2(&ccbench(&["run", "--remote", "127.0.0.1:9", "--secret-file", &good, "--rate", "10mbit"]), "emulated-path flags");
    one_line_exit_2(&ccbench(&["run", "--remote", "no-port", "--secret-file", &good]), "HOST:PORT");
    one_line_exit_2(&ccbench(&["serve", "--secret-file", &good, "--listen", "localhost"]), "--listen");
    one_line_exit_2(&ccbench(&["serve", "--secret-file", &good, "--max-clients", "0"]), "--max-clients");
    for bad in ["0s", "500ms", "61min", "forever"] {
        one_line_exit_2(&ccbench(&["serve", "--secret-file", &good, "--idle-timeout", bad]), "--idle-timeout");
    }
    // Nothing listens at port 9 of loopback: the run refuses to start, naming --remote.
    one_line_exit_2(&ccbench(&["run", "--remote", "127.0.0.1:9", "--secret-file", &good]), "--remote");
    let _ = std::fs::remove_dir_all(&dir);
}

fn frame(body: &[u8]) -> Vec<u8> {
    let mut f = (body.len() as u32).to_be_bytes().to_vec();
    f.extend_from_slice(body);
    f
}

/// Sends `bytes` on a fresh connection and reads whatever comes back until the server closes
/// (or 3 s pass): what an attacker gets for them.
fn throw(addr: SocketAddr, bytes: &[u8]) -> Vec<u8> {
    throw_from([127, 0, 0, 1], addr, bytes)
}

/// As [`throw`], from `source` (a loopback address): serve's penalties count failures per /24.
fn throw_from(source: [u8; 4], addr: SocketAddr, bytes: &[u8]) -> Vec<u8> {
    let mut s = connect_from(source, addr).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(3))).unwrap();
    let _ = s.write_all(bytes);
    let _ = s.shutdown(std::net::Shutdown::Write);
    let mut back = Vec::new();
    let _ = s.read_to_end(&mut back);
    back
}

/// Garbage, truncated, oversized and out-of-order control input thrown at a live serve: every
/// input gets at most an error frame, serve never dies, never sends data to a connection
/// without the test's token, drops a silent client, and still serves an honest client after.
#[test]
fn a_live_serve_survives_fuzzed_control_input() {
    // Its tests ask for cubic, which only root may set where it is not in the allowed list.
    if !have_root() {
        return;
    }
    let (dir, _, secret, mut serve) = loopback_serve("fuzz", &["--max-clients", "64", "--max-tests-per-minute", "1000"]);
    let addr = serve.addr;
    // A client that never speaks: it must not hold its slot past the handshake timeout.
    let mut silent = TcpStream::connect(addr).unwrap();
    let silent_since = Instant::now();

    let mut rng = rand::rngs::StdRng::seed_from_u64(0xcc_be4c);
    let hello = channel::hello_frame(&secret);
    let mut inputs = 0;
    const N: usize = 600;
    for i in 0..N {
        let input: Vec<u8> = match i % 6 {
            0 => (0..rng.gen_range(1..300)).map(|_| rng.gen()).collect(),
            1 => (rng.gen_range(65_537u32..=u32::MAX)).to_be_bytes().to_vec(),
            2 => {
                let mut h = hello.clone();
                h.truncate(rng.gen_range(1..h.len()));
                h
            }
            3 => {
                let mut h = hello.clone();
                let at = rng.gen_range(4..h.len());
                h[at] = rng.gen();
                h
            }
            4 => [hello.clone(), frame(br#"{"type":"run","test":{"kind":"bulk"}}"#)].concat(),
            _ => frame(br#"{"type":"hello","version":99,"nonce":""}"#),
        };
        // From 200 networks, as a real fuzzing crowd would come: serve penalises a network's
        // failures (issue 27 §4), and the honest client below shares none of them.
        let back = throw_from([127, 20 + (i % 200) as u8, 0, 1], addr, &input);
        // Nothing but plain frames comes back, each a challenge or an error, never a Welcome
        // (which only a sealed record could carry).
        for m in proto::decode_frames::<PreAuth>(&back) {
            match m {
                Ok(PreAuth::Challenge { .. }) | Ok(PreAuth::Error { .. }) => {}
                other => panic!("input {i} got {other:?}"),
            }
        }
        inputs += 1;
        if i % 100 == 0 {
            assert!(serve.alive(), "serve died after input {i}");
        }
    }
    assert_eq!(inputs, N);
    assert!(serve.alive());

    // An honest client: an algorithm this host lacks is refused by the server itself.
    let mut client = Client::connect(addr, &secret).unwrap();
    let spec = |cc: &str| ccbench_workload::BulkSpec {
        flows: 1,
        direction: ccbench_workload::Direction::Download,
        amount: ccbench_workload::Amount::Seconds(1.0),
        cc: cc.parse().unwrap(),
        mix: Vec::new(),
        port: 0,
        sample_interval_us: 10_000,
        timeout_s: 10.0,
        quic_receiver_cc: None,
        knobs: Default::default(),
    };
    match client.check(&TestRequest::Bulk(spec("vegas9"))) {
        Err(RemoteError::Refused(r)) => assert!(r.contains("no congestion control \"vegas9\"") && r.contains("cubic"), "{r}"),
        other => panic!("{other:?}"),
    }
    // A test over loopback runs, with the server's samples merged in.
    let series = ccbench_workload::MemorySeries::default();
    let stop = AtomicBool::new(false);
    let r = client.run(&spec("cubic"), Instant::now(), &stop, &series).unwrap();
    assert!(r.flows[0].bytes_received > 1_000_000 && r.flows[0].sending.cc_read_back == "cubic", "{r:?}");
    assert!(series.samples(ccbench_workload::SocketId::Flow(0)).len() > 20, "the server's samples came back");

    // A data connection with a wrong token gets nothing, not one byte.
    let c = session(addr, &secret);
    c.send(&ClientMsg::Run { test: TestRequest::Bulk(spec("cubic")) }).unwrap();
    let ServerMsg::Ready { port, token, .. } = c.recv::<ServerMsg>().unwrap() else { panic!("no ready") };
    let mut wrong = unhex::<16>(&token).unwrap();
    wrong[0] ^= 1;
    let mut data = TcpStream::connect((addr.ip(), port)).unwrap();
    data.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
    data.write_all(&[&wrong[..], &0u32.to_be_bytes()].concat()).unwrap();
    let mut got = Vec::new();
    let _ = data.read_to_end(&mut got);
    assert!(got.is_empty(), "{} bytes sent to a connection with a wrong token", got.len());
    // The test that never got its connection is given up, with an error, and serve goes on.
    c.stream().set_read_timeout(Some(Duration::from_secs(20))).unwrap();
    match c.recv::<ServerMsg>() {
        Ok(ServerMsg::Error { message }) => assert!(message.contains("data connections arrived"), "{message}"),
        other => panic!("{other:?}"),
    }

    // The silent client was dropped at the handshake deadline (5 s), sent nothing.
    silent.set_read_timeout(Some(Duration::from_secs(20))).unwrap();
    let before_read = silent_since.elapsed();
    let mut back = Vec::new();
    let _ = silent.read_to_end(&mut back);
    // Closed by 8 s after it connected (5 s and a margin), or already closed when read.
    let by = before_read.max(Duration::from_secs(8)) + Duration::from_secs(1);
    assert!(silent_since.elapsed() < by, "a silent client held on for {:?}", silent_since.elapsed());
    assert!(back.is_empty(), "{back:?}");
    assert!(serve.alive());
    Client::connect(addr, &secret).expect("still serving");
    eprintln!("{inputs} fuzzed control inputs thrown at a live serve");
    let _ = std::fs::remove_dir_all(&dir);
}

/// An authenticated session by hand: the channel, its `Welcome` read.
fn session(addr: SocketAddr, secret: &Secret) -> Channel {
    let c = Channel::connect(TcpStream::connect(addr).unwrap(), secret, Instant::now() + Duration::from_secs(10)).unwrap();
    c.stream().set_read_timeout(Some(Duration::from_secs(20))).unwrap();
    assert!(matches!(c.recv::<ServerMsg>().unwrap(), ServerMsg::Welcome { .. }));
    c
}

/// `ccbench run PATH ARGS --out OUT` on the emulated path, then the same through serve behind
/// that path; both results.
fn emulated_and_remote(dir: &Path, path: &[&str], args: &str) -> (Value, Value, ServeLog) {
    let secret = secret_file(dir, "secret");
    let emulated_out = dir.join("emulated");
    run_ok(&[path, &args.split(' ').collect::<Vec<_>>()].concat(), &emulated_out);
    let remote_out = dir.join("remote");
    let o = exec_remote(path, &secret, "", &secret, &format!("$R {args} --out {}", remote_out.display()));
    assert!(o.status.success(), "{}", text(&o));
    (result(&emulated_out), result(&remote_out), ServeLog(String::from_utf8_lossy(&o.stderr).into_owned()))
}

/// What `ccbench exec` wrote to stderr: serve's log (one line per test, and every data
/// connection its gate closed before admission) and the client's. Printed when the test fails,
/// so a failure over `--remote` comes with the far end's side of it.
struct ServeLog(String);

impl ServeLog {
    fn print(&self, why: &str) {
        eprintln!("--- serve's log and the client's stderr ({why}) ---\n{}--- end ---", self.0);
    }
}

impl Drop for ServeLog {
    fn drop(&mut self) {
        if std::thread::panicking() {
            self.print("the test failed");
        }
    }
}

fn same_verdict(e: &Value, r: &Value, winner: &str) {
    for v in [e, r] {
        let c = &v["comparisons"][0];
        assert_eq!((c["better"].as_str(), c["significant"].as_bool()), (Some(winner), Some(true)), "{c}");
    }
}

/// The rows of a run's `tcp.csv.gz` whose socket starts with `prefix`.
fn series_rows(out: &Path, run: &Value, prefix: &str) -> usize {
    tcp_series(out, run).lines().filter(|l| l.starts_with(prefix)).count()
}

/// Objects (GET, so the server's sockets send) through serve behind an emulated path give the
/// verdict of the emulated run, with each algorithm's mean content throughput within 10 % (or
/// the Welch interval of the runs' own spread, at most 20 %: see `assert_means_agree`).
///
/// 50 Mbit/s, 10 ms, 2 % loss: BBR fills the link, CUBIC is held near its Mathis bound (the
/// emulated run measured 3× apart). 8 objects of 1 MB on 2 connections: a CUBIC run moves
/// 8 MB in ~5 s with ~100 losses, so its throughput varies by several % between runs; the mean
/// of 4 by ~4.5 %, the difference of two means by ~6 %: 10 % is ~1.6 σ when the machine is
/// quiet, and the runs' own spread widens it up to 20 % (3.3 σ). (16, then 12 objects until
/// CI's time ran short.)
#[test]
fn objects_over_remote_give_the_same_verdict_and_throughput_as_emulated() {
    let _g = lock();
    if !have_root() {
        return;
    }
    let dir = tempdir("objects");
    let path = ["--rate", "50mbit", "--rtt", "10ms", "--loss", "2%"];
    let (e, r, serve_log) = emulated_and_remote(&dir, &path, "--workload objects --method get --requests 8 --size 1mb --concurrency 2 --cc bbr,cubic --runs 4");
    same_verdict(&e, &r, "bbr");
    for cc in ["bbr", "cubic"] {
        let tput = |v: &Value| per_run(v, cc, |run| run["workload"]["content_throughput_bps"].as_f64());
        assert_means_agree(&format!("objects {cc} content throughput"), &tput(&e), &tput(&r), 0.10, 0.20);
    }
    for run in r["runs"].as_array().unwrap() {
        let w = &run["workload"];
        assert_eq!((w["requests_completed"].as_u64(), w["errors"].as_u64(), w["server_connections"].as_u64()), (Some(8), Some(0), Some(2)), "{w}");
        // A connection that broke before its first request is replaced by the client (counted
        // in client_connections) and carried nothing: no socket of the server's sent on it, so
        // there is nothing to read back. Seen once in CI in 8 runs × 2 connections; every
        // connection that carried data must show the server's sending socket.
        let conns = w["connections"].as_array().unwrap();
        let (used, unused): (Vec<&Value>, Vec<&Value>) = conns.iter().partition(|c| c["requests_completed"].as_u64() > Some(0));
        for c in &unused {
            eprintln!("a connection replaced before its first request: {c}");
            assert_eq!(c["content_bytes"].as_u64(), Some(0), "{c}");
        }
        if !unused.is_empty() {
            serve_log.print("a connection was replaced");
        }
        assert_eq!(w["client_connections"].as_u64(), Some(conns.len() as u64), "{w}");
        assert_eq!(used.len(), 2, "two connections carried the requests: {w}");
        assert_eq!(used.iter().map(|c| c["requests_completed"].as_u64().unwrap()).sum::<u64>(), 8, "{w}");
        for c in used {
            assert_eq!(c["cc_read_back"], run["cc"], "the server's socket read back: {c}");
            assert!(c["final_tcp_info"]["rtt_us"].as_u64().unwrap() >= 10_000, "{c}");
        }
        // The server's sending sockets, sampled every 10 ms and named by this end's ports.
        assert!(series_rows(&dir.join("remote"), run, "conn-") > 100, "too few samples of the server's sockets");
    }
    assert_eq!(r["provenance"]["remote"]["serving_qdisc"].as_str().map(|q| !q.is_empty()), Some(true), "{}", r["provenance"]["remote"]);
    let _ = std::fs::remove_dir_all(&dir);
}

/// A page (HTTP/1.1 and h2c) loads through serve behind an emulated path: every resource, the
/// server's sockets running the algorithm asked for, and load times near the emulated run's.
/// A page load is a few round trips plus CPU time on a shared 2-core machine, so the remote
/// mean is held to within 25 % of the emulated one (not 10 %), or the wider interval these runs'
/// spread allows, at most 40 %. On an idle machine remote is 6–14 % slower: serve answers each
/// request about 1.2 ms later (26.6 ms from request to first byte against 25.4 ms), 87 requests
/// on 6 connections, and an occasional stall of a few hundred ms falls on either side.
#[test]
fn a_page_loads_over_remote_as_over_the_emulated_path() {
    let _g = lock();
    if !have_root() {
        return;
    }
    let dir = tempdir("page");
    let path = ["--rate", "20mbit", "--rtt", "20ms"];
    let (e, r, _serve_log) = emulated_and_remote(&dir, &path, "--workload page --page news --cc cubic --runs 3");
    let loads = |v: &Value| per_run(v, "cubic", |run| run["workload"]["page_load_s"].as_f64());
    assert_means_agree("page news load time", &loads(&e), &loads(&r), 0.25, 0.40);
    for run in r["runs"].as_array().unwrap() {
        let w = &run["workload"];
        assert_eq!(w["requests_completed"], w["requests_total"], "{w}");
        // TCP's handshake, the HTML request and the objects: at least 3 round trips of 20 ms.
        assert!(w["page_load_s"].as_f64().unwrap() >= 0.060, "{w}");
        for c in w["connections"].as_array().unwrap() {
            assert_eq!(c["cc_read_back"], "cubic", "{c}");
        }
        assert!(series_rows(&dir.join("remote"), run, "conn-") > 6, "no samples of the server's sockets");
    }
    let secret = dir.join("secret");
    let h2 = dir.join("h2");
    let o = exec_remote(&path, &secret, "", &secret, &format!("$R --workload page --page small --http 2 --cc bbr --runs 1 --out {}", h2.display()));
    assert!(o.status.success(), "{}", text(&o));
    let w = &result(&h2)["runs"][0]["workload"];
    assert_eq!((w["requests_completed"].as_u64(), w["connections_used"].as_u64()), (Some(21), Some(1)), "{w}");
    assert_eq!(w["connections"][0]["cc_read_back"], "bbr");
    let _ = std::fs::remove_dir_all(&dir);
}

fn have_chromium() -> bool {
    go_on(no_chromium())
}

/// One browser load: through serve behind a `rtt` path (`remote`), or on the emulated path.
/// Returns its run.
fn browser_load(dir: &Path, tag: &str, remote: bool, rtt: &str, page: &str, http: &str) -> Value {
    let out = dir.join(tag);
    let args = format!("--workload browser --page {page} --http {http} --cc cubic --runs 1 --out {}", out.display());
    let path = ["--rate", "100mbit", "--rtt", rtt];
    let o = if remote {
        let secret = dir.join("secret");
        exec_remote(&path, &secret, "", &secret, &format!("$R {args}"))
    } else {
        Command::new(BIN).arg("run").args(path).args(args.split(' ')).output().unwrap()
    };
    assert!(o.status.success(), "{}", text(&o));
    if remote {
        let log = String::from_utf8_lossy(&o.stderr);
        assert_eq!(log.lines().filter(|l| l.contains("ccbench serve: 10.") && l.contains(" browser page of ")).count(), 1, "one log line per test:\n{log}");
    }
    let run = result(&out)["runs"][0].clone();
    assert!(run["error"].is_null(), "{run}");
    if remote {
        check_remote_browser_run(&out, &run, http);
    }
    let _ = std::fs::remove_dir_all(&out);
    run
}

/// What a remote browser run must show: the browser's own timing of a complete load, and the
/// server's sockets running the algorithm asked for (read back there), sampled, and counting
/// every request the browser made.
fn check_remote_browser_run(out: &Path, run: &Value, http: &str) {
    let (w, b) = (&run["workload"]["page"], &run["workload"]["browser"]);
    let resources = w["requests_total"].as_u64().unwrap();
    assert_eq!(b["resources_fetched"].as_u64(), Some(resources), "the browser fetched it all: {b}");
    assert_eq!(w["requests_completed"].as_u64(), Some(resources), "{w}");
    assert_eq!(b["protocol"], if http == "2" { "h2" } else { "http/1.1" }, "{b}");
    assert!(b["browser_version"].as_str().unwrap_or("").contains("Chrome/") && b["lcp_s"].as_f64().is_some_and(|t| t > 0.0), "{b}");
    assert_eq!(w["page_load_s"].as_f64(), b["load_event_end_s"].as_f64(), "the load time is the browser's loadEventEnd");
    let used: Vec<&Value> = w["connections"].as_array().unwrap().iter().filter(|c| c["requests_completed"].as_u64() > Some(0)).collect();
    assert_eq!(used.iter().map(|c| c["requests_completed"].as_u64().unwrap()).sum::<u64>(), resources, "served, counted by serve: {used:?}");
    if http == "2" {
        assert_eq!(used.len(), 1, "HTTP/2 carries the page on one connection: {used:?}");
    }
    for c in &used {
        assert_eq!(c["cc_read_back"], "cubic", "{c}");
        assert!(c["final_tcp_info"].is_object(), "{c}");
        assert!(series_rows(out, run, &format!("conn-{},", c["client_port"])) > 0, "no samples of the server's socket {c}");
    }
}

/// The browser over `--remote`: Chromium on the client, the site in `ccbench serve` behind an
/// emulated path, through the loopback relay that adds serve's token.
///
/// HTTP/1.1, 48 images of 2 kB (as in `tests/browser.rs`: round trips, not the browser's CPU,
/// make up the load; at least 11 per load). 7 rounds, each a load through serve behind a 2 ms
/// path, one behind a 20 ms path, and one on the emulated 20 ms path, interleaved so a burst of
/// load on the shared machine falls on all three alike:
/// - remote, 20 ms against 2 ms: every load on the 20 ms path waits the round trips it cannot
///   avoid (11, less the first handshake's, which may begin before the browser's time origin),
///   every HTML first byte there is at least a round trip in, and the fastest load is at least
///   half the theory's 11 × 18 ms faster than on the 2 ms path. The fastest, not the median:
///   the browser's CPU time only adds to a load and on this shared machine swings by more than
///   the round trips (medians measured 0.214 s and 0.362 s, 0.301 s and 0.446 s, and once,
///   under a burst of builds, 0.414 s and 0.509 s, 2 ms loads of 0.32–0.69 s, all CPU; the
///   emulated browser test failed in CI on medians 66 ms apart whose fastest were 134 ms apart);
/// - remote against emulated on the same 20 ms path: the fastest loads within 35 %. The relay
///   adds ~20 µs per exchange (its unit test), nothing a load can show; what is left is CPU
///   time on a loaded 2-core machine, where the remote setup runs two more processes in the
///   data's way (serve, and the relay beside Chromium). Measured medians, 10 interleaved loads
///   each: remote 7 % faster at a load average of 5, 23 % slower at 5–10; 7 each: −0 %, +12 %,
///   +12 %.
///
/// Then one HTTP/2 load behind the 20 ms path: TLS end to end through the relay, Chromium
/// trusting exactly the key serve made for the test, the page on one connection.
#[test]
fn a_browser_loads_over_remote_slower_through_20ms_than_2ms_as_on_the_emulated_path() {
    let _g = lock();
    if !have_root() || !have_chromium() {
        return;
    }
    let dir = tempdir("browser");
    secret_file(&dir, "secret");
    let page = dir.join("page48.json");
    std::fs::write(&page, format!("{{\"html_bytes\": 20000, \"objects\": [{}]}}", ["2000"; 48].join(","))).unwrap();
    let page = page.display().to_string();
    let (mut r2, mut r20, mut e20) = (Vec::new(), Vec::new(), Vec::new());
    let load = |run: &Value| run["workload"]["page"]["page_load_s"].as_f64().unwrap();
    for i in 0..7 {
        r2.push(load(&browser_load(&dir, &format!("r2-{i}"), true, "2ms", &page, "1")));
        let run = browser_load(&dir, &format!("r20-{i}"), true, "20ms", &page, "1");
        let ttfb = run["workload"]["browser"]["response_start_s"].as_f64().unwrap();
        assert!(ttfb >= 0.020 * 0.98, "HTML first byte at {ttfb} s through a 20 ms path");
        assert!(load(&run) >= 10.0 * 0.020, "a load of {} s through a 20 ms path is faster than its round trips allow", load(&run));
        r20.push(load(&run));
        e20.push(load(&browser_load(&dir, &format!("e20-{i}"), false, "20ms", &page, "1")));
    }
    eprintln!("browser HTTP/1.1 load times: remote 2 ms {r2:.3?}; remote 20 ms {r20:.3?}; emulated 20 ms {e20:.3?}");
    let (m2, m20, me) = (fastest(r2), fastest(r20), fastest(e20));
    eprintln!("fastest: remote 2 ms {m2:.3} s, remote 20 ms {m20:.3} s, emulated 20 ms {me:.3} s (remote {:+.1} %)", (m20 / me - 1.0) * 100.0);
    let theory = 11.0 * 0.018;
    assert!(m20 - m2 >= theory / 2.0, "remote: 20 ms path fastest load {m20:.3} s is not {:.3} s above the 2 ms path's {m2:.3} s", theory / 2.0);
    assert!((m20 / me - 1.0).abs() < 0.35, "the same 20 ms path: remote fastest load {m20:.3} s, emulated {me:.3} s");

    let h2 = dir.join("page12.json");
    std::fs::write(&h2, format!("{{\"html_bytes\": 20000, \"objects\": [{}]}}", ["150000"; 12].join(","))).unwrap();
    let run = browser_load(&dir, "h2", true, "20ms", &h2.display().to_string(), "2");
    // TCP, TLS 1.3 and the request: three round trips, less the handshake's that may begin
    // before the browser's time origin.
    let ttfb = run["workload"]["browser"]["response_start_s"].as_f64().unwrap();
    assert!(ttfb >= 2.0 * 0.020 * 0.98, "HTML first byte at {ttfb} s over HTTP/2 through a 20 ms path");
    let _ = std::fs::remove_dir_all(&dir);
}

/// The parent's PID of process `pid` (host view), from `/proc/PID/status`.
fn parent_of(pid: u32) -> Option<u32> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    status.lines().find_map(|l| l.strip_prefix("PPid:")).and_then(|p| p.trim().parse().ok())
}

/// The relay ports named in the `--host-resolver-rules` of every Chromium below process
/// `ancestor` (what any local user can read with `ps`).
fn relay_ports_below(ancestor: u32) -> Vec<u16> {
    let mut ports = Vec::new();
    for entry in std::fs::read_dir("/proc").into_iter().flatten().flatten() {
        let Some(pid) = entry.file_name().to_str().and_then(|p| p.parse::<u32>().ok()) else { continue };
        let Ok(cmdline) = std::fs::read(format!("/proc/{pid}/cmdline")) else { continue };
        let Some(rules) = cmdline.split(|b| *b == 0).find_map(|a| a.strip_prefix(b"--host-resolver-rules=MAP ")) else { continue };
        let mut up = Some(pid);
        let below = (0..8).any(|_| {
            up = up.and_then(parent_of);
            up == Some(ancestor)
        });
        let port = String::from_utf8_lossy(rules).split([' ', ',']).find_map(|w| w.strip_prefix("127.0.0.1:").and_then(|p| p.parse().ok()));
        if let (true, Some(port)) = (below, port) {
            ports.push(port);
        }
    }
    // Chromium's helper processes carry the same command line.
    ports.sort_unstable();
    ports.dedup();
    ports
}

/// Issue 18: another local process fetched a page through the browser's relay. Now, while a
/// remote browser run loads a page, a program in the client's own network namespace reads the
/// relay's port off Chromium's command line (as `ps` shows it to anyone) and asks the relay
/// for the page: it is refused and gets nothing, and the browser's load completes.
#[test]
fn a_local_process_cannot_use_the_browsers_relay() {
    let _g = lock();
    if !have_root() || !have_chromium() {
        return;
    }
    let dir = tempdir("relay-outsider");
    let secret = secret_file(&dir, "secret");
    // 9.6 MB at 20 Mbit/s: a load of about 4 s, time enough to find the relay.
    let page = dir.join("page.json");
    std::fs::write(&page, format!("{{\"html_bytes\": 20000, \"objects\": [{}]}}", ["200000"; 48].join(","))).unwrap();
    let out = dir.join("out");
    let args: Vec<std::ffi::OsString> = ["run", "--remote", &serve_addr(), "--secret-file", secret.to_str().unwrap(), "--workload", "browser", "--page"]
        .iter()
        .map(Into::into)
        .chain([page.clone().into_os_string()])
        .chain(["--http", "1", "--cc", "cubic", "--runs", "1", "--out"].iter().map(Into::into))
        .chain([out.clone().into_os_string()])
        .collect();
    let mut tries: Vec<(u16, String)> = Vec::new();
    let (_, o, log) = common::through_serve_while(&secret, &out, &args, |client_ns, client| {
        let deadline = Instant::now() + Duration::from_secs(60);
        while tries.is_empty() && client.try_wait().unwrap().is_none() && Instant::now() < deadline {
            for port in relay_ports_below(client.pid()) {
                let got = client_ns
                    .run(|| {
                        let mut s = TcpStream::connect(("127.0.0.1", port))?;
                        s.set_read_timeout(Some(Duration::from_secs(3)))?;
                        s.write_all(b"GET / HTTP/1.1\r\nHost: x\r\n\r\n")?;
                        let mut got = vec![0u8; 4096];
                        let n = s.read(&mut got).unwrap_or(0);
                        Ok::<_, ccbench_netns::NetnsError>(String::from_utf8_lossy(&got[..n]).into_owned())
                    })
                    .unwrap_or_else(|e| format!("refused: {e}"));
                tries.push((port, got));
            }
            std::thread::sleep(Duration::from_millis(5));
        }
    });
    assert!(o.status.success(), "{}\n{log}", text(&o));
    assert!(!tries.is_empty(), "never found the relay's port on Chromium's command line");
    eprintln!("the outsider's tries: {tries:?}");
    for (port, got) in &tries {
        assert!(
            got.starts_with("refused"),
            "a local process got {} bytes through the relay on port {port}: {:?}…",
            got.len(),
            got.chars().take(80).collect::<String>()
        );
    }
    let run = result(&out)["runs"][0].clone();
    assert!(run["error"].is_null(), "{run}");
    check_remote_browser_run(&out, &run, "1");
    let _ = std::fs::remove_dir_all(&dir);
}

/// QUIC bulk through serve behind an emulated path: the verdict of the emulated run, each
/// algorithm's mean goodput within 10 % (or the Welch interval, at most 20 %), the controller
/// read back from both ends, and the server's QUIC samples streamed back.
///
/// 20 Mbit/s, 10 ms, 2 % loss: BBRv3 keeps near the link rate, CUBIC near its loss bound; 3 s
/// runs see ~60 losses each (variance as in the TCP test above; 5 s, then 4 s runs until CI's
/// time ran short). 6 runs a side: QUIC CUBIC's goodput varied by 7–9 % from run to run here
/// and came out +5 to +8 % through serve, too close to the 20 % cap at 4 runs a side.
#[test]
fn quic_over_remote_matches_emulated_quic() {
    let _g = lock();
    if !have_root() {
        return;
    }
    let dir = tempdir("quic");
    let path = ["--rate", "20mbit", "--rtt", "10ms", "--loss", "2%"];
    let (e, r, serve_log) = emulated_and_remote(&dir, &path, "--cc quic:cubic,quic:bbr3 --runs 6 --duration 3s");
    same_verdict(&e, &r, "quic:bbr3");
    // serve charges a QUIC test the bytes it sent, not what it parked in the stream's buffer
    // (once 38 MB logged for 6 MB delivered): at least what arrived, at most that plus the
    // retransmissions of 2 % loss and QUIC's headers (~2.5 %), with room.
    let logged: Vec<u64> = serve_log
        .0
        .lines()
        .filter(|l| l.starts_with("ccbench serve: 10.") && l.contains("bulk download"))
        .filter_map(|l| l.split(", ").find_map(|f| f.strip_suffix(" bytes")?.parse().ok()))
        .collect();
    let received: u64 = r["runs"].as_array().unwrap().iter().map(|run| run["workload"]["flows"][0]["bytes_received"].as_u64().unwrap()).sum();
    assert_eq!(logged.len(), 12, "one log line per test:\n{}", serve_log.0);
    let charged: u64 = logged.iter().sum();
    eprintln!("serve charged {charged} bytes for {received} received ({:.3}×)", charged as f64 / received as f64);
    assert!(charged >= received && (charged as f64) < 1.12 * received as f64, "serve logged {charged} bytes ({logged:?}) for {received} received");
    // Raw goodput for QUIC CUBIC too: normalised by its losses as in the TCP test above, its
    // spread did not shrink (13.6–20.0 against 17.0–20.4 ×10³, +15.3 %, where the goodputs
    // differed by +8.3 % the run before; why, not yet looked into), so it gains nothing here.
    for cc in ["quic:cubic", "quic:bbr3"] {
        assert_means_agree(&format!("{cc} goodput"), &goodputs(&e, cc), &goodputs(&r, cc), 0.10, 0.20);
    }
    for run in r["runs"].as_array().unwrap() {
        let f = &run["workload"]["flows"][0];
        assert_eq!((&f["cc_read_back"], &f["cc_receiver"]), (&run["cc"], &run["cc"]), "{f}");
        assert!(f["final_quic"]["rtt_us"].as_u64().unwrap() >= 10_000, "{f}");
        assert!(series_rows(&dir.join("remote"), run, "flow-0,") > 200, "too few samples of the server's QUIC connection");
    }
    let _ = std::fs::remove_dir_all(&dir);
}

fn objects_spec(requests: u32, object_bytes: u64, concurrency: u32) -> ccbench_workload::ObjectsSpec {
    ccbench_workload::ObjectsSpec {
        requests,
        object_bytes,
        concurrency,
        method: ccbench_workload::ObjectMethod::Get,
        cc: "cubic".parse().unwrap(),
        port: 0,
        sample_interval_us: 10_000,
        timeout_s: 20.0,
        quic_receiver_cc: None,
    }
}

fn quic_spec(mix: &[&str], seconds: f64) -> ccbench_workload::BulkSpec {
    ccbench_workload::BulkSpec {
        flows: 1,
        direction: ccbench_workload::Direction::Download,
        amount: ccbench_workload::Amount::Seconds(seconds),
        cc: mix[0].parse().unwrap(),
        mix: if mix.len() > 1 {
            mix.iter().map(|c| ccbench_workload::MixFlow { cc: c.parse().unwrap(), start_s: 0.0, client_port: None }).collect()
        } else {
            Vec::new()
        },
        port: 0,
        sample_interval_us: 10_000,
        timeout_s: 10.0,
        quic_receiver_cc: None,
        knobs: Default::default(),
    }
}

/// On loopback: the limits of serve refuse HTTP and QUIC tests over them, one line each; a
/// data connection to an objects test without the token gets nothing, even with a request
/// behind it; the byte limit stops a running QUIC test; a test within the limits runs.
#[test]
fn http_and_quic_tests_are_gated_and_limited() {
    // serve sets cubic on its data sockets, which only root may where it is not allowed.
    if !have_root() {
        return;
    }
    let (dir, _, secret, serve) = loopback_serve("gates", &["--max-bytes", "1mb", "--max-tests-per-minute", "1000"]);
    let mut client = Client::connect(serve.addr, &secret).unwrap();
    let page = |name: &str| ccbench_workload::PageSpec {
        page: ccbench_workload::PageModel::builtin(name).unwrap(),
        protocol: ccbench_workload::PageProtocol::default(),
        cc: "cubic".parse().unwrap(),
        port: 0,
        sample_interval_us: 10_000,
        timeout_s: 20.0,
    };
    for (test, needle) in [
        (TestRequest::Objects(objects_spec(200, 1 << 20, 4)), "limit of 1000000 bytes per test (--max-bytes)"),
        (TestRequest::Objects(objects_spec(4, 1000, 100)), "100 connections is over this server's limit of 64"),
        (TestRequest::Objects(ccbench_workload::ObjectsSpec { cc: "vegas9".parse().unwrap(), ..objects_spec(4, 1000, 1) }), "no congestion control \"vegas9\""),
        (TestRequest::Page(page("heavy")), "3700000 bytes in all is over this server's limit of 1000000"),
        (TestRequest::Bulk(quic_spec(&["quic:bbr9"], 1.0)), "no QUIC algorithm \"bbr9\""),
        (TestRequest::Bulk(quic_spec(&["quic:cubic", "cubic"], 1.0)), "mixing kernel TCP and QUIC"),
    ] {
        match client.check(&test) {
            Err(RemoteError::Refused(reason)) => assert!(reason.contains(needle), "{reason}"),
            other => panic!("{needle}: {other:?}"),
        }
    }

    // Within the limits: objects over loopback, the server's sockets read back and sampled.
    let series = ccbench_workload::MemorySeries::default();
    let stop = AtomicBool::new(false);
    let o = client.run(&objects_spec(4, 100_000, 2), Instant::now(), &stop, &series).unwrap();
    assert_eq!((o.requests_completed, o.server_connections, o.errors), (4, 2, 0), "{o:?}");
    assert!(o.connections.iter().all(|c| c.sending.cc_read_back.as_deref() == Some("cubic") && c.sending.final_tcp_info.is_some()), "{o:?}");
    assert!(o.connections.iter().all(|c| !series.samples(ccbench_workload::SocketId::Connection(c.client_port)).is_empty()));

    // QUIC, stopped by the byte limit while it runs.
    let q = client.run(&quic_spec(&["quic:cubic"], 3.0), Instant::now(), &stop, &series).unwrap();
    let f = &q.flows[0];
    // Every byte the budget paid for arrives: QUIC's send buffer is drained, not dropped, when
    // the budget runs out (it was 643,255 of 1,000,000 before).
    assert_eq!(f.bytes_received, 1_000_000, "{f:?}");
    assert!(f.error.as_deref().unwrap_or_default().contains("--max-bytes"), "{f:?}");
    assert_eq!((f.sending.cc_read_back.as_str(), f.sending.cc_receiver.as_deref()), ("quic:cubic", Some("quic:cubic")));

    // A data connection without the token, a request behind it: not one byte back.
    let c = session(serve.addr, &secret);
    c.send(&ClientMsg::Run { test: TestRequest::Objects(objects_spec(2, 1000, 1)) }).unwrap();
    let ServerMsg::Ready { port, token, .. } = c.recv::<ServerMsg>().unwrap() else { panic!("no ready") };
    c.send(&ClientMsg::Start).unwrap();
    let mut wrong = unhex::<16>(&token).unwrap();
    wrong[15] ^= 0x80;
    let mut data = TcpStream::connect((serve.addr.ip(), port)).unwrap();
    data.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
    data.write_all(&[&wrong[..], &0u32.to_be_bytes(), b"GET /obj/0 HTTP/1.1\r\nHost: x\r\n\r\n"].concat()).unwrap();
    let mut got = Vec::new();
    let _ = data.read_to_end(&mut got);
    assert!(got.is_empty(), "{} bytes sent to a connection with a wrong token", got.len());
    // The server took no connection in, and says so when the client is done.
    c.send(&ClientMsg::Stop).unwrap();
    c.stream().set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    match c.recv::<ServerMsg>() {
        Ok(ServerMsg::HttpDone { .. }) => {}
        other => panic!("{other:?}"),
    }
    drop(serve);
    let _ = std::fs::remove_dir_all(&dir);
}

/// Objects over QUIC (GET, so the server's end sends) through serve behind an emulated path
/// give the verdict of the emulated run, each algorithm's mean content throughput within 10 %
/// (or the Welch interval, at most 20 %), on one connection whose server's controller is read
/// back and sampled by serve, its samples named by this end's port; and a page over QUIC loads
/// through serve in full.
///
/// 50 Mbit/s, 10 ms, 1 % loss: BBRv3 keeps near the link rate, CUBIC near its loss bound.
#[test]
fn quic_objects_and_pages_over_remote_match_emulated() {
    let _g = lock();
    if !have_root() {
        return;
    }
    let dir = tempdir("quic-http");
    let path = ["--rate", "50mbit", "--rtt", "10ms", "--loss", "1%"];
    let (e, r, serve_log) =
        emulated_and_remote(&dir, &path, "--workload objects --method get --requests 8 --size 1mb --concurrency 2 --cc quic:cubic,quic:bbr3 --runs 4");
    same_verdict(&e, &r, "quic:bbr3");
    for cc in ["quic:cubic", "quic:bbr3"] {
        let tput = |v: &Value| per_run(v, cc, |run| run["workload"]["content_throughput_bps"].as_f64());
        assert_means_agree(&format!("objects {cc} content throughput"), &tput(&e), &tput(&r), 0.10, 0.20);
    }
    for run in r["runs"].as_array().unwrap() {
        let w = &run["workload"];
        assert_eq!((w["requests_completed"].as_u64(), w["errors"].as_u64(), w["server_connections"].as_u64()), (Some(8), Some(0), Some(1)), "{w}");
        let c = &w["connections"][0];
        assert_eq!((&c["cc_read_back"], &c["cc_receiver"]), (&run["cc"], &run["cc"]), "both ends' controllers read back: {c}");
        assert!(c["final_quic"]["rtt_us"].as_u64().unwrap() >= 10_000, "the server's last sample: {c}");
        // The server's sending end, sampled every 10 ms by serve, named by this end's port.
        let port = c["client_port"].as_u64().unwrap();
        assert!(series_rows(&dir.join("remote"), run, &format!("conn-{port},")) > 50, "too few samples of the server's connection");
    }
    drop(serve_log);
    let secret = secret_file(&dir, "secret");
    let page = dir.join("page");
    let o = exec_remote(&path, &secret, "", &secret, &format!("$R --workload page --page news --cc quic:bbr3 --runs 1 --out {}", page.display()));
    assert!(o.status.success(), "{}", text(&o));
    let run = &result(&page)["runs"][0];
    let w = &run["workload"];
    assert!(w["resources"].as_array().unwrap().iter().all(|r| r["complete_s"].as_f64().is_some()), "every resource loaded: {w}");
    assert_eq!(w["connections"][0]["cc_read_back"].as_str(), Some("quic:bbr3"), "{w}");
    let _ = std::fs::remove_dir_all(&dir);
}

/// One HTTP/1.1 GET on an open keep-alive connection: the status and the body's length.
fn http_get(data: &mut TcpStream, path: &str) -> (u16, usize) {
    data.write_all(format!("GET {path} HTTP/1.1\r\nHost: x\r\n\r\n").as_bytes()).unwrap();
    let mut head = Vec::new();
    let mut byte = [0u8; 1];
    while !head.ends_with(b"\r\n\r\n") {
        data.read_exact(&mut byte).unwrap();
        head.push(byte[0]);
    }
    let head = String::from_utf8_lossy(&head).to_ascii_lowercase();
    let status = head.split_whitespace().nth(1).and_then(|s| s.parse().ok()).unwrap_or_else(|| panic!("no status in {head:?}"));
    let len = head.lines().find_map(|l| l.strip_prefix("content-length:")).map_or(0, |v| v.trim().parse().unwrap());
    let mut body = vec![0u8; len];
    data.read_exact(&mut body).unwrap();
    (status, len)
}

/// `--max-bytes` holds while an HTTP test runs, not only in the check before it: a client that
/// asks for more objects than it planned gets 503 once the test's budget is spent, the bytes
/// served stay within the limit, and the server's result names the flag.
#[test]
fn an_http_test_is_cut_at_max_bytes_while_it_runs() {
    // serve sets cubic on its data sockets, which only root may where it is not allowed.
    if !have_root() {
        return;
    }
    let (dir, _, secret, serve) = loopback_serve("http-cut", &["--max-bytes", "1mb", "--max-tests-per-minute", "1000"]);
    let c = session(serve.addr, &secret);
    // Planned: 2 × 400 kB, within the 1 MB limit, so the check lets it run.
    c.send(&ClientMsg::Run { test: TestRequest::Objects(objects_spec(2, 400_000, 1)) }).unwrap();
    let ServerMsg::Ready { port, token, .. } = c.recv::<ServerMsg>().unwrap() else { panic!("no ready") };
    c.send(&ClientMsg::Start).unwrap();
    let mut data = TcpStream::connect((serve.addr.ip(), port)).unwrap();
    data.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    data.write_all(&[&unhex::<16>(&token).unwrap()[..], &0u32.to_be_bytes()].concat()).unwrap();
    // Asked: four, 1.6 MB.
    let got: Vec<(u16, usize)> = (0..4).map(|i| http_get(&mut data, &format!("/obj/{}", i % 2))).collect();
    assert_eq!(got, vec![(200, 400_000), (200, 400_000), (503, 0), (503, 0)]);
    drop(data);
    c.send(&ClientMsg::Stop).unwrap();
    c.stream().set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    loop {
        match c.recv::<ServerMsg>() {
            Ok(ServerMsg::HttpDone { errors, error_messages, .. }) => {
                assert!(errors >= 2 && error_messages.iter().any(|m| m.contains("--max-bytes")), "{errors} {error_messages:?}");
                break;
            }
            // The connection's own report and samples come first.
            Ok(_) => {}
            Err(e) => panic!("{e}"),
        }
    }
    drop(serve);
    let _ = std::fs::remove_dir_all(&dir);
}

// ---- Attacks on serve and its client (issue 18), each on loopback. ----

/// A bulk download of `seconds` with one flow of `cc`.
fn bulk_spec(cc: &str, seconds: f64) -> ccbench_workload::BulkSpec {
    ccbench_workload::BulkSpec {
        flows: 1,
        direction: ccbench_workload::Direction::Download,
        amount: ccbench_workload::Amount::Seconds(seconds),
        cc: cc.parse().unwrap(),
        mix: Vec::new(),
        port: 0,
        sample_interval_us: 10_000,
        timeout_s: 10.0,
        quic_receiver_cc: None,
        knobs: Default::default(),
    }
}

/// A loopback TCP proxy to `to` that reads each direction as length-prefixed frames (which
/// both the plain and the sealed protocol are) and hands each frame's body to `edit` with its
/// direction (true: client to server) and number. Returns its address and how many frames
/// `edit` changed.
fn rewriting_proxy(to: SocketAddr, edit: fn(bool, usize, &mut Vec<u8>) -> bool) -> (SocketAddr, std::sync::Arc<std::sync::atomic::AtomicUsize>) {
    use std::sync::atomic::{AtomicUsize, Ordering};
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    let edited = std::sync::Arc::new(AtomicUsize::new(0));
    let count = edited.clone();
    std::thread::spawn(move || {
        for client in listener.incoming().map_while(Result::ok) {
            let server = TcpStream::connect(to).unwrap();
            for (from, into, upstream) in [(client.try_clone().unwrap(), server.try_clone().unwrap(), true), (server, client, false)] {
                let count = count.clone();
                std::thread::spawn(move || {
                    let (mut from, mut into) = (from, into);
                    for n in 0.. {
                        let mut len = [0u8; 4];
                        if from.read_exact(&mut len).is_err() {
                            break;
                        }
                        let mut body = vec![0u8; u32::from_be_bytes(len) as usize];
                        if from.read_exact(&mut body).is_err() {
                            break;
                        }
                        if edit(upstream, n, &mut body) {
                            count.fetch_add(1, Ordering::SeqCst);
                        }
                        if into.write_all(&[&(body.len() as u32).to_be_bytes()[..], &body].concat()).is_err() {
                            break;
                        }
                    }
                    let _ = into.shutdown(std::net::Shutdown::Both);
                });
            }
        }
    });
    (addr, edited)
}

fn replace(body: &mut Vec<u8>, from: &[u8], to: &[u8]) -> bool {
    let Some(at) = body.windows(from.len()).position(|w| w == from) else { return false };
    body.splice(at..at + from.len(), to.iter().copied());
    true
}

/// An on-path rewriter that turns the client's "cubic" into "reno" and the server's "reno"
/// back into "cubic" (the audit's attack: serve ran reno while result.json said cubic) finds
/// no algorithm name to rewrite: it travels sealed. The run is the client's cubic, on both
/// ends, as serve's own log says.
#[test]
fn an_on_path_rewriter_cannot_change_the_algorithm() {
    if !have_root() {
        return;
    }
    let (dir, _, secret, serve) = loopback_serve("rewriter", &[]);
    let (proxy, edited) =
        rewriting_proxy(
            serve.addr,
            |upstream, _, body| {
                if upstream {
                    replace(body, b"\"cubic\"", b"\"reno\"")
                } else {
                    replace(body, b"\"reno\"", b"\"cubic\"")
                }
            },
        );
    let mut client = Client::connect(proxy, &secret).unwrap();
    let series = ccbench_workload::MemorySeries::default();
    let r = client.run(&bulk_spec("cubic", 1.0), Instant::now(), &AtomicBool::new(false), &series);
    // serve logs a test as its session goes on: wait for the line.
    let since = Instant::now();
    let mut log = serve.log();
    while !log.contains("bulk download") && since.elapsed() < Duration::from_secs(10) {
        log = serve.log();
    }
    let ran: Vec<&str> = log.lines().filter(|l| l.contains("bulk download")).collect();
    assert_eq!(ran.len(), 1, "{log}");
    assert!(ran[0].contains("flow(s) cubic"), "serve ran: {}", ran[0]);
    assert_eq!(edited.load(std::sync::atomic::Ordering::SeqCst), 0, "the rewriter found an algorithm name in the clear");
    assert_eq!(r.unwrap().flows[0].sending.cc_read_back, "cubic");
    let _ = std::fs::remove_dir_all(&dir);
}

/// One byte flipped on the way, either direction, after the handshake: the run fails, in one
/// line saying the connection was altered; serve logs it, and runs nothing.
#[test]
fn a_flipped_byte_fails_the_session_either_way() {
    let (dir, _, secret, serve) = loopback_serve("flip", &[]);
    // Client to server: frame 0 the hello, 1 the confirmation, 2 the first sealed (the check).
    let (up, _) = rewriting_proxy(serve.addr, |upstream, n, body| {
        let hit = upstream && n == 2;
        if hit {
            body[0] ^= 0x20;
        }
        hit
    });
    let mut client = Client::connect(up, &secret).unwrap();
    let err = client.check(&TestRequest::Bulk(bulk_spec("reno", 1.0))).unwrap_err().to_string();
    assert!(err.contains("integrity check") && !err.contains('\n'), "{err}");
    assert!(serve.log().contains("failed its integrity check"), "{}", serve.log());
    // Server to client: frame 0 the challenge, 1 the confirmation, 2 the sealed welcome.
    let (down, _) = rewriting_proxy(serve.addr, |upstream, n, body| {
        let hit = !upstream && n == 2;
        if hit {
            let last = body.len() - 1;
            body[last] ^= 1;
        }
        hit
    });
    match Client::connect(down, &secret) {
        Err(e) => assert!(e.to_string().contains("integrity check"), "{e}"),
        Ok(_) => panic!("a welcome altered on the way was taken"),
    }
    assert!(!serve.log().contains("bulk"), "nothing ran");
    let _ = std::fs::remove_dir_all(&dir);
}

/// A connection from `source` (a loopback address) to `to`.
fn connect_from(source: [u8; 4], to: SocketAddr) -> std::io::Result<TcpStream> {
    use std::os::fd::FromRawFd;
    let SocketAddr::V4(to) = to else { panic!("IPv4 only") };
    let sockaddr = |ip: [u8; 4], port: u16| libc::sockaddr_in {
        sin_family: libc::AF_INET as libc::sa_family_t,
        sin_port: port.to_be(),
        sin_addr: libc::in_addr { s_addr: u32::from_ne_bytes(ip) },
        sin_zero: [0; 8],
    };
    let len = std::mem::size_of::<libc::sockaddr_in>() as libc::socklen_t;
    // SAFETY: a fresh socket, owned by the TcpStream made of it (closed on any error path).
    unsafe {
        let fd = libc::socket(libc::AF_INET, libc::SOCK_STREAM | libc::SOCK_CLOEXEC, 0);
        if fd < 0 {
            return Err(std::io::Error::last_os_error());
        }
        let stream = TcpStream::from_raw_fd(fd);
        let (from, to) = (sockaddr(source, 0), sockaddr(to.ip().octets(), to.port()));
        if libc::bind(fd, &from as *const _ as *const libc::sockaddr, len) != 0 || libc::connect(fd, &to as *const _ as *const libc::sockaddr, len) != 0 {
            return Err(std::io::Error::last_os_error());
        }
        Ok(stream)
    }
}

/// Pre-authentication connections take no client slot and cannot hold the server: 8 that
/// dribble a hello a byte at a time and 4 that say nothing (the audit's lock-out: 4 were
/// enough) do not delay an honest client; a flood from one network keeps 8 places, its older
/// connections told at once that serve is busy as newer ones take their places (issue 27 §1);
/// each dribbler is cut at the handshake's 5 s deadline, however it paces its bytes.
#[test]
fn dribbling_and_idle_connections_do_not_lock_out_a_client() {
    let (dir, _, secret, serve) = loopback_serve("dribble", &["--max-clients", "4"]);
    let since = Instant::now();
    let idle: Vec<TcpStream> = (0..4).map(|_| connect_from([127, 0, 3, 1], serve.addr).unwrap()).collect();
    let hello = channel::hello_frame(&secret);
    let dribblers: Vec<_> = (0..8)
        .map(|_| {
            let mut s = connect_from([127, 0, 2, 1], serve.addr).unwrap();
            let hello = hello.clone();
            std::thread::spawn(move || {
                for b in &hello {
                    if s.write_all(&[*b]).is_err() {
                        return since.elapsed();
                    }
                    std::thread::sleep(Duration::from_millis(400));
                }
                since.elapsed()
            })
        })
        .collect();
    std::thread::sleep(Duration::from_millis(300));
    let t = Instant::now();
    let client = Client::connect(serve.addr, &secret).expect("an honest client gets in");
    let took = t.elapsed();
    eprintln!("handshake beside 8 dribblers and 4 idle connections: {took:?}");
    assert!(took < Duration::from_secs(2), "the honest client waited {took:?}");
    drop(client);
    // A flood from one network: it keeps its 8 places, its 12 oldest told at once that serve
    // is busy (and closed), the 8 newest left to the deadline.
    let flood: Vec<TcpStream> = (0..20).map(|_| connect_from([127, 0, 4, 1], serve.addr).unwrap()).collect();
    let said = |s: &TcpStream, wait: u64| {
        s.set_read_timeout(Some(Duration::from_millis(wait))).unwrap();
        let mut buf = [0u8; 256];
        match (&*s).read(&mut buf) {
            Ok(n) => String::from_utf8_lossy(&buf[..n]).into_owned(),
            Err(e) => e.kind().to_string(),
        }
    };
    let told: Vec<String> = flood[..12].iter().map(|s| said(s, 1000)).collect();
    assert!(told.iter().all(|t| t.contains("serve is busy with too many handshakes")), "{told:#?}");
    let left: Vec<String> = flood[12..].iter().map(|s| said(s, 50)).collect();
    assert!(left.iter().all(|t| t.contains("timed out") || t.contains("would block") || t.contains("Resource temporarily")), "{left:#?}");
    for d in dribblers {
        let cut_at = d.join().unwrap();
        assert!(cut_at < Duration::from_secs(8), "a dribbler was let on for {cut_at:?}");
    }
    for mut s in idle {
        s.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
        assert!(matches!(s.read(&mut [0u8; 1]), Ok(0)), "an idle connection still open");
    }
    assert!(since.elapsed() < Duration::from_secs(10));
    let _ = std::fs::remove_dir_all(&dir);
}

/// A version-3 client (the HMAC handshake) gets one line naming both versions, as a frame it
/// can read; serve logs it.
#[test]
fn an_old_client_gets_one_clear_line() {
    let (dir, _, _, serve) = loopback_serve("old", &[]);
    let back = throw(serve.addr, &frame(format!(r#"{{"type":"hello","version":3,"nonce":"{}"}}"#, hex(&[3; 32])).as_bytes()));
    match proto::decode_stream_server(&back).first() {
        Some(Ok(ServerMsg::Error { message })) => {
            assert!(message.starts_with("the ends disagree on the protocol version (3 vs 5)") && !message.contains("update"), "{message}")
        }
        other => panic!("{other:?}"),
    }
    assert!(serve.log().contains("protocol version (3 vs 5)"));
    let _ = std::fs::remove_dir_all(&dir);
}

/// Strings a peer sends reach serve's log escaped: a forged log line inside an unknown
/// message type stays inside its own line.
#[test]
fn a_peer_cannot_forge_log_lines() {
    let (dir, _, _, serve) = loopback_serve("forge", &[]);
    let forged = "ccbench serve: 203.0.113.9 bulk download 120 s, 1 flow(s) cubic: 120.00 s, 9999999999 bytes";
    let _ = throw(serve.addr, &frame(format!(r#"{{"type":"x\n{forged}\u001b]0;title\u0007"}}"#).as_bytes()));
    let log = serve.log();
    assert!(log.lines().count() >= 1 && !log.lines().any(|l| l.starts_with("ccbench serve: 203.0.113.9")), "{log}");
    assert!(!log.contains('\u{1b}') && !log.contains('\u{7}'), "{log:?}");
    assert!(log.contains("\\n") && log.contains("203.0.113.9"), "escaped, not dropped: {log}");
    let _ = std::fs::remove_dir_all(&dir);
}

/// The probe's UDP server answers only the control connection's address: a datagram with the
/// right token from another address (127.0.0.2) draws nothing, not a train's first byte, and
/// the real client is answered after it.
#[test]
fn a_probe_token_from_another_address_draws_nothing() {
    use ccbench_pathprobe::wire::Message;
    let (dir, _, secret, serve) = loopback_serve("probe-redirect", &[]);
    let mut client = Client::connect(serve.addr, &secret).unwrap();
    let session = client.open_probe(&ccbench_remote::ProbeRequest { max_rate_bps: 10_000_000 }).unwrap();
    let train = Message::TrainRequest { train: 1, count: 50, payload_len: 1200, rate_bps: 10_000_000 }.encode(&session.token);
    let echo = Message::Echo { seq: 1, sent_ns: 5 }.encode_padded(&session.token, 100);
    let outsider = std::net::UdpSocket::bind("127.0.0.2:0").unwrap();
    outsider.set_read_timeout(Some(Duration::from_millis(1500))).unwrap();
    outsider.send_to(&echo, session.server).unwrap();
    outsider.send_to(&train, session.server).unwrap();
    let mut buf = [0u8; 2048];
    assert!(outsider.recv_from(&mut buf).is_err(), "the outsider was answered");
    let own = std::net::UdpSocket::bind("127.0.0.1:0").unwrap();
    own.set_read_timeout(Some(Duration::from_secs(2))).unwrap();
    own.send_to(&echo, session.server).unwrap();
    let (n, _) = own.recv_from(&mut buf).expect("the client is answered");
    assert_eq!(n, echo.len());
    let report = client.end_probe().unwrap();
    assert!(report.ignored >= 2, "{report:?}");
    let _ = std::fs::remove_dir_all(&dir);
}

/// `ccbench serve --new-secret FILE`: 64 hex digits, mode 600; never over an existing file.
#[test]
fn new_secret_writes_a_private_256_bit_secret_once() {
    let dir = tempdir("new-secret");
    let f = dir.join("s");
    let fs = f.display().to_string();
    let o = ccbench(&["serve", "--new-secret", &fs]);
    assert!(o.status.success(), "{}", text(&o));
    assert_eq!(std::fs::metadata(&f).unwrap().permissions().mode() & 0o777, 0o600);
    let s = std::fs::read_to_string(&f).unwrap();
    assert!(s.trim().len() == 64 && s.trim().bytes().all(|b| b.is_ascii_hexdigit()), "{s:?}");
    one_line_exit_2(&ccbench(&["serve", "--new-secret", &fs]), "already exists");
    assert_eq!(std::fs::read_to_string(&f).unwrap(), s);
    // A FIFO as the secret: refused at once, nothing read.
    let fifo = dir.join("fifo");
    assert!(Command::new("mkfifo").arg(&fifo).status().unwrap().success());
    one_line_exit_2(&ccbench(&["serve", "--secret-file", &fifo.display().to_string()]), "not a regular file");
    let _ = std::fs::remove_dir_all(&dir);
}

/// A fake serve that authenticates, then answers a bulk test's `Run` with a data port, the
/// algorithm read back, and whatever `results` sends after `Start`.
fn hostile_serve(secret: Secret, results: Results) -> SocketAddr {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    std::thread::spawn(move || {
        for stream in listener.incoming().map_while(Result::ok) {
            let secret = secret.clone();
            std::thread::spawn(move || {
                let Ok(c) = Channel::accept(stream, &secret, Instant::now() + Duration::from_secs(5)) else { return };
                let limits = ccbench_remote::Limits {
                    max_duration_s: 60.0,
                    max_bytes: 1 << 30,
                    max_clients: 1,
                    max_tests_per_minute: 100,
                    max_flows: 4,
                    max_probe_rate_bps: 1_000_000,
                };
                let facts = ccbench_remote::ServerFacts {
                    ccbench_version: "hostile".into(),
                    kernel_release: None,
                    kernel_version: None,
                    congestion_controls: vec!["reno".into()],
                    default_congestion_control: None,
                    default_qdisc: None,
                    serving_interface: None,
                    serving_qdisc: None,
                };
                c.send(&ServerMsg::Welcome { facts, limits }).unwrap();
                let Ok(ClientMsg::Run { .. }) = c.recv::<ClientMsg>() else { return };
                let data = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
                c.send(&ServerMsg::Ready { port: data.local_addr().unwrap().port(), token: hex(&[1; 16]), spki_sha256: None }).unwrap();
                let (_flow, _) = data.accept().unwrap();
                c.send(&ServerMsg::Connected { cc_read_back: vec!["reno".into()] }).unwrap();
                let Ok(ClientMsg::Start) = c.recv::<ClientMsg>() else { return };
                results(&c);
                std::thread::sleep(Duration::from_secs(2));
            });
        }
    });
    addr
}

/// What a hostile server sends after `Start`.
type Results = fn(&Channel);

fn sample(t_us: u64, rtt_us: u32) -> ServerMsg {
    let raw = ccbench_kernel_tcp::RawTcpInfo { tcpi_rtt: rtt_us, ..Default::default() };
    let info = ccbench_kernel_tcp::TcpInfo::from_raw(&raw, std::mem::size_of::<ccbench_kernel_tcp::RawTcpInfo>());
    ServerMsg::Sample { flow: 0, sample: ccbench_kernel_tcp::Sample::from_parts(t_us, &info, None) }
}

/// A hostile server's results are held to the test: a flood of samples, a time of 2^64-1, an
/// RTT of 2^31 µs, a `Done` without the flow's result, a sample of a flow the test lacks, and
/// text that would drive the terminal each end the run in one line, quickly, with bounded
/// memory (the audit's flood took the client to 1.09 GB and a 1 s test to 40 s).
#[test]
fn a_hostile_servers_results_are_bounded_and_checked() {
    let dir = tempdir("hostile");
    let secret = Secret::from_file(&secret_file(&dir, "secret")).unwrap();
    let cases: [(Results, &str); 6] = [
        (
            |c| {
                for i in 0..2_000_000u64 {
                    if c.send(&sample(i % 1000, 1000)).is_err() {
                        return;
                    }
                }
            },
            "messages for a test of 1.0 s",
        ),
        (|c| drop(c.send(&sample(u64::MAX, 1000))), "a time of 18446744073709551615"),
        (|c| drop(c.send(&sample(1000, 1 << 31))), "round trip of 2147483 ms"),
        (|c| drop(c.send(&ServerMsg::Done { ends: Vec::new(), dropped_samples: 0, more: false })), "hold 0 of the test's 1 flows"),
        (|c| drop(c.send(&ServerMsg::Received { flow: 7, point: ccbench_workload::GoodputPoint { t_us: 1, bytes: 1 } })), "socket 7 of a test with 1"),
        (|c| drop(c.send(&ServerMsg::Error { message: "bad\u{1b}]0;pwned\u{7}\u{1b}[2J\nline".into() })), "bad\\u{1b}]0;pwned\\u{7}\\u{1b}[2J\\u{a}line"),
    ];
    for (results, want) in cases {
        let addr = hostile_serve(secret.clone(), results);
        let mut client = Client::connect(addr, &secret).unwrap();
        let t = Instant::now();
        let err =
            client.run(&bulk_spec("reno", 1.0), Instant::now(), &AtomicBool::new(false), &ccbench_workload::MemorySeries::default()).unwrap_err().to_string();
        eprintln!("{want}: failed after {:?}", t.elapsed());
        assert!(err.contains(want), "{want}: {err}");
        assert!(!err.chars().any(char::is_control), "{err:?}");
        assert!(t.elapsed() < Duration::from_secs(20), "{want}: {:?}", t.elapsed());
    }
    let _ = std::fs::remove_dir_all(&dir);
}

/// A client that reads its results slowly (the audit's: 64 flows, 1 ms samples grew serve by
/// 14.5 MB/s): serve's queue is bounded, so its memory is too; it drops samples instead, and
/// says how many in `done`. This client reads one message a millisecond while the 8 s test runs
/// (under 1 000 a second against the 64 000 a second serve produces), then everything: a reader
/// that lags, not one that stopped. (At one message per 20 ms, about 25 kB/s, serve's writer
/// waits past its 10 s write timeout, because the kernel wakes a blocked writer only once half
/// of its queued bytes are gone, and serve ends the session as a client that stopped reading.)
/// Until issue 27's last session, serve ended this session at the test's end however fast its
/// client read: the `done` of 64 flows was over the 64 KiB frame and could not be sealed; it
/// now comes in parts, and the client gathers every flow's end.
#[test]
fn a_slow_reading_client_costs_serve_bounded_memory_and_is_told_of_the_drops() {
    let (dir, _, secret, serve) = loopback_serve("slow-reader", &[]);
    let c = session(serve.addr, &secret);
    let spec = ccbench_workload::BulkSpec { flows: 64, sample_interval_us: 1_000, ..bulk_spec("cubic", 8.0) };
    c.send(&ClientMsg::Run { test: TestRequest::Bulk(spec) }).unwrap();
    let (port, token) = match c.recv::<ServerMsg>().unwrap() {
        ServerMsg::Ready { port, token, .. } => (port, unhex::<16>(&token).unwrap()),
        other => panic!("{other:?}"),
    };
    // The flows' data is not read either: their windows fill, and their senders' samples go on.
    let flows: Vec<TcpStream> = (0..64)
        .map(|id| {
            let mut s = TcpStream::connect((serve.addr.ip(), port)).unwrap();
            s.write_all(&ccbench_workload::data_hello(&token, id)).unwrap();
            s
        })
        .collect();
    assert!(matches!(c.recv::<ServerMsg>().unwrap(), ServerMsg::Connected { .. }));
    let (rss_before, _) = serve.memory_kb();
    c.send(&ClientMsg::Start).unwrap();
    let mut rss = Vec::new();
    let mut samples = 0u64;
    let mut dropped = None;
    let t0 = Instant::now();
    let mut next_look = t0 + Duration::from_secs(1);
    let take = |msg: ServerMsg, samples: &mut u64| match msg {
        ServerMsg::Sample { .. } | ServerMsg::Received { .. } => {
            *samples += 1;
            None
        }
        ServerMsg::Done { more: true, .. } => None,
        ServerMsg::Done { dropped_samples, .. } => Some(dropped_samples),
        other => panic!("{other:?}"),
    };
    while t0.elapsed() < Duration::from_secs(8) && dropped.is_none() {
        dropped = take(c.recv::<ServerMsg>().unwrap(), &mut samples);
        if Instant::now() >= next_look {
            rss.push(serve.memory_kb().0);
            next_look += Duration::from_secs(1);
        }
        std::thread::sleep(Duration::from_millis(1));
    }
    let dropped = match dropped {
        Some(d) => d,
        None => loop {
            if let Some(d) = take(c.recv::<ServerMsg>().unwrap(), &mut samples) {
                break d;
            }
        },
    };
    let (_, hwm) = serve.memory_kb();
    eprintln!(
        "slow reader: serve VmRSS {rss_before} kB before, {rss:?} kB each second of the 8 s test, peak (VmHWM) {hwm} kB; {samples} samples delivered, {dropped} dropped"
    );
    assert!(dropped > 0, "the client lagged, yet nothing was dropped");
    let growth = rss.iter().max().unwrap().saturating_sub(rss_before);
    assert!(growth < 32 * 1024, "serve grew by {growth} kB while its client lagged: {rss:?}");
    drop(flows);
    let _ = std::fs::remove_dir_all(&dir);
}

/// A client killed (-9) during a 20 s QUIC test (the audit's case: serve ran it to its end)
/// and during a TCP one: serve ends the test within 2 s of the kill, and says why.
#[test]
fn serve_stops_a_test_within_2_s_of_its_client_going_away() {
    let (dir, secret_path, _, serve) = loopback_serve("teardown", &[]);
    for cc in ["quic:cubic", "reno"] {
        let out = dir.join(cc.replace(':', "-"));
        let mut client = Command::new(BIN)
            .args(["run", "--remote", &serve.addr.to_string(), "--secret-file", secret_path.to_str().unwrap(), "--cc", cc, "--runs", "1", "--duration", "20s"])
            .arg("--out")
            .arg(&out)
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .spawn()
            .unwrap();
        std::thread::sleep(Duration::from_secs(4));
        let _ = client.kill();
        let killed = Instant::now();
        let _ = client.wait();
        let line = loop {
            if let Some(l) = serve.log().lines().find(|l| l.contains("bulk download 20 s") && l.contains(cc)).map(str::to_string) {
                break l;
            }
            assert!(killed.elapsed() < Duration::from_secs(10), "{cc}: serve still runs the test 10 s after its client was killed:\n{}", serve.log());
        };
        let took = killed.elapsed();
        eprintln!("{cc}: serve's test ended {took:?} after the kill (log read every 200 ms): {line}");
        assert!(took < Duration::from_millis(2500), "{cc}: {took:?}: {line}");
        assert!(line.contains("went away") || line.contains("error"), "{line}");
    }
    let _ = std::fs::remove_dir_all(&dir);
}

/// serve out of descriptors (`ulimit -n 40`, connections held open in the handshake from many
/// addresses): accept() backs off instead of spinning (the audit saw 205,272 log lines in 3 s),
/// and serve takes clients again once the handshake deadline has freed them.
#[test]
fn accept_backs_off_when_out_of_descriptors() {
    use std::io::BufRead;
    let dir = tempdir("emfile");
    let secret_path = secret_file(&dir, "secret");
    let secret = Secret::from_file(&secret_path).unwrap();
    let mut child = Command::new("sh")
        .args(["-c", "ulimit -n 40 && exec \"$0\" serve --listen 127.0.0.1:0 --secret-file \"$1\"", BIN, secret_path.to_str().unwrap()])
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let mut err = std::io::BufReader::new(child.stderr.take().unwrap());
    let mut first = String::new();
    err.read_line(&mut first).unwrap();
    let addr: SocketAddr = first.split_whitespace().find_map(|w| w.parse().ok()).unwrap_or_else(|| panic!("{first:?}"));
    let lines = std::sync::Arc::new(std::sync::Mutex::new(Vec::<(Instant, String)>::new()));
    let sink = lines.clone();
    std::thread::spawn(move || {
        for l in err.lines().map_while(Result::ok) {
            sink.lock().unwrap().push((Instant::now(), l));
        }
    });
    let began = Instant::now();
    // From 10 networks: one would be held to its 8 places in the handshake (issue 27 §1).
    let held: Vec<TcpStream> = (0..80).filter_map(|i| connect_from([127, 30 + (i / 8) as u8, 0, 1], addr).ok()).collect();
    std::thread::sleep(Duration::from_secs(3));
    let in_3_s = lines.lock().unwrap().iter().filter(|(t, _)| t.duration_since(began) < Duration::from_secs(3)).count();
    let log: Vec<String> = lines.lock().unwrap().iter().map(|(_, l)| l.clone()).collect();
    eprintln!("{} connections held; {in_3_s} log lines in 3 s: {log:#?}", held.len());
    assert!(log.iter().any(|l| l.contains("accept: ") && l.contains("waiting")), "never ran out of descriptors: {log:#?}");
    assert!(in_3_s <= 10, "{in_3_s} log lines in 3 s");
    drop(held);
    std::thread::sleep(Duration::from_secs(3));
    Client::connect(addr, &secret).expect("serving again once the descriptors are back");
    let _ = child.kill();
    let _ = child.wait();
    let _ = std::fs::remove_dir_all(&dir);
}

/// An outsider cannot hold a bulk test's data port: silent connections from another address
/// are closed at once, and silent ones from the client's own address wait for their tokens
/// side by side, not in turn (the audit: one at a time, 2 s each); the real flow gets in at
/// once and the test is connected.
#[test]
fn silent_connections_do_not_block_a_data_port() {
    if !have_root() {
        return;
    }
    let (dir, _, secret, serve) = loopback_serve("data-port", &[]);
    let c = session(serve.addr, &secret);
    c.send(&ClientMsg::Run { test: TestRequest::Bulk(bulk_spec("cubic", 1.0)) }).unwrap();
    let ServerMsg::Ready { port, token, .. } = c.recv::<ServerMsg>().unwrap() else { panic!("no ready") };
    let data = SocketAddr::new(serve.addr.ip(), port);
    let outsiders: Vec<TcpStream> = (0..10).map(|_| connect_from([127, 0, 0, 2], data).unwrap()).collect();
    let silent: Vec<TcpStream> = (0..6).map(|_| TcpStream::connect(data).unwrap()).collect();
    std::thread::sleep(Duration::from_millis(200));
    let t = Instant::now();
    let mut flow = TcpStream::connect(data).unwrap();
    flow.write_all(&[&unhex::<16>(&token).unwrap()[..], &0u32.to_be_bytes()].concat()).unwrap();
    match c.recv::<ServerMsg>() {
        Ok(ServerMsg::Connected { cc_read_back }) => assert_eq!(cc_read_back, ["cubic"]),
        other => panic!("{other:?}"),
    }
    let took = t.elapsed();
    eprintln!("connected beside 10 outsiders and 6 silent connections in {took:?}");
    assert!(took < Duration::from_secs(1), "{took:?}");
    for mut o in outsiders {
        o.set_read_timeout(Some(Duration::from_secs(1))).unwrap();
        assert!(matches!(o.read(&mut [0u8; 1]), Ok(0) | Err(_)), "an outsider got a byte");
    }
    drop(silent);
    c.send(&ClientMsg::Start).unwrap();
    let _ = std::fs::remove_dir_all(&dir);
}

/// A session that runs no test is closed after `--idle-timeout` (the audit: one that sent
/// `check` every 50 s kept its slot for ever), however often it checks, and its slot is free
/// again: with `--max-clients 1`, a second client gets in.
#[test]
fn an_idle_session_is_closed_even_if_it_keeps_checking() {
    let (dir, _, secret, serve) = loopback_serve("idle", &["--idle-timeout", "2s", "--max-clients", "1"]);
    let c = session(serve.addr, &secret);
    let began = Instant::now();
    let closed = loop {
        assert!(began.elapsed() < Duration::from_secs(6), "a session that only checks still open after 6 s, 3 times its --idle-timeout");
        std::thread::sleep(Duration::from_millis(250));
        if c.send(&ClientMsg::Check { test: TestRequest::Bulk(bulk_spec("cubic", 1.0)) }).is_err() {
            panic!("the session ended without a word after {:?}", began.elapsed());
        }
        match c.recv::<ServerMsg>() {
            Ok(ServerMsg::Allowed) => continue,
            Ok(ServerMsg::Error { message }) => break (message, began.elapsed()),
            other => panic!("{other:?}"),
        }
    };
    eprintln!("closed after {:?}: {}", closed.1, closed.0);
    assert!(closed.0.contains("no test for 2s (--idle-timeout)"), "{}", closed.0);
    assert!(closed.1 >= Duration::from_millis(1900), "closed after {:?}, before its --idle-timeout of 2 s", closed.1);
    assert!(serve.log().contains("closing the session: no test for 2s"), "{}", serve.log());
    // The slot is free: the one client allowed gets in.
    drop(session(serve.addr, &secret));
    drop(c);
    let _ = std::fs::remove_dir_all(&dir);
}

/// The data ports answer only the control connection's peer. An outsider on another loopback
/// address (127.0.0.2) that even holds the test's token gets nothing from a bulk, an HTTP or a
/// QUIC data port, and its silent connections (70 on the HTTP port, a QUIC handshake in
/// flight) do not keep the client's own connections (from 127.0.0.1) from running the test.
#[test]
fn data_ports_answer_only_the_control_connections_peer() {
    // serve sets cubic on its TCP data sockets, which only root may where it is not allowed.
    if !have_root() {
        return;
    }
    let (dir, _, secret, serve) = loopback_serve("peer-only", &["--max-tests-per-minute", "1000"]);
    let outsider_gets = |mut s: TcpStream| {
        s.set_read_timeout(Some(Duration::from_secs(2))).unwrap();
        let mut got = Vec::new();
        let _ = s.read_to_end(&mut got);
        got.len()
    };

    // Bulk: the outsider presents the token for flow 0 first; the client's flow is the one taken.
    let c = session(serve.addr, &secret);
    c.send(&ClientMsg::Run { test: TestRequest::Bulk(bulk_spec("cubic", 1.0)) }).unwrap();
    let ServerMsg::Ready { port, token, .. } = c.recv::<ServerMsg>().unwrap() else { panic!("no ready") };
    let hello = [&unhex::<16>(&token).unwrap()[..], &0u32.to_be_bytes()].concat();
    let data = SocketAddr::new(serve.addr.ip(), port);
    let mut outsider = connect_from([127, 0, 0, 2], data).unwrap();
    let _ = outsider.write_all(&hello);
    std::thread::sleep(Duration::from_millis(200));
    let mut flow = TcpStream::connect(data).expect("the client's flow: the port was closed after taking another connection");
    flow.write_all(&hello).unwrap();
    assert!(matches!(c.recv::<ServerMsg>(), Ok(ServerMsg::Connected { .. })), "the client's flow was not taken");
    c.send(&ClientMsg::Start).unwrap();
    flow.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
    assert!(flow.read(&mut [0u8; 1024]).unwrap() > 0, "the client's flow got no data");
    assert_eq!(outsider_gets(outsider), 0, "bulk: an outsider with the token got data");
    drop((flow, c));

    // HTTP (objects): the outsider sends the token and a request first.
    let c = session(serve.addr, &secret);
    c.send(&ClientMsg::Run { test: TestRequest::Objects(objects_spec(2, 1000, 1)) }).unwrap();
    let ServerMsg::Ready { port, token, .. } = c.recv::<ServerMsg>().unwrap() else { panic!("no ready") };
    c.send(&ClientMsg::Start).unwrap();
    let hello = [&unhex::<16>(&token).unwrap()[..], &0u32.to_be_bytes()].concat();
    let data = SocketAddr::new(serve.addr.ip(), port);
    // More silent outsiders than the 64 connections the port lets wait for their tokens.
    let silent: Vec<TcpStream> = (0..70).filter_map(|_| connect_from([127, 0, 0, 2], data).ok()).collect();
    let mut outsider = connect_from([127, 0, 0, 2], data).unwrap();
    let _ = outsider.write_all(&[&hello[..], b"GET /obj/0 HTTP/1.1\r\nHost: x\r\n\r\n"].concat());
    assert_eq!(outsider_gets(outsider), 0, "HTTP: an outsider with the token got a response");
    let mut conn = TcpStream::connect(data).unwrap();
    conn.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
    conn.write_all(&hello).unwrap();
    assert_eq!(http_get(&mut conn, "/obj/0"), (200, 1000));
    assert_eq!(http_get(&mut conn, "/obj/1"), (200, 1000));
    drop((conn, silent));
    c.send(&ClientMsg::Stop).unwrap();
    let mut accepted = 0;
    loop {
        match c.recv::<ServerMsg>() {
            Ok(ServerMsg::HttpDone { .. }) => break,
            Ok(ServerMsg::Accepted { .. }) => accepted += 1,
            Ok(ServerMsg::ConnectionSample { .. } | ServerMsg::ConnectionEnd { .. }) => continue,
            other => panic!("{other:?}"),
        }
    }
    assert_eq!(accepted, 1, "serve took in a connection besides the client's");
    drop(c);

    // QUIC: the outsider's handshake, with the token and the certificate, goes first.
    let c = session(serve.addr, &secret);
    let spec = quic_spec(&["quic:cubic"], 1.0);
    c.send(&ClientMsg::Run { test: TestRequest::Bulk(spec.clone()) }).unwrap();
    let ServerMsg::QuicReady { port, token, cert } = c.recv::<ServerMsg>().unwrap() else { panic!("no QUIC ready") };
    let (token, cert) = (unhex::<16>(&token).unwrap(), proto::unhex_vec(&cert, 65536).unwrap());
    let data = SocketAddr::new(serve.addr.ip(), port);
    let outsider = {
        let (spec, cert) = (spec.clone(), cert.clone());
        std::thread::spawn(move || {
            let mut q = ccbench_workload::QuicFarClient::new(data, cert, &spec).unwrap().from_ip([127, 0, 0, 2].into());
            q.connect_next(&token).map_err(|e| e.to_string())
        })
    };
    std::thread::sleep(Duration::from_millis(300));
    let mut client = ccbench_workload::QuicFarClient::new(data, cert, &spec).unwrap();
    assert_eq!(client.connect_next(&token).unwrap(), "quic:cubic");
    match c.recv::<ServerMsg>() {
        Ok(ServerMsg::QuicConnected { conn: 0, read_back }) => assert_eq!(read_back, "quic:cubic"),
        other => panic!("{other:?}"),
    }
    match outsider.join().unwrap() {
        Err(e) => assert!(e.contains("timed out"), "the outsider's handshake: {e}"),
        Ok(rb) => panic!("QUIC: an outsider with the token and certificate was let in ({rb})"),
    }
    client.close();
    drop(c);
    drop(serve);
    let _ = std::fs::remove_dir_all(&dir);
}

/// `--max-tests-per-minute` counts the holders of the secret together, not each source address
/// (the audit: it was per address, so rotating addresses lifted it): two tests from 127.0.0.1
/// and 127.0.0.2 use up a limit of 2, and a third from 127.0.0.3 is refused.
#[test]
fn tests_per_minute_are_counted_per_secret_not_per_address() {
    // serve sets cubic on its data sockets, which only root may where it is not allowed.
    if !have_root() {
        return;
    }
    let (dir, _, secret, serve) = loopback_serve("per-secret", &["--max-tests-per-minute", "2"]);
    let run_from = |source: [u8; 4]| {
        let stream = connect_from(source, serve.addr).unwrap();
        let c = Channel::connect(stream, &secret, Instant::now() + Duration::from_secs(10)).unwrap();
        c.stream().set_read_timeout(Some(Duration::from_secs(20))).unwrap();
        assert!(matches!(c.recv::<ServerMsg>().unwrap(), ServerMsg::Welcome { .. }));
        c.send(&ClientMsg::Run { test: TestRequest::Bulk(bulk_spec("cubic", 1.0)) }).unwrap();
        // Admitted or not is decided here; the test itself is left to fail (its flow never comes).
        c.recv::<ServerMsg>().unwrap()
    };
    assert!(matches!(run_from([127, 0, 0, 1]), ServerMsg::Ready { .. }));
    assert!(matches!(run_from([127, 0, 0, 2]), ServerMsg::Ready { .. }));
    match run_from([127, 0, 0, 3]) {
        ServerMsg::Refused { reason } => assert!(reason.contains("--max-tests-per-minute"), "{reason}"),
        other => panic!("a third test in a minute from a third address: {other:?}"),
    }
    let _ = std::fs::remove_dir_all(&dir);
}

/// A server that trickles its answer to the handshake (the audit: a trickled challenge kept
/// the client waiting 45 s past its 15 s timeout) is given up at the client's whole-handshake
/// deadline, in one error.
#[test]
fn a_trickling_server_is_given_up_at_the_handshake_deadline() {
    let dir = tempdir("trickle");
    let secret = Secret::from_file(&secret_file(&dir, "secret")).unwrap();
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    std::thread::spawn(move || {
        let (mut s, _) = listener.accept().unwrap();
        // A frame header announcing 64 bytes, then one byte of them every 2 s.
        let _ = s.write_all(&64u32.to_be_bytes());
        for _ in 0..64 {
            std::thread::sleep(Duration::from_secs(2));
            if s.write_all(&[0x41]).is_err() {
                return;
            }
        }
    });
    let t = Instant::now();
    let e = Client::connect(addr, &secret).err().expect("a trickled handshake was taken");
    let took = t.elapsed();
    eprintln!("the client gave up after {took:?}: {e}");
    assert!(took < Duration::from_secs(25), "the client waited {took:?} for a trickling server (its deadline is 15 s)");
    assert!(e.to_string().contains("within 15 s: the handshake did not finish") && !e.to_string().contains('\n'), "{e}");
    let _ = std::fs::remove_dir_all(&dir);
}
