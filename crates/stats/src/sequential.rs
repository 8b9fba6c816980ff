//! Runs until decided: a group-sequential design that looks at the data after each round and
//! stops as soon as the verdict is decided, while the overall false-positive rate stays at α.
//!
//! Each look `j` gets its own share `α_j` of α with `Σ α_j = α` (alpha spending). A look
//! rejects when its (Holm-adjusted) p is below `α_j`, so by the union bound the chance of any
//! false rejection over all looks is at most α, whatever the dependence between looks. The
//! shares are front-loaded: the first look, at the fewest runs that can reach significance,
//! gets 60 % of α, so a clear difference is decided as early as a fixed design could; the
//! rest is halved look by look and the last look takes what remains.

use serde::{Deserialize, Serialize};

use crate::mann_whitney::min_runs_for_significance;

/// Share of α spent at the first look.
const FIRST_LOOK_SHARE: f64 = 0.6;

/// One interim analysis: after `runs` runs per arm, decide at level `alpha`.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Look {
    pub runs: usize,
    pub alpha: f64,
}

/// The looks of a design with overall level `alpha`, from the first run count at which a
/// complete separation can be significant at the first look's share, up to `max_runs`.
/// Empty when `max_runs` is below that first run count.
pub fn looks(alpha: f64, max_runs: usize) -> Vec<Look> {
    let first = min_runs_for_significance(alpha * FIRST_LOOK_SHARE);
    if first > max_runs {
        return Vec::new();
    }
    let count = max_runs - first + 1;
    let mut out = Vec::with_capacity(count);
    let mut left = alpha;
    for j in 0..count {
        let share = if j + 1 == count {
            left
        } else if j == 0 {
            alpha * FIRST_LOOK_SHARE
        } else {
            left / 2.0
        };
        left -= share;
        out.push(Look { runs: first + j, alpha: share });
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::mann_whitney_u;
    use rand::{Rng, SeedableRng};

    #[test]
    fn shares_add_up_to_alpha() {
        let ls = looks(0.05, 10);
        assert_eq!(ls.first().unwrap().runs, 4, "2/70 = 0.029 < 0.03: four runs can decide at the first look");
        assert_eq!(ls.last().unwrap().runs, 10);
        assert!((ls.iter().map(|l| l.alpha).sum::<f64>() - 0.05).abs() < 1e-15);
        assert!((ls[0].alpha - 0.03).abs() < 1e-15 && (ls[1].alpha - 0.01).abs() < 1e-15);
        assert_eq!(looks(0.05, 4), vec![Look { runs: 4, alpha: 0.05 }]);
        assert!(looks(0.05, 3).is_empty());
    }

    /// Under the null (both arms from one distribution), the chance that any look rejects is
    /// at most α; looking at every round at the full α would not be.
    #[test]
    fn overall_error_stays_at_alpha() {
        let alpha = 0.05;
        let ls = looks(alpha, 12);
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(23);
        let trials = 10_000;
        let (mut spent, mut naive) = (0, 0);
        for _ in 0..trials {
            let a: Vec<f64> = (0..12).map(|_| rng.gen()).collect();
            let b: Vec<f64> = (0..12).map(|_| rng.gen()).collect();
            let ps: Vec<f64> = ls.iter().map(|l| mann_whitney_u(&a[..l.runs], &b[..l.runs]).unwrap().p_value).collect();
            spent += usize::from(ls.iter().zip(&ps).any(|(l, p)| *p < l.alpha));
            naive += usize::from(ps.iter().any(|p| *p < alpha));
        }
        let (spent, naive) = (spent as f64 / trials as f64, naive as f64 / trials as f64);
        assert!(spent <= alpha, "alpha spending: {spent}");
        assert!(naive > 0.08, "testing every look at full alpha inflates the error: {naive}");
    }
}
