//! IP packet headers as the emulator meets them: one reader of IPv4 and IPv6 headers (RFC 791,
//! RFC 8200), their ECN field (RFC 3168 §5) and the Internet checksum's arithmetic (RFC 1071,
//! RFC 1624), for every place that looks inside a packet — the flow classifier
//! ([`crate::flow::flow_of`]), the emulator's ECN marking, its access links and its segmenting
//! and coalescing of offloaded superframes. After smoltcp's `wire` module: a checked view over
//! the bytes, no copies.
//!
//! Everything here reads untrusted bytes (whatever a TUN device hands over), so nothing panics
//! or reads past the slice: a view is made only when the fixed header is there, and each
//! accessor that goes further returns an `Option`.

use crate::ecn::Ecn;

pub const ICMP: u8 = 1;
pub const TCP: u8 = 6;
pub const UDP: u8 = 17;
pub const DCCP: u8 = 33;
pub const SCTP: u8 = 132;
pub const UDPLITE: u8 = 136;

/// IPv4's fixed header (without options) and IPv6's, in bytes.
pub const IPV4_HEADER_LEN: usize = 20;
pub const IPV6_HEADER_LEN: usize = 40;

/// An IPv4 or IPv6 packet's header, checked to be whole: for IPv4 the 20 fixed bytes and an IHL
/// of at least 5 words; for IPv6 the 40-byte fixed header. What follows it is
/// [`Ip::transport`]; extension headers and options are not walked.
#[derive(Clone, Copy, Debug)]
pub struct Ip<'a> {
    bytes: &'a [u8],
    v6: bool,
    header_len: usize,
}

impl<'a> Ip<'a> {
    /// `bytes` starts at the IP header; `None` for anything but a whole IPv4 or IPv6 header.
    pub fn parse(bytes: &'a [u8]) -> Option<Ip<'a>> {
        let first = *bytes.first()?;
        match first >> 4 {
            4 => {
                let header_len = usize::from(first & 0x0f) * 4;
                (bytes.len() >= IPV4_HEADER_LEN && header_len >= IPV4_HEADER_LEN).then_some(Ip { bytes, v6: false, header_len })
            }
            6 => (bytes.len() >= IPV6_HEADER_LEN).then_some(Ip { bytes, v6: true, header_len: IPV6_HEADER_LEN }),
            _ => None,
        }
    }

    pub fn is_v6(&self) -> bool {
        self.v6
    }

    /// 4 or 6.
    pub fn version(&self) -> u8 {
        if self.v6 {
            6
        } else {
            4
        }
    }

    /// The header's length in bytes: IPv4's IHL (options included, which may claim more than
    /// the packet holds), IPv6's fixed 40.
    pub fn header_len(&self) -> usize {
        self.header_len
    }

    /// IPv4's protocol, or IPv6's next header.
    pub fn protocol(&self) -> u8 {
        if self.v6 {
            self.bytes[6]
        } else {
            self.bytes[9]
        }
    }

    pub fn src(&self) -> &'a [u8] {
        if self.v6 {
            &self.bytes[8..24]
        } else {
            &self.bytes[12..16]
        }
    }

    pub fn dst(&self) -> &'a [u8] {
        if self.v6 {
            &self.bytes[24..40]
        } else {
            &self.bytes[16..20]
        }
    }

    /// The length the header declares for the whole packet (IPv4's total length; IPv6's payload
    /// length plus its fixed header), which a well-formed packet's slice equals.
    pub fn declared_len(&self) -> usize {
        let field = usize::from(u16::from_be_bytes([self.bytes[if self.v6 { 4 } else { 2 }], self.bytes[if self.v6 { 5 } else { 3 }]]));
        if self.v6 {
            field + IPV6_HEADER_LEN
        } else {
            field
        }
    }

    /// An IPv4 fragment (more fragments to come, or an offset); IPv6 fragments live in an
    /// extension header, which is not walked, so never for IPv6.
    pub fn is_fragment(&self) -> bool {
        !self.v6 && u16::from_be_bytes([self.bytes[6], self.bytes[7]]) & 0x3fff != 0
    }

    /// Only an IPv4 packet's first fragment (offset 0) carries the transport header.
    fn first_fragment(&self) -> bool {
        self.v6 || u16::from_be_bytes([self.bytes[6] & 0x1f, self.bytes[7]]) == 0
    }

    /// What follows the header, if the packet holds its header whole and this is not a later
    /// fragment.
    pub fn transport(&self) -> Option<&'a [u8]> {
        if self.first_fragment() {
            self.bytes.get(self.header_len..)
        } else {
            None
        }
    }

    /// The source and destination ports of a transport whose header starts with them (TCP,
    /// UDP, UDP-Lite, SCTP, DCCP), as RFC 8290 §4.1.1 reads them for a 5-tuple.
    pub fn ports(&self) -> Option<(u16, u16)> {
        if !matches!(self.protocol(), TCP | UDP | UDPLITE | SCTP | DCCP) {
            return None;
        }
        let p = self.transport()?.get(..4)?;
        Some((u16::from_be_bytes([p[0], p[1]]), u16::from_be_bytes([p[2], p[3]])))
    }

    /// The ECN codepoint: the low two bits of IPv4's TOS or of IPv6's Traffic Class, which
    /// straddles the first two bytes (RFC 3168 §5).
    pub fn ecn(&self) -> Ecn {
        Ecn::from_bits(if self.v6 { self.bytes[1] >> 4 } else { self.bytes[1] })
    }
}

/// The ECN codepoint of an IP packet; Not-ECT for anything that is not one, which the link then
/// treats as a transport without ECN.
pub fn ecn(ip: &[u8]) -> Ecn {
    Ip::parse(ip).map_or(Ecn::NotEct, |h| h.ecn())
}

/// Sets an IP packet's ECN codepoint, leaving DSCP and every other byte as the sender wrote
/// them; IPv4's header checksum is updated incrementally ([`incremental_checksum`]), and neither
/// TCP's nor UDP's checksum covers the field. Anything that is not an IP packet is left alone.
/// Returns whether it changed the packet.
pub fn set_ecn(ip: &mut [u8], ecn: Ecn) -> bool {
    let Some(v6) = Ip::parse(ip).map(|h| h.is_v6()) else { return false };
    if v6 {
        let b1 = (ip[1] & !0b0011_0000) | (ecn.bits() << 4);
        let changed = b1 != ip[1];
        ip[1] = b1;
        return changed;
    }
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

/// One's-complement sum of 16-bit big-endian words added to `acc`, not yet folded (RFC 1071;
/// an odd last byte is the high byte of a word padded with zero).
pub fn sum16(data: &[u8], mut acc: u32) -> u32 {
    let mut chunks = data.chunks_exact(2);
    for c in &mut chunks {
        acc += u32::from(u16::from_be_bytes([c[0], c[1]]));
    }
    if let [last] = chunks.remainder() {
        acc += u32::from(*last) << 8;
    }
    acc
}

/// Folds a sum's carries back into 16 bits.
pub fn fold(mut acc: u32) -> u16 {
    while acc > 0xffff {
        acc = (acc & 0xffff) + (acc >> 16);
    }
    acc as u16
}

/// IPv4 header checksum of `hdr` (the whole header, options included), computed as if its
/// checksum field were zero.
pub fn ipv4_header_checksum(hdr: &[u8]) -> u16 {
    let mut acc = sum16(&hdr[..10], 0);
    acc = sum16(&hdr[12..], acc);
    !fold(acc)
}

/// The folded IPv4 pseudo-header sum (RFC 768, RFC 9293 §3.1) for protocol `proto` and a
/// transport length `len`, not complemented: what a checksum left to the receiver's "hardware"
/// (`CHECKSUM_PARTIAL`) holds.
pub fn pseudo_sum(src: &[u8], dst: &[u8], proto: u8, len: u16) -> u16 {
    let mut acc = sum16(src, 0);
    acc = sum16(dst, acc);
    acc += u32::from(proto);
    acc += u32::from(len);
    fold(acc)
}

/// RFC 1624 equation 3: the header checksum `hc` after the 16-bit word `old` became `new`,
/// `HC' = ~(~HC + ~m + m')` in one's complement arithmetic.
pub fn incremental_checksum(hc: u16, old: u16, new: u16) -> u16 {
    !fold(u32::from(!hc) + u32::from(!old) + u32::from(new))
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::{Rng, SeedableRng};
    use rand_chacha::ChaCha8Rng;

    /// A real IPv4/TCP header as the kernel sends it (10.77.0.1:40000 → 10.77.0.2:5201, TTL
    /// 64, DF, total length 1500), with TOS `tos` and its checksum computed in full.
    fn ipv4(tos: u8) -> Vec<u8> {
        let mut h = vec![0x45, tos, 0x05, 0xdc, 0x1c, 0x46, 0x40, 0x00, 0x40, 0x06, 0, 0, 10, 77, 0, 1, 10, 77, 0, 2];
        let c = ipv4_header_checksum(&h);
        h[10..12].copy_from_slice(&c.to_be_bytes());
        h.extend_from_slice(&40000u16.to_be_bytes());
        h.extend_from_slice(&5201u16.to_be_bytes());
        h.resize(1500, 0);
        h
    }

    #[test]
    fn an_ipv4_header_is_read_field_by_field() {
        let p = ipv4(0);
        let h = Ip::parse(&p).unwrap();
        assert_eq!((h.version(), h.header_len(), h.protocol()), (4, 20, TCP));
        assert_eq!((h.src(), h.dst()), (&[10, 77, 0, 1][..], &[10, 77, 0, 2][..]));
        assert_eq!(h.declared_len(), 1500);
        assert!(!h.is_fragment());
        assert_eq!(h.ports(), Some((40000, 5201)));
        assert_eq!(h.transport().unwrap().len(), 1480);
        // Options: IHL 6 puts the ports 4 bytes later.
        let mut o = p.clone();
        o[0] = 0x46;
        o.splice(20..20, [1, 1, 1, 0]);
        assert_eq!(Ip::parse(&o).unwrap().ports(), Some((40000, 5201)));
        // A later fragment has no transport; a first one (MF set) has, and is a fragment.
        let mut later = p.clone();
        later[7] = 10;
        assert!(Ip::parse(&later).unwrap().is_fragment());
        assert_eq!(Ip::parse(&later).unwrap().ports(), None);
        let mut first = p.clone();
        first[6] |= 0x20;
        assert!(Ip::parse(&first).unwrap().is_fragment());
        assert_eq!(Ip::parse(&first).unwrap().ports(), Some((40000, 5201)));
        // ICMP has no ports.
        let mut icmp = p;
        icmp[9] = ICMP;
        assert_eq!(Ip::parse(&icmp).unwrap().ports(), None);
    }

    #[test]
    fn an_ipv6_header_is_read_field_by_field() {
        let mut p = vec![0x60, 0x10, 0, 0, 0, 8, UDP, 64];
        p.extend_from_slice(&[1; 16]);
        p.extend_from_slice(&[2; 16]);
        p.extend_from_slice(&[0x14, 0x51, 0x9c, 0x40, 0, 8, 0, 0]);
        let h = Ip::parse(&p).unwrap();
        assert_eq!((h.version(), h.header_len(), h.protocol(), h.declared_len()), (6, 40, UDP, 48));
        assert_eq!((h.src(), h.dst()), (&[1; 16][..], &[2; 16][..]));
        assert_eq!(h.ports(), Some((5201, 40000)));
        assert_eq!(h.ecn(), Ecn::Ect1);
        assert!(!h.is_fragment());
    }

    #[test]
    fn reads_the_ipv4_tos_and_the_ipv6_traffic_class() {
        assert_eq!(ecn(&ipv4(0x02)), Ecn::Ect0);
        assert_eq!(ecn(&ipv4(0xb9)), Ecn::Ect1, "DSCP bits do not matter");
        assert_eq!(ecn(&ipv4(0x03)), Ecn::Ce);
        assert_eq!(ecn(&ipv4(0x00)), Ecn::NotEct);
        // IPv6: traffic class 0x01 (ECT(1)) is 0x60 0x10 …; 0xb8|0x02 = 0xba is 0x6b 0xa0.
        let mut v6 = vec![0u8; 40];
        v6[0] = 0x60;
        v6[1] = 0x10;
        assert_eq!(ecn(&v6), Ecn::Ect1);
        v6[0] = 0x6b;
        v6[1] = 0xa0;
        assert_eq!(ecn(&v6), Ecn::Ect0);
        assert_eq!(ecn(&[0x45, 0x03]), Ecn::NotEct, "truncated");
        assert_eq!(ecn(&[]), Ecn::NotEct);
    }

    #[test]
    fn marking_ipv4_keeps_the_header_checksum_valid() {
        for tos in [0x00u8, 0x01, 0x02, 0xb8 | 0x02, 0xfd] {
            for e in [Ecn::Ce, Ecn::NotEct, Ecn::Ect1, Ecn::Ect0] {
                let mut h = ipv4(tos);
                let changed = set_ecn(&mut h, e);
                assert_eq!(changed, tos & 3 != e.bits());
                assert_eq!(ecn(&h), e);
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
        assert!(set_ecn(&mut v6, Ecn::Ce));
        assert_eq!(v6[..4], [0x6b, 0xb1, 0x23, 0x45]);
        assert_eq!(ecn(&v6), Ecn::Ce);
        assert!(!set_ecn(&mut v6, Ecn::Ce));
        let mut other = vec![0x00u8; 40];
        assert!(!set_ecn(&mut other, Ecn::Ce), "not IP: untouched");
        assert!(other.iter().all(|&b| b == 0));
    }

    /// RFC 1071 §3's worked example: the words 0x0001, 0xf203, 0xf4f5, 0xf6f7 sum to 0xddf2
    /// after folding (carries 0x2 added back).
    #[test]
    fn the_internet_checksum_sums_as_rfc_1071_shows() {
        let data = [0x00, 0x01, 0xf2, 0x03, 0xf4, 0xf5, 0xf6, 0xf7];
        assert_eq!(fold(sum16(&data, 0)), 0xddf2);
        // An odd length pads the last byte on the right.
        assert_eq!(fold(sum16(&[0x01], 0)), 0x0100);
    }

    #[test]
    fn garbage_gives_no_view_and_no_panic() {
        for bad in [&[][..], &[0x45], &[0x45; 19], &[0x41; 40], &[0x60; 39], &[0x00; 60], &[0xff; 3]] {
            assert!(Ip::parse(bad).is_none(), "{bad:?}");
        }
        let mut rng = ChaCha8Rng::seed_from_u64(7);
        for _ in 0..200_000 {
            let len = rng.gen_range(0..80);
            let mut b: Vec<u8> = (0..len).map(|_| rng.gen()).collect();
            if len > 0 && rng.gen_bool(0.5) {
                b[0] = if rng.gen_bool(0.5) { 0x40 } else { 0x60 } | (b[0] & 0x0f);
            }
            if let Some(h) = Ip::parse(&b) {
                let _ = (h.ports(), h.transport(), h.declared_len(), h.ecn(), h.is_fragment(), h.src(), h.dst());
            }
            let _ = set_ecn(&mut b, Ecn::Ce);
        }
    }
}
