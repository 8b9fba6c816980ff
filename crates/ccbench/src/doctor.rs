//! `ccbench doctor`: what this host can do, each finding with what it means for ccbench.

use std::process::{Command, Stdio};

use ccbench_netns::Netns;

struct Check {
    ok: bool,
    what: String,
    meaning: String,
}

fn check(ok: bool, what: impl Into<String>, meaning: impl Into<String>) -> Check {
    Check { ok, what: what.into(), meaning: meaning.into() }
}

/// Tries a qdisc inside a throwaway namespace of our own: the only honest test of whether the
/// kernel has it (module files can be absent while it is built in, and vice versa).
pub(crate) fn qdisc_works(ns: &Netns, qdisc: &str) -> bool {
    let fd = std::os::fd::AsRawFd::as_raw_fd(&std::os::fd::AsFd::as_fd(ns));
    let mut cmd = Command::new("tc");
    cmd.args(["qdisc", "replace", "dev", "lo", "root"]).args(qdisc.split_whitespace()).stdout(Stdio::null()).stderr(Stdio::null());
    // SAFETY: setns between fork and exec only affects the child.
    unsafe {
        std::os::unix::process::CommandExt::pre_exec(&mut cmd, move || {
            if libc::setns(fd, libc::CLONE_NEWNET) != 0 {
                return Err(std::io::Error::last_os_error());
            }
            Ok(())
        });
    }
    cmd.status().map(|s| s.success()).unwrap_or(false)
}

pub fn run() -> i32 {
    let mut checks = Vec::new();
    // SAFETY: geteuid has no preconditions.
    let root = unsafe { libc::geteuid() } == 0;
    checks.push(check(root, "running as root", if root { "ccbench can create namespaces and TUN devices" } else { "run and exec need root: use sudo" }));
    let tun = std::path::Path::new("/dev/net/tun").exists();
    checks.push(check(
        tun,
        "/dev/net/tun present",
        if tun { "the userspace emulator can attach to the kernel" } else { "no emulated paths: load the tun module" },
    ));
    let ns = if root { Netns::new().ok() } else { None };
    checks.push(check(
        ns.is_some(),
        "network namespaces",
        if ns.is_some() { "client and server ends can be isolated from the host" } else { "cannot create a network namespace" },
    ));
    let avail = ccbench_probe::available_congestion_controls().unwrap_or_default();
    let allowed = ccbench_probe::allowed_congestion_controls().unwrap_or_default();
    let default = ccbench_probe::default_congestion_control().unwrap_or_default();
    checks.push(check(
        !avail.is_empty(),
        format!("congestion controls available: {}", avail.join(" ")),
        "these can be compared with --cc (set per socket; the host default is not changed)",
    ));
    checks.push(check(true, format!("allowed for unprivileged sockets: {}", allowed.join(" ")), "matters only to non-root programs; ccbench runs as root"));
    let has_bbr = avail.iter().any(|a| a == "bbr");
    checks.push(check(has_bbr, format!("host default algorithm: {default}"), if has_bbr { "bbr is available" } else { "bbr is not loaded: modprobe tcp_bbr" }));
    let qdisc = ccbench_probe::default_qdisc().unwrap_or_default();
    checks.push(check(true, format!("host default qdisc: {qdisc}"), "BBR paces itself since Linux 4.13; fq is not required"));
    if let Some(ns) = &ns {
        for q in ["netem", "fq", "fq_codel", "tbf rate 1mbit burst 10k latency 10ms", "pfifo"] {
            let ok = qdisc_works(ns, q);
            let name = q.split_whitespace().next().unwrap_or(q);
            let meaning = match (name, ok) {
                ("netem", false) => "no kernel netem: ccbench's own emulator is needed (and used)",
                ("netem", true) => "kernel netem exists (ccbench does not need it)",
                ("fq", false) => "no fq qdisc: BBR uses the kernel's internal pacing",
                (_, true) => "available",
                (_, false) => "missing",
            };
            checks.push(check(
                ok || name == "netem" || name == "fq" || name == "fq_codel",
                format!("qdisc {name}: {}", if ok { "yes" } else { "no" }),
                meaning,
            ));
        }
    }
    let mut bad = 0;
    for c in &checks {
        if !c.ok {
            bad += 1;
        }
        println!("{} {:<60} {}", if c.ok { "ok  " } else { "FAIL" }, c.what, c.meaning);
    }
    if bad == 0 {
        println!("\nThis host can run ccbench.");
        0
    } else {
        println!("\n{bad} problem(s) found.");
        1
    }
}
