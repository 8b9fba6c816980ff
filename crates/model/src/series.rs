//! A run's time series on disk. Every sample is written, as it is taken, to a gzip'd CSV file
//! under `OUT/series/run-NNN/`; memory holds only what the analysis needs and cannot get from
//! a summary computed later. So memory stays flat however long a run lasts, and result.json
//! stays small: it names the files instead of holding the samples.
//!
//! Files (one row per sample; columns are the field names below):
//! - `tcp.csv.gz`: each sending socket's `TCP_INFO`/`TCP_CC_INFO` every sample interval, and
//!   each QUIC sending connection's controller and statistics under the same column names
//!   (see [`TcpRow::of_quic`]);
//! - `goodput.csv.gz`: each bulk flow's cumulative bytes received, at the receiver;
//! - `link-down.csv.gz`, `link-up.csv.gz`: the emulator's per-interval figures per direction.

use std::collections::BTreeMap;
use std::fs::File;
use std::io::{self, BufReader, BufWriter, Write};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, MutexGuard};

/// One sample of the bottleneck link (the emulator's), as the series files hold it.
pub use crate::path::LinkSample;
use crate::path::SampleSink;
use crate::workload::{busy_cause, Cause, GoodputPoint, QuicSample, SeriesSink, SocketId};
use ccbench_kernel_tcp::Sample;
use flate2::read::MultiGzDecoder;
use flate2::write::GzEncoder;
use flate2::Compression;
use serde::{Deserialize, Serialize};

pub const TCP_FILE: &str = "tcp.csv.gz";
pub const GOODPUT_FILE: &str = "goodput.csv.gz";
pub const LINK_DOWN_FILE: &str = "link-down.csv.gz";
pub const LINK_UP_FILE: &str = "link-up.csv.gz";

/// Where a run's series are, relative to the directory that holds result.json.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq, schemars::JsonSchema)]
pub struct SeriesFiles {
    pub tcp: String,
    pub goodput: String,
    /// The emulator's files; `null` for a run over a real path (`--remote`).
    pub link_down: Option<String>,
    pub link_up: Option<String>,
}

impl SeriesFiles {
    fn under(rel_dir: &str) -> Self {
        SeriesFiles {
            tcp: format!("{rel_dir}/{TCP_FILE}"),
            goodput: format!("{rel_dir}/{GOODPUT_FILE}"),
            link_down: Some(format!("{rel_dir}/{LINK_DOWN_FILE}")),
            link_up: Some(format!("{rel_dir}/{LINK_UP_FILE}")),
        }
    }
}

/// One row of `tcp.csv.gz`.
#[derive(Clone, Debug, Default, Serialize, Deserialize, PartialEq, schemars::JsonSchema)]
pub struct TcpRow {
    /// `flow-N` for bulk flow N, `conn-PORT` for an HTTP connection by its client port.
    pub socket: String,
    pub t_us: u64,
    pub rtt_us: u32,
    pub min_rtt_us: u32,
    pub rttvar_us: u32,
    pub cwnd: u32,
    pub ssthresh: u32,
    /// Empty while the kernel reports none.
    pub pacing_rate_bps: Option<u64>,
    pub delivery_rate_bps: u64,
    pub bytes_acked: u64,
    pub bytes_sent: u64,
    pub bytes_retrans: u64,
    pub total_retrans: u32,
    pub segs_out: u32,
    pub lost: u32,
    pub unacked: u32,
    pub app_limited: bool,
    /// BBR's own view, while the socket runs BBR (empty otherwise).
    pub bbr_mode: Option<String>,
    pub bbr_bw_bps: Option<u64>,
    pub bbr_min_rtt_us: Option<u32>,
    pub bbr_pacing_gain: Option<f64>,
    pub bbr_cwnd_gain: Option<f64>,
    /// QUIC only (empty for kernel TCP): the latest RTT sample, the window in bytes (QUIC
    /// counts bytes; `cwnd` is this divided by the path MTU) and the bytes in flight.
    #[serde(default)]
    pub latest_rtt_us: Option<u32>,
    #[serde(default)]
    pub cwnd_bytes: Option<u64>,
    #[serde(default)]
    pub bytes_in_flight: Option<u64>,
    /// QUIC BBRv2/v3 only: the ProbeBW phase (`DOWN`, `CRUISE`, `REFILL`, `UP`) while
    /// `bbr_mode` is `PROBE_BW`; kernel BBRv1 does not report one.
    #[serde(default)]
    pub bbr_phase: Option<String>,
    /// Kernel TCP only (empty for QUIC and in files written before them): the state the
    /// limited-by accounting reads (see `ccbench_kernel_tcp::SampleState`): `tcpi_ca_state`,
    /// packets in flight, bytes not yet sent, the peer's window (bytes) and the chrono
    /// counters (busy, receive-window limited, send-buffer limited; µs).
    #[serde(default)]
    pub ca_state: Option<u8>,
    #[serde(default)]
    pub in_flight: Option<u32>,
    #[serde(default)]
    pub notsent_bytes: Option<u32>,
    #[serde(default)]
    pub snd_wnd: Option<u32>,
    #[serde(default)]
    pub busy_us: Option<u64>,
    #[serde(default)]
    pub rwnd_limited_us: Option<u64>,
    #[serde(default)]
    pub sndbuf_limited_us: Option<u64>,
    /// QUIC only (empty for kernel TCP, whose split of the busy time is sampled from
    /// `in_flight` and `cwnd`): our stack's cumulative time (µs) at the window, held by the
    /// pacer, and building and handing over packets below the window (the host's pace). For
    /// QUIC, `busy_us` is every state but nothing-to-send, `rwnd_limited_us` the peer's
    /// flow-control credit and `sndbuf_limited_us` the send window.
    #[serde(default)]
    pub cwnd_limited_us: Option<u64>,
    #[serde(default)]
    pub pacing_limited_us: Option<u64>,
    #[serde(default)]
    pub host_limited_us: Option<u64>,
    /// QUIC BBRv2/v3 only (empty for kernel TCP, whose TCP_CC_INFO has none of them, and in
    /// files written before them): the rest of the draft's model, for the conformance suite.
    /// `bbr_round_count` is BBR.round_count; where it is given, an empty bound is unset (∞).
    #[serde(default)]
    pub bbr_round_count: Option<u64>,
    #[serde(default)]
    pub bbr_full_bw_reached: Option<bool>,
    /// BBR.bw_shortterm, bits/s.
    #[serde(default)]
    pub bbr_bw_shortterm_bps: Option<u64>,
    /// BBR.inflight_longterm and BBR.inflight_shortterm, bytes.
    #[serde(default)]
    pub bbr_inflight_longterm: Option<u64>,
    #[serde(default)]
    pub bbr_inflight_shortterm: Option<u64>,
    /// BBR.extra_acked, bytes.
    #[serde(default)]
    pub bbr_extra_acked: Option<u64>,
    /// Reordering as the sender saw it (empty in files written before them). Kernel TCP:
    /// `tcpi_reordering` (the degree, packets), `tcpi_reord_seen` (times detected) and
    /// `tcpi_dsack_dups` (retransmissions the receiver reported duplicate: spurious ones);
    /// Linux counts its undone recoveries per namespace (`TcpExtTCP*Undo`), not per socket.
    /// QUIC: `reordering` is loss detection's packet threshold (3, raised past the reordering
    /// a spurious loss proved), the other two empty.
    #[serde(default)]
    pub reordering: Option<u32>,
    #[serde(default)]
    pub reord_seen: Option<u32>,
    #[serde(default)]
    pub dsack_dups: Option<u32>,
    /// QUIC only (empty for kernel TCP): congestion events the stack later found spurious and
    /// handed to the controller's undo, so far.
    #[serde(default)]
    pub spurious_losses: Option<u64>,
    /// QUIC BBRv2/v3 only (empty for kernel TCP and in files written before it):
    /// BBR.cycle_count, the max_bw filter's advances (§5.3.3.9 BBRAdvanceMaxBwFilter).
    #[serde(default)]
    pub bbr_cycle_count: Option<u64>,
    /// QUIC BBRv2/v3 only: BBR.probe_rtt_min_delay (§5.3.4.3), µs, and how long before the
    /// sample BBR.probe_rtt_min_stamp was set, µs (PROBE_RTT is due once it passes 5 s).
    #[serde(default)]
    pub bbr_probe_rtt_min_delay_us: Option<u32>,
    #[serde(default)]
    pub bbr_probe_rtt_min_age_us: Option<u64>,
}

pub fn socket_name(id: SocketId) -> String {
    match id {
        SocketId::Flow(n) => format!("flow-{n}"),
        SocketId::Connection(port) => format!("conn-{port}"),
    }
}

impl TcpRow {
    pub fn of(socket: SocketId, s: &Sample) -> Self {
        TcpRow {
            socket: socket_name(socket),
            t_us: s.t_us,
            rtt_us: s.rtt_us,
            min_rtt_us: s.min_rtt_us,
            rttvar_us: s.rttvar_us,
            cwnd: s.cwnd,
            ssthresh: s.ssthresh,
            pacing_rate_bps: (s.pacing_rate_bps != u64::MAX).then_some(s.pacing_rate_bps),
            delivery_rate_bps: s.delivery_rate_bps,
            bytes_acked: s.bytes_acked,
            bytes_sent: s.bytes_sent,
            bytes_retrans: s.bytes_retrans,
            total_retrans: s.total_retrans,
            segs_out: s.segs_out,
            lost: s.lost,
            unacked: s.unacked,
            app_limited: s.app_limited,
            bbr_mode: s.bbr.map(|b| serde_json::to_value(b.mode).ok().and_then(|v| v.as_str().map(str::to_string)).unwrap_or_default()),
            bbr_bw_bps: s.bbr.map(|b| b.bw_bps),
            bbr_min_rtt_us: s.bbr.map(|b| b.min_rtt_us),
            bbr_pacing_gain: s.bbr.map(|b| b.pacing_gain),
            bbr_cwnd_gain: s.bbr.map(|b| b.cwnd_gain),
            latest_rtt_us: None,
            cwnd_bytes: None,
            bytes_in_flight: None,
            bbr_phase: None,
            ca_state: Some(s.state.ca_state),
            in_flight: Some(s.state.in_flight),
            notsent_bytes: Some(s.state.notsent_bytes),
            snd_wnd: Some(s.state.snd_wnd),
            busy_us: Some(s.state.busy_us),
            rwnd_limited_us: Some(s.state.rwnd_limited_us),
            sndbuf_limited_us: Some(s.state.sndbuf_limited_us),
            cwnd_limited_us: None,
            pacing_limited_us: None,
            host_limited_us: None,
            bbr_round_count: None,
            bbr_full_bw_reached: None,
            bbr_bw_shortterm_bps: None,
            bbr_inflight_longterm: None,
            bbr_inflight_shortterm: None,
            bbr_extra_acked: None,
            reordering: Some(s.state.reordering),
            reord_seen: Some(s.state.reord_seen),
            dsack_dups: Some(s.state.dsack_dups),
            spurious_losses: None,
            bbr_cycle_count: None,
            bbr_probe_rtt_min_delay_us: None,
            bbr_probe_rtt_min_age_us: None,
        }
    }

    /// A QUIC sample under TCP's names where they mean the same: `rtt_us` is the smoothed RTT,
    /// `cwnd`, `ssthresh` and `unacked` are in packets of the path MTU (as TCP's are in
    /// segments), `bytes_retrans` and `lost` count what QUIC declared lost (it resends the data
    /// of a lost packet in new packets), `segs_out` the packets sent. What TCP lacks comes in
    /// `latest_rtt_us`, `cwnd_bytes` and `bytes_in_flight`; BBR's state in `bbr_mode`.
    pub fn of_quic(socket: SocketId, q: &QuicSample) -> Self {
        let mtu = u64::from(q.mtu.max(1));
        let packets = |bytes: u64| u32::try_from(bytes / mtu).unwrap_or(u32::MAX);
        let count = |n: u64| u32::try_from(n).unwrap_or(u32::MAX);
        let model = q.bbr.as_ref().and_then(|b| b.model);
        TcpRow {
            socket: socket_name(socket),
            t_us: q.t_us,
            rtt_us: q.rtt_us,
            min_rtt_us: q.min_rtt_us,
            rttvar_us: q.rttvar_us,
            cwnd: packets(q.cwnd_bytes),
            // TCP's "not yet set" where the controller has none or an unbounded one.
            ssthresh: q.ssthresh_bytes.map_or(0x7fff_ffff, packets).min(0x7fff_ffff),
            pacing_rate_bps: q.pacing_rate_bps,
            delivery_rate_bps: q.delivery_rate_bps,
            bytes_acked: q.bytes_acked,
            bytes_sent: q.bytes_sent,
            bytes_retrans: q.bytes_lost,
            total_retrans: count(q.packets_lost),
            segs_out: count(q.packets_sent),
            lost: count(q.packets_lost),
            unacked: packets(q.bytes_in_flight),
            app_limited: q.app_limited,
            bbr_mode: q.bbr.as_ref().map(|b| b.state.clone()),
            bbr_bw_bps: q.bbr.as_ref().map(|b| b.max_bw_bps),
            bbr_min_rtt_us: q.bbr.as_ref().and_then(|b| b.min_rtt_us),
            bbr_pacing_gain: q.bbr.as_ref().map(|b| b.pacing_gain),
            bbr_cwnd_gain: q.bbr.as_ref().map(|b| b.cwnd_gain),
            latest_rtt_us: Some(q.latest_rtt_us),
            cwnd_bytes: Some(q.cwnd_bytes),
            bytes_in_flight: Some(q.bytes_in_flight),
            bbr_phase: q.bbr.as_ref().and_then(|b| b.phase.clone()),
            ca_state: None,
            in_flight: None,
            notsent_bytes: None,
            snd_wnd: None,
            busy_us: q.send_states_us.map(|t| t.cwnd + t.pacing + t.host + t.flow_control + t.send_window + t.other),
            rwnd_limited_us: q.send_states_us.map(|t| t.flow_control),
            sndbuf_limited_us: q.send_states_us.map(|t| t.send_window),
            cwnd_limited_us: q.send_states_us.map(|t| t.cwnd),
            pacing_limited_us: q.send_states_us.map(|t| t.pacing),
            host_limited_us: q.send_states_us.map(|t| t.host),
            bbr_round_count: model.map(|m| m.round_count),
            bbr_full_bw_reached: model.map(|m| m.full_bw_reached),
            bbr_bw_shortterm_bps: model.and_then(|m| m.bw_shortterm_bps),
            bbr_inflight_longterm: model.and_then(|m| m.inflight_longterm_bytes),
            bbr_inflight_shortterm: model.and_then(|m| m.inflight_shortterm_bytes),
            bbr_extra_acked: model.map(|m| m.extra_acked_bytes),
            reordering: q.packet_threshold,
            reord_seen: None,
            dsack_dups: None,
            spurious_losses: Some(q.spurious_congestion_events),
            bbr_cycle_count: model.and_then(|m| m.cycle_count),
            bbr_probe_rtt_min_delay_us: model.and_then(|m| m.probe_rtt_min_delay_us),
            bbr_probe_rtt_min_age_us: model.and_then(|m| m.probe_rtt_min_age_us),
        }
    }
}

/// The split of the interval between two rows of a series (`tcp.csv.gz`) into the causes, in
/// µs: the same rules as [`crate::workload::Account`] for kernel TCP rows, our stack's states for QUIC rows
/// (`cwnd_limited_us` present). `None` without the counters (files written before them) or
/// when `now` is before `prev`; all `unknown` when a counter went back (another socket).
pub fn interval_split(prev: &TcpRow, now: &TcpRow, saturating: bool) -> Option<[(Cause, f64); 7]> {
    let dt = now.t_us.checked_sub(prev.t_us)? as f64;
    let d = |a: Option<u64>, b: Option<u64>| Some(b?.saturating_sub(a?) as f64);
    // A cumulative counter that went back belongs to another socket (a connection's name
    // reused by a later one with the same port): what held this interval is not known, and a
    // zero busy delta would otherwise count all of it as the application's.
    let back = |a: Option<u64>, b: Option<u64>| matches!((a, b), (Some(a), Some(b)) if b < a);
    let counters = |r: &TcpRow| [r.busy_us, r.rwnd_limited_us, r.sndbuf_limited_us, r.cwnd_limited_us, r.pacing_limited_us, r.host_limited_us];
    if counters(prev).iter().zip(counters(now)).any(|(&a, b)| back(a, b)) {
        d(prev.busy_us, now.busy_us)?;
        let mut t = Cause::ALL.map(|c| (c, 0.0));
        t[6].1 = dt;
        return Some(t);
    }
    let busy = d(prev.busy_us, now.busy_us)?.min(dt);
    let rwnd = d(prev.rwnd_limited_us, now.rwnd_limited_us)?;
    let sndbuf = d(prev.sndbuf_limited_us, now.sndbuf_limited_us)?;
    let mut t = [
        (Cause::Cwnd, 0.0),
        (Cause::Pacing, 0.0),
        (Cause::Host, 0.0),
        (Cause::Rwnd, rwnd),
        (Cause::Sndbuf, sndbuf),
        (Cause::App, dt - busy),
        (Cause::Unknown, 0.0),
    ];
    if let (Some(c), Some(p), Some(h)) =
        (d(prev.cwnd_limited_us, now.cwnd_limited_us), d(prev.pacing_limited_us, now.pacing_limited_us), d(prev.host_limited_us, now.host_limited_us))
    {
        t[0].1 = c;
        t[1].1 = p;
        t[2].1 = h;
    } else {
        let sending = (busy - rwnd - sndbuf).max(0.0);
        let i = match busy_cause(now.in_flight?, now.cwnd, now.app_limited, now.notsent_bytes, saturating) {
            Cause::Cwnd => 0,
            Cause::Sndbuf => 4,
            Cause::App => 5,
            _ => 1,
        };
        t[i].1 += sending;
    }
    let known: f64 = t.iter().map(|x| x.1.max(0.0)).sum();
    t[6].1 = (dt - known).max(0.0);
    Some(t)
}

/// One row of `goodput.csv.gz`.
#[derive(Clone, Copy, Debug, Serialize, Deserialize, PartialEq, schemars::JsonSchema)]
pub struct GoodputRow {
    pub flow: u32,
    pub t_us: u64,
    pub bytes: u64,
}

/// A CSV writer into a gzip stream. Level 1: the writers run on the sampler and forwarder
/// threads, where time matters more than a few percent of disk.
struct CsvGz {
    csv: csv::Writer<GzEncoder<BufWriter<File>>>,
}

impl CsvGz {
    fn create(path: &Path) -> io::Result<Self> {
        let file = File::create(path).map_err(|e| io::Error::new(e.kind(), format!("creating {}: {e}", path.display())))?;
        let gz = GzEncoder::new(BufWriter::with_capacity(64 * 1024, file), Compression::fast());
        Ok(CsvGz { csv: csv::Writer::from_writer(gz) })
    }

    fn row<T: Serialize>(&mut self, row: &T) -> io::Result<()> {
        self.csv.serialize(row).map_err(io::Error::other)
    }

    /// Writes the gzip trailer and flushes the file.
    fn finish(self) -> io::Result<()> {
        let gz = self.csv.into_inner().map_err(|e| io::Error::other(e.to_string()))?;
        gz.finish()?.flush()
    }
}

/// The first error any writer of a run met; the run fails with it (its series are incomplete).
type ErrorSlot = Arc<Mutex<Option<String>>>;

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

fn note(slot: &ErrorSlot, what: &str, e: io::Error) {
    lock(slot).get_or_insert_with(|| format!("writing the time series ({what}): {e}"));
}

/// Exact counts of the integer values seen: exact quantiles in memory bounded by the number of
/// distinct values (RTTs in µs span a few thousand values), not by the number of samples.
#[derive(Default, Debug, Clone)]
pub struct ExactCounts {
    counts: BTreeMap<u32, u64>,
    n: u64,
}

impl ExactCounts {
    pub fn record(&mut self, v: u32) {
        *self.counts.entry(v).or_insert(0) += 1;
        self.n += 1;
    }

    pub fn len(&self) -> u64 {
        self.n
    }

    /// Adds every value `other` counted.
    pub fn merge(&mut self, other: &ExactCounts) {
        for (v, c) in other.iter() {
            *self.counts.entry(v).or_insert(0) += c;
        }
        self.n += other.n;
    }

    pub fn is_empty(&self) -> bool {
        self.n == 0
    }

    /// Each distinct value with its count, ascending.
    pub fn iter(&self) -> impl Iterator<Item = (u32, u64)> + '_ {
        self.counts.iter().map(|(&v, &c)| (v, c))
    }

    /// The value of rank `rank` (0-based) in ascending order.
    fn at_rank(&self, rank: u64) -> u32 {
        let mut seen = 0;
        for (&v, &c) in &self.counts {
            seen += c;
            if rank < seen {
                return v;
            }
        }
        *self.counts.keys().next_back().expect("rank within a non-empty set")
    }

    /// `ccbench_stats::quantile` (linear interpolation between order statistics) of the values
    /// divided by `scale`, computed with the same arithmetic, so the result is identical to
    /// sorting every value.
    pub fn quantile(&self, q: f64, scale: f64) -> Option<f64> {
        if self.n == 0 || q.is_nan() {
            return None;
        }
        let q = q.clamp(0.0, 1.0);
        let h = (self.n - 1) as f64 * q;
        let lo = (h.floor() as u64).min(self.n - 1);
        let hi = (lo + 1).min(self.n - 1);
        let frac = h - lo as f64;
        let a = f64::from(self.at_rank(lo)) / scale;
        if frac == 0.0 || lo == hi {
            Some(a)
        } else {
            let b = f64::from(self.at_rank(hi)) / scale;
            Some(a + frac * (b - a))
        }
    }
}

/// What the analysis keeps of a run's series in memory.
#[derive(Debug, Default, Clone)]
pub struct SeriesSummary {
    /// Every nonzero sender RTT sample of every sending socket, in µs.
    pub rtt_us: ExactCounts,
    /// The same per bulk flow (`SocketId::Flow`), for each algorithm's own RTT in a mix.
    pub rtt_us_by_flow: BTreeMap<u32, ExactCounts>,
    /// The run's goodput file, to be read again (one streaming pass) for the sharing figures.
    pub goodput_path: Option<PathBuf>,
    /// The delivery rate (bit/s) of the first sending socket to leave Startup or slow start.
    pub lock_on_bps: Option<u64>,
    /// The emulator's files per direction (read again for the queue figures).
    pub link_down_path: Option<PathBuf>,
    pub link_up_path: Option<PathBuf>,
}

/// The sink of one run: a [`SeriesSink`] for the workload, and [`link_sink`](Self::link_sink)
/// for each direction of the emulator.
pub struct RunSeries {
    dir: PathBuf,
    files: SeriesFiles,
    tcp: Mutex<Option<CsvGz>>,
    goodput: Mutex<Option<CsvGz>>,
    rtt_us: Mutex<ExactCounts>,
    rtt_us_by_flow: Mutex<BTreeMap<u32, ExactCounts>>,
    lock_on_bps: Mutex<Option<u64>>,
    error: ErrorSlot,
}

impl RunSeries {
    /// Creates `base/rel_dir` and the workload's files in it.
    pub fn create(base: &Path, rel_dir: &str) -> io::Result<Self> {
        let dir = base.join(rel_dir);
        std::fs::create_dir_all(&dir).map_err(|e| io::Error::new(e.kind(), format!("creating {}: {e}", dir.display())))?;
        Ok(RunSeries {
            tcp: Mutex::new(Some(CsvGz::create(&dir.join(TCP_FILE))?)),
            goodput: Mutex::new(Some(CsvGz::create(&dir.join(GOODPUT_FILE))?)),
            dir,
            files: SeriesFiles::under(rel_dir),
            rtt_us: Mutex::new(ExactCounts::default()),
            rtt_us_by_flow: Mutex::new(BTreeMap::new()),
            lock_on_bps: Mutex::new(None),
            error: Arc::new(Mutex::new(None)),
        })
    }

    /// A writer of one direction's emulator samples, for `EmulatedPath::start_streaming`. It
    /// finishes its file when dropped (when the forwarder ends).
    pub fn link_sink(&self, direction: &str) -> io::Result<Box<dyn SampleSink>> {
        let name = if direction == "up" { LINK_UP_FILE } else { LINK_DOWN_FILE };
        Ok(Box::new(LinkWriter { out: Some(CsvGz::create(&self.dir.join(name))?), what: name, error: self.error.clone() }))
    }

    /// A run over a real path: no emulator, so no link files to name.
    pub fn without_link_files(mut self) -> Self {
        self.files.link_down = None;
        self.files.link_up = None;
        self
    }

    /// Finishes the workload's files. Call after the path has finished (its forwarders have
    /// closed the link files). Returns the files and the summary, or the first write error.
    pub fn finish(self) -> (SeriesFiles, SeriesSummary, Option<String>) {
        for (slot, what) in [(&self.tcp, TCP_FILE), (&self.goodput, GOODPUT_FILE)] {
            if let Some(w) = lock(slot).take() {
                if let Err(e) = w.finish() {
                    note(&self.error, what, e);
                }
            }
        }
        let error = lock(&self.error).clone();
        let summary = SeriesSummary {
            rtt_us: std::mem::take(&mut *lock(&self.rtt_us)),
            rtt_us_by_flow: std::mem::take(&mut *lock(&self.rtt_us_by_flow)),
            goodput_path: Some(self.dir.join(GOODPUT_FILE)),
            lock_on_bps: *lock(&self.lock_on_bps),
            link_down_path: self.files.link_down.as_ref().map(|_| self.dir.join(LINK_DOWN_FILE)),
            link_up_path: self.files.link_up.as_ref().map(|_| self.dir.join(LINK_UP_FILE)),
        };
        (self.files, summary, error)
    }
}

impl RunSeries {
    /// A sender RTT sample (0: not yet measured, not an RTT), for the run and for its flow.
    fn record_rtt(&self, socket: SocketId, rtt_us: u32) {
        if rtt_us == 0 {
            return;
        }
        lock(&self.rtt_us).record(rtt_us);
        if let SocketId::Flow(flow) = socket {
            lock(&self.rtt_us_by_flow).entry(flow).or_default().record(rtt_us);
        }
    }
}

impl SeriesSink for RunSeries {
    fn tcp_sample(&self, socket: SocketId, sample: &Sample) {
        self.record_rtt(socket, sample.rtt_us);
        // Kernel BBR says its mode; every other algorithm leaves slow start at its first
        // reduction, when ssthresh stops being TCP_INFINITE_SSTHRESH (include/net/tcp.h).
        // Before BBR's first ACK its gains read 0 (mode Unknown): that is not leaving Startup,
        // and counting it made every run's lock-on rate 0.
        let left_startup = match &sample.bbr {
            Some(b) => matches!(b.mode, ccbench_kernel_tcp::BbrMode::Drain | ccbench_kernel_tcp::BbrMode::ProbeBw | ccbench_kernel_tcp::BbrMode::ProbeRtt),
            None => sample.ssthresh != 0 && sample.ssthresh != 0x7fff_ffff,
        };
        if left_startup {
            lock(&self.lock_on_bps).get_or_insert(sample.delivery_rate_bps);
        }
        if let Some(w) = lock(&self.tcp).as_mut() {
            if let Err(e) = w.row(&TcpRow::of(socket, sample)) {
                note(&self.error, TCP_FILE, e);
            }
        }
    }

    fn quic_sample(&self, socket: SocketId, sample: &QuicSample) {
        self.record_rtt(socket, sample.rtt_us);
        let left_startup = match &sample.bbr {
            Some(b) => b.state != "STARTUP",
            None => sample.ssthresh_bytes.is_some(),
        };
        if left_startup {
            lock(&self.lock_on_bps).get_or_insert(sample.delivery_rate_bps);
        }
        if let Some(w) = lock(&self.tcp).as_mut() {
            if let Err(e) = w.row(&TcpRow::of_quic(socket, sample)) {
                note(&self.error, TCP_FILE, e);
            }
        }
    }

    fn received(&self, flow: u32, point: &GoodputPoint) {
        if let Some(w) = lock(&self.goodput).as_mut() {
            if let Err(e) = w.row(&GoodputRow { flow, t_us: point.t_us, bytes: point.bytes }) {
                note(&self.error, GOODPUT_FILE, e);
            }
        }
    }
}

struct LinkWriter {
    out: Option<CsvGz>,
    what: &'static str,
    error: ErrorSlot,
}

impl SampleSink for LinkWriter {
    fn push(&mut self, s: &LinkSample) {
        if let Some(w) = self.out.as_mut() {
            if let Err(e) = w.row(s) {
                note(&self.error, self.what, e);
                self.out = None;
            }
        }
    }
}

impl Drop for LinkWriter {
    fn drop(&mut self) {
        if let Some(w) = self.out.take() {
            if let Err(e) = w.finish() {
                note(&self.error, self.what, e);
            }
        }
    }
}

/// Reads a series file row by row, calling `f` for each, in constant memory.
pub fn for_each_row<T: for<'de> Deserialize<'de>>(path: &Path, mut f: impl FnMut(T)) -> io::Result<()> {
    let file = File::open(path).map_err(|e| io::Error::new(e.kind(), format!("opening {}: {e}", path.display())))?;
    let mut reader = csv::Reader::from_reader(MultiGzDecoder::new(BufReader::new(file)));
    for row in reader.deserialize::<T>() {
        f(row.map_err(|e| io::Error::new(io::ErrorKind::InvalidData, format!("{}: {e}", path.display())))?);
    }
    Ok(())
}

/// Bytes each flow had received by each of `instants` (µs since the epoch): for each flow, the
/// last goodput point at or before the instant (0 before the first). One streaming pass over
/// the file; `out[flow][i]` answers `instants[i]`. `instants` must be ascending.
pub fn received_at(goodput: &Path, flows: usize, instants: &[u64]) -> io::Result<Vec<Vec<u64>>> {
    debug_assert!(instants.windows(2).all(|w| w[0] <= w[1]));
    let mut out = vec![vec![0u64; instants.len()]; flows];
    // Per flow: the next instant not yet passed, and the bytes of its last point so far.
    let mut next = vec![0usize; flows];
    let mut last = vec![0u64; flows];
    for_each_row(goodput, |r: GoodputRow| {
        let f = r.flow as usize;
        if f >= flows {
            return;
        }
        while next[f] < instants.len() && instants[next[f]] < r.t_us {
            out[f][next[f]] = last[f];
            next[f] += 1;
        }
        last[f] = r.bytes;
    })?;
    for ((row, &from), &bytes) in out.iter_mut().zip(&next).zip(&last) {
        row[from..].fill(bytes);
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::{Rng, SeedableRng};

    /// A kernel TCP row at `t_us` with its chrono counters (busy, rwnd, sndbuf; µs).
    fn tcp(t_us: u64, busy: u64, rwnd: u64, sndbuf: u64) -> TcpRow {
        TcpRow {
            socket: "flow-0".into(),
            t_us,
            cwnd: 100,
            in_flight: Some(100),
            busy_us: Some(busy),
            rwnd_limited_us: Some(rwnd),
            sndbuf_limited_us: Some(sndbuf),
            ..TcpRow::default()
        }
    }

    fn split(prev: &TcpRow, now: &TcpRow, saturating: bool) -> Vec<(&'static str, f64)> {
        interval_split(prev, now, saturating).expect("a split").iter().map(|(c, us)| (c.name(), *us)).collect()
    }

    fn expect(cwnd: f64, pacing: f64, host: f64, rwnd: f64, sndbuf: f64, app: f64, unknown: f64) -> Vec<(&'static str, f64)> {
        let v = [cwnd, pacing, host, rwnd, sndbuf, app, unknown];
        Cause::ALL.iter().zip(v).map(|(c, us)| (c.name(), us)).collect()
    }

    #[test]
    fn a_kernel_interval_splits_busy_time_by_the_window_at_its_end() {
        // 10 ms: busy 8 ms, of which 3 ms receive-window and 1 ms send-buffer limited; the
        // 4 ms left went to the window (in flight 100 of a 100 window); 2 ms idle (app).
        let (a, b) = (tcp(1_000_000, 50_000, 7_000, 2_000), tcp(1_010_000, 58_000, 10_000, 3_000));
        assert_eq!(split(&a, &b, false), expect(4_000.0, 0.0, 0.0, 3_000.0, 1_000.0, 2_000.0, 0.0));
        // In flight well below the window, data unsent: the pacer held those 4 ms.
        let below = TcpRow { in_flight: Some(20), notsent_bytes: Some(64_000), ..b.clone() };
        assert_eq!(split(&a, &below, false), expect(0.0, 4_000.0, 0.0, 3_000.0, 1_000.0, 2_000.0, 0.0));
        // Below the window, nothing unsent and the rate sample app-limited: the application's,
        // or the send buffer's when the application always had more (a saturating load).
        let starved = TcpRow { in_flight: Some(20), notsent_bytes: Some(0), app_limited: true, ..b.clone() };
        assert_eq!(split(&a, &starved, false), expect(0.0, 0.0, 0.0, 3_000.0, 1_000.0, 6_000.0, 0.0));
        assert_eq!(split(&a, &starved, true), expect(0.0, 0.0, 0.0, 3_000.0, 5_000.0, 2_000.0, 0.0));
    }

    #[test]
    fn interval_boundaries_bound_the_split_to_the_interval() {
        let a = tcp(2_000, 100, 0, 0);
        // Busy counted past the interval's end (the chrono and the sample clock differ) is cut
        // to the interval: 1 ms busy at most, nothing idle.
        assert_eq!(split(&a, &tcp(3_000, 1_600, 0, 0), false), expect(1_000.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0));
        // Two rows at the same time: an empty interval, nothing to anyone.
        assert_eq!(split(&a, &tcp(2_000, 100, 0, 0), false), expect(0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0));
        // A row before its predecessor is no interval.
        assert_eq!(interval_split(&a, &tcp(1_999, 100, 0, 0), false), None);
        // Without the counters (files written before them) there is no split.
        let old = TcpRow { busy_us: None, ..tcp(3_000, 0, 0, 0) };
        assert_eq!(interval_split(&a, &old, false), None);
        assert_eq!(interval_split(&old, &a, false), None);
    }

    #[test]
    fn a_gap_between_samples_is_split_as_one_interval_whose_parts_sum_to_it() {
        // 2 s without a sample: busy 1.5 s (0.5 s of it rwnd-limited), 0.5 s idle.
        let (a, b) = (tcp(1_000_000, 0, 0, 0), tcp(3_000_000, 1_500_000, 500_000, 0));
        let parts = split(&a, &b, false);
        assert_eq!(parts, expect(1_000_000.0, 0.0, 0.0, 500_000.0, 0.0, 500_000.0, 0.0));
        assert_eq!(parts.iter().map(|p| p.1).sum::<f64>(), 2_000_000.0);
    }

    #[test]
    fn a_counter_that_went_back_leaves_the_interval_unknown() {
        // A later connection under the same name starts its counters from zero: the interval
        // is not the application's (busy delta 0) but unknown.
        let (a, b) = (tcp(1_000_000, 900_000, 10_000, 0), tcp(1_010_000, 4_000, 0, 0));
        assert_eq!(split(&a, &b, false), expect(0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 10_000.0));
        let quic = |t, cwnd| TcpRow { cwnd_limited_us: Some(cwnd), pacing_limited_us: Some(0), host_limited_us: Some(0), ..tcp(t, cwnd, 0, 0) };
        assert_eq!(split(&quic(0, 5_000), &quic(1_000, 10), false), expect(0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 1_000.0));
    }

    #[test]
    fn quic_rows_split_by_the_stacks_own_states() {
        // Our stack's states over 10 ms: window 5, pacer 2, host 1, flow control 0.5, send
        // window 0.5 and 1 ms in another state (busy, none of these): unknown; idle 0 ms.
        let quic = |t, k: u64| TcpRow {
            socket: "flow-0".into(),
            t_us: t,
            busy_us: Some(10_000 * k),
            rwnd_limited_us: Some(500 * k),
            sndbuf_limited_us: Some(500 * k),
            cwnd_limited_us: Some(5_000 * k),
            pacing_limited_us: Some(2_000 * k),
            host_limited_us: Some(1_000 * k),
            ..TcpRow::default()
        };
        assert_eq!(split(&quic(50_000, 1), &quic(60_000, 2), false), expect(5_000.0, 2_000.0, 1_000.0, 500.0, 500.0, 0.0, 1_000.0));
    }

    #[test]
    fn empty_and_one_sample_series_have_no_interval() {
        // The report splits consecutive rows of a socket (`windows(2)`): none for 0 or 1 rows.
        let sum = |rows: &[TcpRow]| -> f64 { rows.windows(2).filter_map(|w| interval_split(&w[0], &w[1], false)).flat_map(|p| p.map(|x| x.1)).sum() };
        assert_eq!(sum(&[]), 0.0);
        assert_eq!(sum(&[tcp(5_000, 100, 0, 0)]), 0.0);
        assert_eq!(sum(&[tcp(5_000, 100, 0, 0), tcp(6_000, 600, 0, 0), tcp(8_000, 2_600, 0, 0)]), 3_000.0);
    }

    #[test]
    fn exact_counts_give_the_same_quantiles_as_sorting_every_value() {
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(3);
        for trial in 0..300 {
            let n = rng.gen_range(1..400);
            let spread = [3u32, 50, 40_000][trial % 3];
            let xs: Vec<u32> = (0..n).map(|_| 20_000 + rng.gen_range(0..spread)).collect();
            let mut counts = ExactCounts::default();
            xs.iter().for_each(|&x| counts.record(x));
            let mut sorted: Vec<f64> = xs.iter().map(|&x| f64::from(x) / 1000.0).collect();
            sorted.sort_by(f64::total_cmp);
            for q in [0.0, 0.05, 0.25, 0.5, 0.95, 0.99, 1.0, rng.gen::<f64>()] {
                assert_eq!(counts.quantile(q, 1000.0), Some(ccbench_stats::quantile(&sorted, q)), "n {n} q {q}");
            }
        }
        assert_eq!(ExactCounts::default().quantile(0.5, 1.0), None);
    }

    fn temp_dir(name: &str) -> PathBuf {
        let d = std::env::temp_dir().join(format!("ccbench-series-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&d);
        d
    }

    #[test]
    fn samples_round_trip_through_the_files() {
        let base = temp_dir("roundtrip");
        let series = RunSeries::create(&base, "series/run-000").unwrap();
        let mut link = series.link_sink("down").unwrap();
        let mut s = Sample {
            t_us: 1_000,
            rtt_us: 20_500,
            min_rtt_us: 20_000,
            rttvar_us: 100,
            cwnd: 10,
            ssthresh: 0x7fff_ffff,
            pacing_rate_bps: u64::MAX,
            delivery_rate_bps: 0,
            bytes_acked: 0,
            bytes_sent: 0,
            bytes_retrans: 0,
            total_retrans: 0,
            segs_out: 0,
            lost: 0,
            unacked: 0,
            app_limited: false,
            bbr: None,
            state: Default::default(),
        };
        series.tcp_sample(SocketId::Flow(0), &s);
        s.t_us = 11_000;
        s.rtt_us = 0; // not yet measured: written, but not an RTT
        series.tcp_sample(SocketId::Connection(40_000), &s);
        series.received(0, &GoodputPoint { t_us: 5, bytes: 100 });
        link.push(&LinkSample { t_us: 10_000, backlog_bytes: 3000, ..Default::default() });
        drop(link);
        let (files, summary, error) = series.finish();
        assert_eq!(error, None);
        assert_eq!(files.tcp, "series/run-000/tcp.csv.gz");
        assert_eq!(summary.rtt_us.len(), 1);
        // Per flow: a bulk flow's samples, not a connection's.
        assert_eq!(summary.rtt_us_by_flow.keys().copied().collect::<Vec<_>>(), vec![0]);
        assert_eq!(summary.rtt_us_by_flow[&0].quantile(0.5, 1000.0), Some(20.5));
        let mut rows: Vec<TcpRow> = Vec::new();
        for_each_row(&base.join(&files.tcp), |r| rows.push(r)).unwrap();
        assert_eq!(rows.len(), 2);
        assert_eq!((rows[0].socket.as_str(), rows[0].rtt_us, rows[0].cwnd), ("flow-0", 20_500, 10));
        assert_eq!(rows[1].socket, "conn-40000");
        let mut links: Vec<LinkSample> = Vec::new();
        for_each_row(&base.join(files.link_down.as_deref().unwrap()), |r| links.push(r)).unwrap();
        assert_eq!(links.len(), 1);
        assert_eq!(links[0].backlog_bytes, 3000);
        let mut g: Vec<GoodputRow> = Vec::new();
        for_each_row(&base.join(&files.goodput), |r| g.push(r)).unwrap();
        assert_eq!(g, vec![GoodputRow { flow: 0, t_us: 5, bytes: 100 }]);
        let _ = std::fs::remove_dir_all(base);
    }

    #[test]
    fn a_quic_sample_takes_tcp_names_in_tcp_units() {
        let q = crate::workload::QuicSample {
            t_us: 7,
            rtt_us: 8_800,
            min_rtt_us: 6_100,
            latest_rtt_us: 9_000,
            rttvar_us: 400,
            cwnd_bytes: 145_200,
            ssthresh_bytes: Some(u64::MAX),
            mtu: 1452,
            bytes_in_flight: 14_520,
            pacing_rate_bps: Some(70_000_000),
            packets_lost: 3,
            packets_sent: 1000,
            ..Default::default()
        };
        let r = TcpRow::of_quic(SocketId::Flow(2), &q);
        assert_eq!((r.socket.as_str(), r.rtt_us, r.min_rtt_us, r.cwnd, r.unacked), ("flow-2", 8_800, 6_100, 100, 10));
        assert_eq!(r.ssthresh, 0x7fff_ffff, "an unbounded ssthresh reads as TCP's unset");
        assert_eq!((r.lost, r.total_retrans, r.segs_out), (3, 3, 1000));
        assert_eq!((r.latest_rtt_us, r.cwnd_bytes, r.bytes_in_flight), (Some(9_000), Some(145_200), Some(14_520)));
        assert_eq!(r.bbr_mode, None);
    }

    /// Kernel BBR's gains read 0 (mode unknown) until its first ACK: that is not leaving
    /// Startup; the lock-on rate is the one when it first shows Drain or ProbeBW.
    #[test]
    fn lock_on_is_the_rate_when_kernel_bbr_leaves_startup() {
        let base = temp_dir("lock-on");
        let series = RunSeries::create(&base, "s").unwrap();
        let at = |mode: ccbench_kernel_tcp::BbrMode, delivery_rate_bps: u64| Sample {
            t_us: 0,
            rtt_us: 40_000,
            min_rtt_us: 40_000,
            rttvar_us: 0,
            cwnd: 10,
            ssthresh: 0x7fff_ffff,
            pacing_rate_bps: 0,
            delivery_rate_bps,
            bytes_acked: 0,
            bytes_sent: 0,
            bytes_retrans: 0,
            total_retrans: 0,
            segs_out: 0,
            lost: 0,
            unacked: 0,
            app_limited: false,
            bbr: Some(ccbench_kernel_tcp::BbrInfo { bw_bps: 0, min_rtt_us: 40_000, pacing_gain: 0.0, cwnd_gain: 0.0, mode }),
            state: Default::default(),
        };
        use ccbench_kernel_tcp::BbrMode::*;
        for (mode, rate) in [(Unknown, 0), (Startup, 30_000_000), (Drain, 45_000_000), (ProbeBw, 50_000_000)] {
            series.tcp_sample(SocketId::Flow(0), &at(mode, rate));
        }
        let (_, summary, _) = series.finish();
        assert_eq!(summary.lock_on_bps, Some(45_000_000));
        let _ = std::fs::remove_dir_all(base);
    }

    #[test]
    fn received_at_is_the_last_point_at_or_before_each_instant() {
        let base = temp_dir("received");
        let series = RunSeries::create(&base, "s").unwrap();
        // Flow 0 every 10 µs from t=10, flow 1 every 25 µs from t=25, interleaved as they come.
        let mut pts: Vec<(u32, u64)> = (1..=10).map(|i| (0, i * 10)).chain((1..=4).map(|i| (1, i * 25))).collect();
        pts.sort_by_key(|&(_, t)| t);
        for (f, t) in pts {
            series.received(f, &GoodputPoint { t_us: t, bytes: t * (u64::from(f) + 1) });
        }
        let (_, summary, _) = series.finish();
        let instants = [0, 9, 10, 24, 25, 26, 100, 1_000];
        let got = received_at(summary.goodput_path.as_ref().unwrap(), 3, &instants).unwrap();
        assert_eq!(got[0], vec![0, 0, 10, 20, 20, 20, 100, 100]);
        assert_eq!(got[1], vec![0, 0, 0, 0, 50, 50, 200, 200]);
        assert_eq!(got[2], vec![0; 8], "a flow with no points received nothing");
        let _ = std::fs::remove_dir_all(base);
    }
}
