//! A connection's sampled congestion state as a qlog file: the IETF qlog main schema with the
//! QUIC event definitions, serialised as JSON-SEQ (`.sqlog`, RFC 7464: each record is RS, a
//! JSON text, LF), which qvis and other qlog tools open.
//!
//! Written in the 0.3 format of draft-ietf-quic-qlog-main-schema-03/-04 and
//! draft-ietf-quic-qlog-quic-events-02/-03 (`qlog_version` "0.3", `qlog_format` "JSON-SEQ"),
//! the version qvis reads. Events, from ccbench's 10 ms samples of the sending connection
//! (their times are the sample's, not the packet's) and the controller's own state changes:
//! * `recovery:metrics_updated` — cwnd, bytes in flight, RTTs, pacing rate, when any changed,
//!   and BBR's `round_count` (draft-ietf-ccwg-bbr §5.5.1): quic-events-03 §"metrics_updated"
//!   lets the event "contain any number of unspecified fields to support different recovery
//!   approaches";
//! * `recovery:congestion_state_updated` — each change of BBR's state (`PROBE_BW_UP`, …) at the
//!   time the controller made it, with its own `round` and `full_bw_round` at that change
//!   (result.json's `bbr_events`; §5.3.1.2: on leaving STARTUP, `round - full_bw_round` is the
//!   rounds without 25 % growth), so a phase shorter than a sample is there too. Before the
//!   controller's first recorded change (and for a controller that records none), the state
//!   the samples show, at the sample's time. -03's definition (`old`, `new`, `trigger`) has no
//!   place for the rounds; the later drafts give the event an extension point for exactly this
//!   (`QUICCongestionStateUpdated`'s `* $$quic-congestionstateupdated-extension`), and qlog
//!   tools show unknown fields as they are;
//! * `recovery:packet_lost` — one per packet counted lost since the previous sample (no packet
//!   number: the sample does not carry it, and every field of the event is optional).

use serde_json::{json, Map, Value};
use std::time::Duration;

/// The record separator that starts every JSON-SEQ record (RFC 7464 §2.2).
pub const RS: char = '\u{1e}';

/// One sample of a QUIC connection's sender.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Sample {
    /// Since the connection's first sample.
    pub t: Duration,
    pub cwnd_bytes: Option<u64>,
    pub bytes_in_flight: Option<u64>,
    pub smoothed_rtt: Option<Duration>,
    pub latest_rtt: Option<Duration>,
    pub min_rtt: Option<Duration>,
    pub pacing_rate_bps: Option<u64>,
    /// The controller's state as the series name it (`STARTUP`, `PROBE_BW_UP`, …).
    pub state: Option<String>,
    /// Packets declared lost so far (cumulative).
    pub lost_packets: u64,
    /// BBR.round_count as sampled (§5.5.1).
    pub round_count: Option<u64>,
}

/// A state change as the controller recorded it.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct StateChange {
    /// Since the connection's first sample (0 for a change before it).
    pub t: Duration,
    pub old: String,
    pub new: String,
    /// BBR.round_count at the change (§5.5.1) and when full_bw last grew by 25 % (§5.3.1.2).
    pub round: Option<u64>,
    pub full_bw_round: Option<u64>,
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1e3
}

/// The whole `.sqlog` file for one connection: its samples and its controller's own state
/// `changes` (oldest first; empty where it records none).
pub fn write(title: &str, vantage_point: &str, samples: &[Sample], changes: &[StateChange]) -> String {
    let header = json!({
        "qlog_version": "0.3",
        "qlog_format": "JSON-SEQ",
        "title": title,
        "description": "ccbench: the sending connection's congestion controller, sampled every sample interval",
        "trace": {
            "vantage_point": { "type": vantage_point, "name": "ccbench" },
            "common_fields": { "protocol_type": ["QUIC"], "time_format": "relative", "reference_time": 0 },
        },
    });
    // Records with their times, merged in time order at the end (a stable sort keeps a sample's
    // own records in order, and a change after the sample at its time).
    let mut records: Vec<(Duration, Value)> = Vec::new();
    // The samples' view of the state serves until the controller's first recorded change.
    let recorded_from = changes.first().map_or(Duration::MAX, |c| c.t);
    let mut last_metrics = Map::new();
    let mut last_state: Option<&str> = None;
    let mut lost = samples.first().map_or(0, |s| s.lost_packets);
    for s in samples {
        let time = ms(s.t);
        let mut metrics = Map::new();
        let mut put = |k: &str, v: Option<Value>| {
            if let Some(v) = v {
                metrics.insert(k.into(), v);
            }
        };
        put("congestion_window", s.cwnd_bytes.map(Value::from));
        put("bytes_in_flight", s.bytes_in_flight.map(Value::from));
        put("smoothed_rtt", s.smoothed_rtt.map(|d| json!(ms(d))));
        put("latest_rtt", s.latest_rtt.map(|d| json!(ms(d))));
        put("min_rtt", s.min_rtt.map(|d| json!(ms(d))));
        put("pacing_rate", s.pacing_rate_bps.map(Value::from));
        put("round_count", s.round_count.map(Value::from));
        let changed: Map<String, Value> = metrics.iter().filter(|(k, v)| last_metrics.get(*k) != Some(*v)).map(|(k, v)| (k.clone(), v.clone())).collect();
        if !changed.is_empty() {
            records.push((s.t, json!({ "time": time, "name": "recovery:metrics_updated", "data": changed })));
            last_metrics = metrics;
        }
        if let Some(state) = s.state.as_deref().filter(|st| !st.is_empty() && s.t < recorded_from) {
            if last_state != Some(state) {
                let mut data = json!({ "new": state });
                if let Some(old) = last_state {
                    data["old"] = json!(old);
                }
                records.push((s.t, json!({ "time": time, "name": "recovery:congestion_state_updated", "data": data })));
                last_state = Some(state);
            }
        }
        for _ in lost..s.lost_packets {
            records.push((s.t, json!({ "time": time, "name": "recovery:packet_lost", "data": { "trigger": "reordering_threshold_or_time" } })));
        }
        lost = lost.max(s.lost_packets);
    }
    // A change before any sample that showed a state: the state it left is the first.
    if let (None, Some(first)) = (last_state, changes.first()) {
        records.push((Duration::ZERO, json!({ "time": 0.0, "name": "recovery:congestion_state_updated", "data": { "new": first.old } })));
    }
    for c in changes {
        let mut data = json!({ "old": c.old, "new": c.new });
        if let Some(r) = c.round {
            data["round"] = json!(r);
        }
        if let Some(r) = c.full_bw_round {
            data["full_bw_round"] = json!(r);
        }
        records.push((c.t, json!({ "time": ms(c.t), "name": "recovery:congestion_state_updated", "data": data })));
    }
    records.sort_by_key(|(t, _)| *t);
    let mut out = String::new();
    push(&mut out, &header);
    for (_, r) in &records {
        push(&mut out, r);
    }
    out
}

fn push(out: &mut String, v: &Value) {
    out.push(RS);
    out.push_str(&v.to_string());
    out.push('\n');
}

/// Reads a `.sqlog` back: its records, each parsed as JSON. An error names the bad record.
pub fn parse(text: &str) -> Result<Vec<Value>, String> {
    if !text.starts_with(RS) {
        return Err("a JSON-SEQ file starts with the record separator 0x1E".into());
    }
    text.split(RS).skip(1).enumerate().map(|(i, rec)| serde_json::from_str(rec.trim_end_matches('\n')).map_err(|e| format!("record {i}: {e}"))).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn records_are_json_seq_with_a_header_and_quic_recovery_events() {
        let s = |t: u64, state: &str, lost: u64, cwnd: u64| Sample {
            t: Duration::from_millis(t),
            cwnd_bytes: Some(cwnd),
            bytes_in_flight: Some(cwnd / 2),
            smoothed_rtt: Some(Duration::from_millis(41)),
            latest_rtt: Some(Duration::from_millis(40)),
            min_rtt: Some(Duration::from_millis(40)),
            pacing_rate_bps: Some(10_000_000),
            state: Some(state.into()),
            lost_packets: lost,
            ..Sample::default()
        };
        let samples = [s(0, "STARTUP", 0, 12_000), s(10, "STARTUP", 0, 12_000), s(20, "DRAIN", 2, 24_000)];
        // The controller left STARTUP at 14 ms, between two samples, and DRAIN at 17 ms: both
        // changes at their own times; the samples' DRAIN at 20 ms is not another.
        let change = |t, old: &str, new: &str, round| StateChange {
            t: Duration::from_millis(t),
            old: old.into(),
            new: new.into(),
            round: Some(round),
            full_bw_round: Some(9),
        };
        let changes = [change(14, "STARTUP", "DRAIN", 12), change(17, "DRAIN", "PROBE_BW_DOWN", 13)];
        let text = write("t", "server", &samples, &changes);
        assert!(text.ends_with('\n'));
        let recs = parse(&text).unwrap();
        assert_eq!(recs[0]["qlog_format"], "JSON-SEQ");
        assert_eq!(recs[0]["qlog_version"], "0.3");
        let names: Vec<(&str, f64)> = recs[1..].iter().map(|r| (r["name"].as_str().unwrap(), r["time"].as_f64().unwrap())).collect();
        // The unchanged sample at 10 ms adds nothing; two packets lost at 20 ms.
        assert_eq!(
            names,
            [
                ("recovery:metrics_updated", 0.0),
                ("recovery:congestion_state_updated", 0.0),
                ("recovery:congestion_state_updated", 14.0),
                ("recovery:congestion_state_updated", 17.0),
                ("recovery:metrics_updated", 20.0),
                ("recovery:packet_lost", 20.0),
                ("recovery:packet_lost", 20.0)
            ]
        );
        assert_eq!(recs[2]["data"], json!({ "new": "STARTUP" }));
        assert_eq!(recs[3]["data"], json!({ "old": "STARTUP", "new": "DRAIN", "round": 12, "full_bw_round": 9 }));
        assert_eq!(recs[5]["data"], json!({ "congestion_window": 24_000, "bytes_in_flight": 12_000 }));
        // A change before the first sample: the state it left comes first, at 0.
        let recs = parse(&write("t", "server", &samples, &[change(0, "STARTUP", "DRAIN", 2)])).unwrap();
        let states: Vec<&Value> = recs.iter().filter(|r| r["name"] == "recovery:congestion_state_updated").map(|r| &r["data"]).collect();
        assert_eq!(states, [&json!({ "new": "STARTUP" }), &json!({ "old": "STARTUP", "new": "DRAIN", "round": 2, "full_bw_round": 9 })]);
        // A controller that records no changes: the samples' states, at the samples' times.
        let recs = parse(&write("t", "server", &samples, &[])).unwrap();
        let states: Vec<(&Value, f64)> =
            recs.iter().filter(|r| r["name"] == "recovery:congestion_state_updated").map(|r| (&r["data"], r["time"].as_f64().unwrap())).collect();
        assert_eq!(states, [(&json!({ "new": "STARTUP" }), 0.0), (&json!({ "old": "STARTUP", "new": "DRAIN" }), 20.0)]);
        assert!(parse("{}").is_err());
    }
}
