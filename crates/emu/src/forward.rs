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

/// Packets read per wake-up before delivering again, so a flood of arrivals cannot delay
/// departures that are already due.
const READ_BATCH: usize = 256;

pub(crate) struct Forwarder {
    pub from: Arc<Tun>,
    pub to: Arc<Tun>,
    pub epoch: Instant,
    pub stop: Arc<AtomicBool>,
    pub shell: Shell,
}

impl Forwarder {
    /// The path's clock: the time since `epoch`.
    fn now(&self) -> time::Instant {
        crate::clock_at(self.epoch, Instant::now())
    }

    pub fn run(mut self) -> DirectionReport {
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
        // One large buffer: a read may bring a 64 KB superframe.
        let mut read_buf = vec![0u8; MAX_READ];
        while !self.stop.load(Ordering::Relaxed) {
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
            while let Some(sent) = self.shell.poll_transmit(now).map(|bytes| self.to.send(bytes)) {
                if let Err(e) = sent {
                    self.shell.on_write_error(&e);
                }
            }
            let wake = self.shell.poll_timeout();
            let now = self.now();
            if wake > now {
                wait_readable(&self.from, wake - now);
            }
        }
        let now = self.now();
        self.shell.finish(now, thread_cpu_seconds())
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

/// Sleeps until `fd` is readable or `timeout` passes, with nanosecond resolution (ppoll
/// uses high-resolution timers, unlike poll's milliseconds).
fn wait_readable(tun: &Tun, timeout: time::Duration) {
    let mut pfd = libc::pollfd { fd: tun.as_fd().as_raw_fd(), events: libc::POLLIN, revents: 0 };
    let ns = timeout.as_nanos();
    let ts = libc::timespec { tv_sec: (ns / 1_000_000_000) as libc::time_t, tv_nsec: (ns % 1_000_000_000) as libc::c_long };
    // SAFETY: one valid pollfd, a valid timespec, no signal mask change.
    unsafe { libc::ppoll(&mut pfd, 1, &ts, std::ptr::null()) };
}
