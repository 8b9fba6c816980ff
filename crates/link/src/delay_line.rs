//! The delay line: packets that finished serialization, waiting out their propagation
//! delay (+ jitter). FIFO unless the jitter is configured to reorder.

use std::cmp::Ordering;
use std::collections::{BinaryHeap, VecDeque};

use crate::outcome::Delivery;
use crate::time::Instant;

/// Packets that finished serialization and are waiting out their delay.
pub(crate) enum DelayLine<P> {
    /// Delivery times are forced to be non-decreasing, so FIFO order is
    /// delivery order.
    Fifo(VecDeque<Delivery<P>>),
    /// Jitter with reordering: earliest delivery first, ties in the order
    /// packets left the server.
    Heap(BinaryHeap<Delayed<P>>),
}

pub(crate) struct Delayed<P> {
    seq: u64,
    d: Delivery<P>,
}

impl<P> Delayed<P> {
    fn key(&self) -> (Instant, u64) {
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
    pub(crate) fn new(reorders: bool) -> Self {
        if reorders {
            DelayLine::Heap(BinaryHeap::new())
        } else {
            DelayLine::Fifo(VecDeque::new())
        }
    }

    pub(crate) fn len(&self) -> usize {
        match self {
            DelayLine::Fifo(q) => q.len(),
            DelayLine::Heap(h) => h.len(),
        }
    }

    pub(crate) fn next_time(&self) -> Option<Instant> {
        match self {
            DelayLine::Fifo(q) => q.front().map(|d| d.delivered_at),
            DelayLine::Heap(h) => h.peek().map(|x| x.d.delivered_at),
        }
    }

    pub(crate) fn push(&mut self, seq: u64, d: Delivery<P>) {
        match self {
            DelayLine::Fifo(q) => q.push_back(d),
            DelayLine::Heap(h) => h.push(Delayed { seq, d }),
        }
    }

    pub(crate) fn pop_due(&mut self, now: Instant) -> Option<Delivery<P>> {
        if self.next_time()? > now {
            return None;
        }
        match self {
            DelayLine::Fifo(q) => q.pop_front(),
            DelayLine::Heap(h) => h.pop().map(|x| x.d),
        }
    }
}
