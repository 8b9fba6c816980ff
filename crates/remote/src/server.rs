//! `ccbench serve`: the far end of a real path.
//!
//! One thread per control connection. Before anything else the peer must pass the handshake
//! (see [`crate::auth`]); then each test it asks for is checked against the algorithms this
//! host has and the limits given on the command line, before any data connection is accepted.
//! A test's data connections must carry its random token: one that does not is closed unread
//! beyond the token, and nothing is ever sent to it. The algorithm is set per socket
//! (`TCP_CONGESTION`); no sysctl is touched. Every test, refusal and failed handshake is one
//! line on stderr.

use std::collections::{HashMap, VecDeque};
use std::io::{ErrorKind, Read};
use std::net::{IpAddr, SocketAddr, TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{mpsc, Mutex};
use std::time::{Duration, Instant};

use ccbench_probe::Sample;
use ccbench_workload::{
    prepare_stream, run_end, Amount, BulkSpec, ByteBudget, Direction, EndClock, EndStream, GoodputPoint, HttpEndEvents, NoMeasureHook, QuicSample, SeriesSink,
    Side, SocketId,
};

use crate::auth::{self, Secret};
use crate::proto::{self, hex, unhex, ClientMsg, FrameError, Limits, ServerFacts, ServerMsg, TestRequest, VERSION};

/// How long the handshake's reads may wait, each.
const HANDSHAKE_TIMEOUT: Duration = Duration::from_secs(10);
/// How long an authenticated client may stay silent between tests.
const IDLE_TIMEOUT: Duration = Duration::from_secs(60);
/// How long a test's data connections (and then its `Start`) may take to arrive.
pub(crate) const SETUP_TIMEOUT: Duration = Duration::from_secs(10);
const WRITE_TIMEOUT: Duration = Duration::from_secs(10);
pub const TOKEN_LEN: usize = 16;
/// A data connection's first bytes: the token and the flow id.
pub const DATA_HELLO_LEN: usize = TOKEN_LEN + 4;

pub struct ServeConfig {
    pub listen: SocketAddr,
    pub secret: Secret,
    pub limits: Limits,
    pub facts: ServerFacts,
}

/// What every session shares.
pub(crate) struct Shared {
    pub(crate) config: ServeConfig,
    active: AtomicUsize,
    /// When each client address's recent tests started (the last minute's).
    recent: Mutex<HashMap<IpAddr, VecDeque<Instant>>>,
    pub(crate) stop: AtomicBool,
}

/// Binds, says where on stderr, and serves until `stop` is set.
pub fn serve(config: ServeConfig, stop: &AtomicBool) -> std::io::Result<()> {
    let listener = TcpListener::bind(config.listen)?;
    listener.set_nonblocking(true)?;
    let l = config.limits;
    eprintln!(
        "ccbench serve: listening on {} (limits: {} s and {} bytes per test, {} clients, {} tests per minute per client)",
        listener.local_addr()?,
        l.max_duration_s,
        l.max_bytes,
        l.max_clients,
        l.max_tests_per_minute
    );
    let shared = Shared { config, active: AtomicUsize::new(0), recent: Mutex::new(HashMap::new()), stop: AtomicBool::new(false) };
    std::thread::scope(|s| {
        while !stop.load(Ordering::SeqCst) {
            match listener.accept() {
                Ok((stream, peer)) => {
                    if shared.active.fetch_add(1, Ordering::SeqCst) >= shared.config.limits.max_clients as usize {
                        shared.active.fetch_sub(1, Ordering::SeqCst);
                        let message = format!("the server already serves its maximum of {} clients (--max-clients)", shared.config.limits.max_clients);
                        eprintln!("ccbench serve: {peer}: {message}");
                        let _ = stream.set_nonblocking(false).and_then(|_| stream.set_write_timeout(Some(Duration::from_secs(1))));
                        let _ = proto::write_msg(&mut &stream, &ServerMsg::Error { message });
                        continue;
                    }
                    let shared = &shared;
                    s.spawn(move || {
                        session(stream, peer, shared);
                        shared.active.fetch_sub(1, Ordering::SeqCst);
                    });
                }
                Err(e) if e.kind() == ErrorKind::WouldBlock => std::thread::sleep(Duration::from_millis(20)),
                Err(e) => eprintln!("ccbench serve: accept: {e}"),
            }
        }
        shared.stop.store(true, Ordering::SeqCst);
    });
    Ok(())
}

fn session(stream: TcpStream, peer: SocketAddr, shared: &Shared) {
    let mut s = &stream;
    let setup = stream.set_nonblocking(false).and_then(|_| stream.set_write_timeout(Some(WRITE_TIMEOUT))).and_then(|_| stream.set_nodelay(true));
    if setup.is_err() {
        return;
    }
    if let Err(message) = handshake(&stream, &shared.config) {
        eprintln!("ccbench serve: {peer}: {message}");
        let _ = proto::write_msg(&mut s, &ServerMsg::Error { message });
        return;
    }
    loop {
        let _ = stream.set_read_timeout(Some(IDLE_TIMEOUT));
        let msg = match proto::read_msg::<ClientMsg>(&mut s) {
            Ok(m) => m,
            Err(FrameError::Io(e)) if e.kind() == ErrorKind::UnexpectedEof => return,
            Err(e) => {
                let message = format!("closing the session: {e}");
                eprintln!("ccbench serve: {peer}: {message}");
                let _ = proto::write_msg(&mut s, &ServerMsg::Error { message });
                return;
            }
        };
        let reply = match msg {
            ClientMsg::Check { test } => match check(&test, &shared.config) {
                Ok(()) => ServerMsg::Allowed,
                Err(reason) => ServerMsg::Refused { reason },
            },
            ClientMsg::Run { test } => match check(&test, &shared.config).and_then(|_| admit(peer.ip(), shared)) {
                Ok(()) => {
                    let began = Instant::now();
                    let outcome = match &test {
                        TestRequest::Bulk(spec) if crate::quic::is_quic(spec) => crate::quic::run_quic(&stream, spec, shared),
                        TestRequest::Bulk(spec) => run_bulk(&stream, spec, shared),
                        TestRequest::Objects(_) | TestRequest::Page(_) | TestRequest::Browser(_) => crate::http::run_http(&stream, &test, shared),
                    };
                    eprintln!("ccbench serve: {peer} {}: {}", describe(&test), outcome.log_line(began.elapsed()));
                    match outcome.fatal {
                        Some(message) => ServerMsg::Error { message },
                        None => continue,
                    }
                }
                Err(reason) => {
                    eprintln!("ccbench serve: {peer} {}: refused: {reason}", describe(&test));
                    ServerMsg::Refused { reason }
                }
            },
            ClientMsg::Probe { request } => match crate::probe::check(&request, &shared.config.limits).and_then(|l| admit(peer.ip(), shared).map(|_| l)) {
                Ok(limits) => {
                    let began = Instant::now();
                    let outcome = crate::probe::serve_session(&stream, limits, &shared.stop);
                    eprintln!("ccbench serve: {peer} {}", outcome.log_line(began.elapsed()));
                    match outcome.fatal {
                        Some(message) => ServerMsg::Error { message },
                        None => continue,
                    }
                }
                Err(reason) => {
                    eprintln!("ccbench serve: {peer} probe: refused: {reason}");
                    ServerMsg::Refused { reason }
                }
            },
            // The end of a probe the server had already ended at its time limit: nothing to stop.
            ClientMsg::ProbeEnd => continue,
            other => ServerMsg::Error { message: format!("unexpected {} message", kind_of(&other)) },
        };
        let fatal = matches!(reply, ServerMsg::Error { .. });
        if proto::write_msg(&mut s, &reply).is_err() || fatal {
            return;
        }
    }
}

pub(crate) fn kind_of(m: &ClientMsg) -> &'static str {
    match m {
        ClientMsg::Probe { .. } => "probe",
        ClientMsg::ProbeEnd => "probe_end",
        ClientMsg::Hello { .. } => "hello",
        ClientMsg::Auth { .. } => "auth",
        ClientMsg::Check { .. } => "check",
        ClientMsg::Run { .. } => "run",
        ClientMsg::Start => "start",
        ClientMsg::Stop => "stop",
    }
}

/// Proves this end holds the secret and checks the peer does. Err: the one line the peer and
/// the log get.
fn handshake(stream: &TcpStream, config: &ServeConfig) -> Result<(), String> {
    let mut s = stream;
    stream.set_read_timeout(Some(HANDSHAKE_TIMEOUT)).map_err(|e| e.to_string())?;
    let client_nonce = match proto::read_msg::<ClientMsg>(&mut s) {
        Ok(ClientMsg::Hello { version, nonce }) if version == VERSION => {
            unhex::<{ auth::NONCE_LEN }>(&nonce).ok_or("malformed hello: the nonce is not 32 bytes of hex")?
        }
        Ok(ClientMsg::Hello { version, .. }) => return Err(format!("protocol version {version} is not supported; this server speaks version {VERSION}")),
        Ok(other) => return Err(format!("expected a hello, got a {} message", kind_of(&other))),
        Err(e) => return Err(format!("handshake failed: {e}")),
    };
    let server_nonce = auth::nonce();
    let proof = hex(&config.secret.server_proof(&client_nonce, &server_nonce));
    proto::write_msg(&mut s, &ServerMsg::Challenge { version: VERSION, nonce: hex(&server_nonce), proof }).map_err(|e| e.to_string())?;
    let authenticated = match proto::read_msg::<ClientMsg>(&mut s) {
        Ok(ClientMsg::Auth { proof }) => unhex::<{ auth::PROOF_LEN }>(&proof).is_some_and(|p| config.secret.verify_client(&client_nonce, &server_nonce, &p)),
        Ok(other) => return Err(format!("expected the client's proof, got a {} message", kind_of(&other))),
        Err(e) => return Err(format!("authentication failed: {e}")),
    };
    if !authenticated {
        return Err("authentication failed: the client does not hold this server's secret".into());
    }
    let mut facts = config.facts.clone();
    facts.serving_interface = stream.local_addr().ok().and_then(|a| crate::host::interface_of(a.ip()));
    facts.serving_qdisc = facts.serving_interface.as_deref().and_then(crate::host::root_qdisc);
    proto::write_msg(&mut s, &ServerMsg::Welcome { facts, limits: config.limits }).map_err(|e| e.to_string())
}

/// Whether this server may run `test`: the algorithms it must set, and its limits.
pub fn check(test: &TestRequest, config: &ServeConfig) -> Result<(), String> {
    match test {
        TestRequest::Bulk(spec) => check_bulk(spec, config),
        TestRequest::Objects(o) => crate::http::check_objects(o, config),
        TestRequest::Page(p) => crate::http::check_page(p, config),
        TestRequest::Browser(p) => crate::http::check_browser(p, config),
    }
}

/// The flows a bulk test asks for, counted without building its plan: a request for four
/// billion flows is refused, not allocated.
fn flow_count(spec: &BulkSpec) -> usize {
    if spec.mix.is_empty() {
        spec.flows as usize
    } else {
        spec.mix.len()
    }
}

fn check_bulk(spec: &BulkSpec, config: &ServeConfig) -> Result<(), String> {
    let l = &config.limits;
    let n = flow_count(spec);
    if n == 0 {
        return Err("a bulk test needs at least one flow".into());
    }
    if n > l.max_flows as usize {
        return Err(format!("{n} flows is over this server's limit of {} flows per test", l.max_flows));
    }
    let plan = spec.plan();
    let quic = crate::quic::check_quic(spec).transpose()?.is_some();
    if spec.direction == Direction::Download && !quic {
        for f in &plan {
            if !config.facts.congestion_controls.contains(&f.cc) {
                return Err(format!("this server has no congestion control {:?}; it has: {}", f.cc, config.facts.congestion_controls.join(", ")));
            }
        }
    }
    let last_start = plan.iter().map(|f| f.start_s).fold(0.0, f64::max);
    if plan.iter().any(|f| !(f.start_s.is_finite() && f.start_s >= 0.0)) || !(spec.timeout_s.is_finite() && spec.timeout_s > 0.0) {
        return Err("a flow's start or the timeout is not a finite, non-negative number of seconds".into());
    }
    match spec.amount {
        Amount::Seconds(s) if !(s.is_finite() && s > 0.0) => Err(format!("a duration of {s} s")),
        Amount::Seconds(s) if s + last_start > l.max_duration_s => {
            Err(format!("a test of {} s is over this server's limit of {} s per test (--max-duration)", s + last_start, l.max_duration_s))
        }
        Amount::Bytes(n) if n.saturating_mul(plan.len() as u64) > l.max_bytes => {
            Err(format!("{} bytes in all is over this server's limit of {} bytes per test (--max-bytes)", n.saturating_mul(plan.len() as u64), l.max_bytes))
        }
        _ => Ok(()),
    }
}

/// Counts a test against its client's per-minute limit.
fn admit(ip: IpAddr, shared: &Shared) -> Result<(), String> {
    let max = shared.config.limits.max_tests_per_minute as usize;
    let mut recent = shared.recent.lock().unwrap_or_else(|p| p.into_inner());
    let now = Instant::now();
    let times = recent.entry(ip).or_default();
    while times.front().is_some_and(|t| now.duration_since(*t) > Duration::from_secs(60)) {
        times.pop_front();
    }
    if times.len() >= max {
        return Err(format!("{ip} has run {max} tests in the last minute, this server's limit (--max-tests-per-minute)"));
    }
    times.push_back(now);
    Ok(())
}

/// Every test in `msgs` through serve's check and its log line, as a session does with them:
/// part of the `control` fuzz target ([`proto::fuzz_input`]).
pub(crate) fn fuzz_tests(msgs: &[ClientMsg]) {
    let Some(config) = fuzz_config() else { return };
    for m in msgs {
        if let ClientMsg::Check { test } | ClientMsg::Run { test } = m {
            let _ = check(test, &config);
            let _ = describe(test);
        }
    }
}

/// A serve's configuration with the default limits and three algorithms.
fn fuzz_config() -> Option<ServeConfig> {
    let facts = ServerFacts {
        ccbench_version: String::new(),
        kernel_release: None,
        kernel_version: None,
        congestion_controls: vec!["cubic".into(), "bbr".into(), "reno".into()],
        default_congestion_control: None,
        default_qdisc: None,
        serving_interface: None,
        serving_qdisc: None,
    };
    let limits =
        Limits { max_duration_s: 120.0, max_bytes: 10_000_000_000, max_clients: 4, max_tests_per_minute: 60, max_flows: 64, max_probe_rate_bps: 1_000_000_000 };
    let secret = Secret::from_bytes(&[7; 32]).ok()?;
    Some(ServeConfig { listen: SocketAddr::from(([127, 0, 0, 1], 0)), secret, limits, facts })
}

fn describe(test: &TestRequest) -> String {
    let b = match test {
        TestRequest::Bulk(b) => b,
        TestRequest::Objects(o) => return crate::http::describe_objects(o),
        TestRequest::Page(p) => return crate::http::describe_page(p),
        TestRequest::Browser(p) => return crate::http::describe_browser(p),
    };
    let dir = match b.direction {
        Direction::Download => "download",
        Direction::Upload => "upload",
    };
    // Also for refused requests: nothing here may grow with the flow count asked for.
    let mut ccs: Vec<&str> = if b.mix.is_empty() { vec![b.cc.as_str()] } else { b.mix.iter().map(|f| f.cc.as_str()).collect() };
    ccs.dedup();
    let what = match b.amount {
        Amount::Seconds(s) => format!("bulk {dir} {s} s"),
        Amount::Bytes(n) => format!("file {dir} {n} bytes"),
    };
    format!("{what}, {} flow(s) {}", flow_count(b), ccs.join("+"))
}

/// How a test went, for the log line and the session.
pub(crate) struct Outcome {
    pub(crate) bytes: u64,
    pub(crate) error: Option<String>,
    /// The session cannot go on (the client broke the protocol or vanished).
    pub(crate) fatal: Option<String>,
}

impl Outcome {
    pub(crate) fn fatal(message: String) -> Self {
        Outcome { bytes: 0, error: Some(message.clone()), fatal: Some(message) }
    }

    fn log_line(&self, took: Duration) -> String {
        let mut line = format!("{:.2} s, {} bytes", took.as_secs_f64(), self.bytes);
        if let Some(e) = &self.error {
            line.push_str(&format!(", error: {e}"));
        }
        line
    }
}

/// The server's end of a bulk test, from `Ready` to `Done`.
fn run_bulk(control: &TcpStream, spec: &BulkSpec, shared: &Shared) -> Outcome {
    let limits = shared.config.limits;
    let plan = spec.plan();
    let sending = spec.direction.sender() == Side::Server;
    // The data listener is on the address the client reached us at, on a port of its own; when
    // every flow the server sends runs one algorithm, it is set there already.
    let mut ccs: Vec<&str> = plan.iter().map(|f| f.cc.as_str()).collect();
    ccs.dedup();
    let listener_cc = (sending && ccs.len() == 1).then(|| ccs[0]);
    let (listener, token) = match crate::http::data_port(control, listener_cc) {
        Ok(x) => x,
        Err(e) => return Outcome::fatal(e),
    };
    let port = listener.local_addr().map(|a| a.port()).unwrap_or(0);
    let mut c = control;
    if let Err(e) = proto::write_msg(&mut c, &ServerMsg::Ready { port, token: hex(&token), spki_sha256: None }) {
        return Outcome::fatal(e.to_string());
    }
    let streams = match accept_flows(&listener, &token, plan.len()) {
        Ok(s) => s,
        Err(e) => return Outcome::fatal(e),
    };
    drop(listener);
    let mut cc_read_back = Vec::new();
    for (stream, flow) in streams.iter().zip(&plan) {
        if let Err(e) = prepare_stream(stream) {
            return Outcome::fatal(format!("preparing a data connection: {e}"));
        }
        if sending {
            match ccbench_workload::confirm_congestion(stream, &flow.cc, Side::Server) {
                Ok(cc) => cc_read_back.push(cc),
                Err(e) => return Outcome::fatal(e.to_string()),
            }
        }
    }
    if let Err(e) = proto::write_msg(&mut c, &ServerMsg::Connected { cc_read_back }) {
        return Outcome::fatal(e.to_string());
    }
    let _ = control.set_read_timeout(Some(SETUP_TIMEOUT));
    // A sender starts on `Start`. A receiver reads from now on and opens its window at the
    // first byte, so that a `Start` delayed by loss does not shorten what it counts; it takes
    // `Start` off the control connection meanwhile.
    let start = Instant::now();
    let clock = if sending {
        if let Err(e) = read_start(control) {
            return Outcome::fatal(e);
        }
        let start = Instant::now();
        EndClock::shared(start, start)
    } else {
        EndClock::at_first_byte(start, start, crate::client::one_way_estimate(control))
    };
    // A file that has not arrived by the server's --max-duration is given up here, whatever
    // the client's timeout.
    let last_start = plan.iter().map(|f| f.start_s).fold(0.0, f64::max);
    let spec = BulkSpec { timeout_s: spec.timeout_s.min((limits.max_duration_s - last_start).max(0.001)), ..spec.clone() };
    let ends: Vec<EndStream> =
        streams.into_iter().zip(&plan).enumerate().map(|(id, (stream, f))| EndStream { id: id as u32, start_s: f.start_s, stream, sends: sending }).collect();
    let budget = ByteBudget::new(limits.max_bytes, format!("stopped at this server's limit of {} bytes per test (--max-bytes)", limits.max_bytes));
    let (tx, rx) = mpsc::channel::<ServerMsg>();
    let sink = Forward { tx: Mutex::new(tx.clone()) };
    let (written, results, start_error) = std::thread::scope(|s| {
        let start_reader = (!sending).then(|| s.spawn(|| read_start(control)));
        // Samples go out as they are taken; a client that stops reading only stalls this writer.
        let writer = s.spawn(move || {
            let mut ok = true;
            for msg in rx {
                ok = ok && proto::write_msg(&mut c, &msg).is_ok();
            }
            ok
        });
        let results = run_end(&spec, &ends, &clock, &shared.stop, &sink, &NoMeasureHook, Some(&budget));
        let start_error = start_reader.and_then(|h| h.join().unwrap_or_else(|_| Err("the start reader panicked".into())).err());
        let _ = tx.send(ServerMsg::Done { ends: results.clone() });
        drop(tx);
        drop(sink);
        (writer.join().unwrap_or(false), results, start_error)
    });
    let error = start_error.or_else(|| results.iter().find_map(|e| e.send_error.clone().or(e.receive_error.clone())));
    let bytes = limits.max_bytes - budget.remaining();
    Outcome { bytes, error, fatal: (!written).then(|| "the client stopped reading the results".to_string()) }
}

/// Reads the client's `Start` off the control connection.
pub(crate) fn read_start(control: &TcpStream) -> Result<(), String> {
    match proto::read_msg::<ClientMsg>(&mut &*control) {
        Ok(ClientMsg::Start) => Ok(()),
        Ok(other) => Err(format!("expected start, got a {} message", kind_of(&other))),
        Err(e) => Err(format!("waiting for start: {e}")),
    }
}

/// Accepts the test's `n` data connections: each must start with the token and a flow id not
/// yet seen; any other is closed without a byte sent to it.
fn accept_flows(listener: &TcpListener, token: &[u8; TOKEN_LEN], n: usize) -> Result<Vec<TcpStream>, String> {
    listener.set_nonblocking(true).map_err(|e| e.to_string())?;
    let deadline = Instant::now() + SETUP_TIMEOUT;
    let mut slots: Vec<Option<TcpStream>> = (0..n).map(|_| None).collect();
    while slots.iter().any(Option::is_none) {
        if Instant::now() > deadline {
            return Err(format!("only {} of the test's {n} data connections arrived", slots.iter().filter(|s| s.is_some()).count()));
        }
        let stream = match listener.accept() {
            Ok((s, _)) => s,
            Err(e) if e.kind() == ErrorKind::WouldBlock => {
                std::thread::sleep(Duration::from_millis(2));
                continue;
            }
            Err(e) => return Err(format!("accepting a data connection: {e}")),
        };
        let mut hello = [0u8; DATA_HELLO_LEN];
        let read =
            stream.set_nonblocking(false).and_then(|_| stream.set_read_timeout(Some(Duration::from_secs(2)))).and_then(|_| (&stream).read_exact(&mut hello));
        if read.is_err() || !same(&hello[..TOKEN_LEN], token) {
            continue;
        }
        let id = u32::from_be_bytes([hello[16], hello[17], hello[18], hello[19]]) as usize;
        if let Some(slot @ None) = slots.get_mut(id) {
            *slot = Some(stream);
        }
    }
    Ok(slots.into_iter().flatten().collect())
}

/// Compares without an early exit, so the time taken says nothing of where they differ.
fn same(a: &[u8], b: &[u8]) -> bool {
    a.len() == b.len() && a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

/// The far end's series, sent to the client as they are taken.
pub(crate) struct Forward {
    pub(crate) tx: Mutex<mpsc::Sender<ServerMsg>>,
}

impl Forward {
    pub(crate) fn send(&self, msg: ServerMsg) {
        let _ = self.tx.lock().unwrap_or_else(|p| p.into_inner()).send(msg);
    }
}

impl SeriesSink for Forward {
    fn tcp_sample(&self, socket: SocketId, sample: &Sample) {
        let msg = match socket {
            SocketId::Flow(flow) => ServerMsg::Sample { flow, sample: *sample },
            SocketId::Connection(conn) => ServerMsg::ConnectionSample { conn: conn as u32, sample: *sample },
        };
        self.send(msg);
    }
    fn received(&self, flow: u32, point: &GoodputPoint) {
        let _ = self.tx.lock().unwrap_or_else(|p| p.into_inner()).send(ServerMsg::Received { flow, point: *point });
    }
    fn quic_sample(&self, socket: SocketId, sample: &QuicSample) {
        if let SocketId::Flow(flow) = socket {
            self.send(ServerMsg::QuicSample { flow, sample: Box::new(sample.clone()) });
        }
    }
}

impl HttpEndEvents for Forward {
    fn accepted(&self, conn: u32, cc_read_back: Option<&str>, mismatch: Option<&str>) {
        self.send(ServerMsg::Accepted { conn, cc_read_back: cc_read_back.map(str::to_string), mismatch: mismatch.map(str::to_string) });
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use ccbench_workload::{PageModel, PageProtocol, PageSpec};

    /// An authenticated client asking for four billion flows is refused, and its log line
    /// written, without serve building (allocating) the plan of those flows.
    #[test]
    fn a_huge_flow_count_is_refused_without_building_its_plan() {
        let config = fuzz_config().unwrap();
        let spec = BulkSpec {
            flows: u32::MAX,
            direction: Direction::Download,
            amount: Amount::Seconds(1.0),
            cc: "cubic".into(),
            mix: Vec::new(),
            port: 0,
            sample_interval_us: 10_000,
            timeout_s: 5.0,
            quic_receiver_cc: None,
        };
        let test = TestRequest::Bulk(spec);
        assert!(check(&test, &config).unwrap_err().contains("4294967295 flows is over this server's limit of 64"));
        assert_eq!(describe(&test), "bulk download 1 s, 4294967295 flow(s) cubic");
    }

    /// A browser test: the site's own limits (Chromium's 6 HTTP/1.1 connections, the HTML's
    /// size) and serve's (algorithm, bytes).
    #[test]
    fn browser_tests_are_checked_against_the_site_and_the_limits() {
        let config = fuzz_config().unwrap();
        let site = |protocol, html_bytes, cc: &str| {
            TestRequest::Browser(PageSpec {
                page: PageModel { html_bytes, objects: vec![2000; 4] },
                protocol,
                cc: cc.into(),
                port: 0,
                sample_interval_us: 10_000,
                timeout_s: 30.0,
            })
        };
        let h1 = PageProtocol::Http1 { max_connections: 6 };
        assert_eq!(check(&site(h1, 20_000, "cubic"), &config), Ok(()));
        assert_eq!(check(&site(PageProtocol::Http2, 20_000, "bbr"), &config), Ok(()));
        assert!(check(&site(PageProtocol::Http1 { max_connections: 2 }, 20_000, "cubic"), &config).unwrap_err().contains("Chromium opens its own 6"));
        assert!(check(&site(h1, 20_000, "vegas"), &config).unwrap_err().contains("no congestion control \"vegas\""));
        assert!(check(&site(h1, 100 << 20, "cubic"), &config).unwrap_err().contains("over the browser workload's"));
        assert_eq!(describe(&site(PageProtocol::Http2, 20_000, "bbr")), "browser page of 4 objects, 28000 bytes, HTTP/2 over TLS bbr");
    }
}
