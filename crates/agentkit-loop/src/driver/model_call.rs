//! One model call: build the request, stream the answer, hand it to the core.
//!
//! Nothing is appended to the transcript until the stream has finished, so
//! a failed or dropped call leaves the transcript as it was and the phase at
//! `ModelCallDue`: calling `next()` again simply retries.

use super::core::{AfterFailure, ModelAnswer, ModelCall, tool_error_result};
use super::state::CallState;
use super::{LoopDriver, notify};
use crate::error::panic_message;
use crate::{
    AgentEvent, LoopError, ModelError, ModelErrorKind, ModelSession, ModelTurn, ModelTurnEvent,
    TurnRequest,
};
use agentkit_core::{
    DeltaFolder, FinishReason, MetadataMap, Part, ToolCallPart, TurnCancellation, Usage,
};
use agentkit_tools_core::{Preflight, ToolError, ToolRequest};
use std::panic::AssertUnwindSafe;
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
    /// Performs the core's `CallModel` action.
    pub(super) async fn model_call(&mut self, call: ModelCall) -> Result<(), LoopError> {
        let catalog = match self.catalog() {
            Ok(catalog) => catalog,
            Err(err) => {
                self.core.on_model_failed(call.one_off_cache, None);
                return Err(err);
            }
        };
        if let Some(previous) = &self.last_catalog
            && previous.generation != catalog.generation
        {
            let change = catalog.diff_from(previous, "agent");
            if !change.is_empty() {
                self.core.emit(|| AgentEvent::ToolCatalogChanged { change });
                self.dispatch();
            }
        }
        self.last_catalog = Some(catalog.clone());
        if cfg!(debug_assertions) {
            self.core.log.with(agentkit_core::validate_transcript)?;
        }
        let shared = self.config.shared();
        let (output_schema, record_content) = (shared.output_schema.clone(), shared.record_content);
        let executor = shared.executor.clone();
        let session_id = self.core.session_id.clone();
        let request = TurnRequest {
            session_id: session_id.clone(),
            turn_id: call.turn_id.clone(),
            transcript: self.core.log.view(),
            available_tools: catalog.shared_specs(),
            metadata: MetadataMap::new(),
            cache: call.cache,
            output_schema,
        };
        let cancellation = self.core.turn.as_ref().and_then(|t| t.cancellation.clone());
        let span = tracing::info_span!(
            "chat",
            gen_ai.operation.name = "chat",
            gen_ai.conversation.id = %session_id,
            agentkit.turn_id = %call.turn_id,
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
                let kind = match &err {
                    LoopError::Model(model) => Some(model.kind),
                    _ => None,
                };
                // The retry should use the same one-off cache request.
                let after = self.core.on_model_failed(call.one_off_cache, kind);
                self.dispatch();
                return match after {
                    AfterFailure::CompactAndRetry => {
                        let message = format!("{err}; compacting and retrying once");
                        self.core.emit(|| AgentEvent::Warning { message });
                        self.dispatch();
                        Ok(())
                    }
                    AfterFailure::Report | AfterFailure::Abandoned => Err(err),
                };
            }
        };
        span.record("gen_ai.usage.input_tokens", usage.tokens.input_tokens);
        span.record("gen_ai.usage.output_tokens", usage.tokens.output_tokens);
        if record_content && let StreamOutcome::Finished { parts, .. } = &outcome {
            let text: String = parts.iter().filter_map(Part::as_text).collect();
            span.record("gen_ai.output.messages", text.as_str());
        }
        match outcome {
            StreamOutcome::Cancelled { parts, calls } => {
                self.core.on_model_cancelled(parts, calls, usage);
            }
            StreamOutcome::Finished {
                parts,
                calls,
                finish_reason,
                metadata,
            } => {
                // A background task that finished while the model spoke is
                // delivered at point B.
                self.collect_background();
                let mut preflight = |call: &ToolCallPart| preflight(executor.as_ref(), call);
                self.core.on_model_answer(
                    ModelAnswer {
                        parts,
                        calls,
                        finish_reason,
                        metadata,
                        usage,
                    },
                    &mut preflight,
                );
            }
        }
        self.dispatch();
        Ok(())
    }

    /// The tool catalog; a panicking tool source or `spec` is caught.
    fn catalog(&self) -> Result<std::sync::Arc<agentkit_tools_core::ResolvedCatalog>, LoopError> {
        let executor = self.config.shared().executor;
        match std::panic::catch_unwind(AssertUnwindSafe(|| executor.catalog())) {
            Ok(catalog) => Ok(catalog?),
            Err(panic) => Err(LoopError::Panicked {
                component: "tool catalog".into(),
                message: panic_message(&*panic),
            }),
        }
    }

    fn observe(&self, event: impl FnOnce() -> AgentEvent) {
        if self.core.settings.observe_events {
            notify(self.config.as_ref(), event());
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
        let begun = unless_cancelled(
            cancelled.as_mut(),
            self.session.begin_turn(request, cancellation.clone()),
        )
        .await;
        let mut turn = match begun {
            Some(Ok(turn)) => turn,
            // The adapter saw the interrupt before we did: still a cancellation.
            Some(Err(err)) if !cancelled_by(&err, &cancellation) => return Err(err.into()),
            None | Some(Err(_)) => {
                return Ok((
                    StreamOutcome::Cancelled {
                        parts: Vec::new(),
                        calls: Vec::new(),
                    },
                    Usage::default(),
                ));
            }
        };
        let mut folder = DeltaFolder::new();
        let mut calls = Vec::new();
        let mut usage = Usage::default();
        loop {
            let next = turn.next_event(cancellation.clone());
            let event = match unless_cancelled(cancelled.as_mut(), next).await {
                Some(Ok(event)) => event,
                Some(Err(err)) if !cancelled_by(&err, &cancellation) => return Err(err.into()),
                None | Some(Err(_)) => {
                    return Ok((
                        StreamOutcome::Cancelled {
                            parts: folder.finish_partial(),
                            calls,
                        },
                        usage,
                    ));
                }
            };
            match event {
                Some(ModelTurnEvent::Delta(delta)) => {
                    folder
                        .apply(&delta)
                        .map_err(|err| protocol_error(format!("malformed delta stream: {err}")))?;
                    self.observe(|| AgentEvent::ContentDelta { delta });
                }
                Some(ModelTurnEvent::ToolCall(call)) => {
                    self.observe(|| AgentEvent::ToolCallRequested { call: call.clone() });
                    calls.push(call);
                }
                Some(ModelTurnEvent::Usage(reported)) => {
                    self.observe(|| AgentEvent::UsageUpdated {
                        usage: reported.clone(),
                    });
                    usage = reported;
                }
                Some(ModelTurnEvent::Warning(message)) => {
                    self.observe(|| AgentEvent::Warning { message })
                }
                Some(ModelTurnEvent::Finished(result)) => {
                    let parts = folder
                        .finish_reserving(calls.len())
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
}

/// `next`'s output, or `None` if `cancelled` resolves first (it is polled
/// first, like a `biased` `select!`, which costs more per streamed event).
/// `cancelled` must not be polled again once it resolved.
async fn unless_cancelled<T>(
    mut cancelled: std::pin::Pin<&mut impl std::future::Future<Output = ()>>,
    next: impl std::future::Future<Output = T>,
) -> Option<T> {
    let mut next = std::pin::pin!(next);
    std::future::poll_fn(|cx| {
        if cancelled.as_mut().poll(cx).is_ready() {
            return std::task::Poll::Ready(None);
        }
        next.as_mut().poll(cx).map(Some)
    })
    .await
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

/// The request a tool receives for a call part.
pub(super) fn tool_request(call: &ToolCallPart) -> ToolRequest {
    ToolRequest {
        call_id: call.id.clone(),
        tool_name: call.name.clone(),
        input: call.input.clone(),
        metadata: call.metadata.clone(),
    }
}

/// The permission preflight of one call; a panic in the tool's
/// `proposed_requests` or in the permission checker becomes an error result.
fn preflight(executor: &dyn agentkit_tools_core::ToolExecutor, call: &ToolCallPart) -> CallState {
    let request = tool_request(call);
    let checked =
        std::panic::catch_unwind(AssertUnwindSafe(|| executor.preflight_validated(&request)));
    match checked {
        Ok((Preflight::Ready, validated)) => {
            CallState::Queued(validated.map(|spec| (request, spec)))
        }
        Ok((Preflight::NeedsApproval(approval), _)) => CallState::AwaitingApproval(approval),
        Ok((Preflight::Rejected(err), _)) => CallState::Rejected(tool_error_result(&call.id, &err)),
        Err(panic) => {
            let err = ToolError::Internal(format!(
                "the permission check panicked: {}",
                panic_message(&*panic)
            ));
            CallState::Rejected(tool_error_result(&call.id, &err))
        }
    }
}
