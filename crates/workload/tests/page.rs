//! Web page loads over an emulated 50 Mbit/s path (real namespaces, real kernel TCP).
//!
//! They need root. Outside CI they skip without it; under `CI=true` they fail instead.

mod common;

use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use ccbench_emu::SERVER_ADDR;
use ccbench_workload::{MemorySeries, PageModel, PageProtocol, PageResult, PageSpec, RunContext, SocketId, Workload};
use common::{have_root, lock, start_path, LINK_MBIT, PAYLOAD_FRACTION};

fn spec(page: &str, protocol: PageProtocol, cc: &str) -> PageSpec {
    PageSpec { page: PageModel::builtin(page).unwrap(), protocol, cc: cc.parse().unwrap(), port: 8080, sample_interval_us: 10_000, timeout_s: 30.0 }
}

/// The result and the series the load handed over.
fn run(spec: &PageSpec, one_way_ms: u64) -> (PageResult, MemorySeries) {
    let epoch = Instant::now();
    let path = start_path(one_way_ms, epoch);
    let stop = AtomicBool::new(false);
    let series = MemorySeries::default();
    let r = spec.run(&RunContext::new(&path.client, &path.server, SERVER_ADDR, epoch, &stop).with_series(&series)).expect("page load");
    (r, series)
}

/// Everything arrived, on connections that ran the requested algorithm.
fn check_complete(r: &PageResult, series: &MemorySeries, spec: &PageSpec, rtt_s: f64) {
    assert!(!r.interrupted && !r.timed_out);
    assert_eq!(r.errors, 0, "errors: {:?}", r.error_messages);
    assert_eq!(r.requests_total as usize, spec.page.objects.len() + 1);
    assert_eq!(r.requests_completed, r.requests_total);
    assert_eq!(r.bytes_received, spec.page.total_bytes());
    assert_eq!(r.resources[0].bytes_received, spec.page.html_bytes);
    for (i, &size) in spec.page.objects.iter().enumerate() {
        let res = &r.resources[i + 1];
        assert_eq!(res.path, format!("/o/{i}"));
        assert!(res.ok, "{res:?}");
        assert_eq!(res.bytes_received, size, "object {i}");
    }
    assert_eq!(r.connections_used, r.server_connections);
    assert_eq!(r.connections.len() as u32, r.connections_used);
    for c in &r.connections {
        assert_eq!(c.sending.cc_read_back.as_deref(), Some(spec.cc.to_string().as_str()), "connection {}", c.id);
        assert!(!series.samples(SocketId::Connection(c.client_port)).is_empty(), "no TCP_INFO samples for connection {}", c.id);
    }
    // Series of the server's sockets of these connections, and of nothing else.
    let mut ports: Vec<SocketId> = r.connections.iter().map(|c| SocketId::Connection(c.client_port)).collect();
    ports.sort();
    assert_eq!(series.tcp.lock().unwrap().keys().copied().collect::<Vec<_>>(), ports);
    let (ttfb, html, load) = (r.html_ttfb_s.unwrap(), r.html_complete_s.unwrap(), r.page_load_s.unwrap());
    // Theory: the HTML's first byte needs the handshake and the request (2 RTTs, 1 ms of
    // slack for timer granularity); objects are requested after the HTML, one more RTT.
    assert!(ttfb >= rtt_s, "TTFB {ttfb} s under one RTT");
    assert!(ttfb >= 2.0 * rtt_s - 0.001, "TTFB {ttfb} s under two RTTs");
    assert!(html >= ttfb);
    assert!(load >= 2.0 * rtt_s, "page load {load} s under two RTTs");
    if !spec.page.objects.is_empty() {
        assert!(load >= html + rtt_s - 0.001, "objects took less than a round trip after the HTML");
    }
    // Nor faster than the bytes can cross the link.
    let min_transfer_s = spec.page.total_bytes() as f64 * 8.0 / (LINK_MBIT as f64 * 1e6 * PAYLOAD_FRACTION);
    assert!(load >= min_transfer_s, "page load {load} s beats the link ({min_transfer_s} s)");
    eprintln!(
        "{:?} {} B in {} objects, {}, RTT {:.0} ms: TTFB {:.3} s, HTML {:.3} s, load {:.3} s ({:.1} Mbit/s), {} connections",
        spec.protocol,
        spec.page.total_bytes(),
        spec.page.objects.len(),
        spec.cc,
        rtt_s * 1e3,
        ttfb,
        html,
        load,
        r.page_goodput_bps / 1e6,
        r.connections_used
    );
}

#[test]
fn http1_uses_at_most_max_connections_and_gets_every_byte() {
    if !have_root() {
        return;
    }
    let _g = lock();
    let spec = spec("news", PageProtocol::default(), "cubic");
    let (r, series) = run(&spec, 10);
    check_complete(&r, &series, &spec, 0.020);
    assert!(r.connections_used <= PageProtocol::BROWSER_MAX_CONNECTIONS, "{} connections", r.connections_used);
    // With 86 objects a browser fills its connection slots.
    assert!(r.connections_used > 1);
    // Persistent connections: each carried several requests.
    assert!(r.connections.iter().all(|c| c.requests_completed >= 2));

    let two = PageSpec { protocol: PageProtocol::Http1 { max_connections: 2 }, ..spec.clone() };
    let (r, series) = run(&two, 10);
    check_complete(&r, &series, &two, 0.020);
    assert!(r.connections_used <= 2);
}

#[test]
fn http2_multiplexes_on_exactly_one_connection() {
    if !have_root() {
        return;
    }
    let _g = lock();
    // 167 objects: more than the server's 128 concurrent streams, so the client must queue.
    let spec = spec("heavy", PageProtocol::Http2, "cubic");
    let (r, series) = run(&spec, 10);
    check_complete(&r, &series, &spec, 0.020);
    assert_eq!(r.connections_used, 1);
    assert_eq!(r.server_connections, 1);
    assert_eq!(r.connections[0].requests_completed as usize, spec.page.objects.len() + 1);
}

#[test]
fn timing_bounds_on_a_40ms_path_both_protocols_bbr() {
    if !have_root() {
        return;
    }
    let _g = lock();
    for protocol in [PageProtocol::default(), PageProtocol::Http2] {
        let spec = spec("small", protocol, "bbr");
        let (r, series) = run(&spec, 20);
        check_complete(&r, &series, &spec, 0.040);
        assert!(
            r.connections.iter().all(|c| series.samples(SocketId::Connection(c.client_port)).iter().any(|s| s.bbr.is_some())),
            "no BBR info in the server's samples"
        );
    }
}

#[test]
fn few_objects_open_few_connections() {
    if !have_root() {
        return;
    }
    let _g = lock();
    let mut spec = spec("small", PageProtocol::default(), "cubic");
    spec.page = PageModel { html_bytes: 5_000, objects: vec![20_000, 1_000] };
    let (r, series) = run(&spec, 5);
    check_complete(&r, &series, &spec, 0.010);
    assert!(r.connections_used <= 2);
    // A page that is only HTML.
    spec.page.objects.clear();
    let (r, series) = run(&spec, 5);
    check_complete(&r, &series, &spec, 0.010);
    assert_eq!(r.connections_used, 1);
}

#[test]
fn stopped_load_returns_promptly() {
    if !have_root() {
        return;
    }
    let _g = lock();
    let epoch = Instant::now();
    let path = start_path(10, epoch);
    let spec = spec("heavy", PageProtocol::default(), "cubic");
    let stop = AtomicBool::new(true);
    let t = Instant::now();
    let r = spec.run(&RunContext::new(&path.client, &path.server, SERVER_ADDR, epoch, &stop)).unwrap();
    assert!(t.elapsed() < Duration::from_secs(1));
    assert!(r.interrupted && r.page_load_s.is_none());

    // Mid-load: a 20 MB page takes over 3 s at 50 Mbit/s; stop after 0.3 s.
    let slow = PageSpec { page: PageModel { html_bytes: 100_000, objects: vec![500_000; 40] }, port: 8081, ..spec };
    let stop = AtomicBool::new(false);
    let t = Instant::now();
    let r = std::thread::scope(|s| {
        s.spawn(|| {
            std::thread::sleep(Duration::from_millis(300));
            stop.store(true, Ordering::SeqCst);
        });
        slow.run(&RunContext::new(&path.client, &path.server, SERVER_ADDR, epoch, &stop)).unwrap()
    });
    let took = t.elapsed();
    assert!(took < Duration::from_millis(1300), "took {took:?}");
    assert!(r.interrupted && !r.timed_out && r.page_load_s.is_none());
    assert!(r.bytes_received < slow.page.total_bytes());
    eprintln!("stopped after {took:?}: {} of {} bytes, {} of {} requests", r.bytes_received, slow.page.total_bytes(), r.requests_completed, r.requests_total);

    // The timeout bounds a load the same way.
    let bounded = PageSpec { timeout_s: 0.5, port: 8082, protocol: PageProtocol::Http2, ..slow };
    let stop = AtomicBool::new(false);
    let t = Instant::now();
    let r = bounded.run(&RunContext::new(&path.client, &path.server, SERVER_ADDR, epoch, &stop)).unwrap();
    assert!(t.elapsed() < Duration::from_millis(1500), "took {:?}", t.elapsed());
    assert!(r.timed_out && !r.interrupted && r.page_load_s.is_none());
}
