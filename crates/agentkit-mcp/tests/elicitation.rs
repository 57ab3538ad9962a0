//! Elicitation against the MCP reference server, which offers its
//! elicitation tools only to a client that declares the capability: form
//! answers reach the server with the schema's defaults filled in, decline
//! and cancel arrive as such, a URL request reaches the host with its URL,
//! and an answer that breaks the schema never leaves the client.

mod common;

use agentkit_mcp::{
    ElicitationHandler, ElicitationKind, ElicitationRequest, ElicitationResponse, McpServerManager,
};
use agentkit_tools_core::ToolContext;
use common::{everything, within};
use serde_json::{Map, Value, json};
use std::sync::{Arc, Mutex};

/// Answers with a fixed response and records what it was asked.
struct Scripted {
    response: ElicitationResponse,
    seen: Mutex<Vec<ElicitationRequest>>,
}

#[async_trait::async_trait]
impl ElicitationHandler for Scripted {
    async fn elicit(&self, request: ElicitationRequest) -> ElicitationResponse {
        self.seen.lock().unwrap().push(request);
        self.response.clone()
    }
}

async fn run(
    response: ElicitationResponse,
    tool: &str,
    arguments: Value,
) -> (String, Vec<ElicitationRequest>) {
    let handler = Arc::new(Scripted {
        response,
        seen: Mutex::new(Vec::new()),
    });
    let manager = McpServerManager::new();
    manager.register(everything("everything")).unwrap();
    manager.set_elicitation_handler(handler.clone());
    let result = within(
        60,
        "elicitation call",
        manager.call_tool("everything", tool, arguments, ToolContext::new("call-1")),
    )
    .await
    .unwrap();
    manager.disconnect_all().await;
    let seen = handler.seen.lock().unwrap().clone();
    (result.output.to_text(), seen)
}

fn content(value: Value) -> Map<String, Value> {
    value.as_object().unwrap().clone()
}

#[tokio::test]
async fn without_a_handler_the_capability_is_not_declared() {
    let manager = McpServerManager::new();
    manager.register(everything("everything")).unwrap();
    let status = within(60, "connect", manager.connect("everything"))
        .await
        .unwrap();
    assert!(
        !status.tools.iter().any(|t| t.contains("elicitation")),
        "{:?}",
        status.tools
    );
    manager.disconnect_all().await;
}

#[tokio::test]
async fn an_accepted_form_reaches_the_server_with_its_defaults() {
    let (text, seen) = run(
        ElicitationResponse::Accept(content(json!({ "name": "Ada Lovelace", "check": true }))),
        "trigger-elicitation-request",
        json!({}),
    )
    .await;
    assert_eq!(seen.len(), 1);
    assert_eq!(seen[0].server, "everything");
    assert!(matches!(seen[0].kind, ElicitationKind::Form { .. }));
    assert!(
        text.contains("User provided the requested information"),
        "{text}"
    );
    assert!(text.contains("- Name: Ada Lovelace"), "{text}");
    // Not given by the host: the schema's defaults.
    assert!(text.contains("- Favorite Integer: 42"), "{text}");
    assert!(text.contains("It was a dark and stormy night."), "{text}");
}

#[tokio::test]
async fn decline_and_cancel_arrive_as_such() {
    let (text, _) = run(
        ElicitationResponse::Decline,
        "trigger-elicitation-request",
        json!({}),
    )
    .await;
    assert!(text.contains("declined"), "{text}");
    let (text, _) = run(
        ElicitationResponse::Cancel,
        "trigger-elicitation-request",
        json!({}),
    )
    .await;
    assert!(text.contains("cancelled"), "{text}");
}

#[tokio::test]
async fn an_answer_that_breaks_the_schema_is_sent_as_cancel() {
    // `integer` must be an integer, and `name` is required.
    let (text, _) = run(
        ElicitationResponse::Accept(content(json!({ "integer": "many" }))),
        "trigger-elicitation-request",
        json!({}),
    )
    .await;
    assert!(text.contains("cancelled"), "{text}");
    assert!(!text.contains("many"), "{text}");
}

#[tokio::test]
async fn a_url_request_reaches_the_host_with_its_url() {
    let (text, seen) = run(
        ElicitationResponse::Accept(Map::new()),
        "trigger-url-elicitation",
        json!({ "url": "https://example.com/consent", "elicitationId": "e-1" }),
    )
    .await;
    assert_eq!(
        seen[0].kind,
        ElicitationKind::Url {
            url: "https://example.com/consent".into(),
            elicitation_id: "e-1".into()
        }
    );
    assert!(text.to_lowercase().contains("accept"), "{text}");
}
