//! The `why` lines under the verdict: per algorithm, what held its flows back, how they lost,
//! and the model beside the measurement (issue 30). The lines are `ccbench_model::why`'s, so
//! the terminal, `ccbench explain`, `compare` and report.html say the same.

use std::fmt::Write as _;

use crate::results::ExperimentResult;

/// One `why  CC  …` line per algorithm (none for a result with no algorithms).
pub fn lines(result: &ExperimentResult) -> String {
    let whys = ccbench_model::why::why(result);
    let width = whys.iter().map(|w| w.cc.len()).max().unwrap_or(0);
    let mut out = String::new();
    for w in &whys {
        let _ = writeln!(out, "  why  {:<width$}  {}", w.cc, w.text());
    }
    out
}
