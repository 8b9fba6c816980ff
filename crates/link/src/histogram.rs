use serde::{Deserialize, Serialize};

use crate::time::Duration;

// Layout (all in ns):
// - bucket 0 holds exactly 0 (an idle link produces many zero queue delays);
// - buckets 1..=32 split [1, 1024) linearly in 32-ns steps;
// - then each octave [2^e, 2^(e+1)) for e in 10..=36 is split into 32 equal
//   sub-buckets, i.e. 1.6 %-3.1 % relative width, up to 2^37 ns (~137 s);
// - the last bucket catches everything above.
const SUB_BITS: u32 = 5;
const SUB: usize = 1 << SUB_BITS;
const MIN_EXP: u32 = 10;
const MAX_EXP: u32 = 36;
const LINEAR_LIMIT: u64 = 1 << MIN_EXP;
const FIRST_LOG: usize = 1 + SUB;
const OVERFLOW: usize = FIRST_LOG + (MAX_EXP - MIN_EXP + 1) as usize * SUB;
const NUM_BUCKETS: usize = OVERFLOW + 1;

fn bucket_index(v: u64) -> usize {
    if v == 0 {
        0
    } else if v < LINEAR_LIMIT {
        1 + (v >> SUB_BITS) as usize
    } else {
        let e = 63 - v.leading_zeros();
        if e > MAX_EXP {
            return OVERFLOW;
        }
        let sub = (v >> (e - SUB_BITS)) as usize - SUB;
        FIRST_LOG + (e - MIN_EXP) as usize * SUB + sub
    }
}

/// `[lo, hi)` of bucket `i`.
fn bucket_bounds(i: usize) -> (u64, u64) {
    if i == 0 {
        (0, 1)
    } else if i < FIRST_LOG {
        let lo = ((i - 1) as u64) << SUB_BITS;
        (lo.max(1), lo + SUB as u64)
    } else if i < OVERFLOW {
        let j = i - FIRST_LOG;
        let e = MIN_EXP + (j / SUB) as u32;
        let shift = e - SUB_BITS;
        let lo = ((SUB + j % SUB) as u64) << shift;
        (lo, lo + (1u64 << shift))
    } else {
        (1u64 << (MAX_EXP + 1), u64::MAX)
    }
}

/// Fixed-size log-linear histogram of delays (spans, kept in nanoseconds).
///
/// Quantiles are reported as bucket midpoints clamped to the observed
/// min/max, so the relative error is at most ~1.6 % above 1 µs and at most
/// 16 ns below it. Serialized sparsely (only non-empty buckets, keyed by their
/// lower bound in ns) so that other tools can read it without knowing the
/// layout.
#[derive(Clone, Debug, PartialEq)]
pub struct DelayHistogram {
    buckets: Vec<u64>,
    count: u64,
    /// Saturating; only overflows after ~584 years of accumulated delay.
    sum_ns: u64,
    min_ns: u64,
    max_ns: u64,
}

impl Default for DelayHistogram {
    fn default() -> Self {
        DelayHistogram { buckets: vec![0; NUM_BUCKETS], count: 0, sum_ns: 0, min_ns: u64::MAX, max_ns: 0 }
    }
}

impl DelayHistogram {
    pub fn new() -> Self {
        Self::default()
    }

    pub fn record(&mut self, d: Duration) {
        let ns = d.as_nanos();
        self.buckets[bucket_index(ns)] += 1;
        self.count += 1;
        self.sum_ns = self.sum_ns.saturating_add(ns);
        self.min_ns = self.min_ns.min(ns);
        self.max_ns = self.max_ns.max(ns);
    }

    pub fn count(&self) -> u64 {
        self.count
    }

    /// 0 when empty.
    pub fn min(&self) -> Duration {
        if self.count == 0 {
            Duration::ZERO
        } else {
            Duration::from_nanos(self.min_ns)
        }
    }

    /// 0 when empty.
    pub fn max(&self) -> Duration {
        Duration::from_nanos(self.max_ns)
    }

    /// In nanoseconds (not rounded); 0.0 when empty.
    pub fn mean_ns(&self) -> f64 {
        if self.count == 0 {
            0.0
        } else {
            self.sum_ns as f64 / self.count as f64
        }
    }

    /// Value at quantile `q` (clamped to [0, 1]; NaN counts as 0) using the
    /// nearest-rank definition; 0 when empty. `quantile(1.0)` is the exact
    /// maximum and `quantile(0.0)` the exact minimum.
    pub fn quantile(&self, q: f64) -> Duration {
        Duration::from_nanos(self.quantile_ns(q))
    }

    fn quantile_ns(&self, q: f64) -> u64 {
        if self.count == 0 {
            return 0;
        }
        let q = if q.is_nan() { 0.0 } else { q.clamp(0.0, 1.0) };
        let rank = ((q * self.count as f64).ceil() as u64).clamp(1, self.count);
        // The extreme ranks are known exactly; no need to approximate them.
        if rank == 1 {
            return self.min_ns;
        }
        if rank == self.count {
            return self.max_ns;
        }
        let mut seen = 0u64;
        for (i, &c) in self.buckets.iter().enumerate() {
            seen += c;
            if seen >= rank {
                let (lo, hi) = bucket_bounds(i);
                let mid = lo + (hi - lo) / 2;
                return mid.clamp(self.min_ns, self.max_ns);
            }
        }
        self.max_ns
    }

    pub fn merge(&mut self, other: &DelayHistogram) {
        for (a, b) in self.buckets.iter_mut().zip(&other.buckets) {
            *a += *b;
        }
        self.count += other.count;
        self.sum_ns = self.sum_ns.saturating_add(other.sum_ns);
        self.min_ns = self.min_ns.min(other.min_ns);
        self.max_ns = self.max_ns.max(other.max_ns);
    }
}

#[derive(Serialize, Deserialize, schemars::JsonSchema)]
struct HistogramRepr {
    count: u64,
    sum_ns: u64,
    min_ns: u64,
    max_ns: u64,
    /// `(bucket lower bound in ns, count)` for every non-empty bucket.
    buckets: Vec<(u64, u64)>,
}

impl From<&DelayHistogram> for HistogramRepr {
    fn from(h: &DelayHistogram) -> Self {
        HistogramRepr {
            count: h.count,
            sum_ns: h.sum_ns,
            min_ns: h.min().as_nanos(),
            max_ns: h.max_ns,
            buckets: h.buckets.iter().enumerate().filter(|(_, &c)| c > 0).map(|(i, &c)| (bucket_bounds(i).0, c)).collect(),
        }
    }
}

impl TryFrom<HistogramRepr> for DelayHistogram {
    type Error = String;

    fn try_from(r: HistogramRepr) -> Result<Self, String> {
        let mut h = DelayHistogram::default();
        let mut total = 0u64;
        for (lo, c) in r.buckets {
            let i = bucket_index(lo);
            if bucket_bounds(i).0 != lo {
                return Err(format!("{lo} ns is not a histogram bucket boundary"));
            }
            h.buckets[i] = h.buckets[i].saturating_add(c);
            total = total.saturating_add(c);
        }
        if total != r.count {
            return Err(format!("histogram bucket counts sum to {total}, but count is {}", r.count));
        }
        h.count = r.count;
        h.sum_ns = r.sum_ns;
        h.max_ns = r.max_ns;
        h.min_ns = if r.count == 0 { u64::MAX } else { r.min_ns };
        Ok(h)
    }
}

impl Serialize for DelayHistogram {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        HistogramRepr::from(self).serialize(s)
    }
}

/// Written as [`HistogramRepr`], so its schema is that one's.
impl schemars::JsonSchema for DelayHistogram {
    fn schema_name() -> std::borrow::Cow<'static, str> {
        "DelayHistogram".into()
    }
    fn json_schema(g: &mut schemars::SchemaGenerator) -> schemars::Schema {
        HistogramRepr::json_schema(g)
    }
}

impl<'de> Deserialize<'de> for DelayHistogram {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let repr = HistogramRepr::deserialize(d)?;
        DelayHistogram::try_from(repr).map_err(serde::de::Error::custom)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ns(v: u64) -> Duration {
        Duration::from_nanos(v)
    }

    #[test]
    fn bucket_layout_is_consistent() {
        let mut prev_hi = 0;
        for i in 0..NUM_BUCKETS {
            let (lo, hi) = bucket_bounds(i);
            assert_eq!(lo, prev_hi, "bucket {i} not contiguous");
            assert!(hi > lo);
            assert_eq!(bucket_index(lo), i);
            assert_eq!(bucket_index(hi - 1), i);
            if lo >= LINEAR_LIMIT && i < OVERFLOW {
                let rel = (hi - lo) as f64 / lo as f64;
                assert!(rel <= 1.0 / 32.0 + 1e-12, "bucket {i} width {rel}");
            }
            prev_hi = hi;
        }
        assert_eq!(prev_hi, u64::MAX);
        assert_eq!(bucket_index(u64::MAX), OVERFLOW);
        // Must reach ~100 s with fine buckets.
        assert!(bucket_bounds(OVERFLOW).0 >= 100_000_000_000);
    }

    #[test]
    fn empty_histogram() {
        let h = DelayHistogram::new();
        assert_eq!(h.count(), 0);
        assert_eq!(h.quantile(0.5), Duration::ZERO);
        assert_eq!(h.mean_ns(), 0.0);
        assert_eq!(h.max(), Duration::ZERO);
        assert_eq!(h.min(), Duration::ZERO);
    }

    #[test]
    fn quantiles_are_accurate() {
        let mut h = DelayHistogram::new();
        // 1 µs .. 10 s, one value per step of 10 µs.
        let values: Vec<u64> = (0..1_000_000u64).map(|i| 1_000 + i * 10_000).collect();
        for &v in &values {
            h.record(ns(v));
        }
        for q in [0.01, 0.1, 0.5, 0.9, 0.99, 0.999] {
            let exact = values[((q * values.len() as f64).ceil() as usize) - 1] as f64;
            let got = h.quantile(q).as_nanos() as f64;
            assert!(((got - exact) / exact).abs() <= 0.016, "q={q}: got {got}, exact {exact}");
        }
        assert_eq!(h.quantile(1.0), ns(*values.last().unwrap()));
        assert_eq!(h.quantile(0.0), ns(values[0]));
        assert_eq!(h.max(), ns(*values.last().unwrap()));
        let mean = values.iter().sum::<u64>() as f64 / values.len() as f64;
        assert!((h.mean_ns() - mean).abs() < 1e-6 * mean);
    }

    #[test]
    fn zero_bucket_and_overflow() {
        let mut h = DelayHistogram::new();
        for _ in 0..90 {
            h.record(Duration::ZERO);
        }
        for _ in 0..10 {
            h.record(ns(500_000_000_000));
        }
        assert_eq!(h.quantile(0.5), Duration::ZERO);
        assert_eq!(h.quantile(0.9), Duration::ZERO);
        assert_eq!(h.quantile(0.95), ns(500_000_000_000));
    }

    #[test]
    fn merge_equals_combined_recording() {
        let mut a = DelayHistogram::new();
        let mut b = DelayHistogram::new();
        let mut both = DelayHistogram::new();
        for i in 0..5000u64 {
            let v = i * i * 37;
            if i % 3 == 0 {
                a.record(ns(v));
            } else {
                b.record(ns(v));
            }
            both.record(ns(v));
        }
        a.merge(&b);
        assert_eq!(a, both);
        let mut empty = DelayHistogram::new();
        empty.merge(&DelayHistogram::new());
        assert_eq!(empty, DelayHistogram::new());
    }

    #[test]
    fn repr_round_trips_and_is_sparse() {
        let mut h = DelayHistogram::new();
        for v in [0, 0, 5, 999, 1_000, 1_500_000, 2_000_000_000, u64::MAX] {
            h.record(ns(v));
        }
        let repr = HistogramRepr::from(&h);
        // 999 and 1000 share the [992, 1024) bucket.
        assert_eq!(repr.buckets.len(), 6);
        assert_eq!(repr.buckets[0], (0, 2));
        let back = DelayHistogram::try_from(repr).expect("valid repr");
        assert_eq!(back, h);

        let empty = DelayHistogram::new();
        let back = DelayHistogram::try_from(HistogramRepr::from(&empty)).expect("valid repr");
        assert_eq!(back, empty);

        let bad = HistogramRepr { count: 1, sum_ns: 3, min_ns: 3, max_ns: 3, buckets: vec![(3, 1)] };
        assert!(DelayHistogram::try_from(bad).is_err());
        let inconsistent = HistogramRepr { count: 2, sum_ns: 0, min_ns: 0, max_ns: 0, buckets: vec![(0, 1)] };
        assert!(DelayHistogram::try_from(inconsistent).is_err());
    }
}
