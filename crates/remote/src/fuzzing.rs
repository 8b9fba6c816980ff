//! The `control` fuzz target's body (`fuzz/fuzz_targets/control.rs`), apart from the parsers
//! it drives: it reaches serve's checks and the client's screen, which themselves use the
//! protocol, so in [`crate::proto`] it would tie the protocol to both ends (a module cycle).

use crate::proto;

/// Everything serve and its client parse from bytes they did not make, fed `data`: frames of
/// either direction (every test asked for going on through serve's check and log line), one
/// unframed server message, hex, and `tc`'s qdisc JSON. The body of the
/// fuzz target (`fuzz/fuzz_targets/control.rs`) and of the corpus replay test.
pub fn control_input(data: &[u8]) {
    let tests: Vec<proto::ClientMsg> = proto::decode_stream(data).into_iter().flatten().collect();
    crate::server::fuzz_tests(&tests);
    // What the client reads goes on through its one screen of server strings.
    for msg in proto::decode_stream_server(data).into_iter().flatten() {
        let _ = crate::screen::screen(msg);
    }
    if let Ok(msg) = proto::decode::<proto::ServerMsg>(data) {
        let _ = crate::screen::screen(msg);
    }
    let _ = crate::host::parse_root_qdisc(data);
    if let Ok(s) = std::str::from_utf8(data) {
        let _ = proto::unhex::<32>(s);
        let _ = proto::unhex_vec(s, 1024);
    }
}
