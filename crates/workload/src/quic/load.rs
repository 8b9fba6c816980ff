//! A request load over one QUIC connection, for any workload whose load is requests on
//! [`StreamLane`](super::streams::StreamLane)s: the connection set up (both ends' controllers
//! read back) before the load starts, the server answering every stream from the workload's
//! [`Store`], the sending end sampled every interval on a thread of its own (into the run's
//! series as `SocketId::Connection(client_port)`, `conn-PORT` as a TCP connection's), and the
//! load raced against the deadline and the stop flag. The QUIC counterpart of `harness.rs`.

use std::net::SocketAddrV4;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::{Duration, Instant};

use noq::{Connection, VarInt};

use super::pair::{self, connect_pair, quic_algorithm, server_endpoint};
use super::streams::{serve, Store};
use super::Tls;
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
}

impl OneConnection<'_> {
    /// Sets the connection up, then runs `client` on the client's end of it until it ends,
    /// the stop flag is set or the deadline (`timeout_s` from now, setup included) passes. A
    /// run stopped before it began sets nothing up.
    pub(crate) fn run<T>(self, client: impl AsyncFnOnce(&Connection) -> T) -> Result<LoadEnd<T>, WorkloadError> {
        let run = self.run;
        if !(self.timeout_s > 0.0 && self.timeout_s.is_finite()) {
            return Err(WorkloadError::Setup(format!("timeout_s must be positive, got {}", self.timeout_s)));
        }
        let deadline = Instant::now() + Duration::from_secs_f64(self.timeout_s);
        if run.stop.load(Ordering::SeqCst) {
            return Ok(LoadEnd { how: Finish::Stopped, connection: None, server_errors: Errors::default() });
        }
        let algorithm = quic_algorithm(self.cc)?;
        let receiver_alg = self.receiver_cc.map_or_else(|| algorithm.clone(), str::to_string);
        let rt = multi_thread_runtime()?;
        let tls = Tls::new()?;
        let server_sa = SocketAddrV4::new(run.server_addr, self.port);
        let (server, pair) = rt.block_on(async {
            let server = server_endpoint(run, &tls, server_sa)?;
            let pair = connect_pair(run, &server, &tls, server_sa, self.sender, &algorithm, &receiver_alg, 0, None).await?;
            Ok::<_, WorkloadError>((server, pair))
        })?;
        let server_errors = Arc::new(Mutex::new(Errors::default()));
        rt.spawn(serve(pair.server().clone(), self.store, server_errors.clone()));
        let once = &OnceLock::from(pair);
        let pair = once.get().expect("just set");

        let interval = Duration::from_micros(self.sample_interval_us.max(1000));
        let done = AtomicBool::new(false);
        let load = client(pair.client());
        let (how, mut last) = std::thread::scope(|s| {
            let sampler = s.spawn(|| pair::sample_until(once, run, interval, &done));
            let how = rt.block_on(async {
                tokio::select! {
                    out = load => Finish::Completed(out),
                    () = stopped(run.stop) => Finish::Stopped,
                    () = tokio::time::sleep_until(deadline.into()) => Finish::TimedOut,
                }
            });
            done.store(true, Ordering::SeqCst);
            (how, sampler.join().unwrap_or_else(|_| (Instant::now(), 0)))
        });
        let final_sample = pair::last_sample(pair, run, &mut last);
        pair.client().close(VarInt::from_u32(0), b"done");
        // Read as the connection closes: streams the runtime's end cuts off are not errors.
        let server_errors = std::mem::take(&mut *lock(&server_errors));
        let record = pair::sender_record(pair, self.cc.to_string(), final_sample, run.epoch);
        drop(server);
        rt.shutdown_timeout(Duration::from_millis(500));
        Ok(LoadEnd { how, connection: Some((pair.client_port, record)), server_errors })
    }
}
