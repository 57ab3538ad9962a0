//! Roots against the MCP reference server (`@modelcontextprotocol/server-everything`
//! over stdio): it asks for the client's roots once connected, shows them
//! through its `get-roots-list` tool (offered only to clients that announce
//! the capability), and asks again on `notifications/roots/list_changed`.

mod common;

use agentkit_mcp::{McpRoot, McpServerManager};
use agentkit_tools_core::ToolContext;
use common::{everything, within};
use serde_json::json;
use std::time::Duration;

/// What the server's `get-roots-list` tool says it knows.
async fn roots_seen(manager: &McpServerManager) -> String {
    manager
        .call_tool(
            "everything",
            "get-roots-list",
            json!({}),
            ToolContext::new("roots"),
        )
        .await
        .expect("get-roots-list answers")
        .output
        .to_text()
}

/// Polls the server's view until it mentions `uri` (its fetch after a
/// notification runs on its own schedule).
async fn until_seen(manager: &McpServerManager, uri: &str) -> String {
    loop {
        let seen = roots_seen(manager).await;
        if seen.contains(uri) {
            return seen;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn servers_get_the_hosts_roots_and_hear_when_they_change() {
    within(90, "the roots test", async {
        let manager = McpServerManager::new();
        manager
            .set_roots(vec![
                McpRoot::directory("/work/first project").name("first"),
            ])
            .await;
        manager.register(everything("everything")).unwrap();
        manager.connect("everything").await.expect("connects");
        // The tool exists only for clients announcing `roots`; it comes
        // with a tools/list_changed right after the handshake.
        loop {
            let status = manager.status("everything").unwrap();
            if status.tools.iter().any(|t| t == "get-roots-list") {
                break;
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        let seen = until_seen(&manager, "file:///work/first%20project").await;
        assert!(seen.contains("first"), "{seen}");

        // The host changes them: the server is told and asks again.
        manager
            .set_roots(vec![
                McpRoot::new("file:///work/second").name("second"),
                McpRoot::new("file:///work/third"),
            ])
            .await;
        let seen = until_seen(&manager, "file:///work/second").await;
        assert!(seen.contains("file:///work/third"), "{seen}");
        assert!(!seen.contains("first%20project"), "{seen}");
        manager.disconnect_all().await;
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn without_roots_nothing_is_announced() {
    within(60, "the no-roots test", async {
        let manager = McpServerManager::new();
        manager.register(everything("everything")).unwrap();
        manager.connect("everything").await.expect("connects");
        // The server registers its roots tool while handling the
        // handshake, before any later request: a client that announced no
        // roots has none to call.
        let refused = manager
            .call_tool(
                "everything",
                "get-roots-list",
                json!({}),
                ToolContext::new("roots"),
            )
            .await;
        let text = match refused {
            Ok(result) => {
                assert!(result.is_error, "{:?}", result.output);
                result.output.to_text()
            }
            Err(err) => err.to_string(),
        };
        assert!(text.contains("get-roots-list"), "{text}");
        manager.disconnect_all().await;
    })
    .await;
}
