//! The Bedrock adapter against a real HTTP server on 127.0.0.1 (axum)
//! answering in the binary event-stream ConverseStream uses, frames encoded
//! with the crate's own CRC: the SigV4 header the server re-derives, text,
//! a tool round trip, reasoning with its signature, cached-token usage,
//! exceptions mid-stream, HTTP errors and reads of 1, 7 and 4096 bytes.

use agentkit_core::{FinishReason, Item, ItemKind, Part, ToolResultPart, TurnId};
use agentkit_http::testing::ScriptedResponse;
use agentkit_http::{HttpConfig, RetryPolicy};
use agentkit_loop::{
    ModelAdapter, ModelError, ModelErrorKind, ModelSession, ModelTurn, ModelTurnEvent,
    SessionConfig, TranscriptView, TurnRequest,
};
use agentkit_provider_bedrock::eventstream::encode_frame;
use agentkit_provider_bedrock::sigv4::{Credentials, SignRequest, authorization};
use agentkit_provider_bedrock::{BedrockAdapter, BedrockConfig, BedrockTurn, ToolChoice};
use agentkit_testkit::adapter::{Outcome, read_to_end};
use agentkit_tools_core::ToolSpec;
use axum::body::{Body, Bytes};
use axum::http::{HeaderMap, StatusCode, Uri};
use axum::response::Response;
use futures::StreamExt;
use serde_json::{Value, json};
use std::collections::VecDeque;
use std::sync::{Arc, Mutex};
use std::time::Duration;

const MODEL: &str = "us.anthropic.claude-3-7-sonnet-20250219-v1:0";

fn credentials() -> Credentials {
    Credentials {
        access_key_id: "AKIDTEST".into(),
        secret_access_key: "secret/KEY+test".into(),
        session_token: Some("session-token".into()),
    }
}

/// What the server answers: status, `x-amzn-ErrorType`, body, piece size.
struct Reply {
    status: u16,
    error_type: Option<&'static str>,
    body: Vec<u8>,
    piece: usize,
}

fn events(frames: &[(&str, Value)]) -> Reply {
    let mut body = Vec::new();
    for (name, payload) in frames {
        body.extend(encode_frame(
            &[
                (":event-type", name),
                (":content-type", "application/json"),
                (":message-type", "event"),
            ],
            payload.to_string().as_bytes(),
        ));
    }
    Reply {
        status: 200,
        error_type: None,
        body,
        piece: 4096,
    }
}

#[derive(Clone, Debug)]
struct Seen {
    path: String,
    headers: HeaderMap,
    body: Value,
    /// The server's own SigV4 over what it received equals the header.
    signature_ok: bool,
}

#[derive(Default)]
struct State {
    replies: Mutex<VecDeque<Reply>>,
    seen: Mutex<Vec<Seen>>,
}

async fn handle(
    axum::extract::State(state): axum::extract::State<Arc<State>>,
    uri: Uri,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    let header = |name: &str| {
        headers
            .get(name)
            .and_then(|v| v.to_str().ok())
            .unwrap_or("")
    };
    // Re-sign what arrived: the canonical path encodes each segment again.
    let canonical: Vec<String> = uri
        .path()
        .split('/')
        .map(|s| s.replace('%', "%25"))
        .collect();
    let signed = [
        ("content-type", header("content-type")),
        ("host", header("host")),
        ("x-amz-date", header("x-amz-date")),
        ("x-amz-security-token", header("x-amz-security-token")),
    ];
    let expected = authorization(
        &credentials(),
        &SignRequest {
            method: "POST",
            path: &canonical.join("/"),
            query: "",
            headers: &signed,
            body: &body,
        },
        header("x-amz-date"),
        "us-east-1",
        "bedrock",
    );
    state.seen.lock().unwrap().push(Seen {
        path: uri.path().to_owned(),
        signature_ok: expected == header("authorization"),
        headers: headers.clone(),
        body: serde_json::from_slice(&body).unwrap_or(Value::Null),
    });
    let reply = state
        .replies
        .lock()
        .unwrap()
        .pop_front()
        .expect("a scripted reply");
    let pieces: Vec<Result<Bytes, std::io::Error>> = reply
        .body
        .chunks(reply.piece)
        .map(|c| Ok(Bytes::copy_from_slice(c)))
        .collect();
    let mut response = Response::builder()
        .status(StatusCode::from_u16(reply.status).unwrap())
        .header("content-type", "application/vnd.amazon.eventstream");
    if let Some(kind) = reply.error_type {
        response = response.header("x-amzn-ErrorType", kind);
    }
    response
        .body(Body::from_stream(futures::stream::iter(pieces)))
        .unwrap()
}

struct Server {
    url: String,
    state: Arc<State>,
    task: tokio::task::JoinHandle<()>,
}

impl Drop for Server {
    fn drop(&mut self) {
        self.task.abort();
    }
}

async fn server(replies: Vec<Reply>) -> Server {
    let state = Arc::new(State {
        replies: Mutex::new(replies.into()),
        seen: Mutex::default(),
    });
    let app = axum::Router::new()
        .route("/model/{id}/converse-stream", axum::routing::post(handle))
        .with_state(state.clone());
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    let task = tokio::spawn(async move {
        axum::serve(listener, app).await.unwrap();
    });
    Server { url, state, task }
}

impl Server {
    fn seen(&self) -> Vec<Seen> {
        self.state.seen.lock().unwrap().clone()
    }
}

fn adapter(server: &Server, model: &str) -> BedrockAdapter {
    let config = BedrockConfig::new("us-east-1", model)
        .with_base_url(&server.url)
        .with_credentials(credentials())
        .with_max_tokens(512)
        .with_http(
            HttpConfig::default()
                .with_idle_timeout(Duration::from_secs(30))
                .with_retry(RetryPolicy::none()),
        );
    BedrockAdapter::new(config).unwrap()
}

fn request(items: Vec<Item>) -> TurnRequest {
    let mut request = TurnRequest::new("s", TurnId::new("t"), TranscriptView::from_items(items));
    let spec = ToolSpec::new(
        "read_file",
        "Reads a file.",
        json!({"type": "object", "properties": {"path": {"type": "string"}}, "required": ["path"]}),
    )
    .unwrap();
    request.available_tools = vec![Arc::new(spec)].into();
    request
}

/// Reads `turn` to its end; a stream that fails mid-way is an `Err`.
async fn drain(turn: BedrockTurn) -> Result<Outcome, ModelError> {
    let mut outcome = read_to_end(turn).await;
    match outcome.error.take() {
        Some(error) => Err(error),
        None => Ok(outcome),
    }
}

async fn run(adapter: &BedrockAdapter, request: TurnRequest) -> Result<Outcome, ModelError> {
    let mut session = adapter.start_session(SessionConfig::new("s")).await?;
    drain(session.begin_turn(request).await?).await
}

fn text_turn() -> Reply {
    events(&[
        ("messageStart", json!({"role": "assistant"})),
        (
            "contentBlockDelta",
            json!({"contentBlockIndex": 0, "delta": {"text": "Bon"}}),
        ),
        (
            "contentBlockDelta",
            json!({"contentBlockIndex": 0, "delta": {"text": "jour"}}),
        ),
        ("contentBlockStop", json!({"contentBlockIndex": 0})),
        ("messageStop", json!({"stopReason": "end_turn"})),
        (
            "metadata",
            json!({"usage": {"inputTokens": 10, "outputTokens": 3, "totalTokens": 1213,
            "cacheReadInputTokens": 1000, "cacheWriteInputTokens": 200}, "metrics": {"latencyMs": 90}}),
        ),
    ])
}

#[tokio::test]
async fn a_text_turn_is_signed_and_counts_cached_tokens() {
    let server = server(vec![text_turn()]).await;
    let image = Part::Media(agentkit_core::MediaPart::image("image/png", vec![1, 2, 3]));
    let items = vec![
        Item::system("Be brief."),
        Item::new(ItemKind::User, vec![Part::text("Say hello."), image]),
    ];
    let outcome = run(&adapter(&server, MODEL), request(items)).await.unwrap();
    assert_eq!(outcome.parts().len(), 1);
    assert_eq!(outcome.parts()[0].as_text(), Some("Bonjour"));
    let usage = outcome.usage().unwrap();
    assert_eq!(
        (
            usage.input_tokens,
            usage.output_tokens,
            usage.cache_read_tokens,
            usage.cache_write_tokens
        ),
        (1210, 3, 1000, 200)
    );
    let finished = outcome.finished().unwrap();
    assert_eq!(finished.finish_reason, FinishReason::Completed);
    assert_eq!(finished.metadata["bedrock.stop_reason"], "end_turn");

    let seen = &server.seen()[0];
    assert_eq!(
        seen.path,
        "/model/us.anthropic.claude-3-7-sonnet-20250219-v1%3A0/converse-stream"
    );
    let auth = seen.headers["authorization"].to_str().unwrap();
    let date = seen.headers["x-amz-date"].to_str().unwrap();
    assert!(
        auth.starts_with(&format!(
            "AWS4-HMAC-SHA256 Credential=AKIDTEST/{}/us-east-1/bedrock/aws4_request, \
             SignedHeaders=content-type;host;x-amz-date;x-amz-security-token, Signature=",
            &date[..8]
        )),
        "{auth}"
    );
    assert_eq!(auth.rsplit('=').next().unwrap().len(), 64);
    assert!(seen.signature_ok, "the server's own SigV4 differs: {auth}");
    assert_eq!(seen.headers["x-amz-security-token"], "session-token");
    assert_eq!(seen.body["system"], json!([{"text": "Be brief."}]));
    assert_eq!(seen.body["inferenceConfig"], json!({"maxTokens": 512}));
    assert_eq!(
        seen.body["messages"],
        json!([{"role": "user", "content": [{"text": "Say hello."},
            {"image": {"format": "png", "source": {"bytes": "AQID"}}}]}])
    );
}

#[tokio::test]
async fn a_tool_call_streams_its_input_and_its_result_goes_back() {
    let server = server(vec![
        events(&[
            ("messageStart", json!({"role": "assistant"})),
            ("contentBlockDelta", json!({"contentBlockIndex": 0, "delta": {"text": "Reading."}})),
            ("contentBlockStop", json!({"contentBlockIndex": 0})),
            ("contentBlockStart", json!({"contentBlockIndex": 1,
                "start": {"toolUse": {"toolUseId": "tooluse_abc", "name": "read_file"}}})),
            ("contentBlockDelta", json!({"contentBlockIndex": 1, "delta": {"toolUse": {"input": "{\"pa"}}})),
            ("contentBlockDelta", json!({"contentBlockIndex": 1, "delta": {"toolUse": {"input": "th\": \"a.txt\"}"}}})),
            ("contentBlockStop", json!({"contentBlockIndex": 1})),
            ("messageStop", json!({"stopReason": "tool_use"})),
            ("metadata", json!({"usage": {"inputTokens": 50, "outputTokens": 20}})),
        ]),
        text_turn(),
    ])
    .await;
    let config = BedrockConfig::new("us-east-1", "amazon.nova-pro-v1:0")
        .with_base_url(&server.url)
        .with_credentials(credentials())
        .with_tool_choice(ToolChoice::Required)
        .with_http(HttpConfig::default().with_retry(RetryPolicy::none()));
    let adapter = BedrockAdapter::new(config).unwrap();
    let mut items = vec![Item::user("Read a.txt")];
    let first = run(&adapter, request(items.clone())).await.unwrap();
    assert_eq!(
        first.finished().unwrap().finish_reason,
        FinishReason::ToolCall
    );
    let calls = first.tool_calls();
    assert_eq!(calls.len(), 1);
    let call = calls[0].clone();
    assert_eq!(
        (call.id.as_str(), &*call.name),
        ("tooluse_abc", "read_file")
    );
    assert_eq!(call.input, json!({"path": "a.txt"}));

    let mut parts = first.parts();
    parts.push(Part::ToolCall(call));
    items.push(Item::new(ItemKind::Assistant, parts));
    items.push(Item::tool_result(ToolResultPart::success(
        "tooluse_abc",
        "hello",
    )));
    let second = run(&adapter, request(items)).await.unwrap();
    assert_eq!(
        second.finished().unwrap().finish_reason,
        FinishReason::Completed
    );

    let seen = server.seen();
    assert_eq!(
        seen[0].body["toolConfig"],
        json!({"tools": [{"toolSpec": {"name": "read_file", "description": "Reads a file.",
            "inputSchema": {"json": {"type": "object", "properties": {"path": {"type": "string"}},
            "required": ["path"]}}}}], "toolChoice": {"any": {}}})
    );
    assert_eq!(
        seen[1].body["messages"][1],
        json!({"role": "assistant", "content": [{"text": "Reading."},
            {"toolUse": {"toolUseId": "tooluse_abc", "name": "read_file", "input": {"path": "a.txt"}}}]})
    );
    assert_eq!(
        seen[1].body["messages"][2],
        json!({"role": "user", "content": [{"toolResult": {"toolUseId": "tooluse_abc",
            "content": [{"text": "hello"}], "status": "success"}}]})
    );
    assert!(seen[1].path.contains("amazon.nova-pro-v1%3A0"));
}

#[tokio::test]
async fn reasoning_keeps_its_signature_and_goes_back_to_anthropic_only() {
    let reasoning = || {
        events(&[
            ("messageStart", json!({"role": "assistant"})),
            (
                "contentBlockDelta",
                json!({"contentBlockIndex": 0, "delta": {"reasoningContent": {"text": "Think"}}}),
            ),
            (
                "contentBlockDelta",
                json!({"contentBlockIndex": 0, "delta": {"reasoningContent": {"text": "ing."}}}),
            ),
            (
                "contentBlockDelta",
                json!({"contentBlockIndex": 0, "delta": {"reasoningContent": {"signature": "c2ln"}}}),
            ),
            ("contentBlockStop", json!({"contentBlockIndex": 0})),
            (
                "contentBlockDelta",
                json!({"contentBlockIndex": 1, "delta": {"text": "Done."}}),
            ),
            ("contentBlockStop", json!({"contentBlockIndex": 1})),
            ("messageStop", json!({"stopReason": "max_tokens"})),
            (
                "metadata",
                json!({"usage": {"inputTokens": 5, "outputTokens": 9}}),
            ),
        ])
    };
    let server = server(vec![reasoning(), text_turn(), text_turn()]).await;
    let config = |model: &str| {
        BedrockConfig::new("us-east-1", model)
            .with_base_url(&server.url)
            .with_credentials(credentials())
            .with_thinking(2048)
            .with_http(HttpConfig::default().with_retry(RetryPolicy::none()))
    };
    let anthropic = BedrockAdapter::new(config(MODEL)).unwrap();
    let mut items = vec![Item::user("Think.")];
    let first = run(&anthropic, request(items.clone())).await.unwrap();
    assert_eq!(
        first.finished().unwrap().finish_reason,
        FinishReason::MaxTokens
    );
    let Part::Reasoning(r) = &first.parts()[0] else {
        panic!("{:?}", first.parts());
    };
    assert_eq!(
        (r.summary.as_deref(), r.signature.as_deref()),
        (Some("Thinking."), Some("c2ln"))
    );
    assert_eq!(first.parts()[1].as_text(), Some("Done."));
    items.push(Item::new(ItemKind::Assistant, first.parts()));
    items.push(Item::user("Go on."));
    run(&anthropic, request(items.clone())).await.unwrap();
    let llama = BedrockAdapter::new(config("meta.llama3-3-70b-instruct-v1:0")).unwrap();
    run(&llama, request(items)).await.unwrap();

    let seen = server.seen();
    let thinking = json!({"thinking": {"type": "enabled", "budget_tokens": 2048}});
    assert_eq!(seen[0].body["additionalModelRequestFields"], thinking);
    assert_eq!(
        seen[1].body["messages"][1]["content"][0],
        json!({"reasoningContent": {"reasoningText": {"text": "Thinking.", "signature": "c2ln"}}})
    );
    // Llama is asked for no thinking; the signed reasoning still goes back
    // only as Bedrock gave it.
    assert_eq!(seen[2].body.get("additionalModelRequestFields"), None);
}

fn exception(name: &str, message: &str) -> Vec<u8> {
    encode_frame(
        &[(":exception-type", name), (":message-type", "exception")],
        json!({ "message": message }).to_string().as_bytes(),
    )
}

/// One row per exception arriving mid-stream, after a first text delta.
#[tokio::test]
async fn exceptions_mid_stream_are_typed() {
    let cases = [
        (
            "throttlingException",
            "Too many tokens",
            ModelErrorKind::RateLimited,
            true,
        ),
        (
            "modelStreamErrorException",
            "model failed",
            ModelErrorKind::Server,
            true,
        ),
        (
            "serviceUnavailableException",
            "busy",
            ModelErrorKind::Overloaded,
            true,
        ),
        (
            "validationException",
            "Input is too long for requested model.",
            ModelErrorKind::ContextLengthExceeded,
            false,
        ),
        (
            "validationException",
            "bad field",
            ModelErrorKind::InvalidRequest,
            false,
        ),
        (
            "internalServerException",
            "oops",
            ModelErrorKind::Server,
            true,
        ),
    ];
    for (name, message, kind, retryable) in cases {
        let mut reply = events(&[
            ("messageStart", json!({"role": "assistant"})),
            (
                "contentBlockDelta",
                json!({"contentBlockIndex": 0, "delta": {"text": "Hi"}}),
            ),
        ]);
        reply.body.extend(exception(name, message));
        let server = server(vec![reply]).await;
        let error = run(&adapter(&server, MODEL), request(vec![Item::user("x")]))
            .await
            .unwrap_err();
        assert_eq!(
            (error.kind, error.is_retryable()),
            (kind, retryable),
            "{name}: {error}"
        );
        assert!(error.message.contains(message), "{error}");
    }
}

/// One row per refused request.
#[tokio::test]
async fn http_errors_are_typed() {
    let cases = [
        (
            400,
            "ValidationException:http://internal.amazon.com/coral/com.amazon.bedrock/",
            "The model returned the following errors: prompt is too long: 210000 tokens > 200000 maximum",
            ModelErrorKind::ContextLengthExceeded,
        ),
        (
            400,
            "ValidationException",
            "Malformed input request",
            ModelErrorKind::InvalidRequest,
        ),
        (
            403,
            "AccessDeniedException",
            "You don't have access to the model",
            ModelErrorKind::Authentication,
        ),
        (
            403,
            "",
            "The security token included in the request is invalid.",
            ModelErrorKind::Authentication,
        ),
        (
            429,
            "ThrottlingException",
            "Too many requests",
            ModelErrorKind::RateLimited,
        ),
        (
            404,
            "ResourceNotFoundException",
            "Model not found",
            ModelErrorKind::InvalidRequest,
        ),
        (
            503,
            "ServiceUnavailableException",
            "Service unavailable",
            ModelErrorKind::Overloaded,
        ),
        (
            500,
            "InternalServerException",
            "internal",
            ModelErrorKind::Server,
        ),
    ];
    for (status, error_type, message, kind) in cases {
        let reply = Reply {
            status,
            error_type: (!error_type.is_empty()).then_some(error_type),
            body: json!({ "message": message }).to_string().into_bytes(),
            piece: 4096,
        };
        let server = server(vec![reply]).await;
        let error = run(&adapter(&server, MODEL), request(vec![Item::user("x")]))
            .await
            .unwrap_err();
        assert_eq!(
            (error.kind, error.status),
            (kind, Some(status)),
            "{error_type}: {error}"
        );
        assert!(error.message.contains(message), "{error}");
    }
}

/// The same answer in reads of 1, 7 and 4096 bytes, over the network and
/// replayed piece by piece.
#[tokio::test]
async fn any_read_size_gives_the_same_turn() {
    for piece in [1, 7, 4096] {
        let mut reply = text_turn();
        reply.piece = piece;
        let bytes = reply.body.clone();
        let server = server(vec![reply]).await;
        let outcome = run(&adapter(&server, MODEL), request(vec![Item::user("x")]))
            .await
            .unwrap();
        assert_eq!(
            outcome.parts()[0].as_text(),
            Some("Bonjour"),
            "piece {piece}"
        );
        let pieces: Vec<Result<Vec<u8>, String>> =
            bytes.chunks(piece).map(|c| Ok(c.to_vec())).collect();
        let replayed = drain(BedrockTurn::from_byte_stream(
            futures::stream::iter(pieces).boxed(),
        ))
        .await
        .unwrap();
        assert_eq!(
            replayed.parts()[0].as_text(),
            Some("Bonjour"),
            "piece {piece}"
        );
        assert_eq!(replayed.usage().unwrap().output_tokens, 3);
    }
    // Cut inside a frame: a protocol error, not a silent end.
    let bytes = text_turn().body;
    let cut = vec![Ok(bytes[..bytes.len() - 5].to_vec())];
    let error = drain(BedrockTurn::from_byte_stream(
        futures::stream::iter(cut).boxed(),
    ))
    .await
    .unwrap_err();
    assert_eq!(error.kind, ModelErrorKind::Protocol);
}

/// A throttled request is retried by the shared HTTP client before the
/// stream begins, signed again for its own send time, and the retry is
/// reported as a warning of the turn.
#[tokio::test]
async fn a_throttled_request_is_signed_again_and_retried() {
    let throttled = Reply {
        status: 429,
        error_type: Some("ThrottlingException"),
        body: json!({ "message": "Too many requests" })
            .to_string()
            .into_bytes(),
        piece: 4096,
    };
    let server = server(vec![throttled, text_turn()]).await;
    let config = BedrockConfig::new("us-east-1", MODEL)
        .with_base_url(&server.url)
        .with_credentials(credentials())
        .with_http(
            HttpConfig::default().with_retry(
                RetryPolicy::default()
                    .with_max_attempts(2)
                    .with_backoff(Duration::from_millis(1), Duration::from_millis(2)),
            ),
        );
    let adapter = BedrockAdapter::new(config).unwrap();
    let mut session = adapter
        .start_session(SessionConfig::new("s"))
        .await
        .unwrap();
    let mut turn = session
        .begin_turn(request(vec![Item::user("x")]))
        .await
        .unwrap();
    let first = turn.next_event().await.unwrap();
    match first {
        Some(ModelTurnEvent::Warning(text)) => {
            assert!(text.starts_with("bedrock: "), "{text}");
            assert!(text.contains("Too many requests"), "{text}");
        }
        other => panic!("expected the retry's warning, got {other:?}"),
    }
    let outcome = drain(turn).await.unwrap();
    assert_eq!(outcome.parts()[0].as_text(), Some("Bonjour"));
    let seen = server.seen();
    assert_eq!(seen.len(), 2);
    assert!(
        seen.iter().all(|s| s.signature_ok),
        "every attempt is signed"
    );
    assert!(
        seen.iter()
            .all(|s| s.headers.get_all("content-type").iter().count() == 1),
        "one content type per attempt"
    );
}

/// Cancelling is dropping the turn: the signed event-stream request's
/// connection closes with it.
#[tokio::test]
async fn dropping_a_turn_mid_stream_closes_the_connection() {
    let first = events(&[
        ("messageStart", json!({"role": "assistant"})),
        (
            "contentBlockDelta",
            json!({"contentBlockIndex": 0, "delta": {"text": "Bon"}}),
        ),
    ]);
    let mut response = ScriptedResponse::sse(first.body);
    response.headers = vec![(
        "content-type".into(),
        "application/vnd.amazon.eventstream".into(),
    )];
    agentkit_testkit::assert_dropping_a_turn_closes_the_connection(response, |url| {
        let config = BedrockConfig::new("us-east-1", MODEL)
            .with_base_url(url)
            .with_credentials(credentials());
        BedrockAdapter::new(config).unwrap()
    })
    .await;
}
