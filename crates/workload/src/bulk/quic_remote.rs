//! QUIC bulk and file transfers split across two hosts: the server end in `ccbench serve`
//! ([`QuicFarServer`]) and the client end in `ccbench run --remote` ([`QuicFarClient`]), with
//! the same connections, streams, controllers, sampling and results as the emulated run
//! (`bulk`): one connection for N streams, one per flow of a mix.
//!
//! * serve opens a QUIC endpoint for the test only, on a fresh UDP port, with a certificate
//!   made for the test; the client trusts exactly that certificate, which it received over
//!   the authenticated control connection.
//! * Every connection must present the test's token and its number (the data hello of
//!   `far`) on its first stream; serve accepts the test's connections one at a time, in order,
//!   so it knows each one's algorithm when its handshake begins, and closes any connection
//!   whose first stream is not that hello before a byte of test data is sent to it. After the
//!   last, the endpoint lets no one else in. The endpoint and its gate are `quic/gate.rs`'s,
//!   shared with a request load's far end (`quic/far.rs`).
//! * The controller is set on each end's transport config (the sender's algorithm on the
//!   sending end) and read back from both ends' connections before any data moves.
//! * Each end runs its half with bulk's one end (`bulk::ends`, through `bulk/quic.rs`'s
//!   `run_quic_end`): the sender's connection is sampled (`QuicSample`), the receiver counts
//!   what arrives; neither closes its connections until the other end is done too. What is
//!   this module's own is the test's endpoint, the connections' setup and the gate.

use std::net::{IpAddr, SocketAddr};
use std::sync::atomic::AtomicBool;
use std::sync::Arc;
use std::time::Duration;

use noq::{Connection, Endpoint, TransportConfig, VarInt};

use super::quic::{groups, quic_result, run_quic_end, EndConn, QuicEnd};
use crate::bulk::{BulkResult, BulkSpec, FlowEnd, MixFlow};
use crate::common::multi_thread_runtime;
use crate::far::TOKEN_LEN;
use crate::quic::gate::{dial_gated, TestEndpoint};
use crate::quic::observe::Probe;
use crate::quic::{connection_seed, observed_transport, read_back, BbrView, ReadBack};
use crate::{ByteBudget, EndClock, NoMeasureHook, SeriesSink, Side, WorkloadError};

/// This end's side of a connection: its transport (the sender's algorithm when it sends, the
/// receiver's otherwise), the probe and BBR view, whether it sends, and the name it must read
/// back when it does.
struct EndTransport {
    transport: Arc<TransportConfig>,
    probe: Arc<Probe>,
    bbr: Option<Arc<dyn BbrView>>,
    sends: bool,
    wanted: String,
}

impl EndTransport {
    /// This end's connection carrying `flows`, its controller read back as `read_back`; `port`
    /// is the client's UDP port (0 on the server's end), whose `endpoint` lives as long as it.
    fn end(self, flows: Vec<u32>, conn: Connection, read_back: String, port: u16, endpoint: Option<Endpoint>) -> EndConn {
        EndConn { flows, conn, sends: self.sends, probe: self.probe, bbr: self.bbr, read_back, port, _endpoint: endpoint, account: Default::default() }
    }
}

fn end_transport(spec: &BulkSpec, plan: &[MixFlow], flows: &[u32], side: Side) -> Result<EndTransport, WorkloadError> {
    let requested = &plan[flows[0] as usize].cc;
    let algorithm = crate::quic::pair::quic_algorithm(requested)?;
    let sends = spec.direction.sender() == side;
    let alg = if sends { algorithm.clone() } else { spec.quic_receiver_cc.clone().unwrap_or_else(|| algorithm.clone()) };
    let probe = Arc::new(Probe::default());
    // A remote end has no run seed: each connection is seeded by its first flow's number.
    let (transport, bbr) = observed_transport(&alg, &probe, connection_seed(0, u64::from(flows[0])))?;
    Ok(EndTransport { transport, probe, bbr, sends, wanted: crate::quic::quic_name(&algorithm) })
}

/// Checks a connection's controller where this end sends: it must be the one asked for.
fn confirm(t: &EndTransport, conn: &Connection) -> Result<String, WorkloadError> {
    let rb = read_back(conn);
    if t.sends && (rb != t.wanted || !t.probe.was_built()) {
        return Err(WorkloadError::CongestionMismatch { requested: t.wanted.clone(), actual: rb });
    }
    Ok(rb)
}

/// The server end of a QUIC test (`ccbench serve`).
pub struct QuicFarServer {
    /// The test's endpoint and its gate (`quic/gate.rs`).
    gate: TestEndpoint,
    spec: BulkSpec,
    plan: Vec<MixFlow>,
    groups: Vec<Vec<u32>>,
    conns: Vec<EndConn>,
}

impl QuicFarServer {
    /// Takes connections only from `ip`: an outsider's handshake is ignored before it starts,
    /// so it cannot hold the one connection being waited for.
    pub fn only_from(mut self, ip: IpAddr) -> Self {
        self.gate.only_from(ip);
        self
    }

    /// An endpoint on a fresh UDP port of `ip`, with a fresh certificate, for `spec` only.
    pub fn bind(ip: IpAddr, spec: &BulkSpec) -> Result<Self, WorkloadError> {
        let plan = spec.plan();
        let groups = groups(spec, &(0..plan.len() as u32).collect::<Vec<_>>());
        for g in &groups {
            end_transport(spec, &plan, g, Side::Server)?;
        }
        Ok(QuicFarServer { gate: TestEndpoint::bind(ip)?, spec: spec.clone(), plan, groups, conns: Vec::new() })
    }

    pub fn port(&self) -> u16 {
        self.gate.port()
    }

    /// The certificate the client must trust, DER.
    pub fn cert_der(&self) -> Vec<u8> {
        self.gate.tls.cert_der()
    }

    /// How many connections the test has.
    pub fn connections(&self) -> usize {
        self.groups.len()
    }

    /// Accepts the test's next connection: the first, within `timeout`, whose first stream
    /// carries `token` and this connection's number; any other is closed with no test data
    /// sent to it. Returns this end's controller, read back (checked when this end sends).
    pub fn accept_next(&mut self, token: &[u8; TOKEN_LEN], timeout: Duration) -> Result<String, WorkloadError> {
        let group = self.conns.len() as u32;
        let flows = self.groups.get(group as usize).cloned().ok_or_else(|| WorkloadError::Setup("every connection of the test is in".into()))?;
        let (spec, plan) = (&self.spec, &self.plan);
        let (conn, t) = self.gate.accept_gated(token, group, timeout, || {
            let t = end_transport(spec, plan, &flows, Side::Server)?;
            Ok((t.transport.clone(), t))
        })?;
        let rb = confirm(&t, &conn)?;
        self.conns.push(t.end(flows, conn, rb.clone(), 0, None));
        if self.conns.len() == self.groups.len() {
            self.gate.shut();
        }
        Ok(rb)
    }

    /// Runs this end of the transfer (see [`QuicFarClient::run`]).
    pub fn run(&self, clock: &EndClock, stop: &AtomicBool, series: &dyn SeriesSink, budget: Option<Arc<ByteBudget>>) -> QuicEnd {
        run_quic_end(self.gate.rt.handle(), &self.spec, &self.plan, &self.conns, clock, stop, series, &NoMeasureHook, budget)
    }

    /// Closes the connections and the endpoint.
    pub fn close(self) {
        for c in &self.conns {
            c.conn.close(VarInt::from_u32(0), b"done");
        }
        self.gate.close();
    }
}

/// The client end of a QUIC test against `ccbench serve`, in this process's namespace.
pub struct QuicFarClient {
    rt: tokio::runtime::Runtime,
    server: SocketAddr,
    cert: noq::rustls::pki_types::CertificateDer<'static>,
    spec: BulkSpec,
    plan: Vec<MixFlow>,
    groups: Vec<Vec<u32>>,
    conns: Vec<EndConn>,
    /// The address connections are opened from (`None`: the kernel's choice).
    source: Option<IpAddr>,
}

impl QuicFarClient {
    /// For the test `spec` against the endpoint at `server`, trusting only `cert_der`.
    pub fn new(server: SocketAddr, cert_der: Vec<u8>, spec: &BulkSpec) -> Result<Self, WorkloadError> {
        let plan = spec.plan();
        let groups = groups(spec, &(0..plan.len() as u32).collect::<Vec<_>>());
        Ok(QuicFarClient { rt: multi_thread_runtime()?, server, cert: cert_der.into(), spec: spec.clone(), plan, groups, conns: Vec::new(), source: None })
    }

    /// Opens the connections from `ip`, one of this host's addresses, instead of the address
    /// the kernel would choose.
    pub fn from_ip(mut self, ip: IpAddr) -> Self {
        self.source = Some(ip);
        self
    }

    pub fn connections(&self) -> usize {
        self.groups.len()
    }

    /// Opens the test's next connection and presents `token` and its number on its first
    /// stream. Returns this end's controller, read back (checked when this end sends).
    pub fn connect_next(&mut self, token: &[u8; TOKEN_LEN]) -> Result<String, WorkloadError> {
        let group = self.conns.len() as u32;
        let flows = self.groups.get(group as usize).cloned().ok_or_else(|| WorkloadError::Setup("every connection of the test is open".into()))?;
        let t = end_transport(&self.spec, &self.plan, &flows, Side::Client)?;
        let (ep, conn) = self.rt.block_on(dial_gated(self.server, self.source, self.cert.clone(), t.transport.clone(), token, group))?;
        let rb = confirm(&t, &conn)?;
        let port = ep.local_addr()?.port();
        self.conns.push(t.end(flows, conn, rb.clone(), port, Some(ep)));
        Ok(rb)
    }

    /// Runs this end of the transfer on the open connections: sends the flows this end sends
    /// (sampling each sending connection into `series`), receives the others (their goodput
    /// points into `series`). Returns when this end is done (its duration, its bytes, the
    /// timeout or `stop`); the connections stay open until [`QuicFarClient::close`].
    pub fn run(&self, clock: &EndClock, stop: &AtomicBool, series: &dyn SeriesSink) -> QuicEnd {
        run_quic_end(self.rt.handle(), &self.spec, &self.plan, &self.conns, clock, stop, series, &NoMeasureHook, None)
    }

    /// The transfer's result from both ends: `near` (this one), `far` (the server's), and
    /// the server's controller of each connection.
    pub fn result(&self, near: &QuicEnd, far: &QuicEnd, far_read_backs: &[String], start_us: u64, elapsed_s: f64, interrupted: bool) -> BulkResult {
        let sends_here = self.spec.direction.sender() == Side::Client;
        let (sender_end, receiver_end) = if sends_here { (near, far) } else { (far, near) };
        let read_backs: Vec<ReadBack> = self
            .conns
            .iter()
            .enumerate()
            .map(|(g, c)| {
                let far_rb = far_read_backs.get(g).cloned().unwrap_or_else(|| crate::quic::quic_name("unknown"));
                if sends_here {
                    ReadBack { sender: c.read_back.clone(), receiver: far_rb }
                } else {
                    ReadBack { sender: far_rb, receiver: c.read_back.clone() }
                }
            })
            .collect();
        // A flow the receiving end did not report (a hostile or broken far end) says so.
        let mut receiver_end = receiver_end.clone();
        for id in 0..self.plan.len() as u32 {
            if !receiver_end.flows.iter().any(|f| f.id == id && !f.sent) {
                receiver_end.flows.push(FlowEnd { id, receive_error: Some("the receiving end did not report this flow".into()), ..FlowEnd::default() });
            }
        }
        let conns: Vec<&EndConn> = self.conns.iter().collect();
        quic_result(&self.spec, &self.plan, &conns, &read_backs, sender_end, &receiver_end, start_us, elapsed_s, interrupted)
    }

    /// Closes the connections (once the far end is done too, or to stop it early).
    pub fn close(&self) {
        for c in &self.conns {
            c.conn.close(VarInt::from_u32(0), b"done");
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{Amount, Direction, MemorySeries, SocketId};
    use std::net::Ipv4Addr;
    use std::time::Instant;

    fn spec(direction: Direction) -> BulkSpec {
        BulkSpec {
            flows: 1,
            direction,
            amount: Amount::Seconds(0.5),
            cc: "quic:cubic".parse().unwrap(),
            mix: Vec::new(),
            port: 0,
            sample_interval_us: 10_000,
            timeout_s: 10.0,
            quic_receiver_cc: None,
            knobs: Default::default(),
        }
    }

    /// Over loopback, no root: a connection with a wrong token is closed without a byte of
    /// test data and does not count; the right one is accepted, both ends read back the
    /// controller, and a download moves data with the server's samples.
    #[test]
    fn a_wrong_token_gets_no_data_and_the_right_one_runs() {
        let spec = spec(Direction::Download);
        let mut server = QuicFarServer::bind(Ipv4Addr::LOCALHOST.into(), &spec).unwrap();
        let addr = SocketAddr::new(Ipv4Addr::LOCALHOST.into(), server.port());
        let token = [7u8; TOKEN_LEN];
        let cert = server.cert_der();
        let client = std::thread::scope(|s| {
            let accepted = s.spawn(|| server.accept_next(&token, Duration::from_secs(10)));
            // An intruder with the certificate but not the token.
            let mut intruder = QuicFarClient::new(addr, cert.clone(), &spec).unwrap();
            intruder.connect_next(&[8u8; TOKEN_LEN]).unwrap();
            let conn = intruder.conns[0].conn.clone();
            let got = intruder.rt.block_on(async {
                tokio::time::timeout(Duration::from_secs(5), async {
                    match conn.accept_uni().await {
                        Ok(mut s) => s.read_to_end(1 << 20).await.map(|v| v.len()).unwrap_or(0),
                        Err(_) => 0,
                    }
                })
                .await
            });
            assert_eq!(got, Ok(0), "the intruder got test data");
            assert!(conn.close_reason().is_some(), "the intruder's connection was not closed");
            // The client with the token.
            let mut client = QuicFarClient::new(addr, cert.clone(), &spec).unwrap();
            assert_eq!(client.connect_next(&token).unwrap(), "quic:cubic");
            assert_eq!(accepted.join().unwrap().unwrap(), "quic:cubic");
            client
        });
        let series = MemorySeries::default();
        let stop = AtomicBool::new(false);
        let epoch = Instant::now();
        let clock = EndClock::shared(epoch, Instant::now());
        let (near, far) = std::thread::scope(|s| {
            let far = s.spawn(|| server.run(&clock, &stop, &series, None));
            (client.run(&clock, &stop, &series), far.join().unwrap())
        });
        let r = client.result(&near, &far, &["quic:cubic".to_string()], 0, 0.5, false);
        assert!(r.flows[0].bytes_received > 100_000, "{r:?}");
        assert_eq!((r.flows[0].sending.cc_read_back.as_str(), r.flows[0].sending.cc_receiver.as_deref()), ("quic:cubic", Some("quic:cubic")));
        assert!(r.flows[0].sending.final_quic.is_some());
        assert!(series.quic_samples(SocketId::Flow(0)).len() > 10);
        // No one else gets in once the test's connections are.
        let mut late = QuicFarClient::new(addr, cert, &spec).unwrap();
        assert!(late.connect_next(&token).is_err(), "a connection after the test's own was let in");
        client.close();
        server.close();
    }
}
