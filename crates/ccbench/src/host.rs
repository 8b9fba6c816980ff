//! What the commands ask of this host: the algorithms it can use, and SIGINT/SIGTERM as a
//! flag that ends a command cleanly.

use std::sync::atomic::AtomicBool;
use std::sync::Arc;

/// The algorithms a run may ask for: those registered with the kernel, and those it would
/// load on first use (a `tcp_*.ko` for the running kernel). What really ran is read back from
/// every sending socket, and a mismatch fails the run.
pub fn usable_algorithms() -> Vec<String> {
    let mut all = ccbench_kernel_tcp::available_congestion_controls().unwrap_or_default();
    for m in ccbench_kernel_tcp::loadable_congestion_controls() {
        if !all.contains(&m) {
            all.push(m);
        }
    }
    all
}

/// A flag raised by SIGINT or SIGTERM: a command stops at its next safe point (after the run
/// in progress) instead of dying with its files half written.
pub fn install_stop() -> anyhow::Result<Arc<AtomicBool>> {
    let stop = Arc::new(AtomicBool::new(false));
    for sig in [signal_hook::consts::SIGINT, signal_hook::consts::SIGTERM] {
        signal_hook::flag::register(sig, stop.clone())?;
    }
    Ok(stop)
}
