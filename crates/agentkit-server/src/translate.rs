//! From loop events to AG-UI events.
//!
//! Registered on each hosted session's agent as an observer, it turns the
//! loop's [`AgentEvent`]s into the AG-UI stream: text deltas become
//! `TEXT_MESSAGE_*`, a requested call `TOOL_CALL_START/ARGS/END`, a result
//! `TOOL_CALL_RESULT`; what AG-UI has no event for (a queued message was
//! delivered, an approval was resolved) goes out as `CUSTOM` events named
//! `agentkit.*`. Run boundaries are the session actor's business.

use crate::agui;
use crate::hub::Hub;
use agentkit_core::{Delta, PartId, PartKind};
use agentkit_loop::{AgentEvent, LoopObserver};
use serde_json::json;
use std::collections::HashSet;
use std::sync::{Arc, Mutex};

/// The observer; see the module docs.
pub(crate) struct Translator {
    hub: Arc<Hub>,
    /// Open parts that carry visible text.
    text_parts: Mutex<HashSet<PartId>>,
}

impl Translator {
    pub(crate) fn new(hub: Arc<Hub>) -> Self {
        Self {
            hub,
            text_parts: Mutex::new(HashSet::new()),
        }
    }

    fn delta(&self, delta: &Delta) {
        let mut parts = self.text_parts.lock().unwrap_or_else(|e| e.into_inner());
        match delta {
            Delta::BeginPart {
                part_id,
                kind: PartKind::Text,
            } => {
                parts.insert(part_id.clone());
            }
            Delta::AppendText { part_id, chunk } if parts.contains(part_id) => {
                self.hub.text(chunk);
            }
            Delta::CommitPart { part_id } => {
                parts.remove(part_id);
            }
            _ => {}
        }
    }
}

impl LoopObserver for Translator {
    fn handle_event(&self, event: AgentEvent) {
        match event {
            AgentEvent::ContentDelta { delta } => self.delta(&delta),
            AgentEvent::ModelCallStarted { .. } => self.hub.end_text(),
            AgentEvent::ToolCallRequested { call } => {
                let id = call.id.to_string();
                self.hub.emit_all([
                    json!({ "type": "TOOL_CALL_START", "toolCallId": id, "toolCallName": call.name }),
                    json!({ "type": "TOOL_CALL_ARGS", "toolCallId": id, "delta": call.input.to_string() }),
                    json!({ "type": "TOOL_CALL_END", "toolCallId": id }),
                ]);
            }
            AgentEvent::ToolResultReceived { result } => {
                let message_id = self.hub.fresh_id("result");
                self.hub.emit_all([json!({
                    "type": "TOOL_CALL_RESULT",
                    "messageId": message_id,
                    "toolCallId": result.call_id.to_string(),
                    "content": result.output.to_text(),
                    "role": "tool",
                })]);
            }
            AgentEvent::ApprovalResolved { call_id, approved } => {
                self.hub.emit_all([agui::custom(
                    "approval_resolved",
                    json!({ "toolCallId": call_id.to_string(), "approved": approved }),
                )]);
            }
            AgentEvent::SoftInterruptInjected { item, messages, .. } => {
                let ids: Vec<u64> = messages.iter().map(|m| m.id).collect();
                self.hub.emit_all([agui::custom(
                    "messages_delivered",
                    json!({ "ids": ids, "text": item.text_content() }),
                )]);
            }
            _ => {}
        }
    }
}
