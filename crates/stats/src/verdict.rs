//! Combine the ratio CI and the Mann–Whitney test into one verdict, for metrics where higher
//! or lower is better, with Holm's correction when several algorithms are compared.

use serde::{Deserialize, Serialize};

use crate::bootstrap::{bootstrap_ratio_ci, RatioCi};
use crate::mann_whitney::{mann_whitney_u, MannWhitney};

/// Bootstrap iterations used by [`compare`].
pub const DEFAULT_BOOTSTRAP_ITERATIONS: usize = 10_000;

/// Which way a metric improves: goodput is better higher, RTT and completion time lower.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum BetterIs {
    Higher,
    Lower,
}

/// What a comparison concluded.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Outcome {
    /// The rank test (after Holm) and the ratio's CI agree: one arm is better (`better`).
    Better,
    /// Neither the rank test nor the CI finds a difference.
    NoDifference,
    /// The rank test and the CI disagree, or no ratio CI exists: more runs are needed.
    Inconclusive,
    /// An arm has no usable values.
    InsufficientData,
}

/// Outcome of comparing two arms.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub struct Comparison {
    /// Name of arm A (e.g. `"bbr"`).
    pub a: String,
    /// Name of arm B (e.g. `"cubic"`).
    pub b: String,
    pub n_a: usize,
    pub n_b: usize,
    /// Significance level this comparison was decided at; the CI level is `1 − alpha`. Below
    /// the experiment's α when a sequential design (`--runs auto`) spent only part of it.
    pub alpha: f64,
    /// Which way the metric improves.
    pub better_is: BetterIs,
    /// Bootstrap CI of `median(a) / median(b)`; `None` on empty, non-finite or negative input.
    pub ratio_ci: Option<RatioCi>,
    /// Mann–Whitney U test of `a` vs `b` (raw p); `None` on empty/non-finite input.
    pub mann_whitney: Option<MannWhitney>,
    /// Holm-adjusted p over all `family_size` pairwise comparisons of the experiment's
    /// algorithms (equal to the raw p when there are only two).
    pub p_adjusted: Option<f64>,
    pub family_size: usize,
    pub outcome: Outcome,
    /// `outcome == Better`: adjusted `p < alpha` **and** the ratio CI excludes 1.
    pub significant: bool,
    /// The arm that is better on this metric (higher or lower as `better_is` says) when
    /// `significant`, else `None`.
    pub better: Option<String>,
}

/// Compare arm `a` against arm `b` on a metric where higher is better, as one comparison
/// (no multiplicity correction). See [`compare_directed`].
pub fn compare(name_a: &str, a: &[f64], name_b: &str, b: &[f64], alpha: f64, seed: u64) -> Comparison {
    compare_directed(name_a, a, name_b, b, BetterIs::Higher, alpha, seed)
}

/// Runs [`mann_whitney_u`] and [`bootstrap_ratio_ci`] at level `1 − alpha` with
/// [`DEFAULT_BOOTSTRAP_ITERATIONS`] iterations seeded by `seed`. The result is significant
/// only if both agree: `p < alpha` and the CI excludes 1. An `alpha` outside `(0, 1)` (or NaN)
/// yields no CI and hence never a significant result.
pub fn compare_directed(name_a: &str, a: &[f64], name_b: &str, b: &[f64], better_is: BetterIs, alpha: f64, seed: u64) -> Comparison {
    let mann_whitney = mann_whitney_u(a, b);
    let mut c = Comparison {
        a: name_a.to_string(),
        b: name_b.to_string(),
        n_a: a.len(),
        n_b: b.len(),
        alpha,
        better_is,
        ratio_ci: bootstrap_ratio_ci(a, b, 1.0 - alpha, DEFAULT_BOOTSTRAP_ITERATIONS, seed),
        p_adjusted: mann_whitney.map(|m| m.p_value),
        mann_whitney,
        family_size: 1,
        outcome: Outcome::InsufficientData,
        significant: false,
        better: None,
    };
    c.decide();
    c
}

/// Holm's step-down adjustment: the `i`-th smallest of `m` p-values is multiplied by
/// `m − i` (0-based), made monotone, and capped at 1. Controls the family-wise error at α
/// under any dependence between the tests.
pub fn holm(ps: &[f64]) -> Vec<f64> {
    let m = ps.len();
    let mut order: Vec<usize> = (0..m).collect();
    order.sort_by(|&i, &j| ps[i].total_cmp(&ps[j]));
    let mut adjusted = vec![0.0; m];
    let mut running = 0.0f64;
    for (rank, &i) in order.iter().enumerate() {
        running = running.max(((m - rank) as f64 * ps[i]).min(1.0));
        adjusted[i] = running;
    }
    adjusted
}

/// The best arm (by median, in the metric's direction) against each other arm.
///
/// The best arm is chosen from the data, so its comparisons are a data-selected subset of all
/// pairs: the family Holm corrects over is therefore every pair of arms with at least
/// `min_values` values (`k (k − 1) / 2` for `k` arms), which keeps the family-wise error at
/// `alpha` whichever arm turns out best. Arms with fewer values are left out.
pub fn best_against_rest(arms: &[(&str, &[f64])], better_is: BetterIs, alpha: f64, seed: u64, min_values: usize) -> Vec<Comparison> {
    let usable: Vec<(&str, &[f64])> = arms.iter().copied().filter(|(_, xs)| xs.len() >= min_values.max(1) && mann_whitney_u(xs, xs).is_some()).collect();
    let median = |xs: &[f64]| crate::median(xs).unwrap_or(f64::NAN);
    let best = match better_is {
        BetterIs::Higher => usable.iter().max_by(|x, y| median(x.1).total_cmp(&median(y.1))),
        BetterIs::Lower => usable.iter().min_by(|x, y| median(x.1).total_cmp(&median(y.1))),
    };
    let Some(&(best_name, best_xs)) = best else { return Vec::new() };
    let mut pairs = Vec::new();
    for i in 0..usable.len() {
        for j in i + 1..usable.len() {
            pairs.push((usable[i].0, usable[j].0, mann_whitney_u(usable[i].1, usable[j].1).map_or(1.0, |m| m.p_value)));
        }
    }
    let adjusted = holm(&pairs.iter().map(|p| p.2).collect::<Vec<_>>());
    let family_size = pairs.len();
    usable
        .iter()
        .filter(|(name, _)| *name != best_name)
        .map(|&(name, xs)| {
            let mut c = compare_directed(best_name, best_xs, name, xs, better_is, alpha, seed);
            let k = pairs.iter().position(|p| (p.0 == best_name && p.1 == name) || (p.1 == best_name && p.0 == name));
            c.p_adjusted = k.map(|k| adjusted[k]);
            c.family_size = family_size;
            c.decide();
            c
        })
        .collect()
}

impl Comparison {
    /// Sets `outcome`, `significant` and `better` from the adjusted p and the ratio CI.
    fn decide(&mut self) {
        let p = self.p_adjusted;
        let (outcome, better) = match (p, &self.ratio_ci) {
            (None, _) => (Outcome::InsufficientData, None),
            (Some(p), None) => (if p < self.alpha { Outcome::Inconclusive } else { Outcome::NoDifference }, None),
            (Some(p), Some(ci)) => match (p < self.alpha, ci.excludes_one()) {
                (true, true) => {
                    let a_higher = ci.lo > 1.0;
                    let a_better = a_higher == (self.better_is == BetterIs::Higher);
                    (Outcome::Better, Some(if a_better { self.a.clone() } else { self.b.clone() }))
                }
                (false, false) => (Outcome::NoDifference, None),
                _ => (Outcome::Inconclusive, None),
            },
        };
        self.outcome = outcome;
        self.significant = outcome == Outcome::Better;
        self.better = better;
    }

    /// `p = 0.0079`, or `Holm-adjusted p = 0.024 over 6 pairs` when corrected.
    fn p_text(&self) -> String {
        let Some(p) = self.p_adjusted else { return "p = n/a".into() };
        let p = fmt_p(p, self.alpha);
        if self.family_size > 1 {
            format!("Holm-adjusted {p} over {} pairs", self.family_size)
        } else {
            p
        }
    }

    /// `95 % CI 1.10–1.31×`, with an infinite bound written as "unbounded".
    fn ci_text(level: f64, lo: f64, hi: f64) -> String {
        let bound = |x: f64| if x.is_finite() { fmt_ratio(x) } else { "unbounded".into() };
        format!("{} CI {}–{}×", fmt_level(level), bound(lo), bound(hi))
    }

    /// The ratio and CI with the better arm first (so the ratio says "how much better").
    fn oriented(&self) -> Option<(&str, &str, f64, f64, f64, usize, usize)> {
        let ci = self.ratio_ci.as_ref()?;
        let inv = |x: f64| if x == 0.0 { f64::INFINITY } else { 1.0 / x };
        Some(if self.better.as_deref() == Some(self.b.as_str()) {
            (&self.b, &self.a, inv(ci.ratio), inv(ci.hi), inv(ci.lo), self.n_b, self.n_a)
        } else {
            (&self.a, &self.b, ci.ratio, ci.lo, ci.hi, self.n_a, self.n_b)
        })
    }

    /// One-line human summary, `metric` being the noun compared (e.g. "goodput").
    ///
    /// * better: `bbr: 14.2× the goodput of cubic (95 % CI 12.9–15.8×, p = 0.0079, 5 vs 5 runs)`
    ///   — the better arm first; for a lower-is-better metric its ratio is below 1;
    /// * no difference: `no significant difference in goodput between bbr and cubic (ratio 1.03×, …)`;
    /// * inconclusive: says which evidence disagrees, and that more runs would decide;
    /// * insufficient data: says so.
    pub fn sentence(&self, metric: &str) -> String {
        let runs = |x: usize, y: usize| format!("{x} vs {y} runs");
        match self.outcome {
            Outcome::InsufficientData => format!("insufficient data to compare the {metric} of {} and {} ({})", self.a, self.b, runs(self.n_a, self.n_b)),
            Outcome::Better => {
                let (best, worst, r, lo, hi, nb, nw) = self.oriented().expect("Better has a CI");
                let level = self.ratio_ci.map_or(1.0 - self.alpha, |c| c.level);
                format!("{best}: {}× the {metric} of {worst} ({}, {}, {})", fmt_ratio(r), Self::ci_text(level, lo, hi), self.p_text(), runs(nb, nw))
            }
            Outcome::NoDifference | Outcome::Inconclusive => {
                let evidence = match &self.ratio_ci {
                    Some(ci) => format!("ratio {}×, {}, {}", fmt_ratio_or_unbounded(ci.ratio), Self::ci_text(ci.level, ci.lo, ci.hi), self.p_text()),
                    None => format!("no ratio CI, {}", self.p_text()),
                };
                if self.outcome == Outcome::NoDifference {
                    format!("no significant difference in {metric} between {} and {} ({evidence}, {})", self.a, self.b, runs(self.n_a, self.n_b))
                } else {
                    let why = match &self.ratio_ci {
                        None => "the rank test finds a difference but the ratio has no CI".to_string(),
                        Some(ci) if ci.excludes_one() => "the ratio's CI excludes 1 but the rank test does not reach significance".to_string(),
                        Some(_) => "the rank test finds a difference but the ratio's CI includes 1".to_string(),
                    };
                    format!(
                        "inconclusive on {metric} between {} and {}: {why}; more runs would decide ({evidence}, {})",
                        self.a,
                        self.b,
                        runs(self.n_a, self.n_b)
                    )
                }
            }
        }
    }

    /// A few words for tables: `bbr 14.2× cubic (CI 12.9–15.8, p = 0.0079)`, `no significant
    /// difference (p = 0.55)`, `inconclusive (p = 0.031)`.
    pub fn short(&self) -> String {
        let p = self.p_adjusted.map_or_else(|| "p = n/a".into(), |p| fmt_p(p, self.alpha));
        match self.outcome {
            Outcome::Better => {
                let (best, worst, r, lo, hi, _, _) = self.oriented().expect("Better has a CI");
                let bound = |x: f64| if x.is_finite() { fmt_ratio(x) } else { "unbounded".into() };
                format!("{best} {}× {worst} (CI {}–{}, {p})", fmt_ratio(r), bound(lo), bound(hi))
            }
            Outcome::NoDifference => format!("no significant difference ({p})"),
            Outcome::Inconclusive => format!("inconclusive ({p})"),
            Outcome::InsufficientData => "no verdict".into(),
        }
    }
}

/// `p < 0.001` when tiny (and α is not that small), otherwise two significant digits — and
/// more where two would round p onto the other side of `alpha` (0.0497 at α = 0.05 prints as
/// "0.0497", never "0.050").
pub fn fmt_p(p: f64, alpha: f64) -> String {
    if p.is_nan() {
        return "p = n/a".to_string();
    }
    if p < 0.001 && alpha >= 0.001 {
        return "p < 0.001".to_string();
    }
    if p <= 0.0 {
        return "p = 0".to_string();
    }
    // Two significant digits -> decimals = 1 − ⌊log10 p⌋; add digits while the printed value
    // would land on the other side of alpha (or on it).
    let mut decimals = (1 - p.log10().floor() as i32).max(1) as usize;
    loop {
        let text = format!("{p:.decimals$}");
        let shown: f64 = text.parse().unwrap_or(p);
        if (shown < alpha) == (p < alpha) && shown != alpha || decimals >= 12 {
            return format!("p = {text}");
        }
        decimals += 1;
    }
}

fn fmt_ratio_or_unbounded(r: f64) -> String {
    if r.is_infinite() {
        "unbounded".into()
    } else {
        fmt_ratio(r)
    }
}

/// "95 %" for 0.95, "99.9 %" for 0.999.
fn fmt_level(level: f64) -> String {
    let pct = level * 100.0;
    if (pct - pct.round()).abs() < 1e-9 {
        format!("{:.0} %", pct.round())
    } else {
        let s = format!("{pct:.2}");
        let s = s.trim_end_matches('0').trim_end_matches('.');
        format!("{s} %")
    }
}

fn fmt_ratio(r: f64) -> String {
    if !r.is_finite() {
        return if r.is_nan() { "n/a".into() } else { "∞".into() };
    }
    let a = r.abs();
    if a >= 100.0 {
        format!("{r:.0}")
    } else if a >= 10.0 {
        format!("{r:.1}")
    } else if (0.95..1.05).contains(&a) {
        // Near 1 a third decimal keeps a small but significant difference visible.
        format!("{r:.3}")
    } else if a >= 0.1 || a == 0.0 {
        format!("{r:.2}")
    } else {
        let decimals = (2 - a.log10().floor() as i32).max(2) as usize;
        format!("{r:.decimals$}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::{Rng, SeedableRng};

    const BBR: [f64; 5] = [142.0, 150.0, 139.0, 160.0, 147.0];
    const CUBIC: [f64; 5] = [10.1, 9.8, 10.4, 11.0, 9.5];

    #[test]
    fn clear_winner_either_order() {
        let c = compare("bbr", &BBR, "cubic", &CUBIC, 0.05, 1);
        assert!(c.significant);
        assert_eq!((c.outcome, c.better.as_deref()), (Outcome::Better, Some("bbr")));
        let mw = c.mann_whitney.unwrap();
        assert!((mw.p_value - 2.0 / 252.0).abs() < 1e-12);
        let s = c.sentence("goodput");
        assert!(s.starts_with("bbr: 14.6× the goodput of cubic (95 % CI "), "{s}");
        assert!(s.ends_with("×, p = 0.0079, 5 vs 5 runs)"), "{s}");
        // Swapped arguments: the winner is still named first with ratio ≥ 1.
        let d = compare("cubic", &CUBIC, "bbr", &BBR, 0.05, 1);
        assert_eq!(d.better.as_deref(), Some("bbr"));
        let dci = d.ratio_ci.unwrap();
        let expected = format!("bbr: 14.6× the goodput of cubic (95 % CI {}–{}×, p = 0.0079, 5 vs 5 runs)", fmt_ratio(1.0 / dci.hi), fmt_ratio(1.0 / dci.lo));
        assert_eq!(d.sentence("goodput"), expected);
    }

    #[test]
    fn lower_is_better_names_the_lower_arm() {
        // RTTs: bbr keeps them low. `better` must name bbr, whichever side it is on.
        let bbr = [7.1, 7.3, 6.9, 7.0, 7.2];
        let cubic = [49.0, 52.0, 50.5, 48.0, 51.0];
        for c in
            [compare_directed("cubic", &cubic, "bbr", &bbr, BetterIs::Lower, 0.05, 2), compare_directed("bbr", &bbr, "cubic", &cubic, BetterIs::Lower, 0.05, 2)]
        {
            assert_eq!(c.better.as_deref(), Some("bbr"), "{c:?}");
            let s = c.sentence("sender RTT");
            assert!(s.starts_with("bbr: 0.14"), "the better arm first, with its ratio below 1: {s}");
            let json = serde_json::to_value(&c).unwrap();
            assert_eq!(json["better"], "bbr");
            assert_eq!(json["better_is"], "lower");
            assert!(json.get("faster").is_none());
        }
    }

    #[test]
    fn no_difference_sentence() {
        let a = [100.0, 103.0, 98.0, 105.0, 101.0];
        let b = [99.0, 102.0, 97.0, 104.0, 100.5];
        let c = compare("bbr", &a, "cubic", &b, 0.05, 9);
        assert_eq!((c.outcome, c.better.clone()), (Outcome::NoDifference, None));
        let s = c.sentence("goodput");
        assert!(s.starts_with("no significant difference in goodput between bbr and cubic (ratio 1.005×, 95 % CI "), "{s}");
        // u_a = 15 of 25 -> exact two-sided p = 0.690 (scipy mannwhitneyu method="exact")
        assert!((c.mann_whitney.unwrap().p_value - 0.6904761904761905).abs() < 1e-12);
        assert!(s.ends_with("×, p = 0.69, 5 vs 5 runs)"), "{s}");
    }

    #[test]
    fn too_few_runs_are_inconclusive_not_no_difference() {
        // 3 vs 3 complete separation: p = 0.1 ≥ 0.05 although the CI excludes 1.
        let c = compare("bbr", &[100.0, 101.0, 102.0], "cubic", &[1.0, 2.0, 3.0], 0.05, 0);
        assert!(c.ratio_ci.unwrap().excludes_one());
        assert_eq!(c.outcome, Outcome::Inconclusive);
        let s = c.sentence("goodput");
        assert!(s.starts_with("inconclusive on goodput between bbr and cubic"), "{s}");
        assert!(s.contains("p = 0.10, 3 vs 3 runs"), "{s}");
    }

    #[test]
    fn tied_zeros_from_the_issue() {
        // compare([5,6,7],[0,0,1,2]) printed "significant" with p = 0.0497; exact p = 2/35.
        let c = compare("bbr", &[5.0, 6.0, 7.0], "cubic", &[0.0, 0.0, 1.0, 2.0], 0.05, 42);
        assert!(!c.significant);
        assert!((c.p_adjusted.unwrap() - 2.0 / 35.0).abs() < 1e-12);
        let ci = c.ratio_ci.unwrap();
        assert!(ci.hi.is_infinite() && ci.zero_denominators > 0);
        assert_eq!(c.outcome, Outcome::Inconclusive);
        let s = c.sentence("goodput");
        assert!(s.contains("unbounded") && s.contains("p = 0.057"), "{s}");
    }

    #[test]
    fn significant_p_but_no_ratio_ci_is_inconclusive() {
        // The ratio CI is undefined (negative values are not rates) while p < 0.001: that
        // used to read "no significant difference (p < 0.001)".
        let a: Vec<f64> = (0..20).map(|i| -(i as f64) - 100.0).collect();
        let b: Vec<f64> = (0..20).map(f64::from).collect();
        let c = compare("bbr", &a, "cubic", &b, 0.05, 0);
        assert!(c.ratio_ci.is_none() && c.p_adjusted.unwrap() < 0.001);
        assert_eq!(c.outcome, Outcome::Inconclusive);
        assert!(!c.sentence("goodput").contains("no significant difference"), "{}", c.sentence("goodput"));
    }

    #[test]
    fn degenerate_inputs() {
        let c = compare("bbr", &[], "cubic", &[1.0], 0.05, 0);
        assert_eq!(c.outcome, Outcome::InsufficientData);
        assert_eq!(c.sentence("goodput"), "insufficient data to compare the goodput of bbr and cubic (0 vs 1 runs)");
        // All of cubic's runs failed (0): bbr is better, with an unbounded ratio.
        let c = compare("bbr", &[5.0, 6.0, 7.0, 8.0], "cubic", &[0.0; 4], 0.05, 0);
        assert_eq!(c.better.as_deref(), Some("bbr"));
        let s = c.sentence("goodput");
        assert!(s.starts_with("bbr: unbounded× the goodput of cubic") || s.contains("CI unbounded–unbounded×"), "{s}");
        assert!(s.contains("p = 0.029"), "{s}");
    }

    #[test]
    fn p_never_rounds_onto_the_threshold() {
        assert_eq!(fmt_p(0.0497, 0.05), "p = 0.0497");
        assert_eq!(fmt_p(0.0501, 0.05), "p = 0.0501");
        assert_eq!(fmt_p(0.04999, 0.05), "p = 0.04999");
        assert_eq!(fmt_p(0.0004, 0.05), "p < 0.001");
        assert_eq!(fmt_p(0.0079365, 0.05), "p = 0.0079");
        assert_eq!(fmt_p(0.55, 0.05), "p = 0.55");
        assert_eq!(fmt_p(0.1, 0.05), "p = 0.10");
        assert_eq!(fmt_p(1.0, 0.05), "p = 1.0");
        // Every p printed must be on the same side of alpha as the true p.
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(3);
        for _ in 0..100_000 {
            let alpha = [0.05, 0.01, 0.1][rng.gen_range(0..3)];
            let p: f64 = alpha * rng.gen_range(0.9..1.1);
            let text = fmt_p(p, alpha);
            let shown: f64 = text.trim_start_matches("p = ").parse().unwrap();
            assert_eq!(shown < alpha, p < alpha, "{p} printed as {text}");
        }
    }

    #[test]
    fn formatting_helpers() {
        assert_eq!(fmt_level(0.95), "95 %");
        assert_eq!(fmt_level(0.999), "99.9 %");
        assert_eq!(fmt_ratio(14.24), "14.2");
        assert_eq!(fmt_ratio(1.034), "1.034");
        assert_eq!(fmt_ratio(0.97), "0.970");
        assert_eq!(fmt_ratio(1.1), "1.10");
        assert_eq!(fmt_ratio(142.4), "142");
        assert_eq!(fmt_ratio(0.0512), "0.0512");
    }

    #[test]
    fn holm_matches_hand_computation() {
        // statsmodels.stats.multitest.multipletests([0.01, 0.04, 0.03, 0.005], method="holm")
        // -> [0.03, 0.06, 0.06, 0.02]
        let adj = holm(&[0.01, 0.04, 0.03, 0.005]);
        let want = [0.03, 0.06, 0.06, 0.02];
        for (x, w) in adj.iter().zip(want) {
            assert!((x - w).abs() < 1e-12, "{adj:?}");
        }
        assert_eq!(holm(&[0.7]), vec![0.7]);
        assert_eq!(holm(&[0.6, 0.9]), vec![1.0, 1.0]);
    }

    /// Four algorithms with no real difference: the best against the rest, uncorrected, is
    /// called significant 10–12 % of the time; with Holm over all pairs at most α.
    #[test]
    fn family_wise_error_stays_at_alpha() {
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(17);
        let trials = 800;
        let (mut corrected, mut uncorrected) = (0, 0);
        for t in 0..trials {
            let arms: Vec<Vec<f64>> = (0..4).map(|_| (0..8).map(|_| rng.gen::<f64>()).collect()).collect();
            let named: Vec<(&str, &[f64])> = ["a", "b", "c", "d"].iter().zip(&arms).map(|(n, xs)| (*n, xs.as_slice())).collect();
            let cs = best_against_rest(&named, BetterIs::Higher, 0.05, t, 2);
            assert!(cs.iter().all(|c| c.family_size == 6));
            corrected += usize::from(cs.iter().any(|c| c.significant));
            uncorrected += usize::from(cs.iter().any(|c| c.mann_whitney.unwrap().p_value < 0.05 && c.ratio_ci.unwrap().excludes_one()));
        }
        let (fwer, raw) = (corrected as f64 / trials as f64, uncorrected as f64 / trials as f64);
        assert!(fwer <= 0.05, "Holm: {fwer}");
        assert!(raw > 0.08, "uncorrected comparisons of the best against the rest: {raw}");
    }

    #[test]
    fn serializes() {
        let c = compare("bbr", &BBR, "cubic", &CUBIC, 0.05, 1);
        let v = serde_json::to_value(&c).unwrap();
        assert_eq!(v["better"], "bbr");
        assert_eq!(v["better_is"], "higher");
        assert_eq!(v["outcome"], "better");
        assert_eq!(v["significant"], true);
        assert_eq!(v["family_size"], 1);
        assert_eq!(v["mann_whitney"]["method"], "exact");
        assert!(v["ratio_ci"]["lo"].is_number());
    }
}
