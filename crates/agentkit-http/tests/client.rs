//! The client against a real HTTP server on 127.0.0.1: retries, timeouts,
//! cancellation and stream decoding over an actual socket.

use agentkit_http::testing::{Ending, ScriptedResponse, TestServer};
use agentkit_http::{
    HttpClient, HttpConfig, ProviderError, ProviderErrorKind, RetryPolicy, SseEvent, StreamRequest,
    StreamResponse,
};
use serde_json::json;
use std::future::Future;
use std::time::{Duration, Instant};

const LIMIT: Duration = Duration::from_secs(20);

async fn within<T>(future: impl Future<Output = T>) -> T {
    tokio::time::timeout(LIMIT, future)
        .await
        .expect("the test finished in time")
}

fn client(retry: RetryPolicy) -> HttpClient {
    HttpClient::new(
        HttpConfig::default()
            .with_idle_timeout(Duration::from_millis(500))
            .with_connect_timeout(Duration::from_secs(2))
            .with_retry(retry),
    )
    .expect("client builds")
}

fn fast_retries() -> RetryPolicy {
    RetryPolicy::default()
        .with_max_attempts(3)
        .with_backoff(Duration::from_millis(10), Duration::from_millis(40))
}

fn request(server: &TestServer) -> StreamRequest {
    StreamRequest::json(
        format!("{}/v1/stream", server.url()),
        &json!({"hello": "world"}),
    )
    .with_header("x-test", "yes")
}

async fn drain(response: &mut StreamResponse) -> Result<Vec<SseEvent>, ProviderError> {
    let mut events = Vec::new();
    while let Some(event) = response.events.next_event().await? {
        events.push(event);
    }
    Ok(events)
}

const OK_BODY: &str = "data: one\n\ndata: two\n\n";

#[tokio::test]
async fn sends_the_body_and_headers_and_decodes_events() {
    let server =
        TestServer::start([ScriptedResponse::sse(OK_BODY).with_header("x-request-id", "req-1")])
            .await
            .unwrap();
    let mut response = within(client(fast_retries()).post_sse(request(&server)))
        .await
        .unwrap();
    assert_eq!(response.status, 200);
    assert_eq!(response.request_id.as_deref(), Some("req-1"));
    assert!(response.retries.is_empty());
    let data: Vec<String> = within(drain(&mut response))
        .await
        .unwrap()
        .into_iter()
        .map(|e| e.data)
        .collect();
    assert_eq!(data, ["one", "two"]);
    let sent = &server.requests()[0];
    assert_eq!(sent.method, "POST");
    assert_eq!(sent.path, "/v1/stream");
    assert_eq!(sent.header("x-test"), Some("yes"));
    assert_eq!(sent.header("content-type"), Some("application/json"));
    assert_eq!(sent.header("accept"), Some("text/event-stream"));
    assert_eq!(sent.json(), json!({"hello": "world"}));
}

#[tokio::test]
async fn a_utf8_character_and_crlf_split_across_reads_decode() {
    let body = "data: caf\u{e9} \u{1F30D}\r\n\r\n";
    let e_acute = body.find('\u{e9}').unwrap();
    let globe = body.find('\u{1F30D}').unwrap();
    let crlf = body.find("\r\n").unwrap();
    let script = ScriptedResponse::sse(body).split_at(&[
        e_acute + 1,
        globe + 2,
        globe + 3,
        crlf + 1,
        crlf + 3,
    ]);
    let server = TestServer::start([script]).await.unwrap();
    let mut response = within(client(fast_retries()).post_sse(request(&server)))
        .await
        .unwrap();
    let events = within(drain(&mut response)).await.unwrap();
    assert_eq!(events.len(), 1);
    assert_eq!(events[0].data, "caf\u{e9} \u{1F30D}");
}

#[tokio::test]
async fn a_429_with_retry_after_in_seconds_is_waited_out() {
    let server = TestServer::start([
        ScriptedResponse::json(
            429,
            r#"{"error":{"message":"slow down","type":"rate_limit_error"}}"#,
        )
        .with_header("retry-after", "1"),
        ScriptedResponse::sse(OK_BODY),
    ])
    .await
    .unwrap();
    let started = Instant::now();
    let mut response = within(client(fast_retries()).post_sse(request(&server)))
        .await
        .unwrap();
    assert!(
        started.elapsed() >= Duration::from_secs(1),
        "waited as asked"
    );
    assert_eq!(response.retries.len(), 1);
    let retry = &response.retries[0];
    assert_eq!(retry.attempt, 1);
    assert_eq!(retry.delay, Duration::from_secs(1));
    assert_eq!(retry.error.kind, ProviderErrorKind::RateLimited);
    assert_eq!(retry.error.status, Some(429));
    assert_eq!(retry.error.message, "slow down");
    assert_eq!(within(drain(&mut response)).await.unwrap().len(), 2);
    assert_eq!(server.requests().len(), 2);
}

#[tokio::test]
async fn a_retry_after_date_in_the_past_retries_at_once() {
    let server = TestServer::start([
        ScriptedResponse::json(503, "{}")
            .with_header("retry-after", "Wed, 21 Oct 2015 07:28:00 GMT"),
        ScriptedResponse::sse(OK_BODY),
    ])
    .await
    .unwrap();
    let response = within(client(fast_retries()).post_sse(request(&server)))
        .await
        .unwrap();
    assert_eq!(response.retries[0].delay, Duration::ZERO);
    assert_eq!(response.retries[0].error.kind, ProviderErrorKind::Server);
}

#[tokio::test]
async fn server_errors_back_off_and_attempts_are_bounded() {
    let server = TestServer::start([
        ScriptedResponse::json(500, r#"{"error":{"message":"oops"}}"#),
        ScriptedResponse::json(502, "bad gateway"),
        ScriptedResponse::json(
            529,
            r#"{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}"#,
        ),
        ScriptedResponse::sse(OK_BODY),
    ])
    .await
    .unwrap();
    let err = within(client(fast_retries()).post_sse(request(&server)))
        .await
        .unwrap_err();
    assert_eq!(err.kind, ProviderErrorKind::Overloaded);
    assert_eq!(err.status, Some(529));
    assert_eq!(err.attempts, 3);
    assert_eq!(server.requests().len(), 3, "three attempts, no more");
    assert_eq!(server.remaining(), 1);
}

#[tokio::test]
async fn client_errors_are_not_retried() {
    for (status, body, kind) in [
        (
            401,
            r#"{"error":{"message":"bad key","type":"authentication_error"}}"#,
            ProviderErrorKind::Authentication,
        ),
        (
            400,
            r#"{"error":{"message":"no such field"}}"#,
            ProviderErrorKind::InvalidRequest,
        ),
    ] {
        let server = TestServer::start([
            ScriptedResponse::json(status, body),
            ScriptedResponse::sse(OK_BODY),
        ])
        .await
        .unwrap();
        let err = within(client(fast_retries()).post_sse(request(&server)))
            .await
            .unwrap_err();
        assert_eq!(err.kind, kind);
        assert_eq!(err.status, Some(status));
        assert_eq!(err.attempts, 1);
        assert_eq!(server.requests().len(), 1);
    }
}

#[tokio::test]
async fn a_connection_cut_before_the_first_byte_is_retried() {
    let server = TestServer::start([
        ScriptedResponse::sse("").ending(Ending::Abort),
        ScriptedResponse::sse(OK_BODY),
    ])
    .await
    .unwrap();
    let mut response = within(client(fast_retries()).post_sse(request(&server)))
        .await
        .unwrap();
    assert_eq!(response.retries.len(), 1);
    assert_eq!(response.retries[0].error.kind, ProviderErrorKind::Transport);
    assert_eq!(within(drain(&mut response)).await.unwrap().len(), 2);
}

#[tokio::test]
async fn a_connection_cut_after_content_is_not_retried() {
    let server = TestServer::start([
        ScriptedResponse::sse(OK_BODY).ending(Ending::Abort),
        ScriptedResponse::sse(OK_BODY),
    ])
    .await
    .unwrap();
    let mut response = within(client(fast_retries()).post_sse(request(&server)))
        .await
        .unwrap();
    let mut seen = Vec::new();
    let err = loop {
        match within(response.events.next_event()).await {
            Ok(Some(event)) => seen.push(event.data),
            Ok(None) => panic!("the cut must be reported"),
            Err(err) => break err,
        }
    };
    assert_eq!(seen, ["one", "two"]);
    assert_eq!(err.kind, ProviderErrorKind::Transport);
    assert_eq!(server.requests().len(), 1, "nothing is sent twice");
}

#[tokio::test]
async fn an_unreachable_server_is_a_transport_error_after_every_attempt() {
    let port = {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        listener.local_addr().unwrap().port()
    };
    let request = StreamRequest::json(format!("http://127.0.0.1:{port}/"), &json!({}));
    let err = within(client(fast_retries()).post_sse(request))
        .await
        .unwrap_err();
    assert_eq!(err.kind, ProviderErrorKind::Transport);
    assert_eq!(err.attempts, 3);
    assert!(err.message.contains("connect"), "{}", err.message);
}

#[tokio::test]
async fn a_silent_stream_hits_the_idle_timeout() {
    let server = TestServer::start([ScriptedResponse::sse("data: one\n\n").ending(Ending::Stall)])
        .await
        .unwrap();
    let mut response = within(client(fast_retries()).post_sse(request(&server)))
        .await
        .unwrap();
    assert_eq!(
        within(response.events.next_event())
            .await
            .unwrap()
            .unwrap()
            .data,
        "one"
    );
    let started = Instant::now();
    let err = within(response.events.next_event()).await.unwrap_err();
    assert_eq!(err.kind, ProviderErrorKind::Timeout);
    assert!(err.is_retryable());
    assert!(err.message.contains("timed out"), "{}", err.message);
    assert!(started.elapsed() < Duration::from_secs(5));
}

/// Cancelling is dropping the request: a 30 s backoff is not waited out
/// and the second scripted answer is never asked for.
#[tokio::test]
async fn dropping_the_request_during_a_backoff_stops_it() {
    let server = TestServer::start([
        ScriptedResponse::json(429, "{}").with_header("retry-after", "30"),
        ScriptedResponse::sse(OK_BODY),
    ])
    .await
    .unwrap();
    let client = client(fast_retries());
    let opening = client.post_sse(request(&server));
    let first_refused = async {
        while server.requests().is_empty() {
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
    };
    tokio::select! {
        opened = opening => panic!("the 30 s backoff ended early: {:?}", opened.err()),
        () = within(first_refused) => {}
    }
    // `opening` is dropped: nothing is left to send the retry.
    assert_eq!(server.requests().len(), 1);
    assert_eq!(server.remaining(), 1);
}

/// A server that sends one event and then stalls, and the response whose
/// first event was read.
async fn stalled_after_one_event() -> (TestServer, StreamResponse) {
    let server = TestServer::start([ScriptedResponse::sse("data: one\n\n").ending(Ending::Stall)])
        .await
        .unwrap();
    let client = HttpClient::new(HttpConfig::default().with_retry(RetryPolicy::none())).unwrap();
    let mut response = within(client.post_sse(request(&server))).await.unwrap();
    let first = within(response.events.next_event()).await.unwrap();
    assert_eq!(first.map(|event| event.data).as_deref(), Some("one"));
    (server, response)
}

/// Dropping the event stream mid-answer closes the connection: the server
/// sees its client hang up.
#[tokio::test]
async fn dropping_the_stream_mid_answer_closes_the_connection() {
    let (server, response) = stalled_after_one_event().await;
    assert_eq!(server.hung_up(), 0, "the stream is still open");
    drop(response);
    assert!(
        server.wait_for_hang_ups(1, Duration::from_secs(20)).await,
        "dropping the stream closed the connection"
    );
}

/// Cancelling a read is dropping it: a read waiting for bytes that never
/// come is dropped, then the stream, and the server sees its client hang
/// up (there is no cancellation token to hand the read).
#[tokio::test]
async fn dropping_a_waiting_read_and_its_stream_closes_the_connection() {
    let (server, mut response) = stalled_after_one_event().await;
    // The server stalls: the read waits, and is dropped while waiting.
    let waiting = futures::FutureExt::now_or_never(response.events.next_event());
    assert!(waiting.is_none(), "a stalled body has no next event");
    assert_eq!(server.hung_up(), 0, "the stream is still open");
    drop(response);
    assert!(
        server.wait_for_hang_ups(1, Duration::from_secs(20)).await,
        "dropping the read and the stream closed the connection"
    );
}

/// A client that goes away as soon as its request is sent (a turn
/// cancelled the moment its request arrived) hangs up too: the server's
/// next write fails rather than its read seeing the close, and that
/// counts. Tests that cancel "mid-stream" race with the server's writes
/// and relied on it.
#[tokio::test]
async fn a_client_gone_before_the_answer_is_written_counts_as_a_hang_up() {
    use tokio::io::AsyncWriteExt;
    let server = TestServer::start([ScriptedResponse::sse("data: one\n\ndata: two\n\n")
        .split_every(11)
        .with_pause(Duration::from_millis(100))
        .ending(Ending::Stall)])
    .await
    .unwrap();
    let address = server.url().trim_start_matches("http://").to_owned();
    let mut socket = tokio::net::TcpStream::connect(&address).await.unwrap();
    socket
        .write_all(b"POST /v1/x HTTP/1.1\r\nhost: test\r\ncontent-length: 2\r\n\r\n{}")
        .await
        .unwrap();
    within(async {
        while server.requests().is_empty() {
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
    })
    .await;
    drop(socket);
    assert!(
        server.wait_for_hang_ups(1, Duration::from_secs(20)).await,
        "a client gone before the answer counts as hanging up"
    );
}

#[tokio::test]
async fn a_json_error_with_status_200_is_reported_as_an_error() {
    let server = TestServer::start([ScriptedResponse::json(
        200,
        r#"{"error":{"message":"model is loading","type":"overloaded_error"}}"#,
    )])
    .await
    .unwrap();
    let err = within(client(fast_retries()).post_sse(request(&server)))
        .await
        .unwrap_err();
    assert_eq!(err.kind, ProviderErrorKind::Overloaded);
    assert_eq!(err.message, "model is loading");
}

#[tokio::test]
async fn a_stream_silent_before_its_first_byte_is_retried() {
    let server = TestServer::start([
        ScriptedResponse::sse("").ending(Ending::Stall),
        ScriptedResponse::sse(OK_BODY),
    ])
    .await
    .unwrap();
    let mut response = within(client(fast_retries()).post_sse(request(&server)))
        .await
        .unwrap();
    assert_eq!(response.retries.len(), 1);
    let error = &response.retries[0].error;
    assert_eq!(error.kind, ProviderErrorKind::Timeout);
    assert!(error.message.contains("timed out"), "{}", error.message);
    assert_eq!(within(drain(&mut response)).await.unwrap().len(), 2);
}

#[tokio::test]
async fn retry_after_ms_wins_over_retry_after() {
    let server = TestServer::start([
        ScriptedResponse::json(429, "{}")
            .with_header("retry-after", "30")
            .with_header("retry-after-ms", "120"),
        ScriptedResponse::sse(OK_BODY),
    ])
    .await
    .unwrap();
    let response = within(client(fast_retries()).post_sse(request(&server)))
        .await
        .unwrap();
    assert_eq!(response.retries[0].delay, Duration::from_millis(120));
}

#[tokio::test]
async fn sse_comments_keep_a_slow_stream_alive() {
    // Ten keep-alive comments 200 ms apart: two seconds in all, four times
    // the idle timeout, but never 500 ms without a byte.
    let mut body = String::new();
    let mut cuts = Vec::new();
    for _ in 0..10 {
        body.push_str(": keep-alive\n\n");
        cuts.push(body.len());
    }
    body.push_str(OK_BODY);
    let server = TestServer::start([ScriptedResponse::sse(body)
        .split_at(&cuts)
        .with_pause(Duration::from_millis(200))])
    .await
    .unwrap();
    let mut response = within(client(RetryPolicy::none()).post_sse(request(&server)))
        .await
        .unwrap();
    let events = within(drain(&mut response)).await.unwrap();
    let data: Vec<&str> = events.iter().map(|e| e.data.as_str()).collect();
    assert_eq!(data, ["one", "two"]);
}

#[tokio::test]
async fn absurd_retry_after_values_are_clamped_not_panicking() {
    for (name, value) in [
        ("retry-after", "1e20"),
        ("retry-after-ms", "1e20"),
        ("retry-after", "99999999999999999999999"),
    ] {
        let server =
            TestServer::start([ScriptedResponse::json(429, "{}").with_header(name, value)])
                .await
                .unwrap();
        let policy = fast_retries().with_max_retry_after(Duration::from_secs(7));
        let err = within(client(policy).post_sse(request(&server)))
            .await
            .unwrap_err();
        assert_eq!(err.kind, ProviderErrorKind::RateLimited, "{name}: {value}");
        assert_eq!(
            err.retry_after,
            Some(Duration::from_secs(7)),
            "{name}: {value}"
        );
        assert_eq!(
            server.requests().len(),
            1,
            "a wait past the policy is not taken"
        );
    }
}

/// With room for one open request, a second waits until the first answer's
/// body is dropped, then goes through: ten thousand sessions starting at
/// once queue for connections instead of overflowing the server's accept
/// queue. The test server is on 127.0.0.1, so both bounds apply to it: the
/// overall one, and the one on requests to a server on this machine.
#[tokio::test]
async fn requests_beyond_the_connection_bound_wait_for_an_open_one_to_end() {
    let bounded = HttpConfig::default().with_retry(RetryPolicy::none());
    for (name, config) in [
        ("max_connections", bounded.clone().with_max_connections(1)),
        (
            "max_local_connections",
            bounded.with_max_local_connections(1),
        ),
    ] {
        second_request_waits_for_the_first(name, config).await;
    }
}

async fn second_request_waits_for_the_first(name: &str, config: HttpConfig) {
    let server = TestServer::start([
        // The first answer stays open after its event.
        ScriptedResponse::sse("data: one\n\n").ending(Ending::Stall),
        ScriptedResponse::sse("data: two\n\n"),
    ])
    .await
    .unwrap();
    let client = HttpClient::new(config).unwrap();
    let mut first = within(client.post_sse(request(&server))).await.unwrap();
    assert_eq!(
        within(first.events.next_event())
            .await
            .unwrap()
            .unwrap()
            .data,
        "one",
        "{name}"
    );
    // A clone shares the bound.
    let second = tokio::spawn({
        let (client, request) = (client.clone(), request(&server));
        async move { client.post_sse(request).await }
    });
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert!(!second.is_finished(), "{name}: the second request waits");
    assert_eq!(server.requests().len(), 1, "{name}: and was not sent");
    drop(first);
    let mut second = within(second).await.unwrap().unwrap();
    assert_eq!(
        within(second.events.next_event())
            .await
            .unwrap()
            .unwrap()
            .data,
        "two",
        "{name}"
    );
    assert_eq!(server.requests().len(), 2, "{name}");
}

/// A URL that does not parse (or names no host) is a typed error at once,
/// not a retried transport failure: the client hands it to reqwest as text
/// when it cannot parse it itself.
#[tokio::test]
async fn a_url_that_does_not_parse_is_an_invalid_request_without_retries() {
    for url in ["not a url", "http://", "unix:/run/model.sock"] {
        let request = StreamRequest::json(url, &serde_json::json!({}));
        let err = within(client(fast_retries()).post_sse(request))
            .await
            .unwrap_err();
        assert_eq!(err.kind, ProviderErrorKind::InvalidRequest, "{url}: {err}");
        assert_eq!(err.attempts, 1, "{url}");
        assert!(err.message.contains("could not be built"), "{url}: {err}");
    }
}
