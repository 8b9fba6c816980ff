//! Failed handshakes cost their source network time, as OpenSSH's PerSourcePenalties do
//! (sshd_config(5), OpenSSH 9.8): each failure adds to the network's penalty, which runs down
//! in real time; while it exceeds [`BLOCK_ABOVE`] the network's new connections are refused
//! at once, before any key exchange. An honest client with a wrong secret sees its first few
//! tries answered and then one line saying how long to wait; an online guesser from one
//! network is held to one guess per [`WRONG_SECRET`].
//!
//! A global budget caps what many networks achieve together: beyond [`GLOBAL_FAILURES`] in
//! [`GLOBAL_WINDOW`], every network with any penalty left is refused, not only those over the
//! threshold. Networks with no failures (honest clients) are never refused by it, so it cannot
//! be used to lock them out.

use std::collections::{HashMap, VecDeque};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use crate::preauth::Network;

/// Added per failure: a wrong secret (a guess), and anything else (malformed, silent, closed).
pub const WRONG_SECRET: Duration = Duration::from_secs(5);
pub const OTHER_FAILURE: Duration = Duration::from_secs(1);
/// A network is refused while its penalty runs beyond this (OpenSSH's `min`: 15 s).
pub const BLOCK_ABOVE: Duration = Duration::from_secs(15);
/// No penalty lasts longer (OpenSSH's `max`: 600 s).
pub const MAX_PENALTY: Duration = Duration::from_secs(600);
/// The global budget: failures from all networks within the window.
pub const GLOBAL_FAILURES: usize = 100;
pub const GLOBAL_WINDOW: Duration = Duration::from_secs(10);
/// Networks remembered at most; past it, the ones whose penalty ran out are forgotten first
/// (a flood from new networks must not grow serve without bound).
const MAX_NETWORKS: usize = 65_536;

#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Failure {
    WrongSecret,
    Other,
}

#[derive(Default)]
struct State {
    /// When each network's penalty runs out.
    until: HashMap<Network, Instant>,
    /// The global window's failures.
    recent: VecDeque<Instant>,
}

#[derive(Default)]
pub struct Penalties {
    state: Mutex<State>,
}

impl Penalties {
    /// `Err(wait)` if connections from `network` are refused now, for about `wait` more.
    pub fn check(&self, network: Network, now: Instant) -> Result<(), Duration> {
        let mut s = self.state.lock().unwrap_or_else(|p| p.into_inner());
        while s.recent.front().is_some_and(|&t| now.duration_since(t) > GLOBAL_WINDOW) {
            s.recent.pop_front();
        }
        let left = s.until.get(&network).map(|&u| u.saturating_duration_since(now)).unwrap_or_default();
        if left > BLOCK_ABOVE {
            return Err(left - BLOCK_ABOVE);
        }
        if s.recent.len() >= GLOBAL_FAILURES && !left.is_zero() {
            return Err(left);
        }
        Ok(())
    }

    /// A failed handshake from `network`.
    pub fn failed(&self, network: Network, failure: Failure, now: Instant) {
        let mut s = self.state.lock().unwrap_or_else(|p| p.into_inner());
        let cost = match failure {
            Failure::WrongSecret => WRONG_SECRET,
            Failure::Other => OTHER_FAILURE,
        };
        if s.until.len() >= MAX_NETWORKS && !s.until.contains_key(&network) {
            s.until.retain(|_, u| *u > now);
            if s.until.len() >= MAX_NETWORKS {
                // All still penalised: forget the one nearest its end.
                if let Some(k) = s.until.iter().min_by_key(|(_, u)| **u).map(|(k, _)| *k) {
                    s.until.remove(&k);
                }
            }
        }
        let until = s.until.entry(network).or_insert(now);
        *until = ((*until).max(now) + cost).min(now + MAX_PENALTY);
        s.recent.push_back(now);
        if s.recent.len() > 4 * GLOBAL_FAILURES {
            s.recent.pop_front();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn net(s: &str) -> Network {
        Network::of(s.parse().unwrap())
    }

    /// Three wrong secrets in a row are answered; the fourth pushes the penalty past 15 s and
    /// the network is refused until it runs back down; another network is untouched.
    #[test]
    fn a_network_that_keeps_failing_is_refused_until_its_penalty_runs_down() {
        let p = Penalties::default();
        let t0 = Instant::now();
        let guesser = net("198.51.100.7");
        for _ in 0..3 {
            assert_eq!(p.check(guesser, t0), Ok(()));
            p.failed(guesser, Failure::WrongSecret, t0);
        }
        assert_eq!(p.check(guesser, t0), Ok(()), "15 s is not over 15 s");
        p.failed(guesser, Failure::WrongSecret, t0);
        assert_eq!(p.check(guesser, t0), Err(Duration::from_secs(5)));
        assert_eq!(p.check(net("198.51.100.200"), t0), Err(Duration::from_secs(5)), "the same /24");
        assert_eq!(p.check(net("203.0.113.1"), t0), Ok(()));
        assert_eq!(p.check(guesser, t0 + Duration::from_secs(5)), Ok(()));
        // Capped: a thousand failures block for at most 600 s.
        for _ in 0..1000 {
            p.failed(guesser, Failure::Other, t0);
        }
        assert!(p.check(guesser, t0 + MAX_PENALTY - BLOCK_ABOVE).is_ok());
    }

    /// Past the global budget, any network with a penalty is refused; one without is not.
    #[test]
    fn the_global_budget_refuses_penalised_networks_only() {
        let p = Penalties::default();
        let t0 = Instant::now();
        for i in 0..GLOBAL_FAILURES {
            p.failed(net(&format!("10.{}.{}.1", i / 256, i % 256)), Failure::WrongSecret, t0);
        }
        assert!(p.check(net("10.0.1.1"), t0).is_err(), "one failure, but over the global budget");
        assert_eq!(p.check(net("192.0.2.1"), t0), Ok(()), "no failures: never refused");
        let later = t0 + GLOBAL_WINDOW + Duration::from_secs(1);
        assert_eq!(p.check(net("10.0.1.1"), later), Ok(()), "the window has passed");
    }
}
