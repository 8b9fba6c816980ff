//! `ccbench conform <suite>` (`ccbench conform bbr`: draft-ietf-ccwg-bbr's cases,
//! `ccbench_conform::bbr::BBR`): a suite's cases on each controller it judges over a grid of
//! paths, judged on the controller's own state series. Nothing here names a suite: the CLI
//! passes its [`Suite`] down.
//!
//! Each (controller, path, scenario) is one `ccbench run` of this same binary, with the flags a
//! user would type to reproduce it (printed beside every cell's evidence), so a conformance run
//! is nothing but ordinary runs and their series; the cases sharing a scenario share its runs.
//! Its QUIC runs write qlog files (`run --qlog`).

mod matrix;
mod series;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use ccbench::results::{ExperimentResult, Status};
use ccbench_conform::assertion::RunCheck;
use ccbench_conform::trace::PathFacts;
use ccbench_conform::{over_paths, over_runs, Cell, CellVerdict, Runnable, Scenario, Suite};
use ccbench_link::Rate as LinkRate;
use ccbench_model::workload::Algorithm;

use crate::cli::ConformArgs;
use crate::error::{require_root, UsageError};
use crate::progress::Bar;
use crate::values::Rtt;

/// α of the over-runs judgement, as `--expect`'s default.
const ALPHA: f64 = 0.05;
const SAMPLE: Duration = Duration::from_millis(10);
/// The series' socket of the flow under test: a run's first flow.
const UNDER_TEST: &str = "flow-0";

/// A path of the grid (or a scenario's own).
#[derive(Debug, Clone, Copy, PartialEq, PartialOrd)]
pub(crate) struct GridPath {
    pub(crate) rate_bps: f64,
    pub(crate) rtt: Duration,
}

impl GridPath {
    pub(crate) fn label(&self) -> String {
        let rate = if self.rate_bps >= 1e6 { format!("{}mbit", self.rate_bps / 1e6) } else { format!("{}kbit", self.rate_bps / 1e3) };
        format!("{rate}/{}ms", self.rtt.as_secs_f64() * 1e3)
    }
}

/// One cell: an assertion of a case on one controller and path.
pub(crate) struct Judged {
    pub(crate) case: usize,
    pub(crate) assertion: usize,
    pub(crate) cc: Algorithm,
    pub(crate) path: GridPath,
    pub(crate) cell: Cell,
    /// The `ccbench run` flags that reproduce it.
    pub(crate) command: String,
}

/// An assertion of a case on one controller, judged over the grid's paths (`over_paths`): from
/// one run per path, a verdict that per-path cells of one run cannot give.
pub(crate) struct OverPaths {
    pub(crate) case: usize,
    pub(crate) assertion: usize,
    pub(crate) cc: Algorithm,
    /// Per path (in the grid's order) its outcome; the tally counts paths.
    pub(crate) cell: Cell,
}

/// Each (case, assertion, controller) over the grid's paths, when the grid has two or more;
/// paths a scenario does not run on (A.13's own) take no part.
fn over_grid(judged: &[Judged], grid: &[GridPath]) -> Vec<OverPaths> {
    if grid.len() < 2 {
        return Vec::new();
    }
    let mut keys: Vec<(usize, usize, &Algorithm)> = judged.iter().filter(|j| grid.contains(&j.path)).map(|j| (j.case, j.assertion, &j.cc)).collect();
    keys.dedup();
    keys.sort_by_key(|k| (k.0, k.1, k.2.to_string()));
    keys.dedup();
    keys.into_iter()
        .map(|(case, assertion, cc)| {
            let cells: Vec<(String, &Cell)> = grid
                .iter()
                .filter_map(|p| judged.iter().find(|j| j.case == case && j.assertion == assertion && &j.cc == cc && j.path == *p))
                .map(|j| (j.path.label(), &j.cell))
                .collect();
            OverPaths { case, assertion, cc: cc.clone(), cell: over_paths(&cells, ALPHA) }
        })
        .collect()
}

/// A scenario's runs that could not be judged (the run failed, or wrote no series).
pub(crate) struct Broken {
    pub(crate) cc: Algorithm,
    pub(crate) path: GridPath,
    pub(crate) scenario: Scenario,
    pub(crate) why: String,
}

/// The grid's paths, the runs per path, and (when the machine lowered the default top rate) why.
/// The default grids are the suite's (`Suite::grid`, `Suite::quick`).
///
/// BBR's default full grid, 1, 20, 200 ms × 1, 20, 1000 Mbit/s with one run per path, is judged
/// over its 9 paths (`over_paths`): 218 runs, about 54 min of sending for both controllers
/// (`Scenario::duration`, 13 scenarios), under the hour of issue 31's done-when, where the old
/// 3 × 3 grid at 5 runs planned 190 min with 8. A 500 ms column would add 9 min (its step-down
/// and cross-traffic runs last 79 and 87 s): `--rtts 1ms,20ms,200ms,500ms` runs it. 64 kbit/s stays A.13's own path: a tenfold step from it is a packet
/// every 1.9 s, with no ProbeBW cycle to count.
fn grid(suite: &Suite, args: &ConformArgs) -> Result<(Vec<GridPath>, u32, Option<String>), UsageError> {
    let rtts: Vec<Duration> = if args.rtts.is_empty() {
        if args.quick {
            suite.quick.rtts.to_vec()
        } else {
            suite.grid.rtts.to_vec()
        }
    } else {
        args.rtts.iter().map(rtt_of).collect()
    };
    let mut rates = Vec::new();
    for r in &args.rates {
        match r.0 {
            LinkRate::BitsPerSec(b) if b >= 64_000 => rates.push(b as f64),
            _ => return Err(UsageError::new("--rates", format!("{:?}", r.0), "rates of 64kbit or more (a case needs a bottleneck)")),
        }
    }
    let mut lowered = None;
    if rates.is_empty() {
        rates = if args.quick {
            suite.quick.rates_bps.to_vec()
        } else {
            // Where the machine stops: the top rate is lowered to what its emulator has carried,
            // rounded down to one significant figure (230 Mbit/s → 200 Mbit/s).
            let mut rates = suite.grid.rates_bps.to_vec();
            let (cap, source) = ccbench::limits::capacity();
            let wanted = rates.iter().copied().fold(0.0, f64::max);
            if cap < wanted {
                let unit = 10f64.powf(cap.log10().floor());
                let top = ((cap / unit).floor() * unit).max(40e6);
                lowered = Some(format!(
                    "top rate {} instead of {}: this machine's emulator has carried at most {} ({source})",
                    crate::units::fmt_rate(top),
                    crate::units::fmt_rate(wanted),
                    crate::units::fmt_rate(cap)
                ));
                for r in rates.iter_mut().filter(|r| **r == wanted) {
                    *r = top;
                }
            }
            rates
        };
    }
    if let Some(d) = rtts.iter().find(|d| d.is_zero()) {
        return Err(UsageError::new("--rtts", format!("{d:?}"), "round-trip times above 0 (rounds are counted in them)"));
    }
    let runs = args.runs.unwrap_or(1);
    if !(1..=1000).contains(&runs) {
        return Err(UsageError::new("--runs", runs, "a whole number from 1 to 1000"));
    }
    let mut paths = Vec::new();
    for &rate_bps in &rates {
        for &rtt in &rtts {
            paths.push(GridPath { rate_bps, rtt });
        }
    }
    Ok((paths, runs, lowered))
}

fn rtt_of(r: &Rtt) -> Duration {
    Duration::from_nanos(r.one_way().0 * 2)
}

/// `ccbench conform <suite.name>`.
pub(crate) fn run(suite: &'static Suite, args: ConformArgs) -> anyhow::Result<i32> {
    for cc in args.cc.names() {
        if !judges(suite, cc) {
            return Err(UsageError::new("--cc", cc, suite.controllers_expected()).into());
        }
    }
    let (paths, runs, lowered) = grid(suite, &args)?;
    crate::error::refuse_bad_test_defects()?;
    let chosen = chosen_cases(suite, &args.cases)?;
    require_root("conform")?;
    let out = args.out.clone().unwrap_or_else(|| {
        let now = time::OffsetDateTime::now_utc();
        PathBuf::from("results").join(format!(
            "{:04}{:02}{:02}-{:02}{:02}{:02}-conform-{}",
            now.year(),
            now.month() as u8,
            now.day(),
            now.hour(),
            now.minute(),
            now.second(),
            suite.name
        ))
    });
    if let Some(j) = &args.junit {
        if let Some(dir) = j.parent().filter(|d| !d.as_os_str().is_empty() && !d.is_dir()) {
            return Err(UsageError::new("--junit", j.display(), format!("a file in an existing directory ({} is not one)", dir.display())).into());
        }
    }
    std::fs::create_dir_all(&out)?;
    let seed = args.seed.unwrap_or_else(rand_seed);
    let exe = std::env::current_exe()?;
    let cases = suite.cases;
    let scenarios: Vec<Scenario> =
        Scenario::ALL.into_iter().filter(|s| chosen.iter().any(|&i| cases[i].scenario == *s && cases[i].runnable == Runnable::Yes)).collect();
    // Every job: a controller, a path and a scenario.
    let mut jobs = Vec::new();
    for cc in args.cc.names() {
        for s in &scenarios {
            match s.own_path() {
                None => {
                    for p in &paths {
                        jobs.push((cc.clone(), *p, *s));
                    }
                }
                Some((rate_bps, rtt)) => jobs.push((cc.clone(), GridPath { rate_bps, rtt }, *s)),
            }
        }
    }
    let planned: Duration = jobs.iter().map(|j| j.2.duration(j.1.rate_bps, j.1.rtt) * runs).sum();
    println!(
        "conform {}: {} cases ({} runnable here), {} controllers × {} paths, {} runs each: {} runs, at least {:.0} min of sending; seed {seed}",
        suite.name,
        chosen.len(),
        chosen.iter().filter(|&&i| cases[i].runnable == Runnable::Yes).count(),
        args.cc.names().len(),
        paths.len(),
        runs,
        jobs.len() as u32 * runs,
        planned.as_secs_f64() / 60.0
    );
    let rtt_ms: Vec<f64> = paths.iter().map(|p| p.rtt.as_secs_f64() * 1e3).collect();
    let rate: Vec<f64> = paths.iter().map(|p| p.rate_bps).collect();
    let span = |v: &[f64]| -> (f64, f64) { (v.iter().copied().fold(f64::INFINITY, f64::min), v.iter().copied().fold(0.0, f64::max)) };
    let ((r0, r1), (b0, b1)) = (span(&rtt_ms), span(&rate));
    println!("grid: {r0}–{r1} ms × {}–{}{}", crate::units::fmt_rate(b0), crate::units::fmt_rate(b1), lowered.map(|w| format!("; {w}")).unwrap_or_default());
    let stop = crate::host::install_stop()?;
    let bar = Bar::new(jobs.len() as u64 * u64::from(runs));
    let started = Instant::now();
    let mut judged = Vec::new();
    let mut broken = Vec::new();
    for (cc, path, scenario) in &jobs {
        if stop.load(Ordering::Relaxed) {
            break;
        }
        bar.message(format!("{cc} {} {}", path.label(), scenario.name()));
        let dir = out.join(crate::conform::slug(&cc.to_string())).join(slug(&path.label())).join(scenario.name());
        let flags = run_flags(cc, *path, *scenario, runs, seed);
        let shown = format!("ccbench run {}", flags.join(" "));
        match run_one(&exe, &flags, &dir) {
            Ok(result) => match judge(cases, &result, &dir, cc, *path, *scenario, &shown, &chosen) {
                Ok(cells) => judged.extend(cells),
                Err(why) => broken.push(Broken { cc: cc.clone(), path: *path, scenario: *scenario, why }),
            },
            Err(e) => broken.push(Broken { cc: cc.clone(), path: *path, scenario: *scenario, why: format!("{e:#}") }),
        }
        bar.advance(u64::from(runs));
    }
    bar.finish();
    let interrupted = stop.load(Ordering::Relaxed);
    let ccs: &[Algorithm] = args.cc.names();
    let overall = over_grid(&judged, &paths);
    let m = matrix::Matrix { suite, ccs, grid: &paths, judged: &judged, over: &overall, broken: &broken, runs, took: started.elapsed(), chosen: &chosen };
    let mut text = matrix::text(&m);
    let mut page = matrix::page(&m);
    // A deliberately broken controller (tests only) is said first, so its matrix is never read
    // as the draft's controller's.
    if let Some(d) = ccbench_workload::test_bbr_defects().ok().flatten() {
        let line = format!("test-only: QUIC BBR built broken on purpose ({}={d})", ccbench_workload::TEST_BBR_DEFECTS_ENV);
        text = format!("\n{line}{text}");
        page.notes.insert(0, line);
    }
    print!("{text}");
    std::fs::write(out.join("conform.txt"), &text)?;
    std::fs::write(out.join("report.html"), ccbench_report::render_conform(&page))?;
    if let Some(j) = &args.junit {
        std::fs::write(j, matrix::junit(suite, &judged, &overall, &broken, &chosen))?;
    }
    println!("results: {}", out.display());
    if interrupted {
        return Ok(130);
    }
    // Over a grid, the verdicts over paths decide (a path's own cell, from fewer than 5 runs, is
    // undecided whatever it showed); a path's cell that did decide a failure still fails.
    let worst = if overall.is_empty() {
        judged.iter().fold(CellVerdict::Pass, |w, j| w.worst(j.cell.verdict))
    } else {
        let failed = judged.iter().any(|j| j.cell.verdict == CellVerdict::Fail);
        overall.iter().fold(if failed { CellVerdict::Fail } else { CellVerdict::Pass }, |w, o| w.worst(o.cell.verdict))
    };
    Ok(match worst {
        _ if !broken.is_empty() => 1,
        CellVerdict::Fail => 1,
        CellVerdict::Undecided => 2,
        CellVerdict::Pass | CellVerdict::NotObservable => 0,
    })
}

/// Whether `suite` judges `cc`: one of its controllers or another of their family (`tcp:bbr3`
/// as well as `tcp:bbr`).
fn judges(suite: &Suite, cc: &Algorithm) -> bool {
    suite.controllers.iter().filter_map(|c| c.parse::<Algorithm>().ok()).any(|c| c.family() == cc.family())
}

/// `--case`: the suite's indices of the cases asked for (every case without it). A case is named
/// by its number as the matrix shows it (`A.1`, `§5.3.2`), case-insensitively, the `§` optional.
fn chosen_cases(suite: &Suite, asked: &[String]) -> Result<Vec<usize>, UsageError> {
    let cases = suite.cases;
    if asked.is_empty() {
        return Ok((0..cases.len()).collect());
    }
    let key = |s: &str| s.trim().trim_start_matches('§').to_ascii_lowercase();
    let runnable: Vec<&str> = cases.iter().filter(|c| c.runnable == Runnable::Yes).map(|c| c.id).collect();
    let mut out = Vec::new();
    for a in asked {
        let Some(i) = cases.iter().position(|c| key(c.id) == key(a)) else {
            return Err(UsageError::new("--case", a, format!("case numbers of the suite, comma-separated: {}", runnable.join(", "))));
        };
        if let Runnable::Needs(what) = cases[i].runnable {
            return Err(UsageError::new("--case", a, format!("a case runnable here ({} needs {what}): {}", cases[i].id, runnable.join(", "))));
        }
        if !out.contains(&i) {
            out.push(i);
        }
    }
    out.sort();
    Ok(out)
}

fn rand_seed() -> u64 {
    let t = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_nanos() as u64);
    t ^ u64::from(std::process::id()).rotate_left(32)
}

pub(crate) fn slug(s: &str) -> String {
    s.chars().map(|c| if c.is_ascii_alphanumeric() || c == '-' || c == '.' { c } else { '-' }).collect()
}

fn run_flags(cc: &Algorithm, path: GridPath, scenario: Scenario, runs: u32, seed: u64) -> Vec<String> {
    // With cross traffic, a mix whose first flow (`flow-0`) is the controller under test and
    // the only one judged; the competitor starts `--stagger` after it.
    let mut f: Vec<String> = match scenario.cross() {
        None => vec!["--cc".into(), cc.to_string()],
        Some((other, at)) => {
            let mut f = vec!["--flows".into(), format!("{cc}:1,{other}:1")];
            if !at.is_zero() {
                f.extend(["--stagger".into(), format!("{}s", at.as_secs())]);
            }
            f
        }
    };
    f.extend(["--runs".into(), runs.to_string(), "--duration".into(), format!("{}s", scenario.duration(path.rate_bps, path.rtt).as_secs())]);
    let every = scenario.sample_interval(path.rtt);
    let every = if every.subsec_micros().is_multiple_of(1000) { format!("{}ms", every.as_millis()) } else { format!("{}us", every.as_micros()) };
    f.extend(["--sample-interval".into(), every, "--seed".into(), seed.to_string()]);
    f.extend(scenario.path_flags(path.rate_bps, path.rtt));
    // `run --qlog` writes a mix's connections none (its runs are no one algorithm's).
    if cc.is_quic() && scenario.cross().is_none() {
        f.push("--qlog".into());
    }
    f
}

/// One `ccbench run` into `dir`; its result.json read back.
fn run_one(exe: &Path, flags: &[String], dir: &Path) -> anyhow::Result<ExperimentResult> {
    let out = Command::new(exe).arg("run").args(flags).arg("--out").arg(dir).stdin(Stdio::null()).stdout(Stdio::null()).stderr(Stdio::piped()).output()?;
    let file = dir.join("result.json");
    if !file.exists() {
        let err = String::from_utf8_lossy(&out.stderr);
        anyhow::bail!("ccbench run exited with {}: {}", out.status, err.lines().last().unwrap_or(""));
    }
    Ok(serde_json::from_slice(&std::fs::read(&file)?)?)
}

/// Every runnable case of `scenario` among `cases`, each assertion over the runs.
#[allow(clippy::too_many_arguments)]
fn judge(
    cases: &[ccbench_conform::Case],
    result: &ExperimentResult,
    dir: &Path,
    cc: &Algorithm,
    path: GridPath,
    scenario: Scenario,
    shown: &str,
    chosen: &[usize],
) -> Result<Vec<Judged>, String> {
    let (rate_bps, rate_step) = scenario.bottleneck(path.rate_bps);
    let facts = PathFacts { rate_bps, rtt: path.rtt, mss: series::PACKET, rate_step };
    let mut traces = Vec::new();
    for r in &result.runs {
        let Some(files) = r.series.as_ref().filter(|_| r.status == Status::Complete) else { continue };
        let mut rows = series::rows(&dir.join(&files.tcp)).map_err(|e| format!("run {}: {e:#}", r.index))?;
        // The flow under test: the first flow's sending socket (a mix's others are cross
        // traffic, not judged), and its controller's own state changes.
        let senders = r.workload.as_ref().map(|w| w.senders()).unwrap_or_default();
        let events = senders.first().map_or(&[][..], |s| s.bbr_events);
        if let Some(rows) = rows.remove(UNDER_TEST).or_else(|| rows.into_values().next()) {
            traces.push(series::trace(&rows, facts, SAMPLE, events));
        }
    }
    if traces.is_empty() {
        let why = result.runs.iter().find_map(|r| r.error.clone()).unwrap_or_else(|| "no completed run".into());
        return Err(why);
    }
    let mut out = Vec::new();
    for (ci, case) in cases.iter().enumerate().filter(|(i, c)| chosen.contains(i) && c.scenario == scenario && c.runnable == Runnable::Yes) {
        for (ai, a) in case.assertions.iter().enumerate() {
            let checks: Vec<RunCheck> = traces.iter().map(|t| a.check(t)).collect();
            let cell = over_runs(a.rule(&traces[0]), &checks, ALPHA);
            out.push(Judged { case: ci, assertion: ai, cc: cc.clone(), path, cell, command: shown.to_string() });
        }
    }
    Ok(out)
}

/// `run --qlog`: a `.sqlog` per QUIC connection of each run, beside its series; returns the
/// files written.
pub(crate) fn write_qlogs(result: &ExperimentResult, out: &Path) -> anyhow::Result<Vec<PathBuf>> {
    let mut written = Vec::new();
    for r in result.runs.iter().filter(|r| r.cc.algorithm().is_some_and(Algorithm::is_quic)) {
        let Some(files) = &r.series else { continue };
        let tcp = out.join(&files.tcp);
        if !tcp.exists() {
            continue;
        }
        let dir = tcp.parent().unwrap_or(out).to_path_buf();
        // The first sender's state changes go with the first socket, as in `judge`.
        let senders = r.workload.as_ref().map(|w| w.senders()).unwrap_or_default();
        let mut events = senders.first().map_or(&[][..], |s| s.bbr_events);
        for (socket, rows) in series::rows(&tcp)? {
            let title = format!("ccbench run {} {} {}", r.index, r.cc, socket);
            let file = dir.join(format!("{}.sqlog", slug(&socket)));
            let changes = series::qlog_changes(&rows, std::mem::take(&mut events));
            std::fs::write(&file, ccbench_conform::qlog::write(&title, "server", &series::qlog_samples(&rows), &changes))?;
            written.push(file);
        }
    }
    Ok(written)
}

/// Cells by case, for the matrix: `(case, assertion) → (cc, path) → cell`.
pub(crate) type ByCase<'a> = BTreeMap<(usize, usize), Vec<&'a Judged>>;

#[cfg(test)]
mod tests {
    use super::*;

    fn ms(m: u64) -> Duration {
        Duration::from_millis(m)
    }

    /// Every suite of the registry is a subcommand of `conform`, and each subcommand runs its
    /// own suite with the suite's `--cc` default, whose controllers it judges.
    #[test]
    fn every_suite_is_a_subcommand_that_runs_it() {
        use clap::CommandFactory;
        let cli = crate::cli::Cli::command();
        let mut commands: Vec<&str> = cli.find_subcommand("conform").unwrap().get_subcommands().map(|c| c.get_name()).collect();
        let mut names: Vec<&str> = ccbench_conform::SUITES.iter().map(|s| s.name).collect();
        commands.sort();
        names.sort();
        assert_eq!(commands, names);
        for name in names {
            let Ok(crate::cli::Cli { command: crate::cli::Command::Conform(which) }) = crate::cli::parse_from(["ccbench", "conform", name]) else {
                panic!("conform {name}")
            };
            let (suite, args) = which.suite();
            assert_eq!(suite.name, name);
            let default: Vec<String> = args.cc.names().iter().map(|c| c.to_string()).collect();
            assert_eq!(default.join(","), suite.default_cc, "{name}");
            assert!(args.cc.names().iter().all(|c| judges(suite, c)), "{name}");
        }
    }

    /// A cross-traffic scenario's run is a mix whose first flow is the controller under test,
    /// the competitor `--stagger` after it; no `--cc`, and no `--qlog` (a mix writes none).
    #[test]
    fn cross_traffic_runs_as_a_mix_led_by_the_controller_under_test() {
        let path = GridPath { rate_bps: 20e6, rtt: ms(80) };
        let cc: Algorithm = "quic:bbr3".parse().unwrap();
        let f = run_flags(&cc, path, Scenario::CrossArrives, 1, 7).join(" ");
        assert!(f.starts_with("--flows quic:bbr3:1,tcp:cubic:1 --stagger 4s --runs 1 --duration 24s "), "{f}");
        assert!(!f.contains("--cc") && !f.contains("--qlog"), "{f}");
        let f = run_flags(&cc, path, Scenario::CrossQueue, 1, 7).join(" ");
        assert!(f.starts_with("--flows quic:bbr3:1,tcp:cubic:1 --runs 1 --duration 12s ") && !f.contains("--stagger"), "{f}");
        let f = run_flags(&cc, path, Scenario::Bulk, 1, 7).join(" ");
        assert!(f.starts_with("--cc quic:bbr3 ") && f.ends_with("--qlog"), "{f}");
    }
}
