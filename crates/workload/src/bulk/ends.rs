//! One end of a bulk transfer, whatever carries its flows: the send loop, the receive loop and
//! the end that runs them, written once for kernel TCP and QUIC.
//!
//! What the transports share, and so lives here: each flow's start offset and deadline, the
//! receiving window ([`FlowWindow`]), the byte budget of `ccbench serve --max-bytes`, the
//! goodput points, the completion of a byte count, the sampling rounds and the measured span,
//! and (in `bulk`) the flow results and their assembly.
//!
//! Where they truly differ, and so is the transport's, behind [`SendHalf`]/[`ReceiveHalf`]
//! and the round hook of [`run_halves`]:
//! * connection setup and the algorithm's read-back (a socket option on each TCP socket; a
//!   controller on each QUIC endpoint's transport config, read back from the connection);
//! * a flow's byte stream: a TCP connection of its own, or a QUIC stream on a connection that
//!   may carry other flows (`--flows N`), named by a 4-byte flow id at its start, so the
//!   receiver routes streams to flows as they arrive;
//! * how the sender is sampled: `TCP_INFO` per socket ([`Sampler`]) or our controller
//!   observer per QUIC connection;
//! * over `--remote`, how a data connection proves it belongs to the test (the far end's
//!   accept of a TCP port, or the data hello on a QUIC connection's first stream).
//!
//! Each half runs on a thread of its own, blocking with a short tick ([`IO_TICK`]) so that it
//! sees the clock and the stop flag; a QUIC half drives its stream's futures on the
//! connection's runtime (`Handle::block_on`), its writes and reads large enough that the hop
//! costs nothing at gigabits.

use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use super::{Amount, BulkSpec, ByteBudget, EndClock, FlowEnd, FlowWindow, GoodputPoint};
use crate::sampler::Sampler;
use crate::{MeasureHook, SeriesSink};

/// How often a blocked write or read comes back to look at the clock and the stop flag.
pub(crate) const IO_TICK: Duration = Duration::from_millis(50);

/// What one write or read on a flow's stream did.
pub(crate) enum Moved {
    /// This many bytes went out or came in.
    Bytes(usize),
    /// Nothing within [`IO_TICK`]: look at the clock and try again.
    Idle,
    /// The peer finished the stream (receiving only).
    End,
    /// The stream failed; the message names the direction (`send: …`, `receive: …`).
    Failed(String),
}

/// The sending half of one flow's byte stream.
pub(crate) trait SendHalf: Send {
    /// The most one write hands the transport.
    fn max_write(&self) -> usize;
    /// Writes `len` bytes of payload, or fewer.
    fn write(&mut self, len: usize) -> Moved;
    /// A byte count is all written: ends the stream, keeping it until the receiver has it all,
    /// `until` passes or `stop` is set.
    fn finish(&mut self, until: Instant, stop: &AtomicBool);
    /// The budget is spent: ends the stream now.
    fn abort(&mut self);
}

/// The receiving half of one flow's byte stream.
pub(crate) trait ReceiveHalf: Send {
    fn read(&mut self) -> Moved;
    /// The budget is spent: stops taking data.
    fn abort(&mut self);
    /// Why nothing was read, when the flow's stream never came (a QUIC stream is routed to
    /// its flow only once the sender opens it).
    fn missing(&self) -> Option<String> {
        None
    }
}

/// A flow's half at this end.
pub(crate) enum Io<'a> {
    Sends(Box<dyn SendHalf + 'a>),
    Receives(Box<dyn ReceiveHalf + 'a>),
}

/// One flow's half, with its start offset into the transfer.
pub(crate) struct Half<'a> {
    pub(crate) id: u32,
    pub(crate) start_s: f64,
    pub(crate) io: Io<'a>,
}

/// What arrived of one flow.
#[derive(Clone, Debug, Default)]
pub(crate) struct Received {
    pub(crate) bytes: u64,
    pub(crate) completion_s: Option<f64>,
    pub(crate) error: Option<String>,
}

/// Sends until the amount is sent, `deadline` or `stop`; with `budget`, each write is taken
/// from it first (`ccbench serve --max-bytes`), what a write did not take goes back, and the
/// flow stops with the budget's reason once it is spent.
pub(crate) fn send_loop(io: &mut dyn SendHalf, amount: Amount, deadline: Instant, stop: &AtomicBool, budget: Option<&ByteBudget>) -> Result<(), String> {
    let mut remaining = match amount {
        Amount::Bytes(n) => n,
        Amount::Seconds(_) => u64::MAX,
    };
    while remaining > 0 && Instant::now() < deadline && !stop.load(Ordering::Relaxed) {
        // A budget's last write is what is left of it, so the flow stops at the budget, not a
        // write's length short of it.
        let len = remaining.min(io.max_write() as u64).min(budget.map_or(u64::MAX, |b| b.remaining().max(1))) as usize;
        if let Some(b) = budget.filter(|b| !b.take(len as u64)) {
            io.abort();
            return Err(b.reason.clone());
        }
        let moved = match io.write(len) {
            Moved::Bytes(n) => n,
            Moved::Idle | Moved::End => 0,
            // The receiver closes at the deadline; a reset after that is the normal end.
            Moved::Failed(_) if Instant::now() >= deadline => break,
            Moved::Failed(e) => return Err(e),
        };
        remaining -= moved as u64;
        if let Some(b) = budget {
            b.give_back((len - moved) as u64);
        }
    }
    if matches!(amount, Amount::Bytes(_)) {
        io.finish(deadline, stop);
    }
    Ok(())
}

/// Reads until the window closes, the byte count is in, the stream ends or `stop`, keeping
/// `counter` at the bytes counted so far (the goodput points are taken from it).
pub(crate) fn receive_loop(io: &mut dyn ReceiveHalf, mut window: FlowWindow, counter: &AtomicU64, stop: &AtomicBool, budget: Option<&ByteBudget>) -> Received {
    let mut got = Received::default();
    let mut last_byte = None;
    let target = match window.amount() {
        Amount::Bytes(n) => n,
        Amount::Seconds(_) => u64::MAX,
    };
    while Instant::now() < window.until() && !stop.load(Ordering::Relaxed) && got.bytes < target {
        match io.read() {
            Moved::Bytes(n) if budget.is_some_and(|b| !b.take(n as u64)) => {
                got.error = budget.map(|b| b.reason.clone());
                io.abort();
                break;
            }
            Moved::Bytes(n) => {
                let now = Instant::now();
                if window.counts(now) {
                    got.bytes += n as u64;
                    counter.store(got.bytes, Ordering::Relaxed);
                    last_byte = Some(now);
                }
            }
            Moved::Idle => {}
            Moved::End => break,
            Moved::Failed(e) => {
                got.error = Some(e);
                break;
            }
        }
    }
    got.error = got.error.or_else(|| io.missing());
    got.completion_s = window.completion_s(got.bytes, last_byte);
    got
}

fn sleep_until(t: Instant, stop: &AtomicBool) {
    while Instant::now() < t && !stop.load(Ordering::Relaxed) {
        std::thread::sleep((t - Instant::now()).min(IO_TICK));
    }
}

/// Runs one end of a bulk transfer (or, locally, both) on its flows' halves: each sending half
/// sends from its start offset, each receiving half is read, and every round of `sampler`
/// takes the receivers' goodput points, then `on_round(t_us)` (the transport's own sampling,
/// e.g. QUIC's observer), then the sockets registered with `sampler`. Returns when every half
/// is done (the duration is over, the bytes are sent or received, the timeout or `stop`),
/// each flow's end in the order of `halves`.
#[allow(clippy::too_many_arguments)]
pub(crate) fn run_halves(
    spec: &BulkSpec,
    halves: Vec<Half<'_>>,
    clock: &EndClock,
    stop: &AtomicBool,
    series: &dyn SeriesSink,
    hook: &dyn MeasureHook,
    budget: Option<&ByteBudget>,
    sampler: &Sampler<'_>,
    mut on_round: impl FnMut(u64),
) -> Vec<FlowEnd> {
    let (epoch, start) = (clock.epoch, clock.start);
    let last_start = halves.iter().map(|h| h.start_s).fold(0.0, f64::max);
    let deadline = match spec.amount {
        Amount::Seconds(s) => start + Duration::from_secs_f64(s),
        Amount::Bytes(_) => start + Duration::from_secs_f64(spec.timeout_s + last_start),
    };
    let counters: Vec<(u32, AtomicU64)> = halves.iter().filter(|h| matches!(h.io, Io::Receives(_))).map(|h| (h.id, AtomicU64::new(0))).collect();
    let active = AtomicUsize::new(halves.len());
    let interval = Duration::from_micros(spec.sample_interval_us.max(1000));
    std::thread::scope(|s| {
        let mut handles = Vec::new();
        let mut counter = counters.iter();
        for half in halves {
            let active = &active;
            let flow_start = start + Duration::from_secs_f64(half.start_s);
            let deadline = match spec.amount {
                Amount::Seconds(_) => deadline,
                Amount::Bytes(_) => flow_start + Duration::from_secs_f64(spec.timeout_s),
            };
            let id = half.id;
            let counter = matches!(half.io, Io::Receives(_)).then(|| &counter.next().expect("a counter per receiving half").1);
            let handle = s.spawn(move || {
                let mut end = FlowEnd { id, ..FlowEnd::default() };
                match half.io {
                    Io::Sends(mut io) => {
                        end.sent = true;
                        sleep_until(flow_start, stop);
                        end.send_error = send_loop(io.as_mut(), spec.amount, deadline, stop, budget).err();
                    }
                    Io::Receives(mut io) => {
                        let window = FlowWindow::new(clock, spec.amount, half.start_s, spec.timeout_s, deadline);
                        let counter = counter.expect("a receiving half has its counter");
                        let got = receive_loop(io.as_mut(), window, counter, stop, budget);
                        (end.bytes_received, end.completion_s, end.receive_error) = (got.bytes, got.completion_s, got.error);
                    }
                }
                active.fetch_sub(1, Ordering::SeqCst);
                end
            });
            handles.push((id, handle));
        }
        // Sample on this thread until every half is done.
        sampler.run(
            epoch,
            start,
            interval,
            || active.load(Ordering::SeqCst) > 0,
            |t_us| {
                // Flows still at work: the span reaches at least this far.
                hook.extend(Instant::now());
                for (id, counter) in &counters {
                    series.received(*id, &GoodputPoint { t_us, bytes: counter.load(Ordering::Relaxed) });
                }
                on_round(t_us);
            },
        );
        handles
            .into_iter()
            .map(|(id, h)| {
                h.join().unwrap_or_else(|_| FlowEnd {
                    id,
                    send_error: Some("thread panicked".into()),
                    receive_error: Some("thread panicked".into()),
                    ..FlowEnd::default()
                })
            })
            .collect()
    })
}
