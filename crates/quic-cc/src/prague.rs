//! Prague (draft-briscoe-iccrg-prague-congestion-control-04), the scalable L4S controller,
//! sans-IO, for noq: what `quic:prague` runs.
//!
//! What it is, and where each rule comes from:
//! * **ECT(1)** on every packet (RFC 9331 §4: the L4S identifier), so an L4S queue (DualPI2,
//!   RFC 9332) puts it in its low-latency queue and marks it with the scalable probability.
//! * **DCTCP's response** (RFC 8257 §3.3): α, an EWMA of the fraction of packets marked CE,
//!   updated once per round with gain g = 1/16 and starting at 1; on CE, at most once per
//!   round, cwnd ← cwnd × (1 − α/2). A few marks per round are the normal operating point, not
//!   an alarm (RFC 9330 §4's scalable control).
//! * **Unsaturated additive increase** (the draft's additive increase; the reference Linux
//!   code's `prague_update_cwnd`): one segment per round, counted only over acknowledged
//!   packets that were not marked, so the increase over a round is proportional to (1 − p).
//! * **RTT independence** (the draft's "RTT-independence"; reference default
//!   `RTT_CONTROL_RATE`, target 25 ms after 500 rounds out of slow start): below the target
//!   RTT the additive increase is scaled by (RTT / 25 ms)², so a short-RTT flow grows per
//!   second as a 25 ms flow does, and reductions come at most once per 25 ms.
//! * **Loss** is classic (RFC 5681's halving, as the reference's `prague_enter_loss`): Prague
//!   must stay safe where a path drops instead of marking (RFC 9331 §4.3, "Prague
//!   requirements"). A spurious loss is undone.
//! * **Pacing** at cwnd per smoothed RTT, doubled in slow start while cwnd is below half of
//!   ssthresh, in bursts of at most 0.5 ms (the reference's `prague_update_pacing_rate`; its
//!   `prague_burst_shift` is 2⁻¹² s, see [`Prague::send_quantum`]): marks at a shallow L4S
//!   threshold come from bursts otherwise.
//!
//! Not here (documented in docs/ecn.md): detecting a classic ECN AQM and falling back
//! (the reference's off-by-default `prague_ecn_fallback`), and AccECN-specific TCP details,
//! which QUIC's ACK-frame ECN counts make unnecessary (RFC 9000 §13.4.1 counts every codepoint).
//!
//! Sans-IO: every time is passed in, RTT samples are ACK time minus send time, so tests drive it
//! on a virtual clock (`tests/prague.rs`).

use std::any::Any;
use std::sync::Arc;
use std::time::{Duration, Instant};

use noq_proto::congestion::{Controller, ControllerFactory, ControllerMetrics};
use noq_proto::{EcnCodepoint, RttEstimator};

/// RFC 8257 §3.3's EWMA gain g (the reference's `PRAGUE_SHIFT_G` = 4).
const G: f64 = 1.0 / 16.0;
/// The RTT-independence target (reference `prague_rtt_target`, 25 ms).
pub const TARGET_RTT: Duration = Duration::from_millis(25);
/// Rounds out of slow start before RTT independence applies (reference
/// `prague_rtt_transition`, 500): short flows keep their own RTT's responsiveness.
pub const RTT_TRANSITION_ROUNDS: u64 = 500;
/// RFC 9002 §7.2's initial window: 10 datagrams, capped.
const INITIAL_WINDOW_PACKETS: u64 = 10;

/// What the controller holds, cloned whole for a spurious-loss undo.
#[derive(Debug, Clone)]
struct State {
    /// Bytes, with fractions kept (the reference tracks cwnd's decimals for the same reason:
    /// at a permanent low marking rate, rounding would otherwise decide the rate).
    cwnd: f64,
    ssthresh: f64,
}

/// The Prague controller.
#[derive(Debug, Clone)]
pub struct Prague {
    smss: u64,
    initial_window: u64,
    state: State,
    /// α ∈ [0, 1], RFC 8257 §3.3.
    alpha: f64,
    /// Whether any CE came back yet: before that, α is not updated (no AQM proven on the path).
    saw_ce: bool,
    srtt: Option<Duration>,
    /// The round ends when a packet numbered at least this is acknowledged.
    round_end_pn: u64,
    largest_sent_pn: u64,
    round_acked: u64,
    round_ce: u64,
    last_alpha_update: Option<Instant>,
    /// Rounds since slow start ended (RTT independence starts after [`RTT_TRANSITION_ROUNDS`]).
    rounds_out_of_ss: u64,
    last_reduction: Option<Instant>,
    /// Packets sent up to here belong to the current loss recovery.
    recovery_start: Option<Instant>,
    before_loss: Option<State>,
    /// Growth handed out per acknowledged byte by the last on_ack, taken back (once) for marked
    /// packets when that ACK's ECN counts arrive.
    last_ai_per_byte: f64,
}

impl Prague {
    pub fn new(mtu: u16) -> Self {
        let smss = u64::from(mtu.max(1200));
        let initial_window = (INITIAL_WINDOW_PACKETS * smss).min((2 * smss).max(14_720));
        Prague {
            smss,
            initial_window,
            state: State { cwnd: initial_window as f64, ssthresh: f64::INFINITY },
            alpha: 1.0,
            saw_ce: false,
            srtt: None,
            round_end_pn: 0,
            largest_sent_pn: 0,
            round_acked: 0,
            round_ce: 0,
            last_alpha_update: None,
            rounds_out_of_ss: 0,
            last_reduction: None,
            recovery_start: None,
            before_loss: None,
            last_ai_per_byte: 0.0,
        }
    }

    /// α, the smoothed marked fraction.
    pub fn alpha(&self) -> f64 {
        self.alpha
    }

    pub fn cwnd(&self) -> u64 {
        self.state.cwnd as u64
    }

    pub fn in_slow_start(&self) -> bool {
        self.state.cwnd < self.state.ssthresh
    }

    fn minimum_window(&self) -> f64 {
        (2 * self.smss) as f64
    }

    fn rtt_independent(&self) -> bool {
        !self.in_slow_start() && self.rounds_out_of_ss >= RTT_TRANSITION_ROUNDS
    }

    /// Additive increase per round, in segments: 1, or (RTT / target)² below the target once
    /// RTT-independent (the reference's `prague_rate_scaled_ai_ack_increase`).
    pub fn ai_segments_per_round(&self) -> f64 {
        match self.srtt {
            Some(rtt) if self.rtt_independent() && rtt < TARGET_RTT => (rtt.as_secs_f64() / TARGET_RTT.as_secs_f64()).powi(2),
            _ => 1.0,
        }
    }

    /// The shortest time between two reductions (and two α updates): a round, or the target
    /// RTT once RTT-independent.
    fn reaction_interval(&self) -> Duration {
        let rtt = self.srtt.unwrap_or(TARGET_RTT);
        if self.rtt_independent() {
            rtt.max(TARGET_RTT)
        } else {
            rtt
        }
    }

    pub fn on_packet_sent(&mut self, pn: u64) {
        self.largest_sent_pn = self.largest_sent_pn.max(pn);
    }

    pub fn on_packet_acked(&mut self, now: Instant, sent: Instant, bytes: u64, app_limited: bool) {
        let sample = now.saturating_duration_since(sent);
        self.srtt = Some(match self.srtt {
            None => sample,
            Some(s) => s.mul_f64(7.0 / 8.0) + sample.mul_f64(1.0 / 8.0),
        });
        self.last_ai_per_byte = 0.0;
        // RFC 9002 §7.3.2: no growth for packets sent before recovery began, nor while the
        // application, not the window, limits the sender.
        if self.recovery_start.is_some_and(|start| sent <= start) || app_limited {
            return;
        }
        self.recovery_start = None;
        let per_byte = if self.in_slow_start() { 1.0 } else { self.ai_segments_per_round() * self.smss as f64 / self.state.cwnd };
        self.state.cwnd += per_byte * bytes as f64;
        self.last_ai_per_byte = per_byte;
    }

    /// The end of an ACK batch: closes the round when it acknowledges a packet sent after the
    /// round began, and updates α then (RFC 8257 §3.3, once per round).
    pub fn on_end_acks(&mut self, now: Instant, largest_acked: Option<u64>) {
        let Some(largest) = largest_acked else { return };
        if largest < self.round_end_pn {
            return;
        }
        // Once per round; once RTT-independent, also no more often than the target RTT (the
        // reference's `prague_should_update_ewma`), so flows of different RTTs on one step
        // marker converge to the same α.
        let due = !self.rtt_independent() || self.last_alpha_update.is_none_or(|t| now.saturating_duration_since(t) >= TARGET_RTT);
        if !self.saw_ce {
            self.round_acked = 0;
            self.round_ce = 0;
        } else if due {
            let f = if self.round_acked == 0 { 0.0 } else { self.round_ce as f64 / self.round_acked as f64 };
            self.alpha = ((1.0 - G) * self.alpha + G * f).clamp(0.0, 1.0);
            self.last_alpha_update = Some(now);
            self.round_acked = 0;
            self.round_ce = 0;
        }
        if !self.in_slow_start() {
            self.rounds_out_of_ss += 1;
        }
        self.round_end_pn = self.largest_sent_pn + 1;
    }

    /// An in-order ACK's ECN counts: `ect` newly acknowledged packets arrived unmarked, `ce`
    /// marked.
    pub fn on_ecn_feedback(&mut self, now: Instant, ect: u64, ce: u64) {
        self.round_acked += ect + ce;
        self.round_ce += ce;
        if ce == 0 {
            return;
        }
        self.saw_ce = true;
        // Unsaturated increase: marked packets earn no growth (the ACK's on_ack handed it out
        // already; take back the marked share of it).
        let taken = (self.last_ai_per_byte * (ce * self.smss) as f64).min(self.state.cwnd - self.minimum_window()).max(0.0);
        self.state.cwnd -= taken;
        self.last_ai_per_byte = 0.0;
        // RFC 8257 §3.3: reduce once per round (once per target RTT when RTT-independent).
        let due = self.last_reduction.is_none_or(|t| now.saturating_duration_since(t) >= self.reaction_interval());
        if due {
            let min = self.minimum_window();
            let s = &mut self.state;
            s.cwnd = (s.cwnd * (1.0 - self.alpha / 2.0)).max(min);
            s.ssthresh = s.cwnd;
            self.last_reduction = Some(now);
        }
    }

    /// A loss (an ECN-triggered event is answered in [`Prague::on_ecn_feedback`]).
    pub fn on_congestion_event(&mut self, now: Instant, sent: Instant, persistent: bool, is_ecn: bool) {
        if is_ecn || self.recovery_start.is_some_and(|start| sent <= start) {
            return;
        }
        self.before_loss = Some(self.state.clone());
        let min = self.minimum_window();
        let s = &mut self.state;
        s.cwnd = (s.cwnd / 2.0).max(min);
        s.ssthresh = s.cwnd;
        self.recovery_start = Some(now);
        if persistent {
            // RFC 9002 §7.6.2: collapse to the minimum window.
            self.state.cwnd = min;
            self.recovery_start = None;
        }
    }

    pub fn on_spurious_congestion_event(&mut self) {
        if let Some(prior) = self.before_loss.take() {
            if prior.cwnd > self.state.cwnd {
                self.state = prior;
            }
        }
    }

    /// Bytes per second: cwnd per smoothed RTT, doubled in early slow start.
    pub fn pacing_rate(&self) -> Option<u64> {
        let rtt = self.srtt?.as_secs_f64().max(1e-6);
        let gain = if self.state.cwnd < self.state.ssthresh / 2.0 { 2.0 } else { 1.0 };
        Some((gain * self.state.cwnd / rtt) as u64)
    }
}

impl Prague {
    /// The largest burst sent together, as a GSO batch (`send_quantum`) and as the pacer's
    /// bucket (`pacer_burst`, a patch of ours to noq): 0.5 ms at the pacing rate, at least two
    /// packets. The reference bounds bursts at 2⁻¹² s (`prague_burst_shift`), but a userspace
    /// pacer that wakes late loses the credit a one-packet bucket cannot hold. Measured at
    /// 100 Mbit/s, 20 ms through DualPI2: noq's own bursts (≥ 10 packets, a millisecond of
    /// queue by themselves, marked at the 1 ms step) 50 Mbit/s at load 10; one packet, 14.7;
    /// this, 75.5 at load ~1.
    pub fn send_quantum(&self) -> Option<u64> {
        let rate = self.pacing_rate()?;
        Some((rate / 2000).max(2 * self.smss))
    }
}

impl Controller for Prague {
    fn on_packet_sent(&mut self, _now: Instant, _bytes: u16, pn: u64) {
        Prague::on_packet_sent(self, pn);
    }

    fn on_ack(&mut self, now: Instant, sent: Instant, bytes: u64, _pn: u64, app_limited: bool, _rtt: &RttEstimator) {
        self.on_packet_acked(now, sent, bytes, app_limited);
    }

    fn on_end_acks(&mut self, now: Instant, _in_flight: u64, _app_limited: bool, largest_packet_num_acked: Option<u64>) {
        Prague::on_end_acks(self, now, largest_packet_num_acked);
    }

    fn on_congestion_event(&mut self, now: Instant, sent: Instant, is_persistent_congestion: bool, is_ecn: bool, _lost_bytes: u64, _largest_lost_pn: u64) {
        Prague::on_congestion_event(self, now, sent, is_persistent_congestion, is_ecn);
    }

    fn on_spurious_congestion_event(&mut self) {
        Prague::on_spurious_congestion_event(self);
    }

    fn ecn_codepoint(&self) -> EcnCodepoint {
        EcnCodepoint::Ect1
    }

    fn on_ecn_feedback(&mut self, now: Instant, ect_packets: u64, ce_packets: u64) {
        Prague::on_ecn_feedback(self, now, ect_packets, ce_packets);
    }

    fn on_mtu_update(&mut self, new_mtu: u16) {
        self.smss = u64::from(new_mtu.max(1200));
        self.state.cwnd = self.state.cwnd.max(self.minimum_window());
    }

    fn window(&self) -> u64 {
        self.state.cwnd as u64
    }

    fn metrics(&self) -> ControllerMetrics {
        let mut m = ControllerMetrics::default();
        m.congestion_window = self.window();
        m.ssthresh = self.state.ssthresh.is_finite().then_some(self.state.ssthresh as u64);
        m.pacing_rate = self.pacing_rate();
        m.send_quantum = self.send_quantum();
        m.pacer_burst = self.send_quantum();
        m
    }

    fn clone_box(&self) -> Box<dyn Controller> {
        Box::new(self.clone())
    }

    fn initial_window(&self) -> u64 {
        self.initial_window
    }

    fn into_any(self: Box<Self>) -> Box<dyn Any> {
        self
    }
}

/// Builds one [`Prague`] per path: `quic:prague`.
#[derive(Debug, Default)]
pub struct PragueFactory;

impl PragueFactory {
    pub fn new() -> Arc<Self> {
        Arc::new(Self)
    }
}

impl ControllerFactory for PragueFactory {
    fn build(self: Arc<Self>, _now: Instant, current_mtu: u16) -> Box<dyn Controller> {
        Box::new(Prague::new(current_mtu))
    }
}
