use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

use super::*;
use crate::config::{Aqm, Jitter, LossModel, Policer, Rate, ScheduledChange};
use crate::loss::LossProcess;

const MS: Nanos = 1_000_000;
const SEC: Nanos = 1_000_000_000;

fn cfg(rate: Rate, delay_ns: Nanos, buffer: Buffer) -> DirectionConfig {
    DirectionConfig { rate, delay_ns, loss: LossModel::None, buffer, ..Default::default() }
}

/// Dequeues everything deliverable by `now`.
fn drain<P>(link: &mut Link<P>, now: Nanos) -> Vec<Delivery<P>> {
    std::iter::from_fn(|| link.dequeue(now)).collect()
}

#[test]
fn single_packet_on_idle_link_is_exact() {
    let mut l = Link::new(cfg(Rate::mbps(10), 20 * MS, Buffer::Unlimited), 0);
    let t0 = 1_000;
    l.enqueue(t0, 1500, "p").expect("accepted");
    let ser = 1_200_000; // 12000 bit at 10 Mbit/s
    let expect = t0 + ser + 20 * MS;
    assert_eq!(l.next_event(), Some(expect));
    assert!(l.dequeue(expect - 1).is_none());
    assert_eq!(l.in_flight_packets(), 1);
    let d = l.dequeue(expect).expect("due");
    assert_eq!((d.packet, d.len, d.arrived_at, d.service_start, d.delivered_at), ("p", 1500, t0, t0, expect));
    assert_eq!(l.next_event(), None);
    assert_eq!(l.in_flight_packets(), 0);
    assert_eq!(l.stats().busy_ns, ser);
    assert_eq!(l.stats().queue_delay.count(), 1);
    assert_eq!(l.stats().queue_delay.max_ns(), 0);
}

#[test]
fn fifo_server_back_to_back_and_after_idle() {
    let d = 5 * MS;
    let mut l = Link::new(cfg(Rate::mbps(12), d, Buffer::Unlimited), 0);
    let s = 1_000_000; // 1500 B at 12 Mbit/s
    for i in 0..3 {
        l.enqueue(0, 1500, i).expect("accepted");
    }
    // Arrives while the server is busy: starts at previous finish (3 s).
    l.enqueue(2 * s + 10, 1500, 3).expect("accepted");
    // Arrives after the link went idle: starts at its own arrival.
    let late = 10 * s + 7;
    l.enqueue(late, 750, 4).expect("accepted");
    let out = drain(&mut l, 100 * SEC);
    let starts: Vec<_> = out.iter().map(|x| x.service_start).collect();
    let delivered: Vec<_> = out.iter().map(|x| x.delivered_at).collect();
    assert_eq!(starts, vec![0, s, 2 * s, 3 * s, late]);
    assert_eq!(delivered, vec![s + d, 2 * s + d, 3 * s + d, 4 * s + d, late + s / 2 + d]);
    assert_eq!(out.iter().map(|x| x.packet).collect::<Vec<_>>(), vec![0, 1, 2, 3, 4]);
    let st = l.stats();
    assert_eq!(st.busy_ns, 4 * s + s / 2);
    assert_eq!(st.queue_delay.count(), 5);
    assert_eq!(st.queue_delay.max_ns(), 2 * s);
    // Queue delays 0, s, 2s, s-10, 0.
    let mean = (4 * s - 10) as f64 / 5.0;
    assert!((st.queue_delay.mean_ns() - mean).abs() < 1e-6);
    assert_eq!(st.max_backlog_bytes, 3000);
}

#[test]
fn no_rounding_drift_over_a_million_packets() {
    let n: u64 = 1_000_000;
    let mut l = Link::new(cfg(Rate::mbps(7), 0, Buffer::Unlimited), 0);
    for i in 0..n {
        l.enqueue(0, 1500, i).expect("accepted");
    }
    let mut last = None;
    let mut count = 0;
    while let Some(d) = l.dequeue(Nanos::MAX - 1) {
        count += 1;
        last = Some(d.delivered_at);
    }
    assert_eq!(count, n);
    // 1500*8*1e6 / 7e6 s = 1714.285714285714... s
    let exact_ns = 1500.0 * 8.0 * 1e6 / 7e6 * 1e9;
    let got = last.expect("delivered") as f64;
    assert!((got - exact_ns).abs() <= 1_000.0, "got {got}, exact {exact_ns}");
    assert!((got - exact_ns).abs() <= 1.0);
    assert_eq!(l.stats().busy_ns, last.expect("delivered"));
}

/// (id, arrived_at, service_start, delivered_at) of each delivered packet,
/// (id, cause) of each drop, and the final stats.
type RunResult = (Vec<(usize, Nanos, Nanos, Nanos)>, Vec<(usize, DropCause)>, LinkStats);

/// Replays `arrivals` through a link, dequeuing at the given poll times
/// (plus once at the very end), and returns what came out and what was
/// dropped.
fn run_schedule(c: &DirectionConfig, arrivals: &[(Nanos, u32)], polls: &[Nanos]) -> RunResult {
    let mut l = Link::new(c.clone(), 99);
    let mut out = Vec::new();
    let mut drops = Vec::new();
    let mut p = 0;
    let mut collect = |l: &mut Link<usize>, drops: &mut Vec<(usize, DropCause)>, now| {
        while let Some(d) = l.dequeue(now) {
            assert!(d.delivered_at <= now);
            out.push((d.packet, d.arrived_at, d.service_start, d.delivered_at));
        }
        while let Some(d) = l.take_dropped() {
            drops.push((d.packet, d.cause));
        }
    };
    for (id, &(t, len)) in arrivals.iter().enumerate() {
        while p < polls.len() && polls[p] <= t {
            collect(&mut l, &mut drops, polls[p]);
            p += 1;
        }
        if let Err(e) = l.enqueue(t, len, id) {
            assert_eq!(e.packet, id);
            drops.push((id, e.cause));
        }
    }
    for &t in &polls[p..] {
        collect(&mut l, &mut drops, t);
    }
    collect(&mut l, &mut drops, Nanos::MAX / 2);
    assert_eq!(l.in_flight_packets(), 0);
    (out, drops, l.stats().clone())
}

/// Runs `c` under three polling patterns (never, every 7 ms, random fine
/// steps) and checks that deliveries, drops and stats are identical.
fn check_polling_independence(c: &DirectionConfig, seed: u64) -> RunResult {
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let mut t = 0;
    let arrivals: Vec<(Nanos, u32)> = (0..20_000)
        .map(|_| {
            // Bursty: mostly back-to-back, sometimes long gaps.
            t += if rng.gen_bool(0.9) { rng.gen_range(0..1_000_000) } else { rng.gen_range(0..200 * MS) };
            (t, rng.gen_range(40..=1500))
        })
        .collect();
    let end = t + SEC;

    let never = run_schedule(c, &arrivals, &[]);
    let coarse: Vec<Nanos> = (0..end).step_by(7 * MS as usize).collect();
    let coarse = run_schedule(c, &arrivals, &coarse);
    let mut fine = Vec::new();
    let mut x = 0;
    while x < end {
        x += rng.gen_range(1..300_000);
        fine.push(x);
    }
    let fine = run_schedule(c, &arrivals, &fine);

    // Drops found inside enqueue and drops handed back later may interleave
    // differently; the set (and each packet's cause) must not.
    let sorted = |mut v: Vec<(usize, DropCause)>| {
        v.sort_by_key(|d| d.0);
        v
    };
    assert_eq!(never.0, coarse.0);
    assert_eq!(never.0, fine.0);
    assert_eq!(sorted(never.1.clone()), sorted(coarse.1));
    assert_eq!(sorted(never.1.clone()), sorted(fine.1));
    // Everything was eventually dequeued, so even the stats must match.
    assert_eq!(never.2, coarse.2);
    assert_eq!(never.2, fine.2);
    let st = &never.2;
    assert_eq!(st.packets_in, st.packets_out + st.drops_loss + st.drops_policer + st.drops_buffer + st.drops_aqm);
    assert_eq!(never.0.len() + never.1.len(), arrivals.len());
    never
}

#[test]
fn delivery_times_do_not_depend_on_polling() {
    let c = DirectionConfig {
        rate: Rate::BitsPerSec(3_300_000),
        delay_ns: 17 * MS + 3,
        loss: LossModel::Bernoulli { p: 0.02 },
        buffer: Buffer::Bytes(20_000),
        ..Default::default()
    };
    let never = check_polling_independence(&c, 5);
    assert!(never.1.iter().any(|d| d.1 == DropCause::BufferOverflow));
    assert!(never.1.iter().any(|d| d.1 == DropCause::Loss));
}

#[test]
fn next_event_driven_loop_dequeues_exactly_on_time() {
    let c = cfg(Rate::mbps(5), 30 * MS, Buffer::Packets(50));
    let mut l = Link::new(c, 1);
    let mut rng = ChaCha8Rng::seed_from_u64(8);
    let mut arrivals: VecDeque<(Nanos, u32)> = VecDeque::new();
    let mut t = 0;
    for _ in 0..5_000 {
        t += rng.gen_range(0..2 * MS);
        arrivals.push_back((t, rng.gen_range(64..=1500)));
    }
    let mut now = 0;
    let mut delivered = 0;
    let mut id = 0u32;
    loop {
        let next_arrival = arrivals.front().map(|a| a.0);
        let wake = match (next_arrival, l.next_event()) {
            (Some(a), Some(e)) => a.min(e),
            (Some(a), None) => a,
            (None, Some(e)) => e,
            (None, None) => break,
        };
        assert!(wake >= now, "next_event went backwards");
        now = wake;
        while arrivals.front().is_some_and(|a| a.0 == now) {
            if let Some((at, len)) = arrivals.pop_front() {
                let _ = l.enqueue(at, len, id);
                id += 1;
            }
        }
        while let Some(d) = l.dequeue(now) {
            assert_eq!(d.delivered_at, now, "woke late or early");
            delivered += 1;
        }
    }
    let st = l.stats();
    assert_eq!(delivered, st.packets_out);
    assert_eq!(st.packets_in, st.packets_out + st.drops_buffer);
    assert!(st.drops_buffer > 0);
}

#[test]
fn packet_buffer_overflow_counts_exactly() {
    let mut l = Link::new(cfg(Rate::mbps(1), 0, Buffer::Packets(3)), 0);
    let mut dropped = Vec::new();
    for i in 0..10 {
        if let Err(e) = l.enqueue(0, 1000, i) {
            assert_eq!(e.cause, DropCause::BufferOverflow);
            dropped.push(e.packet);
        }
    }
    // One in service + 3 waiting.
    assert_eq!(dropped, vec![4, 5, 6, 7, 8, 9]);
    assert_eq!(l.backlog_packets(), 3);
    assert_eq!(l.backlog_bytes(), 3000);
    assert_eq!(l.in_flight_packets(), 4);
    let st = l.stats();
    assert_eq!((st.drops_buffer, st.bytes_dropped_buffer), (6, 6000));
    assert_eq!((st.drops_loss, st.packets_in, st.bytes_in), (0, 10, 10_000));

    // The first packet finishes at exactly 8 ms; the next one moves into
    // service at that instant, so an arrival then finds one free slot.
    let s = 8 * MS;
    assert!(l.enqueue(s - 1, 1000, 10).is_err());
    assert!(l.enqueue(s, 1000, 11).is_ok());
    assert!(l.enqueue(s, 1000, 12).is_err());
    assert_eq!(l.stats().drops_buffer, 8);
    let ids: Vec<_> = drain(&mut l, SEC).into_iter().map(|d| d.packet).collect();
    assert_eq!(ids, vec![0, 1, 2, 3, 11]);
}

#[test]
fn byte_buffer_overflow_counts_exactly() {
    let mut l = Link::new(cfg(Rate::mbps(1), 0, Buffer::Bytes(4000)), 0);
    let sizes = [1000u32, 1000, 1500, 1000, 1000, 600, 500, 1, 1500];
    let mut results = Vec::new();
    for (i, &len) in sizes.iter().enumerate() {
        results.push(l.enqueue(0, len, i).is_ok());
    }
    // #0 in service; then backlog 1000, 2500, 3500, (4500 no), (4100 no),
    // 4000 exactly fits, (4001 no), (5500 no).
    assert_eq!(results, vec![true, true, true, true, false, false, true, false, false]);
    assert_eq!(l.backlog_bytes(), 4000);
    assert_eq!(l.backlog_packets(), 4);
    assert_eq!(l.stats().max_backlog_bytes, 4000);
    assert_eq!(l.stats().drops_buffer, 4);
    assert_eq!(l.stats().bytes_dropped_buffer, 1000 + 600 + 1 + 1500);
}

#[test]
fn zero_buffer_only_admits_to_an_idle_server() {
    let mut l = Link::new(cfg(Rate::mbps(1), 0, Buffer::Packets(0)), 0);
    assert!(l.enqueue(0, 1000, 0).is_ok());
    assert!(l.enqueue(1, 1000, 1).is_err());
    assert!(l.enqueue(8 * MS, 1000, 2).is_ok());
    assert_eq!(l.stats().max_backlog_bytes, 0);
}

#[test]
fn lost_packets_never_take_buffer_space() {
    let seed = 77;
    let n = 2_000;
    let c = DirectionConfig { rate: Rate::mbps(1), delay_ns: 0, loss: LossModel::Bernoulli { p: 0.5 }, buffer: Buffer::Packets(5), ..Default::default() };
    let mut l = Link::new(c.clone(), seed);
    let mut reference = LossProcess::new(c.loss.clone(), seed);
    let mut accepted = 0;
    for i in 0..n {
        let should_lose = reference.lose_next();
        match l.enqueue(0, 100, i) {
            Ok(()) => {
                assert!(!should_lose);
                accepted += 1;
            }
            Err(e) if should_lose => assert_eq!(e.cause, DropCause::Loss),
            Err(e) => {
                assert_eq!(e.cause, DropCause::BufferOverflow);
                // Only once the server and all 5 slots hold survivors.
                assert_eq!(accepted, 6);
            }
        }
    }
    let st = l.stats();
    assert_eq!(accepted, 6);
    assert_eq!(st.drops_loss + st.drops_buffer + 6, n as u64);
    assert!(st.drops_loss > 900 && st.drops_loss < 1100);

    let mut all_lost = Link::new(DirectionConfig { loss: LossModel::Bernoulli { p: 1.0 }, ..c }, seed);
    for i in 0..100 {
        assert_eq!(all_lost.enqueue(0, 100, i).map_err(|e| e.cause), Err(DropCause::Loss));
    }
    assert_eq!(all_lost.backlog_packets(), 0);
    assert_eq!(all_lost.stats().drops_buffer, 0);
    assert_eq!(all_lost.stats().bytes_dropped_loss, 10_000);
}

#[test]
fn bernoulli_loss_through_the_link() {
    let c = DirectionConfig { loss: LossModel::Bernoulli { p: 0.1 }, ..Default::default() };
    let run = |seed| {
        let mut l = Link::new(c.clone(), seed);
        let mut pattern = Vec::new();
        for i in 0..100_000u32 {
            pattern.push(l.enqueue(u64::from(i), 100, i).is_err());
            drain(&mut l, u64::from(i));
        }
        (pattern, l.stats().clone())
    };
    let (a, sa) = run(3);
    let (b, _) = run(3);
    let (other, _) = run(4);
    assert_eq!(a, b);
    assert_ne!(a, other);
    let n = 100_000.0;
    let sigma = (n * 0.1 * 0.9f64).sqrt();
    assert!((sa.drops_loss as f64 - n * 0.1).abs() <= 4.0 * sigma);
    assert_eq!(sa.packets_out + sa.drops_loss, 100_000);
}

#[test]
fn saturated_link_delivers_exactly_its_rate() {
    let rate = 24_000_000u64;
    let c = cfg(Rate::BitsPerSec(rate), 0, Buffer::Packets(100));
    let mut l = Link::new(c, 0);
    let t_end = 10 * SEC;
    // Offer ~1.5x the rate, with irregular sizes and spacing.
    let mut rng = ChaCha8Rng::seed_from_u64(11);
    let mut t = 0;
    let mut i = 0u64;
    while t < t_end {
        let len = rng.gen_range(500..=1500);
        let _ = l.enqueue(t, len, i);
        i += 1;
        t += rng.gen_range(0..400_000);
        drain(&mut l, t.min(t_end));
    }
    drain(&mut l, t_end);
    let st = l.stats();
    let achieved = st.bytes_out as f64 * 8.0 / (t_end as f64 / 1e9);
    assert!((achieved - rate as f64).abs() / rate as f64 <= 0.001, "achieved {achieved} bit/s");
    assert!(st.drops_buffer > 0);
    let util = st.busy_ns as f64 / t_end as f64;
    assert!(util > 0.999 && util <= 1.0, "utilization {util}");
}

#[test]
fn unlimited_rate_only_delays_and_preserves_order() {
    let mut l = Link::new(cfg(Rate::Unlimited, 40 * MS, Buffer::Packets(0)), 0);
    for i in 0..1000u64 {
        l.enqueue(i * 1000 / 7, 1500, i).expect("never queues");
        assert_eq!(l.backlog_packets(), 0);
    }
    let out = drain(&mut l, SEC);
    assert_eq!(out.len(), 1000);
    for (i, d) in out.iter().enumerate() {
        assert_eq!(d.packet, i as u64);
        assert_eq!(d.service_start, d.arrived_at);
        assert_eq!(d.delivered_at, d.arrived_at + 40 * MS);
    }
    assert_eq!(l.stats().busy_ns, 0);
    assert_eq!(l.stats().queue_delay.quantile(1.0), 0);
}

#[test]
fn accounting_invariant_holds_mid_run() {
    let c = DirectionConfig {
        rate: Rate::mbps(2),
        delay_ns: 50 * MS,
        loss: LossModel::GilbertElliott { p_good_to_bad: 0.05, p_bad_to_good: 0.3, loss_in_good: 0.0, loss_in_bad: 0.8 },
        buffer: Buffer::Bytes(30_000),
        ..Default::default()
    };
    let mut l = Link::new(c, 12);
    let mut rng = ChaCha8Rng::seed_from_u64(13);
    let mut t = 0;
    for i in 0..50_000u32 {
        t += rng.gen_range(0..5 * MS);
        let _ = l.enqueue(t, rng.gen_range(100..1500), i);
        if i % 3 == 0 {
            drain(&mut l, t);
        }
        let st = l.stats();
        assert_eq!(st.packets_in, st.packets_out + st.drops_loss + st.drops_buffer + l.in_flight_packets() as u64);
        assert_eq!(st.drops_policer + st.drops_aqm, 0);
        assert!(l.backlog_bytes() <= 30_000);
        assert!(st.max_backlog_bytes >= l.backlog_bytes());
    }
    assert!(l.stats().drops_loss > 0 && l.stats().drops_buffer > 0);
}

#[test]
fn advance_updates_backlog_view() {
    let mut l = Link::new(cfg(Rate::mbps(1), 0, Buffer::Unlimited), 0);
    for i in 0..4 {
        l.enqueue(0, 1000, i).expect("accepted");
    }
    assert_eq!(l.backlog_packets(), 3);
    l.advance(16 * MS);
    assert_eq!(l.backlog_packets(), 1);
    assert_eq!(l.backlog_bytes(), 1000);
    assert_eq!(l.in_flight_packets(), 4);
}

#[test]
fn time_going_backwards_is_clamped() {
    let mut l = Link::new(cfg(Rate::mbps(1), MS, Buffer::Unlimited), 0);
    l.enqueue(10 * MS, 1000, 0).expect("accepted");
    // Earlier timestamp: treated as arriving at 10 ms.
    l.enqueue(5 * MS, 1000, 1).expect("accepted");
    let out = drain(&mut l, SEC);
    assert_eq!(out[1].arrived_at, 10 * MS);
    assert_eq!(out[1].delivered_at, 10 * MS + 16 * MS + MS);
}

#[test]
fn zero_rate_stalls_without_panicking() {
    let c = cfg(Rate::BitsPerSec(0), 0, Buffer::Packets(2));
    assert!(Link::<u8>::try_new(c.clone(), 0).is_err());
    let mut l = Link::new(c, 0);
    assert!(l.enqueue(0, 100, 0u8).is_ok());
    assert!(l.enqueue(0, 100, 1).is_ok());
    assert!(l.enqueue(0, 100, 2).is_ok());
    assert!(l.enqueue(0, 100, 3).is_err());
    assert!(l.dequeue(Nanos::MAX).is_none());
    assert_eq!(l.next_event(), None);
    assert_eq!(l.in_flight_packets(), 3);
}

#[test]
fn dropped_displays_cause() {
    let d = Dropped { packet: (), cause: DropCause::BufferOverflow, arrived_at: 0, len: 1500 };
    assert_eq!(d.to_string(), "packet dropped: buffer overflow");
}

mod codel;
mod jitter;
mod policer;
mod schedule;
mod trace;
