//! Keeping the conversation inside the model's context window, so a long
//! session is never a dead end.
//!
//! [`ContextKeeper`] is the loop mutator the coding agent always runs: an
//! `agentkit-compaction` [`Compactor`] that summarizes the oldest part of
//! the conversation with the session's own model when the transcript
//! passes 80% of the model's window, and that the loop runs in forced mode
//! (then retries once) when the provider still refuses a request as too
//! long. `/compact` and `/clear` ask it, through a [`ContextControl`], to
//! summarize now or to start afresh before the next model call.

use agentkit_compaction::{
    CompactionStrategy, CompactionTrigger, Compactor, ModelSummarizer, WINDOW_FRACTION,
    context_window, estimate_tokens,
};
use agentkit_core::{Item, ItemKind};
use agentkit_loop::{
    CompactionReport, LoopMutator, ModelAdapter, MutateError, MutationContext, MutationPoint,
    Rewrite, TranscriptView,
};
use std::sync::{Arc, Mutex};

/// The window assumed when neither the configuration nor the model's name
/// gives one: small enough for local servers, which often run 4–8k.
pub const FALLBACK_WINDOW: usize = 8_192;

/// The demo's window: large, so its scripted model is never asked for a
/// summary it has no script for.
pub const DEMO_WINDOW: usize = 1_000_000;

/// What the user asked for at the prompt.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Request {
    Compact,
    Clear,
}

/// The handle `/compact` and `/clear` use; shared with the mutator.
#[derive(Clone, Debug, Default)]
pub struct ContextControl {
    pending: Arc<Mutex<Option<Request>>>,
}

impl ContextControl {
    /// Summarizes the conversation before the next model call.
    pub fn compact(&self) {
        *self.lock() = Some(Request::Compact);
    }

    /// Drops the conversation (the system prompt stays) before the next
    /// model call; the message that starts it is kept.
    pub fn clear(&self) {
        *self.lock() = Some(Request::Clear);
    }

    fn take(&self) -> Option<Request> {
        self.lock().take()
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Option<Request>> {
        self.pending.lock().unwrap_or_else(|e| e.into_inner())
    }
}

/// The model's context window: `configured` (`AGENTKIT_CONTEXT_WINDOW`),
/// else what the agentkit table knows of `model`, else [`FALLBACK_WINDOW`].
pub fn window_for(model: &str, configured: Option<usize>) -> usize {
    configured
        .or_else(|| context_window(model))
        .unwrap_or(FALLBACK_WINDOW)
}

/// The coding agent's compaction mutator.
pub struct ContextKeeper {
    compactor: Compactor,
    control: ContextControl,
}

impl ContextKeeper {
    /// Summarizes with `model` past 80% of `window` tokens.
    pub fn new<M: ModelAdapter + 'static>(
        model: M,
        window: usize,
        control: ContextControl,
    ) -> Self {
        let limit = (window as f64 * WINDOW_FRACTION) as usize;
        let compactor = Compactor::new(CompactionTrigger::Tokens(limit.max(1)))
            .keep_recent(6)
            .strategy(CompactionStrategy::Summarize)
            .summarizer(ModelSummarizer::new(model));
        Self { compactor, control }
    }
}

#[async_trait::async_trait]
impl LoopMutator for ContextKeeper {
    fn name(&self) -> &str {
        "compaction"
    }

    async fn mutate(
        &self,
        ctx: &MutationContext,
        transcript: TranscriptView,
    ) -> Result<Option<Vec<Item>>, MutateError> {
        Ok(self.rewrite(ctx, transcript).await?.map(|r| r.items))
    }

    async fn rewrite(
        &self,
        ctx: &MutationContext,
        transcript: TranscriptView,
    ) -> Result<Option<Rewrite>, MutateError> {
        let items = transcript.to_vec();
        // Requests wait for the next model call, where the new message is
        // already in and no tool call is open.
        let request = match ctx.point {
            MutationPoint::BeforeModelCall => self.control.take(),
            _ => None,
        };
        Ok(match request {
            Some(Request::Clear) => cleared(&items),
            Some(Request::Compact) => {
                let forced = ctx.clone().with_forced(true);
                self.compactor.compact_for(&forced, &items).await
            }
            None => self.compactor.compact_for(ctx, &items).await,
        })
    }
}

/// The transcript without its conversation: the leading system items and
/// the trailing user messages (the one that starts the next turn).
fn cleared(items: &[Item]) -> Option<Rewrite> {
    let is_head = |item: &&Item| matches!(item.kind, ItemKind::System | ItemKind::Developer);
    let head = items.iter().take_while(is_head).count();
    let tail = items[head..]
        .iter()
        .rev()
        .take_while(|item| item.kind == ItemKind::User)
        .count();
    let kept: Vec<Item> = items[..head]
        .iter()
        .chain(&items[items.len() - tail..])
        .cloned()
        .collect();
    if kept.len() == items.len() {
        return None;
    }
    let report = CompactionReport {
        strategy: "clear".into(),
        tokens_before: estimate_tokens(items),
        tokens_after: estimate_tokens(&kept),
        archived_items: items.len() - kept.len(),
    };
    Some(Rewrite::new(kept).with_compaction(report))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn clearing_keeps_the_system_prompt_and_the_new_message() {
        let items = vec![
            Item::system("sys"),
            Item::user("old"),
            Item::assistant("old answer"),
            Item::user("new"),
        ];
        let rewrite = cleared(&items).unwrap();
        let texts: Vec<String> = rewrite.items.iter().map(Item::text_content).collect();
        assert_eq!(texts, ["sys", "new"]);
        assert_eq!(rewrite.compaction.unwrap().archived_items, 2);
        assert!(cleared(&[Item::system("sys"), Item::user("new")]).is_none());
    }

    #[test]
    fn the_window_comes_from_configuration_then_the_model() {
        assert_eq!(window_for("gpt-4o", Some(1_000)), 1_000);
        assert_eq!(window_for("gpt-4o", None), 128_000);
        assert_eq!(window_for("my-local-model", None), FALLBACK_WINDOW);
    }
}
