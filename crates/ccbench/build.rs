//! Records the git revision the binary was built from, for every result's provenance
//! (`src/provenance.rs`). Only this crate is stamped: a commit rebuilds the binary and its
//! library, never the data model or anything below.
//!
//! Cargo re-runs this script when a watched file changes, and on *every* build when a watched
//! path does not exist; so the paths come from git itself (`--git-dir`, `--git-common-dir`),
//! which in a `git worktree` (where `.git` is a file) are not `../../.git/…`.
use std::path::PathBuf;
use std::process::Command;

fn git(args: &[&str]) -> Option<String> {
    let out = Command::new("git").args(args).output().ok().filter(|o| o.status.success())?;
    Some(String::from_utf8_lossy(&out.stdout).trim().to_string()).filter(|s| !s.is_empty())
}

fn main() {
    let rev = git(&["rev-parse", "--short=12", "HEAD"]).unwrap_or_else(|| "unknown".into());
    let dirty = Command::new("git").args(["status", "--porcelain", "--untracked-files=no"]).output().ok().map(|o| !o.stdout.is_empty()).unwrap_or(false);
    println!("cargo:rustc-env=CCBENCH_GIT_REV={}{}", rev, if dirty { "-dirty" } else { "" });
    // Outside a git checkout (a source tarball) nothing is watched: the stamp is "unknown" and
    // stays so; cargo then re-runs the script only when this crate's sources change.
    let watched = |p: PathBuf| {
        if p.exists() {
            println!("cargo:rerun-if-changed={}", p.display());
        }
    };
    let Some(dir) = git(&["rev-parse", "--path-format=absolute", "--git-dir"]).map(PathBuf::from) else {
        println!("cargo:rerun-if-changed=build.rs");
        return;
    };
    // HEAD and the index are per worktree; the branch HEAD names lives in the common dir,
    // loose or packed.
    watched(dir.join("HEAD"));
    watched(dir.join("index"));
    if let Some(common) = git(&["rev-parse", "--path-format=absolute", "--git-common-dir"]).map(PathBuf::from) {
        if let Some(branch) = git(&["symbolic-ref", "-q", "HEAD"]) {
            watched(common.join(branch));
        }
        watched(common.join("packed-refs"));
    }
    println!("cargo:rerun-if-changed=build.rs");
}
