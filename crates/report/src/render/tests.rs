use super::*;
use crate::load::bbr_state;
use crate::svg::Timeline;

/// 10 s of data make an axis that ends at 10 s, with 1-2-5 ticks inside it, not one
/// rounded up to 12 s that leaves a sixth of every plot over time empty.
#[test]
fn the_time_axis_ends_where_the_data_end() {
    let palette = Palette(vec!["cubic".into()]);
    let axis = TimeAxis { palette: &palette, t_max_s: 10.02 };
    // y values well below 1, so that no y tick reads like a time tick.
    let line = Line { key: "cubic".into(), label: "run 1 · cubic".into(), median: true, points: vec![(0.0, 0.2), (10.02, 0.3)] };
    let svg = time_figure("goodput", "Goodput", "", "goodput", &[&line], &axis, &[]);
    for tick in ["0", "2", "4", "6", "8", "10"] {
        assert!(svg.contains(&format!(">{tick}</text>")), "tick {tick}: {svg}");
    }
    assert!(!svg.contains(">12</text>"), "the axis goes past the data: {svg}");
}

/// Kernel BBR and QUIC BBR in one experiment: a band row each, QUIC's ProbeBW split into
/// its phases, and the legend lists only the states drawn.
#[test]
fn each_bbr_algorithm_gets_its_own_row_of_state_bands() {
    let palette = Palette(vec!["tcp:bbr".into(), "quic:bbr3".into(), "quic:cubic".into()]);
    let axis = TimeAxis { palette: &palette, t_max_s: 3.0 };
    let timeline = |modes: &[(u64, &str, Option<&str>)]| {
        let mut t: Timeline<{ BBR_STATES.len() }> = Timeline::default();
        for &(ms, mode, phase) in modes {
            t.push(ms * 1000, bbr_state(Some(mode), phase));
        }
        t.bands()
    };
    let tcp = timeline(&[(0, "STARTUP", None), (300, "DRAIN", None), (400, "PROBE_BW", None), (3000, "PROBE_BW", None)]);
    let quic = timeline(&[
        (0, "STARTUP", None),
        (300, "DRAIN", None),
        (400, "PROBE_BW", Some("DOWN")),
        (500, "PROBE_BW", Some("CRUISE")),
        (2000, "PROBE_BW", Some("REFILL")),
        (2100, "PROBE_BW", Some("UP")),
        (2300, "PROBE_BW", Some("DOWN")),
        (3000, "PROBE_BW", Some("DOWN")),
    ]);
    let bands = [
        BbrBands { key: "tcp:bbr".into(), of: "tcp:bbr flow 0 of run 1".into(), bands: tcp },
        BbrBands { key: "quic:bbr3".into(), of: "quic:bbr3 flow 0 of run 2".into(), bands: quic },
    ];
    let line = Line { key: "quic:bbr3".into(), label: "run 2 · quic:bbr3".into(), median: true, points: vec![(0.0, 20.0), (3.0, 21.0)] };
    let svg = time_figure("rtt", "RTT", "", "RTT (ms)", &[&line], &axis, &bands);
    for label in [">tcp:bbr</text>", ">quic:bbr3</text>", "PROBE_BW UP 2.1", "PROBE_BW REFILL 2.0", "PROBE_BW CRUISE 0.5", "(quic:bbr3 flow 0 of run 2)"] {
        assert!(svg.contains(label), "{label} missing");
    }
    assert!(svg.contains("PROBE_BW 0.4") && svg.contains("(tcp:bbr flow 0 of run 1)"), "kernel BBR's ProbeBW has no phase");
    assert!(svg.contains(" PROBE_BW UP</span>") && svg.contains(" DRAIN</span>"), "the legend lists the states drawn");
    assert!(!svg.contains(" PROBE_RTT</span>"), "a state never drawn is not in the legend");
}

/// A result of bbr against cubic, two bulk runs each, built by hand: run 2 of each the
/// median (scores 10 < 20 < 30 Mbit/s), run 4 failed.
fn hand_built() -> ExperimentResult {
    use ccbench_model::provenance::{HostFacts, Provenance};
    use ccbench_model::results::{Params, SCHEMA};
    use ccbench_model::series::SeriesFiles;
    use ccbench_model::workload::{Amount, BulkResult, BulkSpec, Direction};
    use ccbench_model::workloads::WorkloadResult;
    let metrics = |mbps: f64| RunMetrics {
        score: Some(mbps * 1e6),
        unfinished: false,
        goodput_bps: mbps * 1e6,
        completion_time_s: None,
        latency_p50_s: None,
        latency_p99_s: None,
        html_ttfb_s: None,
        all_completed: true,
        sender_rtt_p50_ms: Some(40.0 + mbps),
        sender_rtt_p95_ms: Some(60.0 + mbps),
        retrans_rate: 0.01,
        retrans_segments: 5,
        drops_loss: Some(0),
        drops_buffer: Some(2),
        drops_aqm: None,
        ce_marks: None,
        queue_delay_p50_ms: Some(mbps / 2.0),
        queue_delay_p95_ms: Some(mbps),
        utilization: Some(0.9),
        emulator_lateness_p99_us: None,
        entry: Default::default(),
        path_figures_over_whole_life: false,
        shares: Vec::new(),
        jain_index: None,
        jain_per_second: Vec::new(),
        convergence_s: None,
        lock_on_bw_bps: None,
        limited_by: None,
        mechanism: Default::default(),
        trace: Vec::new(),
    };
    let run = |index: u32, cc: &str, mbps: Option<f64>| RunRecord {
        index,
        round: index / 2,
        cc: cc.into(),
        status: if mbps.is_some() { Status::Complete } else { Status::Failed },
        error: mbps.is_none().then(|| "the server <went> away".to_string()),
        started_at: "2026-01-01T00:00:00Z".into(),
        path_seed: u64::from(index),
        netns_inodes: None,
        host_cpu_steal_fraction: None,
        suspect: Vec::new(),
        far_samples_dropped: 0,
        metrics: mbps.map(metrics),
        workload: mbps.map(|m| WorkloadResult::Bulk(BulkResult { start_us: 0, elapsed_s: 3.0, goodput_bps: m * 1e6, interrupted: false, flows: Vec::new() })),
        path: None,
        // Files that do not exist: rendering must not read them.
        series: Some(SeriesFiles {
            tcp: format!("/nonexistent/run-{index}/tcp.csv.gz"),
            goodput: format!("/nonexistent/run-{index}/goodput.csv.gz"),
            link_down: None,
            link_up: None,
        }),
    };
    let workload = WorkloadSpec::Bulk(BulkSpec {
        flows: 1,
        direction: Direction::Download,
        amount: Amount::Seconds(3.0),
        cc: "bbr".parse().unwrap(),
        mix: Vec::new(),
        port: 5201,
        sample_interval_us: 10_000,
        timeout_s: 30.0,
        quic_receiver_cc: None,
        knobs: Default::default(),
    });
    ExperimentResult {
        schema: SCHEMA.into(),
        status: Status::Complete,
        warnings: vec!["the host was <busy>".into()],
        provenance: Provenance {
            ccbench_version: "test".into(),
            git_revision: "test".into(),
            command_line: vec!["ccbench".into(), "run".into()],
            started_at: "2026-01-01T00:00:00Z".into(),
            finished_at: None,
            host: HostFacts {
                hostname: Some("<host>".into()),
                kernel_release: None,
                kernel_version: None,
                cpus: Some(2),
                cpu_model: None,
                memory_kib: None,
                available_congestion_controls: None,
                allowed_congestion_controls: None,
                loadable_congestion_controls: Vec::new(),
                default_congestion_control: None,
                default_qdisc: None,
                euid: 0,
            },
            namespace_sysctls: Vec::new(),
            emulator: None,
            remote: None,
            quic_stack: None,
            controller_mismatches: Vec::new(),
        },
        params: Params {
            ccs: vec!["bbr".into(), "cubic".into()],
            runs_per_cc: 2,
            runs_auto: false,
            seed: 1,
            alpha: 0.05,
            min_effect: 0.0,
            path: None,
            remote: None,
            metric: workload.metric().into(),
            workload,
            expect: Vec::new(),
        },
        sequential: None,
        summary: Vec::new(),
        comparisons: Vec::new(),
        rtt_comparisons: Vec::new(),
        expectations: Vec::new(),
        runs: vec![run(0, "bbr", Some(10.0)), run(1, "cubic", Some(12.0)), run(2, "bbr", Some(30.0)), run(3, "cubic", None), run(4, "bbr", Some(20.0))],
    }
}

/// `render` draws what `ReportData` holds and nothing else: lines and distributions put in
/// by hand appear as figures, the runs as the table, and nothing is read from disk.
#[test]
fn render_draws_a_hand_built_report_without_reading_files() {
    let result = hand_built();
    let line = |run: usize, key: &str, median: bool, points: Vec<(f64, f64)>| Line {
        key: key.into(),
        label: format!("run {} · {key}", result.runs[run].index + 1),
        median,
        points,
    };
    let mut rtt = Pooled::default();
    for v in [20_000, 21_000, 40_000] {
        rtt.record("bbr", v);
    }
    let views = vec![
        RunView {
            run: &result.runs[4],
            median: true,
            rtt: vec![line(4, "bbr", true, vec![(0.0, 20.0), (1.5, 21.0), (3.0, 40.0)])],
            cwnd: Vec::new(),
            bbr_bw: Vec::new(),
            goodput: vec![line(4, "bbr", true, vec![(0.05, 19.0), (2.95, 21.0)])],
            queue: None,
            ce: None,
            bbr: Vec::new(),
            flow_rtt: Vec::new(),
            strip: Vec::new(),
        },
        RunView {
            run: &result.runs[1],
            median: false,
            rtt: Vec::new(),
            cwnd: Vec::new(),
            bbr_bw: Vec::new(),
            goodput: vec![line(1, "cubic", false, vec![(0.05, 11.0), (2.95, 13.0)])],
            queue: None,
            ce: None,
            bbr: Vec::new(),
            flow_rtt: Vec::new(),
            strip: Vec::new(),
        },
    ];
    let series = Gathered { runs: views, bin_us: 100_000, rtt, queue: Pooled::default(), errors: vec!["series/run-002/tcp.csv.gz: <truncated>".into()] };
    let data = ReportData { result: &result, summary: "cubic < bbr\n".into(), series };
    let html = render(&data);
    assert!(html.starts_with("<!doctype html>") && html.ends_with("</body></html>\n"), "a whole page");
    assert!(html.contains("<h1>ccbench: bbr vs cubic</h1>"));
    assert!(html.contains("<pre class=\"summary\">cubic &lt; bbr</pre>"), "the summary, escaped and trimmed");
    assert!(html.contains("<p class=\"warn\">warning: the host was &lt;busy&gt;</p>"));
    // The goodput figure has both runs' lines, the median one bold and named so.
    let goodput = &html[html.find("id=\"fig-goodput\"").expect("goodput figure")..];
    let goodput = &goodput[..goodput.find("</figure>").unwrap()];
    assert!(goodput.contains("run 5 · bbr (median run)") && goodput.contains("run 2 · cubic"), "{goodput}");
    assert!(goodput.contains("Per 100 ms") || goodput.contains("per 100 ms"), "the bin width from the data");
    // The RTT CDF is of the pooled samples: 3 of bbr, none of cubic.
    assert!(html.contains("bbr (3 samples)") && !html.contains("cubic (0 samples)"));
    // Figures without data are left out, not drawn empty.
    assert!(!html.contains("id=\"fig-cwnd\"") && !html.contains("id=\"fig-queue\"") && !html.contains("id=\"fig-bbr-bw\""));
    // Every run in the table, the failed one with its error; the series error as a warning.
    assert_eq!(html.matches("<tr><td class=\"n\">").count(), 5);
    assert!(html.contains("<td>failed</td>") && html.contains("the server &lt;went&gt; away"));
    assert!(html.contains("could not read a series file: series/run-002/tcp.csv.gz: &lt;truncated&gt;"));
    assert!(!html.contains("/nonexistent"), "nothing was read from the runs' files");
    assert_eq!(html, render(&data), "rendering is a function of the data");
    assert!(!html.contains("id=\"expectations\""), "no expectations, no table");
}

/// `result` with each completed run's one flow limited as `of` says for its algorithm:
/// (fractions: cwnd, pacing, app; seconds active) per run, in the order of the runs.
fn with_limits(mut result: ExperimentResult, of: &[(u32, [f64; 3], f64)]) -> ExperimentResult {
    use ccbench_model::workload::{FlowResult, LimitedBy, Mechanism, SenderRecord, Side};
    use ccbench_model::workloads::WorkloadResult;
    for run in &mut result.runs {
        let Some(WorkloadResult::Bulk(b)) = run.workload.as_mut() else { continue };
        let Some(&(_, [cwnd, pacing, app], active_s)) = of.iter().find(|(i, _, _)| *i == run.index) else { continue };
        let mut sending = SenderRecord::tcp(run.cc.to_string(), run.cc.to_string(), None);
        sending.limited_by = Some(LimitedBy { cwnd, pacing, app, ..Default::default() });
        sending.mechanism = Some(Mechanism { active_s, mss: 1448, mean_rtt_us: 40_000.0, ..Default::default() });
        b.flows = vec![FlowResult {
            id: 0,
            sender: Side::Server,
            sending,
            start_s: 0.0,
            client_port: 40000,
            bytes_received: 1,
            goodput_bps: b.goodput_bps,
            completed: true,
            completion_time_s: None,
            error: None,
        }];
    }
    result
}

/// The page across conditions names each algorithm's dominant limit per condition: the
/// cause its flows held, weighted by their active time over its completed runs, when that
/// is 60 % or more; "no dominant cause" below; "not recorded" for a result without the
/// accounting (issue 30).
#[test]
fn the_conditions_table_names_each_algorithms_dominant_limit() {
    // Runs 0, 2, 4 are bbr's (1 s, 3 s, 1 s active), 1 is cubic's; 3 failed.
    let paced = with_limits(hand_built(), &[(0, [0.0, 1.0, 0.0], 1.0), (2, [0.5, 0.5, 0.0], 3.0), (4, [0.2, 0.8, 0.0], 1.0), (1, [0.97, 0.03, 0.0], 3.0)]);
    // Weighted by time, bbr's pacing share is (1 + 1.5 + 0.8) / 5 = 66 %; unweighted it
    // would be 77 %.
    let split = with_limits(hand_built(), &[(0, [0.45, 0.4, 0.15], 1.0), (2, [0.45, 0.4, 0.15], 1.0), (4, [0.45, 0.4, 0.15], 1.0), (1, [0.1, 0.1, 0.8], 2.0)]);
    let old = hand_built();
    let page = render_conditions(&[("loss 1%".into(), &paced), ("split".into(), &split), ("old".into(), &old)]);
    assert!(page.contains("<th>why (dominant limit)</th>"), "{page}");
    let row = |name: &str| {
        let at = page.find(&format!("<tr><td>{name}</td>")).unwrap_or_else(|| panic!("no row {name}: {page}"));
        page[at..at + page[at..].find("</tr>").unwrap()].to_string()
    };
    assert!(row("loss 1%").ends_with("<td>bbr: pacing 66 %, cubic: cwnd 97 %</td>"), "{}", row("loss 1%"));
    assert!(row("split").ends_with("<td>bbr: no dominant cause, cubic: app 80 %</td>"), "{}", row("split"));
    assert!(row("old").ends_with("<td>bbr: not recorded, cubic: not recorded</td>"), "{}", row("old"));
}

fn judged(cc: &str, expect: &str, op: &str, median: f64, lo: f64, hi: f64, result: Judgement) -> ccbench_model::expect::ExpectationResult {
    ccbench_model::expect::ExpectationResult {
        expect: expect.into(),
        cc: cc.into(),
        metric: "goodput".into(),
        op: op.into(),
        threshold: 10e6,
        unit: "bit/s".into(),
        runs: 5,
        median: Some(median),
        lo: Some(lo),
        hi: Some(hi),
        level: Some(1.0 - 1.0 / 32.0),
        alpha: 0.05,
        result,
        evidence: None,
    }
}

/// The expectations' table: one row per expectation × algorithm near the top, with the
/// figures, the deciding bound in bold and the judgement coloured; the page across
/// conditions (and a sweep's cells) marks each condition.
#[test]
fn expectations_are_a_coloured_table_near_the_top_and_mark_each_condition() {
    let mut result = hand_built();
    result.expectations = vec![
        judged("bbr", "goodput >= 10mbit", ">=", 20e6, 19e6, 21e6, Judgement::Pass),
        judged("cubic", "goodput >= 10mbit", ">=", 5e6, 4e6, 6e6, Judgement::Fail),
        judged("bbr", "goodput <= 10mbit", "<=", 11e6, 9e6, 12e6, Judgement::Undecided),
    ];
    let data = ReportData {
        result: &result,
        summary: String::new(),
        series: Gathered { runs: Vec::new(), bin_us: 100_000, rtt: Pooled::default(), queue: Pooled::default(), errors: Vec::new() },
    };
    let html = render(&data);
    let table = &html[html.find("id=\"expectations\"").expect("the table")..];
    assert!(html.find("id=\"expectations\"") < html.find("<pre class=\"summary\">"), "before the summary");
    assert!(table.starts_with("id=\"expectations\">Expectations: 1 of 3 pass</h2>"), "{table}");
    let table = &table[..table.find("</table>").unwrap()];
    assert_eq!(table.matches("<tr><td>").count(), 3);
    assert!(table.contains("<tr><td>bbr</td><td><code>goodput &gt;= 10mbit</code></td><td class=\"n\">10.0 Mbit/s</td><td class=\"n\">20.0 Mbit/s</td><td class=\"n\"><b>19.0 Mbit/s</b></td><td class=\"n\">21.0 Mbit/s</td><td class=\"n\">96.9 %</td><td class=\"n\">5</td><td class=\"pass\">pass</td></tr>"), "{table}");
    assert!(
        table.contains("<td class=\"n\">4.00 Mbit/s</td><td class=\"n\"><b>6.00 Mbit/s</b></td>") && table.contains("<td class=\"fail\">fail</td>"),
        "a failed >= is decided by its upper bound: {table}"
    );
    assert!(table.contains("<td class=\"undecided\">undecided</td>") && !table.contains("<b>12.0"), "{table}");
    let clean = hand_built();
    let page = render_conditions(&[("fast".into(), &result), ("slow".into(), &clean)]);
    assert!(page.contains("<th>expectations</th>"), "{page}");
    assert!(page.contains("<td class=\"fail\">fail</td><td>cubic: goodput &gt;= 10mbit (fail); bbr: goodput &lt;= 10mbit (undecided)</td></tr>"), "{page}");
    assert!(page.contains("<td>–</td><td></td></tr>"), "a condition without expectations has no mark: {page}");
    assert!(!render_conditions(&[("slow".into(), &clean)]).contains("<th>expectations</th>"));
}

/// The why section for `result`, with `strip` as bbr's median run's strip over time.
fn why_of(result: &ExperimentResult, strip: Option<crate::data::Strip>) -> String {
    let views = vec![RunView {
        run: &result.runs[4],
        median: true,
        rtt: Vec::new(),
        cwnd: Vec::new(),
        bbr_bw: Vec::new(),
        goodput: Vec::new(),
        queue: None,
        ce: None,
        bbr: Vec::new(),
        flow_rtt: Vec::new(),
        strip: strip.into_iter().collect(),
    }];
    let g = Gathered { runs: views, bin_us: 100_000, rtt: Pooled::default(), queue: Pooled::default(), errors: Vec::new() };
    super::tables::why_section(result, &g)
}

/// `result` with every completed run's flow limited as `l` says for its algorithm.
fn limited_as(l: impl Fn(&str) -> ccbench_model::workload::LimitedBy) -> ExperimentResult {
    use ccbench_model::workloads::WorkloadResult;
    let mut result = with_limits(hand_built(), &[(0, [0.0; 3], 1.0), (1, [0.0; 3], 1.0), (2, [0.0; 3], 1.0), (4, [0.0; 3], 1.0)]);
    for run in &mut result.runs {
        let cc = run.cc.to_string();
        if let Some(WorkloadResult::Bulk(b)) = run.workload.as_mut() {
            b.flows.iter_mut().for_each(|f| f.sending.limited_by = Some(l(&cc)));
        }
    }
    result
}

/// The why section says, per algorithm, the cause that held it (the receive window, the
/// network's window, the sending host) in words, draws its bar with each cause's share, and
/// under it the median run's strip: per bin, the causes' shares in its title and stacked
/// heights in the causes' colours; an empty bin is drawn empty (issue 30).
#[test]
fn the_why_strip_shows_the_cause_that_held_each_algorithm_over_time() {
    use ccbench_model::workload::LimitedBy;
    let result = limited_as(|cc| match cc {
        "bbr" => LimitedBy { rwnd: 0.9, app: 0.1, ..Default::default() },
        _ => LimitedBy { cwnd: 0.97, pacing: 0.03, ..Default::default() },
    });
    // bbr's median run, 4 bins of 0.5 s: receive window; half window, half application; no
    // sample; the congestion window.
    let strip = crate::data::Strip {
        key: "bbr".into(),
        bin_s: 0.5,
        bins: vec![
            [0.0, 0.0, 0.0, 500_000.0, 0.0, 0.0, 0.0],
            [0.0, 0.0, 0.0, 250_000.0, 0.0, 250_000.0, 0.0],
            [0.0; 7],
            [500_000.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0],
        ],
    };
    let html = why_of(&result, Some(strip));
    assert!(html.contains("<h2 id=\"why\">"), "{html}");
    let bbr = &html[html.find("<div class=\"why\"><div><b>bbr</b>").expect("bbr's why")..];
    let bbr = &bbr[..bbr.find("<div class=\"why\"><div><b>cubic</b>").expect("cubic's after bbr's")];
    assert!(bbr.contains("receive-window-limited 90 % of the time"), "{bbr}");
    assert!(bbr.contains("title=\"rwnd 90.0 %\" style=\"width:90.00%;background:#d62728\""), "{bbr}");
    assert!(bbr.contains("title=\"app 10.0 %\" style=\"width:10.00%;background:#ff7f0e\""), "{bbr}");
    let strip = &bbr[bbr.find("<div class=\"strip\"").expect("bbr's strip")..];
    let columns: Vec<&str> = strip.split("<div style=\"flex:1;").skip(1).collect();
    assert_eq!(columns.len(), 4, "{strip}");
    assert!(columns[0].contains("title=\"0.00–0.50 s · rwnd 100 %\">") && columns[0].contains("height:100.0%;background:#d62728"), "{}", columns[0]);
    assert!(columns[1].contains("title=\"0.50–1.00 s · rwnd 50 % · app 50 %\">"), "{}", columns[1]);
    assert!(columns[1].contains("height:50.0%;background:#d62728") && columns[1].contains("height:50.0%;background:#ff7f0e"), "{}", columns[1]);
    assert!(columns[2].contains("title=\"1.00–1.50 s\"></div>"), "an empty bin has no shares and no fill: {}", columns[2]);
    assert!(columns[3].contains("title=\"1.50–2.00 s · cwnd 100 %\">") && columns[3].contains("height:100.0%;background:#1f77b4"), "{}", columns[3]);
    assert!(strip.contains("over the median run, 0–2.0 s"), "{strip}");
    // cubic, held by the network (its window at the link), has a bar and no strip: only
    // bbr's median run has one here.
    let cubic = &html[html.find("<div class=\"why\"><div><b>cubic</b>").unwrap()..];
    assert!(cubic.contains("cwnd-limited 97 % of the time"), "{cubic}");
    assert!(cubic.contains("title=\"cwnd 97.0 %\"") && !cubic.contains("class=\"strip\""), "{cubic}");

    // A flow the sending host held (QUIC's stack building packets) says so.
    let host = why_of(&limited_as(|_| LimitedBy { host: 0.8, cwnd: 0.2, ..Default::default() }), None);
    assert!(host.contains("host-bound 80 % of the time"), "{host}");
    assert!(host.contains("title=\"host 80.0 %\" style=\"width:80.00%;background:#8c564b\""), "{host}");
    // Without the accounting there is no section at all.
    assert_eq!(why_of(&hand_built(), None), "");
}
