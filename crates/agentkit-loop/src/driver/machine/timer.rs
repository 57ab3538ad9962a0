//! Time in the core: where a call runs and when a detach-after call stops
//! being waited for.
//!
//! The core reads no clock. Time is data: a [`Duration`] since an origin the
//! shell picks (the shell's clock, or a test's simulated one), handed in
//! with the inputs that need it. A detach-after call gets its deadline when
//! the shell reports how it started it ([`Routed`]); the core says when it
//! next needs to be woken ([`DriverCore::poll_timeout`], like quinn-proto's
//! `poll_timeout`), the shell sleeps until then and reports the time
//! ([`DriverCore::on_timeout`]); the core then asks the shell to detach the
//! task ([`Action::Detach`]) and answers the call with a result naming it,
//! unless the call won the race and finished first. Every one of these is
//! an input of the log, so replay and fork reproduce a detach exactly.

use super::input::Input;
use super::state::{CallState, Step};
use super::{Action, DriverCore};
use crate::AgentEvent;
use agentkit_core::{ToolCallId, ToolResultPart};
use serde::{Deserialize, Serialize};
use std::time::Duration;

/// How the shell ran a call the core started, when not in the foreground
/// (a foreground call is reported by nothing but its outcome).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "routed", rename_all = "snake_case")]
#[non_exhaustive]
pub enum Routed {
    /// It runs as this background task: the call is answered at once with
    /// a result naming it, and its outcome comes as a notification later.
    Background {
        /// The task's id.
        task_id: String,
    },
    /// The round waits for it until `now + wait`, then it becomes this
    /// background task.
    DetachAfter {
        /// The task's id.
        task_id: String,
        /// How long the round waits.
        wait: Duration,
        /// When the call started, on the shell's clock.
        now: Duration,
    },
}

/// The timer of a running detach-after call.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct DetachTimer {
    pub(crate) task_id: String,
    pub(crate) wait: Duration,
    /// The deadline, on the shell's clock.
    pub(crate) at: Duration,
    /// The deadline passed: the shell is asked to detach the task.
    pub(crate) fired: bool,
}

impl DriverCore {
    /// The shell started call `index` as `routed`.
    pub(crate) fn on_routed(&mut self, index: usize, routed: Routed) {
        self.record(|| Input::Routed {
            index,
            routed: routed.clone(),
        });
        let observe = self.settings.observe_events;
        let Some(entry) = self.round_call_mut(index) else {
            return;
        };
        if !matches!(entry.state, CallState::Running(None)) {
            return;
        }
        let started = match &routed {
            Routed::Background { task_id } if observe => {
                Some(task_started(task_id, &entry.call.id, &entry.call.name))
            }
            _ => None,
        };
        entry.state = match routed {
            Routed::Background { task_id } => {
                CallState::Finished(started_part(&entry.call.id, &task_id, None))
            }
            Routed::DetachAfter { task_id, wait, now } => {
                CallState::Running(Some(Box::new(DetachTimer {
                    task_id,
                    wait,
                    at: now.saturating_add(wait),
                    fired: false,
                })))
            }
        };
        self.emit_some(started);
    }

    /// When the core next needs [`on_timeout`](Self::on_timeout): the
    /// earliest deadline of a running detach-after call, on the shell's
    /// clock. `None` when no timer runs.
    pub(crate) fn poll_timeout(&self) -> Option<Duration> {
        self.round_calls()
            .iter()
            .filter_map(|c| match &c.state {
                CallState::Running(Some(timer)) if !timer.fired => Some(timer.at),
                _ => None,
            })
            .min()
    }

    /// The shell's clock reads `now`: every timer whose deadline passed
    /// fires (the next polls ask the shell to detach those tasks).
    pub(crate) fn on_timeout(&mut self, now: Duration) {
        self.record(|| Input::Timeout { now });
        let Some(Step::ToolRound(round)) = self.turn_mut().map(|t| &mut t.step) else {
            return;
        };
        for entry in &mut round.calls {
            if let CallState::Running(Some(timer)) = &mut entry.state
                && timer.at <= now
            {
                timer.fired = true;
            }
        }
    }

    /// The shell tried to detach the task of call `index`: `detached`, or
    /// it had finished already (its outcome is on its way as a
    /// [`ToolDone`](Input::ToolDone)). The input implies the next poll,
    /// whose action is returned.
    pub(crate) fn on_detached(&mut self, index: usize, detached: bool) -> Action {
        self.detach(index, detached);
        self.decide()
    }

    /// Takes the outcome of a detach.
    pub(super) fn detach(&mut self, index: usize, detached: bool) {
        self.record(|| Input::Detached { index, detached });
        let observe = self.settings.observe_events;
        let Some(entry) = self.round_call_mut(index) else {
            return;
        };
        let CallState::Running(Some(timer)) = &entry.state else {
            return;
        };
        if !timer.fired {
            return;
        }
        let started = (detached && observe)
            .then(|| task_started(&timer.task_id, &entry.call.id, &entry.call.name));
        entry.state = if detached {
            CallState::Finished(started_part(
                &entry.call.id,
                &timer.task_id,
                Some(timer.wait),
            ))
        } else {
            CallState::Running(None)
        };
        self.emit_some(started);
    }

    /// A call of the open round whose timer fired, as the action asking
    /// the shell to detach its task.
    pub(super) fn detach_due(&self) -> Option<Action> {
        self.round_calls()
            .iter()
            .enumerate()
            .find_map(|(index, c)| match &c.state {
                CallState::Running(Some(timer)) if timer.fired => Some(Action::Detach {
                    index,
                    task_id: timer.task_id.clone(),
                }),
                _ => None,
            })
    }
}

/// The event of a call that went on as a background task.
fn task_started(task_id: &str, call_id: &ToolCallId, tool_name: &str) -> AgentEvent {
    AgentEvent::TaskStarted {
        task_id: task_id.to_owned(),
        call_id: call_id.clone(),
        tool_name: tool_name.to_owned(),
    }
}

/// What the model reads for a call that went to the background, at once
/// (`after` is `None`) or after its round waited that long.
pub(crate) fn started_part(
    call_id: &ToolCallId,
    task_id: &str,
    after: Option<Duration>,
) -> ToolResultPart {
    let text = match after {
        None => format!(
            "The call runs in the background as task {task_id}. Its result will be delivered as a notification when it finishes; do not call it again."
        ),
        Some(wait) => format!(
            "The call did not finish within {:.1} s and now runs in the background as task {task_id}. Its result will be delivered as a notification when it finishes; do not call it again.",
            wait.as_secs_f64()
        ),
    };
    ToolResultPart::success(call_id.clone(), text)
        .with_metadata(agentkit_core::keys::BACKGROUND_TASK, task_id)
}
