//! Who owns what a sweep writes. Run through sudo (a cluster user's route: the job runs as the
//! user, ccbench as root), the files would be root's and the user could neither merge into OUT
//! nor clean it up; so they are given to the user sudo names in SUDO_UID and SUDO_GID (sudo sets
//! these whatever its env_reset keeps). Run as root without sudo, they stay root's.

use std::path::Path;
use std::sync::OnceLock;

static OWNER: OnceLock<Option<(u32, u32)>> = OnceLock::new();

/// The user and group to give files to: sudo's caller when ccbench runs as root under sudo.
fn owner() -> Option<(u32, u32)> {
    *OWNER.get_or_init(|| {
        // SAFETY: geteuid has no preconditions.
        if unsafe { libc::geteuid() } != 0 {
            return None;
        }
        let id = |var: &str| std::env::var(var).ok()?.trim().parse::<u32>().ok();
        match (id("SUDO_UID")?, id("SUDO_GID")?) {
            (0, _) => None,
            ids => Some(ids),
        }
    })
}

/// Gives `path` (not following a symbolic link) to sudo's caller, if there is one. A failure
/// (a file system that refuses chown, such as root-squashed NFS) leaves the file as it is:
/// the results are still there, only their owner differs.
pub fn give(path: &Path) {
    if let Some((uid, gid)) = owner() {
        let _ = std::os::unix::fs::lchown(path, Some(uid), Some(gid));
    }
}

/// [`give`] for a directory and everything under it.
pub fn give_tree(path: &Path) {
    if owner().is_none() {
        return;
    }
    give(path);
    if let Ok(entries) = std::fs::read_dir(path) {
        for entry in entries.flatten() {
            if entry.file_type().is_ok_and(|t| t.is_dir()) {
                give_tree(&entry.path());
            } else {
                give(&entry.path());
            }
        }
    }
}
