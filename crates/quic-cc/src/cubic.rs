//! CUBIC (RFC 9438) with HyStart++ slow start (RFC 9406), sans-IO, for noq. `quic:cubic`
//! runs HyStart++ as RFC 9406 has it, Conservative Slow Start included (see
//! [`RFC_CSS_ROUNDS`] for why, and what it costs against Linux's CUBIC, which has no CSS).
//!
//! noq's own `Cubic` has no slow-start exit other than loss: its slow start doubles cwnd
//! until a whole round overflows the bottleneck buffer, which on a deep buffer costs
//! hundreds of drops that Linux's CUBIC (with HyStart) does not have. This one leaves slow
//! start when the round's minimum RTT rises (HyStart++), and is otherwise CUBIC as RFC 9438
//! and noq have it: the same constants, the same initial and minimum window, no pacing rate
//! of its own (noq's pacer spreads cwnd over the smoothed RTT, as for noq's CUBIC), and the
//! same undo of a spurious congestion event.
//!
//! Sans-IO: every time is passed in. RTT samples are taken per acknowledged packet (ACK time
//! minus send time), so the controller needs no `RttEstimator` (which noq cannot construct
//! outside itself) and a test can drive it on a virtual clock.

use std::any::Any;
use std::sync::Arc;
use std::time::{Duration, Instant};

use noq_proto::congestion::{Controller, ControllerFactory, ControllerMetrics};
use noq_proto::RttEstimator;

/// RFC 9438 §4.6 β_cubic: the window is cut to 0.7 of itself on congestion.
const BETA: f64 = 0.7;
/// RFC 9438 §5 C: the cubic function's scaling constant, in segments/s³.
const C: f64 = 0.4;

/// RFC 9406 §4.3 constants.
const MIN_RTT_THRESH: Duration = Duration::from_millis(4);
const MAX_RTT_THRESH: Duration = Duration::from_millis(16);
const MIN_RTT_DIVISOR: u32 = 8;
const N_RTT_SAMPLE: u32 = 8;
const CSS_GROWTH_DIVISOR: u64 = 4;
/// RFC 9406 §4.3 CSS_ROUNDS: rounds of Conservative Slow Start (§4.2) before congestion
/// avoidance; what [`CubicFactory`] (`quic:cubic`) uses.
///
/// Why CSS, though Linux's CUBIC has none: our receiver is a userspace task, and under CPU
/// load one round's ACKs can come back ~5 ms late (the task was not scheduled), above the
/// 4 ms threshold at a 10 ms RTT. Without CSS that one late round ends slow start for good
/// (seen at 1 Gbit/s, 10 ms: exits at 16–26 packets, 115–169 Mbit/s over 3 s). With CSS the
/// next round's minimum RTT falls below the baseline and slow start resumes (§4.2), so
/// `quic:cubic` leaves slow start where tcp:cubic, whose kernel receiver is never late,
/// would. The price, in buffer drops per run on an 8-BDP buffer: 0–45 at 50 Mbit/s, 20 ms
/// (without CSS 0, tcp:cubic 38–44), and 84 at 70 Mbit/s, 6 ms, where the 4 ms threshold is
/// two thirds of the RTT (without CSS 2, tcp:cubic 17) (docs/quic.md, "Conservative Slow
/// Start"). An earlier measurement (165 drops per run) predates the kernel receive times of
/// `vendor/noq/PATCH.md`.
pub const RFC_CSS_ROUNDS: u32 = 5;
/// No Conservative Slow Start: leave slow start as soon as the RTT rise is seen, with
/// ssthresh = cwnd — what Linux's CUBIC does (tcp_cubic.c `hystart_update`: on a delay
/// increase, `tp->snd_ssthresh = tcp_snd_cwnd(tp)`). For comparisons; not `quic:cubic`'s.
pub const LINUX_CSS_ROUNDS: u32 = 0;
// L, the per-ACK growth cap, is infinite: noq paces every controller's sending (RFC 9406 §4.3
// "L = infinity if paced").

/// Where HyStart++ is (RFC 9406 §4.2).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SlowStartPhase {
    /// Standard slow start, watching the round's minimum RTT.
    SlowStart,
    /// Conservative Slow Start: the RTT rose; grow at a quarter of the rate for up to
    /// `CSS_ROUNDS` rounds, back to slow start if the rise was spurious.
    Conservative { baseline_min_rtt: Duration, rounds: u32 },
    /// HyStart++ is over (it runs for the first slow start only, §4.3): congestion avoidance,
    /// or a later slow start after persistent congestion, which is standard.
    Done,
}

/// The RTT rounds HyStart++ compares (§4.3).
#[derive(Debug, Clone, Copy)]
struct Rounds {
    /// The round ends when a packet sent after this one is acknowledged.
    window_end: Option<u64>,
    last_round_min_rtt: Option<Duration>,
    current_round_min_rtt: Option<Duration>,
    rtt_sample_count: u32,
}

#[derive(Debug, Clone)]
struct State {
    window: u64,
    ssthresh: u64,
    /// Fractional window growth carried between ACKs (bytes).
    credit: f64,
    /// RFC 9438 W_max (bytes), K (s), the epoch's start, and W_est (bytes).
    w_max: f64,
    k: f64,
    epoch_start: Option<Instant>,
    w_est: f64,
    /// When the current recovery period began (RFC 9002 §7.3.2): packets sent before it
    /// neither grow the window nor start another reduction.
    recovery_start: Option<Instant>,
    phase: SlowStartPhase,
}

/// CUBIC with HyStart++. Build it through [`CubicFactory`].
#[derive(Debug, Clone)]
pub struct Cubic {
    initial_window: u64,
    smss: u64,
    /// Rounds of Conservative Slow Start before congestion avoidance.
    css_rounds: u32,
    /// β_cubic: [`BETA`] unless a test sets another ([`Cubic::set_beta`]).
    beta: f64,
    state: State,
    rounds: Rounds,
    largest_sent_pn: Option<u64>,
    smoothed_rtt: Option<Duration>,
    /// The state before the last congestion event, restored if it proves spurious.
    pre_congestion: Option<State>,
    /// When HyStart++ left slow start (entered CSS, then congestion avoidance), for tests
    /// and diagnostics.
    css_entered_at: Option<Instant>,
    ca_entered_at: Option<Instant>,
}

impl Cubic {
    /// CUBIC with HyStart++ as RFC 9406 has it (CSS for [`RFC_CSS_ROUNDS`] rounds).
    pub fn new(mtu: u16) -> Self {
        Self::with_css_rounds(mtu, RFC_CSS_ROUNDS)
    }

    /// CUBIC with HyStart++'s RTT-rise detection and `css_rounds` rounds of Conservative Slow
    /// Start (0: none, congestion avoidance at once).
    pub fn with_css_rounds(mtu: u16, css_rounds: u32) -> Self {
        let smss = u64::from(mtu.max(1200));
        // RFC 9002 §7.2, as noq's CubicConfig: min(10 × 1200, max(2 × 1200, 14720)).
        let initial_window = 14_720u64.clamp(2 * 1200, 10 * 1200);
        Self {
            initial_window,
            smss,
            css_rounds,
            beta: BETA,
            state: State {
                window: initial_window,
                ssthresh: u64::MAX,
                credit: 0.0,
                w_max: 0.0,
                k: 0.0,
                epoch_start: None,
                w_est: 0.0,
                recovery_start: None,
                phase: SlowStartPhase::SlowStart,
            },
            rounds: Rounds { window_end: None, last_round_min_rtt: None, current_round_min_rtt: None, rtt_sample_count: 0 },
            largest_sent_pn: None,
            smoothed_rtt: None,
            pre_congestion: None,
            css_entered_at: None,
            ca_entered_at: None,
        }
    }

    /// Turns HyStart++ off (plain slow start, as noq's CUBIC), or back on before slow start
    /// ended: for comparisons.
    pub fn set_hystart(&mut self, on: bool) {
        self.state.phase = if on { SlowStartPhase::SlowStart } else { SlowStartPhase::Done };
    }

    /// Sets β_cubic (RFC 9438 §4.6's 0.7, what `quic:cubic` always runs with): for tests, e.g.
    /// a controller broken on purpose that the conformance suite must fail.
    pub fn set_beta(&mut self, beta: f64) {
        self.beta = beta;
    }

    pub fn window(&self) -> u64 {
        self.state.window
    }
    pub fn ssthresh(&self) -> u64 {
        self.state.ssthresh
    }
    pub fn phase(&self) -> SlowStartPhase {
        self.state.phase
    }
    /// When HyStart++ entered Conservative Slow Start (the last time), if it did.
    pub fn css_entered_at(&self) -> Option<Instant> {
        self.css_entered_at
    }
    /// When slow start (HyStart++'s CSS, or a loss) gave way to congestion avoidance.
    pub fn ca_entered_at(&self) -> Option<Instant> {
        self.ca_entered_at
    }

    fn minimum_window(&self) -> u64 {
        2 * self.smss
    }

    fn in_slow_start(&self) -> bool {
        self.state.window < self.state.ssthresh
    }

    pub fn on_packet_sent(&mut self, pn: u64) {
        self.largest_sent_pn = Some(self.largest_sent_pn.map_or(pn, |l| l.max(pn)));
    }

    /// One packet of `bytes`, sent at `sent` with number `pn`, was acknowledged at `now`.
    pub fn on_packet_acked(&mut self, now: Instant, sent: Instant, bytes: u64, pn: u64, app_limited: bool) {
        let rtt = now.saturating_duration_since(sent);
        self.smoothed_rtt = Some(self.smoothed_rtt.map_or(rtt, |s| (s * 7 + rtt) / 8));
        self.update_rounds(pn, rtt);
        if app_limited || self.state.recovery_start.is_some_and(|start| sent <= start) {
            return;
        }
        if self.in_slow_start() {
            self.slow_start(now, bytes);
        } else {
            self.congestion_avoidance(now, bytes);
        }
    }

    /// §4.3: a round ends when a packet sent after its start is acknowledged; each round
    /// keeps the minimum RTT of its samples.
    fn update_rounds(&mut self, pn: u64, rtt: Duration) {
        let r = &mut self.rounds;
        if r.window_end.is_none_or(|end| pn > end) {
            r.last_round_min_rtt = r.current_round_min_rtt;
            r.current_round_min_rtt = None;
            r.rtt_sample_count = 0;
            r.window_end = self.largest_sent_pn;
            if let SlowStartPhase::Conservative { rounds, .. } = &mut self.state.phase {
                *rounds += 1;
            }
        }
        r.current_round_min_rtt = Some(r.current_round_min_rtt.map_or(rtt, |m| m.min(rtt)));
        r.rtt_sample_count += 1;
    }

    fn slow_start(&mut self, now: Instant, bytes: u64) {
        let r = self.rounds;
        let enough = r.rtt_sample_count >= N_RTT_SAMPLE;
        match self.state.phase {
            SlowStartPhase::SlowStart => {
                // §4.2: standard slow start; after N_RTT_SAMPLE samples of the round, an RTT
                // rise of clamp(last round's min / 8, 4 ms, 16 ms) enters CSS.
                self.state.window += bytes;
                if let (true, Some(current), Some(last)) = (enough, r.current_round_min_rtt, r.last_round_min_rtt) {
                    let thresh = (last / MIN_RTT_DIVISOR).clamp(MIN_RTT_THRESH, MAX_RTT_THRESH);
                    if current >= last + thresh {
                        self.state.phase = SlowStartPhase::Conservative { baseline_min_rtt: current, rounds: 0 };
                        self.css_entered_at = Some(now);
                        if self.css_rounds == 0 {
                            self.enter_congestion_avoidance(now);
                        }
                    }
                }
            }
            SlowStartPhase::Conservative { baseline_min_rtt, rounds } => {
                // §4.2 CSS: a quarter of slow start's growth (CSS_GROWTH_DIVISOR).
                self.state.window += bytes / CSS_GROWTH_DIVISOR;
                if enough && r.current_round_min_rtt.is_some_and(|m| m < baseline_min_rtt) {
                    // §4.2: the round's minimum RTT fell below the one that entered CSS, so the
                    // rise was spurious (a late round of ACKs): back to slow start.
                    self.state.phase = SlowStartPhase::SlowStart;
                } else if rounds >= self.css_rounds {
                    // §4.2: CSS_ROUNDS rounds of CSS: congestion avoidance.
                    self.enter_congestion_avoidance(now);
                }
            }
            SlowStartPhase::Done => self.state.window += bytes,
        }
    }

    /// CSS is over (or skipped): the path is full. Congestion avoidance from the window now,
    /// with no reduction, since nothing was lost.
    fn enter_congestion_avoidance(&mut self, now: Instant) {
        self.state.ssthresh = self.state.window;
        self.state.phase = SlowStartPhase::Done;
        self.ca_entered_at = Some(now);
    }

    /// RFC 9438 §4.2–4.4: the window follows W_cubic(t + RTT), or the Reno-friendly W_est when
    /// that is larger.
    fn congestion_avoidance(&mut self, now: Instant, bytes: u64) {
        let smss = self.smss as f64;
        let beta = self.beta;
        let s = &mut self.state;
        let cwnd = s.window as f64;
        let epoch_start = *s.epoch_start.get_or_insert_with(|| {
            // Entering congestion avoidance without a congestion event (slow start ended at
            // ssthresh): the curve starts flat at the current window.
            s.w_max = cwnd;
            s.k = 0.0;
            s.w_est = cwnd;
            now
        });
        let rtt = self.smoothed_rtt.unwrap_or(Duration::from_millis(333)).as_secs_f64();
        let t = now.saturating_duration_since(epoch_start).as_secs_f64();
        let (k, w_max) = (s.k, s.w_max);
        let w_cubic = |t: f64| (C * (t - k).powi(3) * smss + w_max).max(0.0);
        // §4.3 Reno-friendly region: α_cubic until W_est reaches W_max, then 1.
        let alpha = if s.w_est < w_max { 3.0 * (1.0 - beta) / (1.0 + beta) } else { 1.0 };
        s.w_est += alpha * bytes as f64 * smss / cwnd;
        let target = if w_cubic(t) < s.w_est {
            s.w_est
        } else {
            // §4.4–4.5: concave and convex regions, target bounded to [cwnd, 1.5 cwnd].
            let target = w_cubic(t + rtt).clamp(cwnd, 1.5 * cwnd);
            cwnd + (target - cwnd) * bytes as f64 / cwnd
        };
        s.credit += (target - cwnd).max(0.0);
        let whole = s.credit.floor();
        s.credit -= whole;
        s.window += whole as u64;
    }

    /// A congestion event (loss or ECN-CE) for packets sent up to `sent`.
    pub fn on_congestion_event(&mut self, now: Instant, sent: Instant, persistent: bool, is_ecn: bool) {
        if self.state.recovery_start.is_some_and(|start| sent <= start) {
            return;
        }
        if !is_ecn {
            self.pre_congestion = Some(self.state.clone());
        }
        let min_window = self.minimum_window();
        let beta = self.beta;
        let s = &mut self.state;
        self.ca_entered_at.get_or_insert(now);
        // §4.3 of RFC 9406: a loss in slow start or CSS ends HyStart++ like any slow start.
        s.phase = SlowStartPhase::Done;
        s.recovery_start = Some(now);
        let cwnd = s.window as f64;
        // RFC 9438 §4.7 fast convergence: a flow whose window is below the last W_max
        // releases bandwidth by remembering less.
        s.w_max = if cwnd < s.w_max { cwnd * (1.0 + beta) / 2.0 } else { cwnd };
        s.ssthresh = ((cwnd * beta) as u64).max(min_window);
        s.window = s.ssthresh;
        s.k = ((s.w_max - s.window as f64) / self.smss as f64 / C).max(0.0).cbrt();
        s.w_est = s.window as f64;
        s.epoch_start = Some(now);
        s.credit = 0.0;
        if persistent {
            // RFC 9002 §7.6.2: collapse to the minimum window; the next epoch starts afresh.
            s.window = min_window;
            s.recovery_start = None;
            s.epoch_start = None;
        }
    }

    pub fn on_spurious_congestion_event(&mut self) {
        if let Some(prior) = self.pre_congestion.take() {
            if prior.window > self.state.window {
                self.state = prior;
            }
        }
    }
}

impl Controller for Cubic {
    fn on_packet_sent(&mut self, _now: Instant, _bytes: u16, pn: u64) {
        Cubic::on_packet_sent(self, pn);
    }

    fn on_ack(&mut self, now: Instant, sent: Instant, bytes: u64, pn: u64, app_limited: bool, _rtt: &RttEstimator) {
        self.on_packet_acked(now, sent, bytes, pn, app_limited);
    }

    fn on_congestion_event(&mut self, now: Instant, sent: Instant, is_persistent_congestion: bool, is_ecn: bool, _lost_bytes: u64, _largest_lost_pn: u64) {
        Cubic::on_congestion_event(self, now, sent, is_persistent_congestion, is_ecn);
    }

    fn on_spurious_congestion_event(&mut self) {
        Cubic::on_spurious_congestion_event(self);
    }

    fn on_mtu_update(&mut self, new_mtu: u16) {
        self.smss = u64::from(new_mtu.max(1200));
        self.state.window = self.state.window.max(self.minimum_window());
    }

    fn window(&self) -> u64 {
        self.state.window
    }

    fn metrics(&self) -> ControllerMetrics {
        let mut m = ControllerMetrics::default();
        m.congestion_window = self.state.window;
        m.ssthresh = Some(self.state.ssthresh);
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

/// Builds one [`Cubic`] per path, with RFC 9406's Conservative Slow Start
/// ([`RFC_CSS_ROUNDS`]).
#[derive(Debug, Default)]
pub struct CubicFactory;

impl CubicFactory {
    pub fn new() -> Arc<Self> {
        Arc::new(Self)
    }
}

impl ControllerFactory for CubicFactory {
    fn build(self: Arc<Self>, _now: Instant, current_mtu: u16) -> Box<dyn Controller> {
        Box::new(Cubic::with_css_rounds(current_mtu, RFC_CSS_ROUNDS))
    }
}
