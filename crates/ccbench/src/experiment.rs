//! An experiment: every algorithm × `runs` repetitions, interleaved round by round in an order
//! shuffled per round, so slow drift of the machine hits every arm alike.

use std::fmt;
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Instant;

use ccbench_emu::{EmulatedPath, PathSpec, SERVER_ADDR};
use ccbench_stats::{Criteria, LookContext};
use ccbench_workload::Algorithm;
use rand::seq::SliceRandom;
use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;

use crate::analysis::{analyse, compare_rtt};
use crate::provenance::{now_rfc3339, Provenance, RemoteFacts};
use crate::results::{ExperimentResult, LookRecord, Params, RunRecord, Sequential, Status};
use crate::run_workload::{RunWorkload, WorkloadResult, WorkloadSpec};
use crate::series::RunSeries;

/// The level every verdict is judged at (result.json's `params.alpha`).
pub const ALPHA: f64 = 0.05;

/// How many runs each algorithm gets.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Runs {
    /// Exactly this many.
    Fixed(u32),
    /// Until the verdict is decided (a sequential design that spends α over the looks), at
    /// most `max`.
    Auto {
        /// The runs per algorithm at which it stops, decided or not.
        max: u32,
    },
}

impl Runs {
    /// The most runs per algorithm this plan can take.
    pub fn max(self) -> u32 {
        match self {
            Runs::Fixed(n) | Runs::Auto { max: n } => n,
        }
    }
}

/// What the runs compare: an algorithm, or a mix of them sharing the bottleneck (whose
/// algorithms are in the workload), named by the mix as written.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Contender {
    /// One algorithm, every flow of the workload under it.
    Algorithm(Algorithm),
    /// A mix (`--workload mix`), named as written.
    Mix(String),
}

impl Contender {
    /// The algorithm of every run of this contender; `None` for a mix.
    pub fn algorithm(&self) -> Option<&Algorithm> {
        match self {
            Contender::Algorithm(a) => Some(a),
            Contender::Mix(_) => None,
        }
    }

    /// The workload of one of its runs (a mix's algorithms are in the workload already).
    pub fn workload(&self, workload: &WorkloadSpec) -> WorkloadSpec {
        match self {
            Contender::Algorithm(cc) => workload.with_cc(cc),
            Contender::Mix(_) => workload.clone(),
        }
    }

    /// Whether any of its flows may run over QUIC.
    pub fn may_run_quic(&self, workload: &WorkloadSpec) -> bool {
        match self {
            Contender::Algorithm(a) => a.is_quic(),
            Contender::Mix(_) => matches!(workload, WorkloadSpec::Bulk(b) if b.mix.iter().any(|f| f.cc.is_quic())),
        }
    }
}

/// Its name in the results: the algorithm or the mix as written.
impl Contender {
    /// As result.json keys its runs: typed, written as displayed.
    pub fn cc(&self) -> ccbench_model::workload::Cc {
        match self {
            Contender::Algorithm(a) => a.into(),
            Contender::Mix(label) => ccbench_model::workload::Cc::mix(label),
        }
    }
}

impl fmt::Display for Contender {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Contender::Algorithm(a) => a.fmt(f),
            Contender::Mix(label) => f.write_str(label),
        }
    }
}

/// Everything one experiment needs: what the command line (or a preset, or a sweep's grid
/// point) resolved to.
pub struct Plan {
    /// What is compared, each run once per round.
    pub ccs: Vec<Contender>,
    /// How many runs each contender gets.
    pub runs: Runs,
    /// Seeds the schedule's order and every run's path randomness (loss, jitter), so a plan
    /// replays.
    pub seed: u64,
    /// The emulated path each run starts, unless `remote` is given.
    pub path: PathSpec,
    /// What each run carries.
    pub workload: WorkloadSpec,
    /// A real path instead: the `ccbench serve` that runs the far end (`--remote`).
    pub remote: Option<Remote>,
    /// `--min-effect`: the smallest relative difference the verdict calls a win.
    pub min_effect: f64,
    /// What the plan changed from the flags, said in one line each before the runs.
    pub notes: Vec<String>,
    /// `--expect`: judged per algorithm over the runs; with `--runs auto` the runs go on until
    /// each is decided too.
    pub expect: Vec<crate::expect::Expectation>,
}

/// A `ccbench serve` to run against, as the pre-flight found it.
#[derive(Clone, Debug)]
pub struct Remote {
    /// Its control address, resolved.
    pub addr: std::net::SocketAddr,
    /// As the user wrote it (`HOST:PORT`).
    pub label: String,
    /// The shared secret both ends authenticate with.
    pub secret: ccbench_remote::Secret,
    /// What the server said of its host (kernel, algorithms), recorded in the provenance.
    pub facts: ccbench_remote::ServerFacts,
    /// What the server accepts; the plan was checked against them.
    pub limits: ccbench_remote::Limits,
    /// The control connection's smoothed RTT at the pre-flight, as the kernel saw it.
    pub rtt_us_at_start: Option<u32>,
}

/// What `result.json` calls the `--runs auto` design.
pub(crate) const SEQUENTIAL_DESIGN: &str = "lan_demets_pocock";
/// The same spending for one contender judged by its expectations alone, with exact sign-test
/// boundaries (`ccbench_stats::sequential::expectation_looks`).
pub(crate) const EXPECTATION_DESIGN: &str = "lan_demets_pocock_exact_sign";

impl Plan {
    /// What this plan's verdicts are judged by, at level `alpha`.
    pub(crate) fn criteria(&self, alpha: f64) -> Criteria {
        Criteria { alpha, min_effect: self.min_effect }
    }

    /// The contenders' names, as the results key them.
    pub fn names(&self) -> Vec<ccbench_model::workload::Cc> {
        self.ccs.iter().map(Contender::cc).collect()
    }

    /// The parameters as result.json records them.
    pub fn params(&self) -> Params {
        Params {
            ccs: self.ccs.iter().map(Contender::cc).collect(),
            runs_per_cc: self.runs.max(),
            runs_auto: matches!(self.runs, Runs::Auto { .. }),
            seed: self.seed,
            alpha: ALPHA,
            min_effect: self.min_effect,
            path: self.remote.is_none().then(|| self.path.clone()),
            remote: self.remote.as_ref().map(|r| r.label.clone()),
            workload: self.workload.clone(),
            metric: self.workload.metric().to_string(),
            expect: self.expect.clone(),
        }
    }

    /// Who the expectations are judged for.
    pub fn contenders(&self) -> crate::judge::Contenders {
        crate::judge::contenders(&self.ccs.iter().map(Contender::cc).collect::<Vec<_>>(), &self.workload)
    }

    /// What a relative threshold is relative to (nothing over a real path).
    pub fn path_figures(&self) -> crate::expect::PathFigures {
        crate::judge::path_figures(self.remote.is_none().then_some(&self.path), self.workload.data_direction())
    }

    /// The expectations judged over `records` at `alpha`.
    pub(crate) fn judge(&self, records: &[RunRecord], alpha: f64) -> Vec<crate::expect::ExpectationResult> {
        crate::judge::judge_all(&self.expect, &self.contenders(), records, self.path_figures(), alpha)
    }
}

/// One scheduled run.
#[derive(Clone, Debug, PartialEq)]
pub struct Slot {
    /// Which round (0-based): every contender runs once per round.
    pub round: u32,
    /// Who runs.
    pub cc: Contender,
}

/// A B A B …, each round in its own seeded random order.
pub fn schedule(ccs: &[Contender], runs: u32, seed: u64) -> Vec<Slot> {
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let mut slots = Vec::new();
    for round in 0..runs {
        let mut order: Vec<&Contender> = ccs.iter().collect();
        order.shuffle(&mut rng);
        slots.extend(order.into_iter().map(|cc| Slot { round, cc: cc.clone() }));
    }
    slots
}

/// Progress callbacks, so the terminal layer decides what to print.
pub trait Observer {
    /// Run `index` of `total` (0-based) is about to start.
    fn run_started(&mut self, index: usize, total: usize, slot: &Slot);
    /// Run `index` of `total` ended, as `record` says (completed or not).
    fn run_finished(&mut self, index: usize, total: usize, record: &RunRecord);
}

/// Runs the plan. Each run's time series go to files under `out/series/run-NNN/` as they are
/// taken; the result names them.
pub fn execute(plan: &Plan, out: &Path, stop: &AtomicBool, observer: &mut dyn Observer) -> ExperimentResult {
    let mut e = Execution::new(plan, out);
    while e.step(stop, observer) {}
    e.finish()
}

/// Several experiments at once, run by run in turn (the first's first run, the second's first
/// run, the first's second run, …), so that whatever drifts over time (the machine's load, a
/// real path's cross traffic) meets each alike. Each keeps its own schedule, verdict and
/// `--runs auto` looks; one that fails or is decided stops alone, the others go on.
pub fn execute_interleaved(experiments: &[(&Plan, &Path)], stop: &AtomicBool, observers: &mut [&mut dyn Observer]) -> Vec<ExperimentResult> {
    let mut all: Vec<(Execution, bool)> = experiments.iter().map(|(plan, out)| (Execution::new(plan, out), true)).collect();
    while all.iter().any(|(_, going)| *going) {
        for ((e, going), observer) in all.iter_mut().zip(observers.iter_mut()) {
            if *going {
                *going = e.step(stop, *observer);
            }
        }
    }
    all.into_iter().map(|(e, _)| e.finish()).collect()
}

/// One experiment under way: its schedule, its runs so far, and whether it goes on.
struct Execution<'a> {
    plan: &'a Plan,
    out: &'a Path,
    provenance: Provenance,
    slots: Vec<Slot>,
    looks: Vec<ccbench_stats::sequential::Look>,
    /// The first run per algorithm after the last look that can decide, when later runs could
    /// not change the verdict (`sequential::idle_tail`): the experiment ends before it.
    idle_from: Option<usize>,
    /// The last look taken (index into `looks`).
    look: Option<usize>,
    sequential: Option<Sequential>,
    records: Vec<RunRecord>,
    status: Status,
    alpha: f64,
    next: usize,
}

impl<'a> Execution<'a> {
    fn new(plan: &'a Plan, out: &'a Path) -> Self {
        let provenance = match &plan.remote {
            Some(r) => crate::provenance::of_this_host().over_real_path(RemoteFacts {
                address: r.label.clone(),
                facts: r.facts.clone(),
                limits: r.limits,
                control_rtt_us_at_start: r.rtt_us_at_start,
            }),
            None => crate::provenance::of_this_host(),
        };
        // One contender has only its expectations to decide: looks where a median's bound can.
        let (looks, idle) = match plan.runs {
            Runs::Auto { max } => ccbench_stats::sequential::design_for(ALPHA, max as usize, plan.ccs.len()),
            Runs::Fixed(_) => (Vec::new(), None),
        };
        Execution {
            plan,
            out,
            provenance,
            slots: schedule(&plan.ccs, plan.runs.max(), plan.seed),
            sequential: matches!(plan.runs, Runs::Auto { .. }).then(|| Sequential {
                design: Some(if plan.ccs.len() == 1 { EXPECTATION_DESIGN } else { SEQUENTIAL_DESIGN }.to_string()),
                planned: looks.clone(),
                looks: Vec::new(),
                decided_after_runs: None,
            }),
            alpha: looks.last().map_or(ALPHA, |l| l.alpha),
            looks,
            idle_from: idle.map(|(first, _)| first),
            look: None,
            records: Vec::new(),
            status: Status::Complete,
            next: 0,
        }
    }

    /// Runs the next slot; false once the experiment is over (every slot run, stopped, failed
    /// or decided).
    fn step(&mut self, stop: &AtomicBool, observer: &mut dyn Observer) -> bool {
        let plan = self.plan;
        let index = self.next;
        let Some(slot) = self.slots.get(index) else { return false };
        if stop.load(Ordering::SeqCst) {
            self.status = Status::Interrupted;
            return false;
        }
        self.next += 1;
        observer.run_started(index, self.slots.len(), slot);
        let record = run_one(plan, self.out, index as u32, slot, stop);
        observer.run_finished(index, self.slots.len(), &record);
        let failed = record.status == Status::Failed;
        if record.status == Status::Interrupted {
            self.status = Status::Interrupted;
        }
        self.records.push(record);
        if failed {
            self.status = Status::Failed;
            return false;
        }
        if self.status == Status::Interrupted {
            return false;
        }
        // Runs until decided: after each complete round that is a look, decide at that look's
        // share of α and stop once every comparison is decided.
        let rounds_done = (index + 1) / plan.ccs.len();
        if let (Some(seq), true) = (self.sequential.as_mut(), (index + 1).is_multiple_of(plan.ccs.len())) {
            if let Some(look) = self.looks.iter().position(|l| l.runs == rounds_done) {
                let alpha = self.looks[look].alpha;
                let (_, comparisons) = analyse(&plan.names(), &self.records, plan.criteria(alpha));
                let expectations = plan.judge(&self.records, alpha);
                // One contender has no comparison to decide: then only its expectations. A look
                // whose level is only approximate (very different spreads, few runs) does not
                // stop the design but the last (issue 28 §1, `look_stops`).
                let last = look + 1 == self.looks.len();
                let verdicts_decided = if plan.ccs.len() > 1 { ccbench_stats::look_stops(&comparisons, last) } else { true };
                let expectations_decided = expectations.iter().all(|e| e.result != ccbench_stats::expectation::Judgement::Undecided);
                let decided = verdicts_decided && expectations_decided && (plan.ccs.len() > 1 || !plan.expect.is_empty());
                seq.looks.push(LookRecord { runs_per_cc: rounds_done as u32, alpha, decided, spent: Some(self.looks[look].spent) });
                self.alpha = alpha;
                self.look = Some(look);
                if decided {
                    seq.decided_after_runs = Some(rounds_done as u32);
                    return false;
                }
                // Issue 28 §6: the runs after the last look that can decide could not change
                // the verdict; they are not run.
                if self.idle_from.is_some_and(|first| rounds_done + 1 == first) {
                    return false;
                }
            }
        }
        self.next < self.slots.len()
    }

    fn finish(self) -> ExperimentResult {
        let (plan, records, alpha) = (self.plan, self.records, self.alpha);
        let mut provenance = crate::provenance::finished(self.provenance);
        if plan.ccs.iter().any(|cc| cc.may_run_quic(&plan.workload)) {
            provenance.quic_stack = Some(ccbench_workload::QUIC_STACK.to_string());
        }
        provenance.controller_mismatches =
            records.iter().flat_map(|r| r.workload.iter().flat_map(|w| w.warnings()).map(move |w| format!("run {}: {w}", r.index + 1))).collect();
        let (summary, mut comparisons) = analyse(&plan.names(), &records, plan.criteria(alpha));
        let mut rtt_comparisons = compare_rtt(&plan.names(), &records, plan.criteria(alpha));
        // A sequential verdict names the look it was judged at; one that ran out of looks
        // without deciding says "undecided", never "no difference".
        if let Some(look) = self.look {
            let context = LookContext { look: look + 1, of: self.looks.len(), spent: self.looks[look].spent, alpha_total: ALPHA };
            let ended_undecided = self.status == Status::Complete && (look + 1 == self.looks.len() || self.idle_from == Some(self.looks[look].runs + 1));
            for c in comparisons.iter_mut().chain(rtt_comparisons.iter_mut()) {
                c.look = Some(context);
                if ended_undecided {
                    c.mark_undecided();
                }
            }
        }
        ExperimentResult {
            schema: crate::results::SCHEMA.to_string(),
            status: self.status,
            warnings: if plan.remote.is_some() { Vec::new() } else { crate::limits::check_path(&plan.path) }
                .into_iter()
                .chain(provenance.controller_mismatches.iter().cloned())
                .chain(ccbench_workload::test_bbr_defects().ok().flatten().map(|d| {
                    format!("test-only: QUIC BBR built broken on purpose ({}={d}), not the draft's controller", ccbench_workload::TEST_BBR_DEFECTS_ENV)
                }))
                .collect(),
            provenance,
            params: plan.params(),
            sequential: self.sequential,
            summary,
            comparisons,
            rtt_comparisons,
            expectations: plan.judge(&records, alpha),
            runs: records,
        }
    }
}

fn run_one(plan: &Plan, out: &Path, index: u32, slot: &Slot, stop: &AtomicBool) -> RunRecord {
    let started_at = now_rfc3339();
    // Each run gets its own loss pattern and QUIC probe randomness, reproducible from the
    // experiment's seed.
    let path_seed = plan.seed.wrapping_add(u64::from(index).wrapping_mul(0x9E37_79B9_7F4A_7C15));
    let mut record = RunRecord {
        index,
        round: slot.round,
        cc: slot.cc.cc(),
        status: Status::Failed,
        error: None,
        started_at,
        path_seed,
        netns_inodes: None,
        host_cpu_steal_fraction: None,
        suspect: Vec::new(),
        far_samples_dropped: 0,
        metrics: None,
        workload: None,
        path: None,
        series: None,
    };
    let spec = PathSpec { seed: path_seed, ..plan.path.clone() };
    // In a mix every flow names its own algorithm; otherwise the slot's algorithm runs.
    let workload = slot.cc.workload(&plan.workload);
    let epoch = Instant::now();
    let steal_before = crate::provenance::cpu_steal_ms();
    let series = match RunSeries::create(out, &format!("series/run-{index:03}")) {
        Ok(s) => s,
        Err(e) => {
            record.error = Some(format!("creating the run's series files: {e}"));
            return record;
        }
    };
    if let Some(remote) = &plan.remote {
        let series = series.without_link_files();
        let (outcome, dropped) = run_remote(remote, &workload, epoch, stop, &series);
        let (files, summary, series_error) = series.finish();
        record.series = Some(files);
        record.host_cpu_steal_fraction = steal_fraction(steal_before, epoch);
        record.suspect = crate::limits::suspect_reasons(None, record.host_cpu_steal_fraction);
        record.far_samples_dropped = dropped;
        if dropped > 0 {
            record.suspect.push(format!("serve dropped {dropped} of the far end's samples: this client read its results too slowly"));
        }
        finish_record(&mut record, outcome, None, &summary, &workload, series_error);
        judge_trace(plan, out, &mut record);
        return record;
    }
    let sinks = series.link_sink("down").and_then(|d| Ok((d, series.link_sink("up")?)));
    let (down_sink, up_sink) = match sinks {
        Ok(s) => s,
        Err(e) => {
            record.error = Some(format!("creating the run's series files: {e}"));
            return record;
        }
    };
    // A fresh path per run: no queue, TCP metrics or socket state leaks between runs.
    let path = match EmulatedPath::start_streaming(&spec, epoch, down_sink, up_sink) {
        Ok(p) => p,
        Err(e) => {
            record.error = Some(format!("starting the emulated path: {e}"));
            return record;
        }
    };
    record.netns_inodes = Some([path.client.inode(), path.server.inode()]);
    let outcome =
        crate::run_workload::run(&workload, &path.client, &path.server, SERVER_ADDR, epoch, stop, path.window(), &series, path_seed).map_err(|e| e.to_string());
    // The forwarders close the link files as they end; then the workload's files are closed.
    let report = path.finish();
    let (files, summary, series_error) = series.finish();
    record.series = Some(files);
    record.host_cpu_steal_fraction = steal_fraction(steal_before, epoch);
    record.suspect = crate::limits::suspect_reasons(Some(&report), record.host_cpu_steal_fraction);
    finish_record(&mut record, outcome, Some(&report), &summary, &workload, series_error);
    fail_on_forwarder_error(&mut record, &report);
    record.path = Some(report);
    judge_trace(plan, out, &mut record);
    record
}

/// `--expect` on trace figures: each judged on the run's sender state series, now that the
/// series files are closed (crate::trace_expect).
fn judge_trace(plan: &Plan, out: &Path, record: &mut RunRecord) {
    if let (Some(m), Some(files)) = (record.metrics.as_mut(), &record.series) {
        let interval = std::time::Duration::from_micros(plan.workload.sample_interval_us());
        let path = plan.path_figures();
        // The first sender's, as the trace is the first sending socket's.
        let senders = record.workload.as_ref().map(|w| w.senders()).unwrap_or_default();
        let events = senders.first().map_or(&[][..], |s| s.bbr_events);
        m.trace = crate::trace_expect::run_checks(&plan.expect, path, |e| crate::judge::threshold(e, path), interval, &out.join(&files.tcp), events);
    }
}

/// Share of the machine's CPU the hypervisor stole since `epoch`.
fn steal_fraction(before: Option<f64>, epoch: Instant) -> Option<f64> {
    let (a, b) = (before?, crate::provenance::cpu_steal_ms()?);
    let cpus = std::thread::available_parallelism().map(|n| n.get()).unwrap_or(1) as f64;
    Some((b - a) / (epoch.elapsed().as_secs_f64() * 1000.0 * cpus))
}

/// The run's status, metrics and error from the workload's outcome.
fn finish_record(
    record: &mut RunRecord,
    outcome: Result<WorkloadResult, String>,
    report: Option<&ccbench_emu::PathReport>,
    summary: &crate::series::SeriesSummary,
    workload: &WorkloadSpec,
    series_error: Option<String>,
) {
    match outcome {
        Ok(result) => {
            record.status = if result.interrupted() { Status::Interrupted } else { Status::Complete };
            record.metrics = Some(crate::analysis::run_metrics(&result, report, summary, workload.data_direction(), workload.timeout_s()));
            record.error = result.first_error();
            // The two QUIC ends ran different algorithms (scenario 5's bug, provoked or not).
            record.suspect.extend(result.warnings());
            record.workload = Some(result);
        }
        Err(e) => record.error = Some(e),
    }
    // Series that could not be written leave the run without its record: it failed.
    if let Some(e) = series_error {
        record.status = Status::Failed;
        record.error = Some(e);
    }
}

/// One run over a real path: a fresh session with the remote `ccbench serve` per run.
/// Also the far end's samples serve dropped (a client that read too slowly).
fn run_remote(remote: &Remote, workload: &WorkloadSpec, epoch: Instant, stop: &AtomicBool, series: &RunSeries) -> (Result<WorkloadResult, String>, u64) {
    let mut client = match ccbench_remote::Client::connect(remote.addr, &remote.secret) {
        Ok(c) => c,
        Err(e) => return (Err(e.to_string()), 0),
    };
    let result = workload.run_remote(&mut client, epoch, stop, series).map_err(|e| e.to_string());
    (result, client.dropped_samples())
}

/// A run whose emulator failed (a forwarder panicked or a TUN read/write erred) did not
/// measure the configured path: it is Failed, with the forwarder's error as the reason.
fn fail_on_forwarder_error(record: &mut RunRecord, report: &ccbench_emu::PathReport) {
    let failures: Vec<String> = [&report.down, &report.up].iter().filter_map(|d| d.failure()).collect();
    if !failures.is_empty() {
        record.status = Status::Failed;
        record.error = Some(format!("emulated path failed: {}", failures.join("; ")));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn schedule_interleaves_every_round() {
        let ccs: Vec<Contender> = ["bbr", "cubic", "reno"].iter().map(|n| Contender::Algorithm(n.parse().unwrap())).collect();
        let slots = schedule(&ccs, 20, 7);
        assert_eq!(slots.len(), 60);
        for round in slots.chunks(3) {
            let mut names: Vec<String> = round.iter().map(|s| s.cc.to_string()).collect();
            names.sort();
            assert_eq!(names, ["bbr", "cubic", "reno"], "each round runs every algorithm once");
        }
        // The order is shuffled, not fixed: over 20 rounds some round must differ from the first.
        let first: Vec<&Contender> = slots[..3].iter().map(|s| &s.cc).collect();
        assert!(slots.chunks(3).any(|r| r.iter().map(|s| &s.cc).collect::<Vec<_>>() != first));
        assert_eq!(schedule(&ccs, 20, 7), slots, "same seed, same schedule");
    }
}

#[cfg(test)]
mod forwarder_failure_tests {
    use super::*;
    use ccbench_emu::{MeasureWindow, PathReport, Shell, ShellConfig};
    use ccbench_link::time;
    use ccbench_link::DirectionConfig;

    /// `ns` after the start of the shell's virtual clock.
    fn at(ns: u64) -> time::Instant {
        time::Instant::from_nanos(ns)
    }

    fn record() -> RunRecord {
        RunRecord {
            index: 0,
            round: 0,
            cc: "cubic".into(),
            status: Status::Complete,
            error: None,
            started_at: String::new(),
            path_seed: 1,
            netns_inodes: None,
            host_cpu_steal_fraction: None,
            suspect: Vec::new(),
            far_samples_dropped: 0,
            metrics: None,
            workload: None,
            path: None,
            series: None,
        }
    }

    fn shell(name: &'static str) -> Shell {
        let cfg = ShellConfig {
            name,
            config: DirectionConfig::default(),
            seed: 1,
            mtu: 1500,
            offload: false,
            udp_offload: false,
            sample_interval: time::Duration::from_nanos(10_000_000),
            min_wake_gap: time::Duration::ZERO,
        };
        Shell::new(cfg, at(0), MeasureWindow::new(std::time::Instant::now()))
    }

    #[test]
    fn a_write_error_in_the_emulator_fails_the_run() {
        let down = shell("downlink");
        let mut up = shell("uplink");
        up.handle_read(at(0), &[0x45; 100]);
        assert!(up.poll_transmit(at(1_000_000_000)).is_some());
        up.on_write_error(&std::io::Error::from_raw_os_error(libc::EIO));
        let report = PathReport { down: down.finish(at(2_000_000_000), 0.0), up: up.finish(at(2_000_000_000), 0.0) };
        let mut r = record();
        fail_on_forwarder_error(&mut r, &report);
        assert_eq!(r.status, Status::Failed);
        let err = r.error.unwrap();
        assert!(err.contains("uplink") && err.contains("write to TUN") && err.contains("1 write errors"), "{err}");
    }

    #[test]
    fn a_healthy_path_leaves_the_run_alone() {
        let report = PathReport { down: shell("downlink").finish(at(1), 0.0), up: shell("uplink").finish(at(1), 0.0) };
        let mut r = record();
        fail_on_forwarder_error(&mut r, &report);
        assert_eq!((r.status, r.error), (Status::Complete, None));
    }
}
