//! What a kind of traffic says about itself, defined with the workload so the harness, the
//! analysis, the exports and the report ask through these traits instead of matching on every
//! workload (issue 20 §1): [`Spec`] for the spec, [`RunOutcome`] for its result.

use ccbench_kernel_tcp::TcpInfo;

use super::{Algorithm, Direction, QuicSample, SenderRecord, Transport};

/// What a workload's spec says about itself, for the harness that runs it and the texts that
/// describe it.
pub trait Spec {
    /// Which way the bulk of the data flows (whose direction's queue and drops matter).
    fn data_direction(&self) -> Direction;
    /// How long a run may take before it is given up and marked unfinished.
    fn timeout_s(&self) -> f64;
    /// How often the sending sockets' `TCP_INFO` (or QUIC state) is sampled.
    fn sample_interval_us(&self) -> u64;
    /// [`Spec::timeout_s`] as a `Duration` (saturating; a remote request's is checked before).
    fn timeout(&self) -> std::time::Duration {
        crate::units::wire_time::from_s_saturating(self.timeout_s())
    }
    /// [`Spec::sample_interval_us`] as a `Duration`.
    fn sample_interval(&self) -> std::time::Duration {
        std::time::Duration::from_micros(self.sample_interval_us())
    }
    /// The noun the verdict compares (higher is better).
    fn metric(&self) -> &'static str;
    /// Runs `cc` on its sending sockets (a mix of algorithms keeps its own).
    fn set_algorithm(&mut self, cc: &Algorithm);
    /// The figure its runs are read by.
    fn headline(&self) -> Headline;
    /// What a run's time figures show of its traffic.
    fn time_series(&self) -> TimeSeries;
    /// The human description of the load, naming the transports it travels `over` in its own
    /// words ([`Over::words`]).
    fn describe(&self, over: Over) -> String;
    /// The algorithms the workload brings itself (a mix of flows); empty when every sending
    /// socket runs the run's algorithm.
    fn own_algorithms(&self) -> Vec<Algorithm> {
        Vec::new()
    }

    /// As [`Spec::describe`], naming the transports the algorithms `ccs` run over (`bulk
    /// QUIC`, `bulk TCP and QUIC`, how objects travel over each) where the workload alone cannot
    /// tell. `ccs` are the names result.json keys its runs by; a mix's algorithms are its own.
    fn describe_for(&self, ccs: &[super::Cc]) -> String {
        let own = self.own_algorithms();
        let transports: Vec<Transport> = if own.is_empty() {
            ccs.iter().filter_map(|c| c.algorithm()).map(|a| a.transport()).collect()
        } else {
            own.iter().map(|a| a.transport()).collect()
        };
        let over = match (transports.contains(&Transport::Tcp), transports.contains(&Transport::Quic)) {
            (false, true) => Over::Quic,
            (true, true) => Over::Both,
            (_, false) => Over::Tcp,
        };
        self.describe(over)
    }
}

/// The transports a description names, from the algorithms of the runs it describes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Over {
    Tcp,
    Quic,
    /// Some runs over kernel TCP, some over QUIC.
    Both,
}

impl Over {
    /// How the load travels, given how it travels over kernel TCP and over QUIC.
    pub fn words(self, tcp: &str, quic: &str) -> String {
        match self {
            Over::Tcp => tcp.to_string(),
            Over::Quic => quic.to_string(),
            Over::Both => format!("{tcp} (TCP) or {quic} (QUIC)"),
        }
    }
}

/// The figure a workload's runs are read by: the terminal's headline per algorithm and the
/// report's axes. A new workload picks one, or names its own figure ([`Headline::Score`]) with
/// nothing to add where it is shown. A new kind of figure read from something else than the
/// score is a new variant here, and the compiler asks for an arm where it is printed
/// (`ccbench/src/export/text.rs`, `report/src/render/conditions.rs`: none has a default arm).
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Headline {
    /// Timed flows: their goodput, with the sender's RTT p95.
    Goodput,
    /// A fixed-size file per flow: the time until the last one arrived (s).
    FileCompletion,
    /// An object load: its content throughput (MB/s).
    ContentThroughput,
    /// A page: its load time (ms).
    PageLoad,
    /// A figure of the workload's own: its score ([`RunOutcome::score`], higher is better),
    /// under the name and unit it gives.
    Score(Figure),
}

/// A workload's own headline figure: its score, named and scaled for display.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Figure {
    /// Its name and unit as an axis shows them: "exchanges per second (1/s)".
    pub label: &'static str,
    /// Its unit after a number in the terminal: "exchanges/s".
    pub unit: &'static str,
    /// How many of the score's units (result.json's) make one unit shown.
    pub per_unit: f64,
}

impl Headline {
    /// The verdict's score in display units: its axis label and the divisor from the JSON's units.
    pub fn score_unit(self) -> (&'static str, f64) {
        match self {
            Headline::Goodput | Headline::FileCompletion => ("goodput (Mbit/s)", 1e6),
            Headline::ContentThroughput => ("content throughput (Mbit/s)", 1e6),
            Headline::PageLoad => ("page loads per second (1 / load time, 1/s)", 1.0),
            Headline::Score(f) => (f.label, f.per_unit),
        }
    }

    /// The figure across conditions: its label and the divisor from the JSON's units.
    pub fn across_conditions(self) -> (&'static str, f64) {
        match self {
            Headline::FileCompletion => ("completion time (s), lower is better", 1.0),
            Headline::Goodput => ("goodput (Mbit/s)", 1e6),
            Headline::ContentThroughput => ("content throughput (Mbit/s)", 1e6),
            Headline::PageLoad => ("page load time (s), lower is better", 1.0),
            Headline::Score(f) => (f.label, f.per_unit),
        }
    }
}

/// What a run's time figures (the report's "runs over time") show of a workload's traffic.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TimeSeries {
    /// Its flows' own goodput at the receiver: all flows of a run together or, `per_flow`
    /// (a mix), each flow in its algorithm's colour.
    Flows { per_flow: bool },
    /// Requests over one or more connections: the bytes the emulator delivered stand for its
    /// goodput, and the sender's figures are its first connection's.
    Requests,
}

/// A run's figures in the workload's own terms, for the per-run metrics.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct RunFigures {
    /// Bits/s of content delivered.
    pub goodput_bps: f64,
    /// When the load finished, seconds from its start (`None`: it did not, or it has no end).
    pub completion_time_s: Option<f64>,
    pub all_completed: bool,
    pub latency_p50_s: Option<f64>,
    pub latency_p99_s: Option<f64>,
    pub html_ttfb_s: Option<f64>,
}

/// One sending flow or connection of a result, borrowed from its [`SenderRecord`].
#[derive(Clone, Debug)]
pub struct SenderView<'a> {
    /// How the result names it in messages: "flow 3", "connection 0".
    pub name: String,
    pub transport: Transport,
    pub cc_read_back: Option<&'a str>,
    pub cc_receiver: Option<&'a str>,
    pub warning: Option<&'a str>,
    pub final_tcp_info: Option<&'a TcpInfo>,
    pub final_quic: Option<&'a QuicSample>,
    /// The algorithm asked for.
    pub cc_requested: &'a super::Cc,
    /// What held it back, and how it lost (issue 30); `None` where not recorded.
    pub limited_by: Option<&'a super::LimitedBy>,
    pub mechanism: Option<&'a super::Mechanism>,
    /// QUIC BBR's state changes (empty where none were recorded).
    pub bbr_events: &'a [super::BbrEvent],
}

/// A read-back as a [`SenderRecord`] keeps it: always there, or not always.
pub trait KeptReadBack {
    fn read_back(&self) -> Option<&str>;
}

impl KeptReadBack for String {
    fn read_back(&self) -> Option<&str> {
        Some(self)
    }
}

impl KeptReadBack for Option<String> {
    fn read_back(&self) -> Option<&str> {
        self.as_deref()
    }
}

impl<R: KeptReadBack> SenderRecord<R> {
    pub fn view(&self, name: String) -> SenderView<'_> {
        SenderView {
            name,
            transport: self.transport,
            cc_read_back: self.cc_read_back.read_back(),
            cc_receiver: self.cc_receiver.as_deref(),
            warning: self.warning.as_deref(),
            final_tcp_info: self.final_tcp_info.as_ref(),
            final_quic: self.final_quic.as_ref(),
            cc_requested: &self.cc_requested,
            limited_by: self.limited_by.as_ref(),
            mechanism: self.mechanism.as_ref(),
            bbr_events: &self.bbr_events,
        }
    }
}

/// What a workload's result says about itself, for the analysis, the exports and the report.
pub trait RunOutcome {
    /// Whether the run was stopped (Ctrl-C) before it finished.
    fn interrupted(&self) -> bool;
    /// The figure compared between algorithms (higher is better), and whether the run did not
    /// finish, which makes the figure a censored bound rather than a measurement. An unfinished
    /// run still counts, ranked at or below every finished one, and is never dropped from the
    /// verdict. `timeout_s` is the spec's.
    fn score(&self, timeout_s: f64) -> (f64, bool);
    fn figures(&self) -> RunFigures;
    /// Every sending flow or connection, in the result's order.
    fn senders(&self) -> Vec<SenderView<'_>>;
    fn first_error(&self) -> Option<String>;
    /// When its measured span began, µs after the run's epoch (0 when it never did).
    fn start_us(&self) -> u64;
    /// How long its data flowed, seconds.
    fn measured_s(&self) -> Option<f64>;
}
