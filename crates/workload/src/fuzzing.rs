//! Entry points for fuzzing what the workloads read from another process or the network: what
//! the browser workload reads from Chromium (DevTools messages off its pipe, the timing JSON its
//! page returns; `fuzz/fuzz_targets/devtools.rs`, on stable `tests/devtools_garbage.rs`), and
//! the request and status lines of objects over QUIC (`fuzz/fuzz_targets/quic_objects.rs`, on
//! stable a test in `tests/quic_objects.rs`).

/// Parses `data` as one DevTools message and as the page's timing answer: any input may be
/// refused, none may panic, and what is accepted holds only finite, non-negative times.
pub fn devtools_input(data: &[u8]) {
    let _ = crate::cdp::parse_message(data);
    if let Ok(text) = std::str::from_utf8(data) {
        if let Ok(t) = crate::browser::parse_timings(text) {
            let times = std::iter::once(&t.nav).chain(&t.resources).flat_map(|e| [e.request_start, e.response_start, e.response_end, e.load_event_end]);
            assert!(times.chain(t.lcp).chain([t.time_origin]).all(|x| x.is_finite() && x >= 0.0));
        }
    }
}

/// Feeds `data` to the line reader and the request and status parsers of objects over QUIC
/// (`data[0]` picks how the rest is cut into stream chunks): any input may be refused, none may
/// panic, a line is the same however the stream is cut, and whatever parses writes back as the
/// same bytes.
pub fn quic_objects_wire(data: &[u8]) {
    crate::quic::wire::fuzz(data)
}
