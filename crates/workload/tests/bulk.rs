//! Bulk and file transfers over an emulated 50 Mbit/s path (real namespaces, real kernel TCP).
//!
//! They need root. Outside CI they skip without it; under `CI=true` they fail instead.
//! One at a time (a global lock): throughput on a 2-core machine would otherwise be shared.

mod common;

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use ccbench_emu::SERVER_ADDR;
use ccbench_workload::{Amount, BulkResult, BulkSpec, Direction, MeasureHook, MemorySeries, MixFlow, RunContext, Side, SocketId, Workload, WorkloadError};
use common::{have_root, lock, start_path, LINK_MBIT, PAYLOAD_FRACTION};

fn spec(direction: Direction, amount: Amount, cc: &str, flows: u32) -> BulkSpec {
    common::bulk_spec(direction, amount, cc, flows, 5201)
}

/// Every call the workload makes to its hook, in order.
#[derive(Default)]
struct Recorder(Mutex<Vec<(&'static str, Instant)>>);

impl MeasureHook for Recorder {
    fn open(&self, at: Instant) {
        self.0.lock().unwrap().push(("open", at));
    }
    fn extend(&self, at: Instant) {
        self.0.lock().unwrap().push(("extend", at));
    }
    fn close(&self, at: Instant) {
        self.0.lock().unwrap().push(("close", at));
    }
}

/// The result, the hook's calls and the series the run handed over.
fn run(spec: &BulkSpec, one_way_ms: u64) -> (BulkResult, Vec<(&'static str, Instant)>, MemorySeries) {
    let epoch = Instant::now();
    let path = start_path(one_way_ms, epoch);
    let stop = AtomicBool::new(false);
    let hook = Recorder::default();
    let series = MemorySeries::default();
    let r = spec.run(&RunContext::new(&path.client, &path.server, SERVER_ADDR, epoch, &stop).with_hook(&hook).with_series(&series)).expect("bulk run");
    (r, hook.0.into_inner().unwrap(), series)
}

/// Every flow ran the requested algorithm on its sending socket and was sampled throughout.
fn check_flows(r: &BulkResult, series: &MemorySeries, spec: &BulkSpec, seconds: f64) {
    assert!(!r.interrupted);
    // Series of these flows and of nothing else.
    let ids: Vec<u32> = r.flows.iter().map(|f| f.id).collect();
    assert_eq!(series.tcp.lock().unwrap().keys().copied().collect::<Vec<_>>(), ids.iter().map(|&i| SocketId::Flow(i)).collect::<Vec<_>>());
    assert_eq!(series.received.lock().unwrap().keys().copied().collect::<Vec<_>>(), ids);
    assert_eq!(r.flows.len(), spec.plan().len());
    let interval_s = spec.sample_interval_us as f64 / 1e6;
    for (f, plan) in r.flows.iter().zip(spec.plan()) {
        assert_eq!(f.error, None, "flow {}", f.id);
        assert!(f.completed, "flow {} incomplete", f.id);
        assert_eq!(f.sender, spec.direction.sender());
        assert_eq!(f.sending.cc_requested, plan.cc.to_string());
        assert_eq!(f.sending.cc_read_back, plan.cc.to_string(), "flow {}", f.id);
        assert!(f.sending.final_tcp_info.is_some(), "flow {}: no final TCP_INFO", f.id);
        // One sample per round from the start to the end, none before the transfer started.
        let samples = series.samples(SocketId::Flow(f.id));
        let rounds = seconds / interval_s;
        assert!((samples.len() as f64) > 0.5 * rounds && (samples.len() as f64) < 1.5 * rounds + 5.0, "flow {}: {} samples", f.id, samples.len());
        assert!(samples.first().unwrap().t_us >= r.start_us, "flow {}: a sample before the start", f.id);
        assert!(samples.windows(2).all(|w| w[0].t_us <= w[1].t_us));
        // The receiver's count at the same rounds: cumulative, up to what it received.
        let received = series.received_of(f.id);
        assert_eq!(received.len(), samples.len(), "flow {}: one goodput point per round", f.id);
        assert!(received.iter().zip(&samples).all(|(p, s)| p.t_us == s.t_us), "flow {}: goodput points and samples at the same instants", f.id);
        assert!(received.windows(2).all(|w| w[0].bytes <= w[1].bytes));
        assert!(received.last().unwrap().bytes <= f.bytes_received);
        assert!(received.last().unwrap().bytes > 0, "flow {}: the goodput points never saw a byte", f.id);
    }
}

#[test]
fn timed_download_fills_the_link_and_is_sampled_throughout() {
    if !have_root() {
        return;
    }
    let _g = lock();
    let spec = spec(Direction::Download, Amount::Seconds(2.0), "cubic", 2);
    let (r, hook, series) = run(&spec, 10);
    check_flows(&r, &series, &spec, 2.0);
    assert!((r.elapsed_s - 2.0).abs() < 1e-9, "{}", r.elapsed_s);
    let link_bps = LINK_MBIT as f64 * 1e6;
    assert!(r.goodput_bps < link_bps * PAYLOAD_FRACTION * 1.01, "{} bit/s above the payload rate", r.goodput_bps);
    assert!(r.goodput_bps > 0.5 * link_bps, "{} bit/s is under half the link", r.goodput_bps);
    // The span: opened at the start, closed at once at the end of the duration, extended while
    // the flows work.
    assert_eq!(hook[0].0, "open");
    assert_eq!(hook[1], ("close", hook[0].1 + Duration::from_secs(2)));
    assert!(hook[2..].iter().all(|(what, at)| *what == "extend" && *at >= hook[0].1));
    assert!(hook.len() > 100, "{} hook calls", hook.len());
    eprintln!("2 cubic flows, 2 s: {:.1} Mbit/s", r.goodput_bps / 1e6);
}

#[test]
fn upload_samples_carry_bbr_model() {
    if !have_root() {
        return;
    }
    let _g = lock();
    let spec = spec(Direction::Upload, Amount::Seconds(1.0), "bbr", 1);
    let (r, _, series) = run(&spec, 10);
    check_flows(&r, &series, &spec, 1.0);
    assert_eq!(r.flows[0].sender, Side::Client);
    assert!(series.samples(SocketId::Flow(0)).iter().any(|s| s.bbr.is_some()), "no BBR info in the sender's samples");
}

#[test]
fn file_transfer_completes_and_closes_the_span_at_the_end() {
    if !have_root() {
        return;
    }
    let _g = lock();
    let bytes = 2_000_000;
    let spec = spec(Direction::Download, Amount::Bytes(bytes), "cubic", 2);
    let (r, hook, series) = run(&spec, 10);
    for f in &r.flows {
        assert!(f.completed && f.error.is_none(), "{f:?}");
        assert_eq!(f.bytes_received, bytes);
        let t = f.completion_time_s.unwrap();
        // At least a round trip, and no faster than the whole link could carry one file.
        assert!(t >= 0.020 && t >= bytes as f64 * 8.0 / (LINK_MBIT as f64 * 1e6) * 0.9, "completion {t} s");
        assert!(!series.samples(SocketId::Flow(f.id)).is_empty());
        // Rounds end with the transfer: the last one may come just before the last byte.
        assert!(series.received_of(f.id).last().unwrap().bytes <= bytes);
    }
    // Both files share the link, however unevenly: the later one finishes no sooner than the
    // link could carry both (one flow may well finish faster than half the link's rate).
    let last = r.flows.iter().filter_map(|f| f.completion_time_s).fold(0.0, f64::max);
    assert!(last >= (2 * bytes) as f64 * 8.0 / (LINK_MBIT as f64 * 1e6) * 0.9, "both files done in {last} s");
    // Opened at the start, closed once after every extension, at start + elapsed.
    let (open, close) = (hook[0], *hook.last().unwrap());
    assert_eq!((open.0, close.0), ("open", "close"));
    assert_eq!(hook.iter().filter(|h| h.0 == "close").count(), 1);
    assert_eq!(close.1, open.1 + Duration::from_secs_f64(r.elapsed_s));
}

#[test]
fn a_mix_starts_each_flow_at_its_offset() {
    if !have_root() {
        return;
    }
    let _g = lock();
    let mix = vec![
        MixFlow { cc: "cubic".parse().unwrap(), start_s: 0.0, client_port: None },
        MixFlow { cc: "bbr".parse().unwrap(), start_s: 0.5, client_port: None },
    ];
    let spec = BulkSpec { mix, ..spec(Direction::Download, Amount::Seconds(1.5), "cubic", 0) };
    let (r, _, series) = run(&spec, 5);
    check_flows(&r, &series, &spec, 1.5);
    let late = &r.flows[1];
    assert_eq!(late.start_s, 0.5);
    // Nothing arrives for the late flow before it starts (minus one round of slack).
    let before = series.received_of(late.id).iter().filter(|p| p.t_us + 20_000 < r.start_us + 500_000).map(|p| p.bytes).max().unwrap_or(0);
    assert_eq!(before, 0, "the late flow received before its start");
    assert!(series.samples(SocketId::Flow(late.id)).iter().any(|s| s.bbr.is_some()));
}

#[test]
fn unknown_algorithm_is_an_error() {
    if !have_root() {
        return;
    }
    let _g = lock();
    let epoch = Instant::now();
    let path = start_path(5, epoch);
    let stop = AtomicBool::new(false);
    for (direction, side) in [(Direction::Download, Side::Server), (Direction::Upload, Side::Client)] {
        let s = spec(direction, Amount::Seconds(1.0), "no-such-cc", 1);
        match s.run(&RunContext::new(&path.client, &path.server, SERVER_ADDR, epoch, &stop)) {
            Err(WorkloadError::Congestion { side: s, .. }) => assert_eq!(s, side),
            other => panic!("{direction:?}: expected a congestion error, got {other:?}"),
        }
    }
}

#[test]
fn stop_and_timeout_end_a_transfer() {
    if !have_root() {
        return;
    }
    let _g = lock();
    let epoch = Instant::now();
    let path = start_path(10, epoch);
    // A 60 s transfer stopped after 0.5 s.
    let stop = AtomicBool::new(false);
    let long = spec(Direction::Download, Amount::Seconds(60.0), "cubic", 1);
    let t = Instant::now();
    let r = std::thread::scope(|s| {
        s.spawn(|| {
            std::thread::sleep(Duration::from_millis(500));
            stop.store(true, Ordering::SeqCst);
        });
        long.run(&RunContext::new(&path.client, &path.server, SERVER_ADDR, epoch, &stop)).unwrap()
    });
    assert!(t.elapsed() < Duration::from_millis(1500), "took {:?}", t.elapsed());
    assert!(r.interrupted && !r.flows[0].completed);

    // A 100 MB file cannot cross 50 Mbit/s in 1 s: it is cut at the timeout, incomplete.
    let stop = AtomicBool::new(false);
    let file = BulkSpec { timeout_s: 1.0, port: 5202, ..spec(Direction::Download, Amount::Bytes(100_000_000), "cubic", 1) };
    let t = Instant::now();
    let r = file.run(&RunContext::new(&path.client, &path.server, SERVER_ADDR, epoch, &stop)).unwrap();
    assert!(t.elapsed() < Duration::from_millis(2000), "took {:?}", t.elapsed());
    let f = &r.flows[0];
    assert!(!r.interrupted && !f.completed && f.completion_time_s.is_none());
    assert!(f.bytes_received > 0 && f.bytes_received < 100_000_000);
}
