//! The scenarios cases run on: a path and a workload, each as the `ccbench run` flags anyone can
//! type to reproduce it ([`Scenario::path_flags`]), what the controller should find on it
//! ([`Scenario::bottleneck`]), what the application does when ([`Scenario::app`]) and the
//! competing flow ([`Scenario::cross`]). Shared by every suite: a suite's cases name one, and
//! cases with the same scenario share its runs.

use std::time::Duration;

/// The run a case's assertions are judged on. Cases with the same scenario share their runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Scenario {
    /// One bulk flow for 12 s over a 4-BDP drop-tail buffer: long enough for a ProbeRTT at the
    /// draft's 5 s (and kernel BBRv1's 10 s), deep enough that STARTUP ends on the plateau, not
    /// on loss.
    Bulk,
    /// One bulk flow over a 1-BDP buffer, the rate cut to a tenth at 4 s (18 s or more in all,
    /// longer at long RTTs: [`Scenario::duration`]). The
    /// buffer is the old rate's BDP, 10 of the new: a deeper one holds the old max_bw's 2-BDP
    /// inflight without loss and stretches every round to seconds of queue.
    StepDown,
    /// One bulk flow over a 4-BDP buffer from a tenth of the rate, raised tenfold at 4 s (18 s).
    StepUp,
    /// A token-bucket policer at half the rate before a deep buffer (12 s).
    Policer,
    /// 64 kbit/s at 1 ms: a BDP of 8 bytes, far below one packet (12 s; the grid's rate and
    /// RTT do not apply).
    SubPacketBdp,
    /// One flow whose application writes at a quarter of the rate (`--app-rate`) over a 4-BDP
    /// buffer (12 s): every sample is app-limited.
    AppLimited,
    /// One bulk flow over a half-BDP buffer (STARTUP's overshoot is lost, so inflight_longterm
    /// is set) whose application writes at a quarter of the rate from 4 s on (`--app-rate` with
    /// `--app-rate-from 4s`), 16 s: every ProbeBW phase after it, REFILL and UP included, is
    /// app-limited, and PROBE_RTT comes twice.
    AppLimitedProbeBw,
    /// One bulk flow over a 4-BDP buffer whose application writes nothing from 4 s to 10 s
    /// (`--app-pause 4s:6000ms`), 16 s: the pipe empties, ProbeRTTInterval (5 s from a stamp
    /// set by 4 s) expires in the idle time, and the next write restarts from idle.
    Paused,
    /// One bulk flow over a 4-BDP buffer whose ACKs (client → server) are held and released in
    /// bursts every [`AGGREGATE`] (`--aggregate-up`), as Wi-Fi and cellular links do (12 s).
    AckAggregation,
    /// One bulk flow over a 4-BDP buffer whose data (server → client) is held and released in
    /// bursts every [`AGGREGATE`] (`--aggregate-down`), 12 s.
    ForwardBatching,
    /// The flow under test and a kernel CUBIC flow from the start (`--flows CC:1,tcp:cubic:1`)
    /// over a 4-BDP drop-tail buffer, 12 s: CUBIC fills the buffer and backs off only to 0.7 of
    /// its window, so a queue of 2.5 BDP or more stands throughout and no RTT sample shows the
    /// path's base RTT again.
    CrossQueue,
    /// The same mix with the CUBIC flow starting at 4 s (`--stagger 4s`), 16 s: 12 s of a
    /// competitor's queue, long enough for it to overflow the buffer onto the flow under test.
    CrossArrives,
    /// One bulk flow over a 4-BDP buffer (12 s) whose data packets are reordered
    /// (`--reorder-down 1%:10pkt`): 1 % held back by 10 packets' serialization times, so 10
    /// later packets overtake each on the busy link. In packets, not time, so that it scales
    /// with the grid: more than the 3 packets both transports' first detectors take for a loss
    /// (RFC 5681 §3.2's duplicate ACKs, RFC 9002 §6.1.1's kPacketThreshold), so recoveries
    /// start and prove spurious; far less than an RTT (2.4 ms at 50 Mbit/s), so no packet
    /// waits long enough for a time threshold (RFC 9002 §6.1.2's 9/8 RTT) or a timeout.
    Reorder,
    /// One bulk flow over a 1-BDP drop-tail buffer: a loss-based controller fills it and backs
    /// off again and again, each CUBIC epoch (RFC 9438 §4.2: K = ∛(W_max (1 − β) / C) seconds)
    /// ending in a loss. Long enough for about three epochs after slow start
    /// ([`Scenario::duration`]): 13 s at 20 Mbit/s × 20 ms, 20 s at 80 ms.
    ShallowBuffer,
}

/// What the application does at a time of a scenario (the rest of the time it writes as fast as
/// the controller lets it).
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum App {
    /// From now on, writes no faster than this (bits/s).
    Cap(f64),
    /// Writes nothing from now ...
    Pause,
    /// ... until now, then as fast as it can again.
    Resume,
}

/// When the application slows down or pauses in the app-limited and paused scenarios.
pub const APP_AT: Duration = Duration::from_secs(4);
/// How long the paused scenario's application writes nothing: long enough that
/// ProbeRTTInterval (5 s, §5.3.4) expires in it whenever its stamp was last set (A.10).
pub const PAUSE_FOR: Duration = Duration::from_secs(6);

/// The aggregation period of A.11 and A.12: Wi-Fi's aggregates and cellular grants hold packets
/// for a few milliseconds. Ours: long enough that a period's data (20 kB at 20 Mbit/s) stands
/// out from the few packets of a stack's own delayed ACKs.
pub const AGGREGATE: Duration = Duration::from_millis(8);
/// The reordering scenario's: the share of data packets held back and by how many packets.
pub const REORDER: &str = "1%:10pkt";

/// When the rate steps change the path.
pub const STEP_AT: Duration = Duration::from_secs(4);

/// When the competing flow of [`Scenario::CrossArrives`] starts (after the flow under test).
pub const CROSS_AT: Duration = Duration::from_secs(4);
/// The competing flow of the cross-traffic scenarios: loss-based, so it keeps the buffer full
/// whatever the flow under test does; kernel CUBIC, which a mix runs beside QUIC flows too.
pub const CROSS_CC: &str = "tcp:cubic";

impl Scenario {
    pub const ALL: [Scenario; 14] = [
        Scenario::Bulk,
        Scenario::StepDown,
        Scenario::StepUp,
        Scenario::Policer,
        Scenario::SubPacketBdp,
        Scenario::AppLimited,
        Scenario::AppLimitedProbeBw,
        Scenario::Paused,
        Scenario::AckAggregation,
        Scenario::ForwardBatching,
        Scenario::CrossQueue,
        Scenario::CrossArrives,
        Scenario::Reorder,
        Scenario::ShallowBuffer,
    ];

    pub fn name(self) -> &'static str {
        match self {
            Scenario::Bulk => "bulk",
            Scenario::StepDown => "step-down",
            Scenario::StepUp => "step-up",
            Scenario::Policer => "policer",
            Scenario::SubPacketBdp => "sub-packet-bdp",
            Scenario::AppLimited => "app-limited",
            Scenario::AppLimitedProbeBw => "app-limited-probe-bw",
            Scenario::Paused => "paused",
            Scenario::AckAggregation => "ack-aggregation",
            Scenario::ForwardBatching => "forward-batching",
            Scenario::CrossQueue => "cross-queue",
            Scenario::CrossArrives => "cross-arrives",
            Scenario::Reorder => "reorder",
            Scenario::ShallowBuffer => "shallow-buffer",
        }
    }

    /// How often a run on a path of base RTT `rtt` samples the sender's state: every 10 ms,
    /// and for the reordering scenario every RTT down to 1 ms. At a 1 ms RTT a spurious
    /// episode lasts about 5 ms and a real loss comes every 10–20 ms, so 10 ms samples put
    /// both in one sample and the undo cannot be told from the next cut.
    pub fn sample_interval(self, rtt: Duration) -> Duration {
        let every = Duration::from_millis(10);
        match self {
            Scenario::Reorder => rtt.clamp(Duration::from_millis(1), every),
            _ => every,
        }
    }

    /// How long a run sends on a path of `rate_bps` and base RTT `rtt`.
    pub fn duration(self, rate_bps: f64, rtt: Duration) -> Duration {
        match self {
            // RFC 9438 §4.2: an epoch lasts K = ∛(W_max (1 − β) / C) s, C = 0.4, β = 0.7, with
            // W_max the 2 BDP (in 1448-byte packets) the path and the 1-BDP buffer hold; the first
            // slow start and the growth from it take about as long again. 2 s + 3 K, 12 s or more.
            Scenario::ShallowBuffer => {
                let w_max = 2.0 * rate_bps / 8.0 * rtt.as_secs_f64() / 1448.0;
                let k = (w_max * (1.0 - 0.7) / 0.4).cbrt();
                Duration::from_secs((2.0 + 3.0 * k).ceil() as u64).max(Duration::from_secs(12))
            }
            // A.15 needs up to 3 ProbeBW cycles after the cut (see STEP_DOWN), each a 2–3 s wait
            // plus about 4 rounds at the RTT of the queue the cut leaves, 11× the base RTT with
            // a 1-BDP buffer: 18 s up to 20 ms, 24 s at 80 ms, 40 s at 200 ms, so a broken
            // controller is shown failing, not cut off undecided.
            Scenario::StepDown => {
                let cycle = Duration::from_secs(3) + rtt * 44;
                Duration::from_secs((STEP_AT + cycle * 3).as_secs_f64().ceil() as u64).max(Duration::from_secs(18))
            }
            Scenario::StepUp => Duration::from_secs(18),
            Scenario::AppLimitedProbeBw | Scenario::Paused => Duration::from_secs(16),
            // A paced flow need not lose when the competitor's slow start overflows the buffer;
            // the next overflow ends a CUBIC epoch, whose length grows with the RTT (RFC 9438
            // §4.2: K ∝ ∛W). Measured at 20 Mbit/s: the first loss 2.8 s after the arrival at
            // 20 ms, 10.6 s at 80 ms. Ours: 16 s up to 20 ms, 24 s at 80 ms, 42 s at 200 ms.
            Scenario::CrossArrives => {
                let d = CROSS_AT + Duration::from_secs(8) + rtt * 150;
                Duration::from_secs(d.as_secs_f64().ceil() as u64).max(Duration::from_secs(16))
            }
            _ => Duration::from_secs(12),
        }
    }

    /// Whether the grid's rate and RTT apply (else the scenario has its own path).
    pub fn on_grid(self) -> bool {
        self.own_path().is_none()
    }

    /// The scenario's own path, its rate (bits/s) and RTT, where the grid's do not apply.
    pub fn own_path(self) -> Option<(f64, Duration)> {
        match self {
            Scenario::SubPacketBdp => Some((64e3, Duration::from_millis(1))),
            _ => None,
        }
    }

    /// The `ccbench run` path flags for a grid point (`rate_bps`, `rtt`): what anyone can type
    /// to reproduce a cell. Rates are given in kbit/s.
    pub fn path_flags(self, rate_bps: f64, rtt: Duration) -> Vec<String> {
        let kbit = |bps: f64| format!("{}kbit", (bps / 1e3).round() as u64);
        // The grid's path at `rate` with `buffer`, then the scenario's own feature.
        let path = |rate: f64, buffer: &str, feature: &[String]| {
            let mut flags = vec!["--rate".into(), kbit(rate), "--rtt".into(), format!("{}us", rtt.as_micros()), "--buffer".into(), buffer.into()];
            flags.extend_from_slice(feature);
            flags
        };
        let step = |to: f64| ["--at".into(), format!("{}s:rate={}", STEP_AT.as_secs(), kbit(to))];
        match self {
            Scenario::Bulk | Scenario::CrossQueue | Scenario::CrossArrives => path(rate_bps, "4bdp", &[]),
            Scenario::ShallowBuffer => path(rate_bps, "1bdp", &[]),
            Scenario::StepDown => path(rate_bps, "1bdp", &step(rate_bps / 10.0)),
            Scenario::StepUp => path(rate_bps / 10.0, "4bdp", &step(rate_bps)),
            Scenario::Policer => path(rate_bps, "4bdp", &["--policer-down".into(), kbit(rate_bps / 2.0)]),
            Scenario::Reorder => path(rate_bps, "4bdp", &["--reorder-down".into(), REORDER.into()]),
            // A.13's own path: a BDP of 8 bytes, whatever the grid.
            Scenario::SubPacketBdp => ["--rate", "64kbit", "--rtt", "1ms", "--buffer", "20pkt"].map(String::from).to_vec(),
            Scenario::AppLimited => path(rate_bps, "4bdp", &["--app-rate".into(), kbit(rate_bps / 4.0)]),
            Scenario::AppLimitedProbeBw => {
                path(rate_bps, "0.5bdp", &["--app-rate".into(), kbit(rate_bps / 4.0), "--app-rate-from".into(), format!("{}s", APP_AT.as_secs())])
            }
            Scenario::Paused => path(rate_bps, "4bdp", &["--app-pause".into(), format!("{}s:{}ms", APP_AT.as_secs(), PAUSE_FOR.as_millis())]),
            Scenario::AckAggregation => path(rate_bps, "4bdp", &["--aggregate-up".into(), format!("{}ms", AGGREGATE.as_millis())]),
            Scenario::ForwardBatching => path(rate_bps, "4bdp", &["--aggregate-down".into(), format!("{}ms", AGGREGATE.as_millis())]),
        }
    }

    /// The bottleneck the controller should find (bits/s) at the start, and the rate step.
    pub fn bottleneck(self, rate_bps: f64) -> (f64, Option<(Duration, f64)>) {
        match self {
            Scenario::Bulk | Scenario::CrossQueue | Scenario::CrossArrives | Scenario::Reorder | Scenario::ShallowBuffer => (rate_bps, None),
            Scenario::StepDown => (rate_bps, Some((STEP_AT, rate_bps / 10.0))),
            Scenario::StepUp => (rate_bps / 10.0, Some((STEP_AT, rate_bps))),
            Scenario::Policer => (rate_bps / 2.0, None),
            Scenario::SubPacketBdp => (64e3, None),
            Scenario::AppLimited | Scenario::AppLimitedProbeBw | Scenario::Paused => (rate_bps, None),
            Scenario::AckAggregation | Scenario::ForwardBatching => (rate_bps, None),
        }
    }

    /// The drop-tail buffer, in BDPs of the starting rate (what `--buffer` says).
    pub fn buffer_bdp(self) -> f64 {
        match self {
            Scenario::StepDown | Scenario::ShallowBuffer => 1.0,
            Scenario::AppLimitedProbeBw => 0.5,
            _ => 4.0,
        }
    }

    /// What the application does when (the same as the path flags' `--app-rate`,
    /// `--app-rate-from` and `--app-pause`), for a simulator to replay.
    pub fn app(self, rate_bps: f64) -> Vec<(Duration, App)> {
        match self {
            Scenario::AppLimited => vec![(Duration::ZERO, App::Cap(rate_bps / 4.0))],
            Scenario::AppLimitedProbeBw => vec![(APP_AT, App::Cap(rate_bps / 4.0))],
            Scenario::Paused => vec![(APP_AT, App::Pause), (APP_AT + PAUSE_FOR, App::Resume)],
            _ => Vec::new(),
        }
    }

    /// The competing flow, if any: its algorithm ([`CROSS_CC`]) and when it starts after the
    /// flow under test. The flow under test is the mix's first flow (`flow-0`), and only its
    /// series is judged.
    pub fn cross(self) -> Option<(&'static str, Duration)> {
        match self {
            Scenario::CrossQueue => Some((CROSS_CC, Duration::ZERO)),
            Scenario::CrossArrives => Some((CROSS_CC, CROSS_AT)),
            _ => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn step_scenarios_reproduce_as_run_flags() {
        let f = Scenario::StepDown.path_flags(50e6, Duration::from_millis(40));
        assert_eq!(f, ["--rate", "50000kbit", "--rtt", "40000us", "--buffer", "1bdp", "--at", "4s:rate=5000kbit"]);
        assert_eq!(Scenario::StepUp.bottleneck(50e6), (5e6, Some((STEP_AT, 50e6))));
        let f = Scenario::AckAggregation.path_flags(20e6, Duration::from_millis(20));
        assert_eq!(f, ["--rate", "20000kbit", "--rtt", "20000us", "--buffer", "4bdp", "--aggregate-up", "8ms"]);
        assert_eq!(Scenario::ForwardBatching.path_flags(20e6, Duration::from_millis(20))[6..], ["--aggregate-down", "8ms"]);
        let d = |rtt_ms| Scenario::StepDown.duration(50e6, Duration::from_millis(rtt_ms)).as_secs();
        assert_eq!((d(20), d(80), d(200)), (18, 24, 40));
    }

    /// The cross-traffic scenarios: the flow under test first, the competitor from the start or
    /// from 4 s, and long enough at long RTTs for a CUBIC epoch to overflow the buffer.
    #[test]
    fn cross_scenarios_run_a_competitor() {
        assert_eq!(Scenario::CrossQueue.cross(), Some(("tcp:cubic", Duration::ZERO)));
        assert_eq!(Scenario::CrossArrives.cross(), Some(("tcp:cubic", CROSS_AT)));
        assert_eq!(Scenario::Bulk.cross(), None);
        let d = |rtt_ms| Scenario::CrossArrives.duration(20e6, Duration::from_millis(rtt_ms)).as_secs();
        assert_eq!((d(20), d(80), d(200)), (16, 24, 42));
    }

    /// The shallow buffer's runs last about three CUBIC epochs: K = ∛(2 BDP × 0.3 / 0.4) s.
    #[test]
    fn shallow_buffer_runs_three_epochs() {
        let d = |mbit: f64, rtt_ms| Scenario::ShallowBuffer.duration(mbit * 1e6, Duration::from_millis(rtt_ms)).as_secs();
        // 20 Mbit/s × 20 ms: W_max = 69 packets, K = 3.7 s; at 80 ms 276 packets, 5.9 s.
        assert_eq!((d(20.0, 20), d(20.0, 80), d(1.0, 1)), (14, 20, 12));
        assert_eq!(Scenario::ShallowBuffer.path_flags(20e6, Duration::from_millis(20))[4..], ["--buffer", "1bdp"]);
    }

    /// A scenario's own path is the one its flags give.
    #[test]
    fn own_path_is_the_flags_path() {
        for s in Scenario::ALL {
            let Some((rate_bps, rtt)) = s.own_path() else { continue };
            assert_eq!(s.bottleneck(rate_bps).0, rate_bps, "{}", s.name());
            let f = s.path_flags(rate_bps, rtt);
            assert_eq!(f[..4], ["--rate", "64kbit", "--rtt", "1ms"], "{}", s.name());
        }
    }
}
