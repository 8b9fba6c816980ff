//! ccbench's report: `report.html` beside `result.json`, and the page across a preset's
//! conditions. One self-contained file each, inline SVG and CSS, no script and no fetches, so
//! it opens anywhere, offline.
//!
//! The report only reads what an experiment wrote (Pantheon's split of analysis from
//! experiments): [`read_result`] reads a results directory's `result.json`,
//! [`ReportData::read`] its runs' series files, and [`render`] draws the page from that data
//! alone, reading nothing. It depends on the data model (`ccbench-model`), not on what
//! runs experiments.
//!
//! The experiment's report shows
//! - every run over time (goodput, sender RTT, cwnd, queueing delay): each run a faint line,
//!   the run with the median score of each algorithm bold, and BBR's state (from `tcp.csv.gz`)
//!   as coloured bands under the RTT and cwnd plots, one row per BBR algorithm;
//! - distributions across runs: each algorithm's score per run with the ratio's CI from
//!   `comparisons` (or, for flows sharing the bottleneck, each algorithm's share per run), and
//!   CDFs of the sender's RTT samples and of the queueing delay;
//! - throughput against delay, one point per run and a 1-σ ellipse per algorithm, the delay
//!   axis reversed (Pantheon's figure).
//!
//! `ccbench conform`'s page ([`render_conform`]) is the conformance matrix, from a
//! [`ConformPage`] the binary fills in (plain text: the report does not know the suites).
//!
//! - [`data`]: what is drawn; [`load`]: reading it; [`render`](mod@render): drawing it;
//!   [`svg`]: the plotting primitives.

pub mod data;
pub mod load;
pub mod render;
pub mod svg;

pub use data::ReportData;
pub use load::read_result;
pub use render::{render, render_conditions, render_conform, ConformPage, MatrixCase, MatrixCell, MatrixRow, MatrixVerdict};
