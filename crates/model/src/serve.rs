//! What `ccbench serve` tells an authenticated client of itself: the facts a result's
//! provenance records of the far host ([`ServerFacts`]) and the limits a plan is checked
//! against ([`Limits`]). The control protocol that carries them is `ccbench-remote`'s.

use serde::{Deserialize, Serialize};

/// What the server tells an authenticated client about itself: what its results need as
/// provenance, and what a plan is checked against.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct ServerFacts {
    pub ccbench_version: String,
    pub kernel_release: Option<String>,
    pub kernel_version: Option<String>,
    /// The algorithms a test may ask for (registered, or loadable as a module).
    pub congestion_controls: Vec<String>,
    pub default_congestion_control: Option<String>,
    pub default_qdisc: Option<String>,
    /// The interface the client's address reached (`null` when it cannot be told).
    #[serde(default)]
    pub serving_interface: Option<String>,
    /// That interface's root qdisc, as `tc -j qdisc show` names it (`null` when unknown).
    #[serde(default)]
    pub serving_qdisc: Option<String>,
}

/// The server's limits (`ccbench serve --max-…`).
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Limits {
    pub max_duration_s: f64,
    pub max_bytes: u64,
    pub max_clients: u32,
    pub max_tests_per_minute: u32,
    pub max_flows: u32,
    /// The fastest train a probe session sends (`--max-probe-rate`), IP bits/s. Absent from
    /// an older server's welcome: then the probe server's own default cap.
    #[serde(default = "default_max_probe_rate")]
    pub max_probe_rate_bps: u64,
}

fn default_max_probe_rate() -> u64 {
    1_000_000_000
}
