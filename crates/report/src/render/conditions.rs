//! The page across a preset's conditions: each algorithm's headline, sender RTT and queueing
//! delay against the condition, and the shares of a mix.

use super::*;

/// The headline of a workload across conditions: its label, and the summary it is read from
/// with the divisor to the label's unit.
pub(super) type Pick = fn(&CcSummary) -> Option<Summary>;

/// One arm per kind of [`Headline`], no default: a workload with a figure of its own is a new
/// `Headline` variant, and the compiler asks here what it is read from (never goodput unasked).
pub(super) fn headline_runs(w: &WorkloadSpec) -> RunPick {
    match w.headline() {
        Headline::Goodput | Headline::ContentThroughput => |m| Some(m.goodput_bps),
        Headline::FileCompletion | Headline::PageLoad => |m| m.completion_time_s,
        Headline::Score(_) => |m| m.score,
    }
}

pub(super) fn headline(w: &WorkloadSpec) -> (&'static str, Pick, f64) {
    let (label, scale) = w.headline().across_conditions();
    let pick: Pick = match w.headline() {
        Headline::Goodput | Headline::ContentThroughput => |s| s.goodput_bps,
        Headline::FileCompletion | Headline::PageLoad => |s| s.completion_time_s,
        Headline::Score(_) => |s| s.score,
    };
    (label, pick, scale)
}

/// One algorithm's metric at one condition: the median over runs and a distribution-free CI of
/// it (order statistics) at its true `level`, which is below 95 % with fewer than 6 runs;
/// `None` with too few runs for any interval.
#[derive(Clone, Copy)]
pub(super) struct Spread {
    median: f64,
    ci: Option<(f64, f64, f64)>,
    n: usize,
}

/// The same figure as `pick` reads from the summary, per completed run of `cc`.
pub(super) type RunPick = fn(&RunMetrics) -> Option<f64>;

pub(super) fn run_values(r: &ExperimentResult, cc: &Cc, f: RunPick) -> Vec<f64> {
    r.runs.iter().filter(|x| &x.cc == cc && x.status == Status::Complete).filter_map(|x| x.metrics.as_ref()).filter_map(f).collect()
}

/// One metric per algorithm against the condition: the median over runs, a bar over the
/// median's order-statistic CI labelled with its true level, a log axis when the values span
/// more than 10×.
pub(super) fn conditions_figure(
    id: &str,
    title: &str,
    y_label: &str,
    rows: &[(String, &ExperimentResult)],
    pick: &dyn Fn(&ExperimentResult, &CcSummary) -> Option<Summary>,
    per_run: &dyn Fn(&ExperimentResult) -> Option<RunPick>,
    div: f64,
) -> String {
    let series = |r: &ExperimentResult| -> Vec<ConditionPoint> {
        r.summary
            .iter()
            .filter_map(|s| {
                let v = pick(r, s)?;
                let runs = per_run(r).map(|f| run_values(r, &s.cc, f)).unwrap_or_default();
                Some(ConditionPoint { key: s.cc.to_string(), summary: v, runs })
            })
            .collect()
    };
    conditions_plot(id, title, y_label, rows, &series, YScale { div, may_log: true }, "Median over runs.")
}

/// One value of a figure across conditions: whose it is (the legend's key), its summary over
/// runs, and each completed run's value (for the median's CI).
pub(super) struct ConditionPoint {
    key: String,
    summary: Summary,
    runs: Vec<f64>,
}

/// Each algorithm's share of the bottleneck in every condition that ran a mix, in percent.
pub(super) fn conditions_shares_figure(rows: &[(String, &ExperimentResult)]) -> String {
    let series = |r: &ExperimentResult| -> Vec<ConditionPoint> {
        r.summary
            .iter()
            .flat_map(|s| &s.shares)
            .map(|sh| {
                let runs = r
                    .runs
                    .iter()
                    .filter(|x| x.status == Status::Complete)
                    .filter_map(|x| x.metrics.as_ref())
                    .filter_map(|m| m.shares.iter().find(|c| c.cc == sh.cc))
                    .map(|c| c.share)
                    .collect();
                ConditionPoint { key: sh.cc.to_string(), summary: sh.share, runs }
            })
            .collect()
    };
    conditions_plot(
        "cond-shares",
        "Share of the bottleneck (conditions with several flows)",
        "share of goodput (%)",
        rows,
        &series,
        YScale { div: 0.01, may_log: false },
        "Median over runs, each algorithm's flows together; a fair share is the flows' count over all flows.",
    )
}

/// How a figure across conditions shows its values: divided by `div`, and on a log axis when
/// they span more than 10× and `may_log` (not for shares, whose 0–100 % reads best linear).
pub(super) struct YScale {
    div: f64,
    may_log: bool,
}

pub(super) fn conditions_plot(
    id: &str,
    title: &str,
    y_label: &str,
    rows: &[(String, &ExperimentResult)],
    series: &dyn Fn(&ExperimentResult) -> Vec<ConditionPoint>,
    scale: YScale,
    note: &str,
) -> String {
    let YScale { div, may_log } = scale;
    let per_row: Vec<Vec<ConditionPoint>> = rows.iter().map(|(_, r)| series(r)).collect();
    let mut keys: Vec<String> = Vec::new();
    for p in per_row.iter().flatten() {
        if !keys.contains(&p.key) {
            keys.push(p.key.clone());
        }
    }
    if keys.is_empty() {
        return String::new();
    }
    let palette = Palette(keys.clone());
    let values: Vec<Vec<Option<Spread>>> = per_row
        .iter()
        .map(|points| {
            keys.iter()
                .map(|k| {
                    points.iter().find(|p| &p.key == k).map(|p| {
                        let ci = ccbench_stats::median_order_ci(&p.runs, 0.95).map(|c| (c.lo / div, c.hi / div, c.level));
                        Spread { median: p.summary.median / div, ci, n: p.summary.n }
                    })
                })
                .collect()
        })
        .collect();
    let all = values.iter().flatten().flatten().flat_map(|v| [v.ci.map_or(v.median, |c| c.0), v.median, v.ci.map_or(v.median, |c| c.1)]);
    let y = Axis::new(y_label).fit(all);
    let y = if may_log { y.log_if_wide() } else { y };
    let log = y.is_log();
    let y = if log { y } else { y.zero() };
    let x = Axis::new("condition").categories(rows.iter().map(|(n, _)| n.clone()).collect());
    let mut p = Plot::new(id, WIDE, 340.0, x, y, None);
    let m = keys.len() as f64;
    let offset = |j: usize| (j as f64 - (m - 1.0) / 2.0) * (0.5 / m.max(2.0));
    for (j, key) in keys.iter().enumerate() {
        let color = palette.color(key);
        let pts: Vec<(f64, f64)> = values.iter().enumerate().map(|(i, v)| (i as f64 + offset(j), v[j].as_ref().map_or(f64::NAN, |v| v.median))).collect();
        p.line(&pts, color, Stroke { width: 1.0, opacity: 0.5, dash: Some("4 3") }, None);
        for (i, v) in values.iter().enumerate() {
            let Some(Spread { median: med, ci, n }) = v[j] else { continue };
            let tip = match ci {
                Some((lo, hi, level)) => {
                    format!("{key} at {}: median {} ({:.1} % CI {}–{}, {n} runs)", rows[i].0, fmt_sig(med), level * 100.0, fmt_sig(lo), fmt_sig(hi))
                }
                None => format!("{key} at {}: median {} ({n} runs: too few for a CI)", rows[i].0, fmt_sig(med)),
            };
            let x = i as f64 + offset(j);
            if let Some((lo, hi, _)) = ci {
                p.error_bar_y(x, lo, hi, color, 8.0, Some(&tip));
            }
            p.point(x, med, 4.5, color, true, Some(&tip));
        }
    }
    let mut items: Vec<(String, String, Key)> = keys.iter().map(|k| (k.clone(), palette.color(k).to_string(), Key::Dot)).collect();
    let levels: Vec<f64> = values.iter().flatten().flatten().filter_map(|v| v.ci.map(|c| c.2)).collect();
    let (lo, hi) = levels.iter().fold((f64::INFINITY, 0.0f64), |(a, b), l| (a.min(*l), b.max(*l)));
    let bar = match levels.len() {
        0 => "no CI bars: too few runs".to_string(),
        _ if hi - lo < 1e-9 => format!("bar: {:.1} % CI of the median (order statistics, its true level)", lo * 100.0),
        _ => format!("bar: CI of the median (order statistics) at its true level, {:.1}–{:.1} %", lo * 100.0, hi * 100.0),
    };
    items.push((bar, GREY.into(), Key::Line));
    let note = if log { format!("{note} Log scale: the values span more than 10×.") } else { note.to_string() };
    figure(&format!("fig-{id}"), title, &note, &legend(&items), &p.finish())
}

/// The page across a preset's conditions (`OUT/report.html` beside `preset.json`): each
/// algorithm's headline metric, sender RTT and queueing delay against the condition.
pub fn render_conditions(rows: &[(String, &ExperimentResult)]) -> String {
    let title = "ccbench: across conditions";
    let mut out = head(title);
    let _ = writeln!(out, "<h1>{title}</h1>");
    let _ = writeln!(out, "<p>{} conditions, each its own experiment (its report is in its own directory).</p>", rows.len());
    // A preset's conditions or a sweep's cells with expectations are each marked by them.
    let expect = rows.iter().any(|(_, r)| !r.expectations.is_empty());
    let _ = write!(
        out,
        "<table><tr><th>condition</th><th>workload</th><th>median per algorithm</th><th>verdict</th><th>why (dominant limit)</th>{}</tr>",
        if expect { "<th>expectations</th><th>not passed</th>" } else { "" }
    );
    for (name, r) in rows {
        let marks = if expect {
            let not: Vec<String> =
                r.expectations.iter().filter(|e| e.result != Judgement::Pass).map(|e| format!("{}: {} ({})", e.cc, e.expect, e.result.word())).collect();
            let mark = overall(r.expectations.iter().map(|e| e.result)).map_or("<td>–</td>".to_string(), judgement_cell);
            format!("{mark}<td>{}</td>", escape(&not.join("; ")))
        } else {
            String::new()
        };
        let (label, pick, div) = headline(&r.params.workload);
        let unit = label.split(['(', ')']).nth(1).unwrap_or("");
        let medians: Vec<String> =
            r.summary.iter().map(|s| format!("{} {}", s.cc, pick(s).map(|v| format!("{} {unit}", fmt_sig(v.median / div))).unwrap_or("–".into()))).collect();
        let _ = write!(
            out,
            "<tr><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td>{marks}</tr>",
            escape(name),
            escape(&r.params.workload.describe_for(&r.params.ccs)),
            escape(&medians.join(", ")),
            escape(&r.verdict_short()),
            escape(&dominant_causes(r))
        );
    }
    out.push_str("</table>\n");
    // One figure per kind of headline (a preset usually has one).
    let mut kinds: Vec<&'static str> = Vec::new();
    for (_, r) in rows {
        let (label, _, _) = headline(&r.params.workload);
        if !kinds.contains(&label) {
            kinds.push(label);
        }
    }
    for (k, label) in kinds.iter().enumerate() {
        let pick = |r: &ExperimentResult, s: &CcSummary| {
            let (l, f, _) = headline(&r.params.workload);
            if l == *label {
                f(s)
            } else {
                None
            }
        };
        let div = rows.iter().map(|(_, r)| headline(&r.params.workload)).find(|(l, _, _)| l == label).map_or(1.0, |h| h.2);
        let name = label.split(" (").next().unwrap_or(label);
        let per_run = |r: &ExperimentResult| (headline(&r.params.workload).0 == *label).then(|| headline_runs(&r.params.workload));
        out.push_str(&conditions_figure(&format!("cond-headline-{k}"), &capitalise(name), label, rows, &pick, &per_run, div));
    }
    out.push_str(&conditions_shares_figure(rows));
    out.push_str(&conditions_figure(
        "cond-rtt",
        "Sender's RTT (median of each run's p50)",
        "sender RTT p50 (ms)",
        rows,
        &|_, s| s.sender_rtt_p50_ms,
        &|_| Some(|m| m.sender_rtt_p50_ms),
        1.0,
    ));
    out.push_str(&conditions_figure(
        "cond-queue",
        "Queueing delay at the bottleneck (each run's p95)",
        "queueing delay p95 (ms)",
        rows,
        &|_, s| s.queue_delay_p95_ms,
        &|_| Some(|m| m.queue_delay_p95_ms),
        1.0,
    ));
    out.push_str(&conditions_figure(
        "cond-retrans",
        "Retransmitted segments",
        "retransmissions (% of segments sent)",
        rows,
        &|_, s| s.retrans_rate.map(|r| scale_summary(r, 100.0)),
        &|_| Some(|m| Some(m.retrans_rate * 100.0)),
        1.0,
    ));
    out.push_str("</body></html>\n");
    out
}

/// Each algorithm's dominant limited-by cause (issue 30), "none" when no cause held
/// `DOMINANT_SHARE` of the time, "not recorded" when no flow has a record.
pub(super) fn dominant_causes(r: &ExperimentResult) -> String {
    let parts: Vec<String> = ccbench_model::why::why(r)
        .iter()
        .map(|w| match (w.limited_by, w.dominant) {
            (None, _) => format!("{}: not recorded", w.cc),
            (Some(_), Some((c, share))) => format!("{}: {} {:.0} %", w.cc, c.name(), share * 100.0),
            (Some(_), None) => format!("{}: no dominant cause", w.cc),
        })
        .collect();
    parts.join(", ")
}

pub(super) fn scale_summary(s: Summary, k: f64) -> Summary {
    Summary {
        min: s.min * k,
        max: s.max * k,
        mean: s.mean * k,
        stddev: s.stddev * k,
        median: s.median * k,
        p5: s.p5 * k,
        p25: s.p25 * k,
        p75: s.p75 * k,
        p95: s.p95 * k,
        ..s
    }
}
