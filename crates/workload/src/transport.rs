//! Transport-qualified algorithm names (issue 8): `[transport:]algorithm`.
//!
//! `tcp:bbr` and plain `bbr` are kernel TCP (the kernel's name is what follows `tcp:`);
//! `quic:cubic`, `quic:bbr3`, … run over QUIC in user space, with the algorithm set on the
//! sending endpoint. The name is kept as written everywhere a result names its algorithm.

use serde::{Deserialize, Serialize};

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
}

/// The transports a name may start with.
pub const TRANSPORTS: &[&str] = &["tcp", "quic"];

/// Splits `name` into its transport and algorithm. A name without a known transport prefix is a
/// kernel TCP algorithm (`bbr`); `Err` names an unknown prefix (`udp:cubic`).
pub fn split_cc(name: &str) -> Result<(Transport, &str), String> {
    match name.split_once(':') {
        None => Ok((Transport::Tcp, name)),
        Some(("tcp", alg)) => Ok((Transport::Tcp, alg)),
        Some(("quic", alg)) => Ok((Transport::Quic, alg)),
        Some((other, _)) => Err(other.to_string()),
    }
}

/// The transport of an algorithm name (TCP for names that do not parse: they never run).
pub fn transport_of(name: &str) -> Transport {
    split_cc(name).map(|(t, _)| t).unwrap_or(Transport::Tcp)
}

/// The name the kernel knows a TCP algorithm by (`tcp:bbr` → `bbr`).
pub fn kernel_name(name: &str) -> &str {
    name.strip_prefix("tcp:").unwrap_or(name)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_split_into_transport_and_algorithm() {
        assert_eq!(split_cc("bbr"), Ok((Transport::Tcp, "bbr")));
        assert_eq!(split_cc("tcp:cubic"), Ok((Transport::Tcp, "cubic")));
        assert_eq!(split_cc("quic:bbr3"), Ok((Transport::Quic, "bbr3")));
        assert_eq!(split_cc("udp:cubic"), Err("udp".to_string()));
        assert_eq!(kernel_name("tcp:bbr"), "bbr");
        assert_eq!(kernel_name("cubic"), "cubic");
        assert_eq!(transport_of("quic:cubic"), Transport::Quic);
    }
}
