//! Pacing: packet `i` of a train is due when the IP bytes before it, at the train's rate, have
//! had time to leave. A sender that falls behind (descheduled) catches up in a burst, but by no
//! more than [`MAX_CATCH_UP`]: bursts beyond that would measure the host, not the path.

use std::time::{Duration, Instant};

const MAX_CATCH_UP: Duration = Duration::from_millis(20);

pub struct Pacer {
    start: Instant,
    ns_per_packet: f64,
    next: u64,
    count: u64,
}

impl Pacer {
    pub fn new(rate_bps: u64, ip_len: u32, count: u32) -> Self {
        let ns_per_packet = f64::from(ip_len) * 8.0 * 1e9 / rate_bps.max(1) as f64;
        Pacer { start: Instant::now(), ns_per_packet, next: 0, count: u64::from(count) }
    }

    fn due(&self, i: u64) -> Instant {
        // A day out is as good as never: the session's time limit ends it long before.
        let offset = Duration::from_nanos((i as f64 * self.ns_per_packet) as u64).min(Duration::from_secs(86_400));
        self.start + offset
    }

    /// The sequence numbers due by `now`, each taken once.
    pub fn take_due(&mut self, now: Instant) -> std::ops::Range<u64> {
        if self.next < self.count && now.saturating_duration_since(self.due(self.next)) > MAX_CATCH_UP {
            // Too far behind: shift the schedule instead of bursting.
            self.start += now.saturating_duration_since(self.due(self.next)) - MAX_CATCH_UP;
        }
        let first = self.next;
        while self.next < self.count && self.due(self.next) <= now {
            self.next += 1;
        }
        first..self.next
    }

    pub fn done(&self) -> bool {
        self.next >= self.count
    }

    /// When the next packet is due (`None` when all are sent).
    pub fn next_due(&self) -> Option<Instant> {
        (!self.done()).then(|| self.due(self.next))
    }
}

/// Sleeps until `at`, but no longer than `cap` (so the caller can look at other schedules).
pub fn sleep_until(at: Instant, cap: Duration) {
    let wait = at.saturating_duration_since(Instant::now()).min(cap);
    if !wait.is_zero() {
        std::thread::sleep(wait);
    }
}
