//! A page load in a real browser: headless Chromium, started inside the client's namespace,
//! loads the page model from the `page` workload's server (the same catalogue, made into a
//! document by `site`) and reports its own Navigation Timing, Largest Contentful Paint and
//! Resource Timing. The result has the `page` workload's shape, so the verdict compares load
//! times the same way; what only a browser knows is added beside it.
//!
//! * HTTP/1.1 is plain `http://`, with Chromium's own connection limit (6 per host). HTTP/2
//!   is `https://` with ALPN `h2` and a certificate made for the run (`tls`), trusted by its
//!   key's hash only. The server sends, so the algorithm is set on its sockets, read back and
//!   sampled, as for `page`.
//! * Chromium runs under ccbench's reaper (`ccbench_netns::process`): the running binary must be
//!   ccbench (or dispatch its reaper argument), and nothing Chromium starts can outlive the run.
//!   Each load gets a fresh profile (no cache, no cookies, no pre-resolved connections) in a
//!   temporary directory that `HOME` and the XDG directories also point to, removed after the
//!   browser is stopped, whether the load finished, failed or was interrupted.
//! * The browser is driven over `--remote-debugging-pipe` (`cdp`). The measured span runs
//!   from the navigation's start in the browser (`performance.timeOrigin`, mapped onto this
//!   process's clock) to the end of its load event; the load time is `loadEventEnd`.
//! * Over `--remote` (`browser_remote`), `ccbench serve` runs the same site behind its token
//!   gate, and Chromium reaches it through a loopback relay that adds the token (`relay`).

use std::collections::HashMap;
use std::ffi::OsString;
use std::net::Ipv4Addr;
use std::os::fd::{AsFd, OwnedFd};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use serde::Deserialize;
use serde_json::json;

// The data half, at the paths the ends import it from.
use crate::cdp::{cloexec_pipe, Cdp};
use crate::common::{lock, Errors};
use crate::harness::{Accepted, Finish, Harness, ServerLog, ServerProto};
use crate::site::Site;
use crate::Spec as _;
pub(crate) use crate::{BrowserResult, BrowserSpec, BrowserTiming};
use crate::{MeasureHook, PageConnection, PageModel, PageProtocol, PageResult, ResourceTiming, RunContext, SocketId, Workload, WorkloadError};

impl Workload for BrowserSpec {
    type Result = BrowserResult;

    fn run(&self, run: &RunContext<'_>) -> Result<BrowserResult, WorkloadError> {
        load_in_browser(self, run)
    }
}

/// A fresh profile directory, removed on drop.
struct Profile(PathBuf);

impl Profile {
    fn create() -> Result<Profile, WorkloadError> {
        static N: AtomicU64 = AtomicU64::new(0);
        let nanos = SystemTime::now().duration_since(UNIX_EPOCH).map(|d| d.subsec_nanos()).unwrap_or(0);
        let dir = std::env::temp_dir().join(format!("ccbench-browser-{}-{}-{nanos}", std::process::id(), N.fetch_add(1, Ordering::SeqCst)));
        std::fs::create_dir(&dir).map_err(|e| WorkloadError::Setup(format!("creating the browser profile {}: {e}", dir.display())))?;
        Ok(Profile(dir))
    }

    /// The last lines Chromium wrote to its log, for an error message.
    fn log_tail(&self) -> String {
        let text = std::fs::read_to_string(self.0.join("chromium.log")).unwrap_or_default();
        // D-Bus complaints (there is no session bus) are noise in every run.
        let lines: Vec<&str> = text.lines().filter(|l| !l.trim().is_empty() && !l.contains("dbus/")).collect();
        lines[lines.len().saturating_sub(3)..].join(" | ")
    }
}

impl Drop for Profile {
    fn drop(&mut self) {
        // The browser is stopped before; a process of its PID namespace may take a moment to
        // be reaped, and a file it writes then would make one removal fail.
        for _ in 0..50 {
            if std::fs::remove_dir_all(&self.0).is_ok() || !self.0.exists() {
                return;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }
}

/// Chromium running in the client's namespace. Dropping it stops the browser (its reaper's
/// PID namespace dies with it) before the profile is removed.
pub(crate) struct Browser {
    child: Option<ccbench_netns::process::NsChild>,
    profile: Profile,
}

impl Drop for Browser {
    fn drop(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.terminate(Duration::from_secs(2));
        }
    }
}

/// Chromium's `--host-resolver-rules` on the emulated path: every name lookup but the
/// server's address fails (an IP literal goes through the rules too).
fn emulated_rules(server: Ipv4Addr) -> String {
    format!("MAP * ~NOTFOUND, EXCLUDE {server}")
}

/// The command line: headless, no sandbox (the reaper's PID namespace confines it, and it runs
/// as root), nothing that would talk to any host but ours (`rules`, the resolver rules, make
/// every other name lookup fail), and, for HTTP/2, trust in one key only.
fn chromium_args(chromium: &Path, profile: &Path, rules: &str, spki: Option<&str>) -> Vec<OsString> {
    let mut args: Vec<OsString> = vec![chromium.into()];
    for flag in [
        "--headless",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-sync",
        "--disable-extensions",
        "--disable-default-apps",
        "--disable-domain-reliability",
        "--disable-client-side-phishing-detection",
        "--disable-breakpad",
        "--disable-quic",
        "--disable-features=Translate,OptimizationHints,MediaRouter,InterestFeedContentSuggestions",
        "--no-first-run",
        "--no-default-browser-check",
        "--no-proxy-server",
        // A headless page counts as hidden: without these its timers and renderer may be
        // throttled, which would time the throttling instead of the network.
        "--disable-background-timer-throttling",
        "--disable-backgrounding-occluded-windows",
        "--disable-renderer-backgrounding",
        "--mute-audio",
        "--password-store=basic",
        "--remote-debugging-pipe",
    ] {
        args.push(flag.into());
    }
    args.push(format!("--host-resolver-rules={rules}").into());
    let mut dir = OsString::from("--user-data-dir=");
    dir.push(profile);
    args.push(dir);
    if let Some(spki) = spki {
        args.push(format!("--ignore-certificate-errors-spki-list={spki}").into());
    }
    args.push("about:blank".into());
    args
}

/// Starts Chromium in `ns` (the client's namespace; for a remote run, the relay's private one) with `rules`
/// as its resolver rules.
pub(crate) fn launch(spec: &BrowserSpec, ns: &ccbench_netns::Netns, rules: &str, spki: Option<&str>) -> Result<(Browser, OwnedFd, OwnedFd), WorkloadError> {
    let profile = Profile::create()?;
    let setup = |what: &str, e: std::io::Error| WorkloadError::Setup(format!("{what}: {e}"));
    let exe = std::env::current_exe().map_err(|e| setup("finding ccbench's own binary (the reaper)", e))?;
    let log = std::fs::File::create(profile.0.join("chromium.log")).map_err(|e| setup("creating the browser log", e))?;
    let log2 = log.try_clone().map_err(|e| setup("creating the browser log", e))?;
    let (browser_reads, to_browser) = cloexec_pipe().map_err(|e| setup("making the DevTools pipe", e))?;
    let (from_browser, browser_writes) = cloexec_pipe().map_err(|e| setup("making the DevTools pipe", e))?;
    let home = profile.0.to_string_lossy().into_owned();
    // Chromium keeps its certificate database under $HOME and caches under XDG_CACHE_HOME:
    // both inside the profile, so nothing outlives the run.
    let envs: Vec<(String, String)> = ["HOME", "XDG_CONFIG_HOME", "XDG_CACHE_HOME", "XDG_DATA_HOME"].iter().map(|k| (k.to_string(), home.clone())).collect();
    let argv = chromium_args(&spec.chromium, &profile.0, rules, spki);
    let child =
        ccbench_netns::process::spawn_in_with_fds(ns, &exe, &argv, &envs, log.into(), log2.into(), &[(browser_reads.as_fd(), 3), (browser_writes.as_fd(), 4)])
            .map_err(|e| setup(&format!("starting {}", spec.chromium.display()), e))?;
    // Our copies of the browser's ends go, so its exit closes the pipe for us.
    drop((browser_reads, browser_writes));
    Ok((Browser { child: Some(child), profile }, to_browser, from_browser))
}

/// Reads the browser's own figures once its load event has ended. LCP comes from a buffered
/// observer (its entries are queued, so the callback runs in a later task: the promise waits
/// one frame-ish 50 ms for it); Resource Timing lists every fetch.
const TIMINGS_JS: &str = r#"new Promise(resolve => {
  let lcp = null;
  try {
    new PerformanceObserver(list => { const e = list.getEntries(); if (e.length) lcp = e[e.length - 1].startTime; })
      .observe({ type: 'largest-contentful-paint', buffered: true });
  } catch (e) {}
  const done = () => {
    const nav = performance.getEntriesByType('navigation')[0];
    if (!nav || nav.loadEventEnd <= 0) { setTimeout(done, 10); return; }
    const pick = r => ({ name: r.name, requestStart: r.requestStart, responseStart: r.responseStart, responseEnd: r.responseEnd,
      encodedBodySize: r.encodedBodySize, responseStatus: r.responseStatus, nextHopProtocol: r.nextHopProtocol });
    resolve(JSON.stringify({
      timeOrigin: performance.timeOrigin,
      nav: Object.assign(pick(nav), { domContentLoadedEventEnd: nav.domContentLoadedEventEnd, loadEventEnd: nav.loadEventEnd }),
      lcp,
      resources: performance.getEntriesByType('resource').map(pick),
    }));
  };
  setTimeout(done, 50);
})"#;

/// One Resource Timing (or Navigation Timing) entry, in milliseconds from the time origin.
#[derive(Clone, Debug, Default, Deserialize, PartialEq, schemars::JsonSchema)]
#[serde(rename_all = "camelCase", default)]
pub(crate) struct Entry {
    pub name: String,
    pub request_start: f64,
    pub response_start: f64,
    pub response_end: f64,
    pub encoded_body_size: u64,
    pub response_status: u32,
    pub next_hop_protocol: String,
    pub dom_content_loaded_event_end: f64,
    pub load_event_end: f64,
}

/// What [`TIMINGS_JS`] returns.
#[derive(Clone, Debug, Default, Deserialize, PartialEq, schemars::JsonSchema)]
#[serde(rename_all = "camelCase", default)]
pub(crate) struct Timings {
    /// Navigation start, ms since the Unix epoch.
    pub time_origin: f64,
    pub nav: Entry,
    pub lcp: Option<f64>,
    pub resources: Vec<Entry>,
}

/// Parses the page's answer; everything is checked, since it comes from another process.
pub(crate) fn parse_timings(text: &str) -> Result<Timings, String> {
    let bad = |e: &dyn std::fmt::Display| format!("the browser's timing is not what was asked for: {e}");
    let v: serde_json::Value = serde_json::from_str(text).map_err(|e| bad(&e))?;
    if !v.is_object() {
        return Err(bad(&"not a JSON object"));
    }
    let t: Timings = serde_json::from_value(v).map_err(|e| bad(&e))?;
    let finite = |x: f64| x.is_finite() && x >= 0.0;
    let entries = std::iter::once(&t.nav).chain(&t.resources);
    if !finite(t.time_origin)
        || !t.lcp.is_none_or(finite)
        || !entries.into_iter().all(|e| [e.request_start, e.response_start, e.response_end, e.load_event_end].into_iter().all(finite))
    {
        return Err("the browser's timing has negative or non-finite times".into());
    }
    Ok(t)
}

/// What the client side brings back from the browser.
pub(crate) struct Loaded {
    pub version: Option<String>,
    /// This process's clocks when the navigation was asked for.
    asked: (Instant, SystemTime),
    pub timings: Timings,
}

pub(crate) async fn drive_browser(cdp: &mut Cdp, url: &str, hook: &dyn MeasureHook) -> Result<Loaded, String> {
    let e = |e: crate::cdp::CdpError| e.to_string();
    let version = cdp.call("Browser.getVersion", json!({}), None).await.map_err(e)?["product"].as_str().map(str::to_string);
    let target = cdp.call("Target.createTarget", json!({ "url": "about:blank" }), None).await.map_err(e)?;
    let target_id = target["targetId"].as_str().ok_or("Target.createTarget gave no targetId")?.to_string();
    let attached = cdp.call("Target.attachToTarget", json!({ "targetId": target_id, "flatten": true }), None).await.map_err(e)?;
    let session = attached["sessionId"].as_str().ok_or("Target.attachToTarget gave no sessionId")?.to_string();
    let s = Some(session.as_str());
    cdp.call("Page.enable", json!({}), s).await.map_err(e)?;
    // The default buffer (250 entries) is smaller than a large page.
    cdp.call("Page.addScriptToEvaluateOnNewDocument", json!({ "source": "performance.setResourceTimingBufferSize(100000)" }), s).await.map_err(e)?;
    let asked = (Instant::now(), SystemTime::now());
    hook.open(asked.0);
    let nav = cdp.call("Page.navigate", json!({ "url": url }), s).await.map_err(e)?;
    if let Some(err) = nav["errorText"].as_str() {
        return Err(format!("navigating to {url}: {err}"));
    }
    cdp.event("Page.loadEventFired", &session).await.map_err(e)?;
    let value = cdp.call("Runtime.evaluate", json!({ "expression": TIMINGS_JS, "awaitPromise": true, "returnByValue": true }), s).await.map_err(e)?;
    if let Some(ex) = value.get("exceptionDetails") {
        return Err(format!("reading the browser's timing: {ex}"));
    }
    let text = value["result"]["value"].as_str().ok_or("reading the browser's timing: no string came back")?;
    Ok(Loaded { version, asked, timings: parse_timings(text)? })
}

/// Requests and bytes the server sent on each connection, by client port (or, in serve, by
/// connection number).
pub(crate) type ServedLog = Arc<Mutex<HashMap<u16, (u32, u64)>>>;

/// Whether the site can be served to Chromium: a valid model, an HTML document of bounded
/// size, and, over HTTP/1.1, Chromium's own connection limit.
pub(crate) fn check_site(page: &PageModel, protocol: PageProtocol) -> Result<(), String> {
    page.validate()?;
    if page.html_bytes > crate::site::MAX_HTML_BYTES {
        return Err(format!("html_bytes {} is over the browser workload's {} bytes", page.html_bytes, crate::site::MAX_HTML_BYTES));
    }
    if let PageProtocol::Http1 { max_connections } = protocol {
        if max_connections != PageProtocol::BROWSER_MAX_CONNECTIONS {
            return Err(format!("Chromium opens its own {} connections; max_connections cannot be {max_connections}", PageProtocol::BROWSER_MAX_CONNECTIONS));
        }
    }
    Ok(())
}

/// The site's handler of each connection (named by `id`): counts what it serves in `served`
/// and, with `budget` (serve's byte limit), refuses a response that would exceed it (503).
pub(crate) fn site_service(
    site: Arc<Site>,
    served: ServedLog,
    budget: Option<(Arc<crate::ByteBudget>, Arc<crate::harness::ServerLog>)>,
) -> impl Fn(u16) -> SiteService {
    move |id| SiteService { site: site.clone(), served: served.clone(), budget: budget.clone(), id }
}

pub(crate) struct SiteService {
    site: Arc<Site>,
    served: ServedLog,
    budget: Option<(Arc<crate::ByteBudget>, Arc<crate::harness::ServerLog>)>,
    id: u16,
}

impl hyper::service::Service<hyper::Request<hyper::body::Incoming>> for SiteService {
    type Response = hyper::Response<crate::site::SiteBody>;
    type Error = std::convert::Infallible;
    type Future = std::future::Ready<Result<Self::Response, Self::Error>>;

    fn call(&self, req: hyper::Request<hyper::body::Incoming>) -> Self::Future {
        let (mut resp, len) = self.site.respond(req.method(), req.uri().path());
        if let Some((budget, log)) = &self.budget {
            if !budget.take(len) {
                lock(&log.errors).push(budget.reason.clone());
                resp = crate::site::unavailable();
            }
        }
        let mut s = lock(&self.served);
        let entry = s.entry(self.id).or_default();
        entry.0 += 1;
        entry.1 += http_body::Body::size_hint(resp.body()).exact().unwrap_or(0);
        std::future::ready(Ok(resp))
    }
}

fn load_in_browser(spec: &BrowserSpec, run: &RunContext<'_>) -> Result<BrowserResult, WorkloadError> {
    check_site(&spec.page, spec.protocol).map_err(WorkloadError::Setup)?;
    let mut harness = Harness::new(run, spec.timeout(), spec.sample_interval())?;
    let (scheme, proto, spki) = match spec.protocol {
        PageProtocol::Http1 { .. } => ("http", ServerProto::Http1, None),
        PageProtocol::Http2 => {
            let cert = crate::tls::certificate_for(run.server_addr.into(), &[b"h2"])?;
            harness = harness.with_tls(cert.config);
            ("https", ServerProto::Http2, Some(crate::tls::spki_base64(&cert.spki_sha256)))
        }
    };
    let site = Arc::new(Site::new(&spec.page));
    let timing = BrowserTiming { html_bytes_served: site.html.len() as u64, ..BrowserTiming::default() };
    let served: ServedLog = Arc::default();
    let sampled = |h: &Harness<'_>| h.sampler.finish(run.epoch);
    if harness.stopped_already() {
        let sampled = sampled(&harness);
        return Ok(finish(
            spec,
            sampled,
            &harness.server_log,
            &HashMap::new(),
            run.epoch,
            None,
            Err("stopped before the load began".into()),
            Finish::Stopped,
            timing,
        ));
    }
    let listener = harness.listen(spec.port, Some(&spec.cc))?;
    let (browser, to_browser, from_browser) = launch(spec, run.client, &emulated_rules(run.server_addr), spki.as_deref())?;
    let url = format!("{scheme}://{}:{}/", run.server_addr, spec.port);
    let client = async {
        let mut cdp = Cdp::new(to_browser, from_browser).map_err(|e| format!("DevTools pipe: {e}"))?;
        drive_browser(&mut cdp, &url, run.hook).await
    };
    let how = harness.drive(listener, proto, Some(&spec.cc), site_service(site, served.clone(), None), client)?;
    let (how, loaded, nav_start) = ended(how, &browser, spec.timeout());
    run.hook.close(load_end(&loaded, nav_start));
    drop(browser);
    harness.shutdown();
    if let Some(actual) = harness.server_mismatch() {
        return Err(WorkloadError::CongestionMismatch { requested: spec.cc.to_string(), actual });
    }
    let timing = BrowserTiming { browser_version: loaded.as_ref().ok().and_then(|l| l.version.clone()), ..timing };
    let sampled = sampled(&harness);
    let served = lock(&served).clone();
    Ok(finish(spec, sampled, &harness.server_log, &served, run.epoch, nav_start, loaded.map(|l| l.timings), how, timing))
}

/// How the browser's load ended: the outcome, what it measured (or why not, with the tail of
/// Chromium's log when it failed), and its navigation start on this process's clock.
pub(crate) fn ended(how: Finish<Result<Loaded, String>>, browser: &Browser, timeout: Duration) -> (Finish<()>, Result<Loaded, String>, Option<Instant>) {
    let (how, loaded) = match how {
        Finish::Completed(Ok(l)) => (Finish::Completed(()), Ok(l)),
        Finish::Completed(Err(e)) => (Finish::Completed(()), Err(format!("{e} (Chromium's log: {})", browser.profile.log_tail()))),
        Finish::Stopped => (Finish::Stopped, Err("interrupted".into())),
        Finish::TimedOut => (Finish::TimedOut, Err(format!("the page did not load within {} s", timeout.as_secs_f64()))),
    };
    let nav_start = loaded.as_ref().ok().map(browser_start);
    (how, loaded, nav_start)
}

/// The end of the measured span: the browser's load event; a load that did not end, ends now.
pub(crate) fn load_end(loaded: &Result<Loaded, String>, nav_start: Option<Instant>) -> Instant {
    match (loaded, nav_start) {
        (Ok(l), Some(t0)) if l.timings.nav.load_event_end > 0.0 => t0 + Duration::from_secs_f64(l.timings.nav.load_event_end / 1000.0),
        _ => Instant::now(),
    }
}

/// The browser's navigation start on this process's clock: its `timeOrigin` is wall-clock
/// time, taken after the navigation was asked for.
fn browser_start(l: &Loaded) -> Instant {
    let origin = Duration::from_secs_f64(l.timings.time_origin / 1000.0);
    let asked = l.asked.1.duration_since(UNIX_EPOCH).unwrap_or_default();
    l.asked.0 + origin.saturating_sub(asked)
}

/// The result from what the browser measured and what the server saw: its connections (by
/// client port), their sending sockets' last `TCP_INFO` (`sampled`), its errors, and what it
/// served on each connection.
#[allow(clippy::too_many_arguments)]
pub(crate) fn finish(
    spec: &BrowserSpec,
    mut sampled: HashMap<SocketId, Option<ccbench_kernel_tcp::TcpInfo>>,
    server_log: &ServerLog,
    served: &HashMap<u16, (u32, u64)>,
    epoch: Instant,
    nav_start: Option<Instant>,
    loaded: Result<Timings, String>,
    how: Finish<()>,
    mut timing: BrowserTiming,
) -> BrowserResult {
    let accepted: Vec<Accepted> = lock(&server_log.accepted).clone();
    let server_errors = lock(&server_log.errors);
    let secs = |ms: f64| (ms > 0.0).then_some(ms / 1000.0);
    let mut errors = Errors::default();
    let mut resources = resource_list(&spec.page, timing.html_bytes_served);
    let mut page_load_s = None;
    match &loaded {
        Ok(t) => {
            timing.protocol = Some(t.nav.next_hop_protocol.clone()).filter(|p| !p.is_empty());
            timing.response_start_s = secs(t.nav.response_start);
            timing.dom_content_loaded_s = secs(t.nav.dom_content_loaded_event_end);
            timing.load_event_end_s = secs(t.nav.load_event_end);
            timing.lcp_s = t.lcp.and_then(secs);
            timing.resources_fetched = 1 + t.resources.len() as u32;
            fill(&mut resources[0], &t.nav);
            for entry in &t.resources {
                let index = entry.name.rsplit_once("/o/").and_then(|(_, n)| n.parse::<usize>().ok()).filter(|&i| i < spec.page.objects.len());
                match index {
                    Some(i) => fill(&mut resources[i + 1], entry),
                    None => errors.push(format!("the browser fetched {}, which the page does not reference", entry.name)),
                }
            }
            for r in resources.iter().filter(|r| !r.ok) {
                errors.push(format!(
                    "{}: {}",
                    r.path,
                    if r.complete_s.is_none() { "not fetched".to_string() } else { format!("{} of {} bytes", r.bytes_received, r.bytes_expected) }
                ));
            }
            if errors.count == 0 {
                page_load_s = timing.load_event_end_s;
            }
        }
        Err(e) => errors.push(e.clone()),
    }
    let connections: Vec<PageConnection> = accepted
        .iter()
        .enumerate()
        .map(|(id, a)| {
            let (requests, bytes) = served.get(&a.client_port).copied().unwrap_or_default();
            PageConnection {
                id: id as u32,
                client_port: a.client_port,
                sending: crate::SenderRecord::tcp(&spec.cc, a.cc_read_back.clone(), sampled.remove(&SocketId::Connection(a.client_port)).flatten()),
                opened_s: nav_start.map_or(0.0, |t0| a.at.saturating_duration_since(t0).as_secs_f64()),
                requests_completed: requests,
                bytes_received: bytes,
            }
        })
        .collect();
    let bytes_received: u64 = resources.iter().map(|r| r.bytes_received).sum();
    // Chromium opens spare connections it may never use (a second one beside the HTTP/2
    // connection, measured in every run) and drops them at the end, which the server logs as
    // "serving PORT: connection error". Those are not errors of the load; only errors on
    // connections that carried requests count.
    let idle: Vec<String> = accepted.iter().filter(|a| !served.contains_key(&a.client_port)).map(|a| format!("serving {}: ", a.client_port)).collect();
    let real_server_errors: Vec<&String> = server_errors.messages.iter().filter(|m| !idle.iter().any(|p| m.starts_with(p.as_str()))).collect();
    let idle_errors = (server_errors.messages.len() - real_server_errors.len()) as u32;
    let mut error_messages = errors.messages.clone();
    error_messages.extend(real_server_errors.iter().map(|m| format!("server: {m}")));
    let html = &resources[0];
    let page = PageResult {
        protocol: spec.protocol,
        cc_requested: (&spec.cc).into(),
        start_us: nav_start.map(|t| t.saturating_duration_since(epoch).as_micros() as u64),
        html_ttfb_s: html.ttfb_s,
        html_complete_s: if html.ok { html.complete_s } else { None },
        page_load_s,
        page_bytes: spec.page.objects.iter().fold(timing.html_bytes_served, |sum, &o| sum.saturating_add(o)),
        bytes_received,
        page_goodput_bps: page_load_s.filter(|&t| t > 0.0).map(|t| bytes_received as f64 * 8.0 / t).unwrap_or(0.0),
        requests_total: resources.len() as u32,
        requests_completed: resources.iter().filter(|r| r.ok).count() as u32,
        errors: errors.count,
        connections_used: accepted.len() as u32,
        server_connections: accepted.len() as u32,
        server_errors: server_errors.count - idle_errors,
        interrupted: matches!(how, Finish::Stopped),
        timed_out: matches!(how, Finish::TimedOut),
        connections,
        resources,
        error_messages,
    };
    BrowserResult { page, browser: timing }
}

fn resource_list(page: &PageModel, html_bytes: u64) -> Vec<ResourceTiming> {
    let entry = |path: String, bytes_expected| ResourceTiming {
        path,
        bytes_expected,
        bytes_received: 0,
        connection: None,
        request_s: 0.0,
        ttfb_s: None,
        complete_s: None,
        ok: false,
    };
    std::iter::once(entry("/".into(), html_bytes)).chain(page.objects.iter().enumerate().map(|(i, &b)| entry(format!("/o/{i}"), b))).collect()
}

/// A resource as the browser saw it: complete when its status was 200 and its whole body came.
fn fill(r: &mut ResourceTiming, e: &Entry) {
    r.request_s = e.request_start / 1000.0;
    r.ttfb_s = (e.response_start > 0.0).then_some(e.response_start / 1000.0);
    r.complete_s = (e.response_end > 0.0).then_some(e.response_end / 1000.0);
    r.bytes_received = e.encoded_body_size;
    r.ok = e.response_status == 200 && e.encoded_body_size == r.bytes_expected;
}

#[cfg(test)]
mod tests {
    use super::*;

    const SAMPLE: &str = r#"{"timeOrigin":1795421421113.4,
      "nav":{"name":"http://10.0.0.2:8080/","requestStart":10.5,"responseStart":12.7,"responseEnd":40.8,"encodedBodySize":2000,
             "responseStatus":200,"nextHopProtocol":"http/1.1","domContentLoadedEventEnd":62.7,"loadEventEnd":294.3},
      "lcp":108,
      "resources":[{"name":"http://10.0.0.2:8080/o/0","requestStart":86.6,"responseStart":94.3,"responseEnd":105.3,"encodedBodySize":5000,"responseStatus":200,"nextHopProtocol":"http/1.1"},
                   {"name":"http://10.0.0.2:8080/o/1","requestStart":86.6,"responseStart":94.3,"responseEnd":120.0,"encodedBodySize":10,"responseStatus":200,"nextHopProtocol":"http/1.1"}]}"#;

    #[test]
    fn timings_parse_and_refuse_nonsense() {
        let t = parse_timings(SAMPLE).unwrap();
        assert_eq!(t.nav.load_event_end, 294.3);
        assert_eq!(t.lcp, Some(108.0));
        assert_eq!(t.resources.len(), 2);
        assert!(parse_timings("{}").is_ok(), "missing fields default (a load that did not finish)");
        for bad in ["", "[]", "{\"timeOrigin\":-1}", "{\"lcp\":-5}", "{\"nav\":{\"loadEventEnd\":\"x\"}}", "{\"resources\":[{\"responseEnd\":-1}]}"] {
            assert!(parse_timings(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn resources_map_by_path_and_are_complete_only_in_full() {
        let page = PageModel { html_bytes: 2000, objects: vec![5000, 600] };
        let t = parse_timings(SAMPLE).unwrap();
        let mut rs = resource_list(&page, 2000);
        fill(&mut rs[0], &t.nav);
        fill(&mut rs[1], &t.resources[0]);
        fill(&mut rs[2], &t.resources[1]);
        assert!(rs[0].ok && rs[1].ok);
        assert!(!rs[2].ok, "10 of 600 bytes is not the object");
        assert!((rs[1].complete_s.unwrap() - 0.1053).abs() < 1e-12);
        assert!((rs[0].ttfb_s.unwrap() - 0.0127).abs() < 1e-12);
    }

    #[test]
    fn browser_start_maps_the_time_origin_onto_this_clock() {
        let now = Instant::now();
        let wall = UNIX_EPOCH + Duration::from_millis(1_000_000);
        let l = Loaded { version: None, asked: (now, wall), timings: Timings { time_origin: 1_000_012.5, ..Timings::default() } };
        assert_eq!(browser_start(&l), now + Duration::from_micros(12_500));
        let early = Loaded { timings: Timings { time_origin: 999_000.0, ..Timings::default() }, ..l };
        assert_eq!(browser_start(&early), now, "never before the request");
    }

    #[test]
    fn command_line_pins_the_key_and_keeps_the_profile() {
        let args = chromium_args(Path::new("/usr/bin/chromium"), Path::new("/tmp/p"), &emulated_rules(Ipv4Addr::new(10, 0, 0, 2)), Some("abc="));
        let args: Vec<String> = args.iter().map(|a| a.to_string_lossy().into_owned()).collect();
        assert!(args.contains(&"--user-data-dir=/tmp/p".to_string()));
        assert!(args.contains(&"--ignore-certificate-errors-spki-list=abc=".to_string()));
        assert!(!args.iter().any(|a| a == "--ignore-certificate-errors"));
        assert!(args.contains(&"--remote-debugging-pipe".to_string()));
        assert!(args.contains(&"--host-resolver-rules=MAP * ~NOTFOUND, EXCLUDE 10.0.0.2".to_string()));
    }
}

/// `ccbench run --workload browser`: page's `--page` and `--http`, loaded by Chromium.
mod args {
    use std::path::{Path, PathBuf};

    use crate::flags::{FlagError, FlagSet, FromFlags, Kind, RunFlags};
    use crate::{Algorithm, BrowserSpec, Http, PageProtocol, PageSpec};

    crate::workload_flags! {
        /// Browser has no flags of its own: it takes page's `--page` and `--http`.
        #[derive(clap::Args, serde::Deserialize, Debug, Clone, Default, PartialEq)]
        #[group(skip)]
        #[serde(deny_unknown_fields, default, rename_all = "kebab-case")]
        pub struct BrowserFlags {}
    }

    /// What `--workload browser` runs, in order of preference: Chromium's headless shell (the same
    /// Blink and network stack without the browser's UI layers: on this 2-vCPU VM a 48-image
    /// HTTP/1.1 load through a 2 ms path took 0.17–0.23 s and 0.45 s of CPU in all, against
    /// 0.31–0.53 s and 1.3 s for full Chromium 156 in headless mode, whose CPU time hid most of
    /// a 20 ms path's round trips), then full Chromium.
    const CHROMIUM_NAMES: [&str; 2] = ["chromium-headless-shell", "chromium"];

    /// Where `--workload browser` finds Chromium: `$CCBENCH_CHROMIUM` when set, else the first of
    /// [`CHROMIUM_NAMES`] on the `PATH`.
    fn find_chromium() -> Result<PathBuf, FlagError> {
        let missing = |looked: String| {
            FlagError::precondition(format!(
                "--workload browser needs Chromium, which is not installed ({looked}); install it with: apt-get install chromium-headless-shell"
            ))
        };
        let runnable = |p: &Path| std::fs::metadata(p).is_ok_and(|m| m.is_file() && std::os::unix::fs::PermissionsExt::mode(&m.permissions()) & 0o111 != 0);
        if let Some(p) = std::env::var_os("CCBENCH_CHROMIUM") {
            let p = PathBuf::from(p);
            return if runnable(&p) { Ok(p) } else { Err(missing(format!("CCBENCH_CHROMIUM={} is not an executable file", p.display()))) };
        }
        let path = std::env::var_os("PATH").unwrap_or_default();
        CHROMIUM_NAMES
            .iter()
            .find_map(|name| std::env::split_paths(&path).map(|d| d.join(name)).find(|p| runnable(p)))
            .ok_or_else(|| missing(format!("neither {} on the PATH", CHROMIUM_NAMES.join(" nor "))))
    }

    impl FromFlags for BrowserSpec {
        type Flags = BrowserFlags;
        const KINDS: &'static [Kind] =
            &[Kind { name: "browser", help: Some("The page loaded by headless Chromium"), about: None, takes: &["--page", "--http"] }];

        /// Chromium speaks HTTP/3 only to servers it learnt it from; ours speaks QUIC framing of
        /// its own. Refused before looking for Chromium, so the answer is the same on every host.
        fn refuse_algorithm(_kind: &str, cc: &Algorithm) -> Option<String> {
            cc.is_quic().then(|| "QUIC algorithms with every workload but browser (Chromium runs over kernel TCP)".to_string())
        }

        fn from_flags(_kind: &str, flags: &dyn FlagSet, run: &RunFlags) -> Result<Self, FlagError> {
            let page_flags = flags.of::<PageSpec>();
            let page = page_flags.page_model()?;
            let protocol = match page_flags.http() {
                Http::V1 => PageProtocol::Http1 { max_connections: PageProtocol::BROWSER_MAX_CONNECTIONS },
                Http::V2 => PageProtocol::Http2,
            };
            Ok(BrowserSpec {
                page,
                protocol,
                cc: Algorithm::default(),
                port: run.port,
                sample_interval_us: run.sample_interval_us(),
                timeout_s: run.timeout_s(),
                chromium: find_chromium()?,
            })
        }
    }
}

pub use args::BrowserFlags;
