//! The server side of QUIC bulk and file tests in `ccbench serve`: an endpoint for the test
//! only, on a fresh UDP port with a certificate made for it (`ccbench_workload::QuicFarServer`),
//! that takes in exactly the test's connections, each presenting the token on its first
//! stream, and is closed after the test.
//!
//! A test: `Run` → `QuicReady` (port, token, certificate) → per connection, in order, the
//! client connects and presents the token and its number → `QuicConnected` (the server's
//! controller, read back) → `Start` → `QuicSample`s of the server's sending connections
//! (downloads) or `Received` points (uploads) as they are taken → per sending connection its
//! `BbrEvents` and `QuicConnectionEnd` → `QuicDone`.
//!
//! A request load over QUIC (objects, page; `ccbench_workload::QuicRequestServer`) is served
//! behind the same gate, answering from the workload's own store: `Run` → `QuicReady` →
//! `Start` → the one connection, presenting the token → `QuicConnected` → `QuicSample`s of
//! the server's end when it sends (as "flow" 0) → the client's `Stop` once its load is over
//! (or this server's deadline) → its `BbrEvents` and `QuicConnectionEnd` → `HttpDone`. The
//! messages are the QUIC bulk test's and the HTTP test's: nothing new to parse.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use ccbench_workload::{BulkSpec, ByteBudget, EndClock, QuicFarServer, QuicRequestServer, QuicRequests, Side, TOKEN_LEN};
use rand::RngCore;

use crate::channel::Channel;
use crate::proto::{hex, ServerMsg, MAX_EVENTS_PER_MESSAGE};
use crate::server::http::STOP_GRACE;
use crate::server::{read_start, read_stop, watch_client, Forward, Outcome, Shared, SETUP_TIMEOUT};

/// The server's end of a QUIC test, from `QuicReady` to `QuicDone`.
pub(crate) fn run_quic(channel: &Channel, spec: &BulkSpec, shared: &Shared) -> Outcome {
    let limits = shared.config.limits;
    let control = channel.stream();
    // A file that has not arrived by the server's --max-duration is given up, whatever the
    // client's timeout.
    let last_start = spec.plan().iter().map(|f| f.start_s).fold(0.0, f64::max);
    let spec = BulkSpec { timeout_s: spec.timeout_s.min((limits.max_duration_s - last_start).max(0.001)), ..spec.clone() };
    let (ip, peer) = match (control.local_addr(), control.peer_addr()) {
        (Ok(a), Ok(p)) => (a.ip(), p.ip()),
        (Err(e), _) | (_, Err(e)) => return Outcome::fatal(e.to_string()),
    };
    let mut server = match QuicFarServer::bind(ip, &spec) {
        Ok(s) => s.only_from(peer),
        Err(e) => return Outcome::fatal(format!("opening the QUIC endpoint: {e}")),
    };
    let mut token = [0u8; TOKEN_LEN];
    rand::rngs::OsRng.fill_bytes(&mut token);
    let ready = ServerMsg::QuicReady { port: server.port(), token: hex(&token), cert: hex(&server.cert_der()) };
    if let Err(e) = channel.send(&ready) {
        server.close();
        return Outcome::fatal(e.to_string());
    }
    for conn in 0..server.connections() as u32 {
        let sent = match server.accept_next(&token, SETUP_TIMEOUT) {
            Ok(read_back) => channel.send(&ServerMsg::QuicConnected { conn, read_back }).map_err(|e| e.to_string()),
            Err(e) => Err(e.to_string()),
        };
        if let Err(e) = sent {
            server.close();
            return Outcome::fatal(e);
        }
    }
    // As over TCP (`run_bulk`): a sender starts on `Start`, a receiver opens its window at its
    // first byte and takes `Start` off the control connection meanwhile.
    let sending = spec.direction.sender() == Side::Server;
    let start = Instant::now();
    let clock = if sending {
        if let Err(e) = read_start(channel) {
            server.close();
            return Outcome::fatal(e);
        }
        let start = Instant::now();
        EndClock::shared(start, start)
    } else {
        EndClock::at_first_byte(start, start, crate::client::one_way_estimate(control))
    };
    let budget = Arc::new(ByteBudget::new(limits.max_bytes, format!("stopped at this server's limit of {} bytes per test (--max-bytes)", limits.max_bytes)));
    let (sink, rx) = Forward::queue();
    let (test_stop, ended) = (AtomicBool::new(false), AtomicBool::new(false));
    let (written, end, start_error) = std::thread::scope(|s| {
        let start_reader = (!sending).then(|| s.spawn(|| read_start(channel)));
        // A QUIC test does not notice its client's death by itself (its packets go on into
        // nothing until its idle timeout): the control connection's end stops it.
        s.spawn(|| watch_client(control, &shared.stop, &test_stop, &ended));
        let writer = s.spawn(move || crate::server::write_results(channel, rx));
        let end = server.run(&clock, &test_stop, &sink, Some(budget.clone()));
        ended.store(true, Ordering::SeqCst);
        let start_error = start_reader.and_then(|h| h.join().unwrap_or_else(|_| Err("the start reader panicked".into())).err());
        for conn in &end.connections {
            for events in conn.bbr_events.chunks(MAX_EVENTS_PER_MESSAGE) {
                sink.send(ServerMsg::BbrEvents { flow: conn.flow, events: events.to_vec() });
            }
            sink.send(ServerMsg::QuicConnectionEnd { flow: conn.flow, final_quic: conn.final_quic.clone().map(Box::new) });
        }
        sink.done(end.flows.clone(), true);
        drop(sink);
        (writer.join().unwrap_or_else(|_| Err("the results' writer panicked".into())), end, start_error)
    });
    server.close();
    let error = start_error.or_else(|| end.flows.iter().find_map(|e| e.send_error.clone().or(e.receive_error.clone())));
    let fatal = if test_stop.load(Ordering::SeqCst) && !shared.stop.load(Ordering::SeqCst) {
        Some("the client went away during the test".to_string())
    } else {
        written.err()
    };
    let error = error.or_else(|| fatal.clone());
    Outcome { bytes: limits.max_bytes - budget.remaining(), error, fatal }
}

/// The server's end of a request load over QUIC (objects, page), from `QuicReady` to
/// `HttpDone`.
pub(crate) fn run_quic_requests(channel: &Channel, load: QuicRequests, shared: &Shared) -> Outcome {
    let limits = shared.config.limits;
    let control = channel.stream();
    let (ip, peer) = match (control.local_addr(), control.peer_addr()) {
        (Ok(a), Ok(p)) => (a.ip(), p.ip()),
        (Err(e), _) | (_, Err(e)) => return Outcome::fatal(e.to_string()),
    };
    let timeout = load.timeout;
    let mut server = match QuicRequestServer::bind(ip, load) {
        Ok(s) => s.only_from(peer),
        Err(e) => return Outcome::fatal(format!("opening the QUIC endpoint: {e}")),
    };
    let mut token = [0u8; TOKEN_LEN];
    rand::rngs::OsRng.fill_bytes(&mut token);
    let ready = ServerMsg::QuicReady { port: server.port(), token: hex(&token), cert: hex(&server.cert_der()) };
    if let Err(e) = channel.send(&ready).map_err(|e| e.to_string()).and_then(|()| read_start(channel)) {
        server.close();
        return Outcome::fatal(e);
    }
    // The far end's times count from `Start`, as an HTTP test's.
    let start = Instant::now();
    let max_duration = ccbench_model::units::wire_time::from_s_saturating(limits.max_duration_s);
    let until = start + timeout.min(max_duration).clamp(Duration::from_millis(1), Duration::from_secs(86_400));
    let accepted = match server.accept(&token, SETUP_TIMEOUT) {
        Ok(read_back) => channel.send(&ServerMsg::QuicConnected { conn: 0, read_back }).map_err(|e| e.to_string()),
        Err(e) => Err(e.to_string()),
    };
    if let Err(e) = accepted {
        server.close();
        return Outcome::fatal(e);
    }
    let budget = Arc::new(ByteBudget::new(limits.max_bytes, format!("stopped at this server's limit of {} bytes per test (--max-bytes)", limits.max_bytes)));
    let take = {
        let budget = budget.clone();
        Arc::new(move |n: u64| budget.take(n)) as Arc<dyn Fn(u64) -> bool + Send + Sync>
    };
    let (sink, rx) = Forward::queue();
    let (done, ended) = (AtomicBool::new(false), AtomicBool::new(false));
    let (report, written, stopped) = std::thread::scope(|s| {
        let writer = s.spawn(move || crate::server::write_results(channel, rx));
        // The client's `Stop` (or its silence, or garbage) ends the test.
        let stopper = s.spawn(|| {
            let got = read_stop(channel, until + STOP_GRACE);
            done.store(true, Ordering::SeqCst);
            got
        });
        // serve stopping, or the client gone, ends the test as its `Stop` would.
        s.spawn(|| watch_client(control, &shared.stop, &done, &ended));
        let report = server.serve(start, until, &done, &sink, take);
        ended.store(true, Ordering::SeqCst);
        for events in report.bbr_events.chunks(MAX_EVENTS_PER_MESSAGE) {
            sink.send(ServerMsg::BbrEvents { flow: 0, events: events.to_vec() });
        }
        sink.send(ServerMsg::QuicConnectionEnd { flow: 0, final_quic: report.final_quic.clone().map(Box::new) });
        sink.send(ServerMsg::HttpDone { errors: report.errors, error_messages: report.error_messages.clone(), dropped_samples: sink.dropped() });
        drop(sink);
        let written = writer.join().unwrap_or_else(|_| Err("the results' writer panicked".into()));
        let stopped = stopper.join().unwrap_or_else(|_| Err("the stop reader panicked".into()));
        (report, written, stopped)
    });
    server.close();
    let fatal = match (written, stopped) {
        (Err(e), _) => Some(e),
        (Ok(()), Err(e)) => Some(e),
        (Ok(()), Ok(())) => None,
    };
    Outcome { bytes: limits.max_bytes - budget.remaining(), error: report.error_messages.first().cloned(), fatal }
}
