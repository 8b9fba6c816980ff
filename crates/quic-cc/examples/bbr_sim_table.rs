//! Prints how the controller does on the virtual-clock bottleneck the tests use, as a
//! Markdown table: `cargo run --release -p ccbench-quic-cc --example bbr_sim_table`.
//! Deterministic: the same build prints the same table.

#[path = "../tests/sim/mod.rs"]
mod sim;

use std::time::Duration;

use ccbench_quic_cc::{BbrState, BbrVersion};
use sim::{Link, Sim};

fn main() {
    println!("| variant | link | buffer | random loss | goodput / link | RTT p50 | RTT p95 | min inflight_hi / BDP | ProbeRTTs |");
    println!("|---|---|---|---|---|---|---|---|---|");
    let from = Duration::from_secs(5);
    let to = Duration::from_secs(30);
    for version in [BbrVersion::V3, BbrVersion::V2] {
        for (buffer_bdp, loss) in [(8.0, 0.0), (1e6, 0.0), (1.0, 0.0), (0.3, 0.0), (8.0, 0.01), (8.0, 0.02), (8.0, 0.05)] {
            let link = Link::new(70.0, 6, buffer_bdp).with_loss(loss);
            let mut s = Sim::new(version, link);
            s.run_for(to);
            let hi =
                s.samples_between(from, to).filter_map(|x| x.snap.inflight_hi).min().map_or("∞".to_string(), |h| format!("{:.2}", h as f64 / link.bdp()));
            let probe_rtts = s.transitions().iter().filter(|t| t.2 == BbrState::ProbeRtt).count();
            let buffer = if buffer_bdp > 1e3 { "unlimited".to_string() } else { format!("{buffer_bdp} BDP") };
            println!(
                "| {version:?} | 70 Mbit/s, 6 ms | {buffer} | {:.0} % | {:.3} | {:.2} ms | {:.2} ms | {hi} | {probe_rtts} in 30 s |",
                loss * 100.0,
                s.utilization(from, to),
                s.rtt_quantile(from, 0.5).as_secs_f64() * 1e3,
                s.rtt_quantile(from, 0.95).as_secs_f64() * 1e3,
            );
        }
    }
}
