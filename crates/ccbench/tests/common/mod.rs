//! What the end-to-end tests share: the binary, the gate on root (under `CI=true` a missing
//! precondition fails the test, naming its file; elsewhere the test skips), one test at a time,
//! scratch directories, output for failure messages, secret files, and `ccbench serve` behind an
//! emulated path.
#![allow(dead_code)] // each test file uses some of these

use std::ffi::OsString;
use std::fs::File;
use std::io::{BufRead, BufReader};
use std::net::SocketAddr;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use ccbench_emu::{EmulatedPath, PathReport, PathSpec, SERVER_ADDR};
use serde_json::Value;

pub const BIN: &str = env!("CARGO_BIN_EXE_ccbench");
/// The test file this module is compiled into, for messages.
pub const FILE: &str = concat!("tests/", env!("CARGO_CRATE_NAME"), ".rs");

static SERIAL: Mutex<()> = Mutex::new(());

/// One test at a time: throughput tests on a 2-core machine would otherwise measure each other.
pub fn lock() -> MutexGuard<'static, ()> {
    SERIAL.lock().unwrap_or_else(|e| e.into_inner())
}

/// True when the test may go on: `why_not` is `None`. Under `CI=true` a missing precondition
/// is a failure, not a skip.
pub fn go_on(why_not: Option<String>) -> bool {
    let Some(why) = why_not else { return true };
    let ci = std::env::var("CI").map(|v| v == "true").unwrap_or(false);
    assert!(!ci, "{FILE}: end-to-end test cannot run under CI=true: {why}");
    eprintln!("skipping: {why}");
    false
}

/// Why a browser test cannot run here, if it cannot: neither executable `--workload browser`
/// looks for (`chromium-headless-shell`, then `chromium`) is on the PATH.
pub fn no_chromium() -> Option<String> {
    let path = std::env::var_os("PATH").unwrap_or_default();
    let found = std::env::split_paths(&path).any(|d| ["chromium-headless-shell", "chromium"].iter().any(|n| d.join(n).is_file()));
    (!found).then(|| "no chromium-headless-shell or chromium on the PATH (scripts/test installs them)".to_string())
}

pub fn is_root() -> bool {
    // SAFETY: geteuid has no preconditions.
    unsafe { libc::geteuid() == 0 }
}

pub fn have_root() -> bool {
    have_root_and(&[])
}

/// Root and each of `tools` on the PATH.
pub fn have_root_and(tools: &[&str]) -> bool {
    let missing: Vec<&str> = tools.iter().copied().filter(|t| !tool_exists(t)).collect();
    go_on(if !is_root() {
        Some("not root".into())
    } else if !missing.is_empty() {
        Some(format!("missing tools: {missing:?}"))
    } else {
        None
    })
}

/// Root and a TUN device to open.
pub fn have_root_and_tun() -> bool {
    go_on(if !is_root() {
        Some("not root".into())
    } else if !Path::new("/dev/net/tun").exists() {
        Some("no /dev/net/tun".into())
    } else {
        None
    })
}

pub fn tool_exists(name: &str) -> bool {
    Command::new("sh").args(["-c", &format!("command -v {name}")]).stdout(Stdio::null()).status().map(|s| s.success()).unwrap_or(false)
}

/// A path in the temp directory, for `tag`, that nothing else in any test uses and that does not
/// exist (for `--out`, which ccbench itself must create).
pub fn out_path(tag: &str) -> PathBuf {
    static NEXT: AtomicU32 = AtomicU32::new(0);
    let n = NEXT.fetch_add(1, Ordering::SeqCst);
    let d = std::env::temp_dir().join(format!("ccbench-{}-{tag}-{}-{n}", env!("CARGO_CRATE_NAME"), std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    d
}

/// As [`out_path`], made: an empty directory.
pub fn tempdir(tag: &str) -> PathBuf {
    let d = out_path(tag);
    std::fs::create_dir_all(&d).unwrap();
    d
}

pub fn ccbench(args: &[&str]) -> Output {
    Command::new(BIN).args(args).output().expect("run ccbench")
}

/// Everything a process said, for a failure message.
pub fn text(o: &Output) -> String {
    format!("status {:?}\nstdout:\n{}\nstderr:\n{}", o.status.code(), String::from_utf8_lossy(&o.stdout), String::from_utf8_lossy(&o.stderr))
}

/// `what`'s stdout, which must have succeeded.
pub fn ok(o: &Output, what: &str) -> String {
    assert!(o.status.success(), "{what} failed: {}", text(o));
    String::from_utf8_lossy(&o.stdout).into_owned()
}

/// `ccbench ARGS`, which must succeed: its stdout.
pub fn ccbench_ok(args: &[&str]) -> String {
    ok(&ccbench(args), &format!("ccbench {args:?}"))
}

/// `ccbench run ARGS --out OUT`, which must succeed: its stdout.
pub fn run_ok(args: &[&str], out: &Path) -> String {
    let out_s = out.to_string_lossy();
    ccbench_ok(&[&["run"], args, &["--out", &out_s]].concat())
}

/// A failure of exit status `code` with one line on stderr, which holds `needle`.
pub fn one_line(o: &Output, code: i32, needle: &str) {
    let stderr = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(code), "{}", text(o));
    assert_eq!(stderr.lines().count(), 1, "{}", text(o));
    assert!(stderr.contains(needle), "{needle}: {}", text(o));
}

pub fn json(file: &Path) -> Value {
    serde_json::from_str(&std::fs::read_to_string(file).unwrap_or_else(|e| panic!("{}: {e}", file.display()))).expect("valid JSON")
}

/// The result.json in `dir`.
pub fn result(dir: &Path) -> Value {
    json(&dir.join("result.json"))
}

pub fn f(v: &Value) -> f64 {
    v.as_f64().unwrap_or_else(|| panic!("not a number: {v}"))
}

/// A run's `tcp.csv.gz` (its sockets' samples), decompressed; `out` is the result's folder.
pub fn tcp_series(out: &Path, run: &Value) -> String {
    let mut rows = String::new();
    let file = File::open(out.join(run["series"]["tcp"].as_str().unwrap_or_else(|| panic!("no tcp series in run {}", run["index"])))).unwrap();
    std::io::Read::read_to_string(&mut flate2::read::MultiGzDecoder::new(file), &mut rows).unwrap();
    rows
}

/// The least of `xs`: for a time that load only ever adds to (a page load), the run least
/// disturbed, as ping's minimum is.
pub fn fastest(xs: Vec<f64>) -> f64 {
    assert!(!xs.is_empty(), "the fastest of nothing");
    xs.into_iter().fold(f64::INFINITY, f64::min)
}

pub fn median(mut xs: Vec<f64>) -> f64 {
    assert!(!xs.is_empty(), "the median of nothing");
    xs.sort_by(f64::total_cmp);
    let n = xs.len();
    if n % 2 == 1 {
        xs[n / 2]
    } else {
        (xs[n / 2 - 1] + xs[n / 2]) / 2.0
    }
}

/// A private secret file of 64 random hex digits.
pub fn secret_file(dir: &Path, name: &str) -> PathBuf {
    let f = dir.join(name);
    let bytes: [u8; 32] = rand::random();
    std::fs::write(&f, format!("{}\n", ccbench_remote::proto::hex(&bytes))).unwrap();
    std::fs::set_permissions(&f, std::fs::Permissions::from_mode(0o600)).unwrap();
    f
}

/// serve's port inside the namespaces (they are ccbench's own: no clash with the host's).
pub const SERVE_PORT: u16 = 7450;

/// serve's `HOST:PORT` in the server namespace.
pub fn serve_addr() -> String {
    format!("{SERVER_ADDR}:{SERVE_PORT}")
}

/// `ccbench exec PATH --server-cmd "ccbench serve --secret-file SECRET SERVE_FLAGS" -- sh -c
/// CLIENT`, `$S` in `client` being serve's `HOST:PORT`. serve's log goes to stderr.
pub fn exec_with_serve(path: &[&str], secret: &Path, serve_flags: &str, client: &str) -> Output {
    let serve = format!("{BIN} serve --listen $CCBENCH_SERVER_ADDR:{SERVE_PORT} --secret-file {} {serve_flags}", secret.display());
    let script = format!("S=$CCBENCH_SERVER_ADDR:{SERVE_PORT}; {client}");
    let mut args: Vec<&str> = vec!["exec"];
    args.extend_from_slice(path);
    args.extend_from_slice(&["--server-cmd", &serve, "--", "sh", "-c", &script]);
    Command::new(BIN).args(&args).output().expect("run ccbench exec")
}

/// `ccbench CLIENT_ARGS` in the client namespace against `ccbench serve` (with
/// `server_secret`, at [`serve_addr`]) in the server's, across a 20 Mbit/s path of 5 ms each
/// way: what the emulator counted, the client's output, and serve's log. Their files are kept
/// beside `out`.
pub fn counted_through_serve(server_secret: &Path, out: &Path, client_args: &[OsString]) -> (PathReport, Output, String) {
    through_serve_while(server_secret, out, client_args, |_, _| ())
}

/// [`counted_through_serve`], with `during` called once the client has started, given the
/// client's namespace and process (for a test that plays another program beside it); the
/// client is then waited for.
pub fn through_serve_while(
    server_secret: &Path,
    out: &Path,
    client_args: &[OsString],
    during: impl FnOnce(&ccbench_netns::Netns, &mut ccbench_netns::process::NsChild),
) -> (PathReport, Output, String) {
    let link = ccbench_link::DirectionConfig {
        rate: ccbench_link::Rate::BitsPerSec(20_000_000),
        delay_ns: ccbench_link::time::Duration::from_nanos(5_000_000),
        ..Default::default()
    };
    let spec = PathSpec {
        down: link.clone(),
        up: link,
        mtu: 1500,
        seed: 1,
        sample_interval_us: 10_000,
        offload: true,
        batch_us: 25,
        access: Vec::new(),
        tcp_ecn: Default::default(),
    };
    let path = EmulatedPath::start(&spec, Instant::now()).expect("emulated path");
    let exe = Path::new(BIN);
    let serve: Vec<OsString> = vec![BIN.into(), "serve".into(), "--listen".into(), serve_addr().into(), "--secret-file".into(), server_secret.into()];
    let log = out.with_extension("serve.log");
    let mut server = ccbench_netns::process::spawn_in(&path.server, exe, &serve, &[], Stdio::null(), Stdio::from(File::create(&log).unwrap())).unwrap();
    let deadline = Instant::now() + Duration::from_secs(5);
    while !ccbench_netns::process::has_tcp_listener(server.pid()) && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(10));
    }
    let client: Vec<OsString> = std::iter::once(BIN.into()).chain(client_args.iter().cloned()).collect();
    let (stdout, stderr) = (out.with_extension("stdout"), out.with_extension("stderr"));
    let mut c = ccbench_netns::process::spawn_in(
        &path.client,
        exe,
        &client,
        &[],
        Stdio::from(File::create(&stdout).unwrap()),
        Stdio::from(File::create(&stderr).unwrap()),
    )
    .unwrap();
    during(&path.client, &mut c);
    let status = c.wait().unwrap();
    let _ = server.terminate(Duration::from_secs(2));
    let report = path.finish();
    let o = Output { status, stdout: std::fs::read(&stdout).unwrap(), stderr: std::fs::read(&stderr).unwrap() };
    (report, o, std::fs::read_to_string(&log).unwrap())
}

/// A `ccbench serve` on loopback with `flags`, for one test named `tag`: its scratch
/// directory, its secret file and that secret, and the serve.
pub fn loopback_serve(tag: &str, flags: &[&str]) -> (PathBuf, PathBuf, ccbench_remote::Secret, LiveServe) {
    let dir = tempdir(tag);
    let secret_path = secret_file(&dir, "secret");
    let secret = ccbench_remote::Secret::from_file(&secret_path).unwrap();
    let serve = LiveServe::start(&secret_path, flags);
    (dir, secret_path, secret, serve)
}

/// A `ccbench serve` on loopback, its address read from its first line, its log collected;
/// killed when dropped.
pub struct LiveServe {
    child: Child,
    pub addr: SocketAddr,
    log: Arc<Mutex<String>>,
}

impl LiveServe {
    pub fn start(secret: &Path, extra: &[&str]) -> LiveServe {
        let mut args = vec!["serve", "--listen", "127.0.0.1:0", "--secret-file", secret.to_str().unwrap()];
        args.extend_from_slice(extra);
        let mut cmd = Command::new(BIN);
        cmd.args(&args);
        LiveServe::from_command(cmd)
    }

    /// serve as `cmd` prepared it (another binary, a wrapper such as `env`, its flags); its
    /// stderr is taken here, and its first line must name the address serve listens on.
    pub fn from_command(mut cmd: Command) -> LiveServe {
        let mut child = cmd.stderr(Stdio::piped()).spawn().unwrap();
        let mut err = BufReader::new(child.stderr.take().unwrap());
        let mut first = String::new();
        err.read_line(&mut first).unwrap();
        let addr = first.split_whitespace().find_map(|w| w.parse().ok()).unwrap_or_else(|| panic!("no address in {first:?}"));
        // Reading on also keeps serve from blocking on a full pipe.
        let log = Arc::new(Mutex::new(String::new()));
        let sink = log.clone();
        std::thread::spawn(move || {
            for line in err.lines().map_while(Result::ok) {
                sink.lock().unwrap().push_str(&format!("{line}\n"));
            }
        });
        LiveServe { child, addr, log }
    }

    pub fn log(&self) -> String {
        // The log line of a session is written as it ends; give the reader a moment.
        std::thread::sleep(Duration::from_millis(200));
        self.log.lock().unwrap().clone()
    }

    pub fn alive(&mut self) -> bool {
        self.child.try_wait().unwrap().is_none()
    }

    /// serve's resident memory now and at its peak (`VmRSS`, `VmHWM`), kB.
    pub fn memory_kb(&self) -> (u64, u64) {
        let status = std::fs::read_to_string(format!("/proc/{}/status", self.child.id())).unwrap();
        let field = |key: &str| status.lines().find_map(|l| l.strip_prefix(key)).and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok()).unwrap_or(0);
        (field("VmRSS:"), field("VmHWM:"))
    }
}

impl Drop for LiveServe {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// The JUnit file as Debian's python3-junitparser reads it: (tests, failures) per suite, and
/// each case's name, result kind ("pass" or the failure's type) and message.
pub fn junit_read_back(file: &Path) -> Value {
    let script = r#"
import json, sys
from junitparser import JUnitXml, Failure
xml = JUnitXml.fromfile(sys.argv[1])
suites = []
for suite in xml:
    cases = []
    for case in suite:
        kinds = [(r.type, r.message) for r in case.result if isinstance(r, Failure)]
        cases.append({"name": case.name, "classname": case.classname,
                      "kind": kinds[0][0] if kinds else "pass", "message": kinds[0][1] if kinds else None})
    suites.append({"name": suite.name, "tests": suite.tests, "failures": suite.failures, "cases": cases})
print(json.dumps(suites))
"#;
    let o = Command::new("/usr/bin/python3").args(["-c", script, &file.to_string_lossy()]).output().expect("/usr/bin/python3 (python3-junitparser)");
    assert!(o.status.success(), "junitparser could not read {}: {}", file.display(), String::from_utf8_lossy(&o.stderr));
    serde_json::from_slice(&o.stdout).unwrap()
}
