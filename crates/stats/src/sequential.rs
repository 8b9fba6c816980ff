//! How many runs can decide, and runs until decided (`--runs auto`): a group-sequential design.
//!
//! **The fewest runs that can decide.** With `n` runs per arm the smallest exact two-sided
//! Mann–Whitney p is `2 / C(2n, n)` (complete separation). Comparing `k` algorithms, Holm's
//! correction runs over all `m = k (k − 1) / 2` pairs (the best arm is chosen from the data),
//! and when every pair is completely separated each adjusted p is `m · 2 / C(2n, n)`. So no
//! verdict is possible until `m · 2 / C(2n, n) < α`: 4 runs for 2 algorithms, 5 for 3 or 4,
//! 6 for 5 ([`min_runs_to_decide`]).
//!
//! **The sequential design.** A Lan–DeMets alpha-spending design (Lan & DeMets 1983,
//! *Biometrika* 70:659) with the Pocock-type spending function
//! `α(t) = α · ln(1 + (e − 1) · t)` (Kim & DeMets 1987), information time `t = n / max_runs`.
//! The first look is at the fewest runs that can decide at what the function has spent by then;
//! later looks come every [`LOOK_EVERY`] runs, and the last at `max_runs`, which spends the
//! whole α. A look rejects when its Holm-adjusted p is below its increment
//! `α(t_j) − α(t_{j−1})`, so by the union bound the chance of any false rejection over all
//! looks is at most α, whatever the dependence between looks and whatever the ties. A look
//! that could not decide even with complete separation is skipped and its α carried to the
//! next, as Lan–DeMets allows: spending follows the looks actually taken.
//!
//! Why these choices (measured by `cargo run --release -p ccbench-stats --example
//! sequential_power`, which prints every figure): the Pocock-type function spends enough early
//! that a large difference stops at the first look (a 30 % difference: 5.2 runs on average),
//! while looking every third run rather than every run leaves enough α for the later looks
//! to give 80 % power at a 10 % difference with 8 % run-to-run variation and 20 runs at most.
//! The previous design (60 % of α at the first look, then halving) reached 25 %.

use serde::{Deserialize, Serialize};

/// Runs between looks after the first.
pub const LOOK_EVERY: usize = 3;

/// One interim analysis: after `runs` runs per arm, decide at level `alpha`.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Look {
    pub runs: usize,
    /// The α this look spends (the increment of the spending function since the last look).
    pub alpha: f64,
}

/// Pairs Holm's correction runs over for `k` algorithms: every pair (at least 1).
pub fn family_size(k: usize) -> usize {
    (k * k.saturating_sub(1) / 2).max(1)
}

/// The smallest exact two-sided Mann–Whitney p with `n` runs per arm: `2 / C(2n, n)`.
pub fn min_p(n: usize) -> f64 {
    // C(2n, n) = Π_{i=1..n} (n + i) / i, in floating point (it only has to be compared).
    let binom: f64 = (1..=n).map(|i| (n + i) as f64 / i as f64).product();
    (2.0 / binom).min(1.0)
}

/// The fewest runs per arm with which `k` algorithms can be told apart at level `alpha` after
/// Holm's correction: the smallest `n` with `family_size(k) · 2 / C(2n, n) < alpha`.
/// `usize::MAX` when `alpha` is not positive.
pub fn min_runs_to_decide(k: usize, alpha: f64) -> usize {
    if alpha.is_nan() || alpha <= 0.0 {
        return usize::MAX;
    }
    let m = family_size(k) as f64;
    (1..2000).find(|&n| m * min_p(n) < alpha).unwrap_or(usize::MAX)
}

/// The Pocock-type Lan–DeMets spending function: α spent by information time `t ∈ [0, 1]`.
pub fn spent(alpha: f64, t: f64) -> f64 {
    alpha * (1.0 + (std::f64::consts::E - 1.0) * t.clamp(0.0, 1.0)).ln()
}

/// The looks of the design for `k` algorithms, overall level `alpha`, at most `max_runs` runs
/// per arm. The increments add up to `alpha` (up to rounding). Empty when no look up to
/// `max_runs` can decide.
pub fn looks(alpha: f64, max_runs: usize, k: usize) -> Vec<Look> {
    let m = family_size(k) as f64;
    looks_where(alpha, max_runs, |n, level| m * min_p(n) < level)
}

/// The looks for one contender judged only by its expectations (`--runs auto --expect` with one
/// algorithm or a mix): the same spending function, but a look can decide when the one-sided
/// sign test's smallest p, `½ⁿ` (every run beyond the threshold), is within its share of α
/// (the order-statistic bound of `expectation::median_bounds` exists exactly then). The
/// two-sample schedule's first look (4 runs for 2 arms) can never decide an expectation.
/// Each look judges every expectation at its own increment, so by the union bound the chance
/// of a wrong pass or fail over all looks stays at `alpha` per expectation.
pub fn expectation_looks(alpha: f64, max_runs: usize) -> Vec<Look> {
    looks_where(alpha, max_runs, |n, level| 0.5f64.powi(n.min(1 << 20) as i32) <= level)
}

/// The looks of the spending function over `max_runs`, the first at the fewest runs that
/// `can_decide` at what has been spent by then, later ones every [`LOOK_EVERY`] runs (a look
/// that cannot decide at its increment is skipped, its α carried on) and the last at `max_runs`.
fn looks_where(alpha: f64, max_runs: usize, can_decide: impl Fn(usize, f64) -> bool) -> Vec<Look> {
    let at = |n: usize| spent(alpha, n as f64 / max_runs as f64);
    let Some(first) = (1..=max_runs).find(|&n| can_decide(n, at(n))) else { return Vec::new() };
    let mut candidates: Vec<usize> = (first..max_runs).step_by(LOOK_EVERY).collect();
    candidates.push(max_runs);
    let mut out = Vec::with_capacity(candidates.len());
    let mut spent_so_far = 0.0;
    for n in candidates {
        let increment = at(n) - spent_so_far;
        if !can_decide(n, increment) && n != max_runs {
            continue; // cannot decide here: carry its α to the next look
        }
        out.push(Look { runs: n, alpha: increment });
        spent_so_far = at(n);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::mann_whitney_u;
    use rand::{Rng, SeedableRng};

    #[test]
    fn fewest_runs_for_k_algorithms() {
        assert_eq!(min_runs_to_decide(2, 0.05), 4); // 2/70 = 0.029
        assert_eq!(min_runs_to_decide(3, 0.05), 5); // 3 · 2/70 = 0.086; 3 · 2/252 = 0.024
        assert_eq!(min_runs_to_decide(4, 0.05), 5); // 6 · 2/252 = 0.048
        assert_eq!(min_runs_to_decide(5, 0.05), 6); // 10 · 2/252 = 0.079; 10 · 2/924 = 0.022
        assert_eq!(min_runs_to_decide(2, 0.01), 5);
        assert_eq!(min_runs_to_decide(2, 0.0), usize::MAX);
        assert!((min_p(4) - 2.0 / 70.0).abs() < 1e-15 && (min_p(5) - 2.0 / 252.0).abs() < 1e-15);
    }

    #[test]
    fn expectation_looks_can_decide_from_the_first_and_spend_alpha() {
        for max in [5usize, 6, 8, 10, 20, 50] {
            let ls = expectation_looks(0.05, max);
            assert!(!ls.is_empty(), "max {max}");
            // Every look but the last (always at max_runs, however little α is left for it)
            // can decide: the sign test's smallest p is within its share of α.
            for l in &ls[..ls.len() - 1] {
                assert!(0.5f64.powi(l.runs as i32) <= l.alpha, "max {max}: {l:?}");
            }
            let total: f64 = ls.iter().map(|l| l.alpha).sum();
            assert!((total - 0.05).abs() < 1e-12, "max {max}: spends α in all: {total}");
            assert_eq!(ls.last().unwrap().runs, max);
            assert!(0.5f64.powi(ls[0].runs as i32) <= ls[0].alpha, "max {max}: the first look can decide");
        }
        // With 10 at most: 5 runs have spent 0.0310 < ½⁵, so the first look is at 6 (0.0354).
        let ls = expectation_looks(0.05, 10);
        assert_eq!(ls.iter().map(|l| l.runs).collect::<Vec<_>>(), [6, 9, 10]);
        // Where the two-sample schedule's first look (4 runs) could not bound a median at all.
        assert_eq!(looks(0.05, 8, 2)[0].runs, 4);
        assert_eq!(expectation_looks(0.05, 8)[0].runs, 5);
        // Fewer runs than any bound needs: no look.
        assert!(expectation_looks(0.05, 4).is_empty());
    }

    #[test]
    fn spending_function() {
        assert_eq!(spent(0.05, 0.0), 0.0);
        assert!((spent(0.05, 1.0) - 0.05).abs() < 1e-15);
        // α · ln(1 + (e − 1) / 4) at a quarter of the information.
        assert!((spent(0.05, 0.25) - 0.05 * (1.0 + (std::f64::consts::E - 1.0) / 4.0).ln()).abs() < 1e-15);
    }

    #[test]
    fn looks_spend_alpha_and_start_where_a_decision_is_possible() {
        for k in 2..=5 {
            for max in [6usize, 8, 10, 20, 50] {
                let ls = looks(0.05, max, k);
                if ls.is_empty() {
                    assert!((1..=max).all(|n| family_size(k) as f64 * min_p(n) >= spent(0.05, n as f64 / max as f64)), "k {k} max {max}");
                    continue;
                }
                let total: f64 = ls.iter().map(|l| l.alpha).sum();
                assert!((total - 0.05).abs() < 1e-12, "k {k} max {max}: {total}");
                assert_eq!(ls.last().unwrap().runs, max);
                // Every look but possibly the last can decide; the first is the earliest that can.
                for l in &ls[..ls.len() - 1] {
                    assert!(family_size(k) as f64 * min_p(l.runs) < l.alpha, "k {k} max {max}: {l:?}");
                }
                let first = ls[0].runs;
                assert!((1..first).all(|n| family_size(k) as f64 * min_p(n) >= spent(0.05, n as f64 / max as f64)));
                assert!(first >= min_runs_to_decide(k, 0.05));
            }
        }
        let ls = looks(0.05, 20, 2);
        assert_eq!(ls.iter().map(|l| l.runs).collect::<Vec<_>>(), vec![5, 8, 11, 14, 17, 20]);
        assert_eq!(looks(0.05, 20, 3)[0].runs, 6);
        // At most 4 runs: one look at the full α, the fixed design.
        assert_eq!(looks(0.05, 4, 2), vec![Look { runs: 4, alpha: spent(0.05, 1.0) }]);
        assert!(looks(0.05, 3, 2).is_empty());
        assert!(looks(0.05, 4, 3).is_empty(), "three algorithms need 5 runs");
    }

    /// Under the null (both arms from one distribution), the chance that any look rejects is
    /// at most α; looking at every round at the full α would not be.
    #[test]
    fn overall_error_stays_at_alpha() {
        let alpha = 0.05;
        let ls = looks(alpha, 12, 2);
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(23);
        let trials = 10_000;
        let (mut spent, mut naive) = (0, 0);
        for _ in 0..trials {
            let a: Vec<f64> = (0..12).map(|_| rng.gen()).collect();
            let b: Vec<f64> = (0..12).map(|_| rng.gen()).collect();
            let ps: Vec<f64> = (4..=12).map(|n| mann_whitney_u(&a[..n], &b[..n]).unwrap().p_value).collect();
            spent += usize::from(ls.iter().any(|l| ps[l.runs - 4] < l.alpha));
            naive += usize::from(ps.iter().any(|p| *p < alpha));
        }
        let (spent, naive) = (spent as f64 / trials as f64, naive as f64 / trials as f64);
        assert!(spent <= alpha, "alpha spending: {spent}");
        assert!(naive > 0.08, "testing every round at full alpha inflates the error: {naive}");
    }
}
