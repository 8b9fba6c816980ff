//! Path probes through `ccbench serve` (`ccbench probe HOST:PORT`): the server half starts a
//! token-gated UDP [`ProbeServer`] for an authenticated client, within its limits, and stops it
//! when the client says the probe is over, when the session ends, or at `--max-duration`; the
//! client half opens and ends such a session (the probing itself is `ccbench_pathprobe::probe`).
//!
//! The token is fresh and random per session and travels only over the authenticated control
//! connection, so the UDP server answers no one else: no reflection to a third party, and no
//! amplification (its echoes are as long as their requests; it sends trains only to the
//! address that first presented the token, and never beyond the session's byte budget).

use std::io::ErrorKind;
use std::net::{SocketAddr, TcpStream};

use crate::channel::Channel;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use ccbench_pathprobe::{ProbeServer, ServerReport, Token};
use rand::RngCore;

use crate::client::{Client, RemoteError};
use crate::proto::{self, hex, unhex, ClientMsg, FrameError, Limits, ProbeLimits, ProbeReport, ProbeRequest, ServerMsg};

/// The slowest train worth asking for: the pathprobe server's own floor.
pub const MIN_PROBE_RATE_BPS: u64 = 10_000;
/// How often the server looks at its stop flag while a probe runs.
const POLL: Duration = Duration::from_millis(200);
/// How long the rest of a frame may take once its first byte is in.
const FRAME_TIMEOUT: Duration = Duration::from_secs(10);

impl From<ServerReport> for ProbeReport {
    fn from(r: ServerReport) -> Self {
        ProbeReport { bytes_sent: r.bytes_sent, bytes_received: r.bytes_received, ignored: r.ignored, trains_refused: r.trains_refused, timed_out: r.timed_out }
    }
}

/// The session's limits, or why the server refuses it.
pub fn check(request: &ProbeRequest, limits: &Limits) -> Result<ProbeLimits, String> {
    if request.max_rate_bps < MIN_PROBE_RATE_BPS {
        return Err(format!("a probe up to {} bit/s; the slowest this server probes at is {MIN_PROBE_RATE_BPS} bit/s", request.max_rate_bps));
    }
    Ok(ProbeLimits { max_bytes: limits.max_bytes, max_duration_s: limits.max_duration_s, max_rate_bps: request.max_rate_bps.min(limits.max_probe_rate_bps) })
}

/// How a probe session went, for serve's log and its session.
pub struct Outcome {
    pub port: u16,
    pub limits: ProbeLimits,
    pub report: ProbeReport,
    /// The session cannot go on (the client broke the protocol or vanished).
    pub fatal: Option<String>,
}

impl Outcome {
    /// The log line after the peer: what, how long, how many bytes.
    pub fn log_line(&self, took: Duration) -> String {
        let r = &self.report;
        let mut line = format!(
            "probe (UDP port {}, up to {} bit/s): {:.2} s, {} bytes sent, {} bytes received",
            self.port,
            self.limits.max_rate_bps,
            took.as_secs_f64(),
            r.bytes_sent,
            r.bytes_received
        );
        if r.ignored > 0 {
            line += &format!(", {} datagrams ignored", r.ignored);
        }
        if r.trains_refused > 0 {
            line += &format!(", {} trains refused over the limit of {} bytes per test (--max-bytes)", r.trains_refused, self.limits.max_bytes);
        }
        if r.timed_out {
            line += &format!(", stopped at the limit of {} s per test (--max-duration)", self.limits.max_duration_s);
        }
        if let Some(e) = &self.fatal {
            line += &format!(", error: {e}");
        }
        line
    }
}

/// The server's end of one probe session, from `ProbeReady` to `ProbeDone`. `stop` is serve's
/// own (it is shutting down).
pub fn serve_session(channel: &Channel, limits: ProbeLimits, stop: &AtomicBool) -> Outcome {
    let control = channel.stream();
    let mut outcome = Outcome { port: 0, limits, report: ProbeReport::default(), fatal: None };
    let mut token: Token = [0; 16];
    rand::rngs::OsRng.fill_bytes(&mut token);
    let probe_limits = ccbench_pathprobe::Limits {
        max_bytes: limits.max_bytes,
        max_duration: Duration::from_secs_f64(limits.max_duration_s),
        max_rate_bps: limits.max_rate_bps,
    };
    // On the address the client reached us at, on a port of its own, answering only the
    // control connection's peer: a datagram from anywhere else draws nothing, token or not.
    let bound = control
        .local_addr()
        .and_then(|a| Ok((a, control.peer_addr()?)))
        .and_then(|(a, peer)| Ok(ProbeServer::bind(SocketAddr::new(a.ip(), 0), token, probe_limits)?.only_from(peer.ip())));
    let server = match bound {
        Ok(s) => s,
        Err(e) => {
            outcome.fatal = Some(format!("opening a probe port: {e}"));
            return outcome;
        }
    };
    outcome.port = server.local_addr().map(|a| a.port()).unwrap_or(0);
    if let Err(e) = channel.send(&ServerMsg::ProbeReady { port: outcome.port, token: hex(&token), limits }) {
        outcome.fatal = Some(e.to_string());
        return outcome;
    }
    let deadline = Instant::now() + probe_limits.max_duration;
    let handle = match server.spawn() {
        Ok(h) => h,
        Err(e) => {
            outcome.fatal = Some(format!("starting the probe server: {e}"));
            return outcome;
        }
    };
    // Until the client's `ProbeEnd`, the time limit, or the end of the session.
    let ended = loop {
        if stop.load(Ordering::SeqCst) {
            break Ok(());
        }
        let now = Instant::now();
        if now >= deadline {
            break Ok(());
        }
        match wait_readable(control, (deadline - now).min(POLL)) {
            Ok(false) => continue,
            Ok(true) => {}
            Err(e) => break Err(format!("the control connection failed during the probe: {e}")),
        }
        match channel.recv_by::<ClientMsg>(Instant::now() + FRAME_TIMEOUT) {
            Ok(ClientMsg::ProbeEnd) => break Ok(()),
            Ok(_) => break Err("expected probe_end during a probe".to_string()),
            Err(FrameError::Io(e)) if e.kind() == ErrorKind::UnexpectedEof => break Err("the client left during the probe".to_string()),
            Err(e) => break Err(format!("during the probe: {e}")),
        }
    };
    outcome.report = handle.stop().into();
    match ended {
        Ok(()) => {
            if let Err(e) = channel.send(&ServerMsg::ProbeDone { report: outcome.report.clone() }) {
                outcome.fatal = Some(e.to_string());
            }
        }
        Err(e) => outcome.fatal = Some(e),
    }
    outcome
}

/// Whether a byte is ready to read within `timeout`; it is left there. End of stream counts as
/// readable (the read that follows sees it).
fn wait_readable(stream: &TcpStream, timeout: Duration) -> std::io::Result<bool> {
    stream.set_read_timeout(Some(timeout.max(Duration::from_millis(1))))?;
    match stream.peek(&mut [0u8; 1]) {
        Ok(_) => Ok(true),
        Err(e) if matches!(e.kind(), ErrorKind::WouldBlock | ErrorKind::TimedOut | ErrorKind::Interrupted) => Ok(false),
        Err(e) => Err(e),
    }
}

/// An open probe session, as the server granted it.
#[derive(Clone, Debug)]
pub struct ProbeSession {
    /// The UDP probe server.
    pub server: SocketAddr,
    pub token: Token,
    pub limits: ProbeLimits,
}

impl Client {
    /// Asks the server for a probe session. A refusal (a limit, an older server that knows no
    /// probes) is [`RemoteError::Refused`]; nothing has been sent over UDP yet.
    pub fn open_probe(&mut self, request: &ProbeRequest) -> Result<ProbeSession, RemoteError> {
        self.send(&ClientMsg::Probe { request: *request })?;
        match self.reply()? {
            ServerMsg::ProbeReady { port, token, limits } => {
                let token = unhex::<16>(&token).ok_or_else(|| RemoteError::Protocol("malformed probe token from the server".into()))?;
                Ok(ProbeSession { server: SocketAddr::new(self.addr.ip(), port), token, limits })
            }
            ServerMsg::Refused { reason } => Err(RemoteError::refused(&reason)),
            ServerMsg::Error { message } => Err(RemoteError::server_said(&message)),
            other => Err(crate::client::unexpected(&other)),
        }
    }

    /// Ends the probe session (the server stops its UDP server) and returns what it cost the
    /// server; `timed_out` if the server had already ended it at its time limit.
    pub fn end_probe(&mut self) -> Result<ProbeReport, RemoteError> {
        self.send(&ClientMsg::ProbeEnd)?;
        match self.reply()? {
            ServerMsg::ProbeDone { report } => Ok(report),
            ServerMsg::Error { message } => Err(RemoteError::server_said(&message)),
            other => Err(crate::client::unexpected(&other)),
        }
    }
}

/// What a probe session makes both ends parse, fed arbitrary bytes: frames of client messages
/// as serve reads them (every probe request going on through serve's [`check`]), frames of
/// server messages as the client reads them, and hex tokens. Returns how many messages
/// decoded. Must never panic; the `control` fuzz target and the corpus replay call it.
pub fn fuzz_input(data: &[u8]) -> usize {
    let limits =
        Limits { max_duration_s: 120.0, max_bytes: 10_000_000_000, max_clients: 4, max_tests_per_minute: 60, max_flows: 64, max_probe_rate_bps: 1_000_000_000 };
    let mut decoded = 0;
    for msg in proto::decode_stream(data).into_iter().flatten() {
        decoded += 1;
        if let ClientMsg::Probe { request } = msg {
            if let Ok(granted) = check(&request, &limits) {
                assert!((MIN_PROBE_RATE_BPS..=limits.max_probe_rate_bps).contains(&granted.max_rate_bps), "{granted:?}");
            }
        }
    }
    decoded += proto::decode_stream_server(data).iter().filter(|m| m.is_ok()).count();
    if let Ok(s) = std::str::from_utf8(data) {
        let _ = unhex::<16>(s);
    }
    decoded
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::{Rng, SeedableRng};

    /// The probe's messages survive the round trip, and a probe request with fields it does not
    /// know is refused, not guessed at.
    #[test]
    fn probe_messages_round_trip_and_are_strict() {
        let mut buf = Vec::new();
        proto::write_msg(&mut buf, &ClientMsg::Probe { request: ProbeRequest { max_rate_bps: 4_000_000 } }).unwrap();
        proto::write_msg(&mut buf, &ClientMsg::ProbeEnd).unwrap();
        match &proto::decode_stream(&buf)[..] {
            [Ok(ClientMsg::Probe { request }), Ok(ClientMsg::ProbeEnd)] => assert_eq!(request.max_rate_bps, 4_000_000),
            other => panic!("{other:?}"),
        }
        let report = ProbeReport { bytes_sent: 5, bytes_received: 6, ignored: 0, trains_refused: 1, timed_out: false };
        let mut buf = Vec::new();
        proto::write_msg(&mut buf, &ServerMsg::ProbeDone { report: report.clone() }).unwrap();
        assert!(matches!(&proto::decode_stream_server(&buf)[..], [Ok(ServerMsg::ProbeDone { report: r })] if *r == report));
        for bad in [
            r#"{"type":"probe","request":{"max_rate_bps":1,"rate":2}}"#,
            r#"{"type":"probe","request":{}}"#,
            r#"{"type":"probe","request":{"max_rate_bps":-1}}"#,
            r#"{"type":"probe_ready","port":1,"token":"00"}"#,
        ] {
            assert!(proto::decode::<ClientMsg>(bad.as_bytes()).is_err() && proto::decode::<ServerMsg>(bad.as_bytes()).is_err(), "{bad}");
        }
        // An older server's welcome, without the probe rate: the probe server's own default.
        let old = r#"{"type":"welcome","facts":{"ccbench_version":"0","kernel_release":null,"kernel_version":null,"congestion_controls":[],"default_congestion_control":null,"default_qdisc":null},"limits":{"max_duration_s":1.0,"max_bytes":1,"max_clients":1,"max_tests_per_minute":1,"max_flows":1}}"#;
        assert!(matches!(proto::decode::<ServerMsg>(old.as_bytes()), Ok(ServerMsg::Welcome { limits, .. }) if limits.max_probe_rate_bps == 1_000_000_000));
    }

    /// The probe's messages of both directions, mutated, truncated and made up from JSON-ish
    /// bytes, through [`fuzz_input`]: it must return, never panic.
    #[test]
    fn random_probe_input_never_panics() {
        let mut rng = rand::rngs::StdRng::seed_from_u64(0x9b0e);
        let mut client = Vec::new();
        proto::write_msg(&mut client, &ClientMsg::Probe { request: ProbeRequest { max_rate_bps: 1_000_000_000 } }).unwrap();
        proto::write_msg(&mut client, &ClientMsg::ProbeEnd).unwrap();
        let mut server = Vec::new();
        let limits = ProbeLimits { max_bytes: 10_000_000_000, max_duration_s: 120.0, max_rate_bps: 1_000_000_000 };
        proto::write_msg(&mut server, &ServerMsg::ProbeReady { port: 40_000, token: hex(&[3; 16]), limits }).unwrap();
        let report = ProbeReport { bytes_sent: 1, bytes_received: 2, ignored: 3, trains_refused: 4, timed_out: true };
        proto::write_msg(&mut server, &ServerMsg::ProbeDone { report }).unwrap();
        let alphabet = br#"{}[]":,0123456789.-eEtruefalsnl typeprobe_endreadydonerequestmax_rate_bpsportokenlimits\u"#;
        const N: usize = 30_000;
        let (mut decoded, mut requests) = (0, 0);
        for i in 0..N {
            let input: Vec<u8> = match i % 3 {
                0 => {
                    let body: Vec<u8> = (0..rng.gen_range(0..120)).map(|_| alphabet[rng.gen_range(0..alphabet.len())]).collect();
                    let mut f = (body.len() as u32).to_be_bytes().to_vec();
                    f.extend(body);
                    f
                }
                _ => {
                    let mut v = if i % 3 == 1 { client.clone() } else { server.clone() };
                    for _ in 0..rng.gen_range(1..4) {
                        let at = rng.gen_range(0..v.len());
                        v[at] = rng.gen();
                    }
                    v.truncate(rng.gen_range(0..=v.len()));
                    v
                }
            };
            decoded += fuzz_input(&input);
            requests += proto::decode_stream(&input).iter().filter(|m| matches!(m, Ok(ClientMsg::Probe { .. }))).count();
        }
        // Mutations that leave a message whole must still decode, or this only tests errors.
        // (Seeded: 1521 messages and 419 probe requests when written.)
        assert!(decoded > 1000 && requests > 200, "{decoded} messages, {requests} probe requests decoded of {N} inputs");
    }

    fn limits() -> Limits {
        Limits { max_duration_s: 30.0, max_bytes: 5_000_000, max_clients: 1, max_tests_per_minute: 1, max_flows: 1, max_probe_rate_bps: 20_000_000 }
    }

    #[test]
    fn a_session_gets_the_servers_limits_and_the_lower_rate() {
        let got = check(&ProbeRequest { max_rate_bps: 1_000_000_000 }, &limits()).unwrap();
        assert_eq!(got, ProbeLimits { max_bytes: 5_000_000, max_duration_s: 30.0, max_rate_bps: 20_000_000 });
        assert_eq!(check(&ProbeRequest { max_rate_bps: 4_000_000 }, &limits()).unwrap().max_rate_bps, 4_000_000);
        assert!(check(&ProbeRequest { max_rate_bps: 0 }, &limits()).unwrap_err().contains("slowest"));
    }

    #[test]
    fn the_log_line_names_the_limits_that_stopped_a_probe() {
        let o = Outcome {
            port: 40000,
            limits: check(&ProbeRequest { max_rate_bps: 1_000_000_000 }, &limits()).unwrap(),
            report: ProbeReport { bytes_sent: 10, bytes_received: 20, ignored: 0, trains_refused: 2, timed_out: true },
            fatal: None,
        };
        let line = o.log_line(Duration::from_millis(1500));
        assert!(line.starts_with("probe (UDP port 40000, up to 20000000 bit/s): 1.50 s, 10 bytes sent, 20 bytes received"), "{line}");
        assert!(line.contains("2 trains refused") && line.contains("(--max-bytes)") && line.contains("(--max-duration)"), "{line}");
        assert!(!line.contains('\n'));
    }
}
