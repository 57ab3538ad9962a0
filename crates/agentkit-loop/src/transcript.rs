//! A transcript that can be handed to a model without copying it.
//!
//! Every model call carries the whole transcript. Copying it each time would
//! make a long session quadratic, so the driver keeps its items in an
//! append-only log and hands out [`TranscriptView`]s: a shared pointer to the
//! log plus a length. A view never sees items appended after it was made, so
//! it is a stable snapshot; making one costs the same at 10 items as at
//! 100,000. When a mutator rewrites history, the driver starts a new log and
//! old views keep the old one.
//!
//! An agent's starting transcript is one log shared by every session started
//! from it ([`StartingTranscript`]): starting a session costs the same at 10
//! items as at 100,000, and a session copies the items only when it first
//! changes them. A shared log is frozen: nothing is ever appended to it.

use agentkit_core::{Item, ToolCallId};
use std::collections::HashSet;
use std::ops::Deref;
use std::sync::{Arc, OnceLock, RwLock, RwLockReadGuard};

/// A set of tool-call ids.
pub(crate) type CallIds = HashSet<ToolCallId, foldhash::fast::RandomState>;

/// An immutable, cheaply cloned prefix of a transcript.
#[derive(Clone, Default)]
pub struct TranscriptView {
    log: Arc<RwLock<Vec<Item>>>,
    len: usize,
    /// The log is an agent's starting transcript, shared by its sessions:
    /// [`TranscriptView::appended`] copies instead of growing it.
    frozen: bool,
}

impl TranscriptView {
    /// A view of these items.
    pub fn from_items(items: Vec<Item>) -> Self {
        let len = items.len();
        Self {
            log: Arc::new(RwLock::new(items)),
            len,
            frozen: false,
        }
    }

    /// The number of items.
    pub fn len(&self) -> usize {
        self.len
    }

    /// `true` when there are no items.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Borrows the items. Hold the guard briefly: the driver waits for it
    /// before appending.
    pub fn read(&self) -> TranscriptGuard<'_> {
        TranscriptGuard {
            guard: self.log.read().unwrap_or_else(|e| e.into_inner()),
            len: self.len,
        }
    }

    /// Copies the items out.
    pub fn to_vec(&self) -> Vec<Item> {
        self.read().to_vec()
    }

    /// This view with `items` after it, as the driver grows a transcript.
    ///
    /// When this view reaches the end of its log (the newest view), the
    /// items are appended to the same log, so adapters that cache each
    /// item's encoding see the same history grown and encode only the new
    /// items; this view itself still sees only its own prefix. Otherwise,
    /// or when the log is an agent's starting transcript that its sessions
    /// share, the prefix is copied into a new log.
    pub fn appended(&self, items: impl IntoIterator<Item = Item>) -> TranscriptView {
        let mut log = self.log.write().unwrap_or_else(|e| e.into_inner());
        if log.len() == self.len && !self.frozen {
            log.extend(items);
            let len = log.len();
            drop(log);
            return Self {
                log: self.log.clone(),
                len,
                frozen: false,
            };
        }
        let mut copy = log[..self.len].to_vec();
        drop(log);
        copy.extend(items);
        Self::from_items(copy)
    }

    /// `true` when both views read the same log, so the shorter one's items
    /// are the longer one's first items, unchanged (logs only grow).
    pub fn shares_log_with(&self, other: &TranscriptView) -> bool {
        Arc::ptr_eq(&self.log, &other.log)
    }
}

impl std::fmt::Debug for TranscriptView {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_list().entries(self.read().iter()).finish()
    }
}

impl PartialEq for TranscriptView {
    fn eq(&self, other: &Self) -> bool {
        *self.read() == *other.read()
    }
}

/// Borrowed items of a [`TranscriptView`]; dereferences to `[Item]`.
pub struct TranscriptGuard<'a> {
    guard: RwLockReadGuard<'a, Vec<Item>>,
    len: usize,
}

impl Deref for TranscriptGuard<'_> {
    type Target = [Item];

    fn deref(&self) -> &[Item] {
        &self.guard[..self.len]
    }
}

/// An agent's starting transcript, ids filled in, shared by every session
/// started from it until the session first changes it.
pub(crate) struct StartingTranscript {
    log: Arc<RwLock<Vec<Item>>>,
    /// The item index the first appended item without an id gets.
    pub(crate) next_item_index: u64,
    calls: Arc<StartingCalls>,
}

/// The tool-call ids of a starting transcript, collected once, when a
/// session first needs them, for every session started from it: a session
/// on a long shared history neither scans it nor keeps its own copy of the
/// set.
struct StartingCalls {
    /// How many items the starting transcript has.
    len: usize,
    ids: OnceLock<CallIds>,
}

impl StartingTranscript {
    /// `items`, each without an id given `item-<index>` as a session
    /// would, counting from 0.
    pub(crate) fn new(mut items: Vec<Item>) -> Self {
        let mut ids = ItemIds::default();
        for item in &mut items {
            if item.id.is_none() {
                item.id = Some(ids.take());
            }
        }
        Self {
            calls: Arc::new(StartingCalls {
                len: items.len(),
                ids: OnceLock::new(),
            }),
            log: Arc::new(RwLock::new(items)),
            next_item_index: ids.next,
        }
    }
}

/// Writes the ids `item-0`, `item-1`, ... for a run of items. Loading a
/// long transcript gives every item an id; writing each number from scratch
/// (a division per digit, then a UTF-8 check of the text) cost a third of
/// loading, so the text of the next id is kept and counted up in place.
#[derive(Debug)]
struct ItemIds {
    /// The index of the next id.
    next: u64,
    /// `item-<next>`.
    text: String,
}

impl Default for ItemIds {
    fn default() -> Self {
        Self {
            next: 0,
            text: "item-0".to_owned(),
        }
    }
}

impl ItemIds {
    const PREFIX: usize = "item-".len();

    /// The next id; moves on.
    fn take(&mut self) -> agentkit_core::ItemId {
        let id = agentkit_core::ItemId::from(self.text.as_str());
        self.next += 1;
        // Count the decimal text up: the trailing nines become zeros and
        // the digit before them goes up by one (or a 1 is put in front).
        let digits = &self.text.as_bytes()[Self::PREFIX..];
        let nines = digits.iter().rev().take_while(|&&d| d == b'9').count();
        let carry_at = Self::PREFIX + digits.len() - nines;
        let carried = match carry_at.checked_sub(1) {
            Some(at) if at >= Self::PREFIX => Some((at, self.text.as_bytes()[at])),
            _ => None,
        };
        match carried {
            Some((at, digit)) => {
                self.text.truncate(at);
                self.text.push(char::from(digit + 1));
            }
            None => {
                self.text.truncate(Self::PREFIX);
                self.text.push('1');
            }
        }
        for _ in 0..nines {
            self.text.push('0');
        }
        id
    }
}

/// The driver's side: the log it appends to.
#[derive(Default)]
pub(crate) struct TranscriptLog {
    log: Arc<RwLock<Vec<Item>>>,
    /// The log is an agent's [`StartingTranscript`]: the first change
    /// copies it.
    shared: bool,
    /// The starting transcript's call ids, while the log begins with it
    /// (until a mutator replaces the history).
    start: Option<Arc<StartingCalls>>,
}

impl TranscriptLog {
    pub(crate) fn new(items: Vec<Item>) -> Self {
        Self {
            log: Arc::new(RwLock::new(items)),
            shared: false,
            start: None,
        }
    }

    /// A log reading `start` until it first changes.
    pub(crate) fn starting_from(start: &StartingTranscript) -> Self {
        Self {
            log: start.log.clone(),
            shared: true,
            start: Some(start.calls.clone()),
        }
    }

    /// Appends `item`; returns its index.
    pub(crate) fn push(&mut self, item: Item) -> usize {
        if self.shared {
            // The copy still begins with the starting transcript; it is
            // made with its headroom, so the items are moved once.
            let items = self.with(|items| {
                let mut copy = Vec::with_capacity(capacity_for(items.len()));
                copy.extend_from_slice(items);
                copy
            });
            self.log = Arc::new(RwLock::new(items));
            self.shared = false;
        }
        let mut log = self.log.write().unwrap_or_else(|e| e.into_inner());
        log.push(item);
        log.len() - 1
    }

    pub(crate) fn len(&self) -> usize {
        self.log.read().unwrap_or_else(|e| e.into_inner()).len()
    }

    pub(crate) fn view(&self) -> TranscriptView {
        TranscriptView {
            log: self.log.clone(),
            len: self.len(),
            frozen: self.shared,
        }
    }

    pub(crate) fn to_vec(&self) -> Vec<Item> {
        self.log.read().unwrap_or_else(|e| e.into_inner()).clone()
    }

    /// Replaces the whole history; views handed out earlier keep the old one.
    pub(crate) fn replace(&mut self, items: Vec<Item>) {
        self.log = Arc::new(RwLock::new(with_headroom(items)));
        self.shared = false;
        self.start = None;
    }

    /// The call ids of the starting transcript this log begins with (shared
    /// with the other sessions started from it, collected on first use) and
    /// how many items that is; `(None, 0)` when the log does not begin with
    /// one.
    pub(crate) fn starting_call_ids(&self) -> (Option<&CallIds>, usize) {
        let Some(start) = &self.start else {
            return (None, 0);
        };
        let ids = start.ids.get_or_init(|| {
            self.with(|items| {
                items[..start.len]
                    .iter()
                    .flat_map(Item::tool_calls)
                    .map(|call| call.id.clone())
                    .collect()
            })
        });
        (Some(ids), start.len)
    }

    /// Gives back the log's spare capacity (a shared log has none).
    pub(crate) fn shrink_to_fit(&mut self) {
        if !self.shared {
            self.log
                .write()
                .unwrap_or_else(|e| e.into_inner())
                .shrink_to_fit();
        }
    }

    pub(crate) fn with<R>(&self, f: impl FnOnce(&[Item]) -> R) -> R {
        f(&self.log.read().unwrap_or_else(|e| e.into_inner()))
    }
}

/// Below this many items a transcript is short: it gets no headroom when
/// loaded and gives its spare capacity back when the session goes idle;
/// copying it costs less than keeping room for it.
pub(crate) const SHORT: usize = 64;

/// A long loaded or rewritten history usually has no spare capacity, so the
/// next append would copy it whole. Doubling the capacity up front keeps the
/// first rounds after a resume or a compaction as cheap as later ones. A
/// short one grows as vectors do: reserving a fixed minimum here would cost
/// every idle session kilobytes (64 spare items are 4 KB).
fn with_headroom(mut items: Vec<Item>) -> Vec<Item> {
    items.reserve(capacity_for(items.len()) - items.len());
    items
}

/// The capacity a log of `len` items gets: twice its length once it is
/// long, so the appends of a resumed session do not copy it.
fn capacity_for(len: usize) -> usize {
    if len >= SHORT { len * 2 } else { len }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_view_is_a_stable_prefix() {
        let mut log = TranscriptLog::new(vec![Item::user("a")]);
        let view = log.view();
        log.push(Item::assistant("b"));
        assert_eq!(view.len(), 1);
        assert_eq!(view.read()[0].text_content(), "a");
        assert_eq!(log.view().len(), 2);
        log.replace(vec![Item::user("rewritten")]);
        assert_eq!(
            view.read()[0].text_content(),
            "a",
            "old views keep the old history"
        );
        assert_eq!(log.to_vec(), vec![Item::user("rewritten")]);
    }

    #[test]
    fn item_ids_count_like_format_would() {
        let mut ids = ItemIds::default();
        for index in 0..=10_001u64 {
            assert_eq!(ids.take().as_str(), format!("item-{index}"));
        }
        assert_eq!(ids.next, 10_002);
    }

    #[test]
    fn a_starting_transcript_fills_in_missing_ids_only() {
        let start = StartingTranscript::new(vec![
            Item::system("s"),
            Item::user("kept").with_id("mine"),
            Item::user("u"),
        ]);
        let ids: Vec<String> = TranscriptLog::starting_from(&start).with(|items| {
            items
                .iter()
                .map(|i| i.id.as_ref().expect("an id").to_string())
                .collect()
        });
        assert_eq!(ids, ["item-0", "mine", "item-1"]);
        assert_eq!(start.next_item_index, 2);
    }

    #[test]
    fn sessions_share_the_starting_call_ids_until_the_history_is_replaced() {
        use agentkit_core::{ItemKind, Part, ToolCallPart, ToolResultPart};
        let start = StartingTranscript::new(vec![
            Item::new(
                ItemKind::Assistant,
                vec![Part::ToolCall(ToolCallPart::new(
                    "c1",
                    "echo",
                    serde_json::json!({}),
                ))],
            ),
            Item::tool_result(ToolResultPart::success("c1", "ok")),
        ]);
        let mut a = TranscriptLog::starting_from(&start);
        let b = TranscriptLog::starting_from(&start);
        a.push(Item::user("copied"));
        let (a_ids, a_len) = a.starting_call_ids();
        let (b_ids, b_len) = b.starting_call_ids();
        let (a_ids, b_ids) = (a_ids.expect("a starts from it"), b_ids.expect("b too"));
        assert!(std::ptr::eq(a_ids, b_ids), "collected once, shared");
        assert_eq!((a_len, b_len), (2, 2));
        assert!(a_ids.contains(&ToolCallId::new("c1")) && a_ids.len() == 1);
        a.replace(vec![Item::user("compacted")]);
        assert!(a.starting_call_ids().0.is_none());
        assert!(
            TranscriptLog::new(Vec::new())
                .starting_call_ids()
                .0
                .is_none()
        );
    }

    #[test]
    fn a_shared_starting_transcript_is_copied_on_first_change() {
        let start = StartingTranscript::new(vec![Item::system("s").with_id("s")]);
        let mut a = TranscriptLog::starting_from(&start);
        let b = TranscriptLog::starting_from(&start);
        let before = a.view();
        assert!(before.shares_log_with(&b.view()), "starting copies nothing");
        // Growing a view of the shared log must not reach other sessions.
        let grown = before.appended([Item::user("x")]);
        assert!(!grown.shares_log_with(&before));
        a.push(Item::user("a"));
        let system = Item::system("s").with_id("s");
        assert_eq!(a.to_vec(), vec![system.clone(), Item::user("a")]);
        assert_eq!(b.to_vec(), vec![system], "b keeps the start");
        assert_eq!(before.len(), 1);
        assert!(!a.view().shares_log_with(&b.view()));
        // The owned log now grows in place, as any session's does.
        let owned = a.view();
        assert!(owned.appended([Item::user("y")]).shares_log_with(&owned));
    }

    #[test]
    fn appending_to_the_newest_view_grows_its_log() {
        let first = TranscriptView::from_items(vec![Item::user("a")]);
        let second = first.appended([Item::assistant("b")]);
        assert!(second.shares_log_with(&first));
        assert_eq!(first.len(), 1, "the old view keeps its prefix");
        assert_eq!(second.to_vec(), vec![Item::user("a"), Item::assistant("b")]);
        // The older view is no longer the newest: appending copies.
        let branch = first.appended([Item::assistant("c")]);
        assert!(!branch.shares_log_with(&first));
        assert_eq!(branch.to_vec(), vec![Item::user("a"), Item::assistant("c")]);
        assert_eq!(second.read()[1].text_content(), "b");
    }
}
