//! What the model is told about a tool.
//!
//! Specs are built once and shared behind an `Arc`: the loop lists every tool
//! on every model call, and copying schemas there would cost more than the
//! rest of the turn bookkeeping.

use agentkit_core::MetadataMap;
use serde::{Deserialize, Serialize};
use serde_json::Value;

/// The longest tool name every major provider accepts.
pub const MAX_TOOL_NAME_LEN: usize = 64;

/// A tool name outside `^[a-zA-Z0-9_-]{1,64}$`.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("invalid tool name {name:?}: {reason}")]
pub struct InvalidToolName {
    /// The name that was refused.
    pub name: String,
    /// What is wrong with it.
    pub reason: &'static str,
}

/// Checks a name against `^[a-zA-Z0-9_-]{1,64}$`, the pattern every provider
/// (OpenAI, Anthropic, Gemini, Bedrock) accepts.
pub fn validate_tool_name(name: &str) -> Result<(), InvalidToolName> {
    let refuse = |reason| {
        Err(InvalidToolName {
            name: name.to_owned(),
            reason,
        })
    };
    if name.is_empty() {
        return refuse("it is empty");
    }
    if name.len() > MAX_TOOL_NAME_LEN {
        return refuse("it is longer than 64 characters");
    }
    if !name
        .bytes()
        .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-')
    {
        return refuse("only ASCII letters, digits, '_' and '-' are allowed");
    }
    Ok(())
}

/// Hints about a tool's behaviour, as in MCP's tool annotations. They inform
/// policies and schedulers; they are not enforced.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct ToolAnnotations {
    /// The tool does not change anything.
    pub read_only: bool,
    /// The tool may destroy data (delete, overwrite).
    pub destructive: bool,
    /// Calling it twice with the same input has the effect of calling it once.
    pub idempotent: bool,
    /// Calls may run concurrently with other calls of the same round.
    pub parallel_safe: bool,
}

/// A tool's name, description and input schema.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ToolSpec {
    /// The name the model calls it by; matches `^[a-zA-Z0-9_-]{1,64}$`.
    pub name: String,
    /// What it does, for the model.
    pub description: String,
    /// JSON Schema of the input object.
    pub input_schema: Value,
    /// Behaviour hints.
    #[serde(default)]
    pub annotations: ToolAnnotations,
    /// Extra data.
    #[serde(default, skip_serializing_if = "MetadataMap::is_empty")]
    pub metadata: MetadataMap,
}

impl ToolSpec {
    /// A spec with a validated name and default annotations.
    pub fn new(
        name: impl Into<String>,
        description: impl Into<String>,
        input_schema: Value,
    ) -> Result<Self, InvalidToolName> {
        let name = name.into();
        validate_tool_name(&name)?;
        Ok(Self {
            name,
            description: description.into(),
            input_schema,
            annotations: ToolAnnotations::default(),
            metadata: MetadataMap::new(),
        })
    }

    /// Sets the annotations.
    pub fn with_annotations(mut self, annotations: ToolAnnotations) -> Self {
        self.annotations = annotations;
        self
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_follow_the_provider_pattern() {
        assert!(validate_tool_name("fs_read-file2").is_ok());
        assert!(validate_tool_name(&"a".repeat(64)).is_ok());
        assert_eq!(validate_tool_name("").unwrap_err().reason, "it is empty");
        assert!(validate_tool_name(&"a".repeat(65)).is_err());
        assert!(validate_tool_name("fs.read").is_err());
        assert!(validate_tool_name("läsa").is_err());
        assert!(ToolSpec::new("has space", "", serde_json::json!({})).is_err());
    }
}
