//! One live ACP session: a task that owns the `LoopDriver`.
//!
//! The connection's handlers never touch the driver (invariant: `&mut
//! LoopDriver` is the only writer). They reach a session through its
//! [`SessionHandle`]:
//!
//! - `session/prompt` while the session is idle sends the prompt to the task,
//!   which queues it as input and runs a turn;
//! - `session/prompt` while a turn runs pushes the message on the driver's
//!   soft-interrupt queue: the loop injects it at its next safe point, and
//!   the prompt is answered when the turn that took it in ends;
//! - `session/cancel` interrupts the turn through the session's
//!   `CancellationController`; the loop answers open tool calls with
//!   cancellation stubs and the turn ends with `stopReason: cancelled`.
//!   Prompts still waiting in the queue are withdrawn and answered
//!   `cancelled` too, so nothing typed leaks into the next turn.
//!
//! Approvals are asked as `session/request_permission` with three options:
//! allow once, allow always (remembered for the rest of the session, for
//! the request's [`ALWAYS_SCOPE`] when the permission policy set one, else
//! for that tool) and reject. A cancellation while the editor is deciding denies
//! the call and ends the turn.
//!
//! A running tool's question (an MCP server's elicitation) goes to the
//! editor as `elicitation/create` when the editor announced the capability
//! for its mode, and is declined otherwise (see [`crate::elicit`]). A
//! cancellation while the editor is deciding cancels the question.
//!
//! The task drives a [`Drive`]: a bare `LoopDriver`, or (feature `store`) an
//! `agentkit_store::Session`, which saves itself at every step. When the
//! connection ends the task closes it, so a stored session's lease is given
//! up and another process can load it at once.

use crate::SessionModes;
use crate::updates::UpdateSink;
use agent_client_protocol::v1::schema as acp;
use agent_client_protocol::v1::{ConnectionTo, Responder};
use agent_client_protocol::{Client, Error};
use agentkit_core::{CancellationController, FinishReason, Item};
use agentkit_loop::{
    LoopDriver, LoopInterrupt, LoopStep, ModelSession, PendingApproval, PendingQuestion,
};
use agentkit_tools_core::HostAnswer;
use std::collections::HashSet;
use std::future::Future;
use std::sync::{Arc, Mutex};
use tokio::sync::mpsc;

/// What a session's task drives: the loop, saved or not.
pub(crate) trait Drive: Send + 'static {
    /// The model session of the driver.
    type Session: ModelSession;

    /// The driver, to resolve approvals.
    fn driver(&mut self) -> &mut LoopDriver<Self::Session>;

    /// Runs the driver to its next yield point (saving, if stored).
    fn step(&mut self) -> impl Future<Output = Result<LoopStep, String>> + Send;

    /// Ends the session when the connection ends (gives a lease up).
    fn close(self) -> impl Future<Output = ()> + Send;
}

impl<S: ModelSession> Drive for LoopDriver<S>
where
    LoopDriver<S>: Send,
{
    type Session = S;

    fn driver(&mut self) -> &mut LoopDriver<S> {
        self
    }

    async fn step(&mut self) -> Result<LoopStep, String> {
        self.next().await.map_err(|err| err.to_string())
    }

    async fn close(self) {}
}

/// The approval metadata entry (a string) naming what "allow always"
/// covers: later requests with the same value are approved without
/// asking. A permission policy sets it to scope the answer, for example to
/// one program of a shell command (`shell.command:python3`) instead of the
/// whole tool. Without it, "allow always" covers the tool.
pub const ALWAYS_SCOPE: &str = "agentkit.always_scope";

/// The approval metadata entry (a string) saying what the scope covers in
/// words, for the option's label: "Always allow `python3` commands".
pub const ALWAYS_LABEL: &str = "agentkit.always_label";

/// The `_meta` entry of the tool call in a `session/request_permission`:
/// the approval request's summary and kind, for an editor that shows more
/// than the call's title.
pub const APPROVAL_META: &str = "agentkit.approval";

/// What "allow always" remembers for `pending`, and its words.
fn always_scope(pending: &PendingApproval) -> (String, String) {
    let text = |key: &str| {
        pending
            .request
            .metadata
            .get(key)
            .and_then(|value| value.as_str())
            .map(str::to_owned)
    };
    match text(ALWAYS_SCOPE) {
        Some(scope) => {
            let label = text(ALWAYS_LABEL).unwrap_or_else(|| scope.clone());
            (scope, label)
        }
        None => (pending.call.name.clone(), pending.call.name.clone()),
    }
}

/// How many times an editor is asked a question whose form content it
/// answered with content the schema refuses (the first ask included).
pub const QUESTION_ASKS: u32 = 3;

const ALLOW_ONCE: &str = "allow_once";
const ALLOW_ALWAYS: &str = "allow_always";
const REJECT: &str = "reject_once";

/// A prompt and the request to answer when its turn ends.
pub(crate) struct Prompt {
    pub(crate) item: Item,
    pub(crate) responder: Responder<acp::PromptResponse>,
}

/// A turn for the session's task to start.
enum Start {
    /// The prompt is already on the soft-interrupt queue (the idle driver
    /// takes it as its input); it is withdrawn if the turn is cancelled
    /// before it begins.
    Queued {
        id: u64,
        responder: Responder<acp::PromptResponse>,
    },
    /// The prompt arrived while a turn was being cancelled (or behind such
    /// a prompt): it waits here, so the cancelled turn cannot take it in,
    /// and prompts keep their order.
    Deferred(Prompt),
}

/// What the handlers share with a session's task.
pub(crate) struct SessionHandle {
    starts: mpsc::UnboundedSender<Start>,
    shared: Arc<Shared>,
    task: tokio::task::JoinHandle<()>,
}

struct Shared {
    soft: agentkit_loop::SoftInterruptHandle,
    cancel: CancellationController,
    state: Mutex<TurnState>,
    /// The host's modes, and the session's current one.
    modes: Option<SessionModes>,
    mode: Mutex<String>,
    /// The editor's `elicitation` capability: where questions may go.
    elicitation: Option<acp::ElicitationCapabilities>,
}

#[derive(Default)]
struct TurnState {
    /// A turn is running (or about to start).
    running: bool,
    /// `session/cancel` arrived for the running turn.
    cancel_requested: bool,
    /// Prompts that arrived during the turn: their soft-interrupt ids.
    joined: Vec<(u64, Responder<acp::PromptResponse>)>,
    /// `Start::Deferred` prompts sent and not yet taken by the task.
    deferred: usize,
}

impl SessionHandle {
    /// Starts the task that drives `driver`.
    pub(crate) fn spawn<D: Drive>(
        mut driver: D,
        cancel: CancellationController,
        cx: ConnectionTo<Client>,
        updates: Arc<UpdateSink>,
        modes: Option<SessionModes>,
        elicitation: Option<acp::ElicitationCapabilities>,
    ) -> SessionHandle {
        let (starts, receiver) = mpsc::unbounded_channel();
        let mode = modes
            .as_ref()
            .map(|modes| modes.default_mode().to_owned())
            .unwrap_or_default();
        let shared = Arc::new(Shared {
            soft: driver.driver().soft_interrupts(),
            cancel,
            state: Mutex::new(TurnState::default()),
            modes,
            mode: Mutex::new(mode),
            elicitation,
        });
        let runner = Runner {
            driver,
            shared: shared.clone(),
            cx,
            updates,
            always_allowed: HashSet::new(),
        };
        let task = tokio::spawn(runner.run(receiver));
        SessionHandle {
            starts,
            shared,
            task,
        }
    }

    /// Ends the session: cancels a running turn, lets the task finish and
    /// close what it drives.
    pub(crate) async fn shut_down(self) {
        self.cancel();
        drop(self.starts);
        let _ = self.task.await;
    }

    /// Handles `session/prompt`: a new turn, or a soft interrupt of the
    /// running one. The queue is written under the state lock, so prompts
    /// reach the model in the order they arrived.
    pub(crate) fn prompt(&self, prompt: Prompt) -> Result<(), Error> {
        let mut state = self.shared.state.lock().expect("turn state lock");
        let start = if state.cancel_requested || state.deferred > 0 {
            state.deferred += 1;
            Start::Deferred(prompt)
        } else if state.running {
            let id = self.shared.soft.push(prompt.item);
            state.joined.push((id, prompt.responder));
            return Ok(());
        } else {
            state.running = true;
            let id = self.shared.soft.push(prompt.item);
            Start::Queued {
                id,
                responder: prompt.responder,
            }
        };
        drop(state);
        // A send fails only when the task has ended; the dropped responder
        // then answers the request with an error.
        self.starts
            .send(start)
            .map_err(|_| Error::internal_error().data("the session has ended"))
    }

    /// Handles `session/set_mode`: later approvals follow `id`. `false`
    /// when the session has no such mode.
    pub(crate) fn set_mode(&self, id: &str) -> bool {
        match &self.shared.modes {
            Some(modes) if modes.contains(id) => {
                *self.shared.mode.lock().expect("mode lock") = id.to_owned();
                true
            }
            _ => false,
        }
    }

    /// Handles `session/cancel`.
    pub(crate) fn cancel(&self) {
        let joined = {
            let mut state = self.shared.state.lock().expect("turn state lock");
            if !state.running {
                return;
            }
            state.cancel_requested = true;
            self.shared.cancel.interrupt();
            std::mem::take(&mut state.joined)
        };
        for (id, responder) in joined {
            self.shared.soft.withdraw(id);
            let _ = responder.respond(acp::PromptResponse::new(acp::StopReason::Cancelled));
        }
    }
}

struct Runner<D: Drive> {
    driver: D,
    shared: Arc<Shared>,
    cx: ConnectionTo<Client>,
    updates: Arc<UpdateSink>,
    /// Tools the editor allowed for the rest of the session.
    always_allowed: HashSet<String>,
}

/// How a permission request ended.
enum Permission {
    AllowOnce,
    AllowAlways,
    Reject,
    Cancelled,
}

impl<D: Drive> Runner<D> {
    async fn run(mut self, mut starts: mpsc::UnboundedReceiver<Start>) {
        while let Some(start) = starts.recv().await {
            let (queued, responder) = match start {
                Start::Queued { id, responder } => (Some(id), responder),
                Start::Deferred(prompt) => {
                    let mut state = self.shared.state.lock().expect("turn state lock");
                    state.deferred -= 1;
                    if !state.cancel_requested {
                        // An idle driver takes queued messages as its input.
                        self.shared.soft.push(prompt.item);
                    }
                    (None, prompt.responder)
                }
            };
            let mut responders = vec![responder];
            {
                let mut state = self.shared.state.lock().expect("turn state lock");
                state.running = true;
                if state.cancel_requested {
                    // Cancelled before it began: nothing ran, nothing to undo.
                    if let Some(id) = queued {
                        self.shared.soft.withdraw(id);
                    }
                    state.cancel_requested = false;
                    state.running = state.deferred > 0;
                    drop(state);
                    answer(responders, Ok(acp::StopReason::Cancelled));
                    continue;
                }
            }
            let outcome = loop {
                let outcome = self.turn().await;
                let mut state = self.shared.state.lock().expect("turn state lock");
                let cancelled = matches!(outcome, Ok(acp::StopReason::Cancelled));
                if outcome.is_ok() && !cancelled && !self.shared.soft.is_empty() {
                    // A prompt arrived after the turn's last safe point: it
                    // starts the next turn, and its responder waits for it.
                    continue;
                }
                responders.extend(state.joined.drain(..).map(|(_, responder)| responder));
                state.running = state.deferred > 0;
                state.cancel_requested = false;
                break outcome;
            };
            answer(std::mem::take(&mut responders), outcome);
        }
        // The connection ended.
        self.driver.close().await;
    }

    /// Runs the driver until the turn ends.
    async fn turn(&mut self) -> Result<acp::StopReason, Error> {
        loop {
            let step = self.driver.step().await;
            if self.cancel_requested() {
                // A cancel that raced with the turn's start: make sure the
                // turn's own checkpoint sees it.
                self.shared.cancel.interrupt();
            }
            match step {
                Ok(LoopStep::Finished(result)) => return Ok(stop_reason(&result.finish_reason)),
                Ok(LoopStep::Interrupt(LoopInterrupt::AfterToolResult(_))) => continue,
                Ok(LoopStep::Interrupt(LoopInterrupt::AwaitingInput(_))) => {
                    return Ok(acp::StopReason::EndTurn);
                }
                Ok(LoopStep::Interrupt(LoopInterrupt::ApprovalRequest(pending))) => {
                    self.approve(pending).await?;
                }
                Ok(LoopStep::Interrupt(LoopInterrupt::Question(pending))) => {
                    self.question(pending).await?;
                }
                // A later kind of pause: a cooperative one needs nothing;
                // a blocking one makes the next step fail, which ends the
                // turn with an error.
                Ok(LoopStep::Interrupt(_)) => continue,
                Err(err) => {
                    return Err(Error::internal_error().data(err));
                }
            }
        }
    }

    fn cancel_requested(&self) -> bool {
        self.shared
            .state
            .lock()
            .expect("turn state lock")
            .cancel_requested
    }

    /// Puts a tool's question to the editor (when it can show it) and
    /// answers the call with its user's reply. Form content that does not
    /// match the question's schema is not sent: the editor is asked again,
    /// with the reason, up to [`QUESTION_ASKS`] times in all, and then the
    /// question is declined (an editor that keeps sending the same content
    /// must not hold the call forever).
    async fn question(&mut self, pending: PendingQuestion) -> Result<(), Error> {
        let session_id = acp::SessionId::new(self.driver.driver().session_id().as_str());
        let call_id = pending.call.id.clone();
        let mut refused = None;
        let mut ask = 1;
        loop {
            let request = crate::elicit::request(
                session_id.clone(),
                &pending,
                self.shared.elicitation.as_ref(),
                refused.as_ref(),
            );
            let reply = match request {
                Some(request) => match ask_editor(&self.cx, &self.shared, request).await {
                    Some(Ok(response)) => crate::elicit::answer(response),
                    // No answer (the editor failed the request): nothing agreed.
                    Some(Err(_)) => HostAnswer::Decline,
                    // The turn was cancelled while the editor decided.
                    None => HostAnswer::Cancel,
                },
                None => HostAnswer::Decline,
            };
            let driver = self.driver.driver();
            let resolved = match driver.answer_question_for(call_id.clone(), reply) {
                Err(agentkit_loop::LoopError::InvalidState(
                    agentkit_loop::InvalidStateReason::InvalidAnswer { error, .. },
                )) if ask < QUESTION_ASKS => {
                    refused = Some(error);
                    ask += 1;
                    continue;
                }
                // Still no content that fits: the call goes on without it.
                Err(agentkit_loop::LoopError::InvalidState(
                    agentkit_loop::InvalidStateReason::InvalidAnswer { error, .. },
                )) => {
                    tracing::warn!(%error, "the editor's answers do not match the question; declined");
                    driver.answer_question_for(call_id.clone(), HostAnswer::Decline)
                }
                other => other,
            };
            return resolved.map_err(|err| Error::internal_error().data(err.to_string()));
        }
    }

    async fn approve(&mut self, pending: PendingApproval) -> Result<(), Error> {
        let (scope, _) = always_scope(&pending);
        let mode_approves = self.shared.modes.as_ref().is_some_and(|modes| {
            let mode = self.shared.mode.lock().expect("mode lock").clone();
            modes.approves(&mode, &pending.request)
        });
        let permission = if mode_approves || self.always_allowed.contains(&scope) {
            Permission::AllowOnce
        } else {
            let session_id = acp::SessionId::new(self.driver.driver().session_id().as_str());
            ask(
                self.cx.clone(),
                self.shared.clone(),
                self.updates.clone(),
                session_id,
                &pending,
            )
            .await
        };
        let driver = self.driver.driver();
        let resolved = match permission {
            Permission::AllowOnce => pending.approve(driver),
            Permission::AllowAlways => {
                self.always_allowed.insert(scope);
                pending.approve(driver)
            }
            Permission::Reject => pending.deny_with_reason(driver, "the user rejected this call"),
            Permission::Cancelled => {
                pending.deny_with_reason(driver, "the user cancelled the turn")
            }
        };
        resolved.map_err(|err| Error::internal_error().data(err.to_string()))
    }
}

/// Asks the editor, unless the turn is cancelled first.
async fn ask(
    cx: ConnectionTo<Client>,
    shared: Arc<Shared>,
    updates: Arc<UpdateSink>,
    session_id: acp::SessionId,
    pending: &PendingApproval,
) -> Permission {
    let (_, label) = always_scope(pending);
    let options = vec![
        acp::PermissionOption::new(
            ALLOW_ONCE,
            "Allow once",
            acp::PermissionOptionKind::AllowOnce,
        ),
        acp::PermissionOption::new(
            ALLOW_ALWAYS,
            format!("Always allow {label}"),
            acp::PermissionOptionKind::AllowAlways,
        ),
        acp::PermissionOption::new(REJECT, "Reject", acp::PermissionOptionKind::RejectOnce),
    ];
    let mut tool_call = updates.tool_call_update(&pending.call);
    tool_call.meta = Some(
        [(
            APPROVAL_META.to_owned(),
            serde_json::json!({
                "summary": pending.request.summary,
                "kind": pending.request.request_kind,
            }),
        )]
        .into_iter()
        .collect(),
    );
    let request = acp::RequestPermissionRequest::new(session_id, tool_call, options);
    match ask_editor(&cx, &shared, request).await {
        Some(Ok(response)) => match response.outcome {
            acp::RequestPermissionOutcome::Selected(selected) => {
                match selected.option_id.0.as_ref() {
                    ALLOW_ONCE => Permission::AllowOnce,
                    ALLOW_ALWAYS => Permission::AllowAlways,
                    _ => Permission::Reject,
                }
            }
            _ => Permission::Cancelled,
        },
        // No answer (the editor failed the request): refuse.
        Some(Err(_)) => Permission::Reject,
        None => Permission::Cancelled,
    }
}

/// Sends `request` to the editor and waits for its answer; `None` when
/// the turn is cancelled before or meanwhile.
async fn ask_editor<R: agent_client_protocol::JsonRpcRequest>(
    cx: &ConnectionTo<Client>,
    shared: &Shared,
    request: R,
) -> Option<Result<R::Response, Error>> {
    let cancellation = shared.cancel.handle().checkpoint();
    if shared
        .state
        .lock()
        .expect("turn state lock")
        .cancel_requested
    {
        return None;
    }
    let asked = cx.send_request(request).block_task();
    tokio::select! {
        response = asked => Some(response),
        () = cancellation.cancelled() => None,
    }
}

fn stop_reason(reason: &FinishReason) -> acp::StopReason {
    match reason {
        FinishReason::Cancelled => acp::StopReason::Cancelled,
        FinishReason::MaxTokens => acp::StopReason::MaxTokens,
        FinishReason::Blocked => acp::StopReason::Refusal,
        _ => acp::StopReason::EndTurn,
    }
}

fn answer(
    responders: Vec<Responder<acp::PromptResponse>>,
    outcome: Result<acp::StopReason, Error>,
) {
    for responder in responders {
        let _ = match &outcome {
            Ok(stop) => responder.respond(acp::PromptResponse::new(*stop)),
            Err(err) => responder.respond_with_error(err.clone()),
        };
    }
}
