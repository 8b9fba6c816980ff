//! Scenario presets: readable TOML files (shipped in `presets/`, or the user's own) that name
//! run flags, once as defaults and once per condition. A preset is turned into ordinary
//! command-line arguments and parsed by the same CLI, so every field is validated — and
//! explained on error — exactly as the flag would be.

use clap::CommandFactory;
use serde::Deserialize;

use ccbench::error::UsageError;

/// The presets shipped with ccbench, compiled in so `--preset NAME` works from anywhere.
pub const BUILTIN: [(&str, &str); 5] = [
    ("far-object-store", include_str!("../../../presets/far-object-store.toml")),
    ("website-migration", include_str!("../../../presets/website-migration.toml")),
    ("loss-sweep", include_str!("../../../presets/loss-sweep.toml")),
    ("lossy-gigabit-lan", include_str!("../../../presets/lossy-gigabit-lan.toml")),
    ("deep-buffer-rtt", include_str!("../../../presets/deep-buffer-rtt.toml")),
];

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct PresetFile {
    description: String,
    scenario: Option<u32>,
    note: Option<String>,
    #[serde(default)]
    defaults: toml::Table,
    #[serde(default)]
    conditions: Vec<toml::Table>,
}

#[derive(Debug)]
pub struct Preset {
    pub name: String,
    pub description: String,
    pub scenario: Option<u32>,
    pub note: Option<String>,
    pub conditions: Vec<Condition>,
}

#[derive(Debug)]
pub struct Condition {
    pub name: String,
    /// `--flag value` pairs: the preset's defaults, then the condition's own.
    pub args: Vec<String>,
}

/// Flags a preset may set: every `run` flag except the ones that only make sense per command.
fn allowed_keys() -> Vec<String> {
    let cmd = crate::cli::Cli::command();
    let run = cmd.find_subcommand("run").map(|r| r.get_arguments().filter_map(|a| a.get_long().map(str::to_string)).collect::<Vec<_>>()).unwrap_or_default();
    run.into_iter().filter(|k| !matches!(k.as_str(), "preset" | "out" | "json" | "help")).collect()
}

fn to_args(table: &toml::Table, preset: &str, place: &str, allowed: &[String]) -> Result<Vec<String>, UsageError> {
    let mut args = Vec::new();
    for (key, value) in table {
        if key == "name" {
            continue;
        }
        if !allowed.iter().any(|a| a == key) {
            return Err(UsageError::new(
                "--preset",
                preset,
                format!("known fields in {place}; {key:?} is not one (fields are run flags without dashes: {})", allowed.join(", ")),
            ));
        }
        let flag = format!("--{key}");
        let scalar = |v: &toml::Value| -> Result<Option<String>, UsageError> {
            Ok(match v {
                toml::Value::String(s) => Some(s.clone()),
                toml::Value::Integer(i) => Some(i.to_string()),
                toml::Value::Float(f) => Some(f.to_string()),
                toml::Value::Boolean(true) => None,
                _ => return Err(UsageError::new("--preset", preset, format!("{key} in {place} to be a string, number, true, or a list of strings"))),
            })
        };
        match value {
            toml::Value::Boolean(false) => {}
            toml::Value::Array(items) if key == "cc" => {
                let names: Vec<String> = items.iter().map(scalar).collect::<Result<Vec<_>, _>>()?.into_iter().flatten().collect();
                args.extend([flag, names.join(",")]);
            }
            toml::Value::Array(items) => {
                for item in items {
                    args.push(flag.clone());
                    args.extend(scalar(item)?);
                }
            }
            v => {
                args.push(flag);
                args.extend(scalar(v)?);
            }
        }
    }
    Ok(args)
}

/// Loads a built-in preset by name, or a TOML file by path.
pub fn load(spec: &str) -> Result<Preset, UsageError> {
    let names: Vec<&str> = BUILTIN.iter().map(|(n, _)| *n).collect();
    let (name, text) = match BUILTIN.iter().find(|(n, _)| *n == spec) {
        Some((n, t)) => (n.to_string(), t.to_string()),
        None => match std::fs::read_to_string(spec) {
            Ok(t) => (spec.to_string(), t),
            Err(e) => return Err(UsageError::new("--preset", spec, format!("a built-in preset ({}) or a readable TOML file ({e})", names.join(", ")))),
        },
    };
    let file: PresetFile = toml::from_str(&text).map_err(|e| UsageError::new("--preset", spec, format!("a valid preset file: {}", e.message())))?;
    let allowed = allowed_keys();
    let defaults = to_args(&file.defaults, spec, "[defaults]", &allowed)?;
    let mut conditions = Vec::new();
    for (i, table) in file.conditions.iter().enumerate() {
        let cname = match table.get("name") {
            Some(toml::Value::String(s)) => s.clone(),
            _ => format!("condition {}", i + 1),
        };
        let mut args = defaults.clone();
        args.extend(to_args(table, spec, &format!("condition {cname:?}"), &allowed)?);
        conditions.push(Condition { name: cname, args });
    }
    if conditions.is_empty() {
        conditions.push(Condition { name: "default".into(), args: defaults });
    }
    Ok(Preset { name, description: file.description, scenario: file.scenario, note: file.note, conditions })
}

/// `ccbench presets`
pub fn list() -> i32 {
    for (name, _) in BUILTIN {
        match load(name) {
            Ok(p) => println!("{name:<20} {} ({} condition{})", p.description, p.conditions.len(), if p.conditions.len() == 1 { "" } else { "s" }),
            Err(e) => println!("{name:<20} broken: {e}"),
        }
    }
    println!("\nRun one with `ccbench run --preset NAME`; flags after it override the preset's. Presets are TOML files in presets/; write your own and pass its path.");
    0
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::Parser;

    #[test]
    fn every_builtin_preset_loads_and_every_condition_plans() {
        for (name, _) in BUILTIN {
            let p = load(name).unwrap_or_else(|e| panic!("{name}: {e}"));
            assert!(!p.conditions.is_empty());
            for c in &p.conditions {
                let mut argv = vec!["ccbench".to_string(), "run".to_string()];
                argv.extend(c.args.iter().cloned());
                let cli = crate::cli::Cli::try_parse_from(&argv).unwrap_or_else(|e| panic!("{name} / {}: {e}", c.name));
                let crate::cli::Command::Run(args) = cli.command else { panic!() };
                if let Err(e) = crate::run::plan(&args) {
                    // Only the host's algorithm list may legitimately differ.
                    assert_eq!(e.flag, "--cc", "{name} / {}: {e}", c.name);
                }
            }
        }
    }

    #[test]
    fn unknown_fields_and_bad_values_are_explained() {
        let dir = std::env::temp_dir().join(format!("ccbench-preset-test-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let bad_key = dir.join("k.toml");
        std::fs::write(&bad_key, "description = \"x\"\n[defaults]\ncolour = \"red\"\n").unwrap();
        let e = load(bad_key.to_str().unwrap()).unwrap_err();
        assert!(e.to_string().contains("\"colour\" is not one"), "{e}");
        let not_toml = dir.join("t.toml");
        std::fs::write(&not_toml, "description = \n").unwrap();
        assert!(load(not_toml.to_str().unwrap()).unwrap_err().to_string().contains("valid preset file"));
        assert!(load("no-such-preset").unwrap_err().to_string().contains("lossy-gigabit-lan"));
        let _ = std::fs::remove_dir_all(dir);
    }
}
