//! A mix of kernel TCP and QUIC flows sharing one bottleneck (`--flows quic:bbr3:1,tcp:cubic:1`):
//! the TCP flows run on the TCP bulk runner, the QUIC flows on the QUIC one, at the same time,
//! both starting their clocks at one barrier. Each runner numbers its own flows from 0; a
//! relabelling sink gives their samples the mix's flow ids, and one combined hook opens the
//! measured span at the first start and closes it at the later end.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Barrier, Mutex};
use std::time::Instant;

use ccbench_probe::Sample;

use crate::bulk::{aggregate_goodput, run_tcp_bulk, BulkResult, BulkSpec, GoodputPoint};
use crate::common::lock;
use crate::Transport;
use crate::{MeasureHook, QuicSample, RunContext, SeriesSink, SocketId, WorkloadError};

/// Runs a mix whose flows use both transports.
pub(crate) fn run_mixed_bulk(spec: &BulkSpec, run: &RunContext<'_>) -> Result<BulkResult, WorkloadError> {
    let plan = spec.plan();
    let ids_of = |t: Transport| -> Vec<u32> { (0..plan.len() as u32).filter(|&i| plan[i as usize].cc.transport() == t).collect() };
    let (tcp_ids, quic_ids) = (ids_of(Transport::Tcp), ids_of(Transport::Quic));
    let sub = |ids: &[u32]| BulkSpec { flows: ids.len() as u32, mix: ids.iter().map(|&i| plan[i as usize].clone()).collect(), ..spec.clone() };
    let (tcp_spec, quic_spec) = (sub(&tcp_ids), sub(&quic_ids));
    let hook = JointHook { inner: run.hook, opened: AtomicBool::new(false), closes: Mutex::new((0, None)) };
    let (tcp_sink, quic_sink) = (Relabel { inner: run.series, ids: &tcp_ids }, Relabel { inner: run.series, ids: &quic_ids });
    let tcp_run = RunContext { hook: &hook, series: &tcp_sink, ..*run };
    let quic_run = RunContext { hook: &hook, series: &quic_sink, ..*run };
    // Both runners set up their connections, then start the clock together.
    let barrier = Barrier::new(2);
    let (tcp, quic) = std::thread::scope(|s| {
        let quic = s.spawn(|| crate::quic::run_quic_bulk(&quic_spec, &quic_run, Some(&barrier)));
        let tcp = run_tcp_bulk(&tcp_spec, &tcp_run, Some(&barrier));
        (tcp, quic.join().unwrap_or_else(|_| Err(WorkloadError::Setup("the QUIC runner panicked".into()))))
    });
    let (tcp, quic) = (tcp?, quic?);
    let mut flows = Vec::new();
    for (ids, result) in [(&tcp_ids, &tcp), (&quic_ids, &quic)] {
        for f in &result.flows {
            let mut f = f.clone();
            f.id = ids[f.id as usize];
            flows.push(f);
        }
    }
    flows.sort_by_key(|f| f.id);
    let elapsed_s = tcp.elapsed_s.max(quic.elapsed_s);
    Ok(BulkResult {
        start_us: tcp.start_us.min(quic.start_us),
        elapsed_s,
        goodput_bps: aggregate_goodput(&flows, spec.amount, elapsed_s),
        interrupted: tcp.interrupted || quic.interrupted,
        flows,
    })
}

/// Opens the span at the first runner's start and closes it at the later runner's end.
struct JointHook<'h> {
    inner: &'h dyn MeasureHook,
    opened: AtomicBool,
    /// How many runners closed, and the latest end so far.
    closes: Mutex<(u32, Option<Instant>)>,
}

impl MeasureHook for JointHook<'_> {
    fn open(&self, at: Instant) {
        if !self.opened.swap(true, Ordering::SeqCst) {
            self.inner.open(at);
        }
    }
    fn extend(&self, at: Instant) {
        self.inner.extend(at);
    }
    fn close(&self, at: Instant) {
        let mut c = lock(&self.closes);
        c.0 += 1;
        let end = c.1.map_or(at, |e| e.max(at));
        c.1 = Some(end);
        if c.0 == 2 {
            self.inner.close(end);
        } else {
            // Until the other runner ends, the span reaches at least this far.
            self.inner.extend(end);
        }
    }
}

/// Gives a runner's flows (numbered from 0) the mix's flow ids.
struct Relabel<'s> {
    inner: &'s dyn SeriesSink,
    ids: &'s [u32],
}

impl Relabel<'_> {
    fn map(&self, socket: SocketId) -> SocketId {
        match socket {
            SocketId::Flow(i) => SocketId::Flow(self.ids.get(i as usize).copied().unwrap_or(i)),
            other => other,
        }
    }
}

impl SeriesSink for Relabel<'_> {
    fn tcp_sample(&self, socket: SocketId, sample: &Sample) {
        self.inner.tcp_sample(self.map(socket), sample);
    }
    fn received(&self, flow: u32, point: &GoodputPoint) {
        self.inner.received(self.ids.get(flow as usize).copied().unwrap_or(flow), point);
    }
    fn quic_sample(&self, socket: SocketId, sample: &QuicSample) {
        self.inner.quic_sample(self.map(socket), sample);
    }
}
