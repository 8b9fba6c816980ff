//! The rate server's pacing: when a packet that starts serialization at a given time
//! finishes, at a constant rate (exact, no drift) or along a Mahimahi trace.

use crate::config::Rate;
use crate::time::Instant;
use crate::trace::{TraceRate, OPPORTUNITY_BYTES};

/// What currently paces the server.
#[derive(Clone, Copy, Debug, PartialEq)]
enum Pace {
    Const(Rate),
    Trace,
}

pub(crate) struct Pacer {
    pace: Pace,
    trace: Option<TraceRate>,
    /// Where the previous trace packet left off: credit left over from
    /// opportunity `next_opp - 1` and the index of the next unused
    /// opportunity. Usable only by a packet starting service at `chain_at`,
    /// i.e. one that was waiting when its predecessor finished.
    carry: u64,
    next_opp: u64,
    chain_at: Option<Instant>,
    /// Finish times are computed from the start of the current busy period
    /// and the total bits sent in it, so per-packet rounding never
    /// accumulates: the n-th finish is within 0.5 ns of the exact value.
    /// `period_rate` is the rate of that period (0: none), so a rate change
    /// opens a new period.
    period_start: Instant,
    period_bits: u128,
    period_rate: u64,
    last_finish: Instant,
}

impl Pacer {
    /// Paced by `trace` if there is one (until a scheduled rate change), else by `rate`.
    pub(crate) fn new(rate: Rate, trace: Option<TraceRate>) -> Self {
        Pacer {
            pace: if trace.is_some() { Pace::Trace } else { Pace::Const(rate) },
            trace,
            carry: 0,
            next_opp: 0,
            chain_at: None,
            period_start: Instant::EPOCH,
            period_bits: 0,
            period_rate: 0,
            last_finish: Instant::EPOCH,
        }
    }

    /// A scheduled rate change: constant rate from now on, in a new busy period.
    pub(crate) fn set_rate(&mut self, rate: Rate) {
        self.pace = Pace::Const(rate);
        self.period_rate = 0;
    }

    /// The rate in force in bit/s: the constant rate, or a trace's long-run mean; 0 for
    /// none (unlimited, zero, or a trace without timestamps).
    pub(crate) fn nominal_bps(&self) -> f64 {
        match self.pace {
            Pace::Const(Rate::BitsPerSec(r)) => r as f64,
            Pace::Const(Rate::Unlimited) => 0.0,
            Pace::Trace => self.trace.as_ref().filter(|t| t.is_loaded()).map_or(0.0, |t| t.mean_bps()),
        }
    }

    /// The server went idle: an opportunity's leftover credit is lost once nobody waits
    /// for it (Mahimahi semantics).
    pub(crate) fn idle(&mut self) {
        self.chain_at = None;
    }

    /// When a `len`-byte packet starting service at `start` finishes.
    pub(crate) fn finish_time(&mut self, len: u32, start: Instant) -> Instant {
        match self.pace {
            Pace::Trace => self.trace_finish(len, start),
            Pace::Const(Rate::Unlimited) => start,
            Pace::Const(Rate::BitsPerSec(0)) => Instant::MAX,
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
                let finish = u128::from(self.period_start.as_nanos()) + offset;
                // Saturating at Instant::MAX degrades to "stalled", which is
                // the only sensible reading of a finish beyond u64 time.
                let finish = u64::try_from(finish).map_or(Instant::MAX, Instant::from_nanos);
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
    fn trace_finish(&mut self, len: u32, start: Instant) -> Instant {
        // Leaving the constant-rate busy period behind.
        self.period_rate = 0;
        let Some(trace) = self.trace.as_ref().filter(|t| t.is_loaded()) else {
            return Instant::MAX;
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
