//! The few Linux ioctl numbers and structs we need, from include/uapi/linux/{sockios,if_tun,if}.h.

pub const SIOCGIFFLAGS: libc::c_ulong = 0x8913;
pub const SIOCSIFFLAGS: libc::c_ulong = 0x8914;
pub const SIOCSIFADDR: libc::c_ulong = 0x8916;
pub const SIOCSIFNETMASK: libc::c_ulong = 0x891c;
pub const SIOCSIFMTU: libc::c_ulong = 0x8922;
pub const SIOCSIFTXQLEN: libc::c_ulong = 0x8943;
pub const TUNSETIFF: libc::c_ulong = 0x4004_54ca;
pub const TUNSETOFFLOAD: libc::c_ulong = 0x4004_54d0;

pub const IFF_UP: libc::c_short = 0x1;
pub const IFF_TUN: libc::c_short = 0x0001;
pub const IFF_NO_PI: libc::c_short = 0x1000;
pub const IFF_VNET_HDR: libc::c_short = 0x4000;

pub const TUN_F_CSUM: libc::c_uint = 0x01;
pub const TUN_F_TSO4: libc::c_uint = 0x02;
pub const TUN_F_TSO_ECN: libc::c_uint = 0x08;
/// UDP segmentation offload (Linux 6.2+); the kernel takes it only with both set.
pub const TUN_F_USO4: libc::c_uint = 0x20;
pub const TUN_F_USO6: libc::c_uint = 0x40;

pub const IFNAMSIZ: usize = 16;

/// `struct ifreq`: a name followed by a 24-byte union; we view the union as the member each
/// ioctl expects.
#[repr(C)]
pub struct IfReq {
    pub name: [u8; IFNAMSIZ],
    pub data: IfReqData,
}

#[repr(C)]
pub union IfReqData {
    pub addr: libc::sockaddr_in,
    pub flags: libc::c_short,
    pub int: libc::c_int,
    pub pad: [u8; 24],
}

impl IfReq {
    pub fn new(name: &str) -> std::io::Result<Self> {
        let bytes = name.as_bytes();
        if bytes.is_empty() || bytes.len() >= IFNAMSIZ {
            return Err(std::io::Error::new(std::io::ErrorKind::InvalidInput, format!("interface name {name:?} must be 1-15 bytes")));
        }
        let mut req = IfReq { name: [0; IFNAMSIZ], data: IfReqData { pad: [0; 24] } };
        req.name[..bytes.len()].copy_from_slice(bytes);
        Ok(req)
    }
}

/// Runs an ioctl whose argument is an `IfReq`.
pub fn ioctl_ifreq(fd: libc::c_int, request: libc::c_ulong, req: &mut IfReq) -> std::io::Result<()> {
    // SAFETY: `req` is a valid, properly sized `struct ifreq` for all requests used here.
    if unsafe { libc::ioctl(fd, request as _, req as *mut IfReq) } < 0 {
        return Err(std::io::Error::last_os_error());
    }
    Ok(())
}
