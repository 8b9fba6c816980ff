//! An emulated network path on one machine: a *client* and a *server* network namespace, each
//! with one TUN device, joined by this process. One thread per direction reads IP packets from
//! one TUN device, passes them through a [`ccbench_link::Link`] (loss, buffer, rate, delay) and
//! writes them into the other at the time the model says.
//!
//! ```text
//!   client netns                                       server netns
//!   10.77.0.1 ── ccb0 ──▶ [uplink:   Link] ──▶ ccb0 ── 10.77.0.2
//!             ◀──────── [downlink: Link] ◀────────
//! ```
//! All timing lives in the link model; this crate only moves bytes and keeps the clock.

pub mod access;
mod forward;
#[doc(hidden)]
pub mod fuzzing;
pub mod gso;
mod sampling;
pub mod shell;
mod spawn;
mod wake;
mod window;

use std::net::Ipv4Addr;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::Instant;

use ccbench_link::time;
use ccbench_netns::{Netns, NetnsError};

pub use access::AccessDelay;
// The path as results record it is data, in ccbench-model, at the paths it had here.
pub use ccbench_model::path::{DelaySummary, DirectionReport, LinkSample, PathReport, PathSpec, TcpEcn, WindowReport, DEFAULT_BATCH_US};
pub use sampling::SampleSink;
pub use shell::{Shell, ShellConfig};
pub use wake::{host_timer_floor, EarlyWake, TimerProbe, DEFAULT_MAX_SPIN};
pub use window::MeasureWindow;

pub const CLIENT_ADDR: Ipv4Addr = Ipv4Addr::new(10, 77, 0, 1);
pub const SERVER_ADDR: Ipv4Addr = Ipv4Addr::new(10, 77, 0, 2);
const TUN_NAME: &str = "ccb0";
/// Deep enough that the kernel never drops between the stack and our reader: the only drops
/// on an emulated path are the ones the link model decides.
pub const TUN_TXQUEUELEN: u32 = 10_000;

/// Sysctls set inside *our* namespaces (never the host's), recorded in every result.
/// Metrics caching would carry ssthresh from one run into the next; the buffer limits keep
/// socket buffers from capping goodput on long fat paths before the emulated link does: 512 MB
/// holds 10 Gbit/s × 100 ms plus a 1-BDP queue (64 MB held unlimited rate at 50 ms to 5.9 Gbit/s).
/// Memory is taken only as autotuning grows a buffer, and flows close with a reset so none
/// outlives its run (`workload`'s `net::reset_on_close`).
pub const NAMESPACE_SYSCTLS: &[(&str, &str)] =
    &[("net.ipv4.tcp_no_metrics_save", "1"), ("net.ipv4.tcp_rmem", "4096 131072 536870912"), ("net.ipv4.tcp_wmem", "4096 16384 536870912")];

#[derive(Debug, thiserror::Error)]
pub enum EmuError {
    #[error(transparent)]
    Netns(#[from] NetnsError),
    #[error("invalid link configuration for the {direction}: {message}")]
    Config { direction: &'static str, message: String },
}

/// Whether the running kernel has Accurate ECN: its sysctl `net.ipv4.tcp_ecn_option` came with
/// it (Linux 6.18). Read from the host's /proc, never written.
pub fn kernel_has_accecn() -> bool {
    std::path::Path::new("/proc/sys/net/ipv4/tcp_ecn_option").exists()
}

/// Where `at` lies on the path's clock, which starts at `epoch` (earlier instants map to the
/// epoch): the [`time::Instant`] the link model and the shell run on.
/// What forward.rs, shell.rs, wake.rs and window.rs report, by the path they had here.
mod report {
    pub(crate) use ccbench_model::path::{DelaySummary, DirectionReport, LinkSample, WindowReport};
}

pub(crate) fn clock_at(epoch: Instant, at: Instant) -> time::Instant {
    time::Instant::EPOCH + time::Duration::from_std(at.saturating_duration_since(epoch))
}

/// The bound on a forwarder's spin before a deadline ([`wake`]): `CCBENCH_EMU_SPIN_US` when
/// set (0 turns early wake-ups and the spin off, for measuring their effect in the same
/// session), else [`DEFAULT_MAX_SPIN`].
fn max_spin() -> time::Duration {
    std::env::var("CCBENCH_EMU_SPIN_US").ok().and_then(|v| v.trim().parse().ok()).map(time::Duration::from_micros).unwrap_or(DEFAULT_MAX_SPIN)
}

/// Both directions' rates at most this each: one thread carries them ([`forward::Duplex`]). At
/// 250 Mbit/s each way one thread used 0.65–0.69× the CPU of two at the same goodput, and at
/// 500 Mbit/s its p99 delay error doubled (docs/performance.md).
pub const ONE_THREAD_MAX_BPS: u64 = 300_000_000;

/// Whether one thread carries both directions: when both are rate-limited, each to at most
/// [`ONE_THREAD_MAX_BPS`] (a trace or a scheduled rate change keeps two threads, since their
/// rates are not known here). `CCBENCH_EMU_THREADS=1` or `2` forces either, for measuring.
fn one_thread(spec: &PathSpec) -> bool {
    one_thread_for(spec, std::env::var("CCBENCH_EMU_THREADS").ok().as_deref())
}

fn one_thread_for(spec: &PathSpec, forced: Option<&str>) -> bool {
    match forced.map(str::trim) {
        Some("1") => return true,
        Some("2") => return false,
        _ => {}
    }
    let limited = |d: &ccbench_link::DirectionConfig| match d.rate {
        ccbench_link::Rate::BitsPerSec(b) if d.trace.is_none() && d.schedule.iter().all(|c| c.rate.is_none()) => Some(b),
        _ => None,
    };
    matches!((limited(&spec.down), limited(&spec.up)), (Some(d), Some(u)) if d.max(u) <= ONE_THREAD_MAX_BPS)
}

/// A running emulated path. Dropping it (or calling [`finish`](Self::finish)) stops the
/// forwarders; the namespaces and devices vanish when the last handle to them closes.
pub struct EmulatedPath {
    pub client: Netns,
    pub server: Netns,
    stop: Arc<AtomicBool>,
    /// One thread per direction, or one for both ([`one_thread`]): each returns the reports of
    /// the directions it carried, downlink first.
    threads: Vec<JoinHandle<Vec<DirectionReport>>>,
    window: MeasureWindow,
    /// The devices stay open until the counters are read: a TUN device vanishes with its
    /// last descriptor, and with it the counters (they once read as 0 for that reason).
    _tuns: [Arc<ccbench_netns::Tun>; 2],
}

impl EmulatedPath {
    /// Builds both namespaces and devices and starts forwarding. `epoch` is the instant the
    /// caller measures everything from, so the emulator's time series line up with its own.
    /// The samples are kept in memory and returned in each direction's `series`.
    pub fn start(spec: &PathSpec, epoch: Instant) -> Result<Self, EmuError> {
        Self::start_inner(spec, epoch, None)
    }

    /// As [`start`](Self::start), but each sample goes to the direction's sink as it is
    /// taken and `series` stays empty: a forwarder's memory stays flat however long it runs.
    pub fn start_streaming(spec: &PathSpec, epoch: Instant, down: Box<dyn SampleSink>, up: Box<dyn SampleSink>) -> Result<Self, EmuError> {
        Self::start_inner(spec, epoch, Some((down, up)))
    }

    /// The path's measurement window (both directions): open and close it around what the
    /// workload measures, and each direction's report carries a `window` summary.
    pub fn window(&self) -> MeasureWindow {
        self.window.clone()
    }

    fn start_inner(spec: &PathSpec, epoch: Instant, sinks: Option<(Box<dyn SampleSink>, Box<dyn SampleSink>)>) -> Result<Self, EmuError> {
        spec.down.validate().map_err(|e| EmuError::Config { direction: "downlink", message: e.to_string() })?;
        spec.up.validate().map_err(|e| EmuError::Config { direction: "uplink", message: e.to_string() })?;
        let client = Netns::new()?;
        let server = Netns::new()?;
        for ns in [&client, &server] {
            for (key, value) in NAMESPACE_SYSCTLS {
                ns.set_sysctl(key, value)?;
            }
            if let Some(v) = spec.tcp_ecn.sysctl() {
                ns.set_sysctl("net.ipv4.tcp_ecn", v)?;
            }
        }
        let client_tun = Arc::new(client.add_tun(TUN_NAME, CLIENT_ADDR, 24, spec.mtu, TUN_TXQUEUELEN, spec.offload)?);
        let server_tun = Arc::new(server.add_tun(TUN_NAME, SERVER_ADDR, 24, spec.mtu, TUN_TXQUEUELEN, spec.offload)?);
        let stop = Arc::new(AtomicBool::new(false));
        let window = MeasureWindow::new(epoch);
        let now = clock_at(epoch, Instant::now());
        let shell_config = |name: &'static str, config: &ccbench_link::DirectionConfig, seed: u64| ShellConfig {
            name,
            config: config.clone(),
            seed,
            mtu: spec.mtu,
            offload: client_tun.offload(),
            udp_offload: client_tun.udp_offload() && server_tun.udp_offload(),
            sample_interval: time::Duration::from_micros(spec.sample_interval_us.max(1)),
            min_wake_gap: spec.batch(),
        };
        let (down_cfg, up_cfg) = (shell_config("downlink", &spec.down, spec.seed ^ 0xD0D0), shell_config("uplink", &spec.up, spec.seed ^ 0x0B0B));
        let (down_shell, up_shell) = match sinks {
            None => (Shell::new(down_cfg, now, window.clone()), Shell::new(up_cfg, now, window.clone())),
            Some((d, u)) => (Shell::streaming(down_cfg, now, window.clone(), d), Shell::streaming(up_cfg, now, window.clone(), u)),
        };
        let (down_shell, up_shell) = (down_shell.with_access(spec.access.clone()), up_shell.with_access(spec.access.clone()));
        // Downlink reads the server's device and writes the client's; uplink the reverse.
        let tuns = [client_tun.clone(), server_tun.clone()];
        let early = EarlyWake::new(max_spin());
        let down = forward::Forwarder { from: server_tun.clone(), to: client_tun.clone(), epoch, stop: stop.clone(), shell: down_shell, early: early.clone() };
        let up = forward::Forwarder { from: client_tun, to: server_tun, epoch, stop: stop.clone(), shell: up_shell, early };
        let jobs: Vec<(String, spawn::Job<Vec<DirectionReport>>)> = if one_thread(spec) {
            let duplex = forward::Duplex { down, up };
            vec![("ccbench-path".into(), Box::new(move || duplex.run().into()))]
        } else {
            vec![("ccbench-downlink".into(), Box::new(move || vec![down.run()])), ("ccbench-uplink".into(), Box::new(move || vec![up.run()]))]
        };
        let threads = spawn::spawn_all(jobs, &stop, spawn::os_thread).map_err(NetnsError::Io)?;
        Ok(EmulatedPath { client, server, stop, threads, window, _tuns: tuns })
    }

    /// Stops forwarding and returns what each direction saw.
    pub fn finish(mut self) -> PathReport {
        self.stop.store(true, Ordering::SeqCst);
        let mut reports = self.threads.drain(..).flat_map(|t| t.join().unwrap_or_else(|_| vec![DirectionReport::failed("forwarder thread panicked")]));
        let mut down = reports.next().unwrap_or_else(|| DirectionReport::failed("forwarder missing"));
        let mut up = reports.next().unwrap_or_else(|| DirectionReport::failed("forwarder missing"));
        for (r, name) in [(&mut down, "downlink"), (&mut up, "uplink")] {
            if r.direction.is_empty() {
                r.direction = name.to_string();
            }
        }
        // Downlink reads the server's device and writes the client's; uplink the reverse.
        // A counter that cannot be read stays None: unknown, not "no drops".
        let (c, s) = (self.client.dev_counters(TUN_NAME).ok(), self.server.dev_counters(TUN_NAME).ok());
        down.tun_tx_dropped = s.as_ref().map(|s| s.tx_dropped);
        down.tun_rx_dropped = c.as_ref().map(|c| c.rx_dropped);
        up.tun_tx_dropped = c.as_ref().map(|c| c.tx_dropped);
        up.tun_rx_dropped = s.as_ref().map(|s| s.rx_dropped);
        PathReport { down, up }
    }
}

impl Drop for EmulatedPath {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
        for t in self.threads.drain(..) {
            let _ = t.join();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use ccbench_link::{DirectionConfig, Rate, ScheduledChange};

    fn spec(down: Rate, up: Rate) -> PathSpec {
        let dir = |rate| DirectionConfig { rate, ..Default::default() };
        PathSpec {
            down: dir(down),
            up: dir(up),
            mtu: 1500,
            seed: 1,
            sample_interval_us: 10_000,
            offload: true,
            batch_us: DEFAULT_BATCH_US,
            access: Vec::new(),
            tcp_ecn: Default::default(),
        }
    }

    #[test]
    fn one_thread_carries_slow_paths_and_two_the_fast_or_unknown_ones() {
        let mbit = |m: u64| Rate::BitsPerSec(m * 1_000_000);
        assert!(one_thread_for(&spec(mbit(100), mbit(100)), None), "100 Mbit/s each way");
        assert!(one_thread_for(&spec(mbit(300), mbit(300)), None), "300 Mbit/s each way");
        assert!(!one_thread_for(&spec(mbit(301), mbit(10)), None), "above 300 Mbit/s one way");
        assert!(!one_thread_for(&spec(mbit(1000), mbit(1000)), None), "a gigabit");
        assert!(!one_thread_for(&spec(mbit(100), Rate::Unlimited), None), "an unlimited direction");
        let mut stepped = spec(mbit(10), mbit(10));
        stepped.down.schedule.push(ScheduledChange { at_ns: ccbench_link::time::Instant::from_nanos(1), rate: Some(mbit(1000)), ..Default::default() });
        assert!(!one_thread_for(&stepped, None), "a rate that changes to a gigabit");
        assert!(!one_thread_for(&spec(mbit(100), mbit(100)), Some("2")), "forced to two");
        assert!(one_thread_for(&spec(Rate::Unlimited, Rate::Unlimited), Some("1")), "forced to one");
    }
}
