//! The server half of an HTTP workload (objects, page) on its own, as `ccbench serve` runs it
//! for a remote client: the same hyper server, services and socket handling (`harness::admit`)
//! as the emulated run, behind a gate.
//!
//! The gate: a connection is served only after its first [`DATA_HELLO_LEN`] bytes are the
//! test's token and a connection number not seen before; until then nothing is written to it,
//! and one that fails (wrong token, silence past [`HELLO_TIMEOUT`], a number used twice, one
//! connection over the test's cap) is closed without a byte sent. Hellos are read in tasks of
//! their own, so a silent peer holds up no other connection; at most [`MAX_PENDING`] wait at
//! once. The test ends when `done` is set (the client's load is over), at `until`, or both.

use std::collections::{HashMap, HashSet};
use std::convert::Infallible;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use tokio::io::AsyncReadExt;

use crate::common::{lock, stopped};
use crate::far::{FarConnection, FarReport, DATA_HELLO_LEN, TOKEN_LEN};
use crate::harness::{admit, serve, ServerLog, ServerProto};
use crate::sampler::Sampler;
use crate::{ByteBudget, SeriesSink, SocketId};

/// How long an accepted connection may take to send its hello.
pub const HELLO_TIMEOUT: Duration = Duration::from_secs(2);
/// Connections that may wait for their hello at once; more are closed at once.
const MAX_PENDING: usize = 64;

/// Told, as it happens, of each connection the far end takes in.
pub trait HttpEndEvents: Sync {
    /// Connection `conn` passed the gate; `cc_read_back` is what its socket runs when the
    /// server sends; `mismatch` when that is not what was asked for (it is closed unserved).
    fn accepted(&self, conn: u32, cc_read_back: Option<&str>, mismatch: Option<&str>);
}

/// How one test's far end runs.
pub struct HttpEnd<'a> {
    pub token: [u8; TOKEN_LEN],
    /// The only address a connection is taken from (serve: its control connection's peer);
    /// others are closed at once, before they can fill the queue of connections still to
    /// present their token.
    pub peer: Option<std::net::IpAddr>,
    /// Connections the test may open, all told (reconnections included).
    pub max_connections: u32,
    /// Bytes the test may move through this end (response and request bodies).
    pub budget: Arc<ByteBudget>,
    /// Sample times count from here.
    pub epoch: Instant,
    pub until: Instant,
    /// Set when the client's load is over (or serve is stopping).
    pub done: &'a AtomicBool,
    pub series: &'a dyn SeriesSink,
    pub events: &'a dyn HttpEndEvents,
}

/// Serves `listener` (non-blocking, bound by the caller) until the test ends; what the far end
/// saw of each connection, its errors, and its sending sockets' last `TCP_INFO`. With `tls`,
/// each connection that passed the gate is served over TLS (the browser's HTTP/2): the hello
/// is outside it, so whoever relays the connection adds the hello and never sees plaintext.
#[allow(clippy::too_many_arguments)]
pub(crate) fn serve_end<S, M, B>(
    listener: std::net::TcpListener,
    proto: ServerProto,
    tls: Option<Arc<rustls::ServerConfig>>,
    server_cc: Option<&crate::Algorithm>,
    sample_interval_us: u64,
    make_service: M,
    end: &HttpEnd<'_>,
) -> FarReport
where
    M: Fn(u16) -> S,
    S: hyper::service::Service<hyper::Request<hyper::body::Incoming>, Response = hyper::Response<B>, Error = Infallible> + Send + 'static,
    S::Future: Send + 'static,
    B: hyper::body::Body + Send + 'static,
    B::Data: Send,
    B::Error: Into<Box<dyn std::error::Error + Send + Sync>>,
{
    let log = Arc::new(ServerLog::default());
    let failed = |message: String| {
        lock(&log.errors).push(message);
        report(&log, HashMap::new())
    };
    let rt = match crate::common::multi_thread_runtime() {
        Ok(rt) => rt,
        Err(e) => return failed(format!("starting the server: {e}")),
    };
    let listener = {
        let _guard = rt.enter();
        match listener.set_nonblocking(true).and_then(|_| tokio::net::TcpListener::from_std(listener)) {
            Ok(l) => l,
            Err(e) => return failed(format!("the data port: {e}")),
        }
    };
    let sampler = Sampler::new(end.series);
    let interval = Duration::from_micros(sample_interval_us.max(1000));
    let sampling = AtomicBool::new(true);
    std::thread::scope(|s| {
        s.spawn(|| sampler.run(end.epoch, Instant::now(), interval, || sampling.load(Ordering::SeqCst), |_| {}));
        rt.block_on(async {
            tokio::select! {
                never = gated_accept_loop(listener, proto, tls.map(tokio_rustls::TlsAcceptor::from), server_cc, &sampler, end, log.clone(), make_service) => match never {},
                () = stopped(end.done) => {},
                () = tokio::time::sleep_until(end.until.into()) => {},
            }
        });
        sampling.store(false, Ordering::SeqCst);
    });
    rt.shutdown_timeout(Duration::from_millis(200));
    report(&log, sampler.finish(end.epoch))
}

fn report(log: &ServerLog, mut finals: HashMap<SocketId, Option<ccbench_probe::TcpInfo>>) -> FarReport {
    let errors = lock(&log.errors);
    FarReport {
        connections: lock(&log.accepted)
            .iter()
            .map(|a| FarConnection {
                conn: a.client_port as u32,
                cc_read_back: a.cc_read_back.clone(),
                final_tcp_info: finals.remove(&SocketId::Connection(a.client_port)).flatten(),
                served: None,
            })
            .collect(),
        errors: errors.count,
        error_messages: errors.messages.clone(),
    }
}

/// Accepts forever: each connection's hello is read in a task of its own; the connections
/// that pass come back here to be taken in (algorithm, sampler, log) and served.
#[allow(clippy::too_many_arguments)]
async fn gated_accept_loop<S, M, B>(
    listener: tokio::net::TcpListener,
    proto: ServerProto,
    tls: Option<tokio_rustls::TlsAcceptor>,
    cc: Option<&crate::Algorithm>,
    sampler: &Sampler<'_>,
    end: &HttpEnd<'_>,
    log: Arc<ServerLog>,
    make_service: M,
) -> Infallible
where
    M: Fn(u16) -> S,
    S: hyper::service::Service<hyper::Request<hyper::body::Incoming>, Response = hyper::Response<B>, Error = Infallible> + Send + 'static,
    S::Future: Send + 'static,
    B: hyper::body::Body + Send + 'static,
    B::Data: Send,
    B::Error: Into<Box<dyn std::error::Error + Send + Sync>>,
{
    let (tx, mut rx) = tokio::sync::mpsc::channel::<(tokio::net::TcpStream, u32)>(MAX_PENDING);
    let pending = Arc::new(AtomicUsize::new(0));
    let mut seen = HashSet::new();
    loop {
        tokio::select! {
            accepted = listener.accept() => match accepted {
                Ok((stream, from)) => {
                    if end.peer.is_some_and(|p| p != from.ip()) {
                        continue;
                    }
                    if pending.fetch_add(1, Ordering::SeqCst) >= MAX_PENDING {
                        pending.fetch_sub(1, Ordering::SeqCst);
                        continue;
                    }
                    let (tx, pending, token) = (tx.clone(), pending.clone(), end.token);
                    tokio::spawn(async move {
                        let mut stream = stream;
                        if let Some(id) = read_hello(&mut stream, &token).await {
                            let _ = tx.send((stream, id)).await;
                        }
                        pending.fetch_sub(1, Ordering::SeqCst);
                    });
                }
                Err(e) => {
                    lock(&log.errors).push(format!("accept: {e}"));
                    tokio::time::sleep(Duration::from_millis(10)).await;
                }
            },
            Some((stream, id)) = rx.recv() => {
                // Numbers fit a port-sized id: the cap is far below 65536.
                if seen.len() >= end.max_connections as usize || id > u16::MAX as u32 || !seen.insert(id) {
                    lock(&log.errors).push(format!("connection {id} refused: a number used twice, or over the test's {} connections", end.max_connections));
                    continue;
                }
                match admit(&stream, id as u16, cc, sampler, end.epoch, &log) {
                    Ok(read_back) => end.events.accepted(id, read_back.as_deref(), None),
                    Err(actual) => {
                        end.events.accepted(id, Some(&actual), Some(&actual));
                        continue;
                    }
                }
                let service = make_service(id as u16);
                let log = log.clone();
                let tls = tls.clone();
                tokio::spawn(async move {
                    let served = match tls {
                        None => serve(stream, proto, service).await,
                        Some(tls) => match tls.accept(stream).await {
                            Ok(stream) => serve(stream, proto, service).await,
                            Err(e) => Err(format!("TLS handshake: {e}")),
                        },
                    };
                    if let Err(e) = served {
                        lock(&log.errors).push(format!("{}{e}", serving_prefix(id)));
                    }
                });
            }
        }
    }
}

/// How a serving error of connection `id` begins (the browser's end drops those of connections
/// that carried no request).
pub(crate) fn serving_prefix(id: u32) -> String {
    format!("serving connection {id}: ")
}

/// The connection number, when the first bytes are the token and a number; `None` (and not a
/// byte written) otherwise.
async fn read_hello(stream: &mut tokio::net::TcpStream, token: &[u8; TOKEN_LEN]) -> Option<u32> {
    let mut hello = [0u8; DATA_HELLO_LEN];
    tokio::time::timeout(HELLO_TIMEOUT, stream.read_exact(&mut hello)).await.ok()?.ok()?;
    same(&hello[..TOKEN_LEN], token).then(|| crate::far::hello_id(&hello))
}

/// Compares without an early exit, so the time taken says nothing of where they differ.
pub fn same(a: &[u8], b: &[u8]) -> bool {
    a.len() == b.len() && a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}
