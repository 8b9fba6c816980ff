//! `ccbench run`: validate everything, then run the experiment, then write and print.

use std::io::IsTerminal;
use std::path::PathBuf;
use std::sync::atomic::AtomicBool;
use std::sync::Arc;

use anyhow::Context;
use ccbench_workload::{Amount, BulkSpec, Direction, MixFlow, ObjectMethod, ObjectsSpec, PageModel, PageProtocol, PageSpec};
use clap::Parser;

use ccbench::workloads::WorkloadSpec;

use crate::cli::{DirectionArg, RunArgs, RunsArg, WorkloadArg};
use ccbench::error::{require_root, UsageError};
use ccbench::experiment::{self, Observer, Plan, Runs, Slot};
use ccbench::results::{RunRecord, Status};
use ccbench::units;

const WORKLOAD_PORT: u16 = 5201;

/// The algorithms a run may ask for: those registered with the kernel, and those it would
/// load on first use (a `tcp_*.ko` for the running kernel). What really ran is read back from
/// every sending socket, and a mismatch fails the run.
pub fn usable_algorithms() -> Vec<String> {
    let mut all = ccbench_probe::available_congestion_controls().unwrap_or_default();
    for m in ccbench_probe::loadable_congestion_controls() {
        if !all.contains(&m) {
            all.push(m);
        }
    }
    all
}

/// Checks every flag before anything is created, so bad input leaves nothing behind.
fn check_available(flag: &str, cc: &str, available: &[String]) -> Result<(), UsageError> {
    if available.iter().any(|a| a == cc) {
        Ok(())
    } else {
        Err(UsageError::new(flag, cc, format!("an algorithm available or loadable on this host: {} (see ccbench doctor)", available.join(", "))))
    }
}

/// `--flows`: a count, or a mix such as "bbr:2,cubic:2" (count 1 when omitted).
fn parse_flows(value: &str, stagger_s: f64, available: &[String]) -> Result<(u32, Vec<MixFlow>), UsageError> {
    const ALLOWED: &str = "a number of flows from 1 to 64, or a mix such as bbr:2,cubic:2";
    if let Ok(n) = value.trim().parse::<u32>() {
        if !(1..=64).contains(&n) {
            return Err(UsageError::new("--flows", value, ALLOWED));
        }
        return Ok((n, Vec::new()));
    }
    let mut mix = Vec::new();
    for part in value.split(',').map(str::trim) {
        let (cc, count) = match part.split_once(':') {
            Some((cc, n)) => (cc.trim(), n.trim().parse::<u32>().map_err(|_| UsageError::new("--flows", value, ALLOWED))?),
            None => (part, 1),
        };
        if cc.is_empty() || count == 0 {
            return Err(UsageError::new("--flows", value, ALLOWED));
        }
        check_available("--flows", cc, available)?;
        for _ in 0..count {
            let start_s = stagger_s * mix.len() as f64;
            mix.push(MixFlow { cc: cc.to_string(), start_s });
        }
    }
    if mix.len() > 64 {
        return Err(UsageError::new("--flows", value, ALLOWED));
    }
    Ok((mix.len() as u32, mix))
}

pub fn plan(args: &RunArgs) -> Result<Plan, UsageError> {
    let available = usable_algorithms();
    let stagger_ns = units::parse_duration_ns(&args.stagger).map_err(|a| UsageError::new("--stagger", &args.stagger, a))?;
    let (flows, mix) = parse_flows(&args.flows, stagger_ns as f64 / 1e9, &available)?;
    let mut ccs: Vec<String> = Vec::new();
    match (&args.cc, mix.is_empty()) {
        (Some(cc), false) => return Err(UsageError::new("--cc", cc, "no --cc with a mix in --flows (the mix names the algorithms)")),
        (_, false) => ccs.push(args.flows.replace(' ', "")),
        (cc, true) => {
            let list = cc.clone().unwrap_or_else(|| "bbr,cubic".to_string());
            for cc in list.split(',').map(str::trim) {
                if cc.is_empty() {
                    return Err(UsageError::new("--cc", &list, "a comma-separated list of algorithms such as bbr,cubic"));
                }
                check_available("--cc", cc, &available)?;
                if ccs.iter().any(|c| c == cc) {
                    return Err(UsageError::new("--cc", &list, "each algorithm once"));
                }
                ccs.push(cc.to_string());
            }
        }
    }
    if stagger_ns > 0 && mix.is_empty() {
        return Err(UsageError::new("--stagger", &args.stagger, "--stagger only with a mix in --flows, such as bbr:1,cubic:1"));
    }
    let min_runs = ccbench_stats::min_runs_for_significance(experiment::ALPHA) as u32;
    let runs = match args.runs {
        RunsArg::Fixed(n) if ccs.len() > 1 && n < min_runs => {
            return Err(UsageError::new(
                "--runs",
                n,
                format!("at least {min_runs} runs per algorithm to compare algorithms (with fewer, no rank test can reach p < {})", experiment::ALPHA),
            ))
        }
        RunsArg::Fixed(n) => Runs::Fixed(n),
        RunsArg::Auto if ccs.len() < 2 => return Err(UsageError::new("--runs", "auto", "a number of runs: auto needs at least two algorithms to compare")),
        RunsArg::Auto => {
            let first = ccbench_stats::sequential::looks(experiment::ALPHA, args.max_runs as usize).first().map(|l| l.runs);
            match first {
                Some(_) => Runs::Auto { max: args.max_runs },
                None => {
                    let need = ccbench_stats::sequential::looks(experiment::ALPHA, 1000).first().map_or(0, |l| l.runs);
                    return Err(UsageError::new("--max-runs", args.max_runs, format!("at least {need} with --runs auto (the fewest runs that can decide)")));
                }
            }
        }
    };
    let sample_ns = units::parse_duration_ns(&args.sample_interval).map_err(|a| UsageError::new("--sample-interval", &args.sample_interval, a))?;
    if !(1_000_000..=1_000_000_000).contains(&sample_ns) {
        return Err(UsageError::new("--sample-interval", &args.sample_interval, "an interval between 1ms and 1s"));
    }
    let timeout_ns = units::parse_duration_ns(&args.timeout).map_err(|a| UsageError::new("--timeout", &args.timeout, a))?;
    if timeout_ns < 1_000_000_000 {
        return Err(UsageError::new("--timeout", &args.timeout, "at least 1s"));
    }
    let seed = args.seed.unwrap_or_else(rand::random);
    let sample_interval_us = sample_ns / 1000;
    let path = crate::path::build(&args.path, seed, sample_interval_us)?;
    let workload = workload(args, flows, mix, sample_interval_us, timeout_ns as f64 / 1e9)?;
    if flows > 1 && !matches!(workload, WorkloadSpec::Bulk(_)) {
        return Err(UsageError::new("--flows", &args.flows, "--flows only with --workload bulk or file (objects use --concurrency)"));
    }
    Ok(Plan { ccs, runs, seed, path, workload })
}

fn number(flag: &str, value: &str, range: std::ops::RangeInclusive<u32>) -> Result<u32, UsageError> {
    match value.trim().parse::<u32>() {
        Ok(n) if range.contains(&n) => Ok(n),
        _ => Err(UsageError::new(flag, value, format!("a whole number from {} to {}", range.start(), range.end()))),
    }
}

/// Builds the workload from its flags, refusing flags that belong to another workload.
fn workload(args: &RunArgs, flows: u32, mix: Vec<MixFlow>, sample_interval_us: u64, timeout_s: f64) -> Result<WorkloadSpec, UsageError> {
    let kind = args.workload;
    let only = |flag: &str, value: &Option<String>, allowed: &[WorkloadArg]| -> Result<(), UsageError> {
        match value {
            Some(v) if !allowed.contains(&kind) => Err(UsageError::new(
                flag,
                v,
                format!("{flag} only with --workload {}", allowed.iter().map(|a| format!("{a:?}").to_lowercase()).collect::<Vec<_>>().join(" or ")),
            )),
            _ => Ok(()),
        }
    };
    only("--size", &args.size, &[WorkloadArg::File, WorkloadArg::Objects])?;
    for (flag, v) in [("--requests", &args.requests), ("--concurrency", &args.concurrency), ("--method", &args.method)] {
        only(flag, v, &[WorkloadArg::Objects])?;
    }
    for (flag, v) in [("--page", &args.page), ("--http", &args.http), ("--max-connections", &args.max_connections)] {
        only(flag, v, &[WorkloadArg::Page])?;
    }
    let size = |default: &str| -> Result<u64, UsageError> {
        let v = args.size.clone().unwrap_or_else(|| default.to_string());
        match units::parse_bytes(&v) {
            Ok(n) if (1..=1_000_000_000_000).contains(&n) => Ok(n),
            Ok(_) => Err(UsageError::new("--size", &v, "a size between 1 byte and 1 TB")),
            Err(a) => Err(UsageError::new("--size", &v, a)),
        }
    };
    let direction = match args.direction {
        DirectionArg::Download => Direction::Download,
        DirectionArg::Upload => Direction::Upload,
    };
    Ok(match kind {
        WorkloadArg::Bulk | WorkloadArg::File => {
            let amount = if kind == WorkloadArg::File {
                Amount::Bytes(size("10mb")?)
            } else {
                let ns = units::parse_duration_ns(&args.duration).map_err(|a| UsageError::new("--duration", &args.duration, a))?;
                if !(1_000_000_000..=3_600_000_000_000).contains(&ns) {
                    return Err(UsageError::new("--duration", &args.duration, "a duration between 1s and 60min"));
                }
                Amount::Seconds(ns as f64 / 1e9)
            };
            WorkloadSpec::Bulk(BulkSpec { flows, direction, amount, cc: String::new(), mix, port: WORKLOAD_PORT, sample_interval_us, timeout_s })
        }
        WorkloadArg::Objects => {
            let method = match args.method.as_deref().unwrap_or("put") {
                "put" | "PUT" => ObjectMethod::Put,
                "get" | "GET" => ObjectMethod::Get,
                other => return Err(UsageError::new("--method", other, "put or get")),
            };
            WorkloadSpec::Objects(ObjectsSpec {
                requests: number("--requests", args.requests.as_deref().unwrap_or("200"), 1..=100_000)?,
                object_bytes: size("1mib")?,
                concurrency: number("--concurrency", args.concurrency.as_deref().unwrap_or("16"), 1..=256)?,
                method,
                cc: String::new(),
                port: WORKLOAD_PORT,
                sample_interval_us,
                timeout_s,
            })
        }
        WorkloadArg::Page => {
            let name = args.page.clone().unwrap_or_else(|| "news".to_string());
            let page = if PageModel::builtin_names().contains(&name.as_str()) { PageModel::builtin(&name) } else { PageModel::from_file(&name) }
                .map_err(|e| UsageError::new("--page", &name, format!("one of {} or a page JSON file ({e})", PageModel::builtin_names().join(", "))))?;
            let protocol = match args.http.as_deref().unwrap_or("1") {
                "1" | "1.1" => PageProtocol::Http1 { max_connections: number("--max-connections", args.max_connections.as_deref().unwrap_or("6"), 1..=64)? },
                "2" => {
                    if let Some(m) = &args.max_connections {
                        return Err(UsageError::new("--max-connections", m, "--max-connections only with --http 1 (HTTP/2 uses one connection)"));
                    }
                    PageProtocol::Http2
                }
                other => return Err(UsageError::new("--http", other, "1 or 2")),
            };
            WorkloadSpec::Page(PageSpec { page, protocol, cc: String::new(), port: WORKLOAD_PORT, sample_interval_us, timeout_s })
        }
    })
}

/// Progress on a terminal (which run, which algorithm, time left); silent in pipes and CI.
struct Progress {
    tty: bool,
    started: std::time::Instant,
}

fn fmt_left(secs: f64) -> String {
    if secs >= 90.0 {
        format!("about {:.0} min left", secs / 60.0)
    } else {
        format!("about {secs:.0} s left")
    }
}

impl Observer for Progress {
    fn run_started(&mut self, index: usize, total: usize, slot: &Slot) {
        if self.tty {
            let left =
                if index > 0 { format!(", {}", fmt_left(self.started.elapsed().as_secs_f64() / index as f64 * (total - index) as f64)) } else { String::new() };
            eprint!("\r\x1b[2K  run {}/{}: {} (round {}){left}…", index + 1, total, slot.cc, slot.round + 1);
        }
    }

    fn run_finished(&mut self, index: usize, total: usize, record: &RunRecord) {
        if !self.tty {
            return;
        }
        let what = match (&record.metrics, record.status) {
            (Some(m), Status::Complete) => units::fmt_rate(m.goodput_bps),
            (_, Status::Interrupted) => "interrupted".into(),
            _ => format!("failed: {}", record.error.clone().unwrap_or_default()),
        };
        eprintln!("\r\x1b[2K  run {}/{}: {:<8} {}", index + 1, total, record.cc, what);
    }
}

fn default_out(label: &str) -> PathBuf {
    let now = time::OffsetDateTime::now_utc();
    let stamp = format!("{:04}{:02}{:02}-{:02}{:02}{:02}", now.year(), now.month() as u8, now.day(), now.hour(), now.minute(), now.second());
    PathBuf::from("results").join(format!("{stamp}-{label}"))
}

pub fn run(args: RunArgs) -> anyhow::Result<i32> {
    if let Some(spec) = &args.preset {
        return run_preset(spec, &args);
    }
    let plan = plan(&args)?;
    require_root("run")?;
    let out = args.out.clone().unwrap_or_else(|| default_out(&plan.ccs.join("-")));
    let stop = install_stop()?;
    let (result, code) = run_plan(&plan, &out, &stop)?;
    if args.json {
        println!("{}", ccbench::export::json::to_string(&result)?);
    }
    Ok(code)
}

fn install_stop() -> anyhow::Result<Arc<AtomicBool>> {
    let stop = Arc::new(AtomicBool::new(false));
    for sig in [signal_hook::consts::SIGINT, signal_hook::consts::SIGTERM] {
        signal_hook::flag::register(sig, stop.clone())?;
    }
    Ok(stop)
}

/// Runs one experiment, writes `out/result.json`, prints the summary; returns the exit code.
fn run_plan(plan: &Plan, out: &std::path::Path, stop: &AtomicBool) -> anyhow::Result<(ccbench::results::ExperimentResult, i32)> {
    std::fs::create_dir_all(out).with_context(|| format!("creating the results directory {}", out.display()))?;
    let tty = std::io::stderr().is_terminal();
    let header = ccbench::export::text::header(&plan.params());
    print!("{header}");
    for w in ccbench::limits::check_path(&plan.path) {
        eprintln!("warning: {w}");
    }
    let result = experiment::execute(plan, out, stop, &mut Progress { tty, started: std::time::Instant::now() });
    ccbench::export::json::write(&result, out)?;
    ccbench::export::csv::write(out, &[ccbench::export::csv::Experiment { condition: None, dir: ".", result: &result }])?;
    let summary = ccbench::export::text::summary(&result, Some(out));
    print!("{summary}");
    let html = out.join("report.html");
    std::fs::write(&html, ccbench::export::html::render(&result, &format!("{header}{summary}"), out)).with_context(|| format!("writing {}", html.display()))?;
    let code = match result.status {
        Status::Complete => 0,
        Status::Interrupted => 130,
        Status::Failed => 1,
    };
    Ok((result, code))
}

/// The user's own `run` flags, to apply on top of a preset's (minus the preset, --out, --json).
fn user_overrides() -> Vec<String> {
    let argv: Vec<String> = std::env::args().collect();
    let after_run = argv.iter().position(|a| a == "run").map(|i| i + 1).unwrap_or(argv.len());
    let mut out = Vec::new();
    let mut it = argv[after_run..].iter();
    while let Some(a) = it.next() {
        match a.as_str() {
            "--preset" | "--out" => {
                it.next();
            }
            "--json" => {}
            s if s.starts_with("--preset=") || s.starts_with("--out=") => {}
            s => out.push(s.to_string()),
        }
    }
    out
}

fn slug(s: &str) -> String {
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
    let user = user_overrides();
    let mut plans = Vec::new();
    for c in &preset.conditions {
        let mut argv = vec!["ccbench".to_string(), "run".to_string()];
        argv.extend(c.args.iter().cloned());
        argv.extend(user.iter().cloned());
        let cli = crate::cli::Cli::try_parse_from(&argv)
            .map_err(|e| UsageError::new("--preset", spec, format!("valid flags in condition {:?}: {}", c.name, ccbench::error::clap_one_line(&e))))?;
        let crate::cli::Command::Run(cargs) = cli.command else { unreachable!("parsed as run") };
        let p = plan(&cargs).map_err(|e| UsageError { flag: format!("{} (preset {}, condition {:?})", e.flag, preset.name, c.name), ..e })?;
        plans.push((c.name.clone(), p));
    }
    require_root("run")?;
    let out = args.out.clone().unwrap_or_else(|| default_out(&slug(&preset.name)));
    let stop = install_stop()?;
    println!("Preset    {}: {}", preset.name, preset.description);
    if let Some(note) = &preset.note {
        println!("          {note}");
    }
    let mut rows = Vec::new();
    let mut code = 0;
    for (i, (name, plan)) in plans.iter().enumerate() {
        println!("\n== Condition {}/{}: {name} ==", i + 1, plans.len());
        let dir = out.join(format!("{:02}-{}", i + 1, slug(name)));
        let (result, c) = run_plan(plan, &dir, &stop)?;
        rows.push((name.clone(), result));
        code = code.max(c);
        if c == 130 {
            break;
        }
    }
    let table = ccbench::export::text::across_conditions(&rows);
    println!("\n{table}");
    let dirs: Vec<String> = rows.iter().enumerate().map(|(i, (name, _))| format!("{:02}-{}", i + 1, slug(name))).collect();
    let conditions: Vec<ccbench::export::json::PresetCondition> =
        rows.iter().zip(&dirs).map(|((name, result), dir)| ccbench::export::json::PresetCondition { name, dir, result }).collect();
    ccbench::export::json::write_preset(&out, &preset.name, &preset.description, preset.scenario, &conditions)?;
    let experiments: Vec<ccbench::export::csv::Experiment> =
        rows.iter().zip(&dirs).map(|((name, result), dir)| ccbench::export::csv::Experiment { condition: Some(name), dir, result }).collect();
    ccbench::export::csv::write(&out, &experiments)?;
    println!("Results   {}", out.join(ccbench::export::json::PRESET_FILE).display());
    Ok(code)
}
