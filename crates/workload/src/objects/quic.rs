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
        timeout_s: spec.timeout_s,
        sample_interval_us: spec.sample_interval_us,
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
        timeout_s: spec.timeout_s,
        sample_interval_us: spec.sample_interval_us,
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
