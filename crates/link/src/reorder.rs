//! Reordering: which packets are held back, and by how much (see [`Reorder`]).

use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

use crate::config::{Rate, Reorder};
use crate::time::Duration;

/// The loss model draws from stream 0 of the link's seed, jitter from 1, PIE from 2, DualPI2
/// from 3: reordering from its own, so that turning it on leaves the others' draws unchanged.
const REORDER_STREAM: u64 = 4;

#[derive(Clone, Debug)]
pub(crate) struct ReorderProcess {
    model: Reorder,
    rng: ChaCha8Rng,
}

impl ReorderProcess {
    pub(crate) fn new(model: Reorder, seed: u64) -> Self {
        let mut rng = ChaCha8Rng::seed_from_u64(seed);
        rng.set_stream(REORDER_STREAM);
        ReorderProcess { model, rng }
    }

    /// How long the next packet (`len` bytes, served at `bps` bit/s: the rate in force, 0 for
    /// unlimited) is held back after its delay: zero for most, the displacement for a share
    /// `p`. One draw per packet while reordering is on, none while it is off.
    pub(crate) fn hold(&mut self, len: u32, bps: f64) -> Duration {
        let (p, by) = match self.model {
            Reorder::None => return Duration::ZERO,
            Reorder::Time { p, by_ns } => (p, by_ns),
            Reorder::Packets { p, packets } => {
                // `k` serialization times at the rate in force (rounded as `Rate` rounds one),
                // and 1 ns more: on a busy link the k-th packet after it is due at the same
                // instant, and the delay line breaks ties in server order, so without it only
                // k - 1 would overtake.
                let one = if bps >= 1.0 { Rate::BitsPerSec(bps.round() as u64).serialization_time(len).unwrap_or(Duration::ZERO) } else { Duration::ZERO };
                let by = if one.is_zero() { Duration::ZERO } else { Duration::from_nanos(one.as_nanos().saturating_mul(u64::from(packets)).saturating_add(1)) };
                (p, by)
            }
        };
        // `gen_bool` panics outside [0, 1]; an unvalidated configuration is clamped instead
        // (NaN never holds), as the loss model treats its probabilities.
        let p = if p.is_nan() { 0.0 } else { p.clamp(0.0, 1.0) };
        if self.rng.gen_bool(p) {
            by
        } else {
            Duration::ZERO
        }
    }
}
