//! `runs.csv`: one row per run, with every parameter and every metric, so that a result set
//! loads in one line (`pandas.read_csv("runs.csv")`, `polars.read_csv`, duckdb's
//! `read_csv_auto`). Tidy: one observation (a run) per row, one variable per column.
//!
//! Columns, in this order:
//! - `condition` (only for a preset or a set of results that has one; `compare` writes `arm`
//!   and `input` here instead), then the run's own
//!   fields (`index`, `round`, `cc`, `status`, `error`, `started_at`, `path_seed`,
//!   `host_cpu_steal_fraction`, `suspect` joined with "; "), and for bulk, file, objects and
//!   page runs `transport` (`tcp`, `quic`, or `tcp+quic` for a mix of both), `cc_read_back`
//!   and `cc_receiver` (each flow's or connection's sending and receiving end as read back,
//!   space-separated; `-` where the receiver is kernel TCP and not read, or a TCP
//!   connection's sender was never seen);
//! - every field of the run's `metrics` by its JSON name (`score`, `goodput_bps`, …;
//!   per-algorithm shares of a mix as `shares.<cc>`; `jain_per_second`, a time series, is
//!   only in result.json);
//! - the experiment's parameters by their JSON path (`params.path.down.delay_ns`,
//!   `params.workload.kind`, …), the same on every row of one experiment;
//! - the run's series files (`series.tcp`, …), relative to the CSV's directory.
//!
//! Nested objects become dotted names; lists of scalars are joined with ";"; lists longer
//! than [`MAX_LIST`] (a trace's delivery opportunities, a page's object sizes) appear as their
//! length in `<name>.len`. An empty cell means the value is absent or unknown.

use std::path::Path;

use anyhow::Context;
use serde_json::{Map, Value};

use crate::results::{ExperimentResult, RunRecord};

/// The file `run`, `compare`, a preset and a sweep write: one row per run.
pub const RUNS_FILE: &str = "runs.csv";

/// Longest list written out in full; longer ones are written as their length.
pub(crate) const MAX_LIST: usize = 32;

/// One experiment's runs, under an optional condition name, with the directory of its
/// result.json relative to the CSV's (for the series file paths).
pub struct Experiment<'a> {
    /// The condition's (or cell's) name, written in a first column; none for one experiment.
    pub condition: Option<&'a str>,
    /// The directory of its result.json, relative to the CSV's.
    pub dir: &'a str,
    /// The experiment.
    pub result: &'a ExperimentResult,
}

fn flatten(prefix: &str, v: &Value, out: &mut Vec<(String, String)>) {
    let key = |k: &str| if prefix.is_empty() { k.to_string() } else { format!("{prefix}.{k}") };
    match v {
        Value::Object(m) => {
            for (k, v) in m {
                flatten(&key(k), v, out);
            }
        }
        Value::Array(items) if items.len() > MAX_LIST || items.iter().any(|i| i.is_object() || i.is_array()) => {
            out.push((key("len"), items.len().to_string()));
        }
        Value::Array(items) => out.push((prefix.to_string(), items.iter().map(scalar).collect::<Vec<_>>().join(";"))),
        v => out.push((prefix.to_string(), scalar(v))),
    }
}

fn scalar(v: &Value) -> String {
    match v {
        Value::Null => String::new(),
        Value::String(s) => s.clone(),
        v => v.to_string(),
    }
}

fn run_columns(e: &Experiment, run: &RunRecord, params: &[(String, String)]) -> anyhow::Result<Vec<(String, String)>> {
    let mut cols = Vec::new();
    if let Some(c) = e.condition {
        cols.push(("condition".to_string(), c.to_string()));
    }
    cols.push(("index".into(), run.index.to_string()));
    cols.push(("round".into(), run.round.to_string()));
    cols.push(("cc".into(), run.cc.to_string()));
    cols.push(("status".into(), scalar(&serde_json::to_value(run.status)?)));
    cols.push(("error".into(), run.error.clone().unwrap_or_default()));
    cols.push(("started_at".into(), run.started_at.clone()));
    cols.push(("path_seed".into(), run.path_seed.to_string()));
    cols.push(("host_cpu_steal_fraction".into(), run.host_cpu_steal_fraction.map(|f| f.to_string()).unwrap_or_default()));
    cols.push(("suspect".into(), run.suspect.join("; ")));
    // The transports the run's flows used and what each end really ran (issue 8).
    let senders = run.workload.as_ref().map(|w| w.senders()).unwrap_or_default();
    let ends: Vec<(&str, &str, &str)> = senders.iter().map(|s| (s.transport.as_str(), s.cc_read_back.unwrap_or("-"), s.cc_receiver.unwrap_or("-"))).collect();
    if !ends.is_empty() {
        let mut transports: Vec<&str> = ends.iter().map(|e| e.0).collect();
        transports.dedup();
        cols.push(("transport".into(), transports.join("+")));
        cols.push(("cc_read_back".into(), ends.iter().map(|e| e.1).collect::<Vec<_>>().join(" ")));
        cols.push(("cc_receiver".into(), ends.iter().map(|e| e.2).collect::<Vec<_>>().join(" ")));
    }
    if let Some(m) = &run.metrics {
        let mut v = serde_json::to_value(m)?;
        // Jain's index per second is a time series (in result.json), not a figure of the run.
        v.as_object_mut().map(|o| o.remove("jain_per_second"));
        // A mix's shares become one column per algorithm.
        if let Some(shares) = v.as_object_mut().and_then(|o| o.remove("shares")) {
            for s in shares.as_array().into_iter().flatten() {
                if let (Some(cc), Some(share)) = (s["cc"].as_str(), s.get("share")) {
                    cols.push((format!("shares.{cc}"), scalar(share)));
                }
            }
        }
        flatten("", &v, &mut cols);
    }
    cols.extend(params.iter().cloned());
    if let Some(files) = &run.series {
        let v = serde_json::to_value(files)?;
        for (k, f) in v.as_object().into_iter().flat_map(Map::iter) {
            let rel = f.as_str().unwrap_or_default();
            let path = if e.dir.is_empty() || e.dir == "." { rel.to_string() } else { format!("{}/{rel}", e.dir) };
            cols.push((format!("series.{k}"), path));
        }
    }
    Ok(cols)
}

/// The CSV text of every run of every experiment: the union of their columns, in the order
/// first seen.
pub fn to_string(experiments: &[Experiment]) -> anyhow::Result<String> {
    to_string_with(experiments, &|_, _| Vec::new())
}

/// Leading columns of a run's row (`compare`'s `arm` and `input`), before all others.
pub type Lead<'a> = dyn Fn(&Experiment, &RunRecord) -> Vec<(String, String)> + 'a;

/// As [`to_string`], each row starting with the columns `lead` gives it.
pub fn to_string_with(experiments: &[Experiment], lead: &Lead) -> anyhow::Result<String> {
    let mut header: Vec<String> = Vec::new();
    let mut rows: Vec<Vec<(String, String)>> = Vec::new();
    for e in experiments {
        let mut params = Vec::new();
        flatten("params", &serde_json::to_value(&e.result.params)?, &mut params);
        for run in &e.result.runs {
            let mut cols = lead(e, run);
            cols.extend(run_columns(e, run, &params)?);
            for (k, _) in &cols {
                if !header.contains(k) {
                    header.push(k.clone());
                }
            }
            rows.push(cols);
        }
    }
    let mut w = csv::Writer::from_writer(Vec::new());
    // Every cell through the one filter for text from elsewhere (a server's words reach a
    // run's error and read-backs): no escape sequence, no CR or LF inside a cell, whatever a
    // spreadsheet or a terminal makes of quoted ones.
    let cell = |v: &str| ccbench_remote::screen::escape_hidden(v);
    w.write_record(header.iter().map(|h| cell(h)))?;
    for row in rows {
        w.write_record(header.iter().map(|h| cell(row.iter().find(|(k, _)| k == h).map_or("", |(_, v)| v.as_str()))))?;
    }
    Ok(String::from_utf8(w.into_inner().map_err(|e| anyhow::anyhow!("{e}"))?)?)
}

/// Writes `dir/runs.csv`.
pub fn write(dir: &Path, experiments: &[Experiment]) -> anyhow::Result<()> {
    write_with(dir, experiments, &|_, _| Vec::new())
}

/// Writes `dir/runs.csv` as [`to_string_with`].
pub fn write_with(dir: &Path, experiments: &[Experiment], lead: &Lead) -> anyhow::Result<()> {
    let file = dir.join(RUNS_FILE);
    std::fs::write(&file, to_string_with(experiments, lead)?).with_context(|| format!("writing {}", file.display()))
}
