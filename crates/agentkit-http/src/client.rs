//! The HTTP client adapters send their streaming requests through.
//!
//! One place owns the policy every provider call needs: how long to wait for
//! a connection, how long a stream may stay silent, which failures are
//! retried and how, and that an interrupt drops the connection at once
//! rather than after the next byte. Adapters build a [`StreamRequest`] and
//! get back the decoded event stream plus the list of retries that happened,
//! which they report to the host as warnings.

use crate::redact::{REDACTED, header_secret, redact_secrets};
use crate::retry::{duration_from_secs, parse_retry_after};
use crate::{ProviderError, ProviderErrorKind, RetryNotice, RetryPolicy, SseLimits, SseStream};
use bytes::Bytes;
use futures::stream::BoxStream;
use futures::{StreamExt, stream};
use reqwest::header::{ACCEPT, CONTENT_TYPE, HeaderMap, RETRY_AFTER};
use std::sync::Arc;
use std::time::{Duration, SystemTime};
use tokio::sync::Semaphore;
use tracing::Instrument;

/// The largest body [`HttpClient::get_json`] reads.
const MAX_JSON_BODY: usize = 4 * 1024 * 1024;

/// The media type of server-sent events.
const SSE: &str = "text/event-stream";

/// The largest error body read; providers' error bodies are small, and a
/// misbehaving proxy must not make us buffer a whole page.
const MAX_ERROR_BODY: usize = 64 * 1024;

/// How the client connects, waits and retries.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct HttpConfig {
    /// The longest wait for a TCP (and TLS) connection.
    pub connect_timeout: Duration,
    /// The longest silence on an open connection, while waiting for the
    /// response or between two reads of its body. Streams can run for
    /// minutes, so there is no total timeout; a stalled one is cut here.
    pub idle_timeout: Duration,
    /// When and how requests are retried.
    pub retry: RetryPolicy,
    /// The `User-Agent` header.
    pub user_agent: String,
    /// `true` (the default) to honour the `HTTP(S)_PROXY` / `NO_PROXY`
    /// environment variables; `false` to always connect directly. Loopback
    /// URLs (a local model server, a test server) are never proxied.
    pub system_proxy: bool,
    /// The caps on one event-stream line and event.
    pub sse_limits: SseLimits,
    /// The most requests the client (with all its clones) has open at once,
    /// 1,000 by default; more wait, in
    /// order, for one to finish. A request holds its place from sending
    /// until its answer's body is dropped. Without a bound, ten thousand
    /// sessions starting together open ten thousand connections at once:
    /// the server's accept queue overflows, its dropped connects wait for
    /// retransmits and end in connect timeouts, and the sockets' buffers
    /// take the memory.
    pub max_connections: usize,
    /// The most of those requests that go to a server on this machine (a
    /// loopback URL: `127.0.0.1`, `::1`, `localhost`) at once, by default
    /// 32 per CPU the process may use (`std::thread::available_parallelism`);
    /// more wait in order like the others. Such a server shares the
    /// client's CPUs, so requests beyond a few dozen per CPU only queue
    /// inside it, while each holds a connection's buffers on both sides
    /// (about 57 KB in the client's HTTP stack alone). Ten thousand
    /// sessions against a local server on two CPUs use about a fifth less
    /// CPU and 60 MiB less memory at 64 than at 1,000. Raise it for a local
    /// server whose work is not on these CPUs and that serves many requests
    /// at once (a GPU server batching hundreds of sequences).
    pub max_local_connections: usize,
}

impl Default for HttpConfig {
    fn default() -> Self {
        Self {
            connect_timeout: Duration::from_secs(10),
            idle_timeout: Duration::from_secs(120),
            retry: RetryPolicy::default(),
            user_agent: format!("agentkit/{}", env!("CARGO_PKG_VERSION")),
            system_proxy: true,
            sse_limits: SseLimits::default(),
            max_connections: 1_000,
            max_local_connections: local_connections_default(),
        }
    }
}

/// The default of [`HttpConfig::max_local_connections`]: 32 for each CPU
/// the process may use (64 on two). The CPU count is read once per process:
/// on Linux it reads cgroup files, and every client (every provider, every
/// sub-agent) starts from a default.
fn local_connections_default() -> usize {
    static DEFAULT: std::sync::OnceLock<usize> = std::sync::OnceLock::new();
    *DEFAULT.get_or_init(|| {
        #[cfg(test)]
        tests::PARALLELISM_READS.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        32 * std::thread::available_parallelism().map_or(1, |n| n.get())
    })
}

impl HttpConfig {
    /// Sets the connect timeout.
    pub fn with_connect_timeout(mut self, timeout: Duration) -> Self {
        self.connect_timeout = timeout;
        self
    }

    /// Sets the idle timeout.
    pub fn with_idle_timeout(mut self, timeout: Duration) -> Self {
        self.idle_timeout = timeout;
        self
    }

    /// Sets the retry policy.
    pub fn with_retry(mut self, retry: RetryPolicy) -> Self {
        self.retry = retry;
        self
    }

    /// Sets the caps on event-stream lines and events.
    pub fn with_sse_limits(mut self, limits: SseLimits) -> Self {
        self.sse_limits = limits;
        self
    }

    /// Sets how many requests may be open at once (at least one).
    pub fn with_max_connections(mut self, max: usize) -> Self {
        self.max_connections = max.max(1);
        self
    }

    /// Sets how many requests to a server on this machine may be open at
    /// once (at least one; [`HttpConfig::max_local_connections`]).
    pub fn with_max_local_connections(mut self, max: usize) -> Self {
        self.max_local_connections = max.max(1);
        self
    }

    /// Connects directly, ignoring proxy environment variables.
    pub fn without_proxy(mut self) -> Self {
        self.system_proxy = false;
        self
    }
}

/// A POST request whose answer is an event stream.
///
/// Its `Debug` output hides the values of credential headers.
#[derive(Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct StreamRequest {
    /// The full URL.
    pub url: String,
    /// Extra headers (authentication, API version ...).
    pub headers: Vec<(String, String)>,
    /// The JSON body.
    pub body: Vec<u8>,
    /// The `Accept` header: `text/event-stream` unless the answer is
    /// another streaming format (AWS's `application/vnd.amazon.eventstream`).
    pub accept: &'static str,
}

impl std::fmt::Debug for StreamRequest {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let headers: Vec<(&str, &str)> = self
            .headers
            .iter()
            .map(|(name, value)| {
                let shown = if is_secret_header(name) {
                    REDACTED
                } else {
                    value.as_str()
                };
                (name.as_str(), shown)
            })
            .collect();
        f.debug_struct("StreamRequest")
            .field("url", &self.url)
            .field("headers", &headers)
            .field("body_len", &self.body.len())
            .field("accept", &self.accept)
            .finish()
    }
}

/// Whether a header carries a credential.
fn is_secret_header(name: &str) -> bool {
    [
        "authorization",
        "x-api-key",
        "api-key",
        "proxy-authorization",
    ]
    .iter()
    .any(|secret| name.eq_ignore_ascii_case(secret))
}

/// The credentials a request carries (the values of its credential
/// headers, without `Bearer `).
fn credentials(headers: &[(String, String)]) -> Vec<String> {
    headers
        .iter()
        .filter(|(name, _)| is_secret_header(name))
        .map(|(_, value)| header_secret(value).to_owned())
        .collect()
}

/// Removes the request's credentials (and key-shaped words) from an error
/// message: a server (or a proxy) that echoes the key it was sent must not
/// put it in a log line or a transcript.
fn redact_credentials(message: &mut String, headers: &[(String, String)]) {
    redact_secrets(message, &credentials(headers));
}

impl StreamRequest {
    /// A request with this URL and JSON body.
    pub fn json(url: impl Into<String>, body: &serde_json::Value) -> Self {
        Self {
            url: url.into(),
            headers: Vec::new(),
            // Serializing a `Value` cannot fail: its keys are strings.
            body: serde_json::to_vec(body).unwrap_or_default(),
            accept: SSE,
        }
    }

    /// A request with this URL and a body already encoded as JSON (an
    /// adapter that writes its body from cached fragments).
    pub fn with_body(url: impl Into<String>, body: Vec<u8>) -> Self {
        Self {
            url: url.into(),
            headers: Vec::new(),
            body,
            accept: SSE,
        }
    }

    /// Sets the `Accept` header (the default is `text/event-stream`).
    pub fn with_accept(mut self, accept: &'static str) -> Self {
        self.accept = accept;
        self
    }

    /// Adds a header.
    pub fn with_header(mut self, name: impl Into<String>, value: impl Into<String>) -> Self {
        self.headers.push((name.into(), value.into()));
        self
    }
}

/// A successful answer: the event stream and what it took to get it.
#[derive(Debug)]
#[non_exhaustive]
pub struct StreamResponse {
    /// The HTTP status (2xx).
    pub status: u16,
    /// The provider's request id (`x-request-id` or `request-id`), for
    /// support tickets and logs.
    pub request_id: Option<String>,
    /// The failed attempts before this one, in order.
    pub retries: Vec<RetryNotice>,
    /// The decoded events.
    pub events: SseStream,
}

/// The body of a [`ByteStreamResponse`]: the answer's bytes as they arrive,
/// a failed or timed-out read as a typed error.
pub type ByteStream = BoxStream<'static, Result<Bytes, ProviderError>>;

/// A successful answer whose body is not server-sent events (AWS's binary
/// event-stream), handed on as raw bytes for the adapter's own decoder.
#[non_exhaustive]
pub struct ByteStreamResponse {
    /// The HTTP status (2xx).
    pub status: u16,
    /// The provider's request id, when it sent one.
    pub request_id: Option<String>,
    /// The failed attempts before this one, in order.
    pub retries: Vec<RetryNotice>,
    /// The body, from its first byte.
    pub body: ByteStream,
}

impl std::fmt::Debug for ByteStreamResponse {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ByteStreamResponse")
            .field("status", &self.status)
            .field("request_id", &self.request_id)
            .field("retries", &self.retries)
            .finish_non_exhaustive()
    }
}

/// Computes headers for each attempt at the moment it is sent, for
/// credentials that sign the time of sending (AWS SigV4): a retry is signed
/// again rather than replayed with a stale signature.
pub trait RequestSigner: Send + Sync {
    /// The headers to add to this attempt of a POST of `body` to `url`. An
    /// error stops the request at once, without a retry.
    fn sign(&self, url: &str, body: &[u8]) -> Result<Vec<(String, String)>, ProviderError>;
}

/// Sends streaming requests with timeouts, retries and cancellation.
///
/// Cloning is cheap and shares the connection pool. Building one installs
/// the process's TLS provider first (rustls's `ring`), so no caller has to.
#[derive(Clone, Debug)]
pub struct HttpClient {
    inner: reqwest::Client,
    /// For loopback URLs: a proxy from the environment cannot reach the
    /// caller's own machine, so those requests always go direct.
    direct: reqwest::Client,
    config: HttpConfig,
    /// One permit per open request, shared by the clones
    /// ([`HttpConfig::max_connections`]).
    open: Arc<Semaphore>,
    /// One permit per open request to a loopback server, taken before a
    /// place in `open` ([`HttpConfig::max_local_connections`]).
    open_local: Arc<Semaphore>,
    /// The last URL requested and its parse, shared by the clones: an
    /// adapter sends every request to the same endpoint.
    last_url: Arc<std::sync::Mutex<Option<(String, reqwest::Url)>>>,
}

/// A failed attempt and whether the policy may retry it.
struct AttemptError {
    error: ProviderError,
    retryable: bool,
}

/// An answer whose first body byte has arrived.
struct Opened<S> {
    status: u16,
    request_id: Option<String>,
    retries: Vec<RetryNotice>,
    /// The first read (`None` for an empty body) and the rest.
    first: Option<Bytes>,
    rest: S,
}

impl<S> Opened<S>
where
    S: futures::Stream<Item = Result<Bytes, ProviderError>> + Send + 'static,
{
    fn body(
        self,
    ) -> (
        impl futures::Stream<Item = Result<Bytes, ProviderError>> + Send + 'static,
        Vec<RetryNotice>,
        u16,
        Option<String>,
    ) {
        (
            stream::iter(self.first.map(Ok)).chain(self.rest),
            self.retries,
            self.status,
            self.request_id,
        )
    }
}

impl HttpClient {
    /// A client with this configuration.
    pub fn new(config: HttpConfig) -> Result<Self, ProviderError> {
        crate::tls::install_tls_provider();
        let build = |proxied: bool| {
            let mut builder = reqwest::Client::builder()
                .connect_timeout(config.connect_timeout)
                .read_timeout(config.idle_timeout)
                .user_agent(config.user_agent.clone());
            if !proxied {
                builder = builder.no_proxy();
            }
            builder.build().map_err(|err| {
                ProviderError::new(
                    ProviderErrorKind::Other,
                    format!("could not build the HTTP client: {}", error_chain(&err)),
                )
            })
        };
        let direct = build(false)?;
        let inner = if config.system_proxy {
            build(true)?
        } else {
            direct.clone()
        };
        let permits = |max: usize| Arc::new(Semaphore::new(max.clamp(1, Semaphore::MAX_PERMITS)));
        Ok(Self {
            inner,
            direct,
            open: permits(config.max_connections),
            open_local: permits(config.max_local_connections),
            last_url: Arc::default(),
            config,
        })
    }

    /// `url` parsed, `None` when it does not parse. The last URL's parse
    /// is kept: parsing one (its host's IDNA pass included) was about
    /// 6,800 instructions, a copy of the parse is a few hundred, and a
    /// client's requests nearly all go to one endpoint.
    fn parse_url(&self, url: &str) -> Option<reqwest::Url> {
        let mut last = self.last_url.lock().unwrap_or_else(|e| e.into_inner());
        if let Some((known, parsed)) = last.as_ref()
            && known == url
        {
            return Some(parsed.clone());
        }
        let parsed = reqwest::Url::parse(url).ok()?;
        *last = Some((url.to_owned(), parsed.clone()));
        Some(parsed)
    }

    /// The configuration.
    pub fn config(&self) -> &HttpConfig {
        &self.config
    }

    /// Sends `request` and returns its event stream once the first byte of
    /// the body has arrived, retrying failures the policy allows until then.
    ///
    /// Cancelling is dropping the returned future (or, later, the stream):
    /// everything stops at once, a backoff sleep included, and the
    /// connection closes.
    pub async fn post_sse(&self, request: StreamRequest) -> Result<StreamResponse, ProviderError> {
        let span = tracing::info_span!("agentkit_http.post_sse", url = %request.url);
        let secrets = credentials(&request.headers);
        let work = self.send_with_retries(request, None).instrument(span);
        let opened = work.await?;
        let (body, retries, status, request_id) = opened.body();
        let events = SseStream::with_limits(body, self.config.sse_limits).with_secrets(secrets);
        Ok(StreamResponse {
            status,
            request_id,
            retries,
            events,
        })
    }

    /// Sends `request` and returns its body as raw bytes once the first one
    /// has arrived, under the same timeouts, retries and cancellation (by drop) as
    /// [`post_sse`](Self::post_sse): for a streaming format other than
    /// server-sent events. `signer`, when given, adds headers to every
    /// attempt as it is sent.
    ///
    /// A failed response is classified like any other
    /// ([`ProviderError::from_response`]); when its body names no error
    /// code, the `x-amzn-ErrorType` header's is kept as the
    /// [`provider_code`](ProviderError::provider_code).
    pub async fn post_bytes(
        &self,
        request: StreamRequest,
        signer: Option<&dyn RequestSigner>,
    ) -> Result<ByteStreamResponse, ProviderError> {
        let span = tracing::info_span!("agentkit_http.post_bytes", url = %request.url);
        let work = self.send_with_retries(request, signer).instrument(span);
        let opened = work.await?;
        let (body, retries, status, request_id) = opened.body();
        Ok(ByteStreamResponse {
            status,
            request_id,
            retries,
            body: body.boxed(),
        })
    }

    /// Fetches `url` with a GET and parses its body as JSON: for the small
    /// questions a host asks a server besides model calls (a local server's
    /// `/models`). Not retried; a status other than 2xx is an error,
    /// classified like a refused model call.
    pub async fn get_json(&self, url: &str) -> Result<serde_json::Value, ProviderError> {
        let client = if is_loopback(url) {
            &self.direct
        } else {
            &self.inner
        };
        let send = client.get(url).header(ACCEPT, "application/json").send();
        let response = send.await.map_err(|err| send_failure(err).error)?;
        let status = response.status().as_u16();
        let text = read_body(response, MAX_JSON_BODY).await;
        if !(200..300).contains(&status) {
            return Err(ProviderError::from_response(status, &text));
        }
        serde_json::from_str(&text).map_err(|err| {
            ProviderError::protocol(format!("the answer from {url} is not JSON: {err}"))
        })
    }

    async fn send_with_retries(
        &self,
        request: StreamRequest,
        signer: Option<&dyn RequestSigner>,
    ) -> Result<
        Opened<impl futures::Stream<Item = Result<Bytes, ProviderError>> + Send + use<>>,
        ProviderError,
    > {
        let StreamRequest {
            url,
            headers: base,
            body,
            accept,
        } = request;
        let body = Bytes::from(body);
        // Parsed once for every attempt and for the loopback check (a
        // URL parse, with its host's IDNA pass, was about 1% of the CPU of
        // ten thousand sessions against a local server, done twice), and
        // taken from the last request's when it went to the same URL.
        let parsed = self.parse_url(&url);
        let mut retries = Vec::new();
        let mut attempt = 1;
        let mut signed = Vec::new();
        loop {
            let headers = match signer {
                Some(signer) => {
                    signed.clone_from(&base);
                    signed.extend(signer.sign(&url, &body)?);
                    &signed
                }
                None => &base,
            };
            let result = self
                .attempt(&url, parsed.as_ref(), headers, accept, body.clone())
                .instrument(tracing::debug_span!("attempt", attempt))
                .await;
            let failure = match result {
                Ok(mut opened) => {
                    opened.retries = retries;
                    return Ok(opened);
                }
                Err(failure) => failure,
            };
            let mut error = failure.error;
            error.attempts = attempt;
            redact_credentials(&mut error.message, headers);
            let delay = if failure.retryable {
                self.config.retry.delay_before(attempt, &error)
            } else {
                None
            };
            let Some(delay) = delay else {
                // However long the provider asked (`1e20` seconds), the wait
                // handed to the caller is bounded by the policy.
                let max = self.config.retry.max_retry_after;
                error.retry_after = error.retry_after.map(|wait| wait.min(max));
                tracing::debug!(%error, attempt, "request failed");
                return Err(error);
            };
            tracing::warn!(%error, attempt, delay_ms = delay.as_millis() as u64, "request failed; retrying");
            retries.push(RetryNotice {
                attempt,
                delay,
                error,
            });
            tokio::time::sleep(delay).await;
            attempt += 1;
        }
    }

    /// One attempt at `url`; `parsed` is its parse, `None` when it does not
    /// parse (reqwest then reports the bad URL).
    async fn attempt(
        &self,
        url: &str,
        parsed: Option<&reqwest::Url>,
        headers: &[(String, String)],
        accept: &'static str,
        body: Bytes,
    ) -> Result<
        Opened<impl futures::Stream<Item = Result<Bytes, ProviderError>> + Send + use<>>,
        AttemptError,
    > {
        let local = parsed.is_some_and(is_loopback_url);
        let client = if local { &self.direct } else { &self.inner };
        // The semaphores are never closed. A local request takes its local
        // place first, so it never holds a place in `open` while it waits.
        let local_permit = if local {
            self.open_local.clone().acquire_owned().await.ok()
        } else {
            None
        };
        let permit = (self.open.clone().acquire_owned().await.ok(), local_permit);
        let builder = match parsed {
            Some(parsed) => client.post(parsed.clone()),
            None => client.post(url),
        };
        let mut builder = builder
            .header(CONTENT_TYPE, "application/json")
            .header(ACCEPT, accept);
        for (name, value) in headers {
            builder = builder.header(name.as_str(), value.as_str());
        }
        let response = builder.body(body).send().await.map_err(send_failure)?;
        let status = response.status().as_u16();
        let request_id = ["x-request-id", "request-id", "x-amzn-requestid"]
            .iter()
            .find_map(|name| response.headers().get(*name))
            .and_then(|value| value.to_str().ok())
            .map(str::to_owned);

        if !response.status().is_success() {
            let retry_after = retry_after(response.headers());
            let error_type = response
                .headers()
                .get("x-amzn-errortype")
                .and_then(|v| v.to_str().ok())
                .map(str::to_owned);
            let mut text = read_error_body(response).await;
            redact_credentials(&mut text, headers);
            let mut error = ProviderError::from_response(status, &text);
            error.retry_after = retry_after;
            if error.provider_code.is_none() {
                error.provider_code = error_type;
            }
            tracing::debug!(status, body = %text, "provider refused the request");
            // A retry status whose body says waiting cannot help (an
            // account out of credit, sent by OpenAI as a 429) is final.
            let hopeless = matches!(
                error.kind,
                ProviderErrorKind::QuotaExceeded
                    | ProviderErrorKind::Authentication
                    | ProviderErrorKind::ContextLengthExceeded
            );
            return Err(AttemptError {
                retryable: self.config.retry.retries_status(status) && !hopeless,
                error,
            });
        }

        // A server that ignores `stream: true`, or a gateway reporting an
        // error with status 200, answers with plain JSON. Say what it said
        // instead of reporting an empty stream.
        let is_json = response
            .headers()
            .get(CONTENT_TYPE)
            .and_then(|v| v.to_str().ok())
            .is_some_and(|v| v.starts_with("application/json"));
        if is_json {
            let mut text = read_error_body(response).await;
            redact_credentials(&mut text, headers);
            let mut error = ProviderError::from_stream_error(&text);
            if !text.contains("\"error\"") {
                error = ProviderError::protocol(
                    "expected an event stream, the provider answered with plain JSON",
                );
            }
            return Err(AttemptError {
                error: error.with_status(status),
                retryable: false,
            });
        }

        // Nothing has reached the caller until the first byte is read, so a
        // connection dropped before it is still safe to retry.
        let mut body = response.bytes_stream();
        let first = match body.next().await {
            Some(Ok(bytes)) => Some(bytes),
            Some(Err(err)) => {
                return Err(AttemptError {
                    error: transport_error(&err, "the connection failed before the stream began"),
                    retryable: true,
                });
            }
            None => None,
        };
        // The place is held for as long as the body is.
        let rest = body.map(move |read| {
            let _open = &permit;
            read.map_err(|err| transport_error(&err, "the stream was interrupted"))
        });
        Ok(Opened {
            status,
            request_id,
            retries: Vec::new(),
            first,
            rest,
        })
    }
}

fn is_loopback(url: &str) -> bool {
    reqwest::Url::parse(url).is_ok_and(|url| is_loopback_url(&url))
}

fn is_loopback_url(url: &reqwest::Url) -> bool {
    let Some(host) = url.host_str() else {
        return false;
    };
    let host = host.trim_start_matches('[').trim_end_matches(']');
    match host.parse::<std::net::IpAddr>() {
        Ok(ip) => ip.is_loopback(),
        Err(_) => host.eq_ignore_ascii_case("localhost"),
    }
}

fn send_failure(err: reqwest::Error) -> AttemptError {
    if err.is_builder() {
        return AttemptError {
            error: ProviderError::new(
                ProviderErrorKind::InvalidRequest,
                format!("the request could not be built: {}", error_chain(&err)),
            ),
            retryable: false,
        };
    }
    let context = if err.is_connect() {
        "could not connect"
    } else if err.is_timeout() {
        "no response in time"
    } else {
        "the request failed"
    };
    AttemptError {
        error: transport_error(&err, context),
        retryable: true,
    }
}

fn transport_error(err: &reqwest::Error, context: &str) -> ProviderError {
    // The idle (read) timeout and the connect timeout: the peer went
    // silent, which a host may want to handle apart from a broken link.
    let kind = if err.is_timeout() || is_timeout_chain(err) {
        ProviderErrorKind::Timeout
    } else {
        ProviderErrorKind::Transport
    };
    let detail = if kind == ProviderErrorKind::Timeout {
        format!("timed out ({})", error_chain(err))
    } else {
        error_chain(err)
    };
    ProviderError::new(kind, format!("{context}: {detail}"))
}

/// reqwest reports a body read that timed out as a decode error whose
/// source is the timeout; look through the chain.
fn is_timeout_chain(err: &(dyn std::error::Error + 'static)) -> bool {
    let mut source = err.source();
    while let Some(inner) = source {
        if let Some(io) = inner.downcast_ref::<std::io::Error>()
            && io.kind() == std::io::ErrorKind::TimedOut
        {
            return true;
        }
        if inner.to_string().contains("operation timed out") {
            return true;
        }
        source = inner.source();
    }
    false
}

/// reqwest's own message is terse ("error sending request"); the useful part
/// is in the sources.
fn error_chain(err: &(dyn std::error::Error + 'static)) -> String {
    let mut text = err.to_string();
    let mut source = err.source();
    while let Some(inner) = source {
        let inner_text = inner.to_string();
        if !text.contains(&inner_text) {
            text.push_str(": ");
            text.push_str(&inner_text);
        }
        source = inner.source();
    }
    text
}

/// `retry-after-ms` (OpenAI) is more precise than `Retry-After`; use it when
/// both are present.
fn retry_after(headers: &HeaderMap) -> Option<Duration> {
    let text = |name| headers.get(name).and_then(|v| v.to_str().ok());
    let ms = text("retry-after-ms").and_then(|v| v.trim().parse::<f64>().ok());
    if let Some(wait) = ms.and_then(|ms| duration_from_secs(ms / 1000.0)) {
        return Some(wait);
    }
    text(RETRY_AFTER.as_str()).and_then(|v| parse_retry_after(v, SystemTime::now()))
}

async fn read_error_body(response: reqwest::Response) -> String {
    read_body(response, MAX_ERROR_BODY).await
}

/// The body, cut at `max` bytes.
async fn read_body(response: reqwest::Response, max: usize) -> String {
    let mut body = Vec::new();
    let mut chunks = response.bytes_stream();
    while let Some(Ok(chunk)) = chunks.next().await {
        body.extend_from_slice(&chunk);
        if body.len() >= max {
            body.truncate(max);
            break;
        }
    }
    String::from_utf8_lossy(&body).into_owned()
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicUsize, Ordering};

    /// How often the CPU count behind the defaults was read (cgroup files
    /// on Linux).
    pub(super) static PARALLELISM_READS: AtomicUsize = AtomicUsize::new(0);

    #[test]
    fn defaults_read_the_cpu_count_once_and_agree() {
        let first = HttpConfig::default();
        let second = HttpConfig::default();
        assert_eq!(first.max_local_connections, second.max_local_connections);
        assert!(first.max_local_connections >= 32);
        assert_eq!(PARALLELISM_READS.load(Ordering::SeqCst), 1);
    }

    #[test]
    fn the_last_url_parse_is_reused_and_replaced_when_the_url_changes() {
        let client = HttpClient::new(HttpConfig::default()).unwrap();
        let clone = client.clone();
        let first = client.parse_url("http://127.0.0.1:8080/v1/chat/completions?x=1");
        assert_eq!(
            first.as_ref().map(reqwest::Url::as_str),
            Some("http://127.0.0.1:8080/v1/chat/completions?x=1")
        );
        // A clone shares it.
        let known = clone.last_url.lock().unwrap().clone();
        assert_eq!(known.map(|(_, parsed)| parsed), first);
        assert_eq!(
            clone.parse_url("http://127.0.0.1:8080/v1/chat/completions?x=1"),
            first
        );
        let other = client
            .parse_url("https://api.openai.com/v1/chat/completions")
            .unwrap();
        assert_eq!(other.host_str(), Some("api.openai.com"));
        assert!(!is_loopback_url(&other));
        // A URL that does not parse is not kept, and leaves the last one.
        assert_eq!(client.parse_url("not a url"), None);
        assert_eq!(
            client
                .last_url
                .lock()
                .unwrap()
                .as_ref()
                .map(|(url, _)| url.as_str()),
            Some("https://api.openai.com/v1/chat/completions")
        );
    }

    #[test]
    fn loopback_urls_are_recognised() {
        assert!(is_loopback("http://127.0.0.1:8080/v1"));
        assert!(is_loopback("http://localhost:11434/v1"));
        assert!(is_loopback("http://[::1]:1/"));
        assert!(!is_loopback("https://api.openai.com/v1"));
        assert!(!is_loopback("not a url"));
    }

    #[test]
    fn debug_output_hides_credentials() {
        let request = StreamRequest::json("http://x", &serde_json::json!({}))
            .with_header("Authorization", "Bearer sk-secret")
            .with_header("x-api-key", "sk-ant-secret")
            .with_header("x-trace", "visible");
        let shown = format!("{request:?}");
        assert!(!shown.contains("secret"), "{shown}");
        assert!(shown.contains("visible"));
    }
}
