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

/// What a run does first, tried for real: a namespace, the emulator's sysctls in it, a TUN
/// device with an address, up. Each step's failure is reported as the run would meet it: being
/// root in a user namespace, or in a container without the capabilities, passes a look at the
/// euid and /dev/net/tun but fails here.
fn try_a_path(checks: &mut Vec<Check>) -> Option<Netns> {
    let ns = match Netns::new() {
        Ok(ns) => ns,
        Err(e) => {
            checks.push(check(false, "create a network namespace", format!("failed: {e}")));
            return None;
        }
    };
    checks.push(check(true, "create a network namespace", "client and server ends can be isolated from the host"));
    let sysctls: Result<(), _> = ccbench_emu::NAMESPACE_SYSCTLS.iter().try_for_each(|(key, value)| ns.set_sysctl(key, value));
    checks.push(match sysctls {
        Ok(()) => check(true, "set the emulator's sysctls in it", "TCP buffers sized for the paths ccbench builds"),
        Err(e) => check(false, "set the emulator's sysctls in it", format!("failed: {e} (in a container: remount /proc/sys read-write)")),
    });
    // The same call, with the same settings, as the emulator's (ccbench_emu::Emulator::start):
    // MTU 1500, its deep transmit queue, offload on. Each is a separate ioctl that a user
    // namespace or a container may refuse on its own.
    let tun = ns.add_tun("ccb0", ccbench_emu::CLIENT_ADDR, 24, 1500, ccbench_emu::TUN_TXQUEUELEN, true);
    checks.push(match tun {
        Ok(_) => check(true, "create a TUN device with an address in it", "the userspace emulator can carry the path"),
        Err(e) => check(false, "create a TUN device with an address in it", format!("failed: {e}")),
    });
    Some(ns)
}

pub fn run() -> i32 {
    let mut checks = Vec::new();
    // SAFETY: geteuid has no preconditions.
    let root = unsafe { libc::geteuid() } == 0;
    checks.push(check(
        root,
        "running as root",
        if root { "(tried below: root in a user namespace is not enough)" } else { "run and exec need root: use sudo" },
    ));
    let tun = std::path::Path::new("/dev/net/tun").exists();
    checks.push(check(
        tun,
        "/dev/net/tun present",
        if tun { "the userspace emulator can attach to the kernel" } else { "no emulated paths: load the tun module" },
    ));
    let ns = try_a_path(&mut checks);
    let avail = ccbench_kernel_tcp::available_congestion_controls().unwrap_or_default();
    let allowed = ccbench_kernel_tcp::allowed_congestion_controls().unwrap_or_default();
    let default = ccbench_kernel_tcp::default_congestion_control().unwrap_or_default();
    checks.push(check(
        !avail.is_empty(),
        format!("congestion controls available: {}", avail.join(" ")),
        "these can be compared with --cc (set per socket; the host default is not changed)",
    ));
    checks.push(check(true, format!("allowed for unprivileged sockets: {}", allowed.join(" ")), "matters only to non-root programs; ccbench runs as root"));
    let has_bbr = avail.iter().any(|a| a == "bbr");
    checks.push(check(has_bbr, format!("host default algorithm: {default}"), if has_bbr { "bbr is available" } else { "bbr is not loaded: modprobe tcp_bbr" }));
    let qdisc = ccbench_kernel_tcp::default_qdisc().unwrap_or_default();
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
