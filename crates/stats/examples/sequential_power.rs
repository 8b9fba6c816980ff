//! The `--runs auto` design measured by simulation: false positives under the null, power and
//! mean runs under true differences, for the design `ccbench run` uses and, side by side, the
//! one it replaced (60 % of α at the first look, then halving) and a fixed 20 runs.
//!
//! Run: `cargo run --release -p ccbench-stats --example sequential_power [TRIALS]`
//! (default 4000 per scenario; the figures in the manual used 20000).
//!
//! Each trial draws every arm's 20 runs up front (normal, run-to-run CV 8 %), then takes the
//! design's looks in order with the crate's own `best_against_rest`, as `ccbench run` does, and
//! stops at the first look where every comparison is decided. A false positive is any "better"
//! verdict when all arms are equal; power is the share of trials that name the truly best arm
//! better than every other.

use ccbench_stats::sequential::{looks, Look};
use ccbench_stats::{best_against_rest, BetterIs, Criteria, Outcome};
use rand::SeedableRng;
use rand_distr::{Distribution, Normal};

const MAX_RUNS: usize = 20;
const ALPHA: f64 = 0.05;
const CV: f64 = 0.08;

struct Scenario {
    name: &'static str,
    /// Each arm's true mean; arm 0 is the best when they differ.
    means: &'static [f64],
}

#[derive(Default)]
struct Tally {
    trials: usize,
    false_positive: usize,
    correct: usize,
    wrong_winner: usize,
    below_or_equivalent: usize,
    runs: usize,
}

/// The design `ccbench` used before issue 16: 60 % of α at the first look (the fewest runs that
/// can decide at that share for two arms), then half of what is left at each look.
fn previous_design(alpha: f64, max_runs: usize) -> Vec<Look> {
    let first = (1..).find(|&n| ccbench_stats::sequential::min_p(n) < alpha * 0.6).unwrap();
    let count = max_runs - first + 1;
    let mut left = alpha;
    (0..count)
        .map(|j| {
            let share = if j + 1 == count {
                left
            } else if j == 0 {
                alpha * 0.6
            } else {
                left / 2.0
            };
            left -= share;
            Look { runs: first + j, alpha: share, spent: alpha - left }
        })
        .collect()
}

fn simulate(design: &[Look], s: &Scenario, criteria_min_effect: f64, trials: usize, seed: u64) -> Tally {
    let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(seed);
    let names = ["a", "b", "c", "d", "e"];
    let truth_differs = s.means.iter().any(|m| *m != s.means[0]);
    let mut t = Tally { trials, ..Tally::default() };
    for _ in 0..trials {
        let arms: Vec<Vec<f64>> = s.means.iter().map(|&mu| (0..MAX_RUNS).map(|_| Normal::new(mu, mu * CV).unwrap().sample(&mut rng)).collect()).collect();
        let mut runs = MAX_RUNS;
        for look in design {
            let named: Vec<(&str, &[f64])> = arms.iter().enumerate().map(|(i, xs)| (names[i], &xs[..look.runs])).collect();
            let cs = best_against_rest(&named, BetterIs::Higher, Criteria { alpha: look.alpha, min_effect: criteria_min_effect }, 2);
            let decided = !cs.is_empty() && cs.iter().all(|c| c.outcome.decided());
            let last = look.runs == MAX_RUNS;
            if decided || last {
                runs = look.runs;
                let better: Vec<&str> = cs.iter().filter_map(|c| c.better.as_deref()).collect();
                if !truth_differs {
                    t.false_positive += usize::from(!better.is_empty());
                } else if decided && cs.iter().all(|c| c.outcome == Outcome::Better && c.better.as_deref() == Some("a")) {
                    t.correct += 1;
                } else if better.iter().any(|b| *b != "a") {
                    t.wrong_winner += 1;
                }
                t.below_or_equivalent += usize::from(cs.iter().any(|c| matches!(c.outcome, Outcome::BelowMinEffect | Outcome::Equivalent)));
                break;
            }
        }
        t.runs += runs;
    }
    t
}

fn main() {
    let trials: usize = std::env::args().nth(1).and_then(|a| a.parse().ok()).unwrap_or(4000);
    let scenarios = [
        Scenario { name: "2 algorithms, no difference", means: &[1.0, 1.0] },
        Scenario { name: "3 algorithms, no difference", means: &[1.0, 1.0, 1.0] },
        Scenario { name: "2 algorithms, 10 % apart", means: &[1.1, 1.0] },
        Scenario { name: "3 algorithms, best 20 % ahead", means: &[1.2, 1.0, 1.0] },
        Scenario { name: "2 algorithms, 30 % apart", means: &[1.3, 1.0] },
    ];
    println!("--runs auto by simulation: {trials} trials per row, run-to-run CV {:.0} %, α = {ALPHA}, at most {MAX_RUNS} runs per algorithm", CV * 100.0);
    println!("(false positives: any \"better\" when all arms are equal; power: the best arm named better than every other)\n");
    println!("{:<32} {:<26} {:>9} {:>9} {:>10} {:>10}", "scenario", "design", "false +", "power", "mean runs", "wrong");
    for s in &scenarios {
        let k = s.means.len();
        let mut designs: Vec<(String, Vec<Look>, f64)> = vec![
            ("Lan–DeMets Pocock (now)".into(), looks(ALPHA, MAX_RUNS, k), 0.0),
            ("  same, --min-effect 2 %".into(), looks(ALPHA, MAX_RUNS, k), 0.02),
            ("fixed 20 runs".into(), vec![Look { runs: MAX_RUNS, alpha: ALPHA, spent: ALPHA }], 0.0),
        ];
        if k == 2 {
            designs.insert(2, ("60 %-then-halving (before)".into(), previous_design(ALPHA, MAX_RUNS), 0.0));
        }
        for (i, (name, design, min_effect)) in designs.iter().enumerate() {
            let t = simulate(design, s, *min_effect, trials, 1000 + i as u64);
            let pct = |x: usize| format!("{:.1} %", 100.0 * x as f64 / t.trials as f64);
            let differs = s.means.iter().any(|m| *m != s.means[0]);
            println!(
                "{:<32} {:<26} {:>9} {:>9} {:>10.1} {:>10}",
                if i == 0 { s.name } else { "" },
                name,
                if differs { "–".to_string() } else { pct(t.false_positive) },
                if differs { pct(t.correct) } else { "–".to_string() },
                t.runs as f64 / t.trials as f64,
                if differs { pct(t.wrong_winner) } else { "–".to_string() },
            );
        }
    }
    let design: Vec<String> = looks(ALPHA, MAX_RUNS, 2).iter().map(|l| format!("{} runs at α {}", l.runs, ccbench_stats::fmt_alpha(l.alpha))).collect();
    println!("\nThe looks for 2 algorithms: {}", design.join(", "));
    let design: Vec<String> = looks(ALPHA, MAX_RUNS, 3).iter().map(|l| format!("{} runs at α {}", l.runs, ccbench_stats::fmt_alpha(l.alpha))).collect();
    println!("The looks for 3 algorithms: {}", design.join(", "));
    println!("\nTargets (issue 16): false positives ≤ 5 % for 2 and 3 algorithms; 10 % apart: power ≥ 70 % with mean runs ≤ 16; 3 algorithms 20 % apart: power ≥ 90 %.");
}
