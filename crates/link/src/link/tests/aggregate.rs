//! Aggregation (`DirectionConfig::aggregate_ns`): packets held and released in bursts at
//! multiples of the period, on a virtual clock.

use super::*;

const PERIOD: Duration = Duration::from_millis(4);

fn aggregating(c: DirectionConfig, period: Duration) -> DirectionConfig {
    DirectionConfig { aggregate_ns: Some(period), ..c }
}

/// Offers `n` packets `gap` apart, dequeuing at each arrival and then at every event the link
/// announces; returns the deliveries in dequeue order with the time each was dequeued at.
fn run(c: DirectionConfig, n: u64, gap: Duration) -> Vec<(Instant, Delivery<u64>)> {
    let mut l = Link::new(c, 5);
    let mut out = Vec::new();
    let take = |l: &mut Link<u64>, now: Instant, out: &mut Vec<(Instant, Delivery<u64>)>| {
        while let Some(d) = l.dequeue(now) {
            out.push((now, d));
        }
    };
    for i in 0..n {
        let now = at(i * gap);
        // Everything announced before this arrival leaves at its announced time first.
        while let Some(t) = l.next_event().filter(|&t| t < now) {
            take(&mut l, t, &mut out);
        }
        l.enqueue(now, 1000, i).expect("accepted");
        take(&mut l, now, &mut out);
    }
    while let Some(t) = l.next_event() {
        take(&mut l, t, &mut out);
    }
    out
}

#[test]
fn packets_leave_only_at_period_boundaries_in_order_and_none_is_lost() {
    // 0.3 ms apart, 10 ms delay, 4 ms period: about 13 packets per burst.
    let c = aggregating(DirectionConfig { delay_ns: 10 * MS, ..Default::default() }, PERIOD);
    let n = 10_000;
    let out = run(c, n, 300 * US);
    assert_eq!(out.len() as u64, n, "nothing lost, nothing duplicated");
    for (i, (dequeued, d)) in out.iter().enumerate() {
        assert_eq!(d.packet, i as u64, "order kept");
        assert_eq!(d.delivered_at.as_nanos() % PERIOD.as_nanos(), 0, "packet {i} released at {:?}", d.delivered_at);
        assert_eq!(*dequeued, d.delivered_at, "the link announces the boundary and hands the packet out there, not before");
        let due = d.arrived_at + 10 * MS;
        assert!(d.delivered_at >= due && d.delivered_at - due < PERIOD, "held less than one period: {:?} for {:?}", d.delivered_at, due);
    }
    // Bursts: every boundary releases all that came due since the last, 4 ms / 0.3 ms ≈ 13.
    let mut bursts: Vec<usize> = Vec::new();
    for w in out.windows(2) {
        if w[0].1.delivered_at != w[1].1.delivered_at {
            bursts.push(0);
        }
        if let Some(b) = bursts.last_mut() {
            *b += 1;
        }
    }
    let mean = n as f64 / (bursts.len() + 1) as f64;
    assert!((12.0..=14.0).contains(&mean), "{mean} packets per burst");
}

#[test]
fn a_held_packet_is_not_handed_out_before_its_boundary() {
    let c = aggregating(DirectionConfig { delay_ns: 10 * MS, ..Default::default() }, PERIOD);
    let mut l = Link::new(c, 0);
    l.enqueue(at(MS + 7 * NS), 100, 0u64).expect("accepted");
    l.enqueue(at(2 * MS), 100, 1).expect("accepted");
    // Due at 11 ms and 12 ms, both released at 12 ms.
    assert_eq!(l.next_event(), Some(at(12 * MS)));
    assert!(l.dequeue(at(12 * MS) - NS).is_none());
    let out = drain(&mut l, at(12 * MS));
    assert_eq!(out.iter().map(|d| (d.packet, d.delivered_at)).collect::<Vec<_>>(), vec![(0, at(12 * MS)), (1, at(12 * MS))]);
    // Due exactly on a boundary: not held.
    l.enqueue(at(14 * MS), 100, 2).expect("accepted");
    assert_eq!(l.next_event(), Some(at(24 * MS)));
}

#[test]
fn reordering_jitter_still_releases_at_boundaries() {
    let c = DirectionConfig { delay_ns: 10 * MS, jitter: Jitter::Uniform { max_ns: 3 * MS, reorder: true }, ..Default::default() };
    let out = run(aggregating(c, PERIOD), 5_000, 200 * US);
    assert_eq!(out.len(), 5_000);
    assert!(out.iter().all(|(_, d)| d.delivered_at.as_nanos() % PERIOD.as_nanos() == 0));
    // Within a burst, the order the link would have delivered them in without aggregation:
    // ties in the order they left the server.
    for w in out.windows(2) {
        assert!(w[0].1.delivered_at <= w[1].1.delivered_at);
    }
}

#[test]
fn a_rate_limited_link_keeps_its_throughput() {
    // 10 Mbit/s, saturated for 30 s: aggregation delays each packet by less than a period and
    // so cannot change what the link carries over a long run.
    let bytes_by = |period: Option<Duration>| {
        let c = DirectionConfig { rate: Rate::mbps(10), delay_ns: 20 * MS, aggregate_ns: period, ..Default::default() };
        // 1000-byte packets every 0.75 ms offer 10.7 Mbit/s: the server never idles.
        let out = run(c, 40_000, 750 * US);
        assert_eq!(out.len(), 40_000);
        let end = at(30 * SEC);
        out.iter().filter(|(_, d)| d.delivered_at <= end).map(|(_, d)| u64::from(d.len)).sum::<u64>()
    };
    let plain = bytes_by(None);
    let held = bytes_by(Some(PERIOD));
    // 30 s less the 20 ms delay at 10 Mbit/s.
    assert!((plain as f64 - 37_475_000.0).abs() < 2_000.0, "{plain}");
    // At most one period's worth of bytes is still held at the end: 4 ms at 10 Mbit/s = 5000 B.
    assert!(held <= plain && plain - held <= 5_000, "{held} vs {plain}");
    assert_eq!(bytes_by(Some(Duration::ZERO)), plain, "a zero period aggregates nothing");
}
