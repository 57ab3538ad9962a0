//! The compactor and its strategies.

use crate::estimate_tokens;
use agentkit_core::{Item, ItemKind, Part, ToolOutput, open_tool_calls};
use agentkit_loop::{LoopMutator, MutationContext, TranscriptView};

/// When to compact.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum CompactionTrigger {
    /// More than this many items.
    Items(usize),
    /// More than this many tokens, by [`estimate_tokens`].
    EstimatedTokens(usize),
}

impl CompactionTrigger {
    fn exceeded(&self, items: &[Item]) -> bool {
        match *self {
            CompactionTrigger::Items(max) => items.len() > max,
            CompactionTrigger::EstimatedTokens(max) => estimate_tokens(items) > max,
        }
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
}

/// A mutator that keeps the transcript within a budget.
#[derive(Clone, Debug)]
pub struct Compactor {
    trigger: CompactionTrigger,
    keep_recent: usize,
    strategy: CompactionStrategy,
}

impl Compactor {
    /// Compacts when `trigger` is exceeded, keeping the last 10 items and
    /// eliding tool outputs.
    pub fn new(trigger: CompactionTrigger) -> Self {
        Self {
            trigger,
            keep_recent: 10,
            strategy: CompactionStrategy::ElideToolOutputs,
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

    /// The compacted transcript, or `None` if nothing needed (or could be)
    /// changed.
    pub fn compact(&self, items: &[Item]) -> Option<Vec<Item>> {
        if !self.trigger.exceeded(items) {
            return None;
        }
        let protected_from = items.len().saturating_sub(self.keep_recent);
        match self.strategy {
            CompactionStrategy::ElideToolOutputs => elide(items, protected_from),
            CompactionStrategy::DropOldestExchanges => {
                drop_oldest(items, protected_from, self.trigger)
            }
        }
    }
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
            if result.metadata.contains_key("agentkit.compacted") {
                continue;
            }
            let size = match &result.output {
                ToolOutput::Text(text) => text.len(),
                other => other.to_text().len(),
            };
            result.output =
                ToolOutput::Text(format!("[output elided to save context: {size} bytes]"));
            result
                .metadata
                .insert("agentkit.compacted".into(), true.into());
            changed = true;
        }
    }
    changed.then_some(out)
}

fn drop_oldest(
    items: &[Item],
    protected_from: usize,
    trigger: CompactionTrigger,
) -> Option<Vec<Item>> {
    let head = items
        .iter()
        .take_while(|i| matches!(i.kind, ItemKind::System | ItemKind::Developer))
        .count();
    // Cut points: user items with no call open before them.
    let cuts: Vec<usize> = (head + 1..protected_from.min(items.len()))
        .filter(|&i| items[i].kind == ItemKind::User && open_tool_calls(&items[head..i]).is_empty())
        .collect();
    let mut best = None;
    for &cut in &cuts {
        let candidate = assemble(items, head, cut);
        let fits = !trigger.exceeded(&candidate);
        best = Some(candidate);
        if fits {
            break;
        }
    }
    best
}

fn assemble(items: &[Item], head: usize, cut: usize) -> Vec<Item> {
    let mut out = Vec::with_capacity(items.len() - (cut - head) + 1);
    out.extend_from_slice(&items[..head]);
    out.push(
        Item::text(
            ItemKind::Context,
            format!(
                "[{} earlier items were removed to save context]",
                cut - head
            ),
        )
        .with_metadata("agentkit.compacted", true),
    );
    out.extend_from_slice(&items[cut..]);
    out
}

#[async_trait::async_trait]
impl LoopMutator for Compactor {
    fn name(&self) -> &str {
        "compaction"
    }

    async fn mutate(
        &self,
        _ctx: &MutationContext,
        transcript: TranscriptView,
    ) -> Result<Option<Vec<Item>>, String> {
        Ok(self.compact(&transcript.read()))
    }
}
