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

/// A buffer-bound flow's rate, bit/s: a window of `window_bytes` delivered once per RTT.
pub fn buffer_bound_bps(window_bytes: f64, rtt_s: f64) -> Option<f64> {
    (window_bytes > 0.0 && rtt_s > 0.0).then(|| window_bytes * 8.0 / rtt_s)
}

/// Ware, Mukerjee, Seshan and Sherry, "Modeling BBR's Interactions with Loss-Based Congestion
/// Control", IMC 2019, §4: when BBR(v1) shares a drop-tail bottleneck with loss-based flows
/// that keep its buffer full, BBR is window-limited at its in-flight cap (2 × its estimated
/// BDP, the estimate's RTT taken in ProbeRTT while the loss-based flows' packets still sit in
/// the queue), and the N BBR flows' aggregate share of the link is
///
/// `p = 1/2 − 1/(2X) − 4N/q`
///
/// with `q` the buffer in packets, `X = q / (c·l)` the buffer in bandwidth-delay products
/// (`c·l`, the link's rate times the path's base RTT, in packets) and `4N` the packets the N
/// BBR flows keep in flight during ProbeRTT. It does not depend on the number of loss-based
/// flows. `None` where the model does not apply: a buffer of one BDP or less (the cap is then
/// not what holds BBR back; the paper's model is for deep buffers) or a share it puts below 0.
pub fn ware_bbr_share(buffer_pkts: f64, bdp_pkts: f64, bbr_flows: usize) -> Option<f64> {
    if !(buffer_pkts > bdp_pkts && bdp_pkts > 0.0 && bbr_flows > 0) {
        return None;
    }
    let x = buffer_pkts / bdp_pkts;
    let p = 0.5 - 1.0 / (2.0 * x) - 4.0 * bbr_flows as f64 / buffer_pkts;
    (p > 0.0).then_some(p)
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

    /// The paper's formula, worked: a buffer of 4 BDP (X = 4) of 100-packet BDP, 1 BBR flow:
    /// 1/2 − 1/8 − 4/400 = 0.365; of 10 BDP, 0.45 − 0.004 = 0.446; the share grows with the
    /// buffer towards a half and does not take the number of loss-based flows.
    #[test]
    fn bbr_against_loss_based_flows_follows_ware_et_al() {
        let p4 = ware_bbr_share(400.0, 100.0, 1).unwrap();
        assert!((p4 - 0.365).abs() < 1e-12, "{p4}");
        let p10 = ware_bbr_share(1000.0, 100.0, 1).unwrap();
        assert!((p10 - 0.446).abs() < 1e-12, "{p10}");
        assert!(p10 > p4);
        // Two BBR flows: 4 more packets each in ProbeRTT, so a little less in all.
        let two = ware_bbr_share(400.0, 100.0, 2).unwrap();
        assert!((two - 0.355).abs() < 1e-12, "{two}");
        // One BDP or less: the cap does not bind, no model.
        assert_eq!(ware_bbr_share(100.0, 100.0, 1), None);
        assert_eq!(ware_bbr_share(50.0, 100.0, 1), None);
        assert_eq!(ware_bbr_share(400.0, 100.0, 0), None);
    }
}
