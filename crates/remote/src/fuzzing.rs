//! The control protocol's fuzz harness (`fuzz/fuzz_targets/control.rs`), here so that stable
//! tests replay its corpus through the very same code.

use crate::proto::{self, ClientMsg, Limits, ServerMsg};

/// Arbitrary bytes as each end reads them: frames of client messages (serve's side; a probe
/// request goes on through serve's check against its limits), frames of server messages (the
/// client's side), one unframed server message, and hex tokens and nonces. Returns how many
/// messages decoded. Must never panic.
pub fn control_input(data: &[u8]) -> usize {
    let limits =
        Limits { max_duration_s: 120.0, max_bytes: 10_000_000_000, max_clients: 4, max_tests_per_minute: 60, max_flows: 64, max_probe_rate_bps: 1_000_000_000 };
    let mut decoded = 0;
    for msg in proto::decode_stream(data).into_iter().flatten() {
        decoded += 1;
        if let ClientMsg::Probe { request } = msg {
            if let Ok(granted) = crate::probe::check(&request, &limits) {
                assert!(granted.max_rate_bps <= limits.max_probe_rate_bps && granted.max_rate_bps >= crate::probe::MIN_PROBE_RATE_BPS);
            }
        }
    }
    decoded += proto::decode_stream_server(data).iter().filter(|m| m.is_ok()).count();
    decoded += usize::from(proto::decode::<ServerMsg>(data).is_ok());
    if let Ok(s) = std::str::from_utf8(data) {
        let _ = proto::unhex::<32>(s);
        let _ = proto::unhex::<16>(s);
    }
    decoded
}
