use std::collections::VecDeque;
use std::fmt;

use crate::aqm::{Discipline, Drops, QueueDiscipline as _, Queued};
use crate::config::DirectionConfig;
use crate::delay_line::DelayLine;
use crate::ecn::Ecn;
use crate::entry::EntryMeter;
use crate::error::LinkConfigError;
use crate::jitter::JitterProcess;
use crate::loss::LossProcess;
use crate::outcome::{Delivery, DropCause, Dropped, LinkStats};
use crate::pacer::Pacer;
use crate::policer::TokenBucket;
use crate::reorder::ReorderProcess;
use crate::time::{Duration, Instant};

struct InService<P> {
    packet: P,
    len: u32,
    arrived_at: Instant,
    ecn: Ecn,
    marked: bool,
    start: Instant,
    /// `Instant::MAX` for a server stalled behind a zero rate: it never finishes.
    finish: Instant,
    /// Drawn when service starts rather than when it ends, so that
    /// `next_event` can predict the delivery time without touching the RNG.
    jitter: Duration,
    /// How long it is held back after its delay and jitter (`--reorder`), drawn with the
    /// jitter for the same reason.
    held: Duration,
}

/// One direction of a link: loss -> policer -> buffer (drop-tail or CoDel)
/// -> rate server (constant, trace, scheduled) -> delay (+ jitter, + reordering) -> aggregation.
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
    /// The buffer and its queue management.
    aqm: Discipline<P>,
    jitter: JitterProcess,
    reorder: ReorderProcess,
    server: Option<InService<P>>,
    pacer: Pacer,
    /// Propagation delay in force (the configured one, then scheduled changes).
    delay: Duration,
    /// Index of the first change in `cfg.schedule` not yet applied.
    next_change: usize,
    delay_line: DelayLine<P>,
    /// Latest delivery time handed to the delay line, for the FIFO clamp.
    last_delivered: Instant,
    seq: u64,
    dropped: VecDeque<Dropped<P>>,
    stats: LinkStats,
    entry: EntryMeter,
    last_now: Instant,
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
        // Reordering reuses the delay line jitter reorders with: delivery in time order.
        let delay_line = DelayLine::new(cfg.jitter.reorders() || cfg.reorder.is_on());
        Link {
            loss: LossProcess::new(cfg.loss.clone(), seed),
            policer: cfg.policer.map(TokenBucket::new),
            aqm: cfg.aqm.build(cfg.buffer, seed),
            jitter: JitterProcess::new(cfg.jitter, seed),
            reorder: ReorderProcess::new(cfg.reorder, seed),
            server: None,
            pacer: Pacer::new(cfg.rate, cfg.trace.clone()),
            delay: cfg.delay_ns,
            next_change: 0,
            delay_line,
            last_delivered: Instant::EPOCH,
            seq: 0,
            dropped: VecDeque::new(),
            stats: LinkStats::default(),
            entry: EntryMeter::default(),
            last_now: Instant::EPOCH,
            cfg,
        }
    }

    pub fn try_new(cfg: DirectionConfig, seed: u64) -> Result<Self, LinkConfigError> {
        cfg.validate()?;
        Ok(Self::new(cfg, seed))
    }

    /// Offers a packet that arrived at `now`. On success the link owns it
    /// until `dequeue` (or, if the AQM drops it later, `take_dropped`)
    /// returns it; on an immediate drop it is handed back. All packets offered this way
    /// belong to one flow (see [`Link::enqueue_in_flow`]).
    pub fn enqueue(&mut self, now: Instant, len: u32, packet: P) -> Result<(), Dropped<P>> {
        self.enqueue_in_flow(now, len, 0, packet)
    }

    /// As [`Link::enqueue`], for a packet of `flow` (a hash of its 5-tuple, see
    /// [`crate::flow::flow_of`]): an AQM that queues flows apart (FQ-CoDel) classifies by it;
    /// the others ignore it. [`DirectionConfig::aqm`]'s `per_flow()` says whether it matters.
    pub fn enqueue_in_flow(&mut self, now: Instant, len: u32, flow: u64, packet: P) -> Result<(), Dropped<P>> {
        self.enqueue_ecn(now, len, flow, Ecn::NotEct, packet)
    }

    /// As [`Link::enqueue_in_flow`], for a packet carrying the ECN codepoint `ecn` (RFC 3168):
    /// an AQM with ECN on marks it CE instead of dropping it when it is ECN-capable, and
    /// [`Delivery::ecn`] says what it leaves with.
    pub fn enqueue_ecn(&mut self, now: Instant, len: u32, flow: u64, ecn: Ecn, packet: P) -> Result<(), Dropped<P>> {
        let now = self.clock(now);
        self.stats.packets_in += 1;
        self.stats.bytes_in += u64::from(len);
        // Replays scheduled changes (a loss change at `now` applies to this
        // packet). It does not touch the loss RNG, so doing it first keeps
        // the loss pattern independent of the other stages.
        self.advance_inner(now);
        // At the entry, before anything can drop it: the sender's spacing as sent.
        let back_to_back = self.back_to_back_under(len);
        self.entry.arrival(now, back_to_back, &mut self.stats.entry);

        // A middlebox in front of the bottleneck rewrites the ECN field (or drops on it)
        // before anything else; its drops count as loss, the path's doing rather than the
        // buffer's. It draws no random numbers, so the loss pattern is unchanged.
        let ecn = match self.cfg.ecn_fault.map_or(Some(ecn), |f| f.apply(ecn)) {
            Some(e) => e,
            None => {
                self.stats.drops_loss += 1;
                self.stats.bytes_dropped_loss += u64::from(len);
                return Err(Dropped { packet, cause: DropCause::Loss, arrived_at: now, len });
            }
        };
        // Loss first: a lost packet must never take tokens or buffer space.
        if self.loss.lose_next() {
            self.stats.drops_loss += 1;
            self.stats.bytes_dropped_loss += u64::from(len);
            return Err(Dropped { packet, cause: DropCause::Loss, arrived_at: now, len });
        }

        if let Some(p) = &mut self.policer {
            if !p.admit(now, len) {
                self.stats.drops_policer += 1;
                self.stats.bytes_dropped_policer += u64::from(len);
                return Err(Dropped { packet, cause: DropCause::Policer, arrived_at: now, len });
            }
        }

        let idle = self.server.is_none();
        // advance_inner keeps the server busy while anything waits, so an
        // idle server means an empty queue: the packet passes straight
        // through the buffer (and the AQM, which sees a zero sojourn).
        let mut drops = Drops { stats: &mut self.stats, out: &mut self.dropped };
        if let Err((q, cause)) = self.aqm.enqueue(now, Queued { packet, len, arrived_at: now, flow, ecn, marked: false }, idle, &mut drops) {
            self.stats.count_drop(cause, len);
            return Err(Dropped { packet: q.packet, cause, arrived_at: now, len });
        }
        if idle {
            self.start_next(now);
        } else {
            self.stats.max_backlog_bytes = self.stats.max_backlog_bytes.max(self.aqm.backlog_bytes());
        }
        Ok(())
    }

    /// Returns the next packet whose `delivered_at <= now`: in FIFO order,
    /// or in order of `delivered_at` with reordering jitter or `reorder`.
    pub fn dequeue(&mut self, now: Instant) -> Option<Delivery<P>> {
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
    pub fn advance(&mut self, now: Instant) {
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
    /// reordering jitter, or a held-back packet in service, with packets waiting (the current
    /// packet's finish time, since its successor may overtake it).
    pub fn next_event(&self) -> Option<Instant> {
        let queued = self.delay_line.next_time();
        let Some(s) = &self.server else {
            return queued;
        };
        let from_server = if s.finish == Instant::MAX {
            self.cfg.schedule[self.next_change..].iter().find(|c| c.rate.is_some()).map(|c| c.at_ns)
        } else {
            let at = self.delivery_time(s.finish, self.delay_at(s.finish), s.jitter) + s.held;
            if (self.cfg.jitter.reorders() || !s.held.is_zero()) && self.aqm.backlog_packets() > 0 {
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

    /// The gap under which a `len`-byte arrival counts as back to back with the one before
    /// ([`crate::entry::BACK_TO_BACK_FRACTION`] of its serialization time at the rate in
    /// force as of the latest `now`; a trace's mean rate); `None` without a rate.
    pub fn back_to_back_under(&self, len: u32) -> Option<Duration> {
        crate::entry::back_to_back_under(len, self.pacer.nominal_bps())
    }

    /// Counts the entry burst under way into the stats (at the end of a measurement).
    pub fn flush_entry(&mut self) {
        self.entry.flush(&mut self.stats.entry);
    }

    /// Bytes waiting in the queue, excluding the packet in service.
    pub fn backlog_bytes(&self) -> u64 {
        self.aqm.backlog_bytes()
    }

    /// Packets waiting in the queue, excluding the packet in service.
    pub fn backlog_packets(&self) -> usize {
        self.aqm.backlog_packets()
    }

    /// The AQM's base probability now (DualPI2's `p'`), for the series; `None` for others.
    pub fn aqm_base_prob(&self) -> Option<f64> {
        self.aqm.base_prob()
    }

    /// The running queue discipline (for tests that look inside one).
    #[cfg(test)]
    pub(crate) fn discipline(&self) -> &Discipline<P> {
        &self.aqm
    }

    /// Everything held on its way out: queue + server + delay line. AQM
    /// drops awaiting [`Link::take_dropped`] are not included.
    pub fn in_flight_packets(&self) -> usize {
        self.aqm.backlog_packets() + usize::from(self.server.is_some()) + self.delay_line.len()
    }

    pub fn stats(&self) -> &LinkStats {
        &self.stats
    }

    pub fn config(&self) -> &DirectionConfig {
        &self.cfg
    }

    fn clock(&mut self, now: Instant) -> Instant {
        self.last_now = self.last_now.max(now);
        self.last_now
    }

    /// Replays, in time order, every scheduled change, AQM timer and completed
    /// serialization up to `now`. At equal instants a change goes first, so it already
    /// applies to that packet's delay and to its successor's rate; then the AQM's timer, so
    /// the packet starting service sees its update.
    fn advance_inner(&mut self, now: Instant) {
        loop {
            let change = self.cfg.schedule.get(self.next_change).map(|c| c.at_ns).filter(|&t| t <= now);
            let timer = self.aqm.next_timer().filter(|&t| t <= now);
            // Instant::MAX marks a stalled server: it never finishes.
            let finish = self.server.as_ref().map(|s| s.finish).filter(|&f| f <= now && f != Instant::MAX);
            let first = [change, timer, finish].into_iter().flatten().min();
            match first {
                None => return,
                Some(t) if change == Some(t) => self.apply_change(),
                Some(t) if timer == Some(t) => self.aqm.on_timer(t),
                Some(_) => self.complete_service(),
            }
        }
    }

    fn apply_change(&mut self) {
        let c = &self.cfg.schedule[self.next_change];
        self.next_change += 1;
        let at = c.at_ns;
        if let Some(d) = c.delay_ns {
            self.delay = d;
        }
        if let Some(l) = &c.loss {
            self.loss.set_model(l.clone());
        }
        if let Some(r) = c.rate {
            self.pacer.set_rate(r);
            // A packet stalled behind a zero rate would otherwise never
            // leave; it restarts as if it had just reached the server.
            if let Some(mut s) = self.server.take() {
                if s.finish == Instant::MAX {
                    s.start = at;
                    s.finish = self.pacer.finish_time(s.len, at);
                }
                self.server = Some(s);
            }
        }
    }

    /// Delay in force for a packet finishing at `finish`, taking pending
    /// (not yet replayed) changes into account.
    fn delay_at(&self, finish: Instant) -> Duration {
        let mut d = self.delay;
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

    fn delivery_time(&self, finish: Instant, delay: Duration, jitter: Duration) -> Instant {
        // Saturating, as all time arithmetic.
        let at = finish + delay + jitter;
        let at = if self.cfg.jitter.reorders() { at } else { at.max(self.last_delivered) };
        release_at(at, self.cfg.aggregation())
    }

    fn complete_service(&mut self) {
        let Some(s) = self.server.take() else {
            return;
        };
        self.stats.busy_ns += s.finish - s.start;
        let in_order = self.delivery_time(s.finish, self.delay, s.jitter);
        // A held-back packet does not hold back those behind it (the FIFO clamp follows the
        // packets in order): that is what lets them overtake it.
        self.last_delivered = self.last_delivered.max(in_order);
        let delivered_at = in_order + s.held;
        if !s.held.is_zero() {
            self.stats.reorder_held += 1;
        }
        self.seq += 1;
        self.delay_line.push(
            self.seq,
            Delivery {
                packet: s.packet,
                len: s.len,
                arrived_at: s.arrived_at,
                service_start: s.start,
                delivered_at,
                ecn: s.ecn,
                marked: s.marked,
                held: !s.held.is_zero(),
            },
        );
        self.start_next(s.finish);
    }

    /// Moves the next packet the AQM lets through into service at `now`.
    fn start_next(&mut self, now: Instant) {
        match self.aqm_dequeue(now) {
            Some(w) => {
                let finish = self.pacer.finish_time(w.len, now);
                let jitter = self.jitter.sample();
                let held = self.reorder.hold(w.len, self.pacer.nominal_bps());
                self.server =
                    Some(InService { packet: w.packet, len: w.len, arrived_at: w.arrived_at, ecn: w.ecn, marked: w.marked, start: now, finish, jitter, held });
            }
            None => self.pacer.idle(),
        }
    }

    /// The next packet the buffer hands the server at `now`: what the AQM lets through
    /// after its drops.
    fn aqm_dequeue(&mut self, now: Instant) -> Option<Queued<P>> {
        self.aqm.dequeue(now, &mut Drops { stats: &mut self.stats, out: &mut self.dropped })
    }
}

/// When an aggregating link lets go of a packet due at `at`: the next multiple of `period` at or
/// after it (`at` itself without aggregation). Rounding up is monotone, so packets due in order
/// leave in order, and those due within one period leave together, a burst.
fn release_at(at: Instant, period: Option<Duration>) -> Instant {
    let Some(p) = period.map(Duration::as_nanos) else { return at };
    let t = at.as_nanos();
    let rem = t % p;
    if rem == 0 {
        at
    } else {
        // Saturating: a time within one period of the end of the clock stays there.
        Instant::from_nanos(t.saturating_add(p - rem))
    }
}

impl<P> fmt::Debug for Link<P> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Link")
            .field("cfg", &self.cfg)
            .field("backlog_packets", &self.backlog_packets())
            .field("backlog_bytes", &self.backlog_bytes())
            .field("in_flight_packets", &self.in_flight_packets())
            .field("last_now", &self.last_now)
            .finish_non_exhaustive()
    }
}

#[cfg(test)]
pub(crate) mod tests;
