//! Replays the control fuzz target's corpus (`fuzz/corpus/control`) on stable: every seed and
//! every crash reproducer added there goes through the same function as the fuzz target. The
//! newer seeds must still decode as their names say (a seed that no longer decodes would only
//! fuzz the error path).

use ccbench_remote::proto::{self, ClientMsg, ServerMsg};
use ccbench_remote::TestRequest;

#[test]
fn every_control_corpus_input_is_handled() {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fuzz/corpus/control");
    let mut n = 0;
    for entry in std::fs::read_dir(&dir).unwrap() {
        let bytes = std::fs::read(entry.unwrap().path()).unwrap();
        ccbench_remote::fuzzing::control_input(&bytes);
        n += 1;
    }
    assert!(n >= 10, "only {n} inputs in {}", dir.display());
}

#[test]
fn the_browser_and_huge_flow_seeds_decode() {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fuzz/corpus/control");
    let client = std::fs::read(dir.join("run_browser")).unwrap();
    assert!(matches!(
        proto::decode_stream(&client)[..],
        [
            Ok(ClientMsg::Check { test: TestRequest::Browser(_) }),
            Ok(ClientMsg::Run { test: TestRequest::Browser(_) }),
            Ok(ClientMsg::Start),
            Ok(ClientMsg::Stop)
        ]
    ));
    let server = std::fs::read(dir.join("server_browser")).unwrap();
    let got = proto::decode_stream_server(&server);
    assert!(matches!(got[0], Ok(ServerMsg::Ready { spki_sha256: Some(_), .. })), "{got:?}");
    assert!(matches!(got[2], Ok(ServerMsg::ConnectionEnd { served: Some((87, 960_000)), .. })), "{got:?}");
    assert!(matches!(got[..], [.., Ok(ServerMsg::HttpDone { .. })]), "{got:?}");
    // Four billion flows asked for: serve refuses it without building the flows' plan.
    let huge = std::fs::read(dir.join("check_bulk_huge_flows")).unwrap();
    assert!(matches!(proto::decode_stream(&huge)[..], [Ok(ClientMsg::Check { test: TestRequest::Bulk(ref b) })] if b.flows == u32::MAX));
}
