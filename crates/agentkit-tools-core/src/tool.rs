//! The `Tool` trait and what a call carries.

use crate::{
    EventSink, HostAnswer, HostQuestion, PermissionRequest, QuestionSink, ToolError, ToolResume,
    ToolSpec, UsageSink,
};
use agentkit_core::Usage;
use agentkit_core::{MetadataMap, SessionId, ToolCallId, ToolOutput, TurnCancellation, TurnId};
use serde_json::Value;
use std::any::Any;
use std::sync::Arc;

/// Shared state tools can reach through [`ToolContext::resource`]: a
/// workspace root, an HTTP client, a database pool. Any `Send + Sync` type
/// qualifies; the default is `()`.
pub trait ToolResources: Any + Send + Sync {}

impl<T: Any + Send + Sync> ToolResources for T {}

/// One call of a tool, as the model asked for it.
#[derive(Clone, Debug, PartialEq)]
pub struct ToolRequest {
    /// The call's id.
    pub call_id: ToolCallId,
    /// The tool's name, as the model used it; shared with the call part
    /// of the transcript.
    pub tool_name: Arc<str>,
    /// The arguments, shared with the call part of the transcript
    /// (`Arc::unwrap_or_clone` to own them).
    pub input: Arc<Value>,
    /// Extra data from the call part.
    pub metadata: MetadataMap,
}

impl ToolRequest {
    /// A request with no metadata; `input` is a `Value` or an already
    /// shared one.
    pub fn new(
        call_id: impl Into<ToolCallId>,
        tool_name: impl Into<Arc<str>>,
        input: impl Into<Arc<Value>>,
    ) -> Self {
        Self {
            call_id: call_id.into(),
            tool_name: tool_name.into(),
            input: input.into(),
            metadata: MetadataMap::new(),
        }
    }
}

/// What a running tool can see of its surroundings.
#[derive(Clone)]
pub struct ToolContext {
    /// The call being run (`detached` for calls made outside a loop).
    pub call_id: ToolCallId,
    /// The session the call belongs to.
    pub session_id: SessionId,
    /// The turn the call belongs to.
    pub turn_id: TurnId,
    /// Cancelled when the host interrupts the turn; long-running tools should
    /// race their work against [`TurnCancellation::cancelled`].
    pub cancellation: TurnCancellation,
    /// Shared resources, see [`ToolResources`].
    pub resources: Arc<dyn ToolResources>,
    /// Where a long-running tool reports how far it got; the loop turns each
    /// report into a progress event for the host's observers.
    pub progress: ProgressSink,
    /// Where the call reports model usage it spent (a sub-agent's tokens);
    /// the loop adds it to the turn's usage.
    pub usage: UsageSink,
    /// Where the call forwards events of an agent loop it runs itself.
    pub events: EventSink,
    /// Where the call asks its host a question mid-run (see
    /// [`ask`](Self::ask)); nobody by default.
    pub questions: QuestionSink,
    /// Set when the loop runs the call again after it paused with
    /// [`ToolError::NeedsApproval`]: the host's answer to that approval.
    ///
    /// Boxed: it is rarely set, and the context is moved through every
    /// layer that runs a call (task manager, executor, tool).
    pub resume: Option<Box<ToolResume>>,
}

/// One progress report of a running tool.
#[derive(Clone, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
#[non_exhaustive]
pub struct ToolProgress {
    /// A short human-readable line ("cloned 3 of 7 repositories").
    pub message: String,
    /// How much is done, from 0.0 to 1.0, when the tool knows.
    pub fraction: Option<f32>,
}

impl ToolProgress {
    /// A report with a message and no fraction.
    pub fn new(message: impl Into<String>) -> Self {
        Self {
            message: message.into(),
            fraction: None,
        }
    }

    /// The same report with a completed fraction, clamped to `0.0..=1.0`.
    pub fn with_fraction(mut self, fraction: f32) -> Self {
        self.fraction = Some(if fraction.is_nan() {
            0.0
        } else {
            fraction.clamp(0.0, 1.0)
        });
        self
    }
}

/// Receives a tool's [`ToolProgress`] reports. Cheap to clone; the default
/// drops every report.
#[derive(Clone, Default)]
pub struct ProgressSink {
    inner: Option<Arc<dyn Fn(ToolProgress) + Send + Sync>>,
}

impl ProgressSink {
    /// A sink that calls `f` for every report (it must not block).
    pub fn new(f: impl Fn(ToolProgress) + Send + Sync + 'static) -> Self {
        Self {
            inner: Some(Arc::new(f)),
        }
    }

    /// A sink that drops every report.
    pub fn none() -> Self {
        Self::default()
    }

    /// Sends one report.
    pub fn report(&self, progress: ToolProgress) {
        if let Some(f) = &self.inner {
            f(progress);
        }
    }
}

impl std::fmt::Debug for ProgressSink {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ProgressSink")
            .field("connected", &self.inner.is_some())
            .finish()
    }
}

impl ToolContext {
    /// A context for calls outside an agent loop (tests, scripts).
    pub fn detached() -> Self {
        // Shared, so that a context (made for every call the loop runs,
        // then refined) costs no allocation.
        type Detached = (ToolCallId, SessionId, TurnId, Arc<dyn ToolResources>);
        static DETACHED: std::sync::OnceLock<Detached> = std::sync::OnceLock::new();
        let (call_id, session_id, turn_id, resources) = DETACHED
            .get_or_init(|| {
                (
                    ToolCallId::new("detached"),
                    SessionId::new("detached"),
                    TurnId::new("detached"),
                    Arc::new(()),
                )
            })
            .clone();
        Self {
            call_id,
            session_id,
            turn_id,
            cancellation: TurnCancellation::never(),
            resources,
            progress: ProgressSink::none(),
            usage: UsageSink::default(),
            events: EventSink::default(),
            questions: QuestionSink::default(),
            resume: None,
        }
    }

    /// A context for one call outside a loop, to be refined with the
    /// `with_*` methods.
    ///
    /// ```
    /// use agentkit_core::TurnCancellation;
    /// use agentkit_tools_core::ToolContext;
    ///
    /// let cancellation = TurnCancellation::never();
    /// let ctx = ToolContext::new("call-1").with_cancellation(cancellation);
    /// assert_eq!(ctx.call_id.as_str(), "call-1");
    /// ```
    pub fn new(call_id: impl Into<ToolCallId>) -> Self {
        Self {
            call_id: call_id.into(),
            ..Self::detached()
        }
    }

    /// The same context with another cancellation.
    pub fn with_cancellation(mut self, cancellation: TurnCancellation) -> Self {
        self.cancellation = cancellation;
        self
    }

    /// The same context in another session.
    pub fn with_session(mut self, session_id: impl Into<SessionId>) -> Self {
        self.session_id = session_id.into();
        self
    }

    /// The same context in another turn.
    pub fn with_turn(mut self, turn_id: impl Into<TurnId>) -> Self {
        self.turn_id = turn_id.into();
        self
    }

    /// The same context with shared resources.
    pub fn with_resources(mut self, resources: Arc<dyn ToolResources>) -> Self {
        self.resources = resources;
        self
    }

    /// The same context with a progress sink.
    pub fn with_progress(mut self, progress: ProgressSink) -> Self {
        self.progress = progress;
        self
    }

    /// The same context with a usage sink.
    pub fn with_usage(mut self, usage: UsageSink) -> Self {
        self.usage = usage;
        self
    }

    /// The same context with an event sink.
    pub fn with_events(mut self, events: EventSink) -> Self {
        self.events = events;
        self
    }

    /// The same context with somewhere to ask questions.
    pub fn with_questions(mut self, questions: QuestionSink) -> Self {
        self.questions = questions;
        self
    }

    /// Asks the host a question and waits for the answer, without ending
    /// the call: inside the agent loop the question pauses this call alone
    /// as an interrupt, and the answer resumes it here. Outside a loop (no
    /// [`QuestionSink`]) the answer is [`HostAnswer::Decline`]. Accepted form
    /// content arrives checked against the question's schema, its defaults
    /// filled in.
    ///
    /// ```
    /// use agentkit_tools_core::{HostAnswer, HostQuestion, ToolContext};
    /// use serde_json::json;
    ///
    /// # tokio::runtime::Builder::new_current_thread().build().unwrap().block_on(async {
    /// let ctx = ToolContext::new("call-1");
    /// let answer = ctx.ask(HostQuestion::form("Which branch?", json!({ "type": "object" }))).await;
    /// assert_eq!(answer, HostAnswer::Decline, "nobody to ask outside a loop");
    /// # });
    /// ```
    pub async fn ask(&self, question: HostQuestion) -> HostAnswer {
        self.questions.ask(self.call_id.clone(), question).await
    }

    /// The same context resuming a call that paused for an approval.
    pub fn with_resume(mut self, resume: ToolResume) -> Self {
        self.resume = Some(Box::new(resume));
        self
    }

    /// Reports model usage the running call spent (see [`UsageSink`]).
    pub fn report_usage(&self, usage: Usage) {
        self.usage.report(usage);
    }

    /// Reports progress of the running call (see [`ToolProgress`]).
    pub fn report_progress(&self, progress: ToolProgress) {
        self.progress.report(progress);
    }

    /// The shared resources, if they are a `T`.
    pub fn resource<T: Any>(&self) -> Option<&T> {
        let any: &dyn Any = &*self.resources;
        any.downcast_ref::<T>()
    }
}

impl std::fmt::Debug for ToolContext {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ToolContext")
            .field("call_id", &self.call_id)
            .field("session_id", &self.session_id)
            .field("turn_id", &self.turn_id)
            .field("cancelled", &self.cancellation.is_cancelled())
            .field("resume", &self.resume)
            .finish_non_exhaustive()
    }
}

/// What a tool returns.
#[derive(Clone, Debug, PartialEq)]
pub struct ToolResult {
    /// The output the model reads.
    pub output: ToolOutput,
    /// `true` when the output describes a failure the tool itself reported
    /// (an MCP `isError` result); it reaches the model as an error result.
    pub is_error: bool,
    /// Extra data, copied to the result part.
    pub metadata: MetadataMap,
}

impl ToolResult {
    /// A successful result.
    pub fn new(output: impl Into<ToolOutput>) -> Self {
        Self {
            output: output.into(),
            is_error: false,
            metadata: MetadataMap::new(),
        }
    }

    /// A result the tool marks as failed.
    pub fn error(output: impl Into<ToolOutput>) -> Self {
        Self {
            output: output.into(),
            is_error: true,
            metadata: MetadataMap::new(),
        }
    }
}

/// A tool the model can call.
#[async_trait::async_trait]
pub trait Tool: Send + Sync {
    /// The tool's spec, shared.
    ///
    /// A tool's spec is fixed for as long as the tool sits in a catalog
    /// snapshot: the executor validates a call against the spec it read
    /// when the model asked for the call, and reuses that check while the
    /// catalog's revision is unchanged. To change a tool's name, schema or
    /// description, replace the tool in its catalog (for example with
    /// [`CatalogWriter::upsert`](crate::CatalogWriter::upsert)), which raises the revision;
    /// a spec that changes on its own is not checked again until the
    /// revision moves.
    fn spec(&self) -> Arc<ToolSpec>;

    /// The permissions a call with this input would need. The executor checks
    /// them all before running anything, and one approval covers them all.
    /// The default asks for nothing.
    ///
    /// The answer may depend on the world as well as on `input`: the file
    /// tools resolve the path a call names (following symlinks) and propose
    /// the resolved path. So the executor asks again when the call starts,
    /// after the round's earlier calls ran, and checks that answer: a
    /// symlink swapped between the model's request and the call is judged
    /// by where it points when the call runs. Keep this method cheap and
    /// free of effects: the loop asks it at least twice per call.
    fn proposed_requests(&self, input: &Value) -> Result<Vec<PermissionRequest>, ToolError> {
        let _ = input;
        Ok(Vec::new())
    }

    /// Runs the call. The input was already validated against the schema
    /// and the call's permissions granted.
    ///
    /// The executor calls `invoke` when the call starts, before the loop
    /// reports it as started, and polls the returned future to run it. With
    /// `#[async_trait]` the body runs only when polled; a hand-written
    /// implementation should likewise do its work inside the future, not
    /// before returning it, so a call cancelled before it runs has no effect.
    async fn invoke(&self, request: ToolRequest, ctx: ToolContext)
    -> Result<ToolResult, ToolError>;
}
