//! The loop's model traits, implemented over ConverseStream.
//!
//! The answer is AWS's binary event-stream, not server-sent events, so the
//! body is read here (with reqwest, already in the tree through
//! agentkit-http) and fed to the [`FrameDecoder`]. Each request is signed
//! with SigV4 at send time; failed requests are retried under the HTTP
//! config's policy until the stream has begun, never after.

use crate::BedrockConfig;
use crate::config::encode;
use crate::credentials;
use crate::eventstream::FrameDecoder;
use crate::request::request_body;
use crate::sigv4::{Credentials, SignRequest, authorization};
use crate::stream::{ConverseDecoder, classify, message_of};
use agentkit_core::TurnCancellation;
use agentkit_loop::{
    ModelAdapter, ModelError, ModelErrorKind as M, ModelSession, ModelTurn, ModelTurnEvent,
    SessionConfig, TurnRequest,
};
use futures::StreamExt;
use futures::stream::BoxStream;
use std::collections::VecDeque;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::SystemTime;

struct Shared {
    config: BedrockConfig,
    client: reqwest::Client,
}

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
        agentkit_http::install_tls_provider();
        let mut builder = reqwest::Client::builder()
            .connect_timeout(config.http.connect_timeout)
            .read_timeout(config.http.idle_timeout)
            .user_agent(config.http.user_agent.clone());
        let loopback = config
            .base_url
            .as_deref()
            .is_some_and(|u| u.contains("://127.0.0.1") || u.contains("://localhost"));
        if !config.http.system_proxy || loopback {
            builder = builder.no_proxy();
        }
        let client = builder.build().map_err(|err| {
            ModelError::new(M::Other, format!("could not build the HTTP client: {err}"))
        })?;
        Ok(Self {
            shared: Arc::new(Shared { config, client }),
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

impl BedrockSession {
    /// The JSON body [`begin_turn`](ModelSession::begin_turn) sends for this
    /// request, without sending it.
    pub fn request_body(&self, request: &TurnRequest) -> Vec<u8> {
        request_body(&self.shared.config, request)
    }

    async fn send(&self, body: Vec<u8>) -> Result<(reqwest::Response, Vec<String>), ModelError> {
        let config = &self.shared.config;
        let credentials = match &config.credentials {
            Some(credentials) => credentials.clone(),
            None => credentials::resolve(|name| std::env::var(name).ok()).ok_or_else(|| {
                ModelError::new(
                    M::Authentication,
                    "no AWS credentials: set AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY or a shared credentials file",
                )
            })?,
        };
        let url = config.endpoint();
        let mut warnings = Vec::new();
        let mut attempt = 1;
        loop {
            let headers = signed_headers(config, &credentials, &url, &body, SystemTime::now())?;
            let mut builder = self.shared.client.post(&url);
            for (name, value) in &headers {
                builder = builder.header(name.as_str(), value.as_str());
            }
            let error = match builder.body(body.clone()).send().await {
                Ok(response) if response.status().is_success() => {
                    return Ok((response, warnings));
                }
                Ok(response) => {
                    let status = response.status().as_u16();
                    let name = response
                        .headers()
                        .get("x-amzn-errortype")
                        .and_then(|v| v.to_str().ok())
                        .unwrap_or("")
                        .to_owned();
                    let text = response.text().await.unwrap_or_default();
                    let json = serde_json::from_str(&text).unwrap_or_default();
                    let message = match message_of(&json) {
                        "" => text.trim().chars().take(2000).collect(),
                        m => m.to_owned(),
                    };
                    let mut error = classify(Some(status), &name, &message);
                    if !error.is_retryable() || !config.http.retry.retries_status(status) {
                        return Err(error);
                    }
                    error.status = Some(status);
                    error
                }
                Err(err) => ModelError::new(
                    if err.is_timeout() {
                        M::Timeout
                    } else {
                        M::Transport
                    },
                    format!("the request to Bedrock failed: {err}"),
                ),
            };
            if attempt >= config.http.retry.max_attempts {
                return Err(error);
            }
            let delay = config.http.retry.backoff(attempt);
            warnings.push(format!(
                "bedrock: attempt {attempt} failed ({error}); retrying"
            ));
            tokio::time::sleep(delay).await;
            attempt += 1;
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
    let parsed = reqwest::Url::parse(url).map_err(|err| {
        ModelError::new(M::InvalidRequest, format!("bad Bedrock URL {url}: {err}"))
    })?;
    let host = match (parsed.host_str(), parsed.port()) {
        (Some(host), Some(port)) => format!("{host}:{port}"),
        (Some(host), None) => host.to_owned(),
        _ => {
            return Err(ModelError::new(
                M::InvalidRequest,
                "the Bedrock URL has no host",
            ));
        }
    };
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
    let canonical_path: String = parsed
        .path()
        .split('/')
        .map(encode)
        .collect::<Vec<_>>()
        .join("/");
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
    headers.retain(|(name, _)| name != "host");
    headers.push(("authorization".to_owned(), auth));
    headers.push((
        "accept".to_owned(),
        "application/vnd.amazon.eventstream".to_owned(),
    ));
    Ok(headers)
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

    async fn begin_turn(
        &mut self,
        request: TurnRequest,
        cancellation: Option<TurnCancellation>,
    ) -> Result<BedrockTurn, ModelError> {
        let body = self.request_body(&request);
        tracing::debug!(turn = %request.turn_id, model = %self.shared.config.model, "starting a Bedrock turn");
        let send = self.send(body);
        let (response, warnings) = match &cancellation {
            Some(token) => tokio::select! {
                biased;
                () = token.cancelled() => return Err(ModelError::new(M::Cancelled, "the request was cancelled")),
                result = send => result?,
            },
            None => send.await?,
        };
        let bytes = response
            .bytes_stream()
            .map(|chunk| chunk.map(|b| b.to_vec()).map_err(|err| err.to_string()))
            .boxed();
        let mut turn = BedrockTurn::from_byte_stream(bytes);
        turn.queue
            .extend(warnings.into_iter().map(ModelTurnEvent::Warning));
        Ok(turn)
    }
}

/// One streaming turn.
pub struct BedrockTurn {
    body: BoxStream<'static, Result<Vec<u8>, String>>,
    frames: FrameDecoder,
    decoder: ConverseDecoder,
    queue: VecDeque<ModelTurnEvent>,
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
                Err(err) => return Poll::Ready(Err(ModelError::new(M::Protocol, err.to_string()))),
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
                        M::Transport,
                        format!("the stream was interrupted: {err}"),
                    )));
                }
                None => {
                    if let Err(err) = self.frames.finish() {
                        return Poll::Ready(Err(ModelError::new(M::Protocol, err.to_string())));
                    }
                    return Poll::Ready(Err(ModelError::new(
                        M::Protocol,
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
        self.poll_inner(cx)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[test]
    fn amz_dates_are_utc_calendar_dates() {
        let at = |secs| amz_date(SystemTime::UNIX_EPOCH + Duration::from_secs(secs));
        assert_eq!(at(0), "19700101T000000Z");
        assert_eq!(at(1_440_938_160), "20150830T123600Z");
        assert_eq!(at(951_782_400), "20000229T000000Z");
    }
}
