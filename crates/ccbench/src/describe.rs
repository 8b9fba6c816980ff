//! Human descriptions of a path, for the terminal summary and the report.

use ccbench_link::{Buffer, DirectionConfig, Jitter, LossModel, Rate, Reorder};

use crate::units;

/// One line describing a direction, for the terminal summary.
pub(crate) fn describe(d: &DirectionConfig) -> String {
    let rate = match d.rate {
        Rate::Unlimited => "unlimited".to_string(),
        Rate::BitsPerSec(b) => units::fmt_rate(b as f64),
    };
    let loss = match &d.loss {
        LossModel::None => "no loss".to_string(),
        LossModel::Bernoulli { p } => format!("{}% random loss", trim_float(p * 100.0)),
        LossModel::GilbertElliott { p_good_to_bad, p_bad_to_good, loss_in_good, loss_in_bad } => format!(
            "Gilbert–Elliott loss (p={}%, r={}%, bad={}%, good={}%)",
            trim_float(p_good_to_bad * 100.0),
            trim_float(p_bad_to_good * 100.0),
            trim_float(loss_in_bad * 100.0),
            trim_float(loss_in_good * 100.0)
        ),
    };
    let buffer = match d.buffer {
        Buffer::Unlimited => "unlimited buffer".to_string(),
        Buffer::Bytes(b) => format!("{} buffer", units::fmt_bytes(b)),
        Buffer::Packets(n) => format!("{n}-packet buffer"),
    };
    let rate = match &d.trace {
        Some(t) => format!("trace {} (mean {})", t.name(), units::fmt_rate(t.mean_bps())),
        None => rate,
    };
    let mut out = format!("{rate}, {} one way, {loss}, {buffer}", units::fmt_ms(d.delay_ns.as_nanos()));
    match d.jitter {
        Jitter::None => {}
        Jitter::Uniform { max_ns, reorder } => {
            out.push_str(&format!(", jitter 0–{}{}", units::fmt_ms(max_ns.as_nanos()), if reorder { " (reordering)" } else { "" }))
        }
        Jitter::Normal { sd_ns, reorder } => {
            out.push_str(&format!(", half-normal jitter sd {}{}", units::fmt_ms(sd_ns.as_nanos()), if reorder { " (reordering)" } else { "" }))
        }
    }
    if let Some(p) = d.aggregation() {
        out.push_str(&format!(", released in bursts every {}", units::fmt_ms(p.as_nanos())));
    }
    match d.reorder {
        Reorder::None => {}
        Reorder::Time { p, by_ns } => {
            out.push_str(&format!(", {}% of packets held back {} (reordering)", trim_float(p * 100.0), units::fmt_ms(by_ns.as_nanos())))
        }
        Reorder::Packets { p, packets } => out.push_str(&format!(", {}% of packets held back {packets} packets (reordering)", trim_float(p * 100.0))),
    }
    if let Some(p) = &d.policer {
        out.push_str(&format!(", policed at {} (burst {})", units::fmt_rate(p.rate_bps as f64), units::fmt_bytes(p.burst_bytes)));
    }
    if let Some(aqm) = d.aqm.describe() {
        out.push_str(&format!(", {aqm}"));
    }
    for c in &d.schedule {
        let mut what = Vec::new();
        if let Some(r) = c.rate {
            what.push(format!(
                "rate {}",
                match r {
                    Rate::Unlimited => "unlimited".into(),
                    Rate::BitsPerSec(b) => units::fmt_rate(b as f64),
                }
            ));
        }
        if let Some(dl) = c.delay_ns {
            what.push(format!("delay {}", units::fmt_ms(dl.as_nanos())));
        }
        if let Some(l) = &c.loss {
            what.push(format!("loss {l:?}"));
        }
        out.push_str(&format!("; at {} s: {}", c.at_ns.as_nanos() as f64 / 1e9, what.join(", ")));
    }
    out
}

pub(crate) fn trim_float(x: f64) -> String {
    let s = format!("{x:.4}");
    s.trim_end_matches('0').trim_end_matches('.').to_string()
}
