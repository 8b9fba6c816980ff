//! Traffic between the client and server ends of a path, over kernel TCP.
//!
//! The congestion-control algorithm is set with `TCP_CONGESTION` on the socket that *sends*
//! the data and read back from it before any data moves, so a result always says what really
//! ran (scenario 5's BBR-server/CUBIC-client mix-up cannot happen silently). Goodput is counted
//! where the data arrives. A sampler reads `TCP_INFO`/`TCP_CC_INFO` of every sending socket at
//! a fixed interval.
//!
//! Workloads:
//! - [`run_bulk`]: N parallel connections pushing bytes one way for a duration or a byte count.
//! - [`run_objects`]: an object-store load (PUT or GET of fixed-size objects over persistent
//!   HTTP/1.1 connections), reporting content throughput and request latency percentiles.
//! - [`run_page`]: a browser-like page load (HTML, then its objects) over HTTP/1.1 with up to
//!   6 connections or over HTTP/2 on one, reporting TTFB, HTML and page load times.
//!
//! The HTTP workloads use hyper on a tokio runtime they create and shut down themselves.

mod bulk;
mod common;
mod objects;
mod page;
mod series;

pub use bulk::{run_bulk, run_bulk_measured, Amount, BulkResult, BulkSpec, FlowResult, GoodputPoint, MixFlow};
pub use objects::{run_objects, run_objects_measured, ObjectMethod, ObjectsConnection, ObjectsResult, ObjectsSpec, RequestRecord};
pub use page::{run_page, run_page_measured, PageConnection, PageModel, PageModelError, PageProtocol, PageResult, PageSpec, ResourceTiming};
pub use series::{MemorySeries, NoSeries, SeriesSink, SocketId};

use serde::{Deserialize, Serialize};
use std::time::Instant;

/// Told the instants a workload's measured span opens and closes, as they happen, so the path
/// can count its own figures (drops, queue delay, utilization) over exactly the same span as
/// the workload's goodput. `open` and `close` are called within milliseconds of the instants
/// they name; `extend` vouches, while the end is not yet known, that the span reaches `at`.
pub trait MeasureHook: Sync {
    fn open(&self, at: Instant);
    fn extend(&self, at: Instant);
    fn close(&self, at: Instant);
}

/// For callers that measure nothing beyond the workload's own figures.
pub struct NoMeasureHook;

impl MeasureHook for NoMeasureHook {
    fn open(&self, _: Instant) {}
    fn extend(&self, _: Instant) {}
    fn close(&self, _: Instant) {}
}

/// Which way the data flows, seen from the client.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Direction {
    /// Server sends, client receives (the common case: fetching a file).
    Download,
    /// Client sends, server receives (object PUTs, backups).
    Upload,
}

/// The end of the path a socket lives on.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Side {
    Client,
    Server,
}

impl Direction {
    pub fn sender(self) -> Side {
        match self {
            Direction::Download => Side::Server,
            Direction::Upload => Side::Client,
        }
    }
}

#[derive(Debug, thiserror::Error)]
pub enum WorkloadError {
    #[error("congestion control {cc:?} cannot be set on the {side:?} socket: {source}")]
    Congestion { cc: String, side: Side, source: std::io::Error },
    #[error("asked for {requested:?} but the sending socket reports {actual:?}")]
    CongestionMismatch { requested: String, actual: String },
    #[error("connection setup failed: {0}")]
    Setup(String),
    #[error(transparent)]
    Netns(#[from] ccbench_netns::NetnsError),
    #[error(transparent)]
    Io(#[from] std::io::Error),
}
