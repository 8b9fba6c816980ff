//! What serve says of the interface a client reached it on: its name (from the address the
//! control connection arrived at, through `getifaddrs`) and its root qdisc (from
//! `tc -j qdisc show dev NAME`, when iproute2's `tc` is installed). Either is `None` when it
//! cannot be read: never a guess.

use std::ffi::CStr;
use std::net::IpAddr;
use std::process::Command;

use serde::Deserialize;

/// The interface that holds address `ip` in this process's namespace.
pub fn interface_of(ip: IpAddr) -> Option<String> {
    // An IPv4 client on an IPv6 socket shows as ::ffff:a.b.c.d; the interface holds a.b.c.d.
    let ip = match ip {
        IpAddr::V6(v6) => v6.to_ipv4_mapped().map(IpAddr::V4).unwrap_or(ip),
        v4 => v4,
    };
    let mut head: *mut libc::ifaddrs = std::ptr::null_mut();
    // SAFETY: getifaddrs fills `head` with a list we free below with freeifaddrs.
    if unsafe { libc::getifaddrs(&mut head) } != 0 {
        return None;
    }
    let mut found = None;
    let mut cur = head;
    while !cur.is_null() {
        // SAFETY: `cur` is a node of the list getifaddrs returned, not yet freed.
        let ifa = unsafe { &*cur };
        if !ifa.ifa_addr.is_null() && sockaddr_ip(ifa.ifa_addr) == Some(ip) {
            // SAFETY: ifa_name is a NUL-terminated string owned by the list.
            found = Some(unsafe { CStr::from_ptr(ifa.ifa_name) }.to_string_lossy().into_owned());
            break;
        }
        cur = ifa.ifa_next;
    }
    // SAFETY: `head` came from getifaddrs and is freed once.
    unsafe { libc::freeifaddrs(head) };
    found
}

fn sockaddr_ip(sa: *const libc::sockaddr) -> Option<IpAddr> {
    // SAFETY: `sa` is non-null and points at a sockaddr whose family says its real type.
    unsafe {
        match (*sa).sa_family as libc::c_int {
            libc::AF_INET => {
                let sin = &*(sa as *const libc::sockaddr_in);
                Some(IpAddr::from(u32::from_be(sin.sin_addr.s_addr).to_be_bytes()))
            }
            libc::AF_INET6 => {
                let sin6 = &*(sa as *const libc::sockaddr_in6);
                Some(IpAddr::from(sin6.sin6_addr.s6_addr))
            }
            _ => None,
        }
    }
}

/// The root qdisc of `iface` (`fq`, `fq_codel`, `noqueue`, …), from `tc`; `None` without `tc`
/// or when its answer names no root qdisc.
pub fn root_qdisc(iface: &str) -> Option<String> {
    let out = Command::new("tc").args(["-j", "qdisc", "show", "dev", iface]).output().ok()?;
    if !out.status.success() {
        return None;
    }
    parse_root_qdisc(&out.stdout)
}

#[derive(Deserialize, schemars::JsonSchema)]
struct Qdisc {
    kind: String,
    #[serde(default)]
    root: bool,
}

/// The `kind` of the root entry of `tc -j qdisc show` output; `None` for anything else. Fuzzed
/// with the control protocol (its bytes come from another process).
pub fn parse_root_qdisc(json: &[u8]) -> Option<String> {
    let list: Vec<Qdisc> = serde_json::from_slice(json).ok()?;
    list.into_iter().find(|q| q.root).map(|q| q.kind).filter(|k| !k.is_empty() && k.len() < 64)
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::{Rng, SeedableRng};

    #[test]
    fn the_root_entry_is_found_and_nothing_else_is_guessed() {
        let multi = br#"[{"kind":"mq","handle":"0:","root":true,"options":{}},{"kind":"fq","handle":"0:","parent":":1","options":{"limit":10000}}]"#;
        assert_eq!(parse_root_qdisc(multi).as_deref(), Some("mq"));
        assert_eq!(parse_root_qdisc(br#"[{"kind":"noqueue","handle":"0:","root":true,"refcnt":2,"options":{}}]"#).as_deref(), Some("noqueue"));
        assert_eq!(parse_root_qdisc(br#"[{"kind":"fq","parent":":1"}]"#), None, "no root entry");
        for bad in [&b""[..], b"[]", b"{}", b"[{\"root\":true}]", b"not json"] {
            assert_eq!(parse_root_qdisc(bad), None);
        }
    }

    #[test]
    fn loopback_is_found_by_its_address() {
        assert_eq!(interface_of("127.0.0.1".parse().unwrap()).as_deref(), Some("lo"));
        assert_eq!(interface_of("::ffff:127.0.0.1".parse().unwrap()).as_deref(), Some("lo"));
        assert_eq!(interface_of("192.0.2.254".parse().unwrap()), None, "TEST-NET-1 is on no interface here");
    }

    #[test]
    fn random_tc_output_never_panics() {
        let mut rng = rand::rngs::StdRng::seed_from_u64(7);
        let alphabet = br#"[]{}":,kindroottruefalsefq_codel 0123"#;
        for _ in 0..20_000 {
            let v: Vec<u8> = (0..rng.gen_range(0..80)).map(|_| alphabet[rng.gen_range(0..alphabet.len())]).collect();
            let _ = parse_root_qdisc(&v);
        }
    }
}
