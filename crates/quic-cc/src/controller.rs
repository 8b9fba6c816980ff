//! The QUIC glue: `noq_proto::congestion::{Controller, ControllerFactory}` for [`Bbr`].
//!
//! noq calls, per packet: `on_packet_sent` (ack-eliciting packets only), `on_ack`, and
//! `on_packet_lost`; per batch: `on_end_acks` after the acks of one ACK frame and
//! `on_congestion_event` after the losses it revealed. BBR's RTT samples are per packet
//! (ACK time minus send time, §4.2), so the `RttEstimator` argument is not needed — which
//! also lets tests drive the controller without one (noq offers no public constructor).

use std::any::Any;
use std::sync::Arc;
use std::time::{Duration, Instant};

use noq_proto::congestion::{Controller, ControllerFactory, ControllerMetrics};
use noq_proto::{EcnCodepoint, RttEstimator};

use crate::bbr::{Bbr, BbrParams, BbrVersion};
use crate::telemetry::Telemetry;

/// Builds one [`Bbr`] per path; give each connection its own factory (and `Telemetry`).
#[derive(Debug)]
pub struct BbrFactory {
    version: BbrVersion,
    params: BbrParams,
    telemetry: Telemetry,
    seed: u64,
}

impl BbrFactory {
    /// Controllers whose probe randomness starts from a fixed seed (see [`Bbr::new`]).
    pub fn new(version: BbrVersion, telemetry: Telemetry) -> Arc<Self> {
        Self::with_seed(version, telemetry, 0)
    }
    /// Controllers whose probe randomness is drawn from `seed` (see [`Bbr::with_seed`]); give
    /// each connection its own.
    pub fn with_seed(version: BbrVersion, telemetry: Telemetry, seed: u64) -> Arc<Self> {
        Self::with_params(version, BbrParams::for_version(version), telemetry, seed)
    }
    /// As [`BbrFactory::with_seed`], with every constant given (test-only defects, see
    /// [`BbrParams::with_test_defects`]).
    pub fn with_params(version: BbrVersion, params: BbrParams, telemetry: Telemetry, seed: u64) -> Arc<Self> {
        Arc::new(Self { version, params, telemetry, seed })
    }
    pub fn version(&self) -> BbrVersion {
        self.version
    }
}

impl ControllerFactory for BbrFactory {
    fn build(self: Arc<Self>, now: Instant, current_mtu: u16) -> Box<dyn Controller> {
        Box::new(Bbr::with_params(self.version, self.params, current_mtu, now, self.telemetry.clone(), self.seed))
    }
}

impl Controller for Bbr {
    fn on_packet_sent(&mut self, now: Instant, bytes: u16, pn: u64) {
        Bbr::on_packet_sent(self, now, u64::from(bytes), pn);
    }

    fn on_cwnd_limited(&mut self) {
        Bbr::on_cwnd_limited(self);
    }

    fn on_ack(&mut self, now: Instant, sent: Instant, _bytes: u64, pn: u64, _app_limited: bool, rtt: &RttEstimator) {
        // noq's `drain_lost_packets`: a lost packet is forgotten 2 PTOs after it was sent.
        self.on_loss_memory(2 * rtt.pto_base());
        self.on_packet_acked(now, sent, pn);
    }

    fn on_ack_delay(&mut self, now: Instant, ack_delay: Duration) {
        Bbr::on_ack_delay(self, now, ack_delay);
    }

    fn on_end_acks(&mut self, now: Instant, in_flight: u64, app_limited: bool, _largest_packet_num_acked: Option<u64>) {
        // noq counts every packet in flight, we only the ack-eliciting ones it reports; more
        // on our side means packets noq dropped without telling us (see `trim_oldest_to`).
        self.sampler.trim_oldest_to(in_flight);
        if app_limited {
            self.on_app_limited();
        }
        self.on_ack_batch_end(now);
    }

    fn on_packet_lost(&mut self, _lost_bytes: u16, pn: u64, now: Instant) {
        Bbr::on_packet_lost(self, now, pn);
    }

    fn on_congestion_event(&mut self, now: Instant, _sent: Instant, is_persistent_congestion: bool, is_ecn: bool, _lost_bytes: u64, _largest_lost_pn: u64) {
        // ECN-CE is not a loss: the marks are answered from their counts, `on_ecn_feedback`
        // (tcp_bbr.c v3's ECN response; draft-ietf-ccwg-bbr-06 §3.7).
        if !is_ecn {
            Bbr::on_congestion_event(self, now, is_persistent_congestion);
        }
    }

    fn ecn_codepoint(&self) -> EcnCodepoint {
        if self.params().ecn_l4s {
            EcnCodepoint::Ect1
        } else {
            EcnCodepoint::Ect0
        }
    }

    fn on_ecn_feedback(&mut self, now: Instant, ect_packets: u64, ce_packets: u64) {
        Bbr::on_ecn_feedback(self, now, ect_packets, ce_packets);
    }

    fn on_spurious_congestion_event(&mut self) {
        let now = self.last_event_time();
        self.on_spurious_loss(now);
    }

    fn on_mtu_update(&mut self, new_mtu: u16) {
        Bbr::on_mtu_update(self, new_mtu);
    }

    fn window(&self) -> u64 {
        self.cwnd()
    }

    fn metrics(&self) -> ControllerMetrics {
        let mut m = ControllerMetrics::default();
        m.congestion_window = self.cwnd();
        m.ssthresh = self.ssthresh();
        m.pacing_rate = Some(self.pacing_rate().max(1));
        m.send_quantum = Some(self.send_quantum());
        m.pacer_burst = Some(self.pacer_burst());
        m.bandwidth_estimate = (self.bw() > 0.0).then(|| (self.bw() * 8.0).round() as u64);
        m
    }

    fn clone_box(&self) -> Box<dyn Controller> {
        Box::new(self.clone())
    }

    fn initial_window(&self) -> u64 {
        Bbr::initial_cwnd(self)
    }

    fn into_any(self: Box<Self>) -> Box<dyn Any> {
        self
    }
}
