//! A result's provenance read from this host and this build. The types are ccbench-model's
//! (re-exported here at the path they always had); reading the kernel, the emulator's
//! constants and the git revision this binary was built from is done here, so that the data
//! model reads nothing and is not rebuilt when a commit is made.

pub use ccbench_model::provenance::*;

/// Now, as result.json writes its times (RFC 3339, UTC). Reading the clock is this crate's, not
/// the data model's.
pub fn now_rfc3339() -> String {
    time::OffsetDateTime::now_utc().format(&time::format_description::well_known::Rfc3339).unwrap_or_default()
}

/// `provenance` with `finished_at` stamped now: every result (run and bench alike) is built
/// through this.
pub fn finished(mut provenance: Provenance) -> Provenance {
    provenance.finished_at = Some(now_rfc3339());
    provenance
}

/// The git revision this build is from (`-dirty` with uncommitted changes), from `build.rs`.
pub const GIT_REVISION: &str = env!("CCBENCH_GIT_REV");

/// The file's trimmed contents; `None` if it cannot be read or is empty.
fn read_trim(path: &str) -> Option<String> {
    std::fs::read_to_string(path).ok().map(|s| s.trim().to_string()).filter(|s| !s.is_empty())
}

/// `model name` from /proc/cpuinfo text (x86); `None` when absent.
fn cpu_model(cpuinfo: &str) -> Option<String> {
    cpuinfo.lines().find(|l| l.starts_with("model name")).and_then(|l| l.split_once(':')).map(|(_, v)| v.trim().to_string()).filter(|s| !s.is_empty())
}

/// `MemTotal` in KiB from /proc/meminfo text; `None` when absent or unparsable.
fn mem_total_kib(meminfo: &str) -> Option<u64> {
    meminfo.lines().find(|l| l.starts_with("MemTotal:")).and_then(|l| l.split_whitespace().nth(1)?.parse().ok())
}

/// Facts about this host, read now; each is `None` when it cannot be read.
pub fn host_facts() -> HostFacts {
    let read = |p: &str| std::fs::read_to_string(p).ok();
    HostFacts {
        hostname: read_trim("/proc/sys/kernel/hostname"),
        kernel_release: read_trim("/proc/sys/kernel/osrelease"),
        kernel_version: read_trim("/proc/version"),
        cpus: std::thread::available_parallelism().ok().map(|n| n.get()),
        cpu_model: read("/proc/cpuinfo").as_deref().and_then(cpu_model),
        memory_kib: read("/proc/meminfo").as_deref().and_then(mem_total_kib),
        available_congestion_controls: ccbench_kernel_tcp::available_congestion_controls().ok(),
        allowed_congestion_controls: ccbench_kernel_tcp::allowed_congestion_controls().ok(),
        loadable_congestion_controls: ccbench_kernel_tcp::loadable_congestion_controls(),
        default_congestion_control: ccbench_kernel_tcp::default_congestion_control().ok(),
        default_qdisc: ccbench_kernel_tcp::default_qdisc().ok(),
        // SAFETY: geteuid has no preconditions.
        euid: unsafe { libc::geteuid() },
    }
}

/// What is true of this host and this build now (not a default: it asks the kernel), with
/// the emulator's facts; [`Provenance::over_real_path`] replaces them for `--remote`.
pub fn of_this_host() -> Provenance {
    Provenance {
        ccbench_version: env!("CARGO_PKG_VERSION").to_string(),
        git_revision: GIT_REVISION.to_string(),
        command_line: std::env::args().collect(),
        started_at: now_rfc3339(),
        finished_at: None,
        host: host_facts(),
        namespace_sysctls: ccbench_emu::NAMESPACE_SYSCTLS.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect(),
        emulator: Some(EmulatorFacts {
            kind: "ccbench userspace TUN emulator".to_string(),
            client_addr: ccbench_emu::CLIENT_ADDR.to_string(),
            server_addr: ccbench_emu::SERVER_ADDR.to_string(),
            tun_txqueuelen: ccbench_emu::TUN_TXQUEUELEN,
        }),
        remote: None,
        quic_stack: None,
        controller_mismatches: Vec::new(),
    }
}

/// CPU time the hypervisor took from this machine since boot (all CPUs), in milliseconds.
/// Stolen time is when the emulator's timing goes wrong on a VM, so every run records it.
pub fn cpu_steal_ms() -> Option<f64> {
    let stat = std::fs::read_to_string("/proc/stat").ok()?;
    let ticks: u64 = stat.lines().next()?.split_whitespace().nth(8)?.parse().ok()?;
    // SAFETY: sysconf has no preconditions.
    let hz = unsafe { libc::sysconf(libc::_SC_CLK_TCK) }.max(1) as f64;
    Some(ticks as f64 * 1000.0 / hz)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unreadable_facts_are_unknown_not_empty_or_zero() {
        assert_eq!(read_trim("/nonexistent/ccbench/hostname"), None);
        assert_eq!(cpu_model("processor : 0\nflags : fpu\n"), None, "no model line (e.g. arm64): unknown");
        assert_eq!(cpu_model("model name\t: Intel(R) Xeon(R)\n"), Some("Intel(R) Xeon(R)".to_string()));
        assert_eq!(mem_total_kib("MemFree: 5 kB\n"), None);
        assert_eq!(mem_total_kib("MemTotal:       24588000 kB\n"), Some(24_588_000));
        let facts = HostFacts { hostname: None, ..host_facts() };
        assert!(serde_json::to_value(&facts).unwrap()["hostname"].is_null());
    }
}
