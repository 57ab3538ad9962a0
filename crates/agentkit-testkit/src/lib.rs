//! Deterministic tests for agentkit agents.
//!
//! [`ScriptedModel`] plays a script of model turns (deltas, tool calls,
//! usage, finish reasons, errors, delays) and records every
//! [`TurnRequest`](agentkit_loop::TurnRequest) it receives, so a test can
//! assert on what the model saw. [`normalized`] and
//! [`assert_transcript_snapshot!`] make transcripts snapshot-stable.

#[cfg(feature = "cassette")]
pub mod cassette;
mod script;
mod snapshot;

pub use script::{ScriptStep, ScriptedModel, ScriptedSession, ScriptedTurn, ScriptedTurnStream};
pub use snapshot::normalized;

#[doc(hidden)]
pub use insta;

// The README's example is compiled and run with the doc-tests.
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
struct ReadmeDoctests;
