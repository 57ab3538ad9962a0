//! From agentkit's events and items to ACP `session/update` notifications.
//!
//! [`UpdateSink`] is a [`LoopObserver`] the server adds to every session's
//! agent. It streams, as they happen:
//!
//! | agentkit | ACP update |
//! | --- | --- |
//! | `ContentDelta` on a text part | `agent_message_chunk` |
//! | `ContentDelta` on a reasoning part | `agent_thought_chunk` |
//! | `ToolCallRequested` | `tool_call` (status `pending`, kind, title, `rawInput`) |
//! | `ToolStarted` | `tool_call_update` (status `in_progress`) |
//! | `ToolResultReceived` | `tool_call_update` (`completed` or `failed`, the output as content and `rawOutput`) |
//! | `ToolCallRequested` of the plan tool | also `plan` (the todo list) |
//!
//! Observers run inline and must not block: sending a notification only
//! queues it on the connection.
//!
//! `in_progress` means the call has started, never less: it is sent when
//! the loop starts the call, not when the editor approves it. With a
//! session store the sink is registered after the store's recorder, so by
//! the time the editor reads `in_progress` the store holds the call's start,
//! and an agent killed at any moment after that loads the call as
//! interrupted (not run again) rather than still to run. The same module replays a stored transcript
//! for `session/load` ([`replay`]) and turns prompt content blocks into a
//! user item ([`prompt_item`]).

use crate::ToolKind;
use agent_client_protocol::v1::ConnectionTo;
use agent_client_protocol::v1::schema as acp;
use agent_client_protocol::{Client, Error};
use agentkit_core::{Delta, Item, ItemKind, Part, PartId, PartKind, ToolCallPart, ToolResultPart};
use agentkit_loop::{AgentEvent, LoopObserver};
use std::collections::HashMap;
use std::sync::{Arc, Mutex};

/// Maps a tool's name to its ACP kind.
pub(crate) type KindFn = Arc<dyn Fn(&str) -> ToolKind + Send + Sync>;

/// Streams one session's events to the editor; see the [module docs](self).
pub(crate) struct UpdateSink {
    out: Box<dyn Fn(acp::SessionUpdate) + Send + Sync>,
    kinds: KindFn,
    /// The todo tool whose calls are the session's plan.
    plan_tool: Option<Arc<str>>,
    /// The kind of every open content part, to tell text from thought.
    parts: Mutex<HashMap<PartId, PartKind>>,
}

impl UpdateSink {
    pub(crate) fn new(
        cx: ConnectionTo<Client>,
        session_id: &str,
        kinds: KindFn,
        plan_tool: Option<Arc<str>>,
    ) -> Self {
        let session_id = acp::SessionId::new(session_id);
        Self::to(
            move |update| send_update(&cx, &session_id, update),
            kinds,
            plan_tool,
        )
    }

    /// A sink that hands each update to `out`.
    pub(crate) fn to(
        out: impl Fn(acp::SessionUpdate) + Send + Sync + 'static,
        kinds: KindFn,
        plan_tool: Option<Arc<str>>,
    ) -> Self {
        Self {
            out: Box::new(out),
            kinds,
            plan_tool,
            parts: Mutex::new(HashMap::new()),
        }
    }

    pub(crate) fn send(&self, update: acp::SessionUpdate) {
        (self.out)(update);
    }

    pub(crate) fn tool_call_update(&self, call: &ToolCallPart) -> acp::ToolCallUpdate {
        acp::ToolCallUpdate::new(
            call.id.as_str().to_owned(),
            acp::ToolCallUpdateFields::new()
                .title(title(call))
                .kind((self.kinds)(&call.name).to_acp())
                .status(acp::ToolCallStatus::Pending)
                .raw_input(call.input.to_value()),
        )
    }

    fn on_delta(&self, delta: &Delta) {
        let mut parts = self.parts.lock().expect("parts lock");
        match delta {
            Delta::BeginPart { part_id, kind } => {
                parts.insert(part_id.clone(), kind.clone());
            }
            Delta::AppendText { part_id, chunk } => match parts.get(part_id) {
                Some(PartKind::Text) => {
                    self.send(acp::SessionUpdate::AgentMessageChunk(text_chunk(chunk)));
                }
                Some(PartKind::Reasoning) => {
                    self.send(acp::SessionUpdate::AgentThoughtChunk(text_chunk(chunk)));
                }
                _ => {}
            },
            Delta::CommitPart { part_id } => {
                parts.remove(part_id);
            }
            _ => {}
        }
    }
}

impl LoopObserver for UpdateSink {
    fn handle_event(&self, event: AgentEvent) {
        match event {
            AgentEvent::ContentDelta { delta } => self.on_delta(&delta),
            AgentEvent::ToolCallRequested { call } => {
                self.send(acp::SessionUpdate::ToolCall(tool_call(&call, &self.kinds)));
                if self.plan_tool.as_deref() == Some(&*call.name)
                    && let Some(plan) = crate::commands::plan_of(&call.input.to_value())
                {
                    self.send(acp::SessionUpdate::Plan(plan));
                }
            }
            // Started, not merely approved: see the module docs.
            AgentEvent::ToolStarted { call_id, .. } => self.send(
                acp::SessionUpdate::ToolCallUpdate(acp::ToolCallUpdate::new(
                    call_id.as_str().to_owned(),
                    acp::ToolCallUpdateFields::new().status(acp::ToolCallStatus::InProgress),
                )),
            ),
            AgentEvent::ToolResultReceived { result } => {
                self.send(acp::SessionUpdate::ToolCallUpdate(result_update(&result)));
            }
            // A cancelled turn leaves parts open: forget them.
            AgentEvent::TurnFinished { .. } => self.parts.lock().expect("parts lock").clear(),
            _ => {}
        }
    }
}

fn send_update(cx: &ConnectionTo<Client>, session_id: &acp::SessionId, update: acp::SessionUpdate) {
    // A closed connection ends the session task soon after; nothing to do here.
    let _ = cx.send_notification(acp::SessionNotification::new(session_id.clone(), update));
}

fn text_chunk(text: &str) -> acp::ContentChunk {
    acp::ContentChunk::new(text_block(text))
}

fn text_block(text: &str) -> acp::ContentBlock {
    acp::ContentBlock::Text(acp::TextContent::new(text))
}

/// A short title: the tool's name and its first string argument.
fn title(call: &ToolCallPart) -> String {
    let input = call.input.to_value();
    let first = input
        .as_object()
        .and_then(|map| map.values().find_map(|v| v.as_str()));
    match first {
        Some(arg) => {
            let arg: String = arg
                .lines()
                .next()
                .unwrap_or_default()
                .chars()
                .take(60)
                .collect();
            format!("{} {arg}", call.name)
        }
        None => call.name.to_string(),
    }
}

fn tool_call(call: &ToolCallPart, kinds: &KindFn) -> acp::ToolCall {
    acp::ToolCall::new(call.id.as_str().to_owned(), title(call))
        .kind(kinds(&call.name).to_acp())
        .status(acp::ToolCallStatus::Pending)
        .raw_input(call.input.to_value())
}

fn result_update(result: &ToolResultPart) -> acp::ToolCallUpdate {
    let status = if result.is_error {
        acp::ToolCallStatus::Failed
    } else {
        acp::ToolCallStatus::Completed
    };
    let content = vec![acp::ToolCallContent::Content(acp::Content::new(
        text_block(&result.output.to_text()),
    ))];
    acp::ToolCallUpdate::new(
        result.call_id.as_str().to_owned(),
        acp::ToolCallUpdateFields::new()
            .status(status)
            .content(content)
            .raw_output(serde_json::to_value(&result.output).ok()),
    )
}

/// Sends a stored transcript to the editor as the updates that would have
/// built it: user and agent messages, thoughts, and finished tool calls.
/// System, developer, context and notification items are not shown.
pub(crate) fn replay(
    cx: &ConnectionTo<Client>,
    session_id: &str,
    items: &[Item],
    kinds: &KindFn,
) -> Result<(), Error> {
    let session_id = acp::SessionId::new(session_id);
    for item in items {
        for part in &item.parts {
            let update = match (item.kind, part) {
                (ItemKind::User, Part::Text(text)) => {
                    acp::SessionUpdate::UserMessageChunk(text_chunk(&text.text))
                }
                (ItemKind::Assistant, Part::Text(text)) => {
                    acp::SessionUpdate::AgentMessageChunk(text_chunk(&text.text))
                }
                (ItemKind::Assistant, Part::Reasoning(reasoning)) => match &reasoning.summary {
                    Some(summary) => acp::SessionUpdate::AgentThoughtChunk(text_chunk(summary)),
                    None => continue,
                },
                (_, Part::ToolCall(call)) => acp::SessionUpdate::ToolCall(tool_call(call, kinds)),
                (_, Part::ToolResult(result)) => {
                    acp::SessionUpdate::ToolCallUpdate(result_update(result))
                }
                _ => continue,
            };
            cx.send_notification(acp::SessionNotification::new(session_id.clone(), update))?;
        }
    }
    Ok(())
}

/// After [`replay`] of a resumed session: the final state of each call of
/// the open round whose answer is not in the transcript yet, so the editor
/// shows none of them running. A call that was running when the process
/// stopped is failed ("interrupted": it is answered so on resume and not
/// run again); a denied or rejected call is failed with its reason; a
/// finished one shows its result. Calls still to run or awaiting approval
/// stay pending: they run, or are asked, when the session goes on.
#[cfg(feature = "store")]
pub(crate) fn replay_round(
    cx: &ConnectionTo<Client>,
    session_id: &str,
    round: &[agentkit_loop::SnapshotCall],
) -> Result<(), Error> {
    for update in round_updates(round) {
        cx.send_notification(acp::SessionNotification::new(
            acp::SessionId::new(session_id),
            acp::SessionUpdate::ToolCallUpdate(update),
        ))?;
    }
    Ok(())
}

/// The updates [`replay_round`] sends.
#[cfg(feature = "store")]
pub(crate) fn round_updates(round: &[agentkit_loop::SnapshotCall]) -> Vec<acp::ToolCallUpdate> {
    use agentkit_loop::{SnapshotCall, SnapshotCallState};
    let failed = |call: &SnapshotCall, text: &str| {
        acp::ToolCallUpdate::new(
            call.call_id.as_str().to_owned(),
            acp::ToolCallUpdateFields::new()
                .status(acp::ToolCallStatus::Failed)
                .content(vec![acp::ToolCallContent::Content(acp::Content::new(
                    text_block(text),
                ))]),
        )
    };
    let mut updates = Vec::new();
    for call in round {
        let update = match &call.state {
            SnapshotCallState::Interrupted => failed(
                call,
                "interrupted: the agent stopped while this call ran; it is not run again",
            ),
            SnapshotCallState::Denied { reason } => {
                failed(call, reason.as_deref().unwrap_or("denied"))
            }
            SnapshotCallState::Rejected {
                result: Some(result),
                ..
            }
            | SnapshotCallState::Finished { result } => result_update(result),
            SnapshotCallState::Rejected { message, .. } => failed(call, message),
            _ => continue,
        };
        updates.push(update);
    }
    updates
}

/// The user item for a prompt. Text blocks are kept as they are; resource
/// links become Markdown links, embedded text resources are quoted with
/// their URI, and binary content is named but left out.
pub(crate) fn prompt_item(blocks: &[acp::ContentBlock]) -> Item {
    let parts = blocks
        .iter()
        .map(|block| match block {
            acp::ContentBlock::Text(text) => text.text.clone(),
            acp::ContentBlock::ResourceLink(link) => format!("[{}]({})", link.name, link.uri),
            acp::ContentBlock::Resource(resource) => match &resource.resource {
                acp::EmbeddedResourceResource::TextResourceContents(text) => {
                    format!("Contents of {}:\n```\n{}\n```", text.uri, text.text)
                }
                acp::EmbeddedResourceResource::BlobResourceContents(blob) => {
                    format!("[binary resource {} left out]", blob.uri)
                }
                _ => "[unsupported resource left out]".to_owned(),
            },
            acp::ContentBlock::Image(image) => format!("[{} image left out]", image.mime_type),
            acp::ContentBlock::Audio(audio) => format!("[{} audio left out]", audio.mime_type),
            _ => "[unsupported content left out]".to_owned(),
        })
        .map(Part::text)
        .collect();
    Item::new(ItemKind::User, parts)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn titles_name_the_tool_and_its_first_string_argument() {
        let call = ToolCallPart::new(
            "c",
            "fs_read_file",
            json!({ "path": "src/lib.rs", "offset": 3 }),
        );
        assert_eq!(title(&call), "fs_read_file src/lib.rs");
        let call = ToolCallPart::new("c", "shell_exec", json!({ "command": "ls\nrm -rf /" }));
        assert_eq!(title(&call), "shell_exec ls");
        let call = ToolCallPart::new("c", "now", json!({}));
        assert_eq!(title(&call), "now");
    }

    #[test]
    fn prompt_blocks_become_one_user_item() {
        let blocks = vec![
            text_block("look at"),
            acp::ContentBlock::ResourceLink(acp::ResourceLink::new("main.rs", "file:///w/main.rs")),
            acp::ContentBlock::Resource(acp::EmbeddedResource::new(
                acp::EmbeddedResourceResource::TextResourceContents(
                    acp::TextResourceContents::new("fn main() {}", "file:///w/lib.rs"),
                ),
            )),
            acp::ContentBlock::Image(acp::ImageContent::new("AAAA", "image/png")),
        ];
        let item = prompt_item(&blocks);
        assert_eq!(item.kind, ItemKind::User);
        let texts: Vec<&str> = item.parts.iter().filter_map(Part::as_text).collect();
        assert_eq!(
            texts,
            [
                "look at",
                "[main.rs](file:///w/main.rs)",
                "Contents of file:///w/lib.rs:\n```\nfn main() {}\n```",
                "[image/png image left out]",
            ]
        );
    }

    /// What a loaded session shows of its open round, one row per call
    /// state: a final state for every call that started or was decided,
    /// nothing (still pending) for one that will run or be asked.
    #[cfg(feature = "store")]
    #[test]
    fn a_loaded_round_shows_every_started_call_finished() {
        use agentkit_loop::{SnapshotCall, SnapshotCallState};
        use agentkit_tools_core::{ApprovalReason, PermissionRequest, approval_for};
        let request = approval_for(
            &PermissionRequest::custom("shell.command", "run it", json!({})),
            ApprovalReason::PolicyRequiresConfirmation,
        );
        let rows: Vec<(SnapshotCallState, Option<(acp::ToolCallStatus, &str)>)> = vec![
            (
                SnapshotCallState::Interrupted,
                Some((acp::ToolCallStatus::Failed, "interrupted")),
            ),
            (
                SnapshotCallState::Denied {
                    reason: Some("the user rejected this call".into()),
                },
                Some((acp::ToolCallStatus::Failed, "rejected")),
            ),
            (
                SnapshotCallState::Finished {
                    result: ToolResultPart::success("c", "done"),
                },
                Some((acp::ToolCallStatus::Completed, "done")),
            ),
            (
                SnapshotCallState::Rejected {
                    message: "unknown tool".into(),
                    result: None,
                },
                Some((acp::ToolCallStatus::Failed, "unknown tool")),
            ),
            (SnapshotCallState::Unchecked, None),
            (SnapshotCallState::Queued, None),
            (
                SnapshotCallState::Approved {
                    request: request.clone(),
                },
                None,
            ),
            (SnapshotCallState::AwaitingApproval { request }, None),
            (SnapshotCallState::Answered, None),
        ];
        for (state, expected) in rows {
            let call = SnapshotCall {
                call_id: "c".into(),
                tool_name: "shell_exec".into(),
                arguments_hash: String::new(),
                state: state.clone(),
            };
            let shown = round_updates(&[call]);
            match expected {
                None => assert!(shown.is_empty(), "{state:?} shown as {shown:?}"),
                Some((status, text)) => {
                    assert_eq!(shown.len(), 1, "{state:?}");
                    assert_eq!(shown[0].fields.status, Some(status), "{state:?}");
                    let content = serde_json::to_string(&shown[0].fields.content).unwrap();
                    assert!(content.contains(text), "{state:?}: {content}");
                }
            }
        }
    }

    #[test]
    fn results_map_to_completed_or_failed() {
        let ok = result_update(&ToolResultPart::success("c1", "fine"));
        assert_eq!(ok.fields.status, Some(acp::ToolCallStatus::Completed));
        let failed = result_update(&ToolResultPart::error("c2", "denied"));
        assert_eq!(failed.fields.status, Some(acp::ToolCallStatus::Failed));
        assert_eq!(failed.tool_call_id.0.as_ref(), "c2");
    }
}
