//! Reading a result directory: `result.json`, and each completed run's series files
//! (`series/run-NNN/*.csv.gz`), one row at a time. Each line keeps a bounded number of points
//! ([`Decimated`]) and each distribution a bounded number of distinct values, so memory does
//! not grow with the length of a run.

use std::path::Path;

use ccbench_model::results::{ExperimentResult, RunRecord, Status};
use ccbench_model::series::LinkSample;
use ccbench_model::series::{ExactCounts, GoodputRow, TcpRow};
use ccbench_model::workload::Direction;

use crate::data::{
    bulk, representative, run_start, BbrTimeline, Gathered, Line, Palette, Pooled, ReportData, RunView, Strip, BBR_STATES, MAX_BBR_ROWS, STRIP_BINS,
};
use crate::svg::{nice_floor, round_sig3, Decimated, Timeline};

/// Points kept of a faint line (a run other than the median one): plenty at this width.
const FAINT_POINTS: usize = 400;
/// Sending sockets of one run drawn as lines (bulk flows; other workloads draw their first).
const MAX_SOCKETS: usize = 8;
/// Goodput is plotted in about this many bins over the longest run (each a round width).
const RATE_BINS: f64 = 40.0;

/// The experiment's `result.json` in the results directory `dir`.
pub fn read_result(dir: &Path) -> Result<ExperimentResult, String> {
    let path = dir.join("result.json");
    let text = std::fs::read_to_string(&path).map_err(|e| format!("reading {}: {e}", path.display()))?;
    serde_json::from_str(&text).map_err(|e| format!("{} is not a ccbench result: {e}", path.display()))
}

impl<'a> ReportData<'a> {
    /// What the report of `result` shows, its series files read from under `dir` (the
    /// directory of result.json), each completed run's once; `summary` is the terminal summary
    /// printed at the top. A file that cannot be read is named on the page, not an error.
    pub fn read(result: &'a ExperimentResult, summary: &str, dir: &Path) -> Self {
        let palette = Palette::of(result);
        ReportData { result, summary: summary.to_string(), series: gather(result, dir, &palette) }
    }
}

/// Rates over time from samples that each count the bytes since the one before: samples are
/// grouped in fixed time bins, and a bin's rate is its bytes over the time from the previous
/// bin's last sample to its own last (so a bin that happens to hold one sample more than the
/// next does not look faster). One point (Mbit/s) per bin, at the middle of that span.
pub(crate) struct RateBins {
    /// What one counted unit per µs is worth in the output: 8 (bytes per µs in, Mbit/s out), or
    /// 10⁶ (events per µs in, events per second out).
    pub(crate) per_unit: f64,
    pub(crate) bin_us: u64,
    pub(crate) bin: Option<u64>,
    pub(crate) from_us: u64,
    pub(crate) last_us: u64,
    pub(crate) bytes: u64,
    pub(crate) out: Decimated,
}

impl RateBins {
    pub(crate) fn new(bin_us: u64, cap: usize) -> Self {
        RateBins { per_unit: 8.0, bin_us: bin_us.max(1), bin: None, from_us: 0, last_us: 0, bytes: 0, out: Decimated::with_cap(cap) }
    }

    /// Events (not bytes) per second.
    pub(crate) fn counting(bin_us: u64, cap: usize) -> Self {
        RateBins { per_unit: 1e6, ..RateBins::new(bin_us, cap) }
    }

    /// A sample at `t_rel_us` counting `bytes` since the previous one.
    pub(crate) fn add(&mut self, t_rel_us: u64, bytes: u64) {
        let bin = t_rel_us / self.bin_us;
        match self.bin {
            // The first sample starts the first span (what it counts came before it).
            None => {
                self.bin = Some(bin);
                (self.from_us, self.last_us) = (t_rel_us, t_rel_us);
                return;
            }
            Some(cur) if bin > cur => {
                self.flush();
                self.bin = Some(bin);
            }
            Some(_) => {}
        }
        self.last_us = self.last_us.max(t_rel_us);
        self.bytes += bytes;
    }

    pub(crate) fn flush(&mut self) {
        if self.last_us > self.from_us {
            let span = (self.last_us - self.from_us) as f64;
            self.out.push(((self.from_us + self.last_us) as f64 / 2e6, self.bytes as f64 * self.per_unit / span));
        }
        self.from_us = self.last_us;
        self.bytes = 0;
    }

    pub(crate) fn finish(mut self) -> Vec<(f64, f64)> {
        self.flush();
        self.out.into_points()
    }
}

/// Index of a `bbr_mode` name, with its ProbeBW `bbr_phase` if any, in [`BBR_STATES`]; `None`
/// for UNKNOWN or none.
pub(crate) fn bbr_state(mode: Option<&str>, phase: Option<&str>) -> Option<usize> {
    let mode = mode?;
    match phase.filter(|p| !p.is_empty() && mode == "PROBE_BW") {
        Some(p) => BBR_STATES.iter().position(|(name, _)| name.strip_prefix("PROBE_BW ") == Some(p)),
        None => BBR_STATES.iter().position(|(name, _)| *name == mode),
    }
}

/// Reads every completed run's series files, one row at a time.
pub(crate) fn gather<'a>(result: &'a ExperimentResult, dir: &Path, palette: &Palette) -> Gathered<'a> {
    let mix = result.params.workload.is_mix();
    let direction = result.params.workload.data_direction();
    let saturating = matches!(&result.params.workload, ccbench_model::workloads::WorkloadSpec::Bulk(b) if b.knobs.saturating());
    let medians: Vec<u32> = result.params.ccs.iter().filter_map(|cc| representative(result, cc)).map(|r| r.index).collect();
    // Bins of a round width, about RATE_BINS of them over the longest run, no finer than the
    // samples and no coarser than a second.
    let longest = result.runs.iter().filter(|r| r.status == Status::Complete).filter_map(duration_s).fold(0.0, f64::max);
    let sample_s = result.params.workload.sample_interval_us().max(1) as f64 / 1e6;
    let bin_us = (nice_floor(longest / RATE_BINS).clamp(sample_s, 1.0) * 1e6).round() as u64;
    let mut g = Gathered { runs: Vec::new(), bin_us, rtt: Pooled::default(), queue: Pooled::default(), errors: Vec::new() };
    for r in result.runs.iter().filter(|r| r.status == Status::Complete && r.series.is_some()) {
        let median = medians.contains(&r.index);
        let mut view = RunView {
            run: r,
            median,
            rtt: Vec::new(),
            cwnd: Vec::new(),
            bbr_bw: Vec::new(),
            goodput: Vec::new(),
            queue: None,
            ce: None,
            bbr: Vec::new(),
            flow_rtt: Vec::new(),
            strip: Vec::new(),
        };
        if let Err(e) = read_tcp(dir, &mut view, mix, saturating, &mut g.rtt) {
            g.errors.push(e);
        }
        if let Err(e) = read_link(dir, &mut view, direction, &mut g.queue, bin_us) {
            g.errors.push(e);
        }
        if let Err(e) = read_goodput(dir, &mut view, mix, bin_us) {
            g.errors.push(e);
        }
        g.runs.push(view);
    }
    g.rtt.0.sort_by_key(|(k, _)| palette.index(k));
    g.queue.0.sort_by_key(|(k, _)| palette.index(k));
    g
}

/// How long the run's data flowed.
pub(crate) fn duration_s(r: &RunRecord) -> Option<f64> {
    r.workload.as_ref()?.measured_s()
}

pub(crate) fn cap(median: bool) -> usize {
    if median {
        crate::svg::MAX_POINTS
    } else {
        FAINT_POINTS
    }
}

/// What is plotted of one sending socket while reading.
pub(crate) struct SocketLines {
    pub(crate) socket: String,
    pub(crate) key: String,
    pub(crate) label: String,
    pub(crate) rtt: Decimated,
    pub(crate) cwnd: Decimated,
    pub(crate) bbr_bw: Decimated,
}

/// `saturating`: the sending application always had data (see `Account::saturating`).
pub(crate) fn read_tcp(dir: &Path, view: &mut RunView, mix: bool, saturating: bool, pooled: &mut Pooled) -> Result<(), String> {
    let r = view.run;
    let Some(files) = &r.series else { return Ok(()) };
    let t0 = run_start(r);
    let b = bulk(r);
    let multi = b.is_some_and(|b| b.flows.len() > 1);
    // A bulk flow's id, algorithm, and when it began to send.
    let flow_of = |socket: &str| -> Option<(u32, String, u64)> {
        let id: u32 = socket.strip_prefix("flow-")?.parse().ok()?;
        let b = b?;
        let f = b.flows.iter().find(|f| f.id == id)?;
        Some((id, f.sending.cc_requested.to_string(), b.start_us + (f.start_s * 1e6) as u64))
    };
    let n = cap(view.median);
    let median = view.median;
    let mut lines: Vec<SocketLines> = Vec::new();
    let mut flow_rtt: Vec<(u32, String, ExactCounts)> = Vec::new();
    let mut bbr: Vec<BbrTimeline> = Vec::new();
    // The strip over time (median runs): each socket's previous row, and per algorithm the
    // time per cause in each bin, split between rows as the limited-by accounting does.
    let strip_bin_us = (duration_s(r).unwrap_or(0.0) * 1e6 / STRIP_BINS as f64).max(1.0);
    let mut prev_rows: Vec<TcpRow> = Vec::new();
    let mut strip: Vec<Strip> = Vec::new();
    let read = ccbench_model::series::for_each_row(&dir.join(&files.tcp), |row: TcpRow| {
        let flow = flow_of(&row.socket);
        let key = match (&flow, mix) {
            (Some((_, cc, _)), true) => cc.clone(),
            _ => r.cc.to_string(),
        };
        // The distributions count samples from when the socket's data began to flow (a flow
        // of a mix that starts later sits at its handshake's RTT until then).
        let sending = row.t_us >= flow.as_ref().map_or(t0, |f| f.2);
        if row.rtt_us > 0 && sending {
            let v = round_sig3(f64::from(row.rtt_us));
            pooled.record(&key, v);
            if let Some((id, cc, _)) = &flow {
                match flow_rtt.iter().position(|(i, _, _)| i == id) {
                    Some(i) => flow_rtt[i].2.record(v),
                    None if flow_rtt.len() < MAX_SOCKETS => {
                        let mut c = ExactCounts::default();
                        c.record(v);
                        flow_rtt.push((*id, cc.clone(), c));
                    }
                    None => {}
                }
            }
        }
        if median {
            match prev_rows.iter().position(|p| p.socket == row.socket) {
                Some(i) => {
                    let prev = std::mem::replace(&mut prev_rows[i], row.clone());
                    let start = flow.as_ref().map_or(t0, |f| f.2);
                    if let Some(parts) = ccbench_model::series::interval_split(&prev, &row, saturating).filter(|_| prev.t_us >= start) {
                        let bin = ((row.t_us.saturating_sub(t0)) as f64 / strip_bin_us) as usize;
                        let j = match strip.iter().position(|s| s.key == key) {
                            Some(j) => j,
                            None => {
                                strip.push(Strip { key: key.clone(), bin_s: strip_bin_us / 1e6, bins: vec![[0.0; 7]; STRIP_BINS] });
                                strip.len() - 1
                            }
                        };
                        if let Some(b) = strip[j].bins.get_mut(bin) {
                            for (k, (_, us)) in parts.iter().enumerate() {
                                b[k] += us.max(0.0);
                            }
                        }
                    }
                }
                None if prev_rows.len() < MAX_SOCKETS => prev_rows.push(row.clone()),
                None => {}
            }
        }
        if row.t_us < t0 {
            return;
        }
        let t_rel = row.t_us - t0;
        let t = t_rel as f64 / 1e6;
        if median {
            let has_state = row.bbr_mode.as_deref().is_some_and(|m| !m.is_empty());
            if has_state && bbr.len() < MAX_BBR_ROWS && !bbr.iter().any(|b| b.key == key) {
                let what = format!("{key} {}", row.socket.replace('-', " "));
                bbr.push(BbrTimeline { socket: row.socket.clone(), key: key.clone(), what, states: Timeline::default() });
            }
            if let Some(b) = bbr.iter_mut().find(|b| b.socket == row.socket) {
                b.states.push(t_rel, bbr_state(row.bbr_mode.as_deref(), row.bbr_phase.as_deref()));
            }
        }
        let i = match lines.iter().position(|l| l.socket == row.socket) {
            Some(i) => i,
            None if (b.is_some() && lines.len() < MAX_SOCKETS) || lines.is_empty() => {
                let what = match (&flow, multi || mix) {
                    (Some((id, cc, _)), true) => format!("{cc} flow {id}"),
                    (Some(_), false) => r.cc.to_string(),
                    (None, _) => format!("{} {}", r.cc, row.socket.replace('-', " ")),
                };
                lines.push(SocketLines {
                    socket: row.socket.clone(),
                    key: key.clone(),
                    label: format!("run {} · {what}", r.index + 1),
                    rtt: Decimated::with_cap(n),
                    cwnd: Decimated::with_cap(n),
                    bbr_bw: Decimated::with_cap(n),
                });
                lines.len() - 1
            }
            None => return,
        };
        let l = &mut lines[i];
        if row.rtt_us > 0 {
            l.rtt.push((t, f64::from(row.rtt_us) / 1000.0));
        }
        l.cwnd.push((t, f64::from(row.cwnd)));
        if let Some(bw) = row.bbr_bw_bps.filter(|_| median) {
            l.bbr_bw.push((t, bw as f64 / 1e6));
        }
    });
    for l in lines {
        let line = |points: Decimated| Line { key: l.key.clone(), label: l.label.clone(), median, points: points.into_points() };
        view.rtt.push(line(l.rtt));
        view.cwnd.push(line(l.cwnd));
        if !l.bbr_bw.points().is_empty() {
            view.bbr_bw.push(line(l.bbr_bw));
        }
    }
    view.flow_rtt = flow_rtt;
    view.bbr = bbr;
    view.strip = strip;
    read.map_err(|e| e.to_string())
}

pub(crate) fn read_link(dir: &Path, view: &mut RunView, direction: Direction, pooled: &mut Pooled, bin_us: u64) -> Result<(), String> {
    let r = view.run;
    let Some(files) = &r.series else { return Ok(()) };
    // A run over a real path has no emulator, so no link file.
    let file = match direction {
        Direction::Download => &files.link_down,
        Direction::Upload => &files.link_up,
    };
    let Some(file) = file else { return Ok(()) };
    let t0 = run_start(r);
    let mut queue = Decimated::with_cap(cap(view.median));
    // Without a goodput file (objects, pages), what the bottleneck delivered stands in for it.
    let mut delivered = bulk(r).is_none().then(|| RateBins::new(bin_us, cap(view.median)));
    let mut ce = RateBins::counting(bin_us, cap(view.median));
    let mut marked = false;
    let read = ccbench_model::series::for_each_row(&dir.join(file), |p: LinkSample| {
        if p.t_us < t0 {
            return;
        }
        let t_rel = p.t_us - t0;
        queue.push((t_rel as f64 / 1e6, p.queue_delay_max_us / 1000.0));
        if p.delivered_bytes > 0 {
            pooled.record(&r.cc, round_sig3(p.queue_delay_max_us));
        }
        if let Some(d) = delivered.as_mut() {
            d.add(t_rel, p.delivered_bytes);
        }
        ce.add(t_rel, p.ce_marks);
        marked |= p.ce_marks > 0;
    });
    let label = format!("run {} · {}", r.index + 1, r.cc);
    view.queue = Some(Line { key: r.cc.to_string(), label: label.clone(), median: view.median, points: queue.into_points() });
    view.ce = marked.then(|| Line { key: r.cc.to_string(), label: label.clone(), median: view.median, points: ce.finish() });
    if let Some(d) = delivered {
        view.goodput.push(Line { key: r.cc.to_string(), label, median: view.median, points: d.finish() });
    }
    read.map_err(|e| e.to_string())
}

/// Goodput at the receiver per 100 ms: per flow in a mix, summed over flows otherwise.
pub(crate) fn read_goodput(dir: &Path, view: &mut RunView, mix: bool, bin_us: u64) -> Result<(), String> {
    let r = view.run;
    let (Some(b), Some(files)) = (bulk(r), &r.series) else { return Ok(()) };
    let n = cap(view.median);
    let per_flow = mix;
    let mut last: Vec<u64> = vec![0; b.flows.len()];
    let mut bins: Vec<RateBins> = (0..if per_flow { b.flows.len() } else { 1 }).map(|_| RateBins::new(bin_us, n)).collect();
    let read = ccbench_model::series::for_each_row(&dir.join(&files.goodput), |p: GoodputRow| {
        let Some(i) = b.flows.iter().position(|f| f.id == p.flow) else { return };
        let delta = p.bytes.saturating_sub(last[i]);
        last[i] = last[i].max(p.bytes);
        if p.t_us >= b.start_us {
            bins[if per_flow { i } else { 0 }].add(p.t_us - b.start_us, delta);
        }
    });
    for (i, rb) in bins.into_iter().enumerate() {
        let (key, what) = if per_flow {
            (b.flows[i].sending.cc_requested.to_string(), format!("{} flow {}", b.flows[i].sending.cc_requested, b.flows[i].id))
        } else {
            (r.cc.to_string(), r.cc.to_string())
        };
        view.goodput.push(Line { key, label: format!("run {} · {what}", r.index + 1), median: view.median, points: rb.finish() });
    }
    read.map_err(|e| e.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rate_bins_turn_bytes_into_mbit_per_s_over_the_time_they_span() {
        let mut b = RateBins::new(100_000, 100);
        // 12 500 bytes every 10 ms = 10 Mbit/s for 190 ms, then nothing.
        for i in 0..20u64 {
            b.add(i * 10_000, 12_500);
        }
        b.add(300_000, 0);
        b.add(400_000, 0);
        let pts = b.finish();
        assert_eq!(pts.len(), 4, "{pts:?}");
        // The first bin spans 0–90 ms (the first sample only starts it), the second 90–190 ms.
        assert!((pts[0].0 - 0.045).abs() < 1e-9 && (pts[0].1 - 10.0).abs() < 1e-9, "{pts:?}");
        assert!((pts[1].0 - 0.14).abs() < 1e-9 && (pts[1].1 - 10.0).abs() < 1e-9, "{pts:?}");
        assert!(pts[2].1 == 0.0 && pts[3].1 == 0.0, "{pts:?}");
        // Bins holding 4 and 6 samples of a steady rate show the same rate.
        let mut uneven = RateBins::new(50_000, 100);
        for t in [0u64, 12_000, 24_000, 36_000, 48_000, 60_000, 72_000, 84_000, 96_000, 108_000] {
            uneven.add(t, 15_000);
        }
        assert!(uneven.finish().iter().all(|p| (p.1 - 10.0).abs() < 1e-9));
        // Counting events: 3 marks every 10 ms are 300 a second.
        let mut marks = RateBins::counting(100_000, 100);
        for i in 0..21u64 {
            marks.add(i * 10_000, 3);
        }
        assert!(marks.finish().iter().all(|p| (p.1 - 300.0).abs() < 1e-6));
    }

    #[test]
    fn bbr_modes_map_to_states() {
        assert_eq!(bbr_state(Some("STARTUP"), None), Some(0));
        assert_eq!(bbr_state(Some("PROBE_RTT"), Some("")), Some(7));
        assert_eq!(bbr_state(Some("UNKNOWN"), None), None);
        assert_eq!(bbr_state(None, Some("UP")), None);
        // Kernel BBRv1 has no phase; QUIC's BBR reports one inside PROBE_BW only.
        assert_eq!(BBR_STATES[bbr_state(Some("PROBE_BW"), None).unwrap()].0, "PROBE_BW");
        assert_eq!(BBR_STATES[bbr_state(Some("PROBE_BW"), Some("UP")).unwrap()].0, "PROBE_BW UP");
        assert_eq!(BBR_STATES[bbr_state(Some("PROBE_BW"), Some("CRUISE")).unwrap()].0, "PROBE_BW CRUISE");
        assert_eq!(bbr_state(Some("PROBE_BW"), Some("SIDEWAYS")), None);
    }
}
