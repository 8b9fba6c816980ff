//! The shared secret: how it is read, checked and made. The handshake that proves it is in
//! [`crate::channel`] (SPAKE2): the secret never crosses the wire, and nothing that does lets
//! a peer without it test guesses offline.
//!
//! A secret is text: hex (at least 32 digits) or base64 (at least 22 symbols), so that its
//! length says its strength: at least 128 bits (4 bits a hex digit, 6 a base64 symbol) from a
//! random source. Anything else (a passphrase, raw bytes) is refused with how to make one:
//! `ccbench serve --new-secret FILE` writes 256 random bits as 64 hex digits, mode 600.

use std::io::{Read, Write};
use std::os::unix::fs::{FileTypeExt, OpenOptionsExt, PermissionsExt};
use std::path::Path;

use rand::RngCore;

/// The fewest bits of a random secret (the length says them; see the module's note).
pub const MIN_SECRET_BITS: usize = 128;
/// A secret file is a line of text; anything longer is not one (and is not read to its end).
const MAX_SECRET_FILE: u64 = 4096;
/// A random hex or base64 string of this length has at least this many distinct symbols with
/// overwhelming likelihood (32 random hex digits: fewer than 8 distinct in ~1 of 10^7); a
/// string with fewer was typed, not drawn.
const MIN_DISTINCT_SYMBOLS: usize = 8;
const HOW_TO_MAKE: &str = "make one with: ccbench serve --new-secret FILE";

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
    #[error("it is not a regular file (a FIFO, a device or a directory); {HOW_TO_MAKE}")]
    NotAFile,
    #[error("it is readable by group or others (mode {0:03o}); make it private with chmod 600")]
    Exposed(u32),
    #[error("it holds {0} bits; a secret needs at least {MIN_SECRET_BITS} (32 hex digits or 22 base64 symbols); {HOW_TO_MAKE}")]
    TooShort(usize),
    #[error("it is not hex or base64 text; {HOW_TO_MAKE}")]
    NotText,
    #[error("it uses only {0} different symbols, which a random secret does not; {HOW_TO_MAKE}")]
    NotRandom(usize),
    #[error("it already exists; choose another file (a secret is never overwritten)")]
    Exists,
}

impl Secret {
    /// The file's text, trailing whitespace (the newline) removed. Refused when it is not a
    /// regular file, when others may read it, or when it is not a strong secret. A FIFO or a
    /// device is refused before a byte is read (opened non-blocking, then checked).
    pub fn from_file(path: &Path) -> Result<Secret, SecretError> {
        let file = std::fs::OpenOptions::new()
            .read(true)
            .custom_flags(libc::O_NONBLOCK | libc::O_NOCTTY)
            .open(path)
            .map_err(|e| SecretError::Unreadable(e.to_string()))?;
        let meta = file.metadata().map_err(|e| SecretError::Unreadable(e.to_string()))?;
        let kind = meta.file_type();
        if !kind.is_file() || kind.is_fifo() || kind.is_char_device() || kind.is_block_device() {
            return Err(SecretError::NotAFile);
        }
        let mode = meta.permissions().mode() & 0o777;
        if mode & 0o077 != 0 {
            return Err(SecretError::Exposed(mode));
        }
        let mut bytes = Vec::new();
        file.take(MAX_SECRET_FILE).read_to_end(&mut bytes).map_err(|e| SecretError::Unreadable(e.to_string()))?;
        Secret::from_bytes(bytes.trim_ascii())
    }

    /// A secret from its text, checked as a file's is.
    pub fn from_bytes(bytes: &[u8]) -> Result<Secret, SecretError> {
        let bits = strength_bits(bytes)?;
        if bits < MIN_SECRET_BITS {
            return Err(SecretError::TooShort(bits));
        }
        let mut seen = [false; 256];
        bytes.iter().for_each(|&b| seen[b as usize] = true);
        let distinct = seen.iter().filter(|&&s| s).count();
        if distinct < MIN_DISTINCT_SYMBOLS {
            return Err(SecretError::NotRandom(distinct));
        }
        Ok(Secret(bytes.to_vec()))
    }

    /// A fresh 256-bit secret from the operating system's generator, as 64 hex digits.
    pub fn generate() -> Secret {
        let mut raw = [0u8; 32];
        rand::rngs::OsRng.fill_bytes(&mut raw);
        Secret(crate::proto::hex(&raw).into_bytes())
    }

    /// Writes a fresh secret to `path`, which must not exist yet, created with mode 600.
    pub fn write_new(path: &Path) -> Result<Secret, SecretError> {
        let secret = Secret::generate();
        let mut file = std::fs::OpenOptions::new().write(true).create_new(true).mode(0o600).open(path).map_err(|e| match e.kind() {
            std::io::ErrorKind::AlreadyExists => SecretError::Exists,
            _ => SecretError::Unreadable(e.to_string()),
        })?;
        let written = file.write_all(&secret.0).and_then(|_| file.write_all(b"\n")).and_then(|_| file.sync_all());
        if let Err(e) = written {
            let _ = std::fs::remove_file(path);
            return Err(SecretError::Unreadable(e.to_string()));
        }
        Ok(secret)
    }

    /// The secret as the SPAKE2 password.
    pub(crate) fn password(&self) -> spake2::Password {
        spake2::Password::new(&self.0)
    }

    /// A name for the secret's holders that does not reveal it: the key the server's limits
    /// count by (every client holding this secret is one client to them).
    pub(crate) fn holder_id(&self) -> [u8; 8] {
        use sha2::Digest;
        let d = sha2::Sha256::new_with_prefix(b"ccbench serve holder\0").chain_update(&self.0).finalize();
        d[..8].try_into().expect("8 of 32 bytes")
    }
}

/// How many random bits a hex or base64 string of this length holds at most.
fn strength_bits(text: &[u8]) -> Result<usize, SecretError> {
    if text.iter().all(u8::is_ascii_hexdigit) {
        return Ok(4 * text.len());
    }
    let body = text.strip_suffix(b"==").or_else(|| text.strip_suffix(b"=")).unwrap_or(text);
    if body.iter().all(|&b| b.is_ascii_alphanumeric() || b"+/-_".contains(&b)) {
        return Ok(6 * body.len());
    }
    Err(SecretError::NotText)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn dir(tag: &str) -> std::path::PathBuf {
        let dir = std::env::temp_dir().join(format!("ccbench-secret-{tag}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        dir
    }

    #[test]
    fn secret_files_must_be_private_regular_and_strong() {
        let dir = dir("rules");
        let f = dir.join("s");
        std::fs::write(&f, "0123456789abcdef0123456789abcdef\n").unwrap();
        std::fs::set_permissions(&f, std::fs::Permissions::from_mode(0o644)).unwrap();
        assert_eq!(Secret::from_file(&f).unwrap_err(), SecretError::Exposed(0o644));
        std::fs::set_permissions(&f, std::fs::Permissions::from_mode(0o600)).unwrap();
        assert!(Secret::from_file(&f).is_ok(), "32 hex digits: 128 bits");
        let cases: [(&str, SecretError); 6] = [
            ("0123456789abcdef0123456789abcde\n", SecretError::TooShort(124)),
            ("short\n", SecretError::TooShort(30)),
            ("", SecretError::TooShort(0)),
            ("correct horse battery staple and more\n", SecretError::NotText),
            ("00000000000000000000000000000000000000\n", SecretError::NotRandom(1)),
            ("abababababababababababababababababab\n", SecretError::NotRandom(2)),
        ];
        for (text, want) in cases {
            std::fs::write(&f, text).unwrap();
            assert_eq!(Secret::from_file(&f).unwrap_err(), want, "{text:?}");
        }
        // The recipe the help gave before: 32 random bytes in base64 (44 symbols, 258 bits).
        std::fs::write(&f, "q83vEjRWeJq83vEjRWeJq83vEjRWeJq83vEjRWeJq80=\n").unwrap();
        assert!(Secret::from_file(&f).is_ok());
        assert!(matches!(Secret::from_file(&dir.join("missing")), Err(SecretError::Unreadable(_))));
        assert_eq!(Secret::from_file(&dir).unwrap_err(), SecretError::NotAFile, "a directory");
        std::fs::remove_dir_all(&dir).unwrap();
    }

    /// A FIFO (nobody writing) and a device are refused at once, without a read that blocks or
    /// never ends.
    #[test]
    fn fifos_and_devices_are_refused_without_reading() {
        let dir = dir("fifo");
        let fifo = dir.join("fifo");
        let c = std::ffi::CString::new(fifo.to_str().unwrap()).unwrap();
        assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
        let t = std::time::Instant::now();
        assert_eq!(Secret::from_file(&fifo).unwrap_err(), SecretError::NotAFile);
        assert!(t.elapsed() < std::time::Duration::from_secs(1));
        assert!(matches!(Secret::from_file(Path::new("/dev/urandom")), Err(SecretError::NotAFile | SecretError::Exposed(_))));
        assert_eq!(Secret::from_file(Path::new("/dev/null")).unwrap_err(), SecretError::NotAFile);
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn new_secrets_are_256_bits_private_and_never_overwrite() {
        let dir = dir("new");
        let f = dir.join("s");
        let made = Secret::write_new(&f).unwrap();
        assert_eq!(std::fs::metadata(&f).unwrap().permissions().mode() & 0o777, 0o600);
        let text = std::fs::read_to_string(&f).unwrap();
        assert_eq!(text.trim().len(), 64);
        assert_eq!(Secret::from_file(&f).unwrap().0, made.0);
        assert_eq!(Secret::write_new(&f).unwrap_err(), SecretError::Exists);
        assert_eq!(std::fs::read_to_string(&f).unwrap(), text, "untouched");
        assert_ne!(Secret::generate().0, made.0);
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
