#!/usr/bin/env python3
"""Seeds for the probe_packet fuzz target: one datagram of each kind (see
crates/pathprobe/src/wire.rs), padded, truncated, and with extreme field values."""
import os
import struct

OUT = os.path.join(os.path.dirname(__file__), "corpus", "probe_packet")
TOKEN = bytes(range(16))


def msg(kind, body, version=1, magic=b"CCBP"):
    return magic + bytes([version, kind]) + TOKEN + body


seeds = {
    "echo": msg(1, struct.pack(">IQ", 1, 123456789)),
    "echo_reply": msg(2, struct.pack(">IQ", 7, 2**64 - 1)),
    "train_request": msg(3, struct.pack(">IQIH", 1, 30_000_000, 10_000, 1472)),
    "train_request_huge": msg(3, struct.pack(">IQIH", 2**32 - 1, 2**64 - 1, 2**32 - 1, 65535)),
    "train_padded": msg(4, struct.pack(">IIIQ", 3, 17, 10_000, 1_700_000_000_000_000_000)) + bytes(1472 - 42),
    "train_seq_past_count": msg(4, struct.pack(">IIIQ", 3, 10_000, 10_000, 0)),
    "report_request": msg(5, struct.pack(">I", 3)),
    "report": msg(6, struct.pack(">IIQQQQI", 3, 9_900, 14_850_000, 1_000, 4_000_000_000, 2_600_000_000, 10_000)),
    "report_backwards_time": msg(6, struct.pack(">IIQQQQI", 3, 2, 1500, 9, 1, 2**64 - 1, 2**32 - 1)),
    "truncated_echo": msg(1, struct.pack(">IQ", 1, 2))[:-3],
    "wrong_version": msg(1, struct.pack(">IQ", 1, 2), version=2),
    "wrong_magic": msg(1, struct.pack(">IQ", 1, 2), magic=b"XXXX"),
    "unknown_kind": msg(99, bytes(20)),
    "empty": b"",
}

os.makedirs(OUT, exist_ok=True)
for name, data in seeds.items():
    with open(os.path.join(OUT, name), "wb") as f:
        f.write(data)
print(f"wrote {len(seeds)} seeds to {OUT}")
