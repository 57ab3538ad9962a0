//! Summaries written by a model.
//!
//! A [`Summarizer`] turns the oldest part of a transcript into a short text.
//! [`ModelSummarizer`] asks any [`ModelAdapter`] (typically a cheaper model
//! than the agent's own) with one plain user message: the items rendered as
//! text, so the summary request never carries tool-call structures that a
//! provider might reject out of their context.

use agentkit_core::{
    Delta, DeltaFolder, Item, ItemKind, MetadataMap, Part, SessionId, ToolOutput, TurnId,
};
use agentkit_loop::{
    ModelAdapter, ModelError, ModelSession, ModelTurn, ModelTurnEvent, SessionConfig,
    TranscriptView, TurnRequest,
};
use std::fmt::Write;

/// Writes a summary of transcript items.
#[async_trait::async_trait]
pub trait Summarizer: Send + Sync {
    /// A summary of `items` (the oldest part of a transcript).
    async fn summarize(&self, items: &[Item]) -> Result<String, ModelError>;
}

/// What the summarizing model is asked.
pub const DEFAULT_SUMMARY_PROMPT: &str = "You are compacting the history of a conversation between a user and a coding agent that uses tools. Summarize the part below so the agent can continue the work without it: the user's goals and constraints, decisions made, files and commands involved, results of tool calls that still matter, and what remains to do. Be concise and factual; use short bullet points. Write only the summary.";

/// The longest rendering of one tool result or argument sent to the
/// summarizer, in bytes; longer ones are cut in the middle.
const MAX_PART_BYTES: usize = 4_000;

/// A [`Summarizer`] backed by a model adapter.
///
/// ```
/// use agentkit_compaction::{CompactionStrategy, CompactionTrigger, Compactor, ModelSummarizer};
/// use agentkit_testkit::{ScriptedModel, ScriptedTurn};
///
/// let cheap_model = ScriptedModel::new([ScriptedTurn::text("- the user wants a CLI")]);
/// let compactor = Compactor::new(CompactionTrigger::Tokens(100_000))
///     .strategy(CompactionStrategy::Summarize)
///     .summarizer(ModelSummarizer::new(cheap_model));
/// # let _ = compactor;
/// ```
pub struct ModelSummarizer<M> {
    model: M,
    prompt: String,
}

impl<M: ModelAdapter> ModelSummarizer<M> {
    /// Summaries from `model` with [`DEFAULT_SUMMARY_PROMPT`].
    pub fn new(model: M) -> Self {
        Self {
            model,
            prompt: DEFAULT_SUMMARY_PROMPT.to_owned(),
        }
    }

    /// Replaces the instructions sent before the items.
    pub fn prompt(mut self, prompt: impl Into<String>) -> Self {
        self.prompt = prompt.into();
        self
    }
}

#[async_trait::async_trait]
impl<M: ModelAdapter> Summarizer for ModelSummarizer<M> {
    async fn summarize(&self, items: &[Item]) -> Result<String, ModelError> {
        let mut session = self
            .model
            .start_session(SessionConfig::new("agentkit-compaction"))
            .await?;
        let message = format!("{}\n\n<history>\n{}</history>", self.prompt, render(items));
        let request = TurnRequest {
            session_id: SessionId::new("agentkit-compaction"),
            turn_id: TurnId::new("summary"),
            transcript: TranscriptView::from_items(vec![Item::user(message)]),
            available_tools: Default::default(),
            metadata: MetadataMap::new(),
            cache: None,
            output_schema: None,
        };
        let mut turn = session.begin_turn(request).await?;
        let mut folder = DeltaFolder::new();
        while let Some(event) = turn.next_event().await? {
            match event {
                ModelTurnEvent::Delta(delta) => apply(&mut folder, &delta)?,
                ModelTurnEvent::Finished(_) => break,
                _ => {}
            }
        }
        let parts = folder.finish_partial();
        let text: String = parts.iter().filter_map(Part::as_text).collect();
        if text.trim().is_empty() {
            return Err(ModelError::new(
                agentkit_loop::ModelErrorKind::Protocol,
                "the summarizer returned no text",
            ));
        }
        Ok(text.trim().to_owned())
    }
}

fn apply(folder: &mut DeltaFolder, delta: &Delta) -> Result<(), ModelError> {
    folder.apply(delta).map_err(|err| {
        ModelError::new(
            agentkit_loop::ModelErrorKind::Protocol,
            format!("malformed summary stream: {err}"),
        )
    })
}

/// The items as plain text, one block per item.
pub(crate) fn render(items: &[Item]) -> String {
    let mut out = String::new();
    for item in items {
        let role = match item.kind {
            ItemKind::System => "system",
            ItemKind::Developer => "developer",
            ItemKind::User => "user",
            ItemKind::Assistant => "assistant",
            ItemKind::Tool => "tool",
            ItemKind::Context => "context",
            _ => "other",
        };
        for part in &item.parts {
            let text = match part {
                Part::Text(text) => text.text.clone(),
                Part::ToolCall(call) => format!("calls {}({})", call.name, call.input),
                Part::ToolResult(result) => {
                    let output = match &result.output {
                        ToolOutput::Text(text) => text.clone(),
                        other => other.to_text(),
                    };
                    let status = if result.is_error { "error" } else { "result" };
                    format!("{status} of {}: {output}", result.call_id)
                }
                Part::Reasoning(_) => continue,
                Part::Media(_) | Part::File(_) => "[attachment]".to_owned(),
                other => format!("{other:?}"),
            };
            let _ = writeln!(out, "[{role}] {}", cut_middle(&text, MAX_PART_BYTES));
        }
    }
    out
}

fn cut_middle(text: &str, max: usize) -> String {
    if text.len() <= max {
        return text.to_owned();
    }
    let mut head = max / 2;
    while !text.is_char_boundary(head) {
        head -= 1;
    }
    let mut tail = text.len() - max / 2;
    while !text.is_char_boundary(tail) {
        tail += 1;
    }
    format!(
        "{} [... {} bytes cut ...] {}",
        &text[..head],
        tail - head,
        &text[tail..]
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn long_parts_are_cut_on_char_boundaries() {
        let text = "é".repeat(5_000);
        let cut = cut_middle(&text, 101);
        assert!(cut.contains("bytes cut"));
        assert!(cut.len() < 200);
    }
}
