//! `--reorder`: the share held back, the displacement, nothing lost, the seed.

use super::*;
use crate::config::Reorder;

const N: u64 = 100_000;
/// 1500 bytes at 50 Mbit/s.
const SER: Duration = Duration::from_micros(240);

/// 50 Mbit/s, 10 ms delay, 1500-byte packets arriving one serialization time apart (the link
/// busy throughout), driven the way the emulator drives it: woken only at arrivals and at
/// `next_event`. Returns the deliveries in dequeue order and the link's count of held packets;
/// checks every packet was dequeued exactly when it was due.
fn run(reorder: Reorder, loss: LossModel, seed: u64) -> (Vec<Delivery<u64>>, LinkStats) {
    let c = DirectionConfig { rate: Rate::mbps(50), delay_ns: 10 * MS, loss, reorder, ..Default::default() };
    let mut l = Link::try_new(c, seed).expect("valid");
    let mut out = Vec::new();
    let take = |l: &mut Link<u64>, now: Instant, out: &mut Vec<Delivery<u64>>| {
        while let Some(d) = l.dequeue(now) {
            // Woken at next_event: never late, so a held packet's displacement is exact.
            assert_eq!(d.delivered_at, now, "packet {} dequeued late", d.packet);
            out.push(d);
        }
    };
    let mut i = 0;
    loop {
        let arrival = (i < N).then(|| at(SER * i));
        let now = match (arrival, l.next_event()) {
            (None, None) => break,
            (Some(a), Some(e)) => a.min(e),
            (a, e) => a.or(e).expect("one"),
        };
        take(&mut l, now, &mut out);
        if arrival == Some(now) {
            let _ = l.enqueue(now, 1500, i);
            i += 1;
        }
    }
    let stats = l.stats().clone();
    (out, stats)
}

/// How long after its in-order delivery each packet came (0 or the displacement).
fn held_by(d: &Delivery<u64>) -> Duration {
    d.delivered_at - (d.service_start + SER + 10 * MS)
}

/// Binomial: `k` successes of `n` at `p` within 4 standard deviations.
fn binomial_ok(k: u64, n: u64, p: f64) -> bool {
    let (n, k) = (n as f64, k as f64);
    (k - n * p).abs() < 4.0 * (n * p * (1.0 - p)).sqrt()
}

#[test]
fn the_share_held_is_the_rate_and_nothing_is_lost() {
    let (out, stats) = run(Reorder::Time { p: 0.01, by_ns: 3 * MS }, LossModel::None, 1);
    assert_eq!(out.len() as u64, N, "every packet delivered");
    assert_eq!((stats.drops_loss, stats.drops_buffer), (0, 0));
    let held = out.iter().filter(|d| !held_by(d).is_zero()).count() as u64;
    assert_eq!(held, stats.reorder_held);
    assert!(binomial_ok(held, N, 0.01), "{held} of {N} held at 1 %");
    // Each one by exactly the displacement; the others not at all.
    assert!(out.iter().all(|d| [Duration::ZERO, 3 * MS].contains(&held_by(d))));
    let ids: std::collections::BTreeSet<u64> = out.iter().map(|d| d.packet).collect();
    assert_eq!(ids.len() as u64, N, "no packet twice");
}

#[test]
fn a_displacement_in_time_is_overtaken_by_what_the_link_sends_meanwhile() {
    let (out, _) = run(Reorder::Time { p: 0.02, by_ns: 3 * MS }, LossModel::None, 2);
    let pos: std::collections::HashMap<u64, usize> = out.iter().enumerate().map(|(k, d)| (d.packet, k)).collect();
    let held: std::collections::HashSet<u64> = out.iter().filter(|d| !held_by(d).is_zero()).map(|d| d.packet).collect();
    assert!(!held.is_empty());
    // 3 ms at one packet per 240 µs: the 12 packets sent after it (12 × 240 µs = 2.88 ms <
    // 3 ms), those not held themselves, arrive before it, and no others.
    for &i in &held {
        let overtaken_by = ((i + 1)..N).filter(|j| pos[j] < pos[&i]).count();
        let expected = ((i + 1)..=(i + 12).min(N - 1)).filter(|j| !held.contains(j)).count();
        assert_eq!(overtaken_by, expected, "packet {i}");
    }
}

#[test]
fn a_displacement_in_packets_is_that_many_serialization_times() {
    let (out, stats) = run(Reorder::Packets { p: 0.01, packets: 5 }, LossModel::None, 3);
    assert_eq!(out.len() as u64, N);
    assert!(binomial_ok(stats.reorder_held, N, 0.01), "{} held", stats.reorder_held);
    let pos: std::collections::HashMap<u64, usize> = out.iter().enumerate().map(|(k, d)| (d.packet, k)).collect();
    for d in out.iter().filter(|d| !held_by(d).is_zero()) {
        assert_eq!(held_by(d), SER * 5 + NS);
        let i = d.packet;
        let later_held = ((i + 1)..=(i + 5)).any(|j| out.get(pos.get(&j).copied().unwrap_or(usize::MAX)).is_some_and(|e| !held_by(e).is_zero()));
        if !later_held && i + 5 < N {
            // Exactly the 5 after it came first: a displacement of 5 packets.
            assert_eq!(pos[&(i + 5)] + 1, pos[&i], "packet {i}");
        }
    }
}

#[test]
fn the_seed_decides_which_packets_are_held() {
    let held = |seed| {
        let (out, _) = run(Reorder::Time { p: 0.01, by_ns: 2 * MS }, LossModel::None, seed);
        out.iter().filter(|d| !held_by(d).is_zero()).map(|d| d.packet).collect::<Vec<_>>()
    };
    let a = held(7);
    assert_eq!(a, held(7), "the same seed holds the same packets");
    assert_ne!(a, held(8), "another seed holds others");
}

#[test]
fn reordering_does_not_change_the_loss_pattern() {
    let lost = |reorder| {
        let (out, _) = run(reorder, LossModel::Bernoulli { p: 0.05 }, 4);
        let got: std::collections::BTreeSet<u64> = out.iter().map(|d| d.packet).collect();
        (0..N).filter(|i| !got.contains(i)).collect::<Vec<_>>()
    };
    let base = lost(Reorder::None);
    assert!(!base.is_empty());
    assert_eq!(base, lost(Reorder::Time { p: 0.1, by_ns: 3 * MS }));
}

#[test]
fn without_reordering_delivery_is_in_order() {
    for r in [Reorder::None, Reorder::Time { p: 0.0, by_ns: 3 * MS }] {
        let (out, stats) = run(r, LossModel::None, 5);
        assert_eq!(stats.reorder_held, 0);
        assert!(out.windows(2).all(|w| w[0].packet < w[1].packet));
    }
}

#[test]
fn a_bad_share_is_refused() {
    for p in [-0.1, 1.5, f64::NAN] {
        let c = DirectionConfig { reorder: Reorder::Time { p, by_ns: MS }, ..Default::default() };
        assert!(matches!(c.validate(), Err(LinkConfigError::InvalidProbability { field: "reorder.p", .. })), "p={p}");
    }
}
