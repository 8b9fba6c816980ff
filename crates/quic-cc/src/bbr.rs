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
//!   the model the loss had already cut. It is saved once per loss episode here.
//! * **Probe randomness** (§5.3.3.8.2): drawn per connection, from a seed the caller gives
//!   ([`Bbr::with_seed`]; ccbench passes the run's recorded seed), so runs repeat.
//! * **ECN**: -06 §3.7 specifies no response of its own, but a sender that sends ECT "MUST
//!   treat any CE marks as congestion". Here the response is Linux's v3 (google/bbr `v3`,
//!   `tcp_bbr.c`; v2's `tcp_bbr2.c` has the same functions, off by default there): an EWMA of
//!   the CE fraction per round, a cut of inflight_lo by α/3 after a marked round outside
//!   probing, inflight_hi set when a probe's samples are more than half marked, Startup left
//!   after two such rounds, and a quick reprobe once a marked cycle ends (see "ECN" below).
//!   Packets carry **ECT(1)** ([`BbrParams::ecn_l4s`]): the kernel answers only
//!   "DCTCP/L4S-style" shallow-threshold marks (`bbr_can_use_ecn` needs the route's
//!   `ecn_low`), and ECT(1) is how a QUIC sender asks a queue for exactly those (RFC 9331
//!   §5). So the kernel's low-RTT gate (`bbr_ecn_max_rtt_us`, 5 ms) is not applied with
//!   ECT(1); with ECT(0) it is, as in the kernel.
//! * **Rate samples** are taken per ACK frame (noq's `on_end_acks`), not per packet, and their
//!   times are noq's receive times: see `crates/workload/src/quic/fresh_stamps.rs` and
//!   docs/quic-fidelity.md for what that does to the bandwidth estimate.

use std::time::{Duration, Instant};

use crate::delivery_rate::{DeliveryRateSampler, RateSample, SentPacket};
use crate::telemetry::{BbrSnapshot, BbrState, StateChange, Telemetry};

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
    /// Test-only defect (conform A.10), false in every version: a restart from idle re-enters
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
    /// The undo state below holds this episode's pre-loss model: it is saved once, at the
    /// episode's first loss, and kept until the episode ends (recovery over, or undone).
    undo_saved: bool,
    undo_state: Option<BbrState>,
    undo_bw_shortterm: Option<f64>,
    undo_inflight_shortterm: Option<u64>,
    undo_inflight_longterm: Option<u64>,

    // ECN (tcp_bbr.c v3; see "ECN" below).
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
            bytes_in_flight: self.sampler.inflight(),
            round_count: self.round_count,
            delivered_bytes: self.sampler.delivered(),
            lost_bytes: self.sampler.lost(),
        }
    }

    fn publish(&self) {
        self.telemetry.publish(self.snapshot());
    }

    // ---------------------------------------------------------------- transport events

    /// A packet of `bytes` with number `pn` left (§5.2.2 `OnTransmit`).
    pub fn on_packet_sent(&mut self, now: Instant, bytes: u64, pn: u64) {
        self.now = now;
        self.handle_restart_from_idle(now);
        self.sampler.on_packet_sent(now, bytes, pn);
        if self.sampler.inflight() + self.smss > self.cwnd {
            self.cwnd_limited_this_round = true;
        }
    }

    /// The sender was blocked by cwnd (the draft's `C.is_cwnd_limited`).
    pub fn on_cwnd_limited(&mut self) {
        self.cwnd_limited_this_round = true;
    }

    /// The application had nothing to send and neither cwnd nor pacing held it back.
    pub fn on_app_limited(&mut self) {
        if self.sampler.inflight() < self.cwnd {
            self.sampler.mark_app_limited();
        }
    }

    /// One packet, sent at `sent`, was acknowledged. Call [`Bbr::on_ack_batch_end`] after
    /// the last packet of an ACK frame.
    pub fn on_packet_acked(&mut self, now: Instant, sent: Instant, pn: u64) {
        self.now = now;
        self.sampler.on_packet_acked_sent_at(now, pn, sent);
        if self.recovery_start.is_some_and(|start| sent > start) {
            // RFC 9002 §7.3.2: recovery ends once a packet sent after it began is acked.
            self.recovery_start = None;
            if self.p.recovery_restores_cwnd || self.recovery_after_rto {
                self.restore_cwnd();
            }
            self.recovery_after_rto = false;
            self.undo_saved = false;
        }
    }

    /// End of an ACK batch: take a rate sample and run `UpdateOnACK` (§5.2.3).
    pub fn on_ack_batch_end(&mut self, now: Instant) {
        self.now = now;
        let Some(rs) = self.sampler.generate() else {
            return;
        };
        self.rs = Some(rs);
        self.update_model_and_state(now, &rs);
        self.update_control_parameters(&rs);
        // tcp_bbr.c `bbr_main`, after the update: this cycle saw loss / CE marks.
        self.loss_in_cycle |= rs.lost > 0;
        self.ecn_in_cycle |= rs.ce_delivered > 0;
        self.publish();
    }

    /// One packet was declared lost (§5.5.10.2 `BBRHandleLostPacket`).
    pub fn on_packet_lost(&mut self, now: Instant, pn: u64) {
        self.now = now;
        let Some(packet) = self.sampler.on_packet_lost(pn) else {
            return;
        };
        // A new lost range unless the previous packet of the flight was lost too (§5.3.1.3's
        // "discontiguous sequence ranges"; packet numbers skip the ACK-only packets between).
        if self.last_lost_pn.is_none() || packet.prev_sent_pn != self.last_lost_pn {
            self.loss_events_in_round += 1;
        }
        self.last_lost_pn = Some(pn);
        self.lost_bytes_in_round += packet.size;
        self.note_loss();
        if !self.bw_probe_samples {
            return;
        }
        let lost_since_sent = self.sampler.lost() - packet.lost;
        if self.is_inflight_too_high(lost_since_sent, packet.tx_in_flight) {
            let inflight_at_loss = self.inflight_at_loss(&packet, lost_since_sent);
            self.handle_inflight_too_high(inflight_at_loss, packet.is_app_limited);
        }
    }

    /// A loss episode (one per batch of lost packets): enter recovery (§5.6.4.4).
    pub fn on_congestion_event(&mut self, now: Instant, persistent: bool) {
        self.now = now;
        if persistent {
            // RFC 9002 §7.6.2 persistent congestion, the draft's OnEnterRTO.
            self.save_cwnd();
            self.save_state_upon_loss();
            self.cwnd = (self.sampler.inflight() + self.smss).max(self.min_pipe_cwnd());
            self.recovery_start = Some(now);
            self.recovery_after_rto = true;
        } else if self.recovery_start.is_none() {
            // OnEnterFastRecovery: remember cwnd for its restore; cwnd itself is left alone
            // (the response to loss is the short-term model). The model for the undo was saved
            // by this episode's first lost packet, before that loss could change it (noq
            // reports the lost packets before the congestion event).
            self.save_cwnd();
            self.save_state_upon_loss();
            self.recovery_start = Some(now);
        }
        self.publish();
    }

    /// An in-order ACK's ECN count increases: `ect` packets arrived unmarked, `ce` marked
    /// (noq's `process_ecn`, after the ACK's rate sample and loss detection, so a mark is
    /// seen one ACK later than the kernel's `rs->is_ece`).
    pub fn on_ecn_feedback(&mut self, now: Instant, ect: u64, ce: u64) {
        self.now = now;
        self.ecn_feedback_seen = true;
        self.sampler.on_ecn_counts(ect, ce);
        // tcp_bbr.c `bbr_main`: ecn_in_round |= ecn_eligible && rs->is_ece.
        if ce > 0 && self.ecn_eligible {
            self.ecn_in_round = true;
        }
    }

    /// The losses of the last episode were spurious (§5.5.11.2 HandleSpuriousLossDetection).
    pub fn on_spurious_loss(&mut self, now: Instant) {
        self.now = now;
        self.restore_cwnd();
        self.loss_in_round = false;
        self.reset_full_bw();
        let max_f = |a: Option<f64>, b: Option<f64>| a.zip(b).map(|(a, b)| a.max(b));
        let max_u = |a: Option<u64>, b: Option<u64>| a.zip(b).map(|(a, b)| a.max(b));
        self.bw_shortterm = max_f(self.bw_shortterm, self.undo_bw_shortterm);
        self.inflight_shortterm = max_u(self.inflight_shortterm, self.undo_inflight_shortterm);
        self.inflight_longterm = max_u(self.inflight_longterm, self.undo_inflight_longterm);
        match self.undo_state.filter(|_| self.p.undo_reverts_state) {
            Some(BbrState::Startup) if self.state != BbrState::Startup => {
                self.full_bw_reached = false;
                if self.state != BbrState::ProbeRtt {
                    self.set_state(BbrState::Startup);
                }
            }
            Some(BbrState::ProbeBwUp) if self.state != BbrState::ProbeBwUp && self.state != BbrState::ProbeRtt => {
                self.start_probe_bw_refill();
            }
            _ => {}
        }
        self.undo_state = None;
        self.undo_saved = false;
        self.publish();
    }

    /// §5.5.11.1 SaveStateUponLoss, once per loss episode. Saving again later in the episode
    /// would store what the episode's own losses made of the model — a probe's excess loss sets
    /// inflight_longterm and the undo state UP, and StartProbeBW_DOWN clears `loss_in_round`
    /// so that the next lost packet looks like a new episode — and an undo would then restore
    /// that instead of the model before the loss. (The draft's pseudocode saves on every
    /// `loss_in_round` false → true, which has exactly this problem.)
    fn save_state_upon_loss(&mut self) {
        if self.undo_saved {
            return;
        }
        self.undo_saved = true;
        self.undo_state = None;
        self.undo_bw_shortterm = self.bw_shortterm;
        self.undo_inflight_shortterm = self.inflight_shortterm;
        self.undo_inflight_longterm = self.inflight_longterm;
    }

    pub fn on_mtu_update(&mut self, mtu: u16) {
        self.smss = u64::from(mtu.max(1200));
    }

    // ---------------------------------------------------------------- §5.2.3 update flow

    fn update_model_and_state(&mut self, now: Instant, rs: &RateSample) {
        self.update_latest_delivery_signals(rs);
        self.update_congestion_signals(rs);
        self.update_ack_aggregation(now, rs);
        self.check_startup_loss_marking_acks(rs);
        self.check_full_bw_reached(rs);
        self.check_startup_done();
        self.check_drain_done(now);
        self.update_probe_bw_cycle_phase(now, rs);
        self.update_min_rtt(now, rs);
        self.check_probe_rtt(now, rs);
        self.advance_latest_delivery_signals(rs);
        self.bound_bw_for_model();
    }

    fn update_control_parameters(&mut self, rs: &RateSample) {
        if !self.has_seen_rtt && !rs.rtt.is_zero() {
            self.init_pacing_rate_from_rtt(rs.rtt);
        }
        self.set_pacing_rate();
        self.set_send_quantum();
        self.set_cwnd(rs);
    }

    fn set_state(&mut self, to: BbrState) {
        let (pacing_gain, cwnd_gain) = match to {
            BbrState::Startup => (self.p.startup_pacing_gain, self.p.startup_cwnd_gain),
            BbrState::Drain => (self.p.drain_pacing_gain, self.p.startup_cwnd_gain),
            BbrState::ProbeBwDown => (self.p.probe_bw_down_pacing_gain, self.p.cwnd_gain),
            BbrState::ProbeBwCruise | BbrState::ProbeBwRefill => (1.0, self.p.cwnd_gain),
            BbrState::ProbeBwUp => (self.p.probe_bw_up_pacing_gain, self.p.probe_bw_up_cwnd_gain),
            BbrState::ProbeRtt => (1.0, self.p.probe_rtt_cwnd_gain),
        };
        self.pacing_gain = pacing_gain;
        self.cwnd_gain = cwnd_gain;
        if to != self.state {
            self.telemetry.record(StateChange { at: self.now, from: self.state, to });
            self.state = to;
        }
    }

    // ---------------------------------------------------------------- rounds, §5.5.1

    fn update_round(&mut self, rs: &RateSample) {
        self.round_start = rs.prior_delivered >= self.next_round_delivered;
        if self.round_start {
            self.start_round();
            self.round_count += 1;
            self.rounds_since_bw_probe += 1;
            self.cwnd_limited_last_round = self.cwnd_limited_this_round;
            self.cwnd_limited_this_round = false;
        }
    }

    fn start_round(&mut self) {
        self.next_round_delivered = self.sampler.delivered();
    }

    fn is_cwnd_limited(&self) -> bool {
        self.cwnd_limited_this_round || self.cwnd_limited_last_round
    }

    // ---------------------------------------------------------------- bandwidth model

    /// §5.5.10.3 BBRUpdateLatestDeliverySignals.
    fn update_latest_delivery_signals(&mut self, rs: &RateSample) {
        self.loss_round_start = false;
        self.bw_latest = self.bw_latest.max(rs.delivery_rate);
        self.inflight_latest = self.inflight_latest.max(rs.delivered);
        if rs.prior_delivered >= self.loss_round_delivered {
            self.loss_round_delivered = self.sampler.delivered();
            self.loss_round_start = true;
        }
    }

    /// §5.5.10.3 BBRAdvanceLatestDeliverySignals.
    fn advance_latest_delivery_signals(&mut self, rs: &RateSample) {
        if self.loss_round_start {
            self.bw_latest = rs.delivery_rate;
            self.inflight_latest = rs.delivered;
        }
    }

    /// §5.5.10.3 BBRUpdateCongestionSignals.
    fn update_congestion_signals(&mut self, rs: &RateSample) {
        // §5.5.5 BBRUpdateMaxBw.
        self.update_round(rs);
        if self.round_start {
            self.update_ecn_alpha();
        }
        if rs.delivery_rate > 0.0 && (rs.delivery_rate >= self.max_bw || !rs.is_app_limited || self.p.max_bw_counts_app_limited) {
            self.max_bw_filter.update(rs.delivery_rate, self.cycle_count, self.p.max_bw_never_forgets);
            self.max_bw = self.max_bw_filter.get();
        }
        if !self.loss_round_start {
            return;
        }
        self.check_startup_high_loss();
        self.adapt_lower_bounds_from_congestion();
        self.loss_in_round = false;
        self.ecn_in_round = false;
        self.loss_events_in_round = 0;
        self.lost_bytes_in_round = 0;
        self.last_lost_pn = None;
        self.delivered_at_loss_round_start = self.sampler.delivered();
    }

    /// §5.5.10.3 BBRAdaptLowerBoundsFromCongestion: cut the short-term model by Beta after a
    /// round with loss, except while deliberately probing (Startup, REFILL, UP).
    ///
    /// A round with CE marks cuts inflight_lo by α × `ecn_factor` (tcp_bbr.c
    /// `bbr_adapt_lower_bounds` with `bbr_ecn_lower_bounds`): not floored by this round's
    /// delivery as the loss cut is, and bw_lo is left alone; the lower of the two cuts wins.
    fn adapt_lower_bounds_from_congestion(&mut self) {
        if self.is_probing_bw() {
            return;
        }
        let mut ecn_inflight_lo = None;
        if self.ecn_in_round && self.p.ecn_factor > 0.0 {
            let inflight_lo = *self.inflight_shortterm.get_or_insert(self.cwnd);
            ecn_inflight_lo = Some((inflight_lo as f64 * (1.0 - self.ecn_alpha * self.p.ecn_factor)) as u64);
        }
        if self.loss_in_round {
            // BBRInitLowerBounds.
            let bw_lo = *self.bw_shortterm.get_or_insert(self.max_bw);
            let inflight_lo = *self.inflight_shortterm.get_or_insert(self.cwnd);
            // BBRLossLowerBounds.
            self.bw_shortterm = Some(self.bw_latest.max(self.p.beta * bw_lo));
            self.inflight_shortterm = Some(self.inflight_latest.max((self.p.beta * inflight_lo as f64) as u64));
        }
        if let Some(ecn_lo) = ecn_inflight_lo {
            self.inflight_shortterm = Some(self.inflight_shortterm.map_or(ecn_lo, |lo| lo.min(ecn_lo)));
        }
    }

    fn is_probing_bw(&self) -> bool {
        matches!(self.state, BbrState::Startup | BbrState::ProbeBwRefill | BbrState::ProbeBwUp)
    }

    fn reset_short_term_model(&mut self) {
        self.bw_shortterm = None;
        self.inflight_shortterm = None;
    }

    fn reset_congestion_signals(&mut self) {
        self.loss_in_round = false;
        self.bw_latest = 0.0;
        self.inflight_latest = 0;
        self.reset_ecn_signals();
    }

    /// The ECN part of tcp_bbr.c `bbr_reset_congestion_signals` (and the loss-in-cycle flag
    /// the ECN reprobe reads).
    fn reset_ecn_signals(&mut self) {
        self.ecn_in_round = false;
        self.ecn_in_cycle = false;
        self.loss_in_cycle = false;
    }

    /// §5.5.10.3 BBRBoundBWForModel.
    fn bound_bw_for_model(&mut self) {
        self.bw = self.bw_shortterm.map_or(self.max_bw, |lo| self.max_bw.min(lo));
    }

    /// §5.5.9 BBRUpdateACKAggregation: bytes acked beyond what bw explains, max over 10 rounds
    /// in steady state (BBRExtraAckedFilterLen) but over 1 round in Startup, as the draft has it:
    /// while bw doubles each round, an older round's excess over a bw half as large is not
    /// aggregation, and keeping it would inflate Startup's cwnd and queue.
    fn update_ack_aggregation(&mut self, now: Instant, rs: &RateSample) {
        let start = *self.extra_acked_interval_start.get_or_insert(now);
        let interval = now.saturating_duration_since(start).as_secs_f64();
        let mut expected = (self.bw * interval) as u64;
        if self.extra_acked_delivered <= expected {
            self.extra_acked_delivered = 0;
            self.extra_acked_interval_start = Some(now);
            expected = 0;
        }
        self.extra_acked_delivered += rs.newly_acked;
        let extra = (self.extra_acked_delivered - expected).min(self.cwnd);
        let window = if self.full_bw_reached { EXTRA_ACKED_FILTER_LEN } else { 1 };
        self.extra_acked = self.extra_acked_filter.update(extra, self.round_count, window);
    }

    // ---------------------------------------------------------------- loss signals

    fn note_loss(&mut self) {
        if !self.loss_in_round {
            self.loss_round_delivered = self.sampler.delivered();
        }
        self.save_state_upon_loss();
        self.loss_in_round = true;
        self.loss_in_cycle = true;
    }

    /// §5.5.10.2 IsInflightTooHigh: more than BBRLossThresh of what was in flight was lost.
    fn is_inflight_too_high(&self, lost: u64, tx_in_flight: u64) -> bool {
        lost as f64 > tx_in_flight as f64 * self.p.loss_thresh
    }

    /// §5.5.10.2 BBRInflightAtLoss: the inflight at which the loss rate crossed the threshold,
    /// interpolated inside the lost packet.
    fn inflight_at_loss(&self, packet: &SentPacket, lost: u64) -> u64 {
        let inflight_prev = packet.tx_in_flight.saturating_sub(packet.size) as f64;
        let lost_prev = lost.saturating_sub(packet.size) as f64;
        let lost_prefix = ((self.p.loss_thresh * inflight_prev - lost_prev) / (1.0 - self.p.loss_thresh)).max(0.0);
        (inflight_prev + lost_prefix) as u64
    }

    /// §5.5.10.2 BBRHandleInflightTooHigh: the probe found the limit; remember it.
    fn handle_inflight_too_high(&mut self, tx_in_flight: u64, app_limited: bool) {
        self.prev_probe_too_high = true;
        self.bw_probe_samples = false;
        if !app_limited {
            let floor = (self.target_inflight() as f64 * self.p.beta) as u64;
            self.inflight_longterm = Some(tx_in_flight.max(floor));
        }
        if self.state == BbrState::ProbeBwUp {
            self.undo_state = Some(BbrState::ProbeBwUp);
            self.start_probe_bw_down();
        }
    }

    /// §5.3.1.3 BBRCheckStartupHighLoss (v3, [`StartupLossExit::RoundLossRate`]): leave
    /// Startup when a round lost more than BBRLossThresh in at least BBRStartupFullLossCnt
    /// separate ranges.
    fn check_startup_high_loss(&mut self) {
        if self.p.startup_loss_exit != StartupLossExit::RoundLossRate || self.full_bw_reached || self.state != BbrState::Startup {
            return;
        }
        let delivered = self.sampler.delivered() - self.delivered_at_loss_round_start;
        let sent = delivered + self.lost_bytes_in_round;
        if self.loss_events_in_round >= self.p.startup_full_loss_count && self.is_inflight_too_high(self.lost_bytes_in_round, sent) {
            self.undo_state = Some(BbrState::Startup);
            self.full_bw_reached = true;
            let bdp = self.bdp_multiple(self.max_bw, 1.0);
            self.inflight_longterm = Some(bdp.max(self.inflight_latest));
        }
    }

    /// v2's Startup loss exit ([`StartupLossExit::LossMarkingAcks`], tcp_bbr2.c
    /// `bbr2_check_loss_too_high_in_startup`): judged once per round, at its end, and only in
    /// recovery, so that one or two random losses in a small early round cannot end Startup.
    fn check_startup_loss_marking_acks(&mut self, rs: &RateSample) {
        if self.p.startup_loss_exit != StartupLossExit::LossMarkingAcks || self.full_bw_reached {
            return;
        }
        // noq reports an ACK's losses after the ACK, so they arrive with the next sample.
        if rs.newly_lost > 0 {
            self.loss_marking_acks_in_round = (self.loss_marking_acks_in_round + 1).min(15);
        }
        if self.loss_round_start
            && self.recovery_start.is_some()
            && self.loss_marking_acks_in_round >= self.p.startup_full_loss_count
            && (self.is_inflight_too_high(rs.lost, rs.tx_in_flight) || self.is_ecn_too_high(rs))
        {
            // bbr2_handle_queue_too_high_in_startup.
            self.undo_state = Some(BbrState::Startup);
            self.full_bw_reached = true;
            self.inflight_longterm = Some(self.inflight_for(1.0));
            return;
        }
        if self.loss_round_start {
            self.loss_marking_acks_in_round = 0;
        }
    }

    // ---------------------------------------------------------------- ECN
    //
    // Linux's v3 (google/bbr `v3` branch, net/ipv4/tcp_bbr.c); -06 §3.7 leaves the response
    // open but requires one. What each function follows is named beside it. CE counts are
    // QUIC's per-packet ECN counts (RFC 9000 §13.4.1), kept by the sampler.

    /// tcp_bbr.c `bbr_update_ecn_alpha`, at each round start: become ECN-eligible once the
    /// peer's ECN counts come back (the kernel's `bbr_can_use_ecn`: negotiated, and marks
    /// known to be shallow-threshold, which ECT(1) asks for; with ECT(0) also min_rtt ≤
    /// `ecn_max_rtt`), then α ← (1 − g)·α + g·(CE / delivered) over the packets since the
    /// last update, and Startup's ECN exit.
    fn update_ecn_alpha(&mut self) {
        if !self.ecn_eligible && self.ecn_feedback_seen && self.p.ecn_factor > 0.0 {
            let low_rtt = match self.p.ecn_max_rtt {
                None => true,
                Some(max) => self.min_rtt.is_some_and(|rtt| rtt <= max),
            };
            self.ecn_eligible = self.p.ecn_l4s || low_rtt;
        }
        if !self.ecn_eligible {
            return;
        }
        let (ecn, ce) = self.sampler.ecn_counts();
        let (last_ecn, last_ce) = self.alpha_last_ecn;
        let delivered = ecn - last_ecn;
        if delivered == 0 {
            return;
        }
        let ce_ratio = (ce - last_ce) as f64 / delivered as f64;
        let g = self.p.ecn_alpha_gain;
        self.ecn_alpha = ((1.0 - g) * self.ecn_alpha + g * ce_ratio).min(1.0);
        self.alpha_last_ecn = (ecn, ce);
        self.check_ecn_too_high_in_startup(ce_ratio);
    }

    /// tcp_bbr.c `bbr_check_ecn_too_high_in_startup`: `full_ecn_count` consecutive rounds at
    /// least `ecn_thresh` marked end Startup, with inflight_hi at the BDP or the latest
    /// round's delivery (`bbr_handle_queue_too_high_in_startup`).
    fn check_ecn_too_high_in_startup(&mut self, ce_ratio: f64) {
        if self.full_bw_reached || self.p.full_ecn_count == 0 || self.p.ecn_thresh <= 0.0 {
            return;
        }
        if ce_ratio >= self.p.ecn_thresh {
            self.startup_ecn_rounds += 1;
        } else {
            self.startup_ecn_rounds = 0;
        }
        if self.startup_ecn_rounds >= self.p.full_ecn_count {
            self.full_bw_reached = true;
            self.inflight_longterm = Some(self.inflight_for(1.0).max(self.inflight_latest));
        }
    }

    /// The ECN half of tcp_bbr.c `bbr_is_inflight_too_high`: more than `ecn_thresh` of the
    /// packets delivered over this sample's flight were marked.
    fn is_ecn_too_high(&self, rs: &RateSample) -> bool {
        self.ecn_eligible
            && self.p.ecn_thresh > 0.0
            && rs.ce_delivered > 0
            && rs.ecn_delivered > 0
            && rs.ce_delivered as f64 > rs.ecn_delivered as f64 * self.p.ecn_thresh
    }

    /// tcp_bbr.c `bbr_check_time_to_probe_bw`'s first rule: a cycle with marks and no loss,
    /// outside recovery, probes again at once, its first UP round growing inflight_hi by
    /// `ecn_reprobe_gain` of it (2ⁿ packets, n = log2 of that), in case the cross traffic
    /// behind the marks has gone.
    fn ecn_reprobe_due(&self) -> bool {
        self.p.ecn_reprobe_gain > 0.0 && self.ecn_eligible && self.ecn_in_cycle && !self.loss_in_cycle && self.recovery_start.is_none()
    }

    fn ecn_reprobe_rounds(&self) -> u32 {
        let Some(hi) = self.inflight_longterm else {
            return 30;
        };
        let packets = (hi / self.smss) as f64 * self.p.ecn_reprobe_gain;
        if packets < 1.0 {
            0
        } else {
            (packets.log2().floor() as u32).min(30)
        }
    }

    // ---------------------------------------------------------------- Startup and Drain

    /// §5.3.1.2 BBRCheckFullBWReached: bandwidth grew less than 25 % for 3 rounds (v2: the
    /// max_bw estimate, v3: the latest delivery rate; see [`BbrParams::full_bw_on_max_bw`]).
    fn check_full_bw_reached(&mut self, rs: &RateSample) {
        if self.full_bw_now || !self.round_start || (rs.is_app_limited && !self.p.full_bw_counts_app_limited) {
            return;
        }
        let bw = if self.p.full_bw_on_max_bw { self.max_bw } else { rs.delivery_rate };
        if bw >= self.full_bw * self.p.full_bw_growth {
            self.reset_full_bw();
            self.full_bw = bw;
            return;
        }
        self.full_bw_count += 1;
        self.full_bw_now = self.full_bw_count >= self.p.full_bw_rounds;
        if self.full_bw_now {
            self.full_bw_reached = true;
        }
    }

    fn reset_full_bw(&mut self) {
        self.full_bw = 0.0;
        self.full_bw_count = 0;
        self.full_bw_now = false;
    }

    /// §5.3.1.1 BBRCheckStartupDone.
    fn check_startup_done(&mut self) {
        if self.state == BbrState::Startup && self.full_bw_reached {
            self.ssthresh = Some(self.bdp_multiple(self.max_bw, 1.0));
            if self.p.tcp_bbr2_bookkeeping {
                // Startup's losses were the probe's, not a reason to cut the short-term model
                // in Drain (tcp_bbr2.c `bbr_check_drain`).
                self.reset_congestion_signals();
            } else {
                // Nor its marks (tcp_bbr.c v3 `bbr_check_drain` resets them too; -06 has no
                // ECN signals to reset).
                self.reset_ecn_signals();
            }
            self.drain_start_round = self.round_count;
            self.set_state(BbrState::Drain);
        }
    }

    /// §5.3.2 BBRCheckDrainDone: the Startup queue is gone once inflight ≤ BDP (+ budget).
    fn check_drain_done(&mut self, now: Instant) {
        let too_long = self.p.drain_max_rounds.is_some_and(|r| self.round_count > self.drain_start_round + r);
        if self.state == BbrState::Drain && (self.sampler.inflight() <= self.inflight_for(1.0) || too_long) {
            self.enter_probe_bw(now);
        }
    }

    // ---------------------------------------------------------------- ProbeBW, §5.3.3

    fn enter_probe_bw(&mut self, now: Instant) {
        self.cycle_stamp = now;
        self.start_probe_bw_down();
    }

    fn start_probe_bw_down(&mut self) {
        self.reset_congestion_signals();
        self.probe_up_cnt = u64::MAX;
        self.pick_probe_wait();
        self.cycle_stamp = self.now;
        self.ack_phase = AckPhase::ProbeStopping;
        self.start_round();
        self.set_state(BbrState::ProbeBwDown);
    }

    fn start_probe_bw_cruise(&mut self) {
        if self.p.tcp_bbr2_bookkeeping {
            // tcp_bbr2.c `bbr2_start_bw_probe_cruise`.
            if let (Some(lo), Some(hi)) = (self.inflight_shortterm, self.inflight_longterm) {
                self.inflight_shortterm = Some(lo.min(hi));
            }
        }
        self.set_state(BbrState::ProbeBwCruise);
    }

    fn start_probe_bw_refill(&mut self) {
        self.start_probe_bw_refill_with(0);
    }

    /// `bbr_start_bw_probe_refill(sk, bw_probe_up_rounds)`: UP's first round grows
    /// inflight_hi by 2^`up_rounds` packets (0 but after marks, see `ecn_reprobe_due`).
    fn start_probe_bw_refill_with(&mut self, up_rounds: u32) {
        self.reset_short_term_model();
        self.bw_probe_up_rounds = up_rounds;
        self.bw_probe_up_acks = 0;
        self.prev_probe_precautionary = false;
        self.ack_phase = AckPhase::Refilling;
        self.start_round();
        self.set_state(BbrState::ProbeBwRefill);
    }

    fn start_probe_bw_up(&mut self, rs: &RateSample) {
        self.ack_phase = AckPhase::ProbeStarting;
        self.start_round();
        self.reset_full_bw();
        self.full_bw = rs.delivery_rate;
        self.cycle_stamp = self.now;
        self.set_state(BbrState::ProbeBwUp);
        self.raise_inflight_longterm_slope();
    }

    /// Randomised wait before the next probe, 2–3 s, so flows desynchronise (§5.3.3.8.2).
    fn pick_probe_wait(&mut self) {
        self.rounds_since_bw_probe = self.next_random() % 2;
        let fraction = (self.next_random() >> 11) as f64 / (1u64 << 53) as f64;
        self.bw_probe_wait = Duration::from_secs(2) + Duration::from_secs_f64(fraction);
    }

    fn next_random(&mut self) -> u64 {
        // xorshift64*: deterministic, so runs on a virtual clock repeat exactly.
        self.rng ^= self.rng >> 12;
        self.rng ^= self.rng << 25;
        self.rng ^= self.rng >> 27;
        self.rng.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }

    /// §5.3.3.9 UpdateProbeBWCyclePhase.
    fn update_probe_bw_cycle_phase(&mut self, now: Instant, rs: &RateSample) {
        if !self.full_bw_reached {
            return;
        }
        if self.adapt_long_term_model(rs) {
            return;
        }
        let state = self.state;
        match state {
            BbrState::ProbeBwDown => {
                if self.is_time_to_probe_bw(now) {
                    return;
                }
                if self.is_time_to_cruise() {
                    self.start_probe_bw_cruise();
                }
            }
            BbrState::ProbeBwCruise => {
                self.is_time_to_probe_bw(now);
            }
            // After one round of refilling the pipe at gain 1, start probing.
            BbrState::ProbeBwRefill if self.round_start => {
                self.bw_probe_samples = true;
                self.start_probe_bw_up(rs);
            }
            BbrState::ProbeBwUp if self.is_time_to_go_down(now, rs) => {
                self.prev_probe_too_high = false; // no excess loss (yet)
                self.start_probe_bw_down();
            }
            _ => {}
        }
    }

    /// §5.3.3.9 AdaptLongTermModel: learn inflight_longterm from the probe's feedback.
    /// Returns whether it decided a state transition. (Excess loss is handled per lost packet,
    /// in `on_packet_lost`.)
    fn adapt_long_term_model(&mut self, rs: &RateSample) -> bool {
        if self.ack_phase == AckPhase::ProbeStarting && self.round_start {
            self.ack_phase = AckPhase::ProbeFeedback;
        }
        if self.ack_phase == AckPhase::ProbeStopping && self.round_start {
            // The probe's samples are all in: forget the previous cycle's max.
            self.bw_probe_samples = false;
            self.ack_phase = AckPhase::Init;
            if self.state.is_probe_bw() && (!rs.is_app_limited || self.p.max_bw_counts_app_limited) {
                self.cycle_count += 1;
            }
            // Precautionary probing, acceleration: the cautious probe saw no excess loss, so
            // probe again at once, this time holding inflight_longterm for a round.
            if self.p.precautionary_probing && self.state.is_probe_bw() && self.prev_probe_precautionary && !self.prev_probe_too_high {
                self.start_probe_bw_refill();
                return true;
            }
        }
        let loss_too_high = self.is_inflight_too_high(rs.lost, rs.tx_in_flight);
        let ecn_too_high = self.is_ecn_too_high(rs);
        if loss_too_high || ecn_too_high {
            // Excess marking can only be judged here, per ACK (tcp_bbr.c
            // `bbr_adapt_upper_bounds`); excess loss in v3 per lost packet (-06).
            if self.bw_probe_samples && (ecn_too_high || self.p.ack_path_loss_check) {
                self.handle_inflight_too_high(rs.tx_in_flight, rs.is_app_limited);
            }
            return false;
        }
        let Some(longterm) = self.inflight_longterm else {
            return false;
        };
        if rs.tx_in_flight > longterm {
            self.inflight_longterm = Some(rs.tx_in_flight);
        }
        if self.state == BbrState::ProbeBwUp {
            self.probe_inflight_longterm_upward(rs);
        }
        false
    }

    /// Grow inflight_longterm while UP finds no excess loss: slowly, then exponentially.
    fn probe_inflight_longterm_upward(&mut self, rs: &RateSample) {
        let Some(longterm) = self.inflight_longterm else {
            return;
        };
        if (!self.is_cwnd_limited() || self.cwnd < longterm) && !self.p.inflight_longterm_grows_app_limited {
            if self.p.tcp_bbr2_bookkeeping {
                // No credit for ACKs while not using inflight_hi (bbr2_probe_inflight_hi_upward).
                self.bw_probe_up_acks = 0;
            }
            return;
        }
        self.bw_probe_up_acks += rs.newly_acked;
        if self.bw_probe_up_acks >= self.probe_up_cnt {
            let delta = self.bw_probe_up_acks / self.probe_up_cnt;
            self.bw_probe_up_acks -= delta * self.probe_up_cnt;
            self.inflight_longterm = Some(longterm + delta * self.smss);
        }
        if self.round_start {
            self.raise_inflight_longterm_slope();
        }
    }

    /// Each round of UP doubles the growth: +1, 2, 4, … SMSS per cwnd of data acked.
    fn raise_inflight_longterm_slope(&mut self) {
        let growth_this_round = 1u64 << self.bw_probe_up_rounds;
        self.bw_probe_up_rounds = (self.bw_probe_up_rounds + 1).min(30);
        self.probe_up_cnt = (self.cwnd / growth_this_round).max(self.smss);
    }

    fn has_elapsed_in_phase(&self, now: Instant, interval: Duration) -> bool {
        now > self.cycle_stamp + interval
    }

    /// §5.3.3.8.2 IsTimeToProbeBW (after tcp_bbr.c's ECN reprobe, `ecn_reprobe_due`): after
    /// the random wait, or after as many rounds as Reno
    /// would need to refill the BDP (capped at 63), whichever is first.
    fn is_time_to_probe_bw(&mut self, now: Instant) -> bool {
        if self.ecn_reprobe_due() {
            let rounds = self.ecn_reprobe_rounds();
            self.start_probe_bw_refill_with(rounds);
            return true;
        }
        let reno_rounds = (self.target_inflight() / self.smss).min(63);
        if self.has_elapsed_in_phase(now, self.bw_probe_wait) || self.rounds_since_bw_probe >= reno_rounds {
            self.start_probe_bw_refill();
            return true;
        }
        false
    }

    /// §5.3.3.9 IsTimeToCruise: DOWN has drained the probe's queue.
    fn is_time_to_cruise(&self) -> bool {
        let inflight = self.sampler.inflight();
        if self.inflight_with_headroom().is_some_and(|cap| inflight > cap) {
            return false;
        }
        inflight <= self.inflight_for(1.0)
    }

    /// When ProbeBW_UP has found what it can (see [`UpExit`]).
    fn is_time_to_go_down(&mut self, now: Instant, rs: &RateSample) -> bool {
        // Inflight is judged, as Linux does, before this ACK (it freed room that is only
        // refilled after it).
        let prior_inflight = self.sampler.inflight() + rs.newly_acked;
        // "inflight ≥ inflight_longterm" at byte granularity: no room left for another packet.
        let at_longterm = self.inflight_longterm.is_some_and(|l| prior_inflight + self.smss > l);
        if self.p.precautionary_probing && self.prev_probe_too_high && at_longterm {
            // Precautionary probing, deceleration: the last probe hit excess loss here.
            self.prev_probe_precautionary = true;
            return true;
        }
        match self.p.up_exit {
            UpExit::BwPlateau => {
                if self.is_cwnd_limited() && self.inflight_longterm.is_some_and(|l| self.cwnd >= l) {
                    // Limited by inflight_longterm, not by the path: keep probing.
                    self.reset_full_bw();
                    self.full_bw = rs.delivery_rate;
                    false
                } else {
                    self.full_bw_now
                }
            }
            UpExit::InflightAboveTarget => {
                let min_rtt = self.min_rtt.unwrap_or(Duration::ZERO);
                self.has_elapsed_in_phase(now, min_rtt) && prior_inflight >= self.inflight_for(self.p.probe_bw_up_pacing_gain)
            }
        }
    }

    // ---------------------------------------------------------------- ProbeRTT, §5.3.4

    /// §5.3.4.3 BBRUpdateMinRTT.
    fn update_min_rtt(&mut self, now: Instant, rs: &RateSample) {
        self.probe_rtt_expired = now > self.probe_rtt_min_stamp + self.p.probe_rtt_interval;
        let rtt = rs.rtt;
        if !rtt.is_zero() && (self.probe_rtt_min_delay.is_none_or(|d| rtt < d) || self.probe_rtt_expired) {
            self.probe_rtt_min_delay = Some(rtt);
            self.probe_rtt_min_stamp = now;
        }
        let min_rtt_expired = now > self.min_rtt_stamp + self.p.min_rtt_filter_len;
        if let Some(delay) = self.probe_rtt_min_delay {
            if self.min_rtt.is_none_or(|m| delay < m) || min_rtt_expired {
                self.min_rtt = Some(delay);
                self.min_rtt_stamp = self.probe_rtt_min_stamp;
            }
        }
    }

    /// §5.3.4.3 BBRCheckProbeRTT.
    fn check_probe_rtt(&mut self, now: Instant, rs: &RateSample) {
        if self.state != BbrState::ProbeRtt && self.probe_rtt_expired && !self.idle_restart {
            self.set_state(BbrState::ProbeRtt);
            self.save_cwnd();
            self.probe_rtt_done_stamp = None;
            self.ack_phase = AckPhase::ProbeStopping;
            self.start_round();
        }
        if self.state == BbrState::ProbeRtt {
            self.handle_probe_rtt(now);
        }
        if rs.delivered > 0 {
            self.idle_restart = false;
        }
    }

    /// Hold inflight at the ProbeRTT cwnd for 200 ms and one round, then leave.
    fn handle_probe_rtt(&mut self, now: Instant) {
        // The deliberately low inflight must not be taken for the path's bandwidth.
        self.sampler.mark_app_limited();
        if self.probe_rtt_done_stamp.is_none() && self.sampler.inflight() <= self.probe_rtt_cwnd() {
            self.probe_rtt_done_stamp = Some(now + self.p.probe_rtt_duration);
            self.probe_rtt_round_done = false;
            self.start_round();
        } else if self.probe_rtt_done_stamp.is_some() {
            if self.round_start {
                self.probe_rtt_round_done = true;
            }
            if self.probe_rtt_round_done {
                self.check_probe_rtt_done(now);
            }
        }
    }

    fn check_probe_rtt_done(&mut self, now: Instant) {
        if self.probe_rtt_done_stamp.is_some_and(|done| now > done) {
            // The RTT was just measured with an empty queue: the next ProbeRTT is 5 s away.
            self.probe_rtt_min_stamp = now;
            self.restore_cwnd();
            self.exit_probe_rtt();
        }
    }

    fn exit_probe_rtt(&mut self) {
        self.reset_short_term_model();
        if self.full_bw_reached {
            self.start_probe_bw_down();
            self.start_probe_bw_cruise();
        } else {
            self.set_state(BbrState::Startup);
        }
    }

    fn probe_rtt_cwnd(&self) -> u64 {
        self.bdp_multiple(self.bw, self.p.probe_rtt_cwnd_gain).max(self.min_pipe_cwnd())
    }

    /// §5.4.1 BBRHandleRestartFromIdle.
    fn handle_restart_from_idle(&mut self, now: Instant) {
        if self.sampler.inflight() == 0 && self.sampler.is_app_limited() {
            self.idle_restart = true;
            self.extra_acked_interval_start = Some(now);
            if self.p.idle_restart_enters_startup && self.full_bw_reached && self.state != BbrState::Startup {
                self.reset_full_bw();
                self.full_bw_reached = false;
                self.set_state(BbrState::Startup);
                return;
            }
            if self.state.is_probe_bw() {
                self.set_pacing_rate_with_gain(1.0);
            } else if self.state == BbrState::ProbeRtt {
                self.check_probe_rtt_done(now);
            }
        }
    }

    // ---------------------------------------------------------------- control parameters

    fn min_pipe_cwnd(&self) -> u64 {
        4 * self.smss
    }

    /// §5.6.4.2 BBRBDPMultiple: gain × bw × min_rtt (the initial window before any RTT).
    fn bdp_multiple(&self, bw: f64, gain: f64) -> u64 {
        match self.min_rtt {
            None => self.initial_cwnd,
            Some(rtt) => (gain * bw * rtt.as_secs_f64()) as u64,
        }
    }

    /// BBRTargetInflight: the BDP, or cwnd if smaller.
    fn target_inflight(&self) -> u64 {
        self.bdp_multiple(self.bw, 1.0).min(self.cwnd)
    }

    /// §5.3.3.9 InflightWithHeadroom: inflight_longterm minus 15 % for other flows.
    fn inflight_with_headroom(&self) -> Option<u64> {
        let longterm = self.inflight_longterm?;
        let headroom = ((self.p.headroom * longterm as f64) as u64).max(self.smss);
        Some(longterm.saturating_sub(headroom).max(self.min_pipe_cwnd()))
    }

    /// §5.6.2 BBRInitPacingRate once an RTT is known ("SRTT ? SRTT : 1ms"), as the kernel's
    /// `bbr_init_pacing_rate_from_rtt` (called from `bbr_set_pacing_rate` until
    /// `has_seen_rtt`) and s2n-quic's `initialize_pacing_rate` do: the initial window over the
    /// first RTT sample at Startup gain. It may lower the rate — the nominal 1 ms RTT made it
    /// 266 Mbit/s — and Startup's "only raise it" rule then starts from here.
    fn init_pacing_rate_from_rtt(&mut self, rtt: Duration) {
        self.has_seen_rtt = true;
        self.pacing_rate = self.p.startup_pacing_gain * self.initial_cwnd as f64 / rtt.as_secs_f64();
    }

    /// §5.6.2 BBRSetPacingRate.
    fn set_pacing_rate(&mut self) {
        self.set_pacing_rate_with_gain(self.pacing_gain);
    }

    fn set_pacing_rate_with_gain(&mut self, gain: f64) {
        let rate = gain * self.bw * (1.0 - self.p.pacing_margin);
        // Until Startup is over, only raise it: early samples are small and noisy.
        if rate > 0.0 && (self.full_bw_reached || rate > self.pacing_rate) {
            self.pacing_rate = rate;
        }
    }

    /// §5.6.3 BBRSetSendQuantum: about 1 ms of data, 2 packets to 64 KiB.
    fn set_send_quantum(&mut self) {
        let quantum = (self.pacing_rate * 1e-3) as u64;
        self.send_quantum = quantum.clamp(2 * self.smss, 64 * 1024);
    }

    /// §5.6.4.2 QuantizationBudget: room for the offload budget (for QUIC, §5.5.8.2, one
    /// send quantum) and for UP's extra packets.
    fn quantization_budget(&self, inflight: u64) -> u64 {
        let mut inflight = inflight.max(self.send_quantum).max(self.min_pipe_cwnd());
        if self.state == BbrState::ProbeBwUp {
            inflight += 2 * self.smss;
        }
        inflight
    }

    /// §5.6.4.2 Inflight(gain): the inflight that `gain` × max_bw needs, budget included.
    fn inflight_for(&self, gain: f64) -> u64 {
        self.quantization_budget(self.bdp_multiple(self.max_bw, gain))
    }

    /// §5.6.4.2 UpdateMaxInflight: cwnd target, with room for ACK aggregation.
    fn max_inflight(&self) -> u64 {
        self.quantization_budget(self.bdp_multiple(self.bw, self.cwnd_gain) + self.extra_acked)
    }

    /// §5.6.4.6 BBRSetCwnd.
    fn set_cwnd(&mut self, rs: &RateSample) {
        let max_inflight = self.max_inflight();
        if self.full_bw_reached {
            self.cwnd = (self.cwnd + rs.newly_acked).min(max_inflight);
        } else if self.cwnd < max_inflight || self.sampler.delivered() < self.initial_cwnd {
            self.cwnd += rs.newly_acked;
        }
        self.cwnd = self.cwnd.max(self.min_pipe_cwnd());
        // §5.6.4.5 BBRBoundCwndForProbeRTT.
        if self.state == BbrState::ProbeRtt {
            self.cwnd = self.cwnd.min(self.probe_rtt_cwnd());
        }
        // §5.6.4.7 BBRBoundCwndForModel.
        let mut cap = match self.state {
            s if s.is_probe_bw() && s != BbrState::ProbeBwCruise => self.inflight_longterm,
            BbrState::ProbeRtt | BbrState::ProbeBwCruise => self.inflight_with_headroom(),
            _ => None,
        };
        if let Some(lo) = self.inflight_shortterm {
            cap = Some(cap.map_or(lo, |c| c.min(lo)));
        }
        if let Some(cap) = cap {
            self.cwnd = self.cwnd.min(cap.max(self.min_pipe_cwnd()));
        }
    }

    /// §5.6.4.4 BBRSaveCwnd.
    fn save_cwnd(&mut self) {
        self.prior_cwnd = if self.recovery_start.is_none() && self.state != BbrState::ProbeRtt { self.cwnd } else { self.prior_cwnd.max(self.cwnd) };
    }

    fn restore_cwnd(&mut self) {
        self.cwnd = self.cwnd.max(self.prior_cwnd);
    }

    /// The time of the latest event (for trait calls that carry none).
    pub fn last_event_time(&self) -> Instant {
        self.now
    }

    /// Time since creation, for diagnostics.
    pub fn age(&self) -> Duration {
        self.now.saturating_duration_since(self.start)
    }
}
