//! A TUN device (layer 3, no packet-info header) owned by its file descriptor: the kernel
//! deletes a non-persistent TUN device when its last descriptor closes.

use std::fs::{File, OpenOptions};
use std::io;
use std::os::fd::{AsFd, AsRawFd, BorrowedFd};
use std::os::unix::fs::OpenOptionsExt;

use crate::sys::{self, IfReq};
use crate::NetnsError;

#[derive(Debug)]
pub struct Tun {
    file: File,
    name: String,
    offload: bool,
    udp_offload: bool,
}

impl Tun {
    /// Creates the device in the calling thread's namespace. The descriptor is non-blocking:
    /// the emulator drains it until EAGAIN and sleeps in ppoll.
    ///
    /// With `offload`, every packet carries a `struct virtio_net_hdr` in front, and the kernel
    /// may hand over TCP/IPv4 superframes of up to 64 KB (TSO) with checksums left partial:
    /// one read instead of forty-four, which is what lets userspace keep up at gigabit rates.
    /// Where the kernel offers UDP segmentation offload (6.2+), UDP GSO batches of up to 64 KB
    /// come over whole as well ([`Tun::udp_offload`]).
    pub fn create(name: &str, offload: bool) -> Result<Self, NetnsError> {
        let file =
            OpenOptions::new().read(true).write(true).custom_flags(libc::O_NONBLOCK | libc::O_CLOEXEC).open("/dev/net/tun").map_err(NetnsError::TunOpen)?;
        let mut req = IfReq::new(name)?;
        req.data.flags = sys::IFF_TUN | sys::IFF_NO_PI | if offload { sys::IFF_VNET_HDR } else { 0 };
        let wrap = |source| NetnsError::Iface { name: name.to_string(), source };
        sys::ioctl_ifreq(file.as_raw_fd(), sys::TUNSETIFF, &mut req).map_err(wrap)?;
        let mut udp_offload = false;
        if offload {
            let tcp = sys::TUN_F_CSUM | sys::TUN_F_TSO4 | sys::TUN_F_TSO_ECN;
            let set = |features: libc::c_uint| {
                // SAFETY: TUNSETOFFLOAD takes its argument by value.
                let r = unsafe { libc::ioctl(file.as_raw_fd(), sys::TUNSETOFFLOAD as _, features as libc::c_ulong) };
                r == 0
            };
            // UDP GSO batches too where the kernel offers it (6.2+, EINVAL before): a QUIC
            // sender's batch then crosses in one read, as a TCP superframe does.
            udp_offload = set(tcp | sys::TUN_F_USO4 | sys::TUN_F_USO6);
            if !udp_offload && !set(tcp) {
                return Err(wrap(io::Error::last_os_error()));
            }
        }
        Ok(Tun { file, name: name.to_string(), offload, udp_offload })
    }

    pub fn name(&self) -> &str {
        &self.name
    }

    /// True when packets carry a virtio-net header (see [`Tun::create`]).
    pub fn offload(&self) -> bool {
        self.offload
    }

    /// True when the kernel may also hand over UDP GSO batches (`TUN_F_USO4 | TUN_F_USO6`).
    pub fn udp_offload(&self) -> bool {
        self.udp_offload
    }

    /// Reads one IP packet; `Ok(None)` when none is waiting.
    pub fn recv(&self, buf: &mut [u8]) -> io::Result<Option<usize>> {
        // SAFETY: reading into a valid, writable buffer of the given length.
        let n = unsafe { libc::read(self.file.as_raw_fd(), buf.as_mut_ptr().cast(), buf.len()) };
        if n < 0 {
            let err = io::Error::last_os_error();
            return match err.raw_os_error() {
                Some(libc::EAGAIN) => Ok(None),
                _ => Err(err),
            };
        }
        Ok(Some(n as usize))
    }

    /// Writes one IP packet into the namespace the device lives in.
    pub fn send(&self, packet: &[u8]) -> io::Result<()> {
        // SAFETY: writing from a valid buffer of the given length.
        let n = unsafe { libc::write(self.file.as_raw_fd(), packet.as_ptr().cast(), packet.len()) };
        if n < 0 {
            return Err(io::Error::last_os_error());
        }
        Ok(())
    }
}

impl AsFd for Tun {
    fn as_fd(&self) -> BorrowedFd<'_> {
        self.file.as_fd()
    }
}
