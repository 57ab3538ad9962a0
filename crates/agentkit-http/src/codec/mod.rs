//! JSON as the providers' wire formats need it, faster than serde_json at
//! the sizes they come in, and never different from it.
//!
//! Two halves, one public API each:
//!
//! - **Writing** ([`write_str`], [`write_json_str`], [`write_value`]): the
//!   public writer API the request encoders build bodies with. Each writes
//!   byte for byte what serde_json writes (so a body is the body serde_json
//!   would build), copying eight bytes at a time where serde_json looks at
//!   every byte. These three functions are the whole writer
//!   surface; how they scan is private.
//! - **Reading** ([`from_str`], [`Layout`]): what the providers' stream
//!   decoders read events with. `from_str` is serde's derive over a
//!   validating pull reader for small documents, with serde_json deciding
//!   whenever that reader is not sure; `Layout` matches the exact bytes a
//!   server writes its most frequent events in, reading only the values.
//!   The reader itself (its position, nesting count and string scanner) is
//!   private: it only ever answers "this is what serde_json would have
//!   read" or "ask serde_json".
//!
//! Both halves share one test that finds a quote, backslash or control
//! character among eight bytes at once.

mod de;
mod layout;
mod read;
mod write;

pub use de::from_str;
pub use layout::Layout;
pub use write::{write_json_str, write_str, write_value};

/// `a == b` for slices of the same length, compared 16 bytes at a time
/// when they are 16 to 64 bytes long (the parser's repeated `event:`
/// lines use it too).
/// `a == b` for slices of the same length, compared 16 bytes at a time
/// (the last word overlapping the one before) rather than by a `memcmp`
/// call when they are 16 to 64 bytes long: a layout's fixed parts are
/// constants of a few dozen bytes, which the compiler so compares in a
/// handful of inlined instructions.
#[inline(always)]
pub(crate) fn same_bytes(a: &[u8], b: &[u8]) -> bool {
    debug_assert_eq!(a.len(), b.len());
    let len = a.len();
    // Short parts and long ones (a run kept from an earlier event, of a
    // length known only at run time) go to `memcmp`.
    if !(16..=64).contains(&len) {
        return a == b;
    }
    let word = |bytes: &[u8], at: usize| {
        let mut word = [0; 16];
        word.copy_from_slice(&bytes[at..at + 16]);
        u128::from_le_bytes(word)
    };
    let mut differ = word(a, len - 16) ^ word(b, len - 16);
    let mut at = 0;
    while at + 16 < len {
        differ |= word(a, at) ^ word(b, at);
        at += 16;
    }
    differ == 0
}

const ONES: u64 = 0x0101_0101_0101_0101;
const HIGHS: u64 = 0x8080_8080_8080_8080;

/// The high bit of each byte of `word` that is a quote, a backslash or a
/// control character; the lowest one marks exactly the first such byte.
#[inline]
fn specials(word: u64) -> u64 {
    let quote = word ^ (ONES * u64::from(b'"'));
    let backslash = word ^ (ONES * u64::from(b'\\'));
    ((quote.wrapping_sub(ONES) & !quote)
        | (backslash.wrapping_sub(ONES) & !backslash)
        | (word.wrapping_sub(ONES * 0x20) & !word))
        & HIGHS
}

#[inline]
fn is_special(byte: u8) -> bool {
    byte == b'"' || byte == b'\\' || byte < 0x20
}

/// Where the first quote, backslash or control character is in
/// `bytes[pos..]`, looking at eight bytes at a time.
#[inline(always)]
fn find_special(bytes: &[u8], mut pos: usize) -> Option<usize> {
    while let Some(word) = bytes.get(pos..pos + 8) {
        let mut eight = [0; 8];
        eight.copy_from_slice(word);
        let found = specials(u64::from_le_bytes(eight));
        if found != 0 {
            return Some(pos + (found.trailing_zeros() / 8) as usize);
        }
        pos += 8;
    }
    while let Some(&byte) = bytes.get(pos) {
        if is_special(byte) {
            return Some(pos);
        }
        pos += 1;
    }
    None
}
