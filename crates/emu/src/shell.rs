//! One direction of the path as a pure state machine, after quinn-proto's split between
//! protocol and I/O: the caller reads bytes from a device and hands them to
//! [`Shell::handle_read`], writes whatever [`Shell::poll_transmit`] returns, and sleeps until
//! [`Shell::poll_timeout`]. The shell owns the link model, the buffer pool, segmenting of
//! superframes, coalescing of departures, lateness, the time series and the measurement
//! window; it owns no device, thread or clock, so it runs on a virtual clock in tests.
//!
//! No input can make it panic: bytes it cannot parse or carry are dropped and counted as
//! `malformed`.

use ccbench_link::time::{Duration, Instant};
use ccbench_link::{DelayHistogram, DirectionConfig, Link};

use crate::gso::{self, Coalescer, Superframe, VnetHdr, VNET_HDR_LEN};
use crate::report::{DelaySummary, DirectionReport, LinkSample};
use crate::sampling::{SampleSink, SeriesRecorder};
use crate::window::{MeasureWindow, WindowAccount};

/// Longest sleep without looking at the stop flag.
pub const MAX_SLEEP: Duration = Duration::from_millis(20);
/// Largest read the shell accepts: a 64 KB superframe plus the vnet header.
pub const MAX_READ: usize = VNET_HDR_LEN + 65_536 + 64;

/// What defines one direction's shell.
#[derive(Clone, Debug)]
pub struct ShellConfig {
    pub name: &'static str,
    pub config: DirectionConfig,
    pub seed: u64,
    pub mtu: u32,
    /// Packets carry a virtio-net header (the devices were opened with offloads).
    pub offload: bool,
    /// The output device takes UDP GSO frames too (`Tun::udp_offload`): datagrams of one flow
    /// that leave together are written as one, which the receiving socket reads as a GRO batch.
    pub udp_offload: bool,
    pub sample_interval: Duration,
    /// After a wake-up, sleep at least this long before the next one (see `PathSpec::batch_us`).
    pub min_wake_gap: Duration,
}

pub struct Shell {
    cfg: ShellConfig,
    hdr: usize,
    buf_len: usize,
    link: Link<Box<[u8]>>,
    /// The AQM queues flows apart (FQ-CoDel): each packet's 5-tuple is hashed on the way in.
    per_flow: bool,
    /// TCP superframes cross whole ([`crosses_whole`]): each segment still enters the model,
    /// but as an empty marker, and the superframe's own bytes ride on its last segment.
    whole: bool,
    pool: Vec<Box<[u8]>>,
    coalescer: Coalescer,
    /// A departure that did not fit the coalescer; it starts the next superframe.
    held: Option<(Box<[u8]>, usize)>,
    /// The buffer last handed out by `poll_transmit` without the coalescer; back to the pool
    /// on the next call.
    lent: Option<Box<[u8]>>,
    series: SeriesRecorder,
    /// Samples kept in memory when no sink streams them.
    samples: Option<SharedSamples>,
    window: WindowAccount,
    lateness: DelayHistogram,
    started: Instant,
    last_now: Instant,
    /// When the last departure left: the batching gap counts from here, so a wake-up for a
    /// read does not push back a departure that is due.
    last_departure: Instant,
    last_busy: Duration,
    superframes: u64,
    segments: u64,
    malformed: u64,
    writes: u64,
    read_errors: u64,
    write_errors: u64,
    first_error: Option<String>,
    /// Per-flow access links behind the bottleneck ([`crate::access`]).
    access: Vec<crate::access::AccessDelay>,
    access_line: crate::access::AccessLine<(Box<[u8]>, usize)>,
}

/// The in-memory sink of [`Shell::new`]: shared so that `finish` can take the samples back.
type SharedSamples = std::sync::Arc<std::sync::Mutex<Vec<LinkSample>>>;

struct SharedSink(SharedSamples);

impl SampleSink for SharedSink {
    fn push(&mut self, s: &LinkSample) {
        if let Ok(mut v) = self.0.lock() {
            v.push(s.clone());
        }
    }
}

impl Shell {
    /// A shell started at `now` that keeps its samples in memory (returned in the report).
    pub fn new(cfg: ShellConfig, now: Instant, window: MeasureWindow) -> Self {
        let samples: SharedSamples = Default::default();
        let mut shell = Self::streaming(cfg, now, window, Box::new(SharedSink(samples.clone())));
        shell.samples = Some(samples);
        shell
    }

    /// A shell started at `now` that hands every sample to `sink` and keeps none.
    pub fn streaming(cfg: ShellConfig, now: Instant, window: MeasureWindow, sink: Box<dyn SampleSink>) -> Self {
        // Link buffers hold one MTU-sized packet (plus the vnet header when offloading).
        let hdr = if cfg.offload { VNET_HDR_LEN } else { 0 };
        let buf_len = hdr + (cfg.mtu as usize).max(1500) + 64;
        Shell {
            hdr,
            buf_len,
            whole: crosses_whole(&cfg),
            link: Link::new(cfg.config.clone(), cfg.seed),
            per_flow: cfg.config.aqm.per_flow(),
            // Grows to the most packets ever held at once, then recycles: no allocation in
            // steady state, and a short-lived shell (a test, a fuzz input) costs nothing.
            pool: Vec::new(),
            coalescer: Coalescer::with_udp(cfg.offload && cfg.udp_offload),
            held: None,
            lent: None,
            series: SeriesRecorder::new(cfg.sample_interval, now, sink),
            samples: None,
            window: WindowAccount::new(window),
            lateness: DelayHistogram::default(),
            started: now,
            last_now: now,
            last_departure: now,
            last_busy: Duration::ZERO,
            superframes: 0,
            segments: 0,
            malformed: 0,
            writes: 0,
            read_errors: 0,
            write_errors: 0,
            first_error: None,
            access: Vec::new(),
            access_line: Default::default(),
            cfg,
        }
    }

    /// Gives the flows in `access` their own delay behind the bottleneck.
    pub fn with_access(mut self, access: Vec<crate::access::AccessDelay>) -> Self {
        self.whole &= access.is_empty();
        self.access = access;
        self
    }

    /// Cuts every superframe even where it could cross whole: the slower path
    /// [`crosses_whole`] skips, kept so tests can hold the two side by side.
    #[doc(hidden)]
    pub fn cutting_superframes(mut self) -> Self {
        self.whole = false;
        self
    }

    fn buffer(&mut self) -> Box<[u8]> {
        self.pool.pop().unwrap_or_else(|| vec![0u8; self.buf_len].into_boxed_slice())
    }

    /// Takes a buffer back: one of the pool's size returns to it; a whole superframe's own
    /// allocation or a marker is let go.
    fn recycle(&mut self, buf: Box<[u8]>) {
        if buf.len() == self.buf_len {
            self.pool.push(buf);
        }
    }

    /// Offers one packet (`len` bytes of `buf`, vnet header included) to the link.
    fn offer(&mut self, now: Instant, buf: Box<[u8]>, len: usize) {
        let flow = if self.per_flow { ccbench_link::flow::flow_of(&buf[self.hdr..len]) } else { 0 };
        let ecn = ccbench_link::wire::ecn(&buf[self.hdr..len]);
        self.offer_as(now, (len - self.hdr) as u32, flow, ecn, buf);
    }

    /// Offers `buf` to the link as a packet of `wire` bytes of `flow` carrying `ecn`.
    fn offer_as(&mut self, now: Instant, wire: u32, flow: u64, ecn: ccbench_link::Ecn, buf: Box<[u8]>) {
        let result = self.link.enqueue_ecn(now, wire, flow, ecn, buf);
        // The window meters the entry as the link did, with the link's rate in force.
        self.window.arrival(now, wire, self.link.back_to_back_under(wire));
        if let Err(dropped) = result {
            self.window.drop(dropped.arrived_at, dropped.cause, wire);
            self.recycle(dropped.packet);
        }
    }

    /// Offers a TCP superframe's segments to the link as they are, without cutting them: each
    /// enters as an empty marker of its own wire length, in order, and the last carries a copy
    /// of the whole superframe. Only where [`crosses_whole`] holds, so none is dropped or
    /// marked and all leave together, at the instant each would have left cut.
    fn offer_whole(&mut self, now: Instant, frame: &Superframe, bytes: &[u8]) {
        let ecn = ccbench_link::wire::ecn(&bytes[self.hdr..]);
        let last = frame.count() - 1;
        for i in 0..last {
            self.offer_as(now, frame.wire_len(i) as u32, 0, ecn, Box::default());
        }
        self.offer_as(now, frame.wire_len(last) as u32, 0, ecn, bytes.into());
    }

    /// Takes one packet (or superframe) read from the input device at `now`.
    pub fn handle_read(&mut self, now: Instant, bytes: &[u8]) {
        self.last_now = self.last_now.max(now);
        let now = self.last_now;
        // A packet needs its vnet header (when offloading) and at least one IP byte.
        if bytes.len() <= self.hdr || bytes.len() > MAX_READ {
            self.malformed += 1;
            return;
        }
        let vnet = if self.hdr > 0 { VnetHdr::parse(bytes) } else { None };
        // A superframe's packets all enter the link at `now`, in order: the kernel sent them
        // at once, and the link serializes them one by one from there, as it would have.
        match vnet.and_then(|vh| Superframe::of(&vh, &bytes[self.hdr..])) {
            Some(superframe) => {
                self.superframes += 1;
                match superframe {
                    Ok(seg @ Superframe::Tcp(_)) if self.whole => {
                        self.segments += seg.count() as u64;
                        self.offer_whole(now, &seg, bytes);
                    }
                    Ok(seg) => {
                        self.segments += seg.count() as u64;
                        for i in 0..seg.count() {
                            let mut buf = self.buffer();
                            match seg.write(i, &mut buf) {
                                Ok(len) => self.offer(now, buf, len),
                                Err(_) => {
                                    self.malformed += 1;
                                    self.recycle(buf);
                                }
                            }
                        }
                    }
                    Err(_) => self.malformed += 1,
                }
            }
            None if vnet.is_some_and(|vh| vh.gso_type != gso::GSO_NONE) => self.malformed += 1,
            None => {
                let mut buf = self.buffer();
                match buf.get_mut(..bytes.len()) {
                    Some(b) => {
                        b.copy_from_slice(bytes);
                        self.offer(now, buf, bytes.len());
                    }
                    None => {
                        self.malformed += 1;
                        self.pool.push(buf);
                    }
                }
            }
        }
    }

    /// The next bytes to write to the output device at `now`, or `None` when nothing more is
    /// due; then the shell has also reclaimed AQM drops, taken a sample if one is due and
    /// settled the measurement window. Call until it returns `None`.
    pub fn poll_transmit(&mut self, now: Instant) -> Option<&[u8]> {
        self.last_now = self.last_now.max(now);
        let now = self.last_now;
        if let Some(buf) = self.lent.take() {
            self.recycle(buf);
        }
        loop {
            let (buf, len) = match self.held.take() {
                Some(next) => next,
                None => match self.next_departure(now) {
                    Some(next) => next,
                    None => break,
                },
            };
            // A superframe that crossed whole leaves as it came, after what the coalescer holds.
            let whole = self.whole && is_superframe(&buf[..len]);
            // Packets due together leave together: consecutive segments of one flow go out
            // as one superframe, as a NIC's GRO would deliver them.
            if self.hdr > 0 && !whole && self.coalescer.push(&buf[..len]) {
                self.recycle(buf);
                continue;
            }
            self.writes += 1;
            if self.hdr > 0 && !self.coalescer.is_empty() {
                // It starts the next superframe, after what is held goes out.
                self.held = Some((buf, len));
                return self.coalescer.take();
            }
            // Without offloads (or a packet the coalescer cannot hold): it goes out alone.
            return Some(&self.lent.insert(buf)[..len]);
        }
        if !self.coalescer.is_empty() {
            self.writes += 1;
            return self.coalescer.take();
        }
        self.housekeeping(now);
        None
    }

    /// The next packet due at `now`: one whose access delay is over, else the next the link
    /// delivers, accounted (lateness, series, window) as it leaves the bottleneck; one with an
    /// access delay of its own waits it out first.
    fn next_departure(&mut self, now: Instant) -> Option<(Box<[u8]>, usize)> {
        if let Some(p) = self.access_line.pop_due(now) {
            self.last_departure = now;
            return Some(p);
        }
        loop {
            let d = self.link.dequeue(now)?;
            self.last_departure = now;
            // Saturating (never negative), as all time arithmetic.
            let late = now - d.delivered_at;
            let queue_delay = d.service_start - d.arrived_at;
            self.lateness.record(late);
            self.series.on_delivery(queue_delay, late);
            self.window.delivery(d.delivered_at, d.len, queue_delay, late, d.marked, d.held);
            if self.whole {
                // A marker has left (accounted above); the superframe leaves with its last.
                if d.packet.is_empty() {
                    continue;
                }
                if is_superframe(&d.packet) {
                    let len = d.packet.len();
                    return Some((d.packet, len));
                }
            }
            let len = self.hdr + d.len as usize;
            let mut packet = d.packet;
            // The codepoint it leaves with (CE when the AQM marked it), into its IP header.
            ccbench_link::wire::set_ecn(&mut packet[self.hdr..len], d.ecn);
            let d = ccbench_link::Delivery { packet, ..d };
            let extra = crate::access::extra_delay(&self.access, &d.packet[self.hdr..len]);
            if extra == Duration::ZERO {
                return Some((d.packet, len));
            }
            self.access_line.push(d.delivered_at + extra, (d.packet, len));
            if let Some(p) = self.access_line.pop_due(now) {
                return Some(p);
            }
        }
    }

    fn housekeeping(&mut self, now: Instant) {
        // CoDel drops at dequeue inside the model (FQ-CoDel also from its fattest queue when
        // another flow's packet arrives); take those buffers back. Like every drop
        // they count in the window at their packet's arrival.
        while let Some(dropped) = self.link.take_dropped() {
            self.window.drop(dropped.arrived_at, dropped.cause, dropped.len);
            self.recycle(dropped.packet);
        }
        let busy = self.link.stats().busy_ns;
        self.window.busy(now, busy - self.last_busy);
        self.last_busy = busy;
        self.series.maybe_sample(now, &self.link);
        self.window.settle(now);
    }

    /// When the caller should next call `poll_transmit`, even if nothing is read.
    pub fn poll_timeout(&self) -> Instant {
        let now = self.last_now;
        let mut wake = self.series.next_at.min(now + MAX_SLEEP);
        if let Some(t) = [self.link.next_event(), self.access_line.next_time()].into_iter().flatten().min() {
            // Departures closer together than the gap leave in one batch (and one
            // superframe), a little late, instead of one wake-up each: on a VM each timer
            // wake-up costs more than a packet's serialization at a gigabit. The gap counts
            // from the last departure, not from the last read, which would delay a packet
            // due just after an arrival by up to the whole gap.
            wake = wake.min(t.max(self.last_departure + self.cfg.min_wake_gap));
        }
        wake
    }

    /// A read from the input device failed.
    pub fn on_read_error(&mut self, e: &std::io::Error) {
        self.read_errors += 1;
        self.first_error.get_or_insert_with(|| format!("read from TUN: {e}"));
    }

    /// The last write handed out by `poll_transmit` failed.
    pub fn on_write_error(&mut self, e: &std::io::Error) {
        self.write_errors += 1;
        self.first_error.get_or_insert_with(|| format!("write to TUN: {e}"));
    }

    /// Packets the shell holds on their way out (link + coalescer).
    pub fn in_flight(&self) -> usize {
        self.link.in_flight_packets() + self.access_line.len() + usize::from(!self.coalescer.is_empty()) + usize::from(self.held.is_some())
    }

    /// What this direction saw, from start to `now`.
    pub fn finish(mut self, now: Instant, cpu_s: f64) -> DirectionReport {
        let lifetime = (now - self.started).as_nanos().max(1);
        self.link.flush_entry();
        let stats = self.link.stats().clone();
        let series = match &self.samples {
            Some(s) => s.lock().map(|mut v| std::mem::take(&mut *v)).unwrap_or_default(),
            None => Vec::new(),
        };
        DirectionReport {
            direction: self.cfg.name.to_string(),
            config: Some(self.cfg.config.clone()),
            queue_delay: DelaySummary::of(&stats.queue_delay),
            lateness: DelaySummary::of(&self.lateness),
            utilization: stats.busy_ns.as_nanos() as f64 / lifetime as f64,
            stats,
            read_errors: self.read_errors,
            write_errors: self.write_errors,
            superframes: self.superframes,
            segments_from_superframes: self.segments,
            writes: self.writes,
            malformed: self.malformed,
            tun_tx_dropped: None,
            tun_rx_dropped: None,
            cpu_s,
            cpu_share: cpu_s * 1e9 / lifetime as f64,
            one_thread: false,
            series,
            window: self.window.finish(),
            error: self.first_error,
        }
    }
}

/// Whether TCP superframes may cross this direction whole instead of cut into segments and
/// merged again on the way out: where the model can do nothing to one segment that it does
/// not do to all of them. At an unlimited rate with no trace, no scheduled change, no jitter,
/// no reordering, no loss, no policer, no ECN fault and drop-tail, every segment of a superframe that
/// arrives at once finds the server idle (so no buffer can refuse it) and is delivered at its
/// arrival plus the one delay: all leave together and unchanged, so writing the superframe
/// itself is what cutting and re-merging would have written, minus the copies. The segments
/// still enter the model one by one, so its counters, the window, the series and the
/// lateness see each of them. Off without offloads (there are no superframes) and with
/// access links (their delays are looked up per packet).
pub fn crosses_whole(cfg: &ShellConfig) -> bool {
    let c = &cfg.config;
    cfg.offload
        && c.rate == ccbench_link::Rate::Unlimited
        && c.trace.is_none()
        && c.schedule.is_empty()
        && c.jitter == ccbench_link::Jitter::None
        && !c.reorder.is_on()
        && c.loss == ccbench_link::LossModel::None
        && c.policer.is_none()
        && c.ecn_fault.is_none()
        && c.aqm == ccbench_link::Aqm::DropTail
}

/// A buffer holding a whole superframe: its vnet header says GSO (cut packets never do, and
/// a plain read that says so is refused as malformed).
fn is_superframe(buf: &[u8]) -> bool {
    VnetHdr::parse(buf).is_some_and(|vh| vh.gso_type != gso::GSO_NONE)
}
