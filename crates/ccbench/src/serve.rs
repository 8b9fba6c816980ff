//! `ccbench serve`: the far end of a real path (see the `ccbench_remote` crate), and the
//! pre-flight of `ccbench run --remote`: the secret, the handshake, the remote's facts, and
//! every test of the plan checked by the server before anything runs.

use std::path::Path;

use crate::error::{precondition, UsageError};
use ccbench::experiment::{Plan, Remote};
use ccbench::run_workload::RunWorkload;
use ccbench_remote::{Client, Limits, RemoteError, Secret, ServeConfig, ServerFacts};

use crate::cli::ServeArgs;
use crate::values::RemoteAddr;

/// Flows one test may have: far more than any workload uses, few enough to bound a server.
const MAX_FLOWS: u32 = 64;

pub fn load_secret(path: &Path) -> Result<Secret, UsageError> {
    Secret::from_file(path).map_err(|e| UsageError::new("--secret-file", path.display(), format!("a private file holding the shared secret, but {e}")))
}

pub fn run(args: ServeArgs) -> anyhow::Result<i32> {
    if let Some(file) = &args.new_secret {
        Secret::write_new(file).map_err(|e| UsageError::new("--new-secret", file.display(), format!("a new file to write the secret to, but {e}")))?;
        println!("wrote a new 256-bit secret to {} (mode 600); copy it to the client host over a channel you trust, e.g. scp", file.display());
        return Ok(0);
    }
    let Some(secret_file) = &args.secret_file else {
        return Err(UsageError::new("--secret-file", "(not given)", "the file holding the shared secret (make one with --new-secret FILE)").into());
    };
    // SAFETY: geteuid has no preconditions.
    let euid = unsafe { libc::geteuid() };
    let secret = Secret::from_file_for_serve(secret_file, euid)
        .map_err(|e| UsageError::new("--secret-file", secret_file.display(), format!("a private file holding the shared secret, but {e}")))?;
    let host = ccbench::provenance::host_facts();
    let facts = ServerFacts {
        ccbench_version: env!("CARGO_PKG_VERSION").to_string(),
        kernel_release: host.kernel_release,
        kernel_version: host.kernel_version,
        congestion_controls: crate::host::usable_algorithms(),
        default_congestion_control: host.default_congestion_control,
        default_qdisc: host.default_qdisc,
        // Per session: the interface the client reached, and its root qdisc.
        serving_interface: None,
        serving_qdisc: None,
    };
    let limits = Limits {
        max_duration_s: args.max_duration.0 as f64 / 1e9,
        max_bytes: args.max_bytes.0,
        max_clients: args.max_clients.0,
        max_tests_per_minute: args.max_tests_per_minute.0,
        max_flows: MAX_FLOWS,
        max_probe_rate_bps: match args.max_probe_rate.0 {
            ccbench_link::Rate::BitsPerSec(b) if b >= ccbench_remote::probe::MIN_PROBE_RATE_BPS => b,
            _ => return Err(UsageError::new("--max-probe-rate", "unlimited", "a rate such as 1gbit (a probe must stop somewhere)").into()),
        },
    };
    let stop = crate::host::install_stop()?;
    let listen = args.listen.0;
    let idle_timeout = std::time::Duration::from_nanos(args.idle_timeout.0);
    ccbench_remote::serve(ServeConfig { listen, secret, limits, facts, idle_timeout }, &stop)
        .map_err(|e| UsageError::new("--listen", listen, format!("an address this host can listen on ({e})")))?;
    Ok(0)
}

/// The pre-flight of `run --remote`: authenticates, then has the server check every test the
/// plan will ask for (its algorithms and limits), so a refusal comes before any run, as one
/// line. Returns the remote as the plan records it.
pub fn preflight(remote: &RemoteAddr, secret: Secret) -> Result<(Client, Remote), UsageError> {
    let client = Client::connect(remote.addr, &secret).map_err(|e| remote_error(remote, e))?;
    let r =
        Remote { addr: remote.addr, label: remote.label.clone(), secret, facts: client.facts.clone(), limits: client.limits, rtt_us_at_start: client.rtt_us };
    Ok((client, r))
}

/// Asks the server whether it would run each of the plan's tests.
pub fn check_plan(client: &mut Client, remote: &RemoteAddr, plan: &Plan) -> Result<(), UsageError> {
    for cc in &plan.ccs {
        let test = cc.workload(&plan.workload).far_request();
        client.check(&test).map_err(|e| remote_error(remote, e))?;
    }
    Ok(())
}

pub fn remote_error(remote: &RemoteAddr, e: RemoteError) -> UsageError {
    match e {
        RemoteError::Refused(reason) => precondition(format!("ccbench serve at {} refused: {reason}", remote.label)),
        RemoteError::Connect { .. } => UsageError::new("--remote", &remote.label, format!("a running ccbench serve ({e})")),
        e => precondition(e.to_string()),
    }
}
