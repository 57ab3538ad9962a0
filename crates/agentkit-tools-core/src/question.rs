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
        check_value(field, property, value)?;
    }
    Ok(content)
}

fn check_value(field: &str, property: &Value, value: &Value) -> Result<(), FormError> {
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
    Ok(())
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
