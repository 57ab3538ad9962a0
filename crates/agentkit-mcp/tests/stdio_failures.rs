//! Stdio servers that misbehave: one that never answers initialize, one
//! that dies at once, and a stubborn one (built on the official SDK) whose
//! tool never returns and which ignores SIGTERM and a closed stdin.

mod common;

use agentkit_mcp::{McpError, McpServerConfig, McpServerManager};
use agentkit_tools_core::{ToolContext, ToolError};
use common::{eventually, fixtures_dir, process_alive, within};
use serde_json::json;
use std::time::{Duration, Instant};

fn stubborn(name: &str) -> McpServerConfig {
    McpServerConfig::stdio(name, "node")
        .arg(fixtures_dir().join("stubborn.mjs").to_string_lossy())
        .cwd(fixtures_dir())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_server_that_never_answers_initialize_times_out_and_its_group_is_killed() {
    within(30, "the silent server test", async {
        let pid_file =
            std::env::temp_dir().join(format!("agentkit-mcp-silent-{}", std::process::id()));
        let _ = std::fs::remove_file(&pid_file);
        // A launcher-like server: a background grandchild, then reading
        // stdin forever without ever replying.
        let manager = McpServerManager::new();
        manager
            .register(
                McpServerConfig::stdio("silent", "sh")
                    .args([
                        "-c",
                        "sleep 300 & echo $! > \"$PID_FILE\"; exec cat > /dev/null",
                    ])
                    .env("PID_FILE", pid_file.to_string_lossy())
                    .connect_timeout(Duration::from_secs(1)),
            )
            .unwrap();
        let started = Instant::now();
        let outcome = manager.connect("silent").await;
        assert_eq!(
            outcome.unwrap_err(),
            McpError::ConnectTimeout {
                server: "silent".into(),
                after: Duration::from_secs(1)
            }
        );
        assert!(started.elapsed() < Duration::from_secs(5));
        let grandchild: u32 = std::fs::read_to_string(&pid_file)
            .expect("the script wrote its child's pid")
            .trim()
            .parse()
            .unwrap();
        eventually(10, "the grandchild being killed with the group", || {
            !process_alive(grandchild)
        })
        .await;
        let _ = std::fs::remove_file(&pid_file);
        assert!(manager.snapshot().tools.is_empty());
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_server_that_exits_reports_its_stderr() {
    within(30, "the exiting server test", async {
        let manager = McpServerManager::new();
        manager
            .register(
                McpServerConfig::stdio("broken", "sh")
                    .args(["-c", "echo 'fatal: missing API key' >&2; exit 3"]),
            )
            .unwrap();
        let err = manager.connect("broken").await.unwrap_err();
        let McpError::Connect { server, message } = &err else {
            panic!("a connect error expected, got {err:?}")
        };
        assert_eq!(server, "broken");
        assert!(message.contains("fatal: missing API key"), "{message}");
        // Through the tool path the same failure is "unavailable".
        let call = manager
            .call_tool("broken", "anything", json!({}), ToolContext::detached())
            .await;
        assert!(matches!(call, Err(ToolError::Unavailable(_))), "{call:?}");
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_tool_that_never_returns_hits_its_deadline_and_is_cancelled_on_the_server() {
    within(60, "the hanging tool test", async {
        let manager = McpServerManager::new();
        manager
            .register(stubborn("stubborn").call_timeout(Duration::from_millis(400)))
            .unwrap();
        manager.connect("stubborn").await.expect("connects");
        let started = Instant::now();
        let outcome = manager
            .call_tool("stubborn", "hang", json!({}), ToolContext::detached())
            .await;
        assert_eq!(outcome, Err(ToolError::Timeout(Duration::from_millis(400))));
        assert!(started.elapsed() < Duration::from_secs(5));
        // The server saw notifications/cancelled for that request.
        eventually(10, "the server reporting the cancellation", || {
            manager
                .stderr_tail("stubborn")
                .unwrap()
                .iter()
                .any(|line| line.starts_with("cancelled request"))
        })
        .await;
        let ping = manager
            .call_tool("stubborn", "ping", json!({}), ToolContext::detached())
            .await
            .expect("the session survives");
        assert_eq!(ping.output.to_text(), "pong");
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn disconnect_is_bounded_when_the_server_ignores_us() {
    within(30, "the stubborn disconnect test", async {
        let manager = McpServerManager::new();
        manager.register(stubborn("stubborn")).unwrap();
        let pid = manager.connect("stubborn").await.unwrap().pid.unwrap();
        let started = Instant::now();
        manager.disconnect("stubborn").await.unwrap();
        assert!(
            started.elapsed() < Duration::from_secs(6),
            "took {:?}",
            started.elapsed()
        );
        eventually(5, "the stubborn process being killed", || {
            !process_alive(pid)
        })
        .await;
        assert!(!manager.status("stubborn").unwrap().connected);
    })
    .await;
}

fn signal(pid: u32, signal: &str) {
    let sent = std::process::Command::new("kill")
        .args([signal, &pid.to_string()])
        .status()
        .unwrap();
    assert!(sent.success(), "kill {signal} {pid}");
}

/// A stdio server killed with SIGKILL while a call waits: the call fails as
/// unavailable at once (the pipe closes), long before its deadline, and
/// the next call reconnects.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_server_killed_mid_call_fails_the_call_promptly() {
    within(60, "the killed stdio server test", async {
        let manager = McpServerManager::new();
        manager
            .register(stubborn("stubborn").call_timeout(Duration::from_secs(60)))
            .unwrap();
        let pid = manager.connect("stubborn").await.unwrap().pid.unwrap();
        let call = tokio::spawn({
            let manager = manager.clone();
            async move {
                manager
                    .call_tool("stubborn", "hang", json!({}), ToolContext::new("kill-1"))
                    .await
            }
        });
        eventually(10, "the call reaching the server", || {
            manager
                .stderr_tail("stubborn")
                .unwrap()
                .iter()
                .any(|line| line.starts_with("hang started"))
        })
        .await;
        signal(pid, "-KILL");
        let killed_at = Instant::now();
        let outcome = within(10, "the call failing", call).await.unwrap();
        let took = killed_at.elapsed();
        eprintln!("the call failed {took:?} after SIGKILL: {outcome:?}");
        let Err(ToolError::Unavailable(message)) = &outcome else {
            panic!("unavailable expected, got {outcome:?}")
        };
        assert!(!message.contains("::"), "{message}");
        assert!(took < Duration::from_secs(2), "took {took:?}");
        let pong = manager
            .call_tool("stubborn", "ping", json!({}), ToolContext::new("kill-2"))
            .await
            .expect("the next call reconnects");
        assert_eq!(pong.output.to_text(), "pong");
        assert_ne!(manager.status("stubborn").unwrap().pid, Some(pid));
    })
    .await;
}

/// A stdio server frozen with SIGSTOP never answers and never closes its
/// pipes: the call waits for its deadline, then fails with `Timeout`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_frozen_server_times_out_at_the_deadline() {
    within(60, "the frozen stdio server test", async {
        let manager = McpServerManager::new();
        manager
            .register(stubborn("stubborn").call_timeout(Duration::from_millis(800)))
            .unwrap();
        let pid = manager.connect("stubborn").await.unwrap().pid.unwrap();
        signal(pid, "-STOP");
        let started = Instant::now();
        let outcome = manager
            .call_tool("stubborn", "ping", json!({}), ToolContext::new("stop-1"))
            .await;
        let took = started.elapsed();
        eprintln!("the frozen server's call ended after {took:?}: {outcome:?}");
        assert_eq!(outcome, Err(ToolError::Timeout(Duration::from_millis(800))));
        assert!(
            took >= Duration::from_millis(800),
            "not before the deadline"
        );
        assert!(took < Duration::from_secs(5), "took {took:?}");
        // Thawed, the same session answers again.
        signal(pid, "-CONT");
        let pong = manager
            .call_tool("stubborn", "ping", json!({}), ToolContext::new("stop-2"))
            .await
            .expect("the thawed server answers");
        assert_eq!(pong.output.to_text(), "pong");
        manager.disconnect("stubborn").await.unwrap();
    })
    .await;
}
