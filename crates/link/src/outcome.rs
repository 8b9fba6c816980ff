//! What the link hands back and counts: a packet delivered ([`Delivery`]) or dropped
//! ([`Dropped`], with its [`DropCause`]), and the totals ([`LinkStats`]). Kept apart from the
//! link itself because the AQMs produce and count them too.

use std::fmt;

use serde::{Deserialize, Serialize};

use crate::ecn::Ecn;
use crate::entry::EntryStats;
use crate::histogram::DelayHistogram;
use crate::time::{Duration, Instant};

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum DropCause {
    Loss,
    BufferOverflow,
    /// Out of tokens at the policer.
    Policer,
    /// Dropped by the AQM: at arrival (PIE), handed back by [`crate::Link::enqueue`], or when
    /// leaving the buffer (CoDel, FQ-CoDel), handed back through [`crate::Link::take_dropped`].
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
    /// When the packet arrived (for an AQM drop, earlier than the decision), so a caller
    /// can account the drop at its arrival.
    pub arrived_at: Instant,
    /// The length it was offered with.
    pub len: u32,
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
    pub arrived_at: Instant,
    pub service_start: Instant,
    pub delivered_at: Instant,
    /// Its ECN codepoint on leaving: as it arrived, or CE when the AQM marked it, or what an
    /// [`crate::EcnFault`] made of it. The caller writes it back into the packet.
    pub ecn: Ecn,
    /// The AQM marked it CE (counted in [`LinkStats::ce_marks`]).
    pub marked: bool,
    /// Held back by [`crate::Reorder`] (counted in [`LinkStats::reorder_held`]).
    pub held: bool,
}

#[derive(Clone, Debug, Default, Serialize, Deserialize, PartialEq, schemars::JsonSchema)]
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
    /// ECN-capable packets the AQM marked Congestion Experienced instead of dropping them
    /// (RFC 3168 section 5), counted when it decides; packets that arrived CE are not counted.
    #[serde(default)]
    pub ce_marks: u64,
    #[serde(default)]
    pub bytes_ce_marked: u64,
    /// Packets held back by `reorder` (counted as they leave the server), so that later ones
    /// overtook them. Written only when some were, so a path without reordering reads as before.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub reorder_held: u64,
    /// Total serialization time of packets that finished serialization.
    pub busy_ns: Duration,
    /// Queueing delay (`service_start - arrived_at`) of every dequeued packet.
    pub queue_delay: DelayHistogram,
    /// Peak of the waiting-queue size, excluding the packet in service.
    pub max_backlog_bytes: u64,
    /// Arrival gaps and bursts at the entry, before loss and the buffer (see
    /// [`crate::entry`]). The burst under way is counted by [`crate::Link::flush_entry`].
    #[serde(default)]
    pub entry: EntryStats,
}

impl LinkStats {
    /// Counts a drop of `len` bytes under its cause.
    pub(crate) fn count_drop(&mut self, cause: DropCause, len: u32) {
        let (packets, bytes) = match cause {
            DropCause::Loss => (&mut self.drops_loss, &mut self.bytes_dropped_loss),
            DropCause::BufferOverflow => (&mut self.drops_buffer, &mut self.bytes_dropped_buffer),
            DropCause::Policer => (&mut self.drops_policer, &mut self.bytes_dropped_policer),
            DropCause::Aqm => (&mut self.drops_aqm, &mut self.bytes_dropped_aqm),
        };
        *packets += 1;
        *bytes += u64::from(len);
    }
}

fn is_zero(n: &u64) -> bool {
    *n == 0
}
