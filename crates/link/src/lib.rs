//! A deterministic, sans-IO model of one direction of a network path.
//!
//! Every packet goes through
//!
//! ```text
//! loss model -> drop-tail FIFO (buffer) -> rate server (serialization) -> propagation delay -> delivered
//! ```
//!
//! The model owns no sockets, threads or clocks. The caller passes the
//! current time (`Nanos`, nanoseconds on any monotone clock) into every call
//! and asks [`Link::next_event`] when to come back. Keeping I/O and time out
//! of the model is what makes it testable with a virtual clock, reproducible
//! from a seed, and independent of how promptly the host scheduler wakes the
//! driving loop: all departure times are derived from *arrival* times and the
//! configuration, never from when [`Link::dequeue`] happens to be called.
//!
//! A typical driver (e.g. a TUN shell) calls [`Link::enqueue`] for every
//! packet it reads, sleeps until [`Link::next_event`], and then calls
//! [`Link::dequeue`] until it returns `None`.

mod config;
mod histogram;
mod link;
mod loss;

pub use config::{Buffer, DirectionConfig, LinkConfigError, LossModel, Rate};
pub use histogram::DelayHistogram;
pub use link::{Delivery, DropCause, Dropped, Link, LinkStats};

/// Time in nanoseconds on the caller's (monotone) clock.
pub type Nanos = u64;
