//! A throwaway workload's data half, written by `scripts/new-workload` into a scratch copy to
//! prove that a new workload with a headline figure of its own is 3 files: request/response
//! exchanges one after another on one connection, read by exchanges per second.

use serde::{Deserialize, Serialize};

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct ExchangesSpec {
    pub exchanges: u32,
    pub response_bytes: u64,
    pub cc: super::Algorithm,
    pub port: u16,
    pub sample_interval_us: u64,
    pub timeout_s: f64,
}

#[derive(Clone, Debug, Serialize, Deserialize, schemars::JsonSchema)]
pub struct ExchangesResult {
    pub exchanges_per_s: f64,
    /// The exchanges as an object load of one connection.
    pub load: super::ObjectsResult,
}

impl super::Spec for ExchangesSpec {
    fn data_direction(&self) -> super::Direction {
        super::Direction::Download
    }
    super::spec_common!(cc);
    fn metric(&self) -> &'static str {
        "exchanges per second"
    }
    fn headline(&self) -> super::Headline {
        super::Headline::Score(super::Figure { label: "exchanges per second (1/s)", unit: "exchanges/s", per_unit: 1.0 })
    }
    fn time_series(&self) -> super::TimeSeries {
        super::TimeSeries::Requests
    }
    fn describe(&self, over: super::Over) -> String {
        format!("{} exchanges of {} bytes over {}", self.exchanges, self.response_bytes, over.words("one HTTP/1.1 connection", "one QUIC stream at a time"))
    }
}

impl super::RunOutcome for ExchangesResult {
    fn interrupted(&self) -> bool {
        self.load.interrupted
    }
    fn score(&self, timeout_s: f64) -> (f64, bool) {
        let unfinished = self.load.requests_completed < self.load.requests_requested;
        (if unfinished { f64::from(self.load.requests_completed) / timeout_s } else { self.exchanges_per_s }, unfinished)
    }
    fn figures(&self) -> super::RunFigures {
        self.load.figures()
    }
    fn senders(&self) -> Vec<super::SenderView<'_>> {
        self.load.senders()
    }
    fn first_error(&self) -> Option<String> {
        self.load.first_error()
    }
    fn start_us(&self) -> u64 {
        self.load.start_us()
    }
    fn measured_s(&self) -> Option<f64> {
        self.load.measured_s()
    }
}
