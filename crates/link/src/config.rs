use serde::{Deserialize, Serialize};

use crate::aqm::Aqm;
pub use crate::buffer::Buffer;
use crate::ecn::EcnFault;
pub use crate::error::LinkConfigError;
use crate::time::{Duration, Instant};
use crate::trace::TraceRate;

/// Bottleneck rate of the server.
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
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
    pub fn serialization_time(&self, len: u32) -> Option<Duration> {
        match *self {
            Rate::Unlimited => Some(Duration::ZERO),
            Rate::BitsPerSec(0) => None,
            Rate::BitsPerSec(r) => {
                let r = u128::from(r);
                let ns = (u128::from(len) * 8 * 1_000_000_000 + r / 2) / r;
                Some(u64::try_from(ns).map_or(Duration::MAX, Duration::from_nanos))
            }
        }
    }
}

#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
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
    GilbertElliott { p_good_to_bad: f64, p_bad_to_good: f64, loss_in_good: f64, loss_in_bad: f64 },
}

/// Extra per-packet delay added after the propagation delay.
///
/// Samples come from an RNG stream of their own (same seed, different
/// stream), so adding jitter does not change which packets the loss model
/// drops.
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Jitter {
    #[default]
    None,
    /// Uniform integer in `[0, max_ns]`.
    Uniform { max_ns: Duration, reorder: bool },
    /// Half-normal: `|x|` with `x ~ N(0, sd_ns^2)`, i.e. a zero-mean normal
    /// truncated at 0. Mean `sd_ns * sqrt(2/pi)`.
    Normal { sd_ns: Duration, reorder: bool },
}

impl Jitter {
    /// Whether packets may overtake each other. Without it, each packet is
    /// held at least until its predecessor is delivered.
    pub fn reorders(&self) -> bool {
        match *self {
            Jitter::None => false,
            Jitter::Uniform { reorder, .. } | Jitter::Normal { reorder, .. } => reorder,
        }
    }
}

/// Reordering (`--reorder 1%:3ms`): each packet, with probability `p` (drawn from the link's
/// seed on an RNG stream of its own, so that turning it on changes neither the loss pattern nor
/// the jitter), is held back by a displacement after its propagation delay (and jitter), so the
/// packets that leave the server after it within that displacement overtake it. Nothing is lost:
/// a held packet is delivered late, never dropped.
///
/// The displacement is a time first because the link is a clock model and the reordering of
/// real paths (a packet taking a slower lane of a multipath or link-layer-retransmitting hop) is
/// a time offset; the detectors it meets are time-based too (RACK's reordering window, RFC 8985
/// §6.2; QUIC's time threshold, RFC 9002 §6.1.2). A displacement in packets is offered for the
/// packet-count detectors (three duplicate ACKs, RFC 5681 §3.2; QUIC's kPacketThreshold, RFC
/// 9002 §6.1.1): `k` packets are `k` serialization times of the held packet at the rate in force,
/// which is exactly `k` overtaking packets while the link is busy, fewer when it idles.
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Reorder {
    #[default]
    None,
    /// Held back `by_ns`.
    Time { p: f64, by_ns: Duration },
    /// Held back `packets` serialization times of the held packet at the rate in force (a
    /// trace's long-run mean); nothing at an unlimited rate.
    Packets { p: f64, packets: u32 },
}

impl Reorder {
    /// Whether any packet may be held back (and so overtaken).
    pub fn is_on(&self) -> bool {
        self.share() > 0.0
    }

    /// The default: nothing held back (and nothing written in a configuration's JSON).
    pub fn is_none(&self) -> bool {
        *self == Reorder::None
    }

    /// The share of packets held back.
    pub fn share(&self) -> f64 {
        match *self {
            Reorder::None => 0.0,
            Reorder::Time { p, .. } | Reorder::Packets { p, .. } => p,
        }
    }
}

/// Token-bucket policer in front of the buffer. The bucket starts full.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Policer {
    pub rate_bps: u64,
    pub burst_bytes: u64,
}

/// A change of the link's parameters at `at_ns`, on the same clock as the
/// `now` passed to the link (the emulator passes time since path start).
///
/// * `rate` applies to packets that *start* serialization at or after
///   `at_ns`; a packet already in service finishes at the old rate (except
///   one stalled behind a zero rate, which restarts at `at_ns`). A rate
///   change replaces a trace for the rest of the run.
/// * `delay_ns` applies to packets that finish serialization at or after
///   `at_ns`. A decrease never reorders: a packet is not delivered before
///   its predecessor (unless jitter reordering is on).
/// * `loss` applies to packets arriving at or after `at_ns`; the loss RNG
///   stream continues, and a Gilbert–Elliott chain restarts in its good
///   state unless the previous model was Gilbert–Elliott too.
///
/// Changes at equal times are applied in list order, before any packet
/// event at that instant.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct ScheduledChange {
    pub at_ns: Instant,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rate: Option<Rate>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub delay_ns: Option<Duration>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub loss: Option<LossModel>,
}

/// Configuration of one direction of a link. The default is a transparent
/// link: unlimited rate, no delay, no loss, unlimited buffer, and none of
/// the optional stages.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct DirectionConfig {
    /// Constant rate of the server; ignored while `trace` is in force.
    pub rate: Rate,
    pub delay_ns: Duration,
    pub loss: LossModel,
    pub buffer: Buffer,
    /// Trace-driven capacity; when set it replaces `rate` from time 0 until
    /// a scheduled rate change.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub trace: Option<TraceRate>,
    /// Applied in order of `at_ns` (stable for equal times).
    #[serde(default)]
    pub schedule: Vec<ScheduledChange>,
    #[serde(default)]
    pub jitter: Jitter,
    /// Packets held back so that later ones overtake them (none by default).
    #[serde(default, skip_serializing_if = "Reorder::is_none")]
    pub reorder: Reorder,
    #[serde(default)]
    pub policer: Option<Policer>,
    #[serde(default)]
    pub aqm: Aqm,
    /// A middlebox's fault on the ECN field in front of the buffer (bleaching, CE on every
    /// packet, dropping ECN-capable packets).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ecn_fault: Option<EcnFault>,
    /// Aggregation, as a Wi-Fi or cellular link holds packets and releases them in bursts: a
    /// packet that would be delivered at `t` is delivered at the next multiple of this period
    /// (on the link's clock, from the start of the run) at or after `t`, all the packets held
    /// together, in order. Applied after delay and jitter. `None` (or zero): no aggregation.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub aggregate_ns: Option<Duration>,
}

fn check_prob(field: &'static str, value: f64) -> Result<(), LinkConfigError> {
    // `contains` is false for NaN, so NaN is rejected too.
    if (0.0..=1.0).contains(&value) {
        Ok(())
    } else {
        Err(LinkConfigError::InvalidProbability { field, value })
    }
}

fn check_loss(loss: &LossModel) -> Result<(), LinkConfigError> {
    match *loss {
        LossModel::None => {}
        LossModel::Bernoulli { p } => check_prob("bernoulli.p", p)?,
        LossModel::GilbertElliott { p_good_to_bad, p_bad_to_good, loss_in_good, loss_in_bad } => {
            check_prob("gilbert_elliott.p_good_to_bad", p_good_to_bad)?;
            check_prob("gilbert_elliott.p_bad_to_good", p_bad_to_good)?;
            check_prob("gilbert_elliott.loss_in_good", loss_in_good)?;
            check_prob("gilbert_elliott.loss_in_bad", loss_in_bad)?;
        }
    }
    Ok(())
}

impl DirectionConfig {
    /// The aggregation period in force, if any (a zero period aggregates nothing).
    pub fn aggregation(&self) -> Option<Duration> {
        self.aggregate_ns.filter(|p| !p.is_zero())
    }

    pub fn validate(&self) -> Result<(), LinkConfigError> {
        // A zero base rate is harmless while a trace is in force. Zero rates
        // inside the schedule are outages and therefore allowed.
        if self.rate == Rate::BitsPerSec(0) && self.trace.is_none() {
            return Err(LinkConfigError::ZeroRate);
        }
        check_loss(&self.loss)?;
        for c in &self.schedule {
            if let Some(l) = &c.loss {
                check_loss(l)?;
            }
        }
        if let Some(t) = &self.trace {
            if !t.is_loaded() {
                return Err(LinkConfigError::TraceNotLoaded { name: t.name().to_string() });
            }
        }
        match self.reorder {
            Reorder::None => {}
            Reorder::Time { p, .. } | Reorder::Packets { p, .. } => check_prob("reorder.p", p)?,
        }
        if self.policer.is_some_and(|p| p.rate_bps == 0) {
            return Err(LinkConfigError::PolicerZeroRate);
        }
        self.aqm.validate()?;
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
        assert_eq!(c.delay_ns, Duration::ZERO);
        assert_eq!(c.loss, LossModel::None);
        assert_eq!(c.buffer, Buffer::Unlimited);
        assert!(c.validate().is_ok());
    }

    #[test]
    fn validate_rejects_bad_values() {
        let mut c = DirectionConfig { rate: Rate::BitsPerSec(0), ..Default::default() };
        assert_eq!(c.validate(), Err(LinkConfigError::ZeroRate));
        c.rate = Rate::mbps(10);
        for p in [-0.1, 1.1, f64::NAN, f64::INFINITY] {
            c.loss = LossModel::Bernoulli { p };
            assert!(matches!(c.validate(), Err(LinkConfigError::InvalidProbability { .. })), "p={p}");
        }
        for p in [0.0, 0.5, 1.0] {
            c.loss = LossModel::Bernoulli { p };
            assert!(c.validate().is_ok());
        }
        let ge = |a, b, c2, d| LossModel::GilbertElliott { p_good_to_bad: a, p_bad_to_good: b, loss_in_good: c2, loss_in_bad: d };
        c.loss = ge(0.1, 0.2, 0.0, 1.0);
        assert!(c.validate().is_ok());
        for bad in [ge(1.5, 0.2, 0.0, 1.0), ge(0.1, -0.2, 0.0, 1.0), ge(0.1, 0.2, f64::NAN, 1.0), ge(0.1, 0.2, 0.0, 2.0)] {
            c.loss = bad;
            assert!(c.validate().is_err());
        }
        c.loss = LossModel::None;
        c.buffer = Buffer::Packets(0);
        assert!(c.validate().is_ok());
        let msg = LinkConfigError::InvalidProbability { field: "bernoulli.p", value: 2.0 }.to_string();
        assert!(msg.contains("bernoulli.p"));
    }

    #[test]
    fn serialization_time_rounds() {
        let ns = |n| Some(Duration::from_nanos(n));
        assert_eq!(Rate::Unlimited.serialization_time(1500), ns(0));
        assert_eq!(Rate::BitsPerSec(0).serialization_time(1500), None);
        // 12000 bits at 7 Mbit/s = 1714285.714.. ns
        assert_eq!(Rate::mbps(7).serialization_time(1500), ns(1_714_286));
        // 12000 bits at 9 Mbit/s = 1333333.33.. ns
        assert_eq!(Rate::mbps(9).serialization_time(1500), ns(1_333_333));
        assert_eq!(Rate::mbps(12).serialization_time(1500), ns(1_000_000));
    }
}
