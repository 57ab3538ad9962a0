//! The sans-IO heart of the driver, in the manner of quinn-proto's
//! `Connection`.
//!
//! [`DriverCore`] holds the whole state of a session as plain data and has
//! no `.await`, no clock and no trait object that does I/O. [`DriverCore::poll`]
//! says what to do next (an [`Action`]: call the model, start these calls,
//! wait for a call, run mutators, or yield to the host), and the `on_*`
//! methods take in what happened (a model answer, a tool outcome). Events
//! for observers queue in an outbox the shell drains. `LoopDriver::next` is
//! the thin async shell that performs the actions.
//!
//! Because every transition completes before the shell awaits anything, a
//! dropped `next()` future, a cancellation or an urgent message finds every
//! finished result in a [`CallState`], never in a local variable.

use super::state::{ActiveTurn, CallState, Phase, RoundCall, TurnItems};
use crate::background::BackgroundTaskInfo;
use crate::soft::InjectedMessage;
use crate::transcript::TranscriptLog;
use crate::{
    AgentEvent, InputRequest, InvalidStateReason, LastCallUsage, LoopInterrupt, LoopStep,
    ModelErrorKind, MutationContext, MutationPoint, PendingApproval, PromptCacheRequest,
    SoftInterruptHandle, SoftInterruptPoint, ToolRoundInfo, TurnResult,
};
use agentkit_core::{
    CancellationHandle, FinishReason, Item, ItemId, ItemKind, MetadataMap, Part, SessionId,
    ToolCallId, ToolCallPart, ToolResultPart, TurnId, Usage,
};
use agentkit_tools_core::{ApprovalDecision, ToolError, ToolResult, ToolResume};
use std::collections::VecDeque;

pub(crate) const DROPPED: &str =
    "the tool call was interrupted before it finished (the loop stopped waiting for it)";
pub(crate) const SKIPPED: &str =
    "the tool call was skipped because the user interrupted with a new message";
pub(crate) const CANCELLED: &str =
    "the tool call was cancelled because the user interrupted the turn";
pub(crate) const ABANDONED: &str = "the tool call was abandoned because the turn was given up";

/// The default step limit: model calls per user turn.
pub const DEFAULT_MAX_MODEL_CALLS: u32 = 100;

/// What the shell should do next.
#[derive(Debug)]
pub(crate) enum Action {
    /// Return this step to the host.
    Yield(LoopStep),
    /// Refuse the host's `next()`.
    Fail(InvalidStateReason),
    /// Call the model once.
    CallModel(ModelCall),
    /// Start these calls of the round, in this order.
    StartTools(Vec<StartCall>),
    /// Wait for a running call to finish (or a cancellation or an urgent
    /// message), then poll again.
    AwaitTools,
    /// Run every mutator at this point, then report with
    /// [`DriverCore::mutators_done`].
    RunMutators(MutationPoint),
}

/// The model call the core asks for.
#[derive(Debug)]
pub(crate) struct ModelCall {
    pub(crate) turn_id: TurnId,
    /// The cache request of this call.
    pub(crate) cache: Option<PromptCacheRequest>,
    /// The one-off cache request to restore if the call fails.
    pub(crate) one_off_cache: Option<PromptCacheRequest>,
}

/// A call the shell should start.
#[derive(Debug)]
pub(crate) struct StartCall {
    /// Its index in the round.
    pub(crate) index: usize,
    /// The host's approval, if it needed one.
    pub(crate) approval: Option<Box<agentkit_tools_core::ApprovalRequest>>,
    /// The host's answer, when the call paused for an approval mid-run.
    pub(crate) resume: Option<Box<ToolResume>>,
    /// The request the preflight checked and the spec it validated the
    /// input against.
    pub(crate) validated: Option<(
        agentkit_tools_core::ToolRequest,
        std::sync::Arc<agentkit_tools_core::ToolSpec>,
    )>,
}

/// A finished model answer.
pub(crate) struct ModelAnswer {
    pub(crate) parts: Vec<Part>,
    pub(crate) calls: Vec<ToolCallPart>,
    pub(crate) finish_reason: FinishReason,
    pub(crate) metadata: MetadataMap,
    pub(crate) usage: Usage,
}

/// Something the shell must tell observers, in order.
#[derive(Debug)]
pub(crate) enum Note {
    Event(AgentEvent),
    /// The item at this index of the transcript was appended.
    Appended(usize),
    /// A mutator rewrote the transcript; these items are no longer in it.
    Rewritten(Vec<Item>),
}

/// What to do after a failed model call.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum AfterFailure {
    /// Return the error; `next()` retries when called again.
    Report,
    /// The request was too long: compaction runs in forced mode and the
    /// call is retried at once.
    CompactAndRetry,
    /// Too long even after a forced compaction: the turn was abandoned.
    Abandoned,
}

/// Settings the core needs from the agent.
#[derive(Clone, Copy, Debug)]
pub(crate) struct CoreSettings {
    pub(crate) max_model_calls: u32,
    pub(crate) parallel: usize,
    pub(crate) has_mutators: bool,
    pub(crate) observe_events: bool,
    pub(crate) observe_items: bool,
}

/// The whole state of one session.
pub(crate) struct DriverCore {
    pub(crate) session_id: SessionId,
    pub(crate) log: TranscriptLog,
    pub(crate) pending_input: Vec<Item>,
    pub(crate) phase: Phase,
    pub(crate) round: Vec<RoundCall>,
    /// The approval currently shown to the host, until it is resolved.
    pub(crate) surfaced_approval: Option<ToolCallId>,
    /// Boxed: an idle session has none, and it is the largest field.
    pub(crate) turn: Option<Box<ActiveTurn>>,
    pub(crate) next_turn_index: u64,
    pub(crate) next_item_index: u64,
    /// Boxed, as most sessions set neither.
    pub(crate) default_cache: Option<Box<PromptCacheRequest>>,
    pub(crate) next_turn_cache: Option<Box<PromptCacheRequest>>,
    pub(crate) soft: SoftInterruptHandle,
    /// Mutators owed at this point before anything else happens.
    pub(crate) mutation_due: Option<MutationPoint>,
    pub(crate) cancellation: Option<CancellationHandle>,
    pub(crate) settings: CoreSettings,
    /// Every tool-call id of the transcript after its starting transcript
    /// (whose ids the log shares), built when first needed.
    call_ids: Option<crate::transcript::CallIds>,
    outbox: VecDeque<Note>,
    /// The `BeforeModelCall` mutators ran for the coming call.
    premutated: bool,
    /// The coming `BeforeModelCall` mutation is forced (context overflow).
    forced_compaction: bool,
    /// The automatic retry after a context-length error was used.
    context_retry_used: bool,
    /// The provider's usage of the last model call.
    pub(crate) last_call: Option<LastCallUsage>,
    /// Results of background tasks waiting for a safe point.
    pub(crate) notifications: Vec<(BackgroundTaskInfo, ToolResultPart)>,
}

impl DriverCore {
    pub(crate) fn new(
        session_id: SessionId,
        settings: CoreSettings,
        cancellation: Option<CancellationHandle>,
        default_cache: Option<PromptCacheRequest>,
    ) -> Self {
        Self {
            session_id,
            log: TranscriptLog::new(Vec::new()),
            pending_input: Vec::new(),
            phase: Phase::Idle,
            round: Vec::new(),
            surfaced_approval: None,
            turn: None,
            next_turn_index: 0,
            next_item_index: 0,
            default_cache: default_cache.map(Box::new),
            next_turn_cache: None,
            soft: SoftInterruptHandle::default(),
            mutation_due: None,
            cancellation,
            settings,
            call_ids: None,
            outbox: VecDeque::new(),
            premutated: false,
            forced_compaction: false,
            context_retry_used: false,
            last_call: None,
            notifications: Vec::new(),
        }
    }

    /// What the mutators at `point` are told.
    pub(crate) fn mutation_context(&self, point: MutationPoint) -> MutationContext {
        MutationContext::new(self.session_id.clone(), point)
            .with_forced(point == MutationPoint::BeforeModelCall && self.forced_compaction)
            .with_last_call(self.last_call.clone())
    }

    /// `true` when notes wait for [`take_note`](Self::take_note).
    pub(crate) fn has_notes(&self) -> bool {
        !self.outbox.is_empty()
    }

    /// Observer notes queued since the last call.
    pub(crate) fn take_note(&mut self) -> Option<Note> {
        self.outbox.pop_front()
    }

    pub(crate) fn emit(&mut self, event: impl FnOnce() -> AgentEvent) {
        if self.settings.observe_events {
            self.outbox.push_back(Note::Event(event()));
        }
    }

    /// `true` while a tool round has calls to answer; the shell drops its
    /// running futures otherwise.
    pub(crate) fn round_open(&self) -> bool {
        matches!(self.phase, Phase::ToolRound)
    }

    pub(crate) fn current_turn_id(&self) -> TurnId {
        self.turn
            .as_ref()
            .map(|t| t.turn_id.clone())
            .unwrap_or_else(|| TurnId::new("turn-none"))
    }

    fn is_cancelled(&self) -> bool {
        self.turn.as_ref().is_some_and(|turn| turn.is_cancelled())
    }

    // ----- deciding -------------------------------------------------------

    /// What to do next.
    pub(crate) fn poll(&mut self) -> Action {
        loop {
            if let Some(point) = self.mutation_due {
                return Action::RunMutators(point);
            }
            match &self.phase {
                Phase::Idle => {
                    if self.pending_input.is_empty()
                        && let Some((item, _)) = self.soft.drain(true)
                    {
                        // Messages typed while idle are the next input.
                        self.pending_input.push(item);
                    }
                    if self.pending_input.is_empty() {
                        return Action::Yield(LoopStep::Interrupt(LoopInterrupt::AwaitingInput(
                            InputRequest {
                                session_id: self.session_id.clone(),
                                reason: "the model finished and no input is queued".into(),
                            },
                        )));
                    }
                    self.begin_turn();
                }
                Phase::ModelCallDue => {
                    if self.is_cancelled() {
                        self.cancel_turn(None);
                        continue;
                    }
                    let calls = self.turn.as_ref().map_or(0, |t| t.model_calls);
                    if calls >= self.settings.max_model_calls {
                        let mut metadata = MetadataMap::new();
                        metadata.insert(
                            "agentkit.max_model_calls".into(),
                            self.settings.max_model_calls.into(),
                        );
                        self.end_turn(FinishReason::StepLimit, metadata);
                        continue;
                    }
                    // Pending input first (stores rely on it being the first
                    // thing a step appends), then background results.
                    self.merge_pending_input();
                    self.deliver_notifications();
                    if self.settings.has_mutators && !self.premutated {
                        self.mutation_due = Some(MutationPoint::BeforeModelCall);
                        continue;
                    }
                    return Action::CallModel(self.begin_model_call());
                }
                Phase::ToolRound => {
                    if self.is_cancelled() {
                        self.cancel_turn(None);
                        continue;
                    }
                    if let Some(call_id) = &self.surfaced_approval {
                        return Action::Fail(InvalidStateReason::ApprovalPending {
                            call_id: call_id.clone(),
                        });
                    }
                    if let Some(pending) = self.surface_next_approval() {
                        return Action::Yield(LoopStep::Interrupt(LoopInterrupt::ApprovalRequest(
                            pending,
                        )));
                    }
                    self.flush_answers();
                    if self
                        .round
                        .iter()
                        .all(|c| matches!(c.state, CallState::Answered))
                    {
                        self.close_round();
                        continue;
                    }
                    // Point C: an urgent message skips what has not finished.
                    if self.soft.has_urgent() {
                        self.skip_unfinished();
                        continue;
                    }
                    let start = self.start_calls();
                    if !start.is_empty() {
                        return Action::StartTools(start);
                    }
                    return Action::AwaitTools;
                }
                Phase::AfterRound => {
                    // Point D: everything typed during the round, after all
                    // results and mutators.
                    if let Some((item, injected)) = self.soft.drain(false) {
                        self.inject(SoftInterruptPoint::AfterTools, item, 0, injected);
                    }
                    self.phase = Phase::ModelCallDue;
                    return Action::Yield(LoopStep::Interrupt(LoopInterrupt::AfterToolResult(
                        ToolRoundInfo {
                            session_id: self.session_id.clone(),
                            turn_id: self.current_turn_id(),
                            transcript_len: self.log.len(),
                        },
                    )));
                }
                Phase::TurnEnding(_) => {
                    let result = self.deliver_ended_turn();
                    return Action::Yield(LoopStep::Finished(result));
                }
            }
        }
    }

    fn begin_turn(&mut self) {
        self.turn = Some(Box::new(ActiveTurn {
            turn_id: turn_id(self.next_turn_index),
            items: TurnItems::default(),
            usage: Usage::default(),
            cancellation: self
                .cancellation
                .as_ref()
                .map(CancellationHandle::checkpoint),
            model_calls: 0,
        }));
        self.context_retry_used = false;
        self.phase = Phase::ModelCallDue;
    }

    fn begin_model_call(&mut self) -> ModelCall {
        self.premutated = false;
        let turn_id = turn_id(self.next_turn_index);
        self.next_turn_index += 1;
        if let Some(turn) = self.turn.as_mut() {
            turn.turn_id = turn_id.clone();
            turn.model_calls += 1;
        }
        let session_id = self.session_id.clone();
        let event_turn = turn_id.clone();
        self.emit(|| AgentEvent::TurnStarted {
            session_id,
            turn_id: event_turn,
        });
        let one_off_cache = self.next_turn_cache.take().map(|cache| *cache);
        ModelCall {
            turn_id,
            cache: one_off_cache
                .clone()
                .or_else(|| self.default_cache.as_deref().cloned()),
            one_off_cache,
        }
    }

    fn surface_next_approval(&mut self) -> Option<PendingApproval> {
        // A call that paused mid-run waits until no other call runs: the
        // host's pause must not cut the running ones short.
        let idle = !self
            .round
            .iter()
            .any(|c| matches!(c.state, CallState::Running));
        let entry = self.round.iter().find_map(|c| match &c.state {
            CallState::AwaitingApproval(request) => Some(PendingApproval {
                request: request.clone(),
                call: c.call.clone(),
            }),
            CallState::Suspended(request) if idle => Some(PendingApproval {
                request: request.clone(),
                call: c.call.clone(),
            }),
            _ => None,
        })?;
        self.surfaced_approval = Some(entry.call.id.clone());
        let request = entry.request.clone();
        self.emit(|| AgentEvent::ApprovalRequired { request });
        Some(entry)
    }

    /// Marks calls `Running` up to the parallelism and reports them.
    fn start_calls(&mut self) -> Vec<StartCall> {
        let running = self
            .round
            .iter()
            .filter(|c| matches!(c.state, CallState::Running))
            .count();
        let free = self.settings.parallel.max(1).saturating_sub(running);
        let runnable = |c: &RoundCall| c.state.is_runnable();
        let count = self.round.iter().filter(|c| runnable(c)).take(free).count();
        let mut started = Vec::with_capacity(count);
        for index in 0..self.round.len() {
            if started.len() == count {
                break;
            }
            if !runnable(&self.round[index]) {
                continue;
            }
            let (approval, resume, validated) =
                match std::mem::replace(&mut self.round[index].state, CallState::Running) {
                    CallState::Approved(request) => (Some(Box::new(request)), None, None),
                    CallState::Resumed(request, decision) => {
                        (None, Some(Box::new(ToolResume { request, decision })), None)
                    }
                    CallState::Queued(validated) => (None, None, validated),
                    _ => (None, None, None),
                };
            if self.settings.observe_events {
                let call = &self.round[index].call;
                let (call_id, tool_name) = (call.id.clone(), call.name.clone());
                self.emit(|| AgentEvent::ToolStarted { call_id, tool_name });
            }
            started.push(StartCall {
                index,
                approval,
                resume,
                validated,
            });
        }
        started
    }

    /// Appends, in call order, every answer that is ready.
    fn flush_answers(&mut self) {
        for index in 0..self.round.len() {
            match self.round[index].state {
                CallState::Answered => {}
                CallState::Running
                | CallState::Queued(_)
                | CallState::Approved(_)
                | CallState::AwaitingApproval(_)
                | CallState::Suspended(_)
                | CallState::Resumed(..) => return,
                _ => {
                    self.answer(index, None);
                }
            }
        }
    }

    /// Answers call `index`: with its own outcome when it has one
    /// (finished, denied, rejected, interrupted), else with `stub`.
    /// Returns `true` when the stub was used.
    fn answer(&mut self, index: usize, stub: Option<(&str, &str)>) -> bool {
        let call_id = self.round[index].call.id.clone();
        let state = std::mem::replace(&mut self.round[index].state, CallState::Answered);
        let (part, stubbed) = match state {
            CallState::Answered => return false,
            CallState::Finished(part) => (part, false),
            CallState::Rejected(part) => (part, false),
            CallState::Denied(reason) => {
                let message = match reason {
                    Some(reason) => format!("permission denied by the user: {reason}"),
                    None => "permission denied by the user".to_owned(),
                };
                let part = ToolResultPart::error(call_id, message)
                    .with_metadata("agentkit.error_kind", "permission_denied");
                (part, false)
            }
            CallState::Interrupted => (
                ToolResultPart::error(call_id, DROPPED)
                    .with_metadata("agentkit.error_kind", "interrupted"),
                false,
            ),
            other @ (CallState::Queued(_)
            | CallState::Approved(_)
            | CallState::AwaitingApproval(_)
            | CallState::Suspended(_)
            | CallState::Resumed(..)
            | CallState::Running) => match stub {
                Some((message, kind)) => (
                    ToolResultPart::error(call_id, message)
                        .with_metadata("agentkit.error_kind", kind),
                    true,
                ),
                None => {
                    self.round[index].state = other;
                    return false;
                }
            },
        };
        self.append_result(part);
        stubbed
    }

    /// Answers every open call of the round in order: real outcomes where
    /// they exist, `stub` for the rest. Returns how many got the stub.
    fn answer_all(&mut self, message: &str, kind: &str) -> usize {
        let mut stubbed = 0;
        for index in 0..self.round.len() {
            if self.answer(index, Some((message, kind))) {
                stubbed += 1;
            }
        }
        self.round.clear();
        self.surfaced_approval = None;
        stubbed
    }

    fn skip_unfinished(&mut self) {
        let skipped = self.answer_all(SKIPPED, "skipped");
        if let Some((item, injected)) = self.soft.drain(false) {
            self.inject(SoftInterruptPoint::BetweenTools, item, skipped, injected);
        }
        self.phase = Phase::AfterRound;
        self.owe_mutation(MutationPoint::AfterToolResult);
    }

    fn close_round(&mut self) {
        self.round.clear();
        self.phase = Phase::AfterRound;
        self.owe_mutation(MutationPoint::AfterToolResult);
    }

    fn owe_mutation(&mut self, point: MutationPoint) {
        if self.settings.has_mutators {
            self.mutation_due = Some(point);
        }
    }

    // ----- taking events in -----------------------------------------------

    /// The model answered.
    pub(crate) fn on_model_answer(
        &mut self,
        answer: ModelAnswer,
        preflight: &mut dyn FnMut(&ToolCallPart) -> CallState,
    ) {
        let ModelAnswer {
            parts,
            calls,
            finish_reason,
            mut metadata,
            usage,
        } = answer;
        if let Some(turn) = self.turn.as_mut() {
            turn.usage.accumulate(&usage);
        }
        self.context_retry_used = false;
        let calls = self.unique_call_ids(calls);
        let reported = usage.tokens.input_tokens + usage.tokens.output_tokens > 0;
        metadata.insert(
            "agentkit.finish_reason".into(),
            serde_json::to_value(&finish_reason).unwrap_or_default(),
        );
        let has_calls = !calls.is_empty();
        // The last round's vector, cleared, keeps its capacity.
        self.round.clear();
        self.round.extend(calls.iter().map(|call| RoundCall {
            call: call.clone(),
            state: CallState::Queued(None),
        }));
        if let Some(item) = assistant_item(parts, calls, metadata) {
            self.push_item(item, true);
        }
        self.last_call = reported.then(|| LastCallUsage {
            usage,
            transcript_len: self.log.len(),
        });
        if has_calls {
            for entry in &mut self.round {
                entry.state = preflight(&entry.call);
            }
            self.phase = Phase::ToolRound;
            return;
        }
        // Point B: the model is done, but the user typed meanwhile, or a
        // background task finished: the turn goes on.
        let delivered = self.deliver_notifications();
        if let Some((item, injected)) = self.soft.drain(true) {
            self.inject(SoftInterruptPoint::TurnComplete, item, 0, injected);
            return;
        }
        if delivered {
            return;
        }
        self.end_turn(finish_reason, MetadataMap::new());
    }

    /// The turn was cancelled while the model streamed; what it said so far
    /// is kept.
    pub(crate) fn on_model_cancelled(
        &mut self,
        parts: Vec<Part>,
        calls: Vec<ToolCallPart>,
        usage: Usage,
    ) {
        if let Some(turn) = self.turn.as_mut() {
            turn.usage.accumulate(&usage);
        }
        let calls = self.unique_call_ids(calls);
        let partial = assistant_item(parts, calls.clone(), MetadataMap::new());
        self.round = calls
            .into_iter()
            .map(|call| RoundCall {
                call,
                state: CallState::Queued(None),
            })
            .collect();
        self.cancel_turn(partial);
    }

    /// The model call failed; the phase stays `ModelCallDue` so `next()`
    /// retries, with the same one-off cache request. A request too long for
    /// the context window is retried once, at once, after the mutators ran
    /// in forced mode; if it is still too long the turn is abandoned.
    pub(crate) fn on_model_failed(
        &mut self,
        one_off_cache: Option<PromptCacheRequest>,
        kind: Option<ModelErrorKind>,
    ) -> AfterFailure {
        self.next_turn_cache = one_off_cache.map(Box::new);
        if kind != Some(ModelErrorKind::ContextLengthExceeded) || !self.settings.has_mutators {
            return AfterFailure::Report;
        }
        if !self.context_retry_used {
            self.context_retry_used = true;
            self.forced_compaction = true;
            self.premutated = false;
            return AfterFailure::CompactAndRetry;
        }
        self.context_retry_used = false;
        let _ = self.abandon_turn(
            "the request exceeds the model's context window even after compaction".into(),
        );
        AfterFailure::Abandoned
    }

    /// A call finished.
    pub(crate) fn on_tool_done(
        &mut self,
        index: usize,
        call_id: &ToolCallId,
        outcome: Result<ToolResult, ToolError>,
    ) {
        let Some(entry) = self.round.get(index) else {
            return;
        };
        if &entry.call.id != call_id || !matches!(entry.state, CallState::Running) {
            return;
        }
        if let Err(ToolError::NeedsApproval(request)) = outcome {
            let mut request = *request;
            request.call_id = Some(call_id.clone());
            self.round[index].state = CallState::Suspended(request);
            return;
        }
        if let Err(err) = &outcome {
            let message = format!("tool call {call_id} failed: {err}");
            self.emit(|| AgentEvent::Warning { message });
        }
        self.round[index].state = CallState::Finished(result_part(call_id, outcome));
    }

    /// A running call reported model usage it spent (a sub-agent's); it
    /// counts in the turn in progress.
    pub(crate) fn on_tool_usage(&mut self, usage: &Usage) {
        if let Some(turn) = self.turn.as_mut() {
            turn.usage.accumulate(usage);
        }
    }

    /// The shell lost the futures of running calls (it cannot happen while
    /// the driver holds them; kept as a safety net): answer them as
    /// interrupted rather than wait forever.
    pub(crate) fn on_calls_lost(&mut self) {
        for entry in &mut self.round {
            if matches!(entry.state, CallState::Running) {
                entry.state = CallState::Interrupted;
            }
        }
    }

    /// A background task finished; its result waits for a safe point.
    pub(crate) fn on_background_finished(
        &mut self,
        info: BackgroundTaskInfo,
        outcome: Result<ToolResult, ToolError>,
    ) {
        let part = background_result(&info, outcome);
        self.notifications.push((info, part));
    }

    /// Appends every waiting background result as a notification item.
    /// Called only at safe points (no call of a round is open).
    fn deliver_notifications(&mut self) -> bool {
        if self.notifications.is_empty() {
            return false;
        }
        for (info, part) in std::mem::take(&mut self.notifications) {
            let status = if part.is_error { "failed" } else { "finished" };
            let text = format!(
                "[Background task {} ({}, call {}) {status}]\n{}",
                info.task_id,
                info.tool_name,
                info.call_id,
                part.output.to_text()
            );
            let item = Item::text(ItemKind::Context, text)
                .with_metadata("agentkit.notification", "background_task")
                .with_metadata("agentkit.task_id", info.task_id.as_str())
                .with_metadata("agentkit.call_id", info.call_id.as_str())
                .with_metadata("agentkit.is_error", part.is_error);
            self.append(item, true);
            self.emit(|| AgentEvent::ToolResultReceived { result: part });
        }
        self.phase = Phase::ModelCallDue;
        true
    }

    /// The mutators of the owed point all ran.
    pub(crate) fn mutators_done(&mut self) {
        if self.mutation_due == Some(MutationPoint::BeforeModelCall) {
            self.premutated = true;
            self.forced_compaction = false;
        }
        self.mutation_due = None;
    }

    /// A mutator rewrote the (already validated) transcript. Items of the
    /// old transcript that the new one no longer holds are reported to
    /// transcript observers as archived.
    pub(crate) fn replace_transcript(&mut self, items: Vec<Item>) {
        let items: Vec<Item> = items.into_iter().map(|item| self.with_id(item)).collect();
        // The turn's items are indices into the old log: copy them out.
        if let Some(turn) = self.turn.as_mut() {
            self.log.with(|old| turn.items.detach(old));
        }
        if self.settings.observe_items {
            // An item is archived when the new transcript no longer holds it
            // unchanged (removed, or rewritten in place like an elided output).
            let kept: std::collections::HashMap<&ItemId, &Item> = items
                .iter()
                .filter_map(|i| i.id.as_ref().map(|id| (id, i)))
                .collect();
            let archived: Vec<Item> = self.log.with(|old| {
                old.iter()
                    .filter(|i| {
                        i.id.as_ref()
                            .and_then(|id| kept.get(id))
                            .is_none_or(|new| *new != *i)
                    })
                    .cloned()
                    .collect()
            });
            self.log.replace(items);
            self.outbox.push_back(Note::Rewritten(archived));
        } else {
            self.log.replace(items);
        }
        self.call_ids = None;
        // The provider's measurement was of the old transcript.
        self.last_call = None;
    }

    // ----- host requests ---------------------------------------------------

    pub(crate) fn resolve_approval(
        &mut self,
        call_id: ToolCallId,
        decision: ApprovalDecision,
    ) -> Result<(), InvalidStateReason> {
        let Some(entry) = self.round.iter_mut().find(|c| c.call.id == call_id) else {
            return Err(InvalidStateReason::NoSuchApproval { call_id });
        };
        let approved = matches!(decision, ApprovalDecision::Approve);
        entry.state = match (&entry.state, decision) {
            (CallState::AwaitingApproval(request), ApprovalDecision::Approve) => {
                CallState::Approved(request.clone())
            }
            (CallState::AwaitingApproval(_), ApprovalDecision::Deny { reason }) => {
                CallState::Denied(reason)
            }
            (CallState::Suspended(request), decision) => {
                CallState::Resumed(request.clone(), decision)
            }
            _ => return Err(InvalidStateReason::NotAwaitingApproval { call_id }),
        };
        if self.surfaced_approval.as_ref() == Some(&call_id) {
            self.surfaced_approval = None;
        }
        self.emit(|| AgentEvent::ApprovalResolved { call_id, approved });
        Ok(())
    }

    pub(crate) fn submit_input(&mut self, items: Vec<Item>) -> Result<(), InvalidStateReason> {
        if matches!(self.phase, Phase::ToolRound) {
            return Err(InvalidStateReason::InputDuringToolRound);
        }
        self.pending_input.extend(items);
        Ok(())
    }

    /// Gives up on the turn in progress: open calls are answered (real
    /// outcomes kept), the turn ends with `FinishReason::Error`, pending
    /// input and queued messages stay.
    pub(crate) fn abandon_turn(
        &mut self,
        reason: String,
    ) -> Result<TurnResult, InvalidStateReason> {
        match self.phase {
            Phase::Idle => return Err(InvalidStateReason::NoTurnInProgress),
            Phase::TurnEnding(_) => return Ok(self.deliver_ended_turn()),
            _ => {}
        }
        self.answer_all(ABANDONED, "abandoned");
        let mut metadata = MetadataMap::new();
        metadata.insert("agentkit.abandon_reason".into(), reason.into());
        self.end_turn(FinishReason::Error, metadata);
        Ok(self.deliver_ended_turn())
    }

    // ----- ending turns ----------------------------------------------------

    fn cancel_turn(&mut self, partial: Option<Item>) {
        if let Some(item) = partial {
            self.append(item, true);
        }
        self.answer_all(CANCELLED, "cancelled");
        let mut metadata = MetadataMap::new();
        metadata.insert("agentkit.interrupted".into(), true.into());
        metadata.insert("agentkit.interrupt_reason".into(), "user_cancelled".into());
        self.end_turn(FinishReason::Cancelled, metadata);
    }

    /// Ends the turn; the result is delivered after the `AfterTurnEnded`
    /// mutators.
    fn end_turn(&mut self, finish_reason: FinishReason, metadata: MetadataMap) {
        let turn = self.turn.take();
        // Dropped, not cleared: the rounds of a turn reuse it, but an idle
        // session should not keep the last one's capacity.
        self.round = Vec::new();
        self.surfaced_approval = None;
        let result = match turn.map(|turn| *turn) {
            Some(turn) => TurnResult {
                turn_id: turn.turn_id,
                finish_reason,
                items: self.log.with(|log| turn.items.into_vec(log)),
                usage: turn.usage,
                metadata,
            },
            None => TurnResult {
                turn_id: turn_id(self.next_turn_index),
                finish_reason,
                items: Vec::new(),
                usage: Usage::default(),
                metadata,
            },
        };
        self.phase = Phase::TurnEnding(Box::new(result));
        self.owe_mutation(MutationPoint::AfterTurnEnded);
    }

    fn deliver_ended_turn(&mut self) -> TurnResult {
        let Phase::TurnEnding(result) = std::mem::replace(&mut self.phase, Phase::Idle) else {
            unreachable!("deliver_ended_turn outside TurnEnding")
        };
        let result = *result;
        // The event carries a copy of every item of the turn: made only
        // for observers.
        if self.settings.observe_events {
            let event = result.clone();
            self.emit(|| AgentEvent::TurnFinished { result: event });
        }
        self.settle();
        result
    }

    /// The session goes idle, maybe for a long time, and a host may keep
    /// many: a short transcript gives back its spare capacity and the
    /// call-id set (rebuilt from the log when a call next arrives, which
    /// costs little for a short one). A long transcript keeps both, so
    /// its next turn copies and scans nothing.
    fn settle(&mut self) {
        if self.log.len() < crate::transcript::SHORT {
            self.log.shrink_to_fit();
            self.call_ids = None;
        }
    }

    // ----- the transcript --------------------------------------------------

    fn merge_pending_input(&mut self) {
        if self.pending_input.is_empty() {
            return;
        }
        let items = std::mem::take(&mut self.pending_input);
        for item in &items {
            self.append(item.clone(), false);
        }
        self.emit(|| AgentEvent::InputAccepted { items });
    }

    pub(crate) fn with_id(&mut self, mut item: Item) -> Item {
        fill_id(&mut item, &mut self.next_item_index);
        item
    }

    /// The one place items enter the transcript.
    fn append(&mut self, item: Item, part_of_turn_result: bool) {
        if let Some(ids) = self.call_ids.as_mut() {
            ids.extend(item.tool_calls().map(|c| c.id.clone()));
        }
        self.push_item(item, part_of_turn_result);
    }

    /// [`append`](Self::append) for an answer whose call ids
    /// `unique_call_ids` registered already.
    fn push_item(&mut self, item: Item, part_of_turn_result: bool) {
        let item = self.with_id(item);
        let index = self.log.push(item);
        if part_of_turn_result && let Some(turn) = self.turn.as_mut() {
            turn.items.push(index);
        }
        if self.settings.observe_items {
            self.outbox.push_back(Note::Appended(index));
        }
    }

    fn append_result(&mut self, result: ToolResultPart) {
        if self.settings.observe_events {
            let event = result.clone();
            self.append(Item::tool_result(result), true);
            self.emit(|| AgentEvent::ToolResultReceived { result: event });
        } else {
            self.append(Item::tool_result(result), true);
        }
    }

    fn inject(
        &mut self,
        point: SoftInterruptPoint,
        item: Item,
        skipped_tools: usize,
        messages: Vec<InjectedMessage>,
    ) {
        self.append(item.clone(), false);
        self.emit(|| AgentEvent::SoftInterruptInjected {
            point,
            item,
            skipped_tools,
            messages,
        });
        self.phase = Phase::ModelCallDue;
    }

    /// Tool-call ids come from the model and are not trusted: an id used
    /// earlier in the session, or twice in one answer, gets a fresh one
    /// (`<id>_<n>`, which fits every provider's id pattern); the model's
    /// original stays in `agentkit.original_call_id`.
    fn unique_call_ids(&mut self, mut calls: Vec<ToolCallPart>) -> Vec<ToolCallPart> {
        if calls.is_empty() {
            return calls;
        }
        let (start_ids, start_len) = self.log.starting_call_ids();
        let log = &self.log;
        let own = self.call_ids.get_or_insert_with(|| {
            log.with(|items| {
                items[start_len..]
                    .iter()
                    .flat_map(Item::tool_calls)
                    .map(|c| c.id.clone())
                    .collect()
            })
        });
        // The starting transcript's ids (shared by the agent's sessions)
        // are taken too.
        let mut ids = TakenIds {
            own,
            start: start_ids,
        };
        for call in &mut calls {
            // One hash per call when the id is new, the usual case.
            if ids.insert(call.id.clone()) {
                continue;
            }
            let original = call.id.clone();
            let mut n = 2;
            let fresh = loop {
                let candidate = ToolCallId::new(format!("{original}_{n}"));
                if ids.insert(candidate.clone()) {
                    break candidate;
                }
                n += 1;
            };
            call.metadata
                .insert("agentkit.original_call_id".into(), original.as_str().into());
            call.id = fresh;
        }
        calls
    }
}

/// The tool-call ids a session has used: its own, and those of the
/// starting transcript it shares with the agent's other sessions.
struct TakenIds<'a> {
    own: &'a mut crate::transcript::CallIds,
    start: Option<&'a crate::transcript::CallIds>,
}

impl TakenIds<'_> {
    /// Takes `id`; `false` when it was taken already.
    fn insert(&mut self, id: ToolCallId) -> bool {
        !self.start.is_some_and(|start| start.contains(&id)) && self.own.insert(id)
    }
}

/// The error result for a failed call. An auth request travels in the
/// metadata (`agentkit.auth_request`), so a host watching the transcript or
/// `ToolResultReceived` events can resolve it out of band.
pub(crate) fn tool_error_result(call_id: &ToolCallId, err: &ToolError) -> ToolResultPart {
    let part = ToolResultPart::error(call_id.clone(), err.to_string())
        .with_metadata("agentkit.error_kind", err.kind());
    match err {
        ToolError::AuthRequired(request) => match serde_json::to_value(request) {
            Ok(value) => part.with_metadata("agentkit.auth_request", value),
            Err(_) => part,
        },
        _ => part,
    }
}

/// The result of a background task, answering (late) its original call.
pub(crate) fn background_result(
    info: &BackgroundTaskInfo,
    outcome: Result<ToolResult, ToolError>,
) -> ToolResultPart {
    result_part(&info.call_id, outcome)
        .with_metadata("agentkit.background_task", info.task_id.as_str())
}

/// The result part answering `call_id` with a call's outcome.
fn result_part(call_id: &ToolCallId, outcome: Result<ToolResult, ToolError>) -> ToolResultPart {
    match outcome {
        Ok(result) => {
            let mut part = ToolResultPart::success(call_id.clone(), result.output);
            part.is_error = result.is_error;
            part.metadata = result.metadata;
            part
        }
        Err(err) => tool_error_result(call_id, &err),
    }
}

/// The assistant item for a model answer, or `None` if it said nothing.
fn assistant_item(
    parts: Vec<Part>,
    calls: Vec<ToolCallPart>,
    metadata: MetadataMap,
) -> Option<Item> {
    if parts.is_empty() && calls.is_empty() {
        return None;
    }
    let mut item = Item::new(ItemKind::Assistant, parts);
    // Exact: the item lives as long as the transcript, and growing an empty
    // vector by one call would keep room for four parts.
    item.parts.reserve_exact(calls.len());
    item.parts.extend(calls.into_iter().map(Part::ToolCall));
    item.metadata = metadata;
    Some(item)
}

/// `turn-<index>`, written on the stack (see [`numbered`]): one allocation
/// (the id's shared string) instead of two through `format!`, at every model
/// call.
pub(crate) fn turn_id(index: u64) -> TurnId {
    let mut buf = [0; 25];
    TurnId::from(numbered(b"turn-", index, &mut buf))
}

/// Gives `item` the id of index `next` if it has none, and moves `next` on.
pub(crate) fn fill_id(item: &mut Item, next: &mut u64) {
    if item.id.is_none() {
        item.id = Some(item_id(*next));
        *next += 1;
    }
}

/// `item-<index>`, written on the stack: one allocation (the id's shared
/// string) instead of three through `format!`, which loading a long
/// transcript of items without ids pays for each item.
fn item_id(index: u64) -> ItemId {
    let mut buf = [0; 25];
    ItemId::from(numbered(b"item-", index, &mut buf))
}

/// `<prefix><index>` in `buf`, the digits written by hand: `format!` would
/// allocate and go through the formatting machinery (several hundred
/// instructions).
fn numbered<'a>(prefix: &[u8; 5], index: u64, buf: &'a mut [u8; 25]) -> &'a str {
    let mut at = buf.len();
    let mut n = index;
    loop {
        at -= 1;
        buf[at] = b'0' + (n % 10) as u8;
        n /= 10;
        if n == 0 {
            break;
        }
    }
    let digits = buf.len() - at;
    buf.copy_within(at.., 5);
    buf[..5].copy_from_slice(prefix);
    // Only ASCII was written.
    std::str::from_utf8(&buf[..5 + digits]).unwrap_or_default()
}

// The core alone: no runtime, no clock, no model, no tools. Each test
// feeds events in the order it wants, so every interleaving is exact.
#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn item_ids_are_written_like_format_would() {
        for index in [0, 7, 10, 99, 12_345, u64::MAX] {
            assert_eq!(item_id(index).as_str(), format!("item-{index}"));
            assert_eq!(turn_id(index).as_str(), format!("turn-{index}"));
        }
    }

    fn core(parallel: usize) -> DriverCore {
        let settings = CoreSettings {
            max_model_calls: 5,
            parallel,
            has_mutators: false,
            observe_events: true,
            observe_items: false,
        };
        let mut core = DriverCore::new(SessionId::new("s"), settings, None, None);
        core.pending_input.push(Item::user("go"));
        core
    }

    fn call(id: &str) -> ToolCallPart {
        ToolCallPart::new(id, "t", serde_json::json!({}))
    }

    /// Polls to the model call and answers it with `calls`.
    fn answer_with(core: &mut DriverCore, calls: Vec<ToolCallPart>) {
        assert!(matches!(core.poll(), Action::CallModel(_)));
        let answer = ModelAnswer {
            parts: Vec::new(),
            calls,
            finish_reason: FinishReason::ToolCall,
            metadata: MetadataMap::new(),
            usage: Usage::default(),
        };
        core.on_model_answer(answer, &mut |_| CallState::Queued(None));
    }

    fn results(core: &DriverCore) -> Vec<(String, Option<String>)> {
        core.log.with(|items| {
            items
                .iter()
                .flat_map(|i| i.parts.iter())
                .filter_map(Part::as_tool_result)
                .map(|r| {
                    let kind = r.metadata.get("agentkit.error_kind");
                    (
                        r.call_id.to_string(),
                        kind.and_then(|k| k.as_str()).map(str::to_owned),
                    )
                })
                .collect()
        })
    }

    #[test]
    fn an_urgent_message_keeps_a_finished_later_call() {
        let mut core = core(4);
        answer_with(&mut core, vec![call("a"), call("b"), call("c")]);
        let Action::StartTools(started) = core.poll() else {
            panic!()
        };
        assert_eq!(started.len(), 3);
        assert!(matches!(core.poll(), Action::AwaitTools));
        // b finishes first; it waits for a.
        core.on_tool_done(1, &"b".into(), Ok(ToolResult::new("b done")));
        assert!(matches!(core.poll(), Action::AwaitTools));
        assert!(results(&core).is_empty(), "b waits for a");
        core.soft.push_urgent(Item::user("stop"));
        let Action::Yield(LoopStep::Interrupt(LoopInterrupt::AfterToolResult(_))) = core.poll()
        else {
            panic!()
        };
        assert_eq!(
            results(&core),
            [
                ("a".into(), Some("skipped".into())),
                ("b".into(), None),
                ("c".into(), Some("skipped".into())),
            ]
        );
        // A late completion of a skipped call is ignored.
        core.on_tool_done(0, &"a".into(), Ok(ToolResult::new("late")));
        assert_eq!(results(&core).len(), 3);
    }

    #[test]
    fn lost_calls_are_answered_as_interrupted_in_order() {
        let mut core = core(2);
        answer_with(&mut core, vec![call("a"), call("b"), call("c")]);
        let Action::StartTools(started) = core.poll() else {
            panic!()
        };
        assert_eq!(started.len(), 2, "bounded by the parallelism");
        core.on_tool_done(1, &"b".into(), Ok(ToolResult::new("b done")));
        core.on_calls_lost();
        // a is answered as interrupted, b keeps its result, c still runs.
        let Action::StartTools(next) = core.poll() else {
            panic!()
        };
        assert_eq!(next.iter().map(|s| s.index).collect::<Vec<_>>(), [2]);
        assert_eq!(
            results(&core),
            [("a".into(), Some("interrupted".into())), ("b".into(), None)]
        );
    }

    #[test]
    fn the_step_limit_ends_the_turn() {
        let mut core = core(1);
        for round in 0..5 {
            answer_with(&mut core, vec![call(&format!("c{round}"))]);
            let Action::StartTools(_) = core.poll() else {
                panic!()
            };
            core.on_tool_done(
                0,
                &format!("c{round}").as_str().into(),
                Ok(ToolResult::new("x")),
            );
            assert!(matches!(core.poll(), Action::Yield(_)));
        }
        let Action::Yield(LoopStep::Finished(result)) = core.poll() else {
            panic!()
        };
        assert_eq!(result.finish_reason, FinishReason::StepLimit);
        core.log.with(agentkit_core::validate_transcript).unwrap();
    }

    #[test]
    fn a_call_paused_for_approval_waits_for_its_siblings_then_runs_again() {
        let mut core = core(2);
        answer_with(&mut core, vec![call("a"), call("b")]);
        let Action::StartTools(started) = core.poll() else {
            panic!()
        };
        assert_eq!(started.len(), 2);
        let request = agentkit_tools_core::ApprovalRequest {
            task_id: None,
            call_id: None,
            id: agentkit_core::ApprovalId::new("inner"),
            request_kind: "filesystem.write".into(),
            reason: agentkit_tools_core::ApprovalReason::PolicyRequiresConfirmation,
            summary: "child writes".into(),
            metadata: MetadataMap::new(),
        };
        core.on_tool_done(
            0,
            &"a".into(),
            Err(ToolError::NeedsApproval(Box::new(request))),
        );
        // b still runs: the approval is not shown yet.
        assert!(matches!(core.poll(), Action::AwaitTools));
        core.on_tool_done(1, &"b".into(), Ok(ToolResult::new("b done")));
        let Action::Yield(LoopStep::Interrupt(LoopInterrupt::ApprovalRequest(pending))) =
            core.poll()
        else {
            panic!()
        };
        assert_eq!(pending.call.id.as_str(), "a");
        assert_eq!(pending.request.call_id.as_ref().unwrap().as_str(), "a");
        // A denial runs the call again too, with the answer.
        core.resolve_approval("a".into(), ApprovalDecision::deny_with_reason("no"))
            .unwrap();
        let Action::StartTools(again) = core.poll() else {
            panic!()
        };
        let resume = again[0].resume.as_ref().unwrap();
        assert_eq!(resume.decision, ApprovalDecision::deny_with_reason("no"));
        assert!(again[0].approval.is_none());
        core.on_tool_done(0, &"a".into(), Ok(ToolResult::new("child went on")));
        assert!(matches!(
            core.poll(),
            Action::Yield(LoopStep::Interrupt(LoopInterrupt::AfterToolResult(_)))
        ));
        assert_eq!(results(&core), [("a".into(), None), ("b".into(), None)]);
    }

    #[test]
    fn a_turn_keeps_its_items_when_a_mutator_rewrites_the_log() {
        let mut core = core(1);
        answer_with(&mut core, vec![call("a")]);
        let Action::StartTools(_) = core.poll() else {
            panic!()
        };
        core.on_tool_done(0, &"a".into(), Ok(ToolResult::new("a done")));
        assert!(matches!(core.poll(), Action::Yield(_)));
        let appended: Vec<Item> = core.log.with(|items| items[1..].to_vec());
        // A compaction drops the round from the log mid-turn.
        core.replace_transcript(vec![Item::user("summary")]);
        assert!(matches!(core.poll(), Action::CallModel(_)));
        let answer = ModelAnswer {
            parts: vec![Part::text("done")],
            calls: Vec::new(),
            finish_reason: FinishReason::Completed,
            metadata: MetadataMap::new(),
            usage: Usage::default(),
        };
        core.on_model_answer(answer, &mut |_| CallState::Queued(None));
        let Action::Yield(LoopStep::Finished(result)) = core.poll() else {
            panic!()
        };
        assert_eq!(result.items.len(), 3);
        assert_eq!(
            result.items[..2],
            appended[..],
            "as appended, not as rewritten"
        );
        assert_eq!(result.items[2].text_content(), "done");
        let last = core.log.with(|items| items.last().cloned());
        assert_eq!(last.as_ref(), Some(&result.items[2]));
    }

    #[test]
    fn repeated_ids_get_fresh_ones() {
        let mut core = core(1);
        answer_with(&mut core, vec![call("x"), call("x"), call("x_2")]);
        let ids: Vec<String> = core.round.iter().map(|c| c.call.id.to_string()).collect();
        assert_eq!(ids, ["x", "x_2", "x_2_2"]);
    }
}
