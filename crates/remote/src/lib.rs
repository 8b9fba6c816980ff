//! `ccbench serve` and its client: the far end of a real path, reached over an authenticated
//! control connection.
//!
//! - [`proto`]: the control protocol: length-prefixed JSON frames with a hard size limit, a
//!   versioned hello, every message a variant of one enum per direction. The one parser of
//!   bytes from the network; fuzzed (`fuzz/fuzz_targets/control.rs`, through
//!   [`fuzzing`]).
//! - [`auth`]: the shared secret: how it is read, checked and made.
//! - [`channel`]: the one channel of a control connection: a SPAKE2 handshake bound to the
//!   secret, then every message sealed (ChaCha20-Poly1305, per-direction keys and counters).
//! - [`server`]: `ccbench serve`: authenticates, enforces its limits, runs the far end of each
//!   test with the same code as an emulated run (`ccbench_workload::run_end`), and streams the
//!   `TCP_INFO` samples of its sending sockets back.
//! - [`client`]: the near end, used by `ccbench run --remote`; [`screen`]: every string a
//!   server sends, capped and escaped where it arrives.
//! - [`probe`]: path probes (`ccbench probe HOST:PORT`): serve starts a token-gated UDP probe
//!   server per authenticated request, within its limits; the client opens and ends it.
//!
//! Data connections carry a per-test random token first; `serve` drops a connection whose
//! token is not the one it handed to the authenticated client, before sending it anything.

pub mod auth;
pub mod channel;
pub mod client;
mod client_http;
mod client_quic;
pub mod escape;
#[cfg(test)]
mod flood;
pub mod fuzzing;
mod handshake_log;
pub mod handshake_retry;
pub mod host;
mod network_log;
mod penalty;
pub mod preauth;
pub mod proto;
pub mod screen;
pub mod secret_check;
pub mod server;

pub mod probe;

pub use auth::{Secret, SecretError};
pub use client::{Client, RemoteError};
pub use probe::ProbeSession;
pub use proto::{Limits, ProbeLimits, ProbeReport, ProbeRequest, Requested, ServerFacts, TestRequest};
pub use server::{serve, ServeConfig};
