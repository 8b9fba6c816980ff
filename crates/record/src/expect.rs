//! Expectations judged over runs (`--expect 'METRIC OP VALUE'`, `[[expect]]` in presets and
//! sweep specs): a CC developer's regression test. Each expectation is judged per algorithm on
//! the median over its runs with one-sided distribution-free bounds at the run's α
//! ([`ccbench_stats::expectation`]): pass, fail or undecided.

use std::fmt;
use std::str::FromStr;

use ccbench_emu::PathSpec;
use ccbench_link::Rate;
use ccbench_stats::expectation::{judge, median_bounds, Judgement, Side};
use ccbench_workload::{Algorithm, Direction};
use serde::{Deserialize, Serialize};

use crate::results::{RunMetrics, RunRecord, Status};
use crate::units::{fmt_rate, parse_duration_ns, parse_rate, split_number};

/// What the grammar allows, said whole in every refusal.
pub const ALLOWED: &str = "[ALG:]METRIC OP VALUE, e.g. 'goodput >= 90%' or 'bbr:rtt_p50 <= 125%'; METRIC one of goodput, rtt_p50, rtt_p95, retrans, share, jain, jain_converged, convergence_s, lock_on_bw, completion_time, page_load; OP one of >=, >, <=, <; VALUE a rate (45mbit) or % of the bottleneck for goodput and lock_on_bw, a duration (30ms) or % of the base RTT for rtt_p50 and rtt_p95, a number (0.8) or percentage (2%) for retrans, share, jain and jain_converged, a duration (3s) for convergence_s, completion_time and page_load";

/// The figures an expectation can be about.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Metric {
    Goodput,
    RttP50,
    RttP95,
    Retrans,
    Share,
    Jain,
    JainConverged,
    ConvergenceS,
    LockOnBw,
    CompletionTime,
    PageLoad,
}

/// How a metric's values are written and what a percentage of it means.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Kind {
    /// bit/s; `%` of the bottleneck rate.
    Rate,
    /// ms; `%` of the base RTT.
    Rtt,
    /// A fraction; `%` is just a fraction (`2%` = 0.02).
    Fraction,
    /// Seconds; no `%`.
    Seconds,
}

impl Metric {
    const ALL: [(Metric, &'static str); 11] = [
        (Metric::Goodput, "goodput"),
        (Metric::RttP50, "rtt_p50"),
        (Metric::RttP95, "rtt_p95"),
        (Metric::Retrans, "retrans"),
        (Metric::Share, "share"),
        (Metric::Jain, "jain"),
        (Metric::JainConverged, "jain_converged"),
        (Metric::ConvergenceS, "convergence_s"),
        (Metric::LockOnBw, "lock_on_bw"),
        (Metric::CompletionTime, "completion_time"),
        (Metric::PageLoad, "page_load"),
    ];

    pub fn name(self) -> &'static str {
        Self::ALL.iter().find(|(m, _)| *m == self).map_or("?", |(_, n)| n)
    }

    fn kind(self) -> Kind {
        match self {
            Metric::Goodput | Metric::LockOnBw => Kind::Rate,
            Metric::RttP50 | Metric::RttP95 => Kind::Rtt,
            Metric::Retrans | Metric::Share | Metric::Jain | Metric::JainConverged => Kind::Fraction,
            Metric::ConvergenceS | Metric::CompletionTime | Metric::PageLoad => Kind::Seconds,
        }
    }

    /// Metrics judged per algorithm group inside a mix (`bbr:share` in `--flows bbr:1,cubic:1`);
    /// every other metric in a mix is the whole mix's.
    fn per_group(self) -> bool {
        matches!(self, Metric::Share | Metric::Goodput)
    }

    /// Metrics that only mean something with several flows sharing the bottleneck.
    fn needs_flows(self) -> bool {
        matches!(self, Metric::Share | Metric::Jain | Metric::JainConverged | Metric::ConvergenceS)
    }

    /// One run's figure, in the metric's unit (bit/s, ms, fraction, s). A run that never
    /// converged counts as converging after `+∞` seconds (it ranks last), not as missing.
    fn of_run(self, m: &RunMetrics, group: Option<&str>) -> Option<f64> {
        let share = |g: &str| m.shares.iter().find(|s| s.cc == g);
        match (self, group) {
            (Metric::Goodput, Some(g)) => share(g).map(|s| s.goodput_bps),
            (Metric::Goodput, None) => Some(m.goodput_bps),
            (Metric::Share, Some(g)) => share(g).map(|s| s.share),
            (Metric::Share, None) => None,
            (Metric::RttP50, _) => m.sender_rtt_p50_ms,
            (Metric::RttP95, _) => m.sender_rtt_p95_ms,
            (Metric::Retrans, _) => Some(m.retrans_rate),
            (Metric::Jain, _) => m.jain_index,
            // Every second after convergence must be fair: the run's worst such second.
            (Metric::JainConverged, _) => m.jain_per_second.iter().copied().reduce(f64::min),
            (Metric::ConvergenceS, _) => m.jain_index.map(|_| m.convergence_s.unwrap_or(f64::INFINITY)),
            (Metric::LockOnBw, _) => m.lock_on_bw_bps,
            (Metric::CompletionTime, _) => m.completion_time_s,
            (Metric::PageLoad, _) => m.completion_time_s.filter(|_| m.html_ttfb_s.is_some()),
        }
    }

    fn unit(self) -> &'static str {
        match self.kind() {
            Kind::Rate => "bit/s",
            Kind::Rtt => "ms",
            Kind::Fraction => "",
            Kind::Seconds => "s",
        }
    }

    /// A figure in this metric's unit as people read it.
    fn show(self, v: f64) -> String {
        if v.is_infinite() {
            return "never".into();
        }
        match self.kind() {
            Kind::Rate => fmt_rate(v),
            Kind::Rtt => format!("{v:.1} ms"),
            Kind::Fraction if self == Metric::Retrans || self == Metric::Share => format!("{:.2} %", v * 100.0),
            Kind::Fraction => format!("{v:.3}"),
            Kind::Seconds => format!("{v:.2} s"),
        }
    }
}

/// The comparison an expectation asks for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Op {
    Ge,
    Gt,
    Le,
    Lt,
}

impl Op {
    fn text(self) -> &'static str {
        match self {
            Op::Ge => ">=",
            Op::Gt => ">",
            Op::Le => "<=",
            Op::Lt => "<",
        }
    }

    fn side(self) -> Side {
        match self {
            Op::Ge => Side::AtLeast { strict: false },
            Op::Gt => Side::AtLeast { strict: true },
            Op::Le => Side::AtMost { strict: false },
            Op::Lt => Side::AtMost { strict: true },
        }
    }
}

/// A threshold as written: in the metric's unit, or a fraction of the path's own figure.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Value {
    Absolute(f64),
    /// `90%` of the bottleneck rate (rate metrics) or of the base RTT (RTT metrics).
    OfPath(f64),
}

/// One `--expect`: `[ALG:]METRIC OP VALUE`.
#[derive(Clone, Debug, PartialEq)]
pub struct Expectation {
    /// `ALG:`: judged for this algorithm (or group of a mix) only.
    pub cc: Option<String>,
    pub metric: Metric,
    pub op: Op,
    pub value: Value,
    /// As written, to name it in every line.
    pub text: String,
}

impl fmt::Display for Expectation {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.text)
    }
}

impl FromStr for Expectation {
    type Err = String;

    /// Refused with [`ALLOWED`], so the caller can name the flag and the expression.
    fn from_str(s: &str) -> Result<Self, String> {
        let text = s.split_whitespace().collect::<Vec<_>>().join(" ");
        let refuse = |why: &str| format!("{why}: {ALLOWED}");
        let at = text.find(['<', '>']).ok_or_else(|| refuse("no comparison"))?;
        let (lhs, rest) = text.split_at(at);
        let (op, value) = if let Some(v) = rest.strip_prefix(">=") {
            (Op::Ge, v)
        } else if let Some(v) = rest.strip_prefix("<=") {
            (Op::Le, v)
        } else if let Some(v) = rest.strip_prefix('>') {
            (Op::Gt, v)
        } else {
            (Op::Lt, &rest[1..])
        };
        let lhs = lhs.trim();
        // The algorithm may itself hold a colon (quic:bbr3:rtt_p50): the metric is the last part.
        let (cc, metric_name) = match lhs.rsplit_once(':') {
            Some((cc, m)) if !cc.trim().is_empty() => (Some(cc.trim().to_string()), m.trim()),
            Some(_) => return Err(refuse("an empty algorithm before ':'")),
            None => (None, lhs),
        };
        let metric = Metric::ALL.iter().find(|(_, n)| *n == metric_name).map(|(m, _)| *m).ok_or_else(|| refuse(&format!("unknown metric {metric_name:?}")))?;
        let value = parse_value(metric, value.trim()).map_err(|why| refuse(&why))?;
        Ok(Expectation { cc, metric, op, value, text })
    }
}

fn parse_value(metric: Metric, v: &str) -> Result<Value, String> {
    let bad = || format!("{v:?} is not a value {} takes", metric.name());
    if v.is_empty() {
        return Err("no value".into());
    }
    if let Some(pct) = v.strip_suffix('%') {
        let (x, unit) = split_number(pct).ok_or_else(bad)?;
        if !unit.is_empty() {
            return Err(bad());
        }
        return match metric.kind() {
            Kind::Rate | Kind::Rtt => Ok(Value::OfPath(x / 100.0)),
            Kind::Fraction => Ok(Value::Absolute(x / 100.0)),
            Kind::Seconds => Err(format!("{} takes a duration, not a percentage", metric.name())),
        };
    }
    match metric.kind() {
        Kind::Rate => match parse_rate(v) {
            Ok(Some(bps)) => Ok(Value::Absolute(bps as f64)),
            _ => Err(bad()),
        },
        Kind::Rtt => parse_duration_ns(v).map(|ns| Value::Absolute(ns as f64 / 1e6)).map_err(|_| bad()),
        Kind::Seconds => parse_duration_ns(v).map(|ns| Value::Absolute(ns as f64 / 1e9)).map_err(|_| bad()),
        Kind::Fraction => match split_number(v) {
            Some((x, unit)) if unit.is_empty() => Ok(Value::Absolute(x)),
            _ => Err(bad()),
        },
    }
}

// Expectations are written as text everywhere: on the command line, in a preset's `expect = [...]`
// and, as a table, in `[[expect]]` (see `presets.rs`).
impl<'de> Deserialize<'de> for Expectation {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let s = String::deserialize(d)?;
        s.parse().map_err(|e: String| serde::de::Error::custom(format!("{s:?}: {e}")))
    }
}

/// Written as its text (`bbr:rtt_p50 <= 125%`), so its schema is a string.
impl schemars::JsonSchema for Expectation {
    fn schema_name() -> std::borrow::Cow<'static, str> {
        "Expectation".into()
    }
    fn json_schema(g: &mut schemars::SchemaGenerator) -> schemars::Schema {
        String::json_schema(g)
    }
}

impl Serialize for Expectation {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&self.text)
    }
}

/// What the path gives a relative value: the bottleneck's rate on the data's direction and
/// the base RTT. `None` over a real path, or when the rate is unlimited or a trace.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct PathFigures {
    pub rate_bps: Option<f64>,
    pub base_rtt_ms: Option<f64>,
}

impl PathFigures {
    pub fn of(path: Option<&PathSpec>, direction: Direction) -> Self {
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
}

impl Expectation {
    /// The threshold in the metric's unit, or why it has none on this path.
    pub fn threshold(&self, path: PathFigures) -> Result<f64, String> {
        match (self.value, self.metric.kind()) {
            (Value::Absolute(x), _) => Ok(x),
            (Value::OfPath(f), Kind::Rate) => {
                path.rate_bps.map(|r| f * r).ok_or_else(|| "an absolute rate: a % of the bottleneck needs an emulated path with a constant rate".into())
            }
            (Value::OfPath(f), _) => path.base_rtt_ms.map(|r| f * r).ok_or_else(|| "an absolute duration: a % of the base RTT needs an emulated path".into()),
        }
    }

    /// The arms this expectation is judged for among `c`'s contenders, or why it cannot be.
    pub fn arms(&self, c: &Contenders) -> Result<Vec<Arm>, String> {
        let mix = !c.groups.is_empty();
        if self.metric.needs_flows() && !c.several_flows {
            return Err(format!("{} needs flows sharing the bottleneck: --flows 2 or more, or a mix such as bbr:1,cubic:1", self.metric.name()));
        }
        // `bbr` and `tcp:bbr` are one algorithm; a mix's label is only ever itself.
        let same = |a: &str, b: &str| a == b || matches!((a.parse::<Algorithm>(), b.parse::<Algorithm>()), (Ok(x), Ok(y)) if x.same_as(&y));
        if mix && self.metric.per_group() {
            let groups: Vec<&String> = c.groups.iter().filter(|g| self.cc.as_deref().is_none_or(|cc| same(cc, g))).collect();
            if groups.is_empty() {
                return Err(format!("an algorithm of the mix before ':' ({})", c.groups.join(", ")));
            }
            return Ok(groups.into_iter().map(|g| Arm { cc: g.clone(), group: Some(g.clone()) }).collect());
        }
        if mix && self.cc.is_some() {
            return Err(format!("no ALG: on {} in a mix (it is the whole mix's; ALG: goes with share and goodput)", self.metric.name()));
        }
        if self.metric == Metric::Share && !mix {
            return Err("share with a mix in --flows (such as bbr:1,cubic:1): it is each algorithm's part of the bottleneck".into());
        }
        let arms: Vec<Arm> =
            c.ccs.iter().filter(|cc| self.cc.as_deref().is_none_or(|want| same(want, cc))).map(|cc| Arm { cc: cc.clone(), group: None }).collect();
        if arms.is_empty() {
            return Err(format!("an algorithm the run compares before ':' ({})", c.ccs.join(", ")));
        }
        Ok(arms)
    }
}

/// Who an experiment's expectations are judged for.
#[derive(Clone, Debug, PartialEq)]
pub struct Contenders {
    /// The contenders as result.json's `summary` names them (a mix is one, by its label).
    pub ccs: Vec<String>,
    /// The algorithm groups of a mix, in order; empty without one.
    pub groups: Vec<String>,
    /// More than one flow per run, so that sharing figures exist.
    pub several_flows: bool,
}

impl Contenders {
    pub fn of(ccs: &[String], workload: &crate::workloads::WorkloadSpec) -> Self {
        let mut groups: Vec<String> = Vec::new();
        let mut several_flows = false;
        if let crate::workloads::WorkloadSpec::Bulk(b) = workload {
            for f in &b.mix {
                let cc = f.cc.to_string();
                if !groups.contains(&cc) {
                    groups.push(cc);
                }
            }
            several_flows = b.flows >= 2 || b.mix.len() >= 2;
        }
        Contenders { ccs: ccs.to_vec(), groups, several_flows }
    }
}

/// One line of the judgement: an expectation for one algorithm (or one group of a mix).
#[derive(Clone, Debug, PartialEq)]
pub struct Arm {
    /// The contender's name as result.json's `summary` has it, or the group's in a mix.
    pub cc: String,
    /// In a mix, the group whose share or goodput is judged.
    pub group: Option<String>,
}

/// Every expectation checked against the plan before anything runs: an error names the
/// expression and says what is allowed.
pub fn check(exps: &[Expectation], c: &Contenders, path: PathFigures) -> Result<(), (String, String)> {
    for e in exps {
        e.arms(c).map_err(|why| (e.text.clone(), why))?;
        e.threshold(path).map_err(|why| (e.text.clone(), why))?;
    }
    Ok(())
}

/// One expectation judged for one algorithm, as result.json records it.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq, schemars::JsonSchema)]
pub struct ExpectationResult {
    /// The expression as written.
    pub expect: String,
    /// The algorithm (or group of a mix) judged.
    pub cc: String,
    pub metric: String,
    pub op: String,
    /// The threshold in `unit` (a relative value resolved against the path).
    pub threshold: f64,
    /// `bit/s`, `ms`, `s`, or empty for a fraction.
    pub unit: String,
    /// Runs with a figure for this metric.
    pub runs: usize,
    pub median: Option<f64>,
    /// The one-sided bounds of the median, each at `level`; null with too few runs.
    pub lo: Option<f64>,
    pub hi: Option<f64>,
    /// Exact one-sided coverage of each bound.
    pub level: Option<f64>,
    /// The α it was judged at (the last look's with `--runs auto`).
    pub alpha: f64,
    pub result: Judgement,
}

impl ExpectationResult {
    /// One line for the terminal: `PASS  bbr: goodput >= 90% — median 93.1 Mbit/s, 95.3 % bounds 92.0 Mbit/s–94.0 Mbit/s (5 runs)`.
    pub fn line(&self) -> String {
        let metric = Metric::ALL.iter().find(|(_, n)| *n == self.metric).map(|(m, _)| *m).unwrap_or(Metric::Jain);
        let word = match self.result {
            Judgement::Pass => "PASS",
            Judgement::Fail => "FAIL",
            Judgement::Undecided => "UNDECIDED",
        };
        let figure = match self.median {
            None => "no run has this figure".to_string(),
            Some(m) => match (self.lo, self.hi, self.level) {
                (Some(lo), Some(hi), Some(level)) => format!(
                    "median {}, one-sided {:.1} % bounds {} and {} ({} runs)",
                    metric.show(m),
                    level * 100.0,
                    metric.show(lo),
                    metric.show(hi),
                    self.runs
                ),
                _ => format!(
                    "median {} over {} runs: too few for a bound at α = {} (needs {})",
                    metric.show(m),
                    self.runs,
                    self.alpha,
                    ccbench_stats::expectation::min_runs(self.alpha)
                ),
            },
        };
        format!("{word:<9} {}: {} (threshold {}) — {figure}", self.cc, self.expect, metric.show(self.threshold))
    }
}

/// One mark for an experiment's expectations: fail if any failed, else undecided if any is,
/// else pass; `None` without expectations.
pub fn overall(results: &[ExpectationResult]) -> Option<Judgement> {
    if results.is_empty() {
        None
    } else if results.iter().any(|e| e.result == Judgement::Fail) {
        Some(Judgement::Fail)
    } else if results.iter().any(|e| e.result == Judgement::Undecided) {
        Some(Judgement::Undecided)
    } else {
        Some(Judgement::Pass)
    }
}

/// The word a report marks an experiment with: `pass`, `fail` or `undecided`.
pub fn mark(j: Judgement) -> &'static str {
    match j {
        Judgement::Pass => "pass",
        Judgement::Fail => "fail",
        Judgement::Undecided => "undecided",
    }
}

/// Every expectation judged for each of its arms over the completed runs, at `alpha`.
pub fn judge_all(exps: &[Expectation], c: &Contenders, records: &[RunRecord], path: PathFigures, alpha: f64) -> Vec<ExpectationResult> {
    let mut out = Vec::new();
    for e in exps {
        let (Ok(arms), Ok(threshold)) = (e.arms(c), e.threshold(path)) else { continue };
        for arm in arms {
            // In a mix every run is the mix's; otherwise the arm's own runs.
            let runs = records.iter().filter(|r| r.status == Status::Complete && (arm.group.is_some() || r.cc == arm.cc));
            let xs: Vec<f64> = runs.filter_map(|r| r.metrics.as_ref().and_then(|m| e.metric.of_run(m, arm.group.as_deref()))).collect();
            let bounds = median_bounds(&xs, alpha);
            let result = bounds.as_ref().map_or(Judgement::Undecided, |b| judge(b, e.op.side(), threshold));
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
    fn the_issues_examples_parse() {
        let x = e("goodput >= 90%");
        assert_eq!((x.cc, x.metric, x.op, x.value), (None, Metric::Goodput, Op::Ge, Value::OfPath(0.9)));
        let x = e("bbr:rtt_p50 <= 125%");
        assert_eq!((x.cc.as_deref(), x.metric, x.op, x.value), (Some("bbr"), Metric::RttP50, Op::Le, Value::OfPath(1.25)));
        assert_eq!(e("jain_converged >= 0.9").value, Value::Absolute(0.9));
        assert_eq!(e("retrans <= 2%").value, Value::Absolute(0.02));
        assert_eq!(e("goodput>=45mbit").value, Value::Absolute(45e6));
        assert_eq!(e("rtt_p95 < 30ms").value, Value::Absolute(30.0));
        assert_eq!(e("convergence_s <= 3s").value, Value::Absolute(3.0));
        let x = e("quic:bbr3:share > 0.4");
        assert_eq!((x.cc.as_deref(), x.metric, x.op), (Some("quic:bbr3"), Metric::Share, Op::Gt));
        assert_eq!(e("  goodput   >=  90% ").text, "goodput >= 90%");
    }

    #[test]
    fn bad_expressions_say_what_is_allowed() {
        for bad in ["goodput", "speed >= 1", "goodput >= fast", "goodput >= ", "rtt_p50 <= 0.5", "completion_time <= 50%", ":goodput >= 1mbit", "jain >= 0.9x"]
        {
            let err = bad.parse::<Expectation>().unwrap_err();
            assert!(err.ends_with(ALLOWED), "{bad}: {err}");
            assert!(!err.contains('\n'));
        }
    }

    #[test]
    fn relative_values_resolve_against_the_path_and_need_one() {
        let path = PathFigures { rate_bps: Some(100e6), base_rtt_ms: Some(40.0) };
        assert_eq!(e("goodput >= 90%").threshold(path), Ok(90e6));
        assert_eq!(e("rtt_p50 <= 125%").threshold(path), Ok(50.0));
        assert_eq!(e("retrans <= 2%").threshold(PathFigures { rate_bps: None, base_rtt_ms: None }), Ok(0.02));
        assert!(e("goodput >= 90%").threshold(PathFigures { rate_bps: None, base_rtt_ms: Some(40.0) }).is_err());
    }

    #[test]
    fn arms_follow_the_scope_and_the_mix() {
        let one_each = Contenders { ccs: vec!["bbr".into(), "cubic".into()], groups: vec![], several_flows: false };
        assert_eq!(e("goodput >= 1mbit").arms(&one_each).unwrap().len(), 2);
        assert_eq!(e("tcp:bbr:goodput >= 1mbit").arms(&one_each).unwrap(), vec![Arm { cc: "bbr".into(), group: None }]);
        assert!(e("reno:goodput >= 1mbit").arms(&one_each).is_err());
        assert!(e("jain >= 0.9").arms(&one_each).is_err(), "jain needs several flows");
        let mix = Contenders { ccs: vec!["bbr:1,cubic:1".into()], groups: vec!["bbr".into(), "cubic".into()], several_flows: true };
        assert_eq!(e("share >= 0.1").arms(&mix).unwrap().len(), 2);
        assert_eq!(e("cubic:share >= 0.1").arms(&mix).unwrap(), vec![Arm { cc: "cubic".into(), group: Some("cubic".into()) }]);
        assert_eq!(e("jain >= 0.9").arms(&mix).unwrap(), vec![Arm { cc: "bbr:1,cubic:1".into(), group: None }]);
        assert!(e("bbr:jain >= 0.9").arms(&mix).is_err());
    }
}
