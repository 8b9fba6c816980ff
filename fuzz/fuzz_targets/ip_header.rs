//! The one IP header reader (`ccbench_link::wire`) and what reads through it — the flow
//! classifier, the ECN field's read and rewrite — fed arbitrary bytes: nothing may panic or
//! read past the slice, and a rewrite of the ECN field changes nothing but that field (and
//! IPv4's header checksum, which must stay valid).
#![no_main]

use ccbench_link::ecn::Ecn;
use ccbench_link::wire::{self, Ip};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let _ = ccbench_link::flow::flow_of(data);
    if let Some(h) = Ip::parse(data) {
        let _ = (h.ports(), h.transport(), h.declared_len(), h.is_fragment(), h.src(), h.dst(), h.protocol());
    }
    for e in [Ecn::Ce, Ecn::NotEct, Ecn::Ect0, Ecn::Ect1] {
        let mut b = data.to_vec();
        let checksum_was_valid = Ip::parse(data).is_some_and(|h| !h.is_v6() && h.header_len() <= data.len() && wire::ipv4_header_checksum(&data[..h.header_len()]) == u16::from_be_bytes([data[10], data[11]]));
        wire::set_ecn(&mut b, e);
        if Ip::parse(data).is_some() {
            assert_eq!(wire::ecn(&b), e);
        } else {
            assert_eq!(b, data, "not IP: untouched");
        }
        if checksum_was_valid {
            let ihl = Ip::parse(&b).unwrap().header_len();
            assert_eq!(wire::ipv4_header_checksum(&b[..ihl]), u16::from_be_bytes([b[10], b[11]]), "checksum kept valid");
        }
    }
});
