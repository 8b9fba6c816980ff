//! A run's sender series (`tcp.csv.gz`) read back as the state trace the conformance suite
//! judges ([`Trace`]): kernel BBR's rows carry TCP_CC_INFO (bw, min_rtt, gains, the mode
//! inferred from them, no phase); QUIC BBR's carry its own state, the draft's whole model, and
//! its flow's `bbr_events` in result.json its own transitions with their round counts. Every
//! controller's rows carry its cwnd and ssthresh (what the CUBIC suite judges).

use std::collections::BTreeMap;
use std::path::Path;
use std::time::Duration;

use ccbench_conform::trace::{Mode, PathFacts, Phase, Point, StateEvent, Trace};
use ccbench_model::workload::BbrEvent;

use crate::series::{for_each_row, TcpRow};

/// Bytes per packet in "cwnd ≥ 4 packets": TCP's cwnd is in segments and QUIC's series gives it
/// in packets of the path MTU; both are multiplied by this and judged against it.
pub const PACKET: u64 = 1448;

/// TCP's "not yet set" ssthresh, `TCP_INFINITE_SSTHRESH` (what the kernel's TCP_INFO shows
/// before the first slow start ends, and what the series writes for a QUIC controller with
/// none or an unbounded one).
const INFINITE_SSTHRESH: u32 = 0x7fff_ffff;

/// The series' `ssthresh` (TCP: segments; QUIC: packets of the path MTU, rounded down, as its
/// `cwnd` is) in the bytes [`Point::ssthresh_bytes`] holds: multiplied by [`PACKET`] as `cwnd`
/// is, so the two compare in the same unit; `u64::MAX` while unset.
pub fn ssthresh_bytes(ssthresh: u32) -> u64 {
    if ssthresh >= INFINITE_SSTHRESH {
        u64::MAX
    } else {
        u64::from(ssthresh) * PACKET
    }
}

/// Each socket's rows of one run, in time order, by socket name (`flow-0`, …).
pub fn rows(file: &Path) -> anyhow::Result<BTreeMap<String, Vec<TcpRow>>> {
    let mut by: BTreeMap<String, Vec<TcpRow>> = BTreeMap::new();
    for_each_row(file, |r: TcpRow| by.entry(r.socket.clone()).or_default().push(r))?;
    for v in by.values_mut() {
        v.sort_by_key(|r| r.t_us);
    }
    Ok(by)
}

/// A microsecond figure of the series, 0 being "none yet".
pub fn us(v: u32) -> Option<Duration> {
    (v > 0).then(|| Duration::from_micros(u64::from(v)))
}

/// Whether a row carries BBR's full model (QUIC BBRv2/v3): its round count says so, and an
/// empty bound beside it is unset (∞), not unknown.
fn full(r: &TcpRow) -> Option<()> {
    r.bbr_round_count.map(|_| ())
}

/// One socket's rows as a trace on `path`, with the controller's own state changes (`events`,
/// its flow's `bbr_events`; empty where it records none). Both are timed from the run's epoch,
/// as the path's rate step is (the emulator's schedule starts there); the trace from the
/// socket's first row, 0.13–0.17 s later in conform's runs, so the step is moved that much
/// earlier with it.
pub fn trace(rows: &[TcpRow], mut path: PathFacts, sample_interval: Duration, events: &[BbrEvent]) -> Trace {
    let t0 = rows.first().map_or(0, |r| r.t_us);
    path.rate_step = path.rate_step.map(|(at, rate)| (at.saturating_sub(Duration::from_micros(t0)), rate));
    // Changes of mode and of ProbeBW phase (QUIC BBR records both: `PROBE_BW_UP`).
    let events = events
        .iter()
        .filter_map(|e| {
            let (from, to) = (Mode::parse(&e.from)?, Mode::parse(&e.to)?);
            let (from_phase, to_phase) = (Phase::parse(&e.from).filter(|_| from == Mode::ProbeBw), Phase::parse(&e.to).filter(|_| to == Mode::ProbeBw));
            ((from, from_phase) != (to, to_phase)).then_some(StateEvent {
                t: Duration::from_micros(e.t_us.saturating_sub(t0)),
                from,
                to,
                from_phase,
                to_phase,
                round: e.round,
                full_bw_round: e.full_bw_round,
            })
        })
        .collect();
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
            inflight_longterm_bytes: full(r).map(|_| r.bbr_inflight_longterm.unwrap_or(u64::MAX)),
            inflight_shortterm_bytes: full(r).map(|_| r.bbr_inflight_shortterm.unwrap_or(u64::MAX)),
            bw_shortterm_bps: full(r).map(|_| r.bbr_bw_shortterm_bps.map_or(f64::INFINITY, |b| b as f64)),
            round_count: r.bbr_round_count,
            cycle_count: r.bbr_cycle_count,
            probe_rtt_min_age: r.bbr_probe_rtt_min_age_us.map(Duration::from_micros),
            probe_rtt_min_delay: r.bbr_probe_rtt_min_delay_us.map(|us| Duration::from_micros(us.into())),
            host_limited: r.host_limited_us.map(Duration::from_micros),
            cwnd_limited: r.cwnd_limited_us.map(Duration::from_micros),
            full_bw_reached: r.bbr_full_bw_reached,
            extra_acked_bytes: r.bbr_extra_acked,
            spurious_losses: r.spurious_losses,
            ssthresh_bytes: Some(ssthresh_bytes(r.ssthresh)),
        })
        .collect();
    Trace { path, sample_interval, points, events }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The schedule's step at 4 s of the run sits at 3.85 s of a trace whose first sample came
    /// 0.15 s into the run, where the controller saw it.
    #[test]
    fn the_rate_step_is_timed_from_the_traces_first_sample() {
        let row = |t_us| TcpRow { socket: "flow-0".into(), t_us, ..TcpRow::default() };
        let path = PathFacts { rate_bps: 10e6, rtt: Duration::from_millis(20), mss: PACKET, rate_step: Some((Duration::from_secs(4), 1e6)) };
        let t = trace(&[row(150_000), row(160_000)], path, Duration::from_millis(10), &[]);
        assert_eq!(t.path.rate_step, Some((Duration::from_millis(3850), 1e6)));
        assert_eq!(t.points[1].t, Duration::from_millis(10));
    }

    /// ssthresh in the cwnd's unit, unset while the kernel's (or the series') is 0x7fffffff.
    #[test]
    fn ssthresh_is_in_cwnds_unit_and_unset_while_infinite() {
        let row = |ssthresh| TcpRow { socket: "flow-0".into(), cwnd: 100, ssthresh, ..TcpRow::default() };
        let path = PathFacts { rate_bps: 10e6, rtt: Duration::from_millis(20), mss: PACKET, rate_step: None };
        let t = trace(&[row(0x7fff_ffff), row(70)], path, Duration::from_millis(10), &[]);
        assert_eq!(t.points[0].ssthresh_bytes, Some(u64::MAX));
        assert_eq!(t.points[1].ssthresh_bytes, Some(70 * PACKET));
        assert_eq!(t.points[1].cwnd_bytes, Some(100 * PACKET));
    }
}
