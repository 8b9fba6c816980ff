//! Interface configuration through the classic SIOCSIF* ioctls on a socket of the calling
//! thread's namespace. Netlink would also do, but these five calls are all a point-to-point TUN
//! path needs, synchronous and dependency-free; the transmit queue length alone falls back to
//! one rtnetlink request where a user namespace's root may not use the ioctl.

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
    ///
    /// The kernel refuses SIOCSIFTXQLEN to root in a user namespace (Apptainer's --fakeroot,
    /// `unshare -r`) while it accepts the same change through rtnetlink, so that is the way
    /// taken when the ioctl is refused.
    pub fn set_txqueuelen(&self, len: u32) -> Result<(), NetnsError> {
        match self.ioctl(sys::SIOCSIFTXQLEN, |r| r.data.int = len as libc::c_int) {
            Err(NetnsError::Iface { source, .. }) if source.raw_os_error() == Some(libc::EPERM) => {
                set_txqlen_netlink(&self.name, len).map_err(|source| NetnsError::Iface { name: self.name.clone(), source })
            }
            other => other.map(drop),
        }
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

/// Sets an interface's transmit queue length with one RTM_NEWLINK request carrying IFLA_TXQLEN
/// (rtnetlink(7)), in the calling thread's namespace, and waits for the kernel's acknowledgement.
pub(crate) fn set_txqlen_netlink(name: &str, len: u32) -> io::Result<()> {
    let cname = std::ffi::CString::new(name).map_err(|_| io::Error::from(io::ErrorKind::InvalidInput))?;
    // SAFETY: a valid C string.
    let index = unsafe { libc::if_nametoindex(cname.as_ptr()) };
    if index == 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: plain socket(2); the descriptor is owned right away.
    let fd = unsafe { libc::socket(libc::AF_NETLINK, libc::SOCK_RAW | libc::SOCK_CLOEXEC, libc::NETLINK_ROUTE) };
    if fd < 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: fd is a fresh descriptor nobody else owns.
    let sock = unsafe { OwnedFd::from_raw_fd(fd) };
    // nlmsghdr (16 bytes) + ifinfomsg (16) + rtattr (4) + u32: 40 bytes, in native byte order.
    let mut msg = Vec::with_capacity(40);
    msg.extend_from_slice(&40u32.to_ne_bytes());
    msg.extend_from_slice(&libc::RTM_NEWLINK.to_ne_bytes());
    msg.extend_from_slice(&((libc::NLM_F_REQUEST | libc::NLM_F_ACK) as u16).to_ne_bytes());
    msg.extend_from_slice(&1u32.to_ne_bytes()); // sequence number
    msg.extend_from_slice(&0u32.to_ne_bytes()); // port id: the kernel's
    msg.extend_from_slice(&[libc::AF_UNSPEC as u8, 0]);
    msg.extend_from_slice(&0u16.to_ne_bytes()); // device type: unchanged
    msg.extend_from_slice(&(index as i32).to_ne_bytes());
    msg.extend_from_slice(&0u32.to_ne_bytes()); // flags
    msg.extend_from_slice(&0u32.to_ne_bytes()); // change mask: no flags changed
    msg.extend_from_slice(&8u16.to_ne_bytes());
    msg.extend_from_slice(&libc::IFLA_TXQLEN.to_ne_bytes());
    msg.extend_from_slice(&len.to_ne_bytes());
    // SAFETY: msg is a valid buffer of its length; the destination is the kernel (zeroed address).
    let sent = unsafe {
        let mut to: libc::sockaddr_nl = std::mem::zeroed();
        to.nl_family = libc::AF_NETLINK as libc::sa_family_t;
        libc::sendto(
            sock.as_raw_fd(),
            msg.as_ptr().cast(),
            msg.len(),
            0,
            (&to as *const libc::sockaddr_nl).cast(),
            std::mem::size_of::<libc::sockaddr_nl>() as u32,
        )
    };
    if sent < 0 {
        return Err(io::Error::last_os_error());
    }
    let mut reply = [0u8; 1024];
    // SAFETY: reply is a valid buffer of its length.
    let got = unsafe { libc::recv(sock.as_raw_fd(), reply.as_mut_ptr().cast(), reply.len(), 0) };
    if got < 0 {
        return Err(io::Error::last_os_error());
    }
    // The acknowledgement: an NLMSG_ERROR message whose error is 0, or a negative errno.
    let got = got as usize;
    let kind = u16::from_ne_bytes([reply[4], reply[5]]);
    if got < 20 || i32::from(kind) != libc::NLMSG_ERROR {
        return Err(io::Error::new(io::ErrorKind::InvalidData, "unexpected rtnetlink reply"));
    }
    match i32::from_ne_bytes([reply[16], reply[17], reply[18], reply[19]]) {
        0 => Ok(()),
        e => Err(io::Error::from_raw_os_error(-e)),
    }
}
