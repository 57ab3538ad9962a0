//! What the model and the user read when something fails: a short sentence
//! in plain words, never a library's type names (`rmcp::transport::…`,
//! `reqwest::…`). One row per kind of failure, each produced by a real
//! failure: endpoints that refuse or are not MCP, programs that are missing
//! or exit, a server killed mid-call, a server rejecting a call, a
//! deadline.

mod common;

use agentkit_mcp::{McpServerConfig, McpServerManager};
use agentkit_tools_core::{ToolContext, ToolError};
use axum::Router;
use axum::http::StatusCode;
use common::{eventually, fixtures_dir, within};
use serde_json::json;
use std::time::Duration;

/// Words no message may contain.
const LIBRARY_WORDS: [&str; 6] = ["::", "rmcp", "reqwest", "hyper", "Transport [", "<"];

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// An HTTP server on 127.0.0.1 that answers every request with a 500 and
/// an HTML page: reachable, but not MCP. Stopped when the test ends.
async fn not_mcp() -> (String, tokio::task::JoinHandle<()>) {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/mcp", listener.local_addr().unwrap());
    let app = Router::new().fallback(|| async {
        (
            StatusCode::INTERNAL_SERVER_ERROR,
            "<html><body>java.lang.NullPointerException</body></html>",
        )
    });
    let task = tokio::spawn(async move {
        axum::serve(listener, app).await.unwrap();
    });
    (url, task)
}

fn stubborn(name: &str) -> McpServerConfig {
    McpServerConfig::stdio(name, "node")
        .arg(fixtures_dir().join("stubborn.mjs").to_string_lossy())
        .cwd(fixtures_dir())
}

async fn call(manager: &McpServerManager, server: &str, tool: &str) -> ToolError {
    manager
        .call_tool(server, tool, json!({}), ToolContext::new("words-1"))
        .await
        .expect_err("this row fails")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn failures_read_as_plain_sentences() {
    within(120, "the error words table", async {
        let (not_mcp_url, not_mcp_task) = not_mcp().await;
        let manager = McpServerManager::new();
        let quick = Duration::from_secs(5);
        manager
            .register(
                McpServerConfig::http("refusing", format!("http://127.0.0.1:{}/mcp", free_port()))
                    .connect_timeout(quick),
            )
            .unwrap();
        manager
            .register(McpServerConfig::http("not-mcp", &not_mcp_url).connect_timeout(quick))
            .unwrap();
        manager
            .register(McpServerConfig::stdio(
                "missing",
                "agentkit-no-such-program",
            ))
            .unwrap();
        manager
            .register(McpServerConfig::stdio("exiting", "sh").args(["-c", "exit 7"]))
            .unwrap();
        manager
            .register(stubborn("stubborn").call_timeout(Duration::from_millis(300)))
            .unwrap();
        manager.register(stubborn("killed")).unwrap();

        let mut rows: Vec<(&str, String)> = Vec::new();
        for server in ["refusing", "not-mcp", "missing", "exiting"] {
            let connect = manager.connect(server).await.expect_err("this row fails");
            rows.push((server, connect.to_string()));
            rows.push((server, call(&manager, server, "anything").await.to_string()));
        }
        assert!(matches!(
            manager.status("refusing").unwrap().state,
            agentkit_mcp::ServerState::Failed(agentkit_mcp::McpError::Connect { .. })
        ));
        let read = manager
            .read_resource("refusing", "demo://a")
            .await
            .expect_err("unreachable");
        rows.push(("refusing: resource", read.to_string()));

        manager.connect("stubborn").await.unwrap();
        let unknown = call(&manager, "stubborn", "no-such-tool").await;
        assert!(
            matches!(unknown, ToolError::ExecutionFailed(_)),
            "{unknown:?}"
        );
        rows.push(("unknown tool", unknown.to_string()));
        let timeout = call(&manager, "stubborn", "hang").await;
        assert!(matches!(timeout, ToolError::Timeout(_)), "{timeout:?}");
        rows.push(("deadline", timeout.to_string()));

        let pid = manager.connect("killed").await.unwrap().pid.unwrap();
        let in_flight = tokio::spawn({
            let manager = manager.clone();
            async move { call(&manager, "killed", "hang").await }
        });
        eventually(10, "the call reaching the server", || {
            manager
                .stderr_tail("killed")
                .unwrap()
                .iter()
                .any(|line| line.starts_with("hang started"))
        })
        .await;
        assert!(
            std::process::Command::new("kill")
                .args(["-KILL", &pid.to_string()])
                .status()
                .unwrap()
                .success()
        );
        let killed = in_flight.await.unwrap();
        assert!(matches!(killed, ToolError::Unavailable(_)), "{killed:?}");
        rows.push(("killed mid-call", killed.to_string()));
        not_mcp_task.abort();

        for (row, message) in &rows {
            eprintln!("{row:>20}: {message}");
            for word in LIBRARY_WORDS {
                assert!(!message.contains(word), "{row}: {word:?} in {message:?}");
            }
            assert!(message.len() < 400, "{row}: too long: {message:?}");
            assert!(!message.trim().is_empty(), "{row}: empty");
        }
        // Each row says which server it is about.
        for (row, message) in &rows[..8] {
            let server = row.split(':').next().unwrap();
            assert!(message.contains(server), "{row}: {message:?}");
        }
    })
    .await;
}
