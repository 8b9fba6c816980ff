//! Logic for controlling the rate at which data is sent

use crate::connection::RttEstimator;
use crate::{Duration, EcnCodepoint, Instant};
use alloc::{boxed::Box, sync::Arc};
use core::any::Any;

mod bbr3;
mod cubic;
mod new_reno;

pub use bbr3::{Bbr3, Bbr3Config};
pub use cubic::{Cubic, CubicConfig};
pub use new_reno::{NewReno, NewRenoConfig};

/// Common interface for different congestion controllers
pub trait Controller: Send + Sync + core::fmt::Debug {
    /// One or more packets were just sent
    #[allow(unused_variables)]
    fn on_sent(&mut self, now: Instant, bytes: u64, largest_pn: u64) {}

    /// One packet was just sent
    #[allow(unused_variables)]
    fn on_packet_sent(&mut self, now: Instant, bytes: u16, pn: u64) {}

    /// The connection had data to send but was blocked by the congestion window
    ///
    /// Reports the spec's `C.is_cwnd_limited` signal to the controller: the sender fully utilized
    /// the congestion window at this point in the current round trip.
    fn on_cwnd_limited(&mut self) {}

    /// Packet deliveries were confirmed
    ///
    /// `app_limited` indicates whether the connection was blocked on outgoing
    /// application data prior to receiving these acknowledgements.
    #[allow(unused_variables)]
    fn on_ack(
        &mut self,
        now: Instant,
        sent: Instant,
        bytes: u64,
        pn: u64,
        app_limited: bool,
        rtt: &RttEstimator,
    ) {
    }

    /// ccbench patch (PATCH.md, "ACK delay"): an ACK frame that newly acknowledges its largest
    /// packet is about to be processed, and the peer says it held the ACK `ack_delay` after
    /// receiving that packet (RFC 9000 §19.3, limited to the peer's `max_ack_delay` as for the
    /// RTT, RFC 9002 §5.3). Called before that frame's `on_ack` calls, with their `now`: the
    /// peer received the packet at about `now - ack_delay` on this end's clock, which a
    /// delivery-rate sampler can take as the ACK phase's time instead of the ACK's arrival, so
    /// that a receiver's late wake-ups do not shorten or stretch the phase.
    #[allow(unused_variables)]
    fn on_ack_delay(&mut self, now: Instant, ack_delay: Duration) {}

    /// Packets are acked in batches, all with the same `now` argument. This indicates one of those
    /// batches has completed.
    #[allow(unused_variables)]
    fn on_end_acks(
        &mut self,
        now: Instant,
        in_flight: u64,
        app_limited: bool,
        largest_packet_num_acked: Option<u64>,
    ) {
    }

    /// Packets were deemed lost or marked congested
    ///
    /// `in_persistent_congestion` indicates whether all packets sent within the persistent
    /// congestion threshold period ending when the most recent packet in this batch was sent were
    /// lost.
    /// `lost_bytes` indicates how many bytes were lost. This value will be 0 for ECN triggers.
    /// `largest_lost_pn` indicates the packet number of the packet with the highest packet number
    /// in the congestion event.
    fn on_congestion_event(
        &mut self,
        now: Instant,
        sent: Instant,
        is_persistent_congestion: bool,
        is_ecn: bool,
        lost_bytes: u64,
        largest_lost_pn: u64,
    );

    /// ccbench patch: the ECN codepoint this controller's packets carry while the path
    /// validates ECN (RFC 9000 §13.4). ECT(0) by default; a scalable (L4S) controller asks for
    /// ECT(1) (RFC 9331 §4), so an L4S queue (DualPI2) classifies its packets.
    fn ecn_codepoint(&self) -> EcnCodepoint {
        EcnCodepoint::Ect0
    }

    /// ccbench patch: an in-order ACK's ECN feedback (RFC 9000 §13.4.2): how many newly
    /// acknowledged packets arrived with ECT and how many with CE. Called before the congestion
    /// event a CE increase raises, for controllers that respond to the marked fraction (DCTCP,
    /// Prague) rather than to the event alone.
    #[allow(unused_variables)]
    fn on_ecn_feedback(&mut self, now: Instant, ect_packets: u64, ce_packets: u64) {}

    /// One packet was just lost
    #[allow(unused_variables)]
    fn on_packet_lost(&mut self, lost_bytes: u16, pn: u64, now: Instant) {}

    /// Packets were incorrectly deemed lost
    ///
    /// This function is called when all packets that were deemed lost (for instance because
    /// of packet reordering) are acknowledged after the congestion event was raised.
    fn on_spurious_congestion_event(&mut self) {}

    /// The known MTU for the current network path has been updated
    fn on_mtu_update(&mut self, new_mtu: u16);

    /// The peer's ACK-frequency parameters have changed
    ///
    /// `ack_eliciting_threshold` is the number of ack-eliciting packets the peer may receive
    /// before being required to send an immediate ACK (per the QUIC ACK frequency extension).
    /// `requested_max_ack_delay` is the maximum delay we asked the peer to wait before sending
    /// an ACK when the threshold hasn't been reached.
    ///
    /// Controllers can use this to refine estimates that depend on peer ACK behavior (e.g.
    /// BBR's offload budget).
    #[allow(unused_variables)]
    fn on_ack_frequency_update(
        &mut self,
        ack_eliciting_threshold: u64,
        requested_max_ack_delay: Duration,
    ) {
    }

    /// Number of ack-eliciting bytes that may be in flight
    fn window(&self) -> u64;

    /// Retrieve implementation-specific metrics used to populate connection statistics and `qlog`
    /// traces when they are enabled. This is also used to alter the pacing of the connection with
    /// `pacing_rate` and `send_quantum`.
    fn metrics(&self) -> ControllerMetrics {
        ControllerMetrics {
            congestion_window: self.window(),
            ssthresh: None,
            pacing_rate: None,
            send_quantum: None,
            bandwidth_estimate: None,
            pacer_burst: None,
        }
    }

    /// Duplicate the controller's state
    fn clone_box(&self) -> Box<dyn Controller>;

    /// Initial congestion window
    fn initial_window(&self) -> u64;

    /// Returns Self for use in down-casting to extract implementation details
    fn into_any(self: Box<Self>) -> Box<dyn Any>;
}

/// Common congestion controller metrics used both for logging purposes
/// but also to alter the pacing of the connection with
/// `pacing_rate` and `send_quantum`
#[derive(Default)]
#[non_exhaustive]
pub struct ControllerMetrics {
    /// Congestion window (bytes)
    pub congestion_window: u64,
    /// Slow start threshold (bytes)
    pub ssthresh: Option<u64>,
    /// Pacing rate (bytes/s)
    pub pacing_rate: Option<u64>,
    /// Send Quantum (bytes) used to control the size of packet bursts
    pub send_quantum: Option<u64>,
    /// Estimated sustainable path bandwidth (bits/s).
    pub bandwidth_estimate: Option<u64>,
    /// ccbench patch: the most the pacer may release at once (bytes, at least one MTU), for a
    /// controller whose signal is a shallow queue (L4S Prague): the pacer's own burst budget
    /// (2 ms at the rate, at least 10 datagrams) is a millisecond of queue at 100 Mbit/s by
    /// itself. `None`: the pacer's budget.
    pub pacer_burst: Option<u64>,
}

/// Constructs controllers on demand
pub trait ControllerFactory {
    /// Construct a fresh `Controller`
    fn build(self: Arc<Self>, now: Instant, current_mtu: u16) -> Box<dyn Controller>;
}

const BASE_DATAGRAM_SIZE: u64 = 1200;
