//! Descriptive statistics.

use serde::{Deserialize, Serialize};

use crate::{all_finite_nonempty, sorted_copy};

/// Descriptive statistics of one sample.
///
/// Quantiles use linear interpolation between order statistics (numpy's
/// default, "type 7"), see [`quantile`]. Serialized with snake_case field names.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub struct Summary {
    /// Number of observations (≥ 1).
    pub n: usize,
    pub min: f64,
    pub max: f64,
    pub mean: f64,
    /// Sample standard deviation (divisor `n - 1`). Defined as `0.0` when `n == 1`.
    pub stddev: f64,
    pub median: f64,
    pub p5: f64,
    pub p25: f64,
    pub p75: f64,
    pub p95: f64,
}

impl Summary {
    /// Summarise `xs`. Returns `None` if `xs` is empty or contains a
    /// non-finite value (NaN or ±∞).
    pub fn of(xs: &[f64]) -> Option<Summary> {
        if !all_finite_nonempty(xs) {
            return None;
        }
        let sorted = sorted_copy(xs);
        let n = sorted.len();
        let nf = n as f64;
        let mean = sorted.iter().sum::<f64>() / nf;
        let stddev = if n > 1 {
            let ss: f64 = sorted.iter().map(|x| (x - mean) * (x - mean)).sum();
            (ss / (nf - 1.0)).sqrt()
        } else {
            0.0
        };
        Some(Summary {
            n,
            min: sorted[0],
            max: sorted[n - 1],
            mean,
            stddev,
            median: quantile(&sorted, 0.5),
            p5: quantile(&sorted, 0.05),
            p25: quantile(&sorted, 0.25),
            p75: quantile(&sorted, 0.75),
            p95: quantile(&sorted, 0.95),
        })
    }
}

/// The `q`-quantile of an **ascending-sorted** slice, by linear interpolation
/// between order statistics (numpy's default): with `h = (n - 1) q`,
/// `x[⌊h⌋] + (h - ⌊h⌋) (x[⌊h⌋ + 1] - x[⌊h⌋])`.
///
/// `q` is clamped to `[0, 1]`. Returns NaN if `sorted` is empty or `q` is NaN.
/// The result is unspecified (but no panic occurs) if `sorted` is not sorted.
pub fn quantile(sorted: &[f64], q: f64) -> f64 {
    let n = sorted.len();
    if n == 0 || q.is_nan() {
        return f64::NAN;
    }
    let q = q.clamp(0.0, 1.0);
    let h = (n - 1) as f64 * q;
    let lo = (h.floor() as usize).min(n - 1);
    let hi = (lo + 1).min(n - 1);
    let frac = h - lo as f64;
    if frac == 0.0 || lo == hi {
        sorted[lo]
    } else {
        sorted[lo] + frac * (sorted[hi] - sorted[lo])
    }
}

/// Median of an unsorted slice (average of the two middle values for even
/// length). Returns `None` for empty input or any non-finite value.
pub fn median(xs: &[f64]) -> Option<f64> {
    if !all_finite_nonempty(xs) {
        return None;
    }
    Some(quantile(&sorted_copy(xs), 0.5))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn close(a: f64, b: f64, tol: f64) -> bool {
        (a - b).abs() <= tol * (1.0 + b.abs())
    }

    #[test]
    fn matches_numpy_reference() {
        // numpy.percentile([3,1,4,1,5,9,2,6], [5,25,50,75,95]) and std(ddof=1)
        let s = Summary::of(&[3.0, 1.0, 4.0, 1.0, 5.0, 9.0, 2.0, 6.0]).unwrap();
        assert_eq!(s.n, 8);
        assert_eq!(s.min, 1.0);
        assert_eq!(s.max, 9.0);
        assert!(close(s.mean, 3.875, 1e-12));
        assert!(close(s.stddev, 2.748376143938713, 1e-12));
        assert!(close(s.p5, 1.0, 1e-12));
        assert!(close(s.p25, 1.75, 1e-12));
        assert!(close(s.median, 3.5, 1e-12));
        assert!(close(s.p75, 5.25, 1e-12));
        assert!(close(s.p95, 7.95, 1e-12));
    }

    #[test]
    fn quantile_interpolates() {
        assert_eq!(quantile(&[10.0, 20.0], 0.0), 10.0);
        assert!(close(quantile(&[10.0, 20.0], 0.3), 13.0, 1e-12));
        assert_eq!(quantile(&[10.0, 20.0], 1.0), 20.0);
        assert_eq!(quantile(&[7.0], 0.42), 7.0);
        // clamping
        assert_eq!(quantile(&[1.0, 2.0, 3.0], -1.0), 1.0);
        assert_eq!(quantile(&[1.0, 2.0, 3.0], 2.0), 3.0);
        assert!(quantile(&[], 0.5).is_nan());
        assert!(quantile(&[1.0], f64::NAN).is_nan());
    }

    #[test]
    fn median_odd_even() {
        assert_eq!(median(&[5.0, 1.0, 3.0]), Some(3.0));
        assert_eq!(median(&[4.0, 1.0, 3.0, 2.0]), Some(2.5));
        assert_eq!(median(&[]), None);
        assert_eq!(median(&[1.0, f64::NAN]), None);
    }

    #[test]
    fn single_value_and_bad_input() {
        let s = Summary::of(&[42.0]).unwrap();
        assert_eq!(s.n, 1);
        assert_eq!(s.stddev, 0.0);
        assert_eq!((s.min, s.max, s.median, s.p5, s.p95), (42.0, 42.0, 42.0, 42.0, 42.0));
        assert!(Summary::of(&[]).is_none());
        assert!(Summary::of(&[1.0, f64::NAN]).is_none());
        assert!(Summary::of(&[1.0, f64::INFINITY]).is_none());
    }

    #[test]
    fn serializes_snake_case() {
        let s = Summary::of(&[1.0, 2.0, 3.0]).unwrap();
        let v: serde_json::Value = serde_json::to_value(s).unwrap();
        for key in ["n", "min", "max", "mean", "stddev", "median", "p5", "p25", "p75", "p95"] {
            assert!(v.get(key).is_some(), "missing {key}");
        }
        assert_eq!(v["median"], 2.0);
        assert_eq!(v["stddev"], 1.0);
    }
}
