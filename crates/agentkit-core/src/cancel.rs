//! Cooperative cancellation of turns.
//!
//! The host keeps a [`CancellationController`] (wired to Ctrl-C, a Stop
//! button, a deadline) and gives its [`CancellationHandle`] to the agent. At
//! the start of every turn the driver takes a [`checkpoint`], a
//! [`TurnCancellation`] that is cancelled by any interrupt issued *after* it
//! was taken. An interrupt therefore ends the turn in flight and never leaks
//! into the next one.
//!
//! Waiting is event driven: [`TurnCancellation::cancelled`] sleeps until an
//! interrupt wakes it, with no polling and no async runtime required.
//!
//! [`checkpoint`]: CancellationHandle::checkpoint

use event_listener::Event;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

#[derive(Debug, Default)]
struct Shared {
    /// Bumped by every interrupt; a checkpoint remembers the value it saw.
    generation: AtomicU64,
    event: Event,
}

/// The host's side: issues interrupts.
///
/// The host keeps the controller (behind its Ctrl-C handler or Stop
/// button) and gives the agent a [`handle`](Self::handle); the agent takes
/// a [`checkpoint`](CancellationHandle::checkpoint) per turn. An interrupt
/// cancels the checkpoints taken before it, not the next turn's.
///
/// ```
/// use agentkit_core::{CancellationController, Cancelled};
///
/// let controller = CancellationController::new();
/// let handle = controller.handle(); // AgentBuilder::cancellation(handle)
/// let turn = handle.checkpoint();
/// assert_eq!(turn.check(), Ok(()));
///
/// controller.interrupt(); // Ctrl-C
/// assert!(turn.is_cancelled());
/// assert_eq!(turn.check(), Err(Cancelled)); // `?` in a tool stops it here
/// assert!(!handle.checkpoint().is_cancelled(), "the next turn starts clean");
/// ```
#[derive(Clone, Debug, Default)]
pub struct CancellationController {
    shared: Arc<Shared>,
}

impl CancellationController {
    /// A controller with no interrupt issued yet.
    pub fn new() -> Self {
        Self::default()
    }

    /// A handle to give to the agent.
    pub fn handle(&self) -> CancellationHandle {
        CancellationHandle {
            shared: self.shared.clone(),
        }
    }

    /// Cancels every checkpoint taken so far and wakes everything waiting on
    /// one. Checkpoints taken later are unaffected.
    pub fn interrupt(&self) {
        self.shared.generation.fetch_add(1, Ordering::SeqCst);
        self.shared.event.notify(usize::MAX);
    }
}

/// The agent's side: takes a checkpoint per turn.
#[derive(Clone, Debug)]
pub struct CancellationHandle {
    shared: Arc<Shared>,
}

impl CancellationHandle {
    /// A cancellation token for work starting now.
    pub fn checkpoint(&self) -> TurnCancellation {
        TurnCancellation {
            generation: self.shared.generation.load(Ordering::SeqCst),
            shared: self.shared.clone(),
        }
    }
}

/// Returned when work stops because its turn was cancelled.
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
#[error("the turn was cancelled")]
pub struct Cancelled;

/// The state of every [`TurnCancellation::never`] token; no controller holds
/// it, so nothing ever interrupts it.
fn never_shared() -> &'static Arc<Shared> {
    static NEVER: std::sync::OnceLock<Arc<Shared>> = std::sync::OnceLock::new();
    NEVER.get_or_init(Arc::default)
}

/// A token for one turn: cancelled once an interrupt follows its creation.
#[derive(Clone, Debug)]
pub struct TurnCancellation {
    shared: Arc<Shared>,
    generation: u64,
}

impl TurnCancellation {
    /// A token that is never cancelled, for callers without a controller.
    ///
    /// Every such token shares one state that no controller can reach, so
    /// making one (the loop does for every call without a controller)
    /// allocates nothing.
    pub fn never() -> Self {
        Self {
            shared: never_shared().clone(),
            generation: 0,
        }
    }

    /// `true` once an interrupt was issued after this checkpoint.
    pub fn is_cancelled(&self) -> bool {
        self.shared.generation.load(Ordering::SeqCst) != self.generation
    }

    /// `Err(Cancelled)` once cancelled; for `?` in tool code.
    pub fn check(&self) -> Result<(), Cancelled> {
        if self.is_cancelled() {
            Err(Cancelled)
        } else {
            Ok(())
        }
    }

    /// Resolves as soon as the token is cancelled (immediately if it already
    /// is). Use it in a `select!` beside the work it guards.
    pub async fn cancelled(&self) {
        if Arc::ptr_eq(&self.shared, never_shared()) {
            // Nothing can cancel it; waiting on the shared event would only
            // make every such waiter in the process contend for one list.
            return std::future::pending().await;
        }
        loop {
            if self.is_cancelled() {
                return;
            }
            // Register before the second check so an interrupt landing in
            // between still wakes us.
            let listener = self.shared.event.listen();
            if self.is_cancelled() {
                return;
            }
            listener.await;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use futures::executor::block_on;

    #[test]
    fn interrupt_cancels_earlier_checkpoints_only() {
        let controller = CancellationController::new();
        let handle = controller.handle();
        let before = handle.checkpoint();
        assert!(!before.is_cancelled());
        controller.interrupt();
        assert!(before.is_cancelled());
        assert_eq!(before.check(), Err(Cancelled));
        let after = handle.checkpoint();
        assert!(
            !after.is_cancelled(),
            "a checkpoint taken after an interrupt is fresh"
        );
        assert_eq!(after.check(), Ok(()));
    }

    #[test]
    fn never_tokens_share_one_state_and_stay_uncancelled() {
        let (a, b) = (TurnCancellation::never(), TurnCancellation::never());
        assert!(Arc::ptr_eq(&a.shared, &b.shared), "no allocation per token");
        // A controller's interrupt reaches only its own checkpoints.
        CancellationController::new().interrupt();
        assert!(!a.is_cancelled());
        assert_eq!(b.check(), Ok(()));
        let waiting = futures::FutureExt::now_or_never(a.cancelled());
        assert!(waiting.is_none(), "waiting on a never token never resolves");
    }

    #[test]
    fn cancelled_resolves_at_once_when_already_cancelled() {
        let controller = CancellationController::new();
        let token = controller.handle().checkpoint();
        controller.interrupt();
        block_on(token.cancelled());
    }

    #[test]
    fn cancelled_wakes_a_waiter_on_another_thread() {
        let controller = CancellationController::new();
        let token = controller.handle().checkpoint();
        let (tx, rx) = std::sync::mpsc::channel();
        let waiter = std::thread::spawn(move || {
            block_on(token.cancelled());
            tx.send(()).unwrap();
        });
        // The waiter must still be asleep: nothing interrupted yet.
        assert!(
            rx.recv_timeout(std::time::Duration::from_millis(50))
                .is_err()
        );
        controller.interrupt();
        rx.recv_timeout(std::time::Duration::from_secs(10))
            .expect("waiter woke");
        waiter.join().unwrap();
    }

    #[test]
    fn never_is_never_cancelled() {
        assert!(!TurnCancellation::never().is_cancelled());
    }
}
