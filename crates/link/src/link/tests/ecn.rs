//! ECN through the link: each AQM marks instead of dropping (and still drops what it must),
//! the step marker for ECT(1), and the path's ECN faults.

use super::*;
use crate::ecn::{Ecn, EcnFault};

/// 12 Mbit/s (1 ms per 1500 B packet), two arrivals per ms from t = 0, every packet carrying
/// `ecn(id)`: a queue growing by one packet per ms, as in the CoDel tests. Returns the link and
/// (ms of service start, id) of each packet delivered CE, and (ms, id) of each AQM drop.
/// (ms, packet id) pairs.
type Events = Vec<(u64, u64)>;

fn two_x(aqm: Aqm, ms: u64, ecn: impl Fn(u64) -> Ecn) -> (Link<u64>, Events, Events) {
    let mut l = Link::new(DirectionConfig { rate: Rate::mbps(12), aqm, ..Default::default() }, 0);
    let (mut marks, mut drops) = (Vec::new(), Vec::new());
    for m in 0..ms {
        for id in [2 * m, 2 * m + 1] {
            l.enqueue_ecn(at(m * MS), 1500, 0, ecn(id), id).expect("accepted");
        }
        while let Some(d) = l.dequeue(at(m * MS)) {
            if d.ecn == Ecn::Ce {
                marks.push(((d.service_start - T0).as_nanos() / 1_000_000, d.packet));
            }
        }
        while let Some(d) = l.take_dropped() {
            drops.push((m, d.packet));
        }
    }
    (l, marks, drops)
}

fn codel_ecn() -> Aqm {
    Aqm::Codel(crate::Codel { ecn: true, ..Default::default() })
}

#[test]
fn codel_marks_ect_packets_where_it_would_drop_on_the_control_law_schedule() {
    // RFC 8289's control law as in first_drops_follow_the_rfc_control_law, but nothing leaves
    // the queue: one packet starts service per ms, and the packet the law picks (the one
    // starting at the first ms at or after drop_next: 109, 209, 279.71, 337.45, 387.45,
    // 432.17) is marked CE and sent.
    let (l, marks, drops) = two_x(codel_ecn(), 440, |_| Ecn::Ect0);
    assert_eq!(drops, vec![]);
    assert_eq!(marks, vec![(109, 109), (209, 209), (280, 280), (338, 338), (388, 388), (433, 433)]);
    assert_eq!(l.stats().ce_marks, 6);
    assert_eq!(l.stats().drops_aqm, 0);
}

#[test]
fn codel_with_ecn_still_drops_not_ect_packets_and_without_ecn_drops_ect_ones() {
    // The same drops as the RFC test: ECN on changes nothing for Not-ECT traffic, and ECN
    // off changes nothing for ECT traffic.
    let rfc = vec![(109, 109), (209, 210), (280, 282), (338, 341), (388, 392), (433, 438)];
    let (l, marks, drops) = two_x(codel_ecn(), 440, |_| Ecn::NotEct);
    assert_eq!((drops, marks, l.stats().ce_marks), (rfc.clone(), vec![], 0));
    let (l, marks, drops) = two_x(Aqm::codel(), 440, |_| Ecn::Ect0);
    assert_eq!((drops, marks, l.stats().ce_marks), (rfc, vec![], 0));
}

#[test]
fn a_full_buffer_drops_ect_packets_whatever_the_ecn_setting() {
    // RFC 3168 section 7: marking is no answer to a full buffer.
    let mut l = Link::new(DirectionConfig { rate: Rate::mbps(12), buffer: Buffer::Packets(10), aqm: codel_ecn(), ..Default::default() }, 0);
    let refused = (0..20).filter(|&i| l.enqueue_ecn(T0, 1500, 0, Ecn::Ect0, i).is_err()).count();
    assert_eq!(refused, 9, "one in service, ten waiting");
    assert_eq!((l.stats().drops_buffer, l.stats().ce_marks), (9, 0));
}

#[test]
fn the_step_marker_marks_ect1_past_its_threshold_and_nothing_else() {
    // CoDel's own law never acts (100 s target); the step marks ECT(1) packets that waited
    // more than 1 ms. Packet j waits ceil(j/2) ms: odd ids are ECT(1), even ones ECT(0).
    let aqm = Aqm::Codel(crate::Codel { target_ns: 100 * SEC, ce_threshold_ns: Some(MS), ..Default::default() });
    let (l, marks, drops) = two_x(aqm, 20, |id| if id % 2 == 1 { Ecn::Ect1 } else { Ecn::Ect0 });
    assert!(drops.is_empty());
    // Packet j starts at j ms having waited j - floor(j/2) ms; > 1 ms from j = 3 on (3 waits 2);
    // the last one, started at 19 ms, is still on the wire.
    let want: Vec<_> = (3..19).filter(|j| j % 2 == 1).map(|j| (j, j)).collect();
    assert_eq!(marks, want);
    assert_eq!(l.stats().ce_marks, want.len() as u64 + 1);
    // The same through FQ-CoDel (one flow here).
    let aqm = Aqm::FqCodel(crate::FqCodel { target_ns: 100 * SEC, ce_threshold_ns: Some(MS), ..Default::default() });
    let (_, marks, _) = two_x(aqm, 20, |id| if id % 2 == 1 { Ecn::Ect1 } else { Ecn::Ect0 });
    assert_eq!(marks, want);
}

#[test]
fn fq_codel_marks_instead_of_dropping_with_ecn_on() {
    let aqm = |ecn| Aqm::FqCodel(crate::FqCodel { ecn, ..Default::default() });
    let (l, marks, drops) = two_x(aqm(true), 440, |_| Ecn::Ect0);
    assert_eq!((drops.len(), marks.len() as u64), (0, l.stats().ce_marks));
    assert_eq!(marks, vec![(109, 109), (209, 209), (280, 280), (338, 338), (388, 388), (433, 433)]);
    let (l, marks, drops) = two_x(aqm(true), 440, |_| Ecn::NotEct);
    assert_eq!((marks.len(), l.stats().ce_marks, drops.len()), (0, 0, 6));
}

#[test]
fn faults_rewrite_the_field_before_the_aqm_sees_it() {
    let run = |fault, ecn| {
        let mut l = Link::new(DirectionConfig { rate: Rate::mbps(12), aqm: codel_ecn(), ecn_fault: Some(fault), ..Default::default() }, 0);
        let r = l.enqueue_ecn(T0, 1500, 0, ecn, 1u8);
        let out = r.ok().map(|_| l.dequeue(FAR).expect("delivered").ecn);
        (out, l.stats().clone())
    };
    // Bleaching: the receiver never sees ECT; CoDel must drop.
    assert_eq!(run(EcnFault::Bleach, Ecn::Ect0).0, Some(Ecn::NotEct));
    assert_eq!(run(EcnFault::Bleach, Ecn::Ce).0, Some(Ecn::NotEct));
    // CE on everything, counted as the path's doing, not the AQM's.
    let (out, s) = run(EcnFault::CeAll, Ecn::NotEct);
    assert_eq!((out, s.ce_marks), (Some(Ecn::Ce), 0));
    // ECN-capable packets dropped, as loss; Not-ECT passes.
    let (out, s) = run(EcnFault::DropEct, Ecn::Ect1);
    assert_eq!((out, s.drops_loss, s.packets_in), (None, 1, 1));
    assert_eq!(run(EcnFault::DropEct, Ecn::NotEct).0, Some(Ecn::NotEct));
    // Bleached traffic through CoDel with ECN: drops, as for Not-ECT.
    let mut l = Link::new(DirectionConfig { rate: Rate::mbps(12), aqm: codel_ecn(), ecn_fault: Some(EcnFault::Bleach), ..Default::default() }, 0);
    for m in 0..250u64 {
        for id in [2 * m, 2 * m + 1] {
            l.enqueue_ecn(at(m * MS), 1500, 0, Ecn::Ect0, id).unwrap();
        }
        while l.dequeue(at(m * MS)).is_some() {}
        while l.take_dropped().is_some() {}
    }
    assert_eq!((l.stats().ce_marks, l.stats().drops_aqm), (0, 2));
}

#[test]
fn dualpi2_keeps_an_l_flow_at_the_step_threshold() {
    // An unresponsive ECT(1) sender at twice the rate: every L packet that waited more than
    // the 1 ms step is marked, none dropped (no classic traffic, so p' stays 0).
    let (l, marks, drops) = two_x(Aqm::DualPi2(crate::DualPi2::default()), 100, |_| Ecn::Ect1);
    assert!(drops.is_empty());
    // Packet j waits j - floor(j/2) ms: more than 1 ms from j = 3 on.
    assert_eq!(marks.first(), Some(&(3, 3)));
    // Marked when service starts (3 to 99 ms); the last is still on the wire.
    assert_eq!(marks.len(), 100 - 3 - 1);
    assert_eq!(l.stats().ce_marks, 97);
}
