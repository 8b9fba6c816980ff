//! What `ccbench serve` and `--remote` ask of a workload ([`FarSpec`], [`FarRequest`], [`Remote`],
//! [`HttpFar`]): its runtime half. What a workload's spec and result say about themselves
//! ([`Spec`](crate::Spec), [`RunOutcome`](crate::RunOutcome)) is data, in ccbench-model.

use crate::{Algorithm, Spec};

/// What a far end (`ccbench serve`) holds every test to: its limits and its kernel's algorithms.
#[derive(Clone, Copy, Debug)]
pub struct ServeLimits<'a> {
    /// `--max-duration`: how long a test may last.
    pub max_duration: std::time::Duration,
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
    fn timeout(&self) -> std::time::Duration;
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
    Http { timeout: std::time::Duration, sample_interval: std::time::Duration, load: HttpLoad<'a, R> },
    /// A request load over one QUIC connection against the far end's server.
    Quic { timeout: std::time::Duration, sample_interval: std::time::Duration, load: QuicLoad<'a, R> },
}

impl<'a, R: 'a> NearEnd<'a, R> {
    /// An HTTP load: `load` run for `spec`, with the spec's own timeout and sampling interval.
    pub fn http<S: Spec>(spec: &'a S, load: NearHttp<S, R>) -> Self {
        let run = move |far: &crate::FarHttp,
                        epoch: std::time::Instant,
                        stop: &std::sync::atomic::AtomicBool,
                        series: &dyn crate::SeriesSink,
                        end: &dyn Fn() -> Result<crate::FarReport, String>| { load(spec, far, epoch, stop, series, end) };
        NearEnd::Http { timeout: spec.timeout(), sample_interval: spec.sample_interval(), load: Box::new(run) }
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
        NearEnd::Quic { timeout: spec.timeout(), sample_interval: spec.sample_interval(), load: Box::new(run) }
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
