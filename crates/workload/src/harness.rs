//! The one harness of the HTTP workloads (`objects`, `page`): the tokio runtime they create
//! and shut down themselves, the server's accept loop, the sampler's thread, and the race of
//! the client's load against the deadline (the result is then marked timed out, "unfinished")
//! and the stop flag (Ctrl-C: "interrupted").

use std::cell::RefCell;
use std::convert::Infallible;
use std::future::Future;
use std::net::{Ipv4Addr, TcpListener};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use ccbench_netns::Netns;

use crate::common::{lock, stopped, Errors};
use crate::net::confirm_congestion;
use crate::sampler::Sampler;
use crate::{RunContext, SeriesSink, Side, SocketId, WorkloadError};

/// How a load ended.
pub(crate) enum Finish<T> {
    /// The client's load ran to its end, with this outcome.
    Completed(T),
    /// The stop flag was set.
    Stopped,
    /// The deadline passed first.
    TimedOut,
}

/// Which HTTP version a server speaks (chosen by the workload, not negotiated: h2c is used with
/// prior knowledge).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum ServerProto {
    Http1,
    Http2,
}

/// One connection the server accepted.
#[derive(Clone, Debug)]
pub(crate) struct Accepted {
    pub client_port: u16,
    /// When it was accepted.
    pub at: Instant,
    /// Read back from the accepted socket when the server is the sender.
    pub cc_read_back: Option<String>,
}

/// What the server side reports back to the workload.
#[derive(Default)]
pub(crate) struct ServerLog {
    pub accepted: Mutex<Vec<Accepted>>,
    /// The algorithm an accepted sending socket really ran, when it was not the one requested.
    pub mismatch: Mutex<Option<String>>,
    pub errors: Mutex<Errors>,
}

/// An HTTP workload's runtime, server and sampler, from its setup to its final read.
pub(crate) struct Harness<'r> {
    epoch: Instant,
    stop: &'r AtomicBool,
    /// The namespace and address the server listens in; `None` when the server is a remote
    /// `ccbench serve` (see [`Harness::client_only`]).
    server: Option<(&'r Netns, Ipv4Addr)>,
    pub sampler: Sampler<'r>,
    pub server_log: Arc<ServerLog>,
    /// Made by [`Harness::drive`], ended by [`Harness::shutdown`].
    rt: RefCell<Option<tokio::runtime::Runtime>>,
    deadline: Instant,
    interval: Duration,
    /// Set by [`Harness::with_tls`]: every accepted connection is served over TLS.
    tls: Option<Arc<rustls::ServerConfig>>,
}

impl<'r> Harness<'r> {
    /// Checks the timeout and starts the clock on it: it bounds the whole run, setup included.
    pub(crate) fn new(run: &RunContext<'r>, timeout: Duration, sample_interval: Duration) -> Result<Self, WorkloadError> {
        let h = Self::client_only(run.epoch, run.stop, run.series, timeout, sample_interval)?;
        Ok(Harness { server: Some((run.server, run.server_addr)), ..h })
    }

    /// A harness for the client half alone, against a server elsewhere (a remote `ccbench
    /// serve`): it samples the client's sending sockets and races the load against the
    /// deadline and the stop flag, and has no server of its own.
    pub(crate) fn client_only(
        epoch: Instant,
        stop: &'r AtomicBool,
        series: &'r dyn SeriesSink,
        timeout: Duration,
        sample_interval: Duration,
    ) -> Result<Self, WorkloadError> {
        Ok(Harness {
            epoch,
            stop,
            server: None,
            sampler: Sampler::new(series),
            server_log: Arc::new(ServerLog::default()),
            rt: RefCell::new(None),
            deadline: crate::common::deadline(timeout)?,
            interval: crate::common::sample_interval(sample_interval),
            tls: None,
        })
    }

    /// Serves over TLS with `config` (the browser's HTTP/2, negotiated with ALPN).
    pub(crate) fn with_tls(self, config: Arc<rustls::ServerConfig>) -> Self {
        Harness { tls: Some(config), ..self }
    }

    /// True when the run was stopped before it began.
    pub(crate) fn stopped_already(&self) -> bool {
        self.stop.load(Ordering::SeqCst)
    }

    /// The server's listener on `port`, with `cc` set when the server sends.
    pub(crate) fn listen(&self, port: u16, cc: Option<&crate::Algorithm>) -> Result<TcpListener, WorkloadError> {
        let (ns, addr) = self.server.ok_or_else(|| WorkloadError::Setup("this load has no local server".into()))?;
        crate::net::listen_in(ns, addr, port, cc)
    }

    /// Runs the client's load alone (the server is elsewhere), sampling the client's sending
    /// sockets on a thread of its own, until the load ends, the stop flag is set or the
    /// deadline passes.
    pub(crate) fn drive_client<T>(&self, client: impl Future<Output = T>) -> Result<Finish<T>, WorkloadError> {
        let rt = crate::common::multi_thread_runtime()?;
        let mut slot = self.rt.borrow_mut();
        let rt = slot.insert(rt);
        let (sampler, deadline, interval, epoch, stop) = (&self.sampler, self.deadline, self.interval, self.epoch, self.stop);
        let done = AtomicBool::new(false);
        Ok(std::thread::scope(|s| {
            s.spawn(|| sampler.run(epoch, Instant::now(), interval, || !done.load(Ordering::SeqCst), |_| {}));
            let how = rt.block_on(async {
                tokio::select! {
                    out = client => Finish::Completed(out),
                    () = stopped(stop) => Finish::Stopped,
                    () = tokio::time::sleep_until(deadline.into()) => Finish::TimedOut,
                }
            });
            done.store(true, Ordering::SeqCst);
            how
        }))
    }

    /// Serves HTTP on `listener` (sending sockets, when `server_cc` is given, set to it, read
    /// back and sampled) while `client` runs its load, sampling on a thread of its own, until
    /// the load ends, the stop flag is set or the deadline passes, whichever comes first.
    /// `make_service` is called once per accepted connection, with the client's port.
    pub(crate) fn drive<T, S, M, B>(
        &self,
        listener: TcpListener,
        proto: ServerProto,
        server_cc: Option<&crate::Algorithm>,
        make_service: M,
        client: impl Future<Output = T>,
    ) -> Result<Finish<T>, WorkloadError>
    where
        M: Fn(u16) -> S,
        S: hyper::service::Service<hyper::Request<hyper::body::Incoming>, Response = hyper::Response<B>, Error = Infallible> + Send + 'static,
        S::Future: Send + 'static,
        B: hyper::body::Body + Send + 'static,
        B::Data: Send,
        B::Error: Into<Box<dyn std::error::Error + Send + Sync>>,
    {
        let rt = crate::common::multi_thread_runtime()?;
        let listener = {
            let _guard = rt.enter();
            tokio::net::TcpListener::from_std(listener)?
        };
        let mut slot = self.rt.borrow_mut();
        let rt = slot.insert(rt);
        let (sampler, server_log, deadline, interval, epoch, stop) = (&self.sampler, &self.server_log, self.deadline, self.interval, self.epoch, self.stop);
        let tls = self.tls.clone().map(tokio_rustls::TlsAcceptor::from);
        let done = AtomicBool::new(false);
        Ok(std::thread::scope(|s| {
            s.spawn(|| sampler.run(epoch, Instant::now(), interval, || !done.load(Ordering::SeqCst), |_| {}));
            let how = rt.block_on(async {
                tokio::select! {
                    out = client => Finish::Completed(out),
                    never = accept_loop(listener, proto, tls, server_cc, sampler, epoch, server_log.clone(), make_service) => match never {},
                    () = stopped(stop) => Finish::Stopped,
                    () = tokio::time::sleep_until(deadline.into()) => Finish::TimedOut,
                }
            });
            done.store(true, Ordering::SeqCst);
            how
        }))
    }

    /// Ends the server and any connection still open. The sampler's duplicate descriptors keep
    /// the sending sockets readable for the final `TCP_INFO`.
    pub(crate) fn shutdown(&self) {
        if let Some(rt) = self.rt.borrow_mut().take() {
            rt.shutdown_timeout(Duration::from_millis(200));
        }
    }

    /// The algorithm a socket the server accepted ran instead of the one requested.
    pub(crate) fn server_mismatch(&self) -> Option<String> {
        lock(&self.server_log.mismatch).clone()
    }
}

/// Accepts connections forever, serving each with a fresh service from `make_service`. With
/// `cc` (the server sends), the algorithm is set again on every accepted socket and read back;
/// a socket that runs something else is closed unserved and recorded as a mismatch. Sending
/// sockets are registered with `sampler`. With `tls`, each connection's handshake runs in its
/// own task, so a slow one holds up no other.
#[allow(clippy::too_many_arguments)]
async fn accept_loop<S, M, B>(
    listener: tokio::net::TcpListener,
    proto: ServerProto,
    tls: Option<tokio_rustls::TlsAcceptor>,
    cc: Option<&crate::Algorithm>,
    sampler: &Sampler<'_>,
    epoch: Instant,
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
    loop {
        let (stream, peer) = match listener.accept().await {
            Ok(x) => x,
            Err(e) => {
                lock(&log.errors).push(format!("accept: {e}"));
                tokio::time::sleep(Duration::from_millis(10)).await;
                continue;
            }
        };
        let client_port = peer.port();
        if admit(&stream, client_port, cc, sampler, epoch, &log).is_err() {
            continue;
        }
        let service = make_service(client_port);
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
                lock(&log.errors).push(format!("serving {client_port}: {e}"));
            }
        });
    }
}

/// Takes in an accepted connection, known as `id` (the client's port here; the connection
/// number a remote client gave it in `ccbench serve`). With `cc` (the server sends), the
/// algorithm is set again on the socket and read back; a socket that runs something else is
/// recorded as a mismatch and `Err` carries what it runs: it must be closed unserved. A
/// sending socket is registered with `sampler`. Every connection is recorded in `log`.
pub(crate) fn admit(
    stream: &tokio::net::TcpStream,
    id: u16,
    cc: Option<&crate::Algorithm>,
    sampler: &Sampler<'_>,
    epoch: Instant,
    log: &ServerLog,
) -> Result<Option<String>, String> {
    let _ = stream.set_nodelay(true);
    let cc_read_back = match cc {
        None => None,
        Some(cc) => match confirm_congestion(stream, cc, Side::Server) {
            Ok(actual) => Some(actual),
            Err(e) => {
                let (actual, read) = match e {
                    WorkloadError::CongestionMismatch { actual, .. } => (actual.clone(), Some(actual)),
                    e => (format!("<unreadable: {e}>"), None),
                };
                *lock(&log.mismatch) = Some(actual.clone());
                lock(&log.accepted).push(Accepted { client_port: id, at: Instant::now(), cc_read_back: read });
                return Err(actual);
            }
        },
    };
    if cc.is_some() {
        sampler.track(SocketId::Connection(id), stream, epoch);
    }
    lock(&log.accepted).push(Accepted { client_port: id, at: Instant::now(), cc_read_back: cc_read_back.clone() });
    Ok(cc_read_back)
}

/// Serves one connection to its end.
pub(crate) async fn serve<IO, S, B>(stream: IO, proto: ServerProto, service: S) -> Result<(), String>
where
    IO: tokio::io::AsyncRead + tokio::io::AsyncWrite + Unpin + Send + 'static,
    S: hyper::service::Service<hyper::Request<hyper::body::Incoming>, Response = hyper::Response<B>, Error = Infallible> + Send + 'static,
    S::Future: Send + 'static,
    B: hyper::body::Body + Send + 'static,
    B::Data: Send,
    B::Error: Into<Box<dyn std::error::Error + Send + Sync>>,
{
    use hyper_util::rt::{TokioExecutor, TokioIo, TokioTimer};
    let io = TokioIo::new(stream);
    let served = match proto {
        ServerProto::Http1 => hyper::server::conn::http1::Builder::new().timer(TokioTimer::new()).serve_connection(io, service).await,
        ServerProto::Http2 => {
            hyper::server::conn::http2::Builder::new(TokioExecutor::new())
                .timer(TokioTimer::new())
                // What common servers allow (nginx: 128).
                .max_concurrent_streams(128)
                .serve_connection(io, service)
                .await
        }
    };
    served.map_err(|e| e.to_string())
}
