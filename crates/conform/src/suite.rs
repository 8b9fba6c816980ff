//! What every suite is made of: its [`Case`]s, and the [`Suite`] that names them, the
//! specification they check and the controllers and grid they run on. The registry,
//! [`crate::SUITES`] (in lib.rs, above every suite's file), lists every suite; each is one file
//! of this crate (`bbr.rs`: [`crate::bbr::BBR`]).

use std::time::Duration;

use crate::assertion::Assertion;
use crate::scenario::Scenario;

/// Whether ccbench can run a case today.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Runnable {
    Yes,
    /// Not runnable here yet: needs this.
    Needs(&'static str),
}

/// One case of a suite.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Case {
    /// `A.1`, or the section (`§5.3.3`) for the state-machine checks.
    pub id: &'static str,
    pub title: &'static str,
    /// The specification's sections it checks.
    pub sections: &'static str,
    /// What the case exercises, in a sentence.
    pub what: &'static str,
    pub scenario: Scenario,
    pub assertions: &'static [Assertion],
    pub runnable: Runnable,
}

impl Case {
    /// `A.1 Exiting STARTUP on Bandwidth Plateau`: its name in the terminal, the report and JUnit.
    pub fn name(&self) -> String {
        format!("{} {}", self.id, self.title)
    }
}

/// A grid of paths: every rate at every round-trip time (a scenario with a path of its own,
/// [`Scenario::own_path`], runs on that instead).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Grid {
    pub rtts: &'static [Duration],
    /// Bottleneck rates, bits/s.
    pub rates_bps: &'static [f64],
}

/// A conformance suite: `ccbench conform <name>`.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Suite {
    /// The subcommand (`bbr`); also in the results directory's name (`<time>-conform-bbr`), the
    /// report's title and JUnit's class names (`conform.bbr.<controller>`).
    pub name: &'static str,
    /// The specification as the matrix names it: `draft-ietf-ccwg-bbr (sections of -06)`.
    pub spec: &'static str,
    /// Its cases, in the order the matrix shows them.
    pub cases: &'static [Case],
    /// `--cc`'s default, comma-separated.
    pub default_cc: &'static str,
    /// The controllers it judges, as `--cc` names them; any other of their family is judged too
    /// (the binary reads the family, `ccbench-model`'s `Family`).
    pub controllers: &'static [&'static str],
    /// What they are, in `--cc`'s error: `BBR controllers`.
    pub controllers_are: &'static str,
    /// The default grid; its top rate is lowered to what the machine's emulator has carried.
    pub grid: Grid,
    /// `--quick`'s grid.
    pub quick: Grid,
}

impl Suite {
    /// `--cc`'s accepted values in words: `BBR controllers: quic:bbr3, quic:bbr2 or tcp:bbr`.
    pub fn controllers_expected(&self) -> String {
        let names = match self.controllers {
            [] => String::new(),
            [one] => one.to_string(),
            [rest @ .., last] => format!("{} or {last}", rest.join(", ")),
        };
        format!("{}: {names}", self.controllers_are)
    }

    /// The case numbered `id`.
    pub fn case(&self, id: &str) -> Option<&'static Case> {
        self.cases.iter().find(|c| c.id == id)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::SUITES;

    #[test]
    fn every_case_has_a_unique_name_and_runnable_cases_assert_something() {
        let mut names: Vec<&str> = SUITES.iter().map(|s| s.name).collect();
        names.sort();
        names.dedup();
        assert_eq!(names.len(), SUITES.len());
        for s in SUITES {
            let mut ids: Vec<&str> = s.cases.iter().map(|c| c.id).collect();
            ids.sort();
            ids.dedup();
            assert_eq!(ids.len(), s.cases.len(), "{}", s.name);
            for c in s.cases {
                assert_eq!(c.runnable == Runnable::Yes, !c.assertions.is_empty(), "{} {}", s.name, c.name());
            }
            assert!(!s.controllers.is_empty() && !s.grid.rtts.is_empty() && !s.grid.rates_bps.is_empty(), "{}", s.name);
            assert!(!s.quick.rtts.is_empty() && !s.quick.rates_bps.is_empty(), "{}", s.name);
        }
    }

    #[test]
    fn controllers_in_words() {
        assert_eq!(crate::bbr::BBR.controllers_expected(), "BBR controllers: quic:bbr3, quic:bbr2 or tcp:bbr");
    }
}
