//! Pins the JSON of a path spec and of a direction report, byte for byte: users' scripts read
//! these fields (`delay_ns`, `at_ns`, `busy_ns`, the histograms …), so a change of the Rust
//! types behind them must not show here. If this test fails, the result files changed.

use std::time::{Duration, Instant};

use ccbench_emu::{DirectionReport, MeasureWindow, PathSpec, Shell, ShellConfig};
use ccbench_link::time;
use ccbench_link::{Aqm, Buffer, DirectionConfig, Jitter, LossModel, Policer, Rate, ScheduledChange, TraceRate};

const NS: time::Duration = time::Duration::from_nanos(1);
const MS: time::Duration = time::Duration::from_millis(1);

/// `d` after the start of the path's clock.
fn at(d: time::Duration) -> time::Instant {
    time::Instant::EPOCH + d
}

/// Every stage and every time-valued field of a direction.
fn down() -> DirectionConfig {
    DirectionConfig {
        rate: Rate::mbps(8),
        delay_ns: 10 * MS + 7 * NS,
        loss: LossModel::Bernoulli { p: 0.01 },
        buffer: Buffer::Bytes(30_000),
        trace: None,
        schedule: vec![
            ScheduledChange { at_ns: at(300 * MS), rate: Some(Rate::mbps(4)), delay_ns: Some(20 * MS), loss: Some(LossModel::None) },
            ScheduledChange { at_ns: at(600 * MS + NS), delay_ns: Some(5 * MS), ..Default::default() },
        ],
        jitter: Jitter::Uniform { max_ns: 2 * MS, reorder: false },
        policer: Some(Policer { rate_bps: 10_000_000, burst_bytes: 15_000 }),
        aqm: Aqm::Codel(ccbench_link::Codel { target_ns: 3 * MS, interval_ns: 50 * MS, ..Default::default() }),
        reorder: ccbench_link::Reorder::None,
        ecn_fault: None,
        aggregate_ns: None,
    }
}

fn up() -> DirectionConfig {
    DirectionConfig {
        delay_ns: 10 * MS,
        trace: Some(TraceRate::parse("up.trace", "1\n2\n2\n5\n").expect("valid")),
        jitter: Jitter::Normal { sd_ns: time::Duration::from_micros(250), reorder: true },
        aqm: Aqm::codel(),
        ..Default::default()
    }
}

const SPEC_JSON: &str = r#"{"down":{"rate":{"bits_per_sec":8000000},"delay_ns":10000007,"loss":{"kind":"bernoulli","p":0.01},"buffer":{"kind":"bytes","value":30000},"schedule":[{"at_ns":300000000,"rate":{"bits_per_sec":4000000},"delay_ns":20000000,"loss":{"kind":"none"}},{"at_ns":600000001,"delay_ns":5000000}],"jitter":{"kind":"uniform","max_ns":2000000,"reorder":false},"policer":{"rate_bps":10000000,"burst_bytes":15000},"aqm":{"kind":"codel","target_ns":3000000,"interval_ns":50000000}},"up":{"rate":"unlimited","delay_ns":10000000,"loss":{"kind":"none"},"buffer":{"kind":"unlimited"},"trace":{"name":"up.trace","period_ms":5,"opportunities":4},"schedule":[],"jitter":{"kind":"normal","sd_ns":250000,"reorder":true},"policer":null,"aqm":{"kind":"codel","target_ns":5000000,"interval_ns":100000000}},"mtu":1500,"seed":42,"sample_interval_us":250000,"offload":false,"batch_us":25}"#;

#[test]
fn a_path_spec_serializes_as_it_always_has() {
    let spec = PathSpec {
        down: down(),
        up: up(),
        mtu: 1500,
        seed: 42,
        sample_interval_us: 250_000,
        offload: false,
        batch_us: 25,
        access: Vec::new(),
        tcp_ecn: Default::default(),
    };
    let json = serde_json::to_string(&spec).expect("serializes");
    assert_eq!(json, SPEC_JSON);
    let back: PathSpec = serde_json::from_str(&json).expect("deserializes");
    assert_eq!(serde_json::to_string(&back).expect("serializes"), SPEC_JSON);
}

/// One second of a 1000-byte packet every 1.5 ms through `down()` on a virtual clock, polled
/// every 2 ms (so departures leave late), with a window over [200, 800) ms.
fn report() -> DirectionReport {
    let epoch = Instant::now();
    let window = MeasureWindow::new(epoch);
    window.open(epoch + Duration::from_millis(200));
    window.close(epoch + Duration::from_millis(800));
    let cfg = ShellConfig {
        name: "downlink",
        config: down(),
        seed: 7,
        mtu: 1500,
        offload: false,
        udp_offload: false,
        sample_interval: 250 * MS,
        min_wake_gap: time::Duration::ZERO,
    };
    let mut shell = Shell::new(cfg, at(time::Duration::ZERO), window);
    let mut packet = vec![0u8; 1000];
    packet[0] = 0x45;
    packet[9] = 17;
    let mut next_arrival = at(time::Duration::ZERO);
    for step in 0..=2400u64 {
        let now = at(step * MS / 2);
        while next_arrival <= now && next_arrival < at(1000 * MS) {
            shell.handle_read(next_arrival, &packet);
            next_arrival += 3 * MS / 2;
        }
        if step % 4 == 0 {
            while shell.poll_transmit(now).is_some() {}
        }
    }
    shell.finish(at(1200 * MS), 0.25)
}

const REPORT_JSON: &str = r#"{"direction":"downlink","config":{"rate":{"bits_per_sec":8000000},"delay_ns":10000007,"loss":{"kind":"bernoulli","p":0.01},"buffer":{"kind":"bytes","value":30000},"schedule":[{"at_ns":300000000,"rate":{"bits_per_sec":4000000},"delay_ns":20000000,"loss":{"kind":"none"}},{"at_ns":600000001,"delay_ns":5000000}],"jitter":{"kind":"uniform","max_ns":2000000,"reorder":false},"policer":{"rate_bps":10000000,"burst_bytes":15000},"aqm":{"kind":"codel","target_ns":3000000,"interval_ns":50000000}},"stats":{"packets_in":667,"bytes_in":667000,"packets_out":573,"bytes_out":573000,"drops_loss":1,"drops_buffer":37,"bytes_dropped_loss":1000,"bytes_dropped_buffer":37000,"drops_policer":0,"bytes_dropped_policer":0,"drops_aqm":56,"bytes_dropped_aqm":56000,"ce_marks":0,"bytes_ce_marked":0,"busy_ns":947000000,"queue_delay":{"count":573,"sum_ns":15731000000,"min_ns":0,"max_ns":55500000,"buckets":[[0,200],[499712,1],[999424,1],[1474560,1],[1998848,1],[2490368,1],[2949120,1],[3473408,1],[3997696,1],[4456448,1],[4980736,1],[5373952,1],[5898240,1],[6422528,1],[6946816,1],[7471104,1],[7995392,1],[8388608,1],[8912896,1],[9437184,1],[9961472,1],[10485760,1],[10747904,1],[11272192,1],[11796480,1],[12320768,1],[12845056,1],[13369344,1],[13893632,1],[14417920,2],[14942208,2],[15466496,2],[15990784,1],[16252928,1],[16777216,1],[17301504,1],[17825792,1],[18350080,1],[18874368,1],[19398656,1],[19922944,1],[20447232,1],[20971520,1],[21495808,2],[22020096,1],[22544384,1],[23068672,1],[23592960,1],[24117248,1],[24641536,1],[25165824,2],[25690112,2],[26214400,2],[26738688,1],[27262976,1],[27787264,1],[28311552,1],[28835840,1],[29360128,1],[29884416,1],[30408704,1],[30932992,1],[31457280,1],[31981568,2],[32505856,2],[33030144,2],[33554432,3],[34603008,2],[35651584,2],[36700160,2],[37748736,2],[38797312,4],[39845888,3],[40894464,2],[41943040,2],[42991616,5],[44040192,14],[45088768,28],[46137344,34],[47185920,34],[48234496,30],[49283072,35],[50331648,25],[51380224,30],[52428800,18],[53477376,21],[54525952,2]]},"max_backlog_bytes":30000,"entry":{"gaps":{"count":666,"sum_ns":999000000,"min_ns":1500000,"max_ns":1500000,"buckets":[[1474560,666]]},"bursts":{"bursts":667,"packets":667,"max":1,"lengths":[[1,667]]}}},"queue_delay":{"count":573,"mean_us":27453.752181500873,"p50_us":39321.6,"p95_us":52953.088,"p99_us":54001.664,"max_us":55500.0},"lateness":{"count":573,"mean_us":997.7427382198953,"p50_us":991.232,"p95_us":1884.16,"p99_us":1982.464,"max_us":1993.052},"utilization":0.7891666666666667,"read_errors":0,"write_errors":0,"superframes":0,"segments_from_superframes":0,"writes":573,"malformed":0,"tun_tx_dropped":null,"tun_rx_dropped":null,"cpu_s":0.25,"cpu_share":0.20833333333333334,"series":[{"t_us":250000,"backlog_bytes":0,"backlog_packets":0,"delivered_bytes":158000,"drops_loss":1,"drops_buffer":0,"drops_policer":0,"drops_aqm":0,"ce_marks":0,"queue_delay_mean_us":0.0,"queue_delay_max_us":0.0,"utilization":0.664,"lateness_max_us":1992.037,"aqm_prob":null},{"t_us":500000,"backlog_bytes":29000,"backlog_packets":29,"delivered_bytes":130000,"drops_loss":0,"drops_buffer":0,"drops_policer":0,"drops_aqm":4,"ce_marks":0,"queue_delay_mean_us":13873.076923076924,"queue_delay_max_us":39500.0,"utilization":0.932,"lateness_max_us":1993.052,"aqm_prob":null},{"t_us":750000,"backlog_bytes":30000,"backlog_packets":30,"delivered_bytes":133000,"drops_loss":0,"drops_buffer":24,"drops_policer":0,"drops_aqm":17,"ce_marks":0,"queue_delay_mean_us":50398.496240601504,"queue_delay_max_us":55500.0,"utilization":1.0,"lateness_max_us":1953.145,"aqm_prob":null},{"t_us":1000000,"backlog_bytes":29000,"backlog_packets":29,"delivered_bytes":125000,"drops_loss":0,"drops_buffer":13,"drops_policer":0,"drops_aqm":29,"ce_marks":0,"queue_delay_mean_us":47956.0,"queue_delay_max_us":50500.0,"utilization":1.0,"lateness_max_us":1979.26,"aqm_prob":null}],"window":{"from_us":200000,"to_us":800000,"stats":{"packets_in":400,"bytes_in":400000,"packets_out":321,"bytes_out":321000,"drops_loss":0,"drops_buffer":28,"bytes_dropped_loss":0,"bytes_dropped_buffer":28000,"drops_policer":0,"bytes_dropped_policer":0,"drops_aqm":31,"bytes_dropped_aqm":31000,"ce_marks":0,"bytes_ce_marked":0,"busy_ns":566000000,"queue_delay":{"count":321,"sum_ns":9741000000,"min_ns":0,"max_ns":55500000,"buckets":[[0,75],[499712,1],[999424,1],[1474560,1],[1998848,1],[2490368,1],[2949120,1],[3473408,1],[3997696,1],[4456448,1],[4980736,1],[5373952,1],[5898240,1],[6422528,1],[6946816,1],[7471104,1],[7995392,1],[8388608,1],[8912896,1],[9437184,1],[9961472,1],[10485760,1],[10747904,1],[11272192,1],[11796480,1],[12320768,1],[12845056,1],[13369344,1],[13893632,1],[14417920,2],[14942208,2],[15466496,2],[15990784,1],[16252928,1],[16777216,1],[17301504,1],[17825792,1],[18350080,1],[18874368,1],[19398656,1],[19922944,1],[20447232,1],[20971520,1],[21495808,2],[22020096,1],[22544384,1],[23068672,1],[23592960,1],[24117248,1],[24641536,1],[25165824,2],[25690112,2],[26214400,2],[26738688,1],[27262976,1],[27787264,1],[28311552,1],[28835840,1],[29360128,1],[29884416,1],[30408704,1],[30932992,1],[31457280,1],[31981568,2],[32505856,2],[33030144,2],[33554432,3],[34603008,2],[35651584,2],[36700160,2],[37748736,2],[38797312,4],[39845888,3],[40894464,2],[41943040,2],[42991616,5],[44040192,3],[45088768,2],[46137344,2],[47185920,5],[48234496,13],[49283072,23],[50331648,25],[51380224,30],[52428800,18],[53477376,21],[54525952,2]]},"max_backlog_bytes":0,"entry":{"gaps":{"count":399,"sum_ns":598500000,"min_ns":1500000,"max_ns":1500000,"buckets":[[1474560,399]]},"bursts":{"bursts":400,"packets":400,"max":1,"lengths":[[1,400]]}}},"queue_delay":{"count":321,"mean_us":30345.794392523363,"p50_us":38273.024,"p95_us":54001.664,"p99_us":54001.664,"max_us":55500.0},"lateness":{"count":321,"mean_us":983.0021962616822,"p50_us":942.08,"p95_us":1851.392,"p99_us":1982.464,"max_us":1993.052},"utilization":0.9433333333333334},"error":null}"#;

#[test]
fn a_direction_report_serializes_as_it_always_has() {
    let r = report();
    let json = serde_json::to_string(&r).expect("serializes");
    assert_eq!(json, REPORT_JSON);
    // serde_json parses floats to within an ulp only, so compare what is exact.
    let back: DirectionReport = serde_json::from_str(&json).expect("deserializes");
    assert_eq!((&back.config, &back.stats), (&r.config, &r.stats));
    assert_eq!(back.window.map(|w| w.stats), r.window.map(|w| w.stats));
}
