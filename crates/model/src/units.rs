//! Human units: "100mbit", "40ms", "1%", "64kib" — how people write them (the grammar the
//! flags' typed values are built on; every parser returns a message saying what is allowed, for
//! the one-line usage error) and how results print them.

/// The link's grammar for rates, percentages and byte counts, so that a value reads the same in
/// every flag and in the link's own types.
pub use ccbench_link::text::{parse_bytes, parse_percent, parse_rate, split_number, Allowed};

/// A duration in nanoseconds: "40ms", "1.5s", "250us", "2min", "0".
pub fn parse_duration_ns(s: &str) -> Result<u64, Allowed> {
    // The link's grammar, so that a duration reads the same in every flag and AQM parameter.
    s.parse::<ccbench_link::time::Duration>().map(|d| d.as_nanos()).map_err(|e| e.to_string())
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

/// Defined with the workloads, whose descriptions print sizes.
/// How byte counts print, in the workloads' descriptions and everywhere results are shown.
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
    ccbench_link::aqm::ms(ccbench_link::time::Duration::from_nanos(ns))
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
