//! Usage totals.

use agentkit_core::Usage;
use agentkit_loop::{AgentEvent, LoopObserver};
use std::sync::{Arc, Mutex};

/// Sums the usage of every finished turn. Clones share the totals, so one
/// can be registered on many agents and read from anywhere.
#[derive(Clone, Debug, Default)]
pub struct UsageTotals {
    inner: Arc<Mutex<(Usage, u64)>>,
}

impl UsageTotals {
    /// Empty totals.
    pub fn new() -> Self {
        Self::default()
    }

    /// The usage summed so far.
    pub fn usage(&self) -> Usage {
        self.inner
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .0
            .clone()
    }

    /// How many turns finished.
    pub fn turns(&self) -> u64 {
        self.inner.lock().unwrap_or_else(|e| e.into_inner()).1
    }
}

impl LoopObserver for UsageTotals {
    fn handle_event(&self, event: AgentEvent) {
        if let AgentEvent::TurnFinished { result } = event {
            let mut inner = self.inner.lock().unwrap_or_else(|e| e.into_inner());
            inner.0.accumulate(&result.usage);
            inner.1 += 1;
        }
    }
}
