//! Traffic between the client and server ends of a path, over kernel TCP or over QUIC (noq, in
//! this process; the `quic` module).
//!
//! The congestion-control algorithm is set on the side that *sends* the data and read back
//! before any data moves: with `TCP_CONGESTION` on a TCP socket, or as the controller of the
//! sending QUIC endpoint (read back from both ends' connections). So a result always says what
//! really ran (scenario 5's BBR-server/CUBIC-client mix-up cannot happen silently). Goodput is
//! counted where the data arrives. A sampler reads `TCP_INFO`/`TCP_CC_INFO` of every sending
//! TCP socket, and the controller's state of every sending QUIC connection, at a fixed interval.
//!
//! Every workload is a spec implementing [`Workload`], run with a [`RunContext`] (the two ends
//! of the path, the epoch, the stop flag, the [`MeasureHook`] and the [`SeriesSink`]):
//! - [`BulkSpec`]: N parallel connections pushing bytes one way for a duration or a byte count.
//! - [`ObjectsSpec`]: an object-store load (PUT or GET of fixed-size objects over persistent
//!   HTTP/1.1 connections, or over QUIC as concurrent streams on one connection), reporting
//!   content throughput and request latency percentiles.
//! - [`PageSpec`]: a browser-like page load (HTML, then its objects) over HTTP/1.1 with up to
//!   6 connections, over HTTP/2 on one, or over QUIC as a stream per resource on one
//!   connection, reporting TTFB, HTML and page load times.
//! - [`BrowserSpec`]: the same page loaded by headless Chromium in the client's namespace
//!   (HTTP/1.1, or HTTP/2 over TLS), reporting the browser's own Navigation Timing and LCP;
//!   over a real path through a loopback relay that adds serve's token (`relay`).
//!
//! Time series (every `TCP_INFO` sample, every goodput point of a bulk flow) go to the run's
//! [`SeriesSink`] as they are taken; results keep only bounded data, so memory stays flat
//! however long a run lasts.
//!
//! They share one socket factory (`net`: sockets made inside a namespace with the algorithm set,
//! and read back on the sending socket), one sampler (`sampler`) and, for the HTTP workloads,
//! one harness (`harness`: the tokio runtime they create and shut down themselves, the server's
//! accept loop, and the race of the load against the deadline and the stop flag).

mod browser_remote;
mod cdp;
mod common;
mod far;
pub mod flags;
pub mod fuzzing;
mod harness;
pub mod http_end;
mod kind;
mod lane;
mod net;
mod quic;
mod relay;
mod sampler;
mod site;
mod tls;

pub use browser::BrowserFlags;
pub use browser_remote::SiteRequest;
pub use bulk::{
    assemble, elapsed_since, prepare_stream, run_end, BulkFlags, ByteBudget, EndClock, EndStream, FlowEnd, FlowMeta, Opens, QuicConnEnd, QuicEnd,
    QuicFarClient, QuicFarServer,
};
pub use far::{data_hello, hello_id, FarConnection, FarHttp, FarReport, DATA_HELLO_LEN, TOKEN_LEN};
pub use http_end::{HttpEnd, HttpEndEvents, HELLO_TIMEOUT, MAX_PENDING};
pub use kind::{FarEnd, FarRequest, FarSpec, HttpFar, HttpLoad, NearEnd, NearHttp, NearQuic, QuicLoad, Remote, ServeLimits};
pub use net::{client_socket, confirm_congestion, set_algorithm};
pub use objects::ObjectsFlags;
pub use page::{Http, PageFlags};
pub use quic::far::{FarQuic, QuicFarReport, QuicRequestServer, QuicRequests};
pub use quic::{has_quic_algorithm, quic_algorithm_names, quic_algorithms, test_bbr_defects, ReadBack, QUIC_STACK, TEST_BBR_DEFECTS_ENV};
pub use tls::{certificate_for, RunCertificate};

// The data half of every workload, at the paths it had when it lived here (issue 29: the data
// model is ccbench-model's, so that what reads results needs nothing that runs them), a new
// workload's too.
pub use ccbench_model::units::fmt_bytes;
pub use ccbench_model::workload::*;

/// The registry of workloads, at its old path (it lives with the data, in ccbench-model).
pub use ccbench_model::workloads;

/// Each workload's runtime half, `<module>.rs` beside this file, from the registry: its
/// `Workload`, `FromFlags` and `Remote`. (rustfmt does not follow a module declared in a
/// macro: `scripts/test` formats these files by name.)
macro_rules! runtime_halves {
    ($($(#[$doc:meta])* $module:ident: $variant:ident($spec:ty, $result:ty),)*) => {
        $(mod $module;)*
    };
}
workloads!(runtime_halves);

use ccbench_netns::Netns;
use std::net::Ipv4Addr;
use std::sync::atomic::AtomicBool;
use std::time::Instant;

/// A kind of traffic: its spec runs it between the two ends of a path.
pub trait Workload {
    type Result;
    /// Runs the workload in `ctx`. Returns early, with what finished and marked interrupted,
    /// when `ctx.stop` becomes true.
    fn run(&self, ctx: &RunContext<'_>) -> Result<Self::Result, WorkloadError>;
}

/// Where and how a workload runs.
#[derive(Clone, Copy)]
pub struct RunContext<'a> {
    /// The namespace of the client end.
    pub client: &'a Netns,
    /// The namespace of the server end, reachable from the client at `server_addr`.
    pub server: &'a Netns,
    pub server_addr: Ipv4Addr,
    /// Times in results and series are measured from this instant.
    pub epoch: Instant,
    /// Set (by Ctrl-C) to end the run early.
    pub stop: &'a AtomicBool,
    /// Told when the measured span opens and closes.
    pub hook: &'a dyn MeasureHook,
    /// Receives the run's time series as they are taken.
    pub series: &'a dyn SeriesSink,
    /// The run's recorded seed: QUIC BBR draws each connection's probe randomness from it, so
    /// connections differ and a run repeats.
    pub seed: u64,
}

impl<'a> RunContext<'a> {
    /// A context that measures nothing beyond the workload's own figures and keeps no series.
    pub fn new(client: &'a Netns, server: &'a Netns, server_addr: Ipv4Addr, epoch: Instant, stop: &'a AtomicBool) -> Self {
        RunContext { client, server, server_addr, epoch, stop, hook: &NoMeasureHook, series: &NoSeries, seed: 0 }
    }

    pub fn with_seed(self, seed: u64) -> Self {
        RunContext { seed, ..self }
    }

    pub fn with_hook(self, hook: &'a dyn MeasureHook) -> Self {
        RunContext { hook, ..self }
    }

    pub fn with_series(self, series: &'a dyn SeriesSink) -> Self {
        RunContext { series, ..self }
    }
}

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
