//! Cutting the kernel's TCP superframes (TSO/GSO, up to 64 KB) and UDP GSO batches
//! (`UDP_SEGMENT`, what QUIC stacks send with) into the MTU-sized packets a real link would
//! carry, so that loss, queue occupancy and serialization are decided per segment or datagram. Reading superframes is what lets a userspace forwarder keep up at gigabit rates;
//! splitting them again is what keeps the emulation honest.
//!
//! Packets cross the TUN device with a `struct virtio_net_hdr` in front (IFF_VNET_HDR). We
//! never compute a payload checksum: segments go back with `NEEDS_CSUM` and the pseudo-header
//! sum in the TCP checksum field, exactly as the kernel hands them to a NIC with offloads.

/// `struct virtio_net_hdr` (include/uapi/linux/virtio_net.h), little-endian on the hosts we run.
pub const VNET_HDR_LEN: usize = 10;
pub const F_NEEDS_CSUM: u8 = 1;
pub const GSO_NONE: u8 = 0;
pub const GSO_TCPV4: u8 = 1;
/// `VIRTIO_NET_HDR_GSO_UDP_L4`: a UDP GSO batch (the TUN device offers it with
/// `TUN_F_USO4 | TUN_F_USO6`, Linux 6.2 and later).
pub const GSO_UDP_L4: u8 = 5;
pub const GSO_ECN: u8 = 0x80;

/// Linux's `TCP_MIN_SND_MSS`: the smallest MSS the kernel sends with.
pub const MIN_MSS: usize = 48;

/// Linux's `UDP_MAX_SEGMENTS` (include/linux/udp.h, 6.x): the most datagrams one UDP GSO batch
/// may carry. More would be a malformed batch, and a tiny `gso_size` must not make one read
/// into thousands of packets.
pub const UDP_MAX_SEGMENTS: usize = 128;

const IPPROTO_TCP: u8 = 6;
const IPPROTO_UDP: u8 = 17;
const UDP_HDR_LEN: usize = 8;

const TCP_FIN: u8 = 0x01;
const TCP_PSH: u8 = 0x08;
const TCP_CWR: u8 = 0x80;

/// A decoded virtio-net header.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct VnetHdr {
    pub flags: u8,
    pub gso_type: u8,
    pub hdr_len: u16,
    pub gso_size: u16,
    pub csum_start: u16,
    pub csum_offset: u16,
}

impl VnetHdr {
    pub fn parse(b: &[u8]) -> Option<Self> {
        let b = b.get(..VNET_HDR_LEN)?;
        let u16le = |i: usize| u16::from_le_bytes([b[i], b[i + 1]]);
        Some(VnetHdr { flags: b[0], gso_type: b[1], hdr_len: u16le(2), gso_size: u16le(4), csum_start: u16le(6), csum_offset: u16le(8) })
    }

    pub fn write(&self, b: &mut [u8]) {
        b[0] = self.flags;
        b[1] = self.gso_type;
        b[2..4].copy_from_slice(&self.hdr_len.to_le_bytes());
        b[4..6].copy_from_slice(&self.gso_size.to_le_bytes());
        b[6..8].copy_from_slice(&self.csum_start.to_le_bytes());
        b[8..10].copy_from_slice(&self.csum_offset.to_le_bytes());
    }
}

/// Why a superframe could not be segmented (it is then dropped and counted: it would be a
/// kernel/ABI surprise, not network behaviour).
#[derive(Debug, PartialEq, Eq)]
pub enum SegmentError {
    NotIpv4Tcp,
    NotIpv4Udp,
    /// A UDP batch of more than [`UDP_MAX_SEGMENTS`] datagrams.
    TooManySegments,
    Truncated,
    ZeroMss,
    /// An MSS below Linux's floor (`TCP_MIN_SND_MSS`): no kernel sends it, and a 64 KB
    /// superframe cut that fine would take thousands of buffers.
    MssTooSmall,
    OutputTooSmall,
    /// An IPv4 IHL or TCP data offset below 5 words: the header would end before its own
    /// fixed fields.
    BadHeaderLength,
}

use ccbench_link::wire::{ipv4_header_checksum, pseudo_sum, Ip};

/// The folded TCP pseudo-header sum (not complemented): what the checksum field holds for a
/// packet whose checksum is left to the receiver's "hardware" (`CHECKSUM_PARTIAL`).
pub fn tcp_pseudo_sum(src: &[u8], dst: &[u8], tcp_len: u16) -> u16 {
    pseudo_sum(src, dst, IPPROTO_TCP, tcp_len)
}

/// A TCP/IPv4 superframe (without the vnet header) to be cut into segments of `mss` payload
/// bytes: `count()` segments, each written into a caller's buffer by `write(i, buf)`.
pub struct Segmenter<'a> {
    pkt: &'a [u8],
    mss: usize,
    ecn: bool,
    ihl: usize,
    hdrs: usize,
    payload_len: usize,
    count: usize,
}

impl<'a> Segmenter<'a> {
    pub fn new(pkt: &'a [u8], mss: usize, ecn: bool) -> Result<Self, SegmentError> {
        if pkt.len() < 20 || pkt[0] >> 4 != 4 || pkt[9] != IPPROTO_TCP {
            return Err(SegmentError::NotIpv4Tcp);
        }
        if mss == 0 {
            return Err(SegmentError::ZeroMss);
        }
        if mss < MIN_MSS {
            return Err(SegmentError::MssTooSmall);
        }
        let ihl = usize::from(pkt[0] & 0x0f) * 4;
        if ihl < 20 {
            return Err(SegmentError::BadHeaderLength);
        }
        if pkt.len() < ihl + 20 {
            return Err(SegmentError::Truncated);
        }
        let tcp_hdr = usize::from(pkt[ihl + 12] >> 4) * 4;
        if tcp_hdr < 20 {
            return Err(SegmentError::BadHeaderLength);
        }
        let hdrs = ihl + tcp_hdr;
        let total = usize::from(u16::from_be_bytes([pkt[2], pkt[3]])).min(pkt.len());
        if total < hdrs {
            return Err(SegmentError::Truncated);
        }
        let payload_len = total - hdrs;
        Ok(Segmenter { pkt, mss, ecn, ihl, hdrs, payload_len, count: payload_len.div_ceil(mss).max(1) })
    }

    pub fn count(&self) -> usize {
        self.count
    }

    /// The IP length of segment `i` as [`Segmenter::write`] would cut it, without cutting it.
    pub fn wire_len(&self, i: usize) -> usize {
        let from = (i * self.mss).min(self.payload_len);
        self.hdrs + ((i + 1) * self.mss).min(self.payload_len) - from
    }

    /// Writes segment `i` (vnet header + IP packet) into `buf`; returns the bytes written.
    pub fn write(&self, i: usize, buf: &mut [u8]) -> Result<usize, SegmentError> {
        let (pkt, ihl, hdrs, mss) = (self.pkt, self.ihl, self.hdrs, self.mss);
        let from = (i * mss).min(self.payload_len);
        let to = ((i + 1) * mss).min(self.payload_len);
        let chunk = &pkt[hdrs + from..hdrs + to];
        let seg_len = hdrs + chunk.len();
        let need = VNET_HDR_LEN + seg_len;
        if buf.len() < need {
            return Err(SegmentError::OutputTooSmall);
        }
        let (vh, ip) = buf.split_at_mut(VNET_HDR_LEN);
        ip[..hdrs].copy_from_slice(&pkt[..hdrs]);
        ip[hdrs..seg_len].copy_from_slice(chunk);
        ip[2..4].copy_from_slice(&(seg_len as u16).to_be_bytes());
        let id0 = u16::from_be_bytes([pkt[4], pkt[5]]);
        ip[4..6].copy_from_slice(&id0.wrapping_add(i as u16).to_be_bytes());
        ip[10..12].copy_from_slice(&[0, 0]);
        let csum = ipv4_header_checksum(&ip[..ihl]);
        ip[10..12].copy_from_slice(&csum.to_be_bytes());
        let seq0 = u32::from_be_bytes([pkt[ihl + 4], pkt[ihl + 5], pkt[ihl + 6], pkt[ihl + 7]]);
        ip[ihl + 4..ihl + 8].copy_from_slice(&seq0.wrapping_add(from as u32).to_be_bytes());
        let mut flags = pkt[ihl + 13];
        if i + 1 < self.count {
            flags &= !(TCP_FIN | TCP_PSH);
        }
        if i > 0 && self.ecn {
            flags &= !TCP_CWR;
        }
        ip[ihl + 13] = flags;
        let pseudo = tcp_pseudo_sum(&ip[12..16], &ip[16..20], (seg_len - ihl) as u16);
        ip[ihl + 16..ihl + 18].copy_from_slice(&pseudo.to_be_bytes());
        VnetHdr { flags: F_NEEDS_CSUM, gso_type: GSO_NONE, hdr_len: 0, gso_size: 0, csum_start: ihl as u16, csum_offset: 16 }.write(vh);
        Ok(need)
    }
}

/// A superframe the kernel handed over: TCP (TSO) or UDP (USO), to be cut the same way.
pub enum Superframe<'a> {
    Tcp(Segmenter<'a>),
    Udp(UdpSegmenter<'a>),
}

impl<'a> Superframe<'a> {
    /// The superframe `pkt` is by its vnet header, `None` when the header says it is a single
    /// packet (`GSO_NONE`) or names a kind we do not offer the kernel.
    pub fn of(vh: &VnetHdr, pkt: &'a [u8]) -> Option<Result<Self, SegmentError>> {
        let size = usize::from(vh.gso_size);
        match vh.gso_type & !GSO_ECN {
            GSO_TCPV4 => Some(Segmenter::new(pkt, size, vh.gso_type & GSO_ECN != 0).map(Superframe::Tcp)),
            GSO_UDP_L4 => Some(UdpSegmenter::new(pkt, size).map(Superframe::Udp)),
            _ => None,
        }
    }

    pub fn count(&self) -> usize {
        match self {
            Superframe::Tcp(s) => s.count(),
            Superframe::Udp(s) => s.count(),
        }
    }

    /// The IP length of packet `i`, without cutting it.
    pub fn wire_len(&self, i: usize) -> usize {
        match self {
            Superframe::Tcp(s) => s.wire_len(i),
            Superframe::Udp(s) => s.wire_len(i),
        }
    }

    /// Writes packet `i` (vnet header + IP packet) into `buf`; returns the bytes written.
    pub fn write(&self, i: usize, buf: &mut [u8]) -> Result<usize, SegmentError> {
        match self {
            Superframe::Tcp(s) => s.write(i, buf),
            Superframe::Udp(s) => s.write(i, buf),
        }
    }
}

/// A UDP/IPv4 GSO batch (without the vnet header): one UDP header over up to
/// [`UDP_MAX_SEGMENTS`] datagrams of `gso_size` payload bytes each, the last possibly shorter.
/// Each is cut out as the datagram the kernel would have sent without offload: its own IP
/// length, ID and header checksum, UDP length, and the UDP checksum left partial.
pub struct UdpSegmenter<'a> {
    pkt: &'a [u8],
    size: usize,
    ihl: usize,
    payload_len: usize,
    count: usize,
}

impl<'a> UdpSegmenter<'a> {
    pub fn new(pkt: &'a [u8], gso_size: usize) -> Result<Self, SegmentError> {
        if pkt.len() < 20 || pkt[0] >> 4 != 4 || pkt[9] != IPPROTO_UDP {
            return Err(SegmentError::NotIpv4Udp);
        }
        if gso_size == 0 {
            return Err(SegmentError::ZeroMss);
        }
        let ihl = usize::from(pkt[0] & 0x0f) * 4;
        if ihl < 20 {
            return Err(SegmentError::BadHeaderLength);
        }
        let total = usize::from(u16::from_be_bytes([pkt[2], pkt[3]])).min(pkt.len());
        if total < ihl + UDP_HDR_LEN {
            return Err(SegmentError::Truncated);
        }
        let payload_len = total - ihl - UDP_HDR_LEN;
        let count = payload_len.div_ceil(gso_size).max(1);
        if count > UDP_MAX_SEGMENTS {
            return Err(SegmentError::TooManySegments);
        }
        Ok(UdpSegmenter { pkt, size: gso_size, ihl, payload_len, count })
    }

    pub fn count(&self) -> usize {
        self.count
    }

    /// The IP length of datagram `i` as [`UdpSegmenter::write`] would cut it.
    pub fn wire_len(&self, i: usize) -> usize {
        let from = (i * self.size).min(self.payload_len);
        self.ihl + UDP_HDR_LEN + ((i + 1) * self.size).min(self.payload_len) - from
    }

    /// Writes datagram `i` (vnet header + IP packet) into `buf`; returns the bytes written.
    pub fn write(&self, i: usize, buf: &mut [u8]) -> Result<usize, SegmentError> {
        let (pkt, ihl) = (self.pkt, self.ihl);
        let hdrs = ihl + UDP_HDR_LEN;
        let from = (i * self.size).min(self.payload_len);
        let to = ((i + 1) * self.size).min(self.payload_len);
        let seg_len = hdrs + (to - from);
        let need = VNET_HDR_LEN + seg_len;
        if buf.len() < need {
            return Err(SegmentError::OutputTooSmall);
        }
        let (vh, ip) = buf.split_at_mut(VNET_HDR_LEN);
        ip[..hdrs].copy_from_slice(&pkt[..hdrs]);
        ip[hdrs..seg_len].copy_from_slice(&pkt[hdrs + from..hdrs + to]);
        ip[2..4].copy_from_slice(&(seg_len as u16).to_be_bytes());
        // As the kernel's software segmentation does (`__udp_gso_segment` over `inet_gso_segment`):
        // consecutive IDs from the batch's.
        let id0 = u16::from_be_bytes([pkt[4], pkt[5]]);
        ip[4..6].copy_from_slice(&id0.wrapping_add(i as u16).to_be_bytes());
        ip[10..12].copy_from_slice(&[0, 0]);
        let csum = ipv4_header_checksum(&ip[..ihl]);
        ip[10..12].copy_from_slice(&csum.to_be_bytes());
        let udp_len = (seg_len - ihl) as u16;
        ip[ihl + 4..ihl + 6].copy_from_slice(&udp_len.to_be_bytes());
        let pseudo = pseudo_sum(&ip[12..16], &ip[16..20], IPPROTO_UDP, udp_len);
        ip[ihl + 6..ihl + 8].copy_from_slice(&pseudo.to_be_bytes());
        VnetHdr { flags: F_NEEDS_CSUM, gso_type: GSO_NONE, hdr_len: 0, gso_size: 0, csum_start: ihl as u16, csum_offset: 6 }.write(vh);
        Ok(need)
    }
}

#[cfg(test)]
mod fixtures {
    //! The packets both test modules cut and merge, and the one loop that cuts them.
    use super::*;
    use ccbench_link::wire::{fold, sum16};

    /// The first sequence number of [`superframe`]: near the wrap, so every test crosses it.
    pub(super) const FIRST_SEQ: u32 = 0xffff_fff0;

    /// A TCP/IPv4 superframe as the kernel hands it over with TSO (without the vnet header):
    /// a 32-byte TCP header (timestamps), DF set, IP ID and sequence number near their wraps.
    pub(super) fn superframe(payload_len: usize, flags: u8) -> Vec<u8> {
        let mut p = vec![0u8; 20 + 32 + payload_len];
        p[0] = 0x45;
        let total = p.len() as u16;
        p[2..4].copy_from_slice(&total.to_be_bytes());
        p[4..6].copy_from_slice(&0xfff0u16.to_be_bytes()); // IP id near wrap
        p[6] = 0x40; // DF
        p[8] = 64;
        p[9] = 6;
        p[12..16].copy_from_slice(&[10, 77, 0, 2]);
        p[16..20].copy_from_slice(&[10, 77, 0, 1]);
        p[20..22].copy_from_slice(&5201u16.to_be_bytes());
        p[22..24].copy_from_slice(&40000u16.to_be_bytes());
        p[24..28].copy_from_slice(&FIRST_SEQ.to_be_bytes());
        p[32] = 8 << 4; // 32-byte TCP header (timestamps)
        p[33] = flags;
        for (i, b) in p[52..].iter_mut().enumerate() {
            *b = (i * 7 + 3) as u8;
        }
        p
    }

    /// A UDP/IPv4 GSO batch (without the vnet header) of `payload_len` bytes, IP ID near its wrap.
    pub(super) fn udp_batch(payload_len: usize) -> Vec<u8> {
        let mut p = vec![0u8; 20 + 8 + payload_len];
        p[0] = 0x45;
        let total = p.len() as u16;
        p[2..4].copy_from_slice(&total.to_be_bytes());
        p[4..6].copy_from_slice(&0xfffeu16.to_be_bytes()); // IP id near wrap
        p[8] = 64;
        p[9] = 17;
        p[12..16].copy_from_slice(&[10, 77, 0, 2]);
        p[16..20].copy_from_slice(&[10, 77, 0, 1]);
        p[20..22].copy_from_slice(&4433u16.to_be_bytes());
        p[22..24].copy_from_slice(&40000u16.to_be_bytes());
        p[24..26].copy_from_slice(&((8 + payload_len) as u16).to_be_bytes());
        for (i, b) in p[28..].iter_mut().enumerate() {
            *b = (i * 13 + 5) as u8;
        }
        p
    }

    /// A cut packet's transport checksum two ways: as the receiver completes the partial one
    /// left at `offset` in the transport header (the pseudo-header sum, `CHECKSUM_PARTIAL`), and
    /// as computed from scratch over the pseudo-header and the segment, as the receiving
    /// "hardware" would. TCP's field is at 16, UDP's at 6.
    pub(super) fn partial_and_full_checksum(ip: &[u8], offset: usize) -> (u16, u16) {
        let ihl = usize::from(ip[0] & 0x0f) * 4;
        let at = ihl + offset;
        let partial = u32::from(u16::from_be_bytes([ip[at], ip[at + 1]]));
        let completed = !fold(sum16(&ip[at + 2..], sum16(&ip[ihl..at], partial)));
        let mut l4 = ip[ihl..].to_vec();
        l4[offset..offset + 2].fill(0);
        let full = !fold(sum16(&l4, sum16(&ip[12..20], u32::from(ip[9]) + l4.len() as u32)));
        (completed, full)
    }

    /// Every packet a segmenter cuts, each as written (vnet header + IP packet).
    pub(super) fn cut_all(frame: &Superframe) -> Vec<Vec<u8>> {
        (0..frame.count())
            .map(|i| {
                let mut buf = vec![0u8; 2048];
                let n = frame.write(i, &mut buf).unwrap();
                buf.truncate(n);
                buf
            })
            .collect()
    }

    /// A TCP superframe cut into segments of `mss`.
    pub(super) fn segments(pkt: &[u8], mss: usize, ecn: bool) -> Vec<Vec<u8>> {
        cut_all(&Superframe::Tcp(Segmenter::new(pkt, mss, ecn).unwrap()))
    }

    /// A UDP GSO batch cut into datagrams of `size`.
    pub(super) fn datagrams(pkt: &[u8], size: usize) -> Vec<Vec<u8>> {
        cut_all(&Superframe::Udp(UdpSegmenter::new(pkt, size).unwrap()))
    }
}

#[cfg(test)]
mod tests {
    use super::fixtures::*;
    use super::*;

    #[test]
    fn splits_payload_into_mss_segments_with_consistent_headers() {
        let pkt = superframe(1448 * 3 + 100, TCP_PSH | TCP_FIN | TCP_CWR | 0x10);
        let segs = segments(&pkt, 1448, true);
        assert_eq!(segs.len(), 4);
        let mut payload = Vec::new();
        for (i, s) in segs.iter().enumerate() {
            let vh = VnetHdr::parse(s).unwrap();
            assert_eq!(vh.flags, F_NEEDS_CSUM);
            assert_eq!((vh.csum_start, vh.csum_offset), (20, 16));
            let ip = &s[VNET_HDR_LEN..];
            let want_len = 52 + if i < 3 { 1448 } else { 100 };
            assert_eq!(ip.len(), want_len);
            assert_eq!(u16::from_be_bytes([ip[2], ip[3]]) as usize, want_len);
            assert_eq!(u16::from_be_bytes([ip[4], ip[5]]), 0xfff0u16.wrapping_add(i as u16));
            assert_eq!(ipv4_header_checksum(&ip[..20]), u16::from_be_bytes([ip[10], ip[11]]), "IP header checksum");
            let seq = u32::from_be_bytes([ip[24], ip[25], ip[26], ip[27]]);
            assert_eq!(seq, FIRST_SEQ.wrapping_add(1448 * i as u32));
            let flags = ip[33];
            assert_eq!(flags & TCP_FIN != 0, i == 3, "FIN only on the last segment");
            assert_eq!(flags & TCP_PSH != 0, i == 3, "PSH only on the last segment");
            assert_eq!(flags & TCP_CWR != 0, i == 0, "CWR only on the first segment");
            assert_eq!(flags & 0x10, 0x10, "ACK kept everywhere");
            let (completed, full) = partial_and_full_checksum(ip, 16);
            assert_eq!(completed, full, "partial checksum completes to the right value");
            payload.extend_from_slice(&ip[52..]);
        }
        assert_eq!(payload, pkt[52..].to_vec(), "payload preserved in order");
    }

    #[test]
    fn wire_len_is_the_length_write_cuts() {
        for (payload, size) in [(1448 * 3 + 100, 1448), (0, 1448), (10, 1448), (1448 * 2, 1448)] {
            let (tcp_bytes, udp_bytes) = (superframe(payload, 0x10), udp_batch(payload));
            let tcp = Superframe::Tcp(Segmenter::new(&tcp_bytes, size, false).unwrap());
            let udp = Superframe::Udp(UdpSegmenter::new(&udp_bytes, size).unwrap());
            for frame in [tcp, udp] {
                for (i, cut) in cut_all(&frame).iter().enumerate() {
                    assert_eq!(frame.wire_len(i), cut.len() - VNET_HDR_LEN, "payload {payload}, packet {i}");
                }
            }
        }
    }

    #[test]
    fn a_small_packet_is_one_segment_and_rejects_garbage() {
        assert_eq!(segments(&superframe(10, 0x18), 1448, false).len(), 1);
        assert_eq!(segments(&superframe(0, 0x10), 1448, false).len(), 1);
        let mut udp = superframe(100, 0);
        udp[9] = 17;
        assert_eq!(Segmenter::new(&udp, 1448, false).err(), Some(SegmentError::NotIpv4Tcp));
        assert_eq!(Segmenter::new(&superframe(100, 0)[..30], 1448, false).err(), Some(SegmentError::Truncated));
        let mut buf = [0u8; 100];
        assert_eq!(Segmenter::new(&superframe(1448, 0), 1448, false).unwrap().write(0, &mut buf), Err(SegmentError::OutputTooSmall));
        assert_eq!(Segmenter::new(&superframe(1448, 0), 0, false).err(), Some(SegmentError::ZeroMss));
        assert_eq!(Segmenter::new(&superframe(60_000, 0), 1, false).err(), Some(SegmentError::MssTooSmall), "no 60000-fold amplification");
        assert_eq!(segments(&superframe(480, 0x10), MIN_MSS, false).len(), 10);
    }

    #[test]
    fn a_udp_gso_batch_becomes_the_datagrams_the_kernel_would_have_sent() {
        let pkt = udp_batch(1452 * 3 + 500);
        let dgrams = datagrams(&pkt, 1452);
        assert_eq!(dgrams.len(), 4);
        let mut payload = Vec::new();
        for (i, buf) in dgrams.iter().enumerate() {
            let vh = VnetHdr::parse(buf).unwrap();
            assert_eq!((vh.flags, vh.gso_type, vh.csum_start, vh.csum_offset), (F_NEEDS_CSUM, GSO_NONE, 20, 6));
            let ip = &buf[VNET_HDR_LEN..];
            let want = if i < 3 { 1452 } else { 500 };
            assert_eq!(ip.len(), 28 + want);
            assert_eq!(u16::from_be_bytes([ip[2], ip[3]]) as usize, 28 + want, "IP total length");
            assert_eq!(u16::from_be_bytes([ip[24], ip[25]]) as usize, 8 + want, "UDP length");
            assert_eq!(u16::from_be_bytes([ip[4], ip[5]]), 0xfffeu16.wrapping_add(i as u16), "IP id");
            assert_eq!(ipv4_header_checksum(&ip[..20]), u16::from_be_bytes([ip[10], ip[11]]), "IP header checksum");
            assert_eq!(&ip[20..24], &pkt[20..24], "ports kept");
            let (completed, full) = partial_and_full_checksum(ip, 6);
            assert_eq!(completed, full, "partial checksum completes to the right value");
            payload.extend_from_slice(&ip[28..]);
        }
        assert_eq!(payload, pkt[28..].to_vec(), "payload preserved in order");
    }

    #[test]
    fn udp_batches_the_kernel_would_not_send_are_refused() {
        assert_eq!(UdpSegmenter::new(&udp_batch(100), 1452).unwrap().count(), 1);
        assert_eq!(UdpSegmenter::new(&udp_batch(0), 1452).unwrap().count(), 1, "an empty datagram is one");
        assert_eq!(UdpSegmenter::new(&superframe(100, 0), 1452).err(), Some(SegmentError::NotIpv4Udp), "TCP is not UDP");
        assert_eq!(UdpSegmenter::new(&udp_batch(100), 0).err(), Some(SegmentError::ZeroMss));
        assert_eq!(UdpSegmenter::new(&udp_batch(100)[..25], 1452).err(), Some(SegmentError::Truncated));
        assert_eq!(UdpSegmenter::new(&udp_batch(UDP_MAX_SEGMENTS * 10), 10).unwrap().count(), UDP_MAX_SEGMENTS);
        assert_eq!(UdpSegmenter::new(&udp_batch(60_000), 1).err(), Some(SegmentError::TooManySegments), "no 60000-fold amplification");
        let mut short_ihl = udp_batch(100);
        short_ihl[0] = 0x44;
        assert_eq!(UdpSegmenter::new(&short_ihl, 1452).err(), Some(SegmentError::BadHeaderLength));
        let mut buf = [0u8; 100];
        assert_eq!(UdpSegmenter::new(&udp_batch(1452), 1452).unwrap().write(0, &mut buf), Err(SegmentError::OutputTooSmall));
    }

    #[test]
    fn header_lengths_below_five_words_are_rejected() {
        let mut short_ihl = superframe(1448, 0x10);
        short_ihl[0] = 0x44;
        assert_eq!(Segmenter::new(&short_ihl, 1448, false).err(), Some(SegmentError::BadHeaderLength));
        for doff in 0..5u8 {
            let mut p = superframe(1448, 0x10);
            p[32] = doff << 4;
            assert_eq!(Segmenter::new(&p, 1448, false).err(), Some(SegmentError::BadHeaderLength), "data offset {doff}");
        }
    }
}

const TCP_SYN: u8 = 0x02;
const TCP_RST: u8 = 0x04;
const TCP_URG: u8 = 0x20;
const MAX_IP_LEN: usize = 65_535;

/// Linux's `UDP_GRO_CNT_MAX` (net/ipv4/udp_offload.c): the most datagrams GRO merges into one.
const UDP_GRO_CNT_MAX: usize = 64;

/// Merges consecutive in-order TCP/IPv4 segments of one flow that leave the link together into
/// one superframe written with a single system call, the way a NIC's GRO hands them to the
/// stack. Only what GRO would merge is merged: same addresses, ports, ACK, window and options,
/// contiguous sequence numbers, full-sized segments except the last, no SYN/RST/URG.
///
/// With [`Coalescer::with_udp`], UDP/IPv4 datagrams of one flow too, as UDP GRO does
/// (`udp_gro_receive_segment`): same addresses, ports, TOS and TTL, equal sizes except a
/// shorter last one, at most [`UDP_GRO_CNT_MAX`]. The receiving socket gets them as one GRO
/// batch (`UDP_GRO`), or the kernel splits them again for a socket that did not ask for it.
pub struct Coalescer {
    buf: Vec<u8>,
    len: usize,
    count: usize,
    mss: usize,
    next_seq: u32,
    hdrs: usize,
    closed: bool,
    /// What is held is UDP datagrams, not TCP segments.
    udp: bool,
    /// UDP may be merged: the output device takes UDP GSO frames (Linux 6.2+).
    udp_ok: bool,
}

impl Default for Coalescer {
    fn default() -> Self {
        Coalescer { buf: vec![0u8; VNET_HDR_LEN + MAX_IP_LEN], len: 0, count: 0, mss: 0, next_seq: 0, hdrs: 0, closed: false, udp: false, udp_ok: false }
    }
}

/// The payload length of an IPv4/UDP datagram the coalescer may merge (20-byte IP header,
/// not a fragment, lengths consistent), if it is one.
fn udp_payload(ip: &[u8]) -> Option<usize> {
    let h = mergeable(ip, IPPROTO_UDP)?;
    let udp = h.transport()?.get(..UDP_HDR_LEN)?;
    let udp_len = usize::from(u16::from_be_bytes([udp[4], udp[5]]));
    (udp_len == ip.len() - 20).then(|| udp_len - UDP_HDR_LEN)
}

/// An IPv4 packet of protocol `proto` the coalescer may merge: no options (every merged
/// packet then shares one 20-byte header), whole (its declared length is the slice's), not
/// a fragment.
fn mergeable(ip: &[u8], proto: u8) -> Option<Ip<'_>> {
    let h = Ip::parse(ip)?;
    (!h.is_v6() && h.header_len() == 20 && h.protocol() == proto && h.declared_len() == ip.len() && !h.is_fragment()).then_some(h)
}

/// The parts of an IPv4/TCP packet the coalescer looks at, if it is one it may merge.
struct TcpView {
    hdrs: usize,
    payload: usize,
    seq: u32,
    flags: u8,
}

fn tcp_view(ip: &[u8]) -> Option<TcpView> {
    let tcp = mergeable(ip, IPPROTO_TCP)?.transport()?;
    let hdrs = 20 + usize::from(*tcp.get(12)? >> 4) * 4;
    // A data offset below 5 words is no TCP header (and would slice backwards below).
    if hdrs < 40 || hdrs > ip.len() {
        return None;
    }
    Some(TcpView { hdrs, payload: ip.len() - hdrs, seq: u32::from_be_bytes([tcp[4], tcp[5], tcp[6], tcp[7]]), flags: tcp[13] })
}

impl Coalescer {
    /// A coalescer that merges UDP datagrams too, when `udp` (the output device was opened
    /// with UDP segmentation offload, so it takes UDP GSO frames).
    pub fn with_udp(udp: bool) -> Self {
        Coalescer { udp_ok: udp, ..Self::default() }
    }

    /// Bytes waiting in the coalescer.
    pub fn is_empty(&self) -> bool {
        self.count == 0
    }

    /// Adds `pkt` (vnet header + IP packet); false if it cannot join what is held (flush first).
    pub fn push(&mut self, pkt: &[u8]) -> bool {
        if pkt.len() < VNET_HDR_LEN || pkt.len() > self.buf.len() {
            return false;
        }
        let ip = &pkt[VNET_HDR_LEN..];
        if self.count == 0 {
            self.buf[..pkt.len()].copy_from_slice(pkt);
            self.len = pkt.len();
            self.count = 1;
            self.udp = false;
            if self.udp_ok {
                if let Some(payload) = udp_payload(ip) {
                    self.udp = true;
                    self.mss = payload;
                    self.hdrs = 20 + UDP_HDR_LEN;
                    self.closed = payload == 0;
                    return true;
                }
            }
            match tcp_view(ip) {
                Some(v) if v.payload > 0 && v.flags & (TCP_SYN | TCP_RST | TCP_URG | TCP_FIN | TCP_PSH) == 0 => {
                    self.mss = v.payload;
                    self.next_seq = v.seq.wrapping_add(v.payload as u32);
                    self.hdrs = v.hdrs;
                    self.closed = false;
                }
                // Not mergeable with anything after it: it goes out alone.
                _ => self.closed = true,
            }
            return true;
        }
        if self.closed {
            return false;
        }
        if self.udp {
            return self.push_udp(ip);
        }
        let Some(v) = tcp_view(ip) else { return false };
        let held = &self.buf[VNET_HDR_LEN..self.len];
        let last_payload = (self.len - VNET_HDR_LEN - self.hdrs) - self.mss * (self.count - 1);
        let same_flow = v.hdrs == self.hdrs
            && ip[1] == held[1] // TOS
            && ip[8] == held[8] // TTL
            && ip[12..20] == held[12..20]
            && ip[20..24] == held[20..24]
            && ip[28..33] == held[28..33] // ack, data offset
            && ip[34..36] == held[34..36] // window
            && ip[38..v.hdrs] == held[38..self.hdrs]; // urgent pointer, options (timestamps)
        let fits = self.len + v.payload <= VNET_HDR_LEN + MAX_IP_LEN;
        let ok_flags = v.flags & (TCP_SYN | TCP_RST | TCP_URG | TCP_CWR) == 0 && (v.flags ^ held[33]) & 0x40 == 0;
        if !(same_flow && fits && ok_flags && last_payload == self.mss && v.seq == self.next_seq && v.payload > 0 && v.payload <= self.mss) {
            return false;
        }
        self.buf[self.len..self.len + v.payload].copy_from_slice(&ip[v.hdrs..]);
        self.len += v.payload;
        self.count += 1;
        self.next_seq = v.seq.wrapping_add(v.payload as u32);
        // PSH or FIN end a GRO train: keep them on the superframe, accept nothing after.
        if v.flags & (TCP_PSH | TCP_FIN) != 0 {
            self.buf[VNET_HDR_LEN + 33] |= v.flags & (TCP_PSH | TCP_FIN);
            self.closed = true;
        }
        true
    }

    /// Adds UDP datagram `ip` to the UDP datagrams held, if GRO would.
    fn push_udp(&mut self, ip: &[u8]) -> bool {
        let Some(payload) = udp_payload(ip) else { return false };
        let held = &self.buf[VNET_HDR_LEN..self.len];
        let same_flow = ip[1] == held[1] // TOS (ECN included)
            && ip[8] == held[8] // TTL
            && ip[12..24] == held[12..24]; // addresses, ports
        let fits = self.len + payload <= VNET_HDR_LEN + MAX_IP_LEN && self.count < UDP_GRO_CNT_MAX;
        if !(same_flow && fits && payload > 0 && payload <= self.mss) {
            return false;
        }
        self.buf[self.len..self.len + payload].copy_from_slice(&ip[self.hdrs..]);
        self.len += payload;
        self.count += 1;
        // A shorter datagram ends the batch: only the last may be.
        self.closed = payload < self.mss;
        true
    }

    /// Finishes what is held and returns the bytes to write (one packet or a superframe), or
    /// `None` if empty. The coalescer is empty afterwards.
    pub fn take(&mut self) -> Option<&[u8]> {
        if self.count == 0 {
            return None;
        }
        let (count, len) = (self.count, self.len);
        self.count = 0;
        if count > 1 && self.udp {
            let (vh, ip) = self.buf[..len].split_at_mut(VNET_HDR_LEN);
            let ip_len = ip.len();
            ip[2..4].copy_from_slice(&(ip_len as u16).to_be_bytes());
            ip[10..12].copy_from_slice(&[0, 0]);
            let csum = ipv4_header_checksum(&ip[..20]);
            ip[10..12].copy_from_slice(&csum.to_be_bytes());
            let udp_len = (ip_len - 20) as u16;
            ip[24..26].copy_from_slice(&udp_len.to_be_bytes());
            let pseudo = pseudo_sum(&ip[12..16], &ip[16..20], IPPROTO_UDP, udp_len);
            ip[26..28].copy_from_slice(&pseudo.to_be_bytes());
            VnetHdr { flags: F_NEEDS_CSUM, gso_type: GSO_UDP_L4, hdr_len: self.hdrs as u16, gso_size: self.mss as u16, csum_start: 20, csum_offset: 6 }
                .write(vh);
        } else if count > 1 {
            let (vh, ip) = self.buf[..len].split_at_mut(VNET_HDR_LEN);
            let ip_len = ip.len();
            ip[2..4].copy_from_slice(&(ip_len as u16).to_be_bytes());
            ip[10..12].copy_from_slice(&[0, 0]);
            let csum = ipv4_header_checksum(&ip[..20]);
            ip[10..12].copy_from_slice(&csum.to_be_bytes());
            let pseudo = tcp_pseudo_sum(&ip[12..16], &ip[16..20], (ip_len - 20) as u16);
            ip[36..38].copy_from_slice(&pseudo.to_be_bytes());
            let ecn = if ip[33] & TCP_CWR != 0 { GSO_ECN } else { 0 };
            VnetHdr { flags: F_NEEDS_CSUM, gso_type: GSO_TCPV4 | ecn, hdr_len: self.hdrs as u16, gso_size: self.mss as u16, csum_start: 20, csum_offset: 16 }
                .write(vh);
        }
        Some(&self.buf[..len])
    }
}

#[cfg(test)]
mod coalesce_tests {
    use super::fixtures::*;
    use super::*;

    /// Datagrams of one UDP GSO batch leaving together merge back into one UDP GSO frame:
    /// the payloads in order, sizes in the vnet header, lengths and checksums consistent.
    #[test]
    fn datagrams_of_one_flow_merge_into_a_udp_gso_frame() {
        let dgrams = datagrams(&udp_batch(1452 * 4 + 300), 1452);
        let mut c = Coalescer::with_udp(true);
        for d in &dgrams {
            assert!(c.push(d));
        }
        let out = c.take().unwrap().to_vec();
        let vh = VnetHdr::parse(&out).unwrap();
        assert_eq!((vh.flags, vh.gso_type, vh.gso_size, vh.hdr_len, vh.csum_start, vh.csum_offset), (F_NEEDS_CSUM, GSO_UDP_L4, 1452, 28, 20, 6));
        let ip = &out[VNET_HDR_LEN..];
        assert_eq!(u16::from_be_bytes([ip[2], ip[3]]) as usize, ip.len());
        assert_eq!(u16::from_be_bytes([ip[24], ip[25]]) as usize, ip.len() - 20);
        assert_eq!(ipv4_header_checksum(&ip[..20]), u16::from_be_bytes([ip[10], ip[11]]));
        assert_eq!(u16::from_be_bytes([ip[26], ip[27]]), pseudo_sum(&ip[12..16], &ip[16..20], 17, (ip.len() - 20) as u16));
        let payload: Vec<u8> = dgrams.iter().flat_map(|d| d[VNET_HDR_LEN + 28..].to_vec()).collect();
        assert_eq!(&ip[28..], &payload[..]);
        assert!(c.is_empty());
        // Cut again, it gives back the same datagrams (IDs aside: the frame has the first's).
        let again = datagrams(ip, 1452);
        assert_eq!(again.len(), dgrams.len());
        for (i, (a, d)) in again.iter().zip(&dgrams).enumerate() {
            assert_eq!(&a[VNET_HDR_LEN + 20..], &d[VNET_HDR_LEN + 20..], "datagram {i}");
        }
    }

    #[test]
    fn refuses_udp_that_gro_would_not_merge() {
        let dgrams = datagrams(&udp_batch(1452 * 2), 1452);
        // Without UDP offload on the output device, UDP goes out one by one.
        let mut tcp_only = Coalescer::default();
        assert!(tcp_only.push(&dgrams[0]) && !tcp_only.push(&dgrams[1]));
        // Another flow (port), TOS or a datagram larger than the first do not join.
        for change in [22usize, 1] {
            let mut c = Coalescer::with_udp(true);
            let mut other = dgrams[1].clone();
            other[VNET_HDR_LEN + change] ^= 1;
            assert!(c.push(&dgrams[0]) && !c.push(&other), "byte {change}");
        }
        let small = datagrams(&udp_batch(100), 1452);
        let mut c = Coalescer::with_udp(true);
        assert!(c.push(&small[0]) && !c.push(&dgrams[0]), "larger after smaller");
        // After a shorter datagram, nothing more.
        let mixed = datagrams(&udp_batch(1452 + 100), 1452);
        let mut c = Coalescer::with_udp(true);
        assert!(c.push(&mixed[0]) && c.push(&mixed[1]) && !c.push(&mixed[0]));
        // At most UDP_GRO_CNT_MAX datagrams in one frame.
        let many = datagrams(&udp_batch(100 * (UDP_GRO_CNT_MAX + 1)), 100);
        let mut c = Coalescer::with_udp(true);
        let taken = many.iter().take_while(|d| c.push(d)).count();
        assert_eq!(taken, UDP_GRO_CNT_MAX);
        // A UDP frame held refuses TCP, and a TCP one UDP.
        let tcp = segments(&superframe(1448 * 2, 0x10), 1448, false);
        let mut c = Coalescer::with_udp(true);
        assert!(c.push(&dgrams[0]) && !c.push(&tcp[0]));
        let mut c = Coalescer::with_udp(true);
        assert!(c.push(&tcp[0]) && !c.push(&dgrams[0]));
    }

    #[test]
    fn segments_of_one_superframe_merge_back_into_it() {
        let original = superframe(1448 * 10 + 500, 0x18);
        let mut c = Coalescer::default();
        for s in segments(&original, 1448, false) {
            assert!(c.push(&s));
        }
        let out = c.take().unwrap().to_vec();
        let vh = VnetHdr::parse(&out).unwrap();
        assert_eq!((vh.gso_type, vh.gso_size, vh.hdr_len), (GSO_TCPV4, 1448, 52));
        let ip = &out[VNET_HDR_LEN..];
        assert_eq!(ip.len(), original.len());
        assert_eq!(&ip[52..], &original[52..], "payload intact");
        assert_eq!(ip[33], 0x18, "PSH from the last segment kept");
        assert_eq!(ipv4_header_checksum(&ip[..20]), u16::from_be_bytes([ip[10], ip[11]]));
        assert!(c.is_empty());
    }

    #[test]
    fn refuses_what_gro_would_not_merge() {
        let segs = segments(&superframe(1448 * 3, 0x10), 1448, false);
        // A gap in sequence numbers.
        let mut c = Coalescer::default();
        assert!(c.push(&segs[0]));
        assert!(!c.push(&segs[2]));
        assert_eq!(c.take().unwrap().len(), segs[0].len(), "a lone packet goes out unchanged");
        // Another flow (different port).
        let mut other = segs[1].clone();
        other[VNET_HDR_LEN + 21] ^= 1;
        assert!(c.push(&segs[0]));
        assert!(!c.push(&other));
        c.take();
        // Different timestamps (options).
        let mut ts = segs[1].clone();
        ts[VNET_HDR_LEN + 45] ^= 1;
        assert!(c.push(&segs[0]));
        assert!(!c.push(&ts));
        c.take();
        // A short segment ends the train.
        let short = segments(&superframe(1448 + 100, 0x10), 1448, false);
        assert!(c.push(&short[0]));
        assert!(c.push(&short[1]));
        let mut next = segs[0].clone();
        next[VNET_HDR_LEN + 24..VNET_HDR_LEN + 28].copy_from_slice(&FIRST_SEQ.wrapping_add(1548).to_be_bytes());
        assert!(!c.push(&next), "nothing may follow a short segment");
        // A pure ACK is sent alone.
        let ack = segments(&superframe(0, 0x10), 1448, false);
        let mut c = Coalescer::default();
        assert!(c.push(&ack[0]));
        assert!(!c.push(&segs[0]));
    }
}
