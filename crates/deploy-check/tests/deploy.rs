//! The deployment files, read as their consumers would read them.

use k8s_openapi::api::batch::v1::Job;
use k8s_openapi::api::core::v1::{ConfigMap, PersistentVolumeClaim};
use serde::de::DeserializeOwned;
use serde::Deserialize;
use serde_json::Value;

fn repo_file(path: &str) -> String {
    let file = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../..").join(path);
    std::fs::read_to_string(&file).unwrap_or_else(|e| panic!("{}: {e}", file.display()))
}

/// Every document of a YAML stream, as JSON values.
fn documents(text: &str) -> Vec<Value> {
    serde_yaml::Deserializer::from_str(text).map(|d| Value::deserialize(d).expect("valid YAML")).filter(|v| !v.is_null()).collect()
}

/// The first place where two JSON values differ, as a path.
fn first_difference(a: &Value, b: &Value, path: &str) -> Option<String> {
    match (a, b) {
        (Value::Object(x), Value::Object(y)) => {
            let keys: std::collections::BTreeSet<&String> = x.keys().chain(y.keys()).collect();
            keys.into_iter().find_map(|k| match (x.get(k), y.get(k)) {
                (Some(p), Some(q)) => first_difference(p, q, &format!("{path}.{k}")),
                (Some(_), None) => Some(format!("{path}.{k} (not a field of the Kubernetes type: a typo?)")),
                (None, Some(_)) => Some(format!("{path}.{k} (added by the type)")),
                (None, None) => None,
            })
        }
        (Value::Array(x), Value::Array(y)) if x.len() == y.len() => {
            x.iter().zip(y).enumerate().find_map(|(i, (p, q))| first_difference(p, q, &format!("{path}[{i}]")))
        }
        _ if a == b => None,
        _ => Some(format!("{path}: {a} in the file, {b} read back")),
    }
}

/// Reads a document into its Kubernetes type and back: the type's deserializer ignores fields it
/// does not know, so a misspelt field would pass unnoticed unless the round trip is compared.
fn typed<T: DeserializeOwned + serde::Serialize>(doc: &Value) -> T {
    let kind = doc["kind"].as_str().unwrap_or("?").to_string();
    let value: T = serde_json::from_value(doc.clone()).unwrap_or_else(|e| panic!("{kind}: not a valid {kind}: {e}"));
    let back = serde_json::to_value(&value).expect("serializes");
    if let Some(d) = first_difference(doc, &back, &kind) {
        panic!("{d}");
    }
    value
}

fn manifest() -> (ConfigMap, PersistentVolumeClaim, Job) {
    let docs = documents(&repo_file("deploy/kubernetes/sweep-job.yaml"));
    let kinds: Vec<&str> = docs.iter().map(|d| d["kind"].as_str().unwrap_or("?")).collect();
    assert_eq!(kinds, ["ConfigMap", "PersistentVolumeClaim", "Job"]);
    (typed(&docs[0]), typed(&docs[1]), typed(&docs[2]))
}

#[test]
fn every_document_of_the_kubernetes_manifest_is_its_api_type_without_unknown_fields() {
    manifest();
    // And the check itself catches a typo the types would ignore.
    let text = repo_file("deploy/kubernetes/sweep-job.yaml").replace("completionMode:", "completionMod:");
    let job = documents(&text).remove(2);
    let caught = std::panic::catch_unwind(|| typed::<Job>(&job)).expect_err("a misspelt field must fail");
    let message = caught.downcast_ref::<String>().cloned().unwrap_or_default();
    assert!(message.contains("completionMod"), "{message}");
}

#[test]
fn the_job_is_indexed_one_pod_per_node_with_what_ccbench_needs() {
    let (config, claim, job) = manifest();
    let spec = job.spec.expect("Job.spec");
    assert_eq!(spec.completion_mode.as_deref(), Some("Indexed"));
    let n = spec.completions.expect("completions");
    assert!(n >= 1);
    assert_eq!(spec.parallelism, Some(n), "every shard at once");
    let pod = spec.template.spec.clone().expect("pod spec");
    assert_eq!(pod.restart_policy.as_deref(), Some("Never"));
    let labels = spec.template.metadata.clone().and_then(|m| m.labels).expect("pod labels");

    // One pod per node.
    let anti = pod.affinity.and_then(|a| a.pod_anti_affinity).expect("podAntiAffinity");
    let terms = anti.required_during_scheduling_ignored_during_execution.expect("required anti-affinity");
    assert!(terms.iter().any(|t| {
        let selected = t.label_selector.as_ref().and_then(|s| s.match_labels.as_ref());
        t.topology_key == "kubernetes.io/hostname" && selected.is_some_and(|m| !m.is_empty() && m.iter().all(|(k, v)| labels.get(k) == Some(v)))
    }));

    // The capabilities, the TUN device, the spec and the results volume.
    let c = &pod.containers[0];
    let security = c.security_context.as_ref().expect("securityContext");
    let added = security.capabilities.as_ref().and_then(|c| c.add.clone()).unwrap_or_default();
    for cap in ["NET_ADMIN", "SYS_ADMIN"] {
        assert!(added.iter().any(|a| a == cap) || security.privileged == Some(true), "{cap}");
    }
    let volumes = pod.volumes.expect("volumes");
    let mounts = c.volume_mounts.clone().expect("volumeMounts");
    let volume_at = |path: &str| {
        let m = mounts.iter().find(|m| m.mount_path == path).unwrap_or_else(|| panic!("nothing mounted at {path}"));
        volumes.iter().find(|v| v.name == m.name).unwrap_or_else(|| panic!("no volume {}", m.name)).clone()
    };
    let tun = volume_at("/dev/net/tun").host_path.expect("/dev/net/tun from the node (hostPath)");
    assert_eq!((tun.path.as_str(), tun.type_.as_deref()), ("/dev/net/tun", Some("CharDevice")));
    let results = volume_at("/results").persistent_volume_claim.expect("results on a PersistentVolumeClaim");
    assert_eq!(Some(results.claim_name.as_str()), claim.metadata.name.as_deref());
    let claim_spec = claim.spec.clone().expect("PVC spec");
    let claim_class = claim_spec.storage_class_name.clone();
    assert!(claim_spec.access_modes.unwrap_or_default().contains(&"ReadWriteMany".to_string()), "pods on many nodes share it");
    let spec_map = volume_at("/spec").config_map.expect("the spec from the ConfigMap");
    assert_eq!(Some(spec_map.name.as_str()), config.metadata.name.as_deref());

    // The command takes cells from the queue in OUT, named by pod and node (any number of pods,
    // any index: no --shard from the index).
    let command = [c.command.clone().unwrap_or_default(), c.args.clone().unwrap_or_default()].concat().join(" ");
    let words: Vec<&str> = command.split_whitespace().collect();
    let sweep = words.iter().position(|w| *w == "sweep").expect("ccbench sweep");
    assert!(words[..sweep].contains(&"ccbench"), "{command}");
    let spec_file = words[sweep + 1];
    assert!(spec_file.starts_with("/spec/"), "{command}");
    assert!(words.iter().any(|w| w.starts_with("/results/")), "--out on the results volume: {command}");
    assert!(command.contains("--worker \"$(POD_NAME) on $(NODE_NAME)\""), "{command}");
    let env = c.env.clone().unwrap_or_default();
    for (var, field) in [("POD_NAME", "metadata.name"), ("NODE_NAME", "spec.nodeName")] {
        let from = env.iter().find(|e| e.name == var).and_then(|e| e.value_from.clone()).and_then(|v| v.field_ref).map(|f| f.field_path);
        assert_eq!(from.as_deref(), Some(field), "{var} from the downward API");
    }
    assert!(!command.contains("--shards"), "the queue balances the pods: {command}");

    // A refused spec (exit 2) fails the Job at once; an eviction is not counted.
    let policy = spec.pod_failure_policy.expect("podFailurePolicy");
    let fail_on_2 = policy.rules.iter().any(|r| {
        r.action == "FailJob"
            && r.on_exit_codes.as_ref().is_some_and(|e| e.operator == "In" && e.values == [2] && e.container_name.as_deref() == Some(c.name.as_str()))
    });
    assert!(fail_on_2, "a FailJob rule on exit code 2 of the ccbench container");
    assert!(policy.rules.iter().any(|r| r.action == "Ignore" && r.on_pod_conditions.as_ref().is_some_and(|p| p.iter().any(|c| c.type_ == "DisruptionTarget"))));
    assert!(spec.backoff_limit_per_index.is_some_and(|n| n >= 1), "a failed pod is retried for its index");
    // The default seccomp profile is enough (unshare, setns and mount with SYS_ADMIN).
    assert_eq!(security.seccomp_profile.as_ref().map(|p| p.type_.as_str()), Some("RuntimeDefault"));

    // storageClassName is a parameter, and the minimum Kubernetes version is stated.
    assert!(claim_class.is_some_and(|c| !c.is_empty()), "storageClassName set (a ReadWriteMany class)");
    let text = repo_file("deploy/kubernetes/sweep-job.yaml");
    assert!(text.contains("Kubernetes 1.31 or later") && text.contains("PARAMETER"), "the header states the minimum version and the parameters");

    // The spec is the example shipped beside it.
    let key = spec_file.trim_start_matches("/spec/");
    let text = config.data.and_then(|d| d.get(key).cloned()).unwrap_or_else(|| panic!("no {key} in the ConfigMap"));
    assert_eq!(text, repo_file("deploy/example-sweep.toml"), "the ConfigMap's spec and deploy/example-sweep.toml differ");
}

#[test]
fn the_merge_job_waits_for_a_complete_sweep_with_a_deadline_then_merges_its_volume() {
    let docs = documents(&repo_file("deploy/kubernetes/merge-job.yaml"));
    assert_eq!(docs.len(), 1);
    let merge: Job = typed(&docs[0]);
    let (_, claim, sweep) = manifest();
    let pod = merge.spec.and_then(|s| s.template.spec).expect("pod spec");
    let args = pod.containers[0].args.clone().unwrap_or_default();
    assert_eq!(args.first().map(String::as_str), Some("merge"), "the image's entrypoint is ccbench");
    // It merges the directory the sweep's pods write (--out of the sweep, whose $(SWEEP_NAME) is
    // set in the sweep's env).
    let sweep_pod = sweep.spec.and_then(|s| s.template.spec).expect("pod spec");
    let c = &sweep_pod.containers[0];
    let name = c.env.clone().unwrap_or_default().into_iter().find(|e| e.name == "SWEEP_NAME").and_then(|e| e.value).expect("SWEEP_NAME");
    let sweep_out = format!("/results/{name}");
    assert!(c.args.clone().unwrap_or_default().concat().contains("--out /results/$(SWEEP_NAME)"));
    assert_eq!(args[1], sweep_out);
    assert!(args[args.iter().position(|a| a == "--out").expect("--out") + 1].starts_with(&format!("{sweep_out}/")));
    // First an init container polls `ccbench status` on that directory, until a deadline.
    let init = pod.init_containers.clone().unwrap_or_default();
    let wait = init.first().expect("an init container that waits for the sweep");
    let script = [wait.command.clone().unwrap_or_default(), wait.args.clone().unwrap_or_default()].concat().join(" ");
    assert!(script.contains(&format!("ccbench status {sweep_out} ")), "{script}");
    assert!(script.contains("WAIT_SECONDS") && script.contains("exit 1"), "gives up at a deadline: {script}");
    let seconds = wait.env.clone().unwrap_or_default().into_iter().find(|e| e.name == "WAIT_SECONDS").and_then(|e| e.value).expect("WAIT_SECONDS");
    assert!(seconds.parse::<u64>().is_ok_and(|s| s > 0), "{seconds}");
    // Kubernetes expands $(NAME) in args: the shell's $( ) must be written $$( ).
    assert!(!script.replace("$$(", "").contains("$("), "{script}");
    for c in [&pod.containers[0], wait] {
        let mount = c.volume_mounts.clone().unwrap_or_default();
        assert!(mount.iter().any(|m| m.mount_path == "/results"), "{} mounts the results", c.name);
    }
    let volume = pod.volumes.unwrap_or_default().into_iter().find_map(|v| v.persistent_volume_claim).expect("the results claim");
    assert_eq!(Some(volume.claim_name.as_str()), claim.metadata.name.as_deref());
}

fn bash_syntax_ok(path: &str) {
    let status = std::process::Command::new("bash").arg("-n").arg(std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../..").join(path)).status();
    assert!(status.expect("bash").success(), "bash -n {path}");
}

#[test]
fn the_slurm_scripts_name_each_task_explicitly_and_merge_after_any_end_with_a_status_check() {
    let text = repo_file("deploy/slurm/sweep.sbatch");
    let array = text.lines().find_map(|l| l.strip_prefix("#SBATCH --array=")).expect("#SBATCH --array");
    assert!(array.starts_with("0-"), "--array=0-(N-1) (SHARDS=N uses the task id as a 0-based shard): {array}");
    // ccbench by absolute path, through one variable; never a bare `ccbench` found on PATH.
    assert!(text.contains("CCBENCH=${CCBENCH:-/"), "CCBENCH defaults to an absolute path");
    assert!(text.contains("\"$CCBENCH\" \"${ARGS[@]}\""), "runs \"$CCBENCH\"");
    assert!(!text.lines().any(|l| !l.trim_start().starts_with('#') && l.split_whitespace().any(|w| w == "ccbench")), "no bare ccbench");
    // sudo's env_reset drops SLURM_*: the task's name goes on the command line, as does a shard.
    assert!(text.contains("--worker \"$WORKER\"") && text.contains("SLURM_ARRAY_TASK_ID"));
    assert!(text.contains("--shard \"$SHARD\""), "a fixed shard is passed explicitly, never read from SLURM_* by ccbench under sudo");
    assert!(text.contains("sudo -n") && text.contains("id -u"), "sudo for other users, directly as root");
    assert!(text.contains("${SLURM_ARRAY_JOB_ID:-}"), "works outside an array (set -u)");
    assert!(text.contains("afterany") && !text.contains("afterok"), "the merge runs however the tasks ended");
    // Every #SBATCH line comes before the first command, or sbatch ignores it.
    for file in ["deploy/slurm/sweep.sbatch", "deploy/slurm/merge.sbatch"] {
        let text = repo_file(file);
        let first_command = text.lines().position(|l| !l.trim().is_empty() && !l.starts_with('#')).unwrap();
        assert!(text.lines().skip(first_command).all(|l| !l.starts_with("#SBATCH")), "{file}");
        bash_syntax_ok(file);
    }
    // The merge checks the status first, and merges OUT itself.
    let merge = repo_file("deploy/slurm/merge.sbatch");
    let (status, merged) = (merge.find("\"$CCBENCH\" status \"$OUT\"").expect("status"), merge.find("\"$CCBENCH\" merge \"$OUT\" --out").expect("merge"));
    assert!(status < merged);
}

#[test]
fn the_containerfile_builds_ccbench_in_two_stages_from_fully_qualified_images_or_offline() {
    let text = repo_file("Containerfile");
    let froms: Vec<&str> = text.lines().filter_map(|l| l.strip_prefix("FROM ")).collect();
    assert_eq!(froms, ["${BUILD_IMAGE} AS build", "${RUNTIME_IMAGE}"]);
    let default = |arg: &str| text.lines().find_map(|l| l.strip_prefix(&format!("ARG {arg}="))).unwrap_or_else(|| panic!("ARG {arg}")).to_string();
    for image in [default("BUILD_IMAGE"), default("RUNTIME_IMAGE")] {
        // registry/path/name:tag: podman refuses short names it cannot resolve.
        let registry = image.split('/').next().unwrap();
        assert!(image.split('/').count() >= 3 && registry.contains('.') && image.contains(':'), "not fully qualified: {image}");
    }
    assert!(text.contains("cargo build --release --locked $offline -p ccbench"));
    assert!(text.contains("$offline") && text.contains("--offline --config "), "an offline route: {text}");
    assert!(text.contains("iproute2"));
    assert!(text.contains("COPY --from=build"));
    assert!(text.contains("ENTRYPOINT [\"ccbench\"]"));
}

/// A container's `command` and `args` as the kubelet runs them: `$(NAME)` replaced by the
/// container's variable (and those given), `$$` by `$` (Kubernetes' dependent variables).
fn expand(text: &str, vars: &[(&str, &str)]) -> String {
    let mut out = String::new();
    let mut rest = text;
    while let Some(i) = rest.find('$') {
        out.push_str(&rest[..i]);
        let after = &rest[i + 1..];
        if let Some(r) = after.strip_prefix('$') {
            out.push('$');
            rest = r;
        } else if let Some((name, r)) = after.strip_prefix('(').and_then(|a| a.split_once(')')).filter(|(n, _)| vars.iter().any(|(v, _)| v == n)) {
            out.push_str(vars.iter().find(|(v, _)| *v == name).unwrap().1);
            rest = r;
        } else {
            out.push('$');
            rest = after;
        }
    }
    out.push_str(rest);
    out
}

/// A directory of stand-ins for the commands a container script calls, first on its PATH.
struct FakeBin {
    dir: std::path::PathBuf,
}

impl FakeBin {
    fn new(tag: &str) -> FakeBin {
        let dir = std::env::temp_dir().join(format!("ccbench-deploy-{tag}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        FakeBin { dir }
    }

    fn add(&self, name: &str, script: &str) {
        use std::os::unix::fs::PermissionsExt;
        let file = self.dir.join(name);
        std::fs::write(&file, format!("#!/bin/sh\n{script}")).unwrap();
        std::fs::set_permissions(&file, std::fs::Permissions::from_mode(0o755)).unwrap();
    }

    /// Runs `sh -c script` with these commands first on the PATH and `env` set.
    fn run(&self, script: &str, env: &[(&str, &str)]) -> std::process::Output {
        let path = format!("{}:{}", self.dir.display(), std::env::var("PATH").unwrap_or_default());
        let mut c = std::process::Command::new("sh");
        c.arg("-c").arg(script).env("PATH", path).env("FAKE", &self.dir);
        c.envs(env.iter().copied());
        c.output().expect("sh")
    }
}

impl Drop for FakeBin {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

/// Issue 27 §12: failed cells had no way back through the Job. RETRY_FAILED="1" passes
/// `--retry-failed`; anything else does not. And a pod whose cells ran but whose expectations
/// did not pass (exit 4) fails its index without being run again.
#[test]
fn the_sweep_pods_run_failed_cells_again_only_when_retry_failed_is_1() {
    let (_, _, job) = manifest();
    let spec = job.spec.expect("Job.spec");
    let c = spec.template.spec.clone().expect("pod spec").containers[0].clone();
    let env = c.env.clone().unwrap_or_default();
    let default = env.iter().find(|e| e.name == "RETRY_FAILED").and_then(|e| e.value.clone()).expect("RETRY_FAILED in the container's env");
    assert_eq!(default, "0", "failed cells stay failed unless asked");
    let command = c.command.clone().unwrap_or_default();
    assert_eq!(command, ["sh", "-c"]);
    let sweep_name = env.iter().find(|e| e.name == "SWEEP_NAME").and_then(|e| e.value.clone()).unwrap();
    let script = expand(&c.args.clone().unwrap_or_default()[0], &[("SWEEP_NAME", &sweep_name), ("POD_NAME", "sweep-0-abc"), ("NODE_NAME", "node-a")]);
    let fake = FakeBin::new("sweep");
    fake.add("mount", "exit 0\n");
    fake.add("ccbench", "for a in \"$@\"; do echo \"$a\"; done > \"$FAKE/args\"\n");
    for (value, wanted) in [("0", false), ("1", true), ("", false)] {
        let o = fake.run(&script, &[("RETRY_FAILED", value)]);
        assert!(o.status.success(), "RETRY_FAILED={value}: {}", String::from_utf8_lossy(&o.stderr));
        let args = std::fs::read_to_string(fake.dir.join("args")).unwrap();
        let args: Vec<&str> = args.lines().collect();
        assert_eq!(&args[..3], ["sweep", "/spec/sweep.toml", "--out"], "{args:?}");
        assert_eq!(args[3], format!("/results/{sweep_name}"));
        assert!(args.windows(2).any(|w| w == ["--worker", "sweep-0-abc on node-a"]), "{args:?}");
        assert_eq!(args.contains(&"--retry-failed"), wanted, "RETRY_FAILED={value}: {args:?}");
    }
    let policy = spec.pod_failure_policy.expect("podFailurePolicy");
    assert!(
        policy.rules.iter().any(|r| r.action == "FailIndex" && r.on_exit_codes.as_ref().is_some_and(|e| e.operator == "In" && e.values == [4])),
        "exit 4 (expectations not passed) fails the index without a retry"
    );
}

/// Issue 27 §13: the merge Job waited 24 h, silently, when nothing could finish the sweep. It
/// logs `ccbench status`'s verdict at every poll, merges on exit 0, waits through 1 (in progress)
/// and 2 (no plan yet), and gives up once exit 3 (stuck) has lasted STUCK_SECONDS.
#[test]
fn the_merge_job_logs_while_it_waits_and_stops_when_the_sweep_is_stuck() {
    let docs = documents(&repo_file("deploy/kubernetes/merge-job.yaml"));
    let merge: Job = typed(&docs[0]);
    let pod = merge.spec.and_then(|s| s.template.spec).expect("pod spec");
    let wait = pod.init_containers.unwrap_or_default().remove(0);
    assert_eq!(wait.command.clone().unwrap_or_default(), ["sh", "-c"]);
    let script = expand(&wait.args.clone().unwrap_or_default()[0], &[]);
    let env = wait.env.clone().unwrap_or_default();
    for var in ["WAIT_SECONDS", "STUCK_SECONDS", "POLL_SECONDS"] {
        let v = env.iter().find(|e| e.name == var).and_then(|e| e.value.clone()).unwrap_or_else(|| panic!("{var}"));
        assert!(v.parse::<u64>().is_ok_and(|s| s > 0), "{var}={v}");
    }
    let fake = FakeBin::new("merge");
    // `ccbench status` answering, call after call, with the exit statuses in $FAKE/codes (the
    // last one repeated), and a verdict line as its last line.
    fake.add(
        "ccbench",
        r#"n=$(cat "$FAKE/count" 2>/dev/null || echo 0); n=$((n + 1)); echo $n > "$FAKE/count"
code=$(sed -n "${n}p" "$FAKE/codes"); [ -n "$code" ] || code=$(tail -n 1 "$FAKE/codes")
case $code in
0) printf 'Sweep x

Complete: every cell is done.
' ;;
1) printf 'Sweep x

In progress: 3 of 9 cells not done, 2 held under a live lease.
' ;;
3) printf 'Sweep x
Failed    1

Stuck: 1 of 9 cells not done and no task holds a live lease.
' ;;
*) echo "ccbench: invalid status directory: no plan.json" >&2 ;;
esac
exit $code
"#,
    );
    let run = |codes: &str, stuck: &str| {
        std::fs::write(fake.dir.join("codes"), codes).unwrap();
        let _ = std::fs::remove_file(fake.dir.join("count"));
        let o = fake.run(&script, &[("WAIT_SECONDS", "60"), ("STUCK_SECONDS", stuck), ("POLL_SECONDS", "0.1")]);
        let calls: u32 = std::fs::read_to_string(fake.dir.join("count")).unwrap().trim().parse().unwrap();
        (o.status.code(), String::from_utf8_lossy(&o.stdout).to_string(), String::from_utf8_lossy(&o.stderr).to_string(), calls)
    };
    // No plan yet, then in progress, then complete: it waits, logging each verdict, then merges.
    let (code, stdout, stderr, calls) = run("2\n1\n1\n0\n", "600");
    assert_eq!((code, calls), (Some(0), 4), "{stdout}{stderr}");
    assert_eq!(stdout.matches("In progress: 3 of 9 cells not done").count(), 2, "every wait is logged: {stdout}");
    assert!(stdout.contains("status exit 2: ccbench: invalid status directory") && stdout.contains("Complete: every cell is done."), "{stdout}");
    // Stuck, but only briefly (a pod restarted and took a cell): it goes on waiting.
    let (code, stdout, _, calls) = run("3\n1\n0\n", "600");
    assert_eq!((code, calls), (Some(0), 3), "{stdout}");
    // Stuck for good: it gives up after STUCK_SECONDS with the status in its log, without merging.
    let (code, stdout, stderr, calls) = run("1\n3\n", "1");
    assert_eq!(code, Some(1), "{stdout}{stderr}");
    assert!(stderr.contains("stuck for") && stderr.contains("not merging"), "{stderr}");
    assert!(stdout.contains("Failed    1") && stdout.contains("Stuck: 1 of 9"), "the whole status at the end: {stdout}");
    assert!((3..100).contains(&calls), "polled through the grace period, then stopped: {calls} calls");
}

/// Issue 27 §11: the documented offline route failed twice over: the vendor directory resolved
/// to /vendor in the image (a relative `directory` in a --config file is resolved against the
/// parent of that file's directory), and it was `vendor/`, which holds our patched crates
/// without the checksum files a directory source needs. This reads the Containerfile and the
/// cargo configuration it builds with as cargo would, and fails when either comes back.
#[test]
fn the_containerfiles_offline_route_points_cargo_at_the_vendored_crates_inside_the_image() {
    let text = repo_file("Containerfile");
    let build_stage: Vec<&str> =
        text.lines().skip_while(|l| !l.starts_with("FROM ") || !l.contains(" AS build")).take_while(|l| !l.starts_with("FROM ${RUNTIME")).collect();
    let workdir = build_stage.iter().find_map(|l| l.strip_prefix("WORKDIR ")).expect("the build stage's WORKDIR").trim();
    assert!(workdir.starts_with('/'), "{workdir}");
    assert!(build_stage.contains(&"COPY . ."), "the context is copied into the WORKDIR");
    // The build's RUN: `if [ -d DIR ]; then offline="--offline --config FILE"`.
    let run = build_stage.iter().find(|l| l.contains("offline=")).expect("the RUN that chooses the offline route");
    let dir = run.split("[ -d ").nth(1).and_then(|r| r.split(" ]").next()).expect("[ -d DIR ]").trim();
    let config_file = run.split("--config ").nth(1).and_then(|r| r.split('"').next()).expect("--config FILE").trim();
    // The documented command vendors into that very directory.
    let vendor_line = text.lines().find(|l| l.contains("cargo vendor")).expect("the documented cargo vendor command");
    let words: Vec<&str> = vendor_line.trim_start_matches('#').split_whitespace().collect();
    let target = words.iter().skip_while(|w| **w != "vendor").skip(1).find(|w| !w.starts_with('-')).expect("cargo vendor's directory");
    assert_eq!(*target, dir, "cargo vendor writes where the build looks: {vendor_line}");
    // The configuration, as cargo reads it: crates.io replaced by a directory source at the
    // absolute path where COPY puts the vendored crates.
    let config: toml::Value = toml::from_str(&repo_file(config_file)).unwrap_or_else(|e| panic!("{config_file}: {e}"));
    let replaced = config["source"]["crates-io"]["replace-with"].as_str().expect("source.crates-io.replace-with");
    let directory = config["source"][replaced]["directory"].as_str().unwrap_or_else(|| panic!("source.{replaced}.directory"));
    assert!(directory.starts_with('/'), "absolute, or cargo resolves it against the parent of {config_file}'s directory: {directory}");
    assert_eq!(directory, format!("{workdir}/{dir}"), "the vendored crates' place in the image");
    // Not a directory of our patched crates: those have no .cargo-checksum.json.
    let manifest: toml::Value = toml::from_str(&repo_file("Cargo.toml")).unwrap();
    let patched: Vec<String> =
        manifest["patch"]["crates-io"].as_table().expect("[patch.crates-io]").values().filter_map(|v| v["path"].as_str().map(String::from)).collect();
    assert!(!patched.is_empty());
    for p in &patched {
        let top = p.split('/').next().unwrap();
        assert_ne!(top, dir, "{dir} would mix the vendored crates with the patched {p}");
    }
    // The context carries it (not excluded by .dockerignore), and git does not (it is generated).
    let ignored_by_context = repo_file(".dockerignore").lines().any(|l| l.trim().trim_start_matches('/') == dir);
    assert!(!ignored_by_context, ".dockerignore keeps {dir} out of the build");
    assert!(repo_file(".gitignore").lines().any(|l| l.trim().trim_start_matches('/') == dir), "{dir} in .gitignore");
}

/// Issue 27 §12: `RETRY_FAILED=1` passes `--retry-failed` to the task; unset, it does not; any
/// other value is refused. Runs the script itself with a stand-in ccbench.
#[test]
fn the_slurm_task_runs_failed_cells_again_only_with_retry_failed_1() {
    let fake = FakeBin::new("slurm");
    fake.add("ccbench", "for a in \"$@\"; do echo \"$a\"; done > \"$FAKE/args\"\n");
    let script = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../deploy/slurm/sweep.sbatch");
    let out = fake.dir.join("out");
    let ccbench = fake.dir.join("ccbench");
    let run = |value: Option<&str>| {
        let mut c = std::process::Command::new("bash");
        c.arg(&script).env("CCBENCH", &ccbench).env("SPEC", "/spec.toml").env("OUT", &out).env("FAKE", &fake.dir).env_remove("RETRY_FAILED");
        for v in ["SLURM_ARRAY_JOB_ID", "SLURM_ARRAY_TASK_ID", "SLURM_JOB_ID", "SHARDS", "SHARD"] {
            c.env_remove(v);
        }
        if let Some(v) = value {
            c.env("RETRY_FAILED", v);
        }
        // As root the script calls ccbench directly; as anyone else through sudo -n, which a test
        // cannot grant: the check of the arguments needs root.
        let o = c.output().expect("bash");
        let args = std::fs::read_to_string(fake.dir.join("args")).unwrap_or_default();
        let _ = std::fs::remove_file(fake.dir.join("args"));
        (o, args)
    };
    // SAFETY: geteuid has no preconditions.
    if unsafe { libc_geteuid() } != 0 {
        assert!(std::env::var("CI").map(|v| v != "true").unwrap_or(true), "needs root under CI=true");
        return;
    }
    for (value, wanted) in [(None, false), (Some("0"), false), (Some("1"), true)] {
        let (o, args) = run(value);
        assert!(o.status.success(), "RETRY_FAILED={value:?}: {}", String::from_utf8_lossy(&o.stderr));
        assert!(args.starts_with("sweep\n/spec.toml\n--out\n"), "{args}");
        assert_eq!(args.lines().any(|a| a == "--retry-failed"), wanted, "RETRY_FAILED={value:?}: {args}");
    }
    let (o, args) = run(Some("yes"));
    assert_eq!(o.status.code(), Some(2), "a value other than 0 or 1 is refused");
    assert!(args.is_empty() && String::from_utf8_lossy(&o.stderr).contains("RETRY_FAILED must be 0 or 1"));
}

extern "C" {
    #[link_name = "geteuid"]
    fn libc_geteuid() -> u32;
}
