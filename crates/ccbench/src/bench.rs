//! `ccbench bench emulator`: how fast and how faithful the emulator is on this machine, side by
//! side with the kernel's own veth path between two namespaces (the ceiling here).

use std::sync::atomic::AtomicBool;
use std::time::Instant;

use ccbench_emu::{EmulatedPath, PathReport, PathSpec, CLIENT_ADDR, SERVER_ADDR};
use ccbench_link::{time, Buffer, DirectionConfig, LossModel, Rate};
use ccbench_netns::Netns;
use ccbench_workload::{Algorithm, Amount, BulkResult, BulkSpec, Direction, RunContext, Workload};
use serde::Serialize;

use crate::cli::BenchEmulatorArgs;
use crate::error::UsageError;
use crate::values::EmulatorBatch;
use ccbench::units;

/// Buffers below this would make short-RTT rows measure CUBIC's losses, not the emulator.
const MIN_BENCH_BUFFER_BYTES: u64 = 256 * 1024;
/// The forwarders' spin bound (see `ccbench_emu::EarlyWake`).
const SPIN_ENV: &str = "CCBENCH_EMU_SPIN_US";

#[derive(Debug, Serialize)]
pub struct BenchRow {
    /// "veth", "emulator" or "emulator, no offload".
    pub path: String,
    pub rate_bps: Option<u64>,
    pub rtt_ms: f64,
    pub goodput_bps: f64,
    /// Goodput / (rate × payload per packet): 1.0 is a perfect link.
    pub of_rate: Option<f64>,
    /// CPU share of both forwarding threads together (1.0 = one core).
    pub emulator_cpu: Option<f64>,
    /// Kernel-side drops and malformed packets: loss nobody configured.
    /// Kernel queue drops, malformed packets and write errors; None when the device counters
    /// could not be read (or there is no emulator to count them).
    pub unconfigured_drops: Option<u64>,
    pub buffer_drops: u64,
    pub retransmits: u64,
    /// How late the emulator wrote packets relative to the model (p50 / p99, µs).
    pub delay_error_p50_us: Option<f64>,
    pub delay_error_p99_us: Option<f64>,
    /// This host's own timer floor, measured just before the cell with no emulator running:
    /// how late a thread set up as a forwarder wakes for an absolute deadline (p50 / p99, µs).
    /// Beside the delay error it says whether the emulator or the host is the limit.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub host_timer_p50_us: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub host_timer_p99_us: Option<f64>,
    /// The same floor measured *during* the cell, by a thread beside the forwarders sleeping
    /// for deadlines 1 ms apart (`ccbench_emu::TimerProbe`): the host's lateness under the
    /// cell's own load, which the idle floor above does not show.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub host_timer_cell_p50_us: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub host_timer_cell_p99_us: Option<f64>,
    /// The emulator's batch (`--emulator-batch`, resolved for the cell when `auto`), µs.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub batch_us: Option<u64>,
    /// CPU-seconds of both forwarding threads per GB of goodput.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub emulator_cpu_s_per_gb: Option<f64>,
    pub cpu_steal: Option<f64>,
    /// The algorithm, on `bench transports` rows (`tcp:cubic`, `quic:bbr3`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cc: Option<Algorithm>,
    /// CPU of this whole process while the flow ran (user + system, all threads; 1.0 = one
    /// core): the emulator, the workload's threads and the system calls they made.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub process_cpu: Option<f64>,
    /// Why a flow ended before its time (its goodput then covers only what it ran): a QUIC
    /// connection closed under it showed as a slow row before this was said (issue 17 §2).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
}

#[derive(Debug, Serialize)]
pub struct BenchResult {
    pub schema: &'static str,
    pub provenance: ccbench::provenance::Provenance,
    pub duration_s: f64,
    /// `--cc` as written: one algorithm (`bench emulator`) or a list (`bench transports`); each
    /// row names its own, typed.
    pub cc: String,
    pub rows: Vec<BenchRow>,
}

impl BenchResult {
    /// A finished benchmark: its provenance records when it finished.
    fn new(provenance: ccbench::provenance::Provenance, duration_s: f64, cc: &str, rows: Vec<BenchRow>) -> Self {
        BenchResult { schema: "ccbench.bench.v1", provenance: ccbench::provenance::finished(provenance), duration_s, cc: cc.to_string(), rows }
    }
}

struct Cell {
    offload: bool,
    batch: EmulatorBatch,
    /// More than one batch is measured: the row names its own.
    batch_named: bool,
    /// Early wake-ups and the spin before a deadline turned off (`--compare-wake`).
    no_early_wake: bool,
    rate: Option<u64>,
    rtt_ns: u64,
}

fn parse_list<T>(flag: &str, value: &str, parse: impl Fn(&str) -> Result<T, String>) -> Result<Vec<T>, UsageError> {
    value.split(',').map(|v| parse(v.trim()).map_err(|a| UsageError::new(flag, v, a))).collect()
}

fn workload(cc: &Algorithm, seconds: f64) -> BulkSpec {
    BulkSpec {
        flows: 1,
        direction: Direction::Download,
        amount: Amount::Seconds(seconds),
        cc: cc.clone(),
        mix: Vec::new(),
        port: 5201,
        sample_interval_us: 10_000,
        timeout_s: seconds + 30.0,
        quic_receiver_cc: None,
        knobs: Default::default(),
    }
}

fn payload_fraction(mtu: u32) -> f64 {
    // IPv4 (20) + TCP with timestamps (32) per packet.
    f64::from(mtu - 52) / f64::from(mtu)
}

pub fn run(args: &BenchEmulatorArgs) -> anyhow::Result<i32> {
    let rates = parse_list("--rates", &args.rates, |v| {
        let r = units::parse_rate(v)?;
        match r {
            Some(b) if b < 10_000 => Err("rates of at least 10kbit".into()),
            other => Ok(other),
        }
    })?;
    let rtts = parse_list("--rtts", &args.rtts, units::parse_duration_ns)?;
    let ns = units::parse_duration_ns(&args.duration).map_err(|a| UsageError::new("--duration", &args.duration, a))?;
    if !(1_000_000_000..=600_000_000_000).contains(&ns) {
        return Err(UsageError::new("--duration", &args.duration, "a duration between 1s and 10min").into());
    }
    let available = crate::host::usable_algorithms();
    // Any name `run --cc` takes (`cubic`, `tcp:cubic`, `quic:bbr3`): the same check, the same refusal.
    crate::spec::check_available("--cc", &args.cc, &available)?;
    let cc = args.cc.clone();
    crate::error::require_root("bench")?;
    let seconds = ns as f64 / 1e9;
    let stop = AtomicBool::new(false);
    let mut rows = Vec::new();
    let provenance = ccbench::provenance::of_this_host();

    eprintln!("measuring the veth ceiling…");
    rows.push(veth_row(&cc, seconds, &stop)?);
    let batches = if args.emulator_batch.is_empty() { vec![EmulatorBatch::default()] } else { args.emulator_batch.clone() };
    let batch_named = batches.len() > 1 || batches[0] != EmulatorBatch::default();
    let mut cells: Vec<Cell> = Vec::new();
    for &rtt_ns in &rtts {
        for &rate in &rates {
            for &batch in &batches {
                cells.push(Cell { offload: true, batch, batch_named, no_early_wake: false, rate, rtt_ns });
            }
            if args.compare_wake {
                cells.push(Cell { offload: true, batch: batches[0], batch_named, no_early_wake: true, rate, rtt_ns });
            }
        }
        // One packet per system call, as Mahimahi does, at the top rate: the offload's gain.
        if let Some(&top) = rates.last() {
            cells.push(Cell { offload: false, batch: batches[0], batch_named, no_early_wake: false, rate: top, rtt_ns });
        }
    }
    for (i, cell) in cells.iter().enumerate() {
        eprintln!(
            "cell {}/{}: {} at {} ms RTT{}…",
            i + 1,
            cells.len(),
            cell.rate.map(|r| units::fmt_rate(r as f64)).unwrap_or("unlimited".into()),
            cell.rtt_ns as f64 / 1e6,
            if cell.offload { "" } else { ", no offload" }
        );
        if cell.no_early_wake {
            eprintln!("  (early wake-ups off)");
        }
        rows.push(emulator_row(cell, &cc, seconds, &stop)?);
    }
    let result = BenchResult::new(provenance, seconds, &args.cc.to_string(), rows);
    println!("{}", table(&result));
    // What the emulator carried with real delay becomes this machine's capacity figure, used
    // to warn before runs that ask for more.
    match capacity_to_save(&result.rows, ccbench::limits::capacity().0) {
        Some(capacity) => {
            if let Some(file) = ccbench::limits::capacity_file() {
                if let Some(dir) = file.parent() {
                    let _ = std::fs::create_dir_all(dir);
                }
                if std::fs::write(&file, serde_json::json!({ "capacity_bps": capacity, "measured_at": ccbench::provenance::now_rfc3339() }).to_string()).is_ok()
                {
                    println!("Capacity  {} at ≥ 10 ms RTT, saved to {} for run-time warnings", units::fmt_rate(capacity), file.display());
                }
            }
        }
        None => {
            println!("Capacity  not measured: no cell at ≥ 10 ms RTT ran unlimited (`--rates …,unlimited`), and none carried more than the figure on record")
        }
    }
    if let Some(out) = &args.out {
        std::fs::create_dir_all(out)?;
        std::fs::write(out.join("bench.json"), serde_json::to_string_pretty(&result)?)?;
        println!("Results   {}", out.join("bench.json").display());
    }
    Ok(0)
}

fn steal<T>(f: impl FnOnce() -> T) -> (T, Option<f64>) {
    let t0 = Instant::now();
    let a = ccbench::provenance::cpu_steal_ms();
    let out = f();
    let b = ccbench::provenance::cpu_steal_ms();
    let cpus = std::thread::available_parallelism().map(|n| n.get()).unwrap_or(1) as f64;
    (out, a.zip(b).map(|(a, b)| (b - a) / (t0.elapsed().as_secs_f64() * 1000.0 * cpus)))
}

fn veth_row(cc: &Algorithm, seconds: f64, stop: &AtomicBool) -> anyhow::Result<BenchRow> {
    let client = Netns::new()?;
    let server = Netns::new()?;
    ccbench_netns::add_veth_pair(&client, "ccbv0", CLIENT_ADDR, &server, "ccbv1", SERVER_ADDR, 24)?;
    for ns in [&client, &server] {
        for (k, v) in ccbench_emu::NAMESPACE_SYSCTLS {
            ns.set_sysctl(k, v)?;
        }
    }
    let (bulk, steal) = steal(|| workload(cc, seconds).run(&RunContext::new(&client, &server, SERVER_ADDR, Instant::now(), stop)));
    let bulk = bulk?;
    Ok(BenchRow {
        path: "veth".into(),
        rate_bps: None,
        rtt_ms: 0.0,
        goodput_bps: bulk.goodput_bps,
        of_rate: None,
        emulator_cpu: None,
        unconfigured_drops: None,
        buffer_drops: 0,
        retransmits: retransmits(&bulk),
        delay_error_p50_us: None,
        delay_error_p99_us: None,
        host_timer_p50_us: None,
        host_timer_p99_us: None,
        host_timer_cell_p50_us: None,
        host_timer_cell_p99_us: None,
        batch_us: None,
        emulator_cpu_s_per_gb: None,
        cpu_steal: steal,
        cc: None,
        process_cpu: None,
        error: flow_error(&bulk),
    })
}

fn retransmits(bulk: &BulkResult) -> u64 {
    let tcp: u64 = bulk.flows.iter().filter_map(|f| f.sending.final_tcp_info.as_ref()).map(|t| u64::from(t.total_retrans)).sum();
    tcp + bulk.flows.iter().filter_map(|f| f.sending.final_quic.as_ref()).map(|q| q.packets_lost).sum::<u64>()
}

/// The first flow's error, if any flow ended with one.
fn flow_error(bulk: &BulkResult) -> Option<String> {
    bulk.flows.iter().find_map(|f| f.error.clone())
}

/// User + system CPU seconds of this process so far (every thread).
fn process_cpu_s() -> Option<f64> {
    let mut ru = std::mem::MaybeUninit::<libc::rusage>::zeroed();
    // SAFETY: getrusage fills the struct it is given.
    if unsafe { libc::getrusage(libc::RUSAGE_SELF, ru.as_mut_ptr()) } != 0 {
        return None;
    }
    // SAFETY: filled by the successful call above.
    let ru = unsafe { ru.assume_init() };
    let s = |t: libc::timeval| t.tv_sec as f64 + t.tv_usec as f64 / 1e6;
    Some(s(ru.ru_utime) + s(ru.ru_stime))
}

/// `ccbench bench transports`: each algorithm (kernel TCP and QUIC alike) through the emulator
/// at unlimited rate and at 1 Gbit/s 10 ms, with this process's CPU per Gbit/s of goodput.
pub fn run_transports(args: &crate::cli::BenchTransportsArgs) -> anyhow::Result<i32> {
    let ccs = &args.cc;
    let available = crate::host::usable_algorithms();
    for cc in ccs.names() {
        crate::spec::check_available("--cc", cc, &available)?;
    }
    let ns = units::parse_duration_ns(&args.duration).map_err(|a| UsageError::new("--duration", &args.duration, a))?;
    if !(1_000_000_000..=600_000_000_000).contains(&ns) {
        return Err(UsageError::new("--duration", &args.duration, "a duration between 1s and 10min").into());
    }
    crate::error::require_root("bench")?;
    let seconds = ns as f64 / 1e9;
    let stop = AtomicBool::new(false);
    let provenance = ccbench::provenance::of_this_host();
    let mut rows = Vec::new();
    for cell in [
        Cell { offload: true, batch: EmulatorBatch::default(), batch_named: false, no_early_wake: false, rate: None, rtt_ns: 0 },
        Cell { offload: true, batch: EmulatorBatch::default(), batch_named: false, no_early_wake: false, rate: Some(1_000_000_000), rtt_ns: 10_000_000 },
    ] {
        for cc in ccs.names() {
            eprintln!("{cc} at {} ms RTT, {}…", cell.rtt_ns as f64 / 1e6, cell.rate.map(|r| units::fmt_rate(r as f64)).unwrap_or("unlimited".into()));
            rows.push(emulator_row(&cell, cc, seconds, &stop)?);
        }
    }
    let result = BenchResult::new(provenance, seconds, &args.cc.to_string(), rows);
    println!("{}", transports_table(&result));
    if let Some(out) = &args.out {
        std::fs::create_dir_all(out)?;
        std::fs::write(out.join("bench.json"), serde_json::to_string_pretty(&result)?)?;
        println!("Results   {}", out.join("bench.json").display());
    }
    Ok(0)
}

/// The transports table (Markdown): CPU per Gbit/s is the process's cores divided by the
/// goodput in Gbit/s, and the same without the emulator's share.
pub fn transports_table(r: &BenchResult) -> String {
    let mut out = String::from("| algorithm | rate | RTT | goodput | process CPU | emulator CPU | CPU per Gbit/s | without the emulator | retransmits | CPU steal |\n|---|---|---|---|---|---|---|---|---|---|\n");
    let opt = |x: Option<f64>, f: &dyn Fn(f64) -> String| x.map(f).unwrap_or_else(|| "–".into());
    for row in &r.rows {
        let gbps = row.goodput_bps / 1e9;
        let per = |cores: Option<f64>| opt(cores.filter(|_| gbps > 0.0), &|c| format!("{:.2} cores", c / gbps));
        out.push_str(&format!(
            "| {} | {} | {} ms | {} | {} | {} | {} | {} | {} | {} |\n",
            row.cc.as_ref().map_or("–".into(), Algorithm::to_string),
            row.rate_bps.map(|b| units::fmt_rate(b as f64)).unwrap_or_else(|| "unlimited".into()),
            row.rtt_ms,
            units::fmt_rate(row.goodput_bps),
            opt(row.process_cpu, &|x| format!("{:.0} %", x * 100.0)),
            opt(row.emulator_cpu, &|x| format!("{:.0} %", x * 100.0)),
            per(row.process_cpu),
            per(row.process_cpu.zip(row.emulator_cpu).map(|(p, e)| (p - e).max(0.0))),
            row.retransmits,
            opt(row.cpu_steal, &|x| format!("{:.1} %", x * 100.0)),
        ));
    }
    for row in r.rows.iter().filter(|r| r.error.is_some()) {
        let rate = row.rate_bps.map(|b| units::fmt_rate(b as f64)).unwrap_or_else(|| "unlimited".into());
        out.push_str(&format!(
            "\n{} at {rate}, {} ms: the flow failed ({}); its goodput covers only the time it ran.\n",
            row.cc.as_ref().map_or("–".into(), Algorithm::to_string),
            row.rtt_ms,
            row.error.as_deref().unwrap_or_default()
        ));
    }
    out
}

/// Sleeps the host's timer floor is measured over before each cell, and their spacing.
const TIMER_FLOOR_SAMPLES: usize = 1000;
const TIMER_FLOOR_GAP: std::time::Duration = std::time::Duration::from_micros(100);
/// The spacing of the timer probe's sleeps during a cell.
const CELL_PROBE_GAP: std::time::Duration = std::time::Duration::from_millis(1);

fn emulator_row(cell: &Cell, cc: &Algorithm, seconds: f64, stop: &AtomicBool) -> anyhow::Result<BenchRow> {
    let mtu = 1500;
    let floor = ccbench_emu::host_timer_floor(TIMER_FLOOR_SAMPLES, TIMER_FLOOR_GAP);
    let (rate, buffer) = match cell.rate {
        None => (Rate::Unlimited, Buffer::Unlimited),
        Some(bps) => {
            let bdp = (bps as f64 / 8.0 * cell.rtt_ns as f64 / 1e9) as u64;
            (Rate::BitsPerSec(bps), Buffer::Bytes(bdp.max(MIN_BENCH_BUFFER_BYTES)))
        }
    };
    let dir = DirectionConfig { rate, delay_ns: time::Duration::from_nanos(cell.rtt_ns / 2), loss: LossModel::None, buffer, ..Default::default() };
    let batch_us = cell.batch.micros(cell.rate, cell.rtt_ns, mtu);
    let spec = PathSpec {
        down: dir.clone(),
        up: dir,
        mtu,
        seed: 1,
        sample_interval_us: 10_000,
        offload: cell.offload,
        batch_us,
        access: Vec::new(),
        tcp_ecn: Default::default(),
    };
    let epoch = Instant::now();
    // The forwarders read their spin bound when they start; 0 turns early wake-ups off.
    let previous = std::env::var_os(SPIN_ENV);
    if cell.no_early_wake {
        std::env::set_var(SPIN_ENV, "0");
    }
    let started = EmulatedPath::start(&spec, epoch);
    match previous {
        Some(v) => std::env::set_var(SPIN_ENV, v),
        None => std::env::remove_var(SPIN_ENV),
    }
    let path = started?;
    let hook = ccbench::run_workload::WindowHook(path.window());
    let cpu_before = process_cpu_s();
    let t0 = Instant::now();
    let probe = ccbench_emu::TimerProbe::start(CELL_PROBE_GAP);
    let (bulk, steal) = steal(|| workload(cc, seconds).run(&RunContext::new(&path.client, &path.server, SERVER_ADDR, epoch, stop).with_hook(&hook)));
    let in_cell = probe.finish();
    let process_cpu = process_cpu_s().zip(cpu_before).map(|(b, a)| (b - a) / t0.elapsed().as_secs_f64());
    let report: PathReport = path.finish();
    let bulk = bulk?;
    let d = &report.down;
    let gigabytes = bulk.goodput_bps * bulk.elapsed_s / 8e9;
    // Buffer drops within the measured window, as `run` counts them.
    let window_drops = ccbench::analysis::run_metrics(
        &ccbench::run_workload::WorkloadResult::Bulk(bulk.clone()),
        Some(&report),
        &Default::default(),
        Direction::Download,
        f64::INFINITY,
    )
    .drops_buffer
    .unwrap_or_default();
    let unconfigured = [&report.down, &report.up].iter().map(|r| Some(r.tun_tx_dropped? + r.tun_rx_dropped? + r.malformed + r.write_errors)).sum();
    Ok(BenchRow {
        path: {
            let base = match (cell.offload, cell.no_early_wake) {
                (true, false) => "emulator",
                (true, true) => "emulator, no early wake",
                (false, _) => "emulator, no offload",
            };
            match (cell.batch_named, cell.batch) {
                (false, _) => base.into(),
                (true, EmulatorBatch::Auto) => format!("{base}, batch auto ({batch_us} µs)"),
                (true, b) => format!("{base}, batch {b}"),
            }
        },
        rate_bps: cell.rate,
        rtt_ms: cell.rtt_ns as f64 / 1e6,
        goodput_bps: bulk.goodput_bps,
        of_rate: cell.rate.map(|r| bulk.goodput_bps / (r as f64 * payload_fraction(mtu))),
        emulator_cpu: Some(report.down.cpu_share + report.up.cpu_share),
        unconfigured_drops: unconfigured,
        buffer_drops: window_drops,
        retransmits: retransmits(&bulk),
        delay_error_p50_us: Some(d.lateness.p50_us),
        delay_error_p99_us: Some(d.lateness.p99_us),
        host_timer_p50_us: Some(floor.p50_us).filter(|_| floor.count > 0),
        host_timer_p99_us: Some(floor.p99_us).filter(|_| floor.count > 0),
        host_timer_cell_p50_us: Some(in_cell.p50_us).filter(|_| in_cell.count > 0),
        host_timer_cell_p99_us: Some(in_cell.p99_us).filter(|_| in_cell.count > 0),
        batch_us: Some(batch_us),
        emulator_cpu_s_per_gb: Some((report.down.cpu_s + report.up.cpu_s) / gigabytes).filter(|x| x.is_finite()),
        cpu_steal: steal,
        cc: Some(cc.clone()),
        process_cpu,
        error: flow_error(&bulk),
    })
}

/// A Markdown table, so it can go into the manual (docs/performance.md) as printed.
pub fn table(r: &BenchResult) -> String {
    let mut out = String::from("| path | rate | RTT | goodput | of rate | emulator CPU | CPU-s per GB | unconfigured drops | buffer drops | retransmits | delay error p50 / p99 | host timer p50 / p99 (idle) | host timer p50 / p99 (during the cell) | CPU steal |\n|---|---|---|---|---|---|---|---|---|---|---|---|---|---|\n");
    let opt = |x: Option<f64>, f: &dyn Fn(f64) -> String| x.map(f).unwrap_or_else(|| "–".into());
    for row in &r.rows {
        out.push_str(&format!(
            "| {} | {} | {} ms | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} |\n",
            row.path,
            row.rate_bps.map(|b| units::fmt_rate(b as f64)).unwrap_or_else(|| "unlimited".into()),
            row.rtt_ms,
            units::fmt_rate(row.goodput_bps),
            opt(row.of_rate, &|x| format!("{x:.3}")),
            opt(row.emulator_cpu, &|x| format!("{:.0} %", x * 100.0)),
            opt(row.emulator_cpu_s_per_gb, &|x| format!("{x:.2}")),
            // Unknown on an emulator row (counters unreadable); not applicable on veth (no emulator).
            row.unconfigured_drops.map(|n| n.to_string()).unwrap_or_else(|| if row.emulator_cpu.is_some() { "unknown".into() } else { "–".into() }),
            row.buffer_drops,
            row.retransmits,
            match (row.delay_error_p50_us, row.delay_error_p99_us) {
                (Some(a), Some(b)) => format!("{a:.0} / {b:.0} µs"),
                _ => "–".into(),
            },
            match (row.host_timer_p50_us, row.host_timer_p99_us) {
                (Some(a), Some(b)) => format!("{a:.0} / {b:.0} µs"),
                _ => "–".into(),
            },
            match (row.host_timer_cell_p50_us, row.host_timer_cell_p99_us) {
                (Some(a), Some(b)) => format!("{a:.0} / {b:.0} µs"),
                _ => "–".into(),
            },
            opt(row.cpu_steal, &|x| format!("{:.1} %", x * 100.0)),
        ));
    }
    out
}

/// The capacity figure to record, if this bench measured one, given the `current` figure (on
/// record or the default): the most an unlimited-rate emulator cell at ≥ 10 ms RTT carried (the
/// emulator's own ceiling); or, with no such cell, what a rate-limited cell carried where it is
/// more than `current` (the emulator can carry at least that). A bench of 100 Mbit/s cells
/// alone once recorded 94 Mbit/s as this machine's capacity, and every faster run then warned.
fn capacity_to_save(rows: &[BenchRow], current: f64) -> Option<f64> {
    let carried = |unlimited: bool| {
        rows.iter()
            .filter(|r| r.path == "emulator" && r.rtt_ms >= 10.0 && r.error.is_none() && (!unlimited || r.rate_bps.is_none()))
            .map(|r| r.goodput_bps)
            .fold(0.0, f64::max)
    };
    let (ceiling, at_least) = (carried(true), carried(false));
    if ceiling > 0.0 {
        Some(ceiling)
    } else {
        (at_least > current).then_some(at_least)
    }
}

#[cfg(test)]
mod finished_tests {
    use super::*;

    fn row(cc: &str, goodput_bps: f64, error: Option<&str>) -> BenchRow {
        BenchRow {
            path: "emulator".into(),
            rate_bps: Some(1_000_000_000),
            rtt_ms: 10.0,
            goodput_bps,
            of_rate: None,
            emulator_cpu: Some(0.5),
            unconfigured_drops: Some(0),
            buffer_drops: 0,
            retransmits: 0,
            delay_error_p50_us: None,
            delay_error_p99_us: None,
            host_timer_p50_us: None,
            host_timer_p99_us: None,
            host_timer_cell_p50_us: None,
            host_timer_cell_p99_us: None,
            batch_us: None,
            emulator_cpu_s_per_gb: None,
            cpu_steal: None,
            cc: Some(cc.parse().unwrap()),
            process_cpu: Some(1.0),
            error: error.map(str::to_string),
        }
    }

    /// A flow that died early is said under the table, not passed off as a slow row.
    #[test]
    fn a_failed_flow_is_named_under_the_transports_table() {
        let died = "send: connection lost: aborted by peer: too many gaps in stream buffer";
        let r = BenchResult::new(
            ccbench::provenance::of_this_host(),
            4.0,
            "quic:cubic,quic:bbr3",
            vec![row("quic:cubic", 3e8, Some(died)), row("quic:bbr3", 9e8, None)],
        );
        let table = transports_table(&r);
        assert!(table.contains(&format!("quic:cubic at 1.00 Gbit/s, 10 ms: the flow failed ({died})")), "{table}");
        assert!(!table.contains("quic:bbr3 at"), "{table}");
        assert!(serde_json::to_value(&r).unwrap()["rows"][1].get("error").is_none());
    }

    /// Only an unlimited cell measures the ceiling; a rate-limited one may only raise it.
    #[test]
    fn a_bench_of_slow_cells_does_not_lower_the_capacity_on_record() {
        let at = |rate: Option<u64>, rtt_ms: f64, goodput_bps: f64| BenchRow { rate_bps: rate, rtt_ms, ..row("cubic", goodput_bps, None) };
        let slow = [at(Some(100_000_000), 20.0, 93.9e6)];
        assert_eq!(capacity_to_save(&slow, 8e9), None);
        assert_eq!(capacity_to_save(&slow, 2e9), None);
        assert_eq!(capacity_to_save(&slow, 50e6), Some(93.9e6));
        let with_unlimited = [at(Some(100_000_000), 20.0, 93.9e6), at(None, 10.0, 6e9), at(None, 0.0, 9e9)];
        assert_eq!(capacity_to_save(&with_unlimited, 8e9), Some(6e9), "the ceiling at ≥ 10 ms replaces the record");
        assert_eq!(capacity_to_save(&[at(None, 10.0, 6e9)], 2e9), Some(6e9));
        assert_eq!(capacity_to_save(&[BenchRow { error: Some("died".into()), ..at(None, 10.0, 1e6) }], 2e9), None);
    }

    #[test]
    fn a_finished_bench_records_when_it_finished() {
        let r = BenchResult::new(ccbench::provenance::of_this_host(), 1.0, "cubic", Vec::new());
        let v = serde_json::to_value(&r).unwrap();
        assert!(v["provenance"]["finished_at"].as_str().is_some_and(|t| t.len() >= 20), "{}", v["provenance"]);
    }
}
