//! The work queue a sweep's tasks share in OUT, on a file system every node mounts.
//!
//! ```text
//! OUT/plan.json             the plan (spec hash, build, every cell): made once, by the first task
//! OUT/queue/<id>.claim      a task is running the cell: created with O_EXCL, its mtime the lease
//! OUT/running/<id>@<token>/ that attempt's files and log, while it runs
//! OUT/cells/<id>/           the cell, finished (complete, or failed after its retries)
//! ```
//!
//! A task takes a cell by creating its claim with `O_CREAT|O_EXCL`, which exactly one task wins,
//! and renews the lease by touching the claim. It runs the cell into its own attempt directory
//! and lands it with one `rename` onto `cells/<id>`, which fails when the directory is already
//! there and not empty: so a cell has one result even when two tasks ran it (a lease that lapsed
//! under a task that was only slow). A claim whose lease lapsed (its task died with its node) is
//! taken over by renaming it away, which again only one task wins. What the file system must
//! provide: atomic `O_EXCL` create, `rename` and `link` (NFSv3 and later, Lustre, CephFS, GPFS,
//! any local file system), and clocks on the nodes that agree to well within a lease.

use std::ffi::CString;
use std::io::Write;
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant, SystemTime};

use anyhow::Context;
use serde::{Deserialize, Serialize};

use super::names::{host_name, unique_name};
use super::owner;
use super::store::{read_json, CellRecord, SweepMeta, CELLS_DIR, CELL_FILE, LOG_FILE, REVISION, VERSION};
use crate::error::UsageError;

pub const PLAN_FILE: &str = "plan.json";
pub const QUEUE_DIR: &str = "queue";
pub const RUNNING_DIR: &str = "running";
const CLAIM_SUFFIX: &str = ".claim";

/// How long a claim stands without being renewed, unless `--lease` says otherwise: long
/// enough that a file system's hiccup does not cost a cell, short enough that a dead node's
/// cells are taken over within minutes.
pub const DEFAULT_LEASE: Duration = Duration::from_secs(300);
/// Renewals per lease: a task that misses a few is still inside its lease.
const RENEWALS_PER_LEASE: u32 = 5;

/// Where a PID means something: the kernel's boot and this process's PID namespace. Two tasks
/// that share a host name need not share either (a container with `--pid`, `unshare -p`, a pod
/// given its node's host name, a reboot), and a PID from another namespace says nothing here.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PidScope {
    /// `/proc/sys/kernel/random/boot_id`: new at every boot.
    pub boot_id: String,
    /// The inode of `/proc/self/ns/pid` (namespaces(7): two processes are in one PID namespace
    /// when these, on one boot, are equal).
    pub pid_ns: u64,
}

impl PidScope {
    /// This process's, or `None` when /proc does not tell (then no PID of a claim is judged).
    pub fn own() -> Option<PidScope> {
        let boot_id = std::fs::read_to_string("/proc/sys/kernel/random/boot_id").ok()?.trim().to_string();
        let link = std::fs::read_link("/proc/self/ns/pid").ok()?;
        // "pid:[4026531836]"
        let pid_ns = link.to_str()?.strip_prefix("pid:[")?.strip_suffix(']')?.parse().ok()?;
        (!boot_id.is_empty()).then_some(PidScope { boot_id, pid_ns })
    }
}

fn own_scope() -> Option<&'static PidScope> {
    static SCOPE: std::sync::OnceLock<Option<PidScope>> = std::sync::OnceLock::new();
    SCOPE.get_or_init(PidScope::own).as_ref()
}

/// Who holds a claim: the claim file's content.
#[derive(Serialize, Deserialize, Clone, Debug)]
pub struct Claim {
    /// The task's name (`--worker`, e.g. a Slurm job and array task).
    pub worker: String,
    pub host: String,
    pub pid: u32,
    /// This attempt's own: a claim is a task's only while it holds its token.
    pub token: String,
    pub since: String,
    pub lease_secs: u64,
    /// The holder's boot and PID namespace ([`PidScope`]): its `pid` is tested only by a task
    /// that shares both. Absent in claims of older ccbench: those are judged by their lease.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub boot_id: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pid_ns: Option<u64>,
}

/// What a task can tell of a claim's holder.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Holder {
    /// Its process is running: same boot, same PID namespace, and `kill(pid, 0)` finds it.
    Alive,
    /// Its process is gone: same boot, same PID namespace, and no such PID.
    Gone,
    /// Out of this task's sight (another host, boot or PID namespace, or an older claim): only
    /// the lease tells.
    Unknown,
}

impl Claim {
    /// Whether the holder is seen to be running, from a task in `scope`.
    pub fn holder(&self, scope: Option<&PidScope>) -> Holder {
        let same = match (scope, &self.boot_id, self.pid_ns) {
            (Some(s), Some(boot), Some(ns)) => *boot == s.boot_id && ns == s.pid_ns,
            _ => false,
        };
        match (same, same && process_alive(self.pid)) {
            (false, _) => Holder::Unknown,
            (true, true) => Holder::Alive,
            (true, false) => Holder::Gone,
        }
    }
}

/// One cell as the queue sees it.
#[derive(Debug)]
pub enum CellState {
    /// Finished complete under this plan.
    Done,
    /// Failed on every attempt.
    Failed(CellRecord),
    /// Claimed: by whom (unless the claim is being written), for how long since its last renewal,
    /// whether that is past its lease or its holder is seen gone (another task will take it
    /// over), and what this task can tell of the holder.
    Running { claim: Option<Claim>, age: Duration, lapsed: bool, holder: Holder },
    /// Neither run nor claimed.
    Missing,
}

/// A sweep's OUT, joined: its plan matches this task's.
pub struct Queue {
    pub out: PathBuf,
    pub hash: String,
    lease: Duration,
    host: String,
}

/// A cell this task holds: its claim, its attempt's directory, and the flags that stop it.
pub struct Held {
    pub id: String,
    pub token: String,
    pub claim_file: PathBuf,
    pub attempt_dir: PathBuf,
    /// A failed result that `--retry-failed` moved aside; put back if this attempt is abandoned.
    previous: Option<PathBuf>,
    /// Set when the attempt must stop: Ctrl-C or SIGTERM, or the lease was lost.
    pub stop: AtomicBool,
    /// Set when another task took the claim over (this task's lease lapsed).
    pub lost: AtomicBool,
}

/// Reads a sweep's plan.
pub fn read_plan(out: &Path) -> Result<SweepMeta, String> {
    let file = out.join(PLAN_FILE);
    let text = std::fs::read_to_string(&file).map_err(|e| format!("no readable {} ({e})", file.display()))?;
    serde_json::from_str(&text).map_err(|e| format!("{} is not a sweep's plan ({e})", file.display()))
}

fn is_ours(name: &str) -> bool {
    [QUEUE_DIR, CELLS_DIR, RUNNING_DIR, PLAN_FILE].contains(&name) || name.starts_with(".plan.json.")
}

/// How long a task that finds a starting sweep's files, but no plan yet, waits for the plan: a
/// network file system's cache of "no such file" can outlive the plan's creation by seconds.
const PLAN_WAIT: Duration = Duration::from_secs(10);

/// Whether `out` has (or, within `wait`, gets) a plan, when it looks like a sweep another task is
/// starting: it has the queue's directories, which a task makes after the plan. A directory
/// without them (a merged result set, anything else) is not waited for.
fn wait_for_plan(out: &Path, wait: Duration) -> bool {
    let plan = out.join(PLAN_FILE);
    if plan.exists() {
        return true;
    }
    if !out.join(QUEUE_DIR).is_dir() {
        return false;
    }
    let deadline = Instant::now() + wait;
    while Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(50));
        // A fresh open, not a cached stat, where the file system caches lookups (NFS).
        if std::fs::File::open(&plan).is_ok() {
            return true;
        }
    }
    false
}

fn create_dir(dir: &Path) -> anyhow::Result<()> {
    if !dir.is_dir() {
        std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
        owner::give(dir);
    }
    Ok(())
}

impl Queue {
    /// Joins the sweep in `out`, or starts it there by recording `meta` as its plan. Refuses a
    /// directory that holds another plan (another spec, other flags, another ccbench build) or
    /// anything that is not a sweep's.
    pub fn open(out: &Path, meta: &SweepMeta, lease: Duration) -> anyhow::Result<Queue> {
        let plan_file = out.join(PLAN_FILE);
        if !plan_file.exists() {
            let foreign = std::fs::read_dir(out).into_iter().flatten().flatten().find(|e| !is_ours(&e.file_name().to_string_lossy()));
            // Another task may have made the plan since we looked, and its index after it: that
            // is a sweep starting, not a directory to refuse (a task that started at the same
            // moment was refused about once in 250 starts).
            let starting = foreign.is_some() && wait_for_plan(out, PLAN_WAIT);
            if let Some(e) = foreign.filter(|_| !starting) {
                let why = if e.file_name() == super::store::SWEEP_FILE {
                    "a new or empty directory, or a sweep's to resume (this one has sweep.json but no plan.json: a merged result set, or a sweep of an older ccbench)"
                } else {
                    "a new or empty directory, or a sweep's to resume (this one has no plan.json)"
                };
                return Err(UsageError::new("--out", out.display(), why).into());
            }
        }
        if !plan_file.exists() {
            create_dir(out)?;
            // Written whole under a name of our own, then linked into place: link(2) fails if the
            // plan exists, so exactly one task's plan is the plan, and no task reads half of one.
            let tmp = out.join(format!(".plan.json.{}", unique_name()));
            std::fs::write(&tmp, serde_json::to_string_pretty(meta)?).with_context(|| format!("writing {}", tmp.display()))?;
            owner::give(&tmp);
            let linked = std::fs::hard_link(&tmp, &plan_file);
            let _ = std::fs::remove_file(&tmp);
            match linked {
                Ok(()) => {}
                Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {}
                Err(e) => return Err(e).with_context(|| format!("creating {}", plan_file.display())),
            }
        }
        let plan = read_plan(out).map_err(|e| UsageError::new("--out", out.display(), format!("a sweep's directory to resume: {e}")))?;
        if plan.spec.hash != meta.spec.hash {
            return Err(UsageError::new(
                "--out",
                out.display(),
                format!(
                    "a directory of this sweep to resume, or a new one: it holds a sweep of another spec (spec {} from {}, this one {})",
                    plan.spec.hash, plan.spec.file, meta.spec.hash
                ),
            )
            .into());
        }
        if (plan.ccbench_version.as_str(), plan.git_revision.as_str()) != (VERSION, REVISION) {
            return Err(UsageError::new(
                "--out",
                out.display(),
                format!(
                    "a directory of this ccbench to resume: it was made by ccbench {} ({}), this is {VERSION} ({REVISION}); use a new --out",
                    plan.ccbench_version, plan.git_revision
                ),
            )
            .into());
        }
        for d in [QUEUE_DIR, CELLS_DIR, RUNNING_DIR] {
            create_dir(&out.join(d))?;
        }
        Ok(Queue { out: out.to_path_buf(), hash: meta.spec.hash.clone(), lease, host: host_name() })
    }

    /// The queue of a sweep's OUT, for reading only (`ccbench status`).
    pub fn read(out: &Path) -> Result<(Queue, SweepMeta), String> {
        let plan = read_plan(out)?;
        let queue = Queue { out: out.to_path_buf(), hash: plan.spec.hash.clone(), lease: DEFAULT_LEASE, host: host_name() };
        Ok((queue, plan))
    }

    pub fn cell_dir(&self, id: &str) -> PathBuf {
        self.out.join(CELLS_DIR).join(id)
    }

    fn claim_file(&self, id: &str) -> PathBuf {
        self.out.join(QUEUE_DIR).join(format!("{id}{CLAIM_SUFFIX}"))
    }

    /// Where the cell stands.
    pub fn state(&self, id: &str) -> CellState {
        let dir = self.cell_dir(id);
        if let Some(record) = read_json(&dir.join(CELL_FILE)).and_then(|v| serde_json::from_value::<CellRecord>(v).ok()) {
            if super::store::finished(&dir, &self.hash).is_some() {
                return CellState::Done;
            }
            if record.status == "failed" {
                return CellState::Failed(record);
            }
        }
        match self.claim_of(&self.claim_file(id)) {
            Some((claim, age, lapsed, holder)) => CellState::Running { claim, age, lapsed, holder },
            None => CellState::Missing,
        }
    }

    /// A claim file's holder, the time since its last renewal, whether its lease lapsed (past
    /// its length, or its process seen gone), and what can be told of the holder. The PID is
    /// tested only where it means the same process: same boot, same PID namespace; a task in
    /// another (a container with its own PID namespace on the same host) would otherwise find
    /// no such PID and take a live holder's cell.
    fn claim_of(&self, file: &Path) -> Option<(Option<Claim>, Duration, bool, Holder)> {
        let modified = std::fs::symlink_metadata(file).ok()?.modified().ok()?;
        let age = SystemTime::now().duration_since(modified).unwrap_or_default();
        let claim: Option<Claim> = read_json(file).and_then(|v| serde_json::from_value(v).ok());
        let lease = claim.as_ref().map_or(self.lease, |c| Duration::from_secs(c.lease_secs));
        let holder = claim.as_ref().map_or(Holder::Unknown, |c| c.holder(own_scope()));
        Some((claim, age, age > lease || holder == Holder::Gone, holder))
    }

    fn new_token(&self) -> String {
        unique_name()
    }

    /// Whether the cell has a result this task must not replace: complete, or failed (unless
    /// `retry_before` is given and it failed before then: `--retry-failed` runs again the cells
    /// that had failed when its task started, once, not each failure of its own round again).
    fn settled(&self, id: &str, retry_before: Option<SystemTime>) -> bool {
        match self.state_of_result(id) {
            Some(status) if status == "failed" => match retry_before {
                Some(start) => self.failed_at(id).is_none_or(|t| t >= start),
                None => true,
            },
            Some(_) => true,
            None => false,
        }
    }

    /// When the cell's failed result landed: its record's mtime (the file server's clock).
    fn failed_at(&self, id: &str) -> Option<SystemTime> {
        std::fs::metadata(self.cell_dir(id).join(CELL_FILE)).ok()?.modified().ok()
    }

    /// Whether a cell failed and stays failed for a task started at `retry_before` (see
    /// [`Queue::settled`]): not run by it.
    pub fn failed_for(&self, id: &str, retry_before: Option<SystemTime>) -> bool {
        self.state_of_result(id).is_some_and(|s| s == "failed") && self.settled(id, retry_before)
    }

    fn state_of_result(&self, id: &str) -> Option<String> {
        let dir = self.cell_dir(id);
        if !dir.exists() {
            return None;
        }
        let status = read_json(&dir.join(CELL_FILE)).and_then(|v| v["status"].as_str().map(str::to_string));
        // A directory without a readable record is someone's result being renamed into place.
        Some(status.unwrap_or_else(|| "complete".into()))
    }

    /// Takes the cell if nobody has it: `Ok(None)` when it is finished or another task holds it.
    /// A claim whose lease lapsed is taken over (`took_over` names whose it was). A failed cell
    /// is taken only when it failed before `retry_before` (`--retry-failed`).
    pub fn try_claim(&self, id: &str, worker: &str, retry_before: Option<SystemTime>, took_over: &mut Option<Claim>) -> anyhow::Result<Option<Held>> {
        let file = self.claim_file(id);
        for _ in 0..3 {
            if self.settled(id, retry_before) {
                return Ok(None);
            }
            match std::fs::OpenOptions::new().write(true).create_new(true).open(&file) {
                Ok(mut f) => {
                    let token = self.new_token();
                    let claim = Claim {
                        worker: worker.to_string(),
                        host: self.host.clone(),
                        pid: std::process::id(),
                        token: token.clone(),
                        since: ccbench::provenance::now_rfc3339(),
                        lease_secs: self.lease.as_secs().max(1),
                        boot_id: own_scope().map(|s| s.boot_id.clone()),
                        pid_ns: own_scope().map(|s| s.pid_ns),
                    };
                    f.write_all(serde_json::to_string(&claim)?.as_bytes()).with_context(|| format!("writing {}", file.display()))?;
                    drop(f);
                    owner::give(&file);
                    let mut held = Held {
                        id: id.to_string(),
                        attempt_dir: self.out.join(RUNNING_DIR).join(format!("{id}@{token}")),
                        token,
                        claim_file: file.clone(),
                        previous: None,
                        stop: AtomicBool::new(false),
                        lost: AtomicBool::new(false),
                    };
                    // The previous holder may have landed the cell and let go between our look
                    // and our claim.
                    if self.settled(id, retry_before) {
                        self.let_go(&held);
                        return Ok(None);
                    }
                    if self.state_of_result(id).is_some() {
                        let aside = held.attempt_dir.with_extension("previous");
                        std::fs::rename(self.cell_dir(id), &aside).with_context(|| format!("moving the failed cell {id} aside"))?;
                        held.previous = Some(aside);
                    }
                    std::fs::create_dir_all(&held.attempt_dir).with_context(|| format!("creating {}", held.attempt_dir.display()))?;
                    owner::give(&held.attempt_dir);
                    // A retried cell's log goes on from the failed attempts': every attempt's lines stay.
                    if let Some(previous) = &held.previous {
                        let log = held.attempt_dir.join(LOG_FILE);
                        if std::fs::copy(previous.join(LOG_FILE), &log).is_ok() {
                            owner::give(&log);
                        }
                    }
                    return Ok(Some(held));
                }
                Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {
                    let Some((claim, _, lapsed, _)) = self.claim_of(&file) else { continue };
                    if !lapsed {
                        return Ok(None);
                    }
                    // Renaming the lapsed claim away is the takeover: of all the tasks that saw it
                    // lapse, only one rename finds it.
                    let aside = file.with_extension(format!("lapsed-{}", self.new_token()));
                    match std::fs::rename(&file, &aside) {
                        Ok(()) => {
                            let _ = std::fs::remove_file(&aside);
                            if let Some(c) = &claim {
                                self.clear_attempt_of(id, c);
                            }
                            *took_over = claim;
                        }
                        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
                        Err(e) => return Err(e).with_context(|| format!("taking over {}", file.display())),
                    }
                }
                Err(e) => return Err(e).with_context(|| format!("claiming {}", file.display())),
            }
        }
        Ok(None)
    }

    /// What the holder of a claim just taken over left in `running/`: its attempt is removed
    /// when its process is seen gone (a killed task); one whose holder may still run (out of
    /// sight, only slow) is left for it to remove, but given to sudo's caller, so that the
    /// user can delete OUT if it never does. A failed result it had moved aside to run again
    /// goes back into place (this task then takes the cell only if it may retry it).
    fn clear_attempt_of(&self, id: &str, c: &Claim) {
        let attempt = self.out.join(RUNNING_DIR).join(format!("{id}@{}", c.token));
        let previous = attempt.with_extension("previous");
        if previous.is_dir() && !self.cell_dir(id).exists() {
            let _ = std::fs::rename(&previous, self.cell_dir(id));
        }
        if c.holder(own_scope()) == Holder::Gone {
            let _ = std::fs::remove_dir_all(&attempt);
            let _ = std::fs::remove_dir_all(&previous);
        } else {
            owner::give_tree(&attempt);
        }
    }

    /// Whether `held` still holds its claim.
    pub fn holds(&self, held: &Held) -> bool {
        read_json(&held.claim_file).and_then(|v| v["token"].as_str().map(|t| t == held.token)).unwrap_or(false)
    }

    /// Renews the lease: the claim's mtime, set by the file server's clock where it has one.
    fn renew(&self, held: &Held) -> bool {
        if !self.holds(held) {
            return false;
        }
        let Ok(path) = CString::new(held.claim_file.as_os_str().as_bytes()) else { return false };
        // SAFETY: a valid C string; null times mean "now".
        unsafe { libc::utimensat(libc::AT_FDCWD, path.as_ptr(), std::ptr::null(), 0) == 0 }
    }

    /// Lets go of the claim, if it is still ours.
    fn let_go(&self, held: &Held) {
        if self.holds(held) {
            let _ = std::fs::remove_file(&held.claim_file);
        }
    }

    /// Puts the attempt's directory in place as the cell's result, then lets go of the claim.
    /// `false`: another task's result got there first (this one is thrown away).
    pub fn land(&self, held: &Held) -> anyhow::Result<bool> {
        owner::give_tree(&held.attempt_dir);
        let landed = if held.lost.load(Ordering::SeqCst) && !self.holds(held) {
            false
        } else {
            match std::fs::rename(&held.attempt_dir, self.cell_dir(&held.id)) {
                Ok(()) => true,
                // ENOTEMPTY or EEXIST: the cell's directory is there, with another task's result.
                Err(e) if matches!(e.raw_os_error(), Some(libc::ENOTEMPTY) | Some(libc::EEXIST)) => false,
                Err(e) => return Err(e).with_context(|| format!("moving {} into {}", held.attempt_dir.display(), self.cell_dir(&held.id).display())),
            }
        };
        if landed {
            if let Some(previous) = &held.previous {
                let _ = std::fs::remove_dir_all(previous);
            }
        } else {
            let _ = std::fs::remove_dir_all(&held.attempt_dir);
        }
        self.let_go(held);
        Ok(landed)
    }

    /// Gives the cell back unfinished (Ctrl-C, a lost lease, an error): its attempt is thrown
    /// away, a failed result moved aside is put back, and another task may take it.
    pub fn abandon(&self, held: &Held) {
        let _ = std::fs::remove_dir_all(&held.attempt_dir);
        if let Some(previous) = &held.previous {
            let _ = std::fs::rename(previous, self.cell_dir(&held.id));
        }
        self.let_go(held);
    }
}

/// Whether a process of this PID namespace is alive.
fn process_alive(pid: u32) -> bool {
    // SAFETY: signal 0 only checks that the process exists.
    unsafe { libc::kill(pid as libc::pid_t, 0) == 0 || std::io::Error::last_os_error().raw_os_error() != Some(libc::ESRCH) }
}

/// Renews the leases of the cells this task holds, and passes a stop (Ctrl-C, SIGTERM) or a lost
/// lease on to the attempt it concerns.
pub struct Keeper {
    held: Arc<Mutex<Vec<Arc<Held>>>>,
    done: Arc<AtomicBool>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl Keeper {
    pub fn start(queue: Arc<Queue>, stop: Arc<AtomicBool>) -> Keeper {
        let held: Arc<Mutex<Vec<Arc<Held>>>> = Arc::default();
        let done = Arc::new(AtomicBool::new(false));
        let every = (queue.lease / RENEWALS_PER_LEASE).max(Duration::from_millis(200));
        let thread = {
            let (held, done) = (held.clone(), done.clone());
            std::thread::spawn(move || {
                let mut last = Instant::now();
                while !done.load(Ordering::SeqCst) {
                    std::thread::sleep(Duration::from_millis(100));
                    let cells: Vec<Arc<Held>> = held.lock().map(|h| h.clone()).unwrap_or_default();
                    let stopping = stop.load(Ordering::SeqCst);
                    let renew = last.elapsed() >= every;
                    for h in &cells {
                        if stopping {
                            h.stop.store(true, Ordering::SeqCst);
                        }
                        if renew && !queue.renew(h) {
                            h.lost.store(true, Ordering::SeqCst);
                            h.stop.store(true, Ordering::SeqCst);
                        }
                    }
                    if renew {
                        last = Instant::now();
                    }
                }
            })
        };
        Keeper { held, done, thread: Some(thread) }
    }

    pub fn hold(&self, h: Arc<Held>) {
        if let Ok(mut all) = self.held.lock() {
            all.push(h);
        }
    }

    pub fn release(&self, h: &Arc<Held>) {
        if let Ok(mut all) = self.held.lock() {
            all.retain(|x| !Arc::ptr_eq(x, h));
        }
    }
}

impl Drop for Keeper {
    fn drop(&mut self) {
        self.done.store(true, Ordering::SeqCst);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sweep::store::{GridCell, SpecRecord};

    fn meta(hash: &str) -> SweepMeta {
        SweepMeta {
            schema: "ccbench.sweep.v1".into(),
            description: String::new(),
            spec: SpecRecord { file: "s.toml".into(), text: String::new(), command_line: Vec::new(), hash: hash.into() },
            ccbench_version: VERSION.into(),
            git_revision: REVISION.into(),
            axes: Vec::new(),
            grid: vec![GridCell { id: "a=1".into(), label: "a=1".into(), parameters: Default::default() }],
            shard: None,
            merged_from: Vec::new(),
        }
    }

    fn tempdir(name: &str) -> PathBuf {
        let d = std::env::temp_dir().join(format!("ccbench-queue-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&d);
        d
    }

    /// Sets a file's mtime `ago` into the past, as a task that stopped renewing would leave it.
    fn age(file: &Path, ago: Duration) {
        let f = std::fs::File::options().write(true).open(file).unwrap();
        f.set_modified(SystemTime::now() - ago).unwrap();
    }

    fn land_with(q: &Queue, h: &Held, text: &str) -> bool {
        std::fs::write(h.attempt_dir.join(CELL_FILE), text).unwrap();
        q.land(h).unwrap()
    }

    #[test]
    fn one_task_wins_a_claim_and_a_cell_lands_once() {
        let out = tempdir("claim");
        let (a, b) = (Queue::open(&out, &meta("h1"), Duration::from_secs(60)).unwrap(), Queue::open(&out, &meta("h1"), Duration::from_secs(60)).unwrap());
        let mut over = None;
        let held = a.try_claim("a=1", "task a", None, &mut over).unwrap().expect("the first claim wins");
        assert!(b.try_claim("a=1", "task b", None, &mut over).unwrap().is_none(), "a live claim is not taken");
        assert!(over.is_none());
        assert!(matches!(b.state("a=1"), CellState::Running { lapsed: false, .. }));
        assert!(land_with(&a, &held, "{\"status\":\"complete\"}"));
        assert!(!held.claim_file.exists(), "the claim goes once the cell has landed");
        assert!(b.try_claim("a=1", "task b", None, &mut over).unwrap().is_none(), "a landed cell is not taken again");
        // Another plan in the same directory is refused.
        let e = Queue::open(&out, &meta("h2"), Duration::from_secs(60)).err().expect("refused").to_string();
        assert!(e.contains("another spec") && e.contains("h1") && e.contains("h2"), "{e}");
        let _ = std::fs::remove_dir_all(out);
    }

    /// Issue 27 §14: a task that looked for the plan a moment before another task made it, and
    /// then found that task's index, took the directory for a foreign one and exited 2.
    #[test]
    fn a_task_starting_beside_another_waits_for_its_plan_and_a_foreign_directory_is_refused_at_once() {
        let out = tempdir("race");
        // What the other task has written when this one lists the directory: the queue's
        // directories and the index, and (a moment later, as the file system shows it) the plan.
        for d in [QUEUE_DIR, CELLS_DIR, RUNNING_DIR] {
            std::fs::create_dir_all(out.join(d)).unwrap();
        }
        std::fs::write(out.join(crate::sweep::store::SWEEP_FILE), "{}").unwrap();
        let plan = serde_json::to_string(&meta("h")).unwrap();
        let writer = {
            let file = out.join(PLAN_FILE);
            std::thread::spawn(move || {
                std::thread::sleep(Duration::from_millis(300));
                std::fs::write(file, plan).unwrap();
            })
        };
        let q = Queue::open(&out, &meta("h"), Duration::from_secs(60));
        writer.join().unwrap();
        assert!(q.is_ok(), "joined the sweep starting there: {:?}", q.err());
        // A merged result set (an index, no queue) is refused without waiting.
        let merged = tempdir("race-merged");
        std::fs::create_dir_all(merged.join(CELLS_DIR)).unwrap();
        std::fs::write(merged.join(crate::sweep::store::SWEEP_FILE), "{}").unwrap();
        let started = Instant::now();
        let e = Queue::open(&merged, &meta("h"), Duration::from_secs(60)).err().expect("refused").to_string();
        assert!(e.contains("sweep.json but no plan.json"), "{e}");
        assert!(started.elapsed() < PLAN_WAIT / 2, "refused at once: {:?}", started.elapsed());
        // Many tasks starting at once into one new directory: every one joins.
        for round in 0..50 {
            let out = tempdir(&format!("race-{round}"));
            let barrier = std::sync::Barrier::new(4);
            std::thread::scope(|s| {
                for _ in 0..4 {
                    s.spawn(|| {
                        barrier.wait();
                        let q = Queue::open(&out, &meta("h"), Duration::from_secs(60)).unwrap_or_else(|e| panic!("round {round}: {e}"));
                        crate::sweep::store::write_atomic(&q.out.join(crate::sweep::store::SWEEP_FILE), "{}").unwrap();
                    });
                }
            });
            let _ = std::fs::remove_dir_all(out);
        }
        let _ = std::fs::remove_dir_all(out);
        let _ = std::fs::remove_dir_all(merged);
    }

    /// Issue 27 §12: `--retry-failed` runs a cell that had failed when its task started, with
    /// the earlier attempts' log kept; a failure landed after the task started is not run again
    /// by it (nor by any task started before it).
    #[test]
    fn retry_failed_takes_earlier_failures_once_and_keeps_their_log() {
        let out = tempdir("retry");
        let q = Queue::open(&out, &meta("h"), Duration::from_secs(60)).unwrap();
        let mut over = None;
        let first = q.try_claim("a=1", "first", None, &mut over).unwrap().unwrap();
        std::fs::write(first.attempt_dir.join(LOG_FILE), "attempt 1 failed\n").unwrap();
        assert!(land_with(&q, &first, "{\"status\":\"failed\"}"));
        assert!(q.try_claim("a=1", "plain", None, &mut over).unwrap().is_none(), "a failed cell is not run again unasked");
        let started_before = SystemTime::now() - Duration::from_secs(5);
        assert!(q.try_claim("a=1", "old", Some(started_before), &mut over).unwrap().is_none(), "it failed after that task started");
        let retry = q.try_claim("a=1", "retry", Some(SystemTime::now() + Duration::from_millis(1)), &mut over).unwrap().expect("failed before: run again");
        assert_eq!(std::fs::read_to_string(retry.attempt_dir.join(LOG_FILE)).unwrap(), "attempt 1 failed\n", "the earlier attempts' log goes on");
        std::fs::OpenOptions::new().append(true).open(retry.attempt_dir.join(LOG_FILE)).unwrap().write_all(b"attempt 1 failed again\n").unwrap();
        assert!(land_with(&q, &retry, "{\"status\":\"failed\"}"));
        assert_eq!(std::fs::read_to_string(out.join(CELLS_DIR).join("a=1").join(LOG_FILE)).unwrap(), "attempt 1 failed\nattempt 1 failed again\n");
        let _ = std::fs::remove_dir_all(out);
    }

    /// Issue 27 §14: a killed holder's attempt directory goes when its claim is taken over.
    #[test]
    fn taking_over_a_dead_holders_claim_removes_its_attempt() {
        let out = tempdir("orphan");
        let q = Queue::open(&out, &meta("h"), Duration::from_secs(3600)).unwrap();
        let mut over = None;
        let held = q.try_claim("a=1", "killed", None, &mut over).unwrap().unwrap();
        std::fs::write(held.attempt_dir.join("result.json"), "{}").unwrap();
        // The holder was killed: its claim now names a PID that does not run.
        let mut child = std::process::Command::new("true").spawn().unwrap();
        let dead = child.id();
        child.wait().unwrap();
        let mut claim: Claim = serde_json::from_value(read_json(&held.claim_file).unwrap()).unwrap();
        claim.pid = dead;
        std::fs::write(&held.claim_file, serde_json::to_string(&claim).unwrap()).unwrap();
        let next = q.try_claim("a=1", "next", None, &mut over).unwrap().expect("taken over");
        assert_eq!(over.take().map(|c| c.worker), Some("killed".to_string()));
        assert!(!held.attempt_dir.exists(), "the killed task's attempt is gone");
        assert!(next.attempt_dir.is_dir());
        let _ = std::fs::remove_dir_all(out);
    }

    #[test]
    fn a_lapsed_lease_is_taken_over_once_and_the_slow_holders_result_is_thrown_away() {
        let out = tempdir("lapse");
        let lease = Duration::from_secs(2);
        let (slow, c, d) =
            (Queue::open(&out, &meta("h"), lease).unwrap(), Queue::open(&out, &meta("h"), lease).unwrap(), Queue::open(&out, &meta("h"), lease).unwrap());
        let mut over = None;
        let first = slow.try_claim("a=1", "slow", None, &mut over).unwrap().unwrap();
        assert!(slow.renew(&first), "renewing one's own claim works");
        age(&first.claim_file, Duration::from_secs(3));
        assert!(matches!(c.state("a=1"), CellState::Running { lapsed: true, .. }));
        let second = c.try_claim("a=1", "c", None, &mut over).unwrap().expect("a lapsed claim is taken over");
        assert_eq!(over.take().map(|o| o.worker), Some("slow".to_string()), "whose lease lapsed is told");
        assert!(d.try_claim("a=1", "d", None, &mut over).unwrap().is_none(), "the new claim is live: taken over once");
        assert!(!slow.renew(&first), "the slow holder learns at its next renewal that the cell is no longer its");
        assert!(slow.renew(&second) && c.holds(&second));
        // Both finish: the new holder's result lands; the slow one's is thrown away, not merged in.
        assert!(land_with(&c, &second, "{\"by\":\"c\"}"));
        first.lost.store(true, Ordering::SeqCst);
        assert!(!land_with(&slow, &first, "{\"by\":\"slow\"}"));
        assert_eq!(std::fs::read_to_string(out.join(CELLS_DIR).join("a=1").join(CELL_FILE)).unwrap(), "{\"by\":\"c\"}");
        assert!(!first.attempt_dir.exists());
        // Even a holder that did not notice cannot land over a cell that is there.
        let third = Held {
            id: "a=1".into(),
            token: "x".into(),
            claim_file: out.join(QUEUE_DIR).join("a=1.claim"),
            attempt_dir: out.join(RUNNING_DIR).join("a=1@x"),
            previous: None,
            stop: AtomicBool::new(false),
            lost: AtomicBool::new(false),
        };
        std::fs::create_dir_all(&third.attempt_dir).unwrap();
        assert!(!land_with(&d, &third, "{\"by\":\"third\"}"));
        assert_eq!(std::fs::read_to_string(out.join(CELLS_DIR).join("a=1").join(CELL_FILE)).unwrap(), "{\"by\":\"c\"}");
        let _ = std::fs::remove_dir_all(out);
    }

    #[test]
    fn a_claim_of_a_dead_process_lapses_at_once_only_where_its_pid_means_that_process() {
        let out = tempdir("dead");
        let q = Queue::open(&out, &meta("h"), Duration::from_secs(3600)).unwrap();
        let here = PidScope::own().expect("this host's /proc tells the boot and the PID namespace");
        // A PID that is not running: a child that has been waited for.
        let mut child = std::process::Command::new("true").spawn().unwrap();
        let pid = child.id();
        child.wait().unwrap();
        let claim = Claim {
            worker: "gone".into(),
            host: host_name(),
            pid,
            token: "t".into(),
            since: String::new(),
            lease_secs: 3600,
            boot_id: Some(here.boot_id.clone()),
            pid_ns: Some(here.pid_ns),
        };
        let judged = |c: &Claim| {
            std::fs::write(out.join(QUEUE_DIR).join("a=1.claim"), serde_json::to_string(c).unwrap()).unwrap();
            match q.state("a=1") {
                CellState::Running { lapsed, holder, .. } => (lapsed, holder),
                s => panic!("{s:?}"),
            }
        };
        assert_eq!(judged(&claim), (true, Holder::Gone), "same boot, same PID namespace, no such process");
        assert_eq!(judged(&Claim { pid: std::process::id(), ..claim.clone() }), (false, Holder::Alive));
        // The same host name says nothing: another PID namespace (a container's, unshare -p), another
        // boot, or a claim of an older ccbench that did not record them is left to its lease.
        assert_eq!(judged(&Claim { pid_ns: Some(here.pid_ns + 1), ..claim.clone() }), (false, Holder::Unknown), "another PID namespace");
        assert_eq!(judged(&Claim { boot_id: Some("another-boot".into()), ..claim.clone() }), (false, Holder::Unknown), "another boot");
        assert_eq!(judged(&Claim { host: "elsewhere".into(), boot_id: Some("b".into()), ..claim.clone() }), (false, Holder::Unknown));
        let old = serde_json::json!({ "worker": "old", "host": host_name(), "pid": pid, "token": "t", "since": "", "lease_secs": 3600 });
        std::fs::write(out.join(QUEUE_DIR).join("a=1.claim"), old.to_string()).unwrap();
        assert!(
            matches!(q.state("a=1"), CellState::Running { lapsed: false, holder: Holder::Unknown, claim: Some(_), .. }),
            "an old claim is read, by its lease"
        );
        age(&out.join(QUEUE_DIR).join("a=1.claim"), Duration::from_secs(3601));
        assert!(matches!(q.state("a=1"), CellState::Running { lapsed: true, holder: Holder::Unknown, .. }), "and lapses with it");
        let _ = std::fs::remove_dir_all(out);
    }
}
