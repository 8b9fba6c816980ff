//! The one socket factory of every workload: listening and client sockets made inside a
//! namespace with the algorithm set on the side that sends, connections made from them, and
//! the algorithm set again on the connected sending socket and read back.

use std::io::{self, ErrorKind};
use std::net::{Ipv4Addr, SocketAddr, SocketAddrV4, TcpListener, TcpStream};
use std::os::fd::AsFd;
use std::time::{Duration, Instant};

use ccbench_netns::Netns;
use socket2::{Domain, Protocol, Socket, Type};

use crate::{Algorithm, Side, WorkloadError};

pub(crate) const CONNECT_TIMEOUT: Duration = Duration::from_secs(5);

/// Sets `cc` on a TCP socket as its kernel name: the one place an [`Algorithm`] becomes a
/// `TCP_CONGESTION` name (issue 20: a remote upload with `--cc tcp:cubic` once handed the
/// prefixed name to the kernel and failed). A QUIC algorithm is refused: it has no socket.
pub fn set_algorithm<F: AsFd>(sock: F, cc: &Algorithm, side: Side) -> Result<(), WorkloadError> {
    let Some(kernel) = cc.kernel_name() else {
        return Err(WorkloadError::Setup(format!("{cc} is a QUIC algorithm, not kernel TCP's")));
    };
    ccbench_kernel_tcp::set_congestion(sock, kernel).map_err(|source| WorkloadError::Congestion { cc: cc.to_string(), side, source })
}

/// Makes the socket's close a reset (`SO_LINGER` 0, socket(7)), for connections whose results
/// are taken. A time-bound flow's send buffer still holds what the deadline cut off (on a long
/// fat path, hundreds of megabytes): closed gracefully, it would be left to an orphaned socket
/// retransmitting into a namespace that is gone, holding the host's TCP memory (`tcp_mem` is
/// not per namespace) for minutes. Measured at unlimited rate and 50 ms: 1.16 GB held by 9
/// orphans after one `bench emulator`, and the next cell's flow, under memory pressure, carried
/// 7.7 Mbit/s instead of 8–9 Gbit/s.
pub(crate) fn reset_on_close(sock: &TcpStream) {
    let _ = socket2::SockRef::from(sock).set_linger(Some(Duration::ZERO));
}

/// Sets the socket's receive and send buffers (`--rcvbuf`, `--sndbuf`): `SO_RCVBUFFORCE` /
/// `SO_SNDBUFFORCE` where allowed (root: beyond `net.core.rmem_max`/`wmem_max`), else the plain
/// options (capped by those limits). Either set locks the buffer: the kernel's autotuning
/// leaves it alone (socket(7)). Set before the connection exists, so that the window scale
/// offered in the handshake fits the receive buffer. Returns what the kernel reads back
/// (doubled for its bookkeeping, socket(7)).
pub(crate) fn set_buffers<F: AsFd>(sock: F, rcvbuf: Option<u64>, sndbuf: Option<u64>) -> io::Result<(Option<u64>, Option<u64>)> {
    use std::os::fd::AsRawFd;
    let fd = sock.as_fd().as_raw_fd();
    let set = |force: libc::c_int, plain: libc::c_int, bytes: u64| -> io::Result<u64> {
        let v: libc::c_int = bytes.min(i32::MAX as u64 / 2) as libc::c_int;
        let size = std::mem::size_of::<libc::c_int>() as libc::socklen_t;
        // SAFETY: `v` outlives the call and `size` is its size.
        let forced = unsafe { libc::setsockopt(fd, libc::SOL_SOCKET, force, (&v as *const libc::c_int).cast(), size) };
        if forced != 0 {
            // SAFETY: as above.
            if unsafe { libc::setsockopt(fd, libc::SOL_SOCKET, plain, (&v as *const libc::c_int).cast(), size) } != 0 {
                return Err(io::Error::last_os_error());
            }
        }
        let mut got: libc::c_int = 0;
        let mut len = size;
        // SAFETY: `got` and `len` outlive the call; `len` is `got`'s size.
        if unsafe { libc::getsockopt(fd, libc::SOL_SOCKET, plain, (&mut got as *mut libc::c_int).cast(), &mut len) } != 0 {
            return Err(io::Error::last_os_error());
        }
        Ok(got.max(0) as u64)
    };
    let r = rcvbuf.map(|b| set(libc::SO_RCVBUFFORCE, libc::SO_RCVBUF, b)).transpose()?;
    let s = sndbuf.map(|b| set(libc::SO_SNDBUFFORCE, libc::SO_SNDBUF, b)).transpose()?;
    Ok((r, s))
}

/// A non-blocking listening socket made inside `server`'s namespace. With `cc` (the server
/// sends), the algorithm is set on the listener, so accepted sockets inherit it (it is set
/// again on each accepted socket with [`confirm_congestion`]).
pub(crate) fn listen_in(server: &Netns, addr: Ipv4Addr, port: u16, cc: Option<&Algorithm>) -> Result<TcpListener, WorkloadError> {
    let sa = SocketAddr::V4(SocketAddrV4::new(addr, port));
    server.run(|| {
        let sock = Socket::new(Domain::IPV4, Type::STREAM, Some(Protocol::TCP))?;
        sock.set_reuse_address(true)?;
        if let Some(cc) = cc {
            set_algorithm(&sock, cc, Side::Server)?;
        }
        sock.bind(&sa.into())?;
        sock.listen(1024)?;
        sock.set_nonblocking(true)?;
        Ok::<_, WorkloadError>(sock.into())
    })
}

/// `n` unconnected, non-blocking client TCP sockets for `addr`'s family, with `cc` set when
/// the client sends. Made inside `namespace` (one trip into it) when given, and they stay in
/// it wherever they are connected from; else in this process's own namespace: the client end
/// of a test against a remote `ccbench serve`, which needs no namespace and no root.
pub(crate) fn sockets(namespace: Option<&Netns>, addr: SocketAddr, n: usize, cc: Option<&Algorithm>) -> Result<Vec<TcpStream>, WorkloadError> {
    let make = || (0..n).map(|_| new_client_socket(addr, cc, None)).collect::<Result<Vec<TcpStream>, WorkloadError>>();
    match namespace {
        Some(ns) => ns.run(make),
        None => make(),
    }
}

/// One socket as [`sockets`] makes them in `client`'s namespace, bound to the client-side
/// `port`: the emulator tells a flow with an access link of its own by it (`ccbench_emu::access`).
pub(crate) fn socket_at(client: &Netns, addr: SocketAddr, cc: Option<&Algorithm>, port: u16) -> Result<TcpStream, WorkloadError> {
    client.run(|| new_client_socket(addr, cc, Some(port)))
}

fn new_client_socket(addr: SocketAddr, cc: Option<&Algorithm>, port: Option<u16>) -> Result<TcpStream, WorkloadError> {
    let sock = Socket::new(Domain::for_address(addr), Type::STREAM, Some(Protocol::TCP))?;
    if let Some(cc) = cc {
        set_algorithm(&sock, cc, Side::Client)?;
    }
    if let Some(port) = port {
        let any: std::net::IpAddr = if addr.is_ipv4() { Ipv4Addr::UNSPECIFIED.into() } else { std::net::Ipv6Addr::UNSPECIFIED.into() };
        sock.set_reuse_address(true)?;
        sock.bind(&SocketAddr::new(any, port).into())?;
    }
    sock.set_nonblocking(true)?;
    Ok(sock.into())
}

/// Connects a socket from [`sockets`] to `addr` on the current tokio
/// runtime.
pub(crate) async fn connect(sock: TcpStream, addr: impl Into<SocketAddr>) -> io::Result<tokio::net::TcpStream> {
    let addr = addr.into();
    let sock = tokio::net::TcpSocket::from_std_stream(sock);
    let stream = tokio::time::timeout(CONNECT_TIMEOUT, sock.connect(addr))
        .await
        .map_err(|_| io::Error::new(io::ErrorKind::TimedOut, format!("connecting to {addr} timed out")))??;
    stream.set_nodelay(true)?;
    Ok(stream)
}

/// Connects a socket from [`sockets`] to `addr`, blocking the calling thread; the stream
/// it returns is blocking.
pub(crate) fn connect_blocking(sock: TcpStream, addr: SocketAddrV4) -> Result<TcpStream, WorkloadError> {
    let sock = Socket::from(sock);
    // Leaves the socket blocking, whatever it was before.
    sock.connect_timeout(&SocketAddr::V4(addr).into(), CONNECT_TIMEOUT).map_err(|e| WorkloadError::Setup(format!("connecting to {addr}: {e}")))?;
    Ok(sock.into())
}

/// Accepts, blocking, the connection from the client's `client_port` on a listener from
/// [`listen_in`]; other connections are dropped (nothing else should connect).
pub(crate) fn accept_port(listener: &TcpListener, client_port: u16) -> Result<TcpStream, WorkloadError> {
    let deadline = Instant::now() + CONNECT_TIMEOUT;
    loop {
        match listener.accept() {
            Ok((stream, peer)) if peer.port() == client_port => {
                stream.set_nonblocking(false)?;
                return Ok(stream);
            }
            Ok(_) => continue,
            Err(e) if e.kind() == ErrorKind::WouldBlock => {
                if Instant::now() > deadline {
                    return Err(WorkloadError::Setup("the server side never saw the connection".into()));
                }
                std::thread::sleep(Duration::from_millis(1));
            }
            Err(e) => return Err(e.into()),
        }
    }
}

/// Sets `cc` again on a connected sending socket and reads back what the kernel runs, named
/// as requested (`tcp:bbr` stays `tcp:bbr`), so results compare like with like.
pub fn confirm_congestion<F: AsFd>(sock: F, cc: &Algorithm, side: Side) -> Result<String, WorkloadError> {
    let fd = sock.as_fd();
    set_algorithm(fd, cc, side)?;
    let actual = ccbench_kernel_tcp::congestion(fd)?;
    if Some(actual.as_str()) != cc.kernel_name() {
        return Err(WorkloadError::CongestionMismatch { requested: cc.to_string(), actual });
    }
    Ok(cc.written_like(&actual))
}

/// A blocking TCP connection from the current namespace to `addr`, with `cc` set before it
/// connects when this end sends: the client end of a test against a remote `ccbench serve`.
pub fn client_socket(addr: SocketAddr, cc: Option<&Algorithm>) -> Result<TcpStream, WorkloadError> {
    let sock = Socket::new(Domain::for_address(addr), Type::STREAM, Some(Protocol::TCP))?;
    if let Some(cc) = cc {
        set_algorithm(&sock, cc, Side::Client)?;
    }
    sock.connect_timeout(&addr.into(), CONNECT_TIMEOUT).map_err(|e| WorkloadError::Setup(format!("connecting to {addr}: {e}")))?;
    Ok(sock.into())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Issue 20 §2: `--direction upload --cc tcp:cubic,tcp:bbr` over `--remote` failed with
    /// "congestion control "tcp:cubic" cannot be set on the Client socket". Reno is allowed to
    /// every user, so this needs no root.
    /// `--rcvbuf`/`--sndbuf`: the kernel keeps what was asked (doubled, socket(7)).
    #[test]
    fn socket_buffers_are_set_and_read_back() {
        let sock = Socket::new(Domain::IPV4, Type::STREAM, Some(Protocol::TCP)).unwrap();
        let (r, s) = set_buffers(&sock, Some(65_536), Some(131_072)).unwrap();
        assert_eq!((r, s), (Some(131_072), Some(262_144)));
        assert_eq!(set_buffers(&sock, None, None).unwrap(), (None, None));
    }

    #[test]
    fn a_transport_prefixed_name_is_set_as_the_kernel_name() {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = listener.local_addr().unwrap();
        let sock = client_socket(addr, Some(&"tcp:reno".parse().unwrap())).expect("tcp:reno is kernel TCP's reno");
        assert_eq!(ccbench_kernel_tcp::congestion(sock.as_fd()).unwrap(), "reno");
        assert!(client_socket(addr, Some(&"tcp:no-such-algorithm".parse().unwrap())).is_err());
    }

    /// The read-back is named the way the request was written; a QUIC name never reaches a socket.
    #[test]
    fn the_read_back_is_written_like_the_request() {
        let sock = Socket::new(Domain::IPV4, Type::STREAM, Some(Protocol::TCP)).unwrap();
        assert_eq!(confirm_congestion(&sock, &"tcp:reno".parse().unwrap(), Side::Client).unwrap(), "tcp:reno");
        assert_eq!(confirm_congestion(&sock, &"reno".parse().unwrap(), Side::Client).unwrap(), "reno");
        let e = set_algorithm(&sock, &"quic:cubic".parse().unwrap(), Side::Client).unwrap_err();
        assert_eq!(e.to_string(), "connection setup failed: quic:cubic is a QUIC algorithm, not kernel TCP's");
    }
}
