//! A hostile MCP server (tests/fixtures/hostile.mjs, plain JSON-RPC over
//! stdio, no npm package needed): a huge result, a value nested 100,000
//! deep, bytes that are not UTF-8, a result for an id never asked. Each call
//! ends in bounded time with a typed result or error, memory stays bounded,
//! and the session keeps working: `ping` answers after each.

mod common;

use agentkit_mcp::{McpServerConfig, McpServerManager};
use agentkit_tools_core::{ToolContext, ToolError, ToolResult};
use common::{fixtures_dir, within};
use serde_json::json;
use std::time::{Duration, Instant};

/// Short, so the calls that end at their deadline keep the test quick.
const CALL_TIMEOUT: Duration = Duration::from_secs(2);

fn hostile(huge_mb: u32) -> McpServerConfig {
    McpServerConfig::stdio("hostile", "node")
        .arg(fixtures_dir().join("hostile.mjs").to_string_lossy())
        .env("HOSTILE_HUGE_MB", huge_mb.to_string())
        .cwd(fixtures_dir())
        .call_timeout(CALL_TIMEOUT)
}

async fn call(manager: &McpServerManager, tool: &str) -> Result<ToolResult, ToolError> {
    manager
        .call_tool("hostile", tool, json!({}), ToolContext::detached())
        .await
}

async fn still_works(manager: &McpServerManager) {
    let pong = call(manager, "ping")
        .await
        .expect("the session still works");
    assert_eq!(pong.output.to_text(), "pong");
}

/// The resident memory of this process (Linux), to show what a hostile
/// answer costs.
fn resident_bytes() -> u64 {
    std::fs::read_to_string("/proc/self/statm")
        .ok()
        .and_then(|s| s.split_whitespace().nth(1)?.parse::<u64>().ok())
        .map_or(0, |pages| pages * 4096)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn each_hostile_answer_is_bounded_and_typed_and_the_session_survives() {
    within(90, "the hostile server test", async {
        let manager = McpServerManager::new();
        manager.register(hostile(64)).unwrap();
        manager.connect("hostile").await.expect("connects");
        still_works(&manager).await;

        // A result for an id never asked is dropped; the real one arrives.
        let stray = call(&manager, "stray").await.expect("the real answer");
        assert_eq!(stray.output.to_text(), "pong");

        // Lines the transport cannot read (not UTF-8, nested past serde's
        // limit of 128, longer than rmcp's 16 MiB line cap) are dropped
        // without being buffered whole: the call ends at its deadline with
        // a typed timeout, and the next call works.
        for tool in ["badutf8", "deep", "huge"] {
            let before = resident_bytes();
            let started = Instant::now();
            let outcome = call(&manager, tool).await;
            assert_eq!(outcome, Err(ToolError::Timeout(CALL_TIMEOUT)), "{tool}");
            assert!(
                started.elapsed() < CALL_TIMEOUT * 3,
                "{tool}: {:?}",
                started.elapsed()
            );
            let grown = resident_bytes().saturating_sub(before);
            assert!(
                grown < 48 << 20,
                "{tool}: memory grew by {} MiB",
                grown >> 20
            );
            still_works(&manager).await;
        }
    })
    .await;
}
