//! Interface configuration through the classic SIOCSIF* ioctls on a socket of the calling
//! thread's namespace. Netlink would also do, but these five calls are all a point-to-point TUN
//! path needs, synchronous and dependency-free.

use std::io;
use std::net::Ipv4Addr;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};

use crate::sys::{self, IfReq};
use crate::NetnsError;

/// An interface in the calling thread's network namespace.
pub struct Interface {
    name: String,
}

impl Interface {
    pub fn new(name: &str) -> Self {
        Interface { name: name.to_string() }
    }

    fn ioctl(&self, request: libc::c_ulong, fill: impl FnOnce(&mut IfReq)) -> Result<IfReq, NetnsError> {
        let wrap = |source| NetnsError::Iface { name: self.name.clone(), source };
        let sock = control_socket().map_err(wrap)?;
        let mut req = IfReq::new(&self.name).map_err(wrap)?;
        fill(&mut req);
        sys::ioctl_ifreq(sock.as_raw_fd(), request, &mut req).map_err(wrap)?;
        Ok(req)
    }

    pub fn set_mtu(&self, mtu: u32) -> Result<(), NetnsError> {
        self.ioctl(sys::SIOCSIFMTU, |r| r.data.int = mtu as libc::c_int).map(drop)
    }

    /// The device queue between the kernel stack and our reader. Mahimahi keeps the default 500
    /// and loses packets nobody configured when its reader falls behind; we make it deep.
    pub fn set_txqueuelen(&self, len: u32) -> Result<(), NetnsError> {
        self.ioctl(sys::SIOCSIFTXQLEN, |r| r.data.int = len as libc::c_int).map(drop)
    }

    pub fn set_ipv4(&self, addr: Ipv4Addr, prefix: u8) -> Result<(), NetnsError> {
        self.ioctl(sys::SIOCSIFADDR, |r| r.data.addr = sockaddr(addr))?;
        let mask = if prefix == 0 { 0 } else { u32::MAX << (32 - u32::from(prefix.min(32))) };
        self.ioctl(sys::SIOCSIFNETMASK, |r| r.data.addr = sockaddr(Ipv4Addr::from(mask))).map(drop)
    }

    pub fn set_up(&self) -> Result<(), NetnsError> {
        let current = self.ioctl(sys::SIOCGIFFLAGS, |_| {})?;
        // SAFETY: SIOCGIFFLAGS filled the `flags` member.
        let flags = unsafe { current.data.flags } | sys::IFF_UP;
        self.ioctl(sys::SIOCSIFFLAGS, |r| r.data.flags = flags).map(drop)
    }
}

/// Brings `lo` up in the calling thread's namespace (a new namespace starts with it down).
pub fn set_loopback_up() -> Result<(), NetnsError> {
    Interface::new("lo").set_up()
}

fn sockaddr(addr: Ipv4Addr) -> libc::sockaddr_in {
    libc::sockaddr_in {
        sin_family: libc::AF_INET as libc::sa_family_t,
        sin_port: 0,
        sin_addr: libc::in_addr { s_addr: u32::from(addr).to_be() },
        sin_zero: [0; 8],
    }
}

fn control_socket() -> io::Result<OwnedFd> {
    // SAFETY: plain socket(2) call; the result is checked before being wrapped.
    let fd = unsafe { libc::socket(libc::AF_INET, libc::SOCK_DGRAM | libc::SOCK_CLOEXEC, 0) };
    if fd < 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: `fd` is a fresh descriptor we own.
    Ok(unsafe { OwnedFd::from_raw_fd(fd) })
}
