//! The packet-path fuzz harness, shared by the cargo-fuzz target (`fuzz/`) and the
//! `packet_path_fuzz` test, so both exercise exactly the same thing.
//!
//! Input format: one configuration byte, then records of `[len_lo, len_hi, dt_ms]` followed
//! by `len` bytes, each one read handed to the shell `dt_ms` milliseconds after the previous.
//! With the AQM bit (0x08) set, the delay bits (6-7) also choose the AQM: 0 CoDel with ECN
//! (marks written back into the IP header), 1 FQ-CoDel (which hashes every packet's 5-tuple),
//! 2 PIE, 3 DualPI2; with 0x20 too, the path sets CE on every packet. With both delay bits set (0xC0),
//! TCP and UDP ports 1–64 also get access links of their own ([`crate::access`]), so every packet is
//! classified by its ports too.

use std::time::Instant;

use ccbench_link::time;
use ccbench_link::{Aqm, Buffer, DirectionConfig, FqCodel, Pie, Rate};

use crate::shell::{Shell, ShellConfig};
use crate::window::MeasureWindow;

const MS: time::Duration = time::Duration::from_millis(1);

/// Runs one input through a shell; panics only if the shell does (or loses count).
pub fn run_packet_path(data: &[u8]) {
    let Some((&cfg, mut rest)) = data.split_first() else { return };
    let dir = DirectionConfig {
        rate: if cfg & 0x02 != 0 { Rate::BitsPerSec(10_000_000) } else { Rate::Unlimited },
        delay_ns: u64::from(cfg >> 6) * MS,
        buffer: if cfg & 0x04 != 0 { Buffer::Packets(4) } else { Buffer::Unlimited },
        aqm: match (cfg & 0x08 != 0, cfg >> 6) {
            (false, _) => Aqm::DropTail,
            (true, 1) => Aqm::FqCodel(FqCodel { flows: 8, ..FqCodel::default() }),
            (true, 2) => Aqm::Pie(Pie::default()),
            (true, 3) => Aqm::DualPi2(ccbench_link::DualPi2::default()),
            // CoDel with ECN: marks are written back into the packets it reads.
            (true, _) => Aqm::Codel(ccbench_link::Codel { ecn: true, ce_threshold_ns: Some(MS), ..Default::default() }),
        },
        ecn_fault: if cfg & 0x28 == 0x28 { Some(ccbench_link::EcnFault::CeAll) } else { None },
        ..Default::default()
    };
    let config = ShellConfig {
        name: "fuzz",
        config: dir,
        seed: 1,
        mtu: if cfg & 0x10 != 0 { 9000 } else { 1500 },
        offload: cfg & 0x01 != 0,
        udp_offload: cfg & 0x01 != 0,
        sample_interval: 10 * MS,
        min_wake_gap: if cfg & 0x20 != 0 { time::Duration::from_micros(25) } else { time::Duration::ZERO },
    };
    let window = MeasureWindow::new(Instant::now());
    let access = if cfg >> 6 == 3 {
        (1..=64u16).map(|p| crate::access::AccessDelay { client_port: p, one_way_ns: u64::from(p) * 1_000_000 }).collect()
    } else {
        Vec::new()
    };
    let mut shell = Shell::new(config, time::Instant::EPOCH, window).with_access(access);
    let (mut now, mut reads, mut out_bytes) = (time::Instant::EPOCH, 0u64, 0u64);
    while rest.len() >= 3 {
        let len = usize::from(u16::from_le_bytes([rest[0], rest[1]]));
        now += u64::from(rest[2]) * MS;
        let body = &rest[3..];
        let take = len.min(body.len());
        shell.handle_read(now, &body[..take]);
        reads += 1;
        rest = &body[take..];
        while let Some(b) = shell.poll_transmit(now) {
            out_bytes += b.len() as u64;
        }
        assert!(shell.poll_timeout() >= now, "a wake-up in the past");
    }
    // Let everything due leave.
    now += 10_000 * MS;
    while let Some(b) = shell.poll_transmit(now) {
        out_bytes += b.len() as u64;
    }
    let r = shell.finish(now, 0.0);
    let s = &r.stats;
    // Each plain read is one packet in or one malformed; a superframe is up to its segments.
    let plain = reads - r.superframes;
    assert!(s.packets_in + r.malformed >= plain, "a read vanished");
    assert!(s.packets_in <= plain + r.segments_from_superframes, "packets from nowhere");
    assert_eq!(s.packets_in, s.packets_out + s.drops_loss + s.drops_buffer + s.drops_policer + s.drops_aqm, "every packet left or was dropped");
    assert!(out_bytes == 0 || r.writes > 0);
}
