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

use std::future::Future;
use std::net::SocketAddrV4;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::{Duration, Instant};

use noq::{Connection, Endpoint, VarInt};

use super::pair::{self, connect_pair, dial, quic_algorithm, server_endpoint, Pair};
use super::streams::{serve, Store};
use super::{Tls, Windows, HANDSHAKE_TIMEOUT};
use crate::common::{lock, multi_thread_runtime, stopped, Errors};
use crate::harness::Finish;
use crate::{Algorithm, RunContext, SenderRecord, Side, WorkloadError};

/// One connection's load: where it runs and what it asks of the connection.
pub(crate) struct OneConnection<'a> {
    pub run: &'a RunContext<'a>,
    /// The sending end's algorithm (a `quic:` one).
    pub cc: &'a Algorithm,
    /// The receiving end's algorithm after `quic:`, when it should differ (provoking scenario
    /// 5's mix-up on purpose); by default the sender's.
    pub receiver_cc: Option<&'a str>,
    pub sender: Side,
    pub port: u16,
    pub timeout_s: f64,
    pub sample_interval_us: u64,
    /// What its server answers.
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

/// What a load needs before its clock starts: the server listening, the runtime and the TLS.
struct Ready {
    deadline: Instant,
    algorithm: String,
    receiver_alg: String,
    rt: tokio::runtime::Runtime,
    tls: Tls,
    server_sa: SocketAddrV4,
    server: Endpoint,
}

impl OneConnection<'_> {
    /// Sets the connection up, then runs `client` on the client's end of it until it ends,
    /// the stop flag is set or the deadline (`timeout_s` from now, setup included) passes. A
    /// run stopped before it began sets nothing up.
    pub(crate) fn run<T>(self, client: impl AsyncFnOnce(&Connection) -> T) -> Result<LoadEnd<T>, WorkloadError> {
        let Some(r) = self.ready()? else { return Ok(stopped_before()) };
        let pair =
            r.rt.block_on(connect_pair(self.run, &r.server, &r.tls, r.server_sa, self.sender, &r.algorithm, &r.receiver_alg, 0, None, Windows::default()))?;
        let server_errors = Arc::new(Mutex::new(Errors::default()));
        r.rt.spawn(serve(pair.server().clone(), self.store.clone(), server_errors.clone()));
        let once = OnceLock::from(pair);
        let started = Instant::now();
        let load = client(once.get().expect("just set").client());
        let (how, ended, last) = self.race(&r, &once, load);
        Ok(self.end(r, &once, last, &server_errors, how, started, ended, None))
    }

    /// Starts the clock (and the run's measured span, `run.hook`) before the handshake, then
    /// runs `client` on the client's end as soon as it is up, given the start, while the
    /// server's end joins: its controller read back, it serves the streams. The deadline is as
    /// [`OneConnection::run`]'s. When the client's end does not come up, `client` never runs
    /// (`Completed(None)`); when the server's end fails, the client's end is closed (what was
    /// asked of it fails at once, not at the timeout); either is the end's `setup_error`. A
    /// sender that does not run the algorithm asked for fails the run.
    pub(crate) fn run_from_handshake<T>(self, client: impl AsyncFnOnce(&Connection, Instant) -> T) -> Result<LoadEnd<Option<T>>, WorkloadError> {
        let Some(r) = self.ready()? else { return Ok(stopped_before()) };
        let (run, server_sa) = (self.run, r.server_sa);
        let server_errors = Arc::new(Mutex::new(Errors::default()));
        let once = OnceLock::new();
        let setup_error = Mutex::new(None);
        let started = Instant::now();
        run.hook.open(started);
        let load = async {
            let timed = |what| move |_| WorkloadError::Setup(format!("the QUIC handshake ({what}) with {server_sa} timed out"));
            let (dial, connected, accepting) =
                dial(run, &r.server, &r.tls, server_sa, self.sender, &r.algorithm, &r.receiver_alg, 0, None, Windows::default())?;
            // Both ends take part in the handshake; the client's is up first, the server's half
            // a round trip later.
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
                    let _ = once.set(pair);
                    Ok::<_, WorkloadError>(())
                }
                .await;
                if up.is_err() {
                    // Nothing will answer the client: end what it asks now, not at the timeout.
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
        };
        let (how, ended, last) = self.race(&r, &once, load);
        let how = match how {
            Finish::Completed(out) => match out {
                Ok(out) => Finish::Completed(out),
                Err(e) => {
                    r.rt.shutdown_timeout(Duration::from_millis(500));
                    return Err(e);
                }
            },
            Finish::Stopped => Finish::Stopped,
            Finish::TimedOut => Finish::TimedOut,
        };
        let setup_error = lock(&setup_error).take();
        Ok(self.end(r, &once, last, &server_errors, how, started, ended, setup_error))
    }

    /// Checks the timeout and starts the clock on it, then makes the runtime and the server's
    /// endpoint (it listens before the client dials); `None` when the run was stopped already.
    fn ready(&self) -> Result<Option<Ready>, WorkloadError> {
        if !(self.timeout_s > 0.0 && self.timeout_s.is_finite()) {
            return Err(WorkloadError::Setup(format!("timeout_s must be positive, got {}", self.timeout_s)));
        }
        let deadline = Instant::now() + Duration::from_secs_f64(self.timeout_s);
        if self.run.stop.load(Ordering::SeqCst) {
            return Ok(None);
        }
        let algorithm = quic_algorithm(self.cc)?;
        let receiver_alg = self.receiver_cc.map_or_else(|| algorithm.clone(), str::to_string);
        let rt = multi_thread_runtime()?;
        let tls = Tls::new()?;
        let server_sa = SocketAddrV4::new(self.run.server_addr, self.port);
        let server = rt.block_on(async { server_endpoint(self.run, &tls, server_sa) })?;
        Ok(Some(Ready { deadline, algorithm, receiver_alg, rt, tls, server_sa, server }))
    }

    /// Runs `load` until it ends, the stop flag is set or the deadline passes, sampling the
    /// sender (once `once` holds the connection) on a thread of its own; how it ended, when,
    /// and the sampler's last delivery mark.
    fn race<F: Future>(&self, r: &Ready, once: &OnceLock<Pair>, load: F) -> (Finish<F::Output>, Instant, (Instant, u64)) {
        let run = self.run;
        let interval = Duration::from_micros(self.sample_interval_us.max(1000));
        let done = AtomicBool::new(false);
        std::thread::scope(|s| {
            let sampler = s.spawn(|| pair::sample_until(once, run, interval, &done));
            let how = r.rt.block_on(async {
                tokio::select! {
                    out = load => Finish::Completed(out),
                    () = stopped(run.stop) => Finish::Stopped,
                    () = tokio::time::sleep_until(r.deadline.into()) => Finish::TimedOut,
                }
            });
            let ended = Instant::now();
            done.store(true, Ordering::SeqCst);
            (how, ended, sampler.join().unwrap_or_else(|_| (Instant::now(), 0)))
        })
    }

    /// The last sample, the connection closed, the server's errors read, the runtime ended.
    #[allow(clippy::too_many_arguments)]
    fn end<T>(
        &self,
        r: Ready,
        once: &OnceLock<Pair>,
        mut last: (Instant, u64),
        server_errors: &Mutex<Errors>,
        how: Finish<T>,
        started: Instant,
        ended: Instant,
        setup_error: Option<String>,
    ) -> LoadEnd<T> {
        let connection = once.get().map(|pair| {
            let final_sample = pair::last_sample(pair, self.run, &mut last);
            pair.client().close(VarInt::from_u32(0), b"done");
            (pair.client_port, pair::sender_record(pair, self.cc.to_string(), final_sample, self.run.epoch))
        });
        // Read as the connection closes: streams the runtime's end cuts off are not errors.
        let server_errors = std::mem::take(&mut *lock(server_errors));
        let Ready { rt, server, .. } = r;
        drop(server);
        rt.shutdown_timeout(Duration::from_millis(500));
        LoadEnd { how, connection, server_errors, started: Some(started), ended, setup_error }
    }
}

/// The end of a run stopped before it began: nothing was set up.
fn stopped_before<T>() -> LoadEnd<T> {
    LoadEnd { how: Finish::Stopped, connection: None, server_errors: Errors::default(), started: None, ended: Instant::now(), setup_error: None }
}
