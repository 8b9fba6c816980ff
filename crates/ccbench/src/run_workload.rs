//! The kinds of traffic a run can carry, behind one interface for the experiment: the data
//! model's [`WorkloadSpec`] and [`WorkloadResult`] (in `ccbench-model`), and running a spec,
//! here or against a remote `ccbench serve` ([`RunWorkload`], expanded from the workload registry).

use std::net::Ipv4Addr;
use std::sync::atomic::AtomicBool;
use std::time::Instant;

use ccbench_emu::MeasureWindow;
use ccbench_netns::Netns;
use ccbench_remote::{Client, RemoteError, TestRequest};
use ccbench_workload::{MeasureHook, RunContext, SeriesSink, Workload, WorkloadError};

pub use ccbench_model::workloads::{WorkloadResult, WorkloadSpec};

/// Running a [`WorkloadSpec`]: each variant's own `Workload::run`, or its far end asked of a
/// remote `ccbench serve`, the result tagged with its variant.
pub trait RunWorkload {
    /// Runs the workload in `ctx` (the spec's own `Workload::run`, its result tagged).
    fn run(&self, ctx: &RunContext<'_>) -> Result<WorkloadResult, WorkloadError>;
    /// The request a remote `ccbench serve` is asked to run (`Remote::far_request`).
    fn far_request(&self) -> TestRequest;
    /// Runs the workload against a remote `ccbench serve` (`Client::run`, its result tagged).
    fn run_remote(&self, client: &mut Client, epoch: Instant, stop: &AtomicBool, series: &dyn SeriesSink) -> Result<WorkloadResult, RemoteError>;
}

macro_rules! runs {
    ($($(#[$doc:meta])* $module:ident: $variant:ident($spec:ty, $result:ty),)*) => {
        impl RunWorkload for WorkloadSpec {
            fn run(&self, ctx: &RunContext<'_>) -> Result<WorkloadResult, WorkloadError> {
                match self {
                    $(WorkloadSpec::$variant(s) => s.run(ctx).map(WorkloadResult::$variant),)*
                }
            }

            fn far_request(&self) -> TestRequest {
                match self {
                    $(WorkloadSpec::$variant(s) => ccbench_remote::Requested::test_request(s),)*
                }
            }

            fn run_remote(&self, client: &mut Client, epoch: Instant, stop: &AtomicBool, series: &dyn SeriesSink) -> Result<WorkloadResult, RemoteError> {
                match self {
                    $(WorkloadSpec::$variant(s) => client.run(s, epoch, stop, series).map(WorkloadResult::$variant),)*
                }
            }
        }
    };
}

ccbench_workload::workloads!(runs);

/// The emulator's window, driven by the workload.
pub struct WindowHook(pub MeasureWindow);

impl MeasureHook for WindowHook {
    fn open(&self, at: Instant) {
        self.0.open(at);
    }
    fn extend(&self, at: Instant) {
        self.0.extend(at);
    }
    fn close(&self, at: Instant) {
        self.0.close(at);
    }
}

/// Runs the workload `spec`; the emulator's measurement `window` follows the workload's
/// measured span, so path figures and goodput cover the same time. The time series (TCP_INFO
/// samples, goodput points) go to `series` as they are taken, not into the result. `seed` is
/// the run's recorded seed (`path_seed`), for the QUIC controllers' randomness.
#[allow(clippy::too_many_arguments)]
pub fn run(
    spec: &WorkloadSpec,
    client: &Netns,
    server: &Netns,
    addr: Ipv4Addr,
    epoch: Instant,
    stop: &AtomicBool,
    window: MeasureWindow,
    series: &dyn SeriesSink,
    seed: u64,
) -> Result<WorkloadResult, WorkloadError> {
    let hook = WindowHook(window);
    let ctx = RunContext::new(client, server, addr, epoch, stop).with_hook(&hook).with_series(series).with_seed(seed);
    RunWorkload::run(spec, &ctx)
}
