//! The transcript model shared by every agentkit crate.
//!
//! A conversation is a list of [`Item`]s. Each item has a [`ItemKind`] (who
//! said it) and a list of [`Part`]s (what was said: text, media, reasoning,
//! tool calls and their results). Models stream their answers as [`Delta`]s,
//! which a [`DeltaFolder`] turns back into parts.
//!
//! This crate holds plain data and a few small state machines; it has no
//! async runtime dependency, so every other layer can build on it.
//!
//! ```
//! use agentkit_core::{Item, ItemKind, Part, ToolCallPart, ToolResultPart, validate_transcript};
//! use serde_json::json;
//!
//! let transcript = vec![
//!     Item::text(ItemKind::User, "What is in README.md?"),
//!     Item::new(ItemKind::Assistant, vec![Part::ToolCall(ToolCallPart::new(
//!         "call-1", "read_file", json!({ "path": "README.md" }),
//!     ))]),
//!     Item::tool_result(ToolResultPart::success("call-1", "# agentkit")),
//! ];
//! assert!(validate_transcript(&transcript).is_ok());
//! ```

mod cancel;
mod data;
mod delta;
mod finish;
mod id;
mod item;
pub mod keys;
mod metadata;
mod model_error;
mod part;
mod text_chunk;
mod tool_input;
mod transcript;
mod usage;

pub use cancel::{CancellationController, CancellationHandle, Cancelled, TurnCancellation};
pub use data::DataRef;
pub use delta::{Delta, DeltaError, DeltaFolder, PartKind};
pub use finish::FinishReason;
pub use id::{ApprovalId, ItemId, PartId, SessionId, TaskId, ToolCallId, TurnId};
pub use item::{Item, ItemKind};
pub use metadata::{MetadataIter, MetadataMap};
pub use model_error::{ModelError, ModelErrorKind};
pub use part::{
    CustomPart, FilePart, MediaPart, Modality, Part, ReasoningPart, StructuredPart, TextPart,
    ToolCallPart, ToolOutput, ToolResultPart,
};
pub use text_chunk::{TextChunk, TextChunkBuilder};
pub use tool_input::ToolInput;
pub use transcript::{
    TranscriptError, open_tool_calls, validate_collecting_call_ids, validate_items,
    validate_transcript,
};
pub use usage::{CostUsage, TokenUsage, Usage};

// The README's example is compiled and run with the doc-tests.
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
struct ReadmeDoctests;
