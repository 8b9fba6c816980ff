//! A run's sender series (`tcp.csv.gz`) read back as what the conformance suite judges (a
//! [`Trace`]) and as qlog samples. Kernel BBR's rows carry TCP_CC_INFO (bw, min_rtt, gains,
//! the mode inferred from them, no phase); QUIC BBR's carry its own state.

use std::collections::BTreeMap;
use std::path::Path;
use std::time::Duration;

use ccbench::series::{for_each_row, TcpRow};
use ccbench_conform::qlog;
use ccbench_conform::trace::{Mode, PathFacts, Phase, Point, Trace};

/// Bytes per packet in "cwnd ≥ 4 packets": TCP's cwnd is in segments and QUIC's series gives it
/// in packets of the path MTU; both are multiplied by this and judged against it.
pub(crate) const PACKET: u64 = 1448;

/// Each socket's rows of one run, in time order, by socket name (`flow-0`, …).
pub(crate) fn rows(file: &Path) -> anyhow::Result<BTreeMap<String, Vec<TcpRow>>> {
    let mut by: BTreeMap<String, Vec<TcpRow>> = BTreeMap::new();
    for_each_row(file, |r: TcpRow| by.entry(r.socket.clone()).or_default().push(r))?;
    for v in by.values_mut() {
        v.sort_by_key(|r| r.t_us);
    }
    Ok(by)
}

fn us(v: u32) -> Option<Duration> {
    (v > 0).then(|| Duration::from_micros(u64::from(v)))
}

/// One socket's rows as a trace on `path`.
pub(crate) fn trace(rows: &[TcpRow], path: PathFacts, sample_interval: Duration) -> Trace {
    let t0 = rows.first().map_or(0, |r| r.t_us);
    let points = rows
        .iter()
        .map(|r| Point {
            t: Duration::from_micros(r.t_us - t0),
            mode: r.bbr_mode.as_deref().and_then(Mode::parse),
            phase: r.bbr_phase.as_deref().and_then(Phase::parse),
            bw_bps: r.bbr_bw_bps.map(|b| b as f64),
            pacing_gain: r.bbr_pacing_gain,
            cwnd_gain: r.bbr_cwnd_gain,
            cwnd_bytes: Some(u64::from(r.cwnd) * PACKET),
            inflight_bytes: r.bytes_in_flight,
            rtt: r.latest_rtt_us.and_then(us).or(us(r.rtt_us)),
            min_rtt: r.bbr_min_rtt_us.and_then(us),
            delivery_rate_bps: Some(r.delivery_rate_bps as f64),
            lost_bytes: Some(r.bytes_retrans),
            delivered_bytes: Some(r.bytes_acked),
            pacing_rate_bps: r.pacing_rate_bps.map(|b| b as f64),
            // Not in the series yet: inflight_longterm assertions are not observable on them.
            inflight_longterm_bytes: None,
        })
        .collect();
    Trace { path, sample_interval, points }
}

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
            }
        })
        .collect()
}
