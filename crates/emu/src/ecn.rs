//! The ECN field of an IP packet (RFC 3168 section 5): read on the way into the link, written
//! back on the way out when the link marked it (or a fault rewrote it).
//!
//! IPv4 keeps it in the low two bits of the TOS byte and covers it with the header checksum,
//! which is updated incrementally (RFC 1624 equation 3) rather than recomputed: the packet's
//! other header bytes are left exactly as the sender wrote them. IPv6 keeps it in the low two
//! bits of the Traffic Class, which straddles the first two bytes, and has no header checksum.
//! Neither TCP's nor UDP's checksum covers it.

use ccbench_link::Ecn;

/// The codepoint of an IPv4 or IPv6 packet; Not-ECT for anything else (too short, another
/// version), which the link then treats as a transport without ECN.
pub fn read(ip: &[u8]) -> Ecn {
    match ip.first().map(|b| b >> 4) {
        Some(4) if ip.len() >= 20 => Ecn::from_bits(ip[1]),
        Some(6) if ip.len() >= 40 => Ecn::from_bits(ip[1] >> 4),
        _ => Ecn::NotEct,
    }
}

/// Sets the codepoint of an IPv4 or IPv6 packet to `ecn`, fixing an IPv4 header checksum;
/// leaves anything else alone. Returns whether it changed the packet.
pub fn write(ip: &mut [u8], ecn: Ecn) -> bool {
    match ip.first().map(|b| b >> 4) {
        Some(4) if ip.len() >= 20 => {
            let tos = (ip[1] & !0b11) | ecn.bits();
            if tos == ip[1] {
                return false;
            }
            // The checksummed 16-bit word holding the TOS is the first (version/IHL, TOS).
            let old = u16::from_be_bytes([ip[0], ip[1]]);
            ip[1] = tos;
            let new = u16::from_be_bytes([ip[0], ip[1]]);
            let hc = u16::from_be_bytes([ip[10], ip[11]]);
            ip[10..12].copy_from_slice(&incremental_checksum(hc, old, new).to_be_bytes());
            true
        }
        Some(6) if ip.len() >= 40 => {
            let b1 = (ip[1] & !0b0011_0000) | (ecn.bits() << 4);
            let changed = b1 != ip[1];
            ip[1] = b1;
            changed
        }
        _ => false,
    }
}

/// RFC 1624 equation 3: the header checksum `hc` after the 16-bit word `old` became `new`,
/// `HC' = ~(~HC + ~m + m')` in one's complement arithmetic.
pub fn incremental_checksum(hc: u16, old: u16, new: u16) -> u16 {
    let mut sum = u32::from(!hc) + u32::from(!old) + u32::from(new);
    while sum > 0xffff {
        sum = (sum & 0xffff) + (sum >> 16);
    }
    !(sum as u16)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::gso::ipv4_header_checksum;

    /// A real IPv4/TCP header as the kernel sends it (10.77.0.1 → 10.77.0.2, TTL 64, DF),
    /// with TOS `tos` and its checksum computed in full.
    fn ipv4(tos: u8) -> Vec<u8> {
        let mut h = vec![0x45, tos, 0x05, 0xdc, 0x1c, 0x46, 0x40, 0x00, 0x40, 0x06, 0, 0, 10, 77, 0, 1, 10, 77, 0, 2];
        let c = ipv4_header_checksum(&h);
        h[10..12].copy_from_slice(&c.to_be_bytes());
        h.extend_from_slice(&[0u8; 20]);
        h
    }

    #[test]
    fn reads_the_ipv4_tos_and_the_ipv6_traffic_class() {
        assert_eq!(read(&ipv4(0x02)), Ecn::Ect0);
        assert_eq!(read(&ipv4(0xb9)), Ecn::Ect1, "DSCP bits do not matter");
        assert_eq!(read(&ipv4(0x03)), Ecn::Ce);
        assert_eq!(read(&ipv4(0x00)), Ecn::NotEct);
        // IPv6: version 6, traffic class 0x01 (ECT(1)) is 0x60 0x10 …; 0xb8|0x02 = 0xba is
        // 0x6b 0xa0.
        let mut v6 = vec![0u8; 40];
        v6[0] = 0x60;
        v6[1] = 0x10;
        assert_eq!(read(&v6), Ecn::Ect1);
        v6[0] = 0x6b;
        v6[1] = 0xa0;
        assert_eq!(read(&v6), Ecn::Ect0);
        assert_eq!(read(&[0x45, 0x03]), Ecn::NotEct, "truncated");
        assert_eq!(read(&[]), Ecn::NotEct);
    }

    #[test]
    fn marking_ipv4_keeps_the_header_checksum_valid() {
        for tos in [0x00u8, 0x01, 0x02, 0xb8 | 0x02, 0xfd] {
            for e in [Ecn::Ce, Ecn::NotEct, Ecn::Ect1, Ecn::Ect0] {
                let mut h = ipv4(tos);
                let changed = write(&mut h, e);
                assert_eq!(changed, tos & 3 != e.bits());
                assert_eq!(read(&h), e);
                assert_eq!(h[1] & !3, tos & !3, "DSCP kept");
                // The incremental update equals a full recomputation.
                let full = ipv4(h[1]);
                assert_eq!(h[10..12], full[10..12], "tos {tos:#x} -> {e:?}");
                assert_eq!(u16::from_be_bytes([h[10], h[11]]), ipv4_header_checksum(&h[..20]));
            }
        }
        // RFC 1624 section 4's example: equation 3 gives 0x0000 where equation 2 gave 0xffff.
        assert_eq!(incremental_checksum(0xdd2f, 0x5555, 0x3285), 0x0000);
    }

    #[test]
    fn marking_ipv6_touches_only_the_ecn_bits() {
        let mut v6 = vec![0u8; 40];
        v6[..4].copy_from_slice(&[0x6b, 0xa1, 0x23, 0x45]); // TC 0xba, flow label 0x12345
        assert!(write(&mut v6, Ecn::Ce));
        assert_eq!(v6[..4], [0x6b, 0xb1, 0x23, 0x45]);
        assert_eq!(read(&v6), Ecn::Ce);
        assert!(!write(&mut v6, Ecn::Ce));
        let mut other = vec![0x00u8; 40];
        assert!(!write(&mut other, Ecn::Ce), "not IP: untouched");
        assert!(other.iter().all(|&b| b == 0));
    }
}
