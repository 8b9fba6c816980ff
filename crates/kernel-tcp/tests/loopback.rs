//! Kernel-facing tests. They need Linux with bbr, cubic and reno available
//! and run on 127.0.0.1 only. Root is assumed (it lets setsockopt autoload
//! modules and select algorithms outside the allowed list).

use std::io::{self, Read, Write};
use std::mem::offset_of;
use std::net::{Ipv4Addr, TcpListener, TcpStream};
use std::thread;
use std::time::{Duration, Instant};

use ccbench_kernel_tcp::*;

/// A connected (client, server) pair on loopback.
fn pair() -> (TcpStream, TcpStream) {
    let listener = TcpListener::bind((Ipv4Addr::LOCALHOST, 0)).expect("bind 127.0.0.1");
    let addr = listener.local_addr().expect("local_addr");
    assert!(addr.ip().is_loopback());
    let client = TcpStream::connect(addr).expect("connect");
    let (server, _) = listener.accept().expect("accept");
    (client, server)
}

/// Sends `n` bytes client → server, then waits until the kernel says they are
/// acked, so tcp_info/cc_info reflect a finished transfer. Returns the server
/// end so the connection stays open.
fn push(client: &mut TcpStream, server: TcpStream, n: usize) -> TcpStream {
    let reader = thread::spawn(move || -> io::Result<TcpStream> {
        let mut server = server;
        let mut buf = vec![0u8; 1 << 16];
        let mut got = 0;
        while got < n {
            let k = server.read(&mut buf)?;
            if k == 0 {
                return Err(io::ErrorKind::UnexpectedEof.into());
            }
            got += k;
        }
        Ok(server)
    });
    let chunk = vec![0xa5u8; 1 << 16];
    let mut sent = 0;
    while sent < n {
        let k = chunk.len().min(n - sent);
        client.write_all(&chunk[..k]).expect("write");
        sent += k;
    }
    let server = reader.join().expect("reader thread").expect("read");
    let deadline = Instant::now() + Duration::from_secs(5);
    loop {
        let ti = tcp_info(&*client).expect("tcp_info");
        if ti.bytes_acked.unwrap_or(0) >= n as u64 {
            break;
        }
        assert!(Instant::now() < deadline, "data never acked: {ti:?}");
        thread::sleep(Duration::from_millis(5));
    }
    server
}

const MB4: usize = 4 << 20;

#[test]
fn set_and_read_back_each_algorithm() {
    let (client, _server) = pair();
    for name in ["bbr", "cubic", "reno"] {
        set_congestion(&client, name).unwrap_or_else(|e| panic!("set {name}: {e}"));
        assert_eq!(congestion(&client).expect("get"), name);
    }
}

#[test]
fn unknown_algorithm_is_enoent() {
    let (client, _server) = pair();
    let before = congestion(&client).expect("get");
    let err = set_congestion(&client, "no_such_cc").expect_err("must fail");
    assert_eq!(err.raw_os_error(), Some(libc::ENOENT), "{err}");
    // A failed set leaves the socket unchanged.
    assert_eq!(congestion(&client).expect("get"), before);
}

#[test]
fn overlong_or_nul_name_is_rejected_locally() {
    let (client, _server) = pair();
    let err = set_congestion(&client, "cubic_and_then_some").expect_err("too long");
    assert_eq!(err.kind(), io::ErrorKind::InvalidInput);
    let err = set_congestion(&client, "cu\0bic").expect_err("nul");
    assert_eq!(err.kind(), io::ErrorKind::InvalidInput);
}

#[test]
fn struct_size_matches_kernel() {
    let (client, _server) = pair();
    let kernel = kernel_tcp_info_size(&client).expect("kernel size");
    let (_, filled) = tcp_info_raw(&client).expect("raw");
    // The kernel copies min(offered, its sizeof).
    assert_eq!(filled, kernel.min(RAW_TCP_INFO_SIZE));
    let need = offset_of!(RawTcpInfo, tcpi_bytes_retrans) + 8;
    assert!(RAW_TCP_INFO_SIZE >= need);
    assert!(filled >= need, "kernel filled only {filled} bytes, need {need}");
    // On the 6.18 kernel this mirror was written against, sizes agree
    // exactly; a newer kernel may be longer, never an older-layout mismatch
    // that is not a known struct size.
    assert!([104, 120, 144, 160, 168, 192, 200, 224, 232, 240, 248, 280].contains(&filled), "unexpected tcp_info size {filled}");
    eprintln!("kernel struct tcp_info = {kernel} bytes, mirror = {RAW_TCP_INFO_SIZE}");
}

#[test]
fn tcp_info_plausible_after_transfer() {
    let (mut client, server) = pair();
    set_congestion(&client, "cubic").expect("cubic");
    let before = tcp_info(&client).expect("tcp_info");
    let _server = push(&mut client, server, MB4);
    let ti = tcp_info(&client).expect("tcp_info");
    eprintln!("{ti:#?}");

    assert_eq!(ti.state, 1, "TCP_ESTABLISHED");
    assert!(ti.bytes_acked.expect("bytes_acked") >= MB4 as u64);
    assert!(ti.bytes_acked > before.bytes_acked);
    assert!(ti.bytes_sent.expect("bytes_sent") >= MB4 as u64);
    assert!(ti.bytes_retrans.is_some());
    assert!(ti.rtt_us > 0);
    assert!(ti.min_rtt_us.expect("min_rtt") > 0);
    assert!(ti.min_rtt_us.unwrap_or(0) <= ti.rtt_us.max(1) * 100);
    // Loopback MTU is 65536; MSS is that minus IP/TCP headers and options.
    assert!((60_000..=65_495).contains(&ti.snd_mss), "snd_mss {}", ti.snd_mss);
    assert!(ti.snd_cwnd >= 2);
    assert!(ti.segs_out.expect("segs_out") > 0);
    assert!(ti.data_segs_out.expect("data_segs_out") > 0);
    assert!(ti.delivered.expect("delivered") > 0);
    // Busy time is accounted in jiffies; a fast loopback transfer can finish
    // within one, so only its presence is checked.
    assert!(ti.busy_time_us.is_some());
    assert!(ti.snd_wnd.expect("snd_wnd") > 0);
    assert!(ti.pacing_rate_bps.expect("pacing") > 0);
    assert_eq!(ti.unacked, 0, "all data acked");
    // Window scaling is negotiated on loopback; the 4-bit fields must agree
    // crosswise with the peer's view (validates the bitfield decoding).
    let peer = tcp_info(&_server).expect("server tcp_info");
    assert_eq!(ti.snd_wscale, peer.rcv_wscale);
    assert_eq!(ti.rcv_wscale, peer.snd_wscale);
    assert!(ti.snd_wscale <= 14 && ti.rcv_wscale <= 14);
    assert!(peer.bytes_received.expect("bytes_received") >= MB4 as u64);
}

#[test]
fn bbr_cc_info_after_transfer() {
    let (mut client, server) = pair();
    set_congestion(&client, "bbr").expect("bbr");
    let _server = push(&mut client, server, MB4);
    let cc = cc_info(&client).expect("cc_info");
    let Some(CcInfo::Bbr(bbr)) = cc else {
        panic!("expected BBR info, got {cc:?}");
    };
    eprintln!("{bbr:?}");
    assert!(bbr.bw_bps > 0);
    assert!(bbr.min_rtt_us > 0 && bbr.min_rtt_us != u32::MAX);
    assert!(matches!(bbr.mode, BbrMode::Startup | BbrMode::Drain | BbrMode::ProbeBw | BbrMode::ProbeRtt), "v1 gains must map to a known mode: {bbr:?}");
}

#[test]
fn cubic_and_reno_have_no_cc_info() {
    let (mut client, server) = pair();
    set_congestion(&client, "cubic").expect("cubic");
    let _server = push(&mut client, server, 1 << 20);
    assert_eq!(cc_info(&client).expect("cc_info"), None);
    set_congestion(&client, "reno").expect("reno");
    assert_eq!(cc_info(&client).expect("cc_info"), None);
}

#[test]
fn sample_read_and_serialize() {
    let (mut client, server) = pair();
    set_congestion(&client, "bbr").expect("bbr");
    let _server = push(&mut client, server, 2 << 20);
    let s = Sample::read(&client, 1234).expect("sample");
    assert_eq!(s.t_us, 1234);
    assert!(s.bytes_acked >= 2 << 20);
    assert!(s.rtt_us > 0 && s.cwnd > 0 && s.segs_out > 0);
    let bbr = s.bbr.expect("bbr in sample");
    let json = serde_json::to_value(s).expect("json");
    assert_eq!(json["t_us"], 1234);
    let mode = json["bbr"]["mode"].as_str().expect("mode string");
    assert!(["STARTUP", "DRAIN", "PROBE_BW", "PROBE_RTT"].contains(&mode), "{mode}");
    assert_eq!(json["bbr"]["bw_bps"], bbr.bw_bps);

    set_congestion(&client, "cubic").expect("cubic");
    let s = Sample::read(&client, 0).expect("sample");
    assert!(s.bbr.is_none());
    assert!(serde_json::to_string(&s).expect("json").contains("\"bbr\":null"));
}

#[test]
fn tcp_info_and_cc_info_serialize() {
    let (mut client, server) = pair();
    set_congestion(&client, "bbr").expect("bbr");
    let _server = push(&mut client, server, 1 << 20);
    let ti = tcp_info(&client).expect("tcp_info");
    let v = serde_json::to_value(ti).expect("json");
    assert!(v["rtt_us"].as_u64().expect("rtt") > 0);
    let cc = cc_info(&client).expect("cc").expect("some");
    let v = serde_json::to_value(cc).expect("json");
    assert_eq!(v["kind"], "bbr");
}

#[test]
fn proc_sysctls() {
    let avail = available_congestion_controls().expect("available");
    assert!(avail.iter().any(|a| a == "cubic" || a == "reno"), "{avail:?}");
    let allowed = allowed_congestion_controls().expect("allowed");
    assert!(!allowed.is_empty());
    let default = default_congestion_control().expect("default");
    assert!(avail.contains(&default), "{default} not in {avail:?}");
    // A fresh socket gets the default.
    let (client, _server) = pair();
    assert_eq!(congestion(&client).expect("get"), default);
    let qdisc = default_qdisc().expect("qdisc");
    assert!(!qdisc.is_empty() && !qdisc.contains(char::is_whitespace));
}
