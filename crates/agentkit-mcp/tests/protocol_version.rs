//! Version negotiation against real server processes: the client announces
//! the newest revision that has the `initialize` handshake, runs the
//! session at whatever older revision the server answers with, shows it in
//! the server's status, and refuses an answer it cannot speak.

mod common;

use agentkit_mcp::{
    McpError, McpServerConfig, McpServerManager, PROTOCOL_VERSION, SUPPORTED_PROTOCOL_VERSIONS,
    ServerState,
};
use agentkit_tools_core::ToolContext;
use common::{everything, fixtures_dir, within};
use serde_json::json;

/// tests/fixtures/hostile.mjs answers `initialize` with `answer` (or the
/// client's own version) and repeats what the client asked for in its
/// instructions.
fn answering(answer: Option<&str>) -> McpServerConfig {
    let config = McpServerConfig::stdio("versions", "node")
        .arg(fixtures_dir().join("hostile.mjs").to_string_lossy())
        .cwd(fixtures_dir());
    match answer {
        Some(version) => config.env("HOSTILE_VERSION", version),
        None => config,
    }
}

#[tokio::test]
async fn the_reference_server_runs_at_the_announced_revision() {
    let manager = McpServerManager::new();
    manager.register(everything("everything")).unwrap();
    let status = within(60, "connect", manager.connect("everything"))
        .await
        .unwrap();
    assert_eq!(PROTOCOL_VERSION, "2025-11-25");
    assert_eq!(status.protocol_version.as_deref(), Some(PROTOCOL_VERSION));
    manager.disconnect_all().await;
}

#[tokio::test]
async fn the_client_announces_the_newest_revision_with_a_handshake() {
    let manager = McpServerManager::new();
    manager.register(answering(None)).unwrap();
    let status = within(30, "connect", manager.connect("versions"))
        .await
        .unwrap();
    assert_eq!(
        status.instructions.as_deref(),
        Some("the client asked for 2025-11-25")
    );
    assert_eq!(status.protocol_version.as_deref(), Some("2025-11-25"));
    manager.disconnect_all().await;
}

#[tokio::test]
async fn every_older_revision_is_accepted_and_shown() {
    for version in SUPPORTED_PROTOCOL_VERSIONS {
        let manager = McpServerManager::new();
        manager.register(answering(Some(version))).unwrap();
        let status = within(30, "connect", manager.connect("versions"))
            .await
            .unwrap_or_else(|err| panic!("{version}: {err}"));
        assert_eq!(status.protocol_version.as_deref(), Some(*version));
        // The session works at that revision.
        let pong = manager
            .call_tool("versions", "ping", json!({}), ToolContext::detached())
            .await
            .unwrap();
        assert_eq!(pong.output.to_text(), "pong", "{version}");
        manager.disconnect_all().await;
    }
}

#[tokio::test]
async fn an_answer_the_client_cannot_speak_ends_the_session_with_a_typed_error() {
    // A revision without the handshake, one from the future, and nonsense.
    for version in ["2026-07-28", "2099-01-01", "banana"] {
        let manager = McpServerManager::new();
        manager.register(answering(Some(version))).unwrap();
        let err = within(30, "connect", manager.connect("versions"))
            .await
            .unwrap_err();
        assert_eq!(
            err,
            McpError::UnsupportedProtocolVersion {
                server: "versions".into(),
                version: version.into(),
            }
        );
        let status = manager.status("versions").unwrap();
        assert!(!status.connected);
        assert!(
            matches!(
                status.state,
                ServerState::Failed(McpError::UnsupportedProtocolVersion { .. })
            ),
            "{:?}",
            status.state
        );
    }
}
