//! The adapter against a real HTTP server on 127.0.0.1 replaying
//! Chat Completions streams (tests/fixtures/*.sse, written in the documented
//! wire format), cut at awkward byte offsets.

use agentkit_core::{
    FinishReason, Item, ItemKind, MediaPart, Part, ReasoningPart, ToolCallPart, ToolResultPart,
    TurnId,
};
use agentkit_http::testing::{Ending, ScriptedResponse, TestServer};
use agentkit_http::{HttpConfig, RetryPolicy};
use agentkit_loop::{
    ModelAdapter, ModelError, ModelErrorKind, ModelSession, ModelTurn, ModelTurnEvent,
    PromptCacheRequest, PromptCacheRetention, SessionConfig, TranscriptView, TurnRequest,
};
use agentkit_provider_openai::{OpenAiAdapter, OpenAiConfig, ToolChoice};
use agentkit_testkit::WeatherTool;
use serde_json::json;
use std::sync::Arc;
use std::time::Duration;

mod common;
use agentkit_testkit::adapter::{Outcome, run_turn};
use common::fixture;

fn config(server: &TestServer) -> OpenAiConfig {
    OpenAiConfig::compatible(format!("{}/v1", server.url()), "gpt-test")
        .with_api_key("sk-test")
        .with_http(
            HttpConfig::default()
                .with_idle_timeout(Duration::from_secs(5))
                .with_retry(
                    RetryPolicy::default()
                        .with_max_attempts(3)
                        .with_backoff(Duration::from_millis(10), Duration::from_millis(50)),
                ),
        )
}

fn request(items: Vec<Item>) -> TurnRequest {
    TurnRequest {
        session_id: "s-1".into(),
        turn_id: TurnId::new("turn-1"),
        transcript: TranscriptView::from_items(items),
        available_tools: vec![Arc::new(WeatherTool::spec())].into(),
        metadata: Default::default(),
        cache: None,
        output_schema: None,
    }
}

async fn run_with(config: OpenAiConfig, request: TurnRequest) -> Result<Outcome, ModelError> {
    run_turn(OpenAiAdapter::new(config)?, request).await
}

async fn serve(script: Vec<ScriptedResponse>) -> TestServer {
    TestServer::start(script).await.expect("server starts")
}

async fn run_fixture(response: ScriptedResponse) -> (Outcome, TestServer) {
    let server = serve(vec![response]).await;
    let outcome = run_with(config(&server), request(vec![Item::user("Hi")]))
        .await
        .expect("the turn starts");
    (outcome, server)
}

#[tokio::test]
async fn text_streams_as_one_part_with_usage_and_metadata() {
    let (outcome, server) =
        run_fixture(ScriptedResponse::sse(fixture("text.sse")).split_every(13)).await;
    assert!(outcome.error.is_none(), "{:?}", outcome.error);
    assert_eq!(
        outcome.parts(),
        vec![Part::text("Bonjour le monde 🌍, ça va ?")]
    );
    let usage = outcome.usage().expect("usage reported");
    assert_eq!(
        (
            usage.input_tokens,
            usage.output_tokens,
            usage.cache_read_tokens
        ),
        (1200, 9, 1024)
    );
    let Some(ModelTurnEvent::Finished(result)) = outcome.events.last() else {
        panic!("the last event is Finished: {:?}", outcome.events.last());
    };
    assert_eq!(result.finish_reason, FinishReason::Completed);
    assert_eq!(result.metadata["agentkit.response_id"], "chatcmpl-1");
    assert_eq!(result.metadata["agentkit.model"], "gpt-test");
    let sent = &server.requests()[0];
    assert_eq!(sent.path, "/v1/chat/completions");
    assert_eq!(sent.header("authorization"), Some("Bearer sk-test"));
    assert_eq!(
        sent.json()["stream_options"],
        json!({"include_usage": true})
    );
}

#[tokio::test]
async fn crlf_lines_and_split_utf8_characters_decode() {
    let body = fixture("text.sse").replace('\n', "\r\n");
    let globe = body.find('🌍').unwrap();
    let cedilla = body.find('ç').unwrap();
    let crlf = body.find("\r\n").unwrap();
    let cuts = [crlf + 1, globe + 1, globe + 2, globe + 3, cedilla + 1];
    let (outcome, _server) = run_fixture(ScriptedResponse::sse(body).split_at(&cuts)).await;
    assert!(outcome.error.is_none(), "{:?}", outcome.error);
    assert_eq!(
        outcome.parts(),
        vec![Part::text("Bonjour le monde 🌍, ça va ?")]
    );
}

#[tokio::test]
async fn reasoning_content_becomes_a_reasoning_part_before_the_text() {
    let (outcome, _server) =
        run_fixture(ScriptedResponse::sse(fixture("reasoning.sse")).split_every(64)).await;
    let parts = outcome.parts();
    let Part::Reasoning(reasoning) = &parts[0] else {
        panic!("reasoning first: {parts:?}");
    };
    assert_eq!(
        reasoning.summary.as_deref(),
        Some("The user wants a number.")
    );
    assert_eq!(reasoning.metadata["agentkit.provider"], "openai");
    assert_eq!(parts[1], Part::text("42"));
    assert_eq!(outcome.usage().unwrap().reasoning_tokens, 28);
    assert_eq!(outcome.finish_reason(), Some(FinishReason::Completed));
}

#[tokio::test]
async fn the_reasoning_field_of_other_servers_is_read_too() {
    let (outcome, _server) =
        run_fixture(ScriptedResponse::sse(fixture("reasoning_field.sse"))).await;
    let parts = outcome.parts();
    assert!(
        matches!(&parts[0], Part::Reasoning(r) if r.summary.as_deref() == Some("Thinking briefly."))
    );
    assert_eq!(parts[1], Part::text("Done."));
}

#[tokio::test]
async fn one_tool_call_is_assembled_from_fragments() {
    let (outcome, _server) =
        run_fixture(ScriptedResponse::sse(fixture("tool_call.sse")).split_every(31)).await;
    assert!(outcome.error.is_none(), "{:?}", outcome.error);
    assert_eq!(
        outcome.tool_calls(),
        vec![ToolCallPart::new(
            "call_abc",
            "get_weather",
            json!({"city": "Genève"})
        )]
    );
    assert!(outcome.parts().is_empty());
    assert_eq!(outcome.finish_reason(), Some(FinishReason::ToolCall));
    assert_eq!(outcome.usage().unwrap().input_tokens, 80);
}

#[tokio::test]
async fn parallel_tool_calls_keep_their_order_and_the_text() {
    let (outcome, _server) =
        run_fixture(ScriptedResponse::sse(fixture("parallel_tool_calls.sse"))).await;
    assert_eq!(outcome.parts(), vec![Part::text("Checking both.")]);
    assert_eq!(
        outcome.tool_calls(),
        vec![
            ToolCallPart::new("call_1", "get_weather", json!({"city": "Paris"})),
            ToolCallPart::new("call_2", "get_time", json!({"zone": "CET"})),
        ]
    );
    assert_eq!(outcome.finish_reason(), Some(FinishReason::ToolCall));
}

#[tokio::test]
async fn repeated_ids_and_names_are_not_concatenated() {
    let (outcome, _server) =
        run_fixture(ScriptedResponse::sse(fixture("repeated_id_and_name.sse"))).await;
    assert_eq!(
        outcome.tool_calls(),
        vec![
            ToolCallPart::new("call_x", "get_weather", json!({"city": "Oslo"})),
            ToolCallPart::new("call_y", "get_time", json!({})),
        ]
    );
    assert_eq!(
        outcome.finish_reason(),
        Some(FinishReason::ToolCall),
        "`stop` with tool calls still means: call the tools"
    );
}

#[tokio::test]
async fn a_stream_ending_after_its_finish_reason_without_done_completes() {
    let (outcome, _server) = run_fixture(ScriptedResponse::sse(fixture("no_done.sse"))).await;
    assert!(outcome.error.is_none(), "{:?}", outcome.error);
    assert_eq!(outcome.parts(), vec![Part::text("Short answer.")]);
    assert_eq!(outcome.finish_reason(), Some(FinishReason::MaxTokens));
}

#[tokio::test]
async fn a_stream_cut_before_the_finish_reason_is_a_protocol_error() {
    let (outcome, _server) = run_fixture(ScriptedResponse::sse(fixture("cut.sse"))).await;
    let error = outcome.error.as_ref().expect("an error");
    assert_eq!(error.kind, ModelErrorKind::Protocol);
    assert_eq!(outcome.finish_reason(), None);
    assert!(outcome.tool_calls().is_empty());
}

#[tokio::test]
async fn a_connection_dropped_mid_answer_is_a_transport_error() {
    let (outcome, server) =
        run_fixture(ScriptedResponse::sse(fixture("cut.sse")).ending(Ending::Abort)).await;
    let error = outcome.error.as_ref().expect("an error");
    assert_eq!(error.kind, ModelErrorKind::Transport);
    assert_eq!(outcome.finish_reason(), None);
    assert_eq!(
        server.requests().len(),
        1,
        "not retried once content streamed"
    );
}

#[tokio::test]
async fn a_malformed_chunk_is_a_protocol_error() {
    let (outcome, _server) = run_fixture(ScriptedResponse::sse(fixture("malformed.sse"))).await;
    let error = outcome.error.expect("an error");
    assert_eq!(error.kind, ModelErrorKind::Protocol);
    assert!(
        error.message.contains("not valid JSON"),
        "{}",
        error.message
    );
}

#[tokio::test]
async fn tool_arguments_that_are_not_json_are_a_protocol_error() {
    let (outcome, _server) = run_fixture(ScriptedResponse::sse(fixture("bad_arguments.sse"))).await;
    let error = outcome.error.as_ref().expect("an error");
    assert_eq!(error.kind, ModelErrorKind::Protocol);
    assert!(error.message.contains("call_bad"), "{}", error.message);
    assert!(
        outcome.tool_calls().is_empty(),
        "no broken call reaches the loop"
    );
    assert_eq!(outcome.finish_reason(), None);
}

#[tokio::test]
async fn an_error_chunk_mid_stream_is_reported() {
    let (outcome, _server) = run_fixture(ScriptedResponse::sse(fixture("stream_error.sse"))).await;
    let error = outcome.error.expect("an error");
    assert_eq!(error.kind, ModelErrorKind::Server);
    assert!(error.message.contains("server had an error"));
}

#[tokio::test]
async fn http_401_is_an_authentication_error_and_not_retried() {
    let server = serve(vec![ScriptedResponse::json(
        401,
        r#"{"error":{"message":"Incorrect API key provided: sk-test.","type":"invalid_request_error","param":null,"code":"invalid_api_key"}}"#,
    )])
    .await;
    let error = run_with(config(&server), request(vec![Item::user("Hi")]))
        .await
        .expect_err("refused");
    assert_eq!(error.kind, ModelErrorKind::Authentication);
    assert_eq!(error.status, Some(401));
    assert!(error.message.starts_with("Incorrect API key"));
    assert_eq!(server.requests().len(), 1);
}

#[tokio::test]
async fn http_400_context_length_is_recognised() {
    let server = serve(vec![ScriptedResponse::json(
        400,
        r#"{"error":{"message":"This model's maximum context length is 128000 tokens. However, your messages resulted in 130512 tokens.","type":"invalid_request_error","param":"messages","code":"context_length_exceeded"}}"#,
    )])
    .await;
    let error = run_with(config(&server), request(vec![Item::user("Hi")]))
        .await
        .expect_err("refused");
    assert_eq!(error.kind, ModelErrorKind::ContextLengthExceeded);
    assert!(!error.is_retryable());
}

#[tokio::test]
async fn http_429_with_retry_after_then_success_warns_and_streams() {
    let server = serve(vec![
        ScriptedResponse::json(429, r#"{"error":{"message":"Rate limit reached","type":"requests","code":"rate_limit_exceeded"}}"#)
            .with_header("retry-after", "1"),
        ScriptedResponse::sse(fixture("text.sse")),
    ])
    .await;
    let started = std::time::Instant::now();
    let outcome = run_with(config(&server), request(vec![Item::user("Hi")]))
        .await
        .unwrap();
    assert!(started.elapsed() >= Duration::from_secs(1));
    let warnings = outcome.warnings();
    assert_eq!(warnings.len(), 1);
    assert!(warnings[0].contains("rate limited"), "{}", warnings[0]);
    assert!(
        matches!(outcome.events[0], ModelTurnEvent::Warning(_)),
        "the warning opens the turn"
    );
    assert_eq!(
        outcome.parts(),
        vec![Part::text("Bonjour le monde 🌍, ça va ?")]
    );
    assert_eq!(server.requests().len(), 2);
}

#[tokio::test]
async fn http_500_then_success_is_retried() {
    let server = serve(vec![
        ScriptedResponse::json(
            500,
            r#"{"error":{"message":"internal","type":"server_error"}}"#,
        ),
        ScriptedResponse::sse(fixture("text.sse")),
    ])
    .await;
    let outcome = run_with(config(&server), request(vec![Item::user("Hi")]))
        .await
        .unwrap();
    assert_eq!(outcome.warnings().len(), 1);
    assert_eq!(outcome.finish_reason(), Some(FinishReason::Completed));
}

#[tokio::test]
async fn http_529_or_503_until_attempts_run_out_is_overloaded() {
    for (status, body) in [
        (529, r#"{"error":{"message":"overloaded"}}"#),
        // OpenAI's own overload: 503 with a plain `server_error`.
        (
            503,
            r#"{"error":{"message":"The engine is currently overloaded, please try again later","type":"server_error","param":null,"code":null}}"#,
        ),
    ] {
        let overloaded = || ScriptedResponse::json(status, body);
        let server = serve(vec![overloaded(), overloaded(), overloaded()]).await;
        let error = run_with(config(&server), request(vec![Item::user("Hi")]))
            .await
            .expect_err("gave up");
        assert_eq!(error.kind, ModelErrorKind::Overloaded, "{status}");
        assert_eq!(error.status, Some(status));
        assert!(error.is_retryable());
        assert_eq!(server.requests().len(), 3);
    }
}

#[tokio::test]
async fn dropping_a_turn_mid_stream_closes_the_connection() {
    agentkit_testkit::assert_dropping_a_turn_closes_the_connection(
        ScriptedResponse::sse(fixture("cut.sse")),
        |url| {
            OpenAiAdapter::new(OpenAiConfig::compatible(format!("{url}/v1"), "gpt-test")).unwrap()
        },
    )
    .await;
}

#[tokio::test]
async fn the_request_body_maps_every_item_kind() {
    let server = serve(vec![ScriptedResponse::sse(fixture("text.sse"))]).await;
    let transcript = vec![
        Item::system("You are terse."),
        Item::text(ItemKind::Developer, "Answer in French."),
        Item::new(
            ItemKind::User,
            vec![
                Part::text("What is in this picture?"),
                Part::Media(MediaPart::image("image/png", vec![0x89, b'P', b'N', b'G'])),
            ],
        ),
        Item::new(
            ItemKind::Assistant,
            vec![
                Part::Reasoning(ReasoningPart {
                    summary: Some("private thoughts".into()),
                    ..Default::default()
                }),
                Part::text("Un logo. Je vérifie la météo."),
                Part::ToolCall(ToolCallPart::new(
                    "call_1",
                    "get_weather",
                    json!({"city": "Paris"}),
                )),
                Part::ToolCall(ToolCallPart::new(
                    "call_2",
                    "get_weather",
                    json!({"city": "Lyon"}),
                )),
            ],
        ),
        Item::new(
            ItemKind::Tool,
            vec![
                Part::ToolResult(ToolResultPart::success("call_1", "18°C")),
                Part::ToolResult(ToolResultPart::error("call_2", "service unavailable")),
            ],
        ),
        // Reasoning only: nothing the API accepts, so no message at all.
        Item::new(
            ItemKind::Assistant,
            vec![Part::Reasoning(ReasoningPart {
                summary: Some("more thoughts".into()),
                ..Default::default()
            })],
        ),
        Item::text(ItemKind::Context, "Today is Sunday."),
        Item::user("Merci !"),
    ];
    let mut turn = request(transcript);
    turn.cache = Some(
        PromptCacheRequest::automatic()
            .with_key("session-s-1")
            .with_retention(PromptCacheRetention::Long),
    );
    let mut config = config(&server);
    config.developer_role = true;
    let config = config
        .with_max_tokens(256)
        .with_tool_choice(ToolChoice::Auto)
        .with_body_field("temperature", 0.2);
    let outcome = run_with(config, turn).await.unwrap();
    assert!(outcome.error.is_none());
    let body = server.requests()[0].json();
    // Sorted maps: the same snapshot whether or not serde_json's
    // `preserve_order` is on in the build (the ACP SDK turns it on).
    insta::with_settings!({ sort_maps => true }, {
        insta::assert_json_snapshot!("request_body", body);
    });
    let messages = body["messages"].as_array().unwrap();
    assert!(
        messages.iter().all(|m| m["role"] != "assistant"
            || m.get("content").is_some()
            || m.get("tool_calls").is_some()),
        "no empty assistant message"
    );
    assert!(
        !body.to_string().contains("thoughts"),
        "reasoning never sent as text"
    );
}

/// A llama.cpp-style stream: a tool call without an id, and no usage.
const NO_ID_NO_USAGE: &str = "data: {\"choices\":[{\"index\":0,\"delta\":{\"tool_calls\":[{\"index\":0,\"function\":{\"name\":\"get_weather\",\"arguments\":\"{\\\"city\\\":\\\"Oslo\\\"}\"}}]}}]}\n\ndata: {\"choices\":[{\"index\":0,\"delta\":{},\"finish_reason\":\"tool_calls\"}]}\n\ndata: [DONE]\n\n";

#[tokio::test]
async fn fallback_ids_are_unique_across_the_session_and_missing_usage_is_unknown() {
    let server = serve(vec![
        ScriptedResponse::sse(NO_ID_NO_USAGE),
        ScriptedResponse::sse(NO_ID_NO_USAGE),
    ])
    .await;
    let adapter = OpenAiAdapter::new(config(&server)).unwrap();
    let mut session = adapter
        .start_session(SessionConfig::new("s-1"))
        .await
        .unwrap();
    let mut ids = Vec::new();
    for _ in 0..2 {
        let mut turn = session
            .begin_turn(request(vec![Item::user("Hi")]))
            .await
            .unwrap();
        let mut usage = None;
        while let Some(event) = turn.next_event().await.unwrap() {
            match event {
                ModelTurnEvent::ToolCall(call) => ids.push(call.id.to_string()),
                ModelTurnEvent::Usage(reported) => usage = Some(reported),
                _ => {}
            }
        }
        let usage = usage.expect("usage is reported, as unknown");
        assert!(!usage.is_complete());
        assert_eq!(usage.unreported_calls, 1);
        assert_eq!(usage.tokens.total(), 0);
    }
    assert_eq!(ids.len(), 2);
    assert_ne!(ids[0], ids[1], "two turns, two ids");
    assert!(ids.iter().all(|id| id.starts_with("call_")), "{ids:?}");
}

#[tokio::test]
async fn an_assistant_message_with_only_tool_calls_has_empty_string_content() {
    let server = serve(vec![ScriptedResponse::sse(fixture("text.sse"))]).await;
    let transcript = vec![
        Item::user("Weather?"),
        Item::new(
            ItemKind::Assistant,
            vec![Part::ToolCall(ToolCallPart::new(
                "call_1",
                "get_weather",
                json!({"city": "Paris"}),
            ))],
        ),
        Item::new(
            ItemKind::Tool,
            vec![Part::ToolResult(ToolResultPart::success("call_1", "18°C"))],
        ),
    ];
    run_with(config(&server), request(transcript))
        .await
        .unwrap();
    let body = server.requests()[0].json();
    let assistant = &body["messages"][1];
    assert_eq!(assistant["role"], "assistant");
    assert_eq!(
        assistant["content"],
        json!(""),
        "llama.cpp's templates need the key, and reject null"
    );
    assert_eq!(assistant["tool_calls"][0]["id"], "call_1");
}

#[tokio::test]
async fn openrouter_cost_is_copied_and_structured_output_is_response_format() {
    let body = "data: {\"id\":\"gen-1\",\"model\":\"m\",\"choices\":[{\"index\":0,\"delta\":{\"content\":\"{\\\"ok\\\":true}\"}}]}\n\ndata: {\"id\":\"gen-1\",\"choices\":[{\"index\":0,\"delta\":{},\"finish_reason\":\"stop\"}]}\n\ndata: {\"id\":\"gen-1\",\"choices\":[],\"usage\":{\"prompt_tokens\":10,\"completion_tokens\":4,\"total_tokens\":14,\"cost\":0.00021}}\n\ndata: [DONE]\n\n";
    let server = serve(vec![ScriptedResponse::sse(body)]).await;
    let schema = json!({"type": "object", "properties": {"ok": {"type": "boolean"}}, "required": ["ok"], "additionalProperties": false});
    let request = request(vec![Item::user("ok?")])
        .with_output_schema(agentkit_loop::OutputSchema::new("verdict", schema.clone()));
    let outcome = run_with(config(&server), request).await.unwrap();
    let usage = outcome.last_usage().unwrap();
    assert!(usage.is_complete());
    let cost = usage.cost.expect("the reported cost");
    assert_eq!((cost.amount, cost.currency.as_str()), (0.00021, "USD"));
    assert_eq!(outcome.parts(), vec![Part::text("{\"ok\":true}")]);
    let sent = server.requests()[0].json();
    assert_eq!(
        sent["response_format"],
        json!({"type": "json_schema", "json_schema": {"name": "verdict", "schema": schema, "strict": true}})
    );
}

#[tokio::test]
async fn a_server_keeping_the_connection_open_after_the_end_does_not_hold_the_turn() {
    // A hostile (or merely sloppy) server: the answer ends with `[DONE]`,
    // then the connection stays open and silent. The turn ends at once,
    // not at the idle timeout (5 s here), and the connection is dropped.
    let started = std::time::Instant::now();
    let (outcome, _server) =
        run_fixture(ScriptedResponse::sse(fixture("text.sse")).ending(Ending::Stall)).await;
    assert!(outcome.error.is_none(), "{:?}", outcome.error);
    assert!(
        started.elapsed() < Duration::from_secs(2),
        "{:?}",
        started.elapsed()
    );
}
