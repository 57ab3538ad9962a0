//! The local provider: the loopback test server of `agentkit-http`
//! answering Chat Completions requests in today's OpenAI stream format,
//! from the conversation it is sent. A user message gets a sentence and a
//! `job` call (a fresh call id each time, so every tool run is counted
//! apart), the tool's result gets the final answer.

use agentkit_http::testing::{ChatStream, RecordedRequest, ScriptedResponse, TestServer};
use std::sync::atomic::{AtomicUsize, Ordering};

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
    if after_tool {
        let mut stream = ChatStream::new();
        for word in ["The", " job", " is", " done", "."] {
            stream = stream.text(word);
        }
        return stream.finish("stop", 120, 30);
    }
    let mut stream = ChatStream::new();
    for word in ["Let", " me", " run", " the", " \"job\"", " caf\u{e9}", "."] {
        stream = stream.text(word);
    }
    let id = calls.fetch_add(1, Ordering::Relaxed);
    stream
        .tool_call(&format!("call_{id:06}"), "job", &["{}"])
        .finish("tool_calls", 120, 30)
}
