//! A tool's question (an MCP server's elicitation) forwarded to the
//! editor as ACP's `elicitation/create`.
//!
//! When a running tool call asks its host a question, the loop pauses that
//! call ([`LoopInterrupt::Question`](agentkit_loop::LoopInterrupt::Question)).
//! An editor that announced the `elicitation` client capability for the
//! question's mode (form or URL) gets the question, scoped to the session
//! and the asking tool call, and its user's answer (accept with content,
//! decline, cancel) goes back to the call. An editor without the capability
//! is never sent the request: the question is declined, as the MCP
//! specification asks of a client that cannot show it.

use agent_client_protocol::v1::schema as acp;
use agentkit_loop::PendingQuestion;
use agentkit_tools_core::{FormError, HostAnswer, QuestionKind};
use serde_json::{Map, Value};

/// The `_meta` entry of a forwarded question: who asks (the MCP server's
/// name, empty for a tool asking for itself) and the asking tool.
pub const QUESTION_META: &str = "agentkit.question";

/// The request for `pending`'s question, when the editor announced it can
/// show its mode; `None` means the question is declined unasked. Asked
/// again after the editor's content was `refused`, the message says why.
pub(crate) fn request(
    session_id: acp::SessionId,
    pending: &PendingQuestion,
    capabilities: Option<&acp::ElicitationCapabilities>,
    refused: Option<&FormError>,
) -> Option<acp::CreateElicitationRequest> {
    let capabilities = capabilities?;
    let scope = acp::ElicitationSessionScope::new(session_id)
        .tool_call_id(acp::ToolCallId::new(pending.call.id.as_str()));
    let mode: acp::ElicitationMode = match &pending.question.kind {
        QuestionKind::Form { schema } if capabilities.form.is_some() => {
            // A schema ACP's types cannot carry is not put to the editor.
            let schema: acp::ElicitationSchema = serde_json::from_value(schema.clone()).ok()?;
            acp::ElicitationFormMode::new(scope, schema).into()
        }
        QuestionKind::Url { url, id } if capabilities.url.is_some() => {
            acp::ElicitationUrlMode::new(scope, id.clone(), url.clone()).into()
        }
        _ => return None,
    };
    let meta = serde_json::json!({
        "source": pending.question.source,
        "tool": pending.call.name,
    });
    let message = match refused {
        Some(why) => format!(
            "{} (not sent: {why}; please answer again)",
            pending.question.message
        ),
        None => pending.question.message.clone(),
    };
    Some(
        acp::CreateElicitationRequest::new(mode, message)
            .meta(Map::from_iter([(QUESTION_META.to_owned(), meta)])),
    )
}

/// The editor's answer as the loop takes it. An action this crate does not
/// know declines: the user did not agree to anything it can name.
pub(crate) fn answer(response: acp::CreateElicitationResponse) -> HostAnswer {
    match response.action {
        acp::ElicitationAction::Accept(accept) => {
            let content = accept
                .content
                .map(|content| match serde_json::to_value(content) {
                    Ok(Value::Object(map)) => map,
                    _ => Map::new(),
                })
                .unwrap_or_default();
            HostAnswer::Accept(content)
        }
        acp::ElicitationAction::Cancel => HostAnswer::Cancel,
        _ => HostAnswer::Decline,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use agentkit_core::ToolCallPart;
    use agentkit_tools_core::HostQuestion;
    use serde_json::json;

    fn pending(question: HostQuestion) -> PendingQuestion {
        serde_json::from_value(json!({
            "question": question,
            "call": ToolCallPart::new("call-1", "mcp_ev_ask", json!({})),
        }))
        .unwrap()
    }

    #[test]
    fn a_question_goes_to_the_editor_only_in_a_mode_it_announced() {
        let form = pending(
            HostQuestion::form(
                "Your name?",
                json!({ "type": "object", "properties": { "name": { "type": "string" } } }),
            )
            .from_source("ev"),
        );
        let url = pending(HostQuestion::url("Sign in", "https://x.example/", "e-1"));
        let forms =
            acp::ElicitationCapabilities::new().form(acp::ElicitationFormCapabilities::new());
        let urls = acp::ElicitationCapabilities::new().url(acp::ElicitationUrlCapabilities::new());
        let session = || acp::SessionId::new("s-1");

        assert!(request(session(), &form, None, None).is_none());
        assert!(request(session(), &form, Some(&urls), None).is_none());
        assert!(request(session(), &url, Some(&forms), None).is_none());

        let sent =
            serde_json::to_value(request(session(), &form, Some(&forms), None).unwrap()).unwrap();
        assert_eq!(sent["mode"], "form");
        assert_eq!(sent["sessionId"], "s-1");
        assert_eq!(sent["toolCallId"], "call-1");
        assert_eq!(sent["message"], "Your name?");
        assert_eq!(
            sent["requestedSchema"]["properties"]["name"]["type"],
            "string"
        );
        assert_eq!(sent["_meta"][QUESTION_META]["source"], "ev");

        let sent =
            serde_json::to_value(request(session(), &url, Some(&urls), None).unwrap()).unwrap();
        assert_eq!(sent["mode"], "url");
        assert_eq!(sent["url"], "https://x.example/");
        assert_eq!(sent["elicitationId"], "e-1");
    }

    #[test]
    fn the_editors_action_maps_back() {
        let response = |value: Value| -> acp::CreateElicitationResponse {
            serde_json::from_value(value).unwrap()
        };
        assert_eq!(
            answer(response(
                json!({ "action": "accept", "content": { "name": "Ada", "n": 3 } })
            )),
            HostAnswer::Accept(
                json!({ "name": "Ada", "n": 3 })
                    .as_object()
                    .unwrap()
                    .clone()
            )
        );
        assert_eq!(
            answer(response(json!({ "action": "accept" }))),
            HostAnswer::Accept(Map::new())
        );
        assert_eq!(
            answer(response(json!({ "action": "decline" }))),
            HostAnswer::Decline
        );
        assert_eq!(
            answer(response(json!({ "action": "cancel" }))),
            HostAnswer::Cancel
        );
        assert_eq!(
            answer(response(json!({ "action": "_later" }))),
            HostAnswer::Decline
        );
    }
}
