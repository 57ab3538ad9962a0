//! The transcript invariant: every tool call is answered exactly once.
//!
//! Providers reject a request whose tool calls are not each followed by their
//! result before anything else is said, so a transcript that breaks the rule
//! wastes a model call at best and wedges a session at worst. The driver runs
//! [`validate_transcript`] before every model call (in debug builds) and
//! after every mutator; it is public so hosts can check transcripts they load
//! or edit themselves.
//!
//! The rules, for a transcript read front to back:
//! - a tool call id appears in one call only;
//! - a result answers a call that came before it, and only once;
//! - once an assistant item makes calls, only `Tool` items may follow until
//!   every call is answered (no user message, notification or new model
//!   answer in between);
//! - at the end, no call is left unanswered.

use crate::{Item, ItemKind, Part, ToolCallId};
use std::collections::HashSet;

/// A broken transcript invariant; indexes point into the transcript.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum TranscriptError {
    /// A call has no result (at the end, or before the next model answer).
    #[error("tool call {call_id} (item {item_index}) has no result")]
    UnansweredCall {
        /// The call.
        call_id: ToolCallId,
        /// The item that made the call.
        item_index: usize,
    },
    /// Two calls share an id.
    #[error("tool call id {call_id} is used again in item {item_index}")]
    DuplicateCallId {
        /// The repeated id.
        call_id: ToolCallId,
        /// The item holding the second call.
        item_index: usize,
    },
    /// A result names a call that does not precede it.
    #[error("tool result in item {item_index} answers unknown call {call_id}")]
    ResultWithoutCall {
        /// The id the result names.
        call_id: ToolCallId,
        /// The item holding the result.
        item_index: usize,
    },
    /// A call is answered a second time.
    #[error("tool call {call_id} is answered again in item {item_index}")]
    DuplicateResult {
        /// The call.
        call_id: ToolCallId,
        /// The item holding the second result.
        item_index: usize,
    },
    /// A non-tool item sits between a call and its result.
    #[error("{kind:?} item {item_index} comes before tool call {call_id} is answered")]
    InterleavedItem {
        /// The intruding item's kind.
        kind: ItemKind,
        /// Its index.
        item_index: usize,
        /// The first call still waiting for its result.
        call_id: ToolCallId,
    },
}

/// Checks the transcript invariant; the first violation found is returned.
///
/// One pass, one hash per call: a result is looked up among the calls
/// still open (a handful at most), and only a result that matches none of
/// them looks at the calls seen before, to say what is wrong with it.
pub fn validate_transcript(items: &[Item]) -> Result<(), TranscriptError> {
    validate_items(items)
}

/// [`validate_transcript`] for items that are not kept in one slice (a
/// shared prefix and a session's own items, say).
pub fn validate_items<'a, I>(items: I) -> Result<(), TranscriptError>
where
    I: IntoIterator<Item = &'a Item>,
    I::IntoIter: ExactSizeIterator,
{
    let items = items.into_iter();
    // foldhash rather than SipHash: hashing every call id was a third of
    // loading a long transcript.
    let mut calls: HashSet<&ToolCallId, foldhash::fast::RandomState> =
        HashSet::with_capacity_and_hasher(items.len() / 2 + 1, Default::default());
    check(items, &mut calls)
}

/// [`validate_transcript`], returning the set of every tool-call id the
/// transcript holds: a caller that needs the set anyway (to keep new call
/// ids unique) gets it without hashing every id a second time.
pub fn validate_collecting_call_ids<S: std::hash::BuildHasher + Default>(
    items: &[Item],
) -> Result<HashSet<ToolCallId, S>, TranscriptError> {
    let mut calls = HashSet::with_capacity_and_hasher(items.len() / 2 + 1, S::default());
    check(items.iter(), &mut calls)?;
    Ok(calls)
}

/// The call ids [`check`] has seen: borrowed or owned.
trait SeenCalls<'a> {
    /// Adds `id`; `false` when it was there already.
    fn add(&mut self, id: &'a ToolCallId) -> bool;
    fn has(&self, id: &ToolCallId) -> bool;
}

impl<'a, S: std::hash::BuildHasher> SeenCalls<'a> for HashSet<&'a ToolCallId, S> {
    fn add(&mut self, id: &'a ToolCallId) -> bool {
        self.insert(id)
    }
    fn has(&self, id: &ToolCallId) -> bool {
        self.contains(id)
    }
}

impl<S: std::hash::BuildHasher> SeenCalls<'_> for HashSet<ToolCallId, S> {
    fn add(&mut self, id: &ToolCallId) -> bool {
        // Hashed once; a duplicate (an invalid transcript) drops its clone.
        self.insert(id.clone())
    }
    fn has(&self, id: &ToolCallId) -> bool {
        self.contains(id)
    }
}

/// The one validation pass, recording every call id in `calls`.
fn check<'a>(
    items: impl Iterator<Item = &'a Item>,
    calls: &mut impl SeenCalls<'a>,
) -> Result<(), TranscriptError> {
    // `open` keeps unanswered calls in order.
    let mut open: Vec<(&ToolCallId, usize)> = Vec::new();
    for (item_index, item) in items.enumerate() {
        if let Some(&(call_id, call_index)) = open.first()
            && item.kind != ItemKind::Tool
        {
            return Err(if item.kind == ItemKind::Assistant {
                TranscriptError::UnansweredCall {
                    call_id: call_id.clone(),
                    item_index: call_index,
                }
            } else {
                TranscriptError::InterleavedItem {
                    kind: item.kind,
                    item_index,
                    call_id: call_id.clone(),
                }
            });
        }
        for part in &item.parts {
            match part {
                Part::ToolCall(call) => {
                    if !calls.add(&call.id) {
                        return Err(TranscriptError::DuplicateCallId {
                            call_id: call.id.clone(),
                            item_index,
                        });
                    }
                    open.push((&call.id, item_index));
                }
                Part::ToolResult(result) => {
                    match open.iter().position(|(id, _)| *id == &result.call_id) {
                        Some(at) => {
                            open.remove(at);
                        }
                        None if calls.has(&result.call_id) => {
                            return Err(TranscriptError::DuplicateResult {
                                call_id: result.call_id.clone(),
                                item_index,
                            });
                        }
                        None => {
                            return Err(TranscriptError::ResultWithoutCall {
                                call_id: result.call_id.clone(),
                                item_index,
                            });
                        }
                    }
                }
                _ => {}
            }
        }
    }
    match open.first() {
        Some(&(call_id, item_index)) => Err(TranscriptError::UnansweredCall {
            call_id: call_id.clone(),
            item_index,
        }),
        None => Ok(()),
    }
}

/// The calls of the transcript that have no result yet, in call order.
///
/// Unlike [`validate_transcript`] this never fails: it is what a host or the
/// driver uses to find which calls still need an answer (after a crash, a
/// cancellation or loading a saved session).
pub fn open_tool_calls(items: &[Item]) -> Vec<ToolCallId> {
    // Borrowed while scanning: only the ids still open at the end are
    // cloned (a resumed 10,000-item session clones a handful, not every
    // call's id).
    let mut open: Vec<&ToolCallId> = Vec::new();
    for part in items.iter().flat_map(|item| &item.parts) {
        match part {
            Part::ToolCall(call) => open.push(&call.id),
            Part::ToolResult(result) if !open.is_empty() => {
                open.retain(|id| *id != &result.call_id);
            }
            _ => {}
        }
    }
    open.into_iter().cloned().collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{ToolCallPart, ToolResultPart};
    use serde_json::json;

    fn call(ids: &[&str]) -> Item {
        Item::new(
            ItemKind::Assistant,
            ids.iter()
                .map(|id| Part::ToolCall(ToolCallPart::new(*id, "echo", json!({}))))
                .collect(),
        )
    }

    fn result(id: &str) -> Item {
        Item::tool_result(ToolResultPart::success(id, "ok"))
    }

    #[test]
    fn a_valid_transcript_passes() {
        let items = vec![
            Item::system("be brief"),
            Item::user("hi"),
            call(&["a", "b"]),
            result("b"),
            result("a"),
            Item::user("more"),
            Item::assistant("done"),
        ];
        assert_eq!(validate_transcript(&items), Ok(()));
        assert!(open_tool_calls(&items).is_empty());
    }

    #[test]
    fn several_results_in_one_tool_item_pass() {
        let items = vec![
            call(&["a", "b"]),
            Item::new(
                ItemKind::Tool,
                vec![
                    Part::ToolResult(ToolResultPart::success("a", "1")),
                    Part::ToolResult(ToolResultPart::error("b", "no")),
                ],
            ),
        ];
        assert_eq!(validate_transcript(&items), Ok(()));
    }

    #[test]
    fn unanswered_call_at_the_end() {
        let items = vec![Item::user("hi"), call(&["a", "b"]), result("a")];
        assert_eq!(
            validate_transcript(&items),
            Err(TranscriptError::UnansweredCall {
                call_id: "b".into(),
                item_index: 1
            })
        );
        assert_eq!(open_tool_calls(&items), vec![ToolCallId::new("b")]);
    }

    #[test]
    fn unanswered_call_before_the_next_model_answer() {
        let items = vec![call(&["a"]), Item::assistant("moving on")];
        assert_eq!(
            validate_transcript(&items),
            Err(TranscriptError::UnansweredCall {
                call_id: "a".into(),
                item_index: 0
            })
        );
    }

    #[test]
    fn duplicate_call_id() {
        let items = vec![call(&["a"]), result("a"), call(&["a"])];
        assert_eq!(
            validate_transcript(&items),
            Err(TranscriptError::DuplicateCallId {
                call_id: "a".into(),
                item_index: 2
            })
        );
    }

    #[test]
    fn result_without_call() {
        let items = vec![Item::user("hi"), result("ghost")];
        assert_eq!(
            validate_transcript(&items),
            Err(TranscriptError::ResultWithoutCall {
                call_id: "ghost".into(),
                item_index: 1
            })
        );
    }

    #[test]
    fn result_before_its_call_is_without_call() {
        let items = vec![result("a"), call(&["a"])];
        assert!(matches!(
            validate_transcript(&items),
            Err(TranscriptError::ResultWithoutCall { .. })
        ));
    }

    #[test]
    fn result_answered_twice() {
        let items = vec![call(&["a"]), result("a"), result("a")];
        assert_eq!(
            validate_transcript(&items),
            Err(TranscriptError::DuplicateResult {
                call_id: "a".into(),
                item_index: 2
            })
        );
    }

    #[test]
    fn user_item_between_call_and_result() {
        let items = vec![call(&["a"]), Item::user("wait"), result("a")];
        assert_eq!(
            validate_transcript(&items),
            Err(TranscriptError::InterleavedItem {
                kind: ItemKind::User,
                item_index: 1,
                call_id: "a".into()
            })
        );
    }

    #[test]
    fn notification_between_call_and_result() {
        let items = vec![
            call(&["a", "b"]),
            result("a"),
            Item::text(ItemKind::Notification, "file changed"),
            result("b"),
        ];
        assert_eq!(
            validate_transcript(&items),
            Err(TranscriptError::InterleavedItem {
                kind: ItemKind::Notification,
                item_index: 2,
                call_id: "b".into()
            })
        );
    }

    #[test]
    fn errors_have_readable_messages() {
        let err = TranscriptError::InterleavedItem {
            kind: ItemKind::User,
            item_index: 3,
            call_id: "c1".into(),
        };
        assert_eq!(
            err.to_string(),
            "User item 3 comes before tool call c1 is answered"
        );
    }
}
