//! [`TextChunk`]: the piece of text a [`Delta::AppendText`](crate::Delta)
//! carries.
//!
//! A streamed answer arrives as thousands of short pieces, and each one
//! used to be a `String` of its own: an allocation, a copy and a free per
//! piece, about a fifth of what decoding a stream cost. Real pieces are
//! short (one to a few tokens): of the 113 text deltas in the recorded
//! cassettes under `crates/*/tests/cassettes`, the median is 5 bytes and
//! 110 are at most 23. A chunk keeps text of up to
//! [`INLINE_CAP`](TextChunk::INLINE_CAP) bytes inline (no allocation) and
//! longer text behind a shared pointer, so cloning one (an observer keeping
//! the events) never copies the text either. It is `smol_str`'s string
//! behind a type of our own, so the representation can change without
//! touching the deltas' users.

use serde::{Deserialize, Serialize};
use smol_str::{SmolStr, SmolStrBuilder};
use std::borrow::{Borrow, Cow};
use std::fmt;
use std::ops::Deref;

/// A piece of streamed text: inline up to
/// [`INLINE_CAP`](Self::INLINE_CAP) bytes, shared beyond. It reads as a
/// `&str` (it derefs to one) and serializes as a string.
///
/// ```
/// use agentkit_core::TextChunk;
///
/// let chunk = TextChunk::from(" café");
/// assert_eq!(chunk, " café");
/// assert_eq!(chunk.len(), 6);
/// let mut answer = String::from("Hello,");
/// answer.push_str(&chunk);
/// assert_eq!(answer, "Hello, café");
/// assert_eq!(serde_json::to_string(&chunk)?, r#"" café""#);
/// # Ok::<(), serde_json::Error>(())
/// ```
#[derive(Clone, Default, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(transparent)]
pub struct TextChunk(SmolStr);

impl TextChunk {
    /// The longest text kept inline, without an allocation.
    pub const INLINE_CAP: usize = 23;

    /// A chunk holding a copy of `text` (an allocation only when it is
    /// longer than [`INLINE_CAP`](Self::INLINE_CAP)).
    #[inline]
    pub fn new(text: &str) -> Self {
        // Short text (nearly every delta) is copied inline here, without
        // the general constructor's call and its other cases.
        if text.len() <= Self::INLINE_CAP {
            Self(SmolStr::new_inline(text))
        } else {
            Self(SmolStr::new(text))
        }
    }

    /// The text.
    #[inline]
    pub fn as_str(&self) -> &str {
        self.0.as_str()
    }

    /// Whether the text is kept behind a pointer rather than inline.
    pub fn is_heap_allocated(&self) -> bool {
        self.0.is_heap_allocated()
    }
}

/// Builds a [`TextChunk`] piece by piece, in the chunk's inline room
/// while the text fits [`INLINE_CAP`](TextChunk::INLINE_CAP) bytes: a
/// decoder that unescapes a streamed string (a quote, a newline) writes
/// it here instead of into a `String` it would copy and free.
///
/// ```
/// use agentkit_core::TextChunkBuilder;
///
/// let mut builder = TextChunkBuilder::new();
/// builder.push_str("say ");
/// builder.push('"');
/// builder.push_str("hi");
/// builder.push('"');
/// let chunk = builder.finish();
/// assert_eq!(chunk, r#"say "hi""#);
/// assert!(!chunk.is_heap_allocated());
/// ```
#[derive(Clone, Debug, Default)]
pub struct TextChunkBuilder(SmolStrBuilder);

impl TextChunkBuilder {
    /// An empty builder.
    #[inline]
    pub fn new() -> Self {
        Self(SmolStrBuilder::new())
    }

    /// Appends `text`.
    #[inline]
    pub fn push_str(&mut self, text: &str) {
        self.0.push_str(text);
    }

    /// Appends one character.
    #[inline]
    pub fn push(&mut self, c: char) {
        self.0.push(c);
    }

    /// The chunk built so far.
    #[inline]
    pub fn finish(&self) -> TextChunk {
        TextChunk(self.0.finish())
    }
}

impl Deref for TextChunk {
    type Target = str;

    #[inline]
    fn deref(&self) -> &str {
        self.0.as_str()
    }
}

impl AsRef<str> for TextChunk {
    #[inline]
    fn as_ref(&self) -> &str {
        self.as_str()
    }
}

impl Borrow<str> for TextChunk {
    #[inline]
    fn borrow(&self) -> &str {
        self.as_str()
    }
}

impl fmt::Debug for TextChunk {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(self.as_str(), f)
    }
}

impl fmt::Display for TextChunk {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl From<&str> for TextChunk {
    #[inline]
    fn from(text: &str) -> Self {
        Self::new(text)
    }
}

impl From<&String> for TextChunk {
    #[inline]
    fn from(text: &String) -> Self {
        Self::new(text)
    }
}

impl From<String> for TextChunk {
    #[inline]
    fn from(text: String) -> Self {
        Self(SmolStr::from(text))
    }
}

impl From<Cow<'_, str>> for TextChunk {
    #[inline]
    fn from(text: Cow<'_, str>) -> Self {
        match text {
            Cow::Borrowed(text) => Self::new(text),
            Cow::Owned(text) => Self::from(text),
        }
    }
}

impl From<char> for TextChunk {
    fn from(c: char) -> Self {
        Self::new(c.encode_utf8(&mut [0; 4]))
    }
}

impl From<TextChunk> for String {
    fn from(chunk: TextChunk) -> Self {
        chunk.0.into()
    }
}

impl PartialEq<str> for TextChunk {
    fn eq(&self, other: &str) -> bool {
        self.as_str() == other
    }
}

impl PartialEq<&str> for TextChunk {
    fn eq(&self, other: &&str) -> bool {
        self.as_str() == *other
    }
}

impl PartialEq<String> for TextChunk {
    fn eq(&self, other: &String) -> bool {
        self.as_str() == other
    }
}

impl PartialEq<TextChunk> for str {
    fn eq(&self, other: &TextChunk) -> bool {
        self == other.as_str()
    }
}

impl PartialEq<TextChunk> for &str {
    fn eq(&self, other: &TextChunk) -> bool {
        *self == other.as_str()
    }
}

impl PartialEq<TextChunk> for String {
    fn eq(&self, other: &TextChunk) -> bool {
        self == other.as_str()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn short_text_is_inline_and_long_text_is_shared() {
        let short = "x".repeat(TextChunk::INLINE_CAP);
        let chunk = TextChunk::from(short.as_str());
        assert!(!chunk.is_heap_allocated());
        assert_eq!(chunk, short);
        let long = "é".repeat(TextChunk::INLINE_CAP);
        let chunk = TextChunk::from(long.clone());
        assert!(chunk.is_heap_allocated());
        let copy = chunk.clone();
        assert_eq!(copy.as_ptr(), chunk.as_ptr(), "a clone shares the text");
        assert_eq!(String::from(copy), long);
    }

    #[test]
    fn every_source_gives_the_same_text() {
        for text in ["", " a", "\n\n", " 🦀 \"q\"", &"long text ".repeat(8)] {
            let expected = TextChunk::new(text);
            assert_eq!(TextChunk::from(text.to_owned()), expected);
            assert_eq!(TextChunk::from(Cow::Borrowed(text)), expected);
            assert_eq!(TextChunk::from(Cow::<str>::Owned(text.into())), expected);
            assert_eq!(&*expected, text);
            assert_eq!(format!("{expected}"), text);
            assert_eq!(format!("{expected:?}"), format!("{text:?}"));
            let json = serde_json::to_string(&expected).unwrap();
            assert_eq!(json, serde_json::to_string(text).unwrap());
            assert_eq!(serde_json::from_str::<TextChunk>(&json).unwrap(), expected);
        }
        assert_eq!(TextChunk::from('é'), "é");
    }

    #[test]
    fn a_built_chunk_is_the_text_pushed_inline_or_shared() {
        for pieces in [
            &["a", "\"", "b"][..],
            &["é", "\n", "🦀"],
            &["x".repeat(22).as_str(), "é"],
            &["x".repeat(23).as_str(), "é"],
        ] {
            let mut builder = TextChunkBuilder::new();
            for (i, piece) in pieces.iter().enumerate() {
                if i % 2 == 1 && piece.chars().count() == 1 {
                    builder.push(piece.chars().next().unwrap());
                } else {
                    builder.push_str(piece);
                }
            }
            let text = pieces.concat();
            let chunk = builder.finish();
            assert_eq!(chunk, text);
            assert_eq!(
                chunk.is_heap_allocated(),
                text.len() > TextChunk::INLINE_CAP
            );
        }
    }
}
