use crate::config::Policer;
use crate::time::Instant;

const NS_PER_SEC: u128 = 1_000_000_000;

/// Runtime state of a [`Policer`].
///
/// Tokens are kept in units of 1e-9 bit, so that `rate_bps * elapsed_ns`
/// is an exact integer refill: no rounding, hence no long-run drift.
#[derive(Clone, Debug)]
pub(crate) struct TokenBucket {
    rate: u128,
    cap: u128,
    tokens: u128,
    last: Instant,
}

impl TokenBucket {
    pub(crate) fn new(p: Policer) -> Self {
        let cap = u128::from(p.burst_bytes) * 8 * NS_PER_SEC;
        TokenBucket { rate: u128::from(p.rate_bps), cap, tokens: cap, last: Instant::EPOCH }
    }

    /// Refills up to `now` and takes `len` bytes if they are all there. A
    /// rejected packet takes nothing, so a large packet cannot starve the
    /// bucket for the small ones behind it.
    pub(crate) fn admit(&mut self, now: Instant, len: u32) -> bool {
        // Saturating: an earlier `now` refills nothing.
        let dt = u128::from((now - self.last).as_nanos());
        self.last = self.last.max(now);
        self.tokens = self.tokens.saturating_add(self.rate * dt).min(self.cap);
        let cost = u128::from(len) * 8 * NS_PER_SEC;
        if self.tokens >= cost {
            self.tokens -= cost;
            true
        } else {
            false
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn refill_is_exact_and_capped() {
        // 8 kbit/s = 1 byte per ms.
        let t = Instant::from_nanos;
        let mut b = TokenBucket::new(Policer { rate_bps: 8_000, burst_bytes: 10 });
        assert!(b.admit(t(0), 10));
        assert!(!b.admit(t(0), 1));
        // 3.999999 ms: not yet 4 bytes.
        assert!(!b.admit(t(3_999_999), 4));
        assert!(b.admit(t(4_000_000), 4));
        // A long idle period refills only up to the burst.
        assert!(!b.admit(t(1_000_000_000), 11));
        assert!(b.admit(t(1_000_000_000), 10));
        assert!(!b.admit(t(1_000_000_000), 1));
    }
}
