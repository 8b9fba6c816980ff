use std::cmp::Ordering;
use std::collections::{BinaryHeap, VecDeque};
use std::fmt;

use serde::{Deserialize, Serialize};

use crate::codel::Codel;
use crate::config::{Aqm, Buffer, DirectionConfig, LinkConfigError, Rate};
use crate::histogram::DelayHistogram;
use crate::jitter::JitterProcess;
use crate::loss::LossProcess;
use crate::policer::TokenBucket;
use crate::trace::{TraceRate, OPPORTUNITY_BYTES};
use crate::Nanos;

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum DropCause {
    Loss,
    BufferOverflow,
    /// Out of tokens at the policer.
    Policer,
    /// Dropped by the AQM (CoDel) when leaving the buffer; such packets are
    /// handed back through [`Link::take_dropped`].
    Aqm,
}

impl fmt::Display for DropCause {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            DropCause::Loss => "random loss",
            DropCause::BufferOverflow => "buffer overflow",
            DropCause::Policer => "policer",
            DropCause::Aqm => "AQM",
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
/// Queueing delay is `service_start - arrived_at`. Without jitter or delay
/// changes, serialization time is `delivered_at - delay_ns - service_start`.
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
    #[serde(default)]
    pub drops_policer: u64,
    #[serde(default)]
    pub bytes_dropped_policer: u64,
    /// Counted when the AQM decides, not when `take_dropped` hands the
    /// packet back.
    #[serde(default)]
    pub drops_aqm: u64,
    #[serde(default)]
    pub bytes_dropped_aqm: u64,
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
    /// Drawn when service starts rather than when it ends, so that
    /// `next_event` can predict the delivery time without touching the RNG.
    jitter: Nanos,
}

/// What currently paces the server.
#[derive(Clone, Copy, Debug, PartialEq)]
enum Pace {
    Const(Rate),
    Trace,
}

/// Packets that finished serialization and are waiting out their delay.
enum DelayLine<P> {
    /// Delivery times are forced to be non-decreasing, so FIFO order is
    /// delivery order.
    Fifo(VecDeque<Delivery<P>>),
    /// Jitter with reordering: earliest delivery first, ties in the order
    /// packets left the server.
    Heap(BinaryHeap<Delayed<P>>),
}

struct Delayed<P> {
    seq: u64,
    d: Delivery<P>,
}

impl<P> Delayed<P> {
    fn key(&self) -> (Nanos, u64) {
        (self.d.delivered_at, self.seq)
    }
}

impl<P> PartialEq for Delayed<P> {
    fn eq(&self, other: &Self) -> bool {
        self.key() == other.key()
    }
}

impl<P> Eq for Delayed<P> {}

impl<P> PartialOrd for Delayed<P> {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

impl<P> Ord for Delayed<P> {
    /// Reversed: `BinaryHeap` is a max-heap and we want the earliest.
    fn cmp(&self, other: &Self) -> Ordering {
        other.key().cmp(&self.key())
    }
}

impl<P> DelayLine<P> {
    fn len(&self) -> usize {
        match self {
            DelayLine::Fifo(q) => q.len(),
            DelayLine::Heap(h) => h.len(),
        }
    }

    fn next_time(&self) -> Option<Nanos> {
        match self {
            DelayLine::Fifo(q) => q.front().map(|d| d.delivered_at),
            DelayLine::Heap(h) => h.peek().map(|x| x.d.delivered_at),
        }
    }

    fn push(&mut self, seq: u64, d: Delivery<P>) {
        match self {
            DelayLine::Fifo(q) => q.push_back(d),
            DelayLine::Heap(h) => h.push(Delayed { seq, d }),
        }
    }

    fn pop_due(&mut self, now: Nanos) -> Option<Delivery<P>> {
        if self.next_time()? > now {
            return None;
        }
        match self {
            DelayLine::Fifo(q) => q.pop_front(),
            DelayLine::Heap(h) => h.pop().map(|x| x.d),
        }
    }
}

/// One direction of a link: loss -> policer -> buffer (drop-tail or CoDel)
/// -> rate server (constant, trace, scheduled) -> delay (+ jitter).
///
/// Time passed in must be non-decreasing; an earlier `now` than seen before is
/// treated as the latest time seen, so a slightly non-monotone host clock
/// cannot reorder events.
///
/// State is advanced lazily: internal transitions that became due between
/// calls (serialization finishing, scheduled changes, AQM drops) are
/// replayed at their exact event times on the next call that takes `now`.
/// The `&self` accessors ([`Link::backlog_bytes`] etc.) therefore describe
/// the link as of the latest `now` passed in; call [`Link::advance`] first
/// to observe it at a later time.
pub struct Link<P> {
    cfg: DirectionConfig,
    loss: LossProcess,
    policer: Option<TokenBucket>,
    codel: Option<Codel>,
    jitter: JitterProcess,
    queue: VecDeque<Waiting<P>>,
    backlog_bytes: u64,
    server: Option<InService<P>>,
    pace: Pace,
    trace: Option<TraceRate>,
    /// Where the previous trace packet left off: credit left over from
    /// opportunity `next_opp - 1` and the index of the next unused
    /// opportunity. Usable only by a packet starting service at `chain_at`,
    /// i.e. one that was waiting when its predecessor finished.
    carry: u64,
    next_opp: u64,
    chain_at: Option<Nanos>,
    delay_ns: Nanos,
    /// Index of the first change in `cfg.schedule` not yet applied.
    next_change: usize,
    delay_line: DelayLine<P>,
    /// Latest delivery time handed to the delay line, for the FIFO clamp.
    last_delivered: Nanos,
    seq: u64,
    dropped: VecDeque<Dropped<P>>,
    stats: LinkStats,
    last_now: Nanos,
    /// Finish times are computed from the start of the current busy period
    /// and the total bits sent in it, so per-packet rounding never
    /// accumulates: the n-th finish is within 0.5 ns of the exact value.
    /// `period_rate` is the rate of that period (0: none), so a rate change
    /// opens a new period.
    period_start: Nanos,
    period_bits: u128,
    period_rate: u64,
    last_finish: Nanos,
}

impl<P> Link<P> {
    /// Builds a link without validating `cfg`. Invalid values do not panic:
    /// probabilities are effectively clamped to [0, 1] (NaN never drops), a
    /// zero rate or an unloaded trace stalls the server (until a scheduled
    /// rate change), a zero policer rate admits only the initial burst and a
    /// zero CoDel interval drops every packet whose sojourn reaches the
    /// target. Use [`Link::try_new`] or [`DirectionConfig::validate`] to
    /// reject them instead.
    ///
    /// `cfg.schedule` is sorted by `at_ns` (stably); [`Link::config`]
    /// returns the sorted copy.
    pub fn new(mut cfg: DirectionConfig, seed: u64) -> Self {
        cfg.schedule.sort_by_key(|c| c.at_ns);
        let delay_line = if cfg.jitter.reorders() { DelayLine::Heap(BinaryHeap::new()) } else { DelayLine::Fifo(VecDeque::new()) };
        let codel = match cfg.aqm {
            Aqm::DropTail => None,
            Aqm::Codel { target_ns, interval_ns } => Some(Codel::new(target_ns, interval_ns)),
        };
        Link {
            loss: LossProcess::new(cfg.loss.clone(), seed),
            policer: cfg.policer.map(TokenBucket::new),
            codel,
            jitter: JitterProcess::new(cfg.jitter, seed),
            queue: VecDeque::new(),
            backlog_bytes: 0,
            server: None,
            pace: if cfg.trace.is_some() { Pace::Trace } else { Pace::Const(cfg.rate) },
            trace: cfg.trace.clone(),
            carry: 0,
            next_opp: 0,
            chain_at: None,
            delay_ns: cfg.delay_ns,
            next_change: 0,
            delay_line,
            last_delivered: 0,
            seq: 0,
            dropped: VecDeque::new(),
            stats: LinkStats::default(),
            last_now: 0,
            period_start: 0,
            period_bits: 0,
            period_rate: 0,
            last_finish: 0,
            cfg,
        }
    }

    pub fn try_new(cfg: DirectionConfig, seed: u64) -> Result<Self, LinkConfigError> {
        cfg.validate()?;
        Ok(Self::new(cfg, seed))
    }

    /// Offers a packet that arrived at `now`. On success the link owns it
    /// until `dequeue` (or, if the AQM drops it later, `take_dropped`)
    /// returns it; on an immediate drop it is handed back.
    pub fn enqueue(&mut self, now: Nanos, len: u32, packet: P) -> Result<(), Dropped<P>> {
        let now = self.clock(now);
        self.stats.packets_in += 1;
        self.stats.bytes_in += u64::from(len);
        // Replays scheduled changes (a loss change at `now` applies to this
        // packet). It does not touch the loss RNG, so doing it first keeps
        // the loss pattern independent of the other stages.
        self.advance_inner(now);

        // Loss first: a lost packet must never take tokens or buffer space.
        if self.loss.lose_next() {
            self.stats.drops_loss += 1;
            self.stats.bytes_dropped_loss += u64::from(len);
            return Err(Dropped { packet, cause: DropCause::Loss });
        }

        if let Some(p) = &mut self.policer {
            if !p.admit(now, len) {
                self.stats.drops_policer += 1;
                self.stats.bytes_dropped_policer += u64::from(len);
                return Err(Dropped { packet, cause: DropCause::Policer });
            }
        }

        let idle = self.server.is_none();
        // advance_inner keeps the server busy while anything waits, so an
        // idle server means an empty queue: the packet passes straight
        // through the buffer (and the AQM, which sees a zero sojourn).
        if !idle {
            let fits = match self.cfg.buffer {
                Buffer::Unlimited => true,
                Buffer::Bytes(b) => self.backlog_bytes + u64::from(len) <= b,
                Buffer::Packets(n) => (self.queue.len() as u64) < n,
            };
            if !fits {
                self.stats.drops_buffer += 1;
                self.stats.bytes_dropped_buffer += u64::from(len);
                return Err(Dropped { packet, cause: DropCause::BufferOverflow });
            }
        }
        self.queue.push_back(Waiting { packet, len, arrived_at: now });
        self.backlog_bytes += u64::from(len);
        if idle {
            self.start_next(now);
        } else {
            self.stats.max_backlog_bytes = self.stats.max_backlog_bytes.max(self.backlog_bytes);
        }
        Ok(())
    }

    /// Returns the next packet whose `delivered_at <= now`: in FIFO order,
    /// or in order of `delivered_at` with reordering jitter.
    pub fn dequeue(&mut self, now: Nanos) -> Option<Delivery<P>> {
        let now = self.clock(now);
        self.advance_inner(now);
        let d = self.delay_line.pop_due(now)?;
        self.stats.packets_out += 1;
        self.stats.bytes_out += u64::from(d.len);
        self.stats.queue_delay.record(d.service_start - d.arrived_at);
        Some(d)
    }

    /// Hands back a packet the AQM dropped, oldest first.
    ///
    /// AQM drops happen while the link replays its timeline inside
    /// `enqueue`, `dequeue` and `advance`, so they cannot be returned from
    /// those calls; the link keeps them until they are taken here. A driver
    /// that recycles buffers should call this until it returns `None` after
    /// each `dequeue` loop. Without an AQM it always returns `None`. The
    /// drop is already counted in [`LinkStats::drops_aqm`].
    pub fn take_dropped(&mut self) -> Option<Dropped<P>> {
        self.dropped.pop_front()
    }

    /// AQM-dropped packets not yet taken with [`Link::take_dropped`].
    pub fn pending_dropped(&self) -> usize {
        self.dropped.len()
    }

    /// Replays internal transitions up to `now` without taking packets out,
    /// so that the backlog accessors reflect the state at `now`.
    pub fn advance(&mut self, now: Nanos) {
        let now = self.clock(now);
        self.advance_inner(now);
    }

    /// The earliest time at which `dequeue` can return a packet; `None` if
    /// the link holds nothing (or only packets stuck behind a zero-rate
    /// server with no rate change scheduled). May be `<= now` if due packets
    /// have not been dequeued yet. Internal transitions (a packet finishing
    /// serialization) need no wake-up of their own, as they are replayed
    /// lazily.
    ///
    /// Two cases return a time at which `dequeue` may still find nothing:
    /// a stalled server with a scheduled rate change (the change time), and
    /// reordering jitter with packets waiting (the current packet's finish
    /// time, since its successor may overtake it).
    pub fn next_event(&self) -> Option<Nanos> {
        let queued = self.delay_line.next_time();
        let Some(s) = &self.server else {
            return queued;
        };
        let from_server = if s.finish == Nanos::MAX {
            self.cfg.schedule[self.next_change..].iter().find(|c| c.rate.is_some()).map(|c| c.at_ns)
        } else {
            let at = self.delivery_time(s.finish, self.delay_at(s.finish), s.jitter);
            if self.cfg.jitter.reorders() && !self.queue.is_empty() {
                Some(at.min(s.finish))
            } else {
                Some(at)
            }
        };
        match (queued, from_server) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        }
    }

    /// Bytes waiting in the queue, excluding the packet in service.
    pub fn backlog_bytes(&self) -> u64 {
        self.backlog_bytes
    }

    /// Packets waiting in the queue, excluding the packet in service.
    pub fn backlog_packets(&self) -> usize {
        self.queue.len()
    }

    /// Everything held on its way out: queue + server + delay line. AQM
    /// drops awaiting [`Link::take_dropped`] are not included.
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

    /// Replays, in time order, every scheduled change and every completed
    /// serialization up to `now`. A change at the same instant as a finish
    /// goes first, so it already applies to that packet's delay and to its
    /// successor's rate.
    fn advance_inner(&mut self, now: Nanos) {
        loop {
            let change = self.cfg.schedule.get(self.next_change).map(|c| c.at_ns).filter(|&t| t <= now);
            // Nanos::MAX marks a stalled server: it never finishes.
            let finish = self.server.as_ref().map(|s| s.finish).filter(|&f| f <= now && f != Nanos::MAX);
            match (change, finish) {
                (Some(c), f) if f.is_none_or(|f| c <= f) => self.apply_change(),
                (_, Some(_)) => self.complete_service(),
                _ => return,
            }
        }
    }

    fn apply_change(&mut self) {
        let c = &self.cfg.schedule[self.next_change];
        self.next_change += 1;
        let at = c.at_ns;
        if let Some(d) = c.delay_ns {
            self.delay_ns = d;
        }
        if let Some(l) = &c.loss {
            self.loss.set_model(l.clone());
        }
        if let Some(r) = c.rate {
            self.pace = Pace::Const(r);
            self.period_rate = 0;
            // A packet stalled behind a zero rate would otherwise never
            // leave; it restarts as if it had just reached the server.
            if let Some(mut s) = self.server.take() {
                if s.finish == Nanos::MAX {
                    s.start = at;
                    s.finish = self.finish_time(s.len, at);
                }
                self.server = Some(s);
            }
        }
    }

    /// Delay in force for a packet finishing at `finish`, taking pending
    /// (not yet replayed) changes into account.
    fn delay_at(&self, finish: Nanos) -> Nanos {
        let mut d = self.delay_ns;
        for c in &self.cfg.schedule[self.next_change..] {
            if c.at_ns > finish {
                break;
            }
            if let Some(x) = c.delay_ns {
                d = x;
            }
        }
        d
    }

    fn delivery_time(&self, finish: Nanos, delay: Nanos, jitter: Nanos) -> Nanos {
        let at = finish.saturating_add(delay).saturating_add(jitter);
        if self.cfg.jitter.reorders() {
            at
        } else {
            at.max(self.last_delivered)
        }
    }

    fn complete_service(&mut self) {
        let Some(s) = self.server.take() else {
            return;
        };
        self.stats.busy_ns += s.finish - s.start;
        let delivered_at = self.delivery_time(s.finish, self.delay_ns, s.jitter);
        self.last_delivered = self.last_delivered.max(delivered_at);
        self.seq += 1;
        self.delay_line.push(self.seq, Delivery { packet: s.packet, len: s.len, arrived_at: s.arrived_at, service_start: s.start, delivered_at });
        self.start_next(s.finish);
    }

    /// Moves the next packet the AQM lets through into service at `now`.
    fn start_next(&mut self, now: Nanos) {
        match self.aqm_dequeue(now) {
            Some(w) => {
                let finish = self.finish_time(w.len, now);
                let jitter = self.jitter.sample();
                self.server = Some(InService { packet: w.packet, len: w.len, arrived_at: w.arrived_at, start: now, finish, jitter });
            }
            // An opportunity's leftover credit is lost once nobody waits
            // for it (Mahimahi semantics).
            None => self.chain_at = None,
        }
    }

    /// The RFC 8289 `dodequeue`: pops the head and judges it.
    fn pop_judged(&mut self, now: Nanos) -> (Option<Waiting<P>>, bool) {
        let Some(w) = self.queue.pop_front() else {
            if let Some(c) = &mut self.codel {
                c.on_empty();
            }
            return (None, false);
        };
        self.backlog_bytes -= u64::from(w.len);
        let ok = match &mut self.codel {
            Some(c) => c.ok_to_drop(now, now - w.arrived_at, self.backlog_bytes),
            None => false,
        };
        (Some(w), ok)
    }

    fn aqm_drop(&mut self, w: Waiting<P>) {
        self.stats.drops_aqm += 1;
        self.stats.bytes_dropped_aqm += u64::from(w.len);
        self.dropped.push_back(Dropped { packet: w.packet, cause: DropCause::Aqm });
    }

    /// The RFC 8289 `dequeue`, run when the server becomes free at `now`.
    fn aqm_dequeue(&mut self, now: Nanos) -> Option<Waiting<P>> {
        let (mut p, mut ok) = self.pop_judged(now);
        let Some(codel) = &mut self.codel else {
            return p;
        };
        if p.is_none() {
            codel.dropping = false;
            return None;
        }
        if codel.dropping {
            if !ok {
                codel.dropping = false;
            }
            while self.codel.as_ref().is_some_and(|c| c.dropping && now >= c.drop_next) {
                if let Some(w) = p.take() {
                    self.aqm_drop(w);
                }
                if let Some(c) = &mut self.codel {
                    c.count = c.count.saturating_add(1);
                }
                (p, ok) = self.pop_judged(now);
                if let Some(c) = &mut self.codel {
                    if ok {
                        c.drop_next = c.control_law(c.drop_next);
                    } else {
                        c.dropping = false;
                    }
                }
            }
        } else if ok {
            if let Some(w) = p.take() {
                self.aqm_drop(w);
            }
            (p, _) = self.pop_judged(now);
            if let Some(c) = &mut self.codel {
                c.enter_dropping(now);
            }
        }
        p
    }

    /// When a `len`-byte packet starting service at `start` finishes.
    fn finish_time(&mut self, len: u32, start: Nanos) -> Nanos {
        match self.pace {
            Pace::Trace => self.trace_finish(len, start),
            Pace::Const(Rate::Unlimited) => start,
            Pace::Const(Rate::BitsPerSec(0)) => Nanos::MAX,
            Pace::Const(Rate::BitsPerSec(rate)) => {
                if start != self.last_finish || rate != self.period_rate {
                    // Idle gap or new rate: a new busy period starts here.
                    self.period_start = start;
                    self.period_bits = 0;
                    self.period_rate = rate;
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
        }
    }

    /// The packet leaves at the opportunity whose credit completes it. Only
    /// a packet starting exactly at an opportunity that left credit over
    /// (its predecessor finished there while it waited) may use that credit;
    /// otherwise it needs opportunities strictly after `start`, as an
    /// arrival in Mahimahi only sees opportunities after it.
    fn trace_finish(&mut self, len: u32, start: Nanos) -> Nanos {
        // Leaving the constant-rate busy period behind.
        self.period_rate = 0;
        let Some(trace) = self.trace.as_ref().filter(|t| t.is_loaded()) else {
            return Nanos::MAX;
        };
        let mut need = u64::from(len);
        let first = if self.chain_at == Some(start) {
            let used = self.carry.min(need);
            self.carry -= used;
            need -= used;
            // Opportunities in the same millisecond as the one just used
            // are still ahead of us, hence an index rather than a time.
            self.next_opp
        } else {
            self.carry = 0;
            trace.first_after(start)
        };
        if need == 0 {
            self.next_opp = first;
            self.chain_at = Some(start);
            return start;
        }
        let per = u64::from(OPPORTUNITY_BYTES);
        let k = need.div_ceil(per);
        let last = first + k - 1;
        let finish = trace.time_of(last);
        self.carry = k * per - need;
        self.next_opp = last + 1;
        self.chain_at = Some(finish);
        finish
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
