//! Exporters: one module per output format, each rendering the one [`ExperimentResult`]
//! (the record of truth) and nothing else, in the manner of hyperfine's `export/`.
//!
//! - [`text`]: the ten-second terminal summary, and the table across a preset's conditions;
//! - [`json`]: `result.json` (schema `ccbench.result.v3`) and a preset's `preset.json`;
//! - [`junit`]: the `--expect` judgements as JUnit XML (`--junit FILE`);
//! - [`csv`]: `runs.csv`, one row per run with every parameter and metric (tidy data);
//! - [`why`]: the `why` lines under the verdict (what held each algorithm back);
//!
//! `report.html` (and the page across a preset's conditions) is its own crate,
//! `ccbench-report`, which reads only what these write.
//!
//! [`ExperimentResult`]: crate::results::ExperimentResult

pub mod csv;
pub mod json;
pub mod junit;
pub mod text;
pub mod why;
