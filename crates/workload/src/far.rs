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

use ccbench_netns::Netns;
use ccbench_probe::TcpInfo;
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

/// The far end's HTTP server as the client half sees it: where to connect, the token, and what
/// the far end has said so far.
pub struct FarHttp {
    addr: SocketAddr,
    token: [u8; TOKEN_LEN],
    next: AtomicU32,
    /// Connection number → this end's port.
    ports: Mutex<HashMap<u32, u16>>,
    pub(crate) log: Arc<ServerLog>,
}

/// One connection as the far end saw it.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct FarConnection {
    /// The number the client gave it in its hello.
    pub conn: u32,
    /// Read back from the far end's socket when it sends.
    pub cc_read_back: Option<String>,
    /// That socket's `TCP_INFO` when the test ended (when it sends).
    pub final_tcp_info: Option<TcpInfo>,
}

/// What the far end reports when a test is over.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct FarReport {
    pub connections: Vec<FarConnection>,
    /// Errors the far end saw (serving failures, its byte limit), counted exactly.
    pub errors: u32,
    /// The first few of them.
    pub error_messages: Vec<String>,
}

impl FarHttp {
    pub fn new(addr: SocketAddr, token: [u8; TOKEN_LEN]) -> Self {
        FarHttp { addr, token, next: AtomicU32::new(0), ports: Mutex::new(HashMap::new()), log: Arc::new(ServerLog::default()) }
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

    /// This end's port of connection `conn`.
    pub fn port_of(&self, conn: u32) -> Option<u16> {
        lock(&self.ports).get(&conn).copied()
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
        self.addr.to_string()
    }
}

/// Where the client half connects: the server in the other namespace, or a remote one.
pub(crate) enum Dial<'a> {
    Local { client: &'a Netns, addr: SocketAddrV4 },
    Remote(&'a FarHttp),
}

impl Dial<'_> {
    /// `n` fresh sockets, with `cc` set when the client sends.
    pub(crate) fn sockets(&self, n: usize, cc: Option<&str>) -> Result<Vec<TcpStream>, WorkloadError> {
        match self {
            Dial::Local { client, .. } => net::sockets_in(client, n, cc),
            Dial::Remote(far) => net::sockets_here(far.addr, n, cc),
        }
    }

    /// Connects `sock`; to a remote server, the hello goes first.
    pub(crate) async fn connect(&self, sock: TcpStream) -> io::Result<tokio::net::TcpStream> {
        match self {
            Dial::Local { addr, .. } => net::connect(sock, *addr).await,
            Dial::Remote(far) => {
                let mut stream = net::connect(sock, far.addr).await?;
                let id = far.next.fetch_add(1, Ordering::SeqCst);
                lock(&far.ports).insert(id, stream.local_addr()?.port());
                stream.write_all(&data_hello(&far.token, id)).await?;
                Ok(stream)
            }
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
