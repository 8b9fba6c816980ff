//! What ran where: the facts that make a result a result. Reading them from this host and
//! this build is the `ccbench` library's (`ccbench/src/provenance.rs`): the data model reads
//! no kernel and stamps no build.

use serde::{Deserialize, Serialize};

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
    pub facts: crate::serve::ServerFacts,
    pub limits: crate::serve::Limits,
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

impl Provenance {
    /// For a run over a real path: no emulator or namespaces here, and the far host's facts.
    pub fn over_real_path(self, remote: RemoteFacts) -> Self {
        Provenance { namespace_sysctls: Vec::new(), emulator: None, remote: Some(remote), ..self }
    }
}
