//! The local provider: the loopback test server of `agentkit-http`
//! answering Chat Completions requests in today's OpenAI stream format,
//! from the conversation it is sent. A user message gets a sentence and a
//! `job` call (a fresh call id each time, so every tool run is counted
//! apart), the tool's result gets the final answer.

use agentkit_http::testing::{RecordedRequest, ScriptedResponse, TestServer};
use std::sync::atomic::{AtomicUsize, Ordering};

const HEAD: &str = r#"{"id":"chatcmpl-CXk7RvO2mNcP1hT0qzYbWfA3LuEd","object":"chat.completion.chunk","created":1763780000,"model":"gpt-4o-mini-2024-07-18","service_tier":"default","system_fingerprint":"fp_560af6e559","choices":[{"index":0,"delta":"#;

/// Starts it on a free port of 127.0.0.1.
pub async fn start() -> std::io::Result<TestServer> {
    let calls = AtomicUsize::new(0);
    TestServer::respond(move |request| {
        let body = answer(request, &calls);
        ScriptedResponse::sse(body)
    })
    .await
}

fn answer(request: &RecordedRequest, calls: &AtomicUsize) -> Vec<u8> {
    let body = request.json();
    let after_tool = body["messages"]
        .as_array()
        .and_then(|messages| messages.last())
        .is_some_and(|last| last["role"] == "tool");
    let mut out = String::new();
    let mut n = 0;
    let mut chunk = |delta: &str, finish: &str| {
        n += 1;
        out.push_str(&format!(
            "data: {HEAD}{delta},\"logprobs\":null,\"finish_reason\":{finish}}}],\"usage\":null,\"obfuscation\":\"{}\"}}\n\n",
            &"Qv3xZp0aLm9TeW"[..1 + n % 13]
        ));
    };
    chunk(
        r#"{"role":"assistant","content":"","refusal":null}"#,
        "null",
    );
    if after_tool {
        for word in ["The", " job", " is", " done", "."] {
            chunk(&format!("{{\"content\":\"{word}\"}}"), "null");
        }
        chunk("{}", "\"stop\"");
    } else {
        for word in [
            "Let",
            " me",
            " run",
            " the",
            " \\\"job\\\"",
            " caf\u{e9}",
            ".",
        ] {
            chunk(&format!("{{\"content\":\"{word}\"}}"), "null");
        }
        let id = calls.fetch_add(1, Ordering::Relaxed);
        chunk(
            &format!(
                r#"{{"tool_calls":[{{"index":0,"id":"call_{id:06}","type":"function","function":{{"name":"job","arguments":""}}}}]}}"#
            ),
            "null",
        );
        chunk(
            r#"{"tool_calls":[{"index":0,"function":{"arguments":"{}"}}]}"#,
            "null",
        );
        chunk("{}", "\"tool_calls\"");
    }
    out.push_str("data: {\"id\":\"chatcmpl-CXk7RvO2mNcP1hT0qzYbWfA3LuEd\",\"object\":\"chat.completion.chunk\",\"created\":1763780000,\"model\":\"gpt-4o-mini-2024-07-18\",\"choices\":[],\"usage\":{\"prompt_tokens\":120,\"completion_tokens\":30,\"total_tokens\":150}}\n\ndata: [DONE]\n\n");
    out.into_bytes()
}
