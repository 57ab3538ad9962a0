//! The Chat Completions adapter against llama.cpp's OpenAI-compatible
//! server (`llama-cpp-python[server]`, SmolLM2-135M,
//! `--chat_format chatml-function-calling`), as a user would run it: a
//! plain answer, a two-round tool turn, and a cancellation.
//!
//! These run from cassettes recorded from the real server
//! (`tests/cassettes/llama_cpp_*.json`). `cargo xtask llama` installs and
//! starts the server and re-records them (`AGENTKIT_RECORD=<server root>`).

use agentkit_core::{DeltaFolder, FinishReason, Item, ItemKind, Part, ToolResultPart, TurnId};
use agentkit_loop::{
    ModelAdapter, ModelSession, ModelTurn, ModelTurnEvent, SessionConfig, TranscriptView,
    TurnRequest,
};
use agentkit_provider_openai::{OpenAiAdapter, OpenAiConfig, ToolChoice};
use agentkit_testkit::WeatherTool;
use agentkit_testkit::adapter::{Outcome, run_turn_within};
use agentkit_testkit::cassette::CassetteSession;
use serde_json::json;
use std::sync::Arc;
use std::time::Duration;

async fn cassette(name: &str) -> CassetteSession {
    let path = format!(
        "{}/tests/cassettes/llama_cpp_{name}.json",
        env!("CARGO_MANIFEST_DIR")
    );
    let upstream = std::env::var("AGENTKIT_RECORD").ok();
    CassetteSession::open(&path, upstream.as_deref())
        .await
        .unwrap_or_else(|e| panic!("{e}"))
}

/// Replays take milliseconds; a real server on a busy 2-core machine
/// generates a few tokens a second.
fn limit(session: &CassetteSession) -> Duration {
    if session.is_recording() {
        Duration::from_secs(600)
    } else {
        Duration::from_secs(20)
    }
}

fn config(session: &CassetteSession) -> OpenAiConfig {
    OpenAiConfig::compatible(format!("{}/v1", session.url()), "smollm2").with_max_tokens(48)
}

fn request(items: Vec<Item>, tools: bool) -> TurnRequest {
    let mut request = TurnRequest::new(
        "llama",
        TurnId::new("turn-1"),
        TranscriptView::from_items(items),
    );
    if tools {
        request.available_tools = vec![Arc::new(WeatherTool::spec())].into();
    }
    request
}

fn text(outcome: &Outcome) -> String {
    outcome
        .parts()
        .iter()
        .filter_map(Part::as_text)
        .collect::<String>()
}

#[tokio::test]
async fn a_plain_answer_streams_and_its_usage_is_unknown() {
    let session = cassette("plain").await;
    let request = request(vec![Item::user("Say hello in one short sentence.")], false);
    let outcome = run_turn_within(
        limit(&session),
        OpenAiAdapter::new(config(&session)).unwrap(),
        request,
    )
    .await
    .unwrap();
    assert!(outcome.error.is_none(), "{:?}", outcome.error);
    assert!(!text(&outcome).trim().is_empty());
    assert!(matches!(
        outcome.finish_reason(),
        Some(FinishReason::Completed | FinishReason::MaxTokens)
    ));
    // llama.cpp sends no usage when streaming: unknown, not zero.
    let usage = outcome.last_usage().expect("usage reported");
    assert_eq!(usage.unreported_calls, 1);
    assert!(!usage.is_complete());
    session.finish(&[]).unwrap();
}

#[tokio::test]
async fn a_two_round_tool_turn_is_accepted_by_the_server() {
    let session = cassette("tool_round").await;
    // Round 1: the call, forced (automatic choice is unreliable on a model
    // this small). The server repeats the id and name in every fragment.
    let forced = config(&session).with_tool_choice(ToolChoice::Tool("get_weather".into()));
    let question = Item::user("What is the weather in Paris?");
    let first = run_turn_within(
        limit(&session),
        OpenAiAdapter::new(forced).unwrap(),
        request(vec![question.clone()], true),
    )
    .await
    .unwrap();
    assert!(first.error.is_none(), "{:?}", first.error);
    let calls = first.tool_calls();
    assert_eq!(calls.len(), 1, "{:?}", first.events);
    assert_eq!(&*calls[0].name, "get_weather");
    assert!(calls[0].input.to_value().is_object());

    // Round 2 carries the call and its result: the request llama.cpp's chat
    // template used to reject (no `content` on the assistant message).
    let mut folder = DeltaFolder::new();
    for event in &first.events {
        if let ModelTurnEvent::Delta(delta) = event {
            folder.apply(delta).unwrap();
        }
    }
    let mut parts = folder.finish().unwrap();
    parts.extend(calls.iter().cloned().map(Part::ToolCall));
    let transcript = vec![
        question,
        Item::new(ItemKind::Assistant, parts),
        Item::new(
            ItemKind::Tool,
            vec![Part::ToolResult(ToolResultPart::success(
                calls[0].id.clone(),
                "18°C and sunny",
            ))],
        ),
    ];
    let second = run_turn_within(
        limit(&session),
        OpenAiAdapter::new(config(&session)).unwrap(),
        request(transcript, true),
    )
    .await
    .expect("the server accepts the second request");
    assert!(second.error.is_none(), "{:?}", second.error);
    assert!(second.finish_reason().is_some());
    let sent = session.requests()[1].json();
    assert_eq!(sent["messages"][1]["content"], json!(""));
    assert_eq!(
        sent["messages"][1]["tool_calls"][0]["id"],
        json!(calls[0].id.as_str())
    );
    session.finish(&[]).unwrap();
}

#[tokio::test]
async fn cancelling_mid_answer_ends_the_turn() {
    let session = cassette("cancel").await;
    let adapter = OpenAiAdapter::new(config(&session).with_max_tokens(64)).unwrap();
    let mut model_session = adapter
        .start_session(SessionConfig::new("llama"))
        .await
        .unwrap();
    let request = request(vec![Item::user("Tell me a long story about a cat.")], false);
    let deltas = tokio::time::timeout(limit(&session), async {
        let mut turn = model_session.begin_turn(request).await.unwrap();
        let mut deltas = 0;
        // Cancelling is dropping the turn: stop at the first delta.
        while deltas == 0 {
            match turn.next_event().await {
                Ok(Some(ModelTurnEvent::Delta(_))) => deltas += 1,
                Ok(Some(ModelTurnEvent::Finished(_)) | None) => break,
                Ok(Some(_)) => {}
                Err(error) => panic!("{error}"),
            }
        }
        deltas
    })
    .await
    .expect("the first delta is prompt");
    assert!(deltas >= 1, "the turn was dropped mid-answer");
    session.finish(&[]).unwrap();
}
