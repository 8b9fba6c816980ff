//! A request load over one QUIC connection, for any workload whose load is requests on
//! [`StreamLane`](super::streams::StreamLane)s: the server answering every stream from the
//! workload's [`Store`], the sending end sampled every interval on a thread of its own (into the
//! run's series as `SocketId::Connection(client_port)`, `conn-PORT` as a TCP connection's), and
//! the load raced against the deadline and the stop flag. The QUIC counterpart of `harness.rs`.
//!
//! Two ways to start: [`OneConnection::run`] sets the connection up (both ends' controllers
//! read back) before the load starts, so that the load holds requests only (objects);
//! [`OneConnection::run_from_handshake`] starts the load's clock before the handshake, as a
//! browser's navigation starts before its connect, and runs the load on the client's end as
//! soon as that is up while the server's end joins (page).
//!
//! Where the server's end runs is [`ServerEnd`]'s: here, in the run's other namespace, or in a
//! remote `ccbench serve` (`far.rs`), which serves the same [`Store`] behind its gate and
//! reports its end (its controller, and when it sends, its samples and its last one) over the
//! control connection; the load, its lanes and its result are the same either way.

use std::future::Future;
use std::net::SocketAddrV4;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::{Duration, Instant};

use noq::{Connection, Endpoint, VarInt};

use super::far::{FarQuic, NearConn, QuicFarReport};
use super::gate::dial_gated;
use super::observe::Probe;
use super::pair::{self, connect_pair, dial, quic_algorithm, server_endpoint, Pair, Sampled, Sending};
use super::streams::{serve, Store};
use super::{connection_seed, observed_transport, quic_name, read_back, ReadBack, Tls, Windows, HANDSHAKE_TIMEOUT};
use crate::common::{lock, multi_thread_runtime, stopped, Errors};
use crate::harness::Finish;
use crate::{Algorithm, MeasureHook, NoMeasureHook, RunContext, SenderRecord, SeriesSink, Side, WorkloadError};

/// Where a load's server end runs.
pub(crate) enum ServerEnd<'a> {
    /// In the run's server namespace, this process serving it.
    Here(&'a RunContext<'a>),
    /// In a remote `ccbench serve` (`far.rs`); `end` ends it and returns its report, once the
    /// load is over.
    Far { far: &'a FarQuic, epoch: Instant, stop: &'a AtomicBool, series: &'a dyn SeriesSink, end: &'a dyn Fn() -> Result<QuicFarReport, String> },
}

impl<'a> ServerEnd<'a> {
    fn stop(&self) -> &AtomicBool {
        match self {
            ServerEnd::Here(run) => run.stop,
            ServerEnd::Far { stop, .. } => stop,
        }
    }
    pub(crate) fn epoch(&self) -> Instant {
        match self {
            ServerEnd::Here(run) => run.epoch,
            ServerEnd::Far { epoch, .. } => *epoch,
        }
    }
    fn series(&self) -> &dyn SeriesSink {
        match self {
            ServerEnd::Here(run) => run.series,
            ServerEnd::Far { series, .. } => *series,
        }
    }
    /// The run's measured span: a remote run's is the load's own figures.
    pub(crate) fn hook(&self) -> &'a dyn MeasureHook {
        match self {
            ServerEnd::Here(run) => run.hook,
            ServerEnd::Far { .. } => &NoMeasureHook,
        }
    }
}

/// The connection a load runs on, as this process holds it: both ends (here), or the client's
/// end of one to a far end.
enum Held {
    Pair(Pair),
    Near(NearConn),
}

impl Held {
    fn client(&self) -> &Connection {
        match self {
            Held::Pair(p) => p.client(),
            Held::Near(n) => &n.conn,
        }
    }
}

impl Sampled for Held {
    fn sending(&self) -> Option<Sending<'_>> {
        match self {
            Held::Pair(p) => p.sending(),
            Held::Near(n) => n.sending(),
        }
    }
}

/// One connection's load: where it runs and what it asks of the connection.
pub(crate) struct OneConnection<'a> {
    pub over: ServerEnd<'a>,
    /// The sending end's algorithm (a `quic:` one).
    pub cc: &'a Algorithm,
    /// The receiving end's algorithm after `quic:`, when it should differ (provoking scenario
    /// 5's mix-up on purpose); by default the sender's.
    pub receiver_cc: Option<&'a str>,
    pub sender: Side,
    /// The server's port here (a far end's is its own).
    pub port: u16,
    pub timeout: Duration,
    pub sample_interval: Duration,
    /// What its server answers (a far end has its own copy, `QuicRequests`).
    pub store: Arc<dyn Store>,
}

/// How a load over one connection ended.
pub(crate) struct LoadEnd<T> {
    pub how: Finish<T>,
    /// The connection's client port and its sender's record, when it was set up.
    pub connection: Option<(u16, SenderRecord)>,
    /// What went wrong serving it.
    pub server_errors: Errors,
    /// When the load's clock started (`None`: the run was stopped before it began).
    pub started: Option<Instant>,
    /// When the load ended (completed, stopped or timed out), before the teardown.
    pub ended: Instant,
    /// Why the connection was not (wholly) set up when the load started before the handshake:
    /// the client's end never came up, or the server's end failed (and the client's was closed).
    pub setup_error: Option<String>,
}

/// What a load needs before its clock starts: the runtime, and here the server listening and
/// the TLS.
struct Ready {
    deadline: Instant,
    algorithm: String,
    receiver_alg: String,
    rt: tokio::runtime::Runtime,
    here: Option<Here>,
}

/// The server's end here.
struct Here {
    tls: Tls,
    server_sa: SocketAddrV4,
    server: Endpoint,
}

impl OneConnection<'_> {
    /// Sets the connection up, then runs `client` on the client's end of it until it ends,
    /// the stop flag is set or the deadline (`timeout` from now, setup included) passes. A
    /// run stopped before it began sets nothing up.
    pub(crate) fn run<T>(self, client: impl AsyncFnOnce(&Connection) -> T) -> Result<LoadEnd<T>, WorkloadError> {
        let Some(r) = self.ready()? else { return self.stopped_before() };
        let server_errors = Arc::new(Mutex::new(Errors::default()));
        let held = match (&self.over, &r.here) {
            (ServerEnd::Here(run), Some(h)) => {
                let pair =
                    r.rt.block_on(connect_pair(run, &h.server, &h.tls, h.server_sa, self.sender, &r.algorithm, &r.receiver_alg, 0, None, Windows::default()))?;
                r.rt.spawn(serve(pair.server().clone(), self.store.clone(), server_errors.clone()));
                Held::Pair(pair)
            }
            (ServerEnd::Far { far, .. }, _) => match r.rt.block_on(self.dial_far(far, &r)) {
                Ok(n) => Held::Near(n),
                Err(e) => {
                    // The far end waits for the load's end: told, whatever failed here.
                    let _ = self.end_far();
                    return Err(e);
                }
            },
            (ServerEnd::Here(_), None) => unreachable!("ready() makes the server's end here"),
        };
        let once = OnceLock::from(held);
        let started = Instant::now();
        let load = client(once.get().expect("just set").client());
        let (how, ended, last) = self.race(&r, &once, load);
        self.end(r, &once, last, &server_errors, how, started, ended, None)
    }

    /// Opens the connection to the far end behind its gate, this end's controller read back
    /// (checked when it sends).
    async fn dial_far(&self, far: &FarQuic, r: &Ready) -> Result<NearConn, WorkloadError> {
        let sends = self.sender == Side::Client;
        let alg = if sends { &r.algorithm } else { &r.receiver_alg };
        let probe = Arc::new(Probe::default());
        // A remote end has no run seed: the connection is seeded by its number, as bulk's.
        let (transport, bbr) = observed_transport(alg, &probe, connection_seed(0, 0))?;
        let (endpoint, conn) = dial_gated(far.server, None, far.cert.clone(), transport, &far.token, 0).await?;
        let port = endpoint.local_addr()?.port();
        far.dialled(port);
        let rb = read_back(&conn);
        let wanted = quic_name(alg);
        if sends && (rb != wanted || !probe.was_built()) {
            conn.close(VarInt::from_u32(1), b"wrong controller");
            return Err(WorkloadError::CongestionMismatch { requested: wanted, actual: rb });
        }
        Ok(NearConn { conn, probe, bbr, sends, port, read_back: rb, _endpoint: endpoint })
    }

    /// Ends the far end (when there is one) and reads its report.
    fn end_far(&self) -> Option<Result<QuicFarReport, String>> {
        match &self.over {
            ServerEnd::Here(_) => None,
            ServerEnd::Far { end, .. } => Some(end()),
        }
    }

    /// Starts the clock (and the run's measured span, `run.hook`) before the handshake, then
    /// runs `client` on the client's end as soon as it is up, given the start, while the
    /// server's end joins: its controller read back, it serves the streams. The deadline is as
    /// [`OneConnection::run`]'s. When the client's end does not come up, `client` never runs
    /// (`Completed(None)`); when the server's end fails, the client's end is closed (what was
    /// asked of it fails at once, not at the timeout); either is the end's `setup_error`. A
    /// sender that does not run the algorithm asked for fails the run.
    pub(crate) fn run_from_handshake<T>(self, client: impl AsyncFnOnce(&Connection, Instant) -> T) -> Result<LoadEnd<Option<T>>, WorkloadError> {
        let Some(r) = self.ready()? else { return self.stopped_before() };
        let server_errors = Arc::new(Mutex::new(Errors::default()));
        let once = OnceLock::new();
        let setup_error = Mutex::new(None);
        let started = Instant::now();
        self.over.hook().open(started);
        let load = async {
            match (&self.over, &r.here) {
                (ServerEnd::Here(run), Some(h)) => {
                    let server_sa = h.server_sa;
                    let timed = |what| move |_| WorkloadError::Setup(format!("the QUIC handshake ({what}) with {server_sa} timed out"));
                    let (dial, connected, accepting) =
                        dial(run, &h.server, &h.tls, server_sa, self.sender, &r.algorithm, &r.receiver_alg, 0, None, Windows::default())?;
                    // Both ends take part in the handshake; the client's is up first, the
                    // server's half a round trip later.
                    tokio::pin!(connected, accepting);
                    let mut accepted = None;
                    let up = tokio::time::timeout(HANDSHAKE_TIMEOUT, async {
                        loop {
                            tokio::select! {
                                c = &mut connected => break c,
                                s = &mut accepting, if accepted.is_none() => accepted = Some(s),
                            }
                        }
                    });
                    let conn = match up.await.map_err(timed("client")).and_then(|c| c) {
                        Ok(c) => c,
                        Err(e) => {
                            *lock(&setup_error) = Some(format!("opening the connection: {e}"));
                            return Ok(None);
                        }
                    };
                    let server_end = async {
                        let up = async {
                            let s = match accepted {
                                Some(s) => s?,
                                None => tokio::time::timeout(HANDSHAKE_TIMEOUT, accepting).await.map_err(timed("server"))??,
                            };
                            let pair = dial.pair(conn.clone(), s)?;
                            tokio::spawn(serve(pair.server().clone(), self.store.clone(), server_errors.clone()));
                            let _ = once.set(Held::Pair(pair));
                            Ok::<_, WorkloadError>(())
                        }
                        .await;
                        if up.is_err() {
                            // Nothing will answer the client: end what it asks now, not at the
                            // timeout.
                            conn.close(VarInt::from_u32(0), b"no server");
                        }
                        up
                    };
                    let (server_end, out) = tokio::join!(server_end, client(&conn, started));
                    match server_end {
                        Ok(()) => {}
                        Err(e @ WorkloadError::CongestionMismatch { .. }) => return Err(e),
                        Err(e) => *lock(&setup_error) = Some(format!("the server's end of the connection: {e}")),
                    }
                    Ok(Some(out))
                }
                // The far end serves once the gate has let the connection in: the first
                // request leaves as soon as this end is up, as here.
                (ServerEnd::Far { far, .. }, _) => {
                    let near = match self.dial_far(far, &r).await {
                        Ok(n) => n,
                        Err(e @ WorkloadError::CongestionMismatch { .. }) => return Err(e),
                        Err(e) => {
                            *lock(&setup_error) = Some(format!("opening the connection: {e}"));
                            return Ok(None);
                        }
                    };
                    let held = once.get_or_init(|| Held::Near(near));
                    Ok(Some(client(held.client(), started).await))
                }
                (ServerEnd::Here(_), None) => unreachable!("ready() makes the server's end here"),
            }
        };
        let (how, ended, last) = self.race(&r, &once, load);
        let how = match how {
            Finish::Completed(out) => match out {
                Ok(out) => Finish::Completed(out),
                Err(e) => {
                    let _ = self.end_far();
                    r.rt.shutdown_timeout(Duration::from_millis(500));
                    return Err(e);
                }
            },
            Finish::Stopped => Finish::Stopped,
            Finish::TimedOut => Finish::TimedOut,
        };
        let setup_error = lock(&setup_error).take();
        self.end(r, &once, last, &server_errors, how, started, ended, setup_error)
    }

    /// Checks the timeout and starts the clock on it, then makes the runtime and, here, the
    /// server's endpoint (it listens before the client dials); `None` when the run was
    /// stopped already.
    fn ready(&self) -> Result<Option<Ready>, WorkloadError> {
        let deadline = crate::common::deadline(self.timeout)?;
        if self.over.stop().load(Ordering::SeqCst) {
            return Ok(None);
        }
        let algorithm = quic_algorithm(self.cc)?;
        let receiver_alg = self.receiver_cc.map_or_else(|| algorithm.clone(), str::to_string);
        let rt = multi_thread_runtime()?;
        let here = match &self.over {
            ServerEnd::Here(run) => {
                let tls = Tls::new()?;
                let server_sa = SocketAddrV4::new(run.server_addr, self.port);
                let server = rt.block_on(async { server_endpoint(run, &tls, server_sa) })?;
                Some(Here { tls, server_sa, server })
            }
            ServerEnd::Far { .. } => None,
        };
        Ok(Some(Ready { deadline, algorithm, receiver_alg, rt, here }))
    }

    /// Runs `load` until it ends, the stop flag is set or the deadline passes, sampling the
    /// sender (once `once` holds the connection, when this process holds the sending end) on
    /// a thread of its own; how it ended, when, and the sampler's last delivery mark.
    fn race<F: Future>(&self, r: &Ready, once: &OnceLock<Held>, load: F) -> (Finish<F::Output>, Instant, (Instant, u64)) {
        let (stop, epoch, series) = (self.over.stop(), self.over.epoch(), self.over.series());
        let interval = crate::common::sample_interval(self.sample_interval);
        let done = AtomicBool::new(false);
        std::thread::scope(|s| {
            let sampler = s.spawn(|| pair::sample_until(once, epoch, series, interval, &done));
            let how = r.rt.block_on(async {
                tokio::select! {
                    out = load => Finish::Completed(out),
                    () = stopped(stop) => Finish::Stopped,
                    () = tokio::time::sleep_until(r.deadline.into()) => Finish::TimedOut,
                }
            });
            let ended = Instant::now();
            done.store(true, Ordering::SeqCst);
            (how, ended, sampler.join().unwrap_or_else(|_| (Instant::now(), 0)))
        })
    }

    /// The last sample, the connection closed, the far end ended and its report merged in, the
    /// server's errors read, the runtime ended.
    #[allow(clippy::too_many_arguments)]
    fn end<T>(
        &self,
        r: Ready,
        once: &OnceLock<Held>,
        mut last: (Instant, u64),
        server_errors: &Mutex<Errors>,
        how: Finish<T>,
        started: Instant,
        ended: Instant,
        setup_error: Option<String>,
    ) -> Result<LoadEnd<T>, WorkloadError> {
        let (epoch, series) = (self.over.epoch(), self.over.series());
        let local = once.get().map(|held| {
            let final_sample = pair::last_sample(held, epoch, series, &mut last);
            held.client().close(VarInt::from_u32(0), b"done");
            final_sample
        });
        let far = match self.end_far() {
            None => None,
            Some(Ok(report)) => Some(report),
            Some(Err(e)) => {
                r.rt.shutdown_timeout(Duration::from_millis(500));
                return Err(WorkloadError::Setup(e));
            }
        };
        let connection = once.get().zip(local).map(|(held, final_sample)| match held {
            Held::Pair(pair) => (pair.client_port, pair::sender_record(pair, self.cc, final_sample, epoch)),
            Held::Near(near) => (near.port, self.far_record(near, final_sample, far.as_ref())),
        });
        // Read as the connection closes: streams the runtime's end cuts off are not errors.
        let mut server_errors = std::mem::take(&mut *lock(server_errors));
        if let Some(far) = &far {
            server_errors.absorb(far.errors, &far.error_messages);
        }
        let Ready { rt, here, .. } = r;
        drop(here);
        rt.shutdown_timeout(Duration::from_millis(500));
        Ok(LoadEnd { how, connection, server_errors, started: Some(started), ended, setup_error })
    }

    /// The record of a connection to a far end: the sending end's controller, last sample and
    /// BBR state changes from whichever end sends (the far end's from its report).
    fn far_record(&self, near: &NearConn, final_sample: Option<crate::QuicSample>, far: Option<&QuicFarReport>) -> SenderRecord {
        let ServerEnd::Far { far: view, epoch, .. } = &self.over else { unreachable!("a near connection is to a far end") };
        let unknown = || quic_name("unknown");
        let far_rb = far.and_then(|f| f.read_back.clone()).or_else(|| view.far_read_back()).unwrap_or_else(unknown);
        let (read_back, final_quic, bbr_events) = if near.sends {
            (ReadBack { sender: near.read_back.clone(), receiver: far_rb }, final_sample, pair::bbr_events(near.bbr.as_ref(), *epoch))
        } else {
            let (q, e) = far.map(|f| (f.final_quic.clone(), f.bbr_events.clone())).unwrap_or_default();
            (ReadBack { sender: far_rb, receiver: near.read_back.clone() }, q, e)
        };
        SenderRecord {
            cc_requested: self.cc.into(),
            cc_read_back: Some(read_back.sender.clone()),
            transport: crate::Transport::Quic,
            cc_receiver: Some(read_back.receiver.clone()),
            warning: read_back.mismatch(),
            final_tcp_info: None,
            final_quic,
            bbr_events,
            limited_by: None,
            mechanism: None,
            buffers: None,
        }
    }

    /// The end of a run stopped before it began: nothing was set up (a far end is told).
    fn stopped_before<T>(&self) -> Result<LoadEnd<T>, WorkloadError> {
        if let Some(Err(e)) = self.end_far() {
            return Err(WorkloadError::Setup(e));
        }
        Ok(LoadEnd { how: Finish::Stopped, connection: None, server_errors: Errors::default(), started: None, ended: Instant::now(), setup_error: None })
    }
}
