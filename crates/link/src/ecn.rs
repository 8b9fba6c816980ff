//! Explicit Congestion Notification as the link sees it: each packet's codepoint (RFC 3168
//! section 5, the two low bits of the IPv4 TOS / IPv6 Traffic Class byte) and the faults a
//! path may do to it.
//!
//! The AQMs mark instead of dropping ([`Ecn::mark`]) when their `ecn` parameter is on; the
//! codepoint a packet leaves the link with is [`crate::Delivery::ecn`], which the emulator writes
//! back into the IP header.

use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Serialize};

use crate::refused::Refused;

/// An ECN codepoint (RFC 3168 section 5; ECT(1) is L4S's identifier, RFC 9331 section 4).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Ecn {
    /// `00`: the transport does not do ECN; congestion is signalled by dropping.
    #[default]
    NotEct,
    /// `01`: ECN-capable, L4S (RFC 9331).
    Ect1,
    /// `10`: ECN-capable, classic (RFC 3168).
    Ect0,
    /// `11`: Congestion Experienced.
    Ce,
}

impl Ecn {
    /// The codepoint of the two low bits of a TOS / Traffic Class byte.
    pub fn from_bits(tos: u8) -> Ecn {
        match tos & 0b11 {
            0b00 => Ecn::NotEct,
            0b01 => Ecn::Ect1,
            0b10 => Ecn::Ect0,
            _ => Ecn::Ce,
        }
    }

    /// Its two bits.
    pub fn bits(self) -> u8 {
        match self {
            Ecn::NotEct => 0b00,
            Ecn::Ect1 => 0b01,
            Ecn::Ect0 => 0b10,
            Ecn::Ce => 0b11,
        }
    }

    /// Whether the sender is ECN-capable: ECT(0), ECT(1), or CE (marked on the way, RFC 3168
    /// section 5: a CE packet came from an ECN-capable transport).
    pub fn is_capable(self) -> bool {
        self != Ecn::NotEct
    }

    /// The L4S identifier: ECT(1) or CE (RFC 9331 section 5.1, what DualPI2 classifies into its
    /// L queue).
    pub fn is_l4s(self) -> bool {
        matches!(self, Ecn::Ect1 | Ecn::Ce)
    }
}

/// A fault of the path in front of the bottleneck's buffer (a middlebox), applied to every
/// arriving packet before loss and the AQM.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum EcnFault {
    /// ECN bleaching: the ECN field is cleared to Not-ECT, so the receiver never sees a mark and
    /// the AQM drops instead (RFC 8311 section 4.2 and RFC 9000 section 13.4.2 describe it).
    Bleach,
    /// CE is set on every packet, ECN-capable or not: a broken TOS rewrite, which an ECN sender
    /// reads as congestion on every packet.
    CeAll,
    /// Every ECN-capable packet is dropped (a firewall that refuses the ECN bits); counted as
    /// loss (`drops_loss`).
    DropEct,
}

impl EcnFault {
    pub const ALLOWED: &'static str = "bleach, ce-all, drop-ect";

    pub fn name(self) -> &'static str {
        match self {
            EcnFault::Bleach => "bleach",
            EcnFault::CeAll => "ce-all",
            EcnFault::DropEct => "drop-ect",
        }
    }

    /// What the fault does to a packet arriving with `ecn`: its new codepoint, or `None` when
    /// the path drops it.
    pub fn apply(self, ecn: Ecn) -> Option<Ecn> {
        match self {
            EcnFault::Bleach => Some(Ecn::NotEct),
            EcnFault::CeAll => Some(Ecn::Ce),
            EcnFault::DropEct if ecn.is_capable() => None,
            EcnFault::DropEct => Some(ecn),
        }
    }
}

impl fmt::Display for EcnFault {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl FromStr for EcnFault {
    type Err = Refused;
    fn from_str(s: &str) -> Result<Self, Refused> {
        match s.trim() {
            "bleach" => Ok(EcnFault::Bleach),
            "ce-all" => Ok(EcnFault::CeAll),
            "drop-ect" => Ok(EcnFault::DropEct),
            _ => Err(Refused(Self::ALLOWED.into())),
        }
    }
}

/// For `skip_serializing_if`: an AQM with ECN off writes no `ecn` key, so its JSON reads as
/// before ECN.
pub(crate) fn is_off(on: &bool) -> bool {
    !*on
}

/// An AQM's `ecn=on|off` parameter.
pub(crate) fn on_off(key: &str, v: &str) -> Result<bool, String> {
    match v {
        "on" | "1" | "true" => Ok(true),
        "off" | "0" | "false" => Ok(false),
        _ => Err(format!("{key} is on or off")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn codepoints_round_trip_through_the_tos_byte() {
        for (tos, e) in [(0x00, Ecn::NotEct), (0x01, Ecn::Ect1), (0x02, Ecn::Ect0), (0x03, Ecn::Ce), (0xb9, Ecn::Ect1), (0xfe, Ecn::Ect0)] {
            assert_eq!(Ecn::from_bits(tos), e);
            assert_eq!(e.bits(), tos & 3);
        }
        assert!(!Ecn::NotEct.is_capable() && Ecn::Ect0.is_capable() && Ecn::Ce.is_capable());
        assert!(Ecn::Ect1.is_l4s() && Ecn::Ce.is_l4s() && !Ecn::Ect0.is_l4s() && !Ecn::NotEct.is_l4s());
    }

    #[test]
    fn faults_do_what_they_say() {
        use Ecn::*;
        for e in [NotEct, Ect0, Ect1, Ce] {
            assert_eq!(EcnFault::Bleach.apply(e), Some(NotEct));
            assert_eq!(EcnFault::CeAll.apply(e), Some(Ce));
        }
        assert_eq!(EcnFault::DropEct.apply(NotEct), Some(NotEct));
        assert_eq!(EcnFault::DropEct.apply(Ect0), None);
        assert_eq!(EcnFault::DropEct.apply(Ect1), None);
        for f in [EcnFault::Bleach, EcnFault::CeAll, EcnFault::DropEct] {
            assert_eq!(f.name().parse::<EcnFault>(), Ok(f));
        }
        assert_eq!("bleached".parse::<EcnFault>(), Err(Refused(EcnFault::ALLOWED.into())));
    }
}
