//! Bulk and file transfers: N flows, each pushing data one way for a duration or a byte count,
//! over kernel TCP (a connection per flow), QUIC (`bulk/quic.rs`: streams on connections) or both
//! at once (a mix). The ends are written once, with the transport as a parameter of each flow's
//! halves ([`ends`], whose documentation says what the transports share and where they
//! differ); this module has the spec and result, TCP's byte stream and setup, the one
//! assembly of flow results, and [`run_end`], the TCP end `ccbench serve` and `--remote` run.

use std::io::{ErrorKind, Read, Write};
use std::net::{Shutdown, SocketAddrV4, TcpStream};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, OnceLock};
use std::time::{Duration, Instant};

use ccbench_kernel_tcp::TcpInfo;
use ccbench_model::units::wire_time;
use serde::{Deserialize, Serialize};

mod ends;
pub(crate) mod quic;
mod quic_remote;

pub(crate) use quic::LocalQuic;
pub use quic::{QuicConnEnd, QuicEnd};
pub use quic_remote::{QuicFarClient, QuicFarServer};

use crate::common::{CHUNK, PATTERN};
use crate::sampler::Sampler;
use crate::Transport;
// The data half, at the paths the ends import it from.
use crate::{net, Direction, MeasureHook, RunContext, SeriesSink, Side, SocketId, Workload, WorkloadError};
pub(crate) use crate::{Amount, BulkResult, BulkSpec, FlowResult, GoodputPoint, Knobs, MixFlow};
pub(crate) use ends::{run_halves, Half, Io, Moved, Pending, ReceiveHalf, SendHalf, Tasks, IO_TICK};

struct Flow {
    id: u32,
    plan: MixFlow,
    sender: TcpStream,
    receiver: TcpStream,
    client_port: u16,
    cc_read_back: String,
    /// `--rcvbuf`/`--sndbuf`, asked and read back from the connected sockets.
    buffers: Option<crate::SocketBuffers>,
}

impl Workload for BulkSpec {
    type Result = BulkResult;

    fn run(&self, run: &RunContext<'_>) -> Result<BulkResult, WorkloadError> {
        run_bulk(self, run)
    }
}

/// Runs the transfer, stopping early if the stop flag is set. The measured span runs from the
/// start of the transfer to the end of the duration, or until the last file arrived (or the
/// timeout). Both ends run here, in one end ([`ends::run_halves`]): the same code
/// `ccbench serve` runs for the far end of a real path. The flows' transports are theirs to
/// choose: kernel TCP flows and QUIC flows of one mix (`--flows quic:bbr3:1,tcp:cubic:1`) are
/// set up each their own way, then run together, on one clock.
fn run_bulk(spec: &BulkSpec, run: &RunContext<'_>) -> Result<BulkResult, WorkloadError> {
    let (epoch, stop, hook) = (run.epoch, run.stop, run.hook);
    let plan = spec.plan();
    if plan.is_empty() {
        return Err(WorkloadError::Setup("no flows".into()));
    }
    let ids_of = |t: Transport| -> Vec<u32> { (0..plan.len() as u32).filter(|&i| plan[i as usize].cc.transport() == t).collect() };
    let tcp = connect_flows(run, spec, &plan, &ids_of(Transport::Tcp))?;
    let quic = LocalQuic::connect(spec, run, &plan, &ids_of(Transport::Quic))?;
    // Both ends' streams in one end, so the senders' samples and the receivers' goodput
    // points are taken in the same rounds, at the same instants.
    let mut streams = Vec::new();
    let mut meta = Vec::new();
    for flow in tcp {
        streams.push(EndStream { id: flow.id, start: flow.plan.start(), stream: flow.sender, sends: true });
        streams.push(EndStream { id: flow.id, start: flow.plan.start(), stream: flow.receiver, sends: false });
        meta.push(FlowMeta { id: flow.id, plan: flow.plan, client_port: flow.client_port, cc_read_back: flow.cc_read_back, buffers: flow.buffers });
    }
    let sampler = Sampler::new(run.series).saturating(spec.knobs.saturating());
    for s in streams.iter().filter(|s| s.sends) {
        sampler.register(SocketId::Flow(s.id), &s.stream);
    }
    let tasks = quic.as_ref().map(|q| q.tasks(&plan));
    if let Some(q) = &quic {
        meta.extend(q.meta(&plan));
    }
    meta.sort_by_key(|m| m.id);

    let start = Instant::now();
    hook.open(start);
    if let Amount::Seconds(s) = spec.amount {
        hook.close(start + Duration::from_secs_f64(s));
    }
    let mut rounds = quic.as_ref().map(|q| q.rounds(start));
    let ends = ends::run_halves(spec, tcp_halves(&streams), tasks, &EndClock::shared(epoch, start), stop, run.series, hook, None, &sampler, |t_us| {
        if let Some(r) = rounds.as_mut() {
            r.round(run.series, t_us);
        }
    });
    let elapsed_s = elapsed_since(spec.amount, start);
    if let Amount::Bytes(_) = spec.amount {
        hook.close(start + Duration::from_secs_f64(elapsed_s));
    }
    let mut sampled = sampler.finish(epoch);
    let mut limits = sampler.take_limits();
    let quic_ends = rounds.map(|r| r.finish(epoch)).unwrap_or_default();
    let (mut senders, receivers): (Vec<FlowEnd>, Vec<FlowEnd>) = ends.into_iter().partition(|e| e.sent);
    for end in &mut senders {
        end.final_tcp_info = sampled.remove(&SocketId::Flow(end.id)).flatten();
        end.limits = limits.remove(&SocketId::Flow(end.id));
    }
    let interrupted = stop.load(Ordering::SeqCst);
    let result =
        assemble_with(spec, &meta, &senders, &receivers, start.duration_since(epoch).as_micros() as u64, elapsed_s, interrupted, |flow, sent| {
            match (&quic, flow.plan.cc.transport()) {
                (Some(q), Transport::Quic) => q.record(flow, &quic_ends),
                _ => crate::SenderRecord::tcp(&flow.plan.cc, flow.cc_read_back.clone(), sent.final_tcp_info)
                    .with_limits(sent.limits.clone())
                    .with_buffers(flow.buffers),
            }
        });
    for s in &streams {
        crate::net::reset_on_close(&s.stream);
    }
    drop(streams);
    if let Some(q) = quic {
        q.close();
    }
    Ok(result)
}

/// Seconds the goodput of a transfer that started at `start` and just ended is averaged over.
pub fn elapsed_since(amount: Amount, start: Instant) -> f64 {
    match amount {
        Amount::Seconds(s) => s.min(start.elapsed().as_secs_f64()),
        Amount::Bytes(_) => start.elapsed().as_secs_f64(),
    }
}

/// What is known of a flow before any data moves: its plan and the sending socket's algorithm.
#[derive(Clone, Debug)]
pub struct FlowMeta {
    pub id: u32,
    pub plan: MixFlow,
    pub client_port: u16,
    pub cc_read_back: String,
    /// `--rcvbuf`/`--sndbuf` on its kernel TCP sockets, asked and read back.
    pub buffers: Option<crate::SocketBuffers>,
}

/// One connected stream of one end of a bulk transfer.
pub struct EndStream {
    pub id: u32,
    /// When this flow starts sending, after the transfer's start.
    pub start: Duration,
    pub stream: TcpStream,
    /// This end sends on it (else it receives).
    pub sends: bool,
}

/// The two instants an end measures from: `epoch` (times in series) and `start` (the transfer),
/// and when a receiving end's window opens.
#[derive(Clone, Debug)]
pub struct EndClock {
    pub epoch: Instant,
    pub start: Instant,
    pub opens: Opens,
}

/// When a receiving end's measurement window opens.
#[derive(Clone, Debug)]
pub enum Opens {
    /// At `start`: both ends run on one clock (an emulated path), or this end sends.
    AtStart,
    /// At the first byte received, less `one_way`: the receiving end of a real path. It cannot
    /// see when the far sender started; a lost control message delays that by a retransmission
    /// timeout or more, which a window opened at `start` would charge to the algorithm (seen: a
    /// 1.6 s late start on a 2 % loss path, -30 % on that run's goodput). Opened windows are
    /// shared by all the end's flows: the first byte of any flow sets it, for all of them.
    AtFirstByte { one_way: Duration, opened: Arc<OnceLock<Instant>> },
}

impl EndClock {
    /// One clock for both ends, the window opening at `start`.
    pub fn shared(epoch: Instant, start: Instant) -> Self {
        EndClock { epoch, start, opens: Opens::AtStart }
    }

    /// A receiving end of a real path: the window opens at the first byte less `one_way`.
    pub fn at_first_byte(epoch: Instant, start: Instant, one_way: Duration) -> Self {
        EndClock { epoch, start, opens: Opens::AtFirstByte { one_way, opened: Arc::new(OnceLock::new()) } }
    }

    /// When the window opened (`start` for [`Opens::AtStart`]); `None` while no byte arrived.
    pub fn opened(&self) -> Option<Instant> {
        match &self.opens {
            Opens::AtStart => Some(self.start),
            Opens::AtFirstByte { opened, .. } => opened.get().copied(),
        }
    }

    /// The window's opening, given that a flow starting `flow_start` into the transfer got its
    /// first byte at `now`; the first call decides it, never before `start`.
    fn open_for(&self, now: Instant, flow_start: Duration) -> Instant {
        match &self.opens {
            Opens::AtStart => self.start,
            Opens::AtFirstByte { one_way, opened } => *opened.get_or_init(|| {
                let back = *one_way + flow_start;
                now.checked_sub(back).unwrap_or(self.start).max(self.start)
            }),
        }
    }

    /// The flow's start and its window's end, from the window's opening.
    fn flow_window(&self, opened: Instant, amount: Amount, start: Duration, timeout: Duration) -> (Instant, Instant) {
        let flow_start = opened + start;
        let deadline = match amount {
            Amount::Seconds(s) => opened + Duration::from_secs_f64(s),
            Amount::Bytes(_) => flow_start + timeout,
        };
        (flow_start, deadline)
    }

    /// Seconds the goodput is averaged over, once this end is done (see [`elapsed_since`]):
    /// from the window's opening, or `start` if no byte ever came.
    pub fn elapsed(&self, amount: Amount) -> f64 {
        elapsed_since(amount, self.opened().unwrap_or(self.start))
    }
}

/// What one end saw of one flow: the sending end fills the `send_*` fields and the final
/// `TCP_INFO`, the receiving end the rest. Sent back by `ccbench serve` for the far end.
#[derive(Clone, Debug, Default, Serialize, Deserialize, schemars::JsonSchema)]
pub struct FlowEnd {
    pub id: u32,
    /// Seen by the sending end.
    #[serde(default)]
    pub sent: bool,
    pub send_error: Option<String>,
    pub final_tcp_info: Option<TcpInfo>,
    /// What held the sending end back (issue 30); absent from a far end before it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub limits: Option<crate::Limits>,
    pub bytes_received: u64,
    /// Seconds from the flow's start until its last byte arrived (byte-count transfers).
    pub completion_s: Option<f64>,
    pub receive_error: Option<String>,
}

/// A cap on the bytes one end may move in a test, shared by its flows (`ccbench serve
/// --max-bytes`). A flow that finds it spent stops with `reason` as its error.
pub struct ByteBudget {
    remaining: AtomicU64,
    pub reason: String,
}

impl ByteBudget {
    pub fn new(bytes: u64, reason: String) -> Self {
        ByteBudget { remaining: AtomicU64::new(bytes), reason }
    }

    /// Bytes not yet taken.
    pub fn remaining(&self) -> u64 {
        self.remaining.load(Ordering::SeqCst)
    }

    /// Takes `n` bytes from the budget; false (taking nothing) when fewer are left.
    pub fn take(&self, n: u64) -> bool {
        self.remaining.fetch_update(Ordering::SeqCst, Ordering::SeqCst, |r| r.checked_sub(n)).is_ok()
    }

    /// Returns bytes taken but not moved.
    pub(crate) fn give_back(&self, n: u64) {
        self.remaining.fetch_add(n, Ordering::SeqCst);
    }
}

/// Runs one end of a bulk transfer over kernel TCP (or, locally, both) on its connected
/// streams: a sending stream sends (from its start offset) and its `TCP_INFO` is sampled into
/// `series`; a receiving stream is read and its goodput points go to `series`, in the same
/// rounds ([`ends::run_halves`]). Returns when every stream is done (the duration is over, the
/// bytes are sent or received, the timeout or `stop`).
/// The caller closes the streams, once the other end is done too: a receiver that closed
/// first would reset a sender still within its own window.
#[allow(clippy::too_many_arguments)]
pub fn run_end(
    spec: &BulkSpec,
    streams: &[EndStream],
    clock: &EndClock,
    stop: &AtomicBool,
    series: &dyn SeriesSink,
    hook: &dyn MeasureHook,
    budget: Option<&ByteBudget>,
) -> Vec<FlowEnd> {
    let sampler = Sampler::new(series).saturating(spec.knobs.saturating());
    for s in streams.iter().filter(|s| s.sends) {
        sampler.register(SocketId::Flow(s.id), &s.stream);
    }
    let mut ends = ends::run_halves(spec, tcp_halves(streams), None, clock, stop, series, hook, budget, &sampler, |_| {});
    let mut sampled = sampler.finish(clock.epoch);
    let mut limits = sampler.take_limits();
    for end in ends.iter_mut().filter(|e| e.sent) {
        end.final_tcp_info = sampled.remove(&SocketId::Flow(end.id)).flatten();
        end.limits = limits.remove(&SocketId::Flow(end.id));
    }
    ends
}

/// The halves of TCP streams: a flow's byte stream is its own connection.
fn tcp_halves(streams: &[EndStream]) -> Vec<Half<'_>> {
    streams
        .iter()
        .map(|s| Half {
            id: s.id,
            start: s.start,
            io: if s.sends { Io::Sends(Box::new(TcpSend(&s.stream))) } else { Io::Receives(Box::new(TcpReceive { sock: &s.stream, buf: vec![0; 64 * 1024] })) },
        })
        .collect()
}

/// Writes from one static pattern, [`CHUNK`] at a time.
struct TcpSend<'s>(&'s TcpStream);

impl SendHalf for TcpSend<'_> {
    fn max_write(&self) -> usize {
        CHUNK
    }
    fn write(&mut self, len: usize) -> Pending<'_, Moved> {
        let moved = match (&mut &*self.0).write(&PATTERN[..len]) {
            Ok(n) => Moved::Bytes(n),
            Err(e) if matches!(e.kind(), ErrorKind::WouldBlock | ErrorKind::TimedOut | ErrorKind::Interrupted) => Moved::Idle,
            Err(e) => Moved::Failed(format!("send: {e}")),
        };
        Box::pin(std::future::ready(moved))
    }
    fn finish<'a>(&'a mut self, _until: Instant, _stop: &'a AtomicBool) -> Pending<'a, ()> {
        let _ = self.0.shutdown(Shutdown::Write);
        Box::pin(std::future::ready(()))
    }
    fn abort(&mut self) {
        let _ = self.0.shutdown(Shutdown::Write);
    }
}

struct TcpReceive<'s> {
    sock: &'s TcpStream,
    buf: Vec<u8>,
}

impl ReceiveHalf for TcpReceive<'_> {
    fn read(&mut self) -> Pending<'_, Moved> {
        let moved = match (&mut &*self.sock).read(&mut self.buf) {
            Ok(0) => Moved::End,
            Ok(n) => Moved::Bytes(n),
            Err(e) if matches!(e.kind(), ErrorKind::WouldBlock | ErrorKind::TimedOut | ErrorKind::Interrupted) => Moved::Idle,
            Err(e) => Moved::Failed(format!("receive: {e}")),
        };
        Box::pin(std::future::ready(moved))
    }
    fn abort(&mut self) {
        let _ = self.sock.shutdown(Shutdown::Both);
    }
}

/// The flows' results from what the sending and the receiving end saw of them, over kernel
/// TCP.
pub fn assemble(
    spec: &BulkSpec,
    meta: &[FlowMeta],
    senders: &[FlowEnd],
    receivers: &[FlowEnd],
    start_us: u64,
    elapsed_s: f64,
    interrupted: bool,
) -> BulkResult {
    assemble_with(spec, meta, senders, receivers, start_us, elapsed_s, interrupted, |flow, sent| {
        crate::SenderRecord::tcp(&flow.plan.cc, flow.cc_read_back.clone(), sent.final_tcp_info).with_limits(sent.limits.clone()).with_buffers(flow.buffers)
    })
}

/// The flows' results, whatever the transport: `sending(flow, sent)` gives a flow's sender
/// record from its facts and what its sending end saw (a flow no end reported is taken as
/// having moved nothing, without an error).
#[allow(clippy::too_many_arguments)]
pub(crate) fn assemble_with(
    spec: &BulkSpec,
    meta: &[FlowMeta],
    senders: &[FlowEnd],
    receivers: &[FlowEnd],
    start_us: u64,
    elapsed_s: f64,
    interrupted: bool,
    sending: impl Fn(&FlowMeta, FlowEnd) -> crate::SenderRecord<String>,
) -> BulkResult {
    let find = |ends: &[FlowEnd], id: u32| ends.iter().find(|e| e.id == id).cloned().unwrap_or_else(|| FlowEnd { id, ..FlowEnd::default() });
    let mut results = Vec::new();
    for flow in meta {
        let (mut sent, got) = (find(senders, flow.id), find(receivers, flow.id));
        // Each flow's goodput is over its own active time.
        let active_s = (elapsed_s - flow.plan.start_s).max(1e-9);
        let goodput_bps = match (spec.amount, got.completion_s) {
            (Amount::Bytes(_), Some(t)) if t > 0.0 => got.bytes_received as f64 * 8.0 / t,
            _ => got.bytes_received as f64 * 8.0 / active_s,
        };
        let error = sent.send_error.take().or(got.receive_error);
        let completed = match spec.amount {
            Amount::Bytes(n) => got.bytes_received >= n,
            Amount::Seconds(_) => !interrupted && error.is_none(),
        };
        results.push(FlowResult {
            id: flow.id,
            sender: spec.direction.sender(),
            sending: sending(flow, sent),
            start_s: flow.plan.start_s,
            client_port: flow.client_port,
            bytes_received: got.bytes_received,
            goodput_bps,
            completed,
            completion_time_s: got.completion_s,
            error,
        });
    }
    BulkResult { start_us, elapsed_s, goodput_bps: aggregate_goodput(&results, spec.amount, elapsed_s), interrupted, flows: results }
}

/// Opens every connection before any data flows, so all flows start together and the
/// algorithm of each sending socket is verified up front.
fn connect_flows(run: &RunContext<'_>, spec: &BulkSpec, plan: &[MixFlow], ids: &[u32]) -> Result<Vec<Flow>, WorkloadError> {
    let Some(first) = ids.first().map(|&i| &plan[i as usize]) else { return Ok(Vec::new()) };
    let sender_side = spec.direction.sender();
    let addr = SocketAddrV4::new(run.server_addr, spec.port);
    // Accepted sockets inherit the listener's algorithm.
    let listener = net::listen_in(run.server, run.server_addr, spec.port, (sender_side == Side::Server).then_some(&first.cc))?;
    // `--rcvbuf` on the receiving end, `--sndbuf` on the sending end, before any connection:
    // accepted sockets inherit the listener's buffers.
    let (rcvbuf, sndbuf) = (spec.knobs.rcvbuf, spec.knobs.sndbuf);
    let (server_bufs, client_bufs) = match sender_side {
        Side::Server => ((None, sndbuf), (rcvbuf, None)),
        Side::Client => ((rcvbuf, None), (None, sndbuf)),
    };
    net::set_buffers(&listener, server_bufs.0, server_bufs.1)?;

    let mut flows = Vec::new();
    for &id in ids {
        let flow_plan = &plan[id as usize];
        let cc = &flow_plan.cc;
        let client_cc = (sender_side == Side::Client).then_some(cc);
        let sock = match flow_plan.client_port {
            Some(port) => net::socket_at(run.client, addr.into(), client_cc, port)?,
            None => net::sockets(Some(run.client), addr.into(), 1, client_cc)?.remove(0),
        };
        net::set_buffers(&sock, client_bufs.0, client_bufs.1)?;
        let stream = net::connect_blocking(sock, addr)?;
        let client_port = stream.local_addr()?.port();
        let accepted = net::accept_port(&listener, client_port)?;
        let (sender, receiver) = match sender_side {
            Side::Server => (accepted, stream),
            Side::Client => (stream, accepted),
        };
        // Set again on the sending socket itself, then read back what the kernel runs.
        let cc_read_back = net::confirm_congestion(&sender, cc, sender_side)?;
        // What the kernel kept on the sockets the data flows through (an accepted socket
        // inherits the listener's), not what was asked: the provenance of a cause set on purpose.
        let buffers = (rcvbuf.is_some() || sndbuf.is_some())
            .then(|| -> std::io::Result<_> {
                Ok(crate::SocketBuffers {
                    rcvbuf_requested: rcvbuf,
                    rcvbuf_effective: rcvbuf.map(|_| socket2::SockRef::from(&receiver).recv_buffer_size()).transpose()?.map(|b| b as u64),
                    sndbuf_requested: sndbuf,
                    sndbuf_effective: sndbuf.map(|_| socket2::SockRef::from(&sender).send_buffer_size()).transpose()?.map(|b| b as u64),
                })
            })
            .transpose()?;
        prepare_stream(&sender)?;
        prepare_stream(&receiver)?;
        flows.push(Flow { id, plan: flow_plan.clone(), sender, receiver, client_port, cc_read_back, buffers });
    }
    Ok(flows)
}

/// All flows' bytes over the time from the first flow's start until the window closed (timed)
/// or the last byte arrived (byte counts): what the bottleneck delivered in total.
pub(crate) fn aggregate_goodput(flows: &[FlowResult], amount: Amount, elapsed_s: f64) -> f64 {
    let bytes: u64 = flows.iter().map(|f| f.bytes_received).sum();
    let span = match amount {
        Amount::Seconds(_) => elapsed_s,
        Amount::Bytes(_) => flows.iter().map(|f| f.completion_time_s.map(|c| c + f.start_s).unwrap_or(elapsed_s)).fold(0.0, f64::max),
    };
    bytes as f64 * 8.0 / span.max(1e-9)
}

/// A receiving flow's window: its start and end, known from the outset on one clock, or once
/// its first byte arrives on a real path's receiving end ([`Opens::AtFirstByte`]).
#[derive(Clone, Debug)]
pub(crate) struct FlowWindow {
    clock: EndClock,
    amount: Amount,
    /// When the flow starts, after the transfer's start.
    start: Duration,
    timeout: Duration,
    /// When to give up waiting for a first byte (the window's end, had it opened at `start`).
    first_byte_by: Instant,
    bounds: Option<(Instant, Instant)>,
}

impl FlowWindow {
    /// The window of a flow starting `start` into the transfer that ends at `deadline` when
    /// it opens at the clock's start.
    pub(crate) fn new(clock: &EndClock, amount: Amount, start: Duration, timeout: Duration, deadline: Instant) -> Self {
        FlowWindow { clock: clock.clone(), amount, start, timeout, first_byte_by: deadline, bounds: None }
    }

    pub(crate) fn amount(&self) -> Amount {
        self.amount
    }

    /// Reading goes on until this instant.
    pub(crate) fn until(&self) -> Instant {
        self.bounds.map_or(self.first_byte_by, |(_, end)| end)
    }

    /// Bytes arrived at `now`: whether they count (bytes after the window closes are not its
    /// goodput; a byte count is read to the end, in or out of time).
    pub(crate) fn counts(&mut self, now: Instant) -> bool {
        let (_, end) = *self.bounds.get_or_insert_with(|| {
            let opened = self.clock.open_for(now, self.start);
            self.clock.flow_window(opened, self.amount, self.start, self.timeout)
        });
        now <= end || matches!(self.amount, Amount::Bytes(_))
    }

    /// Seconds from the flow's start to `last_byte`, once all `bytes` of a byte count arrived.
    pub(crate) fn completion_s(&self, bytes: u64, last_byte: Option<Instant>) -> Option<f64> {
        match (self.amount, self.bounds, last_byte) {
            (Amount::Bytes(n), Some((flow_start, _)), Some(t)) if bytes >= n => Some(t.saturating_duration_since(flow_start).as_secs_f64()),
            _ => None,
        }
    }
}

/// Makes a connected stream ready for [`run_end`]: no Nagle delay, and blocked calls that come
/// back often enough to watch the clock and the stop flag.
pub fn prepare_stream(s: &TcpStream) -> std::io::Result<()> {
    s.set_nodelay(true)?;
    s.set_write_timeout(Some(IO_TICK))?;
    s.set_read_timeout(Some(IO_TICK))
}

/// Whether a far end runs the QUIC flows of this test: all of them QUIC (a mix with kernel
/// TCP is not served), each with an algorithm this build has. `None` when no flow is QUIC.
fn check_quic(spec: &BulkSpec) -> Option<Result<(), String>> {
    let plan = spec.plan();
    let quic = plan.iter().filter(|f| f.cc.is_quic()).count();
    if quic == 0 {
        return None;
    }
    if quic < plan.len() {
        return Some(Err("a test mixing kernel TCP and QUIC flows is not served; run the TCP and the QUIC flows as tests of their own".into()));
    }
    let names = plan.iter().map(|f| f.cc.name().to_string()).chain(spec.quic_receiver_cc.clone());
    for alg in names {
        if !crate::has_quic_algorithm(&alg) {
            return Some(Err(format!("this server has no QUIC algorithm {alg:?}; it has: {}", crate::quic_algorithm_names().join(", "))));
        }
    }
    Some(Ok(()))
}

/// Over `--remote` serve runs the flows' far halves (`FarEnd::Flows`, the one far end that is
/// not an HTTP server), this end the near half of each.
impl crate::Remote for BulkSpec {
    type Far = BulkSpec;
    type Result = BulkResult;
    fn far_request(&self) -> BulkSpec {
        self.clone()
    }
    fn near_end(&self) -> crate::NearEnd<'_, BulkResult> {
        crate::NearEnd::Flows { spec: self, result: std::convert::identity }
    }
}

impl crate::FarRequest for BulkSpec {
    fn far_end(&self) -> crate::FarEnd<'_> {
        crate::FarEnd::Flows(self)
    }
}

impl crate::FarSpec for BulkSpec {
    fn check(&self, l: &crate::ServeLimits<'_>) -> Result<(), String> {
        let n = self.flow_count();
        if n == 0 {
            return Err("a bulk test needs at least one flow".into());
        }
        if n > l.max_flows as usize {
            return Err(format!("{n} flows is over this server's limit of {} flows per test", l.max_flows));
        }
        let plan = self.plan();
        let quic = check_quic(self).transpose()?.is_some();
        if self.direction == Direction::Download && !quic {
            for f in &plan {
                l.has_cc(&f.cc)?;
            }
        }
        let last_start = plan.iter().map(|f| f.start_s).fold(0.0, f64::max);
        if plan.iter().any(|f| !(f.start_s.is_finite() && f.start_s >= 0.0)) || !(self.timeout_s.is_finite() && self.timeout_s > 0.0) {
            return Err("a flow's start or the timeout is not a finite, non-negative number of seconds".into());
        }
        match self.amount {
            Amount::Seconds(s) if !(s.is_finite() && s > 0.0) => Err(format!("a duration of {s} s")),
            Amount::Seconds(s) if wire_time::from_s_saturating(s + last_start) > l.max_duration => {
                Err(format!("a test of {} s is over this server's limit of {} s per test (--max-duration)", s + last_start, wire_time::to_s(l.max_duration)))
            }
            Amount::Bytes(n) if n.saturating_mul(plan.len() as u64) > l.max_bytes => {
                Err(format!("{} bytes in all is over this server's limit of {} bytes per test (--max-bytes)", n.saturating_mul(plan.len() as u64), l.max_bytes))
            }
            _ => Ok(()),
        }
    }

    fn describe_far(&self) -> String {
        let dir = match self.direction {
            Direction::Download => "download",
            Direction::Upload => "upload",
        };
        // Also for refused requests: nothing here may grow with the flow count asked for.
        let mut ccs: Vec<String> = if self.mix.is_empty() { vec![self.cc.to_string()] } else { self.mix.iter().map(|f| f.cc.to_string()).collect() };
        ccs.dedup();
        let what = match self.amount {
            Amount::Seconds(s) => format!("bulk {dir} {s} s"),
            Amount::Bytes(n) => format!("file {dir} {n} bytes"),
        };
        format!("{what}, {} flow(s) {}", self.flow_count(), ccs.join("+"))
    }

    fn planned_connections(&self) -> u32 {
        self.plan().len() as u32
    }
}

#[cfg(test)]
mod window_tests {
    use super::*;

    const S: Duration = Duration::from_secs(1);

    #[test]
    fn a_shared_clock_counts_from_start_to_the_duration() {
        let t0 = Instant::now();
        let clock = EndClock::shared(t0, t0);
        let mut w = FlowWindow::new(&clock, Amount::Seconds(8.0), Duration::ZERO, 30 * S, t0 + 8 * S);
        assert_eq!(w.until(), t0 + 8 * S);
        assert!(w.counts(t0 + 2 * S), "a late first byte still counts from start");
        assert_eq!(w.until(), t0 + 8 * S, "and the window still ends 8 s after start");
        assert!(!w.counts(t0 + 9 * S));
    }

    #[test]
    fn a_real_paths_receiver_opens_at_its_first_byte_less_one_way() {
        let t0 = Instant::now();
        let one_way = Duration::from_millis(5);
        let clock = EndClock::at_first_byte(t0, t0, one_way);
        assert_eq!(clock.opened(), None);
        let mut w = FlowWindow::new(&clock, Amount::Seconds(8.0), Duration::ZERO, 30 * S, t0 + 8 * S);
        assert_eq!(w.until(), t0 + 8 * S, "before a byte: wait as long as the window would run");
        // The far sender started 1.6 s late (a lost `Start`): none of that is charged.
        let first = t0 + Duration::from_millis(1605);
        assert!(w.counts(first));
        assert_eq!(clock.opened(), Some(t0 + Duration::from_millis(1600)));
        assert_eq!(w.until(), t0 + Duration::from_millis(9600));
        assert!(w.counts(t0 + Duration::from_millis(9500)));
        assert!(!w.counts(t0 + Duration::from_millis(9700)));
    }

    #[test]
    fn the_first_byte_of_any_flow_opens_the_window_for_all() {
        let t0 = Instant::now();
        let clock = EndClock::at_first_byte(t0, t0, Duration::from_millis(10));
        // A file per flow; flow 1 starts 2 s in and happens to deliver first.
        let mut late = FlowWindow::new(&clock, Amount::Bytes(1000), 2 * S, 30 * S, t0 + 32 * S);
        let mut early = FlowWindow::new(&clock, Amount::Bytes(1000), Duration::ZERO, 30 * S, t0 + 30 * S);
        assert!(late.counts(t0 + Duration::from_millis(2510)));
        assert_eq!(clock.opened(), Some(t0 + Duration::from_millis(500)), "less one way and the flow's offset");
        assert!(early.counts(t0 + Duration::from_millis(520)));
        let done = t0 + Duration::from_millis(1500);
        assert_eq!(early.completion_s(1000, Some(done)), Some(1.0), "from the flow's start, the opening");
        assert_eq!(early.completion_s(999, Some(done)), None, "not all bytes: not complete");
        assert_eq!(late.completion_s(1000, Some(t0 + Duration::from_millis(3000))), Some(0.5));
    }

    #[test]
    fn the_opening_is_never_before_start() {
        let t0 = Instant::now();
        let clock = EndClock::at_first_byte(t0, t0 + S, Duration::from_millis(500));
        let mut w = FlowWindow::new(&clock, Amount::Seconds(1.0), Duration::ZERO, 30 * S, t0 + 2 * S);
        assert!(w.counts(t0 + Duration::from_millis(1100)));
        assert_eq!(clock.opened(), Some(t0 + S));
    }
}

/// `ccbench run --workload bulk` and `file`: their flags and their spec from them.
mod args {
    use std::time::Duration;

    use crate::flags::{AppPauses, AppRate, AppRateFrom, FlagError, FlagSet, FromFlags, Kind, RunFlags, Size, SockBuf};
    use crate::{Algorithm, Amount, AppPause, BulkSpec, Knobs};

    crate::workload_flags! {
        /// The flags of bulk and file. `--size` is objects' too (each object's size).
        #[derive(clap::Args, serde::Deserialize, Debug, Clone, Default, PartialEq)]
        #[group(skip)]
        #[serde(deny_unknown_fields, default, rename_all = "kebab-case")]
        pub struct BulkFlags {
            /// file: bytes per flow [default: 10mb]; objects: bytes per object [default: 1mib].
            #[arg(long, allow_hyphen_values = true)]
            pub size: Option<Size>,
            /// bulk, file: the receiving socket's buffer (SO_RCVBUF), whichever end receives,
            /// e.g. 64kib: a receive-window-bound flow on purpose. Over QUIC, the receiver's
            /// flow-control credit (connection and stream windows).
            #[arg(long, allow_hyphen_values = true)]
            pub rcvbuf: Option<SockBuf>,
            /// bulk, file: the sending socket's buffer (SO_SNDBUF), whichever end sends: a
            /// send-buffer-bound flow on purpose. Over QUIC, the sender's send window (its
            /// unacknowledged data).
            #[arg(long, allow_hyphen_values = true)]
            pub sndbuf: Option<SockBuf>,
            /// bulk, file: the sending application writes no faster than this rate, e.g. 20mbit
            /// (an application-bound flow on purpose).
            #[arg(long, allow_hyphen_values = true)]
            pub app_rate: Option<AppRate>,
            /// bulk, file: with --app-rate, when the cap begins, e.g. 4s: before it the
            /// application writes as fast as the socket takes (a flow that becomes
            /// application-bound mid-run) [default: 0s].
            #[arg(long, allow_hyphen_values = true)]
            pub app_rate_from: Option<AppRateFrom>,
            /// bulk, file: when the sending application writes nothing, AT:LENGTH into the flow,
            /// comma-separated, e.g. 4s:1s or 4s:1s,8s:500ms (an idle sender that restarts).
            #[arg(long, allow_hyphen_values = true)]
            pub app_pause: Option<AppPauses>,
        }
    }

    impl BulkFlags {
        /// What each flow of `--workload kind` moves: file's `--size`, or bulk's `--duration`.
        pub fn amount(&self, kind: &str, duration: Duration) -> Amount {
            match kind {
                "file" => Amount::Bytes(self.size.map_or(10_000_000, |s| s.0)),
                _ => Amount::Seconds(ccbench_model::units::wire_time::to_s(duration)),
            }
        }
    }

    impl FromFlags for BulkSpec {
        type Flags = BulkFlags;
        const KINDS: &'static [Kind] = &[
            Kind {
                name: "bulk",
                help: None,
                about: Some("flows for --duration"),
                takes: &["--flows", "--quic-receiver-cc", "--rcvbuf", "--sndbuf", "--app-rate", "--app-rate-from", "--app-pause"],
            },
            Kind {
                name: "file",
                help: None,
                about: Some("one --size transfer per flow"),
                takes: &["--size", "--flows", "--quic-receiver-cc", "--rcvbuf", "--sndbuf", "--app-rate", "--app-rate-from", "--app-pause"],
            },
        ];

        fn from_flags(kind: &str, flags: &dyn FlagSet, run: &RunFlags) -> Result<Self, FlagError> {
            let f = flags.of::<BulkSpec>();
            if let (Some(from), None) = (f.app_rate_from, f.app_rate) {
                return Err(FlagError::new("--app-rate-from", from, "a time only with --app-rate (the cap it delays)"));
            }
            Ok(BulkSpec {
                flows: run.flows,
                direction: run.direction,
                amount: flags.of::<BulkSpec>().amount(kind, run.duration),
                cc: Algorithm::default(),
                mix: Vec::new(),
                port: run.port,
                sample_interval_us: run.sample_interval_us(),
                timeout_s: run.timeout_s(),
                quic_receiver_cc: run.quic_receiver_cc.clone(),
                knobs: {
                    let f = flags.of::<BulkSpec>();
                    Knobs {
                        rcvbuf: f.rcvbuf.map(|b| b.0),
                        sndbuf: f.sndbuf.map(|b| b.0),
                        app_rate_bps: f.app_rate.map(|r| r.0),
                        app_rate_from_s: f.app_rate_from.map(|t| t.0.as_secs_f64()),
                        app_pauses: f.app_pause.iter().flat_map(|p| &p.0).map(|(a, l)| AppPause { at_s: a.as_secs_f64(), for_s: l.as_secs_f64() }).collect(),
                    }
                },
            })
        }
    }
}

pub use args::BulkFlags;
