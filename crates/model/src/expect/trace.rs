//! Trace figures: what `--expect` can ask of the sending controller's own state series (BBR's
//! mode, phase, gains, estimates; docs/conform.md) rather than of the run's outcome. Written
//! `NAME` or `NAME(ARG,…)` where a metric goes: `quic:bbr3:startup_exit_rounds <= 4`,
//! `next_state(PROBE_RTT,STARTUP) >= 100%`, `inflight_longterm_growth(4s) <= 1`.
//!
//! Only the grammar is here (result.json must read back what it recorded); each figure is
//! judged per run by `ccbench-conform`'s assertion of the same name (`ccbench::trace_expect`).

use std::fmt;
use std::time::Duration;

use crate::units::parse_duration_ns;

/// BBR's states as the series name them: the four modes, and ProbeBW's phases (BBRv2/v3).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum State {
    Startup,
    Drain,
    ProbeBw,
    ProbeBwDown,
    ProbeBwCruise,
    ProbeBwRefill,
    ProbeBwUp,
    ProbeRtt,
}

impl State {
    const ALL: [(State, &'static str); 8] = [
        (State::Startup, "STARTUP"),
        (State::Drain, "DRAIN"),
        (State::ProbeBw, "PROBE_BW"),
        (State::ProbeBwDown, "PROBE_BW_DOWN"),
        (State::ProbeBwCruise, "PROBE_BW_CRUISE"),
        (State::ProbeBwRefill, "PROBE_BW_REFILL"),
        (State::ProbeBwUp, "PROBE_BW_UP"),
        (State::ProbeRtt, "PROBE_RTT"),
    ];

    pub fn name(self) -> &'static str {
        Self::ALL.iter().find(|(s, _)| *s == self).map_or("?", |(_, n)| n)
    }

    fn parse(s: &str) -> Option<State> {
        Self::ALL.iter().find(|(_, n)| n.eq_ignore_ascii_case(s.trim())).map(|(s, _)| *s)
    }
}

/// How a trace figure's value is written (see `Kind` in the parent module).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FigureKind {
    /// A plain number: rounds, a gain, packets, cycles.
    Number,
    /// A share; `%` allowed.
    Fraction,
    /// A duration, judged in seconds.
    Seconds,
}

/// One figure of a run's state trace.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum TraceFigure {
    /// Rounds from the bandwidth estimate's last 25 % growth to leaving STARTUP (§5.3.1.2).
    StartupExitRounds,
    /// DRAIN's length in rounds (§5.3.2).
    DrainRounds,
    /// The lowest cwnd, in full-sized packets (§5.6.4 BBRMinPipeCwnd).
    CwndMinPackets,
    /// The median bandwidth estimate in PROBE_BW over the bottleneck's rate.
    BwOfLink,
    /// The median pacing gain in a state.
    PacingGain(State),
    /// The median cwnd gain in a state.
    CwndGain(State),
    /// The lowest pacing gain seen in PROBE_BW (v3's DOWN: 0.9; v1's drain phase: 0.75).
    ProbeBwLowestGain,
    /// ProbeBW cycles (UP → DOWN) in the run.
    ProbeBwCycles,
    /// The longest span without PROBE_RTT in which min_rtt did not fall (§5.3.4).
    ProbeRttInterval,
    /// How long the first PROBE_RTT lasted (§5.3.4.4).
    ProbeRttLength,
    /// The share of exits from the first state that go to the second (PROBE_RTT, which may
    /// interrupt any state, not counted unless it is the second).
    NextState(State, State),
    /// Bytes lost over bytes sent after STARTUP.
    LossAfterStartup,
    /// The lowest bandwidth estimate after a time, over the estimate then.
    BwHeld(Duration),
    /// The highest inflight_longterm after a time, over its value then.
    InflightLongtermGrowth(Duration),
    /// How many times a state is entered after a time (having been left before it).
    Entries(State, Duration),
}

/// The names, their arguments and their kind: said whole in every refusal.
pub const FIGURES: &str = "startup_exit_rounds, drain_rounds, cwnd_min_packets, bw_of_link, pacing_gain(STATE), cwnd_gain(STATE), probe_bw_lowest_gain, probe_bw_cycles, probe_rtt_interval, probe_rtt_length, next_state(STATE,STATE), loss_after_startup, bw_held(TIME), inflight_longterm_growth(TIME), entries(STATE,TIME); STATE one of STARTUP, DRAIN, PROBE_BW, PROBE_BW_DOWN, PROBE_BW_CRUISE, PROBE_BW_REFILL, PROBE_BW_UP, PROBE_RTT; TIME a duration since the flow started (4s)";

/// What each name takes.
enum Args {
    None,
    State,
    States,
    Time,
    StateTime,
}

const NAMES: [(&str, Args, FigureKind); 15] = [
    ("startup_exit_rounds", Args::None, FigureKind::Number),
    ("drain_rounds", Args::None, FigureKind::Number),
    ("cwnd_min_packets", Args::None, FigureKind::Number),
    ("bw_of_link", Args::None, FigureKind::Fraction),
    ("pacing_gain", Args::State, FigureKind::Number),
    ("cwnd_gain", Args::State, FigureKind::Number),
    ("probe_bw_lowest_gain", Args::None, FigureKind::Number),
    ("probe_bw_cycles", Args::None, FigureKind::Number),
    ("probe_rtt_interval", Args::None, FigureKind::Seconds),
    ("probe_rtt_length", Args::None, FigureKind::Seconds),
    ("next_state", Args::States, FigureKind::Fraction),
    ("loss_after_startup", Args::None, FigureKind::Fraction),
    ("bw_held", Args::Time, FigureKind::Fraction),
    ("inflight_longterm_growth", Args::Time, FigureKind::Number),
    ("entries", Args::StateTime, FigureKind::Number),
];

impl TraceFigure {
    /// Its name without arguments (`pacing_gain`), as result.json's `metric` records it.
    pub fn name(self) -> &'static str {
        match self {
            TraceFigure::StartupExitRounds => "startup_exit_rounds",
            TraceFigure::DrainRounds => "drain_rounds",
            TraceFigure::CwndMinPackets => "cwnd_min_packets",
            TraceFigure::BwOfLink => "bw_of_link",
            TraceFigure::PacingGain(_) => "pacing_gain",
            TraceFigure::CwndGain(_) => "cwnd_gain",
            TraceFigure::ProbeBwLowestGain => "probe_bw_lowest_gain",
            TraceFigure::ProbeBwCycles => "probe_bw_cycles",
            TraceFigure::ProbeRttInterval => "probe_rtt_interval",
            TraceFigure::ProbeRttLength => "probe_rtt_length",
            TraceFigure::NextState(..) => "next_state",
            TraceFigure::LossAfterStartup => "loss_after_startup",
            TraceFigure::BwHeld(_) => "bw_held",
            TraceFigure::InflightLongtermGrowth(_) => "inflight_longterm_growth",
            TraceFigure::Entries(..) => "entries",
        }
    }

    pub fn kind(self) -> FigureKind {
        Self::kind_of(self.name()).unwrap_or(FigureKind::Number)
    }

    /// The kind of a figure by its name alone (what result.json's `metric` keeps).
    pub fn kind_of(name: &str) -> Option<FigureKind> {
        NAMES.iter().find(|(n, ..)| *n == name).map(|(_, _, k)| *k)
    }

    /// `NAME` or `NAME(ARG,…)`; `Ok(None)` when `s` names no trace figure (nor looks like one),
    /// so the caller can try its other metrics; `Err` when it names one badly.
    pub fn parse(s: &str) -> Result<Option<TraceFigure>, String> {
        let (name, args) = match s.split_once('(') {
            Some((n, rest)) => {
                let inner = rest.strip_suffix(')').ok_or_else(|| format!("{s:?}: an argument list must end with ')'"))?;
                (n.trim(), Some(inner.split(',').map(str::trim).collect::<Vec<_>>()))
            }
            None => (s.trim(), None),
        };
        let Some((_, takes, _)) = NAMES.iter().find(|(n, ..)| *n == name) else {
            return if args.is_some() { Err(format!("unknown trace figure {name:?}")) } else { Ok(None) };
        };
        let args = args.unwrap_or_default();
        let state = |a: &str| State::parse(a).ok_or_else(|| format!("{a:?} is not a BBR state"));
        let time = |a: &str| parse_duration_ns(a).map(Duration::from_nanos).map_err(|_| format!("{a:?} is not a time such as 4s"));
        let want = |n: usize, what: &str| if args.len() == n { Ok(()) } else { Err(format!("{name} takes {what}")) };
        let f = match (takes, name) {
            (Args::None, _) => {
                want(0, "no argument")?;
                match name {
                    "startup_exit_rounds" => TraceFigure::StartupExitRounds,
                    "drain_rounds" => TraceFigure::DrainRounds,
                    "cwnd_min_packets" => TraceFigure::CwndMinPackets,
                    "bw_of_link" => TraceFigure::BwOfLink,
                    "probe_bw_lowest_gain" => TraceFigure::ProbeBwLowestGain,
                    "probe_bw_cycles" => TraceFigure::ProbeBwCycles,
                    "probe_rtt_interval" => TraceFigure::ProbeRttInterval,
                    "probe_rtt_length" => TraceFigure::ProbeRttLength,
                    _ => TraceFigure::LossAfterStartup,
                }
            }
            (Args::State, n) => {
                want(1, "one state: (STARTUP)")?;
                let st = state(args[0])?;
                if n == "pacing_gain" {
                    TraceFigure::PacingGain(st)
                } else {
                    TraceFigure::CwndGain(st)
                }
            }
            (Args::States, _) => {
                want(2, "two states: (FROM,TO)")?;
                TraceFigure::NextState(state(args[0])?, state(args[1])?)
            }
            (Args::Time, n) => {
                want(1, "one time: (4s)")?;
                let t = time(args[0])?;
                if n == "bw_held" {
                    TraceFigure::BwHeld(t)
                } else {
                    TraceFigure::InflightLongtermGrowth(t)
                }
            }
            (Args::StateTime, _) => {
                want(2, "a state and a time: (STARTUP,4s)")?;
                TraceFigure::Entries(state(args[0])?, time(args[1])?)
            }
        };
        Ok(Some(f))
    }
}

/// As written canonically: `pacing_gain(STARTUP)`, `bw_held(4s)`.
impl fmt::Display for TraceFigure {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let t = |d: &Duration| format!("{}ms", d.as_millis());
        match self {
            TraceFigure::PacingGain(s) | TraceFigure::CwndGain(s) => write!(f, "{}({})", self.name(), s.name()),
            TraceFigure::NextState(a, b) => write!(f, "{}({},{})", self.name(), a.name(), b.name()),
            TraceFigure::BwHeld(d) | TraceFigure::InflightLongtermGrowth(d) => write!(f, "{}({})", self.name(), t(d)),
            TraceFigure::Entries(s, d) => write!(f, "{}({},{})", self.name(), s.name(), t(d)),
            _ => f.write_str(self.name()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_and_arguments_parse() {
        assert_eq!(TraceFigure::parse("startup_exit_rounds"), Ok(Some(TraceFigure::StartupExitRounds)));
        assert_eq!(TraceFigure::parse("pacing_gain(startup)"), Ok(Some(TraceFigure::PacingGain(State::Startup))));
        assert_eq!(TraceFigure::parse("next_state( PROBE_RTT , STARTUP )"), Ok(Some(TraceFigure::NextState(State::ProbeRtt, State::Startup))));
        assert_eq!(TraceFigure::parse("bw_held(4s)"), Ok(Some(TraceFigure::BwHeld(Duration::from_secs(4)))));
        assert_eq!(TraceFigure::parse("entries(STARTUP,4500ms)"), Ok(Some(TraceFigure::Entries(State::Startup, Duration::from_millis(4500)))));
        assert_eq!(TraceFigure::parse("goodput"), Ok(None));
        for bad in ["pacing_gain", "pacing_gain(FAST)", "next_state(STARTUP)", "bw_held(soon)", "drain_rounds(1)", "nope(1)", "bw_held(4s"] {
            assert!(TraceFigure::parse(bad).is_err(), "{bad}");
        }
        for (name, ..) in NAMES {
            assert!(FIGURES.contains(name), "{name} not in FIGURES");
        }
    }
}
