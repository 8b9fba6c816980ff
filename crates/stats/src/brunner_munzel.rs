//! The permuted Brunner–Munzel test: a rank test whose error stays near α when the two arms
//! differ in spread, and the ratio interval that inverts it.
//!
//! **Why not Mann–Whitney alone.** The exact Mann–Whitney test is distribution-free only when
//! both arms have the *same* distribution. A steady algorithm (CV 1 %) against an erratic one
//! (CV 20 %) with the same median is called different about 10 % of the time at α = 0.05.
//!
//! **The test.** The Brunner–Munzel statistic (Brunner & Munzel 2000, *Biometrical Journal*
//! 42:17) studentizes the rank difference by each arm's own placement variance, so it tests
//! `P(A < B) + ½ P(A = B) = ½` without assuming equal spreads. Its p-value is taken from the
//! **permutation distribution** of the statistic (Neubert & Brunner 2007, *Comput. Statist.
//! Data Anal.* 51:5192; Janssen 1997 and Chung & Romano 2013 on studentized permutation tests):
//! exact when the arms have the same distribution (any statistic's permutation test is), and
//! asymptotically valid when they do not. With `C(n_a + n_b, n_a)` up to
//! [`EXACT_MAX_PERMUTATIONS`] every split is enumerated; beyond, [`MONTE_CARLO_PERMUTATIONS`]
//! random splits from a fixed seed (deterministic), `p = (1 + #{T*² ≥ T²}) / (1 + B)`.
//!
//! **Exact arithmetic.** With doubled placements (integers even with ties),
//! `T² = D² (n_a − 1)(n_b − 1) / (Q_a (n_b − 1) + Q_b (n_a − 1))` where `D = 2 U_b − n_a n_b`
//! and `Q = n Σ dp² − (Σ dp)²`: a ratio of integers, so splits with mathematically equal
//! statistics compare equal (no rounding decides a p-value).
//!
//! **Both p-values must reject.** At 10 runs with one arm 20× as spread as the other, the
//! permutation p alone rejected 7.8 % of equal medians (`examples/spread_power.rs`): its
//! reference distribution comes from relabelled runs, which then no longer match. Brunner and
//! Munzel's own approximation (Student's t with Satterthwaite's degrees of freedom, scipy's
//! `brunnermunzel`) is conservative there but not exact when the arms are alike. The test takes
//! the larger of the two p-values: with equal distributions it rejects no more often than the
//! exact permutation test (its size is computed exactly over the same splits), and with unequal
//! spreads no more often than the better-behaved of the two.
//!
//! **Complete separation** gives `T = ±∞` and only the two separated splits reach it, so the
//! smallest p is `2 / C(2n, n)`, as for Mann–Whitney: [`crate::sequential`] still applies.
//!
//! **The interval** ([`brunner_munzel_ratio_ci`]): the ratios `θ` for which the same test of
//! `a` against `θ · b` does not reject (the test inverted over shifts of the log ratio), so it
//! excludes 1 exactly when the test rejects, ties included.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, OnceLock};

use rand::{Rng, SeedableRng};
use serde::{Deserialize, Serialize};

use crate::all_finite_nonempty;
use crate::bootstrap::{CiMethod, RatioCi};

/// Up to this many splits the permutation distribution is enumerated (10 vs 10 runs: 184,756).
pub const EXACT_MAX_PERMUTATIONS: u64 = 200_000;

/// Random splits beyond [`EXACT_MAX_PERMUTATIONS`]: a p-value near 0.005 then has a Monte
/// Carlo standard error of 0.00035 (7 %).
pub const MONTE_CARLO_PERMUTATIONS: usize = 40_000;

/// Seed of the Monte Carlo splits: the same data always give the same p.
const SEED: u64 = 0x005E_EDB4;

/// How a [`BrunnerMunzel`] p-value was obtained.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum PermutationMethod {
    /// Every split of the pooled runs enumerated.
    Exact,
    /// [`MONTE_CARLO_PERMUTATIONS`] random splits from a fixed seed.
    MonteCarlo,
}

/// Result of [`brunner_munzel`].
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub struct BrunnerMunzel {
    /// The Brunner–Munzel statistic as scipy's `brunnermunzel(a, b)` gives it: positive when
    /// `b` tends to be larger. ±∞ (`null` in JSON) on complete separation.
    #[serde(with = "crate::bootstrap::finite_or_null")]
    #[schemars(with = "Option<f64>")]
    pub statistic: f64,
    /// The estimated relative effect `P(a > b) + ½ P(a = b)`.
    pub relative_effect: f64,
    /// The test's two-sided p: the larger of `p_permutation` and `p_t`, so it rejects only
    /// when both do.
    pub p_value: f64,
    /// Two-sided permutation p of the statistic.
    pub p_permutation: f64,
    /// Two-sided p of Student's t with Satterthwaite's degrees of freedom (Brunner & Munzel's
    /// approximation, scipy's default).
    pub p_t: f64,
    pub method: PermutationMethod,
    /// Splits the p-value was taken over.
    pub permutations: u64,
}

/// The pooled runs as tie blocks in ascending order, and how many of each block came from `a`.
struct Pooled {
    sizes: Vec<usize>,
    from_a: Vec<usize>,
}

fn pooled(a: &[f64], b: &[f64]) -> Pooled {
    let mut all: Vec<(f64, bool)> = a.iter().map(|&x| (x, true)).chain(b.iter().map(|&y| (y, false))).collect();
    all.sort_unstable_by(|x, y| x.0.total_cmp(&y.0));
    let (mut sizes, mut from_a) = (Vec::new(), Vec::new());
    let mut i = 0;
    while i < all.len() {
        let mut j = i + 1;
        // `==` so that -0.0 and 0.0 tie.
        while j < all.len() && all[j].0 == all[i].0 {
            j += 1;
        }
        sizes.push(j - i);
        from_a.push(all[i..j].iter().filter(|p| p.1).count());
        i = j;
    }
    Pooled { sizes, from_a }
}

/// `(D, Q_a, Q_b)` from the per-block counts of `a`, integers throughout (see the module
/// documentation): `T = D / √(den / ((n_a − 1)(n_b − 1)))` with `den = Q_a (n_b − 1) + Q_b (n_a − 1)`.
fn numerator_denominator(sizes: &[usize], from_a: &[usize], na: usize, nb: usize) -> (i128, i128, i128) {
    // Doubled placements: an `a` in a block is above every `b` before it and ties half the
    // block's `b`s; and the mirror for `b`.
    let (mut a_before, mut b_before) = (0i128, 0i128);
    let (mut sa, mut sa2, mut sb, mut sb2) = (0i128, 0i128, 0i128, 0i128);
    for (&size, &ca) in sizes.iter().zip(from_a) {
        let (ca, cb) = (ca as i128, (size - ca) as i128);
        let dpa = 2 * b_before + cb;
        let dpb = 2 * a_before + ca;
        sa += ca * dpa;
        sa2 += ca * dpa * dpa;
        sb += cb * dpb;
        sb2 += cb * dpb * dpb;
        a_before += ca;
        b_before += cb;
    }
    let (na, nb) = (na as i128, nb as i128);
    let d = sb - na * nb; // 2 U_b − n_a n_b, U_b = Σ placements of b = sb / 2
    let qa = na * sa2 - sa * sa;
    let qb = nb * sb2 - sb * sb;
    (d, qa, qb)
}

fn den(qa: i128, qb: i128, na: usize, nb: usize) -> i128 {
    qa * (nb as i128 - 1) + qb * (na as i128 - 1)
}

/// Brunner and Munzel's own two-sided p: Student's t with Satterthwaite's degrees of freedom
/// (as scipy's `brunnermunzel(distribution="t")`). 0 on complete separation, 1 when all tie.
fn t_p(d: i128, qa: i128, qb: i128, na: usize, nb: usize) -> f64 {
    use statrs::distribution::ContinuousCDF;
    let (x, y) = (qa as f64 / (4.0 * (na as f64 - 1.0)), qb as f64 / (4.0 * (nb as f64 - 1.0)));
    if x + y == 0.0 {
        return if d == 0 { 1.0 } else { 0.0 };
    }
    let t = (d as f64 / 2.0 / (x + y).sqrt()).abs();
    let df = (x + y).powi(2) / (x * x / (na as f64 - 1.0) + y * y / (nb as f64 - 1.0));
    match statrs::distribution::StudentsT::new(0.0, 1.0, df) {
        Ok(dist) => (2.0 * dist.sf(t)).min(1.0),
        Err(_) => 1.0,
    }
}

/// `T²` as a float: the correctly rounded quotient of two integers, so equal rationals give
/// equal floats (the integers stay below 2⁵³ for any run count this tool sees).
fn t_squared(d: i128, den: i128, na: usize, nb: usize) -> f64 {
    let num = d * d * (na as i128 - 1) * (nb as i128 - 1);
    if den == 0 {
        return if num == 0 { 0.0 } else { f64::INFINITY };
    }
    let g = gcd(num, den);
    (num / g) as f64 / (den / g) as f64
}

fn gcd(mut x: i128, mut y: i128) -> i128 {
    while y != 0 {
        (x, y) = (y, x % y);
    }
    x.abs().max(1)
}

/// The permutation distribution of `T²` for one tie structure, sorted descending, with each
/// split's t-approximation p (aligned).
struct Distribution {
    t2: Vec<f64>,
    pt: Vec<f64>,
    exact: bool,
}

impl Distribution {
    /// Splits at least as extreme as `t2`.
    fn at_least(&self, t2: f64) -> usize {
        self.t2.partition_point(|x| *x >= t2)
    }

    fn p_value(&self, t2: f64) -> f64 {
        let c = self.at_least(t2) as f64;
        let n = self.t2.len() as f64;
        if self.exact {
            c / n
        } else {
            (1.0 + c) / (1.0 + n)
        }
    }

    /// The chance, under the permutation distribution, that the test (both p below `alpha`)
    /// rejects: its exact size when the arms have one distribution (estimated, for Monte Carlo).
    fn size(&self, alpha: f64) -> f64 {
        let n = self.t2.len();
        // Splits whose permutation p is below alpha are a prefix of the descending order.
        let rejecting = (0..n).take_while(|&i| self.p_value(self.t2[i]) < alpha).filter(|&i| self.pt[i] < alpha).count();
        rejecting as f64 / n as f64
    }
}

fn binomial(n: usize, k: usize) -> u64 {
    let k = k.min(n - k);
    let mut c: u128 = 1;
    for i in 0..k {
        c = c * (n - i) as u128 / (i + 1) as u128;
        if c > u64::MAX as u128 {
            return u64::MAX;
        }
    }
    c as u64
}

type Key = (usize, Vec<usize>);

fn cache() -> &'static Mutex<HashMap<Key, Arc<Distribution>>> {
    static CACHE: OnceLock<Mutex<HashMap<Key, Arc<Distribution>>>> = OnceLock::new();
    CACHE.get_or_init(|| Mutex::new(HashMap::new()))
}

/// The permutation distribution for `na` values of `a` among blocks of `sizes`, from the cache
/// (it depends only on the tie structure, not on the values: without ties, only on the sizes).
fn distribution(sizes: &[usize], na: usize) -> Arc<Distribution> {
    let key = (na, sizes.to_vec());
    if let Some(d) = cache().lock().unwrap_or_else(|e| e.into_inner()).get(&key) {
        return d.clone();
    }
    let d = Arc::new(compute_distribution(sizes, na));
    let mut c = cache().lock().unwrap_or_else(|e| e.into_inner());
    if c.len() > 512 {
        c.clear();
    }
    c.insert(key, d.clone());
    d
}

fn compute_distribution(sizes: &[usize], na: usize) -> Distribution {
    let total: usize = sizes.iter().sum();
    let nb = total - na;
    let block_of: Vec<usize> = sizes.iter().enumerate().flat_map(|(i, &s)| std::iter::repeat_n(i, s)).collect();
    let mut from_a = vec![0usize; sizes.len()];
    let mut stat = |positions: &mut dyn Iterator<Item = usize>| -> (f64, f64) {
        from_a.iter_mut().for_each(|c| *c = 0);
        for p in positions {
            from_a[block_of[p]] += 1;
        }
        let (d, qa, qb) = numerator_denominator(sizes, &from_a, na, nb);
        (t_squared(d, den(qa, qb, na, nb), na, nb), t_p(d, qa, qb, na, nb))
    };
    let exact = binomial(total, na) <= EXACT_MAX_PERMUTATIONS;
    let mut t2 = Vec::new();
    if exact {
        // Every combination of `na` positions of `total`, in lexicographic order.
        let mut idx: Vec<usize> = (0..na).collect();
        loop {
            t2.push(stat(&mut idx.iter().copied()));
            let Some(i) = (0..na).rev().find(|&i| idx[i] != i + total - na) else { break };
            idx[i] += 1;
            for j in i + 1..na {
                idx[j] = idx[j - 1] + 1;
            }
            if na == 0 {
                break;
            }
        }
    } else {
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(SEED);
        let mut order: Vec<usize> = (0..total).collect();
        t2.reserve(MONTE_CARLO_PERMUTATIONS);
        for _ in 0..MONTE_CARLO_PERMUTATIONS {
            // A partial Fisher–Yates shuffle: the first `na` are a uniform random subset.
            for i in 0..na {
                let j = rng.gen_range(i..total);
                order.swap(i, j);
            }
            t2.push(stat(&mut order[..na].iter().copied()));
        }
    }
    t2.sort_unstable_by(|x: &(f64, f64), y| y.0.total_cmp(&x.0));
    let (t2, pt) = t2.into_iter().unzip();
    Distribution { t2, pt, exact }
}

/// The observed statistic of a pooled sample, `T²`, its t-approximation p and its permutation
/// distribution.
fn test_pooled(p: &Pooled, na: usize, nb: usize) -> (f64, f64, f64, Arc<Distribution>) {
    let (d, qa, qb) = numerator_denominator(&p.sizes, &p.from_a, na, nb);
    let den = den(qa, qb, na, nb);
    let t2 = t_squared(d, den, na, nb);
    let dist = distribution(&p.sizes, na);
    let statistic = if den == 0 {
        if d == 0 {
            0.0
        } else {
            f64::INFINITY.copysign(d as f64)
        }
    } else {
        d as f64 / (den as f64 / ((na as f64 - 1.0) * (nb as f64 - 1.0))).sqrt()
    };
    (statistic, t2, t_p(d, qa, qb, na, nb), dist)
}

/// The two-sided permuted Brunner–Munzel test of `a` against `b`. `None` when either arm has
/// fewer than 2 values or a non-finite one.
pub fn brunner_munzel(a: &[f64], b: &[f64]) -> Option<BrunnerMunzel> {
    if !all_finite_nonempty(a) || !all_finite_nonempty(b) || a.len() < 2 || b.len() < 2 {
        return None;
    }
    let (na, nb) = (a.len(), b.len());
    let p = pooled(a, b);
    let (statistic, t2, p_t, dist) = test_pooled(&p, na, nb);
    let (d, _, _) = numerator_denominator(&p.sizes, &p.from_a, na, nb);
    let p_permutation = dist.p_value(t2);
    Some(BrunnerMunzel {
        statistic,
        // P(a > b) + ½ P(a = b) = U_a / (n_a n_b) = ½ − D / (2 n_a n_b).
        relative_effect: 0.5 - d as f64 / (2.0 * (na * nb) as f64),
        p_value: p_permutation.max(p_t),
        p_permutation,
        p_t,
        method: if dist.exact { PermutationMethod::Exact } else { PermutationMethod::MonteCarlo },
        permutations: dist.t2.len() as u64,
    })
}

/// Tests of `a` against `θ · b` for many `θ`: both arms sorted once, each probe a merge.
struct Prober {
    a: Vec<f64>,
    b: Vec<f64>,
    sizes: Vec<usize>,
    from_a: Vec<usize>,
    /// The distribution without ties, fetched once (the common case for every probe).
    untied: Arc<Distribution>,
}

impl Prober {
    fn new(a: &[f64], b: &[f64]) -> Self {
        let (a, b) = (crate::sorted_copy(a), crate::sorted_copy(b));
        let untied = distribution(&vec![1; a.len() + b.len()], a.len());
        Prober { a, b, sizes: Vec::new(), from_a: Vec::new(), untied }
    }

    /// Whether the test of `a` against `θ · b` does not reject at `alpha`.
    fn accepts(&mut self, theta: f64, alpha: f64) -> bool {
        let (na, nb) = (self.a.len(), self.b.len());
        self.sizes.clear();
        self.from_a.clear();
        let (mut i, mut j) = (0, 0);
        while i < na || j < nb {
            let next = match (self.a.get(i), self.b.get(j).map(|y| y * theta)) {
                (Some(&x), Some(y)) => x.min(y),
                (Some(&x), None) => x,
                (None, Some(y)) => y,
                (None, None) => unreachable!(),
            };
            let (mut ca, mut cb) = (0, 0);
            while i < na && self.a[i] == next {
                ca += 1;
                i += 1;
            }
            while j < nb && self.b[j] * theta == next {
                cb += 1;
                j += 1;
            }
            self.sizes.push(ca + cb);
            self.from_a.push(ca);
        }
        let (d, qa, qb) = numerator_denominator(&self.sizes, &self.from_a, na, nb);
        let t2 = t_squared(d, den(qa, qb, na, nb), na, nb);
        let dist = if self.sizes.len() == na + nb { self.untied.clone() } else { distribution(&self.sizes, na) };
        dist.p_value(t2) >= alpha || t_p(d, qa, qb, na, nb) >= alpha
    }
}

/// The Hodges–Lehmann ratio `a / b` (the median pairwise ratio: where the Brunner–Munzel
/// numerator changes sign) with the interval that inverts the permuted Brunner–Munzel test:
/// every ratio `θ` at which the test of `a` against `θ · b` does not reject at `alpha`
/// (its hull, should that set have gaps).
///
/// The test's outcome changes only where `θ` crosses a pairwise ratio `a_i / b_j`, so one
/// evaluation per gap between them suffices, scanning inward from each end. At `θ = 1` the
/// interval uses the test on the data as they are (ties included), so it excludes 1 exactly
/// when [`brunner_munzel`] rejects. The level is `1 −` the test's size under the permutation
/// distribution (exact, or its Monte Carlo estimate).
///
/// `None` on fewer than 2 values in an arm, a non-finite or negative value, or `alpha`
/// outside (0, 1).
pub fn brunner_munzel_ratio_ci(a: &[f64], b: &[f64], alpha: f64) -> Option<RatioCi> {
    if !all_finite_nonempty(a) || !all_finite_nonempty(b) || a.len() < 2 || b.len() < 2 || a.iter().chain(b).any(|x| *x < 0.0) {
        return None;
    }
    if !(alpha > 0.0 && alpha < 1.0) {
        return None;
    }
    let (na, nb) = (a.len(), b.len());
    let pair_ratio = |x: f64, y: f64| match (x == 0.0, y == 0.0) {
        (true, true) => 1.0,
        (false, true) => f64::INFINITY,
        _ => x / y,
    };
    let mut ratios: Vec<f64> = a.iter().flat_map(|&x| b.iter().map(move |&y| pair_ratio(x, y))).collect();
    ratios.sort_unstable_by(f64::total_cmp);
    let total = ratios.len();
    let ratio = if total % 2 == 1 { ratios[total / 2] } else { crate::rank_ci::log_midpoint(ratios[total / 2 - 1], ratios[total / 2]) };
    // The breakpoints: distinct finite positive pairwise ratios.
    let mut cuts: Vec<f64> = ratios.iter().copied().filter(|r| r.is_finite() && *r > 0.0).collect();
    cuts.dedup();
    // Gap g lies between cuts[g − 1] and cuts[g] (gap 0 below the first, the last above all).
    let probe = |g: usize| -> f64 {
        match (g.checked_sub(1).map(|i| cuts[i]), cuts.get(g)) {
            (None, None) => 1.0,
            (None, Some(&hi)) => hi / 2.0,
            (Some(lo), None) => lo * 2.0,
            (Some(lo), Some(&hi)) => (lo * hi).sqrt(),
        }
    };
    let gaps = cuts.len() + 1;
    let mut prober = Prober::new(a, b);
    let mut accepted = |g: usize| prober.accepts(probe(g), alpha);
    let first = (0..gaps).find(|&g| accepted(g));
    let (mut lo, mut hi) = match first {
        None => (f64::INFINITY, f64::NEG_INFINITY), // empty so far
        Some(f) => {
            let l = (0..gaps).rev().find(|&g| accepted(g)).unwrap_or(f);
            (if f == 0 { 0.0 } else { cuts[f - 1] }, if l == gaps - 1 { f64::INFINITY } else { cuts[l] })
        }
    };
    // θ = 1 as the test sees it: with ties between the arms 1 is itself a breakpoint.
    let at_one = brunner_munzel(a, b).is_some_and(|t| t.p_value >= alpha);
    let (mut lo_open, mut hi_open) = (false, false);
    if at_one {
        lo = lo.min(1.0);
        hi = hi.max(1.0);
    } else if lo == 1.0 {
        lo_open = true;
    } else if hi == 1.0 {
        hi_open = true;
    }
    if lo > hi {
        // Nothing accepted at all (cannot happen: the estimate's gap has T near 0).
        lo = ratio;
        hi = ratio;
    }
    let dist = distribution(&pooled(a, b).sizes, na);
    let level = 1.0 - dist.size(alpha);
    let zero_denominators = b.iter().filter(|y| **y == 0.0).count() * na;
    let _ = nb;
    Some(RatioCi {
        ratio,
        lo,
        hi,
        level,
        iterations: if dist.exact { 0 } else { dist.t2.len() },
        zero_denominators,
        method: CiMethod::BrunnerMunzelPermutation,
        lo_open,
        hi_open,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Reference values from scipy 1.17.1 `scipy.stats.brunnermunzel(a, b)` (statistic and its
    /// t-approximation p), produced by `scripts/brunner_munzel_reference.py` in a venv
    /// (`python3 -m venv /tmp/sv && /tmp/sv/bin/pip install scipy numpy`).
    #[test]
    fn statistic_and_t_p_match_scipy() {
        let cases: &[(&[f64], &[f64], f64, f64)] = &SCIPY_CASES;
        for (a, b, want, want_p) in cases {
            let r = brunner_munzel(a, b).unwrap();
            assert!((r.statistic - want).abs() <= 1e-12 * want.abs().max(1.0), "{a:?} {b:?}: {} != {want}", r.statistic);
            assert!((r.p_t - want_p).abs() <= 1e-9, "{a:?} {b:?}: p {} != {want_p}", r.p_t);
            assert_eq!(r.p_value, r.p_t.max(r.p_permutation));
        }
    }

    include!("brunner_munzel_scipy.rs");

    /// Independent reference: every split, the statistic by scipy's formula in floats.
    fn brute_force_p(a: &[f64], b: &[f64]) -> f64 {
        fn midranks(xs: &[f64]) -> Vec<f64> {
            xs.iter().map(|x| xs.iter().filter(|y| *y < x).count() as f64 + (xs.iter().filter(|y| *y == x).count() as f64 + 1.0) / 2.0).collect()
        }
        fn stat(x: &[f64], y: &[f64]) -> f64 {
            let (nx, ny) = (x.len() as f64, y.len() as f64);
            let pooled: Vec<f64> = x.iter().chain(y).copied().collect();
            let rc = midranks(&pooled);
            let (rcx, rcy) = rc.split_at(x.len());
            let (rx, ry) = (midranks(x), midranks(y));
            let mean = |v: &[f64]| v.iter().sum::<f64>() / v.len() as f64;
            let (mcx, mcy, mx, my) = (mean(rcx), mean(rcy), mean(&rx), mean(&ry));
            let sx: f64 = rcx.iter().zip(&rx).map(|(c, r)| (c - r - mcx + mx).powi(2)).sum::<f64>() / (nx - 1.0);
            let sy: f64 = rcy.iter().zip(&ry).map(|(c, r)| (c - r - mcy + my).powi(2)).sum::<f64>() / (ny - 1.0);
            let num = nx * ny * (mcy - mcx);
            let den = (nx + ny) * (nx * sx + ny * sy).sqrt();
            if den == 0.0 {
                if num == 0.0 {
                    0.0
                } else {
                    f64::INFINITY
                }
            } else {
                (num / den).abs()
            }
        }
        let pooled: Vec<f64> = a.iter().chain(b).copied().collect();
        let n = pooled.len();
        let observed = stat(a, b);
        let (mut ge, mut total) = (0, 0);
        for mask in 0u32..(1 << n) {
            if mask.count_ones() as usize != a.len() {
                continue;
            }
            let x: Vec<f64> = (0..n).filter(|i| mask >> i & 1 == 1).map(|i| pooled[i]).collect();
            let y: Vec<f64> = (0..n).filter(|i| mask >> i & 1 == 0).map(|i| pooled[i]).collect();
            total += 1;
            let s = stat(&x, &y);
            ge += usize::from(s >= observed * (1.0 - 1e-9));
        }
        ge as f64 / total as f64
    }

    #[test]
    fn exact_p_matches_enumeration_with_and_without_ties() {
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(4);
        for case in 0..200 {
            let (na, nb) = (rng.gen_range(2..=7), rng.gen_range(2..=7));
            let levels = if case % 3 == 0 { 1_000_000 } else { rng.gen_range(2..=5) };
            let mut draw = |n: usize| (0..n).map(|_| f64::from(rng.gen_range(0..levels))).collect::<Vec<f64>>();
            let (a, b) = (draw(na), draw(nb));
            let r = brunner_munzel(&a, &b).unwrap();
            assert_eq!(r.method, PermutationMethod::Exact);
            let want = brute_force_p(&a, &b);
            assert!((r.p_permutation - want).abs() < 1e-12, "{a:?} {b:?}: {} != {want}", r.p_permutation);
        }
    }

    #[test]
    fn complete_separation_is_the_smallest_p() {
        let r = brunner_munzel(&[5.0, 6.0, 7.0, 8.0, 9.0], &[0.0, 1.0, 2.0, 3.0, 4.0]).unwrap();
        assert!((r.p_value - 2.0 / 252.0).abs() < 1e-15, "{}", r.p_value);
        assert_eq!(r.statistic, f64::NEG_INFINITY);
        assert_eq!(r.relative_effect, 1.0);
        let r = brunner_munzel(&[1.0, 2.0, 3.0], &[4.0, 5.0, 6.0]).unwrap();
        assert!((r.p_value - 0.1).abs() < 1e-15);
        // All tied: nothing to see.
        assert_eq!(brunner_munzel(&[3.0; 4], &[3.0; 4]).unwrap().p_value, 1.0);
    }

    #[test]
    fn monte_carlo_is_deterministic_and_close_to_exact() {
        // 11 vs 11: 705,432 splits, beyond the exact limit.
        let a: Vec<f64> = (0..11).map(|i| 10.0 + i as f64 * 1.3).collect();
        let b: Vec<f64> = (0..11).map(|i| 12.5 + i as f64 * 1.1).collect();
        let r = brunner_munzel(&a, &b).unwrap();
        assert_eq!(r.method, PermutationMethod::MonteCarlo);
        assert_eq!(r.permutations, MONTE_CARLO_PERMUTATIONS as u64);
        assert_eq!(brunner_munzel(&a, &b).unwrap().p_value, r.p_value);
        assert!(r.p_value > 0.0 && r.p_value < 1.0);
    }

    /// The defining property: the interval excludes 1 exactly when the test rejects, ties
    /// included (scores on a coarse grid tie often).
    #[test]
    fn interval_agrees_with_the_test() {
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(5);
        for case in 0..1500 {
            let (m, n) = (rng.gen_range(2..=9), rng.gen_range(2..=9));
            let shift: f64 = rng.gen_range(0.0..0.6);
            let alpha = [0.05, 0.01, 0.0179, 0.0083][case % 4];
            let grid = case % 2 == 0;
            let draw = |rng: &mut rand_chacha::ChaCha8Rng, s: f64| {
                let x = (rng.gen::<f64>() * rng.gen_range(0.2..2.0) + s).exp();
                if grid {
                    (x * 20.0).round() / 20.0
                } else {
                    x
                }
            };
            let a: Vec<f64> = (0..m).map(|_| draw(&mut rng, shift)).collect();
            let b: Vec<f64> = (0..n).map(|_| draw(&mut rng, 0.0)).collect();
            let ci = brunner_munzel_ratio_ci(&a, &b, alpha).unwrap();
            let p = brunner_munzel(&a, &b).unwrap().p_value;
            assert_eq!(ci.excludes_one(), p < alpha, "{a:?} {b:?} α {alpha}: p {p}, CI {ci:?}");
            assert!(ci.lo <= ci.ratio && ci.ratio <= ci.hi, "{ci:?}");
            assert!(ci.level >= 1.0 - alpha);
        }
    }

    /// With equal distributions the interval's coverage is at least its stated level.
    #[test]
    fn coverage_meets_the_stated_level() {
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(9);
        for n in [4usize, 7] {
            let trials = 3000;
            let (mut covered, mut level) = (0, 0.0);
            for _ in 0..trials {
                let noise = |rng: &mut rand_chacha::ChaCha8Rng| (0.08 * (rng.gen::<f64>() - 0.5) * 3.46).exp();
                let a: Vec<f64> = (0..n).map(|_| 1.1 * noise(&mut rng)).collect();
                let b: Vec<f64> = (0..n).map(|_| noise(&mut rng)).collect();
                let ci = brunner_munzel_ratio_ci(&a, &b, 0.05).unwrap();
                covered += usize::from(ci.lo <= 1.1 && 1.1 <= ci.hi);
                level = ci.level;
            }
            let rate = covered as f64 / trials as f64;
            let se = (level * (1.0 - level) / trials as f64).sqrt();
            assert!(rate >= level - 3.0 * se, "n {n}: coverage {rate} at stated level {level}");
        }
    }

    #[test]
    fn bad_input() {
        assert!(brunner_munzel(&[1.0], &[1.0, 2.0]).is_none());
        assert!(brunner_munzel(&[1.0, f64::NAN], &[1.0, 2.0]).is_none());
        assert!(brunner_munzel_ratio_ci(&[-1.0, 1.0], &[1.0, 2.0], 0.05).is_none());
        assert!(brunner_munzel_ratio_ci(&[1.0, 2.0], &[1.0, 2.0], 1.0).is_none());
    }
}
