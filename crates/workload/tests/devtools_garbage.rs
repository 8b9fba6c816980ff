//! What Chromium sends back (DevTools messages, the page's timing JSON) is parsed without a
//! panic whatever it is: random bytes, and valid messages cut short or with bytes flipped.
//! The same entry point is the `devtools` fuzz target (fuzz/).

mod common;

use common::Garbage;

#[test]
fn random_and_mutated_devtools_input_never_panics() {
    let seeds: &[&[u8]] = &[
        br#"{"id":3,"result":{"targetId":"T"}}"#,
        br#"{"id":4,"error":{"code":-32000,"message":"No target"}}"#,
        br#"{"method":"Page.loadEventFired","params":{"timestamp":1.5},"sessionId":"S"}"#,
        br#"{"timeOrigin":1795421421113.4,"nav":{"name":"http://10.0.0.2/","requestStart":10.5,"responseStart":12.7,"responseEnd":40.8,"encodedBodySize":2000,"responseStatus":200,"nextHopProtocol":"h2","domContentLoadedEventEnd":62.7,"loadEventEnd":294.3},"lcp":108,"resources":[{"name":"http://10.0.0.2/o/0","responseEnd":105.3,"encodedBodySize":5000,"responseStatus":200}]}"#,
    ];
    // Mostly JSON punctuation and digits.
    let garbage = Garbage { rng: 0x5EED, random: 3000, max_len: 300, seeds, mutations: 2000, max_changes: 4, pick: b"{}[]\":,-.0123456789eE nultrfa\\" };
    garbage.feed(|input, _| ccbench_workload::fuzzing::devtools_input(input));
}
