//! A tool round: preflight, approvals, starting calls, answers in order.
//!
//! Every call of the round ends `Answered` exactly once, and answers are
//! appended in the order the model emitted the calls, whatever order the
//! calls finish in. The between-tools point (an urgent message) answers what has not
//! finished with a stub and keeps every real result.

use super::input::{Input, ToolOutcome, Validated, Verdict};
use super::state::{AfterRound, CallState, Phase, Round, RoundCall, Step};
use super::{Action, DriverCore, LoopInterrupt, LoopStep, Note, SKIPPED, StartCall, Yielded};
use crate::{AgentEvent, InvalidStateReason, PendingApproval, PendingQuestion};
use agentkit_core::{ToolCallId, ToolCallPart, ToolResultPart, Usage};
use agentkit_tools_core::{ApprovalDecision, HostAnswer, HostQuestion, ToolResume};

impl DriverCore {
    fn round_mut(&mut self) -> Option<&mut Round> {
        match self.turn_mut().map(|t| &mut t.step) {
            Some(Step::ToolRound(round)) => Some(round),
            _ => None,
        }
    }

    fn round(&self) -> Option<&Round> {
        match self.turn().map(|t| &t.step) {
            Some(Step::ToolRound(round)) => Some(round),
            _ => None,
        }
    }

    /// The call at `index` of the open round, with its state.
    pub(super) fn round_call_mut(&mut self, index: usize) -> Option<&mut RoundCall> {
        self.round_mut()?.calls.get_mut(index)
    }

    /// The call at `index` of the open round.
    pub(crate) fn round_call(&self, index: usize) -> Option<&ToolCallPart> {
        self.round()?.calls.get(index).map(|c| &c.call)
    }

    /// The calls of the open round, in order.
    pub(crate) fn round_calls(&self) -> &[RoundCall] {
        self.round().map_or(&[], |r| &r.calls)
    }

    /// The next action inside a round; `None` when the round closed.
    ///
    /// The round's calls are read once ([`Census`]) rather than once per
    /// question asked of them: most polls find no approval, question,
    /// answer or timer, and skip each look with a flag.
    pub(super) fn poll_round(&mut self) -> Option<Action> {
        let parallel = self.settings.parallel;
        let round = self.round_mut()?;
        let census = Census::of(&round.calls);
        if let Some(unchecked) = census.unchecked {
            return Some(Action::Preflight(unchecked));
        }
        // An answered question goes back to its waiting call first.
        if census.replying
            && let Some(entry) = round
                .calls
                .iter_mut()
                .find(|c| matches!(c.state, CallState::Replying(_)))
            && let CallState::Replying(answer) =
                std::mem::replace(&mut entry.state, CallState::Running(None))
        {
            return Some(Action::AnswerQuestion {
                call_id: entry.call.id.clone(),
                answer: *answer,
            });
        }
        if let Some(call_id) = &round.surfaced {
            let call_id = call_id.clone();
            let asking = round
                .calls
                .iter()
                .any(|c| c.call.id == call_id && matches!(c.state, CallState::Asking(_)));
            return Some(Action::Fail(if asking {
                InvalidStateReason::QuestionPending { call_id }
            } else {
                InvalidStateReason::ApprovalPending { call_id }
            }));
        }
        if census.waiting {
            if let Some(pending) = self.surface_next_approval() {
                return Some(Action::Yield(Yielded::Other(Box::new(
                    LoopStep::Interrupt(LoopInterrupt::ApprovalRequest(pending)),
                ))));
            }
            if let Some(pending) = self.surface_next_question() {
                return Some(Action::Yield(Yielded::Other(Box::new(
                    LoopStep::Interrupt(LoopInterrupt::Question(pending)),
                ))));
            }
        }
        if self.flush_answers() {
            self.close_round(None);
            return None;
        }
        // The between-tools point: an urgent message skips what has not finished.
        if self.round().is_some_and(|round| round.urgent) {
            let skipped = self.answer_all(SKIPPED, "skipped");
            self.close_round(Some(skipped));
            return None;
        }
        if census.fired
            && let Some(detach) = self.detach_due()
        {
            return Some(detach);
        }
        if let Some(start) = self.start_next(&census) {
            return Some(Action::StartTool(start));
        }
        Some(Action::AwaitTools {
            wake_on_urgent: parallel > 1,
        })
    }

    fn surface_next_approval(&mut self) -> Option<PendingApproval> {
        let round = self.round_mut()?;
        // A call that paused mid-run waits until no other call runs: the
        // host's pause must not cut the running ones short.
        let idle = !round
            .calls
            .iter()
            .any(|c| matches!(c.state, CallState::Running(_)));
        let entry = round.calls.iter().find_map(|c| match &c.state {
            CallState::AwaitingApproval(request) => Some(PendingApproval {
                request: (**request).clone(),
                call: c.call.clone(),
            }),
            CallState::Suspended(request) if idle => Some(PendingApproval {
                request: (**request).clone(),
                call: c.call.clone(),
            }),
            _ => None,
        })?;
        round.surfaced = Some(entry.call.id.clone());
        let request = entry.request.clone();
        self.emit(|| AgentEvent::ApprovalRequired { request });
        Some(entry)
    }

    /// A call waiting for an answer is shown once no other call runs, like
    /// a call that paused for an approval: the host's pause must not hold
    /// up the running ones.
    fn surface_next_question(&mut self) -> Option<PendingQuestion> {
        let round = self.round_mut()?;
        if round
            .calls
            .iter()
            .any(|c| matches!(c.state, CallState::Running(_)))
        {
            return None;
        }
        let pending = round.calls.iter().find_map(|c| match &c.state {
            CallState::Asking(question) => Some(PendingQuestion {
                question: (**question).clone(),
                call: c.call.clone(),
            }),
            _ => None,
        })?;
        round.surfaced = Some(pending.call.id.clone());
        Some(pending)
    }

    /// Marks the next runnable call `Running`, if the parallelism allows,
    /// and reports it. One call per poll: the shell starts it and polls
    /// again, so a round allocates no list of calls to start. `census` is
    /// the round's as `poll_round` read it: nothing since changed a call
    /// that runs or could start (answers were appended only before the
    /// first call that had none).
    fn start_next(&mut self, census: &Census) -> Option<StartCall> {
        let parallel = self.settings.parallel.max(1);
        let observe = self.settings.observe_events;
        // The fields apart: the round is borrowed while events are queued.
        let Phase::InTurn(turn) = &mut self.phase else {
            return None;
        };
        let outbox = &mut self.outbox;
        let Step::ToolRound(round) = &mut turn.step else {
            return None;
        };
        let running = census.running;
        if running >= parallel {
            return None;
        }
        let index = census.runnable?;
        let entry = round.calls.get_mut(index)?;
        let (approval, resume, validated) =
            match std::mem::replace(&mut entry.state, CallState::Running(None)) {
                CallState::Approved(request) => (Some(request), None, None),
                CallState::Resumed(resume) => (None, Some(resume), None),
                CallState::Queued(validated) => (None, None, validated),
                _ => (None, None, None),
            };
        // What the next poll would do, with no input in between: start
        // another call, or (everything before `start_next` in
        // `poll_round` being unchanged by this start) wait.
        // (The started call was the first runnable one.)
        let then_await = running + 1 >= parallel || census.runnables == 1;
        let entry = &round.calls[index];
        if observe {
            outbox.push_back(Note::Event(AgentEvent::ToolStarted {
                call_id: entry.call.id.clone(),
                tool_name: entry.call.name.to_string(),
            }));
        }
        let (request, validated) = match validated {
            Some((request, spec)) => (request, Some(spec)),
            None => (super::tool_request(&entry.call), None),
        };
        Some(StartCall {
            index,
            turn_id: turn.turn_id.clone(),
            approval,
            resume,
            request,
            validated,
            then_await,
        })
    }

    /// Appends, in call order, every answer that is ready; `true` when
    /// every call of the round is answered.
    fn flush_answers(&mut self) -> bool {
        let len = self.round().map_or(0, |r| r.calls.len());
        for index in 0..len {
            let Some(entry) = self.round().and_then(|r| r.calls.get(index)) else {
                return false;
            };
            match entry.state {
                CallState::Answered => {}
                CallState::Running(_)
                | CallState::Unchecked
                | CallState::Queued(_)
                | CallState::Approved(_)
                | CallState::AwaitingApproval(_)
                | CallState::Suspended(_)
                | CallState::Asking(_)
                | CallState::Replying(_)
                | CallState::Resumed(..) => return false,
                _ => {
                    self.answer(index, None);
                }
            }
        }
        true
    }

    /// Answers call `index`: with its own outcome when it has one
    /// (finished, denied, rejected, interrupted), else with `stub`.
    /// Returns `true` when the stub was used.
    fn answer(&mut self, index: usize, stub: Option<(&str, &str)>) -> bool {
        let Some(entry) = self.round_mut().and_then(|r| r.calls.get_mut(index)) else {
            return false;
        };
        // Cloned only for the answers made here (a finished call's result
        // names its call already).
        let call_id = || entry.call.id.clone();
        let state = std::mem::replace(&mut entry.state, CallState::Answered);
        let (part, stubbed) = match state {
            CallState::Answered => return false,
            CallState::Finished(part) => (part, false),
            CallState::Rejected(part) => (part, false),
            CallState::Denied(reason) => {
                let message = match reason {
                    Some(reason) => format!("permission denied by the user: {reason}"),
                    None => "permission denied by the user".to_owned(),
                };
                let part = ToolResultPart::error(call_id(), message)
                    .with_metadata(agentkit_core::keys::ERROR_KIND, "permission_denied");
                (part, false)
            }
            CallState::Interrupted => (
                ToolResultPart::error(call_id(), super::DROPPED)
                    .with_metadata(agentkit_core::keys::ERROR_KIND, "interrupted"),
                false,
            ),
            other @ (CallState::Unchecked
            | CallState::Queued(_)
            | CallState::Approved(_)
            | CallState::AwaitingApproval(_)
            | CallState::Suspended(_)
            | CallState::Asking(_)
            | CallState::Replying(_)
            | CallState::Resumed(..)
            | CallState::Running(_)) => match stub {
                Some((message, kind)) => (
                    ToolResultPart::error(call_id(), message)
                        .with_metadata(agentkit_core::keys::ERROR_KIND, kind),
                    true,
                ),
                None => {
                    entry.state = other;
                    return false;
                }
            },
        };
        self.append_result(part);
        stubbed
    }

    /// Answers every open call of the round in order: real outcomes where
    /// they exist, `stub` for the rest. Returns how many got the stub.
    pub(super) fn answer_all(&mut self, message: &str, kind: &str) -> usize {
        let len = self.round().map_or(0, |r| r.calls.len());
        let mut stubbed = 0;
        for index in 0..len {
            if self.answer(index, Some((message, kind))) {
                stubbed += 1;
            }
        }
        stubbed
    }

    /// Every call is answered: the turn moves past the round, keeping the
    /// round's vector for the next one.
    fn close_round(&mut self, skipped: Option<usize>) {
        if let Some(turn) = self.turn_mut() {
            let step = std::mem::replace(
                &mut turn.step,
                Step::AfterRound(AfterRound {
                    skipped,
                    ..AfterRound::default()
                }),
            );
            if let Step::ToolRound(round) = step {
                turn.spare_round = round.calls;
                turn.spare_round.clear();
            }
        }
    }

    /// The permission preflight of call `index`. The verdict that leaves
    /// no call of the round unchecked implies the next poll: its action is
    /// returned (the preflight and what follows it, usually the start of
    /// the first call, are one transition).
    pub(crate) fn on_checked(
        &mut self,
        index: usize,
        verdict: Verdict,
        validated: Option<Validated>,
    ) -> Option<Action> {
        self.check(index, verdict, validated).then(|| self.decide())
    }

    /// Takes a preflight verdict; `true` when no call of the round is
    /// left unchecked (or no round is open).
    pub(super) fn check(
        &mut self,
        index: usize,
        verdict: Verdict,
        validated: Option<Validated>,
    ) -> bool {
        self.record(|| Input::Checked {
            index,
            verdict: verdict.clone(),
            validated: None,
        });
        let Some(round) = self.round_mut() else {
            return true;
        };
        if let Some(entry) = round.calls.get_mut(index)
            && matches!(entry.state, CallState::Unchecked)
        {
            entry.state.set(match verdict {
                Verdict::Ready => CallState::Queued(validated),
                Verdict::NeedsApproval { request } => {
                    CallState::AwaitingApproval(Box::new(request))
                }
                Verdict::Rejected { result } => CallState::Rejected(result),
            });
        }
        !round
            .calls
            .iter()
            .any(|c| matches!(c.state, CallState::Unchecked))
    }

    /// An urgent message is queued: the between-tools point comes at the next transition.
    pub(crate) fn on_urgent_queued(&mut self) {
        self.record(|| Input::UrgentQueued);
        if let Some(round) = self.round_mut() {
            round.urgent = true;
        }
    }

    /// A call finished.
    pub(crate) fn on_tool_done(
        &mut self,
        index: usize,
        call_id: &ToolCallId,
        outcome: ToolOutcome,
    ) {
        self.record(|| Input::ToolDone {
            index,
            call_id: call_id.clone(),
            outcome: outcome.clone(),
        });
        let Some(round) = self.round_mut() else {
            return;
        };
        let Some(entry) = round.calls.get_mut(index) else {
            return;
        };
        // A call waiting for an answer may end without it (its deadline
        // passed, it went to the background).
        if &entry.call.id != call_id
            || !matches!(
                entry.state,
                CallState::Running(_) | CallState::Asking(_) | CallState::Replying(_)
            )
        {
            return;
        }
        if round.surfaced.as_ref() == Some(call_id) {
            round.surfaced = None;
        }
        let warning = match outcome {
            ToolOutcome::Paused { request } => {
                entry.state = CallState::Suspended(Box::new(request));
                return;
            }
            ToolOutcome::Finished { result } => {
                entry.state.set(CallState::Finished(result));
                return;
            }
            ToolOutcome::Failed { result, warning } => {
                entry.state.set(CallState::Finished(result));
                warning
            }
        };
        self.emit(|| AgentEvent::Warning { message: warning });
    }

    /// A running call reported model usage it spent (a sub-agent's); it
    /// counts in the turn in progress.
    pub(crate) fn on_tool_usage(&mut self, usage: Usage) {
        self.record(|| Input::ToolUsage {
            usage: usage.clone(),
        });
        if let Some(turn) = self.turn_mut() {
            turn.usage.accumulate(&usage);
        }
    }

    /// The shell lost the futures of running calls (a `next()` was dropped
    /// mid-round): answer them as interrupted rather than run them twice.
    /// A call waiting for an answer lost its future too.
    ///
    /// Inlined: asked at every `next()`, which usually finds no round open.
    #[inline]
    pub(crate) fn on_calls_lost(&mut self) {
        if self.round_open() {
            self.lose_calls();
        }
    }

    fn lose_calls(&mut self) {
        let live = |state: &CallState| {
            matches!(
                state,
                CallState::Running(_) | CallState::Asking(_) | CallState::Replying(_)
            )
        };
        let any = self
            .round()
            .is_some_and(|r| r.calls.iter().any(|c| live(&c.state)));
        if !any {
            return;
        }
        self.record(|| Input::CallsLost);
        if let Some(round) = self.round_mut() {
            for entry in &mut round.calls {
                if live(&entry.state) {
                    entry.state = CallState::Interrupted;
                }
            }
            round.surfaced = None;
        }
    }

    /// A running call asked the host a question. Returns `false` when no
    /// running call of the open round has that id (a background task, a
    /// call already answered): the shell declines it at once.
    pub(crate) fn on_tool_question(
        &mut self,
        call_id: &ToolCallId,
        question: HostQuestion,
    ) -> bool {
        self.record(|| Input::ToolQuestion {
            call_id: call_id.clone(),
            question: question.clone(),
        });
        let Some(entry) = self
            .round_mut()
            .and_then(|r| r.calls.iter_mut().find(|c| &c.call.id == call_id))
        else {
            return false;
        };
        if !matches!(entry.state, CallState::Running(_)) {
            return false;
        }
        let event_question = question.clone();
        entry.state = CallState::Asking(Box::new(question));
        let call_id = call_id.clone();
        self.emit(|| AgentEvent::QuestionAsked {
            call_id,
            question: event_question,
        });
        true
    }

    /// The host answered a call's question. Accepted form content is
    /// checked against the question's schema (defaults filled in); content
    /// that does not match leaves the question open.
    pub(crate) fn resolve_question(
        &mut self,
        call_id: ToolCallId,
        answer: HostAnswer,
    ) -> Result<(), InvalidStateReason> {
        self.record(|| Input::QuestionAnswered {
            call_id: call_id.clone(),
            answer: answer.clone(),
        });
        let Some(round) = self.round_mut() else {
            return Err(InvalidStateReason::NoSuchQuestion { call_id });
        };
        let Some(entry) = round.calls.iter_mut().find(|c| c.call.id == call_id) else {
            return Err(InvalidStateReason::NoSuchQuestion { call_id });
        };
        let CallState::Asking(question) = &entry.state else {
            return Err(InvalidStateReason::NoSuchQuestion { call_id });
        };
        let answer = match question.check(answer) {
            Ok(answer) => answer,
            Err(error) => return Err(InvalidStateReason::InvalidAnswer { call_id, error }),
        };
        entry.state = CallState::Replying(Box::new(answer.clone()));
        if round.surfaced.as_ref() == Some(&call_id) {
            round.surfaced = None;
        }
        self.emit(|| AgentEvent::QuestionAnswered { call_id, answer });
        Ok(())
    }

    pub(crate) fn resolve_approval(
        &mut self,
        call_id: ToolCallId,
        decision: ApprovalDecision,
    ) -> Result<(), InvalidStateReason> {
        self.record(|| Input::Approval {
            call_id: call_id.clone(),
            decision: decision.clone(),
        });
        let Some(round) = self.round_mut() else {
            return Err(InvalidStateReason::NoSuchApproval { call_id });
        };
        let Some(entry) = round.calls.iter_mut().find(|c| c.call.id == call_id) else {
            return Err(InvalidStateReason::NoSuchApproval { call_id });
        };
        let approved = matches!(decision, ApprovalDecision::Approve);
        entry.state = match (&entry.state, decision) {
            (CallState::AwaitingApproval(request), ApprovalDecision::Approve) => {
                CallState::Approved(request.clone())
            }
            (CallState::AwaitingApproval(_), ApprovalDecision::Deny { reason }) => {
                CallState::Denied(reason)
            }
            (CallState::Suspended(request), decision) => CallState::Resumed(Box::new(ToolResume {
                request: (**request).clone(),
                decision,
            })),
            _ => return Err(InvalidStateReason::NotAwaitingApproval { call_id }),
        };
        if round.surfaced.as_ref() == Some(&call_id) {
            round.surfaced = None;
        }
        self.emit(|| AgentEvent::ApprovalResolved { call_id, approved });
        Ok(())
    }
}

/// What the calls of a round are doing, read in one pass: which questions
/// `poll_round` has to ask of them at all.
#[derive(Debug, Default)]
struct Census {
    /// From the first call the preflight has not checked to past the last.
    unchecked: Option<std::ops::Range<usize>>,
    /// A call has the host's answer to hand to its future.
    replying: bool,
    /// A call waits for the host: an approval, a paused call's approval or
    /// a question.
    waiting: bool,
    /// A detach-after call's timer fired.
    fired: bool,
    /// Calls running (their futures held by the shell).
    running: usize,
    /// The first call that may start.
    runnable: Option<usize>,
    /// Calls that may start.
    runnables: usize,
}

impl Census {
    fn of(calls: &[RoundCall]) -> Self {
        let mut census = Census::default();
        for (index, call) in calls.iter().enumerate() {
            match &call.state {
                CallState::Unchecked => {
                    let start = census.unchecked.as_ref().map_or(index, |range| range.start);
                    census.unchecked = Some(start..index + 1);
                }
                CallState::Replying(_) => census.replying = true,
                CallState::AwaitingApproval(_) | CallState::Suspended(_) | CallState::Asking(_) => {
                    census.waiting = true
                }
                CallState::Running(timer) => {
                    census.running += 1;
                    census.fired |= timer.as_ref().is_some_and(|timer| timer.fired);
                }
                CallState::Queued(_) | CallState::Approved(_) | CallState::Resumed(..) => {
                    if census.runnable.is_none() {
                        census.runnable = Some(index);
                    }
                    census.runnables += 1;
                }
                CallState::Denied(_)
                | CallState::Rejected(_)
                | CallState::Interrupted
                | CallState::Finished(_)
                | CallState::Answered => {}
            }
        }
        census
    }
}
