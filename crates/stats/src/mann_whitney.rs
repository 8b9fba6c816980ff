//! Two-sided Mann–Whitney U (Wilcoxon rank-sum) test.

use serde::{Deserialize, Serialize};
use statrs::function::erf::erfc;

use crate::all_finite_nonempty;

/// Largest per-group size for which the exact permutation distribution is used (with or
/// without ties). With both groups ≤ 50 the dynamic programme over doubled midrank sums has at
/// most 100 × 51 × 10 101 cells: a few tens of milliseconds.
pub const EXACT_MAX_N: usize = 50;

/// How the p-value of a [`MannWhitney`] result was obtained.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum MwMethod {
    /// Exact permutation distribution of the rank sum, conditional on the observed ties
    /// (midranks), both groups ≤ [`EXACT_MAX_N`].
    Exact,
    /// Normal approximation with tie correction and continuity correction (larger groups).
    NormalApprox,
}

/// Result of [`mann_whitney_u`].
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub struct MannWhitney {
    /// U statistic of `a`: number of pairs `(a_i, b_j)` with `a_i > b_j`,
    /// ties counting ½ (same as scipy's statistic for the first sample).
    pub u_a: f64,
    /// U statistic of `b`; `u_a + u_b = n_a · n_b`.
    pub u_b: f64,
    /// Two-sided p-value, in `[0, 1]`.
    pub p_value: f64,
    pub method: MwMethod,
}

/// Two-sided Mann–Whitney U test of `a` vs `b`.
///
/// * **Exact** when both groups have at most [`EXACT_MAX_N`] values, ties or not: every one
///   of the `C(n_a + n_b, n_a)` ways to split the pooled (mid)ranks into the two groups is
///   equally likely under H0, and `p = min(1, 2 · min(P(S ≤ s), P(S ≥ s)))` for the rank sum
///   `S` of `a`. This is the permutation test conditional on the ties: tied zeros from failed
///   transfers no longer fall back to an approximation whose p is too small.
/// * **Normal approximation** otherwise: mean `n_a n_b / 2`, variance
///   `n_a n_b / 12 · ((N + 1) − Σ(t³ − t) / (N (N − 1)))` over tie groups of
///   size `t`, continuity correction 0.5, `p = min(1, 2 · (1 − Φ(z)))` with
///   `z = (max(u_a, u_b) − mean − 0.5) / sd`. If every value is identical
///   (variance 0) the p-value is 1.
///
/// Returns `None` if either slice is empty or contains a non-finite value.
pub fn mann_whitney_u(a: &[f64], b: &[f64]) -> Option<MannWhitney> {
    if !all_finite_nonempty(a) || !all_finite_nonempty(b) {
        return None;
    }
    let (n_a, n_b) = (a.len(), b.len());
    let ranks = doubled_midranks(a, b);
    let doubled_sum_a: u64 = ranks.iter().filter(|r| r.1).map(|r| r.0).sum();
    let na = n_a as f64;
    let nb = n_b as f64;
    let u_a = doubled_sum_a as f64 / 2.0 - na * (na + 1.0) / 2.0;
    let u_b = na * nb - u_a;

    if n_a <= EXACT_MAX_N && n_b <= EXACT_MAX_N {
        let pooled: Vec<u64> = ranks.iter().map(|r| r.0).collect();
        let p = exact_p(&pooled, n_a, doubled_sum_a);
        Some(MannWhitney { u_a, u_b, p_value: p, method: MwMethod::Exact })
    } else {
        let p = normal_approx_p(u_a, u_b, n_a, n_b, tie_term(&ranks));
        Some(MannWhitney { u_a, u_b, p_value: p, method: MwMethod::NormalApprox })
    }
}

/// Each pooled value's doubled (mid)rank — an integer even with ties, since a tie group over
/// 1-based positions `i+1 ..= j` has midrank `(i + 1 + j) / 2` — and whether it came from `a`.
fn doubled_midranks(a: &[f64], b: &[f64]) -> Vec<(u64, bool)> {
    let mut pooled: Vec<(f64, bool)> = a.iter().map(|&x| (x, true)).chain(b.iter().map(|&x| (x, false))).collect();
    pooled.sort_unstable_by(|x, y| x.0.total_cmp(&y.0));
    let mut out = Vec::with_capacity(pooled.len());
    let mut i = 0;
    while i < pooled.len() {
        let mut j = i + 1;
        // `==` (not total_cmp) so that -0.0 and 0.0 count as a tie.
        while j < pooled.len() && pooled[j].0 == pooled[i].0 {
            j += 1;
        }
        let doubled = (i + 1 + j) as u64;
        out.extend(pooled[i..j].iter().map(|p| (doubled, p.1)));
        i = j;
    }
    out
}

/// Σ(t³ − t) over tie groups (equal doubled ranks are one group).
fn tie_term(ranks: &[(u64, bool)]) -> f64 {
    let mut term = 0.0;
    let mut i = 0;
    while i < ranks.len() {
        let j = i + ranks[i..].iter().take_while(|r| r.0 == ranks[i].0).count();
        let t = (j - i) as f64;
        term += t * t * t - t;
        i = j;
    }
    term
}

/// Two-sided exact permutation p-value of the doubled rank sum `observed` of a group of `k`
/// values drawn from `pooled` (doubled ranks), conditional on the ties in `pooled`.
///
/// `ways[c][s]` counts the subsets of the values seen so far with `c` members and doubled rank
/// sum `s`; adding one value either leaves it out or takes it. Counts reach `C(100, 50) ≈ 1e29`,
/// well inside f64, whose relative error (1e-16) is far below any printed digit.
fn exact_p(pooled: &[u64], k: usize, observed: u64) -> f64 {
    let max_sum: u64 = pooled.iter().sum();
    let width = max_sum as usize + 1;
    let mut ways = vec![vec![0.0f64; width]; k + 1];
    ways[0][0] = 1.0;
    for (seen, &r) in pooled.iter().enumerate() {
        let r = r as usize;
        for c in (1..=k.min(seen + 1)).rev() {
            let (lower, upper) = ways.split_at_mut(c);
            let (from, to) = (&lower[c - 1], &mut upper[0]);
            for s in (r..width).rev() {
                to[s] += from[s - r];
            }
        }
    }
    let dist = &ways[k];
    let total: f64 = dist.iter().sum();
    let obs = observed as usize;
    let le: f64 = dist[..=obs].iter().sum();
    let ge: f64 = dist[obs..].iter().sum();
    (2.0 * le.min(ge) / total).min(1.0)
}

/// Two-sided normal-approximation p-value with tie and continuity correction.
fn normal_approx_p(u_a: f64, u_b: f64, n_a: usize, n_b: usize, tie_term: f64) -> f64 {
    let na = n_a as f64;
    let nb = n_b as f64;
    let big_n = na + nb;
    let mean = na * nb / 2.0;
    let var = na * nb / 12.0 * ((big_n + 1.0) - tie_term / (big_n * (big_n - 1.0)));
    if var.is_nan() || var <= 0.0 {
        return 1.0;
    }
    let z = (u_a.max(u_b) - mean - 0.5) / var.sqrt();
    // 2 · (1 − Φ(z)) = erfc(z / √2)
    erfc(z / std::f64::consts::SQRT_2).clamp(0.0, 1.0)
}

/// Smallest equal group size `n` for which complete separation of two groups
/// of `n` runs gives an exact two-sided p-value strictly below `alpha`, i.e.
/// `2 / C(2n, n) < alpha`. For `alpha = 0.05` this is 4 (p = 2/70 ≈ 0.029);
/// with 3 runs per arm the best possible p is 0.1.
///
/// Returns `usize::MAX` ("never") if `alpha` is not positive or is NaN.
pub fn min_runs_for_significance(alpha: f64) -> usize {
    if alpha.is_nan() || alpha <= 0.0 {
        return usize::MAX;
    }
    // binom = C(2n, n), updated as C(2n, n) = C(2n−2, n−1) · 2n(2n−1) / n².
    let mut binom = 2.0_f64; // n = 1
    let mut n = 1usize;
    loop {
        // Terminates: binom grows like 4^n and reaches +∞ (p = 0) near n ≈ 515.
        let p = (2.0 / binom).min(1.0);
        if p < alpha {
            return n;
        }
        n += 1;
        let nf = n as f64;
        binom *= (2.0 * nf) * (2.0 * nf - 1.0) / (nf * nf);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rel_close(a: f64, b: f64, tol: f64) -> bool {
        (a - b).abs() <= tol * b.abs().max(1e-300)
    }

    fn seq(start: f64, step: f64, len: usize) -> Vec<f64> {
        (0..len).map(|i| start + step * i as f64).collect()
    }

    #[test]
    fn exact_complete_separation() {
        let r = mann_whitney_u(&[5.0, 6.0, 7.0, 8.0, 9.0], &[0.0, 1.0, 2.0, 3.0, 4.0]).unwrap();
        assert_eq!(r.method, MwMethod::Exact);
        assert_eq!((r.u_a, r.u_b), (25.0, 0.0));
        assert!(rel_close(r.p_value, 2.0 / 252.0, 1e-12), "{}", r.p_value);
        assert!(rel_close(r.p_value, 0.007936507936507936, 1e-12));

        let r = mann_whitney_u(&[1.0, 2.0, 3.0, 4.0], &[5.0, 6.0, 7.0, 8.0]).unwrap();
        assert_eq!((r.u_a, r.u_b), (0.0, 16.0));
        assert!(rel_close(r.p_value, 2.0 / 70.0, 1e-12), "{}", r.p_value);

        let r = mann_whitney_u(&[1.0, 2.0, 3.0], &[4.0, 5.0, 6.0]).unwrap();
        assert!(rel_close(r.p_value, 0.1, 1e-12), "{}", r.p_value);
    }

    #[test]
    fn exact_partial_overlap_matches_scipy() {
        // scipy.stats.mannwhitneyu(a, b, method="exact") -> U=9, p=0.32900432900432897
        let r = mann_whitney_u(&[1.0, 2.0, 5.0, 7.0, 9.0], &[3.0, 4.0, 6.0, 8.0, 10.0, 11.0]).unwrap();
        assert_eq!(r.method, MwMethod::Exact);
        assert_eq!((r.u_a, r.u_b), (9.0, 21.0));
        assert!(rel_close(r.p_value, 0.32900432900432897, 1e-10), "{}", r.p_value);
        // = 2 · 76 / C(11, 5) = 152 / 462
        assert!(rel_close(r.p_value, 152.0 / 462.0, 1e-12));
    }

    #[test]
    fn exact_at_size_limit_matches_scipy() {
        // a = 0, 2, …, 98; b = 15, 17, …, 113 (no ties). scipy exact: U=903,
        // p=0.016450137297189936
        let a = seq(0.0, 2.0, 50);
        let b = seq(15.0, 2.0, 50);
        let r = mann_whitney_u(&a, &b).unwrap();
        assert_eq!(r.method, MwMethod::Exact);
        assert_eq!(r.u_a, 903.0);
        assert!(rel_close(r.p_value, 0.016450137297189936, 1e-9), "{}", r.p_value);
    }

    /// Independent reference: enumerate every split of the pooled values into groups of the
    /// original sizes, compute U by counting pairs (ties ½), and take 2 · the smaller tail.
    fn brute_force_p(a: &[f64], b: &[f64]) -> f64 {
        let pooled: Vec<f64> = a.iter().chain(b).copied().collect();
        let n = pooled.len();
        let u_of = |mask: u32| -> f64 {
            let mut u = 0.0;
            for i in (0..n).filter(|i| mask & (1 << i) != 0) {
                for j in (0..n).filter(|j| mask & (1 << j) == 0) {
                    u += if pooled[i] > pooled[j] {
                        1.0
                    } else if pooled[i] == pooled[j] {
                        0.5
                    } else {
                        0.0
                    };
                }
            }
            u
        };
        let observed = u_of((1u32 << a.len()) - 1);
        let (mut le, mut ge, mut total) = (0u64, 0u64, 0u64);
        for mask in 0u32..(1 << n) {
            if mask.count_ones() as usize != a.len() {
                continue;
            }
            let u = u_of(mask);
            total += 1;
            le += u64::from(u <= observed + 1e-9);
            ge += u64::from(u >= observed - 1e-9);
        }
        (2.0 * le.min(ge) as f64 / total as f64).min(1.0)
    }

    #[test]
    fn ties_use_the_exact_conditional_distribution() {
        // The cases: the normal approximation gave 0.0497 and 0.047. References from
        // scipy.stats.permutation_test((a, b), lambda x, y: mannwhitneyu(x, y).statistic,
        //   permutation_type="independent", n_resamples=np.inf, alternative="two-sided").
        let r = mann_whitney_u(&[5.0, 6.0, 7.0], &[0.0, 0.0, 1.0, 2.0]).unwrap();
        assert_eq!(r.method, MwMethod::Exact);
        assert!(rel_close(r.p_value, 2.0 / 35.0, 1e-12), "{}", r.p_value); // scipy 0.05714285714285714
        let r = mann_whitney_u(&[4.0, 4.0, 4.0], &[2.0, 2.0, 2.0]).unwrap();
        assert!(rel_close(r.p_value, 0.1, 1e-12), "3 vs 3 cannot go below 0.1: {}", r.p_value); // scipy 0.1
                                                                                                // Tied zeros from failed transfers on both sides: scipy 0.38095238095238093.
        let r = mann_whitney_u(&[0.0, 0.0, 9.0, 8.0, 7.0], &[0.0, 1.0, 2.0, 0.0, 3.0]).unwrap();
        assert!(rel_close(r.p_value, 0.38095238095238093, 1e-12), "{}", r.p_value);
        // A mix of ties inside and across groups: scipy 0.14219114219114218.
        let r = mann_whitney_u(&[1.0, 2.0, 2.0, 3.0, 4.0, 5.0], &[2.0, 3.0, 3.0, 4.0, 6.0, 7.0, 8.0]).unwrap();
        assert_eq!((r.u_a, r.u_b), (10.5, 31.5));
        assert!(rel_close(r.p_value, 0.14219114219114218, 1e-12), "{}", r.p_value);
    }

    #[test]
    fn exact_matches_enumeration_with_and_without_ties() {
        use rand::{Rng, SeedableRng};
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(11);
        for case in 0..300 {
            let n_a = rng.gen_range(1..=7);
            let n_b = rng.gen_range(1..=7);
            // Few distinct values so that ties are common; every third case without ties (almost surely).
            let levels = if case % 3 == 0 { 100_000 } else { rng.gen_range(1..=5) };
            let mut draw = |n: usize| (0..n).map(|_| f64::from(rng.gen_range(0..levels))).collect::<Vec<f64>>();
            let (a, b) = (draw(n_a), draw(n_b));
            let r = mann_whitney_u(&a, &b).unwrap();
            let want = brute_force_p(&a, &b);
            assert!(rel_close(r.p_value, want, 1e-10), "{a:?} vs {b:?}: {} != {want}", r.p_value);
        }
    }

    #[test]
    fn normal_approx_large_samples_matches_scipy() {
        // a = 0..59, b = 20.5..74.5 (55 values, > EXACT_MAX_N), scipy asymptotic:
        // U=780, p=1.1258207796772894e-06
        let a = seq(0.0, 1.0, 60);
        let b = seq(20.5, 1.0, 55);
        let r = mann_whitney_u(&a, &b).unwrap();
        assert_eq!(r.method, MwMethod::NormalApprox);
        assert_eq!(r.u_a, 780.0);
        assert!(rel_close(r.p_value, 1.1258207796772894e-06, 1e-8), "{}", r.p_value);
    }

    #[test]
    fn normal_approx_formula_without_ties() {
        // Same data as the exact scipy case above, scipy asymptotic:
        // p=0.31530245208174557. Hand check: mean 15, var 30·12/12 = 30,
        // z = (21 − 15 − 0.5)/√30.
        let p = normal_approx_p(9.0, 21.0, 5, 6, 0.0);
        assert!(rel_close(p, 0.31530245208174557, 1e-10), "{p}");
    }

    #[test]
    fn all_tied_gives_p_one() {
        let r = mann_whitney_u(&[3.0, 3.0, 3.0], &[3.0, 3.0]).unwrap();
        assert_eq!(r.method, MwMethod::Exact);
        assert_eq!((r.u_a, r.u_b), (3.0, 3.0));
        assert_eq!(r.p_value, 1.0);
        // Near-identical groups: p capped at 1.
        let r = mann_whitney_u(&[1.0, 2.0, 3.0], &[1.5, 2.5]).unwrap();
        assert!(r.p_value <= 1.0 && r.p_value > 0.5);
    }

    #[test]
    fn u_is_symmetric_in_arguments() {
        let a = [1.0, 4.0, 4.0, 9.0];
        let b = [2.0, 4.0, 7.0];
        let x = mann_whitney_u(&a, &b).unwrap();
        let y = mann_whitney_u(&b, &a).unwrap();
        assert_eq!((x.u_a, x.u_b), (y.u_b, y.u_a));
        assert_eq!(x.p_value, y.p_value);
        assert_eq!(x.u_a + x.u_b, 12.0);
    }

    #[test]
    fn bad_input() {
        assert!(mann_whitney_u(&[], &[1.0]).is_none());
        assert!(mann_whitney_u(&[1.0], &[]).is_none());
        assert!(mann_whitney_u(&[f64::NAN], &[1.0]).is_none());
        assert!(mann_whitney_u(&[1.0], &[f64::NEG_INFINITY]).is_none());
    }

    #[test]
    fn min_runs() {
        assert_eq!(min_runs_for_significance(0.05), 4);
        assert_eq!(min_runs_for_significance(0.01), 5); // 2/252 ≈ 0.0079
        assert_eq!(min_runs_for_significance(0.1), 4); // n=3 gives exactly 0.1, not < 0.1
        assert_eq!(min_runs_for_significance(0.1000001), 3);
        assert_eq!(min_runs_for_significance(0.001), 7); // n=6: 2/924 ≈ 0.0022; n=7: 2/3432 ≈ 0.00058
        assert_eq!(min_runs_for_significance(2.0), 1);
        assert_eq!(min_runs_for_significance(0.0), usize::MAX);
        assert_eq!(min_runs_for_significance(f64::NAN), usize::MAX);
        assert!(min_runs_for_significance(1e-300) < 600);
    }

    #[test]
    fn serializes_method_snake_case() {
        let r = mann_whitney_u(&[1.0, 2.0], &[3.0, 4.0]).unwrap();
        let v = serde_json::to_value(r).unwrap();
        assert_eq!(v["method"], "exact");
        assert_eq!(serde_json::to_value(MwMethod::NormalApprox).unwrap(), "normal_approx");
    }
}
