//! One model call: build the request, stream the answer, hand it to the core.
//!
//! The shell's half is I/O only: each stream event is fed into the core as
//! it arrives (the core folds the deltas and decides). Nothing is appended
//! to the transcript until the stream has finished, so a failed or dropped
//! call leaves the transcript as it was and the call due again: calling
//! `next()` again simply retries.

use super::LoopDriver;
use super::machine::{Action, AfterFailure, ModelCall, Validated, Verdict, tool_error_result};
use crate::error::panic_message;
use crate::{
    LoopError, ModelError, ModelErrorKind, ModelSession, ModelTurn, ModelTurnEvent, TurnRequest,
};
use agentkit_core::{MetadataMap, Part, ToolCallPart, TurnCancellation};
use agentkit_tools_core::{Preflight, ToolError};
use std::panic::AssertUnwindSafe;
use std::task::Poll;
use tracing::Instrument;

impl<S: ModelSession> LoopDriver<S> {
    /// Performs the core's `CallModel` action: every stream event is fed
    /// into the core as it arrives.
    pub(super) async fn model_call(&mut self, call: ModelCall) -> Result<(), LoopError> {
        // The configuration asked once for the call.
        let shared = self.config.shared();
        let (output_schema, record_content) = (shared.output_schema.clone(), shared.record_content);
        // The usual catalog is the one the last call had: asked without
        // fetching it.
        let last =
            (self.last_catalog.as_ref()).filter(|last| is_current(shared.executor.as_ref(), last));
        let tools = match last {
            Some(last) => last.shared_specs(),
            None => {
                let catalog = match catalog(shared.executor.as_ref()) {
                    Ok(catalog) => catalog,
                    Err(err) => {
                        self.core.on_model_failed(false, err.to_string());
                        return Err(err);
                    }
                };
                if let Some(previous) = &self.last_catalog
                    && !std::sync::Arc::ptr_eq(previous, &catalog)
                    && previous.generation != catalog.generation
                {
                    let change = catalog.diff_from(previous, "agent");
                    if !change.is_empty() {
                        self.core.on_catalog_changed(change);
                        self.dispatch();
                    }
                }
                let tools = catalog.shared_specs();
                self.last_catalog = Some(catalog);
                tools
            }
        };
        if cfg!(debug_assertions) {
            self.core
                .log
                .with(|items| agentkit_core::validate_items(items))?;
        }
        let span = tracing::info_span!(
            "chat",
            gen_ai.operation.name = "chat",
            gen_ai.conversation.id = %self.core.session_id,
            agentkit.turn_id = %call.turn_id,
            gen_ai.usage.input_tokens = tracing::field::Empty,
            gen_ai.usage.output_tokens = tracing::field::Empty,
            gen_ai.output.messages = tracing::field::Empty,
        );
        let cancellation = self.turn_cancellation();
        let streamed = if span.is_disabled() {
            self.stream(call, tools, output_schema, cancellation).await
        } else {
            self.stream(call, tools, output_schema, cancellation)
                .instrument(span.clone())
                .await
        };
        self.dispatch();
        let (input_tokens, output_tokens) = match streamed {
            Ok(Some(tokens)) => tokens,
            Ok(None) => return Ok(()),
            Err(err) => return self.model_failed(err),
        };
        span.record("gen_ai.usage.input_tokens", input_tokens);
        span.record("gen_ai.usage.output_tokens", output_tokens);
        if record_content {
            let text = self.core.log.with(|items| {
                items
                    .last()
                    .filter(|item| item.kind == agentkit_core::ItemKind::Assistant)
                    .map(|item| {
                        item.parts
                            .iter()
                            .filter_map(Part::as_text)
                            .collect::<String>()
                    })
            });
            if let Some(text) = text {
                span.record("gen_ai.output.messages", text.as_str());
            }
        }
        Ok(())
    }

    /// Tells the core the call failed; the error goes to the host unless
    /// the core retries at once (a context overflow it can compact).
    fn model_failed(&mut self, err: StreamError) -> Result<(), LoopError> {
        let err = match err {
            StreamError::Told(err) => return Err(err.into()),
            StreamError::Untold(err) => LoopError::from(err),
        };
        let overflow = matches!(&err, LoopError::Model(model) if model.kind == ModelErrorKind::ContextLengthExceeded);
        let after = self.core.on_model_failed(overflow, err.to_string());
        self.dispatch();
        match after {
            AfterFailure::CompactAndRetry => Ok(()),
            AfterFailure::Report | AfterFailure::Abandoned => Err(err),
        }
    }

    /// Streams one call into the core. `Ok(Some(tokens))`: the answer is
    /// complete (the usage tokens, for the span); `Ok(None)`: the turn was
    /// cancelled and the core told.
    ///
    /// The request is made where the session takes it, from the call's
    /// parts: a `TurnRequest` is 136 bytes, which the compiler copies with
    /// a `memcpy` call at each move.
    async fn stream(
        &mut self,
        call: ModelCall,
        available_tools: std::sync::Arc<[std::sync::Arc<agentkit_tools_core::ToolSpec>]>,
        output_schema: Option<std::sync::Arc<crate::OutputSchema>>,
        cancellation: Option<TurnCancellation>,
    ) -> Result<Option<(u64, u64)>, StreamError> {
        let cancelled = async {
            match &cancellation {
                Some(token) => token.cancelled().await,
                None => std::future::pending().await,
            }
        };
        tokio::pin!(cancelled);
        // Without a cancellation handle nothing can cancel the turn: its
        // events are awaited as they are, with no check per event.
        let cancellable = cancellation.is_some();
        // The call's turn id and cache request move into the request.
        let request = TurnRequest {
            session_id: self.core.session_id.clone(),
            turn_id: call.turn_id,
            transcript: self.core.log.view(),
            available_tools,
            metadata: MetadataMap::new(),
            cache: call.cache,
            output_schema,
        };
        let begun = if cancellable {
            unless_cancelled(cancelled.as_mut(), self.session.begin_turn(request)).await
        } else {
            Some(self.session.begin_turn(request).await)
        };
        let mut turn = match begun {
            Some(Ok(turn)) => turn,
            // The adapter saw the interrupt before we did: still a cancellation.
            Some(Err(err)) if !cancelled_by(&err, &cancellation) => {
                return Err(StreamError::Untold(err));
            }
            None | Some(Err(_)) => {
                self.core.on_cancelled();
                return Ok(None);
            }
        };
        let mut tokens = (0, 0);
        if !cancellable {
            // Every event that is ready is taken in one poll: no future
            // per event, no state saved between two ready events.
            return std::future::poll_fn(|cx| {
                loop {
                    let polled = std::task::ready!(turn.poll_next_event(cx));
                    let event = match polled {
                        Ok(event) => event,
                        Err(err) => return Poll::Ready(Err(StreamError::Untold(err))),
                    };
                    if let Some(done) = self.take_event(event, &mut tokens) {
                        return Poll::Ready(done);
                    }
                }
            })
            .await;
        }
        loop {
            // Cancelling the turn is dropping it (on return).
            let next = unless_cancelled(cancelled.as_mut(), turn.next_event()).await;
            let event = match next {
                Some(Ok(event)) => event,
                Some(Err(err)) if !cancelled_by(&err, &cancellation) => {
                    return Err(StreamError::Untold(err));
                }
                None | Some(Err(_)) => {
                    self.core.on_cancelled();
                    return Ok(None);
                }
            };
            if let Some(done) = self.take_event(event, &mut tokens) {
                return done;
            }
        }
    }

    /// Feeds one stream event into the core; `Some` with how the stream
    /// ended (as [`stream`](Self::stream) returns it) at its end. Inlined
    /// into the stream loop: called once per event.
    #[inline(always)]
    fn take_event(
        &mut self,
        event: Option<ModelTurnEvent>,
        tokens: &mut (u64, u64),
    ) -> Option<Result<Option<(u64, u64)>, StreamError>> {
        let told = |message| Some(Err(StreamError::Told(protocol_error(message))));
        match event {
            Some(ModelTurnEvent::Delta(delta)) => {
                if let Err(message) = self.core.on_model_delta(delta) {
                    return told(message);
                }
            }
            Some(ModelTurnEvent::ToolCall(call)) => self.core.on_model_tool_call(call),
            Some(ModelTurnEvent::Usage(usage)) => {
                *tokens = (usage.tokens.input_tokens, usage.tokens.output_tokens);
                self.core.on_model_usage(usage);
            }
            Some(ModelTurnEvent::Warning(message)) => self.core.on_model_warning(message),
            Some(ModelTurnEvent::Finished(result)) => {
                // A background task that finished while the model spoke
                // is delivered at the turn-complete point.
                self.collect_background();
                return match self
                    .core
                    .on_model_finished(result.finish_reason, result.metadata)
                {
                    Ok(()) => Some(Ok(Some(*tokens))),
                    Err(message) => told(message),
                };
            }
            None => {
                return Some(Err(StreamError::Untold(protocol_error(
                    "the model stream ended without a finish event".into(),
                ))));
            }
        }
        self.dispatch();
        None
    }

    /// Performs the core's `Preflight` action: the permission preflight of
    /// each call, fed back as a verdict. The last verdict answers with the
    /// core's next action.
    pub(super) fn preflight(&mut self, indices: std::ops::Range<usize>) -> Action {
        // Borrowed beside the core, not cloned.
        let executor = self.config.shared().executor;
        for index in indices {
            let Some(call) = self.core.round_call(index) else {
                continue;
            };
            let (verdict, validated) = preflight(executor.as_ref(), call);
            if let Some(next) = self.core.on_checked(index, verdict, validated) {
                return next;
            }
        }
        self.core.poll()
    }
}

/// `true` when `last` is still the executor's catalog; a panicking check
/// says no (the catalog is then fetched, and its panic reported).
#[inline]
fn is_current(
    executor: &dyn agentkit_tools_core::ToolExecutor,
    last: &std::sync::Arc<agentkit_tools_core::ResolvedCatalog>,
) -> bool {
    std::panic::catch_unwind(AssertUnwindSafe(|| executor.is_current(last))).unwrap_or(false)
}

/// The tool catalog; a panicking tool source or `spec` is caught.
fn catalog(
    executor: &dyn agentkit_tools_core::ToolExecutor,
) -> Result<std::sync::Arc<agentkit_tools_core::ResolvedCatalog>, LoopError> {
    match std::panic::catch_unwind(AssertUnwindSafe(|| executor.catalog())) {
        Ok(catalog) => Ok(catalog?),
        Err(panic) => Err(LoopError::Panicked {
            component: "tool catalog".into(),
            message: panic_message(&*panic),
        }),
    }
}

/// How a stream failed: `Told` when the core found the fault itself (a
/// malformed stream) and already made the call due again.
enum StreamError {
    Told(ModelError),
    Untold(ModelError),
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

/// The permission preflight of one call; a panic in the tool's
/// `proposed_requests` or in the permission checker becomes an error result.
fn preflight(
    executor: &dyn agentkit_tools_core::ToolExecutor,
    call: &ToolCallPart,
) -> (Verdict, Option<Validated>) {
    let request = super::machine::tool_request(call);
    let checked =
        std::panic::catch_unwind(AssertUnwindSafe(|| executor.preflight_validated(&request)));
    match checked {
        Ok((Preflight::Ready, validated)) => {
            (Verdict::Ready, validated.map(|spec| (request, spec)))
        }
        Ok((Preflight::NeedsApproval(request), _)) => (Verdict::NeedsApproval { request }, None),
        Ok((Preflight::Rejected(err), _)) => (
            Verdict::Rejected {
                result: tool_error_result(&call.id, &err),
            },
            None,
        ),
        Err(panic) => {
            let err = ToolError::Internal(format!(
                "the permission check panicked: {}",
                panic_message(&*panic)
            ));
            (
                Verdict::Rejected {
                    result: tool_error_result(&call.id, &err),
                },
                None,
            )
        }
    }
}
