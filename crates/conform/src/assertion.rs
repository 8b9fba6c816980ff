//! The vocabulary: typed assertions over one run's [`Trace`], each giving a figure, the
//! [`Rule`] the figure must meet, and pass / fail / not observable with its evidence.
//!
//! Every state change in a trace is only known to lie between two samples, so each figure is an
//! interval (`lo`..`hi`, the fewest and the most the samples allow). A run passes when the whole
//! interval meets the rule, fails when none of it does, and is *not observable* when the samples
//! are too coarse to tell (or the stack does not show what the assertion needs).

use std::fmt;
use std::time::Duration;

use crate::trace::{Mode, Phase, Point, Trace};

/// What a figure must satisfy; also what [`crate::over_runs`] judges the runs' figures against.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Rule {
    AtLeast(f64),
    AtMost(f64),
    /// Strictly above (`--expect`'s `>`).
    Above(f64),
    /// Strictly below (`<`).
    Below(f64),
    /// Both bounds inclusive.
    Between(f64, f64),
}

impl Rule {
    pub fn holds(self, x: f64) -> bool {
        match self {
            Rule::AtLeast(t) => x >= t,
            Rule::AtMost(t) => x <= t,
            Rule::Above(t) => x > t,
            Rule::Below(t) => x < t,
            Rule::Between(a, b) => x >= a && x <= b,
        }
    }
}

impl fmt::Display for Rule {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Rule::AtLeast(t) => write!(f, "≥ {}", num(*t)),
            Rule::AtMost(t) => write!(f, "≤ {}", num(*t)),
            Rule::Above(t) => write!(f, "> {}", num(*t)),
            Rule::Below(t) => write!(f, "< {}", num(*t)),
            Rule::Between(a, b) => write!(f, "in [{}, {}]", num(*a), num(*b)),
        }
    }
}

fn num(x: f64) -> String {
    if x.is_infinite() {
        "∞".into()
    } else if x == x.round() && x.abs() < 1e6 {
        format!("{x:.0}")
    } else {
        format!("{x:.3}")
    }
}

/// One run's result for one assertion.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Outcome {
    Pass,
    Fail,
    NotObservable,
}

impl Outcome {
    pub fn word(self) -> &'static str {
        match self {
            Outcome::Pass => "pass",
            Outcome::Fail => "fail",
            Outcome::NotObservable => "not observable",
        }
    }
}

/// An assertion judged on one run: the figure as an interval, its estimate (the midpoint, what
/// is judged over runs), the outcome and the evidence in words.
#[derive(Debug, Clone, PartialEq)]
pub struct RunCheck {
    pub outcome: Outcome,
    pub lo: f64,
    pub hi: f64,
    pub estimate: f64,
    pub evidence: String,
}

impl RunCheck {
    fn judged(rule: Rule, lo: f64, hi: f64, estimate: f64, evidence: String) -> Self {
        let outcome = if rule.holds(lo) && rule.holds(hi) {
            Outcome::Pass
        } else if interval_misses(rule, lo, hi) {
            Outcome::Fail
        } else {
            Outcome::NotObservable
        };
        let evidence = if outcome == Outcome::NotObservable { format!("{evidence}; the samples are too coarse to tell") } else { evidence };
        RunCheck { outcome, lo, hi, estimate, evidence }
    }

    fn unseen(why: impl Into<String>) -> Self {
        RunCheck { outcome: Outcome::NotObservable, lo: f64::NAN, hi: f64::NAN, estimate: f64::NAN, evidence: why.into() }
    }
}

/// No value in `[lo, hi]` meets the rule.
fn interval_misses(rule: Rule, lo: f64, hi: f64) -> bool {
    match rule {
        Rule::AtLeast(t) => hi < t,
        Rule::AtMost(t) => lo > t,
        Rule::Above(t) => hi <= t,
        Rule::Below(t) => lo >= t,
        Rule::Between(a, b) => hi < a || lo > b,
    }
}

/// What a plateau counted between samples is allowed beyond the draft's rounds: the samples
/// do not carry the round in which full_bw last grew, and the estimate crosses 1/1.25 of its exit
/// value in that round or the one before (v3 tests the round's first delivery-rate sample, which
/// max_bw may already have passed), so the bracket starts up to a round early.
pub const SAMPLED_PLATEAU_ROUNDS: f64 = 1.0;

/// Which gain an assertion reads.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Gain {
    Pacing,
    Cwnd,
}

/// Which phases a [`Assertion::NextPhase`] judges, by how long they lasted.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Stay {
    /// Every one.
    Any,
    /// Those that ended before ProbeBW could be due to probe again, which a DOWN leaves for
    /// REFILL rather than CRUISE: before the shortest bw_probe_wait (2 s, §5.3.3.8.2
    /// BBRPickProbeWait) and before min(BDP in packets, 63) rounds of the base RTT (§5.3.3.5.3
    /// BBRIsRenoCoexistenceProbeTime; a round lasts at least the base RTT).
    BeforeProbeDue,
    /// Those that lasted past the longest bw_probe_wait (3 s): by then BBRIsTimeToProbeBW has
    /// fired, whatever inflight did.
    PastProbeWait,
}

/// One assertion over a state trace. Section numbers are draft-ietf-ccwg-bbr-06's, as in
/// `crates/quic-cc/src/bbr/`.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Assertion {
    /// §5.3.1.2: STARTUP is left within `rounds` round trips after the bandwidth estimate stops
    /// growing by 25 %. Exact where the controller recorded its exit's round counts (our QUIC
    /// BBR: BBR.round_count at the exit less the round full_bw last grew 25 %); else bracketed
    /// from the first sample within 1/1.25 of the estimate at exit, judged with one round more
    /// ([`SAMPLED_PLATEAU_ROUNDS`]).
    StartupExitAfterPlateau { rounds: f64 },
    /// §5.3.2: DRAIN lasts at most `rounds` round trips.
    DrainAtMost { rounds: f64 },
    /// Every exit from `from` goes to `to` (and, where the stack shows phases, to `phase`).
    NextState { from: Mode, to: Mode, phase: Option<Phase> },
    /// §5.3.3.9 BBRHandleInflightTooHigh: each ProbeBW_UP begun with inflight_longterm set that
    /// a loss ends (the loss counter rose in it) goes to DOWN, with inflight_longterm cut below
    /// its highest value in that UP (to max(tx_in_flight, BBRTargetInflight × Beta), within two
    /// base RTTs of the UP's end: the loss may be declared just after it). Read on the
    /// controller's own phase changes and the sampled model; not observable without them, or
    /// without such an UP.
    UpLossCutsLongterm,
    /// Every ProbeBW `from` phase that lasted as `stay` says is followed by the `to` phase (or
    /// by PROBE_RTT, which may interrupt any state, §5.3.4.3), judged on the controller's own
    /// recorded phase changes: a DOWN or CRUISE can be shorter than a sample. Not observable
    /// where the stack records none (kernel BBR; phases it does not show at all), or when no
    /// such phase ended.
    NextPhase { from: Phase, to: Phase, stay: Stay },
    /// The bandwidth estimate's median over ProbeBW (before any rate step) is within
    /// `[lo, hi]` × the link rate.
    BwNearLink { lo: f64, hi: f64 },
    /// The same for the bandwidth the controller acts on, §5.5.10's BBR.bw = min(max_bw,
    /// bw_shortterm): pacing rate and BDP are taken from it (§5.6.2, §5.6.4.2). Behind a
    /// policer a token bucket's bursts lift max_bw above the policed rate, and v3 answers
    /// the policer's losses with bw_shortterm (tcp_bbr.c v3 `bbr_bw` is the same minimum).
    /// Where the stack shows no short-term model, the estimate itself (kernel BBRv1 paces at
    /// its long-term bw behind a policer and reports it).
    BwInUseNearLink { lo: f64, hi: f64 },
    /// The congestion window never falls below `packets` full-sized packets (§5.6.4.?
    /// BBRMinPipeCwnd: 4 packets), from the first ACK on.
    CwndAtLeast { packets: f64 },
    /// The median gain while in `mode` (and `phase`, if given) is `gain` ± `tolerance`.
    GainIs { which: Gain, mode: Mode, phase: Option<Phase>, gain: f64, tolerance: f64 },
    /// The lowest pacing gain seen in ProbeBW (its "drain" phase: v3's DOWN, 0.9) is
    /// `gain` ± `tolerance`; phases need not be shown.
    LowestProbeBwGain { gain: f64, tolerance: f64 },
    /// §5.3.3: ProbeBW goes round its cycle (… → UP → DOWN) at least `cycles` times.
    ProbeBwCycles { cycles: f64 },
    /// §5.3.4: PROBE_RTT comes at least every `interval` (+ its 200 ms and 2 rounds) unless a
    /// lower RTT refreshed min_rtt meanwhile (§5.3.4.3): spans in which min_rtt fell are excused.
    ProbeRttEvery { interval: Duration },
    /// §5.3.4.4: PROBE_RTT lasts at least `min` and at most `min` + `rounds` round trips.
    ProbeRttLasts { min: Duration, rounds: f64 },
    /// After the path's rate step, the bandwidth estimate comes within `within` (a share) of the
    /// new rate within `by`.
    BwFollowsStep { within: f64, by: Duration },
    /// After the path's rate step, the bandwidth estimate comes within `within` of the new rate
    /// before ProbeBW has begun more than `cycles` cycles since the step. The draft's bound is in
    /// cycles, not seconds (§5.5.3: max_bw is a max over MaxBwFilterLen = 2 ProbeBW cycles),
    /// and a cycle's length grows with the queue a step leaves. With `phases_only`, a stack that
    /// shows no ProbeBW phase (kernel BBR) is not judged here but by [`Assertion::BwFollowsStepInRounds`].
    BwFollowsStepInCycles { within: f64, cycles: f64, phases_only: bool },
    /// After the path's rate step, the bandwidth estimate comes within `within` of the new rate
    /// within `rounds` round trips after the step reaches the sender, each round taken at its
    /// longest, `round_rtts` base RTTs (the base RTT plus a full buffer drained at the new
    /// rate): a time bound derived from a filter counted in rounds. Judged only on stacks that
    /// show no ProbeBW phase (kernel BBRv1: `bbr_bw_rtts`, 10 rounds, in tcp_bbr.c). The sampled
    /// RTT is no round clock here: smoothed, it lags the queue the cut builds.
    BwFollowsStepInRounds { within: f64, rounds: f64, round_rtts: f64 },
    /// Bytes lost over bytes delivered, after STARTUP and DRAIN, is at most `share`.
    LossAtMost { share: f64 },
    /// `mode` is never left but for PROBE_RTT (which may interrupt any state, §5.3.4.3, and
    /// returns to STARTUP while full_bw_reached is false, §5.3.4.4). For A.18: an application-
    /// limited STARTUP's samples are app-limited, and §5.3.1.2 BBRCheckFullBWReached returns
    /// early on them, so no plateau is ever declared.
    StaysIn { mode: Mode },
    /// From `from` (when the application starts limiting the sender, or pauses) the bandwidth
    /// estimate stays at or above `share` × its value at `from`: an app-limited delivery-rate
    /// sample below max_bw neither enters the filter (§5.5.5 BBRUpdateMaxBw) nor advances it
    /// (§5.3.3.9 BBRAdaptUpperBounds). Not observable before the filter had MaxBwFilterLen = 2
    /// chances to forget (ProbeBW cycle starts or PROBE_RTT exits since `from`), or when the
    /// flow was still in STARTUP at `from`.
    BwHeldFrom { from: Duration, share: f64 },
    /// From the first ProbeBW_REFILL (or UP) begun after `from` on, BBR.inflight_longterm does
    /// not rise above its value as that phase began: an app-limited sender is not cwnd-limited,
    /// and §5.3.3.6 BBRProbeInflightLongtermUpward grows it only when it is. (An UP already under
    /// way at `from` may still be cwnd-limited until the application's slower writes reach the
    /// sender.) Not observable where the stack does not show it or the phases, while it is unset
    /// (no loss yet), or without a REFILL or UP begun since `from` has settled ([`settled`]).
    LongtermHeldFrom { from: Duration },
    /// A ProbeBW_UP begun after `from` has settled ([`settled`]) is left only for PROBE_RTT:
    /// app-limited samples show no plateau (§5.3.1.2 BBRCheckFullBWReached returns on them) and
    /// §5.3.3.9 BBRIsTimeToGoDown ends UP on one. An UP that lost packets may also end on
    /// them (BBRIsInflightTooHigh) and is not counted. Needs phases.
    UpHeldFrom { from: Duration },
    /// `mode` is not entered again from `from` on, the flow having left it before `from`.
    NotReenteredFrom { mode: Mode, from: Duration },
    /// `mode` is not entered between `from` and `until` (A.10: PROBE_RTT, from the application's
    /// pause to 2 s after its restart). Read from the controller's own events where it records
    /// them, else from the samples. Not observable when the run ended before `until`.
    NotEnteredBetween { mode: Mode, from: Duration, until: Duration },
    /// §5.5.9: with ACKs released in bursts every `period`, BBR.extra_acked in ProbeBW (its
    /// median) covers at least `share` of what the link carries in one period: each burst acks
    /// a period's data at once, beyond what max_bw × the time since the last one expects, and
    /// that excess is what cwnd adds (§5.6.4.2) to keep sending through the silences. Not
    /// observable where the stack does not show extra_acked (kernel BBR's TCP_CC_INFO).
    ExtraAckedCovers { period: Duration, share: f64 },
    /// The data acknowledged after STARTUP and DRAIN, over that time, is at least `share` × the
    /// link rate: the flow keeps the link busy.
    DeliveredAtLeast { share: f64 },
    /// §5.5.10.3 BBRAdaptLowerBoundsFromCongestion: a loss this flow sees after `from` (when a
    /// competitor arrived), while its short-term model is unset, sets bw_shortterm and
    /// inflight_shortterm (below the ∞ they had) at the end of the round with the loss: within
    /// `rounds` of BBR.round_count. BBRNoteLoss starts that round at the loss, so it ends 1
    /// round_count boundary later (2 when both come on the same ACK). A loss whose round may end
    /// in STARTUP, ProbeBW_REFILL or UP is passed over: the draft adapts nothing while probing
    /// (BBRIsProbingBW). Not observable where the stack shows no short-term model (BBRv1 has
    /// none) or no round count, or without such a loss after `from`.
    ShortTermCutAfterLossFrom { from: Duration, rounds: f64 },
    /// -06 §5.5.11: a loss episode the transport later finds spurious (every packet it had
    /// declared lost was acknowledged after all: reordering, not loss) is undone —
    /// §5.5.11.2 HandleSpuriousLossDetection restores the model §5.5.11.1 SaveStateUponLoss
    /// kept at the episode's first loss: BBR.bw_shortterm, BBR.inflight_shortterm and
    /// BBR.inflight_longterm are each at least `share` × their value at the last sample before
    /// the latest loss, at the first sample after the stack reported the episode spurious. The
    /// latest, because the series do not say which earlier losses the report covers: a
    /// transport reports an episode spurious once no declared loss is pending, and a real loss
    /// it has forgotten by then keeps its cut (at 20 Mbit/s × 1 ms, sampled every 1 ms, one did
    /// in 8 of 111 reports). The figure is the lowest such share over the run's episodes. Not observable where the stack
    /// reports no spurious episodes per connection (kernel TCP counts its undos per namespace)
    /// or shows no short-term model, or when no episode proved spurious.
    SpuriousLossUndone { share: f64 },
    /// RFC 9438 §4.6 multiplicative decrease: at each congestion event in congestion
    /// avoidance the window is cut to `beta` (β_cubic = 0.7) of what it was. Judged on
    /// ssthresh, which every CUBIC sets to the cut window at the event (Linux: ssthresh =
    /// cwnd × 717/1024 at once, cwnd then following PRR down to it; ours: cwnd and ssthresh
    /// together), over the cwnd at the sample before it. An event is the loss counter's first
    /// rise after two round trips without one (or a change of ssthresh with that rise by the
    /// next sample: TCP's counter counts retransmissions, which may come a sample after the
    /// cut); one without a cut (ssthresh unchanged, cwnd not falling) counts as 1. Events from
    /// slow start are not judged: cwnd grows up to 2^(10 ms / RTT) between samples there, so
    /// the sample before says little of the window that was cut. The figure is the median of
    /// the events' ratios, `beta` ± `tolerance`. Not observable where the stack shows no
    /// ssthresh, or without such an event.
    ReductionIs { beta: f64, tolerance: f64 },
    /// RFC 9406 §4.2 HyStart++ (and Linux's HyStart for its CUBIC): the first slow start leaves
    /// its doubling when the RTT rises, then grows at most CSS_ROUNDS = 5 rounds at a quarter
    /// of the rate (Conservative Slow Start; Linux has none) before congestion avoidance. The
    /// figure is the largest cwnd sampled until slow start ended (ssthresh first set) over
    /// what the path holds, its BDP plus a drop-tail buffer of `buffer_bdp` BDPs; at most
    /// `share`. A plain slow start learns of the overflow a round late, having doubled again:
    /// near 2. An exit at the RTT's rise stays below 1 (no loss); a CSS that still overflows
    /// learns of it a round late at a quarter of the growth: near 1.25. Not observable where
    /// the stack shows no ssthresh or it is never set.
    SlowStartPeakAtMost { buffer_bdp: f64, share: f64 },
}

impl Assertion {
    /// The rule its figure must meet on this path.
    pub fn rule(&self, trace: &Trace) -> Rule {
        match *self {
            Assertion::StartupExitAfterPlateau { rounds } if trace.startup_exit_rounds().is_some() => Rule::AtMost(rounds),
            Assertion::StartupExitAfterPlateau { rounds } => Rule::AtMost(rounds + SAMPLED_PLATEAU_ROUNDS),
            Assertion::DrainAtMost { rounds } => Rule::AtMost(rounds),
            Assertion::NextState { .. } | Assertion::NextPhase { .. } | Assertion::UpLossCutsLongterm => Rule::AtLeast(1.0),
            Assertion::BwNearLink { lo, hi } | Assertion::BwInUseNearLink { lo, hi } => Rule::Between(lo, hi),
            Assertion::CwndAtLeast { packets } => Rule::AtLeast(packets),
            Assertion::GainIs { gain, tolerance, .. } | Assertion::LowestProbeBwGain { gain, tolerance } => Rule::Between(gain - tolerance, gain + tolerance),
            Assertion::ProbeBwCycles { cycles } => Rule::AtLeast(cycles),
            Assertion::ProbeRttEvery { interval } => Rule::AtMost((interval + Duration::from_millis(200) + trace.path.rtt * 2).as_secs_f64()),
            Assertion::ProbeRttLasts { min, rounds } => Rule::Between(min.as_secs_f64(), min.as_secs_f64() + rounds * trace.path.rtt.as_secs_f64()),
            Assertion::BwFollowsStep { by, .. } => Rule::AtMost(by.as_secs_f64()),
            Assertion::BwFollowsStepInCycles { cycles, .. } => Rule::AtMost(cycles),
            Assertion::BwFollowsStepInRounds { rounds, .. } => Rule::AtMost(rounds),
            Assertion::LossAtMost { share } => Rule::AtMost(share),
            Assertion::StaysIn { .. } | Assertion::UpHeldFrom { .. } | Assertion::NotReenteredFrom { .. } | Assertion::NotEnteredBetween { .. } => {
                Rule::AtMost(0.0)
            }
            Assertion::BwHeldFrom { share, .. } => Rule::AtLeast(share),
            Assertion::LongtermHeldFrom { .. } => Rule::AtMost(1.0),
            Assertion::ExtraAckedCovers { share, .. } | Assertion::DeliveredAtLeast { share } => Rule::AtLeast(share),
            Assertion::ShortTermCutAfterLossFrom { rounds, .. } => Rule::AtMost(rounds),
            Assertion::SpuriousLossUndone { share } => Rule::AtLeast(share),
            Assertion::ReductionIs { beta, tolerance } => Rule::Between(beta - tolerance, beta + tolerance),
            Assertion::SlowStartPeakAtMost { share, .. } => Rule::AtMost(share),
        }
    }

    /// What it asserts, in words (the figure's unit included).
    pub fn describe(&self) -> String {
        match self {
            Assertion::StartupExitAfterPlateau { rounds } => format!("leaves STARTUP within {rounds} rounds after the bandwidth estimate stops growing 25 %"),
            Assertion::DrainAtMost { rounds } => format!("DRAIN lasts at most {rounds} rounds"),
            Assertion::NextState { from, to, phase } => {
                format!("after {} comes {}{}", from.name(), to.name(), phase.map(|p| format!(" ({})", p.name())).unwrap_or_default())
            }
            Assertion::UpLossCutsLongterm => "a loss in PROBE_BW_UP with inflight_longterm set cuts it and ends UP for DOWN".to_string(),
            Assertion::NextPhase { from, to, stay } => format!(
                "after PROBE_BW_{}{} comes PROBE_BW_{}",
                from.name(),
                match stay {
                    Stay::Any => "",
                    Stay::BeforeProbeDue => " ended before a probe was due",
                    Stay::PastProbeWait => " lasting 3 s or more",
                },
                to.name()
            ),
            Assertion::BwNearLink { lo, hi } => format!("bandwidth estimate in ProbeBW within {:.0}–{:.0} % of the link", lo * 100.0, hi * 100.0),
            Assertion::BwInUseNearLink { lo, hi } => {
                format!("bandwidth in use (min of max_bw and bw_shortterm) in ProbeBW within {:.0}–{:.0} % of the link", lo * 100.0, hi * 100.0)
            }
            Assertion::CwndAtLeast { packets } => format!("cwnd ≥ {packets} packets throughout"),
            Assertion::GainIs { which, mode, phase, gain, .. } => format!(
                "{} gain in {}{} is {gain}",
                match which {
                    Gain::Pacing => "pacing",
                    Gain::Cwnd => "cwnd",
                },
                mode.name(),
                phase.map(|p| format!("_{}", p.name())).unwrap_or_default()
            ),
            Assertion::LowestProbeBwGain { gain, .. } => format!("lowest pacing gain in PROBE_BW is {gain}"),
            Assertion::ProbeBwCycles { cycles } => format!("PROBE_BW completes ≥ {cycles} DOWN…UP cycles"),
            Assertion::ProbeRttEvery { interval } => format!("PROBE_RTT at least every {} s unless min_rtt fell", interval.as_secs_f64()),
            Assertion::ProbeRttLasts { min, rounds } => format!("PROBE_RTT lasts {} ms to {} ms + {rounds} rounds", min.as_millis(), min.as_millis()),
            Assertion::BwFollowsStep { within, by } => {
                format!("bandwidth estimate within {:.0} % of the new rate {} s after the step", within * 100.0, by.as_secs_f64())
            }
            Assertion::BwFollowsStepInCycles { within, cycles, .. } => {
                format!("bandwidth estimate within {:.0} % of the new rate before ProbeBW cycle {} after the step", within * 100.0, cycles + 1.0)
            }
            Assertion::BwFollowsStepInRounds { within, rounds, round_rtts } => {
                format!(
                    "no ProbeBW phases: bandwidth estimate within {:.0} % of the new rate ≤ {rounds} rounds of ≤ {round_rtts} RTTs after the step",
                    within * 100.0
                )
            }
            Assertion::LossAtMost { share } => format!("loss after STARTUP ≤ {:.1} %", share * 100.0),
            Assertion::StaysIn { mode } => format!("never leaves {} but for PROBE_RTT", mode.name()),
            Assertion::BwHeldFrom { from, share } => {
                format!("bandwidth estimate stays ≥ {:.0} % of its value at {} s", share * 100.0, from.as_secs_f64())
            }
            Assertion::LongtermHeldFrom { from } => format!("inflight_longterm does not rise in a REFILL/UP begun after {} s", from.as_secs_f64()),
            Assertion::UpHeldFrom { from } => format!("PROBE_BW_UP is left only for PROBE_RTT after {} s", from.as_secs_f64()),
            Assertion::NotEnteredBetween { mode, from, until } => {
                format!("{} is not entered between {} s and {} s", mode.name(), from.as_secs_f64(), until.as_secs_f64())
            }
            Assertion::NotReenteredFrom { mode, from } => format!("{} is not re-entered after {} s", mode.name(), from.as_secs_f64()),
            Assertion::ExtraAckedCovers { period, share } => {
                format!("extra_acked in PROBE_BW ≥ {:.0} % of the link's data in one {} aggregation period", share * 100.0, ms(*period))
            }
            Assertion::DeliveredAtLeast { share } => format!("delivery rate after STARTUP ≥ {:.0} % of the link", share * 100.0),
            Assertion::ShortTermCutAfterLossFrom { from, rounds } => {
                format!("bw_shortterm/inflight_shortterm set within {rounds} rounds of the first loss after {} s", from.as_secs_f64())
            }
            Assertion::SpuriousLossUndone { share } => {
                format!("a spurious loss episode is undone: the short- and long-term bounds back to ≥ {:.0} % of their value before it", share * 100.0)
            }
            Assertion::ReductionIs { beta, .. } => format!("ssthresh at a congestion event = {beta} × cwnd before it (median over events)"),
            Assertion::SlowStartPeakAtMost { buffer_bdp, share } => {
                format!("the first slow start's largest cwnd ≤ {share} × (BDP + the {buffer_bdp}-BDP buffer)")
            }
        }
    }

    /// Judges one run.
    pub fn check(&self, trace: &Trace) -> RunCheck {
        self.check_against(trace, self.rule(trace))
    }

    /// Judges one run's figure against `rule` instead of the assertion's own (`--expect` on a
    /// trace figure gives its own comparison and threshold; the assertion's figures are then
    /// only what it measures).
    pub fn check_against(&self, trace: &Trace, rule: Rule) -> RunCheck {
        if self.reads_ssthresh() {
            if !trace.has(|p| p.ssthresh_bytes.is_some()) {
                return RunCheck::unseen("the stack shows no ssthresh");
            }
        } else if !trace.has(|p| p.mode.is_some()) {
            return RunCheck::unseen("the stack shows no BBR state");
        }
        if let Some(share) = trace.host_limited_share().filter(|s| *s > HOST_LIMITED_MAX) {
            return RunCheck::unseen(format!(
                "the sender was held by its host {:.0} % of the run (window and pacing allowed more): this host did not present the path to the controller",
                share * 100.0
            ));
        }
        match *self {
            Assertion::StartupExitAfterPlateau { .. } => startup_exit(trace, rule),
            Assertion::DrainAtMost { .. } => drain(trace, rule),
            Assertion::NextState { from, to, phase } => next_state(trace, rule, from, to, phase),
            Assertion::NextPhase { from, to, stay } => next_phase(trace, rule, from, to, stay),
            Assertion::UpLossCutsLongterm => up_loss_cuts_longterm(trace, rule),
            Assertion::BwNearLink { .. } => bw_near_link(trace, rule, false),
            Assertion::BwInUseNearLink { .. } => bw_near_link(trace, rule, true),
            Assertion::CwndAtLeast { .. } => cwnd_floor(trace, rule),
            Assertion::GainIs { which, mode, phase, .. } => gain_is(trace, rule, which, mode, phase),
            Assertion::LowestProbeBwGain { .. } => lowest_probe_bw_gain(trace, rule),
            Assertion::ProbeBwCycles { .. } => probe_bw_cycles(trace, rule),
            Assertion::ProbeRttEvery { .. } => probe_rtt_every(trace, rule),
            Assertion::ProbeRttLasts { .. } => probe_rtt_lasts(trace, rule),
            Assertion::BwFollowsStep { within, .. } => bw_follows_step(trace, rule, within),
            Assertion::BwFollowsStepInCycles { within, phases_only, .. } => bw_follows_step_in_cycles(trace, rule, within, phases_only),
            Assertion::BwFollowsStepInRounds { within, round_rtts, .. } => bw_follows_step_in_rounds(trace, rule, within, round_rtts),
            Assertion::LossAtMost { .. } => loss(trace, rule),
            Assertion::StaysIn { mode } => stays_in(trace, rule, mode),
            Assertion::BwHeldFrom { from, .. } => bw_held_from(trace, rule, from),
            Assertion::LongtermHeldFrom { from } => longterm_held_from(trace, rule, from),
            Assertion::UpHeldFrom { from } => up_held_from(trace, rule, from),
            Assertion::NotEnteredBetween { mode, from, until } => not_entered_between(trace, rule, mode, from, until),
            Assertion::NotReenteredFrom { mode, from } => not_reentered_from(trace, rule, mode, from),
            Assertion::ExtraAckedCovers { period, .. } => extra_acked_covers(trace, rule, period),
            Assertion::DeliveredAtLeast { .. } => delivered(trace, rule),
            Assertion::ShortTermCutAfterLossFrom { from, rounds } => short_term_cut(trace, rule, from, rounds),
            Assertion::SpuriousLossUndone { .. } => spurious_loss_undone(trace, rule),
            Assertion::ReductionIs { .. } => reduction(trace, rule),
            Assertion::SlowStartPeakAtMost { buffer_bdp, .. } => slow_start_peak(trace, rule, buffer_bdp),
        }
    }

    /// Whether it reads cwnd and ssthresh (any loss-based controller's: the CUBIC suite's)
    /// rather than BBR's state.
    fn reads_ssthresh(&self) -> bool {
        matches!(self, Assertion::ReductionIs { .. } | Assertion::SlowStartPeakAtMost { .. })
    }
}

/// ssthresh where it is set (not `u64::MAX`, unset).
fn set_ssthresh(p: &Point) -> Option<u64> {
    p.ssthresh_bytes.filter(|&s| s != u64::MAX)
}

/// A congestion event as the samples show it: the loss counter rose (or ssthresh changed and
/// it rose by the next sample) in `(before, at]`, the window at `before` being `cwnd_before`,
/// and ssthresh at `at` being `ssthresh`; `cut` whether the controller cut at all.
struct Cut {
    at: Duration,
    cwnd_before: u64,
    ssthresh: u64,
    /// The flow was in slow start at `before` (ssthresh unset, or cwnd below it).
    from_slow_start: bool,
    /// ssthresh changed, or cwnd fell within two samples: a reduction. A controller on a path
    /// whose capacity does not change loses at the same window every epoch and sets ssthresh
    /// to the same value again, so a cut need not change it.
    cut: bool,
}

/// RFC 9438 §4.6's congestion events: each first rise of the loss counter after two round
/// trips (the sender's RTT there) without one — the later losses of an episode belong to its
/// recovery, which cuts once (RFC 9002 §7.3.2, RFC 6675): a packet sent before the recovery
/// began may be declared lost up to about 9/8 RTT after it is due, past the first round trip. An undo of a spurious event
/// restores ssthresh without a loss, and is not one. TCP's counter counts retransmissions,
/// which may come a sample after the cut: a change of ssthresh with the counter rising by the
/// next sample is the event too.
fn cuts(trace: &Trace) -> Vec<Cut> {
    let pts = &trace.points;
    let rose = |i: usize| matches!((pts[i - 1].lost_bytes, pts[i].lost_bytes), (Some(l0), Some(l1)) if l1 > l0);
    let mut out = Vec::new();
    let mut last_rise: Option<Duration> = None;
    for i in 1..pts.len() {
        let (a, b) = (&pts[i - 1], &pts[i]);
        let changed = a.ssthresh_bytes != b.ssthresh_bytes;
        let rises_next = i + 1 < pts.len() && rose(i + 1);
        let event = rose(i) || (changed && rises_next);
        let quiet = last_rise.is_none_or(|t| a.t.saturating_sub(t) >= trace.round_at(a.t) * 2);
        if rose(i) {
            last_rise = Some(b.t);
        }
        if !event || !quiet {
            continue;
        }
        if !rose(i) {
            // The rise at the next sample is this event's.
            last_rise = Some(pts[i + 1].t);
        }
        let (Some(ssthresh), Some(cwnd_before)) = (set_ssthresh(b), a.cwnd_bytes) else { continue };
        let fell = pts[i..(i + 2).min(pts.len())].iter().filter_map(|p| p.cwnd_bytes).any(|c| c < cwnd_before);
        let from_slow_start = set_ssthresh(a).is_none_or(|s0| cwnd_before < s0);
        out.push(Cut { at: b.t, cwnd_before, ssthresh, from_slow_start, cut: changed || fell });
    }
    out
}

fn reduction(trace: &Trace, rule: Rule) -> RunCheck {
    let all = cuts(trace);
    let from_slow_start = all.iter().filter(|c| c.from_slow_start).count();
    let judged: Vec<&Cut> = all.iter().filter(|c| !c.from_slow_start).collect();
    let skipped = if from_slow_start > 0 { format!("; {from_slow_start} in slow start not judged") } else { String::new() };
    // A loss the controller did not cut on keeps its window: 1.
    let ratios: Vec<f64> = judged.iter().map(|c| if c.cut { c.ssthresh as f64 / c.cwnd_before as f64 } else { 1.0 }).collect();
    let uncut = judged.iter().filter(|c| !c.cut).count();
    let skipped = if uncut > 0 { format!("; {uncut} without a cut (counted as 1){skipped}") } else { skipped };
    let Some(m) = median(ratios.clone()) else {
        return RunCheck::unseen(format!("no congestion event in congestion avoidance{skipped}"));
    };
    let listed: Vec<String> = judged.iter().zip(&ratios).take(6).map(|(c, r)| format!("{r:.3} at {}", ms(c.at))).collect();
    let more = if judged.len() > 6 { ", …" } else { "" };
    RunCheck::judged(
        rule,
        m,
        m,
        m,
        format!("median ssthresh / cwnd before = {m:.3} over {} congestion events ({}{more}){skipped}", judged.len(), listed.join(", ")),
    )
}

fn slow_start_peak(trace: &Trace, rule: Rule, buffer_bdp: f64) -> RunCheck {
    let pts = &trace.points;
    let Some(i) = pts.iter().position(|p| set_ssthresh(p).is_some()) else {
        return RunCheck::unseen("slow start never ended: ssthresh never set");
    };
    if i == 0 {
        return RunCheck::unseen("ssthresh was set from the first sample on");
    }
    let Some((peak_at, peak)) = pts[..=i].iter().filter_map(|p| Some((p.t, p.cwnd_bytes?))).max_by_key(|&(_, c)| c) else {
        return RunCheck::unseen("the stack shows no cwnd");
    };
    let (a, b) = (&pts[i - 1], &pts[i]);
    let ssthresh = set_ssthresh(b).unwrap_or_default();
    // HyStart's exit sets ssthresh = cwnd, never below the window of the sample before (cwnd
    // only grows in slow start); a congestion event cuts it below.
    let how = match a.cwnd_bytes {
        Some(before) if ssthresh < before => "on a congestion event (ssthresh cut below the cwnd before)",
        _ => "without a cut (ssthresh = cwnd: HyStart's exit)",
    };
    let base = pts.iter().find_map(|p| p.lost_bytes).unwrap_or(0);
    let lost = a.lost_bytes.map_or(0, |l| l.saturating_sub(base)) / trace.path.mss.max(1);
    let capacity = trace.path.bdp_bytes() * (1.0 + buffer_bdp);
    let share = peak as f64 / capacity;
    RunCheck::judged(
        rule,
        share,
        share,
        share,
        format!(
            "slow start ended in ({}, {}] {how}, {lost} packets lost before; largest cwnd {peak} B at {} = {share:.2} × the {capacity:.0} B the path and buffer hold",
            ms(a.t),
            ms(b.t),
            ms(peak_at)
        ),
    )
}

/// How many times since `from` the max_bw filter could have advanced: each ProbeBW cycle start
/// (see [`Trace::cycle_starts`]) and each PROBE_RTT exit, which starts ProbeBW_DOWN too
/// (§5.3.4.4) and advances the filter when its samples are not app-limited.
fn filter_chances(trace: &Trace, from: Duration) -> usize {
    let cycles = trace.cycle_starts().unwrap_or_default().into_iter().filter(|t| *t > from).count();
    let probe_rtt_exits = trace.transitions().into_iter().filter(|t| t.from == Mode::ProbeRtt && t.to == Mode::ProbeBw && t.at > from).count();
    cycles + probe_rtt_exits
}

fn bw_held_from(trace: &Trace, rule: Rule, from: Duration) -> RunCheck {
    if !trace.has(|p| p.bw_bps.is_some()) {
        return RunCheck::unseen("the stack shows no bandwidth estimate");
    }
    if !trace.transitions().iter().any(|t| t.from == Mode::Startup && t.at <= from) {
        return RunCheck::unseen(format!("still in STARTUP at {}: the estimate had not found the path", ms(from)));
    }
    let Some(at_from) = trace.points.iter().take_while(|p| p.t <= from).filter_map(|p| p.bw_bps).last() else {
        return RunCheck::unseen(format!("no estimate sampled by {}", ms(from)));
    };
    let Some((t, low)) = trace.points.iter().filter(|p| p.t > from).filter_map(|p| p.bw_bps.map(|b| (p.t, b))).min_by(|a, b| a.1.total_cmp(&b.1)) else {
        return RunCheck::unseen(format!("no estimate sampled after {}", ms(from)));
    };
    let ratio = low / at_from;
    let chances = filter_chances(trace, from);
    let evidence = format!(
        "estimate {} at {}, lowest after it {} at {} ({:.0} %), {chances} filter advances possible",
        mbit(at_from),
        ms(from),
        mbit(low),
        ms(t),
        ratio * 100.0
    );
    // MaxBwFilterLen = 2 (§5.5.3): a filter that forgets shows it after its second advance.
    if chances < 2 && rule.holds(ratio) {
        return RunCheck::unseen(format!("{evidence}: too few to have forgotten"));
    }
    RunCheck::judged(rule, ratio, ratio, ratio, evidence)
}

/// When the application's change at `from` is all the controller sees: two RTTs after it (the
/// RTT at `from`, queue included). What was sent before the change is acknowledged within one,
/// and those samples are not app-limited (§4.1.2.3 marks a packet as it is sent), so they may
/// still grow inflight_longterm or show a plateau. At 1 Mbit/s × 1 ms a 44 ms RTT put an UP
/// begun 69 ms after the change on them; at 20 ms the same round is 1–2 % of the run after it.
/// And not before the sender stops being held by its window (below).
pub fn settled(trace: &Trace, from: Duration) -> Duration {
    let pts = &trace.points;
    let rtt = pts.iter().find(|p| p.t >= from).and_then(|p| p.rtt.or(p.min_rtt)).unwrap_or_default();
    let after = from + 2 * rtt;
    // And once the sender is no longer held by its window: what the application wrote before
    // the change and the transport still holds goes out first, cwnd-limited, and §5.3.3.6
    // rightly grows inflight_longterm on it (at 20 Mbit/s × 1 ms, link-rate sending went on
    // 20 ms past the change, 6 RTTs). The start of the first sample span without window-held
    // time after the 2 RTTs; where the stack does not say, the 2 RTTs.
    let held = |i: usize| match (pts[i - 1].cwnd_limited, pts[i].cwnd_limited) {
        (Some(a), Some(b)) => Some(b > a),
        _ => None,
    };
    (1..pts.len()).find(|&i| pts[i].t > after && held(i) != Some(true)).map_or(after, |i| if held(i).is_some() { pts[i - 1].t.max(after) } else { after })
}

fn longterm_held_from(trace: &Trace, rule: Rule, from: Duration) -> RunCheck {
    if !trace.has(|p| p.inflight_longterm_bytes.is_some()) {
        return RunCheck::unseen("the stack shows no inflight_longterm");
    }
    if !trace.has(|p| p.phase.is_some()) {
        return RunCheck::unseen("the stack shows no ProbeBW phase");
    }
    // The first REFILL (or UP, when REFILL was shorter than a sample) begun after `from`: an
    // UP already under way then may still be cwnd-limited at inflight_longterm and grow it, as
    // §5.3.3.6 allows, until the application's slower writes reach the sender.
    let probing = |p: &Point| p.mode == Some(Mode::ProbeBw) && matches!(p.phase, Some(Phase::Refill | Phase::Up));
    let from = settled(trace, from);
    let Some(i) = (1..trace.points.len()).find(|&i| trace.points[i].t > from && probing(&trace.points[i]) && !probing(&trace.points[i - 1])) else {
        return RunCheck::unseen(format!(
            "no PROBE_BW_REFILL or UP begun after {} (the change settled: 2 RTTs on, the window no longer holding the sender)",
            ms(from)
        ));
    };
    let (start, entered) = (&trace.points[i - 1], trace.points[i].t);
    let Some(at_start) = start.inflight_longterm_bytes.filter(|b| *b != u64::MAX) else {
        return RunCheck::unseen(format!(
            "inflight_longterm unset (no loss yet) when {} began at {}: nothing to hold",
            phase_name(&trace.points[i]),
            ms(entered)
        ));
    };
    let Some((t, high)) = trace.points[i..].iter().filter_map(|p| p.inflight_longterm_bytes.filter(|b| *b != u64::MAX).map(|b| (p.t, b))).max_by_key(|x| x.1)
    else {
        return RunCheck::unseen(format!("inflight_longterm unset after {}", ms(entered)));
    };
    let ratio = high as f64 / at_start as f64;
    RunCheck::judged(
        rule,
        ratio,
        ratio,
        ratio,
        format!(
            "inflight_longterm {at_start} B as {} began at {} (the first after {}, the change settled), highest after it {high} B at {} ({ratio:.2}×)",
            phase_name(&trace.points[i]),
            ms(entered),
            ms(from),
            ms(t)
        ),
    )
}

fn phase_name(p: &Point) -> String {
    format!("PROBE_BW_{}", p.phase.map_or("?", Phase::name))
}

fn up_held_from(trace: &Trace, rule: Rule, from: Duration) -> RunCheck {
    if !trace.has(|p| p.phase.is_some()) {
        return RunCheck::unseen("the stack shows no ProbeBW phase");
    }
    let from = settled(trace, from);
    let after: Vec<&Point> = trace.points.iter().filter(|p| p.t > from && p.mode.is_some()).collect();
    let in_up = |p: &Point| p.mode == Some(Mode::ProbeBw) && p.phase == Some(Phase::Up);
    // Only UPs begun after `from`: one already under way began on samples that were not
    // app-limited and may end on their plateau.
    let mut ups = 0;
    let mut ends: Vec<Duration> = Vec::new();
    // UPs that lost packets: §5.3.3.9's other way out (BBRIsInflightTooHigh), which an
    // app-limited flow may meet where the buffer is under a packet (A.20's 0.5 BDP at 1 ms).
    let mut on_loss = 0;
    // The UP being watched: when it began, and the bytes lost by then.
    let mut watching: Option<Option<u64>> = None;
    for w in after.windows(2) {
        if !in_up(w[0]) && in_up(w[1]) {
            ups += 1;
            watching = Some(w[0].lost_bytes);
        }
        // UP straight to DOWN, or to CRUISE through a DOWN shorter than a sample.
        if let Some(lost_then) = watching.filter(|_| in_up(w[0]) && w[1].mode == Some(Mode::ProbeBw) && !in_up(w[1])) {
            if lost_then.zip(w[1].lost_bytes).is_some_and(|(then, now)| now > then) {
                on_loss += 1;
            } else {
                ends.push(w[1].t);
            }
        }
        if !in_up(w[1]) {
            watching = None;
        }
    }
    if ups == 0 {
        return RunCheck::unseen(format!("no PROBE_BW_UP begun after {} (the change settled: 2 RTTs on, the window no longer holding the sender)", ms(from)));
    }
    let n = ends.len() as f64;
    let losses = if on_loss > 0 { format!("; {on_loss} left on a loss (§5.3.3.9 BBRIsInflightTooHigh), not counted") } else { String::new() };
    let evidence = match ends.first() {
        None => format!("{ups} PROBE_BW_UP begun after {} (the change settled: 2 RTTs on, the window no longer holding the sender), each left only for PROBE_RTT (or held to the end){losses}", ms(from)),
        Some(t) => {
            format!("PROBE_BW_UP ended within PROBE_BW without a loss at {} ({} times after {}, the change settled){losses}", ms(*t), ends.len(), ms(from))
        }
    };
    RunCheck::judged(rule, n, n, n, evidence)
}

fn not_reentered_from(trace: &Trace, rule: Rule, mode: Mode, from: Duration) -> RunCheck {
    let ts = trace.transitions();
    if !ts.iter().any(|t| t.from == mode && t.at <= from) {
        return RunCheck::unseen(format!("had not left {} by {}", mode.name(), ms(from)));
    }
    let back: Vec<_> = ts.iter().filter(|t| t.to == mode && t.at > from).collect();
    let n = back.len() as f64;
    let evidence = match back.first() {
        None => format!("{} not entered again after {}", mode.name(), ms(from)),
        Some(t) => format!("{} → {} at {}", t.from.name(), mode.name(), ms(t.at)),
    };
    RunCheck::judged(rule, n, n, n, evidence)
}

/// The short-term model is set: either bound below the ∞ it has while unset.
fn short_term_set(p: &Point) -> bool {
    p.bw_shortterm_bps.is_some_and(f64::is_finite) || p.inflight_shortterm_bytes.is_some_and(|b| b != u64::MAX)
}

/// §5.5.10.3 BBRIsProbingBW: STARTUP, ProbeBW_REFILL and ProbeBW_UP, in which a round with loss
/// adapts no lower bound.
fn probing(p: &Point) -> bool {
    p.mode == Some(Mode::Startup) || (p.mode == Some(Mode::ProbeBw) && matches!(p.phase, Some(Phase::Refill | Phase::Up)))
}

fn short_term_cut(trace: &Trace, rule: Rule, from: Duration, rounds: f64) -> RunCheck {
    if !trace.has(|p| p.bw_shortterm_bps.is_some() || p.inflight_shortterm_bytes.is_some()) {
        return RunCheck::unseen("the stack shows no bw_shortterm or inflight_shortterm (BBRv1 has no short-term model)");
    }
    if !trace.has(|p| p.round_count.is_some()) || !trace.has(|p| p.lost_bytes.is_some()) {
        return RunCheck::unseen("the stack shows no BBR.round_count or loss counter");
    }
    let pts = &trace.points;
    let count = |i: usize| pts[i].round_count.unwrap_or(0);
    let lost = |i: usize| pts[i].lost_bytes.unwrap_or(0);
    // Losses passed over, and why: the model already cut (a further cut need not lower it:
    // max(bw_latest, Beta × bw_shortterm)), the loss's round may have ended while probing, or
    // PROBE_RTT came between the loss and the cut: §5.3.4.4 BBRExitProbeRTT resets the
    // short-term model (BBRResetShortTermModel), on the very ACK that may end the loss's round
    // (at 20 Mbit/s × 200 ms behind CUBIC, the first loss after 4 s came in PROBE_RTT).
    let (mut already, mut while_probing, mut probe_rtt) = (0, 0, 0);
    for i in (1..pts.len()).filter(|&i| pts[i].t > from && lost(i) > lost(i - 1)) {
        if short_term_set(&pts[i - 1]) {
            already += 1;
            continue;
        }
        // The loss lies in (a0, a1]; its round ends at BBR.round_count count(a0) + 1 at the
        // earliest and count(a1) + 2 at the latest. The cut is due if the flow is out of probing
        // from its earliest end on, up to the cut or a round past the latest end (so that a
        // missing cut shows more rounds than allowed).
        let (a0, a1) = (i - 1, i);
        let (earliest, last) = (count(a0) + 1, count(a1) + rounds.ceil() as u64 + 1);
        let mut cut = None;
        let mut excused = false;
        let mut j = a1;
        while j < pts.len() {
            if short_term_set(&pts[j]) {
                cut = Some(j);
                break;
            }
            if probing(&pts[j]) && count(j) >= earliest {
                // A probing sample within the loss's round: the draft may rightly skip the cut.
                // One later than that, the cut was due and never came.
                excused = count(j) <= last;
                break;
            }
            j += 1;
        }
        if excused {
            while_probing += 1;
            continue;
        }
        if cut.is_none() && pts[a0..j.min(pts.len())].iter().any(|p| p.mode == Some(Mode::ProbeRtt)) {
            probe_rtt += 1;
            continue;
        }
        let passed = format!(
            "{already} earlier losses with the model already cut, {while_probing} whose round may have ended while probing, {probe_rtt} reset by PROBE_RTT's exit"
        );
        let loss_at = format!("first loss after {} at {} (round {}, {})", ms(from), ms(pts[a1].t), count(a1), state_name(&pts[a1]));
        return match cut {
            Some(b) => {
                let (lo, hi, clock) = trace.rounds_between((pts[a0].t, pts[a1].t), (pts[b - 1].t, pts[b].t));
                let p = &pts[b];
                let bw = match (p.bw_shortterm_bps.filter(|b| b.is_finite()), p.bw_bps) {
                    (Some(lo_bw), Some(max)) => format!("bw_shortterm {} ({:.0} % of max_bw {})", mbit(lo_bw), lo_bw / max * 100.0, mbit(max)),
                    (Some(lo_bw), None) => format!("bw_shortterm {}", mbit(lo_bw)),
                    (None, _) => "bw_shortterm unset".into(),
                };
                let inflight =
                    p.inflight_shortterm_bytes.filter(|b| *b != u64::MAX).map_or("inflight_shortterm unset".into(), |b| format!("inflight_shortterm {b} B"));
                RunCheck::judged(
                    rule,
                    lo,
                    hi,
                    (lo + hi) / 2.0,
                    format!("{loss_at}; {bw}, {inflight} at {} (round {}): {lo:.0}–{hi:.0} rounds ({clock}); {passed}", ms(p.t), count(b)),
                )
            }
            None => {
                // Never cut: out of probing until j (or the end of the run).
                let stop = j - 1;
                let lo = count(stop).saturating_sub(count(a1)) as f64;
                if j == pts.len() && count(stop) < last {
                    return RunCheck::unseen(format!("{loss_at}; the run ended {lo:.0} rounds later, before the cut was due; {passed}"));
                }
                let until = if j < pts.len() { format!("{} began at {}", state_name(&pts[j]), ms(pts[j].t)) } else { "the run ended".into() };
                RunCheck::judged(
                    rule,
                    lo,
                    f64::INFINITY,
                    f64::INFINITY,
                    format!("{loss_at}; short-term model still unset {lo:.0} rounds later, when {until}; {passed}"),
                )
            }
        };
    }
    RunCheck::unseen(format!(
        "no loss after {} with the short-term model unset and its round out of probing ({already} with the model already cut, {while_probing} whose round may have ended while probing, {probe_rtt} reset by PROBE_RTT's exit)",
        ms(from)
    ))
}

fn state_name(p: &Point) -> String {
    match (p.mode, p.phase) {
        (Some(Mode::ProbeBw), Some(_)) => phase_name(p),
        (Some(m), _) => m.name().into(),
        (None, _) => "no state".into(),
    }
}
/// How far before the stack's report of a spurious episode its first loss is looked for: the
/// transport forgets a lost packet 2 PTOs after it was sent (noq's `drain_lost_packets`), a
/// PTO being about an RTT and its variation (RFC 9002 §6.2.1), so an episode reported spurious
/// began within about 3 RTTs; one sample more on each side for the sampling.
const SPURIOUS_LOOKBACK_RTTS: u32 = 3;

fn spurious_loss_undone(trace: &Trace, rule: Rule) -> RunCheck {
    if !trace.has(|p| p.spurious_losses.is_some()) {
        return RunCheck::unseen("the stack reports no spurious loss episodes per connection (kernel TCP counts its undos per namespace, TcpExt*Undo)");
    }
    if !trace.has(|p| p.bw_shortterm_bps.is_some()) {
        return RunCheck::unseen("the stack shows no short-term model (bw_shortterm, inflight_shortterm)");
    }
    let pts = &trace.points;
    let reported: Vec<usize> = (1..pts.len()).filter(|&i| pts[i].spurious_losses.zip(pts[i - 1].spurious_losses).is_some_and(|(a, b)| a > b)).collect();
    let Some(total) = pts.iter().filter_map(|p| p.spurious_losses).max().filter(|&n| n > 0) else {
        return RunCheck::unseen("no loss episode proved spurious: the path's reordering did not trigger a loss recovery");
    };
    // An unset bound is ∞ (`u64::MAX`, `f64::INFINITY`): back to unset is all of it, to a
    // finite value from unset none of it.
    let restored = |before: f64, after: f64| {
        if after.is_infinite() {
            1.0
        } else if before.is_infinite() {
            0.0
        } else {
            after / before
        }
    };
    let as_f = |b: Option<u64>| b.map(|b| if b == u64::MAX { f64::INFINITY } else { b as f64 });
    let mut worst: Option<(f64, &'static str, Duration)> = None;
    let mut judged = 0;
    for &i in &reported {
        let rtt = pts[i].rtt.unwrap_or(trace.path.rtt).max(trace.path.rtt);
        let since = pts[i].t.saturating_sub(rtt * SPURIOUS_LOOKBACK_RTTS + trace.sample_interval * 2);
        let lost = |k: usize| pts[k].lost_bytes.zip(pts[k - 1].lost_bytes).is_some_and(|(a, b)| a > b);
        // The latest rise of the lost bytes in the look-back: the report covers at least it.
        let Some(k) = (1..=i).rev().take_while(|&k| pts[k].t >= since).find(|&k| lost(k)) else { continue };
        let (before, after) = (&pts[k - 1], &pts[i]);
        judged += 1;
        for (name, b, a) in [
            ("bw_shortterm", before.bw_shortterm_bps, after.bw_shortterm_bps),
            ("inflight_shortterm", as_f(before.inflight_shortterm_bytes), as_f(after.inflight_shortterm_bytes)),
            ("inflight_longterm", as_f(before.inflight_longterm_bytes), as_f(after.inflight_longterm_bytes)),
        ] {
            let Some((b, a)) = b.zip(a) else { continue };
            let r = restored(b, a);
            if worst.is_none_or(|(w, ..)| r < w) {
                worst = Some((r, name, after.t));
            }
        }
    }
    let Some((r, name, t)) = worst else {
        return RunCheck::unseen(format!("{total} loss episodes proved spurious, none with its loss sampled within {SPURIOUS_LOOKBACK_RTTS} RTTs before"));
    };
    RunCheck::judged(
        rule,
        r,
        r,
        r,
        format!(
            "{total} loss episodes proved spurious, {judged} judged from the latest loss before each: lowest restored {name} {:.0} % of its value before, at {}",
            r * 100.0,
            ms(t)
        ),
    )
}

fn ms(d: Duration) -> String {
    format!("{:.0} ms", d.as_secs_f64() * 1e3)
}

fn mbit(bps: f64) -> String {
    format!("{:.2} Mbit/s", bps / 1e6)
}

fn median(mut v: Vec<f64>) -> Option<f64> {
    if v.is_empty() {
        return None;
    }
    v.sort_by(f64::total_cmp);
    let n = v.len();
    Some(if n % 2 == 1 { v[n / 2] } else { (v[n / 2 - 1] + v[n / 2]) / 2.0 })
}

fn startup_exit(trace: &Trace, rule: Rule) -> RunCheck {
    // Exact where the controller recorded its rounds: §5.3.1.2 BBRCheckFullBWReached counts
    // full_bw_count from the round full_bw last grew 25 %, and BBRCheckStartupDone leaves at the
    // count's 3rd round (BBRStartupFullBwCount), in the same ACK's update.
    if let Some((e, round, grew)) = trace.startup_exit_rounds() {
        let n = round.saturating_sub(grew) as f64;
        return RunCheck::judged(
            rule,
            n,
            n,
            n,
            format!(
                "full_bw last grew 25 % in round {grew}; STARTUP → {} in round {round} at {}: {n:.0} rounds (BBR.round_count, exact)",
                e.to.name(),
                ms(e.t)
            ),
        );
    }
    if !trace.has(|p| p.bw_bps.is_some()) {
        return RunCheck::unseen("the stack shows no bandwidth estimate");
    }
    let in_startup: Vec<&Point> =
        trace.points.iter().skip_while(|p| p.mode != Some(Mode::Startup)).take_while(|p| p.mode.is_none_or(|m| m == Mode::Startup)).collect();
    let Some(exit) = trace.transitions().into_iter().find(|t| t.from == Mode::Startup) else {
        let end = trace.points.last().map_or(Duration::ZERO, |p| p.t);
        let rounds = trace.round_count_at(end).map_or_else(|| end.as_secs_f64() / trace.round_at(end).as_secs_f64(), |n| n as f64);
        return RunCheck::judged(rule, rounds, f64::INFINITY, f64::INFINITY, format!("never left STARTUP in {:.1} s ({rounds:.0} rounds)", end.as_secs_f64()));
    };
    let bw_exit = in_startup.iter().filter_map(|p| p.bw_bps).fold(0.0, f64::max);
    let Some(cross) = in_startup.iter().position(|p| p.bw_bps.is_some_and(|b| b >= bw_exit / 1.25)) else {
        return RunCheck::unseen("no bandwidth estimate sampled in STARTUP");
    };
    let t1 = in_startup[cross].t;
    let t0 = if cross > 0 { in_startup[cross - 1].t } else { t1.saturating_sub(trace.sample_interval) };
    let (lo, hi, clock) = trace.rounds_between((t0, t1), (exit.before, exit.at));
    RunCheck::judged(
        rule,
        lo,
        hi,
        (lo + hi) / 2.0,
        format!(
            "estimate reached {} (1/1.25 of {} at exit) at {}; STARTUP → {} at {}: {lo:.1}–{hi:.1} rounds ({clock})",
            mbit(bw_exit / 1.25),
            mbit(bw_exit),
            ms(t1),
            exit.to.name(),
            ms(exit.at),
        ),
    )
}

fn drain(trace: &Trace, rule: Rule) -> RunCheck {
    // Exactly, where the controller recorded its changes with BBR.round_count: -06's
    // BBRCheckDrainDone leaves once round_count > drain_start_round + 3, so a DRAIN cut short
    // by time shows 4, and a long DRAIN is no longer bracketed between 10 ms samples.
    let modes: Vec<&crate::trace::StateEvent> = trace.events.iter().filter(|e| e.from != e.to).collect();
    if let Some(i) = modes.iter().position(|e| e.from == Mode::Startup && e.to != Mode::ProbeRtt) {
        let (into, out) = (modes[i], modes.get(i + 1).filter(|e| e.from == Mode::Drain));
        if let (Mode::Drain, Some(out), Some(r0)) = (into.to, out, into.round) {
            if let Some(r1) = out.round {
                let n = r1.saturating_sub(r0) as f64;
                let to = out.to_phase.map_or(out.to.name().to_string(), |p| format!("PROBE_BW_{}", p.name()));
                return RunCheck::judged(
                    rule,
                    n,
                    n,
                    n,
                    format!("DRAIN from {} to {} ({to}): {n} rounds (BBR.round_count {r0} → {r1}, the controller's own events)", ms(into.t), ms(out.t)),
                );
            }
        }
    }
    let ts = trace.transitions();
    let Some(leave) = ts.iter().find(|t| t.from == Mode::Startup) else {
        return RunCheck::unseen("never left STARTUP");
    };
    if leave.to != Mode::Drain {
        // DRAIN, if any, was shorter than a sample.
        let (_, hi, _) = trace.rounds_between((leave.before, leave.before), (leave.at, leave.at));
        return RunCheck::judged(rule, 0.0, hi, hi / 2.0, format!("STARTUP → {} at {}: DRAIN shorter than a sample", leave.to.name(), ms(leave.at)));
    }
    let Some(out) = ts.iter().find(|t| t.from == Mode::Drain && t.before >= leave.before) else {
        let end = trace.points.last().map_or(Duration::ZERO, |p| p.t);
        let (lo, _, _) = trace.rounds_between((leave.before, leave.at), (end, end));
        return RunCheck::judged(rule, lo, f64::INFINITY, f64::INFINITY, format!("entered DRAIN at {} and never left it", ms(leave.at)));
    };
    let (lo, hi, clock) = trace.rounds_between((leave.before, leave.at), (out.before, out.at));
    RunCheck::judged(
        rule,
        lo,
        hi,
        (lo + hi) / 2.0,
        format!("DRAIN from {} to {} ({}): {lo:.1}–{hi:.1} rounds ({clock})", ms(leave.at), ms(out.at), out.to.name()),
    )
}

fn stays_in(trace: &Trace, rule: Rule, mode: Mode) -> RunCheck {
    if !trace.has(|p| p.mode == Some(mode)) {
        return RunCheck::unseen(format!("never in {}", mode.name()));
    }
    let exits: Vec<_> = trace.transitions().into_iter().filter(|t| t.from == mode && t.to != Mode::ProbeRtt).collect();
    let end = trace.points.last().map_or(Duration::ZERO, |p| p.t);
    let n = exits.len() as f64;
    let evidence = match exits.first() {
        None => format!("in {} (or PROBE_RTT) for all {:.1} s", mode.name(), end.as_secs_f64()),
        Some(t) => format!("{} → {} at {} ({} such exits)", mode.name(), t.to.name(), ms(t.at), exits.len()),
    };
    RunCheck::judged(rule, n, n, n, evidence)
}

fn up_loss_cuts_longterm(trace: &Trace, rule: Rule) -> RunCheck {
    let ev = &trace.events;
    if !ev.iter().any(|e| e.to_phase.is_some()) {
        return RunCheck::unseen("the stack records no ProbeBW phase changes of its own (QUIC BBR's bbr_events do)");
    }
    if !trace.has(|p| p.inflight_longterm_bytes.is_some()) {
        return RunCheck::unseen("the stack shows no inflight_longterm");
    }
    let set = |v: Option<u64>| v.filter(|b| *b != u64::MAX);
    let late = trace.path.rtt * 2 + trace.sample_interval;
    let (mut judged, mut good, mut seen) = (0usize, 0usize, Vec::new());
    for (i, e) in ev.iter().enumerate().filter(|(_, e)| e.to == Mode::ProbeBw && e.to_phase == Some(Phase::Up)) {
        let Some(next) = ev.get(i + 1).filter(|n| n.to != Mode::ProbeRtt) else { continue };
        let (start, end) = (e.t, next.t);
        let before = trace.points.iter().take_while(|p| p.t <= start).last();
        let at_end = trace.points.iter().find(|p| p.t >= end);
        let (Some(b), Some(a)) = (before, at_end) else { continue };
        let Some(begun_at) = set(b.inflight_longterm_bytes) else { continue };
        if a.lost_bytes.zip(b.lost_bytes).is_none_or(|(after, before)| after <= before) {
            continue;
        }
        let peak = trace.points.iter().filter(|p| p.t > start && p.t < end).filter_map(|p| set(p.inflight_longterm_bytes)).fold(begun_at, u64::max);
        let after = trace.points.iter().filter(|p| p.t >= end && p.t <= end + late).filter_map(|p| set(p.inflight_longterm_bytes)).min();
        let down = next.to == Mode::ProbeBw && next.to_phase == Some(Phase::Down);
        let cut = after.is_some_and(|v| v < peak);
        judged += 1;
        good += usize::from(down && cut);
        if seen.len() < 3 {
            let to = next.to_phase.map_or(next.to.name().to_string(), |p| format!("PROBE_BW_{}", p.name()));
            seen.push(format!(
                "UP at {} → {to} at {}, inflight_longterm {} B at its peak, {} after",
                ms(start),
                ms(end),
                peak,
                after.map_or("unset".into(), |v| format!("{v} B"))
            ));
        }
    }
    if judged == 0 {
        return RunCheck::unseen("no PROBE_BW_UP begun with inflight_longterm set ended with a loss");
    }
    let share = good as f64 / judged as f64;
    RunCheck::judged(rule, share, share, share, format!("{good} of {judged} UPs ended by a loss were cut and went to DOWN: {}", seen.join("; ")))
}

fn not_entered_between(trace: &Trace, rule: Rule, mode: Mode, from: Duration, until: Duration) -> RunCheck {
    if trace.points.last().is_none_or(|p| p.t < until) {
        return RunCheck::unseen(format!("the run ended before {}", ms(until)));
    }
    let own = trace.events.iter().any(|e| e.from != e.to);
    let entered: Vec<Duration> = if own {
        trace.events.iter().filter(|e| e.to == mode && e.from != mode && e.t >= from && e.t < until).map(|e| e.t).collect()
    } else {
        trace.transitions().into_iter().filter(|t| t.to == mode && t.at >= from && t.at < until).map(|t| t.at).collect()
    };
    let source = if own { " (the controller's own events)" } else { "" };
    let evidence = match entered.first() {
        None => format!("{} not entered from {} to {}{source}", mode.name(), ms(from), ms(until)),
        Some(t) => format!("{} entered at {}{source}, {} time(s) from {} to {}", mode.name(), ms(*t), entered.len(), ms(from), ms(until)),
    };
    let n = entered.len() as f64;
    RunCheck::judged(rule, n, n, n, evidence)
}

fn next_phase(trace: &Trace, rule: Rule, from: Phase, to: Phase, stay: Stay) -> RunCheck {
    let ev = &trace.events;
    if !ev.iter().any(|e| e.to_phase.is_some()) {
        return RunCheck::unseen("the stack records no ProbeBW phase changes of its own (QUIC BBR's bbr_events do)");
    }
    let probe_due = {
        let packets = (trace.path.bdp_bytes() / trace.path.mss as f64).clamp(1.0, 63.0);
        Duration::from_secs(2).min(trace.path.rtt.mul_f64(packets))
    };
    let counts = |lasted: Duration| match stay {
        Stay::Any => true,
        Stay::BeforeProbeDue => lasted < probe_due,
        Stay::PastProbeWait => lasted >= Duration::from_secs(3),
    };
    // Each `from` phase entered, with how long it lasted and what came next; PROBE_RTT may
    // interrupt it, and a phase the run ended in has no successor.
    let ended: Vec<(Duration, Duration, &crate::trace::StateEvent)> = ev
        .iter()
        .enumerate()
        .filter(|(_, e)| e.to == Mode::ProbeBw && e.to_phase == Some(from))
        .filter_map(|(i, e)| ev.get(i + 1).map(|next| (e.t, next.t.saturating_sub(e.t), next)))
        .filter(|(_, lasted, next)| next.to != Mode::ProbeRtt && counts(*lasted))
        .collect();
    let within = match stay {
        Stay::Any => String::new(),
        Stay::BeforeProbeDue => format!(" ended within {} (a probe could be due no sooner)", ms(probe_due)),
        Stay::PastProbeWait => " lasting 3 s or more (the longest bw_probe_wait)".to_string(),
    };
    if ended.is_empty() {
        return RunCheck::unseen(format!("no PROBE_BW_{}{within} ended but into PROBE_RTT", from.name()));
    }
    let next_name = |e: &crate::trace::StateEvent| match e.to_phase {
        Some(p) => format!("PROBE_BW_{}", p.name()),
        None => e.to.name().to_string(),
    };
    let good = ended.iter().filter(|(_, _, next)| next.to == Mode::ProbeBw && next.to_phase == Some(to)).count();
    let others: Vec<String> = ended
        .iter()
        .filter(|(_, _, next)| !(next.to == Mode::ProbeBw && next.to_phase == Some(to)))
        .take(3)
        .map(|(at, lasted, next)| format!("{} at {} after {}", next_name(next), ms(*at + *lasted), ms(*lasted)))
        .collect();
    let share = good as f64 / ended.len() as f64;
    let evidence = format!(
        "{good} of {} PROBE_BW_{}{within} went to PROBE_BW_{} (the controller's own events){}",
        ended.len(),
        from.name(),
        to.name(),
        if others.is_empty() { String::new() } else { format!("; not: {}", others.join(", ")) }
    );
    RunCheck::judged(rule, share, share, share, evidence)
}

fn next_state(trace: &Trace, rule: Rule, from: Mode, to: Mode, phase: Option<Phase>) -> RunCheck {
    // §5.3.4.3: PROBE_RTT may interrupt any state, so an exit into it says nothing of the
    // state that comes after `from` (unless PROBE_RTT is what is asserted).
    // §5.3.4.4 BBRExitProbeRTT: PROBE_RTT returns to STARTUP while BBR.full_bw_reached is false
    // (or not shown), so such an exit says nothing of the state asserted after a full pipe.
    let full_bw_before = |t: &crate::trace::Transition| trace.points.iter().take_while(|p| p.t <= t.before).last().and_then(|p| p.full_bw_reached);
    let back_to_startup =
        |t: &crate::trace::Transition| from == Mode::ProbeRtt && t.to == Mode::Startup && to != Mode::Startup && full_bw_before(t) != Some(true);
    // The controller's own changes where it records them: at 1 ms a DRAIN of 2–3 rounds lies
    // between two 10 ms samples, and the samples alone show STARTUP → PROBE_BW. The phase
    // entered is still the first sample's.
    let own = trace.events.iter().any(|e| e.from != e.to);
    let transitions: Vec<crate::trace::Transition> = if own {
        trace
            .events
            .iter()
            .filter(|e| e.from != e.to)
            .map(|e| {
                let next = trace.points.iter().find(|p| p.t >= e.t);
                crate::trace::Transition {
                    before: e.t,
                    at: next.map_or(e.t, |p| p.t),
                    from: e.from,
                    to: e.to,
                    to_phase: next.filter(|p| p.mode == Some(e.to)).and_then(|p| p.phase),
                }
            })
            .collect()
    } else {
        trace.transitions()
    };
    let exits: Vec<_> = transitions.into_iter().filter(|t| t.from == from && (t.to != Mode::ProbeRtt || to == Mode::ProbeRtt) && !back_to_startup(t)).collect();
    if exits.is_empty() {
        return RunCheck::unseen(format!("never left {} but into PROBE_RTT (or, from PROBE_RTT, into STARTUP before full_bw_reached)", from.name()));
    }
    let shows_phases = trace.has(|p| p.phase.is_some());
    if phase.is_some() && !shows_phases {
        return RunCheck::unseen(format!("{} → {} seen; the stack shows no ProbeBW phase", from.name(), exits[0].to.name()));
    }
    // A sample can hide the asserted phase: where the BDP is a few packets, ProbeBW moves on
    // from CRUISE to REFILL and UP within 2–3 rounds (§5.3.3.5.3: Reno coexistence probes after
    // min(BDP in packets, 63) rounds), and at 20 Mbit/s × 1 ms a 10 ms sample is 10 rounds. An
    // exit first sampled in a later phase of the cycle, 2 or more rounds on, is not held
    // against it.
    let rounds_between = |t: &crate::trace::Transition| {
        let at = |when: Duration| trace.points.iter().find(|p| p.t == when);
        match (at(t.before).and_then(|p| p.round_count), at(t.at).and_then(|p| p.round_count)) {
            (Some(a), Some(b)) => Some(b.saturating_sub(a) as f64),
            _ => at(t.at).and_then(|p| p.min_rtt).filter(|r| !r.is_zero()).map(|r| (t.at - t.before).as_secs_f64() / r.as_secs_f64()),
        }
    };
    let hidden = |t: &crate::trace::Transition| {
        t.to == to && phase.zip(t.to_phase).is_some_and(|(want, got)| phase_rank(got) > phase_rank(want)) && rounds_between(t).is_some_and(|r| r >= 2.0)
    };
    let exact = exits.iter().filter(|t| t.to == to && phase.is_none_or(|p| t.to_phase == Some(p))).count();
    let later = exits.iter().filter(|t| hidden(t)).count();
    let good = exact + later;
    let share = good as f64 / exits.len() as f64;
    let seen: Vec<String> =
        exits.iter().take(4).map(|t| format!("{}{} at {}", t.to.name(), t.to_phase.map(|p| format!("_{}", p.name())).unwrap_or_default(), ms(t.at))).collect();
    let later = if later > 0 { format!(" ({later} first sampled in a later phase, 2 or more rounds on)") } else { String::new() };
    let source = if own { " (the controller's own events)" } else { "" };
    RunCheck::judged(rule, share, share, share, format!("{good} of {} exits from {} as asserted{later}{source}: {}", exits.len(), from.name(), seen.join(", ")))
}

/// ProbeBW's phases in the order a cycle goes through them (§5.3.3): DOWN, CRUISE, REFILL, UP.
fn phase_rank(p: Phase) -> u8 {
    match p {
        Phase::Down => 0,
        Phase::Cruise => 1,
        Phase::Refill => 2,
        Phase::Up => 3,
    }
}

fn before_step(trace: &Trace) -> impl Iterator<Item = &Point> {
    let step = trace.path.rate_step.map(|(t, _)| t);
    trace.points.iter().filter(move |p| step.is_none_or(|s| p.t < s))
}

fn bw_near_link(trace: &Trace, rule: Rule, in_use: bool) -> RunCheck {
    // An unset bw_shortterm is ∞ (no bound), so the minimum is max_bw.
    let bw = |p: &Point| p.bw_bps.map(|b| if in_use { p.bw_shortterm_bps.map_or(b, |s| b.min(s)) } else { b });
    let ratios: Vec<f64> = before_step(trace).filter(|p| p.mode == Some(Mode::ProbeBw)).filter_map(bw).map(|b| b / trace.path.rate_bps).collect();
    let n = ratios.len();
    let Some(m) = median(ratios) else {
        return RunCheck::unseen("no bandwidth estimate sampled in PROBE_BW");
    };
    let what = if !in_use {
        "estimate"
    } else if trace.has(|p| p.bw_shortterm_bps.is_some()) {
        "bandwidth in use (min of max_bw and bw_shortterm)"
    } else {
        "estimate (no short-term model shown)"
    };
    RunCheck::judged(
        rule,
        m,
        m,
        m,
        format!("median {what} {} over {n} PROBE_BW samples = {:.1} % of the link's {}", mbit(m * trace.path.rate_bps), m * 100.0, mbit(trace.path.rate_bps)),
    )
}

fn cwnd_floor(trace: &Trace, rule: Rule) -> RunCheck {
    let lowest = trace.points.iter().filter(|p| p.mode.is_some()).filter_map(|p| p.cwnd_bytes.map(|c| (p.t, c))).min_by_key(|(_, c)| *c);
    let Some((t, c)) = lowest else {
        return RunCheck::unseen("the stack shows no cwnd");
    };
    let packets = c as f64 / trace.path.mss as f64;
    RunCheck::judged(rule, packets, packets, packets, format!("lowest cwnd {c} B = {packets:.1} packets at {}", ms(t)))
}

fn gain_is(trace: &Trace, rule: Rule, which: Gain, mode: Mode, phase: Option<Phase>) -> RunCheck {
    if phase.is_some() && !trace.has(|p| p.phase.is_some()) {
        return RunCheck::unseen("the stack shows no ProbeBW phase");
    }
    let gains: Vec<f64> = trace
        .points
        .iter()
        .filter(|p| p.mode == Some(mode) && phase.is_none_or(|ph| p.phase == Some(ph)))
        .filter_map(|p| match which {
            Gain::Pacing => p.pacing_gain,
            Gain::Cwnd => p.cwnd_gain,
        })
        .collect();
    let n = gains.len();
    let state = format!("{}{}", mode.name(), phase.map(|p| format!("_{}", p.name())).unwrap_or_default());
    let Some(m) = median(gains) else {
        return RunCheck::unseen(format!("no gain sampled in {state}"));
    };
    RunCheck::judged(rule, m, m, m, format!("median gain {m:.3} over {n} samples in {state}"))
}

fn lowest_probe_bw_gain(trace: &Trace, rule: Rule) -> RunCheck {
    let low = trace.points.iter().filter(|p| p.mode == Some(Mode::ProbeBw)).filter_map(|p| p.pacing_gain.map(|g| (p.t, g))).min_by(|a, b| a.1.total_cmp(&b.1));
    match low {
        Some((t, g)) if g < 1.0 => RunCheck::judged(rule, g, g, g, format!("lowest PROBE_BW pacing gain {g:.3} at {}", ms(t))),
        Some(_) => RunCheck::unseen("no PROBE_BW sample caught a gain below 1"),
        None => RunCheck::unseen("no PROBE_BW gain sampled"),
    }
}

fn probe_bw_cycles(trace: &Trace, rule: Rule) -> RunCheck {
    if !trace.has(|p| p.phase.is_some()) {
        return RunCheck::unseen("the stack shows no ProbeBW phase");
    }
    let phases = trace.phases();
    let cycles = phases.windows(2).filter(|w| w[0].1 == Phase::Up && w[1].1 == Phase::Down).count() as f64;
    let order: Vec<&str> = phases.iter().take(8).map(|(_, p)| p.name()).collect();
    RunCheck::judged(rule, cycles, cycles, cycles, format!("{cycles} UP → DOWN cycles; phases {}", order.join(" → ")))
}

/// A run whose sender was host-limited longer than this share is not judged. On this 2-vCPU
/// host the full grid's QUIC runs at 1 Gbit/s were held 7–84 % of their time (STARTUP stayed
/// 5 s past its plateau at 200 ms: its samples were app-limited) and every slower run 0 %.
pub const HOST_LIMITED_MAX: f64 = 0.05;

fn probe_rtt_every(trace: &Trace, rule: Rule) -> RunCheck {
    let ts = trace.transitions();
    let Some(left) = ts.iter().find(|t| t.from == Mode::Startup) else {
        return RunCheck::unseen("never left STARTUP");
    };
    if !trace.has(|p| p.rtt.is_some()) {
        return RunCheck::unseen("the stack shows no RTT");
    }
    let end = trace.points.last().map_or(Duration::ZERO, |p| p.t);
    if trace.has(|p| p.probe_rtt_min_delay.is_some()) {
        return probe_rtt_every_on_its_filter(trace, rule, left.at, &ts, end);
    }
    // §5.3.4.3: only an RTT sample below the current minimum refreshes it and puts PROBE_RTT
    // off. Seen as the controller's min_rtt falling, or (where it is not shown) as a sampled RTT
    // below every one sampled before.
    // The timer's own filter (BBR.probe_rtt_min_delay) is not in the series: either the
    // controller's min_rtt falling or a sampled RTT below every one sampled before is taken as
    // a refresh. "Before" reaches back to the entry into the PROBE_RTT the span follows (the run's
    // start for the first span): the timer's expiry there restarts the filter from that ACK's
    // RTT (§5.3.4.3 BBRUpdateMinRTT, probe_rtt_expired), so behind another flow's standing queue
    // a sample below the queue's earlier low refreshes it, however far above the base RTT.
    let refreshed_in = |since: Duration, s: Duration, e: Duration| -> bool {
        let (before, within): (Vec<&Point>, Vec<&Point>) = trace.points.iter().filter(|p| p.t >= since && p.t <= e).partition(|p| p.t <= s);
        let fell = |field: fn(&Point) -> Option<Duration>| {
            let floor = before.iter().filter_map(|p| field(p)).min();
            floor.is_some_and(|f| within.iter().filter_map(|p| field(p)).any(|r| r < f))
        };
        fell(|p| p.min_rtt) || fell(|p| p.rtt)
    };
    let mut longest = (Duration::ZERO, Duration::ZERO, false);
    let mut excused = 0;
    for (s, stop, entered) in spans_between_probe_rtts(left.at, &ts, end) {
        let since = ts.iter().rfind(|t| t.to == Mode::ProbeRtt && t.at < s).map_or(Duration::ZERO, |t| t.at);
        if refreshed_in(since, s, stop) {
            excused += 1;
            continue;
        }
        if stop - s > longest.1 - longest.0 {
            longest = (s, stop, entered);
        }
    }
    let span = (longest.1 - longest.0).as_secs_f64();
    if span == 0.0 {
        return RunCheck::unseen(format!("a lower RTT refreshed min_rtt in every span ({excused}): no PROBE_RTT was due"));
    }
    let how = if longest.2 { "next PROBE_RTT" } else { "end of run, no PROBE_RTT" };
    let sample = trace.sample_interval.as_secs_f64();
    // A span cut by the end of the run only bounds the gap from below.
    let hi = if longest.2 { span + sample } else { f64::INFINITY };
    RunCheck::judged(
        rule,
        (span - sample).max(0.0),
        hi,
        span,
        format!("{span:.2} s from {} to {how}; neither min_rtt nor a sampled RTT fell below its low since the PROBE_RTT before it (or the start; {excused} spans excused)", ms(longest.0)),
    )
}

/// The spans from leaving STARTUP or PROBE_RTT to the next PROBE_RTT (or the run's end: `false`).
fn spans_between_probe_rtts(left_startup: Duration, ts: &[crate::trace::Transition], end: Duration) -> Vec<(Duration, Duration, bool)> {
    let starts = std::iter::once(left_startup).chain(ts.iter().filter(|t| t.from == Mode::ProbeRtt).map(|t| t.at));
    starts
        .map(|s| match ts.iter().find(|t| t.to == Mode::ProbeRtt && t.at > s) {
            Some(e) => (s, e.at, true),
            None => (s, end, false),
        })
        .collect()
}

/// §5.3.4.3 judged on the timer's own state, where the stack shows it (QUIC BBR):
/// BBRUpdateMinRTT refreshes BBR.probe_rtt_min_delay and its stamp on an RTT sample below it,
/// and BBRCheckProbeRTT enters PROBE_RTT at the first ACK `ProbeRTTInterval` after the stamp.
/// So in each span between PROBE_RTTs the clock restarts at the last fall of the filter (at its
/// stamp: the sample's time less the stamp's age), and the figure is the longest time from
/// there to the next PROBE_RTT. An expiry refreshes the stamp too, but from the current RTT,
/// not a lower one, so a controller that lets it expire without PROBE_RTT is not excused.
fn probe_rtt_every_on_its_filter(trace: &Trace, rule: Rule, left_startup: Duration, ts: &[crate::trace::Transition], end: Duration) -> RunCheck {
    let mut longest: Option<(Duration, Duration, bool)> = None;
    let mut falls = 0;
    for (s, e, entered) in spans_between_probe_rtts(left_startup, ts, end) {
        let within: Vec<&Point> = trace.points.iter().filter(|p| p.t >= s && p.t <= e).collect();
        let mut since = s;
        for w in within.windows(2) {
            if let (Some(a), Some(b)) = (w[0].probe_rtt_min_delay, w[1].probe_rtt_min_delay) {
                if b < a {
                    falls += 1;
                    since = since.max(w[1].probe_rtt_min_age.map_or(w[1].t, |age| w[1].t.saturating_sub(age)));
                }
            }
        }
        if longest.is_none_or(|(ls, le, _)| e - since > le - ls) {
            longest = Some((since, e, entered));
        }
    }
    let Some((since, stop, entered)) = longest else {
        return RunCheck::unseen("no span after STARTUP");
    };
    let span = (stop - since).as_secs_f64();
    let sample = trace.sample_interval.as_secs_f64();
    let how = if entered { "the next PROBE_RTT" } else { "the end of the run, no PROBE_RTT" };
    // The entry is known to a sample's bracket; a span cut by the end only bounds it from below.
    let hi = if entered { span + sample } else { f64::INFINITY };
    RunCheck::judged(
        rule,
        (span - sample).max(0.0),
        hi,
        span,
        format!("{span:.2} s from {} to {how} with BBR.probe_rtt_min_delay not falling ({falls} falls put PROBE_RTT off)", ms(since)),
    )
}

fn probe_rtt_lasts(trace: &Trace, rule: Rule) -> RunCheck {
    let ts = trace.transitions();
    let Some(enter) = ts.iter().find(|t| t.to == Mode::ProbeRtt) else {
        return RunCheck::unseen("no PROBE_RTT in the run");
    };
    let Some(exit) = ts.iter().find(|t| t.from == Mode::ProbeRtt && t.before >= enter.before) else {
        return RunCheck::unseen("PROBE_RTT not left before the end of the run");
    };
    let lo = exit.before.saturating_sub(enter.at).as_secs_f64();
    let hi = exit.at.saturating_sub(enter.before).as_secs_f64();
    RunCheck::judged(rule, lo, hi, (lo + hi) / 2.0, format!("PROBE_RTT from {} to {} ({:.0}–{:.0} ms)", ms(enter.at), ms(exit.at), lo * 1e3, hi * 1e3))
}

fn bw_follows_step(trace: &Trace, rule: Rule, within: f64) -> RunCheck {
    let Some((at, rate)) = trace.path.rate_step else {
        return RunCheck::unseen("the path has no rate step");
    };
    if !trace.has(|p| p.bw_bps.is_some()) {
        return RunCheck::unseen("the stack shows no bandwidth estimate");
    }
    let end = trace.points.last().map_or(Duration::ZERO, |p| p.t);
    let hit = trace.points.iter().filter(|p| p.t >= at).find(|p| p.bw_bps.is_some_and(|b| (b / rate - 1.0).abs() <= within));
    match hit {
        Some(p) => {
            let s = p.t.saturating_sub(at).as_secs_f64();
            let lo = (s - trace.sample_interval.as_secs_f64()).max(0.0);
            RunCheck::judged(
                rule,
                lo,
                s,
                s,
                format!("estimate {} within {:.0} % of the new {} {s:.2} s after the step", mbit(p.bw_bps.unwrap_or(0.0)), within * 100.0, mbit(rate)),
            )
        }
        None => {
            let last = trace.points.iter().rev().find_map(|p| p.bw_bps).unwrap_or(0.0);
            let waited = end.saturating_sub(at).as_secs_f64();
            RunCheck::judged(
                rule,
                waited,
                f64::INFINITY,
                f64::INFINITY,
                format!("estimate still {} {waited:.1} s after the step to {}", mbit(last), mbit(rate)),
            )
        }
    }
}

/// When a rate step first shows in the sender's ACKs, and so in its rate samples: ACKs of
/// packets that left the bottleneck before the step keep arriving at the old spacing for at most
/// the propagation from the bottleneck to the receiver and back, under one base RTT; packets
/// queued at the step leave at the new rate, so the queue adds nothing. A packet sent after this
/// instant has its whole rate-sample interval (from P.delivered_time, the ACK before it was
/// sent, to its own ACK; §4.1 of draft-ietf-ccwg-bbr-06, "Delivery Rate Samples") at the new
/// rate.
fn step_reaches_sender(trace: &Trace, at: Duration) -> Duration {
    at + trace.path.rtt
}

/// The ProbeBW cycles that can carry the max_bw filter past a rate step: begun after the step
/// reached the sender (see [`step_reaches_sender`]), and, where the stack counts its rounds,
/// whose first round ended in ProbeBW.
///
/// §5.3.3.9 (BBRAdaptLongTermModel, tcp_bbr.c's bbr_adapt_upper_bounds) advances the filter
/// (BBRAdvanceMaxBwFilter) one round after ProbeBW_DOWN begins (ACKS_PROBE_STOPPING at the next
/// round start), and only if the connection is then in a ProbeBW state with a sample that is
/// not app-limited; the new slot then takes samples of packets sent since DOWN began. So:
/// * a cycle begun before the step reached the sender opens a slot whose first samples still
///   carry the old rate — it cannot be one of the §5.5.3 MaxBwFilterLen = 2 cycles that forget
///   it;
/// * a cycle whose DOWN is interrupted by PROBE_RTT before its round ends does not advance the
///   filter at all. Seen on quic:bbr3 at 20 Mbit/s, 80 ms (3 of 5 runs, seed 7): DOWN at 4.89 s,
///   PROBE_RTT at 5.25 s in the same round (rounds last ~0.87 s behind the queue the cut
///   leaves); the estimate fell one round after the 2nd DOWN after it, 3 DOWNs after the step.
///
/// Where the stack shows BBR.cycle_count (§5.3.3.9 BBRAdvanceMaxBwFilter: QUIC BBR's series),
/// the filter's advances are read from it, not inferred: see [`cycles_advanced_after_step`].
/// Without a round count (kernel BBR) every cycle begun after the step reached the sender counts.
fn filter_cycles_after_step(trace: &Trace, starts: &[Duration], at: Duration) -> Vec<Duration> {
    if trace.has(|p| p.cycle_count.is_some()) {
        return cycles_advanced_after_step(trace, starts, at);
    }
    let reached = step_reaches_sender(trace, at);
    starts
        .iter()
        .copied()
        .filter(|s| *s >= reached)
        .filter(|s| {
            let Some(begun) = trace.points.iter().filter(|p| p.t <= *s).filter_map(|p| p.round_count).next_back() else { return true };
            // Up to the first sample in a later round, no PROBE_RTT: the round ended (and the
            // filter advanced) in ProbeBW. That sample counts too: a PROBE_RTT left in the ACK
            // that ended the round shows as ProbeBW there, though BBRAdaptLongTermModel ran
            // before BBRCheckProbeRTT in it (seen: PROBE_RTT from 5.09 s, CRUISE and the next
            // round both first at 5.96 s). A PROBE_RTT entered just after the round ended and
            // seen first at that sample leaves out an advance that happened: the lenient side.
            // A round not ended by the end of the run may yet advance.
            trace.points.iter().filter(|p| p.t > *s).take_while(|p| p.round_count.is_none_or(|r| r <= begun)).all(|p| p.mode != Some(Mode::ProbeRtt))
                && trace.points.iter().find(|p| p.t > *s && p.round_count.is_some_and(|r| r > begun)).is_none_or(|p| p.mode != Some(Mode::ProbeRtt))
        })
        .collect()
}

/// The cycles begun after the step reached the sender whose DOWN advanced the max_bw filter,
/// as the controller's own BBR.cycle_count shows: a cycle counts when the count rose between
/// the sample before its start and the next DOWN begun (a cycle's or a PROBE_RTT exit's,
/// §5.3.4.4); the last one when the count rose after it, or when no round ended after it
/// (BBR.round_count) before the run did: it may yet advance. A PROBE_RTT exit's DOWN that advanced the filter (samples not app-limited) counts
/// as a cycle too: it is one of the MaxBwFilterLen = 2 advances that forget the old rate.
fn cycles_advanced_after_step(trace: &Trace, starts: &[Duration], at: Duration) -> Vec<Duration> {
    let reached = step_reaches_sender(trace, at);
    let exits = trace.transitions().into_iter().filter(|t| t.from == Mode::ProbeRtt && t.to == Mode::ProbeBw).map(|t| t.at);
    let mut downs: Vec<Duration> = starts.iter().copied().chain(exits).collect();
    downs.sort();
    downs.dedup();
    // BBR.cycle_count at the last sample before `t` (the first shown where none is before it).
    let count_before = |t: Duration| {
        let shown = trace.points.iter().filter(|p| p.cycle_count.is_some());
        shown.clone().take_while(|p| p.t < t).last().or_else(|| shown.clone().next()).and_then(|p| p.cycle_count)
    };
    let last_count = trace.points.iter().rev().find_map(|p| p.cycle_count);
    let last_round = trace.points.iter().rev().find_map(|p| p.round_count);
    downs
        .iter()
        .enumerate()
        .filter(|(_, s)| **s >= reached)
        .filter(|(i, s)| {
            let before = count_before(**s);
            match downs.get(i + 1) {
                Some(next) => count_before(*next) > before,
                None => last_count > before || last_round.is_none_or(|r| trace.round_count_at(**s).is_none_or(|at| r <= at)),
            }
        })
        .map(|(_, s)| *s)
        .collect()
}

fn bw_follows_step_in_cycles(trace: &Trace, rule: Rule, within: f64, phases_only: bool) -> RunCheck {
    let Some((at, rate)) = trace.path.rate_step else {
        return RunCheck::unseen("the path has no rate step");
    };
    if !trace.has(|p| p.bw_bps.is_some()) {
        return RunCheck::unseen("the stack shows no bandwidth estimate");
    }
    if phases_only && !trace.has(|p| p.phase.is_some()) {
        return RunCheck::unseen("the stack shows no ProbeBW phase: judged in rounds instead");
    }
    let Some(starts) = trace.cycle_starts() else {
        return RunCheck::unseen("the stack shows neither ProbeBW phases nor pacing gains");
    };
    // A phase lasts about a round; one shorter than two samples may fall between them and go
    // uncounted, which would pass a slow controller.
    if trace.path.rtt < trace.sample_interval * 2 {
        return RunCheck::unseen(format!("ProbeBW's phases last about a round ({}), too short for {} samples", ms(trace.path.rtt), ms(trace.sample_interval)));
    }
    let counted = filter_cycles_after_step(trace, &starts, at);
    let skipped = starts.iter().filter(|s| **s > at).count() - counted.len();
    let aside = if skipped > 0 { format!(" ({skipped} more begun before the step reached the sender or cut short by PROBE_RTT)") } else { String::new() };
    let cycles_by = |t: Duration| counted.iter().filter(|s| **s <= t).count() as f64;
    let end = trace.points.last().map_or(Duration::ZERO, |p| p.t);
    let hit = trace.points.iter().filter(|p| p.t >= at).find(|p| p.bw_bps.is_some_and(|b| (b / rate - 1.0).abs() <= within));
    match hit {
        Some(p) => {
            let n = cycles_by(p.t);
            let s = p.t.saturating_sub(at).as_secs_f64();
            RunCheck::judged(
                rule,
                n,
                n,
                n,
                format!(
                    "estimate {} within {:.0} % of the new {} {s:.2} s after the step, {n} cycles in{aside}",
                    mbit(p.bw_bps.unwrap_or(0.0)),
                    within * 100.0,
                    mbit(rate)
                ),
            )
        }
        None => {
            let n = cycles_by(end);
            let last = trace.points.iter().rev().find_map(|p| p.bw_bps).unwrap_or(0.0);
            let waited = end.saturating_sub(at).as_secs_f64();
            // Still stale after more cycles than allowed is a failure; after fewer, the run
            // ended too soon to tell.
            RunCheck::judged(
                rule,
                n,
                f64::INFINITY,
                f64::INFINITY,
                format!("estimate still {} {waited:.1} s after the step to {}, {n} cycles in{aside}", mbit(last), mbit(rate)),
            )
        }
    }
}

/// Rounds from the step reaching the sender to the estimate following it, each round at its
/// longest (`round_rtts` base RTTs): an upper bound on the time a filter of so many rounds takes.
fn bw_follows_step_in_rounds(trace: &Trace, rule: Rule, within: f64, round_rtts: f64) -> RunCheck {
    let Some((at, rate)) = trace.path.rate_step else {
        return RunCheck::unseen("the path has no rate step");
    };
    if trace.has(|p| p.phase.is_some()) {
        return RunCheck::unseen("the stack shows ProbeBW phases: judged in cycles instead");
    }
    if !trace.has(|p| p.bw_bps.is_some()) {
        return RunCheck::unseen("the stack shows no bandwidth estimate");
    }
    let reached = step_reaches_sender(trace, at);
    let round = trace.path.rtt.as_secs_f64() * round_rtts;
    let rounds_to = |t: Duration| t.saturating_sub(reached).as_secs_f64() / round;
    let one = trace.sample_interval.as_secs_f64() / round;
    let hit = trace.points.iter().filter(|p| p.t >= at).find(|p| p.bw_bps.is_some_and(|b| (b / rate - 1.0).abs() <= within));
    match hit {
        Some(p) => {
            let n = rounds_to(p.t);
            let s = p.t.saturating_sub(at).as_secs_f64();
            RunCheck::judged(
                rule,
                (n - one).max(0.0),
                n,
                n,
                format!(
                    "estimate {} within {:.0} % of the new {} {s:.2} s after the step: {n:.1} rounds of {:.0} ms after it reached the sender",
                    mbit(p.bw_bps.unwrap_or(0.0)),
                    within * 100.0,
                    mbit(rate),
                    round * 1e3
                ),
            )
        }
        None => {
            let end = trace.points.last().map_or(Duration::ZERO, |p| p.t);
            let n = rounds_to(end);
            let last = trace.points.iter().rev().find_map(|p| p.bw_bps).unwrap_or(0.0);
            RunCheck::judged(
                rule,
                n,
                f64::INFINITY,
                f64::INFINITY,
                format!("estimate still {} {n:.1} rounds of {:.0} ms after the step to {} reached the sender", mbit(last), round * 1e3, mbit(rate)),
            )
        }
    }
}

fn loss(trace: &Trace, rule: Rule) -> RunCheck {
    let Some(left) = after_startup(trace) else {
        return RunCheck::unseen("never reached PROBE_BW");
    };
    let counted: Vec<&Point> = trace.points.iter().filter(|p| p.t >= left && p.lost_bytes.is_some() && p.delivered_bytes.is_some()).collect();
    let (Some(a), Some(b)) = (counted.first(), counted.last()) else {
        return RunCheck::unseen("the stack shows no loss and delivery counters");
    };
    let lost = b.lost_bytes.unwrap_or(0).saturating_sub(a.lost_bytes.unwrap_or(0)) as f64;
    let delivered = b.delivered_bytes.unwrap_or(0).saturating_sub(a.delivered_bytes.unwrap_or(0)) as f64;
    if delivered == 0.0 {
        return RunCheck::unseen("nothing delivered after STARTUP");
    }
    let share = lost / (lost + delivered);
    RunCheck::judged(rule, share, share, share, format!("{:.2} % of {:.1} MB lost after {}", share * 100.0, (lost + delivered) / 1e6, ms(left)))
}

/// When the flow left STARTUP and DRAIN: its first exit from DRAIN, or from STARTUP to
/// anything but DRAIN (a controller may skip it).
fn after_startup(trace: &Trace) -> Option<Duration> {
    trace.transitions().into_iter().find(|t| t.from == Mode::Drain || (t.from == Mode::Startup && t.to != Mode::Drain)).map(|t| t.at)
}

fn extra_acked_covers(trace: &Trace, rule: Rule, period: Duration) -> RunCheck {
    if !trace.has(|p| p.extra_acked_bytes.is_some()) {
        return RunCheck::unseen("the stack does not show BBR.extra_acked");
    }
    let per_period = trace.path.rate_bps / 8.0 * period.as_secs_f64();
    let extra: Vec<f64> = before_step(trace).filter(|p| p.mode == Some(Mode::ProbeBw)).filter_map(|p| p.extra_acked_bytes).map(|b| b as f64).collect();
    let n = extra.len();
    let Some(m) = median(extra) else {
        return RunCheck::unseen("no extra_acked sampled in PROBE_BW");
    };
    let share = m / per_period;
    RunCheck::judged(
        rule,
        share,
        share,
        share,
        format!("median extra_acked {m:.0} B over {n} PROBE_BW samples = {:.0} % of the {per_period:.0} B the link carries in {}", share * 100.0, ms(period)),
    )
}

fn delivered(trace: &Trace, rule: Rule) -> RunCheck {
    let Some(left) = after_startup(trace) else {
        return RunCheck::unseen("never reached PROBE_BW");
    };
    let counted: Vec<&Point> = before_step(trace).filter(|p| p.t >= left && p.delivered_bytes.is_some()).collect();
    let (Some(a), Some(b)) = (counted.first(), counted.last()) else {
        return RunCheck::unseen("the stack shows no delivery counter");
    };
    let span = b.t.saturating_sub(a.t).as_secs_f64();
    if span <= 0.0 {
        return RunCheck::unseen("no time sampled after STARTUP");
    }
    let bytes = b.delivered_bytes.unwrap_or(0).saturating_sub(a.delivered_bytes.unwrap_or(0)) as f64;
    let share = bytes * 8.0 / span / trace.path.rate_bps;
    RunCheck::judged(
        rule,
        share,
        share,
        share,
        format!("{:.1} MB acknowledged from {} to {}: {} = {:.1} % of the link", bytes / 1e6, ms(a.t), ms(b.t), mbit(bytes * 8.0 / span), share * 100.0),
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::trace::{PathFacts, StateEvent};

    fn trace(modes: &[(u64, Mode, Option<Phase>)]) -> Trace {
        of_points(
            modes
                .iter()
                .map(|&(t, m, ph)| Point { t: Duration::from_millis(t), mode: Some(m), phase: ph, pacing_gain: Some(1.0), ..Point::default() })
                .collect(),
        )
    }

    /// A ProbeBW phase change at `ms`, as the controller records it.
    fn ph(ms: u64, from: Phase, to: Phase) -> StateEvent {
        StateEvent {
            t: Duration::from_millis(ms),
            from: Mode::ProbeBw,
            to: Mode::ProbeBw,
            from_phase: Some(from),
            to_phase: Some(to),
            round: None,
            full_bw_round: None,
        }
    }

    /// The tests' path (10 Mbit/s, 40 ms, sampled every 10 ms) with these samples.
    fn of_points(points: Vec<Point>) -> Trace {
        Trace {
            path: PathFacts { rate_bps: 10e6, rtt: Duration::from_millis(40), mss: 1448, rate_step: None },
            sample_interval: Duration::from_millis(10),
            points,
            events: Vec::new(),
        }
    }

    /// DRAIN counted on the controller's own events: 4 rounds (BBRCheckDrainDone's time exit,
    /// round_count > drain_start_round + 3) passes exactly, 5 fails, whatever the samples show.
    #[test]
    fn drain_is_counted_exactly_on_the_controllers_own_rounds() {
        let a = Assertion::DrainAtMost { rounds: 4.0 };
        let mut t =
            trace(&[(0, Mode::Startup, None), (400, Mode::Drain, None), (1200, Mode::ProbeBw, Some(Phase::Down)), (1300, Mode::ProbeBw, Some(Phase::Down))]);
        let ev = |ms: u64, from, to, round| StateEvent {
            t: Duration::from_millis(ms),
            from,
            to,
            from_phase: None,
            to_phase: (to == Mode::ProbeBw).then_some(Phase::Down),
            round: Some(round),
            full_bw_round: None,
        };
        for (exit, outcome) in [(14, Outcome::Pass), (15, Outcome::Fail)] {
            t.events = vec![ev(395, Mode::Startup, Mode::Drain, 10), ev(1190, Mode::Drain, Mode::ProbeBw, exit)];
            let c = a.check(&t);
            assert_eq!(c.outcome, outcome, "{}", c.evidence);
            assert!(c.evidence.contains(&format!("BBR.round_count 10 → {exit}")), "{}", c.evidence);
        }
    }

    /// A.19: an UP begun with inflight_longterm set that a loss ends must cut it and go to DOWN;
    /// one that keeps it, or goes elsewhere, fails; an UP without loss is not judged.
    #[test]
    fn a_loss_in_up_must_cut_inflight_longterm() {
        let at = |t: u64, lost: u64, longterm: u64| Point {
            t: Duration::from_millis(t),
            mode: Some(Mode::ProbeBw),
            phase: Some(Phase::Cruise),
            lost_bytes: Some(lost),
            inflight_longterm_bytes: Some(longterm),
            ..Point::default()
        };
        let a = Assertion::UpLossCutsLongterm;
        // UP from 100 to 200 ms; inflight_longterm grows to 60 kB in it, a loss by its end.
        let run = |after: u64, next: Phase| {
            let mut t = of_points(vec![at(90, 0, 50_000), at(150, 0, 60_000), at(200, 3000, after), at(250, 3000, after), at(400, 3000, after)]);
            t.events = vec![ph(100, Phase::Refill, Phase::Up), ph(200, Phase::Up, next)];
            a.check(&t)
        };
        let c = run(42_000, Phase::Down);
        assert_eq!(c.outcome, Outcome::Pass, "{}", c.evidence);
        assert!(c.evidence.contains("60000 B at its peak, 42000 B after"), "{}", c.evidence);
        assert_eq!(run(60_000, Phase::Down).outcome, Outcome::Fail, "kept at its peak");
        assert_eq!(run(42_000, Phase::Cruise).outcome, Outcome::Fail, "not to DOWN");
        // No loss in the UP: nothing to judge.
        let mut t = of_points(vec![at(90, 0, 50_000), at(200, 0, 60_000), at(400, 0, 60_000)]);
        t.events = vec![ph(100, Phase::Refill, Phase::Up), ph(200, Phase::Up, Phase::Down)];
        assert_eq!(a.check(&t).outcome, Outcome::NotObservable);
    }

    /// A.5, A.7 and A.8 read the phase that follows from the controller's own phase changes.
    /// On the tests' path (10 Mbit/s × 40 ms: 34.5 packets a BDP) a probe can be due 1.38 s
    /// into a DOWN at the soonest, and bw_probe_wait has passed at 3 s.
    #[test]
    fn the_next_phase_is_read_from_the_controllers_own_events() {
        let mut t = trace(&(0..600).map(|i| (i * 10, Mode::ProbeBw, Some(Phase::Cruise))).collect::<Vec<_>>());
        let up_down = Assertion::NextPhase { from: Phase::Up, to: Phase::Down, stay: Stay::Any };
        let down_cruise = Assertion::NextPhase { from: Phase::Down, to: Phase::Cruise, stay: Stay::BeforeProbeDue };
        let down_refill = Assertion::NextPhase { from: Phase::Down, to: Phase::Refill, stay: Stay::PastProbeWait };
        let outcome = |a: Assertion, t: &Trace| a.check(t).outcome;
        // A stack that records no phase changes of its own is not judged on them.
        assert_eq!(outcome(up_down, &t), Outcome::NotObservable);
        // UP → DOWN → CRUISE; an UP that PROBE_RTT interrupts is passed over.
        let to_probe_rtt = StateEvent { to: Mode::ProbeRtt, to_phase: None, ..ph(2700, Phase::Up, Phase::Up) };
        t.events = vec![
            ph(100, Phase::Refill, Phase::Up),
            ph(140, Phase::Up, Phase::Down),
            ph(145, Phase::Down, Phase::Cruise),
            ph(2600, Phase::Cruise, Phase::Refill),
            ph(2640, Phase::Refill, Phase::Up),
            to_probe_rtt,
        ];
        let c = up_down.check(&t);
        assert_eq!(c.outcome, Outcome::Pass, "{}", c.evidence);
        assert!(c.evidence.starts_with("1 of 1 PROBE_BW_UP went to PROBE_BW_DOWN"), "{}", c.evidence);
        assert_eq!(outcome(down_cruise, &t), Outcome::Pass);
        assert_eq!(outcome(down_refill, &t), Outcome::NotObservable, "no DOWN lasted 3 s");
        // An UP left for CRUISE fails A.5; a DOWN left for REFILL 10 ms in, long before a
        // probe could be due, fails A.7; one left for CRUISE 1.5 s in is not A.7's to judge.
        t.events =
            vec![ph(100, Phase::Up, Phase::Down), ph(110, Phase::Down, Phase::Refill), ph(200, Phase::Refill, Phase::Up), ph(240, Phase::Up, Phase::Cruise)];
        let c = up_down.check(&t);
        assert_eq!(c.outcome, Outcome::Fail, "{}", c.evidence);
        assert!(c.evidence.contains("not: PROBE_BW_CRUISE at 240 ms"), "{}", c.evidence);
        assert_eq!(outcome(down_cruise, &t), Outcome::Fail);
        t.events = vec![ph(100, Phase::Up, Phase::Down), ph(1600, Phase::Down, Phase::Cruise)];
        assert_eq!(outcome(down_cruise, &t), Outcome::NotObservable);
        // A DOWN of 3.2 s must have gone to REFILL.
        t.events = vec![ph(100, Phase::Up, Phase::Down), ph(3300, Phase::Down, Phase::Refill)];
        assert_eq!(outcome(down_refill, &t), Outcome::Pass);
        t.events = vec![ph(100, Phase::Up, Phase::Down), ph(3300, Phase::Down, Phase::Cruise)];
        assert_eq!(outcome(down_refill, &t), Outcome::Fail);
    }

    /// A.20: an UP begun within two RTTs of the application's change still runs on samples sent
    /// before it, and may end on them; one begun later must be held. The RTT is the one at the
    /// change (44 ms here, as at 1 Mbit/s × 1 ms), not the path's base.
    #[test]
    fn an_up_on_samples_from_before_the_change_is_not_judged() {
        let up = Assertion::UpHeldFrom { from: Duration::from_millis(4000) };
        let at = |t: u64, phase: Phase| Point {
            t: Duration::from_millis(t),
            mode: Some(Mode::ProbeBw),
            phase: Some(phase),
            rtt: Some(Duration::from_millis(44)),
            ..Point::default()
        };
        // UP begun 69 ms after the change and ended on a plateau, then an UP held to the end.
        let early = of_points(vec![
            at(3990, Phase::Cruise),
            at(4000, Phase::Refill),
            at(4069, Phase::Up),
            at(4100, Phase::Down),
            at(4120, Phase::Refill),
            at(4160, Phase::Up),
            at(9000, Phase::Up),
        ]);
        let c = up.check(&early);
        assert_eq!(c.outcome, Outcome::Pass, "{}", c.evidence);
        assert!(c.evidence.contains("4088 ms"), "{}", c.evidence);
        // An UP begun 120 ms after the change, 2.7 RTTs: judged, and it fails.
        let late = of_points(vec![at(3990, Phase::Cruise), at(4100, Phase::Refill), at(4120, Phase::Up), at(4150, Phase::Down), at(9000, Phase::Cruise)]);
        assert_eq!(up.check(&late).outcome, Outcome::Fail);
        // The same UP ended on a loss (BBRIsInflightTooHigh): not counted.
        let lost = |t: u64, phase: Phase, b: u64| Point { lost_bytes: Some(b), ..at(t, phase) };
        let on_loss = of_points(vec![
            lost(3990, Phase::Cruise, 0),
            lost(4100, Phase::Refill, 0),
            lost(4120, Phase::Up, 0),
            lost(4150, Phase::Down, 1200),
            lost(9000, Phase::Cruise, 1200),
        ]);
        let c = up.check(&on_loss);
        assert_eq!(c.outcome, Outcome::Pass, "{}", c.evidence);
        assert!(c.evidence.contains("1 left on a loss"), "{}", c.evidence);
        let longterm = Assertion::LongtermHeldFrom { from: Duration::from_millis(4000) };
        let with_longterm = |t: u64, phase: Phase, b: u64| Point { inflight_longterm_bytes: Some(b), ..at(t, phase) };
        let grown_early = of_points(vec![
            with_longterm(3990, Phase::Cruise, 7000),
            with_longterm(4050, Phase::Refill, 7000),
            with_longterm(4080, Phase::Up, 9800),
            with_longterm(4100, Phase::Cruise, 9800),
            with_longterm(4200, Phase::Refill, 9800),
            with_longterm(9000, Phase::Up, 9800),
        ]);
        let c = longterm.check(&grown_early);
        assert_eq!((c.outcome, c.estimate), (Outcome::Pass, 1.0), "{}", c.evidence);
        let grown_late = of_points(vec![
            with_longterm(3990, Phase::Cruise, 7000),
            with_longterm(4100, Phase::Cruise, 7000),
            with_longterm(4200, Phase::Refill, 7000),
            with_longterm(4300, Phase::Up, 9800),
        ]);
        assert_eq!(longterm.check(&grown_late).outcome, Outcome::Fail);
    }

    /// A.16 at 100 Mbit/s × 20 ms (real run, seed 41): behind a 50 Mbit/s policer max_bw read
    /// 66.8 Mbit/s (the bucket's bursts) while bw_shortterm held 51.3 and the flow paced at
    /// 50.8. The bandwidth in use passes; the estimate alone fails; a stack with no short-term
    /// model is judged on its estimate.
    #[test]
    fn behind_a_policer_the_bandwidth_in_use_is_judged() {
        let mut t = trace(&(0..50).map(|i| (i * 10, Mode::ProbeBw, Some(Phase::Cruise))).collect::<Vec<_>>());
        t.path.rate_bps = 50e6;
        for p in &mut t.points {
            p.bw_bps = Some(66.8e6);
            p.bw_shortterm_bps = Some(51.3e6);
        }
        let in_use = Assertion::BwInUseNearLink { lo: 0.8, hi: 1.1 };
        let c = in_use.check(&t);
        assert_eq!(c.outcome, Outcome::Pass, "{}", c.evidence);
        assert!((c.estimate - 1.026).abs() < 1e-3 && c.evidence.contains("in use"), "{}", c.evidence);
        assert_eq!(Assertion::BwNearLink { lo: 0.8, hi: 1.1 }.check(&t).outcome, Outcome::Fail);
        for p in &mut t.points {
            p.bw_shortterm_bps = None;
        }
        assert_eq!(in_use.check(&t).outcome, Outcome::Fail, "no short-term model: the estimate, 134 %");
    }

    /// A.20 at 20 Mbit/s × 1 ms (real run, seed 41; the series' figures, times moved onto the
    /// change): the sender stayed held by its window about 15 ms after the change, sending what
    /// was written before it, and an UP begun within them grew
    /// inflight_longterm on it, as §5.3.3.6 allows. The change settles at the first sample span
    /// without window-held time; the same growth in a later UP fails, and where the stack does
    /// not say how long the window held it the 2 RTTs alone count.
    #[test]
    fn an_up_while_the_window_still_holds_the_sender_is_not_judged() {
        let longterm = Assertion::LongtermHeldFrom { from: Duration::from_millis(4000) };
        let at = |t: u64, phase: Phase, b: u64, held_us: Option<u64>| Point {
            t: Duration::from_millis(t),
            mode: Some(Mode::ProbeBw),
            phase: Some(phase),
            rtt: Some(Duration::from_micros(3229)),
            inflight_longterm_bytes: Some(b),
            cwnd_limited: held_us.map(Duration::from_micros),
            ..Point::default()
        };
        let run = |held: bool, up_at: u64| {
            let h = |us: u64| held.then_some(us);
            of_points(vec![
                at(4004, Phase::Up, 12492, h(2_709_660)),
                at(4015, Phase::Down, 9914, h(2_714_766)),
                at(up_at, Phase::Up, 12690, h(2_716_394)),
                at(up_at + 10, Phase::Up, 12690, h(2_716_394)),
                at(9000, Phase::Up, 12690, h(2_716_394)),
            ])
        };
        let c = longterm.check(&run(true, 4024));
        assert_eq!(c.outcome, Outcome::NotObservable, "the one UP began while window-held: {}", c.evidence);
        assert_eq!(longterm.check(&run(false, 4024)).outcome, Outcome::Fail, "no window figures: 2 RTTs alone");
        let late = of_points(vec![
            at(4004, Phase::Up, 12492, Some(2_709_660)),
            at(4015, Phase::Down, 9914, Some(2_714_766)),
            at(4024, Phase::Down, 9914, Some(2_716_394)),
            at(4034, Phase::Down, 9914, Some(2_716_394)),
            at(4044, Phase::Up, 12690, Some(2_716_394)),
            at(9000, Phase::Up, 12690, Some(2_716_394)),
        ]);
        assert_eq!(longterm.check(&late).outcome, Outcome::Fail, "an UP begun after the window let go must not grow it");
    }

    /// A.18: STARTUP interrupted by PROBE_RTT still stays; a plateau exit to DRAIN fails.
    #[test]
    fn stays_in_startup_allows_probe_rtt_only() {
        let a = Assertion::StaysIn { mode: Mode::Startup };
        let held = trace(&[(0, Mode::Startup, None), (5000, Mode::ProbeRtt, None), (5300, Mode::Startup, None), (9000, Mode::Startup, None)]);
        assert_eq!(a.check(&held).outcome, Outcome::Pass);
        let left = trace(&[(0, Mode::Startup, None), (800, Mode::Drain, None), (900, Mode::ProbeBw, None)]);
        let c = a.check(&left);
        assert_eq!(c.outcome, Outcome::Fail, "{}", c.evidence);
        assert!(c.evidence.contains("DRAIN at 800 ms"), "{}", c.evidence);
        let never = trace(&[(0, Mode::ProbeBw, None)]);
        assert_eq!(a.check(&never).outcome, Outcome::NotObservable);
    }

    /// Kernel BBR shows no phase: what needs one is not observable, never a pass.
    #[test]
    fn what_a_stack_cannot_show_is_not_observable() {
        let t = trace(&[(0, Mode::Startup, None), (10, Mode::Drain, None), (20, Mode::ProbeBw, None), (30, Mode::ProbeRtt, None), (40, Mode::ProbeBw, None)]);
        for a in [
            Assertion::ProbeBwCycles { cycles: 1.0 },
            Assertion::NextState { from: Mode::ProbeRtt, to: Mode::ProbeBw, phase: Some(Phase::Cruise) },
            Assertion::GainIs { which: Gain::Pacing, mode: Mode::ProbeBw, phase: Some(Phase::Up), gain: 1.25, tolerance: 0.01 },
            Assertion::BwNearLink { lo: 0.8, hi: 1.05 },
        ] {
            assert_eq!(a.check(&t).outcome, Outcome::NotObservable, "{}", a.describe());
        }
        assert_eq!(Assertion::NextState { from: Mode::ProbeRtt, to: Mode::ProbeBw, phase: None }.check(&t).outcome, Outcome::Pass);
    }

    /// A run whose sender its host held back is not judged: the controller never met the path.
    #[test]
    fn a_host_limited_run_is_not_observable() {
        let a = Assertion::NextState { from: Mode::Startup, to: Mode::Drain, phase: None };
        let mut t = trace(&[(0, Mode::Startup, None), (100, Mode::Drain, None), (200, Mode::ProbeBw, None), (1000, Mode::ProbeBw, None)]);
        assert_eq!(a.check(&t).outcome, Outcome::Pass);
        // Held 4 % of the run: judged; 30 %: not observable, saying why.
        for (held, outcome) in [(0.04, Outcome::Pass), (0.30, Outcome::NotObservable)] {
            let t0 = t.points[0].t;
            for p in &mut t.points {
                p.host_limited = Some((p.t - t0).mul_f64(held));
            }
            let c = a.check(&t);
            assert_eq!(c.outcome, outcome, "{held}: {}", c.evidence);
            assert_eq!(t.host_limited_share().map(|s| (s * 100.0).round()), Some(held * 100.0));
        }
        assert!(a.check(&t).evidence.contains("held by its host 30 %"));
    }

    /// §5.3.4.4: PROBE_RTT goes back to STARTUP while full_bw_reached is false; such an exit is
    /// no evidence about the state after PROBE_RTT once the pipe was full, and one after it was
    /// full still fails.
    #[test]
    fn probe_rtt_back_to_startup_before_the_pipe_is_full_is_not_held_against_it() {
        let a = Assertion::NextState { from: Mode::ProbeRtt, to: Mode::ProbeBw, phase: None };
        let mut t = trace(&[(0, Mode::Startup, None), (10, Mode::ProbeRtt, None), (20, Mode::Startup, None)]);
        for p in &mut t.points {
            p.full_bw_reached = Some(false);
        }
        assert_eq!(a.check(&t).outcome, Outcome::NotObservable);
        for p in &mut t.points {
            p.full_bw_reached = Some(true);
        }
        assert_eq!(a.check(&t).outcome, Outcome::Fail);
    }

    /// A.11: extra_acked judged against a period's worth of the link (10 Mbit/s × 8 ms = 10 kB);
    /// kernel BBR, which does not show it, is not observable, never a pass.
    #[test]
    fn extra_acked_is_judged_against_the_aggregation_period() {
        let a = Assertion::ExtraAckedCovers { period: Duration::from_millis(8), share: 0.5 };
        let mut t =
            trace(&[(0, Mode::Startup, None), (10, Mode::Drain, None), (20, Mode::ProbeBw, None), (30, Mode::ProbeBw, None), (40, Mode::ProbeBw, None)]);
        let c = a.check(&t);
        assert_eq!(c.outcome, Outcome::NotObservable, "{}", c.evidence);
        for (p, extra) in t.points.iter_mut().zip([50_000, 0, 9_000, 8_000, 1_000]) {
            p.extra_acked_bytes = Some(extra);
        }
        let c = a.check(&t);
        assert_eq!((c.outcome, c.estimate), (Outcome::Pass, 0.8), "the median of PROBE_BW's 9, 8 and 1 kB: {}", c.evidence);
        for p in &mut t.points {
            p.extra_acked_bytes = p.extra_acked_bytes.map(|e| e / 4);
        }
        assert_eq!(a.check(&t).outcome, Outcome::Fail);
    }

    /// The delivery rate after STARTUP and DRAIN, from the cumulative acknowledged bytes.
    #[test]
    fn delivered_counts_from_the_end_of_startup() {
        let a = Assertion::DeliveredAtLeast { share: 0.8 };
        let mut t = trace(&[(0, Mode::Startup, None), (1000, Mode::Drain, None), (2000, Mode::ProbeBw, None), (4000, Mode::ProbeBw, None)]);
        assert_eq!(a.check(&t).outcome, Outcome::NotObservable);
        // STARTUP's megabyte is not counted; 2.25 MB in the 2 s after DRAIN = 9 Mbit/s of 10.
        for (p, d) in t.points.iter_mut().zip([0, 1_000_000, 1_250_000, 3_500_000]) {
            p.delivered_bytes = Some(d);
        }
        let c = a.check(&t);
        assert_eq!((c.outcome, c.estimate), (Outcome::Pass, 0.9), "{}", c.evidence);
        t.points[3].delivered_bytes = Some(2_000_000);
        assert_eq!(a.check(&t).outcome, Outcome::Fail);
    }
    /// -06 §5.5.11: a loss at 100 ms cuts bw_shortterm to 7 Mbit/s and inflight_shortterm;
    /// the stack finds the episode spurious at 130 ms. Restored: a pass; left cut: a fail; a
    /// stack that reports no spurious episodes (kernel TCP), or a run with none: not observable.
    #[test]
    fn a_spurious_loss_episode_must_be_undone() {
        let run = |undone: bool, spurious: Option<u64>| {
            let mut t = trace(&(0..30).map(|i| (i * 10, Mode::ProbeBw, Some(Phase::Cruise))).collect::<Vec<_>>());
            for p in &mut t.points {
                let ms = p.t.as_millis() as u64;
                let cut = (100..130).contains(&ms) || (ms >= 130 && !undone);
                p.lost_bytes = Some(if ms >= 100 { 1448 } else { 0 });
                p.spurious_losses = spurious.map(|n| if ms >= 130 { n } else { 0 });
                p.bw_shortterm_bps = Some(if cut { 7e6 } else { f64::INFINITY });
                p.inflight_shortterm_bytes = Some(if cut { 35_000 } else { u64::MAX });
                p.inflight_longterm_bytes = Some(80_000);
                p.rtt = Some(Duration::from_millis(40));
            }
            t
        };
        let a = Assertion::SpuriousLossUndone { share: 0.9 };
        let c = a.check(&run(true, Some(1)));
        assert_eq!((c.outcome, c.estimate), (Outcome::Pass, 1.0), "{}", c.evidence);
        let c = a.check(&run(false, Some(1)));
        assert_eq!((c.outcome, c.estimate), (Outcome::Fail, 0.0), "{}", c.evidence);
        assert!(c.evidence.contains("1 loss episodes proved spurious, 1 judged"), "{}", c.evidence);
        for (t, why) in [(run(false, None), "per connection"), (run(false, Some(0)), "did not trigger")] {
            let c = a.check(&t);
            assert_eq!(c.outcome, Outcome::NotObservable);
            assert!(c.evidence.contains(why), "{}", c.evidence);
        }
    }

    /// A real loss at 100 ms cuts inflight_longterm (a probe's excess loss); the transport
    /// forgets it, and a reordered packet declared lost at 120 ms cuts bw_shortterm and proves
    /// spurious at 140 ms, within the same look-back. The undo owes the model from before the
    /// latest loss, not the first: restored, a pass; left cut, a fail.
    #[test]
    fn a_real_loss_before_a_spurious_one_keeps_its_cut() {
        let run = |undone: bool| {
            let mut t = trace(&(0..30).map(|i| (i * 10, Mode::ProbeBw, Some(Phase::Down))).collect::<Vec<_>>());
            for p in &mut t.points {
                let ms = p.t.as_millis() as u64;
                p.lost_bytes = Some(1448 * (u64::from(ms >= 100) + u64::from(ms >= 120)));
                p.spurious_losses = Some(u64::from(ms >= 140));
                let cut = (120..140).contains(&ms) || (ms >= 140 && !undone);
                p.bw_shortterm_bps = Some(if cut { 7e6 } else { f64::INFINITY });
                p.inflight_shortterm_bytes = Some(u64::MAX);
                p.inflight_longterm_bytes = Some(if ms >= 100 { 60_000 } else { 80_000 });
                p.rtt = Some(Duration::from_millis(20));
            }
            t
        };
        let a = Assertion::SpuriousLossUndone { share: 0.9 };
        let c = a.check(&run(true));
        assert_eq!((c.outcome, c.estimate), (Outcome::Pass, 1.0), "{}", c.evidence);
        let c = a.check(&run(false));
        assert_eq!((c.outcome, c.estimate), (Outcome::Fail, 0.0), "{}", c.evidence);
    }

    /// §5.3.4.3: PROBE_RTT may interrupt any state; the state after STARTUP is the one it
    /// leaves to otherwise.
    #[test]
    fn an_exit_into_probe_rtt_does_not_count_as_the_next_state() {
        let t = trace(&[(0, Mode::Startup, None), (10, Mode::ProbeRtt, None), (20, Mode::Startup, None), (30, Mode::Drain, None)]);
        let a = Assertion::NextState { from: Mode::Startup, to: Mode::Drain, phase: None };
        assert_eq!(a.check(&t).outcome, Outcome::Pass, "{}", a.check(&t).evidence);
        let t = trace(&[(0, Mode::Startup, None), (10, Mode::ProbeBw, None)]);
        assert_eq!(a.check(&t).outcome, Outcome::Fail);
    }

    /// §5.3.4.4: PROBE_RTT goes back to ProbeBW's CRUISE; first sampled in UP 10 rounds later (a
    /// 10 ms sample at 1 ms) the CRUISE may have been passed through, half a round later not.
    #[test]
    fn a_phase_passed_between_samples_is_not_held_against_an_exit() {
        let a = Assertion::NextState { from: Mode::ProbeRtt, to: Mode::ProbeBw, phase: Some(Phase::Cruise) };
        let exit = |rounds_later: u64| {
            let p = |t: u64, mode, phase, round| Point { t: Duration::from_millis(t), mode: Some(mode), phase, round_count: Some(round), ..Point::default() };
            of_points(vec![
                p(0, Mode::ProbeBw, Some(Phase::Cruise), 0),
                p(10, Mode::ProbeRtt, None, 10),
                p(20, Mode::ProbeBw, Some(Phase::Up), 10 + rounds_later),
            ])
        };
        let c = a.check(&exit(10));
        assert_eq!(c.outcome, Outcome::Pass, "{}", c.evidence);
        assert!(c.evidence.contains("1 first sampled in a later phase"), "{}", c.evidence);
        assert_eq!(a.check(&exit(0)).outcome, Outcome::Fail);
    }

    /// A DRAIN shorter than a sample (2–3 rounds at 1 ms): the samples show STARTUP → PROBE_BW,
    /// the controller's own events STARTUP → DRAIN → PROBE_BW, and the events are judged.
    #[test]
    fn the_next_state_is_read_from_the_controllers_own_events() {
        let a = Assertion::NextState { from: Mode::Startup, to: Mode::Drain, phase: None };
        let mut t = trace(&[(0, Mode::Startup, None), (10, Mode::Startup, None), (20, Mode::ProbeBw, Some(Phase::Cruise))]);
        assert_eq!(a.check(&t).outcome, Outcome::Fail);
        let event =
            |ms: u64, from, to| StateEvent { t: Duration::from_millis(ms), from, to, from_phase: None, to_phase: None, round: None, full_bw_round: None };
        t.events = vec![event(12, Mode::Startup, Mode::Drain), event(15, Mode::Drain, Mode::ProbeBw)];
        let c = a.check(&t);
        assert_eq!(c.outcome, Outcome::Pass, "{}", c.evidence);
        assert!(c.evidence.contains("own events"), "{}", c.evidence);
        // A controller that went straight on records it so: a fail.
        t.events = vec![event(12, Mode::Startup, Mode::ProbeBw)];
        assert_eq!(a.check(&t).outcome, Outcome::Fail);
    }

    /// A DRAIN seen in 2 samples 10 ms apart at a 40 ms RTT: 0.25–0.75 rounds, a pass for ≤ 4;
    /// against ≤ 0.5 the samples cannot tell.
    #[test]
    fn a_figure_is_the_interval_the_samples_allow() {
        let t = trace(&[(0, Mode::Startup, None), (10, Mode::Drain, None), (20, Mode::Drain, None), (30, Mode::ProbeBw, None)]);
        let c = Assertion::DrainAtMost { rounds: 4.0 }.check(&t);
        assert_eq!((c.outcome, c.lo, c.hi), (Outcome::Pass, 0.25, 0.75));
        assert_eq!(Assertion::DrainAtMost { rounds: 0.5 }.check(&t).outcome, Outcome::NotObservable);
        assert_eq!(Assertion::DrainAtMost { rounds: 0.2 }.check(&t).outcome, Outcome::Fail);
    }

    /// Kernel BBRv1 shows gains, not phases: its cycles start at the falls to 0.75. A 10 Mbit/s
    /// link cut to 1 at 1 s; the estimate follows at 2.5 s, after the second cycle since the cut
    /// (a pass for ≤ 2 cycles); one that never follows over 4 cycles fails; one still stale when
    /// the run ends after 1 cycle cannot be told.
    #[test]
    fn a_step_is_counted_in_cycles_from_the_gains_where_no_phase_is_shown() {
        let point = |t: u64, gain: f64, bw: f64| Point {
            t: Duration::from_millis(t),
            mode: Some(Mode::ProbeBw),
            pacing_gain: Some(gain),
            bw_bps: Some(bw),
            ..Point::default()
        };
        let run = |follows_at: u64, end: u64| {
            let points = (0..=end / 100)
                .map(|i| {
                    let t = i * 100;
                    // v1's cycle: 1.25 for a round, 0.75, then 1 — a cycle every 800 ms here.
                    let gain = match t % 800 {
                        700 => 1.25,
                        0 => 0.75,
                        _ => 1.0,
                    };
                    point(t, gain, if t >= follows_at { 1.1e6 } else { 10e6 })
                })
                .collect();
            Trace {
                path: PathFacts { rate_bps: 10e6, rtt: Duration::from_millis(40), mss: 1448, rate_step: Some((Duration::from_secs(1), 1e6)) },
                sample_interval: Duration::from_millis(10),
                points,
                events: Vec::new(),
            }
        };
        let a = Assertion::BwFollowsStepInCycles { within: 0.25, cycles: 2.0, phases_only: false };
        let c = a.check(&run(2500, 4000));
        assert_eq!((c.outcome, c.estimate), (Outcome::Pass, 2.0), "{}", c.evidence);
        let c = a.check(&run(u64::MAX, 4000));
        assert_eq!((c.outcome, c.lo), (Outcome::Fail, 4.0), "{}", c.evidence);
        let c = a.check(&run(u64::MAX, 1700));
        assert_eq!(c.outcome, Outcome::NotObservable, "{}", c.evidence);
    }

    /// A.15's cycles are those that can carry the max_bw filter past the cut: a DOWN begun before
    /// the cut reached the sender (step + base RTT) does not count, one begun at it does; a DOWN
    /// whose round ends in PROBE_RTT does not count (no filter advance, §5.3.3.9); and a filter
    /// that never forgets still fails once 3 cycles have counted.
    #[test]
    fn a_step_down_counts_only_cycles_that_can_carry_the_filter_past_it() {
        // 10 ms samples, a round every 40 ms (the base RTT), the step at 1 s (reaching the
        // sender at 1.04 s); `changes`: (ms, mode, phase) from then on; the estimate follows at
        // `follows` ms.
        let run = |changes: &[(u64, Mode, Option<Phase>)], follows: u64, end: u64| {
            let points = (0..=end / 10)
                .map(|i| {
                    let t = i * 10;
                    let (mode, phase) = changes.iter().rev().find(|c| c.0 <= t).map_or((Mode::ProbeBw, Some(Phase::Cruise)), |c| (c.1, c.2));
                    Point {
                        t: Duration::from_millis(t),
                        mode: Some(mode),
                        phase,
                        bw_bps: Some(if t >= follows { 1.05e6 } else { 10e6 }),
                        round_count: Some(t / 40),
                        ..Point::default()
                    }
                })
                .collect();
            Trace {
                path: PathFacts { rate_bps: 10e6, rtt: Duration::from_millis(40), mss: 1448, rate_step: Some((Duration::from_secs(1), 1e6)) },
                sample_interval: Duration::from_millis(10),
                points,
                events: Vec::new(),
            }
        };
        let a = Assertion::BwFollowsStepInCycles { within: 0.25, cycles: 2.0, phases_only: true };
        let (bw, cr) = (Some(Phase::Down), Some(Phase::Cruise));
        let down_at = |t: u64| [(t, Mode::ProbeBw, bw), (t + 100, Mode::ProbeBw, cr)];
        // DOWNs at 1.03 s (before the cut reached the sender), 2 s, 3 s; follows at 3.1 s.
        let early: Vec<_> = [down_at(1030), down_at(2000), down_at(3000)].concat();
        let c = a.check(&run(&early, 3100, 4000));
        assert_eq!((c.outcome, c.estimate), (Outcome::Pass, 2.0), "the DOWN at 1.03 s does not count: {}", c.evidence);
        // The same with the first DOWN at 1.04 s: it counts, so the estimate is one cycle late.
        let on_time: Vec<_> = [down_at(1040), down_at(2000), down_at(3000)].concat();
        let c = a.check(&run(&on_time, 3100, 4000));
        assert_eq!((c.outcome, c.estimate), (Outcome::Fail, 3.0), "{}", c.evidence);
        // A DOWN at 1.5 s (round 37) interrupted by PROBE_RTT at 1.51 s, still round 37: no
        // advance, not counted; PROBE_RTT from 1.55 s (round 38, already in ProbeBW) would be.
        let cut_short: Vec<_> =
            [vec![(1500, Mode::ProbeBw, bw), (1510, Mode::ProbeRtt, None), (1800, Mode::ProbeBw, cr)], down_at(2000).to_vec(), down_at(3000).to_vec()].concat();
        let c = a.check(&run(&cut_short, 3100, 4000));
        assert_eq!((c.outcome, c.estimate), (Outcome::Pass, 2.0), "{}", c.evidence);
        let advanced: Vec<_> =
            [vec![(1500, Mode::ProbeBw, bw), (1550, Mode::ProbeRtt, None), (1800, Mode::ProbeBw, cr)], down_at(2000).to_vec(), down_at(3000).to_vec()].concat();
        let c = a.check(&run(&advanced, 3100, 4000));
        assert_eq!((c.outcome, c.estimate), (Outcome::Fail, 3.0), "{}", c.evidence);
        // Never follows: fails after 3 counted cycles.
        let c = a.check(&run(&on_time, u64::MAX, 4000));
        assert_eq!((c.outcome, c.lo), (Outcome::Fail, 3.0), "{}", c.evidence);
        // A stack without phases is judged in rounds instead (kernel BBRv1's 10-round filter).
        let mut kernel = run(&on_time, 1400, 4000);
        for p in &mut kernel.points {
            p.phase = None;
            p.round_count = None;
            p.rtt = Some(Duration::from_millis(40));
        }
        assert_eq!(a.check(&kernel).outcome, Outcome::NotObservable);
        // Rounds of at most 2 base RTTs (80 ms): 1.04 s to 1.4 s is 4.5 of them; to 2.0 s, 12.
        let r = Assertion::BwFollowsStepInRounds { within: 0.25, rounds: 11.0, round_rtts: 2.0 };
        let c = r.check(&kernel);
        assert_eq!(c.outcome, Outcome::Pass, "{}", c.evidence);
        assert!((c.estimate - 4.5).abs() < 1e-9, "{}", c.evidence);
        let late = {
            let mut k = kernel.clone();
            for p in &mut k.points {
                p.bw_bps = Some(if p.t >= Duration::from_millis(2000) { 1.05e6 } else { 10e6 });
            }
            k
        };
        assert_eq!(r.check(&late).outcome, Outcome::Fail, "12 rounds");
        assert_eq!(r.check(&run(&on_time, 3100, 4000)).outcome, Outcome::NotObservable, "phases: judged in cycles");
    }

    /// Where the series carry BBR.cycle_count (QUIC BBR), A.15 counts the cycles whose DOWN the
    /// controller's own count shows advancing the max_bw filter (§5.3.3.9), not those the
    /// phases and round counts suggest: a DOWN whose round ended in ProbeBW without an advance
    /// (its sample app-limited) does not count, and the traces without the count are judged as
    /// before.
    #[test]
    fn a_step_down_counts_the_filter_advances_the_controller_recorded() {
        // 10 ms samples, a round every 40 ms, the step at 1 s (reaching the sender at 1.04 s);
        // DOWN for 100 ms at each of `downs` (ms), the filter advancing at each of `advances`
        // (ms; `None`: the stack shows no count); the estimate follows at `follows` ms.
        let run = |downs: &[u64], advances: Option<&[u64]>, follows: u64| {
            let points = (0..=400u64)
                .map(|i| {
                    let t = i * 10;
                    let down = downs.iter().any(|d| (*d..*d + 100).contains(&t));
                    Point {
                        t: Duration::from_millis(t),
                        mode: Some(Mode::ProbeBw),
                        phase: Some(if down { Phase::Down } else { Phase::Cruise }),
                        bw_bps: Some(if t >= follows { 1.05e6 } else { 10e6 }),
                        round_count: Some(t / 40),
                        cycle_count: advances.map(|a| a.iter().filter(|x| **x <= t).count() as u64),
                        ..Point::default()
                    }
                })
                .collect();
            Trace {
                path: PathFacts { rate_bps: 10e6, rtt: Duration::from_millis(40), mss: 1448, rate_step: Some((Duration::from_secs(1), 1e6)) },
                sample_interval: Duration::from_millis(10),
                points,
                events: Vec::new(),
            }
        };
        let a = Assertion::BwFollowsStepInCycles { within: 0.25, cycles: 2.0, phases_only: true };
        let downs = [500, 1500, 2000, 3000];
        // Without the count, the DOWN at 1.5 s (its round ended in ProbeBW) is taken to have
        // advanced the filter: 3 cycles by 3.1 s, a failure.
        let c = a.check(&run(&downs, None, 3100));
        assert_eq!((c.outcome, c.estimate), (Outcome::Fail, 3.0), "{}", c.evidence);
        // The controller says it did not (no advance after 1.5 s): 2 cycles, a pass.
        let c = a.check(&run(&downs, Some(&[540, 2040, 3040]), 3100));
        assert_eq!((c.outcome, c.estimate), (Outcome::Pass, 2.0), "{}", c.evidence);
        // Each DOWN advanced it: 3 cycles, a failure, as without the count.
        let c = a.check(&run(&downs, Some(&[540, 1540, 2040, 3040]), 3100));
        assert_eq!((c.outcome, c.estimate), (Outcome::Fail, 3.0), "{}", c.evidence);
        // Never follows. The last DOWN (3 s) ended its round without an advance: 2 cycles, too
        // few to tell (without the count: 3, a failure).
        let c = a.check(&run(&downs, Some(&[540, 1540, 2040]), u64::MAX));
        assert_eq!((c.outcome, c.lo), (Outcome::NotObservable, 2.0), "{}", c.evidence);
        assert_eq!(a.check(&run(&downs, None, u64::MAX)).outcome, Outcome::Fail);
        // The last DOWN (4 s) begins as the run ends, its round not over: it may yet advance.
        let c = a.check(&run(&[500, 1500, 2000, 4000], Some(&[540, 1540, 2040]), u64::MAX));
        assert_eq!((c.outcome, c.lo), (Outcome::Fail, 3.0), "{}", c.evidence);
    }

    /// A.1 counted exactly where the controller recorded its rounds: 3 rounds from full_bw's
    /// last 25 % growth pass ≤ 3, 4 fail it; without the rounds (kernel BBR, older results) the
    /// sampled bracket is judged against one round more.
    #[test]
    fn a_startup_exit_with_recorded_rounds_is_exact_and_judged_against_the_drafts_3() {
        use crate::trace::StateEvent;
        let mut t = trace(&[(0, Mode::Startup, None), (100, Mode::Startup, None), (400, Mode::Drain, None), (500, Mode::ProbeBw, None)]);
        for (i, p) in t.points.iter_mut().enumerate() {
            p.bw_bps = Some(if i == 0 { 1e6 } else { 10e6 });
        }
        let a = Assertion::StartupExitAfterPlateau { rounds: 3.0 };
        assert_eq!(a.rule(&t), Rule::AtMost(4.0), "sampled: one round more");
        let sampled = a.check(&t);
        assert!(sampled.evidence.contains("1/1.25"), "{}", sampled.evidence);
        let exit = |round, full_bw_round| StateEvent {
            t: Duration::from_millis(390),
            from: Mode::Startup,
            to: Mode::Drain,
            from_phase: None,
            to_phase: None,
            round,
            full_bw_round,
        };
        t.events = vec![exit(Some(12), Some(9))];
        assert_eq!(a.rule(&t), Rule::AtMost(3.0));
        let c = a.check(&t);
        assert_eq!((c.outcome, c.lo, c.hi), (Outcome::Pass, 3.0, 3.0), "{}", c.evidence);
        assert!(c.evidence.contains("full_bw last grew 25 % in round 9; STARTUP → DRAIN in round 12 at 390 ms: 3 rounds"), "{}", c.evidence);
        t.events = vec![exit(Some(13), Some(9))];
        assert_eq!(a.check(&t).outcome, Outcome::Fail);
        // An exit into PROBE_RTT is not STARTUP's end; an event without rounds is not exact.
        t.events = vec![StateEvent { to: Mode::ProbeRtt, ..exit(Some(13), Some(9)) }, exit(None, None)];
        assert_eq!(a.rule(&t), Rule::AtMost(4.0));
        assert_eq!(a.check(&t), sampled);
    }

    /// A flow in PROBE_BW_CRUISE (round every 100 ms, i.e. each 10th sample) whose first loss
    /// after a competitor arrives at 4 s comes at 6 s; the short-term model set `cut_after`
    /// samples later (never if `None`), the flow entering REFILL at `refill_at` ms.
    fn lossy(cut_after: Option<u64>, refill_at: u64, end: u64) -> Trace {
        let points = (0..=end / 10)
            .map(|i| {
                let t = i * 10;
                let cut = cut_after.is_some_and(|n| t >= 6000 + n * 10) && t < refill_at;
                Point {
                    t: Duration::from_millis(t),
                    mode: Some(Mode::ProbeBw),
                    phase: Some(if t >= refill_at { Phase::Refill } else { Phase::Cruise }),
                    bw_bps: Some(10e6),
                    rtt: Some(Duration::from_millis(100)),
                    round_count: Some(t / 100),
                    lost_bytes: Some(if t >= 6000 { 1448 } else { 0 }),
                    bw_shortterm_bps: Some(if cut { 7e6 } else { f64::INFINITY }),
                    inflight_shortterm_bytes: Some(if cut { 90_000 } else { u64::MAX }),
                    ..Point::default()
                }
            })
            .collect();
        of_points(points)
    }

    /// §5.5.10.3: the cut one round after the loss passes; none by REFILL 5 rounds later
    /// fails; a loss whose round ends in REFILL is passed over (not observable); BBRv1's series
    /// (no short-term model) and a run that ends before the cut is due are not observable.
    #[test]
    fn the_short_term_model_must_be_cut_a_round_after_a_loss() {
        let a = Assertion::ShortTermCutAfterLossFrom { from: Duration::from_secs(4), rounds: 2.0 };
        let c = a.check(&lossy(Some(10), 9000, 9500));
        assert_eq!((c.outcome, c.lo, c.hi), (Outcome::Pass, 0.0, 2.0), "{}", c.evidence);
        assert!(c.evidence.contains("first loss after 4000 ms at 6000 ms (round 60, PROBE_BW_CRUISE)"), "{}", c.evidence);
        assert!(c.evidence.contains("bw_shortterm 7.00 Mbit/s (70 % of max_bw 10.00 Mbit/s), inflight_shortterm 90000 B at 6100 ms"), "{}", c.evidence);
        let c = a.check(&lossy(None, 6500, 7000));
        assert_eq!((c.outcome, c.lo), (Outcome::Fail, 4.0), "{}", c.evidence);
        assert!(c.evidence.contains("still unset 4 rounds later, when PROBE_BW_REFILL began at 6500 ms"), "{}", c.evidence);
        // Four rounds late is a failure too, not only never.
        assert_eq!(a.check(&lossy(Some(40), 9000, 9500)).outcome, Outcome::Fail);
        let c = a.check(&lossy(None, 6100, 7000));
        assert_eq!(c.outcome, Outcome::NotObservable, "{}", c.evidence);
        assert!(c.evidence.contains("1 whose round may have ended while probing"), "{}", c.evidence);
        let c = a.check(&lossy(None, 9000, 6100));
        assert_eq!(c.outcome, Outcome::NotObservable, "{}", c.evidence);
        // A loss in PROBE_RTT, never cut before REFILL: BBRExitProbeRTT reset the model.
        let mut in_probe_rtt = lossy(None, 6500, 7000);
        for p in in_probe_rtt.points.iter_mut().filter(|p| (5950..6200).contains(&p.t.as_millis())) {
            (p.mode, p.phase) = (Some(Mode::ProbeRtt), None);
        }
        let c = a.check(&in_probe_rtt);
        assert_eq!(c.outcome, Outcome::NotObservable, "{}", c.evidence);
        assert!(c.evidence.contains("1 reset by PROBE_RTT's exit"), "{}", c.evidence);
        let mut v1 = lossy(Some(10), 9000, 9500);
        for p in &mut v1.points {
            (p.bw_shortterm_bps, p.inflight_shortterm_bytes, p.round_count) = (None, None, None);
        }
        assert_eq!(a.check(&v1).outcome, Outcome::NotObservable);
    }

    /// §5.3.4.3: behind another flow's standing queue, RTTs after a PROBE_RTT at 5 s stay near 80 ms,
    /// far above the 20 ms of the run's start. A sample below the PROBE_RTT's own low (76 ms at
    /// 9 s) refreshed the timer's filter, restarted at the PROBE_RTT's expiry (§5.3.4.3), so the
    /// 6.7 s to the end is excused; without it, the span fails ≤ 5 s.
    #[test]
    fn a_lower_rtt_behind_a_standing_queue_puts_probe_rtt_off() {
        let run = |dip: bool| {
            let mut t = trace(&[(0, Mode::Startup, None), (300, Mode::ProbeBw, None)]);
            t.points.clear();
            for i in 0..=1200 {
                let ms = i * 10;
                let mode = match ms {
                    0..300 => Mode::Startup,
                    5000..5300 => Mode::ProbeRtt,
                    _ => Mode::ProbeBw,
                };
                let rtt = match ms {
                    0..300 => 20,
                    9000 if dip => 76,
                    _ => 80,
                };
                t.points.push(Point {
                    t: Duration::from_millis(ms),
                    mode: Some(mode),
                    rtt: Some(Duration::from_millis(rtt)),
                    min_rtt: Some(Duration::from_millis(20)),
                    ..Point::default()
                });
            }
            t
        };
        let a = Assertion::ProbeRttEvery { interval: Duration::from_secs(5) };
        let c = a.check(&run(true));
        assert_eq!((c.outcome, c.estimate), (Outcome::Pass, 4.7), "{}", c.evidence);
        assert!(c.evidence.contains("1 spans excused"), "{}", c.evidence);
        let c = a.check(&run(false));
        assert_eq!(c.outcome, Outcome::Fail, "{}", c.evidence);
        assert!(c.evidence.contains("from 5300 ms to end of run, no PROBE_RTT"), "{}", c.evidence);
    }

    /// A CUBIC trace from `(ms, cwnd, ssthresh, lost)` in packets of the path's MSS (ssthresh
    /// `None` while unset), no BBR state: what `tcp:cubic` and `quic:cubic` show.
    fn cubic(rows: &[(u64, u64, Option<u64>, u64)]) -> Trace {
        let mss = 1448;
        of_points(
            rows.iter()
                .map(|&(t, cwnd, ssthresh, lost)| Point {
                    t: Duration::from_millis(t),
                    cwnd_bytes: Some(cwnd * mss),
                    ssthresh_bytes: Some(ssthresh.map_or(u64::MAX, |s| s * mss)),
                    lost_bytes: Some(lost * mss),
                    ..Point::default()
                })
                .collect(),
        )
    }

    /// RFC 9438 §4.6: each cut in congestion avoidance is judged as ssthresh over the cwnd
    /// before it; a cut from slow start and an undo are not judged; β = 0.5 fails.
    #[test]
    fn a_congestion_event_cuts_the_window_to_beta() {
        let a = Assertion::ReductionIs { beta: 0.7, tolerance: 0.05 };
        let run = |beta: f64| {
            let cut = |w: u64| Some((w as f64 * beta) as u64);
            cubic(&[
                (0, 10, None, 0),
                (10, 20, None, 0),
                // Slow start ends on a loss: a cut from slow start (cwnd grew unseen), not judged.
                (20, 40, None, 0),
                (30, 30, cut(60), 5),
                (1000, 150, cut(60), 5),
                // Congestion avoidance: cut at 1010 ms, the loss counted a sample later (TCP's
                // retransmissions).
                (1010, 120, cut(150), 5),
                (1020, 110, cut(150), 8),
                (2000, 140, cut(150), 8),
                (2010, 140, cut(140), 12),
                // An undo: ssthresh back up without a loss.
                (2020, 150, cut(150), 12),
                (3000, 160, cut(150), 12),
            ])
        };
        let c = a.check(&run(0.7));
        assert_eq!(c.outcome, Outcome::Pass, "{}", c.evidence);
        assert!((c.estimate - 0.7).abs() < 0.01, "{}", c.evidence);
        assert!(c.evidence.contains("over 2 congestion events") && c.evidence.contains("1 in slow start not judged"), "{}", c.evidence);
        let c = a.check(&run(0.5));
        assert_eq!(c.outcome, Outcome::Fail, "{}", c.evidence);
        assert!((c.estimate - 0.5).abs() < 0.01, "{}", c.evidence);
        // A path whose capacity does not change: every epoch loses at the same window and
        // sets ssthresh to the same value again; the cwnd's fall shows the cut. A controller
        // that does not cut on a loss keeps its window: 1, fail.
        let same = cubic(&[
            (0, 10, None, 0),
            (20, 68, None, 0),
            (30, 47, Some(47), 2),
            (1000, 68, Some(47), 2),
            (1010, 47, Some(47), 3),
            (2000, 68, Some(47), 3),
            (2010, 60, Some(47), 4),
            (2020, 47, Some(47), 5),
        ]);
        let c = a.check(&same);
        assert_eq!(c.outcome, Outcome::Pass, "{}", c.evidence);
        assert!(c.evidence.contains("over 2 congestion events") && (c.estimate - 47.0 / 68.0).abs() < 0.001, "{}", c.evidence);
        let uncut =
            cubic(&[(0, 10, None, 0), (20, 68, None, 0), (30, 47, Some(47), 2), (1000, 68, Some(47), 2), (1010, 69, Some(47), 3), (1020, 70, Some(47), 3)]);
        let c = a.check(&uncut);
        assert_eq!((c.outcome, c.estimate), (Outcome::Fail, 1.0), "{}", c.evidence);
        assert!(c.evidence.contains("1 without a cut"), "{}", c.evidence);
        // No cut in congestion avoidance, and a stack without ssthresh: not observable.
        let none = cubic(&[(0, 10, None, 0), (10, 20, Some(20), 0), (1000, 60, Some(20), 0)]);
        assert_eq!(a.check(&none).outcome, Outcome::NotObservable);
        let mut hidden = run(0.7);
        for p in &mut hidden.points {
            p.ssthresh_bytes = None;
        }
        let c = a.check(&hidden);
        assert_eq!(c.outcome, Outcome::NotObservable, "{}", c.evidence);
        assert!(c.evidence.contains("no ssthresh"), "{}", c.evidence);
    }

    /// RFC 9406 §4.2: the first slow start's largest window against what the path holds (the
    /// tests' path: 10 Mbit/s × 40 ms, a BDP of 50 kB = 34.5 packets; with a 4-BDP buffer 250
    /// kB = 172.7 packets).
    #[test]
    fn slow_start_must_end_near_what_the_path_holds() {
        let a = Assertion::SlowStartPeakAtMost { buffer_bdp: 4.0, share: 1.5 };
        // HyStart's exit at 44 packets: 0.25, pass.
        let hystart = cubic(&[(0, 10, None, 0), (10, 20, None, 0), (20, 40, None, 0), (30, 44, Some(44), 0), (5000, 90, Some(63), 3)]);
        let c = a.check(&hystart);
        assert_eq!(c.outcome, Outcome::Pass, "{}", c.evidence);
        assert!((c.estimate - 44.0 / 172.7).abs() < 0.01, "{}", c.evidence);
        assert!(c.evidence.contains("without a cut"), "{}", c.evidence);
        // A CSS that overflowed: 216 packets (1.25), cut to 151: pass, saying so.
        let css = cubic(&[(0, 10, None, 0), (10, 200, None, 0), (20, 216, None, 5), (30, 151, Some(151), 40)]);
        let c = a.check(&css);
        assert_eq!(c.outcome, Outcome::Pass, "{}", c.evidence);
        assert!(c.evidence.contains("on a congestion event") && c.evidence.contains("5 packets lost before"), "{}", c.evidence);
        // Plain slow start, doubled past the overflow: 345 packets (2.0), fail.
        let plain = cubic(&[(0, 10, None, 0), (10, 180, None, 0), (20, 345, None, 60), (30, 240, Some(241), 170)]);
        let c = a.check(&plain);
        assert_eq!(c.outcome, Outcome::Fail, "{}", c.evidence);
        assert!((c.estimate - 2.0).abs() < 0.01, "{}", c.evidence);
        // Never ended: not observable.
        let never = cubic(&[(0, 10, None, 0), (10, 80, None, 0)]);
        assert_eq!(a.check(&never).outcome, Outcome::NotObservable);
    }
}
