//! Both halves over loopback (no root needed): the server answers its token and nothing else,
//! stays within its limits, and survives garbage; the client completes a probe.

use std::net::{SocketAddr, UdpSocket};
use std::time::Duration;

use ccbench_pathprobe::wire::{self, Message};
use ccbench_pathprobe::{probe, Limits, ProbeOptions, ProbeServer};
use rand::{Rng, SeedableRng};

const TOKEN: [u8; 16] = *b"0123456789abcdef";

fn server(limits: Limits) -> (SocketAddr, ccbench_pathprobe::ServerHandle) {
    let s = ProbeServer::bind("127.0.0.1:0".parse().unwrap(), TOKEN, limits).unwrap();
    let addr = s.local_addr().unwrap();
    (addr, s.spawn().unwrap())
}

fn quick() -> ProbeOptions {
    // Loopback has no bottleneck below the cap: the rate comes back as a lower bound.
    ProbeOptions {
        echoes: 20,
        max_rate_bps: 20_000_000,
        search_train: Duration::from_millis(100),
        load_train: Duration::from_millis(300),
        loss_packets: 500,
        ..ProbeOptions::default()
    }
}

fn answers(socket: &UdpSocket) -> usize {
    let mut buf = [0u8; 2048];
    let mut n = 0;
    while socket.recv(&mut buf).is_ok() {
        n += 1;
    }
    n
}

#[test]
fn a_probe_over_loopback_completes_and_counts_its_bytes() {
    let (addr, handle) = server(Limits::default());
    let e = probe(addr, TOKEN, &quick()).unwrap();
    let report = handle.stop();
    assert!(e.base_rtt_ns < 5_000_000, "loopback RTT {} ns", e.base_rtt_ns);
    for d in [&e.down, &e.up] {
        assert!(d.rate_is_lower_bound, "{d:?}");
        assert!(d.rate_bps > 10e6 && d.rate_bps < 25e6, "{d:?}");
        assert_eq!(d.loss.sent, 500);
        assert!(d.loss.fraction < 0.05, "{d:?}");
    }
    assert_eq!(e.echoes_sent, 20);
    assert!(e.bytes_received > 1_000_000 && report.bytes_sent >= e.bytes_received, "{e:?} {report:?}");
    assert_eq!(report.ignored, 0);
}

#[test]
fn without_the_token_nothing_comes_back() {
    let (addr, handle) = server(Limits::default());
    let client = UdpSocket::bind("127.0.0.1:0").unwrap();
    client.connect(addr).unwrap();
    client.set_read_timeout(Some(Duration::from_millis(200))).unwrap();
    let wrong = [9u8; 16];
    client.send(&Message::Echo { seq: 1, sent_ns: 1 }.encode(&wrong)).unwrap();
    client.send(&Message::TrainRequest { train: 1, rate_bps: 1_000_000, count: 100, payload_len: 1000 }.encode(&wrong)).unwrap();
    assert_eq!(answers(&client), 0);
    // With it, an echo comes back exactly as long as it went out (no amplification).
    client.send(&Message::Echo { seq: 2, sent_ns: 5 }.encode_padded(&TOKEN, 100)).unwrap();
    let mut buf = [0u8; 2048];
    let n = client.recv(&mut buf).unwrap();
    assert_eq!((n, wire::parse_for(&buf[..n], &TOKEN)), (100, Some(Message::EchoReply { seq: 2, sent_ns: 5 })));
    // A second address with the right token is ignored: the session belongs to the first.
    let other = UdpSocket::bind("127.0.0.1:0").unwrap();
    other.connect(addr).unwrap();
    other.set_read_timeout(Some(Duration::from_millis(200))).unwrap();
    other.send(&Message::Echo { seq: 3, sent_ns: 5 }.encode(&TOKEN)).unwrap();
    assert_eq!(answers(&other), 0);
    assert_eq!(handle.stop().ignored, 3);
}

#[test]
fn the_byte_budget_refuses_a_train_that_would_exceed_it() {
    let (addr, handle) = server(Limits { max_bytes: 100_000, ..Limits::default() });
    let client = UdpSocket::bind("127.0.0.1:0").unwrap();
    client.connect(addr).unwrap();
    client.set_read_timeout(Some(Duration::from_millis(300))).unwrap();
    client.send(&Message::TrainRequest { train: 1, rate_bps: 100_000_000, count: 1000, payload_len: 1472 }.encode(&TOKEN)).unwrap();
    assert_eq!(answers(&client), 0, "1.5 MB asked, 100 kB allowed");
    client.send(&Message::TrainRequest { train: 2, rate_bps: 100_000_000, count: 50, payload_len: 1472 }.encode(&TOKEN)).unwrap();
    assert_eq!(answers(&client), 50);
    let report = handle.stop();
    assert_eq!((report.trains_refused, report.bytes_sent), (1, 50 * 1500));
}

#[test]
fn the_time_limit_ends_the_session() {
    let s = ProbeServer::bind("127.0.0.1:0".parse().unwrap(), TOKEN, Limits { max_duration: Duration::from_millis(200), ..Limits::default() }).unwrap();
    let report = s.run(&std::sync::atomic::AtomicBool::new(false));
    assert!(report.timed_out);
}

/// Garbage and mangled probe datagrams at the server, then a real probe still works; and the
/// parser itself never panics on random or mutated input (the fuzz target's stable twin).
#[test]
fn garbage_is_ignored_and_never_panics() {
    let mut rng = rand::rngs::StdRng::seed_from_u64(7);
    let valid: Vec<Vec<u8>> = [
        Message::Echo { seq: 1, sent_ns: 2 },
        Message::TrainRequest { train: 1, rate_bps: u64::MAX, count: u32::MAX, payload_len: u16::MAX },
        Message::Train { train: 1, seq: u32::MAX, count: u32::MAX, sent_ns: u64::MAX },
        Message::ReportRequest { train: 0 },
        Message::Report { train: 1, stats: Default::default() },
    ]
    .iter()
    .map(|m| m.encode(&TOKEN))
    .collect();
    for _ in 0..200_000 {
        let mut bytes = if rng.gen_bool(0.5) { valid[rng.gen_range(0..valid.len())].clone() } else { (0..rng.gen_range(0..80)).map(|_| rng.gen()).collect() };
        for _ in 0..rng.gen_range(0..4) {
            if !bytes.is_empty() {
                let i = rng.gen_range(0..bytes.len());
                bytes[i] = rng.gen();
            }
        }
        bytes.truncate(rng.gen_range(0..=bytes.len()));
        ccbench_pathprobe::fuzzing::fuzz_datagram(&bytes);
    }
    // Garbage from the client's own address, then a probe from it: the server's state survives.
    let (addr, handle) = server(Limits::default());
    let noisy = UdpSocket::bind("127.0.0.1:0").unwrap();
    for _ in 0..2000 {
        let len = rng.gen_range(0..200);
        let bytes: Vec<u8> = (0..len).map(|_| rng.gen()).collect();
        noisy.send_to(&bytes, addr).unwrap();
    }
    let e = probe(addr, TOKEN, &ProbeOptions { loss_packets: 100, ..quick() });
    // The noisy socket was a different address and never presented the token: the probe owns
    // the session.
    assert!(e.is_ok(), "{e:?}");
    assert!(handle.stop().ignored >= 2000);
}
