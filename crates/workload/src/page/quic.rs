//! The page's ends over QUIC: one connection, a stream per resource.

use super::*;
use crate::quic::load::ServerEnd;
use crate::{FarQuic, QuicFarReport, QuicRequests};

/// The page's ends over QUIC: the one connection, a stream per resource, all at once (at most
/// [`crate::quic::MAX_STREAMS`] in flight: noq holds a stream back until the server grants it). There is no
/// second connection: if it is lost, what was not loaded fails.
struct QuicEnds<'c>(&'c noq::Connection);

impl<'c> Ends for QuicEnds<'c> {
    type Lane = StreamLane<'c>;

    fn beside(&self, _: &StreamLane<'c>) -> Option<StreamLane<'c>> {
        Some(StreamLane(self.0))
    }

    fn connections(&self) -> usize {
        1
    }

    async fn open(&self) -> Result<PageConn<StreamLane<'c>>, String> {
        Err("a page over QUIC has one connection".into())
    }

    fn closed(&self, _: &StreamLane<'c>) -> bool {
        false
    }

    fn name(&self, path: &str, _: u32) -> String {
        path.to_string()
    }
}

/// Loads `spec`'s page, whose algorithm is a QUIC one, as a browser loads it over HTTP/3: one
/// connection, the HTML on a stream (`GET /`), then every object on a stream of its own
/// (`GET /o/N`), the framing `quic::wire`'s. `--http` and `--max-connections` shape the TCP
/// runs only.
///
/// * The clock starts at navigation start, before the handshake, as it starts before the TCP
///   connect: QUIC's one round trip (TLS 1.3 inside) stands where TCP's connect does (the TCP
///   page is cleartext), so both reach their first request after one round trip. The HTML
///   request leaves as soon as the client's end is up; the server's end joins, is read back
///   and starts serving meanwhile (`OneConnection::run_from_handshake`).
/// * A resource's first byte (its TTFB) is the first byte of its stream: hq-interop has no
///   response head. The server sends, so the algorithm is set on the server's end, read back
///   from both ends, and the server's end is sampled, from the handshake on.
pub(super) fn load_over_quic(spec: &PageSpec, run: &RunContext<'_>) -> Result<PageResult, WorkloadError> {
    quic_page(spec, ServerEnd::Here(run))
}

/// As [`load_over_quic`], the server's end in a remote `ccbench serve` (`far`): the same
/// load and result. `end` is called once the load is over: it ends the far end and returns
/// its report.
pub(super) fn load_over_quic_remote(
    spec: &PageSpec,
    far: &FarQuic,
    epoch: Instant,
    stop: &AtomicBool,
    series: &dyn SeriesSink,
    end: &dyn Fn() -> Result<QuicFarReport, String>,
) -> Result<PageResult, WorkloadError> {
    check(spec)?;
    quic_page(spec, ServerEnd::Far { far, epoch, stop, series, end })
}

/// What serve runs of `spec` over QUIC: the page behind the gate; the server sends.
pub(super) fn quic_far(spec: &PageSpec) -> QuicRequests {
    QuicRequests {
        cc: spec.cc.clone(),
        receiver_cc: None,
        sender: Side::Server,
        store: Arc::new(spec.page.clone()),
        timeout: spec.timeout(),
        sample_interval: spec.sample_interval(),
    }
}

fn quic_page(spec: &PageSpec, over: ServerEnd<'_>) -> Result<PageResult, WorkloadError> {
    let (epoch, hook) = (over.epoch(), over.hook());
    let log = Mutex::new(ClientLog { resources: resource_list(&spec.page), conns: Vec::new(), errors: Errors::default() });
    // The one connection's count; its port comes with its record. The handshake began at
    // navigation start.
    lock(&log).conns.push(ConnStats { id: 0, client_port: 0, opened: Duration::ZERO, completed: 0, bytes: 0 });
    let end = OneConnection {
        over,
        cc: &spec.cc,
        receiver_cc: None,
        sender: Side::Server,
        port: spec.port,
        timeout: spec.timeout(),
        sample_interval: spec.sample_interval(),
        store: Arc::new(spec.page.clone()),
    }
    .run_from_handshake(async |conn, nav_start| {
        let ctx = Ctx { spec, nav_start, log: &log, hook };
        load(&ctx, &QuicEnds(conn), PageConn { id: 0, slot: 0, lane: StreamLane(conn) }).await;
    })?;
    if let Some(nav_start) = end.started {
        close_span(hook, &log, nav_start, matches!(end.how, Finish::Completed(_)), end.ended);
    }
    let mut log = lock(&log);
    if let Some(e) = end.setup_error {
        log.errors.push(e);
    }
    let c = &log.conns[0];
    let connections: Vec<PageConnection> = end
        .connection
        .into_iter()
        .map(|(client_port, sending)| PageConnection {
            id: 0,
            client_port,
            sending,
            opened_s: ccbench_model::units::wire_time::to_s(c.opened),
            requests_completed: c.completed,
            bytes_received: c.bytes,
        })
        .collect();
    let how = match end.how {
        Finish::Completed(_) => Finish::Completed(()),
        Finish::Stopped => Finish::Stopped,
        Finish::TimedOut => Finish::TimedOut,
    };
    let server_connections = connections.len() as u32;
    let outcome = Outcome {
        nav_start: end.started,
        resources: &log.resources,
        client_errors: &log.errors,
        server_errors: &end.server_errors,
        connections,
        server_connections,
    };
    Ok(summarize(spec, epoch, outcome, how))
}
