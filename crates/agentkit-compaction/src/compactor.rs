//! The compactor and its strategies.
//!
//! Every strategy keeps the tool-call invariant and the leading system and
//! developer items: outputs are shortened in place, and history is cut only
//! at boundaries where no call is waiting for its result.

use crate::estimate_tokens;
use crate::summarize::Summarizer;
use crate::window::{context_window, count_tokens};
use agentkit_core::keys;
use agentkit_core::{Item, ItemKind, Part, ToolOutput};
use agentkit_loop::{
    CompactionReport, LastCallUsage, LoopMutator, MutationContext, Rewrite, TranscriptView,
};
use std::collections::HashSet;
use std::sync::Arc;

/// When to compact.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum CompactionTrigger {
    /// More than this many items.
    Items(usize),
    /// More than this many tokens, by [`estimate_tokens`] alone.
    EstimatedTokens(usize),
    /// More than this many tokens, counted from the provider's usage report
    /// of the last call plus an estimate of what was appended since (see
    /// [`count_tokens`]); the estimate alone when nothing was reported.
    Tokens(usize),
}

impl CompactionTrigger {
    /// How big `items` are in this trigger's unit.
    fn measure(&self, items: &[Item], last_call: Option<&LastCallUsage>) -> usize {
        match *self {
            CompactionTrigger::Items(_) => items.len(),
            CompactionTrigger::EstimatedTokens(_) => estimate_tokens(items),
            CompactionTrigger::Tokens(_) => count_tokens(items, last_call),
        }
    }

    fn limit(&self) -> usize {
        match *self {
            CompactionTrigger::Items(max)
            | CompactionTrigger::EstimatedTokens(max)
            | CompactionTrigger::Tokens(max) => max,
        }
    }

    fn exceeded(&self, items: &[Item]) -> bool {
        self.measure(items, None) > self.limit()
    }
}

/// How to compact.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum CompactionStrategy {
    /// Replace the output of older tool results with a short note. The
    /// model keeps the shape of what it did and loses the bulk.
    ElideToolOutputs,
    /// Drop the oldest exchanges (from one user message to the next), keep
    /// the leading system and developer items, and leave a note saying how
    /// many items were removed.
    DropOldestExchanges,
    /// Replace the oldest part of the transcript with one summary item
    /// written by a model (see [`Compactor::summarizer`]).
    Summarize,
}

impl CompactionStrategy {
    fn name(&self) -> &'static str {
        match self {
            CompactionStrategy::ElideToolOutputs => "elide_tool_outputs",
            CompactionStrategy::DropOldestExchanges => "drop_oldest_exchanges",
            CompactionStrategy::Summarize => "summarize",
        }
    }
}

/// A mutator that keeps the transcript within a budget.
///
/// It runs at every mutation point, `BeforeModelCall` included, so the
/// request that would cross the budget is compacted before it is sent. When
/// the provider still refuses a request as too long, the loop runs it again
/// in forced mode: it compacts whatever its trigger says, down to half its
/// limit, and the request is retried once.
#[derive(Clone)]
pub struct Compactor {
    trigger: CompactionTrigger,
    keep_recent: usize,
    strategy: CompactionStrategy,
    summarizer: Option<Arc<dyn Summarizer>>,
}

impl std::fmt::Debug for Compactor {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Compactor")
            .field("trigger", &self.trigger)
            .field("keep_recent", &self.keep_recent)
            .field("strategy", &self.strategy)
            .field("summarizer", &self.summarizer.is_some())
            .finish()
    }
}

/// The share of a model's context window at which [`Compactor::for_model`]
/// compacts.
pub const WINDOW_FRACTION: f64 = 0.8;

/// The window assumed for models [`context_window`] does not know.
pub const DEFAULT_WINDOW: usize = 128_000;

impl Compactor {
    /// Compacts when `trigger` is exceeded, keeping the last 10 items and
    /// eliding tool outputs.
    pub fn new(trigger: CompactionTrigger) -> Self {
        Self {
            trigger,
            keep_recent: 10,
            strategy: CompactionStrategy::ElideToolOutputs,
            summarizer: None,
        }
    }

    /// Compacts at [`WINDOW_FRACTION`] of `model`'s context window (from
    /// [`context_window`], else [`DEFAULT_WINDOW`]), counted with the
    /// provider's reported usage.
    ///
    /// ```
    /// use agentkit_compaction::Compactor;
    ///
    /// let compactor = Compactor::for_model("gpt-4o");
    /// assert_eq!(compactor.token_limit(), Some(102_400));
    /// ```
    pub fn for_model(model: &str) -> Self {
        let window = context_window(model).unwrap_or(DEFAULT_WINDOW);
        Self::new(CompactionTrigger::Tokens(
            (window as f64 * WINDOW_FRACTION) as usize,
        ))
    }

    /// The token limit of the trigger, if it counts tokens.
    pub fn token_limit(&self) -> Option<usize> {
        match self.trigger {
            CompactionTrigger::Items(_) => None,
            other => Some(other.limit()),
        }
    }

    /// How many of the latest items are never touched.
    pub fn keep_recent(mut self, items: usize) -> Self {
        self.keep_recent = items;
        self
    }

    /// Sets the strategy.
    pub fn strategy(mut self, strategy: CompactionStrategy) -> Self {
        self.strategy = strategy;
        self
    }

    /// The summarizer for [`CompactionStrategy::Summarize`]. Without one,
    /// or when it fails, the compactor drops the oldest exchanges instead
    /// (the dropped items still reach transcript observers as archived).
    pub fn summarizer(mut self, summarizer: impl Summarizer + 'static) -> Self {
        self.summarizer = Some(Arc::new(summarizer));
        self
    }

    /// The compacted transcript, or `None` if nothing needed (or could be)
    /// changed. Synchronous: `Summarize` falls back to dropping exchanges.
    pub fn compact(&self, items: &[Item]) -> Option<Vec<Item>> {
        if !self.trigger.exceeded(items) {
            return None;
        }
        let protected_from = items.len().saturating_sub(self.keep_recent);
        let fits = |candidate: &[Item]| !self.trigger.exceeded(candidate);
        match self.strategy {
            CompactionStrategy::ElideToolOutputs => elide(items, protected_from),
            CompactionStrategy::DropOldestExchanges | CompactionStrategy::Summarize => {
                drop_oldest(items, protected_from, fits)
            }
        }
    }

    /// Compacts for a mutation point: counts with the provider's usage,
    /// obeys forced mode, asks the summarizer. `None` when nothing changed.
    pub async fn compact_for(&self, ctx: &MutationContext, items: &[Item]) -> Option<Rewrite> {
        let before = self.trigger.measure(items, ctx.last_call.as_ref());
        if !ctx.forced && before <= self.trigger.limit() {
            return None;
        }
        // Forced: the provider refused the request, so aim well below the
        // limit; otherwise aim at the limit.
        let target = if ctx.forced {
            (self.trigger.limit().min(before) / 2).max(1)
        } else {
            self.trigger.limit()
        };
        let keep_recent = if ctx.forced {
            self.keep_recent.min(2)
        } else {
            self.keep_recent
        };
        let protected_from = items.len().saturating_sub(keep_recent);
        let fits = |candidate: &[Item]| self.trigger.measure(candidate, None) <= target;
        let (items_after, strategy) = match self.strategy {
            CompactionStrategy::ElideToolOutputs => {
                let elided = elide(items, protected_from);
                let current = elided.as_deref().unwrap_or(items);
                if ctx.forced && !fits(current) {
                    // Eliding was not enough: drop exchanges too.
                    let dropped = drop_oldest(
                        current,
                        current.len() - keep_recent.min(current.len()),
                        fits,
                    );
                    (
                        dropped.or(elided),
                        "elide_tool_outputs+drop_oldest_exchanges",
                    )
                } else {
                    (elided, self.strategy.name())
                }
            }
            CompactionStrategy::DropOldestExchanges => (
                drop_oldest(items, protected_from, fits),
                self.strategy.name(),
            ),
            CompactionStrategy::Summarize => match &self.summarizer {
                Some(summarizer) => {
                    match summarize(summarizer.as_ref(), items, protected_from).await {
                        Ok(summarized) => (summarized, self.strategy.name()),
                        Err(_) => (
                            drop_oldest(items, protected_from, fits),
                            "drop_oldest_exchanges (the summarizer failed)",
                        ),
                    }
                }
                None => (
                    drop_oldest(items, protected_from, fits),
                    "drop_oldest_exchanges (no summarizer)",
                ),
            },
        };
        let new = items_after?;
        let kept: HashSet<_> = new.iter().filter_map(|i| i.id.as_ref()).collect();
        let archived = items
            .iter()
            .filter(|i| i.id.as_ref().is_none_or(|id| !kept.contains(id)))
            .count();
        let report = CompactionReport {
            strategy: strategy.to_owned(),
            tokens_before: count_tokens(items, ctx.last_call.as_ref()),
            tokens_after: estimate_tokens(&new),
            archived_items: archived,
        };
        Some(Rewrite::new(new).with_compaction(report))
    }
}

/// Leading system and developer items, never compacted.
fn head_len(items: &[Item]) -> usize {
    items
        .iter()
        .take_while(|i| matches!(i.kind, ItemKind::System | ItemKind::Developer))
        .count()
}

/// Indices in `head+1..end` where history can be cut: the item there is a
/// user or assistant message and no call before it waits for its result.
/// One pass, so a transcript of thousands of items costs one walk.
fn clean_cuts(items: &[Item], head: usize, end: usize, users_only: bool) -> Vec<usize> {
    let mut open: HashSet<&str> = HashSet::new();
    let mut cuts = Vec::new();
    for (index, item) in items.iter().enumerate().take(end).skip(head) {
        let boundary = match item.kind {
            ItemKind::User => true,
            ItemKind::Assistant => !users_only,
            _ => false,
        };
        if index > head && boundary && open.is_empty() {
            cuts.push(index);
        }
        for part in &item.parts {
            match part {
                Part::ToolCall(call) => {
                    open.insert(call.id.as_str());
                }
                Part::ToolResult(result) => {
                    open.remove(result.call_id.as_str());
                }
                _ => {}
            }
        }
    }
    cuts
}

fn elide(items: &[Item], protected_from: usize) -> Option<Vec<Item>> {
    let mut out = items.to_vec();
    let mut changed = false;
    for item in out
        .iter_mut()
        .take(protected_from)
        .filter(|i| i.kind == ItemKind::Tool)
    {
        for part in &mut item.parts {
            let Part::ToolResult(result) = part else {
                continue;
            };
            if result.metadata.contains_key(keys::COMPACTED) {
                continue;
            }
            let size = match &result.output {
                ToolOutput::Text(text) => text.len(),
                other => other.to_text().len(),
            };
            result.output =
                ToolOutput::Text(format!("[output elided to save context: {size} bytes]"));
            result.metadata.insert(keys::COMPACTED.into(), true.into());
            changed = true;
        }
    }
    changed.then_some(out)
}

fn drop_oldest(
    items: &[Item],
    protected_from: usize,
    fits: impl Fn(&[Item]) -> bool,
) -> Option<Vec<Item>> {
    let head = head_len(items);
    let mut best = None;
    for cut in clean_cuts(items, head, protected_from.min(items.len()), true) {
        let candidate = assemble(items, head, cut, note(cut - head));
        let done = fits(&candidate);
        best = Some(candidate);
        if done {
            break;
        }
    }
    best
}

fn note(removed: usize) -> Item {
    Item::text(
        ItemKind::Context,
        format!("[{removed} earlier items were removed to save context]"),
    )
    .with_metadata(keys::COMPACTED, true)
}

fn assemble(items: &[Item], head: usize, cut: usize, marker: Item) -> Vec<Item> {
    let mut out = Vec::with_capacity(items.len() - (cut - head) + 1);
    out.extend_from_slice(&items[..head]);
    out.push(marker);
    out.extend_from_slice(&items[cut..]);
    out
}

/// Replaces everything between the head and the latest clean cut before
/// `protected_from` with one summary item.
async fn summarize(
    summarizer: &dyn Summarizer,
    items: &[Item],
    protected_from: usize,
) -> Result<Option<Vec<Item>>, agentkit_loop::ModelError> {
    let head = head_len(items);
    let end = protected_from.min(items.len());
    // Prefer cutting before a user message, so the kept history starts with
    // a question; a long agentic turn has none, and then any clean cut does.
    let cut = clean_cuts(items, head, end, true)
        .last()
        .or(clean_cuts(items, head, end, false).last())
        .copied();
    let Some(cut) = cut else {
        return Ok(None);
    };
    let summary = summarizer.summarize(&items[head..cut]).await?;
    let marker = Item::text(
        ItemKind::Context,
        format!(
            "[Summary of the {} earlier items of this conversation, written to save context]\n{summary}",
            cut - head
        ),
    )
    .with_metadata(keys::COMPACTED, true)
    .with_metadata(keys::SUMMARY, true)
    .with_metadata(keys::SUMMARIZED_ITEMS, cut - head);
    Ok(Some(assemble(items, head, cut, marker)))
}

#[async_trait::async_trait]
impl LoopMutator for Compactor {
    fn name(&self) -> &str {
        "compaction"
    }

    async fn mutate(
        &self,
        ctx: &MutationContext,
        transcript: TranscriptView,
    ) -> Result<Option<Vec<Item>>, agentkit_loop::MutateError> {
        Ok(self.rewrite(ctx, transcript).await?.map(|r| r.items))
    }

    async fn rewrite(
        &self,
        ctx: &MutationContext,
        transcript: TranscriptView,
    ) -> Result<Option<Rewrite>, agentkit_loop::MutateError> {
        let items = transcript.to_vec();
        Ok(self.compact_for(ctx, &items).await)
    }
}
