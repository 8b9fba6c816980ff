//! The transport as a parameter of a request load's ends: a [`Lane`] carries one request at a
//! time to the server and its answer back, over kernel TCP (a keep-alive HTTP/1.1 connection,
//! [`Http1Lane`], or one request's handle on a multiplexed HTTP/2 connection, [`Http2Lane`]) or
//! over QUIC (a bidirectional stream per request on one connection,
//! `quic::streams::StreamLane`). A workload writes its load once against `Lane`; which
//! transport runs under it is the algorithm's (`tcp:` or `quic:`).
//!
//! # What the two transports' ends share, and where they truly differ
//! Shared, written once in the workload's module: the load itself (which requests, how many at
//! once, when a worker stops), its log of requests and their timings, the checks of what came
//! back, and the result with its figures (`objects::summarize`, `page::summarize`) and the one
//! [`crate::SenderRecord`] per sending connection.
//!
//! Where they differ, kept behind the transport:
//! * **How a request travels.** HTTP/1.1 over a TCP connection, one request at a time per
//!   connection (hyper), or HTTP/2 (h2c), many at once on one connection; over QUIC, a request line and body on a stream of its own
//!   (`quic::wire`), answered by the body or a status line. [`Lane::exchange`] hides this.
//! * **Connections.** TCP opens one connection per worker, each with the algorithm set and
//!   read back on its sending socket, and a worker whose connection broke opens another; QUIC
//!   has one connection (both ends' controllers read back) with the workers' requests as
//!   concurrent streams, and no second connection once it is lost.
//! * **Sampling the sender.** `TCP_INFO` of each sending socket (`sampler`, one thread for
//!   all) against the QUIC controller's state read through our observer (`quic::pair`): each
//!   becomes the same `SenderRecord`, with `final_tcp_info` or `final_quic`.
//! * **The server.** hyper's HTTP/1.1 server on an accept loop (`harness`) against a server
//!   answering every stream of the one connection (`quic::streams::serve`).

use hyper::client::conn::http1::SendRequest;
use hyper::{Method, Request, StatusCode};

use crate::common::{self, PatternBody};

/// One request as the request loads make it.
#[derive(Clone, Copy, Debug)]
pub(crate) enum Ask<'a> {
    /// Fetch what `path` names.
    Get(&'a str),
    /// Send `len` bytes to `path`.
    Put(&'a str, u64),
}

/// A way to the server for one request at a time.
pub(crate) trait Lane {
    /// Sends `ask` and reads its answer to the end: the body bytes that came back (none for a
    /// PUT), or why it failed (including the server's refusal). `on_begin` is called when the
    /// answer begins, the instant a page's resource timing calls its TTFB: over HTTP when the
    /// response head has arrived, over a QUIC stream, which has no head, when its first byte
    /// has.
    async fn exchange(&mut self, ask: Ask<'_>, on_begin: &mut dyn FnMut()) -> Result<u64, String>;
}

/// A request as hyper takes it: `uri` is the path (HTTP/1.1, with `host` in a `Host` header) or
/// the absolute URI (HTTP/2, where it becomes `:scheme` and `:authority`).
fn request(ask: Ask<'_>, uri: String, host: Option<&str>) -> Result<(Request<PatternBody>, StatusCode), String> {
    let (method, body_bytes, expect) = match ask {
        Ask::Put(_, len) => (Method::PUT, len, StatusCode::NO_CONTENT),
        Ask::Get(_) => (Method::GET, 0, StatusCode::OK),
    };
    let mut req = Request::builder().method(method).uri(uri);
    if let Some(host) = host {
        req = req.header(hyper::header::HOST, host);
    }
    Ok((req.body(PatternBody::new(body_bytes)).map_err(|e| format!("building the request: {e}"))?, expect))
}

/// Reads a response to its end: the body bytes, or the refusal when its status is not `expect`.
async fn answer(resp: hyper::Response<hyper::body::Incoming>, expect: StatusCode, on_begin: &mut dyn FnMut()) -> Result<u64, String> {
    on_begin();
    let status = resp.status();
    let got = common::drain_body_within(resp.into_body(), None).await.map_err(|e| format!("reading the response: {e}"))?;
    if status != expect {
        return Err(format!("status {status}, expected {expect}"));
    }
    Ok(got)
}

fn path(ask: Ask<'_>) -> &str {
    match ask {
        Ask::Get(path) | Ask::Put(path, _) => path,
    }
}

/// A keep-alive HTTP/1.1 connection over kernel TCP.
pub(crate) struct Http1Lane {
    pub sender: SendRequest<PatternBody>,
    /// The `Host` header (the server's address).
    pub host: String,
}

impl Lane for Http1Lane {
    async fn exchange(&mut self, ask: Ask<'_>, on_begin: &mut dyn FnMut()) -> Result<u64, String> {
        let (req, expect) = request(ask, path(ask).to_string(), Some(&self.host))?;
        self.sender.ready().await.map_err(|e| format!("connection not ready: {e}"))?;
        let resp = self.sender.send_request(req).await.map_err(|e| format!("sending: {e}"))?;
        answer(resp, expect, on_begin).await
    }
}

/// One request's handle on an HTTP/2 connection over kernel TCP (h2c with prior knowledge):
/// a clone per request in flight, so that requests on one connection travel side by side as
/// streams of it.
#[derive(Clone)]
pub(crate) struct Http2Lane {
    pub sender: hyper::client::conn::http2::SendRequest<PatternBody>,
    /// The server's address, the absolute URI's authority.
    pub host: String,
}

impl Lane for Http2Lane {
    async fn exchange(&mut self, ask: Ask<'_>, on_begin: &mut dyn FnMut()) -> Result<u64, String> {
        let (req, expect) = request(ask, format!("http://{}{}", self.host, path(ask)), None)?;
        self.sender.ready().await.map_err(|e| format!("connection not ready: {e}"))?;
        let resp = self.sender.send_request(req).await.map_err(|e| format!("sending: {e}"))?;
        answer(resp, expect, on_begin).await
    }
}
