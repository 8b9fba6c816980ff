//! A deterministic, sans-IO model of one direction of a network path.
//!
//! Every packet goes through
//!
//! ```text
//! loss -> policer -> buffer / AQM -> rate server -> delay (+ jitter, + reordering) -> aggregation -> delivered
//! ```
//!
//! * **Loss** ([`LossModel`]): Bernoulli or Gilbert–Elliott, decided per
//!   arriving packet. A lost packet never takes tokens or buffer space.
//! * **Policer** ([`Policer`], optional): a token bucket that starts full and
//!   refills continuously (exact integer arithmetic); a packet finding fewer
//!   tokens than its length is dropped ([`DropCause::Policer`]) and takes none.
//! * **Buffer / AQM** ([`Buffer`], [`Aqm`], one file per discipline in [`aqm`]): drop-tail by
//!   default. [`Aqm::Codel`] (RFC 8289) judges each packet when it leaves the buffer to start
//!   serialization (sojourn = service start − arrival); [`Aqm::Pie`] (RFC 8033) drops at
//!   arrival with a probability updated every 15 ms; [`Aqm::FqCodel`] (RFC 8290) keeps a queue
//!   per flow ([`Link::enqueue_in_flow`], [`flow`], reading headers through [`wire`]) with CoDel in each. The buffer limit is
//!   enforced at arrival, drop-tail except under FQ-CoDel, which drops from its fattest queue.
//!   Drops decided after the arrival happen while the link replays its timeline, so they are
//!   handed back through [`Link::take_dropped`].
//! * **Rate server**: constant ([`Rate`]), trace-driven ([`TraceRate`],
//!   Mahimahi format: 1500-byte delivery opportunities at millisecond
//!   timestamps, looping), and changed over time by
//!   [`DirectionConfig::schedule`]. A rate change applies to packets that
//!   start service at or after it.
//! * **Delay** (`delay_ns`, scheduled changes) **+ jitter** ([`Jitter`]).
//!   Delivery is FIFO: a packet is never delivered before its predecessor,
//!   even when the delay drops or jitter varies, unless the jitter is
//!   configured to reorder, in which case packets leave in order of their
//!   own delivery times.
//! * **Aggregation** ([`DirectionConfig::aggregate_ns`], optional): packets are held and
//!   released in bursts at multiples of a period, as Wi-Fi and cellular links release ACKs
//!   (draft-ietf-ccwg-bbr §5.5.9's "ACK aggregation").
//! * **Reordering** ([`Reorder`]): a share of packets held back by a displacement (a time, or
//!   a number of packets' serialization times) after their delay, so later packets overtake
//!   them; through the same time-ordered delay line as reordering jitter. None is lost.
//!
//! Before any of that, the **entry** ([`entry`]) records the gap between arrivals and the
//! bursts of back-to-back packets they form, so a sender's pacing can be seen from the link.
//!
//! The model owns no sockets, threads or clocks. The caller passes the
//! current time (a [`time::Instant`], nanoseconds since an epoch of its
//! choosing on any monotone clock) into every call and asks
//! [`Link::next_event`] when to come back. Spans (delays, intervals, queueing
//! delay) are [`time::Duration`]s. Keeping I/O and time out
//! of the model is what makes it testable with a virtual clock, reproducible
//! from a seed, and independent of how promptly the host scheduler wakes the
//! driving loop: all departure times are derived from *arrival* times and the
//! configuration, never from when [`Link::dequeue`] happens to be called.
//!
//! Scheduled changes and trace timestamps live on that same clock, with the
//! trace starting at time 0: the emulator passes time since path start, so
//! `at_ns` and the trace are relative to path start.
//!
//! Randomness comes from the seed given to [`Link::new`]: the loss model and
//! the jitter draw from separate streams, so enabling jitter does not change
//! which packets are lost (reordering, PIE and DualPI2 have streams of their own too).
//!
//! A typical driver (e.g. a TUN shell) calls [`Link::enqueue`] for every
//! packet it reads, sleeps until [`Link::next_event`], and then calls
//! [`Link::dequeue`] until it returns `None`, then [`Link::take_dropped`]
//! until it returns `None` to reclaim the buffers of AQM-dropped packets.

pub mod aqm;
mod buffer;
mod config;
mod delay_line;
pub mod ecn;
pub mod entry;
mod error;
pub mod flow;
mod histogram;
mod jitter;
mod link;
mod loss;
mod outcome;
mod pacer;
mod policer;
mod refused;
mod reorder;
pub mod text;
pub mod time;
pub mod trace;
pub mod wire;

pub use aqm::codel::{CODEL_DEFAULT_INTERVAL, CODEL_DEFAULT_TARGET};
pub use aqm::{Aqm, Codel, DualPi2, FqCodel, Pie};
pub use config::{Buffer, DirectionConfig, Jitter, LinkConfigError, LossModel, Policer, Rate, Reorder, ScheduledChange};
pub use ecn::{Ecn, EcnFault};
pub use entry::{BurstHistogram, EntryMeter, EntryStats};
pub use histogram::DelayHistogram;
pub use link::Link;
pub use outcome::{Delivery, DropCause, Dropped, LinkStats};
pub use text::Refused;
pub use trace::{TraceError, TraceRate};
