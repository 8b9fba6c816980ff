//! The server's end of a bulk test over kernel TCP: the test's data port, the gate its
//! connections pass (the control connection's address, the token and an unused flow number,
//! within [`HELLO_TIMEOUT`]), then bulk's own end (`ccbench_workload::run_end`) with the
//! server's samples forwarded as they are taken.

use std::io::{ErrorKind, Read};
use std::net::{IpAddr, SocketAddr, TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use ccbench_workload::{prepare_stream, run_end, Algorithm, BulkSpec, ByteBudget, EndClock, EndStream, NoMeasureHook, Side};

use super::{http, out_of_resources, watch_client, Forward, Outcome, Quiet, Shared, ACCEPT_BACKOFF, MAX_PENDING_DATA, SETUP_TIMEOUT};
use super::{kind_of, write_results, DATA_HELLO_LEN, HELLO_TIMEOUT, TOKEN_LEN};
use crate::channel::Channel;
use crate::proto::{hex, ClientMsg, ServerMsg};

/// The server's end of a bulk test, from `Ready` to `Done`.
pub(super) fn run_bulk(channel: &Channel, spec: &BulkSpec, shared: &Shared) -> Outcome {
    let limits = shared.config.limits;
    let control = channel.stream();
    let plan = spec.plan();
    let sending = spec.direction.sender() == Side::Server;
    // The data listener is on the address the client reached us at, on a port of its own; when
    // every flow the server sends runs one algorithm, it is set there already.
    let mut ccs: Vec<&Algorithm> = plan.iter().map(|f| &f.cc).collect();
    ccs.dedup();
    let listener_cc = (sending && ccs.len() == 1).then(|| ccs[0]);
    let (listener, token) = match http::data_port(control, listener_cc) {
        Ok(x) => x,
        Err(e) => return Outcome::fatal(e),
    };
    let port = listener.local_addr().map(|a| a.port()).unwrap_or(0);
    if let Err(e) = channel.send(&ServerMsg::Ready { port, token: hex(&token), spki_sha256: None }) {
        return Outcome::fatal(e.to_string());
    }
    let peer = match control.peer_addr() {
        Ok(a) => a.ip(),
        Err(e) => return Outcome::fatal(e.to_string()),
    };
    let streams = match accept_flows(&listener, peer, &token, plan.len()) {
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
    if let Err(e) = channel.send(&ServerMsg::Connected { cc_read_back }) {
        return Outcome::fatal(e.to_string());
    }
    // A sender starts on `Start`. A receiver reads from now on and opens its window at the
    // first byte, so that a `Start` delayed by loss does not shorten what it counts; it takes
    // `Start` off the control connection meanwhile.
    let start = Instant::now();
    let clock = if sending {
        if let Err(e) = read_start(channel) {
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
        streams.into_iter().zip(&plan).enumerate().map(|(id, (stream, f))| EndStream { id: id as u32, start: f.start(), stream, sends: sending }).collect();
    let budget = ByteBudget::new(limits.max_bytes, format!("stopped at this server's limit of {} bytes per test (--max-bytes)", limits.max_bytes));
    let (sink, rx) = Forward::queue();
    let (test_stop, ended) = (AtomicBool::new(false), AtomicBool::new(false));
    let (written, results, start_error) = std::thread::scope(|s| {
        let start_reader = (!sending).then(|| s.spawn(|| read_start(channel)));
        s.spawn(|| watch_client(control, &shared.stop, &test_stop, &ended));
        // Samples go out as they are taken; a client that stops reading only stalls this writer.
        let writer = s.spawn(move || write_results(channel, rx));
        let results = run_end(&spec, &ends, &clock, &test_stop, &sink, &NoMeasureHook, Some(&budget));
        ended.store(true, Ordering::SeqCst);
        let start_error = start_reader.and_then(|h| h.join().unwrap_or_else(|_| Err("the start reader panicked".into())).err());
        sink.done(results.clone(), false);
        drop(sink);
        (writer.join().unwrap_or_else(|_| Err("the results' writer panicked".into())), results, start_error)
    });
    let error = start_error.or_else(|| results.iter().find_map(|e| e.send_error.clone().or(e.receive_error.clone())));
    let fatal = if test_stop.load(Ordering::SeqCst) && !shared.stop.load(Ordering::SeqCst) {
        Some("the client went away during the test".to_string())
    } else {
        written.err()
    };
    let error = error.or_else(|| fatal.clone());
    let bytes = limits.max_bytes - budget.remaining();
    Outcome { bytes, error, fatal }
}

/// Reads the client's `Start` off the control connection, within [`SETUP_TIMEOUT`].
pub(crate) fn read_start(channel: &Channel) -> Result<(), String> {
    match channel.recv_by::<ClientMsg>(Instant::now() + SETUP_TIMEOUT) {
        Ok(ClientMsg::Start) => Ok(()),
        Ok(other) => Err(format!("expected start, got a {} message", kind_of(&other))),
        Err(e) => Err(format!("waiting for start: {e}")),
    }
}

/// Reads the client's `Stop`, the end of an HTTP or QUIC request test, by `by`.
pub(crate) fn read_stop(channel: &Channel, by: Instant) -> Result<(), String> {
    match channel.recv_by::<ClientMsg>(by) {
        Ok(ClientMsg::Stop) => Ok(()),
        Ok(other) => Err(format!("expected stop, got a {} message", kind_of(&other))),
        Err(e) => Err(format!("waiting for stop: {e}")),
    }
}

/// A data connection that has yet to present its token.
struct Pending {
    stream: TcpStream,
    from: SocketAddr,
    hello: [u8; DATA_HELLO_LEN],
    got: usize,
    until: Instant,
}

/// Accepts the test's `n` data connections: each must come from `peer` (the control
/// connection's address), present the token and a flow id not yet seen within
/// [`HELLO_TIMEOUT`]; any other is closed without a byte sent to it. Connections present their
/// tokens concurrently: an outsider's silent connections cost only their own time, not the
/// test's.
pub(super) fn accept_flows(listener: &TcpListener, peer: IpAddr, token: &[u8; TOKEN_LEN], n: usize) -> Result<Vec<TcpStream>, String> {
    listener.set_nonblocking(true).map_err(|e| e.to_string())?;
    let deadline = Instant::now() + SETUP_TIMEOUT;
    let mut slots: Vec<Option<TcpStream>> = (0..n).map(|_| None).collect();
    let mut pending: Vec<Pending> = Vec::new();
    // Every close is on serve's log with its reason, at most a line a second.
    let mut closes = Quiet::new();
    let mut closed = |from: SocketAddr, why: String| closes.log(&format!("data port: closed before admission: a connection from {from}: {why}"));
    while slots.iter().any(Option::is_none) {
        let now = Instant::now();
        if now > deadline {
            return Err(format!("only {} of the test's {n} data connections arrived", slots.iter().filter(|s| s.is_some()).count()));
        }
        let mut busy = false;
        match listener.accept() {
            Ok((_, from)) if from.ip() != peer => {
                closed(from, format!("not the control connection's address {peer}"));
                busy = true;
            }
            Ok((stream, from)) => {
                // A full pool makes room instead of refusing: the connection that has waited
                // longest goes. Silent connections from the client's own address (another
                // user of its host) could otherwise keep its flows out for good; the client's
                // own hello comes within a round trip of its connection, before 64 more.
                if pending.len() >= MAX_PENDING_DATA {
                    let oldest = pending.remove(0);
                    closed(oldest.from, format!("{MAX_PENDING_DATA} connections wait for their hello; the longest waiting made room for one from {from}"));
                }
                match stream.set_nonblocking(true) {
                    Ok(()) => pending.push(Pending { stream, from, hello: [0; DATA_HELLO_LEN], got: 0, until: now + HELLO_TIMEOUT }),
                    Err(e) => closed(from, e.to_string()),
                }
                busy = true;
            }
            Err(e) if e.kind() == ErrorKind::WouldBlock => {}
            Err(e) if out_of_resources(&e) => std::thread::sleep(ACCEPT_BACKOFF.0),
            Err(e) => return Err(format!("accepting a data connection: {e}")),
        }
        pending.retain_mut(|p| {
            if p.got == DATA_HELLO_LEN {
                return true;
            }
            match (&p.stream).read(&mut p.hello[p.got..]) {
                Ok(0) => {
                    closed(p.from, format!("it closed after {} of its hello's {DATA_HELLO_LEN} bytes", p.got));
                    return false;
                }
                Ok(k) => {
                    p.got += k;
                    busy = true;
                }
                Err(e) if e.kind() == ErrorKind::WouldBlock => {}
                Err(e) => {
                    closed(p.from, format!("reading its hello: {e}"));
                    return false;
                }
            }
            let keep = p.got == DATA_HELLO_LEN || now < p.until;
            if !keep {
                closed(p.from, format!("no hello within {} s ({} of its {DATA_HELLO_LEN} bytes)", HELLO_TIMEOUT.as_secs_f64(), p.got));
            }
            keep
        });
        // `retain_mut` kept those still reading; the complete ones are picked out here.
        for p in std::mem::take(&mut pending) {
            if p.got < DATA_HELLO_LEN {
                pending.push(p);
                continue;
            }
            if !same(&p.hello[..TOKEN_LEN], token) {
                closed(p.from, "a wrong token".into());
                continue;
            }
            let id = ccbench_workload::hello_id(&p.hello);
            match slots.get_mut(id as usize) {
                Some(slot @ None) => match p.stream.set_nonblocking(false) {
                    Ok(()) => *slot = Some(p.stream),
                    Err(e) => closed(p.from, e.to_string()),
                },
                _ => closed(p.from, format!("flow {id}: a number used twice, or not one of the test's {n} flows")),
            }
        }
        if !busy {
            std::thread::sleep(Duration::from_millis(2));
        }
    }
    Ok(slots.into_iter().flatten().collect())
}

/// Compares without an early exit, so the time taken says nothing of where they differ.
fn same(a: &[u8], b: &[u8]) -> bool {
    a.len() == b.len() && a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}
