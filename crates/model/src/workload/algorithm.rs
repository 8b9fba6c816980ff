//! The congestion-control algorithm a flow runs (issue 8's `[transport:]algorithm` names,
//! issue 20 §2's one type for them).
//!
//! `tcp:bbr` and plain `bbr` are kernel TCP (the kernel's name is what follows `tcp:`);
//! `quic:cubic`, `quic:bbr3`, … run over QUIC in user space, with the algorithm set on the
//! sending endpoint. A name is parsed once, where it enters (the command line, a preset, a sweep,
//! or serve's control connection), and displayed exactly as written everywhere a result names
//! its algorithm. It becomes a `TCP_CONGESTION` name in `net::set_algorithm` and a QUIC
//! controller in `quic::controller_factory`, nowhere else.

use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Deserializer, Serialize, Serializer};

/// The transport a flow runs over.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Transport {
    /// Kernel TCP, the algorithm set with `TCP_CONGESTION`.
    #[default]
    Tcp,
    /// QUIC (noq) in this process, the algorithm set on the sending endpoint's transport config.
    Quic,
}

impl Transport {
    pub fn as_str(self) -> &'static str {
        match self {
            Transport::Tcp => "tcp",
            Transport::Quic => "quic",
        }
    }

    /// The transport a name's prefix names (`tcp`, `quic`).
    fn from_prefix(prefix: &str) -> Option<Transport> {
        [Transport::Tcp, Transport::Quic].into_iter().find(|t| t.as_str() == prefix)
    }
}

/// The kind of controller an algorithm is, for what depends on its kind rather than its name:
/// the why line's models (RFC 9438 for CUBIC, Mathis et al. for Reno, Ware et al. for BBR beside
/// loss-based flows), whether it paces (`tune`'s qdisc advice) and whether `conform bbr` can
/// judge it. The one place that reads a family from a name.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Family {
    /// BBR in any version: the kernel's `bbr` (v1, or v3 out of tree), `bbr2`, `bbr3`.
    Bbr,
    /// CUBIC (RFC 9438).
    Cubic,
    /// Reno and NewReno (RFC 5681, RFC 6582).
    Reno,
    /// TCP Prague (L4S, RFC 9331's scalable response).
    Prague,
    /// Any other (the kernel's `vegas`, `westwood`, …): no model here.
    Other,
}

impl Family {
    /// Loss-based: it grows until the buffer overflows, so it keeps a drop-tail queue full.
    pub fn is_loss_based(self) -> bool {
        matches!(self, Family::Cubic | Family::Reno)
    }
}

/// A congestion-control algorithm on its transport, as the user wrote it.
///
/// Two values are equal when written alike; [`Algorithm::same_as`] says whether two run the same
/// thing (`bbr` and `tcp:bbr` do). The default is the empty name `""`, which no user can write:
/// the placeholder of a workload whose algorithm is filled per run (`params.workload.cc` in
/// result.json).
#[derive(Clone, Default, PartialEq, Eq, Hash)]
pub struct Algorithm {
    transport: Transport,
    name: String,
    /// Whether the transport was written (`tcp:bbr`) or implied (`bbr`), to display it as written.
    prefixed: bool,
}

/// Why a name is not an algorithm; its text is what is allowed.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum AlgorithmError {
    #[error("a transport tcp: or quic: before the algorithm, not {0}: (such as tcp:cubic, quic:cubic or quic:bbr3; a plain name is kernel TCP)")]
    UnknownTransport(String),
    #[error("an algorithm name of letters, digits, '_', '-' or '.' (such as bbr, tcp:bbr or quic:bbr3)")]
    BadName,
}

impl Algorithm {
    /// `name` over `transport`, written with its prefix (`quic:cubic`).
    pub fn new(transport: Transport, name: &str) -> Result<Algorithm, AlgorithmError> {
        format!("{}:{name}", transport.as_str()).parse()
    }

    pub fn transport(&self) -> Transport {
        self.transport
    }

    pub fn is_quic(&self) -> bool {
        self.transport == Transport::Quic
    }

    /// The algorithm without its transport (`quic:bbr3` → `bbr3`, `tcp:bbr` → `bbr`).
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The name the kernel knows it by, for `TCP_CONGESTION`; `None` for a QUIC algorithm.
    pub fn kernel_name(&self) -> Option<&str> {
        (self.transport == Transport::Tcp).then_some(self.name.as_str())
    }

    /// Whether `self` and `other` run the same algorithm, however written (`bbr`, `tcp:bbr`).
    pub fn same_as(&self, other: &Algorithm) -> bool {
        (self.transport, &self.name) == (other.transport, &other.name)
    }

    /// Its [`Family`], from its name on either transport (`bbr`, `tcp:bbr2`, `quic:bbr3` are BBR;
    /// `reno` and `quic:newreno` Reno).
    pub fn family(&self) -> Family {
        let name = self.name.to_ascii_lowercase();
        if name.starts_with("bbr") {
            Family::Bbr
        } else if name == "cubic" {
            Family::Cubic
        } else if name == "reno" || name == "newreno" {
            Family::Reno
        } else if name == "prague" {
            Family::Prague
        } else {
            Family::Other
        }
    }

    /// The placeholder of a workload whose algorithm is filled per run.
    pub fn is_unset(&self) -> bool {
        self.name.is_empty()
    }

    /// The name of `actual` (the algorithm read back from a socket or a connection) written the
    /// way `self` was, so a result compares like with like (`tcp:bbr` stays `tcp:bbr`).
    pub fn written_like(&self, actual: &str) -> String {
        if self.prefixed {
            format!("{}:{actual}", self.transport.as_str())
        } else {
            actual.to_string()
        }
    }
}

impl FromStr for Algorithm {
    type Err = AlgorithmError;
    fn from_str(s: &str) -> Result<Algorithm, AlgorithmError> {
        let (transport, name, prefixed) = match s.split_once(':') {
            None => (Transport::Tcp, s, false),
            Some((prefix, name)) => (Transport::from_prefix(prefix).ok_or_else(|| AlgorithmError::UnknownTransport(prefix.to_string()))?, name, true),
        };
        // What the kernel and the QUIC registry name their algorithms with; anything else (a
        // space, a control character, a second ':') is refused before it reaches either.
        let char_ok = |c: char| c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '.');
        if name.is_empty() || !name.chars().all(char_ok) {
            return Err(AlgorithmError::BadName);
        }
        Ok(Algorithm { transport, name: name.to_string(), prefixed })
    }
}

impl fmt::Display for Algorithm {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.prefixed {
            write!(f, "{}:{}", self.transport.as_str(), self.name)
        } else {
            f.write_str(&self.name)
        }
    }
}

/// As a quoted name (`"tcp:bbr"`), the way messages quote what was asked for.
impl fmt::Debug for Algorithm {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(&self.to_string(), f)
    }
}

/// Compared as displayed, as written (`tcp:bbr` is not `"bbr"`).
impl PartialEq<&str> for Algorithm {
    fn eq(&self, other: &&str) -> bool {
        match other.split_once(':') {
            Some((prefix, name)) => self.prefixed && self.transport.as_str() == prefix && self.name == name,
            None => !self.prefixed && self.name == *other,
        }
    }
}

/// As the string written, so result.json and serve's protocol keep the name they always had.
impl Serialize for Algorithm {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(self)
    }
}

/// Written as its name (`quic:bbr3`), so its schema is a string.
impl schemars::JsonSchema for Algorithm {
    fn schema_name() -> std::borrow::Cow<'static, str> {
        "Algorithm".into()
    }
    fn json_schema(g: &mut schemars::SchemaGenerator) -> schemars::Schema {
        String::json_schema(g)
    }
}

/// A written name, or `""` for the placeholder (see [`Algorithm`]).
impl<'de> Deserialize<'de> for Algorithm {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Algorithm, D::Error> {
        let s = String::deserialize(d)?;
        if s.is_empty() {
            return Ok(Algorithm::default());
        }
        s.parse().map_err(|e: AlgorithmError| serde::de::Error::custom(format!("algorithm {s:?}: expected {e}")))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn alg(s: &str) -> Algorithm {
        s.parse().unwrap()
    }

    #[test]
    fn a_name_is_displayed_as_written() {
        for s in ["bbr", "tcp:bbr", "quic:bbr3", "quic:cubic", "tcp:bbr_1.0-x"] {
            assert_eq!(alg(s).to_string(), s);
            assert_eq!(serde_json::to_string(&alg(s)).unwrap(), format!("{s:?}"));
            assert_eq!(serde_json::from_str::<Algorithm>(&format!("{s:?}")).unwrap(), alg(s));
        }
    }

    #[test]
    fn a_family_is_read_from_the_name_on_either_transport() {
        for (s, f) in [
            ("bbr", Family::Bbr),
            ("tcp:bbr", Family::Bbr),
            ("quic:bbr2", Family::Bbr),
            ("quic:bbr3", Family::Bbr),
            ("cubic", Family::Cubic),
            ("quic:cubic", Family::Cubic),
            ("reno", Family::Reno),
            ("quic:newreno", Family::Reno),
            ("quic:prague", Family::Prague),
            ("vegas", Family::Other),
            ("cubicish", Family::Other),
        ] {
            assert_eq!(alg(s).family(), f, "{s}");
        }
        assert!(Family::Cubic.is_loss_based() && Family::Reno.is_loss_based());
        assert!(!Family::Bbr.is_loss_based() && !Family::Prague.is_loss_based() && !Family::Other.is_loss_based());
    }

    #[test]
    fn a_name_splits_into_transport_and_algorithm() {
        assert_eq!((alg("bbr").transport(), alg("bbr").name(), alg("bbr").kernel_name()), (Transport::Tcp, "bbr", Some("bbr")));
        assert_eq!((alg("tcp:cubic").transport(), alg("tcp:cubic").kernel_name()), (Transport::Tcp, Some("cubic")));
        assert_eq!((alg("quic:bbr3").transport(), alg("quic:bbr3").name(), alg("quic:bbr3").kernel_name()), (Transport::Quic, "bbr3", None));
        assert!(alg("bbr").same_as(&alg("tcp:bbr")) && alg("bbr") != alg("tcp:bbr"));
        assert!(alg("tcp:bbr") == "tcp:bbr" && alg("tcp:bbr") != "bbr" && alg("bbr") == "bbr" && alg("quic:bbr3") != "tcp:bbr3");
        assert!(!alg("cubic").same_as(&alg("quic:cubic")));
        assert_eq!(Algorithm::new(Transport::Quic, "cubic").unwrap(), alg("quic:cubic"));
        assert_eq!(
            (alg("tcp:bbr").written_like("bbr"), alg("bbr").written_like("bbr"), alg("quic:bbr3").written_like("bbr2")),
            ("tcp:bbr".into(), "bbr".into(), "quic:bbr2".into())
        );
    }

    #[test]
    fn a_bad_name_is_refused_saying_what_is_allowed() {
        assert_eq!("udp:cubic".parse::<Algorithm>(), Err(AlgorithmError::UnknownTransport("udp".into())));
        assert!(AlgorithmError::UnknownTransport("udp".into()).to_string().contains("not udp:"));
        for bad in ["", "tcp:", "quic:", "quic:bbr:2", "b br", "bbr\n", "tcp:b\u{1b}"] {
            assert_eq!(bad.parse::<Algorithm>(), Err(AlgorithmError::BadName), "{bad:?}");
        }
        let e = serde_json::from_str::<Algorithm>("\"udp:x\"").unwrap_err().to_string();
        assert!(e.starts_with("algorithm \"udp:x\": expected a transport"), "{e}");
    }

    /// result.json writes the workload before an algorithm is chosen with `"cc": ""`.
    #[test]
    fn the_placeholder_round_trips_as_the_empty_name() {
        assert!(Algorithm::default().is_unset());
        assert_eq!(serde_json::to_string(&Algorithm::default()).unwrap(), "\"\"");
        assert_eq!(format!("{:?}", alg("tcp:bbr")), "\"tcp:bbr\"");
        assert_eq!(serde_json::from_str::<Algorithm>("\"\"").unwrap(), Algorithm::default());
    }
}
