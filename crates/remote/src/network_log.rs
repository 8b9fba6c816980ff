//! One kind of recurring event on serve's log (handshakes evicted from the pre-authentication
//! pool, connections refused for a network's failed handshakes), summarised per source network
//! as [`crate::handshake_log`] does for failed handshakes: a crowd that renews its connections
//! evicts or is refused hundreds of times a second, and a line each would fill the disk.
//!
//! Per network ([`crate::preauth::Network`]: an IPv4 /24, an IPv6 /64), the first event of each
//! [`WINDOW`] is a line of its own and the rest are counted, told in one summary line when the
//! window ends (at the network's next event, or at [`NetworkLog::flush`]). Across all networks
//! at most [`LINES_PER_SECOND`] first lines a second are written; beyond, they are counted too.

use std::collections::HashMap;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use crate::preauth::Network;

pub const WINDOW: Duration = Duration::from_secs(10);
pub const LINES_PER_SECOND: u32 = 10;

#[derive(Default)]
struct State {
    /// Per network: when its window began and the events in it not written.
    networks: HashMap<Network, (Instant, u64)>,
    cap: LineCap,
}

/// The cap across networks, shared with [`crate::handshake_log`]: at most [`LINES_PER_SECOND`]
/// first lines a second; the rest are counted and told in one line once their second is over.
#[derive(Default)]
pub(crate) struct LineCap {
    second: Option<Instant>,
    lines_this_second: u32,
    unlogged: u64,
}

impl LineCap {
    /// Whether a first line may be written at `now`. When a new second begins, the count the
    /// last one held back goes to `told` first.
    pub(crate) fn admit(&mut self, now: Instant, told: impl FnOnce(u64)) -> bool {
        if self.second.is_none_or(|t| now.duration_since(t) >= Duration::from_secs(1)) {
            if self.unlogged > 0 {
                told(self.unlogged);
            }
            self.second = Some(now);
            self.lines_this_second = 0;
            self.unlogged = 0;
        }
        if self.lines_this_second >= LINES_PER_SECOND {
            self.unlogged += 1;
            return false;
        }
        self.lines_this_second += 1;
        true
    }

    /// Tells (once) what a second that has ended held back.
    pub(crate) fn flush(&mut self, now: Instant, told: impl FnOnce(u64)) {
        if self.unlogged > 0 && self.second.is_some_and(|t| now.duration_since(t) >= Duration::from_secs(1)) {
            told(self.unlogged);
            self.unlogged = 0;
        }
    }
}

pub struct NetworkLog {
    /// The events, as a summary counts them ("handshakes evicted").
    what: &'static str,
    state: Mutex<State>,
}

impl NetworkLog {
    pub fn new(what: &'static str) -> NetworkLog {
        NetworkLog { what, state: Mutex::new(State::default()) }
    }

    /// An event of `network`'s, told by `line` if it is the first of its window.
    pub fn event(&self, network: Network, line: &str, now: Instant, write: impl Fn(&str)) {
        let mut s = self.state.lock().unwrap_or_else(|p| p.into_inner());
        if let Some((began, n)) = s.networks.get_mut(&network) {
            if now.duration_since(*began) < WINDOW {
                *n += 1;
                return;
            }
            if *n > 0 {
                write(&self.summary(network, *n));
            }
        }
        s.networks.insert(network, (now, 0));
        if !s.cap.admit(now, |n| write(&self.unlogged(n))) {
            return;
        }
        write(&format!("{line} (further {} for {network} are summarised every {} s)", self.what, WINDOW.as_secs()));
    }

    /// Writes the summaries of the windows that have ended, and forgets quiet networks.
    pub fn flush(&self, now: Instant, write: impl Fn(&str)) {
        let mut s = self.state.lock().unwrap_or_else(|p| p.into_inner());
        s.cap.flush(now, |n| write(&self.unlogged(n)));
        s.networks.retain(|network, (began, n)| {
            if now.duration_since(*began) < WINDOW {
                return true;
            }
            if *n > 0 {
                write(&self.summary(*network, *n));
            }
            false
        });
    }

    fn summary(&self, network: Network, n: u64) -> String {
        format!("{network}: {n} more {} in {} s", self.what, WINDOW.as_secs())
    }

    fn unlogged(&self, n: u64) -> String {
        format!("{n} more {} not logged (over {LINES_PER_SECOND} lines a second)", self.what)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::cell::RefCell;

    fn network(s: &str) -> Network {
        Network::of(s.parse().unwrap())
    }

    /// 20 000 events in 20 s from two IPv4 /24s and one IPv6 /64, every address a new one: a
    /// first line and a summary per network per window, and every event told in one or the
    /// other.
    #[test]
    fn events_are_summarised_per_24_and_per_64() {
        let log = NetworkLog::new("handshakes evicted");
        let lines = RefCell::new(Vec::<String>::new());
        let t0 = Instant::now();
        let sources = ["10.0.1.{}", "10.0.2.{}", "2001:db8:0:7::{}"];
        for i in 0..20_000u32 {
            let ip = sources[i as usize % 3].replace("{}", &(i % 250 + 1).to_string());
            log.event(network(&ip), &format!("{ip}: evicted"), t0 + Duration::from_millis(u64::from(i)), |l| lines.borrow_mut().push(l.into()));
        }
        log.flush(t0 + Duration::from_secs(40), |l| lines.borrow_mut().push(l.into()));
        let lines = lines.into_inner();
        assert_eq!(lines.len(), 3 * 4, "{lines:#?}");
        for net in ["10.0.1.0/24", "10.0.2.0/24", "2001:db8:0:7::/64"] {
            let firsts = lines.iter().filter(|l| l.ends_with(&format!("further handshakes evicted for {net} are summarised every 10 s)"))).count();
            let summaries = lines.iter().filter(|l| l.starts_with(&format!("{net}: ")) && l.ends_with("more handshakes evicted in 10 s")).count();
            assert_eq!((firsts, summaries), (2, 2), "{net}: {lines:#?}");
        }
        let counted: u64 = lines.iter().filter_map(|l| l.split(": ").nth(1)?.split(' ').next()?.parse::<u64>().ok()).sum();
        assert_eq!(counted + 6, 20_000, "every event is told, in a line or a count: {lines:#?}");
    }

    /// Events from a thousand networks at once: at most 10 first lines a second, the rest
    /// counted and told when the second is over.
    #[test]
    fn first_lines_are_capped_across_networks() {
        let log = NetworkLog::new("connections refused");
        let lines = RefCell::new(Vec::<String>::new());
        let t0 = Instant::now();
        for i in 0..1000u32 {
            log.event(network(&format!("10.{}.{}.1", i / 256, i % 256)), "refused", t0, |l| lines.borrow_mut().push(l.into()));
        }
        log.flush(t0 + Duration::from_millis(500), |l| lines.borrow_mut().push(l.into()));
        assert_eq!(lines.borrow().len(), 10, "nothing more within the second");
        log.flush(t0 + Duration::from_secs(1), |l| lines.borrow_mut().push(l.into()));
        let lines = lines.into_inner();
        assert_eq!(lines.len(), 11, "{lines:#?}");
        assert_eq!(lines[10], "990 more connections refused not logged (over 10 lines a second)");
    }
}
