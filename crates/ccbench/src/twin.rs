//! `ccbench run --remote HOST:PORT --twin`: does the emulator predict reality?
//!
//! The order: the probe first (through the same `ccbench serve`), so the twin exists even if
//! the real runs fail; then the real and the twin experiment run by run in turn
//! ([`experiment::execute_interleaved`]), so whatever drifts meanwhile (this host's load, the
//! real path's cross traffic) meets both alike, as it meets both algorithms within each. Both
//! keep the same seed, hence the same order of algorithms per round.
//!
//! The files: `out/` is the real experiment's directory as `run --remote` writes it, its
//! `result.json` gaining a `twin` object (see [`TwinRecord`]); `out/twin/` is the twin's own
//! experiment directory (with `path.toml`, the probed path, and `probe.json`); `out/compare.json`
//! and `out/report.html` put every arm of both side by side with `ccbench compare`'s machinery.

use std::path::Path;

use anyhow::Context;
use serde::Serialize;

use crate::error::{require_root, UsageError};
use ccbench::compare::{self, Input, Metric, Options};
use ccbench::experiment::{self, Plan};
use ccbench::results::{ExperimentResult, Status};
use ccbench::units::fmt_rate;
use ccbench_pathprobe::{PathEstimate, ProbeOptions};
use ccbench_remote::ProbeReport;
use ccbench_stats::Comparison;

use crate::cli::{Layer, RunArgs};
use crate::host::install_stop;
use crate::progress::{planned_runs, Bar};
use crate::run::exit_code;

/// The twin's directory inside the real experiment's.
pub const TWIN_DIR: &str = "twin";
pub const PATH_FILE: &str = "path.toml";
pub const PROBE_FILE: &str = "probe.json";

/// What `result.json` records of the twin, under `twin`.
#[derive(Clone, Debug, Serialize)]
pub struct TwinRecord {
    /// The twin's experiment directory, relative to this result's: its own `result.json`,
    /// `runs.csv`, `report.html` and series.
    pub dir: String,
    /// The path file the twin emulated, as `ccbench probe` writes it.
    pub path_file: String,
    /// Its path flags.
    pub path: serde_json::Value,
    /// The probe's estimate, and what it cost the server.
    pub probe: PathEstimate,
    pub probe_server: ProbeReport,
    /// How the two experiments' runs were ordered.
    pub order: &'static str,
    /// True when every pair of algorithms has the same verdict on both (the same one better,
    /// or neither significantly).
    pub same_verdict: bool,
    pub verdicts: Vec<VerdictMatch>,
    /// Each algorithm on the real path against itself on the twin.
    pub per_cc: Vec<CcMatch>,
    /// Every arm of both side by side (`ccbench compare`'s record).
    pub comparison: String,
}

/// One pair of algorithms' verdict on the real path and on the twin.
#[derive(Clone, Debug, Serialize)]
pub struct VerdictMatch {
    pub a: String,
    pub b: String,
    /// median(a) / median(b) on each (oriented as the real comparison's `a` and `b`).
    pub real_ratio: Option<f64>,
    pub twin_ratio: Option<f64>,
    /// The better one where significant, else null.
    pub real_better: Option<String>,
    pub twin_better: Option<String>,
    pub same: bool,
    /// Both ratios on the same side of 1, significant or not.
    pub same_direction: bool,
}

/// One algorithm, real against twin.
#[derive(Clone, Debug, Serialize)]
pub struct CcMatch {
    pub cc: ccbench_workload::Cc,
    pub real_goodput_bps: Option<f64>,
    pub twin_goodput_bps: Option<f64>,
    /// twin / real, of the median goodputs.
    pub goodput_ratio: Option<f64>,
    /// The twin's runs against the real ones on the results' metric (arms `real` and `twin`).
    pub test: Option<Comparison>,
}

/// `run --remote … --twin`. Flags are checked before anything else; then the probe, then both
/// experiments.
pub fn run(args: &RunArgs) -> anyhow::Result<i32> {
    let remote =
        args.remote.as_ref().ok_or_else(|| UsageError::new("--twin", "(without --remote)", "--remote HOST:PORT with it: the twin is of a real path"))?;
    if let Some(p) = &args.preset {
        return Err(UsageError::new("--preset", p, "no --preset with --twin (a preset's conditions are emulated paths)").into());
    }
    if let Some(p) = &args.path {
        return Err(UsageError::new("--path", p.display(), "no --path with --twin: the twin's path is what the probe measures").into());
    }
    // The twin's algorithms must exist here (its path is known only after the probe).
    crate::run::plan(args.opts.clone()).map_err(|e| UsageError { allowed: format!("{} (the twin runs on this host)", e.allowed), ..e })?;
    require_root("run --twin")?;
    let real = crate::run::remote_plan(args, remote)?;
    let secret = real.remote.as_ref().map(|r| r.secret.clone()).expect("a remote plan has its remote");
    let out = args.out.clone().unwrap_or_else(|| crate::run::default_out(&format!("{}-twin", real.names().join("-"))));

    println!("Probing {} through its ccbench serve, for the twin", remote.label);
    let (estimate, report) = crate::probe_cmd::probe_through_serve(remote, &secret, &ProbeOptions::default())?;
    let twin_dir = out.join(TWIN_DIR);
    std::fs::create_dir_all(&twin_dir).with_context(|| format!("creating the results directory {}", twin_dir.display()))?;
    let path_text = crate::probe_cmd::path_file(&estimate, &remote.label);
    let path_file = twin_dir.join(PATH_FILE);
    std::fs::write(&path_file, &path_text).with_context(|| format!("writing {}", path_file.display()))?;
    std::fs::write(twin_dir.join(PROBE_FILE), serde_json::to_string_pretty(&serde_json::json!({ "estimate": estimate, "server": report }))?)?;
    print!("{}", crate::probe_cmd::summary(&estimate, None, &remote.label));
    println!("Wrote {}: the twin", path_file.display());

    let mut twin = crate::run::plan(args.opts.clone().over(crate::presets::path_file(&path_file)?))?;
    // The same seed: the same order of algorithms in every round.
    twin.seed = real.seed;
    let code = run_both(&real, &twin, &out, &estimate, &report, &path_text, args.json)?;
    Ok(code)
}

fn run_both(real: &Plan, twin: &Plan, out: &Path, estimate: &PathEstimate, report: &ProbeReport, path_text: &str, json: bool) -> anyhow::Result<i32> {
    let twin_dir = out.join(TWIN_DIR);
    let (real_header, twin_header) = (ccbench::export::text::header(&real.params()), ccbench::export::text::header(&twin.params()));
    println!("\n== The real path and its twin, run by run in turn ==");
    print!("Real:\n{real_header}Twin:\n{twin_header}");
    for w in ccbench::limits::check_path(&twin.path) {
        eprintln!("warning: twin: {w}");
    }
    let stop = install_stop()?;
    let bar = Bar::new(planned_runs(real) + planned_runs(twin));
    let (mut ro, mut to) = (bar.observer(Some("real".into()), true), bar.observer(Some("twin".into()), true));
    let results = experiment::execute_interleaved(&[(real, out), (twin, &twin_dir)], &stop, &mut [&mut ro, &mut to]);
    bar.finish();
    let [real_result, twin_result]: [ExperimentResult; 2] = results.try_into().map_err(|_| anyhow::anyhow!("two experiments ran, not two results"))?;

    let twin_summary = crate::run::write_outputs(&twin_result, &twin_dir, &twin_header)?;
    let real_summary = ccbench::export::text::summary(&real_result, None);
    println!("\n== Real path ==\n{}", real_summary.trim_start_matches('\n'));
    println!("== Twin ==\n{}", twin_summary.trim_start_matches('\n'));

    // Both as `ccbench compare` inputs; the real result file is written below, with `twin`.
    let inputs = [
        Input { label: "real".into(), path: out.join(ccbench::export::json::RESULT_FILE), result: real_result.clone() },
        Input { label: "twin".into(), path: twin_dir.join(ccbench::export::json::RESULT_FILE), result: twin_result.clone() },
    ];
    let all = compare::compare(&inputs, &Options::default(), out).map_err(|e| anyhow::anyhow!("comparing the real path with its twin: {e}"))?;
    let per_cc = per_cc(&inputs, out);
    let verdicts = verdicts(&real_result, &twin_result);
    let record = TwinRecord {
        dir: TWIN_DIR.into(),
        path_file: format!("{TWIN_DIR}/{PATH_FILE}"),
        path: path_flags(path_text),
        probe: estimate.clone(),
        probe_server: report.clone(),
        order: "interleaved: the real and the twin experiment run by run in turn, with the same seed",
        same_verdict: verdicts.iter().all(|v| v.same),
        verdicts,
        per_cc,
        comparison: compare::COMPARE_FILE.into(),
    };
    let side_by_side = side_by_side(&real_result, &twin_result, &record);
    println!("== Side by side ==\n{side_by_side}");

    let mut doc = serde_json::to_value(&real_result)?;
    doc["twin"] = serde_json::to_value(&record)?;
    let file = out.join(ccbench::export::json::RESULT_FILE);
    std::fs::write(&file, serde_json::to_string(&doc)?).with_context(|| format!("writing {}", file.display()))?;
    ccbench::export::csv::write(out, &[ccbench::export::csv::Experiment { condition: None, dir: ".", result: &real_result }])?;
    let compare_file = out.join(compare::COMPARE_FILE);
    std::fs::write(&compare_file, serde_json::to_string_pretty(&all.record)?).with_context(|| format!("writing {}", compare_file.display()))?;
    let text = format!("{}{}\n{side_by_side}", compare::header(&all.record), ccbench::export::text::summary(&all.combined, None));
    let html = out.join("report.html");
    std::fs::write(&html, ccbench_report::render(&ccbench_report::ReportData::read(&all.combined, &text, out)))
        .with_context(|| format!("writing {}", html.display()))?;
    println!(
        "Results   {} (the twin's: {}; every arm side by side: {} and {})",
        file.display(),
        twin_dir.join(ccbench::export::json::RESULT_FILE).display(),
        compare_file.display(),
        html.display()
    );
    if json {
        println!("{}", serde_json::to_string(&doc)?);
    }
    let codes = [exit_code(&real_result), exit_code(&twin_result)];
    Ok(if codes.contains(&130) { 130 } else { codes.into_iter().max().unwrap_or(0) })
}

/// The path file's fields (the path flags), as JSON.
fn path_flags(text: &str) -> serde_json::Value {
    toml::from_str::<toml::Table>(text).ok().and_then(|t| serde_json::to_value(t).ok()).unwrap_or(serde_json::Value::Null)
}

fn median_goodput(r: &ExperimentResult, cc: &ccbench_workload::Cc) -> Option<f64> {
    r.summary.iter().find(|s| s.cc == *cc).and_then(|s| s.goodput_bps.as_ref()).map(|g| g.median)
}

/// Each algorithm on the real path against itself on the twin, by `compare`'s test.
fn per_cc(inputs: &[Input; 2], out: &Path) -> Vec<CcMatch> {
    let (real, twin) = (&inputs[0].result, &inputs[1].result);
    real.params
        .ccs
        .iter()
        .map(|cc| {
            let (r, t) = (median_goodput(real, cc), median_goodput(twin, cc));
            let test = compare::compare(inputs, &Options { cc: Some(cc.to_string()), metric: Metric::Score }, out)
                .ok()
                .and_then(|c| c.record.comparisons.into_iter().next());
            CcMatch { cc: cc.clone(), real_goodput_bps: r, twin_goodput_bps: t, goodput_ratio: r.zip(t).filter(|(r, _)| *r > 0.0).map(|(r, t)| t / r), test }
        })
        .collect()
}

/// `median(a) / median(b)` of a comparison, oriented as `(a, b)`.
fn ratio_as(c: &Comparison, a: &str, b: &str) -> Option<f64> {
    let r = c.ratio_ci.as_ref()?.ratio;
    if c.a == a && c.b == b {
        Some(r)
    } else if c.a == b && c.b == a {
        Some(1.0 / r)
    } else {
        None
    }
}

/// Every pair the real experiment compared, with the twin's verdict on the same pair.
fn verdicts(real: &ExperimentResult, twin: &ExperimentResult) -> Vec<VerdictMatch> {
    real.comparisons
        .iter()
        .map(|rc| {
            let tc = twin.comparisons.iter().find(|t| (t.a == rc.a && t.b == rc.b) || (t.a == rc.b && t.b == rc.a));
            let real_ratio = ratio_as(rc, &rc.a, &rc.b);
            let twin_ratio = tc.and_then(|t| ratio_as(t, &rc.a, &rc.b));
            let twin_better = tc.and_then(|t| t.better.clone());
            let side = |r: Option<f64>| r.map(|r| r.partial_cmp(&1.0));
            VerdictMatch {
                a: rc.a.clone(),
                b: rc.b.clone(),
                real_ratio,
                twin_ratio,
                same: tc.is_some() && rc.better == twin_better,
                same_direction: real_ratio.is_some() && side(real_ratio) == side(twin_ratio),
                real_better: rc.better.clone(),
                twin_better,
            }
        })
        .collect()
}

fn ratio_text(r: Option<f64>) -> String {
    r.map_or("–".into(), |r| format!("{r:.2}×"))
}

/// The table and the conclusion printed at the end (and atop report.html).
fn side_by_side(real: &ExperimentResult, twin: &ExperimentResult, record: &TwinRecord) -> String {
    use std::fmt::Write as _;
    let mut rows: Vec<[String; 4]> = vec![["".into(), "real".into(), "twin".into(), "twin/real".into()]];
    for m in &record.per_cc {
        let test = m.test.as_ref().map_or(String::new(), |c| format!(", {}", c.short()));
        rows.push([
            m.cc.to_string(),
            m.real_goodput_bps.map_or("–".into(), fmt_rate),
            m.twin_goodput_bps.map_or("–".into(), fmt_rate),
            format!("{}{test}", ratio_text(m.goodput_ratio)),
        ]);
    }
    let short = |r: &ExperimentResult, v: &VerdictMatch| {
        r.comparisons.iter().find(|c| (c.a == v.a && c.b == v.b) || (c.a == v.b && c.b == v.a)).map_or("no verdict".into(), |c| c.short())
    };
    for v in &record.verdicts {
        rows.push([
            "verdict".into(),
            short(real, v),
            short(twin, v),
            if v.same {
                "same".into()
            } else if v.same_direction {
                "differs (same direction)".into()
            } else {
                "differs".into()
            },
        ]);
    }
    let width = |i: usize| rows.iter().map(|r| r[i].chars().count()).max().unwrap_or(0);
    let (w0, w1, w2) = (width(0), width(1), width(2));
    let mut out = format!("{} (median goodput over each arm's runs; the twin's runs tested against the real ones)\n", "Real path against its twin");
    for r in &rows {
        let _ = writeln!(out, "  {:<w0$}  {:<w1$}  {:<w2$}  {}", r[0], r[1], r[2], r[3]);
    }
    let ratios: Vec<String> = record.per_cc.iter().map(|m| format!("{} {}", m.cc, ratio_text(m.goodput_ratio))).collect();
    let verdict_words = |better: &Option<String>, v: &VerdictMatch| match better {
        Some(b) => format!("{b} better than {}", if *b == v.a { &v.b } else { &v.a }),
        None => format!("no significant difference between {} and {}", v.a, v.b),
    };
    let said: Vec<String> = record.verdicts.iter().map(|v| verdict_words(&v.real_better, v)).collect();
    if record.verdicts.is_empty() {
        let _ = writeln!(out, "No verdict to predict (too few completed runs); goodput twin/real: {}.", ratios.join(", "));
    } else if record.same_verdict {
        let _ = writeln!(out, "The twin predicts the verdict: {} on both. Goodput twin/real: {}.", said.join("; "), ratios.join(", "));
    } else {
        let twin_said: Vec<String> = record.verdicts.iter().map(|v| verdict_words(&v.twin_better, v)).collect();
        let _ = writeln!(
            out,
            "The twin does NOT predict the verdict: the real path says {}, the twin {}. Goodput twin/real: {}.",
            said.join("; "),
            twin_said.join("; "),
            ratios.join(", ")
        );
    }
    for (name, r) in [("real", real), ("twin", twin)] {
        if r.status != Status::Complete {
            let _ = writeln!(
                out,
                "The {name} experiment is {}: only its completed runs count.",
                serde_json::to_value(r.status).ok().and_then(|v| v.as_str().map(String::from)).unwrap_or_default()
            );
        }
    }
    out
}
