//! End to end: a loop whose model calls a bearer-protected MCP tool, gets
//! the auth error in the transcript, the host resolves auth out of band, and
//! the model's retry succeeds. No loop interrupt is involved. And a server
//! that needs auth before it ever connected: its tools reach the model
//! after the host resolves auth, announced by `ToolCatalogChanged`.

mod common;

use agentkit_core::{Item, validate_transcript};
use agentkit_loop::{Agent, LoopInterrupt, LoopStep, SessionConfig};
use agentkit_loop::{AgentEvent, LoopObserver};
use agentkit_mcp::{AuthRequest, AuthResolution, McpCredentials, McpError, ServerState};
use agentkit_testkit::{ScriptedModel, ScriptedTurn, assert_transcript_snapshot};
use common::rmcp_server::HttpServer;
use common::within;
use serde_json::json;
use std::sync::{Arc, Mutex};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_model_retries_after_the_host_resolves_auth() {
    within(60, "the loop auth flow", async {
        let server = HttpServer::start("first-token").await;
        let manager = server.manager();
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

/// Keeps every catalog change the loop reports.
#[derive(Default)]
struct CatalogChanges(Mutex<Vec<agentkit_tools_core::ToolCatalogEvent>>);

impl LoopObserver for CatalogChanges {
    fn handle_event(&self, event: AgentEvent) {
        if let AgentEvent::ToolCatalogChanged { change } = event {
            self.0.lock().unwrap().push(change);
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_server_needing_auth_at_startup_reaches_the_model_after_resolve_auth() {
    within(60, "the startup auth flow", async {
        let server = HttpServer::start("startup-token").await;
        let manager = server.manager();
        // The host connects everything at startup; this one wants a token.
        let outcomes = manager.connect_all().await;
        let Err(McpError::AuthRequired(request)) = &outcomes[0].1 else {
            panic!("AuthRequired expected, got {outcomes:?}")
        };
        assert!(matches!(
            manager.status("secure").unwrap().state,
            ServerState::NeedsAuth(_)
        ));

        let model = ScriptedModel::new([
            ScriptedTurn::text("I have no tools yet."),
            ScriptedTurn::tool_call("c1", "mcp_secure_whoami", json!({})),
            ScriptedTurn::text("You are authorized."),
        ]);
        let changes = Arc::new(CatalogChanges::default());
        let agent = Agent::builder()
            .model(model.clone())
            .add_tool_source(manager.source())
            .permissions(agentkit_tools_core::AllowAllPermissions)
            .observer_arc(changes.clone())
            .input(vec![Item::user("what can you do?")])
            .build()
            .unwrap();
        let mut driver = agent
            .start(SessionConfig::new("mcp-startup"))
            .await
            .unwrap();
        let LoopStep::Finished(_) = driver.next().await.unwrap() else {
            panic!("the first turn finishes")
        };
        let first = &model.requests()[0];
        assert!(
            first
                .available_tools
                .iter()
                .all(|t| !t.name.starts_with("mcp_")),
            "no MCP tools before auth"
        );
        let changes_before = changes.0.lock().unwrap().len();

        // Out of band, the host answers; the server connects right away.
        manager
            .resolve_auth(AuthResolution::provided(
                (**request).clone(),
                McpCredentials::bearer("startup-token"),
            ))
            .await
            .unwrap();

        let LoopStep::Interrupt(LoopInterrupt::AwaitingInput(input)) = driver.next().await.unwrap()
        else {
            panic!("the loop waits for input")
        };
        input
            .submit(&mut driver, vec![Item::user("and now?")])
            .unwrap();
        let LoopStep::Interrupt(LoopInterrupt::AfterToolResult(_)) = driver.next().await.unwrap()
        else {
            panic!("the tool round")
        };
        let LoopStep::Finished(_) = driver.next().await.unwrap() else {
            panic!("the second turn finishes")
        };
        let second = &model.requests()[1];
        assert!(
            second
                .available_tools
                .iter()
                .any(|t| t.name == "mcp_secure_whoami"),
            "the model sees the tool at its next call"
        );
        let added: Vec<String> = changes.0.lock().unwrap()[changes_before..]
            .iter()
            .flat_map(|change| change.added.clone())
            .collect();
        assert!(
            added.contains(&"mcp_secure_whoami".to_owned()),
            "ToolCatalogChanged announced it: {added:?}"
        );
        let items = driver.transcript().to_vec();
        validate_transcript(&items).unwrap();
        let result = items.iter().flat_map(Item::tool_results).next().unwrap();
        assert!(!result.is_error);
        assert_eq!(result.output.to_text(), "authorized");
    })
    .await;
}
