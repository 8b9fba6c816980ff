//! The sans-IO shell on a virtual clock: no devices, no threads, no root.

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use ccbench_emu::gso::{VnetHdr, GSO_TCPV4, GSO_UDP_L4, VNET_HDR_LEN};
use ccbench_emu::{LinkSample, MeasureWindow, SampleSink, Shell, ShellConfig};
use ccbench_link::time;
use ccbench_link::{Buffer, DirectionConfig, Rate};

const NS: time::Duration = time::Duration::from_nanos(1);
const MS: time::Duration = time::Duration::from_millis(1);
/// The start of the shell's (virtual) clock.
const T0: time::Instant = time::Instant::EPOCH;

/// `d` after the start of the virtual clock.
fn at(d: time::Duration) -> time::Instant {
    T0 + d
}

fn config(offload: bool, dir: DirectionConfig) -> ShellConfig {
    ShellConfig { name: "uplink", config: dir, seed: 7, mtu: 1500, offload, udp_offload: offload, sample_interval: 10 * MS, min_wake_gap: time::Duration::ZERO }
}

/// A 1000-byte IPv4/UDP-looking packet (the link does not parse non-superframes).
fn udp(tag: u8) -> Vec<u8> {
    let mut p = vec![tag; 1000];
    p[0] = 0x45;
    p[9] = 17;
    p
}

/// Everything `poll_transmit` hands out at `now`.
fn drain(shell: &mut Shell, now: time::Instant) -> Vec<Vec<u8>> {
    let mut out = Vec::new();
    while let Some(b) = shell.poll_transmit(now) {
        out.push(b.to_vec());
    }
    out
}

#[test]
fn packets_leave_when_the_model_says_on_a_virtual_clock() {
    // 8 Mbit/s: a 1000-byte packet takes 1 ms to serialize; then 10 ms of delay.
    let dir = DirectionConfig { rate: Rate::BitsPerSec(8_000_000), delay_ns: 10 * MS, ..Default::default() };
    let cfg = ShellConfig { sample_interval: 100 * MS, ..config(false, dir) };
    let mut shell = Shell::new(cfg, T0, MeasureWindow::new(Instant::now()));
    for tag in 1..=3 {
        shell.handle_read(T0, &udp(tag));
    }
    assert!(drain(&mut shell, T0).is_empty(), "nothing leaves before its time");
    assert_eq!(shell.poll_timeout(), at(11 * MS), "first departure: 1 ms serialization + 10 ms delay");
    assert!(drain(&mut shell, at(11 * MS - NS)).is_empty());
    assert_eq!(drain(&mut shell, at(11 * MS)), vec![udp(1)], "bytes unchanged");
    assert_eq!(shell.poll_timeout(), at(12 * MS));
    assert_eq!(drain(&mut shell, at(20 * MS)), vec![udp(2), udp(3)]);
    assert_eq!(shell.poll_timeout(), at(40 * MS), "nothing left: the next wake-up is the longest sleep");
    assert!(drain(&mut shell, at(150 * MS)).is_empty());
    let r = shell.finish(at(200 * MS), 0.0);
    assert_eq!((r.stats.packets_in, r.stats.packets_out, r.writes, r.malformed), (3, 3, 3, 0));
    // Samples are due every 100 ms and taken when the shell is polled.
    assert_eq!(r.series.iter().map(|s| s.t_us).collect::<Vec<_>>(), vec![150_000]);
    assert_eq!(r.series[0].delivered_bytes, 3000);
    // Lateness: packet 2 was due at 12 ms and left at 20 ms.
    assert_eq!(r.lateness.max_us, 8000.0);
}

#[test]
fn the_window_counts_exactly_the_events_inside_it_with_bounded_memory() {
    let epoch = Instant::now();
    let window = MeasureWindow::new(epoch);
    // 4 Mbit/s, buffer of 2 packets: one 1000-byte packet per ms overloads it (2 ms each).
    let dir = DirectionConfig { rate: Rate::BitsPerSec(4_000_000), buffer: Buffer::Packets(2), ..Default::default() };
    let mut shell = Shell::new(config(false, dir), T0, window.clone());
    let mut max_in_flight = 0;
    for ms in 0..3000u64 {
        let now = at(ms * MS);
        // The caller opens and closes the window a little after the instants it names,
        // as a workload does: the emulator must still attribute by the named instant.
        if ms == 1050 {
            window.open(epoch + Duration::from_millis(1000));
        }
        if ms == 2100 {
            window.close(epoch + Duration::from_millis(2000));
        }
        shell.handle_read(now, &udp(1));
        drain(&mut shell, now);
        max_in_flight = max_in_flight.max(shell.in_flight());
    }
    let r = shell.finish(at(3000 * MS), 0.0);
    let w = r.window.expect("opened and closed");
    assert_eq!((w.from_us, w.to_us), (1_000_000, 2_000_000));
    // One arrival per ms in [1000, 2000) ms; the server takes one every 2 ms.
    assert_eq!(w.stats.packets_in, 1000);
    assert_eq!(w.stats.drops_buffer + w.stats.packets_out, 1000, "in steady state, what arrives leaves or is dropped");
    assert!((499..=501).contains(&w.stats.packets_out), "{}", w.stats.packets_out);
    assert!((w.utilization - 1.0).abs() < 0.01, "the link was saturated: {}", w.utilization);
    // The whole life includes the unsaturated first milliseconds and the 1 s after.
    assert_eq!(r.stats.packets_in, 3000);
    assert!(max_in_flight <= 3);
}

#[test]
fn no_window_without_open_and_close() {
    let window = MeasureWindow::new(Instant::now());
    let mut shell = Shell::new(config(false, DirectionConfig::default()), T0, window.clone());
    shell.handle_read(T0, &udp(1));
    drain(&mut shell, T0);
    window.open(Instant::now());
    assert_eq!(shell.finish(at(MS), 0.0).window, None, "open but never closed");
}

struct Counting(Arc<Mutex<Vec<u64>>>);

impl SampleSink for Counting {
    fn push(&mut self, s: &LinkSample) {
        self.0.lock().unwrap().push(s.t_us);
    }
}

#[test]
fn a_streaming_shell_hands_samples_to_the_sink_and_keeps_none() {
    let seen = Arc::new(Mutex::new(Vec::new()));
    let mut shell = Shell::streaming(config(false, DirectionConfig::default()), T0, MeasureWindow::new(Instant::now()), Box::new(Counting(seen.clone())));
    for ms in 0..1000u64 {
        shell.handle_read(at(ms * MS), &udp(1));
        drain(&mut shell, at(ms * MS));
    }
    let r = shell.finish(at(1000 * MS), 0.0);
    assert!(r.series.is_empty());
    assert_eq!(seen.lock().unwrap().len(), 99, "one sample per 10 ms from 10 to 990 ms");
}

/// A TCP/IPv4 superframe behind a GSO vnet header.
fn superframe(payload: usize, ihl_words: u8, doff_words: u8) -> Vec<u8> {
    let mut p = vec![0u8; VNET_HDR_LEN + 20 + 20 + payload];
    VnetHdr { flags: 1, gso_type: GSO_TCPV4, hdr_len: 40, gso_size: 1448, csum_start: 20, csum_offset: 16 }.write(&mut p);
    let ip = &mut p[VNET_HDR_LEN..];
    ip[0] = 0x40 | ihl_words;
    let total = ip.len() as u16;
    ip[2..4].copy_from_slice(&total.to_be_bytes());
    ip[8] = 64;
    ip[9] = 6;
    ip[32] = doff_words << 4;
    ip[33] = 0x10;
    p
}

#[test]
fn crafted_superframes_are_dropped_as_malformed_not_crashed_on() {
    for (ihl, doff) in [(0, 5), (1, 5), (4, 5), (5, 0), (5, 1), (5, 4), (15, 15), (0, 0)] {
        let mut shell = Shell::new(config(true, DirectionConfig::default()), T0, MeasureWindow::new(Instant::now()));
        shell.handle_read(T0, &superframe(4000, ihl, doff));
        let out = drain(&mut shell, T0);
        let r = shell.finish(at(NS), 0.0);
        assert_eq!((r.malformed, out.len()), (1, 0), "IHL {ihl}, data offset {doff}: dropped and counted");
    }
    let mut shell = Shell::new(config(true, DirectionConfig::default()), T0, MeasureWindow::new(Instant::now()));
    shell.handle_read(T0, &superframe(4000, 5, 5));
    assert_eq!(drain(&mut shell, T0).len(), 1, "a well-formed superframe is cut and merged back");
    assert_eq!(shell.finish(at(NS), 0.0).malformed, 0);
}

#[test]
fn crafted_plain_packets_through_the_coalescer_do_not_crash() {
    // Not superframes: the link carries them as they are, and the coalescer must look at
    // them without trusting their TCP data offset (once, 0..4 made it slice backwards).
    for doff in 0..16u8 {
        let mut shell = Shell::new(config(true, DirectionConfig::default()), T0, MeasureWindow::new(Instant::now()));
        for _ in 0..3 {
            let mut p = superframe(100, 5, doff);
            p[1] = 0; // GSO_NONE
            shell.handle_read(T0, &p);
        }
        let out = drain(&mut shell, T0);
        assert!(!out.is_empty());
        assert_eq!(shell.finish(at(NS), 0.0).malformed, 0);
    }
}

#[test]
fn reads_shorter_than_the_vnet_header_are_malformed() {
    let mut shell = Shell::new(config(true, DirectionConfig::default()), T0, MeasureWindow::new(Instant::now()));
    for n in 0..=VNET_HDR_LEN {
        shell.handle_read(T0, &vec![0u8; n]);
    }
    assert!(drain(&mut shell, T0).is_empty());
    let r = shell.finish(at(NS), 0.0);
    assert_eq!((r.malformed, r.stats.packets_in), (VNET_HDR_LEN as u64 + 1, 0));
}

#[test]
fn aqm_drops_count_in_the_window_with_their_packets_length() {
    let epoch = Instant::now();
    let window = MeasureWindow::new(epoch);
    window.open(epoch);
    // 4 Mbit/s (2 ms per 1000-byte packet), one arrival per ms: CoDel must drop.
    let dir = DirectionConfig { rate: Rate::BitsPerSec(4_000_000), aqm: ccbench_link::Aqm::codel(), ..Default::default() };
    let mut shell = Shell::new(config(false, dir), T0, window.clone());
    for ms in 0..3000u64 {
        shell.handle_read(at(ms * MS), &udp(1));
        drain(&mut shell, at(ms * MS));
    }
    window.close(epoch + Duration::from_secs(10));
    let r = shell.finish(at(3000 * MS), 0.0);
    let w = r.window.expect("window");
    assert!(r.stats.drops_aqm > 10, "CoDel dropped: {}", r.stats.drops_aqm);
    assert_eq!(w.stats.drops_aqm, r.stats.drops_aqm, "the window covers the whole run");
    assert_eq!(w.stats.bytes_dropped_aqm, 1000 * w.stats.drops_aqm, "each drop counts its packet's 1000 bytes, not its buffer's");
}

/// The entry meter sees what the link sees: the segments of one TSO superframe arrive
/// together (one read, one instant) and form one burst; packets read one at a time, spaced
/// wider than a quarter of their serialization time, are bursts of one. The window's
/// meter agrees with the lifetime one over the span it covers.
#[test]
fn superframe_segments_arrive_as_one_burst_and_paced_reads_alone() {
    let epoch = Instant::now();
    let window = MeasureWindow::new(epoch);
    window.open(epoch);
    window.close(epoch + Duration::from_secs(10));
    // 100 Mbit/s: a 1500-byte segment takes 120 µs, back to back under 30 µs.
    let dir = DirectionConfig { rate: Rate::BitsPerSec(100_000_000), ..Default::default() };
    let mut shell = Shell::new(config(true, dir), T0, window);
    // 10 superframes of 10 segments (1448 bytes of payload each), 5 ms apart.
    let sf = superframe(14_480, 5, 5);
    for i in 0..10u64 {
        shell.handle_read(at(i * 5 * MS), &sf);
        drain(&mut shell, at(i * 5 * MS));
    }
    // Then 50 plain packets 100 µs apart: 1000 bytes take 80 µs; 100 µs is well apart.
    let mut vnet_udp = vec![0u8; VNET_HDR_LEN];
    vnet_udp.extend_from_slice(&udp(1));
    for i in 0..50u64 {
        let now = at(100 * MS + i * 100 * time::Duration::from_micros(1));
        shell.handle_read(now, &vnet_udp);
        drain(&mut shell, now);
    }
    drain(&mut shell, at(1000 * MS));
    let r = shell.finish(at(1000 * MS), 0.0);
    assert_eq!((r.segments_from_superframes, r.malformed), (100, 0));
    let e = &r.stats.entry;
    assert_eq!((e.bursts.bursts(), e.bursts.packets(), e.bursts.max()), (60, 150, 10));
    assert_eq!(e.bursts.packet_quantile(0.5), 10, "100 of 150 packets came ten at a time");
    assert!((e.bursts.share_of_packets_above(1) - 100.0 / 150.0).abs() < 1e-12);
    assert_eq!(e.gaps.count(), 149);
    let w = r.window.expect("opened and closed");
    assert_eq!(w.stats.entry, r.stats.entry);
}

/// A UDP/IPv4 GSO batch of `n` datagrams of 1452 payload bytes behind its vnet header, as a
/// QUIC sender's `UDP_SEGMENT` send reaches a TUN device with USO.
fn udp_gso_batch(n: usize) -> Vec<u8> {
    let payload = 1452 * n;
    let mut p = vec![0u8; VNET_HDR_LEN + 28 + payload];
    VnetHdr { flags: 1, gso_type: GSO_UDP_L4, hdr_len: 28, gso_size: 1452, csum_start: 20, csum_offset: 6 }.write(&mut p);
    let ip = &mut p[VNET_HDR_LEN..];
    ip[0] = 0x45;
    let total = ip.len() as u16;
    ip[2..4].copy_from_slice(&total.to_be_bytes());
    ip[8] = 64;
    ip[9] = 17;
    ip[12..16].copy_from_slice(&[10, 77, 0, 2]);
    ip[16..20].copy_from_slice(&[10, 77, 0, 1]);
    ip[24..26].copy_from_slice(&((8 + payload) as u16).to_be_bytes());
    for (i, b) in ip[28..].iter_mut().enumerate() {
        *b = (i / 1452) as u8;
    }
    p
}

/// Issue 17 §2: a UDP GSO batch read at once enters the link as its datagrams, and each
/// leaves after its own serialization (1480 wire bytes at 100 Mbit/s: 118.4 µs apart), as if
/// the kernel had cut the batch; datagrams due together leave as one UDP GSO frame, in order.
#[test]
fn a_udp_gso_batch_leaves_one_datagram_per_serialization_time() {
    let dir = DirectionConfig { rate: Rate::BitsPerSec(100_000_000), ..Default::default() };
    let us = time::Duration::from_micros(1);
    let serialization = 118_400 * NS;
    let mut shell = Shell::new(config(true, dir.clone()), T0, MeasureWindow::new(Instant::now()));
    shell.handle_read(T0, &udp_gso_batch(10));
    let mut departures = Vec::new();
    for step in 0..300u64 {
        let now = at(step * 10 * us);
        for frame in drain(&mut shell, now) {
            assert_eq!(frame.len(), VNET_HDR_LEN + 1480, "one datagram per write when they leave apart");
            departures.push((step * 10 * us, frame[VNET_HDR_LEN + 28]));
        }
    }
    assert_eq!(departures.len(), 10);
    for (k, (t, tag)) in departures.iter().enumerate() {
        let due = (k as u64 + 1) * serialization;
        assert!(*t >= due && *t < due + 10 * us, "datagram {k} left at {t:?}, due at {due:?}");
        assert_eq!(usize::from(*tag), k, "in order");
    }
    // Polled only once all are due: one UDP GSO frame of the ten, as GRO would hand them up.
    let mut shell = Shell::new(config(true, dir), T0, MeasureWindow::new(Instant::now()));
    shell.handle_read(T0, &udp_gso_batch(10));
    let out = drain(&mut shell, at(2 * MS));
    assert_eq!(out.len(), 1);
    let vh = VnetHdr::parse(&out[0]).unwrap();
    assert_eq!((vh.gso_type, vh.gso_size), (GSO_UDP_L4, 1452));
    let batch = udp_gso_batch(10);
    assert_eq!(out[0].len(), batch.len());
    assert_eq!(&out[0][VNET_HDR_LEN + 2..VNET_HDR_LEN + 4], &batch[VNET_HDR_LEN + 2..VNET_HDR_LEN + 4], "IP length");
    assert_eq!(&out[0][VNET_HDR_LEN + 12..VNET_HDR_LEN + 26], &batch[VNET_HDR_LEN + 12..VNET_HDR_LEN + 26], "addresses, ports, UDP length");
    assert_eq!(&out[0][VNET_HDR_LEN + 28..], &batch[VNET_HDR_LEN + 28..], "payload in order");
    let r = shell.finish(at(2 * MS), 0.0);
    assert_eq!((r.superframes, r.segments_from_superframes, r.stats.packets_out, r.writes), (1, 10, 10, 1));
}

/// Under FQ-CoDel the shell hashes each packet's 5-tuple, so a thin flow beside a flood gets
/// its own queue: none of its packets is lost to the flood's overflow, which drops from the
/// flood's queue (RFC 8290 section 4.1). Through drop-tail the thin flow loses its share.
#[test]
fn fq_codel_tells_the_flows_apart_by_their_headers() {
    let thin_delivered = |aqm: ccbench_link::Aqm| {
        // 8 Mbit/s: 1 ms per 1000-byte packet; the flood offers two per ms, the thin flow
        // one every 10 ms.
        let dir = DirectionConfig { rate: Rate::BitsPerSec(8_000_000), buffer: Buffer::Packets(20), aqm, ..Default::default() };
        let mut shell = Shell::new(config(false, dir), T0, MeasureWindow::new(Instant::now()));
        let mut thin = 0;
        for ms in 0..2000u64 {
            shell.handle_read(at(ms * MS), &udp(1));
            shell.handle_read(at(ms * MS), &udp(1));
            if ms % 10 == 5 {
                shell.handle_read(at(ms * MS), &udp(2));
            }
            thin += drain(&mut shell, at(ms * MS)).iter().filter(|p| p[1] == 2).count();
        }
        thin += drain(&mut shell, at(3000 * MS)).iter().filter(|p| p[1] == 2).count();
        let r = shell.finish(at(3000 * MS), 0.0);
        assert!(r.stats.drops_buffer > 1000, "the flood overflows: {}", r.stats.drops_buffer);
        thin
    };
    assert_eq!(thin_delivered(ccbench_link::Aqm::FqCodel(ccbench_link::FqCodel::default())), 200);
    assert!(thin_delivered(ccbench_link::Aqm::DropTail) < 150);
}

/// A 1500-byte IPv4/TCP-looking packet with TOS `tos` and a valid header checksum.
fn ipv4_tcp(tos: u8, id: u16) -> Vec<u8> {
    let mut p = vec![0u8; 1500];
    p[..20].copy_from_slice(&[0x45, tos, 0x05, 0xdc, 0, 0, 0x40, 0x00, 0x40, 0x06, 0, 0, 10, 77, 0, 1, 10, 77, 0, 2]);
    p[4..6].copy_from_slice(&id.to_be_bytes());
    let c = ccbench_link::wire::ipv4_header_checksum(&p[..20]);
    p[10..12].copy_from_slice(&c.to_be_bytes());
    p
}

#[test]
fn the_aqm_marks_reach_the_ip_header_with_a_valid_checksum() {
    // 12 Mbit/s (1 ms per packet), CoDel with ECN and a 1 ms target / 10 ms interval: 200
    // ECT(0) packets at once build a standing queue that CoDel marks instead of dropping.
    let aqm = ccbench_link::Aqm::Codel(ccbench_link::Codel { target_ns: MS, interval_ns: 10 * MS, ecn: true, ..Default::default() });
    let dir = DirectionConfig { rate: Rate::mbps(12), aqm, ..Default::default() };
    let mut shell = Shell::new(config(false, dir), T0, MeasureWindow::new(Instant::now()));
    for id in 0..200 {
        shell.handle_read(T0, &ipv4_tcp(0xb8 | 0x02, id));
    }
    let out = drain(&mut shell, at(1000 * MS));
    assert_eq!(out.len(), 200, "nothing dropped");
    let ce: Vec<_> = out.iter().filter(|p| p[1] & 3 == 3).collect();
    assert!(ce.len() > 5, "{} marked", ce.len());
    for p in &out {
        assert_eq!(p[1] & !3, 0xb8, "DSCP kept");
        assert_eq!(u16::from_be_bytes([p[10], p[11]]), ccbench_link::wire::ipv4_header_checksum(&p[..20]), "checksum valid");
        assert_eq!(p[20..], vec![0u8; 1480][..], "payload untouched");
    }
    let r = shell.finish(at(1000 * MS), 0.0);
    assert_eq!((r.stats.ce_marks, r.stats.drops_aqm), (ce.len() as u64, 0));
    // Not-ECT packets through the same queue are dropped instead.
    let aqm = ccbench_link::Aqm::Codel(ccbench_link::Codel { target_ns: MS, interval_ns: 10 * MS, ecn: true, ..Default::default() });
    let mut shell = Shell::new(config(false, DirectionConfig { rate: Rate::mbps(12), aqm, ..Default::default() }), T0, MeasureWindow::new(Instant::now()));
    for id in 0..200 {
        shell.handle_read(T0, &ipv4_tcp(0, id));
    }
    let out = drain(&mut shell, at(1000 * MS));
    let r = shell.finish(at(1000 * MS), 0.0);
    assert!(out.iter().all(|p| p[1] == 0));
    assert_eq!((r.stats.ce_marks, r.stats.drops_aqm as usize), (0, 200 - out.len()));
    assert!(r.stats.drops_aqm > 5);
}

/// The batching gap (`min_wake_gap`) counts from the last departure: a read just before a
/// departure is due does not push the departure back by the gap (issue 33 §2).
#[test]
fn a_read_does_not_push_back_a_departure_that_is_due() {
    const US: time::Duration = time::Duration::from_micros(1);
    // 80 Mbit/s: a 1000-byte packet serializes in 100 µs; no delay.
    let dir = DirectionConfig { rate: Rate::BitsPerSec(80_000_000), ..Default::default() };
    let cfg = ShellConfig { sample_interval: 100 * MS, min_wake_gap: 25 * US, ..config(false, dir) };
    let mut shell = Shell::new(cfg, T0, MeasureWindow::new(Instant::now()));
    shell.handle_read(T0, &udp(1));
    shell.handle_read(T0, &udp(2));
    assert_eq!(shell.poll_timeout(), at(100 * US), "the first departure, more than the gap after the start");
    assert_eq!(drain(&mut shell, at(100 * US)), vec![udp(1)]);
    assert_eq!(shell.poll_timeout(), at(200 * US));
    // An arrival 190 µs in: the second packet is still due at 200 µs, not at 190 + 25.
    shell.handle_read(at(190 * US), &udp(3));
    assert_eq!(shell.poll_timeout(), at(200 * US));
    assert_eq!(drain(&mut shell, at(200 * US)), vec![udp(2)]);
    // Departures closer together than the gap still wait for it after a departure.
    let dir = DirectionConfig { rate: Rate::BitsPerSec(800_000_000), ..Default::default() };
    let cfg = ShellConfig { sample_interval: 100 * MS, min_wake_gap: 25 * US, ..config(false, dir) };
    let mut shell = Shell::new(cfg, T0, MeasureWindow::new(Instant::now()));
    for tag in 1..=3 {
        shell.handle_read(T0, &udp(tag));
    }
    assert_eq!(drain(&mut shell, at(20 * US)), vec![udp(1), udp(2)], "10 µs apart at 800 Mbit/s");
    assert_eq!(shell.poll_timeout(), at(45 * US), "the third (due at 30 µs) waits out the gap from the last departure");
}

/// A TCP superframe of `payload` bytes whose payload is `tag`, behind a GSO vnet header.
fn tagged_superframe(payload: usize, tag: u8) -> Vec<u8> {
    let mut p = superframe(payload, 5, 5);
    p[VNET_HDR_LEN + 40..].fill(tag);
    p
}

/// What leaves a shell polled every 100 µs for 20 ms, after `reads` (arrival, bytes): each
/// write's time and the TCP payload it carries.
fn run_reads(mut shell: Shell, reads: &[(time::Duration, Vec<u8>)]) -> (Vec<(time::Duration, Vec<u8>)>, ccbench_emu::DirectionReport) {
    let step = time::Duration::from_micros(100);
    let mut out = Vec::new();
    let mut next = 0;
    for k in 0..200u64 {
        let now = k * step;
        while next < reads.len() && reads[next].0 <= now {
            shell.handle_read(at(now), &reads[next].1);
            next += 1;
        }
        for frame in drain(&mut shell, at(now)) {
            out.push((now, frame[VNET_HDR_LEN + 40..].to_vec()));
        }
    }
    (out, shell.finish(at(200 * step), 0.0))
}

/// Issue 33: at an unlimited rate a superframe crosses whole, and that is exact: the same
/// departures at the same instants, in the same order, with the same payload, as cutting it
/// into segments and merging them back; the model still sees every segment.
#[test]
fn an_unlimited_link_carries_superframes_whole_exactly_as_cut_ones() {
    let dir = DirectionConfig { delay_ns: 10 * MS, ..Default::default() };
    let us = time::Duration::from_micros(1);
    let reads = vec![
        (time::Duration::ZERO, tagged_superframe(1448 * 2 + 1104, 1)),
        (300 * us, tagged_superframe(1448 * 44, 2)),
        (300 * us, tagged_superframe(100, 3)),
        (1000 * us, tagged_superframe(1448 * 5, 4)),
    ];
    let whole = Shell::new(config(true, dir.clone()), T0, MeasureWindow::new(Instant::now()));
    let cut = Shell::new(config(true, dir), T0, MeasureWindow::new(Instant::now())).cutting_superframes();
    let (whole_out, w) = run_reads(whole, &reads);
    let (cut_out, c) = run_reads(cut, &reads);
    let times: Vec<_> = whole_out.iter().map(|(t, p)| (*t, p.len(), p[0])).collect();
    assert_eq!(times, vec![(10 * MS, 1448 * 2 + 1104, 1), (10_300 * us, 1448 * 44, 2), (10_300 * us, 100, 3), (11 * MS, 1448 * 5, 4)]);
    assert_eq!(whole_out, cut_out, "the same writes at the same instants");
    assert_eq!(w.writes, c.writes);
    assert_eq!((w.superframes, w.segments_from_superframes), (4, 3 + 44 + 1 + 5));
    assert_eq!(
        (w.stats.packets_in, w.stats.packets_out, w.stats.bytes_in, w.stats.bytes_out),
        (c.stats.packets_in, c.stats.packets_out, c.stats.bytes_in, c.stats.bytes_out)
    );
    assert_eq!(w.stats.packets_out, 53, "every segment through the model");
    assert_eq!(w.stats.bytes_out, 53 * 40 + 1448 * 51 + 1104 + 100);
    assert_eq!((w.lateness.count, w.lateness.p99_us), (c.lateness.count, c.lateness.p99_us));
    assert_eq!(w.malformed, 0);
}

/// Whole superframes only where the model treats every segment alike.
#[test]
fn superframes_are_cut_wherever_the_model_decides_per_packet() {
    use ccbench_emu::shell::crosses_whole;
    use ccbench_link::{Jitter, LossModel};
    let base = DirectionConfig { delay_ns: 10 * MS, buffer: Buffer::Packets(5), ..Default::default() };
    assert!(crosses_whole(&config(true, base.clone())), "unlimited rate, any buffer: the server is never busy");
    assert!(!crosses_whole(&config(false, base.clone())), "no offloads, no superframes");
    for (what, dir) in [
        ("a rate", DirectionConfig { rate: Rate::mbps(100), ..base.clone() }),
        ("loss", DirectionConfig { loss: LossModel::Bernoulli { p: 0.01 }, ..base.clone() }),
        ("jitter", DirectionConfig { jitter: Jitter::Uniform { max_ns: MS, reorder: false }, ..base.clone() }),
        ("an AQM", DirectionConfig { aqm: ccbench_link::Aqm::codel(), ..base.clone() }),
    ] {
        assert!(!crosses_whole(&config(true, dir)), "{what}");
    }
}

/// Aggregation (`--aggregate-up`) comes from the link model: the shell wakes at the period's
/// boundary and hands out everything held there as one burst.
#[test]
fn aggregated_packets_leave_together_at_the_periods_boundary() {
    let dir = DirectionConfig { delay_ns: 10 * MS, aggregate_ns: Some(4 * MS), ..Default::default() };
    // Samples every 100 ms, so that no sampling wake-up comes first.
    let cfg = ShellConfig { sample_interval: 100 * MS, ..config(false, dir) };
    let mut shell = Shell::new(cfg, T0, MeasureWindow::new(Instant::now()));
    // Due at 12.5, 13 and 15 ms: all held until 16 ms.
    for (tag, t) in [(1, 2 * MS + MS / 2), (2, 3 * MS), (3, 5 * MS)] {
        shell.handle_read(at(t), &udp(tag));
        assert!(drain(&mut shell, at(t)).is_empty());
    }
    assert_eq!(shell.poll_timeout(), at(16 * MS));
    assert!(drain(&mut shell, at(16 * MS - NS)).is_empty());
    assert_eq!(drain(&mut shell, at(16 * MS)), vec![udp(1), udp(2), udp(3)], "one burst, in order");
    // Due at 27 ms: the next boundary, 28 ms.
    shell.handle_read(at(17 * MS), &udp(4));
    assert_eq!(shell.poll_timeout(), at(28 * MS));
    assert_eq!(drain(&mut shell, at(28 * MS)), vec![udp(4)]);
    let r = shell.finish(at(100 * MS), 0.0);
    assert_eq!((r.stats.packets_in, r.stats.packets_out), (4, 4));
}
