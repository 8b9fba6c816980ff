//! `ccbench status OUT`: where a sweep stands, from its queue: cells done, running (by whom, and
//! how long since the lease was renewed), failed (the error's first line) and missing. Exit 0
//! when every cell is done, 1 otherwise: a merge job can wait on it.

use serde_json::{json, Value};

use super::queue::{CellState, Queue};
use super::store::{CELLS_DIR, LOG_FILE};
use super::StatusArgs;
use crate::error::UsageError;

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
            CellState::Running { claim, age, lapsed } => running.push(json!({
                "id": g.id,
                "worker": claim.as_ref().map(|c| c.worker.clone()),
                "host": claim.as_ref().map(|c| c.host.clone()),
                "pid": claim.as_ref().map(|c| c.pid),
                "since": claim.as_ref().map(|c| c.since.clone()),
                "lease_age_s": age.as_secs_f64(),
                "lease_s": claim.as_ref().map(|c| c.lease_secs),
                "lapsed": lapsed,
            })),
            CellState::Missing => missing.push(json!(g.id)),
        }
    }
    let complete = done.len() == plan.grid.len();
    if args.json {
        let report = json!({
            "schema": "ccbench.sweep-status.v1",
            "out": args.out.display().to_string(),
            "description": plan.description,
            "spec_hash": plan.spec.hash,
            "cells": plan.grid.len(),
            "complete": complete,
            "counts": { "done": done.len(), "running": running.len(), "failed": failed.len(), "missing": missing.len() },
            "done": done,
            "running": running,
            "failed": failed,
            "missing": missing,
        });
        println!("{}", serde_json::to_string_pretty(&report)?);
        return Ok(if complete { 0 } else { 1 });
    }
    let what = if plan.description.is_empty() { plan.spec.file.clone() } else { format!("{} ({})", plan.description, plan.spec.file) };
    println!("Sweep     {what}: {} cells, spec {}, in {}", plan.grid.len(), plan.spec.hash, args.out.display());
    println!("Done      {}", done.len());
    println!("Running   {}", running.len());
    for r in &running {
        let who = match (r["worker"].as_str(), r["host"].as_str()) {
            (Some(w), Some(h)) if w.contains(h) => w.to_string(),
            (Some(w), Some(h)) => format!("{w} on {h}"),
            _ => "(claim being written)".into(),
        };
        let age = r["lease_age_s"].as_f64().unwrap_or(0.0);
        let lapsed = if r["lapsed"] == Value::Bool(true) { ": lease lapsed, the next task to look takes it over" } else { "" };
        println!("  {}  {who}, lease renewed {age:.0}s ago{lapsed}", id(r));
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
    if complete {
        println!("\nComplete: every cell is done (ccbench merge {} --out DIR puts them together).", args.out.display());
        Ok(0)
    } else {
        let left = plan.grid.len() - done.len();
        println!("\nIncomplete: {left} of {} cells not done. Any task started with the same spec and --out takes them.", plan.grid.len());
        Ok(1)
    }
}

fn id(v: &Value) -> &str {
    v["id"].as_str().unwrap_or_default()
}
