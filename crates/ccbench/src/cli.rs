//! Command-line surface. Parsing only: values stay strings here and are validated (with the
//! flag's name in every message) where they are turned into specs.

use clap::{Args, Parser, Subcommand, ValueEnum};
use std::path::PathBuf;

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
    /// Run any command in the client namespace behind an emulated path (like Mahimahi's shells).
    Exec(ExecArgs),
    /// Show what this host can do: root, TUN, namespaces, algorithms, qdiscs.
    Doctor,
    /// Measure ccbench itself on this machine.
    #[command(subcommand)]
    Bench(BenchWhat),
    /// List the scenario presets that `ccbench run --preset NAME` runs.
    Presets,
    /// Print a Mahimahi trace (for --trace) made by ccbench's generators.
    #[command(subcommand)]
    Trace(TraceKind),
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

#[derive(Subcommand, Debug)]
pub enum BenchWhat {
    /// The emulator's goodput, CPU use, unconfigured drops and delay error across rates and RTTs,
    /// beside the kernel's veth path between two namespaces.
    Emulator(BenchEmulatorArgs),
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
    /// The algorithm of the bulk flow.
    #[arg(long, default_value = "cubic")]
    pub cc: String,
    /// Also write bench.json into this directory.
    #[arg(long)]
    pub out: Option<PathBuf>,
}

/// The emulated path. Rates, delays, losses and buffers apply to both directions unless the
/// -down (server → client) or -up (client → server) variant is given.
#[derive(Args, Debug, Clone)]
pub struct PathArgs {
    /// Bottleneck rate, e.g. 100mbit, 1gbit, unlimited.
    #[arg(long, allow_hyphen_values = true, default_value = "100mbit")]
    pub rate: String,
    /// Rate from server to client (overrides --rate).
    #[arg(long, allow_hyphen_values = true)]
    pub rate_down: Option<String>,
    /// Rate from client to server (overrides --rate).
    #[arg(long, allow_hyphen_values = true)]
    pub rate_up: Option<String>,
    /// Base round-trip time, split evenly between the directions, e.g. 40ms, 250us.
    #[arg(long, allow_hyphen_values = true, default_value = "40ms")]
    pub rtt: String,
    /// One-way delay from server to client (overrides half of --rtt).
    #[arg(long, allow_hyphen_values = true)]
    pub delay_down: Option<String>,
    /// One-way delay from client to server (overrides half of --rtt).
    #[arg(long, allow_hyphen_values = true)]
    pub delay_up: Option<String>,
    /// Random loss per packet: a percentage (1%) for Bernoulli loss, or
    /// gilbert:p=1%,r=25%[,bad=100%][,good=0%] for bursty Gilbert–Elliott loss.
    #[arg(long, allow_hyphen_values = true, default_value = "0")]
    pub loss: String,
    /// Loss from server to client (overrides --loss).
    #[arg(long, allow_hyphen_values = true)]
    pub loss_down: Option<String>,
    /// Loss from client to server (overrides --loss).
    #[arg(long, allow_hyphen_values = true)]
    pub loss_up: Option<String>,
    /// Drop-tail buffer at the bottleneck: 1bdp, 0.5bdp, 100pkt, 256kib, unlimited.
    #[arg(long, allow_hyphen_values = true, default_value = "1bdp")]
    pub buffer: String,
    /// Buffer from server to client (overrides --buffer).
    #[arg(long, allow_hyphen_values = true)]
    pub buffer_down: Option<String>,
    /// Buffer from client to server (overrides --buffer).
    #[arg(long, allow_hyphen_values = true)]
    pub buffer_up: Option<String>,
    /// Rate from a Mahimahi trace file (one line per 1500-byte delivery opportunity, in ms;
    /// looped), for both directions; overrides --rate. See traces/ for examples.
    #[arg(long)]
    pub trace: Option<PathBuf>,
    /// Trace for the server → client direction only.
    #[arg(long)]
    pub trace_down: Option<PathBuf>,
    /// Trace for the client → server direction only.
    #[arg(long)]
    pub trace_up: Option<PathBuf>,
    /// A change during the run, TIME:KEY=VALUE[,KEY=VALUE…], repeatable; keys: rate, rtt, loss,
    /// rate-down, rate-up, delay-down, delay-up, loss-down, loss-up. E.g. --at 10s:rate=20mbit
    /// --at 20s:rtt=80ms. Times count from the start of each run's path.
    #[arg(long, allow_hyphen_values = true)]
    pub at: Vec<String>,
    /// Extra random delay per packet: 2ms (uniform 0–2 ms), normal:1ms (half-normal, sd 1 ms);
    /// add ",reorder" to let packets overtake each other.
    #[arg(long, allow_hyphen_values = true)]
    pub jitter: Option<String>,
    /// Jitter from server to client (overrides --jitter).
    #[arg(long, allow_hyphen_values = true)]
    pub jitter_down: Option<String>,
    /// Jitter from client to server (overrides --jitter).
    #[arg(long, allow_hyphen_values = true)]
    pub jitter_up: Option<String>,
    /// Token-bucket policer before the buffer: RATE[:BURST], e.g. 10mbit:64kib (default burst:
    /// 10 ms at the rate). Packets beyond the tokens are dropped.
    #[arg(long, allow_hyphen_values = true)]
    pub policer: Option<String>,
    /// Policer from server to client (overrides --policer).
    #[arg(long, allow_hyphen_values = true)]
    pub policer_down: Option<String>,
    /// Policer from client to server (overrides --policer).
    #[arg(long, allow_hyphen_values = true)]
    pub policer_up: Option<String>,
    /// Queue management at the bottleneck: droptail, or codel[:target=5ms,interval=100ms].
    #[arg(long, allow_hyphen_values = true, default_value = "droptail")]
    pub aqm: String,
    /// MTU of the emulated link in bytes.
    #[arg(long, default_value_t = 1500, value_parser = clap::value_parser!(u32).range(576..=9000))]
    pub mtu: u32,
    /// Read one packet per system call instead of letting the kernel hand over TSO superframes
    /// (which ccbench cuts into MTU-sized segments either way). Slower; for comparison.
    #[arg(long)]
    pub no_offload: bool,
    /// Minimum time between the emulator's wake-ups: departures closer together leave in one
    /// batch, at most this late. 0 gives every packet its own wake-up (costly above ~500 Mbit/s).
    #[arg(long, allow_hyphen_values = true, default_value = "25us")]
    pub emulator_batch: String,
}

#[derive(ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub enum WorkloadArg {
    Bulk,
    File,
    Objects,
    Page,
}

#[derive(ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub enum DirectionArg {
    /// The server sends (a download).
    Download,
    /// The client sends (an upload).
    Upload,
}

#[derive(Args, Debug)]
pub struct RunArgs {
    /// Run a scenario preset (see `ccbench presets`) or a preset TOML file: every condition in
    /// turn, then a table across them. Flags given here override the preset's.
    #[arg(long)]
    pub preset: Option<String>,
    /// Algorithms to compare, comma-separated, e.g. bbr,cubic. Each must be available on this
    /// host. [default: bbr,cubic]
    #[arg(long, allow_hyphen_values = true)]
    pub cc: Option<String>,
    #[command(flatten)]
    pub path: PathArgs,
    /// The traffic: bulk (flows for --duration), file (one --size transfer per flow), objects
    /// (HTTP PUT/GET load), page (a web page of many objects).
    #[arg(long, value_enum, default_value_t = WorkloadArg::Bulk)]
    pub workload: WorkloadArg,
    /// How long each bulk run sends, e.g. 10s.
    #[arg(long, allow_hyphen_values = true, default_value = "10s")]
    pub duration: String,
    /// file: bytes per flow [default: 10mb]; objects: bytes per object [default: 1mib].
    #[arg(long, allow_hyphen_values = true)]
    pub size: Option<String>,
    /// objects: number of requests per run [default: 200].
    #[arg(long, allow_hyphen_values = true)]
    pub requests: Option<String>,
    /// objects: concurrent persistent connections [default: 16].
    #[arg(long, allow_hyphen_values = true)]
    pub concurrency: Option<String>,
    /// objects: put (upload; the client sends) or get (download) [default: put].
    #[arg(long, allow_hyphen_values = true)]
    pub method: Option<String>,
    /// page: a built-in page (small, news, heavy) or a JSON file {"html_bytes": N, "objects": [sizes…]} [default: news].
    #[arg(long, allow_hyphen_values = true)]
    pub page: Option<String>,
    /// page: HTTP version, 1 (browser-like parallel connections) or 2 (one multiplexed connection) [default: 1].
    #[arg(long, allow_hyphen_values = true)]
    pub http: Option<String>,
    /// page: most parallel HTTP/1.1 connections [default: 6, like browsers].
    #[arg(long, allow_hyphen_values = true)]
    pub max_connections: Option<String>,
    /// Give up on a file, objects or page run after this long and mark it incomplete.
    #[arg(long, allow_hyphen_values = true, default_value = "600s")]
    pub timeout: String,
    /// Parallel TCP connections per run (each running the compared algorithm), or a mix of
    /// algorithms sharing the bottleneck in every run, e.g. bbr:2,cubic:2.
    #[arg(long, allow_hyphen_values = true, default_value = "1")]
    pub flows: String,
    /// In a mix, each flow starts this long after the previous one (in the order given).
    #[arg(long, allow_hyphen_values = true, default_value = "0s")]
    pub stagger: String,
    /// Which way the data flows.
    #[arg(long, value_enum, default_value_t = DirectionArg::Download)]
    pub direction: DirectionArg,
    /// Runs per algorithm, interleaved across algorithms; or `auto`: stop as soon as the verdict
    /// is decided (a sequential design whose overall error stays at 5 %), at most --max-runs.
    #[arg(long, default_value = "5", value_parser = parse_runs)]
    pub runs: RunsArg,
    /// With --runs auto: the most runs per algorithm before it gives up deciding.
    #[arg(long, default_value_t = 20, value_parser = clap::value_parser!(u32).range(1..=1000))]
    pub max_runs: u32,
    /// How often the sender's TCP_INFO and the emulator's queue are sampled.
    #[arg(long, allow_hyphen_values = true, default_value = "10ms")]
    pub sample_interval: String,
    /// Seed for the run order and the loss models (default: random, and recorded).
    #[arg(long)]
    pub seed: Option<u64>,
    /// Directory for results (default: ./results/<time>-<algorithms>).
    #[arg(long)]
    pub out: Option<PathBuf>,
    /// Also print the full JSON result to standard output.
    #[arg(long)]
    pub json: bool,
}

#[derive(Args, Debug)]
pub struct ExecArgs {
    #[command(flatten)]
    pub path: PathArgs,
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

/// `--runs`: a count, or `auto` (runs until decided).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RunsArg {
    Fixed(u32),
    Auto,
}

fn parse_runs(value: &str) -> Result<RunsArg, String> {
    match value.trim() {
        "auto" => Ok(RunsArg::Auto),
        v => match v.parse::<u32>() {
            Ok(n) if (1..=1000).contains(&n) => Ok(RunsArg::Fixed(n)),
            _ => Err("a whole number from 1 to 1000, or auto".to_string()),
        },
    }
}

/// A flag that takes a value followed straight by another flag (`--rate --rtt 40ms`): with
/// `allow_hyphen_values` (so that "-5ms" reaches the validator and is explained) clap would
/// take "--rtt" as the rate. Returns the one-line error for the first such flag.
pub fn missing_value(argv: &[std::ffi::OsString]) -> Option<ccbench::error::UsageError> {
    use clap::CommandFactory;
    let root = Cli::command();
    let sub = argv.get(1).and_then(|s| s.to_str()).and_then(|name| root.find_subcommand(name))?;
    let args: Vec<&str> = argv.iter().skip(2).map_while(|a| a.to_str()).take_while(|a| *a != "--").collect();
    args.windows(2).find_map(|w| {
        let name = w[0].strip_prefix("--").filter(|n| !n.contains('='))?;
        let arg = sub.get_arguments().find(|a| a.get_long() == Some(name))?;
        let takes_value = arg.get_action().takes_values();
        (takes_value && w[1].starts_with("--")).then(|| ccbench::error::UsageError::new(w[0], w[1], "a value after the flag, not another flag"))
    })
}
