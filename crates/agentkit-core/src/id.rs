//! Identifier newtypes.
//!
//! Every id is a string wrapped in its own type so a `ToolCallId` can never be
//! passed where an `ItemId` is expected. Providers choose tool-call ids, so ids
//! are free-form strings rather than numbers; they serialize as plain strings.

use serde::{Deserialize, Serialize};
use std::fmt;
use std::sync::Arc;

macro_rules! string_id {
    ($(#[$doc:meta])* $name:ident) => {
        $(#[$doc])*
        ///
        /// Cloning is cheap: the string is shared.
        #[derive(Clone, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
        #[serde(transparent)]
        pub struct $name(Arc<str>);

        impl $name {
            /// Wraps a string as this id.
            pub fn new(value: impl Into<String>) -> Self {
                Self(Arc::from(value.into()))
            }

            /// The id as a string slice.
            pub fn as_str(&self) -> &str {
                &self.0
            }
        }

        impl fmt::Display for $name {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str(&self.0)
            }
        }

        impl fmt::Debug for $name {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                write!(f, "{}({:?})", stringify!($name), &*self.0)
            }
        }

        impl From<&str> for $name {
            fn from(value: &str) -> Self {
                Self(Arc::from(value))
            }
        }

        impl From<String> for $name {
            fn from(value: String) -> Self {
                Self::new(value)
            }
        }

        impl AsRef<str> for $name {
            fn as_ref(&self) -> &str {
                &self.0
            }
        }

        impl PartialEq<str> for $name {
            fn eq(&self, other: &str) -> bool {
                &*self.0 == other
            }
        }

        impl PartialEq<&str> for $name {
            fn eq(&self, other: &&str) -> bool {
                &*self.0 == *other
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
