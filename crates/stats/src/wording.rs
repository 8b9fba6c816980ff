//! A verdict in words: the one-line sentence and the short table form of a [`Comparison`],
//! and how p-values, levels and ratios are printed in them. What the verdict is (the test, the
//! interval, Holm, the minimum effect) is `verdict.rs`'s; this module only says it.

use crate::bootstrap::CiMethod;
use crate::verdict::{Comparison, Outcome};

impl Comparison {
    /// `p = 0.0079`, `Holm-adjusted p = 0.024 over 6 pairs`, and for a sequential look the
    /// level it had to beat: `p = 0.0012 < α = 0.0083 at look 2 of 6`.
    fn p_text(&self) -> String {
        let Some(p) = self.p_adjusted else { return "p = n/a".into() };
        let mut text = fmt_p(p, self.alpha);
        if self.family_size > 1 {
            text = format!("Holm-adjusted {text} over {} pairs", self.family_size);
        }
        if let Some(l) = &self.look {
            let op = if p < self.alpha { "<" } else { "≥" };
            text = format!("{text} {op} α = {} at look {} of {}", fmt_alpha(self.alpha), l.look, l.of);
        }
        text
    }

    /// `97.1 % CI 1.10–1.31×`, with an infinite bound written as "unbounded", both bounds
    /// printed to the same number of decimals, enough to show on which side of 1 each lies;
    /// then what the level means where it is not plain: a Monte Carlo level ("≈"), a nominal
    /// one, a Holm step's, one after a sequential stop, and 1 excluded by tied runs.
    fn ci_text(&self, lo: f64, hi: f64) -> String {
        let Some(ci) = self.ratio_ci else { return "no interval".into() };
        let (lo_s, hi_s) = fmt_bounds(lo, hi);
        let monte_carlo = ci.method == CiMethod::BrunnerMunzelPermutation && ci.iterations > 0;
        let nominal = ci.method == CiMethod::HodgesLehmannMoses && self.n_a.max(self.n_b) > crate::EXACT_MAX_N;
        let level = if monte_carlo { format!("≈{}", fmt_level(ci.level)) } else { fmt_level(ci.level) };
        let mut text = format!("{level} CI {lo_s}–{hi_s}×");
        if nominal {
            text.push_str(" (nominal level: normal approximation past 50 runs)");
        }
        if (ci.lo == 1.0 && ci.lo_open) || (ci.hi == 1.0 && ci.hi_open) {
            text.push_str(", 1 itself excluded (tied runs)");
        }
        if let Some(step) = self.holm_step {
            text.push_str(&format!(" at Holm step {step} of {} (per pair, not simultaneous)", self.family_size));
        }
        if self.look.is_some() && self.outcome.decided() {
            text.push_str(", conditional on the sequential stop (not adjusted for it)");
        }
        text
    }

    /// "; spreads differ 15×: the level is approximate" where no rank test keeps α.
    fn spread_note(&self) -> String {
        match self.spread_ratio {
            Some(r) if self.level_is_approximate() => {
                if r.is_infinite() {
                    "; one algorithm scored the same in every run, the other did not: the level is approximate".into()
                } else {
                    format!("; spreads differ {}×: the level is approximate", fmt_spread(r))
                }
            }
            _ => String::new(),
        }
    }

    /// The ratio and interval with the better (or, below the minimum effect, the higher) arm
    /// first, so the ratio says "how much".
    fn oriented(&self) -> Option<(&str, &str, f64, f64, f64, usize, usize)> {
        let ci = self.ratio_ci.as_ref()?;
        let inv = |x: f64| if x == 0.0 { f64::INFINITY } else { 1.0 / x };
        let b_first = match self.outcome {
            Outcome::Better => self.better.as_deref() == Some(self.b.as_str()),
            _ => ci.ratio < 1.0,
        };
        Some(if b_first {
            (&self.b, &self.a, inv(ci.ratio), inv(ci.hi), inv(ci.lo), self.n_b, self.n_a)
        } else {
            (&self.a, &self.b, ci.ratio, ci.lo, ci.hi, self.n_a, self.n_b)
        })
    }

    /// `5 vs 4 runs; 1 cubic run without a score`.
    fn runs_text(&self, first: &str, n_first: usize, n_second: usize) -> String {
        let (m_first, m_second, second) = if first == self.a { (self.missing_a, self.missing_b, &self.b) } else { (self.missing_b, self.missing_a, &self.a) };
        let mut text = format!("{n_first} vs {n_second} runs");
        for (name, m) in [(first, m_first), (second.as_str(), m_second)] {
            if m > 0 {
                text.push_str(&format!("; {m} {name} run{} without a score", if m == 1 { "" } else { "s" }));
            }
        }
        text.push_str(&self.spread_note());
        text
    }

    /// The arm that scored 0 in every run, if one did (no ratio can describe it).
    fn all_zero_arm(&self) -> Option<(&str, &str, usize)> {
        let ci = self.ratio_ci.as_ref()?;
        let a_zero = ci.ratio == 0.0 && ci.hi == 0.0;
        let b_zero = ci.ratio.is_infinite() && ci.lo.is_infinite();
        match (a_zero, b_zero) {
            (true, false) => Some((&self.a, &self.b, self.n_a)),
            (false, true) => Some((&self.b, &self.a, self.n_b)),
            _ => None,
        }
    }

    /// One-line human summary, `metric` being the noun compared (e.g. "goodput").
    ///
    /// * better: `bbr: 14.6× the goodput of cubic (96.8 % CI 12.9–15.8×, p = 0.0079, 5 vs 5 runs)`
    ///   — the better arm first; for a lower-is-better metric its ratio is below 1;
    /// * below the minimum effect, equivalent, no difference, undecided, inconclusive and
    ///   insufficient data each say so in words, with the evidence.
    pub fn sentence(&self, metric: &str) -> String {
        let runs = |first: &str, x: usize, y: usize| self.runs_text(first, x, y);
        let pct = fmt_pct(self.min_effect);
        if let (Some(v), false) = (self.identical_score, self.outcome == Outcome::InsufficientData) {
            // A zero-width interval at 1 says nothing: say what the runs did.
            let runs = runs(&self.a, self.n_a, self.n_b);
            return if v == 0.0 {
                format!("no {metric} from {} or {}: identical scores of 0 in every run, nothing to compare ({runs})", self.a, self.b)
            } else {
                format!("{} and {}: identical scores in every run ({metric} {}), so no interval can be given ({runs})", self.a, self.b, fmt_ratio(v))
            };
        }
        match self.outcome {
            Outcome::InsufficientData => {
                format!("insufficient data to compare the {metric} of {} and {} ({})", self.a, self.b, runs(&self.a, self.n_a, self.n_b))
            }
            Outcome::Better => {
                if let Some((zero, other, n_zero)) = self.all_zero_arm() {
                    return format!(
                        "{}: better {metric} than {zero}, which scored 0 in all {n_zero} of its runs, so no ratio can say by how much ({}, {})",
                        self.better.as_deref().unwrap_or(other),
                        self.p_text(),
                        runs(other, if other == self.a { self.n_a } else { self.n_b }, n_zero)
                    );
                }
                let (best, worst, r, lo, hi, nb, nw) = self.oriented().expect("Better has a CI");
                format!("{best}: {}× the {metric} of {worst} ({}, {}, {})", fmt_ratio(r), self.ci_text(lo, hi), self.p_text(), runs(best, nb, nw))
            }
            Outcome::BelowMinEffect => {
                let (hi_arm, lo_arm, r, lo, hi, n1, n2) = self.oriented().expect("has a CI");
                format!(
                    "significant but below {pct}: {hi_arm} has {}× the {metric} of {lo_arm}, less than the minimum effect ({}, {}, {})",
                    fmt_ratio(r),
                    self.ci_text(lo, hi),
                    self.p_text(),
                    runs(hi_arm, n1, n2)
                )
            }
            Outcome::MaybeBelowMinEffect => {
                let (hi_arm, lo_arm, r, lo, hi, n1, n2) = self.oriented().expect("has a CI");
                format!(
                    "significant; the effect may be below {pct}: {hi_arm} has {}× the {metric} of {lo_arm} ({}, {}, {})",
                    fmt_ratio(r),
                    self.ci_text(lo, hi),
                    self.p_text(),
                    runs(hi_arm, n1, n2)
                )
            }
            Outcome::Equivalent => {
                let ci = self.ratio_ci.expect("has a CI");
                format!(
                    "{} and {} are equivalent in {metric} within {pct} (ratio {}×, {}, {}, {})",
                    self.a,
                    self.b,
                    fmt_ratio(ci.ratio),
                    self.ci_text(ci.lo, ci.hi),
                    self.p_text(),
                    runs(&self.a, self.n_a, self.n_b)
                )
            }
            Outcome::NoDifference | Outcome::Inconclusive | Outcome::Undecided => {
                let evidence = match &self.ratio_ci {
                    Some(ci) if ci.level >= 1.0 => format!("ratio {}×, too few runs for an interval, {}", fmt_ratio_or_unbounded(ci.ratio), self.p_text()),
                    Some(ci) => format!("ratio {}×, {}, {}", fmt_ratio_or_unbounded(ci.ratio), self.ci_text(ci.lo, ci.hi), self.p_text()),
                    None => format!("no ratio interval, {}", self.p_text()),
                };
                let runs = runs(&self.a, self.n_a, self.n_b);
                match self.outcome {
                    Outcome::NoDifference => format!("no significant difference in {metric} between {} and {} ({evidence}, {runs})", self.a, self.b),
                    Outcome::Undecided => match &self.look {
                        // Ended before its last look: the experiment was cut short.
                        Some(l) if l.look < l.of => format!(
                            "undecided: interrupted after {} runs, at look {} of {} (α = {}), before --max-runs, on {metric} between {} and {} ({evidence}, {runs})",
                            self.n_a.max(self.n_b),
                            l.look,
                            l.of,
                            fmt_alpha(self.alpha),
                            self.a,
                            self.b
                        ),
                        _ => format!(
                            "undecided after {} runs (--max-runs reached) on {metric} between {} and {} ({evidence}, {runs})",
                            self.n_a.max(self.n_b),
                            self.a,
                            self.b
                        ),
                    },
                    _ => {
                        let why = match &self.ratio_ci {
                            Some(ci) if ci.level >= 1.0 => {
                                // Ties, not the count, when distinct scores could have got there:
                                // a result compared with itself ties every run with its twin, and
                                // only more (distinct) runs can decide.
                                let untied = 2.0 / binomial(self.n_a + self.n_b, self.n_a);
                                let tied = if untied < self.alpha / self.family_size as f64 { " tied as these are," } else { "" };
                                format!(
                                    "with {} vs {} runs{tied} no rank test can reach p < {}",
                                    self.n_a,
                                    self.n_b,
                                    fmt_alpha(self.alpha / self.family_size as f64)
                                )
                            }
                            None => "the rank test finds a difference but the ratio has no interval".to_string(),
                            Some(ci) if ci.excludes_one() && self.family_size > 1 => {
                                "the ratio's interval excludes 1 but Holm's step-down stopped at an earlier pair".to_string()
                            }
                            Some(ci) if ci.excludes_one() => {
                                "the ratio's interval excludes 1 but the rank test does not reach significance (tied values)".to_string()
                            }
                            Some(_) => "the rank test finds a difference but the ratio's interval includes 1 (tied values)".to_string(),
                        };
                        format!("inconclusive on {metric} between {} and {}: {why}; more runs would decide ({evidence}, {runs})", self.a, self.b)
                    }
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
                let (lo, hi) = fmt_bounds(lo, hi);
                format!("{best} {}× {worst} (CI {lo}–{hi}, {p})", fmt_ratio_or_unbounded(r))
            }
            Outcome::BelowMinEffect => format!("significant but below {} ({p})", fmt_pct(self.min_effect)),
            Outcome::MaybeBelowMinEffect => format!("significant; the effect may be below {} ({p})", fmt_pct(self.min_effect)),
            Outcome::Equivalent => format!("equivalent within {} ({p})", fmt_pct(self.min_effect)),
            Outcome::NoDifference => format!("no significant difference ({p})"),
            Outcome::Undecided => format!("undecided at --max-runs ({p})"),
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

/// α with two significant digits: `0.05`, `0.0083`, `0.00061` (never `0.0000`).
pub fn fmt_alpha(alpha: f64) -> String {
    if alpha.is_nan() || alpha <= 0.0 || !alpha.is_finite() {
        return format!("{alpha}");
    }
    let decimals = (1 - alpha.log10().floor() as i32).max(1) as usize;
    let text = format!("{alpha:.decimals$}");
    // 0.050 -> 0.05
    if text.contains('.') {
        text.trim_end_matches('0').trim_end_matches('.').to_string()
    } else {
        text
    }
}

/// A fraction as a percentage for the minimum effect: `2 %`, `0.5 %`.
fn fmt_pct(x: f64) -> String {
    let s = format!("{:.2}", x * 100.0);
    format!("{} %", s.trim_end_matches('0').trim_end_matches('.'))
}

fn fmt_ratio_or_unbounded(r: f64) -> String {
    if r.is_infinite() {
        "unbounded".into()
    } else {
        fmt_ratio(r)
    }
}

/// "95 %" for 0.95, "97.1 %" for 0.9714, "99.17 %" for 0.99167, "99.99994 %" for 0.99999939:
/// two significant digits of what the level leaves out, so a level short of 1 never reads
/// "100 %".
pub fn fmt_level(level: f64) -> String {
    let pct = level * 100.0;
    if (pct - pct.round()).abs() < 1e-9 {
        return format!("{:.0} %", pct.round());
    }
    let left = 100.0 - pct;
    let decimals = (1 - left.log10().floor() as i32).max(1) as usize;
    let s = format!("{pct:.decimals$}");
    let s = s.trim_end_matches('0').trim_end_matches('.');
    format!("{s} %")
}

/// Both bounds of an interval as [`fmt_bound`] prints them, to the same number of decimals
/// ("1.010–1.050", never "1.010–1.05"); an infinite bound reads "unbounded".
pub(crate) fn fmt_bounds(lo: f64, hi: f64) -> (String, String) {
    let one = |x: f64| if x.is_finite() { fmt_bound(x) } else { "unbounded".to_string() };
    let (l, h) = (one(lo), one(hi));
    let decimals = |t: &str| t.split('.').nth(1).map(str::len);
    match (lo.is_finite() && hi.is_finite(), decimals(&l), decimals(&h)) {
        (true, Some(dl), Some(dh)) if dl != dh => {
            let d = dl.max(dh);
            (format!("{lo:.d$}"), format!("{hi:.d$}"))
        }
        _ => (l, h),
    }
}

/// A spread ratio: `15`, `2.5`.
pub(crate) fn fmt_spread(r: f64) -> String {
    if r >= 10.0 {
        format!("{r:.0}")
    } else {
        format!("{r:.1}")
    }
}

/// A ratio as [`fmt_ratio`] prints it, with digits added until the printed value lies on the
/// same side of 1 as the value (1.0004 never prints as "1.000").
fn fmt_bound(x: f64) -> String {
    let text = fmt_ratio(x);
    if x == 1.0 || !x.is_finite() {
        return text;
    }
    let side = |v: f64| v.total_cmp(&1.0);
    let mut decimals = text.split('.').nth(1).map_or(0, str::len);
    let mut text = text;
    while text.parse::<f64>().is_ok_and(|shown| side(shown) != side(x)) && decimals < 12 {
        decimals += 1;
        text = format!("{x:.decimals$}");
    }
    text
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

/// `C(n, k)`, as a float (exact for the run counts a verdict sees).
fn binomial(n: usize, k: usize) -> f64 {
    (0..k.min(n - k)).fold(1.0, |c, i| c * (n - i) as f64 / (i + 1) as f64)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::verdict::tests::{BBR, CUBIC};
    use crate::verdict::*;
    use rand::{Rng, SeedableRng};

    #[test]
    fn no_difference_sentence() {
        let a = [100.0, 103.0, 98.0, 105.0, 101.0];
        let b = [99.0, 102.0, 97.0, 104.0, 100.5];
        let c = compare("bbr", &a, "cubic", &b, 0.05);
        assert_eq!((c.outcome, c.better.clone()), (Outcome::NoDifference, None));
        let s = c.sentence("goodput");
        assert!(s.starts_with("no significant difference in goodput between bbr and cubic (ratio 1.0"), "{s}");
        assert!(s.contains("96 % CI "), "{s}");
        assert!(s.ends_with("×, p = 0.63, 5 vs 5 runs)"), "{s}");
        // The old test on the same data: u_a = 15 of 25 -> exact two-sided p = 0.690 (scipy
        // mannwhitneyu method="exact"), with the Moses interval at 96.8 %.
        let c = compare_directed_using(TestMethod::MannWhitneyMoses, "bbr", &a, "cubic", &b, BetterIs::Higher, Criteria::at(0.05));
        assert!((c.mann_whitney.unwrap().p_value - 0.6904761904761905).abs() < 1e-12);
        let s = c.sentence("goodput");
        assert!(s.contains("96.8 % CI ") && s.ends_with("×, p = 0.69, 5 vs 5 runs)"), "{s}");
    }

    #[test]
    fn an_all_zero_arm_is_said_in_words() {
        for (x, y) in [(("bbr", &[5.0, 6.0, 7.0, 8.0][..]), ("cubic", &[0.0; 4][..])), (("cubic", &[0.0; 4][..]), ("bbr", &[5.0, 6.0, 7.0, 8.0][..]))] {
            let c = compare(x.0, x.1, y.0, y.1, 0.05);
            assert_eq!(c.better.as_deref(), Some("bbr"));
            let s = c.sentence("goodput");
            assert_eq!(s, "bbr: better goodput than cubic, which scored 0 in all 4 of its runs, so no ratio can say by how much (p = 0.029, 4 vs 4 runs)");
            assert!(!s.contains('∞') && !s.contains("unbounded–unbounded"), "{s}");
        }
    }

    #[test]
    fn missing_scores_are_counted_and_said() {
        let a = [5e6, 6e6, 7e6, 8e6];
        let b = [f64::NAN, 2e6, 3e6, 4e6];
        let c = compare("bbr", &a, "cubic", &b, 0.05);
        assert_eq!((c.n_a, c.n_b, c.missing_a, c.missing_b), (4, 3, 0, 1));
        let s = c.sentence("goodput");
        assert!(s.contains("4 vs 3 runs; 1 cubic run without a score"), "{s}");
        let v = serde_json::to_value(&c).unwrap();
        assert_eq!(v["missing_b"], 1);
    }

    #[test]
    fn bounds_show_their_side_of_one() {
        let a = [10024.0, 10024.0, 10045.0, 10022.0, 10048.0, 10033.0];
        let b = [9996.0, 10011.0, 9994.0, 10016.0, 10032.0, 10015.0];
        let c = compare("x", &a, "y", &b, 0.05);
        assert_eq!(c.outcome, Outcome::Better, "{c:?}");
        let ci = c.ratio_ci.unwrap();
        assert!(ci.lo > 1.0);
        let s = c.sentence("goodput");
        assert!(!s.contains("CI 1.000–"), "{s}");
        assert_eq!(fmt_bound(1.0004), "1.0004");
        assert_eq!(fmt_bound(0.99996), "0.99996");
        assert_eq!(fmt_bound(1.034), "1.034");
        assert_eq!(fmt_bound(1.0), "1.000");
    }

    #[test]
    fn levels_and_alphas_are_readable() {
        assert_eq!(fmt_level(0.99999939), "99.999939 %");
        assert_eq!(fmt_level(0.9714285714), "97.1 %");
        assert_eq!(fmt_level(0.991666), "99.17 %");
        assert_ne!(fmt_level(0.9999999999), "100 %");
        assert_eq!(fmt_alpha(0.05), "0.05");
        assert_eq!(fmt_alpha(0.0083333), "0.0083");
        assert_eq!(fmt_alpha(6.1e-7), "0.00000061");
        assert_eq!(fmt_alpha(0.0179), "0.018");
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
    fn identical_scores_are_said_in_words() {
        let criteria = Criteria { alpha: 0.05, min_effect: 0.02 };
        let c = compare_directed("bbr", &[0.0; 5], "cubic", &[0.0; 5], BetterIs::Higher, criteria);
        assert_eq!(c.sentence("goodput"), "no goodput from bbr or cubic: identical scores of 0 in every run, nothing to compare (5 vs 5 runs)");
        let c = compare_directed("bbr", &[7.5; 4], "cubic", &[7.5; 4], BetterIs::Higher, criteria);
        assert_eq!(c.sentence("goodput"), "bbr and cubic: identical scores in every run (goodput 7.50), so no interval can be given (4 vs 4 runs)");
        assert!(!c.sentence("goodput").contains("equivalent"));
    }

    #[test]
    fn a_result_against_itself_is_undecided_by_its_ties_not_its_count() {
        // 4 vs 4 distinct runs can reach p = 2/70 < 0.05; these, three of them equal, compared
        // with themselves cannot (no interval exists at the level). Distinct runs against
        // themselves have one: "no significant difference".
        let runs = [10.0, 10.0, 10.0, 13.0];
        let c = compare("a", &runs, "again", &runs, 0.05);
        assert_eq!(c.outcome, Outcome::Inconclusive);
        let s = c.sentence("goodput");
        assert!(s.contains("with 4 vs 4 runs tied as these are, no rank test can reach p < 0.05; more runs would decide"), "{s}");
        let distinct = [10.0, 11.0, 12.0, 13.0];
        assert_eq!(compare("a", &distinct, "again", &distinct, 0.05).outcome, Outcome::NoDifference);
        assert_eq!(binomial(8, 4), 70.0);
        assert_eq!(binomial(20, 10), 184_756.0);
    }

    #[test]
    fn bounds_share_their_precision() {
        assert_eq!(fmt_bounds(1.0101, 1.05), ("1.010".to_string(), "1.050".to_string()));
        assert_eq!(fmt_bounds(0.9, 1.02), ("0.900".to_string(), "1.020".to_string()));
        assert_eq!(fmt_bounds(1.2, f64::INFINITY), ("1.20".to_string(), "unbounded".to_string()));
        assert_eq!(fmt_bounds(1.0004, 1.3), ("1.0004".to_string(), "1.3000".to_string()));
    }

    #[test]
    fn levels_say_what_they_mean() {
        let a = [9.0, 9.1, 9.2, 9.3, 9.4];
        let b = [5.0, 5.1, 5.2, 5.3, 5.4];
        let c = [1.0, 1.1, 1.2, 1.3, 1.4];
        let cs = best_against_rest(&[("a", &a), ("b", &b), ("c", &c)], BetterIs::Higher, Criteria::at(0.05), 2);
        // The two p-values are equal (both complete separation): one Holm step, the first.
        assert_eq!(cs.iter().map(|c| c.holm_step).collect::<Vec<_>>(), [Some(1), Some(1)]);
        let s = cs[0].sentence("goodput");
        assert!(s.contains("× at Holm step 1 of 3 (per pair, not simultaneous), Holm-adjusted p"), "{s}");
        let mut d = compare("bbr", &BBR, "cubic", &CUBIC, 0.018);
        d.look = Some(LookContext { look: 1, of: 6, spent: 0.018, alpha_total: 0.05 });
        let s = d.sentence("goodput");
        assert!(s.contains("×, conditional on the sequential stop (not adjusted for it), p = 0.0079 < α = 0.018 at look 1 of 6"), "{s}");
    }
}
