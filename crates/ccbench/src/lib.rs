//! ccbench as a library: run an experiment (interleaved runs over an emulated path or a real
//! one), analyse its runs, and write or compare its results. The `ccbench` binary parses the
//! command line into an [`experiment::Plan`] and hands it here; an embedder does the same
//! without the command line.
//!
//! # The public surface, and why each part is public
//!
//! - [`experiment`]: the [`Plan`](experiment::Plan) (algorithms, runs, path or remote,
//!   workload, expectations) and [`execute`](experiment::execute) /
//!   [`execute_interleaved`](experiment::execute_interleaved), which run it and return the
//!   [`ExperimentResult`](results::ExperimentResult); progress comes through an
//!   [`Observer`](experiment::Observer). This is what running ccbench means.
//! - [`results`], [`series`], [`provenance`], [`expect`], [`units`]: the record of an
//!   experiment (result.json's types, the `series/` files and their reader, `--expect`),
//!   re-exported from `ccbench-model` at the paths they had before it was its own crate, so
//!   that whoever reads a result needs only this crate; [`provenance`] also reads this host's
//!   facts and this build's git revision (`of_this_host`), which the data model does not.
//! - [`judge`]: `--expect` judged over the runs (contenders, path-relative thresholds, per-run
//!   figures, pass / fail / undecided); public because the binary checks expectations against
//!   the plan as it reads the flags, before anything runs.
//! - [`analysis`]: the per-run metrics, per-algorithm summaries and verdicts, for whoever builds
//!   records by hand (the report's tests) or re-analyses them.
//! - [`compare`]: `ccbench compare`'s logic (load result files, check they are comparable, pool
//!   them into one verdict), public because the binary's `compare` and `run --twin` and the
//!   tests drive it.
//! - [`export`]: one writer per output format (terminal text, result.json, runs.csv, JUnit XML)
//!   and the file names they write, for the binary's commands and for embedders alike.
//! - [`run_workload`]: [`run`](run_workload::run), one workload's two ends on an emulated path
//!   without an experiment around it (`ccbench bench`), and the spec and result types.
//! - [`limits`]: what this host can emulate faithfully (its measured capacity, a path's
//!   warnings), which `doctor`, `bench` and `run` print before any run.
//! - [`state_trace`]: a run's sender series read back as the state trace ccbench-conform
//!   judges, public because the binary's `conform bbr` judges the same traces that `--expect`'s
//!   trace figures do (those are judged here, in the private `trace_expect`).
//! - [`schema`]: the JSON Schemas of result.json and compare.json, derived from the types, which
//!   CI checks against `docs/schema/`.
//!
//! Everything else is `pub(crate)` or private. The lints below keep it so: `unreachable_pub`
//! refuses a `pub` that nothing outside can reach (say `pub(crate)`), and `missing_docs`
//! refuses an undocumented public item, so that adding to the surface is a decision with a
//! sentence beside it. CI runs clippy with `-D warnings`.

#![warn(missing_docs, unreachable_pub)]

pub mod analysis;
pub mod compare;
mod describe;
pub mod experiment;
pub mod export;
pub mod judge;
pub mod limits;
pub mod provenance;
pub mod run_workload;
pub mod schema;
pub mod state_trace;
mod trace_expect;

/// The data model (an experiment's types, result.json's schema, the series files' format) is
/// its own crate, so that what reads results (the report) needs nothing of what runs them.
pub use ccbench_model::{expect, results, series, units};
