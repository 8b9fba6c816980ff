//! What ran where: the facts that make a result a result.

use serde::{Deserialize, Serialize};

/// The git revision this build is from (`-dirty` with uncommitted changes), from `build.rs`.
pub const GIT_REVISION: &str = env!("CCBENCH_GIT_REV");

#[derive(Clone, Debug, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Provenance {
    pub ccbench_version: String,
    pub git_revision: String,
    pub command_line: Vec<String>,
    pub started_at: String,
    pub finished_at: Option<String>,
    pub host: HostFacts,
    /// Sysctls ccbench set inside its own namespaces (the host's are never changed).
    pub namespace_sysctls: Vec<(String, String)>,
    /// The emulator; `null` for a run over a real path.
    pub emulator: Option<EmulatorFacts>,
    /// The far host of a run over a real path (`--remote`); `host` above is this end.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub remote: Option<RemoteFacts>,
    /// The QUIC stack, when a run used QUIC (its algorithms are read back per flow).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub quic_stack: Option<String>,
    /// Runs whose two QUIC endpoints ran different algorithms, read back from the connections.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub controller_mismatches: Vec<String>,
}

/// What the remote `ccbench serve` said of its host after the handshake, and the path's round
/// trip before the first run.
#[derive(Clone, Debug, Serialize, Deserialize, schemars::JsonSchema)]
pub struct RemoteFacts {
    pub address: String,
    #[serde(flatten)]
    pub facts: ccbench_remote::ServerFacts,
    pub limits: ccbench_remote::Limits,
    /// The kernel's smoothed RTT of the control connection just after the handshake.
    pub control_rtt_us_at_start: Option<u32>,
}

/// Facts about the host. Each is `null` when it could not be read: unknown, never "" or 0.
#[derive(Clone, Debug, Serialize, Deserialize, schemars::JsonSchema)]
pub struct HostFacts {
    pub hostname: Option<String>,
    pub kernel_release: Option<String>,
    pub kernel_version: Option<String>,
    pub cpus: Option<usize>,
    pub cpu_model: Option<String>,
    pub memory_kib: Option<u64>,
    pub available_congestion_controls: Option<Vec<String>>,
    pub allowed_congestion_controls: Option<Vec<String>>,
    /// Built as modules for this kernel, loaded on first use.
    pub loadable_congestion_controls: Vec<String>,
    pub default_congestion_control: Option<String>,
    pub default_qdisc: Option<String>,
    pub euid: u32,
}

#[derive(Clone, Debug, Serialize, Deserialize, schemars::JsonSchema)]
pub struct EmulatorFacts {
    pub kind: String,
    pub client_addr: String,
    pub server_addr: String,
    pub tun_txqueuelen: u32,
}

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

pub fn now_rfc3339() -> String {
    time::OffsetDateTime::now_utc().format(&time::format_description::well_known::Rfc3339).unwrap_or_default()
}

impl HostFacts {
    pub fn collect() -> Self {
        let read = |p: &str| std::fs::read_to_string(p).ok();
        HostFacts {
            hostname: read_trim("/proc/sys/kernel/hostname"),
            kernel_release: read_trim("/proc/sys/kernel/osrelease"),
            kernel_version: read_trim("/proc/version"),
            cpus: std::thread::available_parallelism().ok().map(|n| n.get()),
            cpu_model: read("/proc/cpuinfo").as_deref().and_then(cpu_model),
            memory_kib: read("/proc/meminfo").as_deref().and_then(mem_total_kib),
            available_congestion_controls: ccbench_probe::available_congestion_controls().ok(),
            allowed_congestion_controls: ccbench_probe::allowed_congestion_controls().ok(),
            loadable_congestion_controls: ccbench_probe::loadable_congestion_controls(),
            default_congestion_control: ccbench_probe::default_congestion_control().ok(),
            default_qdisc: ccbench_probe::default_qdisc().ok(),
            // SAFETY: geteuid has no preconditions.
            euid: unsafe { libc::geteuid() },
        }
    }
}

impl Provenance {
    /// Stamps `finished_at`: every result (run and bench alike) is built through this.
    pub fn finished(mut self) -> Self {
        self.finished_at = Some(now_rfc3339());
        self
    }

    /// Reads what is true of this host and this build now (not a default: it asks the kernel).
    pub fn of_this_host() -> Self {
        Provenance {
            ccbench_version: env!("CARGO_PKG_VERSION").to_string(),
            git_revision: GIT_REVISION.to_string(),
            command_line: std::env::args().collect(),
            started_at: now_rfc3339(),
            finished_at: None,
            host: HostFacts::collect(),
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

    /// For a run over a real path: no emulator or namespaces here, and the far host's facts.
    pub fn over_real_path(self, remote: RemoteFacts) -> Self {
        Provenance { namespace_sysctls: Vec::new(), emulator: None, remote: Some(remote), ..self }
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
        let facts = HostFacts { hostname: None, ..HostFacts::collect() };
        assert!(serde_json::to_value(&facts).unwrap()["hostname"].is_null());
    }
}
