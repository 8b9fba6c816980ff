//! `ccbench merge`: one result set from a sweep's OUT (or from the shard directories older
//! ccbench wrote), every cell of the grid complete in exactly one place. Merging again replaces
//! the earlier merge, so a merge after more cells finished brings it up to date.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use anyhow::Context;

use super::queue::{read_plan, PLAN_FILE};
use super::store::{copy_tree, finished, grid_order, read_index, write_index, GridCell, SweepMeta, CELLS_DIR, SWEEP_FILE};
use super::MergeArgs;
use crate::error::{precondition, UsageError};

fn is_sweep(d: &Path) -> bool {
    d.join(PLAN_FILE).exists() || d.join(SWEEP_FILE).exists()
}

/// A sweep directory's plan: its `plan.json`, or what its `sweep.json` says.
fn read_meta(d: &Path) -> Result<SweepMeta, String> {
    if d.join(PLAN_FILE).exists() {
        read_plan(d)
    } else {
        read_index(d).map(|i| i.meta)
    }
}

/// The sweep directories among `dirs`: each itself, or a directory holding shard directories.
fn expand(dirs: &[PathBuf]) -> Result<Vec<PathBuf>, UsageError> {
    let mut found = Vec::new();
    for d in dirs {
        if is_sweep(d) {
            found.push(d.clone());
            continue;
        }
        let mut shards: Vec<PathBuf> = std::fs::read_dir(d)
            .into_iter()
            .flatten()
            .flatten()
            .map(|e| e.path())
            .filter(|p| p.file_name().is_some_and(|n| n.to_string_lossy().starts_with("shard-")) && is_sweep(p))
            .collect();
        if shards.is_empty() {
            return Err(UsageError::new(
                "merge directory",
                d.display(),
                "a sweep's OUT (with plan.json or sweep.json), or a directory holding shard-I-of-N directories",
            ));
        }
        shards.sort();
        found.extend(shards);
    }
    let mut unique: Vec<PathBuf> = Vec::new();
    for d in found {
        let canon = d.canonicalize().unwrap_or_else(|_| d.clone());
        if !unique.iter().any(|u| u.canonicalize().unwrap_or_else(|_| u.clone()) == canon) {
            unique.push(d);
        }
    }
    Ok(unique)
}

fn listed(items: &[String]) -> String {
    const SHOWN: usize = 8;
    let mut text = items.iter().take(SHOWN).cloned().collect::<Vec<_>>().join(", ");
    if items.len() > SHOWN {
        text.push_str(&format!(" and {} more", items.len() - SHOWN));
    }
    text
}

/// Whether `out` may take the merge: absent, empty, or an earlier merge (which is replaced).
fn check_target(out: &Path) -> Result<bool, UsageError> {
    if out.exists() && !out.is_dir() {
        return Err(UsageError::new("--out", out.display(), "a directory for the merged sweep (this is a file)"));
    }
    let empty = std::fs::read_dir(out).map(|mut d| d.next().is_none()).unwrap_or(true);
    if empty {
        return Ok(false);
    }
    match read_index(out) {
        Ok(index) if !index.meta.merged_from.is_empty() && !out.join(PLAN_FILE).exists() => Ok(true),
        _ => Err(UsageError::new("--out", out.display(), "a new or empty directory for the merged sweep, or an earlier merge's to replace")),
    }
}

pub fn merge(args: MergeArgs) -> anyhow::Result<i32> {
    let dirs = expand(&args.dirs)?;
    let mut metas = Vec::new();
    for d in &dirs {
        let meta = read_meta(d).map_err(|e| UsageError::new("merge directory", d.display(), format!("a sweep's directory: {e}")))?;
        metas.push((d.clone(), meta));
    }
    let (first_dir, first) = &metas[0];
    for (d, meta) in &metas[1..] {
        if meta.spec.hash != first.spec.hash {
            return Err(precondition(format!(
                "mixed specs: {} is spec {} ({}), {} is spec {} ({}); merge the shards of one sweep",
                first_dir.display(),
                first.spec.hash,
                first.spec.file,
                d.display(),
                meta.spec.hash,
                meta.spec.file
            ))
            .into());
        }
        let version = |m: &SweepMeta| format!("{} ({})", m.ccbench_version, m.git_revision);
        if version(meta) != version(first) {
            return Err(precondition(format!(
                "mixed ccbench versions: {} was made by ccbench {}, {} by {}; run every shard with one build",
                first_dir.display(),
                version(first),
                d.display(),
                version(meta)
            ))
            .into());
        }
    }
    let hash = first.spec.hash.clone();
    let mut source: BTreeMap<String, PathBuf> = BTreeMap::new();
    for (d, _) in &metas {
        for g in &first.grid {
            let cell_dir = d.join(CELLS_DIR).join(&g.id);
            if finished(&cell_dir, &hash).is_some() {
                if let Some(other) = source.get(&g.id) {
                    return Err(precondition(format!("cell {} is in both {} and {}; give each shard once", g.id, other.display(), d.display())).into());
                }
                source.insert(g.id.clone(), cell_dir);
            }
        }
    }
    let missing: Vec<String> = first.grid.iter().filter(|g| !source.contains_key(&g.id)).map(|g| g.id.clone()).collect();
    if !missing.is_empty() && !args.partial {
        return Err(precondition(format!(
            "{} of {} cells missing (not complete in any directory given): {} (ccbench status shows where they stand; --partial merges the rest)",
            missing.len(),
            first.grid.len(),
            listed(&missing)
        ))
        .into());
    }
    let out = &args.out;
    let replace = check_target(out)?;
    if let Some(parent) = out.parent().filter(|p| !p.as_os_str().is_empty() && !p.is_dir()) {
        return Err(UsageError::new("--out", out.display(), format!("a directory whose parent exists ({} does not)", parent.display())).into());
    }
    // Built beside the target and renamed into place: a reader sees the earlier merge or this
    // one, never half of either.
    let name = out.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_else(|| "merged".into());
    let staging = out.with_file_name(format!(".{name}.merging-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&staging);
    let built = build(&staging, &dirs, first, &source);
    let table = match built {
        Ok(t) => t,
        Err(e) => {
            let _ = std::fs::remove_dir_all(&staging);
            return Err(e);
        }
    };
    if out.exists() {
        replace_dir(&staging, out, &name)?;
    } else {
        std::fs::rename(&staging, out).with_context(|| format!("moving the merge into {}", out.display()))?;
    }
    println!(
        "Merged    {} directories: {} cells of {}{}{}",
        dirs.len(),
        source.len(),
        if first.description.is_empty() { &first.spec.file } else { &first.description },
        if replace { " (replacing the earlier merge)" } else { "" },
        if missing.is_empty() { String::new() } else { format!("; {} missing: {}", missing.len(), listed(&missing)) }
    );
    println!("\n{table}");
    println!("Results   {} (every run: {})", out.join(SWEEP_FILE).display(), out.join(ccbench::export::csv::RUNS_FILE).display());
    Ok(0)
}

/// Puts `new` in the place of the directory `out` in one step: `renameat2(RENAME_EXCHANGE)`
/// swaps the two, so a reader of `out` finds the earlier merge or this one and never nothing;
/// the earlier one, now at `new`'s name, is then removed. Where the file system cannot swap
/// (EINVAL: NFS, some FUSE file systems; ENOSYS: old kernels) it falls back to two renames,
/// with `out` absent for a moment between them. Returns whether it swapped.
fn replace_dir(new: &Path, out: &Path, name: &str) -> anyhow::Result<bool> {
    use std::os::unix::ffi::OsStrExt;
    let c = |p: &Path| std::ffi::CString::new(p.as_os_str().as_bytes()).context("a path with a NUL byte");
    let (from, to) = (c(new)?, c(out)?);
    // SAFETY: two valid C strings, relative to the working directory.
    let swapped = unsafe { libc::renameat2(libc::AT_FDCWD, from.as_ptr(), libc::AT_FDCWD, to.as_ptr(), libc::RENAME_EXCHANGE) } == 0;
    if swapped {
        std::fs::remove_dir_all(new).with_context(|| format!("removing the earlier merge (now {})", new.display()))?;
        return Ok(true);
    }
    let e = std::io::Error::last_os_error();
    if !matches!(e.raw_os_error(), Some(libc::EINVAL) | Some(libc::ENOSYS)) {
        return Err(e).with_context(|| format!("swapping the merge into {}", out.display()));
    }
    let old = out.with_file_name(format!(".{name}.replaced-{}", std::process::id()));
    std::fs::rename(out, &old).with_context(|| format!("moving the earlier merge {} aside", out.display()))?;
    std::fs::rename(new, out).with_context(|| format!("moving the merge into {}", out.display()))?;
    std::fs::remove_dir_all(&old).with_context(|| format!("removing the earlier merge (now {})", old.display()))?;
    Ok(false)
}

/// Writes the merged result set into `to`: the cells' files (hard links where possible) and the
/// index across them, in the grid's order (the spec's, as a one-shot sweep prints it).
fn build(to: &Path, dirs: &[PathBuf], first: &SweepMeta, source: &BTreeMap<String, PathBuf>) -> anyhow::Result<String> {
    for (id, from) in source {
        let target = to.join(CELLS_DIR).join(id);
        copy_tree(from, &target).with_context(|| format!("copying {} to {}", from.display(), target.display()))?;
    }
    let meta = SweepMeta { shard: None, merged_from: dirs.iter().map(|d| d.display().to_string()).collect(), ..first.clone() };
    let order = grid_order(&meta);
    let cells: Vec<&GridCell> = order.iter().map(|&i| &meta.grid[i]).collect();
    Ok(write_index(to, &meta, &cells, false)?.table)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Issue 27 §14: the earlier merge is swapped for the new one in one rename.
    #[test]
    fn a_merge_replaces_the_earlier_one_in_one_swap() {
        let dir = std::env::temp_dir().join(format!("ccbench-merge-swap-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        let (out, staging) = (dir.join("merged"), dir.join(".merged.merging"));
        for (d, text) in [(&out, "earlier"), (&staging, "new")] {
            std::fs::create_dir_all(d.join("cells")).unwrap();
            std::fs::write(d.join("sweep.json"), text).unwrap();
        }
        // The directory's inode: after a swap, the path names the staging directory's.
        use std::os::unix::fs::MetadataExt;
        let new_inode = std::fs::metadata(&staging).unwrap().ino();
        assert!(replace_dir(&staging, &out, "merged").unwrap(), "swapped with RENAME_EXCHANGE (the temporary directory's file system has it)");
        assert_eq!(std::fs::read_to_string(out.join("sweep.json")).unwrap(), "new");
        assert_eq!(std::fs::metadata(&out).unwrap().ino(), new_inode);
        assert!(!staging.exists(), "the earlier merge, swapped to the staging name, is removed");
        assert_eq!(std::fs::read_dir(&dir).unwrap().count(), 1, "nothing else left beside it");
        let _ = std::fs::remove_dir_all(dir);
    }
}
