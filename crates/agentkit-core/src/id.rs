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
                let (a, b) = (self.as_str(), other.as_str());
                // A clone of a long id shares its string: equal without
                // comparing it (the delta folder finds a part by the id
                // each delta carries).
                a.len() == b.len() && (std::ptr::eq(a.as_ptr(), b.as_ptr()) || a == b)
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
    let mut rest = number;
    for at in (prefix.len()..len).rev() {
        text.0[at] = b'0' + (rest % 10) as u8;
        rest /= 10;
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
        for number in edges.into_iter().chain([u64::MAX - 1, u64::MAX]) {
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

    #[cfg(target_pointer_width = "64")]
    #[test]
    fn an_id_and_an_optional_id_are_two_words() {
        assert_eq!(std::mem::size_of::<ItemId>(), 16);
        assert_eq!(std::mem::size_of::<Option<ItemId>>(), 16);
    }
}
