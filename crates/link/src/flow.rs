//! Which flow an IP packet belongs to: a hash of its 5-tuple (addresses, protocol, ports), as
//! RFC 8290 section 4.1.1 classifies packets into FQ-CoDel's queues.
//!
//! Reads untrusted bytes (whatever the emulator's TUN device hands over), so it never panics
//! and never reads past the slice: anything it cannot parse is flow 0, and a packet without
//! ports (ICMP, a non-first fragment, an IPv6 extension header before the transport) hashes
//! its addresses and protocol only.

use crate::wire::Ip;

/// The flow of an IP packet (`bytes` starts at the IP header): equal for every packet of one
/// 5-tuple, and for the packets of both directions of a connection in neither (each direction
/// is its own flow, as in Linux's fq_codel). 0 for what is not IPv4 or IPv6.
pub fn flow_of(bytes: &[u8]) -> u64 {
    let Some(ip) = Ip::parse(bytes) else { return 0 };
    let (sport, dport) = ip.ports().unwrap_or((0, 0));
    let mut h = Fnv::default();
    h.write(&[ip.version(), ip.protocol()]);
    h.write(ip.src());
    h.write(ip.dst());
    h.write(&sport.to_be_bytes());
    h.write(&dport.to_be_bytes());
    // 0 stays the "unclassified" flow.
    h.0.max(1)
}

/// FNV-1a, 64-bit: small, no dependency, and good enough for flows the link's own seed
/// perturbs before reducing them to a queue (the queue's hash mixes every bit again).
struct Fnv(u64);

impl Default for Fnv {
    fn default() -> Self {
        Fnv(0xcbf2_9ce4_8422_2325)
    }
}

impl Fnv {
    fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.0 ^= u64::from(b);
            self.0 = self.0.wrapping_mul(0x0100_0000_01b3);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::wire::{TCP, UDP};
    use rand::{Rng, SeedableRng};
    use rand_chacha::ChaCha8Rng;

    fn v4(proto: u8, src: [u8; 4], dst: [u8; 4], sport: u16, dport: u16) -> Vec<u8> {
        let mut p = vec![0x45, 0, 0, 40, 0, 0, 0x40, 0, 64, proto, 0, 0];
        p.extend_from_slice(&src);
        p.extend_from_slice(&dst);
        p.extend_from_slice(&sport.to_be_bytes());
        p.extend_from_slice(&dport.to_be_bytes());
        p.extend_from_slice(&[0; 16]);
        p
    }

    #[test]
    fn the_five_tuple_and_nothing_else_decides() {
        let a = v4(TCP, [10, 77, 0, 2], [10, 77, 0, 1], 5201, 40000);
        let mut same = a.clone();
        same[30] = 0xff; // payload / TCP fields beyond the ports
        same[8] = 3; // TTL
        assert_eq!(flow_of(&a), flow_of(&same));
        for other in [
            v4(TCP, [10, 77, 0, 2], [10, 77, 0, 1], 5201, 40001),
            v4(TCP, [10, 77, 0, 2], [10, 77, 0, 1], 5202, 40000),
            v4(UDP, [10, 77, 0, 2], [10, 77, 0, 1], 5201, 40000),
            v4(TCP, [10, 77, 0, 1], [10, 77, 0, 2], 40000, 5201),
        ] {
            assert_ne!(flow_of(&a), flow_of(&other));
        }
        // ICMP has no ports: the echo's id and sequence do not split it.
        let ping = v4(1, [10, 77, 0, 2], [10, 77, 0, 1], 8, 1);
        assert_eq!(flow_of(&ping), flow_of(&v4(1, [10, 77, 0, 2], [10, 77, 0, 1], 8, 2)));
        // A non-first fragment has no ports either.
        let mut frag = a.clone();
        frag[7] = 10;
        assert_eq!(flow_of(&frag), flow_of(&v4(TCP, [10, 77, 0, 2], [10, 77, 0, 1], 0, 0)));
    }

    #[test]
    fn ipv6_and_options_are_read() {
        let mut p = vec![0x60, 0, 0, 0, 0, 20, TCP, 64];
        p.extend_from_slice(&[1; 16]);
        p.extend_from_slice(&[2; 16]);
        p.extend_from_slice(&[0x14, 0x51, 0x9c, 0x40]);
        let mut q = p.clone();
        q[41] = 0x52;
        assert_ne!(flow_of(&p), flow_of(&q));
        assert_ne!(flow_of(&p), 0);
        // An IPv4 header with options: the ports come after them.
        let mut o = v4(TCP, [1, 2, 3, 4], [5, 6, 7, 8], 1, 2);
        o[0] = 0x46;
        let ports_after_options = o[20..24].to_vec();
        o.splice(20..20, [1, 1, 1, 0]);
        assert_eq!(&o[24..28], &ports_after_options[..]);
        assert_eq!(flow_of(&o), flow_of(&v4(TCP, [1, 2, 3, 4], [5, 6, 7, 8], 1, 2)));
    }

    #[test]
    fn garbage_is_flow_zero_or_harmless() {
        for bad in [&[][..], &[0x45], &[0x45; 19], &[0x41; 40], &[0x60; 39], &[0x00; 60], &[0xff; 3]] {
            assert_eq!(flow_of(bad), 0, "{bad:?}");
        }
        // Random bytes of every length: no panic, whatever comes out.
        let mut rng = ChaCha8Rng::seed_from_u64(9);
        for _ in 0..200_000 {
            let len = rng.gen_range(0..80);
            let mut b: Vec<u8> = (0..len).map(|_| rng.gen()).collect();
            if len > 0 && rng.gen_bool(0.5) {
                b[0] = if rng.gen_bool(0.5) { 0x40 } else { 0x60 } | (b[0] & 0x0f);
            }
            let _ = flow_of(&b);
        }
    }
}
