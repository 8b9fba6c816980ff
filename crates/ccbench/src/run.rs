//! `ccbench run`: validate everything, then run the experiment, then write and print.

use std::io::IsTerminal;
use std::path::PathBuf;
use std::sync::atomic::AtomicBool;
use std::sync::Arc;

use anyhow::Context;
use ccbench_workload::{Amount, BulkSpec, Direction, MixFlow};

use crate::cli::{DirectionArg, RunArgs};
use crate::error::{require_root, UsageError};
use crate::experiment::{self, Observer, Plan, Slot};
use crate::results::{RunRecord, Status};
use crate::units;

const WORKLOAD_PORT: u16 = 5201;

/// Checks every flag before anything is created, so bad input leaves nothing behind.
fn check_available(flag: &str, cc: &str, available: &[String]) -> Result<(), UsageError> {
    if available.iter().any(|a| a == cc) {
        Ok(())
    } else {
        Err(UsageError::new(flag, cc, format!("an algorithm available on this host: {} (see ccbench doctor)", available.join(", "))))
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
    let available = ccbench_probe::available_congestion_controls().unwrap_or_default();
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
            flows,
            direction: match args.direction {
                DirectionArg::Download => Direction::Download,
                DirectionArg::Upload => Direction::Upload,
            },
            amount,
            cc: String::new(),
            mix,
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
