//! Observation: events for UIs and logs, and the transcript feed for
//! persistence.
//!
//! Observers are called inline, in registration order, and cannot change
//! what the loop does. Keep them fast; put slow work behind a channel.
//! Every event leaves the driver's core through its one outbox, on the
//! driver's task, so observers see one order (the one a replay of the
//! session's inputs reproduces), even for what a tool reports from a task
//! of its own.

use crate::{CompactionReport, InjectedMessage, MutationPoint, SoftInterruptPoint, TurnResult};
use agentkit_core::{
    Delta, Item, SessionId, ToolCallId, ToolCallPart, ToolResultPart, TurnId, Usage,
};
use agentkit_tools_core::{ApprovalRequest, ToolCatalogEvent, ToolProgress};
use serde::{Deserialize, Serialize};

/// Something that happened in the loop.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "event", rename_all = "snake_case")]
#[non_exhaustive]
pub enum AgentEvent {
    /// `Agent::start` (or resume) finished.
    RunStarted {
        /// The session.
        session_id: SessionId,
    },
    /// A model call is about to start (one per model request; a user turn
    /// makes one or more, see `TurnFinished`).
    ModelCallStarted {
        /// The session.
        session_id: SessionId,
        /// The model call's turn id.
        turn_id: TurnId,
    },
    /// Pending input was merged into the transcript.
    InputAccepted {
        /// The items merged.
        items: Vec<Item>,
    },
    /// The model streamed a delta.
    ContentDelta {
        /// The delta.
        delta: Delta,
    },
    /// The model asked for a tool call.
    ToolCallRequested {
        /// The call.
        call: ToolCallPart,
    },
    /// A call really started executing (after its approval, when the task
    /// manager took it).
    ToolStarted {
        /// The call.
        call_id: ToolCallId,
        /// The tool's name.
        tool_name: String,
    },
    /// A running tool reported progress through
    /// [`ToolContext::report_progress`](agentkit_tools_core::ToolContext::report_progress).
    /// Delivered by the driver while it awaits the call (a background
    /// task's: at the driver's next step, see
    /// [`BackgroundTasks::undelivered`](crate::BackgroundTasks::undelivered)),
    /// always before the call's result.
    ToolProgress {
        /// The call.
        call_id: ToolCallId,
        /// The report.
        progress: ToolProgress,
    },
    /// A call started running in the background (at once, or when its
    /// round stopped waiting for it).
    TaskStarted {
        /// The task.
        task_id: String,
        /// The call it runs.
        call_id: ToolCallId,
        /// The tool.
        tool_name: String,
    },
    /// A background task finished; its result reaches the model at the next
    /// safe point (then `ToolResultReceived` fires). Delivered when the
    /// driver takes the finished task: at once while it awaits a round's
    /// calls, else at its next step (see
    /// [`BackgroundTasks::undelivered`](crate::BackgroundTasks::undelivered)).
    TaskFinished {
        /// The task.
        task_id: String,
        /// The call it ran.
        call_id: ToolCallId,
    },
    /// The host cancelled a background task.
    TaskCancelled {
        /// The task.
        task_id: String,
        /// The call it ran.
        call_id: ToolCallId,
    },
    /// Progress reports were dropped here: more than
    /// [`MAX_QUEUED_PROGRESS`](crate::MAX_QUEUED_PROGRESS) waited for the
    /// driver (a background task reporting while the host did not call
    /// `next()`). Only progress is ever dropped (a call's `ToolProgress`, a
    /// sub-agent's `ContentDelta` and `ToolProgress`); results, finishes,
    /// cancellations and every other event are always delivered.
    ProgressDropped {
        /// How many reports were dropped.
        count: u64,
    },
    /// A tool result landed in the transcript (real, denied, skipped or
    /// cancelled).
    ToolResultReceived {
        /// The result.
        result: ToolResultPart,
    },
    /// A call needs approval.
    ApprovalRequired {
        /// The request.
        request: ApprovalRequest,
    },
    /// An approval was resolved.
    ApprovalResolved {
        /// The call.
        call_id: ToolCallId,
        /// `true` if approved.
        approved: bool,
    },
    /// A running call asked the host a question (see
    /// [`LoopInterrupt::Question`](crate::LoopInterrupt::Question)).
    QuestionAsked {
        /// The call.
        call_id: ToolCallId,
        /// The question.
        question: agentkit_tools_core::HostQuestion,
    },
    /// The host answered a call's question (the turn's cancellation
    /// answers it with `Cancel` without this event).
    QuestionAnswered {
        /// The call.
        call_id: ToolCallId,
        /// The answer, checked.
        answer: agentkit_tools_core::HostAnswer,
    },
    /// The tool catalog changed since the last model call.
    ToolCatalogChanged {
        /// What changed.
        change: ToolCatalogEvent,
    },
    /// A mutator is about to run.
    MutationStarted {
        /// Where.
        point: MutationPoint,
        /// The mutator's name.
        mutator: String,
    },
    /// A mutator finished.
    MutationFinished {
        /// Where.
        point: MutationPoint,
        /// The mutator's name.
        mutator: String,
        /// `true` if it rewrote the transcript.
        dirty: bool,
    },
    /// A compactor shrank the transcript.
    CompactionApplied {
        /// Where.
        point: MutationPoint,
        /// The mutator's name.
        mutator: String,
        /// Items before.
        items_before: usize,
        /// Items after.
        items_after: usize,
        /// What the compactor reported (strategy, tokens before and after).
        report: CompactionReport,
    },
    /// Token usage was reported.
    UsageUpdated {
        /// The usage of the current model call.
        usage: Usage,
    },
    /// Queued soft-interrupt messages were injected.
    SoftInterruptInjected {
        /// Where they were injected.
        point: SoftInterruptPoint,
        /// The merged user item.
        item: Item,
        /// How many tool calls were skipped for an urgent message.
        skipped_tools: usize,
        /// The messages merged into the item, with their delivery modes.
        #[serde(default)]
        messages: Vec<InjectedMessage>,
    },
    /// A non-fatal problem (a tool failed, a provider request was retried).
    Warning {
        /// What happened.
        message: String,
    },
    /// `next()` failed with an error.
    RunFailed {
        /// The error.
        message: String,
    },
    /// A turn finished.
    TurnFinished {
        /// The result.
        result: TurnResult,
    },
    /// An event of a sub-agent: an agent this loop runs as a tool
    /// (`agentkit-subagent`). Events of deeper sub-agents arrive flattened:
    /// `inner` is never itself a `SubAgent` event, `depth` says how deep.
    SubAgent {
        /// The sub-agent's name (its tool name).
        agent: String,
        /// 1 for a sub-agent of this loop's agent, 2 for one of its
        /// sub-agents, and so on.
        depth: u32,
        /// The call (in the sub-agent's own parent) the sub-agent runs for.
        call_id: ToolCallId,
        /// What happened in the sub-agent.
        inner: Box<AgentEvent>,
    },
}

/// Receives [`AgentEvent`]s.
pub trait LoopObserver: Send + Sync {
    /// Called inline for every event.
    fn handle_event(&self, event: AgentEvent);
}

/// Receives every item appended to the transcript, once, in order.
pub trait TranscriptObserver: Send + Sync {
    /// Called after `item` was appended at `index`.
    fn on_item_appended(&self, index: usize, item: &Item);

    /// Called after a mutator (compaction, redaction) rewrote history:
    /// `items` is the whole new transcript (later indices of
    /// `on_item_appended` count in it) and `archived` the original items it
    /// no longer holds, so a store can keep them as archived rather than
    /// lose them. The default does nothing.
    fn on_transcript_rewritten(&self, items: &[Item], archived: &[Item]) {
        let _ = (items, archived);
    }
}
