//! One model call: build the request, stream the answer, record it.
//!
//! Nothing is appended to the transcript until the stream has finished, so
//! a failed or dropped call leaves the transcript as it was and the phase at
//! `ModelCallDue`: calling `next()` again simply retries.

use super::LoopDriver;
use super::state::{CallState, Phase, RoundCall};
use crate::{
    AgentEvent, LoopError, LoopStep, ModelError, ModelErrorKind, ModelSession, ModelTurn,
    ModelTurnEvent, SoftInterruptPoint, TurnRequest,
};
use agentkit_core::{
    DeltaFolder, FinishReason, Item, ItemKind, MetadataMap, Part, ToolCallPart, TurnCancellation,
    TurnId, Usage,
};
use agentkit_tools_core::{Preflight, ToolRequest};
use tracing::Instrument;

/// What the stream produced.
enum StreamOutcome {
    Finished {
        parts: Vec<Part>,
        calls: Vec<ToolCallPart>,
        finish_reason: FinishReason,
        metadata: MetadataMap,
    },
    Cancelled {
        parts: Vec<Part>,
        calls: Vec<ToolCallPart>,
    },
}

impl<S: ModelSession> LoopDriver<S> {
    /// Calls the model once. `Some(step)` is a yield for the host; `None`
    /// means the loop goes on (a tool round is open, or soft-interrupt
    /// messages were injected and the model is due again).
    pub(super) async fn model_call(&mut self) -> Result<Option<LoopStep>, LoopError> {
        self.merge_pending_input();
        let catalog = self.config.shared().executor.catalog()?;
        if let Some(previous) = &self.last_catalog
            && previous.generation != catalog.generation
        {
            let change = catalog.diff_from(previous, "agent");
            if !change.is_empty() {
                self.emit(AgentEvent::ToolCatalogChanged { change });
            }
        }
        self.last_catalog = Some(catalog.clone());
        if cfg!(debug_assertions) {
            self.log.with(agentkit_core::validate_transcript)?;
        }

        let turn_id = TurnId::new(format!("turn-{}", self.next_turn_index));
        self.next_turn_index += 1;
        if let Some(turn) = self.turn.as_mut() {
            turn.turn_id = turn_id.clone();
        }
        self.emit(AgentEvent::TurnStarted {
            session_id: self.session_id.clone(),
            turn_id: turn_id.clone(),
        });
        let turn_cache = self.next_turn_cache.take();
        let request = TurnRequest {
            session_id: self.session_id.clone(),
            turn_id: turn_id.clone(),
            transcript: self.log.view(),
            available_tools: catalog.specs().to_vec(),
            metadata: MetadataMap::new(),
            cache: turn_cache.clone().or_else(|| self.default_cache.clone()),
            output_schema: None,
        };
        let cancellation = self.turn.as_ref().and_then(|t| t.cancellation.clone());
        let span = tracing::info_span!(
            "chat",
            gen_ai.operation.name = "chat",
            gen_ai.conversation.id = %self.session_id,
            agentkit.turn_id = %turn_id,
            gen_ai.usage.input_tokens = tracing::field::Empty,
            gen_ai.usage.output_tokens = tracing::field::Empty,
            gen_ai.output.messages = tracing::field::Empty,
        );
        let streamed = self
            .stream(request, cancellation)
            .instrument(span.clone())
            .await;
        let (outcome, usage) = match streamed {
            Ok(streamed) => streamed,
            Err(err) => {
                // The retry should use the same one-off cache request.
                self.next_turn_cache = turn_cache;
                return Err(err);
            }
        };
        span.record("gen_ai.usage.input_tokens", usage.tokens.input_tokens);
        span.record("gen_ai.usage.output_tokens", usage.tokens.output_tokens);
        if self.config.shared().record_content
            && let StreamOutcome::Finished { parts, .. } = &outcome
        {
            let text: String = parts.iter().filter_map(Part::as_text).collect();
            span.record("gen_ai.output.messages", text.as_str());
        }
        if let Some(turn) = self.turn.as_mut() {
            turn.usage.accumulate(&usage);
        }
        match outcome {
            StreamOutcome::Cancelled { parts, calls } => {
                let partial = assistant_item(parts, calls.clone(), MetadataMap::new());
                self.round = calls
                    .into_iter()
                    .map(|call| RoundCall {
                        call,
                        state: CallState::Queued,
                    })
                    .collect();
                self.finish_cancelled(partial.into_iter().collect())
                    .await
                    .map(Some)
            }
            StreamOutcome::Finished {
                parts,
                calls,
                finish_reason,
                mut metadata,
            } => {
                metadata.insert(
                    "agentkit.finish_reason".into(),
                    serde_json::to_value(&finish_reason).unwrap_or_default(),
                );
                let has_calls = !calls.is_empty();
                if let Some(item) = assistant_item(parts, calls.clone(), metadata) {
                    self.append(item, true);
                }
                if has_calls {
                    self.open_round(calls);
                    return Ok(None);
                }
                // Point B: the model is done, but the user typed meanwhile.
                if let Some(item) = self.soft.drain_merged() {
                    self.inject_soft(SoftInterruptPoint::TurnComplete, item, 0);
                    return Ok(None);
                }
                self.finish_turn(finish_reason, MetadataMap::new())
                    .await
                    .map(Some)
            }
        }
    }

    /// Streams one turn; the transcript is not touched here.
    async fn stream(
        &mut self,
        request: TurnRequest,
        cancellation: Option<TurnCancellation>,
    ) -> Result<(StreamOutcome, Usage), LoopError> {
        let cancelled = async {
            match &cancellation {
                Some(token) => token.cancelled().await,
                None => std::future::pending().await,
            }
        };
        tokio::pin!(cancelled);
        let mut turn = tokio::select! {
            biased;
            _ = &mut cancelled => {
                return Ok((StreamOutcome::Cancelled { parts: Vec::new(), calls: Vec::new() }, Usage::default()));
            }
            turn = self.session.begin_turn(request, cancellation.clone()) => match turn {
                Ok(turn) => turn,
                // The adapter saw the interrupt before we did: still a cancellation.
                Err(err) if cancelled_by(&err, &cancellation) => {
                    return Ok((StreamOutcome::Cancelled { parts: Vec::new(), calls: Vec::new() }, Usage::default()));
                }
                Err(err) => return Err(err.into()),
            },
        };
        let mut folder = DeltaFolder::new();
        let mut calls = Vec::new();
        let mut usage = Usage::default();
        loop {
            let event = tokio::select! {
                biased;
                _ = &mut cancelled => {
                    return Ok((StreamOutcome::Cancelled { parts: folder.finish_partial(), calls }, usage));
                }
                event = turn.next_event(cancellation.clone()) => match event {
                    Ok(event) => event,
                    Err(err) if cancelled_by(&err, &cancellation) => {
                        return Ok((StreamOutcome::Cancelled { parts: folder.finish_partial(), calls }, usage));
                    }
                    Err(err) => return Err(err.into()),
                },
            };
            match event {
                Some(ModelTurnEvent::Delta(delta)) => {
                    folder
                        .apply(&delta)
                        .map_err(|err| protocol_error(format!("malformed delta stream: {err}")))?;
                    self.emit(AgentEvent::ContentDelta { delta });
                }
                Some(ModelTurnEvent::ToolCall(call)) => {
                    self.emit(AgentEvent::ToolCallRequested { call: call.clone() });
                    calls.push(call);
                }
                Some(ModelTurnEvent::Usage(reported)) => {
                    usage = reported.clone();
                    self.emit(AgentEvent::UsageUpdated { usage: reported });
                }
                Some(ModelTurnEvent::Warning(message)) => {
                    self.emit(AgentEvent::Warning { message })
                }
                Some(ModelTurnEvent::Finished(result)) => {
                    let parts = folder
                        .finish()
                        .map_err(|err| protocol_error(format!("malformed delta stream: {err}")))?;
                    return Ok((
                        StreamOutcome::Finished {
                            parts,
                            calls,
                            finish_reason: result.finish_reason,
                            metadata: result.metadata,
                        },
                        usage,
                    ));
                }
                None => {
                    return Err(protocol_error(
                        "the model stream ended without a finish event".into(),
                    )
                    .into());
                }
            }
        }
    }

    /// Opens a tool round: every call goes through the preflight now, so
    /// approvals can be surfaced before anything runs.
    fn open_round(&mut self, calls: Vec<ToolCallPart>) {
        let executor = self.config.shared().executor.clone();
        self.round = calls
            .into_iter()
            .map(|call| {
                let request = ToolRequest {
                    call_id: call.id.clone(),
                    tool_name: call.name.clone(),
                    input: call.input.clone(),
                    metadata: call.metadata.clone(),
                };
                let state = match executor.preflight(&request) {
                    Preflight::Ready => CallState::Queued,
                    Preflight::NeedsApproval(approval) => CallState::AwaitingApproval(approval),
                    Preflight::Rejected(err) => CallState::Rejected(err),
                };
                RoundCall { call, state }
            })
            .collect();
        self.phase = Phase::ToolRound;
    }

    /// Appends a merged soft-interrupt item and reports it.
    pub(super) fn inject_soft(
        &mut self,
        point: SoftInterruptPoint,
        item: Item,
        skipped_tools: usize,
    ) {
        self.append(item.clone(), false);
        self.emit(AgentEvent::SoftInterruptInjected {
            point,
            item,
            skipped_tools,
        });
        self.phase = Phase::ModelCallDue;
    }
}

/// `true` when the adapter reports a cancellation the turn really asked for.
fn cancelled_by(err: &ModelError, cancellation: &Option<TurnCancellation>) -> bool {
    err.kind == ModelErrorKind::Cancelled
        && cancellation
            .as_ref()
            .is_some_and(TurnCancellation::is_cancelled)
}

fn protocol_error(message: String) -> ModelError {
    ModelError::new(ModelErrorKind::Protocol, message)
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
    item.parts.extend(calls.into_iter().map(Part::ToolCall));
    item.metadata = metadata;
    Some(item)
}
