//! The gate of a QUIC test over `--remote`, one definition for every far end serve runs over
//! QUIC (bulk's flows, `bulk/quic_remote.rs`, and a request load's one connection, `far.rs`):
//!
//! * serve opens an endpoint for the test only ([`TestEndpoint`]), on a fresh UDP port, with
//!   a certificate made for the test; the client trusts exactly that certificate, which it
//!   received over the authenticated control connection ([`dial_gated`]).
//! * Every connection must present the test's token and its number (the data hello of
//!   `crate::far`, [`DATA_HELLO_LEN`] bytes, read within [`HELLO_TIMEOUT`]) on its first
//!   unidirectional stream; a connection whose first stream is not that hello is closed
//!   before a byte of test data is sent to it. Connections are taken only from the control
//!   connection's peer ([`TestEndpoint::only_from`]): an outsider's handshake is ignored before
//!   it starts, so it cannot hold the one connection being waited for.

use std::collections::VecDeque;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};
use std::sync::Arc;
use std::time::Duration;

use tokio::task::{AbortHandle, JoinSet};

use noq::{Connection, Endpoint, TransportConfig, VarInt};

use super::observe::Probe;
use super::{client_trusting, endpoint, observed_transport, udp_here, Tls, HANDSHAKE_TIMEOUT, SNI};
use crate::common::multi_thread_runtime;
use crate::far::{data_hello, DATA_HELLO_LEN, TOKEN_LEN};
use crate::http_end::{same, HELLO_TIMEOUT, MAX_PENDING};
use crate::WorkloadError;

/// A handshake let through the gate: its connection, the hello it presented in time, and what
/// `fresh` made for it.
type Handshake<X> = Result<(Connection, Option<[u8; DATA_HELLO_LEN]>, X), String>;

/// serve's endpoint for one QUIC test: its runtime, its UDP port and its certificate.
pub(crate) struct TestEndpoint {
    pub rt: tokio::runtime::Runtime,
    pub endpoint: Endpoint,
    pub tls: Tls,
    /// The only address a connection is taken from (serve: its control connection's peer).
    peer: Option<IpAddr>,
}

impl TestEndpoint {
    /// An endpoint on a fresh UDP port of `ip`, with a fresh certificate.
    pub(crate) fn bind(ip: IpAddr) -> Result<Self, WorkloadError> {
        let rt = multi_thread_runtime()?;
        let tls = Tls::new()?;
        // Each accepted connection gets its own config; this one is never used.
        let (placeholder, _) = observed_transport("cubic", &Arc::new(Probe::default()), 0)?;
        let endpoint = {
            let _guard = rt.enter();
            endpoint(udp_here(SocketAddr::new(ip, 0))?, Some((*tls.server(placeholder)?).clone()))?
        };
        Ok(TestEndpoint { rt, endpoint, tls, peer: None })
    }

    /// Takes connections only from `ip`.
    pub(crate) fn only_from(&mut self, ip: IpAddr) {
        self.peer = Some(ip);
    }

    pub(crate) fn port(&self) -> u16 {
        self.endpoint.local_addr().map(|a| a.port()).unwrap_or(0)
    }

    /// Accepts connection `number` of the test: the first, within `timeout`, whose first
    /// stream carries `token` and `number`; any other is closed with no test data sent to it.
    /// `fresh` makes the transport each handshake runs (a fresh controller probe per attempt)
    /// and what goes with it, returned beside the connection.
    ///
    /// A hostile network gets three defences here:
    /// * a handshake from any address but the control connection's peer is ignored before
    ///   anything is built for it;
    /// * an address that has not proved it receives what is sent to it is asked to (a Retry,
    ///   RFC 9000 §8.1.2), so Initials with the peer's address forged cost one stateless
    ///   packet and hold nothing;
    /// * handshakes from the peer's own address (another user of the client's host) run side
    ///   by side, at most [`MAX_PENDING`], the longest waiting making room for a newcomer, each
    ///   with [`HELLO_TIMEOUT`] to present the token: a silent one costs only its own time,
    ///   as `accept_flows` does for TCP's data connections.
    pub(crate) fn accept_gated<X: Send + 'static>(
        &self,
        token: &[u8; TOKEN_LEN],
        number: u32,
        timeout: Duration,
        mut fresh: impl FnMut() -> Result<(Arc<TransportConfig>, X), WorkloadError>,
    ) -> Result<(Connection, X), WorkloadError> {
        let (endpoint, peer, tls) = (&self.endpoint, self.peer, &self.tls);
        self.rt.block_on(async {
            let deadline = tokio::time::Instant::now() + timeout;
            let mut pending: JoinSet<Handshake<X>> = JoinSet::new();
            let mut oldest: VecDeque<AbortHandle> = VecDeque::new();
            let mut last_error: Option<String> = None;
            loop {
                tokio::select! {
                    incoming = endpoint.accept() => {
                        let incoming = incoming.ok_or_else(|| WorkloadError::Setup("the QUIC test's endpoint closed".into()))?;
                        if peer.is_some_and(|p| p != incoming.remote_address().ip()) {
                            incoming.ignore();
                            last_error = Some("a connection from another address".into());
                            continue;
                        }
                        if !incoming.remote_address_validated() {
                            // A forged source cannot answer the Retry; the client's stack does.
                            let _ = incoming.retry();
                            continue;
                        }
                        let (transport, extra) = fresh()?;
                        let config = tls.server(transport)?;
                        oldest.retain(|h| !h.is_finished());
                        if oldest.len() >= MAX_PENDING {
                            if let Some(h) = oldest.pop_front() {
                                h.abort();
                            }
                            last_error = Some(format!("{MAX_PENDING} handshakes waited for their hello; the longest waiting made room"));
                        }
                        oldest.push_back(pending.spawn(async move {
                            let conn = incoming.accept_with(config).map_err(|e| format!("accept: {e}"))?.await.map_err(|e| format!("handshake: {e}"))?;
                            let hello = tokio::time::timeout(HELLO_TIMEOUT, async {
                                let mut s = conn.accept_uni().await.ok()?;
                                let mut hello = [0u8; DATA_HELLO_LEN];
                                s.read_exact(&mut hello).await.ok()?;
                                Some(hello)
                            })
                            .await
                            .ok()
                            .flatten();
                            Ok((conn, hello, extra))
                        }));
                    }
                    Some(done) = pending.join_next() => match done {
                        Err(_) => {} // made room for a newer handshake
                        Ok(Err(e)) => last_error = Some(e),
                        Ok(Ok((conn, Some(hello), extra))) if same(&hello[..TOKEN_LEN], token) && hello[TOKEN_LEN..] == number.to_be_bytes() => {
                            // Those still waiting are aborted with the set, their connections closed.
                            return Ok((conn, extra));
                        }
                        Ok(Ok((conn, _, _))) => {
                            conn.close(VarInt::from_u32(1), b"no token");
                            last_error = Some("a connection without the token".into());
                        }
                    },
                    _ = tokio::time::sleep_until(deadline) => {
                        let why = last_error.map(|e| format!(" (last: {e})")).unwrap_or_default();
                        return Err(WorkloadError::Setup(format!("connection {number} of the QUIC test never arrived with its token{why}")));
                    }
                }
            }
        })
    }

    /// The test's connections are in: nobody else is let in.
    pub(crate) fn shut(&self) {
        self.endpoint.set_server_config(None);
    }

    /// Closes the endpoint and ends its runtime.
    pub(crate) fn close(self) {
        self.endpoint.close(VarInt::from_u32(0), b"done");
        self.rt.shutdown_timeout(Duration::from_millis(500));
    }
}

/// Opens connection `number` of a test to serve's endpoint at `server`, trusting only `cert`,
/// from `source` (`None`: the kernel's choice), and presents `token` and `number` on its first
/// stream. Returns the client's endpoint (it lives as long as the connection) and the
/// connection.
pub(crate) async fn dial_gated(
    server: SocketAddr,
    source: Option<IpAddr>,
    cert: noq::rustls::pki_types::CertificateDer<'static>,
    transport: Arc<TransportConfig>,
    token: &[u8; TOKEN_LEN],
    number: u32,
) -> Result<(Endpoint, Connection), WorkloadError> {
    let any: IpAddr = if server.is_ipv4() { Ipv4Addr::UNSPECIFIED.into() } else { Ipv6Addr::UNSPECIFIED.into() };
    let ep = endpoint(udp_here(SocketAddr::new(source.unwrap_or(any), 0))?, None)?;
    let connecting = ep.connect_with(client_trusting(cert, transport)?, server, SNI).map_err(|e| WorkloadError::Setup(format!("QUIC connect: {e}")))?;
    let conn = tokio::time::timeout(HANDSHAKE_TIMEOUT, connecting)
        .await
        .map_err(|_| WorkloadError::Setup(format!("the QUIC handshake with {server} timed out")))?
        .map_err(|e| WorkloadError::Setup(format!("QUIC handshake: {e}")))?;
    let mut s = conn.open_uni().await.map_err(|e| WorkloadError::Setup(format!("QUIC stream: {e}")))?;
    s.write_all(&data_hello(token, number)).await.map_err(|e| WorkloadError::Setup(format!("QUIC hello: {e}")))?;
    let _ = s.finish();
    Ok((ep, conn))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::quic::udp_here;

    type Cert = noq::rustls::pki_types::CertificateDer<'static>;

    fn client_config(cert: &Cert) -> noq::ClientConfig {
        let (transport, _) = observed_transport("cubic", &Arc::new(Probe::default()), 0).unwrap();
        client_trusting(cert.clone(), transport).unwrap()
    }

    /// A QUIC client endpoint on `source` (any port).
    fn endpoint_on(source: IpAddr) -> Endpoint {
        endpoint(udp_here(SocketAddr::new(source, 0)).unwrap(), None).unwrap()
    }

    /// Over loopback, no root, with the attacker's real resources: while the test waits for
    /// its connection, 256 addresses of other networks (127.20.0.0/16) each start a real
    /// handshake, 8 clients on the peer's own address complete theirs and never say a word,
    /// and 64 Initials arrive with the peer's address from sockets that are gone before any
    /// answer (a forged source). The client with the token still gets in, long before the
    /// accept's deadline. Taking handshakes one at a time, as this gate did, the silent eight
    /// alone held it 8 × [`HELLO_TIMEOUT`] and the client never got in.
    #[test]
    fn a_crowd_silent_peers_and_forged_initials_do_not_keep_the_client_out() {
        let peer: IpAddr = Ipv4Addr::LOCALHOST.into();
        let mut gate = TestEndpoint::bind(peer).unwrap();
        gate.only_from(peer);
        let server = SocketAddr::new(peer, gate.port());
        let cert: Cert = gate.tls.cert_der().into();
        let token = [9u8; TOKEN_LEN];
        let attackers = multi_thread_runtime().unwrap();
        let (silent_in, crowd_answered) = attackers.block_on(async {
            // The crowd: one handshake from each of 256 addresses, left to time out.
            let mut crowd = tokio::task::JoinSet::new();
            for i in 0..256u32 {
                let ep = endpoint_on(Ipv4Addr::new(127, 20, (i / 250) as u8, (i % 250 + 1) as u8).into());
                let connecting = ep.connect_with(client_config(&cert), server, SNI).unwrap();
                crowd.spawn(async move { (tokio::time::timeout(Duration::from_secs(3), connecting).await, ep) });
            }
            // Forged: each Initial's socket is closed before the server can answer.
            for _ in 0..64 {
                let ep = endpoint_on(peer);
                let _connecting = ep.connect_with(client_config(&cert), server, SNI).unwrap();
                tokio::time::sleep(Duration::from_millis(2)).await;
                ep.close(VarInt::from_u32(0), b"");
                drop(ep);
            }
            // Silent peers: handshakes from the peer's address that will never say a word.
            let mut silent = Vec::new();
            for _ in 0..8 {
                let ep = endpoint_on(peer);
                let connecting = ep.connect_with(client_config(&cert), server, SNI).unwrap();
                silent.push((ep, connecting));
            }
            (silent, crowd)
        });
        let (accepted, client, silent_in) = std::thread::scope(|s| {
            let accepting =
                s.spawn(|| gate.accept_gated(&token, 0, Duration::from_secs(25), || Ok((observed_transport("cubic", &Arc::new(Probe::default()), 0)?.0, ()))));
            // The silent peers' handshakes complete while the gate accepts; the client comes
            // after them.
            std::thread::sleep(Duration::from_secs(1));
            let client = gate.rt.block_on(dial_gated(
                server,
                Some(peer),
                cert.clone(),
                observed_transport("cubic", &Arc::new(Probe::default()), 0).unwrap().0,
                &token,
                0,
            ));
            (accepting.join().unwrap(), client, silent_in)
        });
        let (conn, ()) = accepted.expect("the client with the token was kept out");
        let (client_ep, _client) = client.expect("the client's dial");
        assert_eq!(
            conn.path(noq::PathId::ZERO).and_then(|p| p.remote_address().ok()),
            client_ep.local_addr().ok(),
            "the gate took another connection than the client's"
        );
        let (silent, crowd) = attackers.block_on(async {
            let mut silent = 0;
            for (_ep, connecting) in silent_in {
                silent += matches!(tokio::time::timeout(Duration::from_secs(5), connecting).await, Ok(Ok(_))) as usize;
            }
            let (mut crowd, mut answered) = (crowd_answered, 0);
            while let Some(r) = crowd.join_next().await {
                answered += matches!(r, Ok((Ok(Ok(_)), _))) as usize;
            }
            (silent, answered)
        });
        // The attack was real: the peer's silent clients were let through the handshake.
        assert_eq!(silent, 8, "silent peers whose handshake completed");
        assert_eq!(crowd, 0, "handshakes from other networks that were answered");
        attackers.shutdown_background();
        gate.close();
    }
}
