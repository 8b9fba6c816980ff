//! The record every sending connection keeps about its algorithm, whatever the workload: what
//! was asked for, what the sending end (and, over QUIC, the receiving end) really ran, and the
//! sender's last state. One definition, embedded (`#[serde(flatten)]`) in a bulk flow, an
//! objects connection and a page connection, so result.json keeps the same fields.

use ccbench_kernel_tcp::TcpInfo;
use serde::{Deserialize, Serialize};

use super::{LimitedBy, Limits, Mechanism, QuicSample, Transport};

// `R` is how the read-back is kept: a bulk flow always has one (`String`, set before any data
// moves); an HTTP connection the server never accepted has none (`Option<String>`). (Not a doc
// comment: the JSON Schema would give it to the struct this one is flattened into.)
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct SenderRecord<R = Option<String>> {
    pub cc_requested: super::Cc,
    /// `TCP_CONGESTION` read back from the sending socket before any data was sent (for QUIC,
    /// the sending connection's controller, as `quic:NAME`).
    pub cc_read_back: R,
    #[serde(default)]
    pub transport: Transport,
    /// QUIC: the receiving connection's controller, read back the same way.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cc_receiver: Option<String>,
    /// Something the reader must know (the two QUIC ends ran different algorithms).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub warning: Option<String>,
    /// The sending socket's `TCP_INFO` at the end. (Its samples went to the run's `SeriesSink`
    /// as they were taken.)
    pub final_tcp_info: Option<TcpInfo>,
    /// QUIC: the sending connection's last sample (of a bulk connection's flows, only the first
    /// carries it, so that sums over flows count each connection once).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub final_quic: Option<QuicSample>,
    /// QUIC BBR's state changes (from a controller that exposes them); on a bulk connection's
    /// first flow only.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub bbr_events: Vec<BbrEvent>,
    /// What held the sender back, as fractions of its active time (issue 30); absent where it
    /// was not recorded (results written before it, or a sender it is not measured for).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub limited_by: Option<LimitedBy>,
    /// How it lost and what its window was, from the same samples.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mechanism: Option<Mechanism>,
    /// `--rcvbuf`/`--sndbuf` on this flow's sockets, asked and kept (issue 30); absent where
    /// neither was asked (or in results written before it).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub buffers: Option<SocketBuffers>,
}

/// A flow's socket buffers as asked (`--rcvbuf` on the receiving socket, `--sndbuf` on the
/// sending one) and as the kernel kept them: `SO_RCVBUF`/`SO_SNDBUF` read back from the
/// connected sockets, which Linux doubles for its bookkeeping and, without `SO_*BUFFORCE`
/// (CAP_NET_ADMIN), caps at `net.core.rmem_max`/`wmem_max` first (socket(7)). Bytes.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct SocketBuffers {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rcvbuf_requested: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rcvbuf_effective: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sndbuf_requested: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sndbuf_effective: Option<u64>,
}

impl<R> SenderRecord<R> {
    /// A kernel TCP sender: its read-back and its last `TCP_INFO`.
    pub fn tcp(cc_requested: impl Into<super::Cc>, cc_read_back: R, final_tcp_info: Option<TcpInfo>) -> Self {
        SenderRecord {
            cc_requested: cc_requested.into(),
            cc_read_back,
            transport: Transport::Tcp,
            cc_receiver: None,
            warning: None,
            final_tcp_info,
            final_quic: None,
            bbr_events: Vec::new(),
            limited_by: None,
            mechanism: None,
            buffers: None,
        }
    }

    /// The same record with its socket buffers, asked and kept.
    pub fn with_buffers(mut self, buffers: Option<SocketBuffers>) -> Self {
        self.buffers = buffers;
        self
    }

    /// The same record with its limited-by accounting.
    pub fn with_limits(mut self, limits: Option<Limits>) -> Self {
        if let Some(l) = limits {
            self.limited_by = Some(l.limited_by);
            self.mechanism = Some(l.mechanism);
        }
        self
    }
}

#[cfg(test)]
mod tests {
    use crate::workload::{FlowResult, ObjectsConnection, PageConnection};
    use serde_json::{json, Value};

    /// Reads `v` as a `T` and writes it back: the same JSON object, key for key.
    fn round_trip<T: serde::Serialize + serde::de::DeserializeOwned>(v: Value) {
        let t: T = serde_json::from_value(v.clone()).expect("reads the record as written before the shared record");
        assert_eq!(serde_json::to_value(&t).unwrap(), v);
    }

    /// The sender record is embedded flat: a flow and both kinds of connection, written with
    /// every field the record holds (QUIC) and with the fewest (kernel TCP), read and write the
    /// same fields as when each struct had its own copy of them.
    #[test]
    fn the_embedded_record_keeps_the_json_fields() {
        let quic = serde_json::to_value(crate::workload::QuicSample { t_us: 1, rtt_us: 2, cwnd_bytes: 3, ..Default::default() }).unwrap();
        round_trip::<FlowResult>(json!({
            "id": 0, "sender": "server", "cc_requested": "quic:bbr3", "start_s": 0.0, "cc_read_back": "quic:bbr3", "transport": "quic",
            "cc_receiver": "quic:cubic", "warning": "ends differ", "client_port": 4000, "bytes_received": 10, "goodput_bps": 80.0,
            "completed": true, "completion_time_s": null, "final_tcp_info": null, "final_quic": quic,
            "bbr_events": [{"t_us": 5, "from": "STARTUP", "to": "DRAIN", "round": 12, "full_bw_round": 9}, {"t_us": 7, "from": "DRAIN", "to": "PROBE_BW_DOWN"}],
            "error": null
        }));
        round_trip::<FlowResult>(json!({
            "id": 1, "sender": "client", "cc_requested": "cubic", "start_s": 1.5, "cc_read_back": "cubic", "transport": "tcp",
            "client_port": 4001, "bytes_received": 0, "goodput_bps": 0.0, "completed": false, "completion_time_s": 2.0,
            "final_tcp_info": null, "error": "reset"
        }));
        round_trip::<ObjectsConnection>(json!({
            "id": 2, "client_port": 4002, "sender": "client", "cc_requested": "bbr", "cc_read_back": null, "transport": "tcp",
            "requests_completed": 3, "errors": 1, "content_bytes": 30, "final_tcp_info": null
        }));
        round_trip::<PageConnection>(json!({
            "id": 3, "client_port": 4003, "cc_requested": "quic:cubic", "cc_read_back": "quic:cubic", "transport": "quic",
            "cc_receiver": "quic:cubic", "opened_s": 0.0, "requests_completed": 7, "bytes_received": 70, "final_tcp_info": null,
            "final_quic": quic
        }));
        // A record from before `transport` was written reads as kernel TCP.
        let old: FlowResult = serde_json::from_value(json!({
            "id": 0, "sender": "server", "cc_requested": "cubic", "cc_read_back": "cubic", "client_port": 1, "bytes_received": 0,
            "goodput_bps": 0.0, "completed": true, "completion_time_s": null, "final_tcp_info": null, "error": null
        }))
        .unwrap();
        assert_eq!(old.sending.transport, crate::workload::Transport::Tcp);
    }
}

/// A BBR state change: at `t_us` after the run's epoch, from one state to another.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct BbrEvent {
    pub t_us: u64,
    pub from: String,
    pub to: String,
    /// BBR.round_count at the change (draft-ietf-ccwg-bbr §5.5.1), where the controller shows
    /// it (our QUIC BBR; kernel BBR's TCP_CC_INFO does not). Absent in results written before it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub round: Option<u64>,
    /// BBR.round_count when full_bw last grew by 25 % or was reset (§5.3.1.2
    /// BBRCheckFullBWReached): on a plateau exit from STARTUP, `round - full_bw_round` is the
    /// rounds without growth, exactly (the draft's BBRStartupFullBwCount is 3).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub full_bw_round: Option<u64>,
}

impl BbrEvent {
    /// A change without round counts (kernel BBR, or a result written before them).
    pub fn new(t_us: u64, from: impl Into<String>, to: impl Into<String>) -> Self {
        BbrEvent { t_us, from: from.into(), to: to.into(), round: None, full_bw_round: None }
    }
}
