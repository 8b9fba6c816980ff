//! The page loaded by headless Chromium: its spec and result (the page's, with what only the
//! browser measured). Driving Chromium is ccbench-workload's `browser.rs`.

use std::path::PathBuf;

use serde::{Deserialize, Serialize};

use super::{PageModel, PageProtocol, PageResult, PageSpec};

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct BrowserSpec {
    pub page: PageModel,
    /// HTTP/1.1 (`max_connections` must be Chromium's own 6) or HTTP/2 (over TLS).
    pub protocol: PageProtocol,
    /// Set on the server's sockets (the server sends the page).
    pub cc: super::Algorithm,
    pub port: u16,
    pub sample_interval_us: u64,
    /// Bound on the whole load, the browser's start included.
    pub timeout_s: f64,
    /// The Chromium executable.
    pub chromium: PathBuf,
}

/// What the browser itself measured, in seconds from its navigation start.
#[derive(Clone, Debug, Default, Serialize, Deserialize, schemars::JsonSchema)]
pub struct BrowserTiming {
    /// `Browser.getVersion`'s product, e.g. "HeadlessChrome/156.0.8078.79".
    pub browser_version: Option<String>,
    /// The navigation's `nextHopProtocol`: "http/1.1" or "h2".
    pub protocol: Option<String>,
    pub response_start_s: Option<f64>,
    pub dom_content_loaded_s: Option<f64>,
    /// `loadEventEnd`: the page's load time.
    pub load_event_end_s: Option<f64>,
    /// The last Largest Contentful Paint candidate's time (`None` when the browser reported
    /// none).
    pub lcp_s: Option<f64>,
    /// Entries the browser recorded: the navigation plus one per resource it fetched.
    pub resources_fetched: u32,
    /// The HTML document's size as served (the model's `html_bytes` unless its markup alone is
    /// longer).
    pub html_bytes_served: u64,
}

#[derive(Clone, Debug, Serialize, Deserialize, schemars::JsonSchema)]
pub struct BrowserResult {
    /// The load in the `page` workload's terms: resources, load time, connections. Per
    /// connection, requests and bytes are counted by the server (the browser does not say
    /// which connection carried what).
    pub page: PageResult,
    pub browser: BrowserTiming,
}

impl super::Spec for BrowserSpec {
    super::page::page_load_spec!();
    /// Chromium loads over kernel TCP only (`FromFlags::refuse_algorithm` refuses QUIC).
    fn describe(&self, _: super::Over) -> String {
        format!(
            "web page in headless Chromium: HTML of {} then {} images ({} in all) over {}",
            crate::units::fmt_bytes(self.page.html_bytes),
            self.page.objects.len(),
            crate::units::fmt_bytes(self.page.total_bytes()),
            match self.protocol {
                PageProtocol::Http1 { .. } => "HTTP/1.1 (Chromium's 6 connections)",
                PageProtocol::Http2 => "HTTP/2 over TLS",
            }
        )
    }
}

/// The load in the page's terms: the browser's own timings are extra figures.
impl super::RunOutcome for BrowserResult {
    fn interrupted(&self) -> bool {
        self.page.interrupted
    }
    fn score(&self, timeout_s: f64) -> (f64, bool) {
        self.page.score(timeout_s)
    }
    fn figures(&self) -> super::RunFigures {
        self.page.figures()
    }
    fn senders(&self) -> Vec<super::SenderView<'_>> {
        self.page.senders()
    }
    fn first_error(&self) -> Option<String> {
        self.page.first_error()
    }
    fn start_us(&self) -> u64 {
        self.page.start_us()
    }
    fn measured_s(&self) -> Option<f64> {
        self.page.measured_s()
    }
}

impl BrowserSpec {
    /// What serve is asked to run: the site, in the page workload's terms (the browser and its
    /// executable stay on this end).
    pub fn site(&self) -> PageSpec {
        PageSpec {
            page: self.page.clone(),
            protocol: self.protocol,
            cc: self.cc.clone(),
            port: self.port,
            sample_interval_us: self.sample_interval_us,
            timeout_s: self.timeout_s,
        }
    }
}
