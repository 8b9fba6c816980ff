//! Seeing inside a QUIC sender: a controller wrapper that passes every call through to the real
//! controller unchanged and records what the connection's own statistics do not carry (the
//! latest and minimum RTT next to the smoothed one, bytes in flight, bytes acknowledged), for the
//! sampler to read at its interval.
//!
//! The wrapper forwards `metrics()` untouched, so the pacer still follows the wrapped
//! controller's pacing rate; it adds two relaxed atomic stores per acknowledgement batch.

use std::any::Any;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use noq::congestion::{Controller, ControllerFactory, ControllerMetrics};
use noq_proto::RttEstimator;

/// What a sending connection's controller last saw, shared with the sampler.
#[derive(Debug, Default)]
pub(crate) struct Probe {
    latest_rtt_us: AtomicU64,
    min_rtt_us: AtomicU64,
    smoothed_rtt_us: AtomicU64,
    /// Mean deviation of the RTT samples (RFC 6298's RTTVAR, what the write-up plotted around
    /// the mean): noq keeps its own but does not expose it.
    rttvar_us: AtomicU64,
    in_flight: AtomicU64,
    acked_bytes: AtomicU64,
    app_limited: AtomicBool,
    /// Set once a controller was built from the factory: the connection really used it.
    built: AtomicBool,
    /// How old each ACK batch's timestamp was when the controller got it.
    stamp_age: StampAges,
}

/// A histogram of ACK-stamp ages: 50 µs buckets up to 20 ms, the last one open-ended. The
/// stamp is the kernel's receive time (patched noq, `vendor/noq/PATCH.md`); its age when the
/// controller runs is how late the ACK is processed, the error a wake-up's clock reading had.
#[derive(Debug)]
struct StampAges([AtomicU64; STAMP_BUCKETS]);

const STAMP_BUCKET_US: u64 = 50;
const STAMP_BUCKETS: usize = 401;

impl Default for StampAges {
    fn default() -> Self {
        StampAges(std::array::from_fn(|_| AtomicU64::new(0)))
    }
}

impl StampAges {
    fn record(&self, age: Duration) {
        let i = ((age.as_micros() as u64) / STAMP_BUCKET_US).min(STAMP_BUCKETS as u64 - 1) as usize;
        self.0[i].fetch_add(1, Ordering::Relaxed);
    }

    /// The `q` quantile's bucket's upper edge, µs; `None` before any ACK.
    fn quantile_us(&self, q: f64) -> Option<u32> {
        let counts: Vec<u64> = self.0.iter().map(|c| c.load(Ordering::Relaxed)).collect();
        let total: u64 = counts.iter().sum();
        if total == 0 {
            return None;
        }
        let rank = ((total as f64 * q).ceil() as u64).max(1);
        let mut seen = 0;
        let i = counts.iter().position(|c| {
            seen += c;
            seen >= rank
        })?;
        Some(((i as u64 + 1) * STAMP_BUCKET_US) as u32)
    }
}

/// One reading of a [`Probe`].
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct ProbeReading {
    pub latest_rtt: Duration,
    pub min_rtt: Duration,
    pub smoothed_rtt: Duration,
    pub rttvar: Duration,
    pub in_flight: u64,
    pub acked_bytes: u64,
    pub app_limited: bool,
    pub ack_stamp_age_p50_us: Option<u32>,
    pub ack_stamp_age_p99_us: Option<u32>,
}

impl Probe {
    pub(crate) fn read(&self) -> ProbeReading {
        let us = |a: &AtomicU64| Duration::from_micros(a.load(Ordering::Relaxed));
        ProbeReading {
            latest_rtt: us(&self.latest_rtt_us),
            min_rtt: us(&self.min_rtt_us),
            smoothed_rtt: us(&self.smoothed_rtt_us),
            rttvar: us(&self.rttvar_us),
            in_flight: self.in_flight.load(Ordering::Relaxed),
            acked_bytes: self.acked_bytes.load(Ordering::Relaxed),
            app_limited: self.app_limited.load(Ordering::Relaxed),
            ack_stamp_age_p50_us: self.stamp_age.quantile_us(0.5),
            ack_stamp_age_p99_us: self.stamp_age.quantile_us(0.99),
        }
    }

    pub(crate) fn was_built(&self) -> bool {
        self.built.load(Ordering::Relaxed)
    }
}

/// Builds the wrapped factory's controllers inside an [`Observed`] reporting to `probe`.
pub(crate) struct ObservedFactory {
    pub inner: Arc<dyn ControllerFactory + Send + Sync>,
    pub probe: Arc<Probe>,
}

impl ControllerFactory for ObservedFactory {
    fn build(self: Arc<Self>, now: Instant, current_mtu: u16) -> Box<dyn Controller> {
        self.probe.built.store(true, Ordering::Relaxed);
        Box::new(Observed { inner: self.inner.clone().build(now, current_mtu), probe: self.probe.clone() })
    }
}

/// A controller that reports to a [`Probe`] and otherwise is the controller it wraps.
#[derive(Debug)]
pub(crate) struct Observed {
    pub inner: Box<dyn Controller>,
    probe: Arc<Probe>,
}

impl Controller for Observed {
    fn on_sent(&mut self, now: Instant, bytes: u64, largest_pn: u64) {
        self.inner.on_sent(now, bytes, largest_pn)
    }
    fn on_packet_sent(&mut self, now: Instant, bytes: u16, pn: u64) {
        self.inner.on_packet_sent(now, bytes, pn)
    }
    fn on_cwnd_limited(&mut self) {
        self.inner.on_cwnd_limited()
    }
    fn on_ack(&mut self, now: Instant, sent: Instant, bytes: u64, pn: u64, app_limited: bool, rtt: &RttEstimator) {
        self.probe.acked_bytes.fetch_add(bytes, Ordering::Relaxed);
        let latest = now.saturating_duration_since(sent).as_micros() as u64;
        let smoothed = rtt.get().as_micros() as u64;
        let var = self.probe.rttvar_us.load(Ordering::Relaxed);
        self.probe.rttvar_us.store((3 * var + smoothed.abs_diff(latest)) / 4, Ordering::Relaxed);
        self.probe.latest_rtt_us.store(latest, Ordering::Relaxed);
        self.probe.min_rtt_us.store(rtt.min().as_micros() as u64, Ordering::Relaxed);
        self.probe.smoothed_rtt_us.store(smoothed, Ordering::Relaxed);
        self.inner.on_ack(now, sent, bytes, pn, app_limited, rtt)
    }
    fn on_end_acks(&mut self, now: Instant, in_flight: u64, app_limited: bool, largest_packet_num_acked: Option<u64>) {
        self.probe.stamp_age.record(Instant::now().saturating_duration_since(now));
        self.probe.in_flight.store(in_flight, Ordering::Relaxed);
        self.probe.app_limited.store(app_limited, Ordering::Relaxed);
        self.inner.on_end_acks(now, in_flight, app_limited, largest_packet_num_acked)
    }
    fn on_congestion_event(&mut self, now: Instant, sent: Instant, is_persistent_congestion: bool, is_ecn: bool, lost_bytes: u64, largest_lost_pn: u64) {
        self.inner.on_congestion_event(now, sent, is_persistent_congestion, is_ecn, lost_bytes, largest_lost_pn)
    }
    fn on_packet_lost(&mut self, lost_bytes: u16, pn: u64, now: Instant) {
        self.inner.on_packet_lost(lost_bytes, pn, now)
    }
    fn ecn_codepoint(&self) -> noq_proto::EcnCodepoint {
        self.inner.ecn_codepoint()
    }

    fn on_ecn_feedback(&mut self, now: Instant, ect_packets: u64, ce_packets: u64) {
        self.inner.on_ecn_feedback(now, ect_packets, ce_packets)
    }

    fn on_spurious_congestion_event(&mut self) {
        self.inner.on_spurious_congestion_event()
    }
    fn on_mtu_update(&mut self, new_mtu: u16) {
        self.inner.on_mtu_update(new_mtu)
    }
    fn on_ack_frequency_update(&mut self, ack_eliciting_threshold: u64, requested_max_ack_delay: Duration) {
        self.inner.on_ack_frequency_update(ack_eliciting_threshold, requested_max_ack_delay)
    }
    fn window(&self) -> u64 {
        self.inner.window()
    }
    fn metrics(&self) -> ControllerMetrics {
        self.inner.metrics()
    }
    fn clone_box(&self) -> Box<dyn Controller> {
        Box::new(Observed { inner: self.inner.clone_box(), probe: self.probe.clone() })
    }
    fn initial_window(&self) -> u64 {
        self.inner.initial_window()
    }
    fn into_any(self: Box<Self>) -> Box<dyn Any> {
        self
    }
}
