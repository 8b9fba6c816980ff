//! The measurement window: the span the workload measures, opened and closed by the caller,
//! accounted by the emulator itself so that every path metric covers the same span.
//!
//! Each event counts when its own timestamp lies in `[open, close)`: arrivals and drops at
//! their arrival time, deliveries (bytes, queue delay, lateness) at their model departure,
//! busy time when serialization finished (as the forwarder observes it). The caller sets
//! `open` and `close` a little after the instants they name, so events are held for
//! [`DECIDE_AFTER`] before being attributed: the window is exact and memory stays bounded
//! by that span.
//!
//! When the end is not known in advance (a file, a page, a set of requests), the caller
//! `extend`s the window as it goes (each response received proves the span reaches at least
//! that far) and `close`s it at the end. Events after the last `extend` of a window not yet
//! closed are held until the next `extend` or the `close`: memory is bounded by the longest
//! gap between extends, not by the run's length.

use std::collections::VecDeque;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Instant;

use ccbench_link::time;
use ccbench_link::{DelayHistogram, DropCause, EntryMeter, LinkStats};

use crate::report::{DelaySummary, WindowReport};

/// How long an event waits before it is attributed: longer than any caller takes between
/// the instant it names and the call to `open`/`close`.
pub const DECIDE_AFTER: time::Duration = time::Duration::from_millis(200);
const UNSET: u64 = u64::MAX;

/// A cheap handle to set the measurement window of a running path (both directions).
#[derive(Clone, Debug)]
pub struct MeasureWindow {
    inner: Arc<Bounds>,
}

#[derive(Debug)]
struct Bounds {
    epoch: Instant,
    open_ns: AtomicU64,
    close_ns: AtomicU64,
    covered_ns: AtomicU64,
}

impl MeasureWindow {
    /// A window on a clock that starts at `epoch` (a path makes its own: [`crate::EmulatedPath::window`]).
    pub fn new(epoch: Instant) -> Self {
        MeasureWindow { inner: Arc::new(Bounds { epoch, open_ns: AtomicU64::new(UNSET), close_ns: AtomicU64::new(UNSET), covered_ns: AtomicU64::new(0) }) }
    }

    /// Nanoseconds since the epoch, as stored.
    fn since_epoch(&self, at: Instant) -> u64 {
        crate::clock_at(self.inner.epoch, at).as_nanos()
    }

    /// Opens the window at `at` (events from `at` on count).
    pub fn open(&self, at: Instant) {
        self.inner.open_ns.store(self.since_epoch(at), Ordering::SeqCst);
    }

    /// Everything before `at` lies inside the window: it will close at `at` or later.
    pub fn extend(&self, at: Instant) {
        self.inner.covered_ns.fetch_max(self.since_epoch(at), Ordering::SeqCst);
    }

    /// Closes the window at `at` (events from `at` on no longer count).
    pub fn close(&self, at: Instant) {
        self.inner.close_ns.store(self.since_epoch(at), Ordering::SeqCst);
    }

    /// `(open, close)` on the path's clock, each `None` until set.
    pub(crate) fn bounds(&self) -> (Option<time::Instant>, Option<time::Instant>) {
        let get = |a: &AtomicU64| Some(a.load(Ordering::SeqCst)).filter(|&v| v != UNSET).map(time::Instant::from_nanos);
        (get(&self.inner.open_ns), get(&self.inner.close_ns))
    }

    /// The latest instant `extend` vouched for, on the path's clock (the epoch if none).
    fn covered(&self) -> time::Instant {
        time::Instant::from_nanos(self.inner.covered_ns.load(Ordering::SeqCst))
    }
}

#[derive(Clone, Copy, Debug)]
enum Event {
    /// `back_to_back`: the gap under which it continues a burst (see `ccbench_link::entry`).
    Arrival {
        len: u32,
        back_to_back: Option<time::Duration>,
    },
    Drop {
        cause: DropCause,
        len: u32,
    },
    Delivery {
        len: u32,
        queue_delay: time::Duration,
        late: time::Duration,
        /// The AQM marked it CE.
        marked: bool,
        /// Held back by the link's reordering.
        held: bool,
    },
    Busy {
        span: time::Duration,
    },
}

/// One direction's accounting of the window.
pub(crate) struct WindowAccount {
    window: MeasureWindow,
    pending: VecDeque<(time::Instant, Event)>,
    stats: LinkStats,
    lateness: DelayHistogram,
    /// The window's own view of the entry: gaps between arrivals inside it.
    entry: EntryMeter,
}

impl WindowAccount {
    pub fn new(window: MeasureWindow) -> Self {
        WindowAccount { window, pending: VecDeque::new(), stats: LinkStats::default(), lateness: DelayHistogram::default(), entry: EntryMeter::default() }
    }

    pub fn arrival(&mut self, at: time::Instant, len: u32, back_to_back: Option<time::Duration>) {
        self.pending.push_back((at, Event::Arrival { len, back_to_back }));
    }

    pub fn drop(&mut self, at: time::Instant, cause: DropCause, len: u32) {
        self.pending.push_back((at, Event::Drop { cause, len }));
    }

    pub fn delivery(&mut self, at: time::Instant, len: u32, queue_delay: time::Duration, late: time::Duration, marked: bool, held: bool) {
        self.pending.push_back((at, Event::Delivery { len, queue_delay, late, marked, held }));
    }

    pub fn busy(&mut self, at: time::Instant, span: time::Duration) {
        if !span.is_zero() {
            self.pending.push_back((at, Event::Busy { span }));
        }
    }

    /// Attributes every event older than [`DECIDE_AFTER`] at `now`, except those an open,
    /// unclosed window may still take or leave (after its last `extend`).
    pub fn settle(&mut self, now: time::Instant) {
        let (open, close) = self.window.bounds();
        let covered = self.window.covered();
        while let Some(&(at, ev)) = self.pending.front() {
            if at + DECIDE_AFTER > now {
                break;
            }
            if close.is_none() && open.is_some_and(|o| o <= at) && at >= covered {
                break;
            }
            self.pending.pop_front();
            self.attribute(open, close, at, ev);
        }
    }

    fn attribute(&mut self, open: Option<time::Instant>, close: Option<time::Instant>, at: time::Instant, ev: Event) {
        let inside = open.is_some_and(|o| o <= at) && close.is_none_or(|c| at < c);
        if !inside {
            return;
        }
        let s = &mut self.stats;
        match ev {
            Event::Arrival { len, back_to_back } => {
                s.packets_in += 1;
                s.bytes_in += u64::from(len);
                self.entry.arrival(at, back_to_back, &mut s.entry);
            }
            Event::Drop { cause, len } => {
                let (n, b) = match cause {
                    DropCause::Loss => (&mut s.drops_loss, &mut s.bytes_dropped_loss),
                    DropCause::BufferOverflow => (&mut s.drops_buffer, &mut s.bytes_dropped_buffer),
                    DropCause::Policer => (&mut s.drops_policer, &mut s.bytes_dropped_policer),
                    DropCause::Aqm => (&mut s.drops_aqm, &mut s.bytes_dropped_aqm),
                };
                *n += 1;
                *b += u64::from(len);
            }
            Event::Delivery { len, queue_delay, late, marked, held } => {
                // Counted when it leaves, late, as the link counts it.
                s.reorder_held += u64::from(held);
                // A mark counts when its packet leaves, a drop at its packet's arrival.
                if marked {
                    s.ce_marks += 1;
                    s.bytes_ce_marked += u64::from(len);
                }
                s.packets_out += 1;
                s.bytes_out += u64::from(len);
                s.queue_delay.record(queue_delay);
                self.lateness.record(late);
            }
            Event::Busy { span } => s.busy_ns += span,
        }
    }

    /// Attributes everything still held and reports the window, if it was opened and closed.
    pub fn finish(mut self) -> Option<WindowReport> {
        let (open, close) = self.window.bounds();
        while let Some((at, ev)) = self.pending.pop_front() {
            self.attribute(open, close, at, ev);
        }
        self.entry.flush(&mut self.stats.entry);
        let (from, to) = (open?, close?);
        // Saturating: a window closed before it opened is empty.
        let len = to - from;
        Some(WindowReport {
            from_us: from.as_nanos() / 1000,
            to_us: to.as_nanos() / 1000,
            queue_delay: DelaySummary::of(&self.stats.queue_delay),
            lateness: DelaySummary::of(&self.lateness),
            utilization: if len.is_zero() { 0.0 } else { self.stats.busy_ns.as_nanos() as f64 / len.as_nanos() as f64 },
            stats: self.stats,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MS: time::Duration = time::Duration::from_millis(1);

    /// `ms` milliseconds after the epoch on the path's clock.
    fn at_ms(ms: u64) -> time::Instant {
        time::Instant::EPOCH + ms * MS
    }

    #[test]
    fn held_events_are_bounded_by_the_decision_delay_not_the_duration() {
        let epoch = Instant::now();
        let window = MeasureWindow::new(epoch);
        window.open(epoch);
        let mut acc = WindowAccount::new(window.clone());
        let mut most = 0;
        // An hour of virtual time, ten arrivals per millisecond, settled every millisecond; the
        // workload vouches every 10 ms that the span goes on, as a file transfer's sampler does.
        for ms in 0..3_600_000u64 {
            if ms % 10 == 0 && ms <= 1_800_000 {
                window.extend(epoch + std::time::Duration::from_millis(ms));
            }
            if ms == 1_800_100 {
                // Closed 100 ms after the instant it names, as a workload would.
                window.close(epoch + std::time::Duration::from_secs(1800));
            }
            for _ in 0..10 {
                acc.arrival(at_ms(ms), 1500, None);
            }
            acc.settle(at_ms(ms));
            most = most.max(acc.pending.len());
        }
        assert!(most <= 10 * (DECIDE_AFTER.as_nanos() / MS.as_nanos() + 11) as usize, "held {most} events");
        let r = acc.finish().expect("opened and closed");
        assert_eq!(r.stats.packets_in, 18_000_000, "half an hour at 10 per ms");
    }

    /// A span whose end is learnt late (a file that finishes, a last response): events after
    /// the last `extend` wait for the close, however late it comes, and land on the right side.
    #[test]
    fn events_after_the_last_extend_wait_for_the_close() {
        let epoch = Instant::now();
        let window = MeasureWindow::new(epoch);
        window.open(epoch);
        let mut acc = WindowAccount::new(window.clone());
        let at = |ms: u64| epoch + std::time::Duration::from_millis(ms);
        for ms in 0..3000u64 {
            if ms == 1000 {
                window.extend(at(1000));
            }
            if ms == 2900 {
                // The span really ended at 1500 ms; the caller learns it 1.4 s later.
                window.close(at(1500));
            }
            acc.arrival(at_ms(ms), 100, None);
            acc.settle(at_ms(ms));
        }
        let r = acc.finish().expect("opened and closed");
        assert_eq!(r.stats.packets_in, 1500, "exactly the arrivals in [0, 1500) ms");
        // Without extend or close, an open window decides nothing after its open: it holds.
        let w2 = MeasureWindow::new(epoch);
        w2.open(epoch);
        let mut held = WindowAccount::new(w2);
        for ms in 0..1000u64 {
            held.arrival(at_ms(ms), 100, None);
            held.settle(at_ms(ms));
        }
        assert_eq!(held.pending.len(), 1000);
    }
}
