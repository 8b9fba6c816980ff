//! The object-store load over QUIC through the emulator, driven through the library API: every
//! request completes on concurrent streams of one connection, both ends' controllers are read
//! back (a mismatch is warned about), the sending end is sampled, BBR's states show, and the
//! measured span is the one the result reports. The runs need root (under `CI=true` a missing
//! root is a failure); the wire-format test does not.

mod common;

use std::sync::atomic::AtomicBool;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use ccbench_emu::SERVER_ADDR;
use ccbench_workload::{MeasureHook, MemorySeries, ObjectMethod, ObjectsResult, ObjectsSpec, RunContext, Side, SocketId, Transport, Workload};
use common::{have_root, lock, start_path, Garbage, LINK_MBIT};

fn spec(method: ObjectMethod, cc: &str, requests: u32, object_bytes: u64, concurrency: u32) -> ObjectsSpec {
    common::objects_spec(method, cc, requests, object_bytes, concurrency, 9300)
}

/// The instants the workload opened and closed its measured span at.
#[derive(Default)]
struct Span {
    open: Mutex<Option<Instant>>,
    last_extend: Mutex<Option<Instant>>,
    close: Mutex<Option<Instant>>,
}

impl MeasureHook for Span {
    fn open(&self, at: Instant) {
        *self.open.lock().unwrap() = Some(at);
    }
    fn extend(&self, at: Instant) {
        *self.last_extend.lock().unwrap() = Some(at);
    }
    fn close(&self, at: Instant) {
        *self.close.lock().unwrap() = Some(at);
    }
}

fn run(spec: &ObjectsSpec) -> (ObjectsResult, MemorySeries, Span, Instant) {
    let epoch = Instant::now();
    // 50 Mbit/s, 20 ms RTT.
    let path = start_path(10, epoch);
    let stop = AtomicBool::new(false);
    let series = MemorySeries::default();
    let span = Span::default();
    let ctx = RunContext::new(&path.client, &path.server, SERVER_ADDR, epoch, &stop).with_series(&series).with_hook(&span);
    let r = spec.run(&ctx).expect("QUIC objects run");
    (r, series, span, epoch)
}

/// Everything a complete run over one QUIC connection must show.
fn check_complete(r: &ObjectsResult, series: &MemorySeries, spec: &ObjectsSpec) {
    assert!(!r.interrupted && !r.timed_out, "{r:?}");
    assert_eq!(r.errors, 0, "errors: {:?}", r.error_messages);
    assert_eq!(r.server_errors, 0, "server errors: {:?}", r.error_messages);
    assert_eq!((r.requests_issued, r.requests_completed), (spec.requests, spec.requests));
    assert_eq!(r.content_bytes, spec.requests as u64 * spec.object_bytes);
    assert!(r.requests.iter().all(|q| q.ok && q.content_bytes == spec.object_bytes));
    // One connection carries every request, as an HTTP/3 client's would.
    assert_eq!((r.client_connections, r.server_connections, r.connections.len()), (1, 1, 1));
    let c = &r.connections[0];
    assert_eq!((c.sending.transport, c.sender, c.requests_completed), (Transport::Quic, spec.method.sender(), spec.requests));
    assert_eq!(c.sending.cc_read_back.as_deref(), Some(spec.cc.to_string().as_str()));
    assert!(c.sending.final_tcp_info.is_none());
    let last = c.sending.final_quic.as_ref().expect("the sender's last sample");
    assert!(last.packets_sent > 0 && last.bytes_acked >= r.content_bytes, "{last:?}");
    // Samples of that one sending connection under its client port, QUIC ones only.
    let samples = series.quic_samples(SocketId::Connection(c.client_port));
    assert!(samples.len() as f64 >= r.wall_time_s * 100.0 * 0.5, "{} samples in {:.2} s at 10 ms", samples.len(), r.wall_time_s);
    assert!(samples.windows(2).all(|w| w[0].t_us <= w[1].t_us), "samples out of order");
    assert!(samples.iter().any(|s| s.min_rtt_us >= 19_000 && s.bytes_in_flight > 0), "no sample saw the path's RTT with data in flight");
    let link_bps = LINK_MBIT as f64 * 1e6;
    // The sampled rate is acknowledged bytes over the time between samples: a connection whose
    // runtime was held off the CPU acknowledges a backlog at once, so one sample may read 6×
    // the link (CI saw 293 Mbit/s on 50 at load 6). A wrong unit (bytes as bits, µs as ms)
    // would move them all; the 90th percentile must stay within twice the link.
    let mut rates: Vec<u64> = samples.iter().map(|s| s.delivery_rate_bps).collect();
    rates.sort_unstable();
    let p90 = rates.get(rates.len() * 9 / 10).copied().unwrap_or(0);
    assert!(p90 as f64 <= 2.0 * link_bps, "a delivery rate of {p90} bit/s (90th percentile of {}) on a {link_bps} bit/s link", rates.len());
    assert!(rates.last().is_some_and(|&r| r > 0), "no sample saw data delivered");
    assert_eq!(series.quic.lock().unwrap().len(), 1);
    assert!(series.tcp.lock().unwrap().is_empty() && series.received.lock().unwrap().is_empty());
    // QUIC's payload per 1500-byte packet is below TCP's: under the link, above a sane share.
    assert!(r.content_throughput_bps < link_bps, "{} bit/s above the link", r.content_throughput_bps);
    assert!(r.content_throughput_bps > 0.3 * link_bps, "{} bit/s is under 30 % of the link", r.content_throughput_bps);
    let (p50, p95, p99, max) = (r.latency_p50_s.unwrap(), r.latency_p95_s.unwrap(), r.latency_p99_s.unwrap(), r.latency_max_s.unwrap());
    assert!(p50 <= p95 && p95 <= p99 && p99 <= max);
    assert!(p50 >= 0.020, "a request takes at least a round trip, p50 {p50} s");
    eprintln!(
        "{:?} {} x {} B, {} streams, {}: {:.1} Mbit/s in {:.3} s; latency p50 {p50:.3} p95 {p95:.3} p99 {p99:.3} s",
        spec.method,
        spec.requests,
        spec.object_bytes,
        spec.concurrency,
        spec.cc,
        r.content_throughput_bps / 1e6,
        r.wall_time_s,
    );
}

#[test]
fn quic_get_completes_every_request_on_concurrent_streams_and_spans_the_requests() {
    if !have_root() {
        return;
    }
    let _g = lock();
    let spec = spec(ObjectMethod::Get, "quic:cubic", 48, 256 << 10, 8);
    let (r, series, span, epoch) = run(&spec);
    check_complete(&r, &series, &spec);
    let c = &r.connections[0];
    assert_eq!((c.sending.cc_receiver.as_deref(), c.sending.warning.as_deref()), (Some("quic:cubic"), None));
    assert!(
        c.sending.bbr_events.is_empty() && series.quic_samples(SocketId::Connection(c.client_port)).iter().all(|s| s.bbr.is_none()),
        "CUBIC has no BBR state"
    );
    // The measured span opens at the first request and closes at the last response, the
    // instants the result's wall time runs between.
    let (open, close) = (span.open.lock().unwrap().expect("opened"), span.close.lock().unwrap().expect("closed"));
    assert_eq!(open.duration_since(epoch).as_micros() as u64, r.start_us.unwrap());
    assert!((close.duration_since(open).as_secs_f64() - r.wall_time_s).abs() < 1e-6, "span {:?} vs wall time {} s", close - open, r.wall_time_s);
    assert_eq!(*span.last_extend.lock().unwrap(), Some(close), "extended up to the last response");
    // Requests overlapped: with 8 in flight, the wall time is far below the sum of latencies.
    let sum: f64 = r.requests.iter().map(|q| q.latency_s).sum();
    assert!(sum > 4.0 * r.wall_time_s, "latencies sum to {sum:.2} s over {:.2} s: the requests did not overlap", r.wall_time_s);
}

#[test]
fn quic_bbr3_put_shows_its_states_and_a_receiver_on_another_algorithm_is_warned_about() {
    if !have_root() {
        return;
    }
    let _g = lock();
    // Scenario 5's mix-up, on purpose: the client sends with BBRv3, the server runs CUBIC.
    let spec = ObjectsSpec { quic_receiver_cc: Some("cubic".into()), ..spec(ObjectMethod::Put, "quic:bbr3", 16, 1 << 20, 4) };
    let (r, series, _, _) = run(&spec);
    check_complete(&r, &series, &spec);
    let c = &r.connections[0];
    assert_eq!((c.sender, c.sending.cc_read_back.as_deref(), c.sending.cc_receiver.as_deref()), (Side::Client, Some("quic:bbr3"), Some("quic:cubic")));
    let warning = c.sending.warning.as_deref().expect("a warning for the mismatch");
    assert!(warning.contains("quic:bbr3") && warning.contains("quic:cubic"), "{warning}");
    let samples = series.quic_samples(SocketId::Connection(c.client_port));
    assert!(samples.iter().all(|s| s.bbr.as_ref().is_some_and(|b| !b.state.is_empty())), "every sample carries BBR's state");
    assert!(samples.iter().any(|s| s.pacing_rate_bps.is_some_and(|p| p > 0)));
    // 16 MiB at 50 Mbit/s is seconds: BBR leaves STARTUP, and says so.
    assert!(c.sending.bbr_events.iter().any(|e| e.from == "STARTUP"), "{:?}", c.sending.bbr_events);
}

#[test]
fn a_quic_load_ends_at_its_timeout_or_when_stopped() {
    if !have_root() {
        return;
    }
    let _g = lock();
    let epoch = Instant::now();
    let path = start_path(10, epoch);
    // 200 x 16 MiB is minutes at 50 Mbit/s: the timeout (setup included) ends it.
    let stop = AtomicBool::new(false);
    let bounded = ObjectsSpec { timeout_s: 1.0, ..spec(ObjectMethod::Put, "quic:cubic", 200, 16 << 20, 4) };
    let t = Instant::now();
    let r = bounded.run(&RunContext::new(&path.client, &path.server, SERVER_ADDR, epoch, &stop)).unwrap();
    assert!(t.elapsed() < Duration::from_millis(2000), "took {:?}", t.elapsed());
    assert!(r.timed_out && !r.interrupted && r.requests_completed < bounded.requests);
    // Stopped mid-run (Ctrl-C): back within a second, with what finished.
    let spec = ObjectsSpec { port: 9301, ..spec(ObjectMethod::Get, "quic:bbr3", 200, 16 << 20, 16) };
    let t = Instant::now();
    let r = std::thread::scope(|s| {
        s.spawn(|| {
            std::thread::sleep(Duration::from_millis(700));
            stop.store(true, std::sync::atomic::Ordering::SeqCst);
        });
        spec.run(&RunContext::new(&path.client, &path.server, SERVER_ADDR, epoch, &stop)).unwrap()
    });
    let took = t.elapsed();
    assert!(took < Duration::from_millis(1700), "took {took:?}");
    assert!(r.interrupted && !r.timed_out && r.requests_completed < spec.requests);
    assert_eq!(r.requests_issued, 16, "16 in flight when stopped");
    assert_eq!(r.connections[0].sending.cc_read_back.as_deref(), Some("quic:bbr3"));
    // Stopped before it began: nothing is set up.
    let t = Instant::now();
    let r = spec.run(&RunContext::new(&path.client, &path.server, SERVER_ADDR, epoch, &stop)).unwrap();
    assert!(t.elapsed() < Duration::from_millis(200) && r.interrupted && r.connections.is_empty() && r.requests_issued == 0);
}

/// The request and status lines come off the network: random bytes, and valid lines cut short
/// or with bytes flipped, go through the parsers without a panic (the same entry point is the
/// `quic_objects` fuzz target; see fuzz/).
#[test]
fn random_and_mutated_request_lines_never_panic() {
    let seeds: &[&[u8]] = &[b"GET /obj/17\r\n", b"PUT /obj/3 1048576\r\nbody", b"OK\r\n", b"ERROR PUT body of 3 bytes, declared 5\r\n"];
    // Mostly the lines' own characters; `n` is the first byte, which picks how the rest is cut.
    let garbage = Garbage { rng: 0x00B1_EC75, random: 5000, max_len: 200, seeds, mutations: 3000, max_changes: 3, pick: b"GETPUOKRbj/ 0123456789\r\n" };
    garbage.feed(|input, n| ccbench_workload::fuzzing::quic_objects_wire(&[&[n as u8], input].concat()));
}
