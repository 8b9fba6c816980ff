//! The backup that makes `--revert` exact: the previous bytes of every sysctl ccbench writes
//! and of its sysctl.d file (or the fact that there was none), taken before the first change
//! and never overwritten by a later apply, so that apply, apply, revert still restores the
//! state before the first apply.
//!
//! On disk, in [`super::STATE_DIR`]: `backup.json` (the sysctl values, the file's mode, and
//! where the backup was made) and `previous.conf` (the file's previous bytes, when it existed).
//! `backup.json` is written last, atomically: it exists only when the backup is complete.

use std::io::{self, Write as _};
use std::os::unix::fs::{MetadataExt, OpenOptionsExt, PermissionsExt};
use std::path::{Path, PathBuf};

use anyhow::{bail, Context};
use serde::{Deserialize, Serialize};

use super::facts;
use super::plan::{ALLOWED_KEY, CC_KEY, QDISC_KEY};

const MANIFEST: &str = "backup.json";
const PREVIOUS_FILE: &str = "previous.conf";

#[derive(Serialize, Deserialize, Debug, Clone, PartialEq, Eq)]
pub struct SysctlValue {
    pub key: String,
    /// Exactly as read from /proc/sys, newline included.
    pub value: String,
}

#[derive(Serialize, Deserialize, Debug, Clone, PartialEq, Eq)]
pub struct FileState {
    pub path: PathBuf,
    pub existed: bool,
    /// Permission bits of the previous file.
    pub mode: Option<u32>,
}

#[derive(Serialize, Deserialize, Debug, Clone)]
pub struct Backup {
    pub made_by: String,
    /// Inode of the network namespace the values were read in (`net:[INODE]`).
    pub netns: u64,
    pub boot_id: String,
    pub sysctls: Vec<SysctlValue>,
    pub file: FileState,
    /// The directories the first save created (outermost first), removed again by the revert.
    #[serde(default)]
    pub created_dirs: Vec<PathBuf>,
    /// The file's previous bytes, held in memory from [`Backup::take`] until saved.
    #[serde(skip)]
    previous: Option<Vec<u8>>,
}

pub fn netns_inode() -> io::Result<u64> {
    Ok(std::fs::metadata("/proc/self/ns/net")?.ino())
}

pub fn boot_id() -> String {
    std::fs::read_to_string("/proc/sys/kernel/random/boot_id").map(|s| s.trim().to_string()).unwrap_or_default()
}

/// Revert writes the algorithm before the allowed list: writing a default in the initial
/// namespace adds it to the allowed list, which the list's own restore then undoes.
fn rank(key: &str) -> usize {
    [CC_KEY, ALLOWED_KEY, QDISC_KEY].iter().position(|k| *k == key).unwrap_or(usize::MAX)
}

impl Backup {
    pub fn load(dir: &Path) -> anyhow::Result<Option<Backup>> {
        let path = dir.join(MANIFEST);
        match std::fs::read(&path) {
            Ok(bytes) => Ok(Some(serde_json::from_slice(&bytes).with_context(|| format!("reading the backup {}", path.display()))?)),
            Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(None),
            Err(e) => Err(e).with_context(|| format!("reading the backup {}", path.display())),
        }
    }

    /// A backup of the current values of `keys` and of `file`.
    pub fn take(made_by: String, keys: &[&str], file: &Path) -> anyhow::Result<Backup> {
        let existing = std::fs::metadata(file).ok();
        let previous = match existing {
            Some(_) => Some(std::fs::read(file).with_context(|| format!("reading {}", file.display()))?),
            None => None,
        };
        let mut b = Backup {
            made_by,
            netns: netns_inode()?,
            boot_id: boot_id(),
            sysctls: Vec::new(),
            file: FileState { path: file.to_path_buf(), existed: existing.is_some(), mode: existing.map(|m| m.permissions().mode() & 0o7777) },
            created_dirs: Vec::new(),
            previous,
        };
        b.add_missing(keys)?;
        Ok(b)
    }

    /// Records the current value of each key not recorded yet (an earlier apply never wrote
    /// it, so its value now is still the original). Returns whether anything was added.
    pub fn add_missing(&mut self, keys: &[&str]) -> anyhow::Result<bool> {
        let mut added = false;
        for key in keys {
            if !self.sysctls.iter().any(|s| s.key == *key) {
                let value = facts::read_raw(key).with_context(|| format!("reading {key}"))?;
                self.sysctls.push(SysctlValue { key: key.to_string(), value });
                added = true;
            }
        }
        self.sysctls.sort_by_key(|s| rank(&s.key));
        Ok(added)
    }

    /// Writes the backup into `dir`: the previous file's bytes first, the manifest last.
    pub fn save(&mut self, dir: &Path) -> anyhow::Result<()> {
        if !dir.join(MANIFEST).exists() {
            self.created_dirs = dir.ancestors().take_while(|d| !d.exists()).map(Path::to_path_buf).collect();
            self.created_dirs.reverse();
        }
        std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
        if let (true, Some(bytes)) = (self.file.existed && !dir.join(PREVIOUS_FILE).exists(), &self.previous) {
            write_atomic(&dir.join(PREVIOUS_FILE), bytes, 0o600)?;
        }
        let json = serde_json::to_vec_pretty(self)?;
        write_atomic(&dir.join(MANIFEST), &json, 0o600)
    }

    /// Puts back the file and every recorded sysctl, then deletes the backup. Stops at the
    /// first failure, keeping the backup for another try.
    pub fn restore(&self, dir: &Path) -> anyhow::Result<Vec<String>> {
        let here = netns_inode()?;
        if here != self.netns && boot_id() == self.boot_id {
            bail!("the backup in {} was made in network namespace net:[{}], and this is net:[{here}]: run --revert there", dir.display(), self.netns);
        }
        let previous = match self.file.existed {
            true => Some(std::fs::read(dir.join(PREVIOUS_FILE)).with_context(|| format!("reading the backup of {}", self.file.path.display()))?),
            false => None,
        };
        let mut done = self.put_back(previous.as_deref())?;
        done.extend(self.delete(dir)?);
        Ok(done)
    }

    /// Puts back the file (`previous`: its bytes, if it existed) and every recorded sysctl;
    /// returns what it changed.
    fn put_back(&self, previous: Option<&[u8]>) -> anyhow::Result<Vec<String>> {
        let mut done = Vec::new();
        let path = &self.file.path;
        match previous {
            Some(bytes) if std::fs::read(path).ok().as_deref() != Some(bytes) || file_mode(path) != self.file.mode => {
                write_atomic(path, bytes, self.file.mode.unwrap_or(0o644))?;
                done.push(format!("restored {} ({} bytes)", path.display(), bytes.len()));
            }
            Some(_) => {}
            None if path.exists() => {
                std::fs::remove_file(path).with_context(|| format!("removing {}", path.display()))?;
                done.push(format!("removed {} (it did not exist before)", path.display()));
            }
            None => {}
        }
        for s in &self.sysctls {
            let now = facts::read_raw(&s.key).with_context(|| format!("reading {}", s.key))?;
            if now != s.value {
                write_sysctl(&s.key, &s.value)?;
                done.push(format!("{} = {} (was {})", s.key, s.value.trim(), now.trim()));
            }
        }
        Ok(done)
    }

    /// Undoes a failed apply from the in-memory snapshot [`Backup::take`] made just before it.
    pub fn undo(&self) -> anyhow::Result<Vec<String>> {
        self.put_back(self.previous.as_deref())
    }

    /// Removes the backup's files and the directories it created.
    pub fn delete(&self, dir: &Path) -> anyhow::Result<Vec<String>> {
        let mut done = Vec::new();
        std::fs::remove_file(dir.join(PREVIOUS_FILE)).or_else(ignore_missing)?;
        std::fs::remove_file(dir.join(MANIFEST)).or_else(ignore_missing)?;
        for d in self.created_dirs.iter().rev() {
            if let Err(e) = std::fs::remove_dir(d) {
                done.push(format!("left {} (created by the apply): {e}", d.display()));
            }
        }
        Ok(done)
    }
}

fn ignore_missing(e: io::Error) -> io::Result<()> {
    if e.kind() == io::ErrorKind::NotFound {
        Ok(())
    } else {
        Err(e)
    }
}

fn file_mode(path: &Path) -> Option<u32> {
    std::fs::metadata(path).ok().map(|m| m.permissions().mode() & 0o7777)
}

/// Writes a sysctl and reads it back: the kernel may accept a write yet keep another value.
pub fn write_sysctl(key: &str, value: &str) -> anyhow::Result<()> {
    let path = facts::proc_path(key);
    std::fs::write(&path, value.as_bytes()).map_err(|e| explain_write(key, value, e))?;
    let back = facts::read_raw(key).with_context(|| format!("reading back {key}"))?;
    if back.trim() != value.trim() {
        bail!("wrote {:?} to {key}, but it reads {:?}", value.trim(), back.trim());
    }
    Ok(())
}

fn explain_write(key: &str, value: &str, e: io::Error) -> anyhow::Error {
    let why = match e.raw_os_error() {
        Some(libc::EPERM) if key == CC_KEY => " (outside the host's network namespace only algorithms in tcp_allowed_congestion_control are accepted)",
        Some(libc::ENOENT) => " (the kernel does not know this value)",
        Some(libc::EACCES) => " (read-only here: host-wide, and this is not the host's network namespace)",
        _ => "",
    };
    anyhow::anyhow!("writing {:?} to {key}: {e}{why}", value.trim())
}

/// Replaces `path` whole or not at all: a temporary file beside it (named so that no
/// sysctl.d reader takes it: not `*.conf`), synced, then renamed over it.
pub fn write_atomic(path: &Path, bytes: &[u8], mode: u32) -> anyhow::Result<()> {
    let dir = path.parent().unwrap_or(Path::new("/"));
    let name = path.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
    let tmp = dir.join(format!(".{name}.ccbench-tmp"));
    let result = (|| -> io::Result<()> {
        let mut f = std::fs::OpenOptions::new().write(true).create(true).truncate(true).mode(mode).open(&tmp)?;
        f.set_permissions(std::fs::Permissions::from_mode(mode))?;
        f.write_all(bytes)?;
        f.sync_all()?;
        std::fs::rename(&tmp, path)?;
        std::fs::File::open(dir)?.sync_all()
    })();
    if result.is_err() {
        let _ = std::fs::remove_file(&tmp);
    }
    result.with_context(|| format!("writing {}", path.display()))
}
