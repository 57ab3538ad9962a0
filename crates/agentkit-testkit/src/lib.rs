//! Deterministic tests for agentkit agents.
//!
//! [`ScriptedModel`] plays a script of model turns (deltas, tool calls,
//! usage, finish reasons, errors, delays) and records every
//! [`TurnRequest`](agentkit_loop::TurnRequest) it receives, so a test can
//! assert on what the model saw. [`run_to_finish`] drives a session to the
//! end of a turn, answering approvals, and checks the transcript. [`normalized`] and
//! [`assert_transcript_snapshot!`] make transcripts snapshot-stable. With
//! the `cassette` feature, [`cassette`] records real
//! provider exchanges and replays them offline through the real adapter and
//! HTTP client. [`SoakRng`] and [`soak_minutes`] are what the soak tests
//! behind `cargo xtask soak` share: a seeded random source and a duration.
//!
//! For adapter authors: [`adapter::run_turn`] reads one model call of any
//! adapter to its end, [`WeatherTool`] is the tool the recorded traffic
//! uses, and (with `cassette`) [`assert_dropping_a_turn_closes_the_connection`]
//! is the cancellation check every adapter owes. For kill and resume tests:
//! [`GuardedTool`] asks approval (through [`AskFor`]) and counts its runs.
//! For recorded sessions: [`check_replay`] replays an input log and compares
//! transcript and events with the live run.
//!
//! # Example
//!
//! The README's example (it runs as a doc-test here and in the README):
//!
//! ```
//! use agentkit_core::{Item, ItemKind};
//! use agentkit_loop::{Agent, LoopStep, SessionConfig};
//! use agentkit_testkit::{ScriptedModel, ScriptedTurn};
//!
//! # tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap().block_on(async {
//! let model = ScriptedModel::new([ScriptedTurn::text("Hello!")]);
//! let agent = Agent::builder()
//!     .model(model.clone())
//!     .input(vec![Item::user("hi")])
//!     .build()?;
//! let mut driver = agent.start(SessionConfig::new("test")).await?;
//! let LoopStep::Finished(result) = driver.next().await? else { panic!("expected a finished turn") };
//! assert_eq!(result.items[0].text_content(), "Hello!");
//! // The model saw the user's message.
//! assert_eq!(model.requests()[0].transcript.read()[0].kind, ItemKind::User);
//! # Ok::<(), agentkit_loop::LoopError>(())
//! # }).unwrap();
//! ```

pub mod adapter;
#[cfg(feature = "cassette")]
pub mod cassette;
mod drive;
#[cfg(feature = "cassette")]
mod dropped;
mod echo;
mod guarded;
#[cfg(feature = "postgres")]
pub mod pg;
pub mod process;
mod replay;
mod script;
mod snapshot;
mod soak;

pub use drive::{
    Approvals, DriveError, MAX_STEPS, Run, error_kind, results_by_call, run_to_finish,
};
#[cfg(feature = "cassette")]
pub use dropped::{assert_drop_closes_connection, assert_dropping_a_turn_closes_the_connection};
pub use echo::{EchoTool, WeatherTool};
pub use guarded::{AskFor, GuardedTool};
pub use replay::check_replay;
pub use script::{ScriptStep, ScriptedModel, ScriptedSession, ScriptedTurn, ScriptedTurnStream};
pub use snapshot::normalized;
pub use soak::{SoakRng, soak_minutes};

#[doc(hidden)]
pub use insta;

// The README's example is compiled and run with the doc-tests.
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
struct ReadmeDoctests;
