//! A hostile server against the client: it holds the shared secret, speaks the real sealed
//! protocol, and floods a test's results (or says nothing). The client runs in a child process (this test
//! binary again, one test) so that its peak resident memory (`VmHWM`) is its own; each flood
//! must end in a clear error with the client under 100 MB.

use std::io::Read;
use std::net::{SocketAddr, TcpListener};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use ccbench_workload::{BbrEvent, EndClock, FarHttp, FlowEnd, NoSeries, QuicSample};

use crate::auth::Secret;
use crate::channel::Channel;
use crate::client::{Bounds, Client, FarTime};
use crate::proto::{hex, Limits, ServerFacts, ServerMsg};

const CHILD_ENV: &str = "CCBENCH_FLOOD_CHILD";
/// The client's peak resident memory allowed under any flood.
const MAX_CLIENT_HWM_KB: u64 = 100 * 1024;

#[derive(Clone, Copy, Debug, PartialEq)]
enum Flood {
    /// 20,000 `bbr_events` of ~60 KB each (200 events, 100-byte state names).
    BbrEvents,
    /// The audit's shape: 20,000 `bbr_events` of 10 events with 3,000-byte state names (~60 KB
    /// each; it took the client to 2.89 GB).
    LongState,
    /// 1.9 M `accepted` for one connection.
    Accepted,
    /// The server announces `max_flows` of 4 G, then reports connection 1000.
    AnnouncedFlows,
    /// `quic_connection_end` for one flow, again and again.
    QuicEnds,
    /// A TCP test's `done` in parts (`more`), the second naming the first's flow again.
    DoneRepeatsFlow,
    /// The same for a QUIC test's `quic_done`.
    QuicDoneRepeatsFlow,
    /// `done` parts without end: empty, each saying more is to come.
    DoneUnbounded,
    /// `quic_done` parts of 8 flow ends without end, their ids ever new.
    QuicDoneUnbounded,
    /// One `done` part saying more is to come, then silence: the last part never comes.
    DoneNeverLast,
}

impl Flood {
    fn name(self) -> &'static str {
        match self {
            Flood::BbrEvents => "bbr-events",
            Flood::LongState => "long-state",
            Flood::Accepted => "accepted",
            Flood::AnnouncedFlows => "announced-flows",
            Flood::QuicEnds => "quic-ends",
            Flood::DoneRepeatsFlow => "done-repeats-flow",
            Flood::QuicDoneRepeatsFlow => "quic-done-repeats-flow",
            Flood::DoneUnbounded => "done-unbounded",
            Flood::QuicDoneUnbounded => "quic-done-unbounded",
            Flood::DoneNeverLast => "done-never-last",
        }
    }

    fn all() -> [Flood; 10] {
        [
            Flood::BbrEvents,
            Flood::LongState,
            Flood::Accepted,
            Flood::AnnouncedFlows,
            Flood::QuicEnds,
            Flood::DoneRepeatsFlow,
            Flood::QuicDoneRepeatsFlow,
            Flood::DoneUnbounded,
            Flood::QuicDoneUnbounded,
            Flood::DoneNeverLast,
        ]
    }

    /// Whether the client reads it as a TCP flow test's results.
    fn is_tcp(self) -> bool {
        matches!(self, Flood::DoneRepeatsFlow | Flood::DoneUnbounded | Flood::DoneNeverLast)
    }

    fn is_http(self) -> bool {
        matches!(self, Flood::Accepted | Flood::AnnouncedFlows)
    }
}

fn facts() -> ServerFacts {
    ServerFacts {
        ccbench_version: "hostile".into(),
        kernel_release: None,
        kernel_version: None,
        congestion_controls: vec!["cubic".into(), "bbr".into()],
        default_congestion_control: None,
        default_qdisc: None,
        serving_interface: None,
        serving_qdisc: None,
    }
}

/// The hostile server: the handshake, a welcome, then `flood` until the client hangs up.
/// Returns how many flood messages it got out.
fn hostile_server(listener: TcpListener, secret: Secret, flood: Flood) -> u64 {
    let (stream, _) = listener.accept().unwrap();
    let channel = Channel::accept(stream, &secret, Instant::now() + Duration::from_secs(10)).unwrap();
    let max_flows = if flood == Flood::AnnouncedFlows { u32::MAX } else { 64 };
    let limits = Limits { max_duration_s: 60.0, max_bytes: u64::MAX, max_clients: 1, max_tests_per_minute: 60, max_flows, max_probe_rate_bps: 1 };
    channel.send(&ServerMsg::Welcome { facts: facts(), limits }).unwrap();
    let name = |n: usize| format!("STARTUP{}", "x".repeat(n - 7));
    let msg = |i: u64| match flood {
        Flood::BbrEvents => {
            let events = (0..200).map(|k| BbrEvent::new(i * 200 + k, name(100), name(100))).collect();
            ServerMsg::BbrEvents { flow: 0, events }
        }
        Flood::LongState => ServerMsg::BbrEvents { flow: 0, events: (0..10).map(|k| BbrEvent::new(i * 10 + k, name(3_000), name(3_000))).collect() },
        Flood::Accepted => ServerMsg::Accepted { conn: 0, cc_read_back: Some("cubic".into()), mismatch: None },
        Flood::AnnouncedFlows => ServerMsg::Accepted { conn: 1000, cc_read_back: Some("cubic".into()), mismatch: None },
        Flood::QuicEnds => ServerMsg::QuicConnectionEnd { flow: 0, final_quic: Some(Box::new(QuicSample { t_us: 1, ..QuicSample::default() })) },
        Flood::DoneRepeatsFlow | Flood::DoneNeverLast => ServerMsg::Done { ends: ends(0..8), dropped_samples: 0, more: true },
        Flood::QuicDoneRepeatsFlow => ServerMsg::QuicDone { ends: if i == 0 { ends(0..7) } else { ends(6..8) }, dropped_samples: 0, more: true },
        Flood::DoneUnbounded => ServerMsg::Done { ends: Vec::new(), dropped_samples: 0, more: true },
        Flood::QuicDoneUnbounded => ServerMsg::QuicDone { ends: ends(i as u32 * 8..i as u32 * 8 + 8), dropped_samples: 0, more: true },
    };
    let total = match flood {
        Flood::BbrEvents | Flood::LongState => 20_000,
        Flood::QuicDoneRepeatsFlow => 2,
        Flood::DoneNeverLast => 1,
        _ => 1_900_000,
    };
    let mut sent = 0;
    while sent < total && channel.send(&msg(sent)).is_ok() {
        sent += 1;
    }
    // Then silence, until the client hangs up.
    let _ = std::io::copy(&mut channel.stream(), &mut std::io::sink());
    sent
}

/// Flow ends with the ids `ids`.
fn ends(ids: std::ops::Range<u32>) -> Vec<FlowEnd> {
    ids.map(|id| FlowEnd { id, ..FlowEnd::default() }).collect()
}

/// The child's half: connect, read one test's results as the client does, print the error
/// and the peak resident memory.
fn client_half(spec: &str) {
    let mut parts = spec.split(' ');
    let (flood, addr, secret) = (parts.next().unwrap(), parts.next().unwrap(), parts.next().unwrap());
    let flood = Flood::all().into_iter().find(|f| f.name() == flood).unwrap();
    let addr: SocketAddr = addr.parse().unwrap();
    let secret = Secret::from_bytes(secret.as_bytes()).unwrap();
    let client = Client::connect(addr, &secret).unwrap();
    let epoch = Instant::now();
    let error = if flood.is_tcp() {
        // 8 flows; a test of 1 s whose results may come up to 2 s after its end.
        let clock = EndClock::shared(epoch, epoch);
        let bounds = Bounds::for_test(1.0, 10_000, 8).with_grace(Duration::from_secs(2));
        crate::client::receive_results(&client.control, bounds, &clock, Duration::ZERO, &NoSeries, &Default::default()).err()
    } else if flood.is_http() {
        let far = FarHttp::new(addr, [0; 16]);
        far.record_dial(0, 40_000);
        let bounds = Bounds::for_test(10.0, 10_000, crate::client_http::MAX_CONNECTIONS);
        crate::client_http::receive_http(&client.control, bounds, 0, &far, &NoSeries, &Default::default()).err()
    } else {
        let clock = EndClock::shared(epoch, epoch);
        let flows = if matches!(flood, Flood::QuicDoneRepeatsFlow | Flood::QuicDoneUnbounded) { 8 } else { 1 };
        let bounds = Bounds::for_test(10.0, 10_000, flows);
        crate::client_quic::receive_quic(&client.control, bounds, FarTime::new(&clock, Duration::ZERO), &NoSeries, &Default::default()).err()
    };
    let status = std::fs::read_to_string("/proc/self/status").unwrap();
    let hwm = status.lines().find_map(|l| l.strip_prefix("VmHWM:")).unwrap().trim().trim_end_matches(" kB").trim().to_string();
    println!("FLOOD_ERROR={}", error.map(|e| e.to_string()).unwrap_or_else(|| "none".into()));
    println!("FLOOD_VMHWM_KB={hwm}");
}

/// Runs the client half of `flood` in a child against a hostile server here: (its error, its
/// peak resident memory in kB, flood messages the server got out).
fn run(flood: Flood) -> (String, u64, u64) {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    let secret_text = hex(&rand::random::<[u8; 32]>());
    let secret = Secret::from_bytes(secret_text.as_bytes()).unwrap();
    let server = std::thread::spawn(move || hostile_server(listener, secret, flood));
    let mut child = Command::new(std::env::current_exe().unwrap())
        .args(["--exact", "flood::tests::client_half_in_a_child", "--nocapture", "--test-threads=1"])
        .env(CHILD_ENV, format!("{} {addr} {secret_text}", flood.name()))
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .unwrap();
    let mut out = String::new();
    child.stdout.take().unwrap().read_to_string(&mut out).unwrap();
    assert!(child.wait().unwrap().success(), "{out}");
    let sent = server.join().unwrap();
    let field = |key: &str| out.lines().find_map(|l| l.find(key).map(|i| &l[i + key.len()..])).unwrap_or_else(|| panic!("no {key} in {out}")).to_string();
    (field("FLOOD_ERROR="), field("FLOOD_VMHWM_KB=").parse().unwrap(), sent)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The child's entry: does nothing unless run by [`run`].
    #[test]
    fn client_half_in_a_child() {
        if let Ok(spec) = std::env::var(CHILD_ENV) {
            client_half(&spec);
        }
    }

    fn check(flood: Flood, words: &[&str]) {
        let (error, hwm_kb, sent) = run(flood);
        eprintln!("flood {}: {sent} messages sent, client error: {error}; client VmHWM {hwm_kb} kB", flood.name());
        for w in words {
            assert!(error.contains(w), "{flood:?}: {error:?} lacks {w:?}");
        }
        assert!(hwm_kb < MAX_CLIENT_HWM_KB, "{flood:?}: the client peaked at {hwm_kb} kB");
    }

    #[test]
    fn a_flood_of_bbr_events_ends_at_the_byte_budget() {
        check(Flood::BbrEvents, &["budget of 4 MB"]);
    }

    #[test]
    fn the_audits_flood_of_long_state_names_is_refused() {
        check(Flood::LongState, &["bbr_events", "from of 3000 bytes"]);
    }

    #[test]
    fn an_accepted_repeated_for_one_connection_is_refused() {
        check(Flood::Accepted, &["accepted connection 0 twice"]);
    }

    #[test]
    fn the_servers_announced_max_flows_does_not_raise_the_clients_bound() {
        check(Flood::AnnouncedFlows, &["socket 1000 of a test with 128"]);
    }

    #[test]
    fn a_connection_ended_twice_is_refused() {
        check(Flood::QuicEnds, &["ended the connection of flow 0 twice"]);
    }

    /// `done` parts (of 8 flow ends each) from a hostile server: a flow repeated across parts,
    /// parts without end, the last part never sent. Each ends in one clear line, within the
    /// test's deadline, the client's memory bounded.
    #[test]
    fn a_flow_repeated_across_done_parts_is_refused() {
        check(Flood::DoneRepeatsFlow, &["the server's results name flow 0 twice or of another test"]);
    }

    #[test]
    fn a_flow_repeated_across_quic_done_parts_is_refused() {
        check(Flood::QuicDoneRepeatsFlow, &["the server's results name flow 6 twice or of another test"]);
    }

    #[test]
    fn done_parts_without_end_are_cut_at_the_message_bound() {
        check(Flood::DoneUnbounded, &["the server sent over", "messages for a test of 1.0 s"]);
    }

    #[test]
    fn quic_done_parts_with_ever_new_flows_are_refused() {
        check(Flood::QuicDoneUnbounded, &["the server's results name flow 8 twice or of another test"]);
    }

    #[test]
    fn a_last_done_part_that_never_comes_ends_at_the_deadline() {
        check(Flood::DoneNeverLast, &["the server's results did not end within", "of the test's planned 1.0 s"]);
    }

    /// A server that goes silent, before the handshake or after its welcome: the client says
    /// "no answer … within 15 s", not the socket's "Resource temporarily unavailable".
    #[test]
    fn a_silent_server_gets_no_answer_within_n_s_not_os_error_11() {
        let secret_text = hex(&rand::random::<[u8; 32]>());
        let secret = Secret::from_bytes(secret_text.as_bytes()).unwrap();
        let mute = TcpListener::bind("127.0.0.1:0").unwrap();
        let mute_addr = mute.local_addr().unwrap();
        let hold = std::thread::spawn(move || {
            let held = mute.accept();
            std::thread::sleep(Duration::from_secs(17));
            drop(held);
        });
        let welcoming = TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = welcoming.local_addr().unwrap();
        let server_secret = secret.clone();
        std::thread::spawn(move || {
            let (stream, _) = welcoming.accept().unwrap();
            let channel = Channel::accept(stream, &server_secret, Instant::now() + Duration::from_secs(10)).unwrap();
            let limits = Limits { max_duration_s: 60.0, max_bytes: 1, max_clients: 1, max_tests_per_minute: 60, max_flows: 1, max_probe_rate_bps: 1 };
            channel.send(&ServerMsg::Welcome { facts: facts(), limits }).unwrap();
            std::thread::sleep(Duration::from_secs(17));
        });
        let handshake =
            std::thread::spawn(move || Client::connect(mute_addr, &Secret::from_bytes(secret_text.as_bytes()).unwrap()).err().map(|e| e.to_string()));
        let mut client = Client::connect(addr, &secret).unwrap();
        let test = crate::proto::TestRequest::Bulk(ccbench_workload::BulkSpec {
            flows: 1,
            direction: ccbench_workload::Direction::Download,
            amount: ccbench_workload::Amount::Seconds(1.0),
            cc: "cubic".parse().unwrap(),
            mix: Vec::new(),
            port: 0,
            sample_interval_us: 10_000,
            timeout_s: 10.0,
            quic_receiver_cc: None,
            knobs: Default::default(),
        });
        let e = client.check(&test).unwrap_err().to_string();
        assert_eq!(e, format!("control connection: no answer from ccbench serve at {addr} within 15 s"));
        let e = handshake.join().unwrap().expect("a silent server fails the handshake");
        assert!(e.contains(&format!("no answer from ccbench serve at {mute_addr} within 15 s")) && !e.contains("os error"), "{e}");
        let _ = hold.join();
    }
}
