//! `--workload` and every workload's own flags, generated from the workload registry
//! (`ccbench_workload::workloads!`): the values `--workload` takes ([`WorkloadKind`]), every
//! workload's flags flattened into `ccbench run` and a preset's fields ([`WorkloadFlags`]), and
//! the spec they make ([`spec_from_flags`]). Each workload's flags are its module's (`args`),
//! asked through [`FromFlags`].

use ccbench::run_workload::WorkloadSpec;
use ccbench_workload::flags::{FlagError, FlagSet, FromFlags, Given, Kind, RunFlags};
use ccbench_workload::Algorithm;
use serde::Deserialize;

macro_rules! registry {
    ($($(#[$doc:meta])* $module:ident: $variant:ident($spec:ty, $result:ty),)*) => {
        /// Every workload's own flags (its `FromFlags::Flags`), in the registry's order: flattened
        /// into `ccbench run`, and a preset's or sweep's fields.
        #[derive(Clone, Debug, Default, PartialEq)]
        #[allow(non_snake_case)]
        pub struct WorkloadFlags {
            $(pub $variant: <$spec as FromFlags>::Flags,)*
        }

        // `clap::Args` by hand: each workload's flags flattened in turn.
        impl clap::FromArgMatches for WorkloadFlags {
            fn from_arg_matches(matches: &clap::ArgMatches) -> Result<Self, clap::Error> {
                Ok(WorkloadFlags { $($variant: clap::FromArgMatches::from_arg_matches(matches)?,)* })
            }
            fn update_from_arg_matches(&mut self, matches: &clap::ArgMatches) -> Result<(), clap::Error> {
                $(clap::FromArgMatches::update_from_arg_matches(&mut self.$variant, matches)?;)*
                Ok(())
            }
        }

        impl clap::Args for WorkloadFlags {
            fn augment_args(command: clap::Command) -> clap::Command {
                $(let command = <<$spec as FromFlags>::Flags as clap::Args>::augment_args(command);)*
                command
            }
            fn augment_args_for_update(command: clap::Command) -> clap::Command {
                $(let command = <<$spec as FromFlags>::Flags as clap::Args>::augment_args_for_update(command);)*
                command
            }
        }

        impl ccbench_workload::flags::Layer for WorkloadFlags {
            fn over(self, lower: Self) -> Self {
                WorkloadFlags { $($variant: ccbench_workload::flags::Layer::over(self.$variant, lower.$variant),)* }
            }
            fn forget_default(&mut self, id: &str, matches: &ccbench_workload::flags::ArgMatches) {
                $(ccbench_workload::flags::Layer::forget_default(&mut self.$variant, id, matches);)*
            }
        }

        impl FlagSet for WorkloadFlags {
            fn flags_of(&self, spec: std::any::TypeId) -> Option<&dyn std::any::Any> {
                $(if spec == std::any::TypeId::of::<$spec>() {
                    return Some(&self.$variant);
                })*
                None
            }
        }

        impl WorkloadFlags {
            /// A preset's field `key` (a workload's flag without dashes) read into its workload's
            /// flags; `None` when it is no workload's flag.
            pub fn deserialize_field<'de, D: serde::Deserializer<'de>>(key: &str, d: D) -> Option<Result<Self, D::Error>> {
                $(if ccbench_workload::flags::names::<<$spec as FromFlags>::Flags>().iter().any(|n| n == key) {
                    return Some(<<$spec as FromFlags>::Flags as Deserialize>::deserialize(d).map(|f| WorkloadFlags { $variant: f, ..WorkloadFlags::default() }));
                })*
                None
            }

            /// Every workload's flag given, `(--flag, value)`, in the order `--help` lists them.
            fn given(&self) -> Vec<(String, String)> {
                let mut given = Vec::new();
                $(given.extend(Given::given(&self.$variant));)*
                given
            }
        }

        impl WorkloadKind {
            /// Every `--workload` value, in the registry's order (the first is the default).
            pub fn all() -> &'static [WorkloadKind] {
                static ALL: std::sync::OnceLock<Vec<WorkloadKind>> = std::sync::OnceLock::new();
                ALL.get_or_init(|| {
                    let mut all = Vec::new();
                    $(all.extend(<$spec as FromFlags>::KINDS.iter().map(WorkloadKind));)*
                    all
                })
            }

            /// Why this workload cannot run `cc`, when it cannot (its `FromFlags::refuse_algorithm`).
            pub fn refuse_algorithm(self, cc: &Algorithm) -> Option<String> {
                $(if <$spec as FromFlags>::KINDS.contains(self.0) {
                    return <$spec as FromFlags>::refuse_algorithm(self.name(), cc);
                })*
                None
            }
        }

        /// The spec `--workload kind` runs, from the flags (its `FromFlags::from_flags`); the
        /// flags it does not take are refused before ([`WorkloadFlags::refuse_others`]).
        pub(crate) fn spec_from_flags(kind: WorkloadKind, flags: &WorkloadFlags, run: &RunFlags) -> Result<WorkloadSpec, FlagError> {
            $(if <$spec as FromFlags>::KINDS.contains(kind.0) {
                return <$spec as FromFlags>::from_flags(kind.name(), flags, run).map(WorkloadSpec::$variant);
            })*
            unreachable!("every --workload value is a registered workload's")
        }
    };
}

/// `--workload`: the kind of traffic, one of the registered workloads' `FromFlags::KINDS`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct WorkloadKind(&'static Kind);

impl WorkloadKind {
    pub fn name(self) -> &'static str {
        self.0.name
    }

    /// Whether it takes `flag`, of those a workload may refuse.
    pub fn takes(self, flag: &str) -> bool {
        self.0.takes.contains(&flag)
    }

    /// The workloads that take `flag`, as a message names them: `file or objects`.
    pub fn taking(flag: &str) -> String {
        let names: Vec<&str> = Self::all().iter().filter(|k| k.takes(flag)).map(|k| k.name()).collect();
        ccbench_workload::flags::or_list(&names)
    }

    /// `--workload`'s help: `The traffic: NAME (ABOUT), …`.
    pub fn help() -> String {
        let about: Vec<String> = Self::all().iter().filter_map(|k| k.0.about.map(|a| format!("{} ({a})", k.name()))).collect();
        format!("The traffic: {}", about.join(", "))
    }
}

impl Default for WorkloadKind {
    fn default() -> Self {
        Self::all()[0]
    }
}

impl clap::ValueEnum for WorkloadKind {
    fn value_variants<'a>() -> &'a [Self] {
        Self::all()
    }

    fn to_possible_value(&self) -> Option<clap::builder::PossibleValue> {
        let value = clap::builder::PossibleValue::new(self.name());
        Some(match self.0.help {
            Some(help) => value.help(help),
            None => value,
        })
    }
}

impl std::str::FromStr for WorkloadKind {
    type Err = ccbench_workload::flags::Expected;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Self::all().iter().copied().find(|k| k.name() == s).ok_or_else(|| {
            let names: Vec<&str> = Self::all().iter().map(|k| k.name()).collect();
            ccbench_workload::flags::Expected(format!("one of {}", names.join(", ")))
        })
    }
}

impl std::fmt::Display for WorkloadKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

ccbench_workload::deserialize_from_text!(WorkloadKind);

impl WorkloadFlags {
    /// Refuses the flags that belong to other workloads than `kind`, naming those they belong to.
    pub fn refuse_others(&self, kind: WorkloadKind) -> Result<(), FlagError> {
        match self.given().into_iter().find(|(flag, _)| !kind.takes(flag)) {
            Some((flag, value)) => Err(FlagError::new(&flag, value, format!("{flag} only with --workload {}", WorkloadKind::taking(&flag)))),
            None => Ok(()),
        }
    }
}

ccbench_workload::workloads!(registry);

#[cfg(test)]
mod tests {
    use super::*;

    /// What each `--workload` value says it takes is a flag that exists (a workload's own, or
    /// the run's `--flows` and `--quic-receiver-cc`), every workload's flag is taken by some
    /// value (or it could never be given), and no two values share a name.
    #[test]
    fn the_workloads_command_lines_agree() {
        use clap::Args;
        let own: Vec<String> =
            WorkloadFlags::augment_args(clap::Command::new("t")).get_arguments().filter_map(|a| a.get_long().map(|l| format!("--{l}"))).collect();
        let kinds = WorkloadKind::all();
        for k in kinds {
            for flag in k.0.takes {
                assert!(own.iter().any(|f| f == flag) || ["--flows", "--quic-receiver-cc"].contains(flag), "{} takes {flag}, which is no flag", k.name());
            }
        }
        for flag in &own {
            assert!(kinds.iter().any(|k| k.takes(flag)), "{flag} is taken by no --workload");
        }
        let mut names: Vec<&str> = kinds.iter().map(|k| k.name()).collect();
        names.sort_unstable();
        names.dedup();
        assert_eq!(names.len(), kinds.len());
        // A preset's field reaches the workload that defines it.
        let page = WorkloadFlags::deserialize_field("max-connections", serde_json::json!({"max-connections": 3})).expect("page's flag").unwrap();
        assert_eq!(page.Page.max_connections.map(|m| m.to_string()), Some("3".into()));
        assert!(WorkloadFlags::deserialize_field("rtt", serde_json::json!({"rtt": "1ms"})).is_none());
    }
}
