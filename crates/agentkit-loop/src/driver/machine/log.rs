//! The transcript as the core writes it: the one place items are
//! appended (with their ids), the tool-call ids a session has used, and a
//! mutator's rewrite.

use super::DriverCore;
use super::Note;
use super::call_ids::UsedCallIds;
use super::state::Phase;
use agentkit_core::{Item, ItemId, ToolCallId, ToolCallPart, ToolResultPart, TurnId};

impl DriverCore {
    pub(crate) fn with_id(&mut self, mut item: Item) -> Item {
        fill_id(&mut item, &mut self.next_item_index);
        item
    }

    /// The one place items enter the transcript.
    pub(super) fn append(&mut self, item: Item, part_of_turn_result: bool) {
        if let Some(ids) = self.call_ids.as_mut() {
            ids.extend(item.tool_calls().map(|c| &c.id));
        }
        self.push_item(item, part_of_turn_result);
    }

    /// [`append`](Self::append) for an answer whose call ids
    /// `unique_call_ids` registered already.
    pub(super) fn push_item(&mut self, item: Item, part_of_turn_result: bool) {
        let item = self.with_id(item);
        let index = self.log.push(item);
        if part_of_turn_result && let Phase::InTurn(turn) = &mut self.phase {
            turn.items.push(index);
        }
        if self.settings.observe_items {
            self.outbox.push_back(Note::Appended(index));
        }
    }

    pub(super) fn append_result(&mut self, result: ToolResultPart) {
        if self.settings.observe_events {
            let event = result.clone();
            self.append(Item::tool_result(result), true);
            self.emit(|| crate::AgentEvent::ToolResultReceived { result: event });
        } else {
            self.append(Item::tool_result(result), true);
        }
    }

    pub(super) fn forget_call_ids(&mut self) {
        self.call_ids = None;
    }

    /// A mutator rewrote the (already validated) transcript. Items of the
    /// old transcript that the new one no longer holds are reported to
    /// transcript observers as archived.
    pub(super) fn replace_transcript(&mut self, items: Vec<Item>) {
        let items: Vec<Item> = items.into_iter().map(|item| self.with_id(item)).collect();
        // The turn's items are indices into the old log: copy them out.
        if let Phase::InTurn(turn) = &mut self.phase {
            self.log.with(|old| turn.items.detach(old));
        }
        if self.settings.observe_items {
            // An item is archived when the new transcript no longer holds it
            // unchanged (removed, or rewritten in place like an elided output).
            let kept: std::collections::HashMap<&ItemId, &Item> = items
                .iter()
                .filter_map(|i| i.id.as_ref().map(|id| (id, i)))
                .collect();
            let archived: Vec<Item> = self.log.with(|old| {
                old.iter()
                    .filter(|i| {
                        i.id.as_ref()
                            .and_then(|id| kept.get(id))
                            .is_none_or(|new| *new != *i)
                    })
                    .cloned()
                    .collect()
            });
            self.log.replace(items);
            self.outbox.push_back(Note::Rewritten(archived));
        } else {
            self.log.replace(items);
        }
        self.call_ids = None;
        // The provider's measurement was of the old transcript.
        self.last_call = None;
    }

    /// Tool-call ids come from the model and are not trusted: an id used
    /// earlier in the session, or twice in one answer, gets a fresh one
    /// (`<id>_<n>`, which fits every provider's id pattern); the model's
    /// original stays in `agentkit.original_call_id`.
    pub(super) fn unique_call_ids(&mut self, mut calls: Vec<ToolCallPart>) -> Vec<ToolCallPart> {
        if calls.is_empty() {
            return calls;
        }
        let (start_ids, start_len) = self.log.starting_call_ids();
        let log = &self.log;
        // The ids after the starting transcript: those the log holds.
        let logged = |ids: &mut Vec<ToolCallId>| {
            log.with(|items| {
                let calls = items.range(start_len..).iter().flat_map(Item::tool_calls);
                ids.extend(calls.map(|call| call.id.clone()));
            })
        };
        let own = self.call_ids.get_or_insert_with(|| {
            let mut set = UsedCallIds::new();
            log.with(|items| {
                let calls = items.range(start_len..).iter().flat_map(Item::tool_calls);
                set.extend(calls.map(|call| &call.id));
            });
            set
        });
        for at in 0..calls.len() {
            let (earlier, rest) = calls.split_at_mut(at);
            let call = &mut rest[0];
            // Every id taken so far, for the set to become exact: the
            // log's, and this answer's before this call.
            let taken = || {
                let mut ids: Vec<ToolCallId> = earlier.iter().map(|c| c.id.clone()).collect();
                logged(&mut ids);
                ids
            };
            // The starting transcript's ids (shared by the agent's
            // sessions) are taken too.
            let in_start = |id: &ToolCallId| start_ids.is_some_and(|start| start.contains(id));
            // One hash per call when the id is new, the usual case.
            if !in_start(&call.id) && own.insert(&call.id, taken) {
                continue;
            }
            let original = call.id.clone();
            let mut n = 2;
            let fresh = loop {
                let candidate = ToolCallId::new(format!("{original}_{n}"));
                if !in_start(&candidate) && own.insert(&candidate, taken) {
                    break candidate;
                }
                n += 1;
            };
            call.metadata.insert(
                agentkit_core::keys::ORIGINAL_CALL_ID.into(),
                original.as_str().into(),
            );
            call.id = fresh;
        }
        calls
    }
}

/// `turn-<index>` (see [`TurnId::numbered`]): no formatting, no
/// allocation, at every model call.
pub(crate) fn turn_id(index: u64) -> TurnId {
    TurnId::numbered("turn-", index)
}

/// Gives `item` the id of index `next` if it has none, and moves `next` on.
pub(crate) fn fill_id(item: &mut Item, next: &mut u64) {
    if item.id.is_none() {
        item.id = Some(item_id(*next));
        *next += 1;
    }
}

/// `item-<index>` (see [`ItemId::numbered`]): no formatting, no
/// allocation and no UTF-8 check, for every item the session appends.
pub(super) fn item_id(index: u64) -> ItemId {
    ItemId::numbered("item-", index)
}
