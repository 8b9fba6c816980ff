//! `ccbench serve`: the far end of a real path.
//!
//! One thread per connection. A connection first passes the handshake of
//! [`crate::channel`] (SPAKE2 over the shared secret), all of it within [`HANDSHAKE_DEADLINE`],
//! in a pre-authentication pool of its own ([`crate::preauth`]): bounded in all and per source
//! network, and never refusing a newcomer (it evicts the oldest of the largest crowd), so that
//! connections that never authenticate take no client slot and cannot lock anyone out (the
//! class of iperf3's stalled-handshake denial of service, CVE-2023-38403's neighbour). Failed
//! handshakes cost their network time ([`crate::penalty`]) and are logged in summary
//! ([`crate::handshake_log`]). Then
//! every message is sealed, and each test the client asks for is checked against the
//! algorithms this host has and the limits given on the command line, before any data
//! connection is accepted. A test's data connections must come from the control connection's
//! address and carry its random token: any other is closed, and nothing is ever sent to it.
//! The algorithm is set per socket (`TCP_CONGESTION`); no sysctl is touched. Every test,
//! refusal and failed handshake is one line on stderr, with whatever the peer sent escaped.

use std::collections::{HashMap, VecDeque};
use std::io::ErrorKind;
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::os::fd::AsRawFd;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use ccbench_model::units::wire_time;
use ccbench_workload::{FarEnd, ServeLimits};

mod bulk;
mod http;
mod quic;
mod results;

use bulk::run_bulk;
pub(crate) use bulk::{read_start, read_stop};
pub(crate) use results::{write_results, Forward};

use crate::auth::Secret;
use crate::channel::{Channel, HandshakeError, PreAuth};
use crate::handshake_log::HandshakeLog;
use crate::network_log::NetworkLog;
use crate::penalty::{Failure, Penalties};
use crate::preauth::{Network, Place, Pool};
use crate::proto::{ClientMsg, FrameError, Limits, ServerFacts, ServerMsg, TestRequest};

pub use crate::preauth::{HANDSHAKE_DEADLINE, MAX_PRE_AUTH, MAX_PRE_AUTH_PER_SOURCE, PRESSED_DEADLINE};
/// How long an authenticated client may go without running a test, unless serve is told
/// otherwise (`--idle-timeout`; a `check` does not count: a session that only checks would
/// otherwise keep its slot for ever).
pub const IDLE_TIMEOUT: Duration = Duration::from_secs(60);
/// How long a test's data connections (and then its `Start`) may take to arrive.
pub(crate) const SETUP_TIMEOUT: Duration = Duration::from_secs(10);
const WRITE_TIMEOUT: Duration = Duration::from_secs(10);
/// How long accept() waits after the process or system ran out of descriptors, at first and
/// at most (doubling in between): a full table must not turn the accept loop into a spin.
const ACCEPT_BACKOFF: (Duration, Duration) = (Duration::from_millis(50), Duration::from_secs(1));
/// The listening socket's queue of connections not yet accepted (std's is 128; a SYN flood or
/// a crowd of handshakes fills that between two accepts). The kernel caps it at
/// `net.core.somaxconn` (4096 by default since Linux 5.4).
const LISTEN_BACKLOG: libc::c_int = 4096;
/// How long the accept loop waits for a connection before it looks at the stop flag and the
/// log's summaries again.
const ACCEPT_POLL: Duration = Duration::from_millis(250);
/// One definition of the data connections' hello, shared with the near end (issue 20 §2).
pub use ccbench_workload::{DATA_HELLO_LEN, HELLO_TIMEOUT, MAX_PENDING as MAX_PENDING_DATA, TOKEN_LEN};

pub struct ServeConfig {
    pub listen: SocketAddr,
    pub secret: Secret,
    pub limits: Limits,
    pub facts: ServerFacts,
    /// How long a session may go without a test before it is closed ([`IDLE_TIMEOUT`] unless
    /// `--idle-timeout` says otherwise).
    pub idle_timeout: Duration,
}

/// What every session shares.
pub(crate) struct Shared {
    pub(crate) config: ServeConfig,
    /// Authenticated sessions (client slots).
    active: AtomicUsize,
    /// Connections in the handshake.
    pre_auth: Pool,
    /// Failed handshakes' cost, per source network.
    penalties: Penalties,
    handshake_log: HandshakeLog,
    /// When each authenticated client's recent tests started (the last minute's), by the
    /// holder of the secret it proved (see [`Secret::holder_id`]), not by address.
    recent: Mutex<HashMap<[u8; 8], VecDeque<Instant>>>,
    pub(crate) stop: AtomicBool,
}

/// One line on serve's log. Peers' strings reach it (serde errors quote them): every control
/// character is escaped, so that nothing a peer sends can start a line of its own or drive a
/// terminal reading the log.
pub(crate) fn log(line: &str) {
    eprintln!("ccbench serve: {}", escape(line));
}

/// `line` with control, format and separator characters written as Rust escapes
/// ([`crate::escape`]).
pub fn escape(line: &str) -> String {
    crate::escape::escape(line)
}

/// Logs at most one line a second of a recurring event, with how many were not logged.
struct Quiet {
    last: Option<Instant>,
    unlogged: u64,
}

impl Quiet {
    fn new() -> Quiet {
        Quiet { last: None, unlogged: 0 }
    }

    fn log(&mut self, line: &str) {
        let now = Instant::now();
        if self.last.is_some_and(|t| now.duration_since(t) < Duration::from_secs(1)) {
            self.unlogged += 1;
            return;
        }
        match std::mem::take(&mut self.unlogged) {
            0 => log(line),
            n => log(&format!("{line} (and {n} more like it)")),
        }
        self.last = Some(now);
    }
}

/// A client slot, given back when dropped.
struct Slot<'a>(&'a AtomicUsize);

impl Drop for Slot<'_> {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::SeqCst);
    }
}

/// Whether accept() failed for want of a resource that closing connections frees.
fn out_of_resources(e: &std::io::Error) -> bool {
    matches!(e.raw_os_error(), Some(libc::EMFILE | libc::ENFILE | libc::ENOBUFS | libc::ENOMEM))
}

/// Waits until `listener` has a connection to accept, or `timeout` passes.
fn wait_for_connection(listener: &TcpListener, timeout: Duration) {
    let mut fd = libc::pollfd { fd: listener.as_raw_fd(), events: libc::POLLIN, revents: 0 };
    // SAFETY: one valid pollfd for the duration of the call. EINTR (a signal, such as the one
    // that stops serve) only returns early, as a timeout does.
    unsafe { libc::poll(&mut fd, 1, timeout.as_millis() as libc::c_int) };
}

/// Tells a connection serve will not take now, in a frame its handshake reads, without
/// blocking the accept loop (the socket's send buffer is empty: the line fits).
fn tell(stream: &TcpStream, message: String) {
    let mut frame = Vec::new();
    if crate::proto::write_msg(&mut frame, &PreAuth::Error { message }).is_ok() && stream.set_nonblocking(true).is_ok() {
        let _ = std::io::Write::write(&mut &*stream, &frame);
    }
    let _ = stream.shutdown(std::net::Shutdown::Write);
}

/// Binds, says where on stderr, and serves until `stop` is set.
pub fn serve(config: ServeConfig, stop: &AtomicBool) -> std::io::Result<()> {
    let listener = TcpListener::bind(config.listen)?;
    // listen() again on a listening socket sets its backlog anew (Linux's inet_listen).
    // SAFETY: a valid listening socket.
    if unsafe { libc::listen(listener.as_raw_fd(), LISTEN_BACKLOG) } != 0 {
        return Err(std::io::Error::last_os_error());
    }
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
    let shared = Shared {
        config,
        active: AtomicUsize::new(0),
        pre_auth: Pool::default(),
        penalties: Penalties::default(),
        handshake_log: HandshakeLog::default(),
        recent: Mutex::new(HashMap::new()),
        stop: AtomicBool::new(false),
    };
    let mut accept_errors = Quiet::new();
    // Summarised per source network: a renewing crowd evicts, or is refused, many times a second.
    let evictions = NetworkLog::new("handshakes evicted");
    let refusals = NetworkLog::new("connections refused");
    let mut backoff = ACCEPT_BACKOFF.0;
    let mut flushed = Instant::now();
    std::thread::scope(|s| {
        while !stop.load(Ordering::SeqCst) {
            if flushed.elapsed() >= Duration::from_secs(1) {
                flushed = Instant::now();
                shared.handshake_log.flush(flushed, log);
                evictions.flush(flushed, log);
                refusals.flush(flushed, log);
            }
            match listener.accept() {
                Ok((stream, peer)) => {
                    backoff = ACCEPT_BACKOFF.0;
                    let now = Instant::now();
                    let network = Network::of(peer.ip());
                    if let Err(wait) = shared.penalties.check(network, now) {
                        let message = format!(
                            "too many failed handshakes from {network}: refused for another {} s (a client with another secret?)",
                            wait.as_secs().max(1)
                        );
                        refusals.event(network, &format!("{peer}: {message}"), now, log);
                        tell(&stream, message);
                        continue;
                    }
                    let (place, eviction) = match shared.pre_auth.admit(&stream, peer.ip(), now) {
                        Ok(p) => p,
                        // Out of descriptors for the pool's handle: the same back-off as
                        // an accept that fails for it, or the loop spins on the backlog.
                        Err(e) if out_of_resources(&e) => {
                            accept_errors.log(&format!("accept: {peer}: {e}; waiting {} ms before the next", backoff.as_millis()));
                            drop(stream);
                            std::thread::sleep(backoff);
                            backoff = (backoff * 2).min(ACCEPT_BACKOFF.1);
                            continue;
                        }
                        Err(e) => {
                            accept_errors.log(&format!("{peer}: closed: {e}"));
                            continue;
                        }
                    };
                    if let Some(e) = eviction {
                        let total = shared.pre_auth.evictions.load(Ordering::Relaxed);
                        let line = format!("{peer}: admitted in place of the oldest handshake of {} ({} in it; {total} evicted so far)", e.network, e.held);
                        evictions.event(e.network, &line, now, log);
                    }
                    let shared = &shared;
                    let spawned =
                        std::thread::Builder::new().name("ccbench-serve-session".into()).spawn_scoped(s, move || session(stream, peer, place, shared));
                    if let Err(e) = spawned {
                        accept_errors.log(&format!("{peer}: closed: no thread for it ({e})"));
                    }
                }
                Err(e) if e.kind() == ErrorKind::WouldBlock => wait_for_connection(&listener, ACCEPT_POLL),
                Err(e) if out_of_resources(&e) => {
                    accept_errors.log(&format!("accept: {e}; waiting {} ms before the next", backoff.as_millis()));
                    std::thread::sleep(backoff);
                    backoff = (backoff * 2).min(ACCEPT_BACKOFF.1);
                }
                Err(e) => {
                    accept_errors.log(&format!("accept: {e}"));
                    std::thread::sleep(Duration::from_millis(20));
                }
            }
        }
        shared.stop.store(true, Ordering::SeqCst);
    });
    Ok(())
}

fn session(stream: TcpStream, peer: SocketAddr, place: Place<'_>, shared: &Shared) {
    let setup = stream.set_nonblocking(false).and_then(|_| stream.set_nodelay(true));
    // Kept to tell an evicted peer why its handshake ended (the channel owns the stream).
    let Ok(answer) = setup.and_then(|_| stream.try_clone()) else { return };
    let channel = match Channel::accept(stream, &shared.config.secret, place.deadline) {
        Ok(c) => c,
        Err(_) if place.evicted() => {
            let _ = answer.set_write_timeout(Some(Duration::from_secs(1)));
            let _ = crate::proto::write_msg(&mut &answer, &PreAuth::Error { message: crate::handshake_retry::BUSY.into() });
            return;
        }
        Err(e) => {
            let now = Instant::now();
            let (failure, e) = match e {
                HandshakeError::WrongSecret => (Failure::WrongSecret, "authentication failed: the client does not hold this server's secret".to_string()),
                e if now >= place.deadline => (Failure::Other, format!("no complete handshake by its deadline ({e})")),
                e => (Failure::Other, e.to_string()),
            };
            shared.penalties.failed(place.network, failure, now);
            shared.handshake_log.failed(peer, place.network, failure, &e, now, log);
            return;
        }
    };
    drop(answer);
    drop(place);
    let _ = channel.stream().set_write_timeout(Some(WRITE_TIMEOUT));
    let max = shared.config.limits.max_clients;
    if shared.active.fetch_add(1, Ordering::SeqCst) >= max as usize {
        shared.active.fetch_sub(1, Ordering::SeqCst);
        let message = format!("the server already serves its maximum of {max} clients (--max-clients)");
        log(&format!("{peer}: {message}"));
        let _ = channel.send(&ServerMsg::Error { message });
        return;
    }
    let _slot = Slot(&shared.active);
    let mut facts = shared.config.facts.clone();
    facts.serving_interface = channel.stream().local_addr().ok().and_then(|a| crate::host::interface_of(a.ip()));
    facts.serving_qdisc = facts.serving_interface.as_deref().and_then(crate::host::root_qdisc);
    if channel.send(&ServerMsg::Welcome { facts, limits: shared.config.limits }).is_err() {
        return;
    }
    let holder = shared.config.secret.holder_id();
    let idle = shared.config.idle_timeout;
    let mut idle_until = Instant::now() + idle;
    loop {
        let msg = match channel.recv_by::<ClientMsg>(idle_until) {
            Ok(m) => m,
            Err(FrameError::Io(e)) if e.kind() == ErrorKind::UnexpectedEof => return,
            Err(FrameError::Io(e)) if matches!(e.kind(), ErrorKind::TimedOut | ErrorKind::WouldBlock) => {
                let message = format!("closing the session: no test for {idle:?} (--idle-timeout)");
                log(&format!("{peer}: {message}"));
                let _ = channel.send(&ServerMsg::Error { message });
                return;
            }
            Err(e) => {
                let message = format!("closing the session: {e}");
                log(&format!("{peer}: {message}"));
                let _ = channel.send(&ServerMsg::Error { message });
                return;
            }
        };
        let reply = match msg {
            ClientMsg::Check { test } => match check(&test, &shared.config) {
                Ok(()) => ServerMsg::Allowed,
                Err(reason) => ServerMsg::Refused { reason },
            },
            ClientMsg::Run { test } => match check(&test, &shared.config).and_then(|_| admit(holder, shared)) {
                Ok(()) => {
                    let began = Instant::now();
                    // Which far end runs it is the workload's word; serve knows the far ends.
                    let outcome = match test.far().far_end() {
                        FarEnd::Flows(spec) if crate::proto::is_quic(spec) => quic::run_quic(&channel, spec, shared),
                        FarEnd::Flows(spec) => run_bulk(&channel, spec, shared),
                        FarEnd::Http(http) => http::run_http(&channel, http, shared),
                        FarEnd::Quic(load) => quic::run_quic_requests(&channel, load, shared),
                    };
                    log(&format!("{peer} {}: {}", describe(&test), outcome.log_line(began.elapsed())));
                    idle_until = Instant::now() + idle;
                    match outcome.fatal {
                        Some(message) => ServerMsg::Error { message },
                        None => continue,
                    }
                }
                Err(reason) => {
                    log(&format!("{peer} {}: refused: {reason}", describe(&test)));
                    ServerMsg::Refused { reason }
                }
            },
            ClientMsg::Probe { request } => match crate::probe::check(&request, &shared.config.limits).and_then(|l| admit(holder, shared).map(|_| l)) {
                Ok(limits) => {
                    let began = Instant::now();
                    let outcome = crate::probe::serve_session(&channel, limits, &shared.stop);
                    log(&format!("{peer} {}", outcome.log_line(began.elapsed())));
                    idle_until = Instant::now() + idle;
                    match outcome.fatal {
                        Some(message) => ServerMsg::Error { message },
                        None => continue,
                    }
                }
                Err(reason) => {
                    log(&format!("{peer} probe: refused: {reason}"));
                    ServerMsg::Refused { reason }
                }
            },
            // The end of a probe the server had already ended at its time limit: nothing to stop.
            ClientMsg::ProbeEnd => continue,
            other => ServerMsg::Error { message: format!("unexpected {} message", kind_of(&other)) },
        };
        let fatal = matches!(reply, ServerMsg::Error { .. });
        if channel.send(&reply).is_err() || fatal {
            return;
        }
    }
}

pub(crate) fn kind_of(m: &ClientMsg) -> &'static str {
    match m {
        ClientMsg::Probe { .. } => "probe",
        ClientMsg::ProbeEnd => "probe_end",
        ClientMsg::Check { .. } => "check",
        ClientMsg::Run { .. } => "run",
        ClientMsg::Start => "start",
        ClientMsg::Stop => "stop",
    }
}

/// Sets `test_stop` when serve stops or the client hangs up (its end of the control
/// connection closed, or the connection failed), until `ended`: a test whose client went away
/// stops within [`POLL_HANGUP`] plus its own teardown, whatever its duration.
pub(crate) fn watch_client(control: &TcpStream, shared_stop: &AtomicBool, test_stop: &AtomicBool, ended: &AtomicBool) {
    use std::os::fd::AsRawFd;
    while !ended.load(Ordering::SeqCst) {
        let mut fd = libc::pollfd { fd: control.as_raw_fd(), events: libc::POLLRDHUP, revents: 0 };
        // SAFETY: one valid pollfd, for a descriptor `control` keeps open.
        let n = unsafe { libc::poll(&mut fd, 1, POLL_HANGUP.as_millis() as i32) };
        let hung_up = n > 0 && fd.revents & (libc::POLLRDHUP | libc::POLLHUP | libc::POLLERR) != 0;
        // A client closes its control connection once it has the test's `Done`, which is sent
        // only after `ended` is set: a hang-up seen with `ended` set is the test's normal end,
        // not a client gone during it (serve logged "the client went away" after 7 of 8
        // finished tests of a `--twin` run, whose client reconnects per test).
        if ended.load(Ordering::SeqCst) {
            return;
        }
        if hung_up || shared_stop.load(Ordering::SeqCst) {
            test_stop.store(true, Ordering::SeqCst);
            if hung_up {
                return;
            }
        }
    }
}

/// How often a test looks at whether its client is still there.
pub(crate) const POLL_HANGUP: Duration = Duration::from_millis(100);

/// Whether this server may run `test`: the algorithms it must set, and its limits (each
/// workload's own `FarSpec::check`).
pub fn check(test: &TestRequest, config: &ServeConfig) -> Result<(), String> {
    let l = &config.limits;
    let limits = ServeLimits {
        max_duration: wire_time::from_s_saturating(l.max_duration_s),
        max_bytes: l.max_bytes,
        max_flows: l.max_flows,
        congestion_controls: &config.facts.congestion_controls,
    };
    test.far().check(&limits)
}

/// Counts a test against its client's per-minute limit: the holder of the secret it proved,
/// whatever address it comes from.
fn admit(holder: [u8; 8], shared: &Shared) -> Result<(), String> {
    let max = shared.config.limits.max_tests_per_minute as usize;
    let mut recent = shared.recent.lock().unwrap_or_else(|p| p.into_inner());
    let now = Instant::now();
    let times = recent.entry(holder).or_default();
    while times.front().is_some_and(|t| now.duration_since(*t) > Duration::from_secs(60)) {
        times.pop_front();
    }
    if times.len() >= max {
        return Err(format!("the clients holding this secret have run {max} tests in the last minute, this server's limit (--max-tests-per-minute)"));
    }
    times.push_back(now);
    Ok(())
}

/// Every test in `msgs` through serve's check and its log line, as a session does with them:
/// part of the `control` fuzz target ([`crate::fuzzing::control_input`]).
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
    let secret = Secret::from_bytes(crate::channel::FUZZ_SECRET).ok()?;
    Some(ServeConfig { listen: SocketAddr::from(([127, 0, 0, 1], 0)), secret, limits, facts, idle_timeout: IDLE_TIMEOUT })
}

fn describe(test: &TestRequest) -> String {
    test.far().describe_far()
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

#[cfg(test)]
mod tests {
    use super::bulk::accept_flows;
    use super::results::{done_messages, ENDS_PER_DONE, RESULT_QUEUE};
    use super::*;
    use ccbench_kernel_tcp::Sample;
    use ccbench_workload::{Amount, Direction, PageModel, PageProtocol, PageSpec, SiteRequest};
    use ccbench_workload::{BulkSpec, FlowEnd, GoodputPoint, SeriesSink, SocketId};

    /// The client hanging up after the test ended (once it has `Done`) is not "the client went
    /// away during the test"; hanging up before the end is. The close comes while the watcher
    /// is inside its 100 ms poll, as it does when a client closes right after `Done`.
    #[test]
    fn a_hang_up_after_the_end_does_not_stop_the_test_but_one_before_it_does() {
        for close_after_end in [true, false] {
            let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
            let client = TcpStream::connect(listener.local_addr().unwrap()).unwrap();
            let (control, _) = listener.accept().unwrap();
            let (shared_stop, test_stop, ended) = (AtomicBool::new(false), AtomicBool::new(false), AtomicBool::new(false));
            std::thread::scope(|s| {
                let watcher = s.spawn(|| watch_client(&control, &shared_stop, &test_stop, &ended));
                std::thread::sleep(Duration::from_millis(30));
                if close_after_end {
                    ended.store(true, Ordering::SeqCst);
                }
                drop(client);
                if !close_after_end {
                    std::thread::sleep(Duration::from_millis(300));
                    ended.store(true, Ordering::SeqCst);
                }
                watcher.join().unwrap();
            });
            assert_eq!(test_stop.load(Ordering::SeqCst), !close_after_end, "closed after the end: {close_after_end}");
        }
    }

    /// The last message of a test with this server's most flows, each with its real `tcp_info`,
    /// long errors and what held it back, fits one record: it failed to (64 flows made
    /// about 100 kB against the 64 KiB frame), and serve ended every such session as "the
    /// client stopped reading the results" (issue 27 §6).
    #[test]
    fn the_done_of_the_most_flows_fits_a_record() {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let socket = TcpStream::connect(listener.local_addr().unwrap()).unwrap();
        let info = ccbench_kernel_tcp::tcp_info(&socket).unwrap();
        let end = |id| FlowEnd {
            id,
            sent: true,
            send_error: Some("x".repeat(crate::screen::MAX_TEXT)),
            final_tcp_info: Some(info),
            limits: Some(Default::default()),
            bytes_received: u64::MAX,
            completion_s: Some(f64::MAX),
            receive_error: Some("y".repeat(crate::screen::MAX_TEXT)),
        };
        let ends: Vec<FlowEnd> = (0..64).map(end).collect();
        let whole = serde_json::to_vec(&ServerMsg::Done { ends: ends.clone(), dropped_samples: u64::MAX, more: false }).unwrap();
        assert!(whole.len() > crate::proto::MAX_FRAME, "the cause is gone: {} bytes in one", whole.len());
        let mut sealer = crate::channel::Sealer::new(&[1; 32]);
        let parts = done_messages(ends, u64::MAX, false);
        assert_eq!(parts.len(), 64 / ENDS_PER_DONE);
        for (i, msg) in parts.iter().enumerate() {
            let body = serde_json::to_vec(msg).unwrap();
            assert!(body.len() < 48_000, "{} bytes", body.len());
            sealer.seal(&body).unwrap();
            assert!(matches!(msg, ServerMsg::Done { more, .. } if *more == (i + 1 < parts.len())));
        }
    }

    /// An authenticated client asking for four billion flows is refused, and its log line
    /// written, without serve building (allocating) the plan of those flows.
    #[test]
    fn a_huge_flow_count_is_refused_without_building_its_plan() {
        let config = fuzz_config().unwrap();
        let spec = BulkSpec {
            flows: u32::MAX,
            direction: Direction::Download,
            amount: Amount::Seconds(1.0),
            cc: "cubic".parse().unwrap(),
            mix: Vec::new(),
            port: 0,
            sample_interval_us: 10_000,
            timeout_s: 5.0,
            quic_receiver_cc: None,
            knobs: Default::default(),
        };
        let test = TestRequest::Bulk(spec);
        assert!(check(&test, &config).unwrap_err().contains("4294967295 flows is over this server's limit of 64"));
        assert_eq!(describe(&test), "bulk download 1 s, 4294967295 flow(s) cubic");
    }

    /// Issue 20 §2: serve checked a download's `tcp:cubic` against its kernel's names as
    /// written, and refused it; the kernel name is what it has. A QUIC name is no kernel's.
    #[test]
    fn a_download_is_checked_by_the_kernel_name() {
        let config = fuzz_config().unwrap();
        let bulk = |cc: &str| {
            TestRequest::Bulk(BulkSpec {
                flows: 1,
                direction: Direction::Download,
                amount: Amount::Seconds(1.0),
                cc: cc.parse().unwrap(),
                mix: Vec::new(),
                port: 0,
                sample_interval_us: 10_000,
                timeout_s: 5.0,
                quic_receiver_cc: None,
                knobs: Default::default(),
            })
        };
        assert_eq!(check(&bulk("tcp:cubic"), &config), Ok(()));
        assert_eq!(check(&bulk("cubic"), &config), Ok(()));
        assert!(check(&bulk("tcp:vegas"), &config).unwrap_err().contains("no congestion control \"tcp:vegas\""));
        assert_eq!(describe(&bulk("tcp:cubic")), "bulk download 1 s, 1 flow(s) tcp:cubic");
    }

    /// A browser test: the site's own limits (Chromium's 6 HTTP/1.1 connections, the HTML's
    /// size) and serve's (algorithm, bytes).
    #[test]
    fn browser_tests_are_checked_against_the_site_and_the_limits() {
        let config = fuzz_config().unwrap();
        let site = |protocol, html_bytes, cc: &str| {
            TestRequest::Browser(SiteRequest(PageSpec {
                page: PageModel { html_bytes, objects: vec![2000; 4] },
                protocol,
                cc: cc.parse().unwrap(),
                port: 0,
                sample_interval_us: 10_000,
                timeout_s: 30.0,
            }))
        };
        let h1 = PageProtocol::Http1 { max_connections: 6 };
        assert_eq!(check(&site(h1, 20_000, "cubic"), &config), Ok(()));
        assert_eq!(check(&site(PageProtocol::Http2, 20_000, "bbr"), &config), Ok(()));
        assert!(check(&site(PageProtocol::Http1 { max_connections: 2 }, 20_000, "cubic"), &config).unwrap_err().contains("Chromium opens its own 6"));
        assert!(check(&site(h1, 20_000, "vegas"), &config).unwrap_err().contains("no congestion control \"vegas\""));
        assert!(check(&site(h1, 100 << 20, "cubic"), &config).unwrap_err().contains("over the browser workload's"));
        assert_eq!(describe(&site(PageProtocol::Http2, 20_000, "bbr")), "browser page of 4 objects, 28000 bytes, HTTP/2 over TLS bbr");
    }

    /// A client that stops reading: samples beyond the queue are dropped and counted, the
    /// queue holds [`RESULT_QUEUE`] at most, and what the results need still gets through once
    /// the writer drains (here, a reader that wakes up late).
    #[test]
    fn a_lagging_client_costs_serve_a_bounded_queue_and_drops_are_counted() {
        let (sink, rx) = Forward::queue();
        let raw = ccbench_kernel_tcp::RawTcpInfo::default();
        let sample = Sample::from_parts(0, &ccbench_kernel_tcp::TcpInfo::from_raw(&raw, std::mem::size_of_val(&raw)), None);
        for _ in 0..100_000 {
            sink.tcp_sample(SocketId::Flow(0), &sample);
            sink.received(0, &GoodputPoint { t_us: 1, bytes: 1 });
        }
        assert_eq!(sink.dropped(), 200_000 - RESULT_QUEUE as u64);
        let reader = std::thread::spawn(move || {
            std::thread::sleep(Duration::from_millis(100));
            rx.iter().collect::<Vec<_>>()
        });
        sink.done(Vec::new(), false);
        drop(sink);
        let got = reader.join().unwrap();
        assert_eq!(got.len(), RESULT_QUEUE + 1);
        assert!(matches!(got.last(), Some(ServerMsg::Done { dropped_samples, .. }) if *dropped_samples == 200_000 - RESULT_QUEUE as u64));
    }

    /// 64 silent connections from the client's own address (the audit's: they blocked the
    /// data port) do not keep the test's flow out: the flow arrives after them and is admitted.
    #[test]
    fn silent_connections_from_the_clients_address_do_not_block_its_data_port() {
        use std::io::Write;
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = listener.local_addr().unwrap();
        let token = [7u8; TOKEN_LEN];
        let gate = std::thread::spawn(move || accept_flows(&listener, addr.ip(), &token, 1));
        let silent: Vec<TcpStream> = (0..2 * MAX_PENDING_DATA).map(|_| TcpStream::connect(addr).unwrap()).collect();
        std::thread::sleep(Duration::from_millis(200));
        let t = Instant::now();
        let flow = TcpStream::connect(addr).unwrap();
        (&flow).write_all(&ccbench_workload::data_hello(&token, 0)).unwrap();
        let admitted = gate.join().unwrap();
        assert!(admitted.is_ok_and(|s| s.len() == 1), "the flow was kept out");
        assert!(t.elapsed() < SETUP_TIMEOUT, "{:?}", t.elapsed());
        drop(silent);
    }
}
