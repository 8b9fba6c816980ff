//! The client's side of a crowded serve: when serve evicts this connection from its
//! pre-authentication pool (it says [`BUSY`]) or the connection is reset or closed before the
//! handshake ends (an older serve refuses a full pool so), the client tries again on a new
//! connection after a jittered, doubling pause (RFC 8085 §3.1.3's advice for retries: back off
//! and randomise, so that many clients do not retry in step), all within its own handshake
//! deadline; then it says serve was busy, not "Connection reset by peer".

use std::net::{SocketAddr, TcpStream};
use std::time::{Duration, Instant};

use rand::Rng;

use crate::auth::Secret;
use crate::channel::{Channel, HandshakeError};

/// What serve tells a connection it evicted, and the client's word when it gives up.
pub const BUSY: &str = "serve is busy with too many handshakes";
/// The first pause and the longest; each is drawn from ½–1½ of the nominal one.
const FIRST_PAUSE: Duration = Duration::from_millis(100);
const MAX_PAUSE: Duration = Duration::from_secs(2);

/// Whether a failed handshake is worth another connection: serve was busy, or cut the
/// connection before anything was proved (an old serve's refusal when full).
fn busy_or_cut(e: &HandshakeError) -> bool {
    match e {
        HandshakeError::Refused(m) => m.starts_with(BUSY),
        HandshakeError::Protocol(m) => {
            ["Connection reset", "Broken pipe", "failed to fill whole buffer", "unexpected end of file"].iter().any(|s| m.contains(s))
        }
        HandshakeError::WrongSecret => false,
    }
}

/// Connects to `addr` and runs the handshake, again while serve is busy, until `deadline`.
/// The outer error is a connection that could not be made; the inner one the handshake's.
pub fn connect(addr: SocketAddr, secret: &Secret, deadline: Instant, connect_timeout: Duration) -> std::io::Result<Result<Channel, HandshakeError>> {
    let mut pause = FIRST_PAUSE;
    let mut attempts = 0u32;
    let began = Instant::now();
    loop {
        attempts += 1;
        let stream = TcpStream::connect_timeout(&addr, connect_timeout)?;
        stream.set_nodelay(true)?;
        let e = match Channel::connect(stream, secret, deadline) {
            Ok(c) => return Ok(Ok(c)),
            Err(e) if busy_or_cut(&e) => e,
            Err(e) => return Ok(Err(e)),
        };
        let wait = pause.mul_f64(rand::thread_rng().gen_range(0.5..1.5));
        if Instant::now() + wait >= deadline {
            let tried = format!("{attempts} attempt{} in {:.1} s", if attempts == 1 { "" } else { "s" }, began.elapsed().as_secs_f64());
            let last = match &e {
                HandshakeError::Refused(_) => String::new(),
                e => format!(", the last cut: {e}"),
            };
            return Ok(Err(HandshakeError::Refused(format!("{BUSY} at {addr} ({tried}{last}); try again later"))));
        }
        std::thread::sleep(wait);
        pause = (pause * 2).min(MAX_PAUSE);
    }
}
