//! A tool call's arguments, kept as the JSON text the model sent.
//!
//! A parsed `serde_json::Value` object costs a B-tree node of about 600
//! bytes even for `{"path":"a.txt"}`; the text costs its length. A session
//! keeps every call it ever made in its transcript, so the text is what it
//! keeps: adapters check it once when the call arrives and write it back
//! verbatim in the next request, and the loop parses it for the call's tool
//! when the call runs (the parsed value lives as long as the call).
//!
//! An input a program builds from a `Value` (a scripted model, a host, a
//! test) keeps that value beside its text, so its tool gets it without a
//! parse; such an input costs the value's size as before.

use serde::de::{DeserializeOwned, MapAccess, SeqAccess, Visitor};
use serde::{Deserialize, Deserializer, Serialize, Serializer};
use serde_json::Value;
use std::fmt;
use std::sync::Arc;

/// The arguments of a tool call: JSON text, checked when it was made and
/// shared (a clone is a reference count).
///
/// Made from a model's text with [`from_json`](Self::from_json) (or
/// [`from_arguments`](Self::from_arguments), which reads empty text as
/// `{}`), from a `Value`'s text with [`from_value`](Self::from_value), or
/// from an owned `Value` with `From`, which also keeps the value for the
/// tool (see [`shared_value`](Self::shared_value)). It serializes as the JSON value it
/// holds, the same as the parsed `Value` it replaces, so saved transcripts
/// read back unchanged. Two inputs are equal when they hold the same JSON
/// value, whatever their spacing or key order.
///
/// ```
/// use agentkit_core::ToolInput;
/// use serde::Deserialize;
/// use serde_json::json;
///
/// let input = ToolInput::from_json(r#"{"path": "a.txt"}"#)?;
/// assert_eq!(input.as_str(), r#"{"path": "a.txt"}"#);
/// assert_eq!(input, json!({ "path": "a.txt" }));
///
/// #[derive(Deserialize)]
/// struct Read { path: String }
/// assert_eq!(input.parse::<Read>()?.path, "a.txt");
///
/// // A model's broken arguments are refused with serde_json's error.
/// assert!(ToolInput::from_json("{\"path\":").is_err());
/// # Ok::<(), serde_json::Error>(())
/// ```
#[derive(Clone)]
pub struct ToolInput {
    text: Arc<str>,
    /// The parsed value, when the input was made from one.
    value: Option<Arc<Value>>,
}

impl ToolInput {
    /// Checks `text` as one JSON value (nested no deeper than serde_json
    /// reads) and keeps it as it is, spacing included.
    pub fn from_json(text: &str) -> Result<Self, serde_json::Error> {
        serde_json::from_str::<Checked>(text)?;
        Ok(Self::text(Arc::from(text)))
    }

    /// As [`from_json`](Self::from_json), but empty or blank text (what
    /// providers stream for a call without arguments) is `{}`.
    pub fn from_arguments(text: &str) -> Result<Self, serde_json::Error> {
        if text.trim().is_empty() {
            Ok(Self::empty_object())
        } else {
            Self::from_json(text)
        }
    }

    /// `{}`, the input of a call without arguments.
    pub fn empty_object() -> Self {
        Self::text(Arc::from("{}"))
    }

    /// The compact JSON text of `value`, without keeping `value`.
    pub fn from_value(value: &Value) -> Self {
        Self::text(Arc::from(value.to_string()))
    }

    fn text(text: Arc<str>) -> Self {
        Self { text, value: None }
    }

    /// The JSON text.
    pub fn as_str(&self) -> &str {
        &self.text
    }

    /// Deserializes the input into `T` (borrowing from the text where `T`
    /// does).
    pub fn parse<'a, T: Deserialize<'a>>(&'a self) -> Result<T, serde_json::Error> {
        serde_json::from_str(&self.text)
    }

    /// Deserializes the input into an owned `T`.
    pub fn parse_owned<T: DeserializeOwned>(&self) -> Result<T, serde_json::Error> {
        serde_json::from_str(&self.text)
    }

    /// The input as a `Value`. Text is checked when the input is made, so
    /// this reads it back; the one exception, a `Value` built deeper than
    /// serde_json's recursion limit, reads back as `Value::Null`, which a
    /// tool's schema then refuses.
    pub fn to_value(&self) -> Value {
        match &self.value {
            Some(value) => Value::clone(value),
            None => self.parse().unwrap_or(Value::Null),
        }
    }

    /// The input as a shared `Value` for the call's tool: the value it was
    /// made from, else the text parsed (see [`to_value`](Self::to_value)).
    pub fn shared_value(&self) -> Arc<Value> {
        match &self.value {
            Some(value) => Arc::clone(value),
            None => Arc::new(self.to_value()),
        }
    }
}

/// Keeps `value` beside its text (see [`ToolInput::shared_value`]).
impl From<Value> for ToolInput {
    fn from(value: Value) -> Self {
        Self::from(Arc::new(value))
    }
}

/// Keeps `value` beside its text (see [`ToolInput::shared_value`]).
impl From<Arc<Value>> for ToolInput {
    fn from(value: Arc<Value>) -> Self {
        Self {
            text: Arc::from(value.to_string()),
            value: Some(value),
        }
    }
}

impl PartialEq for ToolInput {
    fn eq(&self, other: &Self) -> bool {
        self.text == other.text || self.to_value() == other.to_value()
    }
}

impl PartialEq<Value> for ToolInput {
    fn eq(&self, other: &Value) -> bool {
        self.to_value() == *other
    }
}

impl PartialEq<ToolInput> for Value {
    fn eq(&self, other: &ToolInput) -> bool {
        other == self
    }
}

impl fmt::Debug for ToolInput {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_tuple("ToolInput").field(&&*self.text).finish()
    }
}

/// The JSON text.
impl fmt::Display for ToolInput {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.text)
    }
}

/// As the JSON value, for any serializer (the shape saved transcripts have).
impl Serialize for ToolInput {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        match &self.value {
            Some(value) => value.serialize(serializer),
            None => self.to_value().serialize(serializer),
        }
    }
}

/// From any JSON value; kept as compact text.
impl<'de> Deserialize<'de> for ToolInput {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        Value::deserialize(deserializer).map(|value| Self::from_value(&value))
    }
}

/// Reads any JSON value and keeps nothing, through `deserialize_any`, so
/// serde_json's recursion limit applies as it does when the text is parsed
/// into a `Value` (`IgnoredAny` skips values without that limit).
struct Checked;

impl<'de> Deserialize<'de> for Checked {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer.deserialize_any(CheckedVisitor)
    }
}

struct CheckedVisitor;

impl<'de> Visitor<'de> for CheckedVisitor {
    type Value = Checked;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a JSON value")
    }

    fn visit_bool<E>(self, _: bool) -> Result<Checked, E> {
        Ok(Checked)
    }

    fn visit_i64<E>(self, _: i64) -> Result<Checked, E> {
        Ok(Checked)
    }

    fn visit_u64<E>(self, _: u64) -> Result<Checked, E> {
        Ok(Checked)
    }

    fn visit_f64<E>(self, _: f64) -> Result<Checked, E> {
        Ok(Checked)
    }

    fn visit_str<E>(self, _: &str) -> Result<Checked, E> {
        Ok(Checked)
    }

    fn visit_unit<E>(self) -> Result<Checked, E> {
        Ok(Checked)
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Checked, A::Error> {
        while seq.next_element::<Checked>()?.is_some() {}
        Ok(Checked)
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Checked, A::Error> {
        while map.next_entry::<Checked, Checked>()?.is_some() {}
        Ok(Checked)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn text_is_kept_verbatim_and_checked() {
        let input = ToolInput::from_json(" {\"b\": 1, \"a\": [true]} ").unwrap();
        assert_eq!(input.as_str(), " {\"b\": 1, \"a\": [true]} ");
        assert_eq!(input.to_string(), input.as_str());
        assert_eq!(input, json!({ "a": [true], "b": 1 }));
        for bad in ["", "{", "{\"a\":1} x", "[1,]", "nul"] {
            assert!(ToolInput::from_json(bad).is_err(), "{bad:?}");
        }
        let deep = "[".repeat(200) + &"]".repeat(200);
        assert!(
            ToolInput::from_json(&deep).is_err(),
            "deeper than serde_json reads"
        );
    }

    #[test]
    fn blank_arguments_are_an_empty_object() {
        for blank in ["", "  \n"] {
            assert_eq!(ToolInput::from_arguments(blank).unwrap().as_str(), "{}");
        }
        assert!(ToolInput::from_arguments("{\"a\"").is_err());
        assert_eq!(ToolInput::from_arguments("[1]").unwrap().as_str(), "[1]");
    }

    #[test]
    fn equal_values_are_equal_inputs_whatever_the_spacing() {
        let spaced = ToolInput::from_json(r#"{ "a": 1, "b": "x" }"#).unwrap();
        let compact = ToolInput::from_json(r#"{"b":"x","a":1}"#).unwrap();
        assert_eq!(spaced, compact);
        assert_ne!(spaced, ToolInput::from(json!({ "a": 2, "b": "x" })));
    }

    #[test]
    fn a_value_is_kept_for_the_tool_only_when_given_owned() {
        let value = Arc::new(json!({ "path": "a.txt" }));
        let kept = ToolInput::from(Arc::clone(&value));
        assert!(Arc::ptr_eq(&kept.shared_value(), &value));
        assert_eq!(kept.as_str(), r#"{"path":"a.txt"}"#);
        let text = ToolInput::from_value(&value);
        assert_eq!(text, kept);
        assert!(!Arc::ptr_eq(&text.shared_value(), &value));
        assert_eq!(*text.shared_value(), *value);
        let read: ToolInput = serde_json::from_str(r#"{"path":"a.txt"}"#).unwrap();
        assert!(read.value.is_none(), "a loaded input is text only");
    }

    #[test]
    fn serializes_as_the_value_and_reads_back_any_value() {
        let input = ToolInput::from_json(r#"{ "n": [1, null, 2.5], "s": "é\"" }"#).unwrap();
        let text = serde_json::to_string(&input).unwrap();
        assert_eq!(text, r#"{"n":[1,null,2.5],"s":"é\""}"#);
        let back: ToolInput = serde_json::from_str(&text).unwrap();
        assert_eq!(back.as_str(), text);
        assert_eq!(serde_json::to_value(&input).unwrap()["s"], "é\"");
    }

    #[test]
    fn parses_into_borrowing_types() {
        #[derive(Deserialize)]
        struct Args<'a> {
            #[serde(borrow)]
            text: std::borrow::Cow<'a, str>,
        }
        let input = ToolInput::from_json(r#"{"text":"hi"}"#).unwrap();
        assert!(matches!(
            input.parse::<Args>().unwrap().text,
            std::borrow::Cow::Borrowed("hi")
        ));
        assert!(input.parse_owned::<Vec<u8>>().is_err());
    }
}
