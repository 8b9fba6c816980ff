//! # ccbench-stats
//!
//! Small, dependency-light statistics for comparing congestion-control
//! algorithms (e.g. BBR vs CUBIC goodput) over repeated benchmark runs.
//!
//! * [`Summary::of`] — descriptive statistics (mean, sample standard deviation,
//!   min/max and numpy-style linearly interpolated quantiles via [`quantile`]).
//! * [`hodges_lehmann_ratio_ci`] — the Hodges–Lehmann ratio with the exact Moses interval on
//!   log scores: the interval that agrees with the rank test by construction, at its exact level.
//! * [`bootstrap_ratio_ci`] — percentile-bootstrap confidence interval for
//!   `median(a) / median(b)`, reproducible from a seed (ChaCha8); kept where no rank-based
//!   interval exists.
//! * [`mann_whitney_u`] — two-sided Mann–Whitney U test, exact (conditional on
//!   ties) for groups of up to 50, normal approximation (tie + continuity
//!   corrected) beyond; [`sequential::min_runs_to_decide`] tells how many runs per arm
//!   `k` algorithms need before a significant result is even possible.
//! * [`jain_fairness`] — Jain's fairness index of per-flow shares.
//! * [`compare`] / [`compare_directed`] — combine the above into a [`Comparison`]
//!   verdict (better, below the minimum effect, equivalent, no difference, undecided,
//!   inconclusive) for a metric where higher or
//!   lower is better, with a human-readable [`Comparison::sentence`];
//!   [`best_against_rest`] does so for several arms with Holm's correction.
//! * [`median_order_ci`] — distribution-free CI of a median labelled with its true level.
//! * [`expectation`] — one-sided order-statistic bounds of a median and pass / fail /
//!   undecided against a threshold (`--expect`).
//! * [`sequential`] — the fewest runs that can decide, and the Lan–DeMets design of `--runs auto`.
//!
//! ## Example
//!
//! ```
//! use ccbench_stats::{compare, Summary};
//!
//! let bbr = [142.0, 150.0, 139.0, 160.0, 147.0];
//! let cubic = [10.1, 9.8, 10.4, 11.0, 9.5];
//! assert_eq!(Summary::of(&bbr).unwrap().median, 147.0);
//!
//! let c = compare("bbr", &bbr, "cubic", &cubic, 0.05);
//! assert!(c.significant);
//! assert_eq!(c.better.as_deref(), Some("bbr"));
//! println!("{}", c.sentence("goodput"));
//! // bbr: 14.6× the goodput of cubic (96.8 % CI …×, p = 0.0079, 5 vs 5 runs)
//! ```
//!
//! ## Conventions
//!
//! All functions are pure (no I/O, no global RNG) and never panic on bad input:
//! empty slices and non-finite values (NaN, ±∞) make the fallible functions
//! return `None`.

mod bootstrap;
mod brunner_munzel;
pub mod expectation;
mod fairness;
mod mann_whitney;
mod rank_ci;
pub mod sequential;
mod summary;
mod verdict;
mod wording;

pub use bootstrap::{bootstrap_median_ci, bootstrap_ratio_ci, median_order_ci, CiMethod, MedianCi, RatioCi};
pub use brunner_munzel::{brunner_munzel, brunner_munzel_ratio_ci, BrunnerMunzel, PermutationMethod, EXACT_MAX_PERMUTATIONS, MONTE_CARLO_PERMUTATIONS};
pub use fairness::jain_fairness;
pub use mann_whitney::{mann_whitney_u, min_runs_for_significance, MannWhitney, MwMethod, EXACT_MAX_N};
pub use rank_ci::{hodges_lehmann_ratio_ci, moses_depth, u_null_cdf};
pub use summary::{median, quantile, Summary};
pub use verdict::{
    best_against_rest, best_against_rest_using, compare, compare_directed, compare_directed_using, holm, look_stops, BetterIs, Comparison, Criteria,
    LookContext, Outcome, TestMethod, APPROX_BELOW_RUNS, APPROX_SPREAD_RATIO, DEFAULT_BOOTSTRAP_ITERATIONS, DEFAULT_TEST,
};
pub use wording::{fmt_alpha, fmt_level, fmt_p};

/// `true` when the slice is non-empty and every value is finite.
pub(crate) fn all_finite_nonempty(xs: &[f64]) -> bool {
    !xs.is_empty() && xs.iter().all(|x| x.is_finite())
}

/// Copy and sort ascending (total order; callers ensure values are finite).
pub(crate) fn sorted_copy(xs: &[f64]) -> Vec<f64> {
    let mut v = xs.to_vec();
    v.sort_unstable_by(f64::total_cmp);
    v
}
