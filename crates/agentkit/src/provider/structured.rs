//! Structured output: an answer parsed into a Rust type.
//!
//! A turn asks for it with an [`OutputSchema`] on the
//! [`TurnRequest`](agentkit_loop::TurnRequest); each adapter asks its API
//! for JSON matching the schema (OpenAI `response_format` / `text.format`,
//! Anthropic a forced tool) and hands the answer over as text.
//! [`parse_structured`] turns that text back into the type, with a typed
//! error when the model's output does not match. With the `schemars`
//! feature, [`output_schema_for`] derives the schema from the type.

use agentkit_core::{FinishReason, Item, ItemKind};
use agentkit_loop::{OutputSchema, TurnResult};
use serde::de::DeserializeOwned;

/// Why a structured answer could not be had.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum StructuredOutputError {
    /// The turn produced no assistant text.
    #[error("the model gave no answer to parse")]
    NoAnswer,
    /// The turn ended before the answer was complete.
    #[error("the answer is incomplete: the turn ended with {0:?}")]
    Incomplete(FinishReason),
    /// The answer is not JSON.
    #[error("the answer is not JSON ({source}): {text}")]
    NotJson {
        /// The model's text.
        text: String,
        /// The parser's complaint.
        source: serde_json::Error,
    },
    /// The answer is JSON but does not match the type.
    #[error("the answer does not match the expected type ({source}): {text}")]
    Mismatch {
        /// The model's text.
        text: String,
        /// What did not match.
        source: serde_json::Error,
    },
}

/// Parses the last assistant answer of a finished turn into `T`.
///
/// ```
/// use agentkit::core::{FinishReason, Item, ItemKind};
/// use agentkit::provider::{StructuredOutputError, parse_structured_items};
///
/// #[derive(serde::Deserialize, Debug, PartialEq)]
/// struct Place { city: String }
///
/// let items = vec![Item::text(ItemKind::Assistant, r#"{"city": "Genève"}"#)];
/// let place: Place = parse_structured_items(&items).unwrap();
/// assert_eq!(place.city, "Genève");
///
/// let wrong = vec![Item::text(ItemKind::Assistant, r#"{"town": "Genève"}"#)];
/// let err = parse_structured_items::<Place>(&wrong).unwrap_err();
/// assert!(matches!(err, StructuredOutputError::Mismatch { .. }));
/// ```
pub fn parse_structured<T: DeserializeOwned>(
    result: &TurnResult,
) -> Result<T, StructuredOutputError> {
    match &result.finish_reason {
        FinishReason::Completed => {}
        other => return Err(StructuredOutputError::Incomplete(other.clone())),
    }
    parse_structured_items(&result.items)
}

/// Parses the text of the last assistant item of `items` into `T`.
pub fn parse_structured_items<T: DeserializeOwned>(
    items: &[Item],
) -> Result<T, StructuredOutputError> {
    let text = items
        .iter()
        .rev()
        .filter(|item| item.kind == ItemKind::Assistant)
        .map(Item::text_content)
        .find(|text| !text.trim().is_empty())
        .ok_or(StructuredOutputError::NoAnswer)?;
    let value: serde_json::Value = serde_json::from_str(strip_fence(&text)).map_err(|source| {
        StructuredOutputError::NotJson {
            text: text.clone(),
            source,
        }
    })?;
    serde_json::from_value(value).map_err(|source| StructuredOutputError::Mismatch { text, source })
}

/// Some compatible servers wrap JSON in a Markdown code fence.
fn strip_fence(text: &str) -> &str {
    let trimmed = text.trim();
    trimmed
        .strip_prefix("```json")
        .or_else(|| trimmed.strip_prefix("```"))
        .and_then(|rest| rest.strip_suffix("```"))
        .map(str::trim)
        .unwrap_or(trimmed)
}

/// The output schema of `T`, named `name`, derived with `schemars`.
///
/// The schema is used as derived; the OpenAI adapters normalise a strict
/// schema for OpenAI's strict mode (closed objects, every property
/// required) when they send it.
#[cfg(feature = "schemars")]
pub fn output_schema_for<T: schemars::JsonSchema>(name: impl Into<String>) -> OutputSchema {
    let schema = schemars::schema_for!(T);
    let mut value = serde_json::to_value(&schema).unwrap_or_default();
    if let Some(object) = value.as_object_mut() {
        object.remove("$schema");
    }
    let mut output = OutputSchema::new(name, value.clone());
    if let Some(description) = value.get("description").and_then(|d| d.as_str()) {
        output = output.with_description(description);
    }
    output
}

/// Unused without the `schemars` feature; keeps the import meaningful.
#[cfg(not(feature = "schemars"))]
#[allow(dead_code)]
fn _schema_type(_: &OutputSchema) {}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(serde::Deserialize, Debug, PartialEq)]
    struct Verdict {
        ok: bool,
    }

    #[test]
    fn answers_parse_or_say_why_not() {
        let answer = |text: &str| vec![Item::user("q"), Item::text(ItemKind::Assistant, text)];
        assert_eq!(
            parse_structured_items::<Verdict>(&answer(r#"{"ok": true}"#)).unwrap(),
            Verdict { ok: true }
        );
        assert_eq!(
            parse_structured_items::<Verdict>(&answer("```json\n{\"ok\": false}\n```")).unwrap(),
            Verdict { ok: false }
        );
        assert!(matches!(
            parse_structured_items::<Verdict>(&answer("yes")),
            Err(StructuredOutputError::NotJson { .. })
        ));
        assert!(matches!(
            parse_structured_items::<Verdict>(&answer(r#"{"ok": "yes"}"#)),
            Err(StructuredOutputError::Mismatch { .. })
        ));
        assert!(matches!(
            parse_structured_items::<Verdict>(&[Item::user("q")]),
            Err(StructuredOutputError::NoAnswer)
        ));
    }
}
