//! ccbench: a congestion-control test bench. This binary only wires the layers together:
//! CLI → plan → experiment (the `ccbench` library) → exporters.

mod bench;
mod cli;
mod cli_docs;
mod compare_cmd;
mod conform;
mod doctor;
mod error;
mod exec;
mod explain;
mod host;
mod path;
mod presets;
mod probe_cmd;
mod progress;
mod run;
mod serve;
mod spec;
mod sweep;
mod tune;
mod twin;
mod values;
mod workload_flags;

use crate::error::UsageError;
use ccbench::units;

fn main() {
    quiet_on_closed_stdout();
    let args: Vec<std::ffi::OsString> = std::env::args_os().collect();
    if args.get(1).is_some_and(|a| a == ccbench_netns::process::REAPER_ARG) {
        ccbench_netns::process::reaper_main(&args[2..]);
    }
    if let Some(e) = cli::missing_value(&args) {
        eprintln!("ccbench: {e}");
        std::process::exit(2);
    }
    let cli = match cli::parse_from(&args) {
        Ok(c) => c,
        Err(e) => {
            use clap::error::ErrorKind;
            if matches!(e.kind(), ErrorKind::DisplayHelp | ErrorKind::DisplayVersion | ErrorKind::DisplayHelpOnMissingArgumentOrSubcommand) {
                let _ = e.print();
                std::process::exit(if e.kind() == ErrorKind::DisplayHelpOnMissingArgumentOrSubcommand { 2 } else { 0 });
            }
            match cli::usage_error(&e) {
                Some(u) => eprintln!("ccbench: {u}"),
                None => eprintln!("ccbench: {} (see ccbench --help)", error::clap_one_line(&e)),
            }
            std::process::exit(2);
        }
    };
    let code = match dispatch(cli) {
        Ok(code) => code,
        Err(e) => {
            if let Some(u) = e.downcast_ref::<UsageError>() {
                eprintln!("ccbench: {u}");
                2
            } else {
                eprintln!("ccbench: error: {e:#}");
                1
            }
        }
    };
    std::process::exit(code);
}

/// A reader that went away (`ccbench merge … | head -1`) ends the command quietly, as it ends
/// `cat`: Rust ignores SIGPIPE, so printing to the closed pipe would panic instead. Only
/// standard output's failure is meant; every other panic keeps its message.
fn quiet_on_closed_stdout() {
    let default = std::panic::take_hook();
    std::panic::set_hook(Box::new(move |info| {
        let message = info.payload().downcast_ref::<String>().map(String::as_str).or_else(|| info.payload().downcast_ref::<&str>().copied()).unwrap_or("");
        if message.starts_with("failed printing to stdout") && message.contains("Broken pipe") {
            std::process::exit(0);
        }
        default(info);
    }));
}

fn dispatch(cli: cli::Cli) -> anyhow::Result<i32> {
    match cli.command {
        cli::Command::Run(args) => {
            run::check_secret_file(&args)?;
            // `run --remote --twin` is its own command, built from run's pieces.
            if args.twin {
                twin::run(&args)
            } else {
                run::run(args)
            }
        }
        cli::Command::Sweep(args) => sweep::run(args),
        cli::Command::Conform(which) => {
            let (suite, args) = which.suite();
            conform::run(suite, args)
        }
        cli::Command::Status(args) => sweep::status(args),
        cli::Command::Merge(args) => sweep::merge(args),
        cli::Command::Exec(args) => {
            path::check_ecn(&args.path)?;
            path::check_reorder(&args.path)?;
            let spec = path::build(&args.path, args.seed.unwrap_or_else(rand::random), 10_000);
            error::require_root("exec")?;
            exec::run(&spec, args.server_cmd.as_deref(), &args.command)
        }
        cli::Command::Serve(args) => serve::run(args),
        cli::Command::Probe(args) => probe_cmd::run(args),
        cli::Command::Compare(args) => compare_cmd::run(args),
        cli::Command::Explain(args) => explain::run(args),
        cli::Command::Doctor => Ok(doctor::run()),
        cli::Command::Tune(args) => tune::run(args),
        cli::Command::Presets => Ok(presets::list()),
        cli::Command::Bench(cli::BenchWhat::Emulator(args)) => bench::run(&args),
        cli::Command::Bench(cli::BenchWhat::Transports(args)) => bench::run_transports(&args),
        cli::Command::Completions(args) => Ok(cli_docs::completions(&args)),
        cli::Command::Man(args) => cli_docs::man(&args),
        cli::Command::Trace(kind) => {
            print!("{}", trace_text(&kind)?);
            Ok(0)
        }
    }
}

fn trace_text(kind: &cli::TraceKind) -> Result<String, UsageError> {
    use ccbench_tracegen as generate;
    let rate = |flag: &str, v: &str| match units::parse_rate(v) {
        Ok(Some(b)) if b >= 12_000 => Ok(b),
        _ => Err(UsageError::new(flag, v, "a rate of at least 12kbit (one 1500-byte packet per second)")),
    };
    let ms = |flag: &str, v: &str| match units::parse_duration_ns(v) {
        Ok(ns) if ns >= 1_000_000 => Ok(ns / 1_000_000),
        _ => Err(UsageError::new(flag, v, "a duration of at least 1ms")),
    };
    Ok(match kind {
        cli::TraceKind::Constant { rate: r, period } => generate::constant(rate("--rate", r)?, ms("--period", period)?),
        cli::TraceKind::Step { rates, every } => {
            let every = ms("--every", every)?;
            let segments = rates.split(',').map(|r| rate("--rates", r.trim()).map(|b| (b, every))).collect::<Result<Vec<_>, _>>()?;
            generate::step(&segments)
        }
        cli::TraceKind::Cellular { mean, period, seed } => {
            generate::random_walk(&generate::RandomWalk::cellular(rate("--mean", mean)?, ms("--period", period)?), *seed)
        }
    })
}
