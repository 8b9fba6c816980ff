use super::*;
use crate::trace::TraceRate;
use ccbench_tracegen as generate;

fn trace_cfg(text: &str, delay_ns: Duration) -> DirectionConfig {
    DirectionConfig {
        // Must be ignored while the trace is in force.
        rate: Rate::BitsPerSec(1),
        delay_ns,
        trace: Some(TraceRate::parse("test", text).expect("valid trace")),
        ..Default::default()
    }
}

/// Whole milliseconds since the epoch.
fn ms_of(t: Instant) -> u64 {
    t.as_nanos() / MS.as_nanos()
}

#[test]
fn constant_trace_delivers_one_packet_per_opportunity() {
    let d = 3 * MS;
    let mut l = Link::new(trace_cfg("1\n", d), 0);
    let n = 10_000u64;
    for i in 0..n {
        l.enqueue(T0, 1500, i).expect("accepted");
    }
    let out = drain(&mut l, FAR);
    assert_eq!(out.len() as u64, n);
    for (i, x) in out.iter().enumerate() {
        let i = i as u64;
        // The opportunity at 0 ms would be "at" the arrival, not after it.
        assert_eq!(x.delivered_at, at((i + 1) * MS + d), "packet {i}");
        assert_eq!(x.service_start, at(i * MS));
    }
    // 10 000 * 12 000 bit in 10 s.
    assert_eq!(l.stats().bytes_out * 8, 12_000_000 * 10);
    assert_eq!(l.stats().busy_ns, n * MS);
}

#[test]
fn constant_trace_carries_exactly_12_mbps_with_mixed_sizes() {
    let mut l = Link::new(trace_cfg("1\n", Duration::ZERO), 0);
    let mut rng = ChaCha8Rng::seed_from_u64(21);
    let t_end = at(10 * SEC);
    let mut t = T0;
    let mut i = 0u64;
    while t < t_end {
        // ~1.3x the trace capacity, so the queue never empties for long.
        let len = rng.gen_range(40..=1500);
        let _ = l.enqueue(t, len, i);
        i += 1;
        t += uniform(&mut rng, Duration::ZERO, 2 * u64::from(len) * 8 * 1000 / 12 * 10 / 13 * NS);
        drain(&mut l, t.min(t_end));
    }
    drain(&mut l, t_end);
    let out = l.stats().bytes_out;
    // 10 000 opportunities of 1500 B; all credit is used while the queue is
    // non-empty, so at most the head's partial progress is missing.
    assert!(out <= 15_000_000, "{out}");
    assert!(15_000_000 - out < 1500, "{out}");
}

#[test]
fn nothing_is_delivered_in_a_trace_gap() {
    // Opportunities at 1, 2, 10 ms, then 11, 12, 20 ms, ...
    let mut l = Link::new(trace_cfg("1\n2\n10\n", Duration::ZERO), 0);
    for i in 0..7u64 {
        l.enqueue(T0, 1500, i).expect("accepted");
    }
    assert!(drain(&mut l, at(10 * MS - NS)).len() == 2);
    let times: Vec<_> = drain(&mut l, at(SEC)).iter().map(|d| ms_of(d.delivered_at)).collect();
    assert_eq!(times, vec![10, 11, 12, 20, 21]);
    assert_eq!(l.next_event(), None);
}

#[test]
fn trace_loops_exactly_over_many_periods() {
    let period = 7 * MS;
    let mut l = Link::new(trace_cfg("3\n3\n7\n", Duration::ZERO), 0);
    let n = 30_000u64;
    for i in 0..n {
        l.enqueue(T0, 1500, i).expect("accepted");
    }
    let t = at(100_000 * period + 3 * MS);
    let out = drain(&mut l, t - 10 * MS);
    assert_eq!(out.len() as u64, n);
    for (i, x) in out.iter().enumerate() {
        let i = i as u64;
        let expect = (i / 3) * period + [3, 3, 7][(i % 3) as usize] * MS;
        assert_eq!(x.delivered_at, at(expect), "packet {i}");
    }
    // After idling, an arrival exactly at an opportunity cannot use it (nor
    // the second opportunity of that same millisecond): it waits for the
    // next one, 4 ms later.
    l.enqueue(t, 1500, n).expect("accepted");
    assert_eq!(l.next_event(), Some(t + 4 * MS));
    // And one arriving a nanosecond earlier uses the opportunity at t.
    let mut l = Link::new(trace_cfg("3\n3\n7\n", Duration::ZERO), 0);
    l.enqueue(t - NS, 1500, 0).expect("accepted");
    assert_eq!(l.next_event(), Some(t));
}

#[test]
fn small_packets_share_an_opportunity() {
    let mut l = Link::new(trace_cfg("1\n", Duration::ZERO), 0);
    // 1 ms: #0 #1 #2 (3 x 500); 2 ms: #3 (500) + #4 (1000); #5 needs the 3
    // ms opportunity and leaves 500 B over, which #6 (waiting) uses.
    for (i, len) in [500, 500, 500, 500, 1000, 1000].into_iter().enumerate() {
        l.enqueue(T0, len, i).expect("accepted");
    }
    l.enqueue(at(2 * MS + MS / 2), 500, 6).expect("accepted");
    // Idle from 3 ms: the 4 and 5 ms credit is lost, not banked.
    l.enqueue(at(5 * MS + MS / 2), 1500, 7).expect("accepted");
    // Two opportunities for a jumbo packet arriving right at 6 ms.
    l.enqueue(at(6 * MS), 3000, 8).expect("accepted");
    // Both wait: #9 leaves 500 B at 9 ms, #10 finishes it off at 10 ms.
    l.enqueue(at(7 * MS + MS / 2), 1000, 9).expect("accepted");
    l.enqueue(at(7 * MS + MS / 2), 800, 10).expect("accepted");
    let out = drain(&mut l, at(SEC));
    let times: Vec<_> = out.iter().map(|d| ms_of(d.delivered_at)).collect();
    assert_eq!(times, vec![1, 1, 1, 2, 2, 3, 3, 6, 8, 9, 10]);
    assert!(out.iter().all(|d| d.delivered_at.as_nanos() % MS.as_nanos() == 0));
    let starts: Vec<_> = out.iter().map(|d| d.service_start.since_epoch()).collect();
    assert_eq!(starts, vec![Duration::ZERO, MS, MS, MS, 2 * MS, 2 * MS, 3 * MS, 5 * MS + MS / 2, 6 * MS, 8 * MS, 9 * MS]);
}

#[test]
fn generated_traces_drive_the_link_at_their_rate() {
    // 24 Mbit/s for 500 ms, then 6 Mbit/s for 500 ms, looping.
    let text = generate::step(&[(24_000_000, 500), (6_000_000, 500)]);
    let mut l = Link::new(trace_cfg(&text, Duration::ZERO), 0);
    for i in 0..20_000u64 {
        l.enqueue(T0, 1500, i).expect("accepted");
    }
    l.advance(at(4 * SEC));
    let out = drain(&mut l, at(4 * SEC));
    // Per second: 1000 + 250 opportunities.
    assert_eq!(out.len(), 5000);
    let in_first_half = out.iter().filter(|d| d.delivered_at <= at(500 * MS)).count();
    assert_eq!(in_first_half, 1000);
}

#[test]
fn scheduled_rate_change_replaces_the_trace() {
    let mut c = trace_cfg("10\n", Duration::ZERO);
    c.schedule = vec![ScheduledChange { at_ns: at(20 * MS), rate: Some(Rate::mbps(12)), ..Default::default() }];
    let mut l = Link::new(c, 0);
    for i in 0..4u64 {
        l.enqueue(T0, 1500, i).expect("accepted");
    }
    let times: Vec<_> = drain(&mut l, at(SEC)).iter().map(|d| ms_of(d.delivered_at)).collect();
    // Trace: 10, 20 ms; from 20 ms, 1 ms per packet at 12 Mbit/s.
    assert_eq!(times, vec![10, 20, 21, 22]);
}

#[test]
fn unloaded_trace_is_rejected_and_stalls() {
    let c = trace_cfg("1\n", Duration::ZERO);
    assert!(c.validate().is_ok());
    let json = serde_json::to_string(&c).expect("serializes");
    assert!(json.contains(r#""trace":{"name":"test","period_ms":1,"opportunities":1}"#));
    let back: DirectionConfig = serde_json::from_str(&json).expect("deserializes");
    assert!(matches!(back.validate(), Err(LinkConfigError::TraceNotLoaded { .. })));
    let mut l = Link::new(back, 0);
    l.enqueue(T0, 100, 0u8).expect("accepted");
    assert_eq!(l.next_event(), None);
    assert!(l.dequeue(Instant::MAX - NS).is_none());
}
