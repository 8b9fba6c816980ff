//! Each workload's data half: its spec (what a run is asked), its result (what it wrote) and
//! what they say about themselves ([`Spec`], [`RunOutcome`], [`Headline`]); the algorithm a
//! flow runs ([`Algorithm`]), the one record of a sending flow ([`SenderRecord`]), what limited
//! it ([`LimitedBy`]) and the samples taken of it ([`SeriesSink`]). Running a workload is
//! ccbench-workload's (its runtime half, which re-exports all of this at its old paths); the
//! registry of workloads, [`workloads!`](crate::workloads), is here, so that what reads
//! results needs nothing that runs them.

mod algorithm;
mod contender;
mod kind;
mod limited;
mod page_model;
mod samples;
mod sender;

pub use algorithm::{Algorithm, AlgorithmError, Family, Transport};
pub use contender::Cc;
pub use kind::{Figure, Headline, KeptReadBack, Over, RunFigures, RunOutcome, SenderView, Spec, TimeSeries};
pub(crate) use limited::busy_cause;
pub use limited::{Account, Cause, LimitedBy, Limits, Mechanism};
pub use page_model::{PageModel, PageModelError};
pub use samples::{GoodputPoint, MemorySeries, NoSeries, QuicBbr, QuicBbrModel, QuicSample, SendStates, SeriesSink, SocketId};
pub use sender::{BbrEvent, SenderRecord, SocketBuffers};

use serde::{Deserialize, Serialize};

/// The registry of workloads, one line each: `module: Variant(its spec, its result)`, the
/// variant's name (snake case) being the `kind` that result.json and the remote protocol tag it
/// with, and `module` the name of both its halves' files: its data half here
/// (`model/src/workload/<module>.rs`, declared and re-exported from this list) and its runtime
/// half in ccbench-workload (`workload/src/<module>.rs`, declared there from this list too).
/// Everything else about a workload is asked of its own module ([`Spec`], [`RunOutcome`], and
/// in ccbench-workload `Workload`, `Remote` and `flags::FromFlags`). The crates that need a type
/// or a dispatch per workload expand this list with a macro of their own,
/// `ccbench_model::workloads!(their_macro)` (also reachable as `ccbench_workload::workloads!`):
/// `ccbench-model` generates `WorkloadSpec` and `WorkloadResult`, `ccbench` their running
/// (`run_workload.rs`), `WorkloadKind` and `WorkloadFlags` (`workload_flags.rs`), and
/// `ccbench-remote` the `TestRequest` serve takes (each spec's `Remote::Far`).
/// So a new workload is 3 files: its data half, its runtime half, and its line here; the
/// compiler asks for everything else (`scripts/new-workload` keeps that true).
#[macro_export]
macro_rules! workloads {
    ($callback:ident) => {
        $callback! {
            /// Bulk flows for a duration, or a fixed-size file when the amount is a byte count.
            bulk: Bulk($crate::workload::BulkSpec, $crate::workload::BulkResult),
            objects: Objects($crate::workload::ObjectsSpec, $crate::workload::ObjectsResult),
            page: Page($crate::workload::PageSpec, $crate::workload::PageResult),
            /// The page loaded by headless Chromium.
            browser: Browser($crate::workload::BrowserSpec, $crate::workload::BrowserResult),
        }
    };
}

/// Each workload's data half, `<module>.rs` beside this file, from the registry. (rustfmt does
/// not follow a module declared in a macro: `scripts/test` formats these files by name.)
macro_rules! data_halves {
    ($($(#[$doc:meta])* $module:ident: $variant:ident($spec:ty, $result:ty),)*) => {
        $(mod $module; pub use $module::*;)*
    };
}
workloads!(data_halves);

/// The `Spec` accessors every spec shares, read from its `timeout_s` and `sample_interval_us`
/// fields and, with `cc`, `set_algorithm` writing its `cc` field: one definition, expanded
/// inside each `impl Spec`. (A struct embedded with `#[serde(flatten)]` would keep the JSON too,
/// but would change every literal that builds a spec, in four crates.)
macro_rules! spec_common {
    () => {
        fn timeout_s(&self) -> f64 {
            self.timeout_s
        }
        fn sample_interval_us(&self) -> u64 {
            self.sample_interval_us
        }
    };
    (cc) => {
        $crate::workload::spec_common!();
        fn set_algorithm(&mut self, cc: &$crate::workload::Algorithm) {
            self.cc = cc.clone();
        }
    };
}
pub(crate) use spec_common;

/// A poisoned lock only means another thread panicked; the data is still what we want to keep.
fn lock<T>(m: &std::sync::Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

/// Which way the data flows, seen from the client.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Direction {
    /// Server sends, client receives (the common case: fetching a file).
    Download,
    /// Client sends, server receives (object PUTs, backups).
    Upload,
}

/// The end of the path a socket lives on.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
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
