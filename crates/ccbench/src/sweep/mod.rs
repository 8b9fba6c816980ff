//! `ccbench sweep`, `ccbench status` and `ccbench merge`: a grid of experiments, the cartesian
//! product of a spec's axes, each cell an experiment of its own in `OUT/cells/<id>/`.
//!
//! - [`grid`]: the spec, its cells and their ids, the spec's hash, shards;
//! - [`queue`]: the work queue in OUT that any number of tasks share (claims, leases);
//! - [`store`]: the plan's and the cells' records, and the index across cells;
//! - [`runner`]: one task's work (`sweep`); [`status`] and [`merge`] read what the tasks left.

pub mod grid;
mod merge;
mod owner;
pub mod queue;
mod runner;
mod status;
pub mod store;

use std::path::PathBuf;

use clap::Args;

use crate::cli::RunOpts;
pub use grid::Shard;
pub use merge::merge;
pub use runner::run;
pub use status::status;

#[derive(Args, Debug)]
pub struct SweepArgs {
    /// The sweep's spec: a TOML file with [defaults] (run flags without dashes, as in a preset)
    /// and [axes] (each key a run flag, each value a list; the grid is their product).
    pub spec: PathBuf,
    /// Flags given here go over every cell (an axis's flag cannot be given).
    #[command(flatten)]
    pub opts: RunOpts,
    /// Directory for results (default: ./results/<time>-<spec name>), on a file system every
    /// task's node mounts. Any number of tasks may run into the same OUT at once: each takes the
    /// next cell nobody holds. Run again with the same OUT to resume: finished cells are skipped.
    #[arg(long)]
    pub out: Option<PathBuf>,
    /// Cells run at once by this task.
    #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u32).range(1..=64))]
    pub parallel: u32,
    /// Take only shard I of N's cells (0-based: 0/4 … 3/4): the cells, sorted by id, at
    /// positions I, I+N, I+2N, …. Without it a task takes any cell (the usual way: tasks then
    /// balance themselves, and any of them may be resubmitted).
    #[arg(long, value_name = "I/N")]
    pub shard: Option<Shard>,
    /// Accepted from manifests written for fixed shards; has no effect (every task takes cells
    /// from the shared queue).
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u32).range(1..=100_000), hide = true)]
    pub shards: Option<u32>,
    /// Attempts after the first for a cell that fails, before it is marked failed.
    #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u32).range(0..=20))]
    pub retries: u32,
    /// Run cells marked failed again (they are skipped otherwise).
    #[arg(long)]
    pub retry_failed: bool,
    /// This task's name in the queue's claims, `ccbench status` and the cells' logs (default:
    /// the Slurm job and task, or the Kubernetes index, with host and PID). Give it explicitly
    /// where sudo clears the scheduler's variables.
    #[arg(long, value_name = "NAME")]
    pub worker: Option<String>,
    /// Seconds a claim on a cell stands without renewal (renewed every fifth of it); a lapsed
    /// claim is taken over by another task. For tests and slow file systems.
    #[arg(long, value_name = "SECS", hide = true, value_parser = clap::value_parser!(u32).range(1..=86_400))]
    pub lease_secs: Option<u32>,
    /// Plan every cell and list them (this shard's, if sharded), then stop; runs nothing.
    #[arg(long)]
    pub dry_run: bool,
}

#[derive(Args, Debug)]
pub struct MergeArgs {
    /// A sweep's OUT, or shard directories (OUT/shard-I-of-N, from older ccbench), or a
    /// directory holding them.
    #[arg(required = true)]
    pub dirs: Vec<PathBuf>,
    /// Directory for the merged result set: new, empty, or an earlier merge's, which is
    /// replaced.
    #[arg(long)]
    pub out: PathBuf,
    /// Merge what has finished even if cells are missing (they are listed as pending).
    #[arg(long)]
    pub partial: bool,
}

#[derive(Args, Debug)]
pub struct StatusArgs {
    /// The sweep's OUT.
    pub out: PathBuf,
    /// Print the status as JSON.
    #[arg(long)]
    pub json: bool,
}
