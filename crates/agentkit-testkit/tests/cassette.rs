//! Recording through the proxy and replaying from the file give the client
//! the same bytes, with credentials gone from the file.

use agentkit_http::testing::{ScriptedResponse, TestServer};
use agentkit_http::{HttpClient, HttpConfig, RetryPolicy, StreamRequest};
use agentkit_testkit::cassette::{Cassette, CassetteMismatch, CassetteRecorder, REDACTED};
use serde_json::json;

const EVENTS: &str =
    ": keep-alive\r\n\r\ndata: {\"text\":\"caf\u{e9} \u{1F30D}\"}\r\n\r\ndata: [DONE]\r\n\r\n";

async fn stream(url: &str, body: serde_json::Value) -> Vec<String> {
    let client = HttpClient::new(HttpConfig::default().with_retry(RetryPolicy::none())).unwrap();
    let request = StreamRequest::json(format!("{url}/v1/stream"), &body)
        .with_header("authorization", "Bearer sk-live-secret");
    let mut response = client.post_sse(request).await.unwrap();
    let mut data = Vec::new();
    while let Some(event) = response.events.next_event().await.unwrap() {
        data.push(event.data);
    }
    data
}

#[tokio::test]
async fn a_recorded_exchange_replays_byte_for_byte_without_secrets() {
    let upstream = TestServer::start([
        ScriptedResponse::sse(EVENTS).split_every(5),
        ScriptedResponse::sse("data: second\n\n"),
    ])
    .await
    .unwrap();
    let recorder = CassetteRecorder::start(upstream.url()).await.unwrap();
    let live = stream(recorder.url(), json!({"q": 1, "user": "sk-live-secret"})).await;
    let live_second = stream(recorder.url(), json!({"q": 2})).await;
    assert_eq!(live, ["{\"text\":\"café 🌍\"}", "[DONE]"]);
    // The upstream saw the real credentials.
    assert_eq!(
        upstream.requests()[0].header("authorization"),
        Some("Bearer sk-live-secret")
    );

    let cassette = recorder.cassette(&["sk-live-secret"]).unwrap();
    assert_eq!(cassette.interactions.len(), 2);
    assert_eq!(
        cassette.interactions[0].response.body, EVENTS,
        "raw bytes kept"
    );
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("cassettes/exchange.json");
    cassette.save(&path).unwrap();
    let text = std::fs::read_to_string(&path).unwrap();
    assert!(!text.contains("sk-live-secret"), "{text}");
    assert!(text.contains(REDACTED));

    let loaded = Cassette::load(&path).unwrap();
    assert_eq!(loaded, cassette);
    let replay = loaded.serve().await.unwrap();
    assert_eq!(
        stream(replay.url(), json!({"q": 1, "user": "anything"})).await,
        live
    );
    assert_eq!(stream(replay.url(), json!({"q": 2})).await, live_second);
    replay.check_requests().unwrap();

    let replay = loaded.serve().await.unwrap();
    stream(replay.url(), json!({"q": 3})).await;
    assert_eq!(
        replay.check_requests(),
        Err(CassetteMismatch::Count {
            recorded: 2,
            received: 1
        })
    );
    let replay = loaded.serve().await.unwrap();
    stream(replay.url(), json!({"q": 3, "user": "x"})).await;
    stream(replay.url(), json!({"q": 2})).await;
    assert!(matches!(
        replay.check_requests(),
        Err(CassetteMismatch::Body { index: 0, ref pointer, .. }) if pointer == "/q"
    ));
}
