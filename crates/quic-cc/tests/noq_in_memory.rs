//! The controller inside the real QUIC stack: two noq-proto endpoints (sans-IO) connected
//! in memory through a simulated bottleneck, on a virtual clock. The client sends a bulk
//! unidirectional stream with our BBRv3; the same run with noq's own CUBIC is the contrast.
//! This checks the glue (trait call order, pacing through `metrics().pacing_rate`, read-back
//! through `Connection::congestion_state`), not just the model.
//!
//! `tests/data/localhost.*.der`: a self-signed P-256 certificate for "localhost" (valid until
//! 2126) and its PKCS#8 key, made with openssl for this test only.

use std::collections::VecDeque;
use std::net::{Ipv4Addr, SocketAddr};
use std::num::NonZeroUsize;
use std::sync::Arc;
use std::time::{Duration, Instant};

use bytes::BytesMut;
use ccbench_quic_cc::{Bbr, BbrFactory, BbrState, BbrVersion, ControllerFactory, Telemetry};
use noq_proto::congestion::CubicConfig;
use noq_proto::rustls::pki_types::{CertificateDer, PrivateKeyDer, PrivatePkcs8KeyDer};
use noq_proto::rustls::RootCertStore;
use noq_proto::{
    ClientConfig, Connection, ConnectionHandle, DatagramEvent, Dir, Endpoint, EndpointConfig, Event, FourTuple, PathId, ServerConfig, StreamId, TransportConfig,
};

const CERT: &[u8] = include_bytes!("data/localhost.cert.der");
const KEY: &[u8] = include_bytes!("data/localhost.key.der");

/// One direction of the path: an optional rate-limited drop-tail FIFO, then a fixed delay.
struct Pipe {
    rate_bytes_per_s: Option<f64>,
    delay: Duration,
    buffer: f64,
    free_at: Duration,
    queue: VecDeque<(Duration, Vec<u8>)>,
    /// (time, queueing delay) of every datagram that entered the queue.
    queue_delays: Vec<(Duration, Duration)>,
    dropped: u64,
    /// Random loss before the queue, from a fixed-seed xorshift.
    loss: f64,
    /// Reordering: this share of datagrams is held back after the queue by this many
    /// serialization times (+1 ns, so the last of them is overtaken too), as ccbench-link's
    /// `--reorder 1%:10pkt` holds a packet (`crates/link/src/reorder.rs`).
    reorder: Option<(f64, u32)>,
    /// Datagrams held back by `reorder`.
    reordered: u64,
    rng: u64,
}

impl Pipe {
    fn new(rate_bytes_per_s: Option<f64>, delay: Duration, buffer: f64) -> Self {
        Self {
            loss: 0.0,
            reorder: None,
            reordered: 0,
            rng: 0x2545_F491_4F6C_DD1D,
            rate_bytes_per_s,
            delay,
            buffer,
            free_at: Duration::ZERO,
            queue: VecDeque::new(),
            queue_delays: Vec::new(),
            dropped: 0,
        }
    }

    fn draw(&mut self) -> f64 {
        self.rng ^= self.rng << 13;
        self.rng ^= self.rng >> 7;
        self.rng ^= self.rng << 17;
        (self.rng >> 11) as f64 / (1u64 << 53) as f64
    }

    fn push(&mut self, now: Duration, datagram: Vec<u8>) {
        if self.loss > 0.0 && self.draw() < self.loss {
            return;
        }
        let arrive = match self.rate_bytes_per_s {
            None => now + self.delay,
            Some(rate) => {
                let waiting = self.free_at.saturating_sub(now);
                if waiting.as_secs_f64() * rate + datagram.len() as f64 > self.buffer {
                    self.dropped += 1;
                    return;
                }
                self.queue_delays.push((now, waiting));
                self.free_at = self.free_at.max(now) + Duration::from_secs_f64(datagram.len() as f64 / rate);
                self.free_at + self.delay
            }
        };
        let mut arrive = arrive;
        if let (Some((p, packets)), Some(rate)) = (self.reorder, self.rate_bytes_per_s) {
            if self.draw() < p {
                self.reordered += 1;
                arrive += Duration::from_secs_f64(f64::from(packets) * datagram.len() as f64 / rate) + Duration::from_nanos(1);
            }
        }
        // In arrival order, so that the datagrams sent after a held one overtake it (the same
        // arrival time keeps the order of sending).
        let at = self.queue.partition_point(|(t, _)| *t <= arrive);
        self.queue.insert(at, (arrive, datagram));
    }

    fn pop(&mut self, now: Duration) -> Option<Vec<u8>> {
        if self.queue.front()?.0 <= now {
            return self.queue.pop_front().map(|(_, d)| d);
        }
        None
    }

    fn next_arrival(&self) -> Option<Duration> {
        self.queue.front().map(|(t, _)| *t)
    }
}

struct Peer {
    endpoint: Endpoint,
    conn: Option<(ConnectionHandle, Connection)>,
    addr: SocketAddr,
}

impl Peer {
    /// Feeds one datagram from `from` to this endpoint; a stateless response goes to `reply`.
    fn receive(&mut self, at: Instant, now: Duration, from: SocketAddr, data: Vec<u8>, reply: &mut Pipe) {
        let mut buf = Vec::new();
        match self.endpoint.handle(at, FourTuple::new(from, None), None, BytesMut::from(&data[..]), &mut buf) {
            Some(DatagramEvent::NewConnection(incoming)) => {
                let accepted = self.endpoint.accept(incoming, at, &mut buf, None);
                self.conn = Some(accepted.expect("server accepts"));
            }
            Some(DatagramEvent::ConnectionEvent(_, event)) => {
                if let Some((_, conn)) = self.conn.as_mut() {
                    conn.handle_event(event);
                }
            }
            Some(DatagramEvent::Response(t)) => reply.push(now, buf[..t.size].to_vec()),
            None => {}
        }
    }

    /// Timers, endpoint events, then everything the connection wants to send.
    fn drive(&mut self, at: Instant, now: Duration, out: &mut Pipe) {
        let Some((ch, conn)) = self.conn.as_mut() else { return };
        if conn.poll_timeout().is_some_and(|t| t <= at) {
            conn.handle_timeout(at);
        }
        while let Some(event) = conn.poll_endpoint_events() {
            if let Some(back) = self.endpoint.handle_event(*ch, event) {
                conn.handle_event(back);
            }
        }
        let mut buf = Vec::new();
        while let Some(t) = conn.poll_transmit(at, NonZeroUsize::MIN, &mut buf) {
            out.push(now, buf[..t.size].to_vec());
            buf.clear();
        }
    }

    fn timeout(&self) -> Option<Instant> {
        self.conn.as_ref().and_then(|(_, c)| c.poll_timeout())
    }
}

struct Run {
    /// Bytes the server application read, by time.
    received: Vec<(Duration, u64)>,
    queue_delays: Vec<(Duration, Duration)>,
    dropped: u64,
    reordered: u64,
    client: Connection,
    /// The virtual clock's zero.
    t0: Instant,
}

impl Run {
    fn goodput_bytes_per_s(&self, from: Duration, to: Duration) -> f64 {
        let at = |t: Duration| self.received.iter().take_while(|(x, _)| *x <= t).last().map_or(0, |(_, b)| *b);
        (at(to) - at(from)) as f64 / (to - from).as_secs_f64()
    }
    fn median_queue_delay(&self, from: Duration) -> Duration {
        let mut d: Vec<Duration> = self.queue_delays.iter().filter(|(t, _)| *t >= from).map(|(_, d)| *d).collect();
        d.sort();
        d[d.len() / 2]
    }
}

/// 20 Mbit/s, 20 ms RTT, 8-BDP buffer client → server; the return path only delays.
fn run(factory: Arc<dyn ControllerFactory + Send + Sync>, seconds: u64, loss: f64) -> Run {
    run_on(factory, seconds, Duration::from_millis(20), 8.0, loss, None)
}

/// 20 Mbit/s client → server with this RTT, buffer (in BDPs), random loss and reordering
/// (share, packets) on the way there; the return path only delays.
fn run_on(factory: Arc<dyn ControllerFactory + Send + Sync>, seconds: u64, rtt: Duration, buffer_bdp: f64, loss: f64, reorder: Option<(f64, u32)>) -> Run {
    let rate = 20e6 / 8.0;
    let bdp = rate * rtt.as_secs_f64();
    let mut up = Pipe::new(Some(rate), rtt / 2, buffer_bdp * bdp);
    up.loss = loss;
    up.reorder = reorder;
    let mut down = Pipe::new(None, rtt / 2, f64::INFINITY);

    let key = PrivateKeyDer::Pkcs8(PrivatePkcs8KeyDer::from(KEY.to_vec()));
    let server_config = ServerConfig::with_single_cert(vec![CertificateDer::from(CERT.to_vec())], key).unwrap();
    let mut roots = RootCertStore::empty();
    roots.add(CertificateDer::from(CERT.to_vec())).unwrap();
    let mut client_config = ClientConfig::with_root_certificates(Arc::new(roots)).unwrap();
    let mut transport = TransportConfig::default();
    transport.congestion_controller_factory(factory);
    client_config.transport_config(Arc::new(transport));

    // Seeded, so that noq's random choices (connection IDs, skipped packet numbers) and with
    // them the whole run repeat exactly.
    let mut endpoint_config = EndpointConfig::default();
    endpoint_config.rng_seed(Some([7; 32]));
    let endpoint_config = Arc::new(endpoint_config);
    let server_addr = SocketAddr::from((Ipv4Addr::LOCALHOST, 4433));
    let client_addr = SocketAddr::from((Ipv4Addr::LOCALHOST, 5555));
    let mut server = Peer { endpoint: Endpoint::new(endpoint_config.clone(), Some(Arc::new(server_config)), true), conn: None, addr: server_addr };
    let mut client = Peer { endpoint: Endpoint::new(endpoint_config, None, true), conn: None, addr: client_addr };

    let t0 = Instant::now();
    let mut now = Duration::ZERO;
    client.conn = Some(client.endpoint.connect(t0, client_config, server_addr, "localhost").unwrap());
    let chunk = vec![0u8; 64 * 1024];
    let (mut stream, mut connected, mut received) = (None, false, 0u64);
    let mut server_stream: Option<StreamId> = None;
    let mut received_log = Vec::new();
    let end = Duration::from_secs(seconds);
    while now < end {
        let at = t0 + now;
        while let Some(d) = up.pop(now) {
            server.receive(at, now, client.addr, d, &mut down);
        }
        while let Some(d) = down.pop(now) {
            client.receive(at, now, server.addr, d, &mut up);
        }
        if let Some((_, conn)) = client.conn.as_mut() {
            while let Some(event) = conn.poll() {
                connected |= matches!(event, Event::Connected);
            }
            if connected {
                let id = *stream.get_or_insert_with(|| conn.streams().open(Dir::Uni).unwrap());
                while matches!(conn.send_stream(id).write(&chunk), Ok(n) if n > 0) {}
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
        received_log.push((now, received));
        server.drive(at, now, &mut down);
        client.drive(at, now, &mut up);

        let mut next = end;
        for t in [up.next_arrival(), down.next_arrival()].into_iter().flatten() {
            next = next.min(t);
        }
        for t in [client.timeout(), server.timeout()].into_iter().flatten() {
            next = next.min(t.saturating_duration_since(t0));
        }
        now = next.max(now + Duration::from_micros(1)).min(end);
    }
    Run { received: received_log, queue_delays: up.queue_delays, dropped: up.dropped, reordered: up.reordered, client: client.conn.take().unwrap().1, t0 }
}

fn secs(s: u64) -> Duration {
    Duration::from_secs(s)
}

#[test]
fn bbr3_in_noq_paces_at_the_bottleneck_with_a_small_queue() {
    let telemetry = Telemetry::default();
    let bbr = run(BbrFactory::new(BbrVersion::V3, telemetry.clone()), 12, 0.0);
    let cubic = run(Arc::new(CubicConfig::default()), 12, 0.0);
    let link = 20e6 / 8.0;

    // Read back as the QUIC workload does: the controller in effect is ours, v3.
    let controller = bbr.client.congestion_state(PathId::ZERO).expect("path 0");
    let ours = controller.clone_box().into_any().downcast::<Bbr>().expect("our Bbr");
    assert_eq!(ours.version(), BbrVersion::V3);

    let events = telemetry.take_events();
    let states: Vec<BbrState> = events.iter().map(|e| e.to).collect();
    assert_eq!(events[0].from, BbrState::Startup);
    assert_eq!(events[0].to, BbrState::Drain);
    for s in [BbrState::ProbeBwCruise, BbrState::ProbeBwUp, BbrState::ProbeRtt] {
        assert!(states.contains(&s), "never in {s}: {states:?}");
    }

    let (from, to) = (secs(3), secs(12));
    let goodput = bbr.goodput_bytes_per_s(from, to) / link;
    let cubic_goodput = cubic.goodput_bytes_per_s(from, to) / link;
    let q_bbr = bbr.median_queue_delay(from);
    let q_cubic = cubic.median_queue_delay(from);
    println!(
        "BBRv3: goodput {goodput:.3} of the link, median queue {q_bbr:?}, drops {}; \
         CUBIC: goodput {cubic_goodput:.3}, median queue {q_cubic:?}, drops {}",
        bbr.dropped, cubic.dropped
    );
    // Stream payload over UDP payload (QUIC headers, ACKs) and ProbeRTT cost a few %.
    assert!(goodput > 0.85, "goodput {goodput}");
    // BBR keeps the 8-BDP (160 ms) buffer nearly empty; CUBIC fills it until it overflows.
    assert!(q_bbr < Duration::from_millis(5), "BBR median queue {q_bbr:?}");
    assert!(q_bbr * 2 < q_cubic, "BBR {q_bbr:?} vs CUBIC {q_cubic:?}");
    assert_eq!(bbr.dropped, 0, "BBR overflowed a deep buffer");

    let snap = telemetry.snapshot().unwrap();
    let max_bw = snap.max_bw_bps as f64 / 8.0;
    assert!((max_bw / link - 1.0).abs() < 0.05, "max_bw {max_bw} vs link {link}");
}

/// Random loss in the real stack: BBR keeps most of the link at 1 % where CUBIC, as the
/// Mathis relation predicts (1.22 · MSS / (RTT · √p) ≈ 0.29 of this link for Reno), cannot;
/// above the 2 % loss threshold BBRv3 backs off.
#[test]
fn random_loss_in_noq() {
    let goodput = |factory: Arc<dyn ControllerFactory + Send + Sync>, loss| run(factory, 12, loss).goodput_bytes_per_s(secs(3), secs(12)) / 2.5e6;
    let bbr = |version, loss| goodput(BbrFactory::new(version, Telemetry::default()), loss);
    let v3_1 = bbr(BbrVersion::V3, 0.01);
    let v2_1 = bbr(BbrVersion::V2, 0.01);
    let v3_5 = bbr(BbrVersion::V3, 0.05);
    let cubic_1 = goodput(Arc::new(CubicConfig::default()), 0.01);
    println!("1 % loss: BBRv3 {v3_1:.3}, BBRv2 {v2_1:.3}, CUBIC {cubic_1:.3}; 5 % loss: BBRv3 {v3_5:.3}");
    // The target (≥ 80 % at 1 % loss) is for BBRv3. v2 also judges excess loss per ACK,
    // which on this small-BDP path ends its probes at any loss (measured 0.785); it must still
    // beat CUBIC well.
    assert!(v3_1 >= 0.8, "1 % loss: v3 {v3_1}");
    assert!(v2_1 >= 0.7 && v2_1 > 2.0 * cubic_1, "1 % loss: v2 {v2_1}, CUBIC {cubic_1}");
    assert!((0.15..0.6).contains(&cubic_1), "CUBIC at 1 % loss: {cubic_1}");
    assert!(v3_5 < 0.5 && v3_5 < v3_1 - 0.3, "5 % loss: v3 {v3_5}");
}

/// Reordering is not loss (issue 31, conform A.17): 1 % of datagrams overtaken by the 10 after
/// them on a 20 Mbit/s path with a 4-BDP buffer. noq declared each such packet lost with its
/// fixed thresholds (RFC 9002 §6.1.1: 3 packets; §6.1.2: 9/8 RTT, which a packet held back
/// 6 ms misses below about 50 ms), every episode then proved spurious, and each undo reset
/// STARTUP's plateau count (draft-ietf-ccwg-bbr-06 §5.5.11.2 BBRResetFullBW), so at 80 ms
/// BBRv3 never left STARTUP. The patched noq raises both thresholds past the first reordering
/// it proves (vendor/noq-proto PATCH.md, "Reordering"), as Linux raises `tp->reordering` and
/// RACK its window, after which reordering of the same depth is not taken for loss. Measured
/// in this test with the thresholds held at 3 and 9/8: 80 ms, 198 packets declared lost, 186
/// spurious congestion events, no DRAIN; with the time threshold alone held, 20 ms: 176 lost,
/// 172 spurious.
#[test]
fn reordering_raises_the_loss_thresholds_and_startup_ends() {
    for rtt_ms in [20, 80] {
        let telemetry = Telemetry::default();
        let mut run = run_on(BbrFactory::new(BbrVersion::V3, telemetry.clone()), 12, Duration::from_millis(rtt_ms), 4.0, 0.0, Some((0.01, 10)));
        let stats = run.client.path_stats(PathId::ZERO).expect("path 0");
        let events = telemetry.take_events();
        let drain = events.iter().find(|e| e.from == BbrState::Startup && e.to == BbrState::Drain).map(|e| e.at.saturating_duration_since(run.t0));
        println!(
            "{rtt_ms} ms: reordered {} datagrams; packet threshold {}, time threshold {}/1000 RTT, lost {} packets, {} spurious congestion events of {}, buffer drops {}; STARTUP → DRAIN at {drain:?}",
            run.reordered, stats.packet_threshold, stats.time_threshold_milli, stats.lost_packets, stats.spurious_congestion_events, stats.congestion_events, run.dropped
        );
        assert!(run.reordered > 100, "{rtt_ms} ms: the pipe reordered only {} datagrams", run.reordered);
        // Overtaken by 10 packets: the ACK that finally covers the packet has its largest 10
        // (11 with a delayed ACK) above it, and the threshold must exceed that. Bounded: nothing
        // here is displaced by more than the 10 packets and an ACK's few.
        assert!((11..=16).contains(&stats.packet_threshold), "{rtt_ms} ms: packet threshold {}", stats.packet_threshold);
        // Held 5 ms (10 datagrams at 20 Mbit/s) beyond the RTT: above 9/8 at 20 ms; never
        // beyond the 2 RTTs of the cap.
        assert!((1126..=2000).contains(&stats.time_threshold_milli), "{rtt_ms} ms: time threshold {}", stats.time_threshold_milli);
        // Once learnt, reordering of the same depth is no longer declared lost: of ~200
        // reorderings only the first few can have been.
        assert!(stats.spurious_congestion_events <= 5, "{rtt_ms} ms: {} spurious congestion events", stats.spurious_congestion_events);
        // STARTUP's plateau, then: measured at 1.68 s at 80 ms, a dozen rounds or so.
        let drain = drain.unwrap_or_else(|| panic!("{rtt_ms} ms: BBRv3 never left STARTUP"));
        assert!(drain < Duration::from_secs(3), "{rtt_ms} ms: STARTUP left only at {drain:?}");
    }
}
