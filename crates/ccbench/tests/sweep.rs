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
fn a_sweep_runs_every_cell_and_tasks_sharing_its_queue_give_the_same_result_set() {
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

    // The same spec by three tasks at once into one OUT, as three nodes of a cluster would: one
    // with a fixed shard, one as a Kubernetes Indexed Job's pod (JOB_COMPLETION_INDEX and the
    // --shards of older manifests), one as a Slurm array's task. The index and the array's size
    // do not matter: each takes the next cell nobody holds.
    let shared = dir.join("shared");
    let shared_s = shared.to_str().unwrap();
    let children: Vec<Child> = [
        ccbench(&["sweep", &spec, "--out", shared_s, "--shard", "0/3", "--worker", "fixed shard"], &[]),
        ccbench(&["sweep", &spec, "--out", shared_s, "--shards", "3"], &[("JOB_COMPLETION_INDEX", "1")]),
        ccbench(&["sweep", &spec, "--out", shared_s], &[("SLURM_ARRAY_TASK_ID", "7"), ("SLURM_ARRAY_TASK_COUNT", "1"), ("SLURM_JOB_ID", "42")]),
    ]
    .into_iter()
    .map(|mut c| c.stdout(Stdio::piped()).stderr(Stdio::piped()).spawn().unwrap())
    .collect();
    for (i, c) in children.into_iter().enumerate() {
        ok(&c.wait_with_output().unwrap(), &format!("task {i}"));
    }
    // Every cell once, each run by one of the tasks, none left claimed or half-run.
    let records: Vec<Value> = IDS.iter().map(|id| json(&shared.join("cells").join(id).join("cell.json"))).collect();
    assert!(records.iter().all(|r| r["status"] == "complete" && r["attempts"] == 1), "{records:?}");
    let workers: std::collections::BTreeSet<String> = records.iter().map(|r| r["worker"].as_str().unwrap().to_string()).collect();
    assert!(workers.iter().all(|w| w == "fixed shard" || w.starts_with("job index 1 on ") || w.starts_with("slurm job 42 task 7 on ")), "{workers:?}");
    assert_eq!(std::fs::read_dir(shared.join("queue")).unwrap().count(), 0, "no claim left");
    assert_eq!(std::fs::read_dir(shared.join("running")).unwrap().count(), 0, "no attempt left");
    for id in IDS {
        let log = std::fs::read_to_string(shared.join("cells").join(id).join("log")).unwrap();
        assert!(log.contains(&format!("cell {id} ")) && log.contains("attempt 1 of 2") && log.contains("run 1/1: cubic goodput"), "{log}");
    }
    let plan = json(&shared.join("plan.json"));
    assert_eq!(plan["spec"]["hash"], json(&one.join("sweep.json"))["spec"]["hash"], "one plan, the one-shot's");

    // status: complete, exit 0; the same as JSON.
    let o = run(&["status", shared_s]);
    let text = ok(&o, "status");
    assert!(text.contains("Done      4") && text.contains("Missing   0") && text.contains("Complete"), "{text}");
    let o = run(&["status", shared_s, "--json"]);
    let status: Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!((status["complete"].as_bool(), status["counts"]["done"].as_u64(), status["cells"].as_u64()), (Some(true), Some(4), Some(4)));

    // merge takes OUT itself; a second merge replaces the first.
    let merged = shared.join("merged");
    let stdout = ok(&run(&["merge", shared_s, "--out", merged.to_str().unwrap()]), "merge");
    assert_eq!(cells(&merged), got);
    assert_eq!(cell_params(&merged), cell_params(&one), "per cell, the same parameters (seeds included)");
    let index = json(&merged.join("sweep.json"));
    assert_eq!((index["status"].as_str(), index["shard"].is_null()), (Some("complete"), true));
    assert_eq!(index["spec"]["hash"], json(&one.join("sweep.json"))["spec"]["hash"]);
    let rows = csv_rows(&merged.join("runs.csv"));
    assert_eq!(
        rows.iter().map(|r| r["cell"].clone()).collect::<Vec<_>>(),
        csv_rows(&one.join("runs.csv")).iter().map(|r| r["cell"].clone()).collect::<Vec<_>>()
    );
    assert!(rows.iter().all(|r| merged.join(&r["series.tcp"]).exists()));
    assert!(stdout.contains("Across cells") && stdout.contains("loss=0 rtt=10ms"), "{stdout}");
    std::fs::write(merged.join("stale-marker"), "from the first merge").unwrap();
    let stdout = ok(&run(&["merge", shared_s, "--out", merged.to_str().unwrap()]), "the second merge");
    assert!(stdout.contains("replacing the earlier merge"), "{stdout}");
    assert!(!merged.join("stale-marker").exists(), "the second merge replaced the first");
    assert_eq!(cells(&merged), got);
    assert_eq!(csv_rows(&merged.join("runs.csv")).len(), 4);

    // A closed standard output ends merge and status quietly (`ccbench merge … | head -1`).
    for args in [vec!["merge", shared_s, "--out", merged.to_str().unwrap()], vec!["status", shared_s], vec!["status", shared_s, "--json"]] {
        let o = with_closed_stdout(&args);
        assert_eq!(o.status.code(), Some(0), "{args:?}: {}", String::from_utf8_lossy(&o.stderr));
        assert!(o.stderr.is_empty(), "{args:?}: quiet: {}", String::from_utf8_lossy(&o.stderr));
    }

    // A cell missing and no task running: status says which, and that the sweep is stuck (exit
    // 3: nothing running can finish it); merge refuses naming it, --partial merges the rest.
    std::fs::remove_dir_all(shared.join("cells").join(IDS[2])).unwrap();
    let o = run(&["status", shared_s]);
    assert_eq!(o.status.code(), Some(3));
    let text = String::from_utf8_lossy(&o.stdout);
    assert!(text.contains("Done      3") && text.contains(&format!("Missing   1\n  {}", IDS[2])), "{text}");
    assert!(text.trim_end().lines().last().unwrap().starts_with("Stuck: 1 of 4 cells not done and no task holds a live lease"), "{text}");
    assert!(text.contains("1 missing or lapsed: any task started with the same spec and --out takes them"), "{text}");
    let status: Value = serde_json::from_slice(&run(&["status", shared_s, "--json"]).stdout).unwrap();
    assert_eq!(status["state"], "stuck");
    let partial = dir.join("partial");
    refused(&run(&["merge", shared_s, "--out", partial.to_str().unwrap()]), &[IDS[2], "missing"]);
    assert!(!partial.exists(), "a refused merge creates nothing");
    ok(&run(&["merge", shared_s, "--partial", "--out", partial.to_str().unwrap()]), "merge --partial");
    let pending: Vec<String> = cells(&partial).into_iter().filter(|(_, (_, s))| s == "pending").map(|(id, _)| id).collect();
    assert_eq!(pending, [IDS[2]]);
    assert_eq!(csv_rows(&partial.join("runs.csv")).len(), 3);

    // A sweep of another spec: refused, naming both directories.
    let other_spec =
        write_spec(&dir, "other.toml", &SPEC.replace("rtt = [\"10ms\", \"20ms\"]", "rtt = [\"30ms\"]").replace("loss = [\"0\", \"1%\"]", "loss = [\"0\"]"));
    let other = dir.join("other");
    ok(&run(&["sweep", &other_spec, "--out", other.to_str().unwrap()]), "the other sweep");
    let missing = dir.join("missing");
    let o = run(&["merge", shared_s, other.to_str().unwrap(), "--out", missing.to_str().unwrap()]);
    refused(&o, &["mixed specs", shared_s, other.to_str().unwrap()]);
    // A sweep made by another ccbench: refused.
    let mut plan = json(&other.join("plan.json"));
    plan["spec"]["hash"] = json(&shared.join("plan.json"))["spec"]["hash"].clone();
    plan["git_revision"] = "0123456789ab".into();
    std::fs::write(other.join("plan.json"), plan.to_string()).unwrap();
    let o = run(&["merge", shared_s, other.to_str().unwrap(), "--out", missing.to_str().unwrap()]);
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
        (vec!["sweep", &spec, "--shard", "1/2", "--shards", "3"], vec![], vec!["--shards"]),
        (vec!["sweep", &spec, "--retries", "99"], vec![], vec!["--retries"]),
        (vec!["sweep", &spec, "--lease-secs", "0"], vec![], vec!["--lease-secs"]),
        (vec!["status", "/nonexistent/sweep"], vec![], vec!["status directory", "plan.json"]),
        (vec!["merge", "/nonexistent/shard-0-of-2"], vec![], vec!["--out"]),
        (vec!["merge", out_s, "--out", &spec], vec![], vec!["merge directory"]),
        (vec!["sweep", &spec, "--parallel", "0"], vec![], vec!["--parallel"]),
        (vec!["sweep", "/nonexistent/spec.toml"], vec![], vec!["sweep spec"]),
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

/// `ccbench ARGS` with its standard output a pipe whose reader has gone (`… | head -1` once head
/// has exited): every write to it fails with EPIPE.
fn with_closed_stdout(args: &[&str]) -> Output {
    use std::os::fd::{FromRawFd, OwnedFd};
    let mut fds = [0; 2];
    // SAFETY: pipe writes two descriptors into the array, which we then own.
    assert_eq!(unsafe { libc::pipe(fds.as_mut_ptr()) }, 0);
    // SAFETY: each descriptor is owned once.
    let (reader, writer) = unsafe { (OwnedFd::from_raw_fd(fds[0]), OwnedFd::from_raw_fd(fds[1])) };
    drop(reader);
    ccbench(args, &[]).stdout(Stdio::from(writer)).stderr(Stdio::piped()).output().expect("run ccbench")
}

#[test]
fn commands_exit_quietly_when_their_reader_has_gone() {
    let _g = lock();
    let dir = tempdir("epipe");
    let spec = write_spec(&dir, "tiny.toml", SPEC);
    for args in [vec!["presets"], vec!["sweep", &spec, "--dry-run"], vec!["trace", "constant", "--rate", "10mbit"], vec!["--help"]] {
        let o = with_closed_stdout(&args);
        let err = String::from_utf8_lossy(&o.stderr);
        assert!(!err.contains("panicked") && err.is_empty(), "{args:?}: {err}");
        assert_eq!(o.status.code(), Some(0), "{args:?}: {err}");
    }
    let _ = std::fs::remove_dir_all(dir);
}

/// A 1 × 2 grid whose second cell cannot run: 100% loss, so no connection is ever set up.
const FAILING: &str = "[defaults]\ncc = \"cubic\"\nruns = 1\nduration = \"1s\"\nrate = \"20mbit\"\nrtt = \"10ms\"\n[axes]\nloss = [\"0\", \"100%\"]\n";

#[test]
fn a_failing_cell_is_tried_again_then_marked_failed_with_its_error_and_log() {
    let _g = lock();
    if !have_root_and_tun() {
        return;
    }
    let dir = tempdir("retries");
    let spec = write_spec(&dir, "failing.toml", FAILING);
    let out = dir.join("out");
    let out_s = out.to_str().unwrap();
    let o = run(&["sweep", &spec, "--out", out_s, "--retries", "1"]);
    assert_eq!(o.status.code(), Some(1), "a failed cell makes the task fail: {}", String::from_utf8_lossy(&o.stderr));
    let stdout = String::from_utf8_lossy(&o.stdout);
    assert!(stdout.contains("loss=100%: failed after 2 attempt(s): connection setup failed"), "{stdout}");
    let failed = out.join("cells").join("loss=100pct");
    let record = json(&failed.join("cell.json"));
    assert_eq!((record["status"].as_str(), record["attempts"].as_u64()), (Some("failed"), Some(2)));
    assert!(record["error"].as_str().unwrap().starts_with("connection setup failed"), "{record}");
    let log = std::fs::read_to_string(failed.join("log")).unwrap();
    for line in ["attempt 1 of 2", "attempt 1 failed: connection setup failed", "attempt 2 of 2", "attempt 2 failed", "finished: failed"] {
        assert!(log.contains(line), "the log should hold {line:?}: {log}");
    }
    // status: the failed cell with its error's first line; stuck (exit 3), since only a task with
    // --retry-failed would run it again, which it says; as JSON too.
    let o = run(&["status", out_s]);
    assert_eq!(o.status.code(), Some(3));
    let text = String::from_utf8_lossy(&o.stdout);
    assert!(text.contains("Done      1") && text.contains("Failed    1") && text.contains("loss=100pct  after 2 attempt(s)"), "{text}");
    assert!(text.contains("connection setup failed") && text.contains("cells/loss=100pct/log"), "{text}");
    assert!(text.contains("Stuck: 1 of 2 cells not done") && text.contains("1 failed: only a task with --retry-failed (RETRY_FAILED=1"), "{text}");
    assert!(!text.contains("any task started with the same spec"), "no task without --retry-failed takes a failed cell: {text}");
    let status: Value = serde_json::from_slice(&run(&["status", out_s, "--json"]).stdout).unwrap();
    assert_eq!(status["failed"][0]["id"], "loss=100pct");
    assert_eq!(status["counts"], serde_json::json!({ "done": 1, "running": 0, "failed": 1, "missing": 0 }));
    // Run again: a failed cell is not tried again, unless asked, and the task says it runs nothing.
    let o = run(&["sweep", &spec, "--out", out_s, "--retries", "0"]);
    assert_eq!(o.status.code(), Some(0), "{}", String::from_utf8_lossy(&o.stderr));
    let stdout = String::from_utf8_lossy(&o.stdout);
    assert!(stdout.contains("Resuming  1 cell(s) finished before, 1 failed (not run again without --retry-failed"), "{stdout}");
    assert!(stdout.contains(", 0 to run\n"), "{stdout}");
    assert_eq!(json(&failed.join("cell.json"))["attempts"], 2, "untouched");
    let o = run(&["sweep", &spec, "--out", out_s, "--retries", "0", "--retry-failed"]);
    assert_eq!(o.status.code(), Some(1));
    let stdout = String::from_utf8_lossy(&o.stdout);
    assert!(stdout.contains("1 to run (1 of them failed before: --retry-failed)"), "{stdout}");
    assert_eq!(json(&failed.join("cell.json"))["attempts"], 1, "run again, once");
    // Every attempt's lines are kept: the two before, and the retry's.
    let log = std::fs::read_to_string(failed.join("log")).unwrap();
    for line in ["attempt 1 of 2", "attempt 2 of 2", "attempt 1 of 1", "attempt 1 failed"] {
        assert!(log.contains(line), "the log should still hold {line:?}: {log}");
    }
    assert_eq!(log.matches("finished: failed").count(), 2, "{log}");
    let _ = std::fs::remove_dir_all(dir);
}

/// A 1 × 2 grid judged by one expectation that the 20 Mbit/s cell passes and the 2 Mbit/s cell
/// fails (it cannot deliver 5 Mbit/s); 5 runs, the fewest that decide at α = 0.05.
const EXPECTING: &str = "[defaults]\ncc = \"cubic\"\nruns = 5\nduration = \"1s\"\nrtt = \"10ms\"\nseed = 21\n[[expect]]\nmetric = \"goodput\"\nop = \">=\"\nvalue = \"5mbit\"\n[axes]\nrate = [\"2mbit\", \"20mbit\"]\n";

#[test]
fn a_sweep_exits_4_naming_the_cell_whose_expectation_failed_and_writes_junit_per_cell() {
    let _g = lock();
    if !have_root_and_tun() {
        return;
    }
    let dir = tempdir("sweep-expect");
    let spec = write_spec(&dir, "expecting.toml", EXPECTING);
    let out = dir.join("out");
    let junit = dir.join("junit.xml");
    let o = run(&["sweep", &spec, "--out", out.to_str().unwrap(), "--junit", junit.to_str().unwrap()]);
    let stdout = String::from_utf8_lossy(&o.stdout);
    assert_eq!(o.status.code(), Some(4), "a cell's failed expectation fails the sweep, with its own status: {stdout}{}", String::from_utf8_lossy(&o.stderr));
    // Both cells ran to completion: it is the expectation, not a run, that failed.
    assert!(cells(&out).values().all(|(_, status)| status == "complete"), "{:?}", cells(&out));
    // One line per expectation that did not pass, led by its cell; the passing cell is not named.
    let not_passed: Vec<&str> = stdout.lines().skip_while(|l| !l.starts_with("Expectations not passed")).skip(1).collect();
    assert_eq!(not_passed.len(), 1, "{stdout}");
    assert!(not_passed[0].trim_start().starts_with("rate=2mbit: FAIL      cubic: goodput >= 5mbit"), "{stdout}");
    assert!(stdout.contains("[expect: fail]") && stdout.contains("[expect: pass]"), "the table marks each cell: {stdout}");
    let index = json(&out.join("sweep.json"));
    let marks: BTreeMap<&str, &str> = index["cells"].as_array().unwrap().iter().map(|c| (c["id"].as_str().unwrap(), c["expect"].as_str().unwrap())).collect();
    assert_eq!(marks, BTreeMap::from([("rate=20mbit", "pass"), ("rate=2mbit", "fail")]));
    // JUnit: a suite per cell, named by its label, one case per expectation × algorithm.
    let suites = common::junit_read_back(&junit);
    let got: Vec<(&str, u64, u64, &str, &str)> = suites
        .as_array()
        .unwrap()
        .iter()
        .map(|s| {
            (
                s["name"].as_str().unwrap(),
                s["tests"].as_u64().unwrap(),
                s["failures"].as_u64().unwrap(),
                s["cases"][0]["classname"].as_str().unwrap(),
                s["cases"][0]["kind"].as_str().unwrap(),
            )
        })
        .collect();
    // In the grid's order: by cell id.
    assert_eq!(got, [("rate=20mbit", 1, 0, "ccbench.rate=20mbit", "pass"), ("rate=2mbit", 1, 1, "ccbench.rate=2mbit", "fail")], "{suites}");
    // Issue 27 §14: a task that ran none of the cells (all done) does not answer for them: exit 0,
    // saying that other tasks' cells did not pass.
    let o = run(&["sweep", &spec, "--out", out.to_str().unwrap()]);
    let stdout = String::from_utf8_lossy(&o.stdout);
    assert_eq!(o.status.code(), Some(0), "{stdout}{}", String::from_utf8_lossy(&o.stderr));
    assert!(!stdout.contains("Expectations not passed"), "{stdout}");
    assert!(stdout.contains("1 cell(s) run before or by other tasks did not pass their expectations"), "{stdout}");
    let _ = std::fs::remove_dir_all(dir);
}

/// Writes a claim on `id` as a task on another node would, renewed now.
fn foreign_claim(out: &Path, id: &str, lease_secs: u64) -> std::path::PathBuf {
    let queue = out.join("queue");
    std::fs::create_dir_all(&queue).unwrap();
    let file = queue.join(format!("{id}.claim"));
    let claim = serde_json::json!({ "worker": "slurm job 9 task 3", "host": "node-that-died", "pid": 4242, "token": "t", "since": "2026-01-01T00:00:00Z", "lease_secs": lease_secs });
    std::fs::write(&file, claim.to_string()).unwrap();
    file
}

#[test]
fn a_lapsed_lease_is_taken_over_by_the_next_task_and_a_live_one_is_not() {
    let _g = lock();
    if !have_root_and_tun() {
        return;
    }
    let dir = tempdir("lease");
    let spec = write_spec(&dir, "tiny.toml", SPEC);
    let out = dir.join("out");
    let out_s = out.to_str().unwrap();
    // A task on another node holds IDS[1] and renews its 2-second lease (here: this test, while
    // the sweep runs).
    let claim = foreign_claim(&out, IDS[1], 2);
    let renewing = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(true));
    let renewer = {
        let (claim, renewing) = (claim.clone(), renewing.clone());
        std::thread::spawn(move || {
            while renewing.load(std::sync::atomic::Ordering::SeqCst) {
                let f = std::fs::File::options().write(true).open(&claim).unwrap();
                f.set_modified(std::time::SystemTime::now()).unwrap();
                std::thread::sleep(Duration::from_millis(300));
            }
        })
    };
    let o = run(&["sweep", &spec, "--out", out_s, "--lease-secs", "2"]);
    assert_eq!(o.status.code(), Some(0), "{}", String::from_utf8_lossy(&o.stderr));
    assert!(!out.join("cells").join(IDS[1]).exists(), "a live claim is left to its holder");
    let o = run(&["status", out_s, "--json"]);
    assert_eq!(o.status.code(), Some(1), "in progress: a task holds a cell under a live lease");
    let status: Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(status["counts"], serde_json::json!({ "done": 3, "running": 1, "failed": 0, "missing": 0 }));
    assert_eq!(status["state"], "in_progress");
    let r = &status["running"][0];
    assert_eq!((r["id"].as_str(), r["host"].as_str(), r["lapsed"].as_bool()), (Some(IDS[1]), Some("node-that-died"), Some(false)));
    assert!(r["lease_age_s"].as_f64().unwrap() < 2.0, "{r}");
    assert_eq!(r["holder"], "unknown", "another host's process is out of sight");
    let left = r["lease_lapses_in_s"].as_f64().unwrap();
    assert!(left > 0.0 && left <= 2.0, "{r}");

    // The node dies: the lease lapses, status says so, and the next task takes the cell over.
    renewing.store(false, std::sync::atomic::Ordering::SeqCst);
    renewer.join().unwrap();
    std::thread::sleep(Duration::from_millis(2500));
    let o = run(&["status", out_s]);
    assert_eq!(o.status.code(), Some(3), "stuck: the only holder's lease lapsed and no task runs");
    let text = String::from_utf8_lossy(&o.stdout);
    assert!(text.contains("slurm job 9 task 3 on node-that-died, lease renewed") && text.contains("s ago: the next task to look takes it over"), "{text}");
    assert!(text.contains(", lapsed "), "says when the lease lapsed: {text}");
    let o = run(&["sweep", &spec, "--out", out_s]);
    let stderr = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(0), "{stderr}");
    assert!(stderr.contains("lease of slurm job 9 task 3 on node-that-died lapsed: taken over"), "{stderr}");
    let log = std::fs::read_to_string(out.join("cells").join(IDS[1]).join("log")).unwrap();
    assert!(log.contains("took over from slurm job 9 task 3 on node-that-died (pid 4242)"), "{log}");
    assert_eq!(run(&["status", out_s]).status.code(), Some(0));
    assert_eq!(std::fs::read_dir(out.join("queue")).unwrap().count(), 0, "no claim left");
    let _ = std::fs::remove_dir_all(dir);
}

/// A 1 × 3 grid of two-second cells: long enough that a task starting after another's first
/// claim finds it held.
const THREE: &str = "[defaults]\ncc = \"cubic\"\nruns = 1\nduration = \"2s\"\nrate = \"20mbit\"\n[axes]\nrtt = [\"10ms\", \"20ms\", \"30ms\"]\n";

/// Issue 27 §10: a task in a PID namespace of its own (a container with `--pid`, `unshare -p`)
/// on the same host sees no process with a live holder's PID. It must not judge the holder dead
/// from that, and so must not take its cell: every cell runs once.
#[test]
fn a_task_in_another_pid_namespace_on_this_host_does_not_take_a_live_holders_cell() {
    let _g = lock();
    if !have_root_and_tun() || !common::have_root_and(&["unshare"]) {
        return;
    }
    let dir = tempdir("pidns");
    let spec = write_spec(&dir, "three.toml", THREE);
    let out = dir.join("out");
    let out_s = out.to_str().unwrap();
    let mut host_task = ccbench(&["sweep", &spec, "--out", out_s, "--worker", "host task"], &[]).stdout(Stdio::piped()).stderr(Stdio::piped()).spawn().unwrap();
    // Once the host's task holds a cell, the other starts in a PID namespace of its own (its
    // ccbench is PID 1 there), on the same host, the same boot and the same OUT.
    let deadline = Instant::now() + Duration::from_secs(60);
    while std::fs::read_dir(out.join("queue")).map(|d| d.count()).unwrap_or(0) == 0 {
        assert!(host_task.try_wait().unwrap().is_none(), "the host's task ended before claiming a cell");
        assert!(Instant::now() < deadline, "no claim after a minute");
        std::thread::sleep(Duration::from_millis(20));
    }
    let contained = Command::new("unshare")
        .args(["--pid", "--fork", "--mount-proc", BIN, "sweep", &spec, "--out", out_s, "--worker", "contained task"])
        .env_remove("JOB_COMPLETION_INDEX")
        .output()
        .unwrap();
    let host_task = host_task.wait_with_output().unwrap();
    let stderr = [&host_task.stderr, &contained.stderr].map(|e| String::from_utf8_lossy(e).to_string()).join("\n");
    ok(&host_task, "the host's task");
    ok(&contained, "the task in its own PID namespace");
    assert!(!stderr.contains("taken over") && !stderr.contains("got there first"), "no cell was taken from a live holder: {stderr}");
    let mut workers = std::collections::BTreeSet::new();
    for rtt in ["10ms", "20ms", "30ms"] {
        let cell = out.join("cells").join(format!("rtt={rtt}"));
        let log = std::fs::read_to_string(cell.join("log")).unwrap();
        assert_eq!(log.matches(" taken by ").count(), 1, "run once: {log}");
        assert!(!log.contains("took over"), "{log}");
        let record = json(&cell.join("cell.json"));
        assert_eq!((record["status"].as_str(), record["attempts"].as_u64()), (Some("complete"), Some(1)), "{record}");
        workers.insert(record["worker"].as_str().unwrap().to_string());
    }
    // The contained task did run (cells nobody held), so it did look at the held one.
    assert!(workers.contains("contained task") && workers.contains("host task"), "{workers:?}");
    assert_eq!(std::fs::read_dir(out.join("queue")).unwrap().count(), 0, "no claim left");
    let _ = std::fs::remove_dir_all(dir);
}
