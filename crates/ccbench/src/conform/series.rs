//! A run's sender series (`tcp.csv.gz`) read back as what the conformance suite judges (the
//! library's `state_trace`) and as qlog samples.

use std::time::Duration;

use ccbench::series::TcpRow;
pub(crate) use ccbench::state_trace::{rows, trace, us, PACKET};
use ccbench_conform::qlog;
use ccbench_model::workload::BbrEvent;

/// One QUIC connection's rows as qlog samples, with its controller's own state changes
/// (`events`, its `bbr_events`: their round counts go with the state change a sample shows).
pub(crate) fn qlog_samples(rows: &[TcpRow], events: &[BbrEvent]) -> Vec<qlog::Sample> {
    let t0 = rows.first().map_or(0, |r| r.t_us);
    let mut lost = 0u64;
    let mut prev_t_us = None;
    rows.iter()
        .map(|r| {
            lost = lost.max(u64::from(r.lost));
            let state = r.bbr_mode.as_ref().map(|m| match &r.bbr_phase {
                Some(p) if m == "PROBE_BW" => format!("PROBE_BW_{p}"),
                _ => m.clone(),
            });
            // The last recorded change into this state since the previous sample.
            let since = prev_t_us.replace(r.t_us);
            let change = state.as_ref().and_then(|st| events.iter().rev().find(|e| &e.to == st && e.t_us <= r.t_us && since.is_none_or(|p| e.t_us > p)));
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
                state_round: change.and_then(|e| e.round),
                state_full_bw_round: change.and_then(|e| e.full_bw_round),
            }
        })
        .collect()
}
