use super::*;

/// A change (to be filled in) `d` after the epoch.
fn change_at(d: Duration) -> ScheduledChange {
    ScheduledChange { at_ns: at(d), ..Default::default() }
}

fn rate_step(d: Duration) -> DirectionConfig {
    DirectionConfig { rate: Rate::mbps(10), schedule: vec![ScheduledChange { rate: Some(Rate::mbps(5)), ..change_at(d) }], ..Default::default() }
}

#[test]
fn rate_step_halves_the_departure_rate_exactly_at_the_step() {
    // 1250 B: 1 ms at 10 Mbit/s, 2 ms at 5 Mbit/s.
    let mut l = Link::new(rate_step(100 * MS), 0);
    for i in 0..200u64 {
        l.enqueue(T0, 1250, i).expect("accepted");
    }
    let out = drain(&mut l, at(SEC));
    for (i, d) in out.iter().enumerate() {
        let i = i as u64;
        // Packet 100 starts exactly at the step and already sees 5 Mbit/s.
        let expect = if i < 100 { (i + 1) * MS } else { 100 * MS + 2 * (i - 99) * MS };
        assert_eq!(d.delivered_at, at(expect), "packet {i}");
    }
}

#[test]
fn packet_in_service_at_a_rate_step_finishes_at_the_old_rate() {
    let mut l = Link::new(rate_step(100 * MS + MS / 2), 0);
    for i in 0..103u64 {
        l.enqueue(T0, 1250, i).expect("accepted");
    }
    let out = drain(&mut l, at(SEC));
    let tail: Vec<_> = out[99..].iter().map(|d| d.delivered_at).collect();
    assert_eq!(tail, vec![at(100 * MS), at(101 * MS), at(103 * MS), at(105 * MS)]);
}

#[test]
fn rate_change_applies_while_idle_and_on_arrival_at_the_step() {
    let mut l = Link::new(rate_step(100 * MS), 0);
    l.enqueue(T0, 1250, 0u8).expect("accepted");
    l.enqueue(at(100 * MS - NS), 1250, 1).expect("accepted");
    l.enqueue(at(200 * MS), 1250, 2).expect("accepted");
    let out: Vec<_> = drain(&mut l, at(SEC)).iter().map(|d| d.delivered_at).collect();
    assert_eq!(out, vec![at(MS), at(101 * MS - NS), at(202 * MS)]);
}

#[test]
fn rtt_doubling_is_visible_on_the_first_packet_after_the_change() {
    let c = DirectionConfig { delay_ns: 20 * MS, schedule: vec![ScheduledChange { delay_ns: Some(40 * MS), ..change_at(SEC) }], ..Default::default() };
    let mut l = Link::new(c, 0);
    let mut out = Vec::new();
    for i in 0..200u64 {
        let t = at(i * 10 * MS);
        l.enqueue(t, 1000, i).expect("accepted");
        out.extend(drain(&mut l, t));
    }
    out.extend(drain(&mut l, at(10 * SEC)));
    for d in &out {
        let extra = d.delivered_at - d.arrived_at;
        let expect = if d.arrived_at < at(SEC) { 20 * MS } else { 40 * MS };
        assert_eq!(extra, expect, "packet {}", d.packet);
    }
}

#[test]
fn delay_decrease_never_reorders() {
    let c = DirectionConfig {
        rate: Rate::mbps(12),
        delay_ns: 40 * MS,
        schedule: vec![ScheduledChange { delay_ns: Some(10 * MS), ..change_at(100 * MS) }],
        ..Default::default()
    };
    let mut l = Link::new(c, 0);
    for i in 0..150u64 {
        l.enqueue(T0, 1500, i).expect("accepted");
    }
    let out = drain(&mut l, at(SEC));
    let ids: Vec<_> = out.iter().map(|d| d.packet).collect();
    assert_eq!(ids, (0..150).collect::<Vec<_>>());
    for (i, d) in out.iter().enumerate() {
        let finish = (i as u64 + 1) * MS;
        // Packet 98 finishes at 99 ms and arrives at 139 ms; packets
        // finishing from 100 ms on would arrive from 110 ms, so they are
        // held until 139 ms, then flow at the new delay from 130 ms on.
        let expect = if finish < 100 * MS { finish + 40 * MS } else { (finish + 10 * MS).max(139 * MS) };
        assert_eq!(d.delivered_at, at(expect), "packet {i}");
    }
}

#[test]
fn loss_change_applies_to_arrivals_from_its_time() {
    let c = DirectionConfig {
        schedule: vec![
            ScheduledChange { loss: Some(LossModel::Bernoulli { p: 1.0 }), ..change_at(SEC) },
            ScheduledChange { loss: Some(LossModel::None), ..change_at(2 * SEC) },
        ],
        ..Default::default()
    };
    let mut l = Link::new(c, 0);
    for (t, lost) in [(T0, false), (at(SEC - NS), false), (at(SEC), true), (at(2 * SEC - NS), true), (at(2 * SEC), false)] {
        assert_eq!(l.enqueue(t, 100, t).is_err(), lost, "t={t:?}");
    }
    assert_eq!(l.stats().drops_loss, 2);
}

#[test]
fn zero_rate_outage_stalls_and_restarts_at_the_next_change() {
    let c = DirectionConfig {
        rate: Rate::mbps(12),
        // Deliberately out of order: the link sorts the schedule.
        schedule: vec![
            ScheduledChange { rate: Some(Rate::mbps(12)), ..change_at(50 * MS) },
            ScheduledChange { rate: Some(Rate::BitsPerSec(0)), ..change_at(10 * MS) },
        ],
        ..Default::default()
    };
    let mut l = Link::new(c, 0);
    assert_eq!(l.config().schedule[0].at_ns, at(10 * MS));
    for i in 0..15u64 {
        l.enqueue(T0, 1500, i).expect("accepted");
    }
    let early: Vec<_> = drain(&mut l, at(30 * MS)).iter().map(|d| d.delivered_at).collect();
    assert_eq!(early, (1..=10).map(|i| at(i * MS)).collect::<Vec<_>>());
    // Stalled: the only thing that can happen next is the rate change.
    assert_eq!(l.next_event(), Some(at(50 * MS)));
    assert!(l.dequeue(at(50 * MS)).is_none());
    let rest: Vec<_> = drain(&mut l, at(SEC)).iter().map(|d| d.delivered_at).collect();
    assert_eq!(rest, (51..=55).map(|i| at(i * MS)).collect::<Vec<_>>());
}

#[test]
fn next_event_is_exact_across_scheduled_changes() {
    let c = DirectionConfig {
        rate: Rate::mbps(5),
        delay_ns: 30 * MS,
        buffer: Buffer::Packets(50),
        jitter: Jitter::Uniform { max_ns: 3 * MS, reorder: false },
        schedule: (1..40u64)
            .map(|k| ScheduledChange { rate: Some(Rate::mbps(2 + k % 7)), delay_ns: Some(k % 5 * 10 * MS), ..change_at(k * 250 * MS + k * NS) })
            .collect(),
        ..Default::default()
    };
    let st = next_event_loop(c, false);
    assert_eq!(st.packets_in, st.packets_out + st.drops_buffer);
    assert!(st.drops_buffer > 0);
}

#[test]
fn polling_independence_with_every_stage() {
    let schedule = (1..30u64)
        .map(|k| ScheduledChange {
            rate: (k % 3 != 0).then(|| Rate::BitsPerSec(300_000 + k * 30_000)),
            delay_ns: (k % 2 == 0).then_some(k * MS),
            loss: (k % 5 == 0).then_some(LossModel::Bernoulli { p: 0.002 * k as f64 }),
            ..change_at(k * 600 * MS + 17 * NS)
        })
        .collect::<Vec<_>>();
    let base = DirectionConfig {
        rate: Rate::BitsPerSec(3_300_000),
        delay_ns: 17 * MS + 3 * NS,
        loss: LossModel::Bernoulli { p: 0.02 },
        buffer: Buffer::Bytes(12_000),
        schedule,
        jitter: Jitter::Normal { sd_ns: 2 * MS, reorder: false },
        policer: Some(Policer { rate_bps: 2_500_000, burst_bytes: 15_000 }),
        aqm: Aqm::codel(),
        ..Default::default()
    };
    let r = check_polling_independence(&base, 5);
    for cause in [DropCause::Loss, DropCause::Policer, DropCause::BufferOverflow, DropCause::Aqm] {
        assert!(r.1.iter().any(|d| d.1 == cause), "no {cause} drops");
    }

    let reorder = DirectionConfig { jitter: Jitter::Uniform { max_ns: 5 * MS, reorder: true }, ..base.clone() };
    let r = check_polling_independence(&reorder, 6);
    assert!(r.0.windows(2).any(|w| w[1].0 < w[0].0), "expected reordering");

    let trace = DirectionConfig {
        trace: Some(
            crate::trace::TraceRate::parse("walk", &ccbench_tracegen::random_walk(&ccbench_tracegen::RandomWalk::cellular(3_000_000, 5_000), 3))
                .expect("valid"),
        ),
        schedule: vec![],
        ..base
    };
    check_polling_independence(&trace, 7);
}
