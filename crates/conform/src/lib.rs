//! Conformance suites judged on a controller's own state trace.
//!
//! A suite ([`Suite`]; every one is listed in [`SUITES`]: BBR's, [`bbr::BBR`], and CUBIC's,
//! [`cubic::CUBIC`]) is a list of [`Case`]s: each names the specification section it checks,
//! the [`Scenario`] (path and workload) that exercises it, and [`Assertion`]s over the
//! [`Trace`] of the controller's state (mode, ProbeBW phase, gains, bandwidth estimate, cwnd,
//! ssthresh) sampled while it ran. An assertion gives
//! each run a figure and pass / fail / not observable with its evidence ([`RunCheck`]); over runs
//! the figures are judged with `--expect`'s exact order-statistic rules ([`over_runs`]). What a
//! stack does not show is *not observable*, never a pass.
//!
//! Pieces, one job each:
//! * [`suite`] — what a suite is: [`Case`] and [`Suite`] (its name, specification, controllers,
//!   grid); the registry, [`SUITES`], is here;
//! * [`scenario`] — the paths and workloads cases run on, as `ccbench run` flags, shared by
//!   every suite;
//! * [`trace`] — the state series of one run, stack-neutral;
//! * [`assertion`] — the vocabulary, judged per run;
//! * [`verdict`] — a case's assertion over runs: pass / fail / undecided / not observable;
//! * [`bbr`] — draft-ietf-ccwg-bbr's cases, [`bbr::BBR`];
//! * [`cubic`] — RFC 9438's and RFC 9406's (HyStart++) cases, [`cubic::CUBIC`];
//! * [`qlog`] — a trace written as qlog (JSON-SEQ), for qvis and other qlog tools.
//!
//! A new suite is one file here (its cases and its `Suite`, as `bbr.rs`), its line in
//! [`SUITES`] and its variant of the binary's `ConformSuite` (`ccbench conform <name>`).
//!
//! Pure: nothing here runs a path or reads a clock, so the suite is tested on the virtual-clock
//! simulator of `ccbench-quic-cc` (tests/broken.rs).

pub mod assertion;
pub mod bbr;
pub mod cubic;
pub mod qlog;
pub mod scenario;
pub mod suite;
pub mod trace;
pub mod verdict;

pub use assertion::{Assertion, Outcome, RunCheck};
pub use scenario::{App, Scenario};
pub use suite::{Case, Grid, Runnable, Suite};
pub use trace::{Mode, Phase, Point, Trace};
pub use verdict::{over_paths, over_runs, Cell, CellVerdict};

/// Every suite, one line each: `ccbench conform <name>` for each (the binary's `ConformSuite`).
pub const SUITES: &[&Suite] = &[&bbr::BBR, &cubic::CUBIC];
