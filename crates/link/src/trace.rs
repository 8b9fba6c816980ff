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

use crate::time::Instant;

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
#[derive(Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
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
    pub(crate) fn first_after(&self, t: Instant) -> u64 {
        let n = self.times_ms.len() as u64;
        let m = t.as_nanos() / NS_PER_MS;
        let (lap, r) = (m / self.period_ms, m % self.period_ms);
        // Whole milliseconds suffice: an opportunity at ms x is after t
        // exactly when x > floor(t / 1 ms).
        let i = self.times_ms.partition_point(|&x| x <= r) as u64;
        lap * n + i
    }

    /// Time of the opportunity with global index `j`; saturates at
    /// `Instant::MAX`, which the server reads as "never".
    pub(crate) fn time_of(&self, j: u64) -> Instant {
        let n = self.times_ms.len() as u64;
        let ms = u128::from(j / n) * u128::from(self.period_ms) + u128::from(self.times_ms[(j % n) as usize]);
        u64::try_from(ms * u128::from(NS_PER_MS)).map_or(Instant::MAX, Instant::from_nanos)
    }
}

#[cfg(test)]
mod tests {
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
        let times: Vec<_> = (0..9).map(|j| t.time_of(j).as_nanos() / NS_PER_MS).collect();
        assert_eq!(times, vec![0, 2, 2, 5, 5, 7, 7, 10, 10]);
        let at = Instant::from_nanos;
        assert_eq!(t.first_after(at(0)), 1);
        assert_eq!(t.first_after(at(NS_PER_MS - 1)), 1);
        assert_eq!(t.first_after(at(2 * NS_PER_MS - 1)), 1);
        assert_eq!(t.first_after(at(2 * NS_PER_MS)), 3);
        assert_eq!(t.first_after(at(5 * NS_PER_MS)), 5);
        assert_eq!(t.first_after(at(1_000_000 * 5 * NS_PER_MS + 1)), 4_000_000 + 1);
    }

    #[test]
    fn serde_omits_the_timestamps() {
        // One opportunity per ms for 10 s (what `ccbench trace constant --rate 12mbit` prints).
        let text: String = (1..=10_000).map(|ms| format!("{ms}\n")).collect();
        let t = TraceRate::parse("const.trace", &text).expect("valid");
        assert_eq!(t.opportunities(), 10_000);
        let json = serde_json::to_string(&t).expect("serializes");
        assert_eq!(json, r#"{"name":"const.trace","period_ms":10000,"opportunities":10000}"#);
        let back: TraceRate = serde_json::from_str(&json).expect("deserializes");
        assert!(!back.is_loaded());
        assert_eq!(back.period_ms(), 10_000);
    }

    #[test]
    fn the_generators_use_the_same_opportunity_size() {
        assert_eq!(ccbench_tracegen::OPPORTUNITY_BYTES, OPPORTUNITY_BYTES);
    }
}
