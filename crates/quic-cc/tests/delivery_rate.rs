//! Known-answer tests of the delivery-rate sampler (draft-cheng-iccrg-delivery-rate-estimation,
//! draft-ietf-ccwg-bbr §4.1): rate = delivered / max(send_elapsed, ack_elapsed), i.e. the
//! lower of the send rate and the ACK rate of the flight.

use std::time::{Duration, Instant};

use ccbench_quic_cc::delivery_rate::DeliveryRateSampler;

const SIZE: u64 = 1000;

fn ms(t0: Instant, m: u64) -> Instant {
    t0 + Duration::from_millis(m)
}

/// P0 sent at 0 and acked at 10 ms: delivered = 1000, delivered_time = 10 ms, min RTT 10 ms.
fn warmed_up(t0: Instant) -> DeliveryRateSampler {
    let mut s = DeliveryRateSampler::new();
    s.on_packet_sent(t0, SIZE, 0);
    s.on_packet_acked(ms(t0, 10), 0).unwrap();
    let first = s.generate().unwrap();
    assert_eq!(first.rtt, Duration::from_millis(10));
    s
}

#[test]
fn ack_rate_bounds_the_sample_when_acks_are_slower_than_sends() {
    let t0 = Instant::now();
    let mut s = warmed_up(t0);
    // A new flight (nothing in flight): sent 1 ms apart, acked 4 ms apart.
    for (i, pn) in (1..=4).enumerate() {
        s.on_packet_sent(ms(t0, 10 + i as u64), SIZE, pn);
    }
    let mut last = None;
    for (i, pn) in (1..=4).enumerate() {
        s.on_packet_acked(ms(t0, 30 + 4 * i as u64), pn).unwrap();
        last = s.generate();
    }
    let rs = last.unwrap();
    assert_eq!(rs.delivered, 4 * SIZE);
    assert_eq!(rs.send_elapsed, Duration::from_millis(3));
    assert_eq!(rs.ack_elapsed, Duration::from_millis(32));
    assert_eq!(rs.interval, Duration::from_millis(32));
    assert!((rs.delivery_rate - 4000.0 / 0.032).abs() < 1e-6, "{}", rs.delivery_rate);
    assert_eq!(rs.newly_acked, SIZE);
}

#[test]
fn send_rate_bounds_the_sample_when_acks_arrive_compressed() {
    let t0 = Instant::now();
    let mut s = DeliveryRateSampler::new();
    for pn in 0..5 {
        s.on_packet_sent(ms(t0, pn), SIZE, pn);
    }
    s.on_packet_acked(ms(t0, 10), 0).unwrap();
    s.generate().unwrap();
    // P5 leaves at 10 ms: its flight's send phase started with P0 at 0 ms.
    s.on_packet_sent(ms(t0, 10), SIZE, 5);
    // ACK compression: P1..P5 acknowledged together at 12 ms.
    for pn in 1..=5 {
        s.on_packet_acked(ms(t0, 12), pn).unwrap();
    }
    let rs = s.generate().unwrap();
    assert_eq!(rs.delivered, 5 * SIZE);
    assert_eq!(rs.send_elapsed, Duration::from_millis(10));
    assert_eq!(rs.ack_elapsed, Duration::from_millis(2));
    // The ACK rate (5000 B / 2 ms) would be 5× too high; the send rate bounds it.
    assert!((rs.delivery_rate - 5000.0 / 0.010).abs() < 1e-6, "{}", rs.delivery_rate);
    assert_eq!(rs.newly_acked, 5 * SIZE);
    assert_eq!(rs.rtt, Duration::from_millis(2));
}

#[test]
fn app_limited_marks_samples_until_the_flight_is_delivered() {
    let t0 = Instant::now();
    let mut s = warmed_up(t0);
    s.on_packet_sent(ms(t0, 10), SIZE, 1);
    s.on_packet_sent(ms(t0, 10), SIZE, 2);
    // Nothing more to send: the mark is delivered (1000) + inflight (2000) = 3000.
    s.mark_app_limited();
    assert!(s.is_app_limited());
    s.on_packet_sent(ms(t0, 11), SIZE, 3); // sent while app-limited
                                           // P1, P2 were sent before the mark: not app-limited samples.
    s.on_packet_acked(ms(t0, 20), 1).unwrap();
    assert!(!s.generate().unwrap().is_app_limited);
    s.on_packet_acked(ms(t0, 20), 2).unwrap();
    assert!(!s.generate().unwrap().is_app_limited);
    // delivered = 3000, not yet past the mark: still app-limited.
    assert!(s.is_app_limited());
    s.on_packet_sent(ms(t0, 20), SIZE, 4); // still marked
    s.on_packet_acked(ms(t0, 21), 3).unwrap();
    let rs = s.generate().unwrap();
    assert!(rs.is_app_limited, "P3 was sent app-limited");
    // delivered = 4000 > 3000: the phase is over; new packets are not marked.
    assert!(!s.is_app_limited());
    s.on_packet_sent(ms(t0, 21), SIZE, 5);
    s.on_packet_acked(ms(t0, 30), 4).unwrap();
    assert!(s.generate().unwrap().is_app_limited, "P4 was sent app-limited");
    s.on_packet_acked(ms(t0, 31), 5).unwrap();
    assert!(!s.generate().unwrap().is_app_limited);
}

#[test]
fn losses_leave_flight_and_show_in_the_next_sample() {
    let t0 = Instant::now();
    let mut s = warmed_up(t0);
    for pn in 1..=5 {
        s.on_packet_sent(ms(t0, 10), SIZE, pn);
    }
    assert_eq!(s.inflight(), 5 * SIZE);
    assert_eq!(s.on_packet_lost(2).unwrap().tx_in_flight, 2 * SIZE);
    assert!(s.on_packet_lost(2).is_none(), "a packet is lost once");
    assert_eq!((s.inflight(), s.lost()), (4 * SIZE, SIZE));
    s.on_packet_acked(ms(t0, 20), 5).unwrap();
    let rs = s.generate().unwrap();
    assert_eq!(rs.newly_lost, SIZE);
    assert_eq!(rs.lost, SIZE, "lost since P5 was sent");
    assert_eq!(rs.tx_in_flight, 5 * SIZE);
    assert!(s.on_packet_acked(ms(t0, 20), 42).is_none(), "unknown packet");
    assert_eq!(s.inflight(), 3 * SIZE);
}

#[test]
fn a_reused_packet_number_keeps_the_older_packet_in_flight() {
    // QUIC numbers packets per space; Initial 0 and Handshake 0 may both be in flight.
    let t0 = Instant::now();
    let mut s = DeliveryRateSampler::new();
    s.on_packet_sent(t0, SIZE, 0);
    s.on_packet_sent(t0, 500, 0);
    assert_eq!(s.inflight(), SIZE + 500);
    // The transport says only 1000 B are in flight: the oldest records go first.
    s.on_packet_sent(ms(t0, 1), 700, 1);
    s.on_packet_sent(ms(t0, 2), 300, 2);
    s.trim_oldest_to(1000);
    assert_eq!(s.inflight(), 1000);
    assert!(s.on_packet_lost(0).is_none(), "the oldest record was dropped");
    assert!(s.on_packet_lost(2).is_some());
}

/// QUIC numbers packets per space: a handshake packet and a later application-data packet can
/// both be in flight as number 0. Each ACK names its packet by number and send time, so each
/// gets its own RTT, and the one not yet acknowledged stays in flight.
#[test]
fn a_reused_packet_number_keeps_both_packets_apart() {
    let t0 = Instant::now();
    let mut s = DeliveryRateSampler::new();
    s.on_packet_sent(t0, SIZE, 0);
    s.on_packet_sent(ms(t0, 19), SIZE, 0);
    assert_eq!(s.inflight(), 2 * SIZE);
    assert_eq!(s.on_packet_acked_sent_at(ms(t0, 20), 0, t0).unwrap().send_time, t0);
    assert_eq!(s.generate().unwrap().rtt, Duration::from_millis(20));
    assert_eq!(s.inflight(), SIZE);
    assert!(s.on_packet_acked_sent_at(ms(t0, 30), 0, ms(t0, 5)).is_none(), "no packet 0 was sent at 5 ms");
    assert_eq!(s.on_packet_acked_sent_at(ms(t0, 40), 0, ms(t0, 19)).unwrap().send_time, ms(t0, 19));
    assert_eq!(s.generate().unwrap().rtt, Duration::from_millis(21));
    assert_eq!((s.inflight(), s.delivered()), (0, 2 * SIZE));
    // A loss names no send time: the older of the two is taken, the newer stays in flight.
    s.on_packet_sent(ms(t0, 50), SIZE, 7);
    s.on_packet_sent(ms(t0, 60), SIZE, 7);
    assert_eq!(s.on_packet_lost(7).unwrap().send_time, ms(t0, 50));
    assert_eq!((s.inflight(), s.lost()), (SIZE, SIZE));
    assert_eq!(s.on_packet_acked(ms(t0, 80), 7).unwrap().send_time, ms(t0, 60));
    // Reconciling with the transport's count drops the oldest records first, set-aside ones
    // included.
    s.on_packet_sent(ms(t0, 90), SIZE, 9);
    s.on_packet_sent(ms(t0, 91), SIZE, 9);
    s.trim_oldest_to(SIZE);
    assert_eq!(s.on_packet_acked(ms(t0, 120), 9).unwrap().send_time, ms(t0, 91));
    assert_eq!(s.inflight(), 0);
}

/// Timed at the receiver's receipt (the ACK's arrival minus its ACK Delay, given before the
/// ACK's packets), the ACK phase runs from receipt to receipt; the RTT stays the ACK's arrival
/// minus the send. The receipt holds for one ACK only, never goes back before an earlier ACK's
/// time, and never past the arrival.
#[test]
fn the_ack_phase_is_timed_at_the_receivers_receipt_when_given() {
    let t0 = Instant::now();
    let mut s = warmed_up(t0); // delivered_time 10 ms
    s.on_packet_sent(ms(t0, 10), SIZE, 1);
    s.on_packet_sent(ms(t0, 12), SIZE, 2);
    // P1 arrives at 20 ms; the peer held its ACK 3 ms: it received P1 at 17 ms.
    s.on_ack_receipt(ms(t0, 17));
    s.on_packet_acked(ms(t0, 20), 1).unwrap();
    let rs = s.generate().unwrap();
    assert_eq!(rs.ack_elapsed, Duration::from_millis(7), "from the last receipt to this one");
    assert_eq!(rs.rtt, Duration::from_millis(10), "the RTT is still the ACK's arrival");
    // P3 leaves at 20 ms and records delivered_time 17 ms. P2's and P3's ACKs come with no
    // receipt: each is timed at its arrival, P3's 13 ms after P1's receipt.
    s.on_packet_sent(ms(t0, 20), SIZE, 3);
    s.on_packet_acked(ms(t0, 22), 2).unwrap();
    s.generate().unwrap();
    s.on_packet_sent(ms(t0, 22), SIZE, 4);
    s.on_packet_acked(ms(t0, 30), 3).unwrap();
    assert_eq!(s.generate().unwrap().ack_elapsed, Duration::from_millis(13));
    // A receipt before the last ACK's time (a peer's delay longer than the gap between two
    // ACKs) does not move the clock back: P4 (recorded at 22 ms) is timed from 22 to 30 ms,
    // not to 25.
    s.on_packet_sent(ms(t0, 30), SIZE, 5);
    s.on_ack_receipt(ms(t0, 25));
    s.on_packet_acked(ms(t0, 40), 4).unwrap();
    assert_eq!(s.generate().unwrap().ack_elapsed, Duration::from_millis(8));
    // One after the arrival is the arrival: P5 (recorded at 30 ms) is timed to 50 ms, not 60.
    s.on_packet_sent(ms(t0, 40), SIZE, 6);
    s.on_ack_receipt(ms(t0, 60));
    s.on_packet_acked(ms(t0, 50), 5).unwrap();
    assert_eq!(s.generate().unwrap().ack_elapsed, Duration::from_millis(20));
}
