//! A running tool asking its host a question (an MCP server's
//! `elicitation/create`, a tool that needs a value only the user has),
//! without giving up the call.
//!
//! The tool awaits [`ToolContext::ask`](crate::ToolContext::ask); whoever
//! runs the call decides how the question reaches a person. Inside the agent
//! loop it becomes a blocking interrupt for that call alone (the other calls
//! of the round go on) and the answer resumes the waiting future: the call
//! is not run again. Outside a loop nobody is asked and the answer is
//! [`HostAnswer::Decline`].
//!
//! Form answers are checked here, below every host: [`complete_form`] fills
//! in the schema's defaults and refuses content that does not match, with a
//! [`FormError`] a host can show next to the field.

use agentkit_core::ToolCallId;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;

/// What a running tool asks its host.
///
/// ```
/// use agentkit_tools_core::{HostQuestion, QuestionKind};
/// use serde_json::json;
///
/// let question = HostQuestion::form(
///     "Which branch should I deploy?",
///     json!({ "type": "object", "properties": { "branch": { "type": "string", "default": "main" } } }),
/// )
/// .from_source("deployer");
/// assert!(matches!(question.kind, QuestionKind::Form { .. }));
/// ```
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct HostQuestion {
    /// Who asks, for display (an MCP server's name); empty when the tool
    /// asks for itself.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub source: String,
    /// The message for the user.
    pub message: String,
    /// A form to fill in, or a URL to visit.
    pub kind: QuestionKind,
}

impl HostQuestion {
    /// A form question: fill in a flat object described by `schema`.
    pub fn form(message: impl Into<String>, schema: Value) -> Self {
        Self {
            source: String::new(),
            message: message.into(),
            kind: QuestionKind::Form { schema },
        }
    }

    /// A URL question: visit `url` (out of band: what must not pass
    /// through the client, such as credentials for a third party).
    pub fn url(message: impl Into<String>, url: impl Into<String>, id: impl Into<String>) -> Self {
        Self {
            source: String::new(),
            message: message.into(),
            kind: QuestionKind::Url {
                url: url.into(),
                id: id.into(),
            },
        }
    }

    /// The same question, naming who asks.
    pub fn from_source(mut self, source: impl Into<String>) -> Self {
        self.source = source.into();
        self
    }

    /// Checks an answer against the question: accepted form content gets
    /// the schema's defaults and must match it ([`complete_form`]); a URL
    /// question's accept carries no content.
    pub fn check(&self, answer: HostAnswer) -> Result<HostAnswer, FormError> {
        match (answer, &self.kind) {
            (HostAnswer::Accept(content), QuestionKind::Form { schema }) => {
                complete_form(schema, content).map(HostAnswer::Accept)
            }
            (HostAnswer::Accept(_), _) => Ok(HostAnswer::Accept(Map::new())),
            (other, _) => Ok(other),
        }
    }
}

/// The two kinds of question.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "mode", rename_all = "snake_case")]
#[non_exhaustive]
pub enum QuestionKind {
    /// Fill in a flat object described by `schema` (JSON Schema with
    /// primitive properties, as MCP's form elicitation).
    Form {
        /// The requested schema.
        schema: Value,
    },
    /// Visit `url`; accepting means the user agreed to go there.
    Url {
        /// Where to send the user.
        url: String,
        /// The asker's id of this question (MCP's `elicitationId`).
        id: String,
    },
}

/// The host's answer to a [`HostQuestion`].
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "action", content = "content", rename_all = "snake_case")]
#[non_exhaustive]
pub enum HostAnswer {
    /// The user accepted; for forms, the content (checked, defaults
    /// filled in); empty for URL questions.
    Accept(Map<String, Value>),
    /// The user said no; the tool goes on without the input.
    Decline,
    /// The user dismissed the question (or the turn was cancelled); the
    /// tool should stop what asked.
    Cancel,
}

/// What a [`QuestionSink`] calls: the call asking and its question, to the
/// answer's future.
type AskFn = dyn Fn(ToolCallId, HostQuestion) -> Pin<Box<dyn Future<Output = HostAnswer> + Send>>
    + Send
    + Sync;

/// Where a running call's questions go. Cheap to clone; the default asks
/// nobody and every question is declined.
#[derive(Clone, Default)]
pub struct QuestionSink {
    inner: Option<Arc<AskFn>>,
}

impl QuestionSink {
    /// A sink that hands each question to `f` (it must not block; the
    /// returned future resolves with the answer).
    pub fn new(
        f: impl Fn(ToolCallId, HostQuestion) -> Pin<Box<dyn Future<Output = HostAnswer> + Send>>
        + Send
        + Sync
        + 'static,
    ) -> Self {
        Self {
            inner: Some(Arc::new(f)),
        }
    }

    /// `true` when someone can answer (a tool can skip asking otherwise).
    pub fn can_ask(&self) -> bool {
        self.inner.is_some()
    }

    /// Asks on behalf of `call_id`; [`HostAnswer::Decline`] when nobody
    /// listens.
    pub async fn ask(&self, call_id: ToolCallId, question: HostQuestion) -> HostAnswer {
        match &self.inner {
            Some(f) => f(call_id, question).await,
            None => HostAnswer::Decline,
        }
    }
}

impl std::fmt::Debug for QuestionSink {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("QuestionSink")
            .field("connected", &self.inner.is_some())
            .finish()
    }
}

/// Why form content does not match the requested schema.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, thiserror::Error)]
#[non_exhaustive]
pub enum FormError {
    /// A required field has no value and no default.
    #[error("the required field {0:?} is missing")]
    Missing(String),
    /// A field the schema does not list.
    #[error("the field {0:?} is not in the requested schema")]
    Unknown(String),
    /// A value of another type than the schema says.
    #[error("the field {field:?} must be of type {expected}")]
    WrongType {
        /// The field.
        field: String,
        /// The schema's type.
        expected: String,
    },
    /// A value outside the schema's `enum` (or `oneOf` constants).
    #[error("the field {0:?} is not one of the allowed values")]
    NotAllowed(String),
    /// A value past one of the schema's bounds: a number's `minimum` or
    /// `maximum`, a string's `minLength` or `maxLength` (in characters),
    /// a multiple choice's `minItems` or `maxItems`.
    #[error("the field {field:?} must {bound}")]
    OutOfBounds {
        /// The field.
        field: String,
        /// The bound it breaks.
        bound: Bound,
    },
    /// A string that is not in the schema's `format` (`email`, `uri`,
    /// `date` or `date-time`; other formats are not checked).
    #[error("the field {field:?} is not a valid {format}")]
    BadFormat {
        /// The field.
        field: String,
        /// The schema's format.
        format: String,
    },
}

/// A bound of a form field's schema, with its limit.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub enum Bound {
    /// `minimum`: the number must be at least this.
    Minimum(serde_json::Number),
    /// `maximum`: the number must be at most this.
    Maximum(serde_json::Number),
    /// `minLength`: the string must have at least this many characters.
    MinLength(u64),
    /// `maxLength`: the string must have at most this many characters.
    MaxLength(u64),
    /// `minItems`: at least this many choices.
    MinItems(u64),
    /// `maxItems`: at most this many choices.
    MaxItems(u64),
}

impl std::fmt::Display for Bound {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Bound::Minimum(n) => write!(f, "be at least {n}"),
            Bound::Maximum(n) => write!(f, "be at most {n}"),
            Bound::MinLength(n) => write!(f, "be at least {n} characters long"),
            Bound::MaxLength(n) => write!(f, "be at most {n} characters long"),
            Bound::MinItems(n) => write!(f, "have at least {n} choices"),
            Bound::MaxItems(n) => write!(f, "have at most {n} choices"),
        }
    }
}

/// Fills in the schema's defaults for fields `content` leaves out, then
/// checks the result against `schema`; the content to send.
///
/// ```
/// use agentkit_tools_core::{FormError, complete_form};
/// use serde_json::json;
///
/// let schema = json!({
///     "type": "object",
///     "properties": {
///         "name": { "type": "string", "default": "Ada" },
///         "age": { "type": "integer" }
///     },
///     "required": ["age"]
/// });
/// let content = json!({ "age": 36 }).as_object().unwrap().clone();
/// let sent = complete_form(&schema, content).unwrap();
/// assert_eq!(sent["name"], "Ada");
///
/// let wrong = json!({ "age": "old" }).as_object().unwrap().clone();
/// assert!(matches!(complete_form(&schema, wrong), Err(FormError::WrongType { .. })));
/// ```
pub fn complete_form(
    schema: &Value,
    mut content: Map<String, Value>,
) -> Result<Map<String, Value>, FormError> {
    let empty = Map::new();
    let properties = schema
        .get("properties")
        .and_then(Value::as_object)
        .unwrap_or(&empty);
    for (field, property) in properties {
        if !content.contains_key(field)
            && let Some(default) = property.get("default")
        {
            content.insert(field.clone(), default.clone());
        }
    }
    let required = schema.get("required").and_then(Value::as_array);
    for field in required.into_iter().flatten().filter_map(Value::as_str) {
        if !content.contains_key(field) {
            return Err(FormError::Missing(field.to_owned()));
        }
    }
    for (field, value) in &content {
        let property = properties
            .get(field)
            .ok_or_else(|| FormError::Unknown(field.clone()))?;
        check_field(field, property, value)?;
    }
    Ok(content)
}

/// Checks one field's value against its property schema (the checks of
/// [`complete_form`] but `required`): its type, choices, bounds and
/// format. A host reading a form field by field uses it to refuse a value
/// at once, before the whole form is sent.
///
/// ```
/// use agentkit_tools_core::{Bound, FormError, check_field};
/// use serde_json::json;
///
/// let age = json!({ "type": "integer", "minimum": 0, "maximum": 150 });
/// assert_eq!(check_field("age", &age, &json!(36)), Ok(()));
/// let refused = check_field("age", &age, &json!(500)).unwrap_err();
/// assert_eq!(
///     refused,
///     FormError::OutOfBounds { field: "age".into(), bound: Bound::Maximum(150.into()) }
/// );
/// assert_eq!(refused.to_string(), "the field \"age\" must be at most 150");
/// ```
pub fn check_field(field: &str, property: &Value, value: &Value) -> Result<(), FormError> {
    if let Some(kind) = property.get("type").and_then(Value::as_str) {
        let fits = match kind {
            "string" => value.is_string(),
            "number" => value.is_number(),
            "integer" => value.is_i64() || value.is_u64(),
            "boolean" => value.is_boolean(),
            "array" => value.is_array(),
            _ => true,
        };
        if !fits {
            return Err(FormError::WrongType {
                field: field.to_owned(),
                expected: kind.to_owned(),
            });
        }
    }
    // Single choice: `enum` or `oneOf` constants on the property; multiple
    // choice: the same on its `items` (`enum` or `anyOf` constants).
    let items = property.get("items").unwrap_or(&Value::Null);
    let allowed = choices(property).or_else(|| choices(items));
    if let Some(allowed) = allowed
        && !allowed.is_empty()
    {
        let values: Vec<&Value> = match value {
            Value::Array(items) => items.iter().collect(),
            other => vec![other],
        };
        if values.iter().any(|v| !allowed.contains(v)) {
            return Err(FormError::NotAllowed(field.to_owned()));
        }
    }
    if let Some(bound) = broken_bound(property, value) {
        return Err(FormError::OutOfBounds {
            field: field.to_owned(),
            bound,
        });
    }
    if let (Some(format), Some(text)) = (
        property.get("format").and_then(Value::as_str),
        value.as_str(),
    ) && !crate::format::fits(format, text)
    {
        return Err(FormError::BadFormat {
            field: field.to_owned(),
            format: format.to_owned(),
        });
    }
    Ok(())
}

/// The first of the property's bounds `value` breaks.
fn broken_bound(property: &Value, value: &Value) -> Option<Bound> {
    let limit = |key: &str| property.get(key).and_then(Value::as_u64);
    let number = |key: &str| match property.get(key) {
        Some(Value::Number(n)) => Some(n.clone()),
        _ => None,
    };
    match value {
        Value::Number(n) => {
            let n = n.as_f64()?;
            if let Some(min) = number("minimum").filter(|m| m.as_f64().is_some_and(|m| n < m)) {
                return Some(Bound::Minimum(min));
            }
            number("maximum")
                .filter(|m| m.as_f64().is_some_and(|m| n > m))
                .map(Bound::Maximum)
        }
        Value::String(text) => {
            let len = text.chars().count() as u64;
            if let Some(min) = limit("minLength").filter(|&m| len < m) {
                return Some(Bound::MinLength(min));
            }
            limit("maxLength")
                .filter(|&m| len > m)
                .map(Bound::MaxLength)
        }
        Value::Array(items) => {
            let len = items.len() as u64;
            if let Some(min) = limit("minItems").filter(|&m| len < m) {
                return Some(Bound::MinItems(min));
            }
            limit("maxItems").filter(|&m| len > m).map(Bound::MaxItems)
        }
        _ => None,
    }
}

/// The allowed values of a choice: `enum`, or the `const` of each
/// `oneOf` / `anyOf` option.
fn choices(schema: &Value) -> Option<Vec<&Value>> {
    if let Some(values) = schema.get("enum").and_then(Value::as_array) {
        return Some(values.iter().collect());
    }
    ["oneOf", "anyOf"].iter().find_map(|key| {
        schema.get(*key).and_then(Value::as_array).map(|options| {
            options
                .iter()
                .filter_map(|option| option.get("const"))
                .collect()
        })
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn map(value: Value) -> Map<String, Value> {
        value.as_object().unwrap().clone()
    }

    #[test]
    fn defaults_fill_what_the_user_left_out_and_never_override() {
        let schema = json!({ "type": "object", "properties": {
            "name": { "type": "string", "default": "John Doe" },
            "age": { "type": "integer", "default": 30 },
            "score": { "type": "number", "default": 95.5 },
            "status": { "type": "string", "enum": ["active", "inactive"], "default": "active" },
            "verified": { "type": "boolean", "default": true }
        }});
        let sent = complete_form(&schema, map(json!({ "age": 41 }))).unwrap();
        assert_eq!(
            Value::Object(sent),
            json!({ "name": "John Doe", "age": 41, "score": 95.5, "status": "active", "verified": true })
        );
    }

    #[test]
    fn content_that_breaks_the_schema_is_refused_with_the_reason() {
        let schema = json!({ "type": "object", "properties": {
            "age": { "type": "integer" },
            "color": { "type": "string", "oneOf": [{ "const": "red" }, { "const": "blue" }] },
            "fish": { "type": "array", "items": { "anyOf": [{ "const": "tuna" }, { "const": "trout" }] } },
            "pets": { "type": "array", "items": { "enum": ["cat", "dog"] } }
        }, "required": ["age"] });
        let cases = [
            (json!({}), FormError::Missing("age".into())),
            (
                json!({ "age": 1.5 }),
                FormError::WrongType {
                    field: "age".into(),
                    expected: "integer".into(),
                },
            ),
            (
                json!({ "age": 1, "color": "green" }),
                FormError::NotAllowed("color".into()),
            ),
            (
                json!({ "age": 1, "extra": true }),
                FormError::Unknown("extra".into()),
            ),
            (
                json!({ "age": 1, "fish": ["tuna", "shark"] }),
                FormError::NotAllowed("fish".into()),
            ),
            (
                json!({ "age": 1, "pets": ["cat", "dragon"] }),
                FormError::NotAllowed("pets".into()),
            ),
        ];
        for (content, expected) in cases {
            assert_eq!(
                complete_form(&schema, map(content.clone())),
                Err(expected),
                "{content}"
            );
        }
    }

    /// MCP's form schemas bound numbers, strings and multiple choices and
    /// give strings a format: each bound and format, just inside (sent)
    /// and just outside (refused, naming the bound).
    #[test]
    fn bounds_and_formats_are_checked() {
        let schema = json!({ "type": "object", "properties": {
            "age": { "type": "integer", "minimum": 1, "maximum": 100 },
            "ratio": { "type": "number", "minimum": 0.5, "maximum": 2.5 },
            "nick": { "type": "string", "minLength": 2, "maxLength": 4 },
            "fish": { "type": "array", "minItems": 1, "maxItems": 2,
                      "items": { "enum": ["tuna", "trout", "salmon"] } },
            "email": { "type": "string", "format": "email" },
            "home": { "type": "string", "format": "uri" },
            "born": { "type": "string", "format": "date" },
            "at": { "type": "string", "format": "date-time" },
            "color": { "type": "string", "format": "hex-color" }
        }});
        let bound = |field: &str, bound: Bound| FormError::OutOfBounds {
            field: field.into(),
            bound,
        };
        let format = |field: &str, format: &str| FormError::BadFormat {
            field: field.into(),
            format: format.into(),
        };
        let sent = [
            json!({ "age": 1 }),
            json!({ "age": 100 }),
            json!({ "ratio": 0.5 }),
            json!({ "ratio": 2.5 }),
            // Characters, not bytes.
            json!({ "nick": "Éé" }),
            json!({ "nick": "abcd" }),
            json!({ "fish": ["tuna"] }),
            json!({ "fish": ["tuna", "trout"] }),
            json!({ "email": "ada@example.com" }),
            json!({ "home": "https://ada.example/portfolio" }),
            json!({ "home": "urn:isbn:0451450523" }),
            json!({ "born": "1815-12-10" }),
            json!({ "born": "2024-02-29" }),
            json!({ "at": "2026-11-27T12:30:00Z" }),
            json!({ "at": "2026-11-27T12:30:00.25+01:00" }),
            // A format the check does not know is not refused.
            json!({ "color": "not a color" }),
        ];
        for content in sent {
            assert!(
                complete_form(&schema, map(content.clone())).is_ok(),
                "{content}"
            );
        }
        let cases = [
            (json!({ "age": 0 }), bound("age", Bound::Minimum(1.into()))),
            (
                json!({ "age": 101 }),
                bound("age", Bound::Maximum(100.into())),
            ),
            (
                json!({ "ratio": 0.25 }),
                bound(
                    "ratio",
                    Bound::Minimum(serde_json::Number::from_f64(0.5).unwrap()),
                ),
            ),
            (
                json!({ "ratio": 3 }),
                bound(
                    "ratio",
                    Bound::Maximum(serde_json::Number::from_f64(2.5).unwrap()),
                ),
            ),
            (json!({ "nick": "é" }), bound("nick", Bound::MinLength(2))),
            (
                json!({ "nick": "abcde" }),
                bound("nick", Bound::MaxLength(4)),
            ),
            (json!({ "fish": [] }), bound("fish", Bound::MinItems(1))),
            (
                json!({ "fish": ["tuna", "trout", "salmon"] }),
                bound("fish", Bound::MaxItems(2)),
            ),
            (json!({ "email": "ada" }), format("email", "email")),
            (json!({ "email": "ada@" }), format("email", "email")),
            (json!({ "email": "@example.com" }), format("email", "email")),
            (
                json!({ "email": "ada lovelace@example.com" }),
                format("email", "email"),
            ),
            (json!({ "email": "ada@example" }), format("email", "email")),
            (json!({ "home": "ada.example" }), format("home", "uri")),
            (json!({ "home": "1http://x" }), format("home", "uri")),
            (json!({ "home": "https://a b" }), format("home", "uri")),
            (json!({ "born": "1815-13-10" }), format("born", "date")),
            (json!({ "born": "2023-02-29" }), format("born", "date")),
            (json!({ "born": "10/12/1815" }), format("born", "date")),
            (
                json!({ "born": "1815-12-10T00:00:00Z" }),
                format("born", "date"),
            ),
            (
                json!({ "at": "2026-11-27 12:30" }),
                format("at", "date-time"),
            ),
            (
                json!({ "at": "2026-11-27T25:00:00Z" }),
                format("at", "date-time"),
            ),
            (
                json!({ "at": "2026-11-27T12:30:00" }),
                format("at", "date-time"),
            ),
        ];
        for (content, expected) in cases {
            assert_eq!(
                complete_form(&schema, map(content.clone())),
                Err(expected),
                "{content}"
            );
        }
    }

    #[test]
    fn a_url_accept_drops_content_and_a_form_accept_is_completed() {
        let url = HostQuestion::url("sign in", "https://x.example/", "e1");
        assert_eq!(
            url.check(HostAnswer::Accept(map(json!({ "a": 1 })))),
            Ok(HostAnswer::Accept(Map::new()))
        );
        let form = HostQuestion::form(
            "name?",
            json!({ "properties": { "a": { "type": "string", "default": "x" } } }),
        );
        assert_eq!(
            form.check(HostAnswer::Accept(Map::new())),
            Ok(HostAnswer::Accept(map(json!({ "a": "x" }))))
        );
        assert_eq!(form.check(HostAnswer::Cancel), Ok(HostAnswer::Cancel));
    }

    #[tokio::test]
    async fn a_sink_nobody_listens_to_declines() {
        let answer = QuestionSink::default()
            .ask(ToolCallId::new("c"), HostQuestion::form("?", json!({})))
            .await;
        assert_eq!(answer, HostAnswer::Decline);
    }
}
