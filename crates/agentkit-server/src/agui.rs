//! The AG-UI wire format: what a frontend posts and the events it reads.
//!
//! Only the parts the server speaks are modelled. Requests are read
//! leniently (unknown fields are ignored, as the protocol allows);
//! events are written exactly as the AG-UI 1.0 schema names them
//! (`SCREAMING_SNAKE` types, camelCase fields), so the official clients
//! validate them.

use agentkit_core::{Item, ItemKind, Part};
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

/// The body of a run request: one per exchange, sent by the frontend.
#[derive(Clone, Debug, Default, Deserialize, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct RunAgentInput {
    /// The conversation: the server's session id.
    pub thread_id: String,
    /// The run this request asks for; echoed on its boundary events.
    pub run_id: String,
    /// The conversation as the frontend knows it. The server keeps the
    /// authoritative history and takes only the trailing user messages it
    /// has not seen.
    #[serde(default)]
    pub messages: Vec<Message>,
    /// Answers to the interrupts (approvals) that ended the previous run.
    #[serde(default)]
    pub resume: Vec<ResumeEntry>,
}

/// One message of [`RunAgentInput::messages`].
#[derive(Clone, Debug, Deserialize, Serialize)]
pub struct Message {
    /// The message's id.
    pub id: String,
    /// `user`, `assistant`, `system`, `tool`, ...
    pub role: String,
    /// Text, or a list of content parts (text parts are read).
    #[serde(default)]
    pub content: Value,
}

impl Message {
    /// The message's text: a string as is, text parts joined.
    pub fn text(&self) -> String {
        match &self.content {
            Value::String(text) => text.clone(),
            Value::Array(parts) => parts
                .iter()
                .filter_map(|part| part.get("text").and_then(Value::as_str))
                .collect::<Vec<_>>()
                .join("\n"),
            _ => String::new(),
        }
    }
}

/// An answer to an interrupt.
#[derive(Clone, Debug, Deserialize, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ResumeEntry {
    /// The interrupt answered (for approvals: the tool call's id).
    pub interrupt_id: String,
    /// `resolved` (see the payload) or `cancelled` (denied).
    pub status: String,
    /// For approvals: `{"approved": bool, "reason": "..."}`; a resolved
    /// entry without payload approves.
    #[serde(default)]
    pub payload: Option<Value>,
}

impl ResumeEntry {
    /// `Ok(None)` approves; `Ok(Some(reason))` denies.
    pub(crate) fn decision(&self) -> Result<Option<String>, String> {
        match self.status.as_str() {
            "cancelled" => Ok(Some("the user declined".into())),
            "resolved" => {
                let payload = self.payload.as_ref();
                let approved = payload
                    .and_then(|p| p.get("approved"))
                    .map_or(Some(true), Value::as_bool);
                match approved {
                    Some(true) => Ok(None),
                    Some(false) => Ok(Some(
                        payload
                            .and_then(|p| p.get("reason"))
                            .and_then(Value::as_str)
                            .unwrap_or("the user declined")
                            .to_owned(),
                    )),
                    None => Err("`payload.approved` must be a boolean".into()),
                }
            }
            other => Err(format!(
                "resume status `{other}` is neither `resolved` nor `cancelled`"
            )),
        }
    }
}

/// `RUN_STARTED`.
pub(crate) fn run_started(thread_id: &str, run_id: &str) -> Value {
    json!({ "type": "RUN_STARTED", "threadId": thread_id, "runId": run_id })
}

/// How a run ended.
#[derive(Clone, Debug)]
pub(crate) enum Outcome {
    Success,
    Cancelled,
    /// Waiting for approvals: `(call id, tool name, summary)`.
    Interrupt(Vec<(String, String, String)>),
}

/// `RUN_FINISHED`, with its outcome.
pub(crate) fn run_finished(thread_id: &str, run_id: &str, outcome: &Outcome) -> Value {
    let outcome = match outcome {
        Outcome::Success => json!({ "type": "success" }),
        Outcome::Cancelled => json!({ "type": "cancelled" }),
        Outcome::Interrupt(calls) => json!({
            "type": "interrupt",
            "interrupts": calls.iter().map(|(id, tool, summary)| json!({
                "id": id,
                "reason": "tool_approval",
                "message": summary,
                "toolCallId": id,
                "metadata": { "toolName": tool },
            })).collect::<Vec<_>>(),
        }),
    };
    json!({ "type": "RUN_FINISHED", "threadId": thread_id, "runId": run_id, "outcome": outcome })
}

/// `RUN_ERROR`.
pub(crate) fn run_error(message: &str, code: &str) -> Value {
    json!({ "type": "RUN_ERROR", "message": message, "code": code })
}

/// A `CUSTOM` event named `agentkit.<name>`.
pub(crate) fn custom(name: &str, value: Value) -> Value {
    json!({ "type": "CUSTOM", "name": format!("agentkit.{name}"), "value": value })
}

/// The AG-UI form of a stored transcript, for loading a session.
pub(crate) fn messages_of(items: &[Item]) -> Vec<Value> {
    let mut messages = Vec::new();
    for (index, item) in items.iter().enumerate() {
        let id = item
            .id
            .as_ref()
            .map_or_else(|| format!("item-{index}"), ToString::to_string);
        match item.kind {
            ItemKind::User => messages.push(json!({
                "id": id, "role": "user", "content": item.text_content(),
            })),
            ItemKind::Assistant => {
                let calls: Vec<Value> = item
                    .tool_calls()
                    .map(|call| {
                        json!({
                            "id": call.id.to_string(),
                            "type": "function",
                            "function": { "name": call.name, "arguments": call.input.to_string() },
                        })
                    })
                    .collect();
                let mut message = json!({
                    "id": id, "role": "assistant", "content": item.text_content(),
                });
                if !calls.is_empty() {
                    message["toolCalls"] = Value::Array(calls);
                }
                messages.push(message);
            }
            ItemKind::Tool => {
                for (n, part) in item.parts.iter().enumerate() {
                    if let Part::ToolResult(result) = part {
                        messages.push(json!({
                            "id": format!("{id}-{n}"),
                            "role": "tool",
                            "toolCallId": result.call_id.to_string(),
                            "content": result.output.to_text(),
                        }));
                    }
                }
            }
            _ => {}
        }
    }
    messages
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn resume_entries_decide() {
        let entry = |status: &str, payload: Option<Value>| ResumeEntry {
            interrupt_id: "c1".into(),
            status: status.into(),
            payload,
        };
        assert_eq!(entry("resolved", None).decision(), Ok(None));
        assert_eq!(
            entry("resolved", Some(json!({"approved": true}))).decision(),
            Ok(None)
        );
        assert_eq!(
            entry("resolved", Some(json!({"approved": false, "reason": "no"}))).decision(),
            Ok(Some("no".into()))
        );
        assert!(entry("cancelled", None).decision().unwrap().is_some());
        assert!(
            entry("resolved", Some(json!({"approved": "yes"})))
                .decision()
                .is_err()
        );
        assert!(entry("maybe", None).decision().is_err());
    }

    #[test]
    fn content_parts_are_read_as_text() {
        let message: Message = serde_json::from_value(json!({
            "id": "m", "role": "user",
            "content": [{"type": "text", "text": "a"}, {"type": "binary", "mimeType": "image/png"}, {"type": "text", "text": "b"}],
        }))
        .unwrap();
        assert_eq!(message.text(), "a\nb");
    }
}
