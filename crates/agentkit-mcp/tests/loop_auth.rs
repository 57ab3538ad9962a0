//! End to end: a loop whose model calls a bearer-protected MCP tool, gets
//! the auth error in the transcript, the host resolves auth out of band, and
//! the model's retry succeeds. No loop interrupt is involved.

mod common;

use agentkit_core::{Item, validate_transcript};
use agentkit_loop::{Agent, LoopInterrupt, LoopStep, SessionConfig};
use agentkit_mcp::{
    AuthRequest, AuthResolution, McpCredentials, McpServerConfig, McpServerManager,
};
use agentkit_testkit::{ScriptedModel, ScriptedTurn, assert_transcript_snapshot};
use common::rmcp_server::HttpServer;
use common::within;
use serde_json::json;
use std::time::Duration;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_model_retries_after_the_host_resolves_auth() {
    within(60, "the loop auth flow", async {
        let server = HttpServer::start("first-token").await;
        let manager = McpServerManager::new();
        manager
            .register(
                McpServerConfig::http("secure", &server.url)
                    .connect_timeout(Duration::from_secs(10)),
            )
            .unwrap();
        manager
            .set_credentials("secure", McpCredentials::bearer("first-token"))
            .await
            .unwrap();
        manager
            .connect("secure")
            .await
            .expect("connects with the first token");
        // The token is rotated behind the agent's back.
        server.shared.set_token("second-token");

        let model = ScriptedModel::new([
            ScriptedTurn::tool_call("c1", "mcp_secure_whoami", json!({})),
            ScriptedTurn::tool_call("c2", "mcp_secure_whoami", json!({})),
            ScriptedTurn::text("You are authorized."),
        ]);
        let agent = Agent::builder()
            .model(model.clone())
            .add_tool_source(manager.source())
            .permissions(agentkit_tools_core::AllowAllPermissions)
            .input(vec![Item::user("am I authorized?")])
            .build()
            .unwrap();
        let mut driver = agent.start(SessionConfig::new("mcp-auth")).await.unwrap();
        assert!(
            model.remaining() == 3 && driver.transcript().is_empty(),
            "nothing ran before next()"
        );

        // Round 1: the call fails with an auth error, recorded as a tool result.
        let LoopStep::Interrupt(LoopInterrupt::AfterToolResult(_)) = driver.next().await.unwrap()
        else {
            panic!("auth is not a loop interrupt")
        };
        let items = driver.transcript().to_vec();
        let failed = items.iter().flat_map(Item::tool_results).next().unwrap();
        assert!(failed.is_error);
        assert_eq!(failed.metadata["agentkit.error_kind"], "auth_required");
        let request: AuthRequest =
            serde_json::from_value(failed.metadata["agentkit.auth_request"].clone()).unwrap();
        assert_eq!(request.provider, "secure");
        assert!(
            request
                .challenge
                .as_deref()
                .unwrap()
                .contains("invalid_token")
        );
        assert_eq!(manager.pending_auth(), vec![request.clone()]);

        // The host resolves it out of band; the loop never waited for it.
        manager
            .resolve_auth(AuthResolution::provided(
                request,
                McpCredentials::bearer("second-token"),
            ))
            .await
            .unwrap();

        // Round 2: the model's retry reconnects with the new credentials.
        let LoopStep::Interrupt(LoopInterrupt::AfterToolResult(_)) = driver.next().await.unwrap()
        else {
            panic!()
        };
        let LoopStep::Finished(result) = driver.next().await.unwrap() else {
            panic!()
        };
        assert_eq!(
            result.items.last().unwrap().text_content(),
            "You are authorized."
        );
        let items = driver.transcript().to_vec();
        validate_transcript(&items).unwrap();
        let results: Vec<_> = items.iter().flat_map(Item::tool_results).collect();
        assert_eq!(results[1].output.to_text(), "authorized");
        assert!(!results[1].is_error);
        // The challenge names a random port; keep the snapshot stable.
        let mut stable = items.clone();
        for item in &mut stable {
            for part in &mut item.parts {
                if let agentkit_core::Part::ToolResult(result) = part {
                    result.metadata.remove("agentkit.auth_request");
                }
            }
        }
        assert_transcript_snapshot!(&stable);
    })
    .await;
}
