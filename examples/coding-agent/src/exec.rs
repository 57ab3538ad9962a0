//! `coding-agent exec`: one turn for scripts and CI, without a terminal.
//!
//! Shell scripts, CI jobs and other programs drive the agent the way they
//! drive any command: the prompt is an argument (or standard input), the
//! final answer comes out on standard output, progress (the terminal's view,
//! as plain lines) on standard error, and the exit code says how the turn
//! ended ([`Outcome`]). With `--json` standard output carries every loop
//! event as a JSON line and a last `exec_finished` line instead.
//!
//! Nobody is there to answer an approval: the [`ApprovalMode`] approves
//! what it covers and everything else is denied, with a reason the model
//! reads (it may still answer, but the exit code reports the denial).
//! Nor is anyone there to answer a tool's question (an MCP server's
//! elicitation): it is declined, noted on standard error and, with
//! `--json`, as a `question` event line.
//! `--output-schema` asks the model for structured output and checks the
//! answer against the schema before it counts as done.

use crate::app::{AppError, agent_builder};
use crate::context::{ContextControl, ContextKeeper};
use crate::diagnose;
use crate::policy::{ApprovalMode, SessionAllowList};
use crate::screen::{Line, Look, Screen};
use crate::sessions::Sessions;
use crate::view::View;
use agentkit_core::{CancellationController, FinishReason, Item, ItemKind, Usage};
use agentkit_loop::{
    LoopInterrupt, LoopObserver, LoopStep, ModelAdapter, ModelSession, OutputSchema, TurnResult,
};
use agentkit_mcp::McpServerManager;
use agentkit_reporting::JsonlReporter;
use agentkit_store::{Session, StoreError};
use serde_json::{Value, json};
use std::io::Write;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};

/// What one `exec` run needs besides the model.
pub struct Exec {
    /// The directory the tools work in.
    pub workspace: PathBuf,
    /// The user's message.
    pub prompt: String,
    /// Which approvals are given; the rest are denied.
    pub approval: ApprovalMode,
    /// Events as JSON lines on standard output.
    pub json: bool,
    /// The JSON schema the final answer must match.
    pub output_schema: Option<Value>,
    /// Model calls before the turn stops.
    pub max_steps: u32,
    /// The model's context window in tokens.
    pub window: usize,
    /// The server's base URL, when one is configured.
    pub base_url: Option<String>,
    /// Where the session is saved (in memory for the demo).
    pub sessions: Sessions,
    /// Connected MCP servers.
    pub mcp: Option<McpServerManager>,
    /// Another observer (the demo's director).
    pub observer: Option<Arc<dyn LoopObserver>>,
}

/// How an `exec` run ended; each has its own exit code.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum Outcome {
    /// The turn completed: exit code 0.
    Completed,
    /// The turn failed: a provider error, an answer cut short or refused.
    Failed,
    /// The step limit (`--max-steps` model calls) ended the turn.
    StepLimit,
    /// A tool call needed an approval the mode does not give.
    Denied,
    /// The answer is not JSON matching `--output-schema`.
    SchemaMismatch,
    /// SIGINT cancelled the turn.
    Interrupted,
}

impl Outcome {
    /// The process exit code (2 is taken by usage and set-up errors).
    pub fn exit_code(self) -> u8 {
        match self {
            Self::Completed => 0,
            Self::Failed => 1,
            Self::StepLimit => 3,
            Self::Denied => 4,
            Self::SchemaMismatch => 5,
            Self::Interrupted => 130,
        }
    }

    /// The name in the `exec_finished` JSON line.
    pub fn name(self) -> &'static str {
        match self {
            Self::Completed => "completed",
            Self::Failed => "failed",
            Self::StepLimit => "step_limit",
            Self::Denied => "denied",
            Self::SchemaMismatch => "schema_mismatch",
            Self::Interrupted => "interrupted",
        }
    }
}

/// The schema of `--output-schema FILE`, read and checked to be JSON.
pub fn read_schema(path: &std::path::Path) -> Result<Value, String> {
    let text = std::fs::read_to_string(path)
        .map_err(|error| format!("cannot read {}: {error}", path.display()))?;
    let schema: Value = serde_json::from_str(&text)
        .map_err(|error| format!("{} is not JSON: {error}", path.display()))?;
    if !schema.is_object() {
        return Err(format!("{} is not a JSON schema object", path.display()));
    }
    Ok(schema)
}

/// Runs one turn and reports it; the outcome gives the exit code.
pub async fn run<M: ModelAdapter + Clone + 'static>(
    model: M,
    exec: Exec,
) -> Result<Outcome, AppError> {
    let screen = Arc::new(Mutex::new(Screen::plain_stderr()));
    let note = |text: String, look: Look| {
        screen
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .line(Line::new(text, look));
    };
    let controller = CancellationController::new();
    let view = Arc::new(View::new(screen.clone()));
    let keeper = ContextKeeper::new(model.clone(), exec.window, ContextControl::default());
    let mut builder = agent_builder(
        model,
        &exec.workspace,
        SessionAllowList::default(),
        exec.mcp.as_ref(),
        keeper,
    )
    .cancellation(controller.handle())
    .max_model_calls(exec.max_steps)
    .observer_arc(view.clone());
    if exec.json {
        builder = builder.observer_arc(Arc::new(JsonlReporter::new(std::io::stdout())));
    }
    if let Some(schema) = &exec.output_schema {
        builder = builder.output_schema(OutputSchema::new("final_answer", schema.clone()));
    }
    if let Some(observer) = exec.observer.clone() {
        builder = builder.observer_arc(observer);
    }
    let lease = exec.sessions.create(&exec.workspace).await?;
    let agent = lease.record(builder).build()?;
    let mut driver = lease.open(&agent).await?;
    let session_id = driver.session_id().to_string();
    note(
        format!(
            "approval mode {}: {}",
            exec.approval.name(),
            exec.approval.describe()
        ),
        Look::Dim,
    );

    let mut turn = Turn {
        prompt: Some(exec.prompt.clone()),
        base_url: exec.base_url.clone(),
        window: exec.window,
        denied: 0,
        questions_declined: 0,
        json: exec.json,
        interrupted: false,
        error: None,
    };
    let result = turn
        .drive(&mut driver, &controller, exec.approval, &note)
        .await;
    if result.is_none() {
        view.cut_answer();
    }
    if let Err(error) = driver.close().await {
        note(
            format!("the session was not closed cleanly: {error}"),
            Look::Bad,
        );
    }
    if let Some(manager) = &exec.mcp {
        manager.disconnect_all().await;
    }
    screen.lock().unwrap_or_else(|e| e.into_inner()).close();

    let answer = result.as_ref().map(final_answer).unwrap_or_default();
    let (outcome, why, output) = judge(&turn, result.as_ref(), &answer, &exec);
    if let Some(why) = &why {
        note(format!("coding-agent exec: {why}"), Look::Bad);
    }
    let mut out = std::io::stdout().lock();
    if exec.json {
        let usage = result.as_ref().map(|r| r.usage.clone()).unwrap_or_default();
        let line = json!({
            "event": "exec_finished",
            "outcome": outcome.name(),
            "exit_code": outcome.exit_code(),
            "finish_reason": result.as_ref().map(|r| &r.finish_reason),
            "answer": answer,
            "output": output,
            "error": why,
            "denied": turn.denied,
            "questions_declined": turn.questions_declined,
            "usage": usage_json(&usage),
            "session_id": session_id,
        });
        let _ = writeln!(out, "{line}");
    } else if !answer.is_empty() {
        let _ = writeln!(out, "{}", answer.trim_end());
    }
    let _ = out.flush();
    Ok(outcome)
}

/// The state of the one turn.
struct Turn {
    prompt: Option<String>,
    base_url: Option<String>,
    window: usize,
    denied: u32,
    /// Questions of tools declined (nobody to ask).
    questions_declined: u32,
    /// `--json`: each declined question is an event line too.
    json: bool,
    interrupted: bool,
    error: Option<String>,
}

impl Turn {
    /// Pulls the driver until the turn ends: the prompt goes in, approvals
    /// are answered by `mode`, SIGINT cancels. `None` when `next()` failed.
    async fn drive<S: ModelSession>(
        &mut self,
        driver: &mut Session<S>,
        controller: &CancellationController,
        mode: ApprovalMode,
        note: &impl Fn(String, Look),
    ) -> Option<TurnResult> {
        loop {
            let step = match self.step(driver, controller).await {
                Ok(step) => step,
                Err(error) => {
                    let (cause, detail) =
                        diagnose::describe(&error, driver, self.base_url.as_deref(), self.window);
                    self.error = Some(match detail {
                        Some(detail) => format!("{cause} ({detail})"),
                        None => cause,
                    });
                    return None;
                }
            };
            match step {
                LoopStep::Interrupt(LoopInterrupt::AwaitingInput(request)) => {
                    // After the turn, the loop waits for input: never here,
                    // as `Finished` comes first, but nothing more to send.
                    let text = self.prompt.take()?;
                    note(format!("> {text}"), Look::Bold);
                    if let Err(error) = request.submit(driver, vec![Item::user(text)]) {
                        self.error = Some(error.to_string());
                        return None;
                    }
                }
                LoopStep::Interrupt(LoopInterrupt::ApprovalRequest(pending)) => {
                    let resolved = if mode.approves(&pending.request) {
                        note(format!("  approved ({})", mode.name()), Look::Dim);
                        pending.approve(driver)
                    } else {
                        self.denied += 1;
                        note(
                            format!(
                                "  denied: --approval {} does not cover this (see --help)",
                                mode.name()
                            ),
                            Look::Warn,
                        );
                        pending.deny_with_reason(
                            driver,
                            format!(
                                "not approved: the agent runs unattended with approval mode `{}`, \
                                 which does not allow this; do without it or say what is needed",
                                mode.name()
                            ),
                        )
                    };
                    if let Err(error) = resolved {
                        self.error = Some(error.to_string());
                        return None;
                    }
                }
                // Nobody to ask in exec mode: a tool's question (an MCP
                // server's elicitation) is declined, and said so.
                LoopStep::Interrupt(LoopInterrupt::Question(pending)) => {
                    self.questions_declined += 1;
                    let who = match pending.question.source.as_str() {
                        "" => format!("the tool {}", pending.call.name),
                        source => format!("MCP server {source}"),
                    };
                    note(
                        format!(
                            "  declined a question from {who} (exec mode asks nobody): {}",
                            pending.question.message
                        ),
                        Look::Warn,
                    );
                    if self.json {
                        let line = json!({
                            "event": "question",
                            "call_id": pending.call.id.as_str(),
                            "tool": pending.call.name,
                            "question": pending.question,
                            "answer": "declined",
                        });
                        let mut out = std::io::stdout().lock();
                        let _ = writeln!(out, "{line}");
                        let _ = out.flush();
                    }
                    if let Err(error) = pending.decline(driver) {
                        self.error = Some(error.to_string());
                        return None;
                    }
                }
                LoopStep::Interrupt(LoopInterrupt::AfterToolResult(_)) => {}
                LoopStep::Interrupt(other) if other.is_blocking() => {
                    self.error = Some(format!("cannot answer {other:?}"));
                    return None;
                }
                LoopStep::Interrupt(_) => {}
                LoopStep::Finished(result) => return Some(result),
            }
        }
    }

    /// One `next()`, cancelled by SIGINT.
    async fn step<S: ModelSession>(
        &mut self,
        driver: &mut Session<S>,
        controller: &CancellationController,
    ) -> Result<LoopStep, StoreError> {
        let next = driver.next();
        tokio::pin!(next);
        loop {
            tokio::select! {
                step = &mut next => return step,
                signal = tokio::signal::ctrl_c(), if !self.interrupted => {
                    if signal.is_ok() {
                        self.interrupted = true;
                        controller.interrupt();
                    }
                }
            }
        }
    }
}

/// The outcome, why it is not `Completed`, and the structured output.
fn judge(
    turn: &Turn,
    result: Option<&TurnResult>,
    answer: &str,
    exec: &Exec,
) -> (Outcome, Option<String>, Option<Value>) {
    let Some(result) = result else {
        let why = turn
            .error
            .clone()
            .unwrap_or_else(|| "the turn failed".into());
        return (Outcome::Failed, Some(why), None);
    };
    let failed = |why: String| (Outcome::Failed, Some(why), None);
    match &result.finish_reason {
        FinishReason::Completed => {}
        FinishReason::Cancelled if turn.interrupted => {
            return (Outcome::Interrupted, Some("interrupted".into()), None);
        }
        FinishReason::StepLimit => {
            return (
                Outcome::StepLimit,
                Some(format!(
                    "the step limit ({} model calls) ended the turn; raise --max-steps",
                    exec.max_steps
                )),
                None,
            );
        }
        FinishReason::MaxTokens => {
            return failed("the answer was cut at the output token limit".into());
        }
        FinishReason::Blocked => return failed("the provider refused to answer".into()),
        other => return failed(format!("the turn ended with {other:?}")),
    }
    if turn.denied > 0 {
        let why = format!(
            "{} tool call(s) needed an approval that --approval {} does not give",
            turn.denied,
            exec.approval.name()
        );
        return (Outcome::Denied, Some(why), None);
    }
    let Some(schema) = &exec.output_schema else {
        return (Outcome::Completed, None, None);
    };
    let value = match serde_json::from_str::<Value>(answer.trim()) {
        Ok(value) => value,
        Err(error) => {
            let why = format!("the answer is not JSON ({error})");
            return (Outcome::SchemaMismatch, Some(why), None);
        }
    };
    match agentkit_tools_core::validate_input(schema, &value) {
        Ok(()) => (Outcome::Completed, None, Some(value)),
        Err(errors) => {
            let why = format!("the answer does not match --output-schema: {errors}");
            (Outcome::SchemaMismatch, Some(why), Some(value))
        }
    }
}

/// The text of the turn's last assistant message.
fn final_answer(result: &TurnResult) -> String {
    result
        .items
        .iter()
        .rev()
        .filter(|item| item.kind == ItemKind::Assistant)
        .map(Item::text_content)
        .find(|text| !text.trim().is_empty())
        .unwrap_or_default()
}

/// Token counts, `null` where the server reported none.
fn usage_json(usage: &Usage) -> Value {
    let known = |n: u64, reported: bool| reported.then_some(n);
    let reported = usage.tokens.input_tokens > 0 || usage.tokens.output_tokens > 0;
    json!({
        "input_tokens": known(usage.tokens.input_tokens, reported),
        "output_tokens": known(usage.tokens.output_tokens, reported),
        "cost_usd": usage.cost.as_ref().filter(|c| c.currency == "USD").map(|c| c.amount),
    })
}
