//! `cargo xtask soak --minutes N [--seed S]`: sessions under random faults
//! for N minutes (not part of `ci`).
//!
//! Three phases. Seven tenths of the time, the ignored `soak` test of
//! `agentkit-provider-openai` (`tests/soak.rs`): sessions one after another
//! against the local test server with connection resets, stalls, 429 and
//! 500 answers, malformed events and panicking or failing tools; every
//! transcript must stay valid and complete, and resident memory flat after
//! warm-up. A tenth, the ignored `soak_killed_mcp_servers` test of
//! `agentkit-mcp` (`tests/soak.rs`): sessions whose tools live in a real MCP
//! server process, SIGKILLed while a call is in flight; each killed call is
//! answered with an error and the manager reconnects. The last fifth, the
//! ignored `soak_killed_store_writers` test of `agentkit-store`
//! (`tests/crash.rs`): processes writing a session to a SQLite file
//! SIGKILLed mid-round, each session then loaded, resumed and validated.
//! The figures all three print go to the reliability chapter.

use crate::run::cargo_with_env;

pub fn run(args: &[String]) -> Result<(), String> {
    let mut minutes = "10".to_string();
    let mut seed = None;
    let mut rest = args.iter();
    while let Some(arg) = rest.next() {
        match arg.as_str() {
            "--minutes" => minutes = rest.next().ok_or("--minutes needs a value")?.clone(),
            "--seed" => seed = Some(rest.next().ok_or("--seed needs a value")?.clone()),
            other => return Err(format!("soak: unknown argument {other:?}")),
        }
    }
    let total: f64 = minutes
        .parse()
        .map_err(|_| format!("--minutes {minutes:?} is not a number"))?;
    let (faults, mcp, writers) = (
        format!("{}", total * 0.7),
        format!("{}", total * 0.1),
        format!("{}", total * 0.2),
    );
    // One seed for both seeded phases, printed by each, so a run replays.
    let seed = seed.unwrap_or_else(|| {
        let now = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH);
        format!("{}", now.map_or(1, |d| d.as_nanos() as u64 | 1))
    });
    let mut env = vec![
        ("AGENTKIT_SOAK_MINUTES", faults.as_str()),
        ("AGENTKIT_SOAK_SEED", seed.as_str()),
    ];
    cargo_with_env(
        &env,
        &[
            "test",
            "-p",
            "agentkit-provider-openai",
            "--test",
            "soak",
            "--",
            "--ignored",
            "--exact",
            "soak",
            "--nocapture",
        ],
    )?;
    env[0] = ("AGENTKIT_SOAK_MCP_MINUTES", mcp.as_str());
    cargo_with_env(
        &env,
        &[
            "test",
            "-p",
            "agentkit-mcp",
            "--test",
            "soak",
            "--",
            "--ignored",
            "--exact",
            "soak_killed_mcp_servers",
            "--nocapture",
        ],
    )?;
    cargo_with_env(
        &[("AGENTKIT_SOAK_STORE_MINUTES", writers.as_str())],
        &[
            "test",
            "-p",
            "agentkit-store",
            "--test",
            "crash",
            "--",
            "--ignored",
            "--exact",
            "soak_killed_store_writers",
            "--nocapture",
        ],
    )
}
