//! Trace-driven link capacity in the Mahimahi format.
//!
//! A trace lists delivery opportunities, one per line, as integer
//! millisecond timestamps; each opportunity can carry [`OPPORTUNITY_BYTES`].
//! A timestamp repeated `k` times is `k` opportunities in that millisecond.
//! The trace loops with a period equal to its last timestamp, so opportunity
//! `i` of loop `k` happens at `k * period + t_i` ms on the link clock.

use std::fmt;
use std::sync::Arc;

use serde::{Deserialize, Serialize};

use crate::Nanos;

/// Bytes of credit one delivery opportunity carries (Mahimahi's MTU).
pub const OPPORTUNITY_BYTES: u32 = 1500;

const NS_PER_MS: u64 = 1_000_000;

/// A parsed delivery-opportunity trace.
///
/// Serializes as its name, period and opportunity count only: a report must
/// not embed thousands of timestamps. Deserializing therefore yields an
/// *unloaded* trace ([`TraceRate::is_loaded`] is false) that stalls the link
/// and is rejected by [`crate::DirectionConfig::validate`]; re-parse the
/// source named by [`TraceRate::name`] to use it again.
#[derive(Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct TraceRate {
    name: String,
    period_ms: u64,
    opportunities: usize,
    /// Sorted millisecond timestamps; the last one equals `period_ms`.
    #[serde(skip)]
    times_ms: Arc<[u64]>,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub enum TraceError {
    /// No timestamp at all (blank lines are ignored).
    Empty,
    /// Lines are 1-based.
    NotANumber {
        line: usize,
        text: String,
    },
    Decreasing {
        line: usize,
        value: u64,
        previous: u64,
    },
    /// The last timestamp is 0, so the trace would loop with period 0.
    ZeroPeriod {
        line: usize,
    },
}

impl fmt::Display for TraceError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            TraceError::Empty => write!(f, "trace has no delivery opportunities"),
            TraceError::NotANumber { line, text } => {
                write!(f, "line {line}: expected a millisecond timestamp, got {text:?}")
            }
            TraceError::Decreasing { line, value, previous } => write!(f, "line {line}: timestamp {value} is smaller than the previous one ({previous})"),
            TraceError::ZeroPeriod { line } => write!(f, "line {line}: the last timestamp must be greater than 0 (it is the loop period)"),
        }
    }
}

impl std::error::Error for TraceError {}

impl fmt::Debug for TraceRate {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("TraceRate")
            .field("name", &self.name)
            .field("period_ms", &self.period_ms)
            .field("opportunities", &self.opportunities)
            .field("loaded", &self.is_loaded())
            .finish()
    }
}

impl TraceRate {
    /// Parses Mahimahi trace text. `name` is only recorded (e.g. the path),
    /// so that reports say which trace was used.
    pub fn parse(name: &str, text: &str) -> Result<TraceRate, TraceError> {
        let mut times = Vec::new();
        let mut last_line = 0;
        for (i, raw) in text.lines().enumerate() {
            let line = i + 1;
            let s = raw.trim();
            if s.is_empty() {
                continue;
            }
            let value: u64 = s.parse().map_err(|_| TraceError::NotANumber { line, text: s.to_string() })?;
            if let Some(&previous) = times.last() {
                if value < previous {
                    return Err(TraceError::Decreasing { line, value, previous });
                }
            }
            times.push(value);
            last_line = line;
        }
        let period_ms = *times.last().ok_or(TraceError::Empty)?;
        if period_ms == 0 {
            return Err(TraceError::ZeroPeriod { line: last_line });
        }
        Ok(TraceRate { name: name.to_string(), period_ms, opportunities: times.len(), times_ms: times.into() })
    }

    pub fn name(&self) -> &str {
        &self.name
    }

    /// Loop period in milliseconds (the last timestamp).
    pub fn period_ms(&self) -> u64 {
        self.period_ms
    }

    /// Delivery opportunities per period.
    pub fn opportunities(&self) -> usize {
        self.opportunities
    }

    /// False for a trace that came out of deserialization without its
    /// timestamps.
    pub fn is_loaded(&self) -> bool {
        !self.times_ms.is_empty()
    }

    /// Long-run capacity in bit/s.
    pub fn mean_bps(&self) -> f64 {
        self.opportunities as f64 * f64::from(OPPORTUNITY_BYTES) * 8.0 * 1000.0 / self.period_ms as f64
    }

    /// Global index of the first opportunity strictly after `t`. Opportunity
    /// times are non-decreasing in the index because the timestamps are
    /// sorted and the last one equals the period.
    pub(crate) fn first_after(&self, t: Nanos) -> u64 {
        let n = self.times_ms.len() as u64;
        let m = t / NS_PER_MS;
        let (lap, r) = (m / self.period_ms, m % self.period_ms);
        // Whole milliseconds suffice: an opportunity at ms x is after t
        // exactly when x > floor(t / 1 ms).
        let i = self.times_ms.partition_point(|&x| x <= r) as u64;
        lap * n + i
    }

    /// Time of the opportunity with global index `j`; saturates at
    /// `Nanos::MAX`, which the server reads as "never".
    pub(crate) fn time_of(&self, j: u64) -> Nanos {
        let n = self.times_ms.len() as u64;
        let ms = u128::from(j / n) * u128::from(self.period_ms) + u128::from(self.times_ms[(j % n) as usize]);
        u64::try_from(ms * u128::from(NS_PER_MS)).unwrap_or(Nanos::MAX)
    }
}

/// Generators of synthetic trace text, for shipping example traces.
///
/// Every generator places opportunities with an integer bit accumulator per
/// millisecond (no drift), and always puts an opportunity in the final
/// millisecond so that the loop period is exactly the requested duration.
/// A Mahimahi trace cannot end in silence, which is why.
pub mod generate {
    use std::fmt::Write as _;

    use rand::{Rng, SeedableRng};
    use rand_chacha::ChaCha8Rng;

    use super::OPPORTUNITY_BYTES;

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

    /// Standard normal sample (Box–Muller, one output per call).
    pub(crate) fn std_normal(rng: &mut ChaCha8Rng) -> f64 {
        // 1 - [0, 1) is (0, 1], keeping ln away from 0.
        let u1 = 1.0 - rng.gen::<f64>();
        let u2 = rng.gen::<f64>();
        (-2.0 * u1.ln()).sqrt() * (std::f64::consts::TAU * u2).cos()
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
            x += p.reversion * (log_mean - x) + p.sigma * std_normal(&mut rng);
            t += ms;
        }
        e.finish()
    }
}

#[cfg(test)]
mod tests {
    use super::generate::*;
    use super::*;

    #[test]
    fn parse_accepts_repeats_and_blank_lines() {
        let t = TraceRate::parse("x", "1\n1\n\n3\n5\n").expect("valid");
        assert_eq!((t.period_ms(), t.opportunities()), (5, 4));
        assert!(t.is_loaded());
        assert_eq!(t.name(), "x");
        // 4 * 12000 bit per 5 ms.
        assert!((t.mean_bps() - 9_600_000.0).abs() < 1e-6);
    }

    #[test]
    fn parse_errors_name_the_line() {
        assert_eq!(TraceRate::parse("x", ""), Err(TraceError::Empty));
        assert_eq!(TraceRate::parse("x", "\n \n"), Err(TraceError::Empty));
        assert_eq!(TraceRate::parse("x", "1\n2\nabc\n"), Err(TraceError::NotANumber { line: 3, text: "abc".into() }));
        assert_eq!(TraceRate::parse("x", "1\n-2\n"), Err(TraceError::NotANumber { line: 2, text: "-2".into() }));
        assert_eq!(TraceRate::parse("x", "1\n5\n\n4\n"), Err(TraceError::Decreasing { line: 4, value: 4, previous: 5 }));
        assert_eq!(TraceRate::parse("x", "0\n0\n"), Err(TraceError::ZeroPeriod { line: 2 }));
        let msg = TraceError::Decreasing { line: 4, value: 4, previous: 5 }.to_string();
        assert!(msg.starts_with("line 4:"), "{msg}");
    }

    #[test]
    fn opportunity_indexing_loops_exactly() {
        let t = TraceRate::parse("x", "0\n2\n2\n5\n").expect("valid");
        // Loop k: k*5 + {0, 2, 2, 5}.
        let times: Vec<_> = (0..9).map(|j| t.time_of(j) / NS_PER_MS).collect();
        assert_eq!(times, vec![0, 2, 2, 5, 5, 7, 7, 10, 10]);
        assert_eq!(t.first_after(0), 1);
        assert_eq!(t.first_after(NS_PER_MS - 1), 1);
        assert_eq!(t.first_after(2 * NS_PER_MS - 1), 1);
        assert_eq!(t.first_after(2 * NS_PER_MS), 3);
        assert_eq!(t.first_after(5 * NS_PER_MS), 5);
        assert_eq!(t.first_after(1_000_000 * 5 * NS_PER_MS + 1), 4_000_000 + 1);
    }

    #[test]
    fn serde_omits_the_timestamps() {
        let text = constant(12_000_000, 10_000);
        let t = TraceRate::parse("const.trace", &text).expect("valid");
        assert_eq!(t.opportunities(), 10_000);
        let json = serde_json::to_string(&t).expect("serializes");
        assert_eq!(json, r#"{"name":"const.trace","period_ms":10000,"opportunities":10000}"#);
        let back: TraceRate = serde_json::from_str(&json).expect("deserializes");
        assert!(!back.is_loaded());
        assert_eq!(back.period_ms(), 10_000);
    }

    fn parse(text: &str) -> TraceRate {
        TraceRate::parse("gen", text).expect("generated trace parses")
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
