//! Transcript compaction: a [`LoopMutator`](agentkit_loop::LoopMutator) that
//! keeps a session within a budget.
//!
//! A [`Compactor`] checks its [`CompactionTrigger`] at every mutation point
//! (right before each model call included) and, when the transcript is over
//! budget, applies its [`CompactionStrategy`] to everything but the most
//! recent items: elide old tool outputs, drop the oldest exchanges, or
//! replace them with a summary written by a model ([`ModelSummarizer`]).
//! Every strategy keeps the tool-call invariant and the system prompt.
//! Budgets count tokens from the provider's usage report of the last call
//! plus an estimate of what came after ([`count_tokens`]); windows of common
//! models are known ([`context_window`], [`Compactor::for_model`]). When a
//! provider still refuses a request as too long, the loop runs the
//! compactor in forced mode and retries once.
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
mod summarize;
mod window;

pub use budget::estimate_tokens;
pub use compactor::{
    CompactionStrategy, CompactionTrigger, Compactor, DEFAULT_WINDOW, WINDOW_FRACTION,
};
pub use summarize::{DEFAULT_SUMMARY_PROMPT, ModelSummarizer, Summarizer};
pub use window::{context_window, count_tokens};

// The README's example is compiled and run with the doc-tests.
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
struct ReadmeDoctests;
