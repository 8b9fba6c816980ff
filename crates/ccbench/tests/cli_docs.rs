//! `ccbench completions SHELL` and `ccbench man`: what they print must be usable by the shell
//! and by man, and must cover every subcommand the binary has. The list of subcommands is read
//! from `ccbench --help`, so a new subcommand is checked without touching this file. No root.

use std::path::Path;
use std::process::{Command, Output};

const BIN: &str = env!("CARGO_BIN_EXE_ccbench");

fn ccbench(args: &[&str]) -> Output {
    Command::new(BIN).args(args).output().expect("ccbench runs")
}

fn stdout_of(args: &[&str]) -> String {
    let out = ccbench(args);
    assert!(out.status.success(), "ccbench {args:?} failed: {}", String::from_utf8_lossy(&out.stderr));
    String::from_utf8(out.stdout).expect("UTF-8 output")
}

/// The subcommands `ccbench --help` lists (its "Commands:" section), but `help`.
fn subcommands() -> Vec<String> {
    let help = stdout_of(&["--help"]);
    let names: Vec<String> = help
        .lines()
        .skip_while(|l| !l.starts_with("Commands:"))
        .skip(1)
        .take_while(|l| l.starts_with("  "))
        .filter_map(|l| l.split_whitespace().next())
        .filter(|n| *n != "help")
        .map(str::to_string)
        .collect();
    assert!(names.len() >= 10, "too few subcommands read from --help: {names:?}");
    names
}

fn scratch(name: &str) -> std::path::PathBuf {
    let dir = std::env::temp_dir().join(format!("ccbench-cli-docs-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

#[test]
fn bash_completion_parses_and_knows_every_subcommand_and_flag() {
    let script = stdout_of(&["completions", "bash"]);
    let dir = scratch("bash");
    let file = dir.join("ccbench.bash");
    std::fs::write(&file, &script).unwrap();
    let check = Command::new("bash").arg("-n").arg(&file).output().expect("bash runs");
    assert!(check.status.success(), "bash -n rejects the completion script: {}", String::from_utf8_lossy(&check.stderr));
    for sub in subcommands() {
        assert!(script.contains(&sub), "bash completion lacks subcommand {sub}");
    }
    for flag in ["--rate-down", "--cc", "--workload", "--secret-file", "--shards", "--twin"] {
        assert!(script.contains(flag), "bash completion lacks {flag}");
    }
    // Sourced in a real shell, it registers a completion function for ccbench.
    let sourced = Command::new("bash").arg("-c").arg(format!("source {} && complete -p ccbench", file.display())).output().unwrap();
    assert!(sourced.status.success(), "sourcing failed: {}", String::from_utf8_lossy(&sourced.stderr));
    assert!(String::from_utf8_lossy(&sourced.stdout).contains("ccbench"));
    std::fs::remove_dir_all(dir).unwrap();
}

#[test]
fn zsh_and_fish_completions_know_every_subcommand() {
    let subs = subcommands();
    for shell in ["zsh", "fish", "elvish", "powershell"] {
        let script = stdout_of(&["completions", shell]);
        for sub in &subs {
            assert!(script.contains(sub.as_str()), "{shell} completion lacks subcommand {sub}");
        }
        assert!(script.contains("rate-down"), "{shell} completion lacks --rate-down");
    }
}

#[test]
fn an_unknown_shell_is_one_line_and_exit_2() {
    let out = ccbench(&["completions", "tcsh"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(out.stdout.is_empty());
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(err.trim_end().lines().count(), 1, "{err}");
    assert!(err.contains("tcsh") && err.contains("bash"), "{err}");
}

#[test]
fn the_man_page_renders_and_lists_every_subcommand() {
    let roff = stdout_of(&["man"]);
    assert!(roff.starts_with(".ie") || roff.contains(".TH ccbench 1"), "not a man page: {}", &roff[..roff.len().min(200)]);
    for sub in subcommands() {
        assert!(roff.contains(&sub), "man page lacks subcommand {sub}");
    }
    let dir = scratch("man");
    let page = dir.join("ccbench.1");
    std::fs::write(&page, &roff).unwrap();
    // man -l renders a file; MANWIDTH and no pager keep the output plain.
    let man = Command::new("man").arg("-l").arg(&page).env("MANPAGER", "cat").env("MANWIDTH", "100").env("MAN_KEEP_FORMATTING", "0").output();
    match man {
        Ok(out) => {
            assert!(out.status.success(), "man -l failed: {}", String::from_utf8_lossy(&out.stderr));
            let text = String::from_utf8_lossy(&out.stdout);
            assert!(text.contains("Congestion-control test bench"), "man -l output lacks the description: {text}");
            for sub in subcommands() {
                assert!(text.contains(&sub), "rendered man page lacks {sub}");
            }
        }
        // Without man-db the roff is still checked above; under CI it must be there.
        Err(e) => assert!(std::env::var("CI").as_deref() != Ok("true"), "man is missing under CI=true: {e}"),
    }
    std::fs::remove_dir_all(dir).unwrap();
}

#[test]
fn man_dir_writes_one_page_per_subcommand() {
    let dir = scratch("man-dir");
    let out = ccbench(&["man", "--dir", dir.to_str().unwrap()]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    assert!(dir.join("ccbench.1").is_file());
    for sub in subcommands() {
        let page = dir.join(format!("ccbench-{sub}.1"));
        assert!(page.is_file(), "no page {}", page.display());
    }
    let run = std::fs::read_to_string(dir.join("ccbench-run.1")).unwrap();
    assert!(run.contains("rate\\-down") || run.contains("rate-down"), "ccbench-run.1 lacks --rate-down");
    assert!(Path::new(&dir.join("ccbench-bench-emulator.1")).is_file(), "nested subcommands get pages too");
    std::fs::remove_dir_all(dir).unwrap();
}
