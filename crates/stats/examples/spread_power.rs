//! False positives when algorithms differ in spread, and the power each test costs: the exact
//! Mann–Whitney test with the Moses interval (old) beside the permuted Brunner–Munzel test with
//! the interval that inverts it (new), through the crate's own `best_against_rest_using`, as
//! `ccbench run` calls it.
//!
//! Run: `cargo run --release -p ccbench-stats --example spread_power [TRIALS] [SECTIONS]`
//! (default 2000 trials per cell and every section; SECTIONS is a list such as `2,3`; each
//! rate's Monte Carlo standard error is printed).
//!
//! In the `--runs auto` columns, "s26" is the permuted Brunner–Munzel test stopping at the first
//! look where every comparison is decided (session 26), "new" the same test with the stop rule
//! `ccbench run` now uses ([`look_stops`]: not at a look whose level is only approximate,
//! except the last).
//!
//! 1. Equal medians, fixed runs: one arm steady (CV 1 %), the other `R`× as spread, for
//!    `R` = 1, 3, 10, 20; normal (which a rank test cannot tell from log-normal) and
//!    heavy-tailed (log-t, 3 degrees of freedom) scores; 4 to 20 runs. A false positive is any "better" verdict (`--min-effect 0`).
//! 2. The same with `--runs auto` (at most 20 runs, the Lan–DeMets design).
//! 3. The power table: 2 algorithms 10 / 20 / 30 % apart and 3 with the best 10 / 20 / 30 %
//!    ahead, CV 8 %, `--runs auto` and fixed 20 runs, `--min-effect` 2 %.
//! 4. `--min-effect 2 %` judged by the estimate (old) and by the interval (new): a true 1 %
//!    difference with CV 3 % called a win.

use ccbench_stats::sequential::{looks, Look};
use ccbench_stats::{best_against_rest_using, look_stops, BetterIs, Comparison, Criteria, Outcome, TestMethod};
use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;
use rand_distr::{Distribution, StandardNormal, StudentT};

const ALPHA: f64 = 0.05;
const MAX_RUNS: usize = 20;
const METHODS: [(TestMethod, &str); 2] = [(TestMethod::MannWhitneyMoses, "old"), (TestMethod::BrunnerMunzelPermutation, "new")];
/// The sequential variants: (test, whether a look whose level is approximate may not stop).
const SEQUENTIAL: [(TestMethod, bool); 3] =
    [(TestMethod::MannWhitneyMoses, false), (TestMethod::BrunnerMunzelPermutation, false), (TestMethod::BrunnerMunzelPermutation, true)];

#[derive(Clone, Copy)]
enum Shape {
    Normal,
    LogT3,
}

impl Shape {
    /// Added to section 1's seeds, so that the shapes' rows are independent samples.
    fn seed_offset(self) -> u64 {
        match self {
            Shape::Normal => 0,
            Shape::LogT3 => 100_000,
        }
    }

    fn name(self) -> &'static str {
        match self {
            Shape::Normal => "normal",
            Shape::LogT3 => "log-t(3)",
        }
    }

    /// A score with median `median` and spread `cv` (the standard deviation over the median
    /// for the normal; the log's standard deviation for log-t). Log-normal scores
    /// `median · exp(cv · z)` order exactly as the normal ones `median · (1 + cv · z)` do, so
    /// every rank test treats them alike: the normal rows stand for both.
    fn draw(self, rng: &mut ChaCha8Rng, median: f64, cv: f64) -> f64 {
        match self {
            Shape::Normal => {
                let z: f64 = StandardNormal.sample(rng);
                median * (1.0 + cv * z)
            }
            Shape::LogT3 => {
                // Scaled to unit standard deviation (t(3) has variance 3).
                let t: f64 = StudentT::new(3.0).unwrap().sample(rng);
                median * (cv * t / 3f64.sqrt()).exp()
            }
        }
    }
}

/// The verdicts of the design's looks in order, stopping at the first look where every
/// comparison is decided (or the last), as `ccbench run` does: with `gate`, by its rule
/// ([`look_stops`]), without it at any look where all are decided (the rule before).
fn run_design(test: TestMethod, gate: bool, design: &[Look], arms: &[Vec<f64>], min_effect: f64) -> (Vec<Comparison>, usize) {
    let names = ["a", "b", "c", "d", "e"];
    let mut last = (Vec::new(), 0);
    for (i, look) in design.iter().enumerate() {
        let named: Vec<(&str, &[f64])> = arms.iter().enumerate().map(|(i, xs)| (names[i], &xs[..look.runs])).collect();
        let cs = best_against_rest_using(test, &named, BetterIs::Higher, Criteria { alpha: look.alpha, min_effect }, 2);
        let stops = if gate { look_stops(&cs, i + 1 == design.len()) } else { !cs.is_empty() && cs.iter().all(|c| c.outcome.decided()) };
        last = (cs, look.runs);
        if stops {
            break;
        }
    }
    last
}

/// A rate with its binomial Monte Carlo standard error.
fn rate(hits: usize, trials: usize) -> String {
    let p = hits as f64 / trials as f64;
    format!("{:.1}±{:.1}", 100.0 * p, 100.0 * (p * (1.0 - p) / trials as f64).sqrt())
}

fn main() {
    let trials: usize = std::env::args().nth(1).and_then(|a| a.parse().ok()).unwrap_or(2000);
    let sections: Vec<usize> = std::env::args().nth(2).map_or(vec![1, 2, 3, 4], |a| a.split(',').filter_map(|x| x.trim().parse().ok()).collect());
    let run = |n: usize| sections.contains(&n);
    let started = std::time::Instant::now();
    println!("Spread and power by simulation: {trials} trials per cell, α = {ALPHA}; rates in % ± one Monte Carlo standard error.");
    println!("old = exact Mann–Whitney + Moses interval; new = permuted Brunner–Munzel + its inverted interval.");
    println!("--runs auto: s26 = new test, stopping at any look where all is decided; new = new test, not stopping at a look whose level is approximate (but the last).\n");
    if run(1) {
        println!("1. Equal medians, fixed runs: false \"better\" (--min-effect 0). Arm a CV 1 %, arm b R× that.");
        println!("   In brackets: the share of new's false positives whose verdict said \"the level is approximate\".");
        println!("   Normal scores 1 + cv·z and log-normal ones exp(cv·z) from the same z rank identically, so every rank test gives the");
        println!("   same verdicts on both (a rank test sees only the order): the normal rows stand for log-normal too.");
        let sizes = [4usize, 5, 7, 10, 20];
        print!("{:<11} {:>4}", "scores", "R");
        for n in sizes {
            print!("  {:>25}", format!("{n} runs: old / new"));
        }
        println!();
        for shape in [Shape::Normal, Shape::LogT3] {
            for ratio in [1.0, 3.0, 10.0, 20.0] {
                print!("{:<11} {:>3}×", shape.name(), ratio);
                for (si, &n) in sizes.iter().enumerate() {
                    let mut fp = [0usize; 2];
                    let mut noted = 0;
                    for (mi, (test, _)) in METHODS.iter().enumerate() {
                        // The same data for both methods: the same seed. Each shape its own
                        // seeds: a log-t draw consumes the normal stream too, so shared seeds
                        // made the two shapes' rows move together.
                        let mut rng = ChaCha8Rng::seed_from_u64(1000 + shape.seed_offset() + si as u64 * 10 + (ratio as u64));
                        for _ in 0..trials {
                            let a: Vec<f64> = (0..n).map(|_| shape.draw(&mut rng, 1.0, 0.01)).collect();
                            let b: Vec<f64> = (0..n).map(|_| shape.draw(&mut rng, 1.0, 0.01 * ratio)).collect();
                            let cs = best_against_rest_using(*test, &[("a", &a), ("b", &b)], BetterIs::Higher, Criteria::at(ALPHA), 2);
                            if cs[0].outcome == Outcome::Better {
                                fp[mi] += 1;
                                noted += usize::from(mi == 1 && cs[0].sentence("goodput").contains("the level is approximate"));
                            }
                        }
                    }
                    let note = if fp[1] > 0 { format!(" [{:.0}]", 100.0 * noted as f64 / fp[1] as f64) } else { String::new() };
                    print!("  {:>25}", format!("{} / {}{note}", rate(fp[0], trials), rate(fp[1], trials)));
                }
                println!();
            }
        }
    }

    if run(2) {
        println!("\n2. Equal medians, --runs auto (at most {MAX_RUNS} runs): false \"better\" and mean runs, --min-effect 0 and 2 %.");
        println!("{:<11} {:>4}  {:>32}  {:>32}", "scores", "R", "min-effect 0: old / s26 / new", "min-effect 2 %: old / s26 / new");
        let design = looks(ALPHA, MAX_RUNS, 2);
        for shape in [Shape::Normal, Shape::LogT3] {
            for ratio in [1.0, 3.0, 10.0, 20.0] {
                print!("{:<11} {:>3}×", shape.name(), ratio);
                for min_effect in [0.0, 0.02] {
                    let mut cells = Vec::new();
                    for (test, gate) in SEQUENTIAL {
                        let mut rng = ChaCha8Rng::seed_from_u64(2000 + ratio as u64);
                        let mut fp = 0;
                        for _ in 0..trials {
                            let a: Vec<f64> = (0..MAX_RUNS).map(|_| shape.draw(&mut rng, 1.0, 0.01)).collect();
                            let b: Vec<f64> = (0..MAX_RUNS).map(|_| shape.draw(&mut rng, 1.0, 0.01 * ratio)).collect();
                            let (cs, _) = run_design(test, gate, &design, &[a, b], min_effect);
                            fp += usize::from(cs.iter().any(|c| c.outcome == Outcome::Better));
                        }
                        cells.push(rate(fp, trials));
                    }
                    print!("  {:>32}", cells.join(" / "));
                }
                println!();
            }
        }
    }

    if run(3) {
        println!("\n3. Power (CV 8 %, normal, --min-effect 2 %): the best arm named better than every other; mean runs for --runs auto.");
        println!("{:<34} {:>48} {:>24}", "scenario", "--runs auto: old / s26 / new (mean runs)", "fixed 20 runs: old / new");
        let scenarios: [(&str, &[f64]); 8] = [
            ("2 algorithms, no difference", &[1.0, 1.0]),
            ("2 algorithms, 10 % apart", &[1.1, 1.0]),
            ("2 algorithms, 20 % apart", &[1.2, 1.0]),
            ("2 algorithms, 30 % apart", &[1.3, 1.0]),
            ("3 algorithms, no difference", &[1.0, 1.0, 1.0]),
            ("3 algorithms, best 10 % ahead", &[1.1, 1.0, 1.0]),
            ("3 algorithms, best 20 % ahead", &[1.2, 1.0, 1.0]),
            ("3 algorithms, best 30 % ahead", &[1.3, 1.0, 1.0]),
        ];
        for (si, (name, means)) in scenarios.iter().enumerate() {
            let k = means.len();
            let null = means.iter().all(|m| *m == means[0]);
            let mut cols = Vec::new();
            for design in [looks(ALPHA, MAX_RUNS, k), vec![Look { runs: MAX_RUNS, alpha: ALPHA, spent: ALPHA }]] {
                let mut cells = Vec::new();
                let variants: &[(TestMethod, bool)] =
                    if design.len() > 1 { &SEQUENTIAL } else { &[(TestMethod::MannWhitneyMoses, false), (TestMethod::BrunnerMunzelPermutation, true)] };
                for &(test, gate) in variants {
                    let mut rng = ChaCha8Rng::seed_from_u64(3000 + si as u64);
                    let (mut hits, mut runs) = (0, 0);
                    for _ in 0..trials {
                        let arms: Vec<Vec<f64>> = means.iter().map(|&mu| (0..MAX_RUNS).map(|_| Shape::Normal.draw(&mut rng, mu, 0.08)).collect()).collect();
                        let (cs, n) = run_design(test, gate, &design, &arms, 0.02);
                        runs += n;
                        hits += usize::from(if null {
                            cs.iter().any(|c| c.outcome == Outcome::Better)
                        } else {
                            cs.iter().all(|c| c.outcome == Outcome::Better && c.better.as_deref() == Some("a"))
                        });
                    }
                    cells.push(if design.len() > 1 { format!("{} ({:.1})", rate(hits, trials), runs as f64 / trials as f64) } else { rate(hits, trials) });
                }
                cols.push(cells.join(" / "));
            }
            println!("{:<34} {:>48} {:>24}{}", name, cols[0], cols[1], if null { "  (false positives)" } else { "" });
        }
    }

    if run(4) {
        println!("\n4. A true 1 % difference, CV 3 % (normal), --min-effect 2 %: called a win. old = the estimate beyond 2 % (the rule before), new = the whole interval beyond it (both with the new test).");
        for (label, design) in [
            ("5 runs".to_string(), vec![Look { runs: 5, alpha: ALPHA, spent: ALPHA }]),
            ("10 runs".to_string(), vec![Look { runs: 10, alpha: ALPHA, spent: ALPHA }]),
            ("20 runs".to_string(), vec![Look { runs: 20, alpha: ALPHA, spent: ALPHA }]),
            ("--runs auto".to_string(), looks(ALPHA, MAX_RUNS, 2)),
        ] {
            let mut rng = ChaCha8Rng::seed_from_u64(4000);
            let (mut old_win, mut new_win) = (0, 0);
            for _ in 0..trials {
                let a: Vec<f64> = (0..MAX_RUNS).map(|_| Shape::Normal.draw(&mut rng, 1.01, 0.03)).collect();
                let b: Vec<f64> = (0..MAX_RUNS).map(|_| Shape::Normal.draw(&mut rng, 1.0, 0.03)).collect();
                let (cs, _) = run_design(TestMethod::BrunnerMunzelPermutation, true, &design, &[a.clone(), b.clone()], 0.02);
                new_win += usize::from(cs[0].outcome == Outcome::Better);
                // The old rule: significant, and the estimate (not the interval) beyond the band;
                // with it a "significant but below" stopped `--runs auto`.
                let old_rule = |c: &Comparison| {
                    let ci = c.ratio_ci.unwrap();
                    let sig = c.p_adjusted.unwrap() < c.alpha && ci.excludes_one();
                    (sig, sig && !(ci.ratio < 1.02 && ci.ratio > 1.0 / 1.02))
                };
                for look in &design {
                    let cs = best_against_rest_using(
                        TestMethod::BrunnerMunzelPermutation,
                        &[("a", &a[..look.runs]), ("b", &b[..look.runs])],
                        BetterIs::Higher,
                        Criteria { alpha: look.alpha, min_effect: 0.02 },
                        2,
                    );
                    let (sig, win) = old_rule(&cs[0]);
                    if win {
                        old_win += 1;
                    }
                    if sig || cs[0].outcome == Outcome::Equivalent {
                        break;
                    }
                }
            }
            println!("  {label:<12} old {:>10} %   new {:>10} %", rate(old_win, trials), rate(new_win, trials));
        }
    }
    println!("\n({:.0} s)", started.elapsed().as_secs_f64());
}
