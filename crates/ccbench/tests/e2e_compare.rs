//! End-to-end test of `ccbench compare`: two tiny real runs (a clean path and its lossy twin)
//! saved by `ccbench run`, then compared through the binary.
//!
//! Needs root for the runs. Outside CI it skips without it; under `CI=true` it fails instead
//! (as in e2e.rs).

mod common;

use std::path::Path;

use common::{ccbench, have_root, json, out_path, run_ok};

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

/// `ccbench run` of 4 cubic runs of 1 s over 20 Mbit/s and 10 ms, with `extra` flags, into `out`.
fn tiny_run(out: &Path, extra: &[&str]) {
    let args = ["--cc", "cubic", "--runs", "4", "--duration", "1s", "--rate", "20mbit", "--rtt", "10ms", "--seed", "7"];
    run_ok(&[&args[..], extra].concat(), out);
}

#[test]
fn compare_names_the_better_path_refuses_an_old_schema_and_finds_no_difference_with_itself() {
    if !have_root() {
        return;
    }
    let base = out_path("compare");
    let (a, b) = (base.join("A"), base.join("B"));
    tiny_run(&a, &[]);
    tiny_run(&b, &["--loss", "5%"]);

    // The files `run` wrote read back into the same JSON, to the byte.
    for dir in [&a, &b] {
        let file = dir.join("result.json");
        let written = std::fs::read_to_string(&file).unwrap();
        let read = ccbench::compare::parse(&file.to_string_lossy(), &written).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(serde_json::to_string(&read).unwrap(), written, "{} does not round-trip", file.display());
    }

    // The clean path against its lossy twin.
    let c = base.join("C");
    let (a_arg, b_arg, c_arg) = (format!("clean={}", a.join("result.json").display()), format!("lossy={}", b.display()), c.to_string_lossy().to_string());
    let o = ccbench(&["compare", &a_arg, &b_arg, "--out", &c_arg]);
    let (stdout, stderr) = (text(&o.stdout), text(&o.stderr));
    assert_eq!(o.status.code(), Some(0), "{stderr}\n{stdout}");
    assert!(stdout.contains("clean: ") && stdout.contains("× the goodput of lossy"), "no verdict for clean:\n{stdout}");
    assert!(stderr.contains("warning: the inputs differ") && stderr.contains("path.down.loss.p: clean –, lossy 0.05"), "{stderr}");
    let doc = json(&c.join("compare.json"));
    assert_eq!(doc["schema"], "ccbench.compare.v1");
    let labels: Vec<&str> = doc["arms"].as_array().unwrap().iter().map(|a| a["label"].as_str().unwrap()).collect();
    assert_eq!(labels, ["clean", "lossy"]);
    assert_eq!(doc["comparisons"][0]["better"], "clean", "{}", doc["comparisons"]);
    assert_eq!(doc["seed"], json(&a.join("result.json"))["params"]["seed"], "the bootstrap's seed is the first input's");
    assert_eq!(doc["inputs"][0]["schema"], "ccbench.result.v3");
    assert!(doc["inputs"][1]["path"].as_str().unwrap().ends_with("B/result.json"));
    assert!(doc["inputs"][0]["kernel_release"].is_string() && doc["inputs"][0]["git_revision"].is_string());
    assert_eq!(doc["summary"].as_array().unwrap().len(), 2);
    assert_eq!(doc["rtt_comparisons"].as_array().unwrap().len(), 1);
    // runs.csv: every run of both, led by its arm and input, its series reachable from C.
    let mut csv = csv::Reader::from_path(c.join("runs.csv")).unwrap();
    let header: Vec<String> = csv.headers().unwrap().iter().map(String::from).collect();
    assert_eq!(&header[..3], ["arm", "input", "index"]);
    let tcp = header.iter().position(|h| h == "series.tcp").expect("series.tcp column");
    let rows: Vec<csv::StringRecord> = csv.records().map(Result::unwrap).collect();
    assert_eq!(rows.len(), 8);
    assert_eq!(rows.iter().filter(|r| &r[0] == "lossy" && &r[1] == "lossy").count(), 4);
    assert!(rows.iter().all(|r| c.join(&r[tcp]).is_file()), "series paths lead from C to the inputs' files");
    let html = std::fs::read_to_string(c.join("report.html")).unwrap();
    assert!(html.contains("clean vs lossy") && html.contains("<polyline"), "report.html has the arms' plots");

    // A result of an older schema is refused: one line, exit 2, nothing written.
    let old = base.join("old");
    std::fs::create_dir_all(&old).unwrap();
    let v2 = std::fs::read_to_string(a.join("result.json")).unwrap();
    std::fs::write(old.join("result.json"), v2.replacen("\"ccbench.result.v3\"", "\"ccbench.result.v1\"", 1)).unwrap();
    let d = base.join("D");
    let o = ccbench(&["compare", &a_arg, &old.to_string_lossy(), "--out", &d.to_string_lossy()]);
    let stderr = text(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "{stderr}");
    assert_eq!(stderr.lines().count(), 1, "one line: {stderr}");
    assert!(stderr.contains("old/result.json has schema ccbench.result.v1") && stderr.contains("reads ccbench.result.v3, ccbench.result.v2"), "{stderr}");
    assert!(o.stdout.is_empty() && !d.exists());

    // A result against itself: no significant difference, or (with the default --min-effect 2 %
    // and runs as repeatable as a clean emulated path gives) equivalent within it.
    let e = base.join("E");
    let same = format!("again={}", a.display());
    let o = ccbench(&["compare", &a_arg, &same, "--out", &e.to_string_lossy()]);
    let stdout = text(&o.stdout);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o.stderr));
    let outcome = json(&e.join("compare.json"))["comparisons"][0]["outcome"].clone();
    match outcome.as_str() {
        Some("no_difference") => assert!(stdout.contains("no significant difference in goodput between"), "{stdout}"),
        Some("equivalent") => assert!(stdout.contains("are equivalent in goodput within 2 %"), "{stdout}"),
        // A clean path can repeat its figures to the byte: then the verdict says so instead of
        // drawing a zero-width interval (issue 28 §6).
        Some("inconclusive") if stdout.contains("identical scores in every run") => {}
        // Against itself every score is tied with its twin; with 4 vs 4 runs so tied, the
        // permuted Brunner–Munzel test (which must agree with its t approximation) cannot reach
        // α, and the verdict says so rather than calling the arms the same (issue 28).
        Some("inconclusive") if stdout.contains("no rank test can reach p < 0.05") => {}
        _ => panic!("a result against itself: {outcome}\n{stdout}"),
    }
    assert!(o.stderr.is_empty(), "same path, no warning: {}", text(&o.stderr));

    let _ = std::fs::remove_dir_all(&base);
}
