//! `ccbench probe`: measures a path with [`ccbench_pathprobe`] and writes it as a path file, whose
//! fields are the path flags that make the emulator reproduce it (`ccbench run --path FILE`: the
//! path's local twin).
//!
//! How the estimates map onto the flags, given the emulator's model (loss → buffer → rate →
//! delay, per direction):
//! * `rate-down`, `rate-up`: the dispersion rate of a train that overdrives each direction. The
//!   emulator drops before its queue, so lost packets take no service time and this is its
//!   `--rate` with no loss correction; a link that drops after its bottleneck delivers the same
//!   rate to the receiver, which is what the twin reproduces.
//! * `rtt`: the base RTT, split evenly. Without synchronized clocks the two one-way delays
//!   cannot be told apart, and only their sum shapes TCP.
//! * `loss-down`, `loss-up`: Bernoulli loss counted from sequence numbers below the bottleneck.
//! * `buffer-down`, `buffer-up`: bytes, the queue a full buffer adds (RTT under load less the
//!   base RTT) times the rate.

use std::net::SocketAddr;
use std::path::Path;
use std::time::Instant;

use crate::cli::PathOpts;
use crate::cli::ProbeArgs;
use crate::error::{precondition, require_root, UsageError};
use crate::values::RemoteAddr;
use ccbench::units::{fmt_bytes, fmt_ms, fmt_rate};
use ccbench_emu::{EmulatedPath, PathSpec, SERVER_ADDR};
use ccbench_link::{Buffer, LossModel};
use ccbench_pathprobe::{probe, DirectionEstimate, Limits, PathEstimate, ProbeOptions, ProbeServer, Token};
use ccbench_remote::{Client, ProbeLimits, ProbeReport, ProbeRequest, RemoteError, Secret};

pub fn run(args: ProbeArgs) -> anyhow::Result<i32> {
    let opts = probe_options(&args)?;
    if let Some(out) = &args.out {
        let dir = out.parent().filter(|d| !d.as_os_str().is_empty()).unwrap_or(Path::new("."));
        if !dir.is_dir() {
            return Err(UsageError::new("--out", out.display(), "a file in an existing directory").into());
        }
    }
    let mut note = None;
    let (estimate, given, origin) = match (&args.target, args.emulated) {
        (Some(t), true) => return Err(UsageError::new("--emulated", t, "either HOST:PORT or --emulated, not both").into()),
        (None, false) => return Err(precondition("ccbench probe needs HOST:PORT of a `ccbench serve` (with --secret-file), or --emulated [path flags]").into()),
        (Some(target), false) => {
            if args.path != default_path() || args.seed.is_some() {
                return Err(
                    UsageError::new("--emulated", "(not given)", "--emulated with path flags or --seed; a real path's flags are what probe measures").into()
                );
            }
            let target = resolve(target)?;
            let secret = load_secret(args.secret_file.as_deref())?;
            let (estimate, report) = probe_through_serve(&target, &secret, &opts)?;
            note = Some(format!(
                "The server (ccbench serve at {}) sent {} and received {}\n",
                target.label,
                fmt_bytes(report.bytes_sent),
                fmt_bytes(report.bytes_received)
            ));
            (estimate, None, target.label.clone())
        }
        (None, true) => {
            let spec = crate::path::build(&args.path, args.seed.unwrap_or_else(rand::random), 10_000);
            require_root("probe --emulated")?;
            (probe_emulated(&spec, &opts)?, Some(spec), "an emulated path".to_string())
        }
    };
    print!("{}{}", summary(&estimate, given.as_ref(), &origin), note.unwrap_or_default());
    if let Some(out) = &args.out {
        std::fs::write(out, path_file(&estimate, &origin)).map_err(|e| anyhow::anyhow!("writing {}: {e}", out.display()))?;
        println!("Wrote {}: run its twin with `ccbench run --path {}`", out.display(), out.display());
    }
    if args.json {
        println!("{}", serde_json::to_string_pretty(&estimate)?);
    }
    Ok(0)
}

fn probe_options(args: &ProbeArgs) -> Result<ProbeOptions, UsageError> {
    let max_rate_bps = match args.max_rate.0 {
        ccbench_link::Rate::BitsPerSec(b) => b,
        ccbench_link::Rate::Unlimited => return Err(UsageError::new("--max-rate", "unlimited", "a rate such as 1gbit (the probe must stop somewhere)")),
    };
    Ok(ProbeOptions { loss_packets: args.loss_packets, max_rate_bps, start_rate_bps: max_rate_bps.min(4_000_000), ..ProbeOptions::default() })
}

/// The path flags as clap fills them when none is given.
fn default_path() -> PathOpts {
    match crate::cli::parse_from(["ccbench", "probe", "--emulated"]).map(|c| c.command) {
        Ok(crate::cli::Command::Probe(a)) => a.path,
        _ => PathOpts::default(),
    }
}

fn resolve(target: &str) -> Result<RemoteAddr, UsageError> {
    target.parse::<RemoteAddr>().map_err(|e| UsageError::new("HOST:PORT", target, e.0))
}

fn load_secret(file: Option<&Path>) -> Result<Secret, UsageError> {
    let Some(file) = file else { return Err(UsageError::new("--secret-file", "(not given)", "the file holding the secret shared with `ccbench serve`")) };
    crate::serve::load_secret(file)
}

/// Probes the path to the `ccbench serve` at `target`: authenticates over its control
/// connection, asks it for a probe session (it binds a UDP probe server with a fresh random
/// token and its limits), probes, and ends the session. Returns the estimate and what the
/// probe cost the server. A refusal (secret, limits) is a [`UsageError`]; a probe that fails
/// part-way says why, with the server's side of it.
pub fn probe_through_serve(target: &RemoteAddr, secret: &Secret, opts: &ProbeOptions) -> anyhow::Result<(PathEstimate, ProbeReport)> {
    let mut client = Client::connect(target.addr, secret).map_err(|e| match e {
        RemoteError::Connect { .. } => UsageError::new("HOST:PORT", &target.label, format!("a running ccbench serve ({e})")),
        e => crate::serve::remote_error(target, e),
    })?;
    let session = client.open_probe(&ProbeRequest { max_rate_bps: opts.max_rate_bps }).map_err(|e| crate::serve::remote_error(target, e))?;
    // The server's cap on the rate is the search's too: a faster path reads as "at least".
    let opts = ProbeOptions { max_rate_bps: session.limits.max_rate_bps, start_rate_bps: opts.start_rate_bps.min(session.limits.max_rate_bps), ..opts.clone() };
    let estimate = probe(session.server, session.token, &opts);
    let report = client.end_probe();
    match (estimate, report) {
        (Ok(e), Ok(r)) => Ok((e, r)),
        (Err(e), Ok(r)) => Err(anyhow::anyhow!("probing {} failed: {e}{}", target.label, server_side(&r, &session.limits))),
        (Err(e), Err(_)) => Err(anyhow::anyhow!("probing {} failed: {e}", target.label)),
        (Ok(_), Err(e)) => Err(anyhow::anyhow!("probing {}: ending the probe session: {e}", target.label)),
    }
}

/// Why the server may have stopped answering, from its report.
fn server_side(r: &ProbeReport, limits: &ProbeLimits) -> String {
    let mut why = Vec::new();
    if r.timed_out {
        why.push(format!("the server ended the probe at its limit of {} s per test (--max-duration)", limits.max_duration_s));
    }
    if r.trains_refused > 0 {
        why.push(format!("the server refused {} train(s) over its limit of {} bytes per test (--max-bytes)", r.trains_refused, limits.max_bytes));
    }
    if why.is_empty() {
        String::new()
    } else {
        format!("; {}", why.join("; "))
    }
}

/// Both halves on an emulated path: the server in the server namespace, the prober in the
/// client's; no packet leaves ccbench's own namespaces.
fn probe_emulated(spec: &PathSpec, opts: &ProbeOptions) -> anyhow::Result<PathEstimate> {
    let path = EmulatedPath::start(spec, Instant::now())?;
    let token: Token = rand::random();
    let server = path.server.run(|| ProbeServer::bind(SocketAddr::from((SERVER_ADDR, 0)), token, Limits::default()).map_err(anyhow::Error::from))?;
    let addr = server.local_addr()?;
    let handle = server.spawn()?;
    let estimate = path.client.run(|| probe(addr, token, opts).map_err(anyhow::Error::from));
    handle.stop();
    path.finish();
    estimate
}

fn pct(p: f64) -> String {
    format!("{:.2} %", p * 100.0)
}

fn given_rate(r: ccbench_link::Rate) -> String {
    match r {
        ccbench_link::Rate::BitsPerSec(b) => fmt_rate(b as f64),
        ccbench_link::Rate::Unlimited => "unlimited".into(),
    }
}

fn given_loss(l: &LossModel) -> String {
    match l {
        LossModel::None => "0 %".into(),
        LossModel::Bernoulli { p } => pct(*p),
        other => format!("{other:?}"),
    }
}

fn given_buffer(b: Buffer) -> String {
    match b {
        Buffer::Bytes(b) => fmt_bytes(b),
        Buffer::Packets(n) => format!("{n} packets"),
        Buffer::Unlimited => "unlimited".into(),
    }
}

/// The estimate as a table; with the emulated path's own settings beside it when there is one.
pub fn summary(e: &PathEstimate, given: Option<&PathSpec>, origin: &str) -> String {
    let mut out = format!(
        "Probed {origin} in {:.1} s: sent {}, received {}\n{:<16}{:<34}{}\n",
        e.duration_ms as f64 / 1000.0,
        fmt_bytes(e.bytes_sent),
        fmt_bytes(e.bytes_received),
        "",
        "down (server → client)",
        "up (client → server)"
    );
    let dirs = [&e.down, &e.up];
    let spec_dirs = given.map(|s| [&s.down, &s.up]);
    let mut row = |name: &str, measured: &dyn Fn(&DirectionEstimate) -> String, set: &dyn Fn(&ccbench_link::DirectionConfig) -> Option<String>| {
        let cell = |i: usize| match spec_dirs.and_then(|d| set(d[i])) {
            Some(given) => format!("{} (given {given})", measured(dirs[i])),
            None => measured(dirs[i]),
        };
        out += &format!("{name:<16}{:<34}{}\n", cell(0), cell(1));
    };
    row("rate", &|d| format!("{}{}", if d.rate_is_lower_bound { "≥ " } else { "" }, fmt_rate(d.rate_bps)), &|c| Some(given_rate(c.rate)));
    row("loss", &|d| format!("{} ± {:.2}", pct(d.loss.fraction), (d.loss.ci95.1 - d.loss.ci95.0) * 50.0), &|c| Some(given_loss(&c.loss)));
    row("RTT under load", &|d| fmt_ms(d.loaded_rtt_ns), &|_| None);
    row("buffer", &|d| format!("{}{}", if d.buffer_filled { "" } else { "≥ " }, fmt_bytes(d.buffer_bytes)), &|c| Some(given_buffer(c.buffer)));
    out += &format!("{:<16}{}", "base RTT", fmt_ms(e.base_rtt_ns));
    if let Some(s) = given {
        out += &format!(" (given {})", fmt_ms((s.down.delay_ns + s.up.delay_ns).as_nanos()));
    }
    out += &format!("  ({} of {} echoes answered)\n", e.echoes_answered, e.echoes_sent);
    out
}

/// The smallest buffer worth writing: one full-size packet (an emulated buffer smaller than a
/// packet would drop everything).
const MIN_BUFFER_BYTES: u64 = 1500;

fn rate_flag(bps: f64) -> String {
    format!("{:.3}mbit", bps.clamp(10e3, 100e9) / 1e6)
}

/// The path file: path flags (the same fields a preset's path takes), with what they came from
/// in comments.
pub fn path_file(e: &PathEstimate, origin: &str) -> String {
    let now = time::OffsetDateTime::now_utc();
    let bound = |d: &DirectionEstimate, name: &str| {
        let mut notes = Vec::new();
        if d.rate_is_lower_bound {
            notes.push(format!("# rate-{name}: the path carried all the probe sent; it is at least this fast."));
        }
        if !d.buffer_filled {
            notes.push(format!("# buffer-{name}: the queue was still growing when the load train ended; it is at least this deep."));
        }
        notes.join("\n")
    };
    let mut text = format!(
        "# Path measured by `ccbench probe` ({origin}) at {:04}-{:02}-{:02} {:02}:{:02} UTC, in {:.1} s.\n\
         # Base RTT: least of {} echoes, split evenly (one-way delays need synchronized clocks).\n\
         # Loss 95 % intervals: down {:.2}–{:.2} %, up {:.2}–{:.2} % ({} packets each).\n\
         # Buffers: RTT under load (down {}, up {}) less the base RTT, times the rate.\n",
        now.year(),
        now.month() as u8,
        now.day(),
        now.hour(),
        now.minute(),
        e.duration_ms as f64 / 1000.0,
        e.echoes_answered,
        e.down.loss.ci95.0 * 100.0,
        e.down.loss.ci95.1 * 100.0,
        e.up.loss.ci95.0 * 100.0,
        e.up.loss.ci95.1 * 100.0,
        e.down.loss.sent,
        fmt_ms(e.down.loaded_rtt_ns),
        fmt_ms(e.up.loaded_rtt_ns),
    );
    for note in [bound(&e.down, "down"), bound(&e.up, "up")] {
        if !note.is_empty() {
            text += &note;
            text.push('\n');
        }
    }
    text += &format!("rate-down = \"{}\"\nrate-up = \"{}\"\n", rate_flag(e.down.rate_bps), rate_flag(e.up.rate_bps));
    text += &format!("rtt = \"{:.3}ms\"\n", e.base_rtt_ns as f64 / 1e6);
    text += &format!("loss-down = \"{:.3}%\"\nloss-up = \"{:.3}%\"\n", e.down.loss.fraction * 100.0, e.up.loss.fraction * 100.0);
    text += &format!("buffer-down = \"{}\"\nbuffer-up = \"{}\"\n", e.down.buffer_bytes.max(MIN_BUFFER_BYTES), e.up.buffer_bytes.max(MIN_BUFFER_BYTES));
    text
}

#[cfg(test)]
mod tests {
    use super::*;
    use ccbench_link::Rate as LinkRate;
    use ccbench_pathprobe::LossEstimate;

    fn estimate() -> PathEstimate {
        let dir = |rate_bps: f64, received: u32, buffer_bytes: u64| DirectionEstimate {
            rate_bps,
            rate_is_lower_bound: false,
            loaded_rtt_ns: 120_000_000,
            queue_delay_ns: 60_000_000,
            buffer_bytes,
            buffer_filled: true,
            loss: LossEstimate::new(10_000, received),
        };
        PathEstimate {
            base_rtt_ns: 60_123_456,
            min_echo_rtt_ns: 60_200_000,
            echoes_sent: 200,
            echoes_answered: 198,
            down: dir(29_987_654.0, 9_897, 224_900),
            up: dir(5_000_000.0, 10_000, 10),
            duration_ms: 17_000,
            bytes_sent: 1,
            bytes_received: 2,
        }
    }

    #[test]
    fn the_path_file_reads_back_as_the_flags_of_the_estimate() {
        let dir = std::env::temp_dir().join(format!("ccbench-pathfile-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let file = dir.join("path.toml");
        std::fs::write(&file, path_file(&estimate(), "test")).unwrap();
        let opts = crate::presets::path_file(&file).unwrap();
        let spec = crate::path::build(&opts.path, 1, 10_000);
        assert_eq!(spec.down.rate, LinkRate::BitsPerSec(29_988_000), "rounded to the kbit");
        assert_eq!(spec.up.rate, LinkRate::BitsPerSec(5_000_000));
        assert_eq!((spec.down.delay_ns + spec.up.delay_ns).as_nanos(), 60_123_000, "rounded to the µs");
        assert_eq!(spec.down.loss, LossModel::Bernoulli { p: 0.01030 });
        assert_eq!(spec.up.loss, LossModel::None);
        assert_eq!((spec.down.buffer, spec.up.buffer), (Buffer::Bytes(224_900), Buffer::Bytes(MIN_BUFFER_BYTES)));
        // The command line goes over the file, as over a preset.
        let crate::cli::Command::Run(args) = crate::cli::parse_from(["ccbench", "run", "--rate-down", "10mbit"]).unwrap().command else { panic!() };
        let spec = crate::path::build(&crate::cli::Layer::over(args.opts, opts).path, 1, 10_000);
        assert_eq!((spec.down.rate, spec.up.rate), (LinkRate::BitsPerSec(10_000_000), LinkRate::BitsPerSec(5_000_000)));
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn a_bad_path_file_is_one_line_naming_it() {
        let dir = std::env::temp_dir().join(format!("ccbench-badpath-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        for (text, says) in [
            ("rate = \"fast\"", "--rate (path file"),
            ("cc = \"bbr\"", "path flags only; \"cc\" is not one"),
            ("rate = ", "a TOML file of path flags"),
            ("name = \"x\"", "path flags only"),
        ] {
            let file = dir.join("p.toml");
            std::fs::write(&file, text).unwrap();
            let e = crate::presets::path_file(&file).unwrap_err().to_string();
            assert!(e.contains(says) && !e.contains('\n'), "{text:?}: {e}");
        }
        let e = crate::presets::path_file(&dir.join("missing.toml")).unwrap_err().to_string();
        assert!(e.starts_with("invalid --path") && e.contains("a readable path file"), "{e}");
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn the_summary_shows_what_was_given_beside_what_was_measured() {
        let crate::cli::Command::Probe(a) =
            crate::cli::parse_from(["ccbench", "probe", "--emulated", "--rate", "30mbit", "--rtt", "60ms", "--loss", "1%"]).unwrap().command
        else {
            panic!()
        };
        let spec = crate::path::build(&a.path, 1, 10_000);
        let s = summary(&estimate(), Some(&spec), "an emulated path");
        assert!(s.contains("30.0 Mbit/s (given 30.0 Mbit/s)") && s.contains("1.03 % ± 0.20 (given 1.00 %)"), "{s}");
        assert!(s.contains("base RTT        60.123 ms (given 60 ms)"), "{s}");
    }
}
