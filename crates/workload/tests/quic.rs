//! QUIC flows through the emulator, driven through the library API: the controller is read back
//! from both ends, a mismatch between them is reported, every connection is sampled, and a file
//! arrives whole. (Needs root; under `CI=true` a missing root is a failure.)

mod common;

use std::sync::atomic::AtomicBool;
use std::time::Instant;

use ccbench_emu::SERVER_ADDR;
use ccbench_workload::{Amount, BulkResult, BulkSpec, Direction, MemorySeries, MixFlow, RunContext, SocketId, Transport, Workload};
use common::{have_root, lock, start_path, LINK_MBIT};

fn spec(direction: Direction, amount: Amount, cc: &str, flows: u32) -> BulkSpec {
    common::bulk_spec(direction, amount, cc, flows, 5301)
}

fn run(spec: &BulkSpec) -> (BulkResult, MemorySeries) {
    let epoch = Instant::now();
    let path = start_path(10, epoch);
    let stop = AtomicBool::new(false);
    let series = MemorySeries::default();
    let r = spec.run(&RunContext::new(&path.client, &path.server, SERVER_ADDR, epoch, &stop).with_series(&series)).expect("QUIC bulk run");
    (r, series)
}

#[test]
fn quic_cubic_download_fills_the_link_and_is_sampled() {
    if !have_root() {
        return;
    }
    let _g = lock();
    let spec = spec(Direction::Download, Amount::Seconds(2.0), "quic:cubic", 2);
    let (r, series) = run(&spec);
    assert_eq!(r.flows.len(), 2, "two streams, two flows");
    for f in &r.flows {
        assert_eq!(f.error, None, "flow {}", f.id);
        assert!(f.completed);
        assert_eq!(
            (f.sending.transport, f.sending.cc_read_back.as_str(), f.sending.cc_receiver.as_deref()),
            (Transport::Quic, "quic:cubic", Some("quic:cubic"))
        );
        assert_eq!(f.sending.warning, None);
    }
    assert_eq!(r.flows[0].client_port, r.flows[1].client_port, "N streams share one connection");
    // QUIC payload per 1500-byte packet is below TCP's (UDP + QUIC headers, ~1452 of 1500 at
    // most): under the link, and above half of it once slow start is over.
    let link_bps = LINK_MBIT as f64 * 1e6;
    assert!(r.goodput_bps < link_bps, "{} bit/s above the link rate", r.goodput_bps);
    assert!(r.goodput_bps > 0.5 * link_bps, "{} bit/s is under half the link", r.goodput_bps);
    let samples = series.quic_samples(SocketId::Flow(0));
    assert!(samples.len() > 100 && samples.len() < 300, "{} samples in 2 s at 10 ms", samples.len());
    let last = samples.last().unwrap();
    // A 20 ms RTT path: the RTT figures are at least the propagation delay.
    assert!(last.min_rtt_us >= 19_000 && last.rtt_us >= last.min_rtt_us && last.latest_rtt_us >= 19_000, "{last:?}");
    assert!(last.cwnd_bytes > 0 && last.mtu >= 1200 && last.bytes_sent > last.bytes_acked / 2, "{last:?}");
    assert!(samples.iter().any(|s| s.bytes_in_flight > 0 && s.delivery_rate_bps > 0));
    eprintln!("quic:cubic, 2 streams, 2 s: {:.1} Mbit/s", r.goodput_bps / 1e6);
}

#[test]
fn a_receiver_on_another_algorithm_is_read_back_and_warned_about() {
    if !have_root() {
        return;
    }
    let _g = lock();
    // Scenario 5's mix-up, on purpose: the server sends with BBR, the client runs CUBIC.
    let spec = BulkSpec { quic_receiver_cc: Some("cubic".into()), ..spec(Direction::Download, Amount::Seconds(0.5), "quic:bbr3", 1) };
    let (r, _) = run(&spec);
    let f = &r.flows[0];
    assert_eq!((f.sending.cc_read_back.as_str(), f.sending.cc_receiver.as_deref()), ("quic:bbr3", Some("quic:cubic")));
    let warning = f.sending.warning.as_deref().expect("a warning for the mismatch");
    assert!(warning.contains("quic:bbr3") && warning.contains("quic:cubic"), "{warning}");
}

#[test]
fn a_quic_file_upload_mix_arrives_whole_on_separate_connections() {
    if !have_root() {
        return;
    }
    let _g = lock();
    let mix = vec![
        MixFlow { cc: "quic:bbr3".parse().unwrap(), start_s: 0.0, client_port: None },
        MixFlow { cc: "quic:newreno".parse().unwrap(), start_s: 0.0, client_port: None },
    ];
    let spec = BulkSpec { mix, cc: Default::default(), ..spec(Direction::Upload, Amount::Bytes(2_000_000), "quic:bbr3", 2) };
    let (r, _) = run(&spec);
    for (f, cc) in r.flows.iter().zip(["quic:bbr3", "quic:newreno"]) {
        assert_eq!(f.error, None, "flow {}", f.id);
        assert!(f.completed && f.bytes_received == 2_000_000, "flow {}: {} bytes", f.id, f.bytes_received);
        assert_eq!(f.sending.cc_read_back, cc);
        assert!(f.completion_time_s.unwrap() > 0.02, "at least one RTT");
    }
    assert_ne!(r.flows[0].client_port, r.flows[1].client_port, "one connection per flow of a mix");
}
