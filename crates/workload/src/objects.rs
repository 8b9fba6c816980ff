//! Object-store load, like an S3 load tester: `requests` PUTs or GETs of `object_bytes` each,
//! spread over `concurrency` persistent HTTP/1.1 connections, reporting content throughput and
//! request latency. A `quic:` algorithm runs the same load over QUIC instead (`crate::quic`:
//! `concurrency` streams in flight on one connection), with the same result, computed by the
//! same [`summarize`].
//!
//! # Library choice
//! Real HTTP/1.1 comes from [hyper] 1.x (with `hyper-util` for the tokio glue and
//! `http-body-util` for bodies) on a tokio runtime the run makes and shuts down itself. hyper is the
//! HTTP implementation under most of the Rust ecosystem (reqwest, axum, tonic), is actively
//! maintained, and its connection-level API (`client::conn::http1`) takes an already-connected
//! stream. That matters here: every socket must be created inside a namespace with the
//! algorithm set *before* it connects, which a pooled client with its own connector would hide.
//! With the connection-level API the load generator is exactly "one keep-alive connection per
//! worker, one request at a time on it", the closed loop of S3 benchmarks (warp, s3-benchmark):
//! the server sees exactly `concurrency` connections unless one breaks.
//!
//! # What is measured
//! All `concurrency` connections are opened (and their algorithm verified on the sending side)
//! before the first request, so the wall time — first request to last response — holds only
//! requests. A request's latency runs from issuing it until its response is complete: for a
//! GET until the last body byte, for a PUT until the server's `204` after it read the whole body.
//! A failed request is counted in `errors` and not retried; a worker whose connection broke
//! opens a new one (counted in `client_connections`).

use std::collections::HashMap;
use std::net::SocketAddrV4;
use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use ccbench_kernel_tcp::TcpInfo;
use hyper::body::Incoming;
use hyper::{Method, Request, StatusCode};
use hyper_util::rt::TokioIo;

use crate::common::{self, lock, Errors, PatternBody};
use crate::far::{Dial, FarHttp, FarReport};
use crate::harness::{Finish, Harness, ServerLog, ServerProto};
use crate::http_end::HttpEnd;
use crate::lane::{Ask, Http1Lane, Lane};
use crate::quic::load::OneConnection;
use crate::quic::streams::{Store, StreamLane};
use crate::quic::wire::index_in;
use crate::quic::MAX_STREAMS;
use crate::sampler::Sampler;
use crate::Spec as _;
mod quic;
// The data half, at the paths the ends import it from.
pub(crate) use crate::{ObjectMethod, ObjectsConnection, ObjectsResult, ObjectsSpec, RequestRecord};
use quic::{quic_far, run_quic_objects, run_quic_objects_remote};

use crate::{net, ByteBudget, MeasureHook, NoMeasureHook, RunContext, SeriesSink, Side, SocketId, Workload, WorkloadError};

/// What the server handler needs.
struct ServerCfg {
    object_bytes: u64,
    /// The bytes a remote server may still move for this test (`ccbench serve --max-bytes`).
    budget: Option<Arc<ByteBudget>>,
}

async fn serve_request(req: Request<Incoming>, cfg: Arc<ServerCfg>, log: Arc<ServerLog>) -> hyper::Response<PatternBody> {
    if !req.uri().path().starts_with("/obj/") {
        return common::response(StatusCode::NOT_FOUND, 0);
    }
    match *req.method() {
        Method::GET => match &cfg.budget {
            Some(b) if !b.take(cfg.object_bytes) => {
                lock(&log.errors).push(b.reason.clone());
                common::response(StatusCode::SERVICE_UNAVAILABLE, 0)
            }
            _ => common::response(StatusCode::OK, cfg.object_bytes),
        },
        Method::PUT => match common::drain_body_within(req.into_body(), cfg.budget.as_deref()).await {
            Ok(n) if n == cfg.object_bytes => common::response(StatusCode::NO_CONTENT, 0),
            Ok(n) => {
                lock(&log.errors).push(format!("PUT body of {n} bytes, expected {}", cfg.object_bytes));
                common::response(StatusCode::BAD_REQUEST, 0)
            }
            Err(e) => {
                lock(&log.errors).push(format!("reading a PUT body: {e}"));
                common::response(StatusCode::BAD_REQUEST, 0)
            }
        },
        _ => common::response(StatusCode::METHOD_NOT_ALLOWED, 0),
    }
}

/// What the client keeps of its requests, over either transport (TCP connections or the
/// streams of one QUIC connection).
#[derive(Default)]
pub(crate) struct RequestLog {
    pub first_request: Option<Instant>,
    pub last_response: Option<Instant>,
    pub rows: Vec<RequestRecord>,
    pub errors: Errors,
}

/// One connection's count of its requests.
#[derive(Default)]
pub(crate) struct Tally {
    pub completed: u32,
    pub errors: u32,
    pub bytes: u64,
}

/// A request that has ended: `issued` and `ended` as instants, `first` being the first
/// request's issue (the rows' time origin).
pub(crate) struct Ended {
    pub index: u32,
    pub connection: u32,
    pub first: Instant,
    pub issued: Instant,
    pub ended: Instant,
}

impl RequestLog {
    /// The first request goes now: the rows' time origin, and the measured window opens.
    pub(crate) fn start(&mut self, hook: &dyn MeasureHook) -> Instant {
        let first = Instant::now();
        self.first_request = Some(first);
        hook.open(first);
        first
    }

    /// Records how request `r` ended: `outcome` is the object bytes that moved or why it
    /// failed (`name` names the request in the error message). A response also extends the
    /// measured window to its time.
    pub(crate) fn record_outcome(&mut self, tally: &mut Tally, hook: &dyn MeasureHook, r: Ended, outcome: Result<u64, String>, name: impl FnOnce() -> String) {
        self.rows.push(RequestRecord {
            index: r.index,
            connection: r.connection,
            start_s: r.issued.duration_since(r.first).as_secs_f64(),
            latency_s: r.ended.duration_since(r.issued).as_secs_f64(),
            content_bytes: *outcome.as_ref().unwrap_or(&0),
            ok: outcome.is_ok(),
        });
        match outcome {
            Ok(bytes) => {
                tally.completed += 1;
                tally.bytes += bytes;
                self.last_response = Some(r.ended);
                hook.extend(r.ended);
            }
            Err(msg) => {
                tally.errors += 1;
                self.errors.push(format!("{}: {msg}", name()));
            }
        }
    }

    /// Closes the measured window at the last response (at the first request when none came);
    /// nothing when no request went.
    pub(crate) fn close(&self, hook: &dyn MeasureHook) {
        if let Some(first) = self.first_request {
            hook.close(self.last_response.unwrap_or(first));
        }
    }
}

/// The next request's index for a worker, or `None` once all `requests` are issued (the
/// counter then stays at `requests`, so that `requests_issued` is exact).
pub(crate) fn next_index(counter: &AtomicU32, requests: u32) -> Option<u32> {
    let index = counter.fetch_add(1, Ordering::SeqCst);
    if index >= requests {
        counter.fetch_sub(1, Ordering::SeqCst);
        return None;
    }
    Some(index)
}

#[derive(Default)]
struct ClientLog {
    requests: RequestLog,
    conns: Vec<ConnStats>,
    mismatch: Option<String>,
}

struct ConnStats {
    id: u32,
    client_port: u16,
    cc_read_back: Option<String>,
    tally: Tally,
}

/// The TCP load's client: how it connects, and what its connections report to.
struct Ctx<'a> {
    dial: &'a Dial<'a>,
    spec: &'a ObjectsSpec,
    epoch: Instant,
    sampler: &'a Sampler<'a>,
    server_log: &'a ServerLog,
    log: &'a Mutex<ClientLog>,
    next_conn_id: AtomicU32,
    host: String,
    workers: Workers<'a>,
}

impl Workload for ObjectsSpec {
    type Result = ObjectsResult;

    fn run(&self, run: &RunContext<'_>) -> Result<ObjectsResult, WorkloadError> {
        run_objects(self, run)
    }
}

/// Runs the load; see the module documentation. The measured span runs from the first request
/// to the last response. Returns early, with what finished and `interrupted: true`, when the
/// stop flag is set.
fn run_objects(spec: &ObjectsSpec, run: &RunContext<'_>) -> Result<ObjectsResult, WorkloadError> {
    if spec.concurrency == 0 {
        return Err(WorkloadError::Setup("concurrency must be at least 1".into()));
    }
    if spec.cc.is_quic() {
        return run_quic_objects(spec, run);
    }
    let harness = Harness::new(run, spec.timeout(), spec.sample_interval())?;
    let log = Mutex::new(ClientLog::default());
    if harness.stopped_already() {
        return Ok(finish(spec, &log, &harness.server_log, harness.sampler.finish(run.epoch), run.epoch, 0, Finish::Stopped));
    }

    let sender = spec.method.sender();
    let cc = &spec.cc;
    let listener = harness.listen(spec.port, (sender == Side::Server).then_some(cc))?;
    let dial = Dial::Local { client: run.client, addr: SocketAddrV4::new(run.server_addr, spec.port) };
    let sockets = dial.sockets(spec.concurrency as usize, (sender == Side::Client).then_some(cc))?;
    let make_service = service_maker(spec, harness.server_log.clone(), None);
    let ctx = Ctx {
        host: dial.host(),
        dial: &dial,
        spec,
        epoch: run.epoch,
        sampler: &harness.sampler,
        server_log: &harness.server_log,
        log: &log,
        next_conn_id: AtomicU32::new(0),
        workers: Workers { spec, log: &log, next_request: AtomicU32::new(0), hook: run.hook },
    };
    let outcome = harness.drive(listener, ServerProto::Http1, (sender == Side::Server).then_some(cc), make_service, client_main(&ctx, sockets));
    lock(&log).requests.close(run.hook);
    harness.shutdown();
    let how = match outcome? {
        Finish::Completed(r) => r.map(|()| Finish::Completed(()))?,
        Finish::Stopped => Finish::Stopped,
        Finish::TimedOut => Finish::TimedOut,
    };
    if let Some(actual) = lock(&log).mismatch.clone().or_else(|| harness.server_mismatch()) {
        return Err(WorkloadError::CongestionMismatch { requested: spec.cc.to_string(), actual });
    }
    let issued = ctx.workers.next_request.load(Ordering::SeqCst).min(spec.requests);
    Ok(finish(spec, &log, &harness.server_log, harness.sampler.finish(run.epoch), run.epoch, issued, how))
}

/// The handler of every connection the server takes in; with `budget`, the bytes it may move.
fn service_maker(spec: &ObjectsSpec, log: Arc<ServerLog>, budget: Option<Arc<ByteBudget>>) -> impl Fn(u16) -> ObjectService {
    let cfg = Arc::new(ServerCfg { object_bytes: spec.object_bytes, budget });
    move |_client_port| ObjectService { cfg: cfg.clone(), log: log.clone() }
}

/// The object server of one connection.
struct ObjectService {
    cfg: Arc<ServerCfg>,
    log: Arc<ServerLog>,
}

impl hyper::service::Service<Request<Incoming>> for ObjectService {
    type Response = hyper::Response<PatternBody>;
    type Error = std::convert::Infallible;
    type Future = std::pin::Pin<Box<dyn std::future::Future<Output = Result<Self::Response, Self::Error>> + Send>>;

    fn call(&self, req: Request<Incoming>) -> Self::Future {
        let (cfg, log) = (self.cfg.clone(), self.log.clone());
        Box::pin(async move { Ok(serve_request(req, cfg, log).await) })
    }
}

/// The client half of the load against a remote `ccbench serve` (`far`), in this process's
/// namespace: the same load and result as [`Workload::run`]. `end_far` is called once the
/// load is over: it ends the far end and returns its report.
pub(crate) fn run_objects_remote(
    spec: &ObjectsSpec,
    far: &FarHttp,
    epoch: Instant,
    stop: &AtomicBool,
    series: &dyn SeriesSink,
    end_far: &dyn Fn() -> Result<FarReport, String>,
) -> Result<ObjectsResult, WorkloadError> {
    if spec.concurrency == 0 {
        return Err(WorkloadError::Setup("concurrency must be at least 1".into()));
    }
    let harness = Harness::client_only(epoch, stop, series, spec.timeout(), spec.sample_interval())?;
    let log = Mutex::new(ClientLog::default());
    let dial = Dial::Remote(far);
    let sender = spec.method.sender();
    let outcome = match dial.sockets(spec.concurrency as usize, (sender == Side::Client).then_some(&spec.cc)) {
        Ok(sockets) => {
            let ctx = Ctx {
                host: dial.host(),
                dial: &dial,
                spec,
                epoch,
                sampler: &harness.sampler,
                server_log: &far.log,
                log: &log,
                next_conn_id: AtomicU32::new(0),
                workers: Workers { spec, log: &log, next_request: AtomicU32::new(0), hook: &NoMeasureHook },
            };
            let how = if harness.stopped_already() { Ok(Finish::Stopped) } else { harness.drive_client(client_main(&ctx, sockets)) };
            harness.shutdown();
            how.map(|h| (h, ctx.workers.next_request.load(Ordering::SeqCst).min(spec.requests)))
        }
        Err(e) => Err(e),
    };
    // The far end is ended whatever happened here, and its report read.
    let report = end_far().map_err(WorkloadError::Setup)?;
    let (outcome, issued) = outcome?;
    let how = match outcome {
        Finish::Completed(r) => r.map(|()| Finish::Completed(()))?,
        Finish::Stopped => Finish::Stopped,
        Finish::TimedOut => Finish::TimedOut,
    };
    if let Some(actual) = lock(&log).mismatch.clone().or_else(|| lock(&far.log.mismatch).clone()) {
        return Err(WorkloadError::CongestionMismatch { requested: spec.cc.to_string(), actual });
    }
    let mut sampled = harness.sampler.finish(epoch);
    far.absorb(&report, &mut sampled);
    Ok(finish(spec, &log, &far.log, sampled, epoch, issued, how))
}

/// The server half of the load for a remote client (`ccbench serve`), on `listener`, behind
/// the gate of `end`; see [`crate::http_end`].
pub(crate) fn serve_objects_end(spec: &ObjectsSpec, listener: std::net::TcpListener, end: &HttpEnd<'_>) -> FarReport {
    let log = Arc::new(ServerLog::default());
    let make_service = service_maker(spec, log.clone(), Some(end.budget.clone()));
    let cc = (spec.method.sender() == Side::Server).then_some(&spec.cc);
    let mut report = crate::http_end::serve_end(listener, ServerProto::Http1, None, cc, spec.sample_interval(), make_service, end);
    let errors = lock(&log.errors);
    report.errors += errors.count;
    report.error_messages.extend(errors.messages.iter().cloned());
    report
}

async fn client_main(ctx: &Ctx<'_>, sockets: Vec<std::net::TcpStream>) -> Result<(), WorkloadError> {
    // Phase 1: every connection up (and verified) before the first request.
    let conns = common::join_all(sockets.into_iter().map(|s| open_connection(ctx, s)).collect()).await;
    let mut ready = Vec::new();
    for c in conns {
        match c {
            Ok(c) => ready.push(TcpWorker { ctx, conn: c }),
            Err(WorkloadError::CongestionMismatch { requested, actual }) => return Err(WorkloadError::CongestionMismatch { requested, actual }),
            Err(e) => lock(ctx.log).requests.errors.push(format!("opening a connection: {e}")),
        }
    }
    if ready.is_empty() {
        return Ok(());
    }
    // The server checks its side of each connection as it accepts it; wait for all of them.
    let want = ready.len();
    let wait_until = Instant::now() + net::CONNECT_TIMEOUT;
    while lock(&ctx.server_log.accepted).len() < want && Instant::now() < wait_until {
        tokio::time::sleep(Duration::from_millis(1)).await;
    }
    if let Some(actual) = lock(&ctx.server_log.mismatch).clone() {
        return Err(WorkloadError::CongestionMismatch { requested: ctx.spec.cc.to_string(), actual });
    }

    // Phase 2: the requests, each worker one at a time on its own connection.
    load(&ctx.workers, ready).await;
    Ok(())
}

/// A TCP connection of the client's: its number, its slot in `ClientLog::conns`, and the
/// HTTP/1.1 lane its requests travel on.
struct Conn {
    id: u32,
    slot: usize,
    lane: Http1Lane,
}

async fn open_connection(ctx: &Ctx<'_>, sock: std::net::TcpStream) -> Result<Conn, WorkloadError> {
    let stream = ctx.dial.connect(sock).await?;
    let client_port = stream.local_addr()?.port();
    let cc_read_back = match ctx.spec.method.sender() {
        Side::Client => {
            let actual = net::confirm_congestion(&stream, &ctx.spec.cc, Side::Client)?;
            ctx.sampler.track(SocketId::Connection(client_port), &stream, ctx.epoch);
            Some(actual)
        }
        Side::Server => None,
    };
    let (sender, connection) = hyper::client::conn::http1::Builder::new()
        .handshake(TokioIo::new(stream))
        .await
        .map_err(|e| WorkloadError::Setup(format!("HTTP/1.1 handshake: {e}")))?;
    tokio::spawn(connection);
    let id = ctx.next_conn_id.fetch_add(1, Ordering::SeqCst);
    let mut log = lock(ctx.log);
    log.conns.push(ConnStats { id, client_port, cc_read_back, tally: Tally::default() });
    Ok(Conn { id, slot: log.conns.len() - 1, lane: Http1Lane { sender, host: ctx.host.clone() } })
}

/// A worker over TCP: a keep-alive connection of its own, replaced by a new one when the
/// server (or the path) closed it, as a client would.
struct TcpWorker<'c> {
    ctx: &'c Ctx<'c>,
    conn: Conn,
}

impl Worker for TcpWorker<'_> {
    type Lane = Http1Lane;

    fn lane(&mut self) -> &mut Http1Lane {
        &mut self.conn.lane
    }
    fn connection(&self) -> (u32, usize) {
        (self.conn.id, self.conn.slot)
    }
    fn name(&self, index: u32) -> String {
        format!("request {index} on connection {}", self.conn.id)
    }
    async fn ready(&mut self) -> Result<(), Stop> {
        if !self.conn.lane.sender.is_closed() {
            return Ok(());
        }
        let (ctx, spec) = (self.ctx, self.ctx.spec);
        let reopened = match ctx.dial.sockets(1, (spec.method.sender() == Side::Client).then_some(&spec.cc)) {
            Ok(mut v) => open_connection(ctx, v.remove(0)).await,
            Err(e) => Err(e),
        };
        self.conn = reopened.map_err(Stop::Reconnecting)?;
        Ok(())
    }
}

/// Why a worker issues no more requests.
enum Stop {
    /// Its transport's one connection is gone (QUIC): the request is counted as failed on it.
    Gone(String),
    /// A new connection to replace its closed one could not be opened (TCP): the request is
    /// recorded as failed, on no connection's count.
    Reconnecting(WorkloadError),
}

/// What the load asks of a worker's transport, beside its [`Lane`].
trait Worker {
    type Lane: Lane;
    fn lane(&mut self) -> &mut Self::Lane;
    /// The number of the connection its requests go on, and its slot in `ClientLog::conns`.
    fn connection(&self) -> (u32, usize);
    /// Request `index` as its error messages name it.
    fn name(&self, index: u32) -> String;
    /// Ready for the next request, or why the worker stops.
    async fn ready(&mut self) -> Result<(), Stop>;
}

/// What the workers share, whatever the transport.
struct Workers<'a> {
    spec: &'a ObjectsSpec,
    log: &'a Mutex<ClientLog>,
    next_request: AtomicU32,
    hook: &'a dyn MeasureHook,
}

/// The load: the first request goes now, then every worker issues one request at a time until
/// all `requests` are issued.
async fn load<W: Worker>(w: &Workers<'_>, workers: Vec<W>) {
    let first = lock(w.log).requests.start(w.hook);
    common::join_all(workers.into_iter().map(|x| worker(w, x, first)).collect()).await;
}

async fn worker<W: Worker>(w: &Workers<'_>, mut x: W, first: Instant) {
    let spec = w.spec;
    while let Some(index) = next_index(&w.next_request, spec.requests) {
        let ready = x.ready().await;
        let issued = Instant::now();
        let outcome = match &ready {
            Ok(()) => one_request(x.lane(), spec, index).await,
            Err(Stop::Gone(reason)) => Err(format!("the connection is gone: {reason}")),
            Err(Stop::Reconnecting(e)) => {
                let log = &mut *lock(w.log);
                if let WorkloadError::CongestionMismatch { actual, .. } = e {
                    log.mismatch = Some(actual.clone());
                }
                log.requests.errors.push(format!("request {index}: reconnecting: {e}"));
                let row =
                    RequestRecord { index, connection: x.connection().0, start_s: first.elapsed().as_secs_f64(), latency_s: 0.0, content_bytes: 0, ok: false };
                log.requests.rows.push(row);
                return;
            }
        };
        let (connection, slot) = x.connection();
        let ended = Ended { index, connection, first, issued, ended: Instant::now() };
        let log = &mut *lock(w.log);
        log.requests.record_outcome(&mut log.conns[slot].tally, w.hook, ended, outcome, || x.name(index));
        if ready.is_err() {
            return;
        }
    }
}

/// One request on `lane`; the object bytes that moved, or why it failed.
async fn one_request(lane: &mut impl Lane, spec: &ObjectsSpec, index: u32) -> Result<u64, String> {
    let path = format!("/obj/{index}");
    match spec.method {
        ObjectMethod::Put => lane.exchange(Ask::Put(&path, spec.object_bytes), &mut || {}).await.map(|_| spec.object_bytes),
        ObjectMethod::Get => {
            let got = lane.exchange(Ask::Get(&path), &mut || {}).await?;
            if got == spec.object_bytes {
                Ok(got)
            } else {
                Err(format!("got {got} of {} bytes", spec.object_bytes))
            }
        }
    }
}

fn finish(
    spec: &ObjectsSpec,
    log: &Mutex<ClientLog>,
    server_log: &ServerLog,
    mut sampled: HashMap<SocketId, Option<TcpInfo>>,
    epoch: Instant,
    issued: u32,
    how: Finish<()>,
) -> ObjectsResult {
    let accepted = lock(&server_log.accepted).clone();
    let server_errors = lock(&server_log.errors);
    let log = lock(log);
    let sender = spec.method.sender();
    let connections = log
        .conns
        .iter()
        .map(|c| {
            let cc_read_back = match sender {
                Side::Client => c.cc_read_back.clone(),
                Side::Server => accepted.iter().find(|a| a.client_port == c.client_port).and_then(|a| a.cc_read_back.clone()),
            };
            ObjectsConnection {
                id: c.id,
                client_port: c.client_port,
                sender,
                sending: crate::SenderRecord::tcp(&spec.cc, cc_read_back, sampled.remove(&SocketId::Connection(c.client_port)).flatten()),
                requests_completed: c.tally.completed,
                errors: c.tally.errors,
                content_bytes: c.tally.bytes,
            }
        })
        .collect();
    let outcome = Outcome { requests: &log.requests, server_errors: &server_errors, connections, server_connections: accepted.len() as u32, issued };
    summarize(spec, epoch, outcome, how)
}

/// What a load left, however its requests travelled (TCP connections or QUIC streams).
pub(crate) struct Outcome<'a> {
    /// The client's log of every request: their times, records and errors.
    pub requests: &'a RequestLog,
    pub server_errors: &'a Errors,
    pub connections: Vec<ObjectsConnection>,
    pub server_connections: u32,
    /// Requests issued (at most `spec.requests`).
    pub issued: u32,
}

/// The result of an objects run: the one place its figures (throughput, latency percentiles,
/// errors) are computed, for both transports alike.
pub(crate) fn summarize(spec: &ObjectsSpec, epoch: Instant, o: Outcome<'_>, how: Finish<()>) -> ObjectsResult {
    let wall_time_s = match (o.requests.first_request, o.requests.last_response) {
        (Some(a), Some(b)) => b.saturating_duration_since(a).as_secs_f64(),
        _ => 0.0,
    };
    let content_bytes: u64 = o.connections.iter().map(|c| c.content_bytes).sum();
    let content_throughput_bps = if wall_time_s > 0.0 { content_bytes as f64 * 8.0 / wall_time_s } else { 0.0 };
    let mut lat: Vec<f64> = o.requests.rows.iter().filter(|r| r.ok).map(|r| r.latency_s).collect();
    lat.sort_by(f64::total_cmp);
    let latency_mean_s = (!lat.is_empty()).then(|| lat.iter().sum::<f64>() / lat.len() as f64);
    let mut error_messages = o.requests.errors.messages.clone();
    error_messages.extend(o.server_errors.messages.iter().map(|m| format!("server: {m}")));
    let mut requests = o.requests.rows.clone();
    requests.sort_by_key(|r| r.index);
    ObjectsResult {
        method: spec.method,
        object_bytes: spec.object_bytes,
        concurrency: spec.concurrency,
        cc_requested: (&spec.cc).into(),
        start_us: o.requests.first_request.map(|t| t.saturating_duration_since(epoch).as_micros() as u64),
        wall_time_s,
        requests_requested: spec.requests,
        requests_issued: o.issued,
        requests_completed: o.requests.rows.iter().filter(|r| r.ok).count() as u32,
        errors: o.requests.errors.count,
        content_bytes,
        content_throughput_bps,
        content_throughput_mbytes_per_s: content_throughput_bps / 8e6,
        latency_p50_s: common::percentile(&lat, 50.0),
        latency_p95_s: common::percentile(&lat, 95.0),
        latency_p99_s: common::percentile(&lat, 99.0),
        latency_max_s: lat.last().copied(),
        latency_mean_s,
        client_connections: o.connections.len() as u32,
        server_connections: o.server_connections,
        server_errors: o.server_errors.count,
        interrupted: matches!(how, Finish::Stopped),
        timed_out: matches!(how, Finish::TimedOut),
        connections: o.connections,
        requests,
        error_messages,
    }
}

impl crate::FarSpec for ObjectsSpec {
    /// A far end runs it for at most `--max-duration` (then the client sees a timed-out load).
    fn check(&self, l: &crate::ServeLimits<'_>) -> Result<(), String> {
        if self.concurrency == 0 || self.requests == 0 {
            return Err("an objects test needs at least one connection and one request".into());
        }
        if self.method == ObjectMethod::Get || self.cc.is_quic() {
            l.has_cc(&self.cc)?;
        }
        if self.cc.is_quic() {
            if self.concurrency > MAX_STREAMS {
                return Err(format!("concurrency over QUIC must be from 1 to {MAX_STREAMS}, got {}", self.concurrency));
            }
            if let Some(r) = &self.quic_receiver_cc {
                l.has_cc(&format!("quic:{r}").parse().map_err(|_| format!("no QUIC algorithm {r:?}"))?)?;
            }
        }
        l.check_http(self.planned_connections(), self.timeout_s, (self.requests as u64).saturating_mul(self.object_bytes))
    }

    fn describe_far(&self) -> String {
        let method = match self.method {
            ObjectMethod::Get => "GET",
            ObjectMethod::Put => "PUT",
        };
        let over =
            if self.cc.is_quic() { format!("{} stream(s) on one QUIC connection", self.concurrency) } else { format!("{} connection(s)", self.concurrency) };
        format!("objects {} {method} of {} bytes, {over} {}", self.requests, self.object_bytes, self.cc)
    }

    /// Over QUIC, one connection whatever the concurrency (its streams are bounded apart).
    fn planned_connections(&self) -> u32 {
        if self.cc.is_quic() {
            1
        } else {
            self.concurrency
        }
    }
}

/// Over `--remote`: serve runs the object server behind its gate, this end the load.
impl crate::Remote for ObjectsSpec {
    type Far = ObjectsSpec;
    type Result = ObjectsResult;
    fn far_request(&self) -> ObjectsSpec {
        self.clone()
    }
    fn near_end(&self) -> crate::NearEnd<'_, ObjectsResult> {
        if self.cc.is_quic() {
            crate::NearEnd::quic(self, run_quic_objects_remote)
        } else {
            crate::NearEnd::http(self, run_objects_remote)
        }
    }
}

impl crate::FarRequest for ObjectsSpec {
    /// Over QUIC, serve's QUIC request server; over TCP, its HTTP server.
    fn far_end(&self) -> crate::FarEnd<'_> {
        if self.cc.is_quic() {
            crate::FarEnd::Quic(quic_far(self))
        } else {
            crate::FarEnd::Http(self)
        }
    }
}

impl crate::HttpFar for ObjectsSpec {
    /// A GET's server sends; a PUT's receives.
    fn server_cc(&self) -> Option<&crate::Algorithm> {
        (self.method.sender() == Side::Server).then_some(&self.cc)
    }
    fn timeout(&self) -> std::time::Duration {
        crate::Spec::timeout(self)
    }
    fn serve(&self, listener: std::net::TcpListener, end: &HttpEnd<'_>, _: Option<&crate::RunCertificate>) -> FarReport {
        serve_objects_end(self, listener, end)
    }
}

#[cfg(test)]
mod tests {
    use std::collections::VecDeque;

    use super::*;

    /// A lane that answers from a script: what each request gets back, in order.
    struct Scripted(VecDeque<Result<u64, String>>);

    impl Lane for Scripted {
        async fn exchange(&mut self, _: Ask<'_>, _: &mut dyn FnMut()) -> Result<u64, String> {
            self.0.pop_front().unwrap_or_else(|| Err("the script ran out".into()))
        }
    }

    /// A worker whose transport gives out before its `fails_at`-th request, as `stop` says.
    struct Failing {
        lane: Scripted,
        asked: u32,
        fails_at: u32,
        stop: fn() -> Stop,
    }

    impl Worker for Failing {
        type Lane = Scripted;
        fn lane(&mut self) -> &mut Scripted {
            &mut self.lane
        }
        fn connection(&self) -> (u32, usize) {
            (7, 0)
        }
        fn name(&self, index: u32) -> String {
            format!("request {index}")
        }
        async fn ready(&mut self) -> Result<(), Stop> {
            self.asked += 1;
            if self.asked == self.fails_at {
                return Err((self.stop)());
            }
            Ok(())
        }
    }

    fn spec(method: ObjectMethod) -> ObjectsSpec {
        ObjectsSpec {
            requests: 5,
            object_bytes: 20,
            concurrency: 1,
            method,
            cc: "cubic".parse().unwrap(),
            port: 1,
            sample_interval_us: 10_000,
            timeout_s: 1.0,
            quic_receiver_cc: None,
        }
    }

    /// Runs one worker over `answers` until it stops; the log and the requests issued.
    fn run_one(method: ObjectMethod, answers: Vec<Result<u64, String>>, fails_at: u32, stop: fn() -> Stop) -> (ClientLog, u32) {
        let spec = spec(method);
        let log = Mutex::new(ClientLog::default());
        lock(&log).conns.push(ConnStats { id: 7, client_port: 0, cc_read_back: None, tally: Tally::default() });
        let w = Workers { spec: &spec, log: &log, next_request: AtomicU32::new(0), hook: &NoMeasureHook };
        let worker = Failing { lane: Scripted(answers.into()), asked: 0, fails_at, stop };
        tokio::runtime::Builder::new_current_thread().build().unwrap().block_on(load(&w, vec![worker]));
        let issued = w.next_request.load(Ordering::SeqCst);
        (log.into_inner().unwrap(), issued)
    }

    /// QUIC's one connection lost: the next request is counted as failed on it and the worker
    /// stops; what never went leaves the run short.
    #[test]
    fn a_lost_connection_fails_the_next_request_and_stops_the_worker() {
        let (log, issued) = run_one(ObjectMethod::Get, vec![Ok(20), Ok(20)], 3, || Stop::Gone("reset by peer".into()));
        assert_eq!(issued, 3);
        let oks: Vec<bool> = log.requests.rows.iter().map(|r| r.ok).collect();
        assert_eq!(oks, [true, true, false]);
        let t = &log.conns[0].tally;
        assert_eq!((t.completed, t.errors, t.bytes), (2, 1, 40));
        assert_eq!(log.requests.errors.messages, ["request 2: the connection is gone: reset by peer"]);
        assert!(log.requests.rows.iter().all(|r| r.connection == 7));
    }

    /// TCP's replacement connection that cannot be opened: the request is a failed row on the
    /// old connection, counted on no connection's tally; a mismatch is kept for the run.
    #[test]
    fn a_failed_reconnect_records_the_request_on_no_tally_and_keeps_a_mismatch() {
        let mismatch = || Stop::Reconnecting(WorkloadError::CongestionMismatch { requested: "bbr".into(), actual: "cubic".into() });
        let (log, issued) = run_one(ObjectMethod::Put, vec![Ok(0)], 2, mismatch);
        assert_eq!(issued, 2);
        let rows: Vec<(bool, f64, u64)> = log.requests.rows.iter().map(|r| (r.ok, r.latency_s, r.content_bytes)).collect();
        assert_eq!(rows, [(true, rows[0].1, 20), (false, 0.0, 0)]);
        let t = &log.conns[0].tally;
        assert_eq!((t.completed, t.errors, t.bytes), (1, 0, 20));
        assert_eq!(log.mismatch.as_deref(), Some("cubic"));
        assert_eq!(log.requests.errors.count, 1);
        assert!(log.requests.errors.messages[0].starts_with("request 1: reconnecting: "), "{:?}", log.requests.errors.messages);
    }

    /// A GET that brought back less than the object, and a refusal, fail their requests; the
    /// worker goes on to the next.
    #[test]
    fn a_short_or_refused_answer_fails_only_its_request() {
        let answers = vec![Ok(20), Ok(10), Err("status 503, expected 200 OK".into()), Ok(20), Ok(20)];
        let (log, issued) = run_one(ObjectMethod::Get, answers, u32::MAX, || unreachable!());
        assert_eq!(issued, 5);
        let oks: Vec<bool> = log.requests.rows.iter().map(|r| r.ok).collect();
        assert_eq!(oks, [true, false, false, true, true]);
        assert_eq!(log.requests.errors.messages, ["request 1: got 10 of 20 bytes", "request 2: status 503, expected 200 OK"]);
    }
}
/// `ccbench run --workload objects`: its flags and its spec from them.
mod args;

pub use args::ObjectsFlags;
