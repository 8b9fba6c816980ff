//! Bulk and file transfers' data: the spec (N flows pushing data one way for a duration or a
//! byte count, or a mix), the flow results and what they say about themselves. Running them is
//! ccbench-workload's `bulk.rs`.

use serde::{Deserialize, Serialize};

use super::{Direction, Side};

/// How much each flow sends.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Amount {
    /// Send for this long; goodput counts bytes that arrived within the window.
    Seconds(f64),
    /// Send exactly this many bytes; the flow completes when the last one arrives.
    Bytes(u64),
}

/// One flow of a mix: its algorithm and when it starts, seconds after the first.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct MixFlow {
    pub cc: super::Algorithm,
    pub start_s: f64,
    /// The client-side TCP port to bind, so the emulator can give this flow an access link of
    /// its own (`--flows cc:1@10ms`); any port when `None`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub client_port: Option<u16>,
}

impl MixFlow {
    /// When it starts after the first flow (its `start_s`, checked already; saturating).
    pub fn start(&self) -> std::time::Duration {
        crate::units::wire_time::from_s_saturating(self.start_s)
    }
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct BulkSpec {
    /// `flows` connections all running `cc`, all starting together…
    pub flows: u32,
    pub direction: Direction,
    pub amount: Amount,
    pub cc: super::Algorithm,
    /// …unless `mix` is given: then one connection per entry, each with its own algorithm and
    /// start time (flows sharing a bottleneck). A timed mix ends for all flows at once.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub mix: Vec<MixFlow>,
    pub port: u16,
    pub sample_interval_us: u64,
    /// A byte-count transfer that has not completed by then is stopped and marked incomplete.
    pub timeout_s: f64,
    /// QUIC only, for provoking scenario 5's mix-up on purpose: the algorithm (after `quic:`) of
    /// the *receiving* endpoint, when it should differ from the sender's. The result then
    /// carries a warning.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub quic_receiver_cc: Option<String>,
    /// Causes set on purpose (`--rcvbuf`, `--sndbuf`, `--app-rate`; issue 30).
    #[serde(flatten)]
    pub knobs: Knobs,
}

/// What a user may set to make a flow limited by something on purpose: the receiving socket's
/// buffer, the sending socket's buffer (whichever end sends or receives; over QUIC the
/// receiver's flow-control credit and the sender's send window), and the sending application's
/// rate (both transports).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Knobs {
    /// `SO_RCVBUF` of each receiving socket, bytes, as asked for (QUIC: the receiver's
    /// connection and stream windows).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rcvbuf: Option<u64>,
    /// `SO_SNDBUF` of each sending socket, bytes, as asked for (QUIC: the sender's send window).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sndbuf: Option<u64>,
    /// The sending application writes no faster than this, bit/s.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub app_rate_bps: Option<u64>,
    /// `--app-rate-from`: the rate cap begins this long after the flow starts (s); before it
    /// the application writes as fast as the socket takes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub app_rate_from_s: Option<f64>,
    /// `--app-pause`: when the sending application writes nothing, after the flow starts.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub app_pauses: Vec<AppPause>,
}

/// A time the sending application writes nothing (`--app-pause AT:LENGTH`).
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct AppPause {
    /// From this long after the flow starts (s) ...
    pub at_s: f64,
    /// ... for this long (s).
    pub for_s: f64,
}

impl Knobs {
    /// Whether the sending application always has data to write (no `--app-rate`, no
    /// `--app-pause`).
    pub fn saturating(&self) -> bool {
        self.app_rate_bps.is_none() && self.app_pauses.is_empty()
    }
}

impl BulkSpec {
    /// The flows asked for, counted without building the plan: a request for four billion flows
    /// is refused, not allocated.
    pub fn flow_count(&self) -> usize {
        if self.mix.is_empty() {
            self.flows as usize
        } else {
            self.mix.len()
        }
    }

    /// The flows to run, with their algorithms and start offsets.
    pub fn plan(&self) -> Vec<MixFlow> {
        if self.mix.is_empty() {
            (0..self.flows).map(|_| MixFlow { cc: self.cc.clone(), start_s: 0.0, client_port: None }).collect()
        } else {
            self.mix.clone()
        }
    }
}

#[derive(Clone, Debug, Serialize, Deserialize, schemars::JsonSchema)]
pub struct FlowResult {
    pub id: u32,
    pub sender: Side,
    /// The algorithm asked for, read back before any data was sent, and the sender's last state.
    #[serde(flatten)]
    pub sending: super::SenderRecord<String>,
    /// When this flow started sending, seconds after the first flow.
    #[serde(default)]
    pub start_s: f64,
    pub client_port: u16,
    /// Bytes counted at the receiver (within the window for timed transfers).
    pub bytes_received: u64,
    pub goodput_bps: f64,
    pub completed: bool,
    /// Time from the start of data until the last byte arrived (byte-count transfers).
    pub completion_time_s: Option<f64>,
    pub error: Option<String>,
}

#[derive(Clone, Debug, Serialize, Deserialize, schemars::JsonSchema)]
pub struct BulkResult {
    /// When data started to flow, µs after the caller's epoch.
    pub start_us: u64,
    /// Seconds the goodput is averaged over.
    pub elapsed_s: f64,
    /// All flows' bytes over the time from the first start to the end (what the bottleneck
    /// delivered in total).
    pub goodput_bps: f64,
    pub interrupted: bool,
    pub flows: Vec<FlowResult>,
}

impl super::Spec for BulkSpec {
    fn data_direction(&self) -> Direction {
        self.direction
    }
    super::spec_common!();
    fn metric(&self) -> &'static str {
        "goodput"
    }
    fn set_algorithm(&mut self, cc: &super::Algorithm) {
        if self.mix.is_empty() {
            self.cc = cc.clone();
        }
    }
    fn headline(&self) -> super::Headline {
        match self.amount {
            Amount::Seconds(_) => super::Headline::Goodput,
            Amount::Bytes(_) => super::Headline::FileCompletion,
        }
    }
    fn time_series(&self) -> super::TimeSeries {
        super::TimeSeries::Flows { per_flow: !self.mix.is_empty() }
    }
    fn describe(&self, over: super::Over) -> String {
        let dir = match self.direction {
            Direction::Download => "download (server sends)",
            Direction::Upload => "upload (client sends)",
        };
        let flows = if !self.mix.is_empty() {
            let stagger = self.mix.get(1).map(|f| f.start_s).unwrap_or(0.0);
            let names: Vec<String> = self.mix.iter().map(|f| f.cc.to_string()).collect();
            format!("{} flows sharing the bottleneck ({}), each starting {stagger} s after the previous", self.mix.len(), names.join(", "))
        } else if self.flows == 1 {
            "1 flow".to_string()
        } else {
            format!("{} flows", self.flows)
        };
        match self.amount {
            Amount::Seconds(s) => {
                let bulk = match over {
                    super::Over::Tcp => "bulk TCP",
                    super::Over::Quic => "bulk QUIC",
                    super::Over::Both => "bulk TCP and QUIC",
                };
                format!("{bulk} {dir}, {flows}, {s} s")
            }
            Amount::Bytes(b) => format!("file transfer of {} per flow, {dir}, {flows}", crate::units::fmt_bytes(b)),
        }
    }
    fn own_algorithms(&self) -> Vec<super::Algorithm> {
        self.mix.iter().map(|f| f.cc.clone()).collect()
    }
}

impl super::RunOutcome for BulkResult {
    fn interrupted(&self) -> bool {
        self.interrupted
    }
    /// The goodput of what arrived (a file that did not arrive in time got less than
    /// `size / timeout`, below any file that did).
    fn score(&self, _timeout_s: f64) -> (f64, bool) {
        (self.goodput_bps, !self.flows.iter().all(|f| f.completed))
    }
    fn figures(&self) -> super::RunFigures {
        let done = self.flows.iter().map(|f| f.completion_time_s.map(|c| c + f.start_s)).try_fold(0.0f64, |acc, t| t.map(|t| acc.max(t)));
        super::RunFigures {
            goodput_bps: self.goodput_bps,
            completion_time_s: done.filter(|_| !self.flows.is_empty()),
            all_completed: self.flows.iter().all(|f| f.completed),
            ..Default::default()
        }
    }
    fn senders(&self) -> Vec<super::SenderView<'_>> {
        self.flows.iter().map(|f| f.sending.view(format!("flow {}", f.id))).collect()
    }
    fn first_error(&self) -> Option<String> {
        self.flows.iter().find_map(|f| f.error.clone())
    }
    fn start_us(&self) -> u64 {
        self.start_us
    }
    fn measured_s(&self) -> Option<f64> {
        Some(self.elapsed_s)
    }
}
