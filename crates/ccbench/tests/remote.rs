//! `ccbench serve` and `ccbench run --remote`: the real binaries, the far end behind an emulated
//! path (`ccbench exec --server-cmd`), checked against the emulated run of the same path, the
//! emulator's own counters, and garbage thrown at a live serve.
//!
//! Tests with namespaces need root: outside CI they skip without it; under `CI=true` they fail.
//! They run one at a time (a global lock), as throughput tests on two cores would otherwise
//! measure each other. The tests on loopback need no root.

mod common;

use std::fs::File;
use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::os::unix::fs::PermissionsExt;
use std::path::Path;
use std::process::{Command, Output};
use std::sync::atomic::AtomicBool;
use std::time::{Duration, Instant};

use ccbench_remote::proto::{self, hex, unhex, ClientMsg, ServerMsg};
use ccbench_remote::{Client, RemoteError, Secret, TestRequest};
use common::{
    ccbench, counted_through_serve, exec_with_serve, have_root_and_tun as have_root, lock, one_line, result, run_ok, secret_file, serve_addr, tempdir, text,
    LiveServe, BIN,
};
use rand::{Rng, SeedableRng};
use serde_json::Value;

/// `ccbench exec PATH --server-cmd "ccbench serve …" -- sh -c CLIENT`: `$R` in `client` is
/// `ccbench run --remote SERVER:PORT --secret-file CLIENT_SECRET`.
fn exec_remote(path: &[&str], server_secret: &Path, serve_flags: &str, client_secret: &Path, client: &str) -> Output {
    exec_with_serve(path, server_secret, serve_flags, &format!("R=\"{BIN} run --remote $S --secret-file {}\"; {client}", client_secret.display()))
}

fn mean_goodput(v: &Value, cc: &str) -> f64 {
    let xs: Vec<f64> = v["runs"].as_array().unwrap().iter().filter(|r| r["cc"] == cc).map(|r| r["metrics"]["goodput_bps"].as_f64().unwrap()).collect();
    assert!(!xs.is_empty(), "no runs of {cc}");
    xs.iter().sum::<f64>() / xs.len() as f64
}

/// The same experiment over the same emulated path, once with both ends in ccbench (emulated)
/// and once with the far end in `ccbench serve` behind that path (remote): the same verdict,
/// and each algorithm's mean goodput within 10 %.
///
/// The path (50 Mbit/s, 10 ms, 2 % random loss) makes the verdict clear: BBR keeps near the
/// link rate, CUBIC is held near the Mathis bound, 1.22·MSS/(RTT·√p) ≈ 10 Mbit/s. Measured, a
/// CUBIC run's goodput varies by ~6.5 % (sd) from run to run; the mean of 8 runs by ~2.3 %, and
/// the difference of two means by ~3.3 %: 10 % is ~3 σ (a false failure in ~1 of 400 runs).
/// (With 4 runs it was ~2.2 σ, and CI failed on it once, at -11 %: one remote run had started
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
    let common = "--cc bbr,cubic --runs 8 --duration 8s";
    let emulated_out = dir.join("emulated");
    run_ok(&[&path[..], &common.split(' ').collect::<Vec<_>>()].concat(), &emulated_out);
    let remote_out = dir.join("remote");
    let o = exec_remote(&path, &secret, "", &secret, &format!("$R {common} --out {}", remote_out.display()));
    assert!(o.status.success(), "{}", text(&o));
    let stderr = String::from_utf8_lossy(&o.stderr);
    assert_eq!(stderr.lines().filter(|l| l.contains("ccbench serve: 10.") && l.contains("bulk download 8 s")).count(), 16, "one log line per test:\n{stderr}");

    let (e, r) = (result(&emulated_out), result(&remote_out));
    for v in [&e, &r] {
        let c = &v["comparisons"][0];
        assert_eq!((c["a"].as_str(), c["better"].as_str(), c["significant"].as_bool()), (Some("bbr"), Some("bbr"), Some(true)), "{c}");
    }
    for cc in ["bbr", "cubic"] {
        let (ge, gr) = (mean_goodput(&e, cc), mean_goodput(&r, cc));
        eprintln!("{cc}: remote/emulated goodput {:.3}", gr / ge);
        assert!((gr / ge - 1.0).abs() < 0.10, "{cc}: emulated {ge:.0} bit/s, remote {gr:.0} bit/s");
    }
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
        let tcp = remote_out.join(run["series"]["tcp"].as_str().unwrap());
        let mut rows = String::new();
        flate2::read::MultiGzDecoder::new(File::open(tcp).unwrap()).read_to_string(&mut rows).unwrap();
        let samples = rows.lines().filter(|l| l.starts_with("flow-0,")).count();
        // 10 ms sampling over 8 s: ~800 samples; a loose floor.
        assert!(samples > 400, "{} samples of the server's socket", samples);
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
         $R --cc cubic --runs 1 --duration 2s --out {d}/budget; echo budget=$?"
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
    for (marker, limit) in [("duration=2", "--max-duration"), ("bytes=2", "--max-bytes"), ("clients=2", "--max-clients")] {
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
    one_line_exit_2(&ccbench(&["serve", "--secret-file", &empty.display().to_string()]), "at least 16");
    let good = secret_file(&dir, "good").display().to_string();
    one_line_exit_2(&ccbench(&["run", "--secret-file", &good]), "--remote");
    one_line_exit_2(&ccbench(&["run", "--remote", "127.0.0.1:9", "--secret-file", &good, "--rate", "10mbit"]), "emulated-path flags");
    one_line_exit_2(&ccbench(&["run", "--remote", "no-port", "--secret-file", &good]), "HOST:PORT");
    one_line_exit_2(&ccbench(&["serve", "--secret-file", &good, "--listen", "localhost"]), "--listen");
    one_line_exit_2(&ccbench(&["serve", "--secret-file", &good, "--max-clients", "0"]), "--max-clients");
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
    let mut s = TcpStream::connect(addr).unwrap();
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
    let dir = tempdir("fuzz");
    let secret_path = secret_file(&dir, "secret");
    let secret = Secret::from_file(&secret_path).unwrap();
    let mut serve = LiveServe::start(&secret_path, &["--max-clients", "64", "--max-tests-per-minute", "1000"]);
    let addr = serve.addr;
    // A client that never speaks: it must not hold its slot past the handshake timeout.
    let mut silent = TcpStream::connect(addr).unwrap();
    let silent_since = Instant::now();

    let mut rng = rand::rngs::StdRng::seed_from_u64(0xcc_be4c);
    let hello = frame(format!(r#"{{"type":"hello","version":{},"nonce":"{}"}}"#, proto::VERSION, hex(&[3; 32])).as_bytes());
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
        let back = throw(addr, &input);
        // Nothing but frames comes back, each a challenge or an error, and never a Welcome.
        for m in proto::decode_stream_server(&back) {
            match m {
                Ok(ServerMsg::Challenge { .. }) | Ok(ServerMsg::Error { .. }) => {}
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
        cc: cc.into(),
        mix: Vec::new(),
        port: 0,
        sample_interval_us: 10_000,
        timeout_s: 10.0,
        quic_receiver_cc: None,
    };
    match client.check(&TestRequest::Bulk(spec("vegas9"))) {
        Err(RemoteError::Refused(r)) => assert!(r.contains("no congestion control \"vegas9\"") && r.contains("cubic"), "{r}"),
        other => panic!("{other:?}"),
    }
    // A test over loopback runs, with the server's samples merged in.
    let series = ccbench_workload::MemorySeries::default();
    let stop = AtomicBool::new(false);
    let r = client.run_bulk(&spec("cubic"), Instant::now(), &stop, &series).unwrap();
    assert!(r.flows[0].bytes_received > 1_000_000 && r.flows[0].cc_read_back == "cubic", "{r:?}");
    assert!(series.samples(ccbench_workload::SocketId::Flow(0)).len() > 20, "the server's samples came back");

    // A data connection with a wrong token gets nothing, not one byte.
    let mut c = TcpStream::connect(addr).unwrap();
    handshake(&mut c, &secret);
    proto::write_msg(&mut c, &ClientMsg::Run { test: TestRequest::Bulk(spec("cubic")) }).unwrap();
    let ServerMsg::Ready { port, token, .. } = proto::read_msg::<ServerMsg>(&mut c).unwrap() else { panic!("no ready") };
    let mut wrong = unhex::<16>(&token).unwrap();
    wrong[0] ^= 1;
    let mut data = TcpStream::connect((addr.ip(), port)).unwrap();
    data.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
    data.write_all(&[&wrong[..], &0u32.to_be_bytes()].concat()).unwrap();
    let mut got = Vec::new();
    let _ = data.read_to_end(&mut got);
    assert!(got.is_empty(), "{} bytes sent to a connection with a wrong token", got.len());
    // The test that never got its connection is given up, with an error, and serve goes on.
    c.set_read_timeout(Some(Duration::from_secs(20))).unwrap();
    match proto::read_msg::<ServerMsg>(&mut c) {
        Ok(ServerMsg::Error { message }) => assert!(message.contains("data connections arrived"), "{message}"),
        other => panic!("{other:?}"),
    }

    // The silent client was dropped at the handshake timeout (10 s), with an error frame.
    silent.set_read_timeout(Some(Duration::from_secs(20))).unwrap();
    let before_read = silent_since.elapsed();
    let mut back = Vec::new();
    let _ = silent.read_to_end(&mut back);
    // Closed by 15 s after it connected (10 s and a margin), or already closed when read.
    let by = before_read.max(Duration::from_secs(15)) + Duration::from_secs(1);
    assert!(silent_since.elapsed() < by, "a silent client held its slot for {:?}", silent_since.elapsed());
    assert!(matches!(proto::decode_stream_server(&back).first(), Some(Ok(ServerMsg::Error { .. }))), "{back:?}");
    assert!(serve.alive());
    Client::connect(addr, &secret).expect("still serving");
    eprintln!("{inputs} fuzzed control inputs thrown at a live serve");
    let _ = std::fs::remove_dir_all(&dir);
}

fn handshake(c: &mut TcpStream, secret: &Secret) {
    let nc = ccbench_remote::auth::nonce();
    proto::write_msg(c, &ClientMsg::Hello { version: proto::VERSION, nonce: hex(&nc) }).unwrap();
    let ServerMsg::Challenge { nonce, .. } = proto::read_msg::<ServerMsg>(c).unwrap() else { panic!() };
    let ns = unhex::<32>(&nonce).unwrap();
    proto::write_msg(c, &ClientMsg::Auth { proof: hex(&secret.client_proof(&nc, &ns)) }).unwrap();
    assert!(matches!(proto::read_msg::<ServerMsg>(c).unwrap(), ServerMsg::Welcome { .. }));
}

/// The mean over runs of `cc` of `f(run)`.
fn mean_by(v: &Value, cc: &str, f: impl Fn(&Value) -> Option<f64>) -> f64 {
    let xs: Vec<f64> = v["runs"].as_array().unwrap().iter().filter(|r| r["cc"] == cc).map(|r| f(r).unwrap_or_else(|| panic!("no figure in {r}"))).collect();
    assert!(!xs.is_empty(), "no runs of {cc}");
    xs.iter().sum::<f64>() / xs.len() as f64
}

/// `ccbench run PATH ARGS --out OUT` on the emulated path, then the same through serve behind
/// that path; both results.
fn emulated_and_remote(dir: &Path, path: &[&str], args: &str) -> (Value, Value) {
    let secret = secret_file(dir, "secret");
    let emulated_out = dir.join("emulated");
    run_ok(&[path, &args.split(' ').collect::<Vec<_>>()].concat(), &emulated_out);
    let remote_out = dir.join("remote");
    let o = exec_remote(path, &secret, "", &secret, &format!("$R {args} --out {}", remote_out.display()));
    assert!(o.status.success(), "{}", text(&o));
    (result(&emulated_out), result(&remote_out))
}

fn same_verdict(e: &Value, r: &Value, winner: &str) {
    for v in [e, r] {
        let c = &v["comparisons"][0];
        assert_eq!((c["better"].as_str(), c["significant"].as_bool()), (Some(winner), Some(true)), "{c}");
    }
}

/// The rows of a run's `tcp.csv.gz` whose socket starts with `prefix`.
fn series_rows(out: &Path, run: &Value, prefix: &str) -> usize {
    let mut rows = String::new();
    flate2::read::MultiGzDecoder::new(File::open(out.join(run["series"]["tcp"].as_str().unwrap())).unwrap()).read_to_string(&mut rows).unwrap();
    rows.lines().filter(|l| l.starts_with(prefix)).count()
}

/// Objects (GET, so the server's sockets send) through serve behind an emulated path give the
/// verdict of the emulated run, with each algorithm's mean content throughput within 10 %.
///
/// 50 Mbit/s, 10 ms, 2 % loss: BBR fills the link, CUBIC is held near its Mathis bound (the
/// emulated run measured 3× apart). 16 objects of 1 MB on 2 connections: a CUBIC run moves
/// 16 MB in ~9 s with ~200 losses, so its throughput varies by a few % between runs; the mean
/// of 4 by ~3 %, the difference of two means by ~4 %: 10 % is ~2.5 σ.
#[test]
fn objects_over_remote_give_the_same_verdict_and_throughput_as_emulated() {
    let _g = lock();
    if !have_root() {
        return;
    }
    let dir = tempdir("objects");
    let path = ["--rate", "50mbit", "--rtt", "10ms", "--loss", "2%"];
    let (e, r) = emulated_and_remote(&dir, &path, "--workload objects --method get --requests 16 --size 1mb --concurrency 2 --cc bbr,cubic --runs 4");
    same_verdict(&e, &r, "bbr");
    for cc in ["bbr", "cubic"] {
        let tput = |v: &Value| mean_by(v, cc, |run| run["workload"]["content_throughput_bps"].as_f64());
        let (te, tr) = (tput(&e), tput(&r));
        eprintln!("objects {cc}: emulated {:.1} Mbit/s, remote {:.1} Mbit/s ({:+.1} %)", te / 1e6, tr / 1e6, (tr / te - 1.0) * 100.0);
        assert!((tr / te - 1.0).abs() < 0.10, "{cc}: emulated {te:.0} bit/s, remote {tr:.0} bit/s");
    }
    for run in r["runs"].as_array().unwrap() {
        let w = &run["workload"];
        assert_eq!((w["requests_completed"].as_u64(), w["errors"].as_u64(), w["server_connections"].as_u64()), (Some(16), Some(0), Some(2)), "{w}");
        for c in w["connections"].as_array().unwrap() {
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
/// mean is held to within 25 % of the emulated one, not 10 %.
#[test]
fn a_page_loads_over_remote_as_over_the_emulated_path() {
    let _g = lock();
    if !have_root() {
        return;
    }
    let dir = tempdir("page");
    let path = ["--rate", "20mbit", "--rtt", "20ms"];
    let (e, r) = emulated_and_remote(&dir, &path, "--workload page --page news --cc cubic --runs 3");
    let load = |v: &Value| mean_by(v, "cubic", |run| run["workload"]["page_load_s"].as_f64());
    let (le, lr) = (load(&e), load(&r));
    eprintln!("page news: emulated {le:.3} s, remote {lr:.3} s ({:+.1} %)", (lr / le - 1.0) * 100.0);
    assert!((lr / le - 1.0).abs() < 0.25, "page load: emulated {le:.3} s, remote {lr:.3} s");
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
    if std::env::split_paths(&std::env::var_os("PATH").unwrap_or_default()).any(|d| d.join("chromium").is_file()) {
        return true;
    }
    assert!(
        std::env::var("CI").map(|v| v != "true").unwrap_or(true),
        "browser test cannot run under CI=true: no chromium on the PATH (scripts/test installs it)"
    );
    eprintln!("skipping: no chromium on the PATH");
    false
}

fn median(mut xs: Vec<f64>) -> f64 {
    xs.sort_by(f64::total_cmp);
    xs[xs.len() / 2]
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
///   every HTML first byte there is at least a round trip in, and the median load is at least a
///   third of the theory's 11 × 18 ms longer than on the 2 ms path. The rest absorbs the
///   browser's CPU time, which on this shared machine swings by more than the round trips:
///   measured medians 0.214 s and 0.362 s (10 loads each), 0.301 s and 0.446 s, and once,
///   under a burst of builds, 0.414 s and 0.509 s (2 ms loads of 0.32–0.69 s, all CPU);
/// - remote against emulated on the same 20 ms path: medians within 35 %. The relay adds
///   ~20 µs per exchange (its unit test), nothing a load can show; what is left is CPU time
///   on a loaded 2-core machine, where the remote setup runs two more processes in the data's
///   way (serve, and the relay beside Chromium). Measured, 10 interleaved loads each: remote
///   7 % faster at a load average of 5, 23 % slower at 5–10; 7 each: −0 %, +12 %, +12 %.
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
    let (m2, m20, me) = (median(r2), median(r20), median(e20));
    eprintln!("medians: remote 2 ms {m2:.3} s, remote 20 ms {m20:.3} s, emulated 20 ms {me:.3} s (remote {:+.1} %)", (m20 / me - 1.0) * 100.0);
    let theory = 11.0 * 0.018;
    assert!(m20 - m2 >= theory / 3.0, "remote: 20 ms path median {m20:.3} s is not {:.3} s above the 2 ms path's {m2:.3} s", theory / 3.0);
    assert!((m20 / me - 1.0).abs() < 0.35, "the same 20 ms path: remote median {m20:.3} s, emulated {me:.3} s");

    let h2 = dir.join("page12.json");
    std::fs::write(&h2, format!("{{\"html_bytes\": 20000, \"objects\": [{}]}}", ["150000"; 12].join(","))).unwrap();
    let run = browser_load(&dir, "h2", true, "20ms", &h2.display().to_string(), "2");
    // TCP, TLS 1.3 and the request: three round trips, less the handshake's that may begin
    // before the browser's time origin.
    let ttfb = run["workload"]["browser"]["response_start_s"].as_f64().unwrap();
    assert!(ttfb >= 2.0 * 0.020 * 0.98, "HTML first byte at {ttfb} s over HTTP/2 through a 20 ms path");
    let _ = std::fs::remove_dir_all(&dir);
}

/// QUIC bulk through serve behind an emulated path: the verdict of the emulated run, each
/// algorithm's mean goodput within 10 %, the controller read back from both ends, and the
/// server's QUIC samples streamed back.
///
/// 20 Mbit/s, 10 ms, 2 % loss: BBRv3 keeps near the link rate, CUBIC near its loss bound; 5 s
/// runs see ~100 losses each (variance as in the TCP test above).
#[test]
fn quic_over_remote_matches_emulated_quic() {
    let _g = lock();
    if !have_root() {
        return;
    }
    let dir = tempdir("quic");
    let path = ["--rate", "20mbit", "--rtt", "10ms", "--loss", "2%"];
    let (e, r) = emulated_and_remote(&dir, &path, "--cc quic:cubic,quic:bbr3 --runs 4 --duration 5s");
    same_verdict(&e, &r, "quic:bbr3");
    for cc in ["quic:cubic", "quic:bbr3"] {
        let (ge, gr) = (mean_goodput(&e, cc), mean_goodput(&r, cc));
        eprintln!("{cc}: emulated {:.1} Mbit/s, remote {:.1} Mbit/s ({:+.1} %)", ge / 1e6, gr / 1e6, (gr / ge - 1.0) * 100.0);
        assert!((gr / ge - 1.0).abs() < 0.10, "{cc}: emulated {ge:.0} bit/s, remote {gr:.0} bit/s");
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
        cc: "cubic".into(),
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
        cc: mix[0].into(),
        mix: if mix.len() > 1 { mix.iter().map(|c| ccbench_workload::MixFlow { cc: c.to_string(), start_s: 0.0 }).collect() } else { Vec::new() },
        port: 0,
        sample_interval_us: 10_000,
        timeout_s: 10.0,
        quic_receiver_cc: None,
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
    let dir = tempdir("gates");
    let secret_path = secret_file(&dir, "secret");
    let secret = Secret::from_file(&secret_path).unwrap();
    let serve = LiveServe::start(&secret_path, &["--max-bytes", "1mb", "--max-tests-per-minute", "1000"]);
    let mut client = Client::connect(serve.addr, &secret).unwrap();
    let page = |name: &str| ccbench_workload::PageSpec {
        page: ccbench_workload::PageModel::builtin(name).unwrap(),
        protocol: ccbench_workload::PageProtocol::default(),
        cc: "cubic".into(),
        port: 0,
        sample_interval_us: 10_000,
        timeout_s: 20.0,
    };
    for (test, needle) in [
        (TestRequest::Objects(objects_spec(200, 1 << 20, 4)), "limit of 1000000 bytes per test (--max-bytes)"),
        (TestRequest::Objects(objects_spec(4, 1000, 100)), "100 connections is over this server's limit of 64"),
        (TestRequest::Objects(ccbench_workload::ObjectsSpec { cc: "vegas9".into(), ..objects_spec(4, 1000, 1) }), "no congestion control \"vegas9\""),
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
    let o = client.run_objects(&objects_spec(4, 100_000, 2), Instant::now(), &stop, &series).unwrap();
    assert_eq!((o.requests_completed, o.server_connections, o.errors), (4, 2, 0), "{o:?}");
    assert!(o.connections.iter().all(|c| c.cc_read_back.as_deref() == Some("cubic") && c.final_tcp_info.is_some()), "{o:?}");
    assert!(o.connections.iter().all(|c| !series.samples(ccbench_workload::SocketId::Connection(c.client_port)).is_empty()));

    // QUIC, stopped by the byte limit while it runs.
    let q = client.run_bulk(&quic_spec(&["quic:cubic"], 3.0), Instant::now(), &stop, &series).unwrap();
    let f = &q.flows[0];
    assert!(f.bytes_received <= 1_000_000 && f.bytes_received > 0, "{f:?}");
    assert!(f.error.as_deref().unwrap_or_default().contains("--max-bytes"), "{f:?}");
    assert_eq!((f.cc_read_back.as_str(), f.cc_receiver.as_deref()), ("quic:cubic", Some("quic:cubic")));

    // A data connection without the token, a request behind it: not one byte back.
    let mut c = TcpStream::connect(serve.addr).unwrap();
    handshake(&mut c, &secret);
    proto::write_msg(&mut c, &ClientMsg::Run { test: TestRequest::Objects(objects_spec(2, 1000, 1)) }).unwrap();
    let ServerMsg::Ready { port, token, .. } = proto::read_msg::<ServerMsg>(&mut c).unwrap() else { panic!("no ready") };
    proto::write_msg(&mut c, &ClientMsg::Start).unwrap();
    let mut wrong = unhex::<16>(&token).unwrap();
    wrong[15] ^= 0x80;
    let mut data = TcpStream::connect((serve.addr.ip(), port)).unwrap();
    data.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
    data.write_all(&[&wrong[..], &0u32.to_be_bytes(), b"GET /obj/0 HTTP/1.1\r\nHost: x\r\n\r\n"].concat()).unwrap();
    let mut got = Vec::new();
    let _ = data.read_to_end(&mut got);
    assert!(got.is_empty(), "{} bytes sent to a connection with a wrong token", got.len());
    // The server took no connection in, and says so when the client is done.
    proto::write_msg(&mut c, &ClientMsg::Stop).unwrap();
    c.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    match proto::read_msg::<ServerMsg>(&mut c) {
        Ok(ServerMsg::HttpDone { .. }) => {}
        other => panic!("{other:?}"),
    }
    drop(serve);
    let _ = std::fs::remove_dir_all(&dir);
}

/// serve's HTTP ends are kernel TCP: objects or a page with a `quic:` algorithm over `--remote`
/// is refused by the client after the handshake, before any test runs, in one line naming --cc.
#[test]
fn quic_objects_and_pages_over_remote_are_refused_in_one_line() {
    let dir = tempdir("quic-http");
    let secret = secret_file(&dir, "secret");
    let serve = LiveServe::start(&secret, &["--max-tests-per-minute", "1000"]);
    let (addr, secret_s) = (serve.addr.to_string(), secret.display().to_string());
    for workload in ["objects", "page"] {
        let o = ccbench(&[
            "run",
            "--remote",
            &addr,
            "--secret-file",
            &secret_s,
            "--workload",
            workload,
            "--cc",
            "cubic,quic:bbr3",
            "--runs",
            "4",
            "--out",
            &dir.join(workload).display().to_string(),
        ]);
        one_line_exit_2(&o, "--cc");
        assert!(String::from_utf8_lossy(&o.stderr).contains("quic:bbr3"), "{}", text(&o));
        assert!(!dir.join(workload).join("result.json").exists(), "nothing ran");
    }
    drop(serve);
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
    let dir = tempdir("http-cut");
    let secret_path = secret_file(&dir, "secret");
    let secret = Secret::from_file(&secret_path).unwrap();
    let serve = LiveServe::start(&secret_path, &["--max-bytes", "1mb", "--max-tests-per-minute", "1000"]);
    let mut c = TcpStream::connect(serve.addr).unwrap();
    handshake(&mut c, &secret);
    // Planned: 2 × 400 kB, within the 1 MB limit, so the check lets it run.
    proto::write_msg(&mut c, &ClientMsg::Run { test: TestRequest::Objects(objects_spec(2, 400_000, 1)) }).unwrap();
    let ServerMsg::Ready { port, token, .. } = proto::read_msg::<ServerMsg>(&mut c).unwrap() else { panic!("no ready") };
    proto::write_msg(&mut c, &ClientMsg::Start).unwrap();
    let mut data = TcpStream::connect((serve.addr.ip(), port)).unwrap();
    data.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    data.write_all(&[&unhex::<16>(&token).unwrap()[..], &0u32.to_be_bytes()].concat()).unwrap();
    // Asked: four, 1.6 MB.
    let got: Vec<(u16, usize)> = (0..4).map(|i| http_get(&mut data, &format!("/obj/{}", i % 2))).collect();
    assert_eq!(got, vec![(200, 400_000), (200, 400_000), (503, 0), (503, 0)]);
    drop(data);
    proto::write_msg(&mut c, &ClientMsg::Stop).unwrap();
    c.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    loop {
        match proto::read_msg::<ServerMsg>(&mut c) {
            Ok(ServerMsg::HttpDone { errors, error_messages }) => {
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
