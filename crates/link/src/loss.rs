use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

use crate::config::LossModel;

/// Runtime state of a [`LossModel`]: the seeded RNG plus the Markov state.
#[derive(Clone, Debug)]
pub(crate) struct LossProcess {
    model: LossModel,
    rng: ChaCha8Rng,
    in_bad: bool,
}

/// `x < p` with `x` uniform in [0, 1) gives exactly probability `p`, is
/// never true for p = 0, always true for p = 1, and never panics on
/// out-of-range or NaN `p` (unlike `gen_bool`), so an unvalidated config
/// degrades to clamping rather than aborting.
fn chance(rng: &mut ChaCha8Rng, p: f64) -> bool {
    rng.gen::<f64>() < p
}

impl LossProcess {
    pub(crate) fn new(model: LossModel, seed: u64) -> Self {
        LossProcess { model, rng: ChaCha8Rng::seed_from_u64(seed), in_bad: false }
    }

    /// Switches to `model` for the following packets, keeping the RNG
    /// stream. The Markov state only carries over between two
    /// Gilbert–Elliott models; otherwise the chain restarts in good.
    pub(crate) fn set_model(&mut self, model: LossModel) {
        if !matches!((&self.model, &model), (LossModel::GilbertElliott { .. }, LossModel::GilbertElliott { .. })) {
            self.in_bad = false;
        }
        self.model = model;
    }

    /// Decides the fate of the next packet; `true` means it is lost.
    pub(crate) fn lose_next(&mut self) -> bool {
        match self.model {
            LossModel::None => false,
            LossModel::Bernoulli { p } => chance(&mut self.rng, p),
            LossModel::GilbertElliott { p_good_to_bad, p_bad_to_good, loss_in_good, loss_in_bad } => {
                let flip = if self.in_bad { p_bad_to_good } else { p_good_to_bad };
                if chance(&mut self.rng, flip) {
                    self.in_bad = !self.in_bad;
                }
                let p = if self.in_bad { loss_in_bad } else { loss_in_good };
                chance(&mut self.rng, p)
            }
        }
    }

    #[cfg(test)]
    pub(crate) fn in_bad_state(&self) -> bool {
        self.in_bad
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const N: u64 = 1_000_000;

    #[test]
    fn bernoulli_ratio_within_binomial_bound() {
        for (i, p) in [0.001, 0.01, 0.1, 0.3].into_iter().enumerate() {
            let mut lp = LossProcess::new(LossModel::Bernoulli { p }, 1000 + i as u64);
            let lost = (0..N).filter(|_| lp.lose_next()).count() as f64;
            let n = N as f64;
            let sigma = (n * p * (1.0 - p)).sqrt();
            assert!((lost - n * p).abs() <= 4.0 * sigma, "p={p}: lost {lost}, expected {} ± {}", n * p, 4.0 * sigma);
        }
    }

    #[test]
    fn bernoulli_extremes() {
        let mut zero = LossProcess::new(LossModel::Bernoulli { p: 0.0 }, 7);
        assert!((0..100_000).all(|_| !zero.lose_next()));
        let mut one = LossProcess::new(LossModel::Bernoulli { p: 1.0 }, 7);
        assert!((0..100_000).all(|_| one.lose_next()));
        let mut none = LossProcess::new(LossModel::None, 7);
        assert!((0..1000).all(|_| !none.lose_next()));
    }

    #[test]
    fn seed_determines_pattern() {
        let pattern = |seed| {
            let mut lp = LossProcess::new(LossModel::Bernoulli { p: 0.1 }, seed);
            (0..10_000).map(|_| lp.lose_next()).collect::<Vec<_>>()
        };
        assert_eq!(pattern(42), pattern(42));
        assert_ne!(pattern(42), pattern(43));
    }

    /// Checks the Gilbert–Elliott chain against its closed-form statistics.
    /// Samples are autocorrelated, so the bounds use the variance of a
    /// two-state Markov chain's time average rather than the i.i.d. one.
    fn check_ge(p: f64, r: f64, lg: f64, lb: f64, seed: u64) {
        let model = LossModel::GilbertElliott { p_good_to_bad: p, p_bad_to_good: r, loss_in_good: lg, loss_in_bad: lb };
        let mut lp = LossProcess::new(model, seed);
        let mut bad = 0u64;
        let mut lost = 0u64;
        let mut bursts = 0u64;
        let mut burst_total = 0u64;
        let mut run = 0u64;
        for _ in 0..N {
            if lp.lose_next() {
                lost += 1;
            }
            if lp.in_bad_state() {
                bad += 1;
                run += 1;
            } else if run > 0 {
                bursts += 1;
                burst_total += run;
                run = 0;
            }
        }
        let n = N as f64;
        let pi_bad = p / (p + r);
        // Lag-1 autocorrelation of the state indicator; the time average's
        // variance is inflated by (1 + lambda) / (1 - lambda).
        let lambda = 1.0 - p - r;
        let var_frac = pi_bad * (1.0 - pi_bad) / n * (1.0 + lambda) / (1.0 - lambda);
        let frac = bad as f64 / n;
        assert!((frac - pi_bad).abs() <= 5.0 * var_frac.sqrt(), "bad fraction {frac} vs {pi_bad} (sigma {})", var_frac.sqrt());

        // Burst lengths are geometric with mean 1/r, variance (1-r)/r^2.
        let mean_burst = burst_total as f64 / bursts as f64;
        let sigma_burst = ((1.0 - r) / (r * r) / bursts as f64).sqrt();
        assert!((mean_burst - 1.0 / r).abs() <= 5.0 * sigma_burst, "mean burst {mean_burst} vs {} (sigma {sigma_burst})", 1.0 / r);

        // Loss = (martingale noise given the states) + (noise from the state
        // occupancy, scaled by how much the states differ).
        let expect = pi_bad * lb + (1.0 - pi_bad) * lg;
        let within = (pi_bad * lb * (1.0 - lb) + (1.0 - pi_bad) * lg * (1.0 - lg)) / n;
        let var_loss = within + (lb - lg).powi(2) * var_frac;
        let ratio = lost as f64 / n;
        assert!((ratio - expect).abs() <= 5.0 * var_loss.sqrt(), "loss {ratio} vs {expect} (sigma {})", var_loss.sqrt());
    }

    #[test]
    fn gilbert_elliott_statistics() {
        check_ge(0.01, 0.25, 0.001, 0.5, 1);
        check_ge(0.05, 0.5, 0.0, 1.0, 2);
        check_ge(0.2, 0.1, 0.02, 0.3, 3);
    }

    #[test]
    fn gilbert_elliott_transition_happens_before_loss() {
        // Entering the bad state on the very first packet must already
        // apply the bad-state loss probability to that packet.
        let model = LossModel::GilbertElliott { p_good_to_bad: 1.0, p_bad_to_good: 0.0, loss_in_good: 0.0, loss_in_bad: 1.0 };
        let mut lp = LossProcess::new(model, 9);
        assert!(lp.lose_next());
        assert!(lp.in_bad_state());
    }
}
