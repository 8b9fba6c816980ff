//! What a kind of traffic says about itself, defined with the workload so the harness, the
//! analysis, the exports and the report ask through these traits instead of matching on every
//! workload (issue 20 §1): [`Spec`] for the spec, [`RunOutcome`] for its result.

use ccbench_probe::TcpInfo;

use crate::{Algorithm, Direction, QuicSample, SenderRecord, Transport};

/// What a workload's spec says about itself, for the harness that runs it and the texts that
/// describe it.
pub trait Spec {
    /// Which way the bulk of the data flows (whose direction's queue and drops matter).
    fn data_direction(&self) -> Direction;
    /// How long a run may take before it is given up and marked unfinished.
    fn timeout_s(&self) -> f64;
    /// How often the sending sockets' `TCP_INFO` (or QUIC state) is sampled.
    fn sample_interval_us(&self) -> u64;
    /// The noun the verdict compares (higher is better).
    fn metric(&self) -> &'static str;
    /// Runs `cc` on its sending sockets (a mix of algorithms keeps its own).
    fn set_algorithm(&mut self, cc: &Algorithm);
    /// The figure its runs are read by.
    fn headline(&self) -> Headline;
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
    fn describe_for(&self, ccs: &[String]) -> String {
        let own = self.own_algorithms();
        let transports: Vec<Transport> = if own.is_empty() {
            ccs.iter().filter_map(|c| c.parse::<Algorithm>().ok()).map(|a| a.transport()).collect()
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
/// report's axes. A new workload picks one; a new kind of figure is a new variant here and an
/// arm where it is printed (`ccbench/src/export/text.rs`, `report/src/render.rs`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Headline {
    /// Timed flows: their goodput, with the sender's RTT p95.
    Goodput,
    /// A fixed-size file per flow: the time until the last one arrived (s).
    FileCompletion,
    /// An object load: its content throughput (MB/s).
    ContentThroughput,
    /// A page: its load time (ms).
    PageLoad,
}

impl Headline {
    /// The verdict's score in display units: its axis label and the divisor from the JSON's units.
    pub fn score_unit(self) -> (&'static str, f64) {
        match self {
            Headline::Goodput | Headline::FileCompletion => ("goodput (Mbit/s)", 1e6),
            Headline::ContentThroughput => ("content throughput (Mbit/s)", 1e6),
            Headline::PageLoad => ("page loads per second (1 / load time, 1/s)", 1.0),
        }
    }

    /// The figure across conditions: its label and the divisor from the JSON's units.
    pub fn across_conditions(self) -> (&'static str, f64) {
        match self {
            Headline::FileCompletion => ("completion time (s), lower is better", 1.0),
            Headline::Goodput => ("goodput (Mbit/s)", 1e6),
            Headline::ContentThroughput => ("content throughput (Mbit/s)", 1e6),
            Headline::PageLoad => ("page load time (s), lower is better", 1.0),
        }
    }
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
    pub cc_requested: &'a str,
    /// What held it back, and how it lost (issue 30); `None` where not recorded.
    pub limited_by: Option<&'a crate::LimitedBy>,
    pub mechanism: Option<&'a crate::Mechanism>,
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

/// What a far end (`ccbench serve`) holds every test to: its limits and its kernel's algorithms.
#[derive(Clone, Copy, Debug)]
pub struct ServeLimits<'a> {
    pub max_duration_s: f64,
    pub max_bytes: u64,
    /// Flows, or connections, per test.
    pub max_flows: u32,
    /// The kernel's congestion controls on the far host.
    pub congestion_controls: &'a [String],
}

impl ServeLimits<'_> {
    /// Whether the far host's kernel has `cc` (as `tcp:cubic` or `cubic`); for a `quic:`
    /// algorithm, whether this build's QUIC stack has it.
    pub fn has_cc(&self, cc: &Algorithm) -> Result<(), String> {
        if cc.is_quic() {
            return if crate::has_quic_algorithm(cc.name()) {
                Ok(())
            } else {
                Err(format!("this server has no QUIC algorithm {:?}; it has: {}", cc.name(), crate::quic_algorithm_names().join(", ")))
            };
        }
        if cc.kernel_name().is_some_and(|k| self.congestion_controls.iter().any(|c| c == k)) {
            Ok(())
        } else {
            Err(format!("this server has no congestion control {cc:?}; it has: {}", self.congestion_controls.join(", ")))
        }
    }

    /// What every HTTP test is held to: its connections, its timeout and its bytes.
    pub fn check_http(&self, connections: u32, timeout_s: f64, bytes: u64) -> Result<(), String> {
        if connections > self.max_flows {
            return Err(format!("{connections} connections is over this server's limit of {} connections per test", self.max_flows));
        }
        if !(timeout_s.is_finite() && timeout_s > 0.0) {
            return Err(format!("a timeout of {timeout_s} s"));
        }
        if bytes > self.max_bytes {
            return Err(format!("{bytes} bytes in all is over this server's limit of {} bytes per test (--max-bytes)", self.max_bytes));
        }
        Ok(())
    }
}

/// What `ccbench serve` asks of a test a client sends it (the request as it travels on the
/// wire), defined with the workload: serve checks, logs and plans through this alone. Every
/// method must hold against a hostile client: nothing may grow with what the request asks for.
pub trait FarSpec {
    /// Whether a server with `limits` may run it; the reason, for the client, when not.
    fn check(&self, limits: &ServeLimits<'_>) -> Result<(), String>;
    /// The test in serve's log line (also for refused requests).
    fn describe_far(&self) -> String;
    /// The connections it plans to open.
    fn planned_connections(&self) -> u32;
}

/// A borrowed request is asked the same (a test is checked where it lies in its message).
impl<T: FarSpec + ?Sized> FarSpec for &T {
    fn check(&self, limits: &ServeLimits<'_>) -> Result<(), String> {
        (**self).check(limits)
    }
    fn describe_far(&self) -> String {
        (**self).describe_far()
    }
    fn planned_connections(&self) -> u32 {
        (**self).planned_connections()
    }
}

/// What `ccbench serve` runs for a request: [`FarSpec`] (its check, log line and plan) and
/// which far end serves it. serve matches on the far end's protocol, never on the workload.
pub trait FarRequest: FarSpec {
    fn far_end(&self) -> FarEnd<'_>;
}

/// The far ends serve knows how to run, each with its own exchange on the control connection.
pub enum FarEnd<'a> {
    /// Flows of bulk data (or a file per flow), over kernel TCP or, when every flow's algorithm
    /// is QUIC, over QUIC: `Ready`/`QuicReady` → `Connected` → `Start` → samples → `Done`.
    Flows(&'a crate::BulkSpec),
    /// An HTTP server behind the token gate ([`crate::http_end`]): `Ready` → `Start` →
    /// `Accepted` and samples → `Stop` → `ConnectionEnd`s → `HttpDone`.
    Http(&'a dyn HttpFar),
    /// A request load's server over one QUIC connection ([`crate::QuicRequestServer`]), the
    /// workload's store behind the QUIC gate: `QuicReady` → `Start` → the connection, with the
    /// token → `QuicConnected` → `QuicSample`s when the server sends → `Stop` → its
    /// `BbrEvents` and `QuicConnectionEnd` → `HttpDone`.
    Quic(crate::QuicRequests),
}

/// A workload's HTTP server as serve runs it for a remote client.
pub trait HttpFar {
    /// The algorithm its sockets run when they send (set on the data port's listener, so each
    /// accepted socket runs it from its first segment); `None` when the server receives.
    fn server_cc(&self) -> Option<&Algorithm>;
    /// Served over TLS with a certificate made for the test, for an ALPN of `h2` (the
    /// browser's HTTP/2).
    fn tls(&self) -> bool {
        false
    }
    /// How long the load may take (serve holds it to `--max-duration` too).
    fn timeout_s(&self) -> f64;
    /// Serves `listener` behind `end`'s gate until the test ends.
    fn serve(&self, listener: std::net::TcpListener, end: &crate::HttpEnd<'_>, cert: Option<&crate::RunCertificate>) -> crate::FarReport;
}

/// A workload run against `ccbench serve` (`run --remote`): the request serve receives, and
/// this end's half. `ccbench_remote::Client::run` runs any workload through this alone.
pub trait Remote {
    /// The request on the wire (a `TestRequest` variant).
    type Far: FarRequest;
    type Result;
    fn far_request(&self) -> Self::Far;
    fn near_end(&self) -> NearEnd<'_, Self::Result>;
}

/// This end's half of a remote test, matching its [`FarEnd`].
pub enum NearEnd<'a, R> {
    /// Bulk flows: the remote client's own near end; `result` makes the workload's result.
    Flows { spec: &'a crate::BulkSpec, result: fn(crate::BulkResult) -> R },
    /// An HTTP load against the far end's server.
    Http { timeout_s: f64, sample_interval_us: u64, load: HttpLoad<'a, R> },
    /// A request load over one QUIC connection against the far end's server.
    Quic { timeout_s: f64, sample_interval_us: u64, load: QuicLoad<'a, R> },
}

impl<'a, R: 'a> NearEnd<'a, R> {
    /// An HTTP load: `load` run for `spec`, with the spec's own timeout and sampling interval.
    pub fn http<S: Spec>(spec: &'a S, load: NearHttp<S, R>) -> Self {
        let run = move |far: &crate::FarHttp,
                        epoch: std::time::Instant,
                        stop: &std::sync::atomic::AtomicBool,
                        series: &dyn crate::SeriesSink,
                        end: &dyn Fn() -> Result<crate::FarReport, String>| { load(spec, far, epoch, stop, series, end) };
        NearEnd::Http { timeout_s: spec.timeout_s(), sample_interval_us: spec.sample_interval_us(), load: Box::new(run) }
    }
}

impl<'a, R: 'a> NearEnd<'a, R> {
    /// A request load over QUIC: `load` run for `spec`, with the spec's own timeout and
    /// sampling interval.
    pub fn quic<S: Spec>(spec: &'a S, load: NearQuic<S, R>) -> Self {
        let run = move |far: &crate::FarQuic,
                        epoch: std::time::Instant,
                        stop: &std::sync::atomic::AtomicBool,
                        series: &dyn crate::SeriesSink,
                        end: &dyn Fn() -> Result<crate::QuicFarReport, String>| { load(spec, far, epoch, stop, series, end) };
        NearEnd::Quic { timeout_s: spec.timeout_s(), sample_interval_us: spec.sample_interval_us(), load: Box::new(run) }
    }
}

/// A workload's own function that runs its request load over QUIC against a far end
/// (`run_quic_objects_remote`, …): [`QuicLoad`]'s arguments after the spec.
pub type NearQuic<S, R> = fn(
    &S,
    &crate::FarQuic,
    std::time::Instant,
    &std::sync::atomic::AtomicBool,
    &dyn crate::SeriesSink,
    &dyn Fn() -> Result<crate::QuicFarReport, String>,
) -> Result<R, crate::WorkloadError>;

/// A request load's client half over QUIC against a far end: given the far end's view, the
/// run's epoch, its stop flag and series, and `end`, which ends the far end and returns its
/// report (called once the load is over).
pub type QuicLoad<'a, R> = Box<
    dyn FnOnce(
            &crate::FarQuic,
            std::time::Instant,
            &std::sync::atomic::AtomicBool,
            &dyn crate::SeriesSink,
            &dyn Fn() -> Result<crate::QuicFarReport, String>,
        ) -> Result<R, crate::WorkloadError>
        + 'a,
>;

/// A workload's own function that runs its HTTP load against a far end (`run_objects_remote`,
/// …): [`HttpLoad`]'s arguments after the spec.
pub type NearHttp<S, R> = fn(
    &S,
    &crate::FarHttp,
    std::time::Instant,
    &std::sync::atomic::AtomicBool,
    &dyn crate::SeriesSink,
    &dyn Fn() -> Result<crate::FarReport, String>,
) -> Result<R, crate::WorkloadError>;

/// An HTTP workload's client half against a far end: given the far end's view, the run's epoch,
/// its stop flag and series, and `end`, which ends the far end and returns its report (called
/// once the load is over).
pub type HttpLoad<'a, R> = Box<
    dyn FnOnce(
            &crate::FarHttp,
            std::time::Instant,
            &std::sync::atomic::AtomicBool,
            &dyn crate::SeriesSink,
            &dyn Fn() -> Result<crate::FarReport, String>,
        ) -> Result<R, crate::WorkloadError>
        + 'a,
>;
