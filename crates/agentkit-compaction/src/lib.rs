//! Transcript compaction: a [`LoopMutator`](agentkit_loop::LoopMutator) that
//! keeps a session within a budget.
//!
//! A [`Compactor`] checks its [`CompactionTrigger`] at every mutation point
//! and, when the transcript is over budget, applies its
//! [`CompactionStrategy`] to everything but the most recent items. Both
//! strategies keep the tool-call invariant: outputs are shortened in place,
//! and whole exchanges are dropped only at user-message boundaries, where no
//! call is waiting for its result.
//!
//! ```
//! use agentkit_compaction::{CompactionStrategy, CompactionTrigger, Compactor};
//!
//! let compactor = Compactor::new(CompactionTrigger::EstimatedTokens(50_000))
//!     .keep_recent(20)
//!     .strategy(CompactionStrategy::ElideToolOutputs);
//! // Agent::builder().compaction(compactor) ...
//! # let _ = compactor;
//! ```

mod budget;
mod compactor;

pub use budget::estimate_tokens;
pub use compactor::{CompactionStrategy, CompactionTrigger, Compactor};

// The README's example is compiled and run with the doc-tests.
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
struct ReadmeDoctests;
