//! Events that happen outside the core's own transitions: the session
//! started, a running call reported progress, a tool forwarded an event of
//! an agent loop it runs (a sub-agent's), the host cancelled a background
//! task.
//!
//! They change nothing a snapshot shows, but they are inputs like any
//! other: the shell hands them in (a call's progress while it awaits the
//! round's calls, the rest at its next step), they leave through the one
//! outbox in the order they were taken, and a recording keeps them, so a
//! replay reproduces the whole event sequence. The core's own events about
//! background tasks (`TaskStarted`, `TaskFinished`) come from the inputs
//! that already carry them (`Routed`, `Detached`, `BackgroundFinished`).

use super::DriverCore;
use super::input::Input;
use crate::AgentEvent;
use agentkit_core::ToolCallId;
use agentkit_tools_core::ToolProgress;

impl DriverCore {
    /// The session started (or was resumed): observers hear `RunStarted`.
    pub(crate) fn on_run_started(&mut self) {
        self.record_quiet(|| Input::RunStarted);
        if self.settings.observe_events {
            let session_id = self.session_id.clone();
            self.emit(|| AgentEvent::RunStarted { session_id });
        }
    }

    /// A running call reported progress.
    pub(crate) fn on_tool_progress(&mut self, call_id: ToolCallId, progress: ToolProgress) {
        self.record_quiet(|| Input::ToolProgress {
            call_id: call_id.clone(),
            progress: progress.clone(),
        });
        self.emit(|| AgentEvent::ToolProgress { call_id, progress });
    }

    /// A running call forwarded an event of an agent loop it runs itself
    /// (a sub-agent's, already tagged as [`AgentEvent::SubAgent`]).
    pub(crate) fn on_nested_event(&mut self, event: AgentEvent) {
        self.record_quiet(|| Input::NestedEvent {
            event: event.clone(),
        });
        self.emit(|| event);
    }

    /// The inbox dropped progress reports (its bound).
    pub(crate) fn on_progress_dropped(&mut self, count: u64) {
        self.record_quiet(|| Input::ProgressDropped { count });
        self.emit(|| AgentEvent::ProgressDropped { count });
    }

    /// The host cancelled a background task.
    pub(crate) fn on_task_cancelled(&mut self, task_id: String, call_id: ToolCallId) {
        self.record_quiet(|| Input::TaskCancelled {
            task_id: task_id.clone(),
            call_id: call_id.clone(),
        });
        self.emit(|| AgentEvent::TaskCancelled { task_id, call_id });
    }
}
