//! `--expect` on a trace figure (`quic:bbr3:startup_exit_rounds <= 4`): each figure is one of
//! ccbench-conform's assertions, measured on the run's sender state series right after the run
//! and judged against the expectation's own comparison and threshold. The run's figure (an
//! interval, pass / fail / not observable, the evidence) goes into its record, so that the
//! runs are judged over with the same order statistics as every other expectation, `--runs
//! auto`'s looks included.

use std::path::Path;
use std::time::Duration;

use ccbench_conform::assertion::{Assertion, Gain, Outcome, Rule, RunCheck};
use ccbench_conform::trace::{Mode, PathFacts, Phase};

use crate::expect::{Expectation, Metric, Op, PathFigures, State, TraceFigure};
use crate::results::{TraceCheck, TraceOutcome};

/// The mode and phase a state names.
fn mode_phase(s: State) -> (Mode, Option<Phase>) {
    match s {
        State::Startup => (Mode::Startup, None),
        State::Drain => (Mode::Drain, None),
        State::ProbeBw => (Mode::ProbeBw, None),
        State::ProbeBwDown => (Mode::ProbeBw, Some(Phase::Down)),
        State::ProbeBwCruise => (Mode::ProbeBw, Some(Phase::Cruise)),
        State::ProbeBwRefill => (Mode::ProbeBw, Some(Phase::Refill)),
        State::ProbeBwUp => (Mode::ProbeBw, Some(Phase::Up)),
        State::ProbeRtt => (Mode::ProbeRtt, None),
    }
}

/// A mode only: a state change is seen between modes (phases are not left and entered as
/// modes are).
fn mode_only(s: State, figure: TraceFigure) -> Result<Mode, String> {
    match mode_phase(s) {
        (m, None) => Ok(m),
        (_, Some(_)) => Err(format!("{figure}: {} is a ProbeBW phase; this argument takes a mode (STARTUP, DRAIN, PROBE_BW, PROBE_RTT)", s.name())),
    }
}

/// The conformance assertion that measures `figure`. Its own thresholds are unused: the
/// expectation's comparison replaces them ([`Assertion::check_against`]).
pub(crate) fn assertion(figure: TraceFigure) -> Result<Assertion, String> {
    Ok(match figure {
        TraceFigure::StartupExitRounds => Assertion::StartupExitAfterPlateau { rounds: 0.0 },
        TraceFigure::DrainRounds => Assertion::DrainAtMost { rounds: 0.0 },
        TraceFigure::CwndMinPackets => Assertion::CwndAtLeast { packets: 0.0 },
        TraceFigure::BwOfLink => Assertion::BwNearLink { lo: 0.0, hi: 0.0 },
        TraceFigure::PacingGain(s) | TraceFigure::CwndGain(s) => {
            let (mode, phase) = mode_phase(s);
            let which = if matches!(figure, TraceFigure::PacingGain(_)) { Gain::Pacing } else { Gain::Cwnd };
            Assertion::GainIs { which, mode, phase, gain: 0.0, tolerance: 0.0 }
        }
        TraceFigure::ProbeBwLowestGain => Assertion::LowestProbeBwGain { gain: 0.0, tolerance: 0.0 },
        TraceFigure::ProbeBwCycles => Assertion::ProbeBwCycles { cycles: 0.0 },
        TraceFigure::ProbeRttInterval => Assertion::ProbeRttEvery { interval: Duration::ZERO },
        TraceFigure::ProbeRttLength => Assertion::ProbeRttLasts { min: Duration::ZERO, rounds: 0.0 },
        TraceFigure::NextState(from, to) => {
            let (to, phase) = mode_phase(to);
            Assertion::NextState { from: mode_only(from, figure)?, to, phase }
        }
        TraceFigure::LossAfterStartup => Assertion::LossAtMost { share: 0.0 },
        TraceFigure::BwHeld(from) => Assertion::BwHeldFrom { from, share: 0.0 },
        TraceFigure::InflightLongtermGrowth(from) => Assertion::LongtermHeldFrom { from },
        TraceFigure::Entries(s, from) => Assertion::NotReenteredFrom { mode: mode_only(s, figure)?, from },
    })
}

/// What a trace figure needs of the plan, checked before anything runs.
pub(crate) fn check(e: &Expectation, path: PathFigures) -> Result<(), String> {
    let Metric::Trace(figure) = e.metric else { return Ok(()) };
    assertion(figure)?;
    if figure == TraceFigure::BwOfLink && path.rate_bps.is_none() {
        return Err("bw_of_link needs an emulated path with a constant rate (it is the estimate over the bottleneck's rate)".into());
    }
    Ok(())
}

fn rule(op: Op, threshold: f64) -> Rule {
    match op {
        Op::Ge => Rule::AtLeast(threshold),
        Op::Gt => Rule::Above(threshold),
        Op::Le => Rule::AtMost(threshold),
        Op::Lt => Rule::Below(threshold),
    }
}

/// Every trace expectation of `exps` judged on one run's series (`tcp` under the experiment's
/// directory): the first sending socket's trace (trace figures need one flow per run), with the
/// first sender's own state changes (`events`, its `bbr_events`). `threshold` is each one's on
/// this path (`judge::threshold`).
pub(crate) fn run_checks(
    exps: &[Expectation],
    path: PathFigures,
    threshold: impl Fn(&Expectation) -> Result<f64, String>,
    sample_interval: Duration,
    tcp: &Path,
    events: &[ccbench_model::workload::BbrEvent],
) -> Vec<TraceCheck> {
    let wanted: Vec<(&Expectation, TraceFigure)> = exps
        .iter()
        .filter_map(|e| match e.metric {
            Metric::Trace(f) => Some((e, f)),
            _ => None,
        })
        .collect();
    if wanted.is_empty() {
        return Vec::new();
    }
    let unseen = |e: &Expectation, why: String| TraceCheck {
        expect: e.text.clone(),
        outcome: TraceOutcome::NotObservable,
        lo: None,
        hi: None,
        estimate: None,
        evidence: why,
    };
    let rows = match crate::state_trace::rows(tcp) {
        Ok(r) => r,
        Err(err) => return wanted.iter().map(|(e, _)| unseen(e, format!("the run's series could not be read: {err:#}"))).collect(),
    };
    let Some(rows) = rows.into_values().next() else {
        return wanted.iter().map(|(e, _)| unseen(e, "the run recorded no sender series".into())).collect();
    };
    let facts = PathFacts {
        rate_bps: path.rate_bps.unwrap_or(f64::NAN),
        rtt: path.base_rtt_ms.map_or(Duration::ZERO, |ms| Duration::from_secs_f64(ms / 1e3)),
        mss: crate::state_trace::PACKET,
        rate_step: None,
    };
    let trace = crate::state_trace::trace(&rows, facts, sample_interval, events);
    wanted
        .into_iter()
        .map(|(e, figure)| match (assertion(figure), threshold(e)) {
            (Ok(a), Ok(t)) => record(e, a.check_against(&trace, rule(e.op, t))),
            (Err(why), _) | (_, Err(why)) => unseen(e, why),
        })
        .collect()
}

fn record(e: &Expectation, c: RunCheck) -> TraceCheck {
    let finite = |x: f64| x.is_finite().then_some(x);
    TraceCheck {
        expect: e.text.clone(),
        outcome: match c.outcome {
            Outcome::Pass => TraceOutcome::Pass,
            Outcome::Fail => TraceOutcome::Fail,
            Outcome::NotObservable => TraceOutcome::NotObservable,
        },
        lo: finite(c.lo),
        hi: finite(c.hi),
        estimate: finite(c.estimate),
        evidence: c.evidence,
    }
}

/// A run's figure for `e`, as the order statistics take it: `None` when the run could not
/// show it (it does not count), +∞ for a figure recorded as `null` (never left a state).
pub(crate) fn figure(e: &Expectation, checks: &[TraceCheck]) -> Option<f64> {
    let c = checks.iter().find(|c| c.expect == e.text)?;
    match c.outcome {
        TraceOutcome::NotObservable => None,
        TraceOutcome::Pass | TraceOutcome::Fail => Some(c.estimate.unwrap_or(f64::INFINITY)),
    }
}

/// The runs' outcomes in a line, and one run's evidence (a failing one where any failed).
pub(crate) fn evidence<'a>(e: &Expectation, runs: impl Iterator<Item = &'a [TraceCheck]>) -> Option<String> {
    let mine: Vec<&TraceCheck> = runs.filter_map(|checks| checks.iter().find(|c| c.expect == e.text)).collect();
    let shown = mine.iter().find(|c| c.outcome == TraceOutcome::Fail).or_else(|| mine.iter().find(|c| c.outcome == TraceOutcome::Pass)).or(mine.first())?;
    let count = |o: TraceOutcome| mine.iter().filter(|c| c.outcome == o).count();
    let mut tally = format!("{}/{} runs pass", count(TraceOutcome::Pass), mine.len());
    for (o, word) in [(TraceOutcome::Fail, "fail"), (TraceOutcome::NotObservable, "not observable")] {
        if count(o) > 0 {
            tally.push_str(&format!(", {} {word}", count(o)));
        }
    }
    Some(format!("{tally}; {}", shown.evidence))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn e(s: &str) -> Expectation {
        s.parse().unwrap_or_else(|err| panic!("{s}: {err}"))
    }

    #[test]
    fn every_figure_is_an_assertion_and_phases_are_refused_where_a_mode_is_needed() {
        for ok in ["startup_exit_rounds <= 4", "pacing_gain(PROBE_BW_UP) >= 1.2", "next_state(PROBE_RTT,STARTUP) >= 100%", "entries(STARTUP,4s) <= 0"] {
            let Metric::Trace(f) = e(ok).metric else { panic!("{ok}") };
            assert!(assertion(f).is_ok(), "{ok}");
        }
        let Metric::Trace(f) = e("next_state(PROBE_BW_UP,PROBE_BW_DOWN) >= 1").metric else { panic!() };
        assert!(assertion(f).unwrap_err().contains("takes a mode"));
        let no_rate = PathFigures { rate_bps: None, base_rtt_ms: Some(40.0) };
        assert!(check(&e("bw_of_link >= 90%"), no_rate).is_err());
        assert!(check(&e("drain_rounds <= 3"), no_rate).is_ok());
    }

    #[test]
    fn a_run_that_cannot_show_a_figure_does_not_count_and_infinity_ranks_last() {
        let x = e("startup_exit_rounds <= 4");
        let c = |outcome, estimate| TraceCheck { expect: x.text.clone(), outcome, lo: None, hi: None, estimate, evidence: "seen".into() };
        assert_eq!(figure(&x, &[c(TraceOutcome::NotObservable, None)]), None);
        assert_eq!(figure(&x, &[c(TraceOutcome::Fail, None)]), Some(f64::INFINITY));
        assert_eq!(figure(&x, &[c(TraceOutcome::Pass, Some(3.5))]), Some(3.5));
        let runs = [vec![c(TraceOutcome::Pass, Some(3.0))], vec![c(TraceOutcome::Fail, None)], vec![c(TraceOutcome::NotObservable, None)]];
        assert_eq!(evidence(&x, runs.iter().map(Vec::as_slice)).unwrap(), "1/3 runs pass, 1 fail, 1 not observable; seen");
    }
}
