//! A throwaway workload's runtime half (`scripts/new-workload`): the exchanges run as an
//! object load of GETs on one connection.

use crate::flags::{FlagError, FlagSet, FromFlags, Kind, RunFlags};
use crate::{Algorithm, ExchangesResult, ExchangesSpec, ObjectMethod, ObjectsResult, ObjectsSpec, RunContext, Workload, WorkloadError};

crate::count_flag!(
    /// exchanges: exchanges per run (`--exchanges`).
    Exchanges, 1..=100_000
);

crate::workload_flags! {
    /// The flags of exchanges.
    #[derive(clap::Args, serde::Deserialize, Debug, Clone, Default, PartialEq)]
    #[group(skip)]
    #[serde(deny_unknown_fields, default, rename_all = "kebab-case")]
    pub struct ExchangesFlags {
        /// exchanges: request/response exchanges per run [default: 100].
        #[arg(long, allow_hyphen_values = true)]
        pub exchanges: Option<Exchanges>,
    }
}

impl FromFlags for ExchangesSpec {
    type Flags = ExchangesFlags;
    const KINDS: &'static [Kind] = &[Kind { name: "exchanges", help: None, about: Some("request/response exchanges"), takes: &["--exchanges"] }];
    fn from_flags(_kind: &str, flags: &dyn FlagSet, run: &RunFlags) -> Result<Self, FlagError> {
        Ok(ExchangesSpec {
            exchanges: flags.of::<ExchangesSpec>().exchanges.map_or(100, |e| e.0),
            response_bytes: 1000,
            cc: Algorithm::default(),
            port: run.port,
            sample_interval_us: run.sample_interval_us(),
            timeout_s: run.timeout_s(),
        })
    }
}

fn as_objects(s: &ExchangesSpec) -> ObjectsSpec {
    ObjectsSpec {
        requests: s.exchanges,
        object_bytes: s.response_bytes,
        concurrency: 1,
        method: ObjectMethod::Get,
        cc: s.cc.clone(),
        port: s.port,
        sample_interval_us: s.sample_interval_us,
        timeout_s: s.timeout_s,
        quic_receiver_cc: None,
    }
}

fn result(load: ObjectsResult) -> ExchangesResult {
    let exchanges_per_s = if load.wall_time_s > 0.0 { f64::from(load.requests_completed) / load.wall_time_s } else { 0.0 };
    ExchangesResult { exchanges_per_s, load }
}

impl Workload for ExchangesSpec {
    type Result = ExchangesResult;
    fn run(&self, ctx: &RunContext<'_>) -> Result<ExchangesResult, WorkloadError> {
        as_objects(self).run(ctx).map(result)
    }
}

/// Over `--remote`, serve runs the object server it runs for objects.
impl crate::Remote for ExchangesSpec {
    type Far = ObjectsSpec;
    type Result = ExchangesResult;
    fn far_request(&self) -> ObjectsSpec {
        as_objects(self)
    }
    fn near_end(&self) -> crate::NearEnd<'_, ExchangesResult> {
        crate::NearEnd::http(self, |s, far, epoch, stop, series, end| {
            crate::objects::run_objects_remote(&as_objects(s), far, epoch, stop, series, end).map(result)
        })
    }
}
