//! What ran where: the facts that make a result a result.

use serde::Serialize;

#[derive(Clone, Debug, Serialize)]
pub struct Provenance {
    pub ccbench_version: &'static str,
    pub git_revision: &'static str,
    pub command_line: Vec<String>,
    pub started_at: String,
    pub finished_at: Option<String>,
    pub host: HostFacts,
    /// Sysctls ccbench set inside its own namespaces (the host's are never changed).
    pub namespace_sysctls: Vec<(String, String)>,
    pub emulator: EmulatorFacts,
}

#[derive(Clone, Debug, Serialize)]
pub struct HostFacts {
    pub hostname: String,
    pub kernel_release: String,
    pub kernel_version: String,
    pub cpus: usize,
    pub cpu_model: String,
    pub memory_kib: u64,
    pub available_congestion_controls: Vec<String>,
    pub allowed_congestion_controls: Vec<String>,
    pub default_congestion_control: String,
    pub default_qdisc: String,
    pub euid: u32,
}

#[derive(Clone, Debug, Serialize)]
pub struct EmulatorFacts {
    pub kind: &'static str,
    pub client_addr: String,
    pub server_addr: String,
    pub tun_txqueuelen: u32,
}

fn read_trim(path: &str) -> String {
    std::fs::read_to_string(path).map(|s| s.trim().to_string()).unwrap_or_default()
}

pub fn now_rfc3339() -> String {
    time::OffsetDateTime::now_utc().format(&time::format_description::well_known::Rfc3339).unwrap_or_default()
}

impl HostFacts {
    pub fn collect() -> Self {
        let cpuinfo = std::fs::read_to_string("/proc/cpuinfo").unwrap_or_default();
        let cpu_model =
            cpuinfo.lines().find(|l| l.starts_with("model name")).and_then(|l| l.split_once(':')).map(|(_, v)| v.trim().to_string()).unwrap_or_default();
        let memory_kib = std::fs::read_to_string("/proc/meminfo")
            .unwrap_or_default()
            .lines()
            .find(|l| l.starts_with("MemTotal:"))
            .and_then(|l| l.split_whitespace().nth(1).and_then(|v| v.parse().ok()))
            .unwrap_or(0);
        HostFacts {
            hostname: read_trim("/proc/sys/kernel/hostname"),
            kernel_release: read_trim("/proc/sys/kernel/osrelease"),
            kernel_version: read_trim("/proc/version"),
            cpus: std::thread::available_parallelism().map(|n| n.get()).unwrap_or(1),
            cpu_model,
            memory_kib,
            available_congestion_controls: ccbench_probe::available_congestion_controls().unwrap_or_default(),
            allowed_congestion_controls: ccbench_probe::allowed_congestion_controls().unwrap_or_default(),
            default_congestion_control: ccbench_probe::default_congestion_control().unwrap_or_default(),
            default_qdisc: ccbench_probe::default_qdisc().unwrap_or_default(),
            // SAFETY: geteuid has no preconditions.
            euid: unsafe { libc::geteuid() },
        }
    }
}

impl Provenance {
    pub fn new() -> Self {
        Provenance {
            ccbench_version: env!("CARGO_PKG_VERSION"),
            git_revision: env!("CCBENCH_GIT_REV"),
            command_line: std::env::args().collect(),
            started_at: now_rfc3339(),
            finished_at: None,
            host: HostFacts::collect(),
            namespace_sysctls: ccbench_emu::NAMESPACE_SYSCTLS.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect(),
            emulator: EmulatorFacts {
                kind: "ccbench userspace TUN emulator",
                client_addr: ccbench_emu::CLIENT_ADDR.to_string(),
                server_addr: ccbench_emu::SERVER_ADDR.to_string(),
                tun_txqueuelen: ccbench_emu::TUN_TXQUEUELEN,
            },
        }
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
