//! `report.html` beside `result.json`: the summary and verdicts, and plots over time of one
//! representative run per algorithm (the run with the median score). One self-contained file
//! with inline SVG, so it opens anywhere without a network or a plotting library.

use std::fmt::Write as _;

use std::path::Path;

use ccbench_emu::LinkSample;

use crate::results::{ExperimentResult, RunRecord, Status};
use crate::series::{GoodputRow, TcpRow};
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

/// Most points a plotted line keeps: beyond it, every other point is dropped (and the stride
/// doubled), so reading an hour of samples costs the same memory as reading a minute.
const MAX_POINTS: usize = 2000;

/// Keeps at most `MAX_POINTS` of a stream of points, evenly spaced in arrival order.
#[derive(Default)]
struct Decimated {
    points: Vec<(f64, f64)>,
    stride: usize,
    seen: usize,
}

impl Decimated {
    fn push(&mut self, p: (f64, f64)) {
        let stride = self.stride.max(1);
        if self.seen.is_multiple_of(stride) {
            self.points.push(p);
            if self.points.len() >= MAX_POINTS {
                self.points = self.points.iter().step_by(2).copied().collect();
                self.stride = stride * 2;
            }
        }
        self.seen += 1;
    }
}

fn run_start(r: &RunRecord) -> u64 {
    match &r.workload {
        Some(WorkloadResult::Bulk(b)) => b.start_us,
        Some(WorkloadResult::Objects(o)) => o.start_us.unwrap_or(0),
        Some(WorkloadResult::Page(p)) => p.start_us.unwrap_or(0),
        None => 0,
    }
}

/// Goodput over time (Mbit/s per 100 ms) of every flow of a bulk run, from its goodput file:
/// per flow, or summed over flows.
fn goodput_series(dir: &Path, run: &RunRecord, per_flow: bool) -> Vec<Series> {
    let (Some(WorkloadResult::Bulk(b)), Some(files)) = (&run.workload, &run.series) else { return Vec::new() };
    let bin_us = 100_000u64;
    // Per flow: the last point that closed a bin, and the bins so far.
    let mut last: Vec<(u64, u64)> = vec![(b.start_us, 0); b.flows.len()];
    let mut bins: Vec<Decimated> = b.flows.iter().map(|_| Decimated::default()).collect();
    let read = crate::series::for_each_row(&dir.join(&files.goodput), |p: GoodputRow| {
        let Some(i) = b.flows.iter().position(|f| f.id == p.flow) else { return };
        if p.t_us >= last[i].0 + bin_us {
            let dt = (p.t_us - last[i].0) as f64 / 1e6;
            bins[i].push(((p.t_us.saturating_sub(b.start_us)) as f64 / 1e6, p.bytes.saturating_sub(last[i].1) as f64 * 8.0 / dt / 1e6));
            last[i] = (p.t_us, p.bytes);
        }
    });
    if read.is_err() {
        return Vec::new();
    }
    let flows: Vec<Vec<(f64, f64)>> = bins.into_iter().map(|d| d.points).collect();
    if per_flow {
        b.flows.iter().zip(flows).map(|(f, points)| Series { name: format!("flow {} ({})", f.id, f.cc_requested), points }).collect()
    } else {
        let n = flows.iter().map(Vec::len).min().unwrap_or(0);
        vec![Series { name: run.cc.clone(), points: (0..n).map(|i| (flows[0][i].0, flows.iter().map(|f| f[i].1).sum())).collect() }]
    }
}

/// What is plotted of each sending socket.
struct SocketLines {
    name: String,
    rtt_ms: Decimated,
    cwnd: Decimated,
    bbr_bw_mbps: Decimated,
}

/// One set of lines per sending socket from the run's TCP file: every flow of a bulk run, the
/// first connection otherwise (an object load has dozens, which would only make a blur).
fn socket_lines(dir: &Path, r: &RunRecord) -> Vec<SocketLines> {
    let Some(files) = &r.series else { return Vec::new() };
    let t0 = run_start(r);
    let (is_bulk, mix) = match &r.workload {
        Some(WorkloadResult::Bulk(b)) => (true, b.flows.len() > 1),
        _ => (false, false),
    };
    let flow_cc = |id: &str| -> String {
        match &r.workload {
            Some(WorkloadResult::Bulk(b)) => b.flows.iter().find(|f| format!("flow-{}", f.id) == id).map_or_else(|| r.cc.clone(), |f| f.cc_requested.clone()),
            _ => r.cc.clone(),
        }
    };
    let mut lines: Vec<(String, SocketLines)> = Vec::new();
    let read = crate::series::for_each_row(&dir.join(&files.tcp), |row: TcpRow| {
        let i = match lines.iter().position(|(s, _)| *s == row.socket) {
            Some(i) => i,
            None if is_bulk || lines.is_empty() => {
                let name = if mix {
                    format!("{} {}", flow_cc(&row.socket), row.socket.replace('-', " "))
                } else if is_bulk {
                    r.cc.clone()
                } else {
                    format!("{} (connection 0)", r.cc)
                };
                lines.push((
                    row.socket.clone(),
                    SocketLines { name, rtt_ms: Decimated::default(), cwnd: Decimated::default(), bbr_bw_mbps: Decimated::default() },
                ));
                lines.len() - 1
            }
            None => return,
        };
        let t = row.t_us.saturating_sub(t0) as f64 / 1e6;
        let l = &mut lines[i].1;
        l.rtt_ms.push((t, f64::from(row.rtt_us) / 1000.0));
        l.cwnd.push((t, f64::from(row.cwnd)));
        if let Some(bw) = row.bbr_bw_bps {
            l.bbr_bw_mbps.push((t, bw as f64 / 1e6));
        }
    });
    if read.is_err() {
        return Vec::new();
    }
    lines.into_iter().map(|(_, l)| l).collect()
}

/// The emulator's queueing delay (max per sample interval) on the data's direction.
fn queue_series(dir: &Path, r: &RunRecord, direction: ccbench_workload::Direction) -> Option<Series> {
    let files = r.series.as_ref()?;
    let file = match direction {
        ccbench_workload::Direction::Download => &files.link_down,
        ccbench_workload::Direction::Upload => &files.link_up,
    };
    let t0 = run_start(r);
    let mut points = Decimated::default();
    crate::series::for_each_row(&dir.join(file), |p: LinkSample| {
        if p.t_us >= t0 {
            points.push(((p.t_us - t0) as f64 / 1e6, p.queue_delay_max_us / 1000.0));
        }
    })
    .ok()?;
    Some(Series { name: r.cc.clone(), points: points.points })
}

/// The report of `result`, whose series files are under `dir` (the directory of result.json).
/// Reads only the representative runs' files, one row at a time.
pub fn render(result: &ExperimentResult, summary_text: &str, dir: &Path) -> String {
    let mut out = String::from("<!doctype html><html><head><meta charset=\"utf-8\"><title>ccbench report</title><style>body{font-family:sans-serif;max-width:900px;margin:2em auto;color:#222}pre{background:#f6f6f6;padding:1em;overflow-x:auto;font-size:12px}figure{margin:1.5em 0}figcaption{font-weight:bold;margin-bottom:.3em}</style></head><body>\n");
    let _ = writeln!(out, "<h1>ccbench: {}</h1>", escape(&result.params.ccs.join(" vs ")));
    let _ = writeln!(out, "<p>{} — {}</p>", escape(&result.provenance.started_at), escape(&result.params.workload.describe()));
    let _ = writeln!(out, "<pre>{}</pre>", escape(summary_text.trim_matches('\n')));
    let reps: Vec<&RunRecord> = result.params.ccs.iter().filter_map(|cc| representative(result, cc)).collect();
    let sockets: Vec<SocketLines> = reps.iter().flat_map(|r| socket_lines(dir, r)).collect();
    let lines = |f: &dyn Fn(&SocketLines) -> &Decimated| -> Vec<Series> {
        sockets.iter().map(|s| Series { name: s.name.clone(), points: f(s).points.clone() }).filter(|s| !s.points.is_empty()).collect()
    };
    let _ = writeln!(out, "<h2>Inside one run per algorithm (the run with the median score)</h2>");
    if result.params.workload.is_mix() {
        if let Some(r) = reps.first() {
            out.push_str(&chart("Goodput per flow", "seconds", "Mbit/s", &goodput_series(dir, r, true)));
        }
    } else {
        let g: Vec<Series> = reps.iter().flat_map(|r| goodput_series(dir, r, false)).collect();
        if !g.is_empty() {
            out.push_str(&chart("Goodput at the receiver", "seconds", "Mbit/s", &g));
        }
    }
    out.push_str(&chart("Sender's smoothed RTT (TCP_INFO)", "seconds", "ms", &lines(&|s| &s.rtt_ms)));
    out.push_str(&chart("Congestion window", "seconds", "packets", &lines(&|s| &s.cwnd)));
    let queue: Vec<Series> = reps.iter().filter_map(|r| queue_series(dir, r, result.params.workload.data_direction())).collect();
    out.push_str(&chart("Queueing delay at the bottleneck (max per 10 ms, emulator's view)", "seconds", "ms", &queue));
    let bbr = lines(&|s| &s.bbr_bw_mbps);
    if !bbr.is_empty() {
        out.push_str(&chart("BBR's bandwidth estimate (TCP_CC_INFO)", "seconds", "Mbit/s", &bbr));
    }
    let _ = writeln!(
        out,
        "<p>Every run's figures are in <code>result.json</code> (schema {}); its time series are in <code>series/run-NNN/*.csv.gz</code>.</p></body></html>",
        result.schema
    );
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

    #[test]
    fn decimation_keeps_memory_bounded_and_points_evenly_spaced() {
        let mut d = Decimated::default();
        for i in 0..1_000_000 {
            d.push((f64::from(i), 0.0));
        }
        assert!(d.points.len() < MAX_POINTS && d.points.len() >= MAX_POINTS / 4, "{}", d.points.len());
        let gaps: Vec<f64> = d.points.windows(2).map(|w| w[1].0 - w[0].0).collect();
        assert!(gaps.iter().all(|g| *g == gaps[0]), "even spacing");
        assert_eq!(d.points[0].0, 0.0);
    }
}
