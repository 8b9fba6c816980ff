//! `result.json`, the record of truth (schema `ccbench.result.v3`, documented in docs/reports.md),
//! and a preset's index `preset.json`.

use std::path::Path;

use anyhow::Context;

use crate::results::ExperimentResult;

/// The file every experiment writes into its directory.
pub const RESULT_FILE: &str = "result.json";
/// A preset's index, in the preset's directory above its conditions'.
pub const PRESET_FILE: &str = "preset.json";

/// The whole result as one line of JSON (also what `run --json` prints).
pub fn to_string(result: &ExperimentResult) -> anyhow::Result<String> {
    Ok(serde_json::to_string(result)?)
}

/// Writes `dir/result.json`.
pub fn write(result: &ExperimentResult, dir: &Path) -> anyhow::Result<()> {
    let file = dir.join(RESULT_FILE);
    std::fs::write(&file, to_string(result)?).with_context(|| format!("writing {}", file.display()))
}

/// One condition of a preset, as its index lists it.
pub struct PresetCondition<'a> {
    /// The condition's name in the preset.
    pub name: &'a str,
    /// The condition's directory, relative to the preset's.
    pub dir: &'a str,
    /// Its result.
    pub result: &'a ExperimentResult,
}

/// Writes `dir/preset.json`: the preset, and for each condition its result file, status,
/// summary and verdicts.
pub fn write_preset(dir: &Path, name: &str, description: &str, scenario: Option<u32>, conditions: &[PresetCondition]) -> anyhow::Result<()> {
    let index: Vec<serde_json::Value> = conditions
        .iter()
        .map(|c| {
            serde_json::json!({
                "condition": c.name,
                "result": format!("{}/{RESULT_FILE}", c.dir),
                "status": c.result.status,
                "summary": c.result.summary,
                "comparisons": c.result.comparisons,
            })
        })
        .collect();
    let doc = serde_json::json!({ "schema": "ccbench.preset.v1", "preset": name, "description": description, "scenario": scenario, "conditions": index });
    std::fs::create_dir_all(dir)?;
    let file = dir.join(PRESET_FILE);
    std::fs::write(&file, serde_json::to_string_pretty(&doc)?).with_context(|| format!("writing {}", file.display()))
}
