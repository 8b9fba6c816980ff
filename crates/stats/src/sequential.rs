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
    /// The level this look judges at. For comparisons ([`looks`]) the increment of the spending
    /// function since the last look; for expectations ([`expectation_looks`]) the sign test's
    /// exact one-sided level `P(Binomial(runs, ½) ≤ k − 1)` of the bound depth `k` the design
    /// allows at this look.
    pub alpha: f64,
    /// The chance of a wrong verdict spent by this look and every earlier one: the spending
    /// function at this look for comparisons (a union bound), the exact probability for
    /// expectations. 0 in results written before it was recorded.
    #[serde(default)]
    pub spent: f64,
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
/// algorithm or a mix): the same spending function and the same look times as [`looks`] (the
/// first at the fewest runs whose sign test can decide, `½ⁿ` within what has been spent, then
/// every [`LOOK_EVERY`] runs and the last at `max_runs`), but with **exact** boundaries instead
/// of a union bound.
///
/// With the true median exactly on the threshold each run falls on either side with chance ½,
/// so the number of runs at or beyond it is a binomial random walk, and the chance that a look
/// passes (at least `n − k + 1` of `n` runs beyond the threshold: the order-statistic bound
/// `x_(k)` clears it) given that no earlier look decided is computed exactly by following the
/// walk's distribution from look to look (the exact group-sequential binomial test: Jennison &
/// Turnbull, *Group Sequential Methods*, 2000, §12.1; the spending function of Lan & DeMets
/// 1983). Each look takes the deepest `k` whose exact chance of a first entry into the pass
/// region keeps the total within the spending function by then; a wrong fail is the mirror
/// image and has the same chance. So the chance that any look judges a wrong pass (or a wrong
/// fail) is at most `alpha` per expectation, whether the run stops at the first decision or
/// goes on for other expectations, and for a median away from the threshold it is smaller (the walk's drift takes
/// it away from the wrong boundary). A look where no `k ≥ 1` fits is skipped (its α carried),
/// except the last, which then cannot decide.
///
/// The look's `alpha` is the exact level `P(Binomial(n, ½) ≤ k − 1)`, so that
/// [`crate::expectation::median_bounds`] at that level gives exactly depth `k`. Against the
/// union bound this design replaced (each look at its increment), at most 20 runs and a median
/// 10 % above the threshold with 8 % run-to-run variation, the chance to pass rises from 85 %
/// to 95 % and the mean runs fall from 11.6 to 9.5 (`scripts/expectation_sequential_exact.py`,
/// exact; `cargo run --release -p ccbench-stats --example expectation_power`, simulated).
pub fn expectation_looks(alpha: f64, max_runs: usize) -> Vec<Look> {
    let at = |n: usize| spent(alpha, n as f64 / max_runs as f64);
    // still[c]: the chance, with every run beyond the threshold with chance ½, that after `done`
    // runs `c` are beyond it and no look has passed yet.
    let mut still = vec![1.0];
    let mut done = 0;
    let mut spent_so_far = 0.0;
    let mut out = Vec::new();
    for n in look_times(alpha, max_runs, |n, level| half_pow(n) <= level) {
        still = binomial_steps(&still, n - done);
        done = n;
        // A pass at depth k: at least n − k + 1 runs beyond the threshold.
        let crossing = |k: usize| -> f64 { still[n + 1 - k..].iter().sum() };
        // A small tolerance so that rounding in the sums never refuses a depth the exact
        // arithmetic allows (the sums are of at most a few thousand terms).
        let k = (1..=n.div_ceil(2)).take_while(|&k| spent_so_far + crossing(k) <= at(n) * (1.0 + 1e-12)).last().unwrap_or(0);
        if k == 0 {
            if n == max_runs {
                // Cannot decide: the increment is below ½ⁿ here, so no bound exists at it.
                out.push(Look { runs: n, alpha: at(n) - spent_so_far, spent: spent_so_far });
            }
            continue;
        }
        spent_so_far += crossing(k);
        // The walks that passed leave. One that failed stays: with several expectations the
        // run goes on until all are decided and every look judges each again, so a wrong pass
        // is counted wherever a walk first enters the pass region (conservative by the tiny
        // chance of a fail followed by a pass).
        for p in &mut still[n + 1 - k..] {
            *p = 0.0;
        }
        out.push(Look { runs: n, alpha: crate::bootstrap::binomial_half_cdf(n, k - 1), spent: spent_so_far });
    }
    out
}

/// The runs at the end of a design that cannot change its verdict: `(first, last)` when the
/// looks after the last one that can decide are there only because the design must end at
/// `max_runs`, so runs `first..=last` would be run for nothing (issue 28 §6: a last look that
/// cannot decide with 2 algorithms at `--max-runs 5`, 3 at 6; expectation runs 6–8 of
/// `--max-runs 8`). `None` when the last look can decide, or there is none. `k` is the number
/// of algorithms compared, `None` for a design from [`expectation_looks`].
///
/// A comparison's look can decide when complete separation reaches its increment. An
/// expectation's look can decide an expectation that no earlier look decided only with a deeper
/// bound than every earlier look's: with depth `k_j` at an earlier look of `n_j` runs, an
/// undecided expectation has at most `n_j − k_j` runs beyond the threshold there, so at most
/// `n − k_j` after `n`, and passing at depth `k` needs `n − k + 1` (failing is the mirror).
pub fn idle_tail(design: &[Look], k: Option<usize>) -> Option<(usize, usize)> {
    let depth = |l: &Look| (1..=l.runs.div_ceil(2)).take_while(|&d| crate::bootstrap::binomial_half_cdf(l.runs, d - 1) <= l.alpha).last().unwrap_or(0);
    let can_decide = |i: usize| {
        let l = &design[i];
        match k {
            Some(k) => family_size(k) as f64 * min_p(l.runs) < l.alpha,
            None => depth(l) > design[..i].iter().map(depth).max().unwrap_or(0),
        }
    };
    let last_deciding = (0..design.len()).rev().find(|&i| can_decide(i))?;
    let last = design.last()?;
    (last_deciding + 1 < design.len()).then(|| (design[last_deciding].runs + 1, last.runs))
}

/// The design `ccbench run --runs auto` takes for `k` contenders at most `max_runs` runs (one
/// contender: its expectations' design), and its [`idle_tail`].
pub fn design_for(alpha: f64, max_runs: usize, k: usize) -> (Vec<Look>, Option<(usize, usize)>) {
    if k <= 1 {
        let d = expectation_looks(alpha, max_runs);
        let tail = idle_tail(&d, None);
        (d, tail)
    } else {
        let d = looks(alpha, max_runs, k);
        let tail = idle_tail(&d, Some(k));
        (d, tail)
    }
}

/// `½ⁿ`, saturating to 0 for counts beyond an `i32`.
fn half_pow(n: usize) -> f64 {
    0.5f64.powi(n.min(1 << 20) as i32)
}

/// The distribution of a count after `steps` more fair coin flips, each adding 1 on heads.
fn binomial_steps(dist: &[f64], steps: usize) -> Vec<f64> {
    let mut d = dist.to_vec();
    for _ in 0..steps {
        let mut next = vec![0.0; d.len() + 1];
        for (c, p) in d.iter().enumerate() {
            next[c] += p / 2.0;
            next[c + 1] += p / 2.0;
        }
        d = next;
    }
    d
}

/// The looks of the spending function over `max_runs`, the first at the fewest runs that
/// `can_decide` at what has been spent by then, later ones every [`LOOK_EVERY`] runs (a look
/// that cannot decide at its increment is skipped, its α carried on) and the last at `max_runs`.
fn looks_where(alpha: f64, max_runs: usize, can_decide: impl Fn(usize, f64) -> bool) -> Vec<Look> {
    let at = |n: usize| spent(alpha, n as f64 / max_runs as f64);
    let mut out = Vec::new();
    let mut spent_so_far = 0.0;
    for n in look_times(alpha, max_runs, &can_decide) {
        let increment = at(n) - spent_so_far;
        if !can_decide(n, increment) && n != max_runs {
            continue; // cannot decide here: carry its α to the next look
        }
        spent_so_far = at(n);
        out.push(Look { runs: n, alpha: increment, spent: spent_so_far });
    }
    out
}

/// The runs at which a design may look: the first at the fewest that `can_decide` at what the
/// spending function has spent by then, then every [`LOOK_EVERY`] runs, and `max_runs`. None
/// when no count up to `max_runs` can decide.
fn look_times(alpha: f64, max_runs: usize, can_decide: impl Fn(usize, f64) -> bool) -> Vec<usize> {
    let Some(first) = (1..=max_runs).find(|&n| can_decide(n, spent(alpha, n as f64 / max_runs as f64))) else { return Vec::new() };
    let mut times: Vec<usize> = (first..max_runs).step_by(LOOK_EVERY).collect();
    times.push(max_runs);
    times
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

    /// The depth `k` of the median's bound that `median_bounds` takes at a look's level.
    fn depth(l: &Look) -> usize {
        (1..=l.runs.div_ceil(2)).take_while(|&k| crate::bootstrap::binomial_half_cdf(l.runs, k - 1) <= l.alpha).last().unwrap_or(0)
    }

    /// The design recomputed independently from its definition by
    /// `scripts/expectation_sequential_exact.py` (scipy 1.17.1): look times, depths and levels.
    #[test]
    fn expectation_looks_match_the_scipy_reference() {
        // (at most, [(runs, depth, level)])
        type Case = (usize, &'static [(usize, usize, f64)]);
        let cases: [Case; 4] = [
            (6, &[(5, 1, 0.031250), (6, 1, 0.015625)]),
            (10, &[(6, 1, 0.015625), (9, 2, 0.019531), (10, 2, 0.010742)]),
            (16, &[(6, 1, 0.015625), (9, 2, 0.019531), (12, 3, 0.019287), (15, 4, 0.017578), (16, 4, 0.010635)]),
            (20, &[(6, 1, 0.015625), (9, 2, 0.019531), (12, 3, 0.019287), (15, 4, 0.017578), (18, 5, 0.015442), (20, 5, 0.005909)]),
        ];
        for (max, want) in cases {
            let got: Vec<(usize, usize, f64)> = expectation_looks(0.05, max).iter().map(|l| (l.runs, depth(l), (l.alpha * 1e6).round() / 1e6)).collect();
            assert_eq!(got, want, "at most {max} runs");
        }
        // Fewer runs than any bound needs: no look; the first look is the earliest that can decide.
        assert!(expectation_looks(0.05, 4).is_empty());
        assert_eq!(expectation_looks(0.05, 8)[0].runs, 5);
        assert_eq!(looks(0.05, 8, 2)[0].runs, 4, "where a median could not yet be bounded at all");
    }

    /// The chance of a wrong verdict over all looks, by enumerating every pattern of runs above
    /// (+1) and below (−1) a threshold of 0 through the crate's own `median_bounds` and `judge`
    /// as `ccbench run` takes the looks, weighted by `P(run ≥ T) = p`. At `p = ½` (the median on
    /// the threshold) pass and fail are each a wrong verdict: at most α, and equal to the exact
    /// binomial walk of `scripts/expectation_sequential_exact.py` (scipy), as is the chance to
    /// pass at `p = ¾`.
    #[test]
    fn expectation_looks_wrong_verdicts_by_enumeration_match_the_exact_walk() {
        use crate::expectation::{judge, median_bounds, Judgement, Side};
        // (max runs, p, scipy's P(pass), P(fail), mean runs)
        let cases = [
            (10, 0.5f64, 0.02734375, 0.02734375, 9.8515625),
            (10, 0.75, 0.32814788818359375, 0.0003128051757812501, 9.136871337890623),
            (16, 0.5, 0.04095458984375, 0.04095458984375, 15.447875976562509),
            (16, 0.75, 0.534374138340354, 0.0003350842744112016, 12.611365668475624),
        ];
        for (max, p, want_pass, want_fail, want_runs) in cases {
            let design = expectation_looks(0.05, max);
            let (mut pass, mut fail, mut runs, mut pass_anywhere) = (0.0, 0.0, 0.0, 0.0);
            for mask in 0u32..(1 << max) {
                let xs: Vec<f64> = (0..max).map(|i| if mask >> i & 1 == 1 { 1.0 } else { -1.0 }).collect();
                let above = mask.count_ones() as i32;
                let weight = p.powi(above) * (1.0 - p).powi(max as i32 - above);
                let mut stopped = max;
                // Judged "pass" at any look, as one expectation among several is (the run goes
                // on until all are decided): what the design records as spent.
                if design.iter().any(|l| judge(&median_bounds(&xs[..l.runs], l.alpha).unwrap(), Side::AtLeast { strict: false }, 0.0) == Judgement::Pass) {
                    pass_anywhere += weight;
                }
                for l in &design {
                    let b = median_bounds(&xs[..l.runs], l.alpha).unwrap();
                    match judge(&b, Side::AtLeast { strict: false }, 0.0) {
                        Judgement::Pass => pass += weight,
                        Judgement::Fail => fail += weight,
                        Judgement::Undecided => continue,
                    }
                    stopped = l.runs;
                    break;
                }
                runs += weight * stopped as f64;
            }
            let close = |a: f64, b: f64| (a - b).abs() < 1e-12;
            assert!(close(pass, want_pass) && close(fail, want_fail) && close(runs, want_runs), "max {max}, p {p}: pass {pass} fail {fail} runs {runs}");
            if p == 0.5 {
                assert!(pass <= 0.05 && fail <= 0.05);
                // The design records what it spent: the exact chance of a pass at any look, the
                // same as enumerated (and here the same as the first decision's, as no walk can
                // fail and then pass between these looks).
                assert!(close(design.last().unwrap().spent, pass_anywhere) && close(pass_anywhere, pass), "{:?} {pass_anywhere}", design.last());
            }
        }
    }

    /// Issue 28 §6: the designs whose last runs cannot change the verdict, found from the
    /// looks themselves (the last look's increment below the smallest p its runs allow).
    #[test]
    fn designs_whose_last_runs_cannot_change_the_verdict() {
        // Two algorithms at most 5: the look at 4 spends 0.0432, leaving 0.0068 < 2/252 for 5.
        let d = looks(0.05, 5, 2);
        assert_eq!(d.iter().map(|l| l.runs).collect::<Vec<_>>(), [4, 5]);
        assert!(d[1].alpha < min_p(5));
        assert_eq!(idle_tail(&d, Some(2)), Some((5, 5)));
        // Three at most 6: the look at 5 leaves 0.0056 < 3 · 2/924 for 6.
        assert_eq!(design_for(0.05, 6, 3).1, Some((6, 6)));
        // One contender's expectations at most 8: the look at 5 spends ½⁵; no depth fits at 8.
        let (d, tail) = design_for(0.05, 8, 1);
        assert_eq!(d.iter().map(|l| l.runs).collect::<Vec<_>>(), [5, 8]);
        // Its bound at 8 is x_(1) again: all 8 runs beyond the threshold, which look 5 decided.
        assert!((d[1].alpha - 0.5f64.powi(8)).abs() < 1e-15);
        assert_eq!(tail, Some((6, 8)));
        // Expectations at most 20 (the default): depth 5 at 18 runs and again at 20.
        assert_eq!(design_for(0.05, 20, 1).1, Some((19, 20)));
        // Designs whose every look can decide have none: the comparisons' defaults and their
        // neighbours, and expectation designs whose last look bounds deeper than the earlier.
        for (max, k) in [(20, 2), (20, 3), (6, 2), (4, 2), (7, 3), (5, 3), (9, 1), (11, 1), (5, 1)] {
            assert_eq!(design_for(0.05, max, k).1, None, "at most {max}, {k} contenders");
        }
        // The tail of a comparison's design is judged from its last look: its increment below
        // the smallest p its runs allow.
        for k in 2..=5 {
            for max in 1..=60 {
                let (d, tail) = design_for(0.05, max, k);
                let Some(last) = d.last() else { continue };
                let decides = family_size(k) as f64 * min_p(last.runs) < last.alpha;
                assert_eq!(tail.is_some(), !decides && d.len() > 1, "k {k} max {max}: {d:?}");
            }
        }
        // An expectation's: by simulating every pattern of runs above and below a threshold up
        // to 12 runs through `median_bounds` and `judge` as `ccbench run` takes the looks: a
        // tail exists exactly when no pattern undecided before it is decided in it.
        use crate::expectation::{judge, median_bounds, Judgement, Side};
        for max in 5..=12usize {
            let (d, tail) = design_for(0.05, max, 1);
            let mut decided_late = false;
            let from = tail.map_or(max + 1, |t| t.0);
            for mask in 0u32..(1 << max) {
                let xs: Vec<f64> = (0..max).map(|i| if mask >> i & 1 == 1 { 1.0 } else { -1.0 }).collect();
                for l in &d {
                    let j = judge(&median_bounds(&xs[..l.runs], l.alpha).unwrap(), Side::AtLeast { strict: false }, 0.0);
                    if j != Judgement::Undecided {
                        decided_late |= l.runs >= from;
                        break;
                    }
                }
            }
            assert!(!decided_late, "at most {max}: a look in the tail {tail:?} decided");
            if tail.is_none() {
                // The last look decides some pattern no earlier look did.
                let last = d.last().unwrap().runs;
                let late = (0u32..(1 << max)).any(|mask| {
                    let xs: Vec<f64> = (0..max).map(|i| if mask >> i & 1 == 1 { 1.0 } else { -1.0 }).collect();
                    let js: Vec<Judgement> =
                        d.iter().map(|l| judge(&median_bounds(&xs[..l.runs], l.alpha).unwrap(), Side::AtLeast { strict: false }, 0.0)).collect();
                    js[..js.len() - 1].iter().all(|j| *j == Judgement::Undecided) && js[js.len() - 1] != Judgement::Undecided
                });
                assert!(late, "at most {max}: the last look at {last} decides something");
            }
        }
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
        assert_eq!(looks(0.05, 4, 2), vec![Look { runs: 4, alpha: spent(0.05, 1.0), spent: spent(0.05, 1.0) }]);
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
