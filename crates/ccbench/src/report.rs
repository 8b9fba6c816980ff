//! The ten-second terminal summary, in the spirit of hyperfine.

use std::fmt::Write as _;


use crate::path::describe;
use crate::results::{CcSummary, ExperimentResult, Status};
use crate::units::fmt_rate;

pub fn header(result_params: &crate::results::Params) -> String {
    let p = result_params;
    let mut out = String::new();
    let down = describe(&p.path.down);
    let up = describe(&p.path.up);
    let rtt_ms = (p.path.down.delay_ns + p.path.up.delay_ns) as f64 / 1e6;
    if down == up {
        let _ = writeln!(out, "Path      {down} (both directions; base RTT {rtt_ms} ms)");
    } else {
        let _ = writeln!(out, "Path      down: {down}");
        let _ = writeln!(out, "          up:   {up} (base RTT {rtt_ms} ms)");
    }
    let _ = writeln!(out, "Workload  {}; {} runs per algorithm, interleaved (seed {})", p.workload.describe(), p.runs_per_cc, p.seed);
    out
}

fn line(s: &CcSummary, width: usize) -> String {
    let Some(g) = &s.goodput_bps else {
        return format!("  {:<width$}  no completed runs", s.cc);
    };
    let mut out = format!("  {:<width$}  goodput {:>12} ± {:<12}", s.cc, fmt_rate(g.median), fmt_rate((g.p75 - g.p25) / 2.0));
    if let Some(c) = &s.completion_time_s {
        let _ = write!(out, " done in {:.2} s ± {:.2}", c.median, (c.p75 - c.p25) / 2.0);
    }
    if let Some(l) = &s.latency_p99_s {
        let _ = write!(out, "  request p99 {:.2} s", l.median);
    }
    if let Some(t) = &s.html_ttfb_s {
        let _ = write!(out, "  HTML TTFB {:.0} ms", t.median * 1000.0);
    }
    if let (Some(p50), Some(p95)) = (&s.sender_rtt_p50_ms, &s.sender_rtt_p95_ms) {
        let _ = write!(out, "  RTT p50 {:>6.1} ms p95 {:>6.1} ms", p50.median, p95.median);
    }
    if let Some(r) = &s.retrans_rate {
        let _ = write!(out, "  retrans {:>5.2} %", r.median * 100.0);
    }
    if let (Some(l), Some(b)) = (&s.drops_loss, &s.drops_buffer) {
        let _ = write!(out, "  drops: {:.0} loss, {:.0} buffer", l.median, b.median);
    }
    out
}

/// How flows shared the bottleneck, for a run with several flows.
fn sharing_lines(s: &CcSummary) -> String {
    let mut out = String::new();
    let fair = 1.0 / s.shares.iter().map(|x| x.flows).sum::<usize>().max(1) as f64;
    for sh in &s.shares {
        let ci = sh.share_ci.map(|c| format!(" (95 % CI {:.0}–{:.0} %)", c.lo * 100.0, c.hi * 100.0)).unwrap_or_default();
        let _ = writeln!(out, "  {} ({} flow{}): {:.0} % of the bottleneck{ci}; a fair share would be {:.0} %", sh.cc, sh.flows, if sh.flows == 1 { "" } else { "s" }, sh.share.median * 100.0, fair * sh.flows as f64 * 100.0);
    }
    if let Some(j) = &s.jain_index {
        let _ = write!(out, "  Jain's fairness index {:.2} (1 = equal shares; median over {} runs, while all flows were active)", j.median, j.n);
    }
    out
}

pub fn summary(result: &ExperimentResult, location: Option<&std::path::Path>) -> String {
    let mut out = String::new();
    let width = result.summary.iter().map(|s| s.cc.len()).max().unwrap_or(4);
    out.push('\n');
    for s in &result.summary {
        let _ = writeln!(out, "{}", line(s, width));
    }
    let _ = writeln!(out, "  (medians over runs; ± is half the interquartile range; RTT is the sender's smoothed RTT; drops on the data direction per run)");
    out.push('\n');
    for c in &result.comparisons {
        let _ = writeln!(out, "  {}", c.sentence(&result.params.metric));
    }
    for s in &result.summary {
        if s.shares.len() > 1 || s.jain_index.is_some() {
            let _ = writeln!(out, "{}", sharing_lines(s));
        }
    }
    if result.comparisons.is_empty() && result.summary.len() > 1 {
        let _ = writeln!(out, "  no verdict: too few completed runs");
    }
    match result.status {
        Status::Complete => {}
        Status::Interrupted => {
            let _ = writeln!(out, "\n  interrupted: {} run(s) finished and are kept", result.runs.iter().filter(|r| r.status == Status::Complete).count());
        }
        Status::Failed => {
            let err = result.runs.iter().rev().find_map(|r| r.error.clone()).unwrap_or_default();
            let _ = writeln!(out, "\n  failed: {err}");
        }
    }
    let late = result.runs.iter().filter_map(|r| r.metrics.as_ref()).map(|m| m.emulator_lateness_p99_us).fold(0.0f64, f64::max);
    if late > 1000.0 {
        let _ = writeln!(out, "\n  warning: the emulator delivered packets up to {late:.0} µs late (p99 of a run); treat timing-sensitive figures as suspect");
    }
    let steal = result.runs.iter().filter_map(|r| r.host_cpu_steal_fraction).fold(0.0f64, f64::max);
    if steal > 0.02 {
        let _ = writeln!(out, "  warning: the hypervisor took up to {:.1} % of this machine's CPU during a run; its timing may be disturbed", steal * 100.0);
    }
    if let Some(dir) = location {
        let _ = writeln!(out, "\nResults   {}", dir.join("result.json").display());
    }
    out
}
