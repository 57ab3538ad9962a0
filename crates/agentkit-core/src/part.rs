//! The pieces an item is made of.
//!
//! Parts are a closed set of shapes that every provider adapter knows how to
//! map, plus [`Part::Custom`] for anything else. Each variant serializes with
//! a `"type"` tag in snake_case (`"text"`, `"tool_call"`, ...).

use crate::{DataRef, MetadataMap, ToolCallId, ToolInput};
use serde::{Deserialize, Serialize};
use serde_json::Value;
use std::sync::Arc;

/// One piece of an [`Item`](crate::Item).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
#[non_exhaustive]
pub enum Part {
    /// Plain text.
    Text(TextPart),
    /// An image, audio clip or video.
    Media(MediaPart),
    /// A document or other file.
    File(FilePart),
    /// A JSON value, for structured output.
    Structured(StructuredPart),
    /// The model's reasoning, kept so it can be sent back unchanged.
    Reasoning(ReasoningPart),
    /// The model asks for a tool to be called.
    ToolCall(ToolCallPart),
    /// The answer to a tool call.
    ToolResult(ToolResultPart),
    /// Anything else; adapters that do not know the kind skip it.
    Custom(CustomPart),
}

impl Part {
    /// A text part.
    pub fn text(text: impl Into<String>) -> Self {
        Part::Text(TextPart::new(text))
    }

    /// The text of a text part.
    pub fn as_text(&self) -> Option<&str> {
        match self {
            Part::Text(part) => Some(&part.text),
            _ => None,
        }
    }

    /// The tool call, if this part is one.
    pub fn as_tool_call(&self) -> Option<&ToolCallPart> {
        match self {
            Part::ToolCall(call) => Some(call),
            _ => None,
        }
    }

    /// The tool result, if this part is one.
    pub fn as_tool_result(&self) -> Option<&ToolResultPart> {
        match self {
            Part::ToolResult(result) => Some(result),
            _ => None,
        }
    }
}

/// Plain text.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct TextPart {
    /// The text.
    pub text: String,
    /// Extra data, such as provider annotations.
    #[serde(default, skip_serializing_if = "MetadataMap::is_empty")]
    pub metadata: MetadataMap,
}

impl TextPart {
    /// A text part with no metadata.
    pub fn new(text: impl Into<String>) -> Self {
        Self {
            text: text.into(),
            metadata: MetadataMap::new(),
        }
    }
}

/// What kind of media a [`MediaPart`] holds.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum Modality {
    /// A still image.
    Image,
    /// Sound.
    Audio,
    /// Moving pictures.
    Video,
}

/// An image, audio clip or video.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct MediaPart {
    /// Image, audio or video.
    pub modality: Modality,
    /// The MIME type, such as `image/png`.
    pub mime_type: String,
    /// Where the bytes are.
    pub data: DataRef,
    /// Extra data.
    #[serde(default, skip_serializing_if = "MetadataMap::is_empty")]
    pub metadata: MetadataMap,
}

impl MediaPart {
    /// An inline image.
    pub fn image(mime_type: impl Into<String>, bytes: impl Into<Vec<u8>>) -> Self {
        Self {
            modality: Modality::Image,
            mime_type: mime_type.into(),
            data: DataRef::bytes(bytes),
            metadata: MetadataMap::new(),
        }
    }
}

/// A document or other file.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct FilePart {
    /// The file name, when known.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    /// The MIME type, when known.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mime_type: Option<String>,
    /// Where the bytes are.
    pub data: DataRef,
    /// Extra data.
    #[serde(default, skip_serializing_if = "MetadataMap::is_empty")]
    pub metadata: MetadataMap,
}

/// A JSON value.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct StructuredPart {
    /// The value.
    pub value: Value,
    /// The JSON Schema the value was asked to follow, if any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub schema: Option<Value>,
    /// Extra data.
    #[serde(default, skip_serializing_if = "MetadataMap::is_empty")]
    pub metadata: MetadataMap,
}

/// The model's reasoning.
///
/// Providers that sign or encrypt reasoning require it back byte for byte on
/// the next request; adapters store those opaque values here and never turn
/// reasoning into plain text.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct ReasoningPart {
    /// The readable reasoning or its summary, when the provider shows it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub summary: Option<String>,
    /// The provider's signature over the reasoning (Anthropic `signature`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub signature: Option<String>,
    /// Reasoning the provider only hands out encrypted (Anthropic
    /// `redacted_thinking`, OpenAI `encrypted_content`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub encrypted: Option<String>,
    /// Extra data; adapters record which provider produced the part under
    /// `agentkit.provider`.
    #[serde(default, skip_serializing_if = "MetadataMap::is_empty")]
    pub metadata: MetadataMap,
}

/// A request from the model to call a tool.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ToolCallPart {
    /// The call's id, chosen by the provider.
    pub id: ToolCallId,
    /// The tool's name; shared, so the open round and the tool's request
    /// hold the transcript's copy (it serializes as a plain string).
    pub name: Arc<str>,
    /// The arguments, as the JSON text the model sent (checked by the
    /// adapter). Shared: the transcript and the open round hold the same
    /// text; [`ToolInput::parse`] reads it into a type.
    pub input: ToolInput,
    /// Extra data.
    #[serde(default, skip_serializing_if = "MetadataMap::is_empty")]
    pub metadata: MetadataMap,
}

impl ToolCallPart {
    /// A tool call with no metadata; `input` is a [`ToolInput`] or a
    /// `Value`.
    pub fn new(
        id: impl Into<ToolCallId>,
        name: impl Into<Arc<str>>,
        input: impl Into<ToolInput>,
    ) -> Self {
        Self {
            id: id.into(),
            name: name.into(),
            input: input.into(),
            metadata: MetadataMap::new(),
        }
    }
}

/// What a tool returned.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", content = "value", rename_all = "snake_case")]
#[non_exhaustive]
pub enum ToolOutput {
    /// Text, the common case.
    Text(String),
    /// A JSON value.
    Structured(Value),
    /// Several parts: text, images, files.
    Parts(Vec<Part>),
}

impl ToolOutput {
    /// The output rendered as text: text as is, JSON compactly, parts'
    /// text joined by newlines (non-text parts are named, not dropped silently).
    pub fn to_text(&self) -> String {
        match self {
            ToolOutput::Text(text) => text.clone(),
            ToolOutput::Structured(value) => value.to_string(),
            ToolOutput::Parts(parts) => parts
                .iter()
                .map(|part| match part {
                    Part::Text(text) => text.text.clone(),
                    Part::Structured(s) => s.value.to_string(),
                    Part::Media(m) => format!("[{} {}]", modality_name(m.modality), m.mime_type),
                    Part::File(f) => format!("[file {}]", f.name.as_deref().unwrap_or("unnamed")),
                    _ => String::from("[part]"),
                })
                .collect::<Vec<_>>()
                .join("\n"),
        }
    }
}

fn modality_name(modality: Modality) -> &'static str {
    match modality {
        Modality::Image => "image",
        Modality::Audio => "audio",
        Modality::Video => "video",
    }
}

impl From<String> for ToolOutput {
    fn from(value: String) -> Self {
        ToolOutput::Text(value)
    }
}

impl From<&str> for ToolOutput {
    fn from(value: &str) -> Self {
        ToolOutput::Text(value.to_owned())
    }
}

impl From<Value> for ToolOutput {
    fn from(value: Value) -> Self {
        ToolOutput::Structured(value)
    }
}

/// A call's shared input as output (an echo), copied only if still shared.
impl From<Arc<Value>> for ToolOutput {
    fn from(value: Arc<Value>) -> Self {
        ToolOutput::Structured(Arc::unwrap_or_clone(value))
    }
}

/// The answer to one tool call.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ToolResultPart {
    /// The id of the call this answers.
    pub call_id: ToolCallId,
    /// What the tool returned, or the error message.
    pub output: ToolOutput,
    /// `true` when the call failed, was denied, skipped or cancelled.
    #[serde(default)]
    pub is_error: bool,
    /// Extra data, such as `agentkit.error_kind`.
    #[serde(default, skip_serializing_if = "MetadataMap::is_empty")]
    pub metadata: MetadataMap,
}

impl ToolResultPart {
    /// A successful result.
    pub fn success(call_id: impl Into<ToolCallId>, output: impl Into<ToolOutput>) -> Self {
        Self {
            call_id: call_id.into(),
            output: output.into(),
            is_error: false,
            metadata: MetadataMap::new(),
        }
    }

    /// An error result; the message is what the model will read.
    pub fn error(call_id: impl Into<ToolCallId>, message: impl Into<String>) -> Self {
        Self {
            call_id: call_id.into(),
            output: ToolOutput::Text(message.into()),
            is_error: true,
            metadata: MetadataMap::new(),
        }
    }

    /// Adds a metadata entry.
    pub fn with_metadata(mut self, key: impl Into<String>, value: impl Into<Value>) -> Self {
        self.metadata.insert(key.into(), value.into());
        self
    }
}

/// A part of a kind agentkit does not model.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct CustomPart {
    /// A name for the kind, such as `acme.citation`.
    pub kind: String,
    /// The content.
    pub value: Value,
    /// Extra data.
    #[serde(default, skip_serializing_if = "MetadataMap::is_empty")]
    pub metadata: MetadataMap,
}
