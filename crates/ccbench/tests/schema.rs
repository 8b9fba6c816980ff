//! The JSON Schemas in `docs/schema/` are the ones the types generate, and what ccbench really
//! writes validates against them (with Python's `jsonschema`, an implementation independent of
//! the generator).
//!
//! After changing a type that result.json or compare.json is made of, regenerate the committed
//! copies with `CCBENCH_UPDATE_SCHEMA=1 cargo test --release -p ccbench --test schema`.
//! `CCBENCH_PYTHON` names a Python with `jsonschema` (scripts/test makes one); the default is
//! `python3`.

mod common;

use std::path::{Path, PathBuf};
use std::process::Command;

use common::{ccbench_ok, go_on, have_root_and_tun, lock, out_path, run_ok, text};

fn schema_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../docs/schema")
}

#[test]
fn committed_schemas_are_the_ones_the_types_generate() {
    let update = std::env::var("CCBENCH_UPDATE_SCHEMA").is_ok_and(|v| v == "1");
    for (name, schema) in ccbench::schema::schemas() {
        let generated = ccbench::schema::to_text(&schema);
        let path = schema_dir().join(name);
        if update {
            std::fs::create_dir_all(schema_dir()).unwrap();
            std::fs::write(&path, &generated).unwrap();
            continue;
        }
        let committed = std::fs::read_to_string(&path).unwrap_or_default();
        assert!(
            committed == generated,
            "docs/schema/{name} differs from what the types generate (a serialised type changed); \
             regenerate it with `CCBENCH_UPDATE_SCHEMA=1 cargo test --release -p ccbench --test schema` and commit it"
        );
    }
}

/// A Python that has `jsonschema`, or why there is none.
fn python() -> Result<String, String> {
    let python = std::env::var("CCBENCH_PYTHON").unwrap_or_else(|_| "python3".into());
    match Command::new(&python).args(["-c", "import jsonschema"]).output() {
        Ok(o) if o.status.success() => Ok(python),
        Ok(o) => Err(format!("{python} has no jsonschema module (scripts/test installs one): {}", String::from_utf8_lossy(&o.stderr).trim())),
        Err(e) => Err(format!("{python}: {e}")),
    }
}

/// Validates `file` against `docs/schema/{schema}`: the list of errors, empty when it is valid.
fn violations(python: &str, schema: &str, file: &Path) -> String {
    const CHECK: &str = "import json, sys, jsonschema
schema = json.load(open(sys.argv[1]))
doc = json.load(open(sys.argv[2]))
cls = jsonschema.validators.validator_for(schema)
cls.check_schema(schema)
for e in cls(schema).iter_errors(doc):
    print('/'.join(map(str, e.absolute_path)) or '(root)', ':', e.message[:300])";
    let o = Command::new(python).args(["-c", CHECK]).arg(schema_dir().join(schema)).arg(file).output().expect("run python");
    assert!(o.status.success(), "the validator failed: {}", text(&o));
    String::from_utf8_lossy(&o.stdout).into_owned()
}

/// A real experiment's result.json, and compare.json of it, are valid under the schemas; a
/// result with a field of the wrong type is not (so the check can fail).
#[test]
fn what_ccbench_writes_validates_against_the_committed_schemas() {
    if !have_root_and_tun() {
        return;
    }
    let python = python();
    if !go_on(python.as_ref().err().cloned()) {
        return;
    }
    let python = python.unwrap();
    let _serial = lock();
    let out = out_path("schema-run");
    run_ok(&["--cc", "cubic,reno", "--runs", "4", "--duration", "1s", "--rate", "20mbit", "--rtt", "20ms", "--seed", "1"], &out);
    let result = out.join("result.json");
    let errors = violations(&python, "result.schema.json", &result);
    assert!(errors.is_empty(), "{} does not validate against docs/schema/result.schema.json:\n{errors}", result.display());

    let cmp = out_path("schema-compare");
    let (a, b) = (format!("a={}", out.display()), format!("b={}", out.display()));
    ccbench_ok(&["compare", &a, &b, "--out", &cmp.to_string_lossy()]);
    let compare = cmp.join("compare.json");
    let errors = violations(&python, "compare.schema.json", &compare);
    assert!(errors.is_empty(), "{} does not validate against docs/schema/compare.schema.json:\n{errors}", compare.display());

    let mut bad: serde_json::Value = common::json(&result);
    bad["runs"][0]["metrics"]["goodput_bps"] = "fast".into();
    let bad_file = out.join("bad.json");
    std::fs::write(&bad_file, bad.to_string()).unwrap();
    let errors = violations(&python, "result.schema.json", &bad_file);
    // `metrics` may be null, so the error is reported at it, not at the field.
    assert!(errors.contains("runs/0/metrics") && errors.contains("'fast'"), "a string for a number must not validate: {errors:?}");
    let _ = std::fs::remove_dir_all(&out);
    let _ = std::fs::remove_dir_all(&cmp);
}
