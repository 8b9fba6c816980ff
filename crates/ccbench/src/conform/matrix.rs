//! The conformance matrix: case × assertion down, controller × path across, in the terminal (and
//! conform.txt) with each cell's evidence below, as report.html's page and as JUnit XML. Each case is named by its
//! appendix number and title (`A.1 Exiting STARTUP on Bandwidth Plateau`) everywhere.

use std::fmt::Write;
use std::time::Duration;

use ccbench_conform::{Case, CellVerdict, Runnable, Suite};
use ccbench_report::{ConformPage, MatrixCase, MatrixCell, MatrixRow, MatrixVerdict};
use quick_xml::escape::escape;

use ccbench_model::workload::Algorithm;

use super::{Broken, ByCase, GridPath, Judged, OverPaths};

/// Everything a matrix shows.
pub(crate) struct Matrix<'a> {
    pub(crate) suite: &'static Suite,
    pub(crate) ccs: &'a [Algorithm],
    pub(crate) grid: &'a [GridPath],
    pub(crate) judged: &'a [Judged],
    /// Each assertion over the grid's paths (empty on a grid of one path).
    pub(crate) over: &'a [OverPaths],
    pub(crate) broken: &'a [Broken],
    pub(crate) runs: u32,
    pub(crate) took: Duration,
    pub(crate) chosen: &'a [usize],
}

impl Matrix<'_> {
    fn over(&self, case: usize, assertion: usize, cc: &Algorithm) -> Option<&OverPaths> {
        self.over.iter().find(|o| o.case == case && o.assertion == assertion && &o.cc == cc)
    }
}

/// The over-paths column's heading.
const OVER: &str = "over paths";

fn short(v: CellVerdict) -> &'static str {
    match v {
        CellVerdict::Pass => "pass",
        CellVerdict::Fail => "FAIL",
        CellVerdict::Undecided => "undec",
        CellVerdict::NotObservable => "n/o",
    }
}

fn passes(j: &Judged) -> String {
    tally_short(&j.cell)
}

/// `3/5`: of a cell's runs (or of the paths over paths) how many passed.
fn tally_short(c: &ccbench_conform::Cell) -> String {
    let n = c.runs.len();
    let p = c.runs.iter().filter(|o| **o == ccbench_conform::Outcome::Pass).count();
    format!("{p}/{n}")
}

/// The matrix as text.
pub(crate) fn text(m: &Matrix) -> String {
    let (ccs, grid, judged, broken, runs, took, chosen) = (m.ccs, m.grid, m.judged, m.broken, m.runs, m.took, m.chosen);
    let cases = m.suite.cases;
    let mut by = ByCase::new();
    for j in judged {
        by.entry((j.case, j.assertion)).or_default().push(j);
    }
    let mut paths: Vec<GridPath> = grid.to_vec();
    for j in judged {
        if !paths.contains(&j.path) {
            paths.push(j.path);
        }
    }
    let mut s = String::new();
    let _ = writeln!(
        s,
        "\nconform {}: {}, {} controllers × {} paths, {runs} run(s) per cell, {:.1} min",
        m.suite.name,
        m.suite.spec,
        ccs.len(),
        grid.len(),
        took.as_secs_f64() / 60.0
    );
    let _ = writeln!(
        s,
        "cells: pass / FAIL / undec(ided) / n/o (not observable) over the runs (--expect's rules: 5 runs or more at α = 0.05), then how many runs passed"
    );
    if !m.over.is_empty() {
        let _ = writeln!(
            s,
            "{OVER}: the assertion over the grid's {} paths, the same rules on each path's share of runs passed against ½ (5 observable paths or more decide: pass = it holds on most paths of such a grid, not on every one), then how many paths passed",
            grid.len()
        );
    }
    const W: usize = 62;
    for cc in ccs {
        let _ = write!(s, "\n{:W$}", cc.to_string());
        for p in &paths {
            let _ = write!(s, " {:>13}", p.label());
        }
        if !m.over.is_empty() {
            let _ = write!(s, " {OVER:>13}");
        }
        s.push('\n');
        for (ci, case) in cases.iter().enumerate().filter(|(i, c)| chosen.contains(i) && c.runnable == Runnable::Yes) {
            let _ = writeln!(s, "{}  [{}]", case.name(), case.sections);
            for (ai, a) in case.assertions.iter().enumerate() {
                let mut line = format!("  {}", a.describe());
                if line.chars().count() > W {
                    line = line.chars().take(W - 1).collect::<String>() + "…";
                }
                let _ = write!(s, "{line:W$}");
                for p in &paths {
                    let cell = by.get(&(ci, ai)).and_then(|v| v.iter().find(|j| &j.cc == cc && j.path == *p));
                    let word = match cell {
                        Some(j) => format!("{} {}", short(j.cell.verdict), passes(j)),
                        None if broken.iter().any(|b| &b.cc == cc && b.path == *p && b.scenario == case.scenario) => "error".into(),
                        None => "—".into(),
                    };
                    let _ = write!(s, " {word:>13}");
                }
                if !m.over.is_empty() {
                    let word = m.over(ci, ai, cc).map_or("—".into(), |o| format!("{} {}", short(o.cell.verdict), tally_short(&o.cell)));
                    let _ = write!(s, " {word:>13}");
                }
                s.push('\n');
            }
        }
    }
    let not_runnable = not_runnable(m.suite, chosen);
    if !not_runnable.is_empty() {
        let _ = writeln!(s, "\nnot runnable here yet:");
        for (c, what) in &not_runnable {
            let _ = writeln!(s, "  {}: needs {what}", c.name());
        }
    }
    if !broken.is_empty() {
        let _ = writeln!(s, "\ncould not be judged:");
        for b in broken {
            let _ = writeln!(s, "  {} {} {}: {}", b.cc, b.path.label(), b.scenario.name(), b.why);
        }
    }
    let _ = writeln!(s, "\nevidence (one run's; a failing one where any failed):");
    for ((ci, ai), cells) in &by {
        let case = &cases[*ci];
        let _ = writeln!(s, "  {} — {}", case.name(), case.assertions[*ai].describe());
        for j in cells {
            let _ = writeln!(s, "    {} {}: {} ({}) — {}", j.cc, j.path.label(), j.cell.verdict.word(), j.cell.tally(), j.cell.evidence);
        }
        for o in m.over.iter().filter(|o| o.case == *ci && o.assertion == *ai) {
            let _ = writeln!(s, "    {} {OVER}: {} ({} paths) — {}", o.cc, o.cell.verdict.word(), o.cell.tally(), o.cell.evidence);
        }
    }
    let mut commands: Vec<&str> = judged.iter().map(|j| j.command.as_str()).collect();
    commands.sort();
    commands.dedup();
    let _ = writeln!(s, "\nreproduce a cell's runs with:");
    for c in commands {
        let _ = writeln!(s, "  {c}");
    }
    s
}

/// The chosen cases ccbench cannot run yet, with what each needs.
fn not_runnable(suite: &'static Suite, chosen: &[usize]) -> Vec<(&'static Case, &'static str)> {
    chosen
        .iter()
        .filter_map(|&i| match suite.cases[i].runnable {
            Runnable::Needs(what) => Some((&suite.cases[i], what)),
            Runnable::Yes => None,
        })
        .collect()
}

/// JUnit XML: a testsuite per controller, a testcase per case × assertion × path, named by the
/// case; fail and undecided are failures (as `run --junit`), not observable and not runnable are
/// skipped with the reason. On a grid, a testcase per case × assertion over the paths too
/// (`[over paths]`).
pub(crate) fn junit(suite: &'static Suite, judged: &[Judged], over: &[OverPaths], broken: &[Broken], chosen: &[usize]) -> String {
    let not_runnable = not_runnable(suite, chosen);
    let class = format!("conform.{}", suite.name);
    let mut ccs: Vec<&Algorithm> = judged.iter().map(|j| &j.cc).chain(broken.iter().map(|b| &b.cc)).collect();
    ccs.sort_by_key(|c| c.to_string());
    ccs.dedup();
    let mut s = format!("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<testsuites name=\"ccbench conform {}\">\n", suite.name);
    for cc in ccs {
        let (cc, name) = (cc, cc.to_string());
        // Each path's cells, then the cells over the paths: (case, assertion, column, cell).
        let mine: Vec<(usize, usize, String, &ccbench_conform::Cell)> = judged
            .iter()
            .filter(|j| &j.cc == cc)
            .map(|j| (j.case, j.assertion, j.path.label(), &j.cell))
            .chain(over.iter().filter(|o| &o.cc == cc).map(|o| (o.case, o.assertion, OVER.to_string(), &o.cell)))
            .collect();
        let failures = mine.iter().filter(|j| matches!(j.3.verdict, CellVerdict::Fail | CellVerdict::Undecided)).count();
        let errors = broken.iter().filter(|b| &b.cc == cc).count();
        let skipped = mine.iter().filter(|j| j.3.verdict == CellVerdict::NotObservable).count() + not_runnable.len();
        let _ = writeln!(
            s,
            "  <testsuite name=\"{}\" tests=\"{}\" failures=\"{failures}\" errors=\"{errors}\" skipped=\"{skipped}\">",
            escape(&name),
            mine.len() + errors + not_runnable.len()
        );
        for (ci, ai, column, cell) in &mine {
            let case = &suite.cases[*ci];
            let title = format!("{}: {} [{column}]", case.name(), case.assertions[*ai].describe());
            let _ = write!(s, "    <testcase name=\"{}\" classname=\"{class}.{}\"", escape(&title), escape(&name));
            let msg = format!("{} ({}): {}", cell.verdict.word(), cell.tally(), cell.evidence);
            match cell.verdict {
                CellVerdict::Pass => s.push_str("/>\n"),
                CellVerdict::Fail | CellVerdict::Undecided => {
                    let _ = writeln!(s, ">\n      <failure type=\"{}\" message=\"{}\"/>\n    </testcase>", cell.verdict.word(), escape(&msg));
                }
                CellVerdict::NotObservable => {
                    let _ = writeln!(s, ">\n      <skipped message=\"{}\"/>\n    </testcase>", escape(&msg));
                }
            }
        }
        for b in broken.iter().filter(|b| &b.cc == cc) {
            let case = format!("{} {} {}", b.scenario.name(), b.path.label(), cc);
            let _ = writeln!(
                s,
                "    <testcase name=\"{}\" classname=\"{class}.{}\">\n      <error message=\"{}\"/>\n    </testcase>",
                escape(&case),
                escape(&name),
                escape(&b.why)
            );
        }
        for (c, what) in &not_runnable {
            let _ = writeln!(
                s,
                "    <testcase name=\"{}\" classname=\"{class}.{}\">\n      <skipped message=\"not runnable here yet: needs {}\"/>\n    </testcase>",
                escape(c.name()),
                escape(&name),
                escape(*what)
            );
        }
        s.push_str("  </testsuite>\n");
    }
    s.push_str("</testsuites>\n");
    s
}

/// The matrix as `report.html`'s page: the same cells as [`text`], each linked to the report of
/// the runs it was judged on (`<controller>/<path>/<scenario>/report.html` beside it).
pub(crate) fn page(m: &Matrix) -> ConformPage {
    let (ccs, grid, judged, broken, runs, took, chosen) = (m.ccs, m.grid, m.judged, m.broken, m.runs, m.took, m.chosen);
    let suite = m.suite;
    let mut paths: Vec<GridPath> = grid.to_vec();
    for j in judged {
        if !paths.contains(&j.path) {
            paths.push(j.path);
        }
    }
    // Per controller its paths, then (on a grid) the column over them (`None`).
    let over_column = !m.over.is_empty();
    let columns: Vec<(&Algorithm, Option<GridPath>)> =
        ccs.iter().flat_map(|cc| paths.iter().map(move |p| (cc, Some(*p))).chain(over_column.then_some((cc, None)))).collect();
    let verdict = |v: CellVerdict| match v {
        CellVerdict::Pass => MatrixVerdict::Pass,
        CellVerdict::Fail => MatrixVerdict::Fail,
        CellVerdict::Undecided => MatrixVerdict::Undecided,
        CellVerdict::NotObservable => MatrixVerdict::NotObservable,
    };
    let mut cases = Vec::new();
    for (ci, case) in suite.cases.iter().enumerate().filter(|(i, c)| chosen.contains(i) && c.runnable == Runnable::Yes) {
        let mut rows = Vec::new();
        for (ai, a) in case.assertions.iter().enumerate() {
            let cells = columns
                .iter()
                .map(|(cc, p)| {
                    let Some(p) = p else {
                        return m.over(ci, ai, cc).map(|o| MatrixCell {
                            verdict: verdict(o.cell.verdict),
                            tally: format!("{} paths", o.cell.tally()),
                            evidence: o.cell.evidence.clone(),
                            runs_failed: o.cell.runs.iter().filter(|r| **r == ccbench_conform::Outcome::Fail).count(),
                            link: None,
                        });
                    };
                    let link = format!("{}/{}/{}/report.html", super::slug(&cc.to_string()), super::slug(&p.label()), case.scenario.name());
                    if let Some(j) = judged.iter().find(|j| j.case == ci && j.assertion == ai && &j.cc == *cc && j.path == *p) {
                        let runs_failed = j.cell.runs.iter().filter(|o| **o == ccbench_conform::Outcome::Fail).count();
                        return Some(MatrixCell {
                            verdict: verdict(j.cell.verdict),
                            tally: j.cell.tally(),
                            evidence: j.cell.evidence.clone(),
                            runs_failed,
                            link: Some(link),
                        });
                    }
                    broken.iter().find(|b| &b.cc == *cc && b.path == *p && b.scenario == case.scenario).map(|b| MatrixCell {
                        verdict: MatrixVerdict::Error,
                        tally: "not judged".into(),
                        evidence: b.why.clone(),
                        runs_failed: 0,
                        link: None,
                    })
                })
                .collect();
            rows.push(MatrixRow { assertion: a.describe(), cells });
        }
        cases.push(MatrixCase { name: case.name(), sections: case.sections.to_string(), rows });
    }
    let mut commands: Vec<String> = judged.iter().map(|j| j.command.clone()).collect();
    commands.sort();
    commands.dedup();
    ConformPage {
        title: format!("ccbench conform {}", suite.name),
        notes: vec![
            format!(
                "{}: {} controllers × {} paths, {runs} run(s) per cell, {:.1} min.",
                suite.spec,
                ccs.len(),
                grid.len(),
                took.as_secs_f64() / 60.0
            ),
            "Each cell is judged over its runs with --expect's exact order-statistic rules (5 runs or more at α = 0.05 decide a cell); fewer runs leave it undecided whatever they showed, the count of runs that passed beside it.".into(),
        ]
        .into_iter()
        .chain(over_column.then(|| format!("{OVER}: each assertion over the grid's {} paths, the same rules on each path's share of runs passed against ½ (5 observable paths or more decide): a pass says the case holds on most paths of such a grid, not on every one; the path's own cells say where it missed.", grid.len())))
        .collect(),
        columns: columns.iter().map(|(cc, p)| (cc.to_string(), p.map_or(OVER.to_string(), |p| p.label()))).collect(),
        cases,
        not_runnable: not_runnable(suite, chosen).into_iter().map(|(c, what)| (c.name().to_string(), what.to_string())).collect(),
        errors: broken.iter().map(|b| format!("{} {} {}: {}", b.cc, b.path.label(), b.scenario.name(), b.why)).collect(),
        commands,
    }
}
