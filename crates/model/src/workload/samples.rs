//! Where a workload's time series go as they are taken. A workload hands every `TCP_INFO`
//! sample of a sending socket, and every receiver-side goodput point of a bulk flow, to a
//! [`SeriesSink`] the moment it is taken, and keeps none itself: a streaming sink (a file
//! writer with running summaries) keeps memory flat however long a run lasts.

use std::collections::BTreeMap;
use std::sync::Mutex;

use ccbench_kernel_tcp::Sample;
use serde::{Deserialize, Serialize};

/// Cumulative bytes received by one flow at time `t_us`.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct GoodputPoint {
    pub t_us: u64,
    pub bytes: u64,
}

/// Which sending socket a sample belongs to, within one run.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum SocketId {
    /// A bulk or file flow, by its id (0, 1, … in the order the flows were planned).
    Flow(u32),
    /// An HTTP connection (objects, page), by the client's port.
    Connection(u16),
}

/// Receives a run's time series as they are taken. Called from the workload's sampler thread
/// and, for connections accepted by a server, from its tasks: implementations synchronise
/// themselves and must be quick.
pub trait SeriesSink: Sync {
    /// One `TCP_INFO`/`TCP_CC_INFO` sample of a sending socket.
    fn tcp_sample(&self, socket: SocketId, sample: &Sample);
    /// Bytes received so far by bulk flow `flow`, at `point.t_us` (cumulative, non-decreasing).
    fn received(&self, flow: u32, point: &GoodputPoint);
    /// One sample of a QUIC sending connection (sinks that keep only TCP series ignore it).
    fn quic_sample(&self, socket: SocketId, sample: &QuicSample) {
        let _ = (socket, sample);
    }
}

/// One sample of a QUIC sending connection: what its controller and statistics say, in the
/// units TCP_INFO uses where the meaning is the same (µs, bits/s), and in bytes where QUIC
/// counts bytes (its window).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct QuicSample {
    pub t_us: u64,
    /// Smoothed RTT (RFC 9002), as `TCP_INFO`'s `rtt`.
    pub rtt_us: u32,
    pub min_rtt_us: u32,
    /// The RTT of the latest acknowledged packet.
    pub latest_rtt_us: u32,
    pub rttvar_us: u32,
    pub cwnd_bytes: u64,
    pub ssthresh_bytes: Option<u64>,
    /// The path's current maximum UDP payload: `cwnd_bytes / mtu` is the window in packets.
    pub mtu: u16,
    pub bytes_in_flight: u64,
    /// The controller's pacing rate (bits/s); `None` when it leaves pacing to the window.
    pub pacing_rate_bps: Option<u64>,
    /// Bytes acknowledged over the last sampling interval (bits/s).
    pub delivery_rate_bps: u64,
    pub bytes_acked: u64,
    pub bytes_sent: u64,
    pub bytes_lost: u64,
    pub packets_sent: u64,
    pub packets_lost: u64,
    pub congestion_events: u64,
    /// Congestion events the stack later found spurious (every packet it had declared lost
    /// was acknowledged after all: reordering, not loss), each handed to the controller's
    /// undo (noq's `on_spurious_congestion_event`).
    #[serde(default)]
    pub spurious_congestion_events: u64,
    /// Loss detection's packet threshold (RFC 9002 §6.1.1), packets: 3 until a loss proves
    /// spurious, then raised past the reordering that loss showed (vendor/noq-proto/PATCH.md,
    /// "Reordering"), QUIC's counterpart of kernel TCP's `tcpi_reordering`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub packet_threshold: Option<u32>,
    pub app_limited: bool,
    /// BBR's own view, when the controller exposes it.
    pub bbr: Option<QuicBbr>,
    /// How old the receive timestamp of an ACK batch was when the sending controller got it,
    /// µs, median and 99th percentile over the connection so far (50 µs resolution). The
    /// stamp is the kernel's receive time (SO_TIMESTAMPNS), so this is how late an ACK is
    /// processed: the error noq's own stamping (one clock reading per driver wake-up) had.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ack_stamp_age_p50_us: Option<u32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ack_stamp_age_p99_us: Option<u32>,
    /// Our stack's send states (vendor/noq-proto/PATCH.md), cumulative µs at this sample,
    /// the open interval included: what the limited-by accounting reads, kept per sample so
    /// a strip over time can be drawn from the series.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub send_states_us: Option<SendStates>,
}

/// Cumulative time (µs) a QUIC path spent in each of our stack's send states.
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct SendStates {
    /// The congestion window full (RFC 9002 §7).
    pub cwnd: u64,
    /// The pacer holding the next datagram (RFC 9002 §7.7).
    pub pacing: u64,
    /// A transmit just built with room under the window: the host building and handing over
    /// packets set the pace.
    pub host: u64,
    /// The peer's flow-control credit used up (RFC 9000 §4.1).
    pub flow_control: u64,
    /// The local send window full.
    pub send_window: u64,
    /// Nothing to send (RFC 9002 §7.8).
    pub app: u64,
    /// Anything else (anti-amplification, no connection ID).
    pub other: u64,
}

/// A BBR controller's state, from its telemetry.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct QuicBbr {
    /// The mode as kernel TCP BBR's `bbr_mode` names it: `STARTUP`, `DRAIN`, `PROBE_BW`,
    /// `PROBE_RTT`.
    pub state: String,
    /// ProbeBW's phase while in it: `DOWN`, `CRUISE`, `REFILL`, `UP` (BBRv2/v3 only).
    #[serde(default)]
    pub phase: Option<String>,
    pub max_bw_bps: u64,
    pub min_rtt_us: Option<u32>,
    pub pacing_gain: f64,
    pub cwnd_gain: f64,
    /// The rest of the draft's model, for the conformance suite (docs/conform.md); absent in
    /// results written before it was recorded.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model: Option<QuicBbrModel>,
}

/// The part of BBR's state the draft's test cases judge beyond mode, gains and max_bw
/// (draft-ietf-ccwg-bbr-06 §5.5). Bounds are `None` while unset (∞).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct QuicBbrModel {
    /// BBR.bw_shortterm (§5.5.10), bits/s.
    pub bw_shortterm_bps: Option<u64>,
    /// BBR.inflight_longterm (§5.5.8; inflight_hi in BBRv2), bytes.
    pub inflight_longterm_bytes: Option<u64>,
    /// BBR.inflight_shortterm (§5.5.10; inflight_lo), bytes.
    pub inflight_shortterm_bytes: Option<u64>,
    /// BBR.full_bw_reached (§5.3.1.2).
    pub full_bw_reached: bool,
    /// BBR.round_count (§5.5.1): packet-timed round trips so far.
    pub round_count: u64,
    /// BBR.extra_acked (§5.5.9), bytes.
    pub extra_acked_bytes: u64,
    /// BBR.cycle_count (§5.3.3.9 BBRAdvanceMaxBwFilter): the max_bw filter's advances;
    /// absent in results written before it was recorded.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cycle_count: Option<u64>,
    /// BBR.probe_rtt_min_delay (§5.3.4.3), µs: the ProbeRTT timer's own min filter of the RTT;
    /// absent in results written before it was recorded.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub probe_rtt_min_delay_us: Option<u32>,
    /// How long ago, at the sample, BBR.probe_rtt_min_stamp was set (§5.3.4.3: the filter's
    /// last refresh, or PROBE_RTT's last end), µs: PROBE_RTT is due once it passes 5 s.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub probe_rtt_min_age_us: Option<u64>,
}

/// For callers that keep no series.
pub struct NoSeries;

impl SeriesSink for NoSeries {
    fn tcp_sample(&self, _: SocketId, _: &Sample) {}
    fn received(&self, _: u32, _: &GoodputPoint) {}
}

/// Keeps every point in memory: for tests and short runs only (memory grows with duration).
#[derive(Default, Debug)]
pub struct MemorySeries {
    pub tcp: Mutex<BTreeMap<SocketId, Vec<Sample>>>,
    pub received: Mutex<BTreeMap<u32, Vec<GoodputPoint>>>,
    pub quic: Mutex<BTreeMap<SocketId, Vec<QuicSample>>>,
}

impl SeriesSink for MemorySeries {
    fn tcp_sample(&self, socket: SocketId, sample: &Sample) {
        super::lock(&self.tcp).entry(socket).or_default().push(*sample);
    }
    fn received(&self, flow: u32, point: &GoodputPoint) {
        super::lock(&self.received).entry(flow).or_default().push(*point);
    }
    fn quic_sample(&self, socket: SocketId, sample: &QuicSample) {
        super::lock(&self.quic).entry(socket).or_default().push(sample.clone());
    }
}

impl MemorySeries {
    /// The samples of one socket, in the order taken.
    pub fn samples(&self, socket: SocketId) -> Vec<Sample> {
        super::lock(&self.tcp).get(&socket).cloned().unwrap_or_default()
    }
    /// The QUIC samples of one connection, in the order taken.
    pub fn quic_samples(&self, socket: SocketId) -> Vec<QuicSample> {
        super::lock(&self.quic).get(&socket).cloned().unwrap_or_default()
    }
    /// The goodput points of one flow, in the order taken.
    pub fn received_of(&self, flow: u32) -> Vec<GoodputPoint> {
        super::lock(&self.received).get(&flow).cloned().unwrap_or_default()
    }
}
