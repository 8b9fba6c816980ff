use serde::{Deserialize, Serialize};

/// Capacity of the drop-tail queue in front of the rate server. The packet
/// currently being serialized does not count against it.
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(tag = "kind", content = "value", rename_all = "snake_case")]
pub enum Buffer {
    #[default]
    Unlimited,
    Bytes(u64),
    Packets(u64),
}

impl Buffer {
    /// Whether a queue of `bytes` in `packets` packets fits.
    pub fn holds(&self, bytes: u64, packets: usize) -> bool {
        match *self {
            Buffer::Unlimited => true,
            Buffer::Bytes(b) => bytes <= b,
            Buffer::Packets(n) => packets as u64 <= n,
        }
    }

    /// Whether a `len`-byte packet fits behind a queue of `bytes` in `packets` packets.
    pub fn admits(&self, bytes: u64, packets: usize, len: u32) -> bool {
        self.holds(bytes + u64::from(len), packets + 1)
    }
}
