//! Percentile-bootstrap confidence interval for a ratio of medians.

use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use serde::{Deserialize, Serialize};

use crate::summary::quantile;
use crate::{all_finite_nonempty, sorted_copy};

/// Bootstrap confidence interval for `median(a) / median(b)`.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub struct RatioCi {
    /// `median(a) / median(b)` on the original (not resampled) data.
    pub ratio: f64,
    /// Lower bound: the `(1 - level) / 2` percentile of the bootstrap ratios.
    pub lo: f64,
    /// Upper bound: the `(1 + level) / 2` percentile of the bootstrap ratios.
    pub hi: f64,
    /// Confidence level, e.g. `0.95`.
    pub level: f64,
    /// Number of bootstrap iterations requested.
    pub iterations: usize,
    /// Iterations discarded because the resampled `median(b)` was exactly 0
    /// (the percentiles are taken over `iterations - skipped` ratios).
    pub skipped: usize,
}

impl RatioCi {
    /// `true` if the interval lies strictly above or strictly below 1.
    pub fn excludes_one(&self) -> bool {
        self.lo > 1.0 || self.hi < 1.0
    }
}

/// Percentile bootstrap of `median(a) / median(b)`.
///
/// Each iteration resamples `a` and `b` independently, with replacement and at
/// their original sizes, using a [`ChaCha8Rng`] seeded with `seed` — the same
/// inputs and seed always give the same interval.
///
/// Returns `None` when:
/// * either slice is empty or contains a non-finite value,
/// * `level` is not strictly between 0 and 1, or `iterations == 0`,
/// * `median(b) == 0` on the original data (the ratio is undefined), or every
///   resample had `median(b) == 0`.
///
/// Resamples whose `median(b)` is exactly 0 are skipped (counted in
/// [`RatioCi::skipped`]) rather than producing infinite ratios.
pub fn bootstrap_ratio_ci(a: &[f64], b: &[f64], level: f64, iterations: usize, seed: u64) -> Option<RatioCi> {
    if !all_finite_nonempty(a) || !all_finite_nonempty(b) {
        return None;
    }
    if !(level > 0.0 && level < 1.0) || iterations == 0 {
        return None;
    }
    let med_a = quantile(&sorted_copy(a), 0.5);
    let med_b = quantile(&sorted_copy(b), 0.5);
    if med_b == 0.0 {
        return None;
    }
    let ratio = med_a / med_b;

    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let mut buf_a = vec![0.0; a.len()];
    let mut buf_b = vec![0.0; b.len()];
    let mut ratios = Vec::with_capacity(iterations);
    for _ in 0..iterations {
        let ma = resampled_median(a, &mut buf_a, &mut rng);
        let mb = resampled_median(b, &mut buf_b, &mut rng);
        if mb != 0.0 {
            ratios.push(ma / mb);
        }
    }
    if ratios.is_empty() {
        return None;
    }
    let skipped = iterations - ratios.len();
    ratios.sort_unstable_by(f64::total_cmp);
    let tail = (1.0 - level) / 2.0;
    Some(RatioCi { ratio, lo: quantile(&ratios, tail), hi: quantile(&ratios, 1.0 - tail), level, iterations, skipped })
}

/// Draw `xs.len()` values from `xs` with replacement into `buf` and return
/// their median. `buf.len() == xs.len() > 0`.
fn resampled_median(xs: &[f64], buf: &mut [f64], rng: &mut ChaCha8Rng) -> f64 {
    for slot in buf.iter_mut() {
        *slot = xs[rng.gen_range(0..xs.len())];
    }
    buf.sort_unstable_by(f64::total_cmp);
    quantile(buf, 0.5)
}

#[cfg(test)]
mod tests {
    use super::*;

    const BBR: [f64; 5] = [142.0, 150.0, 139.0, 160.0, 147.0];
    const CUBIC: [f64; 5] = [10.1, 9.8, 10.4, 11.0, 9.5];

    #[test]
    fn point_estimate_is_ratio_of_medians() {
        let ci = bootstrap_ratio_ci(&BBR, &CUBIC, 0.95, 2000, 1).unwrap();
        assert!((ci.ratio - 147.0 / 10.1).abs() < 1e-12);
        assert_eq!(ci.level, 0.95);
        assert_eq!(ci.iterations, 2000);
        assert_eq!(ci.skipped, 0);
    }

    #[test]
    fn bounds_are_within_possible_resample_ratios() {
        // Any resampled median lies within [min, max] of the group, so the
        // ratio is bounded by min(a)/max(b) .. max(a)/min(b).
        let ci = bootstrap_ratio_ci(&BBR, &CUBIC, 0.95, 4000, 7).unwrap();
        assert!(ci.lo <= ci.ratio && ci.ratio <= ci.hi, "{ci:?}");
        assert!(ci.lo >= 139.0 / 11.0 - 1e-12);
        assert!(ci.hi <= 160.0 / 9.5 + 1e-12);
        assert!(ci.excludes_one());
        // The interval must actually spread out, not collapse to the point.
        assert!(ci.hi - ci.lo > 0.5, "{ci:?}");
    }

    #[test]
    fn reproducible_and_seed_dependent() {
        let x = bootstrap_ratio_ci(&BBR, &CUBIC, 0.9, 1000, 42).unwrap();
        let y = bootstrap_ratio_ci(&BBR, &CUBIC, 0.9, 1000, 42).unwrap();
        assert_eq!(x, y);
        let a = [1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0, 9.0, 10.0, 11.0];
        let b = [3.0, 1.0, 4.0, 1.0, 5.0, 9.0, 2.0, 6.0, 5.0, 3.0, 5.0];
        let seeds: Vec<RatioCi> = (0..5).map(|s| bootstrap_ratio_ci(&a, &b, 0.9, 200, s).unwrap()).collect();
        assert!(seeds.iter().any(|c| c.lo != seeds[0].lo || c.hi != seeds[0].hi));
    }

    #[test]
    fn constant_groups_give_degenerate_interval() {
        let ci = bootstrap_ratio_ci(&[6.0; 4], &[2.0; 3], 0.95, 100, 0).unwrap();
        assert_eq!((ci.ratio, ci.lo, ci.hi), (3.0, 3.0, 3.0));
    }

    #[test]
    fn wider_level_gives_wider_interval() {
        let a = [5.0, 7.0, 6.0, 9.0, 4.0, 8.0, 6.5];
        let b = [5.5, 6.0, 7.5, 5.0, 6.2, 7.0, 4.5];
        let narrow = bootstrap_ratio_ci(&a, &b, 0.5, 3000, 3).unwrap();
        let wide = bootstrap_ratio_ci(&a, &b, 0.99, 3000, 3).unwrap();
        assert!(wide.lo <= narrow.lo && wide.hi >= narrow.hi);
        assert!(!wide.excludes_one());
    }

    #[test]
    fn zero_denominator_and_bad_input() {
        // Original median(b) == 0 -> undefined ratio.
        assert!(bootstrap_ratio_ci(&[1.0, 2.0], &[0.0, 0.0, 5.0], 0.95, 100, 0).is_none());
        // median(b) != 0 originally but some resamples hit 0: they are skipped.
        let ci = bootstrap_ratio_ci(&[1.0, 2.0], &[0.0, 5.0, 6.0], 0.95, 1000, 0).unwrap();
        assert!(ci.skipped > 0 && ci.skipped < 1000);
        assert!(ci.hi.is_finite());
        assert!(bootstrap_ratio_ci(&[], &[1.0], 0.95, 100, 0).is_none());
        assert!(bootstrap_ratio_ci(&[1.0], &[], 0.95, 100, 0).is_none());
        assert!(bootstrap_ratio_ci(&[f64::NAN], &[1.0], 0.95, 100, 0).is_none());
        assert!(bootstrap_ratio_ci(&[1.0], &[1.0], 1.0, 100, 0).is_none());
        assert!(bootstrap_ratio_ci(&[1.0], &[1.0], 0.0, 100, 0).is_none());
        assert!(bootstrap_ratio_ci(&[1.0], &[1.0], f64::NAN, 100, 0).is_none());
        assert!(bootstrap_ratio_ci(&[1.0], &[1.0], 0.95, 0, 0).is_none());
    }
}

/// Bootstrap confidence interval of one sample's median.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct MedianCi {
    pub median: f64,
    pub lo: f64,
    pub hi: f64,
    pub level: f64,
    pub iterations: usize,
}

/// Percentile bootstrap of `median(xs)` (resampling with replacement, seeded, reproducible).
/// `None` for empty or non-finite input, a level outside (0, 1) or zero iterations.
#[allow(clippy::nonminimal_bool)] // written so that a NaN level is rejected too
pub fn bootstrap_median_ci(xs: &[f64], level: f64, iterations: usize, seed: u64) -> Option<MedianCi> {
    if !all_finite_nonempty(xs) || !(level > 0.0 && level < 1.0) || iterations == 0 {
        return None;
    }
    let median = quantile(&sorted_copy(xs), 0.5);
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let mut resample = vec![0.0; xs.len()];
    let mut medians = Vec::with_capacity(iterations);
    for _ in 0..iterations {
        for r in resample.iter_mut() {
            *r = xs[rng.gen_range(0..xs.len())];
        }
        resample.sort_by(f64::total_cmp);
        medians.push(quantile(&resample, 0.5));
    }
    medians.sort_by(f64::total_cmp);
    Some(MedianCi { median, lo: quantile(&medians, (1.0 - level) / 2.0), hi: quantile(&medians, (1.0 + level) / 2.0), level, iterations })
}

#[cfg(test)]
mod median_ci_tests {
    use super::*;

    #[test]
    fn median_ci_brackets_the_median_and_is_degenerate_for_constants() {
        let xs = [0.61, 0.64, 0.66, 0.70, 0.71, 0.73, 0.80];
        let ci = bootstrap_median_ci(&xs, 0.95, 5000, 1).unwrap();
        assert_eq!(ci.median, 0.70);
        assert!(ci.lo <= 0.70 && ci.hi >= 0.70);
        assert!(ci.lo >= 0.61 && ci.hi <= 0.80, "a median CI stays within the data");
        let c = bootstrap_median_ci(&[0.5; 5], 0.95, 100, 1).unwrap();
        assert_eq!((c.lo, c.hi), (0.5, 0.5));
        assert!(bootstrap_median_ci(&[], 0.95, 100, 1).is_none());
        assert_eq!(bootstrap_median_ci(&xs, 0.95, 5000, 1), Some(ci), "reproducible");
    }
}
