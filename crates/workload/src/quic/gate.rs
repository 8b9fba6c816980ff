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

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};
use std::sync::Arc;
use std::time::{Duration, Instant};

use noq::{Connection, Endpoint, TransportConfig, VarInt};

use super::observe::Probe;
use super::{client_trusting, endpoint, observed_transport, udp_here, Tls, HANDSHAKE_TIMEOUT, SNI};
use crate::common::multi_thread_runtime;
use crate::far::{data_hello, DATA_HELLO_LEN, TOKEN_LEN};
use crate::http_end::{same, HELLO_TIMEOUT};
use crate::WorkloadError;

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
    /// `fresh` makes the transport each attempt's handshake runs (a fresh controller probe per
    /// attempt) and what goes with it, returned beside the connection.
    pub(crate) fn accept_gated<X>(
        &self,
        token: &[u8; TOKEN_LEN],
        number: u32,
        timeout: Duration,
        mut fresh: impl FnMut() -> Result<(Arc<TransportConfig>, X), WorkloadError>,
    ) -> Result<(Connection, X), WorkloadError> {
        let deadline = Instant::now() + timeout;
        let mut last_error = None;
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() {
                let why = last_error.map(|e| format!(" (last: {e})")).unwrap_or_default();
                return Err(WorkloadError::Setup(format!("connection {number} of the QUIC test never arrived with its token{why}")));
            }
            let (transport, extra) = fresh()?;
            let config = self.tls.server(transport)?;
            let (endpoint, peer) = (&self.endpoint, self.peer);
            let attempt = self.rt.block_on(async {
                tokio::time::timeout(left, async {
                    let incoming = endpoint.accept().await.ok_or_else(|| "the endpoint closed".to_string())?;
                    if peer.is_some_and(|p| p != incoming.remote_address().ip()) {
                        incoming.ignore();
                        return Err("a connection from another address".to_string());
                    }
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
                    Ok::<_, String>((conn, hello))
                })
                .await
            });
            match attempt {
                Err(_) => continue,
                Ok(Err(e)) => last_error = Some(e),
                Ok(Ok((conn, Some(hello)))) if same(&hello[..TOKEN_LEN], token) && hello[TOKEN_LEN..] == number.to_be_bytes() => return Ok((conn, extra)),
                Ok(Ok((conn, _))) => {
                    conn.close(VarInt::from_u32(1), b"no token");
                    last_error = Some("a connection without the token".into());
                }
            }
        }
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
