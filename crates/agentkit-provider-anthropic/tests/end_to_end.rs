//! The whole path: an `Agent` with a tool drives the adapter against the
//! local server; the model asks for the tool, the driver runs it, and the
//! second request carries the call and its result back.

use agentkit_core::{FinishReason, Item, ItemKind, validate_transcript};
use agentkit_http::testing::{ScriptedResponse, TestServer};
use agentkit_loop::{Agent, LoopInterrupt, LoopStep, SessionConfig};
use agentkit_provider_anthropic::{AnthropicAdapter, AnthropicConfig};
use agentkit_testkit::WeatherTool;
use agentkit_testkit::cassette::CassetteSession;
use agentkit_tools_core::ToolRegistry;
use serde_json::json;
use std::time::Duration;

fn fixture(name: &str) -> String {
    let path = format!("{}/tests/fixtures/{name}", env!("CARGO_MANIFEST_DIR"));
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{path}: {e}"))
}

#[tokio::test]
async fn a_driver_with_a_tool_runs_through_the_adapter() {
    let (server, _upstream) = cassette("tool_round", &["tool_use.sse", "text.sse"]).await;
    let key = std::env::var("ANTHROPIC_API_KEY").unwrap_or_else(|_| "key".into());
    let model = std::env::var("AGENTKIT_MODEL").unwrap_or_else(|_| "claude-test".into());
    let adapter = AnthropicAdapter::new(
        AnthropicConfig::new(key.clone(), model).with_base_url(format!("{}/v1", server.url())),
    )
    .unwrap();
    let agent = Agent::builder()
        .model(adapter)
        .add_tool_source(ToolRegistry::new().with(WeatherTool))
        .transcript(vec![Item::system("Be brief.")])
        .input(vec![Item::user("Weather in Genève?")])
        .build()
        .unwrap();
    let run = async {
        let mut driver = agent.start(SessionConfig::new("e2e")).await.unwrap();
        loop {
            match driver.next().await.unwrap() {
                LoopStep::Finished(result) => return (driver, result),
                LoopStep::Interrupt(LoopInterrupt::AfterToolResult(_)) => {}
                other => panic!("unexpected step {other:?}"),
            }
        }
    };
    let (driver, result) = tokio::time::timeout(Duration::from_secs(20), run)
        .await
        .expect("in time");
    assert_eq!(result.finish_reason, FinishReason::Completed);

    let items = driver.transcript().to_vec();
    validate_transcript(&items).expect("valid transcript");
    let kinds: Vec<ItemKind> = items.iter().map(|i| i.kind).collect();
    assert_eq!(
        kinds,
        [
            ItemKind::System,
            ItemKind::User,
            ItemKind::Assistant,
            ItemKind::Tool,
            ItemKind::Assistant
        ]
    );
    assert_eq!(items[4].text_content(), "Bonjour le monde 🌍, ça va ?");

    let requests = server.requests();
    assert_eq!(requests.len(), 2);
    let second = requests[1].json();
    let messages = second["messages"].as_array().unwrap();
    assert_eq!(second["system"][0]["text"], "Be brief.");
    assert_eq!(messages[1]["role"], "assistant");
    assert_eq!(
        messages[1]["content"][0],
        json!({"type": "text", "text": "Let me check."})
    );
    assert_eq!(
        messages[1]["content"][1],
        json!({"type": "tool_use", "id": "toolu_01", "name": "get_weather", "input": {"city": "Genève"}})
    );
    assert_eq!(
        messages[2],
        json!({"role": "user", "content": [{"type": "tool_result", "tool_use_id": "toolu_01", "content": "18°C in Genève"}]})
    );
    assert_eq!(second["tools"][0]["name"], "get_weather");
    server
        .finish(&[&key])
        .expect("the requests match the recording");
}

/// The happy path's cassette (tests/cassettes/NAME.json), replayed; to
/// re-record it, set `AGENTKIT_RECORD` to `fixtures` (these wire-format
/// fixtures are the upstream) or to a real server's root URL.
async fn cassette(name: &str, fixtures: &[&str]) -> (CassetteSession, Option<TestServer>) {
    let path = format!("{}/tests/cassettes/{name}.json", env!("CARGO_MANIFEST_DIR"));
    let script = fixtures.iter().map(|f| ScriptedResponse::sse(fixture(f)));
    CassetteSession::from_env(&path, script)
        .await
        .unwrap_or_else(|e| panic!("{e}"))
}
