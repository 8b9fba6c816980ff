//! `ccbench sweep`: this task's share of the work. It joins (or starts) the sweep's plan in OUT,
//! then takes cells from the shared queue one at a time (`--parallel` at once) until none is left
//! that nobody holds; each cell is tried up to 1 + `--retries` times, every attempt's lines in
//! the cell's `log`.

use std::collections::VecDeque;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use anyhow::Context;

use super::grid::{plan_cells, shard_cells, spec_hash, PlannedCell, Shard, SweepSpec};
use super::queue::{CellState, Claim, Held, Keeper, Queue, DEFAULT_LEASE};
use super::store::{
    grid_cell, status_name, write_index, AxisRecord, CellRecord, GridCell, SpecRecord, SweepMeta, CELL_SCHEMA, LOG_FILE, REVISION, SCHEMA, SWEEP_FILE, VERSION,
};
use super::SweepArgs;
use crate::error::{precondition, require_root};
use crate::progress::{planned_runs, Bar, RunObserver};
use ccbench::experiment::{self, Observer, Slot};
use ccbench::results::{RunRecord, Status};

/// Cells that fail one after another, with none complete, before a task stops taking more: a
/// node that cannot run anything must not mark the whole plan failed.
const FAILED_IN_A_ROW: usize = 3;

/// This task's name in claims and logs: `--worker`, else what the scheduler says, else host and
/// process.
fn worker_name(given: Option<&str>) -> String {
    if let Some(w) = given {
        return w.to_string();
    }
    let var = |v: &str| std::env::var(v).ok().filter(|s| !s.is_empty());
    let host = super::names::host_name();
    let pid = std::process::id();
    match (var("SLURM_JOB_ID"), var("JOB_COMPLETION_INDEX")) {
        (Some(job), _) => format!("slurm job {job}{} on {host} (pid {pid})", var("SLURM_ARRAY_TASK_ID").map(|t| format!(" task {t}")).unwrap_or_default()),
        (None, Some(index)) => format!("job index {index} on {host} (pid {pid})"),
        _ => format!("{host} (pid {pid})"),
    }
}

pub fn run(args: SweepArgs) -> anyhow::Result<i32> {
    let spec = SweepSpec::load(&args.spec)?;
    let available = crate::host::usable_algorithms();
    let planned = plan_cells(&spec, &args.opts, &available)?;
    let hash = spec_hash(&planned);
    let shard: Option<Shard> = args.shard;
    if let (Some(s), Some(n)) = (shard, args.shards) {
        if n != s.count {
            return Err(crate::error::UsageError::new("--shards", n, format!("the N of --shard {s}, or no --shards")).into());
        }
    }
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
        shard: None,
        merged_from: Vec::new(),
    };
    let axes_text: Vec<String> = spec.axes.iter().map(|a| format!("{} ({})", a.name, a.values.len())).collect();
    let shard_text = shard.map(|s| format!("; shard {s} (0-based) takes {} of them", mine.len())).unwrap_or_default();
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
        return Err(precondition("a shard needs --out: the results directory every task of the sweep shares").into());
    }
    require_root("sweep")?;
    let out = args.out.clone().unwrap_or_else(|| {
        let stem = args.spec.file_stem().map(|s| s.to_string_lossy().to_string()).unwrap_or_else(|| "sweep".into());
        crate::run::default_out(&crate::run::slug(&stem))
    });
    let lease = args.lease_secs.map_or(DEFAULT_LEASE, |s| Duration::from_secs(s.into()));
    let queue = Arc::new(Queue::open(&out, &meta, lease)?);
    if !out.join(SWEEP_FILE).exists() {
        write_index(&out, &meta, &meta.grid.iter().collect::<Vec<_>>(), false)?;
    }
    let worker = worker_name(args.worker.as_deref());

    // A --retry-failed task runs again the cells that had failed when it started.
    let retry_before = args.retry_failed.then(std::time::SystemTime::now);
    let standing = Standing::of(&queue, mine.iter().map(|&i| planned[i].cell.id.as_str()), retry_before);
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
    if let Some(line) = standing.line() {
        println!("{line}");
    }
    println!(
        "Results   {} ({} at once as {worker}; any number of tasks may share it: run again with --out {} to resume)",
        out.display(),
        args.parallel,
        out.display()
    );

    let stop = crate::host::install_stop()?;
    let keeper = Keeper::start(queue.clone(), stop.clone());
    let todo: Vec<usize> = mine.iter().copied().filter(|&i| !matches!(queue.state(&planned[i].cell.id), CellState::Done)).collect();
    let bar = Bar::new(todo.iter().map(|&i| planned_runs(&planned[i].plan)).sum());
    let ctx = Task {
        queue: &queue,
        keeper: &keeper,
        bar: &bar,
        stop: &stop,
        worker: &worker,
        retries: args.retries,
        retry_before,
        total: mine.len(),
        counter: AtomicUsize::new(standing.done),
        failed_in_a_row: AtomicUsize::new(0),
        gave_up: AtomicBool::new(false),
        failure: Mutex::new(None),
        statuses: Mutex::new(Vec::new()),
        landed: Mutex::new(Vec::new()),
        pending: Mutex::new(Pass { left: todo.into(), held_elsewhere: Vec::new(), claimed: false }),
    };
    std::thread::scope(|s| {
        for _ in 0..args.parallel {
            s.spawn(|| ctx.work(&planned));
        }
    });
    bar.finish();
    if let Some(e) = ctx.failure.into_inner().ok().flatten() {
        return Err(e);
    }
    let interrupted = stop.load(Ordering::SeqCst);
    let index = write_index(&out, &meta, &meta.grid.iter().collect::<Vec<_>>(), interrupted)?;
    println!("\n{}", index.table);
    println!("Results   {} (every run: {})", out.join(SWEEP_FILE).display(), out.join(ccbench::export::csv::RUNS_FILE).display());
    // --junit reports every cell of this task's share that has a result (run now or before);
    // the exit status answers only for the cells this task ran: a task that ran none has
    // nothing to answer for, and each cell is answered for once, by the task that ran it.
    let judged: Vec<(String, &ccbench::results::ExperimentResult)> =
        index.results.iter().filter(|(g, _)| mine.iter().any(|&i| planned[i].cell.id == g.id)).map(|(g, r)| (g.label.clone(), r)).collect();
    if let Some(junit) = &args.junit {
        let suites: Vec<ccbench::export::junit::Suite> = judged.iter().map(|(name, result)| ccbench::export::junit::Suite { name, result }).collect();
        ccbench::export::junit::write(junit, &suites)?;
    }
    let landed = ctx.landed.into_inner().unwrap_or_default();
    let ran: Vec<(String, &ccbench::results::ExperimentResult)> =
        index.results.iter().filter(|(g, _)| landed.contains(&g.id)).map(|(g, r)| (g.label.clone(), r)).collect();
    let not_passed = expectations_not_passed(&ran);
    if !not_passed.is_empty() {
        println!("\nExpectations not passed in the cells this task ran ({}):", not_passed.len());
        for line in &not_passed {
            println!("  {line}");
        }
    }
    let elsewhere =
        judged.iter().filter(|(label, r)| !ran.iter().any(|(l, _)| l == label) && !expectations_not_passed(&[(label.clone(), *r)]).is_empty()).count();
    if elsewhere > 0 {
        println!("\n{elsewhere} cell(s) run before or by other tasks did not pass their expectations either (their tasks' exit status said so; sweep.json has every cell's).");
    }
    let statuses = ctx.statuses.into_inner().unwrap_or_default();
    if ctx.gave_up.load(Ordering::SeqCst) {
        eprintln!(
            "ccbench: {FAILED_IN_A_ROW} cells failed one after another on this host and none completed: this task stopped taking cells (see ccbench status {} and the cells' logs)",
            out.display()
        );
    }
    Ok(if interrupted || statuses.contains(&Status::Interrupted) {
        130
    } else if statuses.contains(&Status::Failed) || ctx.gave_up.load(Ordering::SeqCst) {
        1
    } else if !not_passed.is_empty() {
        EXPECTATIONS_NOT_PASSED
    } else {
        0
    })
}

/// The exit status of a task whose cells all ran, when an expectation of one of them failed or
/// stayed undecided: its own, so that a scheduler can tell it from a cell that could not run
/// (1), which is worth running again, while this is a result.
pub const EXPECTATIONS_NOT_PASSED: i32 = 4;

/// Where this task's cells stand as it starts, for its first lines.
struct Standing {
    done: usize,
    /// Failed, and not run again by this task (no `--retry-failed`, or failed after it started).
    failed: usize,
    /// Failed before this task started, which it runs again (`--retry-failed`).
    retried: usize,
    /// Held by another task under a live lease.
    held: usize,
    /// Missing, or held under a lapsed lease: this task runs them.
    to_run: usize,
}

impl Standing {
    fn of<'a>(queue: &Queue, ids: impl Iterator<Item = &'a str>, retry_before: Option<std::time::SystemTime>) -> Standing {
        let mut s = Standing { done: 0, failed: 0, retried: 0, held: 0, to_run: 0 };
        for id in ids {
            match queue.state(id) {
                CellState::Done => s.done += 1,
                CellState::Failed(_) if queue.failed_for(id, retry_before) => s.failed += 1,
                CellState::Failed(_) => s.retried += 1,
                CellState::Running { lapsed: false, .. } => s.held += 1,
                CellState::Running { .. } | CellState::Missing => s.to_run += 1,
            }
        }
        s
    }

    /// "Resuming …" when anything was there before; `None` for a new sweep.
    fn line(&self) -> Option<String> {
        if self.done + self.failed + self.retried + self.held == 0 {
            return None;
        }
        let mut parts = vec![format!("{} cell(s) finished before", self.done)];
        if self.failed > 0 {
            parts.push(format!("{} failed (not run again without {})", self.failed, super::status::RETRY_HINT));
        }
        if self.held > 0 {
            parts.push(format!("{} held by other tasks", self.held));
        }
        let to_run = self.to_run + self.retried;
        let retried = if self.retried > 0 { format!(" ({} of them failed before: --retry-failed)", self.retried) } else { String::new() };
        parts.push(format!("{to_run} to run{retried}"));
        Some(format!("Resuming  {}", parts.join(", ")))
    }
}

/// One line per expectation × algorithm that failed or stayed undecided, led by its cell's
/// label: what makes the sweep exit 1, as `run` does for one experiment.
fn expectations_not_passed(cells: &[(String, &ccbench::results::ExperimentResult)]) -> Vec<String> {
    use ccbench_stats::expectation::Judgement;
    cells.iter().flat_map(|(label, r)| r.expectations.iter().filter(|e| e.result != Judgement::Pass).map(move |e| format!("{label}: {}", e.line()))).collect()
}

/// The cells this task may still take: a pass goes through `left`; those another task held are
/// looked at again in another pass, as long as the last pass took something (a lease may lapse
/// meanwhile). A task ends when a pass takes nothing.
struct Pass {
    left: VecDeque<usize>,
    held_elsewhere: Vec<usize>,
    claimed: bool,
}

struct Task<'a> {
    queue: &'a Queue,
    keeper: &'a Keeper,
    bar: &'a Bar,
    stop: &'a AtomicBool,
    worker: &'a str,
    retries: u32,
    retry_before: Option<std::time::SystemTime>,
    total: usize,
    counter: AtomicUsize,
    failed_in_a_row: AtomicUsize,
    gave_up: AtomicBool,
    failure: Mutex<Option<anyhow::Error>>,
    statuses: Mutex<Vec<Status>>,
    /// The cells whose result this task landed.
    landed: Mutex<Vec<String>>,
    pending: Mutex<Pass>,
}

/// How a cell's attempts ended for this task.
enum Outcome {
    Landed(Status),
    /// Another task's result is the cell's (this task's lease lapsed, or both ran it).
    NotOurs,
    Interrupted,
}

impl Task<'_> {
    fn next_candidate(&self) -> Option<usize> {
        let mut p = self.pending.lock().ok()?;
        if p.left.is_empty() && p.claimed && !p.held_elsewhere.is_empty() {
            let again = std::mem::take(&mut p.held_elsewhere);
            p.left.extend(again);
            p.claimed = false;
        }
        p.left.pop_front()
    }

    fn should_stop(&self) -> bool {
        self.stop.load(Ordering::SeqCst) || self.gave_up.load(Ordering::SeqCst) || self.failure.lock().map(|f| f.is_some()).unwrap_or(true)
    }

    fn work(&self, planned: &[PlannedCell]) {
        while !self.should_stop() {
            let Some(i) = self.next_candidate() else { break };
            let p = &planned[i];
            let mut took_over: Option<Claim> = None;
            let held = match self.queue.try_claim(&p.cell.id, self.worker, self.retry_before, &mut took_over) {
                Ok(Some(h)) => Arc::new(h),
                Ok(None) => {
                    if matches!(self.queue.state(&p.cell.id), CellState::Running { .. }) {
                        if let Ok(mut pass) = self.pending.lock() {
                            pass.held_elsewhere.push(i);
                        }
                    }
                    continue;
                }
                Err(e) => {
                    self.fail(e);
                    break;
                }
            };
            if let Ok(mut pass) = self.pending.lock() {
                pass.claimed = true;
            }
            if let Some(c) = &took_over {
                self.bar.eprintln(&format!("  {}: lease of {} on {} lapsed: taken over", p.cell.label, c.worker, c.host));
            }
            self.keeper.hold(held.clone());
            let outcome = self.attempts(p, &held, took_over.as_ref());
            self.keeper.release(&held);
            match outcome {
                Ok(Outcome::Landed(status)) => {
                    if let Ok(mut s) = self.statuses.lock() {
                        s.push(status);
                    }
                    if let Ok(mut l) = self.landed.lock() {
                        l.push(p.cell.id.clone());
                    }
                    if status == Status::Failed {
                        if self.failed_in_a_row.fetch_add(1, Ordering::SeqCst) + 1 >= FAILED_IN_A_ROW {
                            self.gave_up.store(true, Ordering::SeqCst);
                        }
                    } else {
                        self.failed_in_a_row.store(0, Ordering::SeqCst);
                    }
                }
                Ok(Outcome::NotOurs) => {}
                Ok(Outcome::Interrupted) => {
                    if let Ok(mut s) = self.statuses.lock() {
                        s.push(Status::Interrupted);
                    }
                }
                Err(e) => {
                    self.queue.abandon(&held);
                    self.fail(e);
                }
            }
        }
    }

    fn fail(&self, e: anyhow::Error) {
        if let Ok(mut f) = self.failure.lock() {
            f.get_or_insert(e);
        }
    }

    /// Runs the cell until it completes or its attempts are used up, then lands it.
    fn attempts(&self, p: &PlannedCell, held: &Held, took_over: Option<&Claim>) -> anyhow::Result<Outcome> {
        let dir = &held.attempt_dir;
        let log_file = dir.join(LOG_FILE);
        let log = std::fs::OpenOptions::new().create(true).append(true).open(&log_file).with_context(|| format!("creating {}", log_file.display()))?;
        let log = Mutex::new(log);
        let say = |line: &str| {
            if let Ok(mut f) = log.lock() {
                let _ = writeln!(f, "{} {line}", ccbench::provenance::now_rfc3339());
            }
        };
        let header = ccbench::export::text::header(&p.plan.params());
        say(&format!("cell {} ({}), taken by {} on {}", p.cell.id, p.cell.label, self.worker, super::names::host_name()));
        if let Some(c) = took_over {
            say(&format!("took over from {} on {} (pid {}), whose lease lapsed", c.worker, c.host, c.pid));
        }
        for w in ccbench::limits::check_path(&p.plan.path) {
            self.bar.eprintln(&format!("warning: cell {}: {w}", p.cell.label));
            say(&format!("warning: {w}"));
        }
        let attempts = 1 + self.retries;
        for attempt in 1..=attempts {
            clear_except(dir, LOG_FILE)?;
            say(&format!("attempt {attempt} of {attempts}"));
            let mut observer = Logged { inner: self.bar.observer(Some(p.cell.label.clone()), false), log: &log };
            let result = experiment::execute(&p.plan, dir, &held.stop, &mut observer);
            self.bar.experiment_ended(planned_runs(&p.plan), result.runs.len() as u64);
            if held.lost.load(Ordering::SeqCst) {
                say("lease lost (another task took the cell over): this attempt is thrown away");
                self.queue.abandon(held);
                return Ok(Outcome::NotOurs);
            }
            if result.status == Status::Interrupted || self.stop.load(Ordering::SeqCst) {
                say("interrupted: the cell goes back to the queue");
                self.queue.abandon(held);
                return Ok(Outcome::Interrupted);
            }
            crate::run::write_outputs(&result, dir, &header)?;
            let error = (result.status == Status::Failed)
                .then(|| result.runs.iter().rev().find_map(|r| r.error.clone()).unwrap_or_else(|| "no run completed".into()))
                .map(|e| e.lines().next().unwrap_or_default().to_string());
            if let Some(e) = &error {
                say(&format!("attempt {attempt} failed: {e}"));
                if attempt < attempts {
                    self.bar.eprintln(&format!("  {}: attempt {attempt} of {attempts} failed ({e}): trying again", p.cell.label));
                    continue;
                }
            }
            let (median, verdict) = ccbench::export::text::condition_row(&result);
            let suspect_runs = result.runs.iter().filter(|r| !r.suspect.is_empty()).count();
            let record = CellRecord {
                schema: CELL_SCHEMA.into(),
                id: p.cell.id.clone(),
                label: p.cell.label.clone(),
                parameters: p.cell.parameters.iter().cloned().collect(),
                spec_hash: self.queue.hash.clone(),
                status: status_name(result.status),
                median,
                verdict,
                runs: result.runs.len(),
                suspect_runs,
                attempts: attempt,
                host: super::names::host_name(),
                worker: self.worker.to_string(),
                error: error.clone(),
            };
            say(&format!("finished: {}", record.status));
            drop(observer);
            super::store::write_atomic(&dir.join(super::store::CELL_FILE), serde_json::to_string_pretty(&record)?)?;
            if !self.queue.land(held)? {
                self.bar.eprintln(&format!("  {}: another task's result got there first; this one is thrown away", p.cell.label));
                return Ok(Outcome::NotOurs);
            }
            let n = self.counter.fetch_add(1, Ordering::SeqCst) + 1;
            let outcome = match &error {
                None => format!("{}; {}", record.median, record.verdict),
                Some(e) => format!("failed after {attempt} attempt(s): {e} (log: {})", self.queue.cell_dir(&p.cell.id).join(LOG_FILE).display()),
            };
            let suspect =
                if suspect_runs > 0 { format!(" ({suspect_runs} of {} runs flagged suspect: see its result.json)", record.runs) } else { String::new() };
            self.bar.stdout(&format!("  [{n}/{}] {}: {outcome}{suspect}\n", self.total, p.cell.label));
            return Ok(Outcome::Landed(result.status));
        }
        unreachable!("the last attempt lands or returns")
    }
}

/// Empties an attempt's directory for the next attempt, keeping its log.
fn clear_except(dir: &Path, keep: &str) -> anyhow::Result<()> {
    for entry in std::fs::read_dir(dir).with_context(|| format!("reading {}", dir.display()))?.flatten() {
        if entry.file_name() == keep {
            continue;
        }
        let path: PathBuf = entry.path();
        let removed = if entry.file_type().is_ok_and(|t| t.is_dir()) { std::fs::remove_dir_all(&path) } else { std::fs::remove_file(&path) };
        removed.with_context(|| format!("clearing {}", path.display()))?;
    }
    Ok(())
}

/// The progress bar's observer, each run also written to the cell's log.
struct Logged<'a> {
    inner: RunObserver,
    log: &'a Mutex<std::fs::File>,
}

impl Observer for Logged<'_> {
    fn run_started(&mut self, index: usize, total: usize, slot: &Slot) {
        self.inner.run_started(index, total, slot);
    }

    fn run_finished(&mut self, index: usize, total: usize, record: &RunRecord) {
        self.inner.run_finished(index, total, record);
        let what = match (&record.metrics, record.status) {
            (Some(m), Status::Complete) => format!("goodput {}", ccbench::units::fmt_rate(m.goodput_bps)),
            (_, Status::Interrupted) => "interrupted".into(),
            _ => format!("failed: {}", record.error.clone().unwrap_or_default()),
        };
        if let Ok(mut f) = self.log.lock() {
            let _ = writeln!(f, "{} run {}/{}: {} {what}", ccbench::provenance::now_rfc3339(), index + 1, total, record.cc);
        }
    }
}
