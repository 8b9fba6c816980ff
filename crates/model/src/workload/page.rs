//! A page load's data: its spec (the page, the protocol), its result (per resource and per
//! connection) and what they say about themselves. Loading it is ccbench-workload's `page.rs`.

use serde::{Deserialize, Serialize};

use super::PageModel;

/// How the browser talks to the server.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum PageProtocol {
    /// HTTP/1.1, at most `max_connections` parallel persistent connections.
    Http1 { max_connections: u32 },
    /// HTTP/2 over cleartext TCP (h2c, prior knowledge), one connection.
    Http2,
}

impl PageProtocol {
    /// Browsers open at most 6 HTTP/1.1 connections per host.
    pub const BROWSER_MAX_CONNECTIONS: u32 = 6;
}

impl Default for PageProtocol {
    fn default() -> Self {
        PageProtocol::Http1 { max_connections: Self::BROWSER_MAX_CONNECTIONS }
    }
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct PageSpec {
    pub page: PageModel,
    pub protocol: PageProtocol,
    /// Set on the server's sockets (the server sends the page).
    pub cc: super::Algorithm,
    pub port: u16,
    pub sample_interval_us: u64,
    /// Bound on the whole load, connection setup included.
    pub timeout_s: f64,
}

/// One fetched resource. All times are seconds after navigation start.
#[derive(Clone, Debug, Serialize, Deserialize, schemars::JsonSchema)]
pub struct ResourceTiming {
    /// `/` for the HTML, `/o/N` for object N.
    pub path: String,
    pub bytes_expected: u64,
    pub bytes_received: u64,
    pub connection: Option<u32>,
    pub request_s: f64,
    /// Response head received (the first bytes of the response).
    pub ttfb_s: Option<f64>,
    /// Last body byte received.
    pub complete_s: Option<f64>,
    pub ok: bool,
}

/// One client connection.
#[derive(Clone, Debug, Serialize, Deserialize, schemars::JsonSchema)]
pub struct PageConnection {
    pub id: u32,
    pub client_port: u16,
    /// The algorithm of the server's accepted (sending) socket, and its last state (its samples
    /// went to the run's `SeriesSink` as `SocketId::Connection(client_port)`).
    #[serde(flatten)]
    pub sending: super::SenderRecord,
    /// When it was opened, seconds after navigation start.
    pub opened_s: f64,
    pub requests_completed: u32,
    pub bytes_received: u64,
}

#[derive(Clone, Debug, Serialize, Deserialize, schemars::JsonSchema)]
pub struct PageResult {
    pub protocol: PageProtocol,
    pub cc_requested: super::Cc,
    /// Navigation start, µs after the caller's epoch.
    pub start_us: Option<u64>,
    /// Navigation start to the first bytes of the HTML response (includes the connection).
    pub html_ttfb_s: Option<f64>,
    /// Navigation start to the last byte of the HTML.
    pub html_complete_s: Option<f64>,
    /// Navigation start to the last byte of the last object; `None` unless every request
    /// succeeded.
    pub page_load_s: Option<f64>,
    pub page_bytes: u64,
    /// Content bytes received (HTML and objects).
    pub bytes_received: u64,
    /// Content bytes over the page load time, bits/s (0 when the page did not complete).
    pub page_goodput_bps: f64,
    /// 1 (the HTML) + the number of objects.
    pub requests_total: u32,
    pub requests_completed: u32,
    pub errors: u32,
    /// Connections the client opened.
    pub connections_used: u32,
    /// Connections the server accepted.
    pub server_connections: u32,
    pub server_errors: u32,
    pub interrupted: bool,
    pub timed_out: bool,
    pub connections: Vec<PageConnection>,
    /// The HTML first, then the objects in page order.
    pub resources: Vec<ResourceTiming>,
    pub error_messages: Vec<String>,
}

/// What a page load is, however it is loaded (`PageSpec` by our client, `BrowserSpec` by
/// Chromium): the server sends, the run is read by its load time. Expands inside `impl Spec`
/// of a spec with `cc`, `timeout_s` and `sample_interval_us` fields.
macro_rules! page_load_spec {
    () => {
        fn data_direction(&self) -> super::Direction {
            super::Direction::Download
        }
        $crate::workload::spec_common!(cc);
        // The page's load speed, as 1 / load time, is what the verdict compares.
        fn metric(&self) -> &'static str {
            "page-load speed (1 / load time)"
        }
        fn headline(&self) -> super::Headline {
            super::Headline::PageLoad
        }
        fn time_series(&self) -> super::TimeSeries {
            super::TimeSeries::Requests
        }
    };
}

pub(crate) use page_load_spec;

impl super::Spec for PageSpec {
    page_load_spec!();
    fn describe(&self, over: super::Over) -> String {
        format!(
            "web page: HTML of {} then {} objects ({} in all) over {}",
            crate::units::fmt_bytes(self.page.html_bytes),
            self.page.objects.len(),
            crate::units::fmt_bytes(self.page.total_bytes()),
            over.words(&self.protocol.over_tcp(), "one QUIC connection, a stream per object")
        )
    }
}

impl PageProtocol {
    /// How a page travels over kernel TCP.
    fn over_tcp(self) -> String {
        match self {
            PageProtocol::Http1 { max_connections } => format!("HTTP/1.1 with up to {max_connections} connections"),
            PageProtocol::Http2 => "HTTP/2 on one connection".to_string(),
        }
    }
}

impl super::RunOutcome for PageResult {
    fn interrupted(&self) -> bool {
        self.interrupted
    }
    /// The page-load speed, `1 / load time`; `1 / timeout` for a page that did not load in time
    /// (a page that loaded has at least that).
    fn score(&self, timeout_s: f64) -> (f64, bool) {
        match self.page_load_s.filter(|t| *t > 0.0) {
            Some(t) => (1.0 / t, false),
            None => (1.0 / timeout_s, true),
        }
    }
    fn figures(&self) -> super::RunFigures {
        super::RunFigures {
            goodput_bps: self.page_goodput_bps,
            completion_time_s: self.page_load_s,
            all_completed: self.page_load_s.is_some() && self.errors == 0,
            html_ttfb_s: self.html_ttfb_s,
            ..Default::default()
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
        self.page_load_s
    }
}
