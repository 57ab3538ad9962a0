//! Usage totals.

use agentkit_core::Usage;
use agentkit_loop::{AgentEvent, LoopObserver};
use std::sync::{Arc, Mutex};

/// Sums the usage of every finished turn. Clones share the totals, so one
/// can be registered on many agents and read from anywhere.
///
/// ```
/// use agentkit_core::{FinishReason, Item, TokenUsage, Usage};
/// use agentkit_loop::{Agent, LoopStep, SessionConfig};
/// use agentkit_reporting::UsageTotals;
/// use agentkit_testkit::{ScriptedModel, ScriptedTurn};
///
/// # tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap().block_on(async {
/// let turn = || {
///     let tokens = TokenUsage { input_tokens: 100, output_tokens: 20, ..Default::default() };
///     ScriptedTurn::new().say("ok").usage(Usage::from_tokens(tokens)).finish(FinishReason::Completed)
/// };
/// let totals = UsageTotals::new();
/// let agent = Agent::builder()
///     .model(ScriptedModel::new([turn(), turn()]))
///     .observer(totals.clone()) // a clone: both read the same totals
///     .input(vec![Item::user("hello")])
///     .build()?;
/// // Two sessions, one total.
/// for session in ["a", "b"] {
///     let mut driver = agent.start(SessionConfig::new(session)).await?;
///     assert!(matches!(driver.next().await?, LoopStep::Finished(_)));
/// }
/// assert_eq!(totals.turns(), 2);
/// assert_eq!(totals.usage().tokens.input_tokens, 200);
/// assert_eq!(totals.usage().tokens.total(), 240);
/// # Ok::<(), agentkit_loop::LoopError>(())
/// # }).unwrap();
/// ```
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
