//! The shared secret and the handshake that proves, both ways, that the other end holds it.
//!
//! Mutual HMAC-SHA256 challenge–response: each end sends a fresh 32-byte random nonce; the
//! server answers the client's hello with `HMAC(secret, "ccbench serve v1 server" ‖ nc ‖ ns)`,
//! the client (having checked it) with `HMAC(secret, "ccbench serve v1 client" ‖ nc ‖ ns)`.
//! The labels keep one end's proof from ever passing as the other's; both nonces make every
//! proof fresh; proofs are compared in constant time (`Mac::verify_slice`). The secret never
//! crosses the wire.

use std::os::unix::fs::PermissionsExt;
use std::path::Path;

use hmac::{Hmac, Mac};
use rand::RngCore;
use sha2::Sha256;

type HmacSha256 = Hmac<Sha256>;

pub const NONCE_LEN: usize = 32;
pub const PROOF_LEN: usize = 32;
/// Fewer bytes than this is a password, not a key.
pub const MIN_SECRET_BYTES: usize = 16;

const SERVER_LABEL: &[u8] = b"ccbench serve v1 server\0";
const CLIENT_LABEL: &[u8] = b"ccbench serve v1 client\0";

/// The key both ends share, read from `--secret-file`.
#[derive(Clone)]
pub struct Secret(Vec<u8>);

impl std::fmt::Debug for Secret {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Secret(..)")
    }
}

#[derive(Debug, thiserror::Error, PartialEq)]
pub enum SecretError {
    #[error("cannot read it: {0}")]
    Unreadable(String),
    #[error("it is readable by group or others (mode {0:03o}); make it private with chmod 600")]
    Exposed(u32),
    #[error("it holds {0} bytes; a secret needs at least {MIN_SECRET_BYTES} (make one with: head -c 32 /dev/urandom | base64 > FILE; chmod 600 FILE)")]
    TooShort(usize),
}

impl Secret {
    /// The file's bytes, trailing whitespace (the newline) removed. Refused when others may
    /// read it, or when it is too short to be a key.
    pub fn from_file(path: &Path) -> Result<Secret, SecretError> {
        let meta = std::fs::metadata(path).map_err(|e| SecretError::Unreadable(e.to_string()))?;
        let mode = meta.permissions().mode() & 0o777;
        if mode & 0o077 != 0 {
            return Err(SecretError::Exposed(mode));
        }
        let bytes = std::fs::read(path).map_err(|e| SecretError::Unreadable(e.to_string()))?;
        Secret::from_bytes(bytes.trim_ascii_end())
    }

    pub fn from_bytes(bytes: &[u8]) -> Result<Secret, SecretError> {
        if bytes.len() < MIN_SECRET_BYTES {
            return Err(SecretError::TooShort(bytes.len()));
        }
        Ok(Secret(bytes.to_vec()))
    }

    fn mac(&self, label: &[u8], client_nonce: &[u8; NONCE_LEN], server_nonce: &[u8; NONCE_LEN]) -> HmacSha256 {
        // HMAC takes a key of any length.
        let mut mac = HmacSha256::new_from_slice(&self.0).expect("HMAC accepts any key length");
        mac.update(label);
        mac.update(client_nonce);
        mac.update(server_nonce);
        mac
    }

    pub fn server_proof(&self, client_nonce: &[u8; NONCE_LEN], server_nonce: &[u8; NONCE_LEN]) -> [u8; PROOF_LEN] {
        self.mac(SERVER_LABEL, client_nonce, server_nonce).finalize().into_bytes().into()
    }

    pub fn client_proof(&self, client_nonce: &[u8; NONCE_LEN], server_nonce: &[u8; NONCE_LEN]) -> [u8; PROOF_LEN] {
        self.mac(CLIENT_LABEL, client_nonce, server_nonce).finalize().into_bytes().into()
    }

    /// Constant-time check of the server's proof.
    pub fn verify_server(&self, client_nonce: &[u8; NONCE_LEN], server_nonce: &[u8; NONCE_LEN], proof: &[u8]) -> bool {
        self.mac(SERVER_LABEL, client_nonce, server_nonce).verify_slice(proof).is_ok()
    }

    /// Constant-time check of the client's proof.
    pub fn verify_client(&self, client_nonce: &[u8; NONCE_LEN], server_nonce: &[u8; NONCE_LEN], proof: &[u8]) -> bool {
        self.mac(CLIENT_LABEL, client_nonce, server_nonce).verify_slice(proof).is_ok()
    }
}

/// 32 bytes from the operating system's generator.
pub fn nonce() -> [u8; NONCE_LEN] {
    let mut n = [0u8; NONCE_LEN];
    rand::rngs::OsRng.fill_bytes(&mut n);
    n
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn proofs_verify_only_with_the_same_secret_nonces_and_role() {
        let a = Secret::from_bytes(b"0123456789abcdef-a").unwrap();
        let b = Secret::from_bytes(b"0123456789abcdef-b").unwrap();
        let (nc, ns) = (nonce(), nonce());
        assert_ne!(nc, ns);
        let p = a.client_proof(&nc, &ns);
        assert!(a.verify_client(&nc, &ns, &p));
        assert!(!b.verify_client(&nc, &ns, &p), "another secret");
        assert!(!a.verify_client(&ns, &nc, &p), "nonces swapped");
        assert!(!a.verify_server(&nc, &ns, &p), "a client's proof is not a server's");
        assert!(!a.verify_client(&nc, &ns, &p[..31]), "truncated");
        assert!(a.verify_server(&nc, &ns, &a.server_proof(&nc, &ns)));
    }

    #[test]
    fn secret_files_must_be_private_and_long_enough() {
        let dir = std::env::temp_dir().join(format!("ccbench-secret-test-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let f = dir.join("s");
        std::fs::write(&f, "0123456789abcdefXYZ\n").unwrap();
        std::fs::set_permissions(&f, std::fs::Permissions::from_mode(0o644)).unwrap();
        assert_eq!(Secret::from_file(&f).unwrap_err(), SecretError::Exposed(0o644));
        std::fs::set_permissions(&f, std::fs::Permissions::from_mode(0o600)).unwrap();
        assert!(Secret::from_file(&f).is_ok());
        std::fs::write(&f, "short\n").unwrap();
        assert_eq!(Secret::from_file(&f).unwrap_err(), SecretError::TooShort(5));
        std::fs::write(&f, "").unwrap();
        assert_eq!(Secret::from_file(&f).unwrap_err(), SecretError::TooShort(0));
        assert!(matches!(Secret::from_file(&dir.join("missing")), Err(SecretError::Unreadable(_))));
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
