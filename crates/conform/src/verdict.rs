//! An assertion over runs: the runs' figures judged with `--expect`'s exact order-statistic
//! rules (`ccbench_stats::expectation`): pass when the one-sided bound of the median clears the
//! rule, fail when the opposite bound misses it, undecided otherwise — and with fewer runs than
//! the level needs (5 at α = 0.05), undecided whatever the runs showed. Runs where the assertion
//! was not observable do not count; a cell none of whose runs could observe it is *not
//! observable*, never a pass.

use ccbench_stats::expectation::{judge, median_bounds, Judgement, MedianBounds, Side};

use crate::assertion::{Outcome, Rule, RunCheck};

/// What a cell of the matrix (case × controller × path) shows.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CellVerdict {
    Pass,
    Fail,
    Undecided,
    NotObservable,
}

impl CellVerdict {
    pub fn word(self) -> &'static str {
        match self {
            CellVerdict::Pass => "pass",
            CellVerdict::Fail => "fail",
            CellVerdict::Undecided => "undecided",
            CellVerdict::NotObservable => "not observable",
        }
    }

    /// The worse of two: fail, then undecided, then not observable, then pass.
    pub fn worst(self, other: CellVerdict) -> CellVerdict {
        let rank = |v: CellVerdict| match v {
            CellVerdict::Fail => 3,
            CellVerdict::Undecided => 2,
            CellVerdict::NotObservable => 1,
            CellVerdict::Pass => 0,
        };
        if rank(other) > rank(self) {
            other
        } else {
            self
        }
    }
}

/// One assertion judged over the runs of one cell.
#[derive(Debug, Clone, PartialEq)]
pub struct Cell {
    pub verdict: CellVerdict,
    /// Per run: pass, fail, not observable.
    pub runs: Vec<Outcome>,
    pub bounds: Option<MedianBounds>,
    /// The first deciding run's evidence (a failing one if any failed).
    pub evidence: String,
}

impl Cell {
    /// `3/5 pass, 1 fail, 1 not observable`.
    pub fn tally(&self) -> String {
        let count = |o: Outcome| self.runs.iter().filter(|r| **r == o).count();
        let mut parts = vec![format!("{}/{} pass", count(Outcome::Pass), self.runs.len())];
        for o in [Outcome::Fail, Outcome::NotObservable] {
            if count(o) > 0 {
                parts.push(format!("{} {}", count(o), o.word()));
            }
        }
        parts.join(", ")
    }
}

/// Judges one assertion's per-run checks over the runs at `alpha`.
pub fn over_runs(rule: Rule, checks: &[RunCheck], alpha: f64) -> Cell {
    let runs: Vec<Outcome> = checks.iter().map(|c| c.outcome).collect();
    let evidence = checks
        .iter()
        .find(|c| c.outcome == Outcome::Fail)
        .or_else(|| checks.iter().find(|c| c.outcome == Outcome::Pass))
        .or(checks.first())
        .map(|c| c.evidence.clone())
        .unwrap_or_default();
    let figures: Vec<f64> = checks.iter().filter(|c| c.outcome != Outcome::NotObservable).map(|c| c.estimate).collect();
    if figures.is_empty() {
        return Cell { verdict: CellVerdict::NotObservable, runs, bounds: None, evidence };
    }
    let bounds = median_bounds(&figures, alpha);
    let verdict = match bounds {
        None => CellVerdict::Undecided,
        Some(b) => match rule {
            Rule::AtLeast(t) => of(judge(&b, Side::AtLeast { strict: false }, t)),
            Rule::AtMost(t) => of(judge(&b, Side::AtMost { strict: false }, t)),
            Rule::Above(t) => of(judge(&b, Side::AtLeast { strict: true }, t)),
            Rule::Below(t) => of(judge(&b, Side::AtMost { strict: true }, t)),
            // Both sides must pass; either failing fails.
            Rule::Between(lo, hi) => {
                let (a, z) = (judge(&b, Side::AtLeast { strict: false }, lo), judge(&b, Side::AtMost { strict: false }, hi));
                match (a, z) {
                    (Judgement::Fail, _) | (_, Judgement::Fail) => CellVerdict::Fail,
                    (Judgement::Pass, Judgement::Pass) => CellVerdict::Pass,
                    _ => CellVerdict::Undecided,
                }
            }
        },
    };
    Cell { verdict, runs, bounds, evidence }
}

/// One assertion judged over the paths of a grid, from each path's cell (`(path label, cell)`).
///
/// What it claims: each path's figure is the share of its runs that passed (of those that could
/// observe the assertion; with one run per path, 1 or 0), and the paths' figures are judged with
/// the same order-statistic rules as [`over_runs`], against "at least half": **pass** when the
/// one-sided (1 − `alpha`) lower bound of the median path's share is ≥ ½ — the case holds on
/// most paths of a grid like this one, not on every path (one run per path cannot show that: a
/// single run's miss is not a path's failure) — **fail** when the upper bound is below ½, else
/// undecided (and always with fewer than 5 observable paths at α = 0.05). It is a sign test over
/// the paths; the paths are taken as exchangeable, which a grid chosen by hand only
/// approximates, so a pass says "typical of this grid", and the per-path cells say where it
/// missed. Paths where no run could observe the assertion do not count.
pub fn over_paths(paths: &[(String, &Cell)], alpha: f64) -> Cell {
    let checks: Vec<RunCheck> = paths
        .iter()
        .map(|(label, cell)| {
            let seen = cell.runs.iter().filter(|o| **o != Outcome::NotObservable).count();
            let passed = cell.runs.iter().filter(|o| **o == Outcome::Pass).count();
            let evidence = format!("{label}: {}", cell.evidence);
            if seen == 0 {
                return RunCheck { outcome: Outcome::NotObservable, lo: f64::NAN, hi: f64::NAN, estimate: f64::NAN, evidence };
            }
            let share = passed as f64 / seen as f64;
            let outcome = if share >= 0.5 { Outcome::Pass } else { Outcome::Fail };
            RunCheck { outcome, lo: share, hi: share, estimate: share, evidence }
        })
        .collect();
    over_runs(Rule::AtLeast(0.5), &checks, alpha)
}

fn of(j: Judgement) -> CellVerdict {
    match j {
        Judgement::Pass => CellVerdict::Pass,
        Judgement::Fail => CellVerdict::Fail,
        Judgement::Undecided => CellVerdict::Undecided,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn check(outcome: Outcome, x: f64) -> RunCheck {
        RunCheck { outcome, lo: x, hi: x, estimate: x, evidence: format!("x = {x}") }
    }

    #[test]
    fn five_passing_runs_pass_and_four_stay_undecided() {
        let five: Vec<RunCheck> = (0..5).map(|i| check(Outcome::Pass, 2.0 + f64::from(i) * 0.1)).collect();
        assert_eq!(over_runs(Rule::AtMost(3.0), &five, 0.05).verdict, CellVerdict::Pass);
        // ½⁴ = 0.0625 > α: no bound, as --expect.
        assert_eq!(over_runs(Rule::AtMost(3.0), &five[..4], 0.05).verdict, CellVerdict::Undecided);
        assert_eq!(over_runs(Rule::AtMost(1.0), &five, 0.05).verdict, CellVerdict::Fail);
    }

    #[test]
    fn unobservable_runs_do_not_count_and_none_is_not_a_pass() {
        let none: Vec<RunCheck> =
            (0..5).map(|_| RunCheck { outcome: Outcome::NotObservable, lo: f64::NAN, hi: f64::NAN, estimate: f64::NAN, evidence: "no phase".into() }).collect();
        let cell = over_runs(Rule::AtLeast(1.0), &none, 0.05);
        assert_eq!(cell.verdict, CellVerdict::NotObservable);
        assert_eq!(cell.tally(), "0/5 pass, 5 not observable");
    }

    /// Over paths: 12 paths with 2 misses pass (k = 3 at α = 0.05, the 3rd lowest share is 1);
    /// 3 misses are undecided; 10 misses fail; 4 paths are undecided whatever they show; paths
    /// no run could observe do not count.
    #[test]
    fn over_paths_is_a_sign_test_on_the_paths() {
        let cell = |o: Outcome| Cell { verdict: CellVerdict::Undecided, runs: vec![o], bounds: None, evidence: o.word().into() };
        let grid = |fails: usize, n: usize| -> Vec<Cell> { (0..n).map(|i| cell(if i < fails { Outcome::Fail } else { Outcome::Pass })).collect() };
        let judge = |cells: &[Cell]| {
            let named: Vec<(String, &Cell)> = cells.iter().enumerate().map(|(i, c)| (format!("p{i}"), c)).collect();
            over_paths(&named, 0.05)
        };
        assert_eq!(judge(&grid(2, 12)).verdict, CellVerdict::Pass);
        assert_eq!(judge(&grid(3, 12)).verdict, CellVerdict::Undecided);
        assert_eq!(judge(&grid(10, 12)).verdict, CellVerdict::Fail);
        assert_eq!(judge(&grid(0, 4)).verdict, CellVerdict::Undecided);
        let failed = judge(&grid(2, 12));
        assert_eq!(failed.tally(), "10/12 pass, 2 fail");
        assert!(failed.evidence.starts_with("p0: fail"), "{}", failed.evidence);
        let mut unseen = grid(0, 12);
        for c in unseen.iter_mut().take(8) {
            c.runs = vec![Outcome::NotObservable];
        }
        assert_eq!(judge(&unseen).verdict, CellVerdict::Undecided, "4 observable paths");
        // A path with 3 of 5 runs passing counts as meeting the case.
        let most = Cell { runs: vec![Outcome::Pass, Outcome::Pass, Outcome::Pass, Outcome::Fail, Outcome::Fail], ..cell(Outcome::Pass) };
        let named: Vec<(String, &Cell)> = (0..6).map(|i| (format!("p{i}"), &most)).collect();
        assert_eq!(over_paths(&named, 0.05).verdict, CellVerdict::Pass);
    }

    #[test]
    fn between_fails_on_either_side() {
        let high: Vec<RunCheck> = (0..6).map(|_| check(Outcome::Fail, 1.5)).collect();
        assert_eq!(over_runs(Rule::Between(0.9, 1.1), &high, 0.05).verdict, CellVerdict::Fail);
        let mid: Vec<RunCheck> = (0..6).map(|_| check(Outcome::Pass, 1.0)).collect();
        assert_eq!(over_runs(Rule::Between(0.9, 1.1), &mid, 0.05).verdict, CellVerdict::Pass);
    }
}
