//! Bulk and file transfers over QUIC: `--flows N` is N streams on one connection (what a QUIC
//! application does), a mix (`--flows quic:bbr3:1,quic:cubic:1`) is one connection per flow,
//! each with its own algorithm, sharing the bottleneck. Each stream starts with its flow id
//! (4 bytes), then data; goodput is counted where it arrives, as for TCP.

use std::net::SocketAddrV4;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Barrier, Mutex};
use std::time::{Duration, Instant};

use noq::{Connection, Endpoint, VarInt};

use super::observe::Probe;
use super::pair::{self, connect_pair, quic_algorithm, server_endpoint};
use super::{BbrView, ReadBack, Tls};
use crate::bulk::{aggregate_goodput, Amount, BbrEvent, BulkResult, BulkSpec, EndClock, FlowResult, FlowWindow, GoodputPoint, MixFlow};
use crate::common::{lock, micros_since, multi_thread_runtime};
use crate::ByteBudget;
use crate::Transport;
use crate::{QuicSample, RunContext, SenderRecord, SocketId, WorkloadError};

/// How often blocked stream calls come back to look at the clock and the stop flag.
const IO_TICK: Duration = Duration::from_millis(50);

/// One QUIC connection and the flows (streams) it carries.
struct Conn {
    /// The flows on it, by id; the first names its samples (`flow-N`).
    flows: Vec<u32>,
    sender: Connection,
    receiver: Connection,
    probe: Arc<Probe>,
    /// The sending controller's BBR view, when it has one.
    bbr: Option<Arc<dyn BbrView>>,
    client_port: u16,
    read_back: ReadBack,
    /// The client's endpoint lives as long as its connection.
    _client: Endpoint,
}

/// What arrived of one flow.
#[derive(Clone, Default)]
pub(super) struct Received {
    pub(super) bytes: u64,
    pub(super) completion_s: Option<f64>,
    pub(super) error: Option<String>,
}

/// Runs `spec`, whose flows are all QUIC, between the two ends of `run`.
/// With `sync`, waits there once the connections are set up (or failed), so that another
/// runner's flows start at the same instant.
pub(crate) fn run_quic_bulk(spec: &BulkSpec, run: &RunContext<'_>, sync: Option<&Barrier>) -> Result<BulkResult, WorkloadError> {
    let plan = spec.plan();
    let rt = multi_thread_runtime();
    let connected = match &rt {
        Ok(rt) => rt.block_on(connect(spec, run, &plan)),
        Err(e) => Err(WorkloadError::Setup(e.to_string())),
    };
    if let Some(b) = sync {
        b.wait();
    }
    let (rt, (server, conns)) = (rt?, connected?);
    let (epoch, stop, hook) = (run.epoch, run.stop, run.hook);

    let start = Instant::now();
    hook.open(start);
    if let Amount::Seconds(s) = spec.amount {
        hook.close(start + Duration::from_secs_f64(s));
    }
    let start_us = start.duration_since(epoch).as_micros() as u64;
    let last_start = plan.iter().map(|f| f.start_s).fold(0.0, f64::max);
    let hard_end = match spec.amount {
        Amount::Seconds(s) => start + Duration::from_secs_f64(s) + Duration::from_secs(2),
        Amount::Bytes(_) => start + Duration::from_secs_f64(spec.timeout_s + last_start),
    };
    let counters: Arc<Vec<AtomicU64>> = Arc::new(plan.iter().map(|_| AtomicU64::new(0)).collect());
    let outcomes: Arc<Vec<Mutex<Received>>> =
        Arc::new(plan.iter().map(|_| Mutex::new(Received { error: Some("its stream never arrived".into()), ..Default::default() })).collect());
    let send_errors: Arc<Vec<Mutex<Option<String>>>> = Arc::new(plan.iter().map(|_| Mutex::new(None)).collect());
    let active = Arc::new(AtomicUsize::new(plan.len() * 2));
    // The tasks see the stop flag through their own copy, set from this thread.
    let stopping = Arc::new(AtomicBool::new(false));

    for conn in &conns {
        for &id in &conn.flows {
            let flow = &plan[id as usize];
            let flow_start = start + Duration::from_secs_f64(flow.start_s);
            let deadline = match spec.amount {
                Amount::Seconds(s) => start + Duration::from_secs_f64(s),
                Amount::Bytes(_) => flow_start + Duration::from_secs_f64(spec.timeout_s),
            };
            let (sender, active, stopping, errors) = (conn.sender.clone(), active.clone(), stopping.clone(), send_errors.clone());
            let amount = spec.amount;
            rt.spawn(async move {
                tokio::time::sleep_until(flow_start.into()).await;
                if let Err(e) = send_flow(&sender, id, amount, deadline, &stopping, None).await {
                    *lock(&errors[id as usize]) = Some(e);
                }
                active.fetch_sub(1, Ordering::SeqCst);
            });
        }
        let receiver = conn.receiver.clone();
        let (counters, outcomes, active, stopping) = (counters.clone(), outcomes.clone(), active.clone(), stopping.clone());
        let n = conn.flows.len();
        let amount = spec.amount;
        let clock = EndClock::shared(start, start);
        let windows: Vec<FlowWindow> = plan
            .iter()
            .map(|f| {
                let deadline = match amount {
                    Amount::Seconds(s) => start + Duration::from_secs_f64(s),
                    Amount::Bytes(_) => start + Duration::from_secs_f64(f.start_s + spec.timeout_s),
                };
                FlowWindow::new(&clock, amount, f.start_s, spec.timeout_s, deadline)
            })
            .collect();
        rt.spawn(async move {
            for _ in 0..n {
                let Ok(mut stream) = receiver.accept_uni().await else { break };
                let mut id = [0u8; 4];
                if stream.read_exact(&mut id).await.is_err() {
                    continue;
                }
                let id = u32::from_be_bytes(id) as usize;
                let Some(window) = windows.get(id).cloned() else { continue };
                let (counters, outcomes, active, stopping) = (counters.clone(), outcomes.clone(), active.clone(), stopping.clone());
                tokio::spawn(async move {
                    let got = receive_flow(&mut stream, window, &counters[id], &stopping, None).await;
                    *lock(&outcomes[id]) = got;
                    active.fetch_sub(1, Ordering::SeqCst);
                });
            }
        });
    }

    // Sample on this thread until every flow is done (or the run overran: then the
    // connections are closed under the tasks).
    let interval = Duration::from_micros(spec.sample_interval_us.max(1000));
    let mut last: Vec<(Instant, u64)> = conns.iter().map(|_| (start, 0)).collect();
    let mut next = start;
    while active.load(Ordering::SeqCst) > 0 && Instant::now() < hard_end {
        if stop.load(Ordering::Relaxed) {
            stopping.store(true, Ordering::Relaxed);
        }
        let t_us = micros_since(epoch);
        hook.extend(Instant::now());
        for (i, _) in plan.iter().enumerate() {
            run.series.received(i as u32, &GoodputPoint { t_us, bytes: counters[i].load(Ordering::Relaxed) });
        }
        for (conn, last) in conns.iter().zip(last.iter_mut()) {
            let s = sample(conn, t_us, last);
            run.series.quic_sample(SocketId::Flow(conn.flows[0]), &s);
        }
        next += interval;
        let now = Instant::now();
        if next > now {
            std::thread::sleep(next - now);
        } else {
            next = now;
        }
    }
    stopping.store(true, Ordering::Relaxed);
    let interrupted = stop.load(Ordering::SeqCst);
    let elapsed_s = match spec.amount {
        Amount::Seconds(s) => s.min(start.elapsed().as_secs_f64()),
        Amount::Bytes(_) => start.elapsed().as_secs_f64(),
    };
    if let Amount::Bytes(_) = spec.amount {
        hook.close(start + Duration::from_secs_f64(elapsed_s));
    }
    let finals: Vec<QuicSample> = conns.iter().zip(last.iter_mut()).map(|(conn, last)| sample(conn, micros_since(epoch), last)).collect();
    for conn in &conns {
        conn.sender.close(VarInt::from_u32(0), b"done");
    }
    drop(server);
    rt.shutdown_timeout(Duration::from_millis(500));

    let metas: Vec<ConnMeta> = conns
        .iter()
        .zip(finals)
        .map(|(c, f)| ConnMeta {
            flows: c.flows.clone(),
            client_port: c.client_port,
            read_back: c.read_back.clone(),
            final_quic: Some(f),
            bbr_events: events_of(c, epoch),
        })
        .collect();
    let received: Vec<Received> = outcomes.iter().map(|o| lock(o).clone()).collect();
    let send_errors: Vec<Option<String>> = send_errors.iter().map(|e| lock(e).clone()).collect();
    let results = assemble_flows(spec, &plan, &metas, &received, &send_errors, elapsed_s, interrupted);
    Ok(BulkResult { start_us, elapsed_s, goodput_bps: aggregate_goodput(&results, spec.amount, elapsed_s), interrupted, flows: results })
}

/// What a result says of one connection: its flows, the client's port, both ends' algorithms,
/// the sender's last sample and BBR state changes.
pub(super) struct ConnMeta {
    pub(super) flows: Vec<u32>,
    pub(super) client_port: u16,
    pub(super) read_back: ReadBack,
    pub(super) final_quic: Option<QuicSample>,
    pub(super) bbr_events: Vec<BbrEvent>,
}

/// Every flow's result from what arrived (`received`, by flow id), what failed to send, and
/// its connection's facts.
pub(super) fn assemble_flows(
    spec: &BulkSpec,
    plan: &[MixFlow],
    conns: &[ConnMeta],
    received: &[Received],
    send_errors: &[Option<String>],
    elapsed_s: f64,
    interrupted: bool,
) -> Vec<FlowResult> {
    let mut results = Vec::new();
    for (id, flow) in plan.iter().enumerate() {
        let Some(conn) = conns.iter().find(|c| c.flows.contains(&(id as u32))) else { continue };
        let got = received.get(id).cloned().unwrap_or_default();
        let active_s = (elapsed_s - flow.start_s).max(1e-9);
        let goodput_bps = match (spec.amount, got.completion_s) {
            (Amount::Bytes(_), Some(t)) if t > 0.0 => got.bytes as f64 * 8.0 / t,
            _ => got.bytes as f64 * 8.0 / active_s,
        };
        let completed = match spec.amount {
            Amount::Bytes(n) => got.bytes >= n,
            Amount::Seconds(_) => !interrupted && got.error.is_none(),
        };
        let first = conn.flows[0] == id as u32;
        results.push(FlowResult {
            id: id as u32,
            sender: spec.direction.sender(),
            sending: SenderRecord {
                cc_requested: flow.cc.to_string(),
                cc_read_back: conn.read_back.sender.clone(),
                transport: Transport::Quic,
                cc_receiver: Some(conn.read_back.receiver.clone()),
                warning: conn.read_back.mismatch(),
                final_tcp_info: None,
                final_quic: if first { conn.final_quic.clone() } else { None },
                bbr_events: if first { conn.bbr_events.clone() } else { Vec::new() },
            },
            start_s: flow.start_s,
            client_port: conn.client_port,
            bytes_received: got.bytes,
            goodput_bps,
            completed,
            completion_time_s: got.completion_s,
            error: send_errors.get(id).cloned().flatten().or(got.error),
        });
    }
    results
}

/// The flows of each connection: one connection for all flows of a plain run (N streams), one
/// per flow of a mix.
pub(super) fn groups(spec: &BulkSpec, plan: &[MixFlow]) -> Vec<Vec<u32>> {
    if spec.mix.is_empty() {
        vec![(0..plan.len() as u32).collect()]
    } else {
        (0..plan.len() as u32).map(|i| vec![i]).collect()
    }
}

/// The connections of the plan: one for all flows of a plain run (N streams), one per flow of a
/// mix. Each is set up, and both ends' controllers read back, before any data flows.
async fn connect(spec: &BulkSpec, run: &RunContext<'_>, plan: &[MixFlow]) -> Result<(Endpoint, Vec<Conn>), WorkloadError> {
    let groups = groups(spec, plan);
    let tls = Tls::new()?;
    let server_sa = SocketAddrV4::new(run.server_addr, spec.port);
    let server = server_endpoint(run, &tls, server_sa)?;
    let sender_side = spec.direction.sender();
    let mut conns = Vec::new();
    for (index, flows) in groups.into_iter().enumerate() {
        let algorithm = quic_algorithm(&plan[flows[0] as usize].cc)?;
        let receiver_alg = spec.quic_receiver_cc.clone().unwrap_or_else(|| algorithm.clone());
        // A mix's flows each have a connection of their own, so its first flow's port is its.
        let client_port = plan[flows[0] as usize].client_port;
        let p = connect_pair(run, &server, &tls, server_sa, sender_side, &algorithm, &receiver_alg, index as u64, client_port).await?;
        conns.push(Conn {
            flows,
            sender: p.sender,
            receiver: p.receiver,
            probe: p.probe,
            bbr: p.bbr,
            client_port: p.client_port,
            read_back: p.read_back,
            _client: p.client_endpoint,
        });
    }
    Ok((server, conns))
}

/// One sample of a connection's sender.
fn sample(conn: &Conn, t_us: u64, last: &mut (Instant, u64)) -> QuicSample {
    pair::sample(&conn.sender, &conn.probe, conn.bbr.as_ref(), t_us, last)
}

/// The sending controller's BBR state changes, µs after `epoch`.
fn events_of(conn: &Conn, epoch: Instant) -> Vec<BbrEvent> {
    pair::bbr_events(conn.bbr.as_ref(), epoch)
}

/// How much one stream write hands noq. The writes share one refcounted buffer, which noq's
/// send buffer keeps as it is (`write(&[u8])` copies every byte into it first), and are large
/// so that a write's own cost — a lock, a wake-up, a timer — is paid rarely at gigabits
/// (issue 17 §2).
const QUIC_WRITE: usize = 256 * 1024;

/// Sends flow `id` on a stream of its own; with `budget`, each chunk is taken from it first
/// (`ccbench serve --max-bytes`), and the flow stops with its reason when it is spent.
pub(super) async fn send_flow(
    conn: &Connection,
    id: u32,
    amount: Amount,
    deadline: Instant,
    stopping: &AtomicBool,
    budget: Option<&ByteBudget>,
) -> Result<(), String> {
    let mut stream = conn.open_uni().await.map_err(|e| format!("open stream: {e}"))?;
    stream.write_all(&id.to_be_bytes()).await.map_err(|e| format!("send: {}", with_cause(&e)))?;
    let payload = bytes::Bytes::from(vec![0x5au8; QUIC_WRITE]);
    let mut remaining = match amount {
        Amount::Bytes(n) => n,
        Amount::Seconds(_) => u64::MAX,
    };
    while remaining > 0 && Instant::now() < deadline && !stopping.load(Ordering::Relaxed) {
        // A budget's last write is what is left of it, so the flow stops at the budget, not
        // a write's length short of it.
        let len = remaining.min(QUIC_WRITE as u64).min(budget.map_or(u64::MAX, |b| b.remaining().max(1))) as usize;
        if let Some(b) = budget {
            if !b.take(len as u64) {
                let _ = stream.finish();
                return Err(b.reason.clone());
            }
        }
        let mut chunk = [payload.slice(..len)];
        match tokio::time::timeout(IO_TICK, stream.write_many_chunks(&mut &mut chunk[..])).await {
            Ok(Ok(n)) => {
                remaining -= n as u64;
                if let Some(b) = budget {
                    // What the write did not take goes back.
                    b.give_back((len - n) as u64);
                }
            }
            Ok(Err(_)) if Instant::now() >= deadline => break,
            Ok(Err(e)) => return Err(format!("send: {}", with_cause(&e))),
            Err(_) => {
                if let Some(b) = budget {
                    b.give_back(len as u64);
                }
            }
        }
    }
    if let Amount::Bytes(_) = amount {
        let _ = stream.finish();
        // Keep the stream until the receiver has it all (or the run ends).
        let _ = stream.stopped().await;
    }
    Ok(())
}

/// Receives one flow's stream; with `budget`, each chunk is taken from it, and the flow stops
/// with its reason when it is spent.
pub(super) async fn receive_flow(
    stream: &mut noq::RecvStream,
    mut window: FlowWindow,
    counter: &AtomicU64,
    stopping: &AtomicBool,
    budget: Option<&ByteBudget>,
) -> Received {
    let mut got = Received::default();
    let target = match window.amount() {
        Amount::Bytes(n) => n,
        Amount::Seconds(_) => u64::MAX,
    };
    let mut last_byte = None;
    while Instant::now() < window.until() && !stopping.load(Ordering::Relaxed) && got.bytes < target {
        match tokio::time::timeout(IO_TICK, stream.read_chunk(usize::MAX)).await {
            Ok(Ok(Some(chunk))) => {
                if let Some(b) = budget {
                    if !b.take(chunk.len() as u64) {
                        got.error = Some(b.reason.clone());
                        break;
                    }
                }
                let now = Instant::now();
                if window.counts(now) {
                    got.bytes += chunk.len() as u64;
                    counter.store(got.bytes, Ordering::Relaxed);
                    last_byte = Some(now);
                }
            }
            Ok(Ok(None)) => break,
            Ok(Err(e)) => {
                got.error = Some(format!("receive: {}", with_cause(&e)));
                break;
            }
            Err(_) => {}
        }
    }
    got.completion_s = window.completion_s(got.bytes, last_byte);
    got
}

/// An error with its causes (`connection lost: timed out`): noq's stream errors say only
/// "connection lost" and keep why (the peer's close, a timeout, a transport error) as source.
pub(super) fn with_cause(e: &dyn std::error::Error) -> String {
    let mut out = e.to_string();
    let mut cause = e.source();
    while let Some(c) = cause {
        out.push_str(": ");
        out.push_str(&c.to_string());
        cause = c.source();
    }
    out
}
