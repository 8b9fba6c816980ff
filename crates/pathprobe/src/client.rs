//! The near end: drives the measurement phases against a [`crate::ProbeServer`] and turns
//! what came back into a [`PathEstimate`]. One thread receives (and timestamps) everything;
//! the calling thread sends, paced.

use std::collections::HashMap;
use std::io;
use std::net::{SocketAddr, UdpSocket};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};

use crate::estimate::{self, LossEstimate, TrainStats, MAX_TRAIN_PACKETS};
use crate::pace::{sleep_until, Pacer};
use crate::wire::{self, Message, Token, WireStats};

/// How hard and how long to probe. The defaults measure loss to ±0.5 percentage points at 1 %
/// (10 000 packets per direction: binomial sd 0.1 pp) and fill buffers of up to about 1 s.
#[derive(Clone, Debug)]
pub struct ProbeOptions {
    /// Echoes for the base RTT, one every `echo_interval`.
    pub echoes: u32,
    pub echo_interval: Duration,
    /// The rate search starts here and grows 4× per train until the path limits it.
    pub start_rate_bps: u64,
    /// …but never beyond this: a path faster than it is reported as "at least" this.
    pub max_rate_bps: u64,
    pub search_train: Duration,
    /// The load phase overdrives the bottleneck by this factor for `load_train`: the queue
    /// grows by (factor − 1) × `load_train` of service time, which fills any buffer up to that.
    pub load_factor: f64,
    pub load_train: Duration,
    /// Packets per direction for the loss count, sent at `loss_load` × the measured rate so
    /// the queue stays empty and every loss is the path's.
    pub loss_packets: u32,
    pub loss_load: f64,
    /// UDP payload of train packets (1472 + 28 = a 1500-byte IPv4 packet).
    pub payload_len: u16,
}

impl Default for ProbeOptions {
    fn default() -> Self {
        ProbeOptions {
            echoes: 200,
            echo_interval: Duration::from_millis(5),
            start_rate_bps: 4_000_000,
            max_rate_bps: 1_000_000_000,
            search_train: Duration::from_millis(300),
            load_factor: 1.5,
            load_train: Duration::from_secs(2),
            loss_packets: 10_000,
            loss_load: 0.7,
            payload_len: 1472,
        }
    }
}

/// One direction of the path as measured.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct DirectionEstimate {
    /// Bottleneck rate in IP bits per second.
    pub rate_bps: f64,
    /// True when even `max_rate_bps` did not overdrive the path: the rate is at least this.
    pub rate_is_lower_bound: bool,
    /// Median RTT of echoes in the second half of a train that overdrove this direction.
    pub loaded_rtt_ns: u64,
    /// `loaded_rtt_ns` less the base RTT: the queue a full buffer adds.
    pub queue_delay_ns: u64,
    /// The buffer that adds that queue at this rate.
    pub buffer_bytes: u64,
    /// False when the RTT was still growing at the end of the train: the buffer is larger.
    pub buffer_filled: bool,
    pub loss: LossEstimate,
}

/// The path as measured.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct PathEstimate {
    /// Smallest echo RTT, less the serialization of the echo packets themselves.
    pub base_rtt_ns: u64,
    pub min_echo_rtt_ns: u64,
    pub echoes_sent: u32,
    pub echoes_answered: u32,
    /// Server → client.
    pub down: DirectionEstimate,
    /// Client → server.
    pub up: DirectionEstimate,
    pub duration_ms: u64,
    /// IP bytes this end sent and received.
    pub bytes_sent: u64,
    pub bytes_received: u64,
}

#[derive(Debug, thiserror::Error)]
pub enum ProbeError {
    #[error("probe socket: {0}")]
    Io(#[from] io::Error),
    #[error("the probe server at {server} did not answer {what} (wrong token, its limits reached, or the path is down)")]
    NoAnswer { server: SocketAddr, what: &'static str },
}

/// Measures the path to a [`crate::ProbeServer`] at `server` holding session `token`.
pub fn probe(server: SocketAddr, token: Token, opts: &ProbeOptions) -> Result<PathEstimate, ProbeError> {
    let bind: SocketAddr = if server.is_ipv4() { ([0, 0, 0, 0], 0).into() } else { (std::net::Ipv6Addr::UNSPECIFIED, 0).into() };
    let socket = UdpSocket::bind(bind)?;
    socket.connect(server)?;
    crate::deepen_receive_buffer(&socket, 8 << 20);
    crate::stamp::enable(&socket)?;
    socket.set_read_timeout(Some(Duration::from_millis(20)))?;
    let shared = Shared::default();
    let epoch = Instant::now();
    let overhead = crate::header_overhead(&server);
    std::thread::scope(|s| {
        s.spawn(|| receive(&socket, &token, &shared, overhead));
        let mut client =
            Client { socket: &socket, server, token, shared: &shared, overhead, opts, next_echo: 0, next_train: 0, bytes_sent: 0, rtt_guess_ns: 1_000_000_000 };
        let result = client.measure();
        shared.stop.store(true, Ordering::Relaxed);
        result.map(|mut e| {
            e.duration_ms = epoch.elapsed().as_millis() as u64;
            e.bytes_sent = client.bytes_sent;
            e.bytes_received = shared.bytes_received.load(Ordering::Relaxed);
            e
        })
    })
}

#[derive(Default)]
struct Shared {
    /// Echo sequence number → RTT.
    rtts: Mutex<HashMap<u32, u64>>,
    /// Downlink trains this client asked for (others are ignored).
    trains: Mutex<HashMap<u32, TrainStats>>,
    /// The latest report per uplink train.
    reports: Mutex<HashMap<u32, WireStats>>,
    bytes_received: AtomicU64,
    stop: AtomicBool,
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

fn receive(socket: &UdpSocket, token: &Token, shared: &Shared, overhead: u32) {
    let mut buf = vec![0u8; 65_536];
    while !shared.stop.load(Ordering::Relaxed) {
        // The socket is connected: only the server's datagrams arrive.
        let Ok((len, _, now_ns)) = crate::stamp::recv(socket, &mut buf) else { continue };
        let Some(message) = wire::parse_for(&buf[..len], token) else { continue };
        let ip_len = overhead + len as u32;
        shared.bytes_received.fetch_add(u64::from(ip_len), Ordering::Relaxed);
        match message {
            Message::EchoReply { seq, sent_ns } if sent_ns <= now_ns => {
                lock(&shared.rtts).insert(seq, now_ns - sent_ns);
            }
            Message::Train { train, seq, sent_ns, .. } => {
                if let Some(stats) = lock(&shared.trains).get_mut(&train) {
                    stats.record(seq, now_ns, sent_ns, ip_len);
                }
            }
            Message::Report { train, stats } => {
                lock(&shared.reports).insert(train, stats);
            }
            _ => {}
        }
    }
}

/// A train to send: rate (IP bits/s) and packet count.
#[derive(Clone, Copy)]
struct Train {
    rate_bps: u64,
    count: u32,
}

/// What one phase of trains brought back.
struct Phase {
    down: Option<WireStats>,
    up: Option<WireStats>,
    /// (sent, from the phase's start; RTT) of every answered echo.
    echoes: Vec<(u64, u64)>,
}

struct Client<'a> {
    socket: &'a UdpSocket,
    server: SocketAddr,
    token: Token,
    shared: &'a Shared,
    overhead: u32,
    opts: &'a ProbeOptions,
    next_echo: u32,
    next_train: u32,
    bytes_sent: u64,
    /// The RTT as known so far, for timeouts: 1 s until measured.
    rtt_guess_ns: u64,
}

impl Client<'_> {
    fn ip_len(&self) -> u32 {
        self.overhead + u32::from(self.opts.payload_len)
    }

    fn send(&mut self, bytes: &[u8]) {
        if self.socket.send(bytes).is_ok() {
            self.bytes_sent += u64::from(self.overhead) + bytes.len() as u64;
        }
    }

    fn echo(&mut self) -> u32 {
        let seq = self.next_echo;
        self.next_echo += 1;
        let sent_ns = crate::stamp::now_ns();
        self.send(&Message::Echo { seq, sent_ns }.encode(&self.token));
        seq
    }

    /// Long enough for stragglers: twice the RTT, at least 300 ms.
    fn settle(&self) -> Duration {
        Duration::from_nanos(2 * self.rtt_guess_ns).max(Duration::from_millis(300))
    }

    fn measure(&mut self) -> Result<PathEstimate, ProbeError> {
        // 1. Base RTT: the least of many echoes on an idle path.
        let mut sent = Vec::new();
        for _ in 0..self.opts.echoes {
            sent.push(self.echo());
            std::thread::sleep(self.opts.echo_interval);
        }
        std::thread::sleep(self.settle().min(Duration::from_secs(1)));
        let rtts: Vec<u64> = {
            let answered = lock(&self.shared.rtts);
            sent.iter().filter_map(|s| answered.get(s).copied()).collect()
        };
        let min_echo_rtt_ns = estimate::min_ns(&rtts).ok_or(ProbeError::NoAnswer { server: self.server, what: "any echo" })?;
        self.rtt_guess_ns = min_echo_rtt_ns;

        // 2. Each direction: find the rate, then overdrive it with echoes alongside.
        let down = self.direction(true, min_echo_rtt_ns)?;
        let up = self.direction(false, min_echo_rtt_ns)?;

        // 3. Loss, both directions at once, below the bottleneck.
        let loss_train = |rate: f64| Train { rate_bps: (rate * self.opts.loss_load).max(1.0) as u64, count: self.opts.loss_packets.min(MAX_TRAIN_PACKETS) };
        let (loss_down, loss_up) = (loss_train(down.0), loss_train(up.0));
        let phase = self.phase(Some(loss_down), Some(loss_up), false)?;
        let loss = |train: Train, stats: Option<WireStats>| LossEstimate::new(train.count, stats.map_or(0, |s| s.received));

        // The echoes' own serialization (a small packet each way) is no part of the path's RTT.
        let echo_ip_bits = f64::from(self.overhead + Message::Echo { seq: 0, sent_ns: 0 }.encode(&self.token).len() as u32) * 8.0;
        let serialization_ns = (echo_ip_bits / down.0 + echo_ip_bits / up.0) * 1e9;
        let base_rtt_ns = min_echo_rtt_ns.saturating_sub(serialization_ns as u64);
        let finish = |(rate_bps, lower_bound, loaded, filled): (f64, bool, u64, bool), loss: LossEstimate| {
            let queue_delay_ns = loaded.saturating_sub(min_echo_rtt_ns);
            DirectionEstimate {
                rate_bps,
                rate_is_lower_bound: lower_bound,
                loaded_rtt_ns: loaded,
                queue_delay_ns,
                buffer_bytes: estimate::buffer_bytes(queue_delay_ns, rate_bps),
                buffer_filled: filled,
                loss,
            }
        };
        Ok(PathEstimate {
            base_rtt_ns,
            min_echo_rtt_ns,
            echoes_sent: sent.len() as u32,
            echoes_answered: rtts.len() as u32,
            down: finish(down, loss(loss_down, phase.down)),
            up: finish(up, loss(loss_up, phase.up)),
            duration_ms: 0,
            bytes_sent: 0,
            bytes_received: 0,
        })
    }

    /// Rate (and whether it is only a lower bound), RTT under load and whether the buffer
    /// filled, for one direction.
    fn direction(&mut self, down: bool, base_rtt_ns: u64) -> Result<(f64, bool, u64, bool), ProbeError> {
        let bits = f64::from(self.ip_len()) * 8.0;
        let count_for = |rate: f64, d: Duration| ((rate * d.as_secs_f64() / bits).ceil() as u32).clamp(30, MAX_TRAIN_PACKETS);
        let one = |p: &Phase| if down { p.down } else { p.up };
        // Search: 4× per train until what arrives is clearly less than what was sent.
        let mut rate = self.opts.start_rate_bps.min(self.opts.max_rate_bps) as f64;
        let mut previous: Option<(f64, f64)> = None;
        let (found, limited) = loop {
            let train = Train { rate_bps: rate as u64, count: count_for(rate, self.opts.search_train) };
            let phase = if down { self.phase(Some(train), None, false)? } else { self.phase(None, Some(train), false)? };
            let no_answer = || ProbeError::NoAnswer { server: self.server, what: "a rate-search train" };
            let stats = one(&phase).ok_or_else(no_answer)?;
            let measured = estimate::dispersion_rate_bps(&stats).ok_or_else(no_answer)?;
            let offered = estimate::offered_rate_bps(&stats, self.ip_len()).unwrap_or(rate);
            let stalled = previous.is_some_and(|(o, r)| estimate::growth_stalled((o, offered), (r, measured)));
            if estimate::stretched(&stats) || stalled {
                break (measured, true);
            }
            if rate >= self.opts.max_rate_bps as f64 {
                break (measured.min(rate), false);
            }
            previous = Some((offered, measured));
            rate = (rate * 4.0).min(self.opts.max_rate_bps as f64);
        };
        // Load: overdrive the bottleneck long enough to fill its buffer, echoes alongside.
        let load_rate = (found * self.opts.load_factor).min(self.opts.max_rate_bps as f64);
        let train = Train { rate_bps: load_rate as u64, count: count_for(load_rate, self.opts.load_train) };
        let phase = if down { self.phase(Some(train), None, true)? } else { self.phase(None, Some(train), true)? };
        // The load train's rate, from far more packets, if it overdrove the path too: it
        // offered more than it delivered by more than random loss could explain (20 %).
        let overdriven = |s: &WireStats| estimate::offered_rate_bps(s, self.ip_len()).zip(estimate::dispersion_rate_bps(s)).is_some_and(|(o, r)| r < 0.8 * o);
        // The echoes alongside crossed the same bottleneck (the reply down, or the request up)
        // and took their share of its service time: add back the ones that got through.
        let train_ns = self.opts.load_train.as_nanos() as u64;
        let echo_bits = f64::from(self.overhead + Message::Echo { seq: 0, sent_ns: 0 }.encode(&self.token).len() as u32) * 8.0;
        let echoes_in_train = phase.echoes.iter().filter(|(at, _)| *at < train_ns).count() as f64;
        let echo_share = echoes_in_train * echo_bits / self.opts.load_train.as_secs_f64();
        let rate = one(&phase)
            .filter(|s| limited && (estimate::stretched(s) || overdriven(s)))
            .and_then(|s| estimate::dispersion_rate_bps(&s))
            .map_or(found, |r| r + echo_share);
        let in_quarter = |q: u64| -> Vec<u64> { phase.echoes.iter().filter(|(at, _)| *at * 4 / train_ns.max(1) == q).map(|(_, rtt)| *rtt).collect() };
        let second_half: Vec<u64> = [in_quarter(2), in_quarter(3)].concat();
        let loaded = estimate::median_ns(&second_half).ok_or(ProbeError::NoAnswer { server: self.server, what: "echoes under load" })?;
        let (q3, q4) = (estimate::median_ns(&in_quarter(2)).unwrap_or(loaded), estimate::median_ns(&in_quarter(3)).unwrap_or(loaded));
        // Still growing between the last two quarters by more than 2 ms or 10 % of the queue?
        let growth = q4.saturating_sub(q3);
        let filled = growth <= 2_000_000.max(q4.saturating_sub(base_rtt_ns) / 10);
        self.rtt_guess_ns = self.rtt_guess_ns.max(loaded);
        // A train that never overdrove the path cannot have filled its buffer: a lower bound.
        Ok((rate, !limited, loaded, filled && limited))
    }

    /// Sends a downlink and/or an uplink train at once (echoes alongside if asked) and waits
    /// until what arrives has settled.
    fn phase(&mut self, down: Option<Train>, up: Option<Train>, echoes: bool) -> Result<Phase, ProbeError> {
        let start = Instant::now();
        let ip_bits = f64::from(self.ip_len()) * 8.0;
        let length = |t: Train| Duration::from_secs_f64(f64::from(t.count) * ip_bits / t.rate_bps.max(1) as f64);
        let retry = Duration::from_nanos(3 * self.rtt_guess_ns).max(Duration::from_millis(250));

        let down_id = down.map(|t| {
            let id = self.take_train_id();
            lock(&self.shared.trains).insert(id, TrainStats::new(t.count));
            (id, t)
        });
        let request = |d: (u32, Train), token: &Token| {
            Message::TrainRequest { train: d.0, rate_bps: d.1.rate_bps, count: d.1.count, payload_len: self.opts.payload_len }.encode(token)
        };
        let (mut requested_at, mut requests) = (start, 0);
        if let Some(d) = down_id {
            self.send(&request(d, &self.token));
            requests = 1;
        }
        let mut down_end = down.map_or(start, |t| start + length(t));

        let up_id = up.map(|_| self.take_train_id());
        let mut pacer = up.map(|t| Pacer::new(t.rate_bps, self.ip_len(), t.count));
        let mut packet = up.map(|t| {
            Message::Train { train: up_id.unwrap_or(0), seq: 0, count: t.count, sent_ns: 0 }.encode_padded(&self.token, usize::from(self.opts.payload_len))
        });

        let mut echo_log = Vec::new();
        let mut next_echo = start;
        loop {
            let now = Instant::now();
            if let (Some(p), Some(bytes)) = (pacer.as_mut(), packet.as_mut()) {
                for seq in p.take_due(now) {
                    wire::stamp_train_packet(bytes, seq as u32, crate::stamp::now_ns());
                    if self.socket.send(bytes).is_ok() {
                        self.bytes_sent += u64::from(self.ip_len());
                    }
                }
            }
            let up_done = pacer.as_ref().is_none_or(|p| p.done());
            if up_done && now >= down_end {
                break;
            }
            if echoes && now >= next_echo {
                let seq = self.echo();
                echo_log.push((seq, now.duration_since(start).as_nanos() as u64));
                next_echo += self.opts.echo_interval;
            }
            if let Some(d) = down_id {
                let nothing_yet = lock(&self.shared.trains).get(&d.0).is_some_and(|s| s.received() == 0);
                if nothing_yet && now.duration_since(requested_at) > retry {
                    if requests >= 5 {
                        return Err(ProbeError::NoAnswer { server: self.server, what: "a train request" });
                    }
                    self.send(&request(d, &self.token));
                    requests += 1;
                    requested_at = now;
                    down_end = now + length(d.1);
                }
            }
            let next = [pacer.as_ref().and_then(|p| p.next_due()), echoes.then_some(next_echo)].into_iter().flatten().min().unwrap_or(down_end);
            sleep_until(next, Duration::from_millis(2));
        }

        // Settle: until neither direction's count moves for a while.
        let settle = self.settle();
        let down_seen = |c: &Self| down_id.and_then(|d| lock(&c.shared.trains).get(&d.0).map(|s| s.to_wire()));
        let up_seen = |c: &Self| up_id.and_then(|id| lock(&c.shared.reports).get(&id).copied());
        let mut last = (down_seen(self), None);
        for _ in 0..40 {
            if let Some(id) = up_id {
                self.send(&Message::ReportRequest { train: id }.encode(&self.token));
            }
            std::thread::sleep(settle);
            let now = (down_seen(self), up_seen(self));
            let up_settled = up_id.is_none() || (now.1.is_some() && now.1 == last.1);
            if now.0 == last.0 && up_settled {
                break;
            }
            last = now;
        }
        if up_id.is_some() && last.1.is_none() {
            return Err(ProbeError::NoAnswer { server: self.server, what: "a report request" });
        }
        let rtts = lock(&self.shared.rtts);
        let echoes = echo_log.iter().filter_map(|(seq, at)| rtts.get(seq).map(|rtt| (*at, *rtt))).collect();
        Ok(Phase { down: last.0, up: last.1, echoes })
    }

    fn take_train_id(&mut self) -> u32 {
        self.next_train += 1;
        self.next_train
    }
}
