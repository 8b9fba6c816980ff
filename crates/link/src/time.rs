//! Time on the link's clock: [`Instant`], a point on it, and [`Duration`], a span.
//!
//! The link model and the emulator around it run on a clock of their own: nanoseconds since
//! the path's *epoch* (the emulator's start, or 0 on a test's virtual clock). These two types
//! keep points and spans apart, so that adding two instants, or passing a delay where a
//! departure time is expected, does not compile.
//!
//! The names mirror `std::time` on purpose (the API reads the same: `now - arrived_at` is a
//! `Duration`, `now + delay` an `Instant`), but the types are distinct from
//! [`std::time::Instant`] and [`std::time::Duration`]: an `Instant` here is a plain count of
//! nanoseconds on a virtual clock, meaningless without its epoch, and the compiler rejects any
//! mix of the two families. In code that also uses `std::time` (the emulator's I/O loop), refer
//! to these as `time::Instant` / `time::Duration` after `use ccbench_link::time;`, and to the
//! others as `std::time::…`. [`Duration::from_std`] and [`Duration::to_std`] convert spans;
//! an instant becomes a `std::time::Instant` only by adding its [`Instant::since_epoch`] to the
//! caller's own epoch.
//!
//! # Arithmetic
//!
//! Only what has a meaning: `Instant + Duration`, `Instant - Duration`, `Instant - Instant`
//! (a `Duration`), `Duration ± Duration`, `Duration * u64` (and `u64 * Duration`),
//! `Duration / u64`, and sums of durations. There is no `Instant + Instant`.
//!
//! All of it **saturates** instead of overflowing or wrapping:
//!
//! * Addition and multiplication stop at [`Instant::MAX`] / [`Duration::MAX`]. The link reads
//!   `Instant::MAX` as "never" (a server stalled behind a zero rate finishes then), and
//!   saturating keeps "never plus a delay" at "never".
//! * Subtraction stops at zero: `a - b` is [`Duration::ZERO`] when `b` is later than `a`, as
//!   for `std::time::Instant` (which has saturated since Rust 1.60). Every subtraction the
//!   model relies on is of an earlier instant from a later one (service start minus arrival,
//!   now minus a due departure); the emulator's lateness and window lengths relied on
//!   saturation explicitly. Use [`Instant::checked_duration_since`] or
//!   [`Duration::checked_sub`] to detect the other case.
//!
//! Division by zero panics, as for integers.
//!
//! Both types are `#[repr(transparent)]` over a `u64` of nanoseconds and serialize as that bare
//! integer (`#[serde(transparent)]`), so a field `delay_ns: Duration` reads and writes exactly
//! the JSON a `delay_ns: u64` did.

use std::fmt;
use std::iter::Sum;
use std::ops::{Add, AddAssign, Div, Mul, Sub, SubAssign};

use serde::{Deserialize, Serialize};

const NS_PER_US: u64 = 1_000;
const NS_PER_MS: u64 = 1_000_000;
const NS_PER_SEC: u64 = 1_000_000_000;

/// A point on the link's clock: nanoseconds since the path's epoch.
///
/// Not a [`std::time::Instant`]: see the [module documentation](self) for why the name is
/// shared and how the two are told apart.
#[derive(Clone, Copy, Default, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(transparent)]
#[repr(transparent)]
pub struct Instant(u64);

/// A span of time in nanoseconds, on the link's clock (delays, intervals, lateness, queueing
/// delay).
///
/// Not a [`std::time::Duration`] (use [`Duration::from_std`] / [`Duration::to_std`]): it is a
/// single `u64` of nanoseconds, so it spans at most about 584 years.
#[derive(Clone, Copy, Default, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(transparent)]
#[repr(transparent)]
pub struct Duration(u64);

impl Instant {
    /// The clock's origin (time 0): the path's start, and where trace timestamps and
    /// scheduled changes are counted from.
    pub const EPOCH: Instant = Instant(0);
    /// The latest representable instant, read by the link as "never".
    pub const MAX: Instant = Instant(u64::MAX);

    /// The instant `ns` nanoseconds after the epoch.
    pub const fn from_nanos(ns: u64) -> Instant {
        Instant(ns)
    }

    /// Nanoseconds since the epoch.
    pub const fn as_nanos(self) -> u64 {
        self.0
    }

    /// The span from the epoch to this instant.
    pub const fn since_epoch(self) -> Duration {
        Duration(self.0)
    }

    /// `self - earlier`, or `None` if `earlier` is later than `self`.
    pub const fn checked_duration_since(self, earlier: Instant) -> Option<Duration> {
        match self.0.checked_sub(earlier.0) {
            Some(ns) => Some(Duration(ns)),
            None => None,
        }
    }

    /// `self - earlier`, or zero if `earlier` is later than `self` (the same as `-`).
    pub const fn saturating_duration_since(self, earlier: Instant) -> Duration {
        Duration(self.0.saturating_sub(earlier.0))
    }

    /// `self + d`, or `None` past [`Instant::MAX`].
    pub const fn checked_add(self, d: Duration) -> Option<Instant> {
        match self.0.checked_add(d.0) {
            Some(ns) => Some(Instant(ns)),
            None => None,
        }
    }

    /// `self - d`, or `None` before the epoch.
    pub const fn checked_sub(self, d: Duration) -> Option<Instant> {
        match self.0.checked_sub(d.0) {
            Some(ns) => Some(Instant(ns)),
            None => None,
        }
    }
}

impl Duration {
    pub const ZERO: Duration = Duration(0);
    /// The longest representable span (about 584 years).
    pub const MAX: Duration = Duration(u64::MAX);

    pub const fn from_nanos(ns: u64) -> Duration {
        Duration(ns)
    }

    /// Saturates at [`Duration::MAX`].
    pub const fn from_micros(us: u64) -> Duration {
        Duration(us.saturating_mul(NS_PER_US))
    }

    /// Saturates at [`Duration::MAX`].
    pub const fn from_millis(ms: u64) -> Duration {
        Duration(ms.saturating_mul(NS_PER_MS))
    }

    /// Saturates at [`Duration::MAX`].
    pub const fn from_secs(s: u64) -> Duration {
        Duration(s.saturating_mul(NS_PER_SEC))
    }

    /// A `std::time::Duration`, rounded down to the nanosecond and saturating at
    /// [`Duration::MAX`].
    pub fn from_std(d: std::time::Duration) -> Duration {
        Duration(u64::try_from(d.as_nanos()).unwrap_or(u64::MAX))
    }

    /// The same span as a `std::time::Duration` (exact).
    pub const fn to_std(self) -> std::time::Duration {
        std::time::Duration::from_nanos(self.0)
    }

    pub const fn as_nanos(self) -> u64 {
        self.0
    }

    /// Microseconds, as `ns as f64 / 1e3`.
    pub fn as_micros_f64(self) -> f64 {
        self.0 as f64 / 1e3
    }

    /// Milliseconds, as `ns as f64 / 1e6`.
    pub fn as_millis_f64(self) -> f64 {
        self.0 as f64 / 1e6
    }

    /// Seconds, as `ns as f64 / 1e9` (one rounding, unlike `std::time::Duration::as_secs_f64`,
    /// which adds the whole and fractional seconds).
    pub fn as_secs_f64(self) -> f64 {
        self.0 as f64 / 1e9
    }

    pub const fn is_zero(self) -> bool {
        self.0 == 0
    }

    /// `self + other`, or `None` past [`Duration::MAX`].
    pub const fn checked_add(self, other: Duration) -> Option<Duration> {
        match self.0.checked_add(other.0) {
            Some(ns) => Some(Duration(ns)),
            None => None,
        }
    }

    /// `self - other`, or `None` if `other` is longer.
    pub const fn checked_sub(self, other: Duration) -> Option<Duration> {
        match self.0.checked_sub(other.0) {
            Some(ns) => Some(Duration(ns)),
            None => None,
        }
    }
}

/// Saturates at [`Instant::MAX`].
impl Add<Duration> for Instant {
    type Output = Instant;
    fn add(self, d: Duration) -> Instant {
        Instant(self.0.saturating_add(d.0))
    }
}

impl AddAssign<Duration> for Instant {
    fn add_assign(&mut self, d: Duration) {
        *self = *self + d;
    }
}

/// Saturates at [`Instant::EPOCH`].
impl Sub<Duration> for Instant {
    type Output = Instant;
    fn sub(self, d: Duration) -> Instant {
        Instant(self.0.saturating_sub(d.0))
    }
}

impl SubAssign<Duration> for Instant {
    fn sub_assign(&mut self, d: Duration) {
        *self = *self - d;
    }
}

/// The span from `earlier` to `self`; zero if `earlier` is later (saturating, as
/// `std::time::Instant`'s).
impl Sub<Instant> for Instant {
    type Output = Duration;
    fn sub(self, earlier: Instant) -> Duration {
        self.saturating_duration_since(earlier)
    }
}

/// Saturates at [`Duration::MAX`].
impl Add for Duration {
    type Output = Duration;
    fn add(self, other: Duration) -> Duration {
        Duration(self.0.saturating_add(other.0))
    }
}

impl AddAssign for Duration {
    fn add_assign(&mut self, other: Duration) {
        *self = *self + other;
    }
}

/// Saturates at [`Duration::ZERO`].
impl Sub for Duration {
    type Output = Duration;
    fn sub(self, other: Duration) -> Duration {
        Duration(self.0.saturating_sub(other.0))
    }
}

impl SubAssign for Duration {
    fn sub_assign(&mut self, other: Duration) {
        *self = *self - other;
    }
}

/// Saturates at [`Duration::MAX`].
impl Mul<u64> for Duration {
    type Output = Duration;
    fn mul(self, k: u64) -> Duration {
        Duration(self.0.saturating_mul(k))
    }
}

/// Saturates at [`Duration::MAX`].
impl Mul<Duration> for u64 {
    type Output = Duration;
    fn mul(self, d: Duration) -> Duration {
        d * self
    }
}

/// Rounds down; panics if `k` is 0.
impl Div<u64> for Duration {
    type Output = Duration;
    fn div(self, k: u64) -> Duration {
        Duration(self.0 / k)
    }
}

/// Saturates at [`Duration::MAX`].
impl Sum for Duration {
    fn sum<I: Iterator<Item = Duration>>(iter: I) -> Duration {
        iter.fold(Duration::ZERO, Add::add)
    }
}

impl<'a> Sum<&'a Duration> for Duration {
    fn sum<I: Iterator<Item = &'a Duration>>(iter: I) -> Duration {
        iter.copied().sum()
    }
}

/// As `std::time::Duration` prints it (exact): `1.5ms`, `20s`, `0ns`.
impl fmt::Debug for Duration {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(&self.to_std(), f)
    }
}

/// The span since the epoch: `t+1.5ms`.
impl fmt::Debug for Instant {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "t+{:?}", self.since_epoch())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MS: Duration = Duration::from_millis(1);

    #[test]
    fn arithmetic_between_points_and_spans() {
        let t = Instant::from_nanos(5_000_000);
        assert_eq!(t + 3 * MS, Instant::from_nanos(8_000_000));
        assert_eq!(t - 2 * MS, Instant::from_nanos(3_000_000));
        assert_eq!((t + MS) - t, MS);
        assert_eq!(MS * 3 / 2, Duration::from_micros(1500));
        assert_eq!(MS + MS - Duration::from_nanos(1), Duration::from_nanos(1_999_999));
        assert_eq!([MS, 2 * MS].iter().sum::<Duration>(), 3 * MS);
        let mut u = t;
        u += MS;
        u -= 2 * MS;
        assert_eq!(u, Instant::from_nanos(4_000_000));
        assert!(Instant::EPOCH < t && t < Instant::MAX);
        assert_eq!(Instant::default(), Instant::EPOCH);
        assert_eq!(Duration::default(), Duration::ZERO);
    }

    #[test]
    fn everything_saturates() {
        let t = Instant::from_nanos(10);
        assert_eq!(t - Instant::from_nanos(11), Duration::ZERO);
        assert_eq!(t.checked_duration_since(Instant::from_nanos(11)), None);
        assert_eq!(t.checked_duration_since(Instant::EPOCH), Some(Duration::from_nanos(10)));
        assert_eq!(t - Duration::from_nanos(11), Instant::EPOCH);
        assert_eq!(t.checked_sub(Duration::from_nanos(11)), None);
        assert_eq!(Instant::MAX + MS, Instant::MAX);
        assert_eq!(Instant::MAX.checked_add(MS), None);
        assert_eq!(Duration::MAX + MS, Duration::MAX);
        assert_eq!(Duration::MAX.checked_add(MS), None);
        assert_eq!(MS - 2 * MS, Duration::ZERO);
        assert_eq!(MS.checked_sub(2 * MS), None);
        assert_eq!(Duration::MAX * 2, Duration::MAX);
        assert_eq!(Duration::from_secs(u64::MAX), Duration::MAX);
    }

    #[test]
    fn conversions() {
        assert_eq!(Duration::from_millis(3).as_nanos(), 3_000_000);
        assert_eq!(Duration::from_secs(2), 2000 * MS);
        assert_eq!(Duration::from_std(std::time::Duration::from_micros(250)), Duration::from_micros(250));
        assert_eq!(Duration::from_std(std::time::Duration::MAX), Duration::MAX);
        assert_eq!(Duration::from_micros(1500).to_std(), std::time::Duration::from_micros(1500));
        assert_eq!(Duration::from_millis(1500).as_secs_f64(), 1.5);
        assert_eq!(Duration::from_micros(1500).as_millis_f64(), 1.5);
        assert_eq!(Duration::from_nanos(1500).as_micros_f64(), 1.5);
        assert_eq!(Instant::from_nanos(7).since_epoch(), Duration::from_nanos(7));
        assert!(Duration::ZERO.is_zero() && !MS.is_zero());
        assert_eq!(format!("{:?} {:?}", Duration::from_micros(1500), Instant::from_nanos(20)), "1.5ms t+20ns");
    }

    #[test]
    fn serializes_as_bare_nanoseconds() {
        assert_eq!(serde_json::to_string(&Duration::from_millis(5)).unwrap(), "5000000");
        assert_eq!(serde_json::to_string(&Instant::MAX).unwrap(), "18446744073709551615");
        assert_eq!(serde_json::from_str::<Instant>("42").unwrap(), Instant::from_nanos(42));
        assert_eq!(serde_json::from_str::<Duration>("7").unwrap(), Duration::from_nanos(7));
        assert!(serde_json::from_str::<Duration>("-1").is_err());
    }

    #[test]
    fn zero_cost() {
        assert_eq!(std::mem::size_of::<Instant>(), 8);
        assert_eq!(std::mem::size_of::<Option<Duration>>(), std::mem::size_of::<Option<u64>>());
    }
}
