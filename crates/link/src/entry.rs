//! What arrives at the bottleneck's entry, before the buffer: the gaps between consecutive
//! arrivals and the bursts they form. A paced sender spreads its packets over time; one
//! that is not hands the link runs of packets at the speed of the host, which only the
//! buffer can absorb. This tells the two apart from the link's side, whatever the sender
//! claims about itself.
//!
//! A **burst** is a run of packets each arriving less than [`BACK_TO_BACK_FRACTION`] of its
//! own serialization time (at the bottleneck's rate in force) after the previous one: faster
//! than four times the link's rate, which no pacing gain asks for (BBR's largest, Startup's
//! 2.77, spaces packets 0.36 serialization times apart). A packet that is not so close
//! starts a new burst, so a perfectly paced flow is all bursts of one.
//!
//! Cheap by construction (the emulator's forwarder calls it per packet): one histogram
//! record and a counter per arrival, one array increment per burst; no allocation.

use serde::{Deserialize, Serialize};

use crate::histogram::DelayHistogram;
use crate::time::{Duration, Instant};

/// A packet closer than this fraction of its serialization time to its predecessor is part
/// of the same burst (see the module docs).
pub const BACK_TO_BACK_FRACTION: u64 = 4;

/// Longest burst length counted exactly; longer bursts share the last bucket (their true
/// length still counts in `packets` and `max`).
const EXACT_LENGTHS: usize = 1024;

/// Exact counts of burst lengths in packets.
#[derive(Clone, Debug, PartialEq)]
pub struct BurstHistogram {
    /// `counts[n]`: bursts of `n` packets (`n` ≥ 1); the last bucket holds every longer one.
    counts: Box<[u64]>,
    bursts: u64,
    packets: u64,
    max: u64,
}

impl Default for BurstHistogram {
    fn default() -> Self {
        BurstHistogram { counts: vec![0; EXACT_LENGTHS + 1].into_boxed_slice(), bursts: 0, packets: 0, max: 0 }
    }
}

impl BurstHistogram {
    /// Counts one burst of `len` packets (0 counts nothing).
    pub fn record(&mut self, len: u64) {
        if len == 0 {
            return;
        }
        self.counts[len.min(EXACT_LENGTHS as u64) as usize] += 1;
        self.bursts += 1;
        self.packets += len;
        self.max = self.max.max(len);
    }

    /// Bursts counted.
    pub fn bursts(&self) -> u64 {
        self.bursts
    }

    /// Packets in them.
    pub fn packets(&self) -> u64 {
        self.packets
    }

    /// Longest burst, in packets (0 when empty).
    pub fn max(&self) -> u64 {
        self.max
    }

    /// The burst length, in packets, that a share `q` of the *packets* arrived in or in a
    /// shorter one (packet-weighted: "99 % of packets came in bursts of at most N"); a
    /// length past the exact range reads as `max`. 0 when empty.
    pub fn packet_quantile(&self, q: f64) -> u64 {
        if self.packets == 0 {
            return 0;
        }
        let q = if q.is_nan() { 0.0 } else { q.clamp(0.0, 1.0) };
        let rank = ((q * self.packets as f64).ceil() as u64).clamp(1, self.packets);
        let mut seen = 0u64;
        for (len, &c) in self.counts.iter().enumerate().take(EXACT_LENGTHS).skip(1) {
            seen += c * len as u64;
            if seen >= rank {
                return len as u64;
            }
        }
        self.max
    }

    /// Share of packets that arrived in bursts longer than `len` packets.
    pub fn share_of_packets_above(&self, len: u64) -> f64 {
        if self.packets == 0 {
            return 0.0;
        }
        let upto: u64 = self.counts.iter().enumerate().take(EXACT_LENGTHS).skip(1).take_while(|(l, _)| *l as u64 <= len).map(|(l, &c)| c * l as u64).sum();
        (self.packets - upto.min(self.packets)) as f64 / self.packets as f64
    }

    pub fn merge(&mut self, other: &BurstHistogram) {
        for (a, b) in self.counts.iter_mut().zip(other.counts.iter()) {
            *a += *b;
        }
        self.bursts += other.bursts;
        self.packets += other.packets;
        self.max = self.max.max(other.max);
    }
}

#[derive(Serialize, Deserialize, schemars::JsonSchema)]
struct BurstRepr {
    bursts: u64,
    packets: u64,
    max: u64,
    /// `(length in packets, bursts)` for every length seen; the entry at the exact range's
    /// end counts every burst at least that long.
    lengths: Vec<(u64, u64)>,
}

impl Serialize for BurstHistogram {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let lengths = self.counts.iter().enumerate().filter(|(_, &c)| c > 0).map(|(l, &c)| (l as u64, c)).collect();
        BurstRepr { bursts: self.bursts, packets: self.packets, max: self.max, lengths }.serialize(s)
    }
}

/// Written as [`BurstRepr`], so its schema is that one's.
impl schemars::JsonSchema for BurstHistogram {
    fn schema_name() -> std::borrow::Cow<'static, str> {
        "BurstHistogram".into()
    }
    fn json_schema(g: &mut schemars::SchemaGenerator) -> schemars::Schema {
        BurstRepr::json_schema(g)
    }
}

impl<'de> Deserialize<'de> for BurstHistogram {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let r = BurstRepr::deserialize(d)?;
        let mut h = BurstHistogram::default();
        for (len, c) in r.lengths {
            if len == 0 || len > EXACT_LENGTHS as u64 {
                return Err(serde::de::Error::custom(format!("burst length {len} is outside 1..={EXACT_LENGTHS}")));
            }
            h.counts[len as usize] = h.counts[len as usize].saturating_add(c);
            h.bursts = h.bursts.saturating_add(c);
        }
        if h.bursts != r.bursts {
            return Err(serde::de::Error::custom(format!("burst counts sum to {}, but bursts is {}", h.bursts, r.bursts)));
        }
        h.packets = r.packets;
        h.max = r.max;
        Ok(h)
    }
}

/// Arrival gaps and bursts at the bottleneck's entry.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct EntryStats {
    /// Time from each arrival to the next (lost packets included: they arrived).
    pub gaps: DelayHistogram,
    /// Runs of back-to-back arrivals. Empty while the link has no rate (unlimited or zero):
    /// without a serialization time there is no "faster than the link".
    pub bursts: BurstHistogram,
}

/// Turns a stream of arrivals into [`EntryStats`].
#[derive(Clone, Debug, Default)]
pub struct EntryMeter {
    last: Option<Instant>,
    /// Packets in the burst under way (0: none, the link had no rate).
    burst: u64,
}

impl EntryMeter {
    /// A packet arrived at `at` (non-decreasing); it is back to back with its predecessor if
    /// it came less than `back_to_back_under` after it (`None`: the link has no rate, so
    /// bursts are not counted).
    pub fn arrival(&mut self, at: Instant, back_to_back_under: Option<Duration>, stats: &mut EntryStats) {
        if let Some(prev) = self.last {
            let gap = at - prev;
            stats.gaps.record(gap);
            if back_to_back_under.is_some_and(|t| gap < t) && self.burst > 0 {
                self.burst += 1;
                self.last = Some(at);
                return;
            }
        }
        stats.bursts.record(self.burst);
        self.burst = u64::from(back_to_back_under.is_some());
        self.last = Some(at);
    }

    /// Counts the burst under way (at the end of a measurement); the next arrival starts anew.
    pub fn flush(&mut self, stats: &mut EntryStats) {
        stats.bursts.record(self.burst);
        self.burst = 0;
        self.last = None;
    }
}

/// The gap under which a `len`-byte packet counts as back to back at `rate_bps`.
pub(crate) fn back_to_back_under(len: u32, rate_bps: f64) -> Option<Duration> {
    if rate_bps.is_nan() || rate_bps <= 0.0 || rate_bps.is_infinite() {
        return None;
    }
    let ser_ns = f64::from(len) * 8.0 * 1e9 / rate_bps;
    Some(Duration::from_nanos((ser_ns / BACK_TO_BACK_FRACTION as f64).round() as u64))
}

#[cfg(test)]
mod tests {
    use super::*;

    const US: Duration = Duration::from_micros(1);

    fn run(arrivals: &[(u64, Option<Duration>)]) -> EntryStats {
        let mut m = EntryMeter::default();
        let mut s = EntryStats::default();
        for &(us, thr) in arrivals {
            m.arrival(Instant::EPOCH + us * US, thr, &mut s);
        }
        m.flush(&mut s);
        s
    }

    #[test]
    fn paced_arrivals_are_bursts_of_one_and_line_rate_runs_are_one_burst() {
        let thr = Some(60 * US);
        // Ten packets 240 µs apart (a 50 Mbit/s link's 1500-byte serialization time).
        let paced: Vec<_> = (0..10).map(|i| (i * 240, thr)).collect();
        let s = run(&paced);
        assert_eq!((s.bursts.bursts(), s.bursts.packets(), s.bursts.max()), (10, 10, 1));
        assert_eq!(s.gaps.count(), 9);
        assert_eq!(s.gaps.quantile(0.5), 240 * US);
        // Three runs of 4, 1 and 7 packets 1 µs apart, a millisecond between runs.
        let mut bursty = Vec::new();
        for (k, n) in [4u64, 1, 7].into_iter().enumerate() {
            bursty.extend((0..n).map(|i| (k as u64 * 1000 + i, thr)));
        }
        let s = run(&bursty);
        assert_eq!((s.bursts.bursts(), s.bursts.packets(), s.bursts.max()), (3, 12, 7));
        // Packet-weighted: 7 of the 12 packets came in the burst of 7.
        assert_eq!(s.bursts.packet_quantile(0.5), 7);
        assert_eq!(s.bursts.packet_quantile(5.0 / 12.0), 4);
        assert_eq!(s.bursts.packet_quantile(1.0 / 12.0), 1);
        assert!((s.bursts.share_of_packets_above(4) - 7.0 / 12.0).abs() < 1e-12);
        assert_eq!(s.bursts.share_of_packets_above(7), 0.0);
    }

    #[test]
    fn the_threshold_is_strict_and_a_rateless_link_counts_no_bursts() {
        let thr = Some(60 * US);
        let s = run(&[(0, thr), (60, thr), (119, thr)]);
        // 60 µs is not under 60 µs: a new burst; 59 µs is.
        assert_eq!(s.bursts.max(), 2);
        assert_eq!(s.bursts.bursts(), 2);
        let s = run(&[(0, None), (0, None), (0, None)]);
        assert_eq!((s.bursts.bursts(), s.gaps.count()), (0, 2));
        // From no rate to a rate: counting starts with the first packet that has one.
        let s = run(&[(0, None), (0, thr), (1, thr)]);
        assert_eq!((s.bursts.bursts(), s.bursts.max()), (1, 2));
    }

    #[test]
    fn long_bursts_keep_their_length_in_max_and_packets() {
        let mut h = BurstHistogram::default();
        h.record(3);
        h.record(5000);
        assert_eq!((h.bursts(), h.packets(), h.max()), (2, 5003, 5000));
        assert_eq!(h.packet_quantile(0.5), 5000);
        assert_eq!(h.packet_quantile(0.0), 3);
        let json = serde_json::to_string(&h).unwrap();
        assert_eq!(json, r#"{"bursts":2,"packets":5003,"max":5000,"lengths":[[3,1],[1024,1]]}"#);
        let back: BurstHistogram = serde_json::from_str(&json).unwrap();
        assert_eq!(back, h);
        assert!(serde_json::from_str::<BurstHistogram>(r#"{"bursts":2,"packets":3,"max":3,"lengths":[[3,1]]}"#).is_err());
        assert!(serde_json::from_str::<BurstHistogram>(r#"{"bursts":1,"packets":3,"max":3,"lengths":[[0,1]]}"#).is_err());
        let mut merged = BurstHistogram::default();
        merged.merge(&h);
        merged.merge(&BurstHistogram::default());
        assert_eq!(merged, h);
    }

    #[test]
    fn the_threshold_is_a_quarter_of_the_serialization_time() {
        // 1500 bytes at 50 Mbit/s: 240 µs to serialize.
        assert_eq!(back_to_back_under(1500, 50e6), Some(60 * US));
        assert_eq!(back_to_back_under(1500, 0.0), None);
        assert_eq!(back_to_back_under(1500, f64::NAN), None);
    }
}
