//! Replays the `control` fuzz target's corpus (`fuzz/corpus/control/`) on stable through the
//! path probe's part of that target (`ccbench_remote::probe::fuzz_input`), and checks that the
//! probe seeds still say what their names say: a seed that no longer decodes would only fuzz
//! the error path.

use std::path::Path;

use ccbench_remote::proto::{self, ClientMsg, ServerMsg};

#[test]
fn the_control_seeds_replay_through_the_probe_harness_and_the_probe_seeds_decode() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fuzz/corpus/control");
    let mut seeds = 0;
    for entry in std::fs::read_dir(&dir).unwrap() {
        let path = entry.unwrap().path();
        let data = std::fs::read(&path).unwrap();
        let decoded = ccbench_remote::probe::fuzz_input(&data);
        let name = path.file_name().unwrap().to_string_lossy().into_owned();
        match name.as_str() {
            "probe" | "probe_zero_rate" => assert!(matches!(proto::decode_stream(&data)[..], [Ok(ClientMsg::Probe { .. })]), "{name}"),
            "probe_then_end" => assert!(matches!(proto::decode_stream(&data)[..], [Ok(ClientMsg::Probe { .. }), Ok(ClientMsg::ProbeEnd)]), "{name}"),
            "probe_ready" => assert!(matches!(proto::decode_stream_server(&data)[..], [Ok(ServerMsg::ProbeReady { .. })]), "{name}"),
            "probe_done" => assert!(matches!(proto::decode_stream_server(&data)[..], [Ok(ServerMsg::ProbeDone { .. })]), "{name}"),
            "welcome_probe_rate" => match &proto::decode_stream_server(&data)[..] {
                [Ok(ServerMsg::Welcome { limits, .. })] => assert_eq!(limits.max_probe_rate_bps, 5_000_000),
                other => panic!("{name}: {other:?}"),
            },
            "huge_len" => assert_eq!(decoded, 0, "{name}"),
            _ => {}
        }
        seeds += 1;
    }
    assert!(seeds >= 12, "only {seeds} seeds in {}", dir.display());
}
