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
//! An agent's starting transcript is a frozen, shared prefix
//! ([`StartingTranscript`]): every session started from it keeps a log made
//! of that prefix plus its own items, so neither starting a session nor its
//! first round copies the history, however long. Reading a log therefore
//! gives two runs of items ([`TranscriptItems`]), the shared prefix and the
//! session's own, which index and iterate as one sequence.

use agentkit_core::{Item, ToolCallId};
use std::collections::HashSet;
use std::ops::{Index, RangeBounds};
use std::sync::{Arc, RwLock, RwLockReadGuard};

/// A set of tool-call ids.
pub(crate) type CallIds = HashSet<ToolCallId, foldhash::fast::RandomState>;

/// One log: an optional frozen prefix shared with other logs (an agent's
/// starting transcript), then the items appended to this log.
#[derive(Default)]
struct Log {
    prefix: Option<Arc<Vec<Item>>>,
    own: RwLock<Vec<Item>>,
    /// A driver's log ([`TranscriptLog`]): only the driver appends to it,
    /// so it can keep the length itself; [`TranscriptView::appended`] on a
    /// view of it starts a new log.
    driven: bool,
}

impl Log {
    fn new(prefix: Option<Arc<Vec<Item>>>, own: Vec<Item>, driven: bool) -> Arc<Self> {
        Arc::new(Self {
            prefix,
            own: RwLock::new(own),
            driven,
        })
    }

    fn prefix(&self) -> &[Item] {
        self.prefix.as_deref().map_or(&[], Vec::as_slice)
    }

    fn read(&self) -> RwLockReadGuard<'_, Vec<Item>> {
        self.own.read().unwrap_or_else(|e| e.into_inner())
    }
}

/// An immutable, cheaply cloned prefix of a transcript.
#[derive(Clone, Default)]
pub struct TranscriptView {
    log: Arc<Log>,
    len: usize,
}

impl TranscriptView {
    /// A view of these items.
    pub fn from_items(items: Vec<Item>) -> Self {
        let len = items.len();
        Self {
            log: Log::new(None, items, false),
            len,
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
            prefix: self.log.prefix(),
            guard: self.log.read(),
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
    /// items; this view itself still sees only its own prefix. Otherwise a
    /// new log is made: it shares the frozen starting transcript this view
    /// begins with (if any) and copies only the items after it.
    ///
    /// A view a driver handed out ([`LoopDriver::transcript`](crate::LoopDriver::transcript),
    /// a model request's transcript) never grows the driver's log, which
    /// only the driver appends to: it is copied into a new log as an older
    /// view is.
    pub fn appended(&self, items: impl IntoIterator<Item = Item>) -> TranscriptView {
        let prefix = self.log.prefix().len();
        if !self.log.driven {
            let mut own = self.log.own.write().unwrap_or_else(|e| e.into_inner());
            if prefix + own.len() == self.len {
                own.extend(items);
                let len = prefix + own.len();
                drop(own);
                return Self {
                    log: self.log.clone(),
                    len,
                };
            }
        }
        let own = self.log.read();
        if self.len >= prefix {
            let mut copy = own[..self.len - prefix].to_vec();
            drop(own);
            copy.extend(items);
            let len = prefix + copy.len();
            return Self {
                log: Log::new(self.log.prefix.clone(), copy, false),
                len,
            };
        }
        drop(own);
        let mut copy = self.log.prefix()[..self.len].to_vec();
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
        self.read().items() == other.read().items()
    }
}

/// Borrowed items of a [`TranscriptView`]: index, iterate or copy them
/// like a slice ([`TranscriptGuard::items`] gives the two runs they are
/// kept in).
pub struct TranscriptGuard<'a> {
    prefix: &'a [Item],
    guard: RwLockReadGuard<'a, Vec<Item>>,
    len: usize,
}

impl TranscriptGuard<'_> {
    /// The items, as a copyable borrow.
    pub fn items(&self) -> TranscriptItems<'_> {
        TranscriptItems::new(self.prefix, &self.guard, self.len)
    }

    /// The number of items.
    pub fn len(&self) -> usize {
        self.len
    }

    /// `true` when there are no items.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// The item at `index`.
    pub fn get(&self, index: usize) -> Option<&Item> {
        self.items().get(index)
    }

    /// The last item.
    pub fn last(&self) -> Option<&Item> {
        self.items().last()
    }

    /// The items in order.
    pub fn iter(&self) -> TranscriptIter<'_> {
        self.items().iter()
    }

    /// Copies the items out.
    pub fn to_vec(&self) -> Vec<Item> {
        self.items().to_vec()
    }
}

impl Index<usize> for TranscriptGuard<'_> {
    type Output = Item;

    fn index(&self, index: usize) -> &Item {
        self.get(index).expect("transcript index out of range")
    }
}

impl<'a> IntoIterator for &'a TranscriptGuard<'_> {
    type Item = &'a Item;
    type IntoIter = TranscriptIter<'a>;

    fn into_iter(self) -> TranscriptIter<'a> {
        self.iter()
    }
}

/// A transcript's items as a shared prefix and the items after it, read
/// as one sequence.
#[derive(Clone, Copy, Debug)]
pub struct TranscriptItems<'a> {
    prefix: &'a [Item],
    own: &'a [Item],
}

impl<'a> TranscriptItems<'a> {
    /// The first `len` items of `prefix` followed by `own`.
    fn new(prefix: &'a [Item], own: &'a [Item], len: usize) -> Self {
        if len <= prefix.len() {
            Self {
                prefix: &prefix[..len],
                own: &[],
            }
        } else {
            Self {
                prefix,
                own: &own[..len - prefix.len()],
            }
        }
    }

    /// The two runs the items are kept in: the shared prefix, then the rest.
    pub fn as_slices(&self) -> (&'a [Item], &'a [Item]) {
        (self.prefix, self.own)
    }

    /// The items as one slice, when they are kept in one run.
    pub fn as_slice(&self) -> Option<&'a [Item]> {
        match (self.prefix.is_empty(), self.own.is_empty()) {
            (true, _) => Some(self.own),
            (false, true) => Some(self.prefix),
            (false, false) => None,
        }
    }

    /// The number of items.
    pub fn len(&self) -> usize {
        self.prefix.len() + self.own.len()
    }

    /// `true` when there are no items.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The item at `index`.
    pub fn get(&self, index: usize) -> Option<&'a Item> {
        match index.checked_sub(self.prefix.len()) {
            None => self.prefix.get(index),
            Some(at) => self.own.get(at),
        }
    }

    /// The last item.
    pub fn last(&self) -> Option<&'a Item> {
        self.own.last().or_else(|| self.prefix.last())
    }

    /// The items in order.
    pub fn iter(&self) -> TranscriptIter<'a> {
        TranscriptIter {
            prefix: self.prefix.iter(),
            own: self.own.iter(),
        }
    }

    /// The items in `range`, as their own sequence.
    pub fn range(&self, range: impl RangeBounds<usize>) -> TranscriptItems<'a> {
        use std::ops::Bound;
        let start = match range.start_bound() {
            Bound::Included(&s) => s,
            Bound::Excluded(&s) => s + 1,
            Bound::Unbounded => 0,
        };
        let end = match range.end_bound() {
            Bound::Included(&e) => e + 1,
            Bound::Excluded(&e) => e,
            Bound::Unbounded => self.len(),
        };
        let (start, end) = (start.min(end), end.min(self.len()));
        let split = self.prefix.len();
        Self {
            prefix: &self.prefix[start.min(split)..end.min(split)],
            own: &self.own[start.max(split) - split..end.max(split) - split],
        }
    }

    /// Copies the items out.
    pub fn to_vec(&self) -> Vec<Item> {
        let mut items = Vec::with_capacity(self.len());
        items.extend_from_slice(self.prefix);
        items.extend_from_slice(self.own);
        items
    }
}

impl PartialEq for TranscriptItems<'_> {
    fn eq(&self, other: &Self) -> bool {
        self.len() == other.len() && self.iter().eq(other.iter())
    }
}

impl Index<usize> for TranscriptItems<'_> {
    type Output = Item;

    fn index(&self, index: usize) -> &Item {
        self.get(index).expect("transcript index out of range")
    }
}

impl<'a> IntoIterator for TranscriptItems<'a> {
    type Item = &'a Item;
    type IntoIter = TranscriptIter<'a>;

    fn into_iter(self) -> TranscriptIter<'a> {
        self.iter()
    }
}

/// Iterates a transcript's items in order (both ends, exact size).
#[derive(Clone, Debug)]
pub struct TranscriptIter<'a> {
    prefix: std::slice::Iter<'a, Item>,
    own: std::slice::Iter<'a, Item>,
}

impl<'a> Iterator for TranscriptIter<'a> {
    type Item = &'a Item;

    fn next(&mut self) -> Option<&'a Item> {
        self.prefix.next().or_else(|| self.own.next())
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        let len = self.prefix.len() + self.own.len();
        (len, Some(len))
    }
}

impl DoubleEndedIterator for TranscriptIter<'_> {
    fn next_back(&mut self) -> Option<Self::Item> {
        self.own.next_back().or_else(|| self.prefix.next_back())
    }
}

impl ExactSizeIterator for TranscriptIter<'_> {}

/// An agent's starting transcript, ids filled in: the frozen prefix of
/// every session started from it.
pub(crate) struct StartingTranscript {
    items: Arc<Vec<Item>>,
    /// The item index the first appended item without an id gets.
    pub(crate) next_item_index: u64,
    calls: Arc<StartingCalls>,
}

/// The tool-call ids of a starting transcript, collected once (by the
/// agent's validation) for every session started from it: a session on a
/// long shared history neither scans it nor keeps its own copy of the set.
struct StartingCalls {
    /// How many items the starting transcript has.
    len: usize,
    ids: CallIds,
}

impl StartingTranscript {
    /// `items`, each without an id given `item-<index>` as a session
    /// would, counting from 0; `calls` are their tool-call ids.
    pub(crate) fn new(mut items: Vec<Item>, calls: CallIds) -> Self {
        let mut ids = ItemIds::default();
        for item in &mut items {
            if item.id.is_none() {
                item.id = Some(ids.take());
            }
        }
        Self {
            calls: Arc::new(StartingCalls {
                len: items.len(),
                ids: calls,
            }),
            items: Arc::new(items),
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

/// The driver's side: the log it appends to, the only writer of it (views
/// of it never grow it in place), so it keeps the length itself rather
/// than read it under the log's lock.
pub(crate) struct TranscriptLog {
    log: Arc<Log>,
    /// How many items the log holds, its prefix included.
    len: usize,
    /// The starting transcript's call ids, while the log begins with it
    /// (until a mutator replaces the history).
    start: Option<Arc<StartingCalls>>,
}

impl Default for TranscriptLog {
    fn default() -> Self {
        Self::new(Vec::new())
    }
}

impl TranscriptLog {
    pub(crate) fn new(items: Vec<Item>) -> Self {
        Self {
            len: items.len(),
            log: Log::new(None, items, true),
            start: None,
        }
    }

    /// A log made of `start`, shared and never copied, and the session's
    /// own items after it.
    pub(crate) fn starting_from(start: &StartingTranscript) -> Self {
        Self {
            len: start.items.len(),
            log: Log::new(Some(start.items.clone()), Vec::new(), true),
            start: Some(start.calls.clone()),
        }
    }

    /// Appends `item`; returns its index.
    pub(crate) fn push(&mut self, item: Item) -> usize {
        self.log
            .own
            .write()
            .unwrap_or_else(|e| e.into_inner())
            .push(item);
        let index = self.len;
        self.len += 1;
        index
    }

    pub(crate) fn len(&self) -> usize {
        self.len
    }

    pub(crate) fn view(&self) -> TranscriptView {
        TranscriptView {
            log: self.log.clone(),
            len: self.len,
        }
    }

    pub(crate) fn to_vec(&self) -> Vec<Item> {
        self.with(|items| items.to_vec())
    }

    /// Replaces the whole history; views handed out earlier keep the old one.
    pub(crate) fn replace(&mut self, items: Vec<Item>) {
        self.len = items.len();
        self.log = Log::new(None, with_headroom(items), true);
        self.start = None;
    }

    /// The call ids of the starting transcript this log begins with (shared
    /// with the other sessions started from it) and how many items that
    /// is; `(None, 0)` when the log does not begin with one.
    pub(crate) fn starting_call_ids(&self) -> (Option<&CallIds>, usize) {
        match &self.start {
            Some(start) => (Some(&start.ids), start.len),
            None => (None, 0),
        }
    }

    /// Gives back the spare capacity of the session's own items.
    pub(crate) fn shrink_to_fit(&mut self) {
        self.log
            .own
            .write()
            .unwrap_or_else(|e| e.into_inner())
            .shrink_to_fit();
    }

    pub(crate) fn with<R>(&self, f: impl FnOnce(TranscriptItems<'_>) -> R) -> R {
        let own = self.log.read();
        let prefix = self.log.prefix();
        f(TranscriptItems::new(prefix, &own, prefix.len() + own.len()))
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

    fn starting(items: Vec<Item>) -> StartingTranscript {
        let calls =
            agentkit_core::validate_collecting_call_ids(&items).expect("a valid transcript");
        StartingTranscript::new(items, calls)
    }

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
        let start = starting(vec![
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
        let start = starting(vec![
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
    fn sessions_share_the_starting_transcript_and_never_copy_it() {
        let start = starting(vec![Item::system("s").with_id("s")]);
        let mut a = TranscriptLog::starting_from(&start);
        let b = TranscriptLog::starting_from(&start);
        let before = a.view();
        let shared = |log: &TranscriptLog| {
            log.with(|items| std::ptr::eq(items.as_slices().0.as_ptr(), start.items.as_ptr()))
        };
        assert!(shared(&a) && shared(&b), "starting copies nothing");
        // Growing a view of one session reaches neither that session's
        // log (only its driver appends to it) nor other sessions.
        let grown = before.appended([Item::user("x")]);
        assert!(
            !grown.shares_log_with(&before),
            "a view of a driver's log never grows it"
        );
        assert_eq!(b.view().len(), 1);
        assert_eq!(a.view().len(), 1);
        a.push(Item::user("a"));
        assert!(shared(&a), "appending copies nothing either");
        let system = Item::system("s").with_id("s");
        assert_eq!(a.view().len(), 2);
        assert_eq!(a.to_vec(), vec![system.clone(), Item::user("a")]);
        assert_eq!(b.to_vec(), vec![system.clone()], "b keeps the start");
        assert_eq!(before.len(), 1);
        assert_eq!(grown.to_vec(), vec![system.clone(), Item::user("x")]);
        // The grown view's log is its own: its newest view grows it in
        // place, an older one copies only the session's own items and
        // still shares the prefix.
        let longer = grown.appended([Item::user("y")]);
        assert!(longer.shares_log_with(&grown));
        let branch = grown.appended([Item::user("z")]);
        assert!(!branch.shares_log_with(&grown));
        assert_eq!(
            branch.to_vec(),
            vec![system.clone(), Item::user("x"), Item::user("z")]
        );
        let guard = branch.read();
        let (prefix, own) = guard.items().as_slices();
        assert!(std::ptr::eq(prefix.as_ptr(), start.items.as_ptr()));
        assert_eq!(own.len(), 2);
        drop(guard);
        // A view shorter than the prefix copies what it sees.
        let empty = TranscriptView {
            log: before.log.clone(),
            len: 0,
        };
        assert_eq!(
            empty.appended([Item::user("z")]).to_vec(),
            vec![Item::user("z")]
        );
    }

    #[test]
    fn a_driver_view_never_grows_the_driver_log() {
        let mut log = TranscriptLog::new(vec![Item::user("a")]);
        let newest = log.view();
        let grown = newest.appended([Item::assistant("not the driver's")]);
        assert!(!grown.shares_log_with(&newest));
        assert_eq!(
            grown.to_vec(),
            vec![Item::user("a"), Item::assistant("not the driver's")]
        );
        assert_eq!(log.len(), 1, "the driver's length is still right");
        assert_eq!(log.push(Item::assistant("b")), 1, "and so is the index");
        assert_eq!(log.to_vec(), vec![Item::user("a"), Item::assistant("b")]);
        assert_eq!(log.view().len(), 2);
        assert!(log.view().shares_log_with(&newest), "views share the log");
        // After a rewrite the new log is the driver's alone too.
        log.replace(vec![Item::user("compacted")]);
        assert_eq!(log.len(), 1);
        let rewritten = log.view();
        let _ = rewritten.appended([Item::user("x")]);
        assert_eq!(log.push(Item::user("y")), 1);
        assert_eq!(log.to_vec(), vec![Item::user("compacted"), Item::user("y")]);
    }

    #[test]
    fn transcript_items_index_and_iterate_as_one_sequence() {
        let prefix = [Item::user("0"), Item::user("1")];
        let own = [Item::user("2"), Item::user("3"), Item::user("4")];
        let items = TranscriptItems::new(&prefix, &own, 4);
        let texts = |items: TranscriptItems<'_>| -> Vec<String> {
            items.iter().map(Item::text_content).collect()
        };
        assert_eq!(texts(items), ["0", "1", "2", "3"]);
        assert_eq!(items.len(), 4);
        assert_eq!(items[1].text_content(), "1");
        assert_eq!(items[2].text_content(), "2");
        assert!(items.get(4).is_none());
        assert_eq!(items.last().map(Item::text_content).as_deref(), Some("3"));
        assert_eq!(texts(items.range(1..3)), ["1", "2"]);
        assert_eq!(texts(items.range(3..)), ["3"]);
        assert_eq!(texts(items.range(..1)), ["0"]);
        let back: Vec<String> = items.iter().rev().map(Item::text_content).collect();
        assert_eq!(back, ["3", "2", "1", "0"]);
        assert_eq!(
            items.iter().enumerate().next_back().map(|(at, _)| at),
            Some(3)
        );
        assert!(items.as_slice().is_none());
        let short = TranscriptItems::new(&prefix, &own, 1);
        assert_eq!(texts(short), ["0"]);
        assert_eq!(short.as_slice().map(<[Item]>::len), Some(1));
        assert_eq!(items.to_vec().len(), 4);
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
