//! A web page over QUIC, as a browser loads it over HTTP/3: one connection, the HTML document
//! on a stream (`GET /`), then every object it references on a stream of its own (`GET /o/N`),
//! all requested at once (at most [`super::MAX_STREAMS`] in flight; the rest as streams free up). The
//! framing is [`super::wire`]'s. The result is the TCP page's (`crate::page`), its figures
//! computed by the same function; `--http` and `--max-connections` shape the TCP runs only.
//!
//! * The clock starts at navigation start, before the handshake, as it starts before the TCP
//!   connect: QUIC's one round trip (TLS 1.3 inside) stands where TCP's connect does (the TCP
//!   page is cleartext), so both reach their first request after one round trip.
//! * A resource's first byte (its TTFB) is the first byte of its stream: hq-interop has no
//!   response head. The server sends, so the algorithm is set on the server's end, read back
//!   from both ends, and the server's end is sampled, from the handshake on.
//! * There is no second connection: if the connection is lost, what was not loaded fails.

use std::net::SocketAddrV4;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::{Duration, Instant};

use noq::{Connection, VarInt};

use super::pair::{self, dial, quic_algorithm, server_endpoint, Pair};
use super::streams::{count_to_end, serve};
use super::wire::Request;
use super::{Tls, HANDSHAKE_TIMEOUT};
use crate::common::{join_all, lock, multi_thread_runtime, stopped, Errors};
use crate::harness::Finish;
use crate::page::{resource_list, summarize, Outcome, PageConnection, PageResult, PageSpec, ResourceTiming};
use crate::{MeasureHook, QuicSample, RunContext, Side, WorkloadError};

/// What the client records.
struct Log {
    resources: Vec<ResourceTiming>,
    errors: Errors,
    completed: u32,
    bytes: u64,
}

struct Ctx<'a> {
    run: &'a RunContext<'a>,
    spec: &'a PageSpec,
    tls: &'a Tls,
    server: &'a noq::Endpoint,
    server_sa: SocketAddrV4,
    algorithm: &'a str,
    /// Set once the connection is up: the sampler and the result read it from here.
    pair: &'a OnceLock<Pair>,
    nav_start: Instant,
    log: &'a Mutex<Log>,
    server_errors: &'a Arc<Mutex<Errors>>,
    hook: &'a dyn MeasureHook,
}

impl Ctx<'_> {
    fn since_start(&self, t: Instant) -> f64 {
        t.saturating_duration_since(self.nav_start).as_secs_f64()
    }
}

/// Loads `spec`'s page, whose algorithm is a QUIC one, from the server end in the client end;
/// see the module documentation. The measured span runs from navigation start to the last
/// resource loaded (or the timeout). Returns early, with what finished and
/// `interrupted: true`, when the stop flag is set.
pub(crate) fn load_quic_page(spec: &PageSpec, run: &RunContext<'_>) -> Result<PageResult, WorkloadError> {
    if !(spec.timeout_s > 0.0 && spec.timeout_s.is_finite()) {
        return Err(WorkloadError::Setup(format!("timeout_s must be positive, got {}", spec.timeout_s)));
    }
    let deadline = Instant::now() + Duration::from_secs_f64(spec.timeout_s);
    let log = Mutex::new(Log { resources: resource_list(&spec.page), errors: Errors::default(), completed: 0, bytes: 0 });
    let server_errors = Arc::new(Mutex::new(Errors::default()));
    if run.stop.load(Ordering::SeqCst) {
        return Ok(finish(spec, run.epoch, None, &log, &server_errors, None, Finish::Stopped));
    }
    let algorithm = quic_algorithm(&spec.cc)?;
    let rt = multi_thread_runtime()?;
    let tls = Tls::new()?;
    let server_sa = SocketAddrV4::new(run.server_addr, spec.port);
    // The server listens before the browser navigates.
    let server = rt.block_on(async { server_endpoint(run, &tls, server_sa) })?;
    let once = OnceLock::new();
    let nav_start = Instant::now();
    run.hook.open(nav_start);
    let ctx = Ctx {
        run,
        spec,
        tls: &tls,
        server: &server,
        server_sa,
        algorithm: &algorithm,
        pair: &once,
        nav_start,
        log: &log,
        server_errors: &server_errors,
        hook: run.hook,
    };
    let interval = Duration::from_micros(spec.sample_interval_us.max(1000));
    let done = AtomicBool::new(false);
    let (how, mut last) = std::thread::scope(|s| {
        let sampler = s.spawn(|| pair::sample_until(&once, run, interval, &done));
        let how = rt.block_on(async {
            tokio::select! {
                r = load(&ctx) => Finish::Completed(r),
                () = stopped(run.stop) => Finish::Stopped,
                () = tokio::time::sleep_until(deadline.into()) => Finish::TimedOut,
            }
        });
        done.store(true, Ordering::SeqCst);
        (how, sampler.join().unwrap_or_else(|_| (Instant::now(), 0)))
    });
    // The page's span ends with its last resource; one that never loaded ends now.
    let last_loaded = lock(&log).resources.iter().filter_map(|r| r.complete_s).reduce(f64::max);
    run.hook.close(match (&how, last_loaded) {
        (Finish::Completed(Ok(())), Some(t)) => nav_start + Duration::from_secs_f64(t),
        _ => Instant::now(),
    });
    let connection = once.get().map(|p| {
        let s = pair::last_sample(p, run, &mut last);
        p.client().close(VarInt::from_u32(0), b"done");
        (p, s)
    });
    let how = match how {
        Finish::Completed(r) => r.map(|()| Finish::Completed(())),
        Finish::Stopped => Ok(Finish::Stopped),
        Finish::TimedOut => Ok(Finish::TimedOut),
    };
    let result = how.map(|how| finish(spec, run.epoch, Some(nav_start), &log, &server_errors, connection, how));
    drop(server);
    rt.shutdown_timeout(Duration::from_millis(500));
    result
}

/// Connects, then fetches the HTML, then every object at once. The HTML request leaves as soon
/// as the client's end is up (one round trip in); the server's end joins, is read back and
/// starts serving meanwhile. A sender that does not run the algorithm asked for fails the load;
/// any other failure is recorded and ends it.
async fn load(ctx: &Ctx<'_>) -> Result<(), WorkloadError> {
    let timed = |what| move |_| WorkloadError::Setup(format!("the QUIC handshake ({what}) with {} timed out", ctx.server_sa));
    let (dial, connected, accepting) = dial(ctx.run, ctx.server, ctx.tls, ctx.server_sa, Side::Server, ctx.algorithm, ctx.algorithm, 0, None)?;
    // Both ends take part in the handshake; the client's is up first, the server's half a
    // round trip later.
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
    let client = match up.await.map_err(timed("client")).and_then(|r| r) {
        Ok(c) => c,
        Err(e) => {
            lock(ctx.log).errors.push(format!("opening the connection: {e}"));
            return Ok(());
        }
    };
    let server_end = async {
        let up = async {
            let s = match accepted {
                Some(s) => s?,
                None => tokio::time::timeout(HANDSHAKE_TIMEOUT, accepting).await.map_err(timed("server"))??,
            };
            let pair = dial.pair(client.clone(), s)?;
            tokio::spawn(serve(pair.server().clone(), Arc::new(ctx.spec.page.clone()), ctx.server_errors.clone()));
            let _ = ctx.pair.set(pair);
            Ok::<_, WorkloadError>(())
        }
        .await;
        if up.is_err() {
            // Nothing will answer the HTML request: end it now, not at the timeout.
            client.close(VarInt::from_u32(0), b"no server");
        }
        up
    };
    let (server_end, html) = tokio::join!(server_end, fetch(ctx, &client, 0));
    match server_end {
        Ok(()) => {}
        Err(e @ WorkloadError::CongestionMismatch { .. }) => return Err(e),
        Err(e) => {
            lock(ctx.log).errors.push(format!("the server's end of the connection: {e}"));
            return Ok(());
        }
    }
    if html {
        join_all((1..=ctx.spec.page.objects.len()).map(|r| fetch(ctx, &client, r)).collect()).await;
    }
    Ok(())
}

/// Fetches resource `r` (0 = the HTML) on a stream of its own, recording its timing. True if
/// it arrived whole.
async fn fetch(ctx: &Ctx<'_>, conn: &Connection, r: usize) -> bool {
    let (path, expected) = {
        let mut log = lock(ctx.log);
        let res = &mut log.resources[r];
        res.request_s = ctx.since_start(Instant::now());
        res.connection = Some(0);
        (res.path.clone(), res.bytes_expected)
    };
    let outcome = async {
        let (mut send, mut recv) = conn.open_bi().await.map_err(|e| format!("opening a stream: {e}"))?;
        send.write_all(Request::Get { path: path.clone() }.line().as_bytes()).await.map_err(|e| format!("sending the request: {e}"))?;
        send.finish().map_err(|e| format!("finishing the request: {e}"))?;
        let got = count_to_end(&mut recv, || lock(ctx.log).resources[r].ttfb_s = Some(ctx.since_start(Instant::now())))
            .await
            .map_err(|e| format!("reading the response: {e}"))?;
        let now = Instant::now();
        let mut log = lock(ctx.log);
        log.resources[r].bytes_received = got;
        log.resources[r].complete_s = Some(ctx.since_start(now));
        ctx.hook.extend(now);
        if got == expected {
            Ok(got)
        } else {
            Err(format!("got {got} of {expected} bytes"))
        }
    }
    .await;
    let mut log = lock(ctx.log);
    match outcome {
        Ok(got) => {
            log.resources[r].ok = true;
            log.completed += 1;
            log.bytes += got;
            true
        }
        Err(msg) => {
            log.errors.push(format!("{path}: {msg}"));
            false
        }
    }
}

/// The result: the page's figures, and the one connection as the TCP page reports each of its.
fn finish(
    spec: &PageSpec,
    epoch: Instant,
    nav_start: Option<Instant>,
    log: &Mutex<Log>,
    server_errors: &Mutex<Errors>,
    connection: Option<(&Pair, QuicSample)>,
    how: Finish<()>,
) -> PageResult {
    let log = lock(log);
    let server_errors = lock(server_errors);
    let connections: Vec<PageConnection> = connection
        .into_iter()
        .map(|(pair, last)| PageConnection {
            id: 0,
            client_port: pair.client_port,
            sending: pair::sender_record(pair, spec.cc.to_string(), last, epoch),
            // The handshake began at navigation start.
            opened_s: 0.0,
            requests_completed: log.completed,
            bytes_received: log.bytes,
        })
        .collect();
    let server_connections = connections.len() as u32;
    let outcome = Outcome { nav_start, resources: &log.resources, client_errors: &log.errors, server_errors: &server_errors, connections, server_connections };
    summarize(spec, epoch, outcome, how)
}
