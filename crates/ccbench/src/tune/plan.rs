//! What `ccbench tune --cc ALG` changes, decided from facts about the host and nothing else
//! (no I/O here, so every rule below has a unit test).
//!
//! The rules, and where they come from:
//! * `net.ipv4.tcp_congestion_control` is the algorithm new TCP sockets get. It has been per
//!   network namespace since Linux 4.15 (commit 6670e1524477, "tcp: Namespace-ify
//!   sysctl_tcp_default_congestion_control"). Outside the host's (initial) namespace the kernel
//!   accepts only an algorithm listed in `net.ipv4.tcp_allowed_congestion_control` and answers
//!   EPERM otherwise (commit 8d432592f30f, tcp_set_default_congestion_control in
//!   net/ipv4/tcp_cong.c). In the initial namespace, setting a default also adds it to that
//!   host-wide allowed list, as a side effect: so the list is backed up there, to be restored.
//! * `net.core.default_qdisc` matters only for BBR, which paces its sending. Before Linux 4.13
//!   only the `fq` qdisc paced, so BBR needed it; since commit 218af599fa63 ("tcp: internal
//!   implementation for pacing", 4.13) TCP paces by itself, and the header of
//!   net/ipv4/tcp_bbr.c still recommends fq: without it "TCP stack falls back to an internal
//!   pacing using one high resolution timer per TCP socket and may use more resources".
//!   CUBIC and Reno do not pace, so for them the qdisc is left alone.
//! * `net.core.default_qdisc` is host-wide: the kernel registers it for the initial namespace
//!   only (net/core/sysctl_net_core.c), so another namespace does not even see it. ccbench
//!   sets it only where it is visible, and never from a test's namespace.

use std::fmt::Write as _;

use crate::error::UsageError;
use ccbench_model::workload::{Algorithm, Family, Transport};

pub const CC_KEY: &str = "net.ipv4.tcp_congestion_control";
pub const ALLOWED_KEY: &str = "net.ipv4.tcp_allowed_congestion_control";
pub const QDISC_KEY: &str = "net.core.default_qdisc";

/// Whether the kernel has the `fq` qdisc, and how we know.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Fq {
    Yes(String),
    No(String),
    Unknown(String),
}

/// Everything the plan depends on, read from the host by [`super::facts`].
#[derive(Clone, Debug)]
pub struct Facts {
    /// True in the host's own network namespace (where host-wide sysctls live).
    pub initial_netns: bool,
    /// Registered algorithms (`tcp_available_congestion_control`).
    pub available: Vec<String>,
    /// Built as modules but not loaded yet: setting one as default loads it.
    pub loadable: Vec<String>,
    /// `tcp_allowed_congestion_control`.
    pub allowed: Vec<String>,
    /// `tcp_congestion_control` now.
    pub cc_now: String,
    /// `default_qdisc` now; `None` where this namespace cannot see it.
    pub qdisc_now: Option<String>,
    pub fq: Fq,
    /// The kernel's built-in default algorithm (CONFIG_DEFAULT_TCP_CONG), when known.
    pub builtin_cc: Option<String>,
}

/// One setting: its value now, the value ccbench wants (`None`: leave it), and why.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Setting {
    pub key: &'static str,
    pub now: Option<String>,
    pub want: Option<String>,
    pub why: String,
}

impl Setting {
    /// The runtime write this setting needs, if any.
    pub fn change(&self) -> Option<&str> {
        match (&self.now, &self.want) {
            (Some(now), Some(want)) if now == want => None,
            (_, Some(want)) => Some(want),
            _ => None,
        }
    }
}

#[derive(Clone, Debug)]
pub struct Plan {
    pub cc: String,
    pub settings: Vec<Setting>,
    /// The sysctl keys whose current values the backup must hold before anything is written,
    /// in the order a revert writes them back.
    pub backup_keys: Vec<&'static str>,
    /// The persistent file's full content.
    pub file: String,
}

impl Plan {
    /// Runtime writes, in order: (key, new value).
    pub fn writes(&self) -> Vec<(&'static str, &str)> {
        self.settings.iter().filter_map(|s| s.change().map(|v| (s.key, v))).collect()
    }
}

/// BBR in any version (bbr, bbr2, bbr3 in out-of-tree kernels) paces; `cc` is a kernel name.
pub fn paces(cc: &str) -> bool {
    Algorithm::new(Transport::Tcp, cc).is_ok_and(|a| a.family() == Family::Bbr)
}

pub fn plan(f: &Facts, cc: &str) -> Result<Plan, UsageError> {
    let known = f.available.iter().chain(&f.loadable);
    if !known.clone().any(|a| a == cc) {
        let mut list: Vec<&str> = known.map(String::as_str).collect();
        list.dedup();
        return Err(UsageError::new("--cc", cc, format!("an algorithm this kernel has: {}", list.join(" "))));
    }
    if !f.initial_netns && cc != f.cc_now && !f.allowed.iter().any(|a| a == cc) {
        return Err(UsageError::new(
            "--cc",
            cc,
            format!(
                "one of {} (outside the host's network namespace the kernel accepts only the algorithms in {ALLOWED_KEY}, a host-wide list ccbench does not change from here)",
                f.allowed.join(" ")
            ),
        ));
    }
    let loads = if f.available.iter().any(|a| a == cc) { "" } else { " (the kernel loads its module on the first write)" };
    let cc_setting = Setting { key: CC_KEY, now: Some(f.cc_now.clone()), want: Some(cc.to_string()), why: format!("the algorithm new TCP sockets get{loads}") };
    let qdisc = qdisc_setting(f, cc);
    let mut backup_keys = vec![CC_KEY];
    // In the initial namespace a new default joins the host-wide allowed list; restore it too.
    if f.initial_netns && cc_setting.change().is_some() {
        backup_keys.push(ALLOWED_KEY);
    }
    if qdisc.change().is_some() {
        backup_keys.push(QDISC_KEY);
    }
    let settings = vec![cc_setting, qdisc];
    let file = file_content(cc, &settings);
    Ok(Plan { cc: cc.to_string(), settings, backup_keys, file })
}

fn qdisc_setting(f: &Facts, cc: &str) -> Setting {
    let leave = |why: String| Setting { key: QDISC_KEY, now: f.qdisc_now.clone(), want: None, why };
    if !paces(cc) {
        return leave(format!("left as is: {cc} does not pace, so the qdisc does not matter for it"));
    }
    if f.qdisc_now.is_none() {
        return leave("left as is: host-wide, and not visible in this network namespace".into());
    }
    match &f.fq {
        Fq::No(how) => leave(format!("left as is: fq is recommended for BBR, but this kernel has no fq ({how}); BBR paces inside TCP (Linux >= 4.13)")),
        Fq::Unknown(how) => leave(format!("left as is: fq is recommended for BBR, but whether this kernel has it is unknown ({how})")),
        Fq::Yes(_) => Setting {
            key: QDISC_KEY,
            now: f.qdisc_now.clone(),
            want: Some("fq".into()),
            why: "fq paces BBR's packets more cheaply than TCP's internal pacing (required before Linux 4.13); applies to qdiscs created from now on, all of them at boot".into(),
        },
    }
}

/// The persistent file: the wanted values, each with its reason. No timestamp, so that the
/// same settings give the same bytes and a repeated apply changes nothing.
fn file_content(cc: &str, settings: &[Setting]) -> String {
    let mut s = String::new();
    let _ = writeln!(s, "# Written by `ccbench tune --cc {cc} --apply`. `ccbench tune --revert` restores what was here");
    let _ = writeln!(s, "# before, and the runtime values.");
    for set in settings {
        if let Some(want) = &set.want {
            let _ = writeln!(s, "# {}", set.why);
            let _ = writeln!(s, "{} = {want}", set.key);
        }
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    fn facts() -> Facts {
        Facts {
            initial_netns: true,
            available: vec!["reno".into(), "cubic".into()],
            loadable: vec!["bbr".into()],
            allowed: vec!["reno".into(), "cubic".into()],
            cc_now: "cubic".into(),
            qdisc_now: Some("pfifo_fast".into()),
            fq: Fq::Yes("test".into()),
            builtin_cc: None,
        }
    }

    #[test]
    fn bbr_on_a_host_with_fq_sets_both_and_backs_up_the_allowed_list() {
        let p = plan(&facts(), "bbr").unwrap();
        assert_eq!(p.writes(), vec![(CC_KEY, "bbr"), (QDISC_KEY, "fq")]);
        assert_eq!(p.backup_keys, vec![CC_KEY, ALLOWED_KEY, QDISC_KEY]);
        assert!(p.settings[0].why.contains("loads its module"));
        assert!(p.file.contains("\nnet.ipv4.tcp_congestion_control = bbr\n") && p.file.contains("\nnet.core.default_qdisc = fq\n"));
    }

    #[test]
    fn cubic_never_touches_the_qdisc() {
        let mut f = facts();
        f.cc_now = "reno".into();
        let p = plan(&f, "cubic").unwrap();
        assert_eq!(p.writes(), vec![(CC_KEY, "cubic")]);
        assert!(!p.file.contains(QDISC_KEY));
        assert!(!p.backup_keys.contains(&QDISC_KEY));
    }

    #[test]
    fn no_fq_means_no_qdisc_change() {
        let mut f = facts();
        f.fq = Fq::No("tc refused it".into());
        let p = plan(&f, "bbr").unwrap();
        assert_eq!(p.writes(), vec![(CC_KEY, "bbr")]);
        assert!(p.settings[1].why.contains("no fq"));
        f.fq = Fq::Unknown("not root".into());
        assert_eq!(plan(&f, "bbr").unwrap().writes(), vec![(CC_KEY, "bbr")]);
    }

    #[test]
    fn another_namespace_never_plans_a_host_wide_write() {
        let mut f = facts();
        f.initial_netns = false;
        f.qdisc_now = None;
        f.allowed = vec!["reno".into(), "bbr".into()];
        let p = plan(&f, "bbr").unwrap();
        assert_eq!(p.writes(), vec![(CC_KEY, "bbr")]);
        assert_eq!(p.backup_keys, vec![CC_KEY]);
        assert!(p.settings[1].why.contains("host-wide"));
        // An algorithm outside the allowed list would be EPERM there: refused, naming the list.
        f.available.push("bbr".into());
        f.cc_now = "reno".into();
        f.allowed = vec!["reno".into()];
        let e = plan(&f, "cubic").unwrap_err().to_string();
        assert!(e.starts_with("invalid --cc \"cubic\"") && e.contains("one of reno"), "{e}");
    }

    #[test]
    fn unknown_algorithm_is_refused_listing_what_exists() {
        let e = plan(&facts(), "vegas").unwrap_err().to_string();
        assert_eq!(e, "invalid --cc \"vegas\": expected an algorithm this kernel has: reno cubic bbr");
    }

    #[test]
    fn already_set_means_nothing_to_write_but_the_same_file() {
        let mut f = facts();
        f.cc_now = "bbr".into();
        f.qdisc_now = Some("fq".into());
        f.available.push("bbr".into());
        let p = plan(&f, "bbr").unwrap();
        assert!(p.writes().is_empty());
        assert_eq!(p.backup_keys, vec![CC_KEY]);
        assert_eq!(p.file, plan(&facts(), "bbr").unwrap().file.replace(" (the kernel loads its module on the first write)", ""));
    }
}
