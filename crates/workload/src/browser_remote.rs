//! The browser workload split across two hosts: `ccbench serve` runs the site (`site`, the same
//! server as the emulated run: HTTP/1.1, or HTTP/2 over TLS with a certificate it makes for
//! the test) behind its token gate (`http_end`), with the algorithm set on its sending sockets,
//! read back and sampled; this process runs Chromium and the loopback relay (`relay`) that
//! puts the token in front of each of Chromium's connections, the two alone in a network
//! namespace made for the load, so that no other local process can use the relay.
//!
//! Chromium is given the URL it would be given on an emulated path, the far end's own address
//! and data port, and `--host-resolver-rules` send that address and port to the relay: the
//! certificate is checked against the address it was made for, and over HTTP/2 Chromium
//! trusts exactly the key whose hash serve sent over the authenticated control connection.
//! What each connection carried is counted by serve (this end sees only TLS records), and
//! named here by the relay's own port on the real path, as the other remote workloads name
//! connections by their client port.

use std::collections::HashMap;
use std::sync::atomic::AtomicBool;
use std::sync::{Arc, Mutex};
use std::time::Instant;

use crate::browser::{check_site, drive_browser, ended, finish, launch, site_service, BrowserResult, BrowserSpec, BrowserTiming, ServedLog};
use crate::cdp::Cdp;
use crate::common::{lock, Errors};
use crate::far::{FarHttp, FarReport};
use crate::harness::{Finish, Harness, ServerProto};
use crate::http_end::{serving_prefix, HttpEnd};
use crate::site::Site;
use crate::tls::RunCertificate;
use crate::Spec as _;
use crate::{NoMeasureHook, PageProtocol, PageSpec, SeriesSink, WorkloadError};

/// Whether `ccbench serve` can serve `site` to a browser (see [`BrowserSpec::site`]).
pub(crate) fn check_site_request(site: &PageSpec) -> Result<(), String> {
    check_site(&site.page, site.protocol)
}

/// A browser test as a far end is asked for it: the site to serve (`BrowserSpec::site`), which
/// the browser on the client loads. The server sends, so it sets the algorithm. On the wire it
/// is the `PageSpec` it holds.
#[derive(Clone, Debug, serde::Serialize, serde::Deserialize, schemars::JsonSchema)]
#[serde(transparent)]
pub struct SiteRequest(pub PageSpec);

impl crate::FarSpec for SiteRequest {
    fn check(&self, l: &crate::ServeLimits<'_>) -> Result<(), String> {
        check_site_request(&self.0)?;
        l.has_cc(&self.0.cc)?;
        l.check_http(self.planned_connections(), self.0.timeout_s, self.0.page.total_bytes())
    }

    fn describe_far(&self) -> String {
        let proto = match self.0.protocol {
            PageProtocol::Http1 { .. } => "HTTP/1.1",
            PageProtocol::Http2 => "HTTP/2 over TLS",
        };
        format!("browser page of {} objects, {} bytes, {proto} {}", self.0.page.objects.len(), self.0.page.total_bytes(), self.0.cc)
    }

    /// Chromium's own: up to 6 per host, or one for HTTP/2 and a spare it may open beside.
    fn planned_connections(&self) -> u32 {
        match self.0.protocol {
            PageProtocol::Http1 { max_connections } => max_connections,
            PageProtocol::Http2 => 2,
        }
    }
}

/// Loads the page in Chromium from the far end's site. `end_far` ends the far end's side and
/// returns its report; it is called once the browser is stopped.
pub(crate) fn run_browser_remote(
    spec: &BrowserSpec,
    far: &FarHttp,
    epoch: Instant,
    stop: &AtomicBool,
    series: &dyn SeriesSink,
    end_far: &dyn Fn() -> Result<FarReport, String>,
) -> Result<BrowserResult, WorkloadError> {
    check_site(&spec.page, spec.protocol).map_err(WorkloadError::Setup)?;
    let harness = Harness::client_only(epoch, stop, series, spec.timeout(), spec.sample_interval())?;
    let (scheme, spki) = match spec.protocol {
        PageProtocol::Http1 { .. } => ("http", None),
        PageProtocol::Http2 => {
            let pin = far.spki_sha256().ok_or_else(|| WorkloadError::Setup("ccbench serve named no certificate key for HTTP/2 over TLS".into()))?;
            ("https", Some(crate::tls::spki_base64(&pin)))
        }
    };
    let timing = BrowserTiming { html_bytes_served: crate::site::html_len(&spec.page), ..BrowserTiming::default() };
    let relay_errors = Arc::new(Mutex::new(Errors::default()));
    let outcome = if harness.stopped_already() {
        Ok((Finish::Stopped, Err("stopped before the load began".to_string()), None))
    } else {
        load(spec, far, &harness, scheme, spki.as_deref(), relay_errors.clone())
    };
    harness.shutdown();
    let report = end_far().map_err(WorkloadError::Setup)?;
    let (how, loaded, nav_start) = outcome?;
    if let Some(actual) = lock(&far.log.mismatch).clone() {
        return Err(WorkloadError::CongestionMismatch { requested: spec.cc.to_string(), actual });
    }
    let mut sampled = harness.sampler.finish(epoch);
    far.absorb(&report, &mut sampled);
    let served: HashMap<u16, (u32, u64)> = report.connections.iter().filter_map(|c| Some((far.port_of(c.conn)?, c.served?))).collect();
    {
        let relay = lock(&relay_errors);
        lock(&far.log.errors).absorb(relay.count, &relay.messages);
    }
    let timing = BrowserTiming { browser_version: loaded.as_ref().ok().and_then(|l| l.version.clone()), ..timing };
    Ok(finish(spec, sampled, &far.log, &served, epoch, nav_start, loaded.map(|l| l.timings), how, timing))
}

type Outcome = (Finish<()>, Result<crate::browser::Loaded, String>, Option<Instant>);

/// The relay and the browser, from Chromium's start to its stop.
fn load(
    spec: &BrowserSpec,
    far: &FarHttp,
    harness: &Harness<'_>,
    scheme: &str,
    spki: Option<&str>,
    relay_errors: Arc<Mutex<Errors>>,
) -> Result<Outcome, WorkloadError> {
    // The relay and Chromium share a namespace of their own: no other local process can
    // reach the relay (`relay`).
    let (private, listener) = crate::relay::bind_private().map_err(WorkloadError::Setup)?;
    let relay_port = listener.local_addr()?.port();
    let far_addr = far.dialer().addr;
    // `SocketAddr`'s form is a URL's authority: `[v6]:port` for IPv6.
    let url = format!("{scheme}://{far_addr}/");
    let rules = format!("{}, MAP * ~NOTFOUND", crate::relay::resolver_rule(far_addr, relay_port));
    let (browser, to_browser, from_browser) = launch(spec, &private, &rules, spki)?;
    let dialer = far.dialer().clone();
    let client = async {
        let drive = async {
            let mut cdp = Cdp::new(to_browser, from_browser).map_err(|e| format!("DevTools pipe: {e}"))?;
            drive_browser(&mut cdp, &url, &NoMeasureHook).await
        };
        tokio::select! {
            loaded = drive => loaded,
            never = crate::relay::relay(listener, dialer, relay_errors) => match never {},
        }
    };
    let how = harness.drive_client(client)?;
    let outcome = ended(how, &browser, spec.timeout());
    // Chromium goes first, then (with the runtime) the relay and its connections.
    drop(browser);
    Ok(outcome)
}

/// The server half for a remote browser (`ccbench serve`): the site on `listener`, behind the
/// gate of `end`, over TLS with `cert` for HTTP/2. Each connection's report says what it
/// served; serving errors of connections that carried no request are dropped, as on the
/// emulated path (Chromium opens spare connections and closes them unused).
pub(crate) fn serve_browser_end(site: &PageSpec, listener: std::net::TcpListener, end: &HttpEnd<'_>, cert: Option<&RunCertificate>) -> FarReport {
    let refuse = |e: String| FarReport { errors: 1, error_messages: vec![e], ..FarReport::default() };
    if let Err(e) = check_site(&site.page, site.protocol) {
        return refuse(e);
    }
    let (proto, tls) = match (site.protocol, cert) {
        (PageProtocol::Http1 { .. }, _) => (ServerProto::Http1, None),
        (PageProtocol::Http2, Some(cert)) => (ServerProto::Http2, Some(cert.config.clone())),
        (PageProtocol::Http2, None) => return refuse("HTTP/2 to a browser needs a certificate".into()),
    };
    let log = Arc::new(crate::harness::ServerLog::default());
    let served: ServedLog = Arc::default();
    let make_service = site_service(Arc::new(Site::new(&site.page)), served.clone(), Some((end.budget.clone(), log.clone())));
    let mut report = crate::http_end::serve_end(listener, proto, tls, Some(&site.cc), site.sample_interval(), make_service, end);
    let served = lock(&served);
    for c in &mut report.connections {
        c.served = Some(u16::try_from(c.conn).ok().and_then(|id| served.get(&id)).copied().unwrap_or_default());
    }
    let idle: Vec<String> = report.connections.iter().filter(|c| c.served.is_some_and(|s| s.0 == 0)).map(|c| serving_prefix(c.conn)).collect();
    let before = report.error_messages.len();
    report.error_messages.retain(|m| !idle.iter().any(|p| m.starts_with(p.as_str())));
    report.errors = report.errors.saturating_sub((before - report.error_messages.len()) as u32);
    let errors = lock(&log.errors);
    report.errors += errors.count;
    report.error_messages.extend(errors.messages.iter().cloned());
    report
}

/// Over `--remote` the browser runs here and serve runs only its site.
impl crate::Remote for BrowserSpec {
    type Far = SiteRequest;
    type Result = BrowserResult;
    fn far_request(&self) -> SiteRequest {
        SiteRequest(self.site())
    }
    fn near_end(&self) -> crate::NearEnd<'_, BrowserResult> {
        crate::NearEnd::http(self, run_browser_remote)
    }
}

impl crate::FarRequest for SiteRequest {
    fn far_end(&self) -> crate::FarEnd<'_> {
        crate::FarEnd::Http(self)
    }
}

impl crate::HttpFar for SiteRequest {
    fn server_cc(&self) -> Option<&crate::Algorithm> {
        Some(&self.0.cc)
    }
    /// The browser's HTTP/2 is over TLS, with a certificate made for the test.
    fn tls(&self) -> bool {
        self.0.protocol == PageProtocol::Http2
    }
    fn timeout(&self) -> std::time::Duration {
        crate::Spec::timeout(&self.0)
    }
    fn serve(&self, listener: std::net::TcpListener, end: &HttpEnd<'_>, cert: Option<&RunCertificate>) -> FarReport {
        serve_browser_end(&self.0, listener, end, cert)
    }
}
