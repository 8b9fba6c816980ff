//! What a test sends back to its client: the far end's samples and ends through a bounded
//! queue ([`Forward`]), written by one writer per test ([`write_results`]), and the test's last
//! message in parts that fit a record ([`done_messages`]).

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{mpsc, Mutex};

use ccbench_kernel_tcp::Sample;
use ccbench_workload::{FlowEnd, GoodputPoint, HttpEndEvents, QuicSample, SeriesSink, SocketId};

use super::Quiet;
use crate::channel::Channel;
use crate::proto::{FrameError, ServerMsg};

/// Sends what the test's queue holds to the client until the queue's sink is dropped. After a
/// failure it drains the queue without sending, so a producer waiting for room never hangs.
/// The error says whether the client stopped reading (the 10 s write timeout, or its end
/// gone) or a message could not be sent at all.
pub(crate) fn write_results(channel: &Channel, rx: mpsc::Receiver<ServerMsg>) -> Result<(), String> {
    let mut result = Ok(());
    for msg in rx {
        if result.is_ok() {
            result = channel.send(&msg).map_err(|e| match e {
                FrameError::Io(e) => format!("the client stopped reading the results ({e})"),
                e => format!("sending the results: {e}"),
            });
        }
    }
    result
}

/// Flow ends per `Done` part, at most: what fits a record whatever the ends hold. One end
/// (its `tcp_info`, two errors of up to [`crate::screen::MAX_TEXT`] characters, what held it
/// back) is under 6 kB of JSON, so 8 make under 48 kB of the 64 KiB frame. The ends of this
/// server's 64 flows made about 100 kB in one `Done`: sealing it failed, and every such test
/// ended as "the client stopped reading the results" (issue 27 §6).
pub(crate) const ENDS_PER_DONE: usize = 8;

/// The test's last message in parts of at most [`ENDS_PER_DONE`] ends: every part but the last
/// says `more`, and the client gathers them (version 5 clients before this read only the first).
pub(crate) fn done_messages(ends: Vec<FlowEnd>, dropped_samples: u64, quic: bool) -> Vec<ServerMsg> {
    let parts: Vec<Vec<FlowEnd>> = if ends.is_empty() { vec![Vec::new()] } else { ends.chunks(ENDS_PER_DONE).map(<[FlowEnd]>::to_vec).collect() };
    let last = parts.len() - 1;
    parts
        .into_iter()
        .enumerate()
        .map(|(i, ends)| {
            let more = i < last;
            if quic {
                ServerMsg::QuicDone { ends, dropped_samples, more }
            } else {
                ServerMsg::Done { ends, dropped_samples, more }
            }
        })
        .collect()
}

/// Messages waiting for the client, at most: a client that reads slowly (the audit's: 64
/// flows, 1 ms samples) made an unbounded queue grow serve by 14.5 MB/s. A few MB at most.
pub(crate) const RESULT_QUEUE: usize = 4096;

/// The far end's series, sent to the client as they are taken, through a queue of
/// [`RESULT_QUEUE`] messages. A sample that finds it full is dropped and counted (the client
/// is told how many in the test's last message: `dropped_samples`); what the results cannot do
/// without (acceptances, ends, BBR events, the last message) waits for room. The writer drains
/// the queue to its end even once the client is gone, so waiting never hangs.
pub(crate) struct Forward {
    tx: mpsc::SyncSender<ServerMsg>,
    dropped: AtomicU64,
    /// The gate's closes on serve's log: at most a line a second, however many an outsider makes.
    closes: Mutex<Quiet>,
}

impl Forward {
    /// A sink and the receiving end of its queue, for the test's writer.
    pub(crate) fn queue() -> (Forward, mpsc::Receiver<ServerMsg>) {
        let (tx, rx) = mpsc::sync_channel(RESULT_QUEUE);
        (Forward { tx, dropped: AtomicU64::new(0), closes: Mutex::new(Quiet::new()) }, rx)
    }

    /// A message the results need: waits for room in the queue.
    pub(crate) fn send(&self, msg: ServerMsg) {
        let _ = self.tx.send(msg);
    }

    /// A sample: dropped and counted when the client lags so far behind that the queue is full.
    pub(super) fn sample(&self, msg: ServerMsg) {
        if let Err(mpsc::TrySendError::Full(_)) = self.tx.try_send(msg) {
            self.dropped.fetch_add(1, Ordering::Relaxed);
        }
    }

    /// The test's last message, `Done` (or `QuicDone`) with every flow's end and the drops,
    /// in as many parts as its records need ([`done_messages`]).
    pub(crate) fn done(&self, ends: Vec<FlowEnd>, quic: bool) {
        for msg in done_messages(ends, self.dropped(), quic) {
            self.send(msg);
        }
    }

    /// Samples dropped so far.
    pub(crate) fn dropped(&self) -> u64 {
        self.dropped.load(Ordering::Relaxed)
    }
}

impl SeriesSink for Forward {
    fn tcp_sample(&self, socket: SocketId, sample: &Sample) {
        let msg = match socket {
            SocketId::Flow(flow) => ServerMsg::Sample { flow, sample: *sample },
            SocketId::Connection(conn) => ServerMsg::ConnectionSample { conn: conn as u32, sample: *sample },
        };
        self.sample(msg);
    }
    fn received(&self, flow: u32, point: &GoodputPoint) {
        self.sample(ServerMsg::Received { flow, point: *point });
    }
    fn quic_sample(&self, socket: SocketId, sample: &QuicSample) {
        if let SocketId::Flow(flow) = socket {
            self.sample(ServerMsg::QuicSample { flow, sample: Box::new(sample.clone()) });
        }
    }
}

impl HttpEndEvents for Forward {
    fn accepted(&self, conn: u32, cc_read_back: Option<&str>, mismatch: Option<&str>) {
        self.send(ServerMsg::Accepted { conn, cc_read_back: cc_read_back.map(str::to_string), mismatch: mismatch.map(str::to_string) });
    }
    fn closed(&self, reason: &str) {
        self.closes.lock().unwrap_or_else(|p| p.into_inner()).log(&format!("data port: closed before admission: {reason}"));
    }
}
