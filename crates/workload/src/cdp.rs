//! A small Chrome DevTools Protocol client over `--remote-debugging-pipe`: Chromium reads
//! commands from its descriptor 3 and writes responses and events to its descriptor 4, each a
//! JSON object ended by a NUL byte. A pipe needs no WebSocket, no debugging port and no
//! connection inside the client's namespace (which carries only the measured traffic).
//!
//! The browser workload needs six commands (create a tab, attach, enable page events, add a
//! script, navigate, evaluate) and one event (the load event): a few dozen lines. The CDP crates
//! (chromiumoxide, headless_chrome) generate types for the whole protocol, which costs
//! minutes of compile time, and they expect to launch the browser or reach it over a WebSocket.

use std::collections::VecDeque;
use std::os::fd::{FromRawFd, OwnedFd};

use serde_json::{json, Value};
use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt, BufReader};
use tokio::net::unix::pipe;

/// The largest message accepted from the browser; the evaluation result of a page of 10 000
/// objects is well under 10 MB.
pub(crate) const MAX_MESSAGE: usize = 64 << 20;

#[derive(Debug, thiserror::Error)]
pub(crate) enum CdpError {
    #[error("the browser closed its DevTools pipe (it exited)")]
    Closed,
    #[error("DevTools pipe: {0}")]
    Io(#[from] std::io::Error),
    #[error("a DevTools message from the browser is not valid: {0}")]
    Malformed(String),
    #[error("{method} failed: {message}")]
    Command { method: String, message: String },
}

/// One message from the browser.
#[derive(Debug, PartialEq)]
pub(crate) enum Message {
    /// The answer to command `id`: its result, or the browser's error message.
    Response {
        id: u64,
        result: Result<Value, String>,
    },
    Event {
        method: String,
        session_id: Option<String>,
        params: Value,
    },
}

/// Parses one message (without its NUL).
pub(crate) fn parse_message(bytes: &[u8]) -> Result<Message, CdpError> {
    let v: Value = serde_json::from_slice(bytes).map_err(|e| CdpError::Malformed(e.to_string()))?;
    let Value::Object(mut m) = v else { return Err(CdpError::Malformed("not a JSON object".into())) };
    if let Some(id) = m.get("id") {
        let id = id.as_u64().ok_or_else(|| CdpError::Malformed("an id that is not an unsigned integer".into()))?;
        if let Some(err) = m.remove("error") {
            let message = err.get("message").and_then(Value::as_str).map_or_else(|| err.to_string(), str::to_string);
            return Ok(Message::Response { id, result: Err(message) });
        }
        return Ok(Message::Response { id, result: Ok(m.remove("result").unwrap_or(Value::Null)) });
    }
    let method = match m.remove("method") {
        Some(Value::String(s)) => s,
        _ => return Err(CdpError::Malformed("neither an id nor a method".into())),
    };
    let session_id = match m.remove("sessionId") {
        Some(Value::String(s)) => Some(s),
        _ => None,
    };
    Ok(Message::Event { method, session_id, params: m.remove("params").unwrap_or(Value::Null) })
}

/// The client end of the pipe pair. Must be made on a tokio runtime.
pub(crate) struct Cdp {
    to_browser: pipe::Sender,
    from_browser: BufReader<pipe::Receiver>,
    next_id: u64,
    /// Events that arrived while a command waited for its answer.
    events: VecDeque<(String, Option<String>, Value)>,
}

impl Cdp {
    /// `to_browser` is the write end of the browser's fd 3, `from_browser` the read end of
    /// its fd 4.
    pub(crate) fn new(to_browser: OwnedFd, from_browser: OwnedFd) -> std::io::Result<Cdp> {
        Ok(Cdp {
            to_browser: pipe::Sender::from_owned_fd(to_browser)?,
            from_browser: BufReader::new(pipe::Receiver::from_owned_fd(from_browser)?),
            next_id: 0,
            events: VecDeque::new(),
        })
    }

    async fn read(&mut self) -> Result<Message, CdpError> {
        let mut buf = Vec::new();
        let n = (&mut self.from_browser).take(MAX_MESSAGE as u64 + 1).read_until(0, &mut buf).await?;
        if n == 0 {
            return Err(CdpError::Closed);
        }
        if buf.last() != Some(&0) {
            return Err(if n > MAX_MESSAGE { CdpError::Malformed(format!("a message over {MAX_MESSAGE} bytes")) } else { CdpError::Closed });
        }
        buf.pop();
        parse_message(&buf)
    }

    /// Sends `method` (to the page attached as `session`, or to the browser) and waits for its
    /// answer, keeping the events that arrive meanwhile.
    pub(crate) async fn call(&mut self, method: &str, params: Value, session: Option<&str>) -> Result<Value, CdpError> {
        self.next_id += 1;
        let id = self.next_id;
        let mut msg = json!({ "id": id, "method": method, "params": params });
        if let Some(s) = session {
            msg["sessionId"] = Value::String(s.to_string());
        }
        let mut bytes = serde_json::to_vec(&msg).map_err(|e| CdpError::Malformed(e.to_string()))?;
        bytes.push(0);
        self.to_browser.write_all(&bytes).await?;
        loop {
            match self.read().await? {
                Message::Response { id: got, result } if got == id => {
                    return result.map_err(|message| CdpError::Command { method: method.to_string(), message });
                }
                Message::Response { .. } => {}
                Message::Event { method, session_id, params } => self.events.push_back((method, session_id, params)),
            }
        }
    }

    /// Waits for event `method` from `session` (it may have arrived already).
    pub(crate) async fn event(&mut self, method: &str, session: &str) -> Result<Value, CdpError> {
        if let Some(i) = self.events.iter().position(|(m, s, _)| m == method && s.as_deref() == Some(session)) {
            return Ok(self.events.remove(i).map(|e| e.2).unwrap_or(Value::Null));
        }
        self.events.clear();
        loop {
            if let Message::Event { method: m, session_id, params } = self.read().await? {
                if m == method && session_id.as_deref() == Some(session) {
                    return Ok(params);
                }
            }
        }
    }
}

/// A pipe, both ends close-on-exec: `(read, write)`; the DevTools protocol runs over two of them.
pub(crate) fn cloexec_pipe() -> std::io::Result<(OwnedFd, OwnedFd)> {
    let mut fds = [0; 2];
    // SAFETY: pipe2 fills two descriptors that are then owned here alone.
    if unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) } != 0 {
        return Err(std::io::Error::last_os_error());
    }
    // SAFETY: as above.
    Ok(unsafe { (OwnedFd::from_raw_fd(fds[0]), OwnedFd::from_raw_fd(fds[1])) })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_responses_errors_and_events() {
        assert_eq!(parse_message(br#"{"id":3,"result":{"a":1}}"#).unwrap(), Message::Response { id: 3, result: Ok(json!({"a": 1})) });
        assert_eq!(
            parse_message(br#"{"id":4,"error":{"code":-32000,"message":"No target"}}"#).unwrap(),
            Message::Response { id: 4, result: Err("No target".into()) }
        );
        assert_eq!(
            parse_message(br#"{"method":"Page.loadEventFired","params":{"timestamp":1.5},"sessionId":"S"}"#).unwrap(),
            Message::Event { method: "Page.loadEventFired".into(), session_id: Some("S".into()), params: json!({"timestamp": 1.5}) }
        );
        for bad in [&b"[1]"[..], b"", b"{", b"{\"id\":-1}", b"{\"x\":1}", b"\xff"] {
            assert!(matches!(parse_message(bad), Err(CdpError::Malformed(_))), "{:?}", String::from_utf8_lossy(bad));
        }
    }

    #[test]
    fn a_call_waits_for_its_own_answer_and_keeps_events() {
        let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
        rt.block_on(async {
            let (to_browser, browser_reads) = pipe_pair();
            let (browser_writes, from_browser) = pipe_pair();
            let mut cdp = Cdp::new(to_browser, from_browser).unwrap();
            let browser = tokio::spawn(async move {
                let mut rd = BufReader::new(pipe::Receiver::from_owned_fd(browser_reads).unwrap());
                let mut wr = pipe::Sender::from_owned_fd(browser_writes).unwrap();
                let mut buf = Vec::new();
                rd.read_until(0, &mut buf).await.unwrap();
                let cmd: Value = serde_json::from_slice(&buf[..buf.len() - 1]).unwrap();
                assert_eq!(cmd["method"], "Page.navigate");
                assert_eq!(cmd["sessionId"], "S");
                let id = cmd["id"].as_u64().unwrap();
                let out = format!(
                    "{{\"method\":\"Page.loadEventFired\",\"sessionId\":\"S\",\"params\":{{}}}}\0{{\"id\":{},\"result\":{{}}}}\0{{\"id\":{id},\"result\":{{\"frameId\":\"F\"}}}}\0",
                    id + 100
                );
                wr.write_all(out.as_bytes()).await.unwrap();
            });
            let r = cdp.call("Page.navigate", json!({"url": "http://x/"}), Some("S")).await.unwrap();
            assert_eq!(r, json!({"frameId": "F"}));
            cdp.event("Page.loadEventFired", "S").await.unwrap();
            browser.await.unwrap();
            assert!(matches!(cdp.event("Page.loadEventFired", "S").await, Err(CdpError::Closed)));
        });
    }

    fn pipe_pair() -> (OwnedFd, OwnedFd) {
        let (r, w) = super::cloexec_pipe().unwrap();
        (w, r)
    }
}
