//! A web page over QUIC through the emulator, driven through the library API: the HTML, then
//! every object on concurrent streams of one connection, all bytes in, no faster than the
//! round trips and the link allow, both ends read back, the server's end sampled, and the
//! measured span from navigation start to the last object. Needs root (under `CI=true` a
//! missing root is a failure).

mod common;

use std::sync::atomic::AtomicBool;
use std::sync::Mutex;
use std::time::Instant;

use ccbench_emu::SERVER_ADDR;
use ccbench_workload::{MeasureHook, MemorySeries, PageModel, PageProtocol, PageSpec, RunContext, SocketId, Transport, Workload};
use common::{have_root, lock, start_path, LINK_MBIT};

/// The instants the load opened and closed its measured span at.
#[derive(Default)]
struct Span(Mutex<(Option<Instant>, Option<Instant>)>);

impl MeasureHook for Span {
    fn open(&self, at: Instant) {
        self.0.lock().unwrap().0 = Some(at);
    }
    fn extend(&self, _: Instant) {}
    fn close(&self, at: Instant) {
        self.0.lock().unwrap().1 = Some(at);
    }
}

#[test]
fn a_page_over_quic_loads_whole_on_one_connection() {
    if !have_root() {
        return;
    }
    let _g = lock();
    let epoch = Instant::now();
    // 50 Mbit/s, 20 ms RTT.
    let path = start_path(10, epoch);
    let rtt_s = 0.020;
    let stop = AtomicBool::new(false);
    let series = MemorySeries::default();
    let span = Span::default();
    let spec = PageSpec {
        page: PageModel::builtin("news").unwrap(),
        protocol: PageProtocol::default(),
        cc: "quic:bbr3".parse().unwrap(),
        port: 8380,
        sample_interval_us: 10_000,
        timeout_s: 30.0,
    };
    let r = spec.run(&RunContext::new(&path.client, &path.server, SERVER_ADDR, epoch, &stop).with_series(&series).with_hook(&span)).expect("page load");

    assert!(!r.interrupted && !r.timed_out);
    assert_eq!((r.errors, r.server_errors), (0, 0), "errors: {:?}", r.error_messages);
    assert_eq!((r.requests_total as usize, r.requests_completed), (spec.page.objects.len() + 1, r.requests_total));
    assert_eq!(r.bytes_received, spec.page.total_bytes());
    for (i, &size) in spec.page.objects.iter().enumerate() {
        let res = &r.resources[i + 1];
        assert!(res.ok && res.path == format!("/o/{i}") && res.bytes_received == size, "{res:?}");
    }
    // One QUIC connection, the server sending, both ends read back.
    assert_eq!((r.connections_used, r.server_connections), (1, 1));
    let c = &r.connections[0];
    assert_eq!(
        (c.sending.transport, c.sending.cc_read_back.as_deref(), c.sending.cc_receiver.as_deref(), c.sending.warning.as_deref()),
        (Transport::Quic, Some("quic:bbr3"), Some("quic:bbr3"), None)
    );
    assert_eq!((c.requests_completed, c.bytes_received), (r.requests_total, r.bytes_received));
    let last = c.sending.final_quic.as_ref().expect("the sender's last sample");
    // The last acknowledgements may still be on their way when the last byte arrives.
    assert!(last.bytes_sent >= r.bytes_received && last.bbr.is_some(), "{last:?}");
    let samples = series.quic_samples(SocketId::Connection(c.client_port));
    assert!(!samples.is_empty() && samples.iter().all(|s| s.bbr.is_some()));
    assert!(series.tcp.lock().unwrap().is_empty());

    // The handshake (one round trip) and the request (another) come before the HTML's first
    // byte, as TCP's connect and request do; the objects a round trip after the HTML.
    let (ttfb, html, load) = (r.html_ttfb_s.unwrap(), r.html_complete_s.unwrap(), r.page_load_s.unwrap());
    assert!(ttfb >= 2.0 * rtt_s - 0.001, "TTFB {ttfb} s under two RTTs");
    assert!(ttfb < 4.0 * rtt_s, "TTFB {ttfb} s: the HTML request waited for more than the client's handshake");
    assert!(html >= ttfb && load >= html + rtt_s - 0.001, "HTML {html} s, load {load} s");
    // Nor faster than the bytes can cross the link (QUIC carries at most 1472 of 1500 bytes).
    let min_transfer_s = spec.page.total_bytes() as f64 * 8.0 / (LINK_MBIT as f64 * 1e6 * 1472.0 / 1500.0);
    assert!(load >= min_transfer_s, "page load {load} s beats the link ({min_transfer_s} s)");
    // The objects were in flight together: far less than one round trip each.
    assert!(load < html + 0.5 * rtt_s * spec.page.objects.len() as f64, "load {load} s: the objects did not overlap");
    // The span: navigation start to the last object.
    let (open, close) = *span.0.lock().unwrap();
    let (open, close) = (open.unwrap(), close.unwrap());
    assert_eq!(open.duration_since(epoch).as_micros() as u64, r.start_us.unwrap());
    assert!((close.duration_since(open).as_secs_f64() - load).abs() < 1e-3, "span {:?} vs load {load} s", close - open);
    eprintln!("news over quic:bbr3, 20 ms: TTFB {ttfb:.3} s, HTML {html:.3} s, load {load:.3} s ({:.1} Mbit/s)", r.page_goodput_bps / 1e6);
}

#[test]
fn a_quic_page_that_cannot_load_in_time_ends_at_its_timeout() {
    if !have_root() {
        return;
    }
    let _g = lock();
    let epoch = Instant::now();
    let path = start_path(10, epoch);
    let stop = AtomicBool::new(false);
    // 20 MB: seconds at 50 Mbit/s, against half a second allowed.
    let page = PageModel { html_bytes: 100_000, objects: vec![500_000; 40] };
    let spec = PageSpec { page, protocol: PageProtocol::Http2, cc: "quic:cubic".parse().unwrap(), port: 8381, sample_interval_us: 10_000, timeout_s: 0.5 };
    let t = Instant::now();
    let r = spec.run(&RunContext::new(&path.client, &path.server, SERVER_ADDR, epoch, &stop)).expect("page load");
    assert!(t.elapsed().as_secs_f64() < 1.5, "took {:?}", t.elapsed());
    assert!(r.timed_out && !r.interrupted && r.page_load_s.is_none() && r.page_goodput_bps == 0.0);
    assert!(r.requests_completed < r.requests_total && r.connections.len() == 1);
}
