//! Deterministic tests for agentkit agents.
//!
//! [`ScriptedModel`] plays a script of model turns (deltas, tool calls,
//! usage, finish reasons, errors, delays) and records every
//! [`TurnRequest`](agentkit_loop::TurnRequest) it receives, so a test can
//! assert on what the model saw. [`run_to_finish`] drives a session to the
//! end of a turn, answering approvals, and checks the transcript. [`normalized`] and
//! [`assert_transcript_snapshot!`] make transcripts snapshot-stable.

mod drive;
mod script;
mod snapshot;

pub use drive::{
    Approvals, DriveError, MAX_STEPS, Run, error_kind, results_by_call, run_to_finish,
};
pub use script::{ScriptStep, ScriptedModel, ScriptedSession, ScriptedTurn, ScriptedTurnStream};
pub use snapshot::normalized;

#[doc(hidden)]
pub use insta;

// The README's example is compiled and run with the doc-tests.
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
struct ReadmeDoctests;
