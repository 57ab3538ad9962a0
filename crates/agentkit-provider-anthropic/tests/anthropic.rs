//! The adapter against a real HTTP server on 127.0.0.1 replaying
//! Messages API streams (tests/fixtures/*.sse, written in the documented
//! wire format), cut at awkward byte offsets.

use agentkit_core::{
    FinishReason, Item, ItemKind, MediaPart, Part, ReasoningPart, ToolCallPart, ToolResultPart,
    TurnId,
};
use agentkit_http::testing::{Ending, ScriptedResponse, TestServer};
use agentkit_http::{HttpConfig, RetryPolicy};
use agentkit_loop::{
    CacheBreakpoint, ModelError, ModelErrorKind, ModelTurnEvent, PromptCacheRequest,
    PromptCacheRetention, TranscriptView, TurnRequest,
};
use agentkit_provider_anthropic::{AnthropicAdapter, AnthropicConfig, ToolChoice};
use agentkit_testkit::WeatherTool;
use agentkit_testkit::adapter::{Outcome, run_turn};
use serde_json::json;
use std::sync::Arc;
use std::time::Duration;

fn fixture(name: &str) -> String {
    let path = format!("{}/tests/fixtures/{name}", env!("CARGO_MANIFEST_DIR"));
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{path}: {e}"))
}

fn config(server: &TestServer) -> AnthropicConfig {
    AnthropicConfig::new("sk-ant-test", "claude-test")
        .with_base_url(format!("{}/v1", server.url()))
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

async fn run_with(config: AnthropicConfig, request: TurnRequest) -> Result<Outcome, ModelError> {
    run_turn(AnthropicAdapter::new(config)?, request).await
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

fn reasoning_parts(parts: &[Part]) -> Vec<ReasoningPart> {
    parts
        .iter()
        .filter_map(|p| match p {
            Part::Reasoning(r) => Some(r.clone()),
            _ => None,
        })
        .collect()
}

#[tokio::test]
async fn text_streams_with_cache_usage_and_headers() {
    let (outcome, server) =
        run_fixture(ScriptedResponse::sse(fixture("text.sse")).split_every(17)).await;
    assert!(outcome.error.is_none(), "{:?}", outcome.error);
    assert_eq!(
        outcome.parts(),
        vec![Part::text("Bonjour le monde 🌍, ça va ?")]
    );
    let usage = outcome.usage().expect("usage");
    assert_eq!(usage.input_tokens, 25 + 1500 + 3000, "every prompt token");
    assert_eq!(usage.cache_read_tokens, 3000);
    assert_eq!(usage.cache_write_tokens, 1500);
    assert_eq!(usage.output_tokens, 12);
    let Some(ModelTurnEvent::Finished(result)) = outcome.events.last() else {
        panic!("ends with Finished");
    };
    assert_eq!(result.finish_reason, FinishReason::Completed);
    assert_eq!(result.metadata["agentkit.response_id"], "msg_01");
    let sent = &server.requests()[0];
    assert_eq!(sent.path, "/v1/messages");
    assert_eq!(sent.header("x-api-key"), Some("sk-ant-test"));
    assert_eq!(sent.header("anthropic-version"), Some("2023-06-01"));
    assert_eq!(sent.header("authorization"), None);
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
async fn thinking_keeps_its_signature_and_redacted_thinking_its_data() {
    let (outcome, _server) =
        run_fixture(ScriptedResponse::sse(fixture("thinking.sse")).split_every(29)).await;
    assert!(outcome.error.is_none(), "{:?}", outcome.error);
    let parts = outcome.parts();
    assert_eq!(parts.len(), 3);
    let reasoning = reasoning_parts(&parts);
    assert_eq!(
        reasoning[0].summary.as_deref(),
        Some("17 × 23: 17 × 20 = 340, plus 51 is 391.")
    );
    assert_eq!(
        reasoning[0].signature.as_deref(),
        Some("EqQBCgIYAhIM1gbcDa9GJwZA2b3hGgxBdjrkzLoky3dl1pkiMOYds/+Zg==")
    );
    assert_eq!(reasoning[0].metadata["agentkit.provider"], "anthropic");
    assert_eq!(reasoning[1].summary, None);
    assert_eq!(
        reasoning[1].encrypted.as_deref(),
        Some(
            "EmwKAhgBEgy3va3pzix/LafPsn4aDFIT2Xlxh0L5L8rLVyIwxtE3rAFBa8cr3qpPkNRj2YfWXGmKDxH4mPnZ5sQ7vB5URj"
        )
    );
    assert_eq!(parts[2], Part::text("391"));
}

#[tokio::test]
async fn thinking_round_trips_unchanged_into_the_next_request() {
    // First turn: stream thinking; second turn: send it back.
    let server = serve(vec![
        ScriptedResponse::sse(fixture("thinking.sse")),
        ScriptedResponse::sse(fixture("text.sse")),
    ])
    .await;
    let first = run_with(config(&server), request(vec![Item::user("17 × 23?")]))
        .await
        .unwrap();
    let answer = Item::new(ItemKind::Assistant, first.parts());
    let second = run_with(
        config(&server).with_thinking(1024),
        request(vec![Item::user("17 × 23?"), answer, Item::user("Thanks")]),
    )
    .await
    .unwrap();
    assert!(second.error.is_none());
    let body = server.requests()[1].json();
    assert_eq!(
        body["thinking"],
        json!({"type": "enabled", "budget_tokens": 1024})
    );
    assert_eq!(
        body["messages"][1]["content"],
        json!([
            {
                "type": "thinking",
                "thinking": "17 × 23: 17 × 20 = 340, plus 51 is 391.",
                "signature": "EqQBCgIYAhIM1gbcDa9GJwZA2b3hGgxBdjrkzLoky3dl1pkiMOYds/+Zg=="
            },
            {
                "type": "redacted_thinking",
                "data": "EmwKAhgBEgy3va3pzix/LafPsn4aDFIT2Xlxh0L5L8rLVyIwxtE3rAFBa8cr3qpPkNRj2YfWXGmKDxH4mPnZ5sQ7vB5URj"
            },
            { "type": "text", "text": "391" }
        ])
    );
}

#[tokio::test]
async fn one_tool_call_is_assembled_from_input_json_deltas() {
    let (outcome, _server) =
        run_fixture(ScriptedResponse::sse(fixture("tool_use.sse")).split_every(23)).await;
    assert!(outcome.error.is_none(), "{:?}", outcome.error);
    assert_eq!(outcome.parts(), vec![Part::text("Let me check.")]);
    assert_eq!(
        outcome.tool_calls(),
        vec![ToolCallPart::new(
            "toolu_01",
            "get_weather",
            json!({"city": "Genève"})
        )]
    );
    assert_eq!(outcome.finish_reason(), Some(FinishReason::ToolCall));
}

#[tokio::test]
async fn parallel_tool_calls_keep_their_order() {
    let (outcome, _server) =
        run_fixture(ScriptedResponse::sse(fixture("parallel_tool_use.sse"))).await;
    assert_eq!(
        outcome.tool_calls(),
        vec![
            ToolCallPart::new("toolu_a", "get_weather", json!({"city": "Paris"})),
            ToolCallPart::new("toolu_b", "get_time", json!({})),
        ]
    );
    assert_eq!(outcome.finish_reason(), Some(FinishReason::ToolCall));
}

#[tokio::test]
async fn a_stream_ending_after_its_stop_reason_completes() {
    let (outcome, _server) =
        run_fixture(ScriptedResponse::sse(fixture("no_message_stop.sse"))).await;
    assert!(outcome.error.is_none(), "{:?}", outcome.error);
    assert_eq!(outcome.parts(), vec![Part::text("Cut short")]);
    assert_eq!(outcome.finish_reason(), Some(FinishReason::MaxTokens));
}

#[tokio::test]
async fn an_overloaded_error_event_is_overloaded() {
    let (outcome, _server) = run_fixture(ScriptedResponse::sse(fixture("overloaded.sse"))).await;
    let error = outcome.error.expect("an error");
    assert_eq!(error.kind, ModelErrorKind::Overloaded);
    assert_eq!(error.message, "Overloaded");
}

#[tokio::test]
async fn a_stream_cut_mid_message_is_a_protocol_error() {
    let (outcome, _server) = run_fixture(ScriptedResponse::sse(fixture("cut.sse"))).await;
    assert_eq!(
        outcome.error.expect("an error").kind,
        ModelErrorKind::Protocol
    );
}

#[tokio::test]
async fn a_connection_dropped_mid_message_is_a_transport_error() {
    let (outcome, server) =
        run_fixture(ScriptedResponse::sse(fixture("cut.sse")).ending(Ending::Abort)).await;
    assert_eq!(
        outcome.error.expect("an error").kind,
        ModelErrorKind::Transport
    );
    assert_eq!(server.requests().len(), 1);
}

#[tokio::test]
async fn a_malformed_event_is_a_protocol_error() {
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
async fn tool_input_that_is_not_json_is_a_protocol_error() {
    let (outcome, _server) = run_fixture(ScriptedResponse::sse(fixture("bad_input.sse"))).await;
    let error = outcome.error.as_ref().expect("an error");
    assert_eq!(error.kind, ModelErrorKind::Protocol);
    assert!(error.message.contains("toolu_bad"));
    assert!(outcome.tool_calls().is_empty());
}

#[tokio::test]
async fn http_401_is_an_authentication_error() {
    let server = serve(vec![ScriptedResponse::json(
        401,
        r#"{"type":"error","error":{"type":"authentication_error","message":"invalid x-api-key"},"request_id":"req_1"}"#,
    )])
    .await;
    let error = run_with(config(&server), request(vec![Item::user("Hi")]))
        .await
        .expect_err("refused");
    assert_eq!(error.kind, ModelErrorKind::Authentication);
    assert_eq!(error.message, "invalid x-api-key");
    assert_eq!(server.requests().len(), 1);
}

#[tokio::test]
async fn http_400_prompt_too_long_is_context_length_exceeded() {
    let server = serve(vec![ScriptedResponse::json(
        400,
        r#"{"type":"error","error":{"type":"invalid_request_error","message":"prompt is too long: 215000 tokens > 200000 maximum"}}"#,
    )])
    .await;
    let error = run_with(config(&server), request(vec![Item::user("Hi")]))
        .await
        .expect_err("refused");
    assert_eq!(error.kind, ModelErrorKind::ContextLengthExceeded);
}

#[tokio::test]
async fn http_429_with_retry_after_then_success_warns_and_streams() {
    let server = serve(vec![
        ScriptedResponse::json(
            429,
            r#"{"type":"error","error":{"type":"rate_limit_error","message":"Number of request tokens has exceeded your per-minute rate limit"}}"#,
        )
        .with_header("retry-after", "1"),
        ScriptedResponse::sse(fixture("text.sse")),
    ])
    .await;
    let started = std::time::Instant::now();
    let outcome = run_with(config(&server), request(vec![Item::user("Hi")]))
        .await
        .unwrap();
    assert!(started.elapsed() >= Duration::from_secs(1));
    assert!(matches!(&outcome.events[0], ModelTurnEvent::Warning(w) if w.contains("rate limited")));
    assert_eq!(outcome.warnings().len(), 1);
    assert_eq!(outcome.finish_reason(), Some(FinishReason::Completed));
}

#[tokio::test]
async fn http_500_then_success_is_retried() {
    let server = serve(vec![
        ScriptedResponse::json(
            500,
            r#"{"type":"error","error":{"type":"api_error","message":"Internal server error"}}"#,
        ),
        ScriptedResponse::sse(fixture("text.sse")),
    ])
    .await;
    let outcome = run_with(config(&server), request(vec![Item::user("Hi")]))
        .await
        .unwrap();
    assert_eq!(outcome.warnings().len(), 1);
    assert_eq!(
        outcome.parts(),
        vec![Part::text("Bonjour le monde 🌍, ça va ?")]
    );
}

#[tokio::test]
async fn http_529_is_overloaded_after_the_last_attempt() {
    let overloaded = || {
        ScriptedResponse::json(
            529,
            r#"{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}"#,
        )
    };
    let server = serve(vec![overloaded(), overloaded(), overloaded()]).await;
    let error = run_with(config(&server), request(vec![Item::user("Hi")]))
        .await
        .expect_err("gave up");
    assert_eq!(error.kind, ModelErrorKind::Overloaded);
    assert_eq!(error.status, Some(529));
    assert_eq!(server.requests().len(), 3);
}

#[tokio::test]
async fn dropping_a_turn_mid_stream_closes_the_connection() {
    agentkit_testkit::assert_dropping_a_turn_closes_the_connection(
        ScriptedResponse::sse(fixture("cut.sse")),
        |url| {
            let config = AnthropicConfig::new("sk-ant-test", "claude-test");
            AnthropicAdapter::new(config.with_base_url(format!("{url}/v1"))).unwrap()
        },
    )
    .await;
}

fn full_transcript() -> Vec<Item> {
    vec![
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
                    summary: Some("A logo; check the weather.".into()),
                    signature: Some("sig-1".into()),
                    ..Default::default()
                }),
                Part::text("Un logo."),
                Part::ToolCall(ToolCallPart::new(
                    "toolu_1",
                    "get_weather",
                    json!({"city": "Paris"}),
                )),
                Part::ToolCall(ToolCallPart::new(
                    "toolu_2",
                    "get_weather",
                    json!({"city": "Lyon"}),
                )),
            ],
        ),
        Item::tool_result(ToolResultPart::success("toolu_1", "18°C")),
        Item::tool_result(ToolResultPart::error("toolu_2", "service unavailable")),
        Item::new(
            ItemKind::Assistant,
            vec![
                // Unsigned reasoning from another provider cannot be verified:
                // left out.
                Part::Reasoning(ReasoningPart {
                    summary: Some("foreign thoughts".into()),
                    ..Default::default()
                }),
                Part::text("Il fait 18°C à Paris."),
            ],
        ),
        Item::text(ItemKind::Context, "Today is Sunday."),
        Item::user("Merci !"),
    ]
}

#[tokio::test]
async fn the_request_body_maps_every_item_kind_with_cache_breakpoints() {
    let server = serve(vec![ScriptedResponse::sse(fixture("text.sse"))]).await;
    let mut turn = request(full_transcript());
    turn.cache = Some(PromptCacheRequest::automatic().with_retention(PromptCacheRetention::Long));
    let config = config(&server)
        .with_max_tokens(1024)
        .with_tool_choice(ToolChoice::Auto)
        .with_beta("interleaved-thinking-2025-05-14");
    let outcome = run_with(config, turn).await.unwrap();
    assert!(outcome.error.is_none());
    let sent = &server.requests()[0];
    assert_eq!(
        sent.header("anthropic-beta"),
        Some("interleaved-thinking-2025-05-14")
    );
    let body = sent.json();
    // Sorted maps: the same snapshot whether or not serde_json's
    // `preserve_order` is on in the build (the ACP SDK turns it on).
    insta::with_settings!({ sort_maps => true }, {
        insta::assert_json_snapshot!("request_body", body);
    });
    assert!(!body.to_string().contains("foreign thoughts"));
    // Both results in one user message, results first.
    let results = &body["messages"][2];
    assert_eq!(results["role"], "user");
    assert_eq!(results["content"].as_array().unwrap().len(), 2);
    assert_eq!(body.to_string().matches("cache_control").count(), 3);
}

#[tokio::test]
async fn explicit_breakpoints_are_capped_at_four_and_skip_thinking() {
    let server = serve(vec![ScriptedResponse::sse(fixture("text.sse"))]).await;
    let mut turn = request(full_transcript());
    turn.cache = Some(PromptCacheRequest::explicit(vec![
        CacheBreakpoint::Item { index: 3 },
        CacheBreakpoint::Item { index: 2 },
        CacheBreakpoint::System,
        CacheBreakpoint::Tools,
        CacheBreakpoint::LastItem,
    ]));
    run_with(config(&server), turn).await.unwrap();
    let body = server.requests()[0].json();
    assert_eq!(body.to_string().matches("cache_control").count(), 4);
    // Item 3 (the assistant turn) ends with a tool_use block: it carries the marker.
    assert_eq!(
        body["messages"][1]["content"][3]["cache_control"],
        json!({"type": "ephemeral"})
    );
    assert!(
        body["messages"][1]["content"][0]
            .get("cache_control")
            .is_none()
    );
    assert_eq!(
        body["messages"][0]["content"][1]["cache_control"],
        json!({"type": "ephemeral"})
    );
    assert!(body["tools"][0].get("cache_control").is_some());
    let last = body["messages"].as_array().unwrap().last().unwrap();
    assert!(
        last["content"]
            .as_array()
            .unwrap()
            .iter()
            .all(|b| b.get("cache_control").is_none()),
        "the fifth breakpoint is dropped"
    );
    let disabled_server = serve(vec![ScriptedResponse::sse(fixture("text.sse"))]).await;
    let mut turn = request(full_transcript());
    turn.cache = Some(PromptCacheRequest::disabled());
    run_with(config(&disabled_server), turn).await.unwrap();
    assert!(
        !disabled_server.requests()[0]
            .json()
            .to_string()
            .contains("cache_control")
    );
}

#[tokio::test]
async fn a_system_item_mid_session_stays_in_place_as_user_text() {
    let server = serve(vec![ScriptedResponse::sse(fixture("text.sse"))]).await;
    let transcript = vec![
        Item::system("You are terse."),
        Item::user("Hi"),
        Item::text(ItemKind::Assistant, "Hello."),
        Item::text(ItemKind::Developer, "From now on, answer in French."),
        Item::user("How are you?"),
    ];
    let outcome = run_with(config(&server), request(transcript))
        .await
        .unwrap();
    assert!(outcome.error.is_none());
    let body = server.requests()[0].json();
    assert_eq!(
        body["system"],
        json!([{"type": "text", "text": "You are terse."}])
    );
    assert_eq!(
        body["messages"],
        json!([
            {"role": "user", "content": [{"type": "text", "text": "Hi"}]},
            {"role": "assistant", "content": [{"type": "text", "text": "Hello."}]},
            {"role": "user", "content": [
                {"type": "text", "text": "<developer>\nFrom now on, answer in French.\n</developer>"},
                {"type": "text", "text": "How are you?"}
            ]}
        ])
    );
}

#[tokio::test]
async fn structured_output_is_a_forced_tool_whose_input_is_the_answer() {
    let server = serve(vec![
        ScriptedResponse::sse(fixture("structured.sse")).split_every(29),
    ])
    .await;
    let schema = json!({"type": "object", "properties": {"city": {"type": "string"}, "country": {"type": "string"}}, "required": ["city", "country"]});
    let request = request(vec![Item::user("Where is CERN?")])
        .with_output_schema(agentkit_loop::OutputSchema::new("place", schema.clone()));
    let outcome = run_with(config(&server), request).await.unwrap();
    assert!(outcome.error.is_none(), "{:?}", outcome.error);
    assert!(
        outcome.tool_calls().is_empty(),
        "the answer is not a call to run"
    );
    let parts = outcome.parts();
    let [Part::Text(text)] = parts.as_slice() else {
        panic!("one text part: {parts:?}");
    };
    assert_eq!(
        serde_json::from_str::<serde_json::Value>(&text.text).unwrap(),
        json!({"city": "Genève", "country": "CH"})
    );
    assert_eq!(outcome.finish_reason(), Some(FinishReason::Completed));
    let body = server.requests()[0].json();
    assert_eq!(
        body["tool_choice"],
        json!({"type": "tool", "name": "place"})
    );
    let tools = body["tools"].as_array().unwrap();
    assert_eq!(tools.last().unwrap()["name"], "place");
    assert_eq!(tools.last().unwrap()["input_schema"], schema);
}

#[tokio::test]
async fn a_price_table_computes_the_cost() {
    let server = serve(vec![ScriptedResponse::sse(fixture("tool_use.sse"))]).await;
    let config = config(&server).with_prices(
        agentkit_http::PriceTable::new()
            .with("claude-test", agentkit_http::ModelPrice::usd(3.0, 15.0)),
    );
    let outcome = run_with(config, request(vec![Item::user("Hi")]))
        .await
        .unwrap();
    let usage = outcome
        .events
        .iter()
        .rev()
        .find_map(|e| match e {
            ModelTurnEvent::Usage(u) => Some(u.clone()),
            _ => None,
        })
        .unwrap();
    let cost = usage.cost.expect("a cost");
    assert!(
        (cost.amount - (400.0 * 3.0 + 45.0 * 15.0) / 1e6).abs() < 1e-12,
        "{cost:?}"
    );
}

#[tokio::test]
async fn a_server_keeping_the_connection_open_after_the_end_does_not_hold_the_turn() {
    // A hostile (or merely sloppy) server: the answer ends with `message_stop`,
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
