//! The server half of an HTTP workload (objects, page) on its own, as `ccbench serve` runs it
//! for a remote client: the same hyper server, services and socket handling (`harness::admit`)
//! as the emulated run, behind a gate.
//!
//! The gate: a connection is served only after its first [`DATA_HELLO_LEN`] bytes are the
//! test's token and a connection number not seen before; until then nothing is written to it,
//! and one that fails (wrong token, silence past [`HELLO_TIMEOUT`], a number used twice, one
//! connection over the test's cap) is closed without a byte sent, and never silently: each
//! close is told to serve ([`HttpEndEvents::closed`], a line in its log) and counted among the
//! far end's errors with its reason. Hellos are read in tasks of their own, so a silent peer
//! holds up no other connection; at most [`MAX_PENDING`] wait at once, and a newcomer to a
//! full pool takes the place of the one that has waited longest. The test ends when `done` is
//! set (the client's load is over), at `until`, or both.

use std::collections::{HashMap, HashSet};
use std::convert::Infallible;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use tokio::io::AsyncReadExt;

use crate::common::{lock, stopped};
use crate::far::{FarConnection, FarReport, DATA_HELLO_LEN, TOKEN_LEN};
use crate::harness::{admit, serve, ServerLog, ServerProto};
use crate::sampler::Sampler;
use crate::{ByteBudget, SeriesSink, SocketId};

/// How long an accepted data connection may take to send its hello, at serve's HTTP, bulk and
/// QUIC gates alike. Not 2 s, as it was: a connection whose SYN or SYN-ACK was lost takes an
/// RTT sample of about 1 s from its handshake, so Linux's RTO on it is about 3 s (RFC 6298
/// §2.3: SRTT + 4·RTTVAR); a hello lost once on it arrives 3 s after it was sent, twice 9 s
/// after. Measured through a 25 %-loss path: 85 of 320 connections had an RTO of 3.04–3.1 s
/// (the rest 212 ms), and every hello that came later than 2 s after accept was on one of them.
/// At 2 % loss that closed about one connection in a thousand (seen in CI as an objects
/// connection silently replaced). 10 s covers two losses of the hello; a connection that says
/// nothing holds one of [`MAX_PENDING`] places that long, and only the control connection's
/// own address can take one.
pub const HELLO_TIMEOUT: Duration = Duration::from_secs(10);
/// Connections that may wait for their hello at once, on every data port serve opens (HTTP's,
/// bulk's TCP one in remote, QUIC's gate); a newcomer beyond it takes the place of the one that
/// has waited longest.
pub const MAX_PENDING: usize = 64;

/// Told, as it happens, of each connection the far end takes in.
pub trait HttpEndEvents: Sync {
    /// Connection `conn` passed the gate; `cc_read_back` is what its socket runs when the
    /// server sends; `mismatch` when that is not what was asked for (it is closed unserved).
    fn accepted(&self, conn: u32, cc_read_back: Option<&str>, mismatch: Option<&str>);
    /// The gate closed a connection before admission, for `reason` (which names the peer). It
    /// is also counted among the far end's errors, so the client's result says so: a client
    /// whose connection was closed here replaces it, and without this the replacement is all
    /// that would show.
    fn closed(&self, reason: &str);
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
    sample_interval: Duration,
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
    let interval = crate::common::sample_interval(sample_interval);
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

fn report(log: &ServerLog, mut finals: HashMap<SocketId, Option<ccbench_kernel_tcp::TcpInfo>>) -> FarReport {
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
    let (tx, mut rx) = tokio::sync::mpsc::channel::<Result<(tokio::net::TcpStream, u32), String>>(MAX_PENDING);
    // Connections reading their hello, oldest first.
    let mut waiting: std::collections::VecDeque<(tokio::task::AbortHandle, std::net::SocketAddr)> = std::collections::VecDeque::new();
    let mut seen = HashSet::new();
    let closed = |reason: String| {
        end.events.closed(&reason);
        lock(&log.errors).push(format!("closed before admission: {reason}"));
    };
    loop {
        tokio::select! {
            accepted = listener.accept() => match accepted {
                Ok((stream, from)) => {
                    if let Some(peer) = end.peer.filter(|p| *p != from.ip()) {
                        closed(format!("a connection from {from}: not the control connection's address {peer}"));
                        continue;
                    }
                    // A full pool makes room instead of refusing: the connection that has waited
                    // longest goes (its task aborted, its socket closed). Silent connections
                    // from the client's own address could otherwise keep its load out.
                    waiting.retain(|(h, _)| !h.is_finished());
                    if waiting.len() >= MAX_PENDING {
                        if let Some((oldest, its_from)) = waiting.pop_front() {
                            oldest.abort();
                            closed(format!("a connection from {its_from}: {MAX_PENDING} connections waited for their hello; the longest waiting made room for one from {from}"));
                        }
                    }
                    let (tx, token) = (tx.clone(), end.token);
                    let task = tokio::spawn(async move {
                        let mut stream = stream;
                        let hello = read_hello(&mut stream, &token).await.map(|id| (stream, id)).map_err(|why| format!("a connection from {from}: {why}"));
                        let _ = tx.send(hello).await;
                    });
                    waiting.push_back((task.abort_handle(), from));
                }
                Err(e) => {
                    lock(&log.errors).push(format!("accept: {e}"));
                    tokio::time::sleep(Duration::from_millis(10)).await;
                }
            },
            Some(hello) = rx.recv() => {
                let (stream, id) = match hello {
                    Ok(h) => h,
                    Err(reason) => {
                        closed(reason);
                        continue;
                    }
                };
                // Numbers fit a port-sized id: the cap is far below 65536.
                if seen.len() >= end.max_connections as usize || id > u16::MAX as u32 || !seen.insert(id) {
                    closed(format!("connection {id}: a number used twice, or over the test's {} connections", end.max_connections));
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

/// The connection number, when the first bytes are the token and a number; why not (and not a
/// byte written) otherwise.
async fn read_hello(stream: &mut tokio::net::TcpStream, token: &[u8; TOKEN_LEN]) -> Result<u32, String> {
    let mut hello = [0u8; DATA_HELLO_LEN];
    let until = tokio::time::Instant::now() + HELLO_TIMEOUT;
    let mut got = 0;
    while got < DATA_HELLO_LEN {
        match tokio::time::timeout_at(until, stream.read(&mut hello[got..])).await {
            Err(_) => return Err(format!("no hello within {} s ({got} of its {DATA_HELLO_LEN} bytes)", HELLO_TIMEOUT.as_secs_f64())),
            Ok(Ok(0)) => return Err(format!("it closed after {got} of its hello's {DATA_HELLO_LEN} bytes")),
            Ok(Ok(n)) => got += n,
            Ok(Err(e)) => return Err(format!("reading its hello: {e}")),
        }
    }
    if !same(&hello[..TOKEN_LEN], token) {
        return Err("a wrong token".into());
    }
    Ok(crate::far::hello_id(&hello))
}

/// Compares without an early exit, so the time taken says nothing of where they differ.
pub fn same(a: &[u8], b: &[u8]) -> bool {
    a.len() == b.len() && a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

#[cfg(test)]
mod tests {
    use std::io::Write;
    use std::net::TcpStream;
    use std::sync::Mutex;

    use super::*;
    use crate::{ObjectMethod, ObjectsSpec};

    #[derive(Default)]
    struct Told {
        accepted: Mutex<Vec<u32>>,
        closed: Mutex<Vec<String>>,
    }

    impl HttpEndEvents for Told {
        fn accepted(&self, conn: u32, _: Option<&str>, _: Option<&str>) {
            lock(&self.accepted).push(conn);
        }
        fn closed(&self, reason: &str) {
            lock(&self.closed).push(reason.to_string());
        }
    }

    /// The gate closes nothing silently: a connection that hangs up before its hello and one
    /// with a wrong token are each told to serve and counted among the far end's errors, with
    /// the reason. And a hello that comes 2.5 s after the connection (as one lost once on a
    /// connection whose SYN was retransmitted: its RTO is 3 s) is admitted, not closed as it
    /// was under the 2 s timeout.
    #[test]
    fn the_gate_tells_every_close_and_waits_for_a_late_hello() {
        let token = [5u8; TOKEN_LEN];
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = listener.local_addr().unwrap();
        let spec = ObjectsSpec {
            requests: 1,
            object_bytes: 1000,
            concurrency: 1,
            method: ObjectMethod::Put,
            cc: "cubic".parse().unwrap(),
            port: 0,
            sample_interval_us: 10_000,
            timeout_s: 10.0,
            quic_receiver_cc: None,
        };
        let (done, told) = (AtomicBool::new(false), Told::default());
        let end = HttpEnd {
            token,
            peer: Some(addr.ip()),
            max_connections: 4,
            budget: Arc::new(ByteBudget::new(1 << 20, "over".into())),
            epoch: Instant::now(),
            until: Instant::now() + Duration::from_secs(20),
            done: &done,
            series: &crate::NoSeries,
            events: &told,
        };
        let report = std::thread::scope(|s| {
            let server = s.spawn(|| crate::objects::serve_objects_end(&spec, listener, &end));
            let hangs_up = TcpStream::connect(addr).unwrap();
            let mut wrong = TcpStream::connect(addr).unwrap();
            wrong.write_all(&crate::far::data_hello(&[6; TOKEN_LEN], 1)).unwrap();
            let mut late = TcpStream::connect(addr).unwrap();
            std::thread::sleep(Duration::from_millis(300));
            drop(hangs_up);
            std::thread::sleep(Duration::from_millis(2200));
            late.write_all(&crate::far::data_hello(&token, 0)).unwrap();
            let admitted = Instant::now() + Duration::from_secs(5);
            while lock(&told.accepted).is_empty() && Instant::now() < admitted {
                std::thread::sleep(Duration::from_millis(10));
            }
            done.store(true, Ordering::SeqCst);
            server.join().unwrap()
        });
        assert_eq!(*lock(&told.accepted), [0], "the late hello's connection was admitted");
        let closed = lock(&told.closed).clone();
        assert_eq!(closed.len(), 2, "{closed:?}");
        assert!(closed.iter().any(|r| r.ends_with("it closed after 0 of its hello's 20 bytes")), "{closed:?}");
        assert!(closed.iter().any(|r| r.ends_with("a wrong token")), "{closed:?}");
        assert_eq!(report.errors, 2, "{report:?}");
        assert!(report.error_messages.iter().all(|m| m.starts_with("closed before admission: a connection from 127.0.0.1:")), "{report:?}");
    }
}
