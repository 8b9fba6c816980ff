//! What each AQM costs the emulator per packet: the link model alone on a virtual clock (no
//! devices, no system calls), driven the way the emulator's shell drives it, and timed on the
//! wall clock. Prints one row per AQM and load.
//!
//!     cargo run --release -p ccbench-link --example aqm_cost [PACKETS]
//!
//! The figures are CPU time per packet on this machine, for comparison between the rows; the
//! emulator's system calls (a read and a write per packet, or per superframe) cost far more.

use std::hint::black_box;
use std::time::Instant as Wall;

use ccbench_link::flow::flow_of;
use ccbench_link::time::{Duration, Instant};
use ccbench_link::{Aqm, Buffer, DirectionConfig, Link, Rate};

/// 1 Gbit/s: 12 µs per 1500-byte packet.
const RATE_BPS: u64 = 1_000_000_000;
const FLOWS: u64 = 4;

/// `packets` 1500-byte packets from `FLOWS` flows in turn at `load` times the link's rate,
/// through a 1000-packet buffer: nanoseconds per packet, and the share dropped.
fn drive(aqm: Aqm, load: f64, packets: u64) -> (f64, f64) {
    let cfg =
        DirectionConfig { rate: Rate::BitsPerSec(RATE_BPS), delay_ns: Duration::from_millis(10), buffer: Buffer::Packets(1000), aqm, ..Default::default() };
    let mut link: Link<u64> = Link::new(cfg, 1);
    let gap_ns = 1500.0 * 8.0 * 1e9 / RATE_BPS as f64 / load;
    let flows: Vec<u64> = (0..FLOWS).map(|i| 0x1000 + i).collect();
    let start = Wall::now();
    for i in 0..packets {
        let now = Instant::from_nanos((i as f64 * gap_ns) as u64);
        let _ = black_box(link.enqueue_in_flow(now, 1500, flows[(i % FLOWS) as usize], i));
        // The shell's loop: deliver what is due, reclaim what the AQM dropped.
        while let Some(d) = link.dequeue(now) {
            black_box(d);
        }
        while let Some(d) = link.take_dropped() {
            black_box(d);
        }
    }
    let ns = start.elapsed().as_nanos() as f64 / packets as f64;
    let s = link.stats();
    let dropped = (s.drops_buffer + s.drops_aqm) as f64 / s.packets_in as f64;
    (ns, dropped)
}

/// Nanoseconds to hash one TCP/IPv4 packet's 5-tuple (what the shell adds per packet under
/// FQ-CoDel).
fn flow_hash_cost(packets: u64) -> f64 {
    let mut p = vec![0x45u8, 0, 5, 0xdc, 0, 0, 0x40, 0, 64, 6, 0, 0, 10, 77, 0, 2, 10, 77, 0, 1];
    p.extend_from_slice(&[0x14, 0x51, 0x9c, 0x40]);
    p.resize(1500, 0);
    let start = Wall::now();
    let mut acc = 0u64;
    for i in 0..packets {
        p[22] = i as u8;
        acc ^= flow_of(black_box(&p));
    }
    black_box(acc);
    start.elapsed().as_nanos() as f64 / packets as f64
}

fn main() {
    let packets: u64 = std::env::args().nth(1).and_then(|a| a.parse().ok()).unwrap_or(2_000_000);
    println!("{packets} packets of 1500 B, {FLOWS} flows, 1 Gbit/s, 1000-packet buffer, virtual clock");
    println!("{:<10} {:>6} {:>12} {:>9}", "aqm", "load", "ns/packet", "dropped");
    for aqm in ["droptail", "codel", "pie", "fq_codel"] {
        for load in [0.8, 1.2] {
            let a: Aqm = aqm.parse().expect("a registered AQM");
            // Best of three: the machine is shared, and the minimum is the cost itself.
            let runs: Vec<(f64, f64)> = (0..3).map(|_| drive(a, load, packets)).collect();
            let ns = runs.iter().map(|r| r.0).fold(f64::INFINITY, f64::min);
            println!("{:<10} {:>6.1} {:>12.1} {:>8.1}%", aqm, load, ns, runs[0].1 * 100.0);
        }
    }
    let hash = (0..3).map(|_| flow_hash_cost(packets)).fold(f64::INFINITY, f64::min);
    println!("5-tuple hash (flow_of): {hash:.1} ns/packet");
}
