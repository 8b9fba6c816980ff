use std::fmt;

use serde::{Deserialize, Serialize};

use crate::Nanos;

/// Bottleneck rate of the server.
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Rate {
    /// Zero serialization time: packets only see the propagation delay.
    #[default]
    Unlimited,
    BitsPerSec(u64),
}

impl Rate {
    /// Convenience constructor for megabits per second (10^6 bit/s).
    pub fn mbps(mbit: u64) -> Rate {
        Rate::BitsPerSec(mbit.saturating_mul(1_000_000))
    }

    /// Serialization time of a single `len`-byte packet on an otherwise idle
    /// server, rounded to the nearest nanosecond. `None` for a zero rate,
    /// which never finishes serializing anything.
    pub fn serialization_ns(&self, len: u32) -> Option<Nanos> {
        match *self {
            Rate::Unlimited => Some(0),
            Rate::BitsPerSec(0) => None,
            Rate::BitsPerSec(r) => {
                let r = u128::from(r);
                let ns = (u128::from(len) * 8 * 1_000_000_000 + r / 2) / r;
                Some(u64::try_from(ns).unwrap_or(Nanos::MAX))
            }
        }
    }
}

#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum LossModel {
    #[default]
    None,
    /// Each packet is lost independently with probability `p`.
    Bernoulli { p: f64 },
    /// Gilbert–Elliott: two-state Markov chain evaluated once per packet.
    ///
    /// For every packet the chain first takes one transition (good->bad with
    /// `p_good_to_bad`, bad->good with `p_bad_to_good`), and the packet is
    /// then lost with the loss probability of the state just entered. The
    /// chain starts in the good state. Stationary probability of the bad
    /// state is `p_good_to_bad / (p_good_to_bad + p_bad_to_good)` and the
    /// mean number of consecutive packets seen in the bad state is
    /// `1 / p_bad_to_good`.
    GilbertElliott {
        p_good_to_bad: f64,
        p_bad_to_good: f64,
        loss_in_good: f64,
        loss_in_bad: f64,
    },
}

/// Capacity of the drop-tail queue in front of the rate server. The packet
/// currently being serialized does not count against it.
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", content = "value", rename_all = "snake_case")]
pub enum Buffer {
    #[default]
    Unlimited,
    Bytes(u64),
    Packets(u64),
}

/// Configuration of one direction of a link. The default is a transparent
/// link: unlimited rate, no delay, no loss, unlimited buffer.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct DirectionConfig {
    pub rate: Rate,
    pub delay_ns: Nanos,
    pub loss: LossModel,
    pub buffer: Buffer,
}

#[derive(Clone, Debug, PartialEq)]
pub enum LinkConfigError {
    /// `Rate::BitsPerSec(0)`: nothing could ever leave the link.
    ZeroRate,
    /// A probability that is NaN or outside `[0, 1]`.
    InvalidProbability { field: &'static str, value: f64 },
}

impl fmt::Display for LinkConfigError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            LinkConfigError::ZeroRate => write!(f, "link rate must be greater than zero"),
            LinkConfigError::InvalidProbability { field, value } => {
                write!(f, "{field} must be a probability in [0, 1], got {value}")
            }
        }
    }
}

impl std::error::Error for LinkConfigError {}

fn check_prob(field: &'static str, value: f64) -> Result<(), LinkConfigError> {
    // `contains` is false for NaN, so NaN is rejected too.
    if (0.0..=1.0).contains(&value) {
        Ok(())
    } else {
        Err(LinkConfigError::InvalidProbability { field, value })
    }
}

impl DirectionConfig {
    pub fn validate(&self) -> Result<(), LinkConfigError> {
        if self.rate == Rate::BitsPerSec(0) {
            return Err(LinkConfigError::ZeroRate);
        }
        match self.loss {
            LossModel::None => {}
            LossModel::Bernoulli { p } => check_prob("bernoulli.p", p)?,
            LossModel::GilbertElliott {
                p_good_to_bad,
                p_bad_to_good,
                loss_in_good,
                loss_in_bad,
            } => {
                check_prob("gilbert_elliott.p_good_to_bad", p_good_to_bad)?;
                check_prob("gilbert_elliott.p_bad_to_good", p_bad_to_good)?;
                check_prob("gilbert_elliott.loss_in_good", loss_in_good)?;
                check_prob("gilbert_elliott.loss_in_bad", loss_in_bad)?;
            }
        }
        // Buffer::Bytes(0) / Packets(0) are meaningful (no queueing at all:
        // only a packet finding the server idle gets through), so they pass.
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn default_is_transparent() {
        let c = DirectionConfig::default();
        assert_eq!(c.rate, Rate::Unlimited);
        assert_eq!(c.delay_ns, 0);
        assert_eq!(c.loss, LossModel::None);
        assert_eq!(c.buffer, Buffer::Unlimited);
        assert!(c.validate().is_ok());
    }

    #[test]
    fn validate_rejects_bad_values() {
        let mut c = DirectionConfig {
            rate: Rate::BitsPerSec(0),
            ..Default::default()
        };
        assert_eq!(c.validate(), Err(LinkConfigError::ZeroRate));
        c.rate = Rate::mbps(10);
        for p in [-0.1, 1.1, f64::NAN, f64::INFINITY] {
            c.loss = LossModel::Bernoulli { p };
            assert!(
                matches!(c.validate(), Err(LinkConfigError::InvalidProbability { .. })),
                "p={p}"
            );
        }
        for p in [0.0, 0.5, 1.0] {
            c.loss = LossModel::Bernoulli { p };
            assert!(c.validate().is_ok());
        }
        let ge = |a, b, c2, d| LossModel::GilbertElliott {
            p_good_to_bad: a,
            p_bad_to_good: b,
            loss_in_good: c2,
            loss_in_bad: d,
        };
        c.loss = ge(0.1, 0.2, 0.0, 1.0);
        assert!(c.validate().is_ok());
        for bad in [
            ge(1.5, 0.2, 0.0, 1.0),
            ge(0.1, -0.2, 0.0, 1.0),
            ge(0.1, 0.2, f64::NAN, 1.0),
            ge(0.1, 0.2, 0.0, 2.0),
        ] {
            c.loss = bad;
            assert!(c.validate().is_err());
        }
        c.loss = LossModel::None;
        c.buffer = Buffer::Packets(0);
        assert!(c.validate().is_ok());
        let msg = LinkConfigError::InvalidProbability {
            field: "bernoulli.p",
            value: 2.0,
        }
        .to_string();
        assert!(msg.contains("bernoulli.p"));
    }

    #[test]
    fn serialization_ns_rounds() {
        assert_eq!(Rate::Unlimited.serialization_ns(1500), Some(0));
        assert_eq!(Rate::BitsPerSec(0).serialization_ns(1500), None);
        // 12000 bits at 7 Mbit/s = 1714285.714.. ns
        assert_eq!(Rate::mbps(7).serialization_ns(1500), Some(1_714_286));
        // 12000 bits at 9 Mbit/s = 1333333.33.. ns
        assert_eq!(Rate::mbps(9).serialization_ns(1500), Some(1_333_333));
        assert_eq!(Rate::mbps(12).serialization_ns(1500), Some(1_000_000));
    }
}
