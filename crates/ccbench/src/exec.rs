//! `ccbench exec`: any program behind an emulated path, like Mahimahi's shells.

use std::ffi::OsString;
use std::process::Stdio;
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
            let child = spawn_in(&path.server, &exe, &argv, &env, Stdio::inherit(), Stdio::inherit())?;
            let deadline = Instant::now() + SERVER_READY_TIMEOUT;
            while !has_tcp_listener(child.pid()) && Instant::now() < deadline {
                std::thread::sleep(Duration::from_millis(10));
            }
            Some(child)
        }
        None => None,
    };
    // Ctrl-C reaches the command through the terminal; ccbench waits for it and cleans up.
    let _ = signal_hook::flag::register(signal_hook::consts::SIGINT, std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false)));
    let argv: Vec<OsString> = command.iter().map(OsString::from).collect();
    let mut client = spawn_in(&path.client, &exe, &argv, &env, Stdio::inherit(), Stdio::inherit())?;
    let status = client.wait()?;
    if let Some(s) = server.as_mut() {
        let _ = s.terminate(STOP_GRACE);
    }
    drop(path);
    Ok(exit_code(status))
}
