//! Goodput share of the link, per seed, on the virtual-clock bottleneck the tests use:
//! `cargo run --release -p ccbench-quic-cc --example bbr_sim_seeds -- VERSION MBITS RTT_MS
//! BUFFER_BDP LOSS SECONDS SEEDS` (e.g. `bbr2 50 20 1 0.01 4 8`). Deterministic: the same
//! build prints the same figures. For quick what-ifs on the controller; the manual's (docs/quic.md)
//! figures come from real runs of `ccbench run`.

#[path = "../tests/sim/mod.rs"]
mod sim;

use std::time::Duration;

use ccbench_quic_cc::BbrVersion;
use sim::{Link, Sim};

const USAGE: &str = "usage: bbr_sim_seeds VERSION(bbr2|bbr3) MBITS RTT_MS BUFFER_BDP LOSS SECONDS SEEDS";

fn arg<T: std::str::FromStr>(args: &[String], i: usize, name: &str, allowed: &str) -> T {
    let Some(raw) = args.get(i) else {
        eprintln!("{USAGE}");
        std::process::exit(2);
    };
    raw.parse().unwrap_or_else(|_| {
        eprintln!("bbr_sim_seeds: {name} {raw:?} is not {allowed}");
        std::process::exit(2);
    })
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let version = match args.first().map(String::as_str) {
        Some("bbr2") => BbrVersion::V2,
        Some("bbr3") => BbrVersion::V3,
        Some(other) => {
            eprintln!("bbr_sim_seeds: VERSION {other:?} is not one of bbr2, bbr3");
            std::process::exit(2);
        }
        None => {
            eprintln!("{USAGE}");
            std::process::exit(2);
        }
    };
    let mbits: f64 = arg(&args, 1, "MBITS", "a rate in Mbit/s");
    let rtt_ms: u64 = arg(&args, 2, "RTT_MS", "a whole number of milliseconds");
    let buffer_bdp: f64 = arg(&args, 3, "BUFFER_BDP", "a number of BDPs");
    let loss: f64 = arg(&args, 4, "LOSS", "a fraction (0.01 = 1 %)");
    let seconds: f64 = arg(&args, 5, "SECONDS", "a duration in seconds");
    let seeds: u64 = arg(&args, 6, "SEEDS", "a whole number");
    if mbits <= 0.0 || rtt_ms == 0 || buffer_bdp <= 0.0 || !(0.0..1.0).contains(&loss) || seconds <= 0.0 || seeds == 0 {
        eprintln!("bbr_sim_seeds: rate, RTT, buffer, duration and seeds must be positive and loss in [0, 1)");
        std::process::exit(2);
    }
    let mut shares = Vec::new();
    for seed in 1..=seeds {
        let mut link = Link::new(mbits, rtt_ms, buffer_bdp).with_loss(loss);
        link.seed = seed;
        let mut sim = Sim::new(version, link);
        let end = Duration::from_secs_f64(seconds);
        sim.run_for(end);
        shares.push(sim.utilization(Duration::ZERO, end));
    }
    let per_seed: Vec<String> = shares.iter().map(|u| format!("{:.0} %", u * 100.0)).collect();
    let mut sorted = shares.clone();
    sorted.sort_by(f64::total_cmp);
    let n = sorted.len();
    let median = if n % 2 == 1 { sorted[n / 2] } else { (sorted[n / 2 - 1] + sorted[n / 2]) / 2.0 };
    println!(
        "{version} {mbits} Mbit/s, {rtt_ms} ms, {buffer_bdp} BDP, loss {:.1} %, {seconds} s: median {:.0} % of the link; per seed {}",
        loss * 100.0,
        median * 100.0,
        per_seed.join(", ")
    );
}
