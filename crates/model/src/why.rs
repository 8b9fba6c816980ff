//! Why one wins: per algorithm, what held its flows back (the dominant limited-by cause), how
//! they lost, and a model of the rate that cause allows beside the rate measured (issue 30).
//! One definition for the terminal, `ccbench explain`, `compare` and report.html.
//!
//! The models, each where its cause applies:
//! * CUBIC under random loss: the response function of RFC 9438 §5.1, the larger of CUBIC's
//!   average window `(C(3+β)/(4(1-β)))^¼ · RTT^¼ / p^¾` and the Reno-friendly one
//!   `√(3/(2p))` (§5.2; with α = 3(1-β)/(1+β) it equals Reno's), C = 0.4, β = 0.7;
//! * Reno under random loss: Mathis, Semke, Mahdavi and Ott 1997, `MSS/RTT · √(3/(2p))`;
//! * a window-bound flow: `cwnd · MSS / RTT`; receive-window bound: `rwnd / RTT`; send-buffer
//!   bound: what the buffer keeps in flight, `in flight · MSS / RTT`;
//! * a buffer-bound flow (`--rcvbuf`, `--sndbuf`): the send buffer the kernel kept, read back,
//!   over the RTT; on the receive side the window the peer advertised, shown against the
//!   buffer kept, and without it, before Linux 6.6 only, the buffer less the kernel's fixed
//!   overhead (`tcp_win_from_space`);
//! * BBR: its bandwidth estimate against the bottleneck's rate; sharing a drop-tail queue with
//!   loss-based flows, its in-flight cap against the buffer (Ware et al., IMC 2019).

mod models;

pub use models::{advertised_of_kept, buffer_bound_bps, linux_version, tcp_win_from_space, ware_bbr_share, window_has_fixed_overhead};

use crate::workload::{Algorithm, Cause, Cc, Direction, Family, LimitedBy, Mechanism, SocketBuffers};
use ccbench_link::{Aqm, Buffer, LossModel, Rate};
use serde::Serialize;

use crate::results::{ExperimentResult, RunRecord, Status};
use crate::units::fmt_rate;
use crate::workloads::WorkloadResult;

/// A loss-based response function: (loss rate, RTT in s, MSS in bytes) → bits per second.
type ResponseFunction = fn(f64, f64, f64) -> Option<f64>;

/// A cause is named as the one that held a flow back only when it held it this share of its
/// active time; below it the line says no cause dominated.
pub const DOMINANT_SHARE: f64 = 0.6;

/// Utilization of the bottleneck at or above which a flow counts as bound by the link.
pub const LINK_BOUND: f64 = 0.9;

/// CUBIC's constants (RFC 9438 §4.1, §4.6).
const CUBIC_C: f64 = 0.4;
const CUBIC_BETA: f64 = 0.7;

/// RFC 9438 §5.1–5.2: CUBIC's average rate (bit/s) at loss rate `p`, RTT `rtt_s`, segment size
/// `mss` bytes: the larger of the CUBIC region's and the Reno-friendly region's windows.
pub fn cubic_response_bps(p: f64, rtt_s: f64, mss: f64) -> Option<f64> {
    if !(p > 0.0 && rtt_s > 0.0 && mss > 0.0) {
        return None;
    }
    let w_cubic = (CUBIC_C * (3.0 + CUBIC_BETA) / (4.0 * (1.0 - CUBIC_BETA))).powf(0.25) * rtt_s.powf(0.25) / p.powf(0.75);
    let w_reno = (3.0 / (2.0 * p)).sqrt();
    Some(w_cubic.max(w_reno) * mss * 8.0 / rtt_s)
}

/// Mathis et al. 1997: Reno's rate (bit/s) at loss rate `p`: `MSS/RTT · √(3/(2p))`.
pub fn mathis_bps(p: f64, rtt_s: f64, mss: f64) -> Option<f64> {
    (p > 0.0 && rtt_s > 0.0 && mss > 0.0).then(|| mss * 8.0 / rtt_s * (3.0 / (2.0 * p)).sqrt())
}

/// A rate a model predicts, named with its reference.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Model {
    /// e.g. "RFC 9438", "Mathis et al. 1997", "cwnd×MSS/RTT".
    pub name: &'static str,
    pub predicts_bps: f64,
}

/// One algorithm's why.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Why {
    pub cc: Cc,
    /// Flows with a limited-by record (0: not recorded).
    pub flows: usize,
    /// Their fractions, each flow weighted by its active time.
    pub limited_by: Option<LimitedBy>,
    /// The cause that held `DOMINANT_SHARE` of the time or more, with its share.
    pub dominant: Option<(Cause, f64)>,
    /// Window reductions per 10 s, per flow.
    pub recoveries_per_10s: Option<f64>,
    /// Retransmitted / sent bytes, mean over flows.
    pub loss_rate: Option<f64>,
    /// Mean goodput per flow, bit/s.
    pub measured_bps: Option<f64>,
    pub model: Option<Model>,
    /// What stands beside the model (the advertised window against the receive buffer kept),
    /// or, where the cause has no model here, why not.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub model_note: Option<String>,
    /// The bottleneck's rate on the data's direction (bit/s), on an emulated path.
    pub link_bps: Option<f64>,
    /// BBR's bandwidth estimate, mean over flows (bit/s).
    pub bw_estimate_bps: Option<f64>,
    /// What bound it, in words ("random loss", "the link", ...); `None` when no cause dominated.
    pub bound: Option<String>,
}

/// One flow's accounting and its goodput.
struct Flow<'a> {
    limited_by: &'a LimitedBy,
    m: &'a Mechanism,
    goodput_bps: Option<f64>,
    /// The socket buffers asked and kept, where `--rcvbuf`/`--sndbuf` were given.
    buffers: Option<&'a SocketBuffers>,
    /// The receiving host's kernel version (major, minor), from the result's provenance.
    rcv_kernel: Option<(u32, u32)>,
}

/// The flows of `run` that belong to `cc`: all of them (the run is `cc`'s; under `compare` its
/// name is the arm's), or in a mix those that asked for `cc`.
fn flows_of<'a>(run: &'a RunRecord, cc: &Cc, mix: bool, rcv_kernel: Option<(u32, u32)>) -> Vec<Flow<'a>> {
    let ours = |requested: &Cc| !mix || requested == cc;
    match &run.workload {
        Some(WorkloadResult::Bulk(b)) => b
            .flows
            .iter()
            .filter(|f| ours(&f.sending.cc_requested))
            .filter_map(|f| {
                Some(Flow {
                    limited_by: f.sending.limited_by.as_ref()?,
                    m: f.sending.mechanism.as_ref()?,
                    goodput_bps: Some(f.goodput_bps),
                    buffers: f.sending.buffers.as_ref(),
                    rcv_kernel,
                })
            })
            .collect(),
        Some(w) => w
            .senders()
            .into_iter()
            .filter(|s| ours(s.cc_requested))
            .filter_map(|s| Some(Flow { limited_by: s.limited_by?, m: s.mechanism?, goodput_bps: None, buffers: None, rcv_kernel }))
            .collect(),
        None => Vec::new(),
    }
}

fn mean(xs: impl Iterator<Item = f64>) -> Option<f64> {
    let (n, sum) = xs.fold((0usize, 0.0), |(n, s), x| (n + 1, s + x));
    (n > 0).then(|| sum / n as f64)
}

fn median(mut xs: Vec<f64>) -> Option<f64> {
    xs.retain(|x| x.is_finite());
    if xs.is_empty() {
        return None;
    }
    xs.sort_by(f64::total_cmp);
    Some(ccbench_stats::quantile(&xs, 0.5))
}

/// Every algorithm's why, in the order of the summary.
pub fn why(result: &ExperimentResult) -> Vec<Why> {
    let mix = result.params.workload.is_mix();
    let dir = result.params.workload.data_direction();
    let link = result.params.path.as_ref().map(|p| match dir {
        Direction::Download => &p.down,
        Direction::Upload => &p.up,
    });
    let link_bps = link.and_then(|l| match l.rate {
        Rate::BitsPerSec(b) if l.trace.is_none() && l.schedule.is_empty() => Some(b as f64),
        _ => None,
    });
    let random_loss = link.is_some_and(|l| !matches!(l.loss, LossModel::None));
    let mut ccs: Vec<Cc> = if result.summary.is_empty() { result.params.ccs.clone() } else { result.summary.iter().map(|s| s.cc.clone()).collect() };
    // A mix's contender is its label (`bbr:1,cubic:1`), which no flow asked for: its why lines
    // are one per algorithm of the mix, as its shares are.
    let mut mix_algorithms: Vec<Cc> = Vec::new();
    for cc in result.summary.iter().flat_map(|s| s.shares.iter().map(|sh| &sh.cc)) {
        if !mix_algorithms.contains(cc) {
            mix_algorithms.push(cc.clone());
        }
    }
    if mix && !mix_algorithms.is_empty() {
        ccs = mix_algorithms;
    }
    let family = |cc: &Cc| cc.algorithm().map(Algorithm::family);
    let loss_based = |cc: &Cc| family(cc).is_some_and(Family::is_loss_based);
    // Ware et al.'s model needs the bottleneck's buffer in packets and its bandwidth-delay
    // product: a constant rate, a drop-tail buffer (the paper's; an AQM keeps no standing
    // queue for the cap to meet) and the path's base RTT.
    let queue = result.params.path.as_ref().zip(link).zip(link_bps).and_then(|((p, l), bps)| {
        if !matches!(l.aqm, Aqm::DropTail) {
            return None;
        }
        let mtu = f64::from(p.mtu.max(1));
        let buffer = match l.buffer {
            Buffer::Packets(n) => n as f64,
            Buffer::Bytes(b) => b as f64 / mtu,
            Buffer::Unlimited => return None,
        };
        let rtt_s = (p.down.delay_ns.as_nanos() + p.up.delay_ns.as_nanos()) as f64 / 1e9;
        Some((buffer, bps * rtt_s / 8.0 / mtu, rtt_s))
    });
    let shares_with_loss_based = mix && ccs.iter().any(loss_based);
    // The receiving end's kernel: this host's, but for an upload to a remote `ccbench serve`.
    let prov = &result.provenance;
    let rcv_release = match (&prov.remote, dir) {
        (Some(r), Direction::Upload) => r.facts.kernel_release.as_deref(),
        _ => prov.host.kernel_release.as_deref(),
    };
    let rcv_kernel = rcv_release.and_then(linux_version);
    ccs.iter()
        .map(|cc| {
            let runs: Vec<&RunRecord> = result.runs.iter().filter(|r| r.status == Status::Complete && (mix || &r.cc == cc)).collect();
            let flows: Vec<Flow> = runs.iter().flat_map(|r| flows_of(r, cc, mix, rcv_kernel)).collect();
            let utilization = median(runs.iter().filter_map(|r| r.metrics.as_ref()?.utilization).collect());
            let drops = |f: &dyn Fn(&crate::results::RunMetrics) -> Option<u64>| runs.iter().filter_map(|r| f(r.metrics.as_ref()?)).sum::<u64>();
            let (drops_loss, drops_buffer) = (drops(&|m| m.drops_loss), drops(&|m| m.drops_buffer));
            let shared = match (queue, link_bps) {
                (Some((buffer, bdp, base_rtt_s)), Some(bps)) if shares_with_loss_based && family(cc) == Some(Family::Bbr) && !runs.is_empty() => {
                    // Its flows per run: the paper's N.
                    let n = (flows.len() as f64 / runs.len() as f64).round().max(1.0) as usize;
                    ware_bbr_share(buffer, bdp, base_rtt_s, n)
                        .map(|p| Model { name: "Ware et al. 2019 (in-flight cap against the shared buffer)", predicts_bps: p * bps / n as f64 })
                }
                _ => None,
            };
            explain(cc, &flows, link_bps, utilization, random_loss && drops_loss >= drops_buffer, drops_buffer > drops_loss, shared)
        })
        .collect()
}

/// `shared`: a model of the algorithm's share of a bottleneck it shares with others, which
/// takes the place of its cause's own model (BBR beside loss-based flows).
fn explain(
    cc: impl Into<Cc>,
    flows: &[Flow],
    link_bps: Option<f64>,
    utilization: Option<f64>,
    loss_is_random: bool,
    loss_is_buffer: bool,
    shared: Option<Model>,
) -> Why {
    let cc: Cc = cc.into();
    let limited_by = LimitedBy::weighted(&flows.iter().map(|f| (*f.limited_by, f.m.active_s)).collect::<Vec<_>>());
    let dominant = limited_by.map(|l| l.dominant()).filter(|d| d.1 >= DOMINANT_SHARE);
    let loss_rate = mean(flows.iter().map(|f| f.m.retrans_rate));
    let recoveries_per_10s = mean(flows.iter().filter(|f| f.m.active_s > 0.0).map(|f| f64::from(f.m.recoveries) / f.m.active_s * 10.0));
    let measured_bps = mean(flows.iter().filter_map(|f| f.goodput_bps));
    let bw_estimate_bps = mean(flows.iter().filter_map(|f| f.m.bw_estimate_bps));
    // A mix's label is no algorithm, and matched by no model.
    let family = cc.algorithm().map(Algorithm::family);
    let is_bbr = family == Some(Family::Bbr);
    let link_bound = utilization.is_some_and(|u| u >= LINK_BOUND);
    // Each flow's model from its own loss rate, RTT and segment size; their mean.
    let per_flow = |f: &dyn Fn(&Mechanism) -> Option<f64>| mean(flows.iter().filter_map(|x| f(x.m)));
    let rtt_s = |m: &Mechanism| (m.mean_rtt_us > 0.0).then_some(m.mean_rtt_us / 1e6);
    // The buffer the kernel kept (read back, doubled for its bookkeeping, socket(7)).
    let kept = |f: &dyn Fn(&SocketBuffers) -> Option<u64>| -> Option<f64> {
        let all: Vec<f64> = flows.iter().map(|x| x.buffers.and_then(f).map(|b| b as f64)).collect::<Option<Vec<_>>>()?;
        mean(all.into_iter())
    };
    let rtt = mean(flows.iter().filter_map(|x| rtt_s(x.m)));
    let rcvbuf_kept = kept(&|b| b.rcvbuf_effective);
    // Every flow's receiver is a kernel of known version before 6.6.
    let fixed_overhead = !flows.is_empty() && flows.iter().all(|f| f.rcv_kernel.is_some_and(window_has_fixed_overhead));
    let model = shared.or_else(|| match dominant.map(|d| d.0) {
        Some(Cause::Cwnd) if loss_rate.is_some_and(|p| p > 0.0) && !link_bound => {
            // A loss-based controller's response function; other families have none here.
            let (label, f): (&'static str, ResponseFunction) = match family? {
                Family::Reno => ("Mathis et al. 1997", mathis_bps),
                Family::Cubic => ("RFC 9438", cubic_response_bps),
                Family::Bbr | Family::Prague | Family::Other => return None,
            };
            per_flow(&|m| f(m.retrans_rate, rtt_s(m)?, f64::from(m.mss))).map(|b| Model { name: label, predicts_bps: b })
        }
        Some(Cause::Cwnd) => per_flow(&|m| Some(m.mean_cwnd * f64::from(m.mss) * 8.0 / rtt_s(m)?)).map(|b| Model { name: "cwnd×MSS/RTT", predicts_bps: b }),
        // The window the peer advertised (`tcpi_snd_wnd`), over the RTT: what the kernel made
        // of the buffer, whatever its rule. Without it, the receive buffer kept less the
        // kernel's fixed overhead at tcp_adv_win_scale's default (a half,
        // `tcp_win_from_space`), but only before Linux 6.6: since then the kernel measures
        // the overhead per flow (`scaling_ratio`) and nothing recorded gives it (measured on
        // 6.18, `--rcvbuf 64kib` at 40 ms: the half predicts 12.9 Mbit/s, 15.5 were carried,
        // the advertised window 0.61 of the buffer predicts 15.9).
        Some(Cause::Rwnd) => match (per_flow(&|m| Some(m.mean_snd_wnd_bytes? * 8.0 / rtt_s(m)?)), rcvbuf_kept) {
            (Some(b), _) => Some(Model { name: "rwnd/RTT", predicts_bps: b }),
            (None, Some(space)) if fixed_overhead => rtt
                .and_then(|r| buffer_bound_bps(tcp_win_from_space(space as u64, 1) as f64, r))
                .map(|b| Model { name: "buffer/RTT (half the rcvbuf kept: tcp_adv_win_scale 1, Linux before 6.6)", predicts_bps: b }),
            (None, _) => None,
        },
        // The send buffer kept holds what is unacknowledged (and what is not sent yet), with
        // the kernel's per-segment overhead small beside TSO's large segments: its whole size
        // over the RTT is the most it lets through.
        Some(Cause::Sndbuf) => match kept(&|b| b.sndbuf_effective) {
            Some(space) => rtt.and_then(|r| buffer_bound_bps(space, r)).map(|b| Model { name: "buffer/RTT (sndbuf kept)", predicts_bps: b }),
            None => per_flow(&|m| Some(m.mean_in_flight * f64::from(m.mss) * 8.0 / rtt_s(m)?)).map(|b| Model { name: "in flight×MSS/RTT", predicts_bps: b }),
        },
        Some(Cause::Pacing) if is_bbr => bw_estimate_bps.map(|b| Model { name: "BBR's bandwidth estimate", predicts_bps: b }),
        _ => None,
    });
    let model_note = match (dominant.map(|d| d.0), &model) {
        (Some(Cause::Rwnd), Some(m)) if m.name == "rwnd/RTT" => {
            rcvbuf_kept.and_then(|k| advertised_of_kept(mean(flows.iter().filter_map(|f| f.m.mean_snd_wnd_bytes))?, k))
        }
        (Some(Cause::Rwnd), None) if rcvbuf_kept.is_some() => Some(
            if flows.iter().all(|f| f.rcv_kernel.is_some()) {
                "not modelled (no advertised window recorded, and since Linux 6.6 the kernel measures the window's share of the buffer per flow)"
            } else {
                "not modelled (no advertised window recorded, and the receiving kernel's version is unknown: since Linux 6.6 it measures the window's share of the buffer per flow)"
            }
            .to_string(),
        ),
        _ => None,
    };
    let bound = dominant.map(|(c, _)| {
        match c {
            Cause::Cwnd if link_bound => "the link",
            Cause::Cwnd if loss_rate.is_some_and(|p| p > 0.0) && loss_is_random => "random loss",
            Cause::Cwnd if loss_is_buffer => "the bottleneck buffer (drops when it is full)",
            Cause::Cwnd => "its congestion window",
            Cause::Pacing if link_bound => "the link",
            Cause::Pacing => "its pacing rate",
            Cause::Host => "the sending host (its stack building and handing over packets)",
            Cause::Rwnd => "the receive window",
            Cause::Sndbuf => "the send buffer",
            Cause::App => "the application",
            Cause::Unknown => "what no counter saw",
        }
        .to_string()
    });
    Why { cc, flows: flows.len(), limited_by, dominant, recoveries_per_10s, loss_rate, measured_bps, model, model_note, link_bps, bw_estimate_bps, bound }
}

/// How a cause reads in a line.
pub fn cause_words(c: Cause) -> &'static str {
    match c {
        Cause::Cwnd => "cwnd-limited",
        Cause::Pacing => "pacing-limited",
        Cause::Host => "host-bound",
        Cause::Rwnd => "receive-window-limited",
        Cause::Sndbuf => "send-buffer-limited",
        Cause::App => "application-limited",
        Cause::Unknown => "unaccounted",
    }
}

fn pct(x: f64) -> String {
    if x > 0.0 && x < 0.001 {
        format!("{:.2} %", x * 100.0)
    } else {
        format!("{:.1} %", x * 100.0)
    }
}

impl Why {
    /// The line after `why  CC  `: the cause, the mechanism, the model and what bound it.
    pub fn text(&self) -> String {
        let Some(l) = self.limited_by else {
            return "not recorded (no limited-by counters in this result: recorded before them, or a sender they are not measured for)".into();
        };
        let mut parts = Vec::new();
        match self.dominant {
            Some((Cause::Pacing, share)) if self.bw_estimate_bps.is_some() => {
                let of_link = match (self.bw_estimate_bps, self.link_bps) {
                    (Some(bw), Some(link)) => format!(" ({:.0} % of the {} link)", bw / link * 100.0, fmt_rate(link)),
                    (Some(bw), None) => format!(" ({})", fmt_rate(bw)),
                    _ => String::new(),
                };
                parts.push(format!("pacing-limited {:.0} % of the time at its bandwidth estimate{of_link}", share * 100.0));
            }
            Some((c, share)) => parts.push(format!("{} {:.0} % of the time", cause_words(c), share * 100.0)),
            None => {
                let mut top: Vec<(Cause, f64)> = Cause::ALL.iter().map(|&c| (c, l.get(c))).filter(|x| x.1 >= 0.05).collect();
                top.sort_by(|a, b| b.1.total_cmp(&a.1));
                let list: Vec<String> = top.iter().map(|(c, s)| format!("{} {:.0} %", c.name(), s * 100.0)).collect();
                parts.push(format!("no cause held {:.0} % of the time ({})", DOMINANT_SHARE * 100.0, list.join(", ")));
            }
        }
        let is_bbr = self.cc.algorithm().is_some_and(|a| a.family() == Family::Bbr);
        match (self.recoveries_per_10s, self.loss_rate) {
            (Some(r), Some(p)) if is_bbr && p > 0.0 => parts.push(format!("{} loss, {r:.0} recoveries per 10 s", pct(p))),
            (Some(r), Some(p)) if p > 0.0 => parts.push(format!("{r:.0} loss recoveries per 10 s at {} loss", pct(p))),
            _ => {}
        }
        let mut tail = match (&self.model, self.measured_bps) {
            (Some(m), Some(meas)) if m.name != "BBR's bandwidth estimate" => {
                format!("{} predicts {}, measured {}", m.name, fmt_rate(m.predicts_bps), fmt_rate(meas))
            }
            (Some(m), None) if m.name != "BBR's bandwidth estimate" => format!("{} predicts {}", m.name, fmt_rate(m.predicts_bps)),
            _ => String::new(),
        };
        match (&self.model_note, tail.is_empty()) {
            (Some(n), false) => tail.push_str(&format!(" ({n})")),
            (Some(n), true) => tail.push_str(n),
            (None, _) => {}
        }
        if let Some(b) = &self.bound {
            if !tail.is_empty() {
                tail.push_str(": ");
            }
            tail.push_str("bound by ");
            tail.push_str(b);
        }
        if !tail.is_empty() {
            parts.push(tail);
        }
        parts.join("; ")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The worked figures of the models: at 1 % loss and 40 ms, 1448-byte segments.
    #[test]
    fn the_models_give_their_published_figures() {
        // Mathis: 1448·8/0.04 · √150 = 3.547 Mbit/s.
        let m = mathis_bps(0.01, 0.04, 1448.0).unwrap();
        assert!((m - 3.547e6).abs() < 5e3, "{m}");
        // RFC 9438: CUBIC's region, (0.4·3.7/1.2)^¼ · 0.04^¼ / 0.01^¾ = 14.90 segments, above
        // Reno's 12.25: 14.90·1448·8/0.04 = 4.32 Mbit/s.
        let c = cubic_response_bps(0.01, 0.04, 1448.0).unwrap();
        assert!((c - 4.32e6).abs() < 2e4, "{c}");
        // At a short RTT the Reno-friendly region is the larger (RFC 9438 §5.2): as Mathis.
        let short = cubic_response_bps(0.01, 0.001, 1448.0).unwrap();
        assert!((short - mathis_bps(0.01, 0.001, 1448.0).unwrap()).abs() < 1.0);
        assert_eq!(mathis_bps(0.0, 0.04, 1448.0), None);
    }

    fn mech(active_s: f64, recoveries: u32, p: f64) -> Mechanism {
        Mechanism { active_s, recoveries, retrans_rate: p, mean_rtt_us: 40_000.0, mss: 1448, mean_cwnd: 15.0, ..Default::default() }
    }

    #[test]
    fn a_dominant_cause_is_named_and_a_split_one_is_not() {
        let cwnd = LimitedBy { cwnd: 0.97, app: 0.03, ..Default::default() };
        let m = mech(10.0, 43, 0.01);
        let w = explain(
            "cubic",
            &[Flow { limited_by: &cwnd, m: &m, goodput_bps: Some(3.4e6), buffers: None, rcv_kernel: None }],
            Some(100e6),
            Some(0.04),
            true,
            false,
            None,
        );
        assert_eq!(w.dominant.map(|d| d.0), Some(Cause::Cwnd));
        assert_eq!(w.bound.as_deref(), Some("random loss"));
        assert_eq!(w.text(), "cwnd-limited 97 % of the time; 43 loss recoveries per 10 s at 1.0 % loss; RFC 9438 predicts 4.32 Mbit/s, measured 3.40 Mbit/s: bound by random loss");
        let split = LimitedBy { cwnd: 0.45, pacing: 0.40, app: 0.15, ..Default::default() };
        let w = explain("cubic", &[Flow { limited_by: &split, m: &m, goodput_bps: None, buffers: None, rcv_kernel: None }], None, None, false, false, None);
        assert_eq!(w.dominant, None);
        assert_eq!(w.bound, None);
        assert!(w.text().starts_with("no cause held 60 % of the time (cwnd 45 %, pacing 40 %, app 15 %)"), "{}", w.text());
        let none = explain("cubic", &[], None, None, false, false, None);
        assert!(none.text().starts_with("not recorded"));
    }

    #[test]
    fn bbr_at_the_link_is_pacing_limited_at_its_estimate() {
        let pacing = LimitedBy { pacing: 0.99, cwnd: 0.01, ..Default::default() };
        let mut m = mech(10.0, 30, 0.01);
        m.bw_estimate_bps = Some(99e6);
        let w = explain(
            "bbr",
            &[Flow { limited_by: &pacing, m: &m, goodput_bps: Some(93e6), buffers: None, rcv_kernel: None }],
            Some(100e6),
            Some(0.97),
            true,
            false,
            None,
        );
        assert_eq!(
            w.text(),
            "pacing-limited 99 % of the time at its bandwidth estimate (99 % of the 100 Mbit/s link); 1.0 % loss, 30 recoveries per 10 s; bound by the link"
        );
    }

    /// A receive-window-bound flow at 40 ms with `--rcvbuf 64kib` (131 072 bytes kept): from
    /// the advertised window where it was recorded, 80 000 × 8 / 0.04 = 16.0 Mbit/s, shown as
    /// 80000/131072 = 0.61 of the buffer; without it, half the buffer, 65 536 × 8 / 0.04 =
    /// 13.1 Mbit/s, on a kernel before 6.6 only, and no model from 6.6 on or when the kernel
    /// is unknown.
    #[test]
    fn a_receive_window_bound_flow_is_modelled_from_its_advertised_window() {
        fn line(m: &Mechanism, buffers: Option<&SocketBuffers>, kernel: Option<(u32, u32)>) -> Why {
            let rwnd = LimitedBy { rwnd: 0.95, app: 0.05, ..Default::default() };
            explain(
                "cubic",
                &[Flow { limited_by: &rwnd, m, goodput_bps: Some(15.5e6), buffers, rcv_kernel: kernel }],
                Some(100e6),
                Some(0.16),
                false,
                false,
                None,
            )
        }
        let kept = SocketBuffers { rcvbuf_requested: Some(65_536), rcvbuf_effective: Some(131_072), ..Default::default() };
        let mut advertised = mech(10.0, 0, 0.0);
        advertised.mean_snd_wnd_bytes = Some(80_000.0);
        for kernel in [Some((6, 18)), Some((5, 15)), None] {
            let w = line(&advertised, Some(&kept), kernel);
            let model = w.model.clone().unwrap();
            assert_eq!(model.name, "rwnd/RTT");
            assert!((model.predicts_bps - 16.0e6).abs() < 1.0, "{model:?}");
            assert_eq!(
                w.text(),
                "receive-window-limited 95 % of the time; rwnd/RTT predicts 16.0 Mbit/s, measured 15.5 Mbit/s (advertised 80.0 kB, 0.61 of the 131.1 kB kept): bound by the receive window"
            );
        }
        let unrecorded = mech(10.0, 0, 0.0);
        let old = line(&unrecorded, Some(&kept), Some((5, 15)));
        let model = old.model.clone().unwrap();
        assert_eq!(model.name, "buffer/RTT (half the rcvbuf kept: tcp_adv_win_scale 1, Linux before 6.6)");
        assert!((model.predicts_bps - 13.1072e6).abs() < 1.0, "{model:?}");
        assert_eq!(old.model_note, None);
        let new = line(&unrecorded, Some(&kept), Some((6, 6)));
        assert_eq!(new.model, None);
        assert_eq!(
            new.text(),
            "receive-window-limited 95 % of the time; not modelled (no advertised window recorded, and since Linux 6.6 the kernel measures the window's share of the buffer per flow): bound by the receive window"
        );
        let unknown = line(&unrecorded, Some(&kept), None);
        assert_eq!(unknown.model, None);
        assert!(unknown.text().contains("the receiving kernel's version is unknown"), "{}", unknown.text());
        // Without a read-back the advertised window's model stands alone.
        let w = line(&advertised, None, None);
        assert_eq!((w.model.map(|m| m.name), w.model_note), (Some("rwnd/RTT"), None));
    }

    /// A send-buffer-bound flow with its buffer read back: the kept buffer over the RTT,
    /// 65 536 × 8 / 0.04 = 13.1 Mbit/s.
    #[test]
    fn a_send_buffer_bound_flow_is_modelled_from_its_kept_buffer() {
        let m = mech(10.0, 0, 0.0);
        let sndbuf = LimitedBy { sndbuf: 0.9, app: 0.1, ..Default::default() };
        let kept = SocketBuffers { sndbuf_requested: Some(32_768), sndbuf_effective: Some(65_536), ..Default::default() };
        let w = explain(
            "cubic",
            &[Flow { limited_by: &sndbuf, m: &m, goodput_bps: Some(11.5e6), buffers: Some(&kept), rcv_kernel: Some((6, 18)) }],
            Some(100e6),
            Some(0.12),
            false,
            false,
            None,
        );
        assert!((w.model.unwrap().predicts_bps - 13.107e6).abs() < 1e3);
    }

    /// BBR beside a loss-based flow: the shared-queue model takes the place of its cause's own
    /// and is printed beside the measurement.
    #[test]
    fn bbr_sharing_with_cubic_shows_its_share_model() {
        let cwnd = LimitedBy { cwnd: 0.8, pacing: 0.2, ..Default::default() };
        let m = mech(10.0, 5, 0.001);
        let shared =
            ware_bbr_share(400.0, 100.0, 0.04, 1).map(|p| Model { name: "Ware et al. 2019 (in-flight cap against the shared buffer)", predicts_bps: p * 50e6 });
        let w = explain(
            "bbr",
            &[Flow { limited_by: &cwnd, m: &m, goodput_bps: Some(20e6), buffers: None, rcv_kernel: None }],
            Some(50e6),
            Some(0.97),
            false,
            true,
            shared,
        );
        assert!(w.text().contains("Ware et al. 2019 (in-flight cap against the shared buffer) predicts 30.5 Mbit/s, measured 20.0 Mbit/s"), "{}", w.text());
    }
}
