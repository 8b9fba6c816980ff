use super::*;

fn policed(rate_bps: u64, burst_bytes: u64) -> DirectionConfig {
    DirectionConfig { policer: Some(Policer { rate_bps, burst_bytes }), ..Default::default() }
}

#[test]
fn long_run_admitted_rate_equals_the_policer_rate() {
    let rate = 5_000_000u64;
    let burst = 15_000u64;
    let mut l = Link::new(policed(rate, burst), 0);
    let mut rng = ChaCha8Rng::seed_from_u64(3);
    let t_end = at(100 * SEC);
    let mut t = T0;
    let mut i = 0u64;
    // ~2x the policer rate, irregular.
    while t < t_end {
        let len = rng.gen_range(64..=1500);
        match l.enqueue(t, len, i) {
            Ok(()) => {}
            Err(e) => assert_eq!(e.cause, DropCause::Policer),
        }
        i += 1;
        t += uniform(&mut rng, Duration::ZERO, 2 * u64::from(len) * 8 * SEC / (2 * rate));
        drain(&mut l, t);
    }
    let st = l.stats().clone();
    let admitted = st.bytes_in - st.bytes_dropped_policer;
    // A token bucket never admits more than burst + rate * time.
    let (ns, sec) = (t.as_nanos(), SEC.as_nanos());
    assert!(admitted <= burst + rate / 8 * (ns / sec) + rate / 8 * (ns % sec) / sec);
    let achieved = admitted as f64 * 8.0 / t.since_epoch().as_secs_f64();
    assert!((achieved - rate as f64).abs() / rate as f64 <= 0.001, "admitted {achieved} bit/s");
    assert!(st.drops_policer > 0);
    assert_eq!(st.packets_in, st.packets_out + st.drops_policer + l.in_flight_packets() as u64);
}

#[test]
fn burst_passes_untouched_after_idle() {
    // 1 Mbit/s: 1500 B of tokens every 12 ms.
    let mut l = Link::new(policed(1_000_000, 15_000), 0);
    let burst = |l: &mut Link<u32>, t: Instant| -> Vec<bool> { (0..11).map(|i| l.enqueue(t, 1500, i).is_ok()).collect() };
    let mut expect = vec![true; 10];
    expect.push(false);
    // The bucket starts full.
    assert_eq!(burst(&mut l, T0), expect);
    // Long idle: refilled, but only up to the burst size.
    assert_eq!(burst(&mut l, at(10 * SEC)), expect);
    // Exactly one packet's worth after 12 ms, not a nanosecond earlier.
    let t = at(10 * SEC + 12 * MS);
    assert!(l.enqueue(t - NS, 1500, 99).is_err());
    assert!(l.enqueue(t, 1500, 100).is_ok());
    assert!(l.enqueue(t, 1, 101).is_err());
    // The rejected 1500 B packet at t-1 took no tokens: 1 ns later the
    // bucket holds exactly what accrued since t.
    assert!(l.enqueue(t + 8 * US, 1, 102).is_ok());
    let st = l.stats();
    assert_eq!((st.drops_policer, st.bytes_dropped_policer), (4, 1500 * 3 + 1));
    assert_eq!(st.drops_buffer, 0);
}

#[test]
fn policer_runs_after_loss_and_before_the_buffer() {
    let c = DirectionConfig { rate: Rate::BitsPerSec(100_000), buffer: Buffer::Packets(1), loss: LossModel::Bernoulli { p: 1.0 }, ..policed(1_000_000, 3000) };
    let mut l = Link::new(c.clone(), 0);
    // Lost packets take no tokens.
    for i in 0..10 {
        assert_eq!(l.enqueue(T0, 1500, i).map_err(|e| e.cause), Err(DropCause::Loss));
    }
    let mut l = Link::new(DirectionConfig { loss: LossModel::None, ..c }, 0);
    // Server (120 ms per packet), one buffer slot; the third packet is
    // refused by the policer before it reaches the full buffer. Once tokens
    // are back, the buffer refuses the fourth: policing happens upstream, so
    // that packet's tokens are spent all the same.
    assert!(l.enqueue(T0, 1500, 0).is_ok());
    assert!(l.enqueue(T0, 1500, 1).is_ok());
    assert_eq!(l.enqueue(T0, 1500, 2).map_err(|e| e.cause), Err(DropCause::Policer));
    assert_eq!(l.enqueue(at(12 * MS), 1500, 3).map_err(|e| e.cause), Err(DropCause::BufferOverflow));
    assert_eq!(l.enqueue(at(20 * MS), 1500, 4).map_err(|e| e.cause), Err(DropCause::Policer));
}
