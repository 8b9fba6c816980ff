//! The emulated path as a result records it: what defines it ([`PathSpec`]) and what its
//! emulator saw ([`PathReport`], per direction, with its sampled series of [`LinkSample`]s).
//! Plain data: running the path is ccbench-emu's, which re-exports all of this at its old paths
//! (issue 29: emu depends on the data model, not the reverse).

mod report;

use ccbench_link::{time, DirectionConfig};
use serde::{Deserialize, Serialize};

pub use report::{DelaySummary, DirectionReport, LinkSample, WindowReport};

/// Everything that defines an emulated path.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq, schemars::JsonSchema)]
pub struct PathSpec {
    /// Server → client.
    pub down: DirectionConfig,
    /// Client → server.
    pub up: DirectionConfig,
    pub mtu: u32,
    pub seed: u64,
    pub sample_interval_us: u64,
    /// Let the kernel hand over TSO superframes (segmented again here, per MTU). Off: one
    /// read per packet, as Mahimahi does.
    #[serde(default = "default_true")]
    pub offload: bool,
    /// After a wake-up the emulator sleeps at least this long before the next one, so
    /// departures closer together leave in one batch, up to this much late. 0 = every
    /// departure gets its own wake-up.
    #[serde(default = "default_batch_us")]
    pub batch_us: u64,
    /// Flows with access links of their own behind the bottleneck (`--flows cc:1@10ms`), by
    /// client port; empty for the one shared path.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub access: Vec<AccessDelay>,
    /// ECN at the TCP endpoints: `net.ipv4.tcp_ecn` in both namespaces.
    #[serde(default, skip_serializing_if = "TcpEcn::is_default")]
    pub tcp_ecn: TcpEcn,
}

/// One flow's access link: the client-side TCP port its packets carry (as source port on the
/// uplink, destination port on the downlink) and the one-way delay it adds in each direction.
// A QUIC flow's port is its UDP socket's: emu's `access::extra_delay` reads TCP and UDP alike.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct AccessDelay {
    pub client_port: u16,
    pub one_way_ns: u64,
}

/// `net.ipv4.tcp_ecn` in the run's namespaces (Documentation/networking/ip-sysctl.rst).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum TcpEcn {
    /// Left at the namespace's default, 2: ECN when the peer asks, never asking.
    #[default]
    Default,
    /// 1: ask for classic ECN (RFC 3168) on outgoing connections and accept it on incoming ones.
    On,
    /// 3: ask for Accurate ECN on outgoing connections and accept it on incoming ones.
    AccEcn,
}

impl TcpEcn {
    fn is_default(&self) -> bool {
        *self == TcpEcn::Default
    }

    /// The sysctl's value, `None` to leave it alone.
    pub fn sysctl(self) -> Option<&'static str> {
        match self {
            TcpEcn::Default => None,
            TcpEcn::On => Some("1"),
            TcpEcn::AccEcn => Some("3"),
        }
    }
}

impl PathSpec {
    /// The least gap between two wake-ups of a forwarder ([`PathSpec::batch_us`]).
    pub fn batch(&self) -> time::Duration {
        time::Duration::from_micros(self.batch_us)
    }
}

/// Default for [`PathSpec::batch_us`]: at a gigabit this groups about two packets per wake-up
/// and keeps the median delay error near 20 µs (see the benchmark in docs/performance.md).
pub const DEFAULT_BATCH_US: u64 = 25;

/// `--emulator-batch auto`: the batch a path's own time scales allow, so the emulator's timing
/// error stays small against both (and its CPU small where they are long):
/// - at most 1 % of the base RTT (`rtt_ns`), so the delay a packet sees is off by no more;
/// - at most two serialization times of an MTU-sized packet at the bottleneck (`rate_bps`),
///   so a batch releases about as much at once as a NIC's interrupt coalescing would;
/// - never above 1 ms (`--emulator-batch`'s own bound, Mahimahi's timer resolution).
///
/// An unlimited link has no packet time: it keeps [`DEFAULT_BATCH_US`] (bounded by the RTT),
/// which the unlimited-rate benchmarks were measured with.
pub fn auto_batch_us(rate_bps: Option<u64>, rtt_ns: u64, mtu: u32) -> u64 {
    let by_rtt = rtt_ns as f64 / 1e3 / 100.0;
    let by_packet = match rate_bps {
        Some(bps) if bps > 0 => 2.0 * f64::from(mtu) * 8.0 / bps as f64 * 1e6,
        _ => DEFAULT_BATCH_US as f64,
    };
    by_rtt.min(by_packet).clamp(0.0, 1000.0) as u64
}

fn default_batch_us() -> u64 {
    DEFAULT_BATCH_US
}

fn default_true() -> bool {
    true
}

/// What the emulator saw in each direction.
#[derive(Clone, Debug, Serialize, Deserialize, schemars::JsonSchema)]
pub struct PathReport {
    pub down: DirectionReport,
    pub up: DirectionReport,
}

/// Where samples go as they are taken. A streaming sink (e.g. a file writer) keeps a
/// forwarder's memory flat however long the path runs.
pub trait SampleSink: Send {
    fn push(&mut self, s: &LinkSample);
}

impl SampleSink for Vec<LinkSample> {
    fn push(&mut self, s: &LinkSample) {
        Vec::push(self, s.clone());
    }
}

#[cfg(test)]
mod auto_batch_tests {
    use super::*;

    #[test]
    fn the_auto_batch_is_the_tighter_of_the_rtt_and_the_packet_time() {
        // 100 Mbit/s: an MTU is 120 µs on the wire, two are 240 µs; 1 % of 20 ms is 200 µs.
        assert_eq!(auto_batch_us(Some(100_000_000), 20_000_000, 1500), 200);
        // 1 Gbit/s, 10 ms: two packet times (24 µs) are tighter than 1 % of the RTT (100 µs).
        assert_eq!(auto_batch_us(Some(1_000_000_000), 10_000_000, 1500), 24);
        // 10 Mbit/s, 200 ms: 2.4 ms by the packet, 2 ms by the RTT, capped at 1 ms.
        assert_eq!(auto_batch_us(Some(10_000_000), 200_000_000, 1500), 1000);
        // 64 kbit/s at 1 ms: 1 % of the RTT, 10 µs.
        assert_eq!(auto_batch_us(Some(64_000), 1_000_000, 1500), 10);
        // No delay: every departure at its own time.
        assert_eq!(auto_batch_us(Some(100_000_000), 0, 1500), 0);
    }

    #[test]
    fn an_unlimited_link_keeps_the_default_within_the_rtt() {
        assert_eq!(auto_batch_us(None, 10_000_000, 1500), DEFAULT_BATCH_US);
        assert_eq!(auto_batch_us(None, 1_000_000, 1500), 10);
    }
}
