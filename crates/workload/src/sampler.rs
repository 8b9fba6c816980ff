//! The one `TCP_INFO` sampler of every workload.

use std::collections::HashMap;
use std::os::fd::{AsFd, OwnedFd};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use ccbench_kernel_tcp::{CcInfo, Sample, TcpInfo};

use crate::common::{lock, micros_since};
use crate::{Account, Limits};
use crate::{SeriesSink, SocketId};

struct Tracked {
    id: SocketId,
    fd: OwnedFd,
    /// Sampled when it joined and once more at the end (see [`Sampler::track`]).
    edges: bool,
    /// What held it back, accumulated sample by sample (constant memory).
    account: Account,
}

/// One sample of `fd`: handed to the sink and to the socket's account.
fn sample(sink: &dyn SeriesSink, e: &mut Tracked, t_us: u64) {
    let Ok(ti) = ccbench_kernel_tcp::tcp_info(&e.fd) else { return };
    let Ok(cc) = ccbench_kernel_tcp::cc_info(&e.fd) else { return };
    let s = Sample::from_parts(t_us, &ti, cc);
    sink.tcp_sample(e.id, &s);
    let bbr = match &cc {
        Some(CcInfo::Bbr(b)) => Some(b),
        _ => None,
    };
    e.account.add(t_us, &ti, bbr);
}

/// Samples `TCP_INFO` of every sending socket registered with it and hands each sample to the
/// run's [`SeriesSink`] as it is taken, keeping none: its memory is one entry per socket,
/// however long the run. Sockets are registered by a duplicate descriptor, so a sample can
/// never hit a reused descriptor number; the duplicates are closed by [`Sampler::finish`] (or
/// when the sampler is dropped), after the workload's own handles.
pub(crate) struct Sampler<'s> {
    sink: &'s dyn SeriesSink,
    entries: Mutex<Vec<Tracked>>,
    /// Each socket's accounting, once [`Sampler::finish`] let it go.
    limits: Mutex<HashMap<SocketId, Limits>>,
    /// The application always has data to write (see `Account::saturating`).
    saturating: bool,
}

impl<'s> Sampler<'s> {
    pub(crate) fn new(sink: &'s dyn SeriesSink) -> Self {
        Sampler { sink, entries: Mutex::new(Vec::new()), limits: Mutex::new(HashMap::new()), saturating: false }
    }

    /// The same sampler for senders whose application always has data to write (a bulk flow
    /// without `--app-rate`).
    pub(crate) fn saturating(mut self, yes: bool) -> Self {
        self.saturating = yes;
        self
    }

    /// Registers a sending socket that exists before the sampler's first round and lives until
    /// its last (a bulk flow): the rounds cover its whole life.
    pub(crate) fn register<F: AsFd>(&self, id: SocketId, sock: F) {
        if let Ok(fd) = sock.as_fd().try_clone_to_owned() {
            lock(&self.entries).push(Tracked { id, fd, edges: false, account: Account::new(self.saturating) });
        }
    }

    /// Registers a sending socket that joins while the sampler runs (an HTTP connection): it is
    /// sampled at once, so even a connection shorter than the interval has a sample, and once
    /// more by [`Sampler::finish`].
    pub(crate) fn track<F: AsFd>(&self, id: SocketId, sock: F, epoch: Instant) {
        if let Ok(fd) = sock.as_fd().try_clone_to_owned() {
            let mut e = Tracked { id, fd, edges: true, account: Account::new(self.saturating) };
            sample(self.sink, &mut e, micros_since(epoch));
            lock(&self.entries).push(e);
        }
    }

    /// One round: every registered socket at `t_us`.
    fn round(&self, t_us: u64) {
        for e in lock(&self.entries).iter_mut() {
            sample(self.sink, e, t_us);
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

    /// Each socket's `TCP_INFO` read now (after a last sample of the sockets that joined while
    /// the sampler ran), and the sockets let go.
    pub(crate) fn finish(&self, epoch: Instant) -> HashMap<SocketId, Option<TcpInfo>> {
        let t_us = micros_since(epoch);
        let mut out = HashMap::new();
        let mut limits = lock(&self.limits);
        for mut e in lock(&self.entries).drain(..) {
            if e.edges {
                sample(self.sink, &mut e, t_us);
            }
            let last = ccbench_kernel_tcp::tcp_info(&e.fd).ok();
            if let Some(l) = e.account.finish(last.as_ref()) {
                limits.insert(e.id, l);
            }
            out.insert(e.id, last);
        }
        out
    }

    /// What held each socket back (after [`Sampler::finish`]); a socket that never sent has
    /// none.
    pub(crate) fn take_limits(&self) -> HashMap<SocketId, Limits> {
        std::mem::take(&mut *lock(&self.limits))
    }
}

#[cfg(test)]
mod tests {
    use std::cell::Cell;
    use std::collections::BTreeMap;
    use std::net::{TcpListener, TcpStream};

    use super::*;
    use crate::GoodputPoint;

    /// Counts what it is handed, per socket, and keeps nothing else.
    #[derive(Default)]
    struct Counting {
        tcp: Mutex<BTreeMap<SocketId, (u64, u64)>>,
    }

    impl SeriesSink for Counting {
        fn tcp_sample(&self, socket: SocketId, sample: &Sample) {
            let mut m = lock(&self.tcp);
            let (n, last_t) = m.entry(socket).or_default();
            assert!(sample.t_us >= *last_t, "samples out of order");
            *n += 1;
            *last_t = sample.t_us;
        }
        fn received(&self, _: u32, _: &GoodputPoint) {}
    }

    impl Sampler<'_> {
        /// What the sampler holds: its entries and the room allocated for them.
        fn stored(&self) -> (usize, usize) {
            let e = lock(&self.entries);
            (e.len(), e.capacity())
        }
    }

    #[test]
    fn a_long_run_hands_every_sample_over_and_keeps_none() {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let a = TcpStream::connect(listener.local_addr().unwrap()).unwrap();
        let (b, _) = listener.accept().unwrap();
        let epoch = Instant::now();
        let sink = Counting::default();
        let sampler = Sampler::new(&sink);
        // A flow (rounds only) and a connection that joins while it runs (sampled on joining
        // and at the end).
        sampler.register(SocketId::Flow(0), &a);
        sampler.track(SocketId::Connection(7), &b, epoch);
        let before = sampler.stored();
        assert_eq!(before.0, 2);

        // As many rounds as 10 ms sampling takes in 100 s, as fast as they go.
        const N: u64 = 10_000;
        let rounds = Cell::new(0u64);
        sampler.run(
            epoch,
            Instant::now(),
            Duration::ZERO,
            || rounds.get() < N,
            |_| {
                rounds.set(rounds.get() + 1);
                if rounds.get().is_multiple_of(1000) {
                    assert_eq!(sampler.stored(), before, "the sampler's state grew after {} rounds", rounds.get());
                }
            },
        );
        assert_eq!(rounds.get(), N);
        assert_eq!(sampler.stored(), before);
        let counted = |id| lock(&sink.tcp).get(&id).map_or(0, |c| c.0);
        assert_eq!(counted(SocketId::Flow(0)), N);
        assert_eq!(counted(SocketId::Connection(7)), N + 1);

        let finals = sampler.finish(epoch);
        assert!(finals[&SocketId::Flow(0)].is_some() && finals[&SocketId::Connection(7)].is_some());
        assert_eq!(counted(SocketId::Flow(0)), N, "a flow gets no extra sample at the end");
        assert_eq!(counted(SocketId::Connection(7)), N + 2, "a connection gets its last sample at the end");
        assert_eq!(sampler.stored().0, 0, "finish lets the sockets go");
    }
}
