//! `LoopDriver`: the runtime of one session.
//!
//! The driver is two halves. [`machine::DriverCore`] is the state machine:
//! plain data and transitions with no I/O, no clock, no lock and no
//! `.await`. The `LoopDriver` around it is a thin async shell: it owns the
//! queues, the cancellation handle and the running futures, feeds what
//! happens into the core as inputs, performs the actions the core asks for
//! (stream the model in `model_call.rs`, run tools in `tool_round.rs`, run
//! mutators) and tells the observers what the core's outbox holds.
//! Snapshot and resume live in `resume.rs`, recording and replay in
//! `crate::replay`.

mod inbox;
pub(crate) mod machine;
mod model_call;
mod questions;
mod resume;
mod running;

mod tool_round;

pub use inbox::MAX_QUEUED_PROGRESS;
pub(crate) use inbox::{Inbox, Report};
pub(crate) use resume::check_snapshot;
pub(crate) use running::{CallRun, Running, RunningCall, Salvage};

use crate::error::panic_message;
use crate::{
    AgentEvent, BackgroundTasks, LoopError, LoopStep, ModelSession, MutationPoint, MutatorError,
    PromptCacheRequest, SoftInterruptHandle, TurnResult,
};
use agentkit_core::{
    CancellationHandle, Item, SessionId, ToolCallId, TurnCancellation, validate_transcript,
};
use agentkit_tools_core::{ApprovalDecision, ResolvedCatalog};
use futures::FutureExt;
use machine::{Action, DriverCore, Note, QueuedMessages, RecordedRewrite, ToolOutcome, Yielded};
use std::panic::AssertUnwindSafe;
use std::sync::Arc;
use tracing::Instrument;

/// The runtime of one session; see the crate docs for the host loop.
///
/// [`TaskRouting`]: crate::TaskRouting
///
/// A driver is made by [`Agent::start`](crate::Agent::start) or
/// [`Agent::resume`](crate::Agent::resume) and pulled forward with
/// [`next`](Self::next):
///
/// ```
/// use agentkit_core::Item;
/// use agentkit_loop::{Agent, LoopInterrupt, LoopStep, SessionConfig};
/// use agentkit_testkit::{ScriptedModel, ScriptedTurn};
///
/// # tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap().block_on(async {
/// let model = ScriptedModel::new([ScriptedTurn::text("hello!")]);
/// let agent = Agent::builder().model(model).build()?;
/// let mut driver = agent.start(SessionConfig::new("demo")).await?;
/// loop {
///     match driver.next().await? {
///         LoopStep::Interrupt(LoopInterrupt::AwaitingInput(request)) => {
///             request.submit(&mut driver, vec![Item::user("hi")])?;
///         }
///         LoopStep::Interrupt(LoopInterrupt::ApprovalRequest(pending)) => {
///             pending.approve(&mut driver)?;
///         }
///         // A running tool asks the user something (nothing here does).
///         LoopStep::Interrupt(LoopInterrupt::Question(pending)) => pending.decline(&mut driver)?,
///         LoopStep::Interrupt(LoopInterrupt::AfterToolResult(_)) => {}
///         // Later kinds of pause (the enum is non-exhaustive).
///         LoopStep::Interrupt(_) => {}
///         LoopStep::Finished(result) => {
///             assert_eq!(result.items[0].text_content(), "hello!");
///             break;
///         }
///     }
/// }
/// # Ok::<(), agentkit_loop::LoopError>(())
/// # }).unwrap();
/// ```
pub struct LoopDriver<S: ModelSession> {
    core: DriverCore,
    session: S,
    /// The soft-interrupt queue the host pushes to; the core is told what
    /// it holds at each safe point. Made when the host first asks for it
    /// (or a snapshot brings messages): a queue nobody holds is empty.
    soft: std::sync::OnceLock<SoftInterruptHandle>,
    cancellation: Option<CancellationHandle>,
    config: Arc<dyn DriverConfig>,
    /// Results of calls that finished before a `next()` was dropped; made
    /// with the first call a turn runs.
    salvage: Option<Salvage>,
    /// What running calls and background tasks report from their own
    /// tasks (progress, a sub-agent's events, a cancellation), and the
    /// calls running in the background; made when first needed (a call
    /// with observers, a call routed to the background, the host asking),
    /// as most sessions never need it.
    inbox: std::sync::OnceLock<Arc<Inbox>>,
    last_catalog: Option<Arc<ResolvedCatalog>>,
    /// Model usage running calls reported (sub-agents), not yet counted.
    tool_usage: ToolUsage,
    /// Where running calls' questions arrive, and the one sink every
    /// call's context shares (cloning it is a reference count, not an
    /// allocation); made when the first call starts.
    questions: Option<(Arc<questions::Questions>, agentkit_tools_core::QuestionSink)>,
    /// What few sessions, or few moments of a session, need; made when
    /// first needed and dropped when all of it is empty again.
    rare: Option<Box<Rare>>,
}

/// The driver's rarely used parts, behind one box so an idle driver holds
/// a pointer instead of 80 bytes of empty fields.
#[derive(Default)]
struct Rare {
    /// The cancellation checkpoint of the user turn in progress (its
    /// number in the core); only with a cancellation handle.
    checkpoint: Option<(u64, TurnCancellation)>,
    /// Where the input recording began, when recording.
    recording: Option<Box<crate::replay::LogHeader>>,
    /// The reply channels of calls waiting for the host's answer.
    replies: Vec<(
        ToolCallId,
        tokio::sync::oneshot::Sender<agentkit_tools_core::HostAnswer>,
    )>,
    /// The running calls of a round that paused for a question: the
    /// asking call's future (and any other) lives on across the yield.
    parked: Option<Box<Running>>,
    /// The origin of the core's time (see [`Routed`](machine::Routed)):
    /// read when a call first needs a timer, so a session without one
    /// never reads the clock. Once read it stays (the core's deadlines
    /// count from it).
    clock: Option<std::time::Instant>,
}

impl Rare {
    fn is_empty(&self) -> bool {
        self.checkpoint.is_none()
            && self.recording.is_none()
            && self.replies.is_empty()
            && self.parked.is_none()
            && self.clock.is_none()
    }
}

/// Model usage reported by running calls through their
/// [`UsageSink`](agentkit_tools_core::UsageSink), possibly from other tasks;
/// the driver adds it to the turn before each step of the core.
///
/// The sink is made with the first call of a turn and shared by every
/// later call (cloning it is a reference count, not an allocation).
#[derive(Default)]
pub(crate) struct ToolUsage {
    /// Made with the first sink.
    reported: Option<Arc<ReportedUsage>>,
    sink: Option<agentkit_tools_core::UsageSink>,
}

#[derive(Default)]
pub(crate) struct ReportedUsage {
    usage: std::sync::Mutex<Option<agentkit_core::Usage>>,
    /// `usage` may be `Some`: the driver asks at every step and almost
    /// never finds any, so it reads this flag instead of taking the lock.
    /// Written only under that lock.
    any: std::sync::atomic::AtomicBool,
}

impl ToolUsage {
    /// A sink for one call's context.
    pub(crate) fn sink(&mut self) -> agentkit_tools_core::UsageSink {
        let reported = &mut self.reported;
        self.sink
            .get_or_insert_with(|| {
                let shared = reported.get_or_insert_with(Arc::default).clone();
                agentkit_tools_core::UsageSink::new(move |usage| {
                    let mut total = shared.usage.lock().unwrap_or_else(|e| e.into_inner());
                    total
                        .get_or_insert_with(Default::default)
                        .accumulate(&usage);
                    shared.any.store(true, std::sync::atomic::Ordering::Release);
                })
            })
            .clone()
    }

    /// Drops the driver's handle on the shared sink (calls still running
    /// in the background keep theirs; their reports still arrive).
    fn release_sink(&mut self) {
        self.sink = None;
        // Nothing holds the sink any more and nothing is left to take.
        if let Some(reported) = &self.reported
            && Arc::strong_count(reported) == 1
            && !reported.any.load(std::sync::atomic::Ordering::Acquire)
        {
            self.reported = None;
        }
    }

    /// Everything reported since the last call. A report landing right
    /// after the flag is read is taken at the next step. Inlined: asked at
    /// every step, and almost never finds anything.
    #[inline]
    fn take(&self) -> Option<agentkit_core::Usage> {
        let reported = self.reported.as_ref()?;
        if !reported.any.load(std::sync::atomic::Ordering::Acquire) {
            return None;
        }
        Self::take_reported(reported)
    }

    fn take_reported(reported: &ReportedUsage) -> Option<agentkit_core::Usage> {
        let mut total = reported.usage.lock().unwrap_or_else(|e| e.into_inner());
        reported
            .any
            .store(false, std::sync::atomic::Ordering::Relaxed);
        total.take()
    }
}

/// The parts of the agent's configuration the driver uses, without the
/// model type (the session is already open).
pub(crate) trait DriverConfig: Send + Sync {
    fn shared(&self) -> SharedConfig<'_>;
}

pub(crate) struct SharedConfig<'a> {
    pub(crate) executor: &'a Arc<dyn agentkit_tools_core::ToolExecutor>,
    pub(crate) task_manager: &'a Arc<dyn crate::TaskManager>,
    pub(crate) resources: &'a Arc<dyn agentkit_tools_core::ToolResources>,
    pub(crate) mutators: &'a [Arc<dyn crate::LoopMutator>],
    pub(crate) observers: &'a [Arc<dyn crate::LoopObserver>],
    pub(crate) transcript_observers: &'a [Arc<dyn crate::TranscriptObserver>],
    pub(crate) record_content: bool,
    pub(crate) output_schema: &'a Option<Arc<crate::OutputSchema>>,
}

/// What the driver needs to be built, from the agent.
pub(crate) struct DriverParts<S> {
    pub(crate) session: S,
    pub(crate) config: Arc<dyn DriverConfig>,
    pub(crate) cancellation: Option<agentkit_core::CancellationHandle>,
    pub(crate) max_model_calls: u32,
    pub(crate) default_cache: Option<PromptCacheRequest>,
}

impl<S: ModelSession> LoopDriver<S> {
    fn settings(config: &dyn DriverConfig, max_model_calls: u32) -> machine::CoreSettings {
        let shared = config.shared();
        machine::CoreSettings {
            max_model_calls,
            parallel: shared.task_manager.max_parallel().max(1),
            has_mutators: !shared.mutators.is_empty(),
            observe_events: !shared.observers.is_empty(),
            observe_items: !shared.transcript_observers.is_empty(),
        }
    }

    /// A new session starting from `transcript` (loaded passively: ids are
    /// filled in, observers see only what the session appends) with
    /// `input` queued.
    pub(crate) fn new(
        parts: DriverParts<S>,
        session_id: SessionId,
        transcript: &crate::transcript::StartingTranscript,
        input: Vec<Item>,
    ) -> Self {
        let settings = Self::settings(parts.config.as_ref(), parts.max_model_calls);
        let mut core = DriverCore::new(session_id, settings, parts.default_cache);
        core.pending_input = input;
        core.next_item_index = transcript.next_item_index;
        core.log = crate::transcript::TranscriptLog::starting_from(transcript);
        Self::from_core(core, parts.session, parts.config, None, parts.cancellation)
    }

    pub(crate) fn from_core(
        core: DriverCore,
        session: S,
        config: Arc<dyn DriverConfig>,
        soft: Option<SoftInterruptHandle>,
        cancellation: Option<CancellationHandle>,
    ) -> Self {
        let mut driver = Self {
            core,
            session,
            soft: soft.map_or_else(std::sync::OnceLock::new, std::sync::OnceLock::from),
            cancellation,
            config,
            salvage: None,
            inbox: std::sync::OnceLock::new(),
            last_catalog: None,
            tool_usage: ToolUsage::default(),
            questions: None,
            rare: None,
        };
        driver.core.on_run_started();
        driver.dispatch();
        driver
    }

    /// The session's id.
    pub fn session_id(&self) -> &SessionId {
        &self.core.session_id
    }

    /// The transcript so far, as a cheap view.
    pub fn transcript(&self) -> crate::TranscriptView {
        self.core.log.view()
    }

    /// A number that changes whenever the session's state does: an input
    /// that changed the core (a step that did something, the host's input
    /// or approval), a change of the soft-interrupt queue or of the
    /// background tasks. A step that changes nothing (an idle session asked
    /// again, an empty queue) keeps it. Equal generations mean an equal
    /// [`snapshot`](Self::snapshot), so a host that saves sessions skips a
    /// save without building one:
    ///
    /// ```
    /// # use agentkit_loop::{Agent, SessionConfig};
    /// # use agentkit_testkit::{ScriptedModel, ScriptedTurn};
    /// # tokio::runtime::Builder::new_current_thread().build().unwrap().block_on(async {
    /// # let agent = Agent::builder().model(ScriptedModel::new([ScriptedTurn::text("hi")])).build()?;
    /// let mut driver = agent.start(SessionConfig::new("demo")).await?;
    /// let saved = driver.generation();
    /// for _ in 0..3 {
    ///     driver.next().await?; // awaiting input: nothing happens
    /// }
    /// assert_eq!(driver.generation(), saved, "nothing happened");
    /// driver.soft_interrupts().push_text("also this");
    /// assert_ne!(driver.generation(), saved);
    /// # Ok::<(), agentkit_loop::LoopError>(())
    /// # }).unwrap();
    /// ```
    pub fn generation(&self) -> u64 {
        let background = self.background_if_any().map_or(0, BackgroundTasks::changes);
        self.core
            .generation
            .wrapping_add(self.soft.get().map_or(0, SoftInterruptHandle::changes))
            .wrapping_add(background)
    }

    /// The soft-interrupt queue: push messages to it from any task while
    /// `next()` runs; they are injected at the next safe point. A handle
    /// taken before a snapshot keeps feeding the driver resumed from that
    /// snapshot in the same process.
    pub fn soft_interrupts(&self) -> SoftInterruptHandle {
        self.soft.get_or_init(SoftInterruptHandle::default).clone()
    }

    /// The calls running in the background (see [`TaskRouting`](crate::TaskRouting)): list
    /// them, cancel one by id.
    pub fn background_tasks(&self) -> BackgroundTasks {
        self.background().clone()
    }

    /// The background tasks, made on first use.
    pub(crate) fn background(&self) -> &BackgroundTasks {
        self.inbox().background()
    }

    /// The background tasks, if any were ever made.
    pub(crate) fn background_if_any(&self) -> Option<&BackgroundTasks> {
        self.inbox.get()?.background_if_any()
    }

    /// The inbox of reports from other tasks, made on first use.
    fn inbox(&self) -> &Arc<Inbox> {
        self.inbox.get_or_init(Inbox::new)
    }

    /// Someone hears what calls report: observers, or a recording (its
    /// replay has observers).
    fn wants_reports(&self) -> bool {
        self.core.settings.observe_events || self.core.recording.is_some()
    }

    /// Background tasks that finished since the last call, if any were
    /// ever started.
    fn finished_background(&self) -> Vec<crate::background::FinishedTask> {
        self.background_if_any()
            .map(BackgroundTasks::take_finished)
            .unwrap_or_default()
    }

    /// Starts recording every input of the core from here on (restarts a
    /// recording in progress). See [`replay`](crate::replay).
    pub fn record_inputs(&mut self) {
        self.rare_mut().recording = Some(Box::new(crate::replay::LogHeader {
            version: crate::replay::INPUT_LOG_VERSION,
            settings: self.core.settings,
            default_cache: self.core.default_cache.as_deref().cloned(),
            start: crate::replay::core_snapshot(&self.core),
        }));
        self.core.recording = Some(Vec::new());
    }

    /// The inputs recorded so far, if [`record_inputs`](Self::record_inputs)
    /// was called.
    pub fn input_log(&self) -> Option<crate::replay::InputLog> {
        Some(crate::replay::InputLog {
            header: (**self.rare.as_ref()?.recording.as_ref()?).clone(),
            inputs: self.core.recording.clone()?,
        })
    }

    /// The recording in progress, borrowed: its header and the inputs so
    /// far (a store appends the ones it has not written yet).
    pub fn recorded_inputs(&self) -> Option<(&crate::replay::LogHeader, &[machine::Input])> {
        Some((
            self.rare.as_ref()?.recording.as_deref()?,
            self.core.recording.as_deref()?,
        ))
    }

    /// Stops recording and hands the log over.
    pub fn take_input_log(&mut self) -> Option<crate::replay::InputLog> {
        let header = *self.rare.as_mut()?.recording.take()?;
        self.tidy_rare();
        Some(crate::replay::InputLog {
            header,
            inputs: self.core.recording.take()?,
        })
    }

    /// Overrides the prompt-cache request of the next model call only.
    pub fn set_next_turn_cache(&mut self, cache: PromptCacheRequest) -> Result<(), LoopError> {
        self.core.on_next_call_cache(cache);
        Ok(())
    }

    /// Resolves the approval of a call. Fails with
    /// [`InvalidStateReason::NoSuchApproval`](crate::InvalidStateReason::NoSuchApproval)
    /// or `NotAwaitingApproval` if that call is not waiting for approval.
    pub fn resolve_approval_for(
        &mut self,
        call_id: ToolCallId,
        decision: ApprovalDecision,
    ) -> Result<(), LoopError> {
        let result = self.core.resolve_approval(call_id, decision);
        self.dispatch();
        result.map_err(LoopError::InvalidState)
    }

    /// Answers the question a running call asked (see
    /// [`PendingQuestion`](crate::PendingQuestion)). Fails with
    /// [`InvalidStateReason::NoSuchQuestion`](crate::InvalidStateReason::NoSuchQuestion)
    /// if that call is not waiting for an answer, and with `InvalidAnswer`
    /// (the question stays open) if accepted content does not match the
    /// question's schema.
    pub fn answer_question_for(
        &mut self,
        call_id: ToolCallId,
        answer: agentkit_tools_core::HostAnswer,
    ) -> Result<(), LoopError> {
        let result = self.core.resolve_question(call_id, answer);
        self.dispatch();
        result.map_err(LoopError::InvalidState)
    }

    /// Queues input for the next model call. Reached through
    /// [`InputRequest::submit`](crate::InputRequest::submit) and
    /// [`ToolRoundInfo::submit`](crate::ToolRoundInfo::submit).
    pub(crate) fn submit_input(&mut self, items: Vec<Item>) -> Result<(), LoopError> {
        self.core
            .submit_input(items)
            .map_err(LoopError::InvalidState)
    }

    /// Gives up on the turn in progress, for errors retrying cannot fix (a
    /// context-length or authentication error): every open call is answered
    /// (finished calls with their real results, the rest with an
    /// `abandoned` stub), the turn ends with `FinishReason::Error` and
    /// `agentkit.abandon_reason` in its metadata, and `TurnFinished` is
    /// emitted. Pending input and queued soft-interrupt messages are kept
    /// for the next turn. Fails with `NoTurnInProgress` when idle.
    pub fn abandon_turn(&mut self, reason: impl Into<String>) -> Result<TurnResult, LoopError> {
        let result = self.core.abandon_turn(reason.into());
        self.dispatch();
        result.map_err(LoopError::InvalidState)
    }

    /// Runs the loop to its next yield point.
    pub async fn next(&mut self) -> Result<LoopStep, LoopError> {
        let span = tracing::info_span!(
            "invoke_agent",
            gen_ai.operation.name = "invoke_agent",
            gen_ai.conversation.id = %self.core.session_id,
        );
        // What the core yielded travels out as it is (48 bytes), and the
        // error boxed: a `LoopStep` is 176 bytes, and is made once, here,
        // rather than moved through every future on the way out.
        // A span nobody listens to is not entered at every poll: the run's
        // future (the whole round's state) is awaited as it is.
        let result = if span.is_disabled() {
            self.run().await
        } else {
            self.run().instrument(span).await
        };
        match result {
            Ok(yielded) => Ok(yielded.into_step()),
            Err(err) => {
                self.core.on_failed(err.to_string());
                self.dispatch();
                Err(*err)
            }
        }
    }

    /// Performs the core's actions until it yields.
    async fn run(&mut self) -> Result<Yielded, Box<LoopError>> {
        // Every normal return of `next()` leaves no call running (except
        // a round paused for a question, whose calls are parked), so calls
        // the core still sees running belong to a `next()` that was
        // dropped: the finished ones keep their real results, the others
        // are answered as interrupted rather than run twice. What they
        // reported goes out before their results.
        self.take_reports();
        if let Some(salvage) = &mut self.salvage {
            // No call holds the salvage any more (the usual case: the
            // calls of a dropped `next()` went with it): no lock to take.
            let salvaged = match Arc::get_mut(salvage) {
                Some(salvage) => {
                    std::mem::take(salvage.get_mut().unwrap_or_else(|e| e.into_inner()))
                }
                None => std::mem::take(&mut *salvage.lock().unwrap_or_else(|e| e.into_inner())),
            };
            for (index, call_id, outcome) in salvaged {
                let outcome = ToolOutcome::of(&call_id, outcome);
                self.core.on_tool_done(index, &call_id, outcome);
            }
        }
        let parked = self.rare.as_mut().and_then(|rare| rare.parked.take());
        let mut running = match parked {
            // The round paused for a question: its calls live on.
            Some(parked) => *parked,
            None => {
                self.core.on_calls_lost();
                Running::new()
            }
        };
        let result = self.run_round(&mut running).await;
        if !running.is_empty() {
            self.rare_mut().parked = Some(Box::new(running));
        } else if matches!(result, Ok(Yielded::Finished(_)))
            && self
                .rare
                .as_ref()
                .is_none_or(|rare| rare.replies.is_empty())
        {
            // The turn is over: an idle session keeps no question queue,
            // no call sinks and no salvage (the next turn's first call
            // makes them again).
            drop(running);
            self.questions = None;
            self.tool_usage.release_sink();
            if self
                .salvage
                .as_ref()
                .is_some_and(|salvage| Arc::strong_count(salvage) == 1)
            {
                self.salvage = None;
            }
        }
        self.tidy_rare();
        result
    }

    /// The rarely used parts, made if needed.
    fn rare_mut(&mut self) -> &mut Rare {
        self.rare.get_or_insert_with(Box::default)
    }

    /// Drops the rarely used parts once all of them are empty.
    fn tidy_rare(&mut self) {
        if self.rare.as_ref().is_some_and(|rare| rare.is_empty()) {
            self.rare = None;
        }
    }

    /// [`run`](Self::run) with the running calls, which outlive a yield
    /// while a call waits for the host's answer.
    async fn run_round(&mut self, running: &mut Running) -> Result<Yielded, Box<LoopError>> {
        loop {
            self.feed();
            // Actions the shell answers without awaiting are answered at
            // once: nothing can have happened meanwhile, so there is
            // nothing to feed before the next poll.
            // An action whose fields are copied out is forgotten, not
            // dropped: it holds nothing, and dropping it would call the
            // drop glue of `Action`.
            let mut action = self.core.poll();
            let action = loop {
                action = match action {
                    queued @ Action::TakeQueued { follow_ups } => {
                        std::mem::forget(queued);
                        let messages = self
                            .soft
                            .get()
                            .and_then(|soft| soft.drain(follow_ups))
                            .map(|(item, messages)| QueuedMessages { item, messages });
                        self.core.on_queued(messages)
                    }
                    Action::Preflight(indices) => self.preflight(indices),
                    Action::StartTool(call) => {
                        let then_await = call.then_await;
                        if self.start_call(call, running) && then_await {
                            // A foreground call: no input since the start,
                            // so the core would only say wait.
                            break Action::AwaitTools {
                                wake_on_urgent: self.core.settings.parallel > 1,
                            };
                        }
                        self.core.poll()
                    }
                    Action::Detach { index, task_id } => {
                        let detached = self.background().detach(&task_id);
                        self.core.on_detached(index, detached)
                    }
                    Action::AnswerQuestion { call_id, answer } => {
                        self.reply(&call_id, answer);
                        self.core.poll()
                    }
                    other => break other,
                };
            };
            self.sync_checkpoint();
            self.dispatch();
            if !self.core.round_open() && !running.is_empty() {
                // The round ended (skipped, cancelled): stop what still runs
                // (a question still waiting reads as cancelled).
                running.clear();
                if let Some(rare) = &mut self.rare {
                    rare.replies.clear();
                }
            }
            match action {
                Action::Yield(step) => return Ok(step),
                Action::Fail(reason) => return Err(Box::new(LoopError::InvalidState(reason))),
                Action::CallModel(call) => self.model_call(call).await.map_err(Box::new)?,
                // Answered above.
                Action::TakeQueued { .. }
                | Action::Preflight(_)
                | Action::StartTool(_)
                | Action::AnswerQuestion { .. }
                | Action::Detach { .. } => {}
                waiting @ Action::AwaitTools { wake_on_urgent } => {
                    std::mem::forget(waiting);
                    self.await_calls(running, wake_on_urgent).await
                }
                Action::RunMutators(point) => self.run_mutators(point).await.map_err(Box::new)?,
            }
        }
    }

    /// Tells the core what happened outside it since it was last asked:
    /// finished background tasks, usage reported by running calls, a
    /// cancellation, an urgent message. Inlined: asked at every step, and
    /// almost never finds anything; each source that never had anything
    /// (no inbox, no usage sink, no checkpoint, no queue) is one pointer
    /// read.
    #[inline]
    fn feed(&mut self) {
        if let Some(inbox) = self.inbox.get() {
            if inbox.pending() {
                self.take_pending_reports();
            }
            self.collect_background();
        }
        if let Some(usage) = self.tool_usage.take() {
            self.core.on_tool_usage(usage);
        }
        if let Some((_, checkpoint)) = self.rare.as_ref().and_then(|rare| rare.checkpoint.as_ref())
            && checkpoint.is_cancelled()
            && self
                .core
                .turn_number()
                .is_some_and(|(_, cancelled)| !cancelled)
        {
            self.core.on_cancelled();
        }
        // The queue first: most sessions never made one.
        if self
            .soft
            .get()
            .is_some_and(|soft| self.core.wants_urgent() && soft.has_urgent())
        {
            self.core.on_urgent_queued();
        }
    }

    /// A user turn the core began gets its cancellation checkpoint.
    /// Inlined: asked at every step, and without a cancellation handle
    /// there is never a checkpoint.
    #[inline]
    fn sync_checkpoint(&mut self) {
        if self.cancellation.is_some() {
            self.sync_checkpoint_with_handle();
        }
    }

    fn sync_checkpoint_with_handle(&mut self) {
        let Some(handle) = &self.cancellation else {
            return;
        };
        match self.core.turn_number() {
            None => {
                if let Some(rare) = &mut self.rare {
                    rare.checkpoint = None;
                }
            }
            Some((number, _)) => {
                let current = self.rare.as_ref().and_then(|rare| rare.checkpoint.as_ref());
                if current.map(|(n, _)| *n) != Some(number) {
                    let checkpoint = (number, handle.checkpoint());
                    self.rare_mut().checkpoint = Some(checkpoint);
                }
            }
        }
    }

    /// The turn's cancellation checkpoint, for the model and the tools.
    pub(crate) fn turn_cancellation(&self) -> Option<TurnCancellation> {
        let (_, checkpoint) = self.rare.as_ref()?.checkpoint.as_ref()?;
        Some(checkpoint.clone())
    }

    /// Hands what calls and background tasks reported since the last step
    /// to the core, in arrival order. Inlined: asked at every step, and a
    /// session without observers reads one pointer.
    #[inline]
    fn take_reports(&mut self) {
        if self.inbox.get().is_some_and(|inbox| inbox.pending()) {
            self.take_pending_reports();
        }
    }

    fn take_pending_reports(&mut self) {
        let Some(inbox) = self.inbox.get() else {
            return;
        };
        for report in inbox.take() {
            match report {
                Report::Progress(call_id, progress) => {
                    self.core.on_tool_progress(call_id, progress)
                }
                Report::Nested(event) => self.core.on_nested_event(event),
                Report::TaskCancelled(task_id, call_id) => {
                    self.core.on_task_cancelled(task_id, call_id)
                }
                Report::ProgressDropped(count) => self.core.on_progress_dropped(count),
            }
        }
    }

    /// Hands finished background tasks to the core. Inlined: asked at
    /// every step, and a session that never ran a background task reads
    /// one pointer.
    #[inline]
    fn collect_background(&mut self) {
        if self.background_if_any().is_some() {
            self.collect_finished();
        }
    }

    fn collect_finished(&mut self) {
        for finished in self.finished_background() {
            let result = machine::background_result(&finished.info, finished.outcome);
            self.core.on_background_finished(finished.info, result);
        }
    }

    /// Tells the observers what the core queued, in order. Inlined: it
    /// runs after every step, and without observers nothing is ever
    /// queued.
    #[inline]
    fn dispatch(&mut self) {
        if self.core.has_notes() {
            self.dispatch_notes();
        }
    }

    fn dispatch_notes(&mut self) {
        while let Some(note) = self.core.take_note() {
            match note {
                Note::Event(event) => notify(self.config.as_ref(), event),
                Note::Rewritten(archived) => {
                    let observers = self.config.shared().transcript_observers;
                    self.core.log.with(|items| {
                        // A rewritten log is one run of items; the copy
                        // is never made in practice.
                        let copied;
                        let items = match items.as_slice() {
                            Some(items) => items,
                            None => {
                                copied = items.to_vec();
                                &copied
                            }
                        };
                        for observer in observers {
                            guard("transcript observer", || {
                                observer.on_transcript_rewritten(items, &archived)
                            });
                        }
                    });
                }
                Note::Appended(index) => {
                    let observers = self.config.shared().transcript_observers;
                    self.core.log.with(|items| {
                        if let Some(item) = items.get(index) {
                            for observer in observers {
                                guard("transcript observer", || {
                                    observer.on_item_appended(index, item)
                                });
                            }
                        }
                    });
                }
            }
        }
    }

    /// Runs the mutators at `point`; a rewrite is validated before it is
    /// kept. A failure leaves the mutation owed, so `next()` runs it again.
    async fn run_mutators(&mut self, point: MutationPoint) -> Result<(), LoopError> {
        let mutators = self.config.shared().mutators.to_vec();
        for mutator in mutators {
            let name = mutator.name().to_owned();
            self.core.on_mutator_started(point, name.clone());
            self.dispatch();
            let ctx = self.core.mutation_context(point);
            let view = self.core.log.view();
            let items_before = view.len();
            let outcome = AssertUnwindSafe(mutator.rewrite(&ctx, view))
                .catch_unwind()
                .await;
            let fail = |error| LoopError::Mutator {
                mutator: name.clone(),
                error,
            };
            let rewritten = match outcome {
                Ok(Ok(rewritten)) => rewritten,
                Ok(Err(message)) => return Err(fail(MutatorError::Failed(message))),
                Err(panic) => {
                    return Err(fail(MutatorError::Panicked(panic_message(&*panic))));
                }
            };
            let rewrite = match rewritten {
                Some(rewrite) => {
                    validate_transcript(&rewrite.items)
                        .map_err(|err| fail(MutatorError::InvalidTranscript(err)))?;
                    Some(RecordedRewrite {
                        items: rewrite.items,
                        items_before,
                        compaction: rewrite.compaction,
                    })
                }
                None => None,
            };
            self.core.on_mutator_finished(point, name, rewrite);
            self.dispatch();
        }
        self.core.on_mutators_done();
        Ok(())
    }
}

/// The interrupt handles ([`PendingApproval::approve`](crate::PendingApproval::approve),
/// [`InputRequest::submit`](crate::InputRequest::submit), ...) take anything
/// that holds a driver; the driver holds itself.
impl<S: ModelSession> AsMut<LoopDriver<S>> for LoopDriver<S> {
    fn as_mut(&mut self) -> &mut LoopDriver<S> {
        self
    }
}

/// Sends one event to every observer; a panicking observer is caught.
fn notify(config: &dyn DriverConfig, event: AgentEvent) {
    let observers = config.shared().observers;
    if let Some((last, rest)) = observers.split_last() {
        for observer in rest {
            let event = event.clone();
            guard("observer", || observer.handle_event(event));
        }
        guard("observer", || last.handle_event(event));
    }
}

/// Runs host code that must not unwind into the loop.
fn guard(what: &str, f: impl FnOnce()) {
    if let Err(panic) = std::panic::catch_unwind(AssertUnwindSafe(f)) {
        tracing::warn!(
            "{what} panicked and was ignored: {}",
            panic_message(&*panic)
        );
    }
}
