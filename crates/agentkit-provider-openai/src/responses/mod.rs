//! The OpenAI Responses API (`POST /v1/responses`), streaming.
//!
//! The Responses API is what OpenAI now recommends over Chat Completions:
//! reasoning models keep their reasoning across tool rounds (as encrypted
//! items when nothing is stored on OpenAI's side), and usage reports cached
//! and reasoning tokens. It lives beside the Chat Completions adapter rather
//! than in a crate of its own because it shares the endpoint, key, HTTP
//! policy, tool choice and prices ([`OpenAiConfig`](crate::OpenAiConfig))
//! and the id scheme, and a separate crate would only add a build unit.
//!
//! ```
//! use agentkit_provider_openai::{ResponsesAdapter, ResponsesConfig};
//!
//! let config = ResponsesConfig::openai("sk-...", "gpt-5-mini")
//!     .with_reasoning_summary("auto");
//! let adapter = ResponsesAdapter::new(config).unwrap();
//! # drop(adapter);
//! ```

mod config;
pub(crate) mod hosted;
mod request;
mod stream;

pub use config::ResponsesConfig;

use crate::adapter::FallbackIds;
use crate::request::ToolEncodings;
use agentkit_http::{
    AdapterShared, DecodedStream, ProviderError, SseStream, StreamRequest, StreamResponse,
    retry_warnings,
};
use agentkit_loop::{
    EncodedTranscript, ModelAdapter, ModelError, ModelSession, ModelTurn, ModelTurnEvent,
    PromptCacheRequest, SessionConfig, TurnRequest,
};
use std::sync::Arc;
use std::task::{Context, Poll};
use stream::ResponsesDecoder;

type Shared = AdapterShared<ResponsesConfig>;

/// A [`ModelAdapter`] for the OpenAI Responses API.
#[derive(Clone)]
pub struct ResponsesAdapter {
    shared: Arc<Shared>,
    /// The tools' encodings, shared by the sessions.
    tools: Arc<ToolEncodings>,
}

impl std::fmt::Debug for ResponsesAdapter {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ResponsesAdapter")
            .field("base_url", &self.shared.config.openai.base_url)
            .field("model", &self.shared.config.openai.model)
            .field("store", &self.shared.config.store)
            .finish_non_exhaustive()
    }
}

impl ResponsesAdapter {
    /// An adapter with this configuration.
    pub fn new(config: impl Into<ResponsesConfig>) -> Result<Self, ModelError> {
        let config = config.into();
        Ok(Self {
            shared: AdapterShared::new(config.openai.http.clone(), config)?,
            tools: Arc::new(request::tool_encodings()),
        })
    }

    /// The configuration.
    pub fn config(&self) -> &ResponsesConfig {
        &self.shared.config
    }
}

#[async_trait::async_trait]
impl ModelAdapter for ResponsesAdapter {
    type Session = ResponsesSession;

    async fn start_session(&self, config: SessionConfig) -> Result<ResponsesSession, ModelError> {
        Ok(ResponsesSession {
            shared: self.shared.clone(),
            tools: self.tools.clone(),
            cache: config.cache,
            ids: FallbackIds::new(),
            encoded: EncodedTranscript::new(),
        })
    }
}

/// A session: runs turns one at a time, keeping each transcript item's
/// encoding for the next turn.
pub struct ResponsesSession {
    shared: Arc<Shared>,
    tools: Arc<ToolEncodings>,
    cache: Option<PromptCacheRequest>,
    ids: FallbackIds,
    encoded: EncodedTranscript,
}

impl std::fmt::Debug for ResponsesSession {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ResponsesSession").finish_non_exhaustive()
    }
}

impl ResponsesSession {
    /// The JSON body [`begin_turn`](ModelSession::begin_turn) sends for this
    /// request, without sending it: for logs, tests, and measuring what
    /// building a request costs apart from the network.
    pub fn request_body(&mut self, request: &TurnRequest) -> Vec<u8> {
        self.body(request, true)
    }

    fn body(&mut self, request: &TurnRequest, chain: bool) -> Vec<u8> {
        let cache = request.cache.as_ref().or(self.cache.as_ref());
        request::request_body(
            &self.shared.config,
            request,
            cache,
            &mut self.encoded,
            chain,
            &self.tools,
        )
    }

    /// Sends one body, with the key and the configured headers.
    async fn send(&self, body: Vec<u8>) -> Result<StreamResponse, ProviderError> {
        let config = &self.shared.config;
        let mut http = StreamRequest::with_body(config.endpoint(), body);
        if let Some(key) = config.openai.api_key.as_deref().filter(|k| !k.is_empty()) {
            http = http.with_header("authorization", format!("Bearer {key}"));
        }
        for (name, value) in &config.openai.extra_headers {
            http = http.with_header(name.clone(), value.clone());
        }
        self.shared.client.post_sse(http).await
    }
}

/// `true` when the server refused a request because it no longer has (or
/// never had) the response named by `previous_response_id`: OpenAI's HTTP
/// 400 `{"error": {"code": "previous_response_not_found", "param":
/// "previous_response_id", "message": "Previous response with id '...' not
/// found."}}`, or a compatible server's wording of it.
pub(crate) fn is_previous_response_missing(error: &ProviderError) -> bool {
    if !matches!(error.status, Some(400 | 404)) {
        return false;
    }
    if error.provider_code.as_deref() == Some("previous_response_not_found") {
        return true;
    }
    let lower = error.message.to_ascii_lowercase();
    (lower.contains("previous response") || lower.contains("previous_response_id"))
        && lower.contains("not found")
}

#[async_trait::async_trait]
impl ModelSession for ResponsesSession {
    type Turn = ResponsesTurn;

    async fn begin_turn(&mut self, request: TurnRequest) -> Result<ResponsesTurn, ModelError> {
        let body = self.body(&request, true);
        let chained =
            self.shared.config.previous_response_id && request::continues_a_response(&request);
        tracing::debug!(turn = %request.turn_id, model = %self.shared.config.openai.model, chained, "starting a Responses turn");
        let mut fallback = None;
        let response = match self.send(body).await {
            // The server lost the stored response (expired, deleted, another
            // region): send the whole history once, in the same turn.
            Err(error) if chained && is_previous_response_missing(&error) => {
                tracing::debug!(%error, "previous response gone; resending the full history");
                fallback = Some(ModelTurnEvent::Warning(format!(
                    "openai responses: {}; sent the whole history instead",
                    error.message
                )));
                let body = self.body(&request, false);
                self.send(body).await
            }
            other => other,
        }?;
        let config = &self.shared.config;
        let warnings = fallback.into_iter().chain(
            retry_warnings("openai responses", &response.retries).map(ModelTurnEvent::Warning),
        );
        let pricing = config
            .openai
            .prices
            .as_ref()
            .map(|p| (p.clone(), config.openai.model.clone()));
        let decoder = ResponsesDecoder::new(self.ids.next_turn(), pricing);
        Ok(ResponsesTurn {
            stream: DecodedStream::new(response.events, decoder).with_queued(warnings),
        })
    }
}

/// One streaming turn.
pub struct ResponsesTurn {
    stream: DecodedStream<ResponsesDecoder>,
}

impl std::fmt::Debug for ResponsesTurn {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ResponsesTurn")
            .field("queued", &self.stream.queued())
            .field("done", &self.stream.is_done())
            .finish_non_exhaustive()
    }
}

impl ResponsesTurn {
    /// A turn decoding an event stream that is already open: a recorded
    /// response replayed in a test, or bytes fed from memory by a fuzzer or
    /// a benchmark.
    pub fn from_events(events: SseStream) -> Self {
        Self {
            stream: DecodedStream::new(
                events,
                ResponsesDecoder::new(FallbackIds::new().next_turn(), None),
            ),
        }
    }
}

impl ModelTurn for ResponsesTurn {
    fn poll_next_event(
        &mut self,
        cx: &mut Context<'_>,
    ) -> Poll<Result<Option<ModelTurnEvent>, ModelError>> {
        self.stream
            .poll_next_reporting(cx, |error| tracing::debug!(%error, "Responses turn failed"))
    }
}
