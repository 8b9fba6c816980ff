//! End-to-end tests of `--workload browser`: the real binary, real namespaces, Debian's
//! Chromium loading the page through the emulated path, checked against theory (round trips
//! a page load cannot avoid) and against the page it was served (every object fetched).
//!
//! They need root and Chromium. Outside CI they skip without them; under `CI=true` they fail.

mod common;

use std::path::PathBuf;
use std::process::Command;

use common::{fastest, go_on, is_root, lock, no_chromium, out_path, result, text, BIN};
use serde_json::Value;

fn have_root_and_chromium() -> bool {
    go_on(if !is_root() { Some("not root".into()) } else { no_chromium() })
}

/// Nothing of a ccbench process `pid` may remain: no Chromium (its profile path names the
/// pid), no profile directory.
fn assert_nothing_left(pid: u32) {
    let marker = format!("ccbench-browser-{pid}-");
    let leftovers: Vec<String> = std::fs::read_dir(std::env::temp_dir())
        .unwrap()
        .filter_map(|e| e.ok())
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| n.starts_with(&marker))
        .collect();
    assert!(leftovers.is_empty(), "profiles left behind: {leftovers:?}");
    let procs = Command::new("pgrep").args(["-f", &marker]).output().unwrap();
    assert!(procs.stdout.is_empty(), "processes left behind: {}", String::from_utf8_lossy(&procs.stdout));
}

/// One `ccbench run --workload browser --runs 1`, returning its run's JSON.
fn load(args: &[&str]) -> Value {
    let out = out_path("run");
    let out_s = out.to_string_lossy().to_string();
    let mut full = vec!["run", "--workload", "browser", "--cc", "cubic", "--runs", "1", "--rate", "100mbit", "--out", &out_s];
    full.extend_from_slice(args);
    let child = Command::new(BIN).args(&full).stdout(std::process::Stdio::piped()).stderr(std::process::Stdio::piped()).spawn().unwrap();
    let pid = child.id();
    let o = child.wait_with_output().unwrap();
    assert!(o.status.success(), "ccbench {full:?} failed: {}", text(&o));
    assert_nothing_left(pid);
    let v = result(&out);
    let _ = std::fs::remove_dir_all(&out);
    v["runs"][0].clone()
}

/// The page each protocol loads, chosen so that round trips, not the browser's CPU time, make
/// up the load: over HTTP/1.1, 48 small images, which Chromium fetches one per connection per
/// round trip on its 6 connections; over HTTP/2, where every request goes at once, 12 images
/// of 150 kB (1.8 MB), whose delivery takes slow-start rounds on the 20 ms path.
fn objects(http: &str) -> (usize, u64) {
    if http == "2" {
        (12, 150_000)
    } else {
        (48, 2_000)
    }
}

fn page_file(http: &str) -> PathBuf {
    let p = out_path("page").with_extension("json");
    let (n, size) = objects(http);
    let objects = vec![size.to_string(); n].join(",");
    std::fs::write(&p, format!("{{\"html_bytes\": 20000, \"objects\": [{objects}]}}")).unwrap();
    p
}

/// Checks what only the browser can have reported; returns the load time and the HTML's first
/// byte, both as the browser measured them.
fn check_browser_run(run: &Value, http: &str, rtt_ms: f64) -> (f64, f64) {
    let (n_objects, _) = objects(http);
    let w = &run["workload"];
    assert_eq!(w["kind"], "browser", "{run}");
    assert!(run["error"].is_null(), "{}", run["error"]);
    let b = &w["browser"];
    let p = &w["page"];
    // The navigation plus one Resource Timing entry per object: the browser loaded it all.
    assert_eq!(b["resources_fetched"], n_objects as u64 + 1, "{b}");
    assert_eq!(p["requests_completed"], n_objects as u64 + 1, "{p}");
    assert_eq!(b["protocol"], if http == "2" { "h2" } else { "http/1.1" }, "{b}");
    assert!(b["browser_version"].as_str().unwrap_or("").contains("Chrome/"), "{b}");
    assert!(b["lcp_s"].as_f64().is_some_and(|t| t > 0.0), "no LCP: {b}");
    let load = p["page_load_s"].as_f64().unwrap_or_else(|| panic!("no load time: {p}"));
    assert_eq!(Some(load), b["load_event_end_s"].as_f64(), "the load time is the browser's loadEventEnd");
    // The browser's own first byte of the HTML: a TCP handshake and a request (HTTP/1.1), plus
    // a TLS 1.3 handshake (HTTP/2): 2 or 3 round trips of the path. Chromium may start the
    // connection a few ms before the navigation's time origin (measured: a first byte at
    // 35.9 ms through a 20 ms path), so the handshake's round trip is not required in full.
    let rtts = if http == "2" { 2.0 } else { 1.0 };
    let ttfb = b["response_start_s"].as_f64().unwrap();
    assert!(ttfb >= rtts * rtt_ms / 1000.0 * 0.98, "HTML first byte at {ttfb} s, under {rtts} RTTs of {rtt_ms} ms");
    // The server sent it all, with the algorithm read back from its sockets.
    let conns = p["connections"].as_array().unwrap();
    assert!(!conns.is_empty());
    let used: Vec<&Value> = conns.iter().filter(|c| c["requests_completed"].as_u64() > Some(0)).collect();
    if http == "2" {
        assert_eq!(used.len(), 1, "HTTP/2 carries the page on one connection: {conns:?}");
    } else {
        assert!((2..=6).contains(&used.len()), "Chromium uses up to 6 HTTP/1.1 connections: {}", used.len());
    }
    for c in &used {
        assert_eq!(c["cc_read_back"], "cubic");
        assert!(c["final_tcp_info"].is_object(), "the server's sockets were sampled");
    }
    assert_eq!(used.iter().map(|c| c["requests_completed"].as_u64().unwrap()).sum::<u64>(), n_objects as u64 + 1);
    (load, ttfb)
}

/// Round trips a load cannot avoid (each 18 ms longer on the 20 ms path than on the 2 ms one): HTTP/1.1
/// needs the connection, the HTML, the other 5 connections and then n / 6 requests one after
/// the other on each; HTTP/2 the connection, TLS, the HTML and one round of requests (its
/// slow-start rounds are not counted).
fn min_rtts(http: &str) -> f64 {
    if http == "2" {
        4.0
    } else {
        3.0 + (objects(http).0 as f64 / 6.0)
    }
}

fn slower_path_slower_load(http: &str) {
    let page = page_file(http);
    let page_s = page.to_string_lossy().to_string();
    let (mut fast, mut slow) = (Vec::new(), Vec::new());
    // Interleaved, so a burst of load on the machine falls on both paths alike.
    for _ in 0..7 {
        fast.push(check_browser_run(&load(&["--page", &page_s, "--http", http, "--rtt", "2ms"]), http, 2.0));
        slow.push(check_browser_run(&load(&["--page", &page_s, "--http", http, "--rtt", "20ms"]), http, 20.0));
    }
    let _ = std::fs::remove_file(&page);
    let loads = |v: &[(f64, f64)]| v.iter().map(|x| x.0).collect::<Vec<f64>>();
    let ttfbs = |v: &[(f64, f64)]| v.iter().map(|x| x.1).collect::<Vec<f64>>();
    eprintln!("HTTP/{http}: load times, 2 ms path {:?}; 20 ms path {:?}", loads(&fast), loads(&slow));
    eprintln!("HTTP/{http}: HTML first byte, 2 ms path {:?}; 20 ms path {:?}", ttfbs(&fast), ttfbs(&slow));
    // Every load on the 20 ms path waits the round trips it cannot avoid (but the first
    // handshake's, which may begin before the time origin, see above).
    for &t in &loads(&slow) {
        assert!(t >= (min_rtts(http) - 1.0) * 0.020, "a load of {t} s on the 20 ms path is faster than its round trips allow");
    }
    // The fastest of the 7 loads is compared, not the median: the browser's CPU time on a busy
    // machine only ever adds to a load, so the fastest is the one least disturbed, as ping's
    // minimum is. In CI, HTTP/1.1's median load times were 66 ms apart against 198 ms of round
    // trips (and the test failed), the fastest 134 ms apart.
    //
    // HTTP/1.1: the whole load, whose 11 round trips outweigh the browser's work. Its HTML
    // first byte is only 1–2 of them (Chromium may open the connection before the time origin)
    // and too few under load: measured at a load average of 6–13, the 2 ms path's first byte
    // ranged 7–263 ms, and the fastest on each path were 15 ms and 32 ms. HTTP/2: the HTML's
    // first byte, TCP, TLS and the request before any rendering work; its whole load's 4 round
    // trips are hidden by the browser's CPU time (load average 14: medians 0.414 s and 0.424 s).
    let (name, f, s, theory) = if http == "2" {
        ("HTML first byte", fastest(ttfbs(&fast)), fastest(ttfbs(&slow)), 3.0 * 0.018)
    } else {
        ("load time", fastest(loads(&fast)), fastest(loads(&slow)), min_rtts(http) * 0.018)
    };
    eprintln!("HTTP/{http}: fastest {name} {f:.3} s and {s:.3} s; theory: at least {theory:.3} s more");
    // Half the theory's least difference: the rest absorbs what CPU time is left in even the
    // fastest of 7 loads.
    assert!(s - f >= theory / 2.0, "20 ms path fastest {name} {s:.3} s is not {:.3} s above the 2 ms path's {f:.3} s", theory / 2.0);
}

#[test]
fn browser_load_over_http1_takes_longer_through_20ms_than_2ms_and_is_timed_by_the_browser() {
    let _g = lock();
    if !have_root_and_chromium() {
        return;
    }
    slower_path_slower_load("1");
}

#[test]
fn browser_load_over_http2_with_tls_takes_longer_through_20ms_than_2ms_and_is_timed_by_the_browser() {
    let _g = lock();
    if !have_root_and_chromium() {
        return;
    }
    slower_path_slower_load("2");
}

#[test]
fn missing_chromium_is_one_line_exit_2_and_nothing_made() {
    let _g = lock();
    let out = out_path("missing");
    let o = Command::new(BIN)
        .args(["run", "--workload", "browser", "--cc", "cubic", "--runs", "1", "--out", &out.to_string_lossy()])
        .env("CCBENCH_CHROMIUM", "/nonexistent/chromium")
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert_eq!(err.trim().lines().count(), 1, "{err}");
    assert!(err.contains("--workload browser") && err.contains("apt-get install chromium"), "{err}");
    assert!(!out.exists(), "nothing may be written");
}
