//! Running other programs (iperf3, curl, a user's server) inside one of our namespaces, such
//! that nothing they start can outlive ccbench.
//!
//! `PR_SET_PDEATHSIG` alone is not enough: it is cleared in grandchildren, so a shell wrapper
//! or a daemonising server would escape a `kill -9` of ccbench. Instead every command runs
//! under a *reaper* (ccbench's own binary re-executed with [`REAPER_ARG`]) which enters a new
//! PID namespace and starts the command as that namespace's PID 1. The chain is
//! ccbench → reaper (dies with ccbench) → PID 1 (dies with the reaper), and when a PID
//! namespace's init dies the kernel kills every process left in it.

use std::ffi::OsString;
use std::io;
use std::os::fd::{AsRawFd, BorrowedFd, OwnedFd, RawFd};
use std::os::unix::process::{CommandExt, ExitStatusExt};
use std::path::Path;
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::atomic::{AtomicI32, Ordering};
use std::time::{Duration, Instant};

use crate::Netns;

/// First argument that makes the ccbench binary act as the reaper.
pub const REAPER_ARG: &str = "__ccbench-reaper";

/// A command running in a namespace, under its reaper.
#[derive(Debug)]
pub struct NsChild {
    reaper: Child,
}

/// Starts `argv` inside `ns` under a reaper executed from `exe` (normally ccbench itself).
///
/// Must be called from a thread that outlives the child: the kernel's parent-death signal
/// fires when the *thread* that forked exits, not the process.
pub fn spawn_in(ns: &Netns, exe: &Path, argv: &[OsString], envs: &[(String, String)], stdout: Stdio, stderr: Stdio) -> io::Result<NsChild> {
    spawn_in_with_fds(ns, exe, argv, envs, stdout, stderr, &[])
}

/// [`spawn_in`], with each `(fd, target)` of `fds` open in the command as descriptor `target`
/// (e.g. Chromium's `--remote-debugging-pipe` reads fd 3 and writes fd 4). The reaper passes
/// them on: they are not close-on-exec in it, and it opens none of its own below them.
pub fn spawn_in_with_fds(
    ns: &Netns,
    exe: &Path,
    argv: &[OsString],
    envs: &[(String, String)],
    stdout: Stdio,
    stderr: Stdio,
    fds: &[(BorrowedFd<'_>, RawFd)],
) -> io::Result<NsChild> {
    if argv.is_empty() {
        return Err(io::Error::new(io::ErrorKind::InvalidInput, "empty command"));
    }
    let ns_fd: RawFd = ns.as_fd_raw();
    let parent = std::process::id() as libc::pid_t;
    // Copies above every target first (close-on-exec, so only the dup2'd ones reach the child):
    // a source that is itself some other target's number would otherwise be overwritten.
    let top = fds.iter().map(|&(_, t)| t).max().unwrap_or(0) + 1;
    let high: Vec<(OwnedFd, RawFd)> = fds.iter().map(|&(fd, target)| Ok((fd.try_clone_to_owned_min(top)?, target))).collect::<io::Result<_>>()?;
    let moves: Vec<(RawFd, RawFd)> = high.iter().map(|(fd, target)| (fd.as_raw_fd(), *target)).collect();
    let mut cmd = Command::new(exe);
    cmd.arg(REAPER_ARG).arg("--").args(argv).envs(envs.iter().map(|(k, v)| (k, v)));
    cmd.stdin(Stdio::null()).stdout(stdout).stderr(stderr);
    // SAFETY: only async-signal-safe syscalls (setns, dup2, prctl, getppid) run between fork and
    // exec; `moves` was allocated before the fork.
    unsafe {
        cmd.pre_exec(move || {
            if libc::setns(ns_fd, libc::CLONE_NEWNET) != 0 {
                return Err(io::Error::last_os_error());
            }
            for &(fd, target) in &moves {
                if libc::dup2(fd, target) < 0 {
                    return Err(io::Error::last_os_error());
                }
            }
            die_with_parent(parent)
        });
    }
    let child = cmd.spawn();
    drop(high);
    Ok(NsChild { reaper: child? })
}

impl NsChild {
    /// The reaper's PID; `/proc/PID/net` shows the namespace the command runs in.
    pub fn pid(&self) -> u32 {
        self.reaper.id()
    }

    pub fn wait(&mut self) -> io::Result<ExitStatus> {
        self.reaper.wait()
    }

    pub fn try_wait(&mut self) -> io::Result<Option<ExitStatus>> {
        self.reaper.try_wait()
    }

    /// Asks the command to stop (SIGTERM, forwarded by the reaper), then kills the whole PID
    /// namespace if it has not exited within `grace`.
    pub fn terminate(&mut self, grace: Duration) -> io::Result<ExitStatus> {
        if let Some(status) = self.reaper.try_wait()? {
            return Ok(status);
        }
        // SAFETY: signalling our own child by PID.
        unsafe { libc::kill(self.reaper.id() as libc::pid_t, libc::SIGTERM) };
        let deadline = Instant::now() + grace;
        while Instant::now() < deadline {
            if let Some(status) = self.reaper.try_wait()? {
                return Ok(status);
            }
            std::thread::sleep(Duration::from_millis(10));
        }
        self.reaper.kill()?;
        self.reaper.wait()
    }
}

impl Drop for NsChild {
    fn drop(&mut self) {
        if let Ok(None) = self.reaper.try_wait() {
            let _ = self.reaper.kill();
            let _ = self.reaper.wait();
        }
    }
}

/// `F_DUPFD_CLOEXEC`: a close-on-exec copy numbered `min` or above.
trait DupMin {
    fn try_clone_to_owned_min(&self, min: RawFd) -> io::Result<OwnedFd>;
}

impl DupMin for BorrowedFd<'_> {
    fn try_clone_to_owned_min(&self, min: RawFd) -> io::Result<OwnedFd> {
        // SAFETY: fcntl on a descriptor we borrow; the new one is ours alone.
        let fd = unsafe { libc::fcntl(self.as_raw_fd(), libc::F_DUPFD_CLOEXEC, min) };
        if fd < 0 {
            return Err(io::Error::last_os_error());
        }
        // SAFETY: just created, owned by nothing else.
        Ok(unsafe { std::os::fd::FromRawFd::from_raw_fd(fd) })
    }
}

impl Netns {
    fn as_fd_raw(&self) -> RawFd {
        std::os::fd::AsFd::as_fd(self).as_raw_fd()
    }
}

/// `parent` is the PID the child must see as its parent, or it exits at once: the parent may
/// have died before `prctl` took effect.
fn die_with_parent(parent: libc::pid_t) -> io::Result<()> {
    // SAFETY: prctl/getppid are async-signal-safe syscalls.
    unsafe {
        if libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL) != 0 {
            return Err(io::Error::last_os_error());
        }
        if libc::getppid() != parent {
            libc::_exit(137);
        }
    }
    Ok(())
}

static FORWARD: AtomicI32 = AtomicI32::new(0);

/// How long a command may take to act on a forwarded SIGINT/SIGTERM/SIGHUP before it is
/// killed: short enough that Ctrl-C ends `ccbench exec` within a second.
pub const FORWARD_GRACE: Duration = Duration::from_millis(500);

extern "C" fn remember_signal(sig: libc::c_int) {
    FORWARD.store(sig, Ordering::SeqCst);
}

/// Entry point of the reaper: `ccbench __ccbench-reaper -- CMD ARGS…`. Never returns.
pub fn reaper_main(args: &[OsString]) -> ! {
    let argv: Vec<&OsString> = args.iter().skip_while(|a| a.as_os_str() != "--").skip(1).collect();
    let Some((program, rest)) = argv.split_first() else {
        eprintln!("ccbench reaper: no command");
        std::process::exit(2);
    };
    // SAFETY: the reaper is single-threaded here; unshare(CLONE_NEWPID) makes our next child
    // PID 1 of a new PID namespace.
    if unsafe { libc::unshare(libc::CLONE_NEWPID) } != 0 {
        eprintln!("ccbench reaper: unshare(CLONE_NEWPID): {}", io::Error::last_os_error());
        std::process::exit(126);
    }
    let mut cmd = Command::new(program);
    cmd.args(rest.iter());
    // As PID 1 of the new namespace the child sees its parent (us, outside it) as PID 0.
    // SAFETY: async-signal-safe prctl/getppid only.
    unsafe { cmd.pre_exec(move || die_with_parent(0)) };
    let mut child = match cmd.spawn() {
        Ok(c) => c,
        Err(e) => {
            eprintln!("ccbench: cannot run {}: {e}", program.to_string_lossy());
            std::process::exit(if e.kind() == io::ErrorKind::NotFound { 127 } else { 126 });
        }
    };
    for sig in [libc::SIGTERM, libc::SIGINT, libc::SIGHUP] {
        // SAFETY: installing an async-signal-safe handler that only stores an integer.
        unsafe { libc::signal(sig, remember_signal as *const () as libc::sighandler_t) };
    }
    // The command is PID 1 of its namespace, and the kernel drops signals to a PID 1 that has
    // no handler for them (sleep, many servers): a forwarded SIGINT would do nothing. So a
    // forwarded signal is followed by SIGKILL, which always arrives, if the command has not
    // ended within the grace period.
    let mut kill_at: Option<Instant> = None;
    loop {
        match child.try_wait() {
            Ok(Some(status)) => {
                let code = status.code().unwrap_or_else(|| 128 + status.signal().unwrap_or(0));
                std::process::exit(code);
            }
            Ok(None) => {}
            Err(_) => std::process::exit(125),
        }
        let sig = FORWARD.swap(0, Ordering::SeqCst);
        if sig != 0 {
            // SAFETY: forwarding a signal to our own child.
            unsafe { libc::kill(child.id() as libc::pid_t, sig) };
            kill_at.get_or_insert(Instant::now() + FORWARD_GRACE);
        }
        if kill_at.is_some_and(|t| Instant::now() >= t) {
            let _ = child.kill();
        }
        std::thread::sleep(Duration::from_millis(5));
    }
}

/// Exit status helper for callers that want a shell-like code.
pub fn exit_code(status: ExitStatus) -> i32 {
    status.code().unwrap_or_else(|| 128 + status.signal().unwrap_or(0))
}

/// True once some process in the namespace of `pid` listens on a TCP port (IPv4 or IPv6).
pub fn has_tcp_listener(pid: u32) -> bool {
    ["tcp", "tcp6"].iter().any(|f| {
        std::fs::read_to_string(format!("/proc/{pid}/net/{f}")).map(|t| t.lines().skip(1).any(|l| l.split_whitespace().nth(3) == Some("0A"))).unwrap_or(false)
    })
}
