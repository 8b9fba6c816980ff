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
    let pod = spec.template.spec.expect("pod spec");
    assert_eq!(pod.restart_policy.as_deref(), Some("Never"));
    let labels = spec.template.metadata.and_then(|m| m.labels).expect("pod labels");

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
    assert!(claim.spec.and_then(|s| s.access_modes).unwrap_or_default().contains(&"ReadWriteMany".to_string()), "pods on many nodes share it");
    let spec_map = volume_at("/spec").config_map.expect("the spec from the ConfigMap");
    assert_eq!(Some(spec_map.name.as_str()), config.metadata.name.as_deref());

    // The command runs this pod's shard: JOB_COMPLETION_INDEX of --shards N, N the completions.
    let command = [c.command.clone().unwrap_or_default(), c.args.clone().unwrap_or_default()].concat().join(" ");
    let words: Vec<&str> = command.split_whitespace().collect();
    let sweep = words.iter().position(|w| *w == "sweep").expect("ccbench sweep");
    assert!(words[..sweep].contains(&"ccbench"), "{command}");
    let spec_file = words[sweep + 1];
    assert!(spec_file.starts_with("/spec/"), "{command}");
    let shards = words.iter().position(|w| *w == "--shards").map(|i| words[i + 1]).expect("--shards N");
    assert_eq!(shards, n.to_string(), "--shards must equal completions");
    assert!(words.iter().any(|w| w.starts_with("/results/")), "--out on the results volume: {command}");
    assert!(!command.contains("--shard "), "the index comes from JOB_COMPLETION_INDEX");

    // The spec is the example shipped beside it.
    let key = spec_file.trim_start_matches("/spec/");
    let text = config.data.and_then(|d| d.get(key).cloned()).unwrap_or_else(|| panic!("no {key} in the ConfigMap"));
    assert_eq!(text, repo_file("deploy/example-sweep.toml"), "the ConfigMap's spec and deploy/example-sweep.toml differ");
}

#[test]
fn the_merge_job_reads_the_sweeps_volume() {
    let docs = documents(&repo_file("deploy/kubernetes/merge-job.yaml"));
    assert_eq!(docs.len(), 1);
    let merge: Job = typed(&docs[0]);
    let (_, claim, sweep) = manifest();
    let pod = merge.spec.and_then(|s| s.template.spec).expect("pod spec");
    let args = pod.containers[0].args.clone().unwrap_or_default();
    assert_eq!(args.first().map(String::as_str), Some("merge"), "the image's entrypoint is ccbench");
    // It merges the directory the sweep's shards write (--out of the sweep, whose
    // $(SWEEP_NAME) is set in the sweep's env).
    let sweep_pod = sweep.spec.and_then(|s| s.template.spec).expect("pod spec");
    let c = &sweep_pod.containers[0];
    let name = c.env.clone().unwrap_or_default().into_iter().find(|e| e.name == "SWEEP_NAME").and_then(|e| e.value).expect("SWEEP_NAME");
    let sweep_out = format!("/results/{name}");
    assert!(c.args.clone().unwrap_or_default().concat().contains("--out /results/$(SWEEP_NAME)"));
    assert_eq!(args[1], sweep_out);
    assert!(args[args.iter().position(|a| a == "--out").expect("--out") + 1].starts_with(&format!("{sweep_out}/")));
    let volume = pod.volumes.unwrap_or_default().into_iter().find_map(|v| v.persistent_volume_claim).expect("the results claim");
    assert_eq!(Some(volume.claim_name.as_str()), claim.metadata.name.as_deref());
}

#[test]
fn the_slurm_script_is_an_array_from_zero_and_valid_shell() {
    let text = repo_file("deploy/slurm/sweep.sbatch");
    let array = text.lines().find_map(|l| l.strip_prefix("#SBATCH --array=")).expect("#SBATCH --array");
    assert!(array.starts_with("0-"), "--array=0-(N-1): ccbench's shards are 0-based: {array}");
    assert!(text.contains("ccbench") && text.contains(" sweep \"$SPEC\" --out \"$OUT\""));
    assert!(!text.contains("--shard "), "the index comes from SLURM_ARRAY_TASK_ID");
    // Every #SBATCH line comes before the first command, or sbatch ignores it.
    let first_command = text.lines().position(|l| !l.trim().is_empty() && !l.starts_with('#')).unwrap();
    assert!(text.lines().skip(first_command).all(|l| !l.starts_with("#SBATCH")));
    let status =
        std::process::Command::new("bash").arg("-n").arg(std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../deploy/slurm/sweep.sbatch")).status();
    assert!(status.expect("bash").success(), "bash -n deploy/slurm/sweep.sbatch");
}

#[test]
fn the_containerfile_builds_ccbench_in_two_stages() {
    let text = repo_file("Containerfile");
    let froms: Vec<&str> = text.lines().filter_map(|l| l.strip_prefix("FROM ")).collect();
    assert_eq!(froms, ["rust:bookworm AS build", "debian:bookworm-slim"]);
    assert!(text.contains("cargo build --release --locked -p ccbench"));
    assert!(text.contains("iproute2"));
    assert!(text.contains("COPY --from=build"));
    assert!(text.contains("ENTRYPOINT [\"ccbench\"]"));
}
