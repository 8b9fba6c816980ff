//! Analysis: from one run's raw data to its headline figures ([`RunMetrics`]), and from the
//! runs of an experiment to per-algorithm summaries and verdicts.

use ccbench_emu::PathReport;
use ccbench_model::workload::Cc;
use ccbench_stats::{BetterIs, Criteria, Summary};
use ccbench_workload::{BulkResult, Direction};

use crate::results::{CcShare, CcSummary, RunMetrics, RunRecord, ShareSummary, Status};
use crate::run_workload::WorkloadResult;
use crate::series::{ExactCounts, SeriesSummary};

/// Per-algorithm summaries over completed runs, and the best algorithm against each other one
/// judged by `criteria`, Holm-corrected over every pair. Unfinished runs count (as censored
/// scores that rank worst); only runs cut short by Ctrl-C or a failure are left out. A completed
/// run without a usable score is counted and named (`runs_without_score`), never dropped
/// silently.
pub fn analyse(ccs: &[Cc], records: &[RunRecord], criteria: Criteria) -> (Vec<CcSummary>, Vec<ccbench_stats::Comparison>) {
    let summary: Vec<CcSummary> = ccs
        .iter()
        .map(|cc| {
            let mut s = cc_summary(cc, &completed_metrics(records, cc));
            s.runs_without_score = completed(records, cc).filter(|r| usable_score(r).is_none()).map(|r| r.index + 1).collect();
            s
        })
        .collect();
    // A run without a usable score enters as NaN: the statistics count it as missing.
    let scores: Vec<Vec<f64>> = ccs.iter().map(|cc| completed(records, cc).map(|r| usable_score(r).unwrap_or(f64::NAN)).collect()).collect();
    let comparisons = compare_arms(ccs, &scores, BetterIs::Higher, criteria);
    (summary, comparisons)
}

/// The algorithm with the lowest median sender RTT against each other one (each run's RTT
/// p50): scenario 5's question, "does it keep the queue short?", with the same statistics.
/// Its own family for Holm's correction: a second question, not more pairs of the first.
pub fn compare_rtt(ccs: &[Cc], records: &[RunRecord], criteria: Criteria) -> Vec<ccbench_stats::Comparison> {
    let rtts: Vec<Vec<f64>> = ccs.iter().map(|cc| completed_metrics(records, cc).iter().filter_map(|m| m.sender_rtt_p50_ms).collect()).collect();
    compare_arms(ccs, &rtts, BetterIs::Lower, criteria)
}

fn completed<'a>(records: &'a [RunRecord], cc: &'a Cc) -> impl Iterator<Item = &'a RunRecord> + 'a {
    records.iter().filter(move |r| &r.cc == cc && r.status == Status::Complete)
}

fn usable_score(r: &RunRecord) -> Option<f64> {
    r.metrics.as_ref().and_then(|m| m.score).filter(|s| s.is_finite())
}

fn completed_metrics<'a>(records: &'a [RunRecord], cc: &'a Cc) -> Vec<&'a RunMetrics> {
    completed(records, cc).filter_map(|r| r.metrics.as_ref()).collect()
}

fn compare_arms(ccs: &[Cc], values: &[Vec<f64>], better_is: BetterIs, criteria: Criteria) -> Vec<ccbench_stats::Comparison> {
    let arms: Vec<(&str, &[f64])> = ccs.iter().zip(values).map(|(cc, xs)| (cc.as_str(), xs.as_slice())).collect();
    ccbench_stats::best_against_rest(&arms, better_is, criteria, 2)
}

/// The path's figures over the one span the run's metrics use.
struct PathSpan<'a> {
    drops_loss: u64,
    drops_buffer: u64,
    drops_aqm: u64,
    ce_marks: u64,
    queue_delay: &'a ccbench_emu::DelaySummary,
    lateness: &'a ccbench_emu::DelaySummary,
    utilization: f64,
    entry: &'a ccbench_link::EntryStats,
    whole_life: bool,
}

/// Seconds after the last flow joins that are left out of the per-second fairness figures.
const CONVERGENCE_S: f64 = 2.0;

/// The Jain index a second must reach for the flows to count as converged (`convergence_s`).
pub(crate) const CONVERGED_JAIN: f64 = 0.9;

/// What [`sharing`] finds: per-algorithm shares, Jain's index over the shared window, Jain's
/// index per second after convergence, and when the flows first converged.
type Sharing = (Vec<CcShare>, Option<f64>, Vec<f64>, Option<f64>);

/// How flows shared the bottleneck: per-algorithm shares and Jain's index over the window in
/// which every flow was active, and Jain's index per second after convergence.
/// `received_at(instants)` gives, per flow id, the bytes received by each instant (ascending):
/// [`crate::series::received_at`] over the run's goodput file.
fn sharing(bulk: &BulkResult, received_at: impl FnOnce(&[u64]) -> Option<Vec<Vec<u64>>>) -> Sharing {
    if bulk.flows.len() < 2 {
        return (Vec::new(), None, Vec::new(), None);
    }
    let last_start = bulk.flows.iter().map(|f| f.start_s).fold(0.0, f64::max);
    let from = bulk.start_us + (last_start * 1e6) as u64;
    let to = bulk.start_us + (bulk.elapsed_s * 1e6) as u64;
    if to <= from {
        return (Vec::new(), None, Vec::new(), None);
    }
    let mut seconds = Vec::new();
    let mut t = from + (CONVERGENCE_S * 1e6) as u64;
    while t + 1_000_000 <= to {
        seconds.push(t);
        t += 1_000_000;
    }
    // Every whole second from the last join, for the first fair one.
    let all_seconds: Vec<u64> = (0..).map(|i| from + i * 1_000_000).take_while(|t| t + 1_000_000 <= to).collect();
    let mut instants: Vec<u64> = [from, to]
        .into_iter()
        .chain(seconds.iter().copied())
        .chain(seconds.iter().map(|t| t + 1_000_000))
        .chain(all_seconds.iter().copied())
        .chain(all_seconds.iter().map(|t| t + 1_000_000))
        .collect();
    instants.sort_unstable();
    instants.dedup();
    let Some(received) = received_at(&instants) else { return (Vec::new(), None, Vec::new(), None) };
    let by = |flow: u32, t: u64| -> u64 {
        let i = instants.binary_search(&t).expect("asked for this instant");
        received.get(flow as usize).map_or(0, |r| r[i])
    };
    let window_s = (to - from) as f64 / 1e6;
    let rates: Vec<f64> = bulk.flows.iter().map(|f| by(f.id, to).saturating_sub(by(f.id, from)) as f64 * 8.0 / window_s).collect();
    let total: f64 = rates.iter().sum();
    let mut shares: Vec<CcShare> = Vec::new();
    for (flow, rate) in bulk.flows.iter().zip(&rates) {
        let cc = flow.sending.cc_requested.clone();
        match shares.iter_mut().find(|s| s.cc == cc) {
            Some(s) => {
                s.flows += 1;
                s.goodput_bps += rate;
            }
            None => shares.push(CcShare { cc, flows: 1, goodput_bps: *rate, share: 0.0, sender_rtt_p50_ms: None, sender_rtt_p95_ms: None }),
        }
    }
    for s in &mut shares {
        s.share = if total > 0.0 { s.goodput_bps / total } else { 0.0 };
    }
    let per_second = seconds
        .iter()
        .filter_map(|&t| {
            let second: Vec<f64> = bulk.flows.iter().map(|f| by(f.id, t + 1_000_000).saturating_sub(by(f.id, t)) as f64).collect();
            ccbench_stats::jain_fairness(&second)
        })
        .collect();
    let jain_of = |t: u64| {
        let second: Vec<f64> = bulk.flows.iter().map(|f| by(f.id, t + 1_000_000).saturating_sub(by(f.id, t)) as f64).collect();
        ccbench_stats::jain_fairness(&second)
    };
    let converged = all_seconds.iter().find(|&&t| jain_of(t).is_some_and(|j| j >= CONVERGED_JAIN)).map(|&t| (t - from) as f64 / 1e6);
    (shares, ccbench_stats::jain_fairness(&rates), per_second, converged)
}

/// Each algorithm's own sender RTT in a mix: the percentiles of its flows' samples pooled.
fn group_rtts(shares: &mut [CcShare], bulk: &BulkResult, series: &SeriesSummary) {
    for share in shares {
        let mut rtts = ExactCounts::default();
        for flow in bulk.flows.iter().filter(|f| f.sending.cc_requested == share.cc) {
            if let Some(counts) = series.rtt_us_by_flow.get(&flow.id) {
                rtts.merge(counts);
            }
        }
        share.sender_rtt_p50_ms = rtts.quantile(0.5, 1000.0);
        share.sender_rtt_p95_ms = rtts.quantile(0.95, 1000.0);
    }
}

/// A run's metrics (result.json's `metrics`) from its workload's result and the path's report.
/// `series`: what the run's time series left in memory (exact RTT counts) and on disk
/// (the goodput file, read once more for the sharing figures).
pub fn run_metrics(result: &WorkloadResult, path: Option<&PathReport>, series: &SeriesSummary, direction: Direction, timeout_s: f64) -> RunMetrics {
    // A real path (`--remote`) has no emulator to see its queue and drops: those are absent.
    let data_dir = path.map(|path| match direction {
        Direction::Download => &path.down,
        Direction::Upload => &path.up,
    });
    let q = |p: f64| series.rtt_us.quantile(p, 1000.0);
    let (retrans, segs) =
        result.final_infos().iter().fold((0u64, 0u64), |(r, s), ti| (r + u64::from(ti.total_retrans), s + u64::from(ti.segs_out.unwrap_or(0))));
    // QUIC resends the data of each packet declared lost: its lost packets are its retransmissions.
    let (retrans, segs) = result.final_quic().iter().fold((retrans, segs), |(r, s), q| (r + q.packets_lost, s + q.packets_sent));
    let (shares, jain_index, jain_per_second, convergence_s) = match result {
        WorkloadResult::Bulk(b) => {
            let (mut shares, jain, per_second, converged) = sharing(b, |instants| {
                let flows = b.flows.iter().map(|f| f.id as usize + 1).max().unwrap_or(0);
                series.goodput_path.as_deref().and_then(|p| crate::series::received_at(p, flows, instants).ok())
            });
            group_rtts(&mut shares, b, series);
            (shares, jain, per_second, converged)
        }
        _ => (Vec::new(), None, Vec::new(), None),
    };
    let ccbench_workload::RunFigures { goodput_bps, completion_time_s, all_completed, latency_p50_s, latency_p99_s, html_ttfb_s } = result.figures();
    let (score, unfinished) = result.score(timeout_s);
    // Every path figure over one span: the emulator's window, which the workload opened and
    // closed at the instants its own goodput is measured over. Without one (a run cut
    // short before its span began), the path's whole life, for every figure alike.
    let span = data_dir.map(|data_dir| match &data_dir.window {
        Some(w) => PathSpan {
            drops_loss: w.stats.drops_loss,
            drops_buffer: w.stats.drops_buffer,
            drops_aqm: w.stats.drops_aqm,
            ce_marks: w.stats.ce_marks,
            queue_delay: &w.queue_delay,
            lateness: &w.lateness,
            utilization: w.utilization,
            entry: &w.stats.entry,
            whole_life: false,
        },
        None => PathSpan {
            drops_loss: data_dir.stats.drops_loss,
            drops_buffer: data_dir.stats.drops_buffer,
            drops_aqm: data_dir.stats.drops_aqm,
            ce_marks: data_dir.stats.ce_marks,
            queue_delay: &data_dir.queue_delay,
            lateness: &data_dir.lateness,
            utilization: data_dir.utilization,
            entry: &data_dir.stats.entry,
            whole_life: true,
        },
    });
    RunMetrics {
        score: Some(score),
        unfinished,
        goodput_bps,
        completion_time_s,
        latency_p50_s,
        latency_p99_s,
        html_ttfb_s,
        all_completed,
        sender_rtt_p50_ms: q(0.5),
        sender_rtt_p95_ms: q(0.95),
        retrans_rate: if segs > 0 { retrans as f64 / segs as f64 } else { 0.0 },
        retrans_segments: retrans,
        drops_loss: span.as_ref().map(|s| s.drops_loss),
        drops_buffer: span.as_ref().map(|s| s.drops_buffer),
        drops_aqm: span.as_ref().map(|s| s.drops_aqm),
        ce_marks: span.as_ref().map(|s| s.ce_marks),
        queue_delay_p50_ms: span.as_ref().map(|s| s.queue_delay.p50_us / 1000.0),
        queue_delay_p95_ms: span.as_ref().map(|s| s.queue_delay.p95_us / 1000.0),
        utilization: span.as_ref().map(|s| s.utilization),
        emulator_lateness_p99_us: span.as_ref().map(|s| s.lateness.p99_us),
        entry: crate::results::EntryFigures::of(span.as_ref().map(|s| s.entry)),
        path_figures_over_whole_life: span.as_ref().is_some_and(|s| s.whole_life),
        shares,
        jain_index,
        jain_per_second,
        convergence_s,
        lock_on_bw_bps: series.lock_on_bps.map(|b| b as f64),
        limited_by: run_limited_by(result),
        mechanism: mechanism_figures(result, series, direction, q(0.5)),
        trace: Vec::new(),
    }
}

/// The run's limited-by fractions: each sender's, weighted by its active time.
fn run_limited_by(result: &WorkloadResult) -> Option<ccbench_workload::LimitedBy> {
    let parts: Vec<_> = result.senders().iter().filter_map(|s| Some((*s.limited_by?, s.mechanism.map_or(0.0, |m| m.active_s)))).collect();
    ccbench_workload::LimitedBy::weighted(&parts)
}

/// How the run's senders lost (from their accounting) and what the bottleneck's queue did
/// (from the emulator's series on the data's direction; `srtt_ms` sets the window of the
/// standing queue).
fn mechanism_figures(result: &WorkloadResult, series: &SeriesSummary, direction: Direction, srtt_ms: Option<f64>) -> crate::results::MechanismFigures {
    let senders = result.senders();
    let ms: Vec<&ccbench_workload::Mechanism> = senders.iter().filter_map(|s| s.mechanism).collect();
    let per_s = |n: &dyn Fn(&ccbench_workload::Mechanism) -> f64| -> Option<f64> {
        (!ms.is_empty()).then(|| ms.iter().map(|m| if m.active_s > 0.0 { n(m) / m.active_s } else { 0.0 }).sum())
    };
    let reductions: Vec<f64> = ms.iter().filter_map(|m| m.cwnd_after_reduction).collect();
    let link = match direction {
        Direction::Download => series.link_down_path.as_deref(),
        Direction::Upload => series.link_up_path.as_deref(),
    };
    let (buffer_full_share, standing_queue_ms) = link.and_then(|p| queue_figures(p, srtt_ms?).ok()).unwrap_or((None, None));
    crate::results::MechanismFigures {
        recoveries_per_s: per_s(&|m| f64::from(m.recoveries)),
        rtos_per_s: per_s(&|m| f64::from(m.rtos.unwrap_or(m.loss_states))),
        spurious_retrans: ms.iter().map(|m| m.dsack_dups.map(u64::from)).sum(),
        cwnd_after_reduction: (!reductions.is_empty()).then(|| reductions.iter().sum::<f64>() / reductions.len() as f64),
        buffer_full_share,
        standing_queue_ms,
    }
}

/// From one direction's emulator series: the share of intervals with a drop for want of room,
/// and the median over `srtt_ms`-long windows of each window's smallest mean queueing delay.
/// One streaming pass; memory: one figure per window.
fn queue_figures(path: &std::path::Path, srtt_ms: f64) -> std::io::Result<(Option<f64>, Option<f64>)> {
    let window_us = (srtt_ms * 1000.0).max(1000.0) as u64;
    let (mut intervals, mut full) = (0u64, 0u64);
    let mut mins: Vec<f64> = Vec::new();
    let mut current: Option<(u64, f64)> = None;
    crate::series::for_each_row(path, |r: ccbench_emu::LinkSample| {
        intervals += 1;
        full += u64::from(r.drops_buffer > 0);
        let w = r.t_us / window_us;
        match current.as_mut() {
            Some((cw, m)) if *cw == w => *m = m.min(r.queue_delay_mean_us),
            _ => {
                if let Some((_, m)) = current.take() {
                    mins.push(m);
                }
                current = Some((w, r.queue_delay_mean_us));
            }
        }
    })?;
    mins.extend(current.map(|c| c.1));
    if intervals == 0 {
        return Ok((None, None));
    }
    mins.sort_by(f64::total_cmp);
    let standing = (!mins.is_empty()).then(|| ccbench_stats::quantile(&mins, 0.5) / 1000.0);
    Ok((Some(full as f64 / intervals as f64), standing))
}

/// One algorithm's summary over its completed runs' metrics.
pub(crate) fn cc_summary(cc: &Cc, runs: &[&RunMetrics]) -> CcSummary {
    let s = |f: &dyn Fn(&RunMetrics) -> Option<f64>| -> Option<Summary> {
        let xs: Vec<f64> = runs.iter().filter_map(|m| f(m)).collect();
        Summary::of(&xs)
    };
    CcSummary {
        cc: cc.clone(),
        runs: runs.len(),
        unfinished: runs.iter().filter(|m| m.unfinished).count(),
        score: s(&|m| m.score),
        goodput_bps: s(&|m| Some(m.goodput_bps)),
        latency_p99_s: s(&|m| m.latency_p99_s),
        html_ttfb_s: s(&|m| m.html_ttfb_s),
        completion_time_s: s(&|m| m.completion_time_s),
        completion_time_median_s: censored_median(runs.iter().map(|m| {
            if m.unfinished {
                m.completion_time_s.or(Some(f64::INFINITY))
            } else {
                m.completion_time_s
            }
        })),
        sender_rtt_p50_ms: s(&|m| m.sender_rtt_p50_ms),
        sender_rtt_p95_ms: s(&|m| m.sender_rtt_p95_ms),
        retrans_rate: s(&|m| Some(m.retrans_rate)),
        drops_loss: s(&|m| m.drops_loss.map(|d| d as f64)),
        drops_buffer: s(&|m| m.drops_buffer.map(|d| d as f64)),
        drops_aqm: s(&|m| m.drops_aqm.map(|d| d as f64)),
        ce_marks: s(&|m| m.ce_marks.map(|d| d as f64)),
        queue_delay_p95_ms: s(&|m| m.queue_delay_p95_ms),
        jain_index: s(&|m| m.jain_index),
        shares: share_summaries(runs),
        runs_without_score: Vec::new(),
    }
}

/// The median of values where an unfinished run is `+∞` (longer than any finished one): the
/// exact median whenever it falls on a finished run, `None` when it does not (or there are no
/// values at all).
fn censored_median(values: impl Iterator<Item = Option<f64>>) -> Option<f64> {
    let mut xs: Vec<f64> = values.flatten().collect();
    if xs.is_empty() {
        return None;
    }
    xs.sort_by(f64::total_cmp);
    Some(ccbench_stats::quantile(&xs, 0.5)).filter(|m| m.is_finite())
}

fn share_summaries(runs: &[&RunMetrics]) -> Vec<ShareSummary> {
    let mut names: Vec<(Cc, usize)> = Vec::new();
    for m in runs {
        for sh in &m.shares {
            if !names.iter().any(|(n, _)| *n == sh.cc) {
                names.push((sh.cc.clone(), sh.flows));
            }
        }
    }
    names
        .into_iter()
        .filter_map(|(cc, flows)| {
            let xs: Vec<f64> = runs.iter().filter_map(|m| m.shares.iter().find(|s| s.cc == cc).map(|s| s.share)).collect();
            let share = Summary::of(&xs)?;
            let share_ci = ccbench_stats::median_order_ci(&xs, 0.95);
            let rtts: Vec<f64> = runs.iter().filter_map(|m| m.shares.iter().find(|s| s.cc == cc).and_then(|s| s.sender_rtt_p95_ms)).collect();
            Some(ShareSummary { cc, flows, share, share_ci, sender_rtt_p95_ms: Summary::of(&rtts) })
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use ccbench_workload::{FlowResult, GoodputPoint, SeriesSink, Side};

    /// The entry figures in result.json: medians and packet-weighted burst lengths of what the
    /// emulator measured, and every figure null without an emulator.
    #[test]
    fn entry_figures_summarise_the_emulators_entry_histograms() {
        use ccbench_link::time::{Duration, Instant};
        let mut meter = ccbench_link::EntryMeter::default();
        let mut stats = ccbench_link::EntryStats::default();
        let us = Duration::from_micros(1);
        // 90 packets alone 200 µs apart, then one burst of 10 at 1 µs.
        let mut t = Instant::EPOCH;
        for i in 0..100u64 {
            t += if i < 91 { 200 * us } else { us };
            meter.arrival(t, Some(50 * us), &mut stats);
        }
        meter.flush(&mut stats);
        let e = crate::results::EntryFigures::of(Some(&stats));
        assert!((e.gap_p50_us.unwrap() - 200.0).abs() < 200.0 * 0.016, "{e:?}");
        assert_eq!((e.burst_p50_packets, e.burst_p99_packets, e.burst_max_packets), (Some(1), Some(10), Some(10)));
        assert!((e.bursty_share.unwrap() - 0.10).abs() < 1e-12);
        let none = crate::results::EntryFigures::of(None);
        assert_eq!(
            serde_json::to_string(&none).unwrap(),
            r#"{"gap_p50_us":null,"burst_p50_packets":null,"burst_p99_packets":null,"burst_max_packets":null,"bursty_share":null}"#
        );
    }

    /// Flows `(cc, start_s, rate_bytes_per_s)` that each receive steadily from their start,
    /// with goodput points every 100 ms for 10 s written to a real goodput file, as a run
    /// writes them; then the sharing figures computed from that file.
    fn sharing_of(flows: &[(&str, f64, f64)]) -> (Vec<CcShare>, Option<f64>, Vec<f64>) {
        let (shares, jain, per_second, _) = sharing_by(flows, |id, t| ((t - flows[id].1).max(0.0) * flows[id].2) as u64);
        (shares, jain, per_second)
    }

    /// As [`sharing_of`], with each flow's bytes received by `t` seconds given by `bytes(flow, t)`.
    fn sharing_by(flows: &[(&str, f64, f64)], bytes: impl Fn(usize, f64) -> u64) -> Sharing {
        // One directory per call: tests run in parallel.
        static CALLS: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
        let call = CALLS.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let dir = std::env::temp_dir().join(format!("ccbench-sharing-{}-{call}", std::process::id()));
        let series = crate::series::RunSeries::create(&dir, "s").unwrap();
        for i in 0..=100u64 {
            let t = i as f64 * 0.1;
            for id in 0..flows.len() {
                series.received(id as u32, &GoodputPoint { t_us: i * 100_000, bytes: bytes(id, t) });
            }
        }
        let (_, summary, error) = series.finish();
        assert_eq!(error, None);
        let results = flows
            .iter()
            .enumerate()
            .map(|(id, &(cc, start_s, _))| FlowResult {
                id: id as u32,
                sender: Side::Server,
                sending: ccbench_workload::SenderRecord {
                    transport: cc.parse::<ccbench_workload::Algorithm>().unwrap().transport(),
                    ..ccbench_workload::SenderRecord::tcp(cc, cc.to_string(), None)
                },
                start_s,
                client_port: 0,
                bytes_received: 0,
                goodput_bps: 0.0,
                completed: true,
                completion_time_s: None,
                error: None,
            })
            .collect();
        let bulk = BulkResult { start_us: 0, elapsed_s: 10.0, goodput_bps: 0.0, interrupted: false, flows: results };
        let out = sharing(&bulk, |instants| crate::series::received_at(summary.goodput_path.as_deref().unwrap(), flows.len(), instants).ok());
        let _ = std::fs::remove_dir_all(dir);
        out
    }

    #[test]
    fn a_median_of_unfinished_runs_is_not_the_median_of_the_finished_ones() {
        let inf = f64::INFINITY;
        // One of four finished (4.5 s): the median run did not finish, so there is no median time.
        assert_eq!(censored_median([Some(inf), Some(inf), Some(4.5), Some(inf)].into_iter()), None);
        // Three of four finished: the median is between the 2nd and 3rd fastest, both finished.
        assert_eq!(censored_median([Some(1.0), Some(3.0), Some(2.0), Some(inf)].into_iter()), Some(2.5));
        // Two of four: the upper middle value is unfinished, so the median is above any time.
        assert_eq!(censored_median([Some(1.0), Some(2.0), Some(inf), Some(inf)].into_iter()), None);
        assert_eq!(censored_median([Some(1.0), Some(2.0), Some(3.0)].into_iter()), Some(2.0));
        assert_eq!(censored_median([None, None].into_iter()), None);
    }

    /// A flow that takes a tenth of the other's rate for 3 s and then as much: the first whole
    /// second at Jain ≥ 0.9 starts 3 s after the last join; flows that never share fairly have none.
    #[test]
    fn convergence_is_the_first_fair_second() {
        let (_, _, _, converged) = sharing_by(&[("bbr", 0.0, 1e6), ("cubic", 0.0, 1.0)], |id, t| match id {
            0 => (t * 1e6) as u64,
            _ => (t.min(3.0) * 1e5 + (t - 3.0).max(0.0) * 1e6) as u64,
        });
        assert_eq!(converged, Some(3.0));
        let (_, _, _, never) = sharing_by(&[("bbr", 0.0, 1e6), ("cubic", 0.0, 2.0)], |id, t| (t * if id == 0 { 1e6 } else { 1e5 }) as u64);
        assert_eq!(never, None);
    }

    #[test]
    fn equal_flows_are_perfectly_fair() {
        let (shares, jain, per_second) = sharing_of(&[("bbr", 0.0, 1e6), ("cubic", 0.0, 1e6)]);
        assert_eq!(shares.len(), 2);
        for s in &shares {
            assert!((s.share - 0.5).abs() < 1e-9, "{s:?}");
            assert!((s.goodput_bps - 8e6).abs() < 1e3, "{s:?}");
        }
        assert!((jain.unwrap() - 1.0).abs() < 1e-9);
        // From 2 s (convergence) to 10 s: 8 whole seconds, each perfectly fair.
        assert_eq!(per_second.len(), 8);
        assert!(per_second.iter().all(|j| (j - 1.0).abs() < 1e-9));
    }

    #[test]
    fn shares_count_only_the_time_all_flows_were_active() {
        // bbr takes 3 MB/s, two cubic flows 0.5 MB/s each; one cubic joins at 4 s. Before it
        // joins nothing counts, so the shares are 3 : 1 and Jain's index is
        // (3 + .5 + .5)^2 / (3 * (9 + .25 + .25)) = 16 / 28.5.
        let (shares, jain, per_second) = sharing_of(&[("bbr", 0.0, 3e6), ("cubic", 0.0, 0.5e6), ("cubic", 4.0, 0.5e6)]);
        let bbr = shares.iter().find(|s| s.cc == "bbr").unwrap();
        let cubic = shares.iter().find(|s| s.cc == "cubic").unwrap();
        assert_eq!((bbr.flows, cubic.flows), (1, 2));
        assert!((bbr.share - 0.75).abs() < 1e-3, "{bbr:?}");
        assert!((cubic.share - 0.25).abs() < 1e-3, "{cubic:?}");
        assert!((jain.unwrap() - 16.0 / 28.5).abs() < 1e-3, "{jain:?}");
        // Seconds 6..10 after the last join + 2 s of convergence.
        assert_eq!(per_second.len(), 4);
        assert!(per_second.iter().all(|j| (j - 16.0 / 28.5).abs() < 1e-2), "{per_second:?}");
    }

    #[test]
    fn a_single_flow_has_no_sharing_figures() {
        let (shares, jain, per_second) = sharing_of(&[("bbr", 0.0, 1e6)]);
        assert!(shares.is_empty() && jain.is_none() && per_second.is_empty());
    }
}
