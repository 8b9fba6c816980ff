//! Network namespaces, TUN devices and child processes that belong to the calling process.
//!
//! Everything here is *anonymous*: a namespace is created with `unshare(CLONE_NEWNET)` on a
//! short-lived thread and kept alive only by the file descriptor this crate returns. Nothing is
//! named under `/var/run/netns`, nothing is created in the host's namespace, and nothing is
//! written to the host's sysctls. When the owning process exits — normally, by panic, or by
//! `kill -9` — the kernel closes the descriptors, the namespaces die, and the TUN devices inside
//! them die with them. Child processes get `PR_SET_PDEATHSIG` and run under a tiny reaper in a
//! fresh PID namespace (see [`process`]) so that even daemonising commands cannot outlive us.

mod iface;
pub mod process;
mod sys;
mod tun;

use std::fs::File;
use std::io;
use std::net::Ipv4Addr;
use std::os::fd::{AsFd, AsRawFd, BorrowedFd, OwnedFd};

pub use iface::{set_loopback_up, Interface};
pub use tun::Tun;

#[derive(Debug, thiserror::Error)]
pub enum NetnsError {
    #[error("creating a network namespace failed (needs root / CAP_SYS_ADMIN): {0}")]
    Unshare(io::Error),
    #[error("entering a network namespace failed: {0}")]
    Setns(io::Error),
    #[error("opening /dev/net/tun failed (is the tun module available?): {0}")]
    TunOpen(io::Error),
    #[error("configuring interface {name}: {source}")]
    Iface { name: String, source: io::Error },
    #[error("writing sysctl {key}: {source}")]
    Sysctl { key: String, source: io::Error },
    #[error("{0}")]
    Io(#[from] io::Error),
}

/// An anonymous network namespace, alive for as long as this value (or a process inside it) is.
#[derive(Debug)]
pub struct Netns {
    fd: OwnedFd,
    inode: u64,
}

impl Netns {
    /// Creates a new, empty network namespace with its loopback interface up.
    pub fn new() -> Result<Self, NetnsError> {
        on_fresh_thread(|| {
            // SAFETY: unshare only changes this (dedicated, short-lived) thread's namespace.
            if unsafe { libc::unshare(libc::CLONE_NEWNET) } != 0 {
                return Err(NetnsError::Unshare(io::Error::last_os_error()));
            }
            let file = File::open("/proc/thread-self/ns/net")?;
            let inode = std::os::unix::fs::MetadataExt::ino(&file.metadata()?);
            set_loopback_up()?;
            Ok(Netns { fd: file.into(), inode })
        })
    }

    /// The namespace the calling thread is in (a remote run's client: the host's, or the one
    /// `ccbench exec` put it in), so a program can be started there under the reaper too.
    pub fn current() -> Result<Self, NetnsError> {
        let file = File::open("/proc/thread-self/ns/net")?;
        let inode = std::os::unix::fs::MetadataExt::ino(&file.metadata()?);
        Ok(Netns { fd: file.into(), inode })
    }

    /// The namespace's inode number, as shown by `readlink /proc/PID/ns/net` (`net:[INODE]`).
    pub fn inode(&self) -> u64 {
        self.inode
    }

    /// Runs `f` on a new thread that has entered this namespace, and returns its result.
    /// Sockets, TUN devices and sysctl writes made inside `f` belong to this namespace, and
    /// keep belonging to it when used from any other thread afterwards.
    pub fn run<T: Send, E: From<NetnsError> + Send>(&self, f: impl FnOnce() -> Result<T, E> + Send) -> Result<T, E> {
        let fd = self.fd.as_raw_fd();
        on_fresh_thread(move || {
            enter(fd).map_err(E::from)?;
            f()
        })
    }

    /// Writes a sysctl under /proc/sys/net inside this namespace (never the host's).
    pub fn set_sysctl(&self, key: &str, value: &str) -> Result<(), NetnsError> {
        let key = key.to_string();
        let value = value.to_string();
        self.run(move || {
            let path = format!("/proc/sys/{}", key.replace('.', "/"));
            std::fs::write(&path, value.as_bytes()).map_err(|source| NetnsError::Sysctl { key: key.clone(), source })
        })
    }

    /// Reads a sysctl inside this namespace.
    pub fn sysctl(&self, key: &str) -> Result<String, NetnsError> {
        let key = key.to_string();
        self.run(move || {
            let path = format!("/proc/sys/{}", key.replace('.', "/"));
            std::fs::read_to_string(&path).map(|s| s.trim().to_string()).map_err(|source| NetnsError::Sysctl { key: key.clone(), source })
        })
    }

    /// Creates a TUN device inside this namespace, configured with `addr/prefix`, up.
    pub fn add_tun(&self, name: &str, addr: Ipv4Addr, prefix: u8, mtu: u32, txqueuelen: u32, offload: bool) -> Result<Tun, NetnsError> {
        let name = name.to_string();
        self.run(move || {
            let tun = Tun::create(&name, offload)?;
            let iface = Interface::new(&name);
            iface.set_mtu(mtu)?;
            iface.set_txqueuelen(txqueuelen)?;
            iface.set_ipv4(addr, prefix)?;
            iface.set_up()?;
            Ok(tun)
        })
    }
}

/// Kernel-side counters of one interface, from `/proc/net/dev` inside a namespace.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct DevCounters {
    pub rx_packets: u64,
    pub rx_dropped: u64,
    pub tx_packets: u64,
    pub tx_dropped: u64,
}

impl Netns {
    /// Counters of interface `name` in this namespace. A TUN device's `tx_dropped` counts
    /// packets the kernel threw away because our reader fell behind; `rx_dropped`, packets we
    /// wrote that the stack refused. Neither is the network's loss.
    pub fn dev_counters(&self, name: &str) -> Result<DevCounters, NetnsError> {
        let name = name.to_string();
        self.run(move || {
            let text = std::fs::read_to_string("/proc/thread-self/net/dev")?;
            for line in text.lines() {
                let Some((dev, rest)) = line.split_once(':') else { continue };
                if dev.trim() != name {
                    continue;
                }
                let v: Vec<u64> = rest.split_whitespace().filter_map(|x| x.parse().ok()).collect();
                if v.len() >= 12 {
                    return Ok(DevCounters { rx_packets: v[1], rx_dropped: v[3], tx_packets: v[9], tx_dropped: v[11] });
                }
            }
            Err(NetnsError::Io(io::Error::new(io::ErrorKind::NotFound, format!("no interface {name}"))))
        })
    }
}

/// Runs a program with its network namespace set to `ns` (for the few things only iproute2 can do).
fn command_in(ns: &Netns, program: &str, args: &[&str]) -> std::process::Command {
    use std::os::unix::process::CommandExt;
    let fd = ns.fd.as_raw_fd();
    let mut cmd = std::process::Command::new(program);
    cmd.args(args).stdin(std::process::Stdio::null());
    // SAFETY: setns/prctl between fork and exec affect only the child.
    unsafe {
        cmd.pre_exec(move || {
            if libc::setns(fd, libc::CLONE_NEWNET) != 0 {
                return Err(io::Error::last_os_error());
            }
            libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL);
            Ok(())
        });
    }
    cmd
}

/// Joins two namespaces with a veth pair (`a_name` in `a`, `b_name` in `b`), configured with
/// the given addresses and up. This is the kernel's own path between namespaces: the ceiling
/// any emulator on this machine is measured against.
pub fn add_veth_pair(a: &Netns, a_name: &str, a_addr: Ipv4Addr, b: &Netns, b_name: &str, b_addr: Ipv4Addr, prefix: u8) -> Result<(), NetnsError> {
    // iproute2 names a target namespace by PID, so park a process in `b` while we ask.
    let mut anchor = command_in(b, "sleep", &["30"]).spawn()?;
    let pid = anchor.id().to_string();
    let out = command_in(a, "ip", &["link", "add", a_name, "type", "veth", "peer", "name", b_name, "netns", &pid]).output();
    let _ = anchor.kill();
    let _ = anchor.wait();
    let out = out?;
    if !out.status.success() {
        return Err(NetnsError::Iface { name: a_name.to_string(), source: io::Error::other(String::from_utf8_lossy(&out.stderr).trim().to_string()) });
    }
    for (ns, name, addr) in [(a, a_name, a_addr), (b, b_name, b_addr)] {
        let name = name.to_string();
        ns.run(move || {
            let iface = Interface::new(&name);
            iface.set_ipv4(addr, prefix)?;
            iface.set_up()
        })?;
    }
    Ok(())
}

impl AsFd for Netns {
    fn as_fd(&self) -> BorrowedFd<'_> {
        self.fd.as_fd()
    }
}

/// Moves the calling thread into the namespace behind `fd`.
fn enter(fd: i32) -> Result<(), NetnsError> {
    // SAFETY: setns with a valid namespace fd affects only the calling thread's net namespace.
    if unsafe { libc::setns(fd, libc::CLONE_NEWNET) } != 0 {
        return Err(NetnsError::Setns(io::Error::last_os_error()));
    }
    Ok(())
}

/// Namespace changes are per thread; doing them on a throwaway thread keeps every long-lived
/// thread of ccbench (including main) in the host namespace, where it started.
fn on_fresh_thread<T: Send, E: From<NetnsError> + Send>(f: impl FnOnce() -> Result<T, E> + Send) -> Result<T, E> {
    std::thread::scope(|s| s.spawn(f).join().unwrap_or_else(|_| Err(E::from(NetnsError::Io(io::Error::other("namespace worker thread panicked"))))))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn is_root() -> bool {
        // SAFETY: geteuid has no preconditions.
        unsafe { libc::geteuid() == 0 }
    }

    #[test]
    fn namespace_is_distinct_and_isolated() {
        if !is_root() {
            assert!(std::env::var("CI").is_err(), "root required under CI");
            return;
        }
        let host = std::fs::metadata("/proc/thread-self/ns/net").map(|m| std::os::unix::fs::MetadataExt::ino(&m)).unwrap();
        let ns = Netns::new().unwrap();
        assert_ne!(ns.inode(), host);
        // Our own thread is still in the host namespace.
        let now = std::fs::metadata("/proc/thread-self/ns/net").map(|m| std::os::unix::fs::MetadataExt::ino(&m)).unwrap();
        assert_eq!(now, host);
        // A sysctl written inside the namespace does not change the host's.
        let host_val = std::fs::read_to_string("/proc/sys/net/ipv4/tcp_no_metrics_save").unwrap();
        let want = if host_val.trim() == "1" { "0" } else { "1" };
        ns.set_sysctl("net.ipv4.tcp_no_metrics_save", want).unwrap();
        assert_eq!(ns.sysctl("net.ipv4.tcp_no_metrics_save").unwrap(), want);
        assert_eq!(std::fs::read_to_string("/proc/sys/net/ipv4/tcp_no_metrics_save").unwrap(), host_val);
    }

    #[test]
    fn tun_lives_in_namespace_only() {
        if !is_root() {
            assert!(std::env::var("CI").is_err(), "root required under CI");
            return;
        }
        let ns = Netns::new().unwrap();
        let _tun = ns.add_tun("ccbt0", Ipv4Addr::new(10, 99, 0, 1), 24, 1500, 1000, true).unwrap();
        assert_eq!(ns.dev_counters("ccbt0").unwrap().tx_dropped, 0);
        let inside: bool = ns
            .run(|| {
                Ok::<_, NetnsError>(
                    std::path::Path::new("/proc/thread-self/net/dev").exists() && std::fs::read_to_string("/proc/thread-self/net/dev")?.contains("ccbt0"),
                )
            })
            .unwrap();
        assert!(inside);
        let host_dev = std::fs::read_to_string("/proc/thread-self/net/dev").unwrap();
        assert!(!host_dev.contains("ccbt0"));
    }

    #[test]
    fn the_transmit_queue_is_set_through_rtnetlink_as_through_the_ioctl() {
        if !is_root() {
            assert!(std::env::var("CI").is_err(), "root required under CI");
            return;
        }
        let ns = Netns::new().unwrap();
        let _tun = ns.add_tun("ccbt1", Ipv4Addr::new(10, 99, 1, 1), 24, 1500, 1000, true).unwrap();
        // The length as the kernel reports it (SIOCGIFTXQLEN), read inside the namespace.
        let txqlen = || -> u32 {
            ns.run(|| {
                let sock = std::net::UdpSocket::bind("127.0.0.1:0")?;
                let mut req = sys::IfReq::new("ccbt1")?;
                sys::ioctl_ifreq(std::os::fd::AsRawFd::as_raw_fd(&sock), 0x8942, &mut req)?;
                // SAFETY: SIOCGIFTXQLEN filled the `int` member.
                Ok::<_, NetnsError>(unsafe { req.data.int } as u32)
            })
            .unwrap()
        };
        assert_eq!(txqlen(), 1000, "set by the ioctl");
        ns.run(|| iface::set_txqlen_netlink("ccbt1", 4321).map_err(NetnsError::Io)).unwrap();
        assert_eq!(txqlen(), 4321, "set by RTM_NEWLINK with IFLA_TXQLEN");
        let missing = ns.run(|| iface::set_txqlen_netlink("ccbt-none", 10).map_err(NetnsError::Io));
        assert!(missing.is_err(), "an interface that is not there is an error");
    }
}
