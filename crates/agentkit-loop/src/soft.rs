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
//! Each message has a [`DeliveryMode`]: *steer* (the default) waits for the
//! next safe point, *urgent* also triggers the between-tools point, and *follow-up* waits
//! until the model would finish (the turn-complete point) or the loop is idle. Messages drained
//! together are merged into one user item, in push order.
//! Until drained they stay in the queue, through model errors, cancellation
//! and snapshots: nothing typed is lost.

use agentkit_core::{Item, ItemKind};
use serde::{Deserialize, Serialize};
use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, OnceLock, Weak};
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

/// When a queued message is delivered.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum DeliveryMode {
    /// At the next safe point: after the running tool round (the
    /// after-tools point), or when the model would finish (the
    /// turn-complete point).
    #[default]
    Steer,
    /// Like `Steer`, and it skips the calls of the round that have not
    /// finished yet (the between-tools point).
    Urgent,
    /// Only when the model would otherwise finish (the turn-complete point), or as the next
    /// turn's input: it never interrupts work in progress.
    FollowUp,
}

/// A message waiting in the queue.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(from = "RawMessage")]
pub struct SoftInterruptMessage {
    /// The id [`SoftInterruptHandle::push`] returned.
    pub id: u64,
    /// The message (a user item: text, images).
    pub item: Item,
    /// When it is delivered.
    pub delivery: DeliveryMode,
}

impl SoftInterruptMessage {
    /// `true` for [`DeliveryMode::Urgent`].
    pub fn is_urgent(&self) -> bool {
        self.delivery == DeliveryMode::Urgent
    }
}

/// The serialized form, which also reads snapshots of version 1 (where a
/// message had `urgent: bool` instead of a delivery mode).
#[derive(Deserialize)]
struct RawMessage {
    id: u64,
    item: Item,
    #[serde(default)]
    delivery: Option<DeliveryMode>,
    #[serde(default)]
    urgent: bool,
}

impl From<RawMessage> for SoftInterruptMessage {
    fn from(raw: RawMessage) -> Self {
        let delivery = raw.delivery.unwrap_or(if raw.urgent {
            DeliveryMode::Urgent
        } else {
            DeliveryMode::Steer
        });
        Self {
            id: raw.id,
            item: raw.item,
            delivery,
        }
    }
}

/// One message of an injection: its id and how it was to be delivered.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct InjectedMessage {
    /// The id the push returned.
    pub id: u64,
    /// Its delivery mode.
    pub delivery: DeliveryMode,
}

#[derive(Debug, Default)]
struct Queue {
    next_id: u64,
    messages: Vec<SoftInterruptMessage>,
}

#[derive(Debug)]
struct Shared {
    /// Identifies the queue across a snapshot in this process.
    queue_id: u64,
    queue: Mutex<Queue>,
    urgent: Notify,
    /// `false` means no urgent message is queued, so the driver's check
    /// between two steps of a round costs a load, not a lock. Set under the
    /// lock when one is queued; cleared under it when a check finds none.
    maybe_urgent: std::sync::atomic::AtomicBool,
    /// Bumped by every change of the queue (push, withdraw, drain,
    /// restore): part of [`LoopDriver::generation`](crate::LoopDriver::generation).
    changes: AtomicU64,
}

impl Drop for Shared {
    fn drop(&mut self) {
        // The last handle is gone: the queue can no longer be adopted.
        registry()
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .remove(&self.queue_id);
    }
}

/// Live queues of this process by id, so a driver resumed from a snapshot
/// adopts the queue whose handles the host still holds.
fn registry() -> &'static Mutex<HashMap<u64, Weak<Shared>>> {
    static LIVE: OnceLock<Mutex<HashMap<u64, Weak<Shared>>>> = OnceLock::new();
    LIVE.get_or_init(Default::default)
}

static NEXT_QUEUE_ID: AtomicU64 = AtomicU64::new(1);

/// The queue's handle: `Clone + Send + Sync`, usable from anywhere.
///
/// ```
/// use agentkit_core::Item;
/// use agentkit_loop::{DeliveryMode, SoftInterruptHandle};
///
/// let queue = SoftInterruptHandle::default();
/// queue.push_text("also update the changelog");
/// queue.push_urgent(Item::user("stop, wrong file"));
/// queue.push_with(Item::user("then summarize"), DeliveryMode::FollowUp);
/// assert_eq!(queue.pending().len(), 3);
/// ```
#[derive(Clone, Debug)]
pub struct SoftInterruptHandle {
    shared: Arc<Shared>,
}

impl Default for SoftInterruptHandle {
    fn default() -> Self {
        let shared = Arc::new(Shared {
            queue_id: NEXT_QUEUE_ID.fetch_add(1, Ordering::Relaxed),
            queue: Mutex::new(Queue::default()),
            urgent: Notify::new(),
            maybe_urgent: std::sync::atomic::AtomicBool::new(false),
            changes: AtomicU64::new(0),
        });
        registry()
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .insert(shared.queue_id, Arc::downgrade(&shared));
        Self { shared }
    }
}

impl SoftInterruptHandle {
    fn lock(&self) -> std::sync::MutexGuard<'_, Queue> {
        self.shared.queue.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Queues a message with an explicit delivery mode; returns its id.
    pub fn push_with(&self, item: Item, delivery: DeliveryMode) -> u64 {
        let id = {
            let mut queue = self.lock();
            queue.next_id += 1;
            let id = queue.next_id;
            queue
                .messages
                .push(SoftInterruptMessage { id, item, delivery });
            self.changed();
            if delivery == DeliveryMode::Urgent {
                self.shared.maybe_urgent.store(true, Ordering::Release);
            }
            id
        };
        if delivery == DeliveryMode::Urgent {
            self.shared.urgent.notify_waiters();
        }
        id
    }

    /// Queues a message for the next safe point (steer); returns its id.
    pub fn push(&self, item: Item) -> u64 {
        self.push_with(item, DeliveryMode::Steer)
    }

    /// Queues a text message from the user (steer).
    pub fn push_text(&self, text: impl Into<String>) -> u64 {
        self.push(Item::user(text))
    }

    /// Queues an urgent message: the unfinished tools of the current round
    /// are skipped.
    pub fn push_urgent(&self, item: Item) -> u64 {
        self.push_with(item, DeliveryMode::Urgent)
    }

    /// Queues a follow-up: delivered when the model would otherwise finish.
    pub fn push_follow_up(&self, item: Item) -> u64 {
        self.push_with(item, DeliveryMode::FollowUp)
    }

    /// The messages still waiting, in push order.
    pub fn pending(&self) -> Vec<SoftInterruptMessage> {
        self.lock().messages.clone()
    }

    /// Takes a message back before it is injected.
    pub fn withdraw(&self, id: u64) -> Option<SoftInterruptMessage> {
        let mut queue = self.lock();
        let index = queue.messages.iter().position(|m| m.id == id)?;
        self.changed();
        Some(queue.messages.remove(index))
    }

    /// `true` when nothing is waiting.
    pub fn is_empty(&self) -> bool {
        self.lock().messages.is_empty()
    }

    fn changed(&self) {
        self.shared.changes.fetch_add(1, Ordering::Relaxed);
    }

    /// How many times the queue changed.
    pub(crate) fn changes(&self) -> u64 {
        self.shared.changes.load(Ordering::Relaxed)
    }

    pub(crate) fn queue_id(&self) -> u64 {
        self.shared.queue_id
    }

    /// The live queue `queue_id` of this process, if a handle still holds it.
    pub(crate) fn adopt(queue_id: u64) -> Option<Self> {
        let live = registry().lock().unwrap_or_else(|e| e.into_inner());
        let shared = live.get(&queue_id)?.upgrade()?;
        Some(Self { shared })
    }

    pub(crate) fn has_urgent(&self) -> bool {
        if !self.shared.maybe_urgent.load(Ordering::Acquire) {
            return false;
        }
        let queue = self.lock();
        let any = queue.messages.iter().any(SoftInterruptMessage::is_urgent);
        if !any {
            self.shared.maybe_urgent.store(false, Ordering::Release);
        }
        any
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

    /// Removes the deliverable messages and merges them into one user item.
    /// At the turn-complete point and when idle (`with_follow_ups`) every
    /// message is deliverable;
    /// between tools and after tools, follow-ups keep waiting.
    pub(crate) fn drain(&self, with_follow_ups: bool) -> Option<(Item, Vec<InjectedMessage>)> {
        let all = with_follow_ups;
        let taken = {
            let mut queue = self.lock();
            if queue.messages.is_empty() {
                // Every safe point asks; almost always nothing was typed.
                return None;
            }
            let taken: Vec<SoftInterruptMessage> = if all {
                std::mem::take(&mut queue.messages)
            } else {
                let (taken, kept) = std::mem::take(&mut queue.messages)
                    .into_iter()
                    .partition(|m| m.delivery != DeliveryMode::FollowUp);
                queue.messages = kept;
                taken
            };
            // Follow-ups left waiting alone change nothing.
            if !taken.is_empty() {
                self.changed();
            }
            taken
        };
        let injected = taken
            .iter()
            .map(|m| InjectedMessage {
                id: m.id,
                delivery: m.delivery,
            })
            .collect();
        merge(taken).map(|item| (item, injected))
    }

    /// Adds saved messages the queue does not hold yet, keeping id order.
    pub(crate) fn restore(&self, messages: Vec<SoftInterruptMessage>) {
        let mut queue = self.lock();
        self.changed();
        for message in messages {
            if !queue.messages.iter().any(|m| m.id == message.id) {
                queue.messages.push(message);
            }
        }
        queue.messages.sort_by_key(|m| m.id);
        if queue.messages.iter().any(SoftInterruptMessage::is_urgent) {
            self.shared.maybe_urgent.store(true, Ordering::Release);
        }
        queue.next_id = queue
            .next_id
            .max(queue.messages.iter().map(|m| m.id).max().unwrap_or(0));
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
        .insert(agentkit_core::keys::SOFT_INTERRUPT_IDS.into(), ids.into());
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
        let d = queue.push_follow_up(Item::user("d"));
        assert!(queue.has_urgent());
        assert_eq!(queue.withdraw(b).map(|m| m.id), Some(b));
        assert_eq!(queue.withdraw(b), None);
        let (merged, injected) = queue.drain(false).unwrap();
        assert_eq!(
            injected.iter().map(|m| m.id).collect::<Vec<_>>(),
            vec![a, c]
        );
        assert_eq!(queue.pending().len(), 1, "the follow-up waits");
        let (follow_up, _) = queue.drain(true).unwrap();
        assert_eq!(follow_up.text_content(), "d");
        assert_eq!(
            follow_up.metadata[agentkit_core::keys::SOFT_INTERRUPT_IDS],
            serde_json::json!([d])
        );
        assert_eq!(merged.kind, ItemKind::User);
        assert_eq!(merged.text_content(), "ac");
        assert_eq!(
            merged.metadata[agentkit_core::keys::SOFT_INTERRUPT_IDS],
            serde_json::json!([a, c])
        );
        assert!(queue.is_empty());
        assert_eq!(queue.drain(true), None);
    }

    #[test]
    fn version_1_messages_still_read() {
        let message: SoftInterruptMessage = serde_json::from_value(serde_json::json!({
            "id": 3, "item": Item::user("x"), "urgent": true
        }))
        .unwrap();
        assert_eq!(message.delivery, DeliveryMode::Urgent);
    }

    #[test]
    fn a_live_queue_is_adopted_by_id() {
        let queue = SoftInterruptHandle::default();
        let adopted = SoftInterruptHandle::adopt(queue.queue_id()).unwrap();
        adopted.push_text("x");
        assert_eq!(queue.pending().len(), 1);
        let id = queue.queue_id();
        drop((queue, adopted));
        assert!(SoftInterruptHandle::adopt(id).is_none());
    }
}
