//! The presets and Azure against a real HTTP server on 127.0.0.1: each
//! server's quirk is in the request it receives or handled in the stream
//! it answers with.

use agentkit_core::{Item, ItemKind, Part, ReasoningPart, ToolCallPart, ToolResultPart, TurnId};
use agentkit_http::testing::{ScriptedResponse, TestServer};
use agentkit_loop::{PromptCacheRequest, TranscriptView, TurnRequest};
use agentkit_provider_openai::{
    AzureCredential, AzureOpenAi, OpenAiAdapter, OpenAiConfig, Preset, ResponsesAdapter, ToolChoice,
};
use agentkit_testkit::adapter::run_turn;
use agentkit_tools_core::ToolSpec;
use serde_json::{Value, json};
use std::sync::Arc;

const TEXT: &str = concat!(
    "data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"ok\"},\"finish_reason\":\"stop\"}]}\n\n",
    "data: [DONE]\n\n"
);

fn request(items: Vec<Item>) -> TurnRequest {
    let mut request = TurnRequest::new("s", TurnId::new("t"), TranscriptView::from_items(items));
    let spec = ToolSpec::new(
        "get_weather",
        "Weather.",
        json!({"type": "object", "properties": {"city": {"type": "string"}}}),
    )
    .unwrap();
    request.available_tools = vec![Arc::new(spec)].into();
    request.cache = Some(PromptCacheRequest::automatic().with_key("session-1"));
    request
}

/// The preset pointed at `server`, forcing a tool call.
fn at(preset: Preset, server: &TestServer, key: Option<&str>) -> OpenAiConfig {
    let mut config = preset
        .config(key.map(str::to_owned), Some("m".into()))
        .with_tool_choice(ToolChoice::Required);
    config.base_url = format!("{}/v1", server.url());
    config
}

#[tokio::test]
async fn every_preset_sends_what_its_server_accepts() {
    // (preset, stream_options sent, prompt_cache_key sent, required choice)
    let rows = [
        (Preset::OpenRouter, true, true, "required"),
        (Preset::Groq, true, false, "required"),
        (Preset::Mistral, false, false, "any"),
        (Preset::DeepSeek, true, false, "required"),
        (Preset::Xai, true, false, "required"),
        (Preset::Together, true, false, "required"),
        (Preset::Fireworks, false, false, "required"),
        (Preset::Ollama, true, false, "required"),
        (Preset::LmStudio, true, false, "required"),
        (Preset::Vllm, true, false, "required"),
    ];
    for (preset, stream_usage, cache_key, required) in rows {
        let server = TestServer::start([ScriptedResponse::sse(TEXT)])
            .await
            .unwrap();
        let key = preset.key_var().map(|_| "k-test");
        let adapter = OpenAiAdapter::new(at(preset, &server, key)).unwrap();
        let outcome = run_turn(adapter, request(vec![Item::user("hi")]))
            .await
            .unwrap();
        assert!(outcome.error.is_none(), "{preset}: {:?}", outcome.error);
        let sent = &server.requests()[0];
        assert_eq!(sent.path, "/v1/chat/completions", "{preset}");
        let body = sent.json();
        assert_eq!(
            body.get("stream_options").is_some(),
            stream_usage,
            "{preset}: {body}"
        );
        assert_eq!(
            body.get("prompt_cache_key").is_some(),
            cache_key,
            "{preset}: {body}"
        );
        assert_eq!(body["tool_choice"], required, "{preset}");
        // Every compatible server gets `max_tokens`, never OpenAI's newer name.
        assert!(body.get("max_completion_tokens").is_none(), "{preset}");
        assert_eq!(
            sent.header("authorization").is_some(),
            key.is_some(),
            "{preset}: a key only where the server takes one"
        );
        assert_eq!(
            body.get("usage").is_some(),
            preset == Preset::OpenRouter,
            "{preset}: only OpenRouter is asked to report cost"
        );
        assert_eq!(Preset::from_name(preset.name()), Some(preset));
        assert!(
            preset.default_model().is_some() || matches!(preset, Preset::LmStudio | Preset::Vllm)
        );
    }
}

#[tokio::test]
async fn groq_usage_in_x_groq_is_reported() {
    let body = concat!(
        "data: {\"id\":\"c\",\"choices\":[{\"index\":0,\"delta\":{\"content\":\"hi\"},\"finish_reason\":null}]}\n\n",
        "data: {\"id\":\"c\",\"choices\":[{\"index\":0,\"delta\":{},\"finish_reason\":\"stop\"}],",
        "\"x_groq\":{\"id\":\"req_1\",\"usage\":{\"prompt_tokens\":21,\"completion_tokens\":7,\"total_tokens\":28}}}\n\n",
        "data: [DONE]\n\n"
    );
    let server = TestServer::start([ScriptedResponse::sse(body)])
        .await
        .unwrap();
    let adapter = OpenAiAdapter::new(at(Preset::Groq, &server, Some("gsk"))).unwrap();
    let outcome = run_turn(adapter, request(vec![Item::user("hi")]))
        .await
        .unwrap();
    let usage = outcome.usage().expect("usage reported");
    assert_eq!((usage.input_tokens, usage.output_tokens), (21, 7));
}

#[tokio::test]
async fn deepseek_gets_its_reasoning_back_beside_tool_calls() {
    let first = concat!(
        "data: {\"choices\":[{\"index\":0,\"delta\":{\"reasoning_content\":\"Need the weather.\"}}]}\n\n",
        "data: {\"choices\":[{\"index\":0,\"delta\":{\"tool_calls\":[{\"index\":0,\"id\":\"call_1\",\"type\":\"function\",\"function\":{\"name\":\"get_weather\",\"arguments\":\"{\\\"city\\\":\\\"Paris\\\"}\"}}]}}]}\n\n",
        "data: {\"choices\":[{\"index\":0,\"delta\":{},\"finish_reason\":\"tool_calls\"}]}\n\n",
        "data: {\"choices\":[],\"usage\":{\"prompt_tokens\":90,\"completion_tokens\":12,\"prompt_cache_hit_tokens\":64,\"prompt_cache_miss_tokens\":26}}\n\n",
        "data: [DONE]\n\n"
    );
    let server = TestServer::start([ScriptedResponse::sse(first), ScriptedResponse::sse(TEXT)])
        .await
        .unwrap();
    let config = at(Preset::DeepSeek, &server, Some("sk"));
    let outcome = run_turn(
        OpenAiAdapter::new(config.clone()).unwrap(),
        request(vec![Item::user("Paris?")]),
    )
    .await
    .unwrap();
    // DeepSeek counts its cache hits in a field of its own.
    assert_eq!(outcome.usage().expect("usage").cache_read_tokens, 64);
    let mut parts = outcome.parts();
    assert!(
        matches!(&parts[0], Part::Reasoning(ReasoningPart { summary: Some(s), .. }) if s == "Need the weather.")
    );
    let calls: Vec<ToolCallPart> = outcome.tool_calls();
    parts.extend(calls.iter().cloned().map(Part::ToolCall));
    let items = vec![
        Item::user("Paris?"),
        Item::new(ItemKind::Assistant, parts),
        Item::tool_result(ToolResultPart::success("call_1", "18°C")),
    ];
    run_turn(OpenAiAdapter::new(config).unwrap(), request(items))
        .await
        .unwrap();
    let body = server.requests()[1].json();
    let assistant = &body["messages"][1];
    assert_eq!(assistant["role"], "assistant");
    assert_eq!(assistant["reasoning_content"], "Need the weather.");
    assert_eq!(assistant["tool_calls"][0]["id"], "call_1");
    // Other servers never get reasoning back.
    let plain = at(Preset::Xai, &server, Some("k"));
    assert!(!plain.quirks.reasoning_content_back);
}

#[tokio::test]
async fn azure_deployment_urls_and_both_credentials() {
    let responses_body = "data: {\"type\":\"response.completed\",\"response\":{\"id\":\"r\",\"model\":\"dep\",\"usage\":{\"input_tokens\":1,\"output_tokens\":1}}}\n\n";
    let server = TestServer::start([
        ScriptedResponse::sse(TEXT),
        ScriptedResponse::sse(TEXT),
        ScriptedResponse::sse(responses_body),
    ])
    .await
    .unwrap();
    let key = AzureOpenAi::new(
        server.url(),
        "dep",
        AzureCredential::ApiKey("az-key".into()),
    );
    let entra = AzureOpenAi::new(
        server.url(),
        "dep",
        AzureCredential::EntraToken("eyJ-token".into()),
    )
    .with_api_version("2025-01-01-preview");
    for config in [key.chat_config(), entra.chat_config()] {
        let outcome = run_turn(
            OpenAiAdapter::new(config).unwrap(),
            request(vec![Item::user("hi")]),
        )
        .await
        .unwrap();
        assert!(outcome.error.is_none(), "{:?}", outcome.error);
    }
    let outcome = run_turn(
        ResponsesAdapter::new(key.responses_config()).unwrap(),
        request(vec![Item::user("hi")]),
    )
    .await
    .unwrap();
    assert!(outcome.error.is_none(), "{:?}", outcome.error);

    let sent = server.requests();
    assert_eq!(
        sent[0].path,
        "/openai/deployments/dep/chat/completions?api-version=2024-10-21"
    );
    assert_eq!(sent[0].header("api-key"), Some("az-key"));
    assert_eq!(sent[0].header("authorization"), None);
    assert_eq!(
        sent[1].path,
        "/openai/deployments/dep/chat/completions?api-version=2025-01-01-preview"
    );
    assert_eq!(sent[1].header("authorization"), Some("Bearer eyJ-token"));
    assert_eq!(sent[1].header("api-key"), None);
    assert_eq!(
        sent[2].path,
        "/openai/responses?api-version=2025-04-01-preview"
    );
    let body: Value = sent[2].json();
    assert_eq!(body["model"], "dep");
    // Azure refuses OpenAI's cache key field.
    assert!(sent[0].json().get("prompt_cache_key").is_none());
    assert!(!format!("{entra:?}").contains("eyJ-token"));
}
