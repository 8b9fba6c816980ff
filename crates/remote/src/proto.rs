//! The control protocol. Each message is one JSON document: before authentication a plain
//! frame (a big-endian `u32` length, then the JSON), after it one sealed record of
//! [`crate::channel`]. The length is checked against [`MAX_FRAME`] before anything is
//! allocated, and every read has a deadline, so neither a huge length nor a silent or dribbling
//! peer can hold `serve`.
//!
//! A session: the handshake (`channel::PreAuth`: `hello` → `challenge` → `confirm` ×2), then
//! `Welcome`, then any number
//! of `Check` (is this test allowed? nothing runs) and `Run` requests. A run: `Run` → `Ready`
//! (a data port and token) → the client opens the test's data connections → `Connected` (the
//! algorithm read back from each) → `Start` → samples stream back → `Done`.
//!
//! A path probe (`ccbench probe`, see [`crate::probe`]): `Probe` → `ProbeReady` (a UDP port,
//! a token and the probe's limits) → the client probes over UDP → `ProbeEnd` → `ProbeDone`
//! (what it cost the server). A probe that reaches the server's time limit first is ended by
//! the server: its `ProbeDone` comes unasked, and the client's later `ProbeEnd` is ignored.
//!
//! Extending it: a new workload's request is generated from its line in the workload registry
//! ([`ccbench_workload::workloads!`], a [`TestRequest`] variant) and runs on one of the far ends
//! serve has ([`ccbench_workload::FarEnd`]: flows, an HTTP server, or a request load's QUIC
//! server);
//! a test that is neither (the probe) is a new message. A client that asks an older server for
//! it gets a clear refusal.

use std::io::{self, Read, Write};

use ccbench_kernel_tcp::{Sample, TcpInfo};
pub use ccbench_model::serve::{Limits, ServerFacts};
use ccbench_workload::{BbrEvent, FarRequest, FlowEnd, GoodputPoint, QuicSample, Remote};
use serde::{de::DeserializeOwned, Deserialize, Serialize};

/// The protocol version this build speaks; a hello with another is refused by name.
/// 2: HTTP tests (objects, page: `Stop`, `Accepted`, `ConnectionSample`, `ConnectionEnd`,
/// `HttpDone`), QUIC tests, the serving interface's qdisc in the facts, and path probes
/// (`Probe`, `ProbeEnd`, `ProbeReady`, `ProbeDone`; `max_probe_rate_bps` in the limits).
/// 3: browser tests (`browser` requests; `spki_sha256` in `Ready`, `served` in
/// `ConnectionEnd`). Version 2's messages still parse: the new fields may be absent.
/// 4: the channel (`crate::channel`): a SPAKE2 handshake, then every message sealed. `Hello`,
/// `Auth` and `Challenge` left these enums for the handshake's own (`channel::PreAuth`); a
/// version-3 client's hello is answered with one line naming both versions.
/// 5: every sealed record padded to a 256-byte bucket (`crate::channel`); `dropped_samples`
/// in `Done`, `QuicDone` and `HttpDone`.
pub const VERSION: u32 = 5;
/// The largest frame either end accepts, in bytes (the JSON of one message).
pub const MAX_FRAME: usize = 64 * 1024;

/// From the client.
#[derive(Clone, Debug, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(tag = "type", rename_all = "snake_case", deny_unknown_fields)]
pub enum ClientMsg {
    /// Open a path-probe session: serve starts a UDP probe server for this client.
    Probe {
        request: ProbeRequest,
    },
    /// The client's probe is over (done or given up): stop its server and say what it cost.
    ProbeEnd,
    /// Would this test be allowed (algorithm, limits)? Nothing runs.
    Check {
        test: TestRequest,
    },
    Run {
        test: TestRequest,
    },
    Start,
    /// An HTTP test's load is over on the client: the server ends its side and reports.
    Stop,
}

/// From the server.
#[derive(Clone, Debug, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(tag = "type", rename_all = "snake_case", deny_unknown_fields)]
pub enum ServerMsg {
    Welcome {
        facts: ServerFacts,
        limits: Limits,
    },
    /// The last `Check` passes.
    Allowed,
    /// The request is refused, with why; the session stays open.
    Refused {
        reason: String,
    },
    /// A fatal error; the server closes the connection after it.
    Error {
        message: String,
    },
    /// A probe session is open: the UDP probe server at `port` (on the control connection's
    /// address) answers datagrams carrying `token` (hex, 16 bytes), within `limits`.
    ProbeReady {
        port: u16,
        token: String,
        limits: ProbeLimits,
    },
    /// The probe session has ended; what it cost the server, and whether its time ran out.
    ProbeDone {
        report: ProbeReport,
    },
    /// Open the test's data connections to `port`, each starting with the token (hex-decoded,
    /// 16 bytes) and the flow id (big-endian u32). A browser test over TLS: the SHA-256 of the
    /// certificate's SubjectPublicKeyInfo (hex), the one key the browser is to trust.
    Ready {
        port: u16,
        token: String,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        spki_sha256: Option<String>,
    },
    /// Every data connection arrived; for flows the server sends, the algorithm read back.
    Connected {
        cc_read_back: Vec<String>,
    },
    /// A `TCP_INFO` sample of the server's sending socket of flow `flow`, `t_us` after `Start`.
    Sample {
        flow: u32,
        sample: Sample,
    },
    /// Bytes the server received so far on flow `flow` (uploads).
    Received {
        flow: u32,
        point: GoodputPoint,
    },
    Done {
        ends: Vec<FlowEnd>,
        /// Samples serve dropped because this client read its results too slowly (version 5).
        #[serde(default)]
        dropped_samples: u64,
        /// More of the test's ends follow in another `Done`: a test's ends are sent in parts
        /// that each fit a record (64 flows' `tcp_info` alone is over [`MAX_FRAME`]).
        #[serde(default, skip_serializing_if = "std::ops::Not::not")]
        more: bool,
    },
    /// HTTP tests: the server took connection `conn` (the number in its hello) in; for a
    /// sending socket, the algorithm read back, and `mismatch` when it is not the one asked
    /// for (the connection was then closed unserved).
    Accepted {
        conn: u32,
        cc_read_back: Option<String>,
        mismatch: Option<String>,
    },
    /// A `TCP_INFO` sample of the server's sending socket of HTTP connection `conn`.
    ConnectionSample {
        conn: u32,
        sample: Sample,
    },
    /// How HTTP connection `conn` ended on the server: its last `TCP_INFO` (sending sockets),
    /// and for a browser test the requests it answered and body bytes it sent on it.
    ConnectionEnd {
        conn: u32,
        cc_read_back: Option<String>,
        final_tcp_info: Option<Box<TcpInfo>>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        served: Option<(u32, u64)>,
    },
    /// An HTTP test is over on the server (after every `ConnectionEnd`): its errors.
    HttpDone {
        errors: u32,
        error_messages: Vec<String>,
        /// As `Done`'s.
        #[serde(default)]
        dropped_samples: u64,
    },
    /// A QUIC test's endpoint: open the test's connections to UDP `port`, trusting only
    /// `cert` (hex DER), each presenting the token and its number on its first stream.
    QuicReady {
        port: u16,
        token: String,
        cert: String,
    },
    /// QUIC connection `conn` passed the gate; the server's controller, read back.
    QuicConnected {
        conn: u32,
        read_back: String,
    },
    /// A sample of the server's sending QUIC connection whose first flow is `flow`.
    QuicSample {
        flow: u32,
        sample: Box<QuicSample>,
    },
    /// BBR state changes of the server's sending connection whose first flow is `flow` (in
    /// chunks of at most [`MAX_EVENTS_PER_MESSAGE`]).
    BbrEvents {
        flow: u32,
        events: Vec<BbrEvent>,
    },
    /// The last sample of that connection (after its `BbrEvents`).
    QuicConnectionEnd {
        flow: u32,
        final_quic: Option<Box<QuicSample>>,
    },
    /// A QUIC test is over on the server: what it saw of each flow.
    QuicDone {
        ends: Vec<FlowEnd>,
        /// As `Done`'s.
        #[serde(default)]
        dropped_samples: u64,
        /// As `Done`'s.
        #[serde(default, skip_serializing_if = "std::ops::Not::not")]
        more: bool,
    },
}

/// BBR state changes per `BbrEvents` message: well inside [`MAX_FRAME`].
pub const MAX_EVENTS_PER_MESSAGE: usize = 200;

/// The requests serve takes: one per line of the workload registry
/// ([`ccbench_workload::workloads!`]), the request being what that workload's
/// [`ccbench_workload::Remote::Far`] says and the variant's name (snake case) the `kind` it is
/// tagged with on the wire. serve checks, logs and runs it through [`FarRequest`] alone, so a
/// new workload over `--remote` needs nothing in this crate.
macro_rules! requests {
    ($($(#[$doc:meta])* $module:ident: $variant:ident($spec:ty, $result:ty),)*) => {
        /// A test the client asks for: a workload's far end. Tagged by `kind`; an older server
        /// refuses a kind it does not know.
        #[derive(Clone, Debug, Serialize, Deserialize, schemars::JsonSchema)]
        #[serde(tag = "kind", rename_all = "snake_case")]
        pub enum TestRequest {
            $(
                #[doc = concat!("The far end of the `", stringify!($variant), "` workload.")]
                $variant(<$spec as Remote>::Far),
            )*
        }

        impl TestRequest {
            /// The test as its workload defines it for a far end: its check, log line, plan
            /// and which far end runs it.
            pub fn far(&self) -> &dyn FarRequest {
                match self {
                    $(TestRequest::$variant(r) => r,)*
                }
            }
        }

        $(impl Requested for $spec {
            fn test_request(&self) -> TestRequest {
                TestRequest::$variant(self.far_request())
            }
        })*
    };
}

ccbench_workload::workloads!(requests);

/// A registered workload, as the test it asks serve for (its [`Remote::far_request`] tagged
/// with its `kind`).
pub trait Requested: Remote {
    fn test_request(&self) -> TestRequest;
}

/// What a client asks of a probe session.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ProbeRequest {
    /// The fastest train the client will ask for (its rate search stops there), IP bits/s.
    pub max_rate_bps: u64,
}

/// The limits of one probe session: the server's `--max-bytes`, `--max-duration` and
/// `--max-probe-rate`, the rate also capped at the client's request.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ProbeLimits {
    pub max_bytes: u64,
    pub max_duration_s: f64,
    pub max_rate_bps: u64,
}

/// What one probe session cost the server (`ccbench_pathprobe::ServerReport`, on the wire).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ProbeReport {
    /// IP bytes the server sent and received.
    pub bytes_sent: u64,
    pub bytes_received: u64,
    /// Datagrams it answered with nothing: no token, a wrong one, another address, malformed.
    pub ignored: u64,
    /// Trains it did not send because they would have exceeded `max_bytes`.
    pub trains_refused: u64,
    /// The session reached `max_duration_s` before the client ended it.
    pub timed_out: bool,
}

#[derive(Debug, thiserror::Error)]
pub enum FrameError {
    #[error("a frame of {0} bytes is over the {MAX_FRAME}-byte limit")]
    TooLong(usize),
    #[error("malformed message: {0}")]
    Malformed(String),
    /// A sealed record did not open: altered, replayed, reordered or cut on the way, or not
    /// from the authenticated peer at all.
    #[error("a message failed its integrity check (the connection was altered on the way); the session is over")]
    Tampered,
    #[error(transparent)]
    Io(#[from] io::Error),
}

/// Reads one frame's bytes. The length is checked before the buffer is allocated.
pub fn read_frame(r: &mut impl Read) -> Result<Vec<u8>, FrameError> {
    let mut len = [0u8; 4];
    r.read_exact(&mut len)?;
    let len = u32::from_be_bytes(len) as usize;
    if len > MAX_FRAME {
        return Err(FrameError::TooLong(len));
    }
    let mut buf = vec![0u8; len];
    r.read_exact(&mut buf)?;
    Ok(buf)
}

/// Parses one message from a frame's bytes.
pub fn decode<T: DeserializeOwned>(frame: &[u8]) -> Result<T, FrameError> {
    serde_json::from_slice(frame).map_err(|e| FrameError::Malformed(e.to_string()))
}

pub fn read_msg<T: DeserializeOwned>(r: &mut impl Read) -> Result<T, FrameError> {
    decode(&read_frame(r)?)
}

/// Writes one message as one frame (refusing, not truncating, one over the limit).
pub fn write_msg<T: Serialize>(w: &mut impl Write, msg: &T) -> Result<(), FrameError> {
    let body = serde_json::to_vec(msg).map_err(|e| FrameError::Malformed(e.to_string()))?;
    if body.len() > MAX_FRAME {
        return Err(FrameError::TooLong(body.len()));
    }
    let mut frame = Vec::with_capacity(4 + body.len());
    frame.extend_from_slice(&(body.len() as u32).to_be_bytes());
    frame.extend_from_slice(&body);
    w.write_all(&frame)?;
    w.flush()?;
    Ok(())
}

/// Every frame in `bytes` decoded as client messages, as the server reads them, until the
/// first error: the entry point of the fuzz target and the garbage tests.
pub fn decode_stream(bytes: &[u8]) -> Vec<Result<ClientMsg, String>> {
    decode_frames(bytes)
}

/// As [`decode_stream`], for what a server sends.
pub fn decode_stream_server(bytes: &[u8]) -> Vec<Result<ServerMsg, String>> {
    decode_frames(bytes)
}

/// Every frame in `bytes` decoded as `T`, until the first error.
pub fn decode_frames<T: DeserializeOwned>(bytes: &[u8]) -> Vec<Result<T, String>> {
    let mut r = bytes;
    let mut out = Vec::new();
    while !r.is_empty() {
        match read_msg::<T>(&mut r) {
            Ok(m) => out.push(Ok(m)),
            Err(e) => {
                out.push(Err(e.to_string()));
                break;
            }
        }
    }
    out
}

/// True when every flow of `spec` runs over QUIC: serve answers its `Run` with `QuicReady`.
pub fn is_quic(spec: &ccbench_workload::BulkSpec) -> bool {
    spec.plan().iter().all(|f| f.cc.is_quic())
}

pub fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// Bytes from hex of at most `max` bytes; `None` for anything else.
pub fn unhex_vec(s: &str, max: usize) -> Option<Vec<u8>> {
    let s = s.as_bytes();
    if !s.len().is_multiple_of(2) || s.len() > 2 * max {
        return None;
    }
    let digit = |c: u8| (c as char).to_digit(16).map(|d| d as u8);
    s.chunks(2).map(|pair| Some(digit(pair[0])? << 4 | digit(pair[1])?)).collect()
}

/// Exactly `N` bytes from lowercase or uppercase hex; `None` for anything else.
pub fn unhex<const N: usize>(s: &str) -> Option<[u8; N]> {
    let s = s.as_bytes();
    if s.len() != 2 * N {
        return None;
    }
    let digit = |c: u8| (c as char).to_digit(16).map(|d| d as u8);
    let mut out = [0u8; N];
    for (i, pair) in s.chunks(2).enumerate() {
        out[i] = digit(pair[0])? << 4 | digit(pair[1])?;
    }
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use ccbench_workload::{BulkSpec, ObjectsSpec, PageSpec, SiteRequest};
    use rand::{Rng, SeedableRng};

    #[test]
    fn frames_round_trip_and_the_limit_is_checked_before_allocating() {
        let mut buf = Vec::new();
        write_msg(&mut buf, &ClientMsg::ProbeEnd).unwrap();
        write_msg(&mut buf, &ClientMsg::Start).unwrap();
        let got = decode_stream(&buf);
        assert!(matches!(got[0], Ok(ClientMsg::ProbeEnd)));
        assert!(matches!(got[1], Ok(ClientMsg::Start)));
        // A length of 4 GiB with nothing after it: refused by length, not by a failed read.
        let huge = u32::MAX.to_be_bytes();
        assert!(matches!(read_frame(&mut &huge[..]), Err(FrameError::TooLong(n)) if n == u32::MAX as usize));
        let at_limit = (MAX_FRAME as u32 + 1).to_be_bytes();
        assert!(matches!(read_frame(&mut &at_limit[..]), Err(FrameError::TooLong(_))));
    }

    #[test]
    fn unknown_kinds_and_fields_are_errors_not_guesses() {
        for bad in [r#"{"type":"run","test":{"kind":"quic"}}"#, r#"{"type":"hello","version":3,"nonce":"00"}"#, r#"{"type":"shutdown"}"#, r#"[]"#, ""] {
            assert!(decode::<ClientMsg>(bad.as_bytes()).is_err(), "{bad}");
        }
    }

    #[test]
    fn hex_is_strict() {
        assert_eq!(unhex::<2>("0aFf"), Some([0x0a, 0xff]));
        assert_eq!(unhex::<2>("0aF"), None);
        assert_eq!(unhex::<2>("0aFg"), None);
        assert_eq!(unhex::<1>("é"), None);
        assert_eq!(unhex::<2>(&hex(&[1, 2])), Some([1, 2]));
    }

    /// The decoder against random bytes, random frames of random JSON-ish text, and mutated
    /// valid messages: it must return, never panic (the fuzz target runs the same function).
    #[test]
    fn random_input_never_panics() {
        let mut rng = rand::rngs::StdRng::seed_from_u64(0x5eed);
        let mut valid = Vec::new();
        write_msg(&mut valid, &ClientMsg::ProbeEnd).unwrap();
        for m in new_client_messages() {
            write_msg(&mut valid, &m).unwrap();
        }
        let mut valid_server = Vec::new();
        for m in new_server_messages() {
            write_msg(&mut valid_server, &m).unwrap();
        }
        let alphabet = br#"{}[]":,0123456789.-eEtruefalsnl typekindbulkhelloauthrunobjectspagestopquic_readyaccepted\u"#;
        const N: usize = 20_000;
        for i in 0..N {
            let input: Vec<u8> = match i % 3 {
                0 => (0..rng.gen_range(0..200)).map(|_| rng.gen()).collect(),
                1 => {
                    let body: Vec<u8> = (0..rng.gen_range(0..120)).map(|_| alphabet[rng.gen_range(0..alphabet.len())]).collect();
                    let mut f = (body.len() as u32).to_be_bytes().to_vec();
                    f.extend(body);
                    f
                }
                _ => {
                    let mut v = if i % 2 == 0 { valid.clone() } else { valid_server.clone() };
                    for _ in 0..rng.gen_range(1..6) {
                        let at = rng.gen_range(0..v.len());
                        v[at] = rng.gen();
                    }
                    v.truncate(rng.gen_range(0..=v.len()));
                    v
                }
            };
            crate::fuzzing::control_input(&input);
        }
    }

    fn new_client_messages() -> Vec<ClientMsg> {
        let objects = ObjectsSpec {
            requests: 4,
            object_bytes: 1000,
            concurrency: 2,
            method: ccbench_workload::ObjectMethod::Get,
            cc: "cubic".parse().unwrap(),
            port: 0,
            sample_interval_us: 10_000,
            timeout_s: 20.0,
            quic_receiver_cc: None,
        };
        let page = PageSpec {
            page: ccbench_workload::PageModel { html_bytes: 1000, objects: vec![10, 20] },
            protocol: ccbench_workload::PageProtocol::Http2,
            cc: "bbr".parse().unwrap(),
            port: 0,
            sample_interval_us: 10_000,
            timeout_s: 5.0,
        };
        vec![
            ClientMsg::Run { test: TestRequest::Objects(objects) },
            ClientMsg::Check { test: TestRequest::Page(page.clone()) },
            ClientMsg::Run { test: TestRequest::Browser(SiteRequest(page)) },
            ClientMsg::Start,
            ClientMsg::Stop,
        ]
    }

    fn new_server_messages() -> Vec<ServerMsg> {
        let sample = QuicSample { t_us: 7, rtt_us: 10_000, cwnd_bytes: 12_000, ..QuicSample::default() };
        vec![
            ServerMsg::Accepted { conn: 1, cc_read_back: Some("cubic".into()), mismatch: None },
            ServerMsg::ConnectionEnd { conn: 1, cc_read_back: Some("cubic".into()), final_tcp_info: None, served: None },
            ServerMsg::ConnectionEnd { conn: 2, cc_read_back: Some("bbr".into()), final_tcp_info: None, served: Some((87, 960_000)) },
            ServerMsg::Ready { port: 41000, token: hex(&[3; 16]), spki_sha256: Some(hex(&[4; 32])) },
            ServerMsg::HttpDone { errors: 2, error_messages: vec!["x".into()], dropped_samples: 0 },
            ServerMsg::QuicReady { port: 4433, token: hex(&[9; 16]), cert: hex(&[1, 2, 3]) },
            ServerMsg::QuicConnected { conn: 0, read_back: "quic:bbr3".into() },
            ServerMsg::QuicSample { flow: 0, sample: Box::new(sample.clone()) },
            ServerMsg::BbrEvents { flow: 0, events: vec![BbrEvent::new(5, "STARTUP", "DRAIN")] },
            ServerMsg::QuicConnectionEnd { flow: 0, final_quic: Some(Box::new(sample)) },
            ServerMsg::QuicDone { ends: vec![FlowEnd { id: 0, sent: true, ..FlowEnd::default() }], dropped_samples: 3, more: false },
            ServerMsg::Done { ends: vec![FlowEnd { id: 1, ..FlowEnd::default() }], dropped_samples: 0, more: true },
        ]
    }

    /// The requests generated from `requests!` travel as the hand-written enum did (the same
    /// `kind` tags, the browser's site as the bare `PageSpec`), and each names its far end:
    /// flows for bulk, an HTTP server (TLS only for the browser's HTTP/2) for the others.
    #[test]
    fn requests_keep_their_wire_form_and_name_their_far_end() {
        let [ClientMsg::Run { test: objects }, ClientMsg::Check { test: page }, ClientMsg::Run { test: browser }, ..] = &new_client_messages()[..] else {
            panic!("the sample messages changed")
        };
        let json = serde_json::to_value(browser).unwrap();
        assert_eq!(
            (json["kind"].as_str(), json["protocol"]["kind"].as_str(), json["page"]["html_bytes"].as_u64()),
            (Some("browser"), Some("http2"), Some(1000)),
            "{json}"
        );
        let back: TestRequest = serde_json::from_value(json).unwrap();
        assert!(matches!(back, TestRequest::Browser(SiteRequest(ref p)) if p.page.objects == [10, 20]));
        assert_eq!(serde_json::to_value(objects).unwrap()["kind"], "objects");
        assert_eq!(serde_json::to_value(page).unwrap()["kind"], "page");
        let http = |t: &TestRequest| match t.far().far_end() {
            ccbench_workload::FarEnd::Http(h) => Some((h.tls(), h.server_cc().map(|c| c.to_string()))),
            ccbench_workload::FarEnd::Flows(_) | ccbench_workload::FarEnd::Quic(_) => None,
        };
        assert_eq!(http(objects), Some((false, Some("cubic".into()))), "a GET's server sends");
        assert_eq!(http(page), Some((false, Some("bbr".into()))));
        assert_eq!(http(browser), Some((true, Some("bbr".into()))), "the browser's HTTP/2 is over TLS");
        let bulk = TestRequest::Bulk(BulkSpec {
            flows: 3,
            direction: ccbench_workload::Direction::Download,
            amount: ccbench_workload::Amount::Seconds(1.0),
            cc: "cubic".parse().unwrap(),
            mix: Vec::new(),
            port: 0,
            sample_interval_us: 10_000,
            timeout_s: 5.0,
            quic_receiver_cc: None,
            knobs: Default::default(),
        });
        let json = serde_json::to_value(&bulk).unwrap();
        assert_eq!((json["kind"].as_str(), json["flows"].as_u64()), (Some("bulk"), Some(3)), "{json}");
        let bulk: TestRequest = serde_json::from_value(json).unwrap();
        assert!(matches!(bulk.far().far_end(), ccbench_workload::FarEnd::Flows(b) if b.flows == 3));
    }

    /// Version 2's messages parse as they did: the fields version 3 added may be absent, and
    /// are not written when empty.
    #[test]
    fn version_2_messages_still_parse() {
        let ready = decode::<ServerMsg>(br#"{"type":"ready","port":5,"token":"00"}"#).unwrap();
        assert!(matches!(ready, ServerMsg::Ready { port: 5, spki_sha256: None, .. }));
        let end = decode::<ServerMsg>(br#"{"type":"connection_end","conn":1,"cc_read_back":"cubic","final_tcp_info":null}"#).unwrap();
        assert!(matches!(end, ServerMsg::ConnectionEnd { conn: 1, served: None, .. }));
        let json = serde_json::to_string(&ServerMsg::Ready { port: 5, token: "00".into(), spki_sha256: None }).unwrap();
        assert_eq!(json, r#"{"type":"ready","port":5,"token":"00"}"#);
        assert!(decode::<ServerMsg>(br#"{"type":"ready","port":5,"token":"00","spki_sha256":"ab","pin":1}"#).is_err(), "unknown fields stay errors");
    }

    /// Every new message survives a round trip through its frame.
    #[test]
    fn new_messages_round_trip() {
        let mut buf = Vec::new();
        for m in new_client_messages() {
            write_msg(&mut buf, &m).unwrap();
        }
        let got = decode_stream(&buf);
        assert_eq!(got.len(), 5);
        assert!(got.iter().all(|m| m.is_ok()), "{got:?}");
        assert!(matches!(got[2], Ok(ClientMsg::Run { test: TestRequest::Browser(_) })));
        assert!(matches!(got[4], Ok(ClientMsg::Stop)));
        let mut buf = Vec::new();
        for m in new_server_messages() {
            write_msg(&mut buf, &m).unwrap();
        }
        let back = decode_stream_server(&buf);
        assert_eq!(back.len(), new_server_messages().len());
        for (a, b) in back.iter().zip(new_server_messages()) {
            assert_eq!(serde_json::to_string(a.as_ref().unwrap()).unwrap(), serde_json::to_string(&b).unwrap());
        }
        assert_eq!(unhex_vec("0aff", 2), Some(vec![0x0a, 0xff]));
        assert_eq!(unhex_vec("0aff00", 2), None, "over the limit");
        assert_eq!(unhex_vec("0af", 2), None);
    }
}
