//! Questions running calls ask the host (`ToolContext::ask`): the shell's
//! half.
//!
//! A call's question lands in a shared queue (the call may run on another
//! task) and wakes the driver through the waker it polls its running calls
//! with: a question is one more outcome of that poll, so waiting for a
//! round's calls costs no second wait beside them. The driver hands the
//! question to the core (`on_tool_question`), which shows it to the host as
//! a `LoopInterrupt::Question`, and keeps the call's reply channel. The core
//! asks for the host's answer to be delivered with `Action::AnswerQuestion`;
//! a call whose future is dropped (the turn was cancelled, the round cut
//! short) sees its question answered with cancel.
//!
//! The queue is made with the first call a turn starts and dropped when the
//! turn finishes, so an idle session keeps none. The sink holds it weakly:
//! a background task asking after its turn is declined, as a question no
//! call of the round asks always is.

use agentkit_core::ToolCallId;
use agentkit_tools_core::{HostAnswer, HostQuestion, QuestionSink};
use futures::task::AtomicWaker;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Weak};
use std::task::Waker;
use tokio::sync::oneshot;

/// A question and where its answer goes.
pub(crate) type Asked = (ToolCallId, HostQuestion, oneshot::Sender<HostAnswer>);

/// The questions calls asked and the driver has not taken yet.
#[derive(Default)]
pub(crate) struct Questions {
    queue: std::sync::Mutex<Vec<Asked>>,
    /// `queue` may hold questions: the driver checks this flag after each
    /// poll of its calls rather than take the lock. Written only under that
    /// lock.
    any: AtomicBool,
    /// The waker the driver last polled its running calls with.
    waker: AtomicWaker,
}

impl Questions {
    /// The sink for the calls' contexts.
    pub(crate) fn sink(self: &Arc<Self>) -> QuestionSink {
        let shared = Arc::downgrade(self);
        QuestionSink::new(move |call_id, question| {
            let Some(shared) = Weak::upgrade(&shared) else {
                // The turn that started the call is over.
                return Box::pin(std::future::ready(HostAnswer::Decline));
            };
            let (sender, receiver) = oneshot::channel();
            {
                let mut queue = shared.queue.lock().unwrap_or_else(|e| e.into_inner());
                queue.push((call_id, question, sender));
                shared.any.store(true, Ordering::Release);
            }
            shared.waker.wake();
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

    /// Wakes `waker` at the next question; call before polling the calls.
    pub(crate) fn register(&self, waker: &Waker) {
        self.waker.register(waker);
    }

    /// `true` when a question waits to be taken.
    pub(crate) fn asked(&self) -> bool {
        self.any.load(Ordering::Acquire)
    }
}
