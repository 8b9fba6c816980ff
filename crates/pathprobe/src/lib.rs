//! `ccbench-pathprobe`: measures a network path over UDP, for `ccbench probe`.
//!
//! Two halves. [`ProbeServer`] runs at the far end (under `ccbench serve`, which authenticates
//! the client first and hands it the port and a fresh session token); it answers only datagrams
//! that carry the token, from the first address that presented it, and stays within its
//! [`Limits`]. [`probe`] runs at the near end and returns a [`PathEstimate`]:
//!
//! * **base RTT**: the smallest round trip of many small echoes (less their own serialization);
//! * **bottleneck rate per direction**: a paced train sent faster than the path carries leaves
//!   the bottleneck one service time apart; bytes over the arrivals' span is the rate
//!   ([`estimate::dispersion_rate_bps`]);
//! * **RTT under load per direction**: echoes while such a train keeps the buffer full (the
//!   bufferbloat), and from it the buffer's size;
//! * **loss per direction**: sequence numbers of a long train paced below the bottleneck, so
//!   no packet is lost to the queue, only to the path.
//!
//! UDP because TCP cannot fill a lossy long path: at 1 % loss and 60 ms, the Mathis bound is
//! about 2.4 Mbit/s, far below a 30 Mbit/s bottleneck.

pub mod client;
pub mod estimate;
#[doc(hidden)]
pub mod fuzzing;
mod pace;
pub mod server;
mod stamp;
pub mod wire;

pub use client::{probe, DirectionEstimate, PathEstimate, ProbeError, ProbeOptions};
pub use estimate::LossEstimate;
pub use server::{Limits, ProbeServer, ServerHandle, ServerReport};
pub use wire::Token;

use std::net::SocketAddr;

/// IP and UDP header bytes in front of a datagram's payload: rates count IP bytes, as the
/// emulator's `--rate` (and a real link) does.
pub fn header_overhead(addr: &SocketAddr) -> u32 {
    match addr {
        SocketAddr::V4(_) => 20 + 8,
        SocketAddr::V6(_) => 40 + 8,
    }
}

/// Asks for a deep receive buffer: a receiver descheduled for a few ms (a busy host, a VM's
/// steal) must not drop a train's packets in its own socket, where they would read as path
/// loss. Root may exceed `net.core.rmem_max` (SO_RCVBUFFORCE); otherwise the capped request.
pub(crate) fn deepen_receive_buffer(socket: &std::net::UdpSocket, bytes: i32) {
    use std::os::fd::AsRawFd;
    let fd = socket.as_raw_fd();
    let set = |opt: libc::c_int| {
        // SAFETY: fd is a valid socket for the duration; the option value is a c_int.
        unsafe { libc::setsockopt(fd, libc::SOL_SOCKET, opt, (&bytes as *const i32).cast(), std::mem::size_of::<i32>() as libc::socklen_t) == 0 }
    };
    if !set(libc::SO_RCVBUFFORCE) {
        set(libc::SO_RCVBUF);
    }
}
