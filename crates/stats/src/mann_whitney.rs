//! Two-sided Mann–Whitney U (Wilcoxon rank-sum) test.

use serde::{Deserialize, Serialize};
use statrs::function::erf::erfc;

use crate::all_finite_nonempty;

/// Largest per-group size for which the exact null distribution is used
/// (when there are also no ties). With both groups ≤ 50 the product
/// `n_a · n_b` is ≤ 2500 and the dynamic programme costs at most a few
/// million floating-point operations.
pub const EXACT_MAX_N: usize = 50;

/// How the p-value of a [`MannWhitney`] result was obtained.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum MwMethod {
    /// Exact permutation distribution of U (no ties, both groups ≤ [`EXACT_MAX_N`]).
    Exact,
    /// Normal approximation with tie correction and continuity correction.
    NormalApprox,
}

/// Result of [`mann_whitney_u`].
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
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
/// * **Exact** when there are no ties in the pooled sample and both groups
///   have at most [`EXACT_MAX_N`] values: `p = min(1, 2 · P(U ≤ min(u_a, u_b)))`
///   under the permutation null distribution, computed by dynamic programming.
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
    let (rank_sum_a, tie_term) = rank_sum_first(a, b);
    let na = n_a as f64;
    let nb = n_b as f64;
    let u_a = rank_sum_a - na * (na + 1.0) / 2.0;
    let u_b = na * nb - u_a;

    let has_ties = tie_term > 0.0;
    if !has_ties && n_a <= EXACT_MAX_N && n_b <= EXACT_MAX_N {
        // Without ties U is an integer; round to guard against float noise.
        let k = u_a.min(u_b).round() as usize;
        let p = (2.0 * exact_cdf(n_a, n_b, k)).min(1.0);
        Some(MannWhitney { u_a, u_b, p_value: p, method: MwMethod::Exact })
    } else {
        let p = normal_approx_p(u_a, u_b, n_a, n_b, tie_term);
        Some(MannWhitney { u_a, u_b, p_value: p, method: MwMethod::NormalApprox })
    }
}

/// Sum of (mid)ranks of `a` in the pooled sample, and the tie term Σ(t³ − t).
fn rank_sum_first(a: &[f64], b: &[f64]) -> (f64, f64) {
    let mut pooled: Vec<(f64, bool)> = a.iter().map(|&x| (x, true)).chain(b.iter().map(|&x| (x, false))).collect();
    pooled.sort_unstable_by(|x, y| x.0.total_cmp(&y.0));
    let mut rank_sum_a = 0.0;
    let mut tie_term = 0.0;
    let mut i = 0;
    while i < pooled.len() {
        let mut j = i + 1;
        // `==` (not total_cmp) so that -0.0 and 0.0 count as a tie.
        while j < pooled.len() && pooled[j].0 == pooled[i].0 {
            j += 1;
        }
        // Positions i..j (0-based) share the average 1-based rank.
        let t = (j - i) as f64;
        let mid_rank = (i + 1 + j) as f64 / 2.0;
        let in_a = pooled[i..j].iter().filter(|p| p.1).count() as f64;
        rank_sum_a += in_a * mid_rank;
        tie_term += t * t * t - t;
        i = j;
    }
    (rank_sum_a, tie_term)
}

/// `P(U ≤ k)` under H0 for group sizes `m` and `n` (no ties), where U counts
/// pairs in which the first group's value is larger.
///
/// Recurrence on the pooled maximum: it belongs to the first group with
/// probability `i / (i + j)` and then beats all `j` values of the second group,
/// so `p(i, j, u) = i/(i+j) · p(i−1, j, u−j) + j/(i+j) · p(i, j−1, u)`, with
/// `p(0, j, ·) = p(i, 0, ·) = δ₀`. Only `u ≤ k` is ever needed, because the
/// recurrence never lowers `u`. Working with probabilities (not counts) keeps
/// every term in `[0, 1]`.
fn exact_cdf(m: usize, n: usize, k: usize) -> f64 {
    let k = k.min(m * n);
    let width = k + 1;
    let delta = {
        let mut d = vec![0.0; width];
        d[0] = 1.0;
        d
    };
    // prev[j] = distribution p(i-1, j, ·) truncated to 0..=k
    let mut prev: Vec<Vec<f64>> = vec![delta.clone(); n + 1];
    let mut cur: Vec<Vec<f64>> = vec![vec![0.0; width]; n + 1];
    for i in 1..=m {
        cur[0].copy_from_slice(&delta);
        for j in 1..=n {
            let w_a = i as f64 / (i + j) as f64;
            let w_b = j as f64 / (i + j) as f64;
            let (done, rest) = cur.split_at_mut(j);
            let left = &done[j - 1];
            let out = &mut rest[0];
            for u in 0..width {
                let from_a = if u >= j { prev[j][u - j] } else { 0.0 };
                out[u] = w_a * from_a + w_b * left[u];
            }
        }
        std::mem::swap(&mut prev, &mut cur);
    }
    prev[n].iter().sum::<f64>().min(1.0)
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

    #[test]
    fn exact_distribution_is_a_distribution() {
        for (m, n) in [(1, 1), (3, 7), (6, 6), (10, 4)] {
            let total = exact_cdf(m, n, m * n);
            assert!((total - 1.0).abs() < 1e-12, "{m},{n}: {total}");
            // Symmetry: P(U ≤ k) = 1 − P(U ≤ mn − k − 1)
            for k in 0..m * n {
                let lhs = exact_cdf(m, n, k);
                let rhs = 1.0 - exact_cdf(m, n, m * n - k - 1);
                assert!((lhs - rhs).abs() < 1e-12, "{m},{n},{k}");
            }
        }
        // P(U ≤ 1) for 4 vs 4 = 2/70 (U=0 and U=1 each have one arrangement).
        assert!(rel_close(exact_cdf(4, 4, 1), 2.0 / 70.0, 1e-12));
    }

    #[test]
    fn normal_approx_with_ties_matches_scipy() {
        // scipy asymptotic, use_continuity=True: U=10.5, p=0.14801830727232673
        let r = mann_whitney_u(&[1.0, 2.0, 2.0, 3.0, 4.0, 5.0], &[2.0, 3.0, 3.0, 4.0, 6.0, 7.0, 8.0]).unwrap();
        assert_eq!(r.method, MwMethod::NormalApprox);
        assert_eq!((r.u_a, r.u_b), (10.5, 31.5));
        assert!(rel_close(r.p_value, 0.14801830727232673, 1e-9), "{}", r.p_value);
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
        assert_eq!(r.method, MwMethod::NormalApprox);
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
