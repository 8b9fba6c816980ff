//! ccbench's data model: the types `result.json` is made of ([`results`], [`provenance`],
//! [`workloads`], [`expect`]), the per-run time series files and how to read them back
//! ([`series`]), the units results print in ([`units`]), and the why lines read from a result
//! ([`why`]). It runs nothing: running a spec and its command line are the `ccbench` crate's.
//!
//! What runs experiments (the `ccbench` library) writes through these types, and what reads
//! results (`ccbench-report`) reads through them and needs nothing else: analysis only ever
//! reads what experiments wrote.

pub mod expect;
pub mod path;
pub mod provenance;
pub mod results;
pub mod series;
pub mod serve;
pub mod units;
pub mod why;
pub mod workload;
pub mod workloads;

/// result.json's JSON Schema (draft 2020-12), derived from [`results::ExperimentResult`] and
/// the serde attributes of every type it holds, so that it cannot drift from what is written.
pub fn result_schema() -> schemars::Schema {
    schemars::schema_for!(results::ExperimentResult)
}
