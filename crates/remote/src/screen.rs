//! Every server message screened once, where the client takes it off the channel
//! ([`recv`]), before anything reads it: each string within a cap for its kind (a name, a
//! line of text, hex), each list within a cap, and every character that could act on a
//! terminal or a CSV reader (C0/C1 controls such as ESC, CR and LF; Unicode format characters
//! such as U+202E RIGHT-TO-LEFT OVERRIDE and U+200B; U+2028/U+2029) replaced by a visible
//! `\u{…}` escape. What the client prints or stores of a server's words (the `--cc` usage
//! error, result.json, runs.csv) therefore holds none of them: one filter, one place.
//!
//! A string over its cap ends the session with a line naming the message and the field: a
//! real server's names are short, and a long one is a server trying to make this end hold
//! what it sends.

use std::time::Instant;

use crate::channel::Channel;
use crate::proto::{FrameError, ServerMsg};

/// An algorithm, a BBR state, a version, an interface or qdisc name, a token, a key hash.
pub const MAX_NAME: usize = 128;
/// A reason, an error line, a kernel's version string.
pub const MAX_TEXT: usize = 1024;
/// A certificate in hex (twice the client's 16 KiB cap on the DER).
pub const MAX_HEX: usize = 32 * 1024;
/// Entries in a list (algorithms in `welcome`, read-backs in `connected`, error lines).
pub const MAX_LIST: usize = 1024;

/// Is `c` one that acts instead of showing: a control character (Cc), or a format (Cf), line
/// (Zl) or paragraph (Zp) separator. One table for serve's log and the client's screen:
/// [`crate::escape::hides_or_breaks`].
pub fn is_hidden(c: char) -> bool {
    crate::escape::hides_or_breaks(c)
}

/// `text` with every [`is_hidden`] character written as `\u{hex}` (and `\` itself as `\\`, so
/// that an escape cannot be forged): printable, one line, and still telling what was sent.
pub fn escape(text: &str) -> String {
    if !text.chars().any(|c| c == '\\' || is_hidden(c)) {
        return text.to_string();
    }
    let mut out = String::with_capacity(text.len() + 8);
    for c in text.chars() {
        match c {
            '\\' => out.push_str("\\\\"),
            c if is_hidden(c) => out.push_str(&format!("\\u{{{:x}}}", c as u32)),
            c => out.push(c),
        }
    }
    out
}

/// `text` with every [`is_hidden`] character written as `\u{hex}`, backslashes left alone: for
/// a file's cells (runs.csv), where text already escaped by [`escape`] must stay as it is.
pub fn escape_hidden(text: &str) -> String {
    if !text.chars().any(is_hidden) {
        return text.to_string();
    }
    text.chars().map(|c| if is_hidden(c) { format!("\\u{{{:x}}}", c as u32) } else { c.to_string() }).collect()
}

/// The next server message off `control`, all of it by `deadline`, screened.
pub fn recv(control: &Channel, deadline: Instant) -> Result<ServerMsg, FrameError> {
    let msg = control.recv_by::<ServerMsg>(deadline)?;
    screen(msg).map_err(FrameError::Malformed)
}

/// One message's strings checked against their caps and escaped; why not, in one line.
pub fn screen(mut msg: ServerMsg) -> Result<ServerMsg, String> {
    let kind = kind_of(&msg);
    let mut s = Screen { kind };
    match &mut msg {
        ServerMsg::Welcome { facts, limits: _ } => {
            s.name("ccbench_version", &mut facts.ccbench_version)?;
            s.opt(MAX_NAME, "kernel_release", &mut facts.kernel_release)?;
            s.opt(MAX_TEXT, "kernel_version", &mut facts.kernel_version)?;
            s.list(MAX_NAME, "congestion_controls", &mut facts.congestion_controls)?;
            s.opt(MAX_NAME, "default_congestion_control", &mut facts.default_congestion_control)?;
            s.opt(MAX_NAME, "default_qdisc", &mut facts.default_qdisc)?;
            s.opt(MAX_NAME, "serving_interface", &mut facts.serving_interface)?;
            s.opt(MAX_NAME, "serving_qdisc", &mut facts.serving_qdisc)?;
        }
        ServerMsg::Allowed | ServerMsg::ProbeDone { .. } => {}
        ServerMsg::Refused { reason } => s.text("reason", reason)?,
        ServerMsg::Error { message } => s.text("message", message)?,
        ServerMsg::ProbeReady { port: _, token, limits: _ } => s.name("token", token)?,
        ServerMsg::Ready { port: _, token, spki_sha256 } => {
            s.name("token", token)?;
            s.opt(MAX_NAME, "spki_sha256", spki_sha256)?;
        }
        ServerMsg::Connected { cc_read_back } => s.list(MAX_NAME, "cc_read_back", cc_read_back)?,
        ServerMsg::Sample { .. } | ServerMsg::Received { .. } | ServerMsg::ConnectionSample { .. } => {}
        ServerMsg::Done { ends, .. } | ServerMsg::QuicDone { ends, .. } => {
            s.count("ends", ends.len())?;
            for e in ends {
                s.opt(MAX_TEXT, "send_error", &mut e.send_error)?;
                s.opt(MAX_TEXT, "receive_error", &mut e.receive_error)?;
            }
        }
        ServerMsg::Accepted { conn: _, cc_read_back, mismatch } => {
            s.opt(MAX_NAME, "cc_read_back", cc_read_back)?;
            s.opt(MAX_NAME, "mismatch", mismatch)?;
        }
        ServerMsg::ConnectionEnd { cc_read_back, .. } => s.opt(MAX_NAME, "cc_read_back", cc_read_back)?,
        ServerMsg::HttpDone { error_messages, .. } => s.list(MAX_TEXT, "error_messages", error_messages)?,
        ServerMsg::QuicReady { port: _, token, cert } => {
            s.name("token", token)?;
            s.cap(MAX_HEX, "cert", cert)?;
        }
        ServerMsg::QuicConnected { conn: _, read_back } => s.name("read_back", read_back)?,
        ServerMsg::QuicSample { flow: _, sample } => s.quic(sample)?,
        ServerMsg::BbrEvents { flow: _, events } => {
            s.count("events", events.len())?;
            for e in events {
                s.name("from", &mut e.from)?;
                s.name("to", &mut e.to)?;
            }
        }
        ServerMsg::QuicConnectionEnd { flow: _, final_quic } => {
            if let Some(q) = final_quic {
                s.quic(q)?;
            }
        }
    }
    Ok(msg)
}

struct Screen {
    kind: &'static str,
}

impl Screen {
    fn cap(&mut self, max: usize, field: &str, value: &mut String) -> Result<(), String> {
        if value.len() > max {
            return Err(format!("the server's {} message has a {field} of {} bytes, over this client's limit of {max}", self.kind, value.len()));
        }
        *value = escape(value);
        Ok(())
    }

    fn name(&mut self, field: &str, value: &mut String) -> Result<(), String> {
        self.cap(MAX_NAME, field, value)
    }

    fn text(&mut self, field: &str, value: &mut String) -> Result<(), String> {
        self.cap(MAX_TEXT, field, value)
    }

    fn opt(&mut self, max: usize, field: &str, value: &mut Option<String>) -> Result<(), String> {
        value.as_mut().map_or(Ok(()), |v| self.cap(max, field, v))
    }

    fn count(&mut self, field: &str, n: usize) -> Result<(), String> {
        if n > MAX_LIST {
            return Err(format!("the server's {} message lists {n} {field}, over this client's limit of {MAX_LIST}", self.kind));
        }
        Ok(())
    }

    fn list(&mut self, max: usize, field: &str, values: &mut [String]) -> Result<(), String> {
        self.count(field, values.len())?;
        values.iter_mut().try_for_each(|v| self.cap(max, field, v))
    }

    fn quic(&mut self, sample: &mut ccbench_workload::QuicSample) -> Result<(), String> {
        if let Some(b) = sample.bbr.as_mut() {
            self.name("bbr.state", &mut b.state)?;
            self.opt(MAX_NAME, "bbr.phase", &mut b.phase)?;
        }
        Ok(())
    }
}

/// A message's name on the wire.
fn kind_of(msg: &ServerMsg) -> &'static str {
    match msg {
        ServerMsg::Welcome { .. } => "welcome",
        ServerMsg::Allowed => "allowed",
        ServerMsg::Refused { .. } => "refused",
        ServerMsg::Error { .. } => "error",
        ServerMsg::ProbeReady { .. } => "probe_ready",
        ServerMsg::ProbeDone { .. } => "probe_done",
        ServerMsg::Ready { .. } => "ready",
        ServerMsg::Connected { .. } => "connected",
        ServerMsg::Sample { .. } => "sample",
        ServerMsg::Received { .. } => "received",
        ServerMsg::Done { .. } => "done",
        ServerMsg::Accepted { .. } => "accepted",
        ServerMsg::ConnectionSample { .. } => "connection_sample",
        ServerMsg::ConnectionEnd { .. } => "connection_end",
        ServerMsg::HttpDone { .. } => "http_done",
        ServerMsg::QuicReady { .. } => "quic_ready",
        ServerMsg::QuicConnected { .. } => "quic_connected",
        ServerMsg::QuicSample { .. } => "quic_sample",
        ServerMsg::BbrEvents { .. } => "bbr_events",
        ServerMsg::QuicConnectionEnd { .. } => "quic_connection_end",
        ServerMsg::QuicDone { .. } => "quic_done",
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::proto::{Limits, ServerFacts};

    #[test]
    fn escapes_what_acts_on_a_terminal_and_keeps_the_rest() {
        assert_eq!(escape("cubic"), "cubic");
        assert_eq!(escape("bbr\u{1b}]0;pwned\u{7}"), "bbr\\u{1b}]0;pwned\\u{7}");
        assert_eq!(escape("a\r\nccbench: ok"), "a\\u{d}\\u{a}ccbench: ok");
        assert_eq!(escape("x\u{202e}y\u{200b}z\u{2028}\u{2029}"), "x\\u{202e}y\\u{200b}z\\u{2028}\\u{2029}");
        assert_eq!(escape("\u{9b}2J"), "\\u{9b}2J", "the one-byte CSI of C1");
        assert_eq!(escape("a\\u{1b}"), "a\\\\u{1b}", "a backslash is escaped, so an escape cannot be forged");
        assert_eq!(escape("vegas-é-日本"), "vegas-é-日本");
        assert_eq!(escape_hidden("a\\u{1b}\u{1b}\n"), "a\\u{1b}\\u{1b}\\u{a}", "escaped text stays, raw is escaped");
        for s in ["bbr\u{1b}[2J", "a\rb", "\u{202e}", "x\u{feff}"] {
            assert!(!escape(s).chars().any(is_hidden), "{s:?}");
        }
    }

    fn welcome(ccs: Vec<String>) -> ServerMsg {
        let facts = ServerFacts {
            ccbench_version: "0.1".into(),
            kernel_release: Some("6.1\u{1b}[2J".into()),
            kernel_version: None,
            congestion_controls: ccs,
            default_congestion_control: Some("cubic".into()),
            default_qdisc: None,
            serving_interface: None,
            serving_qdisc: None,
        };
        let limits = Limits { max_duration_s: 1.0, max_bytes: 1, max_clients: 1, max_tests_per_minute: 1, max_flows: 1, max_probe_rate_bps: 1 };
        ServerMsg::Welcome { facts, limits }
    }

    /// The `--cc` usage error prints the welcome's algorithms: they arrive escaped.
    #[test]
    fn a_welcome_arrives_escaped() {
        let msg = screen(welcome(vec!["cubic".into(), "\u{1b}]0;title\u{7}\u{1b}[2J\rccbench: all good".into()])).unwrap();
        let ServerMsg::Welcome { facts, .. } = msg else { panic!() };
        assert_eq!(facts.congestion_controls[1], "\\u{1b}]0;title\\u{7}\\u{1b}[2J\\u{d}ccbench: all good");
        assert_eq!(facts.kernel_release.as_deref(), Some("6.1\\u{1b}[2J"));
    }

    #[test]
    fn over_long_strings_and_lists_are_refused_by_name() {
        let e = screen(welcome(vec!["x".repeat(MAX_NAME + 1)])).unwrap_err();
        assert!(e.contains("welcome") && e.contains("congestion_controls") && e.contains("129 bytes"), "{e}");
        let e = screen(welcome(vec!["a".into(); MAX_LIST + 1])).unwrap_err();
        assert!(e.contains("lists 1025 congestion_controls"), "{e}");
        let events = vec![ccbench_workload::BbrEvent::new(1, "STARTUP", "D".repeat(60_000))];
        let e = screen(ServerMsg::BbrEvents { flow: 0, events }).unwrap_err();
        assert!(e.contains("bbr_events") && e.contains("to of 60000 bytes"), "{e}");
        let ok = screen(ServerMsg::Error { message: "m".repeat(MAX_TEXT) });
        assert!(ok.is_ok());
        assert!(screen(ServerMsg::Error { message: "m".repeat(MAX_TEXT + 1) }).is_err());
    }

    #[test]
    fn every_string_of_an_http_and_a_quic_end_is_escaped() {
        let msg = screen(ServerMsg::Accepted { conn: 0, cc_read_back: Some("bbr\n".into()), mismatch: Some("\u{1b}c".into()) }).unwrap();
        assert!(matches!(msg, ServerMsg::Accepted { cc_read_back: Some(c), mismatch: Some(m), .. } if c == "bbr\\u{a}" && m == "\\u{1b}c"));
        let msg = screen(ServerMsg::HttpDone { errors: 1, error_messages: vec!["a\r\nb".into()], dropped_samples: 0 }).unwrap();
        assert!(matches!(msg, ServerMsg::HttpDone { error_messages, .. } if error_messages == ["a\\u{d}\\u{a}b"]));
        let end = ccbench_workload::FlowEnd { id: 0, send_error: Some("e\u{1b}".into()), ..Default::default() };
        let msg = screen(ServerMsg::QuicDone { ends: vec![end], dropped_samples: 0, more: false }).unwrap();
        assert!(matches!(msg, ServerMsg::QuicDone { ends, .. } if ends[0].send_error.as_deref() == Some("e\\u{1b}")));
    }
}
