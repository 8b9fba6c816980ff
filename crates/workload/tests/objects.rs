//! Object-store load over an emulated 50 Mbit/s path (real namespaces, real kernel TCP).
//!
//! They need root. Outside CI they skip without it; under `CI=true` they fail instead.
//! One at a time (a global lock): throughput on a 2-core machine would otherwise be shared.

mod common;

use std::sync::atomic::AtomicBool;
use std::time::{Duration, Instant};

use ccbench_emu::SERVER_ADDR;
use ccbench_workload::{MemorySeries, ObjectMethod, ObjectsResult, ObjectsSpec, RunContext, Side, SocketId, Workload, WorkloadError};
use common::{have_root, lock, start_path, LINK_MBIT, PAYLOAD_FRACTION};

fn spec(method: ObjectMethod, cc: &str, requests: u32, object_bytes: u64, concurrency: u32) -> ObjectsSpec {
    common::objects_spec(method, cc, requests, object_bytes, concurrency, 9000)
}

/// The result and the series the run handed over.
fn run(spec: &ObjectsSpec, one_way_ms: u64) -> (ObjectsResult, MemorySeries) {
    let epoch = Instant::now();
    let path = start_path(one_way_ms, epoch);
    let stop = AtomicBool::new(false);
    let series = MemorySeries::default();
    let r = spec.run(&RunContext::new(&path.client, &path.server, SERVER_ADDR, epoch, &stop).with_series(&series)).expect("objects run");
    (r, series)
}

fn check_complete(r: &ObjectsResult, series: &MemorySeries, spec: &ObjectsSpec) {
    assert!(!r.interrupted && !r.timed_out, "{r:?}");
    assert_eq!(r.errors, 0, "errors: {:?}", r.error_messages);
    assert_eq!(r.requests_completed, spec.requests);
    assert_eq!(r.requests_issued, spec.requests);
    assert_eq!(r.content_bytes, spec.requests as u64 * spec.object_bytes);
    // Persistent connections: exactly `concurrency` of them, on both ends.
    assert_eq!(r.client_connections, spec.concurrency);
    assert_eq!(r.server_connections, spec.concurrency, "the server saw other than `concurrency` connections");
    assert_eq!(r.connections.len(), spec.concurrency as usize);
    // Every connection carried requests (the requests are spread over them).
    for c in &r.connections {
        assert!(c.requests_completed > 0, "connection {} idle", c.id);
        assert_eq!(c.sending.cc_read_back.as_deref(), Some(spec.cc.to_string().as_str()), "connection {}", c.id);
        assert!(!series.samples(SocketId::Connection(c.client_port)).is_empty(), "no TCP_INFO samples for connection {}", c.id);
    }
    // Series of the sending sockets of these connections, and of nothing else.
    let mut ports: Vec<SocketId> = r.connections.iter().map(|c| SocketId::Connection(c.client_port)).collect();
    ports.sort();
    assert_eq!(series.tcp.lock().unwrap().keys().copied().collect::<Vec<_>>(), ports);
    assert!(series.received.lock().unwrap().is_empty(), "goodput points are bulk's");
    let total: u32 = r.connections.iter().map(|c| c.requests_completed).sum();
    assert_eq!(total, spec.requests);
    // Content throughput: below the link's TCP payload rate (1448 of every 1500 bytes), above a
    // sane fraction of the link rate.
    let link_bps = LINK_MBIT as f64 * 1e6;
    let payload_bps = link_bps * PAYLOAD_FRACTION;
    assert!(r.content_throughput_bps < payload_bps, "{} bit/s above the {} bit/s payload rate", r.content_throughput_bps, payload_bps);
    assert!(r.content_throughput_bps > 0.3 * link_bps, "{} bit/s is under 30 % of the link", r.content_throughput_bps);
    let (p50, p95, p99, max) = (r.latency_p50_s.unwrap(), r.latency_p95_s.unwrap(), r.latency_p99_s.unwrap(), r.latency_max_s.unwrap());
    assert!(p50 <= p95 && p95 <= p99 && p99 <= max);
    // A request is at least one round trip (20 ms on this path).
    assert!(r.latency_p50_s.unwrap() >= 0.020);
    eprintln!(
        "{:?} {} x {} B, {} conns, {}: {:.2} MB/s ({:.1} Mbit/s) in {:.3} s; latency p50 {:.3} p95 {:.3} p99 {:.3} max {:.3} s",
        spec.method,
        spec.requests,
        spec.object_bytes,
        spec.concurrency,
        spec.cc,
        r.content_throughput_mbytes_per_s,
        r.content_throughput_bps / 1e6,
        r.wall_time_s,
        p50,
        p95,
        p99,
        max
    );
}

#[test]
fn put_completes_every_request_over_concurrency_connections() {
    if !have_root() {
        return;
    }
    let _g = lock();
    let spec = spec(ObjectMethod::Put, "cubic", 24, 256 * 1024, 4);
    let (r, series) = run(&spec, 10);
    check_complete(&r, &series, &spec);
    assert!(r.connections.iter().all(|c| c.sender == Side::Client));
}

#[test]
fn get_completes_every_request_over_concurrency_connections() {
    if !have_root() {
        return;
    }
    let _g = lock();
    let spec = spec(ObjectMethod::Get, "cubic", 24, 256 * 1024, 4);
    let (r, series) = run(&spec, 10);
    check_complete(&r, &series, &spec);
    assert!(r.connections.iter().all(|c| c.sender == Side::Server));
}

#[test]
fn cc_read_back_matches_for_bbr_both_directions() {
    if !have_root() {
        return;
    }
    let _g = lock();
    for method in [ObjectMethod::Put, ObjectMethod::Get] {
        let spec = spec(method, "bbr", 16, 128 * 1024, 3);
        let (r, series) = run(&spec, 10);
        check_complete(&r, &series, &spec);
        // BBR exports its model: the sending socket's samples carry it.
        assert!(
            r.connections.iter().all(|c| series.samples(SocketId::Connection(c.client_port)).iter().any(|s| s.bbr.is_some())),
            "{method:?}: no BBR info in samples"
        );
    }
}

#[test]
fn unknown_algorithm_is_an_error() {
    if !have_root() {
        return;
    }
    let _g = lock();
    let epoch = Instant::now();
    let path = start_path(10, epoch);
    let stop = AtomicBool::new(false);
    for method in [ObjectMethod::Put, ObjectMethod::Get] {
        let s = spec(method, "no-such-cc", 2, 1024, 1);
        match s.run(&RunContext::new(&path.client, &path.server, SERVER_ADDR, epoch, &stop)) {
            Err(WorkloadError::Congestion { .. }) => {}
            other => panic!("{method:?}: expected a congestion error, got {other:?}"),
        }
    }
}

#[test]
fn stopped_run_returns_promptly() {
    if !have_root() {
        return;
    }
    let _g = lock();
    let epoch = Instant::now();
    let path = start_path(10, epoch);
    // Already stopped: nothing runs.
    let stop = AtomicBool::new(true);
    let t = Instant::now();
    let r = spec(ObjectMethod::Get, "cubic", 200, 16 << 20, 16).run(&RunContext::new(&path.client, &path.server, SERVER_ADDR, epoch, &stop)).unwrap();
    assert!(t.elapsed() < Duration::from_secs(1));
    assert!(r.interrupted);
    assert_eq!(r.requests_completed, 0);

    // Stopped mid-run: a 200 x 16 MiB load (minutes at 50 Mbit/s) returns within a second of it.
    let stop = AtomicBool::new(false);
    let spec = ObjectsSpec { port: 9001, ..spec(ObjectMethod::Get, "cubic", 200, 16 << 20, 16) };
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
    assert!(r.interrupted && !r.timed_out);
    assert!(r.requests_completed < spec.requests);
    assert_eq!(r.server_connections, 16);
    eprintln!("stopped after {took:?}: {} of {} done, {} issued", r.requests_completed, spec.requests, r.requests_issued);
}

#[test]
fn timeout_bounds_the_run() {
    if !have_root() {
        return;
    }
    let _g = lock();
    let epoch = Instant::now();
    let path = start_path(10, epoch);
    let stop = AtomicBool::new(false);
    let spec = ObjectsSpec { timeout_s: 1.0, ..spec(ObjectMethod::Put, "cubic", 200, 16 << 20, 4) };
    let t = Instant::now();
    let r = spec.run(&RunContext::new(&path.client, &path.server, SERVER_ADDR, epoch, &stop)).unwrap();
    assert!(t.elapsed() < Duration::from_millis(1800), "took {:?}", t.elapsed());
    assert!(r.timed_out && !r.interrupted);
    assert!(r.requests_completed < spec.requests);
}
