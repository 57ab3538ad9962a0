//! Driving one child session on its own task.
//!
//! The child runs on a spawned task, not inside the parent's call, because
//! the parent's call must be able to end (and be called again) while the
//! child waits for an approval, and because a parent that stops waiting
//! drops its call at once: the child then still needs a few steps to end its
//! turn cancelled with a valid transcript. The call and the task talk over
//! two channels: the task reports (an answer, or an approval to ask for),
//! the call answers approvals.

use crate::{SUB_AGENT_KEY, SUB_AGENT_PATH_KEY, SubAgentError};
use agentkit_core::keys;
use agentkit_core::{
    ApprovalId, CancellationController, FinishReason, ItemKind, ToolCallId, ToolOutput,
    TurnCancellation, TurnId,
};
use agentkit_loop::{
    LoopDriver, LoopError, LoopInterrupt, LoopStep, ModelSession, PendingApproval, TurnResult,
};
use agentkit_tools_core::{ApprovalDecision, ApprovalRequest, ToolError, ToolResult, UsageSink};
use serde_json::Value;
use tokio::sync::{mpsc, oneshot};

/// What the child's task tells the parent's call.
pub(crate) enum Report {
    /// The child's turn ended; the call's outcome.
    Done(Result<ToolResult, ToolError>),
    /// The child needs an approval; it waits for the answer on the sender.
    Approval(PendingApproval, oneshot::Sender<ApprovalDecision>),
}

/// A child paused at an approval, between two runs of the parent's call.
/// Dropping it (never resumed) makes the child end its turn cancelled.
pub(crate) struct Parked {
    pub(crate) reports: mpsc::UnboundedReceiver<Report>,
    pub(crate) decide: oneshot::Sender<ApprovalDecision>,
    pub(crate) controller: CancellationController,
    /// The parent's model turn that asked; used to end stale children.
    pub(crate) turn_id: TurnId,
}

/// What the child's task needs besides the driver.
pub(crate) struct Child {
    pub(crate) agent: String,
    /// Interrupts the child's turns.
    pub(crate) controller: CancellationController,
    /// The parent's turn; its interruption interrupts the child.
    pub(crate) parent: TurnCancellation,
    /// The parent's usage sink: the child's usage rolls up through it.
    pub(crate) usage: UsageSink,
    /// The child answers JSON matching an output schema.
    pub(crate) structured: bool,
    /// The parent's call and where it asks its host: a question of the
    /// child's tools is passed up, its answer passed down.
    pub(crate) asks: (agentkit_core::ToolCallId, agentkit_tools_core::QuestionSink),
}

/// Interrupts the child when dropped armed.
pub(crate) struct InterruptOnDrop(pub(crate) Option<CancellationController>);

impl InterruptOnDrop {
    /// Dropped without interrupting.
    pub(crate) fn disarm(mut self) {
        self.0 = None;
    }
}

impl Drop for InterruptOnDrop {
    fn drop(&mut self) {
        if let Some(controller) = self.0.take() {
            controller.interrupt();
        }
    }
}

/// Starts driving `driver` on its own task; returns where it reports.
pub(crate) fn spawn<S: ModelSession>(
    driver: LoopDriver<S>,
    child: Child,
) -> mpsc::UnboundedReceiver<Report> {
    let (reports, receiver) = mpsc::unbounded_channel();
    tokio::spawn(drive(driver, child, reports));
    receiver
}

async fn drive<S: ModelSession>(
    mut driver: LoopDriver<S>,
    child: Child,
    reports: mpsc::UnboundedSender<Report>,
) {
    let outcome = loop {
        match step(&mut driver, &child).await {
            Ok(LoopStep::Finished(result)) => {
                child.usage.report(result.usage.clone());
                break answer(&child, result);
            }
            Ok(LoopStep::Interrupt(LoopInterrupt::AfterToolResult(_))) => {}
            Ok(LoopStep::Interrupt(LoopInterrupt::ApprovalRequest(pending))) => {
                let call_id = pending.call.id.clone();
                let (decide, decision) = oneshot::channel();
                let decision = if reports.send(Report::Approval(pending, decide)).is_ok() {
                    tokio::select! {
                        biased;
                        _ = child.parent.cancelled() => None,
                        decision = decision => decision.ok(),
                    }
                } else {
                    None
                };
                let resolved = match decision {
                    Some(decision) => driver.resolve_approval_for(call_id, decision),
                    // Nobody will answer: the parent was interrupted, or
                    // its call was answered some other way.
                    None => {
                        child.controller.interrupt();
                        Ok(())
                    }
                };
                if let Err(err) = resolved {
                    break Err(failed(&mut driver, &child, err));
                }
            }
            Ok(LoopStep::Interrupt(LoopInterrupt::Question(pending))) => {
                let (call_id, questions) = &child.asks;
                let answer = tokio::select! {
                    biased;
                    _ = child.parent.cancelled() => agentkit_tools_core::HostAnswer::Cancel,
                    answer = questions.ask(call_id.clone(), pending.question.clone()) => answer,
                };
                if let Err(err) = driver.answer_question_for(pending.call.id, answer) {
                    break Err(failed(&mut driver, &child, err));
                }
            }
            Ok(LoopStep::Interrupt(LoopInterrupt::AwaitingInput(_))) => {
                break Err(ToolError::Internal(format!(
                    "sub-agent {} asked for input instead of answering",
                    child.agent
                )));
            }
            // A later kind of pause: a cooperative one needs nothing; a
            // blocking one makes the next `next()` fail, which fails the call.
            Ok(LoopStep::Interrupt(_)) => {}
            Err(err) => break Err(failed(&mut driver, &child, err)),
        }
    };
    // The parent may have stopped listening; the child's turn is over anyway.
    let _ = reports.send(Report::Done(outcome));
}

/// One `next()` of the child, interrupting it as soon as the parent's turn
/// is interrupted (the same `next()` then ends the turn cancelled).
async fn step<S: ModelSession>(
    driver: &mut LoopDriver<S>,
    child: &Child,
) -> Result<LoopStep, LoopError> {
    let next = driver.next();
    tokio::pin!(next);
    tokio::select! {
        biased;
        step = &mut next => return step,
        _ = child.parent.cancelled() => child.controller.interrupt(),
    }
    next.await
}

/// The child's loop failed: its turn is abandoned (every open call answered,
/// so its transcript stays valid) and the usage it spent still counts.
fn failed<S: ModelSession>(driver: &mut LoopDriver<S>, child: &Child, err: LoopError) -> ToolError {
    if let Ok(result) = driver.abandon_turn(err.to_string()) {
        child.usage.report(result.usage);
    }
    SubAgentError::Failed {
        agent: child.agent.clone(),
        message: err.to_string(),
    }
    .into()
}

/// The parent's answer for a finished child turn.
fn answer(child: &Child, result: TurnResult) -> Result<ToolResult, ToolError> {
    let text = result
        .items
        .iter()
        .rev()
        .find(|item| item.kind == ItemKind::Assistant)
        .map(|item| item.text_content())
        .filter(|text| !text.is_empty());
    let agent = child.agent.clone();
    match result.finish_reason {
        FinishReason::Completed => {}
        FinishReason::Cancelled => return Err(ToolError::Cancelled),
        FinishReason::StepLimit => {
            let limit = result
                .metadata
                .get(keys::MAX_MODEL_CALLS)
                .and_then(Value::as_u64)
                .unwrap_or_default();
            return Err(SubAgentError::StepLimit {
                agent,
                limit,
                partial: text,
            }
            .into());
        }
        other => {
            return Err(SubAgentError::Stopped {
                agent,
                reason: format!("{other:?}"),
                partial: text,
            }
            .into());
        }
    }
    let text = text.unwrap_or_default();
    let output = if child.structured {
        let value: Value = serde_json::from_str(text.trim()).map_err(|err| {
            ToolError::from(SubAgentError::InvalidStructuredAnswer {
                agent: agent.clone(),
                message: err.to_string(),
            })
        })?;
        ToolOutput::Structured(value)
    } else {
        ToolOutput::Text(text)
    };
    let mut result = ToolResult::new(output);
    result.metadata.insert(SUB_AGENT_KEY.into(), agent.into());
    Ok(result)
}

/// The approval the parent's host sees for a child's pending approval: the
/// child's request, naming the child in its summary and metadata, for the
/// parent's call.
pub(crate) fn surfaced(
    agent: &str,
    parent_call: &ToolCallId,
    pending: PendingApproval,
) -> ApprovalRequest {
    let PendingApproval { mut request, call } = pending;
    let mut path = vec![Value::from(agent)];
    if let Some(Value::Array(inner)) = request.metadata.get(SUB_AGENT_PATH_KEY) {
        path.extend(inner.iter().cloned());
    } else {
        // The innermost child: keep the call that really needs approval.
        request
            .metadata
            .insert(keys::SUB_AGENT_CALL_ID.into(), call.id.as_str().into());
        request
            .metadata
            .insert(keys::SUB_AGENT_TOOL.into(), (*call.name).into());
        request
            .metadata
            .insert(keys::SUB_AGENT_INPUT.into(), call.input.to_value());
    }
    request.metadata.insert(SUB_AGENT_KEY.into(), agent.into());
    request
        .metadata
        .insert(SUB_AGENT_PATH_KEY.into(), Value::Array(path));
    request.summary = format!("{agent} (sub-agent): {}", request.summary);
    request.id = ApprovalId::new(format!("approval:{parent_call}/{}", request.id));
    request.call_id = Some(parent_call.clone());
    request
}
