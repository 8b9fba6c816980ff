use std::collections::VecDeque;
use std::fmt;

use serde::{Deserialize, Serialize};

use crate::config::{Buffer, DirectionConfig, LinkConfigError, Rate};
use crate::histogram::DelayHistogram;
use crate::loss::LossProcess;
use crate::Nanos;

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum DropCause {
    Loss,
    BufferOverflow,
}

impl fmt::Display for DropCause {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            DropCause::Loss => "random loss",
            DropCause::BufferOverflow => "buffer overflow",
        })
    }
}

/// A rejected packet, handed back so the caller can recycle its buffer.
#[derive(Clone, Debug, PartialEq)]
pub struct Dropped<P> {
    pub packet: P,
    pub cause: DropCause,
}

impl<P> fmt::Display for Dropped<P> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "packet dropped: {}", self.cause)
    }
}

impl<P: fmt::Debug> std::error::Error for Dropped<P> {}

/// A packet leaving the link, with its timeline.
/// Queueing delay is `service_start - arrived_at`; serialization time is
/// `delivered_at - delay_ns - service_start`.
#[derive(Clone, Debug, PartialEq)]
pub struct Delivery<P> {
    pub packet: P,
    pub len: u32,
    pub arrived_at: Nanos,
    pub service_start: Nanos,
    pub delivered_at: Nanos,
}

#[derive(Clone, Debug, Default, Serialize, Deserialize, PartialEq)]
pub struct LinkStats {
    /// Every packet offered to `enqueue`, including those dropped.
    pub packets_in: u64,
    pub bytes_in: u64,
    /// Packets returned by `dequeue`.
    pub packets_out: u64,
    pub bytes_out: u64,
    pub drops_loss: u64,
    pub drops_buffer: u64,
    pub bytes_dropped_loss: u64,
    pub bytes_dropped_buffer: u64,
    /// Total serialization time of packets that finished serialization.
    pub busy_ns: u64,
    /// Queueing delay (`service_start - arrived_at`) of every dequeued packet.
    pub queue_delay: DelayHistogram,
    /// Peak of the waiting-queue size, excluding the packet in service.
    pub max_backlog_bytes: u64,
}

struct Waiting<P> {
    packet: P,
    len: u32,
    arrived_at: Nanos,
}

struct InService<P> {
    packet: P,
    len: u32,
    arrived_at: Nanos,
    start: Nanos,
    finish: Nanos,
}

/// One direction of a link: loss -> drop-tail FIFO -> rate server ->
/// constant propagation delay.
///
/// Time passed in must be non-decreasing; an earlier `now` than seen before is
/// treated as the latest time seen, so a slightly non-monotone host clock
/// cannot reorder events.
///
/// State is advanced lazily: internal transitions that became due between
/// calls are replayed at their exact event times on the next call that takes
/// `now`. The `&self` accessors ([`Link::backlog_bytes`] etc.) therefore
/// describe the link as of the latest `now` passed in; call
/// [`Link::advance`] first to observe it at a later time.
pub struct Link<P> {
    cfg: DirectionConfig,
    loss: LossProcess,
    queue: VecDeque<Waiting<P>>,
    backlog_bytes: u64,
    server: Option<InService<P>>,
    /// Packets that finished serialization, ordered by `delivered_at`
    /// because finish times are monotone and the delay is constant.
    delay_line: VecDeque<Delivery<P>>,
    stats: LinkStats,
    last_now: Nanos,
    /// Finish times are computed from the start of the current busy period
    /// and the total bits sent in it, so per-packet rounding never
    /// accumulates: the n-th finish is within 0.5 ns of the exact value.
    period_start: Nanos,
    period_bits: u128,
    last_finish: Nanos,
}

impl<P> Link<P> {
    /// Builds a link without validating `cfg`. Invalid values do not panic:
    /// probabilities are effectively clamped to [0, 1] (NaN never drops) and
    /// a zero rate stalls the server forever. Use [`Link::try_new`] or
    /// [`DirectionConfig::validate`] to reject them instead.
    pub fn new(cfg: DirectionConfig, seed: u64) -> Self {
        Link {
            loss: LossProcess::new(cfg.loss.clone(), seed),
            cfg,
            queue: VecDeque::new(),
            backlog_bytes: 0,
            server: None,
            delay_line: VecDeque::new(),
            stats: LinkStats::default(),
            last_now: 0,
            period_start: 0,
            period_bits: 0,
            last_finish: 0,
        }
    }

    pub fn try_new(cfg: DirectionConfig, seed: u64) -> Result<Self, LinkConfigError> {
        cfg.validate()?;
        Ok(Self::new(cfg, seed))
    }

    /// Offers a packet that arrived at `now`. On success the link owns it
    /// until `dequeue` returns it; on drop it is handed back.
    pub fn enqueue(&mut self, now: Nanos, len: u32, packet: P) -> Result<(), Dropped<P>> {
        let now = self.clock(now);
        self.stats.packets_in += 1;
        self.stats.bytes_in += u64::from(len);

        // Loss first: a lost packet must never take buffer space.
        if self.loss.lose_next() {
            self.stats.drops_loss += 1;
            self.stats.bytes_dropped_loss += u64::from(len);
            return Err(Dropped {
                packet,
                cause: DropCause::Loss,
            });
        }

        self.advance_inner(now);
        if self.server.is_none() {
            // advance_inner keeps the server busy while anything waits, so
            // an idle server means an empty queue: bypass the buffer.
            self.start_service(packet, len, now, now);
            return Ok(());
        }

        let fits = match self.cfg.buffer {
            Buffer::Unlimited => true,
            Buffer::Bytes(b) => self.backlog_bytes + u64::from(len) <= b,
            Buffer::Packets(n) => (self.queue.len() as u64) < n,
        };
        if !fits {
            self.stats.drops_buffer += 1;
            self.stats.bytes_dropped_buffer += u64::from(len);
            return Err(Dropped {
                packet,
                cause: DropCause::BufferOverflow,
            });
        }
        self.queue.push_back(Waiting {
            packet,
            len,
            arrived_at: now,
        });
        self.backlog_bytes += u64::from(len);
        self.stats.max_backlog_bytes = self.stats.max_backlog_bytes.max(self.backlog_bytes);
        Ok(())
    }

    /// Returns the next packet whose `delivered_at <= now`, in FIFO order.
    pub fn dequeue(&mut self, now: Nanos) -> Option<Delivery<P>> {
        let now = self.clock(now);
        self.advance_inner(now);
        if self.delay_line.front()?.delivered_at > now {
            return None;
        }
        let d = self.delay_line.pop_front()?;
        self.stats.packets_out += 1;
        self.stats.bytes_out += u64::from(d.len);
        self.stats.queue_delay.record(d.service_start - d.arrived_at);
        Some(d)
    }

    /// Replays internal transitions up to `now` without taking packets out,
    /// so that the backlog accessors reflect the state at `now`.
    pub fn advance(&mut self, now: Nanos) {
        let now = self.clock(now);
        self.advance_inner(now);
    }

    /// The earliest time at which `dequeue` can return a packet; `None` if
    /// the link holds nothing (or only packets stuck behind a zero-rate
    /// server). May be `<= now` if due packets have not been dequeued yet.
    /// Internal transitions (a packet finishing serialization) need no
    /// wake-up of their own, as they are replayed lazily.
    pub fn next_event(&self) -> Option<Nanos> {
        if let Some(d) = self.delay_line.front() {
            return Some(d.delivered_at);
        }
        let s = self.server.as_ref()?;
        if s.finish == Nanos::MAX {
            return None;
        }
        Some(s.finish.saturating_add(self.cfg.delay_ns))
    }

    /// Bytes waiting in the queue, excluding the packet in service.
    pub fn backlog_bytes(&self) -> u64 {
        self.backlog_bytes
    }

    /// Packets waiting in the queue, excluding the packet in service.
    pub fn backlog_packets(&self) -> usize {
        self.queue.len()
    }

    /// Everything held: queue + server + delay line.
    pub fn in_flight_packets(&self) -> usize {
        self.queue.len() + usize::from(self.server.is_some()) + self.delay_line.len()
    }

    pub fn stats(&self) -> &LinkStats {
        &self.stats
    }

    pub fn config(&self) -> &DirectionConfig {
        &self.cfg
    }

    fn clock(&mut self, now: Nanos) -> Nanos {
        self.last_now = self.last_now.max(now);
        self.last_now
    }

    /// Completes every serialization that finishes at or before `now`,
    /// starting each successor at its predecessor's exact finish time.
    fn advance_inner(&mut self, now: Nanos) {
        while let Some(s) = self.server.take() {
            // Nanos::MAX marks a stalled (zero-rate) server: never finishes.
            if s.finish > now || s.finish == Nanos::MAX {
                self.server = Some(s);
                return;
            }
            self.stats.busy_ns += s.finish - s.start;
            self.delay_line.push_back(Delivery {
                packet: s.packet,
                len: s.len,
                arrived_at: s.arrived_at,
                service_start: s.start,
                delivered_at: s.finish.saturating_add(self.cfg.delay_ns),
            });
            if let Some(w) = self.queue.pop_front() {
                self.backlog_bytes -= u64::from(w.len);
                let start = w.arrived_at.max(s.finish);
                self.start_service(w.packet, w.len, w.arrived_at, start);
            }
        }
    }

    fn start_service(&mut self, packet: P, len: u32, arrived_at: Nanos, start: Nanos) {
        let finish = match self.cfg.rate {
            Rate::Unlimited => start,
            Rate::BitsPerSec(0) => Nanos::MAX,
            Rate::BitsPerSec(rate) => {
                if start != self.last_finish {
                    // Idle gap: a new busy period starts here.
                    self.period_start = start;
                    self.period_bits = 0;
                }
                self.period_bits += u128::from(len) * 8;
                let r = u128::from(rate);
                let offset = (self.period_bits * 1_000_000_000 + r / 2) / r;
                let finish = u128::from(self.period_start) + offset;
                // Saturating at Nanos::MAX degrades to "stalled", which is
                // the only sensible reading of a finish beyond u64 time.
                let finish = u64::try_from(finish).unwrap_or(Nanos::MAX);
                self.last_finish = finish;
                finish
            }
        };
        self.server = Some(InService {
            packet,
            len,
            arrived_at,
            start,
            finish,
        });
    }
}

impl<P> fmt::Debug for Link<P> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Link")
            .field("cfg", &self.cfg)
            .field("backlog_packets", &self.queue.len())
            .field("backlog_bytes", &self.backlog_bytes)
            .field("in_flight_packets", &self.in_flight_packets())
            .field("last_now", &self.last_now)
            .finish_non_exhaustive()
    }
}

#[cfg(test)]
mod tests;
