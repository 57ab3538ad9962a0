//! The reader half of the codec: [`JsonReader`], whose documentation says
//! why it exists and what it promises (the same answer as serde_json, or
//! none).

use super::{find_special, same_bytes};
use agentkit_core::{TextChunk, TextChunkBuilder};
use std::borrow::Cow;

/// Where a string's decoded pieces go: a `String`, or a [`TextChunk`]
/// being built in its inline room.
trait Unescaped {
    fn push_str(&mut self, text: &str);
    fn push(&mut self, c: char);
}

impl Unescaped for String {
    #[inline]
    fn push_str(&mut self, text: &str) {
        String::push_str(self, text);
    }

    #[inline]
    fn push(&mut self, c: char) {
        String::push(self, c);
    }
}

impl Unescaped for TextChunkBuilder {
    #[inline]
    fn push_str(&mut self, text: &str) {
        TextChunkBuilder::push_str(self, text);
    }

    #[inline]
    fn push(&mut self, c: char) {
        TextChunkBuilder::push(self, c);
    }
}

/// How deeply arrays and objects may nest before the reader gives up
/// (serde_json refuses at 128).
pub(crate) const MAX_DEPTH: u32 = 64;

/// Reads one JSON document from a string: a validating reader for the few
/// event shapes that make up nearly all of a stream.
///
/// A streamed answer is thousands of small JSON documents (80 to 350
/// bytes: one text delta each), and general parsers pay a fixed price per
/// token that dominates at that size: serde_json takes 1,700 instructions
/// just to validate an 86-byte Anthropic delta (20 per byte) and 2,600 to
/// deserialize it, jiter 2,200, sonic-rs 3,200. This reader reads the same
/// delta in a few hundred: it borrows every string without escapes, finds a
/// string's end eight bytes at a time, matches keys as plain `&str`s, and
/// builds nothing it is not asked for.
///
/// It never decides alone. Every method returns `None` when it meets
/// something it does not handle exactly as serde_json would (a key with
/// escapes, a number where an integer is wanted, a lone surrogate, nesting
/// deeper than 64 levels) or when the document is not valid JSON; the
/// caller then parses the event with serde_json, which gives the result or
/// the error. So the reader only has to be right about what it accepts:
/// everything it skips is still checked to be JSON, and what it returns is
/// what serde_json would have decoded.
///
/// It is private to the codec: the providers reach it through
/// [`from_str`](super::from_str) (serde's derive over it) and
/// [`Layout`](super::Layout) (a document in the exact layout a server
/// writes, fixed parts compared whole).
#[derive(Debug)]
pub(crate) struct JsonReader<'a> {
    text: &'a str,
    pos: usize,
    depth: u32,
}
impl<'a> JsonReader<'a> {
    /// A reader at the start of `text`.
    pub fn new(text: &'a str) -> Self {
        Self {
            text,
            pos: 0,
            depth: 0,
        }
    }

    fn bytes(&self) -> &'a [u8] {
        self.text.as_bytes()
    }

    /// The next byte that is not whitespace, not consumed.
    #[inline]
    fn peek(&mut self) -> Option<u8> {
        let bytes = self.bytes();
        while let Some(&byte) = bytes.get(self.pos) {
            // Everything but whitespace that can come next is above a space.
            if byte > b' ' || !matches!(byte, b' ' | b'\n' | b'\r' | b'\t') {
                return Some(byte);
            }
            self.pos += 1;
        }
        None
    }

    /// Whether the next byte is whitespace (which [`peek`](Self::peek)
    /// would skip).
    #[inline(always)]
    pub(super) fn at_space(&self) -> bool {
        matches!(
            self.bytes().get(self.pos),
            Some(b' ' | b'\n' | b'\r' | b'\t')
        )
    }

    /// Consumes `byte` after whitespace.
    #[inline]
    fn eat(&mut self, byte: u8) -> Option<()> {
        (self.peek()? == byte).then(|| self.pos += 1)
    }

    /// Only whitespace is left.
    pub fn end(mut self) -> Option<()> {
        self.peek().is_none().then_some(())
    }

    /// The next byte that is not whitespace, not consumed.
    pub(super) fn peek_byte(&mut self) -> Option<u8> {
        self.peek()
    }

    /// Reads `true` or `false`.
    pub(super) fn bool(&mut self) -> Option<bool> {
        match self.peek()? {
            b't' => self.literal("true").map(|()| true),
            b'f' => self.literal("false").map(|()| false),
            _ => None,
        }
    }

    /// A member's key and its colon; a key with an escape gives up.
    #[inline]
    pub(super) fn key(&mut self) -> Option<&'a str> {
        self.eat(b'"')?;
        let key = self.key_body()?;
        self.eat(b':')?;
        Some(key)
    }

    /// Reads an object, calling `member` with each key; `member` must read
    /// or [`skip`](Self::skip) the value. Keys are borrowed; one with an
    /// escape gives up.
    #[inline]
    pub fn object<F>(&mut self, mut member: F) -> Option<()>
    where
        F: FnMut(&mut Self, &'a str) -> Option<()>,
    {
        if self.open(b'{', b'}')? {
            return Some(());
        }
        loop {
            self.eat(b'"')?;
            let key = self.key_body()?;
            self.eat(b':')?;
            member(self, key)?;
            if !self.more(b'}')? {
                return Some(());
            }
        }
    }

    /// Reads an array, calling `element` for each element; `element` must
    /// read or [`skip`](Self::skip) it.
    pub fn array<F>(&mut self, mut element: F) -> Option<()>
    where
        F: FnMut(&mut Self) -> Option<()>,
    {
        if self.open(b'[', b']')? {
            return Some(());
        }
        loop {
            element(self)?;
            if !self.more(b']')? {
                return Some(());
            }
        }
    }

    /// Consumes `open`: `Some(true)` when the container is empty (its
    /// `close` consumed too).
    #[inline]
    pub(super) fn open(&mut self, open: u8, close: u8) -> Option<bool> {
        self.eat(open)?;
        self.depth += 1;
        if self.depth > MAX_DEPTH {
            return None;
        }
        if self.peek()? == close {
            self.pos += 1;
            self.depth -= 1;
            return Some(true);
        }
        Some(false)
    }

    /// After a member or element: `Some(true)` at a comma (another one
    /// follows), `Some(false)` at `close` (consumed).
    #[inline]
    pub(super) fn more(&mut self, close: u8) -> Option<bool> {
        let next = self.peek()?;
        self.pos += 1;
        if next == b',' {
            Some(true)
        } else if next == close {
            self.depth -= 1;
            Some(false)
        } else {
            None
        }
    }

    /// Reads a string, borrowed when it has no escapes.
    #[inline]
    pub fn str(&mut self) -> Option<Cow<'a, str>> {
        self.eat(b'"')?;
        self.string_body()
    }

    /// Reads a value with `read`, or `null` (`None`).
    #[inline]
    pub fn or_null<T>(&mut self, read: impl FnOnce(&mut Self) -> Option<T>) -> Option<Option<T>> {
        if self.null()? {
            return Some(None);
        }
        read(self).map(Some)
    }

    /// Consumes `expected` if exactly these bytes come next (no whitespace
    /// is skipped first): a caller that knows how a server lays out its
    /// documents reads the fixed parts with one comparison, and the
    /// values between them with the other methods. Nothing is consumed
    /// when they do not match.
    #[inline(always)]
    pub fn consume(&mut self, expected: &str) -> bool {
        let end = self.pos + expected.len();
        let matches = self
            .bytes()
            .get(self.pos..end)
            .is_some_and(|next| same_bytes(next, expected.as_bytes()));
        if matches {
            self.pos = end;
        }
        matches
    }

    /// Consumes the JSON string `"text"` if exactly it comes next (no
    /// whitespace is skipped first): a value a caller has seen before (a
    /// stream repeats its id in every event) is checked with one comparison
    /// instead of being read again. Nothing is consumed when it does not
    /// match. `text` must be [plain](Self::is_plain), which the caller
    /// checks once: with a quote, backslash or control character in it, the
    /// bytes compared would not be one JSON string.
    #[inline]
    pub fn consume_quoted(&mut self, text: &str) -> bool {
        debug_assert!(Self::is_plain(text), "consume_quoted wants a plain string");
        let bytes = self.bytes();
        let (open, end) = (self.pos, self.pos + text.len() + 1);
        let matches = bytes.get(open) == Some(&b'"')
            && bytes.get(open + 1..end) == Some(text.as_bytes())
            && bytes.get(end) == Some(&b'"');
        if matches {
            self.pos = end + 1;
        }
        matches
    }

    /// Whether `text` is written in JSON as it is, between quotes: it has
    /// no quote, backslash or control character.
    pub fn is_plain(text: &str) -> bool {
        find_special(text.as_bytes(), 0).is_none()
    }

    /// How many bytes of the text were read so far: where a caller that
    /// keeps a prefix it has read (to [`consume`](Self::consume) it whole
    /// next time) cuts it.
    pub fn offset(&self) -> usize {
        self.pos
    }

    /// Consumes a `null` if one is next: `Some(true)`; `Some(false)` when
    /// something else is next (not consumed).
    #[inline]
    pub fn null(&mut self) -> Option<bool> {
        if self.peek()? != b'n' {
            return Some(false);
        }
        self.literal("null").map(|()| true)
    }

    /// Reads a non-negative integer that fits a `u64`, written as JSON
    /// writes integers (no sign, no leading zero, no fraction or exponent).
    #[inline]
    pub fn u64(&mut self) -> Option<u64> {
        let first = self.peek()?.wrapping_sub(b'0');
        let bytes = self.bytes();
        let start = self.pos;
        // One digit (an index, most counts) without the loop: it ends at
        // anything but a digit, a fraction or an exponent.
        let next = bytes.get(start + 1).map_or(b' ', |&byte| byte);
        if first <= 9 && next.wrapping_sub(b'0') > 9 && !matches!(next, b'.' | b'e' | b'E') {
            self.pos = start + 1;
            return Some(u64::from(first));
        }
        let mut end = start;
        let mut value: u64 = 0;
        while let Some(&byte) = bytes.get(end) {
            let digit = byte.wrapping_sub(b'0');
            if digit > 9 {
                break;
            }
            value = value.checked_mul(10)?.checked_add(u64::from(digit))?;
            end += 1;
        }
        let plain = match end - start {
            0 => false,
            1 => true,
            _ => bytes[start] != b'0',
        };
        if !plain || matches!(bytes.get(end), Some(b'.' | b'e' | b'E')) {
            return None;
        }
        self.pos = end;
        Some(value)
    }

    /// Skips one value of any kind, checking that it is JSON.
    #[inline(always)]
    pub fn skip(&mut self) -> Option<()> {
        // Strings and nulls, most of what is skipped, without a call.
        match self.peek()? {
            b'"' => {
                self.pos += 1;
                self.skip_string_body()
            }
            b'n' => self.literal("null"),
            _ => self.skip_other(),
        }
    }

    fn skip_other(&mut self) -> Option<()> {
        match self.peek()? {
            b'{' => self.object(|r, _| r.skip()),
            b'[' => self.array(Self::skip),
            b't' => self.literal("true"),
            b'f' => self.literal("false"),
            b'-' | b'0'..=b'9' => self.number(),
            _ => None,
        }
    }

    #[inline]
    fn literal(&mut self, word: &str) -> Option<()> {
        let end = self.pos + word.len();
        (self.bytes().get(self.pos..end)? == word.as_bytes()).then(|| self.pos = end)
    }

    /// Checks a number's grammar: `-?(0|[1-9][0-9]*)(.[0-9]+)?([eE][+-]?[0-9]+)?`.
    fn number(&mut self) -> Option<()> {
        let bytes = self.bytes();
        let digits = |pos: &mut usize| {
            let start = *pos;
            while bytes.get(*pos).is_some_and(u8::is_ascii_digit) {
                *pos += 1;
            }
            *pos - start
        };
        let mut pos = self.pos;
        if bytes.get(pos) == Some(&b'-') {
            pos += 1;
        }
        let start = pos;
        let whole = digits(&mut pos);
        if whole == 0 || (whole > 1 && bytes[start] == b'0') {
            return None;
        }
        if bytes.get(pos) == Some(&b'.') {
            pos += 1;
            if digits(&mut pos) == 0 {
                return None;
            }
        }
        if matches!(bytes.get(pos), Some(b'e' | b'E')) {
            pos += 1;
            if matches!(bytes.get(pos), Some(b'+' | b'-')) {
                pos += 1;
            }
            if digits(&mut pos) == 0 {
                return None;
            }
        }
        self.pos = pos;
        Some(())
    }

    /// After the opening quote of a key: the key, which must have no
    /// escape.
    #[inline(always)]
    fn key_body(&mut self) -> Option<&'a str> {
        let start = self.pos;
        let (at, byte) = self.next_special(start)?;
        if byte != b'"' {
            return None;
        }
        self.pos = at + 1;
        self.text.get(start..at)
    }

    /// The first quote, backslash or control character from `pos` on, and
    /// where it is.
    #[inline(always)]
    fn next_special(&self, pos: usize) -> Option<(usize, u8)> {
        let bytes = self.bytes();
        find_special(bytes, pos).map(|at| (at, bytes[at]))
    }

    /// After the opening quote: the string up to the closing one.
    #[inline]
    fn string_body(&mut self) -> Option<Cow<'a, str>> {
        let start = self.pos;
        match self.next_special(start)? {
            (at, b'"') => {
                self.pos = at + 1;
                self.text.get(start..at).map(Cow::Borrowed)
            }
            (at, b'\\') => self.escaped(start, at).map(Cow::Owned),
            _ => None,
        }
    }

    #[inline]
    fn skip_string_body(&mut self) -> Option<()> {
        let mut pos = self.pos;
        loop {
            match self.next_special(pos)? {
                (at, b'"') => {
                    self.pos = at + 1;
                    return Some(());
                }
                (at, b'\\') => {
                    self.pos = at;
                    self.escape(None::<&mut String>)?;
                    pos = self.pos;
                }
                _ => return None,
            }
        }
    }

    /// A string with escapes, decoded; `at` is its first backslash.
    fn escaped(&mut self, start: usize, at: usize) -> Option<String> {
        let mut out = String::with_capacity(at - start + 16);
        self.escaped_into(start, at, &mut out)?;
        Some(out)
    }

    /// Reads a string into a [`TextChunk`]: copied when it has no escapes,
    /// decoded straight into the chunk's inline room when it has (no
    /// `String` in between while it fits).
    #[inline(always)]
    pub fn text(&mut self) -> Option<TextChunk> {
        self.eat(b'"')?;
        let start = self.pos;
        match self.next_special(start)? {
            (at, b'"') => {
                self.pos = at + 1;
                self.text.get(start..at).map(TextChunk::new)
            }
            (at, b'\\') => {
                if let Some(chunk) = self.escaped_inline(start, at) {
                    return Some(chunk);
                }
                let mut out = TextChunkBuilder::new();
                self.escaped_into(start, at, &mut out)?;
                Some(out.finish())
            }
            _ => None,
        }
    }

    /// A short string with single-character escapes (a quote, a newline:
    /// what prose has), decoded byte by byte into the chunk's room on the
    /// stack; `at` is its first backslash. `None`, with nothing consumed,
    /// when it decodes to more than [`TextChunk::INLINE_CAP`] bytes or has
    /// a `\u` escape or anything else unusual: the general decoding takes
    /// it from the start.
    #[inline]
    fn escaped_inline(&mut self, start: usize, at: usize) -> Option<TextChunk> {
        let bytes = self.bytes();
        let mut room = [0; TextChunk::INLINE_CAP];
        let plain = bytes.get(start..at)?;
        room.get_mut(..plain.len())?.copy_from_slice(plain);
        let (mut len, mut pos) = (plain.len(), at);
        loop {
            let byte = match *bytes.get(pos)? {
                b'"' => break,
                b'\\' => {
                    pos += 1;
                    match *bytes.get(pos)? {
                        b'"' => b'"',
                        b'\\' => b'\\',
                        b'/' => b'/',
                        b'n' => b'\n',
                        b'r' => b'\r',
                        b't' => b'\t',
                        b'b' => 0x08,
                        b'f' => 0x0c,
                        _ => return None,
                    }
                }
                0..0x20 => return None,
                byte => byte,
            };
            *room.get_mut(len)? = byte;
            len += 1;
            pos += 1;
        }
        // Always UTF-8: the text was, and every escape decoded is ASCII.
        let text = std::str::from_utf8(&room[..len]).ok()?;
        self.pos = pos + 1;
        Some(TextChunk::new(text))
    }

    /// Decodes a string with escapes onto `out`; `at` is its first
    /// backslash.
    fn escaped_into(&mut self, start: usize, at: usize, out: &mut impl Unescaped) -> Option<()> {
        let (mut from, mut at, mut byte) = (start, at, b'\\');
        loop {
            out.push_str(self.text.get(from..at)?);
            match byte {
                b'"' => {
                    self.pos = at + 1;
                    return Some(());
                }
                b'\\' => {
                    self.pos = at;
                    self.escape(Some(&mut *out))?;
                    from = self.pos;
                }
                _ => return None,
            }
            (at, byte) = self.next_special(from)?;
        }
    }

    /// Decodes the escape at `pos` (a backslash) onto `out`. Gives up on a
    /// lone surrogate: serde_json refuses it in a string it decodes.
    fn escape(&mut self, out: Option<&mut impl Unescaped>) -> Option<()> {
        let bytes = self.bytes();
        let decoded = match *bytes.get(self.pos + 1)? {
            b'"' => '"',
            b'\\' => '\\',
            b'/' => '/',
            b'b' => '\u{8}',
            b'f' => '\u{c}',
            b'n' => '\n',
            b'r' => '\r',
            b't' => '\t',
            b'u' => {
                let unit = self.hex(self.pos + 2)?;
                self.pos += 6;
                let code = match unit {
                    0xD800..=0xDBFF => {
                        if bytes.get(self.pos..self.pos + 2)? != b"\\u" {
                            return None;
                        }
                        let low = self.hex(self.pos + 2)?;
                        if !(0xDC00..=0xDFFF).contains(&low) {
                            return None;
                        }
                        self.pos += 6;
                        0x10000 + ((unit - 0xD800) << 10) + (low - 0xDC00)
                    }
                    0xDC00..=0xDFFF => return None,
                    _ => unit,
                };
                let decoded = char::from_u32(code)?;
                if let Some(out) = out {
                    out.push(decoded);
                }
                return Some(());
            }
            _ => return None,
        };
        self.pos += 2;
        if let Some(out) = out {
            out.push(decoded);
        }
        Some(())
    }

    fn hex(&self, at: usize) -> Option<u32> {
        let digits = self.text.get(at..at + 4)?;
        if !digits.bytes().all(|b| b.is_ascii_hexdigit()) {
            return None;
        }
        u32::from_str_radix(digits, 16).ok()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde::de::IgnoredAny;

    fn skips(text: &str) -> bool {
        let mut reader = JsonReader::new(text);
        reader.skip().is_some() && reader.end().is_some()
    }

    fn serde_accepts(text: &str) -> bool {
        serde_json::from_str::<IgnoredAny>(text).is_ok()
    }

    #[test]
    fn what_it_accepts_serde_json_accepts() {
        let documents = [
            r#"{"a":[1,-2.5e+3,0,true,false,null,"x\"\\\/\b\f\n\r\t\u00e9\ud83e\udd80"],"b":{}}"#,
            " [ ] ",
            r#"{"a":1,}"#,
            r#"{"a":01}"#,
            r#"{"a":1.}"#,
            r#"{"a":-}"#,
            r#"{"a":1e}"#,
            r#"{"a":"\x"}"#,
            r#"{"a":"\ud800"}"#,
            r#"{"a":"\udc00"}"#,
            "{\"a\":\"\u{1}\"}",
            r#"{"a":tru}"#,
            r#"{"a" 1}"#,
            r#"{"a":1} x"#,
            r#"[1 2]"#,
            r#"{"a":"caf"#,
            "",
            r#"{"a":"é","b":"🦀 long enough to take the eight-byte path"}"#,
        ];
        for text in documents {
            if skips(text) {
                assert!(
                    serde_accepts(text),
                    "accepted what serde_json refuses: {text}"
                );
            }
        }
        assert!(skips(documents[0]));
        assert!(skips(documents[1]));
        assert!(skips(documents[17]));
    }

    #[test]
    fn strings_decode_as_serde_json_decodes_them() {
        for text in [
            r#""plain""#,
            r#""a \"quoted\" word and a long tail after it""#,
            r#""\n\n- \u00e9\ud83e\udd80\/""#,
            r#""café 🦀 \\ end""#,
        ] {
            let expected: String = serde_json::from_str(text).unwrap();
            let mut reader = JsonReader::new(text);
            assert_eq!(reader.str().unwrap(), expected, "{text}");
            assert!(reader.end().is_some());
        }
        let mut reader = JsonReader::new(r#""no escapes here""#);
        assert!(matches!(
            reader.str(),
            Some(Cow::Borrowed("no escapes here"))
        ));
    }

    #[test]
    fn text_decodes_as_serde_json_decodes_it_inline_up_to_the_cap() {
        let cap = TextChunk::INLINE_CAP;
        let mut texts = Vec::new();
        // Escapes and multi-byte characters on every side of the inline
        // limit: the decoded text ends just below, at and just past it.
        for plain in cap - 4..=cap + 1 {
            let run = "x".repeat(plain);
            for tail in [
                r#"\""#,
                r#"\n"#,
                r#"\u00e9"#,
                r#"\ud83e\udd80"#,
                "é",
                "🦀",
                r#"\\\/"#,
                r#"\b\f\r"#,
                "\u{7f}",
                "",
            ] {
                texts.push(format!(r#""{run}{tail}""#));
                texts.push(format!(r#""{tail}{run}""#));
                texts.push(format!(r#""a\tb{run}{tail}c""#));
            }
        }
        for text in &texts {
            let expected: String = serde_json::from_str(text).unwrap();
            let mut reader = JsonReader::new(text);
            let chunk = reader.text().unwrap_or_else(|| panic!("reads {text}"));
            assert_eq!(chunk, expected, "{text}");
            assert_eq!(chunk.is_heap_allocated(), expected.len() > cap, "{text}");
            assert!(reader.end().is_some(), "{text}");
        }
        // What the string reader refuses, the chunk reader refuses too.
        for refused in [r#""\ud800""#, r#""\x""#, "\"a\u{1}\"", r#""open"#, "x"] {
            assert!(JsonReader::new(refused).text().is_none(), "{refused}");
            assert!(JsonReader::new(refused).str().is_none(), "{refused}");
        }
    }

    #[test]
    fn integers_are_plain_and_fit() {
        let read = |text: &str| JsonReader::new(text).u64();
        assert_eq!(read("0"), Some(0));
        assert_eq!(read(" 42,"), Some(42));
        assert_eq!(read("18446744073709551615"), Some(u64::MAX));
        // One digit (read without the loop) at the end, before a member's
        // comma, a closing brace or whitespace.
        for (text, value) in [("7", 7), ("7,", 7), ("0}", 0), ("9 ", 9), ("3\n", 3)] {
            assert_eq!(read(text), Some(value), "{text:?}");
        }
        for refused in [
            "18446744073709551616",
            "01",
            "1.0",
            "1e3",
            "1E3",
            "1.",
            "0e",
            "-1",
            "x",
            "",
        ] {
            assert_eq!(read(refused), None, "{refused}");
        }
    }

    #[test]
    fn deep_nesting_and_duplicates_give_up() {
        let deep = format!("{}{}", "[".repeat(65), "]".repeat(65));
        assert!(!skips(&deep));
        let shallow = format!("{}{}", "[".repeat(64), "]".repeat(64));
        assert!(skips(&shallow));
        // A key with an escape is not matched by the reader.
        let mut reader = JsonReader::new(r#"{"\u0061":1}"#);
        assert!(reader.object(|r, _| r.skip()).is_none());
    }

    #[test]
    fn every_prefix_and_byte_flip_of_a_document_agrees_with_serde_json() {
        let document = r#"{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":" caf\u00e9 \"x\"\n"},"n":[-1.5e3,true,null,{}]}"#;
        let bytes = document.as_bytes();
        for end in 0..=bytes.len() {
            if let Ok(prefix) = std::str::from_utf8(&bytes[..end])
                && skips(prefix)
            {
                assert!(serde_accepts(prefix), "{prefix}");
            }
        }
        for at in 0..bytes.len() {
            for replacement in [
                b'"', b'\\', b'}', b']', b',', b':', b'0', b'e', b'.', b'-', b' ', 1,
            ] {
                let mut changed = bytes.to_vec();
                changed[at] = replacement;
                if let Ok(text) = std::str::from_utf8(&changed)
                    && skips(text)
                {
                    assert!(serde_accepts(text), "{text}");
                }
            }
        }
    }
}
