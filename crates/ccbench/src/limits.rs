//! The emulator knowing its own limits: a warning before a run that asks for more than this
//! machine's emulator has been measured to carry, and a per-run list of reasons to distrust it.

use ccbench_emu::{PathReport, PathSpec};
use ccbench_link::Rate;

/// Used until `ccbench bench emulator` has measured this machine: roughly what the emulator
/// carried at 10–50 ms RTT on the 2-vCPU VMs it was developed on (see docs/performance.md).
pub(crate) const DEFAULT_CAPACITY_BPS: f64 = 2.0e9;

/// Above this the emulator's timing error is no longer small against the path's own delays.
const SUSPECT_LATENESS_P99_US: f64 = 1000.0;
const SUSPECT_CPU_SHARE: f64 = 0.9;
const SUSPECT_STEAL: f64 = 0.05;

/// Where `ccbench bench emulator` records the rate the emulator carried on this host.
pub fn capacity_file() -> Option<std::path::PathBuf> {
    let base = std::env::var_os("XDG_CACHE_HOME")
        .map(std::path::PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|h| std::path::PathBuf::from(h).join(".cache")))?;
    Some(base.join("ccbench").join("emulator-capacity.json"))
}

/// The rate the emulator is known to carry here, and where that figure came from.
pub fn capacity() -> (f64, String) {
    let measured = capacity_file()
        .and_then(|f| std::fs::read_to_string(&f).ok().map(|t| (f, t)))
        .and_then(|(f, t)| serde_json::from_str::<serde_json::Value>(&t).ok().and_then(|v| v["capacity_bps"].as_f64()).map(|c| (c, f)));
    match measured {
        Some((c, f)) => (c, format!("measured by `ccbench bench emulator` ({})", f.display())),
        None => (DEFAULT_CAPACITY_BPS, "a rough default; run `ccbench bench emulator` to measure this machine".into()),
    }
}

/// Warnings to print before a run (and keep in the result).
pub fn check_path(spec: &PathSpec) -> Vec<String> {
    let (cap, source) = capacity();
    let mut warnings = Vec::new();
    for (name, d) in [("down", &spec.down), ("up", &spec.up)] {
        let asked = match (&d.trace, d.rate) {
            (Some(t), _) => t.mean_bps(),
            (None, Rate::BitsPerSec(b)) => b as f64,
            (None, Rate::Unlimited) => continue,
        };
        if asked > cap {
            warnings.push(format!(
                "the {name}link asks for {} but this machine's emulator has carried at most {} ({source}); the emulator may become the bottleneck, and runs that show it are flagged suspect",
                crate::units::fmt_rate(asked),
                crate::units::fmt_rate(cap)
            ));
        }
    }
    if !spec.offload {
        warnings.push("--no-offload: one system call per packet; expect the emulator to top out far lower".into());
    }
    warnings
}

/// Why a finished run's figures may reflect the emulator or the machine rather than the path.
/// `path` is `None` over a real path, where only the machine can be suspect.
pub(crate) fn suspect_reasons(path: Option<&PathReport>, steal: Option<f64>) -> Vec<String> {
    let mut reasons = Vec::new();
    for d in path.into_iter().flat_map(|p| [&p.down, &p.up]) {
        if d.lateness.p99_us > SUSPECT_LATENESS_P99_US {
            reasons.push(format!("{}: packets left up to {:.0} µs late (p99)", d.direction, d.lateness.p99_us));
        }
        if d.one_thread {
            // One thread carried both directions: judged once, on its whole busy share.
            let share = path.map_or(0.0, |p| p.down.cpu_share + p.up.cpu_share);
            if d.direction == "downlink" && share > SUSPECT_CPU_SHARE {
                reasons.push(format!("the forwarding thread (both directions) was busy {:.0} % of the time", share * 100.0));
            }
        } else if d.cpu_share > SUSPECT_CPU_SHARE {
            reasons.push(format!("{}: the forwarding thread was busy {:.0} % of the time", d.direction, d.cpu_share * 100.0));
        }
        let kernel = d.tun_tx_dropped.unwrap_or(0) + d.tun_rx_dropped.unwrap_or(0) + d.malformed;
        if kernel > 0 {
            reasons.push(format!("{}: {kernel} packets lost outside the model (kernel queue or malformed)", d.direction));
        }
        if d.tun_tx_dropped.is_none() || d.tun_rx_dropped.is_none() {
            reasons.push(format!("{}: the TUN devices' drop counters could not be read (kernel drops unknown)", d.direction));
        }
        if let Some(failure) = d.failure() {
            reasons.push(format!("forwarder failed: {failure}"));
        }
    }
    if let Some(s) = steal.filter(|s| *s > SUSPECT_STEAL) {
        reasons.push(format!("the hypervisor took {:.1} % of the CPU", s * 100.0));
    }
    reasons
}

#[cfg(test)]
mod tests {
    use super::*;
    use ccbench_emu::DirectionReport;

    fn direction(name: &str, tx: Option<u64>, rx: Option<u64>) -> DirectionReport {
        DirectionReport { direction: name.into(), tun_tx_dropped: tx, tun_rx_dropped: rx, ..Default::default() }
    }

    #[test]
    fn unreadable_tun_counters_are_reported_unknown_not_zero() {
        let path = PathReport { down: direction("downlink", None, None), up: direction("uplink", Some(0), Some(0)) };
        let reasons = suspect_reasons(Some(&path), None);
        assert_eq!(reasons.len(), 1, "{reasons:?}");
        assert!(reasons[0].starts_with("downlink:") && reasons[0].contains("unknown"), "{reasons:?}");
    }

    #[test]
    fn kernel_drops_and_failed_forwarders_are_suspect() {
        let mut up = direction("uplink", Some(3), Some(0));
        up.write_errors = 2;
        let path = PathReport { down: direction("downlink", Some(0), Some(0)), up };
        let reasons = suspect_reasons(Some(&path), None);
        assert!(reasons.iter().any(|r| r.contains("3 packets lost outside the model")), "{reasons:?}");
        assert!(reasons.iter().any(|r| r.contains("forwarder failed: uplink: 0 read errors, 2 write errors")), "{reasons:?}");
    }

    #[test]
    fn a_thread_carrying_both_directions_is_judged_on_its_whole_busy_share() {
        let shared = |share: f64| {
            let mut d = direction("downlink", Some(0), Some(0));
            let mut u = direction("uplink", Some(0), Some(0));
            for r in [&mut d, &mut u] {
                r.cpu_share = share;
                r.one_thread = true;
            }
            PathReport { down: d, up: u }
        };
        // 0.5 + 0.5 of one thread: busy all the time, though neither half is above 0.9.
        let reasons = suspect_reasons(Some(&shared(0.5)), None);
        assert_eq!(reasons, ["the forwarding thread (both directions) was busy 100 % of the time"]);
        assert!(suspect_reasons(Some(&shared(0.3)), None).is_empty());
    }
}
