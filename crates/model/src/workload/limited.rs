//! What held a sending flow back, and how it lost: the limited-by accounting of one sending
//! socket from its `TCP_INFO` samples (issue 30).
//!
//! Linux keeps three "chrono" counters per socket (`tcp_get_info_chrono_stats`,
//! net/ipv4/tcp.c, since 4.10): the time the socket was busy (data queued or in flight),
//! and of that the time it was limited by the peer's receive window and by its own send
//! buffer. `tcpi_busy_time` is their sum. The rest of the busy time is split here between
//! the congestion window and the pacer by the sampled state: in flight (`unacked - sacked -
//! lost + retrans`, the kernel's `tcp_packets_in_flight`) at the window means the window held
//! it; below it with data waiting, the pacer set the rate; below it with nothing waiting and
//! the delivery-rate sample marked application-limited, the application did. Time the socket
//! was not busy at all is the application's (nothing to send). Each interval between two
//! samples is split by the counters' increments, so the split is exact for the chrono
//! counters (jiffies resolution) and sampled for the busy part.

use ccbench_kernel_tcp::{BbrInfo, TcpInfo};
use serde::{Deserialize, Serialize};

/// Fractions of a flow's active time (from its first byte sent to its last sample), each in
/// 0..=1, summing to 1 with `unknown` the part no counter accounted for.
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct LimitedBy {
    /// In flight reached the congestion window.
    pub cwnd: f64,
    /// Below the congestion window with data waiting: the pacer set the rate.
    pub pacing: f64,
    /// Below the congestion window with data waiting and the pacer not holding it: the sending
    /// host itself (the stack building packets and handing them to the socket, and waiting to
    /// be scheduled) set the pace. QUIC only: kernel TCP's counters cannot tell it from
    /// `pacing`, which then carries it. Absent (0) in results recorded before it was split.
    #[serde(default)]
    pub host: f64,
    /// The receiver's advertised window (`tcpi_rwnd_limited`).
    pub rwnd: f64,
    /// The sending socket's buffer (`tcpi_sndbuf_limited`).
    pub sndbuf: f64,
    /// Nothing to send: the application did not keep the socket busy.
    pub app: f64,
    /// Time no counter accounted for (none on a kernel without the chrono counters: all of it).
    pub unknown: f64,
}

/// One of [`LimitedBy`]'s causes.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Cause {
    Cwnd,
    Pacing,
    Host,
    Rwnd,
    Sndbuf,
    App,
    Unknown,
}

impl Cause {
    pub const ALL: [Cause; 7] = [Cause::Cwnd, Cause::Pacing, Cause::Host, Cause::Rwnd, Cause::Sndbuf, Cause::App, Cause::Unknown];

    /// The field's name in result.json.
    pub fn name(self) -> &'static str {
        match self {
            Cause::Cwnd => "cwnd",
            Cause::Pacing => "pacing",
            Cause::Host => "host",
            Cause::Rwnd => "rwnd",
            Cause::Sndbuf => "sndbuf",
            Cause::App => "app",
            Cause::Unknown => "unknown",
        }
    }
}

impl LimitedBy {
    pub fn get(&self, c: Cause) -> f64 {
        match c {
            Cause::Cwnd => self.cwnd,
            Cause::Pacing => self.pacing,
            Cause::Host => self.host,
            Cause::Rwnd => self.rwnd,
            Cause::Sndbuf => self.sndbuf,
            Cause::App => self.app,
            Cause::Unknown => self.unknown,
        }
    }

    fn set(&mut self, c: Cause, v: f64) {
        match c {
            Cause::Cwnd => self.cwnd = v,
            Cause::Pacing => self.pacing = v,
            Cause::Host => self.host = v,
            Cause::Rwnd => self.rwnd = v,
            Cause::Sndbuf => self.sndbuf = v,
            Cause::App => self.app = v,
            Cause::Unknown => self.unknown = v,
        }
    }

    /// The cause with the largest share, and its share (ties go to the first in [`Cause::ALL`]).
    pub fn dominant(&self) -> (Cause, f64) {
        Cause::ALL.iter().map(|&c| (c, self.get(c))).fold((Cause::Unknown, f64::NEG_INFINITY), |best, x| if x.1 > best.1 { x } else { best })
    }

    /// Fractions from times (any unit): negative parts count as 0; if the known parts exceed
    /// `total` (the chrono counters tick in jiffies), they are scaled down to it; `unknown`
    /// takes the rest. `None` without time.
    pub fn from_times<const N: usize>(parts: [(Cause, f64); N], total: f64) -> Option<Self> {
        if total <= 0.0 || !total.is_finite() {
            return None;
        }
        let known: f64 = parts.iter().map(|p| p.1.max(0.0)).sum();
        let scale = if known > total { total / known } else { 1.0 };
        let mut out = LimitedBy::default();
        for (c, t) in parts {
            out.set(c, t.max(0.0) * scale / total);
        }
        out.unknown = (1.0 - known * scale / total).max(0.0);
        Some(out)
    }

    /// The time-weighted mean of several flows' fractions (weights: their active times).
    pub fn weighted(parts: &[(LimitedBy, f64)]) -> Option<Self> {
        let total: f64 = parts.iter().map(|p| p.1).sum();
        if total <= 0.0 {
            return None;
        }
        let mut out = LimitedBy::default();
        for c in Cause::ALL {
            out.set(c, parts.iter().map(|(l, w)| l.get(c) * w).sum::<f64>() / total);
        }
        Some(out)
    }
}

/// How a flow lost and what its window was: counted from the same samples and the final
/// `TCP_INFO`. Counts of episodes are sampled: two reductions between two samples count once.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Mechanism {
    /// Seconds from the flow's first byte sent to its last sample (what `limited_by` divides).
    pub active_s: f64,
    /// Window reductions seen: entries into fast recovery or CWR, or a new `ssthresh`.
    pub recoveries: u32,
    /// Entries into the Loss state (a retransmission timeout) seen by the sampler.
    pub loss_states: u32,
    /// `tcpi_total_rto` (Linux 6.7+): retransmission timeouts; `null` on older kernels.
    pub rtos: Option<u32>,
    /// `tcpi_dsack_dups`: segments the receiver reported twice (DSACK, RFC 2883), i.e.
    /// spurious retransmissions.
    pub dsack_dups: Option<u32>,
    /// Retransmitted bytes / bytes sent (the loss rate the sender saw).
    pub retrans_rate: f64,
    /// The mean window set by the reductions (`ssthresh` after each), packets.
    pub cwnd_after_reduction: Option<f64>,
    /// Time-weighted means over the active time: congestion window and in flight (packets),
    /// smoothed RTT (µs).
    pub mean_cwnd: f64,
    pub mean_in_flight: f64,
    pub mean_rtt_us: f64,
    /// The smallest RTT the kernel saw (µs).
    pub min_rtt_us: Option<u32>,
    /// `tcpi_snd_mss` at the end, bytes.
    pub mss: u32,
    /// The peer's advertised window, time-weighted mean, bytes (`tcpi_snd_wnd`, Linux 5.4+).
    pub mean_snd_wnd_bytes: Option<f64>,
    /// Kernel BBR's bandwidth estimate (bit/s), time-weighted mean, while it runs BBR.
    pub bw_estimate_bps: Option<f64>,
    /// The kernel's pacing rate (bit/s), time-weighted mean where set.
    pub mean_pacing_rate_bps: Option<f64>,
}

/// A flow's accounting: [`LimitedBy`] and [`Mechanism`] together.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Limits {
    pub limited_by: LimitedBy,
    pub mechanism: Mechanism,
}

/// What the previous sample left for the next interval.
#[derive(Clone, Copy)]
struct Prev {
    t_us: u64,
    busy_us: Option<u64>,
    rwnd_us: Option<u64>,
    sndbuf_us: Option<u64>,
    ca_state: u8,
    ssthresh: u32,
}

/// `TCP_INFINITE_SSTHRESH` (include/net/tcp.h): no reduction yet.
const INFINITE_SSTHRESH: u32 = 0x7fff_ffff;

/// The accumulator of one sending socket: constant memory however long the flow.
#[derive(Default)]
pub struct Account {
    /// The application always had data to write (bulk without `--app-rate`): a socket below
    /// its window with nothing unsent was then held by its send buffer, not by the application.
    pub saturating: bool,
    prev: Option<Prev>,
    active_us: f64,
    times: [f64; 5],
    recoveries: u32,
    loss_states: u32,
    reductions_sum: f64,
    reductions: u32,
    cwnd_us: f64,
    in_flight_us: f64,
    rtt_us: f64,
    wnd_us: f64,
    wnd_time: f64,
    bw_us: f64,
    bw_time: f64,
    pacing_us: f64,
    pacing_time: f64,
}

/// In flight counts as at the window when within this many packets of it: TSO autosizing and
/// `tcp_tso_should_defer` hold back a last partial burst (a tenth of the window, at least 2).
fn at_window(in_flight: u32, cwnd: u32) -> bool {
    in_flight.saturating_add((cwnd / 10).max(2)) >= cwnd
}

/// What held a kernel TCP socket's busy time (neither window nor buffer chrono running) in
/// a sampled interval: the window when in flight reached it; below it with nothing unsent
/// and the delivery-rate sample application-limited, the application, or, when it always had
/// more (`saturating`), the send buffer that took no more (the kernel's SNDBUF chrono starts
/// only once the writer waits with SOCK_NOSPACE, and misses most of this); else the pacer.
pub(crate) fn busy_cause(in_flight: u32, cwnd: u32, app_limited: bool, notsent: Option<u32>, saturating: bool) -> Cause {
    if at_window(in_flight, cwnd) {
        Cause::Cwnd
    } else if app_limited && notsent.unwrap_or(0) == 0 {
        if saturating {
            Cause::Sndbuf
        } else {
            Cause::App
        }
    } else {
        Cause::Pacing
    }
}

impl Account {
    pub fn new(saturating: bool) -> Self {
        Account { saturating, ..Account::default() }
    }

    /// One sample at `t_us`.
    pub fn add(&mut self, t_us: u64, ti: &TcpInfo, bbr: Option<&BbrInfo>) {
        // Before its first byte the flow is not active (a mix's late flows).
        if ti.bytes_sent.unwrap_or(u64::from(ti.segs_out.unwrap_or(0))) == 0 && self.prev.is_none() {
            return;
        }
        let now = Prev {
            t_us,
            busy_us: ti.busy_time_us,
            rwnd_us: ti.rwnd_limited_us,
            sndbuf_us: ti.sndbuf_limited_us,
            ca_state: ti.ca_state,
            ssthresh: ti.snd_ssthresh,
        };
        let Some(prev) = self.prev.replace(now) else { return };
        let dt = t_us.saturating_sub(prev.t_us) as f64;
        if dt <= 0.0 {
            return;
        }
        self.active_us += dt;
        let delta = |a: Option<u64>, b: Option<u64>| match (a, b) {
            (Some(a), Some(b)) => Some(b.saturating_sub(a) as f64),
            _ => None,
        };
        if let (Some(busy), Some(rwnd), Some(sndbuf)) =
            (delta(prev.busy_us, now.busy_us), delta(prev.rwnd_us, now.rwnd_us), delta(prev.sndbuf_us, now.sndbuf_us))
        {
            // The BUSY chrono alone: the socket had data to send and neither window nor
            // buffer stopped it.
            let sending = (busy - rwnd - sndbuf).max(0.0);
            let in_flight = (ti.unacked + ti.retrans).saturating_sub(ti.sacked + ti.lost);
            let by = match busy_cause(in_flight, ti.snd_cwnd, ti.app_limited, ti.notsent_bytes, self.saturating) {
                Cause::Cwnd => 0,
                Cause::Sndbuf => 3,
                Cause::App => 4,
                _ => 1,
            };
            self.times[by] += sending;
            self.times[2] += rwnd;
            self.times[3] += sndbuf;
            self.times[4] += dt - busy;
        }
        let in_flight = (ti.unacked + ti.retrans).saturating_sub(ti.sacked + ti.lost);
        self.cwnd_us += f64::from(ti.snd_cwnd) * dt;
        self.in_flight_us += f64::from(in_flight) * dt;
        self.rtt_us += f64::from(ti.rtt_us) * dt;
        if let Some(w) = ti.snd_wnd {
            self.wnd_us += f64::from(w) * dt;
            self.wnd_time += dt;
        }
        if let Some(b) = bbr.filter(|b| b.bw_bps > 0) {
            self.bw_us += b.bw_bps as f64 * dt;
            self.bw_time += dt;
        }
        if let Some(p) = ti.pacing_rate_bps.filter(|&p| p > 0 && p != u64::MAX) {
            self.pacing_us += p as f64 * dt;
            self.pacing_time += dt;
        }
        // A reduction: the state entered CWR, Recovery or Loss, or a new ssthresh was set
        // (a whole episode between two samples, or a further reduction within one).
        let entered = now.ca_state >= 2 && prev.ca_state < 2;
        let new_ssthresh = now.ssthresh != prev.ssthresh && now.ssthresh != INFINITE_SSTHRESH;
        if entered || new_ssthresh {
            self.recoveries += 1;
            if now.ssthresh != INFINITE_SSTHRESH {
                self.reductions_sum += f64::from(now.ssthresh);
                self.reductions += 1;
            }
        }
        if now.ca_state == 4 && prev.ca_state != 4 {
            self.loss_states += 1;
        }
    }

    /// The flow's figures, with its final `TCP_INFO`; `None` if it never became active.
    pub fn finish(&self, last: Option<&TcpInfo>) -> Option<Limits> {
        let parts = [
            (Cause::Cwnd, self.times[0]),
            (Cause::Pacing, self.times[1]),
            (Cause::Rwnd, self.times[2]),
            (Cause::Sndbuf, self.times[3]),
            (Cause::App, self.times[4]),
        ];
        let limited_by = LimitedBy::from_times(parts, self.active_us)?;
        let t = self.active_us;
        let mean = |sum: f64, time: f64| (time > 0.0).then(|| sum / time);
        let retrans_rate = last.and_then(|l| Some((l.bytes_retrans?, l.bytes_sent?))).map_or(0.0, |(r, s)| if s > 0 { r as f64 / s as f64 } else { 0.0 });
        Some(Limits {
            limited_by,
            mechanism: Mechanism {
                active_s: t / 1e6,
                recoveries: self.recoveries,
                loss_states: self.loss_states,
                rtos: last.and_then(|l| l.total_rto).map(u32::from),
                dsack_dups: last.and_then(|l| l.dsack_dups),
                retrans_rate,
                cwnd_after_reduction: mean(self.reductions_sum, f64::from(self.reductions)),
                mean_cwnd: self.cwnd_us / t,
                mean_in_flight: self.in_flight_us / t,
                mean_rtt_us: self.rtt_us / t,
                min_rtt_us: last.and_then(|l| l.min_rtt_us),
                mss: last.map_or(0, |l| l.snd_mss),
                mean_snd_wnd_bytes: mean(self.wnd_us, self.wnd_time),
                bw_estimate_bps: mean(self.bw_us, self.bw_time),
                mean_pacing_rate_bps: mean(self.pacing_us, self.pacing_time),
            },
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn info(busy: u64, rwnd: u64, sndbuf: u64, cwnd: u32, unacked: u32) -> TcpInfo {
        let mut t = ccbench_kernel_tcp::TcpInfo::from_raw(&Default::default(), 0);
        t.busy_time_us = Some(busy);
        t.rwnd_limited_us = Some(rwnd);
        t.sndbuf_limited_us = Some(sndbuf);
        t.snd_cwnd = cwnd;
        t.unacked = unacked;
        t.bytes_sent = Some(1);
        t.snd_ssthresh = INFINITE_SSTHRESH;
        t
    }

    #[test]
    fn the_chrono_counters_split_each_interval_and_the_fractions_sum_to_one() {
        let mut a = Account::default();
        a.add(0, &info(0, 0, 0, 10, 10), None);
        // 10 ms, all busy at the window.
        a.add(10_000, &info(10_000, 0, 0, 10, 10), None);
        // 10 ms: 4 rwnd-limited, 2 sndbuf-limited, 2 busy below the window with data waiting,
        // 2 idle.
        let mut below = info(18_000, 4_000, 2_000, 100, 10);
        below.notsent_bytes = Some(1000);
        a.add(20_000, &below, None);
        let l = a.finish(None).unwrap().limited_by;
        let close = |a: f64, b: f64| (a - b).abs() < 1e-9;
        assert!(close(l.cwnd, 0.5) && close(l.rwnd, 0.2) && close(l.sndbuf, 0.1) && close(l.pacing, 0.1) && close(l.app, 0.1), "{l:?}");
        assert!(close(l.unknown, 0.0));
        assert_eq!(l.dominant(), (Cause::Cwnd, 0.5));
    }

    /// Below the window with nothing unsent: the application's doing, unless it always had
    /// data to write; then the send buffer's.
    #[test]
    fn nothing_unsent_is_the_send_buffer_when_the_application_always_had_data() {
        for (saturating, expect) in [(false, Cause::App), (true, Cause::Sndbuf)] {
            let mut a = Account { saturating, ..Account::default() };
            a.add(0, &info(0, 0, 0, 100, 10), None);
            let mut t = info(10_000, 0, 0, 100, 10);
            t.app_limited = true;
            t.notsent_bytes = Some(0);
            a.add(10_000, &t, None);
            assert_eq!(a.finish(None).unwrap().limited_by.dominant(), (expect, 1.0));
        }
    }

    #[test]
    fn without_the_counters_all_is_unknown() {
        let mut a = Account::default();
        let mut t = info(0, 0, 0, 10, 10);
        t.busy_time_us = None;
        a.add(0, &t, None);
        a.add(10_000, &t, None);
        let l = a.finish(None).unwrap().limited_by;
        assert_eq!((l.unknown, l.cwnd), (1.0, 0.0));
    }

    #[test]
    fn overcounted_jiffies_are_scaled_to_the_time() {
        let l = LimitedBy::from_times([(Cause::Cwnd, 12.0), (Cause::Pacing, 0.0), (Cause::Rwnd, 0.0), (Cause::Sndbuf, 0.0), (Cause::App, -1.0)], 10.0).unwrap();
        assert_eq!((l.cwnd, l.app, l.unknown), (1.0, 0.0, 0.0));
    }

    #[test]
    fn reductions_are_counted_with_the_window_they_left() {
        let mut a = Account::default();
        let mut t = info(0, 0, 0, 100, 100);
        a.add(0, &t, None);
        t.ca_state = 3;
        t.snd_ssthresh = 70;
        a.add(10_000, &t, None);
        a.add(20_000, &t, None);
        t.ca_state = 0;
        a.add(30_000, &t, None);
        t.snd_ssthresh = 50; // a whole episode between two samples
        a.add(40_000, &t, None);
        let m = a.finish(None).unwrap().mechanism;
        assert_eq!(m.recoveries, 2);
        assert_eq!(m.cwnd_after_reduction, Some(60.0));
    }
}
