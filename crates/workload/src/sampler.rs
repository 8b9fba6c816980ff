//! The one `TCP_INFO` sampler of every workload.

use std::collections::HashMap;
use std::os::fd::{AsFd, OwnedFd};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use ccbench_probe::{Sample, TcpInfo};

use crate::common::{lock, micros_since};
use crate::SocketId;

struct Tracked {
    id: SocketId,
    fd: OwnedFd,
    /// Sampled when it joined and once more at the end (see [`Sampler::track`]).
    edges: bool,
    samples: Vec<Sample>,
}

/// Samples `TCP_INFO` of every sending socket registered with it. Sockets are registered by a
/// duplicate descriptor, so a sample can never hit a reused descriptor number; the duplicates
/// are closed when the sampler is dropped, after the workload's own handles.
#[derive(Default)]
pub(crate) struct Sampler {
    entries: Mutex<Vec<Tracked>>,
}

/// What the sampler saw of one socket.
pub(crate) struct Sampled {
    pub samples: Vec<Sample>,
    pub final_tcp_info: Option<TcpInfo>,
}

impl Sampler {
    /// Registers a sending socket that exists before the sampler's first round and lives until
    /// its last (a bulk flow): the rounds cover its whole life.
    pub(crate) fn register<F: AsFd>(&self, id: SocketId, sock: F) {
        if let Ok(fd) = sock.as_fd().try_clone_to_owned() {
            lock(&self.entries).push(Tracked { id, fd, edges: false, samples: Vec::new() });
        }
    }

    /// Registers a sending socket that joins while the sampler runs (an HTTP connection): it is
    /// sampled at once, so even a connection shorter than the interval has a sample, and once
    /// more by [`Sampler::finish`].
    pub(crate) fn track<F: AsFd>(&self, id: SocketId, sock: F, epoch: Instant) {
        if let Ok(fd) = sock.as_fd().try_clone_to_owned() {
            let mut samples = Vec::new();
            if let Ok(s) = Sample::read(&fd, micros_since(epoch)) {
                samples.push(s);
            }
            lock(&self.entries).push(Tracked { id, fd, edges: true, samples });
        }
    }

    /// One round: every registered socket at `t_us`.
    fn round(&self, t_us: u64) {
        for e in lock(&self.entries).iter_mut() {
            if let Ok(s) = Sample::read(&e.fd, t_us) {
                e.samples.push(s);
            }
        }
    }

    /// Samples every `interval`, the first round at `first`, while `keep_going()` holds (checked
    /// before each round and during the waits between them). `on_round(t_us)` is called at
    /// the start of each round, with the time its samples carry.
    pub(crate) fn run(&self, epoch: Instant, first: Instant, interval: Duration, keep_going: impl Fn() -> bool, mut on_round: impl FnMut(u64)) {
        let mut next = first;
        while keep_going() {
            let t_us = micros_since(epoch);
            on_round(t_us);
            self.round(t_us);
            next += interval;
            let now = Instant::now();
            if next > now {
                // Short naps keep the reaction to `keep_going` prompt with long intervals.
                std::thread::sleep((next - now).min(Duration::from_millis(20)));
                while Instant::now() < next && keep_going() {
                    std::thread::sleep((next - Instant::now()).min(Duration::from_millis(20)));
                }
            } else {
                next = now;
            }
        }
    }

    /// Everything sampled, by socket, with each socket's `TCP_INFO` read now (and a last sample
    /// of the sockets that joined while the sampler ran).
    pub(crate) fn finish(&self, epoch: Instant) -> HashMap<SocketId, Sampled> {
        let t_us = micros_since(epoch);
        let mut out = HashMap::new();
        for e in lock(&self.entries).drain(..) {
            let mut samples = e.samples;
            if e.edges {
                if let Ok(s) = Sample::read(&e.fd, t_us) {
                    samples.push(s);
                }
            }
            let final_tcp_info = ccbench_probe::tcp_info(&e.fd).ok();
            out.insert(e.id, Sampled { samples, final_tcp_info });
        }
        out
    }
}
