//! `ccbench tune`: shows, applies and reverts the host settings the first write-up set by hand
//! (scenario 1): the default congestion control, and the default qdisc `fq` where the kernel
//! has it and the algorithm paces. A dry run unless `--apply`; `--revert` restores exactly
//! what was there before the first apply.
//!
//! * [`facts`] reads the namespace's sysctls and whether the kernel has fq;
//! * [`plan`] decides, with no I/O, what to change and why;
//! * [`sysctl_d`] finds which file sets a value at boot;
//! * [`backup`] keeps the previous bytes and puts them back.

mod backup;
mod facts;
mod plan;
mod sysctl_d;

use std::path::Path;

use anyhow::Context;

use crate::cli::TuneArgs;
use crate::error::{precondition, UsageError};
use backup::Backup;
use plan::{Fq, Plan};

/// Our persistent file. 90 runs after distribution defaults (usually 10–50) and before the
/// administrator's 99-*; a later file that sets the same key wins, and `show` says so.
pub const SYSCTL_FILE: &str = "/etc/sysctl.d/90-ccbench.conf";
/// Where the backup lives (state kept across reboots belongs in /var/lib).
pub const STATE_DIR: &str = "/var/lib/ccbench/tune";

pub fn run(args: TuneArgs) -> anyhow::Result<i32> {
    if args.revert {
        return revert();
    }
    // The host's default is a kernel TCP algorithm: `bbr` and `tcp:bbr` name it, a QUIC one cannot be.
    let cc = match &args.cc {
        None => "bbr",
        Some(a) => match a.kernel_name() {
            Some(name) if name.len() < 16 => name,
            _ => {
                return Err(UsageError::new(
                    "--cc",
                    a,
                    "a kernel TCP algorithm such as bbr, cubic or tcp:bbr (tune sets the default of new TCP sockets; a quic: algorithm is chosen per run)",
                )
                .into())
            }
        },
    };
    // Held from reading the facts to the last write.
    let _lock = match args.apply {
        true => {
            require_root("--apply")?;
            Some(lock_sysctl_dir()?)
        }
        false => None,
    };
    let facts = facts::gather().context("reading net.ipv4.tcp_congestion_control")?;
    let plan = plan::plan(&facts, cc)?;
    let boot = sysctl_d::boot_assignments(None);
    print_state(&facts, &plan, &boot);
    if args.apply {
        apply(&plan, cc)
    } else {
        print_dry_run(&plan);
        Ok(0)
    }
}

fn require_root(what: &str) -> Result<(), UsageError> {
    // SAFETY: geteuid has no preconditions.
    if unsafe { libc::geteuid() } != 0 {
        return Err(precondition(format!("ccbench tune {what} needs root: it writes /proc/sys and {SYSCTL_FILE}; run it with sudo")));
    }
    Ok(())
}

fn print_state(f: &plan::Facts, plan: &Plan, boot: &[sysctl_d::Assignment]) {
    let kernel = std::fs::read_to_string("/proc/sys/kernel/osrelease").unwrap_or_default();
    let ns = if f.initial_netns { "the host's network namespace" } else { "a network namespace other than the host's (host-wide settings are left alone)" };
    println!("Kernel {}, {ns}", kernel.trim());
    let loadable = if f.loadable.is_empty() { String::new() } else { format!("; loadable as modules: {}", f.loadable.join(" ")) };
    println!("Congestion controls: {}{loadable}; allowed for unprivileged sockets: {}", f.available.join(" "), f.allowed.join(" "));
    match &f.fq {
        Fq::Yes(how) => println!("fq qdisc: present ({how})"),
        Fq::No(how) => println!("fq qdisc: absent ({how})"),
        Fq::Unknown(how) => println!("fq qdisc: unknown ({how})"),
    }
    for s in &plan.settings {
        println!("\n{}", s.key);
        println!("  now      {}", s.now.as_deref().unwrap_or("(not visible in this network namespace)"));
        let at_boot = match sysctl_d::winner(boot, s.key) {
            Some(a) => format!("{} (from {})", a.value, a.file.display()),
            None => match (s.key, &f.builtin_cc) {
                (plan::CC_KEY, Some(cc)) => format!("{cc}: not set by any sysctl.d file, so the kernel's built-in default (CONFIG_DEFAULT_TCP_CONG)"),
                _ => "not set by any sysctl.d file, so the kernel's built-in default".into(),
            },
        };
        println!("  at boot  {at_boot}");
        let verdict = match (&s.want, s.change()) {
            (Some(want), Some(_)) => format!("set {want}: {}", s.why),
            (Some(want), None) => format!("{want} already: {}", s.why),
            (None, _) => s.why.clone(),
        };
        println!("  ccbench  {verdict}");
    }
}

fn print_dry_run(plan: &Plan) {
    println!("\nChanges for --cc {} (dry run: nothing was changed):", plan.cc);
    let changes = describe_changes(plan);
    if changes.is_empty() {
        println!("  none: everything is already as ccbench would set it");
        return;
    }
    for c in &changes {
        println!("  {c}");
    }
    print_overrides(plan);
    println!("Run again with --apply to make them (as root); `ccbench tune --revert` undoes them.");
}

/// Every change an apply would make, in order; empty when there is nothing to do.
fn describe_changes(plan: &Plan) -> Vec<String> {
    let mut out = Vec::new();
    let file_now = std::fs::read(SYSCTL_FILE).ok();
    if file_now.as_deref() != Some(plan.file.as_bytes()) {
        let verb = if file_now.is_some() { "replace" } else { "create" };
        out.push(format!("{verb} {SYSCTL_FILE} with:"));
        out.extend(plan.file.lines().map(|l| format!("    {l}")));
    }
    for (key, value) in plan.writes() {
        out.push(format!("write {value} to {}", facts::proc_path(key)));
        if key == plan::CC_KEY && plan.backup_keys.contains(&plan::ALLOWED_KEY) {
            out.push(format!("  (the kernel also adds {value} to the host-wide {}, if it is not there; a revert restores that list too)", plan::ALLOWED_KEY));
        }
    }
    if !out.is_empty() {
        let keep = if Path::new(STATE_DIR).join("backup.json").exists() { "keep the backup already" } else { "first back up the current values and file" };
        out.push(format!("{keep} in {STATE_DIR}"));
    }
    out
}

/// Files read after ours that set our keys to other values: they win at boot, and ccbench
/// does not edit them.
fn print_overrides(plan: &Plan) {
    let file = Path::new(SYSCTL_FILE);
    for a in sysctl_d::overridden(&sysctl_d::boot_assignments(Some((file, &plan.file))), file) {
        println!("Note: {} sets {} = {} after {SYSCTL_FILE}, so that value wins at boot.", a.file.display(), a.key, a.value);
    }
}

/// Holds an exclusive lock on /etc/sysctl.d's directory for as long as it lives, so that two
/// tune processes cannot interleave their backups and writes. Locking the directory itself
/// leaves no lock file behind.
fn lock_sysctl_dir() -> anyhow::Result<std::fs::File> {
    use std::os::fd::AsRawFd;
    let dir = Path::new(SYSCTL_FILE).parent().unwrap_or(Path::new("/"));
    let f = std::fs::File::open(dir).with_context(|| format!("opening {}", dir.display()))?;
    // SAFETY: flock on a descriptor we own; released when the file is closed.
    if unsafe { libc::flock(f.as_raw_fd(), libc::LOCK_EX) } != 0 {
        return Err(std::io::Error::last_os_error()).with_context(|| format!("locking {}", dir.display()));
    }
    Ok(f)
}

fn apply(plan: &Plan, cc: &str) -> anyhow::Result<i32> {
    println!();
    let state = Path::new(STATE_DIR);
    let file = Path::new(SYSCTL_FILE);
    let writes = plan.writes();
    let file_same = std::fs::read(file).ok().as_deref() == Some(plan.file.as_bytes());
    if writes.is_empty() && file_same {
        println!("Nothing to change: everything is already as ccbench would set it.");
        return Ok(0);
    }
    let made_by = format!("ccbench tune --cc {cc} --apply");
    // The state just before this apply, to undo it if a write fails half-way.
    let undo = Backup::take(made_by.clone(), &plan.backup_keys, file)?;
    let created = match Backup::load(state)? {
        Some(mut b) => {
            if b.add_missing(&plan.backup_keys)? {
                b.save(state)?;
            }
            println!("Keeping the backup of the state before the first --apply ({STATE_DIR}).");
            None
        }
        None => {
            let mut b = undo.clone();
            b.save(state)?;
            println!("Backed up the current values and {} to {STATE_DIR}.", if b.file.existed { SYSCTL_FILE } else { "the absence of the file" });
            Some(b)
        }
    };
    let result = (|| -> anyhow::Result<()> {
        if !file_same {
            backup::write_atomic(file, plan.file.as_bytes(), 0o644)?;
            println!("Wrote {SYSCTL_FILE} (applied at every boot).");
        }
        for (key, value) in &writes {
            backup::write_sysctl(key, value)?;
            println!("{key} = {value} (read back from {})", facts::proc_path(key));
        }
        Ok(())
    })();
    if let Err(e) = result {
        // Leave nothing half-done: put back the state from just before this apply.
        let undone = undo.undo().and_then(|_| created.map(|b| b.delete(state)).transpose());
        return Err(match undone {
            Ok(_) => e.context("the apply failed and was undone"),
            Err(u) => e.context(format!("the apply failed, and undoing it failed too ({u:#}); the backup is in {STATE_DIR}")),
        });
    }
    print_overrides(plan);
    println!("Done. `ccbench tune --revert` restores the previous state.");
    Ok(0)
}

fn revert() -> anyhow::Result<i32> {
    require_root("--revert")?;
    let _lock = lock_sysctl_dir()?;
    let state = Path::new(STATE_DIR);
    let Some(backup) = Backup::load(state)? else {
        return Err(precondition(format!("nothing to revert: no backup in {STATE_DIR} (`ccbench tune --apply` makes one)")).into());
    };
    let done = backup.restore(state)?;
    if done.is_empty() {
        println!("Everything was already as before `{}`; removed the backup.", backup.made_by);
    } else {
        println!("Restored the state from before `{}`:", backup.made_by);
        for d in done {
            println!("  {d}");
        }
    }
    Ok(0)
}
