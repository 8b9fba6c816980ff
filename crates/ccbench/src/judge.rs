//! Judging `--expect` over the runs: which contenders an expectation is about, its threshold on
//! this path, each run's figure, and pass / fail / undecided from one-sided bounds of the
//! median ([`ccbench_stats::expectation`]). The expectations' grammar and what result.json
//! records of them are types in ccbench-record (`crate::expect`).

use ccbench_emu::PathSpec;
use ccbench_link::Rate;
use ccbench_stats::expectation::{judge, median_bounds, Judgement, Side};
use ccbench_workload::{Cc, Direction};

use crate::expect::{Expectation, ExpectationResult, Kind, Metric, Op, PathFigures, Value};
use crate::results::{RunMetrics, RunRecord, Status};
use crate::run_workload::WorkloadSpec;

/// Who an experiment's expectations are judged for.
#[derive(Clone, Debug, PartialEq)]
pub struct Contenders {
    /// The contenders as result.json's `summary` names them (a mix is one, by its label).
    pub ccs: Vec<Cc>,
    /// The algorithm groups of a mix, in order; empty without one.
    pub groups: Vec<Cc>,
    /// More than one flow per run, so that sharing figures exist.
    pub several_flows: bool,
}

/// The contenders of an experiment comparing `ccs` on `workload`.
pub fn contenders(ccs: &[Cc], workload: &WorkloadSpec) -> Contenders {
    let mut groups: Vec<Cc> = Vec::new();
    let mut several_flows = false;
    if let WorkloadSpec::Bulk(b) = workload {
        for f in &b.mix {
            let cc = Cc::from(&f.cc);
            if !groups.contains(&cc) {
                groups.push(cc);
            }
        }
        several_flows = b.flows >= 2 || b.mix.len() >= 2;
    }
    Contenders { ccs: ccs.to_vec(), groups, several_flows }
}

/// One line of the judgement: an expectation for one algorithm (or one group of a mix).
#[derive(Clone, Debug, PartialEq)]
pub struct Arm {
    /// The contender's name as result.json's `summary` has it, or the group's in a mix.
    pub cc: Cc,
    /// In a mix, the group whose share or goodput is judged.
    pub group: Option<Cc>,
}

/// What the path gives a relative value: the bottleneck's rate on the data's direction and
/// the base RTT. Neither over a real path (`None`); no rate when it is unlimited or a trace.
pub fn path_figures(path: Option<&PathSpec>, direction: Direction) -> PathFigures {
    let Some(p) = path else { return PathFigures { rate_bps: None, base_rtt_ms: None } };
    let data = match direction {
        Direction::Download => &p.down,
        Direction::Upload => &p.up,
    };
    let rate_bps = match (data.rate, &data.trace) {
        (Rate::BitsPerSec(b), None) => Some(b as f64),
        _ => None,
    };
    let base_rtt_ms = Some((p.down.delay_ns.as_nanos() + p.up.delay_ns.as_nanos()) as f64 / 1e6);
    PathFigures { rate_bps, base_rtt_ms }
}

/// The threshold in the metric's unit, or why it has none on this path.
pub fn threshold(e: &Expectation, path: PathFigures) -> Result<f64, String> {
    match (e.value, e.metric.kind()) {
        (Value::Absolute(x), _) => Ok(x),
        (Value::OfPath(f), Kind::Rate) => {
            path.rate_bps.map(|r| f * r).ok_or_else(|| "an absolute rate: a % of the bottleneck needs an emulated path with a constant rate".into())
        }
        (Value::OfPath(f), _) => path.base_rtt_ms.map(|r| f * r).ok_or_else(|| "an absolute duration: a % of the base RTT needs an emulated path".into()),
    }
}

/// Metrics judged per algorithm group inside a mix: share and goodput always (`bbr:share` in
/// `--flows bbr:1,cubic:1`), RTT when an algorithm is named (`quic:prague:rtt_p95` beside a
/// classic flow; without a name it stays the whole mix's, as it always was). Every other
/// metric in a mix is the whole mix's.
fn per_group(m: Metric, named: bool) -> bool {
    matches!(m, Metric::Share | Metric::Goodput) || (named && matches!(m, Metric::RttP50 | Metric::RttP95))
}

/// Metrics that only mean something with several flows sharing the bottleneck.
fn needs_flows(m: Metric) -> bool {
    matches!(m, Metric::Share | Metric::Jain | Metric::JainConverged | Metric::ConvergenceS)
}

/// One run's figure, in the metric's unit (bit/s, ms, fraction, s). A run that never
/// converged counts as converging after `+∞` seconds (it ranks last), not as missing.
fn of_run(e: &Expectation, m: &RunMetrics, group: Option<&Cc>) -> Option<f64> {
    let share = |g: &Cc| m.shares.iter().find(|s| s.cc == *g);
    match (e.metric, group) {
        (Metric::Goodput, Some(g)) => share(g).map(|s| s.goodput_bps),
        (Metric::Goodput, None) => Some(m.goodput_bps),
        (Metric::Share, Some(g)) => share(g).map(|s| s.share),
        (Metric::Share, None) => None,
        (Metric::RttP50, Some(g)) => share(g).and_then(|s| s.sender_rtt_p50_ms),
        (Metric::RttP95, Some(g)) => share(g).and_then(|s| s.sender_rtt_p95_ms),
        (Metric::RttP50, None) => m.sender_rtt_p50_ms,
        (Metric::RttP95, None) => m.sender_rtt_p95_ms,
        (Metric::Retrans, _) => Some(m.retrans_rate),
        (Metric::Jain, _) => m.jain_index,
        // Every second after convergence must be fair: the run's worst such second.
        (Metric::JainConverged, _) => m.jain_per_second.iter().copied().reduce(f64::min),
        (Metric::ConvergenceS, _) => m.jain_index.map(|_| m.convergence_s.unwrap_or(f64::INFINITY)),
        (Metric::LockOnBw, _) => m.lock_on_bw_bps,
        (Metric::CompletionTime, _) => m.completion_time_s,
        (Metric::PageLoad, _) => m.completion_time_s.filter(|_| m.html_ttfb_s.is_some()),
        (Metric::QueueP95, _) => m.queue_delay_p95_ms,
        (Metric::Drops, _) => m.drops_buffer.zip(m.drops_aqm).map(|(b, a)| (b + a) as f64),
        (Metric::CeMarks, _) => m.ce_marks.map(|c| c as f64),
        (Metric::Trace(_), _) => crate::trace_expect::figure(e, &m.trace),
    }
}

/// The side of the threshold the median must be on.
fn side(op: Op) -> Side {
    match op {
        Op::Ge => Side::AtLeast { strict: false },
        Op::Gt => Side::AtLeast { strict: true },
        Op::Le => Side::AtMost { strict: false },
        Op::Lt => Side::AtMost { strict: true },
    }
}

/// The arms `e` is judged for among `c`'s contenders, or why it cannot be.
pub fn arms(e: &Expectation, c: &Contenders) -> Result<Vec<Arm>, String> {
    let mix = !c.groups.is_empty();
    if matches!(e.metric, Metric::Trace(_)) && c.several_flows {
        return Err("one flow per run: a trace figure is one sending controller's state (no --flows mix or several flows)".into());
    }
    if needs_flows(e.metric) && !c.several_flows {
        return Err(format!("{} needs flows sharing the bottleneck: --flows 2 or more, or a mix such as bbr:1,cubic:1", e.metric.name()));
    }
    // `bbr` and `tcp:bbr` are one algorithm; a mix's label is only ever itself.
    let same = |a: &Cc, b: &Cc| a == b || matches!((a.algorithm(), b.algorithm()), (Some(x), Some(y)) if x.same_as(y));
    if mix && per_group(e.metric, e.cc.is_some()) {
        let groups: Vec<&Cc> = c.groups.iter().filter(|g| e.cc.as_ref().is_none_or(|cc| same(cc, g))).collect();
        if groups.is_empty() {
            return Err(format!("an algorithm of the mix before ':' ({})", list(&c.groups)));
        }
        return Ok(groups.into_iter().map(|g| Arm { cc: g.clone(), group: Some(g.clone()) }).collect());
    }
    if mix && e.cc.is_some() {
        return Err(format!("no ALG: on {} in a mix (it is the whole mix's; ALG: goes with share, goodput, rtt_p50 and rtt_p95)", e.metric.name()));
    }
    if e.metric == Metric::Share && !mix {
        return Err("share with a mix in --flows (such as bbr:1,cubic:1): it is each algorithm's part of the bottleneck".into());
    }
    let arms: Vec<Arm> = c.ccs.iter().filter(|cc| e.cc.as_ref().is_none_or(|want| same(want, cc))).map(|cc| Arm { cc: cc.clone(), group: None }).collect();
    if arms.is_empty() {
        return Err(format!("an algorithm the run compares before ':' ({})", list(&c.ccs)));
    }
    Ok(arms)
}

/// `a, b`, for a message.
fn list(ccs: &[Cc]) -> String {
    ccs.iter().map(Cc::as_str).collect::<Vec<_>>().join(", ")
}

/// Every expectation checked against the plan before anything runs: an error names the
/// expression and says what is allowed.
pub fn check(exps: &[Expectation], c: &Contenders, path: PathFigures) -> Result<(), (String, String)> {
    for e in exps {
        arms(e, c).map_err(|why| (e.text.clone(), why))?;
        threshold(e, path).map_err(|why| (e.text.clone(), why))?;
        crate::trace_expect::check(e, path).map_err(|why| (e.text.clone(), why))?;
    }
    Ok(())
}

/// Every expectation judged for each of its arms over the completed runs, at `alpha`.
pub fn judge_all(exps: &[Expectation], c: &Contenders, records: &[RunRecord], path: PathFigures, alpha: f64) -> Vec<ExpectationResult> {
    let mut out = Vec::new();
    for e in exps {
        let (Ok(arms), Ok(threshold)) = (arms(e, c), threshold(e, path)) else { continue };
        for arm in arms {
            // In a mix every run is the mix's; otherwise the arm's own runs.
            let runs = || records.iter().filter(|r| r.status == Status::Complete && (arm.group.is_some() || r.cc == arm.cc)).filter_map(|r| r.metrics.as_ref());
            let xs: Vec<f64> = runs().filter_map(|m| of_run(e, m, arm.group.as_ref())).collect();
            let evidence = match e.metric {
                Metric::Trace(_) => crate::trace_expect::evidence(e, runs().map(|m| m.trace.as_slice())),
                _ => None,
            };
            let bounds = median_bounds(&xs, alpha);
            let result = bounds.as_ref().map_or(Judgement::Undecided, |b| judge(b, side(e.op), threshold));
            let has_bounds = bounds.as_ref().is_some_and(|b| b.lo.is_some());
            out.push(ExpectationResult {
                expect: e.text.clone(),
                cc: arm.cc,
                metric: e.metric.name().to_string(),
                op: e.op.text().to_string(),
                threshold,
                unit: e.metric.unit().to_string(),
                runs: xs.len(),
                median: bounds.as_ref().map(|b| b.median),
                lo: bounds.as_ref().and_then(|b| b.lo),
                hi: bounds.as_ref().and_then(|b| b.hi),
                level: bounds.as_ref().filter(|_| has_bounds).map(|b| b.level),
                alpha,
                result,
                evidence,
            });
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn e(s: &str) -> Expectation {
        s.parse().unwrap_or_else(|err| panic!("{s}: {err}"))
    }

    #[test]
    fn relative_values_resolve_against_the_path_and_need_one() {
        let path = PathFigures { rate_bps: Some(100e6), base_rtt_ms: Some(40.0) };
        assert_eq!(threshold(&e("goodput >= 90%"), path), Ok(90e6));
        assert_eq!(threshold(&e("rtt_p50 <= 125%"), path), Ok(50.0));
        assert_eq!(threshold(&e("retrans <= 2%"), PathFigures { rate_bps: None, base_rtt_ms: None }), Ok(0.02));
        assert!(threshold(&e("goodput >= 90%"), PathFigures { rate_bps: None, base_rtt_ms: Some(40.0) }).is_err());
    }

    #[test]
    fn arms_follow_the_scope_and_the_mix() {
        let one_each = Contenders { ccs: vec!["bbr".into(), "cubic".into()], groups: vec![], several_flows: false };
        assert_eq!(arms(&e("goodput >= 1mbit"), &one_each).unwrap().len(), 2);
        assert_eq!(arms(&e("tcp:bbr:goodput >= 1mbit"), &one_each).unwrap(), vec![Arm { cc: "bbr".into(), group: None }]);
        assert!(arms(&e("reno:goodput >= 1mbit"), &one_each).is_err());
        assert!(arms(&e("jain >= 0.9"), &one_each).is_err(), "jain needs several flows");
        let mix = Contenders { ccs: vec!["bbr:1,cubic:1".into()], groups: vec!["bbr".into(), "cubic".into()], several_flows: true };
        assert_eq!(arms(&e("share >= 0.1"), &mix).unwrap().len(), 2);
        assert_eq!(arms(&e("cubic:share >= 0.1"), &mix).unwrap(), vec![Arm { cc: "cubic".into(), group: Some("cubic".into()) }]);
        assert_eq!(arms(&e("jain >= 0.9"), &mix).unwrap(), vec![Arm { cc: "bbr:1,cubic:1".into(), group: None }]);
        assert!(arms(&e("bbr:jain >= 0.9"), &mix).is_err());
        // RTT: a named algorithm's own in a mix, the whole mix's without a name.
        assert_eq!(arms(&e("cubic:rtt_p95 <= 30ms"), &mix).unwrap(), vec![Arm { cc: "cubic".into(), group: Some("cubic".into()) }]);
        assert_eq!(arms(&e("rtt_p95 <= 30ms"), &mix).unwrap(), vec![Arm { cc: "bbr:1,cubic:1".into(), group: None }]);
    }
}
