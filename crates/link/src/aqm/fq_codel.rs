//! FQ-CoDel (RFC 8290): a queue per flow at the bottleneck, served by deficit round robin
//! with a list of new flows ahead of the old ones, and CoDel (RFC 8289) in each queue.
//!
//! Packets are classified by the flow the caller gives them ([`crate::Link::enqueue_in_flow`];
//! the emulator hashes each packet's 5-tuple with [`crate::flow::flow_of`]), perturbed by the
//! link's seed and reduced to one of `flows` queues (section 4.1.1). A flow that sends less
//! than its quantum per round keeps coming back as a new flow and is served ahead of the bulk
//! flows (section 4.2): this is what keeps a sparse flow's delay low.

use std::collections::VecDeque;

use serde::{Deserialize, Serialize};

use super::codel::{CodelState, Head, CODEL_DEFAULT_INTERVAL, CODEL_DEFAULT_TARGET};
use super::{AqmConfig, Drops, Fifo, QueueDiscipline, Queued};
use crate::buffer::Buffer;
use crate::error::LinkConfigError;
use crate::outcome::DropCause;
use crate::time::{Duration, Instant};

/// RFC 8290 section 5.1's default number of flow queues (Linux's too).
pub const FQ_CODEL_DEFAULT_FLOWS: u32 = 1024;
/// The quantum when none is given: one full packet of the default 1500-byte MTU (RFC 8290
/// section 5.1 gives 1514, the MTU plus an Ethernet header the link does not carry).
pub const FQ_CODEL_DEFAULT_QUANTUM: u32 = 1500;
const MAX_FLOWS: u32 = 65_536;
const MIN_QUANTUM: u32 = 64;

/// FQ-CoDel's parameters (`--aqm fq_codel[:target=5ms,interval=100ms,flows=1024,quantum=MTU]`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(default)]
pub struct FqCodel {
    /// Each queue's CoDel target (RFC 8290 section 5.2.1, 5 ms as in RFC 8289).
    pub target_ns: Duration,
    /// Each queue's CoDel interval (section 5.2.2).
    pub interval_ns: Duration,
    /// Number of flow queues packets are hashed into (section 5.2.4).
    pub flows: u32,
    /// Bytes a queue may send per round of the deficit round robin (section 5.2.3); `None`:
    /// the MTU, which ccbench fills in from `--mtu` (a bare link uses 1500).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub quantum: Option<u32>,
    /// Each queue's CoDel marks ECN-capable packets CE instead of dropping them (RFC 8290's ECN
    /// parameter, section 5.2; on by default in Linux, off here so results stay comparable
    /// with runs before ECN). Overflow still drops.
    #[serde(default, skip_serializing_if = "crate::ecn::is_off")]
    pub ecn: bool,
    /// RFC 8290's CE threshold (section 5.2), applied to ECT(1) packets as Linux's
    /// `ce_threshold_selector` for L4S: see [`super::Codel::ce_threshold_ns`].
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ce_threshold_ns: Option<Duration>,
}

impl Default for FqCodel {
    fn default() -> Self {
        FqCodel {
            target_ns: CODEL_DEFAULT_TARGET,
            interval_ns: CODEL_DEFAULT_INTERVAL,
            flows: FQ_CODEL_DEFAULT_FLOWS,
            quantum: None,
            ecn: false,
            ce_threshold_ns: None,
        }
    }
}

impl AqmConfig for FqCodel {
    type Queue<P> = FqCodelQueue<P>;
    const KEYS: &'static str = "target=5ms,interval=100ms,flows=1024,quantum=MTU,ecn=off,ce_threshold=off";

    fn set(&mut self, key: &str, value: &str) -> Result<(), String> {
        match key {
            "target" => self.target_ns = super::duration(key, value)?,
            "interval" => self.interval_ns = super::positive_duration(key, value)?,
            "ecn" => self.ecn = crate::ecn::on_off(key, value)?,
            "ce_threshold" => self.ce_threshold_ns = super::codel::ce_threshold(key, value)?,
            "flows" => match value.parse::<u32>() {
                Ok(n) if (1..=MAX_FLOWS).contains(&n) => self.flows = n,
                _ => return Err(format!("flows is a whole number from 1 to {MAX_FLOWS}")),
            },
            "quantum" => match value.parse::<u32>() {
                Ok(n) if (MIN_QUANTUM..=1 << 20).contains(&n) => self.quantum = Some(n),
                _ => return Err(format!("quantum is a byte count from {MIN_QUANTUM} to 1048576, such as 1500")),
            },
            _ => return Err(format!("unknown key {key:?}")),
        }
        Ok(())
    }

    fn validate(&self) -> Result<(), LinkConfigError> {
        if self.interval_ns.is_zero() {
            return Err(LinkConfigError::CodelZeroInterval);
        }
        if !(1..=MAX_FLOWS).contains(&self.flows) || self.quantum.is_some_and(|q| q < MIN_QUANTUM) {
            return Err(LinkConfigError::Aqm(format!("FQ-CoDel needs 1 to {MAX_FLOWS} flows and a quantum of at least {MIN_QUANTUM} bytes")));
        }
        Ok(())
    }

    fn describe(&self) -> String {
        format!(
            "FQ-CoDel ({} flows, quantum {} B, target {}, interval {}{})",
            self.flows,
            self.quantum.unwrap_or(FQ_CODEL_DEFAULT_QUANTUM),
            super::ms(self.target_ns),
            super::ms(self.interval_ns),
            super::codel::ecn_words(self.ecn, self.ce_threshold_ns)
        )
    }

    fn enable_ecn(&mut self) -> bool {
        self.ecn = true;
        true
    }

    fn marks(&self) -> bool {
        self.ecn || self.ce_threshold_ns.is_some()
    }

    fn build<P>(&self, buffer: Buffer, seed: u64) -> FqCodelQueue<P> {
        let flows = self.flows.clamp(1, MAX_FLOWS);
        FqCodelQueue {
            flows: (0..flows)
                .map(|_| Flow {
                    fifo: Fifo::default(),
                    codel: CodelState::new(self.target_ns, self.interval_ns).with_ecn(self.ecn, self.ce_threshold_ns),
                    deficit: 0,
                    list: List::None,
                })
                .collect(),
            new_flows: VecDeque::new(),
            old_flows: VecDeque::new(),
            buffer,
            quantum: i64::from(self.quantum.unwrap_or(FQ_CODEL_DEFAULT_QUANTUM).max(MIN_QUANTUM)),
            perturbation: mix(seed ^ 0x0F0C_0DE1),
            bytes: 0,
            packets: 0,
        }
    }

    fn per_flow(&self) -> bool {
        true
    }
}

/// Which of the two round-robin lists a queue is on (section 4.2).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum List {
    None,
    New,
    Old,
}

struct Flow<P> {
    fifo: Fifo<P>,
    codel: CodelState,
    /// Bytes it may still send this round; may go negative by less than a packet.
    deficit: i64,
    list: List,
}

pub struct FqCodelQueue<P> {
    flows: Vec<Flow<P>>,
    new_flows: VecDeque<u32>,
    old_flows: VecDeque<u32>,
    buffer: Buffer,
    quantum: i64,
    /// Section 4.1.1's random perturbation of the hash, from the link's seed.
    perturbation: u64,
    bytes: u64,
    packets: usize,
}

/// A 64-bit finalizer (SplitMix64's): every input bit moves every output bit.
fn mix(mut x: u64) -> u64 {
    x = (x ^ (x >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    x = (x ^ (x >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    x ^ (x >> 31)
}

impl<P> FqCodelQueue<P> {
    /// The queue of `flow` (section 4.1.1).
    fn bucket(&self, flow: u64) -> usize {
        (mix(flow ^ self.perturbation) % self.flows.len() as u64) as usize
    }

    /// The queue holding the most bytes (section 4.1): the one an overflow drops from.
    fn fattest(&self) -> Option<usize> {
        self.new_flows.iter().chain(&self.old_flows).map(|&i| i as usize).max_by_key(|&i| self.flows[i].fifo.bytes())
    }

    /// Packets queued per flow queue (for tests): `(queue, packets)` of the non-empty ones.
    pub fn occupancy(&self) -> Vec<(usize, usize)> {
        self.flows.iter().enumerate().filter(|(_, f)| !f.fifo.is_empty()).map(|(i, f)| (i, f.fifo.len())).collect()
    }
}

impl<P> QueueDiscipline<P> for FqCodelQueue<P> {
    /// Section 4.1: classify, queue, and on overflow drop from the head of the fattest queue
    /// (which may be the arrival's own, the arrival itself when alone in it).
    fn enqueue(&mut self, _now: Instant, q: Queued<P>, server_idle: bool, drops: &mut Drops<P>) -> Result<(), (Queued<P>, DropCause)> {
        let i = self.bucket(q.flow);
        let f = &mut self.flows[i];
        self.bytes += u64::from(q.len);
        self.packets += 1;
        f.fifo.push(q);
        if f.list == List::None {
            f.list = List::New;
            f.deficit = self.quantum;
            self.new_flows.push_back(i as u32);
        }
        if server_idle {
            return Ok(());
        }
        while !self.buffer.holds(self.bytes, self.packets) {
            let Some(fat) = self.fattest() else { break };
            let Some(head) = self.flows[fat].fifo.pop() else { break };
            self.bytes -= u64::from(head.len);
            self.packets -= 1;
            if fat == i && self.flows[i].fifo.is_empty() {
                return Err((head, DropCause::BufferOverflow));
            }
            drops.drop(head, DropCause::BufferOverflow);
        }
        Ok(())
    }

    /// Section 4.2: new flows first, then old ones, each sending up to its deficit; CoDel
    /// judges every packet leaving a queue.
    fn dequeue(&mut self, now: Instant, drops: &mut Drops<P>) -> Option<Queued<P>> {
        loop {
            let (i, list) = match (self.new_flows.front(), self.old_flows.front()) {
                (Some(&i), _) => (i as usize, List::New),
                (None, Some(&i)) => (i as usize, List::Old),
                (None, None) => return None,
            };
            let f = &mut self.flows[i];
            if f.deficit <= 0 {
                // Its round is over: a fresh quantum, to the back of the old flows.
                f.deficit += self.quantum;
                f.list = List::Old;
                self.pop_front(list);
                self.old_flows.push_back(i as u32);
                continue;
            }
            let (bytes, packets) = (f.fifo.bytes(), f.fifo.len());
            let others = self.bytes - bytes;
            let served = f.codel.dequeue(&mut Head { fifo: &mut f.fifo, others, drops }, now);
            self.bytes -= bytes - f.fifo.bytes();
            self.packets -= packets - f.fifo.len();
            match served {
                Some(q) => {
                    f.deficit -= i64::from(q.len);
                    return Some(q);
                }
                None => {
                    // Empty: a new flow goes to the back of the old ones (so that it cannot
                    // come back as new at once and starve them), an old one leaves the lists.
                    self.pop_front(list);
                    if list == List::New {
                        self.flows[i].list = List::Old;
                        self.old_flows.push_back(i as u32);
                    } else {
                        self.flows[i].list = List::None;
                    }
                }
            }
        }
    }

    fn backlog_bytes(&self) -> u64 {
        self.bytes
    }

    fn backlog_packets(&self) -> usize {
        self.packets
    }
}

impl<P> FqCodelQueue<P> {
    fn pop_front(&mut self, list: List) {
        match list {
            List::New => self.new_flows.pop_front(),
            _ => self.old_flows.pop_front(),
        };
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::aqm::{Aqm, Discipline};
    use crate::{DelayHistogram, DirectionConfig, Link, LinkStats, Rate};

    const MS: Duration = Duration::from_millis(1);
    const SEC: Duration = Duration::from_secs(1);

    fn at(d: Duration) -> Instant {
        Instant::EPOCH + d
    }

    fn fq(c: FqCodel, rate: Rate, buffer: Buffer) -> Link<u64> {
        Link::new(DirectionConfig { rate, buffer, aqm: Aqm::FqCodel(c), ..Default::default() }, 1)
    }

    /// CoDel that never drops: what is left is the scheduler.
    fn no_codel() -> FqCodel {
        FqCodel { target_ns: 100 * SEC, ..FqCodel::default() }
    }

    #[test]
    fn distinct_flows_get_distinct_queues_and_one_flow_one_queue() {
        let mut l = fq(FqCodel::default(), Rate::mbps(1), Buffer::Unlimited);
        l.enqueue_in_flow(at(MS), 100, 1, 0).expect("accepted");
        for flow in 1..=3u64 {
            for n in 0..flow {
                l.enqueue_in_flow(at(MS), 100, flow, n).expect("accepted");
            }
        }
        let Discipline::FqCodel(q) = l.discipline() else { panic!() };
        let mut held: Vec<usize> = q.occupancy().into_iter().map(|(_, n)| n).collect();
        held.sort();
        // The first packet went straight into service; then 1, 2 and 3 packets wait.
        assert_eq!(held, vec![1, 2, 3]);
    }

    #[test]
    fn drr_shares_bytes_evenly_whatever_the_packet_size() {
        // Two flows always backlogged, one in 1500 B packets, one in 300 B: byte-fair service
        // (section 4.2), not packet-fair.
        let mut l = fq(no_codel(), Rate::mbps(10), Buffer::Unlimited);
        let mut served = [0u64; 2];
        for _ in 0..1000 {
            l.enqueue_in_flow(at(MS), 1500, 1, 0).expect("accepted");
        }
        for _ in 0..5000 {
            l.enqueue_in_flow(at(MS), 300, 2, 1).expect("accepted");
        }
        // One second of service: 1.25 MB of the 3 MB queued.
        while let Some(d) = l.dequeue(at(SEC)) {
            served[d.packet as usize] += u64::from(d.len);
        }
        let share = served[0] as f64 / (served[0] + served[1]) as f64;
        assert!((share - 0.5).abs() < 0.002, "{served:?}");
    }

    /// A bulk sender at `overload` times the rate (unresponsive) and a sparse one (100 B every
    /// 10 ms) through 10 Mbit/s and a 1 MB buffer: the sparse flow's queueing delays.
    fn sparse_beside_bulk(aqm: Aqm) -> (DelayHistogram, LinkStats) {
        let c = DirectionConfig { rate: Rate::mbps(10), buffer: Buffer::Bytes(1_000_000), aqm, ..Default::default() };
        let mut l: Link<u64> = Link::new(c, 3);
        let mut sparse = DelayHistogram::new();
        let bulk_gap = Duration::from_micros(600);
        let mut t = Instant::EPOCH;
        let mut next_sparse = Instant::EPOCH;
        while t < at(10 * SEC) {
            let _ = l.enqueue_in_flow(t, 1500, 7, 0);
            if t >= next_sparse {
                let _ = l.enqueue_in_flow(t, 100, 99, 1);
                next_sparse += 10 * MS;
            }
            while let Some(d) = l.dequeue(t) {
                if d.packet == 1 && d.arrived_at >= at(2 * SEC) {
                    sparse.record(d.service_start - d.arrived_at);
                }
            }
            while l.take_dropped().is_some() {}
            t += bulk_gap;
        }
        (sparse, l.stats().clone())
    }

    #[test]
    fn a_sparse_flow_is_isolated_from_a_bulk_one() {
        // Section 4.2 (and 1.1): the sparse flow's queue is empty on each arrival, so it goes
        // on the new list and waits at most for the packet in service.
        let (fq, st) = sparse_beside_bulk(Aqm::FqCodel(FqCodel::default()));
        let one_packet = Rate::mbps(10).serialization_time(1500).unwrap();
        assert_eq!(fq.count(), 800);
        assert!(fq.max() <= one_packet, "sparse flow's worst delay {:?}", fq.max());
        assert!(st.drops_aqm > 0, "CoDel works the bulk flow's queue");
        // Behind the same bulk flow in one CoDel queue, it waits as long as the bulk flow:
        // CoDel cannot hold an unresponsive flow, so the queue stays far above target.
        let (single, _) = sparse_beside_bulk(Aqm::codel());
        assert!(single.quantile(0.5) > 20 * one_packet, "single-queue p50 {:?}", single.quantile(0.5));
    }

    #[test]
    fn an_unresponsive_flow_cannot_take_a_responsive_ones_share() {
        // Bulk at twice the rate in one flow, a greedy but polite one beside it (sends
        // whenever fewer than 40 of its packets wait): a FIFO gives the polite flow what the
        // flood leaves, FQ-CoDel half the link.
        let share = |aqm: Aqm| {
            let c = DirectionConfig { rate: Rate::mbps(10), buffer: Buffer::Packets(200), aqm, ..Default::default() };
            let mut l: Link<u64> = Link::new(c, 5);
            let mut out = [0u64; 2];
            let mut polite_waiting = 0u64;
            let mut t = Instant::EPOCH;
            while t < at(5 * SEC) {
                let _ = l.enqueue_in_flow(t, 1500, 1, 0);
                let room = 40 - polite_waiting;
                for _ in 0..room {
                    if l.enqueue_in_flow(t, 1500, 2, 1).is_ok() {
                        polite_waiting += 1;
                    }
                }
                while let Some(d) = l.dequeue(t) {
                    out[d.packet as usize] += u64::from(d.len);
                    polite_waiting -= d.packet;
                }
                while let Some(d) = l.take_dropped() {
                    polite_waiting -= d.packet;
                }
                t += Duration::from_micros(600);
            }
            out[1] as f64 / (out[0] + out[1]) as f64
        };
        let fair = share(Aqm::FqCodel(FqCodel::default()));
        assert!((fair - 0.5).abs() < 0.02, "polite flow's share under FQ-CoDel {fair}");
        let fifo = share(Aqm::DropTail);
        assert!(fifo < 0.3, "polite flow's share in a FIFO {fifo}");
    }

    #[test]
    fn an_overflow_drops_from_the_fattest_queue() {
        // Ten packets of room. A flood of flow 1 overflows it: each arrival costs flow 1 its
        // oldest waiting packet, from the head (section 4.1). Then flow 2's packets still get
        // in, again at the expense of flow 1, the fattest.
        let mut l = fq(no_codel(), Rate::mbps(1), Buffer::Packets(10));
        for n in 0..30 {
            l.enqueue_in_flow(at(MS), 1000, 1, n).expect("the head goes, not the arrival");
        }
        for n in 100..103 {
            l.enqueue_in_flow(at(MS), 1000, 2, n).expect("a thin flow's packet displaces the fat one's");
        }
        assert_eq!(l.backlog_packets(), 10);
        let mut displaced = Vec::new();
        while let Some(d) = l.take_dropped() {
            assert_eq!(d.cause, DropCause::BufferOverflow);
            displaced.push(d.packet);
        }
        assert_eq!(displaced, (1..=22).collect::<Vec<u64>>(), "flow 1's oldest waiting packets (0 is in service)");
        assert_eq!(l.stats().drops_buffer, 22);
        let out: Vec<u64> = std::iter::from_fn(|| l.dequeue(Instant::MAX)).map(|d| d.packet).collect();
        assert_eq!(out.len(), 11);
        assert_eq!(out.iter().filter(|&&p| p >= 100).count(), 3);

        // When the arrival's own queue is the fattest and holds only the arrival, the arrival
        // is what goes, and it comes back at once.
        let mut l = fq(no_codel(), Rate::mbps(1), Buffer::Packets(1));
        l.enqueue_in_flow(at(MS), 1000, 1, 0).expect("served at once");
        l.enqueue_in_flow(at(MS), 1000, 1, 1).expect("fits");
        let e = l.enqueue_in_flow(at(MS), 1500, 2, 2).expect_err("the fattest queue is its own");
        assert_eq!((e.packet, e.cause), (2, DropCause::BufferOverflow));
        assert_eq!(l.take_dropped(), None);
    }

    #[test]
    fn reno_flows_share_the_link_evenly_and_keep_the_queue_short() {
        // Four Reno-like flows in their own queues: equal shares of the second 10 s (Jain's
        // index near 1) and CoDel's short queue in each.
        let (p50, st, per_flow) = crate::link::tests::codel::reno_through(Aqm::FqCodel(FqCodel::default()), 4, 20 * SEC);
        let jain = per_flow.iter().sum::<f64>().powi(2) / (per_flow.len() as f64 * per_flow.iter().map(|x| x * x).sum::<f64>());
        assert!(jain > 0.99, "Jain's index {jain} of {per_flow:?}");
        assert!(p50 <= 4 * CODEL_DEFAULT_TARGET, "FQ-CoDel p50 {p50:?}");
        assert_eq!(st.drops_buffer, 0);
        let util = st.busy_ns.as_nanos() as f64 / (20 * SEC).as_nanos() as f64;
        assert!(util > 0.9, "utilization {util}");
    }
}
