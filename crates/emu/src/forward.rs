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
            let now = self.now();
            for _ in 0..READ_BATCH {
                match self.from.recv(&mut read_buf) {
                    Ok(Some(n)) => self.shell.handle_read(now, &read_buf[..n]),
                    Ok(None) => break,
                    Err(e) => {
                        self.shell.on_read_error(&e);
                        break;
                    }
                }
            }
            let now = self.now();
            self.transmit(now);
            let wake = self.shell.poll_timeout();
            self.sleep_until(wake);
        }
        let now = self.now();
        self.shell.finish(now, thread_cpu_seconds())
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
    /// [`EarlyWake::lead_for`] before `wake`, then spins for the rest (at most the lead).
    fn sleep_until(&mut self, wake: time::Instant) {
        let now = self.now();
        let Wait::Sleep { sleep } = wake::plan(now, wake, &self.early) else {
            return;
        };
        if sleep > time::Duration::ZERO {
            if !wake::ppoll_readable(self.from.as_fd().as_raw_fd(), sleep) {
                // A packet arrived: it is read at once, the deadline is met on a later turn.
                return;
            }
            let woke = self.now();
            self.early.observe(woke - (now + sleep));
        }
        if wake::spin_after(self.now(), wake, self.early.max_spin()) {
            wake::spin_until(self.epoch + wake.since_epoch().to_std());
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
