//! The transcript as the core writes it: the one place items are
//! appended (with their ids), the tool-call ids a session has used, and a
//! mutator's rewrite.

use super::DriverCore;
use super::Note;
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
            ids.extend(item.tool_calls().map(|c| c.id.clone()));
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
        let own = self.call_ids.get_or_insert_with(|| {
            log.with(|items| {
                items
                    .range(start_len..)
                    .iter()
                    .flat_map(Item::tool_calls)
                    .map(|c| c.id.clone())
                    .collect()
            })
        });
        // The starting transcript's ids (shared by the agent's sessions)
        // are taken too.
        let mut ids = TakenIds {
            own,
            start: start_ids,
        };
        for call in &mut calls {
            // One hash per call when the id is new, the usual case.
            if ids.insert(call.id.clone()) {
                continue;
            }
            let original = call.id.clone();
            let mut n = 2;
            let fresh = loop {
                let candidate = ToolCallId::new(format!("{original}_{n}"));
                if ids.insert(candidate.clone()) {
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

/// The tool-call ids a session has used: its own, and those of the
/// starting transcript it shares with the agent's other sessions.
struct TakenIds<'a> {
    own: &'a mut crate::transcript::CallIds,
    start: Option<&'a crate::transcript::CallIds>,
}

impl TakenIds<'_> {
    /// Takes `id`; `false` when it was taken already.
    fn insert(&mut self, id: ToolCallId) -> bool {
        !self.start.is_some_and(|start| start.contains(&id)) && self.own.insert(id)
    }
}

/// `turn-<index>`, written on the stack (see [`numbered`]): one allocation
/// (the id's shared string) instead of two through `format!`, at every model
/// call.
pub(crate) fn turn_id(index: u64) -> TurnId {
    let mut buf = [0; 25];
    TurnId::from(numbered(b"turn-", index, &mut buf))
}

/// Gives `item` the id of index `next` if it has none, and moves `next` on.
pub(crate) fn fill_id(item: &mut Item, next: &mut u64) {
    if item.id.is_none() {
        item.id = Some(item_id(*next));
        *next += 1;
    }
}

/// `item-<index>`, written on the stack: one allocation (the id's shared
/// string) instead of three through `format!`, which loading a long
/// transcript of items without ids pays for each item.
pub(super) fn item_id(index: u64) -> ItemId {
    let mut buf = [0; 25];
    ItemId::from(numbered(b"item-", index, &mut buf))
}

/// `<prefix><index>` in `buf`, the digits written by hand: `format!` would
/// allocate and go through the formatting machinery (several hundred
/// instructions).
fn numbered<'a>(prefix: &[u8; 5], index: u64, buf: &'a mut [u8; 25]) -> &'a str {
    let mut at = buf.len();
    let mut n = index;
    loop {
        at -= 1;
        buf[at] = b'0' + (n % 10) as u8;
        n /= 10;
        if n == 0 {
            break;
        }
    }
    let digits = buf.len() - at;
    buf.copy_within(at.., 5);
    buf[..5].copy_from_slice(prefix);
    // Only ASCII was written.
    std::str::from_utf8(&buf[..5 + digits]).unwrap_or_default()
}
