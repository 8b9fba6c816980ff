//! Failed handshakes on serve's log, without letting a peer fill the disk (the audit: one
//! attacker's failures logged unthrottled, each echoing up to 1 KiB of its bytes, at 953 KiB/s).
//!
//! Per source network, the first failure of each [`PER_NETWORK`] window is a line of its own;
//! the rest are counted, by kind, and told in one summary line when the window ends. Across all
//! networks at most [`LINES_PER_SECOND`] first lines a second are written; beyond, they too are
//! only counted. A peer's words (serde quotes its bytes) are cut to [`PEER_TEXT`] characters.

use std::collections::HashMap;
use std::net::SocketAddr;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use crate::network_log::LineCap;
use crate::penalty::Failure;
use crate::preauth::Network;

pub const PER_NETWORK: Duration = Duration::from_secs(10);
pub use crate::network_log::LINES_PER_SECOND;
pub const PEER_TEXT: usize = 80;

#[derive(Default)]
struct Window {
    began: Option<Instant>,
    wrong_secret: u64,
    other: u64,
}

#[derive(Default)]
struct State {
    networks: HashMap<Network, Window>,
    cap: LineCap,
}

/// The line told for first lines the cap held back.
fn unlogged(n: u64) -> String {
    format!("{n} more failed handshakes not logged (over {LINES_PER_SECOND} lines a second)")
}

#[derive(Default)]
pub struct HandshakeLog {
    state: Mutex<State>,
}

impl HandshakeLog {
    /// A failed handshake from `peer`: logs it, counts it, or both, through `write`.
    pub fn failed(&self, peer: SocketAddr, network: Network, failure: Failure, why: &str, now: Instant, write: impl Fn(&str)) {
        let mut s = self.state.lock().unwrap_or_else(|p| p.into_inner());
        let w = s.networks.entry(network).or_default();
        if w.began.is_some_and(|b| now.duration_since(b) < PER_NETWORK) {
            match failure {
                Failure::WrongSecret => w.wrong_secret += 1,
                Failure::Other => w.other += 1,
            }
            return;
        }
        if let Some(line) = summary(network, w) {
            write(&line);
        }
        *w = Window { began: Some(now), ..Window::default() };
        if !s.cap.admit(now, |n| write(&unlogged(n))) {
            return;
        }
        let why = crate::escape::truncate(&crate::escape::escape(why), PEER_TEXT);
        write(&format!("{peer}: {why} (further failures from {network} are summarised every {} s)", PER_NETWORK.as_secs()));
    }

    /// Writes the summaries of the windows that have ended, and forgets quiet networks.
    pub fn flush(&self, now: Instant, write: impl Fn(&str)) {
        let mut s = self.state.lock().unwrap_or_else(|p| p.into_inner());
        s.cap.flush(now, |n| write(&unlogged(n)));
        s.networks.retain(|network, w| {
            if w.began.is_some_and(|b| now.duration_since(b) < PER_NETWORK) {
                return true;
            }
            if let Some(line) = summary(*network, w) {
                write(&line);
            }
            false
        });
    }
}

fn summary(network: Network, w: &Window) -> Option<String> {
    let n = w.wrong_secret + w.other;
    (n > 0).then(|| {
        format!(
            "{network}: {n} more failed handshakes in {} s ({} with a wrong secret, {} malformed, silent or closed)",
            PER_NETWORK.as_secs(),
            w.wrong_secret,
            w.other
        )
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::cell::RefCell;

    /// 10 000 failures from 8 networks in 20 s, each with 1 KiB of a peer's text: a first line
    /// per network per window and one summary, each line short.
    #[test]
    fn a_flood_is_summarised_per_network_and_peer_text_is_cut() {
        let log = HandshakeLog::default();
        let lines = RefCell::new(Vec::<String>::new());
        let t0 = Instant::now();
        let junk = format!("handshake: unknown variant `{}\u{2028}`", "A".repeat(1024));
        for i in 0..10_000u32 {
            let now = t0 + Duration::from_millis(u64::from(i) * 2);
            let peer: SocketAddr = format!("10.0.{}.{}:{}", i % 8, i % 200, 1000 + i % 60000).parse().unwrap();
            let failure = if i % 3 == 0 { Failure::WrongSecret } else { Failure::Other };
            log.failed(peer, Network::of(peer.ip()), failure, &junk, now, |l| lines.borrow_mut().push(l.to_string()));
        }
        log.flush(t0 + Duration::from_secs(40), |l| lines.borrow_mut().push(l.to_string()));
        let lines = lines.into_inner();
        // 20 s is two windows per network: 2 first lines and 2 summaries each.
        assert_eq!(lines.len(), 8 * 4, "{lines:#?}");
        assert!(lines.iter().all(|l| l.len() < 220), "{lines:#?}");
        assert!(lines.iter().all(|l| !l.contains('\u{2028}')));
        let counted: u64 = lines.iter().filter_map(|l| l.split(": ").nth(1)?.split(' ').next()?.parse::<u64>().ok()).sum();
        assert_eq!(counted + 16, 10_000, "every failure is told, in a line or a count");
    }

    /// Many networks at once: at most 10 first lines a second, the rest counted.
    #[test]
    fn first_lines_are_capped_across_networks() {
        let log = HandshakeLog::default();
        let lines = RefCell::new(Vec::<String>::new());
        let t0 = Instant::now();
        for i in 0..1000u32 {
            let peer: SocketAddr = format!("10.{}.{}.1:1", i / 256, i % 256).parse().unwrap();
            log.failed(peer, Network::of(peer.ip()), Failure::Other, "x", t0, |l| lines.borrow_mut().push(l.to_string()));
        }
        let peer: SocketAddr = "192.0.2.1:1".parse().unwrap();
        log.failed(peer, Network::of(peer.ip()), Failure::Other, "x", t0 + Duration::from_secs(1), |l| lines.borrow_mut().push(l.to_string()));
        let lines = lines.into_inner();
        assert_eq!(lines.len(), 12, "{lines:#?}");
        assert!(lines[10].starts_with("990 more failed handshakes not logged"), "{}", lines[10]);
    }
}
