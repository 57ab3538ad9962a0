//! The loop's model traits, implemented over Chat Completions.
//!
//! An adapter holds the configuration and one HTTP client (so connections
//! are pooled across sessions); a session remembers its default cache
//! request; a turn owns the open event stream and a queue of decoded events,
//! starting with a warning for every retried request.

use crate::OpenAiConfig;
use crate::request::{ToolEncodings, request_body};
use crate::stream::ChunkDecoder;
use agentkit_http::{AdapterShared, DecodedStream, SseStream, StreamRequest, retry_warnings};
use agentkit_loop::{
    EncodedTranscript, ModelAdapter, ModelError, ModelSession, ModelTurn, ModelTurnEvent,
    PromptCacheRequest, SessionConfig, TurnRequest,
};
use std::sync::Arc;
use std::task::{Context, Poll};

type Shared = AdapterShared<OpenAiConfig>;

/// A [`ModelAdapter`] for OpenAI Chat Completions and compatible servers.
#[derive(Clone)]
pub struct OpenAiAdapter {
    shared: Arc<Shared>,
    /// The tools' encodings, shared by the sessions.
    tools: Arc<ToolEncodings>,
}

impl std::fmt::Debug for OpenAiAdapter {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // The key stays out of logs.
        f.debug_struct("OpenAiAdapter")
            .field("base_url", &self.shared.config.base_url)
            .field("model", &self.shared.config.model)
            .finish_non_exhaustive()
    }
}

impl OpenAiAdapter {
    /// An adapter with this configuration.
    pub fn new(config: OpenAiConfig) -> Result<Self, ModelError> {
        Ok(Self {
            shared: AdapterShared::new(config.http.clone(), config)?,
            tools: Arc::new(ToolEncodings::chat()),
        })
    }

    /// The configuration.
    pub fn config(&self) -> &OpenAiConfig {
        &self.shared.config
    }
}

#[async_trait::async_trait]
impl ModelAdapter for OpenAiAdapter {
    type Session = OpenAiSession;

    async fn start_session(&self, config: SessionConfig) -> Result<OpenAiSession, ModelError> {
        Ok(OpenAiSession {
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
pub struct OpenAiSession {
    shared: Arc<Shared>,
    tools: Arc<ToolEncodings>,
    cache: Option<PromptCacheRequest>,
    ids: FallbackIds,
    encoded: EncodedTranscript,
}

/// Ids for tool calls a server sent without one, unique across the session
/// (and across sessions: the prefix is random), so a result can never be
/// paired with the call of an earlier turn.
pub(crate) struct FallbackIds {
    nonce: u64,
    turns: u64,
}

impl FallbackIds {
    pub(crate) fn new() -> Self {
        use std::hash::{BuildHasher, Hasher};
        let mut hasher = std::collections::hash_map::RandomState::new().build_hasher();
        hasher.write_u128(
            std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map(|d| d.as_nanos())
                .unwrap_or_default(),
        );
        Self {
            nonce: hasher.finish() & 0xffff_ffff,
            turns: 0,
        }
    }

    /// The prefix for the next turn's ids.
    pub(crate) fn next_turn(&mut self) -> String {
        self.turns += 1;
        format!("call_{:08x}_{}_", self.nonce, self.turns)
    }
}

impl OpenAiSession {
    /// The JSON body [`begin_turn`](ModelSession::begin_turn) sends for this
    /// request, without sending it: for logs, tests, and measuring what
    /// building a request costs apart from the network.
    pub fn request_body(&mut self, request: &TurnRequest) -> Vec<u8> {
        let cache = request.cache.as_ref().or(self.cache.as_ref());
        request_body(
            &self.shared.config,
            request,
            cache,
            &mut self.encoded,
            &self.tools,
        )
    }
}

#[async_trait::async_trait]
impl ModelSession for OpenAiSession {
    type Turn = OpenAiTurn;

    async fn begin_turn(&mut self, request: TurnRequest) -> Result<OpenAiTurn, ModelError> {
        let body = self.request_body(&request);
        let config = &self.shared.config;
        let mut http = StreamRequest::with_body(config.endpoint(), body);
        if let Some(key) = config.api_key.as_deref().filter(|k| !k.is_empty()) {
            http = http.with_header("authorization", format!("Bearer {key}"));
        }
        for (name, value) in &config.extra_headers {
            http = http.with_header(name.clone(), value.clone());
        }
        tracing::debug!(turn = %request.turn_id, model = %config.model, "starting a Chat Completions turn");
        let response = self.shared.client.post_sse(http).await?;
        let warnings = retry_warnings("openai", &response.retries).map(ModelTurnEvent::Warning);
        Ok(OpenAiTurn {
            stream: DecodedStream::new(
                response.events,
                ChunkDecoder::new(self.ids.next_turn(), pricing(config)),
            )
            .with_queued(warnings),
        })
    }
}

/// One streaming turn.
pub struct OpenAiTurn {
    stream: DecodedStream<ChunkDecoder>,
}

impl std::fmt::Debug for OpenAiTurn {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("OpenAiTurn")
            .field("queued", &self.stream.queued())
            .field("done", &self.stream.is_done())
            .finish_non_exhaustive()
    }
}

impl OpenAiTurn {
    /// A turn decoding an event stream that is already open: a recorded
    /// response replayed in a test, or bytes fed from memory in a benchmark.
    pub fn from_events(events: SseStream) -> Self {
        Self {
            stream: DecodedStream::new(
                events,
                ChunkDecoder::new(FallbackIds::new().next_turn(), None),
            ),
        }
    }
}

impl ModelTurn for OpenAiTurn {
    fn poll_next_event(
        &mut self,
        cx: &mut Context<'_>,
    ) -> Poll<Result<Option<ModelTurnEvent>, ModelError>> {
        self.stream.poll_next_reporting(
            cx,
            |error| tracing::debug!(%error, "Chat Completions turn failed"),
        )
    }
}

/// The price table and the model it is looked up by, when one is set.
pub(crate) fn pricing(config: &OpenAiConfig) -> Option<(Arc<agentkit_http::PriceTable>, String)> {
    config
        .prices
        .as_ref()
        .map(|prices| (prices.clone(), config.model.clone()))
}
