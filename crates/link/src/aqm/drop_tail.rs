//! Drop-tail: a FIFO that refuses arrivals finding the buffer full. Not registered by name in
//! `registry!`: it is the absence of an AQM (`--aqm droptail`, the default).

use super::{Drops, Fifo, QueueDiscipline, Queued};
use crate::buffer::Buffer;
use crate::outcome::DropCause;
use crate::time::Instant;

pub struct DropTail<P> {
    fifo: Fifo<P>,
    buffer: Buffer,
}

impl<P> DropTail<P> {
    pub fn new(buffer: Buffer) -> Self {
        DropTail { fifo: Fifo::default(), buffer }
    }
}

impl<P> QueueDiscipline<P> for DropTail<P> {
    fn enqueue(&mut self, _now: Instant, q: Queued<P>, server_idle: bool, _drops: &mut Drops<P>) -> Result<(), (Queued<P>, DropCause)> {
        if !server_idle && !self.fifo.admits(self.buffer, q.len) {
            return Err((q, DropCause::BufferOverflow));
        }
        self.fifo.push(q);
        Ok(())
    }

    fn dequeue(&mut self, _now: Instant, _drops: &mut Drops<P>) -> Option<Queued<P>> {
        self.fifo.pop()
    }

    fn backlog_bytes(&self) -> u64 {
        self.fifo.bytes()
    }

    fn backlog_packets(&self) -> usize {
        self.fifo.len()
    }
}
