//! Is a threshold met, judged over runs? One-sided distribution-free bounds of the median and
//! the verdict they give (`--expect`).
//!
//! **The bounds.** For `n` runs sorted `x_(1) ≤ … ≤ x_(n)`, the lower bound `x_(k)` is below the
//! true median unless at least `n − k + 1` runs fall above it, so
//! `P(x_(k) ≤ median) = P(Binomial(n, ½) ≥ k) = 1 − P(Binomial(n, ½) ≤ k − 1)` for any continuous
//! distribution (conservative with ties): the order-statistic interval of the median
//! (Hollander, Wolfe & Chicken, *Nonparametric Statistical Methods*, 3rd ed., §3.6; Conover,
//! *Practical Nonparametric Statistics*, §3.2). `k` is the largest index whose one-sided
//! coverage still reaches `1 − α`; the upper bound `x_(n + 1 − k)` mirrors it. The coverage is
//! stated exactly, never rounded to the nominal level.
//!
//! **The verdict.** `median ≥ T` *passes* when the lower bound clears `T` (the one-sided sign
//! test rejects "median < T" at α), *fails* when the upper bound misses `T` (it rejects
//! "median ≥ T"), and is *undecided* otherwise; `≤` mirrors it. With fewer runs than the level
//! needs (5 at α = 0.05: `½⁵ = 0.031`) no bound exists and every expectation is undecided.

use serde::{Deserialize, Serialize};

use crate::bootstrap::binomial_half_cdf;
use crate::sorted_copy;

/// Which side of the threshold the median should be on.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum Side {
    /// `≥` (or `>` when `strict`).
    AtLeast { strict: bool },
    /// `≤` (or `<` when `strict`).
    AtMost { strict: bool },
}

/// The outcome of one expectation.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Judgement {
    Pass,
    Fail,
    Undecided,
}

impl Judgement {
    /// The word a report marks it with: `pass`, `fail` or `undecided` (as serialised).
    pub fn word(self) -> &'static str {
        match self {
            Judgement::Pass => "pass",
            Judgement::Fail => "fail",
            Judgement::Undecided => "undecided",
        }
    }
}

/// One mark for several judgements (an experiment's expectations): fail if any failed, else
/// undecided if any is, else pass; `None` for none.
pub fn overall(judgements: impl IntoIterator<Item = Judgement>) -> Option<Judgement> {
    judgements.into_iter().reduce(|a, b| match (a, b) {
        (Judgement::Fail, _) | (_, Judgement::Fail) => Judgement::Fail,
        (Judgement::Undecided, _) | (_, Judgement::Undecided) => Judgement::Undecided,
        _ => Judgement::Pass,
    })
}

/// The median of some runs with its one-sided bounds, each at level `level`.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct MedianBounds {
    pub median: f64,
    /// `x_(k)`: the median is at least this with probability `level`; `None` when the runs are
    /// too few for any bound at the asked level.
    pub lo: Option<f64>,
    /// `x_(n + 1 − k)`: the median is at most this with probability `level`.
    pub hi: Option<f64>,
    /// The exact one-sided coverage `1 − P(Binomial(n, ½) ≤ k − 1)` (1 when there is no bound).
    pub level: f64,
    pub runs: usize,
}

/// The median of `xs` and its one-sided order-statistic bounds at level `1 − alpha`. Values may
/// be `+∞` (a run that never converged ranks above every other); `None` for no values, a NaN,
/// or `alpha` outside (0, 1).
pub fn median_bounds(xs: &[f64], alpha: f64) -> Option<MedianBounds> {
    if xs.is_empty() || xs.iter().any(|x| x.is_nan() || *x == f64::NEG_INFINITY) || !(alpha > 0.0 && alpha < 1.0) {
        return None;
    }
    let sorted = sorted_copy(xs);
    let n = sorted.len();
    // The largest k (at most the median's rank) with P(B ≤ k − 1) ≤ α.
    let k = (1..=n.div_ceil(2)).take_while(|&k| binomial_half_cdf(n, k - 1) <= alpha).last().unwrap_or(0);
    // The midpoint of the middle two (+∞ when either is: values are never −∞ here).
    let median = if n % 2 == 1 { sorted[n / 2] } else { (sorted[n / 2 - 1] + sorted[n / 2]) / 2.0 };
    let (lo, hi, level) = if k == 0 { (None, None, 1.0) } else { (Some(sorted[k - 1]), Some(sorted[n - k]), 1.0 - binomial_half_cdf(n, k - 1)) };
    Some(MedianBounds { median, lo, hi, level, runs: n })
}

/// Pass, fail or undecided: whether the whole one-sided interval clears `threshold` on `side`,
/// misses it, or neither.
pub fn judge(b: &MedianBounds, side: Side, threshold: f64) -> Judgement {
    let (Some(lo), Some(hi)) = (b.lo, b.hi) else { return Judgement::Undecided };
    let (clears, misses) = match side {
        Side::AtLeast { strict: false } => (lo >= threshold, hi < threshold),
        Side::AtLeast { strict: true } => (lo > threshold, hi <= threshold),
        Side::AtMost { strict: false } => (hi <= threshold, lo > threshold),
        Side::AtMost { strict: true } => (hi < threshold, lo >= threshold),
    };
    if clears {
        Judgement::Pass
    } else if misses {
        Judgement::Fail
    } else {
        Judgement::Undecided
    }
}

/// The fewest runs for which a bound exists at `alpha`: the smallest `n` with `½ⁿ ≤ α`.
pub fn min_runs(alpha: f64) -> usize {
    (1..64).find(|&n| 0.5f64.powi(n as i32) <= alpha).unwrap_or(64)
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::{Rng, SeedableRng};

    /// `k` and the exact one-sided coverage against scipy 1.17 (`scipy.stats.binom.cdf(k − 1, n,
    /// .5)`, the largest `k` with it ≤ α), computed in the venv at /work/venv.
    #[test]
    fn depth_and_level_match_scipy() {
        let cases: [(usize, f64, usize, f64); 12] = [
            (5, 0.05, 1, 0.03125),
            (6, 0.05, 1, 0.015625),
            (8, 0.05, 2, 0.03515625),
            (8, 0.01, 1, 0.00390625),
            (10, 0.05, 2, 0.0107421875),
            (10, 0.01, 1, 0.0009765625),
            (12, 0.05, 3, 0.019287109375),
            (12, 0.01, 2, 0.003173828125),
            (20, 0.05, 6, 0.020694732666015625),
            (20, 0.01, 5, 0.005908966064453125),
            (30, 0.05, 11, 0.049368573352694525),
            (30, 0.01, 9, 0.008062400855123998),
        ];
        for (n, alpha, k, tail) in cases {
            let xs: Vec<f64> = (1..=n).map(|i| i as f64).collect();
            let b = median_bounds(&xs, alpha).unwrap();
            assert_eq!((b.lo, b.hi), (Some(k as f64), Some((n + 1 - k) as f64)), "n {n} α {alpha}");
            assert!((b.level - (1.0 - tail)).abs() < 1e-15, "n {n} α {alpha}: {}", b.level);
        }
        // 4 runs cannot reach 95 % (½⁴ = 0.0625), 5 can; 6 cannot reach 99 %, 7 can.
        let b = median_bounds(&[1.0, 2.0, 3.0, 4.0], 0.05).unwrap();
        assert_eq!((b.lo, b.hi, b.level), (None, None, 1.0));
        assert_eq!(judge(&b, Side::AtLeast { strict: false }, 0.0), Judgement::Undecided);
        assert_eq!((min_runs(0.05), min_runs(0.01)), (5, 7));
    }

    /// Pass is the exact one-sided sign test rejecting "median ≤ T", fail the one rejecting
    /// "median ≥ T": p-values from scipy 1.17 `binomtest(c, 10, .5, alternative="greater")`
    /// for `c` runs of 10 above the threshold.
    #[test]
    fn verdict_is_the_one_sided_sign_test() {
        let p_greater = [1.0, 0.9990234375, 0.9892578125, 0.9453125, 0.828125, 0.623046875, 0.376953125, 0.171875, 0.0546875, 0.0107421875, 0.0009765625];
        let xs: Vec<f64> = (1..=10).map(f64::from).collect();
        for alpha in [0.05, 0.01, 0.002] {
            let b = median_bounds(&xs, alpha).unwrap();
            for c in 0..=10usize {
                // A threshold with exactly c runs above it.
                let t = 10.5 - c as f64;
                let expected = if p_greater[c] <= alpha {
                    Judgement::Pass
                } else if p_greater[10 - c] <= alpha {
                    Judgement::Fail // "less": c above means 10 − c below
                } else {
                    Judgement::Undecided
                };
                assert_eq!(judge(&b, Side::AtLeast { strict: false }, t), expected, "α {alpha}, {c} above {t}");
                let mirrored = match expected {
                    Judgement::Pass => Judgement::Fail,
                    Judgement::Fail => Judgement::Pass,
                    u => u,
                };
                assert_eq!(judge(&b, Side::AtMost { strict: false }, t), mirrored, "α {alpha}, {c} above {t}");
            }
        }
    }

    /// Each bound covers the true median at least at its stated level (simulation, skewed data).
    #[test]
    fn coverage_by_simulation() {
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(21);
        for n in [5usize, 8, 13] {
            let trials = 20_000;
            let (mut lo_ok, mut hi_ok, mut level) = (0, 0, 0.0);
            for _ in 0..trials {
                let xs: Vec<f64> = (0..n).map(|_| -(1.0 - rng.gen::<f64>()).ln()).collect();
                let b = median_bounds(&xs, 0.05).unwrap();
                level = b.level;
                lo_ok += usize::from(b.lo.unwrap() <= std::f64::consts::LN_2);
                hi_ok += usize::from(b.hi.unwrap() >= std::f64::consts::LN_2);
            }
            let se = (level * (1.0 - level) / trials as f64).sqrt();
            for ok in [lo_ok, hi_ok] {
                let rate = ok as f64 / trials as f64;
                assert!((rate - level).abs() < 4.0 * se + 1e-9, "n {n}: {rate} against {level}");
            }
        }
    }

    #[test]
    fn ties_strictness_and_infinite_runs() {
        let b = median_bounds(&[0.0; 6], 0.05).unwrap();
        assert_eq!(judge(&b, Side::AtMost { strict: false }, 0.0), Judgement::Pass);
        assert_eq!(judge(&b, Side::AtMost { strict: true }, 0.0), Judgement::Fail);
        // Runs that never converged are +∞: they rank last and fail a "≤".
        let b = median_bounds(&[f64::INFINITY; 5], 0.05).unwrap();
        assert_eq!(b.median, f64::INFINITY);
        assert_eq!(judge(&b, Side::AtMost { strict: false }, 10.0), Judgement::Fail);
        assert!(median_bounds(&[], 0.05).is_none());
        assert!(median_bounds(&[f64::NAN], 0.05).is_none());
        assert!(median_bounds(&[1.0], 0.0).is_none());
    }
}
