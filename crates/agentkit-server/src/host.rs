//! A hosted session: one task that owns the stored session's driver.
//!
//! The task holds the session's lease and is the only code that calls
//! `next()`. Requests reach it in two ways: commands over a channel (start a
//! run, answer approvals, cancel an approval wait), taken only while the
//! session rests; and, while a run is going, the soft-interrupt queue and
//! the cancellation controller, which the driver watches itself. The phase
//! is shared under a lock so that a message typed just as a run ends is
//! never stranded: the task checks the queue under the same lock before it
//! rests.

use crate::agui::{self, Outcome, ResumeEntry};
use crate::hub::Hub;
use crate::{ServerError, Tenant};
use agentkit_core::{CancellationController, FinishReason, Item, ToolCallId};
use agentkit_loop::{
    DeliveryMode, InputRequest, LoopInterrupt, LoopStep, ModelSession, PendingApproval,
    SoftInterruptHandle,
};
use agentkit_store::{Session, StoreError};
use agentkit_tools_core::ApprovalDecision;
use serde_json::json;
use std::sync::{Arc, Mutex};
use tokio::sync::{mpsc, oneshot};

/// Where the hosted session stands.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Phase {
    /// `next()` is running.
    Running,
    /// Waiting for a new message.
    Idle,
    /// Waiting for an approval (the run ended with an interrupt).
    AwaitingApproval,
    /// The task is gone (lease lost, server shutting down).
    Closed,
}

struct Shared {
    phase: Phase,
    pending: Vec<PendingApproval>,
}

/// What the task is asked to do while the session rests.
pub(crate) enum Command {
    Run {
        run_id: String,
        items: Vec<Item>,
        resume: Vec<ResumeEntry>,
        reply: oneshot::Sender<Result<(), ServerError>>,
    },
    Cancel,
    /// Save, give the lease up and stop (the server shuts down).
    Close,
}

/// A session this process drives; see the module docs.
pub(crate) struct Hosted {
    pub(crate) tenant: Tenant,
    pub(crate) hub: Arc<Hub>,
    commands: mpsc::UnboundedSender<Command>,
    shared: Mutex<Shared>,
    soft: SoftInterruptHandle,
    cancel: CancellationController,
    task: Mutex<Option<tokio::task::JoinHandle<()>>>,
}

/// What a queued message became.
pub(crate) enum Queued {
    /// Waiting in the running session's queue, with this id.
    Queued(u64),
    /// The session was idle: it started run `0`.
    Started(String),
}

impl Hosted {
    fn lock(&self) -> std::sync::MutexGuard<'_, Shared> {
        self.shared.lock().unwrap_or_else(|e| e.into_inner())
    }

    pub(crate) fn phase(&self) -> Phase {
        self.lock().phase
    }

    /// The approvals the session waits for: `(call id, tool, summary)`.
    pub(crate) fn pending(&self) -> Vec<(String, String, String)> {
        summaries(&self.lock().pending)
    }

    /// Messages queued and not delivered yet.
    pub(crate) fn queued(&self) -> Vec<serde_json::Value> {
        self.soft
            .pending()
            .into_iter()
            .map(|m| json!({ "id": m.id, "text": m.item.text_content(), "delivery": delivery_name(m.delivery) }))
            .collect()
    }

    /// Starts a run and waits until it has begun (its `RUN_STARTED` is in
    /// the log) or was refused.
    pub(crate) async fn run(
        &self,
        run_id: String,
        items: Vec<Item>,
        resume: Vec<ResumeEntry>,
    ) -> Result<(), ServerError> {
        let (reply, answer) = oneshot::channel();
        let command = Command::Run {
            run_id,
            items,
            resume,
            reply,
        };
        if self.commands.send(command).is_err() {
            return Err(ServerError::Busy("closed".into()));
        }
        answer
            .await
            .unwrap_or_else(|_| Err(ServerError::Busy("closed".into())))
    }

    /// A message typed by the user: queued while the session works, the
    /// start of a run while it rests.
    pub(crate) async fn message(
        &self,
        text: String,
        delivery: DeliveryMode,
    ) -> Result<Queued, ServerError> {
        {
            let shared = self.lock();
            match shared.phase {
                Phase::Running | Phase::AwaitingApproval => {
                    let id = self.soft.push_with(Item::user(text.clone()), delivery);
                    self.hub.emit_all([agui::custom(
                        "message_queued",
                        json!({ "id": id, "text": text, "delivery": delivery_name(delivery) }),
                    )]);
                    return Ok(Queued::Queued(id));
                }
                Phase::Closed => return Err(ServerError::Busy("closed".into())),
                Phase::Idle => {}
            }
        }
        let run_id = self.hub.fresh_id("run");
        self.run(run_id.clone(), vec![Item::user(text)], Vec::new())
            .await?;
        Ok(Queued::Started(run_id))
    }

    /// Stops the task once the session rests: saved, lease given up.
    pub(crate) async fn close(&self) {
        let _ = self.commands.send(Command::Close);
        let task = self.task.lock().unwrap_or_else(|e| e.into_inner()).take();
        if let Some(task) = task {
            let _ = task.await;
        }
    }

    /// Cancels the run in progress, or the turn waiting for an approval.
    pub(crate) fn cancel(&self) {
        self.cancel.interrupt();
        let _ = self.commands.send(Command::Cancel);
    }
}

fn delivery_name(delivery: DeliveryMode) -> &'static str {
    match delivery {
        DeliveryMode::Urgent => "urgent",
        DeliveryMode::FollowUp => "follow_up",
        _ => "steer",
    }
}

fn summaries(pending: &[PendingApproval]) -> Vec<(String, String, String)> {
    pending
        .iter()
        .map(|p| {
            (
                p.call.id.to_string(),
                p.call.name.to_string(),
                p.request.summary.clone(),
            )
        })
        .collect()
}

/// Starts the task for an opened session.
pub(crate) fn spawn<S: ModelSession + 'static>(
    session: Session<S>,
    tenant: Tenant,
    hub: Arc<Hub>,
    cancel: CancellationController,
    idle_release: std::time::Duration,
) -> Arc<Hosted> {
    let (commands, receiver) = mpsc::unbounded_channel();
    let hosted = Arc::new(Hosted {
        tenant,
        hub,
        commands,
        shared: Mutex::new(Shared {
            phase: Phase::Running,
            pending: Vec::new(),
        }),
        soft: session.soft_interrupts(),
        cancel,
        task: Mutex::new(None),
    });
    let task = tokio::spawn(task(session, hosted.clone(), receiver, idle_release));
    *hosted.task.lock().unwrap_or_else(|e| e.into_inner()) = Some(task);
    hosted
}

async fn task<S: ModelSession>(
    mut session: Session<S>,
    hosted: Arc<Hosted>,
    mut commands: mpsc::UnboundedReceiver<Command>,
    idle_release: std::time::Duration,
) {
    // A resumed session may be in the middle of a turn: it goes on.
    let mut alive = drive(&mut session, &hosted).await;
    while alive {
        // A session resting with nothing pending gives its lease up after a
        // while, so that any replica can serve its next request.
        let command = if hosted.phase() == Phase::Idle {
            match tokio::time::timeout(idle_release, commands.recv()).await {
                Ok(command) => command,
                Err(_) => break,
            }
        } else {
            commands.recv().await
        };
        let Some(command) = command else {
            break;
        };
        match command {
            Command::Close => break,
            Command::Cancel => {
                if hosted.phase() == Phase::AwaitingApproval {
                    let _ = session.abandon_turn("cancelled by the user");
                    {
                        let mut shared = hosted.lock();
                        shared.pending.clear();
                        shared.phase = Phase::Idle;
                    }
                    hosted.hub.emit(agui::custom("turn_cancelled", json!({})));
                    hosted.hub.finish_run(&Outcome::Cancelled);
                    alive = save(&mut session, &hosted).await;
                }
            }
            Command::Run {
                run_id,
                items,
                resume,
                reply,
            } => match prepare(&mut session, &hosted, items, resume) {
                Err(err) => {
                    let _ = reply.send(Err(err));
                }
                Ok(()) => {
                    hosted.lock().phase = Phase::Running;
                    hosted.hub.start_run(&run_id);
                    let _ = reply.send(Ok(()));
                    alive = drive(&mut session, &hosted).await;
                }
            },
        }
    }
    hosted.lock().phase = Phase::Closed;
    hosted.hub.flush().await;
    let _ = session.close().await;
    // Streams end; clients reconnect with Last-Event-ID wherever the
    // session is hosted next.
    hosted.hub.close();
}

async fn save<S: ModelSession>(session: &mut Session<S>, hosted: &Hosted) -> bool {
    match session.save().await {
        Ok(()) => true,
        Err(StoreError::LeaseLost(_)) => {
            hosted.lock().phase = Phase::Closed;
            false
        }
        Err(err) => {
            tracing::warn!("saving session failed: {err}");
            true
        }
    }
}

/// Applies a run request to a resting session.
fn prepare<S: ModelSession>(
    session: &mut Session<S>,
    hosted: &Hosted,
    items: Vec<Item>,
    resume: Vec<ResumeEntry>,
) -> Result<(), ServerError> {
    let mut shared = hosted.lock();
    if shared.pending.is_empty() {
        if !resume.is_empty() {
            return Err(ServerError::Conflict(
                "nothing to resume: no approval is pending".into(),
            ));
        }
        if items.is_empty() {
            return Err(ServerError::BadRequest(
                "the run has no new user message".into(),
            ));
        }
        let request = InputRequest {
            session_id: session.session_id().clone(),
            reason: String::new(),
        };
        return request
            .submit(session, items)
            .map_err(|err| ServerError::Conflict(err.to_string()));
    }
    if resume.is_empty() {
        return Err(ServerError::Conflict(format!(
            "an approval is pending (tool call `{}`): answer it in `resume`",
            shared.pending[0].call.id
        )));
    }
    // Check every entry before resolving any: a bad request changes nothing.
    let mut decisions = Vec::new();
    for entry in &resume {
        let Some(index) = shared
            .pending
            .iter()
            .position(|p| p.call.id.as_str() == entry.interrupt_id)
        else {
            return Err(ServerError::Conflict(format!(
                "no pending approval `{}`",
                entry.interrupt_id
            )));
        };
        let decision = entry.decision().map_err(ServerError::BadRequest)?;
        decisions.push((index, decision));
    }
    let answered: Vec<ToolCallId> = decisions
        .iter()
        .map(|(index, _)| shared.pending[*index].call.id.clone())
        .collect();
    for ((_, decision), call_id) in decisions.into_iter().zip(&answered) {
        let decision = match decision {
            None => ApprovalDecision::Approve,
            Some(reason) => ApprovalDecision::deny_with_reason(reason),
        };
        session
            .resolve_approval_for(call_id.clone(), decision)
            .map_err(|err| ServerError::Conflict(err.to_string()))?;
    }
    shared.pending.retain(|p| !answered.contains(&p.call.id));
    // Messages sent with a resume wait for the next safe point.
    for item in items {
        hosted.soft.push(item);
    }
    Ok(())
}

/// Runs the driver until it rests; `false` when the session was lost.
async fn drive<S: ModelSession>(session: &mut Session<S>, hosted: &Hosted) -> bool {
    loop {
        let step = session.next().await;
        match step {
            Ok(LoopStep::Finished(turn)) => {
                let outcome = if turn.finish_reason == FinishReason::Cancelled {
                    Outcome::Cancelled
                } else {
                    Outcome::Success
                };
                hosted.hub.finish_run(&outcome);
            }
            Ok(LoopStep::Interrupt(LoopInterrupt::AfterToolResult(_))) => {}
            // AG-UI has no interrupt for a tool's question yet: declined,
            // the tool goes on without the input.
            Ok(LoopStep::Interrupt(LoopInterrupt::Question(pending))) => {
                let _ = pending.decline(session.driver_mut());
            }
            Ok(LoopStep::Interrupt(LoopInterrupt::ApprovalRequest(pending))) => {
                let mut shared = hosted.lock();
                if !shared.pending.iter().any(|p| p.call.id == pending.call.id) {
                    shared.pending.push(pending);
                }
                shared.phase = Phase::AwaitingApproval;
                hosted
                    .hub
                    .finish_run(&Outcome::Interrupt(summaries(&shared.pending)));
                return true;
            }
            Ok(LoopStep::Interrupt(LoopInterrupt::AwaitingInput(_))) => {
                let mut shared = hosted.lock();
                if !hosted.soft.is_empty() {
                    // Typed as the run ended: the next step sends it.
                    continue;
                }
                shared.phase = Phase::Idle;
                hosted.hub.finish_run(&Outcome::Success);
                return true;
            }
            // A later kind of pause: a cooperative one needs nothing; a
            // blocking one makes the next `next()` fail, which ends the run.
            Ok(LoopStep::Interrupt(_)) => {}
            Err(StoreError::LeaseLost(_)) => {
                hosted
                    .hub
                    .fail_run("this replica lost the session's lease", "lease_lost");
                hosted.lock().phase = Phase::Closed;
                return false;
            }
            Err(err) => {
                let message = err.to_string();
                hosted.hub.fail_run(&message, "agent_error");
                // The transcript stays valid: open calls are answered.
                let _ = session.abandon_turn(message);
                hosted.lock().phase = Phase::Idle;
                return save(session, hosted).await;
            }
        }
    }
}
