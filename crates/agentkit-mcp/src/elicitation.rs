//! Elicitation: a server asking the user for input in the middle of its
//! work (`elicitation/create`).
//!
//! Who answers, in order:
//!
//! 1. **The tool call that caused it**, when the manager routes elicitation
//!    to calls ([`McpServerManager::route_elicitation_to_calls`](crate::McpServerManager::route_elicitation_to_calls))
//!    and the call's [`ToolContext`](agentkit_tools_core::ToolContext) can
//!    ask its host (inside the agent loop it can: the question becomes a
//!    `LoopInterrupt::Question` for that call alone). The request belongs to
//!    a call when its `_meta.progressToken` is the token of a call in flight
//!    on that connection; a request without one belongs to the only call in
//!    flight on that connection that can ask. MCP has no other tie between
//!    a server's request and the client's (over stdio there is no related
//!    request id on the wire), so with several such calls in flight and no
//!    token the request goes on to the next rule.
//! 2. **The host's [`ElicitationHandler`]**, set on the manager
//!    ([`McpServerManager::set_elicitation_handler`](crate::McpServerManager::set_elicitation_handler)).
//! 3. Nobody: the request is declined.
//!
//! Both are set before connecting; the capability (form and URL modes) is
//! declared only when one is, so a server never waits on a client that
//! cannot ask anybody.
//!
//! A form answer is checked before it leaves: every field the requested
//! schema gives a `default` and the answer leaves out gets that default,
//! then the content must match the schema's flat shape (required fields
//! present, each value of its declared type, enum values from the list,
//! no unknown fields). A host answer that does not match is not sent;
//! the server is told the user cancelled, and the reason is logged, so a
//! buggy UI cannot put malformed data into a server.

use agentkit_tools_core::{HostAnswer, HostQuestion};
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

/// Why form content does not match the requested schema: the generic
/// [`FormError`](agentkit_tools_core::FormError) every host question uses.
pub use agentkit_tools_core::FormError as ElicitationError;
/// Fills in the schema's defaults and checks form content (see
/// [`agentkit_tools_core::complete_form`]).
pub use agentkit_tools_core::complete_form;

/// The request as a question a running tool call asks its host (the
/// in-loop route, see the module docs).
pub(crate) fn question_from(request: &ElicitationRequest) -> HostQuestion {
    let question = match &request.kind {
        ElicitationKind::Form { schema } => HostQuestion::form(&request.message, schema.clone()),
        ElicitationKind::Url {
            url,
            elicitation_id,
        } => HostQuestion::url(&request.message, url, elicitation_id),
    };
    question.from_source(&request.server)
}

/// The host's answer to a question, as an elicitation response.
pub(crate) fn response_from(answer: HostAnswer) -> ElicitationResponse {
    match answer {
        HostAnswer::Accept(content) => ElicitationResponse::Accept(content),
        HostAnswer::Decline => ElicitationResponse::Decline,
        _ => ElicitationResponse::Cancel,
    }
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
