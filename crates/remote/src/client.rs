//! The near end of a test against `ccbench serve` (`ccbench run --remote`): the handshake, then
//! per test the data connections and this end's half of the workload, with the far end's
//! series merged into this run's.

use std::io::Write;
use std::net::{SocketAddr, TcpStream};
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use ccbench_workload::{
    assemble, client_socket, confirm_congestion, prepare_stream, run_end, Amount, BulkResult, BulkSpec, Direction, EndClock, EndStream, FlowEnd, FlowMeta,
    NoMeasureHook, Opens, SeriesSink, Side, SocketId, WorkloadError,
};

use crate::auth::{self, Secret};
use crate::proto::{self, hex, unhex, ClientMsg, FrameError, Limits, ServerFacts, ServerMsg, TestRequest, VERSION};
use crate::server::TOKEN_LEN;

const CONNECT_TIMEOUT: Duration = Duration::from_secs(10);
/// How long a reply may take outside a test.
pub(crate) const REPLY_TIMEOUT: Duration = Duration::from_secs(15);
/// How long after its planned end a test's results may take to come back.
pub(crate) const RESULT_GRACE: Duration = Duration::from_secs(30);
/// How long the far end's first sample waits for this end's first data byte.
const FIRST_BYTE_GRACE: Duration = Duration::from_secs(1);

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

impl From<FrameError> for RemoteError {
    fn from(e: FrameError) -> Self {
        RemoteError::Protocol(e.to_string())
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
    pub(crate) control: TcpStream,
    pub facts: ServerFacts,
    pub limits: Limits,
    /// The kernel's smoothed RTT of the control connection just after the handshake.
    pub rtt_us: Option<u32>,
}

impl Client {
    /// Connects and proves, both ways, that the two ends share `secret`.
    pub fn connect(addr: SocketAddr, secret: &Secret) -> Result<Client, RemoteError> {
        let control = TcpStream::connect_timeout(&addr, CONNECT_TIMEOUT).map_err(|source| RemoteError::Connect { addr, source })?;
        control.set_nodelay(true)?;
        control.set_read_timeout(Some(REPLY_TIMEOUT))?;
        control.set_write_timeout(Some(REPLY_TIMEOUT))?;
        let mut c = &control;
        let client_nonce = auth::nonce();
        proto::write_msg(&mut c, &ClientMsg::Hello { version: VERSION, nonce: hex(&client_nonce) })?;
        let (server_nonce, proof) = match proto::read_msg::<ServerMsg>(&mut c)? {
            ServerMsg::Challenge { version: VERSION, nonce, proof } => (nonce, proof),
            ServerMsg::Challenge { version, .. } => {
                return Err(RemoteError::Protocol(format!("the server speaks protocol version {version}, this client {VERSION}")))
            }
            ServerMsg::Error { message } => return Err(RemoteError::Refused(message)),
            other => return Err(unexpected(&other)),
        };
        let malformed = || RemoteError::Protocol("malformed challenge from the server".into());
        let server_nonce = unhex::<{ auth::NONCE_LEN }>(&server_nonce).ok_or_else(malformed)?;
        let proof = unhex::<{ auth::PROOF_LEN }>(&proof).ok_or_else(malformed)?;
        if !secret.verify_server(&client_nonce, &server_nonce, &proof) {
            // Nothing more is sent: not even this end's proof.
            return Err(RemoteError::Auth(format!("authentication with ccbench serve at {addr} failed: the two ends' secrets differ (check --secret-file)")));
        }
        proto::write_msg(&mut c, &ClientMsg::Auth { proof: hex(&secret.client_proof(&client_nonce, &server_nonce)) })?;
        let (facts, limits) = match proto::read_msg::<ServerMsg>(&mut c)? {
            ServerMsg::Welcome { facts, limits } => (facts, limits),
            ServerMsg::Error { message } => return Err(RemoteError::Auth(format!("ccbench serve at {addr}: {message}"))),
            other => return Err(unexpected(&other)),
        };
        let rtt_us = ccbench_probe::tcp_info(&control).ok().map(|t| t.rtt_us);
        Ok(Client { addr, control, facts, limits, rtt_us })
    }

    /// Asks whether the server would run `test` (its algorithms, its limits); nothing runs.
    pub fn check(&mut self, test: &TestRequest) -> Result<(), RemoteError> {
        let mut c = &self.control;
        proto::write_msg(&mut c, &ClientMsg::Check { test: test.clone() })?;
        match proto::read_msg::<ServerMsg>(&mut c)? {
            ServerMsg::Allowed => Ok(()),
            ServerMsg::Refused { reason } => Err(RemoteError::Refused(reason)),
            ServerMsg::Error { message } => Err(RemoteError::Protocol(message)),
            other => Err(unexpected(&other)),
        }
    }

    /// Runs a bulk or file test: the server runs the far end, this process the near one.
    /// Times in the result and in `series` (the far end's samples included) are from `epoch`.
    pub fn run_bulk(&mut self, spec: &BulkSpec, epoch: Instant, stop: &AtomicBool, series: &dyn SeriesSink) -> Result<BulkResult, RemoteError> {
        if crate::quic::is_quic(spec) {
            return self.run_quic(spec, epoch, stop, series);
        }
        let mut c = &self.control;
        c.set_read_timeout(Some(REPLY_TIMEOUT))?;
        proto::write_msg(&mut c, &ClientMsg::Run { test: TestRequest::Bulk(spec.clone()) })?;
        let (port, token) = match proto::read_msg::<ServerMsg>(&mut c)? {
            ServerMsg::Ready { port, token, .. } => (port, token),
            ServerMsg::Refused { reason } => return Err(RemoteError::Refused(reason)),
            ServerMsg::Error { message } => return Err(RemoteError::Protocol(message)),
            other => return Err(unexpected(&other)),
        };
        let token = unhex::<TOKEN_LEN>(&token).ok_or_else(|| RemoteError::Protocol("malformed token from the server".into()))?;
        let data_addr = SocketAddr::new(self.addr.ip(), port);
        let upload = spec.direction == Direction::Upload;
        let plan = spec.plan();
        let mut streams = Vec::new();
        let mut meta = Vec::new();
        for (id, flow) in plan.iter().enumerate() {
            let stream = client_socket(data_addr, upload.then_some(flow.cc.as_str()))?;
            let mut hello = token.to_vec();
            hello.extend_from_slice(&(id as u32).to_be_bytes());
            (&stream).write_all(&hello)?;
            let cc_read_back = if upload { confirm_congestion(&stream, &flow.cc, Side::Client)? } else { String::new() };
            meta.push(FlowMeta { id: id as u32, plan: flow.clone(), client_port: stream.local_addr()?.port(), cc_read_back });
            prepare_stream(&stream)?;
            streams.push(EndStream { id: id as u32, start_s: flow.start_s, stream, sends: upload });
        }
        match proto::read_msg::<ServerMsg>(&mut c)? {
            ServerMsg::Connected { cc_read_back } if !upload => {
                for (m, cc) in meta.iter_mut().zip(cc_read_back) {
                    if cc != m.plan.cc {
                        return Err(WorkloadError::CongestionMismatch { requested: m.plan.cc.clone(), actual: cc }.into());
                    }
                    m.cc_read_back = cc;
                }
                if meta.iter().any(|m| m.cc_read_back.is_empty()) {
                    return Err(RemoteError::Protocol("the server did not read back every flow's algorithm".into()));
                }
            }
            ServerMsg::Connected { .. } => {}
            ServerMsg::Error { message } => return Err(RemoteError::Protocol(message)),
            other => return Err(unexpected(&other)),
        }
        let last_start = plan.iter().map(|f| f.start_s).fold(0.0, f64::max);
        let planned = match spec.amount {
            Amount::Seconds(s) => s + last_start,
            Amount::Bytes(_) => spec.timeout_s + last_start,
        };
        c.set_read_timeout(Some(Duration::from_secs_f64(planned.min(86_400.0)) + RESULT_GRACE))?;
        let one_way = one_way_estimate(&self.control);
        proto::write_msg(&mut c, &ClientMsg::Start)?;
        let start = Instant::now();
        // A download's window opens when its data arrives, not when `Start` left: that message
        // can be lost and resent, and the server starts only once it has it.
        let clock = if upload { EndClock::shared(epoch, start) } else { EndClock::at_first_byte(epoch, start, one_way) };
        let reader = self.control.try_clone()?;
        let (near, far) = std::thread::scope(|s| {
            let far = s.spawn(|| receive_results(reader, &clock, one_way, series));
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

/// Half the control connection's lowest round trip so far: how long after the far end
/// starts sending its first byte arrives here, on a path as slow both ways.
pub(crate) fn one_way_estimate(control: &TcpStream) -> Duration {
    ccbench_probe::tcp_info(control).map(|t| Duration::from_micros(u64::from(t.min_rtt_us.unwrap_or(t.rtt_us)) / 2)).unwrap_or_default()
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

/// The far end's samples, into `series` on this end's clock, until its `Done`.
fn receive_results(control: TcpStream, clock: &EndClock, one_way: Duration, series: &dyn SeriesSink) -> Result<Vec<FlowEnd>, RemoteError> {
    let mut c = &control;
    let mut far = FarTime::new(clock, one_way);
    loop {
        match proto::read_msg::<ServerMsg>(&mut c)? {
            ServerMsg::Sample { flow, mut sample } => {
                sample.t_us += far.shift_us();
                series.tcp_sample(SocketId::Flow(flow), &sample);
            }
            ServerMsg::Received { flow, mut point } => {
                point.t_us += far.shift_us();
                series.received(flow, &point);
            }
            ServerMsg::Done { ends } => return Ok(ends),
            ServerMsg::Error { message } => return Err(RemoteError::Protocol(message)),
            other => return Err(unexpected(&other)),
        }
    }
}

pub(crate) fn unexpected(m: &ServerMsg) -> RemoteError {
    let json = serde_json::to_string(m).unwrap_or_default();
    RemoteError::Protocol(format!("unexpected message from the server: {}", json.chars().take(120).collect::<String>()))
}
