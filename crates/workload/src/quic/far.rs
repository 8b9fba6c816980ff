//! A request load over one QUIC connection split across two hosts (objects, page over
//! `--remote`): the server's end in `ccbench serve` ([`QuicRequestServer`]), the client's end
//! in `ccbench run --remote` (`load.rs`'s `OneConnection` over [`FarQuic`]). The same
//! connection, streams, controllers, server ([`serve`]) and sampling as the emulated run; what
//! is this module's own is the far end's half of it. The endpoint and its gate are
//! `gate.rs`'s (shared with bulk's QUIC flows): a fresh UDP port and certificate for the test,
//! the token and connection number on the connection's first stream before the server answers
//! any request, connections only from the control connection's peer.
//!
//! What a hostile client can make the far end do is bounded: one connection (the endpoint
//! takes no other once it is in), at most `MAX_STREAMS` requests at a time (the transport's
//! stream limit), a request line of at most `wire::MAX_LINE` bytes, every byte it answers or
//! takes taken from the test's byte budget first, and the test's deadline.

use std::net::{IpAddr, SocketAddr};
use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::{Duration, Instant};

use noq::{Connection, Endpoint, VarInt};
use serde::{Deserialize, Serialize};

use super::gate::TestEndpoint;
use super::observe::Probe;
use super::pair::{self, bbr_events, last_sample, Sampled, Sending};
use super::streams::{serve, Store};
use super::{connection_seed, observed_transport, quic_name, read_back, BbrView};
use crate::common::{lock, Errors};
use crate::far::TOKEN_LEN;
use crate::{Algorithm, BbrEvent, QuicSample, SeriesSink, Side, SocketId, WorkloadError};

/// What `ccbench serve` needs to run a request load's far end over QUIC, made by the workload
/// (`FarEnd::Quic`): its one connection's algorithms, which end sends, what the server
/// answers, and its timing.
pub struct QuicRequests {
    pub(crate) cc: Algorithm,
    pub(crate) receiver_cc: Option<String>,
    pub(crate) sender: Side,
    pub(crate) store: Arc<dyn Store>,
    /// How long the load may take (serve holds it to `--max-duration` too).
    pub timeout: Duration,
    pub sample_interval: Duration,
}

impl QuicRequests {
    /// The algorithm (after `quic:`) the server's end runs: the sender's when it sends.
    fn server_algorithm(&self) -> Result<String, WorkloadError> {
        let algorithm = pair::quic_algorithm(&self.cc)?;
        Ok(match self.sender {
            Side::Server => algorithm,
            Side::Client => self.receiver_cc.clone().unwrap_or(algorithm),
        })
    }
}

/// What the far end reports when the load is over: its controller read back, its sending
/// end's last sample and BBR state changes (when it sends), and what went wrong serving.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct QuicFarReport {
    pub read_back: Option<String>,
    pub final_quic: Option<QuicSample>,
    pub bbr_events: Vec<BbrEvent>,
    /// Errors the far end saw, counted exactly.
    pub errors: u32,
    /// The first few of them.
    pub error_messages: Vec<String>,
}

/// The server's end of the one connection, once it is in.
struct Served {
    conn: Connection,
    probe: Arc<Probe>,
    bbr: Option<Arc<dyn BbrView>>,
    sends: bool,
}

impl Sampled for Served {
    fn sending(&self) -> Option<Sending<'_>> {
        // Filed as the test's connection 0: serve forwards it as that "flow".
        self.sends.then(|| Sending { conn: &self.conn, probe: &self.probe, bbr: self.bbr.as_ref(), socket: SocketId::Flow(0) })
    }
}

/// The server end of a request load over QUIC (`ccbench serve`).
pub struct QuicRequestServer {
    gate: TestEndpoint,
    load: QuicRequests,
    served: OnceLock<Served>,
}

impl QuicRequestServer {
    /// An endpoint on a fresh UDP port of `ip`, with a fresh certificate, for `load` only.
    pub fn bind(ip: IpAddr, load: QuicRequests) -> Result<Self, WorkloadError> {
        observed_transport(&load.server_algorithm()?, &Arc::new(Probe::default()), 0)?;
        Ok(QuicRequestServer { gate: TestEndpoint::bind(ip)?, load, served: OnceLock::new() })
    }

    /// Takes the connection only from `ip`.
    pub fn only_from(mut self, ip: IpAddr) -> Self {
        self.gate.only_from(ip);
        self
    }

    pub fn port(&self) -> u16 {
        self.gate.port()
    }

    /// The certificate the client must trust, DER.
    pub fn cert_der(&self) -> Vec<u8> {
        self.gate.tls.cert_der()
    }

    /// Accepts the load's one connection (number 0) behind the gate, within `timeout`, and
    /// lets no one else in. Returns this end's controller, read back; fails when this end
    /// sends and does not run the algorithm asked for.
    pub fn accept(&mut self, token: &[u8; TOKEN_LEN], timeout: Duration) -> Result<String, WorkloadError> {
        if self.served.get().is_some() {
            return Err(WorkloadError::Setup("the connection of the test is in".into()));
        }
        let alg = self.load.server_algorithm()?;
        let (conn, (probe, bbr)) = self.gate.accept_gated(token, 0, timeout, || {
            let probe = Arc::new(Probe::default());
            let (transport, bbr) = observed_transport(&alg, &probe, connection_seed(0, 0))?;
            Ok((transport, (probe, bbr)))
        })?;
        self.gate.shut();
        let sends = self.load.sender == Side::Server;
        let rb = read_back(&conn);
        let wanted = quic_name(&alg);
        if sends && (rb != wanted || !probe.was_built()) {
            conn.close(VarInt::from_u32(1), b"wrong controller");
            return Err(WorkloadError::CongestionMismatch { requested: wanted, actual: rb });
        }
        let _ = self.served.set(Served { conn, probe, bbr, sends });
        Ok(rb)
    }

    /// Answers the connection's requests from the workload's store, each GET's length and each
    /// PUT's taken from `take` first (serve's byte budget: `false` refuses the request), and
    /// samples this end into `series` when it sends, µs after `epoch`, until `done` is set,
    /// the client closes the connection or `until` passes.
    pub fn serve(
        &self,
        epoch: Instant,
        until: Instant,
        done: &AtomicBool,
        series: &dyn SeriesSink,
        take: Arc<dyn Fn(u64) -> bool + Send + Sync>,
    ) -> QuicFarReport {
        let Some(s) = self.served.get() else {
            return QuicFarReport { errors: 1, error_messages: vec!["the connection never came".into()], ..QuicFarReport::default() };
        };
        let errors = Arc::new(Mutex::new(Errors::default()));
        let store = Arc::new(Budgeted { inner: self.load.store.clone(), take });
        self.gate.rt.spawn(serve(s.conn.clone(), store, errors.clone()));
        let interval = crate::common::sample_interval(self.load.sample_interval);
        let sampled = AtomicBool::new(false);
        let mut last = std::thread::scope(|scope| {
            let sampler = scope.spawn(|| pair::sample_until(&self.served, epoch, series, interval, &sampled));
            while !done.load(Ordering::SeqCst) && s.conn.close_reason().is_none() && Instant::now() < until {
                std::thread::sleep(Duration::from_millis(5));
            }
            sampled.store(true, Ordering::SeqCst);
            sampler.join().unwrap_or_else(|_| (Instant::now(), 0))
        });
        let final_quic = last_sample(s, epoch, series, &mut last);
        s.conn.close(VarInt::from_u32(0), b"done");
        let errors = std::mem::take(&mut *lock(&errors));
        QuicFarReport {
            read_back: Some(read_back(&s.conn)),
            final_quic,
            bbr_events: if s.sends { bbr_events(s.bbr.as_ref(), epoch) } else { Vec::new() },
            errors: errors.count,
            error_messages: errors.messages,
        }
    }

    /// Closes the connection and the endpoint.
    pub fn close(self) {
        if let Some(s) = self.served.get() {
            s.conn.close(VarInt::from_u32(0), b"done");
        }
        self.gate.close();
    }
}

/// The workload's store, each answer paid for from the test's byte budget first.
struct Budgeted {
    inner: Arc<dyn Store>,
    take: Arc<dyn Fn(u64) -> bool + Send + Sync>,
}

impl Store for Budgeted {
    fn get(&self, path: &str) -> Option<u64> {
        self.inner.get(path).filter(|&len| (self.take)(len))
    }
    fn put(&self, path: &str) -> Option<u64> {
        self.inner.put(path).filter(|&len| (self.take)(len))
    }
}

/// The far end's QUIC server as the client's end sees it: where to connect, the certificate
/// to trust, the token, and what the far end has said so far.
pub struct FarQuic {
    pub(crate) server: SocketAddr,
    pub(crate) cert: noq::rustls::pki_types::CertificateDer<'static>,
    pub(crate) token: [u8; TOKEN_LEN],
    /// This end's port of the connection (0 until it is dialled): the far end's samples are
    /// filed under it, as a local run's are.
    port: AtomicU32,
    /// The far end's controller, read back, as it reported it.
    far_read_back: Mutex<Option<String>>,
}

impl FarQuic {
    /// For a load against the endpoint at `server`, trusting only `cert_der`.
    pub fn new(server: SocketAddr, cert_der: Vec<u8>, token: [u8; TOKEN_LEN]) -> Self {
        FarQuic { server, cert: cert_der.into(), token, port: AtomicU32::new(0), far_read_back: Mutex::new(None) }
    }

    /// The far end took the connection in, with this controller read back.
    pub fn connected(&self, read_back: String) {
        *lock(&self.far_read_back) = Some(read_back);
    }

    /// The series socket the far end's samples belong to: this end's connection, once dialled.
    pub fn socket(&self) -> Option<SocketId> {
        match self.port.load(Ordering::SeqCst) {
            0 => None,
            p => Some(SocketId::Connection(p as u16)),
        }
    }

    pub(crate) fn dialled(&self, port: u16) {
        self.port.store(u32::from(port), Ordering::SeqCst);
    }

    pub(crate) fn far_read_back(&self) -> Option<String> {
        lock(&self.far_read_back).clone()
    }
}

/// This end's half of the connection to a far end: the client's end, what its controller saw
/// (sampled here when the client sends), its read-back and its endpoint.
pub(crate) struct NearConn {
    pub conn: Connection,
    pub probe: Arc<Probe>,
    pub bbr: Option<Arc<dyn BbrView>>,
    pub sends: bool,
    pub port: u16,
    pub read_back: String,
    pub _endpoint: Endpoint,
}

impl Sampled for NearConn {
    fn sending(&self) -> Option<Sending<'_>> {
        self.sends.then(|| Sending { conn: &self.conn, probe: &self.probe, bbr: self.bbr.as_ref(), socket: SocketId::Connection(self.port) })
    }
}
