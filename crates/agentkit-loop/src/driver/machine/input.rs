//! Everything the core is told, as one serializable type.
//!
//! The core is a deterministic function of its inputs: each `on_*` method
//! of [`DriverCore`](super::DriverCore) is one [`Input`] variant, and a
//! recording core writes every input it takes (and every `poll`) to its
//! log. Feeding the same log to a fresh core reproduces the session's
//! transcript and events exactly, with no model, tools or clock: that is
//! replay (see the `replay` module).

use crate::{CompactionReport, InjectedMessage, MutationPoint, PromptCacheRequest};
use agentkit_core::{
    Delta, FinishReason, Item, MetadataMap, ToolCallId, ToolCallPart, ToolResultPart, Usage,
};
use agentkit_tools_core::{
    ApprovalDecision, ApprovalRequest, HostAnswer, HostQuestion, ResolvedTool, ToolCatalogEvent,
    ToolError, ToolProgress, ToolRequest, ToolResult,
};
use serde::{Deserialize, Serialize};

/// One input to the driver's core, as recorded in an input log.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "input", rename_all = "snake_case")]
#[non_exhaustive]
pub enum Input {
    /// The shell asked the core what to do next.
    Poll,
    /// The host submitted input.
    Submit {
        /// The items.
        items: Vec<Item>,
    },
    /// The host answered an approval.
    Approval {
        /// The call.
        call_id: ToolCallId,
        /// The answer.
        decision: ApprovalDecision,
    },
    /// The host set the cache request of the next model call.
    NextCallCache {
        /// The request.
        cache: PromptCacheRequest,
    },
    /// The host gave up on the turn in progress.
    Abandon {
        /// Why.
        reason: String,
    },
    /// The soft-interrupt queue, asked at a safe point, held these
    /// messages (merged into one item), or none.
    Queued {
        /// The merged messages, if any were deliverable.
        messages: Option<QueuedMessages>,
    },
    /// An urgent message is queued while a round has calls to answer.
    UrgentQueued,
    /// The host cancelled the turn in progress.
    Cancelled,
    /// The model streamed a delta.
    ModelDelta {
        /// The delta.
        delta: Delta,
    },
    /// The model asked for a tool call.
    ModelToolCall {
        /// The call.
        call: ToolCallPart,
    },
    /// The model reported usage.
    ModelUsage {
        /// The usage so far.
        usage: Usage,
    },
    /// The model's adapter reported something non-fatal.
    ModelWarning {
        /// What.
        message: String,
    },
    /// The model's answer is complete.
    ModelFinished {
        /// Why it ended.
        finish_reason: FinishReason,
        /// The provider's metadata for the assistant item.
        metadata: MetadataMap,
    },
    /// The model call failed.
    ModelFailed {
        /// The request was too long for the context window.
        context_overflow: bool,
        /// The error, as the host reads it.
        message: String,
    },
    /// The permission preflight of a call of the round.
    Checked {
        /// The call's index in the round.
        index: usize,
        /// The verdict.
        verdict: Verdict,
        /// The request the preflight checked and the spec it validated the
        /// input against, so running it does not validate it again (not
        /// recorded: a replayed core runs nothing).
        #[serde(skip)]
        validated: Option<Validated>,
    },
    /// A call of the round finished.
    ToolDone {
        /// Its index in the round.
        index: usize,
        /// Its id.
        call_id: ToolCallId,
        /// How it ended.
        outcome: ToolOutcome,
    },
    /// A running call asked the host a question.
    ToolQuestion {
        /// The call.
        call_id: ToolCallId,
        /// The question.
        question: HostQuestion,
    },
    /// The host answered a call's question.
    QuestionAnswered {
        /// The call.
        call_id: ToolCallId,
        /// The answer, as the host gave it (checked by the core).
        answer: HostAnswer,
    },
    /// Running calls reported model usage they spent (a sub-agent's).
    ToolUsage {
        /// The usage.
        usage: Usage,
    },
    /// The futures of running calls were lost.
    CallsLost,
    /// The shell started a call of the round in the background, or with a
    /// detach-after timer.
    Routed {
        /// The call's index in the round.
        index: usize,
        /// How it runs.
        routed: super::Routed,
    },
    /// The shell's clock read `now` (a duration since its origin): timers
    /// due by then fire.
    Timeout {
        /// The time.
        now: std::time::Duration,
    },
    /// The shell tried to detach the task of a call whose timer fired.
    Detached {
        /// The call's index in the round.
        index: usize,
        /// `false` when the call had finished already.
        detached: bool,
    },
    /// A background task finished.
    BackgroundFinished {
        /// The task.
        info: crate::BackgroundTaskInfo,
        /// Its result, answering its call.
        result: ToolResultPart,
    },
    /// The tool catalog changed since the last model call.
    CatalogChanged {
        /// What changed.
        change: ToolCatalogEvent,
    },
    /// A mutator is about to run.
    MutatorStarted {
        /// Where.
        point: MutationPoint,
        /// Its name.
        mutator: String,
    },
    /// A mutator ran.
    MutatorFinished {
        /// Where.
        point: MutationPoint,
        /// Its name.
        mutator: String,
        /// Its rewrite of the transcript (already validated), if any.
        rewrite: Option<RecordedRewrite>,
    },
    /// Every mutator of the owed point ran.
    MutatorsDone,
    /// `next()` failed with this error.
    Failed {
        /// The error, as the host reads it.
        message: String,
    },
    /// The session started or was resumed (observers hear `RunStarted`).
    RunStarted,
    /// A running call reported progress.
    ToolProgress {
        /// The call.
        call_id: ToolCallId,
        /// The report.
        progress: ToolProgress,
    },
    /// A running call forwarded an event of an agent loop it runs itself
    /// (a sub-agent's, tagged).
    NestedEvent {
        /// The event, passed on as it is.
        event: crate::AgentEvent,
    },
    /// The host cancelled a background task.
    TaskCancelled {
        /// The task.
        task_id: String,
        /// The call it runs.
        call_id: ToolCallId,
    },
    /// The inbox dropped `count` progress reports at this point (its
    /// bound, [`MAX_QUEUED_PROGRESS`](crate::MAX_QUEUED_PROGRESS)).
    ProgressDropped {
        /// How many.
        count: u64,
    },
}

/// Queued soft-interrupt messages merged into one user item.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct QueuedMessages {
    /// The merged item.
    pub item: Item,
    /// The messages it merges.
    pub messages: Vec<InjectedMessage>,
}

/// A mutator's rewrite as the core took it.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct RecordedRewrite {
    /// The new transcript.
    pub items: Vec<Item>,
    /// The transcript length before the rewrite.
    pub items_before: usize,
    /// The compaction report, if the mutator compacted.
    pub compaction: Option<CompactionReport>,
}

/// The permission preflight's verdict on one call.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "verdict", rename_all = "snake_case")]
#[non_exhaustive]
pub enum Verdict {
    /// The call may run.
    Ready,
    /// The host must approve it first.
    NeedsApproval {
        /// The request shown to the host.
        request: ApprovalRequest,
    },
    /// Refused; the model reads this error result.
    Rejected {
        /// The result.
        result: ToolResultPart,
    },
}

/// A checked request and the tool the preflight found for it, with the
/// spec its input was validated against.
pub type Validated = (ToolRequest, ResolvedTool);

/// How a call ended, as the core takes it.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "outcome", rename_all = "snake_case")]
#[non_exhaustive]
pub enum ToolOutcome {
    /// It returned a result (maybe flagged as an error).
    Finished {
        /// The result answering the call.
        result: ToolResultPart,
    },
    /// It failed; the model reads the error result, observers get the
    /// warning.
    Failed {
        /// The error result answering the call.
        result: ToolResultPart,
        /// The warning.
        warning: String,
    },
    /// It paused mid-run for the host's approval.
    Paused {
        /// The approval it waits for.
        request: ApprovalRequest,
    },
}

impl ToolOutcome {
    /// The outcome of a call that returned `outcome`.
    pub fn of(call_id: &ToolCallId, outcome: Result<ToolResult, ToolError>) -> Self {
        match outcome {
            Err(ToolError::NeedsApproval(request)) => {
                let mut request = *request;
                request.call_id = Some(call_id.clone());
                ToolOutcome::Paused { request }
            }
            Err(err) => ToolOutcome::Failed {
                warning: format!("tool call {call_id} failed: {err}"),
                result: super::tool_error_result(call_id, &err),
            },
            Ok(result) => ToolOutcome::Finished {
                result: super::result_part(call_id, Ok(result)),
            },
        }
    }
}
