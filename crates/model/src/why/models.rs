//! The models of a buffer-bound flow and of BBR sharing a queue with loss-based flows (issue 30
//! §3). Pure functions: the why line feeds them what the result recorded.

/// Linux's receive window from a receive buffer of `space` bytes, `tcp_win_from_space()`
/// (include/net/tcp.h): the kernel keeps part of the buffer for its own bookkeeping (each
/// segment's `sk_buff`), so it advertises less than the buffer holds.
///
/// Before Linux 6.6 the part was fixed by `net.ipv4.tcp_adv_win_scale` (default 1):
/// `space − (space >> scale)` for a positive scale, `space >> −scale` otherwise. Since 6.6
/// (commit "tcp: deprecate tcp_adv_win_scale") the sysctl is obsolete and the window is
/// `space × scaling_ratio >> TCP_RMEM_TO_WIN_SCALE` (8), `scaling_ratio` starting at 128 (a
/// half, `TCP_DEFAULT_SCALING_RATIO`) and then measured from the received segments'
/// payload over their `truesize` (`tcp_measure_rcv_mss`). Both start from the same half at the
/// default; `scale` is that sysctl's value (1 gives the half).
pub fn tcp_win_from_space(space: u64, scale: i32) -> u64 {
    if scale > 0 {
        space - (space >> scale.min(63))
    } else {
        space >> (-scale).min(63)
    }
}

/// A kernel release's version, major and minor: `"6.18.44-fc-v782"` → `(6, 18)`. `None` when
/// the release does not start with two numbers.
pub fn linux_version(release: &str) -> Option<(u32, u32)> {
    let mut parts = release.split(|c: char| !c.is_ascii_digit());
    let major = parts.next()?.parse().ok()?;
    let minor = parts.next()?.parse().ok()?;
    Some((major, minor))
}

/// Whether a receiving kernel of version `v` derives its window from the buffer by the fixed
/// overhead of `tcp_adv_win_scale` (before 6.6), so that [`tcp_win_from_space`] models it.
/// From 6.6 on (Documentation/networking/ip-sysctl.rst: `tcp_adv_win_scale`, "obsolete since
/// linux-6.6") the share is the per-socket `scaling_ratio`, measured from the received
/// segments (`tcp_measure_rcv_mss`, net/ipv4/tcp_input.c), which nothing in a result records:
/// no formula of the kept buffer alone gives it (measured on 6.18 with `--rcvbuf 64kib`: 0.61 of the buffer, not 0.5).
pub fn window_has_fixed_overhead(v: (u32, u32)) -> bool {
    v < (6, 6)
}

/// The evidence beside a receive-window model: the window the receiver advertised (the
/// sender's time-weighted mean `tcpi_snd_wnd`) and its ratio to the receive buffer the kernel
/// kept (read back with `SO_RCVBUF`), e.g. "advertised 80.0 kB, 0.61 of the 131.1 kB kept".
pub fn advertised_of_kept(advertised_bytes: f64, kept_bytes: f64) -> Option<String> {
    (advertised_bytes > 0.0 && kept_bytes > 0.0).then(|| {
        format!(
            "advertised {}, {:.2} of the {} kept",
            crate::units::fmt_bytes(advertised_bytes.round() as u64),
            advertised_bytes / kept_bytes,
            crate::units::fmt_bytes(kept_bytes.round() as u64)
        )
    })
}

/// A buffer-bound flow's rate, bit/s: a window of `window_bytes` delivered once per RTT.
pub fn buffer_bound_bps(window_bytes: f64, rtt_s: f64) -> Option<f64> {
    (window_bytes > 0.0 && rtt_s > 0.0).then(|| window_bytes * 8.0 / rtt_s)
}

/// Ware, Mukerjee, Seshan and Sherry, "Modeling BBR's Interactions with Loss-Based Congestion
/// Control", IMC 2019, §4 (equations 7–11): BBR(v1) sharing a drop-tail bottleneck with
/// loss-based flows that keep its buffer full is window-limited at its in-flight cap (2 × its
/// estimated BDP, the estimate's RTT taken in ProbeRTT while the loss-based flows' packets, and
/// the 4 packets each BBR flow keeps, still sit in the queue). Setting that cap equal to what
/// BBR has in flight gives the **loss-based flows'** share (equation 9)
///
/// `p = 1/2 − 1/(2X) − 4N/q`
///
/// with `q` the buffer in packets, `X = q / (c·l)` the buffer in bandwidth-delay products (`c·l`,
/// the link's rate times the path's base RTT `l`, in packets) and `N` the BBR flows; a negative
/// `p` means BBR's cap exceeds the BDP and the buffer together, and BBR takes the link. The N BBR
/// flows get the rest, less the time they spend in ProbeRTT, draining the full queue (`q/c`),
/// holding 200 ms and a round (`l`) once per 10 s (equations 10–11; tcp_bbr.c's
/// `bbr_probe_rtt_mode_ms` and `bbr_min_rtt_win_sec`):
///
/// `BBR's share = (1 − max(p, 0)) · (1 − (q/c + 0.2 s + l) / 10 s)`
///
/// It does not depend on the number of loss-based flows. `None` below one BDP of buffer (the
/// paper validates 1–64 BDP; below one the loss-based flows cannot keep a standing queue).
pub fn ware_bbr_share(buffer_pkts: f64, bdp_pkts: f64, base_rtt_s: f64, bbr_flows: usize) -> Option<f64> {
    if !(bdp_pkts > 0.0 && buffer_pkts >= bdp_pkts && base_rtt_s > 0.0 && bbr_flows > 0) {
        return None;
    }
    let x = buffer_pkts / bdp_pkts;
    let loss_based = (0.5 - 1.0 / (2.0 * x) - 4.0 * bbr_flows as f64 / buffer_pkts).max(0.0);
    // q/c: the full queue drains in X base RTTs.
    let probe_rtt_s = x * base_rtt_s + 0.2 + base_rtt_s;
    let share = (1.0 - loss_based) * (1.0 - probe_rtt_s / 10.0);
    (share > 0.0).then_some(share)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The kernel's window from a buffer: the default scale halves it; a negative scale keeps
    /// a quarter at -2, a scale of 2 three quarters (Documentation/networking/ip-sysctl.rst,
    /// tcp_adv_win_scale: "bytes/2^tcp_adv_win_scale (if tcp_adv_win_scale > 0) or
    /// bytes-bytes/2^(-tcp_adv_win_scale)" of the buffer is overhead).
    #[test]
    fn the_window_is_the_buffer_less_the_kernels_overhead() {
        assert_eq!(tcp_win_from_space(131_072, 1), 65_536);
        assert_eq!(tcp_win_from_space(131_072, 2), 98_304);
        assert_eq!(tcp_win_from_space(131_072, -2), 32_768);
        // `--rcvbuf 64kib`: 65536 asked, 131072 kept (doubled), 65536 advertised, at 40 ms:
        // 13.1 Mbit/s.
        let bps = buffer_bound_bps(tcp_win_from_space(131_072, 1) as f64, 0.04).unwrap();
        assert!((bps - 13.107e6).abs() < 1e3, "{bps}");
        assert_eq!(buffer_bound_bps(0.0, 0.04), None);
    }

    /// Releases as `uname -r` prints them; 6.6 is the first whose window share is measured.
    #[test]
    fn a_kernel_release_gives_its_version_and_its_window_rule() {
        assert_eq!(linux_version("6.18.44-fc-v782"), Some((6, 18)));
        assert_eq!(linux_version("5.15.0-91-generic"), Some((5, 15)));
        assert_eq!(linux_version("6.6"), Some((6, 6)));
        assert_eq!(linux_version("linux"), None);
        assert_eq!(linux_version("6"), None);
        assert!(window_has_fixed_overhead((5, 15)));
        assert!(window_has_fixed_overhead((6, 5)));
        assert!(!window_has_fixed_overhead((6, 6)));
        assert!(!window_has_fixed_overhead((6, 18)));
        assert!(!window_has_fixed_overhead((7, 0)));
    }

    /// 80 000 bytes advertised of a kept 131 072: 80000/131072 = 0.6104 → "0.61".
    #[test]
    fn the_advertised_window_is_shown_against_the_kept_buffer() {
        assert_eq!(advertised_of_kept(80_000.0, 131_072.0).as_deref(), Some("advertised 80.0 kB, 0.61 of the 131.1 kB kept"));
        // At the pre-6.6 default the window is half: 65 536 of 131 072.
        assert_eq!(advertised_of_kept(65_536.0, 131_072.0).as_deref(), Some("advertised 65.5 kB, 0.50 of the 131.1 kB kept"));
        assert_eq!(advertised_of_kept(0.0, 131_072.0), None);
        assert_eq!(advertised_of_kept(80_000.0, 0.0), None);
    }

    /// The paper's formulas, worked by hand. A buffer of 4 BDP of a 100-packet BDP at a 40 ms
    /// base RTT, 1 BBR flow: the loss-based flows keep p = 1/2 − 1/8 − 4/400 = 0.365, BBR has
    /// 0.635 of the time it sends, and sends (10 − 0.16 − 0.2 − 0.04)/10 = 0.96 of the time:
    /// 0.6096. At 10 BDP: p = 0.446, 0.554 × (10 − 0.4 − 0.24)/10 = 0.518544. The share falls
    /// towards a half as the buffer grows; 1 BDP leaves the loss-based flows nothing (p < 0).
    #[test]
    fn bbr_against_loss_based_flows_follows_ware_et_al() {
        let close = |a: f64, b: f64| (a - b).abs() < 1e-12;
        let x4 = ware_bbr_share(400.0, 100.0, 0.04, 1).unwrap();
        assert!(close(x4, 0.6096), "{x4}");
        let x10 = ware_bbr_share(1000.0, 100.0, 0.04, 1).unwrap();
        assert!(close(x10, 0.518544), "{x10}");
        assert!(x10 < x4);
        // Two BBR flows keep 4 more packets in ProbeRTT: the loss-based share falls to 0.355.
        let two = ware_bbr_share(400.0, 100.0, 0.04, 2).unwrap();
        assert!(close(two, 0.645 * 0.96), "{two}");
        // One BDP: p = −0.04, so BBR has the link but for ProbeRTT: (10 − 0.04 − 0.2 − 0.04)/10.
        let x1 = ware_bbr_share(100.0, 100.0, 0.04, 1).unwrap();
        assert!(close(x1, 0.972), "{x1}");
        // The paper's 10 Mbit/s, 40 ms, 32 BDP (q = 1066.7 packets): p = 0.4807, 0.5193 × 0.848.
        let bdp = 10e6 * 0.04 / 12_000.0;
        let paper = ware_bbr_share(32.0 * bdp, bdp, 0.04, 1).unwrap();
        assert!((paper - 0.4404).abs() < 1e-4, "{paper}");
        assert_eq!(ware_bbr_share(50.0, 100.0, 0.04, 1), None);
        assert_eq!(ware_bbr_share(400.0, 100.0, 0.04, 0), None);
        assert_eq!(ware_bbr_share(400.0, 100.0, 0.0, 1), None);
    }
}
