//! `ccbench run`: validate everything, then run the experiment, then write and print.

use std::path::{Path, PathBuf};
use std::sync::atomic::AtomicBool;

use anyhow::Context;

use crate::cli::{Layer, RunArgs, RunOpts};
use crate::error::{precondition, require_root, UsageError};
use ccbench::experiment::{self, Plan};
use ccbench::results::{ExperimentResult, Status};

use crate::host::{install_stop, usable_algorithms};
use crate::progress::{planned_runs, Bar};

/// The plan of a run from its flags, layered: every flag checked against the others and the
/// algorithms against this host's, before anything is created.
pub fn plan(opts: RunOpts) -> Result<Plan, UsageError> {
    crate::spec::resolve(opts, &usable_algorithms()).map(Plan::from)
}

pub fn default_out(label: &str) -> PathBuf {
    let now = time::OffsetDateTime::now_utc();
    let stamp = format!("{:04}{:02}{:02}-{:02}{:02}{:02}", now.year(), now.month() as u8, now.day(), now.hour(), now.minute(), now.second());
    PathBuf::from("results").join(format!("{stamp}-{label}"))
}

/// `--secret-file` is for `--remote`: refused without it, before anything else (a twin's
/// arguments too).
pub fn check_secret_file(args: &RunArgs) -> Result<(), UsageError> {
    if args.remote.is_none() && args.secret_file.is_some() {
        return Err(UsageError::new(
            "--secret-file",
            args.secret_file.as_deref().unwrap_or(Path::new("")).display(),
            "--remote with it (the secret is for a remote ccbench serve)",
        ));
    }
    Ok(())
}

/// `ccbench run` without `--twin` (which is [`crate::twin::run`], over this module's pieces).
pub fn run(mut args: RunArgs) -> anyhow::Result<i32> {
    crate::error::refuse_bad_test_defects()?;
    if let Some(file) = &args.path {
        // The file's path flags sit between the command line and any preset.
        args.opts = args.opts.over(crate::presets::path_file(file)?);
    }
    if let Some(spec) = &args.preset {
        if let Some(r) = &args.remote {
            return Err(UsageError::new("--remote", &r.label, "no --preset with it (a preset's conditions are emulated paths)").into());
        }
        return run_preset(spec, &args);
    }
    let plan = match &args.remote {
        Some(remote) => remote_plan(&args, remote)?,
        None => {
            let plan = plan(args.opts.clone())?;
            require_root("run")?;
            plan
        }
    };
    let out = args.out.clone().unwrap_or_else(|| default_out(&plan.names().join("-")));
    check_outputs(&out, args.junit.as_deref())?;
    let stop = install_stop()?;
    let bar = Bar::new(planned_runs(&plan));
    let (result, code) = run_plan(&plan, &out, &stop, &bar)?;
    bar.finish();
    if args.qlog {
        for file in crate::conform::write_qlogs(&result, &out)? {
            eprintln!("qlog: {}", file.display());
        }
    }
    if let Some(junit) = &args.junit {
        ccbench::export::junit::write(junit, &[ccbench::export::junit::Suite { name: "run", result: &result }])?;
    }
    if args.json {
        println!("{}", ccbench::export::json::to_string(&result)?);
    }
    Ok(code)
}

/// `--out` and `--junit` checked before the first run, so a typo costs a line, not an
/// experiment's worth of waiting: the results directory is created now (it must be, for the
/// run to write into), and the JUnit file's directory must exist. Both are the last checks, so
/// a directory made here is never left behind by a refused flag.
pub fn check_outputs(out: &Path, junit: Option<&Path>) -> Result<(), UsageError> {
    if let Some(junit) = junit {
        let dir = junit.parent().filter(|d| !d.as_os_str().is_empty()).unwrap_or(Path::new("."));
        if junit.is_dir() || !dir.is_dir() {
            return Err(UsageError::new("--junit", junit.display(), "a file path in an existing directory (the JUnit XML is written there when the run ends)"));
        }
    }
    std::fs::create_dir_all(out).map_err(|e| UsageError::new("--out", out.display(), format!("a directory ccbench can create and write into ({e})")))
}

/// The plan of a run over a real path: the flags checked as for an emulated run (the
/// algorithms against the host that sends), then every test checked by the server itself.
pub fn remote_plan(args: &RunArgs, remote: &crate::values::RemoteAddr) -> Result<Plan, UsageError> {
    if args.opts.path != crate::cli::PathOpts::default() {
        return Err(UsageError::new("--remote", &remote.label, "no emulated-path flags (--rate, --rtt, --loss, --buffer, …) with it: the path is real"));
    }
    let secret_file = args.secret_file.as_deref().ok_or_else(|| UsageError::new("--remote", &remote.label, "--secret-file with it"))?;
    // Chromium runs under ccbench's reaper, in a PID namespace of its own, so nothing it starts
    // outlives the run: that takes root here too.
    // SAFETY: geteuid has no preconditions.
    if args.opts.workload.is_some_and(|k| k.name() == "browser") && unsafe { libc::geteuid() } != 0 {
        return Err(precondition(
            "ccbench run --workload browser needs root, over --remote too (Chromium runs under ccbench's reaper in a PID namespace of its own); run it with sudo",
        ));
    }
    let secret = crate::serve::load_secret(secret_file)?;
    let (mut client, remote_facts) = crate::serve::preflight(remote, secret)?;
    let upload = args.opts.direction == Some(crate::values::DirectionArg::Upload);
    // The sending end's algorithms: this host's for an upload, the server's for a download.
    let available = if upload { usable_algorithms() } else { remote_facts.facts.congestion_controls.clone() };
    let mut plan = crate::spec::resolve(args.opts.clone(), &available).map(Plan::from).map_err(|e| {
        if e.flag == "--cc" && !upload {
            UsageError { allowed: format!("an algorithm the remote ccbench serve has: {}", available.join(", ")), ..e }
        } else {
            e
        }
    })?;
    // serve runs kernel TCP and QUIC tests, but not one test mixing the two.
    if let ccbench::run_workload::WorkloadSpec::Bulk(b) = &plan.workload {
        // The test request carries no socket buffer sizes: serve's end would keep its
        // defaults, so the flag would hold one end only, or neither. Refused, not ignored.
        for (flag, bytes) in [("--rcvbuf", b.knobs.rcvbuf), ("--sndbuf", b.knobs.sndbuf)] {
            if let Some(n) = bytes {
                return Err(UsageError::new(flag, format!("{n} bytes"), "no socket buffer size with --remote (ccbench serve keeps its sockets' defaults)"));
            }
        }
        let quic = b.mix.iter().filter(|f| f.cc.is_quic()).count();
        if quic > 0 && quic < b.mix.len() {
            let flows: Vec<String> = b.mix.iter().map(|f| f.cc.to_string()).collect();
            return Err(UsageError::new(
                "--flows",
                flows.join(","),
                "flows all over QUIC or all over kernel TCP with --remote (ccbench serve runs no mix of the two)",
            ));
        }
    }
    if !plan.path.access.is_empty() {
        return Err(UsageError::new("--flows", &plan.ccs[0], "no @RTT with --remote (a real path's RTTs are its own)"));
    }
    crate::serve::check_plan(&mut client, remote, &plan)?;
    plan.remote = Some(remote_facts);
    // A relative threshold has no emulated path to be relative to over a real one.
    crate::spec::check_expectations(&plan)?;
    Ok(plan)
}

/// Runs one experiment, writes `out/result.json` and the rest, prints the summary; returns the
/// exit code.
fn run_plan(plan: &Plan, out: &Path, stop: &AtomicBool, bar: &Bar) -> anyhow::Result<(ExperimentResult, i32)> {
    std::fs::create_dir_all(out).with_context(|| format!("creating the results directory {}", out.display()))?;
    let header = ccbench::export::text::header(&plan.params());
    bar.stdout(&header);
    for note in &plan.notes {
        bar.eprintln(&format!("note: {note}"));
    }
    if plan.remote.is_none() {
        for w in ccbench::limits::check_path(&plan.path) {
            bar.eprintln(&format!("warning: {w}"));
        }
    }
    let result = experiment::execute(plan, out, stop, &mut bar.observer(None, true));
    bar.experiment_ended(planned_runs(plan), result.runs.len() as u64);
    // A QUIC receiver running another algorithm than its sender (scenario 5's mix-up, or
    // --quic-receiver-cc on purpose) is said where it is seen, not only in result.json.
    for w in &result.provenance.controller_mismatches {
        bar.eprintln(&format!("warning: {w}"));
    }
    let summary = write_outputs(&result, out, &header)?;
    bar.stdout(&summary);
    let code = exit_code(&result);
    Ok((result, code))
}

/// 0 when complete and every expectation passed; 1 when a run failed or an expectation failed
/// or stayed undecided; 130 when interrupted.
pub fn exit_code(result: &ExperimentResult) -> i32 {
    match result.status {
        Status::Complete if result.expectations.iter().all(|e| e.result == ccbench_stats::expectation::Judgement::Pass) => 0,
        Status::Complete => 1,
        Status::Interrupted => 130,
        Status::Failed => 1,
    }
}

/// Writes an experiment's files into `out` (result.json, runs.csv, report.html; its series are
/// there already) and returns its summary text, as printed after a run.
pub fn write_outputs(result: &ExperimentResult, out: &Path, header: &str) -> anyhow::Result<String> {
    ccbench::export::json::write(result, out)?;
    ccbench::export::csv::write(out, &[ccbench::export::csv::Experiment { condition: None, dir: ".", result }])?;
    let summary = ccbench::export::text::summary(result, Some(out));
    let html = out.join("report.html");
    std::fs::write(&html, ccbench_report::render(&ccbench_report::ReportData::read(result, &format!("{header}{summary}"), out)))
        .with_context(|| format!("writing {}", html.display()))?;
    Ok(summary)
}

pub fn slug(s: &str) -> String {
    let mut out: String = s.chars().map(|c| if c.is_ascii_alphanumeric() { c.to_ascii_lowercase() } else { '-' }).collect();
    while out.contains("--") {
        out = out.replace("--", "-");
    }
    out.trim_matches('-').to_string()
}

/// `run --preset`: plan every condition first (bad input anywhere creates nothing), then run
/// them in turn and print a table across them.
fn run_preset(spec: &str, args: &RunArgs) -> anyhow::Result<i32> {
    let preset = crate::presets::load(spec)?;
    let mut plans = Vec::new();
    for c in &preset.conditions {
        // The command line over the condition (itself over the preset's [defaults]).
        let opts = args.opts.clone().over(c.opts.clone());
        let p = plan(opts).map_err(|e| UsageError { flag: format!("{} (preset {}, condition {:?})", e.flag, preset.name, c.name), ..e })?;
        plans.push((c.name.clone(), p));
    }
    require_root("run")?;
    let out = args.out.clone().unwrap_or_else(|| default_out(&slug(&preset.name)));
    check_outputs(&out, args.junit.as_deref())?;
    let stop = install_stop()?;
    let bar = Bar::new(plans.iter().map(|(_, p)| planned_runs(p)).sum());
    println!("Preset    {}: {}", preset.name, preset.description);
    if let Some(note) = &preset.note {
        println!("          {note}");
    }
    let mut rows = Vec::new();
    let mut code = 0;
    for (i, (name, plan)) in plans.iter().enumerate() {
        bar.stdout(&format!("\n== Condition {}/{}: {name} ==\n", i + 1, plans.len()));
        let dir = out.join(format!("{:02}-{}", i + 1, slug(name)));
        let (result, c) = run_plan(plan, &dir, &stop, &bar)?;
        rows.push((name.clone(), result));
        code = code.max(c);
        if c == 130 {
            break;
        }
    }
    bar.finish();
    let table = ccbench::export::text::across_conditions(&rows);
    println!("\n{table}");
    let dirs: Vec<String> = rows.iter().enumerate().map(|(i, (name, _))| format!("{:02}-{}", i + 1, slug(name))).collect();
    let conditions: Vec<ccbench::export::json::PresetCondition> =
        rows.iter().zip(&dirs).map(|((name, result), dir)| ccbench::export::json::PresetCondition { name, dir, result }).collect();
    ccbench::export::json::write_preset(&out, &preset.name, &preset.description, preset.scenario, &conditions)?;
    let experiments: Vec<ccbench::export::csv::Experiment> =
        rows.iter().zip(&dirs).map(|((name, result), dir)| ccbench::export::csv::Experiment { condition: Some(name), dir, result }).collect();
    ccbench::export::csv::write(&out, &experiments)?;
    if let Some(junit) = &args.junit {
        let suites: Vec<ccbench::export::junit::Suite> = rows.iter().map(|(name, result)| ccbench::export::junit::Suite { name, result }).collect();
        ccbench::export::junit::write(junit, &suites)?;
    }
    let page: Vec<(String, &ccbench::results::ExperimentResult)> = rows.iter().map(|(name, result)| (name.clone(), result)).collect();
    let html = out.join("report.html");
    std::fs::write(&html, ccbench_report::render_conditions(&page)).with_context(|| format!("writing {}", html.display()))?;
    println!("Results   {} (plots across conditions: {})", out.join(ccbench::export::json::PRESET_FILE).display(), html.display());
    Ok(code)
}
