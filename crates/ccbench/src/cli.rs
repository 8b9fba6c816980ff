//! Command-line surface. Every `run` and `exec` flag parses straight into its typed value (see
//! [`crate::values`]), so a bad value is refused here, naming the flag. The flags a preset can
//! set as well are gathered in layers, [`PathOpts`] and [`RunOpts`]: structs of optional fields
//! that the built-in defaults, a preset's `[defaults]`, a preset's condition and the command line
//! each fill in part, put one over another field by field ([`Layer::over`]) and resolved once
//! ([`crate::path::build`], [`crate::spec::resolve`]).

use clap::{Args, CommandFactory, FromArgMatches, Parser, Subcommand, ValueEnum};
use clap_complete::Shell;
use serde::Deserialize;
use std::path::PathBuf;

use crate::error::UsageError;
use crate::values::{
    Aggregate, AqmSpec, AtChange, BufferSpec, CcList, Delay, DirectionArg, EcnArg, EcnFaultSpec, EmulatorBatch, ExpectArg, Expected, FlowsSpec, IdleTimeout,
    JitterSpec, ListenAddr, LossSpec, MaxClients, MaxDuration, MaxRuns, MaxTestsPerMinute, MinEffect, Mtu, PolicerSpec, QuicReceiverCc, Rate, RemoteAddr,
    ReorderSpec, Rtt, RunDuration, RunsSpec, SampleInterval, Shard, Size, Stagger, Timeout, TraceFile,
};
use crate::workload_flags::{WorkloadFlags, WorkloadKind};
pub use ccbench_workload::flags::Layer;
use ccbench_workload::layer;
use ccbench_workload::Algorithm;

#[derive(Parser, Debug)]
#[command(
    name = "ccbench",
    version,
    args_override_self = true,
    about = "Congestion-control test bench: is BBR better than CUBIC on this kind of path, and how sure are we?"
)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Command,
}

// Parsed once per process: the size of the largest variant costs nothing worth boxing for.
#[allow(clippy::large_enum_variant)]
#[derive(Subcommand, Debug)]
pub enum Command {
    /// Compare congestion-control algorithms over an emulated path, with repetitions and a verdict.
    Run(RunArgs),
    /// Run a grid of experiments, the product of a spec's axes; resumable, and any number of tasks
    /// on any number of machines share its work queue.
    Sweep(SweepArgs),
    /// Where a sweep stands: cells done, running, failed and missing (exit 0 when complete).
    Status(StatusArgs),
    /// Put a sweep's finished cells together into one result set (again: replaces the earlier).
    Merge(MergeArgs),
    /// Run any command in the client namespace behind an emulated path (like Mahimahi's shells).
    Exec(ExecArgs),
    /// Be the far end of a real path for `ccbench run --remote` on another host.
    Serve(ServeArgs),
    /// Measure a path (base RTT, RTT under load, loss and rate per direction) and write it as a
    /// path file of path flags, for `ccbench run --path FILE`: the path's local twin.
    Probe(ProbeArgs),
    /// Compare saved results (result.json files) with the same verdicts as run: a kernel
    /// upgrade, a real path against its twin, before and after tuning.
    Compare(CompareArgs),
    /// Say why each algorithm got what it got in a saved result (or in each result under a
    /// sweep's or merge's directory): what held it back, how it lost, and a model beside it.
    Explain(ExplainArgs),
    /// Show what this host can do: root, TUN, namespaces, algorithms, qdiscs.
    Doctor,
    /// Show, apply (--apply) or revert (--revert) this host's default congestion control and,
    /// where it matters and the kernel has it, the fq qdisc. A dry run unless --apply.
    Tune(TuneArgs),
    /// Measure ccbench itself on this machine.
    #[command(subcommand)]
    Bench(BenchWhat),
    /// Check a controller against its specification: a suite's cases (draft-ietf-ccwg-bbr's
    /// Appendix A for `bbr`, RFC 9438 and RFC 9406 for `cubic`) run over a grid of paths and
    /// judged on the controller's own state.
    #[command(subcommand)]
    Conform(ConformSuite),
    /// List the scenario presets that `ccbench run --preset NAME` runs.
    Presets,
    /// Print a Mahimahi trace (for --trace) made by ccbench's generators.
    #[command(subcommand)]
    Trace(TraceKind),
    /// Print a completion script for a shell (bash, zsh, fish, elvish, powershell).
    Completions(CompletionsArgs),
    /// Print the man page, ccbench(1), as roff; --dir DIR writes one page per subcommand instead.
    Man(ManArgs),
}

#[derive(Subcommand, Debug)]
pub enum TraceKind {
    /// A constant rate.
    Constant {
        #[arg(long)]
        rate: String,
        /// Length of one loop of the trace.
        #[arg(long, default_value = "1s")]
        period: String,
    },
    /// Rates in turn, each for --every, then looping; e.g. --rates 50mbit,10mbit --every 5s.
    Step {
        #[arg(long)]
        rates: String,
        #[arg(long, default_value = "5s")]
        every: String,
    },
    /// A seeded, cellular-like random walk around a mean rate with occasional outages.
    Cellular {
        #[arg(long)]
        mean: String,
        #[arg(long, default_value = "60s")]
        period: String,
        #[arg(long, default_value_t = 1)]
        seed: u64,
    },
}

/// `ccbench conform`'s suites, a variant each, named as its `ccbench_conform::Suite`.
#[derive(Subcommand, Debug)]
pub enum ConformSuite {
    /// draft-ietf-ccwg-bbr's test cases (Appendix A, and the §5.3 state machine) on each BBR
    /// controller × path: pass / fail / undecided / not observable, with evidence (docs/conform.md).
    Bbr(ConformArgs),
    /// RFC 9438's CUBIC (multiplicative decrease) and RFC 9406's HyStart++ on each CUBIC
    /// controller × path, judged on its own cwnd and ssthresh: pass / fail / undecided / not
    /// observable, with evidence (docs/conform.md).
    // The flags are BBR's but for their help and `--cc`'s default: the suite's, set here.
    #[command(mut_arg("cc", |a| a.default_value(ccbench_conform::cubic::CUBIC.default_cc).help(
        "The CUBIC controllers to check, comma-separated: quic:cubic (ours, with HyStart++), tcp:cubic (the kernel's, its cwnd and ssthresh from TCP_INFO)"
    )))]
    #[command(mut_arg("rtts", |a| a.help("Round-trip times of the grid, comma-separated. [default: 10ms,40ms,100ms; --quick: 20ms,80ms]")))]
    #[command(mut_arg("rates", |a| a.help(
        "Bottleneck rates of the grid, comma-separated. [default: 10mbit,100mbit, the top one lowered to what this machine's emulator has carried; --quick: 20mbit]"
    )))]
    #[command(mut_arg("out", |a| a.help("Directory for the runs, their series and the matrix (default: ./results/<time>-conform-cubic).")))]
    #[command(mut_arg("cases", |a| a.help(
        "Only these cases, comma-separated by their number: §4.6 (or 4.6), HyStart++; only the runs their scenarios need are made. [default: every case runnable here]"
    )))]
    Cubic(ConformArgs),
}

impl ConformSuite {
    /// The suite asked for, and its flags.
    pub fn suite(self) -> (&'static ccbench_conform::Suite, ConformArgs) {
        match self {
            ConformSuite::Bbr(args) => (&ccbench_conform::bbr::BBR, args),
            ConformSuite::Cubic(args) => (&ccbench_conform::cubic::CUBIC, args),
        }
    }
}

#[derive(Args, Debug)]
pub struct ConformArgs {
    /// The BBR controllers to check, comma-separated: quic:bbr3, quic:bbr2, tcp:bbr (the
    /// kernel's, its mode inferred from TCP_CC_INFO's gains).
    #[arg(long, allow_hyphen_values = true, default_value = ccbench_conform::bbr::BBR.default_cc)]
    pub cc: CcList,
    /// Round-trip times of the grid, comma-separated. [default: 1ms,20ms,200ms; --quick: 20ms,80ms]
    #[arg(long, allow_hyphen_values = true, value_delimiter = ',')]
    pub rtts: Vec<Rtt>,
    /// Bottleneck rates of the grid, comma-separated. [default: 1mbit,20mbit,1gbit, the top one
    /// lowered to what this machine's emulator has carried; --quick: 20mbit]
    #[arg(long, allow_hyphen_values = true, value_delimiter = ',')]
    pub rates: Vec<Rate>,
    /// Runs per case, controller and path; a cell is decided over them with --expect's
    /// order-statistic rules (5 or more at α = 0.05, else undecided). On a grid of 2 paths or
    /// more each case is also judged over the paths (5 or more decide). [default: 1]
    #[arg(long)]
    pub runs: Option<u32>,
    /// The short grid: 2 RTTs × 1 rate, 1 run each (every cell stays undecided over runs; the
    /// per-run outcomes are shown).
    #[arg(long)]
    pub quick: bool,
    /// Directory for the runs, their series and the matrix (default: ./results/<time>-conform-bbr).
    #[arg(long)]
    pub out: Option<PathBuf>,
    /// Write the matrix as JUnit XML to FILE: one testcase per case × assertion × controller × path.
    #[arg(long, value_name = "FILE")]
    pub junit: Option<PathBuf>,
    /// Seed of every run (default: random, and printed).
    #[arg(long)]
    pub seed: Option<u64>,
    /// Only these cases, comma-separated by their number: A.1, A.14, §5.3.3 (or 5.3.3), …; only
    /// the runs their scenarios need are made. [default: every case runnable here]
    #[arg(long = "case", allow_hyphen_values = true, value_delimiter = ',')]
    pub cases: Vec<String>,
}

#[derive(Subcommand, Debug)]
pub enum BenchWhat {
    /// The emulator's goodput, CPU use, unconfigured drops and delay error across rates and RTTs,
    /// beside the kernel's veth path between two namespaces.
    Emulator(BenchEmulatorArgs),
    /// QUIC beside kernel TCP through the emulator: goodput and this process's CPU per Gbit/s,
    /// at unlimited rate (0 ms) and at 1 Gbit/s, 10 ms.
    Transports(BenchTransportsArgs),
}

#[derive(Args, Debug)]
pub struct BenchTransportsArgs {
    /// Algorithms to measure, comma-separated, `tcp:` and `quic:` names alike.
    #[arg(long, default_value = "tcp:cubic,quic:cubic,quic:bbr3")]
    pub cc: CcList,
    /// How long each cell sends.
    #[arg(long, default_value = "4s")]
    pub duration: String,
    /// Also write bench.json into this directory.
    #[arg(long)]
    pub out: Option<PathBuf>,
}

#[derive(Args, Debug)]
pub struct BenchEmulatorArgs {
    /// Configured rates to measure, comma-separated.
    #[arg(long, default_value = "10mbit,100mbit,1gbit,10gbit,unlimited")]
    pub rates: String,
    /// Round-trip times to measure, comma-separated.
    #[arg(long, default_value = "0,10ms,50ms")]
    pub rtts: String,
    /// How long each cell sends.
    #[arg(long, default_value = "4s")]
    pub duration: String,
    /// The algorithm of the bulk flow, a `tcp:` or `quic:` name as for `run --cc`.
    #[arg(long, default_value = "cubic")]
    pub cc: Algorithm,
    /// Also write bench.json into this directory.
    #[arg(long)]
    pub out: Option<PathBuf>,
    /// After each emulator cell, the same cell with early wake-ups and the spin before a
    /// deadline turned off (a row "emulator, no early wake"): their effect in one run.
    #[arg(long)]
    pub compare_wake: bool,
    /// Emulator batches to measure side by side, comma-separated (as `run --emulator-batch`:
    /// durations of at most 1ms, or auto): each rate-limited cell once per batch. [default: 25us]
    #[arg(long, allow_hyphen_values = true, value_delimiter = ',')]
    pub emulator_batch: Vec<EmulatorBatch>,
}

layer! {
    /// The emulated path. Rates, delays, losses and buffers apply to both directions unless the
    /// -down (server → client) or -up (client → server) variant is given.
    #[derive(Args, Deserialize, Debug, Clone, Default, PartialEq)]
    #[serde(deny_unknown_fields, default, rename_all = "kebab-case")]
    pub struct PathOpts {
        /// Bottleneck rate, e.g. 100mbit, 1gbit, unlimited.
        #[arg(long, allow_hyphen_values = true, default_value = "100mbit")]
        pub rate: Option<Rate>,
        /// Rate from server to client (overrides --rate).
        #[arg(long, allow_hyphen_values = true)]
        pub rate_down: Option<Rate>,
        /// Rate from client to server (overrides --rate).
        #[arg(long, allow_hyphen_values = true)]
        pub rate_up: Option<Rate>,
        /// Base round-trip time, split evenly between the directions, e.g. 40ms, 250us.
        #[arg(long, allow_hyphen_values = true, default_value = "40ms")]
        pub rtt: Option<Rtt>,
        /// One-way delay from server to client (overrides half of --rtt).
        #[arg(long, allow_hyphen_values = true)]
        pub delay_down: Option<Delay>,
        /// One-way delay from client to server (overrides half of --rtt).
        #[arg(long, allow_hyphen_values = true)]
        pub delay_up: Option<Delay>,
        /// Random loss per packet: a percentage (1%) for Bernoulli loss, or
        /// gilbert:p=1%,r=25%[,bad=100%][,good=0%] for bursty Gilbert–Elliott loss.
        #[arg(long, allow_hyphen_values = true, default_value = "0")]
        pub loss: Option<LossSpec>,
        /// Loss from server to client (overrides --loss).
        #[arg(long, allow_hyphen_values = true)]
        pub loss_down: Option<LossSpec>,
        /// Loss from client to server (overrides --loss).
        #[arg(long, allow_hyphen_values = true)]
        pub loss_up: Option<LossSpec>,
        /// Drop-tail buffer at the bottleneck: 1bdp, 0.5bdp, 100pkt, 256kib, unlimited.
        #[arg(long, allow_hyphen_values = true, default_value = "1bdp")]
        pub buffer: Option<BufferSpec>,
        /// Buffer from server to client (overrides --buffer).
        #[arg(long, allow_hyphen_values = true)]
        pub buffer_down: Option<BufferSpec>,
        /// Buffer from client to server (overrides --buffer).
        #[arg(long, allow_hyphen_values = true)]
        pub buffer_up: Option<BufferSpec>,
        /// Rate from a Mahimahi trace file (one line per 1500-byte delivery opportunity, in ms;
        /// looped), for both directions; overrides --rate. See traces/ for examples.
        #[arg(long)]
        pub trace: Option<TraceFile>,
        /// Trace for the server → client direction only.
        #[arg(long)]
        pub trace_down: Option<TraceFile>,
        /// Trace for the client → server direction only.
        #[arg(long)]
        pub trace_up: Option<TraceFile>,
        /// A change during the run, TIME:KEY=VALUE[,KEY=VALUE…], repeatable; keys: rate, rtt, loss,
        /// rate-down, rate-up, delay-down, delay-up, loss-down, loss-up. E.g. --at 10s:rate=20mbit
        /// --at 20s:rtt=80ms. Times count from the start of each run's path.
        #[arg(long, allow_hyphen_values = true)]
        #[serde(deserialize_with = "crate::values::one_or_many")]
        pub at: Vec<AtChange>,
        /// Extra random delay per packet: 2ms (uniform 0–2 ms), normal:1ms (half-normal, sd 1 ms);
        /// add ",reorder" to let packets overtake each other.
        #[arg(long, allow_hyphen_values = true)]
        pub jitter: Option<JitterSpec>,
        /// Jitter from server to client (overrides --jitter).
        #[arg(long, allow_hyphen_values = true)]
        pub jitter_down: Option<JitterSpec>,
        /// Jitter from client to server (overrides --jitter).
        #[arg(long, allow_hyphen_values = true)]
        pub jitter_up: Option<JitterSpec>,
        /// Hold packets and release them in bursts every PERIOD (1us to 1s), e.g. 4ms, as Wi-Fi
        /// and cellular links release ACKs: a packet due at t leaves at the next multiple of
        /// PERIOD since the run's start. Both directions.
        #[arg(long, allow_hyphen_values = true)]
        pub aggregate: Option<Aggregate>,
        /// Aggregation from server to client, the data of a download (overrides --aggregate).
        #[arg(long, allow_hyphen_values = true)]
        pub aggregate_down: Option<Aggregate>,
        /// Aggregation from client to server, the ACKs of a download (overrides --aggregate).
        #[arg(long, allow_hyphen_values = true)]
        pub aggregate_up: Option<Aggregate>,
        /// Reordering: P%:DISPLACEMENT, a share of packets (chosen by the run's seed) held back
        /// by a time (1%:3ms) or a number of packets (1%:5pkt: that many serialization times),
        /// so later packets overtake them. Nothing is lost. 0 for none.
        #[arg(long, allow_hyphen_values = true)]
        pub reorder: Option<ReorderSpec>,
        /// Reordering from server to client (overrides --reorder).
        #[arg(long, allow_hyphen_values = true)]
        pub reorder_down: Option<ReorderSpec>,
        /// Reordering from client to server (overrides --reorder).
        #[arg(long, allow_hyphen_values = true)]
        pub reorder_up: Option<ReorderSpec>,
        /// Token-bucket policer before the buffer: RATE[:BURST], e.g. 10mbit:64kib (default burst:
        /// 10 ms at the rate). Packets beyond the tokens are dropped.
        #[arg(long, allow_hyphen_values = true)]
        pub policer: Option<PolicerSpec>,
        /// Policer from server to client (overrides --policer).
        #[arg(long, allow_hyphen_values = true)]
        pub policer_down: Option<PolicerSpec>,
        /// Policer from client to server (overrides --policer).
        #[arg(long, allow_hyphen_values = true)]
        pub policer_up: Option<PolicerSpec>,
        /// Queue management at the bottleneck: droptail, codel[:target=5ms,interval=100ms,…],
        /// pie[:target=15ms,tupdate=15ms,alpha=0.125,beta=1.25,max_burst=150ms,…],
        /// fq_codel[:target=5ms,interval=100ms,flows=1024,quantum=MTU,…] or
        /// dualpi2[:k=2,step=1ms,target=15ms,…] (see docs/aqm.md and docs/ecn.md).
        #[arg(long, allow_hyphen_values = true, default_value = "droptail")]
        pub aqm: Option<AqmSpec>,
        /// Queue management from server to client (overrides --aqm).
        #[arg(long, allow_hyphen_values = true)]
        pub aqm_down: Option<AqmSpec>,
        /// Queue management from client to server (overrides --aqm).
        #[arg(long, allow_hyphen_values = true)]
        pub aqm_up: Option<AqmSpec>,
        /// ECN at the TCP endpoints (net.ipv4.tcp_ecn in the run's namespaces, never the host's):
        /// off, on (RFC 3168) or accecn (Accurate ECN, where the kernel has it). on and accecn
        /// also make every AQM that can mark do so (ecn=on); see docs/ecn.md.
        #[arg(long, value_enum)]
        pub ecn: Option<EcnArg>,
        /// A fault of the path on the ECN field, before the buffer: bleach (ECT cleared),
        /// ce-all (CE on every packet) or drop-ect (ECN-capable packets dropped).
        #[arg(long, allow_hyphen_values = true)]
        pub ecn_fault: Option<EcnFaultSpec>,
        /// ECN fault from server to client (overrides --ecn-fault).
        #[arg(long, allow_hyphen_values = true)]
        pub ecn_fault_down: Option<EcnFaultSpec>,
        /// ECN fault from client to server (overrides --ecn-fault).
        #[arg(long, allow_hyphen_values = true)]
        pub ecn_fault_up: Option<EcnFaultSpec>,
        /// MTU of the emulated link in bytes.
        #[arg(long, default_value = "1500")]
        pub mtu: Option<Mtu>,
        /// Read one packet per system call instead of letting the kernel hand over TSO superframes
        /// (which ccbench cuts into MTU-sized segments either way). Slower; for comparison.
        #[arg(long)]
        pub no_offload: bool,
        /// Minimum time between the emulator's wake-ups: departures closer together leave in one
        /// batch, at most this late. 0 gives every packet its own wake-up (costly above ~500 Mbit/s).
        #[arg(long, allow_hyphen_values = true, default_value = "25us")]
        pub emulator_batch: Option<EmulatorBatch>,
    }
}

layer! {
    /// What a `run` compares and how: every `run` flag that a preset may set too (all but
    /// --preset, --out and --json). In a preset the fields are these flags without dashes.
    #[derive(Args, Deserialize, Debug, Clone, Default, PartialEq)]
    #[serde(deny_unknown_fields, default, rename_all = "kebab-case")]
    pub struct RunOpts {
        /// Algorithms to compare, comma-separated, e.g. bbr,cubic. Each must be available on this
        /// host. [default: bbr,cubic]
        #[arg(long, allow_hyphen_values = true)]
        pub cc: Option<CcList>,
        /// The path's flags; a preset names them at the same level as the others.
        #[command(flatten)]
        #[serde(skip)]
        pub path: PathOpts,
        // The help and the values are the registry's (`WorkloadKind::help`, its `ValueEnum`).
        #[arg(long, value_enum, default_value = "bulk", help = WorkloadKind::help())]
        pub workload: Option<WorkloadKind>,
        /// How long each bulk run sends, e.g. 10s.
        #[arg(long, allow_hyphen_values = true, default_value = "10s")]
        pub duration: Option<RunDuration>,
        /// Every workload's own flags (`--size`, `--requests`, `--page`, …), defined in its
        /// module; a preset names them at the same level as the others.
        #[command(flatten)]
        #[serde(skip)]
        pub workload_flags: WorkloadFlags,
        /// Give up on a file, objects or page run after this long and mark it incomplete.
        #[arg(long, allow_hyphen_values = true, default_value = "600s")]
        pub timeout: Option<Timeout>,
        /// Parallel TCP connections per run (each running the compared algorithm), or a mix of
        /// algorithms sharing the bottleneck in every run, e.g. bbr:2,cubic:2; a group may have an
        /// access RTT of its own behind the bottleneck, added to --rtt: bbr:1@10ms,cubic:1@60ms.
        #[arg(long, allow_hyphen_values = true, default_value = "1")]
        pub flows: Option<FlowsSpec>,
        /// In a mix, each flow starts this long after the previous one (in the order given).
        #[arg(long, allow_hyphen_values = true, default_value = "0s")]
        pub stagger: Option<Stagger>,
        /// Which way the data flows.
        #[arg(long, value_enum, default_value = "download")]
        pub direction: Option<DirectionArg>,
        /// Runs per algorithm, interleaved across algorithms; or `auto`: stop as soon as the verdict
        /// is decided (a sequential design whose overall error stays at 5 %), at most --max-runs.
        #[arg(long, default_value = "5")]
        pub runs: Option<RunsSpec>,
        /// With --runs auto: the most runs per algorithm before it gives up deciding.
        #[arg(long, default_value = "20")]
        pub max_runs: Option<MaxRuns>,
        /// The smallest difference called a win: a significant difference below it is reported as
        /// "significant but below", and one whose whole CI lies within it as "equivalent".
        #[arg(long, allow_hyphen_values = true, default_value = "2%")]
        pub min_effect: Option<MinEffect>,
        /// How often the sender's TCP_INFO and the emulator's queue are sampled.
        #[arg(long, allow_hyphen_values = true, default_value = "10ms")]
        pub sample_interval: Option<SampleInterval>,
        /// Seed for the run order, the loss models and QUIC BBR's probe randomness (default:
        /// random, and recorded).
        #[arg(long)]
        pub seed: Option<u64>,
        /// Diagnostic: run the receiving end of every QUIC connection with this algorithm
        /// instead of the sender's (e.g. cubic), to reproduce a server/client mismatch on
        /// purpose; the result then carries the mismatch warning. Bulk, file and objects.
        #[arg(long, allow_hyphen_values = true, value_name = "ALG")]
        pub quic_receiver_cc: Option<QuicReceiverCc>,
        /// An expectation judged over the runs, repeatable: '[ALG:]METRIC OP VALUE', e.g.
        /// 'goodput >= 90%' (of the bottleneck), 'bbr:rtt_p50 <= 125%' (of the base RTT),
        /// 'retrans <= 2%', 'jain_converged >= 0.9'. In a mix, ALG: on share, goodput, rtt_p50
        /// or rtt_p95 judges that algorithm's flows alone. Each passes, fails or stays
        /// undecided by a one-sided CI of its median at the run's α; exit status 1 unless all
        /// pass.
        #[arg(long, allow_hyphen_values = true, value_name = "EXPR")]
        #[serde(deserialize_with = "crate::values::one_or_many")]
        pub expect: Vec<ExpectArg>,
    }
}

#[derive(Args, Debug)]
pub struct RunArgs {
    /// Run a scenario preset (see `ccbench presets`) or a preset TOML file: every condition in
    /// turn, then a table across them. Flags given here override the preset's.
    #[arg(long)]
    pub preset: Option<String>,
    /// Emulate the path in a path file (as written by `ccbench probe`): TOML whose fields are
    /// path flags without dashes. Path flags given here override the file's.
    #[arg(long)]
    pub path: Option<PathBuf>,
    /// The flags given on the command line, and only those (not their defaults).
    #[command(flatten)]
    pub opts: RunOpts,
    /// Directory for results (default: ./results/<time>-<algorithms>).
    #[arg(long)]
    pub out: Option<PathBuf>,
    /// Also print the full JSON result to standard output.
    #[arg(long)]
    pub json: bool,
    /// Write the --expect judgements as JUnit XML to FILE: one testcase per expectation ×
    /// algorithm (per condition with --preset), for a CI system's test report.
    #[arg(long, value_name = "FILE")]
    pub junit: Option<PathBuf>,
    /// Write a qlog (JSON-SEQ, `.sqlog`: congestion state updates, metrics updated, packets
    /// lost) per QUIC connection of each run into the run's series folder, for qvis.
    #[arg(long)]
    pub qlog: bool,
    /// Run over a real path: the far end is the `ccbench serve` at HOST:PORT (bulk and file
    /// workloads), instead of an emulated path. Needs --secret-file.
    #[arg(long, value_name = "HOST:PORT")]
    pub remote: Option<RemoteAddr>,
    /// The secret shared with the remote `ccbench serve` (a private file; see `ccbench serve --help`).
    #[arg(long, value_name = "FILE")]
    pub secret_file: Option<PathBuf>,
    /// With --remote: probe the path first (through that ccbench serve), then run the experiment
    /// on the real path and on its emulated twin, run by run in turn, and report them side by
    /// side: does the emulator predict reality? Needs root (the twin is emulated here).
    #[arg(long)]
    pub twin: bool,
}

#[derive(Args, Debug)]
pub struct ServeArgs {
    /// Address and port to listen on. Loopback only unless you say otherwise.
    #[arg(long, default_value = "127.0.0.1:7450", value_name = "ADDR:PORT")]
    pub listen: ListenAddr,
    /// The shared secret: a private regular file (mode 600) of at least 128 random bits as
    /// hex (32 digits) or base64 (22 symbols); make one with --new-secret. Copy it to the
    /// client host over a channel you trust (e.g. scp).
    #[arg(long, value_name = "FILE", required_unless_present = "new_secret")]
    pub secret_file: Option<PathBuf>,
    /// Write a fresh 256-bit secret (64 hex digits) to FILE, mode 600, and exit. FILE must not
    /// exist yet.
    #[arg(long, value_name = "FILE", conflicts_with = "secret_file")]
    pub new_secret: Option<PathBuf>,
    /// The longest test this server runs (a file transfer is given up at this age).
    #[arg(long, default_value = "120s")]
    pub max_duration: MaxDuration,
    /// The most bytes one test may move (all its flows together).
    #[arg(long, default_value = "10gb")]
    pub max_bytes: Size,
    /// How many clients may be connected at once.
    #[arg(long, default_value = "4")]
    pub max_clients: MaxClients,
    /// How many tests the clients holding the secret may start per minute, together.
    #[arg(long, default_value = "60")]
    pub max_tests_per_minute: MaxTestsPerMinute,
    /// The fastest a path probe (`ccbench probe`) may send from this host; its bytes and time
    /// are held to --max-bytes and --max-duration like a test's.
    #[arg(long, default_value = "1gbit")]
    pub max_probe_rate: Rate,
    /// How long a connected client may go without starting a test before serve closes its
    /// session and frees its slot (a `check` does not count).
    #[arg(long, default_value = "60s")]
    pub idle_timeout: IdleTimeout,
}

#[derive(Args, Debug)]
pub struct ExecArgs {
    #[command(flatten)]
    pub path: PathOpts,
    /// A shell command started first in the server namespace (e.g. 'iperf3 -s') and stopped afterwards.
    #[arg(long)]
    pub server_cmd: Option<String>,
    /// Seed for the loss models.
    #[arg(long)]
    pub seed: Option<u64>,
    /// The command to run in the client namespace; $CCBENCH_SERVER_ADDR holds the server's address.
    #[arg(last = true, required = true)]
    pub command: Vec<String>,
}

/// A flag that takes a value followed straight by another flag (`--rate --rtt 40ms`): with
/// `allow_hyphen_values` (so that "-5ms" reaches the validator and is explained) clap would
/// take "--rtt" as the rate. Returns the one-line error for the first such flag.
pub fn missing_value(argv: &[std::ffi::OsString]) -> Option<UsageError> {
    let root = Cli::command();
    let sub = argv.get(1).and_then(|s| s.to_str()).and_then(|name| root.find_subcommand(name))?;
    let args: Vec<&str> = argv.iter().skip(2).map_while(|a| a.to_str()).take_while(|a| *a != "--").collect();
    args.windows(2).find_map(|w| {
        let name = w[0].strip_prefix("--").filter(|n| !n.contains('='))?;
        let arg = sub.get_arguments().find(|a| a.get_long() == Some(name))?;
        let takes_value = arg.get_action().takes_values();
        (takes_value && w[1].starts_with("--")).then(|| UsageError::new(w[0], w[1], "a value after the flag, not another flag"))
    })
}

/// Parses the command line. The `run` layer keeps only what was given: a flag's default is
/// the lowest layer, below a preset's, not a value the user chose.
pub fn parse_from<I, T>(argv: I) -> Result<Cli, clap::Error>
where
    I: IntoIterator<Item = T>,
    T: Into<std::ffi::OsString> + Clone,
{
    let matches = Cli::command().try_get_matches_from(argv)?;
    let mut cli = Cli::from_arg_matches(&matches)?;
    match (&mut cli.command, matches.subcommand()) {
        (Command::Run(args), Some(("run", m))) => args.opts.forget_default("opts", m),
        (Command::Sweep(args), Some(("sweep", m))) => args.opts.forget_default("opts", m),
        _ => {}
    }
    Ok(cli)
}

/// A value that one of the flag types refused, as the one-line usage error that names the flag,
/// the value and what is allowed (`invalid --rate "5furlongs": expected a rate such as …`);
/// `None` for clap's other errors, which keep clap's words.
pub fn usage_error(e: &clap::Error) -> Option<UsageError> {
    use clap::error::{ContextKind, ContextValue};
    let expected = std::error::Error::source(e)?.downcast_ref::<Expected>()?;
    let Some(ContextValue::String(arg)) = e.get(ContextKind::InvalidArg) else { return None };
    let Some(ContextValue::String(value)) = e.get(ContextKind::InvalidValue) else { return None };
    let flag = arg.split_whitespace().next().unwrap_or(arg);
    Some(UsageError::new(flag, value, expected.0.clone()))
}

// The other subcommands' flags: here, so that the command line is defined in one module that
// depends on no command (each command module imports its arguments from here).

#[derive(Args, Debug)]
pub struct CompletionsArgs {
    /// The shell to complete for, e.g. `ccbench completions bash > /etc/bash_completion.d/ccbench`.
    #[arg(value_enum)]
    pub shell: Shell,
}

#[derive(Args, Debug)]
pub struct ManArgs {
    /// Write ccbench.1 and one page per subcommand (ccbench-run.1, …) into DIR instead of
    /// printing ccbench.1.
    #[arg(long, value_name = "DIR")]
    pub dir: Option<PathBuf>,
}

#[derive(Args, Debug)]
pub struct CompareArgs {
    /// Results to compare: each a result.json or the directory holding it, as PATH or LABEL=PATH
    /// (the label defaults to the directory's name). Each algorithm of each result is one arm,
    /// labelled LABEL:ALGORITHM, or just LABEL when every result has one algorithm.
    #[arg(required = true, value_name = "[LABEL=]PATH")]
    pub inputs: Vec<String>,
    /// Compare only this algorithm of each result (e.g. cubic before and after a kernel
    /// upgrade); the arms are then labelled by their results alone.
    #[arg(long)]
    pub cc: Option<String>,
    /// What the verdict compares: score (the results' own metric: goodput, content throughput
    /// or page-load speed), goodput, or rtt (each run's median sender RTT, lower is better).
    #[arg(long, value_enum, default_value = "score")]
    pub metric: MetricArg,
    /// Directory for compare.json, runs.csv and report.html (default: ./results/<time>-compare).
    #[arg(long)]
    pub out: Option<PathBuf>,
    /// Also print compare.json to standard output.
    #[arg(long)]
    pub json: bool,
}

#[derive(ValueEnum, Clone, Copy, Debug)]
pub enum MetricArg {
    Score,
    Goodput,
    Rtt,
}

#[derive(Args, Debug)]
pub struct ProbeArgs {
    /// The far end: HOST:PORT of a `ccbench serve`.
    pub target: Option<String>,
    /// The secret shared with that `ccbench serve`.
    #[arg(long)]
    pub secret_file: Option<PathBuf>,
    /// Probe an emulated path built from the path flags instead, the probe's server half in
    /// the server namespace and its client half in the client's: does probe recover the path?
    #[arg(long)]
    pub emulated: bool,
    /// With --emulated: the path to emulate.
    #[command(flatten)]
    pub path: PathOpts,
    /// With --emulated: seed for the emulator's loss models.
    #[arg(long)]
    pub seed: Option<u64>,
    /// Packets per direction for the loss count: 10 000 measure 1 % loss to ±0.2 points (95 %).
    #[arg(long, default_value_t = 10_000, value_parser = clap::value_parser!(u32).range(100..=1_000_000))]
    pub loss_packets: u32,
    /// The rate search stops here: a faster path is reported as at least this.
    #[arg(long, allow_hyphen_values = true, default_value = "1gbit")]
    pub max_rate: Rate,
    /// Write the path file here (TOML; fields are path flags).
    #[arg(long)]
    pub out: Option<PathBuf>,
    /// Also print the full estimate as JSON.
    #[arg(long)]
    pub json: bool,
}

#[derive(Args, Debug)]
pub struct TuneArgs {
    /// The kernel TCP algorithm to make this host's default for new TCP sockets, as for
    /// `run --cc` (`bbr` or `tcp:bbr`). [default: bbr]
    #[arg(long)]
    pub cc: Option<Algorithm>,
    /// Make the changes: at runtime (/proc/sys) and at boot (/etc/sysctl.d/90-ccbench.conf),
    /// backing up the previous values first. Without it, tune only prints what it would do.
    #[arg(long, conflicts_with = "revert")]
    pub apply: bool,
    /// Restore the values and the file as they were before the first --apply.
    #[arg(long, conflicts_with = "cc")]
    pub revert: bool,
}

#[derive(Args, Debug)]
pub struct SweepArgs {
    /// The sweep's spec: a TOML file with [defaults] (run flags without dashes, as in a preset)
    /// and [axes] (each key a run flag, each value a list; the grid is their product).
    pub spec: PathBuf,
    /// Flags given here go over every cell (an axis's flag cannot be given).
    #[command(flatten)]
    pub opts: RunOpts,
    /// Directory for results (default: ./results/<time>-<spec name>), on a file system every
    /// task's node mounts. Any number of tasks may run into the same OUT at once: each takes the
    /// next cell nobody holds. Run again with the same OUT to resume: finished cells are skipped.
    #[arg(long)]
    pub out: Option<PathBuf>,
    /// Cells run at once by this task.
    #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u32).range(1..=64))]
    pub parallel: u32,
    /// Take only shard I of N's cells (0-based: 0/4 … 3/4): the cells, sorted by id, at
    /// positions I, I+N, I+2N, …. Without it a task takes any cell (the usual way: tasks then
    /// balance themselves, and any of them may be resubmitted).
    #[arg(long, value_name = "I/N")]
    pub shard: Option<Shard>,
    /// Accepted from manifests written for fixed shards; has no effect (every task takes cells
    /// from the shared queue).
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u32).range(1..=100_000), hide = true)]
    pub shards: Option<u32>,
    /// Attempts after the first for a cell that fails, before it is marked failed.
    #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u32).range(0..=20))]
    pub retries: u32,
    /// Run cells marked failed again (they are skipped otherwise).
    #[arg(long)]
    pub retry_failed: bool,
    /// This task's name in the queue's claims, `ccbench status` and the cells' logs (default:
    /// the Slurm job and task, or the Kubernetes index, with host and PID). Give it explicitly
    /// where sudo clears the scheduler's variables.
    #[arg(long, value_name = "NAME")]
    pub worker: Option<String>,
    /// Seconds a claim on a cell stands without renewal (renewed every fifth of it); a lapsed
    /// claim is taken over by another task. For tests and slow file systems.
    #[arg(long, value_name = "SECS", hide = true, value_parser = clap::value_parser!(u32).range(1..=86_400))]
    pub lease_secs: Option<u32>,
    /// Plan every cell and list them (this shard's, if sharded), then stop; runs nothing.
    #[arg(long)]
    pub dry_run: bool,
    /// Write the cells' --expect judgements as JUnit XML to FILE: one testsuite per cell (named
    /// by its label), one testcase per expectation × algorithm, for a CI system's test report.
    #[arg(long, value_name = "FILE")]
    pub junit: Option<PathBuf>,
}

#[derive(Args, Debug)]
pub struct MergeArgs {
    /// A sweep's OUT, or shard directories (OUT/shard-I-of-N, from older ccbench), or a
    /// directory holding them.
    #[arg(required = true)]
    pub dirs: Vec<PathBuf>,
    /// Directory for the merged result set: new, empty, or an earlier merge's, which is
    /// replaced.
    #[arg(long)]
    pub out: PathBuf,
    /// Merge what has finished even if cells are missing (they are listed as pending).
    #[arg(long)]
    pub partial: bool,
}

#[derive(Args, Debug)]
pub struct ExplainArgs {
    /// A run's OUT (its result.json), or a sweep's, merge's or preset's directory.
    pub dir: PathBuf,
}

#[derive(Args, Debug)]
pub struct StatusArgs {
    /// The sweep's OUT.
    pub out: PathBuf,
    /// Print the status as JSON.
    #[arg(long)]
    pub json: bool,
}
