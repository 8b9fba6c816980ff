//! The near end of the HTTP tests (objects, page, browser) against `ccbench serve`: this
//! process runs the workload's own client half (`ccbench_workload::run_*_remote`; for the
//! browser, Chromium and its relay); the server's reports of its connections and samples are
//! read on a thread of their own and merged in, named by this end's ports and on this end's
//! clock.

use std::net::SocketAddr;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use ccbench_model::units::wire_time;

use ccbench_workload::{FarConnection, FarHttp, FarReport, SeriesSink, SocketId, WorkloadError, TOKEN_LEN};

use crate::channel::Channel;
use crate::client::{term_safe, unexpected, Bounds, Client, RemoteError};
use crate::proto::{unhex, ClientMsg, ServerMsg, TestRequest};

/// The server's error lines of an HTTP test kept (the count is kept whole).
pub(crate) const MAX_ERROR_MESSAGES: usize = 100;
/// Connections one HTTP test may open: twice serve's 64-flow limit, serve's own cap.
pub(crate) const MAX_CONNECTIONS: u32 = 128;

impl Client {
    /// `Run` → `Ready` → `Start`, then `load` with the far end's view, whose `end` sends
    /// `Stop` and waits for the server's report (called once the load is over; called here if
    /// `load` returned without).
    pub(crate) fn run_http<R>(
        &mut self,
        test: TestRequest,
        timeout: Duration,
        interval: Duration,
        epoch: Instant,
        series: &dyn SeriesSink,
        load: impl FnOnce(&FarHttp, &dyn Fn() -> Result<FarReport, String>) -> Result<R, WorkloadError>,
    ) -> Result<R, RemoteError> {
        self.send(&ClientMsg::Run { test })?;
        let (port, token, spki_sha256) = match self.reply()? {
            ServerMsg::Ready { port, token, spki_sha256 } => (port, token, spki_sha256),
            ServerMsg::Refused { reason } => return Err(RemoteError::refused(&reason)),
            ServerMsg::Error { message } => return Err(RemoteError::server_said(&message)),
            other => return Err(unexpected(&other)),
        };
        let token = unhex::<TOKEN_LEN>(&token).ok_or_else(|| RemoteError::Protocol("malformed token from the server".into()))?;
        let mut far = FarHttp::new(SocketAddr::new(self.addr.ip(), port), token);
        if let Some(spki) = spki_sha256 {
            let spki = unhex::<32>(&spki).ok_or_else(|| RemoteError::Protocol("malformed certificate key hash from the server".into()))?;
            far = far.with_spki_sha256(spki);
        }
        // Connection numbers are this end's own (its dialer's); their bound is this build's,
        // never one the server announces.
        let bounds = Bounds::for_test(wire_time::to_s(timeout), wire_time::to_us(interval), MAX_CONNECTIONS);
        self.send(&ClientMsg::Start)?;
        let start = Instant::now();
        // The far end's times count from when it saw `Start`; this end's from `epoch`.
        let shift_us = start.duration_since(epoch).as_micros() as u64;
        let (control, dropped) = (&self.control, &self.dropped_samples);
        load_beside_reader(control, || receive_http(control, bounds, shift_us, &far, series, dropped), |end| load(&far, end))
    }
}

/// Runs `load` here while `read` takes the server's messages on a thread of its own. `load` is
/// given `end`, which sends `Stop` and waits for the reader's report; if `load` returns without
/// calling it, it is called here, so the far end is always ended and its report read. Shared by
/// every request load over `--remote`, TCP's (`run_http`) and QUIC's (`run_quic_requests`).
pub(crate) fn load_beside_reader<Rep: Send, R>(
    control: &Channel,
    read: impl FnOnce() -> Result<Rep, RemoteError> + Send,
    load: impl FnOnce(&dyn Fn() -> Result<Rep, String>) -> Result<R, WorkloadError>,
) -> Result<R, RemoteError> {
    std::thread::scope(|s| {
        let handle = Mutex::new(Some(s.spawn(read)));
        let end = || -> Result<Rep, String> {
            let Some(h) = handle.lock().unwrap_or_else(|p| p.into_inner()).take() else {
                return Err("the far end was already ended".into());
            };
            let sent = control.send(&ClientMsg::Stop).map_err(|e| e.to_string());
            let report = h.join().unwrap_or_else(|_| Err(RemoteError::Protocol("the result reader panicked".into()))).map_err(|e| e.to_string());
            sent.and(report)
        };
        let result = load(&end);
        let ended_here = handle.lock().unwrap_or_else(|p| p.into_inner()).is_some().then(end);
        match (result, ended_here) {
            (Ok(r), None | Some(Ok(_))) => Ok(r),
            (Ok(_), Some(Err(e))) => Err(RemoteError::Protocol(e)),
            (Err(e), _) => Err(e.into()),
        }
    })
}

/// The server's messages of an HTTP test, until its `HttpDone`: acceptances and samples go
/// into `far` and `series` as they come; the report is returned.
pub(crate) fn receive_http(
    control: &Channel,
    mut bounds: Bounds,
    shift_us: u64,
    far: &FarHttp,
    series: &dyn SeriesSink,
    dropped: &AtomicU64,
) -> Result<FarReport, RemoteError> {
    let mut connections: Vec<FarConnection> = Vec::new();
    let mut accepted = vec![false; MAX_CONNECTIONS as usize];
    loop {
        match bounds.next(control)? {
            ServerMsg::Accepted { conn, cc_read_back, mismatch } => {
                bounds.at(conn, 0)?;
                dialed(far, conn)?;
                if std::mem::replace(&mut accepted[conn as usize], true) {
                    return Err(RemoteError::Protocol(format!("the server accepted connection {conn} twice")));
                }
                bounds.keep(ACCEPTED_BYTES + cc_read_back.as_ref().map_or(0, String::len) + mismatch.as_ref().map_or(0, String::len))?;
                far.accepted(conn, cc_read_back.map(|s| term_safe(&s)), mismatch.map(|s| term_safe(&s)))
            }
            ServerMsg::ConnectionSample { conn, mut sample } => {
                bounds.sample(conn, sample.t_us, sample.rtt_us)?;
                if let Some(port) = far.port_of(conn) {
                    sample.t_us += shift_us;
                    series.tcp_sample(SocketId::Connection(port), &sample);
                }
            }
            ServerMsg::ConnectionEnd { conn, cc_read_back, final_tcp_info, served } => {
                bounds.at(conn, 0)?;
                dialed(far, conn)?;
                bounds.keep(std::mem::size_of::<FarConnection>() + cc_read_back.as_ref().map_or(0, String::len))?;
                if connections.iter().any(|c| c.conn == conn) {
                    return Err(RemoteError::Protocol(format!("the server ended connection {conn} twice")));
                }
                connections.push(FarConnection { conn, cc_read_back: cc_read_back.map(|s| term_safe(&s)), final_tcp_info: final_tcp_info.map(|b| *b), served })
            }
            ServerMsg::HttpDone { errors, error_messages, dropped_samples } => {
                dropped.fetch_add(dropped_samples, Ordering::Relaxed);
                bounds.keep(error_messages.iter().take(MAX_ERROR_MESSAGES).map(String::len).sum())?;
                let error_messages = error_messages.iter().take(MAX_ERROR_MESSAGES).map(|m| term_safe(m)).collect();
                return Ok(FarReport { connections, errors, error_messages });
            }
            ServerMsg::Error { message } => return Err(RemoteError::server_said(&message)),
            other => return Err(unexpected(&other)),
        }
    }
}

/// What this end keeps of one acceptance, besides its strings.
const ACCEPTED_BYTES: usize = 64;

/// A connection the server names must be one this end opened.
fn dialed(far: &FarHttp, conn: u32) -> Result<(), RemoteError> {
    match far.port_of(conn) {
        Some(_) => Ok(()),
        None => Err(RemoteError::Protocol(format!("the server reported connection {conn}, which this end never opened"))),
    }
}
