//! Where a workload's time series go as they are taken. A workload hands every `TCP_INFO`
//! sample of a sending socket, and every receiver-side goodput point of a bulk flow, to a
//! [`SeriesSink`] the moment it is taken, and keeps none itself: a streaming sink (a file
//! writer with running summaries) keeps memory flat however long a run lasts.

use std::collections::BTreeMap;
use std::sync::Mutex;

use ccbench_probe::Sample;

use crate::GoodputPoint;

/// Which sending socket a sample belongs to, within one run.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum SocketId {
    /// A bulk or file flow, by its id (0, 1, … in the order the flows were planned).
    Flow(u32),
    /// An HTTP connection (objects, page), by the client's port.
    Connection(u16),
}

/// Receives a run's time series as they are taken. Called from the workload's sampler thread
/// and, for connections accepted by a server, from its tasks: implementations synchronise
/// themselves and must be quick.
pub trait SeriesSink: Sync {
    /// One `TCP_INFO`/`TCP_CC_INFO` sample of a sending socket.
    fn tcp_sample(&self, socket: SocketId, sample: &Sample);
    /// Bytes received so far by bulk flow `flow`, at `point.t_us` (cumulative, non-decreasing).
    fn received(&self, flow: u32, point: &GoodputPoint);
}

/// For callers that keep no series.
pub struct NoSeries;

impl SeriesSink for NoSeries {
    fn tcp_sample(&self, _: SocketId, _: &Sample) {}
    fn received(&self, _: u32, _: &GoodputPoint) {}
}

/// Keeps every point in memory: for tests and short runs only (memory grows with duration).
#[derive(Default, Debug)]
pub struct MemorySeries {
    pub tcp: Mutex<BTreeMap<SocketId, Vec<Sample>>>,
    pub received: Mutex<BTreeMap<u32, Vec<GoodputPoint>>>,
}

impl SeriesSink for MemorySeries {
    fn tcp_sample(&self, socket: SocketId, sample: &Sample) {
        crate::common::lock(&self.tcp).entry(socket).or_default().push(*sample);
    }
    fn received(&self, flow: u32, point: &GoodputPoint) {
        crate::common::lock(&self.received).entry(flow).or_default().push(*point);
    }
}

impl MemorySeries {
    /// The samples of one socket, in the order taken.
    pub fn samples(&self, socket: SocketId) -> Vec<Sample> {
        crate::common::lock(&self.tcp).get(&socket).cloned().unwrap_or_default()
    }
    /// The goodput points of one flow, in the order taken.
    pub fn received_of(&self, flow: u32) -> Vec<GoodputPoint> {
        crate::common::lock(&self.received).get(&flow).cloned().unwrap_or_default()
    }
}
