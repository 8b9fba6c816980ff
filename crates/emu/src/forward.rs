//! One direction of the path: TUN → link model → TUN, on its own thread.

use std::os::fd::{AsFd, AsRawFd};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use ccbench_link::{DelayHistogram, DirectionConfig, Link, LinkStats, Nanos};
use ccbench_netns::Tun;

use crate::gso::{self, Coalescer, Segmenter, VnetHdr, VNET_HDR_LEN};
use serde::{Deserialize, Serialize};

/// Longest sleep without looking at the stop flag.
const MAX_SLEEP: Duration = Duration::from_millis(20);
/// Packets read per wake-up before delivering again, so a flood of arrivals cannot delay
/// departures that are already due.
const READ_BATCH: usize = 256;

pub(crate) struct Forwarder {
    pub name: &'static str,
    pub from: Arc<Tun>,
    pub to: Arc<Tun>,
    pub config: DirectionConfig,
    pub seed: u64,
    pub mtu: u32,
    pub epoch: Instant,
    pub sample_interval: Duration,
    pub stop: Arc<AtomicBool>,
    pub min_wake_gap_ns: Nanos,
}

/// One point of a direction's time series, covering the interval that ends at `t_us`.
#[derive(Clone, Debug, Default, Serialize, Deserialize, PartialEq)]
pub struct LinkSample {
    pub t_us: u64,
    /// Bytes and packets waiting in the buffer at the sample instant.
    pub backlog_bytes: u64,
    pub backlog_packets: u64,
    pub delivered_bytes: u64,
    pub drops_loss: u64,
    pub drops_buffer: u64,
    pub drops_policer: u64,
    pub drops_aqm: u64,
    pub queue_delay_mean_us: f64,
    pub queue_delay_max_us: f64,
    /// Fraction of the interval the rate server was busy serializing.
    pub utilization: f64,
    /// Worst emulator timing error in the interval (see [`DirectionReport::lateness`]).
    pub lateness_max_us: f64,
}

/// Percentiles of a delay distribution, in microseconds.
#[derive(Clone, Debug, Default, Serialize, Deserialize, PartialEq)]
pub struct DelaySummary {
    pub count: u64,
    pub mean_us: f64,
    pub p50_us: f64,
    pub p95_us: f64,
    pub p99_us: f64,
    pub max_us: f64,
}

impl DelaySummary {
    pub fn of(h: &DelayHistogram) -> Self {
        let us = |ns: Nanos| ns as f64 / 1000.0;
        DelaySummary {
            count: h.count(),
            mean_us: h.mean_ns() / 1000.0,
            p50_us: us(h.quantile(0.50)),
            p95_us: us(h.quantile(0.95)),
            p99_us: us(h.quantile(0.99)),
            max_us: us(h.max_ns()),
        }
    }
}

/// What one direction of the emulator saw over its lifetime.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub struct DirectionReport {
    pub direction: String,
    pub config: Option<DirectionConfig>,
    pub stats: LinkStats,
    /// Time each packet waited in the buffer before serialization.
    pub queue_delay: DelaySummary,
    /// How late packets left compared with the model's departure time: the emulator's own
    /// timing error, added on top of the configured delay.
    pub lateness: DelaySummary,
    /// busy time / lifetime of the link.
    pub utilization: f64,
    pub read_errors: u64,
    pub write_errors: u64,
    /// TSO superframes read from the kernel, and the MTU-sized segments cut from them.
    pub superframes: u64,
    pub segments_from_superframes: u64,
    /// Writes to the output device; below packets_out when departures were coalesced.
    pub writes: u64,
    /// Packets the emulator could not parse or segment (dropped; should be 0).
    pub malformed: u64,
    /// Kernel drops outside the model: the input device's queue overflowing before we read
    /// (`tun_tx_dropped`) and writes the receiving stack refused (`tun_rx_dropped`). With a
    /// keeping-up emulator both are 0; anything else is loss nobody configured.
    pub tun_tx_dropped: u64,
    pub tun_rx_dropped: u64,
    /// CPU time this direction's forwarding thread used, and its share of the wall time.
    pub cpu_s: f64,
    pub cpu_share: f64,
    pub series: Vec<LinkSample>,
    pub error: Option<String>,
}

impl DirectionReport {
    pub fn failed(msg: &str) -> Self {
        DirectionReport { error: Some(msg.to_string()), ..Default::default() }
    }
}

struct SeriesRecorder {
    interval_ns: Nanos,
    next_at: Nanos,
    last: LinkStats,
    delay_sum_ns: u128,
    delay_count: u64,
    delay_max_ns: Nanos,
    late_max_ns: Nanos,
    samples: Vec<LinkSample>,
}

impl SeriesRecorder {
    fn new(interval: Duration, now: Nanos) -> Self {
        let interval_ns = interval.as_nanos().max(1) as Nanos;
        SeriesRecorder {
            interval_ns,
            next_at: now + interval_ns,
            last: LinkStats::default(),
            delay_sum_ns: 0,
            delay_count: 0,
            delay_max_ns: 0,
            late_max_ns: 0,
            samples: Vec::with_capacity(4096),
        }
    }

    fn on_delivery(&mut self, queue_delay_ns: Nanos, late_ns: Nanos) {
        self.late_max_ns = self.late_max_ns.max(late_ns);
        self.delay_sum_ns += u128::from(queue_delay_ns);
        self.delay_count += 1;
        self.delay_max_ns = self.delay_max_ns.max(queue_delay_ns);
    }

    fn maybe_sample<P>(&mut self, now: Nanos, link: &Link<P>) {
        if now < self.next_at {
            return;
        }
        let s = link.stats();
        let busy = s.busy_ns - self.last.busy_ns;
        let elapsed = self.interval_ns + (now - self.next_at);
        self.samples.push(LinkSample {
            t_us: now / 1000,
            backlog_bytes: link.backlog_bytes(),
            backlog_packets: link.backlog_packets() as u64,
            delivered_bytes: s.bytes_out - self.last.bytes_out,
            drops_loss: s.drops_loss - self.last.drops_loss,
            drops_buffer: s.drops_buffer - self.last.drops_buffer,
            drops_policer: s.drops_policer - self.last.drops_policer,
            drops_aqm: s.drops_aqm - self.last.drops_aqm,
            queue_delay_mean_us: if self.delay_count > 0 { self.delay_sum_ns as f64 / self.delay_count as f64 / 1000.0 } else { 0.0 },
            queue_delay_max_us: self.delay_max_ns as f64 / 1000.0,
            utilization: (busy as f64 / elapsed as f64).min(1.0),
            lateness_max_us: self.late_max_ns as f64 / 1000.0,
        });
        self.late_max_ns = 0;
        self.last = s.clone();
        self.delay_sum_ns = 0;
        self.delay_count = 0;
        self.delay_max_ns = 0;
        // Skip missed ticks instead of emitting a burst of empty samples.
        while self.next_at <= now {
            self.next_at += self.interval_ns;
        }
    }
}

impl Forwarder {
    fn now(&self) -> Nanos {
        self.epoch.elapsed().as_nanos() as Nanos
    }

    pub fn run(self) -> DirectionReport {
        // The default 50 µs timer slack would smear every departure; we want the wake-up the
        // model asked for.
        // SAFETY: prctl on the calling thread only.
        unsafe { libc::prctl(libc::PR_SET_TIMERSLACK, 1 as libc::c_ulong) };
        // The link's timing is only as good as our wake-ups: on a 2-core machine the traffic's
        // own threads would otherwise delay us by milliseconds. A real-time priority lets a
        // forwarder preempt them the moment its timer fires; it sleeps between packets, and
        // the kernel's RT throttling bounds it anyway. Failure (no CAP_SYS_NICE) only costs accuracy.
        let param = libc::sched_param { sched_priority: 10 };
        // SAFETY: changes the scheduling policy of the calling thread only.
        let _ = unsafe { libc::sched_setscheduler(0, libc::SCHED_FIFO, &param) };
        // Link buffers hold one MTU-sized packet (plus the vnet header when offloading); reads
        // land in one large buffer first because a read may bring a 64 KB superframe.
        let hdr = if self.from.offload() { VNET_HDR_LEN } else { 0 };
        let buf_len = hdr + (self.mtu as usize).max(1500) + 64;
        let mut read_buf = vec![0u8; hdr + 65_536 + 64];
        let mut link: Link<Box<[u8]>> = Link::new(self.config.clone(), self.seed);
        let mut pool: Vec<Box<[u8]>> = (0..2048).map(|_| vec![0u8; buf_len].into_boxed_slice()).collect();
        let (mut superframes, mut segments, mut malformed, mut writes) = (0u64, 0u64, 0u64, 0u64);
        let mut coalescer = Coalescer::default();
        let started = self.now();
        let mut series = SeriesRecorder::new(self.sample_interval, started);
        let mut lateness = DelayHistogram::default();
        let (mut read_errors, mut write_errors) = (0u64, 0u64);
        let mut last_error = None;

        while !self.stop.load(Ordering::Relaxed) {
            let now = self.now();
            for _ in 0..READ_BATCH {
                let n = match self.from.recv(&mut read_buf) {
                    Ok(Some(n)) => n,
                    Ok(None) => break,
                    Err(e) => {
                        read_errors += 1;
                        last_error = Some(format!("read from TUN: {e}"));
                        break;
                    }
                };
                // Copies one packet into a link buffer and offers it to the model; false if
                // the packet could not be produced.
                let mut offer = |bytes: &dyn Fn(&mut [u8]) -> Option<usize>| -> bool {
                    let mut buf = pool.pop().unwrap_or_else(|| vec![0u8; buf_len].into_boxed_slice());
                    match bytes(&mut buf) {
                        Some(len) => {
                            if let Err(dropped) = link.enqueue(now, (len - hdr) as u32, buf) {
                                pool.push(dropped.packet);
                            }
                            true
                        }
                        None => {
                            pool.push(buf);
                            false
                        }
                    }
                };
                let vnet = if hdr > 0 { VnetHdr::parse(&read_buf[..n]) } else { None };
                match vnet {
                    Some(vh) if vh.gso_type & !gso::GSO_ECN == gso::GSO_TCPV4 => {
                        superframes += 1;
                        match Segmenter::new(&read_buf[hdr..n], usize::from(vh.gso_size), vh.gso_type & gso::GSO_ECN != 0) {
                            Ok(seg) => {
                                segments += seg.count() as u64;
                                for i in 0..seg.count() {
                                    if !offer(&|buf| seg.write(i, buf).ok()) {
                                        malformed += 1;
                                    }
                                }
                            }
                            Err(_) => malformed += 1,
                        }
                    }
                    Some(vh) if vh.gso_type != gso::GSO_NONE => malformed += 1,
                    _ => {
                        let ok = offer(&|buf| {
                            let b = buf.get_mut(..n)?;
                            b.copy_from_slice(&read_buf[..n]);
                            Some(n)
                        });
                        if !ok {
                            malformed += 1;
                        }
                    }
                }
            }

            let now = self.now();
            let mut send = |bytes: &[u8]| {
                writes += 1;
                if let Err(e) = self.to.send(bytes) {
                    write_errors += 1;
                    last_error = Some(format!("write to TUN: {e}"));
                }
            };
            while let Some(d) = link.dequeue(now) {
                let bytes = &d.packet[..hdr + d.len as usize];
                // Packets due together leave together: consecutive segments of one flow go
                // out as one superframe, as a NIC's GRO would deliver them.
                if hdr > 0 {
                    if !coalescer.push(bytes) {
                        if let Some(out) = coalescer.take() {
                            send(out);
                        }
                        coalescer.push(bytes);
                    }
                } else {
                    send(bytes);
                }
                let late = now.saturating_sub(d.delivered_at);
                lateness.record(late);
                series.on_delivery(d.service_start - d.arrived_at, late);
                pool.push(d.packet);
            }
            if let Some(out) = coalescer.take() {
                send(out);
            }
            // CoDel drops at dequeue inside the model; take those buffers back.
            while let Some(dropped) = link.take_dropped() {
                pool.push(dropped.packet);
            }
            series.maybe_sample(now, &link);

            let mut wake = series.next_at.min(now + MAX_SLEEP.as_nanos() as Nanos);
            if let Some(t) = link.next_event() {
                // Departures closer together than the gap leave in one batch (and one
                // superframe), a little late, instead of one wake-up each: on a VM each timer
                // wake-up costs more than a packet's serialization at a gigabit.
                wake = wake.min(t.max(now + self.min_wake_gap_ns));
            }
            let now = self.now();
            if wake > now {
                wait_readable(&self.from, wake - now);
            }
        }

        let lifetime = self.now().saturating_sub(started).max(1);
        let cpu_s = thread_cpu_seconds();
        let stats = link.stats().clone();
        DirectionReport {
            direction: self.name.to_string(),
            config: Some(self.config.clone()),
            queue_delay: DelaySummary::of(&stats.queue_delay),
            lateness: DelaySummary::of(&lateness),
            utilization: stats.busy_ns as f64 / lifetime as f64,
            stats,
            read_errors,
            write_errors,
            superframes,
            segments_from_superframes: segments,
            writes,
            malformed,
            tun_tx_dropped: 0,
            tun_rx_dropped: 0,
            cpu_s,
            cpu_share: cpu_s * 1e9 / lifetime as f64,
            series: series.samples,
            error: last_error,
        }
    }
}

fn thread_cpu_seconds() -> f64 {
    // SAFETY: getrusage fills the struct we own.
    let mut ru: libc::rusage = unsafe { std::mem::zeroed() };
    if unsafe { libc::getrusage(libc::RUSAGE_THREAD, &mut ru) } != 0 {
        return 0.0;
    }
    let tv = |t: libc::timeval| t.tv_sec as f64 + t.tv_usec as f64 / 1e6;
    tv(ru.ru_utime) + tv(ru.ru_stime)
}

/// Sleeps until `fd` is readable or `timeout_ns` passes, with nanosecond resolution (ppoll
/// uses high-resolution timers, unlike poll's milliseconds).
fn wait_readable(tun: &Tun, timeout_ns: Nanos) {
    let mut pfd = libc::pollfd { fd: tun.as_fd().as_raw_fd(), events: libc::POLLIN, revents: 0 };
    let ts = libc::timespec { tv_sec: (timeout_ns / 1_000_000_000) as libc::time_t, tv_nsec: (timeout_ns % 1_000_000_000) as libc::c_long };
    // SAFETY: one valid pollfd, a valid timespec, no signal mask change.
    unsafe { libc::ppoll(&mut pfd, 1, &ts, std::ptr::null()) };
}
