//! A run's sender series (`tcp.csv.gz`) read back as what the conformance suite judges (the
//! library's `state_trace`) and as qlog samples.

use std::time::Duration;

use ccbench::series::TcpRow;
pub(crate) use ccbench::state_trace::{rows, trace, us, PACKET};
use ccbench_conform::qlog;
use ccbench_model::workload::BbrEvent;

/// One QUIC connection's rows as qlog samples.
pub(crate) fn qlog_samples(rows: &[TcpRow]) -> Vec<qlog::Sample> {
    let t0 = rows.first().map_or(0, |r| r.t_us);
    let mut lost = 0u64;
    rows.iter()
        .map(|r| {
            lost = lost.max(u64::from(r.lost));
            let state = r.bbr_mode.as_ref().map(|m| match &r.bbr_phase {
                Some(p) if m == "PROBE_BW" => format!("PROBE_BW_{p}"),
                _ => m.clone(),
            });
            qlog::Sample {
                t: Duration::from_micros(r.t_us - t0),
                cwnd_bytes: r.cwnd_bytes,
                bytes_in_flight: r.bytes_in_flight,
                smoothed_rtt: us(r.rtt_us),
                latest_rtt: r.latest_rtt_us.and_then(us),
                min_rtt: us(r.min_rtt_us),
                pacing_rate_bps: r.pacing_rate_bps,
                state,
                lost_packets: lost,
                round_count: r.bbr_round_count,
            }
        })
        .collect()
}

/// The connection's controller's own state changes (`events`, its `bbr_events`, timed from the
/// run's epoch), timed as its `rows` are: from their first row.
pub(crate) fn qlog_changes(rows: &[TcpRow], events: &[BbrEvent]) -> Vec<qlog::StateChange> {
    let t0 = rows.first().map_or(0, |r| r.t_us);
    events
        .iter()
        .map(|e| qlog::StateChange {
            t: Duration::from_micros(e.t_us.saturating_sub(t0)),
            old: e.from.clone(),
            new: e.to.clone(),
            round: e.round,
            full_bw_round: e.full_bw_round,
        })
        .collect()
}
