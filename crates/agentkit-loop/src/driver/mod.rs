//! `LoopDriver`: the runtime of one session.
//!
//! The driver owns the transcript and is its only writer. `next()` moves it
//! from one resting [`Phase`](state::Phase) to the next yield point; the
//! model call lives in `model_call.rs`, the tool round in `tool_round.rs`,
//! snapshot and resume in `resume.rs`.

mod model_call;
mod resume;
mod state;
mod tool_round;

pub(crate) use resume::check_snapshot;

use crate::agent::{Agent, AgentConfig};
use crate::transcript::TranscriptLog;
use crate::{
    AgentEvent, InputRequest, LoopError, LoopInterrupt, LoopStep, ModelAdapter, ModelSession,
    MutationContext, MutationPoint, PendingApproval, PromptCacheRequest, SoftInterruptHandle,
    TurnResult,
};
use agentkit_core::{
    FinishReason, Item, ItemId, MetadataMap, SessionId, ToolCallId, ToolResultPart, TurnId, Usage,
    validate_transcript,
};
use agentkit_tools_core::{ApprovalDecision, ResolvedCatalog, ToolError};
use state::{ActiveTurn, CallState, Phase, RoundCall};
use std::sync::Arc;
use tracing::Instrument;

/// The runtime of one session; see the crate docs for the host loop.
pub struct LoopDriver<S: ModelSession> {
    session_id: SessionId,
    session: S,
    config: Arc<dyn DriverConfig>,
    log: TranscriptLog,
    pending_input: Vec<Item>,
    phase: Phase,
    round: Vec<RoundCall>,
    /// The approval currently shown to the host, until it is resolved.
    surfaced_approval: Option<ToolCallId>,
    turn: Option<ActiveTurn>,
    next_turn_index: u64,
    next_item_index: u64,
    default_cache: Option<PromptCacheRequest>,
    next_turn_cache: Option<PromptCacheRequest>,
    last_catalog: Option<Arc<ResolvedCatalog>>,
    soft: SoftInterruptHandle,
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
    pub(crate) cancellation: &'a Option<agentkit_core::CancellationHandle>,
    pub(crate) mutators: &'a [Arc<dyn crate::LoopMutator>],
    pub(crate) observers: &'a [Arc<dyn crate::LoopObserver>],
    pub(crate) transcript_observers: &'a [Arc<dyn crate::TranscriptObserver>],
    pub(crate) record_content: bool,
}

impl<M: ModelAdapter> DriverConfig for AgentConfig<M> {
    fn shared(&self) -> SharedConfig<'_> {
        SharedConfig {
            executor: &self.executor,
            task_manager: &self.task_manager,
            resources: &self.resources,
            cancellation: &self.cancellation,
            mutators: &self.mutators,
            observers: &self.observers,
            transcript_observers: &self.transcript_observers,
            record_content: self.record_content,
        }
    }
}

impl<S: ModelSession> LoopDriver<S> {
    pub(crate) fn new<M: ModelAdapter<Session = S>>(
        agent: &Agent<M>,
        session_id: SessionId,
        session: S,
        default_cache: Option<PromptCacheRequest>,
    ) -> Result<Self, LoopError> {
        let config: Arc<dyn DriverConfig> = agent.config.clone();
        let mut driver = Self {
            session_id,
            session,
            config,
            log: TranscriptLog::new(Vec::new()),
            pending_input: agent.config.input.clone(),
            phase: Phase::Idle,
            round: Vec::new(),
            surfaced_approval: None,
            turn: None,
            next_turn_index: 0,
            next_item_index: 0,
            default_cache,
            next_turn_cache: None,
            last_catalog: None,
            soft: SoftInterruptHandle::default(),
        };
        // The starting transcript is loaded passively: ids are filled in, but
        // transcript observers only see what the session itself appends.
        let items = agent
            .config
            .transcript
            .iter()
            .cloned()
            .map(|item| driver.with_id(item))
            .collect();
        driver.log.replace(items);
        driver.emit(AgentEvent::RunStarted {
            session_id: driver.session_id.clone(),
        });
        Ok(driver)
    }

    /// The session's id.
    pub fn session_id(&self) -> &SessionId {
        &self.session_id
    }

    /// The transcript so far, as a cheap view.
    pub fn transcript(&self) -> crate::TranscriptView {
        self.log.view()
    }

    /// The soft-interrupt queue: push messages to it from any task while
    /// `next()` runs; they are injected at the next safe point.
    pub fn soft_interrupts(&self) -> SoftInterruptHandle {
        self.soft.clone()
    }

    /// Overrides the prompt-cache request of the next model call only.
    pub fn set_next_turn_cache(&mut self, cache: PromptCacheRequest) -> Result<(), LoopError> {
        self.next_turn_cache = Some(cache);
        Ok(())
    }

    /// Resolves the approval of a call. Fails with `InvalidState` if that
    /// call is not waiting for approval.
    pub fn resolve_approval_for(
        &mut self,
        call_id: ToolCallId,
        decision: ApprovalDecision,
    ) -> Result<(), LoopError> {
        let Some(entry) = self.round.iter_mut().find(|c| c.call.id == call_id) else {
            return Err(LoopError::InvalidState(format!(
                "no pending approval for tool call {call_id}"
            )));
        };
        let CallState::AwaitingApproval(request) = &entry.state else {
            return Err(LoopError::InvalidState(format!(
                "tool call {call_id} is not waiting for approval"
            )));
        };
        let approved = matches!(decision, ApprovalDecision::Approve);
        entry.state = match decision {
            ApprovalDecision::Approve => CallState::Approved(request.clone()),
            ApprovalDecision::Deny { reason } => CallState::Denied(reason),
        };
        if self.surfaced_approval.as_ref() == Some(&call_id) {
            self.surfaced_approval = None;
        }
        self.emit(AgentEvent::ApprovalResolved { call_id, approved });
        Ok(())
    }

    /// Queues input for the next model call. Reached through
    /// [`InputRequest::submit`] and [`crate::ToolRoundInfo::submit`].
    pub(crate) fn submit_input(&mut self, items: Vec<Item>) -> Result<(), LoopError> {
        if self.phase == Phase::ToolRound {
            return Err(LoopError::InvalidState(
                "input cannot be added while a tool round has unanswered calls".into(),
            ));
        }
        self.pending_input.extend(items);
        Ok(())
    }

    /// Runs the loop to its next yield point.
    pub async fn next(&mut self) -> Result<LoopStep, LoopError> {
        let span = tracing::info_span!(
            "invoke_agent",
            gen_ai.operation.name = "invoke_agent",
            gen_ai.conversation.id = %self.session_id,
        );
        let result = self.step().instrument(span).await;
        if let Err(err) = &result {
            self.emit(AgentEvent::RunFailed {
                message: err.to_string(),
            });
        }
        result
    }

    async fn step(&mut self) -> Result<LoopStep, LoopError> {
        loop {
            match self.phase {
                Phase::Idle => {
                    if self.pending_input.is_empty() {
                        // Messages typed while idle are the next input.
                        if let Some(item) = self.soft.drain_merged() {
                            self.pending_input.push(item);
                        }
                    }
                    if self.pending_input.is_empty() {
                        return Ok(LoopStep::Interrupt(LoopInterrupt::AwaitingInput(
                            InputRequest {
                                session_id: self.session_id.clone(),
                                reason: "the model finished and no input is queued".into(),
                            },
                        )));
                    }
                    self.begin_turn();
                }
                Phase::ModelCallDue => {
                    if self.turn.as_ref().is_some_and(ActiveTurn::is_cancelled) {
                        return self.finish_cancelled(Vec::new()).await;
                    }
                    if let Some(step) = self.model_call().await? {
                        return Ok(step);
                    }
                }
                Phase::ToolRound => {
                    if let Some(call_id) = &self.surfaced_approval {
                        return Err(LoopError::InvalidState(format!(
                            "the approval for tool call {call_id} must be resolved before next()"
                        )));
                    }
                    if let Some(pending) = self.next_approval() {
                        return Ok(LoopStep::Interrupt(LoopInterrupt::ApprovalRequest(pending)));
                    }
                    return self.tool_round().await;
                }
            }
        }
    }

    fn begin_turn(&mut self) {
        let cancellation = self
            .config
            .shared()
            .cancellation
            .as_ref()
            .map(|h| h.checkpoint());
        self.turn = Some(ActiveTurn {
            turn_id: TurnId::new(format!("turn-{}", self.next_turn_index)),
            items: Vec::new(),
            usage: Usage::default(),
            cancellation,
        });
        self.phase = Phase::ModelCallDue;
    }

    fn next_approval(&mut self) -> Option<PendingApproval> {
        let entry = self
            .round
            .iter()
            .find(|c| matches!(c.state, CallState::AwaitingApproval(_)))?;
        let CallState::AwaitingApproval(request) = &entry.state else {
            unreachable!()
        };
        let pending = PendingApproval {
            request: request.clone(),
            call: entry.call.clone(),
        };
        self.surfaced_approval = Some(entry.call.id.clone());
        self.emit(AgentEvent::ApprovalRequired {
            request: pending.request.clone(),
        });
        Some(pending)
    }

    /// Merges queued input into the transcript.
    fn merge_pending_input(&mut self) {
        if self.pending_input.is_empty() {
            return;
        }
        let items = std::mem::take(&mut self.pending_input);
        for item in &items {
            self.append(item.clone(), false);
        }
        self.emit(AgentEvent::InputAccepted { items });
    }

    fn with_id(&mut self, mut item: Item) -> Item {
        if item.id.is_none() {
            item.id = Some(ItemId::new(format!("item-{}", self.next_item_index)));
            self.next_item_index += 1;
        }
        item
    }

    /// The one place items enter the transcript.
    fn append(&mut self, item: Item, part_of_turn_result: bool) {
        let item = self.with_id(item);
        let index = self.log.len();
        self.log.push(item.clone());
        for observer in self.config.shared().transcript_observers {
            observer.on_item_appended(index, &item);
        }
        if part_of_turn_result && let Some(turn) = self.turn.as_mut() {
            turn.items.push(item);
        }
    }

    fn append_result(&mut self, result: ToolResultPart) {
        if let Some(entry) = self.round.iter_mut().find(|c| c.call.id == result.call_id) {
            entry.state = CallState::Answered;
        }
        self.append(Item::tool_result(result.clone()), true);
        self.emit(AgentEvent::ToolResultReceived { result });
    }

    pub(crate) fn emit(&self, event: AgentEvent) {
        let observers = self.config.shared().observers;
        if let Some((last, rest)) = observers.split_last() {
            for observer in rest {
                observer.handle_event(event.clone());
            }
            last.handle_event(event);
        }
    }

    /// Answers every call of the round that has no result yet with an error
    /// stub. Returns how many were answered.
    fn stub_open_calls(&mut self, message: &str, kind: &str) -> usize {
        let open: Vec<ToolCallId> = self
            .round
            .iter()
            .filter(|c| !matches!(c.state, CallState::Answered))
            .map(|c| c.call.id.clone())
            .collect();
        for call_id in &open {
            let stub = ToolResultPart::error(call_id.clone(), message)
                .with_metadata("agentkit.error_kind", kind);
            self.append_result(stub);
        }
        self.round.clear();
        self.surfaced_approval = None;
        open.len()
    }

    /// Runs the mutators at `point`; a rewrite is validated before it is kept.
    async fn run_mutators(&mut self, point: MutationPoint) -> Result<(), LoopError> {
        let mutators = self.config.shared().mutators.to_vec();
        for mutator in mutators {
            let name = mutator.name().to_owned();
            self.emit(AgentEvent::MutationStarted {
                point,
                mutator: name.clone(),
            });
            let ctx = MutationContext {
                session_id: self.session_id.clone(),
                point,
            };
            let rewritten = mutator
                .mutate(&ctx, self.log.view())
                .await
                .map_err(|message| LoopError::Mutator {
                    mutator: name.clone(),
                    message,
                })?;
            let dirty = rewritten.is_some();
            if let Some(items) = rewritten {
                validate_transcript(&items).map_err(|err| LoopError::Mutator {
                    mutator: name.clone(),
                    message: err.to_string(),
                })?;
                let items = items.into_iter().map(|item| self.with_id(item)).collect();
                self.log.replace(items);
            }
            self.emit(AgentEvent::MutationFinished {
                point,
                mutator: name,
                dirty,
            });
        }
        Ok(())
    }

    /// Ends the turn: mutators at `AfterTurnEnded`, then `TurnFinished`.
    async fn finish_turn(
        &mut self,
        finish_reason: FinishReason,
        metadata: MetadataMap,
    ) -> Result<LoopStep, LoopError> {
        let turn = self.turn.take();
        self.phase = Phase::Idle;
        self.round.clear();
        self.surfaced_approval = None;
        let result = match turn {
            Some(turn) => TurnResult {
                turn_id: turn.turn_id,
                finish_reason,
                items: turn.items,
                usage: turn.usage,
                metadata,
            },
            None => TurnResult {
                turn_id: TurnId::new(format!("turn-{}", self.next_turn_index)),
                finish_reason,
                items: Vec::new(),
                usage: Usage::default(),
                metadata,
            },
        };
        self.run_mutators(MutationPoint::AfterTurnEnded).await?;
        self.emit(AgentEvent::TurnFinished {
            result: result.clone(),
        });
        Ok(LoopStep::Finished(result))
    }

    /// Ends a cancelled turn: whatever the model streamed is kept, every
    /// open call is answered with a stub.
    async fn finish_cancelled(&mut self, partial: Vec<Item>) -> Result<LoopStep, LoopError> {
        for item in partial {
            self.append(item, true);
        }
        self.stub_open_calls(
            "the tool call was cancelled because the user interrupted the turn",
            "cancelled",
        );
        let mut metadata = MetadataMap::new();
        metadata.insert("agentkit.interrupted".into(), true.into());
        metadata.insert("agentkit.interrupt_reason".into(), "user_cancelled".into());
        self.finish_turn(FinishReason::Cancelled, metadata).await
    }

    fn current_turn_id(&self) -> TurnId {
        self.turn
            .as_ref()
            .map(|t| t.turn_id.clone())
            .unwrap_or_else(|| TurnId::new("turn-none"))
    }

    /// The error result for a failed call. An auth request travels in the
    /// metadata (`agentkit.auth_request`), so a host watching the transcript
    /// or `ToolResultReceived` events can resolve it out of band.
    fn tool_error_result(call_id: &ToolCallId, err: &ToolError) -> ToolResultPart {
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
}
