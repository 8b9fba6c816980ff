//! The size of each test on equal distributions: two arms of normal scores alike (CV 1 %),
//! `n` runs each, and how often each test and each verdict calls them different at α = 0.05.
//! An exact test must not exceed α; the exact Mann–Whitney size at 10 vs 10 runs is
//! 2 P(U ≤ 23) = 4.33 % (docs/statistics.md).
//!
//! Run: `cargo run --release -p ccbench-stats --example null_size [TRIALS] [RUNS] [SEED]`
//! (default 20000 trials, 10 runs, seed 7).

use ccbench_stats::{best_against_rest_using, brunner_munzel, mann_whitney_u, BetterIs, Criteria, Outcome, TestMethod};
use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;
use rand_distr::{Distribution, StandardNormal};

fn main() {
    let arg = |i: usize, default: u64| std::env::args().nth(i).and_then(|a| a.parse().ok()).unwrap_or(default);
    let (trials, n, seed) = (arg(1, 20_000) as usize, arg(2, 10) as usize, arg(3, 7));
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let draw = |rng: &mut ChaCha8Rng| -> Vec<f64> {
        (0..n)
            .map(|_| {
                let z: f64 = StandardNormal.sample(rng);
                1.0 + 0.01 * z
            })
            .collect()
    };
    let (mut mw, mut bm, mut bm_permutation, mut verdict_old, mut verdict_new) = (0, 0, 0, 0, 0);
    for _ in 0..trials {
        let (a, b) = (draw(&mut rng), draw(&mut rng));
        mw += usize::from(mann_whitney_u(&a, &b).expect("two arms").p_value < 0.05);
        let r = brunner_munzel(&a, &b).expect("two arms");
        bm += usize::from(r.p_value < 0.05);
        bm_permutation += usize::from(r.p_permutation < 0.05);
        for (test, count) in [(TestMethod::MannWhitneyMoses, &mut verdict_old), (TestMethod::BrunnerMunzelPermutation, &mut verdict_new)] {
            let cs = best_against_rest_using(test, &[("a", &a), ("b", &b)], BetterIs::Higher, Criteria::at(0.05), 2);
            *count += usize::from(cs[0].outcome == Outcome::Better);
        }
    }
    let pct = |x: usize| 100.0 * x as f64 / trials as f64;
    println!(
        "{n} vs {n} runs, {trials} trials (± {:.2} points at 5 %): Mann–Whitney p < 0.05 {:.2} %; Brunner–Munzel p < 0.05 {:.2} % (permutation p alone {:.2} %); \"better\" verdicts: old {:.2} %, new {:.2} %",
        100.0 * (0.05f64 * 0.95 / trials as f64).sqrt(),
        pct(mw),
        pct(bm),
        pct(bm_permutation),
        pct(verdict_old),
        pct(verdict_new)
    );
}
