//! Conformance suites judged on a controller's own state trace.
//!
//! A suite ([`bbr::SUITE`]) is a list of [`Case`]s: each names the specification section it
//! checks, the path and workload that exercise it, and [`Assertion`]s over the [`Trace`] of the
//! controller's state (mode, ProbeBW phase, gains, bandwidth estimate, cwnd) sampled while it
//! ran. An assertion gives each run a figure and pass / fail / not observable with its evidence
//! ([`RunCheck`]); over runs the figures are judged with `--expect`'s exact order-statistic
//! rules ([`over_runs`]). What a stack does not show is *not observable*, never a pass.
//!
//! Pieces, one job each:
//! * [`trace`] — the state series of one run, stack-neutral;
//! * [`assertion`] — the vocabulary, judged per run;
//! * [`verdict`] — a case's assertion over runs: pass / fail / undecided / not observable;
//! * [`bbr`] — draft-ietf-ccwg-bbr's cases;
//! * [`qlog`] — a trace written as qlog (JSON-SEQ), for qvis and other qlog tools.
//!
//! Pure: nothing here runs a path or reads a clock, so the suite is tested on the virtual-clock
//! simulator of `ccbench-quic-cc` (tests/broken.rs).

pub mod assertion;
pub mod bbr;
pub mod qlog;
pub mod trace;
pub mod verdict;

pub use assertion::{Assertion, Outcome, RunCheck};
pub use bbr::{Case, Runnable, Scenario};
pub use trace::{Mode, Phase, Point, Trace};
pub use verdict::{over_paths, over_runs, Cell, CellVerdict};
