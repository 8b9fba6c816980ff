//! The kinds of traffic a run can carry, as the record keeps them: what ran with which
//! algorithm, which way the data flowed, and the one figure the verdict compares. Running a
//! workload is the experiment's (`ccbench::workloads::run`).

use ccbench_probe::TcpInfo;
use ccbench_workload::{
    Algorithm, Amount, BrowserResult, BrowserSpec, BulkResult, BulkSpec, Direction, ObjectMethod, ObjectsResult, ObjectsSpec, PageResult, PageSpec, Spec,
    Transport,
};
use serde::{Deserialize, Serialize};

#[derive(Clone, Debug, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum WorkloadSpec {
    /// Bulk flows for a duration, or a fixed-size file when the amount is a byte count.
    Bulk(BulkSpec),
    Objects(ObjectsSpec),
    Page(PageSpec),
    /// The page loaded by headless Chromium.
    Browser(BrowserSpec),
}

#[derive(Clone, Debug, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum WorkloadResult {
    Bulk(BulkResult),
    Objects(ObjectsResult),
    Page(PageResult),
    Browser(BrowserResult),
}

impl WorkloadSpec {
    /// The workload's own definition of itself: the one `match` the spec-level questions
    /// below go through.
    fn spec(&self) -> &dyn Spec {
        match self {
            WorkloadSpec::Bulk(s) => s,
            WorkloadSpec::Objects(s) => s,
            WorkloadSpec::Page(s) => s,
            WorkloadSpec::Browser(s) => s,
        }
    }

    fn spec_mut(&mut self) -> &mut dyn Spec {
        match self {
            WorkloadSpec::Bulk(s) => s,
            WorkloadSpec::Objects(s) => s,
            WorkloadSpec::Page(s) => s,
            WorkloadSpec::Browser(s) => s,
        }
    }

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

    pub fn is_mix(&self) -> bool {
        matches!(self, WorkloadSpec::Bulk(b) if !b.mix.is_empty())
    }

    /// The noun the verdict compares (higher is better).
    pub fn metric(&self) -> &'static str {
        self.spec().metric()
    }

    /// As [`WorkloadSpec::describe`], naming the transports the algorithms `ccs` run over
    /// (`bulk QUIC`, `bulk TCP and QUIC`, how objects travel over each) where the workload
    /// alone cannot tell. `ccs` are the names result.json keys its runs by; a mix's algorithms
    /// are in the workload.
    pub fn describe_for(&self, ccs: &[String]) -> String {
        let transports: Vec<Transport> = match self {
            WorkloadSpec::Bulk(b) if !b.mix.is_empty() => b.mix.iter().map(|f| f.cc.transport()).collect(),
            _ => ccs.iter().filter_map(|c| c.parse::<Algorithm>().ok()).map(|a| a.transport()).collect(),
        };
        let quic = transports.contains(&Transport::Quic);
        let tcp = transports.contains(&Transport::Tcp);
        let text = self.describe();
        // How the HTTP workloads travel over TCP, and over QUIC instead.
        let over = match self {
            WorkloadSpec::Objects(o) => Some((objects_over_tcp(o), format!("{} concurrent streams on one QUIC connection", o.concurrency))),
            WorkloadSpec::Page(p) => Some((page_over_tcp(p.protocol), "one QUIC connection, a stream per object".to_string())),
            _ => None,
        };
        if let Some((over_tcp, over_quic)) = over {
            return match (tcp, quic) {
                (false, true) => text.replacen(&over_tcp, &over_quic, 1),
                (true, true) => text.replacen(&over_tcp, &format!("{over_tcp} (TCP) or {over_quic} (QUIC)"), 1),
                _ => text,
            };
        }
        match (tcp, quic) {
            (false, true) => text.replacen("bulk TCP", "bulk QUIC", 1),
            (true, true) => text.replacen("bulk TCP", "bulk TCP and QUIC", 1),
            _ => text,
        }
    }

    pub fn describe(&self) -> String {
        use crate::units::fmt_bytes;
        match self {
            WorkloadSpec::Bulk(w) => {
                let dir = match w.direction {
                    Direction::Download => "download (server sends)",
                    Direction::Upload => "upload (client sends)",
                };
                let flows = if !w.mix.is_empty() {
                    let stagger = w.mix.get(1).map(|f| f.start_s).unwrap_or(0.0);
                    let names: Vec<String> = w.mix.iter().map(|f| f.cc.to_string()).collect();
                    format!("{} flows sharing the bottleneck ({}), each starting {stagger} s after the previous", w.mix.len(), names.join(", "))
                } else if w.flows == 1 {
                    "1 flow".to_string()
                } else {
                    format!("{} flows", w.flows)
                };
                match w.amount {
                    Amount::Seconds(s) => format!("bulk TCP {dir}, {flows}, {s} s"),
                    Amount::Bytes(b) => format!("file transfer of {} per flow, {dir}, {flows}", fmt_bytes(b)),
                }
            }
            WorkloadSpec::Objects(o) => format!(
                "object store: {} {} requests of {} over {}",
                o.requests,
                match o.method {
                    ObjectMethod::Put => "PUT",
                    ObjectMethod::Get => "GET",
                },
                fmt_bytes(o.object_bytes),
                objects_over_tcp(o)
            ),
            WorkloadSpec::Page(p) => format!(
                "web page: HTML of {} then {} objects ({} in all) over {}",
                fmt_bytes(p.page.html_bytes),
                p.page.objects.len(),
                fmt_bytes(p.page.total_bytes()),
                page_over_tcp(p.protocol)
            ),
            WorkloadSpec::Browser(b) => format!(
                "web page in headless Chromium: HTML of {} then {} images ({} in all) over {}",
                fmt_bytes(b.page.html_bytes),
                b.page.objects.len(),
                fmt_bytes(b.page.total_bytes()),
                match b.protocol {
                    ccbench_workload::PageProtocol::Http1 { .. } => "HTTP/1.1 (Chromium's 6 connections)",
                    ccbench_workload::PageProtocol::Http2 => "HTTP/2 over TLS",
                }
            ),
        }
    }
}

/// How a page travels over kernel TCP.
fn page_over_tcp(protocol: ccbench_workload::PageProtocol) -> String {
    match protocol {
        ccbench_workload::PageProtocol::Http1 { max_connections } => format!("HTTP/1.1 with up to {max_connections} connections"),
        ccbench_workload::PageProtocol::Http2 => "HTTP/2 on one connection".to_string(),
    }
}

/// How an objects load travels over kernel TCP.
fn objects_over_tcp(o: &ObjectsSpec) -> String {
    format!("{} persistent HTTP/1.1 connections", o.concurrency)
}

impl WorkloadResult {
    pub fn interrupted(&self) -> bool {
        match self {
            WorkloadResult::Bulk(b) => b.interrupted,
            WorkloadResult::Objects(o) => o.interrupted,
            WorkloadResult::Page(p) => p.interrupted,
            WorkloadResult::Browser(b) => b.page.interrupted,
        }
    }

    /// The figure compared between algorithms (higher is better), and whether the run did not
    /// finish, which makes the figure a censored bound rather than a measurement. An
    /// unfinished run still counts, ranked at or below every finished one, and is never
    /// dropped from the verdict:
    /// * bulk and file: the goodput of what arrived (a file that did not arrive in time got
    ///   less than `size / timeout`, below any file that did);
    /// * objects: the content throughput; for a run that did not finish every request, the
    ///   bytes that completed over the whole timeout. A finished run took at most the timeout
    ///   for all `R × S` bytes, so it scores at least `R·S / timeout`, and an unfinished one
    ///   moved less than that in the same time: it can never rank above a finished one. (The
    ///   throughput of the completed requests alone, whose window closes at the last success,
    ///   scored a run with one hung request above runs that finished.)
    /// * page (and browser): `1 / timeout` for a page that did not load in time (a page that
    ///   loaded has at least that).
    pub fn score(&self, timeout_s: f64) -> (f64, bool) {
        match self {
            WorkloadResult::Bulk(b) => (b.goodput_bps, !b.flows.iter().all(|f| f.completed)),
            WorkloadResult::Objects(o) => {
                let unfinished = o.requests_completed < o.requests_requested || o.errors > 0;
                if unfinished {
                    (o.content_bytes as f64 * 8.0 / timeout_s, true)
                } else {
                    (o.content_throughput_bps, false)
                }
            }
            WorkloadResult::Page(p) | WorkloadResult::Browser(BrowserResult { page: p, .. }) => match p.page_load_s.filter(|t| *t > 0.0) {
                Some(t) => (1.0 / t, false),
                None => (1.0 / timeout_s, true),
            },
        }
    }

    /// The sending sockets' TCP_INFO at the end.
    pub fn final_infos(&self) -> Vec<&TcpInfo> {
        match self {
            WorkloadResult::Bulk(b) => b.flows.iter().filter_map(|f| f.final_tcp_info.as_ref()).collect(),
            WorkloadResult::Objects(o) => o.connections.iter().filter_map(|c| c.final_tcp_info.as_ref()).collect(),
            WorkloadResult::Page(p) | WorkloadResult::Browser(BrowserResult { page: p, .. }) => {
                p.connections.iter().filter_map(|c| c.final_tcp_info.as_ref()).collect()
            }
        }
    }

    /// What the reader must know about the flows (two QUIC ends on different algorithms).
    pub fn warnings(&self) -> Vec<String> {
        match self {
            WorkloadResult::Bulk(b) => b.flows.iter().filter_map(|f| f.warning.as_ref().map(|w| format!("flow {}: {w}", f.id))).collect(),
            WorkloadResult::Objects(o) => o.connections.iter().filter_map(|c| c.warning.as_ref().map(|w| format!("connection {}: {w}", c.id))).collect(),
            WorkloadResult::Page(p) => p.connections.iter().filter_map(|c| c.warning.as_ref().map(|w| format!("connection {}: {w}", c.id))).collect(),
            WorkloadResult::Browser(_) => Vec::new(),
        }
    }

    /// The QUIC sending connections' last samples (one per connection).
    pub fn final_quic(&self) -> Vec<&ccbench_workload::QuicSample> {
        match self {
            WorkloadResult::Bulk(b) => b.flows.iter().filter_map(|f| f.final_quic.as_ref()).collect(),
            WorkloadResult::Objects(o) => o.connections.iter().filter_map(|c| c.final_quic.as_ref()).collect(),
            WorkloadResult::Page(p) => p.connections.iter().filter_map(|c| c.final_quic.as_ref()).collect(),
            WorkloadResult::Browser(_) => Vec::new(),
        }
    }

    pub fn first_error(&self) -> Option<String> {
        match self {
            WorkloadResult::Bulk(b) => b.flows.iter().find_map(|f| f.error.clone()),
            WorkloadResult::Objects(o) => o.error_messages.first().cloned(),
            WorkloadResult::Page(p) | WorkloadResult::Browser(BrowserResult { page: p, .. }) => p.error_messages.first().cloned(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

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
