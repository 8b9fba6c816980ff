//! The command line as each workload defines it (issue 20 §1): a workload's own flags (a clap
//! `Args` struct, declared with [`workload_flags!`](crate::workload_flags) in its module's
//! `args` section), which of the flags it takes, and flags → spec ([`FromFlags`]). `ccbench`'s
//! command line flattens every registered workload's flags into `ccbench run` (the registry in
//! `ccbench`'s `workload_flags.rs` generates that struct, `--workload`'s values and the dispatch), so a new
//! workload touches no file of the binary's command line.
//!
//! Also here, because the workloads' flag types need them and `ccbench` uses them for its other
//! flags: [`Expected`] (why a value was refused), reading a preset's value as its flag's text
//! ([`from_text`]), layers of settings ([`Layer`]) and the whole-number and size flags.

use std::any::{Any, TypeId};
use std::fmt;
use std::marker::PhantomData;
use std::str::FromStr;
use std::time::Duration;

use clap::parser::ValueSource;
pub use clap::ArgMatches;
use serde::de::{self, Deserializer, Visitor};
use serde::Deserialize;

use crate::{Algorithm, Direction};
use ccbench_model::units::wire_time;

/// Why a value was refused: what would have been accepted ("a rate such as 10mbit, …"). The
/// flag and the value are added by whoever knows them: `ccbench`'s `cli::usage_error` for
/// clap's errors, the preset loader for a preset's fields.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Expected(pub String);

impl fmt::Display for Expected {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for Expected {}

impl From<String> for Expected {
    fn from(s: String) -> Self {
        Expected(s)
    }
}

impl From<&str> for Expected {
    fn from(s: &str) -> Self {
        Expected(s.to_string())
    }
}

/// A refusal: `Err(Expected(allowed))`.
pub fn expected<T>(allowed: impl Into<String>) -> Result<T, Expected> {
    Err(Expected(allowed.into()))
}

/// Reads a value from a preset the way its flag reads it: a string, number or boolean is taken
/// as the text the flag would have been given (`runs = 4` is `--runs 4`).
pub fn from_text<'de, D: Deserializer<'de>, T: FromStr<Err = Expected>>(d: D) -> Result<T, D::Error> {
    d.deserialize_any(Text(PhantomData))
}

struct Text<T>(PhantomData<T>);

impl<T: FromStr<Err = Expected>> Visitor<'_> for Text<T> {
    type Value = T;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a single value (text or a number)")
    }

    fn visit_str<E: de::Error>(self, v: &str) -> Result<T, E> {
        v.parse().map_err(|e: Expected| E::custom(e.0))
    }

    fn visit_bool<E: de::Error>(self, v: bool) -> Result<T, E> {
        self.visit_str(&v.to_string())
    }

    fn visit_i64<E: de::Error>(self, v: i64) -> Result<T, E> {
        self.visit_str(&v.to_string())
    }

    fn visit_u64<E: de::Error>(self, v: u64) -> Result<T, E> {
        self.visit_str(&v.to_string())
    }

    fn visit_f64<E: de::Error>(self, v: f64) -> Result<T, E> {
        self.visit_str(&v.to_string())
    }
}

/// A repeatable flag in a preset: one value, or a list of them (`at = ["5s:rate=10mbit", …]`).
pub fn one_or_many<'de, D: Deserializer<'de>, T: FromStr<Err = Expected>>(d: D) -> Result<Vec<T>, D::Error> {
    struct OneOrMany<T>(PhantomData<T>);
    impl<'de, T: FromStr<Err = Expected>> Visitor<'de> for OneOrMany<T> {
        type Value = Vec<T>;
        fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
            f.write_str("a value or a list of values")
        }
        fn visit_str<E: de::Error>(self, v: &str) -> Result<Vec<T>, E> {
            Text(PhantomData).visit_str(v).map(|one| vec![one])
        }
        fn visit_seq<A: de::SeqAccess<'de>>(self, mut seq: A) -> Result<Vec<T>, A::Error> {
            let mut all = Vec::new();
            while let Some(Parsed(one)) = seq.next_element::<Parsed<T>>()? {
                all.push(one);
            }
            Ok(all)
        }
    }
    d.deserialize_any(OneOrMany(PhantomData))
}

/// Any [`FromStr`] value, deserialized through [`from_text`].
struct Parsed<T>(T);

impl<'de, T: FromStr<Err = Expected>> Deserialize<'de> for Parsed<T> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        from_text(d).map(Parsed)
    }
}

/// `Deserialize` through `FromStr`, so a preset's field is read exactly as its flag.
#[macro_export]
macro_rules! deserialize_from_text {
    ($($t:ty),* $(,)?) => {$(
        impl<'de> ::serde::Deserialize<'de> for $t {
            fn deserialize<D: ::serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
                $crate::flags::from_text(d)
            }
        }
    )*};
}

/// A whole-number flag with its range.
#[macro_export]
macro_rules! count_flag {
    ($(#[$m:meta])* $name:ident, $range:expr) => {
        $(#[$m])*
        #[derive(Clone, Copy, Debug, PartialEq, Eq)]
        pub struct $name(pub u32);

        impl ::std::str::FromStr for $name {
            type Err = $crate::flags::Expected;
            fn from_str(s: &str) -> Result<Self, $crate::flags::Expected> {
                let range = $range;
                match s.trim().parse::<u32>() {
                    Ok(n) if range.contains(&n) => Ok($name(n)),
                    _ => $crate::flags::expected(format!("a whole number from {} to {}", range.start(), range.end())),
                }
            }
        }

        impl ::std::fmt::Display for $name {
            fn fmt(&self, f: &mut ::std::fmt::Formatter<'_>) -> ::std::fmt::Result {
                write!(f, "{}", self.0)
            }
        }

        $crate::deserialize_from_text!($name);
    };
}

/// A transfer or object size (`--size`, serve's `--max-bytes`): 1 byte to 1 TB.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Size(pub u64);

impl FromStr for Size {
    type Err = Expected;
    fn from_str(s: &str) -> Result<Self, Expected> {
        match ccbench_link::text::parse_bytes(s)? {
            n @ 1..=1_000_000_000_000 => Ok(Size(n)),
            _ => expected("a size between 1 byte and 1 TB"),
        }
    }
}

impl fmt::Display for Size {
    /// In the largest unit that keeps it whole: `10mb`, `4mib`, `1500`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        const UNITS: [(u64, &str); 6] = [(1 << 30, "gib"), (1_000_000_000, "gb"), (1 << 20, "mib"), (1_000_000, "mb"), (1 << 10, "kib"), (1000, "kb")];
        match UNITS.iter().find(|(n, _)| self.0.is_multiple_of(*n)) {
            Some((n, unit)) => write!(f, "{}{unit}", self.0 / n),
            None => write!(f, "{}", self.0),
        }
    }
}

deserialize_from_text!(Size);

/// A socket buffer (`--rcvbuf`, `--sndbuf`): 4 KiB to 1 GiB, as `SO_RCVBUF`/`SO_SNDBUF` take it
/// (the kernel doubles it for its bookkeeping; the doubled value is what is read back).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SockBuf(pub u64);

impl FromStr for SockBuf {
    type Err = Expected;
    fn from_str(s: &str) -> Result<Self, Expected> {
        match ccbench_link::text::parse_bytes(s) {
            Ok(n @ 4096..=1_073_741_824) => Ok(SockBuf(n)),
            _ => expected("a socket buffer between 4kib and 1gib, such as 64kib or 4mib"),
        }
    }
}

impl fmt::Display for SockBuf {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        Size(self.0).fmt(f)
    }
}

deserialize_from_text!(SockBuf);

/// A sending application's rate (`--app-rate`): 8 kbit/s to 100 Gbit/s.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct AppRate(pub u64);

impl FromStr for AppRate {
    type Err = Expected;
    fn from_str(s: &str) -> Result<Self, Expected> {
        match ccbench_link::text::parse_rate(s) {
            Ok(Some(b @ 8_000..=100_000_000_000)) => Ok(AppRate(b)),
            _ => expected("a rate between 8kbit and 100gbit, such as 20mbit"),
        }
    }
}

impl fmt::Display for AppRate {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.0.is_multiple_of(1_000_000) {
            write!(f, "{}mbit", self.0 / 1_000_000)
        } else if self.0.is_multiple_of(1000) {
            write!(f, "{}kbit", self.0 / 1000)
        } else {
            write!(f, "{}bit", self.0)
        }
    }
}

deserialize_from_text!(AppRate);

/// A time into a flow, `4s`, `1500ms` or `250us`: 0 to a day.
fn flow_time(s: &str) -> Option<std::time::Duration> {
    let (v, unit) = ccbench_link::text::split_number(s)?;
    let secs = match unit.as_str() {
        "s" => v,
        "ms" => v / 1e3,
        "us" => v / 1e6,
        _ => return None,
    };
    (0.0..=86_400.0).contains(&secs).then(|| std::time::Duration::from_secs_f64(secs))
}

fn show_time(d: std::time::Duration) -> String {
    if d.subsec_nanos() == 0 {
        format!("{}s", d.as_secs())
    } else if d.as_nanos().is_multiple_of(1_000_000) {
        format!("{}ms", d.as_millis())
    } else {
        format!("{}us", d.as_micros())
    }
}

/// When the sending application's `--app-rate` begins (`--app-rate-from`): a time into the
/// flow such as 4s; before it the application writes as fast as the socket takes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct AppRateFrom(pub std::time::Duration);

impl FromStr for AppRateFrom {
    type Err = Expected;
    fn from_str(s: &str) -> Result<Self, Expected> {
        match flow_time(s) {
            Some(d) => Ok(AppRateFrom(d)),
            None => expected("a time into the flow between 0s and 86400s, such as 4s or 1500ms"),
        }
    }
}

impl fmt::Display for AppRateFrom {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&show_time(self.0))
    }
}

deserialize_from_text!(AppRateFrom);

/// When the sending application writes nothing (`--app-pause`): `AT:LENGTH` times into the
/// flow, comma-separated, in order and not overlapping, such as `4s:1s,8s:500ms`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct AppPauses(pub Vec<(std::time::Duration, std::time::Duration)>);

impl FromStr for AppPauses {
    type Err = Expected;
    fn from_str(s: &str) -> Result<Self, Expected> {
        const ALLOWED: &str = "AT:LENGTH times into the flow, comma-separated, in order and not overlapping, LENGTH above 0, such as 4s:1s or 4s:1s,8s:500ms";
        let mut out: Vec<(std::time::Duration, std::time::Duration)> = Vec::new();
        for part in s.split(',') {
            let Some((at, len)) = part.split_once(':') else { return expected(ALLOWED) };
            let (Some(at), Some(len)) = (flow_time(at), flow_time(len)) else { return expected(ALLOWED) };
            if len.is_zero() || out.last().is_some_and(|(a, l)| *a + *l > at) {
                return expected(ALLOWED);
            }
            out.push((at, len));
        }
        Ok(AppPauses(out))
    }
}

impl fmt::Display for AppPauses {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let parts: Vec<String> = self.0.iter().map(|(a, l)| format!("{}:{}", show_time(*a), show_time(*l))).collect();
        f.write_str(&parts.join(","))
    }
}

deserialize_from_text!(AppPauses);

/// One layer of settings: says only what it sets, and goes over a lower layer field by field.
/// The built-in defaults, a preset's `[defaults]`, its condition and the command line are each
/// one.
pub trait Layer: Sized {
    /// This layer's values where it has them, `lower`'s elsewhere.
    fn over(self, lower: Self) -> Self;
    /// Drops the values clap filled in from `default_value` (shown by --help) rather than from
    /// the command line, which would otherwise hide a preset's.
    fn forget_default(&mut self, id: &str, matches: &ArgMatches);
}

fn defaulted(id: &str, matches: &ArgMatches) -> bool {
    matches.value_source(id) == Some(ValueSource::DefaultValue)
}

impl<T> Layer for Option<T> {
    fn over(self, lower: Self) -> Self {
        self.or(lower)
    }
    fn forget_default(&mut self, id: &str, matches: &ArgMatches) {
        if defaulted(id, matches) {
            *self = None;
        }
    }
}

/// A repeatable flag: a layer that gives it replaces the list below.
impl<T> Layer for Vec<T> {
    fn over(self, lower: Self) -> Self {
        if self.is_empty() {
            lower
        } else {
            self
        }
    }
    fn forget_default(&mut self, id: &str, matches: &ArgMatches) {
        if defaulted(id, matches) {
            self.clear();
        }
    }
}

/// A switch: on if any layer turns it on.
impl Layer for bool {
    fn over(self, lower: Self) -> Self {
        self || lower
    }
    fn forget_default(&mut self, id: &str, matches: &ArgMatches) {
        if defaulted(id, matches) {
            *self = false;
        }
    }
}

/// Declares a layer: the struct as written, and its [`Layer`] impl field by field (a field that
/// is itself a layer, flattened, is merged as one).
#[macro_export]
macro_rules! layer {
    ($(#[$outer:meta])* pub struct $name:ident { $($(#[$m:meta])* pub $f:ident: $t:ty,)* }) => {
        $(#[$outer])*
        pub struct $name {
            $($(#[$m])* pub $f: $t,)*
        }

        impl $crate::flags::Layer for $name {
            fn over(self, _lower: Self) -> Self {
                $name { $($f: $crate::flags::Layer::over(self.$f, _lower.$f),)* }
            }
            fn forget_default(&mut self, _id: &str, _matches: &$crate::flags::ArgMatches) {
                $($crate::flags::Layer::forget_default(&mut self.$f, stringify!($f), _matches);)*
            }
        }
    };
}

/// A workload's own flags as given: each `(--flag, value)`, for refusing those the workload run
/// does not take.
pub trait Given {
    fn given(&self) -> Vec<(String, String)>;
}

/// Declares a workload's flags: a [`layer!`](crate::layer) of optional values that also lists
/// the flags given ([`Given`]). The struct should derive `clap::Args` (with `#[group(skip)]`),
/// `serde::Deserialize` (`deny_unknown_fields, default, rename_all = "kebab-case"`, as a preset
/// names them), `Clone`, `Debug`, `Default` and `PartialEq`.
#[macro_export]
macro_rules! workload_flags {
    ($(#[$outer:meta])* pub struct $name:ident { $($(#[$m:meta])* pub $f:ident: Option<$t:ty>,)* }) => {
        $crate::layer! { $(#[$outer])* pub struct $name { $($(#[$m])* pub $f: Option<$t>,)* } }

        impl $crate::flags::Given for $name {
            #[allow(unused_mut)]
            fn given(&self) -> Vec<(String, String)> {
                let mut given = Vec::new();
                $(if let Some(v) = &self.$f {
                    given.push((format!("--{}", stringify!($f).replace('_', "-")), v.to_string()));
                })*
                given
            }
        }
    };
}

/// A `--workload` value: its name, the help beside it in `--help`'s list of values, the
/// workload's part of `--workload`'s own help, and every flag it takes of those a workload may
/// refuse (any workload's own flags, `--flows`, `--quic-receiver-cc`).
#[derive(Debug, PartialEq, Eq)]
pub struct Kind {
    pub name: &'static str,
    /// Beside the value in `--help`'s list of values.
    pub help: Option<&'static str>,
    /// In `--workload`'s help: `NAME (ABOUT)`.
    pub about: Option<&'static str>,
    pub takes: &'static [&'static str],
}

/// A refusal of the flags: the one-line usage error's flag, value and what is allowed, or, with
/// no flag, what this host lacks (a precondition).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FlagError {
    pub flag: String,
    pub value: String,
    pub allowed: String,
}

impl FlagError {
    pub fn new(flag: &str, value: impl fmt::Display, allowed: impl Into<String>) -> Self {
        FlagError { flag: flag.to_string(), value: value.to_string(), allowed: allowed.into() }
    }

    /// The host cannot run it (Chromium is missing).
    pub fn precondition(message: impl Into<String>) -> Self {
        FlagError { flag: String::new(), value: String::new(), allowed: message.into() }
    }
}

/// What every workload may take from the run's own flags, checked already.
#[derive(Clone, Debug, PartialEq)]
pub struct RunFlags {
    /// `--duration`.
    pub duration: Duration,
    pub direction: Direction,
    /// `--flows` as a number of parallel flows (1 unless the workload takes `--flows`).
    pub flows: u32,
    /// The server's port.
    pub port: u16,
    /// `--sample-interval`.
    pub sample_interval: Duration,
    /// `--timeout`.
    pub timeout: Duration,
    /// `--quic-receiver-cc` after `quic:`, for a workload that takes it.
    pub quic_receiver_cc: Option<String>,
}

impl RunFlags {
    /// `--timeout` as a spec holds it (result.json's `timeout_s`).
    pub fn timeout_s(&self) -> f64 {
        wire_time::to_s(self.timeout)
    }
    /// `--sample-interval` as a spec holds it (result.json's `sample_interval_us`).
    pub fn sample_interval_us(&self) -> u64 {
        wire_time::to_us(self.sample_interval)
    }
}

/// Every registered workload's flags, each found by its spec's type (a workload may read
/// another's: objects reads file's `--size`, browser reads page's `--page` and `--http`).
pub trait FlagSet {
    fn flags_of(&self, spec: TypeId) -> Option<&dyn Any>;
}

impl dyn FlagSet + '_ {
    /// The flags of workload `S`.
    pub fn of<S: FromFlags>(&self) -> &S::Flags {
        self.flags_of(TypeId::of::<S>()).and_then(|f| f.downcast_ref()).expect("a workload's flags are read only when it is registered")
    }
}

/// A workload's command line: the flags it adds to `ccbench run` (and a preset's or sweep's
/// fields), the `--workload` names it runs as, and its spec from the flags.
pub trait FromFlags: Sized + 'static {
    /// Its own flags, in the order `--help` lists them.
    type Flags: clap::Args + Layer + Given + serde::de::DeserializeOwned + Clone + fmt::Debug + Default + PartialEq + 'static;
    /// The `--workload` values it answers to, in the order `--help` lists them.
    const KINDS: &'static [Kind];
    /// Why `--workload kind` cannot run `cc`, when it cannot.
    fn refuse_algorithm(_kind: &str, _cc: &Algorithm) -> Option<String> {
        None
    }
    /// Its spec for `--workload kind`, with the placeholder algorithm (set per run), from its own
    /// flags (and any other workload's, in `flags`) and the run's. The flags it does not take
    /// are refused before.
    fn from_flags(kind: &str, flags: &dyn FlagSet, run: &RunFlags) -> Result<Self, FlagError>;
}

/// The names of a flag struct's flags (without dashes), in its order: a preset's field names.
pub fn names<T: clap::Args>() -> Vec<String> {
    T::augment_args(clap::Command::new("flags")).get_arguments().filter_map(|a| a.get_long().map(str::to_string)).collect()
}

/// `a`, `a or b`, `a, b or c`.
pub fn or_list(items: &[&str]) -> String {
    match items {
        [] => String::new(),
        [one] => one.to_string(),
        [init @ .., last] => format!("{} or {last}", init.join(", ")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn refused<T: FromStr<Err = Expected> + fmt::Debug>(s: &str) -> String {
        match s.parse::<T>() {
            Ok(v) => panic!("{s:?} should be refused, got {v:?}"),
            Err(e) => e.0,
        }
    }

    #[test]
    fn sizes() {
        assert_eq!("1mb".parse(), Ok(Size(1_000_000)));
        assert_eq!(refused::<Size>("0"), "a size between 1 byte and 1 TB");
        assert!(refused::<Size>("big").starts_with("a size such as"));
        for (s, shown) in [("1mb", "1mb"), ("4mib", "4mib"), ("10MB", "10mb"), ("1500", "1500"), ("1.5mb", "1500kb")] {
            assert_eq!(s.parse::<Size>().unwrap().to_string(), shown);
        }
    }

    #[test]
    fn lists_read_as_people_write_them() {
        assert_eq!(or_list(&["page"]), "page");
        assert_eq!(or_list(&["file", "objects"]), "file or objects");
        assert_eq!(or_list(&["bulk", "file", "objects"]), "bulk, file or objects");
    }
}
