//! One QUIC connection between the two ends of a path, as every QUIC workload makes it: the
//! sending end's controller set from the requested algorithm, the receiving end's from its own
//! (the same unless provoked otherwise), both read back before any data moves; and what the
//! sampler reads of the sending end every interval.

use std::net::{Ipv4Addr, SocketAddr, SocketAddrV4};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, OnceLock};
use std::time::{Duration, Instant};

use noq::{Connection, Endpoint, PathId};

use super::observe::Probe;
use super::{
    connection_seed, endpoint, observed_transport, observed_transport_with, read_back, udp_in, BbrView, ReadBack, Tls, Windows, HANDSHAKE_TIMEOUT, SNI,
};
use crate::common::micros_since;
use crate::Algorithm;
use crate::BbrEvent;
use crate::{QuicSample, RunContext, SeriesSink, Side, SocketId, WorkloadError};

/// A connected pair: the client's and the server's view of one connection.
pub(crate) struct Pair {
    pub sender: Connection,
    pub receiver: Connection,
    /// What the sending controller saw.
    pub probe: Arc<Probe>,
    /// The sending controller's BBR view, when it has one.
    pub bbr: Option<Arc<dyn BbrView>>,
    pub client_port: u16,
    pub read_back: ReadBack,
    pub sender_side: Side,
    /// The client's endpoint lives as long as its connection.
    pub client_endpoint: Endpoint,
}

impl Pair {
    /// The client's end of the connection (the one that opens streams).
    pub(crate) fn client(&self) -> &Connection {
        match self.sender_side {
            Side::Client => &self.sender,
            Side::Server => &self.receiver,
        }
    }

    /// The server's end of the connection.
    pub(crate) fn server(&self) -> &Connection {
        match self.sender_side {
            Side::Client => &self.receiver,
            Side::Server => &self.sender,
        }
    }
}

/// The algorithm after `quic:` in `requested`, or why it is not a QUIC name.
pub(crate) fn quic_algorithm(requested: &Algorithm) -> Result<String, WorkloadError> {
    if requested.is_quic() {
        Ok(requested.name().to_string())
    } else {
        Err(WorkloadError::Setup(format!("{:?} is not a QUIC algorithm", requested.to_string())))
    }
}

/// A server endpoint on `server_sa` inside the server's namespace, for [`connect_pair`].
pub(crate) fn server_endpoint(run: &RunContext<'_>, tls: &Tls, server_sa: SocketAddrV4) -> Result<Endpoint, WorkloadError> {
    // Each accepted connection gets its own config (see `connect_pair`); this one is never used.
    let (placeholder, _) = observed_transport("cubic", &Arc::new(Probe::default()), 0)?;
    endpoint(udp_in(run.server, server_sa)?, Some((*tls.server(placeholder)?).clone()))
}

/// Connects a fresh client endpoint in the client's namespace to `server` at `server_sa`, the
/// `sender_side` end running `algorithm` and the other end `receiver_alg`, and returns once
/// both ends are up; `conn` numbers the connection within the run, for its controllers'
/// seed; `windows` bound the receiving end's credit and the sending end's send window (each
/// applied to its end only). Fails when the sending controller read back is not the one asked
/// for.
#[allow(clippy::too_many_arguments)]
pub(crate) async fn connect_pair(
    run: &RunContext<'_>,
    server: &Endpoint,
    tls: &Tls,
    server_sa: SocketAddrV4,
    sender_side: Side,
    algorithm: &str,
    receiver_alg: &str,
    conn: u64,
    client_port: Option<u16>,
    windows: Windows,
) -> Result<Pair, WorkloadError> {
    let (dial, connected, accepting) = dial(run, server, tls, server_sa, sender_side, algorithm, receiver_alg, conn, client_port, windows)?;
    let (c, s) = tokio::time::timeout(HANDSHAKE_TIMEOUT, async { tokio::try_join!(connected, accepting) })
        .await
        .map_err(|_| WorkloadError::Setup(format!("the QUIC handshake with {server_sa} timed out")))??;
    dial.pair(c, s)
}

/// A connection being set up, for a caller that goes on as soon as the client's end is up (a
/// page, whose first request leaves with the client's last handshake flight, one round trip in,
/// as over TCP) and makes the [`Pair`] once the server's end is up too.
pub(crate) struct Dial {
    algorithm: String,
    sender_side: Side,
    send_probe: Arc<Probe>,
    bbr: Option<Arc<dyn BbrView>>,
    client_port: u16,
    client_endpoint: Endpoint,
}

/// Starts the handshake of [`connect_pair`]: the client's end (resolves when the client is
/// up) and the server's end (when the server accepted it), each to be awaited.
#[allow(clippy::type_complexity, clippy::too_many_arguments)]
pub(crate) fn dial<'a>(
    run: &RunContext<'_>,
    server: &'a Endpoint,
    tls: &Tls,
    server_sa: SocketAddrV4,
    sender_side: Side,
    algorithm: &str,
    receiver_alg: &str,
    conn: u64,
    client_port: Option<u16>,
    windows: Windows,
) -> Result<
    (
        Dial,
        impl std::future::Future<Output = Result<Connection, WorkloadError>> + 'a,
        impl std::future::Future<Output = Result<Connection, WorkloadError>> + 'a,
    ),
    WorkloadError,
> {
    let (send_probe, recv_probe) = (Arc::new(Probe::default()), Arc::new(Probe::default()));
    let seed = connection_seed(run.seed, conn);
    let (send_transport, bbr) = observed_transport_with(algorithm, &send_probe, seed, Windows { receive: None, ..windows })?;
    let (recv_transport, _) = observed_transport_with(receiver_alg, &recv_probe, seed, Windows { send: None, ..windows })?;
    let (client_transport, server_transport) = match sender_side {
        Side::Client => (send_transport, recv_transport),
        Side::Server => (recv_transport, send_transport),
    };
    // A flow with an access link of its own (`--flows quic:bbr3:1@10ms`) is told at the
    // emulator by this port, as a TCP flow is by its own.
    let client = endpoint(udp_in(run.client, SocketAddrV4::new(Ipv4Addr::UNSPECIFIED, client_port.unwrap_or(0)))?, None)?;
    let client_port = client.local_addr()?.port();
    let connecting =
        client.connect_with(tls.client(client_transport)?, SocketAddr::V4(server_sa), SNI).map_err(|e| WorkloadError::Setup(format!("QUIC connect: {e}")))?;
    let server_config = tls.server(server_transport)?;
    let accepting = async move {
        let incoming = server.accept().await.ok_or_else(|| WorkloadError::Setup("the QUIC server endpoint closed".into()))?;
        incoming
            .accept_with(server_config)
            .map_err(|e| WorkloadError::Setup(format!("QUIC accept: {e}")))?
            .await
            .map_err(|e| WorkloadError::Setup(format!("QUIC accept: {e}")))
    };
    let connected = async move { connecting.await.map_err(|e| WorkloadError::Setup(format!("QUIC handshake: {e}"))) };
    let dial = Dial { algorithm: algorithm.to_string(), sender_side, send_probe, bbr, client_port, client_endpoint: client };
    Ok((dial, connected, accepting))
}

impl Dial {
    /// The pair of the client's end `c` and the server's end `s`, both ends' controllers read
    /// back; fails when the sender's is not the one asked for.
    pub(crate) fn pair(self, c: Connection, s: Connection) -> Result<Pair, WorkloadError> {
        let (sender, receiver) = match self.sender_side {
            Side::Client => (c, s),
            Side::Server => (s, c),
        };
        let read_back = ReadBack { sender: read_back(&sender), receiver: read_back(&receiver) };
        let wanted = super::quic_name(&self.algorithm);
        if read_back.sender != wanted || !self.send_probe.was_built() {
            return Err(WorkloadError::CongestionMismatch { requested: wanted, actual: read_back.sender });
        }
        let Dial { send_probe, bbr, client_port, sender_side, client_endpoint, .. } = self;
        Ok(Pair { sender, receiver, probe: send_probe, bbr, client_port, read_back, sender_side, client_endpoint })
    }
}

/// One sample of a sending connection; `last` carries the previous acknowledged-byte count,
/// for the delivery rate over the interval.
pub(crate) fn sample(sender: &Connection, probe: &Probe, bbr: Option<&Arc<dyn BbrView>>, t_us: u64, last: &mut (Instant, u64)) -> QuicSample {
    let p = probe.read();
    let now = Instant::now();
    let dt = now.duration_since(last.0).as_secs_f64();
    let delivery_rate_bps = if dt > 0.0 { (p.acked_bytes.saturating_sub(last.1) as f64 * 8.0 / dt) as u64 } else { 0 };
    *last = (now, p.acked_bytes);
    let stats = sender.path_stats(PathId::ZERO).unwrap_or_default();
    let metrics = sender.congestion_state(PathId::ZERO).map(|c| c.metrics());
    let us = |d: Duration| d.as_micros().min(u32::MAX as u128) as u32;
    QuicSample {
        t_us,
        rtt_us: us(p.smoothed_rtt),
        min_rtt_us: us(p.min_rtt),
        latest_rtt_us: us(p.latest_rtt),
        rttvar_us: us(p.rttvar),
        cwnd_bytes: stats.cwnd,
        ssthresh_bytes: metrics.as_ref().and_then(|m| m.ssthresh),
        mtu: stats.current_mtu,
        bytes_in_flight: p.in_flight,
        pacing_rate_bps: metrics.as_ref().and_then(|m| m.pacing_rate).map(|r| r.saturating_mul(8)).or_else(|| window_pacing_bps(stats.cwnd, p.smoothed_rtt)),
        delivery_rate_bps,
        bytes_acked: p.acked_bytes,
        bytes_sent: stats.sent_bytes,
        bytes_lost: stats.lost_bytes,
        packets_sent: stats.sent_packets,
        packets_lost: stats.lost_packets,
        congestion_events: stats.congestion_events,
        spurious_congestion_events: stats.spurious_congestion_events,
        // 0 only from the default stats of a path already gone.
        packet_threshold: u32::try_from(stats.packet_threshold).ok().filter(|&n| n > 0),
        app_limited: p.app_limited,
        ack_stamp_age_p50_us: p.ack_stamp_age_p50_us,
        ack_stamp_age_p99_us: p.ack_stamp_age_p99_us,
        bbr: bbr.and_then(|b| b.snapshot()),
        // Filled where the account reads the same states (`bulk::quic::account`).
        send_states_us: None,
    }
}

/// The sending controller's BBR state changes since the last call, µs after `epoch`.
pub(crate) fn bbr_events(bbr: Option<&Arc<dyn BbrView>>, epoch: Instant) -> Vec<BbrEvent> {
    let Some(view) = bbr else { return Vec::new() };
    view.take_events()
        .into_iter()
        .map(|e| BbrEvent {
            t_us: e.at.saturating_duration_since(epoch).as_micros() as u64,
            from: e.from,
            to: e.to,
            round: e.round,
            full_bw_round: e.full_bw_round,
        })
        .collect()
}

/// The record of the one QUIC connection of an HTTP load: both ends' controllers read back,
/// and the sender's last sample and BBR events.
pub(crate) fn sender_record(pair: &Pair, cc_requested: &crate::Algorithm, last: Option<crate::QuicSample>, epoch: Instant) -> crate::SenderRecord {
    crate::SenderRecord {
        cc_requested: cc_requested.into(),
        cc_read_back: Some(pair.read_back.sender.clone()),
        transport: crate::Transport::Quic,
        cc_receiver: Some(pair.read_back.receiver.clone()),
        warning: pair.read_back.mismatch(),
        final_tcp_info: None,
        final_quic: last,
        bbr_events: bbr_events(pair.bbr.as_ref(), epoch),
        limited_by: None,
        mechanism: None,
        buffers: None,
    }
}

/// The rate noq's pacer derives from the window when the controller reports none (CUBIC,
/// NewReno): 5/4 of a window per smoothed RTT (noq-proto `connection/pacing.rs`).
fn window_pacing_bps(cwnd: u64, srtt: Duration) -> Option<u64> {
    (srtt > Duration::ZERO).then(|| (cwnd as f64 * 8.0 * 1.25 / srtt.as_secs_f64()) as u64)
}

/// A sending connection as the sampler reads it: the connection, what its controller saw, and
/// the socket its samples are filed under.
pub(crate) struct Sending<'a> {
    pub conn: &'a Connection,
    pub probe: &'a Probe,
    pub bbr: Option<&'a Arc<dyn BbrView>>,
    pub socket: SocketId,
}

/// What holds a load's connection: its sending end, when this process holds it (a remote
/// server's sending end is sampled where it runs).
pub(crate) trait Sampled: Sync {
    fn sending(&self) -> Option<Sending<'_>>;
}

impl Sampled for Pair {
    fn sending(&self) -> Option<Sending<'_>> {
        Some(Sending { conn: &self.sender, probe: &self.probe, bbr: self.bbr.as_ref(), socket: SocketId::Connection(self.client_port) })
    }
}

/// Samples the sending end of the connection in `held`, once it is there and this process
/// holds it, every `interval` until `done`, into `series` (µs after `epoch`); returns the last
/// reading's acknowledged-byte mark, for [`last_sample`].
pub(crate) fn sample_until<S: Sampled>(held: &OnceLock<S>, epoch: Instant, series: &dyn SeriesSink, interval: Duration, done: &AtomicBool) -> (Instant, u64) {
    let mut last = None;
    let mut next = Instant::now();
    while !done.load(Ordering::SeqCst) {
        if let Some(p) = held.get().and_then(Sampled::sending) {
            // From what the handshake already acknowledged, so the first delivery rate is not
            // its burst.
            let last = last.get_or_insert_with(|| (Instant::now(), p.probe.read().acked_bytes));
            let s = sample(p.conn, p.probe, p.bbr, micros_since(epoch), last);
            series.quic_sample(p.socket, &s);
        }
        next += interval;
        let now = Instant::now();
        if next <= now {
            next = now;
        }
        // Short naps keep the reaction to `done` prompt with long intervals.
        while Instant::now() < next && !done.load(Ordering::SeqCst) {
            std::thread::sleep(next.saturating_duration_since(Instant::now()).min(Duration::from_millis(20)));
        }
    }
    last.unwrap_or_else(|| (Instant::now(), 0))
}

/// The sending end's sample at the end of a load, handed to `series` too; `None` when this
/// process does not hold the sending end.
pub(crate) fn last_sample<S: Sampled>(held: &S, epoch: Instant, series: &dyn SeriesSink, last: &mut (Instant, u64)) -> Option<QuicSample> {
    let p = held.sending()?;
    let s = sample(p.conn, p.probe, p.bbr, micros_since(epoch), last);
    series.quic_sample(p.socket, &s);
    Some(s)
}
