//! Shared by the namespace tests: the root check, a global lock and the emulated path.
#![allow(dead_code)]

use std::sync::{Mutex, MutexGuard};
use std::time::Instant;

use ccbench_emu::{EmulatedPath, PathSpec};
use ccbench_link::{Buffer, DirectionConfig, LossModel, Rate};

pub const LINK_MBIT: u64 = 50;
/// TCP payload per 1500-byte IP packet with timestamps (1500 - 20 IP - 32 TCP).
pub const PAYLOAD_FRACTION: f64 = 1448.0 / 1500.0;

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
