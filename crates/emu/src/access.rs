//! Per-flow access links behind the shared bottleneck (`--flows bbr:1@10ms,cubic:1@60ms`): the
//! dumbbell of the RTT-fairness literature, in which each sender reaches the one bottleneck
//! queue over its own link. Packets leave the bottleneck (queue, rate, its own delay) and then
//! wait out their flow's extra one-way delay here; a flow is told by its client-side port, TCP
//! or UDP (a QUIC connection's), which the workload binds on purpose. Packets of flows without
//! an entry pass straight on.
//!
//! Reads untrusted bytes (the TUN device's), so the classifier never panics and never reads
//! past the slice: what it cannot parse gets no extra delay.

use std::cmp::Reverse;
use std::collections::BinaryHeap;

use ccbench_link::time::{Duration, Instant};

/// One flow's access link (data, in ccbench-model; `extra_delay` reads TCP and UDP alike).
pub use ccbench_model::path::AccessDelay;

use ccbench_link::wire::{Ip, TCP, UDP};

/// The extra delay of a TCP or UDP packet (`ip` starts at the IP header): its table entry's
/// for either port, else none.
pub fn extra_delay(table: &[AccessDelay], ip: &[u8]) -> Duration {
    if table.is_empty() {
        return Duration::ZERO;
    }
    let lookup = || -> Option<Duration> {
        let h = Ip::parse(ip)?;
        if !matches!(h.protocol(), TCP | UDP) {
            return None;
        }
        let (src, dst) = h.ports()?;
        let e = table.iter().find(|e| e.client_port == src || e.client_port == dst)?;
        Some(Duration::from_nanos(e.one_way_ns))
    };
    lookup().unwrap_or(Duration::ZERO)
}

/// Packets waiting out their access delay: earliest first, ties in the order they came (one
/// flow's delay is constant, so each flow stays in order).
pub struct AccessLine<P> {
    heap: BinaryHeap<Reverse<Waiting<P>>>,
    seq: u64,
}

struct Waiting<P> {
    at: Instant,
    seq: u64,
    packet: P,
}

impl<P> PartialEq for Waiting<P> {
    fn eq(&self, o: &Self) -> bool {
        (self.at, self.seq) == (o.at, o.seq)
    }
}
impl<P> Eq for Waiting<P> {}
impl<P> PartialOrd for Waiting<P> {
    fn partial_cmp(&self, o: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(o))
    }
}
impl<P> Ord for Waiting<P> {
    fn cmp(&self, o: &Self) -> std::cmp::Ordering {
        (self.at, self.seq).cmp(&(o.at, o.seq))
    }
}

impl<P> Default for AccessLine<P> {
    fn default() -> Self {
        AccessLine { heap: BinaryHeap::new(), seq: 0 }
    }
}

impl<P> AccessLine<P> {
    pub fn push(&mut self, at: Instant, packet: P) {
        self.seq += 1;
        self.heap.push(Reverse(Waiting { at, seq: self.seq, packet }));
    }

    /// The next packet due by `now`.
    pub fn pop_due(&mut self, now: Instant) -> Option<P> {
        if self.heap.peek()?.0.at > now {
            return None;
        }
        self.heap.pop().map(|Reverse(w)| w.packet)
    }

    pub fn next_time(&self) -> Option<Instant> {
        self.heap.peek().map(|Reverse(w)| w.at)
    }

    pub fn len(&self) -> usize {
        self.heap.len()
    }

    pub fn is_empty(&self) -> bool {
        self.heap.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tcp(src: u16, dst: u16) -> Vec<u8> {
        let mut p = vec![0u8; 40];
        p[0] = 0x45;
        p[9] = TCP;
        p[20..22].copy_from_slice(&src.to_be_bytes());
        p[22..24].copy_from_slice(&dst.to_be_bytes());
        p
    }

    #[test]
    fn a_flow_is_told_by_its_client_port_either_way() {
        let table = [AccessDelay { client_port: 40001, one_way_ns: 5_000_000 }, AccessDelay { client_port: 40002, one_way_ns: 30_000_000 }];
        assert_eq!(extra_delay(&table, &tcp(40001, 5201)), Duration::from_millis(5));
        assert_eq!(extra_delay(&table, &tcp(5201, 40002)), Duration::from_millis(30));
        assert_eq!(extra_delay(&table, &tcp(40003, 5201)), Duration::ZERO);
        // A QUIC flow's UDP datagrams are told by their client port just the same.
        let mut udp = tcp(5201, 40002);
        udp[9] = UDP;
        assert_eq!(extra_delay(&table, &udp), Duration::from_millis(30));
        // IPv6 the same (the workload binds IPv4 today; a header reader for both costs nothing).
        let mut v6 = vec![0x60, 0, 0, 0, 0, 8, UDP, 64];
        v6.extend_from_slice(&[0; 32]);
        v6.extend_from_slice(&[0x9c, 0x42, 0x14, 0x51, 0, 8, 0, 0]);
        assert_eq!(extra_delay(&table, &v6), Duration::from_millis(30));
        // Neither TCP nor UDP, not IP, cut short, empty: no extra delay and no panic.
        let mut icmp = tcp(40001, 5201);
        icmp[9] = 1;
        assert_eq!(extra_delay(&table, &icmp), Duration::ZERO);
        assert_eq!(extra_delay(&table, &tcp(40001, 5201)[..22]), Duration::ZERO);
        assert_eq!(extra_delay(&table, &[0x60; 60]), Duration::ZERO, "IPv6 next header 96");
        assert_eq!(extra_delay(&table, &[0x75; 60]), Duration::ZERO, "version 7");
        assert_eq!(extra_delay(&table, &[]), Duration::ZERO);
        let mut long_ihl = tcp(40001, 5201);
        long_ihl[0] = 0x4f;
        assert_eq!(extra_delay(&table, &long_ihl), Duration::ZERO);
    }

    #[test]
    fn the_line_releases_by_time_then_arrival() {
        let t = |ms| Instant::EPOCH + Duration::from_millis(ms);
        let mut line = AccessLine::default();
        line.push(t(30), "long");
        line.push(t(5), "short");
        line.push(t(5), "short 2");
        assert_eq!(line.next_time(), Some(t(5)));
        assert_eq!(line.pop_due(t(4)), None);
        assert_eq!((line.pop_due(t(5)), line.pop_due(t(5))), (Some("short"), Some("short 2")));
        assert_eq!(line.pop_due(t(29)), None);
        assert_eq!(line.pop_due(t(31)), Some("long"));
        assert!(line.is_empty());
    }
}
