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
