//! The CUBIC suite: RFC 9438's behaviours and HyStart++ (RFC 9406), as far as a controller's
//! own cwnd and ssthresh show them: `quic:cubic` (ours, `crates/quic-cc/src/cubic.rs`, with
//! HyStart++) and `tcp:cubic` (the kernel's, with Linux's HyStart, through TCP_INFO's
//! `snd_cwnd` and `snd_ssthresh`).
//!
//! Section numbers are RFC 9438's unless said otherwise. A band that is ours, not the RFC's,
//! says so. Not here: §4.2's concave growth back to W_max about K = ∛(W_max (1 − β) / C)
//! after a cut. The 10 ms samples show cwnd, but W_max is the window at the event, which
//! Linux's fast convergence (§4.7) lowers to (1 + β) / 2 of it unseen, and the Reno-friendly
//! region (§4.3) takes over at small windows: a bound on the time back to W_max would pass or
//! fail on which region ran, not on the curve.

use std::time::Duration;

use crate::assertion::Assertion;
use crate::scenario::Scenario;
use crate::suite::{Case, Grid, Runnable, Suite};

const fn ms(m: u64) -> Duration {
    Duration::from_millis(m)
}

/// §4.6: β_cubic = 0.7. The ± 0.05 is ours: the cwnd before the cut is the last sample's (10
/// ms earlier, and congestion avoidance grows it by a few % at most), and a QUIC series rounds
/// cwnd and ssthresh down to whole packets.
const BETA: f64 = 0.7;
const BETA_BAND: f64 = 0.05;

const DECREASE: &[Assertion] = &[Assertion::ReductionIs { beta: BETA, tolerance: BETA_BAND }];

/// RFC 9406 §4.2: standard slow start ends when the RTT rises, then at most CSS_ROUNDS = 5
/// rounds of Conservative Slow Start at a quarter of its growth; ssthresh = cwnd then. On a
/// 4-BDP buffer the rise comes at a small part of what the path holds, but CSS's (1 + 1/4)^5 =
/// 3× can still overflow it (RFC 9406 does not promise no loss; our simulator shows it at 50
/// Mbit/s × 40 ms): the overflow is then learnt a round late, at 1.25× what the path holds,
/// where a plain slow start has doubled to 2×. 1.5 is ours, between the two.
const HYSTART: &[Assertion] = &[Assertion::SlowStartPeakAtMost { buffer_bdp: 4.0, share: 1.5 }];

/// The suite's cases.
pub const CASES: &[Case] = &[
    Case {
        id: "§4.6",
        title: "Multiplicative decrease",
        sections: "RFC 9438 §4.6 Multiplicative Decrease (β_cubic = 0.7)",
        what: "over a 1-BDP buffer every congestion event in congestion avoidance cuts the window (ssthresh) to 0.7 of the cwnd before it",
        scenario: Scenario::ShallowBuffer,
        assertions: DECREASE,
        runnable: Runnable::Yes,
    },
    Case {
        id: "HyStart++",
        title: "Slow start ends near what the path holds",
        sections: "RFC 9406 §4.2 (HyStart++), §4.3; Linux's HyStart for tcp:cubic",
        what: "on a 4-BDP drop-tail buffer the first slow start leaves its doubling on the RTT's rise: its largest cwnd stays under 1.5 × BDP + buffer",
        scenario: Scenario::Bulk,
        assertions: HYSTART,
        runnable: Runnable::Yes,
    },
];

/// The suite: `ccbench conform cubic`.
///
/// Its grid: 10, 40, 100 ms × 10, 100 Mbit/s, six paths, enough to decide over paths (5 or
/// more) from one run each; a 1 Gbit/s × 200 ms path would need ~60 s runs for three epochs
/// (K grows as ∛W). `--quick`: 20 and 80 ms at 20 Mbit/s.
pub const CUBIC: Suite = Suite {
    name: "cubic",
    spec: "RFC 9438 (CUBIC), RFC 9406 (HyStart++)",
    cases: CASES,
    default_cc: "quic:cubic,tcp:cubic",
    controllers: &["quic:cubic", "tcp:cubic"],
    controllers_are: "CUBIC controllers",
    grid: Grid { rtts: &[ms(10), ms(40), ms(100)], rates_bps: &[10e6, 100e6] },
    quick: Grid { rtts: &[ms(20), ms(80)], rates_bps: &[20e6] },
};

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn judges_both_cubics_by_default() {
        assert_eq!(CUBIC.controllers_expected(), "CUBIC controllers: quic:cubic or tcp:cubic");
        assert_eq!(CUBIC.default_cc, CUBIC.controllers.join(","));
        assert!(CUBIC.case("§4.6").is_some() && CUBIC.case("HyStart++").is_some());
    }

    /// The slow-start case's capacity is its scenario's buffer.
    #[test]
    fn the_slow_start_case_knows_its_buffer() {
        let c = CUBIC.case("HyStart++").unwrap();
        let [Assertion::SlowStartPeakAtMost { buffer_bdp, .. }] = c.assertions else { panic!("{:?}", c.assertions) };
        assert_eq!(*buffer_bdp, c.scenario.buffer_bdp());
    }
}
