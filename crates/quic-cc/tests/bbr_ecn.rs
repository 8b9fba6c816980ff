//! BBR's ECN response on the virtual clock: Linux's v3 rules (google/bbr `v3`,
//! net/ipv4/tcp_bbr.c: `bbr_update_ecn_alpha`, `bbr_is_inflight_too_high`,
//! `bbr_handle_inflight_too_high`, `bbr_adapt_lower_bounds`, `bbr_check_ecn_too_high_in_startup`)
//! through an L4S step marker (RFC 9332 §5.1's 1 ms step), each checked against the same
//! controller with its response turned off (`ecn_factor = 0`, the kernel's own switch), so
//! that no check can pass without the response.

mod sim;

use std::time::{Duration, Instant};

use ccbench_quic_cc::{Bbr, BbrParams, BbrState, BbrVersion, Controller, EcnCodepoint, Telemetry};
use sim::{Link, Sim, MSS};

fn ms(m: u64) -> Duration {
    Duration::from_millis(m)
}

fn sim_with(version: BbrVersion, p: BbrParams, link: Link) -> Sim<Bbr> {
    let telemetry = Telemetry::default();
    let t0 = Instant::now();
    let bbr = Bbr::with_params(version, p, MSS as u16, t0, telemetry.clone(), 0);
    Sim::with_controller(bbr, telemetry, t0, link)
}

fn ignoring_marks(version: BbrVersion) -> BbrParams {
    BbrParams { ecn_factor: 0.0, ..BbrParams::for_version(version) }
}

#[test]
fn bbr_sends_ect1_as_an_l4s_sender_and_ect0_when_told() {
    let t0 = Instant::now();
    for version in [BbrVersion::V2, BbrVersion::V3] {
        let bbr = Bbr::new(version, 1200, t0, Telemetry::default());
        assert_eq!(Controller::ecn_codepoint(&bbr), EcnCodepoint::Ect1, "{version}");
        let classic = Bbr::with_params(version, BbrParams { ecn_l4s: false, ..BbrParams::for_version(version) }, 1200, t0, Telemetry::default(), 0);
        assert_eq!(Controller::ecn_codepoint(&classic), EcnCodepoint::Ect0, "{version}");
    }
    let p = BbrParams::for_version(BbrVersion::V3);
    // tcp_bbr.c's defaults.
    assert_eq!((p.ecn_alpha_gain, p.ecn_alpha_init, p.ecn_thresh, p.full_ecn_count, p.ecn_reprobe_gain), (1.0 / 16.0, 1.0, 0.5, 2, 0.5));
    assert!((p.ecn_factor - 1.0 / 3.0).abs() < 1e-12);
    assert_eq!(p.ecn_max_rtt, Some(ms(5)));
}

struct Run {
    share: f64,
    queue_p95: Duration,
    queue_p999: Duration,
    dropped: u64,
    marked: u64,
    alpha: f64,
    /// The largest inflight_hi over the measured window, in BDPs (`None`: never set).
    inflight_hi_max_bdp: Option<f64>,
}

/// One flow at 100 Mbit/s, 20 ms, a 4-BDP drop-tail buffer, a 1 ms step marker, 10 s; the
/// figures over the last 8 s.
fn through_step_marker(version: BbrVersion, p: BbrParams) -> Run {
    let link = Link::new(100.0, 20, 4.0);
    let mut sim = sim_with(version, p, link);
    sim.ce_threshold = Some(ms(1));
    sim.run_for(Duration::from_secs(2));
    let (delivered, dropped, marked) = (sim.delivered, sim.dropped, sim.ce_marked);
    let from = sim.now;
    sim.run_for(Duration::from_secs(8));
    let mut delays: Vec<Duration> = sim.queue_delays.iter().filter(|(t, _)| *t >= from).map(|(_, d)| *d).collect();
    delays.sort();
    let inflight_hi_max_bdp = sim.samples_between(from, sim.now).filter_map(|s| s.snap.inflight_hi).max().map(|hi| hi as f64 / link.bdp());
    Run {
        share: (sim.delivered - delivered) as f64 / 8.0 / link.bytes_per_sec(),
        queue_p95: delays[delays.len() * 95 / 100],
        queue_p999: delays[delays.len() * 999 / 1000],
        dropped: sim.dropped - dropped,
        marked: sim.ce_marked - marked,
        alpha: sim.bbr.ecn_alpha(),
        inflight_hi_max_bdp,
    }
}

fn show(label: &str, r: &Run) {
    println!(
        "{label}: {:.1} % of the link, queue p95 {:?} p99.9 {:?}, {} drops, {} CE, α {:.3}, inflight_hi max {:?} BDP",
        r.share * 100.0,
        r.queue_p95,
        r.queue_p999,
        r.dropped,
        r.marked,
        r.alpha,
        r.inflight_hi_max_bdp
    );
}

/// The response through a 1 ms step: the queue's p95 stays within a millisecond of the step
/// at most of the link's rate, inflight_hi is held near the BDP by the marks, and α follows
/// the marked fraction down from 1. The same controller ignoring the marks never learns an
/// inflight_hi and keeps a queue several times deeper: its cwnd (2 BDP) and probing decide
/// the queue, not the marks.
#[test]
fn through_a_step_marker_the_marks_hold_inflight_hi_and_the_queue() {
    for version in [BbrVersion::V3, BbrVersion::V2] {
        let answered = through_step_marker(version, BbrParams::for_version(version));
        show(&format!("{version} answering"), &answered);
        let ignored = through_step_marker(version, ignoring_marks(version));
        show(&format!("{version} ignoring"), &ignored);
        assert!(answered.marked > 0 && ignored.marked > 0, "{version}: the step marked");
        assert_eq!(answered.dropped, 0, "{version}");
        assert!(answered.share >= 0.85, "{version}: {:.3} of the link", answered.share);
        assert!(answered.alpha > 0.0 && answered.alpha < 0.9, "{version}: α {:.3}", answered.alpha);
        let hi = answered.inflight_hi_max_bdp.expect("the marks set inflight_hi");
        assert!(hi < 1.6, "{version}: inflight_hi up to {hi:.2} BDP");
        assert!(ignored.inflight_hi_max_bdp.is_none_or(|h| h > hi), "{version}: ignoring, inflight_hi {:?}", ignored.inflight_hi_max_bdp);
        assert!(answered.queue_p95 < ms(2), "{version}: {:?}", answered.queue_p95);
        match version {
            // v3 reprobes as soon as a marked cycle ends, so it lives near the step; ignoring
            // the marks, its 2-BDP cwnd holds ~12 ms of queue.
            BbrVersion::V3 => assert!(ignored.queue_p95 > answered.queue_p95 * 4, "{:?} against {:?}", ignored.queue_p95, answered.queue_p95),
            // v2 (no reprobe) cruises below the BDP between probes either way; the marks cut
            // its probes short, so the difference is in the queue's tail.
            BbrVersion::V2 => assert!(ignored.queue_p999 > answered.queue_p999 + ms(1), "{:?} against {:?}", ignored.queue_p999, answered.queue_p999),
        }
    }
}

/// `bbr_check_ecn_too_high_in_startup`: with every packet marked, Startup ends once two
/// consecutive rounds were at least half marked, long before the bandwidth plateau would end
/// it; ignoring the marks, Startup runs to the plateau.
#[test]
fn two_marked_rounds_end_startup() {
    let exit_round = |p: BbrParams| {
        let link = Link::new(100.0, 20, 4.0);
        let mut sim = sim_with(BbrVersion::V3, p, link);
        sim.ce_threshold = Some(Duration::ZERO);
        sim.run_for(Duration::from_secs(2));
        sim.on_entry.iter().find(|(_, s)| s.state != BbrState::Startup).map(|(_, s)| s.round_count)
    };
    let answered = exit_round(BbrParams::for_version(BbrVersion::V3)).expect("Startup ended");
    let ignored = exit_round(ignoring_marks(BbrVersion::V3)).expect("Startup ended");
    println!("Startup left at round {answered} answering marks, {ignored} ignoring them");
    assert!(answered <= 4, "round {answered}");
    assert!(ignored > answered + 3, "{ignored} against {answered}");
}

/// tcp_bbr.c's ECN gate: with ECT(0) (no L4S identifier) the marks count only below
/// `bbr_ecn_max_rtt_us` (5 ms); above it the flow is never ECN-eligible.
#[test]
fn with_ect0_marks_count_only_on_a_low_rtt_path() {
    let classic = BbrParams { ecn_l4s: false, ..BbrParams::for_version(BbrVersion::V3) };
    for (rtt_ms, eligible) in [(2u64, true), (20, false)] {
        let mut sim = sim_with(BbrVersion::V3, classic, Link::new(100.0, rtt_ms, 4.0));
        sim.ce_threshold = Some(ms(1));
        sim.run_for(Duration::from_secs(1));
        assert!(sim.ce_marked > 0);
        assert_eq!(sim.bbr.ecn_eligible(), eligible, "{rtt_ms} ms");
        assert_eq!(sim.bbr.ecn_alpha() < 1.0, eligible, "{rtt_ms} ms: α {}", sim.bbr.ecn_alpha());
    }
}
