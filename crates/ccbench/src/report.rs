//! The ten-second terminal summary, in the spirit of hyperfine.

use std::fmt::Write as _;

use crate::path::describe;
use crate::results::{CcSummary, ExperimentResult, Status};
use crate::units::fmt_rate;
use crate::workloads::WorkloadSpec;

pub fn header(result_params: &crate::results::Params) -> String {
    let p = result_params;
    let mut out = String::new();
    let down = describe(&p.path.down);
    let up = describe(&p.path.up);
    let rtt_ms = (p.path.down.delay_ns + p.path.up.delay_ns) as f64 / 1e6;
    if down == up {
        let _ = writeln!(out, "Path      {down} (both directions; base RTT {rtt_ms} ms)");
    } else {
        let _ = writeln!(out, "Path      down: {down}");
        let _ = writeln!(out, "          up:   {up} (base RTT {rtt_ms} ms)");
    }
    let _ = writeln!(out, "Workload  {}; {} runs per algorithm, interleaved (seed {})", p.workload.describe(), p.runs_per_cc, p.seed);
    out
}

fn line(s: &CcSummary, width: usize) -> String {
    let Some(g) = &s.goodput_bps else {
        return format!("  {:<width$}  no completed runs", s.cc);
    };
    let mut out = format!("  {:<width$}  goodput {:>12} ± {:<12}", s.cc, fmt_rate(g.median), fmt_rate((g.p75 - g.p25) / 2.0));
    if let Some(c) = &s.completion_time_s {
        let _ = write!(out, " done in {:.2} s ± {:.2}", c.median, (c.p75 - c.p25) / 2.0);
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
    }
    out
}

/// "bbr keeps the sender's median RTT at 0.32× cubic's …" from a comparison of RTTs whose
/// `b` is the arm with the lower median.
fn rtt_sentence(c: &ccbench_stats::Comparison) -> String {
    let p = c.mann_whitney.as_ref().map(|m| fmt_p(m.p_value)).unwrap_or_else(|| "n/a".into());
    match &c.ratio_ci {
        Some(ci) if c.significant => format!(
            "RTT: {} keeps the sender's median RTT at {:.2}× {}'s (95 % CI {:.2}–{:.2}×, p {p}, {} vs {} runs)",
            c.b,
            1.0 / ci.ratio,
            c.a,
            1.0 / ci.hi,
            1.0 / ci.lo,
            c.n_b,
            c.n_a
        ),
        Some(ci) => format!("RTT: no significant difference between {} and {} (ratio {:.2}×, p {p})", c.b, c.a, 1.0 / ci.ratio),
        None => format!("RTT: no comparison between {} and {}", c.b, c.a),
    }
}

/// How flows shared the bottleneck, for a run with several flows.
fn sharing_lines(s: &CcSummary) -> String {
    let mut out = String::new();
    let fair = 1.0 / s.shares.iter().map(|x| x.flows).sum::<usize>().max(1) as f64;
    for sh in &s.shares {
        let ci = sh.share_ci.map(|c| format!(" (95 % CI {:.0}–{:.0} %)", c.lo * 100.0, c.hi * 100.0)).unwrap_or_default();
        let _ = writeln!(
            out,
            "  {} ({} flow{}): {:.0} % of the bottleneck{ci}; a fair share would be {:.0} %",
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

pub fn summary(result: &ExperimentResult, location: Option<&std::path::Path>) -> String {
    let mut out = String::new();
    let width = result.summary.iter().map(|s| s.cc.len()).max().unwrap_or(4);
    out.push('\n');
    for s in &result.summary {
        let _ = writeln!(out, "{}", line(s, width));
    }
    let _ = writeln!(out, "  (medians over runs; ± is half the interquartile range; RTT is the sender's smoothed RTT; drops on the data direction per run)");
    out.push('\n');
    for c in &result.comparisons {
        let _ = writeln!(out, "  {}", c.sentence(&result.params.metric));
    }
    for c in &result.rtt_comparisons {
        let _ = writeln!(out, "  {}", rtt_sentence(c));
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
    match workload {
        WorkloadSpec::Bulk(b) if matches!(b.amount, ccbench_workload::Amount::Bytes(_)) => match med(&s.completion_time_s) {
            Some(t) => format!("{t:.2} s"),
            None => med(&s.goodput_bps).map(|g| format!("unfinished ({})", fmt_rate(g))).unwrap_or("–".into()),
        },
        WorkloadSpec::Bulk(_) => {
            med(&s.goodput_bps).map(|g| format!("{} (RTT p95 {:.0} ms)", fmt_rate(g), med(&s.sender_rtt_p95_ms).unwrap_or(0.0))).unwrap_or("–".into())
        }
        WorkloadSpec::Objects(_) => med(&s.goodput_bps).map(|g| format!("{:.1} MB/s", g / 8e6)).unwrap_or("–".into()),
        WorkloadSpec::Page(_) => med(&s.completion_time_s).map(|t| format!("{:.0} ms", t * 1000.0)).unwrap_or("–".into()),
    }
}

fn verdict_short(r: &ExperimentResult) -> String {
    if r.params.workload.is_mix() {
        return r
            .summary
            .iter()
            .map(|s| {
                let shares: Vec<String> = s.shares.iter().map(|sh| format!("{} {:.0} %", sh.cc, sh.share.median * 100.0)).collect();
                format!("{}; Jain {:.2}", shares.join(" / "), s.jain_index.as_ref().map(|j| j.median).unwrap_or(f64::NAN))
            })
            .collect::<Vec<_>>()
            .join("; ");
    }
    let parts: Vec<String> = r
        .comparisons
        .iter()
        .map(|c| match (&c.ratio_ci, &c.mann_whitney, &c.faster) {
            (Some(ci), Some(mw), Some(best)) if c.significant => {
                let (ratio, lo, hi) = if *best == c.a { (ci.ratio, ci.lo, ci.hi) } else { (1.0 / ci.ratio, 1.0 / ci.hi, 1.0 / ci.lo) };
                let other = if *best == c.a { &c.b } else { &c.a };
                format!("{best} {ratio:.2}× {other} (CI {lo:.2}–{hi:.2}, p {})", fmt_p(mw.p_value))
            }
            (_, Some(mw), _) => format!("no significant difference (p {})", fmt_p(mw.p_value)),
            _ => "no verdict".into(),
        })
        .collect();
    if parts.is_empty() {
        "no verdict".into()
    } else {
        parts.join("; ")
    }
}

fn fmt_p(p: f64) -> String {
    if p < 0.001 {
        "< 0.001".into()
    } else {
        format!("= {p:.2}")
    }
}

/// The compact table a preset prints after its conditions.
pub fn across_conditions(rows: &[(String, ExperimentResult)]) -> String {
    let mut out = String::from("Across conditions\n");
    let mut lines: Vec<[String; 3]> = Vec::new();
    for (name, r) in rows {
        let per_cc: Vec<String> = r.summary.iter().map(|s| format!("{} {}", s.cc, headline(s, &r.params.workload))).collect();
        lines.push([name.clone(), per_cc.join(", "), verdict_short(r)]);
    }
    let w0 = lines.iter().map(|l| l[0].chars().count()).max().unwrap_or(0).max(9);
    let w1 = lines.iter().map(|l| l[1].chars().count()).max().unwrap_or(0).max(6);
    let _ = writeln!(out, "  {:<w0$}  {:<w1$}  verdict", "condition", "median");
    for l in &lines {
        let _ = writeln!(out, "  {:<w0$}  {:<w1$}  {}", l[0], l[1], l[2]);
    }
    out
}
