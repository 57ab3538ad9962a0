//! A model call: begun, streamed event by event, answered or failed.
//!
//! The shell feeds each stream event in as it arrives; the core folds the
//! deltas and reports them to observers. Nothing reaches the transcript
//! until the answer is complete, so a failed or dropped call leaves the
//! transcript as it was and makes the call due again.

use super::input::Input;
use super::state::{CallState, DueCall, Round, RoundCall, Step, Stream};
use super::{AfterFailure, DriverCore, ModelCall, log::turn_id};
use crate::{AgentEvent, LastCallUsage};
use agentkit_core::{Delta, FinishReason, Item, ItemKind, MetadataMap, Part, ToolCallPart, Usage};

impl DriverCore {
    /// Starts the due model call: the turn moves to `Streaming`.
    pub(super) fn begin_model_call(&mut self) -> ModelCall {
        let turn_id = turn_id(self.next_turn_index);
        self.next_turn_index += 1;
        let one_off_cache = self.next_turn_cache.take();
        let cache = one_off_cache
            .as_deref()
            .or(self.default_cache.as_deref())
            .cloned();
        if let Some(turn) = self.turn_mut() {
            turn.turn_id = turn_id.clone();
            turn.model_calls += 1;
            let due = match turn.step {
                Step::ModelCallDue(due) => due,
                _ => DueCall::default(),
            };
            let (folder, calls) = turn.spare_stream.take().unwrap_or_default();
            turn.call_usage = Usage::default();
            turn.step.set(Step::Streaming(Stream {
                folder,
                calls,
                due,
                one_off_cache,
            }));
        }
        if self.settings.observe_events {
            let event = AgentEvent::ModelCallStarted {
                session_id: self.session_id.clone(),
                turn_id: turn_id.clone(),
            };
            self.emit_some(Some(event));
        }
        ModelCall { turn_id, cache }
    }

    fn stream_mut(&mut self) -> Option<&mut Stream> {
        match self.turn_mut().map(|t| &mut t.step) {
            Some(Step::Streaming(stream)) => Some(stream),
            _ => None,
        }
    }

    /// The streamed call's last usage report, taken.
    fn take_call_usage(&mut self) -> Usage {
        self.turn_mut()
            .map(|turn| std::mem::take(&mut turn.call_usage))
            .unwrap_or_default()
    }

    /// Takes the stream out; the call is due again (as it was, without
    /// its mutation) unless the caller moves on.
    fn take_stream(&mut self) -> Option<Stream> {
        let turn = self.turn_mut()?;
        if !matches!(turn.step, Step::Streaming(_)) {
            return None;
        }
        match std::mem::replace(&mut turn.step, Step::ModelCallDue(DueCall::default())) {
            Step::Streaming(stream) => Some(stream),
            _ => None,
        }
    }

    /// The model streamed a delta. A malformed stream fails the call (the
    /// error is returned; the call is due again).
    pub(crate) fn on_model_delta(&mut self, delta: Delta) -> Result<(), String> {
        self.record(|| Input::ModelDelta {
            delta: delta.clone(),
        });
        let observe = self.settings.observe_events;
        let Some(stream) = self.stream_mut() else {
            return Ok(());
        };
        let (applied, delta) = if observe {
            (stream.folder.apply(&delta), Some(delta))
        } else {
            // Nobody reads the delta: its strings move into the folder.
            (stream.folder.apply_owned(delta), None)
        };
        if let Err(err) = applied {
            let message = format!("malformed delta stream: {err}");
            self.fail_stream();
            return Err(message);
        }
        if let Some(delta) = delta {
            self.emit(|| AgentEvent::ContentDelta { delta });
        }
        Ok(())
    }

    /// The model asked for a tool call.
    pub(crate) fn on_model_tool_call(&mut self, call: ToolCallPart) {
        self.record(|| Input::ModelToolCall { call: call.clone() });
        if self.settings.observe_events {
            let event = call.clone();
            self.emit(|| AgentEvent::ToolCallRequested { call: event });
        }
        if let Some(stream) = self.stream_mut() {
            stream.calls.push(call);
        }
    }

    /// The model reported usage; the last report of a call wins.
    pub(crate) fn on_model_usage(&mut self, usage: Usage) {
        self.record(|| Input::ModelUsage {
            usage: usage.clone(),
        });
        if self.settings.observe_events {
            let event = usage.clone();
            self.emit(|| AgentEvent::UsageUpdated { usage: event });
        }
        if let Some(turn) = self.turn_mut()
            && matches!(turn.step, Step::Streaming(_))
        {
            turn.call_usage = usage;
        }
    }

    /// The model's adapter reported something non-fatal.
    pub(crate) fn on_model_warning(&mut self, message: String) {
        self.record(|| Input::ModelWarning {
            message: message.clone(),
        });
        self.emit(|| AgentEvent::Warning { message });
    }

    /// The model's answer is complete: it is appended, and its calls open
    /// a round (the preflight comes next) or the turn reaches the turn-complete point.
    pub(crate) fn on_model_finished(
        &mut self,
        finish_reason: FinishReason,
        metadata: MetadataMap,
    ) -> Result<(), String> {
        self.record(|| Input::ModelFinished {
            finish_reason: finish_reason.clone(),
            metadata: metadata.clone(),
        });
        // The parts are taken in place: the stream is not moved out of the
        // step (112 bytes) to be taken apart.
        let Some(Step::Streaming(stream)) = self.turn_mut().map(|turn| &mut turn.step) else {
            return Ok(());
        };
        let parts = match stream.folder.take_parts(stream.calls.len()) {
            Ok(parts) => parts,
            Err(err) => {
                self.fail_stream();
                return Err(format!("malformed delta stream: {err}"));
            }
        };
        // What the stream owns is moved out: it is left owning nothing, so
        // the step it is in can be forgotten rather than dropped below.
        let folder = std::mem::take(&mut stream.folder);
        let calls = std::mem::take(&mut stream.calls);
        drop(stream.one_off_cache.take());
        let mut calls = self.unique_call_ids(calls);
        let usage = self.take_call_usage();
        let reported = usage.tokens.input_tokens + usage.tokens.output_tokens > 0;
        let has_calls = !calls.is_empty();
        // The ordinary ends are what the item says (`Item::finish_reason`):
        // only another reason is kept.
        let implied = if has_calls {
            FinishReason::ToolCall
        } else {
            FinishReason::Completed
        };
        let finish = (finish_reason != implied).then(|| finish_reason.clone());
        let Some(turn) = self.turn_mut() else {
            return Ok(());
        };
        turn.usage.accumulate(&usage);
        // The last round's vector, cleared, keeps its capacity.
        let mut round = std::mem::take(&mut turn.spare_round);
        round.extend(calls.iter().map(|call| RoundCall {
            call: call.clone(),
            state: CallState::Unchecked,
        }));
        let next = if has_calls {
            Step::ToolRound(Round {
                calls: round,
                ..Round::default()
            })
        } else {
            turn.spare_round = round;
            Step::TurnComplete {
                finish_reason,
                delivered: false,
            }
        };
        // The step is the emptied stream (its folder, calls and cache were
        // taken above): forgetting it is dropping it, without the call to
        // the drop glue of `Step`.
        debug_assert!(matches!(turn.step, Step::Streaming(_)));
        std::mem::forget(std::mem::replace(&mut turn.step, next));
        let item = assistant_item(parts, &mut calls, metadata, finish);
        if let Some(turn) = self.turn_mut() {
            // Empty while a call streams (taken when it began): handed back
            // without dropping an empty pair.
            turn.spare_stream.get_or_insert((folder, calls));
        }
        if let Some(item) = item {
            self.push_item(item, true);
        }
        self.last_call = reported.then(|| LastCallUsage {
            usage,
            transcript_len: self.log.len(),
        });
        if !has_calls {
            // The turn-complete point: a background task that finished is delivered; the
            // queue is asked next.
            let delivered = self.deliver_notifications();
            if let Some(Step::TurnComplete { delivered: d, .. }) =
                self.turn_mut().map(|t| &mut t.step)
            {
                *d = delivered;
            }
        }
        Ok(())
    }

    /// The model call failed; the call is due again with the same one-off
    /// cache request. A request too long for the context window is
    /// retried once, at once, after the mutators ran in forced mode; if it
    /// is still too long the turn is abandoned.
    pub(crate) fn on_model_failed(
        &mut self,
        context_overflow: bool,
        message: String,
    ) -> AfterFailure {
        self.record(|| Input::ModelFailed {
            context_overflow,
            message: message.clone(),
        });
        self.fail_stream();
        let retry = context_overflow && self.settings.has_mutators;
        if !retry {
            return AfterFailure::Report;
        }
        let Some(turn) = self.turn_mut() else {
            return AfterFailure::Report;
        };
        let Step::ModelCallDue(due) = &mut turn.step else {
            return AfterFailure::Report;
        };
        if !due.retried {
            *due = DueCall {
                mutated: false,
                forced: true,
                retried: true,
            };
            let message = format!("{message}; compacting and retrying once");
            self.emit(|| AgentEvent::Warning { message });
            return AfterFailure::CompactAndRetry;
        }
        let _ = self
            .abandon("the request exceeds the model's context window even after compaction".into());
        AfterFailure::Abandoned
    }

    /// The stream ended in failure: the call is due again.
    fn fail_stream(&mut self) {
        if let Some(stream) = self.take_stream() {
            let Stream {
                due, one_off_cache, ..
            } = stream;
            self.restore_due(due, one_off_cache);
        }
    }

    fn restore_due(&mut self, due: DueCall, one_off_cache: Option<Box<crate::PromptCacheRequest>>) {
        self.next_turn_cache = one_off_cache;
        if let Some(turn) = self.turn_mut() {
            turn.step = Step::ModelCallDue(DueCall {
                mutated: false,
                forced: false,
                retried: due.retried,
            });
        }
    }

    /// The shell dropped a stream without telling how it ended (its
    /// `next()` was dropped): the call is due again.
    pub(super) fn stream_lost(&mut self) {
        self.fail_stream();
    }

    /// The host cancelled the turn. A stream in progress ends at once,
    /// keeping what the model said so far; otherwise the turn ends at the
    /// next transition.
    pub(crate) fn on_cancelled(&mut self) {
        self.record(|| Input::Cancelled);
        let Some(turn) = self.turn_mut() else {
            return;
        };
        turn.cancelled = true;
        let Some(stream) = self.take_stream() else {
            return;
        };
        let Stream { folder, calls, .. } = stream;
        let calls = self.unique_call_ids(calls);
        let usage = self.take_call_usage();
        let partial = assistant_item(
            folder.finish_partial(),
            &mut calls.clone(),
            MetadataMap::new(),
            Some(FinishReason::Cancelled),
        );
        if let Some(turn) = self.turn_mut() {
            turn.usage.accumulate(&usage);
            turn.step = Step::ToolRound(Round {
                calls: calls
                    .into_iter()
                    .map(|call| RoundCall {
                        call,
                        state: CallState::Unchecked,
                    })
                    .collect(),
                ..Round::default()
            });
        }
        self.cancel_turn(partial);
    }
}

/// The assistant item for a model answer, or `None` if it said nothing.
/// The calls are moved out of `calls`, which keeps its room.
pub(super) fn assistant_item(
    parts: Vec<Part>,
    calls: &mut Vec<ToolCallPart>,
    metadata: MetadataMap,
    finish: Option<FinishReason>,
) -> Option<Item> {
    if parts.is_empty() && calls.is_empty() {
        return None;
    }
    let mut item = Item::new(ItemKind::Assistant, parts);
    // Exact: the item lives as long as the transcript, and growing an empty
    // vector by one call would keep room for four parts.
    item.parts.reserve_exact(calls.len());
    item.parts.extend(calls.drain(..).map(Part::ToolCall));
    item.metadata = metadata;
    if let Some(reason) = finish {
        item.set_finish_reason(reason);
    }
    Some(item)
}
