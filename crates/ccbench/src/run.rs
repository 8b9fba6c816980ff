//! `ccbench run`: validate everything, then run the experiment, then write and print.

use std::io::IsTerminal;
use std::path::PathBuf;
use std::sync::atomic::AtomicBool;
use std::sync::Arc;

use anyhow::Context;
use ccbench_workload::{Amount, BulkSpec, Direction};

use crate::cli::{DirectionArg, RunArgs};
use crate::error::{require_root, UsageError};
use crate::experiment::{self, Observer, Plan, Slot};
use crate::results::{RunRecord, Status};
use crate::units;

const WORKLOAD_PORT: u16 = 5201;

/// Checks every flag before anything is created, so bad input leaves nothing behind.
pub fn plan(args: &RunArgs) -> Result<Plan, UsageError> {
    let available = ccbench_probe::available_congestion_controls().unwrap_or_default();
    let mut ccs: Vec<String> = Vec::new();
    for cc in args.cc.split(',').map(str::trim) {
        if cc.is_empty() {
            return Err(UsageError::new("--cc", &args.cc, "a comma-separated list of algorithms such as bbr,cubic"));
        }
        if !available.iter().any(|a| a == cc) {
            return Err(UsageError::new("--cc", cc, format!("an algorithm available on this host: {} (see ccbench doctor)", available.join(", "))));
        }
        if ccs.iter().any(|c| c == cc) {
            return Err(UsageError::new("--cc", &args.cc, "each algorithm once"));
        }
        ccs.push(cc.to_string());
    }
    let min_runs = ccbench_stats::min_runs_for_significance(experiment::ALPHA) as u32;
    if ccs.len() > 1 && args.runs < min_runs {
        return Err(UsageError::new(
            "--runs",
            args.runs,
            format!("at least {min_runs} runs per algorithm to compare algorithms (with fewer, no rank test can reach p < {})", experiment::ALPHA),
        ));
    }
    let sample_ns = units::parse_duration_ns(&args.sample_interval).map_err(|a| UsageError::new("--sample-interval", &args.sample_interval, a))?;
    if !(1_000_000..=1_000_000_000).contains(&sample_ns) {
        return Err(UsageError::new("--sample-interval", &args.sample_interval, "an interval between 1ms and 1s"));
    }
    let amount = match &args.bytes {
        Some(b) => {
            let n = units::parse_bytes(b).map_err(|a| UsageError::new("--bytes", b, a))?;
            if !(1..=1_000_000_000_000).contains(&n) {
                return Err(UsageError::new("--bytes", b, "a size between 1 byte and 1 TB"));
            }
            Amount::Bytes(n)
        }
        None => {
            let ns = units::parse_duration_ns(&args.duration).map_err(|a| UsageError::new("--duration", &args.duration, a))?;
            if !(1_000_000_000..=3_600_000_000_000).contains(&ns) {
                return Err(UsageError::new("--duration", &args.duration, "a duration between 1s and 60min"));
            }
            Amount::Seconds(ns as f64 / 1e9)
        }
    };
    let timeout_ns = units::parse_duration_ns(&args.timeout).map_err(|a| UsageError::new("--timeout", &args.timeout, a))?;
    if timeout_ns < 1_000_000_000 {
        return Err(UsageError::new("--timeout", &args.timeout, "at least 1s"));
    }
    let seed = args.seed.unwrap_or_else(rand::random);
    let path = crate::path::build(&args.path, seed, sample_ns / 1000)?;
    Ok(Plan {
        ccs,
        runs: args.runs,
        seed,
        path,
        workload: BulkSpec {
            flows: args.flows,
            direction: match args.direction {
                DirectionArg::Download => Direction::Download,
                DirectionArg::Upload => Direction::Upload,
            },
            amount,
            cc: String::new(),
            port: WORKLOAD_PORT,
            sample_interval_us: sample_ns / 1000,
            timeout_s: timeout_ns as f64 / 1e9,
        },
    })
}

struct Progress {
    tty: bool,
}

impl Observer for Progress {
    fn run_started(&mut self, index: usize, total: usize, slot: &Slot) {
        if self.tty {
            eprint!("\r\x1b[2K  run {}/{}: {} (round {})…", index + 1, total, slot.cc, slot.round + 1);
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

fn default_out(ccs: &[String]) -> PathBuf {
    let now = time::OffsetDateTime::now_utc();
    let stamp = format!("{:04}{:02}{:02}-{:02}{:02}{:02}", now.year(), now.month() as u8, now.day(), now.hour(), now.minute(), now.second());
    PathBuf::from("results").join(format!("{stamp}-{}", ccs.join("-")))
}

pub fn run(args: RunArgs) -> anyhow::Result<i32> {
    let plan = plan(&args)?;
    require_root("run")?;
    let out = args.out.clone().unwrap_or_else(|| default_out(&plan.ccs));
    std::fs::create_dir_all(&out).with_context(|| format!("creating the results directory {}", out.display()))?;

    let stop = Arc::new(AtomicBool::new(false));
    for sig in [signal_hook::consts::SIGINT, signal_hook::consts::SIGTERM] {
        signal_hook::flag::register(sig, stop.clone())?;
    }
    let tty = std::io::stderr().is_terminal();
    print!("{}", crate::report::header(&crate::results::Params {
        ccs: plan.ccs.clone(),
        runs_per_cc: plan.runs,
        seed: plan.seed,
        alpha: experiment::ALPHA,
        path: plan.path.clone(),
        workload: plan.workload.clone(),
    }));
    let result = experiment::execute(&plan, &stop, &mut Progress { tty });
    let file = out.join("result.json");
    let json = serde_json::to_string(&result)?;
    std::fs::write(&file, &json).with_context(|| format!("writing {}", file.display()))?;
    print!("{}", crate::report::summary(&result, Some(&out)));
    if args.json {
        println!("{json}");
    }
    Ok(match result.status {
        Status::Complete => 0,
        Status::Interrupted => 130,
        Status::Failed => 1,
    })
}
