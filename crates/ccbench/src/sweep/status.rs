//! `ccbench status OUT`: where a sweep stands, from its queue: cells done, running (by whom, how
//! long since the lease was renewed, when it lapses, and whether the holder is seen gone), failed
//! (the error's first line) and missing. The exit status tells a merge job what to do:
//!
//! - 0 **complete**: every cell is done;
//! - 1 **in progress**: not done, and some task holds a cell under a live lease;
//! - 3 **stuck**: not done, and no task holds a live lease: nothing running can finish it (only
//!   a new task can: any task for missing and lapsed cells, one with `--retry-failed` for
//!   failed ones).
//!
//! (2 stays a refusal: OUT is not a sweep's, or has no plan yet.)

use serde_json::{json, Value};

use super::queue::{CellState, Holder, Queue};
use super::store::{CELLS_DIR, LOG_FILE};
use super::StatusArgs;
use crate::error::UsageError;

/// `ccbench status`'s exit statuses.
pub const COMPLETE: i32 = 0;
pub const IN_PROGRESS: i32 = 1;
pub const STUCK: i32 = 3;

/// What scheduler knob runs failed cells again, for the messages.
pub const RETRY_HINT: &str = "--retry-failed (RETRY_FAILED=1 with deploy/slurm/sweep.sbatch or the Kubernetes job)";

fn holder_word(h: Holder) -> &'static str {
    match h {
        Holder::Alive => "alive",
        Holder::Gone => "gone",
        Holder::Unknown => "unknown",
    }
}

pub fn status(args: StatusArgs) -> anyhow::Result<i32> {
    let (queue, plan) = Queue::read(&args.out).map_err(|e| UsageError::new("status directory", args.out.display(), format!("a sweep's OUT: {e}")))?;
    let (mut done, mut running, mut failed, mut missing) = (Vec::new(), Vec::new(), Vec::new(), Vec::new());
    for g in &plan.grid {
        match queue.state(&g.id) {
            CellState::Done => done.push(json!(g.id)),
            CellState::Failed(r) => failed.push(json!({
                "id": g.id,
                "error": r.error.clone().unwrap_or_default(),
                "attempts": r.attempts,
                "host": r.host,
                "worker": r.worker,
                "log": format!("{CELLS_DIR}/{}/{LOG_FILE}", g.id),
            })),
            CellState::Running { claim, age, lapsed, holder } => {
                let lease = claim.as_ref().map(|c| c.lease_secs as f64);
                running.push(json!({
                    "id": g.id,
                    "worker": claim.as_ref().map(|c| c.worker.clone()),
                    "host": claim.as_ref().map(|c| c.host.clone()),
                    "pid": claim.as_ref().map(|c| c.pid),
                    "since": claim.as_ref().map(|c| c.since.clone()),
                    "lease_age_s": age.as_secs_f64(),
                    "lease_s": claim.as_ref().map(|c| c.lease_secs),
                    // Seconds until the lease lapses unless renewed (negative: lapsed that long ago).
                    "lease_lapses_in_s": lease.map(|l| l - age.as_secs_f64()),
                    "lapsed": lapsed,
                    "holder": holder_word(holder),
                }))
            }
            CellState::Missing => missing.push(json!(g.id)),
        }
    }
    let complete = done.len() == plan.grid.len();
    let live = running.iter().filter(|r| r["lapsed"] != Value::Bool(true)).count();
    let (state, code) = if complete {
        ("complete", COMPLETE)
    } else if live > 0 {
        ("in_progress", IN_PROGRESS)
    } else {
        ("stuck", STUCK)
    };
    if args.json {
        let report = json!({
            "schema": "ccbench.sweep-status.v1",
            "out": args.out.display().to_string(),
            "description": plan.description,
            "spec_hash": plan.spec.hash,
            "cells": plan.grid.len(),
            "complete": complete,
            "state": state,
            "counts": { "done": done.len(), "running": running.len(), "failed": failed.len(), "missing": missing.len() },
            "done": done,
            "running": running,
            "failed": failed,
            "missing": missing,
        });
        println!("{}", serde_json::to_string_pretty(&report)?);
        return Ok(code);
    }
    let what = if plan.description.is_empty() { plan.spec.file.clone() } else { format!("{} ({})", plan.description, plan.spec.file) };
    println!("Sweep     {what}: {} cells, spec {}, in {}", plan.grid.len(), plan.spec.hash, args.out.display());
    println!("Done      {}", done.len());
    println!("Running   {}", running.len());
    for r in &running {
        println!("  {}  {}", id(r), running_line(r));
    }
    println!("Failed    {}", failed.len());
    for f in &failed {
        println!(
            "  {}  after {} attempt(s) on {}: {} (log: {})",
            id(f),
            f["attempts"],
            f["host"].as_str().unwrap_or("?"),
            f["error"].as_str().unwrap_or(""),
            f["log"].as_str().unwrap_or("")
        );
    }
    println!("Missing   {}", missing.len());
    for m in &missing {
        println!("  {}", m.as_str().unwrap_or_default());
    }
    let n = plan.grid.len();
    let left = n - done.len();
    let lapsed = running.len() - live;
    // The last line is the verdict, whole on one line (a merge job logs it while it waits).
    let failed_note = if failed.is_empty() { String::new() } else { format!("; {} failed: only a task with {RETRY_HINT} runs them again", failed.len()) };
    println!();
    match code {
        COMPLETE => println!("Complete: every cell is done (ccbench merge {} --out DIR puts them together).", args.out.display()),
        IN_PROGRESS => println!("In progress: {left} of {n} cells not done, {live} held under a live lease{failed_note}."),
        _ => {
            let takeable = missing.len() + lapsed;
            let others =
                if takeable > 0 { format!("; {takeable} missing or lapsed: any task started with the same spec and --out takes them") } else { String::new() };
            println!("Stuck: {left} of {n} cells not done and no task holds a live lease, so nothing running can finish the sweep{others}{failed_note}.");
        }
    }
    Ok(code)
}

/// A running cell's holder and lease, as a line: when it was renewed, when it lapses, and what
/// is known of the holder's process.
fn running_line(r: &Value) -> String {
    let who = match (r["worker"].as_str(), r["host"].as_str()) {
        (Some(w), Some(h)) if w.contains(h) => w.to_string(),
        (Some(w), Some(h)) => format!("{w} on {h}"),
        _ => return "(claim being written)".into(),
    };
    let age = r["lease_age_s"].as_f64().unwrap_or(0.0);
    let left = r["lease_lapses_in_s"].as_f64().unwrap_or(0.0);
    let pid = r["pid"].as_u64().unwrap_or(0);
    let lease = match (r["holder"].as_str(), left > 0.0) {
        (Some("gone"), _) => format!("lease renewed {age:.0}s ago; its process (pid {pid}) is gone: lapsed, the next task to look takes it over"),
        (_, false) => format!("lease renewed {age:.0}s ago, lapsed {:.0}s ago: the next task to look takes it over", -left),
        (Some("alive"), true) => format!("lease renewed {age:.0}s ago, lapses in {left:.0}s unless renewed; its process (pid {pid}) is running"),
        _ => format!("lease renewed {age:.0}s ago, lapses in {left:.0}s unless renewed (its process is out of sight from here)"),
    };
    format!("{who}, {lease}")
}

fn id(v: &Value) -> &str {
    v["id"].as_str().unwrap_or_default()
}
