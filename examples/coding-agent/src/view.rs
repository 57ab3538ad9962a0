//! What the loop's events look like on the screen.
//!
//! [`View`] is a `LoopObserver`: streamed answer text goes to the screen as
//! it arrives (reasoning dimmed), each tool call is shown with its arguments
//! summarised, the spinner names the call that runs, and each result is
//! summarised in one line. Injected steering messages say where they went.
//!
//! The spinner names the call the loop reported as started (`ToolStarted`)
//! and shows what a long tool reports (`ToolProgress`); between events it
//! falls back to the first call of the round without a result.

use crate::screen::{Line, Look, Screen};
use crate::sessions::shorten;
use agentkit_core::{Delta, Item, PartId, PartKind, ToolCallPart, ToolResultPart};
use agentkit_loop::{AgentEvent, LoopObserver, SoftInterruptPoint};
use serde_json::Value;
use std::collections::{HashSet, VecDeque};
use std::sync::{Arc, Mutex};

#[derive(Default)]
struct State {
    reasoning: HashSet<PartId>,
    /// Calls of the round without a result, in call order.
    waiting: VecDeque<ToolCallPart>,
    /// Between `ModelCallStarted` and `TurnFinished`.
    turn_running: bool,
    /// Parts whose text is on screen but not committed: a failed call
    /// leaves them cut off.
    uncommitted: HashSet<PartId>,
}

/// Renders loop events on the screen.
pub struct View {
    screen: Arc<Mutex<Screen>>,
    state: Mutex<State>,
}

impl View {
    /// A view on `screen`.
    pub fn new(screen: Arc<Mutex<Screen>>) -> Self {
        Self {
            screen,
            state: Mutex::new(State::default()),
        }
    }

    /// Forgets calls that will not run (after a cancellation or an error).
    pub fn reset_round(&self) {
        self.lock().waiting.clear();
    }

    /// Marks streamed text of a model call that failed as cut off, so the
    /// error and the retried answer are printed below it, not merged.
    pub fn cut_answer(&self) {
        let mut state = self.lock();
        if state.uncommitted.is_empty() {
            return;
        }
        state.uncommitted.clear();
        state.reasoning.clear();
        let mut screen = self.screen.lock().unwrap_or_else(|e| e.into_inner());
        screen.end_stream();
        screen.line(Line::new(
            "  ✂ cut off here: the stream broke, this partial answer is not kept",
            Look::Warn,
        ));
    }

    /// Whether a turn has started and not yet finished.
    pub fn turn_running(&self) -> bool {
        self.lock().turn_running
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }
}

impl LoopObserver for View {
    fn handle_event(&self, event: AgentEvent) {
        let mut state = self.lock();
        let mut screen = self.screen.lock().unwrap_or_else(|e| e.into_inner());
        match event {
            AgentEvent::ModelCallStarted { .. } => {
                state.turn_running = true;
                state.waiting.clear();
                screen.set_activity(Some("thinking".into()));
            }
            AgentEvent::ContentDelta { delta } => match delta {
                Delta::BeginPart {
                    part_id,
                    kind: PartKind::Reasoning,
                } => {
                    state.reasoning.insert(part_id);
                }
                Delta::AppendText { part_id, chunk } => {
                    let dim = state.reasoning.contains(&part_id);
                    screen.stream(&chunk, dim);
                    state.uncommitted.insert(part_id);
                }
                Delta::CommitPart { part_id } => {
                    state.reasoning.remove(&part_id);
                    state.uncommitted.remove(&part_id);
                    screen.end_stream();
                }
                _ => {}
            },
            AgentEvent::ToolCallRequested { call } => {
                screen.end_stream();
                screen.line(
                    Line::new("● ", Look::Accent)
                        .and(call.name.to_string(), Look::Accent)
                        .and(format!(" {}", summarize_arguments(&call)), Look::Plain),
                );
                if state.waiting.is_empty() {
                    screen.relabel_activity(running_label(&call));
                }
                state.waiting.push_back(call);
            }
            AgentEvent::ApprovalResolved { .. } => {
                if let Some(call) = state.waiting.front() {
                    screen.set_activity(Some(running_label(call)));
                }
            }
            AgentEvent::ToolStarted { call_id, .. } => {
                if let Some(call) = state.waiting.iter().find(|c| c.id == call_id) {
                    screen.set_activity(Some(running_label(call)));
                }
            }
            AgentEvent::ToolProgress { call_id, progress } => {
                if let Some(call) = state.waiting.iter().find(|c| c.id == call_id) {
                    let done = progress
                        .fraction
                        .map(|f| format!(" {:.0}%", f * 100.0))
                        .unwrap_or_default();
                    screen.relabel_activity(format!(
                        "{} — {}{done}",
                        running_label(call),
                        shorten(&progress.message, 40)
                    ));
                }
            }
            AgentEvent::ToolResultReceived { result } => {
                state.waiting.retain(|c| c.id != result.call_id);
                screen.line(result_line(&result));
                match state.waiting.front() {
                    Some(next) => screen.set_activity(Some(running_label(next))),
                    None => screen.set_activity(Some("thinking".into())),
                }
            }
            AgentEvent::SoftInterruptInjected {
                point,
                item,
                skipped_tools,
                ..
            } => {
                let ids = item
                    .metadata
                    .get(agentkit::core::keys::SOFT_INTERRUPT_IDS)
                    .and_then(Value::as_array)
                    .map(|ids| {
                        ids.iter()
                            .map(|id| format!("#{id}"))
                            .collect::<Vec<_>>()
                            .join(", ")
                    })
                    .unwrap_or_default();
                let place = match point {
                    SoftInterruptPoint::AfterTools => "after the tool round".to_owned(),
                    SoftInterruptPoint::BetweenTools => {
                        format!("mid-round, {skipped_tools} remaining tool call(s) skipped")
                    }
                    SoftInterruptPoint::TurnComplete => "when the model finished".to_owned(),
                    _ => format!("{point:?}"),
                };
                screen.end_stream();
                // Several queued messages arrive as one item: one line each.
                let messages = message_texts(&item);
                if let [one] = messages.as_slice() {
                    screen.line(
                        Line::new(format!("↳ injected {ids} {place}: "), Look::Accent)
                            .and(shorten(one, 60), Look::Plain),
                    );
                } else {
                    let mut lines = vec![Line::new(
                        format!("↳ injected {ids} {place}:"),
                        Look::Accent,
                    )];
                    lines.extend(
                        messages.iter().map(|text| {
                            Line::new(format!("    {}", shorten(text, 60)), Look::Plain)
                        }),
                    );
                    screen.lines(&lines);
                }
            }
            AgentEvent::Warning { message } => {
                screen.end_stream();
                screen.line(Line::new(format!("warning: {message}"), Look::Warn));
            }
            AgentEvent::CompactionApplied {
                items_before,
                items_after,
                report,
                ..
            } => {
                screen.end_stream();
                let what = match report.strategy.as_str() {
                    "clear" => "conversation cleared".to_owned(),
                    "summarize" => "conversation summarized".to_owned(),
                    other => format!("conversation compacted ({other})"),
                };
                screen.line(Line::new(
                    format!(
                        "⇣ {what}: {items_before} → {items_after} items, ~{} → ~{} tokens",
                        report.tokens_before, report.tokens_after
                    ),
                    Look::Accent,
                ));
            }
            AgentEvent::TurnFinished { .. } => {
                state.turn_running = false;
                screen.end_stream();
                screen.set_activity(None);
            }
            _ => {}
        }
    }
}

/// The texts of a message, one per text part: the queued messages merged
/// into one user item stay apart.
pub fn message_texts(item: &Item) -> Vec<String> {
    item.parts
        .iter()
        .filter_map(|part| part.as_text())
        .filter(|text| !text.trim().is_empty())
        .map(str::to_owned)
        .collect()
}

fn running_label(call: &ToolCallPart) -> String {
    format!("{} {}", call.name, summarize_arguments(call))
}

/// The arguments of a call in a few words.
pub fn summarize_arguments(call: &ToolCallPart) -> String {
    let input = call.input.to_value();
    let text = |key: &str| input.get(key).and_then(Value::as_str);
    let summary = match &*call.name {
        "shell_exec" => text("command").map(|c| format!("$ {c}")),
        "fs_search" => text("pattern").map(|p| format!("{p:?}")),
        "fs_move" => match (text("from"), text("to")) {
            (Some(from), Some(to)) => Some(format!("{from} → {to}")),
            _ => None,
        },
        _ => text("path").map(str::to_owned),
    };
    let summary = summary.unwrap_or_else(|| input.to_string());
    shorten(&summary, 70)
}

/// A tool result in one line.
pub fn result_line(result: &ToolResultPart) -> Line {
    let text = result.output.to_text();
    let (mark, look) = if result.is_error {
        ("  ✗ ", Look::Bad)
    } else {
        ("  ✓ ", Look::Good)
    };
    Line::new(mark, look).and(summarize_output(&text), Look::Dim)
}

/// Output in one line: for shell commands the exit code and the last line
/// printed, otherwise the first line and how many more there are.
pub fn summarize_output(text: &str) -> String {
    let lines: Vec<&str> = text.lines().filter(|l| !l.trim().is_empty()).collect();
    if let Some(code) = text
        .lines()
        .next()
        .and_then(|l| l.strip_prefix("exit code: "))
    {
        let last = lines
            .iter()
            .rev()
            .find(|l| !matches!(l.trim(), "stdout:" | "stderr:") && !l.starts_with("exit code"))
            .map(|l| l.trim())
            .unwrap_or("");
        return shorten(&format!("exit code {code} · {last}"), 80);
    }
    match lines.as_slice() {
        [] => "(no output)".into(),
        [one] => shorten(one.trim(), 80),
        [first, rest @ ..] => format!("{} (+{} lines)", shorten(first.trim(), 70), rest.len()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn summaries() {
        let call = |name: &str, input| ToolCallPart::new("c1", name, input);
        assert_eq!(
            summarize_arguments(&call(
                "shell_exec",
                json!({"command": "python3 -m unittest"})
            )),
            "$ python3 -m unittest"
        );
        assert_eq!(
            summarize_arguments(&call("fs_read_file", json!({"path": "calc.py"}))),
            "calc.py"
        );
        assert_eq!(
            summarize_arguments(&call("mcp_x_echo", json!({"message": "hi"}))),
            r#"{"message":"hi"}"#
        );
        assert_eq!(
            summarize_output("exit code: 1\nstdout:\n\nstderr:\nF..\nFAILED (failures=1)\n"),
            "exit code 1 · FAILED (failures=1)"
        );
        assert_eq!(summarize_output("a\nb\nc"), "a (+2 lines)");
        assert_eq!(summarize_output(""), "(no output)");
    }
}
