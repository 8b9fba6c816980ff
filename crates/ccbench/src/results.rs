//! The JSON record of truth (schema `ccbench.result.v1`, documented in the README) and the
//! per-run figures derived from the raw data.

use ccbench_emu::{PathReport, PathSpec};
use ccbench_stats::{Comparison, Summary};
use ccbench_workload::{BulkResult, BulkSpec, Direction};
use serde::Serialize;

use crate::provenance::Provenance;

pub const SCHEMA: &str = "ccbench.result.v1";

#[derive(Debug, Serialize)]
pub struct ExperimentResult {
    pub schema: &'static str,
    pub status: Status,
    pub provenance: Provenance,
    pub params: Params,
    /// One entry per algorithm, in the order given on the command line.
    pub summary: Vec<CcSummary>,
    /// The best algorithm (highest median goodput) against each other one.
    pub comparisons: Vec<Comparison>,
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

#[derive(Debug, Serialize)]
pub struct Params {
    pub ccs: Vec<String>,
    pub runs_per_cc: u32,
    pub seed: u64,
    pub alpha: f64,
    pub path: PathSpec,
    /// The workload of each run; `cc` is filled per run.
    pub workload: BulkSpec,
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
    pub metrics: Option<RunMetrics>,
    pub workload: Option<BulkResult>,
    pub path: Option<PathReport>,
}

/// The headline figures of one run, derived from its raw data.
#[derive(Clone, Debug, Serialize)]
pub struct RunMetrics {
    pub goodput_bps: f64,
    /// Longest flow's completion time (byte-count transfers).
    pub completion_time_s: Option<f64>,
    pub all_completed: bool,
    /// Sender's smoothed RTT over all samples of all flows.
    pub sender_rtt_p50_ms: Option<f64>,
    pub sender_rtt_p95_ms: Option<f64>,
    /// Retransmitted segments / segments sent, over all flows.
    pub retrans_rate: f64,
    pub retrans_segments: u64,
    /// Drops at the bottleneck on the data's direction, by cause.
    pub drops_loss: u64,
    pub drops_buffer: u64,
    /// Queueing delay at the bottleneck on the data's direction (the path's view of RTT).
    pub queue_delay_p50_ms: f64,
    pub queue_delay_p95_ms: f64,
    pub utilization: f64,
    /// The emulator's own timing error on the data's direction.
    pub emulator_lateness_p99_us: f64,
}

#[derive(Debug, Serialize)]
pub struct CcSummary {
    pub cc: String,
    pub runs: usize,
    pub goodput_bps: Option<Summary>,
    pub completion_time_s: Option<Summary>,
    pub sender_rtt_p50_ms: Option<Summary>,
    pub sender_rtt_p95_ms: Option<Summary>,
    pub retrans_rate: Option<Summary>,
    pub drops_loss: Option<Summary>,
    pub drops_buffer: Option<Summary>,
    pub queue_delay_p95_ms: Option<Summary>,
}

impl RunMetrics {
    pub fn derive(bulk: &BulkResult, path: &PathReport, direction: Direction) -> Self {
        let data_dir = match direction {
            Direction::Download => &path.down,
            Direction::Upload => &path.up,
        };
        let mut rtts: Vec<f64> = bulk
            .flows
            .iter()
            .flat_map(|f| f.samples.iter())
            .filter(|s| s.rtt_us > 0)
            .map(|s| s.rtt_us as f64 / 1000.0)
            .collect();
        rtts.sort_by(f64::total_cmp);
        let q = |p: f64| if rtts.is_empty() { None } else { Some(ccbench_stats::quantile(&rtts, p)) };
        let (retrans, segs) = bulk.flows.iter().filter_map(|f| f.final_tcp_info.as_ref()).fold((0u64, 0u64), |(r, s), ti| {
            (r + u64::from(ti.total_retrans), s + u64::from(ti.segs_out.unwrap_or(0)))
        });
        let completion_time_s = bulk.flows.iter().map(|f| f.completion_time_s).try_fold(0.0f64, |acc, t| t.map(|t| acc.max(t)));
        RunMetrics {
            goodput_bps: bulk.goodput_bps,
            completion_time_s: completion_time_s.filter(|_| !bulk.flows.is_empty()),
            all_completed: bulk.flows.iter().all(|f| f.completed),
            sender_rtt_p50_ms: q(0.5),
            sender_rtt_p95_ms: q(0.95),
            retrans_rate: if segs > 0 { retrans as f64 / segs as f64 } else { 0.0 },
            retrans_segments: retrans,
            drops_loss: data_dir.stats.drops_loss,
            drops_buffer: data_dir.stats.drops_buffer,
            queue_delay_p50_ms: data_dir.queue_delay.p50_us / 1000.0,
            queue_delay_p95_ms: data_dir.queue_delay.p95_us / 1000.0,
            utilization: data_dir.utilization,
            emulator_lateness_p99_us: data_dir.lateness.p99_us,
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
            goodput_bps: s(&|m| Some(m.goodput_bps)),
            completion_time_s: s(&|m| m.completion_time_s),
            sender_rtt_p50_ms: s(&|m| m.sender_rtt_p50_ms),
            sender_rtt_p95_ms: s(&|m| m.sender_rtt_p95_ms),
            retrans_rate: s(&|m| Some(m.retrans_rate)),
            drops_loss: s(&|m| Some(m.drops_loss as f64)),
            drops_buffer: s(&|m| Some(m.drops_buffer as f64)),
            queue_delay_p95_ms: s(&|m| Some(m.queue_delay_p95_ms)),
        }
    }
}
