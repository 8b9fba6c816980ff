//! Scenario presets: readable TOML files (shipped in `presets/`, or the user's own) that set run
//! flags, once as `[defaults]` and once per `[[conditions]]` entry. Each table deserializes into
//! the same layer the command line parses into ([`RunOpts`]: its fields are the flags without
//! their dashes), every value through the same type as its flag — so it is checked, and
//! explained on error, exactly as the flag would be — and a condition is its own fields over
//! the preset's defaults. The command line goes over that when the run is planned.

use clap::Args;
use serde::Deserialize;

use crate::cli::{Layer, PathOpts, RunOpts};
use crate::error::UsageError;
use crate::values::ExpectArg;

/// The presets shipped with ccbench, compiled in so `--preset NAME` works from anywhere.
pub const BUILTIN: [(&str, &str); 13] = [
    ("far-object-store", include_str!("../../../presets/far-object-store.toml")),
    ("website-migration", include_str!("../../../presets/website-migration.toml")),
    ("loss-sweep", include_str!("../../../presets/loss-sweep.toml")),
    ("lossy-gigabit-lan", include_str!("../../../presets/lossy-gigabit-lan.toml")),
    ("deep-buffer-rtt", include_str!("../../../presets/deep-buffer-rtt.toml")),
    ("quic-rtt", include_str!("../../../presets/quic-rtt.toml")),
    ("quic-loss", include_str!("../../../presets/quic-loss.toml")),
    ("bbr-regression", include_str!("../../../presets/bbr-regression.toml")),
    ("bbr-share", include_str!("../../../presets/bbr-share.toml")),
    ("ecn-classic", include_str!("../../../presets/ecn-classic.toml")),
    ("l4s", include_str!("../../../presets/l4s.toml")),
    ("ecn-faults", include_str!("../../../presets/ecn-faults.toml")),
    ("bbr-startup", include_str!("../../../presets/bbr-startup.toml")),
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
    /// `[[expect]]`: expectations every condition is judged by.
    #[serde(default)]
    expect: Vec<toml::Table>,
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
    /// The condition's fields over the preset's `[defaults]`.
    pub opts: RunOpts,
}

/// The long names of a layer's flags: the fields a preset may set.
pub fn flags<T: Args>() -> Vec<String> {
    T::augment_args(clap::Command::new("preset")).get_arguments().filter_map(|a| a.get_long().map(str::to_string)).collect()
}

/// A preset's value as its flag would have been given, for messages.
pub fn shown(value: &toml::Value) -> String {
    match value {
        toml::Value::String(s) => s.clone(),
        toml::Value::Array(items) => items.iter().map(shown).collect::<Vec<_>>().join(","),
        other => other.to_string(),
    }
}

/// What a field should have been, from serde's message: a flag type's own explanation as it is,
/// serde's "invalid type: …, expected X" as X.
fn expected(e: &toml::de::Error) -> String {
    let message = e.message();
    match message.strip_prefix("invalid type: ").and_then(|m| m.split_once(", expected ")) {
        Some((_, what)) => what.to_string(),
        None => message.to_string(),
    }
}

/// The file a table comes from, for messages: the argument that named it (`--preset`), what it
/// is (`preset`, `sweep`) and its name.
pub struct Origin<'a> {
    pub arg: &'a str,
    pub kind: &'a str,
    pub name: &'a str,
}

/// One table of a preset (`[defaults]` or a condition) as a layer. Each field is deserialized on
/// its own, so that an error names it.
fn layer(table: &toml::Table, preset: &str, place: &str) -> Result<RunOpts, UsageError> {
    layer_from(table, &Origin { arg: "--preset", kind: "preset", name: preset }, place)
}

/// One table of run flags (a preset's or a sweep's `[defaults]`, a condition, one value of a
/// sweep's axis) as a layer, each field deserialized on its own so that an error names it and
/// `place` (`[defaults]`, `condition "b"`, `axis loss`).
pub fn layer_from(table: &toml::Table, origin: &Origin, place: &str) -> Result<RunOpts, UsageError> {
    let (run, path) = (flags::<RunOpts>(), flags::<PathOpts>());
    let mut opts = RunOpts::default();
    for (key, value) in table {
        if key == "name" {
            continue;
        }
        if !run.contains(key) {
            return Err(UsageError::new(
                origin.arg,
                origin.name,
                format!("known fields in {place}; {key:?} is not one (fields are run flags without dashes: {})", run.join(", ")),
            ));
        }
        let field = toml::Value::Table(toml::Table::from_iter([(key.clone(), value.clone())]));
        let bad = |e: toml::de::Error| UsageError::new(&format!("--{key} ({} {}, {place})", origin.kind, origin.name), shown(value), expected(&e));
        let given = field_layer(key, field, &path).map_err(bad)?;
        opts = given.over(opts);
    }
    Ok(opts)
}

/// The one-field table `{key = value}` as a layer: a path flag into [`PathOpts`], a workload's
/// own flag into its workload's flags, any other into [`RunOpts`] itself. `path` is
/// `flags::<PathOpts>()`.
fn field_layer(key: &str, field: toml::Value, path: &[String]) -> Result<RunOpts, toml::de::Error> {
    if path.iter().any(|p| p == key) {
        return Ok(RunOpts { path: field.try_into()?, ..RunOpts::default() });
    }
    match crate::workload_flags::WorkloadFlags::deserialize_field(key, field.clone()) {
        Some(flags) => Ok(RunOpts { workload_flags: flags?, ..RunOpts::default() }),
        None => field.try_into(),
    }
}

/// `[[expect]]` tables (of a preset or a sweep spec): `metric`, `op`, `value` and optionally
/// `cc`, each as `--expect '[cc:]metric op value'` would say it, and checked as it would be.
pub fn expect_tables(tables: &[toml::Table], origin: &Origin) -> Result<Vec<ExpectArg>, UsageError> {
    const FIELDS: [&str; 4] = ["cc", "metric", "op", "value"];
    tables
        .iter()
        .enumerate()
        .map(|(i, t)| {
            let place = format!("--expect ({} {}, [[expect]] {})", origin.kind, origin.name, i + 1);
            let text = |k: &str| t.get(k).map(shown);
            if let Some(k) = t.keys().find(|k| !FIELDS.contains(&k.as_str())) {
                return Err(UsageError::new(&place, k, "the fields metric, op, value and optionally cc"));
            }
            let (Some(metric), Some(op), Some(value)) = (text("metric"), text("op"), text("value")) else {
                return Err(UsageError::new(&place, toml::Value::Table(t.clone()), "a table with metric, op and value (and optionally cc)"));
            };
            let expr = match text("cc") {
                Some(cc) => format!("{cc}:{metric} {op} {value}"),
                None => format!("{metric} {op} {value}"),
            };
            expr.parse::<ExpectArg>().map_err(|e| UsageError::new(&place, &expr, e.0))
        })
        .collect()
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
    let defaults = layer(&file.defaults, spec, "[defaults]")?;
    let expect = expect_tables(&file.expect, &Origin { arg: "--preset", kind: "preset", name: spec })?;
    let mut conditions = Vec::new();
    for (i, table) in file.conditions.iter().enumerate() {
        let cname = match table.get("name") {
            Some(toml::Value::String(s)) => s.clone(),
            _ => format!("condition {}", i + 1),
        };
        let opts = layer(table, spec, &format!("condition {cname:?}"))?.over(defaults.clone());
        conditions.push(Condition { name: cname, opts });
    }
    if conditions.is_empty() {
        conditions.push(Condition { name: "default".into(), opts: defaults });
    }
    for c in &mut conditions {
        // The file's [[expect]] first, then any the condition or [defaults] name.
        c.opts.expect = expect.iter().cloned().chain(std::mem::take(&mut c.opts.expect)).collect();
    }
    Ok(Preset { name, description: file.description, scenario: file.scenario, note: file.note, conditions })
}

/// A path file (`run --path FILE`, written by `ccbench probe`): TOML whose fields are path flags
/// without dashes, each checked as its flag would be. Anything else is refused, naming the field.
pub fn path_file(file: &std::path::Path) -> Result<RunOpts, UsageError> {
    let name = file.display().to_string();
    let text = std::fs::read_to_string(file).map_err(|e| UsageError::new("--path", &name, format!("a readable path file ({e})")))?;
    let table: toml::Table =
        toml::from_str(&text).map_err(|e| UsageError::new("--path", &name, format!("a TOML file of path flags: {}", e.message().trim())))?;
    let path = flags::<PathOpts>();
    if let Some(key) = table.keys().find(|k| !path.contains(k)) {
        return Err(UsageError::new("--path", &name, format!("path flags only; {key:?} is not one (fields: {})", path.join(", "))));
    }
    layer_from(&table, &Origin { arg: "--path", kind: "path file", name: &name }, "the path file")
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
    use crate::spec::{Algorithms, Contest};
    use crate::values::{RunsSpec, Size};

    const HOST: [&str; 3] = ["bbr", "cubic", "reno"];

    fn write(dir: &std::path::Path, name: &str, text: &str) -> String {
        let file = dir.join(name);
        std::fs::write(&file, text).unwrap();
        file.to_str().unwrap().to_string()
    }

    #[test]
    fn every_builtin_preset_loads_and_every_condition_plans() {
        for (name, _) in BUILTIN {
            let p = load(name).unwrap_or_else(|e| panic!("{name}: {e}"));
            assert!(!p.conditions.is_empty());
            for c in &p.conditions {
                crate::spec::resolve(c.opts.clone(), &HOST.map(String::from)).unwrap_or_else(|e| panic!("{name} / {}: {e}", c.name));
            }
        }
    }

    /// The file's `[[expect]]` tables come first in every condition, then the condition's own;
    /// each plans with its relative thresholds resolved against that condition's path.
    #[test]
    fn expectations_of_the_file_and_of_a_condition_add_up() {
        let p = load("bbr-regression").unwrap();
        assert_eq!(p.conditions.len(), 3);
        for c in &p.conditions {
            let texts: Vec<String> = c.opts.expect.iter().map(|e| e.0.to_string()).collect();
            // The file's four, then the condition's own (rtt_med, loss_avoid and, where it
            // decides, convergence_sec).
            assert!((6..=7).contains(&texts.len()), "{texts:?}");
            assert_eq!(texts[0], "goodput >= 90%");
            assert!(texts[4].starts_with("rtt_p50 <= ") && texts.last().unwrap().starts_with("retrans <= "), "{texts:?}");
            let plan = ccbench::experiment::Plan::from(crate::spec::resolve(c.opts.clone(), &HOST.map(String::from)).unwrap());
            assert!(matches!(plan.runs, ccbench::experiment::Runs::Auto { max: 10 }));
            assert!(plan.path_figures().rate_bps.is_some());
        }
    }

    #[test]
    fn a_condition_goes_over_the_defaults_and_the_command_line_over_both() {
        let p = load("loss-sweep").unwrap();
        let c = &p.conditions[1];
        assert_eq!(c.name, "1 % loss");
        assert_eq!(c.opts.path.loss_down, Some("1%".parse().unwrap()));
        assert_eq!(c.opts.path.loss_up, Some("0".parse().unwrap()), "from [defaults]");
        assert_eq!((c.opts.workload_flags.Bulk.size, c.opts.runs), (Some(Size(2_000_000)), Some(RunsSpec::Fixed(4))));
        let argv = ["ccbench", "run", "--preset", "loss-sweep", "--runs", "6", "--size", "1mb", "--loss-down", "3%"];
        let crate::cli::Command::Run(args) = crate::cli::parse_from(argv).unwrap().command else { panic!() };
        let spec = crate::spec::resolve(args.opts.over(c.opts.clone()), &HOST.map(String::from)).unwrap();
        let Contest::Algorithms { algorithms: Algorithms::Several { runs, .. }, workload } = spec.contest else { panic!() };
        assert_eq!(runs, ccbench::experiment::Runs::Fixed(6));
        assert!(matches!(
            workload,
            ccbench::run_workload::WorkloadSpec::Bulk(ccbench_workload::BulkSpec { amount: ccbench_workload::Amount::Bytes(1_000_000), .. })
        ));
        assert_eq!(spec.path.down.loss, ccbench_link::LossModel::Bernoulli { p: 0.03 });
        assert_eq!(spec.path.up.loss, ccbench_link::LossModel::None);
        assert_eq!(spec.path.down.rate, ccbench_link::Rate::BitsPerSec(30_000_000), "the preset's rate, not --rate's default");
    }

    #[test]
    fn fields_take_the_forms_flags_do() {
        let dir = std::env::temp_dir().join(format!("ccbench-preset-forms-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let file = write(
            &dir,
            "forms.toml",
            "description = \"x\"\n[defaults]\ncc = [\"bbr\", \"reno\"]\nruns = \"auto\"\nmax-runs = 12\nloss = 0\nno-offload = true\nat = \"1s:rate=5mbit\"\n[[conditions]]\nat = [\"2s:rtt=10ms\", \"3s:loss=1%\"]\nmtu = 9000\n",
        );
        let p = load(&file).unwrap();
        assert_eq!(p.conditions[0].name, "condition 1");
        let o = &p.conditions[0].opts;
        assert_eq!(o.cc, Some("bbr,reno".parse().unwrap()));
        assert_eq!((o.runs, o.max_runs), (Some(RunsSpec::Auto), Some(crate::values::MaxRuns(12))));
        assert_eq!((o.path.at.len(), o.path.no_offload, o.path.mtu), (2, true, Some(crate::values::Mtu(9000))));
        let _ = std::fs::remove_dir_all(dir);
    }

    #[test]
    fn unknown_fields_and_bad_values_are_explained() {
        let dir = std::env::temp_dir().join(format!("ccbench-preset-test-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let bad_key = write(&dir, "k.toml", "description = \"x\"\n[defaults]\ncolour = \"red\"\n");
        let e = load(&bad_key).unwrap_err();
        assert!(e.to_string().contains("\"colour\" is not one"), "{e}");
        assert!(e.to_string().contains("rate-down"), "the known fields are listed: {e}");
        for command_only in ["out", "json", "preset"] {
            let file = write(&dir, "c.toml", &format!("description = \"x\"\n[defaults]\n{command_only} = \"x\"\n"));
            assert!(load(&file).unwrap_err().to_string().contains("is not one"), "{command_only}");
        }
        let bad_value = write(
            &dir,
            "v.toml",
            "description = \"x\"\n[defaults]\nrate = \"10mbit\"\n[[conditions]]\nname = \"a\"\nloss = \"1%\"\n[[conditions]]\nname = \"b\"\nloss = \"200%\"\n",
        );
        let e = load(&bad_value).unwrap_err();
        assert_eq!(e.flag, format!("--loss (preset {bad_value}, condition \"b\")"));
        assert_eq!(e.value, "200%");
        assert!(e.allowed.starts_with("a percentage from 0% to 100%"), "{e}");
        let bad_default = write(&dir, "d.toml", "description = \"x\"\n[defaults]\nruns = 0\n");
        let e = load(&bad_default).unwrap_err();
        assert_eq!(e.to_string(), format!("invalid --runs (preset {bad_default}, [defaults]) \"0\": expected a whole number from 1 to 1000, or auto"));
        let bad_type = write(&dir, "b.toml", "description = \"x\"\n[defaults]\nno-offload = \"yes\"\n");
        let e = load(&bad_type).unwrap_err();
        assert_eq!((e.flag.starts_with("--no-offload (preset"), e.value.as_str(), e.allowed.as_str()), (true, "yes", "a boolean"));
        let not_toml = write(&dir, "t.toml", "description = \n");
        assert!(load(&not_toml).unwrap_err().to_string().contains("valid preset file"));
        assert!(load("no-such-preset").unwrap_err().to_string().contains("lossy-gigabit-lan"));
        let _ = std::fs::remove_dir_all(dir);
    }

    #[test]
    fn an_impossible_combination_in_a_preset_is_refused_when_planned() {
        let dir = std::env::temp_dir().join(format!("ccbench-preset-combo-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let file = write(&dir, "m.toml", "description = \"x\"\n[defaults]\nworkload = \"bulk\"\n[[conditions]]\nname = \"sized\"\nsize = \"1mb\"\n");
        let p = load(&file).unwrap();
        let e = crate::spec::resolve(p.conditions[0].opts.clone(), &HOST.map(String::from)).unwrap_err();
        assert_eq!((e.flag.as_str(), e.value.as_str()), ("--size", "1mb"));
        let _ = std::fs::remove_dir_all(dir);
    }

    #[test]
    fn every_run_flag_but_the_command_only_ones_is_a_preset_field() {
        let run = flags::<RunOpts>();
        for key in ["rate", "rate-down", "loss-up", "at", "no-offload", "emulator-batch", "cc", "max-runs", "max-connections", "sample-interval", "seed"] {
            assert!(run.contains(&key.to_string()), "{key}");
        }
        for key in ["preset", "out", "json", "help"] {
            assert!(!run.contains(&key.to_string()), "{key}");
        }
        // And serde knows every one of them by that name (a wrong value is refused, not ignored).
        let path = flags::<PathOpts>();
        for key in &run {
            let field = toml::Value::Table(toml::Table::from_iter([(key.clone(), toml::Value::Array(vec![toml::Value::Integer(-1); 2]))]));
            let err = field_layer(key, field, &path).err();
            let err = err.unwrap_or_else(|| panic!("{key} accepted [-1, -1]"));
            assert!(!err.message().contains("unknown field"), "{key}: {err}");
        }
    }
}
