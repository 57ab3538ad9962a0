//! The whole path: an `Agent` with a tool drives the adapter against the
//! local server; the model asks for the tool, the driver runs it, and the
//! second request carries the call and its result back.

use agentkit_core::FinishReason;
use agentkit_http::testing::{ScriptedResponse, TestServer};
use agentkit_provider_anthropic::{AnthropicAdapter, AnthropicConfig};
use agentkit_testkit::adapter::weather_round;
use agentkit_testkit::cassette::CassetteSession;
use serde_json::json;

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
    let (driver, result) = weather_round(adapter).await;
    assert_eq!(result.finish_reason, FinishReason::Completed);
    let items = driver.transcript().to_vec();
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
