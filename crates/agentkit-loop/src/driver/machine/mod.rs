//! The sans-IO heart of the driver, in the manner of quinn-proto's
//! `Connection`.
//!
//! [`DriverCore`] holds the whole state of a session as plain data. It has
//! no `.await`, reads no lock, atomic or clock, and calls no callback:
//! everything it learns enters through an `on_*` method (one per
//! [`Input`]): host input, a queued message, a cancellation, each model
//! stream event, a preflight verdict, a tool outcome, a mutator's rewrite.
//! [`DriverCore::poll`] says what to do next (an [`Action`]), and events for
//! observers leave through one outbox the shell drains. `LoopDriver::next`
//! is the thin async shell that performs the actions.
//!
//! Because the core is a deterministic function of its inputs, a recording
//! core keeps them in an input log that replays into a fresh core (see
//! `crate::replay`).
//!
//! The transitions are split by concept: `model` (a model call, streamed
//! and answered), `round` (a tool round), `turn` (beginning and ending a
//! user turn, safe points), `log` (the transcript and its ids).

mod call_ids;
mod input;
mod log;
mod model;
mod reported;
pub(crate) mod restore;
mod round;
pub(crate) mod state;
mod timer;
mod turn;

pub use input::{Input, QueuedMessages, RecordedRewrite, ToolOutcome, Validated, Verdict};
pub(crate) use log::turn_id;
pub use timer::Routed;

use crate::background::BackgroundTaskInfo;
use crate::transcript::TranscriptLog;
use crate::{
    AgentEvent, InputRequest, InvalidStateReason, LastCallUsage, LoopInterrupt, LoopStep,
    MutationContext, MutationPoint, PromptCacheRequest, ToolRoundInfo,
};
use agentkit_core::{Item, MetadataMap, SessionId, ToolCallId, ToolResultPart, TurnId};
use agentkit_tools_core::{ApprovalRequest, ToolError, ToolResult, ToolResume};
use state::{AfterRound, Phase, Step, Turn};
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
    Yield(Yielded),
    /// Refuse the host's `next()`.
    Fail(InvalidStateReason),
    /// Take the deliverable messages of the soft-interrupt queue (all of
    /// them with `follow_ups`, else not the follow-ups) and report them
    /// with [`DriverCore::on_queued`], which answers with the next action.
    TakeQueued { follow_ups: bool },
    /// Call the model once and feed its stream in.
    CallModel(ModelCall),
    /// Run the permission preflight of the unchecked calls in this range
    /// of the round and report each verdict with [`DriverCore::on_checked`]
    /// (a range, not a list: no allocation per round); the last verdict is
    /// answered with the next action.
    Preflight(std::ops::Range<usize>),
    /// Start this call of the round, then poll again (the next call to
    /// start, if the parallelism allows, comes from that poll), unless
    /// [`StartCall::then_await`] says that poll would only wait.
    StartTool(StartCall),
    /// Hand the host's answer to the call waiting for it (its future is
    /// running), then poll again.
    AnswerQuestion {
        /// The call.
        call_id: ToolCallId,
        /// The checked answer.
        answer: agentkit_tools_core::HostAnswer,
    },
    /// Wait for a running call to finish or a cancellation (and, with
    /// `wake_on_urgent`, an urgent message), then poll again.
    AwaitTools { wake_on_urgent: bool },
    /// The timer of call `index` (a detach-after call) fired: detach its
    /// background task and report with [`DriverCore::on_detached`], which
    /// answers with the next action.
    Detach { index: usize, task_id: String },
    /// Run every mutator at this point, then report with
    /// [`DriverCore::on_mutators_done`].
    RunMutators(MutationPoint),
}

/// A step for the host, kept small: an action is moved at every poll, and
/// a [`LoopStep`] is 176 bytes. The usual yields travel as what they hold;
/// the rare ones (an approval, a question) boxed.
#[derive(Debug)]
pub(crate) enum Yielded {
    /// `LoopInterrupt::AfterToolResult`: once per tool round.
    AfterToolResult(ToolRoundInfo),
    /// `LoopInterrupt::AwaitingInput`.
    AwaitingInput(InputRequest),
    /// `LoopStep::Finished`, in the box the ended turn kept it in.
    Finished(Box<crate::TurnResult>),
    /// Any other step.
    Other(Box<LoopStep>),
}

impl Yielded {
    /// The step the host receives.
    pub(crate) fn into_step(self) -> LoopStep {
        match self {
            Yielded::AfterToolResult(info) => {
                LoopStep::Interrupt(LoopInterrupt::AfterToolResult(info))
            }
            Yielded::AwaitingInput(request) => {
                LoopStep::Interrupt(LoopInterrupt::AwaitingInput(request))
            }
            Yielded::Finished(result) => LoopStep::Finished(*result),
            Yielded::Other(step) => *step,
        }
    }
}

/// The model call the core asks for.
#[derive(Debug)]
pub(crate) struct ModelCall {
    pub(crate) turn_id: TurnId,
    /// The cache request of this call.
    pub(crate) cache: Option<PromptCacheRequest>,
}

/// A call the shell should start.
#[derive(Debug)]
pub(crate) struct StartCall {
    /// Its index in the round.
    pub(crate) index: usize,
    /// The model call whose round it belongs to.
    pub(crate) turn_id: TurnId,
    /// The host's approval, if it needed one.
    pub(crate) approval: Option<Box<ApprovalRequest>>,
    /// The host's answer, when the call paused for an approval mid-run.
    pub(crate) resume: Option<Box<ToolResume>>,
    /// The request the tool receives.
    pub(crate) request: agentkit_tools_core::ToolRequest,
    /// The tool the preflight found, with the spec it validated the
    /// request's input against.
    pub(crate) validated: Option<agentkit_tools_core::ResolvedTool>,
    /// No other call can start beside this one: unless the shell reports
    /// how it routed the call (an input, after which it polls), the next
    /// poll would say [`Action::AwaitTools`], so the shell waits at once.
    /// That poll would change nothing, so it is neither made nor recorded.
    pub(crate) then_await: bool,
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
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct CoreSettings {
    /// The step limit: model calls per user turn.
    pub max_model_calls: u32,
    /// Calls of a round that run at once.
    pub parallel: usize,
    /// The agent has mutators.
    pub has_mutators: bool,
    /// Events are queued for observers.
    #[serde(skip, default = "yes")]
    pub observe_events: bool,
    /// Appended items are reported to transcript observers.
    #[serde(skip)]
    pub observe_items: bool,
}

fn yes() -> bool {
    true
}

/// The whole state of one session.
pub(crate) struct DriverCore {
    pub(crate) session_id: SessionId,
    pub(crate) log: TranscriptLog,
    pub(crate) pending_input: Vec<Item>,
    pub(crate) phase: Phase,
    pub(crate) next_turn_index: u64,
    pub(crate) next_item_index: u64,
    /// User turns begun in this core (numbers the turns for the shell's
    /// cancellation checkpoints).
    pub(crate) user_turns: u64,
    /// Boxed, as most sessions set neither.
    pub(crate) default_cache: Option<Box<PromptCacheRequest>>,
    pub(crate) next_turn_cache: Option<Box<PromptCacheRequest>>,
    pub(crate) settings: CoreSettings,
    /// Every tool-call id of the transcript after its starting transcript
    /// (whose ids the log shares), built when first needed.
    call_ids: Option<call_ids::UsedCallIds>,
    outbox: VecDeque<Note>,
    /// The provider's usage of the last model call.
    pub(crate) last_call: Option<LastCallUsage>,
    /// Results of background tasks waiting for a safe point.
    pub(crate) notifications: Vec<(BackgroundTaskInfo, ToolResultPart)>,
    /// The input log, when recording.
    pub(crate) recording: Option<Vec<Input>>,
    /// Moves with every input that changes the core's state (see
    /// `LoopDriver::generation`); an idle poll and an empty queue keep it.
    pub(crate) generation: u64,
}

impl DriverCore {
    pub(crate) fn new(
        session_id: SessionId,
        settings: CoreSettings,
        default_cache: Option<PromptCacheRequest>,
    ) -> Self {
        Self {
            session_id,
            log: TranscriptLog::new(Vec::new()),
            pending_input: Vec::new(),
            phase: Phase::IDLE,
            next_turn_index: 0,
            next_item_index: 0,
            user_turns: 0,
            default_cache: default_cache.map(Box::new),
            next_turn_cache: None,
            settings,
            call_ids: None,
            outbox: VecDeque::new(),
            last_call: None,
            notifications: Vec::new(),
            recording: None,
            generation: 0,
        }
    }

    /// Writes `input` to the log when recording; the input changes the
    /// state (the generation moves).
    #[inline]
    fn record(&mut self, input: impl FnOnce() -> Input) {
        self.touch();
        self.record_quiet(input);
    }

    /// Writes `input` to the log when recording, for an input that may
    /// change nothing a snapshot shows (a poll, an empty queue): the
    /// transition that does change something calls [`touch`](Self::touch).
    #[inline]
    fn record_quiet(&mut self, input: impl FnOnce() -> Input) {
        if let Some(log) = self.recording.as_mut() {
            log.push(input());
        }
    }

    /// The state changed: the generation moves.
    #[inline]
    fn touch(&mut self) {
        self.generation = self.generation.wrapping_add(1);
    }

    /// The turn in progress.
    pub(crate) fn turn(&self) -> Option<&Turn> {
        match &self.phase {
            Phase::InTurn(turn) => Some(turn),
            _ => None,
        }
    }

    fn turn_mut(&mut self) -> Option<&mut Turn> {
        match &mut self.phase {
            Phase::InTurn(turn) => Some(turn),
            _ => None,
        }
    }

    /// The number of the user turn in progress and whether it was
    /// cancelled.
    pub(crate) fn turn_number(&self) -> Option<(u64, bool)> {
        self.turn().map(|t| (t.number, t.cancelled))
    }

    /// What the mutators at `point` are told.
    pub(crate) fn mutation_context(&self, point: MutationPoint) -> MutationContext {
        let forced = match self.turn().map(|t| &t.step) {
            Some(Step::ModelCallDue(due)) => due.forced,
            _ => false,
        };
        MutationContext::new(self.session_id.clone(), point)
            .with_forced(point == MutationPoint::BeforeModelCall && forced)
            .with_last_call(self.last_call.clone())
    }

    /// The mutation owed before anything else happens, derived from the
    /// phase.
    pub(crate) fn mutation_due(&self) -> Option<MutationPoint> {
        if !self.settings.has_mutators {
            return None;
        }
        match &self.phase {
            Phase::TurnEnding { mutated: false, .. } => Some(MutationPoint::AfterTurnEnded),
            Phase::InTurn(turn) => match &turn.step {
                Step::AfterRound(AfterRound {
                    skipped: None,
                    mutated: false,
                    ..
                }) => Some(MutationPoint::AfterToolResult),
                _ => None,
            },
            _ => None,
        }
    }

    /// `true` when notes wait for [`take_note`](Self::take_note).
    pub(crate) fn has_notes(&self) -> bool {
        !self.outbox.is_empty()
    }

    /// Observer notes queued since the last call.
    pub(crate) fn take_note(&mut self) -> Option<Note> {
        self.outbox.pop_front()
    }

    fn emit(&mut self, event: impl FnOnce() -> AgentEvent) {
        if self.settings.observe_events {
            self.outbox.push_back(Note::Event(event()));
        }
    }

    /// Queues an event built while the state it reads was borrowed.
    fn emit_some(&mut self, event: Option<AgentEvent>) {
        if let Some(event) = event {
            self.outbox.push_back(Note::Event(event));
        }
    }

    /// `true` while a tool round has calls to answer; the shell drops its
    /// running futures otherwise.
    pub(crate) fn round_open(&self) -> bool {
        matches!(self.turn().map(|t| &t.step), Some(Step::ToolRound(_)))
    }

    /// `true` when an urgent message would cut the open round short and
    /// the core was not told of one yet.
    pub(crate) fn wants_urgent(&self) -> bool {
        matches!(self.turn().map(|t| &t.step), Some(Step::ToolRound(round)) if !round.urgent)
    }

    // ----- deciding -------------------------------------------------------

    /// What to do next.
    pub(crate) fn poll(&mut self) -> Action {
        self.record_quiet(|| Input::Poll);
        self.decide()
    }

    /// The decision a poll makes, also made at once by the answers to the
    /// actions the shell performs without awaiting (the queue's contents,
    /// the last preflight verdict of a round, a detach): those inputs imply
    /// the poll that follows them (input-log version 3), so a round is
    /// fewer transitions and the log has no `Poll` between them.
    fn decide(&mut self) -> Action {
        // A poll while idle with nothing to do (the host asking again, an
        // idle session's step) changes nothing a snapshot shows: the
        // generation stays, so a store writes nothing.
        if !matches!(self.phase, Phase::Idle { .. }) {
            self.touch();
        }
        loop {
            let turn = match &mut self.phase {
                Phase::Idle { asked } => {
                    if !self.pending_input.is_empty() {
                        self.touch();
                        self.begin_turn();
                        continue;
                    }
                    if !*asked {
                        // Messages typed while idle are the next input.
                        return Action::TakeQueued { follow_ups: true };
                    }
                    self.phase = Phase::IDLE;
                    return Action::Yield(Yielded::AwaitingInput(InputRequest {
                        session_id: self.session_id.clone(),
                        reason: "the model finished and no input is queued".into(),
                    }));
                }
                Phase::TurnEnding { mutated, .. } => {
                    if !*mutated && self.settings.has_mutators {
                        return Action::RunMutators(MutationPoint::AfterTurnEnded);
                    }
                    let Phase::TurnEnding { result, .. } =
                        std::mem::replace(&mut self.phase, Phase::IDLE)
                    else {
                        continue;
                    };
                    return Action::Yield(Yielded::Finished(self.deliver(result)));
                }
                Phase::InTurn(turn) => turn,
            };
            // A cancellation ends the turn where the original checks it:
            // before a model call and inside a round (a stream being
            // cancelled ends at once, in `on_cancelled`).
            if turn.cancelled && matches!(turn.step, Step::ModelCallDue(_) | Step::ToolRound(_)) {
                self.cancel_turn(None);
                continue;
            }
            match &mut turn.step {
                Step::ModelCallDue(due) => {
                    if turn.model_calls >= self.settings.max_model_calls {
                        let mut metadata = MetadataMap::new();
                        metadata.insert(
                            agentkit_core::keys::MAX_MODEL_CALLS.into(),
                            self.settings.max_model_calls.into(),
                        );
                        self.end_turn(agentkit_core::FinishReason::StepLimit, metadata);
                        continue;
                    }
                    let mutated = due.mutated;
                    // Pending input first (stores rely on it being the first
                    // thing a step appends), then background results.
                    self.merge_pending_input();
                    self.deliver_notifications();
                    if self.settings.has_mutators && !mutated {
                        return Action::RunMutators(MutationPoint::BeforeModelCall);
                    }
                    return Action::CallModel(self.begin_model_call());
                }
                Step::Streaming(_) => {
                    // The shell polls only after a stream ended; a stream
                    // it dropped is made due again.
                    self.stream_lost();
                    continue;
                }
                Step::TurnComplete { .. } => return Action::TakeQueued { follow_ups: true },
                Step::ToolRound(_) => match self.poll_round() {
                    Some(action) => return action,
                    None => continue,
                },
                Step::AfterRound(after) => {
                    if after.skipped.is_some() {
                        return Action::TakeQueued { follow_ups: false };
                    }
                    if !after.mutated && self.settings.has_mutators {
                        return Action::RunMutators(MutationPoint::AfterToolResult);
                    }
                    if !after.drained {
                        // The after-tools point: everything typed during the round, after
                        // all results and mutators.
                        return Action::TakeQueued { follow_ups: false };
                    }
                    let turn_id = turn.turn_id.clone();
                    turn.step.set(Step::ModelCallDue(Default::default()));
                    return Action::Yield(Yielded::AfterToolResult(ToolRoundInfo {
                        session_id: self.session_id.clone(),
                        turn_id,
                        transcript_len: self.log.len(),
                    }));
                }
            }
        }
    }

    // ----- taking events in -----------------------------------------------

    /// The mutators of the owed point all ran.
    pub(crate) fn on_mutators_done(&mut self) {
        self.record(|| Input::MutatorsDone);
        match &mut self.phase {
            Phase::TurnEnding { mutated, .. } => *mutated = true,
            Phase::InTurn(turn) => match &mut turn.step {
                Step::ModelCallDue(due) => {
                    due.mutated = true;
                    due.forced = false;
                }
                Step::AfterRound(after) => after.mutated = true,
                _ => {}
            },
            Phase::Idle { .. } => {}
        }
    }

    /// A mutator is about to run.
    pub(crate) fn on_mutator_started(&mut self, point: MutationPoint, mutator: String) {
        self.record(|| Input::MutatorStarted {
            point,
            mutator: mutator.clone(),
        });
        self.emit(|| AgentEvent::MutationStarted { point, mutator });
    }

    /// A mutator ran; its rewrite (validated by the shell) replaces the
    /// transcript.
    pub(crate) fn on_mutator_finished(
        &mut self,
        point: MutationPoint,
        mutator: String,
        rewrite: Option<RecordedRewrite>,
    ) {
        self.record(|| Input::MutatorFinished {
            point,
            mutator: mutator.clone(),
            rewrite: rewrite.clone(),
        });
        let dirty = rewrite.is_some();
        if let Some(rewrite) = rewrite {
            let items_after = rewrite.items.len();
            self.replace_transcript(rewrite.items);
            if let Some(report) = rewrite.compaction {
                let mutator = mutator.clone();
                self.emit(|| AgentEvent::CompactionApplied {
                    point,
                    mutator,
                    items_before: rewrite.items_before,
                    items_after,
                    report,
                });
            }
        }
        self.emit(|| AgentEvent::MutationFinished {
            point,
            mutator,
            dirty,
        });
    }

    /// The tool catalog changed since the last model call.
    pub(crate) fn on_catalog_changed(&mut self, change: agentkit_tools_core::ToolCatalogEvent) {
        self.record(|| Input::CatalogChanged {
            change: change.clone(),
        });
        self.emit(|| AgentEvent::ToolCatalogChanged { change });
    }

    /// `next()` failed.
    pub(crate) fn on_failed(&mut self, message: String) {
        self.record(|| Input::Failed {
            message: message.clone(),
        });
        self.emit(|| AgentEvent::RunFailed { message });
    }

    /// The host set the cache request of the next model call.
    pub(crate) fn on_next_call_cache(&mut self, cache: PromptCacheRequest) {
        self.record(|| Input::NextCallCache {
            cache: cache.clone(),
        });
        self.next_turn_cache = Some(Box::new(cache));
    }

    /// Feeds one recorded input (replay). A log of `version` 2 has a
    /// `Poll` after every input that implies one in version 3; those
    /// inputs are taken without their poll.
    pub(crate) fn apply(&mut self, input: Input, version: u32) -> Option<Action> {
        let implied = version >= 3;
        match input {
            Input::Poll => return Some(self.poll()),
            Input::Queued { messages } => {
                self.take_queued(messages);
                return implied.then(|| self.decide());
            }
            Input::Checked {
                index,
                verdict,
                validated,
            } => {
                let done = self.check(index, verdict, validated);
                return (implied && done).then(|| self.decide());
            }
            Input::Detached { index, detached } => {
                self.detach(index, detached);
                return implied.then(|| self.decide());
            }
            Input::Submit { items } => {
                let _ = self.submit_input(items);
            }
            Input::Approval { call_id, decision } => {
                let _ = self.resolve_approval(call_id, decision);
            }
            Input::NextCallCache { cache } => self.on_next_call_cache(cache),
            Input::Abandon { reason } => {
                let _ = self.abandon_turn(reason);
            }
            Input::UrgentQueued => self.on_urgent_queued(),
            Input::Cancelled => self.on_cancelled(),
            Input::ModelDelta { delta } => {
                let _ = self.on_model_delta(delta);
            }
            Input::ModelToolCall { call } => self.on_model_tool_call(call),
            Input::ModelUsage { usage } => self.on_model_usage(usage),
            Input::ModelWarning { message } => self.on_model_warning(message),
            Input::ModelFinished {
                finish_reason,
                metadata,
            } => {
                let _ = self.on_model_finished(finish_reason, metadata);
            }
            Input::ModelFailed {
                context_overflow,
                message,
            } => {
                self.on_model_failed(context_overflow, message);
            }
            Input::ToolDone {
                index,
                call_id,
                outcome,
            } => self.on_tool_done(index, &call_id, outcome),
            Input::ToolUsage { usage } => self.on_tool_usage(usage),
            Input::ToolQuestion { call_id, question } => {
                let _ = self.on_tool_question(&call_id, question);
            }
            Input::QuestionAnswered { call_id, answer } => {
                let _ = self.resolve_question(call_id, answer);
            }
            Input::CallsLost => self.on_calls_lost(),
            Input::Routed { index, routed } => self.on_routed(index, routed),
            Input::Timeout { now } => self.on_timeout(now),
            Input::BackgroundFinished { info, result } => self.on_background_finished(info, result),
            Input::CatalogChanged { change } => self.on_catalog_changed(change),
            Input::MutatorStarted { point, mutator } => self.on_mutator_started(point, mutator),
            Input::MutatorFinished {
                point,
                mutator,
                rewrite,
            } => self.on_mutator_finished(point, mutator, rewrite),
            Input::MutatorsDone => self.on_mutators_done(),
            Input::Failed { message } => self.on_failed(message),
            Input::RunStarted => self.on_run_started(),
            Input::ToolProgress { call_id, progress } => self.on_tool_progress(call_id, progress),
            Input::NestedEvent { event } => self.on_nested_event(event),
            Input::TaskCancelled { task_id, call_id } => self.on_task_cancelled(task_id, call_id),
            Input::ProgressDropped { count } => self.on_progress_dropped(count),
        }
        None
    }
}

/// The error result for a failed call. An auth request travels in the
/// metadata (`agentkit.auth_request`), so a host watching the transcript or
/// `ToolResultReceived` events can resolve it out of band.
pub(crate) fn tool_error_result(call_id: &ToolCallId, err: &ToolError) -> ToolResultPart {
    let part = ToolResultPart::error(call_id.clone(), err.to_string())
        .with_metadata(agentkit_core::keys::ERROR_KIND, err.kind());
    match err {
        ToolError::AuthRequired(request) => match serde_json::to_value(request) {
            Ok(value) => part.with_metadata(agentkit_core::keys::AUTH_REQUEST, value),
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
        .with_metadata(agentkit_core::keys::BACKGROUND_TASK, info.task_id.as_str())
}

/// The request a tool receives for a call part.
pub(crate) fn tool_request(call: &agentkit_core::ToolCallPart) -> agentkit_tools_core::ToolRequest {
    agentkit_tools_core::ToolRequest {
        call_id: call.id.clone(),
        tool_name: call.name.clone(),
        input: call.input.shared_value(),
        metadata: call.metadata.clone(),
    }
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

#[cfg(test)]
mod tests;
