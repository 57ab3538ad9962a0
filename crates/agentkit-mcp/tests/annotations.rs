//! Tool annotations from a real server reach the permission requests, and a
//! policy that follows them lets the reference server's read-only tools run
//! without asking while its other tools still ask.

mod common;

use agentkit_mcp::McpServerManager;
use agentkit_tools_core::{
    ApprovalReason, McpServerPolicy, PermissionPolicy, PolicyMatch, ToolSource,
};
use common::{everything, tool, within};
use serde_json::json;

#[tokio::test]
async fn the_reference_servers_hints_decide_between_ask_and_allow() {
    let manager = McpServerManager::new();
    manager.register(everything("everything")).unwrap();
    within(60, "connect", manager.connect("everything"))
        .await
        .unwrap();
    let source = manager.source();
    let policy = McpServerPolicy::new().follow_tool_hints();
    let decide = |name: &str| {
        let requests = tool(&source, name).proposed_requests(&json!({})).unwrap();
        assert_eq!(requests.len(), 1);
        (
            requests[0].metadata.get("mcp.annotations").cloned(),
            policy.evaluate(&requests[0]),
        )
    };

    // echo: readOnlyHint true, openWorldHint false.
    let (hints, verdict) = decide("mcp_everything_echo");
    assert_eq!(hints.unwrap()["readOnlyHint"], true);
    assert_eq!(verdict, PolicyMatch::Allow);

    // toggle-simulated-logging changes the server's state: not read-only.
    let (_, verdict) = decide("mcp_everything_toggle-simulated-logging");
    assert_eq!(
        verdict,
        PolicyMatch::RequireApproval(ApprovalReason::SensitiveServer)
    );

    // Without following hints, every call on an untrusted server asks.
    let requests = tool(&source, "mcp_everything_echo")
        .proposed_requests(&json!({}))
        .unwrap();
    assert_eq!(
        McpServerPolicy::new().evaluate(&requests[0]),
        PolicyMatch::RequireApproval(ApprovalReason::SensitiveServer)
    );
    assert!(source.snapshot().names().len() > 2);
    manager.disconnect_all().await;
}
