//! Snapshots out, snapshots back in.
//!
//! The core's part of the snapshot is derived from its phase (see
//! `machine::restore`); the shell adds what it owns: the queued messages and
//! the background tasks.

use super::machine::{DriverCore, background_result, restore::round_calls};
use super::{DriverParts, LoopDriver};
use crate::snapshot::{
    SNAPSHOT_VERSION, SnapshotBackgroundTask, SnapshotCallState, SnapshotPhase, arguments_hash,
};
use crate::{LoopError, LoopSnapshot, ModelSession, SoftInterruptHandle};
use agentkit_core::{ToolResultPart, open_tool_calls};
use agentkit_tools_core::ToolExecutor;

impl<S: ModelSession> LoopDriver<S> {
    /// A serializable picture of the session, enough to resume it with
    /// [`Agent::resume`](crate::Agent::resume) in another process.
    pub fn snapshot(&self) -> LoopSnapshot {
        let mut snapshot = self.snapshot_without_transcript();
        snapshot.transcript = self.core.log.to_vec();
        snapshot
    }

    /// [`LoopDriver::snapshot`] with an empty transcript, for hosts that
    /// keep the items themselves (a session store appends them as they
    /// happen): it costs the same at any transcript length. Put the items
    /// back (from [`LoopDriver::transcript`]) before resuming from it.
    pub fn snapshot_without_transcript(&self) -> LoopSnapshot {
        let mut snapshot = self.core.snapshot();
        if let Some(soft) = self.soft.get() {
            snapshot.soft_interrupts = soft.pending();
            snapshot.soft_queue_id = Some(soft.queue_id());
        }
        snapshot.background = self.background_snapshot();
        snapshot
    }

    fn background_snapshot(&self) -> Vec<SnapshotBackgroundTask> {
        let tasks = self.background_if_any();
        let running = tasks
            .map(crate::BackgroundTasks::list)
            .unwrap_or_default()
            .into_iter()
            .map(|task| SnapshotBackgroundTask { task, result: None });
        let finished = tasks
            .map(crate::BackgroundTasks::peek_finished)
            .unwrap_or_default()
            .into_iter()
            .map(|(task, outcome)| SnapshotBackgroundTask {
                result: Some(background_result(&task, outcome)),
                task,
            });
        let waiting = self
            .core
            .notifications
            .iter()
            .map(|(task, part)| SnapshotBackgroundTask {
                task: task.clone(),
                result: Some(part.clone()),
            });
        waiting.chain(finished).chain(running).collect()
    }

    /// A driver continuing `snapshot`, which [`check_snapshot`] accepted.
    pub(crate) fn from_snapshot(parts: DriverParts<S>, mut snapshot: LoopSnapshot) -> Self {
        let settings = Self::settings(parts.config.as_ref(), parts.max_model_calls);
        // A handle the host still holds on the old queue keeps working.
        let saved = std::mem::take(&mut snapshot.soft_interrupts);
        let soft = snapshot
            .soft_queue_id
            .and_then(SoftInterruptHandle::adopt)
            .or_else(|| (!saved.is_empty()).then(SoftInterruptHandle::default));
        if let Some(soft) = &soft {
            soft.restore(saved);
        }
        let background = std::mem::take(&mut snapshot.background);
        let mut core = DriverCore::from_snapshot(snapshot, settings, parts.default_cache);
        // Tasks that were running live in another process (or none): they
        // are reported as lost, never silently forgotten.
        core.notifications = background
            .into_iter()
            .map(|saved| {
                let part = saved.result.unwrap_or_else(|| {
                    ToolResultPart::error(
                        saved.task.call_id.clone(),
                        "the background task was lost: the session was resumed in a process that does not run it",
                    )
                    .with_metadata(agentkit_core::keys::ERROR_KIND, "lost")
                    .with_metadata(agentkit_core::keys::BACKGROUND_TASK, saved.task.task_id.as_str())
                });
                (saved.task, part)
            })
            .collect();
        Self::from_core(core, parts.session, parts.config, soft, parts.cancellation)
    }
}

/// Refuses snapshots this build or this agent cannot continue.
pub(crate) fn check_snapshot(
    snapshot: &LoopSnapshot,
    executor: &dyn ToolExecutor,
) -> Result<(), LoopError> {
    if !(1..=SNAPSHOT_VERSION).contains(&snapshot.version) {
        return Err(LoopError::Snapshot(format!(
            "snapshot version {} is not supported (this build reads versions 1 to {SNAPSHOT_VERSION})",
            snapshot.version
        )));
    }
    let refuse = |message: String| Err(LoopError::Snapshot(message));
    let calls = round_calls(snapshot);
    let catalog = executor.catalog()?;
    for saved in &snapshot.round {
        let Some(call) = calls.get(&saved.call_id) else {
            return refuse(format!(
                "tool call {} of the open round is not in the transcript",
                saved.call_id
            ));
        };
        if *call.name != *saved.tool_name
            || arguments_hash(&call.input.to_value()) != saved.arguments_hash
        {
            return refuse(format!(
                "tool call {} no longer matches its recorded name and arguments",
                saved.call_id
            ));
        }
        let will_run = matches!(
            saved.state,
            SnapshotCallState::Unchecked
                | SnapshotCallState::Queued
                | SnapshotCallState::Suspended { .. }
                | SnapshotCallState::Resumed { .. }
                | SnapshotCallState::AwaitingApproval { .. }
                | SnapshotCallState::Approved { .. }
        );
        if will_run && catalog.get(&saved.tool_name).is_none() {
            return refuse(format!(
                "tool {} needed by pending call {} is no longer available",
                saved.tool_name, saved.call_id
            ));
        }
    }
    let open = open_tool_calls(&snapshot.transcript);
    if let Some(orphan) = open
        .iter()
        .find(|id| !snapshot.round.iter().any(|c| &c.call_id == *id))
    {
        return refuse(format!(
            "tool call {orphan} has no result and is not part of the saved round"
        ));
    }
    if snapshot.phase == SnapshotPhase::TurnEnding && snapshot.ended_turn.is_none() {
        return refuse("the snapshot says a turn ended but holds no result".into());
    }
    if open.is_empty() && snapshot.phase == SnapshotPhase::ToolRound {
        return refuse("the snapshot says a tool round is open but every call is answered".into());
    }
    Ok(())
}
