//! The HTML reports, end to end but without root: a small, realistic result directory is
//! built in code (an `ExperimentResult` and each run's series files, written through the same
//! `RunSeries` a real run uses), rendered to report.html and to the page across conditions,
//! and each page is loaded in headless Chromium. The page must log no console error, and every
//! expected figure must hold plotted data.
//!
//! Chromium (`/usr/bin/chromium`, Debian package `chromium`) is required under `CI=true`;
//! elsewhere the browser checks are skipped with a message when it is missing.
//! `CCBENCH_CHROMIUM=PATH` names another browser binary; `CCBENCH_REPORT_KEEP=DIR` keeps the
//! rendered pages in DIR (to look at them).

mod common;

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use ccbench::provenance::{EmulatorFacts, Provenance};
use ccbench::results::{CcShare, ExperimentResult, Params, RunMetrics, RunRecord, Status, SCHEMA};
use ccbench::run_workload::{WorkloadResult, WorkloadSpec};
use ccbench::series::RunSeries;
use ccbench_emu::{LinkSample, PathSpec};
use ccbench_kernel_tcp::{BbrInfo, BbrMode, Sample};
use ccbench_link::DirectionConfig;
use ccbench_workload::{Amount, BulkResult, BulkSpec, Direction, FlowResult, GoodputPoint, MixFlow, SeriesSink, Side, SocketId};
use common::tempdir;
use rand::{Rng, SeedableRng};

const SAMPLE_US: u64 = 10_000;
const START_US: u64 = 60_000;

/// A flow's behaviour in the model: its algorithm, when it starts, and its share of the link.
struct FlowModel {
    cc: &'static str,
    start_s: f64,
    share: f64,
}

/// What one simulated run left: its flows' results and the RTT median of its samples.
struct Simulated {
    flows: Vec<FlowResult>,
    goodput_bps: f64,
    rtt_p50_ms: Option<f64>,
    rtt_p95_ms: Option<f64>,
    queue_p50_ms: f64,
    queue_p95_ms: f64,
    series: ccbench::series::SeriesFiles,
}

/// BBR's state at `t` seconds after its flow started: STARTUP, DRAIN, then PROBE_BW with a
/// PROBE_RTT at 2 s.
fn bbr_mode(t: f64) -> BbrMode {
    match t {
        t if t < 0.25 => BbrMode::Startup,
        t if t < 0.3 => BbrMode::Drain,
        t if (2.0..2.2).contains(&t) => BbrMode::ProbeRtt,
        _ => BbrMode::ProbeBw,
    }
}

/// Writes one run's series the way a run does, from a simple model of the path (`rate_bps`,
/// 20 ms base RTT, a queue that BBR keeps short and CUBIC fills in a sawtooth).
fn simulate(dir: &Path, index: u32, flows: &[FlowModel], rate_bps: f64, duration_s: f64, rng: &mut impl Rng) -> Simulated {
    let series = RunSeries::create(dir, &format!("series/run-{index:03}")).unwrap();
    let mut down = series.link_sink("down").unwrap();
    let mut up = series.link_sink("up").unwrap();
    let base_rtt_us = 20_000.0;
    let jitter: f64 = rng.gen_range(0.95..1.05);
    let mut bytes = vec![0u64; flows.len()];
    let mut rtts: Vec<f64> = Vec::new();
    let mut queues: Vec<f64> = Vec::new();
    let steps = (duration_s * 1e6 / SAMPLE_US as f64) as u64;
    for k in 0..=steps {
        let t_us = START_US + k * SAMPLE_US;
        let t = (k * SAMPLE_US) as f64 / 1e6;
        let any_cubic = flows.iter().any(|f| f.cc == "cubic" && t >= f.start_s);
        // Queueing delay (µs): CUBIC's sawtooth over 1.4 s, or BBR's small queue with a bump
        // every 8 round trips while it probes for bandwidth.
        let queue_us = if any_cubic {
            let phase = ((t + 0.3) % 1.4) / 1.4;
            (5_000.0 + 15_000.0 * phase) * jitter
        } else if t < 0.25 {
            t / 0.25 * 18_000.0
        } else if (2.0..2.2).contains(&t) {
            200.0
        } else {
            let probe = if (t * 1e6 / (8.0 * base_rtt_us)) % 1.0 < 0.15 { 6_000.0 } else { 0.0 };
            (2_500.0 + probe) * jitter
        };
        let rtt_us = base_rtt_us + queue_us + rng.gen_range(0.0..800.0);
        let delivered = (rate_bps * SAMPLE_US as f64 / 1e6 / 8.0 * if t < 0.2 { t / 0.2 } else { 1.0 }) as u64;
        down.push(&LinkSample {
            t_us,
            backlog_bytes: (queue_us * rate_bps / 8e6) as u64,
            backlog_packets: (queue_us * rate_bps / 8e6 / 1500.0) as u64,
            delivered_bytes: delivered,
            queue_delay_mean_us: queue_us * 0.8,
            queue_delay_max_us: queue_us,
            utilization: 0.98,
            lateness_max_us: 60.0,
            ..Default::default()
        });
        up.push(&LinkSample { t_us, delivered_bytes: delivered / 30, utilization: 0.02, ..Default::default() });
        queues.push(queue_us / 1000.0);
        let active: f64 = flows.iter().filter(|f| t >= f.start_s).map(|f| f.share).sum();
        for (id, f) in flows.iter().enumerate() {
            if t < f.start_s {
                continue;
            }
            let since = t - f.start_s;
            let share = f.share / active.max(1e-9);
            bytes[id] += (delivered as f64 * share) as u64;
            let bdp_pkts = rate_bps * share * (base_rtt_us + queue_us) / 1e6 / 8.0 / 1448.0;
            let (cwnd, bbr) = if f.cc == "bbr" {
                let mode = bbr_mode(since);
                let cwnd = match mode {
                    BbrMode::Startup => 10.0 * 2f64.powf(since / 0.03),
                    BbrMode::ProbeRtt => 4.0,
                    _ => 2.0 * bdp_pkts,
                };
                let bbr = BbrInfo { bw_bps: (rate_bps * share * jitter) as u64, min_rtt_us: base_rtt_us as u32, pacing_gain: 1.0, cwnd_gain: 2.0, mode };
                (cwnd.min(3.0 * bdp_pkts).max(4.0), Some(bbr))
            } else {
                let slow_start = since < 0.3;
                let cwnd = if slow_start { 10.0 * 2f64.powf(since / 0.03) } else { bdp_pkts };
                (cwnd.min(2.0 * bdp_pkts).max(10.0), None)
            };
            rtts.push(rtt_us / 1000.0);
            series.tcp_sample(
                SocketId::Flow(id as u32),
                &Sample {
                    t_us,
                    rtt_us: rtt_us as u32,
                    min_rtt_us: base_rtt_us as u32,
                    rttvar_us: 500,
                    cwnd: cwnd as u32,
                    ssthresh: 0x7fff_ffff,
                    pacing_rate_bps: (rate_bps * share * 1.2) as u64,
                    delivery_rate_bps: (rate_bps * share) as u64,
                    bytes_acked: bytes[id],
                    bytes_sent: bytes[id] + 30_000,
                    bytes_retrans: 0,
                    total_retrans: 0,
                    segs_out: (bytes[id] / 1448) as u32,
                    lost: 0,
                    unacked: 10,
                    app_limited: false,
                    bbr,
                    state: Default::default(),
                },
            );
            series.received(id as u32, &GoodputPoint { t_us, bytes: bytes[id] });
        }
    }
    drop(down);
    drop(up);
    let (files, summary, error) = series.finish();
    assert_eq!(error, None);
    let total: u64 = bytes.iter().sum();
    let q = |xs: &mut Vec<f64>, p: f64| {
        xs.sort_by(f64::total_cmp);
        ccbench_stats::quantile(xs, p)
    };
    Simulated {
        flows: flows
            .iter()
            .enumerate()
            .map(|(id, f)| FlowResult {
                id: id as u32,
                sender: Side::Server,
                sending: ccbench_workload::SenderRecord::tcp(f.cc, f.cc.to_string(), None),
                start_s: f.start_s,
                client_port: 40_000 + id as u16,
                bytes_received: bytes[id],
                goodput_bps: bytes[id] as f64 * 8.0 / (duration_s - f.start_s),
                completed: true,
                completion_time_s: None,
                error: None,
            })
            .collect(),
        goodput_bps: total as f64 * 8.0 / duration_s,
        rtt_p50_ms: summary.rtt_us.quantile(0.5, 1000.0),
        rtt_p95_ms: summary.rtt_us.quantile(0.95, 1000.0),
        queue_p50_ms: q(&mut queues, 0.5),
        queue_p95_ms: q(&mut queues, 0.95),
        series: files,
    }
}

fn metrics(s: &Simulated, shares: Vec<CcShare>) -> RunMetrics {
    let jain = if shares.len() > 1 { ccbench_stats::jain_fairness(&s.flows.iter().map(|f| f.goodput_bps).collect::<Vec<_>>()) } else { None };
    RunMetrics {
        score: Some(s.goodput_bps),
        unfinished: false,
        goodput_bps: s.goodput_bps,
        completion_time_s: None,
        latency_p50_s: None,
        latency_p99_s: None,
        html_ttfb_s: None,
        all_completed: true,
        sender_rtt_p50_ms: s.rtt_p50_ms,
        sender_rtt_p95_ms: s.rtt_p95_ms,
        retrans_rate: 0.001,
        retrans_segments: 3,
        drops_loss: Some(0),
        drops_buffer: Some(3),
        drops_aqm: Some(0),
        ce_marks: Some(0),
        queue_delay_p50_ms: Some(s.queue_p50_ms),
        queue_delay_p95_ms: Some(s.queue_p95_ms),
        utilization: Some(0.98),
        emulator_lateness_p99_us: Some(80.0),
        entry: Default::default(),
        path_figures_over_whole_life: false,
        shares,
        jain_index: jain,
        jain_per_second: Vec::new(),
        convergence_s: None,
        lock_on_bw_bps: None,
        limited_by: None,
        mechanism: Default::default(),
        trace: Vec::new(),
    }
}

fn provenance() -> Provenance {
    Provenance {
        ccbench_version: "test".into(),
        git_revision: "test".into(),
        command_line: vec!["ccbench".into(), "run".into()],
        started_at: "2026-01-01T00:00:00Z".into(),
        finished_at: Some("2026-01-01T00:01:00Z".into()),
        host: ccbench::provenance::host_facts(),
        namespace_sysctls: Vec::new(),
        emulator: Some(EmulatorFacts { kind: "test".into(), client_addr: "10.0.0.1".into(), server_addr: "10.0.0.2".into(), tun_txqueuelen: 1000 }),
        remote: None,
        quic_stack: None,
        controller_mismatches: Vec::new(),
    }
}

fn run_record(index: u32, cc: &str, sim: Simulated, shares: Vec<CcShare>) -> RunRecord {
    let m = metrics(&sim, shares);
    RunRecord {
        index,
        round: index / 2,
        cc: cc.into(),
        status: Status::Complete,
        error: None,
        started_at: "2026-01-01T00:00:00Z".into(),
        path_seed: u64::from(index),
        netns_inodes: None,
        host_cpu_steal_fraction: Some(0.0),
        suspect: if index == 2 { vec!["downlink: packets left up to 2458 µs late (p99)".into()] } else { Vec::new() },
        far_samples_dropped: 0,
        metrics: Some(m),
        workload: Some(WorkloadResult::Bulk(BulkResult {
            start_us: START_US,
            elapsed_s: 3.0,
            goodput_bps: sim.goodput_bps,
            interrupted: false,
            flows: sim.flows,
        })),
        path: None,
        series: Some(sim.series),
    }
}

fn bulk_spec(cc: &str, mix: Vec<MixFlow>) -> WorkloadSpec {
    WorkloadSpec::Bulk(BulkSpec {
        flows: mix.len().max(1) as u32,
        direction: Direction::Download,
        amount: Amount::Seconds(3.0),
        cc: cc.parse().unwrap(),
        mix,
        port: 5201,
        sample_interval_us: SAMPLE_US,
        timeout_s: 30.0,
        quic_receiver_cc: None,
        knobs: Default::default(),
    })
}

fn assemble(ccs: Vec<String>, workload: WorkloadSpec, runs: Vec<RunRecord>) -> ExperimentResult {
    let ccs: Vec<ccbench_workload::Cc> = ccs.into_iter().map(Into::into).collect();
    let (summary, comparisons) = ccbench::analysis::analyse(&ccs, &runs, ccbench_stats::Criteria::at(0.05));
    let rtt_comparisons = ccbench::analysis::compare_rtt(&ccs, &runs, ccbench_stats::Criteria::at(0.05));
    ExperimentResult {
        schema: SCHEMA.into(),
        status: Status::Complete,
        warnings: Vec::new(),
        provenance: provenance(),
        params: Params {
            ccs,
            runs_per_cc: 4,
            runs_auto: false,
            seed: 7,
            alpha: 0.05,
            min_effect: 0.0,
            path: Some(PathSpec {
                down: DirectionConfig::default(),
                up: DirectionConfig::default(),
                mtu: 1500,
                seed: 7,
                sample_interval_us: SAMPLE_US,
                offload: true,
                batch_us: 0,
                access: Vec::new(),
                tcp_ecn: Default::default(),
            }),
            remote: None,
            metric: workload.metric().into(),
            workload,
            expect: Vec::new(),
        },
        sequential: None,
        summary,
        comparisons,
        rtt_comparisons,
        runs,
        expectations: Vec::new(),
    }
}

/// bbr against cubic, one flow, 4 runs each, interleaved, at `rate_bps`.
fn bulk_experiment(dir: &Path, rate_bps: f64, seed: u64) -> ExperimentResult {
    let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(seed);
    let ccs = vec!["bbr".to_string(), "cubic".to_string()];
    let mut runs = Vec::new();
    for index in 0..8u32 {
        let cc = ccs[index as usize % 2].as_str();
        let cc_static = if cc == "bbr" { "bbr" } else { "cubic" };
        let sim = simulate(dir, index, &[FlowModel { cc: cc_static, start_s: 0.0, share: 1.0 }], rate_bps * rng.gen_range(0.97..1.0), 3.0, &mut rng);
        runs.push(run_record(index, cc, sim, Vec::new()));
    }
    assemble(ccs, bulk_spec("bbr", Vec::new()), runs)
}

/// bbr and cubic sharing the bottleneck, cubic 1 s later, 4 runs.
fn mix_experiment(dir: &Path) -> ExperimentResult {
    let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(11);
    let label = "bbr:1,cubic:1".to_string();
    let mut runs = Vec::new();
    for index in 0..4u32 {
        let bbr_share = rng.gen_range(0.75..0.9);
        let flows = [FlowModel { cc: "bbr", start_s: 0.0, share: bbr_share }, FlowModel { cc: "cubic", start_s: 1.0, share: 1.0 - bbr_share }];
        let sim = simulate(dir, index, &flows, 50e6, 3.0, &mut rng);
        let total: f64 = sim.flows.iter().map(|f| f.goodput_bps).sum();
        let shares = sim
            .flows
            .iter()
            .map(|f| CcShare {
                cc: f.sending.cc_requested.clone(),
                flows: 1,
                goodput_bps: f.goodput_bps,
                share: f.goodput_bps / total,
                sender_rtt_p50_ms: None,
                sender_rtt_p95_ms: None,
            })
            .collect();
        runs.push(run_record(index, &label, sim, shares));
    }
    let mix = vec![
        MixFlow { cc: "bbr".parse().unwrap(), start_s: 0.0, client_port: None },
        MixFlow { cc: "cubic".parse().unwrap(), start_s: 1.0, client_port: None },
    ];
    assemble(vec![label], bulk_spec("bbr", mix), runs)
}

/// What a headless Chromium made of a page: the DOM it built and what it logged.
struct Loaded {
    dom: String,
    stderr: String,
}

/// The Chromium binary, or `None` (after saying why) when the browser checks are to be
/// skipped. Under `CI=true` a missing browser fails the test.
fn chromium() -> Option<PathBuf> {
    let on_path = || std::env::var_os("PATH").and_then(|paths| std::env::split_paths(&paths).map(|d| d.join("chromium")).find(|p| p.exists()));
    let found = match std::env::var_os("CCBENCH_CHROMIUM") {
        Some(p) => Some(PathBuf::from(p)).filter(|p| p.exists()),
        None => ["/usr/bin/chromium", "/usr/bin/chromium-browser"].iter().map(PathBuf::from).find(|p| p.exists()).or_else(on_path),
    };
    if found.is_none() {
        assert!(std::env::var("CI").as_deref() != Ok("true"), "CI=true but chromium is missing: install the Debian package `chromium`");
        eprintln!("report_html: skipping the browser checks: chromium is not installed (apt-get install chromium)");
    }
    found
}

fn load(chromium: &Path, page: &Path) -> Loaded {
    let profile = page.with_extension("profile");
    let mut child = Command::new(chromium)
        .args([
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--disable-background-networking",
            "--disable-component-update",
            "--disable-sync",
            "--no-first-run",
            &format!("--user-data-dir={}", profile.display()),
            "--enable-logging=stderr",
            "--v=0",
            "--dump-dom",
            &format!("file://{}", page.display()),
        ])
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("starting chromium");
    // Read both pipes on their own threads (a full pipe would stall the browser).
    let mut out = child.stdout.take().unwrap();
    let mut err = child.stderr.take().unwrap();
    let out_t = std::thread::spawn(move || {
        let mut s = String::new();
        std::io::Read::read_to_string(&mut out, &mut s).ok();
        s
    });
    let err_t = std::thread::spawn(move || {
        let mut s = String::new();
        std::io::Read::read_to_string(&mut err, &mut s).ok();
        s
    });
    let deadline = Instant::now() + Duration::from_secs(120);
    loop {
        if child.try_wait().unwrap().is_some() {
            break;
        }
        if Instant::now() > deadline {
            let _ = child.kill();
            let _ = child.wait();
            panic!("chromium did not finish loading {} within 120 s", page.display());
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    let _ = std::fs::remove_dir_all(&profile);
    Loaded { dom: out_t.join().unwrap(), stderr: err_t.join().unwrap() }
}

/// Lines in which the page logged to the console or threw (Chromium logs them as
/// `INFO:CONSOLE… "message", source: file://…`).
fn console_errors(stderr: &str) -> Vec<&str> {
    stderr.lines().filter(|l| l.contains("Uncaught") || l.to_ascii_lowercase().contains("console")).collect()
}

/// The part of the DOM of the element with `id` up to its closing `</figure>`.
fn figure<'a>(dom: &'a str, id: &str) -> Option<&'a str> {
    let start = dom.find(&format!("id=\"{id}\""))?;
    let end = dom[start..].find("</figure>")? + start;
    Some(&dom[start..end])
}

/// Whether a figure holds drawn data: a polyline with at least two points, a path with a
/// drawing, or a circle, inside its plot (not its legend).
fn has_data(fig: &str) -> bool {
    let Some(at) = fig.find("<svg class=\"plot\"") else { return false };
    let fig = &fig[at..];
    let polyline = fig.match_indices("<polyline").any(|(i, _)| {
        let rest = &fig[i..];
        rest.find("points=\"").map(|p| rest[p + 8..].split('"').next().unwrap_or("").split(' ').filter(|s| s.contains(',')).count() >= 2).unwrap_or(false)
    });
    let circle = fig.contains("<circle cx=");
    let path = fig.match_indices("<path d=\"M").count() > 1; // the axes are one path
    polyline || circle || path
}

fn check_page(chromium: Option<&Path>, page: &Path, figures: &[&str]) {
    let html = std::fs::read_to_string(page).unwrap();
    // Self-contained: no fetches of any kind.
    for needle in ["http://", "https://", "src=", "<link", "@import", "url(http"] {
        let hits: Vec<&str> = html.match_indices(needle).map(|(i, _)| &html[i.saturating_sub(40)..(i + 60).min(html.len())]).collect();
        let allowed = |h: &&str| h.contains("http://www.w3.org/2000/svg");
        assert!(hits.iter().all(allowed), "{} refers outside itself: {hits:?}", page.display());
    }
    for id in figures {
        let fig = figure(&html, id).unwrap_or_else(|| panic!("{}: no figure {id}", page.display()));
        assert!(has_data(fig), "{}: figure {id} has no data: {}", page.display(), &fig[..fig.len().min(2000)]);
    }
    let Some(chromium) = chromium else { return };
    let loaded = load(chromium, page);
    let errors = console_errors(&loaded.stderr);
    assert!(errors.is_empty(), "{}: console errors: {errors:#?}", page.display());
    assert!(loaded.dom.contains("</html>"), "{}: chromium dumped no DOM; stderr: {}", page.display(), loaded.stderr);
    for id in figures {
        let fig = figure(&loaded.dom, id).unwrap_or_else(|| panic!("{}: the browser's DOM has no figure {id}", page.display()));
        assert!(fig.contains("<svg"), "{}: figure {id} has no svg in the browser's DOM", page.display());
        assert!(has_data(fig), "{}: figure {id} has no data in the browser's DOM", page.display());
    }
}

fn keep(pages: &[&Path]) {
    if let Some(dir) = std::env::var_os("CCBENCH_REPORT_KEEP") {
        std::fs::create_dir_all(&dir).unwrap();
        for p in pages {
            std::fs::copy(p, Path::new(&dir).join(p.parent().unwrap().file_name().unwrap()).with_extension("html")).unwrap();
        }
    }
}

#[test]
fn reports_render_with_data_and_load_in_a_browser_without_errors() {
    let chromium = chromium();
    let base = tempdir("pages");

    // The harness sees console errors where there are some.
    if let Some(c) = &chromium {
        let bad = base.join("bad.html");
        std::fs::write(&bad, "<!doctype html><html><body><script>console.error('boom'); undefined_fn();</script></body></html>").unwrap();
        let loaded = load(c, &bad);
        assert!(!console_errors(&loaded.stderr).is_empty(), "the console check missed a thrown error; stderr: {}", loaded.stderr);
    }

    let bulk_dir = base.join("bulk");
    let bulk = bulk_experiment(&bulk_dir, 50e6, 1);
    let summary =
        "Path      50.0 Mbit/s, 10 ms one way … a summary line long enough to need wrapping at 1000 px, which a <pre> would otherwise scroll sideways";
    let html = ccbench_report::render(&ccbench_report::ReportData::read(&bulk, summary, &bulk_dir));
    let page = bulk_dir.join("report.html");
    std::fs::write(&page, &html).unwrap();
    // The report of the directory alone (result.json as a run writes it) is the same page.
    std::fs::write(bulk_dir.join("result.json"), serde_json::to_string_pretty(&bulk).unwrap()).unwrap();
    let read_back = ccbench_report::read_result(&bulk_dir).unwrap();
    assert!(html == ccbench_report::render(&ccbench_report::ReportData::read(&read_back, summary, &bulk_dir)), "the report from the directory differs");
    assert!(html.contains("Sender's smoothed RTT"));
    assert!(html.contains("BBR state") && html.contains("PROBE_RTT"), "BBR's states are drawn");
    assert!(html.contains("which a &lt;pre&gt; would"), "summary text is escaped");
    let report_figures = [
        "fig-goodput",
        "fig-rtt",
        "fig-cwnd",
        "fig-queue",
        "fig-bbr-bw",
        "fig-score",
        "fig-ratio",
        "fig-rtt-cdf",
        "fig-queue-cdf",
        "fig-tput-rtt",
        "fig-tput-queue",
    ];
    check_page(chromium.as_deref(), &page, &report_figures);
    // Every run is drawn: 8 runs × (goodput, RTT, cwnd, queue) lines, the median ones bold.
    let lines = html.matches("<polyline").count();
    assert!(lines >= 8 * 4, "{lines} lines");
    assert!(html.matches("stroke-width=\"2\"").count() >= 2 * 4, "bold median lines");
    assert_eq!(html.matches("(median run)").count(), 2 * 4 + 1, "each algorithm's median run, bold in four plots (and BBR's in its estimate's)");

    let mix_dir = base.join("mix");
    let mix = mix_experiment(&mix_dir);
    let page_mix = mix_dir.join("report.html");
    std::fs::write(&page_mix, ccbench_report::render(&ccbench_report::ReportData::read(&mix, "mix", &mix_dir))).unwrap();
    check_page(
        chromium.as_deref(),
        &page_mix,
        &["fig-goodput", "fig-rtt", "fig-cwnd", "fig-queue", "fig-score", "fig-shares", "fig-rtt-cdf", "fig-queue-cdf", "fig-tput-rtt"],
    );

    // Across conditions: rates 10× apart make a log axis for goodput.
    let slow_dir = base.join("slow");
    let fast_dir = base.join("fast");
    let slow = bulk_experiment(&slow_dir, 2e6, 2);
    let mut fast = bulk_experiment(&fast_dir, 500e6, 3);
    // A ratio whose CI has an unbounded side (null in JSON) is drawn to the edge with an arrow.
    if let Some(ci) = fast.comparisons[0].ratio_ci.as_mut() {
        ci.hi = f64::INFINITY;
    }
    let page_fast = fast_dir.join("report.html");
    let html_fast = ccbench_report::render(&ccbench_report::ReportData::read(&fast, "", &fast_dir));
    std::fs::write(&page_fast, &html_fast).unwrap();
    assert!(html_fast.contains("–∞)"), "the unbounded side is labelled");
    check_page(chromium.as_deref(), &page_fast, &["fig-score", "fig-ratio"]);
    let rows: Vec<(String, &ExperimentResult)> = vec![
        ("2 Mbit/s, 20 ms".into(), &slow),
        ("50 Mbit/s, 20 ms".into(), &bulk),
        ("500 Mbit/s, 20 ms".into(), &fast),
        ("bbr and cubic sharing".into(), &mix),
    ];
    let conditions = ccbench_report::render_conditions(&rows);
    let cond_dir = base.join("conditions");
    std::fs::create_dir_all(&cond_dir).unwrap();
    let page_cond = cond_dir.join("report.html");
    std::fs::write(&page_cond, &conditions).unwrap();
    assert!(conditions.contains("Log scale"), "goodput spans 250×");
    // A mix's verdict is its shares, as the terminal's table across conditions says it.
    let mix_row = conditions.split("<tr>").find(|r| r.contains("bbr and cubic sharing")).expect("the mix's row");
    assert!(mix_row.contains("; Jain ") && !mix_row.contains("no verdict"), "the mix's row shows its shares: {mix_row}");
    let shares = &mix.summary[0].shares;
    assert!(shares.len() == 2, "the mix fixture has two algorithms: {shares:?}");
    for sh in shares {
        let tip = format!("{} at bbr and cubic sharing: median ", sh.cc);
        assert!(conditions.contains(&tip), "the shares figure plots {}'s share", sh.cc);
    }
    check_page(chromium.as_deref(), &page_cond, &["fig-cond-headline-0", "fig-cond-shares", "fig-cond-rtt", "fig-cond-queue"]);
    keep(&[&page, &page_mix, &page_fast, &page_cond]);
    let _ = std::fs::remove_dir_all(base);
}
