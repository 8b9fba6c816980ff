//! The object-store load over QUIC: `requests` GETs or PUTs of `object_bytes` each, with
//! `concurrency` of them in flight at once as concurrent bidirectional streams on **one**
//! connection, a stream per request, the way an HTTP/3 client multiplexes its requests (the
//! framing, and why it is not HTTP/3 itself, is in [`super::wire`]). The result is the TCP
//! load's (`crate::objects`), its figures computed by the same function.
//!
//! * The connection is set up, and both ends' controllers read back, before the first request,
//!   so the wall time (first request to last response) holds only requests, as over TCP.
//! * `concurrency` workers each issue one request at a time on a fresh stream: a closed loop
//!   with `concurrency` requests in flight, as the TCP load has one per connection. A request's
//!   latency runs from opening its stream until its response is complete: a GET's last byte,
//!   a PUT's `OK` after the server read the whole body.
//! * A failed request is counted in `errors` and not retried. There is no second connection: if
//!   the connection itself is lost, each worker records its next request as failed and stops
//!   (the requests never issued leave the run unfinished).
//! * The sending end is sampled every interval on a thread of its own, into the run's series as
//!   `SocketId::Connection(client_port)` (`conn-PORT`, as a TCP connection's).

use std::net::SocketAddrV4;
use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::{Duration, Instant};

use noq::{Connection, VarInt};

use super::pair::{self, connect_pair, quic_algorithm, server_endpoint, Pair};
use super::streams::{count_to_end, read_line, serve, write_pattern, Store};
use super::wire::{Request, Status};
use super::{Tls, MAX_STREAMS};
use crate::common::{join_all, lock, multi_thread_runtime, stopped, Errors};
use crate::harness::Finish;
use crate::objects::{next_index, summarize, Ended, ObjectMethod, ObjectsConnection, ObjectsResult, ObjectsSpec, Outcome, RequestLog, Tally};
use crate::{MeasureHook, QuicSample, RunContext, WorkloadError};

/// What the client's workers record.
#[derive(Default)]
struct Log {
    requests: RequestLog,
    /// The one connection's.
    tally: Tally,
}

struct Ctx<'a> {
    /// The client's end of the connection.
    conn: &'a Connection,
    spec: &'a ObjectsSpec,
    log: &'a Mutex<Log>,
    next_request: AtomicU32,
    hook: &'a dyn MeasureHook,
}

/// Runs `spec`, whose algorithm is a QUIC one, between the two ends of `run`; see the module
/// documentation. Returns early, with what finished and `interrupted: true`, when the stop flag
/// is set.
pub(crate) fn run_quic_objects(spec: &ObjectsSpec, run: &RunContext<'_>) -> Result<ObjectsResult, WorkloadError> {
    if spec.concurrency == 0 || spec.concurrency > MAX_STREAMS {
        return Err(WorkloadError::Setup(format!("concurrency over QUIC must be from 1 to {MAX_STREAMS}, got {}", spec.concurrency)));
    }
    if !(spec.timeout_s > 0.0 && spec.timeout_s.is_finite()) {
        return Err(WorkloadError::Setup(format!("timeout_s must be positive, got {}", spec.timeout_s)));
    }
    let deadline = Instant::now() + Duration::from_secs_f64(spec.timeout_s);
    let log = Mutex::new(Log::default());
    let server_errors = Arc::new(Mutex::new(Errors::default()));
    if run.stop.load(Ordering::SeqCst) {
        return Ok(finish(spec, run.epoch, &log, &server_errors, None, 0, Finish::Stopped));
    }
    let algorithm = quic_algorithm(&spec.cc)?;
    let receiver_alg = spec.quic_receiver_cc.clone().unwrap_or_else(|| algorithm.clone());
    let rt = multi_thread_runtime()?;
    let tls = Tls::new()?;
    let server_sa = SocketAddrV4::new(run.server_addr, spec.port);
    let (server, pair) = rt.block_on(async {
        let server = server_endpoint(run, &tls, server_sa)?;
        let pair = connect_pair(run, &server, &tls, server_sa, spec.method.sender(), &algorithm, &receiver_alg, 0, None).await?;
        Ok::<_, WorkloadError>((server, pair))
    })?;
    rt.spawn(serve(pair.server().clone(), Store::Objects { object_bytes: spec.object_bytes }, server_errors.clone()));
    let once = &OnceLock::from(pair);
    let pair = once.get().expect("just set");

    let ctx = Ctx { conn: pair.client(), spec, log: &log, next_request: AtomicU32::new(0), hook: run.hook };
    let interval = Duration::from_micros(spec.sample_interval_us.max(1000));
    let done = AtomicBool::new(false);
    let (how, mut last) = std::thread::scope(|s| {
        let sampler = s.spawn(|| pair::sample_until(once, run, interval, &done));
        let how = rt.block_on(async {
            tokio::select! {
                () = client(&ctx) => Finish::Completed(()),
                () = stopped(run.stop) => Finish::Stopped,
                () = tokio::time::sleep_until(deadline.into()) => Finish::TimedOut,
            }
        });
        done.store(true, Ordering::SeqCst);
        (how, sampler.join().unwrap_or_else(|_| (Instant::now(), 0)))
    });
    lock(&log).requests.close(run.hook);
    let final_sample = pair::last_sample(pair, run, &mut last);
    pair.client().close(VarInt::from_u32(0), b"done");
    let issued = ctx.next_request.load(Ordering::SeqCst).min(spec.requests);
    let connection = Some((pair, final_sample));
    let result = finish(spec, run.epoch, &log, &server_errors, connection, issued, how);
    drop(server);
    rt.shutdown_timeout(Duration::from_millis(500));
    Ok(result)
}

/// The result: the load's figures, and the one connection as the TCP load reports each of its.
fn finish(
    spec: &ObjectsSpec,
    epoch: Instant,
    log: &Mutex<Log>,
    server_errors: &Mutex<Errors>,
    connection: Option<(&Pair, QuicSample)>,
    issued: u32,
    how: Finish<()>,
) -> ObjectsResult {
    let log = lock(log);
    let server_errors = lock(server_errors);
    let connections: Vec<ObjectsConnection> = connection
        .into_iter()
        .map(|(pair, last)| ObjectsConnection {
            id: 0,
            client_port: pair.client_port,
            sender: pair.sender_side,
            sending: pair::sender_record(pair, spec.cc.to_string(), last, epoch),
            requests_completed: log.tally.completed,
            errors: log.tally.errors,
            content_bytes: log.tally.bytes,
        })
        .collect();
    let server_connections = connections.len() as u32;
    let outcome = Outcome {
        first_request: log.requests.first_request,
        last_response: log.requests.last_response,
        requests: &log.requests.rows,
        client_errors: &log.requests.errors,
        server_errors: &server_errors,
        connections,
        server_connections,
        issued,
    };
    summarize(spec, epoch, outcome, how)
}

/// The requests: `concurrency` workers, each one request at a time on a stream of its own.
async fn client(ctx: &Ctx<'_>) {
    let first = lock(ctx.log).requests.start(ctx.hook);
    join_all((0..ctx.spec.concurrency).map(|_| worker(ctx, first)).collect()).await;
}

async fn worker(ctx: &Ctx<'_>, first: Instant) {
    let spec = ctx.spec;
    while let Some(index) = next_index(&ctx.next_request, spec.requests) {
        let lost = ctx.conn.close_reason();
        let issued = Instant::now();
        let outcome = match &lost {
            Some(reason) => Err(format!("the connection is gone: {reason}")),
            None => one_request(ctx.conn, spec, index).await,
        };
        let ended = Ended { index, connection: 0, first, issued, ended: Instant::now() };
        let log = &mut *lock(ctx.log);
        log.requests.record_outcome(&mut log.tally, ctx.hook, ended, outcome, || format!("request {index}"));
        if lost.is_some() {
            return;
        }
    }
}

/// One request on a stream of its own; the object bytes that moved, or why it failed.
async fn one_request(conn: &Connection, spec: &ObjectsSpec, index: u32) -> Result<u64, String> {
    let (mut send, mut recv) = conn.open_bi().await.map_err(|e| format!("opening a stream: {e}"))?;
    let request = match spec.method {
        ObjectMethod::Get => Request::Get { path: format!("/obj/{index}") },
        ObjectMethod::Put => Request::Put { path: format!("/obj/{index}"), len: spec.object_bytes },
    };
    send.write_all(request.line().as_bytes()).await.map_err(|e| format!("sending the request: {e}"))?;
    if spec.method == ObjectMethod::Put {
        write_pattern(&mut send, spec.object_bytes).await.map_err(|e| format!("sending the body: {e}"))?;
    }
    send.finish().map_err(|e| format!("finishing the request: {e}"))?;
    match spec.method {
        ObjectMethod::Get => {
            let got = count_to_end(&mut recv, || {}).await.map_err(|e| format!("reading the object: {e}"))?;
            if got == spec.object_bytes {
                Ok(got)
            } else {
                Err(format!("got {got} of {} bytes", spec.object_bytes))
            }
        }
        ObjectMethod::Put => {
            let (line, _) = read_line(&mut recv).await?;
            match Status::parse(&line)? {
                Status::Ok => Ok(spec.object_bytes),
                Status::Error(reason) => Err(format!("the server refused the body: {reason}")),
            }
        }
    }
}
