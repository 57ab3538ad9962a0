//! The loop's model traits, implemented over the Messages API.
//!
//! An adapter holds the configuration and one HTTP client (so connections
//! are pooled across sessions); a session remembers its default cache
//! request; a turn owns the open event stream and a queue of decoded events,
//! starting with a warning for every retried request.

use crate::AnthropicConfig;
use crate::request::request_body;
use crate::stream::EventDecoder;
use agentkit_http::{AdapterShared, DecodedStream, SseStream, StreamRequest, retry_warnings};
use agentkit_loop::{
    EncodedTranscript, ModelAdapter, ModelError, ModelSession, ModelTurn, ModelTurnEvent,
    PromptCacheRequest, SessionConfig, TurnRequest,
};
use std::sync::Arc;
use std::task::{Context, Poll};

type Shared = AdapterShared<AnthropicConfig>;

/// A [`ModelAdapter`] for OpenAI Messages API and compatible servers.
#[derive(Clone)]
pub struct AnthropicAdapter {
    shared: Arc<Shared>,
}

impl std::fmt::Debug for AnthropicAdapter {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // The key stays out of logs.
        f.debug_struct("AnthropicAdapter")
            .field("base_url", &self.shared.config.base_url)
            .field("model", &self.shared.config.model)
            .finish_non_exhaustive()
    }
}

impl AnthropicAdapter {
    /// An adapter with this configuration.
    pub fn new(config: AnthropicConfig) -> Result<Self, ModelError> {
        Ok(Self {
            shared: AdapterShared::new(config.http.clone(), config)?,
        })
    }

    /// The configuration.
    pub fn config(&self) -> &AnthropicConfig {
        &self.shared.config
    }
}

#[async_trait::async_trait]
impl ModelAdapter for AnthropicAdapter {
    type Session = AnthropicSession;

    async fn start_session(&self, config: SessionConfig) -> Result<AnthropicSession, ModelError> {
        Ok(AnthropicSession {
            shared: self.shared.clone(),
            cache: config.cache,
            encoded: EncodedTranscript::new(),
        })
    }
}

/// A session: runs turns one at a time, keeping each transcript item's
/// encoding for the next turn.
pub struct AnthropicSession {
    shared: Arc<Shared>,
    cache: Option<PromptCacheRequest>,
    encoded: EncodedTranscript,
}

impl AnthropicSession {
    /// The JSON body [`begin_turn`](ModelSession::begin_turn) sends for this
    /// request, without sending it: for logs, tests, and measuring what
    /// building a request costs apart from the network.
    pub fn request_body(&mut self, request: &TurnRequest) -> Vec<u8> {
        let cache = request.cache.as_ref().or(self.cache.as_ref());
        request_body(&self.shared.config, request, cache, &mut self.encoded)
    }
}

#[async_trait::async_trait]
impl ModelSession for AnthropicSession {
    type Turn = AnthropicTurn;

    async fn begin_turn(&mut self, request: TurnRequest) -> Result<AnthropicTurn, ModelError> {
        let body = self.request_body(&request);
        let config = &self.shared.config;
        let mut http = StreamRequest::with_body(config.endpoint(), body);
        if let Some(key) = config.api_key.as_deref().filter(|k| !k.is_empty()) {
            http = http.with_header("x-api-key", key);
        }
        http = http.with_header("anthropic-version", config.api_version.clone());
        if !config.betas.is_empty() {
            http = http.with_header("anthropic-beta", config.betas.join(","));
        }
        for (name, value) in &config.extra_headers {
            http = http.with_header(name.clone(), value.clone());
        }
        tracing::debug!(turn = %request.turn_id, model = %config.model, "starting a Messages API turn");
        let response = self.shared.client.post_sse(http).await?;
        let warnings = retry_warnings("anthropic", &response.retries).map(ModelTurnEvent::Warning);
        Ok(AnthropicTurn {
            stream: DecodedStream::new(
                response.events,
                EventDecoder::new(
                    request.output_schema.as_ref().map(|s| s.name.clone()),
                    config.prices.clone().map(|p| (p, config.model.clone())),
                ),
            )
            .with_queued(warnings),
        })
    }
}

/// One streaming turn.
pub struct AnthropicTurn {
    stream: DecodedStream<EventDecoder>,
}

impl std::fmt::Debug for AnthropicTurn {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AnthropicTurn")
            .field("queued", &self.stream.queued())
            .field("done", &self.stream.is_done())
            .finish_non_exhaustive()
    }
}

impl AnthropicTurn {
    /// A turn decoding an event stream that is already open: a recorded
    /// response replayed in a test, or bytes fed from memory in a benchmark.
    pub fn from_events(events: SseStream) -> Self {
        Self {
            stream: DecodedStream::new(events, EventDecoder::default()),
        }
    }
}

impl ModelTurn for AnthropicTurn {
    fn poll_next_event(
        &mut self,
        cx: &mut Context<'_>,
    ) -> Poll<Result<Option<ModelTurnEvent>, ModelError>> {
        self.stream.poll_next_reporting(
            cx,
            |error| tracing::debug!(%error, "Messages API turn failed"),
        )
    }
}
