//! The shared secret: how it is read, checked and made. The handshake that proves it is in
//! [`crate::channel`] (SPAKE2): the secret never crosses the wire, and nothing that does lets
//! a peer without it test guesses offline.
//!
//! A secret is text: hex (at least 32 digits) or base64 (at least 22 symbols), so that its
//! length says its strength: at least 128 bits (4 bits a hex digit, 6 a base64 symbol) from a
//! random source, and it must look drawn at random ([`crate::secret_check`]: no repeats, no
//! pattern, a plausible mix of symbols, not the encoding of text). Anything else (a
//! passphrase, raw bytes) is refused with how to make one: `ccbench serve --new-secret FILE`
//! writes 256 random bits as 64 hex digits, mode 600.

use std::io::{Read, Write};
use std::os::unix::fs::{FileTypeExt, OpenOptionsExt, PermissionsExt};
use std::path::Path;

use rand::RngCore;

/// The fewest bits of a random secret (the length says them; see the module's note).
pub const MIN_SECRET_BITS: usize = 128;
/// A secret file is a line of text; anything longer is not one (and is not read to its end).
const MAX_SECRET_FILE: u64 = 4096;
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
    #[error("it {0}, which a random secret does not; {HOW_TO_MAKE}")]
    NotRandom(String),
    #[error("it is owned by user {0}, not root, and serve runs as root: that user can read or replace it; chown root it")]
    NotOwnedByRoot(u32),
    #[error("its directory {0} is writable by others (mode {1:03o}), who can replace it; keep it in a directory only root can write to")]
    OpenDirectory(String, u32),
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

    /// [`Secret::from_file`], for a server running as `euid`: as root (0), the file must also
    /// be root's and its directory not writable by others (OpenSSH's StrictModes), since any
    /// user who can write either can choose the secret serve accepts.
    pub fn from_file_for_serve(path: &Path, euid: u32) -> Result<Secret, SecretError> {
        use std::os::unix::fs::MetadataExt;
        if euid == 0 {
            let meta = std::fs::symlink_metadata(path).map_err(|e| SecretError::Unreadable(e.to_string()))?;
            let meta = if meta.file_type().is_symlink() { std::fs::metadata(path).map_err(|e| SecretError::Unreadable(e.to_string()))? } else { meta };
            if meta.uid() != 0 {
                return Err(SecretError::NotOwnedByRoot(meta.uid()));
            }
            let real = std::fs::canonicalize(path).map_err(|e| SecretError::Unreadable(e.to_string()))?;
            let dir = real.parent().unwrap_or(Path::new("/"));
            let mode = std::fs::metadata(dir).map_err(|e| SecretError::Unreadable(e.to_string()))?.mode() & 0o7777;
            if mode & 0o002 != 0 {
                return Err(SecretError::OpenDirectory(dir.display().to_string(), mode));
            }
        }
        Secret::from_file(path)
    }

    /// A secret from its text, checked as a file's is.
    pub fn from_bytes(bytes: &[u8]) -> Result<Secret, SecretError> {
        let bits = strength_bits(bytes)?;
        if bits < MIN_SECRET_BITS {
            return Err(SecretError::TooShort(bits));
        }
        crate::secret_check::judge(bytes).map_err(SecretError::NotRandom)?;
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
        std::fs::write(&f, "80e90f1ef87713b661a5e8877057c464\n").unwrap();
        std::fs::set_permissions(&f, std::fs::Permissions::from_mode(0o644)).unwrap();
        assert_eq!(Secret::from_file(&f).unwrap_err(), SecretError::Exposed(0o644));
        std::fs::set_permissions(&f, std::fs::Permissions::from_mode(0o600)).unwrap();
        assert!(Secret::from_file(&f).is_ok(), "32 hex digits: 128 bits");
        let cases: [(&str, SecretError); 6] = [
            ("0123456789abcdef0123456789abcde\n", SecretError::TooShort(124)),
            ("short\n", SecretError::TooShort(30)),
            ("", SecretError::TooShort(0)),
            ("correct horse battery staple and more\n", SecretError::NotText),
            ("00000000000000000000000000000000000000\n", SecretError::NotRandom("repeats every 1 symbols".into())),
            ("abababababababababababababababababab\n", SecretError::NotRandom("repeats every 2 symbols".into())),
        ];
        for (text, want) in cases {
            std::fs::write(&f, text).unwrap();
            assert_eq!(Secret::from_file(&f).unwrap_err(), want, "{text:?}");
        }
        // The recipe the help gave before: 32 random bytes in base64 (44 symbols, 258 bits).
        std::fs::write(&f, "qJ3x8kV0tWm2Zr9LpE4yNc7HbU1oGd6fSa5iTe0RwXk=\n").unwrap();
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

    /// Issue 27 §4: the audit's passphrases, as files, each refused with one line.
    #[test]
    fn weak_secret_files_are_refused() {
        let dir = dir("weak");
        let f = dir.join("s");
        let weak = [
            "correcthorsebatterystaple",
            "Password1Password1Password1",
            "password-password-password",
            "01234567012345670123456701234567",
            "cGFzc3dvcmRwYXNzd29yZHBhc3N3b3Jk",
            "0123456789abcdef0123456789abcdef",
        ];
        for w in weak {
            std::fs::write(&f, format!("{w}\n")).unwrap();
            std::fs::set_permissions(&f, std::fs::Permissions::from_mode(0o600)).unwrap();
            let e = Secret::from_file(&f).expect_err(w);
            assert!(matches!(e, SecretError::NotRandom(_) | SecretError::NotText) && !e.to_string().contains('\n'), "{w}: {e}");
        }
        std::fs::remove_dir_all(&dir).unwrap();
    }

    /// Issue 27 §8: serve as root refuses a secret another user owns, or one in a directory
    /// others can write to; as another user, neither is asked.
    #[test]
    fn serve_as_root_refuses_a_secret_others_can_choose() {
        use std::os::unix::fs::MetadataExt;
        let dir = dir("owner");
        let f = dir.join("s");
        std::fs::write(&f, "80e90f1ef87713b661a5e8877057c464\n").unwrap();
        std::fs::set_permissions(&f, std::fs::Permissions::from_mode(0o600)).unwrap();
        std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o755)).unwrap();
        let mine = std::fs::metadata(&f).unwrap().uid();
        assert!(Secret::from_file_for_serve(&f, 1000).is_ok(), "not root: no owner rule");
        if mine == 0 {
            assert!(Secret::from_file_for_serve(&f, 0).is_ok());
            let c = std::ffi::CString::new(f.to_str().unwrap()).unwrap();
            assert_eq!(unsafe { libc::chown(c.as_ptr(), 65534, 65534) }, 0);
            assert_eq!(Secret::from_file_for_serve(&f, 0).unwrap_err(), SecretError::NotOwnedByRoot(65534));
            assert_eq!(unsafe { libc::chown(c.as_ptr(), 0, 0) }, 0);
            std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o1777)).unwrap();
            let e = Secret::from_file_for_serve(&f, 0).unwrap_err();
            assert!(matches!(&e, SecretError::OpenDirectory(_, 0o1777)), "{e}");
        }
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
