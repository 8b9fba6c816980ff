//! The JSON record of truth (schema `ccbench.result.v1`, documented in the README) and the
//! per-run figures derived from the raw data.

use ccbench_emu::{PathReport, PathSpec};
use ccbench_stats::{Comparison, Summary};
use ccbench_workload::{BulkResult, Direction};

use crate::workloads::{WorkloadResult, WorkloadSpec};
use serde::Serialize;

use crate::provenance::Provenance;

pub const SCHEMA: &str = "ccbench.result.v1";

#[derive(Debug, Serialize)]
pub struct ExperimentResult {
    pub schema: &'static str,
    pub status: Status,
    /// Said before the runs (e.g. a rate beyond what the emulator has carried here).
    pub warnings: Vec<String>,
    pub provenance: Provenance,
    pub params: Params,
    /// With `--runs auto`: the looks taken, each at its share of α, and when it stopped.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub sequential: Option<Sequential>,
    /// One entry per algorithm, in the order given on the command line.
    pub summary: Vec<CcSummary>,
    /// The best algorithm (highest median score) as `a` against each other one as `b`; the
    /// ratio is median(a) / median(b); `better` names the better one when significant.
    /// Holm-corrected over every pair of algorithms.
    pub comparisons: Vec<Comparison>,
    /// The algorithm with the lowest median sender RTT as `a` against each other one
    /// (`better_is: "lower"`); its own Holm family.
    pub rtt_comparisons: Vec<Comparison>,
    /// Every run, in the order it ran.
    pub runs: Vec<RunRecord>,
}

#[derive(Clone, Copy, Debug, Serialize, PartialEq, Eq)]
#[serde(rename_all = "snake_case")]
pub enum Status {
    Complete,
    /// Ctrl-C: runs that finished are kept, the one in progress is marked.
    Interrupted,
    Failed,
}

/// The record of a sequential (`--runs auto`) experiment.
#[derive(Debug, Serialize)]
pub struct Sequential {
    pub looks: Vec<LookRecord>,
    /// Runs per algorithm after which every comparison was decided; `null` if it ran to the maximum.
    pub decided_after_runs: Option<u32>,
}

#[derive(Debug, Serialize)]
pub struct LookRecord {
    pub runs_per_cc: u32,
    /// The share of α spent at this look.
    pub alpha: f64,
    pub decided: bool,
}

#[derive(Debug, Serialize)]
pub struct Params {
    pub ccs: Vec<String>,
    /// Runs per algorithm; with `runs_auto`, the most it could take.
    pub runs_per_cc: u32,
    /// `--runs auto`: stop as soon as the verdict is decided (see `sequential`).
    pub runs_auto: bool,
    pub seed: u64,
    pub alpha: f64,
    pub path: PathSpec,
    /// The workload of each run; `cc` is filled per run.
    pub workload: WorkloadSpec,
    /// What the verdict compares (higher is better).
    pub metric: String,
}

#[derive(Debug, Serialize)]
pub struct RunRecord {
    pub index: u32,
    pub round: u32,
    pub cc: String,
    pub status: Status,
    pub error: Option<String>,
    pub started_at: String,
    pub path_seed: u64,
    /// Inodes of the run's client and server network namespaces (`readlink /proc/PID/ns/net`),
    /// so anyone can check that nothing of the run outlived it.
    pub netns_inodes: Option<[u64; 2]>,
    /// Share of the machine's CPU time the hypervisor stole during the run (0 on bare metal).
    /// Above a few percent the emulator's timing, and so the run, is suspect.
    pub host_cpu_steal_fraction: Option<f64>,
    /// Reasons to distrust this run's figures (emulator late or saturated, kernel drops,
    /// CPU stolen); empty when there are none.
    pub suspect: Vec<String>,
    pub metrics: Option<RunMetrics>,
    pub workload: Option<WorkloadResult>,
    pub path: Option<PathReport>,
}

/// The headline figures of one run, derived from its raw data.
#[derive(Clone, Debug, Serialize)]
pub struct RunMetrics {
    /// The figure the verdict compares (higher is better): goodput for bulk and file
    /// transfers, content throughput for objects, 1 / page load time for pages.
    pub score: Option<f64>,
    /// The run did not finish within the timeout: `score` is a censored bound that ranks at or
    /// below every finished run (see the README), and the run still counts in the verdict.
    pub unfinished: bool,
    /// Application bytes per second delivered (all flows or connections together).
    pub goodput_bps: f64,
    /// File: the longest flow's completion time; objects: wall time of all requests; page:
    /// page load time.
    pub completion_time_s: Option<f64>,
    /// Objects: request latency percentiles.
    pub latency_p50_s: Option<f64>,
    pub latency_p99_s: Option<f64>,
    /// Page: time to the HTML's first byte.
    pub html_ttfb_s: Option<f64>,
    pub all_completed: bool,
    /// Sender's smoothed RTT over all samples of all flows.
    pub sender_rtt_p50_ms: Option<f64>,
    pub sender_rtt_p95_ms: Option<f64>,
    /// Retransmitted segments / segments sent, over all flows.
    pub retrans_rate: f64,
    pub retrans_segments: u64,
    /// Drops at the bottleneck on the data's direction, by cause, within the measured window
    /// (`path.<dir>.window`; the path's lifetime totals are under `path.<dir>.stats`). Queue
    /// delay, utilization and lateness below cover the same window.
    pub drops_loss: u64,
    pub drops_buffer: u64,
    /// Queueing delay at the bottleneck on the data's direction (the path's view of RTT).
    pub queue_delay_p50_ms: f64,
    pub queue_delay_p95_ms: f64,
    pub utilization: f64,
    /// The emulator's own timing error on the data's direction.
    pub emulator_lateness_p99_us: f64,
    /// True when the run had no measured window (cut short): the path figures above then
    /// cover the path's whole life instead.
    pub path_figures_over_whole_life: bool,
    /// With several flows: each algorithm's share of the goodput while all flows were active.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub shares: Vec<CcShare>,
    /// Jain's fairness index over per-flow goodput while all flows were active.
    pub jain_index: Option<f64>,
    /// Jain's index for each second from 2 s after the last flow joined (after convergence).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub jain_per_second: Vec<f64>,
}

#[derive(Clone, Debug, Serialize)]
pub struct CcShare {
    pub cc: String,
    pub flows: usize,
    pub goodput_bps: f64,
    pub share: f64,
}

/// The path's figures over the one span the run's metrics use.
struct PathSpan<'a> {
    drops_loss: u64,
    drops_buffer: u64,
    queue_delay: &'a ccbench_emu::DelaySummary,
    lateness: &'a ccbench_emu::DelaySummary,
    utilization: f64,
    whole_life: bool,
}

/// Seconds after the last flow joins that are left out of the per-second fairness figures.
const CONVERGENCE_S: f64 = 2.0;

/// Bytes a flow had received by time `t_us` (from the receiver's samples).
fn received_by(points: &[ccbench_workload::GoodputPoint], t_us: u64) -> u64 {
    match points.partition_point(|p| p.t_us <= t_us) {
        0 => 0,
        i => points[i - 1].bytes,
    }
}

/// How flows shared the bottleneck: per-algorithm shares and Jain's index over the window in
/// which every flow was active, and Jain's index per second after convergence.
fn sharing(bulk: &BulkResult) -> (Vec<CcShare>, Option<f64>, Vec<f64>) {
    if bulk.flows.len() < 2 {
        return (Vec::new(), None, Vec::new());
    }
    let last_start = bulk.flows.iter().map(|f| f.start_s).fold(0.0, f64::max);
    let from = bulk.start_us + (last_start * 1e6) as u64;
    let to = bulk.start_us + (bulk.elapsed_s * 1e6) as u64;
    if to <= from {
        return (Vec::new(), None, Vec::new());
    }
    let window_s = (to - from) as f64 / 1e6;
    let rates: Vec<f64> = bulk.flows.iter().map(|f| (received_by(&f.received, to) - received_by(&f.received, from)) as f64 * 8.0 / window_s).collect();
    let total: f64 = rates.iter().sum();
    let mut shares: Vec<CcShare> = Vec::new();
    for (flow, rate) in bulk.flows.iter().zip(&rates) {
        match shares.iter_mut().find(|s| s.cc == flow.cc_requested) {
            Some(s) => {
                s.flows += 1;
                s.goodput_bps += rate;
            }
            None => shares.push(CcShare { cc: flow.cc_requested.clone(), flows: 1, goodput_bps: *rate, share: 0.0 }),
        }
    }
    for s in &mut shares {
        s.share = if total > 0.0 { s.goodput_bps / total } else { 0.0 };
    }
    let mut per_second = Vec::new();
    let mut t = from + (CONVERGENCE_S * 1e6) as u64;
    while t + 1_000_000 <= to {
        let second: Vec<f64> = bulk.flows.iter().map(|f| (received_by(&f.received, t + 1_000_000) - received_by(&f.received, t)) as f64).collect();
        if let Some(j) = ccbench_stats::jain_fairness(&second) {
            per_second.push(j);
        }
        t += 1_000_000;
    }
    (shares, ccbench_stats::jain_fairness(&rates), per_second)
}

#[derive(Debug, Serialize)]
pub struct CcSummary {
    pub cc: String,
    pub runs: usize,
    /// Runs of `runs` that did not finish within the timeout (scored as censored bounds).
    pub unfinished: usize,
    pub score: Option<Summary>,
    pub goodput_bps: Option<Summary>,
    pub latency_p99_s: Option<Summary>,
    pub html_ttfb_s: Option<Summary>,
    pub completion_time_s: Option<Summary>,
    pub sender_rtt_p50_ms: Option<Summary>,
    pub sender_rtt_p95_ms: Option<Summary>,
    pub retrans_rate: Option<Summary>,
    pub drops_loss: Option<Summary>,
    pub drops_buffer: Option<Summary>,
    pub queue_delay_p95_ms: Option<Summary>,
    /// Flows sharing the bottleneck: Jain's index over runs, and each algorithm's share.
    pub jain_index: Option<Summary>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub shares: Vec<ShareSummary>,
}

#[derive(Debug, Serialize)]
pub struct ShareSummary {
    pub cc: String,
    pub flows: usize,
    /// Share of the bottleneck's goodput over runs, with a distribution-free CI of its median
    /// (order statistics) whose `level` is its true coverage: below 95 % with fewer than 6 runs.
    pub share: Summary,
    pub share_ci: Option<ccbench_stats::MedianCi>,
}

impl RunMetrics {
    pub fn derive(result: &WorkloadResult, path: &PathReport, direction: Direction, timeout_s: f64) -> Self {
        let data_dir = match direction {
            Direction::Download => &path.down,
            Direction::Upload => &path.up,
        };
        let mut rtts: Vec<f64> = result.samples().iter().filter(|s| s.rtt_us > 0).map(|s| s.rtt_us as f64 / 1000.0).collect();
        rtts.sort_by(f64::total_cmp);
        let q = |p: f64| if rtts.is_empty() { None } else { Some(ccbench_stats::quantile(&rtts, p)) };
        let (retrans, segs) =
            result.final_infos().iter().fold((0u64, 0u64), |(r, s), ti| (r + u64::from(ti.total_retrans), s + u64::from(ti.segs_out.unwrap_or(0))));
        let (shares, jain_index, jain_per_second) = match result {
            WorkloadResult::Bulk(b) => sharing(b),
            _ => (Vec::new(), None, Vec::new()),
        };
        let (goodput_bps, completion_time_s, all_completed, latency_p50_s, latency_p99_s, html_ttfb_s) = match result {
            WorkloadResult::Bulk(bulk) => {
                let done = bulk.flows.iter().map(|f| f.completion_time_s.map(|c| c + f.start_s)).try_fold(0.0f64, |acc, t| t.map(|t| acc.max(t)));
                (bulk.goodput_bps, done.filter(|_| !bulk.flows.is_empty()), bulk.flows.iter().all(|f| f.completed), None, None, None)
            }
            WorkloadResult::Objects(o) => (
                o.content_throughput_bps,
                Some(o.wall_time_s),
                o.requests_completed == o.requests_requested && o.errors == 0,
                o.latency_p50_s,
                o.latency_p99_s,
                None,
            ),
            WorkloadResult::Page(p) => (p.page_goodput_bps, p.page_load_s, p.page_load_s.is_some() && p.errors == 0, None, None, p.html_ttfb_s),
        };
        let (score, unfinished) = result.score(timeout_s);
        // Every path figure over one span: the emulator's window, which the workload opened and
        // closed at the instants its own goodput is measured over. Without one (a run cut
        // short before its span began), the path's whole life, for every figure alike.
        let span = match &data_dir.window {
            Some(w) => PathSpan {
                drops_loss: w.stats.drops_loss,
                drops_buffer: w.stats.drops_buffer,
                queue_delay: &w.queue_delay,
                lateness: &w.lateness,
                utilization: w.utilization,
                whole_life: false,
            },
            None => PathSpan {
                drops_loss: data_dir.stats.drops_loss,
                drops_buffer: data_dir.stats.drops_buffer,
                queue_delay: &data_dir.queue_delay,
                lateness: &data_dir.lateness,
                utilization: data_dir.utilization,
                whole_life: true,
            },
        };
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
            drops_loss: span.drops_loss,
            drops_buffer: span.drops_buffer,
            queue_delay_p50_ms: span.queue_delay.p50_us / 1000.0,
            queue_delay_p95_ms: span.queue_delay.p95_us / 1000.0,
            utilization: span.utilization,
            emulator_lateness_p99_us: span.lateness.p99_us,
            path_figures_over_whole_life: span.whole_life,
            shares,
            jain_index,
            jain_per_second,
        }
    }
}

impl CcSummary {
    pub fn of(cc: &str, runs: &[&RunMetrics]) -> Self {
        let s = |f: &dyn Fn(&RunMetrics) -> Option<f64>| -> Option<Summary> {
            let xs: Vec<f64> = runs.iter().filter_map(|m| f(m)).collect();
            Summary::of(&xs)
        };
        CcSummary {
            cc: cc.to_string(),
            runs: runs.len(),
            unfinished: runs.iter().filter(|m| m.unfinished).count(),
            score: s(&|m| m.score),
            goodput_bps: s(&|m| Some(m.goodput_bps)),
            latency_p99_s: s(&|m| m.latency_p99_s),
            html_ttfb_s: s(&|m| m.html_ttfb_s),
            completion_time_s: s(&|m| m.completion_time_s),
            sender_rtt_p50_ms: s(&|m| m.sender_rtt_p50_ms),
            sender_rtt_p95_ms: s(&|m| m.sender_rtt_p95_ms),
            retrans_rate: s(&|m| Some(m.retrans_rate)),
            drops_loss: s(&|m| Some(m.drops_loss as f64)),
            drops_buffer: s(&|m| Some(m.drops_buffer as f64)),
            queue_delay_p95_ms: s(&|m| Some(m.queue_delay_p95_ms)),
            jain_index: s(&|m| m.jain_index),
            shares: share_summaries(runs),
        }
    }
}

fn share_summaries(runs: &[&RunMetrics]) -> Vec<ShareSummary> {
    let mut names: Vec<(String, usize)> = Vec::new();
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
            Some(ShareSummary { cc, flows, share, share_ci })
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use ccbench_workload::{FlowResult, GoodputPoint, Side};

    /// A flow that starts at `start_s` and then receives `rate_bytes_per_s` steadily, sampled
    /// every 100 ms for 10 s.
    fn flow(cc: &str, start_s: f64, rate_bytes_per_s: f64) -> FlowResult {
        let received = (0..=100)
            .map(|i| {
                let t = i as f64 * 0.1;
                GoodputPoint { t_us: (t * 1e6) as u64, bytes: ((t - start_s).max(0.0) * rate_bytes_per_s) as u64 }
            })
            .collect();
        FlowResult {
            id: 0,
            sender: Side::Server,
            cc_requested: cc.into(),
            start_s,
            cc_read_back: cc.into(),
            client_port: 0,
            bytes_received: 0,
            goodput_bps: 0.0,
            completed: true,
            completion_time_s: None,
            final_tcp_info: None,
            samples: Vec::new(),
            received,
            error: None,
        }
    }

    fn bulk(flows: Vec<FlowResult>) -> BulkResult {
        BulkResult { start_us: 0, elapsed_s: 10.0, goodput_bps: 0.0, interrupted: false, flows }
    }

    #[test]
    fn equal_flows_are_perfectly_fair() {
        let (shares, jain, per_second) = sharing(&bulk(vec![flow("bbr", 0.0, 1e6), flow("cubic", 0.0, 1e6)]));
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
        let (shares, jain, per_second) = sharing(&bulk(vec![flow("bbr", 0.0, 3e6), flow("cubic", 0.0, 0.5e6), flow("cubic", 4.0, 0.5e6)]));
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
        let (shares, jain, per_second) = sharing(&bulk(vec![flow("bbr", 0.0, 1e6)]));
        assert!(shares.is_empty() && jain.is_none() && per_second.is_empty());
    }
}
