//! The near end of QUIC bulk and file tests against `ccbench serve`
//! (`ccbench_workload::QuicFarClient`): the connections opened one at a time, each presenting
//! the token, then this end's half of the transfer while the server's samples are read on a
//! thread of their own and merged in on this end's clock.
//!
//! A request load over QUIC (objects, page): `Run` → `QuicReady` → `Start`, then the workload's
//! own client half (`ccbench_workload::FarQuic`, through its `OneConnection`) dials the one
//! connection and presents the token, while the server's `QuicConnected`, samples and end are
//! read on a thread of their own, each bounded as a bulk test's are.

use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

use ccbench_model::units::wire_time;

use ccbench_workload::{
    Amount, BbrEvent, BulkResult, BulkSpec, Direction, EndClock, FarQuic, FlowEnd, QuicConnEnd, QuicEnd, QuicFarClient, QuicFarReport, QuicSample, SeriesSink,
    SocketId, WorkloadError, TOKEN_LEN,
};

use crate::channel::Channel;
use crate::client::{one_way_estimate, unexpected, Bounds, Client, FarTime, RemoteError};
use crate::client_http::load_beside_reader;
use crate::proto::{unhex, unhex_vec, ClientMsg, ServerMsg, TestRequest};

/// BBR state changes one test may report: a change every millisecond for the longest test.
const MAX_BBR_EVENTS: usize = 200_000;
/// A certificate is a few hundred bytes; anything this long is not one.
const MAX_CERT: usize = 16 * 1024;

impl Client {
    /// `Run`, then the server's `QuicReady`: the test endpoint's port, the token and the
    /// certificate it made for the test (each checked for its form and size).
    fn quic_ready(&mut self, test: TestRequest) -> Result<(u16, [u8; TOKEN_LEN], Vec<u8>), RemoteError> {
        self.send(&ClientMsg::Run { test })?;
        let (port, token, cert) = match self.reply()? {
            ServerMsg::QuicReady { port, token, cert } => (port, token, cert),
            ServerMsg::Refused { reason } => return Err(RemoteError::refused(&reason)),
            ServerMsg::Error { message } => return Err(RemoteError::server_said(&message)),
            other => return Err(unexpected(&other)),
        };
        let malformed = |what: &str| RemoteError::Protocol(format!("malformed {what} from the server"));
        let token = unhex::<TOKEN_LEN>(&token).ok_or_else(|| malformed("token"))?;
        let cert = unhex_vec(&cert, MAX_CERT).ok_or_else(|| malformed("certificate"))?;
        Ok((port, token, cert))
    }

    /// Runs a bulk or file test whose flows are all QUIC: the server runs the far end.
    pub(crate) fn run_quic(
        &mut self,
        test: TestRequest,
        spec: &BulkSpec,
        epoch: Instant,
        stop: &AtomicBool,
        series: &dyn SeriesSink,
    ) -> Result<BulkResult, RemoteError> {
        let (port, token, cert) = self.quic_ready(test)?;
        let mut client = QuicFarClient::new(SocketAddr::new(self.addr.ip(), port), cert, spec)?;
        let mut far_read_backs = Vec::new();
        for conn in 0..client.connections() as u32 {
            client.connect_next(&token)?;
            match self.reply()? {
                ServerMsg::QuicConnected { conn: got, read_back } if got == conn => far_read_backs.push(crate::client::term_safe(&read_back)),
                ServerMsg::Error { message } => return Err(RemoteError::server_said(&message)),
                other => return Err(unexpected(&other)),
            }
        }
        let last_start = spec.plan().iter().map(|f| f.start_s).fold(0.0, f64::max);
        let planned = match spec.amount {
            Amount::Seconds(s) => s + last_start,
            Amount::Bytes(_) => spec.timeout_s + last_start,
        };
        let one_way = one_way_estimate(self.control.stream());
        self.send(&ClientMsg::Start)?;
        let start = Instant::now();
        let bounds = Bounds::for_test(planned, spec.sample_interval_us, spec.plan().len() as u32);
        let (control, dropped) = (&self.control, &self.dropped_samples);
        // As over TCP: a download's window opens when its data arrives (see `run_bulk`).
        let upload = spec.direction == Direction::Upload;
        let clock = if upload { EndClock::shared(epoch, start) } else { EndClock::at_first_byte(epoch, start, one_way) };
        let (near, far) = std::thread::scope(|s| {
            let far = s.spawn(|| receive_quic(control, bounds, FarTime::new(&clock, one_way), series, dropped));
            let near = client.run(&clock, stop, series);
            // Stopped early: closing the connections ends the far end too.
            if stop.load(Ordering::SeqCst) {
                client.close();
            }
            (near, far.join().unwrap_or_else(|_| Err(RemoteError::Protocol("the result reader panicked".into()))))
        });
        let far = far?;
        client.close();
        let elapsed_s = clock.elapsed(spec.amount);
        let start_us = clock.opened().unwrap_or(start).saturating_duration_since(epoch).as_micros() as u64;
        Ok(client.result(&near, &far, &far_read_backs, start_us, elapsed_s, stop.load(Ordering::SeqCst)))
    }
}

impl Client {
    /// A request load over one QUIC connection: `Run` → `QuicReady` → `Start`, then `load`
    /// with the far end's view, whose `end` sends `Stop` and waits for the server's report
    /// (called once the load is over; called here if `load` returned without).
    pub(crate) fn run_quic_requests<R>(
        &mut self,
        test: TestRequest,
        timeout: Duration,
        interval: Duration,
        epoch: Instant,
        series: &dyn SeriesSink,
        load: impl FnOnce(&FarQuic, &dyn Fn() -> Result<QuicFarReport, String>) -> Result<R, WorkloadError>,
    ) -> Result<R, RemoteError> {
        let (port, token, cert) = self.quic_ready(test)?;
        let far = FarQuic::new(SocketAddr::new(self.addr.ip(), port), cert, token);
        // One connection, "flow" 0: the bound is this build's, never one the server announces.
        let bounds = Bounds::for_test(wire_time::to_s(timeout), wire_time::to_us(interval), 1);
        self.send(&ClientMsg::Start)?;
        // The far end's times count from when it saw `Start`; this end's from `epoch`.
        let shift_us = Instant::now().duration_since(epoch).as_micros() as u64;
        let (control, dropped) = (&self.control, &self.dropped_samples);
        load_beside_reader(control, || receive_quic_requests(control, bounds, shift_us, &far, series, dropped), |end| load(&far, end))
    }
}

/// The server's messages of a request load over QUIC, until its `HttpDone`: its controller
/// into `far`, its samples into `series` under this end's connection (on this end's clock),
/// its connection's end and errors into the report returned.
pub(crate) fn receive_quic_requests(
    control: &Channel,
    mut bounds: Bounds,
    shift_us: u64,
    far: &FarQuic,
    series: &dyn SeriesSink,
    dropped: &AtomicU64,
) -> Result<QuicFarReport, RemoteError> {
    let mut report = QuicFarReport::default();
    let mut ended = false;
    loop {
        match bounds.next(control)? {
            ServerMsg::QuicConnected { conn, read_back } => {
                bounds.at(conn, 0)?;
                if report.read_back.is_some() {
                    return Err(RemoteError::Protocol("the server connected the test's connection twice".into()));
                }
                bounds.keep(read_back.len())?;
                let read_back = crate::client::term_safe(&read_back);
                far.connected(read_back.clone());
                report.read_back = Some(read_back);
            }
            ServerMsg::QuicSample { flow, mut sample } => {
                bounds.sample(flow, sample.t_us, sample.rtt_us)?;
                if let Some(socket) = far.socket() {
                    sample.t_us += shift_us;
                    series.quic_sample(socket, &sample);
                }
            }
            ServerMsg::BbrEvents { flow, events } => {
                if report.bbr_events.len() + events.len() > MAX_BBR_EVENTS {
                    return Err(RemoteError::Protocol(format!("the server sent over {MAX_BBR_EVENTS} BBR state changes for one test")));
                }
                for mut e in events {
                    bounds.at(flow, e.t_us)?;
                    bounds.keep(std::mem::size_of::<BbrEvent>() + e.from.len() + e.to.len())?;
                    e.t_us += shift_us;
                    report.bbr_events.push(e);
                }
            }
            ServerMsg::QuicConnectionEnd { flow, final_quic } => {
                match &final_quic {
                    Some(q) => bounds.sample(flow, q.t_us, q.rtt_us)?,
                    None => bounds.at(flow, 0)?,
                }
                if std::mem::replace(&mut ended, true) {
                    return Err(RemoteError::Protocol("the server ended the test's connection twice".into()));
                }
                report.final_quic = final_quic.map(|mut q| {
                    q.t_us += shift_us;
                    *q
                });
            }
            ServerMsg::HttpDone { errors, error_messages, dropped_samples } => {
                dropped.fetch_add(dropped_samples, Ordering::Relaxed);
                bounds.keep(error_messages.iter().take(crate::client_http::MAX_ERROR_MESSAGES).map(String::len).sum())?;
                report.errors = errors;
                report.error_messages = error_messages.iter().take(crate::client_http::MAX_ERROR_MESSAGES).map(|m| crate::client::term_safe(m)).collect();
                return Ok(report);
            }
            ServerMsg::Error { message } => return Err(RemoteError::server_said(&message)),
            other => return Err(unexpected(&other)),
        }
    }
}

/// The server's messages of a QUIC test until its `QuicDone`, samples into `series` on this
/// end's clock; what the server's end saw.
pub(crate) fn receive_quic(
    control: &Channel,
    mut bounds: Bounds,
    mut far: FarTime<'_>,
    series: &dyn SeriesSink,
    dropped: &AtomicU64,
) -> Result<QuicEnd, RemoteError> {
    let mut connections: Vec<QuicConnEnd> = Vec::new();
    let mut events = 0usize;
    // Flows whose connection's end has come: each comes once.
    let mut ended: Vec<u32> = Vec::new();
    let mut flow_ends: Vec<FlowEnd> = Vec::new();
    loop {
        match bounds.next(control)? {
            ServerMsg::QuicSample { flow, mut sample } => {
                bounds.sample(flow, sample.t_us, sample.rtt_us)?;
                sample.t_us += far.shift_us();
                series.quic_sample(SocketId::Flow(flow), &sample);
            }
            ServerMsg::Received { flow, mut point } => {
                bounds.at(flow, point.t_us)?;
                point.t_us += far.shift_us();
                series.received(flow, &point);
            }
            ServerMsg::BbrEvents { flow, events: chunk } => {
                events += chunk.len();
                if events > MAX_BBR_EVENTS {
                    return Err(RemoteError::Protocol(format!("the server sent over {MAX_BBR_EVENTS} BBR state changes for one test")));
                }
                for e in &chunk {
                    bounds.at(flow, e.t_us)?;
                    bounds.keep(std::mem::size_of::<BbrEvent>() + e.from.len() + e.to.len())?;
                }
                let conn = match connections.iter_mut().position(|e| e.flow == flow) {
                    Some(i) => &mut connections[i],
                    None => {
                        connections.push(QuicConnEnd { flow, ..QuicConnEnd::default() });
                        connections.last_mut().expect("just pushed")
                    }
                };
                let shift_us = far.shift_us();
                conn.bbr_events.extend(chunk.into_iter().map(|mut e| {
                    e.t_us += shift_us;
                    e
                }));
            }
            ServerMsg::QuicConnectionEnd { flow, final_quic } => {
                if let Some(q) = &final_quic {
                    bounds.sample(flow, q.t_us, q.rtt_us)?;
                } else {
                    bounds.at(flow, 0)?;
                }
                let shift_us = far.shift_us();
                let final_quic = final_quic.map(|mut s| {
                    s.t_us += shift_us;
                    *s
                });
                bounds.keep(std::mem::size_of::<QuicConnEnd>() + std::mem::size_of::<QuicSample>())?;
                if ended.contains(&flow) {
                    return Err(RemoteError::Protocol(format!("the server ended the connection of flow {flow} twice")));
                }
                ended.push(flow);
                match connections.iter_mut().find(|e| e.flow == flow) {
                    Some(e) => e.final_quic = final_quic,
                    None => connections.push(QuicConnEnd { flow, final_quic, bbr_events: Vec::new() }),
                }
            }
            ServerMsg::QuicDone { ends, dropped_samples, more } => {
                flow_ends.extend(ends);
                bounds.ends(&flow_ends, false)?;
                if !more {
                    dropped.fetch_add(dropped_samples, Ordering::Relaxed);
                    return Ok(QuicEnd { flows: flow_ends, connections });
                }
            }
            ServerMsg::Error { message } => return Err(RemoteError::server_said(&message)),
            other => return Err(unexpected(&other)),
        }
    }
}
