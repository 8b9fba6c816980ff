//! `--junit FILE`: the expectations as JUnit XML, for a CI system's test report. One
//! `<testsuite>` per experiment (per condition of a preset, per cell of a sweep), one
//! `<testcase>` per expectation × algorithm. A failed expectation is a `<failure type="fail">`,
//! an undecided one a `<failure type="undecided">` (it does not pass the gate either); the
//! figures are in the message, the same line the terminal prints.
//!
//! The element and attribute names follow the JUnit schema as CI consumers read it (Jenkins'
//! `junit-10.xsd`, GitLab's and GitHub's test reporters): `testsuites` › `testsuite`
//! (`name`, `tests`, `failures`, `errors`, `skipped`) › `testcase` (`name`, `classname`) ›
//! `failure` (`message`, `type`).

use std::io;
use std::path::Path;

use ccbench_stats::expectation::Judgement;
use quick_xml::events::{BytesDecl, BytesText, Event};
use quick_xml::Writer;

use crate::results::ExperimentResult;

/// One experiment's expectations, under a name (`ccbench run`, a condition's, a cell's).
pub struct Suite<'a> {
    /// The test suite's name.
    pub name: &'a str,
    /// The experiment whose expectations are the suite's test cases.
    pub result: &'a ExperimentResult,
}

/// The JUnit XML of `suites`.
pub fn render(suites: &[Suite]) -> String {
    let mut w = Writer::new_with_indent(Vec::new(), b' ', 2);
    let count = |f: &dyn Fn(Judgement) -> bool| suites.iter().flat_map(|s| &s.result.expectations).filter(|e| f(e.result)).count().to_string();
    let tests = count(&|_| true);
    let failures = count(&|j| j != Judgement::Pass);
    let written: io::Result<()> = (|| {
        w.write_event(Event::Decl(BytesDecl::new("1.0", Some("UTF-8"), None)))?;
        w.create_element("testsuites")
            .with_attributes([("name", "ccbench"), ("tests", tests.as_str()), ("failures", failures.as_str()), ("errors", "0")])
            .write_inner_content(|w| {
                for s in suites {
                    suite(w, s)?;
                }
                Ok(())
            })?;
        Ok(())
    })();
    // Writing to a Vec cannot fail.
    written.expect("writing XML to memory");
    String::from_utf8(w.into_inner()).expect("quick-xml writes UTF-8")
}

fn suite(w: &mut Writer<Vec<u8>>, s: &Suite) -> io::Result<()> {
    let exps = &s.result.expectations;
    let tests = exps.len().to_string();
    let failures = exps.iter().filter(|e| e.result != Judgement::Pass).count().to_string();
    let seed = s.result.params.seed.to_string();
    let classname = format!("ccbench.{}", s.name);
    w.create_element("testsuite")
        .with_attributes([
            ("name", s.name),
            ("tests", tests.as_str()),
            ("failures", failures.as_str()),
            ("errors", "0"),
            ("skipped", "0"),
            ("timestamp", s.result.provenance.started_at.as_str()),
        ])
        .write_inner_content(|w| {
            w.create_element("properties").write_inner_content(|w| {
                for (name, value) in
                    [("seed", seed.as_str()), ("alpha", &s.result.params.alpha.to_string()), ("runs_auto", &s.result.params.runs_auto.to_string())]
                {
                    w.create_element("property").with_attributes([("name", name), ("value", value)]).write_empty()?;
                }
                Ok(())
            })?;
            for e in exps {
                let name = format!("{}: {}", e.cc, e.expect);
                let line = e.line();
                let case = w.create_element("testcase").with_attributes([("name", name.as_str()), ("classname", classname.as_str())]);
                match e.result {
                    Judgement::Pass => {
                        case.write_inner_content(|w| {
                            w.create_element("system-out").write_text_content(BytesText::new(&line))?;
                            Ok(())
                        })?;
                    }
                    j => {
                        let kind = if j == Judgement::Fail { "fail" } else { "undecided" };
                        case.write_inner_content(|w| {
                            w.create_element("failure")
                                .with_attributes([("message", line.as_str()), ("type", kind)])
                                .write_text_content(BytesText::new(&line))?;
                            Ok(())
                        })?;
                    }
                }
            }
            Ok(())
        })?;
    Ok(())
}

/// Writes `suites` as JUnit XML to `path`.
pub fn write(path: &Path, suites: &[Suite]) -> anyhow::Result<()> {
    use anyhow::Context;
    std::fs::write(path, render(suites)).with_context(|| format!("writing the JUnit report {}", path.display()))
}
