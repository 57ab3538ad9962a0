//! Ready-made observers for the agent loop.
//!
//! - [`TerminalReporter`]: streams the model's text and tool activity to a
//!   writer (stderr by default), for command-line agents.
//! - [`JsonlReporter`]: one JSON object per event, for logs and replays.
//! - [`UsageTotals`]: token usage summed over a session or many.
//! - [`ChannelObserver`]: forwards events to an async consumer, so slow work
//!   (a UI, a database) never runs inside the loop.
//!
//! Observers are called inline by the driver; everything here does a small,
//! bounded amount of work per event.
//!
//! # Example
//!
//! The README's example (it runs as a doc-test here and in the README):
//!
//! ```
//! use agentkit_core::Item;
//! use agentkit_loop::{Agent, LoopStep, SessionConfig};
//! use agentkit_reporting::{JsonlReporter, UsageTotals};
//! use agentkit_testkit::{ScriptedModel, ScriptedTurn};
//!
//! # tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap().block_on(async {
//! let totals = UsageTotals::new();
//! let agent = Agent::builder()
//!     .model(ScriptedModel::new([ScriptedTurn::text("hi")]))
//!     .observer(totals.clone())
//!     .observer(JsonlReporter::new(std::io::sink()))
//!     .input(vec![Item::user("hello")])
//!     .build()?;
//! let mut driver = agent.start(SessionConfig::new("demo")).await?;
//! assert!(matches!(driver.next().await?, LoopStep::Finished(_)));
//! assert_eq!(totals.turns(), 1);
//! # Ok::<(), agentkit_loop::LoopError>(())
//! # }).unwrap();
//! ```

mod channel;
mod jsonl;
mod terminal;
mod usage;

pub use channel::ChannelObserver;
pub use jsonl::JsonlReporter;
pub use terminal::TerminalReporter;
pub use usage::UsageTotals;

// The README's example is compiled and run with the doc-tests.
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
struct ReadmeDoctests;
