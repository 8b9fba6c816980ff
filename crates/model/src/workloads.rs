//! The kinds of traffic a run can carry, as the record keeps them: what ran with which
//! algorithm, which way the data flowed, and the one figure the verdict compares. Each workload defines
//! itself in `ccbench-workload`, and is a line of its registry (`crate::workloads!`);
//! this module expands that list into the types a record keeps. Running a spec and its command
//! line are the `ccbench` crate's (`run_workload.rs`, `workload_flags.rs`).

use crate::workload::{Algorithm, Direction, Headline, RunFigures, RunOutcome, SenderView, Spec};
use ccbench_kernel_tcp::TcpInfo;
use serde::{Deserialize, Serialize};

/// Expands the workload registry (`crate::workloads!`, one line each: `Variant(its
/// spec, its result)`, the variant's name in snake case being the `kind` result.json tags it
/// with) into the record's types. Everything else about a workload is asked of its own module
/// through [`Spec`] and [`RunOutcome`].
macro_rules! registry {
    ($($(#[$doc:meta])* $module:ident: $variant:ident($spec:ty, $result:ty),)*) => {
        #[derive(Clone, Debug, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
        #[serde(tag = "kind", rename_all = "snake_case")]
        pub enum WorkloadSpec {
            $($(#[$doc])* $variant($spec),)*
        }

        #[derive(Clone, Debug, Serialize, Deserialize, schemars::JsonSchema)]
        #[serde(tag = "kind", rename_all = "snake_case")]
        pub enum WorkloadResult {
            $($variant($result),)*
        }

        impl WorkloadSpec {
            /// The workload's own definition of itself.
            pub fn spec(&self) -> &dyn Spec {
                match self {
                    $(WorkloadSpec::$variant(s) => s,)*
                }
            }

            fn spec_mut(&mut self) -> &mut dyn Spec {
                match self {
                    $(WorkloadSpec::$variant(s) => s,)*
                }
            }
        }

        impl WorkloadResult {
            /// The result's own account of itself.
            pub fn outcome(&self) -> &dyn RunOutcome {
                match self {
                    $(WorkloadResult::$variant(r) => r,)*
                }
            }
        }

        $(impl From<$result> for WorkloadResult {
            fn from(r: $result) -> Self {
                WorkloadResult::$variant(r)
            }
        })*
    };
}

crate::workloads!(registry);

impl WorkloadSpec {
    /// The same workload with `cc` on its sending sockets (a mix keeps its own algorithms).
    pub fn with_cc(&self, cc: &Algorithm) -> WorkloadSpec {
        let mut w = self.clone();
        w.spec_mut().set_algorithm(cc);
        w
    }

    /// Which way the bulk of the data flows (whose direction's queue and drops matter).
    pub fn data_direction(&self) -> Direction {
        self.spec().data_direction()
    }

    /// How long a run may take before it is given up and marked unfinished.
    pub fn timeout_s(&self) -> f64 {
        self.spec().timeout_s()
    }

    /// How often the sending sockets' `TCP_INFO` is sampled.
    pub fn sample_interval_us(&self) -> u64 {
        self.spec().sample_interval_us()
    }

    /// Flows that bring their own algorithms (a mix), rather than the run's.
    pub fn is_mix(&self) -> bool {
        !self.spec().own_algorithms().is_empty()
    }

    /// The noun the verdict compares (higher is better).
    pub fn metric(&self) -> &'static str {
        self.spec().metric()
    }

    /// The figure its runs are read by.
    pub fn headline(&self) -> Headline {
        self.spec().headline()
    }

    /// As [`WorkloadSpec::describe`], naming the transports the algorithms `ccs` run over
    /// (`Spec::describe_for`).
    pub fn describe_for(&self, ccs: &[crate::workload::Cc]) -> String {
        self.spec().describe_for(ccs)
    }

    pub fn describe(&self) -> String {
        self.spec().describe(crate::workload::Over::Tcp)
    }
}

impl WorkloadResult {
    pub fn interrupted(&self) -> bool {
        self.outcome().interrupted()
    }

    /// The figure compared between algorithms (higher is better), and whether the run did not
    /// finish (`RunOutcome::score`; each workload says how an unfinished run is ranked).
    pub fn score(&self, timeout_s: f64) -> (f64, bool) {
        self.outcome().score(timeout_s)
    }

    /// The run's figures in the workload's terms.
    pub fn figures(&self) -> RunFigures {
        self.outcome().figures()
    }

    /// Every sending flow or connection.
    pub fn senders(&self) -> Vec<SenderView<'_>> {
        self.outcome().senders()
    }

    /// The sending sockets' TCP_INFO at the end.
    pub fn final_infos(&self) -> Vec<&TcpInfo> {
        self.senders().into_iter().filter_map(|s| s.final_tcp_info).collect()
    }

    /// What the reader must know about the flows (two QUIC ends on different algorithms).
    pub fn warnings(&self) -> Vec<String> {
        self.senders().into_iter().filter_map(|s| s.warning.map(|w| format!("{}: {w}", s.name))).collect()
    }

    /// The QUIC sending connections' last samples (one per connection).
    pub fn final_quic(&self) -> Vec<&crate::workload::QuicSample> {
        self.senders().into_iter().filter_map(|s| s.final_quic).collect()
    }

    pub fn first_error(&self) -> Option<String> {
        self.outcome().first_error()
    }

    /// When its measured span began, µs after the run's epoch.
    pub fn start_us(&self) -> u64 {
        self.outcome().start_us()
    }

    /// How long its data flowed, seconds.
    pub fn measured_s(&self) -> Option<f64> {
        self.outcome().measured_s()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::workload::{Amount, BulkSpec, ObjectMethod, ObjectsSpec};

    /// What the harness asks a spec is answered by the workload's own definition: the
    /// algorithm is set per run (a mix keeps its own), an upload of objects loads the uplink.
    #[test]
    fn a_spec_answers_for_itself() {
        let alg = |s: &str| s.parse::<Algorithm>().unwrap();
        let objects = |method| {
            WorkloadSpec::Objects(ObjectsSpec {
                requests: 1,
                object_bytes: 1,
                concurrency: 1,
                method,
                cc: Algorithm::default(),
                port: 0,
                sample_interval_us: 7,
                timeout_s: 3.0,
                quic_receiver_cc: None,
            })
        };
        let put = objects(ObjectMethod::Put).with_cc(&alg("tcp:bbr"));
        assert!(matches!(&put, WorkloadSpec::Objects(o) if o.cc == "tcp:bbr"));
        assert_eq!((put.data_direction(), put.timeout_s(), put.sample_interval_us(), put.metric()), (Direction::Upload, 3.0, 7, "content throughput"));
        assert_eq!(objects(ObjectMethod::Get).data_direction(), Direction::Download);
        let mix = vec![
            crate::workload::MixFlow { cc: alg("bbr"), start_s: 0.0, client_port: None },
            crate::workload::MixFlow { cc: alg("quic:bbr3"), start_s: 1.0, client_port: None },
        ];
        let bulk = BulkSpec {
            flows: 2,
            direction: Direction::Download,
            amount: Amount::Seconds(1.0),
            cc: Algorithm::default(),
            mix: mix.clone(),
            port: 0,
            sample_interval_us: 7,
            timeout_s: 3.0,
            quic_receiver_cc: None,
            knobs: Default::default(),
        };
        let run = WorkloadSpec::Bulk(bulk).with_cc(&alg("cubic"));
        assert!(matches!(&run, WorkloadSpec::Bulk(b) if b.mix == mix && b.cc.is_unset()));
        assert_eq!(run.metric(), "goodput");
    }

    /// An objects run of `requests` × 1 MB with `completed` done, the last success at `wall_s`.
    fn objects(requests: u32, completed: u32, wall_s: f64) -> WorkloadResult {
        let bytes = u64::from(completed) * 1_000_000;
        let v = serde_json::json!({
            "method": "put", "object_bytes": 1_000_000, "concurrency": 16, "cc_requested": "cubic", "start_us": 0,
            "wall_time_s": wall_s, "requests_requested": requests, "requests_issued": requests, "requests_completed": completed,
            "errors": requests - completed, "content_bytes": bytes, "content_throughput_bps": bytes as f64 * 8.0 / wall_s,
            "content_throughput_mbytes_per_s": bytes as f64 / wall_s / 1e6, "latency_p50_s": null, "latency_p95_s": null,
            "latency_p99_s": null, "latency_max_s": null, "latency_mean_s": null, "client_connections": 16, "server_connections": 16,
            "server_errors": 0, "interrupted": false, "timed_out": completed < requests, "connections": [], "requests": [], "error_messages": []
        });
        WorkloadResult::Objects(serde_json::from_value(v).expect("an objects result"))
    }

    /// Issue 16 §5: 100 × 1 MB with 99 done in 9 s and one request hung until the 30 s
    /// timeout scored 88 Mbit/s, above a run that finished all 100 in 10 s (80 Mbit/s).
    #[test]
    fn an_unfinished_objects_run_never_scores_above_a_finished_one() {
        let timeout = 30.0;
        let (hung, hung_unfinished) = objects(100, 99, 9.0).score(timeout);
        let (done, done_unfinished) = objects(100, 100, 10.0).score(timeout);
        assert!(hung_unfinished && !done_unfinished);
        assert!((done - 80e6).abs() < 1.0, "{done}");
        assert!(hung < done, "unfinished {hung} against finished {done}");
        // Even against a finished run that used the whole timeout.
        let (slowest, _) = objects(100, 100, timeout).score(timeout);
        assert!(hung <= slowest, "unfinished {hung} against the slowest finished {slowest}");
    }
}
