//! Entry points for fuzzing what the browser workload reads from another process (Chromium):
//! DevTools messages off its pipe, and the timing JSON its page returns. Used by
//! `fuzz/fuzz_targets/devtools.rs` and, on stable, by `tests/devtools_garbage.rs`.

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
