//! Hostile providers: a real server on 127.0.0.1 that misbehaves on
//! purpose. It streams a line that never ends, announces a 2 GB body and
//! stalls or hangs up, or sends an event of 100 MB. The client must answer
//! each with a typed error (or a clean end) within the idle timeout, in
//! bounded memory: the caps of `SseLimits`, not the peer, decide how much is
//! buffered.
//!
//! The server is written by hand (not `TestServer`, which sends a prepared
//! body) so that it can write without end until the client hangs up.

use agentkit_http::{
    HttpClient, HttpConfig, ProviderError, ProviderErrorKind, RetryPolicy, SseEvent, SseLimits,
    StreamRequest,
};
use serde_json::json;
use std::time::{Duration, Instant};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

/// The memory checks read the whole process's resident size, so these
/// tests take turns.
static ONE_AT_A_TIME: tokio::sync::Mutex<()> = tokio::sync::Mutex::const_new(());

const IDLE: Duration = Duration::from_millis(600);

/// How a hostile server answers its one request.
#[derive(Clone, Copy)]
enum Behaviour {
    /// `data: xxxx...` forever, never a line end.
    EndlessLine,
    /// One data line of 1 MiB after another, never a blank line.
    HugeEvent,
    /// `Content-Length: 2147483648`, one event, then silence.
    HugeLengthThenStall,
    /// `Content-Length: 2147483648`, one event, then a hang-up.
    HugeLengthThenClose,
}

/// Serves one connection with `behaviour`; returns the URL.
async fn hostile_server(behaviour: Behaviour) -> String {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/v1/stream", listener.local_addr().unwrap());
    tokio::spawn(async move {
        let (mut socket, _) = listener.accept().await.unwrap();
        read_request(&mut socket).await;
        let _ = answer(&mut socket, behaviour).await;
    });
    url
}

async fn read_request(socket: &mut TcpStream) {
    let mut seen = Vec::new();
    let mut buf = [0u8; 4096];
    // Headers, then the small JSON body the test sends.
    while !seen.windows(4).any(|w| w == b"\r\n\r\n") {
        let n = socket.read(&mut buf).await.unwrap();
        if n == 0 {
            return;
        }
        seen.extend_from_slice(&buf[..n]);
    }
}

async fn answer(socket: &mut TcpStream, behaviour: Behaviour) -> std::io::Result<()> {
    let mib = vec![b'x'; 1 << 20];
    match behaviour {
        Behaviour::EndlessLine => {
            socket
                .write_all(b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\nconnection: close\r\n\r\ndata: ")
                .await?;
            // Until the client hangs up (the write fails).
            loop {
                socket.write_all(&mib).await?;
            }
        }
        Behaviour::HugeEvent => {
            socket
                .write_all(b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\nconnection: close\r\n\r\n")
                .await?;
            for _ in 0..100 {
                socket.write_all(b"data: ").await?;
                socket.write_all(&mib).await?;
                socket.write_all(b"\n").await?;
            }
            socket.write_all(b"\n").await
        }
        Behaviour::HugeLengthThenStall | Behaviour::HugeLengthThenClose => {
            socket
                .write_all(b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ncontent-length: 2147483648\r\n\r\ndata: first\n\n")
                .await?;
            socket.flush().await?;
            if matches!(behaviour, Behaviour::HugeLengthThenStall) {
                tokio::time::sleep(Duration::from_secs(30)).await;
            }
            Ok(())
        }
    }
}

fn client(limits: SseLimits) -> HttpClient {
    HttpClient::new(
        HttpConfig::default()
            .with_idle_timeout(IDLE)
            .with_connect_timeout(Duration::from_secs(2))
            .with_retry(RetryPolicy::default().with_max_attempts(1))
            .with_sse_limits(limits),
    )
    .unwrap()
}

/// Every event until the end or the first error.
async fn read_all(url: &str, limits: SseLimits) -> (Vec<SseEvent>, Option<ProviderError>) {
    let request = StreamRequest::json(url, &json!({"stream": true}));
    let mut response = match client(limits).post_sse(request).await {
        Ok(response) => response,
        Err(err) => return (Vec::new(), Some(err)),
    };
    let mut events = Vec::new();
    loop {
        match response.events.next_event().await {
            Ok(Some(event)) => events.push(event),
            Ok(None) => return (events, None),
            Err(err) => return (events, Some(err)),
        }
    }
}

/// The resident memory of this process (Linux), to show buffers stayed
/// within the caps.
fn resident_bytes() -> u64 {
    std::fs::read_to_string("/proc/self/statm")
        .ok()
        .and_then(|s| s.split_whitespace().nth(1)?.parse::<u64>().ok())
        .map_or(0, |pages| pages * 4096)
}

async fn within_limit<T>(work: impl std::future::Future<Output = T>) -> T {
    tokio::time::timeout(Duration::from_secs(30), work)
        .await
        .expect("the client gave up in time")
}

#[tokio::test]
async fn a_line_that_never_ends_stops_at_the_line_cap_in_bounded_memory() {
    let _turn = ONE_AT_A_TIME.lock().await;
    let url = hostile_server(Behaviour::EndlessLine).await;
    let before = resident_bytes();
    let started = Instant::now();
    // The default caps: 16 MiB per line.
    let (events, error) = within_limit(read_all(&url, SseLimits::default())).await;
    let error = error.expect("an error, not an endless read");
    assert!(events.is_empty());
    assert_eq!(error.kind, ProviderErrorKind::LimitExceeded, "{error}");
    assert!(error.message.contains("max_line_bytes"), "{error}");
    assert!(!error.is_retryable());
    let grown = resident_bytes().saturating_sub(before);
    assert!(grown < 96 << 20, "memory grew by {} MiB", grown >> 20);
    assert!(started.elapsed() < Duration::from_secs(20));
}

#[tokio::test]
async fn an_event_of_100_megabytes_stops_at_the_event_cap() {
    let _turn = ONE_AT_A_TIME.lock().await;
    let url = hostile_server(Behaviour::HugeEvent).await;
    let before = resident_bytes();
    let (events, error) = within_limit(read_all(&url, SseLimits::default())).await;
    let error = error.expect("an error, not a 100 MB event");
    assert!(events.is_empty());
    assert_eq!(error.kind, ProviderErrorKind::LimitExceeded, "{error}");
    assert!(error.message.contains("max_event_bytes"), "{error}");
    let grown = resident_bytes().saturating_sub(before);
    assert!(grown < 128 << 20, "memory grew by {} MiB", grown >> 20);
    // Smaller caps stop it sooner: the cap is the config's, not a constant.
    let url = hostile_server(Behaviour::HugeEvent).await;
    let small = SseLimits::default().with_max_event_bytes(3 << 20);
    let (_, error) = within_limit(read_all(&url, small)).await;
    assert!(error.unwrap().message.contains("3145728 bytes"));
}

#[tokio::test]
async fn a_2_gigabyte_content_length_then_silence_times_out_after_the_events() {
    let _turn = ONE_AT_A_TIME.lock().await;
    let url = hostile_server(Behaviour::HugeLengthThenStall).await;
    let started = Instant::now();
    let (events, error) = within_limit(read_all(&url, SseLimits::default())).await;
    assert_eq!(events.len(), 1, "the event sent is decoded");
    assert_eq!(events[0].data, "first");
    let error = error.expect("a timeout, not a wait for 2 GB");
    assert_eq!(error.kind, ProviderErrorKind::Timeout, "{error}");
    // Within the idle timeout, give or take the scheduler.
    assert!(started.elapsed() < IDLE * 8, "{:?}", started.elapsed());
}

#[tokio::test]
async fn a_2_gigabyte_content_length_then_a_hang_up_is_a_transport_error() {
    let _turn = ONE_AT_A_TIME.lock().await;
    let url = hostile_server(Behaviour::HugeLengthThenClose).await;
    let (events, error) = within_limit(read_all(&url, SseLimits::default())).await;
    assert_eq!(events.len(), 1);
    let error = error.expect("the short body is an error, not a clean end");
    assert_eq!(error.kind, ProviderErrorKind::Transport, "{error}");
    assert!(error.is_retryable());
}
