//! `ccbench sweep` and `ccbench merge`: a grid of experiments, the cartesian product of a spec's
//! axes, each cell an interleaved experiment of its own in `OUT/cells/<id>/`.
//!
//! A spec is a preset whose conditions are a product: `[defaults]` as in a preset, and `[axes]`,
//! each key a run flag (without dashes) and each value a list. Every value is read through the
//! same layer and the same types as the flag ([`crate::presets::layer_from`]), a cell is its axis
//! values over the defaults, and the command line goes over the cell. Every cell is planned
//! before any runs.
//!
//! Cells have ids made of their axis values (`loss=1pct,rtt=40ms`), the same on every machine
//! and for any order of the spec's tables; the order of the cells by id decides the shards
//! (`--shard i/N`, 0-based: shard i runs the cells at positions i, i+N, i+2N, …). A cell is
//! finished when its `result.json` says complete; running the sweep again into the same
//! directory runs only the others, and refuses a directory made from another spec (its hash is
//! in `sweep.json`). `ccbench merge` puts shard directories together.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::str::FromStr;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Mutex;

use anyhow::Context;
use clap::Args;
use serde::{Deserialize, Serialize};
use serde_json::{json, Value};

use crate::cli::{Layer, RunOpts};
use crate::presets::{flags, layer_from, shown, Origin};
use crate::progress::{planned_runs, Bar};
use crate::values::Expected;
use ccbench::error::{precondition, require_root, UsageError};
use ccbench::experiment::{self, Plan};
use ccbench::export::csv::{self as csv_export, Experiment};
use ccbench::results::Status;

pub const SWEEP_FILE: &str = "sweep.json";
pub const CELL_FILE: &str = "cell.json";
pub const CELLS_DIR: &str = "cells";
const SCHEMA: &str = "ccbench.sweep.v1";
const CELL_SCHEMA: &str = "ccbench.sweep-cell.v1";
const VERSION: &str = env!("CARGO_PKG_VERSION");
const REVISION: &str = env!("CCBENCH_GIT_REV");

#[derive(Args, Debug)]
pub struct SweepArgs {
    /// The sweep's spec: a TOML file with [defaults] (run flags without dashes, as in a preset)
    /// and [axes] (each key a run flag, each value a list; the grid is their product).
    pub spec: PathBuf,
    /// Flags given here go over every cell (an axis's flag cannot be given).
    #[command(flatten)]
    pub opts: RunOpts,
    /// Directory for results (default: ./results/<time>-<spec name>). Run again with the same
    /// directory to resume: finished cells are skipped.
    #[arg(long)]
    pub out: Option<PathBuf>,
    /// Cells run at once on this machine.
    #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u32).range(1..=64))]
    pub parallel: u32,
    /// Run only shard I of N (0-based: 0/4 … 3/4): the cells, sorted by id, at positions I,
    /// I+N, I+2N, …; results go to OUT/shard-I-of-N/. Without it, JOB_COMPLETION_INDEX (a
    /// Kubernetes Indexed Job, with --shards N) or SLURM_ARRAY_TASK_ID and
    /// SLURM_ARRAY_TASK_COUNT (a Slurm array) pick the shard.
    #[arg(long, value_name = "I/N")]
    pub shard: Option<Shard>,
    /// The number of shards when JOB_COMPLETION_INDEX picks this one (the Job's completions).
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u32).range(1..=100_000))]
    pub shards: Option<u32>,
    /// Plan every cell and list them (this shard's, if sharded), then stop; runs nothing.
    #[arg(long)]
    pub dry_run: bool,
}

#[derive(Args, Debug)]
pub struct MergeArgs {
    /// Shard directories (OUT/shard-I-of-N), or a sweep's OUT holding them.
    #[arg(required = true)]
    pub dirs: Vec<PathBuf>,
    /// Directory for the merged result set (new or empty).
    #[arg(long)]
    pub out: PathBuf,
}

/// One shard of a sweep: `index` of `count`, 0-based.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Shard {
    pub index: u32,
    pub count: u32,
}

impl FromStr for Shard {
    type Err = Expected;
    fn from_str(s: &str) -> Result<Self, Expected> {
        let bad = || Expected("a shard I/N, 0-based, such as 0/4 (the first of four) … 3/4 (the last)".into());
        let (i, n) = s.split_once('/').ok_or_else(bad)?;
        let (index, count): (u32, u32) = (i.trim().parse().map_err(|_| bad())?, n.trim().parse().map_err(|_| bad())?);
        if count == 0 || index >= count {
            return Err(bad());
        }
        Ok(Shard { index, count })
    }
}

impl std::fmt::Display for Shard {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}/{}", self.index, self.count)
    }
}

impl Shard {
    /// The directory a shard writes under the sweep's OUT.
    pub fn dir_name(&self) -> String {
        format!("shard-{}-of-{}", self.index, self.count)
    }

    /// Whether the cell at `position` (in the order of the cells by id) is this shard's.
    pub fn takes(&self, position: usize) -> bool {
        position % self.count as usize == self.index as usize
    }
}

/// The shard this process runs: `--shard`, else the scheduler's environment (`env` reads a
/// variable): a Kubernetes Indexed Job's `JOB_COMPLETION_INDEX` with `--shards N`, or a Slurm
/// array's `SLURM_ARRAY_TASK_ID` (less `SLURM_ARRAY_TASK_MIN`, over `SLURM_ARRAY_TASK_STEP`) of
/// `SLURM_ARRAY_TASK_COUNT`. `None`: every cell.
pub fn detect_shard(shard: Option<Shard>, shards: Option<u32>, env: &dyn Fn(&str) -> Option<String>) -> Result<Option<Shard>, UsageError> {
    if let Some(s) = shard {
        if let Some(n) = shards.filter(|n| *n != s.count) {
            return Err(UsageError::new("--shards", n, format!("the N of --shard {s}, or no --shards")));
        }
        return Ok(Some(s));
    }
    let number = |var: &str| -> Result<Option<u32>, UsageError> {
        match env(var).map(|v| v.trim().to_string()).filter(|v| !v.is_empty()) {
            None => Ok(None),
            Some(v) => v.parse().map(Some).map_err(|_| UsageError::new(var, v, "a whole number (set by the scheduler)")),
        }
    };
    if let Some(index) = number("JOB_COMPLETION_INDEX")? {
        let Some(count) = shards else {
            return Err(precondition(
                "JOB_COMPLETION_INDEX is set (a Kubernetes Indexed Job) but --shards is not: give --shards N with the Job's completions, or --shard I/N",
            ));
        };
        if index >= count {
            return Err(UsageError::new("JOB_COMPLETION_INDEX", index, format!("an index below --shards {count} (0-based)")));
        }
        return Ok(Some(Shard { index, count }));
    }
    if let Some(id) = number("SLURM_ARRAY_TASK_ID")? {
        let Some(count) = number("SLURM_ARRAY_TASK_COUNT")? else {
            return Err(precondition("SLURM_ARRAY_TASK_ID is set but SLURM_ARRAY_TASK_COUNT is not: give --shard I/N"));
        };
        let (min, step) = (number("SLURM_ARRAY_TASK_MIN")?.unwrap_or(0), number("SLURM_ARRAY_TASK_STEP")?.unwrap_or(1).max(1));
        let index = id.checked_sub(min).map(|d| d / step).filter(|i| *i < count);
        let Some(index) = index else {
            return Err(UsageError::new(
                "SLURM_ARRAY_TASK_ID",
                id,
                format!("a task of an array of {count} from {min} in steps of {step} (use --array=0-{})", count.max(1) - 1),
            ));
        };
        if let Some(n) = shards.filter(|n| *n != count) {
            return Err(UsageError::new("--shards", n, format!("SLURM_ARRAY_TASK_COUNT ({count}), or no --shards")));
        }
        return Ok(Some(Shard { index, count }));
    }
    if let Some(n) = shards {
        return Err(UsageError::new("--shards", n, "--shards only with JOB_COMPLETION_INDEX set (a Kubernetes Indexed Job); elsewhere use --shard I/N"));
    }
    Ok(None)
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct SweepFile {
    #[serde(default)]
    description: String,
    note: Option<String>,
    #[serde(default)]
    defaults: toml::Table,
    #[serde(default)]
    axes: toml::Table,
}

/// A sweep's spec, every value checked.
#[derive(Debug)]
pub struct SweepSpec {
    pub file: String,
    pub text: String,
    pub description: String,
    pub note: Option<String>,
    pub defaults: RunOpts,
    /// By name.
    pub axes: Vec<Axis>,
}

#[derive(Debug)]
pub struct Axis {
    /// The run flag without dashes.
    pub name: String,
    /// In the spec's order.
    pub values: Vec<AxisValue>,
}

#[derive(Debug)]
pub struct AxisValue {
    /// As the flag would have been given.
    pub shown: String,
    /// Its part of a cell id.
    pub id: String,
    /// The value alone, as a layer.
    pub layer: RunOpts,
}

/// One cell of the grid: a value of each axis.
#[derive(Debug, Clone)]
pub struct Cell {
    pub id: String,
    /// `loss=1% rtt=40ms`, for people.
    pub label: String,
    /// Each axis's value, by axis name.
    pub parameters: Vec<(String, String)>,
    /// The axis values over the spec's defaults.
    pub opts: RunOpts,
}

/// 64-bit FNV-1a: a hash that is the same on every machine and in every version of Rust.
pub fn fnv1a(bytes: &[u8]) -> u64 {
    bytes.iter().fold(0xcbf2_9ce4_8422_2325, |h, b| (h ^ u64::from(*b)).wrapping_mul(0x0100_0000_01b3))
}

/// A value's part of a cell id: itself when it is made of letters, digits, `.`, `-` and `%`
/// (written `pct`); otherwise a slug of it and a hash of the value, so that ids stay unique.
pub fn id_part(value: &str) -> String {
    let plain = |c: char| c.is_ascii_alphanumeric() || c == '.' || c == '-';
    if !value.is_empty() && !value.contains("pct") && value.chars().all(|c| plain(c) || c == '%') {
        return value.replace('%', "pct");
    }
    let mut slug = String::new();
    for c in value.chars() {
        match c {
            '%' => slug.push_str("pct"),
            c if plain(c) => slug.push(c),
            _ if slug.ends_with('_') => {}
            _ => slug.push('_'),
        }
    }
    format!("{}~{:012x}", slug.trim_matches('_'), fnv1a(value.as_bytes()) & 0xffff_ffff_ffff)
}

impl SweepSpec {
    pub fn load(file: &Path) -> Result<Self, UsageError> {
        let name = file.display().to_string();
        let text = std::fs::read_to_string(file).map_err(|e| UsageError::new("sweep spec", &name, format!("a readable TOML file ({e})")))?;
        Self::parse(&name, &text)
    }

    pub fn parse(file: &str, text: &str) -> Result<Self, UsageError> {
        let origin = Origin { arg: "sweep spec", kind: "sweep", name: file };
        let spec: SweepFile = toml::from_str(text).map_err(|e| UsageError::new("sweep spec", file, format!("a valid sweep spec: {}", e.message())))?;
        let defaults = layer_from(&spec.defaults, &origin, "[defaults]")?;
        let known = flags::<RunOpts>();
        if spec.axes.is_empty() {
            return Err(UsageError::new("sweep spec", file, "at least one axis under [axes], e.g. loss = [\"0\", \"1%\"]"));
        }
        let mut axes = Vec::new();
        // toml's tables are sorted by key: the axes come by name, whatever the file's order.
        let sorted: BTreeMap<&String, &toml::Value> = spec.axes.iter().collect();
        for (name, values) in sorted {
            if !known.contains(name) {
                return Err(UsageError::new(
                    "sweep spec",
                    file,
                    format!("run flags without dashes as the axes; {name:?} is not one (run flags: {})", known.join(", ")),
                ));
            }
            let Some(list) = values.as_array().filter(|l| !l.is_empty()) else {
                return Err(UsageError::new(
                    &format!("--{name} (sweep {file}, axis {name})"),
                    shown(values),
                    "a non-empty list of values, e.g. [\"a\", \"b\"]",
                ));
            };
            let mut parsed: Vec<AxisValue> = Vec::new();
            for v in list {
                let layer = layer_from(&toml::Table::from_iter([(name.clone(), v.clone())]), &origin, &format!("axis {name}"))?;
                let shown = shown(v);
                let id = id_part(&shown);
                if let Some(same) = parsed.iter().find(|p| p.id == id) {
                    return Err(UsageError::new(
                        &format!("--{name} (sweep {file}, axis {name})"),
                        &shown,
                        format!("values that differ; {:?} is there twice", same.shown),
                    ));
                }
                parsed.push(AxisValue { shown, id, layer });
            }
            axes.push(Axis { name: name.clone(), values: parsed });
        }
        Ok(SweepSpec { file: file.to_string(), text: text.to_string(), description: spec.description, note: spec.note, defaults, axes })
    }

    /// Every cell, in the grid's order: the product of the axes (by name), each axis's values in
    /// the spec's order.
    pub fn cells(&self) -> Vec<Cell> {
        let mut cells = vec![Cell { id: String::new(), label: String::new(), parameters: Vec::new(), opts: RunOpts::default() }];
        for axis in &self.axes {
            cells = cells
                .iter()
                .flat_map(|c| {
                    axis.values.iter().map(move |v| {
                        let sep = |s: &str, by: &str| if s.is_empty() { String::new() } else { by.to_string() };
                        Cell {
                            id: format!("{}{}{}={}", c.id, sep(&c.id, ","), axis.name, v.id),
                            label: format!("{}{}{}={}", c.label, sep(&c.label, " "), axis.name, v.shown),
                            parameters: c.parameters.iter().cloned().chain([(axis.name.clone(), v.shown.clone())]).collect(),
                            opts: v.layer.clone().over(c.opts.clone()),
                        }
                    })
                })
                .collect();
        }
        for c in &mut cells {
            c.opts = std::mem::take(&mut c.opts).over(self.defaults.clone());
        }
        cells
    }
}

/// The seed of a cell that no layer gives one: from its id, so the same on every machine.
pub fn cell_seed(id: &str) -> u64 {
    fnv1a(format!("ccbench sweep cell {id}").as_bytes())
}

/// A cell planned: the command line over it, checked against everything else and this host.
pub struct PlannedCell {
    pub cell: Cell,
    pub plan: Plan,
}

/// Plans every cell (the command line over each), or says which cell is wrong.
pub fn plan_cells(spec: &SweepSpec, command_line: &RunOpts, available: &[String]) -> Result<Vec<PlannedCell>, UsageError> {
    for axis in &spec.axes {
        let given = axis.values.iter().any(|v| v.layer != RunOpts::default() && command_line.clone().over(v.layer.clone()) == *command_line);
        if given {
            return Err(precondition(format!(
                "--{} is an axis of sweep {}: leave it off the command line (or take the axis out of the spec)",
                axis.name, spec.file
            )));
        }
    }
    let mut planned = Vec::new();
    for cell in spec.cells() {
        let mut opts = command_line.clone().over(cell.opts.clone());
        opts.seed = opts.seed.or(Some(cell_seed(&cell.id)));
        let plan = crate::spec::resolve(opts, available)
            .map(Plan::from)
            .map_err(|e| UsageError { flag: format!("{} (sweep {}, cell {})", e.flag, spec.file, cell.label), ..e })?;
        planned.push(PlannedCell { cell, plan });
    }
    Ok(planned)
}

/// The hash of what a sweep measures: every cell's id and resolved parameters (so neither the
/// order of the spec's tables nor its comments and description count, but every value and the
/// command line's flags do).
pub fn spec_hash(cells: &[PlannedCell]) -> String {
    let mut sorted: Vec<&PlannedCell> = cells.iter().collect();
    sorted.sort_by(|a, b| a.cell.id.cmp(&b.cell.id));
    let mut text = String::new();
    for c in sorted {
        text.push_str(&c.cell.id);
        text.push('\n');
        text.push_str(&serde_json::to_string(&c.plan.params()).unwrap_or_default());
        text.push('\n');
    }
    format!("{:016x}", fnv1a(text.as_bytes()))
}

/// The positions (in `cells`) of a shard's cells: the cells sorted by id, every `count`-th from
/// `index`. Returned in the grid's order.
pub fn shard_cells(ids: &[&str], shard: Option<Shard>) -> Vec<usize> {
    let mut by_id: Vec<usize> = (0..ids.len()).collect();
    by_id.sort_by(|a, b| ids[*a].cmp(ids[*b]));
    let mut mine: Vec<usize> = by_id.into_iter().enumerate().filter(|(pos, _)| shard.is_none_or(|s| s.takes(*pos))).map(|(_, i)| i).collect();
    mine.sort_unstable();
    mine
}

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
struct SweepIndex {
    #[serde(flatten)]
    meta: SweepMeta,
    status: String,
    cells: Vec<Value>,
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
}

fn status_name(s: Status) -> String {
    match s {
        Status::Complete => "complete",
        Status::Interrupted => "interrupted",
        Status::Failed => "failed",
    }
    .to_string()
}

fn read_json(file: &Path) -> Option<Value> {
    serde_json::from_str(&std::fs::read_to_string(file).ok()?).ok()
}

fn read_index(dir: &Path) -> Result<SweepIndex, String> {
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

fn write_atomic(file: &Path, text: &str) -> anyhow::Result<()> {
    let tmp = file.with_extension("json.tmp");
    std::fs::write(&tmp, text).with_context(|| format!("writing {}", tmp.display()))?;
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

/// Writes `dir/sweep.json` and `dir/runs.csv` from what is on disk under `dir/cells/` for the
/// cells `mine` (ids), and returns the table across them.
fn write_index(dir: &Path, meta: &SweepMeta, mine: &[&GridCell], interrupted: bool) -> anyhow::Result<String> {
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
        rows.push([g.label.clone(), record.median.clone(), record.verdict.clone()]);
        if let Ok(r) = ccbench::results::ExperimentResult::deserialize(&result) {
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
            "median": record.median,
            "verdict": record.verdict,
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
    let csv_file = dir.join(ccbench::export::csv::RUNS_FILE);
    std::fs::write(&csv_file, runs_csv(&axes, &results)?).with_context(|| format!("writing {}", csv_file.display()))?;
    // The page across cells: each algorithm's headline against the cell, as a preset's.
    let page: Vec<(String, &ccbench::results::ExperimentResult)> = results.iter().map(|(g, _, r)| (g.label.clone(), r)).collect();
    let html = dir.join("report.html");
    std::fs::write(&html, ccbench::export::html::render_conditions(&page)).with_context(|| format!("writing {}", html.display()))?;
    Ok(ccbench::export::text::table("Across cells", "cell", &rows))
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

fn grid_cell(c: &Cell) -> GridCell {
    GridCell { id: c.id.clone(), label: c.label.clone(), parameters: c.parameters.iter().cloned().collect() }
}

/// `ccbench sweep`
pub fn run(args: SweepArgs) -> anyhow::Result<i32> {
    let spec = SweepSpec::load(&args.spec)?;
    let available = crate::run::usable_algorithms();
    let planned = plan_cells(&spec, &args.opts, &available)?;
    let hash = spec_hash(&planned);
    let shard = detect_shard(args.shard, args.shards, &|v| std::env::var(v).ok())?;
    let ids: Vec<&str> = planned.iter().map(|p| p.cell.id.as_str()).collect();
    let mine = shard_cells(&ids, shard);
    let mut grid: Vec<GridCell> = planned.iter().map(|p| grid_cell(&p.cell)).collect();
    grid.sort_by(|a, b| a.id.cmp(&b.id));
    let meta = SweepMeta {
        schema: SCHEMA.into(),
        description: spec.description.clone(),
        spec: SpecRecord { file: spec.file.clone(), text: spec.text.clone(), command_line: std::env::args().collect(), hash: hash.clone() },
        ccbench_version: VERSION.into(),
        git_revision: REVISION.into(),
        axes: spec.axes.iter().map(|a| AxisRecord { name: a.name.clone(), values: a.values.iter().map(|v| v.shown.clone()).collect() }).collect(),
        grid,
        shard,
        merged_from: Vec::new(),
    };
    let axes_text: Vec<String> = spec.axes.iter().map(|a| format!("{} ({})", a.name, a.values.len())).collect();
    let shard_text = shard.map(|s| format!("; shard {s} (0-based) runs {} of them", mine.len())).unwrap_or_default();
    if args.dry_run {
        println!("Sweep     {} ({}): {} cells, axes {}{shard_text}; spec {hash}", spec.description, spec.file, planned.len(), axes_text.join(" × "));
        let width = mine.iter().map(|&i| planned[i].cell.id.len()).max().unwrap_or(0);
        for &i in &mine {
            let p = &planned[i];
            let runs = planned_runs(&p.plan);
            println!("  {:<width$}  at most {runs} run{}", p.cell.id, if runs == 1 { "" } else { "s" });
        }
        return Ok(0);
    }
    if shard.is_some() && args.out.is_none() {
        return Err(precondition("a shard needs --out: the results directory every shard of the sweep shares").into());
    }
    require_root("sweep")?;
    let out = args.out.clone().unwrap_or_else(|| {
        let stem = args.spec.file_stem().map(|s| s.to_string_lossy().to_string()).unwrap_or_else(|| "sweep".into());
        crate::run::default_out(&crate::run::slug(&stem))
    });
    let dir = match shard {
        Some(s) => out.join(s.dir_name()),
        None => out.clone(),
    };
    refuse_foreign(&dir, &hash)?;
    std::fs::create_dir_all(dir.join(CELLS_DIR)).with_context(|| format!("creating the results directory {}", dir.display()))?;
    let _lock = lock(&dir)?;
    let mine_grid: Vec<&GridCell> = mine.iter().map(|&i| meta.grid.iter().find(|g| g.id == planned[i].cell.id).expect("in the grid")).collect();
    write_index(&dir, &meta, &mine_grid, false)?;

    let done_before: Vec<bool> = mine.iter().map(|&i| finished(&dir.join(CELLS_DIR).join(&planned[i].cell.id), &hash).is_some()).collect();
    let todo: Vec<usize> = mine.iter().zip(&done_before).filter(|(_, d)| !**d).map(|(i, _)| *i).collect();
    println!(
        "Sweep     {}{}: {} cells, axes {}{shard_text}",
        spec.description,
        if spec.description.is_empty() { spec.file.clone() } else { format!(" ({})", spec.file) },
        planned.len(),
        axes_text.join(" × ")
    );
    if let Some(note) = &spec.note {
        println!("          {note}");
    }
    let skipped = mine.len() - todo.len();
    if skipped > 0 {
        println!("Resuming  {skipped} cell(s) finished before, {} to run", todo.len());
    }
    println!("Results   {} ({} at once; run again with --out {} to resume)", dir.display(), args.parallel, out.display());

    let stop = crate::run::install_stop()?;
    let bar = Bar::new(todo.iter().map(|&i| planned_runs(&planned[i].plan)).sum());
    let counter = AtomicUsize::new(skipped);
    let next = AtomicUsize::new(0);
    let failure: Mutex<Option<anyhow::Error>> = Mutex::new(None);
    let statuses: Mutex<Vec<Status>> = Mutex::new(Vec::new());
    let ctx = CellContext { dir: &dir, hash: &hash, bar: &bar, stop: &stop, total: mine.len(), counter: &counter };
    std::thread::scope(|s| {
        for _ in 0..(args.parallel as usize).min(todo.len()).max(1) {
            s.spawn(|| loop {
                if stop.load(Ordering::SeqCst) || failure.lock().map(|f| f.is_some()).unwrap_or(true) {
                    break;
                }
                let k = next.fetch_add(1, Ordering::SeqCst);
                let Some(&i) = todo.get(k) else { break };
                match run_cell(&planned[i], &ctx) {
                    Ok(status) => statuses.lock().expect("statuses").push(status),
                    Err(e) => {
                        if let Ok(mut f) = failure.lock() {
                            f.get_or_insert(e);
                        }
                        break;
                    }
                }
            });
        }
    });
    bar.finish();
    if let Some(e) = failure.into_inner().ok().flatten() {
        return Err(e);
    }
    let interrupted = stop.load(Ordering::SeqCst);
    let table = write_index(&dir, &meta, &mine_grid, interrupted)?;
    println!("\n{table}");
    println!("Results   {} (every run: {})", dir.join(SWEEP_FILE).display(), dir.join(ccbench::export::csv::RUNS_FILE).display());
    let statuses = statuses.into_inner().unwrap_or_default();
    Ok(if interrupted || statuses.contains(&Status::Interrupted) {
        130
    } else if statuses.contains(&Status::Failed) {
        1
    } else {
        0
    })
}

const LOCK_FILE: &str = ".lock";

/// Holds `dir` for this process until the returned file is dropped: a second sweep into the same
/// directory (the same shard started twice) is refused instead of racing the first.
fn lock(dir: &Path) -> anyhow::Result<std::fs::File> {
    use std::os::fd::AsRawFd;
    let file = dir.join(LOCK_FILE);
    let f = std::fs::File::create(&file).with_context(|| format!("creating {}", file.display()))?;
    // SAFETY: flock on a descriptor we own; released when it is closed.
    if unsafe { libc::flock(f.as_raw_fd(), libc::LOCK_EX | libc::LOCK_NB) } != 0 {
        return Err(precondition(format!("another ccbench sweep is writing {}: wait for it to end, or give another --out", dir.display())).into());
    }
    Ok(f)
}

/// Refuses to write into a directory that holds a sweep of another spec or another ccbench,
/// or results that are not a sweep's.
fn refuse_foreign(dir: &Path, hash: &str) -> Result<(), UsageError> {
    if !dir.join(SWEEP_FILE).exists() {
        let empty = std::fs::read_dir(dir).map(|d| d.flatten().all(|e| e.file_name() == LOCK_FILE || e.file_name() == CELLS_DIR)).unwrap_or(true);
        return if empty {
            Ok(())
        } else {
            Err(UsageError::new("--out", dir.display(), "a new or empty directory, or a sweep's to resume (this one has no sweep.json)"))
        };
    }
    let index = read_index(dir).map_err(|e| UsageError::new("--out", dir.display(), format!("a sweep's directory to resume: {e}")))?;
    if index.meta.spec.hash != hash {
        return Err(UsageError::new(
            "--out",
            dir.display(),
            format!(
                "a directory of this sweep to resume, or a new one: it holds a sweep of another spec (spec {} from {}, this one {hash})",
                index.meta.spec.hash, index.meta.spec.file
            ),
        ));
    }
    if (index.meta.ccbench_version.as_str(), index.meta.git_revision.as_str()) != (VERSION, REVISION) {
        return Err(UsageError::new(
            "--out",
            dir.display(),
            format!(
                "a directory of this ccbench to resume: it was made by ccbench {} ({}), this is {VERSION} ({REVISION}); use a new --out",
                index.meta.ccbench_version, index.meta.git_revision
            ),
        ));
    }
    Ok(())
}

struct CellContext<'a> {
    dir: &'a Path,
    hash: &'a str,
    bar: &'a Bar,
    stop: &'a AtomicBool,
    total: usize,
    counter: &'a AtomicUsize,
}

/// Runs one cell from scratch into `cells/<id>/`, writes its files and `cell.json`, prints its
/// line.
fn run_cell(p: &PlannedCell, ctx: &CellContext) -> anyhow::Result<Status> {
    let cell_dir = ctx.dir.join(CELLS_DIR).join(&p.cell.id);
    // What an interrupted or failed attempt left is not this attempt's.
    if cell_dir.exists() {
        std::fs::remove_dir_all(&cell_dir).with_context(|| format!("clearing {}", cell_dir.display()))?;
    }
    std::fs::create_dir_all(&cell_dir).with_context(|| format!("creating {}", cell_dir.display()))?;
    for w in ccbench::limits::check_path(&p.plan.path) {
        ctx.bar.eprintln(&format!("warning: cell {}: {w}", p.cell.label));
    }
    let header = ccbench::export::text::header(&p.plan.params());
    let result = experiment::execute(&p.plan, &cell_dir, ctx.stop, &mut ctx.bar.observer(Some(p.cell.label.clone()), false));
    ctx.bar.experiment_ended(planned_runs(&p.plan), result.runs.len() as u64);
    crate::run::write_outputs(&result, &cell_dir, &header)?;
    let (median, verdict) = ccbench::export::text::condition_row(&result);
    let suspect_runs = result.runs.iter().filter(|r| !r.suspect.is_empty()).count();
    let record = CellRecord {
        schema: CELL_SCHEMA.into(),
        id: p.cell.id.clone(),
        label: p.cell.label.clone(),
        parameters: p.cell.parameters.iter().cloned().collect(),
        spec_hash: ctx.hash.to_string(),
        status: status_name(result.status),
        median,
        verdict,
        runs: result.runs.len(),
        suspect_runs,
    };
    write_atomic(&cell_dir.join(CELL_FILE), &serde_json::to_string_pretty(&record)?)?;
    let n = ctx.counter.fetch_add(1, Ordering::SeqCst) + 1;
    let outcome = match result.status {
        Status::Complete => format!("{}; {}", record.median, record.verdict),
        Status::Interrupted => "interrupted (runs again on resume)".into(),
        Status::Failed => format!("failed: {}", result.runs.iter().rev().find_map(|r| r.error.clone()).unwrap_or_default()),
    };
    let suspect = if suspect_runs > 0 { format!(" ({suspect_runs} of {} runs flagged suspect: see its result.json)", record.runs) } else { String::new() };
    ctx.bar.stdout(&format!("  [{n}/{}] {}: {outcome}{suspect}\n", ctx.total, p.cell.label));
    Ok(result.status)
}

/// The sweep directories among `dirs`: each itself, or a sweep's OUT holding shard directories.
fn expand(dirs: &[PathBuf]) -> Result<Vec<PathBuf>, UsageError> {
    let mut found = Vec::new();
    for d in dirs {
        if d.join(SWEEP_FILE).exists() {
            found.push(d.clone());
            continue;
        }
        let mut shards: Vec<PathBuf> = std::fs::read_dir(d)
            .into_iter()
            .flatten()
            .flatten()
            .map(|e| e.path())
            .filter(|p| p.file_name().is_some_and(|n| n.to_string_lossy().starts_with("shard-")) && p.join(SWEEP_FILE).exists())
            .collect();
        if shards.is_empty() {
            return Err(UsageError::new("merge directory", d.display(), "a sweep's directory (with sweep.json), or one holding shard-I-of-N directories"));
        }
        shards.sort();
        found.extend(shards);
    }
    let mut unique: Vec<PathBuf> = Vec::new();
    for d in found {
        let canon = d.canonicalize().unwrap_or_else(|_| d.clone());
        if !unique.iter().any(|u| u.canonicalize().unwrap_or_else(|_| u.clone()) == canon) {
            unique.push(d);
        }
    }
    Ok(unique)
}

/// Copies a directory tree, hard-linking files where it can.
fn copy_tree(from: &Path, to: &Path) -> std::io::Result<()> {
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

fn listed(items: &[String]) -> String {
    const SHOWN: usize = 8;
    let mut text = items.iter().take(SHOWN).cloned().collect::<Vec<_>>().join(", ");
    if items.len() > SHOWN {
        text.push_str(&format!(" and {} more", items.len() - SHOWN));
    }
    text
}

/// `ccbench merge`: shard directories into one result set, every cell of the grid complete in
/// exactly one of them.
pub fn merge(args: MergeArgs) -> anyhow::Result<i32> {
    let dirs = expand(&args.dirs)?;
    let mut indexes = Vec::new();
    for d in &dirs {
        let index = read_index(d).map_err(|e| UsageError::new("merge directory", d.display(), format!("a sweep's directory: {e}")))?;
        indexes.push((d.clone(), index));
    }
    let (first_dir, first) = &indexes[0];
    for (d, index) in &indexes[1..] {
        if index.meta.spec.hash != first.meta.spec.hash {
            return Err(precondition(format!(
                "mixed specs: {} is spec {} ({}), {} is spec {} ({}); merge the shards of one sweep",
                first_dir.display(),
                first.meta.spec.hash,
                first.meta.spec.file,
                d.display(),
                index.meta.spec.hash,
                index.meta.spec.file
            ))
            .into());
        }
        let version = |m: &SweepMeta| format!("{} ({})", m.ccbench_version, m.git_revision);
        if version(&index.meta) != version(&first.meta) {
            return Err(precondition(format!(
                "mixed ccbench versions: {} was made by ccbench {}, {} by {}; run every shard with one build",
                first_dir.display(),
                version(&first.meta),
                d.display(),
                version(&index.meta)
            ))
            .into());
        }
    }
    let hash = first.meta.spec.hash.clone();
    let mut source: BTreeMap<String, PathBuf> = BTreeMap::new();
    for (d, _) in &indexes {
        for g in &first.meta.grid {
            let cell_dir = d.join(CELLS_DIR).join(&g.id);
            if finished(&cell_dir, &hash).is_some() {
                if let Some(other) = source.get(&g.id) {
                    return Err(precondition(format!("cell {} is in both {} and {}; give each shard once", g.id, other.display(), d.display())).into());
                }
                source.insert(g.id.clone(), cell_dir);
            }
        }
    }
    let missing: Vec<String> = first.meta.grid.iter().filter(|g| !source.contains_key(&g.id)).map(|g| g.id.clone()).collect();
    if !missing.is_empty() {
        return Err(precondition(format!(
            "{} of {} cells missing (not complete in any directory given): {}",
            missing.len(),
            first.meta.grid.len(),
            listed(&missing)
        ))
        .into());
    }
    let out = &args.out;
    let empty = std::fs::read_dir(out).map(|mut d| d.next().is_none()).unwrap_or(true);
    if !empty {
        return Err(UsageError::new("--out", out.display(), "a new or empty directory for the merged sweep").into());
    }
    for (id, from) in &source {
        let to = out.join(CELLS_DIR).join(id);
        copy_tree(from, &to).with_context(|| format!("copying {} to {}", from.display(), to.display()))?;
    }
    let meta = SweepMeta { shard: None, merged_from: dirs.iter().map(|d| d.display().to_string()).collect(), ..first.meta.clone() };
    // The grid's order: the spec's, as a one-shot sweep prints it.
    let order = grid_order(&meta);
    let cells: Vec<&GridCell> = order.iter().map(|&i| &meta.grid[i]).collect();
    let table = write_index(out, &meta, &cells, false)?;
    println!(
        "Merged    {} directories: {} cells of {}",
        dirs.len(),
        cells.len(),
        if meta.description.is_empty() { &meta.spec.file } else { &meta.description }
    );
    println!("\n{table}");
    println!("Results   {} (every run: {})", out.join(SWEEP_FILE).display(), out.join(ccbench::export::csv::RUNS_FILE).display());
    Ok(0)
}

/// The grid's cells in the spec's order (axes by name, each axis's values as listed).
fn grid_order(meta: &SweepMeta) -> Vec<usize> {
    let rank = |g: &GridCell| -> Vec<usize> {
        meta.axes.iter().map(|a| g.parameters.get(&a.name).and_then(|v| a.values.iter().position(|x| x == v)).unwrap_or(usize::MAX)).collect()
    };
    let mut order: Vec<usize> = (0..meta.grid.len()).collect();
    order.sort_by_key(|&i| rank(&meta.grid[i]));
    order
}

#[cfg(test)]
mod tests {
    use super::*;

    const HOST: [&str; 3] = ["bbr", "cubic", "reno"];
    const SPEC: &str = "description = \"loss x rtt\"\n[defaults]\ncc = \"bbr,cubic\"\nruns = 4\nduration = \"3s\"\nrate = \"50mbit\"\n[axes]\nloss = [\"0\", \"1%\"]\nrtt = [\"10ms\", \"40ms\"]\n";

    fn host() -> Vec<String> {
        HOST.map(String::from).to_vec()
    }

    fn ids(spec: &SweepSpec) -> Vec<String> {
        spec.cells().into_iter().map(|c| c.id).collect()
    }

    fn no_env(_: &str) -> Option<String> {
        None
    }

    fn env_of(vars: &'static [(&'static str, &'static str)]) -> impl Fn(&str) -> Option<String> {
        move |name| vars.iter().find(|(k, _)| *k == name).map(|(_, v)| v.to_string())
    }

    #[test]
    fn cell_ids_are_readable_deterministic_and_independent_of_the_specs_order() {
        let spec = SweepSpec::parse("s.toml", SPEC).unwrap();
        assert_eq!(ids(&spec), ["loss=0,rtt=10ms", "loss=0,rtt=40ms", "loss=1pct,rtt=10ms", "loss=1pct,rtt=40ms"]);
        assert_eq!(spec.cells()[3].label, "loss=1% rtt=40ms");
        // The same spec with its tables and keys in another order gives the same cells.
        let shuffled =
            "[axes]\nrtt = [\"10ms\", \"40ms\"]\nloss = [\"0\", \"1%\"]\n[defaults]\nrate = \"50mbit\"\nduration = \"3s\"\nruns = 4\ncc = \"bbr,cubic\"\n";
        let other = SweepSpec::parse("other.toml", shuffled).unwrap();
        assert_eq!(ids(&other), ids(&spec));
        let plans = |s: &SweepSpec| plan_cells(s, &RunOpts::default(), &host()).unwrap_or_else(|e| panic!("{e}"));
        let (a, b) = (plans(&spec), plans(&other));
        assert_eq!(spec_hash(&a), spec_hash(&b), "comments, description and order do not make another sweep");
        assert_eq!(a[2].plan.seed, cell_seed("loss=1pct,rtt=10ms"), "a cell's seed comes from its id");
        assert_eq!(a[2].plan.seed, b[2].plan.seed);
        // Pinned: the same on every machine and in every build.
        assert_eq!((fnv1a(b"a"), fnv1a(b"ccbench")), (0xaf63_dc4c_8601_ec8c, 0xc2c8_e67d_b9a0_a5d7), "FNV-1a test vector");
        assert_eq!(id_part("gilbert:p=1%,r=25%"), format!("gilbert_p_1pct_r_25pct~{:012x}", fnv1a(b"gilbert:p=1%,r=25%") & 0xffff_ffff_ffff));
    }

    #[test]
    fn cell_ids_are_unique_even_where_slugs_meet() {
        let values = ["1%", "1pct", "1_pct", "1:pct", "1/pct", "a,b", "a_b", "a b", "", "0.5bdp", "-", "1%%", "1%pct"];
        let parts: Vec<String> = values.iter().map(|v| id_part(v)).collect();
        for (i, a) in parts.iter().enumerate() {
            assert!(!a.contains('/') && !a.contains(',') && !a.contains('=') && !a.is_empty(), "{a}");
            for b in &parts[i + 1..] {
                assert_ne!(a, b, "two values share an id part");
            }
        }
        // And whole ids, across a larger grid, never repeat.
        let spec = SweepSpec::parse(
            "s.toml",
            "[axes]\nloss = [\"0\", \"1%\", \"gilbert:p=1%,r=25%\"]\nat = [[\"1s:rate=5mbit\"], [\"1s:rate=5mbit\", \"2s:rtt=10ms\"]]\nno-offload = [true, false]\ncc = [\"bbr,cubic\", \"bbr,reno\"]\n",
        )
        .unwrap();
        let mut all = ids(&spec);
        assert_eq!(all.len(), 3 * 2 * 2 * 2);
        all.sort();
        all.dedup();
        assert_eq!(all.len(), 24);
    }

    #[test]
    fn the_grid_is_the_product_of_the_axes_over_the_defaults() {
        let spec = SweepSpec::parse(
            "s.toml",
            "[defaults]\ncc = \"bbr,cubic\"\nrtt = \"80ms\"\nruns = 5\n[axes]\nloss = [\"0\", \"1%\", \"5%\"]\nrate = [\"10mbit\", \"50mbit\"]\nbuffer = [\"1bdp\", \"4bdp\"]\n",
        )
        .unwrap();
        let cells = spec.cells();
        assert_eq!(cells.len(), 12);
        let mut seen = Vec::new();
        for loss in ["0", "1%", "5%"] {
            for rate in ["10mbit", "50mbit"] {
                for buffer in ["1bdp", "4bdp"] {
                    let want: Vec<(String, String)> =
                        [("buffer", buffer), ("loss", loss), ("rate", rate)].map(|(a, v)| (a.to_string(), v.to_string())).to_vec();
                    let c = cells.iter().find(|c| c.parameters == want).unwrap_or_else(|| panic!("no cell {want:?}"));
                    assert_eq!(c.opts.path.loss, Some(loss.parse().unwrap()));
                    assert_eq!(c.opts.path.rate, Some(rate.parse().unwrap()));
                    assert_eq!(c.opts.path.buffer, Some(buffer.parse().unwrap()));
                    assert_eq!(c.opts.path.rtt, Some("80ms".parse().unwrap()), "from [defaults]");
                    assert_eq!(c.opts.runs, Some("5".parse().unwrap()));
                    seen.push(c.id.clone());
                }
            }
        }
        seen.sort();
        seen.dedup();
        assert_eq!(seen.len(), 12, "every combination exactly once");
        // The grid's order: axes by name, each axis's values as listed.
        assert_eq!(cells[0].label, "buffer=1bdp loss=0 rate=10mbit");
        assert_eq!(cells[1].label, "buffer=1bdp loss=0 rate=50mbit");
        assert_eq!(cells[11].label, "buffer=4bdp loss=5% rate=50mbit");
        // The command line goes over every cell.
        let argv = ["ccbench", "sweep", "s.toml", "--duration", "2s", "--rtt", "20ms"];
        let crate::cli::Command::Sweep(args) = crate::cli::parse_from(argv).unwrap().command else { panic!() };
        let planned = plan_cells(&spec, &args.opts, &host()).unwrap_or_else(|e| panic!("{e}"));
        assert!(planned.iter().all(|p| p.plan.path.down.delay_ns.as_nanos() == 10_000_000), "--rtt 20ms over the defaults' 80ms");
        assert_ne!(
            spec_hash(&planned),
            spec_hash(&plan_cells(&spec, &RunOpts::default(), &host()).unwrap_or_else(|e| panic!("{e}"))),
            "the command line is part of the sweep"
        );
    }

    #[test]
    fn shards_partition_the_cells_exactly() {
        let spec = SweepSpec::parse("s.toml", "[axes]\nloss = [\"0\", \"1%\", \"2%\", \"5%\", \"10%\"]\nrtt = [\"10ms\", \"20ms\", \"40ms\"]\n").unwrap();
        let cells = spec.cells();
        for total in [0, 1, 2, 5, 15] {
            let ids: Vec<&str> = cells.iter().take(total).map(|c| c.id.as_str()).collect();
            for n in 1..=7u32 {
                let mut count = vec![0; ids.len()];
                let mut sizes = Vec::new();
                for i in 0..n {
                    let mine = shard_cells(&ids, Some(Shard { index: i, count: n }));
                    sizes.push(mine.len());
                    for c in mine {
                        count[c] += 1;
                    }
                }
                assert!(count.iter().all(|&k| k == 1), "{total} cells, {n} shards: every cell in exactly one shard: {count:?}");
                assert!(sizes.iter().max().unwrap() - sizes.iter().min().unwrap() <= 1, "balanced: {sizes:?}");
            }
            assert_eq!(shard_cells(&ids, None), (0..ids.len()).collect::<Vec<_>>(), "no shard: every cell");
        }
        // By id, not by the grid's order: the same cells for any order of the spec.
        let ids: Vec<&str> = cells.iter().map(|c| c.id.as_str()).collect();
        let mut reversed = ids.clone();
        reversed.reverse();
        let pick = |ids: &[&str], s| shard_cells(ids, Some(s)).into_iter().map(|i| ids[i].to_string()).collect::<std::collections::BTreeSet<_>>();
        assert_eq!(pick(&ids, Shard { index: 1, count: 3 }), pick(&reversed, Shard { index: 1, count: 3 }));
    }

    #[test]
    fn the_shard_comes_from_the_flag_or_the_schedulers_environment() {
        assert_eq!("0/4".parse::<Shard>(), Ok(Shard { index: 0, count: 4 }));
        assert_eq!("3/4".parse::<Shard>(), Ok(Shard { index: 3, count: 4 }));
        for bad in ["4/4", "1/0", "x/2", "2", "-1/3", "1/2/3"] {
            assert!(bad.parse::<Shard>().is_err(), "{bad}");
        }
        let flag = Some(Shard { index: 1, count: 3 });
        assert_eq!(detect_shard(flag, None, &no_env).unwrap(), flag);
        assert_eq!(detect_shard(flag, None, &env_of(&[("JOB_COMPLETION_INDEX", "2")])).unwrap(), flag, "the flag wins");
        assert!(detect_shard(flag, Some(4), &no_env).is_err(), "--shards must agree with --shard");
        assert_eq!(detect_shard(None, None, &no_env).unwrap(), None);
        // Kubernetes Indexed Job: 0-based index, the count from --shards.
        let k8s = env_of(&[("JOB_COMPLETION_INDEX", "2")]);
        assert_eq!(detect_shard(None, Some(5), &k8s).unwrap(), Some(Shard { index: 2, count: 5 }));
        assert!(detect_shard(None, None, &k8s).unwrap_err().to_string().contains("--shards"));
        assert!(detect_shard(None, Some(2), &k8s).unwrap_err().to_string().contains("JOB_COMPLETION_INDEX"));
        assert!(detect_shard(None, Some(2), &env_of(&[("JOB_COMPLETION_INDEX", "one")])).is_err());
        assert!(detect_shard(None, Some(3), &no_env).unwrap_err().to_string().contains("--shards"), "--shards alone picks no shard");
        // Slurm: --array=0-3 → ids 0…3 of 4; --array=1-4 is read from its minimum.
        let slurm = env_of(&[("SLURM_ARRAY_TASK_ID", "3"), ("SLURM_ARRAY_TASK_COUNT", "4"), ("SLURM_ARRAY_TASK_MIN", "0")]);
        assert_eq!(detect_shard(None, None, &slurm).unwrap(), Some(Shard { index: 3, count: 4 }));
        assert_eq!(detect_shard(None, Some(4), &slurm).unwrap(), Some(Shard { index: 3, count: 4 }));
        assert!(detect_shard(None, Some(5), &slurm).is_err());
        let one_based = env_of(&[("SLURM_ARRAY_TASK_ID", "4"), ("SLURM_ARRAY_TASK_COUNT", "4"), ("SLURM_ARRAY_TASK_MIN", "1")]);
        assert_eq!(detect_shard(None, None, &one_based).unwrap(), Some(Shard { index: 3, count: 4 }));
        let stepped = env_of(&[("SLURM_ARRAY_TASK_ID", "20"), ("SLURM_ARRAY_TASK_COUNT", "3"), ("SLURM_ARRAY_TASK_MIN", "0"), ("SLURM_ARRAY_TASK_STEP", "10")]);
        assert_eq!(detect_shard(None, None, &stepped).unwrap(), Some(Shard { index: 2, count: 3 }));
        assert!(detect_shard(None, None, &env_of(&[("SLURM_ARRAY_TASK_ID", "3")])).is_err(), "no count");
        assert!(detect_shard(None, None, &env_of(&[("SLURM_ARRAY_TASK_ID", "7"), ("SLURM_ARRAY_TASK_COUNT", "4")])).is_err(), "beyond the array");
        assert_eq!(Shard { index: 2, count: 5 }.dir_name(), "shard-2-of-5");
    }

    #[test]
    fn spec_errors_name_the_axis_the_field_or_the_cell() {
        let err = |text: &str| SweepSpec::parse("s.toml", text).unwrap_err();
        let e = err("[axes]\nloss = [\"0\", \"200%\"]\n");
        assert_eq!((e.flag.as_str(), e.value.as_str()), ("--loss (sweep s.toml, axis loss)", "200%"));
        assert!(e.allowed.starts_with("a percentage from 0% to 100%"), "{e}");
        let e = err("[axes]\ncolour = [\"red\"]\n");
        assert!(e.to_string().contains("\"colour\" is not one") && e.to_string().contains("rate-down"), "{e}");
        let e = err("[axes]\nloss = \"1%\"\n");
        assert!(e.flag.contains("axis loss") && e.allowed.contains("list"), "{e}");
        let e = err("[axes]\nloss = []\n");
        assert!(e.flag.contains("axis loss"), "{e}");
        let e = err("[axes]\nrtt = [\"10ms\", \"10ms\"]\n");
        assert!(e.flag.contains("axis rtt") && e.allowed.contains("twice"), "{e}");
        let e = err("[defaults]\nruns = 0\n[axes]\nrtt = [\"10ms\"]\n");
        assert_eq!(e.flag, "--runs (sweep s.toml, [defaults])");
        assert!(err("[defaults]\nrtt = \"10ms\"\n").to_string().contains("at least one axis"));
        assert!(err("[axes]\nrtt = [\"10ms\"]\n[conditions]\n").to_string().contains("valid sweep spec"));
        // A combination that only one cell makes is named with the cell.
        let spec = SweepSpec::parse("s.toml", "[defaults]\ncc = \"bbr,cubic\"\n[axes]\nworkload = [\"file\", \"bulk\"]\nsize = [\"1mb\"]\n").unwrap();
        let e = plan_cells(&spec, &RunOpts::default(), &host()).err().expect("refused");
        assert_eq!((e.flag.as_str(), e.value.as_str()), ("--size (sweep s.toml, cell size=1mb workload=bulk)", "1mb"));
        // An axis's flag on the command line would flatten the axis.
        let spec = SweepSpec::parse("s.toml", SPEC).unwrap();
        let argv = ["ccbench", "sweep", "s.toml", "--loss", "2%"];
        let crate::cli::Command::Sweep(args) = crate::cli::parse_from(argv).unwrap().command else { panic!() };
        let e = plan_cells(&spec, &args.opts, &host()).err().expect("refused");
        assert!(e.to_string().contains("--loss is an axis"), "{e}");
        let argv = ["ccbench", "sweep", "s.toml", "--loss-down", "2%", "--cc", "bbr,reno"];
        let crate::cli::Command::Sweep(args) = crate::cli::parse_from(argv).unwrap().command else { panic!() };
        assert!(plan_cells(&spec, &args.opts, &host()).is_ok(), "other flags are fine");
    }

    #[test]
    fn the_shipped_example_sweep_plans() {
        let spec = SweepSpec::parse("example-sweep.toml", include_str!("../../../deploy/example-sweep.toml")).unwrap();
        let planned = plan_cells(&spec, &RunOpts::default(), &host()).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(planned.len(), 9);
        assert!(planned.iter().all(|p| planned_runs(&p.plan) == 8));
    }

    #[test]
    fn axis_columns_do_not_take_a_runs_own() {
        assert_eq!(axis_column("loss"), "loss");
        assert_eq!(axis_column("cc"), "axis.cc");
    }
}
