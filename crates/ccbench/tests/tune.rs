//! `ccbench tune` end to end: the real binary, run inside a network namespace and a mount
//! namespace of the test's own, with tmpfs over /etc/sysctl.d and /var/lib (where the backup
//! goes). `net.ipv4.tcp_congestion_control` is per network namespace, and the host-wide
//! sysctls (`net.core.default_qdisc`, `tcp_allowed_congestion_control`) are invisible or
//! read-only there, so these tests cannot change the host; each one also checks that the
//! host's values and files are untouched.
//!
//! They need root, `unshare` and `nsenter` (util-linux) and `sysctl` (procps). Outside CI they
//! skip without them; under `CI=true` they fail instead.

mod common;

use std::collections::BTreeMap;
use std::io::{BufRead, BufReader};
use std::os::fd::AsRawFd;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};

use common::{have_root_and, ok, BIN};

const CC: &str = "/proc/sys/net/ipv4/tcp_congestion_control";
const OUR_FILE: &str = "etc/sysctl.d/90-ccbench.conf";

/// A process parked in a new network namespace and a private mount namespace with empty
/// tmpfs over /etc/sysctl.d and /var/lib. Killing it (on drop) ends both namespaces.
struct Sandbox {
    holder: Child,
}

impl Sandbox {
    fn new() -> Sandbox {
        // The tmpfs needs a mount point, and creating one would change the host.
        assert!(Path::new("/etc/sysctl.d").is_dir(), "/etc/sysctl.d is missing (the procps package creates it)");
        let script = "mount -t tmpfs ccbench-test /etc/sysctl.d && mount -t tmpfs ccbench-test /var/lib && echo ready && exec sleep 600";
        let mut holder = Command::new("unshare")
            .args(["--net", "--mount", "--propagation", "private", "sh", "-c", script])
            .stdout(Stdio::piped())
            .stdin(Stdio::null())
            .spawn()
            .expect("unshare");
        let mut line = String::new();
        BufReader::new(holder.stdout.take().expect("stdout")).read_line(&mut line).expect("read");
        assert_eq!(line.trim(), "ready", "the sandbox did not start");
        Sandbox { holder }
    }

    /// A path inside the sandbox's mount namespace, as seen from the test.
    fn path(&self, rel: &str) -> PathBuf {
        PathBuf::from(format!("/proc/{}/root/{rel}", self.holder.id()))
    }

    /// Runs `ccbench ARGS` inside the sandbox.
    fn ccbench(&self, args: &[&str]) -> Output {
        self.run(&[BIN], args)
    }

    fn run(&self, program: &[&str], args: &[&str]) -> Output {
        let pid = self.holder.id().to_string();
        Command::new("nsenter").args(["-t", &pid, "--net", "--mount", "--"]).args(program).args(args).output().expect("nsenter")
    }

    /// Runs `f` on a thread inside the sandbox's network namespace.
    fn in_netns<T: Send>(&self, f: impl FnOnce() -> T + Send) -> T {
        let ns = std::fs::File::open(format!("/proc/{}/ns/net", self.holder.id())).expect("netns");
        std::thread::scope(|s| {
            s.spawn(|| {
                // SAFETY: setns affects only this short-lived thread.
                assert_eq!(unsafe { libc::setns(ns.as_raw_fd(), libc::CLONE_NEWNET) }, 0, "setns");
                f()
            })
            .join()
            .expect("netns thread")
        })
    }

    fn cc(&self) -> String {
        self.in_netns(|| std::fs::read_to_string(CC).expect("read cc").trim().to_string())
    }

    /// Every file under the namespace's /proc/sys/net (contents, or the error reading it), and
    /// every file and directory under the sandbox's /etc/sysctl.d and /var/lib (mode and bytes).
    fn snapshot(&self) -> BTreeMap<String, String> {
        let mut snap = self.in_netns(|| {
            let mut m = BTreeMap::new();
            walk(Path::new("/proc/sys/net"), &mut |p| {
                let v = std::fs::read(p).map(|b| String::from_utf8_lossy(&b).into_owned()).unwrap_or_else(|e| format!("<error {:?}>", e.kind()));
                m.insert(p.display().to_string(), v);
            });
            m
        });
        for dir in ["etc/sysctl.d", "var/lib"] {
            let root = self.path(dir);
            walk_all(&root, &mut |p| {
                let meta = std::fs::symlink_metadata(p).expect("meta");
                let bytes = if meta.is_file() { format!("{:?}", std::fs::read(p).expect("read")) } else { "dir".into() };
                snap.insert(format!("{dir}/{}", p.strip_prefix(&root).unwrap().display()), format!("mode {:o} {bytes}", meta.permissions().mode()));
            });
        }
        snap
    }
}

impl Drop for Sandbox {
    fn drop(&mut self) {
        let _ = self.holder.kill();
        let _ = self.holder.wait();
    }
}

fn walk(dir: &Path, f: &mut dyn FnMut(&Path)) {
    let Ok(rd) = std::fs::read_dir(dir) else { return };
    for e in rd.flatten() {
        let p = e.path();
        if e.file_type().map(|t| t.is_dir()).unwrap_or(false) {
            walk(&p, f);
        } else {
            f(&p);
        }
    }
}

/// As [`walk`], directories included.
fn walk_all(dir: &Path, f: &mut dyn FnMut(&Path)) {
    let Ok(rd) = std::fs::read_dir(dir) else { return };
    for e in rd.flatten() {
        let p = e.path();
        f(&p);
        if e.file_type().map(|t| t.is_dir()).unwrap_or(false) {
            walk_all(&p, f);
        }
    }
}

/// The host's values this command could touch, and its files; compared before and after.
fn host_state() -> Vec<String> {
    let mut v: Vec<String> = ["net/ipv4/tcp_congestion_control", "net/ipv4/tcp_allowed_congestion_control", "net/core/default_qdisc"]
        .iter()
        .map(|k| format!("{k}={:?}", std::fs::read_to_string(format!("/proc/sys/{k}")).ok()))
        .collect();
    walk_all(Path::new("/etc/sysctl.d"), &mut |p| v.push(format!("{} {:?}", p.display(), std::fs::read(p).ok())));
    v.push(format!("/var/lib/ccbench exists: {}", Path::new("/var/lib/ccbench").exists()));
    v
}

/// An algorithm the sandbox may switch to (allowed outside the initial namespace), other than
/// its current one.
fn other_allowed(sb: &Sandbox) -> String {
    let now = sb.cc();
    let allowed = std::fs::read_to_string("/proc/sys/net/ipv4/tcp_allowed_congestion_control").expect("allowed");
    allowed
        .split_whitespace()
        .find(|a| *a != now)
        .unwrap_or_else(|| panic!("this host allows only {allowed:?} outside its namespace, and the sandbox runs {now}: nothing to switch to"))
        .to_string()
}

fn diff(a: &BTreeMap<String, String>, b: &BTreeMap<String, String>) -> Vec<String> {
    let keys: std::collections::BTreeSet<&String> = a.keys().chain(b.keys()).collect();
    keys.into_iter().filter(|k| a.get(*k) != b.get(*k)).map(|k| format!("{k}: {:?} -> {:?}", a.get(k), b.get(k))).collect()
}

/// The test: apply, then revert, restores the namespace's values byte for byte.
#[test]
fn tune() {
    if !have_root_and(&["unshare", "nsenter", "sysctl", "tc"]) {
        return;
    }
    let host = host_state();
    let sb = Sandbox::new();
    let before = sb.snapshot();
    let (orig, alt) = (sb.cc(), other_allowed(&sb));

    let out = ok(&sb.ccbench(&["tune", "--cc", &alt, "--apply"]), "apply");
    assert_eq!(sb.cc(), alt, "apply did not change the namespace's algorithm:\n{out}");
    // New sockets in the namespace get it: what the setting is for.
    let got = sb.in_netns(|| ccbench_kernel_tcp::congestion(std::net::TcpListener::bind("127.0.0.1:0").expect("bind")).expect("TCP_CONGESTION"));
    assert_eq!(got, alt);
    let file = std::fs::read_to_string(sb.path(OUR_FILE)).expect("the persistent file");
    assert!(file.contains(&format!("\nnet.ipv4.tcp_congestion_control = {alt}\n")), "{file}");
    assert!(!file.contains("default_qdisc"), "a host-wide key in a namespace's file:\n{file}");
    let applied = diff(&before, &sb.snapshot());
    assert!(applied.iter().any(|d| d.starts_with(CC)) && applied.iter().any(|d| d.starts_with(OUR_FILE)), "the snapshot missed the apply: {applied:?}");
    // The file works for an independent reader: procps' sysctl, on this file only (never
    // `sysctl --system`, whose other files hold host-wide keys), puts the value back.
    sb.in_netns(|| std::fs::write(CC, &orig).expect("write cc"));
    ok(&sb.run(&["sysctl", "-p"], &["/etc/sysctl.d/90-ccbench.conf"]), "sysctl -p");
    assert_eq!(sb.cc(), alt, "sysctl -p of our file did not set {alt}");

    let out = ok(&sb.ccbench(&["tune", "--revert"]), "revert");
    let after = sb.snapshot();
    assert!(diff(&before, &after).is_empty(), "revert left differences:\n{}\n{out}", diff(&before, &after).join("\n"));
    assert!(before.len() > 100, "the snapshot saw only {} files", before.len());
    assert_eq!(host_state(), host, "the host changed");
}

/// A file of ours that existed before (odd bytes, odd mode) comes back exactly, and so do the
/// values, after several applies: the first backup is never overwritten.
#[test]
fn apply_twice_then_revert_restores_the_original() {
    if !have_root_and(&["unshare", "nsenter", "tc"]) {
        return;
    }
    let host = host_state();
    let sb = Sandbox::new();
    let ours = sb.path(OUR_FILE);
    std::fs::write(&ours, b"# hand-written \xff, no newline at the end\nnet.ipv4.tcp_congestion_control=reno").expect("write");
    std::fs::set_permissions(&ours, std::fs::Permissions::from_mode(0o600)).expect("chmod");
    std::fs::write(sb.path("etc/sysctl.d/50-other.conf"), "net.ipv4.tcp_ecn = 1\n").expect("write");
    let before = sb.snapshot();
    let (orig, alt) = (sb.cc(), other_allowed(&sb));

    for cc in [&alt, &alt, &orig, &alt] {
        ok(&sb.ccbench(&["tune", "--cc", cc, "--apply"]), "apply");
        assert_eq!(&sb.cc(), cc);
    }
    let again = ok(&sb.ccbench(&["tune", "--cc", &alt, "--apply"]), "apply");
    assert!(again.contains("Nothing to change"), "{again}");
    ok(&sb.ccbench(&["tune", "--revert"]), "revert");
    let after = sb.snapshot();
    assert!(diff(&before, &after).is_empty(), "revert left differences:\n{}", diff(&before, &after).join("\n"));
    // Nothing left to revert: refused, and still nothing changed.
    let o = sb.ccbench(&["tune", "--revert"]);
    assert_eq!(o.status.code(), Some(2), "{o:?}");
    assert!(String::from_utf8_lossy(&o.stderr).contains("nothing to revert"));
    assert!(diff(&before, &sb.snapshot()).is_empty());
    assert_eq!(host_state(), host, "the host changed");
}

/// The default is a dry run: it prints the exact change and makes none.
#[test]
fn dry_run_changes_nothing() {
    if !have_root_and(&["unshare", "nsenter", "tc"]) {
        return;
    }
    let host = host_state();
    let sb = Sandbox::new();
    let before = sb.snapshot();
    let alt = other_allowed(&sb);
    let out = ok(&sb.ccbench(&["tune", "--cc", &alt]), "dry run");
    assert!(out.contains("dry run: nothing was changed"), "{out}");
    assert!(out.contains(&format!("write {alt} to {CC}")), "{out}");
    assert!(out.contains("create /etc/sysctl.d/90-ccbench.conf with:"), "{out}");
    let show = ok(&sb.ccbench(&["tune"]), "show");
    assert!(show.contains("net.ipv4.tcp_congestion_control\n  now      ") && show.contains("  at boot  ") && show.contains("  ccbench  "), "{show}");
    assert!(diff(&before, &sb.snapshot()).is_empty(), "{}", diff(&before, &sb.snapshot()).join("\n"));
    assert_eq!(host_state(), host, "the host changed");
}

/// Bad input: one line naming --cc and what is allowed, exit 2, nothing changed. That covers an
/// algorithm the kernel lacks, one this namespace may not use, and a caller who is not root.
#[test]
fn refusals_exit_2_and_change_nothing() {
    if !have_root_and(&["unshare", "nsenter", "setpriv", "tc"]) {
        return;
    }
    let host = host_state();
    let sb = Sandbox::new();
    let before = sb.snapshot();
    let available = std::fs::read_to_string("/proc/sys/net/ipv4/tcp_available_congestion_control").expect("available");
    let allowed = std::fs::read_to_string("/proc/sys/net/ipv4/tcp_allowed_congestion_control").expect("allowed");
    let mut cases: Vec<(Vec<String>, String)> =
        vec![(vec!["--cc".into(), "nosuchcc".into(), "--apply".into()], available.split_whitespace().collect::<Vec<_>>().join(" "))];
    // Available but not allowed: the kernel would answer EPERM in a namespace (absent on hosts
    // that allow every algorithm).
    if let Some(restricted) = available.split_whitespace().find(|a| !allowed.split_whitespace().any(|b| b == *a)) {
        cases.push((vec!["--cc".into(), restricted.into(), "--apply".into()], "tcp_allowed_congestion_control".into()));
    }
    for (args, mention) in &cases {
        let mut full = vec!["tune"];
        full.extend(args.iter().map(String::as_str));
        let o = sb.ccbench(&full);
        let err = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(2), "{full:?}: {err}");
        assert_eq!(err.lines().count(), 1, "{err}");
        assert!(err.contains("--cc") && err.contains(mention.as_str()), "{err}");
    }
    let nobody = sb.run(&["setpriv", "--reuid", "65534", "--regid", "65534", "--clear-groups", BIN], &["tune", "--apply"]);
    assert_eq!(nobody.status.code(), Some(2), "{nobody:?}");
    assert!(String::from_utf8_lossy(&nobody.stderr).contains("needs root"), "{nobody:?}");
    assert!(diff(&before, &sb.snapshot()).is_empty(), "{}", diff(&before, &sb.snapshot()).join("\n"));
    assert_eq!(host_state(), host, "the host changed");
}

/// An apply that fails half-way (here: /etc/sysctl.d is read-only) undoes itself: no backup,
/// no file, no changed value is left behind.
#[test]
fn failed_apply_leaves_nothing_behind() {
    if !have_root_and(&["unshare", "nsenter", "mount", "tc"]) {
        return;
    }
    let host = host_state();
    let sb = Sandbox::new();
    ok(&sb.run(&["mount"], &["-o", "remount,ro", "/etc/sysctl.d"]), "remount read-only");
    let before = sb.snapshot();
    let alt = other_allowed(&sb);
    let o = sb.ccbench(&["tune", "--cc", &alt, "--apply"]);
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(1), "{err}");
    assert!(err.contains("the apply failed and was undone") && err.contains("90-ccbench.conf"), "{err}");
    assert!(diff(&before, &sb.snapshot()).is_empty(), "{}", diff(&before, &sb.snapshot()).join("\n"));
    assert_eq!(host_state(), host, "the host changed");
}
