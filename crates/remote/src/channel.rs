//! The control connection's one channel: a SPAKE2 handshake bound to the shared secret, then
//! every frame sealed with ChaCha20-Poly1305.
//!
//! Handshake (pre-authentication frames are the plain length-prefixed JSON of [`crate::proto`],
//! at most [`MAX_PRE_AUTH_FRAME`] bytes, all of them within one deadline):
//!
//! 1. client → server `hello {version, nonce}`: `nonce` is the client's SPAKE2 message (side A,
//!    33 bytes, hex). (The field keeps its version-3 name so that an older server reads the
//!    version first and answers with its version mismatch, not a parse error.)
//! 2. server → client `challenge {version, nonce}`: the server's SPAKE2 message (side B). It
//!    carries no proof: nothing an unauthenticated peer gets depends on the secret in a way it
//!    could test offline (SPAKE2, Abdalla–Pointcheval, CT-RSA 2005; RFC 9382 §3–4).
//! 3. client → server `confirm {mac}`: `HMAC(k_confirm_client, label)`. The client proves it
//!    holds the secret first; a wrong one gets one line and the connection closes (one online
//!    guess per connection, no more).
//! 4. server → client `confirm {mac}`: `HMAC(k_confirm_server, label)` (RFC 9382 §4: key
//!    confirmation, each side's own key).
//!
//! Keys: HKDF-SHA256 (RFC 5869) of the SPAKE2 key (which already hashes both identities, both
//! messages and the secret, RFC 9382 §4) into two confirmation keys and one AEAD key per
//! direction. After the handshake a record is a big-endian `u32` length, then the ChaCha20-
//! Poly1305 (RFC 8439) ciphertext of one JSON message padded to the record's bucket, the length
//! as associated data and the record's number in its direction as nonce: a record replayed,
//! reordered, dropped, altered or cut fails to open, and the connection ends.
//!
//! Padding (version 5): the plaintext is the message, one `0x80` byte, then zeros, as few as
//! make the whole record (length prefix and tag included) a multiple of [`RECORD_BUCKET`]
//! bytes (the ISO/IEC 7816-4 padding TLS 1.3 also uses after its content type, RFC 8446 §5.4).
//! It is sealed with the message, so it is authenticated; the receiver strips it and refuses a
//! record whose padding is not exactly that (a missing marker, a non-zero byte after it, or
//! more zeros than the bucket needs). An observer sees records in 256-byte steps: a `run` for
//! bbr and one for cubic are the same length. What it still sees is in
//! docs/serve-security.md: when records go and how many, and the data connections' timing and
//! volume.

use std::io::{self, Read, Write};
use std::net::TcpStream;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use chacha20poly1305::aead::{Aead, KeyInit, Payload};
use chacha20poly1305::{ChaCha20Poly1305, Key, Nonce};
use hkdf::Hkdf;
use hmac::{Hmac, Mac};
use serde::{de::DeserializeOwned, Deserialize, Serialize};
use sha2::Sha256;
use spake2::{Ed25519Group, Identity, Spake2};

use crate::auth::Secret;
use crate::proto::{self, hex, FrameError, MAX_FRAME, VERSION};

/// A pre-authentication frame is a few hundred bytes at most: an unauthenticated peer gets no
/// room to make serve buffer more.
pub const MAX_PRE_AUTH_FRAME: usize = 1024;
/// A SPAKE2 message over Ed25519: the side byte and a compressed point.
pub const PAKE_MSG_LEN: usize = 33;
const TAG_LEN: usize = 16;
/// Every sealed record, its 4-byte length included, is a multiple of this many bytes.
pub const RECORD_BUCKET: usize = 256;
/// The padding's first byte; zeros follow it.
const PAD_MARK: u8 = 0x80;

/// The length of the sealed part (ciphertext and tag) of the record carrying `plain_len`
/// bytes: the least that holds the message, the mark and the tag and makes the record, with
/// its length prefix, a multiple of [`RECORD_BUCKET`].
pub fn sealed_len(plain_len: usize) -> usize {
    let least = 4 + plain_len + 1 + TAG_LEN;
    least.div_ceil(RECORD_BUCKET) * RECORD_BUCKET - 4
}

/// The message inside an opened record's plaintext, if its padding is exactly what
/// [`sealed_len`] makes for it: the mark, then only zeros, no more than needed.
fn unpad(mut padded: Vec<u8>) -> Result<Vec<u8>, FrameError> {
    let malformed = || FrameError::Malformed("a record's padding is malformed".into());
    let mark = padded.iter().rposition(|&b| b != 0).ok_or_else(malformed)?;
    if padded[mark] != PAD_MARK || sealed_len(mark) != padded.len() + TAG_LEN {
        return Err(malformed());
    }
    padded.truncate(mark);
    Ok(padded)
}
const CLIENT_ID: &[u8] = b"ccbench client";
const SERVER_ID: &[u8] = b"ccbench serve";
const SALT: &[u8] = b"ccbench serve v4";
const CLIENT_CONFIRM: &[u8] = b"ccbench serve v4 client confirm";
const SERVER_CONFIRM: &[u8] = b"ccbench serve v4 server confirm";

/// The handshake's messages, before anything is sealed.
#[derive(Debug, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum PreAuth {
    /// Unknown fields are ignored here (an older client's hello must reach the version check).
    Hello {
        version: u32,
        nonce: String,
    },
    Challenge {
        version: u32,
        nonce: String,
    },
    Confirm {
        mac: String,
    },
    /// The server refuses: a version, a wrong proof, its limits. Same shape as
    /// `ServerMsg::Error`, so an older client prints it.
    Error {
        message: String,
    },
}

/// What both ends derive from the SPAKE2 key.
struct Keys {
    confirm_client: [u8; 32],
    confirm_server: [u8; 32],
    client_to_server: [u8; 32],
    server_to_client: [u8; 32],
}

impl Keys {
    fn derive(pake_key: &[u8]) -> Keys {
        let hk = Hkdf::<Sha256>::new(Some(SALT), pake_key);
        let expand = |info: &[u8]| {
            let mut k = [0u8; 32];
            hk.expand(info, &mut k).expect("32 bytes is a valid HKDF-SHA256 length");
            k
        };
        Keys {
            confirm_client: expand(b"confirm client"),
            confirm_server: expand(b"confirm server"),
            client_to_server: expand(b"seal client to server"),
            server_to_client: expand(b"seal server to client"),
        }
    }
}

fn mac(key: &[u8; 32], label: &[u8]) -> Hmac<Sha256> {
    let mut m = <Hmac<Sha256> as Mac>::new_from_slice(key).expect("HMAC takes any key length");
    m.update(label);
    m
}

/// Why a handshake failed, for the peer and the log.
#[derive(Debug, PartialEq)]
pub enum HandshakeError {
    /// The other end holds another secret (or is not a ccbench at all).
    WrongSecret,
    /// The server refused with this line.
    Refused(String),
    /// Anything else: malformed, a version, a timeout, the connection.
    Protocol(String),
}

impl std::fmt::Display for HandshakeError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            HandshakeError::WrongSecret => f.write_str("authentication failed: the two ends' secrets differ"),
            HandshakeError::Refused(m) | HandshakeError::Protocol(m) => f.write_str(m),
        }
    }
}

fn protocol(e: impl std::fmt::Display) -> HandshakeError {
    HandshakeError::Protocol(e.to_string())
}

fn read_pre_auth(s: &mut impl Read) -> Result<PreAuth, HandshakeError> {
    let mut len = [0u8; 4];
    s.read_exact(&mut len).map_err(|e| protocol(format!("handshake: {e}")))?;
    let len = u32::from_be_bytes(len) as usize;
    if len > MAX_PRE_AUTH_FRAME {
        return Err(protocol(format!("handshake: a frame of {len} bytes is over the {MAX_PRE_AUTH_FRAME}-byte limit before authentication")));
    }
    let mut buf = vec![0u8; len];
    s.read_exact(&mut buf).map_err(|e| protocol(format!("handshake: {e}")))?;
    proto::decode(&buf).map_err(|e| protocol(format!("handshake: {e}")))
}

fn write_pre_auth(s: &mut impl Write, m: &PreAuth) -> Result<(), HandshakeError> {
    proto::write_msg(s, m).map_err(|e| protocol(format!("handshake: {e}")))
}

fn pake_msg(nonce: &str) -> Result<Vec<u8>, HandshakeError> {
    proto::unhex_vec(nonce, PAKE_MSG_LEN)
        .filter(|m| m.len() == PAKE_MSG_LEN)
        .ok_or_else(|| protocol("malformed handshake: the key share is not 33 bytes of hex"))
}

/// The one line either end gives when the versions differ: the client's first, no advice.
pub fn version_disagreement(client: u32, server: u32) -> String {
    format!("the ends disagree on the protocol version ({client} vs {server}): this client speaks {client}, the server {server}")
}

/// A version refusal in the words of a server before version 5 ("protocol version N is not
/// supported; this server speaks version M (update ccbench on the client)"), said neutrally:
/// its number may have been rewritten on the way, and its advice is not to be relayed.
fn older_refusal(message: &str) -> Option<String> {
    let rest = message.strip_prefix("protocol version ")?;
    let (client, rest) = rest.split_once(' ')?;
    let server = rest.split("this server speaks version ").nth(1)?.split(|c: char| !c.is_ascii_digit()).next()?;
    Some(version_disagreement(client.parse().ok()?, server.parse().ok()?))
}

/// The server's half over any byte stream (the fuzz target feeds it bytes). On success the
/// keys of a sealed channel: (open client→server, seal server→client).
pub fn server_handshake_io<S: Read + Write>(s: &mut S, secret: &Secret) -> Result<([u8; 32], [u8; 32]), HandshakeError> {
    let client_msg = match read_pre_auth(s)? {
        PreAuth::Hello { version, nonce } if version == VERSION => pake_msg(&nonce)?,
        PreAuth::Hello { version, .. } => {
            // Neutral on purpose: the hello is not authenticated, so the number may have been
            // rewritten on the way, and advice to update one end would be an attacker's.
            let message = version_disagreement(version, VERSION);
            let _ = write_pre_auth(s, &PreAuth::Error { message: message.clone() });
            return Err(HandshakeError::Refused(message));
        }
        _ => return Err(protocol("expected a hello")),
    };
    let (pake, server_msg) = Spake2::<Ed25519Group>::start_b(&secret.password(), &Identity::new(CLIENT_ID), &Identity::new(SERVER_ID));
    let key = pake.finish(&client_msg).map_err(|_| protocol("malformed handshake: the client's key share is not a valid one"))?;
    let keys = Keys::derive(&key);
    write_pre_auth(s, &PreAuth::Challenge { version: VERSION, nonce: hex(&server_msg) })?;
    let proof = match read_pre_auth(s)? {
        PreAuth::Confirm { mac } => proto::unhex::<32>(&mac),
        _ => return Err(protocol("expected the client's confirmation")),
    };
    let verified = proof.is_some_and(|p| mac(&keys.confirm_client, CLIENT_CONFIRM).verify_slice(&p).is_ok());
    if !verified {
        let _ = write_pre_auth(s, &PreAuth::Error { message: "authentication failed: the client does not hold this server's secret".into() });
        return Err(HandshakeError::WrongSecret);
    }
    let confirm = hex(&mac(&keys.confirm_server, SERVER_CONFIRM).finalize().into_bytes());
    write_pre_auth(s, &PreAuth::Confirm { mac: confirm })?;
    Ok((keys.client_to_server, keys.server_to_client))
}

/// The client's half: (seal client→server, open server→client).
pub fn client_handshake_io<S: Read + Write>(s: &mut S, secret: &Secret) -> Result<([u8; 32], [u8; 32]), HandshakeError> {
    let (pake, client_msg) = Spake2::<Ed25519Group>::start_a(&secret.password(), &Identity::new(CLIENT_ID), &Identity::new(SERVER_ID));
    write_pre_auth(s, &PreAuth::Hello { version: VERSION, nonce: hex(&client_msg) })?;
    let server_msg = match read_pre_auth(s)? {
        PreAuth::Challenge { version, nonce } if version == VERSION => pake_msg(&nonce)?,
        PreAuth::Challenge { version, .. } => return Err(protocol(version_disagreement(VERSION, version))),
        PreAuth::Error { message } => return Err(HandshakeError::Refused(older_refusal(&message).unwrap_or(message))),
        _ => return Err(protocol("expected the server's challenge")),
    };
    let key = pake.finish(&server_msg).map_err(|_| protocol("malformed challenge: the server's key share is not a valid one"))?;
    let keys = Keys::derive(&key);
    write_pre_auth(s, &PreAuth::Confirm { mac: hex(&mac(&keys.confirm_client, CLIENT_CONFIRM).finalize().into_bytes()) })?;
    match read_pre_auth(s)? {
        PreAuth::Confirm { mac: m } if proto::unhex::<32>(&m).is_some_and(|p| mac(&keys.confirm_server, SERVER_CONFIRM).verify_slice(&p).is_ok()) => {
            Ok((keys.client_to_server, keys.server_to_client))
        }
        PreAuth::Confirm { .. } => Err(HandshakeError::WrongSecret),
        PreAuth::Error { message } if message.starts_with("authentication failed") => Err(HandshakeError::WrongSecret),
        PreAuth::Error { message } => Err(HandshakeError::Refused(message)),
        _ => Err(protocol("expected the server's confirmation")),
    }
}

/// A stream whose every read and write must end by `deadline`: a peer that dribbles a byte at
/// a time cannot stretch the whole past it (per-read timeouts alone would let it).
pub struct Deadlined<'a> {
    pub stream: &'a TcpStream,
    pub deadline: Instant,
}

impl Deadlined<'_> {
    fn remaining(&self) -> io::Result<Duration> {
        let left = self.deadline.saturating_duration_since(Instant::now());
        if left.is_zero() {
            return Err(io::Error::new(io::ErrorKind::TimedOut, "the deadline passed"));
        }
        Ok(left)
    }
}

impl Read for Deadlined<'_> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        self.stream.set_read_timeout(Some(self.remaining()?))?;
        (&mut &*self.stream).read(buf)
    }
}

impl Write for Deadlined<'_> {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        self.stream.set_write_timeout(Some(self.remaining()?))?;
        (&mut &*self.stream).write(buf)
    }
    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

/// One direction's AEAD and its record counter.
pub struct Sealer {
    aead: ChaCha20Poly1305,
    counter: u64,
}

fn nonce_of(counter: u64) -> [u8; 12] {
    let mut n = [0u8; 12];
    n[4..].copy_from_slice(&counter.to_be_bytes());
    n
}

impl Sealer {
    pub fn new(key: &[u8; 32]) -> Sealer {
        Sealer { aead: ChaCha20Poly1305::new(Key::from_slice(key)), counter: 0 }
    }

    /// One record: length, then the sealed message.
    pub fn seal(&mut self, plain: &[u8]) -> Result<Vec<u8>, FrameError> {
        if plain.len() > MAX_FRAME {
            return Err(FrameError::TooLong(plain.len()));
        }
        let sealed_len = sealed_len(plain.len());
        let len = (sealed_len as u32).to_be_bytes();
        let mut padded = Vec::with_capacity(sealed_len);
        padded.extend_from_slice(plain);
        padded.push(PAD_MARK);
        padded.resize(sealed_len - TAG_LEN, 0);
        let counter = self.counter;
        self.counter = counter.checked_add(1).ok_or(FrameError::Tampered)?;
        let sealed = self.aead.encrypt(Nonce::from_slice(&nonce_of(counter)), Payload { msg: &padded, aad: &len }).map_err(|_| FrameError::Tampered)?;
        let mut record = Vec::with_capacity(4 + sealed.len());
        record.extend_from_slice(&len);
        record.extend_from_slice(&sealed);
        Ok(record)
    }

    /// The next record from `r`, opened. Any failure leaves the opener broken: the stream is
    /// out of step, and nothing after it can be trusted.
    pub fn open(&mut self, r: &mut impl Read) -> Result<Vec<u8>, FrameError> {
        let counter = self.counter;
        self.counter = u64::MAX;
        if counter == u64::MAX {
            return Err(FrameError::Tampered);
        }
        let mut len = [0u8; 4];
        r.read_exact(&mut len)?;
        let n = u32::from_be_bytes(len) as usize;
        if n > sealed_len(MAX_FRAME) {
            return Err(FrameError::TooLong(n));
        }
        // Not a bucket's length: no record this protocol makes, refused before it is read.
        if n < sealed_len(0) || !(n + 4).is_multiple_of(RECORD_BUCKET) {
            return Err(FrameError::Tampered);
        }
        let mut sealed = vec![0u8; n];
        r.read_exact(&mut sealed)?;
        let padded = self.aead.decrypt(Nonce::from_slice(&nonce_of(counter)), Payload { msg: &sealed, aad: &len }).map_err(|_| FrameError::Tampered)?;
        let plain = unpad(padded)?;
        self.counter = counter + 1;
        Ok(plain)
    }
}

/// An authenticated, sealed control connection. Sending and receiving lock separately, so one
/// thread may read results while another sends.
pub struct Channel {
    stream: TcpStream,
    send: Mutex<Sealer>,
    recv: Mutex<Sealer>,
}

impl Channel {
    /// Runs the server's half of the handshake, all of it by `deadline`.
    pub fn accept(stream: TcpStream, secret: &Secret, deadline: Instant) -> Result<Channel, HandshakeError> {
        let (open, seal) = server_handshake_io(&mut Deadlined { stream: &stream, deadline }, secret)?;
        Ok(Channel::new(stream, &seal, &open))
    }

    /// Runs the client's half of the handshake, all of it by `deadline`.
    pub fn connect(stream: TcpStream, secret: &Secret, deadline: Instant) -> Result<Channel, HandshakeError> {
        let (seal, open) = client_handshake_io(&mut Deadlined { stream: &stream, deadline }, secret)?;
        Ok(Channel::new(stream, &seal, &open))
    }

    fn new(stream: TcpStream, seal: &[u8; 32], open: &[u8; 32]) -> Channel {
        Channel { stream, send: Mutex::new(Sealer::new(seal)), recv: Mutex::new(Sealer::new(open)) }
    }

    /// The connection under the channel: for its addresses, timeouts and `TCP_INFO`; never
    /// for bytes.
    pub fn stream(&self) -> &TcpStream {
        &self.stream
    }

    pub fn send<T: Serialize>(&self, msg: &T) -> Result<(), FrameError> {
        let body = serde_json::to_vec(msg).map_err(|e| FrameError::Malformed(e.to_string()))?;
        // Sealed and written under one lock: records go out in the order of their numbers.
        let mut sealer = self.send.lock().unwrap_or_else(|p| p.into_inner());
        let record = sealer.seal(&body)?;
        (&self.stream).write_all(&record)?;
        Ok(())
    }

    /// The next message, within the stream's read timeout per read.
    pub fn recv<T: DeserializeOwned>(&self) -> Result<T, FrameError> {
        let body = self.recv.lock().unwrap_or_else(|p| p.into_inner()).open(&mut &self.stream)?;
        proto::decode(&body)
    }

    /// The next message, all of it by `deadline` (however slowly its bytes come).
    pub fn recv_by<T: DeserializeOwned>(&self, deadline: Instant) -> Result<T, FrameError> {
        let body = self.recv.lock().unwrap_or_else(|p| p.into_inner()).open(&mut Deadlined { stream: &self.stream, deadline })?;
        proto::decode(&body)
    }
}

/// The secret of the fuzz target's server and client.
pub const FUZZ_SECRET: &[u8] = b"80e90f1ef87713b661a5e8877057c464";

/// A client's hello frame for `secret`, as the first bytes of a connection: for tests and the
/// fuzz corpus (the handshake cannot go on without the state it drops).
pub fn hello_frame(secret: &Secret) -> Vec<u8> {
    let (_, msg) = Spake2::<Ed25519Group>::start_a(&secret.password(), &Identity::new(CLIENT_ID), &Identity::new(SERVER_ID));
    let mut out = Vec::new();
    let _ = write_pre_auth(&mut out, &PreAuth::Hello { version: VERSION, nonce: hex(&msg) });
    out
}

/// The handshake and the record layer fed `data`, as the server reads a client (with a fixed
/// secret), as a client reads a server, and as either opens records: the body of the
/// `handshake` fuzz target. Must never panic.
pub fn fuzz_input(data: &[u8]) {
    struct Io<'a> {
        input: &'a [u8],
        out: Vec<u8>,
    }
    impl Read for Io<'_> {
        fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
            self.input.read(buf)
        }
    }
    impl Write for Io<'_> {
        fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
            self.out.extend_from_slice(buf);
            Ok(buf.len())
        }
        fn flush(&mut self) -> io::Result<()> {
            Ok(())
        }
    }
    let Ok(secret) = Secret::from_bytes(FUZZ_SECRET) else { return };
    let _ = server_handshake_io(&mut Io { input: data, out: Vec::new() }, &secret);
    let _ = client_handshake_io(&mut Io { input: data, out: Vec::new() }, &secret);
    let mut opener = Sealer::new(&FUZZ_RECORD_KEY);
    let mut r = data;
    while opener.open(&mut r).is_ok() {}
    // The padding parser, which random bytes reach only through a valid tag: fed directly.
    let _ = unpad(data.to_vec());
}

/// The key the `handshake` fuzz target opens records with.
pub const FUZZ_RECORD_KEY: [u8; 32] = [7; 32];

#[cfg(test)]
mod tests {
    use super::*;
    use std::net::TcpListener;

    /// A valid secret, one per `c`.
    fn secret(c: u8) -> Secret {
        let bytes: [u8; 16] = std::array::from_fn(|i| c.wrapping_mul(31).wrapping_add(i as u8 * 17));
        Secret::from_bytes(hex(&bytes).as_bytes()).unwrap()
    }

    fn pair(server_secret: Secret, client_secret: Secret) -> (Result<Channel, HandshakeError>, Result<Channel, HandshakeError>) {
        let l = TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = l.local_addr().unwrap();
        let server = std::thread::spawn(move || {
            let (s, _) = l.accept().unwrap();
            Channel::accept(s, &server_secret, Instant::now() + Duration::from_secs(5))
        });
        let c = Channel::connect(TcpStream::connect(addr).unwrap(), &client_secret, Instant::now() + Duration::from_secs(5));
        (server.join().unwrap(), c)
    }

    #[test]
    fn the_same_secret_gives_a_channel_both_ways() {
        let (s, c) = pair(secret(1), secret(1));
        let (s, c) = (s.unwrap(), c.unwrap());
        c.send(&PreAuth::Confirm { mac: "x".into() }).unwrap();
        assert!(matches!(s.recv::<PreAuth>().unwrap(), PreAuth::Confirm { mac } if mac == "x"));
        s.send(&PreAuth::Error { message: "y".into() }).unwrap();
        assert!(matches!(c.recv::<PreAuth>().unwrap(), PreAuth::Error { message } if message == "y"));
    }

    #[test]
    fn another_secret_fails_both_ends_and_the_server_says_so_first() {
        let (s, c) = pair(secret(1), secret(2));
        assert_eq!(s.err(), Some(HandshakeError::WrongSecret));
        assert_eq!(c.err(), Some(HandshakeError::WrongSecret));
    }

    /// A record altered, replayed, reordered or cut does not open; the opener stays broken.
    #[test]
    fn records_are_sealed_in_order() {
        let (mut a, mut b) = (Sealer::new(&[3; 32]), Sealer::new(&[3; 32]));
        let r0 = a.seal(b"zero").unwrap();
        let r1 = a.seal(b"one").unwrap();
        assert_eq!(b.open(&mut &r0[..]).unwrap(), b"zero");
        assert!(matches!(b.open(&mut &r0[..]), Err(FrameError::Tampered)), "a replay");
        assert!(matches!(b.open(&mut &r1[..]), Err(FrameError::Tampered)), "broken after a failure");
        let mut c = Sealer::new(&[3; 32]);
        assert!(matches!(c.open(&mut &r1[..]), Err(FrameError::Tampered)), "out of order");
        for at in [0, 3, 4, r0.len() - 1] {
            let mut bad = r0.clone();
            bad[at] ^= 1;
            assert!(Sealer::new(&[3; 32]).open(&mut &bad[..]).is_err(), "flipped byte {at}");
        }
        assert!(Sealer::new(&[3; 32]).open(&mut &r0[..r0.len() - 1]).is_err(), "cut");
        assert!(Sealer::new(&[4; 32]).open(&mut &r0[..]).is_err(), "another key");
    }

    /// The handshake corpus holds padded records the fuzz target opens (a `run`, a
    /// `connected`), so that it fuzzes past the tag into the padding and the message. With
    /// `CCBENCH_UPDATE_CORPUS=1` it writes them.
    #[test]
    fn the_corpus_records_open_under_the_fuzz_key() {
        let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fuzz/corpus/handshake");
        let bodies: [(&str, &[u8]); 2] = [
            ("record_padded_run", br#"{"type":"run","test":{"kind":"bulk","flows":1,"direction":"download","amount":{"seconds":1.0},"cc":"bbr","mix":[],"port":0,"sample_interval_us":10000,"timeout_s":10.0,"quic_receiver_cc":null}}"#),
            ("record_padded_two", br#"{"type":"start"}"#),
        ];
        for (name, body) in bodies {
            let mut sealer = Sealer::new(&FUZZ_RECORD_KEY);
            let mut bytes = sealer.seal(body).unwrap();
            bytes.extend(sealer.seal(br#"{"type":"stop"}"#).unwrap());
            if std::env::var_os("CCBENCH_UPDATE_CORPUS").is_some() {
                std::fs::write(dir.join(name), &bytes).unwrap();
            }
            let stored = std::fs::read(dir.join(name)).unwrap();
            let mut opener = Sealer::new(&FUZZ_RECORD_KEY);
            let mut r = &stored[..];
            assert_eq!(opener.open(&mut r).unwrap(), body, "{name}");
            assert_eq!(opener.open(&mut r).unwrap(), br#"{"type":"stop"}"#, "{name}");
        }
    }

    /// A record sealed with `padded` as its plaintext, whatever its padding: for the tests of
    /// what the receiver refuses.
    fn raw_record(key: &[u8; 32], padded: &[u8]) -> Vec<u8> {
        let len = ((padded.len() + TAG_LEN) as u32).to_be_bytes();
        let aead = ChaCha20Poly1305::new(Key::from_slice(key));
        let mut record = len.to_vec();
        record.extend(aead.encrypt(Nonce::from_slice(&nonce_of(0)), Payload { msg: padded, aad: &len }).unwrap());
        record
    }

    /// Every record is a whole number of buckets, and each message comes back as it went.
    #[test]
    fn records_are_padded_to_the_bucket_and_stripped() {
        for n in (0..700).chain([MAX_FRAME - 1, MAX_FRAME]) {
            let body: Vec<u8> = (0..n).map(|i| (i % 251) as u8).collect();
            let record = Sealer::new(&[5; 32]).seal(&body).unwrap();
            assert_eq!(record.len() % RECORD_BUCKET, 0, "{n} bytes");
            assert!(record.len() < 4 + n + 1 + TAG_LEN + RECORD_BUCKET, "{n} bytes: no more padding than a bucket");
            assert_eq!(Sealer::new(&[5; 32]).open(&mut &record[..]).unwrap(), body, "{n} bytes");
        }
        assert!(matches!(Sealer::new(&[5; 32]).seal(&vec![0; MAX_FRAME + 1]), Err(FrameError::TooLong(_))));
    }

    /// Requests that differ only in the algorithm's name seal to records of one length (they
    /// were 179 and 181 bytes for bbr and cubic before padding).
    #[test]
    fn runs_for_bbr_and_cubic_are_the_same_length_on_the_wire() {
        use crate::proto::{ClientMsg, ServerMsg, TestRequest};
        let bulk = |cc: &str| {
            let spec = ccbench_workload::BulkSpec {
                flows: 1,
                direction: ccbench_workload::Direction::Download,
                amount: ccbench_workload::Amount::Seconds(10.0),
                cc: cc.parse().unwrap(),
                mix: Vec::new(),
                port: 0,
                sample_interval_us: 10_000,
                timeout_s: 30.0,
                quic_receiver_cc: None,
                knobs: Default::default(),
            };
            TestRequest::Bulk(spec)
        };
        fn json<T: Serialize>(m: &T) -> Vec<u8> {
            serde_json::to_vec(m).unwrap()
        }
        fn len<T: Serialize>(m: &T) -> usize {
            Sealer::new(&[1; 32]).seal(&json(m)).unwrap().len()
        }
        for (a, b) in [
            (ClientMsg::Run { test: bulk("bbr") }, ClientMsg::Run { test: bulk("cubic") }),
            (ClientMsg::Check { test: bulk("bbr") }, ClientMsg::Check { test: bulk("cubic") }),
            (ClientMsg::Run { test: bulk("quic:bbr3") }, ClientMsg::Run { test: bulk("quic:cubic") }),
        ] {
            assert_ne!(json(&a).len(), json(&b).len(), "the plaintexts differ in length");
            assert_eq!(len(&a), len(&b), "{:?}", String::from_utf8(json(&a)));
        }
        let connected = |cc: &str| ServerMsg::Connected { cc_read_back: vec![cc.into()] };
        assert_eq!(len(&connected("bbr")), len(&connected("cubic")));
    }

    /// Padding is inside the seal, so it cannot be altered on the way; a peer (or a bug) that
    /// seals bad padding is refused all the same: no mark, a non-zero byte after it, a bucket
    /// more than needed, no room for a mark, or a length that is no bucket's.
    #[test]
    fn malformed_padding_is_refused() {
        let key = [9; 32];
        let good = |body: &[u8]| {
            let mut p = body.to_vec();
            p.push(PAD_MARK);
            p.resize(sealed_len(body.len()) - TAG_LEN, 0);
            p
        };
        assert_eq!(Sealer::new(&key).open(&mut &raw_record(&key, &good(b"{}"))[..]).unwrap(), b"{}", "the hand-made record is right");
        let no_mark = vec![0u8; sealed_len(2) - TAG_LEN];
        let mut after_mark = good(b"{}");
        *after_mark.last_mut().unwrap() = 1;
        let mut marked_wrong = good(b"{}");
        marked_wrong[2] = 0x81;
        let mut too_much = good(b"{}");
        too_much.resize(too_much.len() + RECORD_BUCKET, 0);
        let mut odd = good(b"{}");
        odd.pop();
        for (what, padded) in [
            ("no mark", no_mark),
            ("a byte after the mark", after_mark),
            ("another mark", marked_wrong),
            ("a bucket too many", too_much),
            ("not a bucket", odd),
        ] {
            let mut opener = Sealer::new(&key);
            assert!(opener.open(&mut &raw_record(&key, &padded)[..]).is_err(), "{what}");
            let next = Sealer::new(&key).seal(b"{}").unwrap();
            assert!(opener.open(&mut &next[..]).is_err(), "{what}: the opener stays broken");
        }
    }

    /// A hello with another version: the server's line names both numbers and advises
    /// nothing; the client says the same of a challenge with another version, and rewords an
    /// older server's advice to update it.
    #[test]
    fn a_version_disagreement_is_said_without_advice() {
        let l = TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = l.local_addr().unwrap();
        let server = std::thread::spawn(move || {
            let (s, _) = l.accept().unwrap();
            Channel::accept(s, &secret(1), Instant::now() + Duration::from_secs(5)).err()
        });
        let mut c = TcpStream::connect(addr).unwrap();
        write_pre_auth(&mut c, &PreAuth::Hello { version: 3, nonce: "00".into() }).unwrap();
        let line = format!("the ends disagree on the protocol version (3 vs {VERSION}): this client speaks 3, the server {VERSION}");
        assert!(matches!(read_pre_auth(&mut c).unwrap(), PreAuth::Error { message } if message == line));
        assert_eq!(server.join().unwrap(), Some(HandshakeError::Refused(line)));
        let old = "protocol version 5 is not supported; this server speaks version 4 (update ccbench on the client)";
        assert_eq!(older_refusal(old).as_deref(), Some("the ends disagree on the protocol version (5 vs 4): this client speaks 5, the server 4"));
        assert_eq!(older_refusal("serve is busy"), None);
        // A challenge of another version, as from a server whose reply was rewritten.
        let mut wire = Vec::new();
        write_pre_auth(&mut wire, &PreAuth::Challenge { version: 9, nonce: hex(&[2; PAKE_MSG_LEN]) }).unwrap();
        struct Io(Vec<u8>, usize);
        impl Read for Io {
            fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
                let n = (&self.0[self.1..]).read(buf)?;
                self.1 += n;
                Ok(n)
            }
        }
        impl Write for Io {
            fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
                Ok(buf.len())
            }
            fn flush(&mut self) -> io::Result<()> {
                Ok(())
            }
        }
        let e = client_handshake_io(&mut Io(wire, 0), &secret(1)).unwrap_err();
        assert_eq!(e.to_string(), format!("the ends disagree on the protocol version ({VERSION} vs 9): this client speaks {VERSION}, the server 9"));
    }

    /// What an unauthenticated client sees is the server's key share alone: it changes each
    /// time and carries no proof (nothing to test a guessed secret against offline).
    #[test]
    fn the_challenge_carries_no_proof() {
        let l = TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = l.local_addr().unwrap();
        let server = std::thread::spawn(move || {
            let (s, _) = l.accept().unwrap();
            Channel::accept(s, &secret(1), Instant::now() + Duration::from_secs(5)).err()
        });
        let mut c = TcpStream::connect(addr).unwrap();
        let (_, msg) = Spake2::<Ed25519Group>::start_a(&secret(9).password(), &Identity::new(CLIENT_ID), &Identity::new(SERVER_ID));
        write_pre_auth(&mut c, &PreAuth::Hello { version: VERSION, nonce: hex(&msg) }).unwrap();
        let challenge = read_pre_auth(&mut c).unwrap();
        let json = serde_json::to_string(&challenge).unwrap();
        assert!(matches!(challenge, PreAuth::Challenge { .. }) && !json.contains("proof") && !json.contains("mac"), "{json}");
        drop(c);
        assert!(matches!(server.join().unwrap(), Some(HandshakeError::Protocol(_))));
    }

    #[test]
    fn random_handshake_input_never_panics() {
        use rand::{Rng, SeedableRng};
        let mut rng = rand::rngs::StdRng::seed_from_u64(0x4a4e);
        let mut valid = Vec::new();
        valid.extend(hello_frame(&Secret::from_bytes(FUZZ_SECRET).unwrap()));
        write_pre_auth(&mut valid, &PreAuth::Confirm { mac: hex(&[0; 32]) }).unwrap();
        for _ in 0..3000 {
            let mut v = valid.clone();
            for _ in 0..rng.gen_range(0..4) {
                let at = rng.gen_range(0..v.len());
                v[at] = rng.gen();
            }
            v.truncate(rng.gen_range(0..=v.len()));
            fuzz_input(&v);
        }
    }
}
