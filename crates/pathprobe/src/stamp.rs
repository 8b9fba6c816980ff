//! Arrival times from the kernel (SO_TIMESTAMPNS), not from when a thread got round to reading:
//! on a busy host a reader descheduled for a few ms would otherwise stretch or squeeze a train
//! and bias its rate. The kernel stamps CLOCK_REALTIME, so send times use that clock too; only
//! differences on one host's clock are ever taken.

use std::io;
use std::mem::{size_of, zeroed};
use std::net::{Ipv4Addr, Ipv6Addr, SocketAddr, SocketAddrV4, SocketAddrV6, UdpSocket};
use std::os::fd::AsRawFd;

/// Now on the clock the kernel stamps arrivals with, in ns.
pub fn now_ns() -> u64 {
    std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_nanos() as u64)
}

/// Asks the kernel to stamp every datagram this socket receives.
pub fn enable(socket: &UdpSocket) -> io::Result<()> {
    let on: libc::c_int = 1;
    // SAFETY: a valid socket and a c_int option value of the right size.
    let r = unsafe {
        libc::setsockopt(
            socket.as_raw_fd(),
            libc::SOL_SOCKET,
            libc::SO_TIMESTAMPNS,
            (&on as *const libc::c_int).cast(),
            size_of::<libc::c_int>() as libc::socklen_t,
        )
    };
    if r == 0 {
        Ok(())
    } else {
        Err(io::Error::last_os_error())
    }
}

/// Receives one datagram: its length, its sender and its arrival time (the kernel's stamp,
/// or now if there is none).
pub fn recv(socket: &UdpSocket, buf: &mut [u8]) -> io::Result<(usize, SocketAddr, u64)> {
    // SAFETY: every pointer in the msghdr points into a live local or `buf`, with its true
    // length; the kernel writes at most those lengths, and the control messages are walked
    // with the CMSG_* macros within `msg_controllen`.
    unsafe {
        let mut addr: libc::sockaddr_storage = zeroed();
        let mut iov = libc::iovec { iov_base: buf.as_mut_ptr().cast(), iov_len: buf.len() };
        let mut control = [0u64; 16];
        let mut msg: libc::msghdr = zeroed();
        msg.msg_name = (&mut addr as *mut libc::sockaddr_storage).cast();
        msg.msg_namelen = size_of::<libc::sockaddr_storage>() as libc::socklen_t;
        msg.msg_iov = &mut iov;
        msg.msg_iovlen = 1;
        msg.msg_control = control.as_mut_ptr().cast();
        msg.msg_controllen = size_of::<[u64; 16]>();
        let n = libc::recvmsg(socket.as_raw_fd(), &mut msg, 0);
        if n < 0 {
            return Err(io::Error::last_os_error());
        }
        let mut stamp = None;
        let mut cmsg = libc::CMSG_FIRSTHDR(&msg);
        while !cmsg.is_null() {
            if (*cmsg).cmsg_level == libc::SOL_SOCKET && (*cmsg).cmsg_type == libc::SCM_TIMESTAMPNS {
                let ts: libc::timespec = std::ptr::read_unaligned(libc::CMSG_DATA(cmsg).cast());
                stamp = Some(ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64);
            }
            cmsg = libc::CMSG_NXTHDR(&msg, cmsg);
        }
        let from = match i32::from(addr.ss_family) {
            libc::AF_INET => {
                let a: libc::sockaddr_in = std::ptr::read_unaligned((&addr as *const libc::sockaddr_storage).cast());
                SocketAddr::V4(SocketAddrV4::new(Ipv4Addr::from(u32::from_be(a.sin_addr.s_addr)), u16::from_be(a.sin_port)))
            }
            libc::AF_INET6 => {
                let a: libc::sockaddr_in6 = std::ptr::read_unaligned((&addr as *const libc::sockaddr_storage).cast());
                SocketAddr::V6(SocketAddrV6::new(Ipv6Addr::from(a.sin6_addr.s6_addr), u16::from_be(a.sin6_port), a.sin6_flowinfo, a.sin6_scope_id))
            }
            _ => return Err(io::Error::new(io::ErrorKind::InvalidData, "datagram from an unknown address family")),
        };
        Ok((n as usize, from, stamp.unwrap_or_else(now_ns)))
    }
}
