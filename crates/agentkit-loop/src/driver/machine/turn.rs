//! A user turn: begun on input, ended by the model, a cancellation, the
//! step limit or the host; and the safe points where queued messages and
//! background results enter it.

use super::input::{Input, QueuedMessages};
use super::state::{DueCall, Phase, Step, Turn, TurnItems};
use super::{ABANDONED, CANCELLED, DriverCore};
use crate::background::BackgroundTaskInfo;
use crate::{AgentEvent, InvalidStateReason, SoftInterruptPoint, TurnResult};
use agentkit_core::{FinishReason, Item, ItemKind, MetadataMap, ToolResultPart, Usage};

impl DriverCore {
    pub(super) fn begin_turn(&mut self) {
        self.user_turns += 1;
        self.phase = Phase::InTurn(Box::new(Turn {
            turn_id: super::turn_id(self.next_turn_index),
            items: TurnItems::default(),
            usage: Usage::default(),
            call_usage: Usage::default(),
            model_calls: 0,
            cancelled: false,
            number: self.user_turns,
            step: Step::ModelCallDue(DueCall::default()),
            spare_round: Vec::new(),
            spare_stream: None,
        }));
    }

    /// The soft-interrupt queue was asked (see `Action::TakeQueued`): the
    /// input implies the next poll, whose action is returned.
    pub(crate) fn on_queued(&mut self, messages: Option<QueuedMessages>) -> super::Action {
        self.take_queued(messages);
        self.decide()
    }

    /// Takes what the queue held.
    pub(super) fn take_queued(&mut self, messages: Option<QueuedMessages>) {
        self.record_quiet(|| Input::Queued {
            messages: messages.clone(),
        });
        if messages.is_some() || !matches!(self.phase, Phase::Idle { .. }) {
            self.touch();
        }
        let turn = match &mut self.phase {
            Phase::Idle { asked } => {
                match messages {
                    // Messages typed while idle are the next input.
                    Some(queued) => self.pending_input.push(queued.item),
                    None => *asked = true,
                }
                return;
            }
            Phase::TurnEnding { .. } => return,
            Phase::InTurn(turn) => turn,
        };
        match &mut turn.step {
            Step::TurnComplete {
                finish_reason,
                delivered,
            } => {
                // The turn-complete point: the model is done, but the user typed meanwhile,
                // or a background task finished: the turn goes on.
                let ends = messages.is_none() && !*delivered;
                let finish_reason = std::mem::replace(finish_reason, FinishReason::Completed);
                if ends {
                    self.end_turn(finish_reason, MetadataMap::new());
                    return;
                }
                turn.step = Step::ModelCallDue(DueCall::default());
                if let Some(queued) = messages {
                    self.inject(SoftInterruptPoint::TurnComplete, queued, 0);
                }
            }
            Step::AfterRound(after) => {
                let point = match after.skipped.take() {
                    Some(skipped) => Some((SoftInterruptPoint::BetweenTools, skipped)),
                    None if !after.drained => {
                        after.drained = true;
                        Some((SoftInterruptPoint::AfterTools, 0))
                    }
                    None => None,
                };
                if let (Some((point, skipped)), Some(queued)) = (point, messages) {
                    self.inject(point, queued, skipped);
                }
            }
            _ => {}
        }
    }

    fn inject(&mut self, point: SoftInterruptPoint, queued: QueuedMessages, skipped_tools: usize) {
        let QueuedMessages { item, messages } = queued;
        if self.settings.observe_events {
            self.append(item.clone(), false);
            self.emit(|| AgentEvent::SoftInterruptInjected {
                point,
                item,
                skipped_tools,
                messages,
            });
        } else {
            self.append(item, false);
        }
    }

    /// A background task finished; its result waits for a safe point.
    pub(crate) fn on_background_finished(
        &mut self,
        info: BackgroundTaskInfo,
        result: ToolResultPart,
    ) {
        self.record(|| Input::BackgroundFinished {
            info: info.clone(),
            result: result.clone(),
        });
        self.emit(|| AgentEvent::TaskFinished {
            task_id: info.task_id.clone(),
            call_id: info.call_id.clone(),
        });
        self.notifications.push((info, result));
    }

    /// Appends every waiting background result as a notification item.
    /// Called only at safe points (no call of a round is open).
    pub(super) fn deliver_notifications(&mut self) -> bool {
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
                .with_metadata(agentkit_core::keys::NOTIFICATION, "background_task")
                .with_metadata(agentkit_core::keys::TASK_ID, info.task_id.as_str())
                .with_metadata(agentkit_core::keys::CALL_ID, info.call_id.as_str())
                .with_metadata(agentkit_core::keys::IS_ERROR, part.is_error);
            self.append(item, true);
            self.emit(|| AgentEvent::ToolResultReceived { result: part });
        }
        true
    }

    pub(crate) fn submit_input(&mut self, items: Vec<Item>) -> Result<(), InvalidStateReason> {
        self.record(|| Input::Submit {
            items: items.clone(),
        });
        if self.round_open() {
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
        self.record(|| Input::Abandon {
            reason: reason.clone(),
        });
        self.abandon(reason)
    }

    pub(super) fn abandon(&mut self, reason: String) -> Result<TurnResult, InvalidStateReason> {
        match &self.phase {
            Phase::Idle { .. } => return Err(InvalidStateReason::NoTurnInProgress),
            Phase::TurnEnding { .. } => {}
            Phase::InTurn(_) => {
                self.answer_all(ABANDONED, "abandoned");
                let mut metadata = MetadataMap::new();
                metadata.insert(agentkit_core::keys::ABANDON_REASON.into(), reason.into());
                self.end_turn(FinishReason::Error, metadata);
            }
        }
        match std::mem::replace(&mut self.phase, Phase::IDLE) {
            Phase::TurnEnding { result, .. } => Ok(*self.deliver(result)),
            _ => Err(InvalidStateReason::NoTurnInProgress),
        }
    }

    pub(super) fn cancel_turn(&mut self, partial: Option<Item>) {
        if let Some(item) = partial {
            self.append(item, true);
        }
        self.answer_all(CANCELLED, "cancelled");
        let mut metadata = MetadataMap::new();
        metadata.insert(agentkit_core::keys::INTERRUPTED.into(), true.into());
        metadata.insert(
            agentkit_core::keys::INTERRUPT_REASON.into(),
            "user_cancelled".into(),
        );
        self.end_turn(FinishReason::Cancelled, metadata);
    }

    /// Ends the turn; the result is delivered after the `AfterTurnEnded`
    /// mutators.
    pub(super) fn end_turn(&mut self, finish_reason: FinishReason, metadata: MetadataMap) {
        let Phase::InTurn(turn) = std::mem::replace(&mut self.phase, Phase::IDLE) else {
            return;
        };
        // Dropped with the turn: the rounds of a turn reuse one vector, but
        // an idle session should not keep the last one's capacity.
        let Turn {
            turn_id,
            items,
            usage,
            ..
        } = *turn;
        let result = TurnResult {
            turn_id,
            finish_reason,
            items: self.log.with(|log| items.into_vec(log)),
            usage,
            metadata,
        };
        self.phase = Phase::TurnEnding {
            result: Box::new(result),
            mutated: false,
        };
    }

    /// Hands the ended turn's result out; the session goes idle.
    pub(super) fn deliver(&mut self, result: Box<TurnResult>) -> Box<TurnResult> {
        // The event carries a copy of every item of the turn: made only
        // for observers.
        if self.settings.observe_events {
            let event = (*result).clone();
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
            self.forget_call_ids();
        }
    }

    pub(super) fn merge_pending_input(&mut self) {
        if self.pending_input.is_empty() {
            return;
        }
        let items = std::mem::take(&mut self.pending_input);
        for item in &items {
            self.append(item.clone(), false);
        }
        self.emit(|| AgentEvent::InputAccepted { items });
    }
}
