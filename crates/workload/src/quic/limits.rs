//! The limited-by accounting of a QUIC sending connection (issue 30): the QUIC counterpart of
//! `limited.rs`'s for kernel TCP, from our own stack rather than `TCP_INFO`.
//!
//! noq-proto (patched, `vendor/noq-proto/PATCH.md`) records per path why each `poll_transmit`
//! sent nothing more, and keeps the time spent in each state by the connection's clock until
//! the next call: the congestion window full (RFC 9002 §7), the pacer holding the next datagram
//! (RFC 9002 §7.7), the peer's flow-control credit used up (MAX_DATA / MAX_STREAM_DATA,
//! RFC 9000 §4.1), the local send window full, nothing to send (RFC 9002 §7.8), or a transmit
//! just built below the window. Here each reading is mapped onto TCP's causes:
//!
//! | stack state | cause |
//! |---|---|
//! | cwnd | `cwnd` |
//! | pacing | `pacing` (the pacer held the next datagram) |
//! | sending below the window | `host` (the stack building and handing over packets set the pace; kernel TCP's `pacing` includes this) |
//! | flow control | `rwnd` (the receiver's credit) |
//! | send window | `sndbuf` (the sender's buffer of unacknowledged data) |
//! | app | `app` |
//! | other (anti-amplification, no connection ID) | `unknown` |
//!
//! Unlike TCP's, the split is exact rather than sampled: every interval between two calls is
//! in one state, so the fractions are exact to the clock's resolution whatever the sampling
//! interval. The samples only add the open interval (the state since the last call) and the
//! time-weighted means of the mechanism.

use std::time::Instant;

use noq_proto::SendLimits;

use crate::{Cause, LimitedBy, Limits, Mechanism, QuicSample};

/// The stack's states, in [`Reading::times`]' order.
const CWND: usize = 0;
const PACING: usize = 1;
const SENDING: usize = 2;
const FLOW_CONTROL: usize = 3;
const SEND_WINDOW: usize = 4;
const APP: usize = 5;
const OTHER: usize = 6;

/// Cumulative µs per state at one instant, and the counters read with them.
#[derive(Clone, Copy, Debug, Default)]
struct Reading {
    times: [f64; 7],
    congestion_events: u64,
    probe_timeouts: u64,
}

impl Reading {
    fn total(&self) -> f64 {
        self.times.iter().sum()
    }
}

/// The cumulative time per state at `now`: the closed intervals, and the open one of the state
/// entered at the last `poll_transmit`.
fn times(l: &SendLimits, now: Instant) -> [f64; 7] {
    let us = |d: std::time::Duration| d.as_secs_f64() * 1e6;
    let mut t = [us(l.cwnd), us(l.pacing), us(l.sending), us(l.flow_control), us(l.send_window), us(l.app), us(l.other)];
    if let Some(since) = l.since {
        let open = us(now.saturating_duration_since(since));
        let i = match l.current {
            noq_proto::SendLimit::Cwnd => CWND,
            noq_proto::SendLimit::Pacing => PACING,
            noq_proto::SendLimit::Sending => SENDING,
            noq_proto::SendLimit::FlowControl => FLOW_CONTROL,
            noq_proto::SendLimit::SendWindow => SEND_WINDOW,
            noq_proto::SendLimit::App => APP,
            _ => OTHER,
        };
        t[i] += open;
    }
    t
}

/// The cumulative time per state at `now` in whole µs, for the series (`QuicSample::send_states_us`).
pub(crate) fn send_states(l: &SendLimits, now: Instant) -> crate::SendStates {
    let t = times(l, now);
    let us = |i: usize| t[i].round() as u64;
    crate::SendStates {
        cwnd: us(CWND),
        pacing: us(PACING),
        host: us(SENDING),
        flow_control: us(FLOW_CONTROL),
        send_window: us(SEND_WINDOW),
        app: us(APP),
        other: us(OTHER),
    }
}

/// The accumulator of one sending connection: constant memory however long the flow.
#[derive(Debug, Default)]
pub(crate) struct QuicAccount {
    /// Bytes sent at the first reading (the handshake's): the flow is active once more left.
    first_sent: Option<u64>,
    /// The reading the active time starts at: the last one before stream data left.
    base: Option<Reading>,
    last: Option<Reading>,
    /// Time-weighted sums over the active time (weights: µs between readings).
    weight: f64,
    cwnd_us: f64,
    in_flight_us: f64,
    rtt_us: f64,
    pacing_us: f64,
    pacing_time: f64,
    bw_us: f64,
    bw_time: f64,
    reductions_sum: f64,
    reductions: u32,
    last_sample: Option<QuicSample>,
}

impl QuicAccount {
    /// One reading: the path's send states at `now`, and the sample taken with them.
    pub(crate) fn add(&mut self, limits: &SendLimits, probe_timeouts: u64, now: Instant, s: &QuicSample) {
        let r = Reading { times: times(limits, now), congestion_events: s.congestion_events, probe_timeouts };
        let first_sent = *self.first_sent.get_or_insert(s.bytes_sent);
        let Some(prev) = self.last.replace(r) else { return };
        if self.base.is_none() {
            if s.bytes_sent <= first_sent {
                // No stream data yet (a mix's late flow): not active.
                return;
            }
            self.base = Some(prev);
        }
        let dt = r.total() - prev.total();
        if dt <= 0.0 {
            return;
        }
        let mtu = f64::from(s.mtu.max(1));
        self.weight += dt;
        self.cwnd_us += s.cwnd_bytes as f64 / mtu * dt;
        self.in_flight_us += s.bytes_in_flight as f64 / mtu * dt;
        self.rtt_us += f64::from(s.rtt_us) * dt;
        if let Some(p) = s.pacing_rate_bps.filter(|&p| p > 0) {
            self.pacing_us += p as f64 * dt;
            self.pacing_time += dt;
        }
        if let Some(b) = s.bbr.as_ref().filter(|b| b.max_bw_bps > 0) {
            self.bw_us += b.max_bw_bps as f64 * dt;
            self.bw_time += dt;
        }
        // A congestion event since the last reading: the window it left (RFC 9002 §7.3.2:
        // ssthresh is set to the reduced window; a controller without one, its window now).
        if r.congestion_events > prev.congestion_events {
            self.reductions_sum += s.ssthresh_bytes.unwrap_or(s.cwnd_bytes) as f64 / mtu;
            self.reductions += 1;
        }
        self.last_sample = Some(s.clone());
    }

    /// The connection's figures; `None` if it never sent stream data while sampled.
    pub(crate) fn finish(&self) -> Option<Limits> {
        let (base, last) = (self.base?, self.last?);
        let d = |i: usize| last.times[i] - base.times[i];
        let total = last.total() - base.total();
        let parts = [
            (Cause::Cwnd, d(CWND)),
            (Cause::Pacing, d(PACING)),
            (Cause::Host, d(SENDING)),
            (Cause::Rwnd, d(FLOW_CONTROL)),
            (Cause::Sndbuf, d(SEND_WINDOW)),
            (Cause::App, d(APP)),
        ];
        let limited_by = LimitedBy::from_times(parts, total)?;
        let s = self.last_sample.as_ref()?;
        let w = self.weight.max(f64::MIN_POSITIVE);
        let mean = |sum: f64, time: f64| (time > 0.0).then(|| sum / time);
        let sat = |x: u64| u32::try_from(x).unwrap_or(u32::MAX);
        Some(Limits {
            limited_by,
            mechanism: Mechanism {
                active_s: total / 1e6,
                recoveries: sat(last.congestion_events.saturating_sub(base.congestion_events)),
                // QUIC has no Loss state; its timeouts are the probe timeouts below.
                loss_states: 0,
                rtos: Some(sat(last.probe_timeouts.saturating_sub(base.probe_timeouts))),
                // QUIC acknowledges packets, never the same data twice: nothing like DSACK.
                dsack_dups: None,
                // Lost over sent bytes: QUIC resends the frames of a lost packet, never the
                // packet, so what was lost is what was sent again.
                retrans_rate: if s.bytes_sent > 0 { s.bytes_lost as f64 / s.bytes_sent as f64 } else { 0.0 },
                cwnd_after_reduction: mean(self.reductions_sum, f64::from(self.reductions)),
                mean_cwnd: self.cwnd_us / w,
                mean_in_flight: self.in_flight_us / w,
                mean_rtt_us: self.rtt_us / w,
                min_rtt_us: (s.min_rtt_us > 0).then_some(s.min_rtt_us),
                // The datagram payload: the window counts the same bytes.
                mss: u32::from(s.mtu),
                // The peer's credit is not exposed by noq.
                mean_snd_wnd_bytes: None,
                bw_estimate_bps: mean(self.bw_us, self.bw_time),
                mean_pacing_rate_bps: mean(self.pacing_us, self.pacing_time),
            },
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    fn limits(cwnd_ms: u64, pacing_ms: u64, app_ms: u64) -> SendLimits {
        let mut l = SendLimits::default();
        l.cwnd = Duration::from_millis(cwnd_ms);
        l.pacing = Duration::from_millis(pacing_ms);
        l.app = Duration::from_millis(app_ms);
        l
    }

    fn sample(bytes_sent: u64, congestion_events: u64) -> QuicSample {
        QuicSample { bytes_sent, congestion_events, mtu: 1200, cwnd_bytes: 12_000, bytes_in_flight: 6_000, rtt_us: 40_000, ..QuicSample::default() }
    }

    /// The active time starts at the reading before stream data left; each state's share is
    /// its time since then, the open interval of the current state included.
    #[test]
    fn the_stack_states_map_onto_the_causes_from_the_first_data() {
        let t0 = Instant::now();
        let mut a = QuicAccount::default();
        // Handshake done, nothing sent yet: 50 ms of the application's time, not counted.
        a.add(&limits(0, 0, 50), 0, t0, &sample(3_000, 0));
        a.add(&limits(0, 0, 100), 0, t0, &sample(3_000, 0));
        // Data left since: 60 ms at the window, 20 ms paced, and 20 ms more in the window
        // state still open at the last reading.
        a.add(&limits(30, 10, 100), 0, t0, &sample(500_000, 1));
        let mut last = limits(60, 20, 100);
        last.current = noq_proto::SendLimit::Cwnd;
        last.since = Some(t0);
        a.add(&last, 2, t0 + Duration::from_millis(20), &sample(900_000, 3));
        let l = a.finish().unwrap();
        let close = |x: f64, y: f64| (x - y).abs() < 1e-9;
        assert!(close(l.mechanism.active_s, 0.1), "{:?}", l.mechanism);
        assert!(close(l.limited_by.cwnd, 0.8) && close(l.limited_by.pacing, 0.2) && close(l.limited_by.app, 0.0), "{:?}", l.limited_by);
        assert!(close(l.limited_by.unknown, 0.0));
        assert_eq!((l.mechanism.recoveries, l.mechanism.rtos), (3, Some(2)));
        // Windows in packets of the datagram size: 12,000 / 1,200.
        assert!(close(l.mechanism.mean_cwnd, 10.0) && close(l.mechanism.mean_in_flight, 5.0));
    }

    #[test]
    fn a_connection_that_never_sent_data_has_no_record() {
        let t0 = Instant::now();
        let mut a = QuicAccount::default();
        a.add(&limits(0, 0, 10), 0, t0, &sample(3_000, 0));
        a.add(&limits(0, 0, 20), 0, t0, &sample(3_000, 0));
        assert!(a.finish().is_none());
    }
}
