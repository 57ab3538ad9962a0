//! The boundary between the loop and a model provider.
//!
//! An adapter ([`ModelAdapter`]) opens sessions; a session
//! ([`ModelSession`]) runs turns; a turn ([`ModelTurn`]) is a stream of
//! [`ModelTurnEvent`]s: content deltas, tool calls, usage, and one
//! `Finished`. Provider crates implement these three traits; the loop never
//! sees HTTP.

use crate::{PromptCacheRequest, TranscriptView};
use agentkit_core::{
    Delta, FinishReason, MetadataMap, SessionId, ToolCallPart, TurnCancellation, TurnId, Usage,
};
/// The one error a model call ends in, shared with the HTTP layer.
pub use agentkit_core::{ModelError, ModelErrorKind};
use agentkit_tools_core::ToolSpec;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};

/// How a session is opened.
#[derive(Clone, Debug, PartialEq)]
pub struct SessionConfig {
    /// The session's id.
    pub session_id: SessionId,
    /// The prompt-cache request used for every turn unless a turn overrides it.
    pub cache: Option<PromptCacheRequest>,
    /// Extra data for the adapter.
    pub metadata: MetadataMap,
}

impl SessionConfig {
    /// A session with this id, no cache request and no metadata.
    pub fn new(session_id: impl Into<SessionId>) -> Self {
        Self {
            session_id: session_id.into(),
            cache: None,
            metadata: MetadataMap::new(),
        }
    }

    /// Sets the session's default prompt-cache request.
    pub fn with_cache(mut self, cache: PromptCacheRequest) -> Self {
        self.cache = Some(cache);
        self
    }
}

/// Everything a model needs for one turn.
#[derive(Clone, Debug)]
pub struct TurnRequest {
    /// The session.
    pub session_id: SessionId,
    /// This turn's id (`turn-<n>`).
    pub turn_id: TurnId,
    /// The transcript so far; a shared view, not a copy.
    pub transcript: TranscriptView,
    /// The tools the model may call: the catalog's list, shared (build one
    /// from a `Vec` with `.into()`).
    pub available_tools: Arc<[Arc<ToolSpec>]>,
    /// Extra data.
    pub metadata: MetadataMap,
    /// Prompt caching for this turn.
    pub cache: Option<PromptCacheRequest>,
    /// The JSON schema the answer must match (structured output), if any.
    pub output_schema: Option<Arc<OutputSchema>>,
}

impl TurnRequest {
    /// A request over this transcript, with no tools, metadata, cache
    /// request or output schema.
    pub fn new(
        session_id: impl Into<SessionId>,
        turn_id: TurnId,
        transcript: TranscriptView,
    ) -> Self {
        Self {
            session_id: session_id.into(),
            turn_id,
            transcript,
            available_tools: Arc::default(),
            metadata: MetadataMap::new(),
            cache: None,
            output_schema: None,
        }
    }

    /// Asks for an answer matching this schema.
    pub fn with_output_schema(mut self, schema: impl Into<Arc<OutputSchema>>) -> Self {
        self.output_schema = Some(schema.into());
        self
    }
}

/// A JSON schema the model's final answer must match (structured output).
///
/// Each adapter asks for it the way its API does: OpenAI's
/// `response_format` / `text.format` with `json_schema`, Anthropic through a
/// forced tool whose input is the answer. The answer arrives as text holding
/// the JSON document.
#[derive(Clone, Debug, PartialEq)]
#[non_exhaustive]
pub struct OutputSchema {
    /// The schema's name (`^[a-zA-Z0-9_-]{1,64}$`), required by OpenAI and
    /// used as the forced tool's name by Anthropic.
    pub name: String,
    /// What the answer is, for the model.
    pub description: Option<String>,
    /// The JSON schema (an object schema).
    pub schema: serde_json::Value,
    /// `true` (the default) to ask for strict adherence where the provider
    /// supports it (OpenAI strict mode).
    pub strict: bool,
}

impl OutputSchema {
    /// A strict schema with this name.
    pub fn new(name: impl Into<String>, schema: serde_json::Value) -> Self {
        Self {
            name: name.into(),
            description: None,
            schema,
            strict: true,
        }
    }

    /// Sets the description.
    pub fn with_description(mut self, description: impl Into<String>) -> Self {
        self.description = Some(description.into());
        self
    }

    /// Sets strict mode.
    pub fn with_strict(mut self, strict: bool) -> Self {
        self.strict = strict;
        self
    }
}

/// One event of a streamed model turn.
#[derive(Clone, Debug, PartialEq)]
#[non_exhaustive]
pub enum ModelTurnEvent {
    /// A content delta (text, reasoning, media).
    Delta(Delta),
    /// A complete tool call.
    ToolCall(ToolCallPart),
    /// Token usage so far (adapters may report more than once; the last
    /// report of a turn wins).
    Usage(Usage),
    /// Something non-fatal the host may want to know (a retried request).
    Warning(String),
    /// The turn ended.
    Finished(ModelTurnResult),
}

/// How a model turn ended.
#[derive(Clone, Debug, PartialEq)]
pub struct ModelTurnResult {
    /// Why it ended.
    pub finish_reason: FinishReason,
    /// Extra data (provider response id, model name) copied to the
    /// assistant item's metadata.
    pub metadata: MetadataMap,
}

impl ModelTurnResult {
    /// A result with no metadata.
    pub fn new(finish_reason: FinishReason) -> Self {
        Self {
            finish_reason,
            metadata: MetadataMap::new(),
        }
    }
}

/// Opens sessions with a model provider.
#[async_trait::async_trait]
pub trait ModelAdapter: Send + Sync + 'static {
    /// The session type.
    type Session: ModelSession;

    /// Opens a session.
    async fn start_session(&self, config: SessionConfig) -> Result<Self::Session, ModelError>;
}

/// A session with a model: runs one turn at a time.
#[async_trait::async_trait]
pub trait ModelSession: Send + 'static {
    /// The turn type.
    type Turn: ModelTurn;

    /// Sends the request and returns the streaming turn.
    async fn begin_turn(
        &mut self,
        request: TurnRequest,
        cancellation: Option<TurnCancellation>,
    ) -> Result<Self::Turn, ModelError>;
}

/// A streaming model turn: a stream of [`ModelTurnEvent`]s polled one at a
/// time, with no future allocated per event.
///
/// An implementor writes [`poll_next_event`](Self::poll_next_event); a
/// caller awaits [`next_event`](Self::next_event). Cancelling a turn is
/// dropping it: the connection closes with it, and nothing else has to be
/// told.
///
/// ```
/// use agentkit_loop::{ModelError, ModelTurn, ModelTurnEvent, ModelTurnResult};
/// use agentkit_core::FinishReason;
/// use std::task::{Context, Poll};
///
/// /// A turn that only finishes.
/// struct Done(bool);
///
/// impl ModelTurn for Done {
///     fn poll_next_event(
///         &mut self,
///         _cx: &mut Context<'_>,
///     ) -> Poll<Result<Option<ModelTurnEvent>, ModelError>> {
///         let first = !std::mem::replace(&mut self.0, true);
///         Poll::Ready(Ok(first.then(|| {
///             ModelTurnEvent::Finished(ModelTurnResult::new(FinishReason::Completed))
///         })))
///     }
/// }
///
/// # tokio::runtime::Builder::new_current_thread().build().unwrap().block_on(async {
/// let mut turn = Done(false);
/// assert!(matches!(turn.next_event().await, Ok(Some(ModelTurnEvent::Finished(_)))));
/// assert_eq!(turn.next_event().await, Ok(None));
/// # });
/// ```
pub trait ModelTurn: Send {
    /// Polls for the next event: `Ready(Ok(None))` once the stream is over.
    /// A stream that ends without `Finished` is treated as a protocol error
    /// by the driver. Like a `Stream`, it registers `cx`'s waker when it
    /// returns `Pending`.
    fn poll_next_event(
        &mut self,
        cx: &mut Context<'_>,
    ) -> Poll<Result<Option<ModelTurnEvent>, ModelError>>;

    /// The next event; `Ok(None)` once the stream is over.
    fn next_event(&mut self) -> NextEvent<'_, Self>
    where
        Self: Sized,
    {
        NextEvent { turn: self }
    }
}

impl<T: ModelTurn + ?Sized> ModelTurn for Box<T> {
    fn poll_next_event(
        &mut self,
        cx: &mut Context<'_>,
    ) -> Poll<Result<Option<ModelTurnEvent>, ModelError>> {
        (**self).poll_next_event(cx)
    }
}

impl<T: ModelTurn + ?Sized> ModelTurn for &mut T {
    fn poll_next_event(
        &mut self,
        cx: &mut Context<'_>,
    ) -> Poll<Result<Option<ModelTurnEvent>, ModelError>> {
        (**self).poll_next_event(cx)
    }
}

/// The future of [`ModelTurn::next_event`].
#[derive(Debug)]
#[must_use = "futures do nothing unless awaited"]
pub struct NextEvent<'a, T: ?Sized> {
    turn: &'a mut T,
}

impl<T: ModelTurn + ?Sized> Future for NextEvent<'_, T> {
    type Output = Result<Option<ModelTurnEvent>, ModelError>;

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        self.turn.poll_next_event(cx)
    }
}
