//! Queue management of the buffer: one queue discipline per file behind the [`QueueDiscipline`] trait,
//! after Mahimahi's `AbstractPacketQueue` (enqueue, dequeue, size) and quinn's one congestion
//! controller per file.
//!
//! The link hands a discipline every packet that passed loss and the policer
//! ([`QueueDiscipline::enqueue`], which may refuse it: drop-tail at the buffer limit, PIE's early drop),
//! asks it for the next packet whenever the rate server becomes free ([`QueueDiscipline::dequeue`], which may
//! drop on the way out: CoDel), and replays its timers in time order with the link's other
//! events ([`QueueDiscipline::next_timer`], [`QueueDiscipline::on_timer`]: PIE's periodic drop-probability update). The
//! buffer limit ([`Buffer`]) is the discipline's to enforce, since FQ-CoDel answers an overflow
//! by dropping from its fattest queue rather than the arrival.
//!
//! # Adding an AQM
//!
//! 1. A file `aqm/NAME.rs` with its parameters (a [`AqmConfig`]: what `--aqm NAME:KEY=VALUE,…`
//!    sets, result.json records and the summary describes) and its queue (a [`QueueDiscipline`]), with
//!    its tests on the virtual clock.
//! 2. One line in the `registry!` below: the variant, its flag name and its parameters.
//!
//! The [`crate::Aqm`] enum (the configuration), its parser, its description, its validation and
//! the dispatch from the link to the queue are all generated from that line.

use std::collections::VecDeque;
use std::fmt;
use std::str::FromStr;

use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};

use crate::buffer::Buffer;
use crate::error::LinkConfigError;
use crate::outcome::{DropCause, Dropped, LinkStats};
use crate::refused::Refused;
use crate::time::{Duration, Instant};

pub mod codel;
pub mod drop_tail;
pub mod dual_pi2;
pub mod fq_codel;
pub mod pie;

pub use codel::Codel;
pub use dual_pi2::DualPi2;
pub use fq_codel::FqCodel;
pub use pie::Pie;

use crate::ecn::Ecn;

/// A packet held by the buffer.
#[derive(Debug)]
pub struct Queued<P> {
    pub packet: P,
    pub len: u32,
    pub arrived_at: Instant,
    /// The flow it belongs to (a hash of its 5-tuple, see [`crate::flow`]); 0 when the caller
    /// does not classify.
    pub flow: u64,
    /// Its ECN codepoint; an AQM that marks sets [`Ecn::Ce`] through [`Drops::mark`].
    pub ecn: Ecn,
    /// This buffer marked it CE ([`Drops::mark`]).
    pub marked: bool,
}

/// Where a discipline puts the packets it drops after accepting them (CoDel at dequeue,
/// FQ-CoDel's overflow from another flow): counted in the link's stats at once and handed back
/// through [`crate::Link::take_dropped`].
pub struct Drops<'a, P> {
    pub(crate) stats: &'a mut LinkStats,
    pub(crate) out: &'a mut VecDeque<Dropped<P>>,
}

impl<P> Drops<'_, P> {
    pub fn drop(&mut self, q: Queued<P>, cause: DropCause) {
        self.stats.count_drop(cause, q.len);
        self.out.push_back(Dropped { packet: q.packet, cause, arrived_at: q.arrived_at, len: q.len });
    }

    /// Marks `q` Congestion Experienced instead of dropping it (RFC 3168 section 5), if it is
    /// ECN-capable; counted in [`LinkStats::ce_marks`] unless it already was CE (RFC 3168
    /// section 5: a router sets CE, it never clears it). Says whether the packet was ECN-capable,
    /// that is whether the mark replaced a drop.
    pub fn mark(&mut self, q: &mut Queued<P>) -> bool {
        if !q.ecn.is_capable() {
            return false;
        }
        if q.ecn != Ecn::Ce {
            q.ecn = Ecn::Ce;
            q.marked = true;
            self.stats.ce_marks += 1;
            self.stats.bytes_ce_marked += u64::from(q.len);
        }
        true
    }
}

/// A queue discipline: the buffer between the policer and the rate server.
pub trait QueueDiscipline<P> {
    /// Takes a packet that passed loss and the policer at `now`, or refuses it with the cause
    /// (the link hands it straight back). `server_idle`: the server is idle, so the queue is
    /// empty and the packet is served at once; it must be admitted whatever the buffer limit
    /// (a zero buffer still passes a packet that finds the link idle).
    fn enqueue(&mut self, now: Instant, q: Queued<P>, server_idle: bool, drops: &mut Drops<P>) -> Result<(), (Queued<P>, DropCause)>;
    /// The packet the server starts on at `now`, or `None` when nothing is left.
    fn dequeue(&mut self, now: Instant, drops: &mut Drops<P>) -> Option<Queued<P>>;
    /// When the discipline next needs [`QueueDiscipline::on_timer`]; `None` when no timer is armed (or it
    /// would change nothing). The link replays timers lazily, in time order with arrivals and
    /// departures, so they cost no wake-ups.
    fn next_timer(&self) -> Option<Instant> {
        None
    }
    fn on_timer(&mut self, _now: Instant) {}
    /// Bytes waiting, excluding the packet in service.
    fn backlog_bytes(&self) -> u64;
    /// Packets waiting, excluding the packet in service.
    fn backlog_packets(&self) -> usize;
    /// The probability the discipline's decisions derive from, for the link series: DualPI2's
    /// base probability `p'` (RFC 9332 §2.4: the classic queue drops or marks with `p'²`, the L
    /// queue marks with `k·p'`); `None` where there is none.
    fn base_prob(&self) -> Option<f64> {
        None
    }
}

/// An AQM's parameters: what `--aqm NAME:KEY=VALUE,…` sets, result.json records (flattened
/// beside `"kind"`) and the path's description shows.
pub trait AqmConfig: Copy + Default + PartialEq + fmt::Debug + Serialize + DeserializeOwned {
    /// The discipline these parameters build.
    type Queue<P>: QueueDiscipline<P>;
    /// Its keys with their defaults, as `--help` and errors show them: `target=5ms,…`.
    const KEYS: &'static str;
    /// Sets one `KEY=VALUE`, or says what that key accepts.
    fn set(&mut self, key: &str, value: &str) -> Result<(), String>;
    fn validate(&self) -> Result<(), LinkConfigError>;
    /// For the path's description: `CoDel (target 5 ms, interval 100 ms)`.
    fn describe(&self) -> String;
    /// A fresh queue. `seed` is the link's, for disciplines that draw random numbers.
    fn build<P>(&self, buffer: Buffer, seed: u64) -> Self::Queue<P>;
    /// Whether it tells flows apart, so the caller should classify packets
    /// ([`crate::Link::enqueue_in_flow`]).
    fn per_flow(&self) -> bool {
        false
    }
    /// Turns on ECN marking (the `ecn=on` parameter, what `--ecn` sets); `false` when the
    /// discipline cannot mark.
    fn enable_ecn(&mut self) -> bool {
        false
    }
    /// Whether it marks ECN-capable packets instead of dropping them.
    fn marks(&self) -> bool {
        false
    }
}

/// A FIFO of packets with its byte count: the queue most disciplines are made of.
pub struct Fifo<P> {
    queue: VecDeque<Queued<P>>,
    bytes: u64,
}

impl<P> Default for Fifo<P> {
    fn default() -> Self {
        Fifo { queue: VecDeque::new(), bytes: 0 }
    }
}

impl<P> Fifo<P> {
    pub fn push(&mut self, q: Queued<P>) {
        self.bytes += u64::from(q.len);
        self.queue.push_back(q);
    }

    pub fn pop(&mut self) -> Option<Queued<P>> {
        let q = self.queue.pop_front()?;
        self.bytes -= u64::from(q.len);
        Some(q)
    }

    pub fn bytes(&self) -> u64 {
        self.bytes
    }

    /// The packet at the head, next to leave.
    pub fn front(&self) -> Option<&Queued<P>> {
        self.queue.front()
    }

    pub fn len(&self) -> usize {
        self.queue.len()
    }

    pub fn is_empty(&self) -> bool {
        self.queue.is_empty()
    }

    /// Whether `buffer` has room for `len` more bytes behind what this holds.
    pub fn admits(&self, buffer: Buffer, len: u32) -> bool {
        buffer.admits(self.bytes, self.queue.len(), len)
    }
}

/// Generates the configuration enum [`crate::Aqm`], its parsing, description and validation,
/// and the link's dispatch to the queues, from one line per AQM.
macro_rules! registry {
    ($($(#[$doc:meta])* $variant:ident($name:literal, $config:ty),)*) => {
        /// Queue management of the buffer. The [`Buffer`] limit applies whatever the AQM
        /// (drop-tail at arrival, except FQ-CoDel, which drops from its fattest queue).
        #[derive(Clone, Copy, Debug, Default, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
        #[serde(tag = "kind", rename_all = "snake_case")]
        pub enum Aqm {
            /// A FIFO that drops arrivals finding the buffer full.
            #[default]
            DropTail,
            $($(#[$doc])* $variant($config),)*
        }

        /// The running discipline of each [`Aqm`]. One per link direction, built once and
        /// never moved per packet, so the size of PIE's RNG inline costs nothing.
        #[allow(clippy::large_enum_variant)]
        pub(crate) enum Discipline<P> {
            DropTail(drop_tail::DropTail<P>),
            $($variant(<$config as AqmConfig>::Queue<P>),)*
        }

        impl Aqm {
            /// Its name on the command line: `droptail`, `codel`, `pie`, `fq_codel`.
            pub fn name(&self) -> &'static str {
                match self {
                    Aqm::DropTail => "droptail",
                    $(Aqm::$variant(_) => $name,)*
                }
            }

            /// Every AQM with its keys and defaults: `droptail, codel[:target=5ms,…], …`.
            pub fn allowed() -> String {
                let mut s = String::from("droptail");
                $(s.push_str(&format!(", {}[:{}]", $name, <$config as AqmConfig>::KEYS));)*
                s
            }

            fn parse(name: &str, params: Option<&str>) -> Result<Aqm, Refused> {
                match name {
                    "droptail" if params.is_none() => Ok(Aqm::DropTail),
                    $($name => set_all(<$config>::default(), $name, params).map(Aqm::$variant),)*
                    _ => Err(Refused(Self::allowed())),
                }
            }

            pub fn validate(&self) -> Result<(), LinkConfigError> {
                match self {
                    Aqm::DropTail => Ok(()),
                    $(Aqm::$variant(c) => c.validate(),)*
                }
            }

            /// For the path's description; `None` for drop-tail, which is the absence of one.
            pub fn describe(&self) -> Option<String> {
                match self {
                    Aqm::DropTail => None,
                    $(Aqm::$variant(c) => Some(c.describe()),)*
                }
            }

            /// Whether packets should be classified into flows ([`AqmConfig::per_flow`]).
            pub fn per_flow(&self) -> bool {
                match self {
                    Aqm::DropTail => false,
                    $(Aqm::$variant(c) => c.per_flow(),)*
                }
            }

            /// Turns on ECN marking ([`AqmConfig::enable_ecn`]); `false` for one that cannot mark
            /// (drop-tail).
            pub fn enable_ecn(&mut self) -> bool {
                match self {
                    Aqm::DropTail => false,
                    $(Aqm::$variant(c) => c.enable_ecn(),)*
                }
            }

            /// Whether it marks ECN-capable packets instead of dropping them ([`AqmConfig::marks`]).
            pub fn marks(&self) -> bool {
                match self {
                    Aqm::DropTail => false,
                    $(Aqm::$variant(c) => c.marks(),)*
                }
            }

            pub(crate) fn build<P>(&self, buffer: Buffer, seed: u64) -> Discipline<P> {
                match self {
                    Aqm::DropTail => Discipline::DropTail(drop_tail::DropTail::new(buffer)),
                    $(Aqm::$variant(c) => Discipline::$variant(c.build(buffer, seed)),)*
                }
            }
        }

        impl<P> QueueDiscipline<P> for Discipline<P> {
            fn enqueue(&mut self, now: Instant, q: Queued<P>, server_idle: bool, drops: &mut Drops<P>) -> Result<(), (Queued<P>, DropCause)> {
                match self {
                    Discipline::DropTail(d) => d.enqueue(now, q, server_idle, drops),
                    $(Discipline::$variant(d) => d.enqueue(now, q, server_idle, drops),)*
                }
            }
            fn dequeue(&mut self, now: Instant, drops: &mut Drops<P>) -> Option<Queued<P>> {
                match self {
                    Discipline::DropTail(d) => d.dequeue(now, drops),
                    $(Discipline::$variant(d) => d.dequeue(now, drops),)*
                }
            }
            fn next_timer(&self) -> Option<Instant> {
                match self {
                    Discipline::DropTail(d) => d.next_timer(),
                    $(Discipline::$variant(d) => d.next_timer(),)*
                }
            }
            fn on_timer(&mut self, now: Instant) {
                match self {
                    Discipline::DropTail(d) => d.on_timer(now),
                    $(Discipline::$variant(d) => d.on_timer(now),)*
                }
            }
            fn backlog_bytes(&self) -> u64 {
                match self {
                    Discipline::DropTail(d) => d.backlog_bytes(),
                    $(Discipline::$variant(d) => d.backlog_bytes(),)*
                }
            }
            fn backlog_packets(&self) -> usize {
                match self {
                    Discipline::DropTail(d) => d.backlog_packets(),
                    $(Discipline::$variant(d) => d.backlog_packets(),)*
                }
            }
            fn base_prob(&self) -> Option<f64> {
                match self {
                    Discipline::DropTail(d) => QueueDiscipline::<P>::base_prob(d),
                    $(Discipline::$variant(d) => QueueDiscipline::<P>::base_prob(d),)*
                }
            }
        }
    };
}

registry! {
    /// CoDel (RFC 8289), deciding when a packet leaves the buffer to start serialization.
    Codel("codel", Codel),
    /// PIE (RFC 8033), dropping at arrival with a probability it updates every `tupdate`.
    Pie("pie", Pie),
    /// FQ-CoDel (RFC 8290): a queue per flow, served by deficit round robin, CoDel in each.
    FqCodel("fq_codel", FqCodel),
    /// DualPI2 (RFC 9332): an L4S queue with a step marker coupled to a classic PI2 queue.
    DualPi2("dualpi2", DualPi2),
}

fn set_all<C: AqmConfig>(mut c: C, name: &str, params: Option<&str>) -> Result<C, Refused> {
    for kv in params.into_iter().flat_map(|p| p.split(',')) {
        let refused = |why: String| Refused(format!("{name}[:{}] ({why})", C::KEYS));
        let Some((k, v)) = kv.split_once('=') else { return Err(refused(format!("{kv:?} is not KEY=VALUE"))) };
        c.set(k.trim(), v.trim()).map_err(refused)?;
    }
    c.validate().map_err(|e| Refused(format!("{name}[:{}] ({e})", C::KEYS)))?;
    Ok(c)
}

/// `droptail`, or `NAME[:KEY=VALUE,…]` with the registered names and each AQM's keys.
impl FromStr for Aqm {
    type Err = Refused;
    fn from_str(s: &str) -> Result<Self, Refused> {
        match s.trim().split_once(':') {
            Some((name, params)) => Self::parse(name, Some(params)),
            None => Self::parse(s.trim(), None),
        }
    }
}

/// A duration parameter, or what it accepts.
pub(crate) fn duration(key: &str, v: &str) -> Result<Duration, String> {
    v.parse().map_err(|e| format!("{key} is {e}"))
}

/// A duration parameter that must be above zero.
pub(crate) fn positive_duration(key: &str, v: &str) -> Result<Duration, String> {
    match duration(key, v)? {
        d if d.is_zero() => Err(format!("{key} must be above zero")),
        d => Ok(d),
    }
}

/// Rounds a duration to milliseconds for a description (`5 ms`, `2.500 ms`); the path's
/// description in ccbench uses it too.
pub fn ms(d: Duration) -> String {
    let ms = d.as_millis_f64();
    if ms == ms.round() {
        format!("{ms:.0} ms")
    } else {
        format!("{ms:.3} ms")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MS: Duration = Duration::from_millis(1);

    #[test]
    fn names_parse_to_their_defaults_and_keys_override() {
        assert_eq!("droptail".parse(), Ok(Aqm::DropTail));
        assert_eq!("codel".parse(), Ok(Aqm::Codel(Codel::default())));
        assert_eq!("pie".parse(), Ok(Aqm::Pie(Pie::default())));
        assert_eq!("fq_codel".parse(), Ok(Aqm::FqCodel(FqCodel::default())));
        assert_eq!("codel:target=10ms".parse(), Ok(Aqm::Codel(Codel { target_ns: 10 * MS, ..Codel::default() })));
        assert_eq!("pie:target=20ms,tupdate=30ms".parse(), Ok(Aqm::Pie(Pie { target_ns: 20 * MS, tupdate_ns: 30 * MS, ..Pie::default() })));
        assert_eq!("fq_codel:flows=16,quantum=300".parse(), Ok(Aqm::FqCodel(FqCodel { flows: 16, quantum: Some(300), ..FqCodel::default() })));
        for a in ["droptail", "codel", "pie", "fq_codel"] {
            assert_eq!(a.parse::<Aqm>().unwrap().name(), a);
        }
    }

    #[test]
    fn refusals_say_what_is_allowed() {
        let all = Aqm::allowed();
        assert!(all.starts_with("droptail, codel[:target=5ms,interval=100ms,ecn=off,ce_threshold=off], pie[:target=15ms,"), "{all}");
        assert!(all.ends_with("dualpi2[:target=15ms,tupdate=16ms,alpha=0.16,beta=3.2,k=2,step=1ms,c_protection=10,drop_overload=on]"), "{all}");
        assert!(all.contains("fq_codel[:"), "{all}");
        for bad in ["red", "droptail:x=1", "", "CODEL"] {
            assert_eq!(bad.parse::<Aqm>(), Err(Refused(all.clone())), "{bad}");
        }
        for (bad, why) in [
            ("codel:target=1", "target is a duration such as"),
            ("codel:interval=0", "interval must be above zero"),
            ("codel:color=red", "unknown key \"color\""),
            ("pie:tupdate=0", "tupdate must be at least 1ms"),
            ("pie:alpha=-1", "alpha is a number"),
            ("pie:target", "\"target\" is not KEY=VALUE"),
            ("fq_codel:flows=0", "flows is a whole number from 1 to 65536"),
            ("fq_codel:quantum=10", "quantum is a byte count from"),
        ] {
            let e = bad.parse::<Aqm>().unwrap_err().0;
            let name = bad.split(':').next().unwrap();
            assert!(e.starts_with(&format!("{name}[:")), "{bad}: {e}");
            assert!(e.contains(why), "{bad}: {e}");
        }
    }

    #[test]
    fn serializes_flat_beside_its_kind() {
        // result.json's shape from before the registry: the parameters beside "kind".
        let c = Aqm::Codel(Codel { target_ns: 3 * MS, interval_ns: 50 * MS, ..Codel::default() });
        assert_eq!(serde_json::to_string(&c).unwrap(), r#"{"kind":"codel","target_ns":3000000,"interval_ns":50000000}"#);
        assert_eq!(serde_json::to_string(&Aqm::DropTail).unwrap(), r#"{"kind":"drop_tail"}"#);
        assert_eq!(serde_json::from_str::<Aqm>(r#"{"kind":"codel"}"#).unwrap(), Aqm::Codel(Codel::default()));
        for a in ["pie:target=20ms", "fq_codel:flows=8", "codel"] {
            let a: Aqm = a.parse().unwrap();
            let back: Aqm = serde_json::from_str(&serde_json::to_string(&a).unwrap()).unwrap();
            assert_eq!(back, a);
        }
    }
}
