//! The HTTP workloads (objects, page) split across two hosts: the client half here, the server
//! half in a remote `ccbench serve` (see `http_end`). What the client half needs of the far end
//! is what it reads of its own in-process server otherwise: which connections the server took
//! in and the algorithm read back from each, its errors, and its sockets' last `TCP_INFO`.
//!
//! Every data connection to the far end starts with the test's token and the connection's
//! number ([`DATA_HELLO_LEN`] bytes), written before the socket is handed to hyper; the far end
//! names the connection by that number (a NAT between the hosts may change the client's port),
//! and this side maps it back to its own port, so results and series name connections by the
//! client's port exactly as an emulated run does.

use std::collections::HashMap;
use std::io;
use std::net::{SocketAddr, SocketAddrV4, TcpStream};
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Instant;

use ccbench_kernel_tcp::TcpInfo;
use ccbench_netns::Netns;
use serde::{Deserialize, Serialize};
use tokio::io::AsyncWriteExt;

use crate::common::lock;
use crate::harness::{Accepted, ServerLog};
use crate::{net, SocketId, WorkloadError};

/// The length of a test's random token.
pub const TOKEN_LEN: usize = 16;
/// A data connection's first bytes: the token, then the connection's (or flow's) number,
/// big-endian `u32`.
pub const DATA_HELLO_LEN: usize = TOKEN_LEN + 4;

/// The bytes a data connection starts with.
pub fn data_hello(token: &[u8; TOKEN_LEN], id: u32) -> [u8; DATA_HELLO_LEN] {
    let mut h = [0u8; DATA_HELLO_LEN];
    h[..TOKEN_LEN].copy_from_slice(token);
    h[TOKEN_LEN..].copy_from_slice(&id.to_be_bytes());
    h
}

/// The connection's number in a [`data_hello`] (its token is checked by whoever holds it).
pub fn hello_id(hello: &[u8; DATA_HELLO_LEN]) -> u32 {
    let mut id = [0u8; 4];
    id.copy_from_slice(&hello[TOKEN_LEN..]);
    u32::from_be_bytes(id)
}

/// The far end's HTTP server as the client half sees it: where to connect, the token, and what
/// the far end has said so far.
pub struct FarHttp {
    dialer: FarDialer,
    /// The SHA-256 of the key the far end's TLS certificate carries (the browser's HTTP/2).
    spki_sha256: Option<[u8; 32]>,
    pub(crate) log: Arc<ServerLog>,
}

/// Opens data connections to the far end: each numbered, its number mapped to this end's port,
/// the hello written first. Cheap to clone and owns what it needs, so a connection can be
/// opened from a task of its own (the browser's proxy opens them as Chromium asks).
#[derive(Clone)]
pub(crate) struct FarDialer {
    pub(crate) addr: SocketAddr,
    token: [u8; TOKEN_LEN],
    next: Arc<AtomicU32>,
    /// Connection number → this end's port.
    ports: Arc<Mutex<HashMap<u32, u16>>>,
}

impl FarDialer {
    /// A new data connection from `sock` (made for `addr`), its hello sent.
    pub(crate) async fn connect(&self, sock: TcpStream) -> io::Result<tokio::net::TcpStream> {
        let mut stream = net::connect(sock, self.addr).await?;
        let id = self.next.fetch_add(1, Ordering::SeqCst);
        // Mapped before the hello leaves: the far end's word of it cannot come first.
        lock(&self.ports).insert(id, stream.local_addr()?.port());
        stream.write_all(&data_hello(&self.token, id)).await?;
        Ok(stream)
    }
}

/// One connection as the far end saw it.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct FarConnection {
    /// The number the client gave it in its hello.
    pub conn: u32,
    /// Read back from the far end's socket when it sends.
    pub cc_read_back: Option<String>,
    /// That socket's `TCP_INFO` when the test ended (when it sends).
    pub final_tcp_info: Option<TcpInfo>,
    /// Requests the far end answered on it, and the body bytes it sent: counted there for the
    /// browser, whose connections this end only relays (`None` for the other workloads, which
    /// count them on this end).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub served: Option<(u32, u64)>,
}

/// What the far end reports when a test is over.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct FarReport {
    pub connections: Vec<FarConnection>,
    /// Errors the far end saw (serving failures, its byte limit), counted exactly.
    pub errors: u32,
    /// The first few of them.
    pub error_messages: Vec<String>,
}

impl FarHttp {
    pub fn new(addr: SocketAddr, token: [u8; TOKEN_LEN]) -> Self {
        let dialer = FarDialer { addr, token, next: Arc::new(AtomicU32::new(0)), ports: Arc::new(Mutex::new(HashMap::new())) };
        FarHttp { dialer, spki_sha256: None, log: Arc::new(ServerLog::default()) }
    }

    /// The far end serves TLS with a key whose SubjectPublicKeyInfo hashes (SHA-256) to this.
    pub fn with_spki_sha256(self, spki_sha256: [u8; 32]) -> Self {
        FarHttp { spki_sha256: Some(spki_sha256), ..self }
    }

    pub(crate) fn spki_sha256(&self) -> Option<[u8; 32]> {
        self.spki_sha256
    }

    pub(crate) fn dialer(&self) -> &FarDialer {
        &self.dialer
    }

    /// The far end took connection `conn` in, with this algorithm read back; `error` when it
    /// runs another than the one asked for (and was closed unserved).
    pub fn accepted(&self, conn: u32, cc_read_back: Option<String>, error: Option<String>) {
        let Some(port) = self.port_of(conn) else { return };
        if let Some(actual) = error {
            *lock(&self.log.mismatch) = Some(actual);
        }
        lock(&self.log.accepted).push(Accepted { client_port: port, at: Instant::now(), cc_read_back });
    }

    /// Records that this end opened connection `conn` from `port`, as its dialer does: for
    /// tests of what a far end may report, without an HTTP load behind them.
    #[doc(hidden)]
    pub fn record_dial(&self, conn: u32, port: u16) {
        lock(&self.dialer.ports).insert(conn, port);
    }

    /// This end's port of connection `conn`.
    pub fn port_of(&self, conn: u32) -> Option<u16> {
        lock(&self.dialer.ports).get(&conn).copied()
    }

    /// The far end's report merged in: its errors into the server's, and its sockets' last
    /// `TCP_INFO` into `sampled` under this end's ports.
    pub(crate) fn absorb(&self, report: &FarReport, sampled: &mut HashMap<SocketId, Option<TcpInfo>>) {
        lock(&self.log.errors).absorb(report.errors, &report.error_messages);
        for c in &report.connections {
            if let (Some(port), Some(info)) = (self.port_of(c.conn), c.final_tcp_info) {
                sampled.insert(SocketId::Connection(port), Some(info));
            }
        }
    }

    fn host(&self) -> String {
        self.dialer.addr.to_string()
    }
}

/// Where the client half connects: the server in the other namespace, or a remote one.
pub(crate) enum Dial<'a> {
    Local { client: &'a Netns, addr: SocketAddrV4 },
    Remote(&'a FarHttp),
}

impl Dial<'_> {
    /// `n` fresh sockets, with `cc` set when the client sends.
    pub(crate) fn sockets(&self, n: usize, cc: Option<&crate::Algorithm>) -> Result<Vec<TcpStream>, WorkloadError> {
        match self {
            Dial::Local { client, addr } => net::sockets(Some(client), (*addr).into(), n, cc),
            Dial::Remote(far) => net::sockets(None, far.dialer.addr, n, cc),
        }
    }

    /// Connects `sock`; to a remote server, the hello goes first.
    pub(crate) async fn connect(&self, sock: TcpStream) -> io::Result<tokio::net::TcpStream> {
        match self {
            Dial::Local { addr, .. } => net::connect(sock, *addr).await,
            Dial::Remote(far) => far.dialer.connect(sock).await,
        }
    }

    /// The `Host` the requests name.
    pub(crate) fn host(&self) -> String {
        match self {
            Dial::Local { addr, .. } => addr.to_string(),
            Dial::Remote(far) => far.host(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_hello_carries_its_connection_number() {
        let hello = data_hello(&[7; TOKEN_LEN], 0x0102_0304);
        assert_eq!((&hello[..TOKEN_LEN], hello_id(&hello)), (&[7; TOKEN_LEN][..], 0x0102_0304));
    }
}
