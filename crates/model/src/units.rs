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

/// result.json and serve's wire carry times as numbers named for their unit (`timeout_s`,
/// `sample_interval_us`, `start_s`); the code that runs a test holds them as `Duration`s. These
/// four convert at that boundary, and nowhere else.
pub mod wire_time {
    use std::time::Duration;

    /// A serialized count of seconds, when it is one: `None` for a negative, not-a-number or
    /// too large value (a request from a client may hold any of them).
    pub fn from_s(s: f64) -> Option<Duration> {
        Duration::try_from_secs_f64(s).ok()
    }

    /// A count of seconds checked already (a flag's, a spec's), saturating: a negative or
    /// not-a-number value is zero, a too large one `Duration::MAX`.
    pub fn from_s_saturating(s: f64) -> Duration {
        from_s(s).unwrap_or(if s > 0.0 { Duration::MAX } else { Duration::ZERO })
    }

    /// `d` as a serialized count of seconds.
    pub fn to_s(d: Duration) -> f64 {
        d.as_secs_f64()
    }

    /// `d` as a serialized count of microseconds (saturating at `u64::MAX`, 584,000 years).
    pub fn to_us(d: Duration) -> u64 {
        u64::try_from(d.as_micros()).unwrap_or(u64::MAX)
    }
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

    /// A client's request may hold any number: none of them may panic on the way in.
    #[test]
    fn wire_times_from_any_number() {
        use std::time::Duration;
        use wire_time::{from_s, from_s_saturating, to_s, to_us};
        assert_eq!(from_s(1.5), Some(Duration::from_millis(1500)));
        for bad in [-1.0, f64::NAN, f64::INFINITY, 1e30] {
            assert_eq!(from_s(bad), None, "{bad}");
        }
        assert_eq!((from_s_saturating(-1.0), from_s_saturating(f64::NAN)), (Duration::ZERO, Duration::ZERO));
        assert_eq!((from_s_saturating(f64::INFINITY), from_s_saturating(1e30)), (Duration::MAX, Duration::MAX));
        assert_eq!((to_s(Duration::from_millis(250)), to_us(Duration::from_nanos(10_999_999))), (0.25, 10_999));
        assert_eq!(to_us(Duration::MAX), u64::MAX);
    }
}
