//! Drawing the report from [`ReportData`], with the primitives of [`crate::svg`]: pure, no
//! file is read here.

use std::fmt::Write as _;

use ccbench_model::results::{CcSummary, ExperimentResult, RunMetrics, RunRecord, Status};
use ccbench_model::workload::{Cc, Headline, TimeSeries};
use ccbench_model::workloads::WorkloadSpec;
use ccbench_stats::expectation::{overall, Judgement};
use ccbench_stats::Summary;

use crate::data::{bulk, scored_runs, Gathered, Line, Palette, Pooled, ReportData, RunView, BBR_STATES, GREY, MAX_BBR_ROWS};
use crate::svg::{cdf_steps, escape, fmt_sig, legend, Axis, Ellipse, Key, Plot, Stroke};
use tables::{expectations_table, judgement_cell, runs_table, why_section};

/// Width of a full-width plot and of a half-width one, in SVG units (≈ px at 1000 px).
const WIDE: f64 = 920.0;
const HALF: f64 = 450.0;
/// Steps kept of a CDF.
const CDF_STEPS: usize = 400;
/// Left margin of the plots over time, so that their time axes line up.
const TIME_LEFT: f64 = 72.0;

const STYLE: &str =
    "body{font-family:system-ui,-apple-system,'Segoe UI',Roboto,sans-serif;max-width:960px;margin:1.5em auto;padding:0 16px;color:#222;line-height:1.4}\
h1{font-size:1.6em;margin-bottom:.2em}h2{font-size:1.25em;margin-top:1.8em;border-bottom:1px solid #ddd;padding-bottom:.2em}\
pre.summary{background:#f6f6f6;padding:.8em 1em;font-size:12px;white-space:pre-wrap;overflow-wrap:anywhere}\
figure{margin:1.2em 0}figcaption{font-weight:600}.note{color:#555;font-size:13px;margin:.15em 0 .3em}\
svg.plot{display:block;width:100%;height:auto}.row{display:flex;flex-wrap:wrap;gap:0 20px}.row>figure{flex:1 1 430px;min-width:0}\
.legend{display:flex;flex-wrap:wrap;gap:2px 14px;font-size:12px;margin:.2em 0}.legend span{display:inline-flex;align-items:center;gap:4px;white-space:nowrap}\
table{border-collapse:collapse;font-size:12px;margin:.5em 0}th,td{padding:2px 8px;border-bottom:1px solid #e6e6e6;text-align:left;vertical-align:top}\
td.n{text-align:right;font-variant-numeric:tabular-nums}.warn{color:#a04000}\
td.pass,td.fail,td.undecided{font-weight:700;text-align:center}td.pass{background:#dcf1dc;color:#1b5e20}td.fail{background:#fadcdc;color:#b71c1c}\
td.undecided{background:#fdf1c7;color:#7a5b00}td b{font-weight:700}";

fn head(title: &str) -> String {
    format!("<!doctype html><html lang=\"en\"><head><meta charset=\"utf-8\"><meta name=\"viewport\" content=\"width=device-width, initial-scale=1\"><title>{}</title><style>{STYLE}</style></head><body>\n", escape(title))
}

fn figure(id: &str, title: &str, note: &str, legend_html: &str, svg: &str) -> String {
    let note = if note.is_empty() { String::new() } else { format!("<p class=\"note\">{}</p>", escape(note)) };
    format!("<figure id=\"{id}\"><figcaption>{}</figcaption>{note}{legend_html}{svg}</figure>\n", escape(title))
}

/// One algorithm's BBR states over one run, as a row of bands under the plots over time.
struct BbrBands {
    /// The row's label: the algorithm.
    key: String,
    /// Whose states: `quic:bbr3 flow 0 of run 4`.
    of: String,
    /// `(from_s, to_s, state)`, the state an index in [`BBR_STATES`].
    bands: Vec<(f64, f64, usize)>,
}

/// BBR's states, one row per algorithm that has them (in the legend's order): the first BBR
/// socket of that algorithm's median run (in a mix, of the median run's flows of it).
fn bbr_bands(g: &Gathered, palette: &Palette) -> Vec<BbrBands> {
    let mut medians: Vec<&RunView> = g.runs.iter().filter(|v| v.median).collect();
    medians.sort_by_key(|v| palette.index(&v.run.cc));
    let mut rows: Vec<BbrBands> = Vec::new();
    for v in medians {
        for b in &v.bbr {
            let bands = b.states.bands();
            if !bands.is_empty() && rows.len() < MAX_BBR_ROWS && !rows.iter().any(|r| r.key == b.key) {
                rows.push(BbrBands { key: b.key.clone(), of: format!("{} of run {}", b.what, v.run.index + 1), bands });
            }
        }
    }
    rows.sort_by_key(|r| palette.index(&r.key));
    rows
}

/// What the plots over time share: colours, and one time axis so that they line up.
struct TimeAxis<'a> {
    palette: &'a Palette,
    t_max_s: f64,
}

/// A plot over time of one line per run (and socket): the median runs bold, the others faint.
fn time_figure(id: &str, title: &str, note: &str, y_label: &str, lines: &[&Line], axis: &TimeAxis, bands: &[BbrBands]) -> String {
    if lines.iter().all(|l| l.points.is_empty()) {
        return String::new();
    }
    let palette = axis.palette;
    // The axis ends where the data end (10 s of data, not a rounded-up 12 s); its ticks are
    // still 1-2-5 steps within it. No data past zero: a unit span, as a degenerate fit gives.
    let t_end = if axis.t_max_s > 0.0 { axis.t_max_s } else { 1.0 };
    let x = Axis::new("time since the start of data (s)").range(0.0, t_end);
    let y = Axis::new(y_label).zero().fit(lines.iter().flat_map(|l| l.points.iter().map(|p| p.1)));
    let rows: Vec<&str> = bands.iter().map(|b| b.key.as_str()).collect();
    let mut p = Plot::with_strip_rows(id, WIDE, 270.0 + 17.0 * rows.len() as f64 + if rows.is_empty() { 0.0 } else { 3.0 }, x, y, &rows, TIME_LEFT);
    for l in lines.iter().filter(|l| !l.median) {
        p.line(&l.points, palette.color(&l.key), Stroke::FAINT, Some(&l.label));
    }
    for l in lines.iter().filter(|l| l.median) {
        p.line(&l.points, palette.color(&l.key), Stroke::BOLD, Some(&format!("{} (median run)", l.label)));
    }
    let mut items: Vec<(String, String, Key)> = Vec::new();
    for key in &palette.0 {
        if let Some(m) = lines.iter().find(|l| &l.key == key && l.median) {
            let run = m.label.split(" · ").next().unwrap_or("");
            items.push((format!("{key} (bold: median, {run})"), palette.color(key).to_string(), Key::Line));
        } else if lines.iter().any(|l| &l.key == key) {
            items.push((key.clone(), palette.color(key).to_string(), Key::Line));
        }
    }
    if lines.iter().any(|l| !l.median) {
        items.push(("faint: every other run, in its algorithm's colour".into(), GREY.into(), Key::FaintLine));
    }
    for (row, BbrBands { of, bands, .. }) in bands.iter().enumerate() {
        for &(a, b, s) in bands {
            let (name, color) = BBR_STATES[s];
            p.strip_in(row, a, b, color, Some(&format!("{name} {a:.2}–{b:.2} s ({of})")));
        }
    }
    for (i, (name, color)) in BBR_STATES.iter().enumerate() {
        if bands.iter().any(|b| b.bands.iter().any(|x| x.2 == i)) {
            items.push((name.to_string(), color.to_string(), Key::Swatch));
        }
    }
    let note = if bands.is_empty() {
        note.to_string()
    } else {
        let whose: Vec<&str> = bands.iter().map(|b| b.of.as_str()).collect();
        format!(
            "{note} Bands under the plot: BBR state over time, a row per algorithm ({}); kernel TCP's from TCP_CC_INFO, QUIC's from its controller, which also reports ProbeBW's phase.",
            whose.join("; ")
        )
    };
    figure(&format!("fig-{id}"), title, note.trim(), &legend(&items), &p.finish())
}

/// The verdict's score in display units: its axis label and the divisor from the JSON's units.
fn score_unit(w: &WorkloadSpec) -> (&'static str, f64) {
    w.headline().score_unit()
}

/// A fixed, even scatter of the k-th of a column's points across the column.
fn jitter(k: usize) -> f64 {
    ((k as f64 * 0.618_034) % 1.0 - 0.5) * 0.36
}

/// Each algorithm's score per run, with its median.
fn score_figure(result: &ExperimentResult, palette: &Palette) -> String {
    let (unit, div) = score_unit(&result.params.workload);
    let ccs = &result.params.ccs;
    let columns: Vec<Vec<&RunRecord>> = ccs.iter().map(|cc| scored_runs(result, cc)).collect();
    if columns.iter().all(Vec::is_empty) {
        return String::new();
    }
    let score = |r: &RunRecord| r.metrics.as_ref().and_then(|m| m.score).unwrap_or(0.0) / div;
    let median_of = |cc: &ccbench_model::workload::Cc| result.summary.iter().find(|s| &s.cc == cc).and_then(|s| s.score.as_ref()).map(|s| s.median / div);
    let names = ccs.iter().map(|cc| match median_of(cc) {
        Some(m) => format!("{cc}\nmedian {}", fmt_sig(m)),
        None => cc.to_string(),
    });
    let x = Axis::new("algorithm").categories(names.collect());
    let y = Axis::new(unit).fit(columns.iter().flatten().map(|r| score(r))).pad(0.05);
    let mut p = Plot::new("score", HALF, 300.0, x, y, None);
    for (i, (cc, runs)) in ccs.iter().zip(&columns).enumerate() {
        let color = palette.color(cc);
        let median_run = runs.get(runs.len() / 2).map(|r| r.index);
        let mut by_index = runs.clone();
        by_index.sort_by_key(|r| r.index);
        for (k, r) in by_index.iter().enumerate() {
            let unfinished = r.metrics.as_ref().is_some_and(|m| m.unfinished);
            let v = score(r);
            let xi = i as f64 + jitter(k);
            let mut tip = format!("run {} · {cc}: {} {}", r.index + 1, fmt_sig(v), unit);
            if unfinished {
                tip.push_str(" (unfinished: a censored bound)");
            }
            if !r.suspect.is_empty() {
                let _ = write!(tip, " (suspect: {})", r.suspect.join("; "));
            }
            if median_run == Some(r.index) {
                p.point(xi, v, 7.5, color, false, None);
                tip.push_str(" — the median run, bold in the plots over time");
            }
            p.point(xi, v, 4.0, color, !unfinished, Some(&tip));
        }
        if let Some(m) = median_of(cc) {
            p.segment((i as f64 - 0.3, m), (i as f64 + 0.3, m), "#222", Stroke { width: 2.0, opacity: 0.8, dash: None });
        }
    }
    let items = vec![
        ("one run".to_string(), GREY.to_string(), Key::Dot),
        ("median of the runs".to_string(), "#222".to_string(), Key::Line),
        ("ringed: the median run (bold over time); hollow: unfinished".to_string(), GREY.to_string(), Key::Dot),
    ];
    figure("fig-score", &format!("{} per run", capitalise(&result.params.metric)), "The axis does not start at 0.", &legend(&items), &p.finish())
}

fn capitalise(s: &str) -> String {
    let mut c = s.chars();
    c.next().map(|f| f.to_uppercase().collect::<String>() + c.as_str()).unwrap_or_default()
}

/// The ratio of each comparison (Hodges–Lehmann, or the ratio of medians in results from before
/// it) with its CI, for the score and for the RTT.
fn ratio_figure(result: &ExperimentResult, palette: &Palette) -> String {
    let rows: Vec<(String, &ccbench_stats::Comparison, &str)> = result
        .comparisons
        .iter()
        .map(|c| (format!("{}: {} ÷ {}", result.params.metric.split(' ').next().unwrap_or("score"), c.a, c.b), c, result.params.metric.as_str()))
        .chain(result.rtt_comparisons.iter().map(|c| (format!("RTT p50: {} ÷ {}", c.a, c.b), c, "median sender RTT")))
        .filter(|(_, c, _)| c.ratio_ci.is_some())
        .collect();
    if rows.is_empty() {
        return String::new();
    }
    let finite = rows.iter().flat_map(|(_, c, _)| {
        let ci = c.ratio_ci.expect("filtered");
        [ci.lo, ci.hi, ci.ratio].into_iter().filter(|v| v.is_finite() && *v > 0.0)
    });
    let y = Axis::new("ratio a ÷ b").fit(finite.chain([1.0])).log_if_wide().pad(0.05);
    let bound = |v: f64| if v.is_finite() { fmt_sig(v) } else { "∞".into() };
    let names = rows.iter().map(|(n, c, _)| {
        let ci = c.ratio_ci.expect("filtered");
        format!("{n}\n{}× ({}–{})", bound(ci.ratio), bound(ci.lo), bound(ci.hi))
    });
    let x = Axis::new("comparison: ratio (CI); an arrow is an unbounded side").categories(names.collect());
    let mut p = Plot::new("ratio", HALF, 300.0, x, y, None);
    p.hrule(1.0, "#555", Stroke::DASHED, Some("1 = no difference"));
    for (i, (_, c, metric)) in rows.iter().enumerate() {
        let ci = c.ratio_ci.expect("filtered");
        let color = palette.color(&c.a);
        let tip = c.sentence(metric);
        p.interval_y(i as f64, ci.lo, ci.hi, color, Some(&tip));
        if ci.ratio.is_finite() {
            p.point(i as f64, ci.ratio, 5.0, color, c.significant, Some(&tip));
        }
    }
    let first_ci = rows.first().and_then(|(_, c, _)| c.ratio_ci);
    let level = first_ci.map_or_else(|| "95 %".to_string(), |c| ccbench_stats::fmt_level(c.level));
    let items = vec![("filled: significant (Holm-adjusted p < α and the CI excludes 1)".to_string(), GREY.to_string(), Key::Dot)];
    let (title, what) = match first_ci.map(|c| c.method) {
        Some(ccbench_stats::CiMethod::Bootstrap) => ("Ratio of medians, with its bootstrap CI", "median(a) ÷ median(b)"),
        Some(ccbench_stats::CiMethod::HodgesLehmannMoses) => ("Ratio of a to b, with its exact CI", "the Hodges–Lehmann ratio a ÷ b (median of the pairwise ratios; Moses interval at its exact level)"),
        _ => (
            "Ratio of a to b, with its rank-test CI",
            "the Hodges–Lehmann ratio a ÷ b (median of the pairwise ratios; the interval inverts the permuted Brunner–Munzel test, which holds its level when the two spread differently)",
        ),
    };
    figure(
        "fig-ratio",
        title,
        &format!("{level} CI of {what} over runs; a is the better-ranked algorithm. Hover for the verdict."),
        &legend(&items),
        &p.finish(),
    )
}

/// Flows sharing the bottleneck: each algorithm's share per run, against its fair share.
fn shares_figure(result: &ExperimentResult, palette: &Palette) -> String {
    let Some(summary) = result.summary.iter().find(|s| !s.shares.is_empty()) else { return String::new() };
    let names: Vec<&Cc> = summary.shares.iter().map(|s| &s.cc).collect();
    let flows_total: usize = summary.shares.iter().map(|s| s.flows).sum::<usize>().max(1);
    let x = Axis::new("algorithm").categories(
        names
            .iter()
            .map(|n| {
                let flows = summary.shares.iter().find(|s| &s.cc == *n).map_or(0, |s| s.flows);
                format!("{n} ({flows} flow{})", if flows == 1 { "" } else { "s" })
            })
            .collect(),
    );
    let y = Axis::new("share of the bottleneck's goodput (%)").range(0.0, 100.0);
    let mut p = Plot::new("shares", HALF, 300.0, x, y, None);
    let runs: Vec<&RunRecord> = result.runs.iter().filter(|r| r.status == Status::Complete).collect();
    for (i, sh) in summary.shares.iter().enumerate() {
        let color = palette.color(&sh.cc);
        let fair = 100.0 * sh.flows as f64 / flows_total as f64;
        p.segment((i as f64 - 0.4, fair), (i as f64 + 0.4, fair), "#555", Stroke::DASHED);
        p.text(i as f64 - 0.4, fair + 2.0, &format!("fair {fair:.0} %"), "start", "#555");
        for (k, r) in runs.iter().enumerate() {
            if let Some(s) = r.metrics.as_ref().and_then(|m| m.shares.iter().find(|s| s.cc == sh.cc)) {
                p.point(i as f64 + jitter(k), s.share * 100.0, 4.0, color, true, Some(&format!("run {}: {} {:.1} %", r.index + 1, sh.cc, s.share * 100.0)));
            }
        }
        if let Some(ci) = &sh.share_ci {
            p.interval_y(
                i as f64 + 0.3,
                ci.lo * 100.0,
                ci.hi * 100.0,
                color,
                Some(&format!("{:.1} % CI of the median share: {:.0}–{:.0} %", ci.level * 100.0, ci.lo * 100.0, ci.hi * 100.0)),
            );
        }
        let m = sh.share.median * 100.0;
        p.segment((i as f64 - 0.3, m), (i as f64 + 0.3, m), "#222", Stroke { width: 2.0, opacity: 0.8, dash: None });
    }
    let jain = summary.jain_index.as_ref().map(|j| format!(" Jain's fairness index {:.2} (median over runs).", j.median)).unwrap_or_default();
    let items = vec![
        ("one run".to_string(), GREY.to_string(), Key::Dot),
        ("median".to_string(), "#222".to_string(), Key::Line),
        ("fair share".to_string(), "#555".to_string(), Key::Dashed),
    ];
    figure(
        "fig-shares",
        "Share of the bottleneck per algorithm",
        &format!("While all flows were active; the bar right of each column is the CI of the median share.{jain}"),
        &legend(&items),
        &p.finish(),
    )
}

/// One algorithm's CDF: its staircase and the samples it is of.
struct Curve<'a> {
    key: &'a str,
    steps: Vec<(f64, f64)>,
    n: u64,
}

/// CDFs of pooled samples (µs), one per key, in ms; the axis from 0 when `zero`.
fn cdf_figure(id: &str, title: &str, note: &str, x_label: &str, pooled: &Pooled, palette: &Palette, zero: bool) -> String {
    let curves: Vec<Curve> = pooled
        .0
        .iter()
        .filter(|(_, c)| !c.is_empty())
        .map(|(k, c)| Curve { key: k, steps: cdf_steps(c.iter().map(|(v, n)| (f64::from(v) / 1000.0, n)), CDF_STEPS), n: c.len() })
        .collect();
    if curves.is_empty() {
        return String::new();
    }
    let mut x = Axis::new(x_label).fit(curves.iter().flat_map(|c| c.steps.iter().map(|p| p.0)));
    x = if zero { x.zero() } else { x.log_if_wide() };
    let y = Axis::new("fraction of samples").range(0.0, 1.0);
    let mut p = Plot::new(id, HALF, 300.0, x, y, None);
    let mut items = Vec::new();
    for Curve { key, steps, n } in &curves {
        let color = palette.color(key);
        let q = |f: f64| steps.iter().find(|s| s.1 >= f).map_or(f64::NAN, |s| s.0);
        let tip = format!("{key}: {n} samples; p50 {} p95 {} p99 {}", fmt_sig(q(0.5)), fmt_sig(q(0.95)), fmt_sig(q(0.99)));
        p.line(steps, color, Stroke::NORMAL, Some(&tip));
        items.push((format!("{key} ({n} samples)"), color.to_string(), Key::Line));
    }
    figure(&format!("fig-{id}"), title, note, &legend(&items), &p.finish())
}

/// A run's (or a flow's) point in the throughput–delay plane.
struct Point {
    key: String,
    label: String,
    delay_ms: f64,
    mbps: f64,
}

/// One point per run (or flow), goodput against a delay, with a 1-σ ellipse per key; the
/// delay axis reversed so that better is up and to the right.
fn tput_delay_figure(id: &str, title: &str, x_label: &str, points: &[Point], palette: &Palette) -> String {
    let points: Vec<&Point> = points.iter().filter(|p| p.delay_ms.is_finite() && p.mbps.is_finite()).collect();
    if points.is_empty() {
        return String::new();
    }
    let mut ellipses: Vec<(&str, Ellipse)> = Vec::new();
    for key in &palette.0 {
        let pts: Vec<(f64, f64)> = points.iter().filter(|p| &p.key == key).map(|p| (p.delay_ms, p.mbps)).collect();
        if pts.len() >= 3 {
            if let Some(e) = Ellipse::of_points(&pts) {
                ellipses.push((key, e));
            }
        }
    }
    let outline: Vec<(f64, f64)> = ellipses.iter().flat_map(|(_, e)| e.outline(36)).collect();
    let x = Axis::new(x_label).fit(points.iter().map(|p| p.delay_ms).chain(outline.iter().map(|p| p.0))).pad(0.04).reversed();
    let y = Axis::new("goodput (Mbit/s)").fit(points.iter().map(|p| p.mbps).chain(outline.iter().map(|p| p.1))).pad(0.04);
    let mut p = Plot::new(id, HALF, 320.0, x, y, None);
    for (key, e) in &ellipses {
        p.ellipse(e, palette.color(key), Some(&format!("{key}: mean {} ms, {} Mbit/s; 1-σ ellipse of the covariance", fmt_sig(e.cx), fmt_sig(e.cy))));
    }
    for pt in &points {
        p.point(
            pt.delay_ms,
            pt.mbps,
            4.0,
            palette.color(&pt.key),
            true,
            Some(&format!("{}: {} ms, {} Mbit/s", pt.label, fmt_sig(pt.delay_ms), fmt_sig(pt.mbps))),
        );
    }
    let mut items: Vec<(String, String, Key)> = Vec::new();
    for key in &palette.0 {
        if points.iter().any(|p| &p.key == key) {
            items.push((key.clone(), palette.color(key).to_string(), Key::Dot));
        }
    }
    if !ellipses.is_empty() {
        items.push(("ellipse: 1 σ of the runs (+: their mean)".into(), GREY.into(), Key::Line));
    }
    figure(&format!("fig-{id}"), title, "Delay axis reversed: better is up and to the right.", &legend(&items), &p.finish())
}

/// The points of the throughput–delay figures: per run, or per flow of a mix.
fn tput_points(result: &ExperimentResult, g: &Gathered) -> (Vec<Point>, Vec<Point>) {
    let mut rtt = Vec::new();
    let mut queue = Vec::new();
    let mix = result.params.workload.is_mix();
    for r in result.runs.iter().filter(|r| r.status == Status::Complete) {
        let Some(m) = &r.metrics else { continue };
        match (mix, bulk(r)) {
            (true, Some(b)) => {
                let view = g.runs.iter().find(|v| v.run.index == r.index);
                for f in &b.flows {
                    let label = format!("run {} · {} flow {}", r.index + 1, f.sending.cc_requested, f.id);
                    let flow_rtt = view.and_then(|v| v.flow_rtt.iter().find(|(id, _, _)| *id == f.id)).and_then(|(_, _, c)| c.quantile(0.5, 1000.0));
                    let mbps = f.goodput_bps / 1e6;
                    if let Some(x) = flow_rtt {
                        rtt.push(Point { key: f.sending.cc_requested.to_string(), label: label.clone(), delay_ms: x, mbps });
                    }
                    if let Some(q) = m.queue_delay_p50_ms {
                        queue.push(Point { key: f.sending.cc_requested.to_string(), label, delay_ms: q, mbps });
                    }
                }
            }
            _ => {
                let label = format!("run {} · {}", r.index + 1, r.cc);
                let mbps = m.goodput_bps / 1e6;
                if let Some(x) = m.sender_rtt_p50_ms {
                    rtt.push(Point { key: r.cc.to_string(), label: label.clone(), delay_ms: x, mbps });
                }
                if let Some(q) = m.queue_delay_p50_ms {
                    queue.push(Point { key: r.cc.to_string(), label, delay_ms: q, mbps });
                }
            }
        }
    }
    (rtt, queue)
}

/// `report.html` of one experiment: the expectations, the summary, the runs over time, the
/// distributions across runs, throughput against delay, and every run in a table.
pub fn render(data: &ReportData) -> String {
    let (result, summary_text, g) = (data.result, data.summary.as_str(), &data.series);
    let title = format!("ccbench: {}", result.params.ccs.join(" vs "));
    let mut out = head(&title);
    let _ = writeln!(out, "<h1>{}</h1>", escape(&title));
    let _ = writeln!(out, "<p>{} — {}</p>", escape(&result.provenance.started_at), escape(&result.params.workload.describe_for(&result.params.ccs)));
    for w in &result.warnings {
        let _ = writeln!(out, "<p class=\"warn\">warning: {}</p>", escape(w));
    }
    out.push_str(&expectations_table(result));
    let _ = writeln!(out, "<pre class=\"summary\">{}</pre>", escape(summary_text.trim_matches('\n')));
    let palette = Palette::of(result);
    let bands = bbr_bands(g, &palette);
    let interval_ms = result.params.workload.sample_interval_us() as f64 / 1000.0;
    let bin_ms = g.bin_us as f64 / 1000.0;
    let n_runs = g.runs.len();
    let all_lines = g.runs.iter().flat_map(|v| v.goodput.iter().chain(&v.rtt).chain(&v.cwnd).chain(&v.queue).chain(&v.bbr_bw));
    let t_max_s = all_lines.flat_map(|l| l.points.last().map(|p| p.0)).fold(0.0, f64::max);
    let axis = TimeAxis { palette: &palette, t_max_s };

    out.push_str(&why_section(result, g));
    let _ = writeln!(out, "<h2>Runs over time</h2>");
    let _ = writeln!(
        out,
        "<p class=\"note\">Each of the {n_runs} completed runs is a faint line; the run with the median score of each algorithm is bold. Hover a line for its run.</p>"
    );
    let goodput: Vec<&Line> = g.runs.iter().flat_map(|v| &v.goodput).collect();
    // Each workload says what stands for its goodput (`Spec::time_series`); no default arm.
    let shows = result.params.workload.spec().time_series();
    let (goodput_title, goodput_note) = match shows {
        TimeSeries::Flows { per_flow: false } => ("Goodput at the receiver", format!("All flows of a run together, per {bin_ms} ms.")),
        TimeSeries::Flows { per_flow: true } => ("Goodput at the receiver, per flow", format!("Per {bin_ms} ms; each flow in its algorithm's colour.")),
        TimeSeries::Requests => (
            "Delivered at the bottleneck",
            format!("Bytes the emulator delivered on the data's direction, per {bin_ms} ms (this workload has no per-flow goodput file)."),
        ),
    };
    out.push_str(&time_figure("goodput", goodput_title, &goodput_note, "goodput (Mbit/s)", &goodput, &axis, &[]));
    let multi_note = match shows {
        TimeSeries::Flows { .. } => "",
        TimeSeries::Requests => "The first connection of each run (a page or object load opens several).",
    };
    let rtt: Vec<&Line> = g.runs.iter().flat_map(|v| &v.rtt).collect();
    out.push_str(&time_figure("rtt", "Sender's smoothed RTT (TCP_INFO, or the QUIC connection's)", multi_note, "RTT (ms)", &rtt, &axis, &bands));
    let cwnd: Vec<&Line> = g.runs.iter().flat_map(|v| &v.cwnd).collect();
    out.push_str(&time_figure("cwnd", "Congestion window", multi_note, "cwnd (packets)", &cwnd, &axis, &bands));
    let queue: Vec<&Line> = g.runs.iter().filter_map(|v| v.queue.as_ref()).collect();
    out.push_str(&time_figure(
        "queue",
        "Queueing delay at the bottleneck (emulator's view)",
        &format!("The longest a packet waited in each {interval_ms} ms sample, on the data's direction."),
        "queueing delay (ms)",
        &queue,
        &axis,
        &[],
    ));
    // Only where something was marked: most paths have no marking AQM.
    let ce: Vec<&Line> = g.runs.iter().filter_map(|v| v.ce.as_ref()).collect();
    if !ce.is_empty() {
        out.push_str(&time_figure(
            "ce",
            "CE marks at the bottleneck (emulator's view)",
            "Packets the AQM marked Congestion Experienced instead of dropping, per second, on the data's direction (runs with marks only).",
            "CE marks per second",
            &ce,
            &axis,
            &[],
        ));
    }
    let bbr_bw: Vec<&Line> = g.runs.iter().flat_map(|v| &v.bbr_bw).collect();
    out.push_str(&time_figure(
        "bbr-bw",
        "BBR's bandwidth estimate (TCP_CC_INFO, or the QUIC controller's)",
        "Median runs only.",
        "bandwidth estimate (Mbit/s)",
        &bbr_bw,
        &axis,
        &[],
    ));

    let _ = writeln!(out, "<h2>Distributions across runs</h2>");
    out.push_str("<div class=\"row\">");
    out.push_str(&score_figure(result, &palette));
    if result.params.workload.is_mix() {
        out.push_str(&shares_figure(result, &palette));
    } else {
        out.push_str(&ratio_figure(result, &palette));
    }
    out.push_str("</div>\n<div class=\"row\">");
    out.push_str(&cdf_figure(
        "rtt-cdf",
        "CDF of the sender's RTT samples",
        "Every nonzero smoothed-RTT sample of every sending socket from when its data began to flow, all runs of each algorithm pooled.",
        "sender RTT (ms)",
        &g.rtt,
        &palette,
        false,
    ));
    out.push_str(&cdf_figure(
        "queue-cdf",
        "CDF of the queueing delay",
        &format!("The longest wait in each {interval_ms} ms sample in which the bottleneck delivered data, on the data's direction, all runs pooled."),
        "queueing delay (ms)",
        &g.queue,
        &palette,
        true,
    ));
    out.push_str("</div>\n");

    let _ = writeln!(out, "<h2>Throughput against delay</h2>");
    let per = if result.params.workload.is_mix() { "flow" } else { "run" };
    let _ = writeln!(out, "<p class=\"note\">One point per {per}; the ellipse of each algorithm is one standard deviation of its points (their covariance), from 3 points up.</p>");
    let (rtt_pts, queue_pts) = tput_points(result, g);
    out.push_str("<div class=\"row\">");
    out.push_str(&tput_delay_figure("tput-rtt", "Goodput against the sender's RTT", &format!("sender RTT p50 of the {per} (ms)"), &rtt_pts, &palette));
    out.push_str(&tput_delay_figure("tput-queue", "Goodput against the queueing delay", "queueing delay p50 of the run (ms)", &queue_pts, &palette));
    out.push_str("</div>\n");

    out.push_str(&runs_table(result));
    for e in &g.errors {
        let _ = writeln!(out, "<p class=\"warn\">could not read a series file: {}</p>", escape(e));
    }
    let _ = writeln!(
        out,
        "<p class=\"note\">Every run's figures are in the JSON beside this page (schema {}) and in <code>runs.csv</code>; each run's time series are in the <code>*.csv.gz</code> files its <code>series</code> names.</p></body></html>",
        escape(&result.schema)
    );
    out
}

mod conditions;
mod matrix;
mod tables;

pub use conditions::*;
pub use matrix::{render_conform, ConformPage, MatrixCase, MatrixCell, MatrixRow, MatrixVerdict};

#[cfg(test)]
mod tests;
