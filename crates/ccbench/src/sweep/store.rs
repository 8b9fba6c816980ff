//! A sweep's files: the plan every task shares, each cell's record, and the index across
//! cells (`sweep.json`, `runs.csv`, `report.html`), rebuilt from what is on disk.

use std::collections::BTreeMap;
use std::path::Path;

use anyhow::Context;
use serde::{Deserialize, Serialize};
use serde_json::{json, Value};

use super::grid::{Cell, Shard};
use ccbench::export::csv::{self as csv_export, Experiment};
use ccbench::results::Status;

pub const SWEEP_FILE: &str = "sweep.json";
pub const CELL_FILE: &str = "cell.json";
pub const CELLS_DIR: &str = "cells";
/// The cell's own log: every attempt's lines, kept with its results.
pub const LOG_FILE: &str = "log";
pub const SCHEMA: &str = "ccbench.sweep.v1";
pub const CELL_SCHEMA: &str = "ccbench.sweep-cell.v1";
pub const VERSION: &str = env!("CARGO_PKG_VERSION");
pub const REVISION: &str = ccbench::provenance::GIT_REVISION;

/// What `sweep.json` says about the sweep as a whole (the same in every shard, but `shard`).
#[derive(Serialize, Deserialize, Clone, Debug)]
pub struct SweepMeta {
    pub schema: String,
    pub description: String,
    pub spec: SpecRecord,
    pub ccbench_version: String,
    pub git_revision: String,
    pub axes: Vec<AxisRecord>,
    /// Every cell of the spec, sorted by id (a shard's directory holds only some).
    pub grid: Vec<GridCell>,
    pub shard: Option<Shard>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub merged_from: Vec<String>,
}

#[derive(Serialize, Deserialize, Clone, Debug)]
pub struct SpecRecord {
    pub file: String,
    pub text: String,
    /// The command that ran the sweep (its flags go over every cell).
    pub command_line: Vec<String>,
    /// See [`spec_hash`].
    pub hash: String,
}

#[derive(Serialize, Deserialize, Clone, Debug)]
pub struct AxisRecord {
    pub name: String,
    pub values: Vec<String>,
}

#[derive(Serialize, Deserialize, Clone, Debug, PartialEq)]
pub struct GridCell {
    pub id: String,
    pub label: String,
    pub parameters: BTreeMap<String, String>,
}

#[derive(Serialize, Deserialize)]
pub struct SweepIndex {
    #[serde(flatten)]
    pub meta: SweepMeta,
    pub status: String,
    pub cells: Vec<Value>,
}

/// `OUT/cells/<id>/cell.json`, written when a cell's experiment ends.
#[derive(Serialize, Deserialize, Debug)]
pub struct CellRecord {
    pub schema: String,
    pub id: String,
    pub label: String,
    pub parameters: BTreeMap<String, String>,
    pub spec_hash: String,
    pub status: String,
    /// Its row of the table across cells: each algorithm's median, and the verdict.
    pub median: String,
    pub verdict: String,
    pub runs: usize,
    /// Runs flagged suspect (CPU stolen, emulator late or saturated; see each run's `suspect`).
    pub suspect_runs: usize,
    /// Attempts made (1 + retries used), where the last ran, and a failed cell's error.
    #[serde(default)]
    pub attempts: u32,
    #[serde(default)]
    pub host: String,
    #[serde(default)]
    pub worker: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
}

pub fn status_name(s: Status) -> String {
    match s {
        Status::Complete => "complete",
        Status::Interrupted => "interrupted",
        Status::Failed => "failed",
    }
    .to_string()
}

pub fn read_json(file: &Path) -> Option<Value> {
    serde_json::from_str(&std::fs::read_to_string(file).ok()?).ok()
}

pub fn read_index(dir: &Path) -> Result<SweepIndex, String> {
    let file = dir.join(SWEEP_FILE);
    let text = std::fs::read_to_string(&file).map_err(|e| format!("no readable {} ({e})", file.display()))?;
    serde_json::from_str(&text).map_err(|e| format!("{} is not a sweep's index ({e})", file.display()))
}

/// The cell's record if it finished complete under this spec: `cell.json` and `result.json`
/// both say so.
pub fn finished(cell_dir: &Path, hash: &str) -> Option<CellRecord> {
    let record: CellRecord = serde_json::from_value(read_json(&cell_dir.join(CELL_FILE))?).ok()?;
    let result = read_json(&cell_dir.join(ccbench::export::json::RESULT_FILE))?;
    (record.status == "complete" && record.spec_hash == hash && result["status"] == "complete").then_some(record)
}

/// Writes `file` whole or not at all: through a temporary name of this process's own (several
/// tasks may write the same index at once; the last rename wins, and no reader sees half).
pub fn write_atomic(file: &Path, text: impl AsRef<[u8]>) -> anyhow::Result<()> {
    let name = file.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
    let tmp = file.with_file_name(format!(".{name}.tmp-{}", super::names::unique_name()));
    std::fs::write(&tmp, text).with_context(|| format!("writing {}", tmp.display()))?;
    super::owner::give(&tmp);
    std::fs::rename(&tmp, file).with_context(|| format!("writing {}", file.display()))
}

/// The run columns an axis's column must not take (it is then `axis.<name>`).
const RUN_COLUMNS: [&str; 10] = ["cell", "index", "round", "cc", "status", "error", "started_at", "path_seed", "host_cpu_steal_fraction", "suspect"];

pub fn axis_column(axis: &str) -> String {
    if RUN_COLUMNS.contains(&axis) {
        format!("axis.{axis}")
    } else {
        axis.to_string()
    }
}

/// What [`write_index`] found: the table across cells, and each cell's result that could be read
/// (in `mine`'s order), for the exit status and `--junit`.
pub struct Index {
    pub table: String,
    pub results: Vec<(GridCell, ccbench::results::ExperimentResult)>,
}

/// Writes `dir/sweep.json` and `dir/runs.csv` from what is on disk under `dir/cells/` for the
/// cells `mine` (ids), and returns the table across them with the cells' results.
pub fn write_index(dir: &Path, meta: &SweepMeta, mine: &[&GridCell], interrupted: bool) -> anyhow::Result<Index> {
    let mut cells = Vec::new();
    let mut rows = Vec::new();
    let mut statuses = Vec::new();
    let axes: Vec<&str> = meta.axes.iter().map(|a| a.name.as_str()).collect();
    // Each complete cell's result, with the grid cell it came from and its directory.
    let mut results: Vec<(&GridCell, String, ccbench::results::ExperimentResult)> = Vec::new();
    for g in mine {
        let rel = format!("{CELLS_DIR}/{}", g.id);
        let cell_dir = dir.join(&rel);
        let record: Option<CellRecord> = read_json(&cell_dir.join(CELL_FILE)).and_then(|v| serde_json::from_value(v).ok());
        let Some(record) = record else {
            statuses.push("pending".to_string());
            cells.push(json!({ "id": g.id, "label": g.label, "parameters": g.parameters, "status": "pending", "dir": rel }));
            continue;
        };
        let result = read_json(&cell_dir.join(ccbench::export::json::RESULT_FILE)).unwrap_or(Value::Null);
        statuses.push(record.status.clone());
        let parsed = ccbench::results::ExperimentResult::deserialize(&result).ok();
        // A cell with expectations is marked pass, fail or undecided, in the table and sweep.json.
        let expect = parsed.as_ref().and_then(|r| ccbench_stats::expectation::overall(r.expectations.iter().map(|e| e.result))).map(|j| j.word());
        let verdict = match expect {
            Some(m) => format!("[expect: {m}] {}", record.verdict),
            None => record.verdict.clone(),
        };
        rows.push([g.label.clone(), record.median.clone(), verdict]);
        if let Some(r) = parsed {
            results.push((g, rel.clone(), r));
        }
        cells.push(json!({
            "id": g.id,
            "label": g.label,
            "parameters": g.parameters,
            "status": record.status,
            "dir": rel,
            "result": format!("{rel}/{}", ccbench::export::json::RESULT_FILE),
            "runs_csv": format!("{rel}/{}", ccbench::export::csv::RUNS_FILE),
            "report": format!("{rel}/report.html"),
            "runs": record.runs,
            "suspect_runs": record.suspect_runs,
            "summary": result["summary"],
            "comparisons": result["comparisons"],
            "rtt_comparisons": result["rtt_comparisons"],
            "expect": expect,
            "expectations": result["expectations"],
            "median": record.median,
            "verdict": record.verdict,
            "attempts": record.attempts,
            "error": record.error,
            "log": format!("{rel}/{LOG_FILE}"),
        }));
    }
    let status = if statuses.iter().all(|s| s == "complete") {
        "complete"
    } else if statuses.iter().any(|s| s == "failed") {
        "failed"
    } else if interrupted || statuses.iter().any(|s| s == "interrupted") {
        "interrupted"
    } else {
        "incomplete"
    };
    let index = SweepIndex { meta: meta.clone(), status: status.to_string(), cells };
    std::fs::create_dir_all(dir)?;
    write_atomic(&dir.join(SWEEP_FILE), &serde_json::to_string_pretty(&index)?)?;
    write_atomic(&dir.join(ccbench::export::csv::RUNS_FILE), runs_csv(&axes, &results)?)?;
    // The page across cells: each algorithm's headline against the cell, as a preset's.
    let page: Vec<(String, &ccbench::results::ExperimentResult)> = results.iter().map(|(g, _, r)| (g.label.clone(), r)).collect();
    write_atomic(&dir.join("report.html"), ccbench_report::render_conditions(&page))?;
    let table = ccbench::export::text::table("Across cells", "cell", &rows);
    Ok(Index { table, results: results.into_iter().map(|(g, _, r)| (g.clone(), r)).collect() })
}

/// The sweep's `runs.csv`: every cell's runs, each row led by the cell's id and its value on
/// each axis. An empty sweep still gets those leading columns as its header.
fn runs_csv(axes: &[&str], results: &[(&GridCell, String, ccbench::results::ExperimentResult)]) -> anyhow::Result<String> {
    if results.is_empty() {
        let mut w = csv::Writer::from_writer(Vec::new());
        w.write_record(std::iter::once("cell".to_string()).chain(axes.iter().map(|a| axis_column(a))))?;
        return Ok(String::from_utf8(w.into_inner().map_err(|e| anyhow::anyhow!("{e}"))?)?);
    }
    let experiments: Vec<Experiment> = results.iter().map(|(_, dir, result)| Experiment { condition: None, dir, result }).collect();
    // A cell's directory names it.
    let lead = |e: &Experiment, _: &ccbench::results::RunRecord| {
        let g = results.iter().find(|(_, dir, _)| dir == e.dir).map(|(g, _, _)| *g).expect("every experiment is a cell's");
        std::iter::once(("cell".to_string(), g.id.clone()))
            .chain(axes.iter().map(|a| (axis_column(a), g.parameters.get(*a).cloned().unwrap_or_default())))
            .collect()
    };
    csv_export::to_string_with(&experiments, &lead)
}

pub fn grid_cell(c: &Cell) -> GridCell {
    GridCell { id: c.id.clone(), label: c.label.clone(), parameters: c.parameters.iter().cloned().collect() }
}

/// The grid's cells in the spec's order (axes by name, each axis's values as listed).
pub fn grid_order(meta: &SweepMeta) -> Vec<usize> {
    let rank = |g: &GridCell| -> Vec<usize> {
        meta.axes.iter().map(|a| g.parameters.get(&a.name).and_then(|v| a.values.iter().position(|x| x == v)).unwrap_or(usize::MAX)).collect()
    };
    let mut order: Vec<usize> = (0..meta.grid.len()).collect();
    order.sort_by_key(|&i| rank(&meta.grid[i]));
    order
}

/// Copies a directory tree, hard-linking files where it can.
pub fn copy_tree(from: &Path, to: &Path) -> std::io::Result<()> {
    std::fs::create_dir_all(to)?;
    for entry in std::fs::read_dir(from)? {
        let entry = entry?;
        let target = to.join(entry.file_name());
        if entry.file_type()?.is_dir() {
            copy_tree(&entry.path(), &target)?;
        } else if std::fs::hard_link(entry.path(), &target).is_err() {
            std::fs::copy(entry.path(), &target)?;
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn axis_columns_do_not_take_a_runs_own() {
        assert_eq!(axis_column("loss"), "loss");
        assert_eq!(axis_column("cc"), "axis.cc");
    }
}
