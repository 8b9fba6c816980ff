//! What the emulator reports: per-direction totals, the sampled time series and the
//! measurement-window summary. Plain data, serialized into every result.

use ccbench_link::time::Duration;
use ccbench_link::{DelayHistogram, DirectionConfig, LinkStats};
use serde::{Deserialize, Serialize};

/// One point of a direction's time series, covering the interval that ends at `t_us`.
#[derive(Clone, Debug, Default, Serialize, Deserialize, PartialEq, schemars::JsonSchema)]
pub struct LinkSample {
    pub t_us: u64,
    /// Bytes and packets waiting in the buffer at the sample instant.
    pub backlog_bytes: u64,
    pub backlog_packets: u64,
    pub delivered_bytes: u64,
    pub drops_loss: u64,
    pub drops_buffer: u64,
    pub drops_policer: u64,
    pub drops_aqm: u64,
    /// Packets the AQM marked CE in the interval (ECN, see [`ccbench_link::LinkStats::ce_marks`]).
    #[serde(default)]
    pub ce_marks: u64,
    pub queue_delay_mean_us: f64,
    pub queue_delay_max_us: f64,
    /// Fraction of the interval the rate server was busy serializing.
    pub utilization: f64,
    /// Worst emulator timing error in the interval (see [`DirectionReport::lateness`]).
    pub lateness_max_us: f64,
    /// DualPI2's base probability `p'` at the sample instant (RFC 9332 §2.4: classic packets
    /// are dropped or marked with `p'²`, L packets marked with `k·p'` beside the step); empty
    /// for other AQMs and in files written before it.
    #[serde(default)]
    pub aqm_prob: Option<f64>,
}

/// Percentiles of a delay distribution, in microseconds.
#[derive(Clone, Debug, Default, Serialize, Deserialize, PartialEq, schemars::JsonSchema)]
pub struct DelaySummary {
    pub count: u64,
    pub mean_us: f64,
    pub p50_us: f64,
    pub p95_us: f64,
    pub p99_us: f64,
    pub max_us: f64,
}

impl DelaySummary {
    pub fn of(h: &DelayHistogram) -> Self {
        let us = |d: Duration| d.as_micros_f64();
        DelaySummary {
            count: h.count(),
            mean_us: h.mean_ns() / 1000.0,
            p50_us: us(h.quantile(0.50)),
            p95_us: us(h.quantile(0.95)),
            p99_us: us(h.quantile(0.99)),
            max_us: us(h.max()),
        }
    }
}

/// What one direction saw inside the measurement window `[from_us, to_us)` (microseconds
/// since the path's epoch): drops and arrivals counted at their arrival time, deliveries,
/// queue delay, lateness and busy time at their departure.
#[derive(Clone, Debug, Default, Serialize, Deserialize, PartialEq, schemars::JsonSchema)]
pub struct WindowReport {
    pub from_us: u64,
    pub to_us: u64,
    /// Counters of the events inside the window (`queue_delay` holds the window's delays).
    pub stats: LinkStats,
    pub queue_delay: DelaySummary,
    pub lateness: DelaySummary,
    /// busy time / window length.
    pub utilization: f64,
}

/// What one direction of the emulator saw over its lifetime.
#[derive(Clone, Debug, Default, Serialize, Deserialize, schemars::JsonSchema)]
pub struct DirectionReport {
    pub direction: String,
    pub config: Option<DirectionConfig>,
    pub stats: LinkStats,
    /// Time each packet waited in the buffer before serialization.
    pub queue_delay: DelaySummary,
    /// How late packets left compared with the model's departure time: the emulator's own
    /// timing error, added on top of the configured delay.
    pub lateness: DelaySummary,
    /// busy time / lifetime of the link.
    pub utilization: f64,
    pub read_errors: u64,
    pub write_errors: u64,
    /// Superframes read from the kernel (TCP TSO and UDP GSO batches), and the MTU-sized
    /// segments and datagrams cut from them.
    pub superframes: u64,
    pub segments_from_superframes: u64,
    /// Writes to the output device; below packets_out when departures were coalesced.
    pub writes: u64,
    /// Packets the emulator could not parse or segment (dropped and counted, never forwarded;
    /// should be 0 for kernel traffic).
    pub malformed: u64,
    /// Kernel drops outside the model: the input device's queue overflowing before we read
    /// (`tun_tx_dropped`) and writes the receiving stack refused (`tun_rx_dropped`). With a
    /// keeping-up emulator both are 0; anything else is loss nobody configured. `None` when
    /// the device counters could not be read: unknown, not zero.
    pub tun_tx_dropped: Option<u64>,
    pub tun_rx_dropped: Option<u64>,
    /// CPU time this direction's forwarding thread used, and its share of the wall time. When
    /// one thread carried both directions (`one_thread`), each direction is given half of its
    /// CPU, so the two add up to the thread's.
    pub cpu_s: f64,
    pub cpu_share: f64,
    /// One thread carried both directions (a slow path, issue 33): its busy share is the sum of
    /// the two directions' `cpu_share`.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub one_thread: bool,
    /// Every sample, unless the path was started streaming (then the sink got them and this
    /// stays empty).
    pub series: Vec<LinkSample>,
    /// The measurement window, if one was opened and closed (see `EmulatedPath::window`).
    #[serde(default)]
    pub window: Option<WindowReport>,
    /// Set when the forwarder failed: it panicked, or a read or write on a TUN device erred
    /// (the first such error, with the counts in `read_errors`/`write_errors`). A run whose
    /// path has an error did not measure the configured path.
    pub error: Option<String>,
}

impl DirectionReport {
    pub fn failed(msg: &str) -> Self {
        DirectionReport { error: Some(msg.to_string()), ..Default::default() }
    }

    /// Why this direction cannot be trusted, if it cannot: a forwarder error or any I/O error.
    pub fn failure(&self) -> Option<String> {
        match (&self.error, self.read_errors + self.write_errors) {
            (Some(e), _) => Some(format!("{}: {e} ({} read errors, {} write errors)", self.direction, self.read_errors, self.write_errors)),
            (None, 0) => None,
            (None, _) => Some(format!("{}: {} read errors, {} write errors", self.direction, self.read_errors, self.write_errors)),
        }
    }
}
