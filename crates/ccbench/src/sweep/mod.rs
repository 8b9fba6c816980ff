//! `ccbench sweep`, `ccbench status` and `ccbench merge`: a grid of experiments, the cartesian
//! product of a spec's axes, each cell an experiment of its own in `OUT/cells/<id>/`.
//!
//! - [`grid`]: the spec, its cells and their ids, the spec's hash, shards;
//! - [`queue`]: the work queue in OUT that any number of tasks share (claims, leases);
//! - [`store`]: the plan's and the cells' records, and the index across cells;
//! - [`runner`]: one task's work (`sweep`); [`status`] and [`merge`] read what the tasks left.

pub mod grid;
mod merge;
mod names;
mod owner;
pub mod queue;
mod runner;
mod status;
pub mod store;

pub use crate::cli::{MergeArgs, StatusArgs, SweepArgs};
pub use merge::merge;
pub use runner::run;
pub use status::status;
