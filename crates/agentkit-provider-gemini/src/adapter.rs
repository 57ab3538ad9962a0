//! The loop's model traits, implemented over `streamGenerateContent`.
//!
//! An adapter holds the configuration and one HTTP client (connections are
//! pooled across sessions); a turn owns the open event stream and a queue
//! of decoded events, starting with a warning for every retried request.

use crate::GeminiConfig;
use crate::request::request_body;
use crate::stream::GeminiDecoder;
use agentkit_http::{AdapterShared, DecodedStream, SseStream, StreamRequest, retry_warnings};
use agentkit_loop::{
    ModelAdapter, ModelError, ModelSession, ModelTurn, ModelTurnEvent, SessionConfig, TurnRequest,
};
use std::sync::Arc;
use std::task::{Context, Poll};

type Shared = AdapterShared<GeminiConfig>;

/// A [`ModelAdapter`] for Google Gemini.
#[derive(Clone)]
pub struct GeminiAdapter {
    shared: Arc<Shared>,
}

impl std::fmt::Debug for GeminiAdapter {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("GeminiAdapter")
            .field("base_url", &self.shared.config.base_url)
            .field("model", &self.shared.config.model)
            .finish_non_exhaustive()
    }
}

impl GeminiAdapter {
    /// An adapter with this configuration.
    pub fn new(config: GeminiConfig) -> Result<Self, ModelError> {
        Ok(Self {
            shared: AdapterShared::new(config.http.clone(), config)?,
        })
    }

    /// The configuration.
    pub fn config(&self) -> &GeminiConfig {
        &self.shared.config
    }
}

#[async_trait::async_trait]
impl ModelAdapter for GeminiAdapter {
    type Session = GeminiSession;

    async fn start_session(&self, _config: SessionConfig) -> Result<GeminiSession, ModelError> {
        Ok(GeminiSession {
            shared: self.shared.clone(),
            nonce: nonce(),
            turns: 0,
        })
    }
}

/// A random number naming this session's id-less calls, so a result can
/// never pair with another session's or turn's call.
fn nonce() -> u64 {
    use std::hash::{BuildHasher, Hasher};
    let mut hasher = std::collections::hash_map::RandomState::new().build_hasher();
    hasher.write_u8(0);
    hasher.finish() & 0xffff_ffff
}

/// A session: runs turns one at a time.
pub struct GeminiSession {
    shared: Arc<Shared>,
    nonce: u64,
    turns: u64,
}

impl GeminiSession {
    /// The JSON body [`begin_turn`](ModelSession::begin_turn) sends for this
    /// request, without sending it.
    pub fn request_body(&self, request: &TurnRequest) -> Vec<u8> {
        request_body(&self.shared.config, request)
    }
}

#[async_trait::async_trait]
impl ModelSession for GeminiSession {
    type Turn = GeminiTurn;

    async fn begin_turn(&mut self, request: TurnRequest) -> Result<GeminiTurn, ModelError> {
        let config = &self.shared.config;
        let mut http = StreamRequest::with_body(config.endpoint(), self.request_body(&request));
        if let Some(key) = config.api_key.as_deref().filter(|k| !k.is_empty()) {
            http = http.with_header("x-goog-api-key", key);
        }
        for (name, value) in &config.extra_headers {
            http = http.with_header(name.clone(), value.clone());
        }
        tracing::debug!(turn = %request.turn_id, model = %config.model, "starting a Gemini turn");
        let response = self.shared.client.post_sse(http).await?;
        self.turns += 1;
        let ids = format!("call_{:08x}_{}_", self.nonce, self.turns);
        let pricing = config.prices.clone().map(|p| (p, config.model.clone()));
        let warnings = retry_warnings("gemini", &response.retries).map(ModelTurnEvent::Warning);
        Ok(GeminiTurn {
            stream: DecodedStream::new(response.events, GeminiDecoder::new(ids, pricing))
                .with_queued(warnings),
        })
    }
}

/// One streaming turn.
pub struct GeminiTurn {
    stream: DecodedStream<GeminiDecoder>,
}

impl std::fmt::Debug for GeminiTurn {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("GeminiTurn")
            .field("done", &self.stream.is_done())
            .finish_non_exhaustive()
    }
}

impl GeminiTurn {
    /// A turn decoding an event stream that is already open: a recorded
    /// response replayed in a test.
    pub fn from_events(events: SseStream) -> Self {
        Self {
            stream: DecodedStream::new(
                events,
                GeminiDecoder::new(format!("call_{:08x}_", nonce()), None),
            ),
        }
    }
}

impl ModelTurn for GeminiTurn {
    fn poll_next_event(
        &mut self,
        cx: &mut Context<'_>,
    ) -> Poll<Result<Option<ModelTurnEvent>, ModelError>> {
        self.stream.poll_next(cx)
    }
}
