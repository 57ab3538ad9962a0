//! A hostile MCP server (tests/fixtures/hostile.mjs, plain JSON-RPC over
//! stdio, no npm package needed): plain text, JSON that is not JSON-RPC, a
//! huge result, a value nested 100,000 deep, bytes that are not UTF-8, a
//! result for an id never asked. Each call ends at once with a typed result
//! or error naming the server, memory stays bounded, and the session keeps
//! working: `ping` answers after each.

mod common;

use agentkit_mcp::{McpError, McpServerConfig, McpServerManager};
use agentkit_tools_core::{ToolContext, ToolError, ToolResult};
use common::{fixtures_dir, within};
use serde_json::json;
use std::time::Duration;

/// Far longer than the test's own limit: a call that waited for its
/// deadline instead of failing on a broken line fails the test.
const CALL_TIMEOUT: Duration = Duration::from_secs(600);

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

        // Lines that are not JSON-RPC (plain text, JSON of another shape,
        // bytes that are not UTF-8, nesting past serde's limit of 128, a
        // line longer than the 16 MiB cap) may be the answer the call waits
        // for: the call fails at once with a protocol error naming the
        // server (the deadline is far beyond the test's own limit), memory
        // stays bounded (long lines are never buffered whole), and the
        // next call works.
        for (tool, words) in [
            ("garbage", "Debugger listening"),
            ("notrpc", "hello"),
            ("badutf8", "not JSON-RPC"),
            ("deep", "recursion limit"),
            ("huge", "longer than"),
        ] {
            let before = resident_bytes();
            let outcome = call(&manager, tool).await;
            let Err(ToolError::ExecutionFailed(message)) = &outcome else {
                panic!("{tool}: {outcome:?}");
            };
            assert!(message.contains("MCP server hostile"), "{tool}: {message}");
            assert!(message.contains(words), "{tool}: {message}");
            let grown = resident_bytes().saturating_sub(before);
            assert!(
                grown < 48 << 20,
                "{tool}: memory grew by {} MiB",
                grown >> 20
            );
            still_works(&manager).await;
        }

        // A host request is answered with plain text: it fails at once
        // with the manager's protocol error, naming the server.
        let read = manager.read_resource("hostile", "file:///x").await;
        let Err(McpError::Protocol { server, message }) = &read else {
            panic!("{read:?}");
        };
        assert_eq!(server, "hostile");
        assert!(message.contains("no resource file:///x here"), "{message}");
        still_works(&manager).await;
    })
    .await;
}
