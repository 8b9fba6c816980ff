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
//! The loops are written once, as futures over a half's writes and reads, each of which comes
//! back within a short tick ([`IO_TICK`]) so that the loop sees the clock and the stop flag. A
//! kernel TCP half runs on a thread of its own: its calls block (with that tick as the socket
//! timeout) and its futures are always ready. A QUIC half runs as a task on its connection's
//! runtime, beside noq's drivers. Measured with `ccbench bench transports --cc quic:cubic`
//! (unlimited rate, old and new binaries alternated): a thread per QUIC half driving its
//! stream through `Handle::block_on` made 2.26–2.39 Gbit/s where the earlier QUIC-only tasks
//! made 2.57–2.88 (load 2.8–3.3), every wake-up from noq's driver crossing threads; as tasks,
//! 2.95–3.09 against 3.00–3.20 (load 2.5–2.9), and the same CPU per Gbit/s.

use std::future::Future;
use std::pin::{pin, Pin};
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::Arc;
use std::task::{Context, Poll, Waker};
use std::time::{Duration, Instant};

use tokio::runtime::Handle;

use super::{Amount, BulkSpec, ByteBudget, EndClock, FlowEnd, FlowWindow, GoodputPoint, Knobs};
use crate::sampler::Sampler;
use crate::Spec as _;
use crate::{MeasureHook, SeriesSink};

/// How often a blocked write or read comes back to look at the clock and the stop flag.
pub(crate) const IO_TICK: Duration = Duration::from_millis(50);

/// A half's write or read in progress.
pub(crate) type Pending<'a, T> = Pin<Box<dyn Future<Output = T> + Send + 'a>>;

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
    fn write(&mut self, len: usize) -> Pending<'_, Moved>;
    /// A byte count is all written: ends the stream, keeping it until the receiver has it all,
    /// `until` passes or `stop` is set.
    fn finish<'a>(&'a mut self, until: Instant, stop: &'a AtomicBool) -> Pending<'a, ()>;
    /// The budget is spent: ends the stream now.
    fn abort(&mut self);
    /// Bytes the transport has put on the wire so far (headers and retransmissions included),
    /// where it buffers far more than the path holds and can tell: QUIC's send buffer.
    fn wire_bytes(&self) -> Option<u64> {
        None
    }
    /// Bytes written that the transport has not yet sent once (retransmissions aside), where
    /// it can tell exactly: QUIC's stream. `wire_bytes` counts headers and retransmissions, so
    /// what was written less it falls further behind the truth as a run goes on (by 4 s at
    /// 1 Mbit/s and 2 % loss, 96 KB: most of a second).
    fn unsent_bytes(&self) -> Option<u64> {
        None
    }
}

/// With `--app-rate-from` or `--app-pause`, how far an application that writes as fast as it can
/// stays ahead of what the transport has sent, so that the change takes effect then, not when a
/// send buffer of seconds drains (QUIC's; the kernel's socket buffer bounds TCP's).
const APP_LEAD: u64 = 128 * 1024;

/// How often [`WireRate`] notes what was sent, and how many notes it keeps: its rate is the mean
/// over the last second.
const RATE_NOTE: Duration = Duration::from_millis(50);
const RATE_NOTES: usize = 21;

/// How fast a transport sends the application's bytes lately, so an application about to lower
/// its rate stops writing what could not go out before the change. [`APP_LEAD`] alone is 1 s
/// at 1 Mbit/s: conform's A.20 (`--app-rate-from 4s`) saw link-rate sending until 6.4 s, and
/// judged those rounds as application-limited. The mean over a second, not the highest of
/// shorter windows: sending is bursty over 50 ms, and an estimate 30 % high left 30 KB (a
/// quarter second at 1 Mbit/s) unsent at the change. Low after a lull (PROBE_RTT's 200 ms at
/// four packets), the flow runs dry a little early, which is the lesser error.
#[derive(Default)]
struct WireRate {
    notes: std::collections::VecDeque<(Instant, u64)>,
}

impl WireRate {
    fn observe(&mut self, now: Instant, sent: u64) {
        if self.notes.back().is_none_or(|&(at, _)| now - at >= RATE_NOTE) {
            self.notes.push_back((now, sent));
            if self.notes.len() > RATE_NOTES {
                self.notes.pop_front();
            }
        }
    }

    /// Bytes the transport sends in `d` at that rate; unbounded before a note is a window old.
    fn within(&self, d: Duration) -> u64 {
        match (self.notes.front(), self.notes.back()) {
            (Some(&(t0, s0)), Some(&(t1, s1))) if t1 > t0 => ((s1 - s0) as f64 / (t1 - t0).as_secs_f64() * d.as_secs_f64()) as u64,
            _ => u64::MAX,
        }
    }
}

/// With a byte budget (`ccbench serve --max-bytes`), how far writes stay ahead of what the
/// transport has sent, where it can tell (QUIC, whose send buffer holds up to its 64 MB send
/// window): the budget is paid for bytes that go out, not for bytes parked in a buffer that the
/// test's end throws away (a 3 s QUIC test through 10 ms once charged 38 MB for 6 MB
/// delivered), and a serve holds at most this much unsent per flow. Writes nap for 0.5–1 ms
/// when ahead: 8 MB a millisecond is 64 Gbit/s, far above what one QUIC flow sends.
const BUDGET_LEAD: u64 = 8 << 20;

/// The receiving half of one flow's byte stream.
pub(crate) trait ReceiveHalf: Send {
    fn read(&mut self) -> Pending<'_, Moved>;
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
    pub(crate) start: Duration,
    pub(crate) io: Io<'a>,
}

/// Halves that run as tasks on a runtime (QUIC's, on their connections' runtime), and the
/// budget they take from.
pub(crate) struct Tasks {
    pub(crate) rt: Handle,
    pub(crate) halves: Vec<Half<'static>>,
    pub(crate) budget: Option<Arc<ByteBudget>>,
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
///
/// With `app.app_rate_bps` (`--app-rate`), the application writes no faster than that: over
/// any span at most `rate × span` plus one burst ([`app_burst`]) from when the cap began
/// (`--app-rate-from`, else the loop's start); time it could not write is not made up in a
/// burst. It naps (on the runtime's timer when
/// `on_runtime`) until the next write is due. During each of `app.app_pauses` (`--app-pause`)
/// it writes nothing; a pause banks no credit: the cap counts afresh from its end.
#[allow(clippy::too_many_arguments)]
pub(crate) async fn send_loop(
    io: &mut dyn SendHalf,
    amount: Amount,
    deadline: Instant,
    stop: &AtomicBool,
    budget: Option<&ByteBudget>,
    app: &Knobs,
    on_runtime: bool,
) -> Result<(), String> {
    let began = Instant::now();
    let secs = Duration::from_secs_f64;
    let pauses: Vec<(Instant, Instant)> = app.app_pauses.iter().map(|p| (began + secs(p.at_s), began + secs(p.at_s + p.for_s))).collect();
    let cap = app.app_rate_bps.filter(|&r| r > 0);
    // What the cap counts from, and what was written since.
    let mut cap_since = began + secs(app.app_rate_from_s.unwrap_or(0.0));
    let mut written: u64 = 0;
    let lead = if app.app_rate_from_s.is_some() || !app.app_pauses.is_empty() { Some(APP_LEAD) } else { budget.map(|_| BUDGET_LEAD) };
    // Where the application's rate falls: a cap's start, a pause's. What is written before one
    // goes out by then, so the change is seen on the wire when it is made.
    let falls: Vec<Instant> = cap.map(|_| cap_since).into_iter().chain(pauses.iter().map(|p| p.0)).collect();
    let mut wire_rate = WireRate::default();
    let mut total: u64 = 0;
    let mut remaining = match amount {
        Amount::Bytes(n) => n,
        Amount::Seconds(_) => u64::MAX,
    };
    while remaining > 0 && Instant::now() < deadline && !stop.load(Ordering::Relaxed) {
        let now = Instant::now();
        if let Some(&(_, end)) = pauses.iter().find(|(from, to)| now >= *from && now < *to) {
            nap(end.min(deadline).saturating_duration_since(now).min(IO_TICK), on_runtime).await;
            if end > cap_since {
                cap_since = end;
                written = 0;
            }
            continue;
        }
        // A budget's last write is what is left of it, so the flow stops at the budget, not a
        // write's length short of it.
        let mut len = remaining.min(io.max_write() as u64).min(budget.map_or(u64::MAX, |b| b.remaining().max(1))) as usize;
        // How far the writes are ahead of the wire: exactly, or as what was written less what went out.
        let ahead = io.unsent_bytes().or_else(|| io.wire_bytes().map(|sent| total.saturating_sub(sent)));
        if let Some((lead, ahead)) = lead.zip(ahead) {
            wire_rate.observe(now, total - ahead.min(total));
            let lead = match falls.iter().filter(|&&f| f > now).min() {
                Some(&fall) => lead.min(wire_rate.within(fall - now)),
                None => lead,
            };
            if ahead >= lead {
                nap(Duration::from_micros(500), on_runtime).await;
                continue;
            }
            len = len.min((lead - ahead) as usize);
        }
        let capped = cap.filter(|_| now >= cap_since);
        if let Some(bps) = capped {
            let burst = app_burst(bps, io.max_write());
            let allowed = ((now - cap_since).as_secs_f64() * bps as f64 / 8.0) as u64 + burst;
            // Credit banks no deeper than one burst: after a stall (the writer or its host
            // held up) the application resumes at its rate, not with what it missed at once.
            // At 100 Mbit/s × 1 ms a 4 ms stall at a 25 Mbit/s cap sent 17 KB into a 6 KB
            // buffer (conform A.20, then its app-limited scenario), which a sender limited by its application does not do.
            written = written.max(allowed.saturating_sub(burst));
            if written >= allowed {
                let due = cap_since + secs((written + 1 - burst) as f64 * 8.0 / bps as f64);
                nap(due.saturating_duration_since(Instant::now()).clamp(Duration::from_micros(100), IO_TICK), on_runtime).await;
                continue;
            }
            len = len.min((allowed - written) as usize);
        }
        if let Some(b) = budget.filter(|b| !b.take(len as u64)) {
            // What was written is paid for: where the transport buffers it (QUIC), the receiver
            // gets it before the flow ends with the budget's reason.
            if io.wire_bytes().is_some() {
                io.finish(deadline, stop).await;
            } else {
                io.abort();
            }
            return Err(b.reason.clone());
        }
        let moved = match io.write(len).await {
            Moved::Bytes(n) => n,
            Moved::Idle | Moved::End => 0,
            // The receiver closes at the deadline; a reset after that is the normal end.
            Moved::Failed(_) if Instant::now() >= deadline => break,
            Moved::Failed(e) => return Err(e),
        };
        remaining -= moved as u64;
        total += moved as u64;
        if capped.is_some() {
            written += moved as u64;
        }
        if let Some(b) = budget {
            b.give_back((len - moved) as u64);
        }
    }
    if matches!(amount, Amount::Bytes(_)) {
        io.finish(deadline, stop).await;
    }
    // What was written but never sent goes back: the run's end discards it.
    if let Some((b, sent)) = budget.zip(io.wire_bytes()) {
        b.give_back(total.saturating_sub(sent));
    }
    Ok(())
}

/// How far an application capped at `bps` may write ahead of its rate: a millisecond of it (the
/// timer's grain), at least two full packets, at most one write. One write was the allowance
/// before, and QUIC's is 256 KB: at the 250 kbit/s conform's A.18 asks on a 1 Mbit/s path, 8 s of
/// data in one go, so STARTUP saw a bulk sender and left on a plateau it must not find.
fn app_burst(bps: u64, max_write: usize) -> u64 {
    ((bps / 8) / 1000).max(2 * 1500).min(max_write as u64)
}

async fn nap(d: Duration, on_runtime: bool) {
    if on_runtime {
        tokio::time::sleep(d).await;
    } else {
        std::thread::sleep(d);
    }
}

/// Reads until the window closes, the byte count is in, the stream ends or `stop`, keeping
/// `counter` at the bytes counted so far (the goodput points are taken from it).
pub(crate) async fn receive_loop(
    io: &mut dyn ReceiveHalf,
    mut window: FlowWindow,
    counter: &AtomicU64,
    stop: &AtomicBool,
    budget: Option<&ByteBudget>,
) -> Received {
    let mut got = Received::default();
    let mut last_byte = None;
    let target = match window.amount() {
        Amount::Bytes(n) => n,
        Amount::Seconds(_) => u64::MAX,
    };
    while Instant::now() < window.until() && !stop.load(Ordering::Relaxed) && got.bytes < target {
        match io.read().await {
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

/// What a half needs of its end besides its stream.
struct HalfEnv<'e> {
    spec: &'e BulkSpec,
    clock: &'e EndClock,
    /// The end's deadline when every flow started at the transfer's start.
    deadline: Instant,
    stop: &'e AtomicBool,
    budget: Option<&'e ByteBudget>,
    counter: &'e AtomicU64,
    /// The half is a task on a runtime (it waits on the runtime's timer, not by sleeping).
    on_runtime: bool,
}

/// Runs one half: a sender from its start offset, a receiver in its window.
async fn run_half(half: Half<'_>, env: HalfEnv<'_>) -> FlowEnd {
    let flow_start = env.clock.start + half.start;
    let deadline = match env.spec.amount {
        Amount::Seconds(_) => env.deadline,
        Amount::Bytes(_) => flow_start + env.spec.timeout(),
    };
    let mut end = FlowEnd { id: half.id, ..FlowEnd::default() };
    match half.io {
        Io::Sends(mut io) => {
            end.sent = true;
            while Instant::now() < flow_start && !env.stop.load(Ordering::Relaxed) {
                let nap = (flow_start - Instant::now()).min(IO_TICK);
                if env.on_runtime {
                    tokio::time::sleep(nap).await;
                } else {
                    std::thread::sleep(nap);
                }
            }
            end.send_error = send_loop(io.as_mut(), env.spec.amount, deadline, env.stop, env.budget, &env.spec.knobs, env.on_runtime).await.err();
        }
        Io::Receives(mut io) => {
            let window = FlowWindow::new(env.clock, env.spec.amount, half.start, env.spec.timeout(), deadline);
            let got = receive_loop(io.as_mut(), window, env.counter, env.stop, env.budget).await;
            (end.bytes_received, end.completion_s, end.receive_error) = (got.bytes, got.completion_s, got.error);
        }
    }
    end
}

/// Drives a thread half's future: its calls block, so it is ready at every poll.
fn drive<F: Future>(f: F) -> F::Output {
    let mut f = pin!(f);
    let mut cx = Context::from_waker(Waker::noop());
    loop {
        if let Poll::Ready(v) = f.as_mut().poll(&mut cx) {
            return v;
        }
        std::thread::yield_now();
    }
}

/// Counts a half out when it ends, even by a panic, so the sampling rounds never outlive it.
struct Done(Arc<AtomicUsize>);

impl Drop for Done {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::SeqCst);
    }
}

fn panicked(id: u32, sent: bool) -> FlowEnd {
    let why = Some("thread panicked".to_string());
    FlowEnd { id, sent, send_error: why.clone(), receive_error: why, ..FlowEnd::default() }
}

/// Runs one end of a bulk transfer (or, locally, both) on its flows' halves: `threads` each
/// on a thread of its own, `tasks` on their runtime; each sending half sends from its start
/// offset, each receiving half is read, and every round of `sampler` takes the receivers'
/// goodput points, then `on_round(t_us)` (the transport's own sampling, e.g. QUIC's
/// observer), then the sockets registered with `sampler`. Returns when every half is done
/// (the duration is over, the bytes are sent or received, the timeout or `stop`), each flow's
/// end: the threads' in their order, then the tasks'.
#[allow(clippy::too_many_arguments)]
pub(crate) fn run_halves(
    spec: &BulkSpec,
    threads: Vec<Half<'_>>,
    tasks: Option<Tasks>,
    clock: &EndClock,
    stop: &AtomicBool,
    series: &dyn SeriesSink,
    hook: &dyn MeasureHook,
    budget: Option<&ByteBudget>,
    sampler: &Sampler<'_>,
    mut on_round: impl FnMut(u64),
) -> Vec<FlowEnd> {
    let (epoch, start) = (clock.epoch, clock.start);
    let task_halves = tasks.as_ref().map_or(&[][..], |t| &t.halves[..]);
    let last_start = threads.iter().chain(task_halves).map(|h| h.start).max().unwrap_or_default();
    let deadline = match spec.amount {
        Amount::Seconds(s) => start + Duration::from_secs_f64(s),
        Amount::Bytes(_) => start + spec.timeout() + last_start,
    };
    let counter_of = |h: &Half<'_>| matches!(h.io, Io::Receives(_)).then(|| (h.id, Arc::new(AtomicU64::new(0))));
    let thread_counters: Vec<Option<(u32, Arc<AtomicU64>)>> = threads.iter().map(counter_of).collect();
    let task_counters: Vec<Option<(u32, Arc<AtomicU64>)>> = task_halves.iter().map(counter_of).collect();
    let counters: Vec<(u32, Arc<AtomicU64>)> = thread_counters.iter().chain(&task_counters).flatten().cloned().collect();
    let active = Arc::new(AtomicUsize::new(threads.len() + task_halves.len()));
    // Tasks must own what they see: the stop flag reaches them through a copy set from here.
    let stopping = Arc::new(AtomicBool::new(false));
    let interval = Duration::from_micros(spec.sample_interval_us.max(1000));
    let unused = AtomicU64::new(0);

    let mut spawned = Vec::new();
    if let Some(Tasks { rt, halves, budget: task_budget }) = tasks {
        for (half, counter) in halves.into_iter().zip(task_counters) {
            let (id, sent) = (half.id, matches!(half.io, Io::Sends(_)));
            let (spec, clock, stopping, budget, done) = (spec.clone(), clock.clone(), stopping.clone(), task_budget.clone(), Done(active.clone()));
            let counter = counter.map(|c| c.1);
            let task = rt.spawn(async move {
                let _done = done;
                let unused = AtomicU64::new(0);
                let counter = counter.as_deref().unwrap_or(&unused);
                let env = HalfEnv { spec: &spec, clock: &clock, deadline, stop: &stopping, budget: budget.as_deref(), counter, on_runtime: true };
                run_half(half, env).await
            });
            spawned.push((id, sent, task, rt.clone()));
        }
    }
    let mut ends: Vec<FlowEnd> = std::thread::scope(|s| {
        let mut handles = Vec::new();
        for (half, counter) in threads.into_iter().zip(&thread_counters) {
            let (id, sent) = (half.id, matches!(half.io, Io::Sends(_)));
            let done = Done(active.clone());
            let counter = counter.as_ref().map_or(&unused, |c| &*c.1);
            let env = HalfEnv { spec, clock, deadline, stop, budget, counter, on_runtime: false };
            let handle = s.spawn(move || {
                let _done = done;
                drive(run_half(half, env))
            });
            handles.push((id, sent, handle));
        }
        // Sample on this thread until every half is done.
        sampler.run(
            epoch,
            start,
            interval,
            || {
                if stop.load(Ordering::Relaxed) {
                    stopping.store(true, Ordering::Relaxed);
                }
                active.load(Ordering::SeqCst) > 0
            },
            |t_us| {
                // Flows still at work: the span reaches at least this far.
                hook.extend(Instant::now());
                for (id, counter) in &counters {
                    series.received(*id, &GoodputPoint { t_us, bytes: counter.load(Ordering::Relaxed) });
                }
                on_round(t_us);
            },
        );
        handles.into_iter().map(|(id, sent, h)| h.join().unwrap_or_else(|_| panicked(id, sent))).collect()
    });
    stopping.store(true, Ordering::Relaxed);
    for (id, sent, task, rt) in spawned {
        ends.push(rt.block_on(task).unwrap_or_else(|_| panicked(id, sent)));
    }
    ends
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A sending half that takes at most `per_write` bytes a call and counts them.
    struct Sink {
        per_write: usize,
        taken: u64,
        finished: bool,
        aborted: bool,
    }

    impl SendHalf for Sink {
        fn max_write(&self) -> usize {
            16 * 1024
        }
        fn write(&mut self, len: usize) -> Pending<'_, Moved> {
            let n = len.min(self.per_write);
            self.taken += n as u64;
            Box::pin(std::future::ready(Moved::Bytes(n)))
        }
        fn finish<'a>(&'a mut self, _: Instant, _: &'a AtomicBool) -> Pending<'a, ()> {
            self.finished = true;
            Box::pin(std::future::ready(()))
        }
        fn abort(&mut self) {
            self.aborted = true;
        }
    }

    fn sink(per_write: usize) -> Sink {
        Sink { per_write, taken: 0, finished: false, aborted: false }
    }

    /// `--app-rate`: the application writes no faster than its rate, whatever the socket takes.
    #[test]
    fn an_app_rate_caps_what_is_written() {
        let mut s = sink(usize::MAX);
        let stop = AtomicBool::new(false);
        let began = Instant::now();
        let rate = 8_000_000; // 1 MB/s
        assert_eq!(drive(send_loop(&mut s, Amount::Seconds(0.5), began + Duration::from_millis(500), &stop, None, &capped(rate), false)), Ok(()));
        let secs = began.elapsed().as_secs_f64();
        // 0.5 s at 1 MB/s, plus the one write allowed ahead.
        let most = secs * 1e6 + 16.0 * 1024.0;
        assert!(s.taken as f64 <= most && s.taken as f64 >= 0.8 * 0.5e6, "wrote {} bytes in {secs:.3} s", s.taken);
    }

    /// A sending half that takes every write whole but stalls once, `stall` long, at its
    /// `stall_at`-th write, and counts what is written in the `window` after the stall.
    struct Stalling {
        writes: u32,
        stall_at: u32,
        stall: Duration,
        after: Option<Instant>,
        window: Duration,
        in_window: u64,
    }

    impl SendHalf for Stalling {
        fn max_write(&self) -> usize {
            16 * 1024
        }
        fn write(&mut self, len: usize) -> Pending<'_, Moved> {
            self.writes += 1;
            if self.writes == self.stall_at {
                std::thread::sleep(self.stall);
                self.after = Some(Instant::now());
            } else if self.after.is_some_and(|t| t.elapsed() < self.window) {
                self.in_window += len as u64;
            }
            Box::pin(std::future::ready(Moved::Bytes(len)))
        }
        fn finish<'a>(&'a mut self, _: Instant, _: &'a AtomicBool) -> Pending<'a, ()> {
            Box::pin(std::future::ready(()))
        }
        fn abort(&mut self) {}
    }

    /// A 50 ms stall at a 1 MB/s cap: in the 10 ms after it the application writes at its rate
    /// plus one burst (3 KB), not the 50 KB it missed.
    #[test]
    fn an_app_rate_does_not_make_up_a_stall_in_a_burst() {
        let stop = AtomicBool::new(false);
        let began = Instant::now();
        let mut s = Stalling { writes: 0, stall_at: 20, stall: ms(50), after: None, window: ms(10), in_window: 0 };
        assert_eq!(drive(send_loop(&mut s, Amount::Seconds(0.3), began + ms(300), &stop, None, &capped(8_000_000), false)), Ok(()));
        assert!(s.after.is_some(), "the stall happened");
        let most = 3000.0 + 0.010 * 1e6 + 1500.0;
        assert!((s.in_window as f64) <= most, "{} bytes in the 10 ms after a 50 ms stall", s.in_window);
    }

    fn capped(bps: u64) -> Knobs {
        Knobs { app_rate_bps: Some(bps), ..Knobs::default() }
    }

    /// A sending half that takes every write whole and counts the bytes written in each of
    /// `windows` (times since it was made).
    struct Clocked {
        began: Instant,
        windows: Vec<(Duration, Duration, u64)>,
    }

    impl SendHalf for Clocked {
        fn max_write(&self) -> usize {
            16 * 1024
        }
        fn write(&mut self, len: usize) -> Pending<'_, Moved> {
            let t = self.began.elapsed();
            for w in self.windows.iter_mut().filter(|w| t >= w.0 && t < w.1) {
                w.2 += len as u64;
            }
            Box::pin(std::future::ready(Moved::Bytes(len)))
        }
        fn finish<'a>(&'a mut self, _: Instant, _: &'a AtomicBool) -> Pending<'a, ()> {
            Box::pin(std::future::ready(()))
        }
        fn abort(&mut self) {}
    }

    fn ms(m: u64) -> Duration {
        Duration::from_millis(m)
    }

    /// `--app-pause 100ms:200ms`: nothing is written during the pause, and writing resumes.
    #[test]
    fn an_app_pause_writes_nothing_then_resumes() {
        let stop = AtomicBool::new(false);
        let began = Instant::now();
        // The loop's own clock starts a little after `began`: 5 ms of slack at the pause's start.
        let mut s = Clocked { began, windows: vec![(ms(0), ms(100), 0), (ms(105), ms(300), 0), (ms(305), ms(400), 0)] };
        let knobs = Knobs { app_pauses: vec![crate::AppPause { at_s: 0.1, for_s: 0.2 }], ..Knobs::default() };
        assert_eq!(drive(send_loop(&mut s, Amount::Seconds(0.4), began + ms(400), &stop, None, &knobs, false)), Ok(()));
        let [before, during, after] = [s.windows[0].2, s.windows[1].2, s.windows[2].2];
        assert!(before > 0 && during == 0 && after > 0, "before {before}, during {during}, after {after} bytes");
    }

    /// `--app-rate 8mbit --app-rate-from 200ms`: as fast as the socket takes, then 1 MB/s.
    #[test]
    fn an_app_rate_from_a_time_caps_only_after_it() {
        let stop = AtomicBool::new(false);
        let began = Instant::now();
        // The loop's own clock starts a little after `began`: 5 ms of slack at the cap's start.
        let mut s = Clocked { began, windows: vec![(ms(0), ms(200), 0), (ms(205), ms(500), 0)] };
        let knobs = Knobs { app_rate_from_s: Some(0.2), ..capped(8_000_000) };
        assert_eq!(drive(send_loop(&mut s, Amount::Seconds(0.5), began + ms(500), &stop, None, &knobs, false)), Ok(()));
        let (before, after) = (s.windows[0].2, s.windows[1].2);
        // 0.3 s at 1 MB/s, plus the one write allowed ahead.
        let most = 0.3e6 + 16.0 * 1024.0;
        assert!(after as f64 <= most && after > 0, "{after} bytes after the cap began");
        assert!(before as f64 > 2.0 * most, "uncapped before it: {before} bytes");
    }

    #[test]
    fn a_budget_stops_the_sender_at_its_last_byte_and_partial_writes_give_the_rest_back() {
        let stop = AtomicBool::new(false);
        let far = Instant::now() + Duration::from_secs(30);
        // Writes of 5000 bytes out of each 16 KiB asked: what a write did not take goes back.
        let budget = ByteBudget::new(100_001, "the budget".into());
        let mut s = sink(5000);
        assert_eq!(drive(send_loop(&mut s, Amount::Seconds(30.0), far, &stop, Some(&budget), &Knobs::default(), false)), Err("the budget".into()));
        assert_eq!(s.taken, 100_001, "the flow stops at the budget, not a write short of it");
        assert!(s.aborted && !s.finished);
        assert_eq!(budget.remaining(), 0);
    }

    /// A transport with a deep send buffer that reports what it has sent (QUIC): it takes every
    /// write whole and sends `per_write_sent` bytes of its buffer each time it is written to.
    struct Buffered {
        written: u64,
        sent: u64,
        per_write_sent: u64,
        most_ahead: u64,
        finished: bool,
        aborted: bool,
    }

    impl SendHalf for Buffered {
        fn max_write(&self) -> usize {
            256 * 1024
        }
        fn write(&mut self, len: usize) -> Pending<'_, Moved> {
            self.written += len as u64;
            self.most_ahead = self.most_ahead.max(self.written - self.sent);
            self.sent = self.sent.saturating_add(self.per_write_sent).min(self.written);
            Box::pin(std::future::ready(Moved::Bytes(len)))
        }
        fn finish<'a>(&'a mut self, _: Instant, _: &'a AtomicBool) -> Pending<'a, ()> {
            // Keeps the stream until the receiver has it all.
            self.finished = true;
            self.sent = self.written;
            Box::pin(std::future::ready(()))
        }
        fn abort(&mut self) {
            self.aborted = true;
        }
        fn wire_bytes(&self) -> Option<u64> {
            Some(self.sent)
        }
    }

    fn buffered(per_write_sent: u64) -> Buffered {
        Buffered { written: 0, sent: 0, per_write_sent, most_ahead: 0, finished: false, aborted: false }
    }

    /// serve's budget over a buffering transport pays for what goes out: writes stay within
    /// [`BUDGET_LEAD`] of the wire, and what the run's end leaves unsent goes back.
    #[test]
    fn a_budget_over_a_buffering_transport_pays_for_what_is_sent() {
        let stop = AtomicBool::new(false);
        let budget = ByteBudget::new(1 << 40, "the budget".into());
        let mut s = buffered(64 * 1024);
        assert_eq!(drive(send_loop(&mut s, Amount::Seconds(0.2), Instant::now() + ms(200), &stop, Some(&budget), &Knobs::default(), false)), Ok(()));
        assert!(s.most_ahead <= BUDGET_LEAD + 256 * 1024, "{} bytes written ahead of the wire", s.most_ahead);
        assert!(s.written > s.sent && s.sent > 0, "written {}, sent {}", s.written, s.sent);
        assert_eq!((1 << 40) - budget.remaining(), s.sent, "charged what was sent, not the {} written", s.written);
        // Without a budget, nothing holds the writes back (the transport's own window does).
        let mut free = buffered(64 * 1024);
        drive(send_loop(&mut free, Amount::Seconds(0.05), Instant::now() + ms(50), &stop, None, &Knobs::default(), false)).unwrap();
        assert!(free.most_ahead > 2 * BUDGET_LEAD, "{} ahead without a budget", free.most_ahead);
    }

    /// A transport with a deep send buffer that sends at `rate` bytes/s of real time (QUIC on a
    /// slow path).
    struct Paced {
        began: Instant,
        rate: f64,
        written: u64,
        change: Duration,
        /// Bytes buffered unsent, and bytes sent, at the first write at or after `change`.
        at_change: Option<(u64, u64)>,
    }

    impl Paced {
        fn sent(&self) -> u64 {
            ((self.began.elapsed().as_secs_f64() * self.rate) as u64).min(self.written)
        }
    }

    impl SendHalf for Paced {
        fn max_write(&self) -> usize {
            256 * 1024
        }
        fn write(&mut self, len: usize) -> Pending<'_, Moved> {
            if self.at_change.is_none() && self.began.elapsed() >= self.change {
                self.at_change = Some((self.written - self.sent(), self.sent()));
            }
            self.written += len as u64;
            Box::pin(std::future::ready(Moved::Bytes(len)))
        }
        fn finish<'a>(&'a mut self, _: Instant, _: &'a AtomicBool) -> Pending<'a, ()> {
            Box::pin(std::future::ready(()))
        }
        fn abort(&mut self) {}
        fn wire_bytes(&self) -> Option<u64> {
            Some(self.sent())
        }
    }

    /// `--app-rate-from` and `--app-pause` over a transport that buffers seconds of a slow
    /// path: what was written before the change has gone out by then, so
    /// the wire shows the change when it is made, and the flow was not starved before it.
    #[test]
    fn a_fall_in_the_app_rate_is_on_the_wire_when_it_is_made() {
        let stop = AtomicBool::new(false);
        // 8 Mbit/s: APP_LEAD alone is 131 ms of it (1 s at 1 Mbit/s). The first writes, before
        // the rate is known, fill APP_LEAD; what the loop keeps ahead shrinks as the change nears.
        let rate = 1e6;
        for knobs in [
            Knobs { app_rate_from_s: Some(0.4), ..capped(2_000_000) },
            Knobs { app_pauses: vec![crate::AppPause { at_s: 0.4, for_s: 0.1 }], ..Knobs::default() },
        ] {
            let began = Instant::now();
            let mut s = Paced { began, rate, written: 0, change: ms(400), at_change: None };
            assert_eq!(drive(send_loop(&mut s, Amount::Seconds(0.6), began + ms(600), &stop, None, &knobs, false)), Ok(()));
            let (unsent, sent) = s.at_change.expect("a write after the change");
            // The loop's clock starts a little after `began`, and it naps up to a millisecond.
            assert!(unsent as f64 <= 0.01 * rate, "{unsent} bytes still unsent at the change ({knobs:?})");
            // The transport was kept busy until shortly before: it sent ≥ 0.35 s of its rate.
            assert!(sent as f64 >= 0.35 * rate, "only {sent} bytes sent by the change ({knobs:?})");
        }
    }

    /// A slow cap over a transport with large writes (QUIC's 256 KB): the application runs ahead
    /// of its rate by a millisecond's worth or two packets, not by a whole write.
    #[test]
    fn a_slow_app_rate_is_not_one_large_write_ahead() {
        let stop = AtomicBool::new(false);
        let mut s = buffered(u64::MAX);
        let began = Instant::now();
        let rate = 250_000; // conform A.18's app rate on a 1 Mbit/s path
        drive(send_loop(&mut s, Amount::Seconds(0.2), began + ms(200), &stop, None, &capped(rate), false)).unwrap();
        let secs = began.elapsed().as_secs_f64();
        let most = secs * rate as f64 / 8.0 + 3000.0;
        assert!((s.written as f64) <= most && s.written > 0, "wrote {} bytes in {secs:.3} s at 250 kbit/s (at most {most:.0})", s.written);
    }

    /// A budget spent over a buffering transport: the stream is finished, not cut, so the
    /// receiver gets every byte paid for.
    #[test]
    fn a_spent_budget_over_a_buffering_transport_delivers_what_it_paid_for() {
        let stop = AtomicBool::new(false);
        let budget = ByteBudget::new(3_000_000, "the budget".into());
        let mut s = buffered(64 * 1024);
        let far = Instant::now() + Duration::from_secs(30);
        assert_eq!(drive(send_loop(&mut s, Amount::Seconds(30.0), far, &stop, Some(&budget), &Knobs::default(), false)), Err("the budget".into()));
        assert!(s.finished && !s.aborted);
        assert_eq!((s.written, s.sent, budget.remaining()), (3_000_000, 3_000_000, 0));
    }

    #[test]
    fn a_byte_count_is_sent_exactly_and_then_finished() {
        let stop = AtomicBool::new(false);
        let mut s = sink(usize::MAX);
        assert_eq!(drive(send_loop(&mut s, Amount::Bytes(1_000_000), Instant::now() + Duration::from_secs(30), &stop, None, &Knobs::default(), false)), Ok(()));
        assert_eq!(s.taken, 1_000_000);
        assert!(s.finished && !s.aborted);
    }

    /// A receiving half that hands over `chunks` once each, then idles; its stream "never
    /// came" when it has no chunks at all.
    struct Source {
        chunks: Vec<usize>,
        came: bool,
    }

    impl ReceiveHalf for Source {
        fn read(&mut self) -> Pending<'_, Moved> {
            let moved = match self.chunks.pop() {
                Some(n) => Moved::Bytes(n),
                None => {
                    std::thread::sleep(Duration::from_millis(5));
                    Moved::Idle
                }
            };
            Box::pin(std::future::ready(moved))
        }
        fn abort(&mut self) {}
        fn missing(&self) -> Option<String> {
            (!self.came).then(|| "its stream never arrived".into())
        }
    }

    #[test]
    fn a_byte_count_completes_when_its_last_byte_arrives() {
        let t0 = Instant::now();
        let clock = EndClock::shared(t0, t0);
        let window = FlowWindow::new(&clock, Amount::Bytes(3000), Duration::ZERO, Duration::from_secs(30), t0 + Duration::from_secs(30));
        let counter = AtomicU64::new(0);
        let got = drive(receive_loop(&mut Source { chunks: vec![1000; 3], came: true }, window, &counter, &AtomicBool::new(false), None));
        assert_eq!((got.bytes, counter.load(Ordering::Relaxed), got.error), (3000, 3000, None));
        assert!(got.completion_s.is_some());
    }

    #[test]
    fn a_stream_that_never_came_says_so_when_the_window_closes() {
        let t0 = Instant::now();
        let clock = EndClock::shared(t0, t0);
        let window = FlowWindow::new(&clock, Amount::Seconds(0.05), Duration::ZERO, Duration::from_secs(30), t0 + Duration::from_millis(50));
        let got = drive(receive_loop(&mut Source { chunks: Vec::new(), came: false }, window, &AtomicU64::new(0), &AtomicBool::new(false), None));
        assert_eq!((got.bytes, got.error.as_deref()), (0, Some("its stream never arrived")));
    }

    #[test]
    fn a_receiver_over_the_budget_stops_with_its_reason() {
        let t0 = Instant::now();
        let clock = EndClock::shared(t0, t0);
        let window = FlowWindow::new(&clock, Amount::Seconds(30.0), Duration::ZERO, Duration::from_secs(30), t0 + Duration::from_secs(30));
        let budget = ByteBudget::new(2500, "the budget".into());
        let got = drive(receive_loop(&mut Source { chunks: vec![1000; 3], came: true }, window, &AtomicU64::new(0), &AtomicBool::new(false), Some(&budget)));
        assert_eq!((got.bytes, got.error.as_deref()), (2000, Some("the budget")));
    }
}
