//! Names that tell a sweep's tasks and their files apart: the host's, and a unique one for
//! temporary files. The queue (claims) and the store (atomic writes) both use them.

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::SystemTime;

/// This machine's name, as the kernel has it.
pub fn host_name() -> String {
    std::fs::read_to_string("/proc/sys/kernel/hostname").map(|h| h.trim().to_string()).unwrap_or_else(|_| "unknown".into())
}

/// A name no other task's temporary file has: host and PID do not tell tasks apart on their
/// own (two containers on one host may both run ccbench as PID 1), so the time and a count too.
pub fn unique_name() -> String {
    static COUNT: AtomicU64 = AtomicU64::new(0);
    let nanos = SystemTime::now().duration_since(SystemTime::UNIX_EPOCH).unwrap_or_default().as_nanos();
    format!("{}-{}-{nanos:x}-{}", host_name(), std::process::id(), COUNT.fetch_add(1, Ordering::Relaxed))
}
