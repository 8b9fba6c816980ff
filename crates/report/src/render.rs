//! Drawing the report from [`ReportData`], with the primitives of [`crate::svg`]: pure, no
//! file is read here.

use std::fmt::Write as _;

use ccbench_model::results::{CcSummary, ExperimentResult, RunMetrics, RunRecord, Status};
use ccbench_model::workloads::WorkloadSpec;
use ccbench_stats::expectation::{overall, Judgement};
use ccbench_stats::Summary;
use ccbench_workload::Headline;

use crate::data::{bulk, scored_runs, Gathered, Line, Palette, Pooled, ReportData, RunView, BBR_STATES, GREY, MAX_BBR_ROWS};
use crate::svg::{cdf_steps, escape, fmt_sig, legend, Axis, Ellipse, Key, Plot, Stroke};

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

/// The colours of the limited-by causes, in `Cause::ALL`'s order.
const CAUSE_COLOURS: [&str; 6] = ["#1f77b4", "#2ca02c", "#d62728", "#9467bd", "#ff7f0e", "#bbbbbb"];

/// Why each algorithm got what it got (issue 30): its `why` line and a bar of its limited-by
/// fractions, stacked to 100 % (CSS, no plot); nothing when no algorithm has them.
fn why_section(result: &ExperimentResult) -> String {
    use ccbench_workload::Cause;
    let whys = ccbench_model::why::why(result);
    if whys.iter().all(|w| w.limited_by.is_none()) {
        return String::new();
    }
    let mut out = String::from("<h2 id=\"why\">Why: what held each algorithm back</h2>\n<p class=\"note\">Each bar is the share of its flows' active time (from the first byte sent) that each cause held them back, from TCP_INFO's chrono counters and the sampled window (see the manual's chapter on limited-by).</p>\n<p>");
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
    }
    out
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
    let median_of = |cc: &String| result.summary.iter().find(|s| &s.cc == cc).and_then(|s| s.score.as_ref()).map(|s| s.median / div);
    let names = ccs.iter().map(|cc| match median_of(cc) {
        Some(m) => format!("{cc}\nmedian {}", fmt_sig(m)),
        None => cc.clone(),
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
    let names: Vec<String> = summary.shares.iter().map(|s| s.cc.clone()).collect();
    let flows_total: usize = summary.shares.iter().map(|s| s.flows).sum::<usize>().max(1);
    let x = Axis::new("algorithm").categories(
        names
            .iter()
            .map(|n| {
                let flows = summary.shares.iter().find(|s| &s.cc == n).map_or(0, |s| s.flows);
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
                        rtt.push(Point { key: f.sending.cc_requested.clone(), label: label.clone(), delay_ms: x, mbps });
                    }
                    if let Some(q) = m.queue_delay_p50_ms {
                        queue.push(Point { key: f.sending.cc_requested.clone(), label, delay_ms: q, mbps });
                    }
                }
            }
            _ => {
                let label = format!("run {} · {}", r.index + 1, r.cc);
                let mbps = m.goodput_bps / 1e6;
                if let Some(x) = m.sender_rtt_p50_ms {
                    rtt.push(Point { key: r.cc.clone(), label: label.clone(), delay_ms: x, mbps });
                }
                if let Some(q) = m.queue_delay_p50_ms {
                    queue.push(Point { key: r.cc.clone(), label, delay_ms: q, mbps });
                }
            }
        }
    }
    (rtt, queue)
}

fn runs_table(result: &ExperimentResult) -> String {
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
fn judgement_cell(j: Judgement) -> String {
    format!("<td class=\"{0}\">{0}</td>", j.word())
}

/// The expectations, one row per expectation × algorithm: the median against its threshold, the
/// one-sided bounds of the median (the one that decided in bold), and the judgement, coloured.
fn expectations_table(result: &ExperimentResult) -> String {
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

    out.push_str(&why_section(result));
    let _ = writeln!(out, "<h2>Runs over time</h2>");
    let _ = writeln!(
        out,
        "<p class=\"note\">Each of the {n_runs} completed runs is a faint line; the run with the median score of each algorithm is bold. Hover a line for its run.</p>"
    );
    let goodput: Vec<&Line> = g.runs.iter().flat_map(|v| &v.goodput).collect();
    let (goodput_title, goodput_note) = match &result.params.workload {
        WorkloadSpec::Bulk(b) if b.mix.is_empty() => ("Goodput at the receiver", format!("All flows of a run together, per {bin_ms} ms.")),
        WorkloadSpec::Bulk(_) => ("Goodput at the receiver, per flow", format!("Per {bin_ms} ms; each flow in its algorithm's colour.")),
        // One arm per workload, no default: a new workload says here what stands for its goodput.
        WorkloadSpec::Objects(_) | WorkloadSpec::Page(_) | WorkloadSpec::Browser(_) => (
            "Delivered at the bottleneck",
            format!("Bytes the emulator delivered on the data's direction, per {bin_ms} ms (this workload has no per-flow goodput file)."),
        ),
    };
    out.push_str(&time_figure("goodput", goodput_title, &goodput_note, "goodput (Mbit/s)", &goodput, &axis, &[]));
    let multi_note = match &result.params.workload {
        WorkloadSpec::Bulk(_) => "",
        WorkloadSpec::Objects(_) | WorkloadSpec::Page(_) | WorkloadSpec::Browser(_) => {
            "The first connection of each run (a page or object load opens several)."
        }
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

pub use conditions::*;

#[cfg(test)]
mod tests {
    use super::*;
    use crate::load::bbr_state;
    use crate::svg::Timeline;

    /// 10 s of data make an axis that ends at 10 s, with 1-2-5 ticks inside it, not one
    /// rounded up to 12 s that leaves a sixth of every plot over time empty.
    #[test]
    fn the_time_axis_ends_where_the_data_end() {
        let palette = Palette(vec!["cubic".into()]);
        let axis = TimeAxis { palette: &palette, t_max_s: 10.02 };
        // y values well below 1, so that no y tick reads like a time tick.
        let line = Line { key: "cubic".into(), label: "run 1 · cubic".into(), median: true, points: vec![(0.0, 0.2), (10.02, 0.3)] };
        let svg = time_figure("goodput", "Goodput", "", "goodput", &[&line], &axis, &[]);
        for tick in ["0", "2", "4", "6", "8", "10"] {
            assert!(svg.contains(&format!(">{tick}</text>")), "tick {tick}: {svg}");
        }
        assert!(!svg.contains(">12</text>"), "the axis goes past the data: {svg}");
    }

    /// Kernel BBR and QUIC BBR in one experiment: a band row each, QUIC's ProbeBW split into
    /// its phases, and the legend lists only the states drawn.
    #[test]
    fn each_bbr_algorithm_gets_its_own_row_of_state_bands() {
        let palette = Palette(vec!["tcp:bbr".into(), "quic:bbr3".into(), "quic:cubic".into()]);
        let axis = TimeAxis { palette: &palette, t_max_s: 3.0 };
        let timeline = |modes: &[(u64, &str, Option<&str>)]| {
            let mut t: Timeline<{ BBR_STATES.len() }> = Timeline::default();
            for &(ms, mode, phase) in modes {
                t.push(ms * 1000, bbr_state(Some(mode), phase));
            }
            t.bands()
        };
        let tcp = timeline(&[(0, "STARTUP", None), (300, "DRAIN", None), (400, "PROBE_BW", None), (3000, "PROBE_BW", None)]);
        let quic = timeline(&[
            (0, "STARTUP", None),
            (300, "DRAIN", None),
            (400, "PROBE_BW", Some("DOWN")),
            (500, "PROBE_BW", Some("CRUISE")),
            (2000, "PROBE_BW", Some("REFILL")),
            (2100, "PROBE_BW", Some("UP")),
            (2300, "PROBE_BW", Some("DOWN")),
            (3000, "PROBE_BW", Some("DOWN")),
        ]);
        let bands = [
            BbrBands { key: "tcp:bbr".into(), of: "tcp:bbr flow 0 of run 1".into(), bands: tcp },
            BbrBands { key: "quic:bbr3".into(), of: "quic:bbr3 flow 0 of run 2".into(), bands: quic },
        ];
        let line = Line { key: "quic:bbr3".into(), label: "run 2 · quic:bbr3".into(), median: true, points: vec![(0.0, 20.0), (3.0, 21.0)] };
        let svg = time_figure("rtt", "RTT", "", "RTT (ms)", &[&line], &axis, &bands);
        for label in [">tcp:bbr</text>", ">quic:bbr3</text>", "PROBE_BW UP 2.1", "PROBE_BW REFILL 2.0", "PROBE_BW CRUISE 0.5", "(quic:bbr3 flow 0 of run 2)"] {
            assert!(svg.contains(label), "{label} missing");
        }
        assert!(svg.contains("PROBE_BW 0.4") && svg.contains("(tcp:bbr flow 0 of run 1)"), "kernel BBR's ProbeBW has no phase");
        assert!(svg.contains(" PROBE_BW UP</span>") && svg.contains(" DRAIN</span>"), "the legend lists the states drawn");
        assert!(!svg.contains(" PROBE_RTT</span>"), "a state never drawn is not in the legend");
    }

    /// A result of bbr against cubic, two bulk runs each, built by hand: run 2 of each the
    /// median (scores 10 < 20 < 30 Mbit/s), run 4 failed.
    fn hand_built() -> ExperimentResult {
        use ccbench_model::provenance::{HostFacts, Provenance};
        use ccbench_model::results::{Params, SCHEMA};
        use ccbench_model::series::SeriesFiles;
        use ccbench_model::workloads::WorkloadResult;
        use ccbench_workload::{Amount, BulkResult, BulkSpec, Direction};
        let metrics = |mbps: f64| RunMetrics {
            score: Some(mbps * 1e6),
            unfinished: false,
            goodput_bps: mbps * 1e6,
            completion_time_s: None,
            latency_p50_s: None,
            latency_p99_s: None,
            html_ttfb_s: None,
            all_completed: true,
            sender_rtt_p50_ms: Some(40.0 + mbps),
            sender_rtt_p95_ms: Some(60.0 + mbps),
            retrans_rate: 0.01,
            retrans_segments: 5,
            drops_loss: Some(0),
            drops_buffer: Some(2),
            drops_aqm: None,
            ce_marks: None,
            queue_delay_p50_ms: Some(mbps / 2.0),
            queue_delay_p95_ms: Some(mbps),
            utilization: Some(0.9),
            emulator_lateness_p99_us: None,
            entry: Default::default(),
            path_figures_over_whole_life: false,
            shares: Vec::new(),
            jain_index: None,
            jain_per_second: Vec::new(),
            convergence_s: None,
            lock_on_bw_bps: None,
            limited_by: None,
            mechanism: Default::default(),
        };
        let run = |index: u32, cc: &str, mbps: Option<f64>| RunRecord {
            index,
            round: index / 2,
            cc: cc.into(),
            status: if mbps.is_some() { Status::Complete } else { Status::Failed },
            error: mbps.is_none().then(|| "the server <went> away".to_string()),
            started_at: "2026-01-01T00:00:00Z".into(),
            path_seed: u64::from(index),
            netns_inodes: None,
            host_cpu_steal_fraction: None,
            suspect: Vec::new(),
            far_samples_dropped: 0,
            metrics: mbps.map(metrics),
            workload: mbps
                .map(|m| WorkloadResult::Bulk(BulkResult { start_us: 0, elapsed_s: 3.0, goodput_bps: m * 1e6, interrupted: false, flows: Vec::new() })),
            path: None,
            // Files that do not exist: rendering must not read them.
            series: Some(SeriesFiles {
                tcp: format!("/nonexistent/run-{index}/tcp.csv.gz"),
                goodput: format!("/nonexistent/run-{index}/goodput.csv.gz"),
                link_down: None,
                link_up: None,
            }),
        };
        let workload = WorkloadSpec::Bulk(BulkSpec {
            flows: 1,
            direction: Direction::Download,
            amount: Amount::Seconds(3.0),
            cc: "bbr".parse().unwrap(),
            mix: Vec::new(),
            port: 5201,
            sample_interval_us: 10_000,
            timeout_s: 30.0,
            quic_receiver_cc: None,
            knobs: Default::default(),
        });
        ExperimentResult {
            schema: SCHEMA.into(),
            status: Status::Complete,
            warnings: vec!["the host was <busy>".into()],
            provenance: Provenance {
                ccbench_version: "test".into(),
                git_revision: "test".into(),
                command_line: vec!["ccbench".into(), "run".into()],
                started_at: "2026-01-01T00:00:00Z".into(),
                finished_at: None,
                host: HostFacts {
                    hostname: Some("<host>".into()),
                    kernel_release: None,
                    kernel_version: None,
                    cpus: Some(2),
                    cpu_model: None,
                    memory_kib: None,
                    available_congestion_controls: None,
                    allowed_congestion_controls: None,
                    loadable_congestion_controls: Vec::new(),
                    default_congestion_control: None,
                    default_qdisc: None,
                    euid: 0,
                },
                namespace_sysctls: Vec::new(),
                emulator: None,
                remote: None,
                quic_stack: None,
                controller_mismatches: Vec::new(),
            },
            params: Params {
                ccs: vec!["bbr".into(), "cubic".into()],
                runs_per_cc: 2,
                runs_auto: false,
                seed: 1,
                alpha: 0.05,
                min_effect: 0.0,
                path: None,
                remote: None,
                metric: workload.metric().into(),
                workload,
                expect: Vec::new(),
            },
            sequential: None,
            summary: Vec::new(),
            comparisons: Vec::new(),
            rtt_comparisons: Vec::new(),
            expectations: Vec::new(),
            runs: vec![run(0, "bbr", Some(10.0)), run(1, "cubic", Some(12.0)), run(2, "bbr", Some(30.0)), run(3, "cubic", None), run(4, "bbr", Some(20.0))],
        }
    }

    /// `render` draws what `ReportData` holds and nothing else: lines and distributions put in
    /// by hand appear as figures, the runs as the table, and nothing is read from disk.
    #[test]
    fn render_draws_a_hand_built_report_without_reading_files() {
        let result = hand_built();
        let line = |run: usize, key: &str, median: bool, points: Vec<(f64, f64)>| Line {
            key: key.into(),
            label: format!("run {} · {key}", result.runs[run].index + 1),
            median,
            points,
        };
        let mut rtt = Pooled::default();
        for v in [20_000, 21_000, 40_000] {
            rtt.record("bbr", v);
        }
        let views = vec![
            RunView {
                run: &result.runs[4],
                median: true,
                rtt: vec![line(4, "bbr", true, vec![(0.0, 20.0), (1.5, 21.0), (3.0, 40.0)])],
                cwnd: Vec::new(),
                bbr_bw: Vec::new(),
                goodput: vec![line(4, "bbr", true, vec![(0.05, 19.0), (2.95, 21.0)])],
                queue: None,
                ce: None,
                bbr: Vec::new(),
                flow_rtt: Vec::new(),
            },
            RunView {
                run: &result.runs[1],
                median: false,
                rtt: Vec::new(),
                cwnd: Vec::new(),
                bbr_bw: Vec::new(),
                goodput: vec![line(1, "cubic", false, vec![(0.05, 11.0), (2.95, 13.0)])],
                queue: None,
                ce: None,
                bbr: Vec::new(),
                flow_rtt: Vec::new(),
            },
        ];
        let series = Gathered { runs: views, bin_us: 100_000, rtt, queue: Pooled::default(), errors: vec!["series/run-002/tcp.csv.gz: <truncated>".into()] };
        let data = ReportData { result: &result, summary: "cubic < bbr\n".into(), series };
        let html = render(&data);
        assert!(html.starts_with("<!doctype html>") && html.ends_with("</body></html>\n"), "a whole page");
        assert!(html.contains("<h1>ccbench: bbr vs cubic</h1>"));
        assert!(html.contains("<pre class=\"summary\">cubic &lt; bbr</pre>"), "the summary, escaped and trimmed");
        assert!(html.contains("<p class=\"warn\">warning: the host was &lt;busy&gt;</p>"));
        // The goodput figure has both runs' lines, the median one bold and named so.
        let goodput = &html[html.find("id=\"fig-goodput\"").expect("goodput figure")..];
        let goodput = &goodput[..goodput.find("</figure>").unwrap()];
        assert!(goodput.contains("run 5 · bbr (median run)") && goodput.contains("run 2 · cubic"), "{goodput}");
        assert!(goodput.contains("Per 100 ms") || goodput.contains("per 100 ms"), "the bin width from the data");
        // The RTT CDF is of the pooled samples: 3 of bbr, none of cubic.
        assert!(html.contains("bbr (3 samples)") && !html.contains("cubic (0 samples)"));
        // Figures without data are left out, not drawn empty.
        assert!(!html.contains("id=\"fig-cwnd\"") && !html.contains("id=\"fig-queue\"") && !html.contains("id=\"fig-bbr-bw\""));
        // Every run in the table, the failed one with its error; the series error as a warning.
        assert_eq!(html.matches("<tr><td class=\"n\">").count(), 5);
        assert!(html.contains("<td>failed</td>") && html.contains("the server &lt;went&gt; away"));
        assert!(html.contains("could not read a series file: series/run-002/tcp.csv.gz: &lt;truncated&gt;"));
        assert!(!html.contains("/nonexistent"), "nothing was read from the runs' files");
        assert_eq!(html, render(&data), "rendering is a function of the data");
        assert!(!html.contains("id=\"expectations\""), "no expectations, no table");
    }

    /// `result` with each completed run's one flow limited as `of` says for its algorithm:
    /// (fractions: cwnd, pacing, app; seconds active) per run, in the order of the runs.
    fn with_limits(mut result: ExperimentResult, of: &[(u32, [f64; 3], f64)]) -> ExperimentResult {
        use ccbench_model::workloads::WorkloadResult;
        use ccbench_workload::{FlowResult, LimitedBy, Mechanism, SenderRecord, Side};
        for run in &mut result.runs {
            let Some(WorkloadResult::Bulk(b)) = run.workload.as_mut() else { continue };
            let Some(&(_, [cwnd, pacing, app], active_s)) = of.iter().find(|(i, _, _)| *i == run.index) else { continue };
            let mut sending = SenderRecord::tcp(run.cc.clone(), run.cc.clone(), None);
            sending.limited_by = Some(LimitedBy { cwnd, pacing, app, ..Default::default() });
            sending.mechanism = Some(Mechanism { active_s, mss: 1448, mean_rtt_us: 40_000.0, ..Default::default() });
            b.flows = vec![FlowResult {
                id: 0,
                sender: Side::Server,
                sending,
                start_s: 0.0,
                client_port: 40000,
                bytes_received: 1,
                goodput_bps: b.goodput_bps,
                completed: true,
                completion_time_s: None,
                error: None,
            }];
        }
        result
    }

    /// The page across conditions names each algorithm's dominant limit per condition: the
    /// cause its flows held, weighted by their active time over its completed runs, when that
    /// is 60 % or more; "no dominant cause" below; "not recorded" for a result without the
    /// accounting (issue 30).
    #[test]
    fn the_conditions_table_names_each_algorithms_dominant_limit() {
        // Runs 0, 2, 4 are bbr's (1 s, 3 s, 1 s active), 1 is cubic's; 3 failed.
        let paced = with_limits(hand_built(), &[(0, [0.0, 1.0, 0.0], 1.0), (2, [0.5, 0.5, 0.0], 3.0), (4, [0.2, 0.8, 0.0], 1.0), (1, [0.97, 0.03, 0.0], 3.0)]);
        // Weighted by time, bbr's pacing share is (1 + 1.5 + 0.8) / 5 = 66 %; unweighted it
        // would be 77 %.
        let split =
            with_limits(hand_built(), &[(0, [0.45, 0.4, 0.15], 1.0), (2, [0.45, 0.4, 0.15], 1.0), (4, [0.45, 0.4, 0.15], 1.0), (1, [0.1, 0.1, 0.8], 2.0)]);
        let old = hand_built();
        let page = render_conditions(&[("loss 1%".into(), &paced), ("split".into(), &split), ("old".into(), &old)]);
        assert!(page.contains("<th>why (dominant limit)</th>"), "{page}");
        let row = |name: &str| {
            let at = page.find(&format!("<tr><td>{name}</td>")).unwrap_or_else(|| panic!("no row {name}: {page}"));
            page[at..at + page[at..].find("</tr>").unwrap()].to_string()
        };
        assert!(row("loss 1%").ends_with("<td>bbr: pacing 66 %, cubic: cwnd 97 %</td>"), "{}", row("loss 1%"));
        assert!(row("split").ends_with("<td>bbr: no dominant cause, cubic: app 80 %</td>"), "{}", row("split"));
        assert!(row("old").ends_with("<td>bbr: not recorded, cubic: not recorded</td>"), "{}", row("old"));
    }

    fn judged(cc: &str, expect: &str, op: &str, median: f64, lo: f64, hi: f64, result: Judgement) -> ccbench_model::expect::ExpectationResult {
        ccbench_model::expect::ExpectationResult {
            expect: expect.into(),
            cc: cc.into(),
            metric: "goodput".into(),
            op: op.into(),
            threshold: 10e6,
            unit: "bit/s".into(),
            runs: 5,
            median: Some(median),
            lo: Some(lo),
            hi: Some(hi),
            level: Some(1.0 - 1.0 / 32.0),
            alpha: 0.05,
            result,
        }
    }

    /// The expectations' table: one row per expectation × algorithm near the top, with the
    /// figures, the deciding bound in bold and the judgement coloured; the page across
    /// conditions (and a sweep's cells) marks each condition.
    #[test]
    fn expectations_are_a_coloured_table_near_the_top_and_mark_each_condition() {
        let mut result = hand_built();
        result.expectations = vec![
            judged("bbr", "goodput >= 10mbit", ">=", 20e6, 19e6, 21e6, Judgement::Pass),
            judged("cubic", "goodput >= 10mbit", ">=", 5e6, 4e6, 6e6, Judgement::Fail),
            judged("bbr", "goodput <= 10mbit", "<=", 11e6, 9e6, 12e6, Judgement::Undecided),
        ];
        let data = ReportData {
            result: &result,
            summary: String::new(),
            series: Gathered { runs: Vec::new(), bin_us: 100_000, rtt: Pooled::default(), queue: Pooled::default(), errors: Vec::new() },
        };
        let html = render(&data);
        let table = &html[html.find("id=\"expectations\"").expect("the table")..];
        assert!(html.find("id=\"expectations\"") < html.find("<pre class=\"summary\">"), "before the summary");
        assert!(table.starts_with("id=\"expectations\">Expectations: 1 of 3 pass</h2>"), "{table}");
        let table = &table[..table.find("</table>").unwrap()];
        assert_eq!(table.matches("<tr><td>").count(), 3);
        assert!(table.contains("<tr><td>bbr</td><td><code>goodput &gt;= 10mbit</code></td><td class=\"n\">10.0 Mbit/s</td><td class=\"n\">20.0 Mbit/s</td><td class=\"n\"><b>19.0 Mbit/s</b></td><td class=\"n\">21.0 Mbit/s</td><td class=\"n\">96.9 %</td><td class=\"n\">5</td><td class=\"pass\">pass</td></tr>"), "{table}");
        assert!(
            table.contains("<td class=\"n\">4.00 Mbit/s</td><td class=\"n\"><b>6.00 Mbit/s</b></td>") && table.contains("<td class=\"fail\">fail</td>"),
            "a failed >= is decided by its upper bound: {table}"
        );
        assert!(table.contains("<td class=\"undecided\">undecided</td>") && !table.contains("<b>12.0"), "{table}");
        let clean = hand_built();
        let page = render_conditions(&[("fast".into(), &result), ("slow".into(), &clean)]);
        assert!(page.contains("<th>expectations</th>"), "{page}");
        assert!(page.contains("<td class=\"fail\">fail</td><td>cubic: goodput &gt;= 10mbit (fail); bbr: goodput &lt;= 10mbit (undecided)</td></tr>"), "{page}");
        assert!(page.contains("<td>–</td><td></td></tr>"), "a condition without expectations has no mark: {page}");
        assert!(!render_conditions(&[("slow".into(), &clean)]).contains("<th>expectations</th>"));
    }
}
