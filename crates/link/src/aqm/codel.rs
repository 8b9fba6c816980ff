//! CoDel (RFC 8289): its parameters, its queue, and the state machine of the RFC's section 5
//! pseudocode, which FQ-CoDel runs once per flow.
//!
//! The state machine reaches its queue through `CodelHead`; it holds the controller's
//! state, the per-packet verdict and the RFC's `dequeue()` loop that interleaves verdicts and
//! drops.

use serde::{Deserialize, Serialize};

use super::{AqmConfig, Drops, Fifo, QueueDiscipline, Queued};
use crate::buffer::Buffer;
use crate::error::LinkConfigError;
use crate::outcome::DropCause;
use crate::time::{Duration, Instant};

/// RFC 8289 section 4.2's default target.
pub const CODEL_DEFAULT_TARGET: Duration = Duration::from_millis(5);
/// RFC 8289 section 4.3's default interval.
pub const CODEL_DEFAULT_INTERVAL: Duration = Duration::from_millis(100);

/// CoDel's parameters (`--aqm codel[:target=5ms,interval=100ms]`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(default)]
pub struct Codel {
    /// Acceptable standing queue delay (section 4.2).
    pub target_ns: Duration,
    /// The window a queue must stay above target before the first drop (section 4.3).
    pub interval_ns: Duration,
    /// Mark ECN-capable packets CE instead of dropping them (RFC 8289 section 5's "drop or
    /// mark", RFC 3168 section 5), as Linux's `codel ecn`; Not-ECT packets are still dropped.
    #[serde(default, skip_serializing_if = "crate::ecn::is_off")]
    pub ecn: bool,
    /// The step marker for L4S: every ECT(1) packet that waited longer than this is marked CE
    /// whatever the control law says, as Linux's `ce_threshold` with the ECT(1) selector
    /// (RFC 9331 section 5.2: a shallow, immediate threshold for L4S traffic). `None`: off.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ce_threshold_ns: Option<Duration>,
}

impl Default for Codel {
    fn default() -> Self {
        Codel { target_ns: CODEL_DEFAULT_TARGET, interval_ns: CODEL_DEFAULT_INTERVAL, ecn: false, ce_threshold_ns: None }
    }
}

impl AqmConfig for Codel {
    type Queue<P> = CodelQueue<P>;
    const KEYS: &'static str = "target=5ms,interval=100ms,ecn=off,ce_threshold=off";

    fn set(&mut self, key: &str, value: &str) -> Result<(), String> {
        match key {
            "target" => self.target_ns = super::duration(key, value)?,
            "interval" => self.interval_ns = super::positive_duration(key, value)?,
            "ecn" => self.ecn = crate::ecn::on_off(key, value)?,
            "ce_threshold" => self.ce_threshold_ns = ce_threshold(key, value)?,
            _ => return Err(format!("unknown key {key:?}")),
        }
        Ok(())
    }

    fn validate(&self) -> Result<(), LinkConfigError> {
        if self.interval_ns.is_zero() {
            return Err(LinkConfigError::CodelZeroInterval);
        }
        Ok(())
    }

    fn describe(&self) -> String {
        format!("CoDel (target {}, interval {}{})", super::ms(self.target_ns), super::ms(self.interval_ns), ecn_words(self.ecn, self.ce_threshold_ns))
    }

    fn build<P>(&self, buffer: Buffer, _seed: u64) -> CodelQueue<P> {
        CodelQueue { fifo: Fifo::default(), buffer, state: CodelState::new(self.target_ns, self.interval_ns).with_ecn(self.ecn, self.ce_threshold_ns) }
    }

    fn enable_ecn(&mut self) -> bool {
        self.ecn = true;
        true
    }

    fn marks(&self) -> bool {
        self.ecn || self.ce_threshold_ns.is_some()
    }
}

/// A `ce_threshold=DURATION|off` parameter.
pub(crate) fn ce_threshold(key: &str, v: &str) -> Result<Option<Duration>, String> {
    match v {
        "off" => Ok(None),
        _ => super::duration(key, v).map(Some).map_err(|e| format!("{e}, or off")),
    }
}

/// `, ECN, step 1 ms for ECT(1)` for a description.
pub(crate) fn ecn_words(ecn: bool, ce_threshold: Option<Duration>) -> String {
    let mut s = String::new();
    if ecn {
        s.push_str(", ECN");
    }
    if let Some(t) = ce_threshold {
        s.push_str(&format!(", CE above {} for ECT(1)", super::ms(t)));
    }
    s
}

impl super::Aqm {
    /// CoDel with the RFC 8289 defaults (5 ms target, 100 ms interval).
    pub fn codel() -> Self {
        super::Aqm::Codel(Codel::default())
    }
}

/// A FIFO judged by CoDel when packets leave it; arrivals finding the buffer full are dropped
/// (drop-tail), as RFC 8289 section 4.4 leaves the buffer's size to the queue.
pub struct CodelQueue<P> {
    fifo: Fifo<P>,
    buffer: Buffer,
    state: CodelState,
}

impl<P> QueueDiscipline<P> for CodelQueue<P> {
    fn enqueue(&mut self, _now: Instant, q: Queued<P>, server_idle: bool, _drops: &mut Drops<P>) -> Result<(), (Queued<P>, DropCause)> {
        if !server_idle && !self.fifo.admits(self.buffer, q.len) {
            return Err((q, DropCause::BufferOverflow));
        }
        self.fifo.push(q);
        Ok(())
    }

    fn dequeue(&mut self, now: Instant, drops: &mut Drops<P>) -> Option<Queued<P>> {
        self.state.dequeue(&mut Head { fifo: &mut self.fifo, others: 0, drops }, now)
    }

    fn backlog_bytes(&self) -> u64 {
        self.fifo.bytes()
    }

    fn backlog_packets(&self) -> usize {
        self.fifo.len()
    }
}

/// A FIFO's head as CoDel sees it: pop with sojourn and bytes left (`others`: bytes held
/// elsewhere in the same buffer, which count as left behind), drops to the link.
pub(crate) struct Head<'a, 'd, P> {
    pub(crate) fifo: &'a mut Fifo<P>,
    pub(crate) others: u64,
    pub(crate) drops: &'a mut Drops<'d, P>,
}

impl<P> CodelHead for Head<'_, '_, P> {
    type Item = Queued<P>;

    fn pop(&mut self, now: Instant) -> Option<(Queued<P>, Duration, u64)> {
        let q = self.fifo.pop()?;
        let sojourn = now - q.arrived_at;
        Some((q, sojourn, self.fifo.bytes() + self.others))
    }

    fn drop(&mut self, q: Queued<P>) {
        self.drops.drop(q, DropCause::Aqm);
    }

    fn mark(&mut self, q: &mut Queued<P>, l4s_only: bool) -> bool {
        if l4s_only && q.ecn != crate::ecn::Ecn::Ect1 {
            return false;
        }
        self.drops.mark(q)
    }
}

/// The RFC's MAXPACKET: a queue holding at most this much is never dropped
/// from, since it cannot be a standing queue.
pub(crate) const MAX_PACKET: u64 = 1500;

/// The queue CoDel dequeues from.
pub(crate) trait CodelHead {
    type Item;
    /// Pops the head at `now`: the item, its sojourn time and the bytes left behind it.
    fn pop(&mut self, now: Instant) -> Option<(Self::Item, Duration, u64)>;
    /// Drops an item CoDel judged.
    fn drop(&mut self, item: Self::Item);
    /// Marks it CE instead, if it is ECN-capable (`l4s_only`: if it is ECT(1)); says whether
    /// it was.
    fn mark(&mut self, item: &mut Self::Item, l4s_only: bool) -> bool;
}

/// The controller's state (RFC 8289 section 5.3's variables).
#[derive(Clone, Debug)]
pub(crate) struct CodelState {
    pub(crate) target: Duration,
    pub(crate) interval: Duration,
    /// `None` is the RFC's `first_above_time == 0`; an `Option` avoids
    /// confusing it with a genuine time 0.
    first_above_time: Option<Instant>,
    pub(crate) drop_next: Instant,
    pub(crate) count: u32,
    pub(crate) lastcount: u32,
    pub(crate) dropping: bool,
    /// Mark instead of dropping ECN-capable packets.
    ecn: bool,
    /// The ECT(1) step threshold ([`Codel::ce_threshold_ns`]).
    ce_threshold: Option<Duration>,
    /// The sojourn of the packet last popped (Linux's `ldelay`), for the step marker.
    last_sojourn: Duration,
}

impl CodelState {
    pub(crate) fn new(target: Duration, interval: Duration) -> Self {
        CodelState {
            target,
            interval,
            first_above_time: None,
            drop_next: Instant::EPOCH,
            count: 0,
            lastcount: 0,
            dropping: false,
            ecn: false,
            ce_threshold: None,
            last_sojourn: Duration::ZERO,
        }
    }

    pub(crate) fn with_ecn(mut self, ecn: bool, ce_threshold: Option<Duration>) -> Self {
        self.ecn = ecn;
        self.ce_threshold = ce_threshold;
        self
    }

    /// The RFC's `dodequeue` verdict (`ok_to_drop`) for a packet leaving
    /// the queue at `now` after `sojourn`, with `remaining` bytes left
    /// behind it.
    pub(crate) fn ok_to_drop(&mut self, now: Instant, sojourn: Duration, remaining: u64) -> bool {
        if sojourn < self.target || remaining <= MAX_PACKET {
            self.first_above_time = None;
            return false;
        }
        match self.first_above_time {
            None => {
                self.first_above_time = Some(now + self.interval);
                false
            }
            Some(t) => now >= t,
        }
    }

    /// `dodequeue` on an empty queue.
    pub(crate) fn on_empty(&mut self) {
        self.first_above_time = None;
    }

    /// `t + interval / sqrt(count)`, rounded to the nanosecond.
    pub(crate) fn control_law(&self, t: Instant) -> Instant {
        let gap = self.interval.as_nanos() as f64 / f64::from(self.count.max(1)).sqrt();
        t + Duration::from_nanos(gap.round() as u64)
    }

    /// Entering the dropping state after a first drop at `now`: the RFC's
    /// count memory, which resumes near the previous drop rate if the last
    /// dropping episode ended recently.
    pub(crate) fn enter_dropping(&mut self, now: Instant) {
        self.dropping = true;
        let delta = self.count.saturating_sub(self.lastcount);
        self.count = 1;
        // Signed: `drop_next` may lie in the future, which counts as recent.
        let since = i128::from(now.as_nanos()) - i128::from(self.drop_next.as_nanos());
        if delta > 1 && since < 16 * i128::from(self.interval.as_nanos()) {
            self.count = delta;
        }
        self.drop_next = self.control_law(now);
        self.lastcount = self.count;
    }
}

impl CodelState {
    /// The RFC 8289 `dodequeue`: pops the head and judges it.
    fn judged<Q: CodelHead>(&mut self, q: &mut Q, now: Instant) -> (Option<Q::Item>, bool) {
        match q.pop(now) {
            None => {
                self.on_empty();
                (None, false)
            }
            Some((item, sojourn, remaining)) => {
                self.last_sojourn = sojourn;
                let ok = self.ok_to_drop(now, sojourn, remaining);
                (Some(item), ok)
            }
        }
    }

    /// The RFC 8289 `dequeue`, run when the server becomes free at `now`. With ECN on, a
    /// packet the control law picks is marked CE and sent instead of dropped when it is
    /// ECN-capable (RFC 8289 section 5: "drop or mark"; the order of Linux's `codel_dequeue`:
    /// a mark ends the round, as the marked packet is the one sent); a Not-ECT one is dropped
    /// as before. The step marker then looks at the packet sent.
    pub(crate) fn dequeue<Q: CodelHead>(&mut self, q: &mut Q, now: Instant) -> Option<Q::Item> {
        let (mut p, mut ok) = self.judged(q, now);
        if p.is_none() {
            self.dropping = false;
            return None;
        }
        if self.dropping {
            if !ok {
                self.dropping = false;
            }
            while self.dropping && now >= self.drop_next {
                self.count = self.count.saturating_add(1);
                if self.ecn && p.as_mut().is_some_and(|item| q.mark(item, false)) {
                    self.drop_next = self.control_law(self.drop_next);
                    break;
                }
                if let Some(item) = p.take() {
                    q.drop(item);
                }
                (p, ok) = self.judged(q, now);
                if ok {
                    self.drop_next = self.control_law(self.drop_next);
                } else {
                    self.dropping = false;
                }
            }
        } else if ok {
            let marked = self.ecn && p.as_mut().is_some_and(|item| q.mark(item, false));
            if !marked {
                if let Some(item) = p.take() {
                    q.drop(item);
                }
                (p, _) = self.judged(q, now);
            }
            self.enter_dropping(now);
        }
        if let (Some(item), Some(t)) = (p.as_mut(), self.ce_threshold) {
            if self.last_sojourn > t {
                q.mark(item, true);
            }
        }
        p
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MS: Duration = Duration::from_millis(1);
    const NS: Duration = Duration::from_nanos(1);

    /// The instant `d` after the epoch.
    fn t(d: Duration) -> Instant {
        Instant::EPOCH + d
    }

    #[test]
    fn verdict_needs_a_full_interval_above_target() {
        let mut c = CodelState::new(5 * MS, 100 * MS);
        assert!(!c.ok_to_drop(t(10 * MS), 5 * MS, 3000));
        assert!(!c.ok_to_drop(t(110 * MS - NS), 50 * MS, 3000));
        assert!(c.ok_to_drop(t(110 * MS), 50 * MS, 3000));
        // One packet below target (or a near-empty queue) resets the clock.
        assert!(!c.ok_to_drop(t(111 * MS), 50 * MS, MAX_PACKET));
        assert!(!c.ok_to_drop(t(112 * MS), 50 * MS, 3000));
        assert!(!c.ok_to_drop(t(211 * MS), 50 * MS, 3000));
        assert!(c.ok_to_drop(t(212 * MS), 50 * MS, 3000));
        assert!(!c.ok_to_drop(t(213 * MS), 5 * MS - NS, 3000));
        assert!(!c.ok_to_drop(t(400 * MS), 5 * MS, 3000));
        c.on_empty();
        assert!(!c.ok_to_drop(t(401 * MS), 5 * MS, 3000));
    }

    #[test]
    fn count_memory_resumes_recent_drop_rate() {
        let mut c = CodelState::new(5 * MS, 100 * MS);
        // First episode: count starts at 1.
        c.enter_dropping(t(1000 * MS));
        assert_eq!((c.count, c.lastcount, c.drop_next), (1, 1, t(1100 * MS)));
        // 9 more drops, then the episode ends.
        c.count = 10;
        c.drop_next = t(1500 * MS);
        c.dropping = false;
        // Re-entering within 16 intervals of drop_next: count = 10 - 1.
        c.enter_dropping(t(1500 * MS + 1600 * MS - NS));
        assert_eq!((c.count, c.lastcount), (9, 9));
        assert_eq!(c.drop_next, t(3100 * MS - NS + 33_333_333 * NS));
        // Only 1 drop since (delta = 1): back to 1.
        c.count = 10;
        c.enter_dropping(c.drop_next);
        assert_eq!(c.count, 1);
        // Long after the last drop_next: back to 1 even with many drops.
        c.count = 50;
        let late = c.drop_next + 1600 * MS;
        c.enter_dropping(late);
        assert_eq!(c.count, 1);
        // drop_next in the future (negative elapsed time) counts as recent.
        c.count = 20;
        c.drop_next = late + 10 * MS;
        c.enter_dropping(late);
        assert_eq!(c.count, 19);
    }

    #[test]
    fn control_law_spacing() {
        let mut c = CodelState::new(5 * MS, 100 * MS);
        c.count = 4;
        assert_eq!(c.control_law(Instant::EPOCH), t(50 * MS));
        c.count = 2;
        assert_eq!(c.control_law(t(7 * NS)), t((7 + 70_710_678) * NS));
    }
}
