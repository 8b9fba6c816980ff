//! Per-packet delivery-rate sampling (draft-cheng-iccrg-delivery-rate-estimation-02, as
//! restated in draft-ietf-ccwg-bbr-06 §4.1 "Delivery Rate Samples").
//!
//! Each sent packet remembers the connection's delivery counters at send time. When it is
//! acknowledged, the bytes delivered since then divided by the elapsed time gives a rate
//! sample. The elapsed time is the *longer* of the send phase and the ACK phase of that
//! flight (§4.1.1.2.4, §4.1.2.3): a compressed burst of ACKs cannot make the path look
//! faster than the packets were sent, and a burst of sends cannot make it look faster than
//! they were acknowledged — the sample is min(send rate, ACK rate).
//!
//! Sans-IO: every time is passed in; nothing reads a clock.

use std::collections::HashMap;
use std::time::{Duration, Instant};

/// What the sampler remembers about one packet in flight (the draft's `P.*` fields).
#[derive(Debug, Clone, Copy)]
pub struct SentPacket {
    pub size: u64,
    pub send_time: Instant,
    /// `C.delivered` when the packet was sent.
    pub delivered: u64,
    /// `C.delivered_time` when the packet was sent.
    pub delivered_time: Instant,
    /// `C.first_send_time` when the packet was sent: start of its flight's send phase.
    pub first_send_time: Instant,
    /// Sent while the connection was application-limited.
    pub is_app_limited: bool,
    /// Bytes in flight just after sending it, this packet included (`P.tx_in_flight`, §4.1.2.2).
    pub tx_in_flight: u64,
    /// `C.lost` when the packet was sent, so loss "since this packet was sent" is known later.
    pub lost: u64,
    /// Number of the packet this sampler saw sent just before this one. QUIC numbers every
    /// packet, including those that carry only ACKs and never reach the controller, so two
    /// packets are adjacent in the flight when this links them, not when their numbers do.
    pub prev_sent_pn: Option<u64>,
    /// The ECN counters ([`DeliveryRateSampler::on_ecn_counts`]) when the packet was sent,
    /// so the CE share of what was delivered "since this packet was sent" is known later
    /// (the kernel's `tx.delivered_ce`, what BBR's ECN check divides).
    pub ecn_delivered: u64,
    pub ce_delivered: u64,
}

/// One rate sample, produced per ACK batch (the draft's `RS`).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct RateSample {
    /// Bytes per second; 0 when the interval was empty.
    pub delivery_rate: f64,
    /// Bytes delivered over `interval`.
    pub delivered: u64,
    pub interval: Duration,
    pub send_elapsed: Duration,
    pub ack_elapsed: Duration,
    /// The newest acknowledged packet was sent while application-limited.
    pub is_app_limited: bool,
    /// `C.delivered` when the newest acknowledged packet was sent.
    pub prior_delivered: u64,
    /// RTT of the newest acknowledged packet (ACK time minus its send time).
    pub rtt: Duration,
    /// Bytes in flight when the newest acknowledged packet was sent.
    pub tx_in_flight: u64,
    /// Bytes lost between sending the newest acknowledged packet and now.
    pub lost: u64,
    /// Bytes newly acknowledged / newly declared lost since the previous sample.
    pub newly_acked: u64,
    pub newly_lost: u64,
    /// Packets the peer reported ECN-marked (ECT or CE) since the sampled packet was sent,
    /// and how many of them CE (the kernel's `rs->delivered_ce`). Counted in packets, as
    /// QUIC's ACK-frame ECN counts are (RFC 9000 §13.4.1), and one ACK late: noq reports an
    /// ACK's counts after that ACK's rate sample.
    pub ecn_delivered: u64,
    pub ce_delivered: u64,
}

/// The connection-level sampler state (the draft's `C.*` delivery fields).
#[derive(Debug, Clone)]
pub struct DeliveryRateSampler {
    in_flight: HashMap<u64, SentPacket>,
    /// Older packets whose number a later packet reused: QUIC numbers packets per space, so a
    /// handshake packet and an application-data packet can share one while both are in
    /// flight. Rarely more than a few, and only around the handshake.
    aliased: Vec<(u64, SentPacket)>,
    inflight_bytes: u64,
    delivered: u64,
    delivered_time: Option<Instant>,
    first_send_time: Option<Instant>,
    /// 0 when not application-limited, else the `delivered` value that ends the
    /// app-limited phase (`C.app_limited`).
    app_limited_until: u64,
    lost: u64,
    last_sent_pn: Option<u64>,
    /// Newest packet acknowledged in the current batch: the sample is taken from it.
    newest: Option<SentPacket>,
    newest_rtt: Duration,
    newly_acked: u64,
    newly_lost: u64,
    ecn_delivered: u64,
    ce_delivered: u64,
    /// When the peer received the newest packet of the ACK being processed, on this end's
    /// clock ([`Self::on_ack_receipt`]); `None`: the ACK's arrival.
    ack_receipt: Option<Instant>,
}

impl Default for DeliveryRateSampler {
    fn default() -> Self {
        Self::new()
    }
}

impl DeliveryRateSampler {
    pub fn new() -> Self {
        Self {
            in_flight: HashMap::new(),
            aliased: Vec::new(),
            inflight_bytes: 0,
            delivered: 0,
            delivered_time: None,
            first_send_time: None,
            app_limited_until: 0,
            lost: 0,
            last_sent_pn: None,
            newest: None,
            newest_rtt: Duration::ZERO,
            newly_acked: 0,
            newly_lost: 0,
            ecn_delivered: 0,
            ce_delivered: 0,
            ack_receipt: None,
        }
    }

    /// Bytes sent and neither acknowledged nor declared lost.
    pub fn inflight(&self) -> u64 {
        self.inflight_bytes
    }
    /// Total bytes acknowledged (`C.delivered`).
    pub fn delivered(&self) -> u64 {
        self.delivered
    }
    /// Total bytes declared lost (`C.lost`).
    pub fn lost(&self) -> u64 {
        self.lost
    }
    pub fn is_app_limited(&self) -> bool {
        self.app_limited_until != 0
    }

    /// An ACK's ECN count increases: `ect` packets arrived unmarked, `ce` marked.
    pub fn on_ecn_counts(&mut self, ect: u64, ce: u64) {
        self.ecn_delivered += ect + ce;
        self.ce_delivered += ce;
    }

    /// Cumulative ECN-counted and CE packets (for per-round fractions).
    pub fn ecn_counts(&self) -> (u64, u64) {
        (self.ecn_delivered, self.ce_delivered)
    }

    /// §4.1.2.4 MarkConnectionAppLimited: the sender has nothing to send and is not blocked
    /// by cwnd or pacing; samples until everything now in flight is delivered would
    /// understate the path.
    pub fn mark_app_limited(&mut self) {
        self.app_limited_until = (self.delivered + self.inflight_bytes).max(1);
    }

    /// The ACK about to be processed (until [`Self::generate`]) was sent by a peer that received
    /// its newest packet at `at` on this end's clock: the ACK's arrival minus the delay the
    /// peer reported (QUIC's `ack_delay`, RFC 9000 §19.3). `C.delivered_time` is then taken
    /// at `at` instead of at the arrival, so the ACK phase of a sample spans the peer's receipts,
    /// and a receiver that woke late to acknowledge (a userspace QUIC stack on a busy host)
    /// neither shortens the phase that starts at its late ACK nor stretches the one that ends
    /// there. Linux TCP times the phase at ACK arrival (`tcp_rate_gen`), where the receiver
    /// acknowledges in softirq; draft-ietf-ccwg-bbr-06 §4.1 leaves the clock to the transport.
    /// The time never goes back before an earlier ACK's, nor past the arrival.
    pub fn on_ack_receipt(&mut self, at: Instant) {
        self.ack_receipt = Some(at);
    }

    /// §4.1.2.2 OnPacketSent.
    pub fn on_packet_sent(&mut self, now: Instant, bytes: u64, pn: u64) {
        if self.inflight_bytes == 0 {
            // A new flight starts: its send and ACK phases are measured from here.
            self.first_send_time = Some(now);
            self.delivered_time = Some(now);
        }
        let packet = SentPacket {
            size: bytes,
            send_time: now,
            delivered: self.delivered,
            delivered_time: self.delivered_time.unwrap_or(now),
            first_send_time: self.first_send_time.unwrap_or(now),
            is_app_limited: self.app_limited_until != 0,
            tx_in_flight: self.inflight_bytes + bytes,
            lost: self.lost,
            prev_sent_pn: self.last_sent_pn.replace(pn),
            ecn_delivered: self.ecn_delivered,
            ce_delivered: self.ce_delivered,
        };
        // QUIC numbers packets per space: a reused number (a handshake packet's, reused by
        // application data) keeps the older packet aside, still in flight.
        if let Some(old) = self.in_flight.insert(pn, packet) {
            self.aliased.push((pn, old));
        }
        self.inflight_bytes += bytes;
    }

    /// §4.1.2.3 UpdateRateSample, per newly acknowledged packet: the newest packet sent with
    /// number `pn`. Returns its send-time record, or `None` for a packet this sampler never saw.
    pub fn on_packet_acked(&mut self, now: Instant, pn: u64) -> Option<SentPacket> {
        let p = self.in_flight.remove(&pn)?;
        if let Some(i) = self.aliased.iter().rposition(|(n, _)| *n == pn) {
            let (_, older) = self.aliased.swap_remove(i);
            self.in_flight.insert(pn, older);
        }
        self.account_acked(now, p)
    }

    /// As [`Self::on_packet_acked`], for the packet with number `pn` that was sent at `sent`
    /// (the transport's own record): when two packets share the number, the other one stays
    /// in flight, and its send time cannot make an RTT sample of 0.1 ms on a 20 ms path.
    pub fn on_packet_acked_sent_at(&mut self, now: Instant, pn: u64, sent: Instant) -> Option<SentPacket> {
        if self.in_flight.get(&pn).is_some_and(|p| p.send_time == sent) {
            return self.on_packet_acked(now, pn);
        }
        let i = self.aliased.iter().position(|(n, p)| *n == pn && p.send_time == sent)?;
        let (_, p) = self.aliased.swap_remove(i);
        self.account_acked(now, p)
    }

    fn account_acked(&mut self, now: Instant, p: SentPacket) -> Option<SentPacket> {
        self.inflight_bytes -= p.size;
        self.delivered += p.size;
        let receipt = self.ack_receipt.map_or(now, |at| at.min(now));
        self.delivered_time = Some(self.delivered_time.map_or(receipt, |t| t.max(receipt)));
        self.newly_acked += p.size;
        let is_newest = match self.newest {
            None => true,
            Some(n) => (p.delivered, p.send_time) >= (n.delivered, n.send_time),
        };
        if is_newest {
            self.newest = Some(p);
            self.newest_rtt = now.saturating_duration_since(p.send_time);
            // The next flight's send phase starts where this packet's send ended.
            self.first_send_time = Some(p.send_time);
        }
        Some(p)
    }

    /// A packet was declared lost. Returns its send-time record. The transport gives no send
    /// time here; of two packets sharing the number, the older (handshake) one is taken.
    pub fn on_packet_lost(&mut self, pn: u64) -> Option<SentPacket> {
        let p = match self.aliased.iter().position(|(n, _)| *n == pn) {
            Some(i) => self.aliased.swap_remove(i).1,
            None => self.in_flight.remove(&pn)?,
        };
        self.inflight_bytes -= p.size;
        self.lost += p.size;
        self.newly_lost += p.size;
        Some(p)
    }

    /// Forget the oldest outstanding packets until at most `max_inflight` bytes remain.
    ///
    /// For reconciling with the transport's own count: QUIC drops packets silently when it
    /// discards a packet-number space (Initial, Handshake) or loses an MTU probe, and those
    /// are the oldest records we hold.
    pub fn trim_oldest_to(&mut self, max_inflight: u64) {
        while self.inflight_bytes > max_inflight {
            // Packets set aside under a reused number are older than any that reused it.
            if let Some(i) = (0..self.aliased.len()).min_by_key(|&i| (self.aliased[i].1.send_time, self.aliased[i].0)) {
                let (_, p) = self.aliased.swap_remove(i);
                self.inflight_bytes -= p.size;
                continue;
            }
            let Some((&pn, _)) = self.in_flight.iter().min_by_key(|(pn, p)| (p.send_time, **pn)) else {
                break;
            };
            let p = self.in_flight.remove(&pn).expect("just found");
            self.inflight_bytes -= p.size;
        }
    }

    /// §4.1.2.3 `GenerateRateSample`, once per ACK batch. `None` when no packet with a
    /// send-time record was acknowledged in the batch.
    pub fn generate(&mut self) -> Option<RateSample> {
        self.ack_receipt = None;
        // The app-limited phase ends once everything in flight when it began is delivered.
        if self.app_limited_until != 0 && self.delivered > self.app_limited_until {
            self.app_limited_until = 0;
        }
        let p = self.newest.take()?;
        let delivered_time = self.delivered_time?;
        let newly_acked = std::mem::take(&mut self.newly_acked);
        let newly_lost = std::mem::take(&mut self.newly_lost);
        let rtt = self.newest_rtt;

        let send_elapsed = p.send_time.saturating_duration_since(p.first_send_time);
        let ack_elapsed = delivered_time.saturating_duration_since(p.delivered_time);
        let interval = send_elapsed.max(ack_elapsed);
        let delivered = self.delivered - p.delivered;
        // The draft marks samples with interval < min RTT invalid. Timed at ACK arrivals that
        // cannot happen: ack_elapsed ≥ this packet's RTT ≥ the min RTT, since its
        // delivered_time was taken no later than its send time. Timed at the peer's receipts
        // the ACK phase can be shorter by the ACK's reported delay, but never the send phase,
        // which `interval` also covers: the sample stays at most the rate the flight was sent
        // at (§4.1.1.2.4), as against compressed ACKs. Only an empty interval is rejected.
        let delivery_rate = if !interval.is_zero() { delivered as f64 / interval.as_secs_f64() } else { 0.0 };
        Some(RateSample {
            delivery_rate,
            delivered,
            interval,
            send_elapsed,
            ack_elapsed,
            is_app_limited: p.is_app_limited,
            prior_delivered: p.delivered,
            rtt,
            tx_in_flight: p.tx_in_flight,
            lost: self.lost - p.lost,
            newly_acked,
            newly_lost,
            ecn_delivered: self.ecn_delivered - p.ecn_delivered,
            ce_delivered: self.ce_delivered - p.ce_delivered,
        })
    }
}
