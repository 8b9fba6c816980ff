//! Bulk and file transfers over QUIC: `--flows N` is N streams on one connection (what a QUIC
//! application does), a mix (`--flows quic:bbr3:1,quic:cubic:1`) is one connection per flow,
//! each with its own algorithm, sharing the bottleneck. Each stream starts with its flow id
//! (4 bytes), then data; goodput is counted where it arrives, as for TCP.
//!
//! The ends are bulk's own (`bulk::ends`: one send loop, one receive loop, one end and one
//! assembly for TCP and QUIC alike); what is QUIC's is here: the connections and their
//! controllers ([`connect`], and `remote` over `--remote`), a flow's byte stream on a
//! connection ([`QuicSend`], [`QuicReceive`], streams routed to flows by their id as they
//! arrive), and the sampling of each sending connection's controller observer.

use std::net::SocketAddrV4;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use bytes::Bytes;
use noq::{Connection, Endpoint, VarInt};
use serde::{Deserialize, Serialize};
use tokio::runtime::{Handle, Runtime};
use tokio::sync::oneshot;

use crate::bulk::{
    assemble_with, run_halves, BulkResult, BulkSpec, EndClock, FlowEnd, FlowMeta, Half, Io, MixFlow, Moved, Pending, ReceiveHalf, SendHalf, Tasks, IO_TICK,
};
use crate::common::{micros_since, multi_thread_runtime};
use crate::quic::limits::QuicAccount;
use crate::quic::observe::Probe;
use crate::quic::pair::{self, connect_pair, quic_algorithm, server_endpoint};
use crate::quic::{BbrView, ReadBack, Tls, Windows};
use crate::sampler::Sampler;
use crate::BbrEvent;
use crate::{ByteBudget, MeasureHook, RunContext, SenderRecord, SeriesSink, SocketId, Transport, WorkloadError};

/// What one end saw of a QUIC transfer: the flows it sent or received, and the last sample and
/// BBR state changes of each connection it sent on.
#[derive(Clone, Debug, Default, Serialize, Deserialize, schemars::JsonSchema)]
pub struct QuicEnd {
    pub flows: Vec<FlowEnd>,
    pub connections: Vec<QuicConnEnd>,
}

/// A sending connection's end, named by its first flow (as its samples are).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct QuicConnEnd {
    pub flow: u32,
    pub final_quic: Option<crate::QuicSample>,
    pub bbr_events: Vec<BbrEvent>,
}

/// Feeds `conn`'s account with sample `s` and the stack's send states, read now; the states
/// go into the sample too (the series' strip over time).
fn account(conn: &EndConn, s: &mut crate::QuicSample) {
    if let Some(stats) = conn.conn.path_stats(noq::PathId::ZERO) {
        let now = Instant::now();
        s.send_states_us = Some(crate::quic::limits::send_states(&stats.send_limits, now));
        let mut a = conn.account.lock().unwrap_or_else(|e| e.into_inner());
        a.add(&stats.send_limits, stats.probe_timeouts, now, s);
    }
}

/// One QUIC connection of one end, and the flows (streams) it carries.
pub(super) struct EndConn {
    /// The flows on it, by id; the first names its samples (`flow-N`).
    pub(super) flows: Vec<u32>,
    pub(super) conn: Connection,
    pub(super) sends: bool,
    /// What this end's controller saw (sampled where this end sends).
    pub(super) probe: Arc<Probe>,
    /// The sending controller's BBR view, when it has one.
    pub(super) bbr: Option<Arc<dyn BbrView>>,
    /// This end's controller, read back.
    pub(super) read_back: String,
    /// The client's UDP port (0 on a remote server's end).
    pub(super) port: u16,
    /// A client's endpoint lives as long as its connection.
    pub(super) _endpoint: Option<Endpoint>,
    /// Where this end sends: what held it back, fed by the sampling rounds.
    pub(super) account: Mutex<QuicAccount>,
}

/// The QUIC flows of a local run: their connections, both ends of each, and the runtime that
/// drives them. Their halves run in bulk's one end, beside any kernel TCP flows of a mix.
pub(crate) struct LocalQuic {
    rt: Runtime,
    /// Each connection's sending end, then its receiving end.
    conns: Vec<EndConn>,
    /// Both ends' controllers of each connection, in order.
    read_backs: Vec<ReadBack>,
    _server: Endpoint,
}

impl LocalQuic {
    /// Sets up the connections of the QUIC flows `ids` of `plan` (one for all flows of a plain
    /// run, one per flow of a mix), both ends' controllers read back before any data flows.
    /// `None` when no flow is QUIC.
    pub(crate) fn connect(spec: &BulkSpec, run: &RunContext<'_>, plan: &[MixFlow], ids: &[u32]) -> Result<Option<Self>, WorkloadError> {
        if ids.is_empty() {
            return Ok(None);
        }
        let rt = multi_thread_runtime()?;
        let (server, pairs) = rt.block_on(connect(spec, run, plan, ids))?;
        let mut conns = Vec::new();
        let mut read_backs = Vec::new();
        for Connected { flows, pair: p } in pairs {
            conns.push(EndConn {
                flows: flows.clone(),
                conn: p.sender,
                sends: true,
                probe: p.probe,
                bbr: p.bbr,
                read_back: p.read_back.sender.clone(),
                port: p.client_port,
                _endpoint: Some(p.client_endpoint),
                account: Mutex::default(),
            });
            conns.push(EndConn {
                flows,
                conn: p.receiver,
                sends: false,
                probe: Arc::default(),
                bbr: None,
                read_back: p.read_back.receiver.clone(),
                port: p.client_port,
                _endpoint: None,
                account: Mutex::default(),
            });
            read_backs.push(p.read_back);
        }
        Ok(Some(LocalQuic { rt, conns, read_backs, _server: server }))
    }

    /// Both ends' halves of every QUIC flow, as tasks on the connections' runtime.
    pub(crate) fn tasks(&self, plan: &[MixFlow]) -> Tasks {
        Tasks { rt: self.rt.handle().clone(), halves: quic_halves(self.rt.handle(), plan, &self.conns), budget: None }
    }

    /// The sampling of the sending connections, from `start`.
    pub(crate) fn rounds(&self, start: Instant) -> Rounds<'_> {
        Rounds::new(&self.conns, start)
    }

    /// What is known of each QUIC flow before data moves.
    pub(crate) fn meta(&self, plan: &[MixFlow]) -> Vec<FlowMeta> {
        flow_meta(plan, &self.senders(), &self.read_backs)
    }

    /// A QUIC flow's sender record, with `ends` the sending connections' last samples.
    pub(crate) fn record(&self, flow: &FlowMeta, ends: &[QuicConnEnd]) -> SenderRecord<String> {
        sender_record(&self.senders(), &self.read_backs, ends, flow)
    }

    fn senders(&self) -> Vec<&EndConn> {
        self.conns.iter().filter(|c| c.sends).collect()
    }

    /// Closes the connections, once both ends are done.
    pub(crate) fn close(self) {
        for c in self.conns.iter().filter(|c| c.sends) {
            c.conn.close(VarInt::from_u32(0), b"done");
        }
        let LocalQuic { rt, conns, _server, .. } = self;
        drop((conns, _server));
        rt.shutdown_timeout(Duration::from_millis(500));
    }
}

/// The halves of the flows of `conns` at this end: a stream of its own for each flow a
/// connection sends, and for each it receives, the stream routed to it once it arrives.
fn quic_halves(rt: &Handle, plan: &[MixFlow], conns: &[EndConn]) -> Vec<Half<'static>> {
    let start_of = |id: u32| plan.get(id as usize).map_or(Duration::ZERO, MixFlow::start);
    let mut halves = Vec::new();
    for conn in conns {
        if conn.sends {
            for &id in &conn.flows {
                let io = QuicSend::new(&conn.conn, id);
                halves.push(Half { id, start: start_of(id), io: Io::Sends(Box::new(io)) });
            }
        } else {
            for (id, io) in route_streams(rt, &conn.conn, &conn.flows) {
                halves.push(Half { id, start: start_of(id), io: Io::Receives(Box::new(io)) });
            }
        }
    }
    halves
}

/// The sampling of an end's sending QUIC connections, one round at a time: each connection's
/// controller observer, its samples named by the connection's first flow.
pub(crate) struct Rounds<'c> {
    senders: Vec<(&'c EndConn, (Instant, u64))>,
}

impl<'c> Rounds<'c> {
    fn new(conns: &'c [EndConn], start: Instant) -> Self {
        Rounds { senders: conns.iter().filter(|c| c.sends).map(|c| (c, (start, 0))).collect() }
    }

    pub(crate) fn round(&mut self, series: &dyn SeriesSink, t_us: u64) {
        for (conn, last) in &mut self.senders {
            let mut s = sample(conn, t_us, last);
            account(conn, &mut s);
            series.quic_sample(SocketId::Flow(conn.flows[0]), &s);
        }
    }

    /// Each sending connection's last sample and BBR state changes.
    pub(crate) fn finish(mut self, epoch: Instant) -> Vec<QuicConnEnd> {
        let t_us = micros_since(epoch);
        self.senders
            .iter_mut()
            .map(|(conn, last)| {
                let mut s = sample(conn, t_us, last);
                account(conn, &mut s);
                QuicConnEnd { flow: conn.flows[0], final_quic: Some(s), bbr_events: pair::bbr_events(conn.bbr.as_ref(), epoch) }
            })
            .collect()
    }
}

/// One end of a QUIC transfer on its connections (the far end of `--remote`, or its near
/// end): the flows it sends on a stream each, the flows it receives as their streams arrive,
/// each sending connection sampled into `series`. Returns when this end is done (its duration,
/// its bytes, the timeout or `stop`), with each sending connection's last sample and BBR state
/// changes; the connections stay open for the caller to close once the other end is done too.
#[allow(clippy::too_many_arguments)]
pub(super) fn run_quic_end(
    rt: &Handle,
    spec: &BulkSpec,
    plan: &[MixFlow],
    conns: &[EndConn],
    clock: &EndClock,
    stop: &AtomicBool,
    series: &dyn SeriesSink,
    hook: &dyn MeasureHook,
    budget: Option<Arc<ByteBudget>>,
) -> QuicEnd {
    // No sockets to register: QUIC's samples come from each sending connection's observer.
    let sampler = Sampler::new(series);
    let mut rounds = Rounds::new(conns, clock.start);
    let tasks = Tasks { rt: rt.clone(), halves: quic_halves(rt, plan, conns), budget };
    let flows = run_halves(spec, Vec::new(), Some(tasks), clock, stop, series, hook, None, &sampler, |t_us| rounds.round(series, t_us));
    QuicEnd { flows, connections: rounds.finish(clock.epoch) }
}

/// The transfer's result from the test's connections as one end holds them (`conns`), both
/// ends' controllers of each (`read_backs`, in their order), and what the sending and the
/// receiving end saw.
#[allow(clippy::too_many_arguments)]
pub(super) fn quic_result(
    spec: &BulkSpec,
    plan: &[MixFlow],
    conns: &[&EndConn],
    read_backs: &[ReadBack],
    sender_end: &QuicEnd,
    receiver_end: &QuicEnd,
    start_us: u64,
    elapsed_s: f64,
    interrupted: bool,
) -> BulkResult {
    let meta = flow_meta(plan, conns, read_backs);
    let sent: Vec<FlowEnd> = sender_end.flows.iter().filter(|f| f.sent).cloned().collect();
    let received: Vec<FlowEnd> = receiver_end.flows.iter().filter(|f| !f.sent).cloned().collect();
    assemble_with(spec, &meta, &sent, &received, start_us, elapsed_s, interrupted, |flow, _| sender_record(conns, read_backs, &sender_end.connections, flow))
}

/// What is known of each flow of `conns` before data moves: its plan, its client port and the
/// sender's controller.
fn flow_meta(plan: &[MixFlow], conns: &[&EndConn], read_backs: &[ReadBack]) -> Vec<FlowMeta> {
    let mut meta: Vec<FlowMeta> = conns
        .iter()
        .zip(read_backs)
        .flat_map(|(c, rb)| {
            c.flows.iter().filter_map(|&id| {
                Some(FlowMeta { id, plan: plan.get(id as usize)?.clone(), client_port: c.port, cc_read_back: rb.sender.clone(), buffers: None })
            })
        })
        .collect();
    meta.sort_by_key(|m| m.id);
    meta
}

/// A QUIC flow's sender record: both ends' controllers, and, for a connection's first flow,
/// the connection's last sample, BBR state changes (`ends`, the sending end's) and what held
/// the connection back (its limited-by accounting: the connection's, as its last sample is).
fn sender_record(conns: &[&EndConn], read_backs: &[ReadBack], ends: &[QuicConnEnd], flow: &FlowMeta) -> SenderRecord<String> {
    let conn = conns.iter().zip(read_backs).find(|(c, _)| c.flows.contains(&flow.id));
    let is_first = conn.is_some_and(|(c, _)| c.flows[0] == flow.id);
    let first = conn.filter(|_| is_first).and_then(|_| ends.iter().find(|e| e.flow == flow.id));
    let limits = conn.filter(|_| is_first).and_then(|(c, _)| c.account.lock().unwrap_or_else(|e| e.into_inner()).finish());
    let rb = conn.map(|(_, rb)| rb);
    SenderRecord {
        cc_requested: (&flow.plan.cc).into(),
        cc_read_back: flow.cc_read_back.clone(),
        transport: Transport::Quic,
        cc_receiver: rb.map(|rb| rb.receiver.clone()),
        warning: rb.and_then(ReadBack::mismatch),
        final_tcp_info: None,
        final_quic: first.and_then(|e| e.final_quic.clone()),
        bbr_events: first.map(|e| e.bbr_events.clone()).unwrap_or_default(),
        limited_by: None,
        mechanism: None,
        buffers: None,
    }
    .with_limits(limits)
}

/// The flows of each connection: one connection for all flows of a plain run (N streams), one
/// per flow of a mix.
pub(super) fn groups(spec: &BulkSpec, ids: &[u32]) -> Vec<Vec<u32>> {
    if spec.mix.is_empty() {
        vec![ids.to_vec()]
    } else {
        ids.iter().map(|&i| vec![i]).collect()
    }
}

/// The connections of the plan: one for all flows of a plain run (N streams), one per flow of a
/// mix. Each is set up, and both ends' controllers read back, before any data flows.
async fn connect(spec: &BulkSpec, run: &RunContext<'_>, plan: &[MixFlow], ids: &[u32]) -> Result<(Endpoint, Vec<Connected>), WorkloadError> {
    let groups = groups(spec, ids);
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
        // `--rcvbuf` and `--sndbuf` as QUIC's windows: the receiver's credit, the sender's
        // buffer of unacknowledged data.
        let windows = Windows { receive: spec.knobs.rcvbuf, send: spec.knobs.sndbuf };
        let pair = connect_pair(run, &server, &tls, server_sa, sender_side, &algorithm, &receiver_alg, index as u64, client_port, windows).await?;
        conns.push(Connected { flows, pair });
    }
    Ok((server, conns))
}

/// One connection of a local run and the flows it carries.
struct Connected {
    flows: Vec<u32>,
    pair: pair::Pair,
}

/// How much one stream write hands noq. The writes share one refcounted buffer, which noq's
/// send buffer keeps as it is (`write(&[u8])` copies every byte into it first), and are large
/// so that a write's own cost — a lock, a wake-up, a timer — is paid rarely at gigabits
/// (issue 17 §2).
const QUIC_WRITE: usize = 256 * 1024;

/// A flow's stream on a sending connection: opened at its first write, its flow id first.
/// Every step is bounded by [`IO_TICK`]: a peer that grants no stream or no stream credit
/// holds the flow only until its deadline.
struct QuicSend {
    conn: Connection,
    stream: Option<noq::SendStream>,
    /// What is left to write of the flow id.
    head: Bytes,
    payload: Bytes,
}

impl QuicSend {
    fn new(conn: &Connection, id: u32) -> Self {
        let head = Bytes::copy_from_slice(&id.to_be_bytes());
        QuicSend { conn: conn.clone(), stream: None, head, payload: Bytes::from(vec![0x5au8; QUIC_WRITE]) }
    }
}

impl SendHalf for QuicSend {
    fn max_write(&self) -> usize {
        QUIC_WRITE
    }
    fn wire_bytes(&self) -> Option<u64> {
        Some(self.conn.stats().udp_tx.bytes)
    }
    fn unsent_bytes(&self) -> Option<u64> {
        // Before the stream opens nothing is written; a closed stream holds nothing to send.
        Some(self.stream.as_ref().map_or(0, |s| s.unsent().unwrap_or(0)))
    }
    fn write(&mut self, len: usize) -> Pending<'_, Moved> {
        Box::pin(async move {
            let QuicSend { conn, stream, head, payload } = self;
            if stream.is_none() {
                match tokio::time::timeout(IO_TICK, conn.open_uni()).await {
                    Ok(Ok(s)) => *stream = Some(s),
                    Ok(Err(e)) => return Moved::Failed(format!("open stream: {e}")),
                    Err(_) => return Moved::Idle,
                }
            }
            let Some(stream) = stream.as_mut() else { return Moved::Idle };
            if !head.is_empty() {
                return match tokio::time::timeout(IO_TICK, stream.write(head)).await {
                    Ok(Ok(n)) => {
                        *head = head.slice(n..);
                        Moved::Idle
                    }
                    Ok(Err(e)) => Moved::Failed(format!("send: {}", with_cause(&e))),
                    Err(_) => Moved::Idle,
                };
            }
            let mut chunk = [payload.slice(..len)];
            match tokio::time::timeout(IO_TICK, stream.write_many_chunks(&mut &mut chunk[..])).await {
                Ok(Ok(n)) => Moved::Bytes(n),
                Ok(Err(e)) => Moved::Failed(format!("send: {}", with_cause(&e))),
                Err(_) => Moved::Idle,
            }
        })
    }
    fn finish<'a>(&'a mut self, until: Instant, stop: &'a AtomicBool) -> Pending<'a, ()> {
        Box::pin(async move {
            let Some(s) = self.stream.as_mut() else { return };
            let _ = s.finish();
            // Keep the stream until the receiver has it all (or the run ends).
            let stopped = s.stopped();
            tokio::pin!(stopped);
            while Instant::now() < until && !stop.load(Ordering::Relaxed) {
                if tokio::time::timeout(IO_TICK, &mut stopped).await.is_ok() {
                    break;
                }
            }
        })
    }
    fn abort(&mut self) {
        if let Some(s) = self.stream.as_mut() {
            let _ = s.finish();
        }
    }
}

/// A flow's stream on a receiving connection, handed over by [`route_streams`] once it
/// arrives.
struct QuicReceive {
    arrival: oneshot::Receiver<noq::RecvStream>,
    stream: Option<noq::RecvStream>,
}

impl ReceiveHalf for QuicReceive {
    fn read(&mut self) -> Pending<'_, Moved> {
        Box::pin(async move {
            if self.stream.is_none() {
                match tokio::time::timeout(IO_TICK, &mut self.arrival).await {
                    Ok(Ok(s)) => self.stream = Some(s),
                    // The connection's streams are all in, and this flow's was not among them.
                    Ok(Err(_)) => return Moved::Failed(NEVER_ARRIVED.into()),
                    Err(_) => return Moved::Idle,
                }
            }
            let Some(stream) = self.stream.as_mut() else { return Moved::Idle };
            match tokio::time::timeout(IO_TICK, stream.read_chunk(usize::MAX)).await {
                Ok(Ok(Some(chunk))) => Moved::Bytes(chunk.len()),
                Ok(Ok(None)) => Moved::End,
                Ok(Err(e)) => Moved::Failed(format!("receive: {}", with_cause(&e))),
                Err(_) => Moved::Idle,
            }
        })
    }
    fn abort(&mut self) {}
    fn missing(&self) -> Option<String> {
        self.stream.is_none().then(|| NEVER_ARRIVED.into())
    }
}

const NEVER_ARRIVED: &str = "its stream never arrived";

/// The receiving halves of `flows` on `conn`: a task takes the connection's streams as the
/// sender opens them and hands each to its flow by the id it starts with. A stream naming no
/// flow of this connection, or one already in, is dropped: the peer may be hostile.
fn route_streams(rt: &Handle, conn: &Connection, flows: &[u32]) -> Vec<(u32, QuicReceive)> {
    let mut waiting = Vec::new();
    let mut halves = Vec::new();
    for &id in flows {
        let (tx, rx) = oneshot::channel();
        waiting.push((id, tx));
        halves.push((id, QuicReceive { arrival: rx, stream: None }));
    }
    let (conn, n) = (conn.clone(), flows.len());
    rt.spawn(async move {
        for _ in 0..n {
            let Ok(mut stream) = conn.accept_uni().await else { break };
            let mut id = [0u8; 4];
            if stream.read_exact(&mut id).await.is_err() {
                continue;
            }
            let id = u32::from_be_bytes(id);
            if let Some(i) = waiting.iter().position(|(w, _)| *w == id) {
                let _ = waiting.swap_remove(i).1.send(stream);
            }
        }
    });
    halves
}

/// One sample of a sending connection.
fn sample(conn: &EndConn, t_us: u64, last: &mut (Instant, u64)) -> crate::QuicSample {
    pair::sample(&conn.conn, &conn.probe, conn.bbr.as_ref(), t_us, last)
}

/// An error with its causes (`connection lost: timed out`): noq's stream errors say only
/// "connection lost" and keep why (the peer's close, a timeout, a transport error) as source.
pub(crate) fn with_cause(e: &dyn std::error::Error) -> String {
    let mut out = e.to_string();
    let mut cause = e.source();
    while let Some(c) = cause {
        out.push_str(": ");
        out.push_str(&c.to_string());
        cause = c.source();
    }
    out
}
