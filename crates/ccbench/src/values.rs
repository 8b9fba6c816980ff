//! The values that the `run` and `exec` flags take, typed at the edge. Each parses from the text a
//! user writes — on the command line through clap's `value_parser`, in a preset through serde —,
//! checks the range that belongs to its flag, and explains a bad value by what would have been
//! accepted ([`Expected`]); the caller, who knows the flag, turns that into the one-line usage
//! error. Past this module nothing is text any more.

use ccbench_link::time::{Duration, Instant};
use std::fmt;
use std::path::PathBuf;
use std::str::FromStr;

use ccbench::units;
use ccbench_link::{self as link, Aqm, Jitter, LossModel, Policer, Reorder, ScheduledChange, TraceRate};
use ccbench_workload::{Algorithm, AlgorithmError, Transport};
use serde::de::{self, Deserializer, Visitor};
use serde::Deserialize;

/// Above this the emulator is certainly not the tool; below it a "rate" is a typo.
const MAX_RATE_BPS: u64 = 100_000_000_000;
const MIN_RATE_BPS: u64 = 10_000;
const MAX_ONE_WAY_DELAY_NS: u64 = 10_000_000_000;
const NS_PER_MS: u64 = 1_000_000;
const NS_PER_S: u64 = 1_000_000_000;

use ccbench_workload::flags::expected;
pub use ccbench_workload::flags::{one_or_many, Expected, Size};
use ccbench_workload::{count_flag, deserialize_from_text};

/// A value the link's own grammar refused ([`link::Refused`]): its text is already what is
/// allowed; the flag's name is added by whoever reports it.
fn refused(r: link::Refused) -> Expected {
    Expected(r.0)
}

// ---------------------------------------------------------------------------------------------
// The path

/// A bottleneck rate (`--rate`, `--rate-down`, `--rate-up`, and `rate=` in `--at`): from 10kbit
/// to 100gbit, or unlimited. The default is `--rate`'s.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Rate(pub link::Rate);

impl Default for Rate {
    fn default() -> Self {
        Rate(link::Rate::BitsPerSec(100_000_000))
    }
}

impl FromStr for Rate {
    type Err = Expected;
    fn from_str(s: &str) -> Result<Self, Expected> {
        match units::parse_rate(s)? {
            None => Ok(Rate(link::Rate::Unlimited)),
            Some(b) if (MIN_RATE_BPS..=MAX_RATE_BPS).contains(&b) => Ok(Rate(link::Rate::BitsPerSec(b))),
            Some(_) => expected("a rate between 10kbit and 100gbit, or 'unlimited'"),
        }
    }
}

fn one_way_delay_ns(s: &str, divide: u64) -> Result<u64, Expected> {
    let ns = units::parse_duration_ns(s)?;
    if ns / divide > MAX_ONE_WAY_DELAY_NS {
        return expected("a delay of at most 10s one way");
    }
    Ok(ns / divide)
}

/// A one-way delay (`--delay-down`, `--delay-up`): at most 10 s.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Delay(pub u64);

impl FromStr for Delay {
    type Err = Expected;
    fn from_str(s: &str) -> Result<Self, Expected> {
        one_way_delay_ns(s, 1).map(Delay)
    }
}

/// A round-trip time (`--rtt`), split evenly between the directions: at most 10 s each way.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Rtt {
    one_way_ns: u64,
}

impl Rtt {
    /// Half the round trip: the delay of each direction.
    pub fn one_way(&self) -> Delay {
        Delay(self.one_way_ns)
    }
}

impl Default for Rtt {
    fn default() -> Self {
        Rtt { one_way_ns: 20 * NS_PER_MS }
    }
}

impl FromStr for Rtt {
    type Err = Expected;
    fn from_str(s: &str) -> Result<Self, Expected> {
        one_way_delay_ns(s, 2).map(|one_way_ns| Rtt { one_way_ns })
    }
}

/// Random loss (`--loss` and its per-direction forms): a percentage for Bernoulli loss, or
/// `gilbert:p=1%,r=25%[,bad=100%][,good=0%]` for bursty Gilbert–Elliott loss.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct LossSpec(pub LossModel);

impl FromStr for LossSpec {
    type Err = Expected;
    fn from_str(value: &str) -> Result<Self, Expected> {
        value.parse().map(LossSpec).map_err(refused)
    }
}

/// A drop-tail buffer (`--buffer` and its per-direction forms) as written: resolved against the
/// path's rate, round trip and MTU once they are known.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum BufferSpec {
    Unlimited,
    Bytes(u64),
    Packets(u64),
    Bdp(f64),
}

impl Default for BufferSpec {
    fn default() -> Self {
        BufferSpec::Bdp(1.0)
    }
}

impl FromStr for BufferSpec {
    type Err = Expected;
    fn from_str(s: &str) -> Result<Self, Expected> {
        const ALLOWED: &str = "a buffer such as 1bdp, 0.5bdp, 100pkt, 256kib, 1mb or 'unlimited'";
        let t = s.trim().to_ascii_lowercase();
        if t == "unlimited" {
            return Ok(BufferSpec::Unlimited);
        }
        let Some((v, unit)) = units::split_number(&t) else { return expected(ALLOWED) };
        match unit.as_str() {
            "bdp" if v > 0.0 => Ok(BufferSpec::Bdp(v)),
            "pkt" | "pkts" | "p" | "packets" if v >= 1.0 => Ok(BufferSpec::Packets(v.round() as u64)),
            _ => match units::parse_bytes(&t) {
                Ok(b) if b > 0 => Ok(BufferSpec::Bytes(b)),
                _ => expected(ALLOWED),
            },
        }
    }
}

/// A Mahimahi trace file (`--trace` and its per-direction forms), read and checked when the
/// flag is parsed.
#[derive(Clone, Debug, PartialEq)]
pub struct TraceFile {
    pub path: PathBuf,
    pub rate: TraceRate,
}

impl FromStr for TraceFile {
    type Err = Expected;
    fn from_str(s: &str) -> Result<Self, Expected> {
        let path = PathBuf::from(s);
        let text = std::fs::read_to_string(&path).map_err(|e| Expected(format!("a readable Mahimahi trace file ({e})")))?;
        let name = path.file_name().map(|n| n.to_string_lossy().to_string()).unwrap_or_else(|| s.to_string());
        let rate =
            TraceRate::parse(&name, &text).map_err(|e| Expected(format!("a Mahimahi trace (one millisecond timestamp per line, non-decreasing): {e}")))?;
        Ok(TraceFile { path, rate })
    }
}

/// Extra random delay per packet (`--jitter` and its per-direction forms): `2ms` (uniform),
/// `normal:1ms` (half-normal), either followed by `,reorder`.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct JitterSpec(pub Jitter);

impl FromStr for JitterSpec {
    type Err = Expected;
    fn from_str(value: &str) -> Result<Self, Expected> {
        value.parse().map(JitterSpec).map_err(refused)
    }
}

/// Reordering (`--reorder` and its per-direction forms): `P%:DISPLACEMENT`, a share of packets
/// held back by a time (`1%:3ms`) or a number of packets (`1%:5pkt`), so later ones overtake
/// them; `0` for none. Why both forms: [`Reorder`].
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct ReorderSpec(pub Reorder);

impl FromStr for ReorderSpec {
    type Err = Expected;
    fn from_str(value: &str) -> Result<Self, Expected> {
        value.parse().map(ReorderSpec).map_err(refused)
    }
}

/// A token-bucket policer (`--policer` and its per-direction forms): `RATE[:BURST]`, the burst
/// 10 ms at the rate unless given, and at least one full packet.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PolicerSpec(pub Policer);

impl FromStr for PolicerSpec {
    type Err = Expected;
    fn from_str(value: &str) -> Result<Self, Expected> {
        value.parse().map(PolicerSpec).map_err(refused)
    }
}

/// Queue management at the bottleneck (`--aqm`, `--aqm-down`, `--aqm-up`): the link's own
/// grammar ([`Aqm`]'s `FromStr`: `droptail`, or `NAME[:KEY=VALUE,…]`); the flag's name is
/// added by whoever reports the error.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct AqmSpec(pub Aqm);

impl FromStr for AqmSpec {
    type Err = Expected;
    fn from_str(value: &str) -> Result<Self, Expected> {
        value.parse().map(AqmSpec).map_err(refused)
    }
}

/// One change during the run (`--at TIME:KEY=VALUE[,KEY=VALUE…]`), as the change it makes in
/// each direction (either may change nothing).
#[derive(Clone, Debug, PartialEq)]
pub struct AtChange {
    pub down: ScheduledChange,
    pub up: ScheduledChange,
}

impl FromStr for AtChange {
    type Err = Expected;
    fn from_str(value: &str) -> Result<Self, Expected> {
        const ALLOWED: &str = "TIME:KEY=VALUE[,KEY=VALUE…] such as 10s:rate=20mbit or 5s:rtt=80ms,loss=1% (keys: rate, rtt, loss, rate-down, rate-up, delay-down, delay-up, loss-down, loss-up)";
        const KEYS: [&str; 9] = ["rate", "rtt", "loss", "rate-down", "rate-up", "delay-down", "delay-up", "loss-down", "loss-up"];
        let Some((time, changes)) = value.split_once(':') else { return expected(ALLOWED) };
        let Ok(at_ns) = units::parse_duration_ns(time).map(Instant::from_nanos) else { return expected(ALLOWED) };
        let mut down = ScheduledChange { at_ns, ..Default::default() };
        let mut up = ScheduledChange { at_ns, ..Default::default() };
        // Split on commas, except inside a value (Gilbert–Elliott loss has its own "p=…,r=…").
        let mut parts: Vec<String> = Vec::new();
        for piece in changes.split(',') {
            let key = piece.split('=').next().unwrap_or("").trim();
            match parts.last_mut() {
                Some(last) if !KEYS.contains(&key) => {
                    last.push(',');
                    last.push_str(piece);
                }
                _ => parts.push(piece.to_string()),
            }
        }
        for kv in &parts {
            let Some((k, v)) = kv.split_once('=') else { return expected(ALLOWED) };
            let rate = |v: &str| v.parse::<Rate>().map(|r| Some(r.0));
            let loss = |v: &str| v.parse::<LossSpec>().map(|l| Some(l.0));
            match k.trim() {
                "rate" => (down.rate, up.rate) = (rate(v)?, rate(v)?),
                "rate-down" => down.rate = rate(v)?,
                "rate-up" => up.rate = rate(v)?,
                "rtt" => {
                    let half = Duration::from_nanos(v.parse::<Rtt>()?.one_way().0);
                    (down.delay_ns, up.delay_ns) = (Some(half), Some(half));
                }
                "delay-down" => down.delay_ns = Some(Duration::from_nanos(v.parse::<Delay>()?.0)),
                "delay-up" => up.delay_ns = Some(Duration::from_nanos(v.parse::<Delay>()?.0)),
                "loss" => (down.loss, up.loss) = (loss(v)?, loss(v)?),
                "loss-down" => down.loss = loss(v)?,
                "loss-up" => up.loss = loss(v)?,
                _ => return expected(ALLOWED),
            }
        }
        Ok(AtChange { down, up })
    }
}

/// The MTU of the emulated link (`--mtu`), in bytes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Mtu(pub u32);

impl Default for Mtu {
    fn default() -> Self {
        Mtu(1500)
    }
}

impl FromStr for Mtu {
    type Err = Expected;
    fn from_str(s: &str) -> Result<Self, Expected> {
        match s.trim().parse::<u32>() {
            Ok(n) if (576..=9000).contains(&n) => Ok(Mtu(n)),
            _ => expected("an MTU from 576 to 9000 bytes"),
        }
    }
}

deserialize_from_text!(Rate, Delay, Rtt, LossSpec, BufferSpec, TraceFile, JitterSpec, ReorderSpec, PolicerSpec, AqmSpec, AtChange, Mtu);

// ---------------------------------------------------------------------------------------------
// Durations

/// A duration, printed back in the largest unit that keeps it whole (`3s`, `250ms`).
fn fmt_ns(ns: u64, f: &mut fmt::Formatter<'_>) -> fmt::Result {
    match ns {
        0 => write!(f, "0s"),
        ns if ns.is_multiple_of(NS_PER_S) => write!(f, "{}s", ns / NS_PER_S),
        ns if ns.is_multiple_of(NS_PER_MS) => write!(f, "{}ms", ns / NS_PER_MS),
        ns if ns.is_multiple_of(1000) => write!(f, "{}us", ns / 1000),
        ns => write!(f, "{ns}ns"),
    }
}

/// A duration type for one flag: its range and the message that explains it.
macro_rules! duration_flag {
    ($(#[$m:meta])* $name:ident, default $default:expr, $range:expr, $allowed:expr) => {
        $(#[$m])*
        #[derive(Clone, Copy, Debug, PartialEq, Eq)]
        pub struct $name(pub u64);

        impl Default for $name {
            fn default() -> Self {
                $name($default)
            }
        }

        impl FromStr for $name {
            type Err = Expected;
            fn from_str(s: &str) -> Result<Self, Expected> {
                let ns = units::parse_duration_ns(s)?;
                if !($range).contains(&ns) {
                    return expected($allowed);
                }
                Ok($name(ns))
            }
        }

        impl fmt::Display for $name {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                fmt_ns(self.0, f)
            }
        }

        deserialize_from_text!($name);
    };
}

duration_flag!(
    /// Between the start of one flow of a mix and the next (`--stagger`).
    Stagger, default 0, 0..=u64::MAX, "a duration"
);
duration_flag!(
    /// How long each bulk run sends (`--duration`): 1 s to 60 min.
    RunDuration, default 10 * NS_PER_S, NS_PER_S..=3600 * NS_PER_S, "a duration between 1s and 60min"
);
duration_flag!(
    /// When a file, objects or page run gives up (`--timeout`): at least 1 s.
    Timeout, default 600 * NS_PER_S, NS_PER_S..=u64::MAX, "at least 1s"
);
duration_flag!(
    /// serve: the longest test it runs (`--max-duration`): 1 s to 60 min.
    MaxDuration, default 120 * NS_PER_S, NS_PER_S..=3600 * NS_PER_S, "a duration between 1s and 60min"
);
duration_flag!(
    /// serve: how long a session may go without a test (`--idle-timeout`): 1 s to 60 min.
    IdleTimeout, default 60 * NS_PER_S, NS_PER_S..=3600 * NS_PER_S, "a duration between 1s and 60min"
);
duration_flag!(
    /// How often the sender and the emulator are sampled (`--sample-interval`): 1 ms to 1 s.
    SampleInterval, default 10 * NS_PER_MS, NS_PER_MS..=NS_PER_S, "an interval between 1ms and 1s"
);
duration_flag!(
    /// The period of a direction's aggregation (`--aggregate` and its per-direction forms): packets
    /// held and released in bursts; 1 us to 1 s (a longer hold is an outage, not a link).
    Aggregate, default 0, 1_000..=NS_PER_S, "an aggregation period between 1us and 1s, such as 4ms"
);
/// The emulator's shortest time between wake-ups (`--emulator-batch`): a duration of at most
/// 1 ms, or `auto`, which takes it from the path's rate and RTT
/// ([`ccbench_model::path::auto_batch_us`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum EmulatorBatch {
    /// Nanoseconds.
    Fixed(u64),
    Auto,
}

impl Default for EmulatorBatch {
    fn default() -> Self {
        EmulatorBatch::Fixed(ccbench_model::path::DEFAULT_BATCH_US * 1000)
    }
}

impl EmulatorBatch {
    /// The batch in µs for a direction running at `rate_bps` (None: unlimited) over a base RTT
    /// of `rtt_ns`; the path takes the smaller of its two directions' (`path::build_for_flows`).
    pub fn micros(self, rate_bps: Option<u64>, rtt_ns: u64, mtu: u32) -> u64 {
        match self {
            EmulatorBatch::Fixed(ns) => ns / 1000,
            EmulatorBatch::Auto => ccbench_model::path::auto_batch_us(rate_bps, rtt_ns, mtu),
        }
    }
}

impl FromStr for EmulatorBatch {
    type Err = Expected;
    fn from_str(s: &str) -> Result<Self, Expected> {
        if s.trim() == "auto" {
            return Ok(EmulatorBatch::Auto);
        }
        let ns = units::parse_duration_ns(s).or_else(|_| expected("a duration of at most 1ms, or auto"))?;
        if ns > NS_PER_MS {
            return expected("at most 1ms, or auto");
        }
        Ok(EmulatorBatch::Fixed(ns))
    }
}

impl fmt::Display for EmulatorBatch {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            EmulatorBatch::Fixed(ns) => fmt_ns(*ns, f),
            EmulatorBatch::Auto => write!(f, "auto"),
        }
    }
}

deserialize_from_text!(EmulatorBatch);

// ---------------------------------------------------------------------------------------------
// The workload and the runs

count_flag!(
    /// serve: control connections at once (`--max-clients`).
    MaxClients, 1..=1024
);
count_flag!(
    /// serve: tests one client address may start per minute (`--max-tests-per-minute`).
    MaxTestsPerMinute, 1..=100_000
);
count_flag!(
    /// With `--runs auto`: the most runs per algorithm (`--max-runs`).
    MaxRuns, 1..=1000
);

impl Default for MaxRuns {
    fn default() -> Self {
        MaxRuns(20)
    }
}

/// Where `ccbench serve` listens (`--listen`): an IP address and a port.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ListenAddr(pub std::net::SocketAddr);

impl FromStr for ListenAddr {
    type Err = Expected;
    fn from_str(s: &str) -> Result<Self, Expected> {
        s.trim().parse().map(ListenAddr).or_else(|_| expected("an IP address and port such as 127.0.0.1:7450 or 0.0.0.0:7450"))
    }
}

/// The `ccbench serve` to run against (`--remote`): `HOST:PORT`, resolved once, here.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RemoteAddr {
    pub label: String,
    pub addr: std::net::SocketAddr,
}

impl FromStr for RemoteAddr {
    type Err = Expected;
    fn from_str(s: &str) -> Result<Self, Expected> {
        use std::net::ToSocketAddrs;
        let allowed = "HOST:PORT of a ccbench serve, such as 192.0.2.7:7450";
        if s.rsplit_once(':').is_none_or(|(h, p)| h.is_empty() || p.parse::<u16>().map_or(true, |p| p == 0)) {
            return expected(allowed);
        }
        match s.to_socket_addrs().ok().and_then(|mut a| a.next()) {
            Some(addr) => Ok(RemoteAddr { label: s.to_string(), addr }),
            None => expected(format!("{allowed} (the host does not resolve)")),
        }
    }
}

/// `--quic-receiver-cc`: the QUIC algorithm of the receiving end, written as after `quic:`
/// (`cubic`) or in full (`quic:cubic`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct QuicReceiverCc(pub String);

impl FromStr for QuicReceiverCc {
    type Err = Expected;
    fn from_str(s: &str) -> Result<Self, Expected> {
        // `cubic` here is QUIC's, not kernel TCP's: the flag names nothing else.
        let alg = if s.contains(':') { s.parse::<Algorithm>() } else { Algorithm::new(Transport::Quic, s) };
        match alg {
            Ok(alg) if alg.is_quic() && ccbench_workload::has_quic_algorithm(alg.name()) => Ok(QuicReceiverCc(alg.name().to_string())),
            _ => expected(format!("a QUIC algorithm: {}", ccbench_workload::quic_algorithms().join(", "))),
        }
    }
}

impl fmt::Display for QuicReceiverCc {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}:{}", Transport::Quic.as_str(), self.0)
    }
}

/// The algorithms to compare (`--cc`): a comma-separated list (in a preset, a list of names
/// too), never empty, each once. A name is `[transport:]algorithm`: `bbr` and `tcp:bbr` are
/// kernel TCP, `quic:bbr3` is QUIC (see [`Algorithm`]). Whether this host has them is checked
/// when the run is planned.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CcList(Vec<Algorithm>);

impl CcList {
    pub fn names(&self) -> &[Algorithm] {
        &self.0
    }
}

impl Default for CcList {
    fn default() -> Self {
        CcList(vec![Algorithm::from_str("bbr").expect("a name"), Algorithm::from_str("cubic").expect("a name")])
    }
}

impl FromStr for CcList {
    type Err = Expected;
    fn from_str(list: &str) -> Result<Self, Expected> {
        let mut ccs: Vec<Algorithm> = Vec::new();
        for cc in list.split(',').map(str::trim) {
            if cc.is_empty() {
                return expected("a comma-separated list of algorithms such as bbr,cubic");
            }
            let cc: Algorithm = cc.parse().map_err(|e: AlgorithmError| Expected(e.to_string()))?;
            // `bbr` and `tcp:bbr` are the same algorithm.
            if ccs.iter().any(|c| c.same_as(&cc)) {
                return expected("each algorithm once");
            }
            ccs.push(cc);
        }
        Ok(CcList(ccs))
    }
}

impl fmt::Display for CcList {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let names: Vec<String> = self.0.iter().map(Algorithm::to_string).collect();
        f.write_str(&names.join(","))
    }
}

impl<'de> Deserialize<'de> for CcList {
    /// `cc = "bbr,cubic"` or `cc = ["bbr", "cubic"]`.
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct Names;
        impl<'de> Visitor<'de> for Names {
            type Value = CcList;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a comma-separated list of algorithms, or a list of names")
            }
            fn visit_str<E: de::Error>(self, v: &str) -> Result<CcList, E> {
                v.parse().map_err(|e: Expected| E::custom(e.0))
            }
            fn visit_seq<A: de::SeqAccess<'de>>(self, mut seq: A) -> Result<CcList, A::Error> {
                let mut names = Vec::new();
                while let Some(name) = seq.next_element::<String>()? {
                    names.push(name);
                }
                self.visit_str(&names.join(","))
            }
        }
        d.deserialize_any(Names)
    }
}

/// `--flows`: parallel connections of the compared algorithm, or a mix of algorithms sharing the
/// bottleneck in every run (`bbr:2,cubic:2`; a count of 1 may be left out). At most 64 flows.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum FlowsSpec {
    Parallel(u32),
    Mix {
        /// Each algorithm and how many flows of it, in the order given.
        groups: Vec<(Algorithm, u32)>,
        /// The mix as written (without spaces): its name in the results.
        label: String,
        /// Each group's own access RTT (`bbr:1@10ms`), added to the path's, or `None`.
        rtts: Vec<Option<u64>>,
    },
}

impl Default for FlowsSpec {
    fn default() -> Self {
        FlowsSpec::Parallel(1)
    }
}

impl FromStr for FlowsSpec {
    type Err = Expected;
    fn from_str(value: &str) -> Result<Self, Expected> {
        const ALLOWED: &str =
            "a number of flows from 1 to 64, or a mix such as bbr:2,cubic:2 (each group may have an access RTT of its own, up to 10s: bbr:1@10ms,cubic:1@60ms)";
        if let Ok(n) = value.trim().parse::<u32>() {
            return if (1..=64).contains(&n) { Ok(FlowsSpec::Parallel(n)) } else { expected(ALLOWED) };
        }
        let mut groups = Vec::new();
        let mut rtts = Vec::new();
        for part in value.split(',').map(str::trim) {
            let (part, rtt) = match part.split_once('@') {
                Some((part, rtt)) => match units::parse_duration_ns(rtt.trim()) {
                    Ok(ns) if ns > 0 && ns <= MAX_ONE_WAY_DELAY_NS => (part.trim(), Some(ns)),
                    _ => return expected(ALLOWED),
                },
                None => (part, None),
            };
            rtts.push(rtt);
            // `cc`, `cc:N`, `transport:cc` or `transport:cc:N`.
            let (cc, count) = match part.rsplit_once(':') {
                Some((cc, n)) if n.trim().chars().all(|c| c.is_ascii_digit()) => (cc.trim(), n.trim().parse::<u32>().map_err(|_| Expected::from(ALLOWED))?),
                _ => (part, 1),
            };
            if count == 0 {
                return expected(ALLOWED);
            }
            groups.push((cc.parse::<Algorithm>().map_err(|_| Expected::from(ALLOWED))?, count));
        }
        if groups.iter().map(|(_, n)| u64::from(*n)).sum::<u64>() > 64 {
            return expected(ALLOWED);
        }
        Ok(FlowsSpec::Mix { groups, label: value.replace(' ', ""), rtts })
    }
}

impl fmt::Display for FlowsSpec {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            FlowsSpec::Parallel(n) => write!(f, "{n}"),
            FlowsSpec::Mix { label, .. } => f.write_str(label),
        }
    }
}

/// `--min-effect`: the smallest relative difference the verdict calls a win, as a percentage.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct MinEffect(pub f64);

impl Default for MinEffect {
    /// 2 %: see the statistics chapter of the manual for why.
    fn default() -> Self {
        MinEffect(0.02)
    }
}

impl FromStr for MinEffect {
    type Err = Expected;
    fn from_str(value: &str) -> Result<Self, Expected> {
        const ALLOWED: &str = "a percentage from 0% to 50%, such as 2% (0 calls every significant difference a win)";
        match units::parse_percent(value) {
            Ok(x) if x <= 0.5 => Ok(MinEffect(x)),
            _ => expected(ALLOWED),
        }
    }
}

impl fmt::Display for MinEffect {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}%", self.0 * 100.0)
    }
}

/// `--expect`: `[ALG:]METRIC OP VALUE` ([`ccbench::expect`]).
#[derive(Clone, Debug, PartialEq)]
pub struct ExpectArg(pub ccbench::expect::Expectation);

impl FromStr for ExpectArg {
    type Err = Expected;
    fn from_str(s: &str) -> Result<Self, Expected> {
        s.parse().map(ExpectArg).map_err(Expected)
    }
}

/// `--runs`: a count per algorithm, or `auto` (until the verdict is decided).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RunsSpec {
    Fixed(u32),
    Auto,
}

impl Default for RunsSpec {
    fn default() -> Self {
        RunsSpec::Fixed(5)
    }
}

impl FromStr for RunsSpec {
    type Err = Expected;
    fn from_str(value: &str) -> Result<Self, Expected> {
        match value.trim() {
            "auto" => Ok(RunsSpec::Auto),
            v => match v.parse::<u32>() {
                Ok(n) if (1..=1000).contains(&n) => Ok(RunsSpec::Fixed(n)),
                _ => expected("a whole number from 1 to 1000, or auto"),
            },
        }
    }
}

impl fmt::Display for RunsSpec {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            RunsSpec::Fixed(n) => write!(f, "{n}"),
            RunsSpec::Auto => f.write_str("auto"),
        }
    }
}

/// `--direction`: which way the data flows.
#[derive(clap::ValueEnum, Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum DirectionArg {
    /// The server sends (a download).
    #[default]
    Download,
    /// The client sends (an upload).
    Upload,
}

/// `FromStr` for a clap `ValueEnum`, for presets (clap itself parses the flag).
macro_rules! from_str_by_value_enum {
    ($($t:ty),*) => {$(
        impl FromStr for $t {
            type Err = Expected;
            fn from_str(s: &str) -> Result<Self, Expected> {
                <$t as clap::ValueEnum>::from_str(s, false).map_err(|_| {
                    let names: Vec<String> = <$t as clap::ValueEnum>::value_variants()
                        .iter()
                        .filter_map(|v| clap::ValueEnum::to_possible_value(v).map(|p| p.get_name().to_string()))
                        .collect();
                    Expected(format!("one of {}", names.join(", ")))
                })
            }
        }

        impl fmt::Display for $t {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                let name = clap::ValueEnum::to_possible_value(self).map(|p| p.get_name().to_string()).unwrap_or_default();
                f.write_str(&name)
            }
        }
    )*};
}

from_str_by_value_enum!(DirectionArg, EcnArg);

deserialize_from_text!(QuicReceiverCc, FlowsSpec, RunsSpec, MinEffect, DirectionArg, EcnArg, EcnFaultSpec);

/// ECN at the TCP endpoints (`--ecn`): the namespaces' `net.ipv4.tcp_ecn`, and marking in the
/// AQMs that can mark.
#[derive(clap::ValueEnum, Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum EcnArg {
    /// The namespaces' default (`tcp_ecn` 2: never ask for ECN, answer if asked); AQMs drop.
    #[default]
    Off,
    /// Classic ECN (RFC 3168) on every connection, `tcp_ecn` 1; AQMs mark.
    On,
    /// Accurate ECN (RFC 9768) where the kernel has it, `tcp_ecn` 3; AQMs mark.
    Accecn,
}

impl EcnArg {
    pub fn tcp_ecn(self) -> ccbench_emu::TcpEcn {
        match self {
            EcnArg::Off => ccbench_emu::TcpEcn::Default,
            EcnArg::On => ccbench_emu::TcpEcn::On,
            EcnArg::Accecn => ccbench_emu::TcpEcn::AccEcn,
        }
    }
}

/// An ECN fault of the path (`--ecn-fault`, `-down`, `-up`): bleach, ce-all or drop-ect.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct EcnFaultSpec(pub ccbench_link::EcnFault);

impl FromStr for EcnFaultSpec {
    type Err = Expected;
    fn from_str(value: &str) -> Result<Self, Expected> {
        value.parse().map(EcnFaultSpec).map_err(refused)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use ccbench_link::time::Duration as D;
    use ccbench_link::Rate as LinkRate;

    fn alg(s: &str) -> Algorithm {
        s.parse().unwrap()
    }

    fn refused<T: FromStr<Err = Expected> + fmt::Debug>(s: &str) -> String {
        match s.parse::<T>() {
            Ok(v) => panic!("{s:?} should be refused, got {v:?}"),
            Err(e) => e.0,
        }
    }

    #[test]
    fn rates_have_the_link_range() {
        assert_eq!("100mbit".parse(), Ok(Rate(LinkRate::BitsPerSec(100_000_000))));
        assert_eq!("unlimited".parse(), Ok(Rate(LinkRate::Unlimited)));
        assert_eq!("10kbit".parse(), Ok(Rate(LinkRate::BitsPerSec(10_000))));
        assert_eq!(Rate::default(), "100mbit".parse().unwrap());
        assert!(refused::<Rate>("5furlongs").starts_with("a rate such as 10mbit"));
        assert!(refused::<Rate>("100mbps").contains("'bps' is ambiguous"));
        assert_eq!(refused::<Rate>("1000gbit"), "a rate between 10kbit and 100gbit, or 'unlimited'");
        assert_eq!(refused::<Rate>("9kbit"), "a rate between 10kbit and 100gbit, or 'unlimited'");
        assert!(refused::<Rate>("-5mbit").starts_with("a rate such as"));
    }

    #[test]
    fn delays_are_at_most_ten_seconds_one_way() {
        assert_eq!("10s".parse(), Ok(Delay(10_000_000_000)));
        assert_eq!(refused::<Delay>("11s"), "a delay of at most 10s one way");
        assert_eq!("40ms".parse::<Rtt>().unwrap().one_way(), Delay(20_000_000));
        assert_eq!("20s".parse::<Rtt>().unwrap().one_way(), Delay(10_000_000_000));
        assert_eq!(refused::<Rtt>("30s"), "a delay of at most 10s one way");
        assert!(refused::<Rtt>("forty").starts_with("a duration such as 40ms"));
        assert_eq!(Rtt::default(), "40ms".parse().unwrap());
    }

    #[test]
    fn losses() {
        assert_eq!("0".parse(), Ok(LossSpec(LossModel::None)));
        assert_eq!("2%".parse(), Ok(LossSpec(LossModel::Bernoulli { p: 0.02 })));
        assert_eq!(
            "gilbert:p=1%,r=25%".parse(),
            Ok(LossSpec(LossModel::GilbertElliott { p_good_to_bad: 0.01, p_bad_to_good: 0.25, loss_in_good: 0.0, loss_in_bad: 1.0 }))
        );
        assert!(refused::<LossSpec>("150%").starts_with("a percentage from 0% to 100%"));
        assert!(refused::<LossSpec>("0.5").contains(", or gilbert:p=P%"));
        assert!(refused::<LossSpec>("gilbert:p=1%").starts_with("gilbert:p=P%,r=R%"));
        assert!(refused::<LossSpec>("gilbert:p=1%,r=0%").starts_with("r > 0%"));
    }

    #[test]
    fn buffers() {
        assert_eq!("1bdp".parse(), Ok(BufferSpec::Bdp(1.0)));
        assert_eq!("100pkt".parse(), Ok(BufferSpec::Packets(100)));
        assert_eq!("64kib".parse(), Ok(BufferSpec::Bytes(65536)));
        assert_eq!("unlimited".parse(), Ok(BufferSpec::Unlimited));
        for bad in ["0bdp", "0", "lots"] {
            assert_eq!(refused::<BufferSpec>(bad), "a buffer such as 1bdp, 0.5bdp, 100pkt, 256kib, 1mb or 'unlimited'");
        }
    }

    #[test]
    fn link_stages() {
        assert_eq!("2ms,reorder".parse(), Ok(JitterSpec(Jitter::Uniform { max_ns: D::from_nanos(2_000_000), reorder: true })));
        assert_eq!("normal:1ms".parse(), Ok(JitterSpec(Jitter::Normal { sd_ns: D::from_nanos(1_000_000), reorder: false })));
        assert_eq!("0".parse(), Ok(JitterSpec(Jitter::None)));
        assert_eq!(refused::<JitterSpec>("2 parsecs"), "a jitter such as 2ms, normal:1ms, or 2ms,reorder");
        assert_eq!(refused::<JitterSpec>("20s"), "a jitter of at most 10s");
        assert_eq!("1%:3ms".parse(), Ok(ReorderSpec(Reorder::Time { p: 0.01, by_ns: D::from_nanos(3_000_000) })));
        assert_eq!("2%:4pkt".parse(), Ok(ReorderSpec(Reorder::Packets { p: 0.02, packets: 4 })));
        assert_eq!("0".parse(), Ok(ReorderSpec(Reorder::None)));
        for bad in ["1%", "1%:0ms", "200%:3ms", "1%:20s"] {
            assert_eq!(
                refused::<ReorderSpec>(bad),
                "a reordering P%:DISPLACEMENT such as 1%:3ms or 1%:5pkt (a share of packets from 0% to 100%, held back by more than 0 and up to 10s or 1000 packets), or 0",
                "{bad}"
            );
        }
        assert_eq!("10mbit:64kib".parse(), Ok(PolicerSpec(Policer { rate_bps: 10_000_000, burst_bytes: 65_536 })));
        assert_eq!("10mbit".parse(), Ok(PolicerSpec(Policer { rate_bps: 10_000_000, burst_bytes: 12_500 })));
        assert_eq!(refused::<PolicerSpec>("fast"), "a policer RATE[:BURST] such as 10mbit or 10mbit:64kib");
        assert_eq!(refused::<PolicerSpec>("10mbit:1kb"), "a burst of at least one 1500-byte packet");
        assert_eq!("droptail".parse(), Ok(AqmSpec(Aqm::DropTail)));
        assert_eq!("codel".parse(), Ok(AqmSpec(Aqm::codel())));
        assert_eq!(
            "codel:target=10ms".parse(),
            Ok(AqmSpec(Aqm::Codel(link::Codel { target_ns: D::from_nanos(10_000_000), interval_ns: D::from_nanos(100_000_000), ..Default::default() })))
        );
        assert_eq!("pie".parse(), Ok(AqmSpec(Aqm::Pie(link::Pie::default()))));
        assert_eq!("fq_codel:flows=64".parse(), Ok(AqmSpec(Aqm::FqCodel(link::FqCodel { flows: 64, ..Default::default() }))));
        for bad in ["red", "droptail:x=1"] {
            assert_eq!(refused::<AqmSpec>(bad), Aqm::allowed(), "{bad}");
        }
        for bad in ["codel:target=1", "codel:interval=0"] {
            assert!(refused::<AqmSpec>(bad).starts_with("codel[:target=5ms,interval=100ms,ecn=off,ce_threshold=off] ("), "{bad}");
        }
        assert_eq!(
            refused::<AqmSpec>("pie:tupdate=0"),
            "pie[:target=15ms,tupdate=15ms,alpha=0.125,beta=1.25,max_burst=150ms,ecn=off,mark_ecnth=0.1] (tupdate must be at least 1ms)"
        );
        assert_eq!("9000".parse(), Ok(Mtu(9000)));
        assert_eq!(refused::<Mtu>("100"), "an MTU from 576 to 9000 bytes");
    }

    #[test]
    fn scheduled_changes() {
        let c: AtChange = "5s:rate=20mbit,loss=gilbert:p=1%,r=25%".parse().unwrap();
        assert_eq!(c.down.at_ns, ccbench_link::time::Instant::from_nanos(5_000_000_000));
        assert_eq!(c.down.rate, Some(LinkRate::BitsPerSec(20_000_000)));
        assert_eq!(c.up.rate, c.down.rate);
        assert!(matches!(c.up.loss, Some(LossModel::GilbertElliott { .. })));
        let c: AtChange = "9s:delay-down=30ms,rtt=10ms".parse().unwrap();
        assert_eq!((c.down.delay_ns, c.up.delay_ns), (Some(D::from_nanos(5_000_000)), Some(D::from_nanos(5_000_000))), "the later key wins");
        let c: AtChange = "1s:rate-up=1mbit".parse().unwrap();
        assert_eq!((c.down.rate, c.up.rate), (None, Some(LinkRate::BitsPerSec(1_000_000))));
        assert!(refused::<AtChange>("5s").starts_with("TIME:KEY=VALUE"));
        assert!(refused::<AtChange>("5s:color=red").starts_with("TIME:KEY=VALUE"));
        assert_eq!(refused::<AtChange>("5s:rtt=30s"), "a delay of at most 10s one way");
        assert!(refused::<AtChange>("5s:rate=fast").starts_with("a rate such as"));
    }

    #[test]
    fn traces_are_read_when_parsed() {
        assert!(refused::<TraceFile>("/nonexistent.trace").starts_with("a readable Mahimahi trace file"));
        let dir = std::env::temp_dir().join(format!("ccbench-values-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let good = dir.join("ok.trace");
        std::fs::write(&good, "1\n2\n").unwrap();
        let t: TraceFile = good.to_str().unwrap().parse().unwrap();
        assert_eq!(t.rate.name(), "ok.trace");
        let bad = dir.join("bad.trace");
        std::fs::write(&bad, "2\n1\n").unwrap();
        assert!(refused::<TraceFile>(bad.to_str().unwrap()).starts_with("a Mahimahi trace (one millisecond"));
        let _ = std::fs::remove_dir_all(dir);
    }

    #[test]
    fn durations_with_their_flags_ranges() {
        assert_eq!("15s".parse(), Ok(RunDuration(15_000_000_000)));
        assert_eq!(refused::<RunDuration>("0s"), "a duration between 1s and 60min");
        assert_eq!(refused::<RunDuration>("61min"), "a duration between 1s and 60min");
        assert_eq!(refused::<Timeout>("0.5s"), "at least 1s");
        assert_eq!(refused::<SampleInterval>("5s"), "an interval between 1ms and 1s");
        assert_eq!(refused::<EmulatorBatch>("2ms"), "at most 1ms, or auto");
        assert_eq!(refused::<EmulatorBatch>("soon"), "a duration of at most 1ms, or auto");
        assert_eq!("0".parse(), Ok(EmulatorBatch::Fixed(0)));
        assert_eq!("auto".parse(), Ok(EmulatorBatch::Auto));
        assert_eq!((EmulatorBatch::Auto.to_string(), EmulatorBatch::Fixed(250_000).to_string()), ("auto".into(), "250us".into()));
        assert!(refused::<Stagger>("3 fortnights").starts_with("a duration such as"));
        assert_eq!((Stagger(3_000_000_000).to_string(), Stagger(0).to_string(), Stagger(250_000).to_string()), ("3s".into(), "0s".into(), "250us".into()));
        assert_eq!(RunDuration::default(), "10s".parse().unwrap());
        assert_eq!(Timeout::default(), "600s".parse().unwrap());
        assert_eq!(SampleInterval::default(), "10ms".parse().unwrap());
        assert_eq!(EmulatorBatch::default(), "25us".parse().unwrap());
        assert_eq!("4ms".parse(), Ok(Aggregate(4_000_000)));
        assert_eq!("1s".parse(), Ok(Aggregate(NS_PER_S)));
        for bad in ["0", "0ms", "500ns", "1.5s", "2s"] {
            assert_eq!(refused::<Aggregate>(bad), "an aggregation period between 1us and 1s, such as 4ms", "{bad}");
        }
        for bad in ["-4ms", "often", "4 parsecs"] {
            assert!(refused::<Aggregate>(bad).starts_with("a duration such as"), "{bad}");
        }
    }

    #[test]
    fn run_values() {
        assert_eq!(refused::<MaxRuns>("0"), "a whole number from 1 to 1000");
        assert_eq!(refused::<DirectionArg>("sideways"), "one of download, upload");
    }

    #[test]
    fn algorithms_flows_and_runs() {
        assert_eq!("bbr, cubic".parse::<CcList>().unwrap().names(), ["bbr", "cubic"]);
        assert_eq!(CcList::default(), "bbr,cubic".parse().unwrap());
        assert_eq!("tcp:bbr,quic:bbr3,quic:cubic".parse::<CcList>().unwrap().names(), ["tcp:bbr", "quic:bbr3", "quic:cubic"]);
        assert_eq!(refused::<CcList>("bbr,tcp:bbr"), "each algorithm once");
        assert_eq!("quic:cubic".parse::<CcList>().unwrap().names(), ["quic:cubic"], "a QUIC name differs from the kernel's");
        assert_eq!(
            "quic:bbr3:1,tcp:cubic:1,quic:cubic".parse(),
            Ok(FlowsSpec::Mix {
                groups: vec![(alg("quic:bbr3"), 1), (alg("tcp:cubic"), 1), (alg("quic:cubic"), 1)],
                rtts: vec![None; 3],
                label: "quic:bbr3:1,tcp:cubic:1,quic:cubic".into()
            })
        );
        assert_eq!(refused::<CcList>("bbr,bbr"), "each algorithm once");
        // An unknown transport is refused as the flag is read, before the host is asked.
        assert!(refused::<CcList>("udp:cubic,bbr").starts_with("a transport tcp: or quic: before the algorithm, not udp:"));
        assert!(refused::<FlowsSpec>("udp:cubic:1,bbr").starts_with("a number of flows"));
        assert_eq!(refused::<CcList>(","), "a comma-separated list of algorithms such as bbr,cubic");
        assert_eq!("4".parse(), Ok(FlowsSpec::Parallel(4)));
        assert_eq!(
            "bbr:2, cubic".parse(),
            Ok(FlowsSpec::Mix { groups: vec![(alg("bbr"), 2), (alg("cubic"), 1)], label: "bbr:2,cubic".into(), rtts: vec![None, None] })
        );
        assert_eq!(
            "bbr:1@10ms,cubic:1@60ms,reno".parse(),
            Ok(FlowsSpec::Mix {
                groups: vec![(alg("bbr"), 1), (alg("cubic"), 1), (alg("reno"), 1)],
                label: "bbr:1@10ms,cubic:1@60ms,reno".into(),
                rtts: vec![Some(10_000_000), Some(60_000_000), None]
            })
        );
        for bad in ["bbr:1@", "bbr:1@0ms", "bbr:1@fast", "bbr:1@20s", "@10ms"] {
            assert!(bad.parse::<FlowsSpec>().is_err(), "{bad}");
        }
        for bad in ["0", "65", "bbr:0", "bbr:40,cubic:40", ":2", "bbr:x"] {
            assert_eq!(refused::<FlowsSpec>(bad), "a number of flows from 1 to 64, or a mix such as bbr:2,cubic:2 (each group may have an access RTT of its own, up to 10s: bbr:1@10ms,cubic:1@60ms)", "{bad}");
        }
        assert_eq!("auto".parse(), Ok(RunsSpec::Auto));
        assert_eq!("7".parse(), Ok(RunsSpec::Fixed(7)));
        assert_eq!(refused::<RunsSpec>("many"), "a whole number from 1 to 1000, or auto");
        assert_eq!(refused::<RunsSpec>("0"), "a whole number from 1 to 1000, or auto");
    }

    #[test]
    fn presets_read_values_as_their_flags_do() {
        #[derive(Deserialize, Debug)]
        #[serde(deny_unknown_fields)]
        struct T {
            runs: Option<RunsSpec>,
            loss: Option<LossSpec>,
            cc: Option<CcList>,
            #[serde(default, deserialize_with = "one_or_many")]
            at: Vec<AtChange>,
        }
        let t: T = toml::from_str("runs = 4\nloss = 0\ncc = [\"bbr\", \"cubic\"]\nat = \"1s:rate=1mbit\"").unwrap();
        assert_eq!((t.runs, t.loss, t.cc), (Some(RunsSpec::Fixed(4)), Some(LossSpec(LossModel::None)), Some(CcList::default())));
        assert_eq!(t.at.len(), 1);
        let t: T = toml::from_str("runs = \"auto\"\nat = [\"1s:rate=1mbit\", \"2s:loss=1%\"]").unwrap();
        assert_eq!((t.runs, t.at.len()), (Some(RunsSpec::Auto), 2));
        let e = toml::from_str::<T>("loss = \"150%\"").unwrap_err();
        assert!(e.message().starts_with("a percentage from 0% to 100%"), "{}", e.message());
        let e = toml::from_str::<T>("cc = [\"bbr\", \"bbr\"]").unwrap_err();
        assert_eq!(e.message(), "each algorithm once");
        let e = toml::from_str::<T>("runs = true").unwrap_err();
        assert_eq!(e.message(), "a whole number from 1 to 1000, or auto");
    }
}

/// One shard of a sweep: `index` of `count`, 0-based.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize, Deserialize)]
pub struct Shard {
    pub index: u32,
    pub count: u32,
}

impl FromStr for Shard {
    type Err = Expected;
    fn from_str(s: &str) -> Result<Self, Expected> {
        let bad = || Expected("a shard I/N, 0-based, such as 0/4 (the first of four) … 3/4 (the last)".into());
        let (i, n) = s.split_once('/').ok_or_else(bad)?;
        let (index, count): (u32, u32) = (i.trim().parse().map_err(|_| bad())?, n.trim().parse().map_err(|_| bad())?);
        if count == 0 || index >= count {
            return Err(bad());
        }
        Ok(Shard { index, count })
    }
}

impl std::fmt::Display for Shard {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}/{}", self.index, self.count)
    }
}

impl Shard {
    /// Whether the cell at `position` (in the order of the cells by id) is this shard's.
    pub fn takes(&self, position: usize) -> bool {
        position % self.count as usize == self.index as usize
    }
}
