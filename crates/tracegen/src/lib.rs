//! Generators of Mahimahi delivery-opportunity traces (what `ccbench trace` prints):
//! constant, step and a cellular-like random walk. Text in, text out: the link model parses
//! the result (`ccbench_link::TraceRate::parse`), and nothing here depends on it.
//!
//! Generators of synthetic trace text, for shipping example traces.
//!
//! Every generator places opportunities with an integer bit accumulator per
//! millisecond (no drift), and always puts an opportunity in the final
//! millisecond so that the loop period is exactly the requested duration.
//! A Mahimahi trace cannot end in silence, which is why.

use std::fmt::Write as _;

use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use rand_distr::StandardNormal;

/// Bytes of credit one delivery opportunity carries (Mahimahi's MTU; the link model's
/// `ccbench_link::trace::OPPORTUNITY_BYTES`).
pub const OPPORTUNITY_BYTES: u32 = 1500;

/// Milli-bits per opportunity, so that per-ms accrual of `bps` milli-bits
/// stays an integer for every rate.
const OPP_MILLIBITS: u64 = OPPORTUNITY_BYTES as u64 * 8 * 1000;

struct Emitter {
    out: String,
    acc: u64,
    ms: u64,
    last_emitted: u64,
}

impl Emitter {
    fn new() -> Self {
        Emitter { out: String::new(), acc: 0, ms: 0, last_emitted: 0 }
    }

    fn emit(&mut self) {
        let _ = writeln!(self.out, "{}", self.ms);
        self.last_emitted = self.ms;
    }

    fn run(&mut self, bps: u64, duration_ms: u64) {
        for _ in 0..duration_ms {
            self.ms += 1;
            self.acc += bps;
            while self.acc >= OPP_MILLIBITS {
                self.acc -= OPP_MILLIBITS;
                self.emit();
            }
        }
    }

    fn finish(mut self) -> String {
        if self.ms > 0 && self.last_emitted != self.ms {
            self.emit();
        }
        self.out
    }
}

/// A constant `bps` for `period_ms` (then looping).
pub fn constant(bps: u64, period_ms: u64) -> String {
    step(&[(bps, period_ms)])
}

/// Piecewise-constant rate: each `(bps, duration_ms)` segment in turn,
/// then the whole sequence loops.
pub fn step(segments: &[(u64, u64)]) -> String {
    let mut e = Emitter::new();
    for &(bps, ms) in segments {
        e.run(bps, ms);
    }
    e.finish()
}

/// Parameters of a mean-reverting random walk of the log-rate, which
/// gives the slowly wandering, occasionally collapsing capacity typical
/// of cellular links.
#[derive(Clone, Debug, PartialEq)]
pub struct RandomWalk {
    pub mean_bps: u64,
    pub period_ms: u64,
    /// The rate is held constant for `step_ms` between random moves.
    pub step_ms: u64,
    /// Standard deviation of one step of the log-rate.
    pub sigma: f64,
    /// Fraction of the distance to the log-mean recovered per step.
    pub reversion: f64,
    pub min_bps: u64,
    pub max_bps: u64,
    /// Probability per step of entering an outage (zero rate).
    pub outage_prob: f64,
    /// Outage length in steps.
    pub outage_steps: u64,
}

impl RandomWalk {
    /// A cellular-like preset: 20 ms steps, rate between 1/20 and 4x
    /// the mean, a 200 ms outage about every 10 s.
    pub fn cellular(mean_bps: u64, period_ms: u64) -> Self {
        RandomWalk {
            mean_bps,
            period_ms,
            step_ms: 20,
            sigma: 0.15,
            reversion: 0.05,
            min_bps: mean_bps / 20,
            max_bps: mean_bps.saturating_mul(4),
            outage_prob: 0.002,
            outage_steps: 10,
        }
    }
}

/// Trace text of a seeded random walk; the same seed gives the same text.
pub fn random_walk(p: &RandomWalk, seed: u64) -> String {
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let mut e = Emitter::new();
    let log_mean = (p.mean_bps.max(1) as f64).ln();
    let (lo, hi) = (p.min_bps as f64, p.max_bps.max(p.min_bps) as f64);
    let mut x = log_mean;
    let mut outage_left = 0;
    let step = p.step_ms.max(1);
    let mut t = 0;
    while t < p.period_ms {
        let ms = step.min(p.period_ms - t);
        if outage_left == 0 && rng.gen::<f64>() < p.outage_prob {
            outage_left = p.outage_steps;
        }
        let bps = if outage_left > 0 {
            outage_left -= 1;
            0
        } else {
            x.exp().clamp(lo, hi) as u64
        };
        e.run(bps, ms);
        x += p.reversion * (log_mean - x) + p.sigma * rng.sample::<f64, _>(StandardNormal);
        t += ms;
    }
    e.finish()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// What the link model's parser checks of a trace: non-decreasing integer milliseconds,
    /// one opportunity per line, looping with the last timestamp as the period.
    struct Parsed {
        times: Vec<u64>,
    }

    impl Parsed {
        fn opportunities(&self) -> usize {
            self.times.len()
        }
        fn period_ms(&self) -> u64 {
            *self.times.last().expect("not empty")
        }
        fn mean_bps(&self) -> f64 {
            self.times.len() as f64 * f64::from(OPPORTUNITY_BYTES) * 8.0 * 1000.0 / self.period_ms() as f64
        }
    }

    fn parse(text: &str) -> Parsed {
        let times: Vec<u64> = text.lines().map(|l| l.parse().expect("integer ms")).collect();
        assert!(times.windows(2).all(|w| w[0] <= w[1]), "non-decreasing");
        Parsed { times }
    }

    #[test]
    fn constant_generator_is_exact() {
        assert_eq!(constant(12_000_000, 3), "1\n2\n3\n");
        assert_eq!(constant(24_000_000, 2), "1\n1\n2\n2\n");
        // 6 Mbit/s: one opportunity every 2 ms.
        assert_eq!(constant(6_000_000, 4), "2\n4\n");
        // 10 Mbit/s over 6 ms = 5 opportunities (60 kbit).
        let t = parse(&constant(10_000_000, 6));
        assert_eq!((t.opportunities(), t.period_ms()), (5, 6));
        // A rate too slow for one opportunity still yields a loopable trace.
        assert_eq!(constant(1_000, 5), "5\n");
        let t = parse(&constant(7_777_777, 60_000));
        assert!((t.mean_bps() - 7_777_777.0).abs() / 7_777_777.0 < 1e-4);
    }

    #[test]
    fn step_generator_changes_rate_at_the_boundary() {
        let text = step(&[(24_000_000, 2), (12_000_000, 2)]);
        assert_eq!(text, "1\n1\n2\n2\n3\n4\n");
        let t = parse(&step(&[(48_000_000, 1000), (12_000_000, 1000)]));
        assert_eq!((t.opportunities(), t.period_ms()), (5000, 2000));
    }

    #[test]
    fn random_walk_is_seeded_and_near_its_mean() {
        let p = RandomWalk::cellular(10_000_000, 600_000);
        let a = random_walk(&p, 1);
        assert_eq!(a, random_walk(&p, 1));
        assert_ne!(a, random_walk(&p, 2));
        let t = parse(&a);
        assert_eq!(t.period_ms(), 600_000);
        // A log-normal walk has mean above its median; stay within a factor.
        let m = t.mean_bps();
        assert!(m > 5e6 && m < 25e6, "mean {m}");
        // There must be both fast and slow stretches (and silences).
        let times: Vec<u64> = a.lines().map(|l| l.parse().expect("int")).collect();
        let max_gap = times.windows(2).map(|w| w[1] - w[0]).max().expect("many");
        assert!(max_gap >= 100, "max gap {max_gap} ms");
    }
}
