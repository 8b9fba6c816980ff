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
use std::sync::{Arc, Barrier};
use std::time::{Duration, Instant};

use bytes::Bytes;
use noq::{Connection, Endpoint, VarInt};
use tokio::runtime::Handle;
use tokio::sync::oneshot;

use super::observe::Probe;
use super::pair::{self, connect_pair, quic_algorithm, server_endpoint};
use super::{BbrView, ReadBack, Tls};
use super::{QuicConnEnd, QuicEnd};
use crate::bulk::{
    assemble_with, run_halves, Amount, BulkResult, BulkSpec, EndClock, FlowEnd, FlowMeta, Half, Io, MixFlow, Moved, ReceiveHalf, SendHalf, IO_TICK,
};
use crate::common::{micros_since, multi_thread_runtime};
use crate::sampler::Sampler;
use crate::{ByteBudget, MeasureHook, RunContext, SenderRecord, SeriesSink, SocketId, Transport, WorkloadError};

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
    let (rt, (server, pairs)) = (rt?, connected?);
    let (epoch, stop, hook) = (run.epoch, run.stop, run.hook);

    let start = Instant::now();
    hook.open(start);
    if let Amount::Seconds(s) = spec.amount {
        hook.close(start + Duration::from_secs_f64(s));
    }
    // Both ends' halves in one end, so the senders' samples and the receivers' goodput points
    // are taken in the same rounds, at the same instants.
    let mut conns = Vec::new();
    let mut read_backs = Vec::new();
    for p in pairs {
        let flows = p.flows;
        let p = p.pair;
        conns.push(EndConn {
            flows: flows.clone(),
            conn: p.sender,
            sends: true,
            probe: p.probe,
            bbr: p.bbr,
            read_back: p.read_back.sender.clone(),
            port: p.client_port,
            _endpoint: Some(p.client_endpoint),
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
        });
        read_backs.push(p.read_back);
    }
    let end = run_quic_end(rt.handle(), spec, &plan, &conns, &EndClock::shared(epoch, start), stop, run.series, hook, None);
    let elapsed_s = crate::bulk::elapsed_since(spec.amount, start);
    if let Amount::Bytes(_) = spec.amount {
        hook.close(start + Duration::from_secs_f64(elapsed_s));
    }
    for c in conns.iter().filter(|c| c.sends) {
        c.conn.close(VarInt::from_u32(0), b"done");
    }
    drop(server);
    let senders: Vec<&EndConn> = conns.iter().filter(|c| c.sends).collect();
    let result =
        quic_result(spec, &plan, &senders, &read_backs, &end, &end, start.duration_since(epoch).as_micros() as u64, elapsed_s, stop.load(Ordering::SeqCst));
    drop(conns);
    rt.shutdown_timeout(Duration::from_millis(500));
    Ok(result)
}

/// One end of a QUIC transfer (or, locally, both) on its connections: the flows it sends on a
/// stream each, the flows it receives as their streams arrive, each sending connection sampled
/// into `series`. Returns when this end is done (its duration, its bytes, the timeout or
/// `stop`), with each sending connection's last sample and BBR state changes; the connections
/// stay open for the caller to close once the other end is done too.
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
    budget: Option<&ByteBudget>,
) -> QuicEnd {
    let epoch = clock.epoch;
    let start_of = |id: u32| plan.get(id as usize).map_or(0.0, |f| f.start_s);
    let mut halves = Vec::new();
    for conn in conns {
        if conn.sends {
            for &id in &conn.flows {
                let io = QuicSend { rt: rt.clone(), conn: conn.conn.clone(), id, stream: None, payload: Bytes::from(vec![0x5au8; QUIC_WRITE]) };
                halves.push(Half { id, start_s: start_of(id), io: Io::Sends(Box::new(io)) });
            }
        } else {
            for (id, io) in route_streams(rt, &conn.conn, &conn.flows) {
                halves.push(Half { id, start_s: start_of(id), io: Io::Receives(Box::new(io)) });
            }
        }
    }
    // No sockets to register: QUIC's samples come from each sending connection's observer.
    let sampler = Sampler::new(series);
    let mut last: Vec<(Instant, u64)> = conns.iter().map(|_| (clock.start, 0)).collect();
    let flows = run_halves(spec, halves, clock, stop, series, hook, budget, &sampler, |t_us| {
        for (conn, last) in conns.iter().zip(last.iter_mut()).filter(|(c, _)| c.sends) {
            series.quic_sample(SocketId::Flow(conn.flows[0]), &sample(conn, t_us, last));
        }
    });
    let connections = conns
        .iter()
        .zip(last.iter_mut())
        .filter(|(c, _)| c.sends)
        .map(|(conn, last)| QuicConnEnd {
            flow: conn.flows[0],
            final_quic: Some(sample(conn, micros_since(epoch), last)),
            bbr_events: pair::bbr_events(conn.bbr.as_ref(), epoch),
        })
        .collect();
    QuicEnd { flows, connections }
}

/// The transfer's result from the test's connections as one end holds them (`conns`; locally the sending ones),
/// both ends' controllers of each (`read_backs`, in their order), and what the
/// sending and the receiving end saw.
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
    let conn_of = |id: u32| conns.iter().zip(read_backs).find(|(c, _)| c.flows.contains(&id));
    let meta: Vec<FlowMeta> = (0..plan.len() as u32)
        .filter_map(|id| {
            let (conn, rb) = conn_of(id)?;
            Some(FlowMeta { id, plan: plan[id as usize].clone(), client_port: conn.port, cc_read_back: rb.sender.clone() })
        })
        .collect();
    let sent: Vec<FlowEnd> = sender_end.flows.iter().filter(|f| f.sent).cloned().collect();
    let received: Vec<FlowEnd> = receiver_end.flows.iter().filter(|f| !f.sent).cloned().collect();
    assemble_with(spec, &meta, &sent, &received, start_us, elapsed_s, interrupted, |flow, _| {
        let (conn, rb) = conn_of(flow.id).expect("a flow of the result has its connection");
        // A connection's samples and events are its first flow's.
        let first = sender_end.connections.iter().find(|e| e.flow == flow.id && conn.flows[0] == flow.id);
        SenderRecord {
            cc_requested: flow.plan.cc.to_string(),
            cc_read_back: rb.sender.clone(),
            transport: Transport::Quic,
            cc_receiver: Some(rb.receiver.clone()),
            warning: rb.mismatch(),
            final_tcp_info: None,
            final_quic: first.and_then(|e| e.final_quic.clone()),
            bbr_events: first.map(|e| e.bbr_events.clone()).unwrap_or_default(),
        }
    })
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
async fn connect(spec: &BulkSpec, run: &RunContext<'_>, plan: &[MixFlow]) -> Result<(Endpoint, Vec<Connected>), WorkloadError> {
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
        let pair = connect_pair(run, &server, &tls, server_sa, sender_side, &algorithm, &receiver_alg, index as u64, client_port).await?;
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

/// How many of noq's received chunks one read takes (each is about a packet's payload), so
/// that a read's hop into the runtime is paid per ~40 KB, not per packet.
const READ_CHUNKS: usize = 32;

/// A flow's stream on a sending connection: opened at its first write, which is its flow id.
struct QuicSend {
    rt: Handle,
    conn: Connection,
    id: u32,
    stream: Option<noq::SendStream>,
    payload: Bytes,
}

impl QuicSend {
    /// The flow's stream, opened (and its id written) on first use; `Err` is what to report.
    fn stream(&mut self) -> Result<Option<&mut noq::SendStream>, Moved> {
        if self.stream.is_none() {
            let (conn, id) = (&self.conn, self.id);
            let opened = self.rt.block_on(async {
                let Ok(open) = tokio::time::timeout(IO_TICK, conn.open_uni()).await else { return Ok(None) };
                let mut s = open.map_err(|e| format!("open stream: {e}"))?;
                s.write_all(&id.to_be_bytes()).await.map_err(|e| format!("send: {}", with_cause(&e)))?;
                Ok(Some(s))
            });
            match opened {
                Ok(s) => self.stream = s,
                Err(e) => return Err(Moved::Failed(e)),
            }
        }
        Ok(self.stream.as_mut())
    }
}

impl SendHalf for QuicSend {
    fn max_write(&self) -> usize {
        QUIC_WRITE
    }
    fn write(&mut self, len: usize) -> Moved {
        let mut chunk = [self.payload.slice(..len)];
        let rt = self.rt.clone();
        let stream = match self.stream() {
            Ok(Some(s)) => s,
            Ok(None) => return Moved::Idle,
            Err(m) => return m,
        };
        match rt.block_on(async { tokio::time::timeout(IO_TICK, stream.write_many_chunks(&mut &mut chunk[..])).await }) {
            Ok(Ok(n)) => Moved::Bytes(n),
            Ok(Err(e)) => Moved::Failed(format!("send: {}", with_cause(&e))),
            Err(_) => Moved::Idle,
        }
    }
    fn finish(&mut self, until: Instant, stop: &AtomicBool) {
        let Some(s) = self.stream.as_mut() else { return };
        let _ = s.finish();
        // Keep the stream until the receiver has it all (or the run ends).
        let stopped = s.stopped();
        self.rt.block_on(async {
            tokio::pin!(stopped);
            while Instant::now() < until && !stop.load(Ordering::Relaxed) {
                if tokio::time::timeout(IO_TICK, &mut stopped).await.is_ok() {
                    break;
                }
            }
        });
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
    rt: Handle,
    arrival: oneshot::Receiver<noq::RecvStream>,
    stream: Option<noq::RecvStream>,
    chunks: Vec<Bytes>,
}

impl ReceiveHalf for QuicReceive {
    fn read(&mut self) -> Moved {
        let rt = self.rt.clone();
        if self.stream.is_none() {
            match rt.block_on(async { tokio::time::timeout(IO_TICK, &mut self.arrival).await }) {
                Ok(Ok(s)) => self.stream = Some(s),
                // The connection's streams are all in, and this flow's was not among them.
                Ok(Err(_)) => return Moved::Failed(NEVER_ARRIVED.into()),
                Err(_) => return Moved::Idle,
            }
        }
        let Some(stream) = self.stream.as_mut() else { return Moved::Idle };
        let chunks = &mut self.chunks;
        match rt.block_on(async { tokio::time::timeout(IO_TICK, stream.read_many_chunks(chunks)).await }) {
            Ok(Ok(Some(n))) => Moved::Bytes(chunks[..n].iter().map(Bytes::len).sum()),
            Ok(Ok(None)) => Moved::End,
            Ok(Err(e)) => Moved::Failed(format!("receive: {}", with_cause(&e))),
            Err(_) => Moved::Idle,
        }
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
        halves.push((id, QuicReceive { rt: rt.clone(), arrival: rx, stream: None, chunks: vec![Bytes::new(); READ_CHUNKS] }));
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
