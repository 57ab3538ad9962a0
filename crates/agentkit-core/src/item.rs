//! Transcript items: one message from one participant.

use crate::{FinishReason, ItemId, MetadataMap, Part, ToolResultPart};
use serde::{Deserialize, Serialize};

/// Who an item comes from.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum ItemKind {
    /// Instructions that frame the whole session.
    System,
    /// Instructions from the application developer (OpenAI's `developer` role).
    Developer,
    /// The human, or whoever plays that role.
    User,
    /// The model.
    Assistant,
    /// Tool results.
    Tool,
    /// Context the host adds (retrieved documents, file contents, memory).
    Context,
    /// Something that happened outside the conversation, told to the model
    /// (a file changed, a timer fired).
    Notification,
}

/// One entry of the transcript.
///
/// ```
/// use agentkit_core::{Item, ItemKind, Part, ToolCallPart, ToolResultPart};
/// use serde_json::json;
///
/// let question = Item::user("What is in notes.md?");
/// assert_eq!(question.kind, ItemKind::User);
///
/// // The model asks for a tool; the answer is an item of its own.
/// let call = ToolCallPart::new("call-1", "fs_read_file", json!({ "path": "notes.md" }));
/// let asked = Item::new(ItemKind::Assistant, vec![Part::ToolCall(call)]);
/// let answered = Item::tool_result(ToolResultPart::success("call-1", "buy milk"));
/// assert_eq!(&*asked.tool_calls().next().unwrap().name, "fs_read_file");
/// assert_eq!(answered.tool_results().next().unwrap().output.to_text(), "buy milk");
///
/// // Every call answered: a valid transcript.
/// agentkit_core::validate_transcript(&[question, asked, answered]).unwrap();
/// ```
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(from = "StoredItem")]
pub struct Item {
    /// The item's id; the driver assigns one when an item is appended without.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub id: Option<ItemId>,
    /// Who it comes from.
    pub kind: ItemKind,
    /// What it says.
    pub parts: Vec<Part>,
    /// Extra data.
    #[serde(default, skip_serializing_if = "MetadataMap::is_empty")]
    pub metadata: MetadataMap,
    /// Why the model's answer ended, when the item's content does not say
    /// it (see [`Item::finish_reason`]). Boxed: an `Item` stays 64 bytes,
    /// and only the rare reasons allocate.
    #[serde(
        rename = "finish_reason",
        default,
        skip_serializing_if = "Option::is_none"
    )]
    finish: Option<Box<FinishReason>>,
}

/// An item as stored: the fields of [`Item`], read from either form of the
/// finish reason (the `finish_reason` field, or the `agentkit.finish_reason`
/// metadata entry that transcripts saved before the field carry).
#[derive(Deserialize)]
struct StoredItem {
    #[serde(default)]
    id: Option<ItemId>,
    kind: ItemKind,
    parts: Vec<Part>,
    #[serde(default)]
    metadata: MetadataMap,
    #[serde(default)]
    finish_reason: Option<FinishReason>,
}

impl From<StoredItem> for Item {
    fn from(stored: StoredItem) -> Self {
        let mut item = Item {
            id: stored.id,
            kind: stored.kind,
            parts: stored.parts,
            metadata: stored.metadata,
            finish: None,
        };
        let mut reason = stored.finish_reason;
        // The old form moves into the field; an entry that is not a reason
        // stays where it was.
        if !item.metadata.is_empty()
            && let Some(value) = item.metadata.get(crate::keys::FINISH_REASON)
            && let Ok(old) = FinishReason::deserialize(value)
        {
            item.metadata.remove(crate::keys::FINISH_REASON);
            reason = reason.or(Some(old));
        }
        if let Some(reason) = reason {
            item.set_finish_reason(reason);
        }
        item
    }
}

impl Item {
    /// An item with these parts, no id and no metadata.
    pub fn new(kind: ItemKind, parts: Vec<Part>) -> Self {
        Self {
            id: None,
            kind,
            parts,
            metadata: MetadataMap::new(),
            finish: None,
        }
    }

    /// An item holding one text part.
    pub fn text(kind: ItemKind, text: impl Into<String>) -> Self {
        Self::new(kind, vec![Part::text(text)])
    }

    /// A user message.
    pub fn user(text: impl Into<String>) -> Self {
        Self::text(ItemKind::User, text)
    }

    /// A system prompt.
    pub fn system(text: impl Into<String>) -> Self {
        Self::text(ItemKind::System, text)
    }

    /// An assistant message.
    pub fn assistant(text: impl Into<String>) -> Self {
        Self::text(ItemKind::Assistant, text)
    }

    /// A tool item holding one result.
    pub fn tool_result(result: ToolResultPart) -> Self {
        Self::new(ItemKind::Tool, vec![Part::ToolResult(result)])
    }

    /// Sets the id.
    pub fn with_id(mut self, id: impl Into<ItemId>) -> Self {
        self.id = Some(id.into());
        self
    }

    /// Adds a metadata entry.
    pub fn with_metadata(
        mut self,
        key: impl Into<String>,
        value: impl Into<serde_json::Value>,
    ) -> Self {
        self.metadata.insert(key.into(), value.into());
        self
    }

    /// The text parts joined together.
    pub fn text_content(&self) -> String {
        self.parts.iter().filter_map(Part::as_text).collect()
    }

    /// The tool calls this item makes, in order.
    pub fn tool_calls(&self) -> impl Iterator<Item = &crate::ToolCallPart> {
        self.parts.iter().filter_map(Part::as_tool_call)
    }

    /// The tool results this item carries, in order.
    pub fn tool_results(&self) -> impl Iterator<Item = &ToolResultPart> {
        self.parts.iter().filter_map(Part::as_tool_result)
    }

    /// Why the model's answer in this assistant item ended; `None` for
    /// other kinds of item.
    ///
    /// An item keeps the reason only when its content does not already say
    /// it: an answer with tool calls that ended for them
    /// ([`FinishReason::ToolCall`]) and one without calls that ended
    /// normally ([`FinishReason::Completed`]) keep nothing, so the ordinary
    /// answer costs nothing. It serializes as the item's `finish_reason`
    /// field; a transcript saved with the older
    /// [`keys::FINISH_REASON`] metadata entry reads into the field.
    ///
    /// [`keys::FINISH_REASON`]: crate::keys::FINISH_REASON
    ///
    /// ```
    /// use agentkit_core::{FinishReason, Item};
    ///
    /// assert_eq!(Item::assistant("done").finish_reason(), Some(FinishReason::Completed));
    /// let cut = Item::assistant("The answer is").with_finish_reason(FinishReason::MaxTokens);
    /// assert_eq!(cut.finish_reason(), Some(FinishReason::MaxTokens));
    /// assert_eq!(
    ///     serde_json::to_value(&cut).unwrap()["finish_reason"],
    ///     "max_tokens"
    /// );
    /// assert_eq!(Item::user("hi").finish_reason(), None);
    /// ```
    pub fn finish_reason(&self) -> Option<FinishReason> {
        if self.kind != ItemKind::Assistant {
            return None;
        }
        if let Some(reason) = &self.finish {
            return Some((**reason).clone());
        }
        // An item built in code with the older metadata entry.
        if !self.metadata.is_empty()
            && let Some(value) = self.metadata.get(crate::keys::FINISH_REASON)
        {
            return FinishReason::deserialize(value).ok();
        }
        Some(self.implied_finish_reason())
    }

    /// The reason an assistant item's content says: calls, or a finished
    /// answer.
    fn implied_finish_reason(&self) -> FinishReason {
        if self.tool_calls().next().is_some() {
            FinishReason::ToolCall
        } else {
            FinishReason::Completed
        }
    }

    /// Records why the model's answer ended; a reason the content already
    /// says (see [`finish_reason`](Self::finish_reason)) is not kept. Only
    /// assistant items keep one.
    pub fn set_finish_reason(&mut self, reason: FinishReason) {
        self.finish = (self.kind == ItemKind::Assistant && reason != self.implied_finish_reason())
            .then(|| Box::new(reason));
    }

    /// The item with this finish reason (see
    /// [`set_finish_reason`](Self::set_finish_reason)).
    pub fn with_finish_reason(mut self, reason: FinishReason) -> Self {
        self.set_finish_reason(reason);
        self
    }
}

#[cfg(all(test, target_pointer_width = "64"))]
#[test]
fn an_item_stays_64_bytes_with_its_finish_reason() {
    // The field sits where the kind's padding was, next to a one-pointer
    // metadata map: a transcript of many items pays nothing for it.
    assert_eq!(std::mem::size_of::<Item>(), 64);
}
