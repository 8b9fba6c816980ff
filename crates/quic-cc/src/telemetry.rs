//! What the controller shows to the outside: the latest model snapshot and the state timeline.
//!
//! The controller runs inside the QUIC connection; a sampler thread reads this every 10 ms.
//! One `Telemetry` belongs to one connection: the controller overwrites the snapshot after
//! every ACK batch and appends one [`StateChange`] per state transition.

use std::collections::VecDeque;
use std::fmt;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant};

/// The draft's state machine (draft-ietf-ccwg-bbr-06 §5.1), ProbeBW split into its four phases.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum BbrState {
    Startup,
    Drain,
    ProbeBwDown,
    ProbeBwCruise,
    ProbeBwRefill,
    ProbeBwUp,
    ProbeRtt,
}

impl BbrState {
    pub const ALL: [BbrState; 7] =
        [BbrState::Startup, BbrState::Drain, BbrState::ProbeBwDown, BbrState::ProbeBwCruise, BbrState::ProbeBwRefill, BbrState::ProbeBwUp, BbrState::ProbeRtt];

    /// The coarse mode, named as the kernel-TCP series name BBR's modes
    /// (`ccbench_kernel_tcp::BbrMode`, serialised SCREAMING_SNAKE_CASE): STARTUP, DRAIN, PROBE_BW,
    /// PROBE_RTT. The ProbeBW phases all map to PROBE_BW.
    pub fn mode(self) -> &'static str {
        match self {
            BbrState::Startup => "STARTUP",
            BbrState::Drain => "DRAIN",
            BbrState::ProbeRtt => "PROBE_RTT",
            _ => "PROBE_BW",
        }
    }

    /// ProbeBW's phase (DOWN, CRUISE, REFILL, UP), if in ProbeBW.
    pub fn probe_bw_phase(self) -> Option<&'static str> {
        match self {
            BbrState::ProbeBwDown => Some("DOWN"),
            BbrState::ProbeBwCruise => Some("CRUISE"),
            BbrState::ProbeBwRefill => Some("REFILL"),
            BbrState::ProbeBwUp => Some("UP"),
            _ => None,
        }
    }

    pub fn is_probe_bw(self) -> bool {
        self.probe_bw_phase().is_some()
    }
}

/// `STARTUP`, `DRAIN`, `PROBE_RTT`, and `PROBE_BW_DOWN` / `_CRUISE` / `_REFILL` / `_UP`: the
/// kernel series' names, with the phase appended so a prefix match on `PROBE_BW` still works.
impl fmt::Display for BbrState {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.probe_bw_phase() {
            Some(phase) => write!(f, "PROBE_BW_{phase}"),
            None => f.write_str(self.mode()),
        }
    }
}

/// The controller's model at one instant. Rates are in bits per second like the kernel
/// series' `*_bps` columns (`ccbench_kernel_tcp` converts the kernel's bytes/s to bits/s).
#[derive(Debug, Clone, PartialEq)]
pub struct BbrSnapshot {
    pub state: BbrState,
    pub pacing_rate_bps: u64,
    /// The latest delivery-rate sample (0 if the latest sample was invalid).
    pub delivery_rate_bps: u64,
    /// BBR.max_bw: windowed max of the delivery-rate samples.
    pub max_bw_bps: u64,
    pub min_rtt: Option<Duration>,
    pub cwnd_bytes: u64,
    /// BBR.inflight_longterm (called inflight_hi in BBRv2 and earlier drafts); `None` = ∞.
    pub inflight_hi: Option<u64>,
    /// BBR.inflight_shortterm (inflight_lo); `None` = ∞.
    pub inflight_lo: Option<u64>,
    pub pacing_gain: f64,
    pub cwnd_gain: f64,
    /// BBR.bw: max_bw bounded by the short-term bw_lo, what pacing uses.
    pub bw_bps: u64,
    /// BBR.bw_shortterm (bw_lo, §5.5.10); `None` = ∞.
    pub bw_lo_bps: Option<u64>,
    /// BBR.full_bw_reached (§5.3.1.2): STARTUP found the plateau (or ended on loss).
    pub full_bw_reached: bool,
    /// BBR.extra_acked (§5.5.9): the ACK-aggregation allowance cwnd adds, bytes.
    pub extra_acked: u64,
    /// Bytes in flight as the controller counts them.
    pub bytes_in_flight: u64,
    /// Packet-timed round trips so far (BBR.round_count).
    pub round_count: u64,
    /// BBR.cycle_count (§5.3.3.9 BBRAdvanceMaxBwFilter): how often the max_bw filter advanced.
    pub cycle_count: u64,
    /// BBR.probe_rtt_min_delay (§5.3.4.3): the ProbeRTT timer's own min filter of the RTT.
    pub probe_rtt_min_delay: Option<Duration>,
    /// BBR.probe_rtt_min_stamp (§5.3.4.3): when that filter was last refreshed (or PROBE_RTT
    /// last ended); PROBE_RTT is due at the first ACK `ProbeRTTInterval` (5 s) after it.
    pub probe_rtt_min_stamp: Instant,
    /// Total bytes acknowledged / declared lost.
    pub delivered_bytes: u64,
    pub lost_bytes: u64,
}

/// One transition of the state machine.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct StateChange {
    pub at: Instant,
    pub from: BbrState,
    pub to: BbrState,
    /// BBR.round_count at the transition (§5.5.1).
    pub round: u64,
    /// BBR.round_count when full_bw last grew by 25 % or was reset (§5.3.1.2
    /// BBRCheckFullBWReached): on a plateau exit from STARTUP, `round - full_bw_round` is the
    /// rounds without growth, 3 by the draft (BBRStartupFullBwCount).
    pub full_bw_round: u64,
}

/// Events kept if nobody takes them; a 10 ms reader never gets near this.
const MAX_PENDING_EVENTS: usize = 65_536;

#[derive(Debug, Default)]
struct Shared {
    snapshot: Option<BbrSnapshot>,
    events: VecDeque<StateChange>,
}

/// Shared with the controller of one connection; read by a sampler thread every 10 ms.
#[derive(Clone, Default, Debug)]
pub struct Telemetry(Arc<Mutex<Shared>>);

impl Telemetry {
    pub fn new() -> Self {
        Self::default()
    }

    /// The latest model snapshot; `None` until the controller was built.
    pub fn snapshot(&self) -> Option<BbrSnapshot> {
        self.lock().snapshot.clone()
    }

    /// State changes since the last call, oldest first.
    pub fn take_events(&self) -> Vec<StateChange> {
        self.lock().events.drain(..).collect()
    }

    pub(crate) fn publish(&self, snapshot: BbrSnapshot) {
        self.lock().snapshot = Some(snapshot);
    }

    pub(crate) fn record(&self, change: StateChange) {
        let mut shared = self.lock();
        if shared.events.len() == MAX_PENDING_EVENTS {
            shared.events.pop_front();
        }
        shared.events.push_back(change);
    }

    fn lock(&self) -> MutexGuard<'_, Shared> {
        // A panicking reader must not silence the controller: the data is plain values.
        self.0.lock().unwrap_or_else(|e| e.into_inner())
    }
}
