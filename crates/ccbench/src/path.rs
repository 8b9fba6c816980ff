//! Resolves the path's layered flags into the emulator's [`PathSpec`], once. Every value was
//! checked when its flag (or preset field) was parsed, so nothing here can fail: what is left is
//! choosing each direction's value (its own flag, else the general one, else the default) and
//! sizing BDP buffers from the rate and round trip they end up with.

use ccbench_emu::PathSpec;
use ccbench_link::{Buffer, DirectionConfig, Rate};

use crate::cli::PathOpts;
use crate::values::BufferSpec;

/// A BDP-sized buffer on a short or slow path can round down to nothing; keep room for a
/// few full-size packets so the link can be kept busy at all.
const MIN_BDP_BUFFER_PACKETS: u64 = 4;

/// Each direction's value of a setting, `[server → client, client → server]`: the direction's
/// own flag (`--x-down`, `--x-up`), else the general one (`--x`), else none.
fn each<T: Clone>(general: &Option<T>, down: &Option<T>, up: &Option<T>) -> [Option<T>; 2] {
    [down.clone().or_else(|| general.clone()), up.clone().or_else(|| general.clone())]
}

fn buffer(spec: BufferSpec, rate: Rate, rtt_ns: u64, mtu: u32) -> Buffer {
    match spec {
        BufferSpec::Unlimited => Buffer::Unlimited,
        BufferSpec::Bytes(b) => Buffer::Bytes(b),
        BufferSpec::Packets(n) => Buffer::Packets(n),
        BufferSpec::Bdp(k) => match rate {
            Rate::Unlimited => Buffer::Unlimited,
            Rate::BitsPerSec(bps) => {
                let bdp = (bps as f64 / 8.0 * rtt_ns as f64 / 1e9 * k).round() as u64;
                Buffer::Bytes(bdp.max(MIN_BDP_BUFFER_PACKETS * u64::from(mtu)))
            }
        },
    }
}

/// The path from its flags, layered (a flag not given takes its default).
pub fn build(o: &PathOpts, seed: u64, sample_interval_us: u64) -> PathSpec {
    build_for_flows(o, seed, sample_interval_us, 0)
}

/// The path for flows with access links of their own (`--flows bbr:1@10ms,cubic:1@60ms`), the
/// longest adding `longest_access_rtt_ns` to the path's round trip. A BDP buffer is sized from
/// the largest flow RTT (the path's plus that access RTT), as the dumbbell literature sizes a
/// shared bottleneck's buffer for flows of different RTTs: from the path's RTT alone (0 with
/// `--rtt 0`) an RTT-fairness study would run with almost no buffer.
pub fn build_for_flows(o: &PathOpts, seed: u64, sample_interval_us: u64, longest_access_rtt_ns: u64) -> PathSpec {
    let rate = each(&o.rate, &o.rate_down, &o.rate_up).map(|r| r.unwrap_or_default().0);
    let one_way = o.rtt.unwrap_or_default().one_way();
    let delay_ns = [o.delay_down, o.delay_up].map(|d| d.unwrap_or(one_way).0);
    let rtt_ns = delay_ns[0] + delay_ns[1] + longest_access_rtt_ns;
    let loss = each(&o.loss, &o.loss_down, &o.loss_up);
    let buffers = each(&o.buffer, &o.buffer_down, &o.buffer_up);
    let traces = each(&o.trace, &o.trace_down, &o.trace_up);
    let jitter = each(&o.jitter, &o.jitter_down, &o.jitter_up);
    let aggregate = each(&o.aggregate, &o.aggregate_down, &o.aggregate_up);
    let reorder = each(&o.reorder, &o.reorder_down, &o.reorder_up);
    let policer = each(&o.policer, &o.policer_down, &o.policer_up);
    let mtu = o.mtu.unwrap_or_default().0;
    let ecn = o.ecn.unwrap_or_default();
    let aqm = each(&o.aqm, &o.aqm_down, &o.aqm_up).map(|a| {
        let mut aqm = match a.unwrap_or_default().0 {
            // RFC 8290's quantum is one MTU: the link's, unless the flag named one.
            ccbench_link::Aqm::FqCodel(f) => ccbench_link::Aqm::FqCodel(ccbench_link::FqCodel { quantum: f.quantum.or(Some(mtu)), ..f }),
            other => other,
        };
        // ECN at the endpoints means marking in the queues that can (check_ecn refused the
        // rest before we got here).
        if ecn != crate::values::EcnArg::Off {
            aqm.enable_ecn();
        }
        aqm
    });
    let ecn_fault = each(&o.ecn_fault, &o.ecn_fault_down, &o.ecn_fault_up);
    let direction = |i: usize| DirectionConfig {
        rate: rate[i],
        delay_ns: ccbench_link::time::Duration::from_nanos(delay_ns[i]),
        loss: loss[i].clone().unwrap_or_default().0,
        buffer: buffer(buffers[i].unwrap_or_default(), rate[i], rtt_ns, mtu),
        trace: traces[i].clone().map(|t| t.rate),
        schedule: o.at.iter().map(|at| [&at.down, &at.up][i].clone()).filter(|c| c.rate.is_some() || c.delay_ns.is_some() || c.loss.is_some()).collect(),
        jitter: jitter[i].unwrap_or_default().0,
        reorder: reorder[i].unwrap_or_default().0,
        policer: policer[i].map(|p| p.0),
        aqm: aqm[i],
        ecn_fault: ecn_fault[i].map(|f| f.0),
        aggregate_ns: aggregate[i].map(|a| ccbench_link::time::Duration::from_nanos(a.0)),
    };
    PathSpec {
        down: direction(0),
        up: direction(1),
        mtu,
        seed,
        sample_interval_us,
        offload: !o.no_offload,
        // One batch for both directions: the tighter of the two (`auto` at the faster link).
        batch_us: rate
            .iter()
            .map(|r| {
                o.emulator_batch.unwrap_or_default().micros(
                    match r {
                        Rate::BitsPerSec(b) => Some(*b),
                        Rate::Unlimited => None,
                    },
                    rtt_ns,
                    mtu,
                )
            })
            .min()
            .unwrap_or(ccbench_model::path::DEFAULT_BATCH_US),
        // Per-flow access links come from --flows, when the run is planned (spec.rs).
        access: Vec::new(),
        tcp_ecn: ecn.tcp_ecn(),
    }
}

/// `--ecn on|accecn` needs a queue that can mark (or a fault that rewrites the field), and
/// `accecn` a kernel with Accurate ECN: refused in one line before anything is built.
pub fn check_ecn(o: &PathOpts) -> Result<(), crate::error::UsageError> {
    use crate::values::EcnArg;
    let ecn = o.ecn.unwrap_or_default();
    if ecn == EcnArg::Off {
        return Ok(());
    }
    let aqms = each(&o.aqm, &o.aqm_down, &o.aqm_up).map(|a| a.unwrap_or_default().0);
    let faults = each(&o.ecn_fault, &o.ecn_fault_down, &o.ecn_fault_up);
    if aqms.iter().all(|a| !a.clone().enable_ecn()) && faults.iter().all(Option::is_none) {
        return Err(crate::error::UsageError::new(
            "--ecn",
            ecn,
            format!("off with --aqm {} (it cannot mark): an AQM that marks, codel, pie, fq_codel or dualpi2, or an --ecn-fault", aqms[0].name()),
        ));
    }
    if ecn == EcnArg::Accecn && !ccbench_emu::kernel_has_accecn() {
        return Err(crate::error::UsageError::new(
            "--ecn",
            ecn,
            "off or on: this kernel has no Accurate ECN (no net.ipv4.tcp_ecn_option; Linux 6.18 or later)",
        ));
    }
    Ok(())
}

/// `--reorder P%:Npkt` counts serialization times, and a packet takes none at an unlimited
/// rate: refused in one line rather than holding nothing back.
pub fn check_reorder(o: &PathOpts) -> Result<(), crate::error::UsageError> {
    let rate = each(&o.rate, &o.rate_down, &o.rate_up).map(|r| r.unwrap_or_default().0);
    let traces = each(&o.trace, &o.trace_down, &o.trace_up);
    for (i, (flag, own)) in [("--reorder-down", &o.reorder_down), ("--reorder-up", &o.reorder_up)].into_iter().enumerate() {
        let (flag, given) = match (own, &o.reorder) {
            (Some(r), _) => (flag, r),
            (None, Some(r)) => ("--reorder", r),
            (None, None) => continue,
        };
        if let ccbench_link::Reorder::Packets { p, packets } = given.0 {
            if rate[i] == Rate::Unlimited && traces[i].is_none() {
                return Err(crate::error::UsageError::new(
                    flag,
                    format!("{}%:{packets}pkt", (p * 1e8).round() / 1e6),
                    "a displacement in time (such as 1%:3ms) on a link of unlimited rate, where a packet takes no time to send; or a --rate",
                ));
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cli::Layer;
    use ccbench_link::time::Duration as D;
    use ccbench_link::{Aqm, Jitter, LossModel, Policer};

    fn parse(extra: &[&str]) -> Result<PathOpts, clap::Error> {
        let mut argv = vec!["ccbench", "exec"];
        argv.extend_from_slice(extra);
        argv.extend_from_slice(&["--", "true"]);
        match crate::cli::parse_from(argv)?.command {
            crate::cli::Command::Exec(e) => Ok(e.path),
            _ => unreachable!(),
        }
    }

    fn spec(extra: &[&str]) -> PathSpec {
        build(&parse(extra).unwrap(), 1, 10_000)
    }

    #[test]
    fn the_defaults_help_shows_are_the_ones_used() {
        // `exec` keeps the values clap fills in from `default_value` (which --help shows).
        assert_eq!(spec(&[]), build(&PathOpts::default(), 1, 10_000));
    }

    #[test]
    fn rtt_splits_evenly_and_bdp_uses_it() {
        let spec = spec(&["--rate", "100mbit", "--rtt", "40ms"]);
        assert_eq!(spec.down.delay_ns, D::from_nanos(20_000_000));
        assert_eq!(spec.up.delay_ns, D::from_nanos(20_000_000));
        assert_eq!(spec.down.buffer, Buffer::Bytes(500_000));
        let small = self::spec(&["--rate", "1mbit", "--rtt", "1ms", "--buffer-up", "100pkt", "--buffer-down", "unlimited"]);
        assert_eq!((small.down.buffer, small.up.buffer), (Buffer::Unlimited, Buffer::Packets(100)));
        let floor = self::spec(&["--rate", "1mbit", "--rtt", "1ms"]);
        assert_eq!(floor.down.buffer, Buffer::Bytes(4 * 1500), "a BDP buffer keeps room for a few packets");
    }

    /// Issue 27 §15: with per-flow RTTs and `--rtt 0`, a BDP buffer was 4 packets.
    #[test]
    fn a_bdp_buffer_for_flows_of_their_own_rtts_is_sized_from_the_largest() {
        let o = parse(&["--rate", "100mbit", "--rtt", "0"]).unwrap();
        assert_eq!(build(&o, 1, 10_000).down.buffer, Buffer::Bytes(4 * 1500), "the path alone: its RTT, 0");
        // The largest flow RTT is the path's 0 plus the longest access RTT, 60 ms: 750 kB at 100 Mbit/s.
        let spec = build_for_flows(&o, 1, 10_000, 60_000_000);
        assert_eq!((spec.down.buffer, spec.up.buffer), (Buffer::Bytes(750_000), Buffer::Bytes(750_000)));
        assert_eq!((spec.down.delay_ns, spec.up.delay_ns), (D::from_nanos(0), D::from_nanos(0)), "the path's own delay is unchanged");
        // Added to the path's own RTT, and a buffer given in packets stays as given.
        let o = parse(&["--rate", "100mbit", "--rtt", "20ms", "--buffer-up", "50pkt", "--buffer-down", "2bdp"]).unwrap();
        let spec = build_for_flows(&o, 1, 10_000, 60_000_000);
        assert_eq!((spec.down.buffer, spec.up.buffer), (Buffer::Bytes(2_000_000), Buffer::Packets(50)));
    }

    #[test]
    fn per_direction_overrides() {
        let spec = spec(&["--rate", "10mbit", "--rate-up", "1mbit", "--loss-down", "2%", "--delay-up", "5ms"]);
        assert_eq!(spec.down.rate, Rate::BitsPerSec(10_000_000));
        assert_eq!(spec.up.rate, Rate::BitsPerSec(1_000_000));
        assert_eq!(spec.down.loss, LossModel::Bernoulli { p: 0.02 });
        assert_eq!(spec.up.loss, LossModel::None);
        assert_eq!(spec.up.delay_ns, D::from_nanos(5_000_000));
        assert_eq!(spec.down.delay_ns, D::from_nanos(20_000_000), "half the default round trip");
    }

    #[test]
    fn a_direction_of_a_lower_layer_still_overrides_a_general_value_above_it() {
        // As on one command line: --rate-up beats --rate whichever layer each came from.
        let preset = parse(&["--rate-up", "1mbit", "--jitter-down", "1ms"]).unwrap();
        let user = parse(&["--rate", "20mbit", "--jitter", "2ms"]).unwrap();
        let spec = build(&user.over(preset), 1, 10_000);
        assert_eq!((spec.down.rate, spec.up.rate), (Rate::BitsPerSec(20_000_000), Rate::BitsPerSec(1_000_000)));
        assert_eq!(spec.down.jitter, Jitter::Uniform { max_ns: D::from_nanos(1_000_000), reorder: false });
        let r = self::spec(&["--reorder", "1%:3ms", "--reorder-up", "2%:5pkt"]);
        assert_eq!(r.down.reorder, ccbench_link::Reorder::Time { p: 0.01, by_ns: D::from_nanos(3_000_000) });
        assert_eq!(r.up.reorder, ccbench_link::Reorder::Packets { p: 0.02, packets: 5 });
        assert_eq!(spec.up.jitter, Jitter::Uniform { max_ns: D::from_nanos(2_000_000), reorder: false });
    }

    #[test]
    fn errors_name_the_flag() {
        for (args, flag, value) in [
            (&["--rate-up", "0mbit"][..], "--rate-up", "0mbit"),
            (&["--loss", "150%"], "--loss", "150%"),
            (&["--rtt", "forty"], "--rtt", "forty"),
            (&["--mtu", "100"], "--mtu", "100"),
            (&["--jitter", "2 parsecs"], "--jitter", "2 parsecs"),
            (&["--reorder", "1%"], "--reorder", "1%"),
            (&["--reorder-up", "150%:3ms"], "--reorder-up", "150%:3ms"),
            (&["--policer", "fast"], "--policer", "fast"),
            (&["--aqm", "red"], "--aqm", "red"),
            (&["--aqm-up", "pie:alpha=x"], "--aqm-up", "pie:alpha=x"),
            (&["--aqm-down", "fq_codel:flows=0"], "--aqm-down", "fq_codel:flows=0"),
            (&["--at", "5s"], "--at", "5s"),
            (&["--at", "5s:color=red"], "--at", "5s:color=red"),
            (&["--trace", "/nonexistent.trace"], "--trace", "/nonexistent.trace"),
            (&["--emulator-batch", "2ms"], "--emulator-batch", "2ms"),
            (&["--aggregate", "0"], "--aggregate", "0"),
            (&["--aggregate-up", "-4ms"], "--aggregate-up", "-4ms"),
            (&["--aggregate-down", "2s"], "--aggregate-down", "2s"),
            (&["--aggregate-up", "soon"], "--aggregate-up", "soon"),
        ] {
            let e = parse(args).unwrap_err();
            let u = crate::cli::usage_error(&e).unwrap_or_else(|| panic!("{args:?}: {e}"));
            assert_eq!((u.flag.as_str(), u.value.as_str()), (flag, value), "{args:?}");
        }
    }

    #[test]
    fn aggregation_per_direction() {
        assert_eq!((spec(&[]).down.aggregate_ns, spec(&[]).up.aggregate_ns), (None, None));
        let s = spec(&["--aggregate-up", "4ms"]);
        assert_eq!((s.down.aggregate_ns, s.up.aggregate_ns), (None, Some(D::from_nanos(4_000_000))));
        let s = spec(&["--aggregate", "2ms", "--aggregate-down", "500us"]);
        assert_eq!((s.down.aggregate_ns, s.up.aggregate_ns), (Some(D::from_nanos(500_000)), Some(D::from_nanos(2_000_000))));
    }

    #[test]
    fn a_displacement_in_packets_needs_a_rate() {
        let o = parse(&["--reorder-up", "1%:5pkt", "--rate-up", "unlimited"]).unwrap();
        let e = check_reorder(&o).unwrap_err();
        assert_eq!((e.flag.as_str(), e.value.as_str()), ("--reorder-up", "1%:5pkt"));
        assert!(check_reorder(&parse(&["--reorder", "1%:5pkt", "--rate", "10mbit"]).unwrap()).is_ok());
        assert!(check_reorder(&parse(&["--reorder", "1%:3ms"]).unwrap()).is_ok());
    }

    #[test]
    fn each_direction_has_its_own_aqm() {
        let spec = spec(&["--aqm", "codel", "--aqm-down", "pie:target=20ms"]);
        assert_eq!(spec.down.aqm, Aqm::Pie(ccbench_link::Pie { target_ns: D::from_nanos(20_000_000), ..Default::default() }));
        assert_eq!(spec.up.aqm, Aqm::codel());
        let spec = self::spec(&["--aqm-up", "fq_codel", "--mtu", "9000"]);
        assert_eq!(spec.down.aqm, Aqm::DropTail);
        assert_eq!(spec.up.aqm, Aqm::FqCodel(ccbench_link::FqCodel { quantum: Some(9000), ..Default::default() }), "the quantum is the MTU");
        let spec = self::spec(&["--aqm", "fq_codel:quantum=300"]);
        assert_eq!(spec.down.aqm, Aqm::FqCodel(ccbench_link::FqCodel { quantum: Some(300), ..Default::default() }));
    }

    #[test]
    fn link_stages_from_flags() {
        let spec = spec(&[
            "--jitter",
            "2ms,reorder",
            "--policer-up",
            "10mbit:64kib",
            "--aqm",
            "codel:target=10ms",
            "--at",
            "5s:rate=20mbit,loss=gilbert:p=1%,r=25%",
            "--at",
            "9s:delay-down=30ms",
            "--no-offload",
            "--emulator-batch",
            "0",
        ]);
        assert_eq!(spec.down.jitter, Jitter::Uniform { max_ns: D::from_nanos(2_000_000), reorder: true });
        assert_eq!(spec.up.policer, Some(Policer { rate_bps: 10_000_000, burst_bytes: 65_536 }));
        assert_eq!(spec.down.policer, None);
        assert_eq!(
            spec.down.aqm,
            Aqm::Codel(ccbench_link::Codel { target_ns: D::from_nanos(10_000_000), interval_ns: D::from_nanos(100_000_000), ..Default::default() })
        );
        assert_eq!(spec.up.aqm, spec.down.aqm);
        assert_eq!(spec.down.schedule.len(), 2);
        assert_eq!(spec.up.schedule.len(), 1, "the 9 s change is downlink-only");
        let first = &spec.down.schedule[0];
        assert_eq!((first.at_ns, first.rate), (ccbench_link::time::Instant::from_nanos(5_000_000_000), Some(Rate::BitsPerSec(20_000_000))));
        assert!(matches!(first.loss, Some(LossModel::GilbertElliott { .. })));
        assert_eq!(spec.down.schedule[1].delay_ns, Some(D::from_nanos(30_000_000)));
        assert!(!spec.offload);
        assert_eq!(spec.batch_us, 0);
    }

    #[test]
    fn an_auto_batch_comes_from_the_faster_direction_and_the_rtt() {
        assert_eq!(spec(&[]).batch_us, 25, "the default stays 25 µs");
        assert_eq!(spec(&["--rate", "100mbit", "--rtt", "20ms", "--emulator-batch", "auto"]).batch_us, 200);
        // 1 Gbit/s down, 10 Mbit/s up: the gigabit's two packet times bound both directions.
        assert_eq!(spec(&["--rate-down", "1gbit", "--rate-up", "10mbit", "--rtt", "40ms", "--emulator-batch", "auto"]).batch_us, 24);
        assert_eq!(spec(&["--rate", "unlimited", "--rtt", "1ms", "--emulator-batch", "auto"]).batch_us, 10);
    }
}
