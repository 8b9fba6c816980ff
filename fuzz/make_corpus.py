#!/usr/bin/env python3
"""Writes the seed corpus of the packet_path fuzz target (fuzz/corpus/packet_path/).

Each file: one configuration byte (bit 0 offload, 1 rate limit, 2 small buffer, 3 AQM,
4 jumbo MTU, 5 batching, 6-7 delay, and with bit 3 the AQM: 0 or 3 CoDel, 1 FQ-CoDel, 2 PIE), then records [len_lo, len_hi, dt_ms] + bytes, as
crates/emu/src/fuzzing.rs reads them. The packets are laid out as the kernel hands them to
a TUN device with IFF_VNET_HDR: TSO superframes (GSO_TCPV4, with and without ECN), UDP GSO
batches (GSO_UDP_L4), plain TCP with timestamps, UDP, ICMP echo, IPv6, and truncated variants
of each.
"""
import os, struct

OUT = os.path.join(os.path.dirname(__file__), "corpus", "packet_path")


def csum(b):
    if len(b) % 2:
        b += b"\0"
    s = sum(struct.unpack("!%dH" % (len(b) // 2), b))
    while s >> 16:
        s = (s & 0xFFFF) + (s >> 16)
    return ~s & 0xFFFF


def ipv4(proto, payload, ident=0x1234):
    h = bytearray(struct.pack("!BBHHHBBH4s4s", 0x45, 0, 20 + len(payload), ident, 0x4000, 64, proto, 0, bytes([10, 77, 0, 1]), bytes([10, 77, 0, 2])))
    h[10:12] = struct.pack("!H", csum(bytes(h)))
    return bytes(h) + payload


def tcp(payload, seq=1000, flags=0x10, doff=8):
    opts = b"\x01\x01\x08\x0a" + struct.pack("!II", 111, 222)
    h = struct.pack("!HHIIBBHHH", 40000, 5201, seq, 77, doff << 4, flags, 65535, 0, 0) + opts[: (doff - 5) * 4]
    return h + payload


def vnet(gso_type=0, gso_size=0, hdr_len=0, flags=0, csum_offset=16):
    return struct.pack("<BBHHHH", flags, gso_type, hdr_len, gso_size, 20 if flags else 0, csum_offset if flags else 0)


def record(pkt, dt=0):
    return struct.pack("<HB", len(pkt), dt) + pkt


def write(name, cfg, pkts):
    with open(os.path.join(OUT, name), "wb") as f:
        f.write(bytes([cfg]) + b"".join(record(p, dt) for p, dt in pkts))


os.makedirs(OUT, exist_ok=True)
payload = bytes((i * 7 + 3) & 0xFF for i in range(1448 * 4))
sf = ipv4(6, tcp(payload))
write("tso_superframe", 0x01, [(vnet(1, 1448, 52, 1) + sf, 0)])
write("tso_superframe_ecn_cwr", 0x03, [(vnet(0x81, 1448, 52, 1) + ipv4(6, tcp(payload, flags=0x90)), 0)])
write("tso_superframes_train", 0x07, [(vnet(1, 1448, 52, 1) + ipv4(6, tcp(payload, seq=1000 + i * len(payload))), 1) for i in range(4)])
write("tso_truncated", 0x01, [(vnet(1, 1448, 52, 1) + sf[:70], 0), (vnet(1, 1448, 52, 1) + sf[:30], 0)])
write("tso_zero_mss", 0x01, [(vnet(1, 0, 52, 1) + sf, 0)])
write("tso_ihl_below_5", 0x01, [(vnet(1, 1448, 52, 1) + bytes([0x42]) + sf[1:], 0)])
write("tso_data_offset_below_5", 0x01, [(vnet(1, 1448, 52, 1) + ipv4(6, tcp(payload, doff=2)), 0)])
segs = [vnet(0, 0, 0, 1) + ipv4(6, tcp(payload[i * 1448 : (i + 1) * 1448], seq=1000 + i * 1448)) for i in range(4)]
write("tcp_segments_coalesce", 0x01, [(s, 0) for s in segs])
write("tcp_segments_no_offload", 0x00, [(s[10:], 0) for s in segs])
write("tcp_plain_data_offset_below_5", 0x01, [(vnet() + ipv4(6, tcp(payload[:100], doff=d)), 0) for d in range(5)])
udp = struct.pack("!HHHH", 5000, 5001, 8 + 512, 0) + bytes(512)
write("udp", 0x00, [(ipv4(17, udp), 1)] * 3)
icmp = struct.pack("!BBHHH", 8, 0, 0, 1, 1) + bytes(56)
write("icmp_echo", 0x41, [(vnet() + ipv4(1, icmp), 0)])
ip6 = struct.pack("!IHBB16s16s", 0x60000000, len(udp), 17, 64, bytes(15) + b"\1", bytes(15) + b"\2") + udp
write("ipv6_udp", 0x01, [(vnet() + ip6, 0)])
write("ipv6_tso_unsupported", 0x01, [(vnet(4, 1428, 72, 1) + ip6, 0)])
write("truncated_reads", 0x01, [(b"", 0), (b"\0" * 5, 0), (vnet(), 0), (vnet() + b"\x45", 0)])
write("codel_overload", 0x0F, [(ipv4(17, udp), 0)] * 40)
udp_b = struct.pack("!HHHH", 5002, 5001, 8 + 512, 0) + bytes(512)
write("fq_codel_two_flows_overload", 0x4E, [(ipv4(17, udp if i % 3 else udp_b), 0) for i in range(40)])
write("pie_overload", 0x8E, [(ipv4(17, udp), 0)] * 60)
quic = bytes((i * 13 + 5) & 0xFF for i in range(1452 * 3 + 300))
uso = ipv4(17, struct.pack("!HHHH", 4433, 40000, 8 + len(quic), 0) + quic)
write("udp_gso_batch", 0x01, [(vnet(5, 1452, 28, 1, 6) + uso, 0)])
write("udp_gso_batches_rate_limited", 0x03, [(vnet(5, 1452, 28, 1, 6) + uso, 1) for _ in range(4)])
write("udp_gso_truncated", 0x01, [(vnet(5, 1452, 28, 1, 6) + uso[:25], 0), (vnet(5, 1452, 28, 1, 6) + uso[:40], 0)])
write("udp_gso_zero_size", 0x01, [(vnet(5, 0, 28, 1, 6) + uso, 0)])
write("udp_gso_too_many_segments", 0x01, [(vnet(5, 1, 28, 1, 6) + uso, 0)])
dgrams = [vnet(0, 0, 0, 1, 6) + ipv4(17, struct.pack("!HHHH", 4433, 40000, 8 + 1452, 0) + quic[i * 1452 : (i + 1) * 1452]) for i in range(3)]
write("udp_datagrams_coalesce", 0x01, [(d, 0) for d in dgrams])
