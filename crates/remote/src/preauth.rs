//! The pre-authentication pool: connections still in the handshake, which hold no client slot.
//!
//! It is bounded ([`MAX_PRE_AUTH`] in all, [`MAX_PRE_AUTH_PER_SOURCE`] per source network),
//! and a full pool never refuses a newcomer: it evicts the oldest connection of the source that
//! holds the most places (OpenSSH's MaxStartups drops early for the same reason; a pool that
//! refuses when full is locked by anyone who keeps it full, the audit's distributed slowloris:
//! 8 addresses × 8 trickling connections gave an honest client 0 of 10 handshakes). A source
//! is a network, an IPv4 /24 or an IPv6 /64: one host holds a whole /64 (RFC 6177 §2; RFC 7934
//! §6 gives hosts many addresses in one), and 256 addresses of one /24 are a small cost. An
//! attacker's new connection thus evicts its own or another crowd's oldest, and an honest
//! client, one connection from a network of its own, is evicted only after every crowd has
//! shrunk to one place. Under pressure (over half full) a newcomer's whole handshake must end
//! within [`PRESSED_DEADLINE`] instead of [`HANDSHAKE_DEADLINE`]: an honest one takes two
//! round trips.

use std::collections::HashMap;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, Shutdown, TcpStream};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// The whole handshake, from accept() to the last confirmation, however its bytes dribble in.
pub const HANDSHAKE_DEADLINE: Duration = Duration::from_secs(5);
/// The same under pressure: two round trips of any path on Earth and the key exchange's few
/// milliseconds, with room for a lost segment's retransmission (Linux's 1 s initial RTO,
/// RFC 6298 §2.1).
pub const PRESSED_DEADLINE: Duration = Duration::from_secs(2);
/// Connections in the handshake, in all and from one source network.
pub const MAX_PRE_AUTH: usize = 64;
pub const MAX_PRE_AUTH_PER_SOURCE: usize = 8;

/// A source network: the /24 of an IPv4 address (an IPv4-mapped IPv6 one included), the /64
/// of an IPv6 one.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug)]
pub enum Network {
    V4([u8; 3]),
    V6([u16; 4]),
}

impl Network {
    pub fn of(ip: IpAddr) -> Network {
        let v4 = |a: Ipv4Addr| {
            let o = a.octets();
            Network::V4([o[0], o[1], o[2]])
        };
        match ip {
            IpAddr::V4(a) => v4(a),
            IpAddr::V6(a) => match a.to_ipv4_mapped() {
                Some(m) => v4(m),
                None => {
                    let s = a.segments();
                    Network::V6([s[0], s[1], s[2], s[3]])
                }
            },
        }
    }
}

impl std::fmt::Display for Network {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match *self {
            Network::V4([a, b, c]) => write!(f, "{}/24", Ipv4Addr::new(a, b, c, 0)),
            Network::V6([a, b, c, d]) => write!(f, "{}/64", Ipv6Addr::new(a, b, c, d, 0, 0, 0, 0)),
        }
    }
}

struct Entry {
    id: u64,
    network: Network,
    /// A handle on the connection, to end its handshake when it is evicted.
    stream: TcpStream,
    evicted: Arc<AtomicBool>,
}

/// The connections in the handshake, oldest first.
#[derive(Default)]
pub struct Pool {
    entries: Mutex<Vec<Entry>>,
    next_id: AtomicU64,
    /// How many were evicted so far, for the log.
    pub evictions: AtomicU64,
}

/// A place in the pool, given back when dropped.
pub struct Place<'a> {
    pool: &'a Pool,
    id: u64,
    evicted: Arc<AtomicBool>,
    pub network: Network,
    /// When the handshake must have ended.
    pub deadline: Instant,
}

impl Place<'_> {
    /// Whether a newcomer took this place: the handshake was ended for it, not by the peer.
    pub fn evicted(&self) -> bool {
        self.evicted.load(Ordering::SeqCst)
    }
}

impl Drop for Place<'_> {
    fn drop(&mut self) {
        let mut entries = self.pool.entries.lock().unwrap_or_else(|p| p.into_inner());
        entries.retain(|e| e.id != self.id);
    }
}

/// Whom a newcomer displaced, for the log.
pub struct Eviction {
    pub network: Network,
    /// Places its network held, the evicted one included.
    pub held: usize,
}

impl Pool {
    /// A place for `stream` from `ip`, made by evicting another if the pool or the source's
    /// share is full. Fails only if the connection cannot be duplicated (out of descriptors).
    pub fn admit(&self, stream: &TcpStream, ip: IpAddr, now: Instant) -> std::io::Result<(Place<'_>, Option<Eviction>)> {
        let handle = stream.try_clone()?;
        let network = Network::of(ip);
        let mut entries = self.entries.lock().unwrap_or_else(|p| p.into_inner());
        let mut held: HashMap<Network, usize> = HashMap::new();
        for e in entries.iter() {
            *held.entry(e.network).or_default() += 1;
        }
        let mine = held.get(&network).copied().unwrap_or(0);
        let victim = if mine >= MAX_PRE_AUTH_PER_SOURCE {
            Some(network)
        } else if entries.len() >= MAX_PRE_AUTH {
            let most = held.values().copied().max().unwrap_or(0);
            entries.iter().map(|e| e.network).find(|n| held[n] == most)
        } else {
            None
        };
        // Entries are in arrival order: the first of the victim's network is its oldest.
        let eviction = victim.and_then(|v| entries.iter().position(|e| e.network == v)).map(|i| {
            let e = entries.remove(i);
            e.evicted.store(true, Ordering::SeqCst);
            // Wakes the session's blocked read with an end of stream; it then tells its peer
            // that serve is busy and closes.
            let _ = e.stream.shutdown(Shutdown::Read);
            self.evictions.fetch_add(1, Ordering::Relaxed);
            Eviction { network: e.network, held: held[&e.network] }
        });
        let pressed = entries.len() + 1 > MAX_PRE_AUTH / 2;
        let deadline = now + if pressed { PRESSED_DEADLINE } else { HANDSHAKE_DEADLINE };
        let id = self.next_id.fetch_add(1, Ordering::Relaxed);
        let evicted = Arc::new(AtomicBool::new(false));
        entries.push(Entry { id, network, stream: handle, evicted: evicted.clone() });
        Ok((Place { pool: self, id, evicted, network, deadline }, eviction))
    }

    /// Connections in the handshake now.
    pub fn len(&self) -> usize {
        self.entries.lock().unwrap_or_else(|p| p.into_inner()).len()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Panics unless the pool's invariants hold at this instant: within its bounds in all and
    /// per network, no evicted connection still counted, every place once.
    #[cfg(test)]
    fn check(&self) {
        let entries = self.entries.lock().unwrap_or_else(|p| p.into_inner());
        assert!(entries.len() <= MAX_PRE_AUTH, "{} places", entries.len());
        let mut held: HashMap<Network, usize> = HashMap::new();
        for e in entries.iter() {
            *held.entry(e.network).or_default() += 1;
            assert!(!e.evicted.load(Ordering::SeqCst), "an evicted place of {} is still counted", e.network);
        }
        assert!(held.values().all(|&n| n <= MAX_PRE_AUTH_PER_SOURCE), "{held:?}");
        let mut ids: Vec<u64> = entries.iter().map(|e| e.id).collect();
        ids.sort_unstable();
        ids.dedup();
        assert_eq!(ids.len(), entries.len(), "a place counted twice");
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::net::TcpListener;

    #[test]
    fn networks_are_24s_and_64s() {
        let n = |s: &str| Network::of(s.parse().unwrap());
        assert_eq!(n("192.0.2.1"), n("192.0.2.254"));
        assert_ne!(n("192.0.2.1"), n("192.0.3.1"));
        assert_eq!(n("::ffff:192.0.2.7"), n("192.0.2.1"), "IPv4-mapped is IPv4");
        assert_eq!(n("2001:db8:1:2::1"), n("2001:db8:1:2:ffff:ffff:ffff:ffff"));
        assert_ne!(n("2001:db8:1:2::1"), n("2001:db8:1:3::1"));
        assert_eq!(n("192.0.2.9").to_string(), "192.0.2.0/24");
        assert_eq!(n("2001:db8:1:2::9").to_string(), "2001:db8:1:2::/64");
    }

    /// A full pool takes every newcomer: from a network already at its share, in place of that
    /// network's oldest; from a new network, in place of the oldest of the largest crowd. The
    /// honest newcomer is then not the one the crowd's next connection evicts.
    #[test]
    fn a_full_pool_evicts_the_oldest_of_the_largest_crowd() {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let conn = || TcpStream::connect(listener.local_addr().unwrap()).unwrap();
        let mut keep = Vec::new();
        let pool = Pool::default();
        let now = Instant::now();
        let mut places = Vec::new();
        for net in 0..8u8 {
            for host in 0..8u8 {
                let s = conn();
                let (place, ev) = pool.admit(&s, IpAddr::V4(Ipv4Addr::new(10, 0, net, host)), now).unwrap();
                assert!(ev.is_none());
                places.push(place);
                keep.push(s);
            }
        }
        assert_eq!(pool.len(), 64);
        assert!(places[40].deadline - now == PRESSED_DEADLINE && places[0].deadline - now == HANDSHAKE_DEADLINE);
        // A ninth from 10.0.0.0/24: its own network's oldest goes.
        let s = conn();
        let (_p, ev) = pool.admit(&s, "10.0.0.200".parse().unwrap(), now).unwrap();
        assert_eq!(ev.map(|e| (e.network.to_string(), e.held)), Some(("10.0.0.0/24".into(), 8)));
        assert!(places[0].evicted() && !places[1].evicted());
        // An honest client from elsewhere: the oldest of the crowds of 8 goes (10.0.0.0/24's
        // second, the oldest left).
        let honest_stream = conn();
        let (honest, ev) = pool.admit(&honest_stream, "192.0.2.1".parse().unwrap(), now).unwrap();
        assert_eq!(ev.unwrap().network.to_string(), "10.0.0.0/24");
        assert!(places[1].evicted() && !places[2].evicted());
        // The crowd keeps coming, from all its networks: the honest place is the last to go.
        for round in 0..6u8 {
            for net in 0..8u8 {
                let s = conn();
                let (p, _) = pool.admit(&s, IpAddr::V4(Ipv4Addr::new(10, 0, net, 100 + round)), now).unwrap();
                places.push(p);
                keep.push(s);
                assert!(!honest.evicted(), "round {round}, network {net}");
            }
        }
        assert_eq!(pool.len(), 64);
        drop(honest);
        assert_eq!(pool.len(), 63, "a dropped place is given back");
    }

    /// Evictions raced from 16 threads, each a crowd of its own network (12 IPv4 /24s, 4 IPv6
    /// /64s) admitting from ever new addresses and giving places back at random, while another
    /// thread checks the invariants: never over the bounds, no evicted place counted, and at
    /// the end the places the crowds still hold, less the evicted ones, are exactly the pool.
    /// An honest client's one place, from a network of its own, survives it all.
    #[test]
    fn racing_evictions_keep_the_pool_consistent() {
        use rand::{Rng, SeedableRng};
        use std::sync::Barrier;
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let pool = Pool::default();
        let honest_stream = TcpStream::connect(listener.local_addr().unwrap()).unwrap();
        let (honest, _) = pool.admit(&honest_stream, "192.0.2.1".parse().unwrap(), Instant::now()).unwrap();
        const THREADS: usize = 16;
        let streams: Vec<TcpStream> = (0..THREADS).map(|_| TcpStream::connect(listener.local_addr().unwrap()).unwrap()).collect();
        let (admitted, counted, released) = (Barrier::new(THREADS + 1), Barrier::new(THREADS + 1), Barrier::new(THREADS + 1));
        let live = std::sync::atomic::AtomicUsize::new(0);
        let done = AtomicBool::new(false);
        std::thread::scope(|s| {
            let checker = s.spawn(|| {
                let mut checks = 0u64;
                while !done.load(Ordering::SeqCst) {
                    pool.check();
                    checks += 1;
                    std::thread::yield_now();
                }
                checks
            });
            let crowds: Vec<_> = streams
                .iter()
                .enumerate()
                .map(|(t, stream)| {
                    let (pool, admitted, counted, released, live) = (&pool, &admitted, &counted, &released, &live);
                    s.spawn(move || {
                        let mut rng = rand::rngs::StdRng::seed_from_u64(t as u64);
                        let mut held = std::collections::VecDeque::new();
                        for i in 0..2000u32 {
                            let ip: IpAddr = if t < 12 {
                                IpAddr::V4(Ipv4Addr::new(10, 0, t as u8, (i % 250 + 1) as u8))
                            } else {
                                IpAddr::V6(Ipv6Addr::new(0x2001, 0xdb8, 0, t as u16, rng.gen(), rng.gen(), rng.gen(), rng.gen()))
                            };
                            held.push_back(pool.admit(stream, ip, Instant::now()).unwrap().0);
                            held.retain(|p: &Place| !p.evicted());
                            if held.len() > 4 && rng.gen_bool(0.3) {
                                let at = rng.gen_range(0..held.len());
                                held.remove(at);
                            }
                        }
                        admitted.wait();
                        // No one admits now: what is not evicted stays so.
                        live.fetch_add(held.iter().filter(|p| !p.evicted()).count(), Ordering::SeqCst);
                        counted.wait();
                        released.wait();
                        drop(held);
                    })
                })
                .collect();
            admitted.wait();
            counted.wait();
            pool.check();
            assert_eq!(pool.len(), live.load(Ordering::SeqCst) + 1, "the pool counts exactly the places not evicted, the honest one's among them");
            assert!(!honest.evicted(), "the honest place went while crowds of many held the pool");
            assert!(pool.evictions.load(Ordering::Relaxed) > 1000, "the crowds raced few evictions");
            released.wait();
            for c in crowds {
                c.join().unwrap();
            }
            done.store(true, Ordering::SeqCst);
            assert!(checker.join().unwrap() > 0);
        });
        pool.check();
        assert_eq!(pool.len(), 1, "only the honest place is left");
        drop(honest);
        assert!(pool.is_empty());
    }

    /// An evicted connection's blocked read ends at once.
    #[test]
    fn eviction_wakes_the_blocked_handshake() {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let _client = TcpStream::connect(listener.local_addr().unwrap()).unwrap();
        let (server_side, _) = listener.accept().unwrap();
        let pool = Pool::default();
        let ip: IpAddr = "10.1.1.1".parse().unwrap();
        let (place, _) = pool.admit(&server_side, ip, Instant::now()).unwrap();
        let reader = std::thread::spawn(move || {
            use std::io::Read;
            let t = Instant::now();
            let n = (&server_side).read(&mut [0u8; 4]).unwrap();
            (n, t.elapsed())
        });
        std::thread::sleep(Duration::from_millis(100));
        let others: Vec<TcpStream> = (0..MAX_PRE_AUTH_PER_SOURCE).map(|_| TcpStream::connect(listener.local_addr().unwrap()).unwrap()).collect();
        let _places: Vec<_> = others.iter().map(|s| pool.admit(s, ip, Instant::now()).unwrap().0).collect();
        assert!(place.evicted());
        let (n, waited) = reader.join().unwrap();
        assert_eq!(n, 0);
        assert!(waited < Duration::from_secs(2), "{waited:?}");
    }
}
