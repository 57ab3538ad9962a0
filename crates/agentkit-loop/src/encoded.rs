//! Each transcript item's wire encoding, kept across turns.
//!
//! Every model call sends the whole history, so an adapter that re-encodes
//! every item on every call makes a long session pay for its length on each
//! turn: a 10,000-item coding session re-serializes a megabyte to add two
//! items. An [`EncodedTranscript`] keeps each item's encoding (a few JSON
//! blocks: messages, input items, content blocks) from one turn to the next
//! and brings it up to date with the new [`TranscriptView`]:
//!
//! - the driver's views of one session share one append-only log, so when
//!   the new view reads the same log as the last one, only the items after
//!   the last one are encoded;
//! - when a mutator rewrote the history (a new log), each new item is
//!   matched with an old one (the next one in order, else the one with the
//!   same id) and reuses its blocks when the two are equal; only changed or
//!   new items are encoded again.
//!
//! The blocks live in one byte buffer, each followed by a comma, so a run
//! of blocks joined as a JSON array's elements is one slice of it: the body
//! of a 10,000-item history is written with one `memcpy`, not one per block.

use crate::{TranscriptItems, TranscriptView};
use agentkit_core::{Item, ItemId};
use std::collections::HashMap;
use std::ops::Range;

/// The separator stored after every block: what a JSON array puts between
/// its elements.
const SEPARATOR: u8 = b',';

/// One encoded block: where it ends in the buffer (its separator follows),
/// and the adapter's tag
/// (which message role it belongs to, whether it may carry a cache mark).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Block {
    end: usize,
    tag: u8,
}

/// A provider's encoding of a transcript, item by item, reused across
/// turns until an item changes.
///
/// An adapter session keeps one and calls [`sync`](Self::sync) with each
/// turn's view and its per-item encoder, then writes the body from
/// [`blocks`](Self::blocks).
///
/// ```
/// use agentkit_core::Item;
/// use agentkit_loop::{EncodedTranscript, TranscriptView};
///
/// let mut encoded = EncodedTranscript::new();
/// let encode = |item: &Item, out: &mut agentkit_loop::BlockWriter<'_>| {
///     out.block(0, |buf| buf.extend_from_slice(item.text_content().as_bytes()));
/// };
/// let view = TranscriptView::from_items(vec![Item::user("a"), Item::assistant("b")]);
/// assert_eq!(encoded.sync(&view, encode), 2);
/// // The driver's next view: the same log with one more item.
/// let view = view.appended([Item::user("c")]);
/// assert_eq!(encoded.sync(&view, encode), 1, "only the new item is encoded");
/// let texts: Vec<&[u8]> = encoded.blocks(0..3).map(|(_, bytes)| bytes).collect();
/// assert_eq!(texts, [b"a", b"b", b"c"]);
/// ```
#[derive(Default)]
pub struct EncodedTranscript {
    /// The view the encoding matches.
    source: Option<TranscriptView>,
    bytes: Vec<u8>,
    blocks: Vec<Block>,
    /// Per item, the end of its blocks in `blocks`.
    items: Vec<usize>,
    /// How many leading items the previous sync held too, unchanged and
    /// in the same place.
    stable: usize,
}

impl std::fmt::Debug for EncodedTranscript {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("EncodedTranscript")
            .field("items", &self.items.len())
            .field("blocks", &self.blocks.len())
            .field("bytes", &self.bytes.len())
            .finish()
    }
}

/// Where an item's encoder writes its blocks.
pub struct BlockWriter<'a> {
    bytes: &'a mut Vec<u8>,
    blocks: &'a mut Vec<Block>,
}

impl BlockWriter<'_> {
    /// Adds one block with this tag; `write` appends its bytes. A block
    /// left empty is dropped.
    pub fn block(&mut self, tag: u8, write: impl FnOnce(&mut Vec<u8>)) {
        let start = self.bytes.len();
        write(self.bytes);
        if self.bytes.len() > start {
            self.blocks.push(Block {
                end: self.bytes.len(),
                tag,
            });
            self.bytes.push(SEPARATOR);
        }
    }
}

impl EncodedTranscript {
    /// An empty encoding.
    pub fn new() -> Self {
        Self::default()
    }

    /// Brings the encoding up to date with `view`, calling `encode` for
    /// each item that is new or changed; returns how many items it encoded.
    /// `encode` must depend on the item alone (and the adapter's fixed
    /// configuration): a cached block is reused whenever its item is.
    pub fn sync(
        &mut self,
        view: &TranscriptView,
        mut encode: impl FnMut(&Item, &mut BlockWriter<'_>),
    ) -> usize {
        let guard = view.read();
        let items = guard.items();
        let same_log = self
            .source
            .as_ref()
            .is_some_and(|source| source.shares_log_with(view));
        if same_log && self.items.len() <= items.len() {
            // The same append-only log, grown: encode the tail.
            let start = self.items.len();
            self.stable = start;
            for item in items.range(start..) {
                self.encode_one(item, &mut encode);
            }
            drop(guard);
            self.source = Some(view.clone());
            return view.len() - start;
        }
        if same_log {
            // An older, shorter view of the same log.
            let keep = items.len();
            self.truncate(keep);
            self.stable = keep;
            drop(guard);
            self.source = Some(view.clone());
            return 0;
        }
        let old = std::mem::take(self);
        let mut encoded = 0;
        match &old.source {
            Some(source) => {
                let previous = source.read();
                let mut matcher = Matcher::new(previous.items());
                let mut in_place = true;
                for (index, item) in items.iter().enumerate() {
                    let found = matcher.find(item);
                    in_place &= found == Some(index);
                    if in_place {
                        self.stable = index + 1;
                    }
                    match found {
                        Some(at) => self.copy_from(&old, at),
                        None => {
                            self.encode_one(item, &mut encode);
                            encoded += 1;
                        }
                    }
                }
            }
            None => {
                for item in items.iter() {
                    self.encode_one(item, &mut encode);
                }
                encoded = items.len();
            }
        }
        drop(guard);
        self.source = Some(view.clone());
        encoded
    }

    fn encode_one(&mut self, item: &Item, encode: &mut impl FnMut(&Item, &mut BlockWriter<'_>)) {
        let mut writer = BlockWriter {
            bytes: &mut self.bytes,
            blocks: &mut self.blocks,
        };
        encode(item, &mut writer);
        self.items.push(self.blocks.len());
    }

    /// Appends item `at` of `old`, blocks and bytes, without encoding it.
    fn copy_from(&mut self, old: &EncodedTranscript, at: usize) {
        let range = old.item_blocks(at);
        let byte_start = old.block_start(range.start);
        let byte_end = old.block_start(range.end);
        let shift = self.bytes.len() as isize - byte_start as isize;
        self.bytes
            .extend_from_slice(&old.bytes[byte_start..byte_end]);
        self.blocks
            .extend(old.blocks[range].iter().map(|block| Block {
                end: (block.end as isize + shift) as usize,
                tag: block.tag,
            }));
        self.items.push(self.blocks.len());
    }

    fn truncate(&mut self, items: usize) {
        self.items.truncate(items);
        let blocks = self.items.last().copied().unwrap_or(0);
        self.blocks.truncate(blocks);
        let bytes = self.blocks.last().map_or(0, |b| b.end + 1);
        self.bytes.truncate(bytes);
    }

    /// How many leading items the previous [`sync`](Self::sync) held too,
    /// unchanged and in the same place: the prefix the provider saw in the
    /// previous request, where a prompt cache can be read from. All of the
    /// previous items while the log only grows; fewer after a rewrite such
    /// as a compaction; zero on the first sync.
    ///
    /// ```
    /// use agentkit_core::Item;
    /// use agentkit_loop::{EncodedTranscript, TranscriptView};
    ///
    /// let mut encoded = EncodedTranscript::new();
    /// let encode = |item: &Item, out: &mut agentkit_loop::BlockWriter<'_>| {
    ///     out.block(0, |buf| buf.extend_from_slice(item.text_content().as_bytes()));
    /// };
    /// let view = TranscriptView::from_items(vec![Item::user("a"), Item::assistant("b")]);
    /// encoded.sync(&view, encode);
    /// assert_eq!(encoded.stable_prefix(), 0);
    /// encoded.sync(&view.appended([Item::user("c")]), encode);
    /// assert_eq!(encoded.stable_prefix(), 2);
    /// // A rewritten transcript (a compaction kept the first item).
    /// let rewritten = TranscriptView::from_items(vec![Item::user("a"), Item::user("summary")]);
    /// encoded.sync(&rewritten, encode);
    /// assert_eq!(encoded.stable_prefix(), 1);
    /// ```
    pub fn stable_prefix(&self) -> usize {
        self.stable
    }

    /// The number of items encoded.
    pub fn len(&self) -> usize {
        self.items.len()
    }

    /// `true` before anything was encoded.
    pub fn is_empty(&self) -> bool {
        self.items.is_empty()
    }

    /// The bytes of all blocks, in order, with a separator byte after
    /// each: an upper bound on what a body copies from the cache.
    pub fn byte_len(&self) -> usize {
        self.bytes.len()
    }

    /// The range of block indexes holding item `index`'s blocks.
    pub fn item_blocks(&self, index: usize) -> Range<usize> {
        let start = if index == 0 { 0 } else { self.items[index - 1] };
        start..self.items[index]
    }

    /// The block indexes of the items in `items`.
    pub fn blocks_of_items(&self, items: Range<usize>) -> Range<usize> {
        if items.is_empty() {
            let at = if items.start == 0 {
                0
            } else {
                self.items[items.start - 1]
            };
            return at..at;
        }
        self.item_blocks(items.start).start..self.item_blocks(items.end - 1).end
    }

    /// Where block `index` starts: after the previous block's separator.
    fn block_start(&self, index: usize) -> usize {
        if index == 0 {
            0
        } else {
            self.blocks[index - 1].end + 1
        }
    }

    /// Block `index`'s tag alone (what a layout reads for every block,
    /// without slicing the bytes).
    pub fn tag(&self, index: usize) -> u8 {
        self.blocks[index].tag
    }

    /// Block `index`: its tag and bytes.
    pub fn block(&self, index: usize) -> (u8, &[u8]) {
        let block = self.blocks[index];
        (block.tag, &self.bytes[self.block_start(index)..block.end])
    }

    /// The blocks of the items in `items`, in order: tag and bytes.
    pub fn blocks(&self, items: Range<usize>) -> impl Iterator<Item = (u8, &[u8])> + '_ {
        self.blocks_of_items(items).map(|index| self.block(index))
    }

    /// The bytes of the blocks in `blocks` (block indexes), joined by
    /// commas as a JSON array's elements: one slice of the buffer, for a
    /// writer that lays blocks out itself and copies runs of them at once.
    ///
    /// ```
    /// use agentkit_core::Item;
    /// use agentkit_loop::{EncodedTranscript, TranscriptView};
    ///
    /// let mut encoded = EncodedTranscript::new();
    /// let encode = |item: &Item, out: &mut agentkit_loop::BlockWriter<'_>| {
    ///     out.block(0, |buf| buf.extend_from_slice(item.text_content().as_bytes()));
    /// };
    /// let items = ["1", "2", "3"].map(Item::user).to_vec();
    /// encoded.sync(&TranscriptView::from_items(items), encode);
    /// assert_eq!(encoded.run(1..3), b"2,3");
    /// assert_eq!(encoded.run(1..1), b"");
    /// ```
    pub fn run(&self, blocks: Range<usize>) -> &[u8] {
        if blocks.is_empty() {
            return &[];
        }
        &self.bytes[self.block_start(blocks.start)..self.blocks[blocks.end - 1].end]
    }

    /// Writes the blocks of the items in `items` to `out`, separated by
    /// `separator` (a JSON array's elements: `b","`).
    ///
    /// With `b","`, the separator kept after each block, the run is one
    /// slice of the buffer and is copied at once.
    pub fn write_joined(&self, items: Range<usize>, separator: &[u8], out: &mut Vec<u8>) {
        let blocks = self.blocks_of_items(items);
        if separator == [SEPARATOR] {
            out.extend_from_slice(self.run(blocks));
            return;
        }
        out.reserve(self.run(blocks.clone()).len() + blocks.len() * separator.len());
        for (n, index) in blocks.enumerate() {
            if n > 0 {
                out.extend_from_slice(separator);
            }
            out.extend_from_slice(self.block(index).1);
        }
    }
}

/// Finds, for each item of a rewritten transcript, an equal item of the
/// previous one: the one after the last match first (items kept in order),
/// then the one with the same id.
struct Matcher<'a> {
    previous: TranscriptItems<'a>,
    next: usize,
    by_id: Option<HashMap<&'a ItemId, usize>>,
}

impl<'a> Matcher<'a> {
    fn new(previous: TranscriptItems<'a>) -> Self {
        Self {
            previous,
            next: 0,
            by_id: None,
        }
    }

    fn find(&mut self, item: &Item) -> Option<usize> {
        if self.previous.get(self.next) == Some(item) {
            self.next += 1;
            return Some(self.next - 1);
        }
        let id = item.id.as_ref()?;
        let previous = self.previous;
        let by_id = self.by_id.get_or_insert_with(|| {
            previous
                .iter()
                .enumerate()
                .filter_map(|(at, item)| Some((item.id.as_ref()?, at)))
                .collect()
        });
        let at = *by_id.get(id)?;
        (previous[at] == *item).then(|| {
            self.next = at + 1;
            at
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn encode(item: &Item, out: &mut BlockWriter<'_>) {
        // One block per text part, tagged with the part's index.
        for (n, part) in item.parts.iter().enumerate() {
            if let Some(text) = part.as_text() {
                out.block(n as u8, |buf| buf.extend_from_slice(text.as_bytes()));
            }
        }
    }

    fn texts(encoded: &EncodedTranscript) -> Vec<String> {
        encoded
            .blocks(0..encoded.len())
            .map(|(_, bytes)| String::from_utf8(bytes.to_vec()).unwrap())
            .collect()
    }

    #[test]
    fn a_grown_log_encodes_only_its_new_items() {
        let mut encoded = EncodedTranscript::new();
        let first = TranscriptView::from_items(vec![Item::user("a"), Item::assistant("b")]);
        assert_eq!(encoded.sync(&first, encode), 2);
        assert_eq!(encoded.sync(&first, encode), 0, "nothing new");
        let second = first.appended([Item::user("c"), Item::assistant("d")]);
        assert_eq!(encoded.sync(&second, encode), 2);
        assert_eq!(texts(&encoded), ["a", "b", "c", "d"]);
        // Back to the shorter view of the same log.
        assert_eq!(encoded.sync(&first, encode), 0);
        assert_eq!(texts(&encoded), ["a", "b"]);
    }

    #[test]
    fn a_rewritten_history_reencodes_only_changed_items() {
        let items: Vec<Item> = (0..6)
            .map(|i| Item::user(format!("item {i}")).with_id(format!("id-{i}")))
            .collect();
        let mut encoded = EncodedTranscript::new();
        let view = TranscriptView::from_items(items.clone());
        assert_eq!(encoded.sync(&view, encode), 6);
        // A compactor drops the first two items, replaces item 3 and adds a
        // summary in front: a new log.
        let mut rewritten = vec![Item::system("summary")];
        rewritten.extend(items[2..].iter().cloned());
        rewritten[2] = Item::user("item 3, elided").with_id("id-3");
        let view = TranscriptView::from_items(rewritten);
        assert_eq!(encoded.sync(&view, encode), 2, "the summary and item 3");
        assert_eq!(
            texts(&encoded),
            ["summary", "item 2", "item 3, elided", "item 4", "item 5"]
        );
    }

    #[test]
    fn items_without_ids_are_matched_in_order_around_an_insertion() {
        let mut encoded = EncodedTranscript::new();
        let view = TranscriptView::from_items(vec![Item::user("a"), Item::user("b")]);
        encoded.sync(&view, encode);
        let view = TranscriptView::from_items(vec![
            Item::user("a"),
            Item::user("changed"),
            Item::user("b"),
        ]);
        // Only the inserted item is encoded: "b" is still the next old item
        // after the last match.
        assert_eq!(encoded.sync(&view, encode), 1);
        assert_eq!(texts(&encoded), ["a", "changed", "b"]);
    }

    #[test]
    fn blocks_keep_their_tags_and_items_their_ranges() {
        let mut encoded = EncodedTranscript::new();
        let two = Item::new(
            agentkit_core::ItemKind::User,
            vec![
                agentkit_core::Part::text("x"),
                agentkit_core::Part::text("y"),
            ],
        );
        let view = TranscriptView::from_items(vec![Item::user(""), two, Item::user("z")]);
        encoded.sync(&view, encode);
        assert_eq!(encoded.item_blocks(0), 0..0, "an empty block is dropped");
        assert_eq!(encoded.item_blocks(1), 0..2);
        assert_eq!(encoded.block(1), (1, &b"y"[..]));
        assert_eq!(encoded.tag(1), 1);
        assert_eq!(encoded.blocks_of_items(1..3), 0..3);
        assert_eq!(encoded.blocks_of_items(1..1), 0..0);
        let mut out = Vec::new();
        encoded.write_joined(0..3, b",", &mut out);
        assert_eq!(out, b"x,y,z");
    }

    /// What `write_joined` must write: each block, the separator between.
    fn joined_block_by_block(
        encoded: &EncodedTranscript,
        items: Range<usize>,
        sep: &[u8],
    ) -> Vec<u8> {
        let blocks: Vec<&[u8]> = encoded.blocks(items).map(|(_, bytes)| bytes).collect();
        blocks.join(sep)
    }

    #[test]
    fn a_run_is_joined_in_one_copy_through_growth_rewrites_and_older_views() {
        let mut encoded = EncodedTranscript::new();
        let item = |n: usize| {
            // Blocks with commas of their own, and an item with none.
            let parts = (0..n % 3)
                .map(|k| agentkit_core::Part::text(format!("{{\"n\":{n},\"k\":{k}}}")))
                .collect();
            Item::new(agentkit_core::ItemKind::User, parts)
        };
        let check = |encoded: &EncodedTranscript| {
            let len = encoded.len();
            for items in [0..len, 0..0, 1..len, len / 2..len, 0..len / 2] {
                for sep in [&b","[..], b", ", b""] {
                    let mut out = b"[".to_vec();
                    encoded.write_joined(items.clone(), sep, &mut out);
                    assert_eq!(
                        out[1..],
                        joined_block_by_block(encoded, items.clone(), sep),
                        "items {items:?}, separator {sep:?}"
                    );
                }
            }
        };
        let view = TranscriptView::from_items((0..10).map(item).collect());
        encoded.sync(&view, encode);
        check(&encoded);
        let grown = view.appended((10..14).map(item));
        encoded.sync(&grown, encode);
        check(&encoded);
        // An older view of the same log: the tail is cut, with its
        // separators.
        encoded.sync(&view, encode);
        check(&encoded);
        let mut out = Vec::new();
        encoded.write_joined(0..encoded.len(), b",", &mut out);
        assert!(!out.ends_with(b","));
        // A rewrite: kept items are copied from the old buffer.
        let rewritten: Vec<Item> = [item(5), item(4), item(20), item(8)].into();
        encoded.sync(&TranscriptView::from_items(rewritten), encode);
        check(&encoded);
        let mut out = Vec::new();
        encoded.write_joined(0..4, b",", &mut out);
        let parsed: serde_json::Value =
            serde_json::from_slice(&[b"[".as_slice(), &out, b"]"].concat()).unwrap();
        assert_eq!(parsed.as_array().unwrap().len(), 2 + 1 + 2 + 2);
    }
}
