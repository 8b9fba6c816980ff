//! What the report shows, gathered before anything is drawn: the result, the terminal summary
//! printed at its top, and what was read of each completed run's series files (lines over
//! time, pooled distributions, BBR's states), already bounded in size.

use ccbench_model::results::{ExperimentResult, RunRecord, Status};
use ccbench_model::series::ExactCounts;
use ccbench_model::workload::{BulkResult, Cc};
use ccbench_model::workloads::{WorkloadResult, WorkloadSpec};

use crate::svg::{Timeline, COLORS};

pub(crate) const GREY: &str = "#888";

/// BBR's states as `bbr_mode` names them, with their band colours. ProbeBW is split into the
/// phases that QUIC's BBR reports in `bbr_phase` (kernel BBRv1 reports none: plain PROBE_BW).
pub(crate) const BBR_STATES: [(&str, &str); 8] = [
    ("STARTUP", "#f28e2b"),
    ("DRAIN", "#edc948"),
    ("PROBE_BW", "#76b7b2"),
    ("PROBE_BW DOWN", "#b9ddd9"),
    ("PROBE_BW CRUISE", "#93c9c4"),
    ("PROBE_BW REFILL", "#4f9a95"),
    ("PROBE_BW UP", "#1f5f5b"),
    ("PROBE_RTT", "#b07aa1"),
];
/// Rows of BBR state bands under a plot, at most (one per BBR algorithm).
pub(crate) const MAX_BBR_ROWS: usize = 4;

/// Everything [`crate::render`] draws: the experiment's result, the terminal summary shown at
/// the top of the page, and what [`ReportData::read`] read of the runs' series files. Rendering
/// it reads no file.
pub struct ReportData<'a> {
    pub(crate) result: &'a ExperimentResult,
    pub(crate) summary: String,
    pub(crate) series: Gathered<'a>,
}

/// Colours by name: the algorithms (of a mix: its flows' algorithms, then the mix itself).
pub(crate) struct Palette(pub(crate) Vec<String>);

impl Palette {
    pub(crate) fn of(result: &ExperimentResult) -> Palette {
        let mut keys: Vec<String> = Vec::new();
        if let WorkloadSpec::Bulk(b) = &result.params.workload {
            for cc in b.mix.iter().map(|f| f.cc.to_string()) {
                if !keys.contains(&cc) {
                    keys.push(cc);
                }
            }
        }
        for cc in &result.params.ccs {
            if !keys.iter().any(|k| k == cc) {
                keys.push(cc.to_string());
            }
        }
        Palette(keys)
    }

    pub(crate) fn color(&self, key: &str) -> &'static str {
        self.0.iter().position(|k| k == key).map_or(GREY, |i| COLORS[i % COLORS.len()])
    }

    pub(crate) fn index(&self, key: &str) -> usize {
        self.0.iter().position(|k| k == key).unwrap_or(usize::MAX)
    }
}

/// The completed runs of `cc` that have a score, sorted by score.
pub(crate) fn scored_runs<'a>(result: &'a ExperimentResult, cc: &Cc) -> Vec<&'a RunRecord> {
    let mut runs: Vec<&RunRecord> =
        result.runs.iter().filter(|r| &r.cc == cc && r.status == Status::Complete && r.metrics.as_ref().and_then(|m| m.score).is_some()).collect();
    runs.sort_by(|a, b| {
        let s = |r: &RunRecord| r.metrics.as_ref().and_then(|m| m.score).unwrap_or(0.0);
        s(a).total_cmp(&s(b))
    });
    runs
}

/// The completed run of `cc` whose score is the median of its runs.
pub(crate) fn representative<'a>(result: &'a ExperimentResult, cc: &Cc) -> Option<&'a RunRecord> {
    let runs = scored_runs(result, cc);
    runs.get(runs.len() / 2).copied()
}

pub(crate) fn run_start(r: &RunRecord) -> u64 {
    r.workload.as_ref().map_or(0, |w| w.start_us())
}

pub(crate) fn bulk(r: &RunRecord) -> Option<&BulkResult> {
    match &r.workload {
        Some(WorkloadResult::Bulk(b)) => Some(b),
        _ => None,
    }
}

/// One plotted line of one run.
pub(crate) struct Line {
    /// Colour key: the algorithm.
    pub(crate) key: String,
    /// What the line is, for its tooltip: `run 3 · bbr flow 0`.
    pub(crate) label: String,
    pub(crate) median: bool,
    pub(crate) points: Vec<(f64, f64)>,
}

/// One socket's BBR states over a run: the socket, its algorithm (the band row's label),
/// what it is (`quic:bbr3 flow 0`), and its states over time.
pub(crate) struct BbrTimeline {
    pub(crate) socket: String,
    pub(crate) key: String,
    pub(crate) what: String,
    pub(crate) states: Timeline<{ BBR_STATES.len() }>,
}

/// Everything read from one run's series files.
pub(crate) struct RunView<'a> {
    pub(crate) run: &'a RunRecord,
    pub(crate) median: bool,
    pub(crate) rtt: Vec<Line>,
    pub(crate) cwnd: Vec<Line>,
    pub(crate) bbr_bw: Vec<Line>,
    pub(crate) goodput: Vec<Line>,
    pub(crate) queue: Option<Line>,
    /// CE marks per second at the bottleneck, on the data's direction; `None` when the run had
    /// none (no marking AQM, or ECN unused).
    pub(crate) ce: Option<Line>,
    /// Per algorithm, the states of its first socket that reported BBR's (median runs only).
    pub(crate) bbr: Vec<BbrTimeline>,
    /// Per bulk flow: its id, algorithm and RTT samples (for the flow's own RTT median).
    pub(crate) flow_rtt: Vec<(u32, String, ExactCounts)>,
    /// Per algorithm (median runs only): what held its flows back over time, µs per cause
    /// (`Cause::ALL`'s order) in each of `STRIP_BINS` bins over the run.
    pub(crate) strip: Vec<Strip>,
}

/// Bins of the limited-by strip over a run.
pub(crate) const STRIP_BINS: usize = 60;

/// One algorithm's limited-by causes over its median run, from the series' sampled state.
pub(crate) struct Strip {
    pub(crate) key: String,
    /// Width of a bin, s.
    pub(crate) bin_s: f64,
    pub(crate) bins: Vec<[f64; 7]>,
}

/// Distributions pooled over all runs of each key.
#[derive(Default)]
pub(crate) struct Pooled(pub(crate) Vec<(String, ExactCounts)>);

impl Pooled {
    pub(crate) fn record(&mut self, key: &str, v: u32) {
        match self.0.iter_mut().find(|(k, _)| k == key) {
            Some((_, c)) => c.record(v),
            None => {
                let mut c = ExactCounts::default();
                c.record(v);
                self.0.push((key.to_string(), c));
            }
        }
    }
}

pub(crate) struct Gathered<'a> {
    pub(crate) runs: Vec<RunView<'a>>,
    /// Width of the goodput bins.
    pub(crate) bin_us: u64,
    pub(crate) rtt: Pooled,
    pub(crate) queue: Pooled,
    /// Files that could not be read.
    pub(crate) errors: Vec<String>,
}
