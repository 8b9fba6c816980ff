//! The estimators, pure and tested on synthetic data: the bottleneck rate from the dispersion
//! of a train that overdrives it, loss from sequence numbers, and the round-trip statistics.

use serde::{Deserialize, Serialize};

use crate::wire::WireStats;

/// The longest train a receiver keeps a sequence bitmap for (128 KiB of bitmap): bounds the
/// memory a peer can make either half allocate.
pub const MAX_TRAIN_PACKETS: u32 = 1 << 20;

/// What a receiver saw of one train. Arrival times are the receiver's own clock (ns from any
/// origin); lengths are IP bytes.
#[derive(Clone, Debug, Default)]
pub struct TrainStats {
    count: u32,
    seen: Vec<u64>,
    received: u32,
    bytes_after_first: u64,
    first_arrival_ns: Option<u64>,
    last_arrival_ns: u64,
    first_sent_ns: u64,
    last_sent_ns: u64,
    min_seq: u32,
    max_seq: u32,
}

impl TrainStats {
    /// A train announced as `count` packets long (at most [`MAX_TRAIN_PACKETS`]).
    pub fn new(count: u32) -> Self {
        let count = count.min(MAX_TRAIN_PACKETS);
        TrainStats { count, seen: vec![0; count.div_ceil(64) as usize], ..Default::default() }
    }

    /// Records one arrival. Duplicates and sequence numbers outside the train are ignored, so
    /// neither a duplicating path nor a confused peer can make loss look negative.
    pub fn record(&mut self, seq: u32, arrival_ns: u64, sent_ns: u64, ip_len: u32) {
        if seq >= self.count {
            return;
        }
        let (word, bit) = ((seq / 64) as usize, 1u64 << (seq % 64));
        if self.seen[word] & bit != 0 {
            return;
        }
        self.seen[word] |= bit;
        self.received += 1;
        match self.first_arrival_ns {
            None => {
                self.first_arrival_ns = Some(arrival_ns);
                (self.first_sent_ns, self.last_sent_ns) = (sent_ns, sent_ns);
                (self.min_seq, self.max_seq) = (seq, seq);
            }
            Some(_) => {
                self.bytes_after_first += u64::from(ip_len);
                self.first_sent_ns = self.first_sent_ns.min(sent_ns);
                self.last_sent_ns = self.last_sent_ns.max(sent_ns);
                (self.min_seq, self.max_seq) = (self.min_seq.min(seq), self.max_seq.max(seq));
            }
        }
        self.last_arrival_ns = self.last_arrival_ns.max(arrival_ns);
    }

    pub fn received(&self) -> u32 {
        self.received
    }

    pub fn to_wire(&self) -> WireStats {
        WireStats {
            received: self.received,
            bytes_after_first: self.bytes_after_first,
            first_arrival_ns: self.first_arrival_ns.unwrap_or(0),
            last_arrival_ns: self.last_arrival_ns,
            send_span_ns: self.last_sent_ns - self.first_sent_ns,
            seq_span: self.max_seq - self.min_seq,
        }
    }
}

/// The rate at which a train left the bottleneck: the bytes that arrived after the first
/// packet over the time from the first arrival to the last. While the train overdrives the
/// bottleneck its queue never empties, so arrivals are spaced by the bottleneck's service
/// time alone: this is its rate, whatever the sender's pace. Packets the path drops before
/// its queue (random loss, overflow) take no service time and are simply absent; the
/// emulator drops before its queue, so this is its `--rate`. `None` with fewer than two
/// arrivals or no time between them.
pub fn dispersion_rate_bps(s: &WireStats) -> Option<f64> {
    let span_ns = s.last_arrival_ns.checked_sub(s.first_arrival_ns)?;
    (s.received >= 2 && span_ns > 0).then(|| s.bytes_after_first as f64 * 8.0 * 1e9 / span_ns as f64)
}

/// Whether the path stretched the train: it arrived spread over more than 1.25 times the time
/// it was sent in, so a queue was building and the arrivals were paced by the bottleneck. A
/// sender that fell behind its pace (a busy host) sends a slower train but no stretched one,
/// which is why the sender's own timestamps decide this and not the rate it was asked for.
pub fn stretched(s: &WireStats) -> bool {
    let arrival_span = s.last_arrival_ns.saturating_sub(s.first_arrival_ns);
    s.received >= 2 && arrival_span as f64 > 1.25 * s.send_span_ns as f64
}

/// The rate the sender really offered (IP bits/s): the packets it sent between the first and
/// the last one received, over its own clock. Less than asked for when it fell behind.
pub fn offered_rate_bps(s: &WireStats, ip_len: u32) -> Option<f64> {
    (s.received >= 2 && s.send_span_ns > 0).then(|| f64::from(s.seq_span) * f64::from(ip_len) * 8.0 * 1e9 / s.send_span_ns as f64)
}

/// Whether a bottleneck lies between the offered rates of two trains: the second offered
/// `offered.1 / offered.0` times as much but received less than half that growth. Random loss
/// scales what arrives with what was offered and a sender that fell behind offered less, so
/// neither reads as a bottleneck; a rate cap stops the growth. (A train that overflows a
/// drop-tail buffer is not always [`stretched`]: its arrivals outlast its sending only by the
/// buffer's delay.)
pub fn growth_stalled(offered: (f64, f64), received: (f64, f64)) -> bool {
    offered.0 > 0.0 && received.0 > 0.0 && received.1 / received.0 < 0.5 * (offered.1 / offered.0)
}

/// Loss counted from sequence numbers, with a 95 % Wilson score interval (binomial: at 1 %
/// loss, 10 000 packets give a standard deviation of 0.1 percentage points).
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct LossEstimate {
    pub sent: u32,
    pub received: u32,
    pub fraction: f64,
    pub ci95: (f64, f64),
}

impl LossEstimate {
    /// From how many of a train's `sent` packets arrived (`received` is clamped to `sent`).
    pub fn new(sent: u32, received: u32) -> Self {
        let received = received.min(sent);
        if sent == 0 {
            return LossEstimate { sent, received, fraction: 0.0, ci95: (0.0, 1.0) };
        }
        let n = f64::from(sent);
        let p = f64::from(sent - received) / n;
        let z = 1.959_964;
        let centre = (p + z * z / (2.0 * n)) / (1.0 + z * z / n);
        let half = z / (1.0 + z * z / n) * (p * (1.0 - p) / n + z * z / (4.0 * n * n)).sqrt();
        LossEstimate { sent, received, fraction: p, ci95: ((centre - half).max(0.0), (centre + half).min(1.0)) }
    }
}

/// The smallest of the samples: the base RTT is the round trip that met no queue.
pub fn min_ns(samples: &[u64]) -> Option<u64> {
    samples.iter().copied().min()
}

/// The median (the lower middle for an even count): the RTT under load, robust against the
/// odd sample delayed by the host rather than the path.
pub fn median_ns(samples: &[u64]) -> Option<u64> {
    let mut v = samples.to_vec();
    v.sort_unstable();
    v.get(v.len().saturating_sub(1) / 2).copied()
}

/// The bytes a drop-tail buffer holds when it adds `queue_delay_ns` of delay in front of a
/// bottleneck of `rate_bps`.
pub fn buffer_bytes(queue_delay_ns: u64, rate_bps: f64) -> u64 {
    (queue_delay_ns as f64 * 1e-9 * rate_bps / 8.0).round() as u64
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::{Rng, SeedableRng};

    /// A synthetic bottleneck: `n` packets offered faster than `rate_bps`, each dropped before
    /// the queue with probability `loss`; the survivors leave one service time apart.
    /// (The sender offers them at twice the rate.)
    fn bottleneck(n: u32, len: u32, rate_bps: f64, loss: f64, seed: u64) -> TrainStats {
        let mut rng = rand::rngs::StdRng::seed_from_u64(seed);
        let service_ns = f64::from(len) * 8.0 / rate_bps * 1e9;
        let mut stats = TrainStats::new(n);
        let mut t = 5_000_000.0;
        for seq in 0..n {
            if rng.gen::<f64>() < loss {
                continue;
            }
            t += service_ns;
            stats.record(seq, t as u64, (f64::from(seq) * service_ns / 2.0) as u64, len);
        }
        stats
    }

    #[test]
    fn rate_from_dispersion_is_the_service_rate_whatever_the_loss() {
        for (rate, loss) in [(30e6, 0.0), (30e6, 0.01), (1e9, 0.1), (2e6, 0.3)] {
            let s = bottleneck(5_000, 1500, rate, loss, 1);
            let est = dispersion_rate_bps(&s.to_wire()).unwrap();
            assert!((est / rate - 1.0).abs() < 1e-3, "rate {rate}, loss {loss}: {est}");
            assert!(stretched(&s.to_wire()), "offered at twice the rate, arriving over twice the time");
        }
    }

    #[test]
    fn a_bottleneck_stalls_the_growth_that_random_loss_and_a_slow_sender_do_not() {
        // 16 → 64 Mbit/s offered: a 30 Mbit/s bottleneck delivers 30 after 16.
        assert!(growth_stalled((16e6, 64e6), (16e6, 30e6)));
        // 30 % random loss: 11.2 after 44.8, the same fourfold growth.
        assert!(!growth_stalled((16e6, 64e6), (11.2e6, 44.8e6)));
        // The sender fell behind and offered only 24 instead of 64: all of it arrived.
        assert!(!growth_stalled((16e6, 24e6), (16e6, 24e6)));
        // The offered rate of a synthetic overdriven train is what was sent: twice the service rate.
        let s = bottleneck(5_000, 1500, 30e6, 0.0, 1).to_wire();
        assert!((offered_rate_bps(&s, 1500).unwrap() / 60e6 - 1.0).abs() < 1e-3);
    }

    #[test]
    fn a_train_that_arrives_as_it_was_sent_is_not_stretched() {
        // A slow sender (it fell behind to 1 packet per ms) on a fast path: the arrivals have
        // the sender's spacing plus a little jitter, and that is no bottleneck.
        let mut s = TrainStats::new(100);
        for seq in 0..100u32 {
            let sent = u64::from(seq) * 1_000_000;
            s.record(seq, 7_000_000 + sent + u64::from(seq % 3) * 50_000, sent, 1500);
        }
        assert!(!stretched(&s.to_wire()));
    }

    #[test]
    fn rate_needs_two_arrivals_apart() {
        let mut s = TrainStats::new(10);
        assert_eq!(dispersion_rate_bps(&s.to_wire()), None);
        s.record(0, 100, 0, 1500);
        s.record(1, 100, 0, 1500);
        assert_eq!(dispersion_rate_bps(&s.to_wire()), None);
        s.record(2, 1_000_100, 0, 1500);
        assert_eq!(dispersion_rate_bps(&s.to_wire()), Some(2.0 * 1500.0 * 8.0 * 1e9 / 1e6));
    }

    #[test]
    fn loss_from_sequence_numbers_ignores_duplicates_and_strangers() {
        let mut s = TrainStats::new(100);
        for seq in (0..100).filter(|s| s % 10 != 3) {
            s.record(seq, u64::from(seq), 0, 100);
            s.record(seq, u64::from(seq), 0, 100);
        }
        s.record(100, 1, 0, 100);
        s.record(u32::MAX, 1, 0, 100);
        let loss = LossEstimate::new(100, s.received());
        assert_eq!((loss.received, loss.fraction), (90, 0.1));
        assert!(loss.ci95.0 < 0.1 && 0.1 < loss.ci95.1);
    }

    #[test]
    fn loss_estimate_is_within_half_a_point_at_one_percent_over_ten_thousand_packets() {
        // The probe's own sample size: 10 000 packets, sd 0.1 pp; every seed lands well inside
        // ±0.5 pp and the Wilson interval covers the truth.
        for seed in 0..20 {
            let s = bottleneck(10_000, 1500, 30e6, 0.01, seed);
            let loss = LossEstimate::new(10_000, s.received());
            assert!((loss.fraction - 0.01).abs() < 0.005, "seed {seed}: {}", loss.fraction);
            assert!(loss.ci95.1 - loss.ci95.0 < 0.006);
        }
        let covered = (0..200).filter(|&seed| {
            let loss = LossEstimate::new(10_000, bottleneck(10_000, 1500, 30e6, 0.01, 1000 + seed).received());
            loss.ci95.0 <= 0.01 && 0.01 <= loss.ci95.1
        });
        assert!(covered.count() >= 180, "a 95 % interval covers the truth about 95 % of the time");
    }

    #[test]
    fn edge_cases_of_loss_and_the_rtt_statistics() {
        assert_eq!(LossEstimate::new(0, 0).fraction, 0.0);
        assert_eq!(LossEstimate::new(10, 20).fraction, 0.0, "received is clamped to sent");
        assert_eq!(LossEstimate::new(10, 0).fraction, 1.0);
        assert_eq!(min_ns(&[5, 3, 9]), Some(3));
        assert_eq!(median_ns(&[5, 3, 9, 100]), Some(5));
        assert_eq!(median_ns(&[]), None);
        // 60 ms of queue in front of 30 Mbit/s: one BDP of a 60 ms path, 225 000 bytes.
        assert_eq!(buffer_bytes(60_000_000, 30e6), 225_000);
        assert!(TrainStats::new(u32::MAX).seen.len() <= (MAX_TRAIN_PACKETS / 64) as usize);
    }
}
