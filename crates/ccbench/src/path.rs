//! Turns the path flags into a validated [`PathSpec`], naming the offending flag on error.

use ccbench_emu::PathSpec;
use ccbench_link::time::{Duration, Instant};
use ccbench_link::{Aqm, Buffer, DirectionConfig, Jitter, LossModel, Policer, Rate, ScheduledChange, TraceRate};

use crate::cli::PathArgs;
use ccbench::error::UsageError;
use ccbench::units::{self, BufferSpec};

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

/// Like [`pick`] for flags without a default: the per-direction value, else the general one,
/// else nothing — with the flag it came from, for error messages.
fn pick_opt<'a, T>(specific: &'a Option<T>, specific_flag: &'static str, general: &'a Option<T>, general_flag: &'static str) -> Option<(&'a T, &'static str)> {
    specific.as_ref().map(|v| (v, specific_flag)).or_else(|| general.as_ref().map(|v| (v, general_flag)))
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

fn trace(path: &std::path::Path, flag: &str) -> Result<TraceRate, UsageError> {
    let shown = path.display().to_string();
    let text = std::fs::read_to_string(path).map_err(|e| UsageError::new(flag, &shown, format!("a readable Mahimahi trace file ({e})")))?;
    let name = path.file_name().map(|n| n.to_string_lossy().to_string()).unwrap_or(shown.clone());
    TraceRate::parse(&name, &text)
        .map_err(|e| UsageError::new(flag, &shown, format!("a Mahimahi trace (one millisecond timestamp per line, non-decreasing): {e}")))
}

fn jitter(value: &str, flag: &str) -> Result<Jitter, UsageError> {
    const ALLOWED: &str = "a jitter such as 2ms, normal:1ms, or 2ms,reorder";
    let (spec, reorder) = match value.split_once(',') {
        Some((spec, "reorder")) => (spec, true),
        Some(_) => return Err(UsageError::new(flag, value, ALLOWED)),
        None => (value, false),
    };
    let (normal, amount) = match spec.strip_prefix("normal:") {
        Some(a) => (true, a),
        None => (false, spec.strip_prefix("uniform:").unwrap_or(spec)),
    };
    let ns = units::parse_duration_ns(amount).map_err(|_| UsageError::new(flag, value, ALLOWED))?;
    if ns > MAX_ONE_WAY_DELAY_NS {
        return Err(UsageError::new(flag, value, "a jitter of at most 10s"));
    }
    Ok(match (ns, normal) {
        (0, _) => Jitter::None,
        (ns, true) => Jitter::Normal { sd_ns: Duration::from_nanos(ns), reorder },
        (ns, false) => Jitter::Uniform { max_ns: Duration::from_nanos(ns), reorder },
    })
}

fn policer(value: &str, flag: &str) -> Result<Policer, UsageError> {
    const ALLOWED: &str = "a policer RATE[:BURST] such as 10mbit or 10mbit:64kib";
    let (rate_s, burst_s) = match value.split_once(':') {
        Some((r, b)) => (r, Some(b)),
        None => (value, None),
    };
    let Ok(Some(rate_bps)) = units::parse_rate(rate_s) else { return Err(UsageError::new(flag, value, ALLOWED)) };
    let burst_bytes = match burst_s {
        Some(b) => units::parse_bytes(b).map_err(|_| UsageError::new(flag, value, ALLOWED))?,
        None => (rate_bps / 8 / 100).max(3000),
    };
    if burst_bytes < 1500 {
        return Err(UsageError::new(flag, value, "a burst of at least one 1500-byte packet"));
    }
    Ok(Policer { rate_bps, burst_bytes })
}

fn aqm(value: &str) -> Result<Aqm, UsageError> {
    const ALLOWED: &str = "droptail, or codel[:target=5ms,interval=100ms]";
    let flag = "--aqm";
    match value.split_once(':').map(|(a, b)| (a, Some(b))).unwrap_or((value, None)) {
        ("droptail", None) => Ok(Aqm::DropTail),
        ("codel", params) => {
            let Aqm::Codel { mut target_ns, mut interval_ns } = Aqm::codel() else { return Err(UsageError::new(flag, value, ALLOWED)) };
            for kv in params.into_iter().flat_map(|p| p.split(',')) {
                let (k, v) = kv.split_once('=').ok_or_else(|| UsageError::new(flag, value, ALLOWED))?;
                let ns = units::parse_duration_ns(v).map_err(|_| UsageError::new(flag, value, ALLOWED))?;
                match k {
                    "target" => target_ns = Duration::from_nanos(ns),
                    "interval" if ns > 0 => interval_ns = Duration::from_nanos(ns),
                    _ => return Err(UsageError::new(flag, value, ALLOWED)),
                }
            }
            Ok(Aqm::Codel { target_ns, interval_ns })
        }
        _ => Err(UsageError::new(flag, value, ALLOWED)),
    }
}

/// `--at TIME:KEY=VALUE,…` into a change for each direction (either may be empty).
fn scheduled(value: &str) -> Result<(ScheduledChange, ScheduledChange), UsageError> {
    const ALLOWED: &str = "TIME:KEY=VALUE[,KEY=VALUE…] such as 10s:rate=20mbit or 5s:rtt=80ms,loss=1% (keys: rate, rtt, loss, rate-down, rate-up, delay-down, delay-up, loss-down, loss-up)";
    let flag = "--at";
    let (time, changes) = value.split_once(':').ok_or_else(|| UsageError::new(flag, value, ALLOWED))?;
    let at_ns = Instant::from_nanos(units::parse_duration_ns(time).map_err(|_| UsageError::new(flag, value, ALLOWED))?);
    let mut down = ScheduledChange { at_ns, ..Default::default() };
    let mut up = ScheduledChange { at_ns, ..Default::default() };
    // Split on commas, except inside a value (Gilbert–Elliott loss has its own "p=…,r=…").
    const KEYS: [&str; 9] = ["rate", "rtt", "loss", "rate-down", "rate-up", "delay-down", "delay-up", "loss-down", "loss-up"];
    let mut parts: Vec<String> = Vec::new();
    for piece in changes.split(',') {
        let key = piece.split('=').next().unwrap_or("").trim();
        match parts.last_mut() {
            Some(last) if !KEYS.contains(&key) => {
                last.push(',');
                last.push_str(piece);
            }
            _ => parts.push(piece.to_string()),
        }
    }
    for kv in &parts {
        let (k, v) = kv.split_once('=').ok_or_else(|| UsageError::new(flag, value, ALLOWED))?;
        let rate_of = |v: &str| rate(v, flag).map(Some);
        match k.trim() {
            "rate" => (down.rate, up.rate) = (rate_of(v)?, rate_of(v)?),
            "rate-down" => down.rate = rate_of(v)?,
            "rate-up" => up.rate = rate_of(v)?,
            "rtt" => {
                let half = Duration::from_nanos(delay(v, flag, 2)?);
                (down.delay_ns, up.delay_ns) = (Some(half), Some(half));
            }
            "delay-down" => down.delay_ns = Some(Duration::from_nanos(delay(v, flag, 1)?)),
            "delay-up" => up.delay_ns = Some(Duration::from_nanos(delay(v, flag, 1)?)),
            "loss" => (down.loss, up.loss) = (Some(loss(v, flag)?), Some(loss(v, flag)?)),
            "loss-down" => down.loss = Some(loss(v, flag)?),
            "loss-up" => up.loss = Some(loss(v, flag)?),
            _ => return Err(UsageError::new(flag, value, ALLOWED)),
        }
    }
    Ok((down, up))
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
    let trace_down = pick_opt(&args.trace_down, "--trace-down", &args.trace, "--trace").map(|(p, f)| trace(p, f)).transpose()?;
    let trace_up = pick_opt(&args.trace_up, "--trace-up", &args.trace, "--trace").map(|(p, f)| trace(p, f)).transpose()?;
    let jitter_down = pick_opt(&args.jitter_down, "--jitter-down", &args.jitter, "--jitter").map(|(v, f)| jitter(v, f)).transpose()?.unwrap_or(Jitter::None);
    let jitter_up = pick_opt(&args.jitter_up, "--jitter-up", &args.jitter, "--jitter").map(|(v, f)| jitter(v, f)).transpose()?.unwrap_or(Jitter::None);
    let policer_down = pick_opt(&args.policer_down, "--policer-down", &args.policer, "--policer").map(|(v, f)| policer(v, f)).transpose()?;
    let policer_up = pick_opt(&args.policer_up, "--policer-up", &args.policer, "--policer").map(|(v, f)| policer(v, f)).transpose()?;
    let aqm = aqm(&args.aqm)?;
    let (mut schedule_down, mut schedule_up) = (Vec::new(), Vec::new());
    for at in &args.at {
        let (d, u) = scheduled(at)?;
        if d.rate.is_some() || d.delay_ns.is_some() || d.loss.is_some() {
            schedule_down.push(d);
        }
        if u.rate.is_some() || u.delay_ns.is_some() || u.loss.is_some() {
            schedule_up.push(u);
        }
    }
    Ok(PathSpec {
        down: DirectionConfig {
            rate: rate_down,
            delay_ns: Duration::from_nanos(delay_down),
            loss: loss_down,
            buffer: buffer_down,
            trace: trace_down,
            schedule: schedule_down,
            jitter: jitter_down,
            policer: policer_down,
            aqm,
        },
        up: DirectionConfig {
            rate: rate_up,
            delay_ns: Duration::from_nanos(delay_up),
            loss: loss_up,
            buffer: buffer_up,
            trace: trace_up,
            schedule: schedule_up,
            jitter: jitter_up,
            policer: policer_up,
            aqm,
        },
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
        assert_eq!(spec.down.delay_ns, Duration::from_nanos(20_000_000));
        assert_eq!(spec.up.delay_ns, Duration::from_nanos(20_000_000));
        assert_eq!(spec.down.buffer, Buffer::Bytes(500_000));
    }

    #[test]
    fn per_direction_overrides() {
        let spec = build(&args(&["--rate", "10mbit", "--rate-up", "1mbit", "--loss-down", "2%", "--delay-up", "5ms"]), 1, 10_000).unwrap();
        assert_eq!(spec.down.rate, Rate::BitsPerSec(10_000_000));
        assert_eq!(spec.up.rate, Rate::BitsPerSec(1_000_000));
        assert_eq!(spec.down.loss, LossModel::Bernoulli { p: 0.02 });
        assert_eq!(spec.up.loss, LossModel::None);
        assert_eq!(spec.up.delay_ns, Duration::from_nanos(5_000_000));
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
    fn link_stages_from_flags() {
        let spec = build(
            &args(&[
                "--jitter",
                "2ms,reorder",
                "--policer-up",
                "10mbit:64kib",
                "--aqm",
                "codel:target=10ms",
                "--at",
                "5s:rate=20mbit,loss=gilbert:p=1%,r=25%",
                "--at",
                "9s:delay-down=30ms",
            ]),
            1,
            10_000,
        )
        .unwrap();
        assert_eq!(spec.down.jitter, Jitter::Uniform { max_ns: Duration::from_nanos(2_000_000), reorder: true });
        assert_eq!(spec.up.policer, Some(Policer { rate_bps: 10_000_000, burst_bytes: 65_536 }));
        assert_eq!(spec.down.policer, None);
        assert_eq!(spec.down.aqm, Aqm::Codel { target_ns: Duration::from_nanos(10_000_000), interval_ns: Duration::from_nanos(100_000_000) });
        assert_eq!(spec.down.schedule.len(), 2);
        assert_eq!(spec.up.schedule.len(), 1, "the 9 s change is downlink-only");
        let first = &spec.down.schedule[0];
        assert_eq!((first.at_ns, first.rate), (Instant::from_nanos(5_000_000_000), Some(Rate::BitsPerSec(20_000_000))));
        assert!(matches!(first.loss, Some(LossModel::GilbertElliott { .. })));
        assert_eq!(spec.down.schedule[1].delay_ns, Some(Duration::from_nanos(30_000_000)));
        for bad in [
            vec!["--jitter", "2 parsecs"],
            vec!["--policer", "fast"],
            vec!["--aqm", "red"],
            vec!["--at", "5s"],
            vec!["--at", "5s:color=red"],
            vec!["--trace", "/nonexistent.trace"],
        ] {
            let flag = bad[0];
            let e = build(&args(&bad), 1, 10_000).unwrap_err();
            assert_eq!(e.flag, flag, "{bad:?}");
        }
    }

    #[test]
    fn gilbert_elliott() {
        let m = loss("gilbert:p=1%,r=25%", "--loss").unwrap();
        assert_eq!(m, LossModel::GilbertElliott { p_good_to_bad: 0.01, p_bad_to_good: 0.25, loss_in_good: 0.0, loss_in_bad: 1.0 });
        assert!(loss("gilbert:p=1%", "--loss").is_err());
        assert!(loss("gilbert:p=1%,r=0%", "--loss").is_err());
    }
}
