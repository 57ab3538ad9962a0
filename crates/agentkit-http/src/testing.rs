//! A scripted HTTP/1.1 server on 127.0.0.1, for testing adapters offline.
//!
//! Adapter tests need a real socket: the retry, timeout and cancellation
//! paths only show up against a real connection. This server is small on
//! purpose. It answers each incoming request with the next response of its
//! script, writes bodies as chunked transfer encoding in whatever pieces the
//! test asks for (so a UTF-8 character or a CRLF can be split between two
//! network reads), can cut or stall a connection, and records every request
//! so tests can assert on what was sent. Enabled by the `test-server`
//! feature.
//!
//! [`TestServer::proxy`] is the recording half of record and replay: it
//! forwards every request to a real server and keeps each request with the
//! raw bytes of its answer, which a cassette then stores and a scripted
//! server replays. [`ChatStream`] builds a realistic Chat Completions
//! answer for it to send, for load tests and benchmarks.

mod chat_stream;

pub use chat_stream::ChatStream;

use bytes::Buf;
use std::collections::VecDeque;
use std::io;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

/// How a scripted body ends.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum Ending {
    /// The body ends properly.
    Complete,
    /// The connection is closed without ending the chunked body, as when a
    /// network path breaks mid-stream.
    Abort,
    /// The connection stays open and silent until the client gives up.
    Stall,
}

/// One scripted answer.
#[derive(Clone, Debug)]
#[non_exhaustive]
pub struct ScriptedResponse {
    /// The status code.
    pub status: u16,
    /// Headers besides `transfer-encoding` and `connection`.
    pub headers: Vec<(String, String)>,
    /// The body.
    pub body: Vec<u8>,
    /// Where the body is cut into separately written pieces (byte offsets).
    pub cuts: Vec<usize>,
    /// The pause after each piece, so pieces reach the client as separate
    /// reads.
    pub pause: Duration,
    /// How the body ends.
    pub ending: Ending,
}

impl ScriptedResponse {
    /// A `200` event stream with this body.
    pub fn sse(body: impl Into<Vec<u8>>) -> Self {
        Self {
            status: 200,
            headers: vec![("content-type".into(), "text/event-stream".into())],
            body: body.into(),
            cuts: Vec::new(),
            pause: Duration::from_millis(2),
            ending: Ending::Complete,
        }
    }

    /// A JSON answer with this status.
    pub fn json(status: u16, body: impl Into<Vec<u8>>) -> Self {
        Self {
            headers: vec![("content-type".into(), "application/json".into())],
            ..Self::sse(body)
        }
        .with_status(status)
    }

    /// Sets the status.
    pub fn with_status(mut self, status: u16) -> Self {
        self.status = status;
        self
    }

    /// Adds a header.
    pub fn with_header(mut self, name: impl Into<String>, value: impl Into<String>) -> Self {
        self.headers.push((name.into(), value.into()));
        self
    }

    /// Writes the body in pieces of `size` bytes.
    pub fn split_every(mut self, size: usize) -> Self {
        let size = size.max(1);
        self.cuts = (size..self.body.len()).step_by(size).collect();
        self
    }

    /// Writes the body in pieces cut at these byte offsets.
    pub fn split_at(mut self, cuts: &[usize]) -> Self {
        self.cuts = cuts.to_vec();
        self
    }

    /// Sets the pause between pieces.
    pub fn with_pause(mut self, pause: Duration) -> Self {
        self.pause = pause;
        self
    }

    /// Sets how the body ends.
    pub fn ending(mut self, ending: Ending) -> Self {
        self.ending = ending;
        self
    }

    fn pieces(&self) -> Vec<&[u8]> {
        let mut cuts: Vec<usize> = self
            .cuts
            .iter()
            .copied()
            .filter(|&c| c > 0 && c < self.body.len())
            .collect();
        cuts.sort_unstable();
        cuts.dedup();
        let mut pieces = Vec::new();
        let mut start = 0;
        for cut in cuts {
            pieces.push(&self.body[start..cut]);
            start = cut;
        }
        if start < self.body.len() {
            pieces.push(&self.body[start..]);
        }
        pieces
    }
}

/// A request the server received.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct RecordedRequest {
    /// The method.
    pub method: String,
    /// The path and query.
    pub path: String,
    /// The headers, names lowercased, in arrival order.
    pub headers: Vec<(String, String)>,
    /// The body.
    pub body: Vec<u8>,
}

impl RecordedRequest {
    /// The first header with this (case-insensitive) name.
    pub fn header(&self, name: &str) -> Option<&str> {
        let name = name.to_ascii_lowercase();
        self.headers
            .iter()
            .find(|(n, _)| *n == name)
            .map(|(_, v)| v.as_str())
    }

    /// The body parsed as JSON (`Null` when it is not JSON).
    pub fn json(&self) -> serde_json::Value {
        serde_json::from_slice(&self.body).unwrap_or(serde_json::Value::Null)
    }
}

#[derive(Default)]
struct Shared {
    script: Mutex<VecDeque<ScriptedResponse>>,
    requests: Mutex<Vec<RecordedRequest>>,
    /// Where requests are forwarded in proxy mode.
    upstream: Option<Upstream>,
    /// What the upstream answered, one per request, in proxy mode.
    answers: Mutex<Vec<ScriptedResponse>>,
    /// Stalled responses whose client closed the connection.
    hung_up: AtomicUsize,
    /// Answers each request from its content, in responder mode.
    responder: Option<Responder>,
}

/// A function from a request to its answer.
type Responder = Box<dyn Fn(&RecordedRequest) -> ScriptedResponse + Send + Sync>;

struct Upstream {
    base_url: String,
    client: reqwest::Client,
}

/// Headers that describe one hop, not the request: never forwarded.
const HOP_HEADERS: [&str; 6] = [
    "host",
    "content-length",
    "connection",
    "transfer-encoding",
    "accept-encoding",
    "keep-alive",
];

/// The running server; stops when dropped.
///
/// Give it the answers a provider would send, point the client (or an
/// adapter's `base_url`) at [`url`](Self::url), and read back what was
/// sent with [`requests`](Self::requests). Here the first answer is a rate
/// limit, so the client's retry is exercised over a real socket:
///
/// ```
/// use agentkit_http::testing::{ScriptedResponse, TestServer};
/// use agentkit_http::{HttpClient, HttpConfig, RetryPolicy, StreamRequest};
/// use std::time::Duration;
///
/// # tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap().block_on(async {
/// let server = TestServer::start([
///     ScriptedResponse::json(429, r#"{"error":"slow down"}"#).with_header("retry-after", "0"),
///     // Written in 4-byte pieces: the decoder must reassemble the event.
///     ScriptedResponse::sse("data: {\"text\":\"hello\"}\n\n").split_every(4),
/// ])
/// .await?;
/// let client = HttpClient::new(
///     HttpConfig::default().with_retry(RetryPolicy::default().with_backoff(Duration::ZERO, Duration::ZERO)),
/// )?;
/// let request = StreamRequest::json(format!("{}/v1/chat", server.url()), &serde_json::json!({ "q": 1 }));
/// let mut response = client.post_sse(request).await?;
/// assert_eq!(response.retries.len(), 1, "the 429 was retried");
/// let event = response.events.next_event().await?.unwrap();
/// assert_eq!(event.data, r#"{"text":"hello"}"#);
///
/// let sent = server.requests();
/// assert_eq!(sent.len(), 2);
/// assert_eq!((sent[1].method.as_str(), sent[1].path.as_str()), ("POST", "/v1/chat"));
/// assert_eq!(sent[1].json()["q"], 1);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// # }).unwrap();
/// ```
pub struct TestServer {
    url: String,
    shared: Arc<Shared>,
    task: tokio::task::JoinHandle<()>,
}

impl TestServer {
    /// Starts a server on a free port of 127.0.0.1 that answers requests
    /// with these responses, in order (then `500`s).
    pub async fn start(script: impl IntoIterator<Item = ScriptedResponse>) -> io::Result<Self> {
        let listener = listen()?;
        let url = format!("http://{}", listener.local_addr()?);
        let shared = Arc::new(Shared {
            script: Mutex::new(script.into_iter().collect()),
            ..Shared::default()
        });
        let task = tokio::spawn(serve(listener, shared.clone()));
        Ok(Self { url, shared, task })
    }

    /// Starts a server on a free port of 127.0.0.1 that answers each
    /// request with what `respond` makes of it, for as many requests as
    /// come: a model whose answer depends on the conversation (a tool call
    /// for a user message, text after the tool's result), shared by many
    /// sessions in any order, as a load test needs. Connections stay open
    /// between requests, as a provider's do. Requests are not kept
    /// ([`requests`](Self::requests) stays empty): a load test sends many;
    /// `respond` sees each one.
    ///
    /// ```
    /// use agentkit_http::testing::{ScriptedResponse, TestServer};
    ///
    /// # tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap().block_on(async {
    /// let server = TestServer::respond(|request| {
    ///     let echo = format!("data: {}\n\n", request.json()["q"]);
    ///     ScriptedResponse::sse(echo)
    /// })
    /// .await?;
    /// agentkit_http::install_tls_provider();
    /// let client = reqwest::Client::new();
    /// // The second request goes over the connection the first opened.
    /// for q in [7, 8] {
    ///     let answer = client
    ///         .post(format!("{}/v1/echo", server.url()))
    ///         .body(format!(r#"{{"q":{q}}}"#))
    ///         .send()
    ///         .await?
    ///         .text()
    ///         .await?;
    ///     assert_eq!(answer, format!("data: {q}\n\n"));
    /// }
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// # }).unwrap();
    /// ```
    pub async fn respond(
        respond: impl Fn(&RecordedRequest) -> ScriptedResponse + Send + Sync + 'static,
    ) -> io::Result<Self> {
        let listener = listen()?;
        let url = format!("http://{}", listener.local_addr()?);
        let shared = Arc::new(Shared {
            responder: Some(Box::new(respond)),
            ..Shared::default()
        });
        let task = tokio::spawn(serve(listener, shared.clone()));
        Ok(Self { url, shared, task })
    }

    /// Starts a recording proxy on a free port of 127.0.0.1: every request
    /// is forwarded to `upstream_base_url` (the same path appended to it)
    /// and answered with the upstream's status, content type and body,
    /// which [`exchanges`](Self::exchanges) returns beside the request.
    ///
    /// The body is read whole before it is passed on, so the recording is
    /// complete even when the client stops reading early (a cancelled turn).
    pub async fn proxy(upstream_base_url: impl Into<String>) -> io::Result<Self> {
        let listener = listen()?;
        let url = format!("http://{}", listener.local_addr()?);
        crate::install_tls_provider();
        let client = reqwest::Client::builder()
            .no_proxy()
            .build()
            .map_err(io::Error::other)?;
        let shared = Arc::new(Shared {
            upstream: Some(Upstream {
                base_url: upstream_base_url.into().trim_end_matches('/').to_owned(),
                client,
            }),
            ..Shared::default()
        });
        let task = tokio::spawn(serve(listener, shared.clone()));
        Ok(Self { url, shared, task })
    }

    /// In proxy mode, each request received with the upstream's answer, in
    /// order.
    pub fn exchanges(&self) -> Vec<(RecordedRequest, ScriptedResponse)> {
        let requests = lock(&self.shared.requests).clone();
        let answers = lock(&self.shared.answers).clone();
        requests.into_iter().zip(answers).collect()
    }

    /// The base URL, `http://127.0.0.1:<port>`.
    pub fn url(&self) -> &str {
        &self.url
    }

    /// The requests received so far.
    pub fn requests(&self) -> Vec<RecordedRequest> {
        lock(&self.shared.requests).clone()
    }

    /// Scripted responses not yet used.
    pub fn remaining(&self) -> usize {
        lock(&self.shared.script).len()
    }

    /// How many [stalled](Ending::Stall) responses saw their client close
    /// the connection: a dropped (cancelled) turn shows up here.
    pub fn hung_up(&self) -> usize {
        self.shared.hung_up.load(Ordering::SeqCst)
    }

    /// Waits until [`hung_up`](Self::hung_up) reaches `count`; `false` if
    /// it did not within `deadline` (keep it generous: this is for tests on
    /// a loaded machine, not a measurement).
    pub async fn wait_for_hang_ups(&self, count: usize, deadline: Duration) -> bool {
        let waited = tokio::time::timeout(deadline, async {
            while self.hung_up() < count {
                tokio::time::sleep(Duration::from_millis(5)).await;
            }
        });
        waited.await.is_ok()
    }
}

impl Drop for TestServer {
    fn drop(&mut self) {
        self.task.abort();
    }
}

/// A listener on a free port of 127.0.0.1 whose accept queue holds a
/// thousand clients connecting at once (tokio's default backlog overflows
/// there, and a dropped SYN costs the client a one-second retransmit).
fn listen() -> io::Result<TcpListener> {
    let socket = tokio::net::TcpSocket::new_v4()?;
    socket.bind((std::net::Ipv4Addr::LOCALHOST, 0).into())?;
    socket.listen(4096)
}

fn lock<T>(mutex: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(|e| e.into_inner())
}

async fn serve(listener: TcpListener, shared: Arc<Shared>) {
    loop {
        match listener.accept().await {
            Ok((socket, _)) => {
                tokio::spawn(answer(socket, shared.clone()));
            }
            // Out of file descriptors or memory (or a client that gave up
            // before it was accepted): connections in the queue wait until
            // some close, rather than the server stopping for good and
            // every later client timing out.
            Err(_) => tokio::time::sleep(Duration::from_millis(5)).await,
        }
    }
}

async fn answer(mut socket: TcpStream, shared: Arc<Shared>) {
    let _ = socket.set_nodelay(true);
    if let Some(respond) = &shared.responder {
        // Like a provider, the responder keeps connections open between
        // requests (a load test would otherwise pay a TCP connect and
        // close per request), unless the client or the answer ends them.
        while let Ok(request) = read_request(&mut socket).await {
            let client_closes = request
                .header("connection")
                .is_some_and(|v| v.eq_ignore_ascii_case("close"));
            let response = respond(&request);
            drop(request);
            let keep_alive = !client_closes && response.ending == Ending::Complete;
            let written = write_response(&mut socket, &response, &shared, keep_alive).await;
            if written.is_err() || !keep_alive {
                return;
            }
        }
        return;
    }
    let Ok(request) = read_request(&mut socket).await else {
        return;
    };
    if let Some(upstream) = &shared.upstream {
        let response = forward(upstream, &request).await;
        // Recorded in arrival order: requests and answers pair by index.
        {
            let mut requests = lock(&shared.requests);
            let mut answers = lock(&shared.answers);
            requests.push(request);
            answers.push(response.clone());
        }
        let _ = write_response(&mut socket, &response, &shared, false).await;
        return;
    }
    lock(&shared.requests).push(request);
    let response = lock(&shared.script).pop_front().unwrap_or_else(|| {
        ScriptedResponse::json(
            500,
            r#"{"error":{"message":"the test script has no more responses"}}"#,
        )
    });
    let _ = write_response(&mut socket, &response, &shared, false).await;
}

/// Sends `request` to the upstream and reads its whole answer; a failure
/// to reach it becomes a `502` naming the cause.
async fn forward(upstream: &Upstream, request: &RecordedRequest) -> ScriptedResponse {
    let url = format!("{}{}", upstream.base_url, request.path);
    let method = reqwest::Method::from_bytes(request.method.as_bytes()).unwrap_or_default();
    let mut builder = upstream.client.request(method, &url);
    for (name, value) in &request.headers {
        if !HOP_HEADERS.contains(&name.as_str()) {
            builder = builder.header(name.as_str(), value.as_str());
        }
    }
    let answer = async {
        let response = builder.body(request.body.clone()).send().await?;
        let status = response.status().as_u16();
        let content_type = response
            .headers()
            .get(reqwest::header::CONTENT_TYPE)
            .and_then(|v| v.to_str().ok())
            .map(str::to_owned);
        let body = response.bytes().await?;
        Ok::<_, reqwest::Error>((status, content_type, body))
    };
    match answer.await {
        Ok((status, content_type, body)) => {
            let mut response = ScriptedResponse::sse(body.to_vec()).with_status(status);
            response.headers.clear();
            if let Some(content_type) = content_type {
                response.headers.push(("content-type".into(), content_type));
            }
            response.pause = Duration::ZERO;
            response
        }
        Err(err) => {
            let mut cause = err.to_string();
            let mut source = std::error::Error::source(&err);
            while let Some(inner) = source {
                cause.push_str(": ");
                cause.push_str(&inner.to_string());
                source = inner.source();
            }
            ScriptedResponse::json(
                502,
                serde_json::json!({"error": {"message": format!("the recording proxy could not reach {url}: {cause}")}})
                    .to_string(),
            )
        }
    }
}

/// Reads more of the request into `buffer`, which grows only once bytes
/// are there: a kept-alive connection waiting for its next request holds no
/// buffer, and the connection's task no 8 KiB array (with ten thousand load
/// test sessions in one process, the server's memory counts too).
async fn read_more(socket: &mut TcpStream, buffer: &mut Vec<u8>, want: usize) -> io::Result<()> {
    loop {
        socket.readable().await?;
        buffer.reserve(want.clamp(1, 64 * 1024));
        match socket.try_read_buf(buffer) {
            Ok(0) => return Err(io::ErrorKind::UnexpectedEof.into()),
            Ok(_) => return Ok(()),
            Err(err) if err.kind() == io::ErrorKind::WouldBlock => {}
            Err(err) => return Err(err),
        }
    }
}

async fn read_request(socket: &mut TcpStream) -> io::Result<RecordedRequest> {
    let mut buffer = Vec::new();
    let head_end = loop {
        if let Some(end) = find(&buffer, b"\r\n\r\n") {
            break end;
        }
        read_more(socket, &mut buffer, 4096).await?;
    };
    let head = String::from_utf8_lossy(&buffer[..head_end]).into_owned();
    let mut lines = head.split("\r\n");
    let mut request_line = lines.next().unwrap_or_default().split(' ');
    let method = request_line.next().unwrap_or_default().to_owned();
    let path = request_line.next().unwrap_or_default().to_owned();
    let headers: Vec<(String, String)> = lines
        .filter_map(|line| line.split_once(':'))
        .map(|(n, v)| (n.trim().to_ascii_lowercase(), v.trim().to_owned()))
        .collect();
    let length = headers
        .iter()
        .find(|(n, _)| n == "content-length")
        .and_then(|(_, v)| v.parse::<usize>().ok())
        .unwrap_or(0);
    let mut body = buffer[head_end + 4..].to_vec();
    drop(buffer);
    while body.len() < length {
        let missing = length - body.len();
        read_more(socket, &mut body, missing).await?;
    }
    Ok(RecordedRequest {
        method,
        path,
        headers,
        body,
    })
}

/// The chunk that ends a chunked body.
const LAST_CHUNK: &[u8] = b"0\r\n\r\n";

/// Writes `response`; with `keep_alive` the connection stays open for the
/// next request after a complete body.
///
/// A stalled response whose client went away before it was written (a
/// turn cancelled as soon as its request arrived) fails its write: that
/// is the client hanging up too, and counts as one.
async fn write_response(
    socket: &mut TcpStream,
    response: &ScriptedResponse,
    shared: &Shared,
    keep_alive: bool,
) -> io::Result<()> {
    let written = write_answer(socket, response, shared, keep_alive).await;
    if written.is_err() && response.ending == Ending::Stall {
        shared.hung_up.fetch_add(1, Ordering::SeqCst);
    }
    written
}

/// [`write_response`]'s writing.
async fn write_answer(
    socket: &mut TcpStream,
    response: &ScriptedResponse,
    shared: &Shared,
    keep_alive: bool,
) -> io::Result<()> {
    let mut head = format!(
        "HTTP/1.1 {} {}\r\n",
        response.status,
        reason(response.status)
    );
    for (name, value) in &response.headers {
        head.push_str(&format!("{name}: {value}\r\n"));
    }
    head.push_str(if keep_alive {
        "transfer-encoding: chunked\r\n\r\n"
    } else {
        "transfer-encoding: chunked\r\nconnection: close\r\n\r\n"
    });
    socket.write_all(head.as_bytes()).await?;
    socket.flush().await?;
    let pieces = response.pieces();
    let complete = response.ending == Ending::Complete;
    for (index, piece) in pieces.iter().enumerate() {
        // Even a zero sleep waits for the next timer tick (a millisecond),
        // which would throttle benchmarks; skip it.
        if !response.pause.is_zero() {
            tokio::time::sleep(response.pause).await;
        }
        let size = format!("{:x}\r\n", piece.len());
        // The body's end goes with its last piece, as a server sends it
        // that knows the stream is over when it writes that piece (one
        // send fewer per answer for the load tests, which share the CPU
        // with this server).
        let end: &[u8] = if complete && index + 1 == pieces.len() {
            b"\r\n0\r\n\r\n"
        } else {
            b"\r\n"
        };
        // One vectored send of the size line, the piece and its end: the
        // piece is not copied into a frame first (a load test's answers
        // are kilobytes each, and the copies were the server's largest
        // cost after the kernel's).
        let mut frame = Buf::chain(Buf::chain(size.as_bytes(), *piece), end);
        socket.write_all_buf(&mut frame).await?;
        socket.flush().await?;
    }
    match response.ending {
        Ending::Complete => {
            if pieces.is_empty() {
                socket.write_all(LAST_CHUNK).await?;
                socket.flush().await?;
            }
            if keep_alive {
                Ok(())
            } else {
                socket.shutdown().await
            }
        }
        Ending::Abort => Ok(()),
        Ending::Stall => {
            // Hold the connection open until the client closes it (its
            // idle timeout, or a dropped turn), counting that; the task is
            // aborted with the server.
            let mut byte = [0u8; 1];
            let closed = tokio::time::timeout(Duration::from_secs(3_600), async {
                while let Ok(1..) = socket.read(&mut byte).await {}
            });
            if closed.await.is_ok() {
                shared.hung_up.fetch_add(1, Ordering::SeqCst);
            }
            Ok(())
        }
    }
}

fn find(haystack: &[u8], needle: &[u8]) -> Option<usize> {
    haystack.windows(needle.len()).position(|w| w == needle)
}

fn reason(status: u16) -> &'static str {
    match status {
        200 => "OK",
        400 => "Bad Request",
        401 => "Unauthorized",
        403 => "Forbidden",
        404 => "Not Found",
        408 => "Request Timeout",
        429 => "Too Many Requests",
        500 => "Internal Server Error",
        502 => "Bad Gateway",
        503 => "Service Unavailable",
        504 => "Gateway Timeout",
        529 => "Overloaded",
        _ => "Status",
    }
}
