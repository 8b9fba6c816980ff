//! User errors: one line naming the flag, the value and what is allowed; exit status 2.

use std::fmt;

#[derive(Debug)]
pub struct UsageError {
    pub flag: String,
    pub value: String,
    pub allowed: String,
}

impl UsageError {
    pub fn new(flag: &str, value: impl fmt::Display, allowed: impl Into<String>) -> Self {
        UsageError { flag: flag.to_string(), value: value.to_string(), allowed: allowed.into() }
    }
}

impl fmt::Display for UsageError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.flag.is_empty() {
            write!(f, "{}", self.allowed)
        } else {
            write!(f, "invalid {} {:?}: expected {}", self.flag, self.value, self.allowed)
        }
    }
}

impl std::error::Error for UsageError {}

/// The host cannot do what was asked (not root, no TUN): also a user-facing error, exit 2.
pub fn precondition(msg: impl Into<String>) -> UsageError {
    UsageError { flag: String::new(), value: String::new(), allowed: msg.into() }
}

/// Every user-facing command that needs namespaces checks this before touching anything.
pub fn require_root(command: &str) -> Result<(), UsageError> {
    // SAFETY: geteuid has no preconditions.
    if unsafe { libc::geteuid() } != 0 {
        return Err(precondition(format!("ccbench {command} needs root (CAP_NET_ADMIN and CAP_SYS_ADMIN) to create its network namespaces; run it with sudo")));
    }
    if !std::path::Path::new("/dev/net/tun").exists() {
        return Err(precondition("ccbench needs /dev/net/tun (the tun module), which this host lacks"));
    }
    Ok(())
}

/// Clap's error as one line: its first paragraph names the flag, the value and what is allowed.
pub fn clap_one_line(e: &clap::Error) -> String {
    let text = e.render().to_string();
    let para: Vec<&str> = text.lines().map(str::trim).take_while(|l| !l.is_empty()).collect();
    para.join(" ").trim_start_matches("error: ").to_string()
}

/// `CCBENCH_TEST_BBR_DEFECTS` (test-only, docs/conform.md) naming no defect is refused in one
/// line before anything runs.
pub(crate) fn refuse_bad_test_defects() -> Result<(), UsageError> {
    ccbench_workload::test_bbr_defects()
        .map(|_| ())
        .map_err(|e| UsageError::new(ccbench_workload::TEST_BBR_DEFECTS_ENV, e, "test-only BBR defects, comma-separated"))
}
