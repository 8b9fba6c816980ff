//! Test-only defects by name, for showing from the binary that `ccbench conform bbr` fails a
//! broken BBR (issue 31 §7). `ccbench` reads them from `CCBENCH_TEST_BBR_DEFECTS` (documented in
//! docs/conform.md as test-only, never a flag): the draft's controller stays the only one a user
//! can pick.

use std::time::Duration;

use super::BbrParams;

/// The defects by name, each with what it breaks.
pub const DEFECTS: &[(&str, &str)] = &[
    (
        "startup-plateau-rounds=N",
        "STARTUP leaves after N rounds without 25 % growth, not 3 (§5.3.1.2; A.1, counted from its recorded rounds, fails from N = 4)",
    ),
    ("probe-rtt-never", "PROBE_RTT never runs (§5.3.4)"),
    (
        "probe-rtt-expires-unentered",
        "the ProbeRTT timer expires and restarts its filter (§5.3.4.3 BBRUpdateMinRTT), but BBRCheckProbeRTT does not enter PROBE_RTT: its stamp keeps moving while PROBE_RTT never runs",
    ),
    ("max-bw-never-forgets", "the max_bw filter keeps its highest sample forever (§5.5.3; A.15)"),
    ("max-bw-counts-app-limited", "app-limited samples enter max_bw and advance its filter (§5.5.5; A.20)"),
    ("inflight-longterm-grows-app-limited", "inflight_longterm grows while not cwnd-limited (§5.3.3.6; A.20)"),
    ("idle-restart-enters-startup", "a restart from idle re-enters STARTUP (§5.4.1)"),
    ("probe-rtt-ignores-idle-restart", "a restart from idle enters PROBE_RTT when its timer expired in the idle time (§5.3.4.3; A.10)"),
    ("full-bw-counts-app-limited", "STARTUP's plateau test counts app-limited samples (§5.3.1.2; A.18, A.20)"),
    ("spurious-loss-not-undone", "a loss episode found spurious is not undone (§5.5.11.2; A.17)"),
    (
        "rate-samples-at-ack-arrival",
        "delivery-rate samples time their ACK phase at each ACK's arrival, not at the peer's receipt (arrival − ack_delay): a receiver that wakes late inflates max_bw (docs/quic-fidelity.md)",
    ),
];

impl BbrParams {
    /// These parameters broken by `spec`, a comma-separated list of [`DEFECTS`]' names
    /// (`startup-plateau-rounds=6,probe-rtt-never`); an unknown name or a bad N is refused with
    /// what is allowed.
    pub fn with_test_defects(mut self, spec: &str) -> Result<Self, String> {
        for d in spec.split(',').map(str::trim).filter(|d| !d.is_empty()) {
            match d.split_once('=') {
                Some(("startup-plateau-rounds", n)) => {
                    self.full_bw_rounds =
                        n.trim().parse().ok().filter(|n| (1..=1000).contains(n)).ok_or_else(|| format!("{d}: N must be a whole number from 1 to 1000"))?;
                }
                None if d == "probe-rtt-never" => self.probe_rtt_interval = Duration::from_secs(24 * 3600),
                None if d == "probe-rtt-expires-unentered" => self.probe_rtt_expires_unentered = true,
                None if d == "max-bw-never-forgets" => self.max_bw_never_forgets = true,
                None if d == "max-bw-counts-app-limited" => self.max_bw_counts_app_limited = true,
                None if d == "inflight-longterm-grows-app-limited" => self.inflight_longterm_grows_app_limited = true,
                None if d == "idle-restart-enters-startup" => self.idle_restart_enters_startup = true,
                None if d == "probe-rtt-ignores-idle-restart" => self.probe_rtt_ignores_idle_restart = true,
                None if d == "full-bw-counts-app-limited" => self.full_bw_counts_app_limited = true,
                None if d == "spurious-loss-not-undone" => self.spurious_loss_not_undone = true,
                None if d == "rate-samples-at-ack-arrival" => self.rate_samples_at_ack_arrival = true,
                _ => return Err(format!("{d}: not a defect; one of {}", DEFECTS.iter().map(|(n, _)| *n).collect::<Vec<_>>().join(", "))),
            }
        }
        Ok(self)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::BbrVersion;

    #[test]
    fn defects_by_name_break_what_they_say_and_unknown_ones_are_refused() {
        let good = BbrParams::for_version(BbrVersion::V3);
        let p = good.with_test_defects("startup-plateau-rounds=6, max-bw-never-forgets").unwrap();
        assert_eq!((p.full_bw_rounds, p.max_bw_never_forgets), (6, true));
        assert_eq!(good.full_bw_rounds, 3);
        assert!(good.with_test_defects("probe-rtt-never").unwrap().probe_rtt_interval >= Duration::from_secs(3600));
        assert!(good.with_test_defects("startup-plateau-rounds=0").unwrap_err().contains("from 1 to 1000"));
        assert!(good.with_test_defects("faster").unwrap_err().contains("not a defect; one of startup-plateau-rounds=N"));
    }
}
