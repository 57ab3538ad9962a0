//! The whole path: an `Agent` with a tool drives the adapter against the
//! local server; the model asks for the tool, the driver runs it, and the
//! second request carries the call and its result back.

use agentkit_core::{FinishReason, Item, ItemKind, validate_transcript};
use agentkit_http::testing::{ScriptedResponse, TestServer};
use agentkit_loop::{Agent, LoopInterrupt, LoopStep, SessionConfig};
use agentkit_provider_openai::{OpenAiAdapter, OpenAiConfig};
use agentkit_testkit::WeatherTool;
use agentkit_testkit::cassette::CassetteSession;
use agentkit_tools_core::ToolRegistry;
use serde_json::json;
use std::time::Duration;

fn fixture(name: &str) -> String {
    let path = format!("{}/tests/fixtures/{name}", env!("CARGO_MANIFEST_DIR"));
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{path}: {e}"))
}

/// Runs an agent with the weather tool over `adapter` until its turn ends.
async fn weather_round<M: agentkit_loop::ModelAdapter>(
    adapter: M,
) -> (
    agentkit_loop::LoopDriver<M::Session>,
    agentkit_loop::TurnResult,
) {
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
    (driver, result)
}

#[tokio::test]
async fn a_driver_with_a_tool_runs_through_the_adapter() {
    let (server, _upstream) = cassette("tool_round", &["tool_call.sse", "text.sse"]).await;
    let adapter = OpenAiAdapter::new(OpenAiConfig::compatible(
        format!("{}/v1", server.url()),
        "gpt-test",
    ))
    .unwrap();
    let (driver, result) = weather_round(adapter).await;
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
    assert_eq!(messages[2]["tool_calls"][0]["id"], "call_abc");
    assert_eq!(
        messages[2]["tool_calls"][0]["function"]["arguments"],
        r#"{"city":"Genève"}"#
    );
    assert_eq!(
        messages[3],
        json!({"role": "tool", "tool_call_id": "call_abc", "content": "18°C in Genève"})
    );
    assert_eq!(second["tools"][0]["function"]["name"], "get_weather");
    server
        .finish(&[])
        .expect("the requests match the recording");
}

#[tokio::test]
async fn a_driver_with_a_tool_runs_through_the_responses_adapter() {
    let (server, _upstream) = cassette(
        "responses_tool_round",
        &["responses/reasoning_tool_call.sse", "responses/text.sse"],
    )
    .await;
    let adapter = agentkit_provider_openai::ResponsesAdapter::new(
        OpenAiConfig::compatible(format!("{}/v1", server.url()), "gpt-test")
            .with_api_key("sk-test"),
    )
    .unwrap();
    let (driver, result) = weather_round(adapter).await;
    assert_eq!(result.finish_reason, FinishReason::Completed);
    let items = driver.transcript().to_vec();
    validate_transcript(&items).expect("valid transcript");
    assert_eq!(items[4].text_content(), "Bonjour le monde 🌍, ça va ?");
    // The second request carries the encrypted reasoning, the call and its
    // result back as input items.
    let second = server.requests()[1].json();
    let input = second["input"].as_array().unwrap();
    let kinds: Vec<&str> = input.iter().map(|i| i["type"].as_str().unwrap()).collect();
    assert_eq!(
        kinds,
        [
            "message",
            "message",
            "reasoning",
            "function_call",
            "function_call_output"
        ]
    );
    assert_eq!(input[2]["id"], "rs_1");
    assert_eq!(input[2]["encrypted_content"], "gAAAAABenc-RYPTED==");
    assert_eq!(
        input[4],
        json!({"type": "function_call_output", "call_id": "call_abc", "output": "18°C in Genève"})
    );
    server
        .finish(&["sk-test"])
        .expect("the requests match the recording");
}

/// Interrupts the turn as soon as the first text arrives.
struct InterruptOnFirstDelta(agentkit_core::CancellationController);

impl agentkit_loop::LoopObserver for InterruptOnFirstDelta {
    fn handle_event(&self, event: agentkit_loop::AgentEvent) {
        if let agentkit_loop::AgentEvent::ContentDelta { .. } = event {
            self.0.interrupt();
        }
    }
}

#[tokio::test]
async fn interrupting_the_driver_mid_stream_cancels_the_turn_cleanly() {
    use agentkit_http::testing::Ending;
    let server =
        TestServer::start([ScriptedResponse::sse(fixture("cut.sse")).ending(Ending::Stall)])
            .await
            .unwrap();
    let adapter = OpenAiAdapter::new(OpenAiConfig::compatible(
        format!("{}/v1", server.url()),
        "gpt-test",
    ))
    .unwrap();
    let controller = agentkit_core::CancellationController::new();
    let agent = Agent::builder()
        .model(adapter)
        .cancellation(controller.handle())
        .observer(InterruptOnFirstDelta(controller.clone()))
        .input(vec![Item::user("Tell me a long story.")])
        .build()
        .unwrap();
    let run = async {
        let mut driver = agent.start(SessionConfig::new("cancel")).await.unwrap();
        let step = driver.next().await.unwrap();
        (driver, step)
    };
    let (driver, step) = tokio::time::timeout(Duration::from_secs(20), run)
        .await
        .expect("the stalled stream is dropped at once");
    let LoopStep::Finished(result) = step else {
        panic!("expected the turn to finish as cancelled, got {step:?}");
    };
    assert_eq!(result.finish_reason, FinishReason::Cancelled);
    validate_transcript(&driver.transcript().to_vec()).expect("valid transcript");
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
