//! The sampled time series of one direction, handed to a [`SampleSink`] as it is taken.

use ccbench_link::time::{Duration, Instant};
use ccbench_link::{Link, LinkStats};

use crate::report::LinkSample;

pub use ccbench_model::path::SampleSink;

pub(crate) struct SeriesRecorder {
    interval: Duration,
    pub next_at: Instant,
    last: LinkStats,
    delay_sum_ns: u128,
    delay_count: u64,
    delay_max: Duration,
    late_max: Duration,
    sink: Box<dyn SampleSink>,
}

impl SeriesRecorder {
    pub fn new(interval: Duration, now: Instant, sink: Box<dyn SampleSink>) -> Self {
        let interval = interval.max(Duration::from_nanos(1));
        SeriesRecorder {
            interval,
            next_at: now + interval,
            last: LinkStats::default(),
            delay_sum_ns: 0,
            delay_count: 0,
            delay_max: Duration::ZERO,
            late_max: Duration::ZERO,
            sink,
        }
    }

    pub fn on_delivery(&mut self, queue_delay: Duration, late: Duration) {
        self.late_max = self.late_max.max(late);
        self.delay_sum_ns += u128::from(queue_delay.as_nanos());
        self.delay_count += 1;
        self.delay_max = self.delay_max.max(queue_delay);
    }

    pub fn maybe_sample<P>(&mut self, now: Instant, link: &Link<P>) {
        if now < self.next_at {
            return;
        }
        let s = link.stats();
        let busy = s.busy_ns - self.last.busy_ns;
        let elapsed = self.interval + (now - self.next_at);
        self.sink.push(&LinkSample {
            t_us: now.as_nanos() / 1000,
            backlog_bytes: link.backlog_bytes(),
            backlog_packets: link.backlog_packets() as u64,
            delivered_bytes: s.bytes_out - self.last.bytes_out,
            drops_loss: s.drops_loss - self.last.drops_loss,
            drops_buffer: s.drops_buffer - self.last.drops_buffer,
            drops_policer: s.drops_policer - self.last.drops_policer,
            drops_aqm: s.drops_aqm - self.last.drops_aqm,
            ce_marks: s.ce_marks - self.last.ce_marks,
            queue_delay_mean_us: if self.delay_count > 0 { self.delay_sum_ns as f64 / self.delay_count as f64 / 1000.0 } else { 0.0 },
            queue_delay_max_us: self.delay_max.as_micros_f64(),
            utilization: (busy.as_nanos() as f64 / elapsed.as_nanos() as f64).min(1.0),
            lateness_max_us: self.late_max.as_micros_f64(),
            aqm_prob: link.aqm_base_prob(),
        });
        self.late_max = Duration::ZERO;
        self.last = s.clone();
        self.delay_sum_ns = 0;
        self.delay_count = 0;
        self.delay_max = Duration::ZERO;
        // Skip missed ticks instead of emitting a burst of empty samples.
        while self.next_at <= now {
            self.next_at += self.interval;
        }
    }
}
