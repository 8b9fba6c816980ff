//! Shared by the workload tests: the root check, a global lock, the emulated path, the specs the
//! TCP and QUIC tests of one workload share (each on a port of its own), and generated garbage
//! for the parsers.
#![allow(dead_code)]

use std::sync::{Mutex, MutexGuard};
use std::time::Instant;

use ccbench_emu::{EmulatedPath, PathSpec};
use ccbench_link::{Buffer, DirectionConfig, LossModel, Rate};
use ccbench_workload::{Amount, BulkSpec, Direction, ObjectMethod, ObjectsSpec};

pub const LINK_MBIT: u64 = 50;
/// TCP payload per 1500-byte IP packet with timestamps (1500 - 20 IP - 32 TCP).
pub const PAYLOAD_FRACTION: f64 = 1448.0 / 1500.0;

/// `flows` bulk flows of `cc` (`quic:` for QUIC) on `port`.
pub fn bulk_spec(direction: Direction, amount: Amount, cc: &str, flows: u32, port: u16) -> BulkSpec {
    BulkSpec {
        flows,
        direction,
        amount,
        cc: cc.parse().unwrap(),
        mix: Vec::new(),
        port,
        sample_interval_us: 10_000,
        timeout_s: 20.0,
        quic_receiver_cc: None,
        knobs: Default::default(),
    }
}

/// An objects load of `cc` (`quic:` for QUIC) on `port`.
pub fn objects_spec(method: ObjectMethod, cc: &str, requests: u32, object_bytes: u64, concurrency: u32, port: u16) -> ObjectsSpec {
    ObjectsSpec {
        requests,
        object_bytes,
        concurrency,
        method,
        cc: cc.parse().unwrap(),
        port,
        sample_interval_us: 10_000,
        timeout_s: 30.0,
        quic_receiver_cc: None,
    }
}

static SERIAL: Mutex<()> = Mutex::new(());

pub fn lock() -> MutexGuard<'static, ()> {
    SERIAL.lock().unwrap_or_else(|e| e.into_inner())
}

/// True when the test may go on; under `CI=true` a missing root is a failure, not a skip.
pub fn have_root() -> bool {
    // SAFETY: geteuid has no preconditions.
    let root = unsafe { libc::geteuid() } == 0;
    if !root {
        let ci = std::env::var("CI").map(|v| v == "true").unwrap_or(false);
        assert!(!ci, "namespace tests need root under CI=true");
        eprintln!("skipping: not root");
    }
    root
}

/// 50 Mbit/s each way with `one_way_ms` of delay each way (RTT = 2 × one_way_ms) and a
/// drop-tail buffer of two bandwidth-delay products.
pub fn start_path(one_way_ms: u64, epoch: Instant) -> EmulatedPath {
    let bdp_bytes = LINK_MBIT * 1_000_000 / 8 * (2 * one_way_ms) / 1000;
    let dir = DirectionConfig {
        rate: Rate::mbps(LINK_MBIT),
        delay_ns: ccbench_link::time::Duration::from_nanos(one_way_ms * 1_000_000),
        loss: LossModel::None,
        buffer: Buffer::Bytes((2 * bdp_bytes).max(64 * 1024)),
        ..DirectionConfig::default()
    };
    // Built through serde so that every other knob of the emulator keeps its own default.
    let spec: PathSpec = serde_json::from_value(serde_json::json!({
        "down": dir, "up": dir, "mtu": 1500, "seed": 7, "sample_interval_us": 10_000,
    }))
    .expect("a path spec with the emulator's defaults");
    EmulatedPath::start(&spec, epoch).expect("start the emulated path")
}

/// A stand-in for the fuzzer on stable Rust, for an entry point that reads bytes from the
/// network or another process: random inputs, then each seed cut short at every length, then
/// each seed with a few bytes changed, mostly to bytes of `pick` (the format's own characters
/// reach deeper than random bytes). From a fixed splitmix64 sequence, so a failure reproduces.
pub struct Garbage<'a> {
    /// Where the sequence starts.
    pub rng: u64,
    /// How many random inputs, each shorter than `max_len` bytes.
    pub random: usize,
    pub max_len: u64,
    pub seeds: &'a [&'a [u8]],
    /// How many changed copies of each seed, each with 1 to `max_changes` bytes changed.
    pub mutations: usize,
    pub max_changes: u64,
    pub pick: &'a [u8],
}

impl Garbage<'_> {
    /// Calls `target(input, n)` with each input; `n` is for a target that reads more than the
    /// bytes (how to cut them, say): the length a seed was cut to, or else a fresh random number.
    pub fn feed(&self, mut target: impl FnMut(&[u8], u64)) {
        let mut state = self.rng;
        let mut next = move || {
            state = state.wrapping_add(0x9E37_79B9_7F4A_7C15);
            let mut z = state;
            z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
            z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
            z ^ (z >> 31)
        };
        for _ in 0..self.random {
            let len = next() % self.max_len;
            let random: Vec<u8> = (0..len).map(|_| next() as u8).collect();
            target(&random, next());
        }
        for seed in self.seeds {
            for cut in 0..=seed.len() {
                target(&seed[..cut], cut as u64);
            }
            for _ in 0..self.mutations {
                let mut m = seed.to_vec();
                for _ in 0..1 + next() % self.max_changes {
                    let i = (next() as usize) % m.len();
                    m[i] = if next() % 4 == 0 { next() as u8 } else { self.pick[(next() as usize) % self.pick.len()] };
                }
                target(&m, next());
            }
        }
    }
}
