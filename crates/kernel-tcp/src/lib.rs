//! `ccbench-kernel-tcp`: the kernel's view of a TCP socket, for a congestion-control
//! test bench on Linux.
//!
//! What this crate offers:
//!
//! * [`set_congestion`] / [`congestion`]: choose or read a socket's congestion
//!   control algorithm (`TCP_CONGESTION`).
//! * [`tcp_info`]: `getsockopt(TCP_INFO)` decoded into [`TcpInfo`], with units
//!   in every field name. The raw `#[repr(C)]` mirror of the kernel's
//!   `struct tcp_info` is [`RawTcpInfo`].
//! * [`cc_info`]: `getsockopt(TCP_CC_INFO)` decoded into [`CcInfo`]; for BBR this
//!   includes the bandwidth / min-RTT model and a [`BbrMode`] inferred from the
//!   gains.
//! * [`available_congestion_controls`], [`allowed_congestion_controls`],
//!   [`default_congestion_control`], [`default_qdisc`]: host-wide settings
//!   read from `/proc/sys`.
//! * [`Sample`]: one cheap, allocation-free, serializable snapshot per socket
//!   per sampler tick.
//!
//! # Kernel versions and missing fields
//!
//! `struct tcp_info` has grown over the years and the kernel copies out
//! `min(optlen, sizeof(its struct))` bytes. We zero the buffer and keep the
//! returned length, so a field the running kernel does not know is never read
//! as garbage:
//!
//! * fields in the original 104-byte layout (through `tcpi_total_retrans`,
//!   present on every kernel that has `TCP_INFO`) are plain values;
//! * every later field is an `Option`, `None` when the kernel did not fill it;
//! * the bitfield byte holding `tcpi_delivery_rate_app_limited` (4.9) and
//!   `tcpi_fastopen_client_fail` (5.5) is inside the original layout's padding,
//!   so it is always copied; older kernels leave those bits zero, which reads
//!   as `false` / `0`.
//!
//! [`Sample`] flattens those `Option`s to `0` (documented per field) so that a
//! time series stays a table of plain numbers.
//!
//! # Units
//!
//! The kernel reports rates in **bytes** per second; this crate converts every
//! rate to **bits** per second (`*_bps`), saturating, so the kernel's
//! "unlimited" marker `~0` stays `u64::MAX`.

use std::ffi::c_void;
use std::io;
use std::mem::{offset_of, size_of, size_of_val};
use std::os::fd::{AsFd, AsRawFd, BorrowedFd};

use serde::{Deserialize, Serialize};

/// `TCP_CA_NAME_MAX` from include/net/tcp.h: algorithm names, including the
/// terminating NUL, never exceed this.
const TCP_CA_NAME_MAX: usize = 16;

// ---------------------------------------------------------------------------
// getsockopt / setsockopt plumbing
// ---------------------------------------------------------------------------

/// `getsockopt(fd, IPPROTO_TCP, opt, buf, len)`, returning the length the
/// kernel actually wrote.
///
/// # Safety
/// `buf` must be valid for writes of `len` bytes.
unsafe fn getsockopt_tcp(fd: BorrowedFd<'_>, opt: libc::c_int, buf: *mut c_void, len: usize) -> io::Result<usize> {
    let mut optlen = libc::socklen_t::try_from(len).map_err(|_| io::Error::from(io::ErrorKind::InvalidInput))?;
    // SAFETY: caller guarantees buf/len; optlen is a live local.
    let rc = unsafe { libc::getsockopt(fd.as_raw_fd(), libc::IPPROTO_TCP, opt, buf, &mut optlen) };
    if rc != 0 {
        return Err(io::Error::last_os_error());
    }
    // The kernel never reports more than we offered, but clamp anyway so a
    // misbehaving kernel cannot make us read past the buffer.
    Ok((optlen as usize).min(len))
}

/// Reads the algorithm name into a stack buffer; returns the buffer and the
/// name length (without trailing NULs). Used by [`Sample::read`] to stay
/// allocation-free.
fn congestion_name(fd: BorrowedFd<'_>) -> io::Result<([u8; TCP_CA_NAME_MAX], usize)> {
    let mut buf = [0u8; TCP_CA_NAME_MAX];
    // SAFETY: buf is a live local of exactly the length passed.
    let n = unsafe { getsockopt_tcp(fd, libc::TCP_CONGESTION, buf.as_mut_ptr().cast(), buf.len())? };
    // The kernel copies the whole fixed-size name field, NUL padding included.
    let name_len = buf[..n].iter().position(|&b| b == 0).unwrap_or(n);
    Ok((buf, name_len))
}

/// Selects the congestion control algorithm of a TCP socket
/// (`setsockopt(TCP_CONGESTION)`).
///
/// Errors: `ENOENT` for an algorithm the kernel does not know (and cannot
/// autoload), `EPERM` for one not in `tcp_allowed_congestion_control` without
/// `CAP_NET_ADMIN`, `InvalidInput` for names the kernel would silently
/// truncate or that contain NUL.
pub fn set_congestion<F: AsFd>(fd: F, name: &str) -> io::Result<()> {
    // The kernel copies at most TCP_CA_NAME_MAX-1 bytes, so a longer name
    // would silently select a *different* (truncated) algorithm. Refuse.
    if name.len() >= TCP_CA_NAME_MAX || name.as_bytes().contains(&0) {
        return Err(io::Error::new(io::ErrorKind::InvalidInput, "congestion control name must be < 16 bytes and contain no NUL"));
    }
    let fd = fd.as_fd();
    // SAFETY: pointer/len describe the borrowed &str, valid for the call.
    let rc = unsafe { libc::setsockopt(fd.as_raw_fd(), libc::IPPROTO_TCP, libc::TCP_CONGESTION, name.as_ptr().cast(), name.len() as libc::socklen_t) };
    if rc != 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

/// The congestion control algorithm of a TCP socket
/// (`getsockopt(TCP_CONGESTION)`), trailing NULs removed.
pub fn congestion<F: AsFd>(fd: F) -> io::Result<String> {
    let (buf, n) = congestion_name(fd.as_fd())?;
    Ok(String::from_utf8_lossy(&buf[..n]).into_owned())
}

// ---------------------------------------------------------------------------
// struct tcp_info
// ---------------------------------------------------------------------------

/// Byte-for-byte mirror of the kernel's `struct tcp_info`
/// (include/uapi/linux/tcp.h) as of Linux 6.18 (280 bytes).
///
/// Field comments give the kernel version that appended each group; the
/// kernel fills only a prefix on older versions (see [`tcp_info`]).
/// Units are the kernel's: times in µs unless noted, rates in bytes/s.
#[repr(C)]
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct RawTcpInfo {
    pub tcpi_state: u8,
    pub tcpi_ca_state: u8,
    pub tcpi_retransmits: u8,
    pub tcpi_probes: u8,
    pub tcpi_backoff: u8,
    pub tcpi_options: u8,
    /// C bitfields `tcpi_snd_wscale:4, tcpi_rcv_wscale:4`; see
    /// [`RawTcpInfo::snd_wscale`].
    pub tcpi_wscale_bits: u8,
    /// C bitfields `tcpi_delivery_rate_app_limited:1,
    /// tcpi_fastopen_client_fail:2`; see [`RawTcpInfo::app_limited`].
    pub tcpi_app_limited_bits: u8,

    pub tcpi_rto: u32,
    pub tcpi_ato: u32,
    pub tcpi_snd_mss: u32,
    pub tcpi_rcv_mss: u32,

    pub tcpi_unacked: u32,
    pub tcpi_sacked: u32,
    pub tcpi_lost: u32,
    pub tcpi_retrans: u32,
    /// Unused since 4.15; always 0.
    pub tcpi_fackets: u32,

    /// Milliseconds.
    pub tcpi_last_data_sent: u32,
    /// Never filled by Linux.
    pub tcpi_last_ack_sent: u32,
    /// Milliseconds.
    pub tcpi_last_data_recv: u32,
    /// Milliseconds.
    pub tcpi_last_ack_recv: u32,

    pub tcpi_pmtu: u32,
    pub tcpi_rcv_ssthresh: u32,
    pub tcpi_rtt: u32,
    pub tcpi_rttvar: u32,
    pub tcpi_snd_ssthresh: u32,
    pub tcpi_snd_cwnd: u32,
    pub tcpi_advmss: u32,
    pub tcpi_reordering: u32,

    pub tcpi_rcv_rtt: u32,
    pub tcpi_rcv_space: u32,

    pub tcpi_total_retrans: u32,

    // 3.15 / 4.1 / 4.2
    pub tcpi_pacing_rate: u64,
    pub tcpi_max_pacing_rate: u64,
    pub tcpi_bytes_acked: u64,
    pub tcpi_bytes_received: u64,
    pub tcpi_segs_out: u32,
    pub tcpi_segs_in: u32,

    // 4.6
    pub tcpi_notsent_bytes: u32,
    pub tcpi_min_rtt: u32,
    pub tcpi_data_segs_in: u32,
    pub tcpi_data_segs_out: u32,

    // 4.9
    pub tcpi_delivery_rate: u64,

    // 4.10
    pub tcpi_busy_time: u64,
    pub tcpi_rwnd_limited: u64,
    pub tcpi_sndbuf_limited: u64,

    // 4.18
    pub tcpi_delivered: u32,
    pub tcpi_delivered_ce: u32,

    // 4.19
    pub tcpi_bytes_sent: u64,
    pub tcpi_bytes_retrans: u64,
    pub tcpi_dsack_dups: u32,
    pub tcpi_reord_seen: u32,

    // 5.4
    pub tcpi_rcv_ooopack: u32,
    pub tcpi_snd_wnd: u32,

    // 6.2
    pub tcpi_rcv_wnd: u32,
    pub tcpi_rehash: u32,

    // 6.7
    pub tcpi_total_rto: u16,
    pub tcpi_total_rto_recoveries: u16,
    /// Milliseconds.
    pub tcpi_total_rto_time: u32,

    // 6.18 (Accurate ECN)
    pub tcpi_received_ce: u32,
    pub tcpi_delivered_e1_bytes: u32,
    pub tcpi_delivered_e0_bytes: u32,
    pub tcpi_delivered_ce_bytes: u32,
    pub tcpi_received_e1_bytes: u32,
    pub tcpi_received_e0_bytes: u32,
    pub tcpi_received_ce_bytes: u32,
    /// A `__u32` of AccECN bitfields (ecn mode, option seen, fail mode, ...),
    /// kept raw: nothing in the bench needs them decoded.
    pub tcpi_accecn_bits: u32,
}

// Compile-time layout checks against the offsets of the C struct, so a typo in
// the mirror breaks the build instead of silently shifting every later field.
const _: () = {
    assert!(offset_of!(RawTcpInfo, tcpi_app_limited_bits) == 7);
    assert!(offset_of!(RawTcpInfo, tcpi_rto) == 8);
    assert!(offset_of!(RawTcpInfo, tcpi_rtt) == 68);
    assert!(offset_of!(RawTcpInfo, tcpi_snd_cwnd) == 80);
    assert!(offset_of!(RawTcpInfo, tcpi_total_retrans) == 100);
    assert!(offset_of!(RawTcpInfo, tcpi_pacing_rate) == 104);
    assert!(offset_of!(RawTcpInfo, tcpi_segs_out) == 136);
    assert!(offset_of!(RawTcpInfo, tcpi_min_rtt) == 148);
    assert!(offset_of!(RawTcpInfo, tcpi_delivery_rate) == 160);
    assert!(offset_of!(RawTcpInfo, tcpi_busy_time) == 168);
    assert!(offset_of!(RawTcpInfo, tcpi_delivered) == 192);
    assert!(offset_of!(RawTcpInfo, tcpi_bytes_sent) == 200);
    assert!(offset_of!(RawTcpInfo, tcpi_bytes_retrans) == 208);
    assert!(offset_of!(RawTcpInfo, tcpi_dsack_dups) == 216);
    assert!(offset_of!(RawTcpInfo, tcpi_rcv_ooopack) == 224);
    assert!(offset_of!(RawTcpInfo, tcpi_snd_wnd) == 228);
    assert!(offset_of!(RawTcpInfo, tcpi_rcv_wnd) == 232);
    assert!(offset_of!(RawTcpInfo, tcpi_total_rto) == 240);
    assert!(offset_of!(RawTcpInfo, tcpi_total_rto_time) == 244);
    assert!(offset_of!(RawTcpInfo, tcpi_received_ce) == 248);
    assert!(size_of::<RawTcpInfo>() == 280);
};

/// Size of the kernel's struct in each release that grew it, for reference
/// and tests: 5.4 → 232, 6.2 → 240, 6.7 → 248, 6.18 → 280.
pub const RAW_TCP_INFO_SIZE: usize = size_of::<RawTcpInfo>();

impl RawTcpInfo {
    // GCC allocates bitfields from the least significant bit on
    // little-endian targets and from the most significant bit on big-endian
    // ones; the uapi header relies on that ABI, so we must too.

    /// `tcpi_snd_wscale` (4-bit bitfield).
    pub fn snd_wscale(&self) -> u8 {
        if cfg!(target_endian = "little") {
            self.tcpi_wscale_bits & 0x0f
        } else {
            self.tcpi_wscale_bits >> 4
        }
    }

    /// `tcpi_rcv_wscale` (4-bit bitfield).
    pub fn rcv_wscale(&self) -> u8 {
        if cfg!(target_endian = "little") {
            self.tcpi_wscale_bits >> 4
        } else {
            self.tcpi_wscale_bits & 0x0f
        }
    }

    /// `tcpi_delivery_rate_app_limited` (1-bit bitfield).
    pub fn app_limited(&self) -> bool {
        if cfg!(target_endian = "little") {
            self.tcpi_app_limited_bits & 0x01 != 0
        } else {
            self.tcpi_app_limited_bits & 0x80 != 0
        }
    }

    /// `tcpi_fastopen_client_fail` (2-bit bitfield).
    pub fn fastopen_client_fail(&self) -> u8 {
        if cfg!(target_endian = "little") {
            (self.tcpi_app_limited_bits >> 1) & 0x03
        } else {
            (self.tcpi_app_limited_bits >> 5) & 0x03
        }
    }
}

/// `getsockopt(TCP_INFO)` into a zeroed [`RawTcpInfo`]; returns the struct and
/// the number of bytes the kernel filled (`min(sizeof mirror, sizeof kernel)`).
pub fn tcp_info_raw<F: AsFd>(fd: F) -> io::Result<(RawTcpInfo, usize)> {
    let mut raw = RawTcpInfo::default();
    // SAFETY: raw is a live, plain-integer repr(C) struct of the given size;
    // any byte pattern the kernel writes is a valid value.
    let len = unsafe { getsockopt_tcp(fd.as_fd(), libc::TCP_INFO, (&mut raw as *mut RawTcpInfo).cast(), size_of::<RawTcpInfo>())? };
    Ok((raw, len))
}

/// Size of the running kernel's `struct tcp_info`, found by offering a buffer
/// larger than any kernel's struct. May exceed [`RAW_TCP_INFO_SIZE`] on kernels
/// newer than this mirror; the extra tail is then simply not decoded.
pub fn kernel_tcp_info_size<F: AsFd>(fd: F) -> io::Result<usize> {
    let mut buf = [0u64; 128]; // 1 KiB, 8-aligned like the real struct
                               // SAFETY: buf is a live local of exactly the length passed.
    unsafe { getsockopt_tcp(fd.as_fd(), libc::TCP_INFO, buf.as_mut_ptr().cast(), size_of_val(&buf)) }
}

/// Decoded `struct tcp_info`, units in names.
///
/// Plain fields exist on every kernel. `Option` fields are `None` when the
/// running kernel's `struct tcp_info` is too short to contain them (see the
/// crate docs). Rates are converted from the kernel's bytes/s to **bits/s**.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct TcpInfo {
    /// Bytes of `struct tcp_info` the kernel filled.
    pub kernel_len: usize,
    /// `TCP_ESTABLISHED` = 1, ... (include/net/tcp_states.h).
    pub state: u8,
    /// `TCP_CA_Open` = 0, `Disorder` = 1, `CWR` = 2, `Recovery` = 3, `Loss` = 4.
    pub ca_state: u8,
    pub retransmits: u8,
    pub probes: u8,
    pub backoff: u8,
    /// `TCPI_OPT_*` bit set (timestamps = 1, sack = 2, wscale = 4, ecn = 8, ...).
    pub options: u8,
    pub snd_wscale: u8,
    pub rcv_wscale: u8,
    /// Last delivery-rate sample was application limited (false before 4.9).
    pub app_limited: bool,
    /// TFO client failure code (0 before 5.5).
    pub fastopen_client_fail: u8,
    pub rto_us: u32,
    pub ato_us: u32,
    pub snd_mss: u32,
    pub rcv_mss: u32,
    /// Packets sent but not yet acknowledged.
    pub unacked: u32,
    pub sacked: u32,
    pub lost: u32,
    pub retrans: u32,
    pub last_data_sent_ms: u32,
    pub last_data_recv_ms: u32,
    pub last_ack_recv_ms: u32,
    pub pmtu: u32,
    pub rcv_ssthresh: u32,
    /// Smoothed RTT.
    pub rtt_us: u32,
    pub rttvar_us: u32,
    /// Packets; `0x7fff_ffff` (`TCP_INFINITE_SSTHRESH`) until first loss.
    pub snd_ssthresh: u32,
    /// Congestion window in packets.
    pub snd_cwnd: u32,
    pub advmss: u32,
    pub reordering: u32,
    pub rcv_rtt_us: u32,
    pub rcv_space: u32,
    pub total_retrans: u32,
    /// Kernel pacing rate converted to bits/s; `u64::MAX` = not set/unlimited.
    pub pacing_rate_bps: Option<u64>,
    /// `SO_MAX_PACING_RATE` in bits/s; `u64::MAX` = unlimited (the default).
    pub max_pacing_rate_bps: Option<u64>,
    pub bytes_acked: Option<u64>,
    pub bytes_received: Option<u64>,
    pub segs_out: Option<u32>,
    pub segs_in: Option<u32>,
    pub notsent_bytes: Option<u32>,
    /// Windowed minimum RTT; also `None` while the kernel has no RTT sample
    /// yet (it reports `~0` then).
    pub min_rtt_us: Option<u32>,
    pub data_segs_in: Option<u32>,
    pub data_segs_out: Option<u32>,
    /// Most recent delivery-rate sample, converted to bits/s.
    pub delivery_rate_bps: Option<u64>,
    pub busy_time_us: Option<u64>,
    pub rwnd_limited_us: Option<u64>,
    pub sndbuf_limited_us: Option<u64>,
    /// Packets delivered (incl. retransmits), as counted by rate sampling.
    pub delivered: Option<u32>,
    pub delivered_ce: Option<u32>,
    pub bytes_sent: Option<u64>,
    pub bytes_retrans: Option<u64>,
    pub dsack_dups: Option<u32>,
    pub reord_seen: Option<u32>,
    pub rcv_ooopack: Option<u32>,
    /// Peer's advertised receive window after scaling, bytes.
    pub snd_wnd: Option<u32>,
    /// Our advertised receive window after scaling, bytes.
    pub rcv_wnd: Option<u32>,
    pub rehash: Option<u32>,
    pub total_rto: Option<u16>,
    pub total_rto_recoveries: Option<u16>,
    pub total_rto_time_ms: Option<u32>,
    pub received_ce: Option<u32>,
}

/// Kernel bytes/s → bits/s. Saturating so `~0` ("unlimited") stays `u64::MAX`.
fn bytes_to_bits(rate: u64) -> u64 {
    rate.saturating_mul(8)
}

impl TcpInfo {
    /// Decodes a mirror of which the kernel filled the first `len` bytes.
    pub fn from_raw(raw: &RawTcpInfo, len: usize) -> Self {
        // A field is present only if the kernel copied all of its bytes.
        macro_rules! opt {
            ($f:ident) => {{
                let end = offset_of!(RawTcpInfo, $f) + size_of_val(&raw.$f);
                if len >= end {
                    Some(raw.$f)
                } else {
                    None
                }
            }};
        }
        TcpInfo {
            kernel_len: len,
            state: raw.tcpi_state,
            ca_state: raw.tcpi_ca_state,
            retransmits: raw.tcpi_retransmits,
            probes: raw.tcpi_probes,
            backoff: raw.tcpi_backoff,
            options: raw.tcpi_options,
            snd_wscale: raw.snd_wscale(),
            rcv_wscale: raw.rcv_wscale(),
            app_limited: raw.app_limited(),
            fastopen_client_fail: raw.fastopen_client_fail(),
            rto_us: raw.tcpi_rto,
            ato_us: raw.tcpi_ato,
            snd_mss: raw.tcpi_snd_mss,
            rcv_mss: raw.tcpi_rcv_mss,
            unacked: raw.tcpi_unacked,
            sacked: raw.tcpi_sacked,
            lost: raw.tcpi_lost,
            retrans: raw.tcpi_retrans,
            last_data_sent_ms: raw.tcpi_last_data_sent,
            last_data_recv_ms: raw.tcpi_last_data_recv,
            last_ack_recv_ms: raw.tcpi_last_ack_recv,
            pmtu: raw.tcpi_pmtu,
            rcv_ssthresh: raw.tcpi_rcv_ssthresh,
            rtt_us: raw.tcpi_rtt,
            rttvar_us: raw.tcpi_rttvar,
            snd_ssthresh: raw.tcpi_snd_ssthresh,
            snd_cwnd: raw.tcpi_snd_cwnd,
            advmss: raw.tcpi_advmss,
            reordering: raw.tcpi_reordering,
            rcv_rtt_us: raw.tcpi_rcv_rtt,
            rcv_space: raw.tcpi_rcv_space,
            total_retrans: raw.tcpi_total_retrans,
            pacing_rate_bps: opt!(tcpi_pacing_rate).map(bytes_to_bits),
            max_pacing_rate_bps: opt!(tcpi_max_pacing_rate).map(bytes_to_bits),
            bytes_acked: opt!(tcpi_bytes_acked),
            bytes_received: opt!(tcpi_bytes_received),
            segs_out: opt!(tcpi_segs_out),
            segs_in: opt!(tcpi_segs_in),
            notsent_bytes: opt!(tcpi_notsent_bytes),
            min_rtt_us: opt!(tcpi_min_rtt).filter(|&v| v != u32::MAX),
            data_segs_in: opt!(tcpi_data_segs_in),
            data_segs_out: opt!(tcpi_data_segs_out),
            delivery_rate_bps: opt!(tcpi_delivery_rate).map(bytes_to_bits),
            busy_time_us: opt!(tcpi_busy_time),
            rwnd_limited_us: opt!(tcpi_rwnd_limited),
            sndbuf_limited_us: opt!(tcpi_sndbuf_limited),
            delivered: opt!(tcpi_delivered),
            delivered_ce: opt!(tcpi_delivered_ce),
            bytes_sent: opt!(tcpi_bytes_sent),
            bytes_retrans: opt!(tcpi_bytes_retrans),
            dsack_dups: opt!(tcpi_dsack_dups),
            reord_seen: opt!(tcpi_reord_seen),
            rcv_ooopack: opt!(tcpi_rcv_ooopack),
            snd_wnd: opt!(tcpi_snd_wnd),
            rcv_wnd: opt!(tcpi_rcv_wnd),
            rehash: opt!(tcpi_rehash),
            total_rto: opt!(tcpi_total_rto),
            total_rto_recoveries: opt!(tcpi_total_rto_recoveries),
            total_rto_time_ms: opt!(tcpi_total_rto_time),
            received_ce: opt!(tcpi_received_ce),
        }
    }
}

/// `getsockopt(TCP_INFO)`, decoded. See [`TcpInfo`] for which fields may be
/// `None` on older kernels.
pub fn tcp_info<F: AsFd>(fd: F) -> io::Result<TcpInfo> {
    let (raw, len) = tcp_info_raw(fd)?;
    Ok(TcpInfo::from_raw(&raw, len))
}

// ---------------------------------------------------------------------------
// TCP_CC_INFO
// ---------------------------------------------------------------------------

/// BBRv1 gain constants from net/ipv4/tcp_bbr.c, in the kernel's fixed point
/// (`BBR_UNIT` = 1 << `BBR_SCALE` = 256 means 1.0).
pub mod bbr_gain {
    /// `BBR_UNIT`: gain 1.0.
    pub const UNIT: u32 = 1 << 8;
    /// `bbr_high_gain = BBR_UNIT * 2885 / 1000 + 1` = 739 (≈ 2/ln 2).
    pub const HIGH: u32 = UNIT * 2885 / 1000 + 1;
    /// `bbr_drain_gain = BBR_UNIT * 1000 / 2885` = 88 (≈ ln 2 / 2).
    pub const DRAIN: u32 = UNIT * 1000 / 2885;
    /// `bbr_cwnd_gain = BBR_UNIT * 2` = 512, used in PROBE_BW.
    pub const CWND: u32 = UNIT * 2;
    /// `bbr_pacing_gain[]`, the PROBE_BW cycle: 1.25, 0.75, then six × 1.0.
    pub const PACING_CYCLE: [u32; 8] = [UNIT * 5 / 4, UNIT * 3 / 4, UNIT, UNIT, UNIT, UNIT, UNIT, UNIT];
}

/// BBRv1 state machine mode, inferred from the gains the kernel reports (the
/// mode itself is not exported by `struct tcp_bbr_info`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
pub enum BbrMode {
    Startup,
    Drain,
    ProbeBw,
    ProbeRtt,
    /// Gains match no BBRv1 mode (e.g. an out-of-tree BBR variant).
    Unknown,
}

impl BbrMode {
    /// Maps raw kernel gains (units of 1/256) to a mode, mirroring
    /// `bbr_update_gains()` in net/ipv4/tcp_bbr.c:
    ///
    /// | mode      | pacing_gain          | cwnd_gain |
    /// |-----------|----------------------|-----------|
    /// | STARTUP   | 739                  | 739       |
    /// | DRAIN     | 88                   | 739       |
    /// | PROBE_BW  | 320 / 192 / 256      | 512       |
    /// | PROBE_RTT | 256                  | 256       |
    ///
    /// Exact integer matching is unambiguous because no two rows share a
    /// (pacing, cwnd) pair. PROBE_BW with the long-term (policer) bandwidth
    /// in use pins pacing at 256, which is still covered.
    pub fn from_gains(pacing_gain: u32, cwnd_gain: u32) -> Self {
        use bbr_gain::*;
        match (pacing_gain, cwnd_gain) {
            (HIGH, HIGH) => BbrMode::Startup,
            (DRAIN, HIGH) => BbrMode::Drain,
            (p, CWND) if PACING_CYCLE.contains(&p) => BbrMode::ProbeBw,
            (UNIT, UNIT) => BbrMode::ProbeRtt,
            _ => BbrMode::Unknown,
        }
    }
}

/// Decoded `struct tcp_bbr_info`.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct BbrInfo {
    /// Max-filtered bandwidth estimate, converted from bytes/s to bits/s.
    pub bw_bps: u64,
    /// BBR's windowed min RTT.
    pub min_rtt_us: u32,
    /// Pacing gain as a multiplier (kernel value / 256).
    pub pacing_gain: f64,
    /// Cwnd gain as a multiplier (kernel value / 256).
    pub cwnd_gain: f64,
    pub mode: BbrMode,
}

impl BbrInfo {
    /// Decodes the five `u32`s of `struct tcp_bbr_info`
    /// `{bw_lo, bw_hi, min_rtt, pacing_gain, cwnd_gain}`.
    pub fn from_raw(bw_lo: u32, bw_hi: u32, min_rtt_us: u32, pacing_gain: u32, cwnd_gain: u32) -> Self {
        let bw_bytes = u64::from(bw_lo) | (u64::from(bw_hi) << 32);
        BbrInfo {
            bw_bps: bytes_to_bits(bw_bytes),
            min_rtt_us,
            pacing_gain: f64::from(pacing_gain) / f64::from(bbr_gain::UNIT),
            cwnd_gain: f64::from(cwnd_gain) / f64::from(bbr_gain::UNIT),
            mode: BbrMode::from_gains(pacing_gain, cwnd_gain),
        }
    }
}

/// Decoded `struct tcpvegas_info` (TCP Vegas).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct VegasInfo {
    pub enabled: bool,
    pub rtt_count: u32,
    pub rtt_us: u32,
    pub min_rtt_us: u32,
}

/// Decoded `struct tcp_dctcp_info` (DCTCP).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct DctcpInfo {
    pub enabled: bool,
    pub ce_state: u16,
    /// ECN-marked fraction estimate scaled by 1024 (`DCTCP_MAX_ALPHA`).
    pub alpha: u32,
    pub ab_ecn: u32,
    pub ab_tot: u32,
}

/// Algorithm-specific state from `TCP_CC_INFO`.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum CcInfo {
    Bbr(BbrInfo),
    Vegas(VegasInfo),
    Dctcp(DctcpInfo),
}

/// Native-endian u32 at byte offset `off` (caller guarantees bounds).
fn ne_u32(b: &[u8], off: usize) -> u32 {
    u32::from_ne_bytes([b[off], b[off + 1], b[off + 2], b[off + 3]])
}

/// `getsockopt(TCP_CC_INFO)`, decoded.
///
/// Returns `None` for algorithms that export nothing (cubic, reno: the kernel
/// returns length 0) and for algorithms this crate does not decode. The
/// kernel does not say *which* union member it filled, so the algorithm name
/// (`TCP_CONGESTION`) picks the decoder; it is only read when the kernel
/// returned data, keeping the common cubic/reno path to one syscall.
pub fn cc_info<F: AsFd>(fd: F) -> io::Result<Option<CcInfo>> {
    let fd = fd.as_fd();
    // Room for union tcp_cc_info (20 bytes) and larger out-of-tree variants
    // (e.g. BBRv3 extends tcp_bbr_info); 4-byte aligned storage.
    let mut words = [0u32; 16];
    // SAFETY: words is a live local of exactly the length passed.
    let len = unsafe { getsockopt_tcp(fd, libc::TCP_CC_INFO, words.as_mut_ptr().cast(), size_of_val(&words))? };
    if len == 0 {
        return Ok(None);
    }
    let mut bytes = [0u8; 64];
    for (chunk, w) in bytes.chunks_exact_mut(4).zip(words.iter()) {
        chunk.copy_from_slice(&w.to_ne_bytes());
    }
    let (name_buf, name_len) = congestion_name(fd)?;
    let name = &name_buf[..name_len];

    // BBR variants out of tree keep the v1 prefix of tcp_bbr_info, so any
    // "bbr*" with >= 20 bytes decodes; non-v1 gains then map to Unknown.
    if name.starts_with(b"bbr") && len >= 20 {
        return Ok(Some(CcInfo::Bbr(BbrInfo::from_raw(ne_u32(&bytes, 0), ne_u32(&bytes, 4), ne_u32(&bytes, 8), ne_u32(&bytes, 12), ne_u32(&bytes, 16)))));
    }
    if name == b"dctcp" && len >= 16 {
        let enabled = u16::from_ne_bytes([bytes[0], bytes[1]]);
        let ce_state = u16::from_ne_bytes([bytes[2], bytes[3]]);
        return Ok(Some(CcInfo::Dctcp(DctcpInfo {
            enabled: enabled != 0,
            ce_state,
            alpha: ne_u32(&bytes, 4),
            ab_ecn: ne_u32(&bytes, 8),
            ab_tot: ne_u32(&bytes, 12),
        })));
    }
    // Westwood and Illinois also fill tcpvegas_info but with different
    // meanings, so only genuine Vegas is decoded as such.
    if name == b"vegas" && len >= 16 {
        return Ok(Some(CcInfo::Vegas(VegasInfo {
            enabled: ne_u32(&bytes, 0) != 0,
            rtt_count: ne_u32(&bytes, 4),
            rtt_us: ne_u32(&bytes, 8),
            min_rtt_us: ne_u32(&bytes, 12),
        })));
    }
    Ok(None)
}

// ---------------------------------------------------------------------------
// /proc/sys
// ---------------------------------------------------------------------------

fn read_proc_words(path: &str) -> io::Result<Vec<String>> {
    Ok(std::fs::read_to_string(path)?.split_whitespace().map(str::to_owned).collect())
}

fn read_proc_word(path: &str) -> io::Result<String> {
    Ok(std::fs::read_to_string(path)?.trim().to_owned())
}

/// Algorithms currently registered with the kernel
/// (`net.ipv4.tcp_available_congestion_control`). Modules not yet loaded are
/// absent, though root can still select (and thereby autoload) them.
pub fn available_congestion_controls() -> io::Result<Vec<String>> {
    read_proc_words("/proc/sys/net/ipv4/tcp_available_congestion_control")
}

/// Algorithms the kernel would load on first use: built as modules (`tcp_<name>.ko`, possibly
/// compressed) for the running kernel but not registered yet. Root selecting one with
/// `TCP_CONGESTION` autoloads it. Empty when the module index cannot be read.
pub fn loadable_congestion_controls() -> Vec<String> {
    let release = read_proc_word("/proc/sys/kernel/osrelease").unwrap_or_default();
    std::fs::read_to_string(format!("/lib/modules/{release}/modules.dep")).map(|dep| congestion_modules(&dep)).unwrap_or_default()
}

/// The congestion-control modules listed in a `modules.dep` text: each line starts with a
/// module's path, e.g. `kernel/net/ipv4/tcp_bbr.ko.zst: `.
pub fn congestion_modules(modules_dep: &str) -> Vec<String> {
    let mut names: Vec<String> = modules_dep
        .lines()
        .filter_map(|l| l.split(':').next())
        .filter_map(|path| path.rsplit('/').next())
        .filter_map(|file| file.strip_prefix("tcp_"))
        .filter_map(|rest| ["", ".xz", ".zst", ".gz"].iter().find_map(|ext| rest.strip_suffix(&format!(".ko{ext}"))))
        .filter(|name| !name.is_empty() && !["diag", "probe"].contains(name))
        .map(str::to_string)
        .collect();
    names.sort();
    names.dedup();
    names
}

/// Algorithms unprivileged sockets may select
/// (`net.ipv4.tcp_allowed_congestion_control`).
pub fn allowed_congestion_controls() -> io::Result<Vec<String>> {
    read_proc_words("/proc/sys/net/ipv4/tcp_allowed_congestion_control")
}

/// Algorithm new sockets get (`net.ipv4.tcp_congestion_control`).
pub fn default_congestion_control() -> io::Result<String> {
    read_proc_word("/proc/sys/net/ipv4/tcp_congestion_control")
}

/// Qdisc attached to new interfaces (`net.core.default_qdisc`). Matters for
/// BBR, which paces in-stack when the qdisc is not `fq`.
pub fn default_qdisc() -> io::Result<String> {
    read_proc_word("/proc/sys/net/core/default_qdisc")
}

#[cfg(test)]
mod module_tests {
    use super::congestion_modules;

    #[test]
    fn congestion_modules_from_modules_dep() {
        let dep = "kernel/net/ipv4/tcp_bbr.ko.zst:\nkernel/net/ipv4/tcp_vegas.ko.xz:\nkernel/net/ipv4/tcp_dctcp.ko:\n\
                   kernel/net/ipv4/tcp_htcp.ko.gz:\nkernel/net/ipv4/tcp_diag.ko: kernel/net/ipv4/inet_diag.ko\n\
                   kernel/net/ipv4/tcp_bic.ko.bz2:\nkernel/net/sched/sch_fq.ko:\nkernel/fs/tcp_fake/x.ko:\n";
        assert_eq!(congestion_modules(dep), ["bbr", "dctcp", "htcp", "vegas"]);
        assert!(congestion_modules("").is_empty());
    }
}

// ---------------------------------------------------------------------------
// Sample
// ---------------------------------------------------------------------------

/// One sampler tick for one socket: the `tcp_info` fields a congestion-control
/// plot needs plus BBR's model. All `Copy`; [`Sample::read`] does not allocate.
///
/// Fields that the running kernel does not report are `0` here (only possible
/// on kernels older than the bench targets); `min_rtt_us` is also `0` before
/// the first RTT sample.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Sample {
    /// Microseconds since the caller's start instant.
    pub t_us: u64,
    pub rtt_us: u32,
    pub min_rtt_us: u32,
    pub rttvar_us: u32,
    /// Congestion window, packets.
    pub cwnd: u32,
    /// Slow-start threshold, packets (`0x7fff_ffff` until first reduction).
    pub ssthresh: u32,
    /// bits/s; `u64::MAX` while the kernel reports "unset".
    pub pacing_rate_bps: u64,
    /// bits/s.
    pub delivery_rate_bps: u64,
    pub bytes_acked: u64,
    pub bytes_sent: u64,
    pub bytes_retrans: u64,
    pub total_retrans: u32,
    pub segs_out: u32,
    pub lost: u32,
    pub unacked: u32,
    pub app_limited: bool,
    /// `Some` only while the socket runs BBR.
    pub bbr: Option<BbrInfo>,
    /// What the limited-by accounting reads (absent from samples of an older far end).
    #[serde(default)]
    pub state: SampleState,
}

/// The sender's state behind the limited-by accounting: the congestion-avoidance state, what
/// is in flight and waiting, the peer's window, and the chrono counters (0 where the kernel
/// has none).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct SampleState {
    /// `tcpi_ca_state`: Open 0, Disorder 1, CWR 2, Recovery 3, Loss 4.
    pub ca_state: u8,
    /// Packets in flight: `unacked - sacked - lost + retrans` (the kernel's
    /// `tcp_packets_in_flight`).
    pub in_flight: u32,
    /// Bytes written but not yet sent.
    pub notsent_bytes: u32,
    /// The peer's advertised window, bytes.
    pub snd_wnd: u32,
    /// The chrono counters, µs: busy (including the two below), receive-window limited,
    /// send-buffer limited.
    pub busy_us: u64,
    pub rwnd_limited_us: u64,
    pub sndbuf_limited_us: u64,
    /// Reordering as the sender saw it (0 where the kernel has none, and in samples of an
    /// older far end): `tcpi_reordering`, the reordering degree in packets the loss detection
    /// tolerates (3 until reordering is seen; RFC 5681's duplicate-ACK threshold);
    /// `tcpi_reord_seen`, how often reordering was detected; `tcpi_dsack_dups`, duplicate
    /// segments the receiver reported by D-SACK (RFC 2883): retransmissions that proved
    /// spurious, the evidence on which Linux undoes a recovery (RFC 3708).
    #[serde(default)]
    pub reordering: u32,
    #[serde(default)]
    pub reord_seen: u32,
    #[serde(default)]
    pub dsack_dups: u32,
}

impl SampleState {
    pub fn of(ti: &TcpInfo) -> Self {
        SampleState {
            ca_state: ti.ca_state,
            in_flight: (ti.unacked + ti.retrans).saturating_sub(ti.sacked + ti.lost),
            notsent_bytes: ti.notsent_bytes.unwrap_or(0),
            snd_wnd: ti.snd_wnd.unwrap_or(0),
            busy_us: ti.busy_time_us.unwrap_or(0),
            rwnd_limited_us: ti.rwnd_limited_us.unwrap_or(0),
            sndbuf_limited_us: ti.sndbuf_limited_us.unwrap_or(0),
            reordering: ti.reordering,
            reord_seen: ti.reord_seen.unwrap_or(0),
            dsack_dups: ti.dsack_dups.unwrap_or(0),
        }
    }
}

impl Sample {
    /// Builds a sample from already-fetched data.
    pub fn from_parts(t_us: u64, ti: &TcpInfo, cc: Option<CcInfo>) -> Self {
        Sample {
            t_us,
            rtt_us: ti.rtt_us,
            min_rtt_us: ti.min_rtt_us.unwrap_or(0),
            rttvar_us: ti.rttvar_us,
            cwnd: ti.snd_cwnd,
            ssthresh: ti.snd_ssthresh,
            pacing_rate_bps: ti.pacing_rate_bps.unwrap_or(0),
            delivery_rate_bps: ti.delivery_rate_bps.unwrap_or(0),
            bytes_acked: ti.bytes_acked.unwrap_or(0),
            bytes_sent: ti.bytes_sent.unwrap_or(0),
            bytes_retrans: ti.bytes_retrans.unwrap_or(0),
            total_retrans: ti.total_retrans,
            segs_out: ti.segs_out.unwrap_or(0),
            lost: ti.lost,
            unacked: ti.unacked,
            app_limited: ti.app_limited,
            bbr: match cc {
                Some(CcInfo::Bbr(b)) => Some(b),
                _ => None,
            },
            state: SampleState::of(ti),
        }
    }

    /// Reads `TCP_INFO` and `TCP_CC_INFO` (plus `TCP_CONGESTION` only when the
    /// algorithm exports data): 2–3 syscalls, no allocation. `t_us` is the
    /// caller's timestamp, so all sockets of one tick can share it.
    pub fn read<F: AsFd>(fd: F, t_us: u64) -> io::Result<Sample> {
        let fd = fd.as_fd();
        let ti = tcp_info(fd)?;
        let cc = cc_info(fd)?;
        Ok(Sample::from_parts(t_us, &ti, cc))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kernel_gain_constants() {
        // Values as the kernel's integer expressions evaluate them.
        assert_eq!(bbr_gain::UNIT, 256);
        assert_eq!(bbr_gain::HIGH, 739);
        assert_eq!(bbr_gain::DRAIN, 88);
        assert_eq!(bbr_gain::CWND, 512);
        assert_eq!(bbr_gain::PACING_CYCLE, [320, 192, 256, 256, 256, 256, 256, 256]);
    }

    #[test]
    fn mode_from_exact_kernel_gains() {
        assert_eq!(BbrMode::from_gains(739, 739), BbrMode::Startup);
        assert_eq!(BbrMode::from_gains(88, 739), BbrMode::Drain);
        assert_eq!(BbrMode::from_gains(320, 512), BbrMode::ProbeBw);
        assert_eq!(BbrMode::from_gains(192, 512), BbrMode::ProbeBw);
        assert_eq!(BbrMode::from_gains(256, 512), BbrMode::ProbeBw);
        assert_eq!(BbrMode::from_gains(256, 256), BbrMode::ProbeRtt);
        for p in bbr_gain::PACING_CYCLE {
            assert_eq!(BbrMode::from_gains(p, bbr_gain::CWND), BbrMode::ProbeBw);
        }
    }

    #[test]
    fn mode_unknown_for_near_misses() {
        // Off-by-one from the kernel constants must not be guessed.
        assert_eq!(BbrMode::from_gains(738, 738), BbrMode::Unknown);
        assert_eq!(BbrMode::from_gains(89, 739), BbrMode::Unknown);
        assert_eq!(BbrMode::from_gains(88, 512), BbrMode::Unknown);
        assert_eq!(BbrMode::from_gains(320, 739), BbrMode::Unknown);
        assert_eq!(BbrMode::from_gains(0, 0), BbrMode::Unknown);
        assert_eq!(BbrMode::from_gains(256, 739), BbrMode::Unknown);
    }

    #[test]
    fn bbr_info_decoding() {
        let b = BbrInfo::from_raw(0x1c19_af9c, 1, 56, 739, 739);
        assert_eq!(b.bw_bps, ((1u64 << 32) | 0x1c19_af9c) * 8);
        assert_eq!(b.min_rtt_us, 56);
        assert!((b.pacing_gain - 2.88671875).abs() < 1e-12);
        assert!((b.cwnd_gain - 2.88671875).abs() < 1e-12);
        assert_eq!(b.mode, BbrMode::Startup);
        let d = BbrInfo::from_raw(0, 0, 0, 88, 739);
        assert!((d.pacing_gain - 88.0 / 256.0).abs() < 1e-12);
        assert_eq!(d.mode, BbrMode::Drain);
    }

    #[test]
    fn bitfields_decode() {
        let raw = RawTcpInfo {
            tcpi_wscale_bits: if cfg!(target_endian = "little") { 0x97 } else { 0x79 },
            tcpi_app_limited_bits: if cfg!(target_endian = "little") { 0b101 } else { 0b1100_0000 },
            ..Default::default()
        };
        assert_eq!(raw.snd_wscale(), 7);
        assert_eq!(raw.rcv_wscale(), 9);
        assert!(raw.app_limited());
        assert_eq!(raw.fastopen_client_fail(), 2);
    }

    #[test]
    fn short_kernel_struct_yields_none() {
        let raw = RawTcpInfo { tcpi_rtt: 10, tcpi_pacing_rate: 5, tcpi_snd_wnd: 7, ..Default::default() };
        // 5.3-sized struct: ends after tcpi_reord_seen (224 bytes).
        let ti = TcpInfo::from_raw(&raw, 224);
        assert_eq!(ti.rtt_us, 10);
        assert_eq!(ti.pacing_rate_bps, Some(40));
        assert_eq!(ti.bytes_retrans, Some(0));
        assert_eq!(ti.rcv_ooopack, None);
        assert_eq!(ti.snd_wnd, None);
        // Original layout only.
        let ti = TcpInfo::from_raw(&raw, 104);
        assert_eq!(ti.pacing_rate_bps, None);
        assert_eq!(ti.segs_out, None);
        // Full struct; ~0 pacing stays "unlimited" after conversion.
        let raw = RawTcpInfo { tcpi_max_pacing_rate: u64::MAX, tcpi_min_rtt: u32::MAX, ..raw };
        let ti = TcpInfo::from_raw(&raw, RAW_TCP_INFO_SIZE);
        assert_eq!(ti.max_pacing_rate_bps, Some(u64::MAX));
        assert_eq!(ti.min_rtt_us, None);
        assert_eq!(ti.snd_wnd, Some(7));
        assert_eq!(ti.received_ce, Some(0));
    }

    #[test]
    fn mode_serializes_screaming_snake() {
        let s = serde_json::to_string(&[BbrMode::Startup, BbrMode::Drain, BbrMode::ProbeBw, BbrMode::ProbeRtt, BbrMode::Unknown]).unwrap();
        assert_eq!(s, r#"["STARTUP","DRAIN","PROBE_BW","PROBE_RTT","UNKNOWN"]"#);
    }
}
