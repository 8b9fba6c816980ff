//! End-to-end tests of `ccbench sweep` and `ccbench merge`: the real binary, real namespaces.
//!
//! Those that run cells need root: outside CI they skip without it; under `CI=true` they fail
//! instead (as in e2e.rs). They run one at a time (a global lock).

mod common;

use std::collections::BTreeMap;
use std::path::Path;
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

use common::{have_root_and_tun, json, lock, ok, tempdir, BIN};
use serde_json::Value;

/// A 2 × 2 grid of one-second, one-run cells.
const SPEC: &str = "description = \"tiny loss x rtt\"\n[defaults]\ncc = \"cubic\"\nruns = 1\nduration = \"1s\"\nrate = \"20mbit\"\n[axes]\nloss = [\"0\", \"1%\"]\nrtt = [\"10ms\", \"20ms\"]\n";

fn write_spec(dir: &Path, name: &str, text: &str) -> String {
    let file = dir.join(name);
    std::fs::write(&file, text).unwrap();
    file.to_str().unwrap().to_string()
}

fn ccbench(args: &[&str], env: &[(&str, &str)]) -> Command {
    let mut c = Command::new(BIN);
    c.args(args);
    for var in ["JOB_COMPLETION_INDEX", "SLURM_ARRAY_TASK_ID", "SLURM_ARRAY_TASK_COUNT", "SLURM_ARRAY_TASK_MIN", "SLURM_ARRAY_TASK_STEP"] {
        c.env_remove(var);
    }
    c.envs(env.iter().copied());
    c
}

fn run(args: &[&str]) -> Output {
    ccbench(args, &[]).output().expect("run ccbench")
}

/// A refusal: exit 2, one line on stderr naming all of `names`, nothing on stdout.
fn refused(o: &Output, names: &[&str]) {
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "should exit 2; stderr: {err}");
    assert_eq!(err.trim().lines().count(), 1, "one line: {err}");
    for n in names {
        assert!(err.contains(n), "should name {n}: {err}");
    }
    assert!(o.stdout.is_empty(), "nothing on stdout: {}", String::from_utf8_lossy(&o.stdout));
}

/// `sweep.json`'s cells by id: (parameters, status).
fn cells(dir: &Path) -> BTreeMap<String, (Value, String)> {
    let index = json(&dir.join("sweep.json"));
    index["cells"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| (c["id"].as_str().unwrap().to_string(), (c["parameters"].clone(), c["status"].as_str().unwrap().to_string())))
        .collect()
}

/// Each cell's `params` from its result.json, by id.
fn cell_params(dir: &Path) -> BTreeMap<String, Value> {
    cells(dir).keys().map(|id| (id.clone(), json(&dir.join("cells").join(id).join("result.json"))["params"].clone())).collect()
}

fn started_at(dir: &Path, id: &str) -> String {
    json(&dir.join("cells").join(id).join("result.json"))["runs"][0]["started_at"].as_str().unwrap().to_string()
}

/// `runs.csv` as rows of (column → value).
fn csv_rows(file: &Path) -> Vec<BTreeMap<String, String>> {
    let mut r = csv::Reader::from_path(file).unwrap_or_else(|e| panic!("{}: {e}", file.display()));
    let header: Vec<String> = r.headers().unwrap().iter().map(str::to_string).collect();
    r.records().map(|rec| header.iter().cloned().zip(rec.unwrap().iter().map(str::to_string)).collect()).collect()
}

const IDS: [&str; 4] = ["loss=0,rtt=10ms", "loss=0,rtt=20ms", "loss=1pct,rtt=10ms", "loss=1pct,rtt=20ms"];

fn wait_for(file: &Path, child: &mut Child) {
    let deadline = Instant::now() + Duration::from_secs(60);
    while !file.exists() {
        assert!(child.try_wait().unwrap().is_none(), "the sweep ended before {}", file.display());
        assert!(Instant::now() < deadline, "no {} after a minute", file.display());
        std::thread::sleep(Duration::from_millis(50));
    }
}

#[test]
fn a_sweep_runs_every_cell_and_its_shards_merge_into_the_same_result_set() {
    let _g = lock();
    if !have_root_and_tun() {
        return;
    }
    let dir = tempdir("grid");
    let spec = write_spec(&dir, "tiny.toml", SPEC);
    let one = dir.join("one");
    let one_s = one.to_str().unwrap();

    // One shot, two cells at a time.
    let stdout = ok(&run(&["sweep", &spec, "--out", one_s, "--parallel", "2"]), "the one-shot sweep");
    let index = json(&one.join("sweep.json"));
    assert_eq!(index["schema"], "ccbench.sweep.v1");
    assert_eq!(index["status"], "complete");
    assert_eq!(index["shard"], Value::Null);
    assert_eq!(index["grid"].as_array().unwrap().len(), 4);
    let got = cells(&one);
    assert_eq!(got.keys().map(String::as_str).collect::<Vec<_>>(), IDS);
    for (id, (params, status)) in &got {
        assert_eq!(status, "complete", "{id}");
        let cell = one.join("cells").join(id);
        for f in ["result.json", "runs.csv", "report.html", "cell.json", "series"] {
            assert!(cell.join(f).exists(), "{id}: no {f}");
        }
        // The cell ran its axis values over the defaults.
        let result = json(&cell.join("result.json"));
        let delay_ns = result["params"]["path"]["down"]["delay_ns"].as_u64().unwrap();
        assert_eq!(delay_ns, if params["rtt"] == "10ms" { 5_000_000 } else { 10_000_000 }, "{id}");
        let loss = &result["params"]["path"]["down"]["loss"];
        let want = if params["loss"] == "1%" { serde_json::json!({ "kind": "bernoulli", "p": 0.01 }) } else { serde_json::json!({ "kind": "none" }) };
        assert_eq!(loss, &want, "{id}");
        assert_eq!(result["params"]["ccs"], serde_json::json!(["cubic"]));
        assert_eq!(result["status"], "complete");
    }
    // Every run of every cell in one CSV, with the cell and its axes.
    let rows = csv_rows(&one.join("runs.csv"));
    assert_eq!(rows.len(), 4);
    for row in &rows {
        let (params, _) = &got[&row["cell"]];
        assert_eq!((row["loss"].as_str(), row["rtt"].as_str()), (params["loss"].as_str().unwrap(), params["rtt"].as_str().unwrap()));
        assert_eq!(row["cc"], "cubic");
        assert!(row["goodput_bps"].parse::<f64>().unwrap() > 1e6, "{row:?}");
        assert!(one.join(&row["series.tcp"]).exists(), "series paths are relative to runs.csv: {}", row["series.tcp"]);
    }
    assert!(stdout.contains("Across cells") && stdout.contains("loss=1% rtt=20ms"), "{stdout}");

    // The same spec as three shards, run at once as separate processes, each finding its shard
    // its own way: --shard, a Kubernetes Indexed Job's index, a Slurm array's task.
    let sharded = dir.join("sharded");
    let sharded_s = sharded.to_str().unwrap();
    let children: Vec<Child> = [
        ccbench(&["sweep", &spec, "--out", sharded_s, "--shard", "0/3"], &[]),
        ccbench(&["sweep", &spec, "--out", sharded_s, "--shards", "3"], &[("JOB_COMPLETION_INDEX", "1")]),
        ccbench(&["sweep", &spec, "--out", sharded_s], &[("SLURM_ARRAY_TASK_ID", "2"), ("SLURM_ARRAY_TASK_COUNT", "3"), ("SLURM_ARRAY_TASK_MIN", "0")]),
    ]
    .into_iter()
    .map(|mut c| c.stdout(Stdio::piped()).stderr(Stdio::piped()).spawn().unwrap())
    .collect();
    for (i, c) in children.into_iter().enumerate() {
        ok(&c.wait_with_output().unwrap(), &format!("shard {i}"));
    }
    let mut union = BTreeMap::new();
    for i in 0..3 {
        let shard = sharded.join(format!("shard-{i}-of-3"));
        assert_eq!(json(&shard.join("sweep.json"))["shard"], serde_json::json!({ "index": i, "count": 3 }));
        for (id, cell) in cells(&shard) {
            assert!(union.insert(id.clone(), cell).is_none(), "{id} in two shards");
        }
    }
    assert_eq!(union, got, "the shards together are the one-shot's cells, with its parameters");

    let merged = dir.join("merged");
    let stdout = ok(&run(&["merge", sharded_s, "--out", merged.to_str().unwrap()]), "merge");
    assert_eq!(cells(&merged), got);
    assert_eq!(cell_params(&merged), cell_params(&one), "per cell, the same parameters (seeds included)");
    let index = json(&merged.join("sweep.json"));
    assert_eq!((index["status"].as_str(), index["shard"].is_null()), (Some("complete"), true));
    assert_eq!(index["spec"]["hash"], json(&one.join("sweep.json"))["spec"]["hash"]);
    assert_eq!(index["merged_from"].as_array().unwrap().len(), 3);
    let rows = csv_rows(&merged.join("runs.csv"));
    assert_eq!(
        rows.iter().map(|r| r["cell"].clone()).collect::<Vec<_>>(),
        csv_rows(&one.join("runs.csv")).iter().map(|r| r["cell"].clone()).collect::<Vec<_>>()
    );
    assert!(rows.iter().all(|r| merged.join(&r["series.tcp"]).exists()));
    assert!(stdout.contains("Across cells") && stdout.contains("loss=0 rtt=10ms"), "{stdout}");

    // A missing shard: refused, naming the cells it held.
    let missing = dir.join("missing");
    let s0 = sharded.join("shard-0-of-3");
    let s1 = sharded.join("shard-1-of-3");
    let o = run(&["merge", s0.to_str().unwrap(), s1.to_str().unwrap(), "--out", missing.to_str().unwrap()]);
    let lost: Vec<String> = cells(&sharded.join("shard-2-of-3")).into_keys().collect();
    refused(&o, &lost.iter().map(String::as_str).chain(["missing"]).collect::<Vec<_>>());
    assert!(!missing.exists(), "a refused merge creates nothing");

    // A shard of another spec: refused, naming both directories.
    let other_spec =
        write_spec(&dir, "other.toml", &SPEC.replace("rtt = [\"10ms\", \"20ms\"]", "rtt = [\"30ms\"]").replace("loss = [\"0\", \"1%\"]", "loss = [\"0\"]"));
    let other = dir.join("other");
    ok(&run(&["sweep", &other_spec, "--out", other.to_str().unwrap()]), "the other sweep");
    let o = run(&["merge", s0.to_str().unwrap(), other.to_str().unwrap(), "--out", missing.to_str().unwrap()]);
    refused(&o, &["mixed specs", s0.to_str().unwrap(), other.to_str().unwrap()]);
    // A shard made by another ccbench: refused.
    let s2 = sharded.join("shard-2-of-3");
    let mut index = json(&s2.join("sweep.json"));
    index["git_revision"] = "0123456789ab".into();
    std::fs::write(s2.join("sweep.json"), index.to_string()).unwrap();
    let o = run(&["merge", sharded_s, "--out", missing.to_str().unwrap()]);
    refused(&o, &["mixed ccbench versions", "0123456789ab"]);
    assert!(!missing.exists());
    let _ = std::fs::remove_dir_all(dir);
}

#[test]
fn a_sweep_resumes_after_a_crash_and_after_ctrl_c_and_refuses_another_spec() {
    let _g = lock();
    if !have_root_and_tun() {
        return;
    }
    let dir = tempdir("resume");
    let spec = write_spec(&dir, "tiny.toml", SPEC);
    let out = dir.join("out");
    let out_s = out.to_str().unwrap();

    // A crash (SIGKILL) once the first cell has finished: the next run skips it.
    let mut child = ccbench(&["sweep", &spec, "--out", out_s], &[]).stdout(Stdio::null()).spawn().unwrap();
    wait_for(&out.join("cells").join(IDS[0]).join("cell.json"), &mut child);
    // SAFETY: killing our own child.
    unsafe { libc::kill(child.id() as i32, libc::SIGKILL) };
    let _ = child.wait();
    let first = started_at(&out, IDS[0]);
    let stdout = ok(&run(&["sweep", &spec, "--out", out_s]), "the sweep after a crash");
    assert!(stdout.contains("Resuming  1 cell(s) finished before, 3 to run"), "{stdout}");
    assert_eq!(started_at(&out, IDS[0]), first, "the finished cell was not run again");
    assert!(cells(&out).values().all(|(_, s)| s == "complete"));
    assert_eq!(csv_rows(&out.join("runs.csv")).len(), 4);

    // Everything finished: nothing runs.
    let before: Vec<String> = IDS.iter().map(|id| started_at(&out, id)).collect();
    let stdout = ok(&run(&["sweep", &spec, "--out", out_s]), "the finished sweep again");
    assert!(stdout.contains("Resuming  4 cell(s) finished before, 0 to run"), "{stdout}");
    assert_eq!(IDS.iter().map(|id| started_at(&out, id)).collect::<Vec<_>>(), before);

    // Another spec, or other flags over it, into the same directory: refused, nothing touched.
    let other = write_spec(&dir, "other.toml", &SPEC.replace("20mbit", "30mbit"));
    refused(&run(&["sweep", &other, "--out", out_s]), &["--out", "another spec"]);
    refused(&run(&["sweep", &spec, "--out", out_s, "--duration", "2s"]), &["--out", "another spec"]);
    assert_eq!(IDS.iter().map(|id| started_at(&out, id)).collect::<Vec<_>>(), before);

    // Ctrl-C after the first cell: exit 130, the sweep says interrupted; the next run finishes it.
    let out2 = dir.join("out2");
    let out2_s = out2.to_str().unwrap();
    let mut child = ccbench(&["sweep", &spec, "--out", out2_s], &[]).stdout(Stdio::null()).spawn().unwrap();
    wait_for(&out2.join("cells").join(IDS[0]).join("cell.json"), &mut child);
    // SAFETY: signalling our own child.
    unsafe { libc::kill(child.id() as i32, libc::SIGINT) };
    assert_eq!(child.wait().unwrap().code(), Some(130));
    let index = json(&out2.join("sweep.json"));
    assert_eq!(index["status"], "interrupted");
    let done = cells(&out2).values().filter(|(_, s)| s == "complete").count();
    assert!((1..4).contains(&done), "{done} cells complete");
    let stdout = ok(&run(&["sweep", &spec, "--out", out2_s]), "the sweep after Ctrl-C");
    assert!(stdout.contains(&format!("Resuming  {done} cell(s) finished before, {} to run", 4 - done)), "{stdout}");
    assert_eq!(json(&out2.join("sweep.json"))["status"], "complete");
    let _ = std::fs::remove_dir_all(dir);
}

#[test]
fn bad_sweep_input_is_one_line_exit_2_and_creates_nothing() {
    let _g = lock();
    let dir = tempdir("bad");
    let out = dir.join("out");
    let out_s = out.to_str().unwrap();
    let spec = write_spec(&dir, "tiny.toml", SPEC);
    let bad_value = write_spec(&dir, "v.toml", &SPEC.replace("\"1%\"", "\"200%\""));
    let bad_axis = write_spec(&dir, "a.toml", &SPEC.replace("rtt = [", "colour = ["));
    let one_bad_cell = write_spec(&dir, "c.toml", "[defaults]\ncc = \"cubic\"\nruns = 1\n[axes]\nworkload = [\"file\", \"bulk\"]\nsize = [\"1mb\"]\n");
    /// Arguments, environment, what the error must name.
    type Case<'a> = (Vec<&'a str>, Vec<(&'a str, &'a str)>, Vec<&'a str>);
    let cases: Vec<Case> = vec![
        (vec!["sweep", &bad_value], vec![], vec!["--loss", "axis loss", "200%"]),
        (vec!["sweep", &bad_axis], vec![], vec!["\"colour\" is not one"]),
        (vec!["sweep", &one_bad_cell], vec![], vec!["--size", "cell size=1mb workload=bulk"]),
        (vec!["sweep", &spec, "--rtt", "5ms"], vec![], vec!["--rtt is an axis"]),
        (vec!["sweep", &spec, "--shard", "3/3"], vec![], vec!["--shard"]),
        (vec!["sweep", &spec, "--shards", "2"], vec![], vec!["--shards"]),
        (vec!["sweep", &spec], vec![("JOB_COMPLETION_INDEX", "0")], vec!["--shards"]),
        (vec!["sweep", &spec, "--parallel", "0"], vec![], vec!["--parallel"]),
        (vec!["sweep", "/nonexistent/spec.toml"], vec![], vec!["sweep spec"]),
        (vec!["merge", "/nonexistent/shard-0-of-2"], vec![], vec!["--out"]),
        (vec!["merge", out_s, "--out", "/nonexistent/merged"], vec![], vec!["merge directory"]),
    ];
    for (mut args, env, names) in cases {
        if args[0] == "sweep" {
            args.extend_from_slice(&["--out", out_s]);
        }
        let o = ccbench(&args, &env).output().unwrap();
        let err = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(2), "{args:?}: should exit 2: {err}");
        assert_eq!(err.trim().lines().count(), 1, "{args:?}: one line: {err}");
        for n in names {
            assert!(err.contains(n), "{args:?}: should name {n}: {err}");
        }
    }
    assert!(!out.exists(), "bad input must not create the results directory");
    // --dry-run lists a shard's cells without root and creates nothing.
    let o = run(&["sweep", &spec, "--shard", "1/2", "--dry-run", "--out", out_s]);
    let listed = ok(&o, "--dry-run");
    assert!(listed.contains("shard 1/2") && listed.contains(IDS[1]) && listed.contains(IDS[3]) && !listed.contains(IDS[0]), "{listed}");
    assert!(!out.exists());
    let _ = std::fs::remove_dir_all(dir);
}
