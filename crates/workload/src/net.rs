//! The one socket factory of every workload: listening and client sockets made inside a
//! namespace with the algorithm set on the side that sends, connections made from them, and
//! the algorithm set again on the connected sending socket and read back.

use std::io::{self, ErrorKind};
use std::net::{Ipv4Addr, SocketAddr, SocketAddrV4, TcpListener, TcpStream};
use std::os::fd::AsFd;
use std::time::{Duration, Instant};

use ccbench_netns::Netns;
use socket2::{Domain, Protocol, Socket, Type};

use crate::{Side, WorkloadError};

pub(crate) const CONNECT_TIMEOUT: Duration = Duration::from_secs(5);

/// A non-blocking listening socket made inside `server`'s namespace. With `cc` (the server
/// sends), the algorithm is set on the listener, so accepted sockets inherit it (it is set
/// again on each accepted socket with [`confirm_congestion`]).
pub(crate) fn listen_in(server: &Netns, addr: Ipv4Addr, port: u16, cc: Option<&str>) -> Result<TcpListener, WorkloadError> {
    let sa = SocketAddr::V4(SocketAddrV4::new(addr, port));
    server.run(|| {
        let sock = Socket::new(Domain::IPV4, Type::STREAM, Some(Protocol::TCP))?;
        sock.set_reuse_address(true)?;
        if let Some(cc) = cc {
            ccbench_probe::set_congestion(&sock, crate::kernel_name(cc)).map_err(|source| WorkloadError::Congestion {
                cc: cc.into(),
                side: Side::Server,
                source,
            })?;
        }
        sock.bind(&sa.into())?;
        sock.listen(1024)?;
        sock.set_nonblocking(true)?;
        Ok::<_, WorkloadError>(sock.into())
    })
}

/// `n` unconnected, non-blocking TCP sockets made inside `client`'s namespace (one trip into
/// it), with `cc` set when the client sends. They stay in that namespace wherever they are
/// connected from.
pub(crate) fn sockets_in(client: &Netns, n: usize, cc: Option<&str>) -> Result<Vec<TcpStream>, WorkloadError> {
    client.run(|| (0..n).map(|_| new_client_socket(cc, None)).collect::<Result<Vec<_>, _>>())
}

/// One socket as [`sockets_in`] makes them, bound to the client-side `port`: the emulator tells
/// a flow with an access link of its own by it (`ccbench_emu::access`).
pub(crate) fn socket_at(client: &Netns, cc: Option<&str>, port: u16) -> Result<TcpStream, WorkloadError> {
    client.run(|| new_client_socket(cc, Some(port)))
}

fn new_client_socket(cc: Option<&str>, port: Option<u16>) -> Result<TcpStream, WorkloadError> {
    let sock = Socket::new(Domain::IPV4, Type::STREAM, Some(Protocol::TCP))?;
    if let Some(cc) = cc {
        ccbench_probe::set_congestion(&sock, crate::kernel_name(cc)).map_err(|source| WorkloadError::Congestion {
            cc: cc.into(),
            side: Side::Client,
            source,
        })?;
    }
    if let Some(port) = port {
        sock.set_reuse_address(true)?;
        sock.bind(&SocketAddr::V4(SocketAddrV4::new(Ipv4Addr::UNSPECIFIED, port)).into())?;
    }
    sock.set_nonblocking(true)?;
    Ok(sock.into())
}

/// `n` unconnected, non-blocking TCP sockets for `addr`'s family, made in this process's own
/// namespace, with `cc` set when the client sends: the client end of a test against a remote
/// `ccbench serve`, which needs no namespace and no root.
pub(crate) fn sockets_here(addr: SocketAddr, n: usize, cc: Option<&str>) -> Result<Vec<TcpStream>, WorkloadError> {
    (0..n)
        .map(|_| {
            let sock = Socket::new(Domain::for_address(addr), Type::STREAM, Some(Protocol::TCP))?;
            if let Some(cc) = cc {
                ccbench_probe::set_congestion(&sock, crate::kernel_name(cc)).map_err(|source| WorkloadError::Congestion {
                    cc: cc.into(),
                    side: Side::Client,
                    source,
                })?;
            }
            sock.set_nonblocking(true)?;
            Ok(sock.into())
        })
        .collect()
}

/// Connects a socket from [`sockets_in`] or [`sockets_here`] to `addr` on the current tokio
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

/// Connects a socket from [`sockets_in`] to `addr`, blocking the calling thread; the stream
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

/// Sets `cc` again on a connected sending socket and reads back what the kernel runs.
pub fn confirm_congestion<F: AsFd>(sock: F, cc: &str, side: Side) -> Result<String, WorkloadError> {
    let fd = sock.as_fd();
    let kernel = crate::kernel_name(cc);
    ccbench_probe::set_congestion(fd, kernel).map_err(|source| WorkloadError::Congestion { cc: cc.into(), side, source })?;
    let actual = ccbench_probe::congestion(fd)?;
    if actual != kernel {
        return Err(WorkloadError::CongestionMismatch { requested: cc.into(), actual });
    }
    // Named as requested (`tcp:bbr` stays `tcp:bbr`), so results compare like with like.
    Ok(if kernel == cc { actual } else { format!("tcp:{actual}") })
}

/// A blocking TCP connection from the current namespace to `addr`, with `cc` set before it
/// connects when this end sends: the client end of a test against a remote `ccbench serve`.
pub fn client_socket(addr: SocketAddr, cc: Option<&str>) -> Result<TcpStream, WorkloadError> {
    let sock = Socket::new(Domain::for_address(addr), Type::STREAM, Some(Protocol::TCP))?;
    if let Some(cc) = cc {
        // `tcp:cubic` is kernel TCP's `cubic` (issue 20: an upload with `--cc tcp:cubic` over
        // `--remote` handed the prefixed name to the kernel and failed).
        ccbench_probe::set_congestion(&sock, crate::kernel_name(cc)).map_err(|source| WorkloadError::Congestion {
            cc: cc.into(),
            side: Side::Client,
            source,
        })?;
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
    #[test]
    fn a_transport_prefixed_name_is_set_as_the_kernel_name() {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = listener.local_addr().unwrap();
        let sock = client_socket(addr, Some("tcp:reno")).expect("tcp:reno is kernel TCP's reno");
        assert_eq!(ccbench_probe::congestion(sock.as_fd()).unwrap(), "reno");
        assert!(client_socket(addr, Some("tcp:no-such-algorithm")).is_err());
    }
}
