//! `ccbench explain DIR`: the `why` lines of a saved result, or of each result under DIR (a
//! sweep's cells, a merge, a preset's conditions), read from result.json without rerunning.
//! A result recorded before the limited-by counters says "not recorded" per algorithm.

use std::path::{Path, PathBuf};

use ccbench::compare::parse;
use ccbench::export::json::RESULT_FILE;

use crate::cli::ExplainArgs;
use crate::error::{precondition, UsageError};

/// How deep under DIR results are looked for (a sweep's `cells/ID/result.json` is 2 down).
const MAX_DEPTH: usize = 4;

fn results_under(dir: &Path, depth: usize, out: &mut Vec<PathBuf>) {
    let file = dir.join(RESULT_FILE);
    if file.is_file() {
        out.push(file);
    }
    if depth == 0 {
        return;
    }
    let Ok(entries) = std::fs::read_dir(dir) else { return };
    let mut dirs: Vec<PathBuf> = entries.filter_map(|e| e.ok()).map(|e| e.path()).filter(|p| p.is_dir() && !p.ends_with("series")).collect();
    dirs.sort();
    for d in dirs {
        results_under(&d, depth - 1, out);
    }
}

pub fn run(args: ExplainArgs) -> anyhow::Result<i32> {
    let mut files = Vec::new();
    if args.dir.is_file() {
        files.push(args.dir.clone());
    } else {
        results_under(&args.dir, MAX_DEPTH, &mut files);
    }
    if files.is_empty() {
        return Err(UsageError::new("explain directory", args.dir.display(), "a directory holding a result.json (a run's, a sweep's or a merge's)").into());
    }
    let many = files.len() > 1;
    for file in &files {
        let shown = file.display().to_string();
        let text = std::fs::read_to_string(file).map_err(|e| precondition(format!("cannot read {shown}: {e}")))?;
        let result = parse(&shown, &text).map_err(|e| precondition(e.to_string()))?;
        if many {
            let rel = file.parent().and_then(|p| p.strip_prefix(&args.dir).ok()).map(|p| p.display().to_string()).unwrap_or_default();
            println!("{}", if rel.is_empty() { ".".to_string() } else { rel });
        }
        let verdict = result.verdict_short();
        println!("  verdict  {verdict}");
        print!("{}", ccbench::export::why::lines(&result));
    }
    Ok(0)
}
