//! `cargo xtask load-server [--sessions N] [--replicas R] [--quick]`: the
//! agent server under load (not part of `ci`).
//!
//! Builds, optimized, the replica server (`agentkit-server`'s
//! `examples/replica.rs`) and the load driver (`examples/load/`), then runs
//! the driver: a temporary PostgreSQL cluster, the local provider test
//! server, R replica processes on the one database (2 by default), and N
//! concurrent AG-UI sessions over HTTP (1,000 by default, 100 with
//! `--quick`), first with every replica up, then with one SIGKILLed once
//! half the sessions finished. It prints throughput, time to the first
//! event, peak RSS per replica, and fails if a session was lost or a tool
//! ran twice. The figures go to the performance chapter.

use crate::run::cargo;

pub fn run(args: &[String]) -> Result<(), String> {
    cargo(&[
        "build",
        "--release",
        "-p",
        "agentkit-server",
        "--example",
        "replica",
    ])?;
    let mut command = vec![
        "run",
        "--release",
        "-p",
        "agentkit-server",
        "--example",
        "load",
        "--",
    ];
    command.extend(args.iter().map(String::as_str));
    cargo(&command)
}
