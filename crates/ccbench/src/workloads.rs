//! The kinds of traffic a run can carry, behind one interface for the experiment: the record's
//! [`WorkloadSpec`] and [`WorkloadResult`] (in `ccbench-record`), and running a spec.

use std::net::Ipv4Addr;
use std::sync::atomic::AtomicBool;
use std::time::Instant;

use ccbench_emu::MeasureWindow;
use ccbench_netns::Netns;
use ccbench_workload::{MeasureHook, RunContext, SeriesSink, WorkloadError};

pub use ccbench_record::workloads::{WorkloadResult, WorkloadSpec};

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
    spec.run(&ctx)
}
