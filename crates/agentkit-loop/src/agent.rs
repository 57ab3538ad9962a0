//! `Agent`: immutable configuration that starts sessions.
//!
//! Build one with [`Agent::builder`], then call [`Agent::start`] once per
//! session. The agent is cheap to clone and can run many sessions at once;
//! each [`LoopDriver`] owns its own transcript.

use crate::driver::machine::DEFAULT_MAX_MODEL_CALLS;
use crate::driver::{DriverConfig, DriverParts, LoopDriver, SharedConfig};
use crate::transcript::StartingTranscript;
use crate::{
    LoopError, LoopMutator, LoopObserver, LoopSnapshot, ModelAdapter, OutputSchema, SessionConfig,
    SimpleTaskManager, TaskManager, TranscriptObserver,
};
use agentkit_core::{CancellationHandle, Item};
use agentkit_tools_core::{
    BasicToolExecutor, CollisionPolicy, PermissionChecker, SafeDefaultPermissions, ToolExecutor,
    ToolFederation, ToolResources, ToolSource,
};
use std::sync::Arc;

pub(crate) struct AgentConfig<M> {
    pub(crate) model: M,
    pub(crate) executor: Arc<dyn ToolExecutor>,
    pub(crate) task_manager: Arc<dyn TaskManager>,
    pub(crate) resources: Arc<dyn ToolResources>,
    pub(crate) cancellation: Option<CancellationHandle>,
    pub(crate) mutators: Vec<Arc<dyn LoopMutator>>,
    pub(crate) observers: Vec<Arc<dyn LoopObserver>>,
    pub(crate) transcript_observers: Vec<Arc<dyn TranscriptObserver>>,
    pub(crate) transcript: StartingTranscript,
    pub(crate) input: Vec<Item>,
    pub(crate) record_content: bool,
    pub(crate) max_model_calls: u32,
    pub(crate) output_schema: Option<Arc<OutputSchema>>,
}

impl<M: ModelAdapter> DriverConfig for AgentConfig<M> {
    fn shared(&self) -> SharedConfig<'_> {
        SharedConfig {
            executor: &self.executor,
            task_manager: &self.task_manager,
            resources: &self.resources,
            mutators: &self.mutators,
            observers: &self.observers,
            transcript_observers: &self.transcript_observers,
            record_content: self.record_content,
            output_schema: &self.output_schema,
        }
    }
}

/// An agent: a model, tools, permissions and observers, ready to start
/// sessions.
///
/// Cheap to clone; each [`Agent::start`] opens an independent session whose
/// [`LoopDriver`] the host pulls forward with [`LoopDriver::next`]. Tests
/// use a scripted model (`agentkit_testkit::ScriptedModel`); a real host
/// passes a provider adapter instead.
///
/// ```
/// use agentkit_core::Item;
/// use agentkit_loop::{Agent, LoopInterrupt, LoopStep, SessionConfig};
/// use agentkit_testkit::{ScriptedModel, ScriptedTurn};
///
/// # tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap().block_on(async {
/// let agent = Agent::builder()
///     .model(ScriptedModel::new([
///         ScriptedTurn::text("Paris."),
///         ScriptedTurn::text("Rome."),
///     ]))
///     .transcript(vec![Item::system("Answer in one word.")])
///     .build()?;
///
/// // Two sessions of one agent, each with its own transcript.
/// let sessions = [("a", "Capital of France?", "Paris."), ("b", "Of Italy?", "Rome.")];
/// for (session, question, answer) in sessions {
///     let mut driver = agent.start(SessionConfig::new(session)).await?;
///     // With no input queued, the first step asks for some.
///     let LoopStep::Interrupt(LoopInterrupt::AwaitingInput(request)) = driver.next().await? else {
///         panic!("the session starts by waiting for input")
///     };
///     request.submit(&mut driver, vec![Item::user(question)])?;
///     let LoopStep::Finished(turn) = driver.next().await? else { panic!("no tools here") };
///     assert_eq!(turn.items[0].text_content(), answer);
///     assert_eq!(driver.transcript().len(), 3); // system, user, assistant
/// }
/// # Ok::<(), agentkit_loop::LoopError>(())
/// # }).unwrap();
/// ```
pub struct Agent<M: ModelAdapter> {
    pub(crate) config: Arc<AgentConfig<M>>,
}

impl<M: ModelAdapter> Clone for Agent<M> {
    fn clone(&self) -> Self {
        Self {
            config: self.config.clone(),
        }
    }
}

impl<M: ModelAdapter> Agent<M> {
    /// A builder; only the model is required.
    pub fn builder() -> AgentBuilder<M> {
        AgentBuilder::default()
    }

    /// Opens a model session and returns its driver. The builder's
    /// transcript is loaded as is; its input, if any, is sent by the first
    /// `next()`.
    pub async fn start(&self, config: SessionConfig) -> Result<LoopDriver<M::Session>, LoopError> {
        let session_id = config.session_id.clone();
        let parts = self.driver_parts(config).await?;
        Ok(LoopDriver::new(
            parts,
            session_id,
            &self.config.transcript,
            self.config.input.clone(),
        ))
    }

    async fn driver_parts(
        &self,
        config: SessionConfig,
    ) -> Result<DriverParts<M::Session>, LoopError> {
        let default_cache = config.cache.clone();
        let session = self.config.model.start_session(config).await?;
        Ok(DriverParts {
            session,
            config: self.config.clone(),
            cancellation: self.config.cancellation.clone(),
            max_model_calls: self.config.max_model_calls,
            default_cache,
        })
    }

    /// Opens a model session and continues where `snapshot` stopped. A
    /// snapshot whose version is unknown, whose pending calls no longer
    /// match their tools, or whose transcript is broken is refused with
    /// [`LoopError::Snapshot`].
    ///
    /// ```
    /// use agentkit_core::Item;
    /// use agentkit_loop::{Agent, LoopInterrupt, LoopSnapshot, LoopStep, SessionConfig};
    /// use agentkit_testkit::{ScriptedModel, ScriptedTurn};
    ///
    /// # tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap().block_on(async {
    /// let model = ScriptedModel::new([ScriptedTurn::text("Hi."), ScriptedTurn::text("Bye.")]);
    /// let agent = Agent::builder()
    ///     .model(model)
    ///     .input(vec![Item::user("hello")])
    ///     .build()?;
    /// let mut driver = agent.start(SessionConfig::new("s1")).await?;
    /// assert!(matches!(driver.next().await?, LoopStep::Finished(_)));
    ///
    /// // Saved as JSON (a file, a database row) and read back, possibly by
    /// // another process holding an agent built the same way.
    /// let saved = serde_json::to_string(&driver.snapshot()).unwrap();
    /// drop(driver);
    /// let snapshot: LoopSnapshot = serde_json::from_str(&saved).unwrap();
    /// let mut driver = agent.resume(SessionConfig::new("s1"), snapshot).await?;
    ///
    /// // It goes on where it stopped: waiting for the next user message.
    /// let LoopStep::Interrupt(LoopInterrupt::AwaitingInput(request)) = driver.next().await? else {
    ///     panic!("the finished turn is not replayed")
    /// };
    /// request.submit(&mut driver, vec![Item::user("goodbye")])?;
    /// let LoopStep::Finished(turn) = driver.next().await? else { panic!("a text turn") };
    /// assert_eq!(turn.items[0].text_content(), "Bye.");
    /// assert_eq!(driver.transcript().len(), 4); // hello, Hi., goodbye, Bye.
    /// # Ok::<(), agentkit_loop::LoopError>(())
    /// # }).unwrap();
    /// ```
    pub async fn resume(
        &self,
        config: SessionConfig,
        snapshot: LoopSnapshot,
    ) -> Result<LoopDriver<M::Session>, LoopError> {
        crate::driver::check_snapshot(&snapshot, self.config.executor.as_ref())?;
        let parts = self.driver_parts(config).await?;
        Ok(LoopDriver::from_snapshot(parts, snapshot))
    }
}

/// A wrapper [`AgentBuilder::wrap_task_manager`] applies at build.
type TaskManagerLayer = Box<dyn FnOnce(Arc<dyn TaskManager>) -> Arc<dyn TaskManager> + Send>;

/// Builds an [`Agent`].
///
/// Only the model is required. Tools come from tool sources (a
/// `ToolRegistry`, MCP servers, ...); permissions default to
/// [`SafeDefaultPermissions`] (reads run, side effects ask), the task
/// manager to [`SimpleTaskManager`] (one call at a time).
///
/// ```
/// use agentkit_core::{FinishReason, Item};
/// use agentkit_loop::{Agent, ConcurrentTaskManager, SessionConfig};
/// use agentkit_testkit::{Approvals, ScriptedModel, ScriptedTurn, run_to_finish};
/// use agentkit_tools_core::{Tool, ToolContext, ToolError, ToolRegistry, ToolRequest, ToolResult, ToolSpec};
/// use serde_json::json;
/// use std::sync::Arc;
///
/// /// Tells the time (always noon, for the test).
/// struct Clock(Arc<ToolSpec>);
///
/// #[async_trait::async_trait]
/// impl Tool for Clock {
///     fn spec(&self) -> Arc<ToolSpec> {
///         self.0.clone()
///     }
///     async fn invoke(&self, _: ToolRequest, _: ToolContext) -> Result<ToolResult, ToolError> {
///         Ok(ToolResult::new("12:00"))
///     }
/// }
///
/// # tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap().block_on(async {
/// let spec = ToolSpec::new("clock", "The current time.", json!({ "type": "object" })).unwrap();
/// let agent = Agent::builder()
///     .model(ScriptedModel::new([
///         ScriptedTurn::tool_call("call-1", "clock", json!({})),
///         ScriptedTurn::text("It is noon."),
///     ]))
///     .add_tool_source(ToolRegistry::new().with(Clock(Arc::new(spec))))
///     .task_manager(ConcurrentTaskManager::new(4))
///     .max_model_calls(10)
///     .transcript(vec![Item::system("You are a helpful assistant.")])
///     .input(vec![Item::user("What time is it?")])
///     .build()?;
///
/// let mut driver = agent.start(SessionConfig::new("demo")).await?;
/// let run = run_to_finish(&mut driver, Approvals::DenyAll).await.unwrap();
/// assert_eq!(run.result.finish_reason, FinishReason::Completed);
/// // system, user, the call, its result, the answer
/// assert_eq!(driver.transcript().len(), 5);
/// # Ok::<(), agentkit_loop::LoopError>(())
/// # }).unwrap();
/// ```
pub struct AgentBuilder<M> {
    model: Option<M>,
    federation: ToolFederation,
    permissions: Arc<dyn PermissionChecker>,
    resources: Arc<dyn ToolResources>,
    task_manager: Arc<dyn TaskManager>,
    task_manager_layers: Vec<TaskManagerLayer>,
    cancellation: Option<CancellationHandle>,
    mutators: Vec<Arc<dyn LoopMutator>>,
    observers: Vec<Arc<dyn LoopObserver>>,
    transcript_observers: Vec<Arc<dyn TranscriptObserver>>,
    transcript: Vec<Item>,
    input: Vec<Item>,
    record_content: bool,
    max_model_calls: u32,
    output_schema: Option<Arc<OutputSchema>>,
}

impl<M> Default for AgentBuilder<M> {
    fn default() -> Self {
        Self {
            model: None,
            federation: ToolFederation::new(),
            permissions: Arc::new(SafeDefaultPermissions),
            resources: Arc::new(()),
            task_manager: Arc::new(SimpleTaskManager::new()),
            task_manager_layers: Vec::new(),
            cancellation: None,
            mutators: Vec::new(),
            observers: Vec::new(),
            transcript_observers: Vec::new(),
            transcript: Vec::new(),
            input: Vec::new(),
            record_content: false,
            max_model_calls: DEFAULT_MAX_MODEL_CALLS,
            output_schema: None,
        }
    }
}

impl<M: ModelAdapter> AgentBuilder<M> {
    /// The model adapter (required).
    pub fn model(mut self, model: M) -> Self {
        self.model = Some(model);
        self
    }

    /// Adds a tool source; sources federate in the order they are added.
    pub fn add_tool_source(mut self, source: impl ToolSource + 'static) -> Self {
        self.federation.add_source(source);
        self
    }

    /// What happens when two sources offer the same tool name (default:
    /// the first wins).
    pub fn collision_policy(mut self, policy: CollisionPolicy) -> Self {
        self.federation = std::mem::take(&mut self.federation).with_policy(policy);
        self
    }

    /// The permission checker. The default is
    /// [`SafeDefaultPermissions`]: reads and requests of no kind run
    /// unasked; file writes, shell commands, MCP calls, network access and
    /// custom request kinds ask the host for approval. Pass
    /// `AllowAllPermissions` to opt out (tests, sandboxes), or a configured
    /// `PathPolicy` / `CommandPolicy`.
    pub fn permissions(mut self, permissions: impl PermissionChecker + 'static) -> Self {
        self.permissions = Arc::new(permissions);
        self
    }

    /// Shared resources tools can reach (default: `()`).
    pub fn resources(mut self, resources: impl ToolResources) -> Self {
        self.resources = Arc::new(resources);
        self
    }

    /// How tool calls are scheduled (default: [`SimpleTaskManager`]).
    pub fn task_manager(mut self, manager: impl TaskManager + 'static) -> Self {
        self.task_manager = Arc::new(manager);
        self
    }

    /// Wraps the task manager the agent ends up with, whichever
    /// [`task_manager`](Self::task_manager) sets and in whatever order:
    /// layers apply at [`build`](Self::build), the first added innermost.
    /// A session store uses it to make each call's start durable before
    /// the call runs.
    pub fn wrap_task_manager(
        mut self,
        layer: impl FnOnce(Arc<dyn TaskManager>) -> Arc<dyn TaskManager> + Send + 'static,
    ) -> Self {
        self.task_manager_layers.push(Box::new(layer));
        self
    }

    /// Connects a cancellation handle (default: none).
    pub fn cancellation(mut self, handle: CancellationHandle) -> Self {
        self.cancellation = Some(handle);
        self
    }

    /// A compaction mutator, run at every mutation point (default: none).
    pub fn compaction(self, compactor: impl LoopMutator + 'static) -> Self {
        self.mutator(compactor)
    }

    /// Adds a mutator; mutators run in the order they are added.
    pub fn mutator(mut self, mutator: impl LoopMutator + 'static) -> Self {
        self.mutators.push(Arc::new(mutator));
        self
    }

    /// Adds an event observer; observers are called in the order added.
    pub fn observer(mut self, observer: impl LoopObserver + 'static) -> Self {
        self.observers.push(Arc::new(observer));
        self
    }

    /// Adds a shared event observer.
    pub fn observer_arc(mut self, observer: Arc<dyn LoopObserver>) -> Self {
        self.observers.push(observer);
        self
    }

    /// Adds a transcript observer.
    pub fn transcript_observer(mut self, observer: impl TranscriptObserver + 'static) -> Self {
        self.transcript_observers.push(Arc::new(observer));
        self
    }

    /// Adds a shared transcript observer.
    pub fn transcript_observer_arc(mut self, observer: Arc<dyn TranscriptObserver>) -> Self {
        self.transcript_observers.push(observer);
        self
    }

    /// The transcript sessions start from (default: empty).
    pub fn transcript(mut self, items: Vec<Item>) -> Self {
        self.transcript = items;
        self
    }

    /// Input the first `next()` sends (default: none, so the first `next()`
    /// asks for input).
    pub fn input(mut self, items: Vec<Item>) -> Self {
        self.input = items;
        self
    }

    /// Records message content (model output, tool arguments and results)
    /// on tracing spans. Off by default: traces often leave the machine, and
    /// content may hold secrets or personal data.
    pub fn record_content_in_traces(mut self, record: bool) -> Self {
        self.record_content = record;
        self
    }

    /// The step limit: at most this many model calls per user turn
    /// (default [`DEFAULT_MAX_MODEL_CALLS`](crate::DEFAULT_MAX_MODEL_CALLS),
    /// 100). Reaching it ends the turn with `FinishReason::StepLimit` and a
    /// valid transcript; the next input starts a new count. At least 1.
    pub fn max_model_calls(mut self, limit: u32) -> Self {
        self.max_model_calls = limit.max(1);
        self
    }

    /// Asks every model call for an answer matching this JSON schema
    /// (structured output: OpenAI `response_format` / Responses
    /// `text.format`, a forced tool on Anthropic). Default: none.
    pub fn output_schema(mut self, schema: impl Into<Arc<OutputSchema>>) -> Self {
        self.output_schema = Some(schema.into());
        self
    }

    /// Builds the agent; fails if no model was set or the starting
    /// transcript breaks the tool-call invariant.
    pub fn build(self) -> Result<Agent<M>, LoopError> {
        let model = self
            .model
            .ok_or_else(|| LoopError::Config("no model adapter was set".into()))?;
        // The validation's set of call ids is kept: sessions check new call
        // ids against it without scanning the history again.
        let calls = agentkit_core::validate_collecting_call_ids(&self.transcript)?;
        // Ids are filled in once here, as every session would: sessions then
        // share the items instead of copying them.
        let transcript = StartingTranscript::new(self.transcript, calls);
        let executor = BasicToolExecutor::new(self.federation).with_permissions(self.permissions);
        let task_manager = self
            .task_manager_layers
            .into_iter()
            .fold(self.task_manager, |manager, layer| layer(manager));
        Ok(Agent {
            config: Arc::new(AgentConfig {
                model,
                executor: Arc::new(executor),
                task_manager,
                resources: self.resources,
                cancellation: self.cancellation,
                mutators: self.mutators,
                observers: self.observers,
                transcript_observers: self.transcript_observers,
                transcript,
                input: self.input,
                record_content: self.record_content,
                max_model_calls: self.max_model_calls,
                output_schema: self.output_schema,
            }),
        })
    }
}
