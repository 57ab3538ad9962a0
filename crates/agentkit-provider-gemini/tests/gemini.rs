//! The Gemini adapter against a real HTTP server on 127.0.0.1 speaking
//! `streamGenerateContent?alt=sse`: a two-turn tool round (thought
//! signatures back on their parts, function responses named after their
//! calls), cached-token usage, safety blocks, and typed failures.

use agentkit_core::{
    DeltaFolder, FinishReason, Item, ItemKind, Part, ToolCallPart, ToolResultPart, TurnId, Usage,
};
use agentkit_http::testing::{Ending, ScriptedResponse, TestServer};
use agentkit_http::{HttpConfig, RetryPolicy};
use agentkit_loop::{
    ModelAdapter, ModelError, ModelErrorKind, ModelSession, ModelTurn, ModelTurnEvent,
    ModelTurnResult, SessionConfig, TranscriptView, TurnRequest,
};
use agentkit_provider_gemini::{GeminiAdapter, GeminiConfig};
use agentkit_testkit::WeatherTool;
use serde_json::{Value, json};
use std::sync::Arc;
use std::time::Duration;

fn sse(chunks: &[Value]) -> ScriptedResponse {
    let body: String = chunks
        .iter()
        .map(|c| format!("data: {c}\r\n\r\n"))
        .collect();
    ScriptedResponse::sse(body)
}

fn adapter(server: &TestServer) -> GeminiAdapter {
    let config = GeminiConfig::new("AIza-test", "gemini-2.5-flash")
        .with_base_url(format!("{}/v1beta", server.url()))
        .with_http(
            HttpConfig::default()
                .with_idle_timeout(Duration::from_secs(5))
                .with_retry(RetryPolicy::default().with_max_attempts(1)),
        );
    GeminiAdapter::new(config).unwrap()
}

fn request(items: Vec<Item>) -> TurnRequest {
    let mut request = TurnRequest::new("s", TurnId::new("t"), TranscriptView::from_items(items));
    request.available_tools = vec![Arc::new(WeatherTool::spec())].into();
    request
}

struct Outcome {
    parts: Vec<Part>,
    calls: Vec<ToolCallPart>,
    usage: Option<Usage>,
    finished: Option<ModelTurnResult>,
}

async fn run(adapter: &GeminiAdapter, request: TurnRequest) -> Result<Outcome, ModelError> {
    let mut session = adapter.start_session(SessionConfig::new("s")).await?;
    let mut turn = session.begin_turn(request).await?;
    let mut outcome = Outcome {
        parts: Vec::new(),
        calls: Vec::new(),
        usage: None,
        finished: None,
    };
    let mut folder = DeltaFolder::new();
    while let Some(event) = turn.next_event().await? {
        match event {
            ModelTurnEvent::Delta(delta) => folder.apply(&delta).unwrap(),
            ModelTurnEvent::ToolCall(call) => outcome.calls.push(call),
            ModelTurnEvent::Usage(usage) => outcome.usage = Some(usage),
            ModelTurnEvent::Finished(result) => outcome.finished = Some(result),
            _ => {}
        }
    }
    outcome.parts = folder.finish().unwrap();
    Ok(outcome)
}

#[tokio::test]
async fn a_tool_round_sends_signatures_back_on_their_parts() {
    let usage = json!({"promptTokenCount": 1200, "cachedContentTokenCount": 1024,
        "candidatesTokenCount": 20, "thoughtsTokenCount": 30, "totalTokenCount": 1250});
    let server = TestServer::start([
        sse(&[
            json!({"candidates": [{"content": {"role": "model", "parts": [
                {"text": "The user wants two cities.", "thought": true}]}}]}),
            json!({"candidates": [{"content": {"role": "model", "parts": [
                {"functionCall": {"name": "get_weather", "args": {"city": "Paris"}}, "thoughtSignature": "c2lnLTE="},
                {"functionCall": {"name": "get_weather", "args": {"city": "Genève"}}}]},
                "finishReason": "STOP"}], "usageMetadata": usage, "modelVersion": "gemini-2.5-flash-001",
                "responseId": "r-1"}),
        ]),
        sse(&[json!({"candidates": [{"content": {"role": "model", "parts": [{"text": "Sunny in both."}]},
            "finishReason": "STOP"}]})]),
    ])
    .await
    .unwrap();
    let adapter = adapter(&server);
    let mut items = vec![
        Item::system("Be brief."),
        Item::user("Weather in Paris and Genève?"),
    ];
    let first = run(&adapter, request(items.clone())).await.unwrap();
    let finished = first.finished.as_ref().unwrap();
    assert_eq!(finished.finish_reason, FinishReason::ToolCall);
    assert_eq!(finished.metadata["agentkit.response_id"], "r-1");
    let usage = first.usage.unwrap().tokens;
    assert_eq!(
        (
            usage.input_tokens,
            usage.cache_read_tokens,
            usage.output_tokens,
            usage.reasoning_tokens
        ),
        (1200, 1024, 50, 30)
    );
    assert_eq!(first.calls.len(), 2);
    assert_ne!(
        first.calls[0].id, first.calls[1].id,
        "each call has its own id"
    );
    let [Part::Reasoning(reasoning)] = &first.parts[..] else {
        panic!("{:?}", first.parts);
    };
    assert_eq!(
        reasoning.summary.as_deref(),
        Some("The user wants two cities.")
    );

    let mut answer = first.parts.clone();
    answer.extend(first.calls.iter().cloned().map(Part::ToolCall));
    items.push(Item::new(ItemKind::Assistant, answer));
    for (call, text) in first.calls.iter().zip(["18°C", "12°C"]) {
        items.push(Item::tool_result(ToolResultPart::success(
            call.id.clone(),
            text,
        )));
    }
    let second = run(&adapter, request(items)).await.unwrap();
    assert_eq!(second.parts, vec![Part::text("Sunny in both.")]);
    assert_eq!(
        second.finished.unwrap().finish_reason,
        FinishReason::Completed
    );

    let sent = server.requests();
    assert_eq!(
        sent[0].path,
        "/v1beta/models/gemini-2.5-flash:streamGenerateContent?alt=sse"
    );
    assert_eq!(sent[0].header("x-goog-api-key"), Some("AIza-test"));
    let body = sent[1].json();
    assert_eq!(
        body["systemInstruction"],
        json!({"parts": [{"text": "Be brief."}]})
    );
    assert_eq!(
        body["tools"][0]["functionDeclarations"][0]["name"],
        "get_weather"
    );
    let contents = body["contents"].as_array().unwrap();
    assert_eq!(contents.len(), 3, "{contents:#?}");
    // The thought summary is not sent; the signature rides on its call.
    assert_eq!(
        contents[1],
        json!({"role": "model", "parts": [
            {"functionCall": {"name": "get_weather", "args": {"city": "Paris"}}, "thoughtSignature": "c2lnLTE="},
            {"functionCall": {"name": "get_weather", "args": {"city": "Genève"}}}]})
    );
    // Both answers in one user turn, each named after its call.
    assert_eq!(
        contents[2],
        json!({"role": "user", "parts": [
            {"functionResponse": {"name": "get_weather", "response": {"output": "18°C"}}},
            {"functionResponse": {"name": "get_weather", "response": {"output": "12°C"}}}]})
    );
}

#[tokio::test]
async fn safety_and_length_finish_reasons_are_typed() {
    for (wire, expected) in [
        ("SAFETY", FinishReason::Blocked),
        ("RECITATION", FinishReason::Blocked),
        ("MAX_TOKENS", FinishReason::MaxTokens),
        (
            "MALFORMED_FUNCTION_CALL",
            FinishReason::Other("malformed_function_call".into()),
        ),
    ] {
        let server = TestServer::start([sse(&[json!({"candidates": [{
            "content": {"role": "model", "parts": [{"text": "Partial"}]}, "finishReason": wire,
            "safetyRatings": [{"category": "HARM_CATEGORY_DANGEROUS_CONTENT", "probability": "HIGH"}]}]})])])
        .await
        .unwrap();
        let outcome = run(&adapter(&server), request(vec![Item::user("hi")]))
            .await
            .unwrap();
        let finished = outcome.finished.unwrap();
        assert_eq!(finished.finish_reason, expected, "{wire}");
        assert_eq!(finished.metadata["gemini.finish_reason"], wire);
        // What came before the stop is kept.
        assert_eq!(outcome.parts, vec![Part::text("Partial")], "{wire}");
    }
}

#[tokio::test]
async fn failures_are_typed_and_quota_or_keys_are_not_retried() {
    let cases = [
        (
            ScriptedResponse::json(
                400,
                r#"{"error":{"code":400,"message":"API key not valid. Please pass a valid API key.","status":"INVALID_ARGUMENT","details":[{"@type":"type.googleapis.com/google.rpc.ErrorInfo","reason":"API_KEY_INVALID"}]}}"#,
            ),
            ModelErrorKind::Authentication,
        ),
        (
            ScriptedResponse::json(
                429,
                r#"{"error":{"code":429,"message":"Resource has been exhausted (e.g. check quota).","status":"RESOURCE_EXHAUSTED"}}"#,
            ),
            ModelErrorKind::RateLimited,
        ),
        (
            ScriptedResponse::json(
                503,
                r#"{"error":{"code":503,"message":"The model is overloaded. Please try again later.","status":"UNAVAILABLE"}}"#,
            ),
            ModelErrorKind::Overloaded,
        ),
        // Cut before any finish reason.
        (
            sse(&[
                json!({"candidates": [{"content": {"role": "model", "parts": [{"text": "Hal"}]}}]}),
            ]),
            ModelErrorKind::Protocol,
        ),
        (
            sse(&[
                json!({"candidates": [{"content": {"role": "model", "parts": [{"text": "Hal"}]}}]}),
            ])
            .ending(Ending::Abort),
            ModelErrorKind::Transport,
        ),
        // An error object mid-stream.
        (
            sse(&[
                json!({"error": {"code": 500, "message": "An internal error has occurred.", "status": "INTERNAL"}}),
            ]),
            ModelErrorKind::Server,
        ),
    ];
    for (response, kind) in cases {
        let server = TestServer::start([response]).await.unwrap();
        let error = run(&adapter(&server), request(vec![Item::user("hi")]))
            .await
            .err()
            .expect("fails");
        assert_eq!(error.kind, kind, "{error:?}");
    }
}

/// Cancelling is dropping the turn: the connection closes with it.
#[tokio::test]
async fn dropping_a_turn_mid_stream_closes_the_connection() {
    let chunk = json!({"candidates": [{"content": {"role": "model", "parts": [{"text": "Bon"}]}}]});
    agentkit_testkit::assert_dropping_a_turn_closes_the_connection(sse(&[chunk]), |url| {
        let config = GeminiConfig::new("AIza-test", "gemini-2.5-flash");
        GeminiAdapter::new(config.with_base_url(format!("{url}/v1beta"))).unwrap()
    })
    .await;
}
