//! The server side of the HTTP tests (objects, page, browser) in `ccbench serve`: checked
//! against the limits, then served by the workloads' own HTTP servers
//! (`ccbench_workload::serve_*_end`) on a data port of the test's own, behind the token gate
//! (`ccbench_workload::http_end`). A browser test over HTTP/2 is served over TLS with a
//! certificate made for the test, whose key's hash `Ready` carries.
//!
//! A test: `Run` → `Ready` (port, token) → `Start` → the client connects, each connection
//! starting with the token and its number → `Accepted` per connection and `ConnectionSample`s
//! of the server's sending sockets as they come → the client's `Stop` once its load is over
//! (or this server's deadline) → a `ConnectionEnd` per connection → `HttpDone`.

use crate::channel::Channel;
use std::net::{TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use ccbench_workload::{set_algorithm, Algorithm, ByteBudget, HttpEnd, HttpFar, Side, TOKEN_LEN};
use rand::RngCore;

use crate::proto::{hex, ServerMsg};
use crate::server::{read_start, read_stop, watch_client, Forward, Outcome, ServeConfig, Shared};

/// How long after this server's deadline the client's `Stop` may take.
pub(crate) const STOP_GRACE: Duration = Duration::from_secs(30);

/// Connections a test may open in all, reconnections included: twice the flow limit.
fn connection_cap(config: &ServeConfig) -> u32 {
    config.limits.max_flows.saturating_mul(2)
}

/// A listener for a test's data, on the address the client reached this server at, on a port
/// of its own, and the test's random token. With `cc` (the server sends), the algorithm is set
/// on the listener, so accepted sockets run it from their first segment, as in an emulated run
/// (it is set again and read back on each). Set only afterwards, a socket would keep the pacing
/// a default BBR switched on (the kernel does not switch it off when the algorithm changes).
pub(crate) fn data_port(control: &TcpStream, cc: Option<&Algorithm>) -> Result<(TcpListener, [u8; TOKEN_LEN]), String> {
    let listener = control.local_addr().and_then(|a| TcpListener::bind((a.ip(), 0))).map_err(|e| format!("opening a data port: {e}"))?;
    if let Some(cc) = cc {
        set_algorithm(&listener, cc, Side::Server).map_err(|e| format!("setting {cc} on the data port: {e}"))?;
    }
    let mut token = [0u8; TOKEN_LEN];
    rand::rngs::OsRng.fill_bytes(&mut token);
    Ok((listener, token))
}

/// The server's end of an HTTP test (objects, page, browser), from `Ready` to `HttpDone`.
pub(crate) fn run_http(channel: &Channel, test: &dyn HttpFar, shared: &Shared) -> Outcome {
    let limits = shared.config.limits;
    let control = channel.stream();
    let peer = match control.peer_addr() {
        Ok(a) => a.ip(),
        Err(e) => return Outcome::fatal(e.to_string()),
    };
    let (listener, token) = match data_port(control, test.server_cc()) {
        Ok(x) => x,
        Err(e) => return Outcome::fatal(e),
    };
    // HTTP/2 over TLS (the browser's): a certificate for the address the client reached.
    let cert = if test.tls() {
        match listener.local_addr().map_err(|e| e.to_string()).and_then(|a| ccbench_workload::certificate_for(a.ip(), &[b"h2"]).map_err(|e| e.to_string())) {
            Ok(cert) => Some(cert),
            Err(e) => return Outcome::fatal(format!("making the test's certificate: {e}")),
        }
    } else {
        None
    };
    let port = listener.local_addr().map(|a| a.port()).unwrap_or(0);
    let spki_sha256 = cert.as_ref().map(|c| hex(&c.spki_sha256));
    if let Err(e) = channel.send(&ServerMsg::Ready { port, token: hex(&token), spki_sha256 }) {
        return Outcome::fatal(e.to_string());
    }
    if let Err(e) = read_start(channel) {
        return Outcome::fatal(e);
    }
    let start = Instant::now();
    let max_duration = ccbench_model::units::wire_time::from_s_saturating(limits.max_duration_s);
    let until = start + test.timeout().min(max_duration).clamp(Duration::from_millis(1), Duration::from_secs(86_400));
    let budget = Arc::new(ByteBudget::new(limits.max_bytes, format!("stopped at this server's limit of {} bytes per test (--max-bytes)", limits.max_bytes)));
    let stop_by = until + STOP_GRACE;
    let (sink, rx) = Forward::queue();
    let done = AtomicBool::new(false);
    let ended = AtomicBool::new(false);
    let (report, written, stopped) = std::thread::scope(|s| {
        let writer = s.spawn(move || crate::server::write_results(channel, rx));
        // The client's `Stop` (or its silence, or garbage) ends the test.
        let stopper = s.spawn(|| {
            let got = read_stop(channel, stop_by);
            done.store(true, Ordering::SeqCst);
            got
        });
        // serve stopping, or the client gone, ends the test as its `Stop` would.
        s.spawn(|| watch_client(control, &shared.stop, &done, &ended));
        let end = HttpEnd {
            token,
            peer: Some(peer),
            max_connections: connection_cap(&shared.config),
            budget: budget.clone(),
            epoch: start,
            until,
            done: &done,
            series: &sink,
            events: &sink,
        };
        let report = test.serve(listener, &end, cert.as_ref());
        ended.store(true, Ordering::SeqCst);
        for conn in &report.connections {
            sink.send(ServerMsg::ConnectionEnd {
                conn: conn.conn,
                cc_read_back: conn.cc_read_back.clone(),
                final_tcp_info: conn.final_tcp_info.map(Box::new),
                served: conn.served,
            });
        }
        sink.send(ServerMsg::HttpDone { errors: report.errors, error_messages: report.error_messages.clone(), dropped_samples: sink.dropped() });
        drop(sink);
        let written = writer.join().unwrap_or_else(|_| Err("the results' writer panicked".into()));
        let stopped = stopper.join().unwrap_or_else(|_| Err("the stop reader panicked".into()));
        (report, written, stopped)
    });
    let fatal = match (written, stopped) {
        (Err(e), _) => Some(e),
        (Ok(()), Err(e)) => Some(e),
        (Ok(()), Ok(())) => None,
    };
    Outcome { bytes: limits.max_bytes - budget.remaining(), error: report.error_messages.first().cloned(), fatal }
}
