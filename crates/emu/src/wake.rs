//! Waking a forwarder for a packet's due time, and measuring how well this host can do that
//! at all (its timer floor), so `bench emulator` can say whether the emulator or the host is
//! the limit of the emulator's lateness.
//!
//! A timed sleep on a VM returns tens of microseconds after the deadline (the hrtimer fires,
//! then the vCPU must be scheduled), and the longer the sleep the later. [`EarlyWake`] learns
//! that oversleep from the sleeps that timed out, per class of sleep length, asks the kernel
//! for a wake-up that much earlier, and spins on the clock for the rest: the deadline is met
//! without a busy loop between packets, because the spin is bounded (by
//! [`EarlyWake::spin_bound`], a small share of a long sleep) and only as long as the
//! oversleep's estimate. What no spin can cover is the hypervisor descheduling the whole VM
//! for milliseconds (docs/performance.md).

use std::os::fd::RawFd;
use std::time::Instant as StdInstant;

use ccbench_link::time::{self, Duration};
use ccbench_link::DelayHistogram;

use crate::report::DelaySummary;

/// The default bound on the spin before a deadline.
pub const DEFAULT_MAX_SPIN: Duration = Duration::from_micros(30);

/// Learns how late the host's timed sleeps return, as a running upper quantile per class of
/// sleep length, and says how much earlier than a deadline to ask to be woken.
///
/// Per class because the oversleep grows with the sleep: on this VM (`docs/performance.md`,
/// "Sparse traffic") a 50 µs `ppoll` returned 12 µs late at the median and a 10 ms one 49 µs
/// late (p90 18 vs 65 µs). One estimate, learnt mostly from the short sleeps between a
/// burst's packets and bounded by 30 µs, woke every long sleep (a sparse flow's next
/// burst, one delay away) 20–40 µs late.
#[derive(Clone, Debug)]
pub struct EarlyWake {
    max_spin: Duration,
    /// Estimate of the oversleep's `QUANTILE` quantile per class of sleep ([`class_of`]), in
    /// nanoseconds.
    estimate_ns: [f64; CLASSES],
}

/// The quantile of the oversleep the estimate tracks: a deadline is met by the sleep plus
/// the spin this often; the rest of the time the wake-up is late by what exceeded it.
const QUANTILE: f64 = 0.9;
/// A sleep this many times the lead or longer is worth waking early for.
const SPARSE: u64 = 4;
/// Each class's bound on the spin is this many observations' steps of the quantile tracker,
/// so that each class settles in a few hundred sleeps (200 ns a step under the default 30 µs).
const STEPS_PER_BOUND: f64 = 150.0;
/// The shortest sleep of each class but the first (which starts at zero): below 250 µs (a
/// burst's packets, 100 Mbit/s and faster), up to 1 ms, up to 4 ms, and longer (a sparse
/// flow's bursts, a delay apart; the 10 ms sampling tick).
const CLASS_FROM: [Duration; CLASSES - 1] = [Duration::from_micros(250), Duration::from_millis(1), Duration::from_millis(4)];
const CLASSES: usize = 4;
/// A class's spin may take up to this fraction of its shortest sleep (1/16: 62 µs after a
/// 1 ms sleep, 250 µs after 4 ms), never less than the bound given to [`EarlyWake::new`]:
/// the spin of a long sleep costs a few percent of a CPU at most, and as much as the host's
/// oversleep of it only.
const SPIN_SHARE: u64 = 16;

/// The class of a sleep of `sleep`: the index of the last of [`CLASS_FROM`] it reaches, plus one.
fn class_of(sleep: Duration) -> usize {
    CLASS_FROM.iter().take_while(|&&from| sleep >= from).count()
}

impl EarlyWake {
    /// `max_spin` zero turns it off: every sleep is for the deadline itself, as before.
    pub fn new(max_spin: Duration) -> Self {
        EarlyWake { max_spin, estimate_ns: [0.0; CLASSES] }
    }

    /// The bound given to [`EarlyWake::new`]: the bound of the shortest sleeps' spin.
    pub fn max_spin(&self) -> Duration {
        self.max_spin
    }

    /// The bound on the spin after a sleep of class `class`: `max_spin`, or a share of the
    /// class's shortest sleep when that is more; zero when early wake-ups are off.
    fn bound(&self, class: usize) -> Duration {
        if self.max_spin == Duration::ZERO || class == 0 {
            return self.max_spin;
        }
        self.max_spin.max(Duration::from_nanos(CLASS_FROM[class - 1].as_nanos() / SPIN_SHARE))
    }

    /// How much earlier than a deadline to wake from the shortest sleeps (below 250 µs): the
    /// oversleep's estimate there, within the bound.
    pub fn lead(&self) -> Duration {
        self.class_lead(0)
    }

    fn class_lead(&self, class: usize) -> Duration {
        Duration::from_nanos(self.estimate_ns[class] as u64).min(self.bound(class))
    }

    /// How much earlier than a deadline `sleep` away to wake: the estimate of its class. Only
    /// a sleep several times the lead gets one: where deadlines come closer together (a
    /// gigabit, whose wake-ups are a batching gap apart) the spin would fill the whole gap
    /// and double the CPU for a microsecond or two, as measured (docs/performance.md); there
    /// the sleep is for the deadline itself.
    pub fn lead_for(&self, sleep: Duration) -> Duration {
        let lead = self.class_lead(class_of(sleep));
        if sleep >= SPARSE * lead {
            lead
        } else {
            Duration::ZERO
        }
    }

    /// The most to spin after a timed sleep of `sleep` before its deadline: the bound of its
    /// class (a wake-up early on purpose, or a sleep the kernel ended early).
    pub fn spin_bound(&self, sleep: Duration) -> Duration {
        self.bound(class_of(sleep))
    }

    /// Records a timed sleep for a deadline `wait` away (as asked of [`EarlyWake::lead_for`],
    /// so the lead and what it learns from belong to one class) that returned `oversleep`
    /// after the time it asked for.
    pub fn observe(&mut self, wait: Duration, oversleep: Duration) {
        if self.max_spin == Duration::ZERO {
            return;
        }
        let class = class_of(wait);
        let bound = self.bound(class).as_nanos() as f64;
        let step = bound / STEPS_PER_BOUND;
        // A stochastic quantile estimate: up by q·step when below, down by (1−q)·step when
        // above, so it rests where a fraction q of the observations fall under it.
        let x = oversleep.as_nanos() as f64;
        let e = &mut self.estimate_ns[class];
        if x > *e {
            *e += step * QUANTILE;
        } else {
            *e -= step * (1.0 - QUANTILE);
        }
        *e = e.clamp(0.0, bound);
    }
}

/// What a forwarder does next for a deadline `wake`, decided from the clock alone so that the
/// choice is tested on a virtual clock ([`plan`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Wait {
    /// The deadline has passed: transmit now.
    Ready,
    /// Sleep (cut short by a readable device) for `sleep`; then [`spin_after`] with `spin`
    /// says whether to spin the rest.
    Sleep { sleep: Duration, spin: Duration },
}

/// Decides how to wait from `now` for `wake`, `early` saying how much earlier than a deadline
/// the kernel should be asked to wake (by the length of the sleep): sleep until the lead
/// before it, then spin at most the bound of that sleep's class. Every deadline is slept for,
/// so nothing busy-loops between packets; a gigabit's deadlines, a batching gap apart, get no
/// lead ([`EarlyWake::lead_for`]) and are slept for whole.
pub(crate) fn plan(now: time::Instant, wake: time::Instant, early: &EarlyWake) -> Wait {
    if wake <= now {
        return Wait::Ready;
    }
    let whole = wake - now;
    // `lead_for` gives a lead only to a sleep at least four leads long, so the wake-up asked
    // for is always after `now`.
    Wait::Sleep { sleep: whole - early.lead_for(whole), spin: early.spin_bound(whole) }
}

/// After a timed sleep returned at `now`: spin until `wake` when it is still ahead by no more
/// than `max_spin` (a wake-up early on purpose, or a sleep the kernel ended early); a deadline
/// further off is slept for again.
pub(crate) fn spin_after(now: time::Instant, wake: time::Instant, max_spin: Duration) -> bool {
    wake > now && wake - now <= max_spin
}

/// Sleeps until `fd` is readable or `timeout` passes; true when the timeout passed. ppoll
/// takes nanoseconds (poll only milliseconds) and uses high-resolution timers.
pub(crate) fn ppoll_readable(fd: RawFd, timeout: Duration) -> bool {
    let mut pfd = libc::pollfd { fd, events: libc::POLLIN, revents: 0 };
    let ns = timeout.as_nanos();
    let ts = libc::timespec { tv_sec: (ns / 1_000_000_000) as libc::time_t, tv_nsec: (ns % 1_000_000_000) as libc::c_long };
    // SAFETY: one valid pollfd, a valid timespec, no signal mask change.
    let n = unsafe { libc::ppoll(&mut pfd, 1, &ts, std::ptr::null()) };
    n == 0
}

/// As [`ppoll_readable`] for two devices: true when the timeout passed with neither readable.
pub(crate) fn ppoll_either(fds: [RawFd; 2], timeout: Duration) -> bool {
    let mut pfds = fds.map(|fd| libc::pollfd { fd, events: libc::POLLIN, revents: 0 });
    let ns = timeout.as_nanos();
    let ts = libc::timespec { tv_sec: (ns / 1_000_000_000) as libc::time_t, tv_nsec: (ns % 1_000_000_000) as libc::c_long };
    // SAFETY: two valid pollfds, a valid timespec, no signal mask change.
    let n = unsafe { libc::ppoll(pfds.as_mut_ptr(), 2, &ts, std::ptr::null()) };
    n == 0
}

/// Gives the calling thread what a forwarder asks for: a 1 ns timer slack (the default 50 µs
/// would smear every departure) and a real-time priority, so that on a small machine the
/// traffic's own threads cannot delay its wake-ups by milliseconds. A forwarder sleeps
/// between packets and the kernel's RT throttling bounds it anyway. Failure (no
/// CAP_SYS_NICE) only costs accuracy.
pub(crate) fn prepare_thread() {
    // SAFETY: prctl on the calling thread only.
    unsafe { libc::prctl(libc::PR_SET_TIMERSLACK, 1 as libc::c_ulong) };
    let param = libc::sched_param { sched_priority: 10 };
    // SAFETY: changes the scheduling policy of the calling thread only.
    let _ = unsafe { libc::sched_setscheduler(0, libc::SCHED_FIFO, &param) };
}

/// This host's own timer floor: how late a thread set up as a forwarder is (same slack,
/// same priority) when it sleeps `samples` times for an absolute deadline `gap` ahead
/// (`clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME)`), with no emulator involved. Runs
/// on a thread of its own so the caller's scheduling is left alone.
pub fn host_timer_floor(samples: usize, gap: std::time::Duration) -> DelaySummary {
    let measure = move || {
        prepare_thread();
        let mut late = DelayHistogram::new();
        for _ in 0..samples {
            late.record(oversleep_once(gap));
        }
        DelaySummary::of(&late)
    };
    std::thread::Builder::new().name("ccbench-timer".into()).spawn(measure).ok().and_then(|t| t.join().ok()).unwrap_or_default()
}

/// How late a thread set up as a forwarder wakes for one absolute deadline `gap` ahead
/// (`clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME)`).
fn oversleep_once(gap: std::time::Duration) -> Duration {
    let mut now = libc::timespec { tv_sec: 0, tv_nsec: 0 };
    // SAFETY: writes the timespec we own.
    unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut now) };
    let due_ns = now.tv_sec as i128 * 1_000_000_000 + now.tv_nsec as i128 + gap.as_nanos() as i128;
    let due = libc::timespec { tv_sec: (due_ns / 1_000_000_000) as libc::time_t, tv_nsec: (due_ns % 1_000_000_000) as libc::c_long };
    // SAFETY: a valid absolute timespec; no remainder is asked for with TIMER_ABSTIME.
    unsafe { libc::clock_nanosleep(libc::CLOCK_MONOTONIC, libc::TIMER_ABSTIME, &due, std::ptr::null_mut()) };
    // SAFETY: as above.
    unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut now) };
    let woke_ns = now.tv_sec as i128 * 1_000_000_000 + now.tv_nsec as i128;
    Duration::from_nanos((woke_ns - due_ns).max(0) as u64)
}

/// The host's timer floor *while something runs*: a thread set up as a forwarder (same slack,
/// same real-time priority) sleeps for absolute deadlines `gap` apart until stopped. Beside a
/// cell's delay error it tells the host's lateness under that very load (the traffic's
/// softirq work and the endpoints' threads share the CPUs) from the emulator's own: the idle
/// floor of [`host_timer_floor`] cannot, since a loaded host wakes every thread later.
///
/// The gap is long against the forwarders' (1 ms against 12–120 µs between departures), so the
/// probe costs about a thousand wake-ups a second and does not load the cell it measures.
pub struct TimerProbe {
    stop: std::sync::Arc<std::sync::atomic::AtomicBool>,
    thread: Option<std::thread::JoinHandle<DelaySummary>>,
}

impl TimerProbe {
    pub fn start(gap: std::time::Duration) -> Self {
        use std::sync::atomic::{AtomicBool, Ordering};
        let stop = std::sync::Arc::new(AtomicBool::new(false));
        let flag = stop.clone();
        let thread = std::thread::Builder::new()
            .name("ccbench-timer".into())
            .spawn(move || {
                prepare_thread();
                let mut late = DelayHistogram::new();
                while !flag.load(Ordering::Relaxed) {
                    late.record(oversleep_once(gap));
                }
                DelaySummary::of(&late)
            })
            .ok();
        TimerProbe { stop, thread }
    }

    /// Stops the probe and summarises every sleep it made (empty when its thread could not start).
    pub fn finish(mut self) -> DelaySummary {
        self.stop.store(true, std::sync::atomic::Ordering::Relaxed);
        self.thread.take().and_then(|t| t.join().ok()).unwrap_or_default()
    }
}

/// Spins until `deadline` (the spin [`EarlyWake`] bounded).
pub(crate) fn spin_until(deadline: StdInstant) {
    while StdInstant::now() < deadline {
        std::hint::spin_loop();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn us(n: u64) -> Duration {
        Duration::from_micros(n)
    }

    #[test]
    fn the_lead_settles_at_the_upper_quantile_of_the_oversleep() {
        let mut w = EarlyWake::new(us(30));
        // Oversleeps 10..=19 µs evenly: the 0.9 quantile is about 19 µs.
        for i in 0..20_000u64 {
            w.observe(us(100), us(10 + i % 10));
        }
        let lead = w.lead().as_micros_f64();
        assert!((18.0..=19.5).contains(&lead), "lead {lead} µs");
    }

    #[test]
    fn the_lead_never_exceeds_the_spin_bound() {
        let mut w = EarlyWake::new(us(5));
        for _ in 0..10_000 {
            w.observe(us(100), us(200));
        }
        assert_eq!(w.lead(), us(5));
    }

    #[test]
    fn only_sleeps_several_times_the_lead_wake_early() {
        let mut w = EarlyWake::new(us(30));
        for _ in 0..10_000 {
            w.observe(us(100), us(10));
        }
        let lead = w.lead();
        assert!(lead > us(9) && lead <= us(10), "lead {lead:?}");
        assert_eq!(w.lead_for(us(120)), lead, "100 Mbit/s: 120 µs between packets");
        assert_eq!(w.lead_for(us(25)), Duration::ZERO, "a gigabit's 25 µs batching gap");
    }

    #[test]
    fn a_zero_bound_turns_early_wake_off() {
        let mut w = EarlyWake::new(Duration::ZERO);
        for _ in 0..1000 {
            w.observe(us(100), us(50));
        }
        assert_eq!(w.lead(), Duration::ZERO);
    }

    #[test]
    fn the_lead_follows_the_host_down_when_it_gets_quicker() {
        let mut w = EarlyWake::new(us(30));
        for _ in 0..5000 {
            w.observe(us(100), us(25));
        }
        for _ in 0..20_000 {
            w.observe(us(100), us(2));
        }
        assert!(w.lead() <= us(3), "lead {:?}", w.lead());
    }

    fn at(n: u64) -> time::Instant {
        time::Instant::EPOCH + us(n)
    }

    #[test]
    fn a_deadline_passed_is_ready_and_a_far_one_is_slept_for() {
        let w = EarlyWake::new(us(30));
        assert_eq!(plan(at(100), at(100), &w), Wait::Ready);
        assert_eq!(plan(at(100), at(90), &w), Wait::Ready);
        // Nothing learnt yet: no lead, the sleep is for the deadline itself.
        assert_eq!(plan(at(100), at(5_100), &w), Wait::Sleep { sleep: us(5_000), spin: us(250) });
    }

    #[test]
    fn a_sparse_deadline_is_slept_for_up_to_the_lead_then_spun() {
        let mut w = EarlyWake::new(us(30));
        for _ in 0..10_000 {
            w.observe(us(100), us(10));
        }
        let lead = w.lead();
        // 100 Mbit/s, 120 µs away: woken a lead early.
        assert_eq!(plan(at(0), at(120), &w), Wait::Sleep { sleep: us(120) - lead, spin: us(30) });
        // A gigabit's 25 µs gap: slept for whole, no spin of the gap.
        assert_eq!(plan(at(0), at(25), &w), Wait::Sleep { sleep: us(25), spin: us(30) });
        // Woken the lead early: the rest is spun, within the bound only.
        assert!(spin_after(at(120) - lead, at(120), w.max_spin()));
        assert!(spin_after(at(0), at(30), us(30)));
        assert!(!spin_after(at(0), at(31), us(30)), "further than the bound: sleep again");
        assert!(!spin_after(at(120), at(120), us(30)), "due: nothing to spin");
        assert!(!spin_after(at(0), at(1), Duration::ZERO), "the bound zero never spins");
    }

    #[test]
    fn the_spin_bound_zero_never_spins() {
        let w = EarlyWake::new(Duration::ZERO);
        for gap in [1, 10, 30, 120, 10_000] {
            assert_eq!(plan(at(0), at(gap), &w), Wait::Sleep { sleep: us(gap), spin: Duration::ZERO }, "gap {gap} µs");
        }
    }

    #[test]
    fn long_sleeps_get_a_longer_bound_short_ones_keep_theirs() {
        let w = EarlyWake::new(us(30));
        assert_eq!(w.spin_bound(us(120)), us(30));
        assert_eq!(w.spin_bound(us(600)), us(30), "1/16 of 250 µs is under the given bound");
        assert_eq!(w.spin_bound(us(2_000)), Duration::from_nanos(62_500));
        assert_eq!(w.spin_bound(us(10_000)), us(250));
        let off = EarlyWake::new(Duration::ZERO);
        assert_eq!(off.spin_bound(us(10_000)), Duration::ZERO, "off is off for every class");
    }

    /// A host whose timed sleeps return later the longer they are, as measured on this VM
    /// (`ppoll` p50 12 µs late after 50 µs, 49 µs after 10 ms): 12 µs + 3.7 µs per ms asked.
    fn lengthening_host(asked: Duration) -> Duration {
        Duration::from_nanos(12_000 + asked.as_nanos() * 37 / 10_000)
    }

    /// A sparse flow on a virtual clock: bursts of 9 departures 120 µs apart, each burst one
    /// 10 ms wait after the last. Returns the lateness of every departure after the first
    /// `warm_up` bursts, short and long waits apart.
    fn sparse_flow(w: &mut EarlyWake, bursts: usize, warm_up: usize) -> (Vec<Duration>, Vec<Duration>) {
        let (mut short, mut long) = (Vec::new(), Vec::new());
        let mut now = time::Instant::EPOCH;
        for burst in 0..bursts {
            for i in 0..10 {
                let gap = if i == 0 { us(10_000) } else { us(120) };
                let wake = now + gap;
                let Wait::Sleep { sleep, spin } = plan(now, wake, w) else { panic!("a deadline ahead is slept for") };
                let woke = now + sleep + lengthening_host(sleep);
                w.observe(wake - now, woke - (now + sleep));
                // Spun to the deadline, or late by what the sleep overran it.
                let left = if spin_after(woke, wake, spin) { wake } else { woke.max(wake) };
                if burst >= warm_up {
                    if i == 0 { &mut long } else { &mut short }.push(left - wake);
                }
                now = left;
            }
        }
        (short, long)
    }

    #[test]
    fn a_sparse_flows_long_sleeps_learn_their_own_lead() {
        let mut w = EarlyWake::new(us(30));
        // 600 bursts: 6 s of a flow with a burst every 10 ms; the first 300 learn.
        let (short, long) = sparse_flow(&mut w, 600, 300);
        let worst = |v: &[Duration]| v.iter().copied().max().unwrap();
        // A 10 ms sleep returns 49 µs late here, beyond the 30 µs bound of short sleeps: with
        // one estimate every burst's first packet left about 20 µs late.
        assert!(worst(&long) <= us(2), "long sleeps late by up to {:?}", worst(&long));
        assert!(worst(&short) <= us(1), "short sleeps late by up to {:?}", worst(&short));
    }

    #[test]
    fn the_probe_measures_sleeps_until_it_is_stopped() {
        let probe = TimerProbe::start(std::time::Duration::from_micros(200));
        std::thread::sleep(std::time::Duration::from_millis(50));
        let floor = probe.finish();
        // 50 ms of 200 µs sleeps: well over a few dozen, whatever the host's oversleep.
        assert!(floor.count >= 20, "{} sleeps", floor.count);
        assert!(floor.p99_us >= floor.p50_us);
    }

    #[test]
    fn the_host_floor_measures_every_sleep() {
        let floor = host_timer_floor(20, std::time::Duration::from_micros(100));
        assert_eq!(floor.count, 20);
        assert!(floor.p99_us >= floor.p50_us);
    }
}
