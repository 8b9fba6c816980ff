//! A sweep's spec and its grid: the cartesian product of the spec's axes, each cell planned
//! like a run, with ids that are the same on every machine.
//!
//! A spec is a preset whose conditions are a product: `[defaults]` as in a preset, and `[axes]`,
//! each key a run flag (without dashes) and each value a list. Every value is read through the
//! same layer and the same types as the flag ([`crate::presets::layer_from`]), a cell is its axis
//! values over the defaults, and the command line goes over the cell. Every cell is planned
//! before any runs.
//!
//! Cells have ids made of their axis values (`loss=1pct,rtt=40ms`), the same on every machine
//! and for any order of the spec's tables; the order of the cells by id decides the shards
//! (`--shard i/N`, 0-based: shard i may take the cells at positions i, i+N, i+2N, …).

use std::collections::BTreeMap;
use std::path::Path;

use serde::Deserialize;

use crate::cli::{Layer, RunOpts};
use crate::error::{precondition, UsageError};
use crate::presets::{flags, layer_from, shown, Origin};
use ccbench::experiment::Plan;

pub use crate::values::Shard;

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct SweepFile {
    #[serde(default)]
    description: String,
    note: Option<String>,
    #[serde(default)]
    defaults: toml::Table,
    #[serde(default)]
    axes: toml::Table,
    /// `[[expect]]`: expectations every cell is judged by.
    #[serde(default)]
    expect: Vec<toml::Table>,
}

/// A sweep's spec, every value checked.
#[derive(Debug)]
pub struct SweepSpec {
    pub file: String,
    pub text: String,
    pub description: String,
    pub note: Option<String>,
    pub defaults: RunOpts,
    /// By name.
    pub axes: Vec<Axis>,
}

#[derive(Debug)]
pub struct Axis {
    /// The run flag without dashes.
    pub name: String,
    /// In the spec's order.
    pub values: Vec<AxisValue>,
}

#[derive(Debug)]
pub struct AxisValue {
    /// As the flag would have been given.
    pub shown: String,
    /// Its part of a cell id.
    pub id: String,
    /// The value alone, as a layer.
    pub layer: RunOpts,
}

/// One cell of the grid: a value of each axis.
#[derive(Debug, Clone)]
pub struct Cell {
    pub id: String,
    /// `loss=1% rtt=40ms`, for people.
    pub label: String,
    /// Each axis's value, by axis name.
    pub parameters: Vec<(String, String)>,
    /// The axis values over the spec's defaults.
    pub opts: RunOpts,
}

/// 64-bit FNV-1a: a hash that is the same on every machine and in every version of Rust.
pub fn fnv1a(bytes: &[u8]) -> u64 {
    bytes.iter().fold(0xcbf2_9ce4_8422_2325, |h, b| (h ^ u64::from(*b)).wrapping_mul(0x0100_0000_01b3))
}

/// A value's part of a cell id: itself when it is made of letters, digits, `.`, `-` and `%`
/// (written `pct`); otherwise a slug of it and a hash of the value, so that ids stay unique.
pub fn id_part(value: &str) -> String {
    let plain = |c: char| c.is_ascii_alphanumeric() || c == '.' || c == '-';
    if !value.is_empty() && !value.contains("pct") && value.chars().all(|c| plain(c) || c == '%') {
        return value.replace('%', "pct");
    }
    let mut slug = String::new();
    for c in value.chars() {
        match c {
            '%' => slug.push_str("pct"),
            c if plain(c) => slug.push(c),
            _ if slug.ends_with('_') => {}
            _ => slug.push('_'),
        }
    }
    format!("{}~{:012x}", slug.trim_matches('_'), fnv1a(value.as_bytes()) & 0xffff_ffff_ffff)
}

impl SweepSpec {
    pub fn load(file: &Path) -> Result<Self, UsageError> {
        let name = file.display().to_string();
        let text = std::fs::read_to_string(file).map_err(|e| UsageError::new("sweep spec", &name, format!("a readable TOML file ({e})")))?;
        Self::parse(&name, &text)
    }

    pub fn parse(file: &str, text: &str) -> Result<Self, UsageError> {
        let origin = Origin { arg: "sweep spec", kind: "sweep", name: file };
        let spec: SweepFile = toml::from_str(text).map_err(|e| UsageError::new("sweep spec", file, format!("a valid sweep spec: {}", e.message())))?;
        let mut defaults = layer_from(&spec.defaults, &origin, "[defaults]")?;
        let expect = crate::presets::expect_tables(&spec.expect, &origin)?;
        defaults.expect = expect.into_iter().chain(std::mem::take(&mut defaults.expect)).collect();
        let known = flags::<RunOpts>();
        if spec.axes.is_empty() {
            return Err(UsageError::new("sweep spec", file, "at least one axis under [axes], e.g. loss = [\"0\", \"1%\"]"));
        }
        let mut axes = Vec::new();
        // toml's tables are sorted by key: the axes come by name, whatever the file's order.
        let sorted: BTreeMap<&String, &toml::Value> = spec.axes.iter().collect();
        for (name, values) in sorted {
            if !known.contains(name) {
                return Err(UsageError::new(
                    "sweep spec",
                    file,
                    format!("run flags without dashes as the axes; {name:?} is not one (run flags: {})", known.join(", ")),
                ));
            }
            let Some(list) = values.as_array().filter(|l| !l.is_empty()) else {
                return Err(UsageError::new(
                    &format!("--{name} (sweep {file}, axis {name})"),
                    shown(values),
                    "a non-empty list of values, e.g. [\"a\", \"b\"]",
                ));
            };
            let mut parsed: Vec<AxisValue> = Vec::new();
            for v in list {
                let layer = layer_from(&toml::Table::from_iter([(name.clone(), v.clone())]), &origin, &format!("axis {name}"))?;
                let shown = shown(v);
                let id = id_part(&shown);
                if let Some(same) = parsed.iter().find(|p| p.id == id) {
                    return Err(UsageError::new(
                        &format!("--{name} (sweep {file}, axis {name})"),
                        &shown,
                        format!("values that differ; {:?} is there twice", same.shown),
                    ));
                }
                parsed.push(AxisValue { shown, id, layer });
            }
            axes.push(Axis { name: name.clone(), values: parsed });
        }
        Ok(SweepSpec { file: file.to_string(), text: text.to_string(), description: spec.description, note: spec.note, defaults, axes })
    }

    /// Every cell, in the grid's order: the product of the axes (by name), each axis's values in
    /// the spec's order.
    pub fn cells(&self) -> Vec<Cell> {
        let mut cells = vec![Cell { id: String::new(), label: String::new(), parameters: Vec::new(), opts: RunOpts::default() }];
        for axis in &self.axes {
            cells = cells
                .iter()
                .flat_map(|c| {
                    axis.values.iter().map(move |v| {
                        let sep = |s: &str, by: &str| if s.is_empty() { String::new() } else { by.to_string() };
                        Cell {
                            id: format!("{}{}{}={}", c.id, sep(&c.id, ","), axis.name, v.id),
                            label: format!("{}{}{}={}", c.label, sep(&c.label, " "), axis.name, v.shown),
                            parameters: c.parameters.iter().cloned().chain([(axis.name.clone(), v.shown.clone())]).collect(),
                            opts: v.layer.clone().over(c.opts.clone()),
                        }
                    })
                })
                .collect();
        }
        for c in &mut cells {
            c.opts = std::mem::take(&mut c.opts).over(self.defaults.clone());
        }
        cells
    }
}

/// The seed of a cell that no layer gives one: from its id, so the same on every machine.
pub fn cell_seed(id: &str) -> u64 {
    fnv1a(format!("ccbench sweep cell {id}").as_bytes())
}

/// A cell planned: the command line over it, checked against everything else and this host.
pub struct PlannedCell {
    pub cell: Cell,
    pub plan: Plan,
}

/// Plans every cell (the command line over each), or says which cell is wrong.
pub fn plan_cells(spec: &SweepSpec, command_line: &RunOpts, available: &[String]) -> Result<Vec<PlannedCell>, UsageError> {
    for axis in &spec.axes {
        let given = axis.values.iter().any(|v| v.layer != RunOpts::default() && command_line.clone().over(v.layer.clone()) == *command_line);
        if given {
            return Err(precondition(format!(
                "--{} is an axis of sweep {}: leave it off the command line (or take the axis out of the spec)",
                axis.name, spec.file
            )));
        }
    }
    let mut planned = Vec::new();
    for cell in spec.cells() {
        let mut opts = command_line.clone().over(cell.opts.clone());
        opts.seed = opts.seed.or(Some(cell_seed(&cell.id)));
        let plan = crate::spec::resolve(opts, available)
            .map(Plan::from)
            .map_err(|e| UsageError { flag: format!("{} (sweep {}, cell {})", e.flag, spec.file, cell.label), ..e })?;
        planned.push(PlannedCell { cell, plan });
    }
    Ok(planned)
}

/// The hash of what a sweep measures: every cell's id and resolved parameters (so neither the
/// order of the spec's tables nor its comments and description count, but every value and the
/// command line's flags do).
pub fn spec_hash(cells: &[PlannedCell]) -> String {
    let mut sorted: Vec<&PlannedCell> = cells.iter().collect();
    sorted.sort_by(|a, b| a.cell.id.cmp(&b.cell.id));
    let mut text = String::new();
    for c in sorted {
        text.push_str(&c.cell.id);
        text.push('\n');
        text.push_str(&serde_json::to_string(&c.plan.params()).unwrap_or_default());
        text.push('\n');
    }
    format!("{:016x}", fnv1a(text.as_bytes()))
}

/// The positions (in `cells`) of a shard's cells: the cells sorted by id, every `count`-th from
/// `index`. Returned in the grid's order.
pub fn shard_cells(ids: &[&str], shard: Option<Shard>) -> Vec<usize> {
    let mut by_id: Vec<usize> = (0..ids.len()).collect();
    by_id.sort_by(|a, b| ids[*a].cmp(ids[*b]));
    let mut mine: Vec<usize> = by_id.into_iter().enumerate().filter(|(pos, _)| shard.is_none_or(|s| s.takes(*pos))).map(|(_, i)| i).collect();
    mine.sort_unstable();
    mine
}

#[cfg(test)]
mod tests {
    use super::*;

    const HOST: [&str; 3] = ["bbr", "cubic", "reno"];
    const SPEC: &str = "description = \"loss x rtt\"\n[defaults]\ncc = \"bbr,cubic\"\nruns = 4\nduration = \"3s\"\nrate = \"50mbit\"\n[axes]\nloss = [\"0\", \"1%\"]\nrtt = [\"10ms\", \"40ms\"]\n";

    fn host() -> Vec<String> {
        HOST.map(String::from).to_vec()
    }

    fn ids(spec: &SweepSpec) -> Vec<String> {
        spec.cells().into_iter().map(|c| c.id).collect()
    }

    #[test]
    fn cell_ids_are_readable_deterministic_and_independent_of_the_specs_order() {
        let spec = SweepSpec::parse("s.toml", SPEC).unwrap();
        assert_eq!(ids(&spec), ["loss=0,rtt=10ms", "loss=0,rtt=40ms", "loss=1pct,rtt=10ms", "loss=1pct,rtt=40ms"]);
        assert_eq!(spec.cells()[3].label, "loss=1% rtt=40ms");
        // The same spec with its tables and keys in another order gives the same cells.
        let shuffled =
            "[axes]\nrtt = [\"10ms\", \"40ms\"]\nloss = [\"0\", \"1%\"]\n[defaults]\nrate = \"50mbit\"\nduration = \"3s\"\nruns = 4\ncc = \"bbr,cubic\"\n";
        let other = SweepSpec::parse("other.toml", shuffled).unwrap();
        assert_eq!(ids(&other), ids(&spec));
        let plans = |s: &SweepSpec| plan_cells(s, &RunOpts::default(), &host()).unwrap_or_else(|e| panic!("{e}"));
        let (a, b) = (plans(&spec), plans(&other));
        assert_eq!(spec_hash(&a), spec_hash(&b), "comments, description and order do not make another sweep");
        assert_eq!(a[2].plan.seed, cell_seed("loss=1pct,rtt=10ms"), "a cell's seed comes from its id");
        assert_eq!(a[2].plan.seed, b[2].plan.seed);
        // Pinned: the same on every machine and in every build.
        assert_eq!((fnv1a(b"a"), fnv1a(b"ccbench")), (0xaf63_dc4c_8601_ec8c, 0xc2c8_e67d_b9a0_a5d7), "FNV-1a test vector");
        assert_eq!(id_part("gilbert:p=1%,r=25%"), format!("gilbert_p_1pct_r_25pct~{:012x}", fnv1a(b"gilbert:p=1%,r=25%") & 0xffff_ffff_ffff));
    }

    #[test]
    fn cell_ids_are_unique_even_where_slugs_meet() {
        let values = ["1%", "1pct", "1_pct", "1:pct", "1/pct", "a,b", "a_b", "a b", "", "0.5bdp", "-", "1%%", "1%pct"];
        let parts: Vec<String> = values.iter().map(|v| id_part(v)).collect();
        for (i, a) in parts.iter().enumerate() {
            assert!(!a.contains('/') && !a.contains(',') && !a.contains('=') && !a.is_empty(), "{a}");
            for b in &parts[i + 1..] {
                assert_ne!(a, b, "two values share an id part");
            }
        }
        // And whole ids, across a larger grid, never repeat.
        let spec = SweepSpec::parse(
            "s.toml",
            "[axes]\nloss = [\"0\", \"1%\", \"gilbert:p=1%,r=25%\"]\nat = [[\"1s:rate=5mbit\"], [\"1s:rate=5mbit\", \"2s:rtt=10ms\"]]\nno-offload = [true, false]\ncc = [\"bbr,cubic\", \"bbr,reno\"]\n",
        )
        .unwrap();
        let mut all = ids(&spec);
        assert_eq!(all.len(), 3 * 2 * 2 * 2);
        all.sort();
        all.dedup();
        assert_eq!(all.len(), 24);
    }

    #[test]
    fn the_grid_is_the_product_of_the_axes_over_the_defaults() {
        let spec = SweepSpec::parse(
            "s.toml",
            "[defaults]\ncc = \"bbr,cubic\"\nrtt = \"80ms\"\nruns = 5\n[axes]\nloss = [\"0\", \"1%\", \"5%\"]\nrate = [\"10mbit\", \"50mbit\"]\nbuffer = [\"1bdp\", \"4bdp\"]\n",
        )
        .unwrap();
        let cells = spec.cells();
        assert_eq!(cells.len(), 12);
        let mut seen = Vec::new();
        for loss in ["0", "1%", "5%"] {
            for rate in ["10mbit", "50mbit"] {
                for buffer in ["1bdp", "4bdp"] {
                    let want: Vec<(String, String)> =
                        [("buffer", buffer), ("loss", loss), ("rate", rate)].map(|(a, v)| (a.to_string(), v.to_string())).to_vec();
                    let c = cells.iter().find(|c| c.parameters == want).unwrap_or_else(|| panic!("no cell {want:?}"));
                    assert_eq!(c.opts.path.loss, Some(loss.parse().unwrap()));
                    assert_eq!(c.opts.path.rate, Some(rate.parse().unwrap()));
                    assert_eq!(c.opts.path.buffer, Some(buffer.parse().unwrap()));
                    assert_eq!(c.opts.path.rtt, Some("80ms".parse().unwrap()), "from [defaults]");
                    assert_eq!(c.opts.runs, Some("5".parse().unwrap()));
                    seen.push(c.id.clone());
                }
            }
        }
        seen.sort();
        seen.dedup();
        assert_eq!(seen.len(), 12, "every combination exactly once");
        // The grid's order: axes by name, each axis's values as listed.
        assert_eq!(cells[0].label, "buffer=1bdp loss=0 rate=10mbit");
        assert_eq!(cells[1].label, "buffer=1bdp loss=0 rate=50mbit");
        assert_eq!(cells[11].label, "buffer=4bdp loss=5% rate=50mbit");
        // The command line goes over every cell.
        let argv = ["ccbench", "sweep", "s.toml", "--duration", "2s", "--rtt", "20ms"];
        let crate::cli::Command::Sweep(args) = crate::cli::parse_from(argv).unwrap().command else { panic!() };
        let planned = plan_cells(&spec, &args.opts, &host()).unwrap_or_else(|e| panic!("{e}"));
        assert!(planned.iter().all(|p| p.plan.path.down.delay_ns.as_nanos() == 10_000_000), "--rtt 20ms over the defaults' 80ms");
        assert_ne!(
            spec_hash(&planned),
            spec_hash(&plan_cells(&spec, &RunOpts::default(), &host()).unwrap_or_else(|e| panic!("{e}"))),
            "the command line is part of the sweep"
        );
    }

    #[test]
    fn shards_partition_the_cells_exactly() {
        let spec = SweepSpec::parse("s.toml", "[axes]\nloss = [\"0\", \"1%\", \"2%\", \"5%\", \"10%\"]\nrtt = [\"10ms\", \"20ms\", \"40ms\"]\n").unwrap();
        let cells = spec.cells();
        for total in [0, 1, 2, 5, 15] {
            let ids: Vec<&str> = cells.iter().take(total).map(|c| c.id.as_str()).collect();
            for n in 1..=7u32 {
                let mut count = vec![0; ids.len()];
                let mut sizes = Vec::new();
                for i in 0..n {
                    let mine = shard_cells(&ids, Some(Shard { index: i, count: n }));
                    sizes.push(mine.len());
                    for c in mine {
                        count[c] += 1;
                    }
                }
                assert!(count.iter().all(|&k| k == 1), "{total} cells, {n} shards: every cell in exactly one shard: {count:?}");
                assert!(sizes.iter().max().unwrap() - sizes.iter().min().unwrap() <= 1, "balanced: {sizes:?}");
            }
            assert_eq!(shard_cells(&ids, None), (0..ids.len()).collect::<Vec<_>>(), "no shard: every cell");
        }
        // By id, not by the grid's order: the same cells for any order of the spec.
        let ids: Vec<&str> = cells.iter().map(|c| c.id.as_str()).collect();
        let mut reversed = ids.clone();
        reversed.reverse();
        let pick = |ids: &[&str], s| shard_cells(ids, Some(s)).into_iter().map(|i| ids[i].to_string()).collect::<std::collections::BTreeSet<_>>();
        assert_eq!(pick(&ids, Shard { index: 1, count: 3 }), pick(&reversed, Shard { index: 1, count: 3 }));
    }

    #[test]
    fn a_shard_is_i_of_n_from_zero() {
        assert_eq!("0/4".parse::<Shard>(), Ok(Shard { index: 0, count: 4 }));
        assert_eq!("3/4".parse::<Shard>(), Ok(Shard { index: 3, count: 4 }));
        for bad in ["4/4", "1/0", "x/2", "2", "-1/3", "1/2/3"] {
            assert!(bad.parse::<Shard>().is_err(), "{bad}");
        }
    }

    #[test]
    fn spec_errors_name_the_axis_the_field_or_the_cell() {
        let err = |text: &str| SweepSpec::parse("s.toml", text).unwrap_err();
        let e = err("[axes]\nloss = [\"0\", \"200%\"]\n");
        assert_eq!((e.flag.as_str(), e.value.as_str()), ("--loss (sweep s.toml, axis loss)", "200%"));
        assert!(e.allowed.starts_with("a percentage from 0% to 100%"), "{e}");
        let e = err("[axes]\ncolour = [\"red\"]\n");
        assert!(e.to_string().contains("\"colour\" is not one") && e.to_string().contains("rate-down"), "{e}");
        let e = err("[axes]\nloss = \"1%\"\n");
        assert!(e.flag.contains("axis loss") && e.allowed.contains("list"), "{e}");
        let e = err("[axes]\nloss = []\n");
        assert!(e.flag.contains("axis loss"), "{e}");
        let e = err("[axes]\nrtt = [\"10ms\", \"10ms\"]\n");
        assert!(e.flag.contains("axis rtt") && e.allowed.contains("twice"), "{e}");
        let e = err("[defaults]\nruns = 0\n[axes]\nrtt = [\"10ms\"]\n");
        assert_eq!(e.flag, "--runs (sweep s.toml, [defaults])");
        assert!(err("[defaults]\nrtt = \"10ms\"\n").to_string().contains("at least one axis"));
        assert!(err("[axes]\nrtt = [\"10ms\"]\n[conditions]\n").to_string().contains("valid sweep spec"));
        // A combination that only one cell makes is named with the cell.
        let spec = SweepSpec::parse("s.toml", "[defaults]\ncc = \"bbr,cubic\"\n[axes]\nworkload = [\"file\", \"bulk\"]\nsize = [\"1mb\"]\n").unwrap();
        let e = plan_cells(&spec, &RunOpts::default(), &host()).err().expect("refused");
        assert_eq!((e.flag.as_str(), e.value.as_str()), ("--size (sweep s.toml, cell size=1mb workload=bulk)", "1mb"));
        // An axis's flag on the command line would flatten the axis.
        let spec = SweepSpec::parse("s.toml", SPEC).unwrap();
        let argv = ["ccbench", "sweep", "s.toml", "--loss", "2%"];
        let crate::cli::Command::Sweep(args) = crate::cli::parse_from(argv).unwrap().command else { panic!() };
        let e = plan_cells(&spec, &args.opts, &host()).err().expect("refused");
        assert!(e.to_string().contains("--loss is an axis"), "{e}");
        let argv = ["ccbench", "sweep", "s.toml", "--loss-down", "2%", "--cc", "bbr,reno"];
        let crate::cli::Command::Sweep(args) = crate::cli::parse_from(argv).unwrap().command else { panic!() };
        assert!(plan_cells(&spec, &args.opts, &host()).is_ok(), "other flags are fine");
    }

    #[test]
    fn the_shipped_example_sweep_plans() {
        let spec = SweepSpec::parse("example-sweep.toml", include_str!("../../../../deploy/example-sweep.toml")).unwrap();
        let planned = plan_cells(&spec, &RunOpts::default(), &host()).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(planned.len(), 9);
        assert!(planned.iter().all(|p| crate::progress::planned_runs(&p.plan) == 8));
    }
}
