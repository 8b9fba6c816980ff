//! The object-store load's data: its spec (PUT or GET of fixed-size objects), its result and
//! what they say about themselves. Running it is ccbench-workload's `objects.rs`.

use serde::{Deserialize, Serialize};

use super::Side;

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum ObjectMethod {
    /// Upload: the client sends the object.
    Put,
    /// Download: the server sends the object.
    Get,
}

impl ObjectMethod {
    /// The side whose sockets carry the object data (and get the algorithm).
    pub fn sender(self) -> Side {
        match self {
            ObjectMethod::Put => Side::Client,
            ObjectMethod::Get => Side::Server,
        }
    }
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct ObjectsSpec {
    pub requests: u32,
    pub object_bytes: u64,
    pub concurrency: u32,
    pub method: ObjectMethod,
    pub cc: super::Algorithm,
    pub port: u16,
    pub sample_interval_us: u64,
    /// Bound on the whole run, connection setup included.
    pub timeout_s: f64,
    /// QUIC only, for provoking scenario 5's mix-up on purpose: the algorithm (after `quic:`) of
    /// the *receiving* endpoint, when it should differ from the sender's. The connection then
    /// carries a warning.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub quic_receiver_cc: Option<String>,
}

/// One request, finished or failed.
#[derive(Clone, Debug, Serialize, Deserialize, schemars::JsonSchema)]
pub struct RequestRecord {
    /// The object number (`/obj/N`).
    pub index: u32,
    pub connection: u32,
    /// When it was issued, seconds after the first request.
    pub start_s: f64,
    /// Issue to completion (also set for a failed request: issue to failure).
    pub latency_s: f64,
    /// Object bytes that moved for it (counted by the receiver for a GET).
    pub content_bytes: u64,
    pub ok: bool,
}

/// One client connection.
#[derive(Clone, Debug, Serialize, Deserialize, schemars::JsonSchema)]
pub struct ObjectsConnection {
    pub id: u32,
    pub client_port: u16,
    pub sender: Side,
    /// The algorithm of this connection's sending socket (the client's for PUT, the server's
    /// accepted socket for GET; no read-back if the server never saw it), and its last state
    /// (its samples went to the run's `SeriesSink` as `SocketId::Connection(client_port)`).
    #[serde(flatten)]
    pub sending: super::SenderRecord,
    pub requests_completed: u32,
    pub errors: u32,
    pub content_bytes: u64,
}

#[derive(Clone, Debug, Serialize, Deserialize, schemars::JsonSchema)]
pub struct ObjectsResult {
    pub method: ObjectMethod,
    pub object_bytes: u64,
    pub concurrency: u32,
    pub cc_requested: super::Cc,
    /// When the first request was issued, µs after the caller's epoch (`None`: never).
    pub start_us: Option<u64>,
    /// First request issued to last response complete.
    pub wall_time_s: f64,
    pub requests_requested: u32,
    pub requests_issued: u32,
    pub requests_completed: u32,
    /// Failed requests plus connections that could not be opened.
    pub errors: u32,
    /// Object bytes of completed requests.
    pub content_bytes: u64,
    /// `content_bytes` over `wall_time_s`, bits/s.
    pub content_throughput_bps: f64,
    /// The same in MB/s (10^6 bytes), the unit object-store testers report.
    pub content_throughput_mbytes_per_s: f64,
    /// Latency of completed requests, nearest-rank percentiles.
    pub latency_p50_s: Option<f64>,
    pub latency_p95_s: Option<f64>,
    pub latency_p99_s: Option<f64>,
    pub latency_max_s: Option<f64>,
    pub latency_mean_s: Option<f64>,
    /// Connections the client opened (equals `concurrency` unless one broke or failed).
    pub client_connections: u32,
    /// Connections the server accepted.
    pub server_connections: u32,
    /// Errors the server side saw (accept or serving failures).
    pub server_errors: u32,
    pub interrupted: bool,
    pub timed_out: bool,
    pub connections: Vec<ObjectsConnection>,
    pub requests: Vec<RequestRecord>,
    /// The first few error messages, client and server.
    pub error_messages: Vec<String>,
}

impl super::Spec for ObjectsSpec {
    fn data_direction(&self) -> super::Direction {
        match self.method {
            ObjectMethod::Put => super::Direction::Upload,
            ObjectMethod::Get => super::Direction::Download,
        }
    }
    super::spec_common!(cc);
    fn metric(&self) -> &'static str {
        "content throughput"
    }
    fn headline(&self) -> super::Headline {
        super::Headline::ContentThroughput
    }
    fn time_series(&self) -> super::TimeSeries {
        super::TimeSeries::Requests
    }
    fn describe(&self, over: super::Over) -> String {
        let method = match self.method {
            ObjectMethod::Put => "PUT",
            ObjectMethod::Get => "GET",
        };
        let how = over.words(
            &format!("{} persistent HTTP/1.1 connections", self.concurrency),
            &format!("{} concurrent streams on one QUIC connection", self.concurrency),
        );
        format!("object store: {} {method} requests of {} over {how}", self.requests, crate::units::fmt_bytes(self.object_bytes))
    }
}

impl super::RunOutcome for ObjectsResult {
    fn interrupted(&self) -> bool {
        self.interrupted
    }
    /// The content throughput; for a run that did not finish every request, the bytes that
    /// completed over the whole timeout. A finished run took at most the timeout for all `R × S`
    /// bytes, so it scores at least `R·S / timeout`, and an unfinished one moved less than that
    /// in the same time: it can never rank above a finished one. (The throughput of the
    /// completed requests alone, whose window closes at the last success, scored a run with one
    /// hung request above runs that finished.)
    fn score(&self, timeout_s: f64) -> (f64, bool) {
        if self.requests_completed < self.requests_requested || self.errors > 0 {
            (self.content_bytes as f64 * 8.0 / timeout_s, true)
        } else {
            (self.content_throughput_bps, false)
        }
    }
    fn figures(&self) -> super::RunFigures {
        super::RunFigures {
            goodput_bps: self.content_throughput_bps,
            completion_time_s: Some(self.wall_time_s),
            all_completed: self.requests_completed == self.requests_requested && self.errors == 0,
            latency_p50_s: self.latency_p50_s,
            latency_p99_s: self.latency_p99_s,
            html_ttfb_s: None,
        }
    }
    fn senders(&self) -> Vec<super::SenderView<'_>> {
        self.connections.iter().map(|c| c.sending.view(format!("connection {}", c.id))).collect()
    }
    fn first_error(&self) -> Option<String> {
        self.error_messages.first().cloned()
    }
    fn start_us(&self) -> u64 {
        self.start_us.unwrap_or(0)
    }
    fn measured_s(&self) -> Option<f64> {
        Some(self.wall_time_s)
    }
}
