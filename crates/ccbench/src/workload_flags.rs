//! The kinds of traffic a run can carry, as the record keeps them: what ran with which
//! algorithm, which way the data flowed, and the one figure the verdict compares. Each workload defines
//! itself in `ccbench-workload`, and is a line of its registry (`ccbench_workload::workloads!`);
//! this crate expands that list into the types a record keeps.

use ccbench_probe::TcpInfo;
use ccbench_remote::{Client, RemoteError, TestRequest};
use ccbench_workload::flags::{FlagError, FlagSet, FromFlags, Given, Kind, RunFlags};
use ccbench_workload::{Algorithm, Direction, Headline, RunContext, RunFigures, RunOutcome, SenderView, SeriesSink, Spec, Workload, WorkloadError};
use serde::{Deserialize, Serialize};
use std::sync::atomic::AtomicBool;
use std::time::Instant;

/// Expands the workload registry (`ccbench_workload::workloads!`, one line each: `Variant(its
/// spec, its result)`, the variant's name in snake case being the `kind` result.json tags it
/// with). Everything else about a workload is asked of its own module through [`Spec`],
/// [`RunOutcome`], over `--remote` `ccbench_workload::Remote` (its request generated in
/// `ccbench_remote` from the same list), and its command line through [`FromFlags`]:
/// `--workload`'s values ([`WorkloadKind`]) and every workload's flags ([`WorkloadFlags`]) are
/// generated here.
macro_rules! registry {
    ($($(#[$doc:meta])* $variant:ident($spec:ty, $result:ty),)*) => {
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

            /// Runs the workload in `ctx` (the spec's own `Workload::run`, its result tagged).
            pub fn run(&self, ctx: &RunContext<'_>) -> Result<WorkloadResult, WorkloadError> {
                match self {
                    $(WorkloadSpec::$variant(s) => s.run(ctx).map(WorkloadResult::$variant),)*
                }
            }

            /// The request a remote `ccbench serve` is asked to run (`Remote::far_request`).
            pub fn far_request(&self) -> TestRequest {
                match self {
                    $(WorkloadSpec::$variant(s) => ccbench_remote::Requested::test_request(s),)*
                }
            }

            /// Runs the workload against a remote `ccbench serve` (`Client::run`, its result
            /// tagged).
            pub fn run_remote(&self, client: &mut Client, epoch: Instant, stop: &AtomicBool, series: &dyn SeriesSink) -> Result<WorkloadResult, RemoteError> {
                match self {
                    $(WorkloadSpec::$variant(s) => client.run(s, epoch, stop, series).map(WorkloadResult::$variant),)*
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

        /// Every workload's own flags (its `FromFlags::Flags`), in the registry's order: flattened
        /// into `ccbench run`, and a preset's or sweep's fields.
        #[derive(Clone, Debug, Default, PartialEq)]
        #[allow(non_snake_case)]
        pub struct WorkloadFlags {
            $(pub $variant: <$spec as FromFlags>::Flags,)*
        }

        // `clap::Args` by hand: each workload's flags flattened in turn.
        impl clap::FromArgMatches for WorkloadFlags {
            fn from_arg_matches(matches: &clap::ArgMatches) -> Result<Self, clap::Error> {
                Ok(WorkloadFlags { $($variant: clap::FromArgMatches::from_arg_matches(matches)?,)* })
            }
            fn update_from_arg_matches(&mut self, matches: &clap::ArgMatches) -> Result<(), clap::Error> {
                $(clap::FromArgMatches::update_from_arg_matches(&mut self.$variant, matches)?;)*
                Ok(())
            }
        }

        impl clap::Args for WorkloadFlags {
            fn augment_args(command: clap::Command) -> clap::Command {
                $(let command = <<$spec as FromFlags>::Flags as clap::Args>::augment_args(command);)*
                command
            }
            fn augment_args_for_update(command: clap::Command) -> clap::Command {
                $(let command = <<$spec as FromFlags>::Flags as clap::Args>::augment_args_for_update(command);)*
                command
            }
        }

        impl ccbench_workload::flags::Layer for WorkloadFlags {
            fn over(self, lower: Self) -> Self {
                WorkloadFlags { $($variant: ccbench_workload::flags::Layer::over(self.$variant, lower.$variant),)* }
            }
            fn forget_default(&mut self, id: &str, matches: &ccbench_workload::flags::ArgMatches) {
                $(ccbench_workload::flags::Layer::forget_default(&mut self.$variant, id, matches);)*
            }
        }

        impl FlagSet for WorkloadFlags {
            fn flags_of(&self, spec: std::any::TypeId) -> Option<&dyn std::any::Any> {
                $(if spec == std::any::TypeId::of::<$spec>() {
                    return Some(&self.$variant);
                })*
                None
            }
        }

        impl WorkloadFlags {
            /// A preset's field `key` (a workload's flag without dashes) read into its workload's
            /// flags; `None` when it is no workload's flag.
            pub fn deserialize_field<'de, D: serde::Deserializer<'de>>(key: &str, d: D) -> Option<Result<Self, D::Error>> {
                $(if ccbench_workload::flags::names::<<$spec as FromFlags>::Flags>().iter().any(|n| n == key) {
                    return Some(<<$spec as FromFlags>::Flags as Deserialize>::deserialize(d).map(|f| WorkloadFlags { $variant: f, ..WorkloadFlags::default() }));
                })*
                None
            }

            /// Every workload's flag given, `(--flag, value)`, in the order `--help` lists them.
            fn given(&self) -> Vec<(String, String)> {
                let mut given = Vec::new();
                $(given.extend(Given::given(&self.$variant));)*
                given
            }
        }

        impl WorkloadKind {
            /// Every `--workload` value, in the registry's order (the first is the default).
            pub fn all() -> &'static [WorkloadKind] {
                static ALL: std::sync::OnceLock<Vec<WorkloadKind>> = std::sync::OnceLock::new();
                ALL.get_or_init(|| {
                    let mut all = Vec::new();
                    $(all.extend(<$spec as FromFlags>::KINDS.iter().map(WorkloadKind));)*
                    all
                })
            }

            /// Why this workload cannot run `cc`, when it cannot (its `FromFlags::refuse_algorithm`).
            pub fn refuse_algorithm(self, cc: &Algorithm) -> Option<String> {
                $(if <$spec as FromFlags>::KINDS.contains(self.0) {
                    return <$spec as FromFlags>::refuse_algorithm(self.name(), cc);
                })*
                None
            }
        }

        impl WorkloadSpec {
            /// The spec `--workload kind` runs, from the flags (its `FromFlags::from_flags`); the
            /// flags it does not take are refused before ([`WorkloadFlags::refuse_others`]).
            pub fn from_flags(kind: WorkloadKind, flags: &WorkloadFlags, run: &RunFlags) -> Result<WorkloadSpec, FlagError> {
                $(if <$spec as FromFlags>::KINDS.contains(kind.0) {
                    return <$spec as FromFlags>::from_flags(kind.name(), flags, run).map(WorkloadSpec::$variant);
                })*
                unreachable!("every --workload value is a registered workload's")
            }
        }
    };
}

/// `--workload`: the kind of traffic, one of the registered workloads' `FromFlags::KINDS`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct WorkloadKind(&'static Kind);

impl WorkloadKind {
    pub fn name(self) -> &'static str {
        self.0.name
    }

    /// Whether it takes `flag`, of those a workload may refuse.
    pub fn takes(self, flag: &str) -> bool {
        self.0.takes.contains(&flag)
    }

    /// The workloads that take `flag`, as a message names them: `file or objects`.
    pub fn taking(flag: &str) -> String {
        let names: Vec<&str> = Self::all().iter().filter(|k| k.takes(flag)).map(|k| k.name()).collect();
        ccbench_workload::flags::or_list(&names)
    }

    /// `--workload`'s help: `The traffic: NAME (ABOUT), …`.
    pub fn help() -> String {
        let about: Vec<String> = Self::all().iter().filter_map(|k| k.0.about.map(|a| format!("{} ({a})", k.name()))).collect();
        format!("The traffic: {}", about.join(", "))
    }
}

impl Default for WorkloadKind {
    fn default() -> Self {
        Self::all()[0]
    }
}

impl clap::ValueEnum for WorkloadKind {
    fn value_variants<'a>() -> &'a [Self] {
        Self::all()
    }

    fn to_possible_value(&self) -> Option<clap::builder::PossibleValue> {
        let value = clap::builder::PossibleValue::new(self.name());
        Some(match self.0.help {
            Some(help) => value.help(help),
            None => value,
        })
    }
}

impl std::str::FromStr for WorkloadKind {
    type Err = ccbench_workload::flags::Expected;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Self::all().iter().copied().find(|k| k.name() == s).ok_or_else(|| {
            let names: Vec<&str> = Self::all().iter().map(|k| k.name()).collect();
            ccbench_workload::flags::Expected(format!("one of {}", names.join(", ")))
        })
    }
}

impl std::fmt::Display for WorkloadKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

ccbench_workload::deserialize_from_text!(WorkloadKind);

impl WorkloadFlags {
    /// Refuses the flags that belong to other workloads than `kind`, naming those they belong to.
    pub fn refuse_others(&self, kind: WorkloadKind) -> Result<(), FlagError> {
        match self.given().into_iter().find(|(flag, _)| !kind.takes(flag)) {
            Some((flag, value)) => Err(FlagError::new(&flag, value, format!("{flag} only with --workload {}", WorkloadKind::taking(&flag)))),
            None => Ok(()),
        }
    }
}

ccbench_workload::workloads!(registry);

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
    pub fn describe_for(&self, ccs: &[String]) -> String {
        self.spec().describe_for(ccs)
    }

    pub fn describe(&self) -> String {
        self.spec().describe()
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
    pub fn final_quic(&self) -> Vec<&ccbench_workload::QuicSample> {
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
    use ccbench_workload::{Amount, BulkSpec, ObjectMethod, ObjectsSpec};

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
            ccbench_workload::MixFlow { cc: alg("bbr"), start_s: 0.0, client_port: None },
            ccbench_workload::MixFlow { cc: alg("quic:bbr3"), start_s: 1.0, client_port: None },
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

    /// What each `--workload` value says it takes is a flag that exists (a workload's own, or
    /// the run's `--flows` and `--quic-receiver-cc`), every workload's flag is taken by some
    /// value (or it could never be given), and no two values share a name.
    #[test]
    fn the_workloads_command_lines_agree() {
        use clap::Args;
        let own: Vec<String> =
            WorkloadFlags::augment_args(clap::Command::new("t")).get_arguments().filter_map(|a| a.get_long().map(|l| format!("--{l}"))).collect();
        let kinds = WorkloadKind::all();
        for k in kinds {
            for flag in k.0.takes {
                assert!(own.iter().any(|f| f == flag) || ["--flows", "--quic-receiver-cc"].contains(flag), "{} takes {flag}, which is no flag", k.name());
            }
        }
        for flag in &own {
            assert!(kinds.iter().any(|k| k.takes(flag)), "{flag} is taken by no --workload");
        }
        let mut names: Vec<&str> = kinds.iter().map(|k| k.name()).collect();
        names.sort_unstable();
        names.dedup();
        assert_eq!(names.len(), kinds.len());
        // A preset's field reaches the workload that defines it.
        let page = WorkloadFlags::deserialize_field("max-connections", serde_json::json!({"max-connections": 3})).expect("page's flag").unwrap();
        assert_eq!(page.Page.max_connections.map(|m| m.to_string()), Some("3".into()));
        assert!(WorkloadFlags::deserialize_field("rtt", serde_json::json!({"rtt": "1ms"})).is_none());
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
