//! What the browser workload reads from Chromium (DevTools messages off its pipe, the page's
//! timing JSON) fed arbitrary bytes: nothing may panic, and accepted timings are sane.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| ccbench_workload::fuzzing::devtools_input(data));
