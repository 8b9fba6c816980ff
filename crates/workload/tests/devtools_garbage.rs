//! What Chromium sends back (DevTools messages, the page's timing JSON) is parsed without a
//! panic whatever it is: random bytes, and valid messages cut short or with bytes flipped.
//! The same entry point is the `devtools` fuzz target (fuzz/).

#[test]
fn random_and_mutated_devtools_input_never_panics() {
    let seeds: &[&[u8]] = &[
        br#"{"id":3,"result":{"targetId":"T"}}"#,
        br#"{"id":4,"error":{"code":-32000,"message":"No target"}}"#,
        br#"{"method":"Page.loadEventFired","params":{"timestamp":1.5},"sessionId":"S"}"#,
        br#"{"timeOrigin":1795421421113.4,"nav":{"name":"http://10.0.0.2/","requestStart":10.5,"responseStart":12.7,"responseEnd":40.8,"encodedBodySize":2000,"responseStatus":200,"nextHopProtocol":"h2","domContentLoadedEventEnd":62.7,"loadEventEnd":294.3},"lcp":108,"resources":[{"name":"http://10.0.0.2/o/0","responseEnd":105.3,"encodedBodySize":5000,"responseStatus":200}]}"#,
    ];
    // splitmix64: a fixed sequence, so a failure reproduces.
    let mut state = 0x5EED_u64;
    let mut next = move || {
        state = state.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = state;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    };
    for _ in 0..3000 {
        let len = (next() % 300) as usize;
        let random: Vec<u8> = (0..len).map(|_| next() as u8).collect();
        ccbench_workload::fuzzing::devtools_input(&random);
    }
    for seed in seeds {
        ccbench_workload::fuzzing::devtools_input(seed);
        for cut in 0..seed.len() {
            ccbench_workload::fuzzing::devtools_input(&seed[..cut]);
        }
        for _ in 0..2000 {
            let mut m = seed.to_vec();
            for _ in 0..1 + next() % 4 {
                let i = (next() as usize) % m.len();
                // Mostly JSON punctuation and digits, which reach deeper than random bytes.
                const PICK: &[u8] = b"{}[]\":,-.0123456789eE nultrfa\\";
                m[i] = if next() % 4 == 0 { next() as u8 } else { PICK[(next() as usize) % PICK.len()] };
            }
            ccbench_workload::fuzzing::devtools_input(&m);
        }
    }
}
