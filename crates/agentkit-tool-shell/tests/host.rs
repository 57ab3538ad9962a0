//! The host's own settings, tested as the attack: a command that clears
//! its environment *and* leaves its session (no call tag to find it by)
//! does not outlive the call of a host that adopts orphans; a command does
//! not read the keys of a host that hides its environment through
//! `/proc/<host pid>/environ`.
//!
//! Both settings are process-wide, so each test runs its host in its own
//! process (nextest runs every test alone; the environment test re-runs
//! this binary as an ordinary user, because root reads every process).

#![cfg(target_os = "linux")]

use agentkit_tool_shell::{ShellConfig, shell_tools};
use agentkit_tools_core::{
    BasicToolExecutor, ToolContext, ToolExecutor, ToolFederation, ToolRequest,
};
use serde_json::json;
use std::path::Path;
use std::time::{Duration, Instant};

mod common;
use common::{assert_none_left, with_marker};

const DEADLINE: Duration = Duration::from_secs(60);

/// Escapes that carry no call tag; `MARK` is the row's marker.
const UNTAGGED_ESCAPES: &[(&str, &str)] = &[
    (
        "env -i, setsid in the background",
        "env -i setsid sleep 1000.MARK >/dev/null 2>&1 &",
    ),
    (
        "env -i, setsid --fork",
        "env -i setsid -f sleep 1000.MARK >/dev/null 2>&1",
    ),
    (
        "env -i, double fork into a new session",
        "env -i sh -c '(setsid sleep 1000.MARK >/dev/null 2>&1 &)'",
    ),
    (
        "env -i, nohup and setsid",
        "env -i nohup setsid sleep 1000.MARK >/dev/null 2>&1 &",
    ),
    (
        "env -i, a daemon ignoring TERM and HUP in a new session",
        "env -i setsid sh -c ': 1000.MARK; trap \"\" TERM HUP; while :; do sleep 1; done' >/dev/null 2>&1 &",
    ),
];

/// This process's zombie children (orphans adopted and never reaped).
fn zombie_children() -> Vec<u32> {
    let me = std::process::id().to_string();
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    entries
        .filter_map(|entry| entry.ok()?.file_name().to_str()?.parse::<u32>().ok())
        .filter(|pid| {
            std::fs::read_to_string(format!("/proc/{pid}/stat")).is_ok_and(|stat| {
                let fields: Vec<&str> = stat
                    .rsplit(')')
                    .next()
                    .unwrap_or("")
                    .split_whitespace()
                    .collect();
                fields.first() == Some(&"Z") && fields.get(1) == Some(&me.as_str())
            })
        })
        .collect()
}

fn executor(dir: &Path) -> BasicToolExecutor {
    BasicToolExecutor::new(ToolFederation::new().with_source(shell_tools(ShellConfig::new(dir))))
}

/// Runs this binary's test `role` in a process of its own (the host
/// settings are process-wide), with `env` set, and returns its output.
fn run_role(role: &str, wrapper: &[&str], env: &[(&str, &str)]) -> String {
    let exe = std::env::current_exe().unwrap();
    let mut command = match wrapper.split_first() {
        Some((program, args)) => {
            let mut command = std::process::Command::new(program);
            command.args(args).arg(exe);
            command
        }
        None => std::process::Command::new(exe),
    };
    let output = command
        .args(["--ignored", "--exact", role, "--nocapture"])
        .envs(env.iter().copied())
        .output()
        .expect("the role's process starts");
    let stdout = String::from_utf8_lossy(&output.stdout).into_owned();
    assert!(
        output.status.success(),
        "{role}: {stdout}\n{}",
        String::from_utf8_lossy(&output.stderr)
    );
    stdout
}

#[test]
fn untagged_processes_that_left_their_session_do_not_outlive_the_call() {
    let out = run_role("orphans_host_role", &[], &[("AGENTKIT_ORPHANS_ROLE", "1")]);
    assert!(out.contains("ROWS DONE"), "{out}");
}

/// The host's part of the test above.
#[tokio::test]
#[ignore = "the host process of untagged_processes_that_left_their_session_do_not_outlive_the_call"]
async fn orphans_host_role() {
    if std::env::var_os("AGENTKIT_ORPHANS_ROLE").is_none() {
        return;
    }
    agentkit_tool_shell::adopt_orphans().unwrap();
    for (n, (row, command)) in UNTAGGED_ESCAPES.iter().enumerate() {
        for timed_out in [false, true] {
            let dir = tempfile::tempdir().unwrap();
            let mark = format!("{}{n}{}", std::process::id(), u8::from(timed_out));
            let escape = command.replace("MARK", &mark);
            // After a normal end, or with a shell that hangs (once the
            // escape runs) until the timeout kills it.
            let line = if timed_out {
                format!("{escape}\nwhile [ ! -e started ]; do sleep 0.1; done; sleep 100")
            } else {
                escape
            };
            let starter = timed_out.then(|| {
                let (dir, mark) = (dir.path().to_path_buf(), mark.clone());
                tokio::spawn(async move {
                    let until = Instant::now() + DEADLINE;
                    while with_marker(&format!("1000.{mark}")).is_empty() && Instant::now() < until
                    {
                        tokio::time::sleep(Duration::from_millis(20)).await;
                    }
                    std::fs::write(dir.join("started"), "").unwrap();
                })
            });
            let call = ToolRequest::new(
                "call",
                "shell_exec",
                json!({ "command": line, "timeout_secs": 3 }),
            );
            let result = executor(dir.path())
                .execute(call, ToolContext::detached())
                .await
                .unwrap();
            if let Some(starter) = starter {
                starter.await.unwrap();
                assert_eq!(result.metadata["shell.timed_out"], true, "{row}");
            } else {
                assert!(!result.is_error, "{row}: {}", result.output.to_text());
            }
            assert_none_left(row, &mark).await;
        }
    }
    // The host reaped what it adopted.
    let until = Instant::now() + DEADLINE;
    while !zombie_children().is_empty() {
        assert!(
            Instant::now() < until,
            "zombies left: {:?}",
            zombie_children()
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    println!("ROWS DONE");
}

const PLANTED: &str = "sk-planted-31-hostenv-0123456789abcdef";

/// Ways a command reads its host's environment.
const ENVIRON_READS: &[(&str, &str)] = &[
    ("cat", "cat /proc/$PPID/environ"),
    (
        "through the task directory",
        "cat /proc/$PPID/task/$PPID/environ",
    ),
    (
        "a grep over every thread's environment",
        "grep -as sk-planted /proc/$PPID/environ /proc/$PPID/task/*/environ",
    ),
    (
        "by pid number, not $PPID",
        "cat /proc/$(ps -o ppid= -p $$ | tr -d ' ')/environ",
    ),
    (
        "through its memory",
        "grep -a -o 'sk-planted[a-z0-9-]*' /proc/$PPID/mem",
    ),
];

/// The host's part of the next test, run as an ordinary user: runs every
/// read and prints what each command printed.
#[test]
#[ignore = "the host process of a_command_cannot_read_the_hosts_environment"]
fn environ_host_role() {
    let Ok(mode) = std::env::var("AGENTKIT_ENVIRON_ROLE") else {
        return;
    };
    if mode == "hidden" {
        agentkit_tool_shell::hide_host_environment().unwrap();
    }
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let dir = tempfile::tempdir().unwrap();
    for (row, command) in ENVIRON_READS {
        let call = ToolRequest::new("call", "shell_exec", json!({ "command": command }));
        let result = runtime
            .block_on(executor(dir.path()).execute(call, ToolContext::detached()))
            .unwrap();
        println!("ROW {row}\n{}\nEND ROW", result.output.to_text());
    }
}

/// Runs the host role as `nobody` with the planted key in its environment.
fn run_host(mode: &str) -> String {
    run_role(
        "environ_host_role",
        &[
            "setpriv",
            "--reuid=65534",
            "--regid=65534",
            "--clear-groups",
        ],
        &[
            ("AGENTKIT_ENVIRON_ROLE", mode),
            ("OPENAI_API_KEY", PLANTED),
            ("TMPDIR", "/tmp"),
        ],
    )
}

fn rows(stdout: &str) -> Vec<(String, String)> {
    stdout
        .split("ROW ")
        .skip(1)
        .map(|part| {
            let (row, rest) = part.split_once('\n').unwrap_or((part, ""));
            (
                row.to_string(),
                rest.split("END ROW").next().unwrap_or("").to_string(),
            )
        })
        .collect()
}

#[test]
fn a_command_cannot_read_the_hosts_environment() {
    // The attack works on a host that did not hide itself (not every row:
    // `mem` needs a ptrace attach even then) ...
    let plain = rows(&run_host("plain"));
    assert_eq!(plain.len(), ENVIRON_READS.len(), "{plain:?}");
    assert!(
        plain
            .iter()
            .filter(|(_, out)| out.contains(PLANTED))
            .count()
            >= 3,
        "the reads do not reach an ordinary host's environment: {plain:?}"
    );
    // ... and no row gets through on a host that did.
    let hidden = rows(&run_host("hidden"));
    assert_eq!(hidden.len(), ENVIRON_READS.len(), "{hidden:?}");
    for (row, out) in hidden {
        assert!(
            !out.contains(PLANTED),
            "{row}: the host's key was read: {out}"
        );
    }
}
