//! The JSON record of truth (schema `ccbench.result.v3`, documented in docs/reports.md) and the
//! per-run figures derived from the raw data.

use crate::path::{PathReport, PathSpec};
use ccbench_stats::{Comparison, Summary};

use crate::workloads::{WorkloadResult, WorkloadSpec};
use serde::{Deserialize, Serialize};

use crate::provenance::Provenance;

pub const SCHEMA: &str = "ccbench.result.v3";

#[derive(Clone, Debug, Serialize, Deserialize, schemars::JsonSchema)]
pub struct ExperimentResult {
    pub schema: String,
    pub status: Status,
    /// Said before the runs (e.g. a rate beyond what the emulator has carried here).
    pub warnings: Vec<String>,
    pub provenance: Provenance,
    pub params: Params,
    /// With `--runs auto`: the looks taken, each at its share of α, and when it stopped.
    #[serde(default, skip_serializing_if = "Option::is_none")]
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
    /// `--expect`: each expectation judged per algorithm over the runs (pass, fail, undecided).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub expectations: Vec<crate::expect::ExpectationResult>,
}

impl ExperimentResult {
    /// The verdict in one line, as the tables across conditions show it: for a mix, each
    /// algorithm's share of the bottleneck and Jain's index; otherwise every comparison's
    /// short form; `no verdict` when there is none.
    pub fn verdict_short(&self) -> String {
        if self.params.workload.is_mix() {
            return self
                .summary
                .iter()
                .map(|s| {
                    let shares: Vec<String> = s.shares.iter().map(|sh| format!("{} {:.0} %", sh.cc, sh.share.median * 100.0)).collect();
                    format!("{}; Jain {:.2}", shares.join(" / "), s.jain_index.as_ref().map(|j| j.median).unwrap_or(f64::NAN))
                })
                .collect::<Vec<_>>()
                .join("; ");
        }
        let parts: Vec<String> = self.comparisons.iter().map(|c| c.short()).collect();
        if parts.is_empty() {
            "no verdict".into()
        } else {
            parts.join("; ")
        }
    }
}

#[derive(Clone, Copy, Debug, Serialize, Deserialize, PartialEq, Eq, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Status {
    Complete,
    /// Ctrl-C: runs that finished are kept, the one in progress is marked.
    Interrupted,
    Failed,
}

/// The record of a sequential (`--runs auto`) experiment.
#[derive(Clone, Debug, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Sequential {
    /// The design: `"lan_demets_pocock"` (Lan–DeMets spending with the Pocock-type function,
    /// see the statistics chapter), or `"lan_demets_pocock_exact_sign"` for one contender judged
    /// by its expectations alone (the same spending, exact sign-test boundaries); absent in results written before it was named, whose
    /// looks followed the earlier 60 %-then-halving split.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub design: Option<String>,
    /// Every look the design planned, taken or not (runs per algorithm and the α each spends).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub planned: Vec<ccbench_stats::sequential::Look>,
    /// The looks taken.
    pub looks: Vec<LookRecord>,
    /// Runs per algorithm after which every comparison was decided; `null` if it ran to the maximum.
    pub decided_after_runs: Option<u32>,
}

#[derive(Clone, Debug, Serialize, Deserialize, schemars::JsonSchema)]
pub struct LookRecord {
    pub runs_per_cc: u32,
    /// The level this look judged at (for comparisons, the share of α spent at this look).
    pub alpha: f64,
    pub decided: bool,
    /// The chance of a wrong verdict spent by this look and the earlier ones (see
    /// `Look::spent`); absent in results written before it was recorded, where it was the
    /// sum of the looks' `alpha`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub spent: Option<f64>,
}

#[derive(Clone, Debug, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Params {
    pub ccs: Vec<crate::workload::Cc>,
    /// Runs per algorithm; with `runs_auto`, the most it could take.
    pub runs_per_cc: u32,
    /// `--runs auto`: stop as soon as the verdict is decided (see `sequential`).
    pub runs_auto: bool,
    pub seed: u64,
    pub alpha: f64,
    /// `--min-effect`: the smallest relative difference called a win (0 when off).
    #[serde(default)]
    pub min_effect: f64,
    /// The emulated path; `null` for a run over a real path (`remote`).
    pub path: Option<PathSpec>,
    /// `HOST:PORT` of the `ccbench serve` a run over a real path ran against (`--remote`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub remote: Option<String>,
    /// The workload of each run; `cc` is filled per run.
    pub workload: WorkloadSpec,
    /// What the verdict compares (higher is better).
    pub metric: String,
    /// `--expect`, as written.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub expect: Vec<crate::expect::Expectation>,
}

#[derive(Clone, Debug, Serialize, Deserialize, schemars::JsonSchema)]
pub struct RunRecord {
    pub index: u32,
    pub round: u32,
    pub cc: crate::workload::Cc,
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
    /// Over a real path (`--remote`): samples of the far end that serve dropped because this
    /// client read its results too slowly (serve's queue is bounded). 0 when none were, and in
    /// results written before it was counted.
    #[serde(default)]
    pub far_samples_dropped: u64,
    pub metrics: Option<RunMetrics>,
    pub workload: Option<WorkloadResult>,
    pub path: Option<PathReport>,
    /// The run's time series, streamed to files as they were taken (paths relative to the
    /// directory of result.json): sender TCP_INFO, receiver goodput, and the emulator per
    /// direction. result.json itself holds no per-sample data.
    pub series: Option<crate::series::SeriesFiles>,
}

/// The headline figures of one run, derived from its raw data.
#[derive(Clone, Debug, Serialize, Deserialize, schemars::JsonSchema)]
pub struct RunMetrics {
    /// The figure the verdict compares (higher is better): goodput for bulk and file
    /// transfers, content throughput for objects, 1 / page load time for pages.
    pub score: Option<f64>,
    /// The run did not finish within the timeout: `score` is a censored bound that ranks at or
    /// below every finished run (see docs/statistics.md), and the run still counts in the verdict.
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
    /// delay, utilization and lateness below cover the same window. These path figures are
    /// `null` over a real path (`--remote`): only the emulator can see them.
    pub drops_loss: Option<u64>,
    pub drops_buffer: Option<u64>,
    /// Drops by the AQM, and ECN-capable packets it marked CE instead (docs/ecn.md), over the
    /// same window.
    #[serde(default)]
    pub drops_aqm: Option<u64>,
    #[serde(default)]
    pub ce_marks: Option<u64>,
    /// Queueing delay at the bottleneck on the data's direction (the path's view of RTT).
    pub queue_delay_p50_ms: Option<f64>,
    pub queue_delay_p95_ms: Option<f64>,
    pub utilization: Option<f64>,
    /// The emulator's own timing error on the data's direction.
    pub emulator_lateness_p99_us: Option<f64>,
    /// How packets arrived at the bottleneck's entry on the data's direction (before loss and
    /// the buffer), over the same window: the sender's pacing as the link saw it. Each figure
    /// is `null` over a real path or when nothing arrived.
    #[serde(default)]
    pub entry: EntryFigures,
    /// True when the run had no measured window (cut short): the path figures above then
    /// cover the path's whole life instead.
    pub path_figures_over_whole_life: bool,
    /// With several flows: each algorithm's share of the goodput while all flows were active.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub shares: Vec<CcShare>,
    /// Jain's fairness index over per-flow goodput while all flows were active.
    pub jain_index: Option<f64>,
    /// Jain's index for each second from 2 s after the last flow joined (after convergence).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub jain_per_second: Vec<f64>,
    /// Seconds from the last flow's start to the first whole second whose Jain index reached
    /// 0.9 (`null` when none did, or with one flow).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub convergence_s: Option<f64>,
    /// The delivery rate (bit/s) the sender measured when the first flow left Startup (BBR)
    /// or slow start (its first window reduction), as TCP_INFO or the QUIC controller said it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub lock_on_bw_bps: Option<f64>,
    /// What held the run's senders back (issue 30): each flow's fractions of its active time,
    /// weighted by that time. `null` where not recorded (results before it, QUIC flows).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub limited_by: Option<crate::workload::LimitedBy>,
    /// How the run's senders lost, and what the bottleneck's queue did (issue 30).
    #[serde(default)]
    pub mechanism: MechanismFigures,
    /// Each `--expect` on a trace figure, judged on this run's state series (docs/conform.md).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub trace: Vec<TraceCheck>,
}

/// One run's figure for an `--expect` on a trace figure (`startup_exit_rounds <= 4`), from the
/// sending controller's state series: a state change is only known to lie between two
/// samples, so the figure is an interval.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq, schemars::JsonSchema)]
pub struct TraceCheck {
    /// The expectation as written.
    pub expect: String,
    /// Pass when the whole interval meets the threshold, fail when none of it does, not
    /// observable when the samples cannot tell or the stack does not show what it needs.
    pub outcome: TraceOutcome,
    /// The fewest and the most the samples allow, and the estimate judged over runs, in the
    /// figure's unit. `null` when not observable, or for +∞ (such as "never left STARTUP").
    pub lo: Option<f64>,
    pub hi: Option<f64>,
    pub estimate: Option<f64>,
    /// What was seen, in words.
    pub evidence: String,
}

/// A run's outcome for a trace figure.
#[derive(Clone, Copy, Debug, Serialize, Deserialize, PartialEq, Eq, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum TraceOutcome {
    Pass,
    Fail,
    NotObservable,
}

/// How a run's senders lost and what the bottleneck's queue did. Each figure is `null` where
/// it was not recorded.
#[derive(Clone, Debug, Default, Serialize, Deserialize, PartialEq, schemars::JsonSchema)]
pub struct MechanismFigures {
    /// Window reductions (fast recovery, CWR, a new ssthresh) per second of a flow's active
    /// time, summed over flows.
    pub recoveries_per_s: Option<f64>,
    /// Retransmission timeouts per second: the kernel's `tcpi_total_rto` (Linux 6.7+), else
    /// entries into the Loss state the sampler saw.
    pub rtos_per_s: Option<f64>,
    /// Spurious retransmissions: segments the receiver reported twice (DSACK), over flows.
    pub spurious_retrans: Option<u64>,
    /// The mean window the reductions left (ssthresh after each), packets.
    pub cwnd_after_reduction: Option<f64>,
    /// Share of the emulator's sample intervals on the data's direction in which the
    /// bottleneck buffer overflowed (a drop for want of room).
    pub buffer_full_share: Option<f64>,
    /// The standing queue: the median over RTT-long windows of the smallest queueing delay
    /// in each (ms); a queue that never drains shows here.
    pub standing_queue_ms: Option<f64>,
}

/// Arrivals at the bottleneck's entry (see `ccbench_link::entry`). A burst is a run of
/// packets each arriving less than a quarter of its serialization time (at the link's rate)
/// after the one before; burst figures are packet-weighted and `null` on a link without a rate.
#[derive(Clone, Debug, Default, Serialize, Deserialize, PartialEq, schemars::JsonSchema)]
pub struct EntryFigures {
    /// Median gap between consecutive arrivals.
    pub gap_p50_us: Option<f64>,
    /// Half (99 %) of the packets arrived in bursts of at most this many packets.
    pub burst_p50_packets: Option<u64>,
    pub burst_p99_packets: Option<u64>,
    pub burst_max_packets: Option<u64>,
    /// Share of packets that arrived in a burst of more than one packet.
    pub bursty_share: Option<f64>,
}

impl EntryFigures {
    /// The figures of `e`; all `None` without one (a real path).
    pub fn of(e: Option<&ccbench_link::EntryStats>) -> Self {
        let Some(e) = e else { return Self::default() };
        let b = &e.bursts;
        let has = b.bursts() > 0;
        EntryFigures {
            gap_p50_us: (e.gaps.count() > 0).then(|| e.gaps.quantile(0.5).as_micros_f64()),
            burst_p50_packets: has.then(|| b.packet_quantile(0.5)),
            burst_p99_packets: has.then(|| b.packet_quantile(0.99)),
            burst_max_packets: has.then(|| b.max()),
            bursty_share: has.then(|| b.share_of_packets_above(1)),
        }
    }
}

#[derive(Clone, Debug, Serialize, Deserialize, schemars::JsonSchema)]
pub struct CcShare {
    /// The algorithm these flows asked for; written in result.json as its name.
    pub cc: crate::workload::Cc,
    pub flows: usize,
    pub goodput_bps: f64,
    pub share: f64,
    /// The sender RTT percentiles of this algorithm's flows alone, over the whole run (every
    /// smoothed-RTT sample of each of its flows): in a mix, the run's own RTT figures are the
    /// whole mix's, and an L4S flow's delay beside a classic one is this.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sender_rtt_p50_ms: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sender_rtt_p95_ms: Option<f64>,
}

#[derive(Clone, Debug, Serialize, Deserialize, schemars::JsonSchema)]
pub struct CcSummary {
    pub cc: crate::workload::Cc,
    pub runs: usize,
    /// Runs of `runs` that did not finish within the timeout (scored as censored bounds).
    pub unfinished: usize,
    pub score: Option<Summary>,
    pub goodput_bps: Option<Summary>,
    pub latency_p99_s: Option<Summary>,
    pub html_ttfb_s: Option<Summary>,
    /// Over the runs that finished only; see `completion_time_median_s` for all of them.
    pub completion_time_s: Option<Summary>,
    /// The median completion time over every run, an unfinished one counting as longer than
    /// any finished one (it hit the timeout). `null` when the median run itself did not finish
    /// (or the workload has no completion time).
    pub completion_time_median_s: Option<f64>,
    pub sender_rtt_p50_ms: Option<Summary>,
    pub sender_rtt_p95_ms: Option<Summary>,
    pub retrans_rate: Option<Summary>,
    pub drops_loss: Option<Summary>,
    pub drops_buffer: Option<Summary>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub drops_aqm: Option<Summary>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ce_marks: Option<Summary>,
    pub queue_delay_p95_ms: Option<Summary>,
    /// Flows sharing the bottleneck: Jain's index over runs, and each algorithm's share.
    pub jain_index: Option<Summary>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub shares: Vec<ShareSummary>,
    /// Completed runs (numbered from 1, as the runs list shows them) that left no usable
    /// score: left out of the verdict, counted there (`missing_a`, `missing_b`) and named here.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub runs_without_score: Vec<u32>,
}

#[derive(Clone, Debug, Serialize, Deserialize, schemars::JsonSchema)]
pub struct ShareSummary {
    /// The algorithm these flows asked for; written in result.json as its name.
    pub cc: crate::workload::Cc,
    pub flows: usize,
    /// Share of the bottleneck's goodput over runs, with a distribution-free CI of its median
    /// (order statistics) whose `level` is its true coverage: below 95 % with fewer than 6 runs.
    pub share: Summary,
    pub share_ci: Option<ccbench_stats::MedianCi>,
    /// This algorithm's own sender RTT p95 over runs (each run's from its flows alone).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sender_rtt_p95_ms: Option<Summary>,
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::expect::ExpectationResult;

    /// The parts of result.json that named their algorithm as a plain string before it was a
    /// typed `Cc`, exactly as that version wrote them: they read back with the algorithm parsed
    /// (or a mix's label kept as a label), and write out again byte for byte.
    #[test]
    fn contenders_written_as_strings_read_back_typed() {
        let share = r#"{"cc":"quic:bbr3","flows":2,"goodput_bps":41000000.5,"share":0.25,"sender_rtt_p95_ms":31.5}"#;
        let s: CcShare = serde_json::from_str(share).unwrap();
        assert_eq!(s.cc.algorithm().map(ToString::to_string).as_deref(), Some("quic:bbr3"));
        assert_eq!(serde_json::to_string(&s).unwrap(), share);

        let summary = r#"{"cc":"cubic","flows":1,"share":{"n":3,"min":0.2,"max":0.4,"mean":0.3,"stddev":0.1,"median":0.3,"p5":0.2,"p25":0.25,"p75":0.35,"p95":0.4},"share_ci":null}"#;
        let s: ShareSummary = serde_json::from_str(summary).unwrap();
        assert_eq!(s.cc, crate::workload::Cc::new("cubic"));
        assert!(s.cc.algorithm().is_some_and(|a| a.same_as(&"tcp:cubic".parse().unwrap())));
        assert_eq!(serde_json::to_string(&s).unwrap(), summary);

        let judged = r#"{"expect":"jain >= 0.9","cc":"bbr:1,cubic:1","metric":"jain","op":">=","threshold":0.9,"unit":"","runs":5,"median":0.97,"lo":0.95,"hi":null,"level":0.969,"alpha":0.05,"result":"pass"}"#;
        let e: ExpectationResult = serde_json::from_str(judged).unwrap();
        assert_eq!((e.cc.as_str(), e.cc.algorithm()), ("bbr:1,cubic:1", None));
        assert_eq!(serde_json::to_string(&e).unwrap(), judged);
    }
}
