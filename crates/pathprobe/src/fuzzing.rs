//! The fuzz entry for probe datagrams. It lives apart from `wire` because it drives the
//! estimators too, and `estimate` reads `wire`'s types: kept inside `wire`, it closed an import
//! cycle (issue 29 §5).

use crate::estimate;
use crate::wire::{parse, parse_for, Message};

/// The fuzz harness, shared by the cargo-fuzz target (`fuzz/fuzz_targets/probe_packet.rs`) and
/// the stable tests: parses `data` as either half would, and checks that whatever parses
/// encodes back to the same message and feeds the estimators without a panic.
#[doc(hidden)]
pub fn fuzz_datagram(data: &[u8]) {
    let Some((token, message)) = parse(data) else { return };
    assert_eq!(parse(&message.encode(&token)), Some((token, message)), "re-encoding changed the message");
    assert!(parse_for(data, &token).is_some());
    match message {
        Message::Train { seq, count, sent_ns, .. } => {
            let mut stats = estimate::TrainStats::new(count);
            stats.record(seq, u64::from(seq), sent_ns, data.len() as u32);
            stats.record(seq.wrapping_add(1), u64::MAX, 0, u32::MAX);
            let _ = estimate::stretched(&stats.to_wire());
            let _ = estimate::dispersion_rate_bps(&stats.to_wire());
            let _ = estimate::LossEstimate::new(count, stats.received());
        }
        Message::Report { stats, .. } => {
            let _ = estimate::dispersion_rate_bps(&stats);
            let _ = estimate::LossEstimate::new(stats.received / 2, stats.received);
        }
        _ => {}
    }
}
