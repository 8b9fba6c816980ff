//! Turns the path flags into a validated [`PathSpec`], naming the offending flag on error.

use ccbench_emu::PathSpec;
use ccbench_link::{Buffer, DirectionConfig, LossModel, Rate};

use crate::cli::PathArgs;
use crate::error::UsageError;
use crate::units::{self, BufferSpec};

/// Above this the emulator is certainly not the tool; below it a "rate" is a typo.
const MAX_RATE_BPS: u64 = 100_000_000_000;
const MIN_RATE_BPS: u64 = 10_000;
const MAX_ONE_WAY_DELAY_NS: u64 = 10_000_000_000;
/// A BDP-sized buffer on a short or slow path can round down to nothing; keep room for a
/// few full-size packets so the link can be kept busy at all.
const MIN_BDP_BUFFER_PACKETS: u64 = 4;

fn pick<'a>(specific: &'a Option<String>, specific_flag: &'static str, general: &'a str, general_flag: &'static str) -> (&'a str, &'static str) {
    match specific {
        Some(v) => (v.as_str(), specific_flag),
        None => (general, general_flag),
    }
}

pub fn rate(value: &str, flag: &str) -> Result<Rate, UsageError> {
    let bps = units::parse_rate(value).map_err(|a| UsageError::new(flag, value, a))?;
    match bps {
        None => Ok(Rate::Unlimited),
        Some(b) if (MIN_RATE_BPS..=MAX_RATE_BPS).contains(&b) => Ok(Rate::BitsPerSec(b)),
        Some(_) => Err(UsageError::new(flag, value, "a rate between 10kbit and 100gbit, or 'unlimited'")),
    }
}

fn delay(value: &str, flag: &str, divide: u64) -> Result<u64, UsageError> {
    let ns = units::parse_duration_ns(value).map_err(|a| UsageError::new(flag, value, a))?;
    if ns / divide > MAX_ONE_WAY_DELAY_NS {
        return Err(UsageError::new(flag, value, "a delay of at most 10s one way"));
    }
    Ok(ns / divide)
}

/// Parses "1%" or "gilbert:p=1%,r=25%,bad=100%,good=0%".
pub fn loss(value: &str, flag: &str) -> Result<LossModel, UsageError> {
    const GE: &str = "gilbert:p=P%,r=R%[,bad=B%][,good=G%] (p: good→bad per packet, r: bad→good, bad/good: loss in each state; defaults bad=100%, good=0%)";
    if let Some(params) = value.strip_prefix("gilbert:").or_else(|| value.strip_prefix("ge:")) {
        let (mut p, mut r, mut bad, mut good) = (None, None, 1.0, 0.0);
        for kv in params.split(',') {
            let (k, v) = kv.split_once('=').ok_or_else(|| UsageError::new(flag, value, GE))?;
            let x = units::parse_percent(v).map_err(|_| UsageError::new(flag, value, GE))?;
            match k.trim() {
                "p" => p = Some(x),
                "r" => r = Some(x),
                "bad" => bad = x,
                "good" => good = x,
                _ => return Err(UsageError::new(flag, value, GE)),
            }
        }
        let (Some(p), Some(r)) = (p, r) else { return Err(UsageError::new(flag, value, GE)) };
        if r == 0.0 && p > 0.0 {
            return Err(UsageError::new(flag, value, "r > 0% (with r=0% the link stays in the bad state forever)"));
        }
        return Ok(LossModel::GilbertElliott { p_good_to_bad: p, p_bad_to_good: r, loss_in_good: good, loss_in_bad: bad });
    }
    let p = units::parse_percent(value).map_err(|a| UsageError::new(flag, value, format!("{a}, or {GE}")))?;
    Ok(if p == 0.0 { LossModel::None } else { LossModel::Bernoulli { p } })
}

fn buffer(value: &str, flag: &str, rate: Rate, rtt_ns: u64, mtu: u32) -> Result<Buffer, UsageError> {
    let spec = units::parse_buffer(value).map_err(|a| UsageError::new(flag, value, a))?;
    Ok(match spec {
        BufferSpec::Unlimited => Buffer::Unlimited,
        BufferSpec::Bytes(b) => Buffer::Bytes(b),
        BufferSpec::Packets(n) => Buffer::Packets(n),
        BufferSpec::Bdp(k) => match rate {
            Rate::Unlimited => Buffer::Unlimited,
            Rate::BitsPerSec(bps) => {
                let bdp = (bps as f64 / 8.0 * rtt_ns as f64 / 1e9 * k).round() as u64;
                Buffer::Bytes(bdp.max(MIN_BDP_BUFFER_PACKETS * u64::from(mtu)))
            }
        },
    })
}

/// Builds the path, validating every flag.
pub fn build(args: &PathArgs, seed: u64, sample_interval_us: u64) -> Result<PathSpec, UsageError> {
    let (v, f) = pick(&args.rate_down, "--rate-down", &args.rate, "--rate");
    let rate_down = rate(v, f)?;
    let (v, f) = pick(&args.rate_up, "--rate-up", &args.rate, "--rate");
    let rate_up = rate(v, f)?;
    let delay_down = match &args.delay_down {
        Some(v) => delay(v, "--delay-down", 1)?,
        None => delay(&args.rtt, "--rtt", 2)?,
    };
    let delay_up = match &args.delay_up {
        Some(v) => delay(v, "--delay-up", 1)?,
        None => delay(&args.rtt, "--rtt", 2)?,
    };
    let rtt_ns = delay_down + delay_up;
    let (v, f) = pick(&args.loss_down, "--loss-down", &args.loss, "--loss");
    let loss_down = loss(v, f)?;
    let (v, f) = pick(&args.loss_up, "--loss-up", &args.loss, "--loss");
    let loss_up = loss(v, f)?;
    let (v, f) = pick(&args.buffer_down, "--buffer-down", &args.buffer, "--buffer");
    let buffer_down = buffer(v, f, rate_down, rtt_ns, args.mtu)?;
    let (v, f) = pick(&args.buffer_up, "--buffer-up", &args.buffer, "--buffer");
    let buffer_up = buffer(v, f, rate_up, rtt_ns, args.mtu)?;
    Ok(PathSpec {
        down: DirectionConfig { rate: rate_down, delay_ns: delay_down, loss: loss_down, buffer: buffer_down, ..Default::default() },
        up: DirectionConfig { rate: rate_up, delay_ns: delay_up, loss: loss_up, buffer: buffer_up, ..Default::default() },
        mtu: args.mtu,
        seed,
        sample_interval_us,
        offload: !args.no_offload,
        batch_us: {
            let ns = units::parse_duration_ns(&args.emulator_batch).map_err(|a| UsageError::new("--emulator-batch", &args.emulator_batch, a))?;
            if ns > 1_000_000 {
                return Err(UsageError::new("--emulator-batch", &args.emulator_batch, "at most 1ms"));
            }
            ns / 1000
        },
    })
}

/// One line describing a direction, for the terminal summary.
pub fn describe(d: &DirectionConfig) -> String {
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
    format!("{rate}, {} one way, {loss}, {buffer}", units::fmt_ms(d.delay_ns))
}

pub fn trim_float(x: f64) -> String {
    let s = format!("{x:.4}");
    s.trim_end_matches('0').trim_end_matches('.').to_string()
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::Parser;

    fn args(extra: &[&str]) -> PathArgs {
        let mut argv = vec!["ccbench", "exec"];
        argv.extend_from_slice(extra);
        argv.extend_from_slice(&["--", "true"]);
        match crate::cli::Cli::parse_from(argv).command {
            crate::cli::Command::Exec(e) => e.path,
            _ => unreachable!(),
        }
    }

    #[test]
    fn rtt_splits_evenly_and_bdp_uses_it() {
        let spec = build(&args(&["--rate", "100mbit", "--rtt", "40ms"]), 1, 10_000).unwrap();
        assert_eq!(spec.down.delay_ns, 20_000_000);
        assert_eq!(spec.up.delay_ns, 20_000_000);
        assert_eq!(spec.down.buffer, Buffer::Bytes(500_000));
    }

    #[test]
    fn per_direction_overrides() {
        let spec = build(&args(&["--rate", "10mbit", "--rate-up", "1mbit", "--loss-down", "2%", "--delay-up", "5ms"]), 1, 10_000).unwrap();
        assert_eq!(spec.down.rate, Rate::BitsPerSec(10_000_000));
        assert_eq!(spec.up.rate, Rate::BitsPerSec(1_000_000));
        assert_eq!(spec.down.loss, LossModel::Bernoulli { p: 0.02 });
        assert_eq!(spec.up.loss, LossModel::None);
        assert_eq!(spec.up.delay_ns, 5_000_000);
    }

    #[test]
    fn errors_name_the_flag() {
        let e = build(&args(&["--rate-up", "0mbit"]), 1, 10_000).unwrap_err();
        assert_eq!(e.flag, "--rate-up");
        let e = build(&args(&["--loss", "150%"]), 1, 10_000).unwrap_err();
        assert_eq!(e.flag, "--loss");
        let e = build(&args(&["--rtt", "forty"]), 1, 10_000).unwrap_err();
        assert_eq!(e.flag, "--rtt");
    }

    #[test]
    fn gilbert_elliott() {
        let m = loss("gilbert:p=1%,r=25%", "--loss").unwrap();
        assert_eq!(m, LossModel::GilbertElliott { p_good_to_bad: 0.01, p_bad_to_good: 0.25, loss_in_good: 0.0, loss_in_bad: 1.0 });
        assert!(loss("gilbert:p=1%", "--loss").is_err());
        assert!(loss("gilbert:p=1%,r=0%", "--loss").is_err());
    }
}
