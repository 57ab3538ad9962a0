//! [`Layout`]: a stream event matched against the exact bytes a server
//! writes it in, its fixed parts compared whole and its values (the typed
//! holes) read and checked by the codec's private reader.

use super::read::JsonReader;
use agentkit_core::TextChunk;
use std::borrow::Cow;

/// One JSON document matched against a fixed layout: the fixed parts are
/// compared with one comparison each, the holes between them read as
/// typed values, exactly as serde_json would read them.
///
/// Nearly every event of a streamed answer is a text delta that a server
/// writes the same way every time (same members, same order, no spaces):
/// only the values change. Matching those bytes is far cheaper than
/// parsing them. Any step returns `None` (or `false` for an optional part)
/// when the document is not in the layout; the caller then reads the event
/// the general way ([`from_str`](super::from_str)), which decides. A layout
/// must be one whose match means exactly the values read: its fixed parts
/// are whole tokens, and [`end`](Self::end) checks that nothing follows.
///
/// ```
/// use agentkit_http::codec::Layout;
/// use std::borrow::Cow;
///
/// /// (index, text) of a text delta in the layout the API writes.
/// fn text_delta(data: &str) -> Option<(u64, Cow<'_, str>)> {
///     let mut layout = Layout::new(data);
///     layout.fixed(r#"{"type":"content_block_delta","index":"#)?;
///     let index = layout.u64()?;
///     layout.fixed(r#","delta":{"type":"text_delta","text":"#)?;
///     let text = layout.str()?;
///     layout.fixed("}}")?;
///     layout.end()?;
///     Some((index, text))
/// }
///
/// let data = r#"{"type":"content_block_delta","index":2,"delta":{"type":"text_delta","text":"caf\u00e9"}}"#;
/// let (index, text) = text_delta(data).expect("the usual layout");
/// assert_eq!((index, text.as_ref()), (2, "café"));
/// // Another member order is another layout: the general reader takes it.
/// assert!(text_delta(r#"{"index":2,"type":"content_block_delta"}"#).is_none());
/// ```
///
/// A layout matched in a line (`LINE`, made by
/// [`DataAhead::layout`](crate::DataAhead::layout)) is one whose match
/// cannot cross a line end: its holes never skip whitespace before their
/// value (a hole at a space, tab or line end does not match), string holes
/// stop at any control character anyway, and its fixed parts must have no
/// line end in them (checked in debug builds). So an event's data can be
/// matched against the rest of a read before the parser has looked for
/// the end of its line.
#[derive(Debug)]
pub struct Layout<'a, const LINE: bool = false> {
    reader: JsonReader<'a>,
}

impl<'a> Layout<'a> {
    /// A match starting at the first byte of `text`.
    pub fn new(text: &'a str) -> Self {
        Self {
            reader: JsonReader::new(text),
        }
    }

    /// Whether `text` is written in JSON as it is, between quotes: it has
    /// no quote, backslash or control character.
    pub fn is_plain(text: &str) -> bool {
        JsonReader::is_plain(text)
    }
}

impl<'a> Layout<'a, true> {
    /// A match within one line, starting at the first byte of `text`
    /// (which may go on past the line's end).
    pub(crate) fn in_line(text: &'a str) -> Self {
        Self {
            reader: JsonReader::new(text),
        }
    }
}

impl<'a, const LINE: bool> Layout<'a, LINE> {
    /// In a line layout, whether the next byte is whitespace a hole would
    /// skip (and so maybe a line end): the hole does not match.
    #[inline(always)]
    fn at_space(&self) -> bool {
        LINE && self.reader.at_space()
    }

    /// The fixed part `expected`, exactly these bytes next (no whitespace
    /// skipped), consumed; `None` if they are not next.
    #[inline(always)]
    pub fn fixed(&mut self, expected: &str) -> Option<()> {
        self.optional(expected).then_some(())
    }

    /// An optional fixed part: consumed if exactly these bytes come next
    /// (`true`), nothing consumed otherwise.
    #[inline(always)]
    pub fn optional(&mut self, expected: &str) -> bool {
        debug_assert!(
            !LINE || !expected.contains(['\n', '\r']),
            "a line layout's fixed part has a line end in it"
        );
        self.reader.consume(expected)
    }

    /// A hole holding a non-negative integer that fits a `u64`, written as
    /// JSON writes integers (no sign, leading zero, fraction or exponent).
    #[inline(always)]
    pub fn u64(&mut self) -> Option<u64> {
        if self.at_space() {
            return None;
        }
        self.reader.u64()
    }

    /// A hole holding a string, borrowed when it has no escapes.
    #[inline(always)]
    pub fn str(&mut self) -> Option<Cow<'a, str>> {
        if self.at_space() {
            return None;
        }
        self.reader.str()
    }

    /// A hole holding a string, read into a [`TextChunk`]: the text of a
    /// delta goes into the chunk directly, its escapes (a quote, a
    /// newline) decoded into the chunk's inline room rather than into a
    /// `String` first.
    #[inline(always)]
    pub fn text(&mut self) -> Option<TextChunk> {
        if self.at_space() {
            return None;
        }
        self.reader.text()
    }

    /// A hole holding a string or `null`.
    #[inline(always)]
    pub fn str_or_null(&mut self) -> Option<Option<Cow<'a, str>>> {
        if self.at_space() {
            return None;
        }
        self.reader.or_null(JsonReader::str)
    }

    /// A hole holding the JSON string `"known"`, consumed if exactly it
    /// comes next (`true`); nothing is consumed otherwise. A value seen
    /// before (a stream repeats its id in every event) is so checked with
    /// one comparison instead of being read again. `known` must be
    /// [plain](Self::is_plain), which the caller checks once: with a
    /// quote, backslash or control character in it, the bytes compared
    /// would not be one JSON string.
    #[inline(always)]
    pub fn same_str(&mut self, known: &str) -> bool {
        self.reader.consume_quoted(known)
    }

    /// How many bytes were matched so far: where a caller that keeps a
    /// matched stretch (to compare it whole as a fixed part next time) cuts
    /// it.
    pub fn offset(&self) -> usize {
        self.reader.offset()
    }

    /// The end of the document: only whitespace is left.
    #[inline(always)]
    pub fn end(self) -> Option<()> {
        self.reader.end()
    }
}
