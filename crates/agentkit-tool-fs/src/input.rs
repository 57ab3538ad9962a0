//! Reading a call's arguments into typed structs.
//!
//! The executor has already checked the input against the tool's schema, so
//! a failure here means the schema and the struct disagree, or the tool was
//! called directly with bad input; either way the model gets the reason.

use agentkit_tools_core::ToolError;
use serde::de::DeserializeOwned;
use serde_json::Value;

/// Deserializes a call's input.
pub(crate) fn parse<T: DeserializeOwned>(input: &Value) -> Result<T, ToolError> {
    T::deserialize(input).map_err(|err| ToolError::InvalidInput(err.to_string()))
}

/// `"."`, for inputs where the path is optional and means the root.
pub(crate) fn dot() -> String {
    ".".into()
}
