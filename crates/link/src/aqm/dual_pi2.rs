//! DualPI2, the DualQ Coupled AQM of L4S (RFC 9332): an L queue for ECT(1)/CE traffic with a
//! shallow step marker, a classic queue (Not-ECT, ECT(0)) with a PI2 controller, and the
//! coupling that makes the two kinds of flow share the link.
//!
//! Every `tupdate` the PI core updates the base probability `p'` from the classic queue's
//! delay (RFC 9332 Appendix A.1, `dualpi2_update`): `p' += alpha·(curq − target) +
//! beta·(curq − prevq)`. From it the classic queue drops or marks with `p_C = p'²` (the
//! "squaring" that suits Reno/CUBIC's 1/√p response) and the L queue marks with
//! `p_CL = k·p'` (linear, for scalable controllers' 1/p), coupled by `k` (section 2.4). An L
//! packet is also marked when its own sojourn exceeds the step threshold (the native L4S AQM,
//! section 2.5.1.1 and Linux's `step_thresh`): the L probability is `max(step, p_CL)`.
//!
//! Overload (section 4.2.3): once `p_CL` would pass 1 (`p' > 1/k`, so `p_C > 1/k²`), ECN no
//! longer helps; classic ECN packets are dropped rather than marked and L packets are dropped
//! with the classic probability (Linux's `drop_overload`, on by default).
//!
//! The scheduler is Linux's weighted round robin with classic protection (`c_protection`, 10 %
//! of the bytes while both queues are backlogged): the L queue has priority, the classic queue
//! cannot be starved. Decisions are taken at dequeue, as Linux does by default
//! (`drop_early` off). Parameters and defaults are Linux's `sch_dualpi2`.

use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use serde::{Deserialize, Serialize};

use super::{AqmConfig, Drops, Fifo, QueueDiscipline, Queued};
use crate::buffer::Buffer;
use crate::error::LinkConfigError;
use crate::outcome::DropCause;
use crate::time::{Duration, Instant};

/// The loss model draws from stream 0, jitter from 1, PIE from 2; DualPI2 from its own.
const DUALPI2_STREAM: u64 = 3;
/// Linux's `sch_dualpi2` never drops or marks with the coupled probability while the two
/// queues hold less than two MTUs together (as RED's min_th); 1500-byte packets here.
const MIN_BACKLOG: u64 = 2 * 1500;
const MIN_TUPDATE: Duration = Duration::from_millis(1);

/// DualPI2's parameters (`--aqm dualpi2[:target=15ms,tupdate=16ms,alpha=0.16,beta=3.2,k=2,
/// step=1ms,c_protection=10,drop_overload=on]`), defaults from Linux's `sch_dualpi2`.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(default)]
pub struct DualPi2 {
    /// The classic queue's delay target (RFC 9332 Appendix A, `target`).
    pub target_ns: Duration,
    /// How often `p'` is updated (`Tupdate`).
    pub tupdate_ns: Duration,
    /// The PI core's integral gain, in Hz.
    pub alpha: f64,
    /// Its proportional gain, in Hz.
    pub beta: f64,
    /// The coupling factor `k` (section 2.4: 2 for a balance between Prague and CUBIC).
    pub k: f64,
    /// The L queue's step threshold: an L packet that waited longer is marked.
    pub step_ns: Duration,
    /// The classic queue's share of the bytes while both queues are backlogged, in percent.
    pub c_protection: u32,
    /// Under overload, drop L packets with the classic probability instead of marking them.
    pub drop_overload: bool,
}

impl Default for DualPi2 {
    fn default() -> Self {
        DualPi2 {
            target_ns: Duration::from_millis(15),
            tupdate_ns: Duration::from_millis(16),
            alpha: 0.16,
            beta: 3.2,
            k: 2.0,
            step_ns: Duration::from_millis(1),
            c_protection: 10,
            drop_overload: true,
        }
    }
}

impl AqmConfig for DualPi2 {
    type Queue<P> = DualPi2Queue<P>;
    const KEYS: &'static str = "target=15ms,tupdate=16ms,alpha=0.16,beta=3.2,k=2,step=1ms,c_protection=10,drop_overload=on";

    fn set(&mut self, key: &str, value: &str) -> Result<(), String> {
        let number = |v: &str, min: f64| match v.parse::<f64>() {
            Ok(w) if w.is_finite() && w >= min => Ok(w),
            _ => Err(format!("{key} is a number of at least {min}")),
        };
        match key {
            "target" => self.target_ns = super::duration(key, value)?,
            "tupdate" => match super::duration(key, value)? {
                d if d < MIN_TUPDATE => return Err(format!("{key} must be at least 1ms")),
                d => self.tupdate_ns = d,
            },
            "alpha" => self.alpha = number(value, 0.0)?,
            "beta" => self.beta = number(value, 0.0)?,
            "k" => self.k = number(value, 1.0)?,
            "step" => self.step_ns = super::duration(key, value)?,
            "c_protection" => match value.parse::<u32>() {
                Ok(n) if n <= 100 => self.c_protection = n,
                _ => return Err(format!("{key} is a percentage from 0 to 100")),
            },
            "drop_overload" => self.drop_overload = crate::ecn::on_off(key, value)?,
            _ => return Err(format!("unknown key {key:?}")),
        }
        Ok(())
    }

    fn validate(&self) -> Result<(), LinkConfigError> {
        if self.tupdate_ns < MIN_TUPDATE {
            return Err(LinkConfigError::Aqm("DualPI2's tupdate must be at least 1ms".into()));
        }
        let finite = |x: f64, min: f64| x.is_finite() && x >= min;
        if !(finite(self.alpha, 0.0) && finite(self.beta, 0.0) && finite(self.k, 1.0) && self.c_protection <= 100) {
            return Err(LinkConfigError::Aqm("DualPI2 needs alpha and beta of at least 0, k of at least 1 and c_protection of at most 100".into()));
        }
        Ok(())
    }

    fn describe(&self) -> String {
        format!(
            "DualPI2 (k {}, step {}, target {}, tupdate {}, alpha {}, beta {}, C protection {} %{})",
            self.k,
            super::ms(self.step_ns),
            super::ms(self.target_ns),
            super::ms(self.tupdate_ns),
            self.alpha,
            self.beta,
            self.c_protection,
            if self.drop_overload { "" } else { ", no drop on overload" }
        )
    }

    fn build<P>(&self, buffer: Buffer, seed: u64) -> DualPi2Queue<P> {
        let mut rng = ChaCha8Rng::seed_from_u64(seed);
        rng.set_stream(DUALPI2_STREAM);
        let tupdate = self.tupdate_ns.max(MIN_TUPDATE);
        DualPi2Queue {
            l: Fifo::default(),
            c: Fifo::default(),
            buffer,
            cfg: DualPi2 { tupdate_ns: tupdate, ..*self },
            rng,
            p: 0.0,
            prevq: Duration::ZERO,
            credit: 0,
            next_update: Instant::EPOCH + tupdate,
            resting: false,
        }
    }

    /// It always marks: L4S traffic is marked, never dropped short of overload, and classic
    /// ECN traffic is marked as RFC 9332 Appendix A says.
    fn enable_ecn(&mut self) -> bool {
        true
    }

    fn marks(&self) -> bool {
        true
    }
}

/// The two queues, the PI core and the scheduler's credit.
pub struct DualPi2Queue<P> {
    l: Fifo<P>,
    c: Fifo<P>,
    buffer: Buffer,
    cfg: DualPi2,
    rng: ChaCha8Rng,
    /// The base probability `p'`, in [0, 1].
    p: f64,
    /// The classic queue delay at the previous update.
    prevq: Duration,
    /// Classic protection's credit, in percent-bytes: the L queue goes first while it is at
    /// most 0 (Linux's `c_protection_credit`).
    credit: i64,
    next_update: Instant,
    /// The last update changed nothing and the queues are empty: the timer stands down.
    resting: bool,
}

impl<P> DualPi2Queue<P> {
    /// The base probability `p'`.
    pub fn base_prob(&self) -> f64 {
        self.p
    }

    /// The classic queue's drop/mark probability, `p_C = p'²` (section 2.4).
    pub fn p_c(&self) -> f64 {
        self.p * self.p
    }

    /// The coupled L probability, `p_CL = k·p'`, at most 1 (section 2.4).
    pub fn p_cl(&self) -> f64 {
        (self.cfg.k * self.p).min(1.0)
    }

    /// Overload: the coupled probability saturates (`k·p' > 1`, section 4.2.3).
    fn overloaded(&self) -> bool {
        self.cfg.k * self.p > 1.0
    }

    fn roll(&mut self, p: f64) -> bool {
        p > 0.0 && self.rng.gen::<f64>() < p
    }

    /// Appendix A's `dualpi2_update`, with `curq` the classic head's sojourn at `now`.
    fn update(&mut self, now: Instant) {
        let curq = self.c.front().map_or(Duration::ZERO, |q| now - q.arrived_at);
        let (cur, prev, target) = (curq.as_secs_f64(), self.prevq.as_secs_f64(), self.cfg.target_ns.as_secs_f64());
        self.p = (self.p + self.cfg.alpha * (cur - target) + self.cfg.beta * (cur - prev)).clamp(0.0, 1.0);
        if !self.cfg.drop_overload {
            // Linux: without drop on overload, keep p_CL at most 1 so L flows keep their share.
            self.p = self.p.min(1.0 / self.cfg.k);
        }
        self.prevq = curq;
    }

    fn wake(&mut self, now: Instant) {
        if self.resting {
            self.resting = false;
            if now >= self.next_update {
                let period = self.cfg.tupdate_ns.as_nanos();
                let missed = (now - self.next_update).as_nanos() / period + 1;
                self.next_update += Duration::from_nanos(period.saturating_mul(missed));
            }
        }
    }

    /// The scheduler: the L queue unless it is empty or the classic queue is owed its share.
    fn pick(&mut self) -> Option<(Queued<P>, bool)> {
        let (l, c) = (!self.l.is_empty(), !self.c.is_empty());
        let wc = i64::from(self.cfg.c_protection);
        let wl = 100 - wc;
        if l && (!c || self.credit <= 0) {
            let q = self.l.pop()?;
            if c {
                self.credit += wc * i64::from(q.len);
            }
            Some((q, true))
        } else if c {
            let q = self.c.pop()?;
            if l {
                self.credit -= wl * i64::from(q.len);
            }
            Some((q, false))
        } else {
            None
        }
    }

    /// Linux's `must_drop` and `do_step_aqm` for a packet leaving at `now`: `true` to drop it;
    /// a mark is applied to it in place.
    fn judge(&mut self, now: Instant, q: &mut Queued<P>, in_l: bool, drops: &mut Drops<P>) -> bool {
        let backlog = self.l.bytes() + self.c.bytes() + u64::from(q.len);
        if backlog >= MIN_BACKLOG {
            let overload = self.overloaded();
            let p_c = self.p_c();
            if !in_l {
                // Appendix A: the squared probability; Not-ECT dropped, ECN marked unless overloaded.
                if self.roll(p_c) && (overload || !drops.mark(q)) {
                    return true;
                }
            } else if overload {
                if self.cfg.drop_overload && self.roll(p_c) {
                    return true;
                }
                drops.mark(q);
            } else {
                let p_cl = self.p_cl();
                if self.roll(p_cl) && !drops.mark(q) {
                    return true;
                }
            }
        }
        if in_l && now - q.arrived_at > self.cfg.step_ns && !drops.mark(q) {
            // A Not-ECT packet in the L queue (only a classifier could put one there).
            return true;
        }
        false
    }
}

impl<P> QueueDiscipline<P> for DualPi2Queue<P> {
    /// Appendix A's `dualpi2_enqueue`: the buffer limit over both queues, then the classifier
    /// (ECT(1) and CE to the L queue, RFC 9331 section 5.1).
    fn enqueue(&mut self, now: Instant, q: Queued<P>, server_idle: bool, _drops: &mut Drops<P>) -> Result<(), (Queued<P>, DropCause)> {
        if !server_idle && !self.buffer.admits(self.l.bytes() + self.c.bytes(), self.l.len() + self.c.len(), q.len) {
            return Err((q, DropCause::BufferOverflow));
        }
        self.wake(now);
        if q.ecn.is_l4s() {
            self.l.push(q);
        } else {
            self.c.push(q);
        }
        Ok(())
    }

    /// Appendix A's `dualpi2_dequeue`: pick a queue, judge its head, drop and retry or send.
    fn dequeue(&mut self, now: Instant, drops: &mut Drops<P>) -> Option<Queued<P>> {
        self.wake(now);
        while let Some((mut q, in_l)) = self.pick() {
            if self.judge(now, &mut q, in_l, drops) {
                drops.drop(q, DropCause::Aqm);
                continue;
            }
            return Some(q);
        }
        None
    }

    fn next_timer(&self) -> Option<Instant> {
        (!self.resting).then_some(self.next_update)
    }

    fn on_timer(&mut self, now: Instant) {
        let before = (self.p, self.prevq);
        self.update(now);
        self.next_update += self.cfg.tupdate_ns;
        self.resting = (self.p, self.prevq) == before && self.l.is_empty() && self.c.is_empty();
    }

    fn backlog_bytes(&self) -> u64 {
        self.l.bytes() + self.c.bytes()
    }

    fn backlog_packets(&self) -> usize {
        self.l.len() + self.c.len()
    }

    fn base_prob(&self) -> Option<f64> {
        Some(self.p)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ecn::Ecn;
    use crate::outcome::LinkStats;
    use std::collections::VecDeque;

    const MS: Duration = Duration::from_millis(1);
    const US: Duration = Duration::from_micros(1);

    fn at(d: Duration) -> Instant {
        Instant::EPOCH + d
    }

    fn queue(cfg: DualPi2) -> DualPi2Queue<u32> {
        cfg.build(Buffer::Unlimited, 7)
    }

    fn pkt(id: u32, ecn: Ecn, arrived: Duration) -> Queued<u32> {
        Queued { packet: id, len: 1500, arrived_at: at(arrived), flow: 0, ecn, marked: false }
    }

    struct Sink {
        stats: LinkStats,
        out: VecDeque<crate::outcome::Dropped<u32>>,
    }

    impl Sink {
        fn new() -> Self {
            Sink { stats: LinkStats::default(), out: VecDeque::new() }
        }
        fn drops(&mut self) -> Drops<'_, u32> {
            Drops { stats: &mut self.stats, out: &mut self.out }
        }
    }

    #[test]
    fn the_classifier_sends_ect1_and_ce_to_the_l_queue() {
        let mut d = queue(DualPi2::default());
        let mut s = Sink::new();
        for (i, e) in [Ecn::NotEct, Ecn::Ect0, Ecn::Ect1, Ecn::Ce].into_iter().enumerate() {
            d.enqueue(at(MS), pkt(i as u32, e, MS), false, &mut s.drops()).unwrap();
        }
        assert_eq!((d.l.len(), d.c.len()), (2, 2));
        assert_eq!(d.l.front().unwrap().packet, 2);
        assert_eq!(d.c.front().unwrap().packet, 0);
    }

    #[test]
    fn the_pi_core_follows_appendix_a_and_the_coupling_is_k_p_and_p_squared() {
        let cfg = DualPi2::default();
        let mut d = queue(cfg);
        let mut s = Sink::new();
        // A classic packet waiting 25 ms at the first update: p' = alpha·(0.025 − 0.015) +
        // beta·(0.025 − 0) = 0.0016 + 0.08.
        d.enqueue(at(Duration::ZERO), pkt(0, Ecn::NotEct, Duration::ZERO), false, &mut s.drops()).unwrap();
        d.update(at(25 * MS));
        let p1 = 0.16 * 0.010 + 3.2 * 0.025;
        assert!((d.base_prob() - p1).abs() < 1e-12, "{}", d.base_prob());
        // The same delay 16 ms later (the head waited 41 ms): only the integral term moves.
        d.update(at(41 * MS));
        let p2 = p1 + 0.16 * (0.041 - 0.015) + 3.2 * (0.041 - 0.025);
        assert!((d.base_prob() - p2).abs() < 1e-12);
        assert!((d.p_cl() - 2.0 * p2).abs() < 1e-12, "p_CL = k·p'");
        assert!((d.p_c() - p2 * p2).abs() < 1e-12, "p_C = p'²");
        // The link series reads p' through the trait.
        assert_eq!(QueueDiscipline::<u32>::base_prob(&d), Some(p2));
        // An empty classic queue below target brings p' down, never below 0.
        d.c.pop();
        for i in 0..100 {
            d.update(at((57 + 16 * i) * MS));
        }
        assert_eq!(d.base_prob(), 0.0);
        // k = 4 couples four times as hard.
        let mut d4 = queue(DualPi2 { k: 4.0, ..cfg });
        d4.p = 0.1;
        assert!((d4.p_cl() - 0.4).abs() < 1e-12 && (d4.p_c() - 0.01).abs() < 1e-12);
    }

    /// Dequeues `n` packets of `ecn` queued behind a deep backlog with `p'` held at `p`, and
    /// returns the shares marked and dropped.
    fn shares(p: f64, ecn: Ecn, n: u32) -> (f64, f64) {
        let mut d = queue(DualPi2 { step_ns: Duration::from_secs(10), ..DualPi2::default() });
        let mut s = Sink::new();
        for i in 0..n {
            d.enqueue(at(Duration::ZERO), pkt(i, ecn, Duration::ZERO), false, &mut s.drops()).unwrap();
        }
        d.p = p;
        let mut marked = 0;
        while let Some(q) = d.dequeue(at(MS), &mut s.drops()) {
            marked += u32::from(q.ecn == Ecn::Ce && ecn != Ecn::Ce);
        }
        (f64::from(marked) / f64::from(n), s.stats.drops_aqm as f64 / f64::from(n))
    }

    #[test]
    fn marking_and_dropping_rates_follow_the_coupled_probabilities() {
        let n = 40_000;
        let close = |got: f64, want: f64| (got - want).abs() < 0.01 + want * 0.05;
        for p in [0.05, 0.2, 0.4] {
            // Classic Not-ECT: dropped with p'².
            let (m, dr) = shares(p, Ecn::NotEct, n);
            assert!(m == 0.0 && close(dr, p * p), "p'={p}: drop {dr}");
            // Classic ECT(0): marked with p'² instead.
            let (m, dr) = shares(p, Ecn::Ect0, n);
            assert!(dr == 0.0 && close(m, p * p), "p'={p}: mark {m}");
            // L4S: marked with k·p'.
            let (m, dr) = shares(p, Ecn::Ect1, n);
            assert!(dr == 0.0 && close(m, 2.0 * p), "p'={p}: L mark {m}");
        }
        // Overload (k·p' > 1): classic ECN packets are dropped with p'², L packets dropped
        // with p'² and the rest marked.
        let p = 0.7;
        let (m, dr) = shares(p, Ecn::Ect0, n);
        assert!(m == 0.0 && close(dr, p * p), "overload classic: {m} {dr}");
        let (m, dr) = shares(p, Ecn::Ect1, n);
        assert!(close(dr, p * p) && close(m, 1.0 - p * p), "overload L: {m} {dr}");
    }

    #[test]
    fn the_step_marks_l_packets_that_waited_past_the_threshold_only() {
        let mut d = queue(DualPi2::default());
        let mut s = Sink::new();
        // p' = 0: only the step acts. Two L packets arriving 1.5 ms apart, dequeued at 2 ms:
        // the first waited 2 ms (> 1 ms), the second 0.5 ms.
        d.enqueue(at(Duration::ZERO), pkt(0, Ecn::Ect1, Duration::ZERO), false, &mut s.drops()).unwrap();
        d.enqueue(at(1500 * US), pkt(1, Ecn::Ect1, 1500 * US), false, &mut s.drops()).unwrap();
        d.enqueue(at(1500 * US), pkt(2, Ecn::Ect0, Duration::ZERO), false, &mut s.drops()).unwrap();
        let mut out: Vec<_> = (0..3).map(|_| d.dequeue(at(2 * MS), &mut s.drops()).unwrap()).map(|q| (q.packet, q.ecn)).collect();
        out.sort_by_key(|o| o.0);
        // A classic packet is never step-marked, however long it waited.
        assert_eq!(out, [(0, Ecn::Ce), (1, Ecn::Ect1), (2, Ecn::Ect0)]);
        assert_eq!(s.stats.ce_marks, 1);
    }

    #[test]
    fn classic_protection_gives_the_classic_queue_its_share() {
        let mut d = queue(DualPi2 { step_ns: Duration::from_secs(10), ..DualPi2::default() });
        let mut s = Sink::new();
        for i in 0..2000 {
            d.enqueue(at(Duration::ZERO), pkt(i, Ecn::Ect1, Duration::ZERO), false, &mut s.drops()).unwrap();
            d.enqueue(at(Duration::ZERO), pkt(10_000 + i, Ecn::NotEct, Duration::ZERO), false, &mut s.drops()).unwrap();
        }
        let mut classic = 0;
        for _ in 0..1000 {
            classic += u32::from(d.dequeue(at(MS), &mut s.drops()).unwrap().packet >= 10_000);
        }
        // 10 % of the bytes while both are backlogged.
        assert!((95..=105).contains(&classic), "{classic}");
    }

    #[test]
    fn parameters_parse_and_bad_ones_are_refused() {
        use crate::aqm::Aqm;
        assert_eq!("dualpi2".parse(), Ok(Aqm::DualPi2(DualPi2::default())));
        assert_eq!("dualpi2:k=4,step=2ms".parse(), Ok(Aqm::DualPi2(DualPi2 { k: 4.0, step_ns: 2 * MS, ..DualPi2::default() })));
        for bad in ["dualpi2:k=0.5", "dualpi2:tupdate=0", "dualpi2:c_protection=101", "dualpi2:colour=red", "dualpi2:drop_overload=maybe"] {
            let e = bad.parse::<Aqm>().unwrap_err().to_string();
            assert!(e.starts_with("dualpi2[:target=15ms"), "{bad}: {e}");
        }
        assert!(Aqm::DualPi2(DualPi2::default()).marks());
    }
}
