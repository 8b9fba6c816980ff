//! Expectations (`--expect 'METRIC OP VALUE'`, `[[expect]]` in presets and sweep specs) as
//! written and as result.json records them once judged: the grammar and the types. The judging
//! over runs is the ccbench library's (`judge.rs`), its statistics `ccbench_stats::expectation`.

use std::fmt;
use std::str::FromStr;

mod trace;
pub use trace::{FigureKind, State, TraceFigure, FIGURES};

use ccbench_stats::expectation::Judgement;
use serde::{Deserialize, Serialize};

use crate::units::{fmt_rate, parse_duration_ns, parse_rate, split_number};

/// What the grammar allows, said whole in every refusal.
pub const ALLOWED: &str = "[ALG:]METRIC OP VALUE, e.g. 'goodput >= 90%' or 'bbr:rtt_p50 <= 125%'; METRIC one of goodput, rtt_p50, rtt_p95, retrans, share, jain, jain_converged, convergence_s, lock_on_bw, completion_time, page_load, queue_p95, drops, ce_marks, or a trace figure of the sender's BBR state (docs/conform.md); OP one of >=, >, <=, <; VALUE a rate (45mbit) or % of the bottleneck for goodput and lock_on_bw, a duration (30ms) or % of the base RTT for rtt_p50 and rtt_p95, a number (0.8) or percentage (2%) for retrans, share, jain and jain_converged, a duration (3s) for convergence_s, completion_time and page_load, a duration (2ms) for queue_p95, a packet count (100) for drops and ce_marks";

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
    /// The bottleneck's queueing delay p95 on the data's direction (emulated paths only).
    QueueP95,
    /// Packets dropped at the bottleneck by the AQM or a full buffer (emulated paths only).
    Drops,
    /// Packets the AQM marked CE (emulated paths only; see docs/ecn.md).
    CeMarks,
    /// A figure of the sending controller's state trace, judged per run on its series
    /// (`quic:bbr3:startup_exit_rounds <= 4`; docs/conform.md).
    Trace(TraceFigure),
}

/// How a metric's values are written and what a percentage of it means.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    /// bit/s; `%` of the bottleneck rate.
    Rate,
    /// ms; `%` of the base RTT.
    Rtt,
    /// A fraction; `%` is just a fraction (`2%` = 0.02).
    Fraction,
    /// Seconds; no `%`.
    Seconds,
    /// Milliseconds; no `%` (not of the base RTT: a queue's own delay).
    Millis,
    /// A count of packets; no `%`.
    Count,
    /// A plain number (rounds, a gain, packets); no `%`.
    Number,
}

impl Metric {
    const ALL: [(Metric, &'static str); 14] = [
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
        (Metric::QueueP95, "queue_p95"),
        (Metric::Drops, "drops"),
        (Metric::CeMarks, "ce_marks"),
    ];

    pub fn name(self) -> &'static str {
        if let Metric::Trace(f) = self {
            return f.name();
        }
        Self::ALL.iter().find(|(m, _)| *m == self).map_or("?", |(_, n)| n)
    }

    pub fn kind(self) -> Kind {
        match self {
            Metric::Goodput | Metric::LockOnBw => Kind::Rate,
            Metric::RttP50 | Metric::RttP95 => Kind::Rtt,
            Metric::Retrans | Metric::Share | Metric::Jain | Metric::JainConverged => Kind::Fraction,
            Metric::ConvergenceS | Metric::CompletionTime | Metric::PageLoad => Kind::Seconds,
            Metric::QueueP95 => Kind::Millis,
            Metric::Drops | Metric::CeMarks => Kind::Count,
            Metric::Trace(f) => match f.kind() {
                FigureKind::Number => Kind::Number,
                FigureKind::Fraction => Kind::Fraction,
                FigureKind::Seconds => Kind::Seconds,
            },
        }
    }

    /// The unit result.json gives its figures in: `bit/s`, `ms`, `s`, or empty for a fraction.
    pub fn unit(self) -> &'static str {
        match self.kind() {
            Kind::Rate => "bit/s",
            Kind::Rtt | Kind::Millis => "ms",
            Kind::Fraction | Kind::Count | Kind::Number => "",
            Kind::Seconds => "s",
        }
    }

    /// A figure in this metric's unit as people read it.
    pub fn show(self, v: f64) -> String {
        show(self.kind(), self == Metric::Retrans || self == Metric::Share, v)
    }

    /// The kind of the metric result.json names `name` (a trace figure by its name alone; a
    /// name it does not know reads as a fraction), and whether it reads as a percentage.
    fn kind_by_name(name: &str) -> (Kind, bool) {
        if let Some((m, _)) = Self::ALL.iter().find(|(_, n)| *n == name) {
            return (m.kind(), matches!(m, Metric::Retrans | Metric::Share));
        }
        match TraceFigure::kind_of(name) {
            Some(FigureKind::Number) => (Kind::Number, false),
            Some(FigureKind::Seconds) => (Kind::Seconds, false),
            Some(FigureKind::Fraction) => (Kind::Fraction, true),
            None => (Kind::Fraction, false),
        }
    }
}

fn show(kind: Kind, percent: bool, v: f64) -> String {
    if v.is_infinite() {
        return "never".into();
    }
    match kind {
        Kind::Rate => fmt_rate(v),
        Kind::Rtt => format!("{v:.1} ms"),
        Kind::Millis => format!("{v:.2} ms"),
        Kind::Count => format!("{v:.0}"),
        Kind::Fraction if percent => format!("{:.2} %", v * 100.0),
        Kind::Fraction | Kind::Number => format!("{v:.3}"),
        Kind::Seconds => format!("{v:.2} s"),
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
    pub fn text(self) -> &'static str {
        match self {
            Op::Ge => ">=",
            Op::Gt => ">",
            Op::Le => "<=",
            Op::Lt => "<",
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
    pub cc: Option<crate::workload::Cc>,
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
        // Read after "expected": the grammar first, then what was wrong with this text.
        let refuse = |why: &str| format!("{ALLOWED} ({why})");
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
            Some((cc, m)) if !cc.trim().is_empty() => (Some(cc.trim().into()), m.trim()),
            Some(_) => return Err(refuse("an empty algorithm before ':'")),
            None => (None, lhs),
        };
        let metric = match Metric::ALL.iter().find(|(_, n)| *n == metric_name) {
            Some((m, _)) => *m,
            None => match TraceFigure::parse(metric_name) {
                Ok(Some(f)) => Metric::Trace(f),
                Ok(None) => return Err(refuse(&format!("unknown metric {metric_name:?}; trace figures: {FIGURES}"))),
                Err(why) => return Err(refuse(&format!("{why}; trace figures: {FIGURES}"))),
            },
        };
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
            Kind::Seconds | Kind::Millis => Err(format!("{} takes a duration, not a percentage", metric.name())),
            Kind::Count => Err(format!("{} takes a packet count, not a percentage", metric.name())),
            Kind::Number => Err(format!("{} takes a number, not a percentage", metric.name())),
        };
    }
    match metric.kind() {
        Kind::Rate => match parse_rate(v) {
            Ok(Some(bps)) => Ok(Value::Absolute(bps as f64)),
            _ => Err(bad()),
        },
        Kind::Rtt => parse_duration_ns(v).map(|ns| Value::Absolute(ns as f64 / 1e6)).map_err(|_| bad()),
        Kind::Seconds => parse_duration_ns(v).map(|ns| Value::Absolute(ns as f64 / 1e9)).map_err(|_| bad()),
        Kind::Millis => parse_duration_ns(v).map(|ns| Value::Absolute(ns as f64 / 1e6)).map_err(|_| bad()),
        Kind::Fraction | Kind::Count | Kind::Number => match split_number(v) {
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

/// One expectation judged for one algorithm, as result.json records it.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq, schemars::JsonSchema)]
pub struct ExpectationResult {
    /// The expression as written.
    pub expect: String,
    /// The algorithm (or group of a mix) judged; written in result.json as its name.
    pub cc: crate::workload::Cc,
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
    /// A trace figure's evidence (docs/conform.md): one run's, a failing one where any failed,
    /// with how many runs passed, failed or could not show it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub evidence: Option<String>,
}

impl ExpectationResult {
    /// One line for the terminal: `PASS  bbr: goodput >= 90% — median 93.1 Mbit/s, 95.3 % bounds 92.0 Mbit/s–94.0 Mbit/s (5 runs)`.
    pub fn line(&self) -> String {
        let metric = self;
        let word = match self.result {
            Judgement::Pass => "PASS",
            Judgement::Fail => "FAIL",
            Judgement::Undecided => "UNDECIDED",
        };
        let figure = match self.median {
            None => match &self.evidence {
                Some(why) => format!("no run could show this figure: {why}"),
                None => "no run has this figure".to_string(),
            },
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
        // `quic:prague:rtt_p95 <= 22ms` names its algorithm already: not twice.
        let who = if self.expect.starts_with(&format!("{}:", self.cc)) { String::new() } else { format!("{}: ", self.cc) };
        let evidence = match (&self.evidence, self.median) {
            (Some(e), Some(_)) => format!("; {e}"),
            _ => String::new(),
        };
        format!("{word:<9} {who}{} (threshold {}) — {figure}{evidence}", self.expect, metric.show(self.threshold))
    }

    /// A figure of this expectation (its median, a bound, its threshold) as people read it.
    pub fn show(&self, v: f64) -> String {
        let (kind, percent) = Metric::kind_by_name(&self.metric);
        show(kind, percent, v)
    }
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
            assert!(err.starts_with(ALLOWED) && err.ends_with(')'), "{bad}: {err}");
            assert!(!err.contains('\n'));
        }
    }
}
