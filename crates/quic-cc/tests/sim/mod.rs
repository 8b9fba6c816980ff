//! A deterministic, virtual-clock bottleneck that drives the controller the way noq does.
//!
//! One bulk sender (always has data) → drop-tail FIFO at `rate` with `buffer` bytes →
//! propagation `rtt` → per-packet ACKs back. Optional random loss before the queue. Loss
//! detection follows RFC 9002 (packet threshold 3, time threshold 9/8 RTT, plus a PTO that
//! declares everything outstanding lost). Pacing is a token bucket of one send quantum
//! refilled at the controller's pacing rate. Call order per ACK mirrors noq:
//! `on_ack` per packet, `on_end_acks`, then `on_packet_lost` per packet and one
//! `on_congestion_event`.

#![allow(dead_code)]

use std::collections::{BTreeMap, VecDeque};
use std::time::{Duration, Instant};

use ccbench_quic_cc::EcnCodepoint;
use ccbench_quic_cc::{Bbr, BbrFactory, BbrParams, BbrSnapshot, BbrState, BbrVersion, Controller, ControllerFactory, Cubic, Prague, StateChange, Telemetry};

pub const MSS: u64 = 1200;

/// A controller the simulator can drive: noq's trait, plus the per-packet ACK call that noq
/// makes with an `RttEstimator` (which only noq can construct).
pub trait SimController: Controller + Sized {
    fn acked(&mut self, now: Instant, sent: Instant, bytes: u64, pn: u64);
    /// BBR's state, for the state-change bookkeeping; `None` for other controllers.
    fn bbr_state(&self) -> Option<BbrState> {
        None
    }
    /// The application had nothing to send (only BBR's sampler marks it).
    fn app_limited(&mut self) {}
}

impl SimController for Bbr {
    fn acked(&mut self, now: Instant, sent: Instant, _bytes: u64, pn: u64) {
        self.on_packet_acked(now, sent, pn);
    }
    fn bbr_state(&self) -> Option<BbrState> {
        Some(self.state())
    }
    fn app_limited(&mut self) {
        self.on_app_limited();
    }
}

impl SimController for Cubic {
    fn acked(&mut self, now: Instant, sent: Instant, bytes: u64, pn: u64) {
        self.on_packet_acked(now, sent, bytes, pn, false);
    }
}

impl SimController for Prague {
    fn acked(&mut self, now: Instant, sent: Instant, bytes: u64, _pn: u64) {
        self.on_packet_acked(now, sent, bytes, false);
    }
}

/// The pacer's burst for a controller that sets a pacing rate.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PacerBurst {
    /// The controller's send quantum (§5.6.3 for BBR): the draft's pacer.
    SendQuantum,
    /// noq's own when the controller asks for nothing smaller: 2 ms at the rate, at least 10
    /// datagrams, at most 10 ms (noq-proto `pacing.rs`, `rate_capacity`).
    Noq,
    /// What the controller asks noq for (`ControllerMetrics::pacer_burst`, a patch of ours),
    /// else its send quantum: what the bench's QUIC sender does.
    Controller,
}

#[derive(Debug, Clone, Copy)]
pub struct Link {
    pub rate_bps: u64,
    pub rtt: Duration,
    pub buffer_bytes: u64,
    pub loss: f64,
    pub seed: u64,
    /// A token bucket before the queue (`--policer`): its rate (bits/s) and depth (bytes). A
    /// packet that finds fewer tokens than its size is dropped.
    pub policer: Option<(u64, u64)>,
}

impl Link {
    pub fn new(rate_mbps: f64, rtt_ms: u64, buffer_bdp: f64) -> Self {
        let rate_bps = (rate_mbps * 1e6) as u64;
        let rtt = Duration::from_millis(rtt_ms);
        let bdp = rate_bps as f64 / 8.0 * rtt.as_secs_f64();
        Self { rate_bps, rtt, buffer_bytes: (bdp * buffer_bdp) as u64, loss: 0.0, seed: 1, policer: None }
    }
    pub fn with_policer(mut self, rate_bps: u64, burst_bytes: u64) -> Self {
        self.policer = Some((rate_bps, burst_bytes));
        self
    }
    pub fn with_loss(mut self, loss: f64) -> Self {
        self.loss = loss;
        self
    }
    pub fn bytes_per_sec(&self) -> f64 {
        self.rate_bps as f64 / 8.0
    }
    pub fn bdp(&self) -> f64 {
        self.bytes_per_sec() * self.rtt.as_secs_f64()
    }
}

#[derive(Debug, Clone, Copy)]
struct InFlight {
    sent: Duration,
    size: u64,
}

#[derive(Debug, Clone, Copy)]
struct Ack {
    arrive: Duration,
    /// How long the receiver held it after the packet arrived (QUIC's ACK Delay field).
    ack_delay: Duration,
    pn: u64,
    /// Marked CE at the bottleneck.
    ce: bool,
}

/// One 10 ms sample, as the sampler thread of the real bench takes it.
#[derive(Debug, Clone)]
pub struct Sample {
    pub t: Duration,
    pub snap: BbrSnapshot,
}

pub struct Sim<C: SimController = Bbr> {
    pub link: Link,
    pub bbr: C,
    pub telemetry: Telemetry,
    t0: Instant,
    pub now: Duration,
    next_pn: u64,
    link_free_at: Duration,
    acks: VecDeque<Ack>,
    outstanding: BTreeMap<u64, InFlight>,
    largest_acked: Option<u64>,
    last_progress: Duration,
    srtt: Option<Duration>,
    latest_rtt: Duration,
    tokens: f64,
    tokens_at: Duration,
    rng: u64,
    /// Drop the next N packets entering the bottleneck (a forced loss burst).
    pub force_drops: u32,
    /// Packet numbers advance by this much per packet: 2 stands for an ACK-only packet (which
    /// the controller never sees) between every two data packets.
    pub pn_stride: u64,
    /// ACKs are processed in batches: one batch every this often, all stamped with the time
    /// the batch was taken (a receive loop's wake-up), not when each ACK arrived. Zero: each
    /// ACK when it arrives.
    pub ack_batch_interval: Duration,
    /// How much earlier than its processing an ACK batch is stamped (a receive loop that reads
    /// `now` once, then drains the socket): each batch's time is its processing time minus
    /// this, and the batch includes what arrived up to the processing time.
    pub ack_stamp_lag: Duration,
    /// Each ACK batch's stamp is its processing time minus a random lag up to this (uniform,
    /// stamps kept in order): the scatter of a receive loop's wake-ups on a busy machine.
    pub ack_stamp_jitter: Duration,
    last_stamp: Duration,
    next_ack_batch: Duration,
    /// The receiver acknowledges only when it wakes, and its wake-ups are spaced by a random
    /// 0 to this (uniform): each packet's ACK leaves at the first wake-up at or after the
    /// packet arrived and reports the wait as its ACK Delay, which the controller is given
    /// (`Controller::on_ack_delay`) as noq gives it: a userspace receiver on a busy host. Zero:
    /// each ACK leaves as its packet arrives.
    pub rx_wake_jitter: Duration,
    rx_next_wake: Duration,
    /// Stop `run_for` right after the ACK batch that changed the state, before that ACK's
    /// loss detection: a test can then act on the controller exactly at the transition.
    pub pause_on_state_change: bool,
    /// How much the pacer releases at once for a controller with a pacing rate.
    pub pacer: PacerBurst,
    paused: bool,
    pub samples: Vec<Sample>,
    next_sample: Duration,
    /// Snapshot right after each ACK batch that changed the state: the state's first view.
    pub on_entry: Vec<(Duration, BbrSnapshot)>,
    pub rtt_samples: Vec<(Duration, Duration)>,
    pub events: Vec<StateChange>,
    pub delivered: u64,
    pub sent_bytes: u64,
    /// An application writing no faster than this (bit/s): past it the sender is app-limited.
    pub app_rate_bps: Option<u64>,
    /// The policer's tokens (bytes) and when they were counted.
    policer_tokens: Option<(f64, Duration)>,
    pub dropped: u64,
    /// Bytes declared lost so far (cumulative): what a QUIC sender's series counts as lost.
    pub lost_bytes: u64,
    /// A step ECN marker at the bottleneck (an L4S queue's, RFC 9332 §5.1's 1 ms step): an
    /// ECN-capable packet that finds at least this much queueing delay is marked CE instead
    /// of being left alone; `None`, no marking. ECN feedback reaches the controller after each
    /// ACK batch's loss detection, as in noq.
    pub ce_threshold: Option<Duration>,
    /// Each ECN-capable packet is also marked CE with this probability, whatever the queue:
    /// the coupled marking of RFC 9332's L queue (`p_CL = k·p'`) held at one value, so a
    /// controller's response function can be read off (RFC 9332 §2.1, Appendix C.2 eq. (6)).
    pub ce_prob: f64,
    /// Queueing delay each packet met at the bottleneck, with its arrival time.
    pub queue_delays: Vec<(Duration, Duration)>,
    pub ce_marked: u64,
}

impl Sim<Bbr> {
    pub fn new(version: BbrVersion, link: Link) -> Self {
        Self::new_seeded(version, link, 0)
    }

    /// As [`Sim::new`], with the controller's parameters `params` (a test-only defect set).
    pub fn with_params(version: BbrVersion, params: BbrParams, link: Link) -> Self {
        Self::with_params_seeded(version, params, link, 0)
    }

    /// As [`Sim::new`], the controller's probe randomness drawn from `seed`.
    pub fn new_seeded(version: BbrVersion, link: Link, seed: u64) -> Self {
        Self::with_params_seeded(version, BbrParams::for_version(version), link, seed)
    }

    fn with_params_seeded(version: BbrVersion, params: BbrParams, link: Link, seed: u64) -> Self {
        let telemetry = Telemetry::default();
        let t0 = Instant::now();
        // Built and read back as the QUIC helper does: factory, then downcast.
        let controller = BbrFactory::with_params(version, params, telemetry.clone(), seed).build(t0, MSS as u16);
        let bbr = *controller.into_any().downcast::<Bbr>().expect("a Bbr");
        Sim::with_controller(bbr, telemetry, t0, link)
    }
}

impl<C: SimController> Sim<C> {
    /// A simulation of `controller`, built at `t0`; `telemetry` is what it publishes to (a
    /// fresh one for controllers that publish nothing).
    pub fn with_controller(controller: C, telemetry: Telemetry, t0: Instant, link: Link) -> Self {
        let bbr = controller;
        Self {
            link,
            bbr,
            telemetry,
            t0,
            now: Duration::ZERO,
            next_pn: 0,
            link_free_at: Duration::ZERO,
            acks: VecDeque::new(),
            outstanding: BTreeMap::new(),
            largest_acked: None,
            last_progress: Duration::ZERO,
            srtt: None,
            latest_rtt: link.rtt,
            tokens: 0.0,
            tokens_at: Duration::ZERO,
            rng: link.seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1,
            force_drops: 0,
            pn_stride: 1,
            ack_batch_interval: Duration::ZERO,
            ack_stamp_lag: Duration::ZERO,
            ack_stamp_jitter: Duration::ZERO,
            last_stamp: Duration::ZERO,
            next_ack_batch: Duration::ZERO,
            rx_wake_jitter: Duration::ZERO,
            rx_next_wake: Duration::ZERO,
            pause_on_state_change: false,
            pacer: PacerBurst::SendQuantum,
            paused: false,
            samples: Vec::new(),
            next_sample: Duration::ZERO,
            on_entry: Vec::new(),
            rtt_samples: Vec::new(),
            events: Vec::new(),
            delivered: 0,
            sent_bytes: 0,
            app_rate_bps: None,
            policer_tokens: None,
            dropped: 0,
            lost_bytes: 0,
            ce_threshold: None,
            ce_prob: 0.0,
            queue_delays: Vec::new(),
            ce_marked: 0,
        }
    }

    fn at(&self, d: Duration) -> Instant {
        self.t0 + d
    }

    fn random(&mut self) -> f64 {
        self.rng ^= self.rng << 13;
        self.rng ^= self.rng >> 7;
        self.rng ^= self.rng << 17;
        (self.rng >> 11) as f64 / (1u64 << 53) as f64
    }

    fn inflight(&self) -> u64 {
        self.outstanding.values().map(|p| p.size).sum()
    }

    fn pto(&self) -> Duration {
        (3 * self.srtt.unwrap_or(self.link.rtt)).max(Duration::from_millis(20))
    }

    /// The pacer's rate (bytes/s) and burst: the controller's own, else noq's for a window
    /// controller (noq-proto `pacing.rs`: 5/4 of cwnd per smoothed RTT, bursts of 2 ms
    /// clamped to 10–256 packets).
    fn pacing(&self) -> (f64, f64) {
        let m = self.bbr.metrics();
        match m.pacing_rate {
            Some(rate) => {
                let quantum = m.send_quantum.unwrap_or(2 * MSS) as f64;
                let rate = rate as f64;
                let burst = match self.pacer {
                    PacerBurst::SendQuantum => quantum,
                    PacerBurst::Noq => (rate * 2e-3).clamp(10.0 * MSS as f64, 256.0 * MSS as f64).min((rate * 10e-3).max(MSS as f64)),
                    PacerBurst::Controller => m.pacer_burst.map_or(quantum, |b| b as f64),
                };
                (rate, burst)
            }
            None => {
                let srtt = self.srtt.unwrap_or(Duration::from_millis(333)).as_secs_f64();
                let rate = 1.25 * self.bbr.window() as f64 / srtt;
                (rate, (rate * 2e-3).clamp(10.0 * MSS as f64, 256.0 * MSS as f64))
            }
        }
    }

    fn refill(&mut self) {
        let (rate, cap) = self.pacing();
        let dt = (self.now - self.tokens_at).as_secs_f64();
        self.tokens = (self.tokens + rate * dt).min(cap);
        self.tokens_at = self.now;
    }

    /// Send while cwnd and pacing allow; returns when the next send could happen.
    fn send_what_we_can(&mut self) -> Option<Duration> {
        loop {
            if let Some(bps) = self.app_rate_bps {
                let allowed = self.now.as_secs_f64() * bps as f64 / 8.0 + MSS as f64;
                if self.sent_bytes as f64 + MSS as f64 > allowed {
                    self.bbr.app_limited();
                    let due = (self.sent_bytes + MSS) as f64 * 8.0 / bps as f64;
                    return Some(Duration::from_secs_f64(due).max(self.now + Duration::from_micros(1)));
                }
            }
            if self.inflight() + MSS > self.bbr.window() {
                Controller::on_cwnd_limited(&mut self.bbr);
                return None;
            }
            self.refill();
            if self.tokens < MSS as f64 {
                let rate = self.pacing().0;
                let wait = (MSS as f64 - self.tokens) / rate;
                return Some(self.now + Duration::from_secs_f64(wait) + Duration::from_nanos(1));
            }
            self.tokens -= MSS as f64;
            self.send_one();
        }
    }

    fn send_one(&mut self) {
        let pn = self.next_pn;
        self.next_pn += self.pn_stride;
        let now = self.at(self.now);
        Controller::on_packet_sent(&mut self.bbr, now, MSS as u16, pn);
        self.outstanding.insert(pn, InFlight { sent: self.now, size: MSS });
        self.sent_bytes += MSS;
        if self.force_drops > 0 {
            self.force_drops -= 1;
            self.dropped += 1;
            return;
        }
        if self.link.loss > 0.0 && self.random() < self.link.loss {
            self.dropped += 1;
            return;
        }
        if let Some((rate, burst)) = self.link.policer {
            let (tokens, at) = self.policer_tokens.unwrap_or((burst as f64, self.now));
            let tokens = (tokens + (self.now - at).as_secs_f64() * rate as f64 / 8.0).min(burst as f64);
            if tokens < MSS as f64 {
                self.policer_tokens = Some((tokens, self.now));
                self.dropped += 1;
                return;
            }
            self.policer_tokens = Some((tokens - MSS as f64, self.now));
        }
        let ser = Duration::from_secs_f64(MSS as f64 * 8.0 / self.link.rate_bps as f64);
        let queued_time = self.link_free_at.saturating_sub(self.now);
        let queued_bytes = queued_time.as_secs_f64() * self.link.bytes_per_sec();
        if queued_bytes + MSS as f64 > self.link.buffer_bytes as f64 {
            self.dropped += 1; // drop-tail
            return;
        }
        self.queue_delays.push((self.now, queued_time));
        let ect = Controller::ecn_codepoint(&self.bbr) != EcnCodepoint::Ce;
        let ce = ect && (self.ce_threshold.is_some_and(|th| queued_time >= th) || (self.ce_prob > 0.0 && self.random() < self.ce_prob));
        self.ce_marked += u64::from(ce);
        let depart = self.link_free_at.max(self.now) + ser;
        self.link_free_at = depart;
        let mut acked_at = depart;
        if !self.rx_wake_jitter.is_zero() {
            while self.rx_next_wake < depart {
                let gap = self.rx_wake_jitter.mul_f64(self.random());
                self.rx_next_wake += gap + Duration::from_nanos(1);
            }
            acked_at = self.rx_next_wake;
        }
        self.acks.push_back(Ack { arrive: acked_at + self.link.rtt, ack_delay: acked_at - depart, pn, ce });
    }

    fn process_acks(&mut self) {
        if !self.ack_batch_interval.is_zero() {
            if self.now < self.next_ack_batch {
                return;
            }
            self.next_ack_batch = self.now + self.ack_batch_interval;
        }
        if self.acks.front().is_none_or(|a| a.arrive > self.now) {
            return;
        }
        let jitter = if self.ack_stamp_jitter.is_zero() { Duration::ZERO } else { self.ack_stamp_jitter.mul_f64(self.random()) };
        let stamp = self.now.saturating_sub(self.ack_stamp_lag + jitter).max(self.last_stamp);
        self.last_stamp = stamp;
        let now = self.at(stamp);
        let state_before = self.bbr.bbr_state();
        // The batch's newest ACK says how long the receiver held it, as noq reports an ACK
        // frame's delay before its packets (a newer largest packet: always here).
        if let Some(newest) = self.acks.iter().take_while(|a| a.arrive <= self.now).last() {
            let delay = newest.ack_delay;
            Controller::on_ack_delay(&mut self.bbr, now, delay);
        }
        let mut any = false;
        let (mut ect, mut ce, mut ce_sent) = (0u64, 0u64, Duration::ZERO);
        while self.acks.front().is_some_and(|a| a.arrive <= self.now) {
            let ack = self.acks.pop_front().unwrap();
            let Some(p) = self.outstanding.remove(&ack.pn) else {
                continue; // already declared lost (spurious loss)
            };
            any = true;
            if ack.ce {
                ce += 1;
                ce_sent = ce_sent.max(p.sent);
            } else {
                ect += 1;
            }
            let rtt = stamp.saturating_sub(p.sent);
            self.latest_rtt = rtt;
            self.srtt = Some(self.srtt.map_or(rtt, |s| (s * 7 + rtt) / 8));
            self.rtt_samples.push((self.now, rtt));
            self.delivered += p.size;
            self.largest_acked = Some(self.largest_acked.map_or(ack.pn, |l| l.max(ack.pn)));
            self.bbr.acked(now, self.at(p.sent), p.size, ack.pn);
        }
        if !any {
            return;
        }
        self.last_progress = self.now;
        let inflight = self.inflight();
        Controller::on_end_acks(&mut self.bbr, now, inflight, false, self.largest_acked);
        if self.pause_on_state_change && self.bbr.bbr_state() != state_before {
            // This ACK's losses are found at the next one.
            self.paused = true;
            return;
        }
        // RFC 9002 §6.1 loss detection.
        let largest = self.largest_acked.unwrap();
        let threshold = self.srtt.unwrap().max(self.latest_rtt) * 9 / 8;
        let lost: Vec<u64> =
            self.outstanding.range(..largest).filter(|(pn, p)| **pn + 3 <= largest || p.sent + threshold <= self.now).map(|(pn, _)| *pn).collect();
        self.declare_lost(&lost);
        // RFC 9000 §13.4.2: the ACK's ECN counts, then a congestion event if CE grew (noq's
        // `process_ecn`, after loss detection).
        if self.ce_threshold.is_some() || self.ce_prob > 0.0 {
            Controller::on_ecn_feedback(&mut self.bbr, now, ect, ce);
            if ce > 0 {
                let sent = self.at(ce_sent);
                Controller::on_congestion_event(&mut self.bbr, now, sent, false, true, 0, largest);
            }
        }
    }

    fn declare_lost(&mut self, lost: &[u64]) {
        if lost.is_empty() {
            return;
        }
        let now = self.at(self.now);
        let mut last_sent = Duration::ZERO;
        for pn in lost {
            let p = self.outstanding.remove(pn).unwrap();
            last_sent = last_sent.max(p.sent);
            self.lost_bytes += p.size;
            Controller::on_packet_lost(&mut self.bbr, p.size as u16, *pn, now);
        }
        let bytes = lost.len() as u64 * MSS;
        let sent = self.at(last_sent);
        Controller::on_congestion_event(&mut self.bbr, now, sent, false, false, bytes, lost[lost.len() - 1]);
    }

    fn record(&mut self, before: Option<BbrState>) {
        let Some(snap) = self.telemetry.snapshot() else {
            // Nothing to sample (not a BBR): only keep the sampling clock going.
            while self.next_sample <= self.now {
                self.next_sample += Duration::from_millis(10);
            }
            return;
        };
        if Some(snap.state) != before {
            self.on_entry.push((self.now, snap.clone()));
        }
        while self.next_sample <= self.now {
            self.samples.push(Sample { t: self.next_sample, snap: snap.clone() });
            self.next_sample += Duration::from_millis(10);
        }
        self.events.extend(self.telemetry.take_events());
    }

    pub fn run_for(&mut self, d: Duration) {
        let end = self.now + d;
        while self.now < end {
            let before = self.bbr.bbr_state();
            self.process_acks();
            if std::mem::take(&mut self.paused) {
                self.record(before);
                return;
            }
            if !self.outstanding.is_empty() && self.now >= self.last_progress + self.pto() {
                // Probe timeout: everything outstanding is gone.
                let all: Vec<u64> = self.outstanding.keys().copied().collect();
                self.declare_lost(&all);
                self.last_progress = self.now;
            }
            let next_send = self.send_what_we_can();
            self.record(before);
            let mut next = end.min(self.next_sample);
            if let Some(a) = self.acks.front() {
                next = next.min(a.arrive.max(self.next_ack_batch));
            }
            if let Some(s) = next_send {
                next = next.min(s);
            }
            if !self.outstanding.is_empty() {
                next = next.min(self.last_progress + self.pto());
            }
            self.now = next.max(self.now + Duration::from_nanos(1)).min(end);
        }
    }

    // ------------------------------------------------------------- readings

    pub fn samples_between(&self, from: Duration, to: Duration) -> impl Iterator<Item = &Sample> {
        self.samples.iter().filter(move |s| s.t >= from && s.t < to)
    }

    /// Goodput over [from, to) as a share of the link rate.
    pub fn utilization(&self, from: Duration, to: Duration) -> f64 {
        let at = |t: Duration| self.samples.iter().take_while(|s| s.t <= t).last().map_or(0, |s| s.snap.delivered_bytes);
        let bytes = at(to).saturating_sub(at(from)) as f64;
        bytes / (self.link.bytes_per_sec() * (to - from).as_secs_f64())
    }

    pub fn rtt_quantile(&self, from: Duration, q: f64) -> Duration {
        let mut v: Vec<Duration> = self.rtt_samples.iter().filter(|(t, _)| *t >= from).map(|(_, r)| *r).collect();
        v.sort();
        v[((v.len() - 1) as f64 * q) as usize]
    }

    pub fn transitions(&self) -> Vec<(Duration, BbrState, BbrState)> {
        self.events.iter().map(|e| (e.at - self.t0, e.from, e.to)).collect()
    }
}
