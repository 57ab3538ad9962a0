//! A human-readable reporter for terminals.

use agentkit_core::Delta;
use agentkit_loop::{AgentEvent, LoopObserver};
use std::io::Write;
use std::sync::Mutex;

/// Writes the model's text as it streams, one line per tool call and result,
/// warnings, and usage at the end of each turn; a sub-agent's lines are
/// indented by its depth and carry its name.
///
/// [`TerminalReporter::stderr`] is what a command-line agent registers;
/// any writer works, here a buffer read back after the turn.
///
/// ```
/// use agentkit_core::Item;
/// use agentkit_loop::{Agent, LoopStep, SessionConfig};
/// use agentkit_reporting::TerminalReporter;
/// use agentkit_testkit::{ScriptedModel, ScriptedTurn};
/// use std::sync::Arc;
///
/// # tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap().block_on(async {
/// let reporter = Arc::new(TerminalReporter::new(Vec::new()).with_max_result_chars(80));
/// let agent = Agent::builder()
///     .model(ScriptedModel::new([ScriptedTurn::new()
///         .say_chunks(&["Hello, ", "world."])
///         .finish(agentkit_core::FinishReason::Completed)]))
///     .observer_arc(reporter.clone())
///     .input(vec![Item::user("hi")])
///     .build()?;
/// let mut driver = agent.start(SessionConfig::new("demo")).await?;
/// assert!(matches!(driver.next().await?, LoopStep::Finished(_)));
///
/// drop((driver, agent)); // they hold the other references
/// let reporter = Arc::into_inner(reporter).unwrap();
/// let shown = String::from_utf8(reporter.into_inner()).unwrap();
/// assert!(shown.contains("Hello, world."));
/// # Ok::<(), agentkit_loop::LoopError>(())
/// # }).unwrap();
/// ```
pub struct TerminalReporter<W: Write + Send = std::io::Stderr> {
    out: Mutex<W>,
    max_result_chars: usize,
}

impl TerminalReporter<std::io::Stderr> {
    /// A reporter writing to stderr, so stdout stays free for the answer.
    pub fn stderr() -> Self {
        Self::new(std::io::stderr())
    }
}

impl<W: Write + Send> TerminalReporter<W> {
    /// A reporter writing to `out`.
    pub fn new(out: W) -> Self {
        Self {
            out: Mutex::new(out),
            max_result_chars: 200,
        }
    }

    /// How much of each tool result to show (default 200 characters).
    pub fn with_max_result_chars(mut self, max: usize) -> Self {
        self.max_result_chars = max;
        self
    }

    /// The writer back, with everything reported so far.
    pub fn into_inner(self) -> W {
        self.out.into_inner().unwrap_or_else(|e| e.into_inner())
    }

    fn line(&self, event: &AgentEvent) -> Option<String> {
        Some(match event {
            AgentEvent::ContentDelta {
                delta: Delta::AppendText { chunk, .. },
            } => return Some(chunk.to_string()),
            AgentEvent::ContentDelta {
                delta: Delta::CommitPart { .. },
            } => "\n".to_owned(),
            AgentEvent::ToolCallRequested { call } => format!("→ {} {}\n", call.name, call.input),
            AgentEvent::ToolResultReceived { result } => {
                let text = result.output.to_text();
                let shown: String = text.chars().take(self.max_result_chars).collect();
                let more = if shown.len() < text.len() { "…" } else { "" };
                let mark = if result.is_error { "✗" } else { "←" };
                format!("{mark} {}: {shown}{more}\n", result.call_id)
            }
            AgentEvent::ApprovalRequired { request } => {
                format!("? approval needed: {}\n", request.summary)
            }
            AgentEvent::SoftInterruptInjected {
                point,
                skipped_tools,
                ..
            } => {
                format!("↳ your message was added ({point:?}, {skipped_tools} tools skipped)\n")
            }
            AgentEvent::Warning { message } => format!("warning: {message}\n"),
            AgentEvent::RunFailed { message } => format!("error: {message}\n"),
            AgentEvent::TurnFinished { result } => {
                let tokens = &result.usage.tokens;
                format!(
                    "[{:?}; {} in / {} out tokens]\n",
                    result.finish_reason, tokens.input_tokens, tokens.output_tokens
                )
            }
            // A sub-agent's lines, indented by depth and named; its
            // streamed text would interleave with its parent's, so only
            // its calls, results, approvals and end show.
            AgentEvent::SubAgent {
                agent,
                depth,
                inner,
                ..
            } => {
                if matches!(**inner, AgentEvent::ContentDelta { .. }) {
                    return None;
                }
                let line = self.line(inner)?;
                format!("{}[{agent}] {line}", "  ".repeat(*depth as usize))
            }
            _ => return None,
        })
    }
}

impl<W: Write + Send> LoopObserver for TerminalReporter<W> {
    fn handle_event(&self, event: AgentEvent) {
        if let Some(text) = self.line(&event) {
            let mut out = self.out.lock().unwrap_or_else(|e| e.into_inner());
            // A closed terminal must not stop the agent.
            let _ = out.write_all(text.as_bytes());
            let _ = out.flush();
        }
    }
}
