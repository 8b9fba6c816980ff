//! The report's tables and text: why each algorithm got what it got (its why line and a bar
//! of its limited-by causes), every run, and the expectations judged.

use std::fmt::Write as _;

use ccbench_model::results::{ExperimentResult, Status};
use ccbench_stats::expectation::Judgement;

use super::score_unit;
use crate::svg::{escape, fmt_sig};

/// The colours of the limited-by causes, in `Cause::ALL`'s order.
const CAUSE_COLOURS: [&str; 7] = ["#1f77b4", "#2ca02c", "#8c564b", "#d62728", "#9467bd", "#ff7f0e", "#bbbbbb"];

/// Why each algorithm got what it got (issue 30): its `why` line and a bar of its limited-by
/// fractions, stacked to 100 % (CSS, no plot); nothing when no algorithm has them.
pub(super) fn why_section(result: &ExperimentResult, g: &crate::data::Gathered) -> String {
    use ccbench_model::workload::Cause;
    let whys = ccbench_model::why::why(result);
    if whys.iter().all(|w| w.limited_by.is_none()) {
        return String::new();
    }
    let mut out = String::from("<h2 id=\"why\">Why: what held each algorithm back</h2>\n<p class=\"note\">Each bar is the share of its flows' active time (from the first byte sent) that each cause held them back, for kernel TCP from TCP_INFO's chrono counters and the sampled window, for QUIC from our stack's own send states (see the manual's chapter on limited-by, docs/why.md).</p>\n<p>");
    for (c, colour) in Cause::ALL.iter().zip(CAUSE_COLOURS) {
        let _ = write!(out, "<span style=\"display:inline-block;width:0.9em;height:0.9em;background:{colour};margin:0 0.3em 0 1em\"></span>{}", c.name());
    }
    out.push_str("</p>\n");
    for w in &whys {
        let _ = write!(
            out,
            "<div class=\"why\"><div><b>{}</b> — {}</div><div style=\"display:flex;height:1.2em;width:100%;max-width:40em;border:1px solid #999\">",
            escape(&w.cc),
            escape(&w.text())
        );
        if let Some(l) = w.limited_by {
            for (c, colour) in Cause::ALL.iter().zip(CAUSE_COLOURS) {
                let share = l.get(*c) * 100.0;
                if share > 0.05 {
                    let _ = write!(out, "<div title=\"{} {share:.1} %\" style=\"width:{share:.2}%;background:{colour}\"></div>", c.name());
                }
            }
        }
        out.push_str("</div></div>\n");
        if let Some(strip) = g.runs.iter().filter(|v| v.median).flat_map(|v| &v.strip).find(|s| s.key == w.cc) {
            out.push_str(&strip_html(strip));
        }
    }
    out
}

/// The strip over time of one algorithm's median run: a column per bin, its causes stacked
/// (bottom up in `Cause::ALL`'s order) by their share of the bin's time.
fn strip_html(s: &crate::data::Strip) -> String {
    use ccbench_model::workload::Cause;
    let mut out = String::from(
        "<div class=\"strip\" style=\"display:flex;align-items:stretch;height:2.4em;width:100%;max-width:40em;border:1px solid #999;margin-bottom:0.2em\">",
    );
    for (i, bin) in s.bins.iter().enumerate() {
        let total: f64 = bin.iter().sum();
        let _ =
            write!(out, "<div style=\"flex:1;display:flex;flex-direction:column-reverse\" title=\"{:.2}–{:.2} s", i as f64 * s.bin_s, (i + 1) as f64 * s.bin_s);
        for (c, share) in Cause::ALL.iter().zip(bin).filter(|x| total > 0.0 && *x.1 > 0.0) {
            let _ = write!(out, " · {} {:.0} %", c.name(), share / total * 100.0);
        }
        out.push_str("\">");
        if total > 0.0 {
            for (share, colour) in bin.iter().zip(CAUSE_COLOURS) {
                let h = share / total * 100.0;
                if h > 0.5 {
                    let _ = write!(out, "<div style=\"height:{h:.1}%;background:{colour}\"></div>");
                }
            }
        }
        out.push_str("</div>");
    }
    let _ = writeln!(
        out,
        "</div><div class=\"note\" style=\"max-width:40em\">over the median run, 0–{:.1} s, from the sampled state in its series</div>",
        s.bins.len() as f64 * s.bin_s
    );
    out
}

pub(super) fn runs_table(result: &ExperimentResult) -> String {
    let (unit, div) = score_unit(&result.params.workload);
    let mut out = format!(
        "<details><summary>Every run ({})</summary><table><tr><th>run</th><th>algorithm</th><th>status</th><th>score ({})</th><th>goodput</th><th>RTT p50 (ms)</th><th>queue p50 (ms)</th><th>retrans</th><th>notes</th></tr>",
        result.runs.len(),
        escape(unit)
    );
    for r in &result.runs {
        let status = match r.status {
            Status::Complete => "complete",
            Status::Interrupted => "interrupted",
            Status::Failed => "failed",
        };
        let (score, goodput, rtt, queue, retrans) = match &r.metrics {
            Some(m) => (
                m.score.map(|s| fmt_sig(s / div)).unwrap_or_default() + if m.unfinished { " (unfinished)" } else { "" },
                ccbench_model::units::fmt_rate(m.goodput_bps),
                m.sender_rtt_p50_ms.map(fmt_sig).unwrap_or_default(),
                m.queue_delay_p50_ms.map(fmt_sig).unwrap_or_else(|| "–".into()),
                format!("{:.2} %", m.retrans_rate * 100.0),
            ),
            None => Default::default(),
        };
        let notes: Vec<String> = r.error.iter().cloned().chain(r.suspect.iter().map(|s| format!("suspect: {s}"))).collect();
        let _ = write!(
            out,
            "<tr><td class=\"n\">{}</td><td>{}</td><td>{status}</td><td class=\"n\">{}</td><td class=\"n\">{}</td><td class=\"n\">{}</td><td class=\"n\">{}</td><td class=\"n\">{}</td><td class=\"warn\">{}</td></tr>",
            r.index + 1,
            escape(&r.cc),
            escape(&score),
            escape(&goodput),
            rtt,
            queue,
            retrans,
            escape(&notes.join("; "))
        );
    }
    out.push_str("</table></details>\n");
    out
}

/// The class and word of a judgement's cell: coloured pass, fail or undecided.
pub(super) fn judgement_cell(j: Judgement) -> String {
    format!("<td class=\"{0}\">{0}</td>", j.word())
}

/// The expectations, one row per expectation × algorithm: the median against its threshold, the
/// one-sided bounds of the median (the one that decided in bold), and the judgement, coloured.
pub(super) fn expectations_table(result: &ExperimentResult) -> String {
    let exps = &result.expectations;
    if exps.is_empty() {
        return String::new();
    }
    let alpha = exps.first().map_or(result.params.alpha, |e| e.alpha);
    let passed = exps.iter().filter(|e| e.result == Judgement::Pass).count();
    let mut out = format!(
        "<h2 id=\"expectations\">Expectations: {passed} of {} pass</h2>\n<p class=\"note\">Each figure is the median over the runs, with one-sided order-statistic bounds at their exact level, judged at α = {}: \
pass when the bound on the threshold's side clears it, fail when the other bound misses it, undecided otherwise (more runs would decide). \
The bound that decided is in bold.</p>\n",
        exps.len(),
        // As the terminal says it (0.05, or a look's 0.0354), not padded to 3 digits.
        format!("{alpha:.4}").trim_end_matches('0')
    );
    out.push_str("<table class=\"expectations\"><tr><th>algorithm</th><th>expectation</th><th>threshold</th><th>median</th><th>lower bound</th><th>upper bound</th><th>level</th><th>runs</th><th>result</th></tr>");
    for e in exps {
        let at_least = e.op.starts_with('>');
        // Which bound decided: for `>=`, the lower one passes and the upper one fails.
        let (lo_decided, hi_decided) = match e.result {
            Judgement::Pass => (at_least, !at_least),
            Judgement::Fail => (!at_least, at_least),
            Judgement::Undecided => (false, false),
        };
        let bound = |v: Option<f64>, decided: bool| match v {
            Some(v) if decided => format!("<b>{}</b>", escape(&e.show(v))),
            Some(v) => escape(&e.show(v)),
            None => "–".into(),
        };
        let _ = write!(
            out,
            "<tr><td>{}</td><td><code>{}</code></td><td class=\"n\">{}</td><td class=\"n\">{}</td><td class=\"n\">{}</td><td class=\"n\">{}</td><td class=\"n\">{}</td><td class=\"n\">{}</td>{}</tr>",
            escape(&e.cc),
            escape(&e.expect),
            escape(&e.show(e.threshold)),
            e.median.map_or("–".into(), |m| escape(&e.show(m))),
            bound(e.lo, lo_decided),
            bound(e.hi, hi_decided),
            e.level.map_or("–".into(), |l| format!("{:.1} %", l * 100.0)),
            e.runs,
            judgement_cell(e.result)
        );
    }
    out.push_str("</table>\n");
    out
}
