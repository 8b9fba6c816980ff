//! ccbench as a library: the experiment (interleaved runs over an emulated path), the analysis
//! of its runs (metrics, summaries, verdicts), the result types, and one exporter per output
//! format. The `ccbench` binary only parses the command line into a [`experiment::Plan`] and
//! hands it here.

pub mod analysis;
pub mod compare;
pub mod describe;
pub mod error;
pub mod experiment;
pub mod export;
pub mod judge;
pub mod limits;
pub mod schema;
pub mod workloads;

/// The record of an experiment (its types, result.json's schema, the series files' format) is
/// its own crate, so that what reads results (the report) needs nothing of what runs them.
pub use ccbench_record::{expect, provenance, results, series, units};
