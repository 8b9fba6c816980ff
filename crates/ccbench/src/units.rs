//! Human units: "100mbit", "40ms", "1%", "64kib" — how people write them (the grammar the
//! flags' typed values are built on; every parser returns a message saying what is allowed, for
//! the one-line usage error) and how results print them.

/// A parse failure's explanation of what would have been accepted.
pub type Allowed = String;

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

/// A duration in nanoseconds: "40ms", "1.5s", "250us", "2min", "0".
pub fn parse_duration_ns(s: &str) -> Result<u64, Allowed> {
    // The link's grammar, so that a duration reads the same in every flag and AQM parameter.
    s.parse::<ccbench_link::time::Duration>().map(|d| d.as_nanos()).map_err(|e| e.to_string())
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

/// Pretty-prints a rate in bit/s the way people read it.
pub fn fmt_rate(bps: f64) -> String {
    let (v, unit) = if bps >= 1e9 {
        (bps / 1e9, "Gbit/s")
    } else if bps >= 1e6 {
        (bps / 1e6, "Mbit/s")
    } else if bps >= 1e3 {
        (bps / 1e3, "kbit/s")
    } else {
        (bps, "bit/s")
    };
    if v >= 100.0 {
        format!("{v:.0} {unit}")
    } else if v >= 10.0 {
        format!("{v:.1} {unit}")
    } else {
        format!("{v:.2} {unit}")
    }
}

pub fn fmt_bytes(b: u64) -> String {
    let b = b as f64;
    if b >= 1e9 {
        format!("{:.2} GB", b / 1e9)
    } else if b >= 1e6 {
        format!("{:.2} MB", b / 1e6)
    } else if b >= 1e3 {
        format!("{:.1} kB", b / 1e3)
    } else {
        format!("{b:.0} B")
    }
}

pub fn fmt_ms(ns: u64) -> String {
    let ms = ns as f64 / 1e6;
    if ms == ms.round() {
        format!("{ms:.0} ms")
    } else {
        format!("{ms:.3} ms")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rates() {
        assert_eq!(parse_rate("100mbit"), Ok(Some(100_000_000)));
        assert_eq!(parse_rate("1.5Gbit"), Ok(Some(1_500_000_000)));
        assert_eq!(parse_rate("800kbit"), Ok(Some(800_000)));
        assert_eq!(parse_rate("unlimited"), Ok(None));
        assert_eq!(parse_rate("10mbit/s"), Ok(Some(10_000_000)));
        for bad in ["", "fast", "-5mbit", "10mbps", "10 parsecs", "mbit"] {
            assert!(parse_rate(bad).is_err(), "{bad} should be rejected");
        }
    }

    #[test]
    fn durations() {
        assert_eq!(parse_duration_ns("40ms"), Ok(40_000_000));
        assert_eq!(parse_duration_ns("1.5s"), Ok(1_500_000_000));
        assert_eq!(parse_duration_ns("250us"), Ok(250_000));
        assert_eq!(parse_duration_ns("0"), Ok(0));
        assert_eq!(parse_duration_ns("2min"), Ok(120_000_000_000));
        for bad in ["40", "ms", "-3ms", "4 fortnights"] {
            assert!(parse_duration_ns(bad).is_err(), "{bad} should be rejected");
        }
    }

    #[test]
    fn percents() {
        assert_eq!(parse_percent("1%"), Ok(0.01));
        assert_eq!(parse_percent("0"), Ok(0.0));
        assert_eq!(parse_percent("100%"), Ok(1.0));
        for bad in ["101%", "-1%", "0.5", "lots"] {
            assert!(parse_percent(bad).is_err(), "{bad} should be rejected");
        }
    }

    #[test]
    fn bytes() {
        assert_eq!(parse_bytes("160mb"), Ok(160_000_000));
        assert_eq!(parse_bytes("10MiB"), Ok(10 * 1024 * 1024));
        assert!(parse_bytes("lots").is_err());
    }
}
