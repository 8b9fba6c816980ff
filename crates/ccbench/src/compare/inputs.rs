//! `ccbench compare`'s inputs: a result file named on the command line, read and checked
//! (its schema, its metric, what differs between inputs) before any arm is formed. Refused
//! inputs say which file and what is wrong.

use std::fmt;
use std::path::{Path, PathBuf};

use serde_json::Value;

use crate::results::{ExperimentResult, Status};

/// The result schemas this build reads. v3 only made fields nullable (path figures and
/// parameters over a real path) and added fields with defaults, so a v2 file reads as v3.
const SUPPORTED_SCHEMAS: &[&str] = &[crate::results::SCHEMA, "ccbench.result.v2"];

/// Why inputs cannot be compared: each says which file and what is wrong, on one line.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
// Each variant's `#[error]` message is its documentation: it names every field.
#[allow(missing_docs)]
pub enum Refusal {
    #[error("cannot read {path}: {reason}")]
    Unreadable { path: String, reason: String },
    #[error("{path} is not JSON: {reason}")]
    NotJson { path: String, reason: String },
    #[error("{path} has schema {found}, which this ccbench cannot read (it reads {})", SUPPORTED_SCHEMAS.join(", "))]
    Schema { path: String, found: String },
    #[error("{path} is not a valid {schema} result: {reason}")]
    Invalid { path: String, schema: String, reason: String },
    #[error("{path} measures {found:?} but {first_path} measures {first:?}: results of different metrics cannot be compared")]
    Metric { path: String, found: String, first_path: String, first: String },
    #[error("{path} has no runs of {cc} (it has {})", .has.join(", "))]
    MissingCc { path: String, cc: String, has: Vec<String> },
    #[error("two arms are both labelled {label:?}; name the inputs apart with LABEL=PATH")]
    DuplicateLabel { label: String },
    #[error("{path} is a --runs auto result: {why}")]
    Sequential { path: String, why: String },
    #[error("nothing to compare: the inputs make only {arms} arm(s) ({}); give two results, or one with several algorithms", .labels.join(", "))]
    TooFewArms { arms: usize, labels: Vec<String> },
}

/// One input as given on the command line: `PATH` or `LABEL=PATH`, the path a result file or
/// the directory holding its `result.json`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct InputArg {
    /// The input's name in the verdicts; when not given, the name of the directory holding its result file.
    pub label: Option<String>,
    /// A result file, or the directory holding its `result.json`.
    pub path: PathBuf,
}

impl InputArg {
    /// `LABEL=PATH` when there is an `=` with a label before it that names no existing file
    /// (so a path that itself contains `=` still works); `PATH` otherwise.
    pub fn parse(s: &str) -> Self {
        match s.split_once('=') {
            Some((label, path)) if !label.is_empty() && !label.contains('/') && !path.is_empty() && !Path::new(s).exists() => {
                InputArg { label: Some(label.to_string()), path: PathBuf::from(path) }
            }
            _ => InputArg { label: None, path: PathBuf::from(s) },
        }
    }
}

impl fmt::Display for InputArg {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.label {
            Some(l) => write!(f, "{l}={}", self.path.display()),
            None => write!(f, "{}", self.path.display()),
        }
    }
}

/// A loaded input: its label, where it was read from, and the result.
#[derive(Clone, Debug)]
pub struct Input {
    /// The input's name in the verdicts.
    pub label: String,
    /// The file as named on the command line (`DIR` becomes `DIR/result.json`).
    pub path: PathBuf,
    /// The result as read, already checked against the schemas this build reads.
    pub result: ExperimentResult,
}

/// The file an argument names: itself, or `result.json` inside it when it is a directory.
fn result_file(path: &Path) -> PathBuf {
    if path.is_dir() {
        path.join(crate::export::json::RESULT_FILE)
    } else {
        path.to_path_buf()
    }
}

/// The default label: the name of the directory holding the file (made absolute first, so that
/// `result.json` in the current directory is labelled by the current directory's name).
pub(crate) fn default_label(file: &Path) -> String {
    let abs = std::fs::canonicalize(file).unwrap_or_else(|_| std::path::absolute(file).unwrap_or_else(|_| file.to_path_buf()));
    abs.parent().and_then(Path::file_name).map(|n| n.to_string_lossy().into_owned()).unwrap_or_else(|| file.display().to_string())
}

/// Parses the text of a result file named `path`: JSON, a schema this build reads, and every
/// field of that schema.
pub fn parse(path: &str, text: &str) -> Result<ExperimentResult, Refusal> {
    let v: Value = serde_json::from_str(text).map_err(|e| Refusal::NotJson { path: path.to_string(), reason: e.to_string() })?;
    let found = match v.get("schema") {
        Some(Value::String(s)) => s.clone(),
        Some(other) => other.to_string(),
        None => "(none: the file has no \"schema\" field)".to_string(),
    };
    if !SUPPORTED_SCHEMAS.contains(&found.as_str()) {
        return Err(Refusal::Schema { path: path.to_string(), found });
    }
    serde_json::from_value(v).map_err(|e| Refusal::Invalid { path: path.to_string(), schema: found, reason: e.to_string() })
}

/// Reads one input.
pub fn load(arg: &InputArg) -> Result<Input, Refusal> {
    let file = result_file(&arg.path);
    let shown = file.display().to_string();
    let text = std::fs::read_to_string(&file).map_err(|e| Refusal::Unreadable { path: shown.clone(), reason: e.to_string() })?;
    let result = parse(&shown, &text)?;
    let label = arg.label.clone().unwrap_or_else(|| default_label(&file));
    Ok(Input { label, path: file, result })
}

/// Refuses inputs of different metrics; warns of everything else that differs between them and
/// is worth a second look: the path, the workload, the level α, and inputs that did not complete.
pub fn check(inputs: &[Input]) -> Result<Vec<String>, Refusal> {
    let Some(first) = inputs.first() else { return Ok(Vec::new()) };
    for input in &inputs[1..] {
        if input.result.params.metric != first.result.params.metric {
            return Err(Refusal::Metric {
                path: input.path.display().to_string(),
                found: input.result.params.metric.clone(),
                first_path: first.path.display().to_string(),
                first: first.result.params.metric.clone(),
            });
        }
    }
    let mut warnings = Vec::new();
    let differences = param_differences(inputs);
    if !differences.is_empty() {
        warnings.push(format!(
            "the inputs differ in {} path or workload parameter(s) (the point when comparing a path with its twin, a mistake otherwise):",
            differences.len()
        ));
        let more = differences.len().saturating_sub(MAX_DIFFERENCES);
        warnings.extend(differences.into_iter().take(MAX_DIFFERENCES).map(|d| format!("  {d}")));
        if more > 0 {
            warnings.push(format!("  … and {more} more (each input's params are in compare.json)"));
        }
    }
    if inputs.iter().any(|i| i.result.params.alpha != first.result.params.alpha) {
        let alphas: Vec<String> = inputs.iter().map(|i| format!("{} {}", i.label, i.result.params.alpha)).collect();
        warnings.push(format!("the inputs were run at different levels α ({}); the comparison uses the first's", alphas.join(", ")));
    }
    for i in inputs.iter().filter(|i| i.result.status != Status::Complete) {
        let status = serde_json::to_value(i.result.status).ok().and_then(|v| v.as_str().map(String::from)).unwrap_or_default();
        warnings.push(format!("{} ({}) is {status}: only its completed runs are compared", i.label, i.path.display()));
    }
    Ok(warnings)
}

/// `key: value` for every leaf of a JSON value, keys dotted from `prefix`.
fn leaves(prefix: &str, v: &Value, out: &mut Vec<(String, String)>) {
    match v {
        Value::Object(m) => {
            for (k, v) in m {
                leaves(&format!("{prefix}.{k}"), v, out);
            }
        }
        // A list (a schedule, a mix, a page's objects) is one value.
        Value::Array(_) => out.push((prefix.to_string(), v.to_string())),
        Value::String(s) => out.push((prefix.to_string(), s.clone())),
        v => out.push((prefix.to_string(), v.to_string())),
    }
}

/// Most differing parameters a warning lists.
pub(crate) const MAX_DIFFERENCES: usize = 12;

/// Longest parameter value a warning shows in full.
const MAX_SHOWN: usize = 60;

/// The path and workload parameters that are not the same in every input, one line each:
/// `path.down.loss.p: clean –, lossy 0.02`. Seeds (which differ by design) and the workload's
/// algorithm (set per run) are left out.
fn param_differences(inputs: &[Input]) -> Vec<String> {
    let per_input: Vec<Vec<(String, String)>> = inputs
        .iter()
        .map(|i| {
            let mut out = Vec::new();
            let p = &i.result.params;
            if let Ok(v) = serde_json::to_value(&p.path) {
                leaves("path", &v, &mut out);
            }
            if let Ok(v) = serde_json::to_value(&p.workload) {
                leaves("workload", &v, &mut out);
            }
            out.retain(|(k, _)| k != "path.seed" && k != "workload.cc");
            out
        })
        .collect();
    // Every key, in the order of the parameters: one only some inputs have goes after the key
    // it follows there (`loss.p` after `loss.kind`).
    let mut keys: Vec<&String> = Vec::new();
    for leaves in &per_input {
        let mut at = 0;
        for (k, _) in leaves {
            match keys.iter().position(|x| *x == k) {
                Some(i) => at = i + 1,
                None => {
                    keys.insert(at, k);
                    at += 1;
                }
            }
        }
    }
    keys.into_iter()
        .filter_map(|k| {
            let values: Vec<Option<&String>> = per_input.iter().map(|leaves| leaves.iter().find(|(key, _)| key == k).map(|(_, v)| v)).collect();
            if values.iter().all(|v| *v == values[0]) {
                return None;
            }
            // A long list (a page's object sizes) is cut short: the warning names it, the inputs hold it.
            let shown = |v: &str| if v.chars().count() > MAX_SHOWN { format!("{}…", v.chars().take(MAX_SHOWN).collect::<String>()) } else { v.to_string() };
            let each: Vec<String> = inputs.iter().zip(&values).map(|(i, v)| format!("{} {}", i.label, v.map_or("–".to_string(), |v| shown(v)))).collect();
            Some(format!("{k}: {}", each.join(", ")))
        })
        .collect()
}
