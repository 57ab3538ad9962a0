//! Defaults shared by the tools' typed arguments.
//!
//! The arguments themselves are typed structs (see `TypedTool`): the
//! executor checks a call against the schema generated from them, and a
//! deserialization error names the field for the model.

/// `"."`, for inputs where the path is optional and means the root.
pub(crate) fn dot() -> String {
    ".".into()
}
