//! The near end of a test against `ccbench serve` (`ccbench run --remote`): the handshake, then
//! per test the data connections and this end's half of the workload, with the far end's
//! series merged into this run's.

use std::io::Write;
use std::net::{SocketAddr, TcpStream};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

use ccbench_workload::{
    assemble, client_socket, confirm_congestion, prepare_stream, run_end, Amount, BulkResult, BulkSpec, Direction, EndClock, EndStream, FlowEnd, FlowMeta,
    NearEnd, NoMeasureHook, Opens, SeriesSink, Side, SocketId, WorkloadError,
};

use crate::auth::Secret;
use crate::channel::{Channel, HandshakeError};
use crate::proto::{unhex, ClientMsg, FrameError, Limits, Requested, ServerFacts, ServerMsg, TestRequest};
use ccbench_workload::TOKEN_LEN;

const CONNECT_TIMEOUT: Duration = Duration::from_secs(10);
/// How long the whole handshake may take (the server's own deadline is shorter).
const HANDSHAKE_TIMEOUT: Duration = Duration::from_secs(15);
/// How long a reply may take outside a test, all of it.
pub(crate) const REPLY_TIMEOUT: Duration = Duration::from_secs(15);
/// How long after its planned end a test's results may take to come back, all of them.
pub(crate) const RESULT_GRACE: Duration = Duration::from_secs(30);
/// How long the far end's first sample waits for this end's first data byte.
const FIRST_BYTE_GRACE: Duration = Duration::from_secs(1);
/// No round trip this long is a real one (Linux caps its RTO at 120 s, `TCP_RTO_MAX`).
pub(crate) const MAX_SANE_RTT_US: u32 = 120_000_000;
/// Messages a test's results may hold beyond one per sample interval per socket: the
/// acceptances, ends and BBR event chunks.
const MESSAGE_SLACK: u64 = 10_000;

#[derive(Debug, thiserror::Error)]
pub enum RemoteError {
    #[error("cannot reach ccbench serve at {addr}: {source}")]
    Connect { addr: SocketAddr, source: std::io::Error },
    /// The handshake failed: the secrets differ, or the server refused the session.
    #[error("{0}")]
    Auth(String),
    /// The server refused a test (an algorithm it lacks, a limit) or the session (busy).
    #[error("refused by ccbench serve: {0}")]
    Refused(String),
    #[error("control connection: {0}")]
    Protocol(String),
    #[error(transparent)]
    Workload(#[from] WorkloadError),
}

impl RemoteError {
    /// A refusal in the server's words, made safe for a terminal.
    pub(crate) fn refused(reason: &str) -> RemoteError {
        RemoteError::Refused(term_safe(reason))
    }

    /// A protocol failure in the server's words, made safe for a terminal.
    pub(crate) fn server_said(message: &str) -> RemoteError {
        RemoteError::Protocol(term_safe(message))
    }
}

/// What a server sent, fit for this end's terminal: at most 500 characters, and none that acts
/// on a terminal (dropped). Every server string is already escaped where it arrives
/// ([`crate::screen`]); this is for lines built around them, which may quote the wire.
pub fn term_safe(text: &str) -> String {
    const MAX: usize = 500;
    let clean: String = text.chars().filter(|&c| !crate::screen::is_hidden(c)).take(MAX + 1).collect();
    if clean.chars().count() > MAX {
        format!("{}…", clean.chars().take(MAX).collect::<String>())
    } else {
        clean
    }
}

impl From<FrameError> for RemoteError {
    fn from(e: FrameError) -> Self {
        RemoteError::Protocol(term_safe(&e.to_string()))
    }
}

impl From<std::io::Error> for RemoteError {
    fn from(e: std::io::Error) -> Self {
        RemoteError::Protocol(e.to_string())
    }
}

/// An authenticated session with a `ccbench serve`.
pub struct Client {
    pub(crate) addr: SocketAddr,
    pub(crate) control: Channel,
    pub facts: ServerFacts,
    pub limits: Limits,
    /// The kernel's smoothed RTT of the control connection just after the handshake.
    pub rtt_us: Option<u32>,
    /// Samples serve dropped in this session's tests because this end read too slowly.
    pub(crate) dropped_samples: AtomicU64,
}

impl Client {
    /// Connects and proves, both ways, that the two ends share `secret` (see
    /// [`crate::channel`]); everything after is sealed.
    pub fn connect(addr: SocketAddr, secret: &Secret) -> Result<Client, RemoteError> {
        let deadline = Instant::now() + HANDSHAKE_TIMEOUT;
        let control = crate::handshake_retry::connect(addr, secret, deadline, CONNECT_TIMEOUT)
            .map_err(|source| RemoteError::Connect { addr, source })?
            .map_err(|e| match e {
                // A read cut at the deadline reports only "would block" (os error 11).
                HandshakeError::Protocol(m) if Instant::now() >= deadline || m.contains("(os error 11)") => RemoteError::server_said(&format!(
                    "no answer from ccbench serve at {addr} within {} s: the handshake did not finish (a stalled or trickling server)",
                    HANDSHAKE_TIMEOUT.as_secs()
                )),
                HandshakeError::WrongSecret => {
                    RemoteError::Auth(format!("authentication with ccbench serve at {addr} failed: the two ends' secrets differ (check --secret-file)"))
                }
                HandshakeError::Refused(m) => RemoteError::refused(&crate::screen::escape(&m)),
                HandshakeError::Protocol(m) => RemoteError::server_said(&m),
            })?;
        let (facts, limits) =
            match crate::screen::recv(&control, Instant::now() + REPLY_TIMEOUT).map_err(|e| timed_out(e, addr, "no welcome", REPLY_TIMEOUT))? {
                ServerMsg::Welcome { facts, limits } => (facts, limits),
                ServerMsg::Error { message } => return Err(RemoteError::refused(&message)),
                other => return Err(unexpected(&other)),
            };
        let rtt_us = ccbench_kernel_tcp::tcp_info(control.stream()).ok().map(|t| t.rtt_us);
        Ok(Client { addr, control, facts, limits, rtt_us, dropped_samples: AtomicU64::new(0) })
    }

    /// Samples serve dropped in this session's tests so far, because this end read its results
    /// too slowly (serve's queue is bounded: it drops samples rather than grow).
    pub fn dropped_samples(&self) -> u64 {
        self.dropped_samples.load(Ordering::Relaxed)
    }

    /// The server's next message, all of it within [`REPLY_TIMEOUT`].
    pub(crate) fn reply(&self) -> Result<ServerMsg, RemoteError> {
        crate::screen::recv(&self.control, Instant::now() + REPLY_TIMEOUT).map_err(|e| timed_out(e, self.addr, "no answer", REPLY_TIMEOUT))
    }

    pub(crate) fn send(&self, msg: &ClientMsg) -> Result<(), RemoteError> {
        self.control.stream().set_write_timeout(Some(REPLY_TIMEOUT))?;
        self.control.send(msg).map_err(|e| timed_out(e, self.addr, "could not send a request", REPLY_TIMEOUT))
    }

    /// Asks whether the server would run `test` (its algorithms, its limits); nothing runs.
    pub fn check(&mut self, test: &TestRequest) -> Result<(), RemoteError> {
        self.send(&ClientMsg::Check { test: test.clone() })?;
        match self.reply()? {
            ServerMsg::Allowed => Ok(()),
            ServerMsg::Refused { reason } => Err(RemoteError::refused(&reason)),
            ServerMsg::Error { message } => Err(RemoteError::server_said(&message)),
            other => Err(unexpected(&other)),
        }
    }

    /// Runs a test of any workload: the server runs the far end (which one is the workload's
    /// word, [`Remote::far_request`]), this process the near one ([`Remote::near_end`]).
    /// Times in the result and in `series` (the far end's samples included) are from `epoch`.
    pub fn run<W>(&mut self, workload: &W, epoch: Instant, stop: &AtomicBool, series: &dyn SeriesSink) -> Result<W::Result, RemoteError>
    where
        W: Requested,
    {
        let test = workload.test_request();
        match workload.near_end() {
            NearEnd::Flows { spec, result } if crate::proto::is_quic(spec) => self.run_quic(test, spec, epoch, stop, series).map(result),
            NearEnd::Flows { spec, result } => self.run_flows(test, spec, epoch, stop, series).map(result),
            NearEnd::Http { timeout, sample_interval, load } => {
                self.run_http(test, timeout, sample_interval, epoch, series, |far, end| load(far, epoch, stop, series, end))
            }
            NearEnd::Quic { timeout, sample_interval, load } => {
                self.run_quic_requests(test, timeout, sample_interval, epoch, series, |far, end| load(far, epoch, stop, series, end))
            }
        }
    }

    /// A bulk or file test over kernel TCP.
    fn run_flows(&mut self, test: TestRequest, spec: &BulkSpec, epoch: Instant, stop: &AtomicBool, series: &dyn SeriesSink) -> Result<BulkResult, RemoteError> {
        self.send(&ClientMsg::Run { test })?;
        let (port, token) = match self.reply()? {
            ServerMsg::Ready { port, token, .. } => (port, token),
            ServerMsg::Refused { reason } => return Err(RemoteError::refused(&reason)),
            ServerMsg::Error { message } => return Err(RemoteError::server_said(&message)),
            other => return Err(unexpected(&other)),
        };
        let token = unhex::<TOKEN_LEN>(&token).ok_or_else(|| RemoteError::Protocol("malformed token from the server".into()))?;
        let data_addr = SocketAddr::new(self.addr.ip(), port);
        let upload = spec.direction == Direction::Upload;
        let plan = spec.plan();
        let mut streams = Vec::new();
        let mut meta = Vec::new();
        for (id, flow) in plan.iter().enumerate() {
            let stream = client_socket(data_addr, upload.then_some(&flow.cc))?;
            let mut hello = token.to_vec();
            hello.extend_from_slice(&(id as u32).to_be_bytes());
            (&stream).write_all(&hello)?;
            let cc_read_back = if upload { confirm_congestion(&stream, &flow.cc, Side::Client)? } else { String::new() };
            meta.push(FlowMeta { id: id as u32, plan: flow.clone(), client_port: stream.local_addr()?.port(), cc_read_back, buffers: None });
            prepare_stream(&stream)?;
            streams.push(EndStream { id: id as u32, start: flow.start(), stream, sends: upload });
        }
        match self.reply()? {
            ServerMsg::Connected { cc_read_back } if !upload => {
                for (m, cc) in meta.iter_mut().zip(cc_read_back) {
                    if cc != m.plan.cc.to_string() {
                        return Err(WorkloadError::CongestionMismatch { requested: m.plan.cc.to_string(), actual: term_safe(&cc) }.into());
                    }
                    m.cc_read_back = cc;
                }
                if meta.iter().any(|m| m.cc_read_back.is_empty()) {
                    return Err(RemoteError::Protocol("the server did not read back every flow's algorithm".into()));
                }
            }
            ServerMsg::Connected { .. } => {}
            ServerMsg::Error { message } => return Err(RemoteError::server_said(&message)),
            other => return Err(unexpected(&other)),
        }
        let last_start = plan.iter().map(|f| f.start_s).fold(0.0, f64::max);
        let planned = match spec.amount {
            Amount::Seconds(s) => s + last_start,
            Amount::Bytes(_) => spec.timeout_s + last_start,
        };
        let one_way = one_way_estimate(self.control.stream());
        self.send(&ClientMsg::Start)?;
        let start = Instant::now();
        let bounds = Bounds::for_test(planned, spec.sample_interval_us, plan.len() as u32);
        // A download's window opens when its data arrives, not when `Start` left: that message
        // can be lost and resent, and the server starts only once it has it.
        let clock = if upload { EndClock::shared(epoch, start) } else { EndClock::at_first_byte(epoch, start, one_way) };
        let (control, dropped) = (&self.control, &self.dropped_samples);
        let (near, far) = std::thread::scope(|s| {
            let far = s.spawn(|| receive_results(control, bounds, &clock, one_way, series, dropped));
            let near = run_end(spec, &streams, &clock, stop, series, &NoMeasureHook, None);
            // The far end's window closes a one-way delay after ours: the streams stay open
            // until it is done, unless the run was stopped (then closing them stops it).
            if stop.load(Ordering::SeqCst) {
                drop(streams);
            }
            (near, far.join().unwrap_or_else(|_| Err(RemoteError::Protocol("the result reader panicked".into()))))
        });
        let far = far?;
        let elapsed_s = clock.elapsed(spec.amount);
        let start_us = clock.opened().unwrap_or(start).saturating_duration_since(epoch).as_micros() as u64;
        let (senders, receivers) = if upload { (near, far) } else { (far, near) };
        Ok(assemble(spec, &meta, &senders, &receivers, start_us, elapsed_s, stop.load(Ordering::SeqCst)))
    }
}

/// Is `e` a read or write cut at its timeout (the kernel says "Resource temporarily
/// unavailable", `EAGAIN`, for a socket timeout)?
pub(crate) fn is_timeout(e: &FrameError) -> bool {
    matches!(e, FrameError::Io(e) if matches!(e.kind(), std::io::ErrorKind::TimedOut | std::io::ErrorKind::WouldBlock))
}

/// A control-connection failure in words: a timeout as "`what` from ccbench serve at ADDR
/// within N s", anything else as it is.
pub(crate) fn timed_out(e: FrameError, addr: SocketAddr, what: &str, within: Duration) -> RemoteError {
    if is_timeout(&e) {
        return RemoteError::Protocol(format!("{what} from ccbench serve at {addr} within {} s", within.as_secs()));
    }
    e.into()
}

/// Half the control connection's lowest round trip so far: how long after the far end
/// starts sending its first byte arrives here, on a path as slow both ways.
pub(crate) fn one_way_estimate(control: &TcpStream) -> Duration {
    ccbench_kernel_tcp::tcp_info(control).map(|t| Duration::from_micros(u64::from(t.min_rtt_us.unwrap_or(t.rtt_us)) / 2)).unwrap_or_default()
}

/// Where the far end's time 0 falls on this end's clock, in µs from its epoch. When this end
/// receives, the far end's 0 is when it saw `Start` and began to send: the window's opening here.
/// When this end sends, the far end's 0 is when it sent `Connected`, a one-way delay before this
/// end's `start` (it started reading then, so as not to depend on `Start` arriving in time).
pub(crate) fn far_shift_us(clock: &EndClock, one_way: Duration) -> u64 {
    let far_zero = match clock.opens {
        Opens::AtFirstByte { .. } => clock.opened().unwrap_or(clock.start + one_way),
        Opens::AtStart => clock.start.checked_sub(one_way).unwrap_or(clock.start),
    };
    far_zero.saturating_duration_since(clock.epoch).as_micros() as u64
}

/// Moves the far end's times onto this end's clock, once it knows where the far end's 0 is.
pub(crate) struct FarTime<'a> {
    clock: &'a EndClock,
    one_way: Duration,
    shift_us: Option<u64>,
}

impl<'a> FarTime<'a> {
    pub(crate) fn new(clock: &'a EndClock, one_way: Duration) -> Self {
        FarTime { clock, one_way, shift_us: None }
    }

    /// µs to add to a far time. The far end's first samples race its first data bytes here:
    /// the first call gives the data a moment to open this end's window, so that both ends'
    /// series share one time axis.
    pub(crate) fn shift_us(&mut self) -> u64 {
        let (clock, one_way) = (self.clock, self.one_way);
        *self.shift_us.get_or_insert_with(|| {
            let wait_until = Instant::now() + FIRST_BYTE_GRACE;
            while clock.opened().is_none() && Instant::now() < wait_until {
                std::thread::sleep(Duration::from_millis(1));
            }
            far_shift_us(clock, one_way)
        })
    }
}

/// What a hostile or broken server may send for one test: messages in number (one per sample
/// interval per socket, and a slack), all of them by the test's planned end and a grace, far
/// times within that, ids of the test's own sockets, and bytes this end keeps (BBR events,
/// acceptances, connection ends, error lines: [`KEEP_PER_ID`] per socket, [`KEEP_MAX`] in all).
/// Every one of them is set from the test this end asked for, none from what the server says.
/// Beyond any, the run fails in one line instead of growing without end. (Samples are not
/// kept: they go to the series files as they come, bounded in number.)
pub(crate) struct Bounds {
    deadline: Instant,
    horizon_us: u64,
    max_messages: u64,
    got: u64,
    /// Flows (or connections) the test has: ids are below it.
    ids: u32,
    planned_s: f64,
    kept: u64,
    max_kept: u64,
    /// How long after the planned end the results may still come.
    grace: Duration,
}

/// Bytes of the server's results this end may keep per flow or connection of a test.
pub(crate) const KEEP_PER_ID: u64 = 4 << 20;
/// ... and per test, however many sockets it has.
pub(crate) const KEEP_MAX: u64 = 48 << 20;

impl Bounds {
    pub(crate) fn for_test(planned_s: f64, sample_interval_us: u64, ids: u32) -> Bounds {
        let planned = Duration::from_secs_f64(planned_s.clamp(0.0, 86_400.0));
        let horizon_us = (planned + RESULT_GRACE).as_micros() as u64;
        let per_socket = horizon_us / sample_interval_us.max(1_000) + 1;
        // Samples, goodput points and BBR event chunks: at most a few per socket per interval.
        let max_messages = per_socket.saturating_mul(3).saturating_mul(u64::from(ids.max(1))).saturating_add(MESSAGE_SLACK);
        let max_kept = KEEP_PER_ID.saturating_mul(u64::from(ids.max(1))).min(KEEP_MAX);
        Bounds { deadline: Instant::now() + planned + RESULT_GRACE, horizon_us, max_messages, got: 0, ids, planned_s, kept: 0, max_kept, grace: RESULT_GRACE }
    }

    /// The same with a shorter grace after the planned end, for tests of a silent server.
    #[cfg(test)]
    pub(crate) fn with_grace(mut self, grace: Duration) -> Bounds {
        self.deadline = self.deadline - RESULT_GRACE + grace;
        self.grace = grace;
        self
    }

    /// `bytes` more of the server's results kept for the rest of the test, within its budget.
    pub(crate) fn keep(&mut self, bytes: usize) -> Result<(), RemoteError> {
        self.kept = self.kept.saturating_add(bytes as u64);
        if self.kept > self.max_kept {
            return Err(RemoteError::Protocol(format!(
                "the server's results for this test passed this client's budget of {} MB ({} MB per flow or connection); giving up on it",
                self.max_kept >> 20,
                KEEP_PER_ID >> 20
            )));
        }
        Ok(())
    }

    /// The next message, counted, within the test's deadline.
    pub(crate) fn next(&mut self, control: &Channel) -> Result<ServerMsg, RemoteError> {
        self.got += 1;
        if self.got > self.max_messages {
            return Err(RemoteError::Protocol(format!(
                "the server sent over {} messages for a test of {:.1} s: more than its samples could be; giving up on it",
                self.max_messages, self.planned_s
            )));
        }
        match crate::screen::recv(control, self.deadline) {
            Err(e) if is_timeout(&e) => Err(RemoteError::Protocol(format!(
                "the server's results did not end within {:.0} s of the test's planned {:.1} s",
                self.grace.as_secs_f64(),
                self.planned_s
            ))),
            m => Ok(m?),
        }
    }

    /// A far time (µs from the far end's start) that the test could have, from one of its ids.
    pub(crate) fn at(&self, id: u32, t_us: u64) -> Result<(), RemoteError> {
        if id >= self.ids {
            return Err(RemoteError::Protocol(format!("the server reported socket {id} of a test with {}", self.ids)));
        }
        if t_us > self.horizon_us {
            return Err(RemoteError::Protocol(format!("the server reported a time of {t_us} µs in a test of {:.1} s", self.planned_s)));
        }
        Ok(())
    }

    /// As [`Bounds::at`], and a round trip a path could have.
    pub(crate) fn sample(&self, id: u32, t_us: u64, rtt_us: u32) -> Result<(), RemoteError> {
        self.at(id, t_us)?;
        if rtt_us > MAX_SANE_RTT_US {
            return Err(RemoteError::Protocol(format!("the server reported a round trip of {} ms, over any real one", rtt_us / 1000)));
        }
        Ok(())
    }

    /// A test's final reports: each id once, and (`complete`) every id.
    pub(crate) fn ends(&self, ends: &[FlowEnd], complete: bool) -> Result<(), RemoteError> {
        let mut seen = vec![false; self.ids as usize];
        for e in ends {
            match seen.get_mut(e.id as usize) {
                Some(s) if !*s => *s = true,
                _ => return Err(RemoteError::Protocol(format!("the server's results name flow {} twice or of another test", e.id))),
            }
        }
        if complete && ends.len() != self.ids as usize {
            return Err(RemoteError::Protocol(format!("the server's results hold {} of the test's {} flows", ends.len(), self.ids)));
        }
        Ok(())
    }
}

/// The far end's samples, into `series` on this end's clock, until its `Done`.
pub(crate) fn receive_results(
    control: &Channel,
    mut bounds: Bounds,
    clock: &EndClock,
    one_way: Duration,
    series: &dyn SeriesSink,
    dropped: &AtomicU64,
) -> Result<Vec<FlowEnd>, RemoteError> {
    let mut far = FarTime::new(clock, one_way);
    // The ends come in parts (`more`); each id once across them, so at most the test's ids.
    let mut all = Vec::new();
    loop {
        match bounds.next(control)? {
            ServerMsg::Sample { flow, mut sample } => {
                bounds.sample(flow, sample.t_us, sample.rtt_us)?;
                sample.t_us += far.shift_us();
                series.tcp_sample(SocketId::Flow(flow), &sample);
            }
            ServerMsg::Received { flow, mut point } => {
                bounds.at(flow, point.t_us)?;
                point.t_us += far.shift_us();
                series.received(flow, &point);
            }
            ServerMsg::Done { ends, dropped_samples, more } => {
                all.extend(ends);
                bounds.ends(&all, !more)?;
                if !more {
                    dropped.fetch_add(dropped_samples, Ordering::Relaxed);
                    return Ok(all);
                }
            }
            ServerMsg::Error { message } => return Err(RemoteError::server_said(&message)),
            other => return Err(unexpected(&other)),
        }
    }
}

pub(crate) fn unexpected(m: &ServerMsg) -> RemoteError {
    let json = serde_json::to_string(m).unwrap_or_default();
    RemoteError::Protocol(format!("unexpected message from the server: {}", json.chars().take(120).collect::<String>()))
}
