//! ccbench as a library: the experiment (interleaved runs over an emulated path), the analysis
//! of its runs (metrics, summaries, verdicts), the result types, and one exporter per output
//! format. The `ccbench` binary only parses the command line into a [`experiment::Plan`] and
//! hands it here.

pub mod analysis;
pub mod compare;
pub mod describe;
pub mod error;
pub mod expect;
pub mod experiment;
pub mod export;
pub mod limits;
pub mod provenance;
pub mod results;
pub mod series;
pub mod units;
pub mod workloads;
