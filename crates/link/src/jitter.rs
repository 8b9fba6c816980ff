use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use rand_distr::StandardNormal;

use crate::config::Jitter;
use crate::time::Duration;

/// The loss model draws from stream 0 of the link's seed; jitter gets its
/// own stream so that enabling it leaves the loss pattern unchanged.
const JITTER_STREAM: u64 = 1;

#[derive(Clone, Debug)]
pub(crate) struct JitterProcess {
    model: Jitter,
    rng: ChaCha8Rng,
}

impl JitterProcess {
    pub(crate) fn new(model: Jitter, seed: u64) -> Self {
        let mut rng = ChaCha8Rng::seed_from_u64(seed);
        rng.set_stream(JITTER_STREAM);
        JitterProcess { model, rng }
    }

    pub(crate) fn sample(&mut self) -> Duration {
        match self.model {
            Jitter::None => Duration::ZERO,
            Jitter::Uniform { max_ns, .. } => Duration::from_nanos(self.rng.gen_range(0..=max_ns.as_nanos())),
            Jitter::Normal { sd_ns, .. } => {
                let x = self.rng.sample::<f64, _>(StandardNormal).abs() * sd_ns.as_nanos() as f64;
                // `as` saturates, so an absurd sd cannot wrap around.
                Duration::from_nanos(x.round() as u64)
            }
        }
    }
}
