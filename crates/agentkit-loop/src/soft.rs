//! Soft interrupts: messages typed while the agent works.
//!
//! The host pushes messages to a [`SoftInterruptHandle`] from any task or
//! thread while `next()` runs. The driver drains the queue only at safe
//! points, never between a tool call and its result:
//!
//! - **B**, turn complete: the model answered without tool calls; instead of
//!   finishing, the messages are appended and the model is called again.
//! - **C**, between tools: an *urgent* message is queued while a round still
//!   has calls to run; every unfinished call is answered with a stub saying
//!   the user interrupted, then the message is appended.
//! - **D**, after tools: all results are in; the messages are appended
//!   before the `AfterToolResult` pause.
//!
//! Messages drained together are merged into one user item, in push order.
//! Until drained they stay in the queue, through model errors, cancellation
//! and snapshots: nothing typed is lost.

use agentkit_core::{Item, ItemKind};
use serde::{Deserialize, Serialize};
use std::sync::{Arc, Mutex};
use tokio::sync::Notify;

/// Where queued messages were injected.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum SoftInterruptPoint {
    /// B: the model finished without tool calls.
    TurnComplete,
    /// C: an urgent message skipped the rest of a tool round.
    BetweenTools,
    /// D: after all tool results of a round.
    AfterTools,
}

/// A message waiting in the queue.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct SoftInterruptMessage {
    /// The id [`SoftInterruptHandle::push`] returned.
    pub id: u64,
    /// The message (a user item: text, images).
    pub item: Item,
    /// Urgent messages may skip the remaining tools of a round.
    pub urgent: bool,
}

#[derive(Debug, Default)]
struct Queue {
    next_id: u64,
    messages: Vec<SoftInterruptMessage>,
}

#[derive(Debug, Default)]
struct Shared {
    queue: Mutex<Queue>,
    urgent: Notify,
}

/// The queue's handle: `Clone + Send + Sync`, usable from anywhere.
#[derive(Clone, Debug, Default)]
pub struct SoftInterruptHandle {
    shared: Arc<Shared>,
}

impl SoftInterruptHandle {
    fn lock(&self) -> std::sync::MutexGuard<'_, Queue> {
        self.shared.queue.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn enqueue(&self, item: Item, urgent: bool) -> u64 {
        let id = {
            let mut queue = self.lock();
            queue.next_id += 1;
            let id = queue.next_id;
            queue
                .messages
                .push(SoftInterruptMessage { id, item, urgent });
            id
        };
        if urgent {
            self.shared.urgent.notify_waiters();
        }
        id
    }

    /// Queues a message for the next safe point; returns its id.
    pub fn push(&self, item: Item) -> u64 {
        self.enqueue(item, false)
    }

    /// Queues a text message from the user.
    pub fn push_text(&self, text: impl Into<String>) -> u64 {
        self.push(Item::user(text))
    }

    /// Queues an urgent message: the remaining tools of the current round
    /// are skipped.
    pub fn push_urgent(&self, item: Item) -> u64 {
        self.enqueue(item, true)
    }

    /// The messages still waiting, in push order.
    pub fn pending(&self) -> Vec<SoftInterruptMessage> {
        self.lock().messages.clone()
    }

    /// Takes a message back before it is injected.
    pub fn withdraw(&self, id: u64) -> Option<SoftInterruptMessage> {
        let mut queue = self.lock();
        let index = queue.messages.iter().position(|m| m.id == id)?;
        Some(queue.messages.remove(index))
    }

    /// `true` when nothing is waiting.
    pub fn is_empty(&self) -> bool {
        self.lock().messages.is_empty()
    }

    pub(crate) fn has_urgent(&self) -> bool {
        self.lock().messages.iter().any(|m| m.urgent)
    }

    /// Resolves when an urgent message is pushed (or already queued).
    pub(crate) async fn urgent_pushed(&self) {
        loop {
            let notified = self.shared.urgent.notified();
            if self.has_urgent() {
                return;
            }
            notified.await;
        }
    }

    /// Removes every message and merges them into one user item.
    pub(crate) fn drain_merged(&self) -> Option<Item> {
        let messages = std::mem::take(&mut self.lock().messages);
        merge(messages)
    }

    pub(crate) fn restore(&self, messages: Vec<SoftInterruptMessage>) {
        let mut queue = self.lock();
        queue.next_id = queue
            .next_id
            .max(messages.iter().map(|m| m.id).max().unwrap_or(0));
        queue.messages = messages;
    }
}

fn merge(messages: Vec<SoftInterruptMessage>) -> Option<Item> {
    if messages.is_empty() {
        return None;
    }
    let mut item = Item::new(ItemKind::User, Vec::new());
    let ids: Vec<u64> = messages.iter().map(|m| m.id).collect();
    for message in messages {
        item.parts.extend(message.item.parts);
    }
    item.metadata
        .insert("agentkit.soft_interrupt_ids".into(), ids.into());
    Some(item)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn messages_merge_in_order_and_can_be_withdrawn() {
        let queue = SoftInterruptHandle::default();
        let a = queue.push_text("a");
        let b = queue.push_text("b");
        let c = queue.push_urgent(Item::user("c"));
        assert!(queue.has_urgent());
        assert_eq!(queue.withdraw(b).map(|m| m.id), Some(b));
        assert_eq!(queue.withdraw(b), None);
        let merged = queue.drain_merged().unwrap();
        assert_eq!(merged.kind, ItemKind::User);
        assert_eq!(merged.text_content(), "ac");
        assert_eq!(
            merged.metadata["agentkit.soft_interrupt_ids"],
            serde_json::json!([a, c])
        );
        assert!(queue.is_empty());
        assert_eq!(queue.drain_merged(), None);
    }
}
