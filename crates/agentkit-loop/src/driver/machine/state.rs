//! The driver's state, as plain data.
//!
//! Everything the loop must remember between two `.await`s lives here, and
//! each phase carries what it needs: the turn in progress holds its round
//! with every call's state, the model call being streamed holds what it
//! streamed so far, an ended turn holds its result. No flag lives beside
//! the phase, so none can disagree with it, and the snapshot is derived
//! from the phase alone. A dropped `next()` future, a cancellation or an
//! urgent message can therefore never lose a result: it is either in the
//! transcript or in a [`CallState`].
//!
//! ```text
//!              input                      answer, no calls
//!   Idle ─────────────▶ ModelCallDue ─▶ Streaming ─────────▶ TurnComplete ─▶ TurnEnding ─▶ Idle
//!                         ▲       │ calls                       │ queued      ▲  (Finished)
//!                         │       ▼                             ▼             │
//!                         │    ToolRound ── approvals (yield)  ModelCallDue   │ cancel, step limit
//!                         │       │ every call answered                       │
//!                         └── AfterRound ── AfterToolResult (yield)           │
//!                         abandon_turn ────────────────────────────────────────┘
//! ```

use crate::TurnResult;
use crate::transcript::TranscriptItems;
use agentkit_core::{
    DeltaFolder, FinishReason, Item, ToolCallId, ToolCallPart, ToolResultPart, TurnId, Usage,
};
use agentkit_tools_core::{ApprovalRequest, HostAnswer, HostQuestion, ToolResume};
use std::ops::Range;

/// Where the driver rests between two core transitions.
#[derive(Debug)]
pub(crate) enum Phase {
    /// No turn in progress. `asked` is set once the shell said whether
    /// messages were queued; `AwaitingInput` is yielded next.
    Idle { asked: bool },
    /// A user turn is in progress.
    InTurn(Box<Turn>),
    /// The turn ended; its result is delivered once the `AfterTurnEnded`
    /// mutators ran (`mutated`).
    TurnEnding {
        result: Box<TurnResult>,
        mutated: bool,
    },
}

impl Phase {
    pub(crate) const IDLE: Phase = Phase::Idle { asked: false };
}

/// A user turn in progress: it spans every model call and tool round until
/// the model answers without tool calls.
#[derive(Debug)]
pub(crate) struct Turn {
    /// The turn id of its current model call.
    pub(crate) turn_id: TurnId,
    pub(crate) items: TurnItems,
    pub(crate) usage: Usage,
    /// The last usage report of the model call being streamed (the last
    /// one of a call wins); reset when a call begins. Kept here rather than
    /// in its [`Stream`]: the step is moved at transitions, and this is 80
    /// bytes of it.
    pub(crate) call_usage: Usage,
    /// Model calls made in this turn, for the step limit.
    pub(crate) model_calls: u32,
    /// The host cancelled the turn; it ends at the next transition.
    pub(crate) cancelled: bool,
    /// Which user turn of the session this is (the shell makes one
    /// cancellation checkpoint per user turn).
    pub(crate) number: u64,
    pub(crate) step: Step,
    /// The last round's vector, cleared: the rounds of a turn reuse it.
    pub(crate) spare_round: Vec<RoundCall>,
    /// The last stream's folder and call vector, emptied: the model calls
    /// of a turn reuse their room. Taken when a call begins, so it is
    /// `None` while one streams and is handed back without dropping
    /// anything.
    pub(crate) spare_stream: Option<(DeltaFolder, Vec<ToolCallPart>)>,
}

/// Where a turn in progress stands.
#[derive(Debug)]
pub(crate) enum Step {
    /// The model is to be called next.
    ModelCallDue(DueCall),
    /// The model call is streaming. Not boxed: the turn is, and a box per
    /// model call is an allocation per call.
    Streaming(Stream),
    /// The model answered without tool calls (its finish reason); the
    /// queue is asked at the turn-complete point before the turn ends. `delivered`: a
    /// background result was delivered, so the turn goes on anyway.
    TurnComplete {
        finish_reason: FinishReason,
        delivered: bool,
    },
    /// The round has calls to answer.
    ToolRound(Round),
    /// Every call of the round is answered; the after-tools point and the
    /// `AfterToolResult` pause come next.
    AfterRound(AfterRound),
}

impl Step {
    /// Moves the turn to `step`. The step a transition leaves is usually
    /// plain data (a due call, a closed round): it is overwritten without a
    /// call to the drop glue of `Step`, which checks every variant.
    #[inline]
    pub(crate) fn set(&mut self, step: Step) {
        if matches!(self, Step::ModelCallDue(_) | Step::AfterRound(_)) {
            // Nothing in it to drop: forgetting it is dropping it.
            std::mem::forget(std::mem::replace(self, step));
        } else {
            *self = step;
        }
    }
}

/// The model call that is due.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct DueCall {
    /// The `BeforeModelCall` mutators ran for it.
    pub(crate) mutated: bool,
    /// Its `BeforeModelCall` mutation is forced (the last call overflowed
    /// the context window).
    pub(crate) forced: bool,
    /// The automatic retry after a context-length error was used.
    pub(crate) retried: bool,
}

/// A model call being streamed: nothing reaches the transcript until it
/// finishes.
#[derive(Debug)]
pub(crate) struct Stream {
    pub(crate) folder: DeltaFolder,
    pub(crate) calls: Vec<ToolCallPart>,
    /// The call, as it was due: a failure makes it due again.
    pub(crate) due: DueCall,
    /// The one-off cache request, restored if the call fails (in the box
    /// it was set in).
    pub(crate) one_off_cache: Option<Box<crate::PromptCacheRequest>>,
}

/// The open tool round.
#[derive(Debug, Default)]
pub(crate) struct Round {
    pub(crate) calls: Vec<RoundCall>,
    /// The approval currently shown to the host, until it is resolved.
    pub(crate) surfaced: Option<ToolCallId>,
    /// An urgent message was queued (the between-tools point comes at the next transition).
    pub(crate) urgent: bool,
}

/// After the round: what is still owed before the `AfterToolResult` pause.
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct AfterRound {
    /// The round was cut short at the between-tools point skipping this many calls; the
    /// urgent messages are taken next.
    pub(crate) skipped: Option<usize>,
    /// The `AfterToolResult` mutators ran.
    pub(crate) mutated: bool,
    /// The queue was asked at the after-tools point.
    pub(crate) drained: bool,
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
    pub(crate) fn detach(&mut self, log: TranscriptItems<'_>) {
        for run in self.in_log.drain(..) {
            self.copied.extend(log.range(run).iter().cloned());
        }
    }

    /// The turn's items, in order, with those still in `log` copied.
    pub(crate) fn to_vec(&self, log: TranscriptItems<'_>) -> Vec<Item> {
        self.clone().into_vec(log)
    }

    /// [`to_vec`](Self::to_vec), reusing the items already copied.
    pub(crate) fn into_vec(mut self, log: TranscriptItems<'_>) -> Vec<Item> {
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
    /// The model asked for it; the permission preflight has not run.
    Unchecked,
    /// Passed the preflight; runs when its turn comes. Holds the request
    /// the preflight checked and the tool it found (with the spec its
    /// input was validated against), if the executor named one, so running
    /// it neither copies the call again nor looks the tool up or validates
    /// the same input again.
    Queued(Option<super::Validated>),
    /// Waiting for the host. The approval states are boxed: they are
    /// rare, and an approval request inline would make every call's state
    /// too large to move without a `memcpy` call.
    AwaitingApproval(Box<ApprovalRequest>),
    /// The host approved (in the box the call starts with).
    Approved(Box<ApprovalRequest>),
    /// The host denied.
    Denied(Option<String>),
    /// The preflight refused it; this is the error result the model reads.
    Rejected(ToolResultPart),
    /// Handed to the task manager; its future is held by the driver. A
    /// detach-after call holds its timer (boxed: most calls have none).
    Running(Option<Box<super::timer::DetachTimer>>),
    /// The tool paused mid-run for an approval
    /// (`ToolError::NeedsApproval`, a sub-agent's tool call); shown to the
    /// host once no other call of the round runs.
    Suspended(Box<ApprovalRequest>),
    /// The host answered a suspended call: it runs again with the answer in
    /// `ToolContext::resume`, whatever the decision (the tool tells its own
    /// caller about a denial).
    Resumed(Box<ToolResume>),
    /// Running, and waiting for the host's answer to a question it asked
    /// (`ToolContext::ask`): its future is alive and waits; the question
    /// is shown to the host once no other call of the round runs. Boxed:
    /// rare, and the state is in every call of every round.
    Asking(Box<HostQuestion>),
    /// The host answered the question; the answer goes to the waiting
    /// future next, and the call runs on (it is not run again).
    Replying(Box<HostAnswer>),
    /// Was running when a snapshot was taken: a resumed driver answers it
    /// with a stub rather than run it twice.
    Interrupted,
    /// Finished; the answer waits for earlier calls to be appended.
    Finished(ToolResultPart),
    /// Its answer is in the transcript.
    Answered,
}

impl CallState {
    /// Moves the call to `state`; as [`Step::set`], a state that holds
    /// nothing (unchecked, running, answered) is overwritten without a call
    /// to the drop glue.
    #[inline]
    pub(crate) fn set(&mut self, state: CallState) {
        if matches!(
            self,
            CallState::Unchecked | CallState::Running(None) | CallState::Answered
        ) {
            // Nothing in it to drop: forgetting it is dropping it.
            std::mem::forget(std::mem::replace(self, state));
        } else {
            *self = state;
        }
    }
}
