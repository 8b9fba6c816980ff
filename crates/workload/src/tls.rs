//! The browser workload's TLS: Chromium speaks HTTP/2 only over TLS with ALPN `h2`, so each run
//! makes a fresh self-signed certificate for the server's address (rcgen) and serves with
//! rustls. Chromium is told to trust exactly that key with
//! `--ignore-certificate-errors-spki-list=<base64 SHA-256 of the SubjectPublicKeyInfo>`, which
//! pins one key instead of ignoring every certificate error. Over `--remote`, `ccbench serve`
//! makes the certificate and sends the key's hash over the authenticated control connection.
//!
//! Both use the `ring` provider: it builds in seconds, where aws-lc-rs needs cmake and a long
//! C build.

use std::net::IpAddr;
use std::sync::Arc;

use base64::Engine;
use rustls::pki_types::{CertificateDer, PrivateKeyDer, PrivatePkcs8KeyDer};

use crate::WorkloadError;

/// A server identity made for one run.
pub struct RunCertificate {
    pub(crate) config: Arc<rustls::ServerConfig>,
    /// The SHA-256 of the key's SubjectPublicKeyInfo.
    pub spki_sha256: [u8; 32],
}

/// What `--ignore-certificate-errors-spki-list` takes: the key's hash in base64.
pub(crate) fn spki_base64(spki_sha256: &[u8; 32]) -> String {
    base64::engine::general_purpose::STANDARD.encode(spki_sha256)
}

/// A certificate for `addr` (an IP subjectAltName) and a server config offering only `alpn`.
pub fn certificate_for(addr: IpAddr, alpn: &[&[u8]]) -> Result<RunCertificate, WorkloadError> {
    let setup = |what: &str, e: &dyn std::fmt::Display| WorkloadError::Setup(format!("TLS {what}: {e}"));
    let made = rcgen::generate_simple_self_signed(vec![addr.to_string()]).map_err(|e| setup("certificate", &e))?;
    let spki = made.key_pair.public_key_der();
    let mut spki_sha256 = [0u8; 32];
    spki_sha256.copy_from_slice(ring::digest::digest(&ring::digest::SHA256, &spki).as_ref());
    let chain = vec![CertificateDer::from(made.cert.der().to_vec())];
    let key = PrivateKeyDer::Pkcs8(PrivatePkcs8KeyDer::from(made.key_pair.serialize_der()));
    let mut config = rustls::ServerConfig::builder_with_provider(Arc::new(rustls::crypto::ring::default_provider()))
        .with_safe_default_protocol_versions()
        .map_err(|e| setup("versions", &e))?
        .with_no_client_auth()
        .with_single_cert(chain, key)
        .map_err(|e| setup("server config", &e))?;
    config.alpn_protocols = alpn.iter().map(|p| p.to_vec()).collect();
    Ok(RunCertificate { config: Arc::new(config), spki_sha256 })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fresh_key_per_run_and_spki_hash_is_sha256() {
        let addr = IpAddr::from([10, 0, 0, 2]);
        let a = certificate_for(addr, &[b"h2"]).unwrap();
        let b = certificate_for(addr, &[b"h2"]).unwrap();
        assert_ne!(a.spki_sha256, b.spki_sha256);
        let raw = base64::engine::general_purpose::STANDARD.decode(spki_base64(&a.spki_sha256)).unwrap();
        assert_eq!(raw, a.spki_sha256);
        assert!(certificate_for(IpAddr::from([0u16, 0, 0, 0, 0, 0, 0, 1]), &[b"h2"]).is_ok(), "an IPv6 server");
        assert_eq!(a.config.alpn_protocols, vec![b"h2".to_vec()]);
    }
}
