//! The far end. It answers only datagrams that carry the session token and come from the
//! address that first presented it, so a sender without the token gets nothing back (no
//! reflection, no amplification). Echo replies are exactly as long as their requests; trains
//! go only to that address, and everything it sends together stays within [`Limits`].

use std::collections::{BTreeMap, BTreeSet};
use std::io;
use std::net::{SocketAddr, UdpSocket};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{mpsc, Arc};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};

use crate::estimate::{TrainStats, MAX_TRAIN_PACKETS};
use crate::pace::{sleep_until, Pacer};
use crate::wire::{self, Message, Token};

/// How much one session may cost the far end.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Limits {
    /// Bytes (IP) the server sends in all; a train that would exceed it is not sent at all.
    pub max_bytes: u64,
    /// The session ends this long after [`ProbeServer::run`] starts.
    pub max_duration: Duration,
    /// Trains asked for faster than this are sent at this rate.
    pub max_rate_bps: u64,
}

impl Default for Limits {
    /// Room for one default probe of a path up to 1 Gbit/s (see docs/performance.md, `ccbench probe`: time and bytes).
    fn default() -> Self {
        Limits { max_bytes: 1_000_000_000, max_duration: Duration::from_secs(120), max_rate_bps: 1_000_000_000 }
    }
}

/// What one session cost, and why it ended.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ServerReport {
    pub bytes_sent: u64,
    pub bytes_received: u64,
    /// Datagrams answered with nothing: no token, a wrong one, another address, malformed.
    pub ignored: u64,
    /// Trains not sent because they would have exceeded `max_bytes`.
    pub trains_refused: u64,
    pub timed_out: bool,
}

/// Uplink trains remembered at once; the oldest is forgotten first (bounds memory).
const MAX_UPLINK_TRAINS: usize = 8;
/// Downlink train ids remembered, so a repeated request (the first reply was slow, or the
/// request was lost and resent) does not send the train twice.
const MAX_TRAIN_IDS: usize = 4096;
const POLL: Duration = Duration::from_millis(20);
/// Trains slower than this (the emulator's slowest rate) are sent at it.
const MIN_RATE_BPS: u64 = 10_000;

pub struct ProbeServer {
    socket: UdpSocket,
    token: Token,
    limits: Limits,
    /// The only address answered (serve: its control connection's peer). Without it, the
    /// first address to present the token.
    only_from: Option<std::net::IpAddr>,
}

impl ProbeServer {
    /// Binds the session's socket. `token` must be fresh and secret per session (serve derives
    /// it after authenticating the client and sends it over the authenticated control channel).
    pub fn bind(addr: SocketAddr, token: Token, limits: Limits) -> io::Result<ProbeServer> {
        let socket = UdpSocket::bind(addr)?;
        crate::deepen_receive_buffer(&socket, 8 << 20);
        crate::stamp::enable(&socket)?;
        socket.set_read_timeout(Some(POLL))?;
        Ok(ProbeServer { socket, token, limits, only_from: None })
    }

    /// Answers datagrams from `ip` only: one that presents the token from anywhere else is
    /// ignored, so a token seen on the way cannot redirect the probe's trains elsewhere.
    pub fn only_from(mut self, ip: std::net::IpAddr) -> ProbeServer {
        self.only_from = Some(ip);
        self
    }

    pub fn local_addr(&self) -> io::Result<SocketAddr> {
        self.socket.local_addr()
    }

    /// Runs on its own thread until [`ServerHandle::stop`] or the time limit.
    pub fn spawn(self) -> io::Result<ServerHandle> {
        let stop = Arc::new(AtomicBool::new(false));
        let flag = stop.clone();
        let thread = std::thread::Builder::new().name("ccbench-kernel-tcp-server".into()).spawn(move || self.run(&flag))?;
        Ok(ServerHandle { stop, thread })
    }

    /// Answers until `stop` is set or `limits.max_duration` has passed.
    pub fn run(self, stop: &AtomicBool) -> ServerReport {
        let deadline = Instant::now() + self.limits.max_duration;
        let sent = AtomicU64::new(0);
        let ended = AtomicBool::new(false);
        let mut report = ServerReport::default();
        let (jobs, queue) = mpsc::channel::<Job>();
        std::thread::scope(|s| {
            let trains = s.spawn(|| send_trains(&self, queue, &sent, &ended, deadline));
            let mut peer: Option<SocketAddr> = None;
            let mut uplink: BTreeMap<u32, TrainStats> = BTreeMap::new();
            let mut requested: BTreeSet<u32> = BTreeSet::new();
            // Bytes promised so far: every echo and report sent, every train accepted (whole).
            let mut used = 0u64;
            let mut buf = vec![0u8; 65_536];
            while !stop.load(Ordering::Relaxed) && Instant::now() < deadline {
                let (len, from, arrival_ns) = match crate::stamp::recv(&self.socket, &mut buf) {
                    Ok(r) => r,
                    Err(e) if matches!(e.kind(), io::ErrorKind::WouldBlock | io::ErrorKind::TimedOut | io::ErrorKind::Interrupted) => continue,
                    Err(_) => continue,
                };
                let allowed = self.only_from.is_none_or(|ip| ip == from.ip());
                let Some(message) = wire::parse_for(&buf[..len], &self.token).filter(|_| allowed && *peer.get_or_insert(from) == from) else {
                    report.ignored += 1;
                    continue;
                };
                report.bytes_received += u64::from(crate::header_overhead(&from)) + len as u64;
                match message {
                    Message::Echo { seq, sent_ns } => {
                        let reply = Message::EchoReply { seq, sent_ns }.encode_padded(&self.token, len);
                        let cost = u64::from(crate::header_overhead(&from)) + reply.len() as u64;
                        if used + cost <= self.limits.max_bytes && self.socket.send_to(&reply, from).is_ok() {
                            used += cost;
                            sent.fetch_add(cost, Ordering::Relaxed);
                        }
                    }
                    Message::TrainRequest { train, rate_bps, count, payload_len } => {
                        if requested.len() >= MAX_TRAIN_IDS || !requested.insert(train) {
                            continue;
                        }
                        let job = Job::new(train, rate_bps.min(self.limits.max_rate_bps), count.min(MAX_TRAIN_PACKETS), payload_len, from);
                        if used + job.bytes() > self.limits.max_bytes {
                            report.trains_refused += 1;
                            continue;
                        }
                        used += job.bytes();
                        let _ = jobs.send(job);
                    }
                    Message::Train { train, seq, count, sent_ns } => {
                        if !uplink.contains_key(&train) && uplink.len() >= MAX_UPLINK_TRAINS {
                            uplink.pop_first();
                        }
                        let ip_len = crate::header_overhead(&from) + len as u32;
                        uplink.entry(train).or_insert_with(|| TrainStats::new(count)).record(seq, arrival_ns, sent_ns, ip_len);
                    }
                    Message::ReportRequest { train } => {
                        let stats = uplink.get(&train).map(|s| s.to_wire()).unwrap_or_default();
                        let reply = Message::Report { train, stats }.encode(&self.token);
                        let cost = u64::from(crate::header_overhead(&from)) + reply.len() as u64;
                        if used + cost <= self.limits.max_bytes && self.socket.send_to(&reply, from).is_ok() {
                            used += cost;
                            sent.fetch_add(cost, Ordering::Relaxed);
                        }
                    }
                    Message::EchoReply { .. } | Message::Report { .. } => report.ignored += 1,
                }
            }
            report.timed_out = Instant::now() >= deadline;
            ended.store(true, Ordering::Relaxed);
            drop(jobs);
            let _ = trains.join();
        });
        report.bytes_sent = sent.load(Ordering::Relaxed);
        report
    }
}

/// A running [`ProbeServer`].
pub struct ServerHandle {
    stop: Arc<AtomicBool>,
    thread: JoinHandle<ServerReport>,
}

impl ServerHandle {
    pub fn stop(self) -> ServerReport {
        self.stop.store(true, Ordering::Relaxed);
        self.thread.join().unwrap_or_default()
    }
}

/// One downlink train to send.
struct Job {
    train: u32,
    rate_bps: u64,
    count: u32,
    payload_len: usize,
    ip_len: u32,
    to: SocketAddr,
}

impl Job {
    fn new(train: u32, rate_bps: u64, count: u32, payload_len: u16, to: SocketAddr) -> Job {
        // Never shorter than the message, never longer than an unfragmented 1500-byte packet.
        let min = Message::Train { train, seq: 0, count, sent_ns: 0 }.encode(&[0; 16]).len();
        let max = 1500 - crate::header_overhead(&to) as usize;
        let payload_len = usize::from(payload_len).clamp(min, max);
        Job { train, rate_bps: rate_bps.max(MIN_RATE_BPS), count, payload_len, ip_len: crate::header_overhead(&to) + payload_len as u32, to }
    }

    fn bytes(&self) -> u64 {
        u64::from(self.count) * u64::from(self.ip_len)
    }
}

/// Sends queued trains one after another, paced, until the session ends.
fn send_trains(server: &ProbeServer, queue: mpsc::Receiver<Job>, sent: &AtomicU64, ended: &AtomicBool, deadline: Instant) {
    while let Ok(job) = queue.recv() {
        let mut pacer = Pacer::new(job.rate_bps, job.ip_len, job.count);
        let mut packet = Message::Train { train: job.train, seq: 0, count: job.count, sent_ns: 0 }.encode_padded(&server.token, job.payload_len);
        while !pacer.done() {
            if ended.load(Ordering::Relaxed) || Instant::now() >= deadline {
                return;
            }
            for seq in pacer.take_due(Instant::now()) {
                wire::stamp_train_packet(&mut packet, seq as u32, crate::stamp::now_ns());
                if server.socket.send_to(&packet, job.to).is_ok() {
                    sent.fetch_add(u64::from(job.ip_len), Ordering::Relaxed);
                }
            }
            if let Some(next) = pacer.next_due() {
                sleep_until(next, Duration::from_millis(5));
            }
        }
    }
}
