//! A web page load, like a browser with its cache off: the HTML document first (`GET /`), then
//! every object it references (`GET /o/N`), over HTTP/1.1 with up to `max_connections` parallel
//! persistent connections (browsers use 6 per host) or over HTTP/2 multiplexed on one
//! connection (h2c with prior knowledge: no TLS, so no ALPN). A `quic:` algorithm loads the
//! same page over QUIC instead (one connection, a stream per resource). The load is written
//! once against [`Lane`] (`load`, `fetch`), with the transport's ends as its parameter
//! (`TcpEnds` locally and over `--remote`, `QuicEnds` under `OneConnection`), and its result
//! is computed by the one [`summarize`].
//!
//! # Library choice
//! Both protocols come from [hyper] 1.x (`client::conn::{http1, http2}` and the matching
//! server halves) on a tokio runtime the load makes and shuts down itself, for the reasons given in the
//! `objects` module: well kept, the base of most Rust HTTP stacks, and its connection-level API
//! takes sockets we created inside the namespace. The HTTP/2 client advertises Chrome's flow
//! control windows (6 MiB per stream, 15 MiB per connection) so the receive window does not
//! limit the load more than it would in a browser.
//!
//! # The model, and what is simplified
//! The clock starts before the first connection opens (navigation start), so the page load
//! time includes the TCP handshake: at least two round trips (connect, then request). Objects
//! are requested when the HTML is complete (a browser's preload scanner starts earlier, while
//! the HTML streams in; with a one-RTT HTML that makes little difference). Over HTTP/1.1 the
//! first connection is reused and up to `max_connections - 1` more are opened; each takes the
//! next pending object when it is free (late binding, like Chrome). Over HTTP/2 all objects are
//! requested at once; the server allows 128 concurrent streams. There is no DNS, TLS, parsing,
//! rendering or dependency chain between objects. The server sends, so the algorithm is set on
//! the server's listener and on every accepted socket, read back from each, and sampled there.
//! A resource's TTFB is when its answer begins: the response head over HTTP, the first byte of
//! its stream over QUIC (see [`Lane::exchange`]).

use std::collections::HashMap;
use std::net::SocketAddrV4;

use std::sync::atomic::{AtomicBool, AtomicU32, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use ccbench_kernel_tcp::TcpInfo;
use hyper::body::Incoming;
use hyper::{Method, Request, StatusCode};
use hyper_util::rt::{TokioExecutor, TokioIo, TokioTimer};

use crate::common::{self, lock, Errors, PatternBody};
use crate::far::{Dial, FarHttp, FarReport};
use crate::harness::{Finish, Harness, ServerLog, ServerProto};
use crate::http_end::HttpEnd;
use crate::lane::{Ask, Http1Lane, Http2Lane, Lane};
use crate::quic::load::OneConnection;
use crate::quic::streams::StreamLane;
use crate::Spec as _;
mod quic;
mod tcp;
// The data half, at the paths the ends import it from.
pub(crate) use crate::{PageConnection, PageModel, PageProtocol, PageResult, PageSpec, ResourceTiming};
use quic::{load_over_quic, load_over_quic_remote, quic_far};
use tcp::TcpEnds;

use crate::{ByteBudget, NoMeasureHook, RunContext, SeriesSink, Side, SocketId, Workload, WorkloadError};

struct ServerCfg {
    page: PageModel,
    /// The bytes a remote server may still send for this test (`ccbench serve --max-bytes`).
    budget: Option<Arc<ByteBudget>>,
    log: Arc<ServerLog>,
}

fn serve_request(req: &Request<Incoming>, cfg: &ServerCfg) -> hyper::Response<PatternBody> {
    if req.method() != Method::GET {
        return common::response(StatusCode::METHOD_NOT_ALLOWED, 0);
    }
    let path = req.uri().path();
    let len = if path == "/" {
        cfg.page.html_bytes
    } else {
        match path.strip_prefix("/o/").and_then(|n| n.parse::<usize>().ok()).and_then(|n| cfg.page.objects.get(n)) {
            Some(&len) => len,
            None => return common::response(StatusCode::NOT_FOUND, 0),
        }
    };
    match &cfg.budget {
        Some(b) if !b.take(len) => {
            lock(&cfg.log.errors).push(b.reason.clone());
            common::response(StatusCode::SERVICE_UNAVAILABLE, 0)
        }
        _ => common::response(StatusCode::OK, len),
    }
}

/// The handler of every connection the server takes in; with `budget`, the bytes it may send.
fn service_maker(spec: &PageSpec, log: Arc<ServerLog>, budget: Option<Arc<ByteBudget>>) -> impl Fn(u16) -> PageService {
    let cfg = Arc::new(ServerCfg { page: spec.page.clone(), budget, log });
    move |_client_port| PageService(cfg.clone())
}

/// The page server of one connection.
struct PageService(Arc<ServerCfg>);

impl hyper::service::Service<Request<Incoming>> for PageService {
    type Response = hyper::Response<PatternBody>;
    type Error = std::convert::Infallible;
    type Future = std::future::Ready<Result<Self::Response, Self::Error>>;

    fn call(&self, req: Request<Incoming>) -> Self::Future {
        std::future::ready(Ok(serve_request(&req, &self.0)))
    }
}

/// One connection's count of what it brought.
struct ConnStats {
    id: u32,
    client_port: u16,
    /// When it opened, after the navigation's start.
    opened: Duration,
    completed: u32,
    bytes: u64,
}

struct ClientLog {
    resources: Vec<ResourceTiming>,
    conns: Vec<ConnStats>,
    errors: Errors,
}

/// What the page load records to, whatever the transport.
struct Ctx<'a> {
    spec: &'a PageSpec,
    nav_start: Instant,
    log: &'a Mutex<ClientLog>,
    hook: &'a dyn crate::MeasureHook,
}

impl Ctx<'_> {
    /// How long after the navigation's start `t` was.
    fn after_start(&self, t: Instant) -> Duration {
        t.saturating_duration_since(self.nav_start)
    }

    /// [`Self::after_start`] as a resource timing's seconds (result.json's `request_s`, …).
    fn since_start(&self, t: Instant) -> f64 {
        ccbench_model::units::wire_time::to_s(self.after_start(t))
    }
}

/// What the QUIC server has of a page: `/` (its HTML) and `/o/N` (its objects), GET only.
impl crate::quic::streams::Store for PageModel {
    fn get(&self, path: &str) -> Option<u64> {
        if path == "/" {
            return Some(self.html_bytes);
        }
        crate::quic::wire::index_in(path, "/o/").and_then(|i| self.objects.get(i as usize).copied())
    }
}

impl Workload for PageSpec {
    type Result = PageResult;

    fn run(&self, run: &RunContext<'_>) -> Result<PageResult, WorkloadError> {
        load_page(self, run)
    }
}

/// Loads the page from the server end in the client end; see the module documentation. The
/// measured span runs from navigation start to the last resource loaded (or the timeout).
/// Returns early, with what finished and `interrupted: true`, when the stop flag is set.
fn load_page(spec: &PageSpec, run: &RunContext<'_>) -> Result<PageResult, WorkloadError> {
    check(spec)?;
    if spec.cc.is_quic() {
        return load_over_quic(spec, run);
    }
    let harness = Harness::new(run, spec.timeout(), spec.sample_interval())?;
    let log = Mutex::new(ClientLog { resources: resource_list(&spec.page), conns: Vec::new(), errors: Errors::default() });
    if harness.stopped_already() {
        return Ok(finish(spec, &log, &harness.server_log, harness.sampler.finish(run.epoch), run.epoch, None, Finish::Stopped));
    }

    let listener = harness.listen(spec.port, Some(&spec.cc))?;
    let dial = Dial::Local { client: run.client, addr: SocketAddrV4::new(run.server_addr, spec.port) };
    let sockets = sockets_for(spec, &dial)?;
    let proto = match spec.protocol {
        PageProtocol::Http1 { .. } => ServerProto::Http1,
        PageProtocol::Http2 => ServerProto::Http2,
    };
    let make_service = service_maker(spec, harness.server_log.clone(), None);

    let nav_start = Instant::now();
    run.hook.open(nav_start);
    let ctx = Ctx { spec, nav_start, log: &log, hook: run.hook };
    let ends = TcpEnds::new(&ctx, &dial, sockets);
    let how = harness.drive(listener, proto, Some(&spec.cc), make_service, ends.load())?;
    // The page's span ends with its last resource; one that never loaded ends now.
    close_span(run.hook, &log, nav_start, matches!(how, Finish::Completed(())), Instant::now());
    harness.shutdown();
    if let Some(actual) = harness.server_mismatch() {
        return Err(WorkloadError::CongestionMismatch { requested: spec.cc.to_string(), actual });
    }
    Ok(finish(spec, &log, &harness.server_log, harness.sampler.finish(run.epoch), run.epoch, Some(nav_start), how))
}

/// Sockets for every connection the load may use, made up front (making one is no network
/// traffic); the client sends only requests, so they keep the default algorithm.
fn sockets_for(spec: &PageSpec, dial: &Dial<'_>) -> Result<Vec<std::net::TcpStream>, WorkloadError> {
    let n = match spec.protocol {
        PageProtocol::Http1 { max_connections } => (max_connections as usize).min(spec.page.objects.len()).max(1),
        PageProtocol::Http2 => 1,
    };
    dial.sockets(n, None)
}

fn check(spec: &PageSpec) -> Result<(), WorkloadError> {
    spec.page.validate().map_err(WorkloadError::Setup)?;
    if let PageProtocol::Http1 { max_connections: 0 } = spec.protocol {
        return Err(WorkloadError::Setup("max_connections must be at least 1".into()));
    }
    Ok(())
}

/// The load against a remote `ccbench serve` (`far`), from this process's namespace: the same
/// load and result as [`Workload::run`]. `end_far` is called once the load is over: it ends
/// the far end and returns its report.
pub(crate) fn run_page_remote(
    spec: &PageSpec,
    far: &FarHttp,
    epoch: Instant,
    stop: &AtomicBool,
    series: &dyn SeriesSink,
    end_far: &dyn Fn() -> Result<FarReport, String>,
) -> Result<PageResult, WorkloadError> {
    check(spec)?;
    let harness = Harness::client_only(epoch, stop, series, spec.timeout(), spec.sample_interval())?;
    let log = Mutex::new(ClientLog { resources: resource_list(&spec.page), conns: Vec::new(), errors: Errors::default() });
    let dial = Dial::Remote(far);
    let nav_start = Instant::now();
    let outcome = sockets_for(spec, &dial).and_then(|sockets| {
        let ctx = Ctx { spec, nav_start, log: &log, hook: &NoMeasureHook };
        let ends = TcpEnds::new(&ctx, &dial, sockets);
        let how = if harness.stopped_already() { Ok(Finish::Stopped) } else { harness.drive_client(ends.load()) };
        harness.shutdown();
        how
    });
    let report = end_far().map_err(WorkloadError::Setup)?;
    let how = outcome?;
    if let Some(actual) = lock(&far.log.mismatch).clone() {
        return Err(WorkloadError::CongestionMismatch { requested: spec.cc.to_string(), actual });
    }
    let mut sampled = harness.sampler.finish(epoch);
    far.absorb(&report, &mut sampled);
    Ok(finish(spec, &log, &far.log, sampled, epoch, Some(nav_start), how))
}

/// The server half of the load for a remote client (`ccbench serve`), on `listener`, behind
/// the gate of `end`; see [`crate::http_end`].
pub(crate) fn serve_page_end(spec: &PageSpec, listener: std::net::TcpListener, end: &HttpEnd<'_>) -> FarReport {
    if let Err(e) = check(spec) {
        return FarReport { errors: 1, error_messages: vec![e.to_string()], ..FarReport::default() };
    }
    let log = Arc::new(ServerLog::default());
    let make_service = service_maker(spec, log.clone(), Some(end.budget.clone()));
    let proto = match spec.protocol {
        PageProtocol::Http1 { .. } => ServerProto::Http1,
        PageProtocol::Http2 => ServerProto::Http2,
    };
    let mut report = crate::http_end::serve_end(listener, proto, None, Some(&spec.cc), spec.sample_interval(), make_service, end);
    let errors = lock(&log.errors);
    report.errors += errors.count;
    report.error_messages.extend(errors.messages.iter().cloned());
    report
}

pub(crate) fn resource_list(page: &PageModel) -> Vec<ResourceTiming> {
    let entry = |path: String, bytes_expected| ResourceTiming {
        path,
        bytes_expected,
        bytes_received: 0,
        connection: None,
        request_s: 0.0,
        ttfb_s: None,
        complete_s: None,
        ok: false,
    };
    std::iter::once(entry("/".into(), page.html_bytes)).chain(page.objects.iter().enumerate().map(|(i, &b)| entry(format!("/o/{i}"), b))).collect()
}

/// A connection of the page's: its number, its slot in `ClientLog::conns`, and the lane its
/// requests go on.
struct PageConn<L> {
    id: u32,
    slot: usize,
    lane: L,
}

/// What the page load asks of its transport, beside its [`Lane`]s.
trait Ends {
    type Lane: Lane;
    /// A lane for one more request at once on `lane`'s connection, when the protocol
    /// multiplexes (HTTP/2, QUIC); `None` when it carries one request at a time (HTTP/1.1),
    /// so that requests at once need connections of their own.
    fn beside(&self, lane: &Self::Lane) -> Option<Self::Lane>;
    /// The most connections the page uses at once when requests need their own.
    fn connections(&self) -> usize;
    /// Opens another connection (one for a parallel worker, or the replacement of one that
    /// closed).
    async fn open(&self) -> Result<PageConn<Self::Lane>, String>;
    /// True when `lane`'s connection has closed: the next request needs another.
    fn closed(&self, lane: &Self::Lane) -> bool;
    /// Resource `path` on connection `conn`, as error messages name it.
    fn name(&self, path: &str, conn: u32) -> String;
}

/// The page, from its first connection on: the HTML, then every object, all at once beside
/// it when the protocol multiplexes, else on up to [`Ends::connections`] connections (the
/// first one reused), each taking the next pending object whenever it is free (late binding,
/// like Chrome).
async fn load<E: Ends>(ctx: &Ctx<'_>, ends: &E, mut first: PageConn<E::Lane>) {
    if !fetch(ctx, ends, &mut first, 0).await {
        return;
    }
    let n = ctx.spec.page.objects.len();
    if let Some(lanes) = (0..n).map(|_| ends.beside(&first.lane)).collect::<Option<Vec<_>>>() {
        let (id, slot) = (first.id, first.slot);
        let futs = lanes.into_iter().zip(1..).map(|(lane, r)| async move { fetch(ctx, ends, &mut PageConn { id, slot, lane }, r).await }).collect();
        common::join_all(futs).await;
        return;
    }
    let next = AtomicUsize::new(0);
    let mut workers = vec![worker(ctx, ends, Some(first), &next)];
    workers.extend((1..ends.connections()).map(|_| worker(ctx, ends, None, &next)));
    common::join_all(workers).await;
}

/// One connection of a page whose requests go one at a time (HTTP/1.1): opens its connection
/// when it has none, then takes the next pending object whenever it is free.
async fn worker<E: Ends>(ctx: &Ctx<'_>, ends: &E, conn: Option<PageConn<E::Lane>>, next: &AtomicUsize) {
    let n_objects = ctx.spec.page.objects.len();
    let mut conn = match conn {
        Some(c) => c,
        None => match ends.open().await {
            Ok(c) => c,
            Err(e) => {
                lock(ctx.log).errors.push(format!("opening a connection: {e}"));
                return;
            }
        },
    };
    loop {
        let i = next.fetch_add(1, Ordering::SeqCst);
        if i >= n_objects {
            return;
        }
        if ends.closed(&conn.lane) {
            match ends.open().await {
                Ok(c) => conn = c,
                Err(e) => {
                    lock(ctx.log).errors.push(format!("/o/{i}: reopening a connection: {e}"));
                    return;
                }
            }
        }
        fetch(ctx, ends, &mut conn, i + 1).await;
    }
}

/// Fetches resource `r` (0 = the HTML) on `conn`, recording its timing: its TTFB when its
/// answer begins (see [`Lane::exchange`]), its completion with its last byte. True if it
/// arrived whole.
async fn fetch<E: Ends>(ctx: &Ctx<'_>, ends: &E, conn: &mut PageConn<E::Lane>, r: usize) -> bool {
    let (path, expected) = {
        let mut log = lock(ctx.log);
        let res = &mut log.resources[r];
        res.request_s = ctx.since_start(Instant::now());
        res.connection = Some(conn.id);
        (res.path.clone(), res.bytes_expected)
    };
    let outcome = conn.lane.exchange(Ask::Get(&path), &mut || lock(ctx.log).resources[r].ttfb_s = Some(ctx.since_start(Instant::now()))).await;
    let now = Instant::now();
    let mut log = lock(ctx.log);
    let outcome = outcome.and_then(|got| {
        log.resources[r].bytes_received = got;
        log.resources[r].complete_s = Some(ctx.since_start(now));
        ctx.hook.extend(now);
        if got == expected {
            Ok(got)
        } else {
            Err(format!("got {got} of {expected} bytes"))
        }
    });
    match outcome {
        Ok(got) => {
            log.resources[r].ok = true;
            let c = &mut log.conns[conn.slot];
            c.completed += 1;
            c.bytes += got;
            true
        }
        Err(msg) => {
            log.errors.push(format!("{}: {msg}", ends.name(&path, conn.id)));
            false
        }
    }
}

/// Closes the measured span: at the last resource's end when the load ran to its end, else now
/// (`ended`, when it was stopped or timed out).
fn close_span(hook: &dyn crate::MeasureHook, log: &Mutex<ClientLog>, nav_start: Instant, completed: bool, ended: Instant) {
    let last = lock(log).resources.iter().filter_map(|r| r.complete_s).reduce(f64::max);
    hook.close(match (completed, last) {
        (true, Some(t)) => nav_start + Duration::from_secs_f64(t),
        _ => ended,
    });
}

fn finish(
    spec: &PageSpec,
    log: &Mutex<ClientLog>,
    server_log: &ServerLog,
    mut sampled: HashMap<SocketId, Option<TcpInfo>>,
    epoch: Instant,
    nav_start: Option<Instant>,
    how: Finish<()>,
) -> PageResult {
    let accepted = lock(&server_log.accepted).clone();
    let server_errors = lock(&server_log.errors);
    let log = lock(log);
    let connections = log
        .conns
        .iter()
        .map(|c| PageConnection {
            id: c.id,
            client_port: c.client_port,
            sending: crate::SenderRecord::tcp(
                &spec.cc,
                accepted.iter().find(|a| a.client_port == c.client_port).and_then(|a| a.cc_read_back.clone()),
                sampled.remove(&SocketId::Connection(c.client_port)).flatten(),
            ),
            opened_s: ccbench_model::units::wire_time::to_s(c.opened),
            requests_completed: c.completed,
            bytes_received: c.bytes,
        })
        .collect();
    let outcome = Outcome {
        nav_start,
        resources: &log.resources,
        client_errors: &log.errors,
        server_errors: &server_errors,
        connections,
        server_connections: accepted.len() as u32,
    };
    summarize(spec, epoch, outcome, how)
}

/// What a page load left, however it travelled (TCP connections or QUIC streams).
pub(crate) struct Outcome<'a> {
    pub nav_start: Option<Instant>,
    /// The HTML first, then the objects in page order.
    pub resources: &'a [ResourceTiming],
    pub client_errors: &'a Errors,
    pub server_errors: &'a Errors,
    pub connections: Vec<PageConnection>,
    pub server_connections: u32,
}

/// The result of a page load: the one place its figures (TTFB, load time, goodput) are
/// computed, for both transports alike.
pub(crate) fn summarize(spec: &PageSpec, epoch: Instant, o: Outcome<'_>, how: Finish<()>) -> PageResult {
    let html = &o.resources[0];
    let all_ok = o.resources.iter().all(|r| r.ok);
    let page_load_s = if all_ok { o.resources.iter().filter_map(|r| r.complete_s).reduce(f64::max) } else { None };
    let bytes_received: u64 = o.resources.iter().map(|r| r.bytes_received).sum();
    let mut error_messages = o.client_errors.messages.clone();
    error_messages.extend(o.server_errors.messages.iter().map(|m| format!("server: {m}")));
    PageResult {
        protocol: spec.protocol,
        cc_requested: (&spec.cc).into(),
        start_us: o.nav_start.map(|t| t.saturating_duration_since(epoch).as_micros() as u64),
        html_ttfb_s: html.ttfb_s,
        html_complete_s: if html.ok { html.complete_s } else { None },
        page_load_s,
        page_bytes: spec.page.total_bytes(),
        bytes_received,
        page_goodput_bps: page_load_s.filter(|&t| t > 0.0).map(|t| bytes_received as f64 * 8.0 / t).unwrap_or(0.0),
        requests_total: o.resources.len() as u32,
        requests_completed: o.resources.iter().filter(|r| r.ok).count() as u32,
        errors: o.client_errors.count,
        connections_used: o.connections.len() as u32,
        server_connections: o.server_connections,
        server_errors: o.server_errors.count,
        interrupted: matches!(how, Finish::Stopped),
        timed_out: matches!(how, Finish::TimedOut),
        connections: o.connections,
        resources: o.resources.to_vec(),
        error_messages,
    }
}

/// The server sends, so a far end sets the algorithm.
impl crate::FarSpec for PageSpec {
    fn check(&self, l: &crate::ServeLimits<'_>) -> Result<(), String> {
        self.page.validate()?;
        if let PageProtocol::Http1 { max_connections: 0 } = self.protocol {
            return Err("a page test needs at least one connection".into());
        }
        l.has_cc(&self.cc)?;
        l.check_http(self.planned_connections(), self.timeout_s, self.page.total_bytes())
    }

    fn describe_far(&self) -> String {
        let proto = match self.protocol {
            _ if self.cc.is_quic() => "one QUIC connection".to_string(),
            PageProtocol::Http1 { max_connections } => format!("HTTP/1.1 ({max_connections} connections)"),
            PageProtocol::Http2 => "h2c".to_string(),
        };
        format!("page of {} objects, {} bytes, {proto} {}", self.page.objects.len(), self.page.total_bytes(), self.cc)
    }

    fn planned_connections(&self) -> u32 {
        if self.cc.is_quic() {
            return 1;
        }
        match self.protocol {
            PageProtocol::Http1 { max_connections } => max_connections.min(self.page.objects.len() as u32).max(1),
            PageProtocol::Http2 => 1,
        }
    }
}

/// Over `--remote`: serve runs the page server behind its gate, this end the load.
impl crate::Remote for PageSpec {
    type Far = PageSpec;
    type Result = PageResult;
    fn far_request(&self) -> PageSpec {
        self.clone()
    }
    fn near_end(&self) -> crate::NearEnd<'_, PageResult> {
        if self.cc.is_quic() {
            crate::NearEnd::quic(self, load_over_quic_remote)
        } else {
            crate::NearEnd::http(self, run_page_remote)
        }
    }
}

impl crate::FarRequest for PageSpec {
    /// Over QUIC, serve's QUIC request server; over TCP, its HTTP server.
    fn far_end(&self) -> crate::FarEnd<'_> {
        if self.cc.is_quic() {
            crate::FarEnd::Quic(quic_far(self))
        } else {
            crate::FarEnd::Http(self)
        }
    }
}

/// The server sends the page.
impl crate::HttpFar for PageSpec {
    fn server_cc(&self) -> Option<&crate::Algorithm> {
        Some(&self.cc)
    }
    fn timeout(&self) -> std::time::Duration {
        crate::Spec::timeout(self)
    }
    fn serve(&self, listener: std::net::TcpListener, end: &HttpEnd<'_>, _: Option<&crate::RunCertificate>) -> FarReport {
        serve_page_end(self, listener, end)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn protocol_serializes_readably() {
        let j = serde_json::to_string(&PageProtocol::default()).unwrap();
        assert_eq!(j, r#"{"kind":"http1","max_connections":6}"#);
        assert_eq!(serde_json::to_string(&PageProtocol::Http2).unwrap(), r#"{"kind":"http2"}"#);
    }

    use std::cell::{Cell, RefCell};

    /// A transport that answers from a script, counting the requests in flight at once.
    struct Script {
        /// Answers by path; a path not listed gets its whole resource.
        answers: HashMap<String, Result<u64, String>>,
        /// Lanes multiplex (HTTP/2, QUIC) or carry one request at a time (HTTP/1.1).
        multiplex: bool,
        connections: usize,
        /// A connection closes after this many requests (HTTP/1.1's server closing it).
        closes_after: Option<u32>,
        /// Opening a connection fails from the `n`th on.
        open_fails_from: Option<u32>,
        in_flight: Cell<usize>,
        most_in_flight: Cell<usize>,
        opened: Cell<u32>,
        asked: RefCell<Vec<(String, u32)>>,
    }

    struct ScriptLane<'s> {
        script: &'s Script,
        conn: u32,
        served: u32,
    }

    impl Lane for ScriptLane<'_> {
        async fn exchange(&mut self, ask: Ask<'_>, on_begin: &mut dyn FnMut()) -> Result<u64, String> {
            let Ask::Get(path) = ask else { panic!("a page only GETs") };
            let s = self.script;
            s.asked.borrow_mut().push((path.to_string(), self.conn));
            s.in_flight.set(s.in_flight.get() + 1);
            s.most_in_flight.set(s.most_in_flight.get().max(s.in_flight.get()));
            tokio::task::yield_now().await;
            on_begin();
            tokio::task::yield_now().await;
            s.in_flight.set(s.in_flight.get() - 1);
            self.served += 1;
            s.answers.get(path).cloned().unwrap_or_else(|| Ok(crate::quic::streams::Store::get(&page(), path).expect("a path of the page")))
        }
    }

    struct ScriptEnds<'s> {
        script: &'s Script,
        log: &'s Mutex<ClientLog>,
    }

    impl<'s> Ends for ScriptEnds<'s> {
        type Lane = ScriptLane<'s>;
        fn beside(&self, lane: &ScriptLane<'s>) -> Option<ScriptLane<'s>> {
            self.script.multiplex.then_some(ScriptLane { script: self.script, conn: lane.conn, served: 0 })
        }
        fn connections(&self) -> usize {
            self.script.connections
        }
        async fn open(&self) -> Result<PageConn<ScriptLane<'s>>, String> {
            let id = self.script.opened.get();
            if self.script.open_fails_from.is_some_and(|n| id >= n) {
                return Err("refused".into());
            }
            self.script.opened.set(id + 1);
            let mut log = lock(self.log);
            log.conns.push(ConnStats { id, client_port: 0, opened: Duration::ZERO, completed: 0, bytes: 0 });
            Ok(PageConn { id, slot: log.conns.len() - 1, lane: ScriptLane { script: self.script, conn: id, served: 0 } })
        }
        fn closed(&self, lane: &ScriptLane<'s>) -> bool {
            self.script.closes_after.is_some_and(|n| lane.served >= n)
        }
        fn name(&self, path: &str, conn: u32) -> String {
            format!("{path} on {conn}")
        }
    }

    fn page() -> PageModel {
        PageModel { html_bytes: 1000, objects: vec![10, 20, 30, 40, 50, 60, 70] }
    }

    fn script(multiplex: bool, connections: usize) -> Script {
        Script {
            answers: HashMap::new(),
            multiplex,
            connections,
            closes_after: None,
            open_fails_from: None,
            in_flight: Cell::new(0),
            most_in_flight: Cell::new(0),
            opened: Cell::new(0),
            asked: RefCell::new(Vec::new()),
        }
    }

    /// Loads `page()` over `script` from a first connection; the log.
    fn load_page_over(script: &Script) -> ClientLog {
        let spec =
            PageSpec { page: page(), protocol: PageProtocol::default(), cc: "cubic".parse().unwrap(), port: 1, sample_interval_us: 10_000, timeout_s: 1.0 };
        let log = Mutex::new(ClientLog { resources: resource_list(&spec.page), conns: Vec::new(), errors: Errors::default() });
        let ctx = Ctx { spec: &spec, nav_start: Instant::now(), log: &log, hook: &NoMeasureHook };
        let ends = ScriptEnds { script, log: &log };
        tokio::runtime::Builder::new_current_thread().build().unwrap().block_on(async {
            let first = ends.open().await.unwrap();
            load(&ctx, &ends, first).await;
        });
        log.into_inner().unwrap()
    }

    /// Over a multiplexing transport the HTML comes alone, then every object at once beside it
    /// on the one connection; each resource's TTFB lies between its request and its end.
    #[test]
    fn a_multiplexed_page_asks_every_object_at_once_after_the_html() {
        let s = script(true, 1);
        let log = load_page_over(&s);
        assert_eq!(s.asked.borrow()[0], ("/".to_string(), 0));
        assert_eq!(s.asked.borrow().len(), 8);
        assert_eq!((s.most_in_flight.get(), s.opened.get()), (7, 1));
        for r in &log.resources {
            let (ttfb, done) = (r.ttfb_s.unwrap(), r.complete_s.unwrap());
            assert!(r.ok && r.connection == Some(0) && r.bytes_received == r.bytes_expected, "{r:?}");
            assert!(r.request_s <= ttfb && ttfb <= done, "{r:?}");
        }
        assert_eq!((log.conns[0].completed, log.conns[0].bytes), (8, page().total_bytes()));
        assert_eq!(log.errors.count, 0);
    }

    /// One request at a time per connection: at most `connections` in flight, the first
    /// connection reused, each object asked once.
    #[test]
    fn one_at_a_time_the_objects_spread_over_the_connections() {
        let s = script(false, 3);
        let log = load_page_over(&s);
        assert_eq!((s.most_in_flight.get(), s.opened.get()), (3, 3));
        let mut paths: Vec<String> = s.asked.borrow().iter().map(|(p, _)| p.clone()).collect();
        paths.sort();
        assert_eq!(paths, ["/", "/o/0", "/o/1", "/o/2", "/o/3", "/o/4", "/o/5", "/o/6"]);
        assert!(log.resources.iter().all(|r| r.ok));
        assert_eq!(log.conns.iter().map(|c| c.completed).sum::<u32>(), 8);
        assert!(log.conns.iter().all(|c| c.completed >= 1), "every connection took objects");
    }

    /// The HTML failing ends the page: no object is asked for.
    #[test]
    fn a_failed_html_asks_for_nothing_more() {
        let mut s = script(true, 1);
        s.answers.insert("/".into(), Err("status 404 Not Found, expected 200 OK".into()));
        let log = load_page_over(&s);
        assert_eq!(s.asked.borrow().len(), 1);
        assert_eq!(log.errors.messages, ["/ on 0: status 404 Not Found, expected 200 OK"]);
        let html = &log.resources[0];
        assert!(!html.ok && html.complete_s.is_none() && html.ttfb_s.is_some());
        assert!(log.resources[1..].iter().all(|r| r.connection.is_none() && !r.ok));
    }

    /// A short answer fails its resource (ended, but not whole); the rest load.
    #[test]
    fn a_short_answer_fails_only_its_resource() {
        let mut s = script(true, 1);
        s.answers.insert("/o/2".into(), Ok(3));
        let log = load_page_over(&s);
        assert_eq!(log.errors.messages, ["/o/2 on 0: got 3 of 30 bytes"]);
        let short = &log.resources[3];
        assert!(!short.ok && short.bytes_received == 3 && short.complete_s.is_some());
        assert_eq!(log.resources.iter().filter(|r| r.ok).count(), 7);
        assert_eq!(log.conns[0].bytes, page().total_bytes() - 30);
    }

    /// A connection the server closed is replaced before its next object; one that cannot be
    /// replaced ends its worker, the object it took recorded as not asked.
    #[test]
    fn a_closed_connection_is_replaced_until_that_fails() {
        let mut s = script(false, 1);
        s.closes_after = Some(2);
        let log = load_page_over(&s);
        assert_eq!(s.opened.get(), 4, "8 resources, 2 per connection");
        assert!(log.resources.iter().all(|r| r.ok) && log.errors.count == 0);

        let mut s = script(false, 1);
        (s.closes_after, s.open_fails_from) = (Some(2), Some(2));
        let log = load_page_over(&s);
        assert_eq!(s.asked.borrow().len(), 4);
        assert_eq!(log.errors.messages, ["/o/3: reopening a connection: refused"]);
        assert_eq!(log.resources.iter().filter(|r| r.ok).count(), 4);
    }
}

/// `ccbench run --workload page`: its flags and its spec from them. Browser takes `--page` and
/// `--http` too.
mod args;

pub use args::{Http, PageFlags};
