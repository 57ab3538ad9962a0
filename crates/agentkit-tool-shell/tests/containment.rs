//! Commands that try to outlive their call: each row starts a process that
//! leaves the command's process group (new session, double fork, `nohup`,
//! a daemon), and the test checks that no process of the row is left once
//! the call ended, whether the command exited, timed out, or the host
//! process running the tool was SIGKILLed.
//!
//! Each row's processes carry a marker unique to the run in their command
//! line (`sleep 1000.<marker>`), and the test scans `/proc` for it: a row
//! passes when nothing with its marker is left, polled with a generous
//! deadline (nothing here measures speed).

#![cfg(target_os = "linux")]

use agentkit_tool_shell::{ShellConfig, shell_tools};
use agentkit_tools_core::{
    BasicToolExecutor, ToolContext, ToolExecutor, ToolFederation, ToolRequest,
};
use serde_json::json;
use std::path::Path;
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::{Duration, Instant};

mod common;
use common::{assert_none_left, with_marker};

const DEADLINE: Duration = Duration::from_secs(60);

/// The escapes; `MARK` is replaced by the row's marker.
const ESCAPES: &[(&str, &str)] = &[
    (
        "setsid in the background",
        "setsid sleep 1000.MARK >/dev/null 2>&1 &",
    ),
    (
        "setsid --fork (the shell never sees the pid)",
        "setsid -f sleep 1000.MARK >/dev/null 2>&1",
    ),
    (
        "double fork: the intermediate exits at once",
        "sh -c 'sleep 1000.MARK >/dev/null 2>&1 &' &",
    ),
    (
        "double fork into a new session",
        "(setsid sh -c 'sleep 1000.MARK & wait' >/dev/null 2>&1 &)",
    ),
    ("nohup", "nohup sleep 1000.MARK >/dev/null 2>&1 &"),
    (
        "a daemon that ignores SIGTERM and SIGHUP in a new session",
        "setsid sh -c ': MARK; trap \"\" TERM HUP; while :; do sleep 1; done' >/dev/null 2>&1 &",
    ),
    (
        "a new session started after the shell is told to stop",
        "trap 'setsid sleep 1000.MARK >/dev/null 2>&1 &' TERM EXIT; sleep 0",
    ),
];

/// A marker no other process on the machine has in its command line.
fn marker() -> String {
    static NEXT: AtomicU32 = AtomicU32::new(0);
    format!(
        "{}{:04}",
        std::process::id(),
        NEXT.fetch_add(1, Ordering::Relaxed)
    )
}

fn executor(dir: &Path) -> BasicToolExecutor {
    BasicToolExecutor::new(ToolFederation::new().with_source(shell_tools(ShellConfig::new(dir))))
}

#[tokio::test]
async fn nothing_that_left_the_group_survives_the_end_of_the_call() {
    for (row, command) in ESCAPES {
        let dir = tempfile::tempdir().unwrap();
        let mark = marker();
        let call = ToolRequest::new(
            "call",
            "shell_exec",
            json!({ "command": command.replace("MARK", &mark) }),
        );
        let result = executor(dir.path())
            .execute(call, ToolContext::detached())
            .await
            .unwrap();
        assert!(!result.is_error, "{row}: {}", result.output.to_text());
        assert_none_left(row, &mark).await;
    }
}

#[tokio::test]
async fn nothing_that_left_the_group_survives_a_timeout_kill() {
    for (row, command) in ESCAPES {
        let dir = tempfile::tempdir().unwrap();
        let mark = marker();
        // The escape, then a shell that hangs until the timeout kills it;
        // the escape is running by then (its pid file says so).
        let line = format!(
            "{}\nwhile [ ! -e started ]; do sleep 0.1; done; sleep 100",
            command.replace("MARK", &mark)
        );
        let starter = {
            let (dir, mark) = (dir.path().to_path_buf(), mark.clone());
            tokio::spawn(async move {
                let until = Instant::now() + DEADLINE;
                while with_marker(&format!("1000.{mark}")).is_empty()
                    && with_marker(&format!(": {mark}")).is_empty()
                    && Instant::now() < until
                {
                    tokio::time::sleep(Duration::from_millis(20)).await;
                }
                std::fs::write(dir.join("started"), "").unwrap();
            })
        };
        let call = ToolRequest::new(
            "call",
            "shell_exec",
            json!({ "command": line, "timeout_secs": 3 }),
        );
        let result = executor(dir.path())
            .execute(call, ToolContext::detached())
            .await
            .unwrap();
        starter.await.unwrap();
        assert_eq!(result.metadata["shell.timed_out"], true, "{row}");
        assert_none_left(row, &mark).await;
    }
}

/// The host's part of the next test: runs when the variable names a
/// directory, as a separate process that the test then SIGKILLs.
#[test]
#[ignore = "the host process of a_killed_host_leaves_no_command_behind"]
fn host_role() {
    let (Ok(dir), Ok(mark)) = (
        std::env::var("AGENTKIT_CONTAINMENT_HOST"),
        std::env::var("AGENTKIT_CONTAINMENT_MARK"),
    ) else {
        return;
    };
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    runtime.block_on(async {
        // In the group, out of it, and the shell itself: all must die with
        // the host.
        let line = format!(
            "sleep 1000.{mark} & setsid sleep 1000.{mark} >/dev/null 2>&1 & \
             touch started; sleep 30.{mark}"
        );
        let call = ToolRequest::new("call", "shell_exec", json!({ "command": line }));
        let _ = executor(Path::new(&dir))
            .execute(call, ToolContext::detached())
            .await;
    });
}

#[tokio::test]
async fn a_killed_host_leaves_no_command_behind() {
    let dir = tempfile::tempdir().unwrap();
    let mark = marker();
    let mut host = std::process::Command::new(std::env::current_exe().unwrap())
        .args(["host_role", "--exact", "--ignored", "--nocapture"])
        .env("AGENTKIT_CONTAINMENT_HOST", dir.path())
        .env("AGENTKIT_CONTAINMENT_MARK", &mark)
        .stdout(std::process::Stdio::null())
        .spawn()
        .unwrap();
    // Wait until the command runs all three (`sleep 30` included).
    let until = Instant::now() + DEADLINE;
    while with_marker(&mark).len() < 4 {
        assert!(Instant::now() < until, "the host never ran the command");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    // The host dies without a chance to clean up.
    host.kill().unwrap();
    host.wait().unwrap();
    assert_none_left("the host was SIGKILLed during `sleep 30`", &mark).await;
}
