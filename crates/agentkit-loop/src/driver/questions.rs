//! Questions running calls ask the host (`ToolContext::ask`): the shell's
//! half.
//!
//! A call's question lands in a shared queue (the call may run on another
//! task) and wakes the driver waiting for its calls; the driver hands it to
//! the core (`on_tool_question`), which shows it to the host as a
//! `LoopInterrupt::Question`, and keeps the call's reply channel. The core
//! asks for the host's answer to be delivered with
//! `Action::AnswerQuestion`; a call whose future is dropped (the turn was
//! cancelled, the round cut short) sees its question answered with cancel.

use agentkit_core::ToolCallId;
use agentkit_tools_core::{HostAnswer, HostQuestion, QuestionSink};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use tokio::sync::{Notify, oneshot};

/// A question and where its answer goes.
pub(crate) type Asked = (ToolCallId, HostQuestion, oneshot::Sender<HostAnswer>);

/// The questions calls asked and the driver has not taken yet.
#[derive(Default)]
pub(crate) struct Questions {
    queue: std::sync::Mutex<Vec<Asked>>,
    /// `queue` may hold questions: the driver checks this flag at every
    /// wake-up rather than take the lock. Written only under that lock.
    any: AtomicBool,
    /// Wakes the driver waiting for its calls.
    asked: Notify,
}

impl Questions {
    /// The sink for the calls' contexts.
    pub(crate) fn sink(self: &Arc<Self>) -> QuestionSink {
        let shared = self.clone();
        QuestionSink::new(move |call_id, question| {
            let (sender, receiver) = oneshot::channel();
            {
                let mut queue = shared.queue.lock().unwrap_or_else(|e| e.into_inner());
                queue.push((call_id, question, sender));
                shared.any.store(true, Ordering::Release);
            }
            shared.asked.notify_one();
            // A dropped reply channel (the call's round ended without an
            // answer) reads as the user cancelling.
            Box::pin(async move { receiver.await.unwrap_or(HostAnswer::Cancel) })
        })
    }

    /// Every question asked since the last call.
    pub(crate) fn take(&self) -> Vec<Asked> {
        if !self.any.load(Ordering::Acquire) {
            return Vec::new();
        }
        let mut queue = self.queue.lock().unwrap_or_else(|e| e.into_inner());
        self.any.store(false, Ordering::Relaxed);
        std::mem::take(&mut *queue)
    }

    /// Resolves when a question was asked (at once if one was asked since
    /// the last wake-up).
    pub(crate) async fn asked(&self) {
        self.asked.notified().await
    }
}
