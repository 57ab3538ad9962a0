//! Recovery from context-length errors, against a real HTTP server speaking
//! the OpenAI wire format through the real adapter: the server refuses any
//! request larger than its "context window" with the error OpenAI sends,
//! and the session recovers without the host doing anything.

use agentkit_compaction::{CompactionTrigger, Compactor};
use agentkit_core::{
    FinishReason, Item, ItemKind, Part, ToolCallPart, ToolResultPart, validate_transcript,
};
use agentkit_loop::{
    Agent, AgentEvent, LoopError, LoopInterrupt, LoopObserver, LoopStep, ModelErrorKind,
    SessionConfig,
};
use agentkit_provider_openai::{OpenAiAdapter, OpenAiConfig};
use serde_json::json;
use std::sync::{Arc, Mutex};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpListener;

const REFUSAL: &str = r#"{"error":{"message":"This model's maximum context length is 8192 tokens. However, your messages resulted in 20000 tokens. Please reduce the length of the messages.","type":"invalid_request_error","param":"messages","code":"context_length_exceeded"}}"#;

const ANSWER: &str = concat!(
    "data: {\"id\":\"chatcmpl-1\",\"object\":\"chat.completion.chunk\",\"created\":1,\"model\":\"m\",\"choices\":[{\"index\":0,\"delta\":{\"role\":\"assistant\",\"content\":\"recovered\"},\"finish_reason\":null}]}\n\n",
    "data: {\"id\":\"chatcmpl-1\",\"object\":\"chat.completion.chunk\",\"created\":1,\"model\":\"m\",\"choices\":[{\"index\":0,\"delta\":{},\"finish_reason\":\"stop\"}]}\n\n",
    "data: [DONE]\n\n",
);

/// A server on 127.0.0.1 that refuses bodies above `window` bytes and
/// answers the others; it records every body size. Stops with the test.
async fn server(window: usize) -> (String, Arc<Mutex<Vec<usize>>>) {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/v1", listener.local_addr().unwrap());
    let sizes = Arc::new(Mutex::new(Vec::new()));
    let seen = sizes.clone();
    tokio::spawn(async move {
        loop {
            let Ok((mut socket, _)) = listener.accept().await else {
                return;
            };
            let seen = seen.clone();
            tokio::spawn(async move {
                let mut buffer = Vec::new();
                let mut chunk = [0u8; 16 * 1024];
                let (head_end, length) = loop {
                    let n = socket.read(&mut chunk).await.unwrap_or(0);
                    if n == 0 {
                        return;
                    }
                    buffer.extend_from_slice(&chunk[..n]);
                    if let Some(end) = buffer.windows(4).position(|w| w == b"\r\n\r\n") {
                        let head = String::from_utf8_lossy(&buffer[..end]).to_ascii_lowercase();
                        let length = head
                            .lines()
                            .find_map(|l| l.strip_prefix("content-length:"))
                            .and_then(|v| v.trim().parse::<usize>().ok())
                            .unwrap_or(0);
                        break (end + 4, length);
                    }
                };
                while buffer.len() < head_end + length {
                    let n = socket.read(&mut chunk).await.unwrap_or(0);
                    if n == 0 {
                        return;
                    }
                    buffer.extend_from_slice(&chunk[..n]);
                }
                seen.lock().unwrap().push(length);
                let response = if length > window {
                    format!(
                        "HTTP/1.1 400 Bad Request\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{REFUSAL}",
                        REFUSAL.len()
                    )
                } else {
                    format!(
                        "HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{ANSWER}",
                        ANSWER.len()
                    )
                };
                let _ = socket.write_all(response.as_bytes()).await;
                let _ = socket.shutdown().await;
            });
        }
    });
    (url, sizes)
}

/// A long coding session: 30 tool rounds with 2 KB outputs.
fn history() -> Vec<Item> {
    let mut items = vec![Item::system("You are a coding agent.")];
    for i in 0..30 {
        let id = format!("call_{i}");
        items.push(Item::user(format!("look at file {i}")));
        items.push(Item::new(
            ItemKind::Assistant,
            vec![Part::ToolCall(ToolCallPart::new(
                id.clone(),
                "read_file",
                json!({ "path": format!("src/m{i}.rs") }),
            ))],
        ));
        items.push(Item::tool_result(ToolResultPart::success(
            id,
            "let x = 1;\n".repeat(200),
        )));
        items.push(Item::assistant(format!("file {i} is fine")));
    }
    items
}

#[derive(Default, Clone)]
struct Events(Arc<Mutex<Vec<AgentEvent>>>);

impl LoopObserver for Events {
    fn handle_event(&self, event: AgentEvent) {
        self.0.lock().unwrap().push(event);
    }
}

fn agent(url: &str, events: Events) -> Agent<OpenAiAdapter> {
    let adapter = OpenAiAdapter::new(OpenAiConfig::compatible(url, "m")).unwrap();
    Agent::builder()
        .model(adapter)
        // The compactor's own budget is generous: only the provider's
        // refusal makes it act.
        .compaction(Compactor::new(CompactionTrigger::Tokens(1_000_000)))
        .observer(events)
        .transcript(history())
        .input(vec![Item::user("and now?")])
        .build()
        .unwrap()
}

#[tokio::test]
async fn a_context_length_error_compacts_and_retries_without_the_host() {
    let (url, sizes) = server(30_000).await;
    let events = Events::default();
    let mut driver = agent(&url, events.clone())
        .start(SessionConfig::new("s"))
        .await
        .unwrap();
    let LoopStep::Finished(result) = driver.next().await.unwrap() else {
        panic!("the turn should finish")
    };
    assert_eq!(result.finish_reason, FinishReason::Completed);
    assert_eq!(result.items.last().unwrap().text_content(), "recovered");
    let sizes = sizes.lock().unwrap().clone();
    assert_eq!(sizes.len(), 2, "one refused request, one retry: {sizes:?}");
    assert!(sizes[0] > 30_000 && sizes[1] <= 30_000, "{sizes:?}");
    validate_transcript(&driver.transcript().to_vec()).unwrap();
    let forced: Vec<_> = events
        .0
        .lock()
        .unwrap()
        .iter()
        .filter_map(|e| match e {
            AgentEvent::CompactionApplied { report, .. } => Some(report.clone()),
            _ => None,
        })
        .collect();
    assert_eq!(forced.len(), 1);
    assert!(forced[0].tokens_after < forced[0].tokens_before);
}

#[tokio::test]
async fn still_too_long_after_compaction_ends_the_turn_with_a_typed_error() {
    // A window nothing fits in.
    let (url, sizes) = server(100).await;
    let events = Events::default();
    let mut driver = agent(&url, events.clone())
        .start(SessionConfig::new("s"))
        .await
        .unwrap();
    let err = driver.next().await.unwrap_err();
    match err {
        LoopError::Model(model) => assert_eq!(model.kind, ModelErrorKind::ContextLengthExceeded),
        other => panic!("unexpected {other:?}"),
    }
    assert_eq!(sizes.lock().unwrap().len(), 2, "retried exactly once");
    validate_transcript(&driver.transcript().to_vec()).unwrap();
    assert!(events.0.lock().unwrap().iter().any(|e| matches!(
        e,
        AgentEvent::TurnFinished { result } if result.finish_reason == FinishReason::Error
    )));
    // The driver is usable: it waits for the next input.
    assert!(matches!(
        driver.next().await.unwrap(),
        LoopStep::Interrupt(LoopInterrupt::AwaitingInput(_))
    ));
}
