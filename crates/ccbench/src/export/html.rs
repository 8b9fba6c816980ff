//! `report.html` beside `result.json`: the summary and verdicts, and plots over time of one
//! representative run per algorithm (the run with the median score). One self-contained file
//! with inline SVG, so it opens anywhere without a network or a plotting library.

use std::fmt::Write as _;

use ccbench_workload::SocketId;

use crate::results::{ExperimentResult, RunRecord, Status};
use crate::workloads::WorkloadResult;

const COLORS: [&str; 6] = ["#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#ff7f0e", "#8c564b"];
const W: f64 = 760.0;
const H: f64 = 220.0;
const PAD_L: f64 = 60.0;
const PAD_B: f64 = 30.0;

/// One line of a chart: a name and (x, y) points.
pub struct Series {
    pub name: String,
    pub points: Vec<(f64, f64)>,
}

fn escape(s: &str) -> String {
    s.replace('&', "&amp;").replace('<', "&lt;").replace('>', "&gt;")
}

/// A line chart as an SVG element; axes start at zero.
pub fn chart(title: &str, x_label: &str, y_label: &str, series: &[Series]) -> String {
    let all = series.iter().flat_map(|s| s.points.iter());
    let x_max = all.clone().map(|p| p.0).fold(0.0, f64::max).max(1e-9);
    let y_max = all.map(|p| p.1).fold(0.0, f64::max).max(1e-9) * 1.05;
    let sx = |x: f64| PAD_L + x / x_max * (W - PAD_L - 10.0);
    let sy = |y: f64| H - PAD_B - y / y_max * (H - PAD_B - 20.0);
    let mut out = format!("<figure><figcaption>{}</figcaption><svg viewBox=\"0 0 {W} {H}\" width=\"{W}\" height=\"{H}\" role=\"img\">", escape(title));
    let _ = write!(out, "<line x1=\"{PAD_L}\" y1=\"{0}\" x2=\"{1}\" y2=\"{0}\" stroke=\"#888\"/>", H - PAD_B, W - 10.0);
    let _ = write!(out, "<line x1=\"{PAD_L}\" y1=\"20\" x2=\"{PAD_L}\" y2=\"{}\" stroke=\"#888\"/>", H - PAD_B);
    for i in 0..=4 {
        let (fx, fy) = (x_max * i as f64 / 4.0, y_max * i as f64 / 4.0);
        let _ = write!(out, "<text x=\"{:.1}\" y=\"{}\" font-size=\"11\" text-anchor=\"middle\">{}</text>", sx(fx), H - PAD_B + 14.0, tick(fx));
        let _ = write!(out, "<text x=\"{}\" y=\"{:.1}\" font-size=\"11\" text-anchor=\"end\">{}</text>", PAD_L - 4.0, sy(fy) + 4.0, tick(fy));
    }
    let _ = write!(out, "<text x=\"{}\" y=\"{}\" font-size=\"11\" text-anchor=\"middle\">{}</text>", (W + PAD_L) / 2.0, H - 2.0, escape(x_label));
    let _ = write!(out, "<text x=\"12\" y=\"14\" font-size=\"11\">{}</text>", escape(y_label));
    for (i, s) in series.iter().enumerate() {
        let color = COLORS[i % COLORS.len()];
        let pts: Vec<String> = s.points.iter().map(|&(x, y)| format!("{:.1},{:.1}", sx(x), sy(y))).collect();
        let _ = write!(out, "<polyline fill=\"none\" stroke=\"{color}\" stroke-width=\"1.3\" points=\"{}\"/>", pts.join(" "));
        let _ = write!(out, "<text x=\"{}\" y=\"{}\" font-size=\"12\" fill=\"{color}\">{}</text>", W - 150.0, 30.0 + 15.0 * i as f64, escape(&s.name));
    }
    out.push_str("</svg></figure>\n");
    out
}

fn tick(v: f64) -> String {
    if v == 0.0 {
        "0".into()
    } else if v >= 100.0 {
        format!("{v:.0}")
    } else if v >= 1.0 {
        format!("{v:.1}")
    } else {
        format!("{v:.3}")
    }
}

/// The completed run of `cc` whose score is the median of its runs.
fn representative<'a>(result: &'a ExperimentResult, cc: &str) -> Option<&'a RunRecord> {
    let mut runs: Vec<&RunRecord> =
        result.runs.iter().filter(|r| r.cc == cc && r.status == Status::Complete && r.metrics.as_ref().and_then(|m| m.score).is_some()).collect();
    runs.sort_by(|a, b| {
        let s = |r: &RunRecord| r.metrics.as_ref().and_then(|m| m.score).unwrap_or(0.0);
        s(a).total_cmp(&s(b))
    });
    runs.get(runs.len() / 2).copied()
}

/// Goodput over time (Mbit/s per 100 ms) of every flow of a bulk run, summed or per flow.
fn goodput_series(run: &RunRecord, per_flow: bool) -> Vec<Series> {
    let Some(WorkloadResult::Bulk(b)) = &run.workload else { return Vec::new() };
    let bin_us = 100_000u64;
    let rate = |points: &[ccbench_workload::GoodputPoint]| -> Vec<(f64, f64)> {
        let mut out = Vec::new();
        let mut last = (b.start_us, 0u64);
        for p in points {
            if p.t_us >= last.0 + bin_us {
                let dt = (p.t_us - last.0) as f64 / 1e6;
                out.push(((p.t_us - b.start_us) as f64 / 1e6, (p.bytes - last.1) as f64 * 8.0 / dt / 1e6));
                last = (p.t_us, p.bytes);
            }
        }
        out
    };
    if per_flow {
        b.flows.iter().map(|f| Series { name: format!("flow {} ({})", f.id, f.cc_requested), points: rate(&run.series.received_of(f.id)) }).collect()
    } else {
        let flows: Vec<Vec<(f64, f64)>> = b.flows.iter().map(|f| rate(&run.series.received_of(f.id))).collect();
        let n = flows.iter().map(Vec::len).min().unwrap_or(0);
        vec![Series { name: run.cc.clone(), points: (0..n).map(|i| (flows[0][i].0, flows.iter().map(|f| f[i].1).sum())).collect() }]
    }
}

pub fn render(result: &ExperimentResult, summary_text: &str) -> String {
    let mut out = String::from("<!doctype html><html><head><meta charset=\"utf-8\"><title>ccbench report</title><style>body{font-family:sans-serif;max-width:900px;margin:2em auto;color:#222}pre{background:#f6f6f6;padding:1em;overflow-x:auto;font-size:12px}figure{margin:1.5em 0}figcaption{font-weight:bold;margin-bottom:.3em}</style></head><body>\n");
    let _ = writeln!(out, "<h1>ccbench: {}</h1>", escape(&result.params.ccs.join(" vs ")));
    let _ = writeln!(out, "<p>{} — {}</p>", escape(&result.provenance.started_at), escape(&result.params.workload.describe()));
    let _ = writeln!(out, "<pre>{}</pre>", escape(summary_text.trim_matches('\n')));
    let reps: Vec<&RunRecord> = result.params.ccs.iter().filter_map(|cc| representative(result, cc)).collect();
    let start = |r: &RunRecord| match &r.workload {
        Some(WorkloadResult::Bulk(b)) => b.start_us,
        Some(WorkloadResult::Objects(o)) => o.start_us.unwrap_or(0),
        Some(WorkloadResult::Page(p)) => p.start_us.unwrap_or(0),
        None => 0,
    };
    // One line per sending socket: every flow of a bulk run, the first connection otherwise
    // (an object load has dozens, which would only make a blur).
    let sockets = |r: &RunRecord| -> Vec<(String, Vec<ccbench_probe::Sample>)> {
        let of = |id| r.series.samples(id);
        match &r.workload {
            Some(WorkloadResult::Bulk(b)) if b.flows.len() > 1 => {
                b.flows.iter().map(|f| (format!("{} flow {}", f.cc_requested, f.id), of(SocketId::Flow(f.id)))).collect()
            }
            Some(WorkloadResult::Bulk(b)) => b.flows.iter().map(|f| (r.cc.clone(), of(SocketId::Flow(f.id)))).collect(),
            Some(WorkloadResult::Objects(o)) => {
                o.connections.first().map(|c| vec![(format!("{} (connection 0)", r.cc), of(SocketId::Connection(c.client_port)))]).unwrap_or_default()
            }
            Some(WorkloadResult::Page(p)) => {
                p.connections.first().map(|c| vec![(format!("{} (connection 0)", r.cc), of(SocketId::Connection(c.client_port)))]).unwrap_or_default()
            }
            None => Vec::new(),
        }
    };
    let samples = |f: &dyn Fn(&ccbench_probe::Sample) -> f64| -> Vec<Series> {
        reps.iter()
            .flat_map(|r| {
                let t0 = start(r);
                sockets(r)
                    .into_iter()
                    .map(move |(name, ss)| Series { name, points: ss.iter().map(|s| (s.t_us.saturating_sub(t0) as f64 / 1e6, f(s))).collect() })
            })
            .collect()
    };
    let _ = writeln!(out, "<h2>Inside one run per algorithm (the run with the median score)</h2>");
    if result.params.workload.is_mix() {
        if let Some(r) = reps.first() {
            out.push_str(&chart("Goodput per flow", "seconds", "Mbit/s", &goodput_series(r, true)));
        }
    } else {
        let g: Vec<Series> = reps.iter().flat_map(|r| goodput_series(r, false)).collect();
        if !g.is_empty() {
            out.push_str(&chart("Goodput at the receiver", "seconds", "Mbit/s", &g));
        }
    }
    out.push_str(&chart("Sender's smoothed RTT (TCP_INFO)", "seconds", "ms", &samples(&|s| s.rtt_us as f64 / 1000.0)));
    out.push_str(&chart("Congestion window", "seconds", "packets", &samples(&|s| f64::from(s.cwnd))));
    let queue: Vec<Series> = reps
        .iter()
        .filter_map(|r| {
            let t0 = start(r);
            let dir = match result.params.workload.data_direction() {
                ccbench_workload::Direction::Download => &r.path.as_ref()?.down,
                ccbench_workload::Direction::Upload => &r.path.as_ref()?.up,
            };
            Some(Series {
                name: r.cc.clone(),
                points: dir.series.iter().filter(|p| p.t_us >= t0).map(|p| ((p.t_us - t0) as f64 / 1e6, p.queue_delay_max_us / 1000.0)).collect(),
            })
        })
        .collect();
    out.push_str(&chart("Queueing delay at the bottleneck (max per 10 ms, emulator's view)", "seconds", "ms", &queue));
    let bbr: Vec<Series> = samples(&|s| s.bbr.as_ref().map(|b| b.bw_bps as f64 / 1e6).unwrap_or(f64::NAN))
        .into_iter()
        .map(|mut s| {
            s.points.retain(|p| p.1.is_finite());
            s
        })
        .filter(|s| !s.points.is_empty())
        .collect();
    if !bbr.is_empty() {
        out.push_str(&chart("BBR's bandwidth estimate (TCP_CC_INFO)", "seconds", "Mbit/s", &bbr));
    }
    let _ = writeln!(out, "<p>Every run's raw figures are in <code>result.json</code> (schema {}).</p></body></html>", result.schema);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn chart_scales_points_into_the_plot_area() {
        let svg = chart("t", "x", "y", &[Series { name: "a".into(), points: vec![(0.0, 0.0), (10.0, 5.0)] }]);
        assert!(svg.starts_with("<figure>") && svg.contains("<polyline"));
        // (0, 0) sits on the axes' corner; (10, 5) at the right edge, just below the top.
        assert!(svg.contains(&format!("points=\"{PAD_L:.1},{:.1} {:.1},", H - PAD_B, W - 10.0)), "{svg}");
        assert!(!chart("<b>", "x", "y", &[]).contains("<b>"), "titles are escaped");
    }
}
