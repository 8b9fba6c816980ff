//! `ccbench compare`: saved results against each other, with the verdicts of `run` (the
//! library's [`ccbench::compare`] does the work; this reads the flags and writes the files).

use std::path::{Path, PathBuf};

use crate::cli::{CompareArgs, MetricArg};
use crate::error::{precondition, UsageError};
use anyhow::Context;
use ccbench::compare::{self, Input, InputArg, Metric, Options, Refusal};
use ccbench::export;

impl From<MetricArg> for Metric {
    fn from(m: MetricArg) -> Metric {
        match m {
            MetricArg::Score => Metric::Score,
            MetricArg::Goodput => Metric::Goodput,
            MetricArg::Rtt => Metric::Rtt,
        }
    }
}

/// A refusal is the user's to fix: one line, exit status 2.
fn refused(r: Refusal) -> UsageError {
    precondition(r.to_string())
}

fn default_out() -> PathBuf {
    let now = time::OffsetDateTime::now_utc();
    let stamp = format!("{:04}{:02}{:02}-{:02}{:02}{:02}", now.year(), now.month() as u8, now.day(), now.hour(), now.minute(), now.second());
    PathBuf::from("results").join(format!("{stamp}-compare"))
}

pub fn run(args: CompareArgs) -> anyhow::Result<i32> {
    let opts = Options { cc: args.cc.clone(), metric: args.metric.into() };
    // Everything is read and checked before anything is written.
    let inputs: Vec<Input> = args.inputs.iter().map(|a| compare::load(&InputArg::parse(a))).collect::<Result<_, _>>().map_err(refused)?;
    compare::check(&inputs).map_err(refused)?;
    compare::arms(&inputs, opts.cc.as_deref()).map_err(refused)?;
    let out = args.out.clone().unwrap_or_else(default_out);
    std::fs::create_dir_all(&out).with_context(|| format!("creating the results directory {}", out.display()))?;
    let c = compare::compare(&inputs, &opts, &out).map_err(refused)?;

    let header = compare::header(&c.record);
    print!("{header}");
    // A warning's detail lines (indented) go under it.
    let warnings: String = c.record.warnings.iter().map(|w| if w.starts_with("  ") { format!("       {w}\n") } else { format!("warning: {w}\n") }).collect();
    eprint!("{warnings}");
    let summary = export::text::summary(&c.combined, None);
    print!("{summary}");

    let file = out.join(compare::COMPARE_FILE);
    std::fs::write(&file, serde_json::to_string_pretty(&c.record)?).with_context(|| format!("writing {}", file.display()))?;
    write_runs_csv(&out, &inputs, &c.record)?;
    let html = out.join("report.html");
    std::fs::write(&html, ccbench_report::render(&ccbench_report::ReportData::read(&c.combined, &format!("{header}{warnings}{summary}"), &out)))
        .with_context(|| format!("writing {}", html.display()))?;
    println!("\nResults   {} (runs: {}, plots: {})", file.display(), out.join(export::csv::RUNS_FILE).display(), html.display());
    if args.json {
        println!("{}", serde_json::to_string(&c.record)?);
    }
    Ok(0)
}

/// `runs.csv`: every run of every arm, led by its arm and input, with its input's parameters
/// and series paths that lead from `out` to the input's files.
fn write_runs_csv(out: &Path, inputs: &[Input], record: &compare::CompareResult) -> anyhow::Result<()> {
    let arm_of = |input: usize, cc: &str| record.arms.iter().find(|a| a.input == input && a.cc == cc);
    let selected: Vec<ccbench::results::ExperimentResult> = inputs
        .iter()
        .enumerate()
        .map(|(i, input)| {
            let mut r = input.result.clone();
            r.runs.retain(|run| arm_of(i, &run.cc).is_some());
            r
        })
        .collect();
    let dirs: Vec<String> = inputs.iter().map(|i| compare::input_dir_from(out, i)).collect();
    let experiments: Vec<export::csv::Experiment> =
        selected.iter().zip(&dirs).map(|(result, dir)| export::csv::Experiment { condition: None, dir, result }).collect();
    let lead = |e: &export::csv::Experiment, run: &ccbench::results::RunRecord| {
        let i = selected.iter().position(|r| std::ptr::eq(r, e.result)).unwrap_or(0);
        let arm = arm_of(i, &run.cc).map(|a| a.label.clone()).unwrap_or_default();
        vec![("arm".to_string(), arm), ("input".to_string(), inputs[i].label.clone())]
    };
    export::csv::write_with(out, &experiments, &lead)
}
