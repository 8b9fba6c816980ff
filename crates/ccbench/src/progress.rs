//! Progress on a terminal: one bar over every run of a `run`, a preset or a sweep, with the run
//! in progress and the time left; a line above it per finished run (or cell). Silent in pipes and
//! CI (standard error not a terminal): what is printed to standard output says the same.

use std::io::IsTerminal;
use std::time::Duration;

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};

use ccbench::experiment::{Observer, Plan, Slot};
use ccbench::results::{RunRecord, Status};
use ccbench::units;

/// The bar; cheap to clone, and shared between the threads of a parallel sweep.
#[derive(Clone)]
pub struct Bar {
    bar: ProgressBar,
}

/// How many runs a plan schedules at most (every algorithm × its most runs).
pub fn planned_runs(plan: &Plan) -> u64 {
    plan.ccs.len() as u64 * u64::from(plan.runs.max())
}

impl Bar {
    /// A bar over `runs` runs on standard error, drawn only if it is a terminal.
    pub fn new(runs: u64) -> Self {
        let target = if std::io::stderr().is_terminal() { ProgressDrawTarget::stderr() } else { ProgressDrawTarget::hidden() };
        let bar = ProgressBar::with_draw_target(Some(runs), target);
        let style = ProgressStyle::with_template("  [{bar:28}] {pos}/{len} runs, {elapsed} so far, about {eta} left  {wide_msg}")
            .map(|s| s.progress_chars("=> "))
            .unwrap_or_else(|_| ProgressStyle::default_bar());
        bar.set_style(style);
        bar.enable_steady_tick(Duration::from_millis(500));
        Bar { bar }
    }

    /// A line above the bar (nothing when the bar is hidden).
    pub fn println(&self, line: impl AsRef<str>) {
        self.bar.println(line);
    }

    /// Prints to standard output without tearing the bar.
    pub fn stdout(&self, text: &str) {
        self.bar.suspend(|| print!("{text}"));
    }

    /// Prints a line to standard error, terminal or not, without tearing the bar.
    pub fn eprintln(&self, line: &str) {
        self.bar.suspend(|| eprintln!("{line}"));
    }

    /// An experiment ended after `done` of its `planned` runs (`--runs auto` decided early, or it
    /// stopped): the runs it will not take leave the total.
    pub fn experiment_ended(&self, planned: u64, done: u64) {
        let left = self.bar.length().unwrap_or(0).saturating_sub(planned.saturating_sub(done));
        self.bar.set_length(left.max(self.bar.position()));
    }

    /// `n` more runs done (a command that counts its own runs, as `conform`).
    pub fn advance(&self, n: u64) {
        self.bar.inc(n);
    }

    /// What is running now, beside the bar.
    pub fn message(&self, msg: String) {
        self.bar.set_message(msg);
    }

    pub fn finish(&self) {
        self.bar.finish_and_clear();
    }

    /// The observer of one experiment; `label` names it in the message (a sweep's cell), and
    /// `per_run` prints a line above the bar for each finished run.
    pub fn observer(&self, label: Option<String>, per_run: bool) -> RunObserver {
        RunObserver { bar: self.clone(), label, per_run }
    }
}

pub struct RunObserver {
    bar: Bar,
    label: Option<String>,
    per_run: bool,
}

impl Observer for RunObserver {
    fn run_started(&mut self, index: usize, total: usize, slot: &Slot) {
        let what = format!("run {}/{}: {} (round {})", index + 1, total, slot.cc, slot.round + 1);
        self.bar.bar.set_message(match &self.label {
            Some(l) => format!("{l}: {what}"),
            None => what,
        });
    }

    fn run_finished(&mut self, index: usize, total: usize, record: &RunRecord) {
        self.bar.bar.inc(1);
        if !self.per_run {
            return;
        }
        let what = match (&record.metrics, record.status) {
            (Some(m), Status::Complete) => units::fmt_rate(m.goodput_bps),
            (_, Status::Interrupted) => "interrupted".into(),
            _ => format!("failed: {}", record.error.clone().unwrap_or_default()),
        };
        let label = self.label.as_ref().map_or(String::new(), |l| format!("{l} "));
        self.bar.println(format!("  {label}run {}/{}: {:<8} {}", index + 1, total, record.cc, what));
    }
}
