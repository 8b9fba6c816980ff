//! BBR, written from draft-ietf-ccwg-bbr-06 (BBRv3; section numbers below are that draft's),
//! with a `V2` parameter set after BBRv2 as deployed: Linux's `net/ipv4/tcp_bbr2.c` (google/bbr,
//! v2alpha), and draft-cardwell-iccrg-bbr-congestion-control-02 where the kernel code is silent.
//!
//! Sans-IO: every entry point takes the current time; nothing reads a clock, sleeps or does
//! I/O, so a test can drive it on a virtual clock. The QUIC glue is in `controller.rs`.
//!
//! The flow per ACK batch is the draft's `UpdateOnACK` (§5.2.3): update the model
//! (bandwidth, RTT, loss signals) and the state machine, then derive the three control
//! parameters — pacing rate, send quantum and cwnd.
//!
//! ## Draft or kernel: what v3 follows, and where it deviates
//!
//! v3 follows draft-ietf-ccwg-bbr-06, the specification QUIC stacks are held to; Linux's BBRv3
//! (google/bbr `v3`, `tcp_bbr.c`) is TCP-bound in places (SACK scoreboard, ECN, TSO). Where
//! the two differ, or the draft cannot be followed literally over QUIC, this is what is done:
//! * **Initial pacing** (§5.6.2): a nominal 1 ms RTT until the first RTT sample, then once
//!   `BBRInitPacingRate` with that sample — when the kernel does it (`has_seen_rtt`), which
//!   may lower the rate; the draft's "only raise it in Startup" rule applies from there.
//! * **Startup's loss exit** (§5.3.1.3): the draft asks for a full round in fast recovery.
//!   The round judged here starts at the round's first loss (`note_loss` moves the loss-round
//!   boundary there) and ends when a packet sent after that loss is acknowledged — exactly
//!   when the QUIC recovery period that loss began ends (RFC 9002 §7.3.2) — so the judged round
//!   is one full round of recovery, without a separate check. "Discontiguous ranges" are
//!   counted over the flight of ack-eliciting packets (`SentPacket::prev_sent_pn`), not over
//!   packet numbers, which skip the ACK-only packets the controller never sees. (The kernel's
//!   v3 counts loss-marking ACKs instead; that is v2's rule here, [`StartupLossExit`].)
//! * **extra_acked window** (§5.5.9): 1 round in Startup, `BBRExtraAckedFilterLen` = 10
//!   rounds after, as the draft; the kernel approximates 10 with two 5-round slots.
//! * **Undo** (§5.5.11): the draft's pseudocode saves the undo state at every false → true
//!   edge of `loss_in_round`, which the probe's own loss response resets, so an undo restored
//!   the model the loss had already cut. It is saved once per loss episode here, and the
//!   episode lasts while the transport may still prove any of its losses spurious (noq's
//!   report covers every pending loss, across recoveries; [`Bbr::on_loss_memory`]).
//! * **Probe randomness** (§5.3.3.8.2): drawn per connection, from a seed the caller gives
//!   ([`Bbr::with_seed`]; ccbench passes the run's recorded seed), so runs repeat.
//! * **ECN**: -06 §3.7 specifies no response of its own, but a sender that sends ECT "MUST
//!   treat any CE marks as congestion". Here the response is Linux's v3 (google/bbr `v3`,
//!   `tcp_bbr.c`; v2's `tcp_bbr2.c` has the same functions, off by default there): an EWMA of
//!   the CE fraction per round, a cut of inflight_lo by α/3 after a marked round outside
//!   probing, inflight_hi set when a probe's samples are more than half marked, Startup left
//!   after two such rounds, and a quick reprobe once a marked cycle ends (see the "ECN" section of `model.rs`).
//!   Packets carry **ECT(1)** ([`BbrParams::ecn_l4s`]): the kernel answers only
//!   "DCTCP/L4S-style" shallow-threshold marks (`bbr_can_use_ecn` needs the route's
//!   `ecn_low`), and ECT(1) is how a QUIC sender asks a queue for exactly those (RFC 9331
//!   §5). So the kernel's low-RTT gate (`bbr_ecn_max_rtt_us`, 5 ms) is not applied with
//!   ECT(1); with ECT(0) it is, as in the kernel.
//! * **Rate samples** are taken per ACK frame (noq's `on_end_acks`), not per packet, and their
//!   times are noq's receive times: see `crates/workload/src/quic/fresh_stamps.rs` and
//!   docs/quic-fidelity.md for what that does to the bandwidth estimate.

use std::collections::VecDeque;
use std::time::{Duration, Instant};

use crate::delivery_rate::{DeliveryRateSampler, RateSample, SentPacket};
use crate::telemetry::{BbrSnapshot, BbrState, StateChange, Telemetry};

mod control;
mod defects;
mod events;
mod model;
mod states;

pub use defects::DEFECTS;

/// Which BBR generation's constants and rules to run.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum BbrVersion {
    /// BBRv2: the v3 machinery with the rules of Linux's tcp_bbr2.c (the deployed BBRv2) and of
    /// draft-cardwell-iccrg-bbr-congestion-control-02 where they differ from v3 (see
    /// [`BbrParams::for_version`]).
    V2,
    /// BBRv3 as in draft-ietf-ccwg-bbr.
    V3,
}

/// `bbr2` / `bbr3`, the names `--cc quic:…` uses.
impl std::fmt::Display for BbrVersion {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            BbrVersion::V2 => "bbr2",
            BbrVersion::V3 => "bbr3",
        })
    }
}

/// When ProbeBW_UP ends (other than on excessive loss).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum UpExit {
    /// v3 (§5.3.3.7, `IsTimeToGoDown` in §5.3.3.9): the delivery rate stopped growing (by 25 % for
    /// 3 rounds) while not limited by inflight_longterm.
    BwPlateau,
    /// v2 (tcp_bbr2.c `bbr2_update_cycle_phase`, "is_queuing"; draft-cardwell-02 alike): at
    /// least min_rtt in UP and the inflight before this ACK at 1.25 × BDP or more, i.e. the
    /// extra queue for the probe is in place.
    InflightAboveTarget,
}

/// How Startup's loss exit is judged.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StartupLossExit {
    /// v3 (-06 §5.3.1.3 `CheckStartupHighLoss`): at the end of a round, more than
    /// BBRLossThresh of the round lost in at least `startup_full_loss_count` separate ranges;
    /// inflight_longterm = max(BDP, inflight_latest).
    RoundLossRate,
    /// v2 (tcp_bbr2.c `bbr2_check_loss_too_high_in_startup`): at the end of a round spent in
    /// recovery, at least `startup_full_loss_count` ACKs of that round marked packets lost, and
    /// the round-ending ACK's own sample lost more than BBRLossThresh of its tx_in_flight
    /// (`bbr2_is_inflight_too_high`); inflight_hi = Inflight(max_bw, 1)
    /// (`bbr2_handle_queue_too_high_in_startup`).
    LossMarkingAcks,
}

/// The draft's constants (§2.8 and the sections that define each one), and for v2 the
/// kernel's (tcp_bbr2.c module parameters and `bbr2_init`).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct BbrParams {
    /// BBRStartupPacingGain: v3 4·ln 2 ≈ 2.77; v2 `bbr_high_gain` 2/ln 2 ≈ 2.885.
    pub startup_pacing_gain: f64,
    /// BBRStartupCwndGain: v3 2; v2 `bbr_startup_cwnd_gain` 2.885.
    pub startup_cwnd_gain: f64,
    /// BBRDrainPacingGain: v3 0.5; v2 `bbr_drain_gain` 1/2.885.
    pub drain_pacing_gain: f64,
    /// ProbeBW_DOWN pacing gain: v3 0.9; v2 `bbr_pacing_gain[BBR_BW_PROBE_DOWN]` 0.75.
    pub probe_bw_down_pacing_gain: f64,
    /// ProbeBW_UP pacing gain: 1.25 in both.
    pub probe_bw_up_pacing_gain: f64,
    /// BBRDefaultCwndGain, used in ProbeBW: 2.
    pub cwnd_gain: f64,
    /// ProbeBW_UP cwnd gain: v3 2.25 (room for the probe's extra inflight); v2 2.
    pub probe_bw_up_cwnd_gain: f64,
    /// BBRProbeRTTCwndGain: 0.5 (ProbeRTT cwnd = BDP/2) in both.
    pub probe_rtt_cwnd_gain: f64,
    pub probe_rtt_duration: Duration,
    pub probe_rtt_interval: Duration,
    pub min_rtt_filter_len: Duration,
    /// BBRLossThresh: 2 %.
    pub loss_thresh: f64,
    /// BBRBeta: multiplicative cut of the short-term model on loss, 0.7.
    pub beta: f64,
    /// BBRHeadroom: share of inflight_longterm left free outside probing, 0.15.
    pub headroom: f64,
    /// Startup's bandwidth-plateau test: growth below 25 % ...
    pub full_bw_growth: f64,
    /// ... for 3 rounds.
    pub full_bw_rounds: u32,
    /// What the plateau test compares with the baseline: v2 (draft-cardwell-02
    /// `BBRCheckStartupFullBandwidth`, as Linux BBR) the filtered `BBR.max_bw`; v3 (-06
    /// `CheckFullBWReached`) the latest `RS.delivery_rate`, which also ends ProbeBW_UP.
    pub full_bw_on_max_bw: bool,
    /// BBRStartupFullLossCnt for the loss exit: v3 6 lost ranges in a round; v2
    /// `bbr_full_loss_cnt` 8 loss-marking ACKs in a round (see [`StartupLossExit`]).
    pub startup_full_loss_count: u32,
    pub startup_loss_exit: StartupLossExit,
    pub up_exit: UpExit,
    /// BBRPacingMarginPercent: pace 1 % below the estimate.
    pub pacing_margin: f64,
    /// v3 (-06 §5.3.2): leave Drain after this many rounds even if inflight is above the BDP
    /// (bandwidth overestimated in Startup). v2 has no such bound.
    pub drain_max_rounds: Option<u64>,
    /// Precautionary bandwidth probing (v3: -06 §5.3.3.6; v2: tcp_bbr2.c's
    /// `stopped_risky_probe`): after a probe that hit excess loss, the next UP stops as soon
    /// as inflight reaches inflight_hi, and if that caused no excess loss, probes again at once.
    pub precautionary_probing: bool,
    /// v3 (-06 §5.6.4.4): cwnd saved on a loss and restored when fast recovery ends. v2
    /// (tcp_bbr2.c): fast recovery leaves cwnd alone — `bbr2_main` never calls v1's
    /// `bbr_set_cwnd_to_recover_or_restore` (draft-cardwell-02's packet conservation), the
    /// short-term model is its only loss response — and only the end of an RTO's recovery
    /// restores cwnd (`bbr2_set_state`).
    pub recovery_restores_cwnd: bool,
    /// v2 (tcp_bbr2.c `bbr2_adapt_upper_bounds`, draft-cardwell-02 `CheckInflightTooHigh`):
    /// also judge excess loss per ACK from the newest packet's loss-since-send; -06 judges it
    /// only per lost packet.
    pub ack_path_loss_check: bool,
    /// v3 (-06 §5.5.11.2): undoing a spurious loss episode also returns to the state it
    /// interrupted (Startup, UP). v2 (tcp_bbr2.c `bbr2_undo_cwnd`, and -02) only restores the
    /// model bounds and cwnd.
    pub undo_reverts_state: bool,
    /// Test-only defect (conform A.6), false in every version: app-limited delivery-rate samples
    /// enter the max_bw filter and app-limited rounds advance it, so an application-limited
    /// ProbeBW forgets the path's bandwidth (-06 §5.5.5 BBRUpdateMaxBw takes an app-limited
    /// sample only above max_bw; §5.3.3.9 advances the filter only on a sample that is not).
    pub max_bw_counts_app_limited: bool,
    /// Test-only defect (conform A.20), false in every version: ProbeBW_UP raises
    /// inflight_longterm while the sender is not cwnd-limited (-06 §5.3.3.6
    /// BBRProbeInflightLongtermUpward grows it only when cwnd-limited at inflight_longterm).
    pub inflight_longterm_grows_app_limited: bool,
    /// Test-only defect (conform §5.4.1), false in every version: a restart from idle re-enters
    /// STARTUP, a slow-start restart, where -06 §5.4.1 BBRHandleRestartFromIdle keeps the model
    /// and state and only paces at BBR.bw (gain 1) until the pipe refills.
    pub idle_restart_enters_startup: bool,
    /// v2's bookkeeping from tcp_bbr2.c that -06 does not have: leaving Startup resets the
    /// congestion signals (`bbr_check_drain` → `bbr2_reset_congestion_signals`), entering
    /// CRUISE bounds inflight_lo by inflight_hi (`bbr2_start_bw_probe_cruise`), and UP drops
    /// the credit toward raising inflight_hi while cwnd is not at inflight_hi
    /// (`bbr2_probe_inflight_hi_upward`).
    pub tcp_bbr2_bookkeeping: bool,
    /// A deliberate defect, false in every version: max_bw keeps its highest sample forever
    /// instead of forgetting it after MaxBwFilterLen = 2 ProbeBW cycles (§5.5.3). Only for
    /// showing that the conformance suite (`ccbench conform bbr`) catches a broken filter.
    pub max_bw_never_forgets: bool,
    /// Test-only defect (conform A.2): BBRCheckFullBWReached counts app-limited samples, so an
    /// application-limited STARTUP finds a false plateau. Always false outside tests.
    pub full_bw_counts_app_limited: bool,
    /// Test-only defect (conform A.17): a loss episode the transport finds spurious is not
    /// undone (§5.5.11.2 HandleSpuriousLossDetection ignored). Always false outside tests.
    pub spurious_loss_not_undone: bool,
    /// Test-only defect: the ACK phase of delivery-rate samples is timed at each ACK's arrival
    /// (as Linux TCP does, whose receiver acknowledges in softirq), not at the peer's receipt
    /// (arrival − QUIC's ack_delay): a userspace receiver that wakes late then shortens the
    /// next phase and inflates max_bw. Always false outside tests (before/after comparisons).
    pub rate_samples_at_ack_arrival: bool,
    /// Test-only defect (conform A.9): BBRUpdateMinRTT's expiry restarts the timer's filter
    /// as it should, but BBRCheckProbeRTT never enters PROBE_RTT. Unlike a timer that never
    /// expires, BBR.probe_rtt_min_stamp keeps moving, so only a judgement that tells an expiry
    /// from a lower RTT catches it. Always false outside tests.
    pub probe_rtt_expires_unentered: bool,
    /// Test-only defect (conform A.10): BBRCheckProbeRTT enters PROBE_RTT on an expired timer
    /// even on a restart from idle, where -06 §5.3.4.3 skips it (`!BBR.idle_restart`): the
    /// idle time has already drained the queue. Always false outside tests.
    pub probe_rtt_ignores_idle_restart: bool,
    /// Send ECT(1) (L4S, RFC 9331) rather than ECT(0), and take CE marks as the kernel's
    /// shallow-threshold signal at any RTT (see the module documentation). True in both.
    pub ecn_l4s: bool,
    /// `bbr_ecn_alpha_gain`: the EWMA gain of the per-round CE fraction, 1/16.
    pub ecn_alpha_gain: f64,
    /// `bbr_ecn_alpha_init`: α before any round is measured, 1 ("respond quickly if the
    /// bottleneck is congested when the flow starts").
    pub ecn_alpha_init: f64,
    /// `bbr_ecn_factor`: after a marked round, inflight_lo ← inflight_lo × (1 − α × 1/3).
    /// 0 turns the whole ECN response off, as in the kernel (`bbr_update_ecn_alpha` never
    /// makes the flow ECN-eligible): what tests use to show a path's marks being ignored.
    pub ecn_factor: f64,
    /// `bbr_ecn_thresh`: a rate sample (or a Startup round) more than half CE-marked means
    /// inflight is too high.
    pub ecn_thresh: f64,
    /// `bbr_full_ecn_cnt`: Startup ends after this many consecutive rounds at or above
    /// `ecn_thresh`, 2.
    pub full_ecn_count: u32,
    /// `bbr_ecn_reprobe_gain`: after a cycle with marks but no loss, probe again at once,
    /// the first round of UP growing inflight_hi by this share of it: v3 1/2; v2 0 (off, as
    /// tcp_bbr2.c ships it).
    pub ecn_reprobe_gain: f64,
    /// `bbr_ecn_max_rtt_us`: with ECT(0), ECN counts only while min_rtt is at most this,
    /// 5 ms (`None`: at any RTT).
    pub ecn_max_rtt: Option<Duration>,
}

impl BbrParams {
    pub fn for_version(version: BbrVersion) -> Self {
        let v3 = Self {
            startup_pacing_gain: 4.0 * std::f64::consts::LN_2,
            startup_cwnd_gain: 2.0,
            drain_pacing_gain: 0.5,
            probe_bw_down_pacing_gain: 0.9,
            probe_bw_up_pacing_gain: 1.25,
            cwnd_gain: 2.0,
            probe_bw_up_cwnd_gain: 2.25,
            probe_rtt_cwnd_gain: 0.5,
            probe_rtt_duration: Duration::from_millis(200),
            probe_rtt_interval: Duration::from_secs(5),
            min_rtt_filter_len: Duration::from_secs(10),
            loss_thresh: 0.02,
            beta: 0.7,
            headroom: 0.15,
            full_bw_growth: 1.25,
            full_bw_rounds: 3,
            full_bw_on_max_bw: false,
            startup_full_loss_count: 6,
            startup_loss_exit: StartupLossExit::RoundLossRate,
            up_exit: UpExit::BwPlateau,
            pacing_margin: 0.01,
            drain_max_rounds: Some(3),
            precautionary_probing: true,
            recovery_restores_cwnd: true,
            ack_path_loss_check: false,
            undo_reverts_state: true,
            max_bw_counts_app_limited: false,
            inflight_longterm_grows_app_limited: false,
            idle_restart_enters_startup: false,
            tcp_bbr2_bookkeeping: false,
            max_bw_never_forgets: false,
            full_bw_counts_app_limited: false,
            spurious_loss_not_undone: false,
            rate_samples_at_ack_arrival: false,
            probe_rtt_expires_unentered: false,
            probe_rtt_ignores_idle_restart: false,
            ecn_l4s: true,
            ecn_alpha_gain: 1.0 / 16.0,
            ecn_alpha_init: 1.0,
            ecn_factor: 1.0 / 3.0,
            ecn_thresh: 0.5,
            full_ecn_count: 2,
            ecn_reprobe_gain: 0.5,
            ecn_max_rtt: Some(Duration::from_millis(5)),
        };
        // Linux's BBR high gain, 2/ln 2: the smallest gain whose smoothly rising pacing rate
        // doubles each round and sends as many packets per round as an unpaced slow start
        // (tcp_bbr2.c `bbr_high_gain`; the kernel's fixed point makes it 739/256).
        let high_gain = 2.0 / std::f64::consts::LN_2;
        match version {
            BbrVersion::V3 => v3,
            // Where draft-cardwell-iccrg-bbr-congestion-control-02 and the deployed tcp_bbr2.c
            // differ, the kernel's value: its gains (2.885, 1/2.885, DOWN 0.75), its loss
            // exit and its recovery. Beta, headroom, loss threshold, UP gain 1.25, cwnd gain 2
            // and the ProbeRTT constants are the same in both, and in v3.
            BbrVersion::V2 => Self {
                startup_pacing_gain: high_gain,
                startup_cwnd_gain: high_gain,
                drain_pacing_gain: 1.0 / high_gain,
                probe_bw_down_pacing_gain: 0.75,
                probe_bw_up_cwnd_gain: 2.0,
                full_bw_on_max_bw: true,
                startup_full_loss_count: 8,
                startup_loss_exit: StartupLossExit::LossMarkingAcks,
                up_exit: UpExit::InflightAboveTarget,
                drain_max_rounds: None,
                precautionary_probing: true,
                recovery_restores_cwnd: false,
                ack_path_loss_check: true,
                undo_reverts_state: false,
                tcp_bbr2_bookkeeping: true,
                // tcp_bbr2.c: "Default for this experimental knob is 0 (disabled)".
                ecn_reprobe_gain: 0.0,
                ..v3
            },
        }
    }
}

/// §2.14 BBR.ack_phase: which ACKs carry samples of a bandwidth probe.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum AckPhase {
    Init,
    ProbeStarting,
    ProbeFeedback,
    ProbeStopping,
    Refilling,
}

/// Windowed max over the current and the previous ProbeBW cycle (§5.5.3, MaxBwFilterLen = 2).
#[derive(Debug, Clone, Copy, Default)]
struct MaxBwFilter {
    cycle: u64,
    current: f64,
    previous: f64,
}

impl MaxBwFilter {
    fn update(&mut self, sample: f64, cycle: u64, never_forget: bool) {
        if cycle != self.cycle {
            self.previous = if never_forget {
                self.previous.max(self.current)
            } else if cycle == self.cycle + 1 {
                self.current
            } else {
                0.0
            };
            self.current = 0.0;
            self.cycle = cycle;
        }
        self.current = self.current.max(sample);
    }
    fn get(&self) -> f64 {
        self.current.max(self.previous)
    }
}

/// BBRExtraAckedFilterLen: the extra_acked max filter's window in steady state, in rounds.
const EXTRA_ACKED_FILTER_LEN: u64 = 10;

/// Windowed max over the last `window` (at most [`EXTRA_ACKED_FILTER_LEN`]) packet-timed rounds
/// (§5.5.9).
#[derive(Debug, Clone, Copy, Default)]
struct RoundMaxFilter {
    slots: [(u64, u64); EXTRA_ACKED_FILTER_LEN as usize],
}

impl RoundMaxFilter {
    fn update(&mut self, value: u64, round: u64, window: u64) -> u64 {
        let slot = &mut self.slots[(round % EXTRA_ACKED_FILTER_LEN) as usize];
        if slot.0 != round {
            *slot = (round, 0);
        }
        slot.1 = slot.1.max(value);
        let window = window.clamp(1, EXTRA_ACKED_FILTER_LEN);
        self.slots.iter().filter(|(r, _)| r + window > round).map(|s| s.1).max().unwrap_or(0)
    }
}

/// A non-zero xorshift state from any seed (splitmix64's finaliser, so that nearby seeds, such
/// as consecutive connection numbers, start far apart).
fn rng_state_from(seed: u64) -> u64 {
    let mut z = seed.wrapping_add(0x9E37_79B9_7F4A_7C15);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    (z ^ (z >> 31)).max(1)
}

/// A lost packet the transport may still prove spurious, with the model just before it was
/// declared lost: what an undo restores once the losses before it are forgotten (real).
#[derive(Clone, Copy, Debug)]
struct PendingLoss {
    sent: Instant,
    declared: Instant,
    bw_shortterm: Option<f64>,
    inflight_shortterm: Option<u64>,
    inflight_longterm: Option<u64>,
}

/// The controller. See the crate docs for what it implements and how it is fed.
#[derive(Debug, Clone)]
pub struct Bbr {
    version: BbrVersion,
    p: BbrParams,
    telemetry: Telemetry,
    pub(crate) sampler: DeliveryRateSampler,
    smss: u64,
    initial_cwnd: u64,
    /// The time of the latest call, for events raised deep inside the state machine.
    now: Instant,
    start: Instant,
    rng: u64,
    /// An RTT sample has re-initialised the pacing rate (§5.6.2; the kernel's `has_seen_rtt`).
    has_seen_rtt: bool,

    state: BbrState,
    pacing_gain: f64,
    cwnd_gain: f64,
    cwnd: u64,
    /// Bytes per second.
    pacing_rate: f64,
    send_quantum: u64,
    rs: Option<RateSample>,

    // Round counting (§5.5.1).
    round_count: u64,
    next_round_delivered: u64,
    round_start: bool,

    // Bandwidth model (§5.5.2–5.5.10); rates in bytes/s, None = ∞.
    max_bw: f64,
    max_bw_filter: MaxBwFilter,
    cycle_count: u64,
    bw: f64,
    bw_shortterm: Option<f64>,
    bw_latest: f64,
    inflight_longterm: Option<u64>,
    inflight_shortterm: Option<u64>,
    inflight_latest: u64,
    extra_acked: u64,
    extra_acked_filter: RoundMaxFilter,
    extra_acked_interval_start: Option<Instant>,
    extra_acked_delivered: u64,

    // RTT model and ProbeRTT (§5.3.4).
    min_rtt: Option<Duration>,
    min_rtt_stamp: Instant,
    probe_rtt_min_delay: Option<Duration>,
    probe_rtt_min_stamp: Instant,
    probe_rtt_expired: bool,
    probe_rtt_done_stamp: Option<Instant>,
    probe_rtt_round_done: bool,
    prior_cwnd: u64,
    idle_restart: bool,

    // Startup (§5.3.1).
    full_bw: f64,
    full_bw_count: u32,
    /// BBR.round_count when full_bw last grew 25 % (or was reset): where §5.3.1.2's
    /// full_bw_count starts counting, so that a STARTUP exit's round minus this is the number
    /// of rounds the plateau lasted (app-limited rounds included, which the count skips).
    full_bw_round: u64,
    full_bw_now: bool,
    full_bw_reached: bool,
    ssthresh: Option<u64>,

    // Loss signals (§5.5.10).
    loss_in_round: bool,
    loss_round_delivered: u64,
    loss_round_start: bool,
    loss_events_in_round: u32,
    /// v2's Startup loss exit: ACKs in this round that marked packets lost (saturating at 15,
    /// as the kernel's 4-bit counter).
    loss_marking_acks_in_round: u32,
    lost_bytes_in_round: u64,
    delivered_at_loss_round_start: u64,
    last_lost_pn: Option<u64>,

    // ProbeBW (§5.3.3).
    cycle_stamp: Instant,
    ack_phase: AckPhase,
    rounds_since_bw_probe: u64,
    bw_probe_wait: Duration,
    bw_probe_up_rounds: u32,
    bw_probe_up_acks: u64,
    probe_up_cnt: u64,
    bw_probe_samples: bool,
    prev_probe_too_high: bool,
    prev_probe_precautionary: bool,
    drain_start_round: u64,
    cwnd_limited_this_round: bool,
    cwnd_limited_last_round: bool,

    // Loss recovery (§5.6.4.4): from the first loss until a packet sent after it is acked.
    recovery_start: Option<Instant>,
    /// The recovery began with persistent congestion (QUIC's RTO), which cut cwnd.
    recovery_after_rto: bool,

    // Undo state (§5.5.11): the model before a loss episode, restored if it was spurious.
    /// The undo state below holds the pre-loss model of the losses the transport may still
    /// prove spurious: it is saved at the first loss after none was pending, and kept until
    /// every pending loss is proven spurious (undone) or forgotten by the transport (real).
    /// Without the transport's memory ([`Bbr::on_loss_memory`]) the episode ends with recovery.
    undo_saved: bool,
    /// Send times of the packets declared lost that the transport may still prove spurious:
    /// noq forgets a lost packet 2 PTOs after sending it (`drain_lost_packets`) and reports a
    /// spurious episode only when an ACK leaves none pending (`detect_spurious_loss`), so one
    /// report covers every loss since none was pending, across recoveries.
    lost_pending: VecDeque<PendingLoss>,
    /// When `undo_state` was last set: a loss the transport forgets (a real one) keeps the
    /// state change it caused.
    undo_state_since: Option<Instant>,
    /// How long after sending the transport remembers a lost packet (noq: 2 × PTO).
    loss_memory: Option<Duration>,
    undo_state: Option<BbrState>,
    undo_bw_shortterm: Option<f64>,
    undo_inflight_shortterm: Option<u64>,
    undo_inflight_longterm: Option<u64>,

    // ECN (tcp_bbr.c v3; see the "ECN" section of `model.rs`).
    /// The peer's ECN counts have come back (noq validated them, RFC 9000 §13.4.2).
    ecn_feedback_seen: bool,
    /// `ecn_eligible`: once set, CE marks are answered (`bbr_update_ecn_alpha`).
    ecn_eligible: bool,
    /// `ecn_alpha`: EWMA of the CE fraction per round.
    ecn_alpha: f64,
    /// The sampler's ECN counters at the last α update (`alpha_last_delivered{,_ce}`).
    alpha_last_ecn: (u64, u64),
    startup_ecn_rounds: u32,
    ecn_in_round: bool,
    ecn_in_cycle: bool,
    loss_in_cycle: bool,
}

impl Bbr {
    /// A controller for a path whose datagrams are at most `mtu` bytes. `now` is the virtual
    /// or real time of creation.
    ///
    /// Its probe randomness starts from a fixed seed; give each connection its own with
    /// [`Bbr::with_seed`].
    pub fn new(version: BbrVersion, mtu: u16, now: Instant, telemetry: Telemetry) -> Self {
        Self::with_seed(version, mtu, now, telemetry, 0)
    }

    /// As [`Bbr::new`], with the probe randomness (§5.3.3.8.2's random wait and Reno-round
    /// offset) drawn from `seed`: the draft asks for a random draw per connection "for better
    /// mixing and fairness convergence", and a seed recorded with the run keeps it repeatable.
    pub fn with_seed(version: BbrVersion, mtu: u16, now: Instant, telemetry: Telemetry, seed: u64) -> Self {
        Self::with_params(version, BbrParams::for_version(version), mtu, now, telemetry, seed)
    }

    /// As [`Bbr::with_seed`], with every constant given: for tests that vary one (or break one
    /// on purpose, as the conformance suite's own test does).
    pub fn with_params(version: BbrVersion, p: BbrParams, mtu: u16, now: Instant, telemetry: Telemetry, seed: u64) -> Self {
        let smss = u64::from(mtu.max(1200));
        // RFC 9002 §7.2 initial window, the value QUIC stacks use.
        let initial_cwnd = (10 * smss).min((2 * smss).max(14_720));
        let mut bbr = Self {
            version,
            p,
            telemetry,
            sampler: DeliveryRateSampler::new(),
            smss,
            initial_cwnd,
            now,
            start: now,
            rng: rng_state_from(seed),
            has_seen_rtt: false,
            state: BbrState::Startup,
            pacing_gain: p.startup_pacing_gain,
            cwnd_gain: p.startup_cwnd_gain,
            cwnd: initial_cwnd,
            pacing_rate: 0.0,
            send_quantum: 2 * smss,
            rs: None,
            round_count: 0,
            next_round_delivered: 0,
            round_start: false,
            max_bw: 0.0,
            max_bw_filter: MaxBwFilter::default(),
            cycle_count: 0,
            bw: 0.0,
            bw_shortterm: None,
            bw_latest: 0.0,
            inflight_longterm: None,
            inflight_shortterm: None,
            inflight_latest: 0,
            extra_acked: 0,
            extra_acked_filter: RoundMaxFilter::default(),
            extra_acked_interval_start: None,
            extra_acked_delivered: 0,
            min_rtt: None,
            min_rtt_stamp: now,
            probe_rtt_min_delay: None,
            probe_rtt_min_stamp: now,
            probe_rtt_expired: false,
            probe_rtt_done_stamp: None,
            probe_rtt_round_done: false,
            prior_cwnd: 0,
            idle_restart: false,
            full_bw: 0.0,
            full_bw_count: 0,
            full_bw_round: 0,
            full_bw_now: false,
            full_bw_reached: false,
            ssthresh: None,
            loss_in_round: false,
            loss_round_delivered: 0,
            loss_round_start: false,
            loss_events_in_round: 0,
            loss_marking_acks_in_round: 0,
            lost_bytes_in_round: 0,
            delivered_at_loss_round_start: 0,
            last_lost_pn: None,
            cycle_stamp: now,
            ack_phase: AckPhase::Init,
            rounds_since_bw_probe: 0,
            bw_probe_wait: Duration::ZERO,
            bw_probe_up_rounds: 0,
            bw_probe_up_acks: 0,
            probe_up_cnt: u64::MAX,
            bw_probe_samples: false,
            prev_probe_too_high: false,
            prev_probe_precautionary: false,
            drain_start_round: 0,
            cwnd_limited_this_round: false,
            cwnd_limited_last_round: false,
            recovery_start: None,
            recovery_after_rto: false,
            undo_saved: false,
            lost_pending: VecDeque::new(),
            undo_state_since: None,
            loss_memory: None,
            undo_state: None,
            undo_bw_shortterm: None,
            undo_inflight_shortterm: None,
            undo_inflight_longterm: None,
            ecn_feedback_seen: false,
            ecn_eligible: false,
            ecn_alpha: p.ecn_alpha_init,
            alpha_last_ecn: (0, 0),
            startup_ecn_rounds: 0,
            ecn_in_round: false,
            ecn_in_cycle: false,
            loss_in_cycle: false,
        };
        // §5.6.2 BBRInitPacingRate: initial window over a nominal 1 ms RTT, at Startup gain.
        bbr.pacing_rate = p.startup_pacing_gain * initial_cwnd as f64 / 1e-3;
        bbr.publish();
        bbr
    }

    pub fn version(&self) -> BbrVersion {
        self.version
    }
    pub fn params(&self) -> &BbrParams {
        &self.p
    }
    pub fn state(&self) -> BbrState {
        self.state
    }
    pub fn cwnd(&self) -> u64 {
        self.cwnd
    }
    pub fn initial_cwnd(&self) -> u64 {
        self.initial_cwnd
    }
    /// Pacing rate in bytes per second.
    pub fn pacing_rate(&self) -> u64 {
        self.pacing_rate.round() as u64
    }
    pub fn send_quantum(&self) -> u64 {
        self.send_quantum
    }
    /// BBR.extra_acked (§5.5.9): the ACK-aggregation allowance added to cwnd, in bytes.
    pub fn extra_acked(&self) -> u64 {
        self.extra_acked
    }
    /// BBR.bw in bytes per second.
    pub fn bw(&self) -> f64 {
        self.bw
    }
    /// Cwnd at Startup exit (the BDP then), as Linux BBR sets ssthresh; `None` in Startup.
    pub fn ssthresh(&self) -> Option<u64> {
        self.ssthresh
    }
    pub fn telemetry(&self) -> &Telemetry {
        &self.telemetry
    }
    /// tcp_bbr.c's `ecn_alpha`: the EWMA of the CE-marked fraction per round.
    pub fn ecn_alpha(&self) -> f64 {
        self.ecn_alpha
    }
    /// Whether CE marks are being answered (tcp_bbr.c `ecn_eligible`).
    pub fn ecn_eligible(&self) -> bool {
        self.ecn_eligible
    }

    pub fn snapshot(&self) -> BbrSnapshot {
        let bps = |bytes_per_s: f64| (bytes_per_s * 8.0).round() as u64;
        BbrSnapshot {
            state: self.state,
            pacing_rate_bps: bps(self.pacing_rate),
            delivery_rate_bps: bps(self.rs.map_or(0.0, |rs| rs.delivery_rate)),
            max_bw_bps: bps(self.max_bw),
            min_rtt: self.min_rtt,
            cwnd_bytes: self.cwnd,
            inflight_hi: self.inflight_longterm,
            inflight_lo: self.inflight_shortterm,
            pacing_gain: self.pacing_gain,
            cwnd_gain: self.cwnd_gain,
            bw_bps: bps(self.bw),
            bw_lo_bps: self.bw_shortterm.map(bps),
            full_bw_reached: self.full_bw_reached,
            extra_acked: self.extra_acked,
            bytes_in_flight: self.sampler.inflight(),
            round_count: self.round_count,
            cycle_count: self.cycle_count,
            probe_rtt_min_delay: self.probe_rtt_min_delay,
            probe_rtt_min_stamp: self.probe_rtt_min_stamp,
            delivered_bytes: self.sampler.delivered(),
            lost_bytes: self.sampler.lost(),
        }
    }

    fn publish(&self) {
        self.telemetry.publish(self.snapshot());
    }
}
