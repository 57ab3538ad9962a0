//! The Responses adapter against a real HTTP server on 127.0.0.1 replaying
//! Responses API streams (tests/fixtures/responses/*.sse, written in the
//! documented wire format), with every fault the Chat Completions adapter
//! is tested against.

mod common;

use agentkit_core::{
    FinishReason, Item, ItemKind, MetadataMap, Part, ReasoningPart, ToolCallPart, ToolResultPart,
};
use agentkit_http::testing::{Ending, ScriptedResponse, TestServer};
use agentkit_http::{HttpConfig, ModelPrice, PriceTable, RetryPolicy};
use agentkit_loop::{
    ModelAdapter, ModelErrorKind, ModelSession, ModelTurn, OutputSchema, SessionConfig, TurnRequest,
};
use agentkit_provider_openai::{OpenAiConfig, ResponsesAdapter, ResponsesConfig};
use agentkit_testkit::adapter::{Outcome, run_turn, weather_request as request};
use serde_json::json;
use std::time::Duration;

fn fixture(name: &str) -> String {
    common::fixture(&format!("responses/{name}"))
}

fn config(server: &TestServer) -> ResponsesConfig {
    OpenAiConfig::compatible(format!("{}/v1", server.url()), "gpt-test")
        .with_api_key("sk-test")
        .with_http(
            HttpConfig::default()
                .with_idle_timeout(Duration::from_millis(800))
                .with_retry(
                    RetryPolicy::default()
                        .with_max_attempts(3)
                        .with_backoff(Duration::from_millis(10), Duration::from_millis(50)),
                ),
        )
        .into()
}

async fn run(
    config: ResponsesConfig,
    request: TurnRequest,
) -> Result<Outcome, agentkit_loop::ModelError> {
    run_turn(ResponsesAdapter::new(config)?, request).await
}

async fn run_fixture(response: ScriptedResponse) -> (Outcome, TestServer) {
    let server = TestServer::start([response]).await.unwrap();
    let outcome = run(config(&server), request(vec![Item::user("Hi")]))
        .await
        .expect("the turn starts");
    (outcome, server)
}

#[tokio::test]
async fn text_streams_with_usage_metadata_and_the_documented_request() {
    let body = fixture("text.sse");
    let globe = body.find('🌍').unwrap();
    let (outcome, server) =
        run_fixture(ScriptedResponse::sse(body).split_at(&[globe + 1, globe + 2, 500, 1000])).await;
    assert!(outcome.error.is_none(), "{:?}", outcome.error);
    assert_eq!(
        outcome.parts(),
        vec![Part::text("Bonjour le monde 🌍, ça va ?")]
    );
    let usage = outcome.last_usage().unwrap();
    assert!(usage.is_complete());
    assert_eq!(
        (
            usage.tokens.input_tokens,
            usage.tokens.output_tokens,
            usage.tokens.cache_read_tokens
        ),
        (1200, 9, 1024)
    );
    let result = outcome.finished().unwrap();
    assert_eq!(result.finish_reason, FinishReason::Completed);
    assert_eq!(result.metadata["agentkit.response_id"], "resp_1");
    assert_eq!(result.metadata["agentkit.model"], "gpt-test-2025");
    assert_eq!(result.metadata["agentkit.provider"], "openai-responses");
    let sent = &server.requests()[0];
    assert_eq!(sent.path, "/v1/responses");
    assert_eq!(sent.header("authorization"), Some("Bearer sk-test"));
    let body = sent.json();
    assert_eq!(body["stream"], true);
    assert_eq!(body["store"], false);
    assert_eq!(body["include"], json!(["reasoning.encrypted_content"]));
    assert_eq!(
        body["input"],
        json!([{"type": "message", "role": "user", "content": "Hi"}])
    );
    assert_eq!(
        body["tools"][0],
        json!({
            "type": "function",
            "name": "get_weather",
            "description": "Current weather for a city.",
            "parameters": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]},
            "strict": false
        })
    );
}

#[tokio::test]
async fn every_split_of_the_text_stream_decodes_the_same() {
    let body = fixture("text.sse");
    for size in [1, 2, 3, 7, 64] {
        let (outcome, _server) = run_fixture(
            ScriptedResponse::sse(body.clone())
                .split_every(size)
                .with_pause(Duration::ZERO),
        )
        .await;
        assert!(outcome.error.is_none(), "size {size}: {:?}", outcome.error);
        assert_eq!(
            outcome.parts(),
            vec![Part::text("Bonjour le monde 🌍, ça va ?")],
            "size {size}"
        );
    }
}

#[tokio::test]
async fn reasoning_keeps_its_id_and_encrypted_content_and_calls_are_assembled() {
    let (outcome, _server) =
        run_fixture(ScriptedResponse::sse(fixture("reasoning_tool_call.sse")).split_every(37))
            .await;
    assert!(outcome.error.is_none(), "{:?}", outcome.error);
    let parts = outcome.parts();
    let [Part::Reasoning(reasoning)] = parts.as_slice() else {
        panic!("one reasoning part: {parts:?}");
    };
    assert_eq!(
        reasoning.summary.as_deref(),
        Some("The user wants the weather.\n\nCall the tool.")
    );
    assert_eq!(reasoning.encrypted.as_deref(), Some("gAAAAABenc-RYPTED=="));
    assert_eq!(reasoning.metadata["openai.item_id"], "rs_1");
    assert_eq!(reasoning.metadata["agentkit.provider"], "openai-responses");
    let calls = outcome.tool_calls();
    assert_eq!(calls.len(), 1);
    assert_eq!(calls[0].id.as_str(), "call_abc");
    assert_eq!(&*calls[0].name, "get_weather");
    assert_eq!(calls[0].input, json!({"city": "Genève"}));
    assert_eq!(calls[0].metadata["openai.item_id"], "fc_1");
    assert_eq!(outcome.finish_reason(), Some(FinishReason::ToolCall));
    assert_eq!(outcome.usage().unwrap().reasoning_tokens, 28);
}

fn reasoning_part() -> ReasoningPart {
    let mut metadata = MetadataMap::new();
    metadata.insert("openai.item_id".into(), json!("rs_1"));
    metadata.insert("agentkit.provider".into(), json!("openai-responses"));
    ReasoningPart {
        summary: Some("The user wants the weather.".into()),
        encrypted: Some("gAAAAABenc-RYPTED==".into()),
        metadata,
        ..Default::default()
    }
}

#[tokio::test]
async fn reasoning_calls_and_results_go_back_as_input_items() {
    let server = TestServer::start([ScriptedResponse::sse(fixture("text.sse"))])
        .await
        .unwrap();
    let transcript = vec![
        Item::system("Be brief."),
        Item::text(ItemKind::Developer, "Answer in French."),
        Item::user("Weather in Genève?"),
        Item::new(
            ItemKind::Assistant,
            vec![
                Part::Reasoning(reasoning_part()),
                // Reasoning from another provider cannot be verified here.
                Part::Reasoning(ReasoningPart {
                    summary: Some("foreign thoughts".into()),
                    ..Default::default()
                }),
                Part::text("Je vérifie."),
                Part::ToolCall(ToolCallPart::new(
                    "call_abc",
                    "get_weather",
                    json!({"city": "Genève"}),
                )),
            ],
        ),
        Item::new(
            ItemKind::Tool,
            vec![Part::ToolResult(ToolResultPart::success(
                "call_abc", "18°C",
            ))],
        ),
    ];
    let outcome = run(config(&server), request(transcript)).await.unwrap();
    assert!(outcome.error.is_none(), "{:?}", outcome.error);
    let body = server.requests()[0].json();
    assert_eq!(
        body["input"],
        json!([
            {"type": "message", "role": "system", "content": "Be brief."},
            {"type": "message", "role": "developer", "content": "Answer in French."},
            {"type": "message", "role": "user", "content": "Weather in Genève?"},
            {"type": "reasoning", "id": "rs_1", "summary": [{"type": "summary_text", "text": "The user wants the weather."}], "encrypted_content": "gAAAAABenc-RYPTED=="},
            {"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": "Je vérifie."}]},
            {"type": "function_call", "call_id": "call_abc", "name": "get_weather", "arguments": "{\"city\":\"Genève\"}"},
            {"type": "function_call_output", "call_id": "call_abc", "output": "18°C"}
        ])
    );
    assert!(!body.to_string().contains("foreign thoughts"));
}

#[tokio::test]
async fn previous_response_id_sends_only_what_follows_the_stored_response() {
    let server = TestServer::start([
        ScriptedResponse::sse(fixture("text.sse")),
        ScriptedResponse::sse(fixture("text.sse")),
    ])
    .await
    .unwrap();
    let mut answered = Item::new(
        ItemKind::Assistant,
        vec![Part::ToolCall(ToolCallPart::new(
            "call_abc",
            "get_weather",
            json!({}),
        ))],
    );
    answered
        .metadata
        .insert("agentkit.response_id".into(), json!("resp_0"));
    answered
        .metadata
        .insert("agentkit.provider".into(), json!("openai-responses"));
    let transcript = vec![
        Item::user("Weather?"),
        answered,
        Item::new(
            ItemKind::Tool,
            vec![Part::ToolResult(ToolResultPart::success(
                "call_abc", "sunny",
            ))],
        ),
    ];
    let chained = config(&server).with_store(true, true);
    run(chained, request(transcript.clone())).await.unwrap();
    let body = server.requests()[0].json();
    assert_eq!(body["previous_response_id"], "resp_0");
    assert_eq!(body["store"], true);
    assert!(body.get("include").is_none());
    assert_eq!(
        body["input"],
        json!([{"type": "function_call_output", "call_id": "call_abc", "output": "sunny"}])
    );
    // Stored but not chained: the whole transcript, no previous id.
    run(config(&server).with_store(true, false), request(transcript))
        .await
        .unwrap();
    let body = server.requests()[1].json();
    assert!(body.get("previous_response_id").is_none());
    assert_eq!(body["input"].as_array().unwrap().len(), 3);
}

#[tokio::test]
async fn an_output_schema_becomes_text_format() {
    let server = TestServer::start([ScriptedResponse::sse(fixture("text.sse"))])
        .await
        .unwrap();
    let schema = json!({"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"], "additionalProperties": false});
    let request = request(vec![Item::user("Where?")]).with_output_schema(
        OutputSchema::new("place", schema.clone()).with_description("A place."),
    );
    run(config(&server), request).await.unwrap();
    let body = server.requests()[0].json();
    assert_eq!(
        body["text"],
        json!({"format": {"type": "json_schema", "name": "place", "schema": schema, "strict": true, "description": "A place."}})
    );
}

#[tokio::test]
async fn incomplete_responses_report_why() {
    let (outcome, _server) = run_fixture(ScriptedResponse::sse(fixture("incomplete.sse"))).await;
    assert!(outcome.error.is_none(), "{:?}", outcome.error);
    assert_eq!(outcome.parts(), vec![Part::text("Short")]);
    assert_eq!(outcome.finish_reason(), Some(FinishReason::MaxTokens));
}

#[tokio::test]
async fn stream_faults_map_to_error_kinds() {
    let cases: Vec<(&str, ScriptedResponse, ModelErrorKind, &str)> = vec![
        (
            "cut",
            ScriptedResponse::sse(fixture("cut.sse")),
            ModelErrorKind::Protocol,
            "ended before",
        ),
        (
            "abort",
            ScriptedResponse::sse(fixture("cut.sse")).ending(Ending::Abort),
            ModelErrorKind::Transport,
            "",
        ),
        (
            "stall",
            ScriptedResponse::sse(fixture("cut.sse")).ending(Ending::Stall),
            ModelErrorKind::Timeout,
            "timed out",
        ),
        (
            "malformed",
            ScriptedResponse::sse(fixture("malformed.sse")),
            ModelErrorKind::Protocol,
            "not valid JSON",
        ),
        (
            "bad arguments",
            ScriptedResponse::sse(fixture("bad_arguments.sse")),
            ModelErrorKind::Protocol,
            "call_bad",
        ),
        (
            "failed",
            ScriptedResponse::sse(fixture("failed.sse")),
            ModelErrorKind::Server,
            "server had an error",
        ),
        (
            "error event",
            ScriptedResponse::sse(fixture("error.sse")),
            ModelErrorKind::RateLimited,
            "Rate limit reached",
        ),
    ];
    for (name, response, kind, words) in cases {
        let (outcome, server) = run_fixture(response).await;
        let error = outcome
            .error
            .as_ref()
            .unwrap_or_else(|| panic!("{name}: an error"));
        assert_eq!(error.kind, kind, "{name}: {error}");
        assert!(error.message.contains(words), "{name}: {}", error.message);
        assert!(outcome.tool_calls().is_empty(), "{name}: no half-made call");
        assert_eq!(outcome.finish_reason(), None, "{name}");
        assert_eq!(
            server.requests().len(),
            1,
            "{name}: not retried after the stream began"
        );
    }
}

#[tokio::test]
async fn http_errors_are_retried_or_classified() {
    // 429 with Retry-After, then a 503 overload, then the answer.
    let server = TestServer::start([
        ScriptedResponse::json(429, r#"{"error":{"message":"Rate limit reached","type":"requests","code":"rate_limit_exceeded"}}"#)
            .with_header("retry-after-ms", "30"),
        ScriptedResponse::json(503, r#"{"error":{"message":"The engine is currently overloaded","type":"server_error"}}"#),
        ScriptedResponse::sse(fixture("text.sse")),
    ])
    .await
    .unwrap();
    let outcome = run(config(&server), request(vec![Item::user("Hi")]))
        .await
        .unwrap();
    let warnings = outcome.warnings();
    assert_eq!(warnings.len(), 2, "{warnings:?}");
    assert!(warnings[0].contains("rate limited"), "{}", warnings[0]);
    assert!(warnings[1].contains("overloaded"), "{}", warnings[1]);
    assert_eq!(outcome.finish_reason(), Some(FinishReason::Completed));

    let overloaded = || {
        ScriptedResponse::json(
            529,
            r#"{"error":{"message":"overloaded","type":"server_error"}}"#,
        )
    };
    let server = TestServer::start([overloaded(), overloaded(), overloaded()])
        .await
        .unwrap();
    let error = run(config(&server), request(vec![Item::user("Hi")]))
        .await
        .err()
        .unwrap();
    assert_eq!(error.kind, ModelErrorKind::Overloaded);
    assert_eq!(server.requests().len(), 3);

    let server = TestServer::start([ScriptedResponse::json(
        401,
        r#"{"error":{"message":"Incorrect API key provided: sk-test.","type":"invalid_request_error","code":"invalid_api_key"}}"#,
    )])
    .await
    .unwrap();
    let error = run(config(&server), request(vec![Item::user("Hi")]))
        .await
        .err()
        .unwrap();
    assert_eq!(error.kind, ModelErrorKind::Authentication);
    assert_eq!(server.requests().len(), 1);
}

#[tokio::test]
async fn dropping_a_turn_mid_stream_closes_the_connection() {
    agentkit_testkit::assert_dropping_a_turn_closes_the_connection(
        ScriptedResponse::sse(fixture("cut.sse")),
        |url| {
            let openai = OpenAiConfig::compatible(format!("{url}/v1"), "gpt-test");
            ResponsesAdapter::new(ResponsesConfig::from(openai)).unwrap()
        },
    )
    .await;
}

#[tokio::test]
async fn a_price_table_fills_the_cost_the_server_did_not_report() {
    let server = TestServer::start([ScriptedResponse::sse(fixture("text.sse"))])
        .await
        .unwrap();
    let mut config = config(&server);
    config.openai = config.openai.with_prices(
        PriceTable::new().with("gpt-test", ModelPrice::usd(2.0, 8.0).with_cache(0.5, 2.0)),
    );
    let outcome = run(config, request(vec![Item::user("Hi")])).await.unwrap();
    let cost = outcome.last_usage().unwrap().cost.expect("a cost");
    // 176 uncached input at $2, 1024 cached at $0.5, 9 output at $8.
    let expected = (176.0 * 2.0 + 1024.0 * 0.5 + 9.0 * 8.0) / 1_000_000.0;
    assert!((cost.amount - expected).abs() < 1e-12, "{cost:?}");
    assert_eq!(cost.currency, "USD");
}

#[tokio::test]
async fn a_strict_output_schema_is_normalised_for_openai_strict_mode() {
    let server = TestServer::start([ScriptedResponse::sse(fixture("text.sse"))])
        .await
        .unwrap();
    // An open object with an optional property: strict mode refuses it as is.
    let schema = json!({"type": "object", "properties": {"city": {"type": "string"}, "zip": {"type": "string"}}, "required": ["city"]});
    let strict = request(vec![Item::user("Where?")])
        .with_output_schema(OutputSchema::new("place", schema.clone()));
    run(config(&server), strict).await.unwrap();
    let sent = &server.requests()[0].json()["text"]["format"]["schema"];
    assert_eq!(sent["additionalProperties"], false);
    assert_eq!(sent["required"].as_array().unwrap().len(), 2, "{sent}");
    // Not strict: sent as given.
    let server = TestServer::start([ScriptedResponse::sse(fixture("text.sse"))])
        .await
        .unwrap();
    let request = request(vec![Item::user("Where?")])
        .with_output_schema(OutputSchema::new("place", schema.clone()).with_strict(false));
    run(config(&server), request).await.unwrap();
    assert_eq!(
        server.requests()[0].json()["text"]["format"]["schema"],
        schema
    );
}

/// The server no longer has the stored response (OpenAI's 400
/// `previous_response_not_found`): the same turn sends the whole history
/// once, says so in a warning, and the next turn chains again from the
/// response the fallback produced.
#[tokio::test]
async fn a_lost_previous_response_falls_back_to_the_whole_history_once() {
    let not_found = r#"{"error":{"message":"Previous response with id 'resp_0' not found.","type":"invalid_request_error","param":"previous_response_id","code":"previous_response_not_found"}}"#;
    let server = TestServer::start([
        ScriptedResponse::json(400, not_found),
        ScriptedResponse::sse(fixture("text.sse")),
        ScriptedResponse::sse(fixture("text.sse")),
    ])
    .await
    .unwrap();
    let stored = |id: &str| {
        let mut item = Item::new(ItemKind::Assistant, vec![Part::text("Sunny.")]);
        item.metadata
            .insert("agentkit.response_id".into(), json!(id));
        item.metadata
            .insert("agentkit.provider".into(), json!("openai-responses"));
        item
    };
    let mut transcript = vec![
        Item::user("Weather?"),
        stored("resp_0"),
        Item::user("And tomorrow?"),
    ];
    let adapter = ResponsesAdapter::new(config(&server).with_store(true, true)).unwrap();
    let mut session = adapter
        .start_session(SessionConfig::new("s-1"))
        .await
        .unwrap();
    let mut turn = session
        .begin_turn(request(transcript.clone()))
        .await
        .expect("the fallback request succeeds");
    let mut warnings = Vec::new();
    let mut finished = false;
    while let Some(event) = turn.next_event().await.unwrap() {
        match event {
            agentkit_loop::ModelTurnEvent::Warning(text) => warnings.push(text),
            agentkit_loop::ModelTurnEvent::Finished(_) => finished = true,
            _ => {}
        }
    }
    assert!(finished);
    assert_eq!(warnings.len(), 1, "{warnings:?}");
    assert!(warnings[0].contains("resp_0"), "{warnings:?}");

    let requests = server.requests();
    assert_eq!(requests.len(), 2);
    let chained = requests[0].json();
    assert_eq!(chained["previous_response_id"], "resp_0");
    assert_eq!(chained["input"].as_array().unwrap().len(), 1);
    let full = requests[1].json();
    assert!(full.get("previous_response_id").is_none(), "{full}");
    assert_eq!(full["input"].as_array().unwrap().len(), 3);
    assert!(
        full["input"][2].to_string().contains("And tomorrow?"),
        "{full}"
    );

    // The next turn chains again, from the response the fallback stored.
    transcript.push(stored("resp_1"));
    transcript.push(Item::user("Thanks."));
    let turn = session.begin_turn(request(transcript)).await.unwrap();
    drop(turn);
    let next = server.requests()[2].json();
    assert_eq!(next["previous_response_id"], "resp_1");
    assert_eq!(next["input"].as_array().unwrap().len(), 1);
}

/// Any other refusal of a chained request is returned as it is: only a lost
/// response is worth a second request.
#[tokio::test]
async fn other_refusals_of_a_chained_request_are_not_resent() {
    let invalid = r#"{"error":{"message":"Invalid value for 'temperature'.","type":"invalid_request_error","param":"temperature","code":"invalid_value"}}"#;
    let server = TestServer::start([ScriptedResponse::json(400, invalid)])
        .await
        .unwrap();
    let mut answered = Item::new(ItemKind::Assistant, vec![Part::text("Hi.")]);
    answered
        .metadata
        .insert("agentkit.response_id".into(), json!("resp_0"));
    answered
        .metadata
        .insert("agentkit.provider".into(), json!("openai-responses"));
    let transcript = vec![Item::user("Hi"), answered, Item::user("Again")];
    let Err(error) = run(config(&server).with_store(true, true), request(transcript)).await else {
        panic!("the refusal is returned");
    };
    assert_eq!(error.kind, ModelErrorKind::InvalidRequest);
    assert_eq!(server.requests().len(), 1);
}

/// One answered call of a long coding session: the model's call (with a
/// sentence of prose) and its result (a few lines of code).
fn coding_round(i: usize) -> [Item; 2] {
    let id = format!("call_{i:08}");
    let call = Item::new(
        ItemKind::Assistant,
        vec![
            Part::text("Let me look at the next file \u{2014} \"carefully\"."),
            Part::ToolCall(ToolCallPart::new(
                id.clone(),
                "get_weather",
                json!({ "city": format!("Town {i}") }),
            )),
        ],
    );
    let result = Item::new(
        ItemKind::Tool,
        vec![Part::ToolResult(ToolResultPart::success(
            id,
            format!("fn f{i}() {{\n    println!(\"{i}\");\n}}\n"),
        ))],
    );
    [call, result]
}

/// Issue 33's figure: turn N+1 of a 10,000-item Responses session sends at
/// most 1% of the bytes of the whole history when it is chained by
/// `previous_response_id`. Bytes as the test server received them.
#[tokio::test]
async fn a_chained_turn_of_a_long_session_sends_under_one_percent() {
    let server = TestServer::start([
        ScriptedResponse::sse(fixture("text.sse")),
        ScriptedResponse::sse(fixture("text.sse")),
    ])
    .await
    .unwrap();
    let adapter = ResponsesAdapter::new(config(&server).with_store(true, true)).unwrap();
    let mut session = adapter
        .start_session(SessionConfig::new("s-1"))
        .await
        .unwrap();
    let mut items = vec![
        Item::system("You are a careful coding agent."),
        Item::user("Fix it."),
    ];
    items.extend((0..4_999).flat_map(coding_round));
    assert_eq!(items.len(), 10_000);
    drop(session.begin_turn(request(items.clone())).await.unwrap());
    let [mut call, result] = coding_round(4_999);
    call.metadata
        .insert("agentkit.response_id".into(), json!("resp_n"));
    call.metadata
        .insert("agentkit.provider".into(), json!("openai-responses"));
    items.extend([call, result]);
    drop(session.begin_turn(request(items)).await.unwrap());
    let requests = server.requests();
    let (full, chained) = (requests[0].body.len(), requests[1].body.len());
    println!("turn N: {full} bytes, turn N+1 chained: {chained} bytes");
    assert_eq!(requests[1].json()["previous_response_id"], "resp_n");
    assert!(full > 1_000_000, "{full}");
    assert!(chained * 100 <= full, "{chained} of {full}");
}
