//! One direction of the path on its own thread: a short read / poll / write loop around a
//! [`Shell`], which does all the work.

use std::os::fd::{AsFd, AsRawFd};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Instant;

use ccbench_link::time;
use ccbench_netns::Tun;

use crate::report::DirectionReport;
use crate::shell::{Shell, MAX_READ};
use crate::wake::{self, EarlyWake, Wait};

/// Packets read per wake-up before delivering again, so a flood of arrivals cannot delay
/// departures that are already due.
const READ_BATCH: usize = 256;

pub(crate) struct Forwarder {
    pub from: Arc<Tun>,
    pub to: Arc<Tun>,
    pub epoch: Instant,
    pub stop: Arc<AtomicBool>,
    pub shell: Shell,
    /// How much before a deadline to wake and spin ([`crate::wake`]).
    pub early: EarlyWake,
}

impl Forwarder {
    /// The path's clock: the time since `epoch`.
    fn now(&self) -> time::Instant {
        crate::clock_at(self.epoch, Instant::now())
    }

    pub fn run(mut self) -> DirectionReport {
        wake::prepare_thread();
        // One large buffer: a read may bring a 64 KB superframe.
        let mut read_buf = vec![0u8; MAX_READ];
        while !self.stop.load(Ordering::Relaxed) {
            // Departures already due go out before a batch of reads can delay them.
            let now = self.now();
            if self.shell.poll_timeout() <= now {
                self.transmit(now);
            }
            self.read_batch(&mut read_buf);
            let now = self.now();
            self.transmit(now);
            let wake = self.shell.poll_timeout();
            self.sleep_until(wake);
        }
        let now = self.now();
        self.shell.finish(now, thread_cpu_seconds())
    }

    /// Reads what the device holds, up to [`READ_BATCH`] packets, into the shell.
    fn read_batch(&mut self, read_buf: &mut [u8]) {
        let now = self.now();
        for _ in 0..READ_BATCH {
            match self.from.recv(read_buf) {
                Ok(Some(n)) => self.shell.handle_read(now, &read_buf[..n]),
                Ok(None) => break,
                Err(e) => {
                    self.shell.on_read_error(&e);
                    break;
                }
            }
        }
    }

    /// Writes every departure due at `now`.
    fn transmit(&mut self, now: time::Instant) {
        let to = &self.to;
        while let Some(sent) = self.shell.poll_transmit(now).map(|bytes| to.send(bytes)) {
            if let Err(e) = sent {
                self.shell.on_write_error(&e);
            }
        }
    }

    /// Sleeps until `wake` or until a packet can be read: asks the kernel for a wake-up
    /// [`EarlyWake::lead_for`] before `wake`, then spins for the rest (at most the bound of
    /// the sleep's class).
    fn sleep_until(&mut self, wake: time::Instant) {
        let now = self.now();
        let Wait::Sleep { sleep, spin } = wake::plan(now, wake, &self.early) else {
            return;
        };
        if sleep > time::Duration::ZERO {
            if !wake::ppoll_readable(self.from.as_fd().as_raw_fd(), sleep) {
                // A packet arrived: it is read at once, the deadline is met on a later turn.
                return;
            }
            let woke = self.now();
            self.early.observe(wake - now, woke - (now + sleep));
        }
        if wake::spin_after(self.now(), wake, spin) {
            wake::spin_until(self.epoch + wake.since_epoch().to_std());
        }
    }
}

/// Both directions on one thread, for paths slow enough that one core carries them: a
/// departure written into one namespace makes that namespace's stack answer at once (an ACK
/// for data, new data for an ACK), in the same system call, so the answer is read on the same
/// wake-up instead of waking the other direction's thread on the other CPU. On a VM that
/// cross-CPU wake-up (an inter-processor interrupt through the hypervisor, two context
/// switches) is the largest cost per packet at ordinary rates (docs/performance.md).
pub(crate) struct Duplex {
    pub down: Forwarder,
    pub up: Forwarder,
}

impl Duplex {
    pub fn run(mut self) -> [DirectionReport; 2] {
        wake::prepare_thread();
        let mut read_buf = vec![0u8; MAX_READ];
        let stop = self.down.stop.clone();
        while !stop.load(Ordering::Relaxed) {
            for f in [&mut self.down, &mut self.up] {
                let now = f.now();
                if f.shell.poll_timeout() <= now {
                    f.transmit(now);
                }
            }
            for f in [&mut self.down, &mut self.up] {
                f.read_batch(&mut read_buf);
            }
            for f in [&mut self.down, &mut self.up] {
                let now = f.now();
                f.transmit(now);
            }
            self.sleep_until_either();
        }
        // One thread's CPU served both: each direction is given half, so that their sum (what
        // `bench emulator` and the run's provenance add up) is the thread's.
        let cpu = thread_cpu_seconds() / 2.0;
        let (down_now, up_now) = (self.down.now(), self.up.now());
        let mut reports = [self.down.shell.finish(down_now, cpu), self.up.shell.finish(up_now, cpu)];
        for r in &mut reports {
            r.one_thread = true;
        }
        reports
    }

    /// Sleeps until the earlier of the two directions' deadlines, or until either device has a
    /// packet to read; spins the rest of a deadline woken early for, as [`Forwarder`] does.
    fn sleep_until_either(&mut self) {
        let wake = self.down.shell.poll_timeout().min(self.up.shell.poll_timeout());
        let now = self.down.now();
        let Wait::Sleep { sleep, spin } = wake::plan(now, wake, &self.down.early) else {
            return;
        };
        if sleep > time::Duration::ZERO {
            let fds = [self.down.from.as_fd().as_raw_fd(), self.up.from.as_fd().as_raw_fd()];
            if !wake::ppoll_either(fds, sleep) {
                return;
            }
            let woke = self.down.now();
            self.down.early.observe(wake - now, woke - (now + sleep));
        }
        if wake::spin_after(self.down.now(), wake, spin) {
            wake::spin_until(self.down.epoch + wake.since_epoch().to_std());
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
