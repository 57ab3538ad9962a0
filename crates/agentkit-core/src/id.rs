//! Identifier newtypes.
//!
//! Every id is a string wrapped in its own type so a `ToolCallId` can never be
//! passed where an `ItemId` is expected. Providers choose tool-call ids, so ids
//! are free-form strings rather than numbers; they serialize as plain strings.
//!
//! An id is two words, like the `Arc<str>` it used to be: up to 16 bytes
//! are kept inline (the ids the loop makes, `item-42`, `turn-7`, cost no
//! allocation), a longer one (a provider's `toolu_01A09q90qw90lq917835lq9`)
//! is shared behind a reference count, so a clone never copies it. An
//! `Option` of an id is two words too, so an [`Item`](crate::Item) does not
//! grow.

use lean_string::LeanStr;
use serde::{Deserialize, Serialize};
use std::fmt;

macro_rules! string_id {
    ($(#[$doc:meta])* $name:ident) => {
        $(#[$doc])*
        ///
        /// Cloning is cheap: a short id is copied, a long one shared.
        #[derive(Clone, Eq, PartialOrd, Ord, Serialize, Deserialize)]
        #[serde(transparent)]
        pub struct $name(LeanStr);

        impl PartialEq for $name {
            #[inline]
            fn eq(&self, other: &Self) -> bool {
                let (a, b) = (self.as_str().as_bytes(), other.as_str().as_bytes());
                // A clone of a long id shares its string: equal without
                // comparing it (the delta folder finds a part by the id
                // each delta carries).
                a.len() == b.len() && (std::ptr::eq(a.as_ptr(), b.as_ptr()) || same_bytes(a, b))
            }
        }

        impl std::hash::Hash for $name {
            #[inline]
            fn hash<H: std::hash::Hasher>(&self, state: &mut H) {
                self.as_str().hash(state)
            }
        }

        impl $name {
            /// Wraps a string as this id.
            pub fn new(value: impl Into<String>) -> Self {
                Self(LeanStr::from(value.into()))
            }

            /// `<prefix><number>`, such as `item-42`: the way the loop
            /// names its items and turns.
            ///
            /// The digits are written without `core::fmt` into the bytes
            /// the id keeps inline; the id is the same string `format!`
            /// makes.
            ///
            /// ```
            #[doc = concat!("use agentkit_core::", stringify!($name), ";")]
            #[doc = concat!("let id = ", stringify!($name), "::numbered(\"item-\", 42);")]
            /// assert_eq!(id.as_str(), "item-42");
            /// ```
            #[inline]
            pub fn numbered(prefix: &str, number: u64) -> Self {
                Self(numbered(prefix, number))
            }

            /// The id as a string slice.
            #[inline]
            pub fn as_str(&self) -> &str {
                self.0.as_str()
            }
        }

        impl fmt::Display for $name {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str(self.as_str())
            }
        }

        impl fmt::Debug for $name {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                write!(f, "{}({:?})", stringify!($name), self.as_str())
            }
        }

        impl From<&str> for $name {
            fn from(value: &str) -> Self {
                Self(LeanStr::from(value))
            }
        }

        impl From<String> for $name {
            fn from(value: String) -> Self {
                Self::new(value)
            }
        }

        impl AsRef<str> for $name {
            fn as_ref(&self) -> &str {
                self.as_str()
            }
        }

        impl PartialEq<str> for $name {
            fn eq(&self, other: &str) -> bool {
                self.as_str() == other
            }
        }

        impl PartialEq<&str> for $name {
            fn eq(&self, other: &&str) -> bool {
                self.as_str() == *other
            }
        }
    };
}

/// Whether two byte strings of the same length are equal.
///
/// Ids are short (a provider's part ids are `p0`, `p1`, the loop's
/// `item-42`): up to 16 bytes are compared as two overlapping words (or
/// halves, or single bytes) loaded straight from the slices, where `==`
/// on slices calls `memcmp`, which costs more than the comparison for a
/// few bytes. Longer ids take `memcmp`.
#[inline(always)]
fn same_bytes(a: &[u8], b: &[u8]) -> bool {
    debug_assert_eq!(a.len(), b.len());
    let n = a.len();
    if n != b.len() {
        return false;
    }
    if n > 16 {
        return a == b;
    }
    if n >= 8 {
        let word = |s: &[u8], at: usize| u64::from_ne_bytes(s[at..at + 8].try_into().unwrap());
        return (word(a, 0) ^ word(b, 0)) | (word(a, n - 8) ^ word(b, n - 8)) == 0;
    }
    if n >= 4 {
        let half = |s: &[u8], at: usize| u32::from_ne_bytes(s[at..at + 4].try_into().unwrap());
        return (half(a, 0) ^ half(b, 0)) | (half(a, n - 4) ^ half(b, n - 4)) == 0;
    }
    // 0 to 3 bytes: the first, the middle and the last cover them all.
    n == 0 || (a[0] == b[0]) & (a[n / 2] == b[n / 2]) & (a[n - 1] == b[n - 1])
}

/// The two digits of every number below 100, in order: `00`, `01`, ...
const DIGIT_PAIRS: [u8; 200] = {
    let mut pairs = [0; 200];
    let mut n = 0;
    while n < 100 {
        pairs[2 * n] = b'0' + (n / 10) as u8;
        pairs[2 * n + 1] = b'0' + (n % 10) as u8;
        n += 1;
    }
    pairs
};

/// `<prefix><number>`, written into the bytes an inline id keeps.
///
/// No `core::fmt`, no allocation, and one UTF-8 check of 16 bytes
/// aligned to 16 (`str::from_utf8` reads them as two words, where the
/// exact length would be checked byte by byte): the prefix is text, the
/// digits and the padding after them are ASCII, so the check always
/// passes and the id is the text before the padding.
#[inline]
fn numbered(prefix: &str, number: u64) -> LeanStr {
    /// The 16 bytes `LeanStr` keeps inline.
    #[repr(align(16))]
    struct Inline([u8; 16]);

    let digits = number.checked_ilog10().map_or(1, |log| log as usize + 1);
    let len = prefix.len() + digits;
    if len > 16 {
        // A counter past 11 digits, or a long prefix: shared, as any
        // long id is.
        return LeanStr::from(format!("{prefix}{number}"));
    }
    let mut text = Inline([b'0'; 16]);
    text.0[..prefix.len()].copy_from_slice(prefix.as_bytes());
    // Right to left, two digits per division.
    let (mut at, mut rest) = (len, number);
    while rest >= 100 {
        let pair = (rest % 100) as usize * 2;
        rest /= 100;
        at -= 2;
        text.0[at..at + 2].copy_from_slice(&DIGIT_PAIRS[pair..pair + 2]);
    }
    if rest >= 10 {
        let pair = rest as usize * 2;
        text.0[at - 2..at].copy_from_slice(&DIGIT_PAIRS[pair..pair + 2]);
    } else {
        text.0[at - 1] = b'0' + rest as u8;
    }
    match std::str::from_utf8(&text.0) {
        Ok(text) => LeanStr::from(&text[..len]),
        Err(_) => LeanStr::from(format!("{prefix}{number}")),
    }
}

string_id!(
    /// Identifies one session: one `LoopDriver` and its transcript.
    SessionId
);
string_id!(
    /// Identifies one model turn within a session.
    TurnId
);
string_id!(
    /// Identifies one transcript item.
    ItemId
);
string_id!(
    /// Identifies one part while it is being streamed as deltas.
    PartId
);
string_id!(
    /// Identifies one tool call; its result carries the same id.
    ToolCallId
);
string_id!(
    /// Identifies one approval request; unique per tool call.
    ApprovalId
);
string_id!(
    /// Identifies one scheduled tool task.
    TaskId
);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_serialize_as_plain_strings() {
        let id = ToolCallId::new("call_1");
        assert_eq!(serde_json::to_string(&id).unwrap(), "\"call_1\"");
        let back: ToolCallId = serde_json::from_str("\"call_1\"").unwrap();
        assert_eq!(back, id);
        assert_eq!(id, "call_1");
        assert_eq!(format!("{id:?}"), "ToolCallId(\"call_1\")");
        assert_eq!(id.to_string(), "call_1");
    }

    #[test]
    fn short_and_long_ids_read_and_compare_alike() {
        // Inline up to 16 bytes, shared beyond: the form does not show.
        for text in [
            "item-7",
            "exactly-16-bytes",
            "toolu_01A09q90qw90lq917835lq9",
        ] {
            let id = ItemId::from(text);
            let copy = id.clone();
            assert_eq!(copy.as_str(), text);
            assert_eq!(copy, id);
            assert_eq!(ItemId::new(text.to_owned()), id);
            let json = serde_json::to_string(&id).unwrap();
            assert_eq!(json, format!("\"{text}\""));
            assert_eq!(serde_json::from_str::<ItemId>(&json).unwrap(), id);
        }
        let (ten, nine) = (ItemId::from("item-10"), ItemId::from("item-9"));
        assert!(ten < nine, "ordered as strings");
    }

    #[test]
    fn numbered_ids_are_the_formatted_text() {
        // Inline, at the 16-byte edge, shared beyond it, and the largest
        // counter: the same string and the same serde form as `format!`.
        let edges = [0, 7, 9, 10, 99, 100, 4_096, 99_999_999_999, 100_000_000_000];
        // Every power of ten and its neighbours: each count of digits,
        // odd and even (the digits are written two at a time).
        let powers = (0..20).flat_map(|k| {
            let p = 10u64.pow(k);
            [p - 1, p, p + 1, p.saturating_mul(3).saturating_add(7)]
        });
        let numbers = edges.into_iter().chain(powers).chain(0..1_234);
        for number in numbers.chain([u64::MAX - 1, u64::MAX]) {
            for prefix in ["item-", "turn-", "", "é-", "a-prefix-beyond-16-bytes-"] {
                let id = ItemId::numbered(prefix, number);
                let text = format!("{prefix}{number}");
                assert_eq!(id.as_str(), text);
                assert_eq!(id, ItemId::from(text.as_str()));
                assert_eq!(
                    serde_json::to_string(&id).unwrap(),
                    serde_json::to_string(&text).unwrap()
                );
            }
        }
        assert_eq!(TurnId::numbered("turn-", 3), "turn-3");
    }

    #[test]
    fn ids_are_equal_exactly_when_their_text_is() {
        // Every length the word comparison splits at (0 to 3, 4 to 7, 8 to
        // 16, beyond), each id against a copy with one byte changed at
        // every position, and against a copy one byte shorter.
        for len in 0..=20 {
            let text: String = (0..len).map(|i| (b'a' + i as u8) as char).collect();
            let id = PartId::from(text.as_str());
            assert_eq!(id, PartId::new(text.clone()));
            assert_eq!(id, id.clone());
            for at in 0..len {
                let mut other = text.clone().into_bytes();
                other[at] = b'Z';
                let other = PartId::from(String::from_utf8(other).unwrap());
                assert_ne!(id, other, "{text:?} differs at {at}");
                assert_ne!(other, id);
            }
            if len > 0 {
                assert_ne!(id, PartId::from(&text[..len - 1]));
            }
        }
        // Equal text behind different representations still compares equal.
        let long = "toolu_01A09q90qw90lq917835lq9";
        assert_eq!(ToolCallId::from(long), ToolCallId::new(long.to_owned()));
        assert_ne!(
            ToolCallId::from(long),
            ToolCallId::from("toolu_01A09q90qw90lq917835lq8")
        );
    }

    #[cfg(target_pointer_width = "64")]
    #[test]
    fn an_id_and_an_optional_id_are_two_words() {
        assert_eq!(std::mem::size_of::<ItemId>(), 16);
        assert_eq!(std::mem::size_of::<Option<ItemId>>(), 16);
    }
}
