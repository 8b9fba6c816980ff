//! Reads what [`super::plan`] decides from: this network namespace's sysctls, and whether the
//! kernel has the fq qdisc.

use std::io;
use std::path::Path;

use super::plan::{Facts, Fq};

/// `/proc/sys/…` path of a dotted key.
pub fn proc_path(key: &str) -> String {
    format!("/proc/sys/{}", key.replace('.', "/"))
}

/// A sysctl's exact bytes as the kernel prints them (trailing newline included): what a revert
/// writes back and compares with.
pub fn read_raw(key: &str) -> io::Result<String> {
    std::fs::read_to_string(proc_path(key))
}

fn words(key: &str) -> Vec<String> {
    read_raw(key).map(|s| s.split_whitespace().map(str::to_owned).collect()).unwrap_or_default()
}

/// True in the host's (initial) network namespace. The kernel shows `net.core.default_qdisc`
/// there only (net/core/sysctl_net_core.c registers that table for init_net alone), which is
/// a better witness than comparing with PID 1's namespace: PID 1 is another namespace's
/// init inside a container, and unreadable in some sandboxes.
pub fn initial_netns() -> bool {
    Path::new(&proc_path(super::plan::QDISC_KEY)).exists()
}

pub fn gather() -> io::Result<Facts> {
    let cc_now = read_raw(super::plan::CC_KEY)?.trim().to_string();
    let qdisc_now = read_raw(super::plan::QDISC_KEY).ok().map(|s| s.trim().to_string());
    Ok(Facts {
        initial_netns: initial_netns(),
        available: words("net.ipv4.tcp_available_congestion_control"),
        loadable: ccbench_kernel_tcp::loadable_congestion_controls(),
        allowed: words(super::plan::ALLOWED_KEY),
        cc_now,
        qdisc_now,
        fq: fq_support(),
        builtin_cc: kernel_config().and_then(|c| c.lines().find_map(|l| l.strip_prefix("CONFIG_DEFAULT_TCP_CONG=")).map(|v| v.trim_matches('"').to_string())),
    })
}

/// Whether the kernel has fq. As root: attach it to the loopback device of a throwaway network
/// namespace of our own with `tc`, the same request (and module autoload) as the kernel's
/// own use of `default_qdisc`, with pfifo tried first as the control that tc itself works.
/// Otherwise the kernel's build configuration, or its module list, answers.
pub fn fq_support() -> Fq {
    // SAFETY: geteuid has no preconditions.
    let root = unsafe { libc::geteuid() } == 0;
    if root {
        if let Ok(ns) = ccbench_netns::Netns::new() {
            if crate::doctor::qdisc_works(&ns, "pfifo") {
                return if crate::doctor::qdisc_works(&ns, "fq") {
                    Fq::Yes("tc attached fq in a throwaway network namespace".into())
                } else {
                    Fq::No("tc could not attach fq in a throwaway network namespace".into())
                };
            }
        }
    }
    if let Some(fq) = fq_from_config() {
        return fq;
    }
    let release = std::fs::read_to_string("/proc/sys/kernel/osrelease").unwrap_or_default();
    let modules = ["modules.dep", "modules.builtin"]
        .iter()
        .filter_map(|f| std::fs::read_to_string(format!("/lib/modules/{}/{f}", release.trim())).ok())
        .collect::<Vec<_>>()
        .join("\n");
    if modules.lines().any(|l| l.split(':').next().is_some_and(|m| m.contains("/sch_fq.ko"))) {
        return Fq::Yes(format!("sch_fq.ko is listed in /lib/modules/{}", release.trim()));
    }
    Fq::Unknown(if root { "tc failed, and the kernel's configuration is not readable".into() } else { "testing for it needs root".into() })
}

/// The kernel's build configuration, when it exposes it (/proc/config.gz).
fn kernel_config() -> Option<String> {
    use std::io::Read;
    let gz = std::fs::File::open("/proc/config.gz").ok()?;
    let mut text = String::new();
    flate2::read::GzDecoder::new(gz).read_to_string(&mut text).ok()?;
    Some(text)
}

/// `CONFIG_NET_SCH_FQ` from the kernel's configuration.
fn fq_from_config() -> Option<Fq> {
    kernel_config().map(|c| config_says_fq(&c))
}

fn config_says_fq(config: &str) -> Fq {
    let line = config.lines().find(|l| l.starts_with("CONFIG_NET_SCH_FQ=") || l.starts_with("# CONFIG_NET_SCH_FQ is not set"));
    match line {
        Some(l) if l.ends_with("=y") || l.ends_with("=m") => Fq::Yes(format!("/proc/config.gz: {l}")),
        Some(l) => Fq::No(format!("/proc/config.gz: {l}")),
        None => Fq::No("/proc/config.gz does not mention CONFIG_NET_SCH_FQ".into()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kernel_config_lines() {
        assert!(matches!(config_says_fq("CONFIG_NET_SCH_FQ_CODEL=y\nCONFIG_NET_SCH_FQ=m\n"), Fq::Yes(_)));
        assert!(matches!(config_says_fq("CONFIG_NET_SCH_FQ_CODEL=y\n# CONFIG_NET_SCH_FQ is not set\n"), Fq::No(_)));
        assert!(matches!(config_says_fq("CONFIG_NET_SCH_FQ_CODEL=y\n"), Fq::No(_)));
    }
}
