//! Identifier newtypes.
//!
//! Every id is a string wrapped in its own type so a `ToolCallId` can never be
//! passed where an `ItemId` is expected. Providers choose tool-call ids, so ids
//! are free-form strings rather than numbers; they serialize as plain strings.
//!
//! The string is a [`SmolStr`]: ids of up to 23 bytes (the loop's `item-42`,
//! most generated ids) live inline with no allocation, longer ones (a
//! provider's `call_…`) are shared. Loading a long transcript gives every
//! item an id, so that allocation was a third of the cost of loading.

use serde::{Deserialize, Serialize};
use smol_str::SmolStr;
use std::fmt;

macro_rules! string_id {
    ($(#[$doc:meta])* $name:ident) => {
        $(#[$doc])*
        ///
        /// Cloning is cheap: a short id is copied, a long one shared.
        #[derive(Clone, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
        #[serde(transparent)]
        pub struct $name(SmolStr);

        impl $name {
            /// Wraps a string as this id.
            pub fn new(value: impl Into<String>) -> Self {
                Self(SmolStr::from(value.into()))
            }

            /// The id as a string slice.
            pub fn as_str(&self) -> &str {
                self.0.as_str()
            }
        }

        impl fmt::Display for $name {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str(self.0.as_str())
            }
        }

        impl fmt::Debug for $name {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                write!(f, "{}({:?})", stringify!($name), self.0.as_str())
            }
        }

        impl From<&str> for $name {
            fn from(value: &str) -> Self {
                Self(SmolStr::new(value))
            }
        }

        impl From<String> for $name {
            fn from(value: String) -> Self {
                Self::new(value)
            }
        }

        impl AsRef<str> for $name {
            fn as_ref(&self) -> &str {
                self.0.as_str()
            }
        }

        impl PartialEq<str> for $name {
            fn eq(&self, other: &str) -> bool {
                self.0.as_str() == other
            }
        }

        impl PartialEq<&str> for $name {
            fn eq(&self, other: &&str) -> bool {
                self.0.as_str() == *other
            }
        }
    };
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
}
