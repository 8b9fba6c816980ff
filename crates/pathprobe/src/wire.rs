//! The probe's datagrams. Both halves parse bytes that came from the network, so parsing is
//! total: any input is either one well-formed [`Message`] or `None`, never a panic (see the
//! fuzz target `probe_packet` and the `garbage` test).
//!
//! Layout (big-endian): `"CCBP"`, version, kind, the 16-byte session token, then the kind's
//! fixed body. Bytes after the body are padding (trains fill packets to a chosen size) and are
//! ignored.

pub const MAGIC: [u8; 4] = *b"CCBP";
pub const VERSION: u8 = 1;
pub const HEADER_LEN: usize = 4 + 1 + 1 + 16;

pub type Token = [u8; 16];

/// One probe datagram's meaning.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Message {
    /// Client → server, echoed back unchanged as [`Message::EchoReply`]; `sent_ns` is the
    /// client's own clock, so only the client interprets it.
    Echo {
        seq: u32,
        sent_ns: u64,
    },
    EchoReply {
        seq: u32,
        sent_ns: u64,
    },
    /// Client → server: send train `train` of `count` packets of `payload_len` bytes, paced at
    /// `rate_bps` counted in IP bytes (as the emulator's `--rate` counts).
    TrainRequest {
        train: u32,
        rate_bps: u64,
        count: u32,
        payload_len: u16,
    },
    /// One packet of a train, in either direction: server → client for the downlink,
    /// client → server for the uplink. `count` is the train's length, so the receiver can
    /// size its sequence bitmap from the first packet it sees; `sent_ns` is the sender's clock
    /// when it sent the packet, so the receiver can tell the path's stretching of a train from
    /// a sender that fell behind its pace.
    Train {
        train: u32,
        seq: u32,
        count: u32,
        sent_ns: u64,
    },
    /// Client → server: what did you receive of uplink train `train`?
    ReportRequest {
        train: u32,
    },
    /// Server → client: what it received of `train` (see [`crate::estimate::TrainStats`]).
    Report {
        train: u32,
        stats: WireStats,
    },
}

/// A train's receive statistics as they travel in a [`Message::Report`].
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct WireStats {
    pub received: u32,
    pub bytes_after_first: u64,
    pub first_arrival_ns: u64,
    pub last_arrival_ns: u64,
    /// The sender's clock from the earliest to the latest send among the packets received.
    pub send_span_ns: u64,
    /// Highest less lowest sequence number received: the packets sent over `send_span_ns`.
    pub seq_span: u32,
}

impl Message {
    fn kind(&self) -> u8 {
        match self {
            Message::Echo { .. } => 1,
            Message::EchoReply { .. } => 2,
            Message::TrainRequest { .. } => 3,
            Message::Train { .. } => 4,
            Message::ReportRequest { .. } => 5,
            Message::Report { .. } => 6,
        }
    }

    /// The header and body, without padding.
    pub fn encode(&self, token: &Token) -> Vec<u8> {
        let mut b = Vec::with_capacity(64);
        b.extend_from_slice(&MAGIC);
        b.push(VERSION);
        b.push(self.kind());
        b.extend_from_slice(token);
        match *self {
            Message::Echo { seq, sent_ns } | Message::EchoReply { seq, sent_ns } => {
                b.extend_from_slice(&seq.to_be_bytes());
                b.extend_from_slice(&sent_ns.to_be_bytes());
            }
            Message::TrainRequest { train, rate_bps, count, payload_len } => {
                b.extend_from_slice(&train.to_be_bytes());
                b.extend_from_slice(&rate_bps.to_be_bytes());
                b.extend_from_slice(&count.to_be_bytes());
                b.extend_from_slice(&payload_len.to_be_bytes());
            }
            Message::Train { train, seq, count, sent_ns } => {
                b.extend_from_slice(&train.to_be_bytes());
                b.extend_from_slice(&seq.to_be_bytes());
                b.extend_from_slice(&count.to_be_bytes());
                b.extend_from_slice(&sent_ns.to_be_bytes());
            }
            Message::ReportRequest { train } => b.extend_from_slice(&train.to_be_bytes()),
            Message::Report { train, stats } => {
                b.extend_from_slice(&train.to_be_bytes());
                b.extend_from_slice(&stats.received.to_be_bytes());
                b.extend_from_slice(&stats.bytes_after_first.to_be_bytes());
                b.extend_from_slice(&stats.first_arrival_ns.to_be_bytes());
                b.extend_from_slice(&stats.last_arrival_ns.to_be_bytes());
                b.extend_from_slice(&stats.send_span_ns.to_be_bytes());
                b.extend_from_slice(&stats.seq_span.to_be_bytes());
            }
        }
        b
    }

    /// Encoded and padded with zeros to `len` bytes (no shorter than the message itself).
    pub fn encode_padded(&self, token: &Token, len: usize) -> Vec<u8> {
        let mut b = self.encode(token);
        if b.len() < len {
            b.resize(len, 0);
        }
        b
    }
}

/// Sets the sequence number and send time of an encoded [`Message::Train`] in place, so a
/// sender builds each train's packet once.
pub fn stamp_train_packet(packet: &mut [u8], seq: u32, sent_ns: u64) {
    let at = HEADER_LEN + 4;
    packet[at..at + 4].copy_from_slice(&seq.to_be_bytes());
    packet[at + 8..at + 16].copy_from_slice(&sent_ns.to_be_bytes());
}

/// Reads big-endian fields off the front of a slice; every read is checked.
struct Reader<'a>(&'a [u8]);

impl Reader<'_> {
    fn take<const N: usize>(&mut self) -> Option<[u8; N]> {
        let (head, rest) = self.0.split_first_chunk::<N>()?;
        self.0 = rest;
        Some(*head)
    }
    fn u16(&mut self) -> Option<u16> {
        self.take().map(u16::from_be_bytes)
    }
    fn u32(&mut self) -> Option<u32> {
        self.take().map(u32::from_be_bytes)
    }
    fn u64(&mut self) -> Option<u64> {
        self.take().map(u64::from_be_bytes)
    }
}

/// Token equality in time independent of where the first difference is, so that timing
/// cannot be used to guess a token byte by byte.
pub fn same_token(a: &Token, b: &Token) -> bool {
    a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

/// Parses a datagram, returning the token it carries and its message; `None` for anything
/// that is not a well-formed probe datagram of this version.
pub fn parse(bytes: &[u8]) -> Option<(Token, Message)> {
    let mut r = Reader(bytes);
    if r.take::<4>()? != MAGIC || r.take::<1>()?[0] != VERSION {
        return None;
    }
    let kind = r.take::<1>()?[0];
    let token: Token = r.take()?;
    let message = match kind {
        1 => Message::Echo { seq: r.u32()?, sent_ns: r.u64()? },
        2 => Message::EchoReply { seq: r.u32()?, sent_ns: r.u64()? },
        3 => Message::TrainRequest { train: r.u32()?, rate_bps: r.u64()?, count: r.u32()?, payload_len: r.u16()? },
        4 => Message::Train { train: r.u32()?, seq: r.u32()?, count: r.u32()?, sent_ns: r.u64()? },
        5 => Message::ReportRequest { train: r.u32()? },
        6 => Message::Report {
            train: r.u32()?,
            stats: WireStats {
                received: r.u32()?,
                bytes_after_first: r.u64()?,
                first_arrival_ns: r.u64()?,
                last_arrival_ns: r.u64()?,
                send_span_ns: r.u64()?,
                seq_span: r.u32()?,
            },
        },
        _ => return None,
    };
    Some((token, message))
}

/// Parses a datagram and keeps it only if it carries `token`.
pub fn parse_for(bytes: &[u8], token: &Token) -> Option<Message> {
    parse(bytes).filter(|(t, _)| same_token(t, token)).map(|(_, m)| m)
}

#[cfg(test)]
mod tests {
    use super::*;

    const T: Token = [7; 16];

    #[test]
    fn every_message_round_trips_and_padding_is_ignored() {
        let all = [
            Message::Echo { seq: 1, sent_ns: u64::MAX },
            Message::EchoReply { seq: u32::MAX, sent_ns: 3 },
            Message::TrainRequest { train: 9, rate_bps: 30_000_000, count: 10_000, payload_len: 1472 },
            Message::Train { train: 9, seq: 17, count: 10_000, sent_ns: 12 },
            Message::ReportRequest { train: 4 },
            Message::Report {
                train: 4,
                stats: WireStats { received: 5, bytes_after_first: 6, first_arrival_ns: 7, last_arrival_ns: 8, send_span_ns: 9, seq_span: 10 },
            },
        ];
        let mut train = Message::Train { train: 9, seq: 0, count: 5, sent_ns: 0 }.encode_padded(&T, 100);
        stamp_train_packet(&mut train, 3, 44);
        assert_eq!(parse(&train), Some((T, Message::Train { train: 9, seq: 3, count: 5, sent_ns: 44 })));
        for m in all {
            assert_eq!(parse(&m.encode(&T)), Some((T, m)));
            assert_eq!(parse(&m.encode_padded(&T, 1472)), Some((T, m)));
            let whole = m.encode(&T);
            for cut in 0..whole.len() {
                assert_eq!(parse(&whole[..cut]), None, "{m:?} cut to {cut} bytes");
            }
        }
    }

    #[test]
    fn a_wrong_token_magic_version_or_kind_is_refused() {
        let good = Message::Echo { seq: 1, sent_ns: 2 }.encode(&T);
        assert!(parse_for(&good, &T).is_some());
        assert!(parse_for(&good, &[8; 16]).is_none());
        for (at, value) in [(0, b'X'), (4, 2), (5, 0), (5, 7)] {
            let mut bad = good.clone();
            bad[at] = value;
            assert!(parse(&bad).is_none(), "byte {at} = {value}");
        }
    }
}
