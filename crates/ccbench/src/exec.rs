//! `ccbench exec`: any program behind an emulated path, like Mahimahi's shells.

use std::ffi::OsString;
use std::process::Stdio;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use ccbench_emu::{EmulatedPath, PathSpec, CLIENT_ADDR, SERVER_ADDR};
use ccbench_netns::process::{exit_code, has_tcp_listener, spawn_in};

/// How long to wait for `--server-cmd` to start listening before running the client anyway.
const SERVER_READY_TIMEOUT: Duration = Duration::from_secs(5);
const STOP_GRACE: Duration = Duration::from_secs(2);

pub fn run(spec: &PathSpec, server_cmd: Option<&str>, command: &[String]) -> anyhow::Result<i32> {
    let exe = std::env::current_exe()?;
    let path = EmulatedPath::start(spec, Instant::now())?;
    let env = vec![
        ("CCBENCH_SERVER_ADDR".to_string(), SERVER_ADDR.to_string()),
        ("CCBENCH_CLIENT_ADDR".to_string(), CLIENT_ADDR.to_string()),
        ("CCBENCH_CLIENT_NETNS".to_string(), path.client.inode().to_string()),
        ("CCBENCH_SERVER_NETNS".to_string(), path.server.inode().to_string()),
    ];
    let mut server = match server_cmd {
        Some(cmd) => {
            let argv: Vec<OsString> = ["/bin/sh", "-c", cmd].iter().map(OsString::from).collect();
            // The server writes to our stderr, so the client's stdout stays its own (e.g.
            // `iperf3 -J | jq`).
            let child = spawn_in(&path.server, &exe, &argv, &env, stderr_stdio()?, Stdio::inherit())?;
            let deadline = Instant::now() + SERVER_READY_TIMEOUT;
            while !has_tcp_listener(child.pid()) && Instant::now() < deadline {
                std::thread::sleep(Duration::from_millis(10));
            }
            Some(child)
        }
        None => None,
    };
    // Ctrl-C in a terminal reaches the reapers too; `kill -INT` reaches only us. Either way
    // the command is asked to stop and, as PID 1 of its namespace may ignore that, killed
    // after a short grace (see the reaper).
    let interrupted = Arc::new(AtomicBool::new(false));
    for sig in [signal_hook::consts::SIGINT, signal_hook::consts::SIGTERM, signal_hook::consts::SIGHUP] {
        signal_hook::flag::register(sig, interrupted.clone())?;
    }
    let argv: Vec<OsString> = command.iter().map(OsString::from).collect();
    let mut client = spawn_in(&path.client, &exe, &argv, &env, Stdio::inherit(), Stdio::inherit())?;
    let status = loop {
        if let Some(status) = client.try_wait()? {
            break status;
        }
        if interrupted.load(Ordering::SeqCst) {
            break client.terminate(STOP_GRACE)?;
        }
        std::thread::sleep(Duration::from_millis(10));
    };
    if let Some(s) = server.as_mut() {
        let _ = s.terminate(STOP_GRACE);
    }
    drop(path);
    Ok(if interrupted.load(Ordering::SeqCst) { 130 } else { exit_code(status) })
}

/// This process's stderr as a child's stdout.
fn stderr_stdio() -> std::io::Result<Stdio> {
    use std::os::fd::AsFd;
    Ok(Stdio::from(std::io::stderr().as_fd().try_clone_to_owned()?))
}
