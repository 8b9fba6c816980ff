//! `ccbench compare`: the verdict machinery of `run`, applied across saved results — one
//! algorithm before and after a kernel upgrade, a real path against its emulated twin, a
//! setting before and after tuning.
//!
//! Each input is a `result.json` (schema [`crate::results::SCHEMA`]). Its runs form one *arm*
//! per algorithm it holds, labelled `<label>:<cc>`; the label is the file's directory name
//! unless given as `LABEL=PATH`. When every input contributes exactly one algorithm (one
//! algorithm per file, or `--cc`), an arm is labelled by its input's label alone. The arms are
//! then summarised and compared from the runs' stored metrics by the same functions as a
//! run's algorithms ([`crate::analysis`]): the best arm against each other one, Holm-corrected
//! over every pair of arms. A `--runs auto` result is judged at the level of its own last look
//! when alone, and refused beside other results (see [`judged_alpha`]).
//!
//! Inputs that cannot be compared are refused ([`Refusal`]); inputs whose paths or workloads
//! differ are compared, with a warning that lists the differences.

use std::path::{Component, Path, PathBuf};

use ccbench_stats::Comparison;
use ccbench_workload::Cc;
use serde::{Deserialize, Serialize};

mod inputs;
pub use inputs::{check, load, parse, Input, InputArg, Refusal};

use crate::analysis::{analyse, compare_rtt};
use crate::provenance::now_rfc3339;
use crate::results::{CcSummary, ExperimentResult, Params, RunRecord, Status};

/// Schema of `compare.json`.
pub const SCHEMA: &str = "ccbench.compare.v1";
/// The file `ccbench compare` writes into its output directory.
pub const COMPARE_FILE: &str = "compare.json";
/// What the verdict compares.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Metric {
    /// Each run's `score`: the inputs' own metric (`params.metric`), higher is better.
    #[default]
    Score,
    /// Each run's `goodput_bps`, higher is better (differs from the score for objects and pages).
    Goodput,
    /// Each run's `sender_rtt_p50_ms`, lower is better (then there is no separate RTT verdict).
    Rtt,
}

/// What to select from the inputs and compare.
#[derive(Clone, Debug, Default)]
pub struct Options {
    /// Only this algorithm from each input.
    pub cc: Option<String>,
    /// Which figure of each run is compared.
    pub metric: Metric,
}

/// One arm: the completed runs of one algorithm in one input.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Arm {
    /// The arm's name in the verdicts: the input's label, as `LABEL:CC` unless every input gives one algorithm.
    pub label: String,
    /// Index into `inputs`.
    pub input: usize,
    /// The algorithm, as the input names it (written in compare.json as its name).
    pub cc: Cc,
    /// Runs of this algorithm in the input (of any status; the summary counts completed ones).
    pub runs: usize,
}

/// The algorithms of a result, in the order it ran them (and any that only its runs name).
fn ccs_of(r: &ExperimentResult) -> Vec<Cc> {
    let mut ccs: Vec<Cc> = r.params.ccs.clone();
    for run in &r.runs {
        if !ccs.contains(&run.cc) {
            ccs.push(run.cc.clone());
        }
    }
    ccs
}

/// The arms the inputs make (see the module documentation for the labels).
pub fn arms(inputs: &[Input], cc: Option<&str>) -> Result<Vec<Arm>, Refusal> {
    // `--cc` names a contender as its results write it; compared typed from here on.
    let want = cc.map(Cc::new);
    let mut chosen: Vec<(usize, Vec<Cc>)> = Vec::new();
    for (i, input) in inputs.iter().enumerate() {
        let has = ccs_of(&input.result);
        let ccs = match &want {
            Some(cc) if has.contains(cc) => vec![cc.clone()],
            Some(cc) => {
                let has = has.iter().map(ToString::to_string).collect();
                return Err(Refusal::MissingCc { path: input.path.display().to_string(), cc: cc.to_string(), has });
            }
            None => has,
        };
        chosen.push((i, ccs));
    }
    let one_each = chosen.iter().all(|(_, ccs)| ccs.len() == 1);
    let mut arms: Vec<Arm> = Vec::new();
    for (i, ccs) in chosen {
        let input = &inputs[i];
        for cc in ccs {
            let label = if one_each { input.label.clone() } else { format!("{}:{cc}", input.label) };
            if arms.iter().any(|a| a.label == label) {
                return Err(Refusal::DuplicateLabel { label });
            }
            let runs = input.result.runs.iter().filter(|r| r.cc == cc).count();
            arms.push(Arm { label, input: i, cc, runs });
        }
    }
    if arms.len() < 2 {
        return Err(Refusal::TooFewArms { arms: arms.len(), labels: arms.into_iter().map(|a| a.label).collect() });
    }
    Ok(arms)
}

/// What `compare.json` records of each input.
#[derive(Clone, Debug, Serialize, Deserialize, schemars::JsonSchema)]
pub struct InputRecord {
    /// The arm's name in the verdicts.
    pub label: String,
    /// As named on the command line (`DIR` as `DIR/result.json`).
    pub path: String,
    /// Absolute, with links resolved.
    pub absolute_path: String,
    /// The input's `schema`.
    pub schema: String,
    /// The input's `status`: a stopped or failed experiment can still be compared.
    pub status: Status,
    /// The ccbench that wrote the input.
    pub ccbench_version: String,
    /// The git revision of the ccbench that wrote the input.
    pub git_revision: String,
    /// The host the input ran on.
    pub hostname: Option<String>,
    /// That host's kernel (`uname -r`).
    pub kernel_release: Option<String>,
    /// When the input's experiment started (RFC 3339).
    pub started_at: String,
    /// When it finished (RFC 3339), if it did.
    pub finished_at: Option<String>,
    /// The input's algorithms, in its order.
    pub ccs: Vec<Cc>,
    /// How many runs the input has, of any status.
    pub runs: usize,
    /// The input's parameters, for telling where the inputs differ.
    pub params: Params,
}

/// What ran the comparison.
#[derive(Clone, Debug, Serialize, Deserialize, schemars::JsonSchema)]
pub struct CompareProvenance {
    /// The ccbench that compared.
    pub ccbench_version: String,
    /// Its git revision.
    pub git_revision: String,
    /// The command line, as given.
    pub command_line: Vec<String>,
    /// When the comparison was made (RFC 3339).
    pub created_at: String,
}

/// `compare.json` (schema [`SCHEMA`]).
#[derive(Clone, Debug, Serialize, Deserialize, schemars::JsonSchema)]
pub struct CompareResult {
    /// The schema's name and version, `ccbench.compare.v1`.
    pub schema: String,
    /// What ran the comparison, and when.
    pub provenance: CompareProvenance,
    /// The inputs, in the order given.
    pub inputs: Vec<InputRecord>,
    /// Which figure of each run is compared, and its noun in the verdicts.
    pub compared: Metric,
    /// The compared figure's name (`params.metric` when the scores are compared).
    pub metric: String,
    /// Seed of the bootstrap: the first input's `params.seed`.
    pub seed: u64,
    /// Level of the comparisons: the first input's `params.alpha`.
    pub alpha: f64,
    /// Where the inputs differ beyond what is compared, one line each.
    pub warnings: Vec<String>,
    /// The arms, in the order the inputs give them.
    pub arms: Vec<Arm>,
    /// One entry per arm (`cc` is the arm's label), over its completed runs.
    pub summary: Vec<CcSummary>,
    /// The best arm against each other one, Holm-corrected over every pair of arms.
    pub comparisons: Vec<Comparison>,
    /// The arm with the lowest median sender RTT against each other one (its own Holm family);
    /// empty when the RTT is what `comparisons` compares.
    pub rtt_comparisons: Vec<Comparison>,
}

/// Absolute and with links resolved when it exists; absolute otherwise.
fn absolute(p: &Path) -> PathBuf {
    std::fs::canonicalize(p).unwrap_or_else(|_| std::path::absolute(p).unwrap_or_else(|_| p.to_path_buf()))
}

/// `to` relative to the directory `from` (both absolute): `../../a/b`.
pub fn relative(from: &Path, to: &Path) -> PathBuf {
    let f: Vec<Component> = from.components().collect();
    let t: Vec<Component> = to.components().collect();
    let common = f.iter().zip(&t).take_while(|(a, b)| a == b).count();
    let mut out = PathBuf::new();
    for _ in common..f.len() {
        out.push("..");
    }
    for c in &t[common..] {
        out.push(c);
    }
    if out.as_os_str().is_empty() {
        out.push(".");
    }
    out
}

/// The directory of an input's result file, relative to `out` (a directory that exists).
pub fn input_dir_from(out: &Path, input: &Input) -> String {
    let dir = absolute(&input.path).parent().map(Path::to_path_buf).unwrap_or_default();
    relative(&absolute(out), &dir).to_string_lossy().into_owned()
}

/// The level a comparison is judged at. A `--runs auto` result stopped when its own verdict
/// was decided, so judging its runs again at the full α would spend α a second time (the
/// stopping already looked at the data): alone, it is judged at the level of the last look it
/// took, as `run` judged it; beside other results, it is refused.
fn judged_alpha(inputs: &[Input]) -> Result<f64, Refusal> {
    let first = &inputs[0].result;
    let sequential: Vec<&Input> = inputs.iter().filter(|i| i.result.params.runs_auto).collect();
    match (inputs.len(), sequential.first()) {
        (_, None) => Ok(first.params.alpha),
        (1, Some(input)) => {
            let last = input.result.sequential.as_ref().and_then(|s| s.looks.last()).map(|l| l.alpha);
            last.ok_or_else(|| Refusal::Sequential { path: input.path.display().to_string(), why: "it records no look".into() })
        }
        (_, Some(input)) => Err(Refusal::Sequential {
            path: input.path.display().to_string(),
            why: "its run count depended on its own verdict, so its runs cannot be judged against another result's; compare it alone, or rerun with a fixed --runs N".into(),
        }),
    }
}

/// Both outputs of a comparison: the record (`compare.json`), and the arms' runs as one
/// experiment (each run's `cc` its arm's label, its series paths relative to `out`), which the
/// exporters of `run` render as they render a run's.
pub struct Compared {
    /// What `compare.json` records.
    pub record: CompareResult,
    /// The arms' runs as one experiment, for the exporters.
    pub combined: ExperimentResult,
}

/// Compares the arms of `inputs` (see [`arms`] and [`check`]). `out` is where the outputs go
/// (it must exist: the series paths are made relative to it).
pub fn compare(inputs: &[Input], opts: &Options, out: &Path) -> Result<Compared, Refusal> {
    let warnings = check(inputs)?;
    let arms = arms(inputs, opts.cc.as_deref())?;
    let first = &inputs[0].result;
    let seed = first.params.seed;
    let alpha = judged_alpha(inputs)?;
    let criteria = ccbench_stats::Criteria { alpha, min_effect: first.params.min_effect };
    let labels: Vec<Cc> = arms.iter().map(|a| Cc::new(&a.label)).collect();
    let dirs: Vec<String> = inputs.iter().map(|i| input_dir_from(out, i)).collect();
    let mut runs: Vec<RunRecord> = Vec::new();
    for arm in &arms {
        for r in inputs[arm.input].result.runs.iter().filter(|r| r.cc == arm.cc) {
            let mut r = r.clone();
            r.cc = Cc::new(&arm.label);
            if let Some(s) = &mut r.series {
                let under = |p: &str| if dirs[arm.input] == "." { p.to_string() } else { format!("{}/{p}", dirs[arm.input]) };
                s.tcp = under(&s.tcp);
                s.goodput = under(&s.goodput);
                s.link_down = s.link_down.as_deref().map(under);
                s.link_up = s.link_up.as_deref().map(under);
            }
            runs.push(r);
        }
    }
    let (metric, summary, mut comparisons, mut rtt_comparisons) = match opts.metric {
        Metric::Score => {
            let (summary, comparisons) = analyse(&labels, &runs, criteria);
            (first.params.metric.clone(), summary, comparisons, compare_rtt(&labels, &runs, criteria))
        }
        Metric::Goodput => {
            let mut by_goodput = runs.clone();
            for m in by_goodput.iter_mut().filter_map(|r| r.metrics.as_mut()) {
                m.score = Some(m.goodput_bps);
            }
            let (summary, comparisons) = analyse(&labels, &by_goodput, criteria);
            ("goodput".to_string(), summary, comparisons, compare_rtt(&labels, &runs, criteria))
        }
        Metric::Rtt => {
            let (summary, _) = analyse(&labels, &runs, criteria);
            ("median sender RTT".to_string(), summary, compare_rtt(&labels, &runs, criteria), Vec::new())
        }
    };
    // A `--runs auto` result judged alone at its last look: one that ended without deciding is
    // undecided there, as `run` said, never "no significant difference".
    if let (1, Some(seq)) = (inputs.len(), first.sequential.as_ref().filter(|_| first.params.runs_auto)) {
        if let Some(last) = seq.looks.last() {
            let context = ccbench_stats::LookContext {
                look: seq.looks.len(),
                of: seq.planned.len().max(seq.looks.len()),
                spent: last.spent.unwrap_or_else(|| seq.looks.iter().map(|l| l.alpha).sum()),
                alpha_total: first.params.alpha,
            };
            for c in comparisons.iter_mut().chain(rtt_comparisons.iter_mut()) {
                c.look = Some(context);
                if seq.decided_after_runs.is_none() {
                    c.mark_undecided();
                }
            }
        }
    }
    let inputs_rec = inputs
        .iter()
        .map(|i| {
            let r = &i.result;
            InputRecord {
                label: i.label.clone(),
                path: i.path.display().to_string(),
                absolute_path: absolute(&i.path).display().to_string(),
                schema: r.schema.clone(),
                status: r.status,
                ccbench_version: r.provenance.ccbench_version.clone(),
                git_revision: r.provenance.git_revision.clone(),
                hostname: r.provenance.host.hostname.clone(),
                kernel_release: r.provenance.host.kernel_release.clone(),
                started_at: r.provenance.started_at.clone(),
                finished_at: r.provenance.finished_at.clone(),
                ccs: ccs_of(r),
                runs: r.runs.len(),
                params: r.params.clone(),
            }
        })
        .collect();
    let this = crate::provenance::of_this_host();
    let record = CompareResult {
        schema: SCHEMA.to_string(),
        provenance: CompareProvenance {
            ccbench_version: this.ccbench_version.clone(),
            git_revision: this.git_revision.clone(),
            command_line: this.command_line.clone(),
            created_at: now_rfc3339(),
        },
        inputs: inputs_rec,
        compared: opts.metric,
        metric: metric.clone(),
        seed,
        alpha,
        warnings: warnings.clone(),
        arms,
        summary: summary.clone(),
        comparisons: comparisons.clone(),
        rtt_comparisons: rtt_comparisons.clone(),
    };
    let combined = ExperimentResult {
        schema: SCHEMA.to_string(),
        status: Status::Complete,
        warnings,
        provenance: crate::provenance::finished(this),
        params: Params { ccs: labels, metric, expect: Vec::new(), ..first.params.clone() },
        sequential: None,
        summary,
        comparisons,
        rtt_comparisons,
        runs,
        expectations: Vec::new(),
    };
    Ok(Compared { record, combined })
}

/// The lines before the summary: each input with its provenance, then the first input's path
/// and workload, and what is compared.
pub fn header(c: &CompareResult) -> String {
    use std::fmt::Write as _;
    let mut out = String::new();
    let width = c.inputs.iter().map(|i| i.label.chars().count()).max().unwrap_or(0);
    for (n, i) in c.inputs.iter().enumerate() {
        let runs: Vec<String> = i.ccs.iter().map(|cc| format!("{cc} ×{}", i.params.runs_per_cc)).collect();
        let _ = writeln!(
            out,
            "{}{:<width$}  {} ({}; kernel {}, ccbench {} {}, {})",
            if n == 0 { "Inputs    " } else { "          " },
            i.label,
            i.path,
            runs.join(", "),
            i.kernel_release.as_deref().unwrap_or("unknown"),
            i.ccbench_version,
            i.git_revision,
            i.started_at
        );
    }
    if let Some(first) = c.inputs.first() {
        // The path lines of `run`'s header; the workload line without its run count.
        let run_header = crate::export::text::header(&first.params);
        for line in run_header.lines().take_while(|l| !l.starts_with("Workload")) {
            let _ = writeln!(out, "{line}");
        }
        let _ = writeln!(
            out,
            "Workload  {}{}",
            first.params.workload.describe_for(&first.params.ccs),
            if c.inputs.len() > 1 { " (as the first input's)" } else { "" }
        );
    }
    let direction = if c.compared == Metric::Rtt { "lower" } else { "higher" };
    let _ = writeln!(
        out,
        "Compared  {} ({direction} is better) over each arm's completed runs; permuted Brunner–Munzel test with Hodges–Lehmann ratios and the intervals that invert it, α = {}",
        c.metric,
        ccbench_stats::fmt_alpha(c.alpha)
    );
    out
}

#[cfg(test)]
mod tests {
    use super::inputs::{default_label, MAX_DIFFERENCES};
    use super::*;
    use crate::results::{CcShare, LookRecord, RunMetrics, Sequential};
    use crate::run_workload::{WorkloadResult, WorkloadSpec};
    use ccbench_emu::{DelaySummary, DirectionReport, PathReport, PathSpec, WindowReport};
    use ccbench_link::time::Duration;
    use ccbench_link::{Buffer, DelayHistogram, DirectionConfig, LinkStats, LossModel, Rate};
    use ccbench_workload::{Amount, BulkResult, BulkSpec, Direction, FlowResult, Side};
    use serde_json::Value;

    fn path(loss: f64) -> PathSpec {
        let dir = |ms: u64| DirectionConfig {
            rate: Rate::mbps(20),
            delay_ns: Duration::from_millis(ms),
            loss: if loss > 0.0 { LossModel::Bernoulli { p: loss } } else { LossModel::None },
            buffer: Buffer::Bytes(25_000),
            ..Default::default()
        };
        PathSpec {
            down: dir(5),
            up: dir(5),
            mtu: 1500,
            seed: 7,
            sample_interval_us: 10_000,
            offload: true,
            batch_us: 25,
            access: Vec::new(),
            tcp_ecn: Default::default(),
        }
    }

    fn workload(cc: &str) -> WorkloadSpec {
        WorkloadSpec::Bulk(BulkSpec {
            flows: 1,
            direction: Direction::Download,
            amount: Amount::Seconds(1.0),
            cc: cc.parse().unwrap(),
            mix: Vec::new(),
            port: 5201,
            sample_interval_us: 10_000,
            timeout_s: 600.0,
            quic_receiver_cc: None,
            knobs: Default::default(),
        })
    }

    /// A run as `run` records it, with awkward floats (thirds, tiny and huge values).
    fn run_record(index: u32, cc: &str, goodput_bps: f64) -> RunRecord {
        let raw =
            ccbench_kernel_tcp::RawTcpInfo { tcpi_rtt: 10_412, tcpi_snd_cwnd: 37, tcpi_total_retrans: 3, tcpi_pacing_rate: 2_500_000, ..Default::default() };
        let info = ccbench_kernel_tcp::TcpInfo::from_raw(&raw, std::mem::size_of::<ccbench_kernel_tcp::RawTcpInfo>());
        let mut h = DelayHistogram::new();
        for us in [3u64, 250, 1_000, 4_999, 12_345] {
            h.record(Duration::from_micros(us));
        }
        let stats = LinkStats { packets_in: 1700, bytes_in: 2_550_000, packets_out: 1690, queue_delay: h.clone(), ..Default::default() };
        let summary = DelaySummary::of(&h);
        let direction = |name: &str| DirectionReport {
            direction: name.to_string(),
            config: Some(path(0.02).down),
            stats: stats.clone(),
            queue_delay: summary.clone(),
            lateness: summary.clone(),
            utilization: 0.962_337_1,
            window: Some(WindowReport {
                from_us: 12,
                to_us: 1_000_012,
                stats: stats.clone(),
                queue_delay: summary.clone(),
                lateness: summary.clone(),
                utilization: 1.0 / 3.0,
            }),
            tun_tx_dropped: Some(0),
            cpu_s: 0.123_456_789,
            cpu_share: 0.1,
            ..Default::default()
        };
        let flow = FlowResult {
            id: 0,
            sender: Side::Server,
            sending: ccbench_workload::SenderRecord::tcp(cc.to_string(), cc.to_string(), Some(info)),
            start_s: 0.0,
            client_port: 40_000 + index as u16,
            bytes_received: (goodput_bps / 8.0) as u64,
            goodput_bps,
            completed: true,
            completion_time_s: None,
            error: None,
        };
        RunRecord {
            index,
            round: index / 2,
            cc: cc.into(),
            status: Status::Complete,
            error: None,
            started_at: "2026-11-23T06:00:00.123456789Z".to_string(),
            path_seed: u64::MAX - u64::from(index),
            netns_inodes: Some([4_026_532_000, 4_026_532_001]),
            host_cpu_steal_fraction: Some(1e-7),
            suspect: if index == 1 { vec!["emulator late".to_string()] } else { Vec::new() },
            far_samples_dropped: 0,
            metrics: Some(RunMetrics {
                score: Some(goodput_bps),
                unfinished: false,
                goodput_bps,
                completion_time_s: None,
                latency_p50_s: None,
                latency_p99_s: None,
                html_ttfb_s: None,
                all_completed: true,
                sender_rtt_p50_ms: Some(10.0 + f64::from(index) / 3.0),
                sender_rtt_p95_ms: Some(14.2),
                retrans_rate: 3.0 / 1700.0,
                retrans_segments: 3,
                drops_loss: Some(2),
                drops_buffer: Some(1),
                drops_aqm: None,
                ce_marks: None,
                queue_delay_p50_ms: Some(0.25),
                queue_delay_p95_ms: Some(4.999),
                utilization: Some(0.962_337_1),
                emulator_lateness_p99_us: Some(12.345),
                entry: Default::default(),
                path_figures_over_whole_life: false,
                shares: vec![CcShare { cc: cc.into(), flows: 1, goodput_bps, share: 1.0, sender_rtt_p50_ms: None, sender_rtt_p95_ms: None }],
                jain_index: None,
                jain_per_second: vec![0.999_999_999_9, 1.0 / 7.0],
                convergence_s: None,
                lock_on_bw_bps: None,
                limited_by: None,
                mechanism: Default::default(),
                trace: Vec::new(),
            }),
            workload: Some(WorkloadResult::Bulk(BulkResult { start_us: 1_234, elapsed_s: 1.000_3, goodput_bps, interrupted: false, flows: vec![flow] })),
            path: Some(PathReport { down: direction("down"), up: direction("up") }),
            series: Some(crate::series::SeriesFiles {
                tcp: format!("series/run-{index:03}/tcp.csv.gz"),
                goodput: format!("series/run-{index:03}/goodput.csv.gz"),
                link_down: Some(format!("series/run-{index:03}/link-down.csv.gz")),
                link_up: Some(format!("series/run-{index:03}/link-up.csv.gz")),
            }),
        }
    }

    /// A result of the algorithms `arms` (name, goodputs of its runs), interleaved as `run` does.
    fn result(arms: &[(&str, &[f64])], loss: f64, metric: &str) -> ExperimentResult {
        let ccs: Vec<Cc> = arms.iter().map(|(cc, _)| Cc::new(cc)).collect();
        let mut runs = Vec::new();
        let most = arms.iter().map(|(_, xs)| xs.len()).max().unwrap_or(0);
        for round in 0..most {
            for (cc, xs) in arms {
                if let Some(x) = xs.get(round) {
                    runs.push(run_record(runs.len() as u32, cc, *x));
                }
            }
        }
        let params = Params {
            ccs: ccs.iter().map(|c| c.as_str().into()).collect(),
            runs_per_cc: most as u32,
            runs_auto: false,
            seed: 42,
            alpha: 0.05,
            min_effect: 0.0,
            path: Some(path(loss)),
            remote: None,
            workload: workload(&ccs[0]),
            metric: metric.to_string(),
            expect: Vec::new(),
        };
        let (summary, comparisons) = analyse(&ccs, &runs, ccbench_stats::Criteria::at(0.05));
        let rtt_comparisons = compare_rtt(&ccs, &runs, ccbench_stats::Criteria::at(0.05));
        let mut provenance = crate::provenance::finished(crate::provenance::of_this_host());
        provenance.host.kernel_release = Some("6.8.0-49-generic".to_string());
        ExperimentResult {
            schema: crate::results::SCHEMA.to_string(),
            status: Status::Complete,
            warnings: vec!["a warning".to_string()],
            provenance,
            params,
            sequential: Some(Sequential {
                design: None,
                planned: Vec::new(),
                looks: vec![LookRecord { runs_per_cc: 3, alpha: 0.0123, decided: false, spent: None }],
                decided_after_runs: None,
            }),
            summary,
            comparisons,
            rtt_comparisons,
            runs,
            expectations: Vec::new(),
        }
    }

    fn input(label: &str, r: ExperimentResult) -> Input {
        Input { label: label.to_string(), path: PathBuf::from(format!("/results/{label}/result.json")), result: r }
    }

    const FAST: &[f64] = &[19.1e6, 19.3e6, 19.0e6, 19.2e6, 19.25e6];
    const SLOW: &[f64] = &[6.1e6, 5.2e6, 7.3e6, 6.6e6, 5.9e6];

    #[test]
    fn result_json_round_trips_identically() {
        let r = result(&[("bbr", FAST), ("cubic", SLOW)], 0.02, "goodput");
        assert_eq!(r.comparisons.len(), 1, "a real-looking result has a verdict");
        let first = serde_json::to_string(&r).unwrap();
        let back: ExperimentResult = serde_json::from_str(&first).unwrap();
        assert_eq!(serde_json::to_string(&back).unwrap(), first);
        // Through the reader `compare` uses, too.
        let again = parse("result.json", &first).unwrap();
        assert_eq!(serde_json::to_string(&again).unwrap(), first);
    }

    #[test]
    fn one_algorithm_per_input_is_labelled_by_the_input() {
        let inputs = [input("clean", result(&[("cubic", FAST)], 0.0, "goodput")), input("lossy", result(&[("cubic", SLOW)], 0.02, "goodput"))];
        let arms = arms(&inputs, None).unwrap();
        let labels: Vec<&str> = arms.iter().map(|a| a.label.as_str()).collect();
        assert_eq!(labels, ["clean", "lossy"]);
        assert_eq!((arms[1].input, arms[1].cc.as_str(), arms[1].runs), (1, "cubic", 5));
    }

    #[test]
    fn several_algorithms_make_label_cc_arms_and_cc_picks_one() {
        let inputs = [
            input("old-kernel", result(&[("bbr", FAST), ("cubic", SLOW)], 0.0, "goodput")),
            input("new-kernel", result(&[("bbr", SLOW), ("cubic", FAST)], 0.0, "goodput")),
        ];
        let labels = |arms: Vec<Arm>| arms.into_iter().map(|a| a.label).collect::<Vec<_>>();
        assert_eq!(labels(arms(&inputs, None).unwrap()), ["old-kernel:bbr", "old-kernel:cubic", "new-kernel:bbr", "new-kernel:cubic"]);
        assert_eq!(labels(arms(&inputs, Some("cubic")).unwrap()), ["old-kernel", "new-kernel"]);
        // One input with one algorithm beside one with two: every arm names its algorithm.
        let mixed = [input("a", result(&[("bbr", FAST)], 0.0, "goodput")), input("b", result(&[("bbr", SLOW), ("cubic", FAST)], 0.0, "goodput"))];
        assert_eq!(labels(arms(&mixed, None).unwrap()), ["a:bbr", "b:bbr", "b:cubic"]);
        // A single input with two algorithms is two arms.
        assert_eq!(labels(arms(&inputs[..1], None).unwrap()), ["old-kernel:bbr", "old-kernel:cubic"]);
    }

    #[test]
    fn labels_come_from_the_argument_or_the_directory() {
        assert_eq!(InputArg::parse("clean=A/result.json"), InputArg { label: Some("clean".into()), path: "A/result.json".into() });
        assert_eq!(InputArg::parse("A/result.json"), InputArg { label: None, path: "A/result.json".into() });
        assert_eq!(InputArg::parse("runs/x=1/result.json"), InputArg { label: None, path: "runs/x=1/result.json".into() }, "a path with = in a directory");
        assert_eq!(default_label(Path::new("/results/20261123-060000-cubic/result.json")), "20261123-060000-cubic");
        let cwd = std::env::current_dir().unwrap();
        assert_eq!(default_label(Path::new("result.json")), cwd.file_name().unwrap().to_string_lossy());
    }

    /// Issue 16 §5: the summary said "N looks in all spend α = 0.05" when only the looks taken
    /// were spent, and printed a look's α as "0.0000".
    #[test]
    fn the_sequential_summary_says_what_was_spent() {
        let mut r = result(&[("bbr", FAST), ("cubic", SLOW)], 0.0, "goodput");
        let planned = ccbench_stats::sequential::looks(0.05, 20, 2);
        let record = |l: &ccbench_stats::sequential::Look, decided| LookRecord { runs_per_cc: l.runs as u32, alpha: l.alpha, decided, spent: Some(l.spent) };
        r.sequential = Some(Sequential {
            design: Some("lan_demets_pocock".into()),
            planned: planned.clone(),
            looks: vec![record(&planned[0], true)],
            decided_after_runs: Some(5),
        });
        let text = crate::export::text::summary(&r, None);
        assert!(
            text.contains("(--runs auto: decided after 5 runs per algorithm, at look 1 of 6 planned with α = 0.018 for that look; the looks taken spent α = 0.018 of 0.05)"),
            "{text}"
        );
        r.sequential = Some(Sequential {
            design: Some("lan_demets_pocock".into()),
            planned: planned.clone(),
            looks: planned.iter().map(|l| record(l, false)).collect(),
            decided_after_runs: None,
        });
        let text = crate::export::text::summary(&r, None);
        assert!(
            text.contains(
                "(--runs auto: undecided after 20 runs per algorithm, the maximum (--max-runs); the 6 looks spent α = 0.05 in all, the last at α = 0.005)"
            ),
            "{text}"
        );
        assert!(!text.contains("0.0000"), "{text}");
        // A look at α 6.1e-7 prints its digits.
        r.sequential.as_mut().unwrap().looks.last_mut().unwrap().alpha = 6.1e-7;
        assert!(crate::export::text::summary(&r, None).contains("the last at α = 0.00000061)"));
    }

    /// Issue 16: results written before its fields existed (no `min_effect`, no missing-run
    /// counts, a bootstrap `ratio_ci` without `method`, no sequential design) still read and
    /// compare.
    #[test]
    fn results_from_before_issue_16_still_read() {
        let r = serde_json::to_string(&result(&[("bbr", FAST), ("cubic", SLOW)], 0.0, "goodput")).unwrap();
        let mut old: Value = serde_json::from_str(&r).unwrap();
        old["params"].as_object_mut().unwrap().remove("min_effect");
        for key in ["design", "planned"] {
            old["sequential"].as_object_mut().unwrap().remove(key);
        }
        for list in ["comparisons", "rtt_comparisons"] {
            for c in old[list].as_array_mut().unwrap() {
                let c = c.as_object_mut().unwrap();
                for key in ["missing_a", "missing_b", "min_effect", "look"] {
                    c.remove(key);
                }
                c["ratio_ci"].as_object_mut().unwrap().remove("method");
            }
        }
        for s in old["summary"].as_array_mut().unwrap() {
            s.as_object_mut().unwrap().remove("runs_without_score");
        }
        let text = old.to_string();
        assert!(!text.contains("min_effect") && !text.contains("hodges_lehmann"), "every new field is gone");
        let back = parse("old/result.json", &text).unwrap();
        assert_eq!(back.params.min_effect, 0.0);
        assert_eq!(back.comparisons[0].ratio_ci.unwrap().method, ccbench_stats::CiMethod::Bootstrap);
        let c = compare(&[input("old", back)], &Options::default(), &std::env::temp_dir()).unwrap();
        assert_eq!(c.record.comparisons[0].better.as_deref(), Some("old:bbr"));
    }

    #[test]
    fn refusals_name_the_file_and_what_is_wrong() {
        let r = serde_json::to_string(&result(&[("cubic", FAST)], 0.0, "goodput")).unwrap();
        let v1 = r.replacen("ccbench.result.v3", "ccbench.result.v1", 1);
        let e = parse("B/result.json", &v1).unwrap_err();
        assert_eq!(e, Refusal::Schema { path: "B/result.json".into(), found: "ccbench.result.v1".into() });
        assert_eq!(e.to_string(), "B/result.json has schema ccbench.result.v1, which this ccbench cannot read (it reads ccbench.result.v3, ccbench.result.v2)");
        assert!(matches!(parse("x.json", "{\"runs\": []}"), Err(Refusal::Schema { found, .. }) if found.contains("no \"schema\"")));
        assert!(matches!(parse("x.json", "<html>"), Err(Refusal::NotJson { .. })));
        assert!(matches!(parse("x.json", "{\"schema\": \"ccbench.result.v3\"}"), Err(Refusal::Invalid { reason, .. }) if reason.contains("missing field")));
        // A v2 file (no entry figures, path figures never null) still reads.
        let mut v2: Value = serde_json::from_str(&r.replacen("ccbench.result.v3", "ccbench.result.v2", 1)).unwrap();
        for run in v2["runs"].as_array_mut().unwrap() {
            if let Some(m) = run["metrics"].as_object_mut() {
                m.remove("entry");
            }
        }
        assert_eq!(parse("A/result.json", &v2.to_string()).unwrap().schema, "ccbench.result.v2");
        let missing = load(&InputArg::parse("/nonexistent/ccbench/result.json")).unwrap_err();
        assert!(matches!(&missing, Refusal::Unreadable { path, .. } if path == "/nonexistent/ccbench/result.json"), "{missing}");

        let pages = [input("a", result(&[("cubic", FAST)], 0.0, "goodput")), input("b", result(&[("cubic", SLOW)], 0.0, "page-load speed (1 / load time)"))];
        let e = check(&pages).unwrap_err();
        assert!(matches!(e, Refusal::Metric { .. }), "{e}");
        assert!(
            e.to_string().starts_with("/results/b/result.json measures \"page-load speed (1 / load time)\" but /results/a/result.json measures \"goodput\""),
            "{e}"
        );

        let inputs = [input("a", result(&[("cubic", FAST)], 0.0, "goodput")), input("b", result(&[("bbr", SLOW), ("reno", SLOW)], 0.0, "goodput"))];
        let e = arms(&inputs, Some("cubic")).unwrap_err();
        assert_eq!(e.to_string(), "/results/b/result.json has no runs of cubic (it has bbr, reno)");

        let twice = [input("a", result(&[("cubic", FAST)], 0.0, "goodput")), input("a", result(&[("cubic", FAST)], 0.0, "goodput"))];
        assert_eq!(arms(&twice, None).unwrap_err(), Refusal::DuplicateLabel { label: "a".into() });
        assert!(matches!(arms(&twice[..1], None), Err(Refusal::TooFewArms { arms: 1, .. })));
    }

    #[test]
    fn different_paths_are_warned_of_not_refused() {
        let same = [input("a", result(&[("cubic", FAST)], 0.02, "goodput")), input("b", result(&[("cubic", SLOW)], 0.02, "goodput"))];
        assert_eq!(check(&same).unwrap(), Vec::<String>::new());
        let twin = [input("clean", result(&[("cubic", FAST)], 0.0, "goodput")), input("lossy", result(&[("cubic", SLOW)], 0.02, "goodput"))];
        let w = check(&twin).unwrap();
        assert_eq!(
            w[1..],
            [
                "  path.down.loss.kind: clean none, lossy bernoulli",
                "  path.down.loss.p: clean –, lossy 0.02",
                "  path.up.loss.kind: clean none, lossy bernoulli",
                "  path.up.loss.p: clean –, lossy 0.02"
            ]
        );
        assert!(w[0].starts_with("the inputs differ in 4 path or workload parameter(s)"), "{w:?}");
        assert!(w.contains(&"  path.down.loss.kind: clean none, lossy bernoulli".to_string()), "{w:?}");
        assert!(w.contains(&"  path.down.loss.p: clean –, lossy 0.02".to_string()), "{w:?}");
        // A long list is cut short; many differences are counted, the first few listed.
        let mut other = result(&[("cubic", SLOW)], 0.02, "goodput");
        let mut p = PathSpec { mtu: 9000, sample_interval_us: 1, batch_us: 0, offload: false, ..path(0.02) };
        for d in [&mut p.down, &mut p.up] {
            *d = DirectionConfig { rate: Rate::mbps(1), delay_ns: Duration::from_millis(1), buffer: Buffer::Bytes(1), ..d.clone() };
        }
        p.down.schedule = (0..40).map(|i| ccbench_link::ScheduledChange { at_ns: ccbench_link::time::Instant::from_nanos(i), ..Default::default() }).collect();
        other.params.path = Some(p);
        let w = check(&[input("a", result(&[("cubic", FAST)], 0.0, "goodput")), input("b", other)]).unwrap();
        assert!(w[0].starts_with("the inputs differ in 15 path or workload parameter(s)"), "{w:?}");
        assert_eq!(w.len(), 1 + MAX_DIFFERENCES + 1, "{w:?}");
        let schedule = w.iter().find(|l| l.starts_with("  path.down.schedule: a [], b [{")).expect("the schedule, as one value");
        assert!(schedule.ends_with('…') && schedule.chars().count() < 100, "{schedule}");
        assert_eq!(w.last().unwrap(), "  … and 3 more (each input's params are in compare.json)");
    }

    #[test]
    fn arms_are_compared_like_algorithms_with_the_first_inputs_seed() {
        let out = std::env::temp_dir();
        let inputs = [input("clean", result(&[("cubic", FAST)], 0.0, "goodput")), input("lossy", result(&[("cubic", SLOW)], 0.02, "goodput"))];
        let c = compare(&inputs, &Options::default(), &out).unwrap();
        let v = &c.record.comparisons;
        assert_eq!(v.len(), 1);
        assert_eq!((v[0].a.as_str(), v[0].b.as_str(), v[0].better.as_deref()), ("clean", "lossy", Some("clean")));
        assert_eq!(c.record.seed, 42);
        assert_eq!(c.record.summary.iter().map(|s| s.cc.as_str()).collect::<Vec<_>>(), ["clean", "lossy"]);
        // The same statistics as `run` computes for two algorithms with these runs.
        let direct =
            ccbench_stats::best_against_rest(&[("clean", FAST), ("lossy", SLOW)], ccbench_stats::BetterIs::Higher, ccbench_stats::Criteria::at(0.05), 2);
        assert_eq!(v, &direct);
        // The runs, relabelled, with series paths that lead from `out` to the input's files.
        assert_eq!(c.combined.runs.len(), 10);
        assert!(c.combined.runs.iter().all(|r| r.cc == "clean" || r.cc == "lossy"));
        let s = c.combined.runs[0].series.as_ref().unwrap();
        let to_input = relative(&absolute(&out), Path::new("/results/clean"));
        assert!(to_input.starts_with(".."), "{to_input:?}");
        assert_eq!(s.tcp, format!("{}/series/run-000/tcp.csv.gz", to_input.display()));
        let text = crate::export::text::summary(&c.combined, None);
        assert!(text.contains("clean: 3.") && text.contains("× the goodput of lossy"), "{text}");

        // A result against itself: no difference.
        let same = [input("x", result(&[("cubic", FAST)], 0.0, "goodput")), input("y", result(&[("cubic", FAST)], 0.0, "goodput"))];
        let c = compare(&same, &Options::default(), &out).unwrap();
        assert_eq!(c.record.comparisons[0].outcome, ccbench_stats::Outcome::NoDifference);
        let text = crate::export::text::summary(&c.combined, None);
        assert!(text.contains("no significant difference in goodput between y and x"), "{text}");

        // RTT as the metric: lower is better, and no second RTT verdict.
        let c = compare(&inputs, &Options { cc: None, metric: Metric::Rtt }, &out).unwrap();
        assert_eq!(c.record.comparisons[0].better_is, ccbench_stats::BetterIs::Lower);
        assert!(c.record.rtt_comparisons.is_empty());
        assert_eq!(c.combined.params.metric, "median sender RTT");
    }

    /// Issue 16 §2: `compare` judged `--runs auto` results again at α = 0.05 without saying
    /// so. Alone, one is judged at its last look's level; beside another, it is refused.
    #[test]
    fn a_runs_auto_result_keeps_its_own_design() {
        let out = std::env::temp_dir();
        // 0.0123 is the level of the last look the result took (see `result`).
        let mut auto = result(&[("bbr", FAST), ("cubic", &[19.0e6, 19.05e6, 18.9e6, 18.95e6, 19.1e6])], 0.0, "goodput");
        auto.params.runs_auto = true;
        let c = compare(&[input("auto", auto.clone())], &Options::default(), &out).unwrap();
        assert_eq!(c.record.alpha, 0.0123);
        assert!(c.record.comparisons.iter().all(|x| x.alpha == 0.0123), "{:?}", c.record.comparisons);
        let fixed = input("fixed", result(&[("bbr", SLOW)], 0.0, "goodput"));
        let Err(e) = compare(&[input("auto", auto), fixed], &Options { cc: Some("bbr".into()), metric: Metric::Score }, &out) else {
            panic!("a --runs auto result beside another must be refused")
        };
        let text = e.to_string();
        assert!(text.starts_with("/results/auto/result.json is a --runs auto result: its run count depended on its own verdict"), "{text}");
        assert!(!text.contains('\n'));
    }

    /// Issue 28 §4: `compare` on a `--runs auto` result that ended undecided printed "no
    /// significant difference" with no look; it says "undecided", at its look, as `run` did.
    #[test]
    fn an_undecided_runs_auto_result_stays_undecided() {
        let out = std::env::temp_dir();
        let close: &[f64] = &[20.0e6, 20.3e6, 19.8e6, 20.1e6, 19.9e6];
        let mut auto = result(&[("bbr", close), ("cubic", &[20.1e6, 19.7e6, 20.2e6, 19.95e6, 20.05e6])], 0.0, "goodput");
        auto.params.runs_auto = true;
        let c = compare(&[input("auto", auto.clone())], &Options::default(), &out).unwrap();
        let v = &c.record.comparisons[0];
        assert_eq!(v.outcome, ccbench_stats::Outcome::Undecided, "{v:?}");
        let s = v.sentence("goodput");
        assert!(s.contains("at look 1 of 1") && !s.contains("no significant difference"), "{s}");
        // One that decided keeps its verdict.
        auto.sequential.as_mut().unwrap().decided_after_runs = Some(5);
        let c = compare(&[input("auto", auto)], &Options::default(), &out).unwrap();
        assert_ne!(c.record.comparisons[0].outcome, ccbench_stats::Outcome::Undecided);
    }

    /// Issue 28 §5: an interrupted `--runs auto` said "undecided after 5 runs per algorithm,
    /// the maximum (--max-runs)" with --max-runs 20: it says it was interrupted, at which look.
    #[test]
    fn an_interrupted_runs_auto_says_so() {
        let mut r = result(&[("bbr", FAST), ("cubic", SLOW)], 0.0, "goodput");
        let planned = ccbench_stats::sequential::looks(0.05, 20, 2);
        let l = &planned[0];
        r.status = Status::Interrupted;
        r.sequential = Some(Sequential {
            design: Some("lan_demets_pocock".into()),
            planned: planned.clone(),
            looks: vec![LookRecord { runs_per_cc: l.runs as u32, alpha: l.alpha, decided: false, spent: Some(l.spent) }],
            decided_after_runs: None,
        });
        let text = crate::export::text::summary(&r, None);
        assert!(
            text.contains("(--runs auto: interrupted after 5 runs per algorithm, at look 1 of 6 planned (α = 0.018 for that look), before --max-runs; undecided; the looks taken spent α = 0.018 of 0.05)"),
            "{text}"
        );
        assert!(!text.contains("the maximum (--max-runs)"), "{text}");
    }

    /// Issue 28 §6: runs that cannot change the verdict are not run, and the summary says so
    /// rather than "the maximum" or "interrupted": 2 algorithms at --max-runs 5 stop after the
    /// look at 4; a result that ran to the end says "the maximum" as before.
    #[test]
    fn runs_that_could_not_change_the_verdict_are_named() {
        let mut r = result(&[("bbr", FAST), ("cubic", SLOW)], 0.0, "goodput");
        let planned = ccbench_stats::sequential::looks(0.05, 5, 2);
        let l = &planned[0];
        r.sequential = Some(Sequential {
            design: Some("lan_demets_pocock".into()),
            planned: planned.clone(),
            looks: vec![LookRecord { runs_per_cc: l.runs as u32, alpha: l.alpha, decided: false, spent: Some(l.spent) }],
            decided_after_runs: None,
        });
        let text = crate::export::text::summary(&r, None);
        assert!(
            text.contains("(--runs auto: undecided after 4 runs per algorithm; run 5 of --max-runs 5 could not change the verdict (no later look can decide), so it was not run;"),
            "{text}"
        );
        assert!(!text.contains("interrupted") && !text.contains("the maximum (--max-runs)"), "{text}");
        // Interrupted at that look, it says so.
        r.status = Status::Interrupted;
        assert!(crate::export::text::summary(&r, None).contains("interrupted after 4 runs"));
        // One contender's expectations at most 20: depth 5 at 18 and at 20.
        r.status = Status::Complete;
        let planned = ccbench_stats::sequential::expectation_looks(0.05, 20);
        let taken: Vec<LookRecord> = planned[..planned.len() - 1]
            .iter()
            .map(|l| LookRecord { runs_per_cc: l.runs as u32, alpha: l.alpha, decided: false, spent: Some(l.spent) })
            .collect();
        r.sequential =
            Some(Sequential { design: Some("lan_demets_pocock_exact_sign".into()), planned: planned.clone(), looks: taken, decided_after_runs: None });
        let text = crate::export::text::summary(&r, None);
        assert!(text.contains("undecided after 18 runs per algorithm; runs 19–20 of --max-runs 20 could not change the verdict"), "{text}");
    }

    #[test]
    fn relative_paths_climb_out_of_the_output_directory() {
        assert_eq!(relative(Path::new("/r/cmp"), Path::new("/r/A")), PathBuf::from("../A"));
        assert_eq!(relative(Path::new("/r"), Path::new("/r/A")), PathBuf::from("A"));
        assert_eq!(relative(Path::new("/r"), Path::new("/r")), PathBuf::from("."));
        assert_eq!(relative(Path::new("/x/y/z"), Path::new("/r/A")), PathBuf::from("../../../r/A"));
    }

    /// A server's words in a run (its error, its read-back) reach runs.csv without a raw ESC,
    /// CR or LF inside a cell: one row per line, whatever the text was.
    #[test]
    fn runs_csv_holds_no_raw_escape_or_line_break() {
        let mut r = result(&[("cubic", FAST), ("bbr", FAST)], 0.0, "goodput");
        r.runs[0].error = Some("refused by ccbench serve: \\u{1b}]0;title\\u{7} raw\u{1b}[2J\r\nccbench: forged".to_string());
        r.runs[1].suspect = vec!["line\nbreak\u{202e}".to_string()];
        let csv = crate::export::csv::to_string(&[crate::export::csv::Experiment { condition: None, dir: ".", result: &r }]).unwrap();
        assert!(!csv.contains('\u{1b}') && !csv.contains('\r') && !csv.contains('\u{202e}'), "{csv}");
        assert_eq!(csv.lines().count(), r.runs.len() + 1, "one line per run and the header");
        assert!(csv.contains("raw\\u{1b}[2J\\u{d}\\u{a}ccbench: forged"), "{csv}");
        assert!(csv.contains(": \\u{1b}]0;title\\u{7} raw"), "text escaped before stays as it was: {csv}");
    }
}
