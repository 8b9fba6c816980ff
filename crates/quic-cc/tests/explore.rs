mod sim;
use sim::*;
use std::time::Duration;
use ccbench_quic_cc::BbrVersion;

#[test]
#[ignore]
fn explore() {
    for v in [BbrVersion::V3, BbrVersion::V2] {
        for (buf, loss) in [(8.0, 0.0), (8.0, 0.01), (1.0, 0.01), (8.0, 0.02), (8.0, 0.03), (8.0, 0.05), (1e6, 0.0)] {
            for seed in [1u64, 2] {
            let mut link = Link::new(70.0, 6, buf).with_loss(loss);
            link.seed = seed;
            let mut s = Sim::new(v, link);
            s.run_for(Duration::from_secs(30));
            let hi_min = s.samples.iter().filter(|x| x.t > Duration::from_secs(5)).filter_map(|x| x.snap.inflight_hi).min();
            println!("{v:?} buf {buf} loss {loss} seed {seed}: util {:.3} rtt p50 {:?} p95 {:?} hi_min {:?} bdp {:.0} probe_rtt {}", s.utilization(Duration::from_secs(5), Duration::from_secs(30)), s.rtt_quantile(Duration::from_secs(5), 0.5), s.rtt_quantile(Duration::from_secs(5), 0.95), hi_min, link.bdp(), s.transitions().iter().filter(|t| t.2 == ccbench_quic_cc::BbrState::ProbeRtt).count());
            }
        }
    }
}
