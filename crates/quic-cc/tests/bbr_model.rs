//! The controller on a virtual clock against draft-ietf-ccwg-bbr's state machine and constants
//! (and BBRv2's where they differ: Linux's tcp_bbr2.c, and
//! draft-cardwell-iccrg-bbr-congestion-control-02 where the kernel code is silent).
//! Every figure asserted here comes from the draft or from the simulated link's own
//! parameters; margins are explained where they are not exact.

mod sim;

use std::time::Duration;

use ccbench_quic_cc::{Bbr, BbrFactory, BbrParams, BbrState, BbrVersion, Controller, ControllerFactory, StartupLossExit, Telemetry, UpExit};
use sim::{Link, Sim, MSS};

const V3: BbrVersion = BbrVersion::V3;
const V2: BbrVersion = BbrVersion::V2;

fn secs(s: f64) -> Duration {
    Duration::from_secs_f64(s)
}

fn run(version: BbrVersion, link: Link, seconds: f64) -> Sim {
    let mut sim = Sim::new(version, link);
    sim.run_for(secs(seconds));
    sim
}

/// The issue's path: 70 Mbit/s, 6 ms RTT, 8-BDP buffer.
fn issue_link() -> Link {
    Link::new(70.0, 6, 8.0)
}

/// A longer RTT, so that each 10 ms sample sees at most one round.
fn long_link() -> Link {
    Link::new(50.0, 40, 8.0)
}

fn close(a: f64, b: f64, tol: f64) -> bool {
    (a - b).abs() <= tol
}

#[test]
fn v3_constants_are_the_drafts() {
    let p = BbrParams::for_version(V3);
    assert!(close(p.startup_pacing_gain, 2.77, 0.005), "{}", p.startup_pacing_gain);
    assert_eq!(p.startup_cwnd_gain, 2.0);
    assert_eq!(p.drain_pacing_gain, 0.5);
    assert_eq!(p.probe_bw_down_pacing_gain, 0.9);
    assert_eq!(p.probe_bw_up_pacing_gain, 1.25);
    assert_eq!(p.cwnd_gain, 2.0);
    assert_eq!(p.probe_bw_up_cwnd_gain, 2.25);
    assert_eq!(p.probe_rtt_cwnd_gain, 0.5);
    assert_eq!(p.probe_rtt_interval, Duration::from_secs(5));
    assert_eq!(p.probe_rtt_duration, Duration::from_millis(200));
    assert_eq!(p.loss_thresh, 0.02);
    assert_eq!(p.beta, 0.7);
    assert_eq!(p.headroom, 0.15);
    assert_eq!((p.full_bw_growth, p.full_bw_rounds), (1.25, 3));
    assert_eq!(p.startup_full_loss_count, 6);
    assert_eq!(p.up_exit, UpExit::BwPlateau);
    // -06: Drain ends after 3 rounds at the latest; precautionary probing; no packet
    // conservation in recovery.
    assert_eq!(p.drain_max_rounds, Some(3));
    assert!(p.precautionary_probing && p.recovery_restores_cwnd && !p.ack_path_loss_check);
    assert_eq!(p.startup_loss_exit, StartupLossExit::RoundLossRate);
}

/// BBRv2 as deployed: Linux's tcp_bbr2.c (google/bbr, branch v2alpha) — its module
/// parameters `bbr_high_gain`, `bbr_startup_cwnd_gain`, `bbr_drain_gain`, `bbr_pacing_gain[]`,
/// `bbr_full_loss_cnt` and what `bbr2_main` does and does not call — where it differs from
/// draft-cardwell-iccrg-bbr-congestion-control-02 (which has v3's 2.77 / 2 / 0.5 / 0.9 gains,
/// a 3-range loss exit and packet conservation); the two agree on everything else here.
#[test]
fn v2_constants_are_linux_tcp_bbr2s() {
    let (v2, v3) = (BbrParams::for_version(V2), BbrParams::for_version(V3));
    let high_gain = 2.0 / std::f64::consts::LN_2;
    // 2/ln 2 = 2.885 (the kernel's fixed point: 739/256 = 2.887); Drain paces at its inverse.
    assert!(close(v2.startup_pacing_gain, 2.885, 0.001) && v2.startup_cwnd_gain == high_gain, "{}", v2.startup_pacing_gain);
    assert!(close(v2.drain_pacing_gain, 1.0 / 2.885, 0.001));
    assert_eq!((v2.probe_bw_down_pacing_gain, v2.probe_bw_up_pacing_gain, v2.cwnd_gain, v2.probe_bw_up_cwnd_gain), (0.75, 1.25, 2.0, 2.0));
    assert_eq!((v2.startup_full_loss_count, v2.startup_loss_exit), (8, StartupLossExit::LossMarkingAcks));
    assert_eq!(v2.up_exit, UpExit::InflightAboveTarget);
    assert_eq!(v2.drain_max_rounds, None);
    // stopped_risky_probe; no packet conservation (bbr_set_cwnd_to_recover_or_restore is v1
    // only); excess loss also judged per ACK; undo restores bounds, not states.
    assert!(v2.precautionary_probing && !v2.recovery_restores_cwnd && v2.ack_path_loss_check && !v2.undo_reverts_state);
    assert!(v2.tcp_bbr2_bookkeeping && !v3.tcp_bbr2_bookkeeping);
    // bbr_check_full_bw_reached tests bbr_max_bw() for growth; -06 the latest sample.
    assert!(v2.full_bw_on_max_bw && !v3.full_bw_on_max_bw);
    let same = BbrParams {
        startup_pacing_gain: v3.startup_pacing_gain,
        startup_cwnd_gain: v3.startup_cwnd_gain,
        drain_pacing_gain: v3.drain_pacing_gain,
        probe_bw_down_pacing_gain: v3.probe_bw_down_pacing_gain,
        probe_bw_up_cwnd_gain: v3.probe_bw_up_cwnd_gain,
        full_bw_on_max_bw: v3.full_bw_on_max_bw,
        startup_full_loss_count: v3.startup_full_loss_count,
        startup_loss_exit: v3.startup_loss_exit,
        up_exit: v3.up_exit,
        drain_max_rounds: v3.drain_max_rounds,
        precautionary_probing: v3.precautionary_probing,
        recovery_restores_cwnd: v3.recovery_restores_cwnd,
        ack_path_loss_check: v3.ack_path_loss_check,
        undo_reverts_state: v3.undo_reverts_state,
        tcp_bbr2_bookkeeping: v3.tcp_bbr2_bookkeeping,
        ecn_reprobe_gain: v3.ecn_reprobe_gain,
        ..v2
    };
    // Beta 0.7, headroom 0.15, loss threshold 2 %, ProbeRTT 200 ms every 5 s at BDP/2, the
    // 25 %-for-3-rounds plateau and the 1 % pacing margin.
    assert_eq!(same, v3, "v2 and v3 share every other constant");
}

/// Every state is visited, and while in it the controller uses exactly the draft's gains.
#[test]
fn every_state_runs_with_its_drafts_gains() {
    for version in [V3, V2] {
        let p = BbrParams::for_version(version);
        let sim = run(version, long_link(), 30.0);
        let expected = |s: BbrState| match s {
            BbrState::Startup => (p.startup_pacing_gain, p.startup_cwnd_gain),
            BbrState::Drain => (p.drain_pacing_gain, p.startup_cwnd_gain),
            BbrState::ProbeBwDown => (p.probe_bw_down_pacing_gain, 2.0),
            BbrState::ProbeBwCruise | BbrState::ProbeBwRefill => (1.0, 2.0),
            BbrState::ProbeBwUp => (1.25, p.probe_bw_up_cwnd_gain),
            BbrState::ProbeRtt => (1.0, 0.5),
        };
        let views = sim.on_entry.iter().map(|(_, s)| s).chain(sim.samples.iter().map(|s| &s.snap));
        let mut seen = std::collections::HashSet::new();
        for snap in views {
            seen.insert(snap.state);
            assert_eq!((snap.pacing_gain, snap.cwnd_gain), expected(snap.state), "{version:?} {}", snap.state);
        }
        assert_eq!(seen.len(), BbrState::ALL.len(), "{version:?} visited {seen:?}");
    }
}

#[test]
fn startup_exits_after_three_rounds_without_25pct_growth() {
    let link = long_link();
    let sim = run(V3, link, 3.0);
    let (t_exit, from, to) = sim.transitions()[0];
    assert_eq!((from, to), (BbrState::Startup, BbrState::Drain));
    let at_exit = &sim.on_entry.iter().find(|(_, s)| s.state == BbrState::Drain).unwrap().1;
    // Not the loss exit: an 8-BDP buffer does not overflow during Startup.
    assert_eq!(at_exit.lost_bytes, 0);
    assert_eq!(at_exit.inflight_hi, None, "the loss exit would have set inflight_hi");
    let rate = link.rate_bps as f64;
    assert!(close(at_exit.max_bw_bps as f64 / rate, 1.0, 0.02), "max_bw {} vs {rate}", at_exit.max_bw_bps);
    // The last round with ≥ 25 % growth is at most the first round at ≥ 80 % of the link
    // rate (1/1.25); three more rounds without growth end Startup. One extra round when the
    // 25 % step happened between 80 % and 100 %.
    let first_80pct_round = sim.samples.iter().find(|s| s.snap.max_bw_bps as f64 >= 0.8 * rate).unwrap().snap.round_count;
    let rounds_after = at_exit.round_count - first_80pct_round;
    assert!((3..=5).contains(&rounds_after), "Startup left {rounds_after} rounds after reaching 80 % (t {t_exit:?})");
}

#[test]
fn startup_takes_the_loss_exit_on_a_shallow_buffer() {
    for version in [V3, V2] {
        let sim = run(version, Link::new(50.0, 40, 0.3), 3.0);
        let (_, from, to) = sim.transitions()[0];
        assert_eq!((from, to), (BbrState::Startup, BbrState::Drain));
        let at_exit = &sim.on_entry.iter().find(|(_, s)| s.state == BbrState::Drain).unwrap().1;
        assert!(at_exit.lost_bytes > 0);
        // Only the loss exit sets inflight_hi in Startup. v3: max(BDP, inflight_latest); v2
        // (bbr2_handle_queue_too_high_in_startup): the BDP plus the quantization budget.
        let hi = at_exit.inflight_hi.expect("the loss exit sets inflight_hi") as f64;
        let bdp = at_exit.max_bw_bps as f64 / 8.0 * at_exit.min_rtt.unwrap().as_secs_f64();
        assert!(hi >= bdp * 0.999, "{version:?} hi {hi} < bdp {bdp}");
        if version == V2 {
            // Budget: one send quantum (≤ 64 KiB) or 4 packets, whichever is more.
            assert!(hi <= bdp + 65536.0, "{version:?} hi {hi} vs bdp {bdp}");
        }
        // Before the plateau rule could fire (3 rounds after the rate stops growing).
        let deep = run(version, Link::new(50.0, 40, 8.0), 3.0);
        assert!(sim.transitions()[0].0 < deep.transitions()[0].0, "{version:?} not earlier than the plateau exit");
    }
}

#[test]
fn drain_lasts_until_inflight_is_down_to_the_bdp() {
    for version in [V3, V2] {
        let sim = run(version, long_link(), 3.0);
        let bdp = |s: &ccbench_quic_cc::BbrSnapshot| s.max_bw_bps as f64 / 8.0 * s.min_rtt.unwrap().as_secs_f64();
        // DOWN may hand over to CRUISE within the same ACK: take the view after that ACK.
        let (t_left, ..) = *sim.transitions().iter().find(|e| e.1 == BbrState::Drain).unwrap();
        let left = &sim.on_entry.iter().find(|(t, _)| *t == t_left).unwrap().1;
        assert!(left.bytes_in_flight as f64 <= bdp(left), "{version:?} left Drain with {} > {}", left.bytes_in_flight, bdp(left));
        let draining: Vec<_> = sim.samples.iter().filter(|s| s.snap.state == BbrState::Drain).collect();
        assert!(!draining.is_empty());
        for s in draining {
            assert!(s.snap.bytes_in_flight as f64 > bdp(&s.snap), "{version:?} stayed in Drain below the BDP");
        }
    }
}

#[test]
fn probe_bw_cycles_down_cruise_refill_up() {
    use BbrState::*;
    for version in [V3, V2] {
        let sim = run(version, long_link(), 30.0);
        let allowed = |from, to| match from {
            Startup => matches!(to, Drain | ProbeRtt),
            Drain => matches!(to, ProbeBwDown | ProbeRtt),
            ProbeBwDown => matches!(to, ProbeBwCruise | ProbeBwRefill | ProbeRtt),
            ProbeBwCruise => matches!(to, ProbeBwRefill | ProbeRtt),
            ProbeBwRefill => matches!(to, ProbeBwUp | ProbeRtt),
            ProbeBwUp => matches!(to, ProbeBwDown | ProbeRtt),
            // §5.3.4.4: back to ProbeBW via DOWN straight into CRUISE.
            ProbeRtt => matches!(to, ProbeBwDown | Startup),
        };
        let t = sim.transitions();
        for (at, from, to) in &t {
            assert!(allowed(*from, *to), "{version:?} {from} -> {to} at {at:?}");
        }
        // A probe starts 2–3 s (random) after DOWN began, or after 63 rounds (2.5 s here),
        // whichever is first (§5.3.3.5.3). A ProbeRTT in between restarts the wait.
        let mut probes = 0;
        let mut down_at = None;
        for (at, _, to) in &t {
            match to {
                ProbeBwDown => down_at = Some(*at),
                ProbeBwRefill => {
                    let wait = (*at - down_at.unwrap()).as_secs_f64();
                    assert!((1.99..=3.01).contains(&wait), "{version:?} probed {wait} s after DOWN");
                    probes += 1;
                }
                _ => {}
            }
        }
        assert!(probes >= 7, "{version:?} only {probes} probes in 30 s");
        // REFILL lasts one round (40 ms here) and is followed by UP.
        for w in t.windows(2) {
            if w[0].2 == ProbeBwRefill && w[1].2 == ProbeBwUp {
                let d = (w[1].0 - w[0].0).as_secs_f64();
                assert!((0.039..=0.09).contains(&d), "{version:?} REFILL lasted {d} s");
            }
        }
    }
}

#[test]
fn probe_bw_up_probes_above_the_bdp_with_cwnd_gain_2_25() {
    let link = issue_link();
    let sim = run(V3, link, 20.0);
    let up: Vec<_> = sim.samples.iter().filter(|s| s.snap.state == BbrState::ProbeBwUp).collect();
    assert!(!up.is_empty());
    assert!(up.iter().all(|s| s.snap.cwnd_gain == 2.25 && s.snap.pacing_gain == 1.25));
    let max_inflight = up.iter().map(|s| s.snap.bytes_in_flight).max().unwrap() as f64;
    assert!(max_inflight > 1.1 * link.bdp(), "UP never put more than the BDP in flight: {max_inflight}");
}

#[test]
fn probe_rtt_every_5_s_for_at_least_200_ms_at_half_the_bdp() {
    for version in [V3, V2] {
        let link = long_link();
        let sim = run(version, link, 30.0);
        let t = sim.transitions();
        let entries: Vec<Duration> = t.iter().filter(|e| e.2 == BbrState::ProbeRtt).map(|e| e.0).collect();
        let exits: Vec<Duration> = t.iter().filter(|e| e.1 == BbrState::ProbeRtt).map(|e| e.0).collect();
        assert!(entries.len() >= 5, "{version:?} {entries:?}");
        // The first is due 5 s after the first RTT sample; later ones 5 s after the previous
        // ProbeRTT ended (its end refreshes the min-RTT stamp).
        assert!(close(entries[0].as_secs_f64(), 5.0 + link.rtt.as_secs_f64(), 0.05), "{entries:?}");
        for (enter, exit) in entries.iter().zip(&exits) {
            let d = (*exit - *enter).as_secs_f64();
            // ≥ 200 ms at the low cwnd, plus the wait for inflight to drop and a round.
            assert!((0.2..=0.2 + 3.0 * link.rtt.as_secs_f64()).contains(&d), "{version:?} ProbeRTT lasted {d}");
        }
        for (exit, next) in exits.iter().zip(entries.iter().skip(1)) {
            let d = (*next - *exit).as_secs_f64();
            assert!(close(d, 5.0, 0.05), "{version:?} {d} s between ProbeRTTs");
        }
        for s in sim.samples.iter().filter(|s| s.snap.state == BbrState::ProbeRtt) {
            let model_bdp = s.snap.bw_bps as f64 / 8.0 * s.snap.min_rtt.unwrap().as_secs_f64();
            let cap = (0.5 * model_bdp).max(4.0 * MSS as f64);
            assert!(s.snap.cwnd_bytes as f64 <= cap + 1.0, "{version:?} ProbeRTT cwnd {} > {cap}", s.snap.cwnd_bytes);
            assert!(s.snap.cwnd_bytes as f64 <= 0.5 * link.bdp() * 1.01, "above half the real BDP");
        }
    }
}

/// Pacing converges to the bottleneck rate and the queue stays small even where a loss-based
/// sender would fill 8 BDPs (RTT 9× the base) or an unlimited buffer.
#[test]
fn paces_at_the_bottleneck_rate_with_a_small_queue() {
    for (version, buffer_bdp) in [(V3, 8.0), (V2, 8.0), (V3, 1e6)] {
        let link = Link::new(70.0, 6, buffer_bdp);
        let sim = run(version, link, 30.0);
        let rate = link.rate_bps as f64;
        for s in sim.samples_between(secs(2.0), secs(30.0)) {
            if s.snap.state == BbrState::ProbeBwCruise {
                // BBR paces at bw × (1 − 1 % margin) in CRUISE.
                let r = s.snap.pacing_rate_bps as f64 / rate;
                assert!(close(r, 0.99, 0.03), "{version:?} cruise pacing at {r} of the link");
            }
        }
        let base = link.rtt.as_secs_f64();
        let p50 = sim.rtt_quantile(secs(5.0), 0.5).as_secs_f64();
        let p95 = sim.rtt_quantile(secs(5.0), 0.95).as_secs_f64();
        // cwnd_gain 2 (2.25 in UP) bounds the queue to ~1 BDP: p95 under 2× the base RTT,
        // and most of the time (CRUISE) there is next to no queue.
        assert!(p50 < 1.25 * base, "{version:?} median RTT {p50} vs base {base}");
        assert!(p95 < 2.0 * base, "{version:?} p95 RTT {p95} vs base {base}");
        let util = sim.utilization(secs(5.0), secs(30.0));
        // ProbeRTT costs ≈ 0.22 s in 5.2 s and DOWN a little more.
        assert!(util > 0.93, "{version:?} utilization {util}");
        assert_eq!(sim.dropped, 0);
    }
}

#[test]
fn loss_cuts_inflight_lo_by_at_most_beta() {
    let sim = run(V3, Link::new(50.0, 40, 1.0).with_loss(0.01), 30.0);
    let mut cuts = 0;
    for w in sim.samples.windows(2) {
        if let (Some(a), Some(b)) = (w[0].snap.inflight_lo, w[1].snap.inflight_lo) {
            if b < a {
                cuts += 1;
                // BBRLossLowerBounds: max(inflight_latest, 0.7 × inflight_lo) — one cut per
                // round, and a 10 ms sample spans less than one 40 ms round.
                assert!(b >= (0.7 * a as f64) as u64, "cut {a} -> {b} deeper than beta");
            }
        }
    }
    assert!(cuts >= 10, "only {cuts} cuts under 1 % loss");
}

#[test]
fn cruise_keeps_15pct_headroom_below_inflight_hi() {
    let sim = run(V3, Link::new(50.0, 40, 0.3), 30.0);
    let mut checked = 0;
    for s in sim.samples.iter().filter(|s| s.snap.state == BbrState::ProbeBwCruise) {
        let Some(hi) = s.snap.inflight_hi else { continue };
        let cap = (hi - ((0.15 * hi as f64) as u64).max(MSS)).max(4 * MSS);
        assert!(s.snap.cwnd_bytes <= cap, "cruise cwnd {} above {cap} (hi {hi})", s.snap.cwnd_bytes);
        checked += 1;
    }
    assert!(checked > 100, "only {checked} cruise samples with a finite inflight_hi");
}

/// The issue's target: QUIC BBR keeps ≥ 80 % of the link under 1 % random loss. On this
/// path a flight is 44 packets, so 2 % of it is less than one packet: for v2, which also
/// judges excess loss per ACK (tcp_bbr2.c `bbr2_adapt_upper_bounds`), any loss seen during a
/// probe ends it and cuts inflight_hi, and its precautionary re-probes then stop at that
/// inflight_hi. It keeps 0.70–0.75 here (seeds 1–3) and must keep ≥ 70 %.
#[test]
fn one_percent_random_loss_keeps_80pct_of_the_link() {
    for (version, floor) in [(V3, 0.8), (V2, 0.7)] {
        for seed in 1..=3 {
            let mut link = issue_link().with_loss(0.01);
            link.seed = seed;
            let util = run(version, link, 30.0).utilization(secs(5.0), secs(30.0));
            println!("{version:?} seed {seed}: {util:.3}");
            assert!(util >= floor, "{version:?} seed {seed}: {util}");
        }
    }
}

/// Above the 2 % loss threshold every probe records the inflight at which loss crossed 2 %
/// as inflight_hi, so BBRv3 backs off (a loss-blind BBRv1 would keep pacing at max_bw).
#[test]
fn five_percent_loss_makes_v3_back_off() {
    let link = issue_link();
    let at_1 = run(V3, link.with_loss(0.01), 30.0);
    let at_5 = run(V3, link.with_loss(0.05), 30.0);
    let u1 = at_1.utilization(secs(5.0), secs(30.0));
    let u5 = at_5.utilization(secs(5.0), secs(30.0));
    assert!(u5 < 0.5 && u5 < u1 - 0.3, "5 % loss: {u5}, 1 %: {u1}");
    let hi_min = at_5.samples.iter().filter_map(|s| s.snap.inflight_hi).min().unwrap();
    assert!((hi_min as f64) < 0.5 * link.bdp(), "inflight_hi stayed at {hi_min}");
}

/// v2's UP ends once min_rtt has passed with inflight above 1.25 × BDP; v3's only when the
/// delivery rate stopped growing for 3 rounds — so v3 probes longer.
#[test]
fn v2_probes_up_for_less_time_than_v3() {
    let mean_up = |version| {
        let t = run(version, long_link(), 30.0).transitions();
        let d: Vec<f64> =
            t.windows(2).filter(|w| w[0].2 == BbrState::ProbeBwUp && w[1].2 == BbrState::ProbeBwDown).map(|w| (w[1].0 - w[0].0).as_secs_f64()).collect();
        d.iter().sum::<f64>() / d.len() as f64
    };
    let (v2, v3) = (mean_up(V2), mean_up(V3));
    // v2: one min_rtt (40 ms) plus the time to build 0.25 BDP of queue at 1.25× (≤ 1 RTT).
    assert!((0.04..=0.09).contains(&v2), "v2 UP {v2}");
    // v3: at least 3 rounds without growth.
    assert!(v3 >= 3.0 * 0.04 && v3 > v2, "v3 UP {v3} v2 {v2}");
}

#[test]
fn factory_builds_a_downcastable_controller_with_pacing_metrics() {
    let telemetry = Telemetry::default();
    assert!(telemetry.snapshot().is_none());
    let t0 = std::time::Instant::now();
    let controller = BbrFactory::new(V2, telemetry.clone()).build(t0, 1200);
    let m = controller.metrics();
    assert_eq!(m.congestion_window, 12_000);
    assert_eq!(controller.initial_window(), 12_000);
    // §5.6.2 (and tcp_bbr2.c bbr_init_pacing_rate_from_rtt): initial pacing = Startup gain
    // (v2: 2.885) × 12000 B / 1 ms.
    assert!(close(m.pacing_rate.unwrap() as f64, 2.885 * 12e6, 0.01 * 12e6));
    assert_eq!(m.send_quantum, Some(2400));
    assert_eq!(m.bandwidth_estimate, None);
    assert_eq!(telemetry.snapshot().unwrap().state, BbrState::Startup);
    let bbr = controller.clone_box().into_any().downcast::<Bbr>().expect("downcast");
    assert_eq!(bbr.version(), V2);

    let sim = run(V3, issue_link(), 2.0);
    let m = sim.bbr.metrics();
    let snap = sim.telemetry.snapshot().unwrap();
    assert_eq!(m.bandwidth_estimate, Some(snap.bw_bps));
    assert!(close((m.pacing_rate.unwrap() * 8) as f64, snap.pacing_rate_bps as f64, 8.0));
    assert_eq!(m.congestion_window, snap.cwnd_bytes);
    assert!(m.ssthresh.is_some(), "set at Startup exit");
    // Events were drained into the sim; none are left behind.
    assert!(sim.telemetry.take_events().is_empty());
    assert!(!sim.events.is_empty());
}

#[test]
fn runs_are_deterministic() {
    let a = run(V3, issue_link().with_loss(0.01), 10.0);
    let b = run(V3, issue_link().with_loss(0.01), 10.0);
    assert_eq!(a.transitions(), b.transitions());
    assert_eq!(a.delivered, b.delivered);
}

#[test]
fn state_names_match_the_kernel_series() {
    use ccbench_kernel_tcp::BbrMode;
    let kernel = |m: BbrMode| serde_json::to_value(m).unwrap().as_str().unwrap().to_string();
    assert_eq!(BbrState::Startup.mode(), kernel(BbrMode::Startup));
    assert_eq!(BbrState::Drain.mode(), kernel(BbrMode::Drain));
    assert_eq!(BbrState::ProbeRtt.mode(), kernel(BbrMode::ProbeRtt));
    for s in [BbrState::ProbeBwDown, BbrState::ProbeBwCruise, BbrState::ProbeBwRefill, BbrState::ProbeBwUp] {
        assert_eq!(s.mode(), kernel(BbrMode::ProbeBw));
        assert!(s.to_string().starts_with(&kernel(BbrMode::ProbeBw)));
    }
    assert_eq!((V2.to_string(), V3.to_string()), ("bbr2".to_string(), "bbr3".to_string()));
    let names: Vec<String> = BbrState::ALL.iter().map(|s| s.to_string()).collect();
    assert_eq!(names, ["STARTUP", "DRAIN", "PROBE_BW_DOWN", "PROBE_BW_CRUISE", "PROBE_BW_REFILL", "PROBE_BW_UP", "PROBE_RTT"]);
}

/// Runs until the controller is in `state`, in 10 ms steps.
fn run_until(sim: &mut Sim, state: BbrState) {
    while sim.bbr.state() != state {
        sim.run_for(secs(0.01));
        assert!(sim.now < secs(60.0), "never reached {state}");
    }
}

/// -06 §5.3.3.6 (and tcp_bbr2.c's `stopped_risky_probe`, so v2 too): after a probe that hit
/// excess loss (here a burst of 20 drops during UP on an 8-BDP buffer), the next UP stops as
/// soon as inflight reaches inflight_hi; that causes no loss here, so REFILL follows within a
/// round instead of 2–3 s later.
#[test]
fn reprobes_at_once_after_a_precautionary_probe() {
    let quick_reprobes = |version| {
        let mut sim = Sim::new(version, long_link());
        run_until(&mut sim, BbrState::ProbeBwUp);
        sim.force_drops = 20;
        sim.run_for(secs(10.0));
        let mut down_at = None;
        let mut quick = 0;
        for (at, _, to) in sim.transitions() {
            match to {
                BbrState::ProbeBwDown => down_at = Some(at),
                BbrState::ProbeBwRefill if (at - down_at.unwrap()) < secs(0.5) => quick += 1,
                _ => {}
            }
        }
        quick
    };
    for version in [V3, V2] {
        assert!(quick_reprobes(version) >= 1, "{version:?}: no precautionary re-probe");
    }
}

/// -06 §5.5.11: a loss episode later found spurious is undone — the short-term bound it
/// caused is lifted and cwnd restored.
#[test]
fn a_spurious_loss_episode_is_undone() {
    let mut sim = Sim::new(V3, long_link());
    sim.run_for(secs(5.5)); // past the first ProbeRTT, whose exit leads into CRUISE
    run_until(&mut sim, BbrState::ProbeBwCruise);
    let before = sim.telemetry.snapshot().unwrap();
    assert_eq!(before.inflight_lo, None);
    sim.force_drops = 5;
    sim.run_for(secs(0.2));
    let cut = sim.telemetry.snapshot().unwrap();
    assert_eq!(cut.state, BbrState::ProbeBwCruise);
    assert!(cut.inflight_lo.is_some(), "the loss round cut inflight_lo");
    Controller::on_spurious_congestion_event(&mut sim.bbr);
    let undone = sim.telemetry.snapshot().unwrap();
    assert_eq!(undone.inflight_lo, None, "restored to the pre-loss (unbounded) value");
    assert!(undone.cwnd_bytes >= cut.cwnd_bytes);
}

/// -06 §5.5.11 with noq's spurious report (vendor/noq-proto PATCH.md, "Lost packets' memory"):
/// a report comes only when no declared loss is pending, so it covers every loss since none
/// was, across recoveries. Two loss episodes, the first cutting inflight_lo, the second a new
/// recovery after the first has ended: while the transport remembers both, the report restores
/// the model from before the first (unbounded); once it has forgotten the first (a real loss),
/// only what came after it. The controller that saved again at each recovery restored the cut.
#[test]
fn a_spurious_report_undoes_every_loss_still_pending_across_recoveries() {
    let undone_after_two_episodes = |memory: Duration| {
        let mut sim = Sim::new(V3, long_link());
        sim.bbr.on_loss_memory(memory);
        sim.run_for(secs(5.5)); // past the first ProbeRTT, whose exit leads into CRUISE
        run_until(&mut sim, BbrState::ProbeBwCruise);
        assert_eq!(sim.telemetry.snapshot().unwrap().inflight_lo, None);
        sim.force_drops = 5;
        sim.run_for(secs(0.2)); // 5 RTTs: the recovery is over
        assert!(sim.telemetry.snapshot().unwrap().inflight_lo.is_some(), "the loss round cut inflight_lo");
        sim.force_drops = 1;
        sim.run_for(secs(0.2));
        assert_eq!(sim.bbr.state(), BbrState::ProbeBwCruise, "the cycle moved on: the test proves nothing");
        Controller::on_spurious_congestion_event(&mut sim.bbr);
        sim.telemetry.snapshot().unwrap().inflight_lo
    };
    assert_eq!(undone_after_two_episodes(secs(10.0)), None, "both losses pending: back to before the first");
    assert!(undone_after_two_episodes(secs(0.1)).is_some(), "the first loss forgotten (real): its cut stays");
}

/// The same, when the transport forgets the first loss (it was real) before proving the
/// second spurious: the undo restores the model from just before the second, keeping the
/// first one's cut (the report no longer covers it).
#[test]
fn a_spurious_report_after_a_real_loss_is_forgotten_keeps_the_real_cut() {
    let mut sim = Sim::new(V3, long_link());
    sim.bbr.on_loss_memory(secs(0.3));
    sim.run_for(secs(5.5)); // past the first ProbeRTT, whose exit leads into CRUISE
    run_until(&mut sim, BbrState::ProbeBwCruise);
    sim.force_drops = 5;
    sim.run_for(secs(0.2));
    let mut before_second = sim.telemetry.snapshot().unwrap();
    assert!(before_second.inflight_lo.is_some(), "the first loss round cut inflight_lo");
    sim.force_drops = 1;
    loop {
        sim.run_for(secs(0.001));
        let now = sim.telemetry.snapshot().unwrap();
        if now.lost_bytes > before_second.lost_bytes {
            break;
        }
        before_second = now;
    }
    sim.run_for(secs(0.15)); // the first losses forgotten (sent 0.35 s ago), the second not
    assert_eq!(sim.bbr.state(), BbrState::ProbeBwCruise, "the cycle moved on: the test proves nothing");
    Controller::on_spurious_congestion_event(&mut sim.bbr);
    let undone = sim.telemetry.snapshot().unwrap();
    assert_eq!(undone.inflight_lo, before_second.inflight_lo, "back to just before the second loss: the first, real, cut stays");
}

/// v2's Startup loss exit is tcp_bbr2.c's (`bbr2_check_loss_too_high_in_startup`): 8
/// loss-marking ACKs in a round spent in recovery, with the round-ending ACK's sample over
/// 2 %. Random 1 % loss alone rarely meets that, so on a deep buffer Startup ends on the
/// bandwidth plateau, at the link rate, with inflight_hi unset. (draft-cardwell-02's 3 lost
/// ranges per round let a 1 %-loss flow leave Startup at half the link.)
#[test]
fn v2_random_loss_alone_does_not_end_startup() {
    for seed in 1..=8 {
        let mut link = Link::new(50.0, 20, 8.0).with_loss(0.01);
        link.seed = seed;
        let mut sim = Sim::new(V2, link);
        run_until(&mut sim, BbrState::Drain);
        let at_exit = &sim.on_entry.iter().find(|(_, s)| s.state == BbrState::Drain).unwrap().1;
        assert!(at_exit.lost_bytes > 0, "seed {seed}: no random loss in Startup");
        assert_eq!(at_exit.inflight_hi, None, "seed {seed}: the loss exit fired");
        let share = at_exit.max_bw_bps as f64 / link.rate_bps as f64;
        assert!(share > 0.9, "seed {seed}: left Startup at {share:.2} of the link");
    }
}

/// v2 leaves cwnd alone on entering fast recovery (tcp_bbr2.c: `bbr2_main` has no
/// packet conservation); its response to a loss is the short-term model, at the round's end.
/// In CRUISE on a clean deep buffer, cwnd (2 × BDP) is about twice the inflight (1 BDP), so
/// draft-cardwell-02's "cwnd = inflight + 1 packet" would halve it.
#[test]
fn v2_fast_recovery_leaves_cwnd_alone() {
    let mut sim = Sim::new(V2, long_link());
    sim.run_for(secs(5.5)); // past the first ProbeRTT, whose exit leads into CRUISE
    run_until(&mut sim, BbrState::ProbeBwCruise);
    let mut before = sim.telemetry.snapshot().unwrap();
    assert!(before.cwnd_bytes as f64 > 1.5 * before.bytes_in_flight as f64, "{before:?}");
    sim.force_drops = 1;
    loop {
        sim.run_for(secs(0.001));
        let now = sim.telemetry.snapshot().unwrap();
        if now.lost_bytes > before.lost_bytes {
            assert_eq!(now.state, BbrState::ProbeBwCruise);
            assert!(now.cwnd_bytes >= before.cwnd_bytes, "cwnd {} -> {} on entering recovery", before.cwnd_bytes, now.cwnd_bytes);
            break;
        }
        before = now;
        assert!(sim.now < secs(7.0), "the drop was never declared lost");
    }
}

/// Undoing a spurious loss episode: -06 (v3) also returns to the state the episode
/// interrupted — here Startup, left through the loss exit on a shallow buffer, and undone at
/// once. Neither tcp_bbr2.c (`bbr2_undo_cwnd`: bounds and cwnd only) nor draft-cardwell-02
/// does that, so v2 stays out of Startup.
#[test]
fn undo_returns_to_startup_in_v3_only() {
    for version in [V3, V2] {
        let mut sim = Sim::new(version, Link::new(50.0, 40, 0.3));
        sim.pause_on_state_change = true;
        while sim.bbr.state() == BbrState::Startup {
            sim.run_for(secs(0.01));
        }
        assert_eq!(sim.bbr.state(), BbrState::Drain);
        assert!(sim.telemetry.snapshot().unwrap().lost_bytes > 0, "{version:?} left Startup before any loss");
        Controller::on_spurious_congestion_event(&mut sim.bbr);
        let back = sim.bbr.state() == BbrState::Startup;
        assert_eq!(back, version == V3, "{version:?} state after the undo: {}", sim.bbr.state());
    }
}

/// tcp_bbr2.c `bbr2_start_bw_probe_cruise`: entering CRUISE bounds inflight_lo by
/// inflight_hi, so a short-term bound left from DOWN never lets CRUISE above the long-term one.
#[test]
fn v2_enters_cruise_with_inflight_lo_at_most_inflight_hi() {
    let mut checked = 0;
    for seed in 1..=2 {
        // A small BDP (35 packets) under 1 % loss: probes often end too high, cutting
        // inflight_hi below a short-term bound set earlier.
        let mut link = issue_link().with_loss(0.01);
        link.seed = seed;
        let sim = run(V2, link, 20.0);
        for (_, s) in sim.on_entry.iter().filter(|(_, s)| s.state == BbrState::ProbeBwCruise) {
            if let (Some(lo), Some(hi)) = (s.inflight_lo, s.inflight_hi) {
                assert!(lo <= hi, "seed {seed}: CRUISE entered with inflight_lo {lo} > inflight_hi {hi}");
                checked += 1;
            }
        }
    }
    assert!(checked >= 5, "only {checked} CRUISE entries with both bounds set");
}

/// The snapshot carries BBR.cycle_count (§5.3.3.9 BBRAdvanceMaxBwFilter), what conform's A.14
/// counts the max_bw filter's advances by: it starts at 0, never falls, and grows at most once
/// per DOWN (at its round's end, §5.3.3.9: not when that round's sample is app-limited or
/// PROBE_RTT interrupted it; 59 advances for 62 DOWNs here).
#[test]
fn the_snapshot_counts_the_max_bw_filters_advances() {
    let sim = run(V3, issue_link(), 20.0);
    let counts: Vec<u64> = sim.samples.iter().map(|s| s.snap.cycle_count).collect();
    assert_eq!(counts[0], 0);
    assert!(counts.windows(2).all(|w| w[1] >= w[0]), "cycle_count fell");
    let downs = sim.transitions().iter().filter(|(_, _, to)| *to == BbrState::ProbeBwDown).count() as u64;
    let last = *counts.last().unwrap();
    assert!(downs >= 2 && last <= downs && last * 10 >= downs * 9, "{last} advances for {downs} DOWNs");
}
