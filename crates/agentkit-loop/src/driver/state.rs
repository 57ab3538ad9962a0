//! The driver's state, as plain data.
//!
//! Everything the loop must remember between two `.await`s lives here: the
//! phase, the turn in progress, every call of the open round with its
//! outcome, the mutation that is owed. A dropped `next()` future, a
//! cancellation or an urgent message can therefore never lose a result: it
//! is either in the transcript or in a [`CallState`].
//!
//! ```text
//!              input                       answer, no calls
//!   Idle ─────────────▶ ModelCallDue ───────────────────────▶ TurnEnding ──▶ Idle
//!    ▲                   ▲      │ calls                          ▲  (Finished)
//!    │                   │      ▼                                │
//!    │                   │   ToolRound ── approvals (Interrupt)  │ cancel, step limit
//!    │                   │      │ every call answered            │
//!    │                   └── AfterRound ── AfterToolResult (Interrupt)
//!    └──────────────── abandon_turn ─────────────────────────────┘
//! ```

use crate::TurnResult;
use agentkit_core::{Item, ToolCallPart, ToolResultPart, TurnCancellation, TurnId, Usage};
use agentkit_tools_core::{ApprovalDecision, ApprovalRequest, ToolRequest, ToolSpec};
use std::ops::Range;
use std::sync::Arc;

/// Where the driver rests between two core transitions.
#[derive(Clone, Debug)]
pub(crate) enum Phase {
    /// No turn in progress.
    Idle,
    /// A turn is in progress and the model is to be called next.
    ModelCallDue,
    /// The turn's tool round has calls to answer (see `DriverCore::round`).
    ToolRound,
    /// Every call of the round is answered; point D and the
    /// `AfterToolResult` pause come next.
    AfterRound,
    /// The turn ended; its result is delivered once the `AfterTurnEnded`
    /// mutators ran.
    TurnEnding(Box<TurnResult>),
}

/// A user turn in progress: it spans every model call and tool round until
/// the model answers without tool calls.
#[derive(Clone, Debug)]
pub(crate) struct ActiveTurn {
    pub(crate) turn_id: TurnId,
    pub(crate) items: TurnItems,
    pub(crate) usage: Usage,
    pub(crate) cancellation: Option<TurnCancellation>,
    /// Model calls made in this turn, for the step limit.
    pub(crate) model_calls: u32,
}

impl ActiveTurn {
    pub(crate) fn is_cancelled(&self) -> bool {
        self.cancellation
            .as_ref()
            .is_some_and(TurnCancellation::is_cancelled)
    }
}

/// The items a turn appended, for its result.
///
/// Items still in the transcript log are kept as ranges of log indices,
/// not as copies: a tool round appends its items once, not once to the log
/// and once to the turn (the turn's result is copied out when the turn
/// ends), and a long turn does not hold its items twice. The log only
/// grows while the turn runs, except when a mutator rewrites it: the items
/// are copied out of the old log first ([`TurnItems::detach`]).
#[derive(Clone, Debug, Default)]
pub(crate) struct TurnItems {
    /// Items no longer in the log (it was rewritten) or restored from a
    /// snapshot; they come before `in_log`.
    copied: Vec<Item>,
    /// Runs of log indices, in order.
    in_log: Vec<Range<usize>>,
}

impl TurnItems {
    /// Items the turn appended before it was restored from a snapshot.
    pub(crate) fn restored(items: Vec<Item>) -> Self {
        Self {
            copied: items,
            in_log: Vec::new(),
        }
    }

    /// The item at `index` of the log is the turn's.
    pub(crate) fn push(&mut self, index: usize) {
        match self.in_log.last_mut() {
            Some(run) if run.end == index => run.end += 1,
            _ => self.in_log.push(index..index + 1),
        }
    }

    /// Copies the turn's items out of `log`, which is about to be replaced.
    pub(crate) fn detach(&mut self, log: &[Item]) {
        for run in self.in_log.drain(..) {
            self.copied
                .extend(log.get(run).into_iter().flatten().cloned());
        }
    }

    /// The turn's items, in order, with those still in `log` copied.
    pub(crate) fn to_vec(&self, log: &[Item]) -> Vec<Item> {
        self.clone().into_vec(log)
    }

    /// [`to_vec`](Self::to_vec), reusing the items already copied.
    pub(crate) fn into_vec(mut self, log: &[Item]) -> Vec<Item> {
        self.detach(log);
        self.copied
    }
}

/// One call of the open tool round.
#[derive(Clone, Debug)]
pub(crate) struct RoundCall {
    pub(crate) call: ToolCallPart,
    pub(crate) state: CallState,
}

/// Where a call stands. Every call ends `Answered`, exactly once, and the
/// answers are appended in the order the model emitted the calls.
#[derive(Clone, Debug)]
pub(crate) enum CallState {
    /// Passed the preflight; runs when its turn comes. Holds the request
    /// the preflight checked and the spec its input was validated against,
    /// if the executor named one, so running it neither copies the call
    /// again nor validates the same input again.
    Queued(Option<(ToolRequest, Arc<ToolSpec>)>),
    /// Waiting for the host.
    AwaitingApproval(ApprovalRequest),
    /// The host approved.
    Approved(ApprovalRequest),
    /// The host denied.
    Denied(Option<String>),
    /// The preflight refused it; this is the error result the model reads.
    Rejected(ToolResultPart),
    /// Handed to the task manager; its future is held by the driver.
    Running,
    /// The tool paused mid-run for an approval
    /// (`ToolError::NeedsApproval`, a sub-agent's tool call); shown to the
    /// host once no other call of the round runs.
    Suspended(ApprovalRequest),
    /// The host answered a suspended call: it runs again with the answer in
    /// `ToolContext::resume`, whatever the decision (the tool tells its own
    /// caller about a denial).
    Resumed(ApprovalRequest, ApprovalDecision),
    /// Was running when a snapshot was taken: a resumed driver answers it
    /// with a stub rather than run it twice.
    Interrupted,
    /// Finished; the answer waits for earlier calls to be appended.
    Finished(ToolResultPart),
    /// Its answer is in the transcript.
    Answered,
}

impl CallState {
    pub(crate) fn is_runnable(&self) -> bool {
        matches!(
            self,
            CallState::Queued(_) | CallState::Approved(_) | CallState::Resumed(..)
        )
    }
}
