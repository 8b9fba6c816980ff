//! Issue 17's cost budget: what one Gbit/s of QUIC payload costs in CPU on this machine, part
//! by part, so that the measured whole (`ccbench bench transports`, "CPU per Gbit/s without
//! the emulator") can be compared with what cannot be avoided.
//!
//! ```text
//! cargo run --release -p ccbench-workload --example quic_budget [-- SECONDS_PER_PART]
//! ```
//!
//! Parts, each in cores per Gbit/s of payload (CPU seconds per second at 1 Gbit/s):
//! 1. the cipher suite noq negotiates here (checked below with the same rustls provider), seal
//!    and open of every packet plus header protection, through rustls's QUIC keys — the code
//!    noq calls;
//! 2. UDP segmentation offload: `sendmsg` of 10-segment GSO batches (noq's
//!    `MAX_TRANSMIT_SEGMENTS`) to a socket with GRO, which reads them with `recvmmsg`, through
//!    noq-udp, over loopback (no QUIC; the kernel's copies in and out and the syscalls);
//! 3. noq-proto's whole sans-IO work for a bulk stream, both endpoints in one thread, no
//!    sockets, no async runtime: packets built and parsed, ACKs, streams, crypto included.
//!
//! 4. for scale, one memcpy of every byte.
//!
//! 3 − 1 is noq-proto's own per-packet work; (1 + 2 + noq-proto's own) is what a QUIC flow
//! costs before any task switch or wake-up of the async driver. Each part is single-threaded
//! except 2 (a sender and a receiver thread, each charged per byte it handled), and measured
//! with the threads' CPU clocks, not wall time.

use std::io::IoSliceMut;
use std::net::{Ipv4Addr, SocketAddr, UdpSocket};
use std::num::NonZeroUsize;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use bytes::BytesMut;
use noq::rustls;
use noq::udp::{RecvMeta, Transmit, UdpSockRef, UdpSocketState, BATCH_SIZE};
use noq_proto::{
    ClientConfig, Connection, ConnectionHandle, DatagramEvent, Dir, Endpoint, EndpointConfig, Event, FourTuple, ServerConfig, StreamId, TransportConfig, VarInt,
};

/// QUIC packets on a 1500-byte path: noq's largest UDP payload (its PMTUD upper bound).
const DATAGRAM: usize = 1452;
/// noq's `MAX_TRANSMIT_SEGMENTS`: datagrams per GSO send.
const GSO_SEGMENTS: usize = 10;
/// Short-header overhead of a 1-RTT packet as noq builds them: flags, 8-byte connection ID,
/// packet number (up to 4), AEAD tag (16), stream frame header (~8).
const OVERHEAD: usize = 1 + 8 + 4 + 16 + 8;

fn thread_cpu() -> Duration {
    cpu_clock(libc::CLOCK_THREAD_CPUTIME_ID)
}

fn cpu_clock(clock: libc::clockid_t) -> Duration {
    let mut ts = libc::timespec { tv_sec: 0, tv_nsec: 0 };
    // SAFETY: `ts` is a valid timespec for the call to fill.
    let rc = unsafe { libc::clock_gettime(clock, &mut ts) };
    assert_eq!(rc, 0, "clock_gettime: {}", std::io::Error::last_os_error());
    Duration::new(ts.tv_sec as u64, ts.tv_nsec as u32)
}

/// CPU seconds spent per second of 1 Gbit/s of `payload_bytes`.
fn cores_per_gbit(cpu: Duration, payload_bytes: u64) -> f64 {
    cpu.as_secs_f64() / (payload_bytes as f64 * 8.0 / 1e9)
}

struct Part {
    name: String,
    cores_per_gbit: f64,
    detail: String,
}

/// The suite a rustls client and server with noq's provider (ring's default, TLS 1.3 only,
/// as noq-proto's `QuicClientConfig`/`QuicServerConfig` build them) agree on.
fn negotiated_suite(cert: &rustls::pki_types::CertificateDer<'static>, key: &[u8]) -> rustls::SupportedCipherSuite {
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let key = rustls::pki_types::PrivateKeyDer::Pkcs8(rustls::pki_types::PrivatePkcs8KeyDer::from(key.to_vec()));
    let server = rustls::ServerConfig::builder_with_provider(provider.clone())
        .with_protocol_versions(&[&rustls::version::TLS13])
        .unwrap()
        .with_no_client_auth()
        .with_single_cert(vec![cert.clone()], key)
        .unwrap();
    let mut roots = rustls::RootCertStore::empty();
    roots.add(cert.clone()).unwrap();
    let client = rustls::ClientConfig::builder_with_provider(provider)
        .with_protocol_versions(&[&rustls::version::TLS13])
        .unwrap()
        .with_root_certificates(roots)
        .with_no_client_auth();
    let mut c = rustls::ClientConnection::new(Arc::new(client), "localhost".try_into().unwrap()).unwrap();
    let mut s = rustls::ServerConnection::new(Arc::new(server)).unwrap();
    while c.is_handshaking() || s.is_handshaking() {
        let mut wire = Vec::new();
        c.write_tls(&mut wire).unwrap();
        s.read_tls(&mut &wire[..]).unwrap();
        s.process_new_packets().unwrap();
        wire.clear();
        s.write_tls(&mut wire).unwrap();
        c.read_tls(&mut &wire[..]).unwrap();
        c.process_new_packets().unwrap();
    }
    c.negotiated_cipher_suite().expect("negotiated")
}

/// Part 1: seal + header protection at the sender, header unprotection + open at the receiver,
/// for full-size packets, with the QUIC packet keys rustls gives noq.
fn crypto(suite: rustls::SupportedCipherSuite, seconds: f64) -> Part {
    let tls13 = suite.tls13().expect("TLS 1.3 suite");
    let quic = tls13.quic_suite().expect("QUIC suite");
    let cid = [7u8; 8];
    let tx = rustls::quic::Keys::initial(rustls::quic::Version::V1, tls13, quic.quic, &cid, rustls::Side::Client);
    let rx = rustls::quic::Keys::initial(rustls::quic::Version::V1, tls13, quic.quic, &cid, rustls::Side::Server);
    let header_len = 1 + 8 + 4;
    let tag = tx.local.packet.tag_len();
    let mut packet = vec![0x5au8; DATAGRAM];
    let (start, cpu0) = (Instant::now(), thread_cpu());
    let mut pn = 0u64;
    while start.elapsed().as_secs_f64() < seconds {
        for _ in 0..1000 {
            pn += 1;
            let (header, rest) = packet.split_at_mut(header_len);
            let body = DATAGRAM - header_len - tag;
            let t = tx.local.packet.encrypt_in_place(pn, header, &mut rest[..body]).unwrap();
            rest[body..].copy_from_slice(t.as_ref());
            let (first, pn_bytes) = header.split_at_mut(1);
            tx.local.header.encrypt_in_place(&rest[4..20], &mut first[0], &mut pn_bytes[8..12]).unwrap();
            rx.remote.header.decrypt_in_place(&rest[4..20], &mut first[0], &mut pn_bytes[8..12]).unwrap();
            rx.remote.packet.decrypt_in_place(pn, header, rest).unwrap();
        }
    }
    let cpu = thread_cpu() - cpu0;
    let payload = pn * (DATAGRAM - OVERHEAD) as u64;
    Part {
        name: format!("{:?}: seal + open + header protection", tls13.common.suite),
        cores_per_gbit: cores_per_gbit(cpu, payload),
        detail: format!("{:.0} ns per {DATAGRAM}-byte packet", cpu.as_nanos() as f64 / pn as f64),
    }
}

/// For scale: one copy of every payload byte, 64 KB at a time (a received batch into a buffer
/// of its own, as noq's endpoint driver does, or a stream's data into packets), through 16 MB
/// so that the data are not all in cache.
fn copy(seconds: f64) -> Part {
    const RING: usize = 16 << 20;
    const PIECE: usize = 64 * 1024;
    let src = vec![0x5au8; RING];
    let mut dst = vec![0u8; RING];
    let (start, cpu0) = (Instant::now(), thread_cpu());
    let mut bytes = 0u64;
    while start.elapsed().as_secs_f64() < seconds {
        for (d, s) in dst.chunks_mut(PIECE).zip(src.chunks(PIECE)) {
            d.copy_from_slice(std::hint::black_box(s));
        }
        std::hint::black_box(&mut dst);
        bytes += RING as u64;
    }
    let cpu = thread_cpu() - cpu0;
    Part {
        name: "for scale: one memcpy of each byte".to_string(),
        cores_per_gbit: cores_per_gbit(cpu, bytes),
        detail: format!("{:.1} GB/s, 64 KB pieces through 16 MB", bytes as f64 / cpu.as_secs_f64() / 1e9),
    }
}

/// Part 2: GSO send, GRO receive, over loopback, through noq-udp as noq's endpoint does.
fn udp(seconds: f64) -> Part {
    let rx = UdpSocket::bind((Ipv4Addr::LOCALHOST, 0)).unwrap();
    let tx = UdpSocket::bind((Ipv4Addr::LOCALHOST, 0)).unwrap();
    for s in [&rx, &tx] {
        let s = socket2::SockRef::from(s);
        s.set_recv_buffer_size(8 << 20).unwrap();
        s.set_send_buffer_size(8 << 20).unwrap();
    }
    rx.set_read_timeout(Some(Duration::from_millis(200))).unwrap();
    let rx_state = UdpSocketState::new(UdpSockRef::from(&rx)).unwrap();
    let tx_state = UdpSocketState::new(UdpSockRef::from(&tx)).unwrap();
    let segments = tx_state.max_gso_segments().get().min(GSO_SEGMENTS);
    let dest = rx.local_addr().unwrap();
    let done = Arc::new(AtomicBool::new(false));
    let start = Instant::now();
    let sender = {
        let done = done.clone();
        std::thread::spawn(move || {
            let contents = vec![0u8; DATAGRAM * segments];
            let (mut sent, cpu0) = (0u64, thread_cpu());
            while !done.load(Ordering::Relaxed) {
                let t = Transmit { destination: dest, ecn: None, contents: &contents, segment_size: Some(DATAGRAM), src_ip: None };
                if tx_state.try_send(UdpSockRef::from(&tx), &t).is_ok() {
                    sent += contents.len() as u64;
                }
            }
            (sent, thread_cpu() - cpu0)
        })
    };
    let rx_cpu0 = thread_cpu();
    let gro = rx_state.gro_segments().get();
    let mut storage = vec![0u8; DATAGRAM * gro.max(1) * BATCH_SIZE];
    let mut received = 0u64;
    let mut calls = 0u64;
    while start.elapsed().as_secs_f64() < seconds {
        let mut iovs: Vec<IoSliceMut<'_>> = storage.chunks_mut(DATAGRAM * gro.max(1)).map(IoSliceMut::new).collect();
        let mut metas = [RecvMeta::default(); BATCH_SIZE];
        if let Ok(n) = rx_state.recv(UdpSockRef::from(&rx), &mut iovs, &mut metas) {
            calls += 1;
            received += metas[..n].iter().map(|m| m.len as u64).sum::<u64>();
        }
    }
    let rx_cpu = thread_cpu() - rx_cpu0;
    done.store(true, Ordering::Relaxed);
    let (sent, tx_cpu) = sender.join().unwrap();
    let payload = |bytes: u64| bytes / DATAGRAM as u64 * (DATAGRAM - OVERHEAD) as u64;
    // Each side per byte it handled: a datagram the receiving socket's full buffer dropped
    // cost the sender but must not count against the receiver.
    let (tx_cost, rx_cost) = (cores_per_gbit(tx_cpu, payload(sent)), cores_per_gbit(rx_cpu, payload(received)));
    Part {
        name: format!("UDP: GSO send ({segments} segments) + GRO receive, loopback"),
        cores_per_gbit: tx_cost + rx_cost,
        detail: format!(
            "sender {tx_cost:.3} (with loopback's delivery into the receiving socket), receiver {rx_cost:.3}; {:.2} Gbit/s received, {:.1} % of sent, {:.1} datagrams per receive call",
            received as f64 * 8.0 / 1e9 / seconds,
            100.0 * received as f64 / sent.max(1) as f64,
            received as f64 / DATAGRAM as f64 / calls.max(1) as f64,
        ),
    }
}

/// One noq-proto endpoint with at most one connection.
struct Peer {
    endpoint: Endpoint,
    conn: Option<(ConnectionHandle, Connection)>,
    addr: SocketAddr,
}

impl Peer {
    fn receive(&mut self, now: Instant, from: SocketAddr, datagram: &[u8], out: &mut Vec<Vec<u8>>) {
        let mut buf = Vec::new();
        // A copy into a buffer of its own per datagram, as noq's endpoint driver hands each
        // received datagram to noq-proto.
        match self.endpoint.handle(now, FourTuple::new(from, None), None, BytesMut::from(datagram), &mut buf) {
            Some(DatagramEvent::NewConnection(incoming)) => self.conn = Some(self.endpoint.accept(incoming, now, &mut buf, None).expect("accept")),
            Some(DatagramEvent::ConnectionEvent(_, event)) => {
                if let Some((_, c)) = self.conn.as_mut() {
                    c.handle_event(event);
                }
            }
            Some(DatagramEvent::Response(t)) => out.push(buf[..t.size].to_vec()),
            None => {}
        }
    }

    /// Timers, endpoint events, then every GSO batch the connection has; each batch is split
    /// into its datagrams for the peer, as GRO's stride would.
    fn drive(&mut self, now: Instant, out: &mut Vec<Vec<u8>>) {
        let Some((ch, conn)) = self.conn.as_mut() else { return };
        if conn.poll_timeout().is_some_and(|t| t <= now) {
            conn.handle_timeout(now);
        }
        while let Some(event) = conn.poll_endpoint_events() {
            if let Some(back) = self.endpoint.handle_event(*ch, event) {
                conn.handle_event(back);
            }
        }
        let mut buf = Vec::new();
        let max = NonZeroUsize::new(GSO_SEGMENTS).unwrap();
        while let Some(t) = conn.poll_transmit(now, max, &mut buf) {
            let stride = t.segment_size.unwrap_or(t.size);
            out.extend(buf[..t.size].chunks(stride).map(<[u8]>::to_vec));
            buf.clear();
        }
    }
}

/// Part 3: a bulk unidirectional stream between two noq-proto endpoints in this thread.
fn noq_proto(seconds: f64) -> Part {
    let ck = rcgen::generate_simple_self_signed(vec!["localhost".to_string()]).unwrap();
    let cert = ck.cert.der().clone();
    let key = rustls::pki_types::PrivatePkcs8KeyDer::from(ck.key_pair.serialize_der());
    let mut t = TransportConfig::default();
    // The QUIC workload's flow-control windows (crates/workload/src/quic/mod.rs `transport`)
    // and full-size packets from the start; CUBIC as quic:cubic.
    t.stream_receive_window(VarInt::from_u32(32 << 20)).receive_window(VarInt::from_u32(64 << 20)).send_window(64 << 20).initial_mtu(DATAGRAM as u16);
    t.congestion_controller_factory(ccbench_quic_cc::CubicFactory::new());
    let t = Arc::new(t);
    let mut server_config = ServerConfig::with_single_cert(vec![cert.clone()], key.into()).unwrap();
    server_config.transport_config(t.clone());
    let mut roots = rustls::RootCertStore::empty();
    roots.add(cert).unwrap();
    let mut client_config = ClientConfig::with_root_certificates(Arc::new(roots)).unwrap();
    client_config.transport_config(t);
    let ep = Arc::new(EndpointConfig::default());
    let mut server =
        Peer { endpoint: Endpoint::new(ep.clone(), Some(Arc::new(server_config)), true), conn: None, addr: SocketAddr::from((Ipv4Addr::LOCALHOST, 4433)) };
    let mut client = Peer { endpoint: Endpoint::new(ep, None, true), conn: None, addr: SocketAddr::from((Ipv4Addr::LOCALHOST, 5555)) };
    client.conn = Some(client.endpoint.connect(Instant::now(), client_config, server.addr, "localhost").unwrap());

    let chunk = bytes::Bytes::from(vec![0u8; 256 * 1024]);
    let (mut to_server, mut to_client): (Vec<Vec<u8>>, Vec<Vec<u8>>) = (Vec::new(), Vec::new());
    let (mut stream, mut server_stream, mut connected): (Option<StreamId>, Option<StreamId>, bool) = (None, None, false);
    let mut received = 0u64;
    let mut measuring: Option<(Instant, Duration, u64, u64)> = None;
    let mut packets = 0u64;
    loop {
        let now = Instant::now();
        for d in std::mem::take(&mut to_server) {
            packets += 1;
            server.receive(now, client.addr, &d, &mut to_client);
        }
        for d in std::mem::take(&mut to_client) {
            client.receive(now, server.addr, &d, &mut to_server);
        }
        if let Some((_, conn)) = client.conn.as_mut() {
            while let Some(event) = conn.poll() {
                connected |= matches!(event, Event::Connected);
            }
            if connected {
                let id = *stream.get_or_insert_with(|| conn.streams().open(Dir::Uni).unwrap());
                let mut s = conn.send_stream(id);
                // Shared buffers, as the bulk sender hands noq (`write_many_chunks`).
                loop {
                    let mut chunks = [chunk.clone()];
                    if !matches!(s.write_chunks(&mut &mut chunks[..]), Ok(n) if n > 0) {
                        break;
                    }
                }
            }
        }
        if let Some((_, conn)) = server.conn.as_mut() {
            while conn.poll().is_some() {}
            while let Some(id) = conn.streams().accept(Dir::Uni) {
                server_stream = Some(id);
            }
            if let Some(id) = server_stream {
                if let Ok(mut chunks) = conn.recv_stream(id).read(true) {
                    while let Ok(Some(c)) = chunks.next(usize::MAX) {
                        received += c.bytes.len() as u64;
                    }
                    let _ = chunks.finalize();
                }
            }
        }
        server.drive(now, &mut to_client);
        client.drive(now, &mut to_server);
        // Measure once the stream flows (handshake and slow start's first rounds excluded).
        match measuring {
            None if received > 64 << 20 => measuring = Some((now, thread_cpu(), received, packets)),
            Some((t0, _, _, _)) if now.duration_since(t0).as_secs_f64() >= seconds => break,
            _ => {}
        }
    }
    let (_, cpu0, bytes0, packets0) = measuring.unwrap();
    let cpu = thread_cpu() - cpu0;
    let (bytes, packets) = (received - bytes0, packets - packets0);
    Part {
        name: "noq-proto: both endpoints' sans-IO work (crypto included)".to_string(),
        cores_per_gbit: cores_per_gbit(cpu, bytes),
        detail: format!(
            "{:.2} Gbit/s in one thread, {:.0} ns per data packet",
            bytes as f64 * 8.0 / 1e9 / cpu.as_secs_f64(),
            cpu.as_nanos() as f64 / packets as f64
        ),
    }
}

fn main() {
    let seconds: f64 = std::env::args().nth(1).map_or(3.0, |s| s.parse().expect("SECONDS_PER_PART: a number of seconds"));
    let ck = rcgen::generate_simple_self_signed(vec!["localhost".to_string()]).unwrap();
    let suite = negotiated_suite(&ck.cert.der().clone(), &ck.key_pair.serialize_der());
    let parts = [crypto(suite, seconds), udp(seconds), noq_proto(seconds), copy(seconds)];
    println!("{:<64} {:>14}  detail", "part", "cores/(Gbit/s)");
    for p in &parts {
        println!("{:<64} {:>14.3}  {}", p.name, p.cores_per_gbit, p.detail);
    }
    let own = parts[2].cores_per_gbit - parts[0].cores_per_gbit;
    println!("{:<64} {:>14.3}  (noq-proto − crypto)", "noq-proto's own per-packet work", own);
    println!("{:<64} {:>14.3}  (crypto + UDP + noq-proto's own)", "sum: a QUIC flow before any task switch", parts[1].cores_per_gbit + parts[2].cores_per_gbit);
}
