//! Human units as people write the link's parameters: "100mbit", "1%", "64kib", "40ms" (a
//! [`Duration`]'s `FromStr` is here too). The one grammar for them: the link's own types parse
//! through it here, and the CLI's flags through the same functions. Every parser says what it
//! would have accepted, for a one-line error that the caller completes with the flag's name.

use std::fmt;
use std::str::FromStr;

use crate::config::{Jitter, LossModel, Policer, Reorder};
pub use crate::refused::{Allowed, Refused};
use crate::time::Duration;

/// A number and the unit after it (lower case): "1.5Gbit" → (1.5, "gbit").
pub fn split_number(s: &str) -> Option<(f64, String)> {
    let s = s.trim();
    let end = s.find(|c: char| !(c.is_ascii_digit() || c == '.')).unwrap_or(s.len());
    let (num, unit) = s.split_at(end);
    let value: f64 = num.parse().ok()?;
    if !value.is_finite() {
        return None;
    }
    Some((value, unit.trim().to_ascii_lowercase()))
}

/// Rate in bits per second; `None` means unlimited.
pub fn parse_rate(s: &str) -> Result<Option<u64>, Allowed> {
    const ALLOWED: &str = "a rate such as 10mbit, 1.5gbit, 800kbit or 'unlimited' (units: bit, kbit, mbit, gbit, tbit)";
    if s.trim().eq_ignore_ascii_case("unlimited") {
        return Ok(None);
    }
    let (v, unit) = split_number(s).ok_or_else(|| ALLOWED.to_string())?;
    if unit.ends_with("bps") || unit.ends_with("byte") {
        // tc reads "mbps" as megabytes, most people as megabits: refuse to guess.
        return Err(format!("{ALLOWED}; 'bps' is ambiguous (tc reads it as bytes)"));
    }
    let mult = match unit.trim_end_matches("/s") {
        "bit" => 1.0,
        "kbit" | "k" => 1e3,
        "mbit" | "m" => 1e6,
        "gbit" | "g" => 1e9,
        "tbit" | "t" => 1e12,
        _ => return Err(ALLOWED.into()),
    };
    let bps = v * mult;
    if bps < 1.0 {
        return Err(ALLOWED.into());
    }
    Ok(Some(bps.round() as u64))
}

/// A probability written as a percentage: "1%", "0.5%", "0".
pub fn parse_percent(s: &str) -> Result<f64, Allowed> {
    const ALLOWED: &str = "a percentage from 0% to 100%, such as 1% or 0.5%";
    let (v, unit) = split_number(s).ok_or_else(|| ALLOWED.to_string())?;
    match unit.as_str() {
        "%" => {}
        "" if v == 0.0 => {}
        _ => return Err(ALLOWED.into()),
    }
    if !(0.0..=100.0).contains(&v) {
        return Err(ALLOWED.into());
    }
    Ok(v / 100.0)
}

/// A byte count: "160mb", "10MiB", "1500", "64kib".
pub fn parse_bytes(s: &str) -> Result<u64, Allowed> {
    const ALLOWED: &str = "a size such as 10mb, 160MiB, 64kib or 1500 (units: b, kb, kib, mb, mib, gb, gib)";
    let (v, unit) = split_number(s).ok_or_else(|| ALLOWED.to_string())?;
    let mult = match unit.as_str() {
        "" | "b" => 1.0,
        "kb" | "k" => 1e3,
        "kib" => 1024.0,
        "mb" | "m" => 1e6,
        "mib" => 1024.0 * 1024.0,
        "gb" | "g" => 1e9,
        "gib" => 1024.0 * 1024.0 * 1024.0,
        _ => return Err(ALLOWED.into()),
    };
    Ok((v * mult).round() as u64)
}

/// Why a duration's text was refused: what is accepted.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct DurationParseError;

impl fmt::Display for DurationParseError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a duration such as 40ms, 1.5s, 250us or 2min (units: ns, us, ms, s, min)")
    }
}

impl std::error::Error for DurationParseError {}

/// A duration as people write it: `40ms`, `1.5s`, `250us`, `2min`, or a bare `0`; rounded to
/// the nanosecond. The one grammar for durations: the CLI's flags read theirs through it.
impl FromStr for Duration {
    type Err = DurationParseError;
    fn from_str(s: &str) -> Result<Self, DurationParseError> {
        let (value, unit) = split_number(s).ok_or(DurationParseError)?;
        let ns_per_unit = match unit.as_str() {
            "ns" => 1.0,
            "us" | "µs" => 1e3,
            "ms" => 1e6,
            "s" | "sec" => 1e9,
            "min" | "m" => 60e9,
            "" if value == 0.0 => 0.0,
            _ => return Err(DurationParseError),
        };
        // `as` saturates: an absurd duration becomes Duration::MAX, never wraps.
        Ok(Duration::from_nanos((value * ns_per_unit).round() as u64))
    }
}

// ---------------------------------------------------------------------------------------------
// The link's types as they are written (`--loss`, `--jitter`, `--policer` take these; `--aqm`
// takes [`crate::Aqm`]'s, in `aqm.rs`).

/// The longest jitter accepted: as long as the longest one-way delay.
const MAX_JITTER: Duration = Duration::from_secs(10);

/// A percentage for Bernoulli loss (`1%`, `0` for none), or
/// `gilbert:p=1%,r=25%[,bad=100%][,good=0%]` (or `ge:…`) for bursty Gilbert–Elliott loss.
impl FromStr for LossModel {
    type Err = Refused;
    fn from_str(value: &str) -> Result<Self, Refused> {
        const GE: &str = "gilbert:p=P%,r=R%[,bad=B%][,good=G%] (p: good→bad per packet, r: bad→good, bad/good: loss in each state; defaults bad=100%, good=0%)";
        let refused = |a: &str| Err(Refused(a.to_string()));
        if let Some(params) = value.strip_prefix("gilbert:").or_else(|| value.strip_prefix("ge:")) {
            let (mut p, mut r, mut bad, mut good) = (None, None, 1.0, 0.0);
            for kv in params.split(',') {
                let Some((k, v)) = kv.split_once('=') else { return refused(GE) };
                let Ok(x) = parse_percent(v) else { return refused(GE) };
                match k.trim() {
                    "p" => p = Some(x),
                    "r" => r = Some(x),
                    "bad" => bad = x,
                    "good" => good = x,
                    _ => return refused(GE),
                }
            }
            let (Some(p), Some(r)) = (p, r) else { return refused(GE) };
            if r == 0.0 && p > 0.0 {
                return refused("r > 0% (with r=0% the link stays in the bad state forever)");
            }
            return Ok(LossModel::GilbertElliott { p_good_to_bad: p, p_bad_to_good: r, loss_in_good: good, loss_in_bad: bad });
        }
        let p = parse_percent(value).map_err(|a| Refused(format!("{a}, or {GE}")))?;
        Ok(if p == 0.0 { LossModel::None } else { LossModel::Bernoulli { p } })
    }
}

/// `2ms` (uniform from 0 to 2 ms), `normal:1ms` (half-normal, sd 1 ms), either followed by
/// `,reorder`; at most 10 s.
impl FromStr for Jitter {
    type Err = Refused;
    fn from_str(value: &str) -> Result<Self, Refused> {
        const ALLOWED: &str = "a jitter such as 2ms, normal:1ms, or 2ms,reorder";
        let refused = || Err(Refused(ALLOWED.to_string()));
        let (spec, reorder) = match value.split_once(',') {
            Some((spec, "reorder")) => (spec, true),
            Some(_) => return refused(),
            None => (value, false),
        };
        let (normal, amount) = match spec.strip_prefix("normal:") {
            Some(a) => (true, a),
            None => (false, spec.strip_prefix("uniform:").unwrap_or(spec)),
        };
        let Ok(d) = amount.parse::<Duration>() else { return refused() };
        if d > MAX_JITTER {
            return Err(Refused("a jitter of at most 10s".into()));
        }
        Ok(match (d.is_zero(), normal) {
            (true, _) => Jitter::None,
            (false, true) => Jitter::Normal { sd_ns: d, reorder },
            (false, false) => Jitter::Uniform { max_ns: d, reorder },
        })
    }
}

/// The longest reordering displacement accepted, in time (as a jitter's) and in packets.
const MAX_REORDER: Duration = Duration::from_secs(10);
const MAX_REORDER_PACKETS: u32 = 1000;

/// `P%:DISPLACEMENT`: a share of packets (`1%`) held back by a time (`3ms`) or a number of
/// packets' serialization times (`5pkt`, `5packets`); `0` for none.
impl FromStr for Reorder {
    type Err = Refused;
    fn from_str(value: &str) -> Result<Self, Refused> {
        const ALLOWED: &str =
            "a reordering P%:DISPLACEMENT such as 1%:3ms or 1%:5pkt (a share of packets from 0% to 100%, held back by more than 0 and up to 10s or 1000 packets), or 0";
        let refused = || Err(Refused(ALLOWED.to_string()));
        if value.trim() == "0" {
            return Ok(Reorder::None);
        }
        let Some((share, by)) = value.split_once(':') else { return refused() };
        let Ok(p) = parse_percent(share) else { return refused() };
        let by = by.trim().to_ascii_lowercase();
        let reorder = if let Some(n) = by.strip_suffix("packets").or_else(|| by.strip_suffix("pkt")) {
            match n.trim().parse::<u32>() {
                Ok(packets @ 1..=MAX_REORDER_PACKETS) => Reorder::Packets { p, packets },
                _ => return refused(),
            }
        } else {
            match by.parse::<Duration>() {
                Ok(d) if !d.is_zero() && d <= MAX_REORDER => Reorder::Time { p, by_ns: d },
                _ => return refused(),
            }
        };
        Ok(if p == 0.0 { Reorder::None } else { reorder })
    }
}

/// `RATE[:BURST]`: the burst is 10 ms at the rate unless given (at least two packets), and at
/// least one full 1500-byte packet.
impl FromStr for Policer {
    type Err = Refused;
    fn from_str(value: &str) -> Result<Self, Refused> {
        const ALLOWED: &str = "a policer RATE[:BURST] such as 10mbit or 10mbit:64kib";
        let (rate_s, burst_s) = match value.split_once(':') {
            Some((r, b)) => (r, Some(b)),
            None => (value, None),
        };
        let Ok(Some(rate_bps)) = parse_rate(rate_s) else { return Err(Refused(ALLOWED.into())) };
        let burst_bytes = match burst_s {
            Some(b) => parse_bytes(b).map_err(|_| Refused(ALLOWED.into()))?,
            None => (rate_bps / 8 / 100).max(3000),
        };
        if burst_bytes < 1500 {
            return Err(Refused("a burst of at least one 1500-byte packet".into()));
        }
        Ok(Policer { rate_bps, burst_bytes })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_durations_as_people_write_them() {
        for (text, ns) in [
            ("40ms", 40_000_000),
            ("1.5s", 1_500_000_000),
            ("250us", 250_000),
            ("250µs", 250_000),
            ("2min", 120_000_000_000),
            ("0", 0),
            (" 7 ns ", 7),
            ("3Sec", 3_000_000_000),
        ] {
            assert_eq!(text.parse::<Duration>(), Ok(Duration::from_nanos(ns)), "{text}");
        }
        for bad in ["", "5", "ms", "-1ms", "1.2.3s", "5 parsecs", "infs"] {
            assert_eq!(bad.parse::<Duration>(), Err(DurationParseError), "{bad}");
        }
    }

    #[test]
    fn the_link_types_read_as_written() {
        assert_eq!("0".parse(), Ok(LossModel::None));
        assert_eq!("1%".parse(), Ok(LossModel::Bernoulli { p: 0.01 }));
        assert_eq!(
            "gilbert:p=1%,r=25%".parse(),
            Ok(LossModel::GilbertElliott { p_good_to_bad: 0.01, p_bad_to_good: 0.25, loss_in_good: 0.0, loss_in_bad: 1.0 })
        );
        assert!("gilbert:p=1%,r=0%".parse::<LossModel>().unwrap_err().0.starts_with("r > 0%"));
        assert!("150%".parse::<LossModel>().unwrap_err().0.ends_with("defaults bad=100%, good=0%)"));
        let ms = Duration::from_millis(1);
        assert_eq!("2ms".parse(), Ok(Jitter::Uniform { max_ns: 2 * ms, reorder: false }));
        assert_eq!("normal:1ms,reorder".parse(), Ok(Jitter::Normal { sd_ns: ms, reorder: true }));
        assert_eq!("0".parse(), Ok(Jitter::None));
        assert_eq!("11s".parse::<Jitter>(), Err(Refused("a jitter of at most 10s".into())));
        assert_eq!("2ms,shuffle".parse::<Jitter>(), Err(Refused("a jitter such as 2ms, normal:1ms, or 2ms,reorder".into())));
        assert_eq!("1%:3ms".parse(), Ok(Reorder::Time { p: 0.01, by_ns: 3 * ms }));
        assert_eq!("0.5%:5pkt".parse(), Ok(Reorder::Packets { p: 0.005, packets: 5 }));
        assert_eq!("100%:2packets".parse(), Ok(Reorder::Packets { p: 1.0, packets: 2 }));
        assert_eq!("0".parse(), Ok(Reorder::None));
        assert_eq!("0%:3ms".parse(), Ok(Reorder::None));
        for bad in ["1%", "3ms", "1%:0ms", "1%:11s", "101%:3ms", "1:3ms", "1%:0pkt", "1%:1001pkt", "1%:3 parsecs", "-1%:3ms"] {
            assert!(bad.parse::<Reorder>().unwrap_err().0.starts_with("a reordering P%:DISPLACEMENT"), "{bad}");
        }
        assert_eq!("10mbit".parse(), Ok(Policer { rate_bps: 10_000_000, burst_bytes: 12_500 }));
        assert_eq!("1mbit".parse(), Ok(Policer { rate_bps: 1_000_000, burst_bytes: 3000 }), "at least two packets by default");
        assert_eq!("10mbit:64kib".parse(), Ok(Policer { rate_bps: 10_000_000, burst_bytes: 65_536 }));
        assert_eq!("10mbit:1000".parse::<Policer>(), Err(Refused("a burst of at least one 1500-byte packet".into())));
    }
}
