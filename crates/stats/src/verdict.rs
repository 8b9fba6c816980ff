//! Combine the ratio CI and the Mann–Whitney test into one verdict.

use serde::{Deserialize, Serialize};

use crate::bootstrap::{bootstrap_ratio_ci, RatioCi};
use crate::mann_whitney::{mann_whitney_u, MannWhitney};

/// Bootstrap iterations used by [`compare`].
pub const DEFAULT_BOOTSTRAP_ITERATIONS: usize = 10_000;

/// Outcome of comparing two arms (higher values are better).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub struct Comparison {
    /// Name of arm A (e.g. `"bbr"`).
    pub a: String,
    /// Name of arm B (e.g. `"cubic"`).
    pub b: String,
    pub n_a: usize,
    pub n_b: usize,
    /// Significance level used; the CI level is `1 − alpha`.
    pub alpha: f64,
    /// Bootstrap CI of `median(a) / median(b)`; `None` if undefined
    /// (empty/non-finite input or `median(b) == 0`).
    pub ratio_ci: Option<RatioCi>,
    /// Mann–Whitney U test of `a` vs `b`; `None` on empty/non-finite input.
    pub mann_whitney: Option<MannWhitney>,
    /// `p < alpha` **and** the ratio CI excludes 1.
    pub significant: bool,
    /// Name of the better (higher) arm when `significant`, else `None`.
    pub faster: Option<String>,
}

/// Compare arm `a` against arm `b` (higher is better).
///
/// Runs [`mann_whitney_u`] and [`bootstrap_ratio_ci`] at level `1 − alpha` with
/// [`DEFAULT_BOOTSTRAP_ITERATIONS`] iterations seeded by `seed`. The result is
/// significant only if both agree: `p < alpha` and the CI excludes 1.
/// An `alpha` outside `(0, 1)` (or NaN) yields no CI and hence never a
/// significant result.
pub fn compare(name_a: &str, a: &[f64], name_b: &str, b: &[f64], alpha: f64, seed: u64) -> Comparison {
    let ratio_ci = bootstrap_ratio_ci(a, b, 1.0 - alpha, DEFAULT_BOOTSTRAP_ITERATIONS, seed);
    let mann_whitney = mann_whitney_u(a, b);
    let significant = match (&ratio_ci, &mann_whitney) {
        (Some(ci), Some(mw)) => mw.p_value < alpha && ci.excludes_one(),
        _ => false,
    };
    let faster = match (&ratio_ci, significant) {
        (Some(ci), true) if ci.lo > 1.0 => Some(name_a.to_string()),
        (Some(_), true) => Some(name_b.to_string()),
        _ => None,
    };
    Comparison { a: name_a.to_string(), b: name_b.to_string(), n_a: a.len(), n_b: b.len(), alpha, ratio_ci, mann_whitney, significant, faster }
}

impl Comparison {
    /// One-line human summary, `metric` being the noun compared (e.g. "goodput").
    ///
    /// * significant: `bbr: 14.2× the goodput of cubic (95 % CI 12.9–15.8×, p = 0.0079, 5 vs 5 runs)`
    ///   — the better arm is named first, so the ratio is ≥ 1 (CI inverted if needed);
    /// * otherwise: `no significant difference between bbr and cubic (ratio 1.03×, 95 % CI 0.97–1.10×, p = 0.55, 5 vs 5 runs)`
    ///   with the ratio as `a / b`;
    /// * if no ratio is defined (`median(b) == 0`) or no test could be run, a
    ///   sentence saying so.
    ///
    /// Ratios ≥ 10 get one decimal, ≥ 100 none, smaller ones two (three
    /// significant digits below 0.1). p is `p < 0.001` when tiny, otherwise two
    /// significant digits.
    pub fn sentence(&self, metric: &str) -> String {
        let runs = |x: usize, y: usize| format!("{x} vs {y} runs");
        let Some(mw) = &self.mann_whitney else {
            return format!("insufficient data to compare {} and {} ({})", self.a, self.b, runs(self.n_a, self.n_b));
        };
        let p = fmt_p(mw.p_value);
        let Some(ci) = &self.ratio_ci else {
            return format!("no {metric} ratio for {} vs {}: median {metric} of {} is 0 ({p}, {})", self.a, self.b, self.b, runs(self.n_a, self.n_b));
        };
        let level = fmt_level(ci.level);
        if self.significant {
            let a_better = self.faster.as_deref() == Some(self.a.as_str());
            let (best, worst, r, lo, hi, nb, nw) = if a_better {
                (&self.a, &self.b, ci.ratio, ci.lo, ci.hi, self.n_a, self.n_b)
            } else {
                (&self.b, &self.a, 1.0 / ci.ratio, 1.0 / ci.hi, 1.0 / ci.lo, self.n_b, self.n_a)
            };
            format!("{best}: {}× the {metric} of {worst} ({level} CI {}–{}×, {p}, {})", fmt_ratio(r), fmt_ratio(lo), fmt_ratio(hi), runs(nb, nw))
        } else {
            format!(
                "no significant difference between {} and {} (ratio {}×, {level} CI {}–{}×, {p}, {})",
                self.a,
                self.b,
                fmt_ratio(ci.ratio),
                fmt_ratio(ci.lo),
                fmt_ratio(ci.hi),
                runs(self.n_a, self.n_b)
            )
        }
    }
}

/// `p < 0.001`, or `p = ` with two significant digits.
fn fmt_p(p: f64) -> String {
    if p.is_nan() {
        return "p = n/a".to_string();
    }
    if p < 0.001 {
        return "p < 0.001".to_string();
    }
    // p in [0.001, 1]: two significant digits -> decimals = 1 − ⌊log10 p⌋.
    let decimals = (1 - p.log10().floor() as i32).max(1) as usize;
    format!("p = {p:.decimals$}")
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

    const BBR: [f64; 5] = [142.0, 150.0, 139.0, 160.0, 147.0];
    const CUBIC: [f64; 5] = [10.1, 9.8, 10.4, 11.0, 9.5];

    #[test]
    fn clear_winner_either_order() {
        let c = compare("bbr", &BBR, "cubic", &CUBIC, 0.05, 1);
        assert!(c.significant);
        assert_eq!(c.faster.as_deref(), Some("bbr"));
        assert_eq!((c.n_a, c.n_b), (5, 5));
        let mw = c.mann_whitney.unwrap();
        assert!((mw.p_value - 2.0 / 252.0).abs() < 1e-12);
        let ci = c.ratio_ci.unwrap();
        assert_eq!(ci.level, 0.95);
        let s = c.sentence("goodput");
        assert!(s.starts_with("bbr: 14.6× the goodput of cubic (95 % CI "), "{s}");
        assert!(s.ends_with("×, p = 0.0079, 5 vs 5 runs)"), "{s}");

        // Swapped arguments: the winner is still named first with ratio ≥ 1,
        // and the CI is the inverted CI of cubic/bbr.
        let d = compare("cubic", &CUBIC, "bbr", &BBR, 0.05, 1);
        assert!(d.significant);
        assert_eq!(d.faster.as_deref(), Some("bbr"));
        let dci = d.ratio_ci.unwrap();
        let s = d.sentence("goodput");
        let expected = format!("bbr: 14.6× the goodput of cubic (95 % CI {}–{}×, p = 0.0079, 5 vs 5 runs)", fmt_ratio(1.0 / dci.hi), fmt_ratio(1.0 / dci.lo));
        assert_eq!(s, expected);
        assert!(1.0 / dci.hi > 1.0);
    }

    #[test]
    fn sentence_exact_format_with_fixed_ci() {
        let c = Comparison {
            a: "bbr".into(),
            b: "cubic".into(),
            n_a: 5,
            n_b: 5,
            alpha: 0.05,
            ratio_ci: Some(RatioCi { ratio: 14.2, lo: 12.9, hi: 15.8, level: 0.95, iterations: 10_000, skipped: 0 }),
            mann_whitney: mann_whitney_u(&BBR, &CUBIC),
            significant: true,
            faster: Some("bbr".into()),
        };
        assert_eq!(c.sentence("goodput"), "bbr: 14.2× the goodput of cubic (95 % CI 12.9–15.8×, p = 0.0079, 5 vs 5 runs)");
    }

    #[test]
    fn no_difference_sentence() {
        let a = [100.0, 103.0, 98.0, 105.0, 101.0];
        let b = [99.0, 102.0, 97.0, 104.0, 100.5];
        let c = compare("bbr", &a, "cubic", &b, 0.05, 9);
        assert!(!c.significant);
        assert_eq!(c.faster, None);
        let ci = c.ratio_ci.unwrap();
        assert!(ci.lo <= 1.0 && ci.hi >= 1.0);
        let s = c.sentence("goodput");
        assert!(s.starts_with("no significant difference between bbr and cubic (ratio 1.005×, 95 % CI "), "{s}");
        // u_a = 15 of 25 -> exact two-sided p = 2 · P(U ≤ 10) = 0.690 (scipy)
        assert!((c.mann_whitney.unwrap().p_value - 0.6904761904761905).abs() < 1e-12);
        assert!(s.ends_with("×, p = 0.69, 5 vs 5 runs)"), "{s}");
    }

    #[test]
    fn too_few_runs_never_significant() {
        // 3 vs 3 complete separation: p = 0.1 ≥ 0.05 even though CI excludes 1.
        let c = compare("bbr", &[100.0, 101.0, 102.0], "cubic", &[1.0, 2.0, 3.0], 0.05, 0);
        assert!(c.ratio_ci.unwrap().excludes_one());
        assert!(!c.significant);
        assert!(c.sentence("goodput").contains("p = 0.10, 3 vs 3 runs"));
    }

    #[test]
    fn degenerate_inputs() {
        let c = compare("bbr", &[], "cubic", &[1.0], 0.05, 0);
        assert!(!c.significant && c.ratio_ci.is_none() && c.mann_whitney.is_none());
        assert_eq!(c.sentence("goodput"), "insufficient data to compare bbr and cubic (0 vs 1 runs)");

        let c = compare("bbr", &[5.0, 6.0, 7.0, 8.0], "cubic", &[0.0; 4], 0.05, 0);
        assert!(!c.significant && c.ratio_ci.is_none());
        assert_eq!(c.sentence("goodput"), "no goodput ratio for bbr vs cubic: median goodput of cubic is 0 (p = 0.021, 4 vs 4 runs)");
    }

    #[test]
    fn formatting_helpers() {
        assert_eq!(fmt_p(0.0004), "p < 0.001");
        assert_eq!(fmt_p(0.0079365), "p = 0.0079");
        assert_eq!(fmt_p(0.55), "p = 0.55");
        assert_eq!(fmt_p(0.1), "p = 0.10");
        assert_eq!(fmt_p(1.0), "p = 1.0");
        assert_eq!(fmt_level(0.95), "95 %");
        assert_eq!(fmt_level(0.999), "99.9 %");
        assert_eq!(fmt_ratio(14.24), "14.2");
        assert_eq!(fmt_ratio(1.034), "1.034");
        assert_eq!(fmt_ratio(0.97), "0.970");
        assert_eq!(fmt_ratio(1.06), "1.06");
        assert_eq!(fmt_ratio(1.1), "1.10");
        assert_eq!(fmt_ratio(142.4), "142");
        assert_eq!(fmt_ratio(0.0512), "0.0512");
        assert_eq!(fmt_ratio(f64::INFINITY), "∞");
    }

    #[test]
    fn serializes() {
        let c = compare("bbr", &BBR, "cubic", &CUBIC, 0.05, 1);
        let v = serde_json::to_value(&c).unwrap();
        assert_eq!(v["faster"], "bbr");
        assert_eq!(v["significant"], true);
        assert_eq!(v["mann_whitney"]["method"], "exact");
        assert!(v["ratio_ci"]["lo"].is_number());
    }
}
