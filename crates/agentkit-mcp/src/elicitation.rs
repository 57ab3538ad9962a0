//! Elicitation: a server asking the user for input in the middle of its
//! work (`elicitation/create`).
//!
//! The host answers through an [`ElicitationHandler`] it sets on the
//! manager ([`McpServerManager::set_elicitation_handler`](crate::McpServerManager::set_elicitation_handler))
//! before connecting; the capability (form and URL modes) is declared only
//! when one is set, so a server never waits on a client that cannot ask
//! anybody. Without a handler every request is declined.
//!
//! A form answer is checked before it leaves: every field the requested
//! schema gives a `default` and the answer leaves out gets that default,
//! then the content must match the schema's flat shape (required fields
//! present, each value of its declared type, enum values from the list,
//! no unknown fields). A host answer that does not match is not sent;
//! the server is told the user cancelled, and the reason is logged, so a
//! buggy UI cannot put malformed data into a server.

use serde_json::{Map, Value};

/// What a server asks the user for.
#[derive(Clone, Debug, PartialEq)]
#[non_exhaustive]
pub struct ElicitationRequest {
    /// The server's registered name.
    pub server: String,
    /// The server's message for the user.
    pub message: String,
    /// A form to fill in, or a URL to visit.
    pub kind: ElicitationKind,
}

/// The two modes of elicitation.
#[derive(Clone, Debug, PartialEq)]
#[non_exhaustive]
pub enum ElicitationKind {
    /// Fill in a flat object described by `schema` (JSON Schema with
    /// primitive properties).
    Form {
        /// The requested schema, as the server sent it.
        schema: Value,
    },
    /// Visit `url` (out of band, for what must not pass through the
    /// client, such as credentials for a third party).
    Url {
        /// Where to send the user.
        url: String,
        /// The server's id of this elicitation.
        elicitation_id: String,
    },
}

/// The user's answer.
#[derive(Clone, Debug, PartialEq)]
#[non_exhaustive]
pub enum ElicitationResponse {
    /// The user accepted; for forms, the content (defaults are filled in
    /// before it is checked and sent). For URL mode, the content is ignored.
    Accept(Map<String, Value>),
    /// The user said no; the server goes on without the input.
    Decline,
    /// The user dismissed the request; the server should stop the
    /// operation that asked.
    Cancel,
}

/// Asks the user; set on the manager before servers connect.
///
/// ```
/// use agentkit_mcp::{ElicitationHandler, ElicitationKind, ElicitationRequest, ElicitationResponse};
///
/// /// Accepts every form with nothing but its defaults.
/// struct Defaults;
///
/// #[async_trait::async_trait]
/// impl ElicitationHandler for Defaults {
///     async fn elicit(&self, request: ElicitationRequest) -> ElicitationResponse {
///         match request.kind {
///             ElicitationKind::Form { .. } => ElicitationResponse::Accept(Default::default()),
///             _ => ElicitationResponse::Decline,
///         }
///     }
/// }
/// ```
#[async_trait::async_trait]
pub trait ElicitationHandler: Send + Sync {
    /// The user's answer to `request`.
    async fn elicit(&self, request: ElicitationRequest) -> ElicitationResponse;
}

/// Why form content does not match the requested schema.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum ElicitationError {
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
/// use agentkit_mcp::{ElicitationError, complete_form};
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
/// assert!(matches!(complete_form(&schema, wrong), Err(ElicitationError::WrongType { .. })));
/// ```
pub fn complete_form(
    schema: &Value,
    mut content: Map<String, Value>,
) -> Result<Map<String, Value>, ElicitationError> {
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
            return Err(ElicitationError::Missing(field.to_owned()));
        }
    }
    for (field, value) in &content {
        let property = properties
            .get(field)
            .ok_or_else(|| ElicitationError::Unknown(field.clone()))?;
        check_value(field, property, value)?;
    }
    Ok(content)
}

fn check_value(field: &str, property: &Value, value: &Value) -> Result<(), ElicitationError> {
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
            return Err(ElicitationError::WrongType {
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
            return Err(ElicitationError::NotAllowed(field.to_owned()));
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

/// The request as the host sees it, from the MCP JSON of
/// `elicitation/create`'s params.
pub(crate) fn request_from(server: &str, params: &Value) -> Option<ElicitationRequest> {
    let text = |key: &str| params.get(key).and_then(Value::as_str).map(str::to_owned);
    let message = text("message").unwrap_or_default();
    let kind = match params.get("mode").and_then(Value::as_str) {
        Some("url") => ElicitationKind::Url {
            url: text("url")?,
            elicitation_id: text("elicitationId").unwrap_or_default(),
        },
        Some("form") | None => ElicitationKind::Form {
            schema: params
                .get("requestedSchema")
                .cloned()
                .unwrap_or(Value::Null),
        },
        Some(_) => return None,
    };
    Some(ElicitationRequest {
        server: server.to_owned(),
        message,
        kind,
    })
}

/// The result to send (MCP JSON): the host's answer, form content completed
/// and checked.
pub(crate) fn result_for(request: &ElicitationRequest, response: ElicitationResponse) -> Value {
    match (response, &request.kind) {
        (ElicitationResponse::Accept(content), ElicitationKind::Form { schema }) => {
            match complete_form(schema, content) {
                Ok(content) => serde_json::json!({ "action": "accept", "content": content }),
                Err(err) => {
                    tracing::warn!(server = %request.server, %err, "elicitation answer does not match the requested schema; sent as cancel");
                    serde_json::json!({ "action": "cancel" })
                }
            }
        }
        (ElicitationResponse::Accept(_), _) => serde_json::json!({ "action": "accept" }),
        (ElicitationResponse::Decline, _) => serde_json::json!({ "action": "decline" }),
        (ElicitationResponse::Cancel, _) => serde_json::json!({ "action": "cancel" }),
    }
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
            (json!({}), ElicitationError::Missing("age".into())),
            (
                json!({ "age": 1.5 }),
                ElicitationError::WrongType {
                    field: "age".into(),
                    expected: "integer".into(),
                },
            ),
            (
                json!({ "age": 1, "color": "green" }),
                ElicitationError::NotAllowed("color".into()),
            ),
            (
                json!({ "age": 1, "extra": true }),
                ElicitationError::Unknown("extra".into()),
            ),
            (
                json!({ "age": 1, "fish": ["tuna", "shark"] }),
                ElicitationError::NotAllowed("fish".into()),
            ),
            (
                json!({ "age": 1, "pets": ["cat", "dragon"] }),
                ElicitationError::NotAllowed("pets".into()),
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
    fn requests_and_results_in_both_modes() {
        let form = request_from("s", &json!({ "message": "m", "requestedSchema": { "type": "object", "properties": { "a": { "type": "string", "default": "x" } } } })).unwrap();
        assert!(matches!(form.kind, ElicitationKind::Form { .. }));
        assert_eq!(
            result_for(&form, ElicitationResponse::Accept(Map::new())),
            json!({ "action": "accept", "content": { "a": "x" } })
        );
        assert_eq!(
            result_for(&form, ElicitationResponse::Accept(map(json!({ "a": 1 })))),
            json!({ "action": "cancel" })
        );
        let url = request_from("s", &json!({ "mode": "url", "message": "m", "url": "https://x.example/", "elicitationId": "e1" })).unwrap();
        assert_eq!(
            url.kind,
            ElicitationKind::Url {
                url: "https://x.example/".into(),
                elicitation_id: "e1".into()
            }
        );
        assert_eq!(
            result_for(&url, ElicitationResponse::Decline),
            json!({ "action": "decline" })
        );
        assert!(request_from("s", &json!({ "mode": "telepathy" })).is_none());
    }
}
