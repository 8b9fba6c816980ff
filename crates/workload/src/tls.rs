//! The browser workload's TLS: Chromium speaks HTTP/2 only over TLS with ALPN `h2`, so each run
//! makes a fresh self-signed certificate for the server's address (rcgen) and serves with
//! rustls. Chromium is told to trust exactly that key with
//! `--ignore-certificate-errors-spki-list=<base64 SHA-256 of the SubjectPublicKeyInfo>`, which
//! pins one key instead of ignoring every certificate error.
//!
//! Both use the `ring` provider: it builds in seconds, where aws-lc-rs needs cmake and a long
//! C build.

use std::net::Ipv4Addr;
use std::sync::Arc;

use base64::Engine;
use rustls::pki_types::{CertificateDer, PrivateKeyDer, PrivatePkcs8KeyDer};

use crate::WorkloadError;

/// A server identity made for one run.
pub(crate) struct RunCertificate {
    pub config: Arc<rustls::ServerConfig>,
    /// What `--ignore-certificate-errors-spki-list` takes.
    pub spki_sha256_base64: String,
}

/// A certificate for `addr` (an IP subjectAltName) and a server config offering only `alpn`.
pub(crate) fn certificate_for(addr: Ipv4Addr, alpn: &[&[u8]]) -> Result<RunCertificate, WorkloadError> {
    let setup = |what: &str, e: &dyn std::fmt::Display| WorkloadError::Setup(format!("TLS {what}: {e}"));
    let made = rcgen::generate_simple_self_signed(vec![addr.to_string()]).map_err(|e| setup("certificate", &e))?;
    let spki = made.key_pair.public_key_der();
    let spki_sha256_base64 = base64::engine::general_purpose::STANDARD.encode(ring::digest::digest(&ring::digest::SHA256, &spki));
    let chain = vec![CertificateDer::from(made.cert.der().to_vec())];
    let key = PrivateKeyDer::Pkcs8(PrivatePkcs8KeyDer::from(made.key_pair.serialize_der()));
    let mut config = rustls::ServerConfig::builder_with_provider(Arc::new(rustls::crypto::ring::default_provider()))
        .with_safe_default_protocol_versions()
        .map_err(|e| setup("versions", &e))?
        .with_no_client_auth()
        .with_single_cert(chain, key)
        .map_err(|e| setup("server config", &e))?;
    config.alpn_protocols = alpn.iter().map(|p| p.to_vec()).collect();
    Ok(RunCertificate { config: Arc::new(config), spki_sha256_base64 })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fresh_key_per_run_and_spki_hash_is_sha256() {
        let a = certificate_for(Ipv4Addr::new(10, 0, 0, 2), &[b"h2"]).unwrap();
        let b = certificate_for(Ipv4Addr::new(10, 0, 0, 2), &[b"h2"]).unwrap();
        assert_ne!(a.spki_sha256_base64, b.spki_sha256_base64);
        let raw = base64::engine::general_purpose::STANDARD.decode(&a.spki_sha256_base64).unwrap();
        assert_eq!(raw.len(), 32);
        assert_eq!(a.config.alpn_protocols, vec![b"h2".to_vec()]);
    }
}
