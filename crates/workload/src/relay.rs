//! The browser's way to a remote `ccbench serve`: serve admits only data connections that
//! begin with the test's token, which Chromium cannot send. So the client process listens on
//! loopback, and each connection Chromium makes there gets a connection of its own to serve's
//! data port, opened with the token hello (`far::FarDialer`), the two then copied both ways
//! until either closes. Bytes pass unchanged: over HTTP/2 the TLS session runs end to end,
//! between Chromium and serve, and this relay never sees plaintext.
//!
//! The relay relays for Chromium and nobody else (issue 18: another local process fetched a
//! page through it). Its listener is on 127.0.0.1 of a network namespace made for the one page
//! load ([`bind_private`]), and Chromium runs in that namespace: no other process has a socket
//! there, and entering it takes CAP_SYS_ADMIN. A process-tree check of each connection's
//! owner cannot work here: a remote run's client often runs in `ccbench exec`'s PID
//! namespace, whose pids are not the host's. The relay's own connections to serve are made
//! from this process's namespace, the one the run was started in.
//!
//! Chromium's `--host-resolver-rules` send the server's address and port to the relay's port
//! (see `browser`). The loopback hop adds tens of microseconds per exchange (measured by this
//! module's test, and end to end against the emulated path in docs/browser.md).

use std::convert::Infallible;
use std::io;
use std::net::{Ipv4Addr, SocketAddr};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use crate::common::{lock, Errors, CHUNK};
use crate::far::FarDialer;

/// A loopback listener for the relay, non-blocking, bound before the browser starts.
fn bind() -> io::Result<std::net::TcpListener> {
    let listener = std::net::TcpListener::bind((Ipv4Addr::LOCALHOST, 0))?;
    listener.set_nonblocking(true)?;
    Ok(listener)
}

/// A fresh network namespace (its loopback up, nothing else in it) and the relay's listener
/// on its 127.0.0.1: start the browser in it, and only the browser can reach the relay.
/// Needs CAP_SYS_ADMIN, as starting the browser under its reaper does.
pub(crate) fn bind_private() -> Result<(ccbench_netns::Netns, std::net::TcpListener), String> {
    let private = ccbench_netns::Netns::new().map_err(|e| format!("the browser's private network namespace: {e}"))?;
    let listener = private.run(|| bind().map_err(ccbench_netns::NetnsError::Io)).map_err(|e| format!("the relay's listener: {e}"))?;
    Ok((private, listener))
}

/// Relays every connection accepted on `listener` to the far end, until dropped (the caller
/// races it against the load; the runtime's shutdown ends the copies still running). A
/// connection the far end could not be reached for is closed and counted in `errors`.
pub(crate) async fn relay(listener: std::net::TcpListener, dialer: FarDialer, errors: Arc<Mutex<Errors>>) -> Infallible {
    let listener = match tokio::net::TcpListener::from_std(listener) {
        Ok(l) => l,
        Err(e) => {
            lock(&errors).push(format!("relay: the loopback listener: {e}"));
            return std::future::pending().await;
        }
    };
    loop {
        let mut near = match listener.accept().await {
            Ok((s, _)) => s,
            Err(e) => {
                lock(&errors).push(format!("relay: accept: {e}"));
                tokio::time::sleep(Duration::from_millis(10)).await;
                continue;
            }
        };
        let (dialer, errors) = (dialer.clone(), errors.clone());
        tokio::spawn(async move {
            // Each write goes at once, as it would from Chromium's own socket.
            let _ = near.set_nodelay(true);
            let far = crate::net::sockets(None, dialer.addr, 1, None).map_err(|e| io::Error::other(e.to_string()));
            let far = match far {
                Ok(mut socks) => dialer.connect(socks.remove(0)).await,
                Err(e) => Err(e),
            };
            match far {
                // Chromium closing an idle spare connection, or serve ending the test, ends a
                // copy with an error that is no error of the load: the far end reports its own.
                Ok(mut far) => drop(tokio::io::copy_bidirectional_with_sizes(&mut near, &mut far, CHUNK, CHUNK).await),
                Err(e) => lock(&errors).push(format!("relay: connecting to ccbench serve at {}: {e}", dialer.addr)),
            }
        });
    }
}

/// Where Chromium is sent instead of `far`: `--host-resolver-rules` mapping the far end's
/// address and port to the relay's (an IP literal goes through the rules too).
pub(crate) fn resolver_rule(far: SocketAddr, relay_port: u16) -> String {
    format!("MAP {far} 127.0.0.1:{relay_port}")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::far::{FarHttp, DATA_HELLO_LEN, TOKEN_LEN};
    use std::io::{Read, Write};
    use std::time::Instant;

    /// A far end on loopback: checks each connection's hello, then echoes.
    fn echo_far_end(token: [u8; TOKEN_LEN]) -> (SocketAddr, std::sync::mpsc::Receiver<u32>) {
        let l = std::net::TcpListener::bind((Ipv4Addr::LOCALHOST, 0)).unwrap();
        let addr = l.local_addr().unwrap();
        let (tx, rx) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            for s in l.incoming() {
                let (mut s, tx) = (s.unwrap(), tx.clone());
                std::thread::spawn(move || {
                    s.set_nodelay(true).unwrap();
                    let mut hello = [0u8; DATA_HELLO_LEN];
                    s.read_exact(&mut hello).unwrap();
                    assert_eq!(hello[..TOKEN_LEN], token);
                    let _ = tx.send(u32::from_be_bytes(hello[TOKEN_LEN..].try_into().unwrap()));
                    let mut buf = [0u8; 65536];
                    loop {
                        match s.read(&mut buf) {
                            Ok(0) | Err(_) => return,
                            Ok(n) => s.write_all(&buf[..n]).unwrap(),
                        }
                    }
                });
            }
        });
        (addr, rx)
    }

    /// Median round trip of one byte over `s`, in microseconds.
    fn round_trips(s: &mut std::net::TcpStream, n: usize) -> f64 {
        let mut times = Vec::with_capacity(n);
        let mut b = [0u8; 1];
        for _ in 0..n {
            let t = Instant::now();
            s.write_all(&[7]).unwrap();
            s.read_exact(&mut b).unwrap();
            times.push(t.elapsed().as_secs_f64() * 1e6);
        }
        times.sort_by(f64::total_cmp);
        times[n / 2]
    }

    /// Bytes pass unchanged both ways behind the token hello, connections are numbered in
    /// turn and mapped to the relay's own ports; what the loopback hop costs is printed.
    #[test]
    fn relays_after_the_hello_and_maps_each_connection() {
        let token = [0x5c; TOKEN_LEN];
        let (far_addr, hellos) = echo_far_end(token);
        let far = FarHttp::new(far_addr, token);
        let listener = bind().unwrap();
        let relay_addr = listener.local_addr().unwrap();
        let errors = Arc::new(Mutex::new(Errors::default()));
        let rt = crate::common::multi_thread_runtime().unwrap();
        let dialer = far.dialer().clone();
        let _guard = rt.enter();
        rt.spawn(relay(listener, dialer, errors.clone()));

        let mut a = std::net::TcpStream::connect(relay_addr).unwrap();
        a.set_nodelay(true).unwrap();
        let payload: Vec<u8> = (0..300_000u32).map(|i| (i * 7 % 251) as u8).collect();
        a.write_all(&payload).unwrap();
        let mut back = vec![0u8; payload.len()];
        a.read_exact(&mut back).unwrap();
        assert!(back == payload, "the relay changed the bytes");
        let mut b = std::net::TcpStream::connect(relay_addr).unwrap();
        b.set_nodelay(true).unwrap();
        round_trips(&mut b, 1);
        let mut ids: Vec<u32> = (0..2).map(|_| hellos.recv_timeout(Duration::from_secs(5)).unwrap()).collect();
        ids.sort();
        assert_eq!(ids, [0, 1]);
        assert!(far.port_of(0).is_some() && far.port_of(1).is_some() && far.port_of(0) != far.port_of(1));
        assert_eq!(lock(&errors).count, 0);

        // The hop's cost: round trips through the relay against the same far end directly.
        let mut direct = std::net::TcpStream::connect(far_addr).unwrap();
        direct.set_nodelay(true).unwrap();
        direct.write_all(&crate::far::data_hello(&token, 99)).unwrap();
        let (d, r) = (round_trips(&mut direct, 2000), round_trips(&mut b, 2000));
        eprintln!("one-byte round trip on loopback, median of 2000: direct {d:.1} µs, through the relay {r:.1} µs (+{:.1} µs)", r - d);
    }

    /// Issue 18: another local process fetched a page through the relay. Now the relay's port
    /// answers only inside the browser's namespace: a connection from this process's own
    /// namespace (where every other local process is) is refused and reaches nothing, while
    /// one from inside the namespace is relayed as before. (Chromium itself through the relay:
    /// `a_local_process_cannot_use_the_browsers_relay` in ccbench's tests/remote.rs.)
    #[test]
    fn only_the_browsers_namespace_reaches_the_relay() {
        // SAFETY: geteuid has no preconditions.
        if unsafe { libc::geteuid() } != 0 {
            assert!(std::env::var("CI").is_err(), "root required under CI");
            return;
        }
        let token = [0x3a; TOKEN_LEN];
        let (far_addr, hellos) = echo_far_end(token);
        let far = FarHttp::new(far_addr, token);
        let (private, listener) = bind_private().unwrap();
        let relay_port = listener.local_addr().unwrap().port();
        let errors = Arc::new(Mutex::new(Errors::default()));
        let rt = crate::common::multi_thread_runtime().unwrap();
        let _guard = rt.enter();
        rt.spawn(relay(listener, far.dialer().clone(), errors.clone()));

        match std::net::TcpStream::connect((Ipv4Addr::LOCALHOST, relay_port)) {
            Err(e) => assert_eq!(e.kind(), io::ErrorKind::ConnectionRefused, "{e}"),
            // Some other program of this namespace may hold the same port number: then it is
            // not the relay, and serve must see no connection from it.
            Ok(_) => eprintln!("port {relay_port} is taken in this namespace too; checking serve saw nothing"),
        }
        assert!(hellos.recv_timeout(Duration::from_millis(300)).is_err(), "a process outside the browser's namespace reached serve through the relay");

        let echoed = private
            .run(|| {
                let mut s = std::net::TcpStream::connect((Ipv4Addr::LOCALHOST, relay_port))?;
                s.set_read_timeout(Some(Duration::from_secs(5)))?;
                s.write_all(b"inside")?;
                let mut back = [0u8; 6];
                s.read_exact(&mut back)?;
                Ok::<_, ccbench_netns::NetnsError>(back)
            })
            .unwrap();
        assert_eq!(&echoed, b"inside");
        assert_eq!(hellos.recv_timeout(Duration::from_secs(5)).unwrap(), 0, "the browser's connection reached serve with its hello");
        assert_eq!(lock(&errors).count, 0, "{:?}", lock(&errors).messages);
    }

    #[test]
    fn a_far_end_that_cannot_be_reached_is_counted_and_the_connection_closed() {
        // A port nothing listens on: bound, then closed.
        let gone = std::net::TcpListener::bind((Ipv4Addr::LOCALHOST, 0)).unwrap().local_addr().unwrap();
        let far = FarHttp::new(gone, [1; TOKEN_LEN]);
        let listener = bind().unwrap();
        let relay_addr = listener.local_addr().unwrap();
        let errors = Arc::new(Mutex::new(Errors::default()));
        let rt = crate::common::multi_thread_runtime().unwrap();
        let _guard = rt.enter();
        rt.spawn(relay(listener, far.dialer().clone(), errors.clone()));
        let mut a = std::net::TcpStream::connect(relay_addr).unwrap();
        a.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
        let mut buf = [0u8; 16];
        assert_eq!(a.read(&mut buf).unwrap_or(0), 0, "closed, nothing sent");
        let deadline = Instant::now() + Duration::from_secs(2);
        while lock(&errors).count == 0 && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(5));
        }
        assert!(lock(&errors).messages[0].contains("connecting to ccbench serve"), "{:?}", lock(&errors).messages);
    }

    #[test]
    fn the_rule_maps_the_far_address_and_port_to_the_relay() {
        assert_eq!(resolver_rule("10.77.0.2:41000".parse().unwrap(), 5555), "MAP 10.77.0.2:41000 127.0.0.1:5555");
        assert_eq!(resolver_rule("[2001:db8::2]:443".parse().unwrap(), 5555), "MAP [2001:db8::2]:443 127.0.0.1:5555");
    }
}
