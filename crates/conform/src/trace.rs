//! One run's state series, whatever the stack: QUIC BBR's full state or kernel BBR's
//! TCP_CC_INFO (mode inferred from its gains), and for every controller its cwnd and ssthresh.
//! A field a stack does not report is `None` in every point, and an assertion that needs it is
//! then *not observable*.

use std::time::Duration;

/// BBR's coarse state (draft-ietf-ccwg-bbr §4.3's state machine), as the series name it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Mode {
    Startup,
    Drain,
    ProbeBw,
    ProbeRtt,
}

impl Mode {
    /// `STARTUP`, `DRAIN`, `PROBE_BW` (also `PROBE_BW_<PHASE>`) or `PROBE_RTT`; anything else
    /// (an unknown mode, before the first ACK) is `None`.
    pub fn parse(s: &str) -> Option<Mode> {
        match s {
            "STARTUP" => Some(Mode::Startup),
            "DRAIN" => Some(Mode::Drain),
            "PROBE_RTT" => Some(Mode::ProbeRtt),
            s if s.starts_with("PROBE_BW") => Some(Mode::ProbeBw),
            _ => None,
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            Mode::Startup => "STARTUP",
            Mode::Drain => "DRAIN",
            Mode::ProbeBw => "PROBE_BW",
            Mode::ProbeRtt => "PROBE_RTT",
        }
    }
}

/// ProbeBW's phase (§4.3.3): only BBRv2/v3 have them, and only QUIC's series show them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Phase {
    Down,
    Cruise,
    Refill,
    Up,
}

impl Phase {
    pub fn parse(s: &str) -> Option<Phase> {
        match s.trim_start_matches("PROBE_BW_") {
            "DOWN" => Some(Phase::Down),
            "CRUISE" => Some(Phase::Cruise),
            "REFILL" => Some(Phase::Refill),
            "UP" => Some(Phase::Up),
            _ => None,
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            Phase::Down => "DOWN",
            Phase::Cruise => "CRUISE",
            Phase::Refill => "REFILL",
            Phase::Up => "UP",
        }
    }
}

/// One sample of the controller's state.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Point {
    /// Since the flow started.
    pub t: Duration,
    pub mode: Option<Mode>,
    pub phase: Option<Phase>,
    /// The bandwidth estimate: QUIC BBR's `max_bw`, kernel BBR's `bw` (bits/s).
    pub bw_bps: Option<f64>,
    pub pacing_gain: Option<f64>,
    pub cwnd_gain: Option<f64>,
    pub cwnd_bytes: Option<u64>,
    pub inflight_bytes: Option<u64>,
    /// The sender's RTT (smoothed for TCP, the latest sample for QUIC).
    pub rtt: Option<Duration>,
    /// The controller's own min_rtt estimate (BBR.min_rtt).
    pub min_rtt: Option<Duration>,
    /// The latest delivery-rate sample (bits/s).
    pub delivery_rate_bps: Option<f64>,
    /// Bytes declared lost so far (cumulative).
    pub lost_bytes: Option<u64>,
    /// Bytes acknowledged so far (cumulative).
    pub delivered_bytes: Option<u64>,
    /// The pacing rate the controller set (bits/s).
    pub pacing_rate_bps: Option<f64>,
    /// BBR.inflight_longterm (§5.5.8; inflight_hi before -02), bytes: `Some(u64::MAX)` while
    /// it is unset (infinite), `None` where the stack does not show it.
    pub inflight_longterm_bytes: Option<u64>,
    /// BBR.inflight_shortterm (§5.5.10; inflight_lo), bytes, `Some(u64::MAX)` while unset.
    pub inflight_shortterm_bytes: Option<u64>,
    /// BBR.bw_shortterm (§5.5.10; bw_lo), bits/s, `Some(f64::INFINITY)` while unset.
    pub bw_shortterm_bps: Option<f64>,
    /// BBR.round_count (§5.5.1): packet-timed round trips so far.
    pub round_count: Option<u64>,
    /// BBR.cycle_count (§5.3.3.9 BBRAdvanceMaxBwFilter): how often the max_bw filter has
    /// advanced; `None` where the stack does not show it (kernel BBR, older series).
    pub cycle_count: Option<u64>,
    /// How long before this sample BBR.probe_rtt_min_stamp was set (§5.3.4.3: the ProbeRTT
    /// timer's filter last refreshed, or PROBE_RTT last ended); `None` where the stack does not
    /// show it (kernel BBR, older series).
    pub probe_rtt_min_age: Option<Duration>,
    /// BBR.probe_rtt_min_delay (§5.3.4.3), the ProbeRTT timer's own min filter of the RTT;
    /// `None` where the stack does not show it.
    pub probe_rtt_min_delay: Option<Duration>,
    /// Time so far the sender had window and pacing budget but did not send: the host (CPU,
    /// its UDP path) was the limit (QUIC's `host_limited_us`, cumulative); `None` where the
    /// stack does not say.
    pub host_limited: Option<Duration>,
    /// Time so far the sender was held by its congestion window (cumulative, QUIC's
    /// `cwnd_limited_us`, TCP's from its busy-time counters); `None` where the stack does not say.
    pub cwnd_limited: Option<Duration>,
    /// BBR.full_bw_reached (§5.3.1.2).
    pub full_bw_reached: Option<bool>,
    /// BBR.extra_acked (§5.5.9), bytes.
    pub extra_acked_bytes: Option<u64>,
    /// Loss episodes the stack later found spurious and handed to the controller's undo
    /// (§5.5.11.2 HandleSpuriousLossDetection), so far; `None` where the stack does not say
    /// (kernel TCP counts its undos per namespace, not per socket).
    pub spurious_losses: Option<u64>,
    /// The slow-start threshold (RFC 5681 §3.1; RFC 9438 §4.6 sets it at a congestion event),
    /// bytes: `Some(u64::MAX)` while unset (infinite: still in the first slow start), `None`
    /// where the stack does not show it.
    pub ssthresh_bytes: Option<u64>,
}

/// What the run's path was: the figures assertions are judged against.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct PathFacts {
    /// The bottleneck rate at the start (bits/s).
    pub rate_bps: f64,
    /// The base round-trip time (propagation only).
    pub rtt: Duration,
    /// Bytes per full-sized packet, for "packets" in assertions.
    pub mss: u64,
    /// A rate change during the run: at this time, to this rate (bits/s).
    pub rate_step: Option<(Duration, f64)>,
}

impl PathFacts {
    pub fn bdp_bytes(&self) -> f64 {
        self.rate_bps / 8.0 * self.rtt.as_secs_f64()
    }
}

/// A state change as the controller itself recorded it (not seen between samples): QUIC BBR's
/// own events. Kernel BBR records none.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct StateEvent {
    /// Since the flow started (the trace's first point).
    pub t: Duration,
    pub from: Mode,
    pub to: Mode,
    /// The ProbeBW phases left and entered, where the controller records them (QUIC BBR's
    /// events do): a change of phase within PROBE_BW is an event too, `from` and `to` both
    /// PROBE_BW.
    pub from_phase: Option<Phase>,
    pub to_phase: Option<Phase>,
    /// BBR.round_count at the change (§5.5.1), where the controller counts it.
    pub round: Option<u64>,
    /// BBR.round_count when full_bw last grew by 25 % or was reset (§5.3.1.2
    /// BBRCheckFullBWReached).
    pub full_bw_round: Option<u64>,
}

/// The state series of one run of one controller.
#[derive(Debug, Clone, PartialEq)]
pub struct Trace {
    pub path: PathFacts,
    /// How far apart the points are: the time resolution of everything seen in the trace.
    pub sample_interval: Duration,
    pub points: Vec<Point>,
    /// The controller's own state changes, in time order, where it records them (empty where
    /// not): what an assertion can count exactly instead of bracketing between samples.
    pub events: Vec<StateEvent>,
}

/// What a count of rounds was measured with.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum RoundClock {
    /// BBR.round_count, as the controller counts them.
    Counted,
    /// Round trips of this length (the sender's RTT).
    Rtt(Duration),
}

impl std::fmt::Display for RoundClock {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            RoundClock::Counted => f.write_str("BBR.round_count"),
            RoundClock::Rtt(d) => write!(f, "{:.0} ms", d.as_secs_f64() * 1e3),
        }
    }
}

/// A state change seen between two samples: it happened in `(before, at]`.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Transition {
    pub before: Duration,
    pub at: Duration,
    pub from: Mode,
    pub to: Mode,
    /// The phase entered, when the stack shows phases.
    pub to_phase: Option<Phase>,
}

impl Trace {
    /// Mode changes in time order (points without a mode are skipped).
    pub fn transitions(&self) -> Vec<Transition> {
        let mut out = Vec::new();
        let mut last: Option<(Duration, Mode)> = None;
        for p in &self.points {
            let Some(m) = p.mode else { continue };
            if let Some((t, from)) = last {
                if from != m {
                    out.push(Transition { before: t, at: p.t, from, to: m, to_phase: p.phase });
                }
            }
            last = Some((p.t, m));
        }
        out
    }

    /// Phase changes within ProbeBW, in time order: `(time, phase)` for each new phase.
    pub fn phases(&self) -> Vec<(Duration, Phase)> {
        let mut out: Vec<(Duration, Phase)> = Vec::new();
        for p in &self.points {
            if let (Some(Mode::ProbeBw), Some(ph)) = (p.mode, p.phase) {
                if out.last().is_none_or(|(_, last)| *last != ph) {
                    out.push((p.t, ph));
                }
            }
        }
        out
    }

    /// When the max_bw filter's ProbeBW cycles began: each start of ProbeBW_DOWN (§5.3.3.3),
    /// a round after which the filter advances (BBRAdaptUpperBounds, ACKS_PROBE_STOPPING). Where
    /// the stack shows phases, DOWN is seen, or inferred when REFILL or UP is followed straight
    /// by CRUISE (a DOWN shorter than a sample) or ProbeBW is entered from DRAIN. An exit from
    /// PROBE_RTT also passes through DOWN but does not count: ProbeRTT marks the connection
    /// app-limited (§5.3.4.4 BBRHandleProbeRTT), and the filter advances only on a sample that is
    /// not. Where the stack shows only gains (kernel BBR), it is each fall of the pacing gain
    /// below 0.95 in ProbeBW (v1's 0.75 phase, v3's 0.9) or entry from DRAIN. `None` when the
    /// stack shows neither phases nor gains.
    pub fn cycle_starts(&self) -> Option<Vec<Duration>> {
        let phases = self.has(|p| p.phase.is_some());
        if !phases && !self.has(|p| p.pacing_gain.is_some()) {
            return None;
        }
        let mut out = Vec::new();
        // The previous sample's mode and whether it was in DOWN, or (by phase) where it was.
        let mut prev_mode: Option<Mode> = None;
        let mut prev_phase: Option<Phase> = None;
        let mut prev_down = false;
        for p in &self.points {
            let Some(mode) = p.mode else { continue };
            if mode == Mode::ProbeBw {
                let down = if phases { p.phase == Some(Phase::Down) } else { p.pacing_gain.is_some_and(|g| g < 0.95) };
                let from_drain = prev_mode == Some(Mode::Drain);
                let from_probe_rtt = prev_mode == Some(Mode::ProbeRtt);
                let skipped_down = phases && p.phase == Some(Phase::Cruise) && matches!(prev_phase, Some(Phase::Refill | Phase::Up));
                if !from_probe_rtt && (from_drain || skipped_down || (down && !prev_down)) {
                    out.push(p.t);
                }
                prev_down = down || from_drain || from_probe_rtt;
                prev_phase = p.phase;
            } else {
                prev_down = false;
                prev_phase = None;
            }
            prev_mode = Some(mode);
        }
        Some(out)
    }

    /// The first exit from STARTUP as the controller recorded it, with both its round counts:
    /// what makes A.1's plateau exact (`round - full_bw_round`). An exit into PROBE_RTT is not
    /// one: ProbeRTT interrupts STARTUP (§5.3.4.3) and returns to it (§5.3.4.4).
    pub fn startup_exit_rounds(&self) -> Option<(StateEvent, u64, u64)> {
        let e = self.events.iter().find(|e| e.from == Mode::Startup && e.to != Mode::ProbeRtt)?;
        Some((*e, e.round?, e.full_bw_round?))
    }

    /// The share of the run the sender was held by its host rather than by its controller or
    /// the path ([`Point::host_limited`] over the sampled span); `None` where not shown.
    pub fn host_limited_share(&self) -> Option<f64> {
        let shown: Vec<(Duration, Duration)> = self.points.iter().filter_map(|p| Some((p.t, p.host_limited?))).collect();
        let (&(t0, h0), &(t1, h1)) = (shown.first()?, shown.last()?);
        (t1 > t0).then(|| h1.saturating_sub(h0).as_secs_f64() / (t1 - t0).as_secs_f64())
    }

    /// Whether any point has this field.
    pub fn has(&self, field: impl Fn(&Point) -> bool) -> bool {
        self.points.iter().any(field)
    }

    /// BBR.round_count at the last sample at or before `t` (the first sample's before it),
    /// where the stack shows it.
    pub fn round_count_at(&self, t: Duration) -> Option<u64> {
        let shown = self.points.iter().filter(|p| p.round_count.is_some());
        let first = shown.clone().next()?;
        shown.take_while(|p| p.t <= t).last().unwrap_or(first).round_count
    }

    /// How many rounds lie between an event in `(a0, a1]` and a later one in `(b0, b1]`: the
    /// fewest and the most the samples allow. Counted in BBR.round_count where the stack shows
    /// it (QUIC BBR), else in the sender's RTT at `b0` ([`Trace::round_at`]), which includes
    /// the queue as BBR's packet-timed rounds do.
    pub fn rounds_between(&self, (a0, a1): (Duration, Duration), (b0, b1): (Duration, Duration)) -> (f64, f64, RoundClock) {
        if let (Some(a0c), Some(a1c), Some(b0c), Some(b1c)) =
            (self.round_count_at(a0), self.round_count_at(a1), self.round_count_at(b0), self.round_count_at(b1))
        {
            return (b0c.saturating_sub(a1c) as f64, b1c.saturating_sub(a0c) as f64, RoundClock::Counted);
        }
        let round = self.round_at(b0);
        let r = round.as_secs_f64();
        (b0.saturating_sub(a1).as_secs_f64() / r, b1.saturating_sub(a0).as_secs_f64() / r, RoundClock::Rtt(round))
    }

    /// A round trip's length near `t`: the sender's own RTT there if it reports one, else the
    /// path's base RTT: what rounds are counted in where the stack does not count them.
    pub fn round_at(&self, t: Duration) -> Duration {
        self.points.iter().take_while(|p| p.t <= t).filter_map(|p| p.rtt).last().unwrap_or(self.path.rtt).max(self.path.rtt)
    }
}
