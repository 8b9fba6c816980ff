//! One algorithm's `--runs auto --expect` by simulation: how often a median on the threshold
//! gets a wrong pass or fail, and how often and how soon a median beside it is decided, for the
//! design `ccbench run` uses (exact sign-test boundaries) and, side by side, the union-bound
//! design it replaced (each look judged at its increment of the same spending function).
//!
//! Run: `cargo run --release -p ccbench-stats --example expectation_power [TRIALS]`
//! (default 20000 per row). The exact figures for normal runs come from
//! `scripts/expectation_sequential_exact.py` (scipy); these should agree with them within the
//! simulation's standard error, and for the skewed (log-normal) runs the wrong-verdict rate at
//! the threshold must be the same, as the sign test does not depend on the distribution.
//!
//! Each trial draws its runs up front, then takes the design's looks in order with the crate's
//! own `median_bounds` and `judge`, as `ccbench run` does, and stops at the first look that
//! passes or fails the expectation `metric ≥ T`.

use ccbench_stats::expectation::{judge, median_bounds, Judgement, Side};
use ccbench_stats::sequential::{expectation_looks, spent, Look, LOOK_EVERY};
use rand::SeedableRng;
use rand_distr::{Distribution, LogNormal, Normal};

const ALPHA: f64 = 0.05;
const CV: f64 = 0.08;

/// The design before: the same look times, each look judged at the spending function's
/// increment since the last one taken (a union bound over the looks).
fn union_bound_design(alpha: f64, max_runs: usize) -> Vec<Look> {
    let at = |n: usize| spent(alpha, n as f64 / max_runs as f64);
    let first = (1..=max_runs).find(|&n| 0.5f64.powi(n as i32) <= at(n)).expect("max_runs too small");
    let mut times: Vec<usize> = (first..max_runs).step_by(LOOK_EVERY).collect();
    times.push(max_runs);
    let mut out = Vec::new();
    let mut so_far = 0.0;
    for n in times {
        let increment = at(n) - so_far;
        if 0.5f64.powi(n as i32) > increment && n != max_runs {
            continue;
        }
        so_far = at(n);
        out.push(Look { runs: n, alpha: increment, spent: so_far });
    }
    out
}

#[derive(Default)]
struct Tally {
    pass: usize,
    fail: usize,
    runs: usize,
}

fn simulate(design: &[Look], max_runs: usize, draw: &dyn Fn(&mut rand_chacha::ChaCha8Rng) -> f64, trials: usize, seed: u64) -> Tally {
    let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(seed);
    let mut t = Tally::default();
    for _ in 0..trials {
        let xs: Vec<f64> = (0..max_runs).map(|_| draw(&mut rng)).collect();
        let mut stopped = max_runs;
        for l in design {
            let Some(b) = median_bounds(&xs[..l.runs], l.alpha) else { continue };
            match judge(&b, Side::AtLeast { strict: false }, 1.0) {
                Judgement::Pass => t.pass += 1,
                Judgement::Fail => t.fail += 1,
                Judgement::Undecided => continue,
            }
            stopped = l.runs;
            break;
        }
        t.runs += stopped;
    }
    t
}

fn main() {
    let trials: usize = std::env::args().nth(1).and_then(|a| a.parse().ok()).unwrap_or(20000);
    println!("--runs auto --expect 'metric >= T' with one algorithm, by simulation: {trials} trials per row, α = {ALPHA}");
    println!("runs normal (CV {:.0} %) or log-normal (σ {CV} in log) around the true median; at 1.00 pass and fail are wrong verdicts\n", CV * 100.0);
    println!("{:<10} {:<12} {:>6} {:<28} {:>8} {:>8} {:>10}", "max runs", "runs", "median", "design", "pass", "fail", "mean runs");
    for max_runs in [10usize, 20] {
        let designs = [("exact boundaries (now)", expectation_looks(ALPHA, max_runs)), ("union bound (before)", union_bound_design(ALPHA, max_runs))];
        for (dist, ratios) in [("normal", &[0.90, 0.95, 1.00, 1.05, 1.10][..]), ("log-normal", &[1.00, 1.10][..])] {
            for &ratio in ratios {
                let draw: Box<dyn Fn(&mut rand_chacha::ChaCha8Rng) -> f64> = if dist == "normal" {
                    let d = Normal::new(ratio, ratio * CV).unwrap();
                    Box::new(move |r| d.sample(r))
                } else {
                    let d = LogNormal::new(f64::ln(ratio), CV).unwrap();
                    Box::new(move |r| d.sample(r))
                };
                for (i, (name, design)) in designs.iter().enumerate() {
                    let t = simulate(design, max_runs, &*draw, trials, 7 + i as u64);
                    let pct = |x: usize| format!("{:.2} %", 100.0 * x as f64 / trials as f64);
                    println!(
                        "{:<10} {:<12} {:>6.2} {:<28} {:>8} {:>8} {:>10.2}",
                        max_runs,
                        dist,
                        ratio,
                        name,
                        pct(t.pass),
                        pct(t.fail),
                        t.runs as f64 / trials as f64
                    );
                }
            }
        }
        for (name, design) in &designs {
            let looks: Vec<String> = design.iter().map(|l| format!("{} at {}", l.runs, ccbench_stats::fmt_alpha(l.alpha))).collect();
            println!("  looks, {name}: {}", looks.join(", "));
        }
        println!();
    }
    println!("(binomial standard error at 20000 trials: 0.15 points at 5 %, 0.35 at 50 %)");
}
