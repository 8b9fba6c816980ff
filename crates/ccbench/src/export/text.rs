//! The ten-second terminal summary, in the spirit of hyperfine.

use ccbench_stats::fmt_alpha;
use std::fmt::Write as _;

use crate::describe::describe;
use crate::results::{CcSummary, ExperimentResult, Status};
use crate::run_workload::WorkloadSpec;
use crate::units::fmt_rate;
use ccbench_workload::Headline;

/// The lines before the runs: the path (or the remote), the workload, the runs and the seed.
pub fn header(result_params: &crate::results::Params) -> String {
    let p = result_params;
    let mut out = String::new();
    match &p.path {
        Some(path) => path_lines(&mut out, path),
        None => {
            let remote = p.remote.as_deref().unwrap_or("?");
            let _ = writeln!(out, "Path      real: ccbench serve at {remote} (no emulator: queue and drop figures are absent)");
        }
    }
    let runs =
        if p.runs_auto { format!("runs until decided, at most {} per algorithm", p.runs_per_cc) } else { format!("{} runs per algorithm", p.runs_per_cc) };
    let _ = writeln!(out, "Workload  {}; {runs}, interleaved (seed {})", p.workload.describe_for(&p.ccs), p.seed);
    out
}

fn path_lines(out: &mut String, path: &ccbench_emu::PathSpec) {
    let down = describe(&path.down);
    let up = describe(&path.up);
    let rtt_ms = (path.down.delay_ns + path.up.delay_ns).as_nanos() as f64 / 1e6;
    if down == up {
        let _ = writeln!(out, "Path      {down} (both directions; base RTT {rtt_ms} ms)");
    } else {
        let _ = writeln!(out, "Path      down: {down}");
        let _ = writeln!(out, "          up:   {up} (base RTT {rtt_ms} ms)");
    }
    // Flows with access links of their own (`--flows bbr:1@10ms,cubic:1@60ms`): each flow's RTT
    // is the base RTT plus its own.
    if !path.access.is_empty() {
        let mut rtts: Vec<u64> = path.access.iter().map(|a| 2 * a.one_way_ns).collect();
        rtts.sort_unstable();
        rtts.dedup();
        let shown: Vec<String> = rtts.iter().map(|&r| crate::units::fmt_ms(r)).collect();
        let _ = writeln!(out, "          flows' own access RTTs {} on top of the base RTT (a BDP buffer is sized from the largest flow RTT)", shown.join(", "));
    }
}

/// "done in …": the median over every run, where an unfinished one counts as longer than the
/// timeout; "> timeout" when the median run did not finish.
fn done_in(s: &CcSummary, timeout_s: f64) -> Option<String> {
    let c = s.completion_time_s.as_ref();
    if s.unfinished == 0 {
        return c.map(|c| format!("done in {:.2} s ± {:.2}", c.median, (c.p75 - c.p25) / 2.0));
    }
    if c.is_none() && s.completion_time_median_s.is_none() && s.unfinished < s.runs {
        return None;
    }
    let median = match s.completion_time_median_s {
        Some(t) => format!("{t:.2} s"),
        None => format!("> {timeout_s} s"),
    };
    Some(format!("done in {median} (median; {} of {} runs unfinished)", s.unfinished, s.runs))
}

fn line(s: &CcSummary, width: usize, timeout_s: f64) -> String {
    let Some(g) = &s.goodput_bps else {
        return format!("  {:<width$}  no completed runs", s.cc);
    };
    let mut out = format!("  {:<width$}  goodput {:>12} ± {:<12}", s.cc, fmt_rate(g.median), fmt_rate((g.p75 - g.p25) / 2.0));
    if let Some(d) = done_in(s, timeout_s) {
        let _ = write!(out, " {d}");
    }
    if let Some(l) = &s.latency_p99_s {
        let _ = write!(out, "  request p99 {:.2} s", l.median);
    }
    if let Some(t) = &s.html_ttfb_s {
        let _ = write!(out, "  HTML TTFB {:.0} ms", t.median * 1000.0);
    }
    if let (Some(p50), Some(p95)) = (&s.sender_rtt_p50_ms, &s.sender_rtt_p95_ms) {
        let _ = write!(out, "  RTT p50 {:>6.1} ms p95 {:>6.1} ms", p50.median, p95.median);
    }
    if let Some(r) = &s.retrans_rate {
        let _ = write!(out, "  retrans {:>5.2} %", r.median * 100.0);
    }
    if let (Some(l), Some(b)) = (&s.drops_loss, &s.drops_buffer) {
        let _ = write!(out, "  drops: {:.0} loss, {:.0} buffer", l.median, b.median);
        if let Some(a) = s.drops_aqm.as_ref().filter(|a| a.median > 0.0) {
            let _ = write!(out, ", {:.0} AQM", a.median);
        }
    }
    if let Some(c) = s.ce_marks.as_ref().filter(|c| c.median > 0.0) {
        let _ = write!(out, "  CE marks {:.0}", c.median);
    }
    out
}

/// How flows shared the bottleneck, for a run with several flows.
fn sharing_lines(s: &CcSummary) -> String {
    let mut out = String::new();
    let fair = 1.0 / s.shares.iter().map(|x| x.flows).sum::<usize>().max(1) as f64;
    for sh in &s.shares {
        // The order-statistic interval's level is its true coverage (75 % for 3 runs): print it.
        let ci = sh.share_ci.map(|c| format!(" ({:.1} % CI {:.0}–{:.0} %)", c.level * 100.0, c.lo * 100.0, c.hi * 100.0)).unwrap_or_default();
        // Its own RTT: in a mix the RTT figures above are the whole mix's.
        let rtt = sh.sender_rtt_p95_ms.as_ref().map(|r| format!("; its RTT p95 {:.1} ms", r.median)).unwrap_or_default();
        let _ = writeln!(
            out,
            "  {} ({} flow{}): {:.0} % of the bottleneck{ci}; a fair share would be {:.0} %{rtt}",
            sh.cc,
            sh.flows,
            if sh.flows == 1 { "" } else { "s" },
            sh.share.median * 100.0,
            fair * sh.flows as f64 * 100.0
        );
    }
    if let Some(j) = &s.jain_index {
        let _ = write!(out, "  Jain's fairness index {:.2} (1 = equal shares; median over {} runs, while all flows were active)", j.median, j.n);
    }
    out
}

/// One line per expectation × algorithm, then which did not pass.
pub fn expectations(result: &ExperimentResult) -> String {
    use ccbench_stats::expectation::Judgement;
    let mut out = String::new();
    let alpha = result.expectations.first().map_or(result.params.alpha, |e| e.alpha);
    let _ = writeln!(out, "\n  Expectations (median over runs; one-sided order-statistic bounds at their exact level, judged at α = {}):", fmt_alpha(alpha));
    for e in &result.expectations {
        let _ = writeln!(out, "    {}", e.line());
    }
    let not: Vec<String> = result.expectations.iter().filter(|e| e.result != Judgement::Pass).map(|e| format!("{}: {}", e.cc, e.expect)).collect();
    let _ = match not.len() {
        0 => writeln!(out, "  all {} expectations pass", result.expectations.len()),
        n => writeln!(out, "  {n} of {} expectations did not pass: {}", result.expectations.len(), not.join("; ")),
    };
    out
}

/// The summary after the runs: one line per algorithm, the verdicts, the expectations, and
/// where the files are (`location`, the output directory).
pub fn summary(result: &ExperimentResult, location: Option<&std::path::Path>) -> String {
    let mut out = String::new();
    let width = result.summary.iter().map(|s| s.cc.len()).max().unwrap_or(4);
    out.push('\n');
    for s in &result.summary {
        let _ = writeln!(out, "{}", line(s, width, result.params.workload.timeout_s()));
    }
    let _ = writeln!(out, "  (medians over runs; ± is half the interquartile range; RTT is the sender's smoothed RTT; drops on the data direction per run)");
    out.push('\n');
    for c in &result.comparisons {
        let _ = writeln!(out, "  {}", c.sentence(&result.params.metric));
    }
    for c in &result.rtt_comparisons {
        let _ = writeln!(out, "  RTT: {}", c.sentence("median sender RTT"));
    }
    if let Some(c) = result.comparisons.iter().chain(&result.rtt_comparisons).find(|c| c.family_size > 1) {
        let _ = writeln!(
            out,
            "  (p-values Holm-adjusted over all {} pairs of algorithms, separately for the score and for RTT, so that the chance of any false \"better\" stays at {})",
            c.family_size,
            fmt_alpha(result.params.alpha)
        );
    }
    out.push_str(&super::why::lines(result));
    if !result.expectations.is_empty() {
        out.push_str(&expectations(result));
    }
    if let Some(seq) = &result.sequential {
        let last = seq.looks.last().map_or(0, |l| l.runs_per_cc);
        // Recorded per look since the exact expectation design (whose levels do not add up).
        let spent: f64 = seq.looks.last().and_then(|l| l.spent).unwrap_or_else(|| seq.looks.iter().map(|l| l.alpha).sum());
        let planned = if seq.planned.is_empty() { String::new() } else { format!(" of {} planned", seq.planned.len()) };
        let look_alpha = fmt_alpha(seq.looks.last().map_or(0.0, |l| l.alpha));
        let contenders = (seq.design.as_deref() != Some(crate::experiment::EXPECTATION_DESIGN)).then_some(result.params.ccs.len());
        let idle = ccbench_stats::sequential::idle_tail(&seq.planned, contenders);
        let _ = match seq.decided_after_runs {
            Some(n) => writeln!(
                out,
                "  (--runs auto: decided after {n} runs per algorithm, at look {}{planned} with α = {look_alpha} for that look; the looks taken spent α = {} of {})",
                seq.looks.len(),
                fmt_alpha(spent),
                fmt_alpha(result.params.alpha)
            ),
            // Issue 28 §6: the runs after the last look that can decide were not run.
            None if result.status != Status::Interrupted && idle.is_some_and(|(first, _)| first == last as usize + 1) => {
                let (first, max) = idle.unwrap_or_default();
                let runs = if first == max { format!("run {first}") } else { format!("runs {first}–{max}") };
                writeln!(
                    out,
                    "  (--runs auto: undecided after {last} runs per algorithm; {runs} of --max-runs {max} could not change the verdict (no later look can decide), so {} not run; the {} looks spent α = {} in all, the last at α = {look_alpha})",
                    if first == max { "it was" } else { "they were" },
                    seq.looks.len(),
                    fmt_alpha(spent)
                )
            }
            // Ctrl-C (or any end before the last planned look): say where it stopped.
            None if result.status == Status::Interrupted || seq.planned.last().is_some_and(|p| (last as usize) < p.runs) => writeln!(
                out,
                "  (--runs auto: interrupted after {last} runs per algorithm, at look {}{planned} (α = {look_alpha} for that look), before --max-runs; undecided; the looks taken spent α = {} of {})",
                seq.looks.len(),
                fmt_alpha(spent),
                fmt_alpha(result.params.alpha)
            ),
            None => writeln!(
                out,
                "  (--runs auto: undecided after {last} runs per algorithm, the maximum (--max-runs); the {} looks spent α = {} in all, the last at α = {look_alpha})",
                seq.looks.len(),
                fmt_alpha(spent)
            ),
        };
    }
    for s in result.summary.iter().filter(|s| !s.runs_without_score.is_empty()) {
        let runs: Vec<String> = s.runs_without_score.iter().map(|r| r.to_string()).collect();
        let _ = writeln!(
            out,
            "  {}: {} run{} without a score, left out of the verdict: run {}",
            s.cc,
            runs.len(),
            if runs.len() == 1 { "" } else { "s" },
            runs.join(", ")
        );
    }
    if let Some(c) = result.comparisons.first().filter(|c| c.min_effect > 0.0) {
        let _ = writeln!(
            out,
            "  (a difference below --min-effect {} % is not called a win; ratios are Hodges–Lehmann; tests and intervals are the permuted Brunner–Munzel test)",
            c.min_effect * 100.0
        );
    }
    for s in result.summary.iter().filter(|s| s.unfinished > 0) {
        let _ = writeln!(
            out,
            "  {}: {} of {} runs did not finish within the timeout; they count as censored scores that rank at or below every finished run",
            s.cc, s.unfinished, s.runs
        );
    }
    for s in &result.summary {
        if s.shares.len() > 1 || s.jain_index.is_some() {
            let _ = writeln!(out, "{}", sharing_lines(s));
        }
    }
    if result.comparisons.is_empty() && result.summary.len() > 1 {
        let _ = writeln!(out, "  no verdict: too few completed runs");
    }
    match result.status {
        Status::Complete => {}
        Status::Interrupted => {
            let _ = writeln!(out, "\n  interrupted: {} run(s) finished and are kept", result.runs.iter().filter(|r| r.status == Status::Complete).count());
        }
        Status::Failed => {
            let err = result.runs.iter().rev().find_map(|r| r.error.clone()).unwrap_or_default();
            let _ = writeln!(out, "\n  failed: {err}");
        }
    }
    let suspect: Vec<&crate::results::RunRecord> = result.runs.iter().filter(|r| !r.suspect.is_empty()).collect();
    if !suspect.is_empty() {
        let _ = writeln!(
            out,
            "\n  warning: {} of {} runs are flagged suspect, e.g. run {} ({}): {}",
            suspect.len(),
            result.runs.len(),
            suspect[0].index + 1,
            suspect[0].cc,
            suspect[0].suspect.join("; ")
        );
        let _ = writeln!(out, "           (see \"suspect\" per run in the JSON; the verdict uses every completed run)");
    }
    if let Some(dir) = location {
        let _ = writeln!(out, "\nResults   {} (plots: {})", dir.join("result.json").display(), dir.join("report.html").display());
    }
    out
}

/// The human headline of one algorithm's runs, in the workload's own terms.
fn headline(s: &CcSummary, workload: &WorkloadSpec) -> String {
    let med = |x: &Option<ccbench_stats::Summary>| x.as_ref().map(|v| v.median);
    match workload.headline() {
        // The median over every run: an unfinished run counts as longer than any finished one.
        Headline::FileCompletion => match s.completion_time_median_s {
            Some(t) if s.unfinished == 0 => format!("{t:.2} s"),
            Some(t) => format!("{t:.2} s ({} of {} unfinished)", s.unfinished, s.runs),
            None => med(&s.goodput_bps).map(|g| format!("unfinished ({})", fmt_rate(g))).unwrap_or("–".into()),
        },
        Headline::Goodput => {
            med(&s.goodput_bps).map(|g| format!("{} (RTT p95 {:.0} ms)", fmt_rate(g), med(&s.sender_rtt_p95_ms).unwrap_or(0.0))).unwrap_or("–".into())
        }
        Headline::ContentThroughput => med(&s.goodput_bps).map(|g| format!("{:.1} MB/s", g / 8e6)).unwrap_or("–".into()),
        Headline::PageLoad => match s.completion_time_median_s {
            Some(t) if s.unfinished == 0 => format!("{:.0} ms", t * 1000.0),
            Some(t) => format!("{:.0} ms ({} of {} unfinished)", t * 1000.0, s.unfinished, s.runs),
            None if s.runs > 0 => format!("unfinished ({} of {})", s.unfinished, s.runs),
            None => "–".into(),
        },
        // The workload's own figure: its median score in the unit it names.
        Headline::Score(f) => match med(&s.score) {
            Some(v) if s.unfinished == 0 => format!("{:.1} {}", v / f.per_unit, f.unit),
            Some(v) => format!("{:.1} {} ({} of {} unfinished)", v / f.per_unit, f.unit, s.unfinished, s.runs),
            None => "–".into(),
        },
    }
}

/// One row of the table across conditions: each algorithm's median headline, and the verdict.
pub fn condition_row(r: &ExperimentResult) -> (String, String) {
    let per_cc: Vec<String> = r.summary.iter().map(|s| format!("{} {}", s.cc, headline(s, &r.params.workload))).collect();
    (per_cc.join(", "), r.verdict_short())
}

/// The compact table a preset prints after its conditions.
pub fn across_conditions(rows: &[(String, ExperimentResult)]) -> String {
    let lines: Vec<[String; 3]> = rows
        .iter()
        .map(|(name, r)| {
            let (median, verdict) = condition_row(r);
            let verdict = match ccbench_stats::expectation::overall(r.expectations.iter().map(|e| e.result)) {
                Some(j) => format!("[expect: {}] {verdict}", j.word()),
                None => verdict,
            };
            [name.clone(), median, verdict]
        })
        .collect();
    table("Across conditions", "condition", &lines)
}

/// A table of rows `[name, medians, verdict]` under `title`, its first column headed `first`
/// (a sweep's table is made from rows stored with its cells).
pub fn table(title: &str, first: &str, lines: &[[String; 3]]) -> String {
    let mut out = format!("{title}\n");
    let w0 = lines.iter().map(|l| l[0].chars().count()).max().unwrap_or(0).max(first.chars().count());
    let w1 = lines.iter().map(|l| l[1].chars().count()).max().unwrap_or(0).max(6);
    let _ = writeln!(out, "  {:<w0$}  {:<w1$}  verdict", first, "median");
    for l in lines {
        let _ = writeln!(out, "  {:<w0$}  {:<w1$}  {}", l[0], l[1], l[2]);
    }
    out
}
