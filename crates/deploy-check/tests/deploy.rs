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
    assert!(script.contains(&format!("until ccbench status {sweep_out} ")), "{script}");
    assert!(script.contains("deadline") && script.contains("exit 1"), "gives up at a deadline: {script}");
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
    assert!(text.contains("--offline --config vendor-config.toml") && text.contains("cargo vendor --locked vendor > vendor-config.toml"));
    assert!(text.contains("iproute2"));
    assert!(text.contains("COPY --from=build"));
    assert!(text.contains("ENTRYPOINT [\"ccbench\"]"));
}
