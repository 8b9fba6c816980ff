use super::*;

const N: u64 = 100_000;

/// Unlimited rate, 10 ms delay, one packet every `gap`; returns the
/// deliveries in dequeue order.
fn run(jitter: Jitter, gap: Duration, seed: u64) -> Vec<Delivery<u64>> {
    let c = DirectionConfig { delay_ns: 10 * MS, jitter, ..Default::default() };
    let mut l = Link::new(c, seed);
    let mut out = Vec::new();
    for i in 0..N {
        l.enqueue(at(i * gap), 1000, i).expect("accepted");
        out.extend(drain(&mut l, at(i * gap)));
    }
    out.extend(drain(&mut l, FAR));
    assert_eq!(out.len() as u64, N);
    out
}

fn added(d: &Delivery<u64>) -> Duration {
    d.delivered_at - d.arrived_at - 10 * MS
}

#[test]
fn uniform_jitter_mean_and_bounds() {
    let max = 4 * MS;
    // Gaps longer than the jitter: the FIFO clamp never binds, so the
    // added delay is exactly the sample.
    let out = run(Jitter::Uniform { max_ns: max, reorder: false }, 5 * MS, 1);
    let xs: Vec<Duration> = out.iter().map(added).collect();
    assert!(xs.iter().all(|&x| x <= max));
    assert!(*xs.iter().min().expect("n") < max / 1000);
    assert!(*xs.iter().max().expect("n") > max - max / 1000);
    let mean = xs.iter().sum::<Duration>().as_nanos() as f64 / N as f64;
    let sigma = max.as_nanos() as f64 / 12f64.sqrt() / (N as f64).sqrt();
    assert!((mean - max.as_nanos() as f64 / 2.0).abs() < 4.0 * sigma, "mean {mean}");
}

#[test]
fn normal_jitter_is_a_half_normal() {
    let sd = 2 * MS;
    let out = run(Jitter::Normal { sd_ns: sd, reorder: false }, 20 * MS, 2);
    let xs: Vec<f64> = out.iter().map(|d| added(d).as_nanos() as f64).collect();
    let n = N as f64;
    let sd = sd.as_nanos() as f64;
    let mean = xs.iter().sum::<f64>() / n;
    let expect = sd * (2.0 / std::f64::consts::PI).sqrt();
    let sigma = sd * (1.0 - 2.0 / std::f64::consts::PI).sqrt() / n.sqrt();
    assert!((mean - expect).abs() < 4.0 * sigma, "mean {mean} vs {expect}");
    // P(|x| > 2 sd) = 4.55 %.
    let tail = xs.iter().filter(|&&x| x > 2.0 * sd).count() as f64 / n;
    let p = 0.0455;
    assert!((tail - p).abs() < 4.0 * (p * (1.0 - p) / n).sqrt(), "tail {tail}");
}

#[test]
fn no_reordering_without_the_flag() {
    let max = 10 * MS;
    // 1 ms apart, jitter up to 10 ms: samples alone would reorder a lot.
    let out = run(Jitter::Uniform { max_ns: max, reorder: false }, MS, 3);
    for w in out.windows(2) {
        assert_eq!(w[1].packet, w[0].packet + 1);
        assert!(w[1].delivered_at >= w[0].delivered_at);
    }
    // Held back by a predecessor, never beyond the largest jitter.
    assert!(out.iter().all(|d| added(d) <= max));
    // The clamp makes the added delay the maximum of (own sample, each
    // predecessor's sample minus the time since it arrived): with samples
    // U[0, 10] ms and 1 ms spacing, P(added <= x) = prod_k min(1, (x+k)/10).
    let cdf = |x: f64| (0..10).map(|k| ((x + k as f64) / 10.0).min(1.0)).product::<f64>();
    let steps = 100_000;
    let expect_ms: f64 = (0..steps).map(|i| 1.0 - cdf((i as f64 + 0.5) * 10.0 / steps as f64)).sum::<f64>() * 10.0 / steps as f64;
    let mean_ms = out.iter().map(added).sum::<Duration>().as_nanos() as f64 / N as f64 / MS.as_nanos() as f64;
    assert!((mean_ms - expect_ms).abs() < 0.02 * expect_ms, "mean {mean_ms} vs {expect_ms}");
}

#[test]
fn reordering_with_the_flag() {
    let max = 10 * MS;
    let out = run(Jitter::Uniform { max_ns: max, reorder: true }, MS, 3);
    let overtaken = out.windows(2).filter(|w| w[1].packet < w[0].packet).count();
    assert!(overtaken > (N / 10) as usize, "only {overtaken} inversions");
    // Each packet carries its own sample, so the added delay is uniform.
    let mean = out.iter().map(added).sum::<Duration>().as_nanos() as f64 / N as f64;
    let sigma = max.as_nanos() as f64 / 12f64.sqrt() / (N as f64).sqrt();
    assert!((mean - max.as_nanos() as f64 / 2.0).abs() < 4.0 * sigma, "mean {mean}");
    assert!(out.iter().all(|d| added(d) <= max));
    for w in out.windows(2) {
        assert!(w[1].delivered_at >= w[0].delivered_at);
    }
}

#[test]
fn reordering_ties_keep_arrival_order() {
    // Jitter of 0 or 1 ns on simultaneous arrivals: many exact ties.
    let c = DirectionConfig { jitter: Jitter::Uniform { max_ns: NS, reorder: true }, ..Default::default() };
    let mut l = Link::new(c, 4);
    for i in 0..1000u64 {
        l.enqueue(at(i / 10 * 2 * NS), 100, i).expect("accepted");
    }
    let out = drain(&mut l, at(SEC));
    assert_eq!(out.len(), 1000);
    let mut ties = 0;
    for w in out.windows(2) {
        if w[0].delivered_at == w[1].delivered_at {
            ties += 1;
            assert!(w[0].packet < w[1].packet);
        }
    }
    assert!(ties > 500);
}

#[test]
fn jitter_does_not_change_the_loss_pattern() {
    let pattern = |jitter| {
        let c = DirectionConfig { rate: Rate::mbps(50), loss: LossModel::Bernoulli { p: 0.1 }, jitter, ..Default::default() };
        let mut l = Link::new(c, 9);
        let lost: Vec<bool> = (0..10_000u64).map(|i| l.enqueue(at(i * 100 * US), 1000, i).is_err()).collect();
        lost
    };
    let base = pattern(Jitter::None);
    assert_eq!(base, pattern(Jitter::Uniform { max_ns: MS, reorder: false }));
    assert_eq!(base, pattern(Jitter::Normal { sd_ns: MS, reorder: true }));
}

#[test]
fn reorder_next_event_is_never_late() {
    // With reordering, next_event may wake the driver early (the successor
    // of the packet in service might overtake it) but never late.
    let c = DirectionConfig {
        rate: Rate::mbps(5),
        delay_ns: 30 * MS,
        buffer: Buffer::Packets(50),
        jitter: Jitter::Normal { sd_ns: 5 * MS, reorder: true },
        ..Default::default()
    };
    let mut l = Link::new(c, 1);
    let mut now = T0;
    let mut t_arr = T0;
    let mut rng = ChaCha8Rng::seed_from_u64(8);
    let mut id = 0u64;
    let mut out = 0;
    for _ in 0..5_000 {
        t_arr += uniform(&mut rng, Duration::ZERO, 2 * MS);
        // Visit every wake-up before the next arrival.
        while let Some(e) = l.next_event().filter(|&e| e < t_arr) {
            assert!(e >= now);
            now = e;
            while let Some(d) = l.dequeue(now) {
                assert_eq!(d.delivered_at, now);
                out += 1;
            }
        }
        now = t_arr;
        let _ = l.enqueue(now, rng.gen_range(64..=1500), id);
        id += 1;
        while let Some(d) = l.dequeue(now) {
            assert_eq!(d.delivered_at, now);
            out += 1;
        }
    }
    assert_eq!(out + l.stats().drops_buffer + l.in_flight_packets() as u64, id);
}
