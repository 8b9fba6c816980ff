//! The object load's end over QUIC: one connection, a stream per request.

use super::*;
use crate::quic::load::ServerEnd;
use crate::{FarQuic, QuicFarReport, QuicRequests};

/// A worker over QUIC: the one connection, a stream per request.
struct QuicWorker<'c>(StreamLane<'c>);

impl<'c> Worker for QuicWorker<'c> {
    type Lane = StreamLane<'c>;

    fn lane(&mut self) -> &mut StreamLane<'c> {
        &mut self.0
    }
    fn connection(&self) -> (u32, usize) {
        (0, 0)
    }
    fn name(&self, index: u32) -> String {
        format!("request {index}")
    }
    async fn ready(&mut self) -> Result<(), Stop> {
        match self.0 .0.close_reason() {
            None => Ok(()),
            Some(reason) => Err(Stop::Gone(reason.to_string())),
        }
    }
}

/// What the QUIC server has: `/obj/N`, each `object_bytes` long, for GET and PUT alike.
struct ObjectStore {
    object_bytes: u64,
}

impl Store for ObjectStore {
    fn get(&self, path: &str) -> Option<u64> {
        index_in(path, "/obj/").map(|_| self.object_bytes)
    }
    fn put(&self, path: &str) -> Option<u64> {
        self.get(path)
    }
}

/// Runs `spec`, whose algorithm is a QUIC one: `concurrency` workers issue their requests as
/// concurrent streams on **one** connection, a stream per request, the way an HTTP/3 client
/// multiplexes them (the framing, and why it is not HTTP/3 itself, is in `quic::wire`). The
/// connection is set up, and both ends' controllers read back, before the first request, as
/// over TCP. There is no second connection: once it is lost, each worker records its next
/// request as failed and stops (the requests never issued leave the run unfinished).
pub(super) fn run_quic_objects(spec: &ObjectsSpec, run: &RunContext<'_>) -> Result<ObjectsResult, WorkloadError> {
    quic_objects(spec, ServerEnd::Here(run))
}

/// As [`run_quic_objects`], the server's end in a remote `ccbench serve` (`far`): the same
/// load and result. `end` is called once the load is over: it ends the far end and returns
/// its report.
pub(super) fn run_quic_objects_remote(
    spec: &ObjectsSpec,
    far: &FarQuic,
    epoch: Instant,
    stop: &AtomicBool,
    series: &dyn SeriesSink,
    end: &dyn Fn() -> Result<QuicFarReport, String>,
) -> Result<ObjectsResult, WorkloadError> {
    quic_objects(spec, ServerEnd::Far { far, epoch, stop, series, end })
}

/// What serve runs of `spec` over QUIC: its store behind the gate.
pub(super) fn quic_far(spec: &ObjectsSpec) -> QuicRequests {
    QuicRequests {
        cc: spec.cc.clone(),
        receiver_cc: spec.quic_receiver_cc.clone(),
        sender: spec.method.sender(),
        store: Arc::new(ObjectStore { object_bytes: spec.object_bytes }),
        timeout: spec.timeout(),
        sample_interval: spec.sample_interval(),
    }
}

fn quic_objects(spec: &ObjectsSpec, over: ServerEnd<'_>) -> Result<ObjectsResult, WorkloadError> {
    if spec.concurrency > MAX_STREAMS {
        return Err(WorkloadError::Setup(format!("concurrency over QUIC must be from 1 to {MAX_STREAMS}, got {}", spec.concurrency)));
    }
    let (epoch, hook) = (over.epoch(), over.hook());
    let log = Mutex::new(ClientLog::default());
    // The one connection's count; its port comes with its record.
    lock(&log).conns.push(ConnStats { id: 0, client_port: 0, cc_read_back: None, tally: Tally::default() });
    let w = Workers { spec, log: &log, next_request: AtomicU32::new(0), hook };
    let end = OneConnection {
        over,
        cc: &spec.cc,
        receiver_cc: spec.quic_receiver_cc.as_deref(),
        sender: spec.method.sender(),
        port: spec.port,
        timeout: spec.timeout(),
        sample_interval: spec.sample_interval(),
        store: Arc::new(ObjectStore { object_bytes: spec.object_bytes }),
    }
    .run(async |conn| load(&w, (0..spec.concurrency).map(|_| QuicWorker(StreamLane(conn))).collect()).await)?;
    let log = lock(&log);
    log.requests.close(hook);
    let tally = &log.conns[0].tally;
    let connections: Vec<ObjectsConnection> = end
        .connection
        .into_iter()
        .map(|(client_port, sending)| ObjectsConnection {
            id: 0,
            client_port,
            sender: spec.method.sender(),
            sending,
            requests_completed: tally.completed,
            errors: tally.errors,
            content_bytes: tally.bytes,
        })
        .collect();
    let outcome = Outcome {
        requests: &log.requests,
        server_errors: &end.server_errors,
        server_connections: connections.len() as u32,
        connections,
        issued: w.next_request.load(Ordering::SeqCst).min(spec.requests),
    };
    Ok(summarize(spec, epoch, outcome, end.how))
}

#[cfg(test)]
mod tests {
    use std::net::{Ipv4Addr, SocketAddr};

    use super::*;
    use crate::{ByteBudget, MemorySeries, QuicRequestServer, SocketId, TOKEN_LEN};

    /// Over loopback, no root: a PUT load over QUIC against serve's half (`QuicRequestServer`),
    /// the client's end sending and sampled here, the server's controller read back through its
    /// report, every body checked by the store, and the byte budget refusing the request over it.
    #[test]
    fn puts_over_quic_run_against_a_far_end_within_its_budget() {
        let spec = ObjectsSpec {
            requests: 6,
            object_bytes: 200_000,
            concurrency: 2,
            method: ObjectMethod::Put,
            cc: "quic:cubic".parse().unwrap(),
            port: 0,
            sample_interval_us: 10_000,
            timeout_s: 10.0,
            quic_receiver_cc: None,
        };
        let token = [3u8; TOKEN_LEN];
        let mut server = QuicRequestServer::bind(Ipv4Addr::LOCALHOST.into(), quic_far(&spec)).unwrap();
        let far = FarQuic::new(SocketAddr::new(Ipv4Addr::LOCALHOST.into(), server.port()), server.cert_der(), token);
        let (epoch, stop, done) = (Instant::now(), AtomicBool::new(false), AtomicBool::new(false));
        let (series, far_series) = (MemorySeries::default(), MemorySeries::default());
        // Five objects' worth: one of the six PUTs is refused.
        let budget = Arc::new(ByteBudget::new(5 * 200_000, "over".into()));
        let take: Arc<dyn Fn(u64) -> bool + Send + Sync> = Arc::new(move |n| budget.take(n));
        let r = std::thread::scope(|s| {
            let served = Mutex::new(Some(s.spawn(|| {
                let rb = server.accept(&token, Duration::from_secs(10));
                (rb, server.serve(epoch, epoch + Duration::from_secs(10), &done, &far_series, take))
            })));
            let end = || {
                done.store(true, Ordering::SeqCst);
                let (rb, report) = lock(&served).take().expect("ended once").join().unwrap();
                assert_eq!(rb.unwrap(), "quic:cubic", "the receiving server's controller");
                Ok(report)
            };
            run_quic_objects_remote(&spec, &far, epoch, &stop, &series, &end).unwrap()
        });
        server.close();
        assert_eq!((r.requests_completed, r.errors, r.server_errors), (5, 1, 1), "{r:?}");
        let c = &r.connections[0];
        assert_eq!((c.sending.cc_read_back.as_deref(), c.sending.cc_receiver.as_deref()), (Some("quic:cubic"), Some("quic:cubic")));
        assert!(c.sending.final_quic.is_some(), "the client's last sample");
        assert!(!series.quic_samples(SocketId::Connection(c.client_port)).is_empty(), "the client's end is sampled here");
        assert!(far_series.quic_samples(SocketId::Flow(0)).is_empty(), "a receiving server samples nothing");
    }
}
