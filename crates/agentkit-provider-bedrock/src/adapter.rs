//! The loop's model traits, implemented over ConverseStream.
//!
//! The answer is AWS's binary event-stream, not server-sent events, so the
//! body comes from agentkit-http's raw byte stream (same timeouts, retries
//! before the first byte, proxy rules and cancellation as every adapter)
//! and is fed to the [`FrameDecoder`]. Each attempt is signed with SigV4 as
//! it is sent, so a retry never carries a stale signature.

use crate::BedrockConfig;
use crate::config::encode;
use crate::credentials;
use crate::eventstream::FrameDecoder;
use crate::request::request_body;
use crate::sigv4::{Credentials, SignRequest, authorization};
use crate::stream::{ConverseDecoder, classify};
use agentkit_http::{AdapterShared, RequestSigner, StreamRequest, retry_warnings};
use agentkit_loop::{
    ModelAdapter, ModelError, ModelErrorKind as K, ModelSession, ModelTurn, ModelTurnEvent,
    SessionConfig, TurnRequest,
};
use futures::StreamExt;
use futures::stream::BoxStream;
use std::collections::VecDeque;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::SystemTime;

/// The media type of AWS's binary event-stream.
const EVENT_STREAM: &str = "application/vnd.amazon.eventstream";

type Shared = AdapterShared<BedrockConfig>;

/// A [`ModelAdapter`] for Amazon Bedrock's Converse API.
#[derive(Clone)]
pub struct BedrockAdapter {
    shared: Arc<Shared>,
}

impl std::fmt::Debug for BedrockAdapter {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("BedrockAdapter")
            .field("region", &self.shared.config.region)
            .field("model", &self.shared.config.model)
            .finish_non_exhaustive()
    }
}

impl BedrockAdapter {
    /// An adapter with this configuration.
    pub fn new(config: BedrockConfig) -> Result<Self, ModelError> {
        Ok(Self {
            shared: AdapterShared::new(config.http.clone(), config)?,
        })
    }

    /// The configuration.
    pub fn config(&self) -> &BedrockConfig {
        &self.shared.config
    }
}

#[async_trait::async_trait]
impl ModelAdapter for BedrockAdapter {
    type Session = BedrockSession;

    async fn start_session(&self, _config: SessionConfig) -> Result<BedrockSession, ModelError> {
        Ok(BedrockSession {
            shared: self.shared.clone(),
        })
    }
}

/// A session: runs turns one at a time.
pub struct BedrockSession {
    shared: Arc<Shared>,
}

/// Signs each attempt with SigV4 at the moment it is sent.
struct Signer<'a> {
    config: &'a BedrockConfig,
    credentials: Credentials,
}

impl RequestSigner for Signer<'_> {
    fn sign(&self, url: &str, body: &[u8]) -> Result<Vec<(String, String)>, ModelError> {
        signed_headers(self.config, &self.credentials, url, body, SystemTime::now())
    }
}

impl BedrockSession {
    /// The JSON body [`begin_turn`](ModelSession::begin_turn) sends for this
    /// request, without sending it.
    pub fn request_body(&self, request: &TurnRequest) -> Vec<u8> {
        request_body(&self.shared.config, request)
    }
}

/// The loop's error for a refused or failed request: Bedrock names its
/// errors by exception (`ThrottlingException`, in the `x-amzn-ErrorType`
/// header the HTTP client keeps as the provider code).
fn request_error(error: ModelError) -> ModelError {
    match (error.kind, error.status) {
        (K::Cancelled, _) => ModelError::new(K::Cancelled, error.message),
        (K::Timeout, None) => ModelError::new(K::Timeout, error.message),
        (K::InvalidRequest, None) => ModelError::new(K::InvalidRequest, error.message),
        (_, None) => ModelError::new(
            K::Transport,
            format!("the request to Bedrock failed: {}", error.message),
        ),
        (_, Some(status)) => {
            let name = error.provider_code.as_deref().unwrap_or("");
            let mut model = classify(Some(status), name, &error.message);
            model.retry_after = error.retry_after;
            model
        }
    }
}

/// The headers of a signed request to `url` at `now`.
fn signed_headers(
    config: &BedrockConfig,
    credentials: &Credentials,
    url: &str,
    body: &[u8],
    now: SystemTime,
) -> Result<Vec<(String, String)>, ModelError> {
    let (host, path) = host_and_path(url)
        .ok_or_else(|| ModelError::new(K::InvalidRequest, format!("bad Bedrock URL {url}")))?;
    let amz_date = amz_date(now);
    let mut headers = vec![
        ("content-type".to_owned(), "application/json".to_owned()),
        ("host".to_owned(), host),
        ("x-amz-date".to_owned(), amz_date.clone()),
    ];
    if let Some(token) = &credentials.session_token {
        headers.push(("x-amz-security-token".to_owned(), token.clone()));
    }
    // SigV4 encodes each path segment once more for every service but S3.
    let canonical_path: String = path.split('/').map(encode).collect::<Vec<_>>().join("/");
    let pairs: Vec<(&str, &str)> = headers
        .iter()
        .map(|(n, v)| (n.as_str(), v.as_str()))
        .collect();
    let request = SignRequest {
        method: "POST",
        path: &canonical_path,
        query: "",
        headers: &pairs,
        body,
    };
    let auth = authorization(credentials, &request, &amz_date, &config.region, "bedrock");
    // The client sets `host` and `content-type` itself; both are signed.
    headers.retain(|(name, _)| name != "host" && name != "content-type");
    headers.push(("authorization".to_owned(), auth));
    Ok(headers)
}

/// The `host[:port]` (without the scheme's default port) and the path of
/// an `http(s)://` URL, as SigV4 signs them.
fn host_and_path(url: &str) -> Option<(String, &str)> {
    let (scheme, rest) = url.split_once("://")?;
    let (authority, path) = match rest.find(['/', '?', '#']) {
        Some(at) => (
            &rest[..at],
            rest[at..].split(['?', '#']).next().unwrap_or(""),
        ),
        None => (rest, ""),
    };
    let path = if path.is_empty() { "/" } else { path };
    let default_port = match scheme.to_ascii_lowercase().as_str() {
        "https" => ":443",
        "http" => ":80",
        _ => return None,
    };
    let host = authority.strip_suffix(default_port).unwrap_or(authority);
    if host.is_empty() || host.contains('@') {
        return None;
    }
    Some((host.to_ascii_lowercase(), path))
}

/// `YYYYMMDDTHHMMSSZ` in UTC.
fn amz_date(now: SystemTime) -> String {
    let secs = now
        .duration_since(SystemTime::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs());
    let (days, rest) = ((secs / 86_400) as i64, secs % 86_400);
    // Civil date from days since 1970-01-01 (Howard Hinnant's algorithm).
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    format!(
        "{year:04}{month:02}{day:02}T{:02}{:02}{:02}Z",
        rest / 3600,
        rest / 60 % 60,
        rest % 60
    )
}

#[async_trait::async_trait]
impl ModelSession for BedrockSession {
    type Turn = BedrockTurn;

    async fn begin_turn(&mut self, request: TurnRequest) -> Result<BedrockTurn, ModelError> {
        let body = self.request_body(&request);
        let config = &self.shared.config;
        tracing::debug!(turn = %request.turn_id, model = %config.model, "starting a Bedrock turn");
        let credentials = match &config.credentials {
            Some(credentials) => credentials.clone(),
            None => credentials::resolve(|name| std::env::var(name).ok()).ok_or_else(|| {
                ModelError::new(
                    K::Authentication,
                    "no AWS credentials: set AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY or a shared credentials file",
                )
            })?,
        };
        let signer = Signer {
            config,
            credentials,
        };
        let http = StreamRequest::with_body(config.endpoint(), body).with_accept(EVENT_STREAM);
        let response = self
            .shared
            .client
            .post_bytes(http, Some(&signer))
            .await
            .map_err(request_error)?;
        let bytes = response
            .body
            .map(|chunk| chunk.map(|b| b.to_vec()).map_err(|err| err.message))
            .boxed();
        let mut turn = BedrockTurn::from_byte_stream(bytes);
        turn.queue
            .extend(retry_warnings("bedrock", &response.retries).map(ModelTurnEvent::Warning));
        Ok(turn)
    }
}

/// One streaming turn.
pub struct BedrockTurn {
    body: BoxStream<'static, Result<Vec<u8>, String>>,
    frames: FrameDecoder,
    decoder: ConverseDecoder,
    queue: VecDeque<ModelTurnEvent>,
    /// An error ended the stream: like every turn, it is then over.
    failed: bool,
}

impl std::fmt::Debug for BedrockTurn {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("BedrockTurn")
            .field("done", &self.decoder.is_finished())
            .finish_non_exhaustive()
    }
}

impl BedrockTurn {
    /// A turn decoding an event-stream body that is already open: recorded
    /// bytes replayed in a test.
    pub fn from_byte_stream(body: BoxStream<'static, Result<Vec<u8>, String>>) -> Self {
        Self {
            body,
            frames: FrameDecoder::default(),
            decoder: ConverseDecoder::default(),
            queue: VecDeque::new(),
            failed: false,
        }
    }

    fn poll_inner(
        &mut self,
        cx: &mut Context<'_>,
    ) -> Poll<Result<Option<ModelTurnEvent>, ModelError>> {
        loop {
            if let Some(event) = self.queue.pop_front() {
                return Poll::Ready(Ok(Some(event)));
            }
            if self.decoder.is_finished() {
                return Poll::Ready(Ok(None));
            }
            let frame = match self.frames.next_frame() {
                Ok(frame) => frame,
                Err(err) => return Poll::Ready(Err(ModelError::new(K::Protocol, err.to_string()))),
            };
            if let Some(frame) = frame {
                if let Err(err) = self.decoder.on_frame(&frame, &mut self.queue) {
                    return Poll::Ready(Err(err));
                }
                continue;
            }
            match std::task::ready!(self.body.poll_next_unpin(cx)) {
                Some(Ok(bytes)) => self.frames.push(&bytes),
                Some(Err(err)) => {
                    return Poll::Ready(Err(ModelError::new(
                        K::Transport,
                        format!("the stream was interrupted: {err}"),
                    )));
                }
                None => {
                    if let Err(err) = self.frames.finish() {
                        return Poll::Ready(Err(ModelError::new(K::Protocol, err.to_string())));
                    }
                    return Poll::Ready(Err(ModelError::new(
                        K::Protocol,
                        "the stream ended before its metadata event",
                    )));
                }
            }
        }
    }
}

impl ModelTurn for BedrockTurn {
    fn poll_next_event(
        &mut self,
        cx: &mut Context<'_>,
    ) -> Poll<Result<Option<ModelTurnEvent>, ModelError>> {
        if self.failed {
            return Poll::Ready(Ok(None));
        }
        let polled = self.poll_inner(cx);
        self.failed = matches!(polled, Poll::Ready(Err(_)));
        polled
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[test]
    fn hosts_and_paths_are_signed_as_sent() {
        let cases = [
            (
                "https://bedrock-runtime.us-east-1.amazonaws.com/model/m/converse-stream",
                Some((
                    "bedrock-runtime.us-east-1.amazonaws.com",
                    "/model/m/converse-stream",
                )),
            ),
            (
                "http://127.0.0.1:4000/model/a%3Ab/converse-stream",
                Some(("127.0.0.1:4000", "/model/a%3Ab/converse-stream")),
            ),
            ("https://Example.com:443", Some(("example.com", "/"))),
            ("ftp://example.com/x", None),
            ("no scheme", None),
        ];
        for (url, expected) in cases {
            let got = host_and_path(url);
            assert_eq!(
                got.as_ref().map(|(h, p)| (h.as_str(), *p)),
                expected,
                "{url}"
            );
        }
    }

    #[test]
    fn amz_dates_are_utc_calendar_dates() {
        let at = |secs| amz_date(SystemTime::UNIX_EPOCH + Duration::from_secs(secs));
        assert_eq!(at(0), "19700101T000000Z");
        assert_eq!(at(1_440_938_160), "20150830T123600Z");
        assert_eq!(at(951_782_400), "20000229T000000Z");
    }
}
