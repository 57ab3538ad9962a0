//! The agentkit agent loop.
//!
//! An [`Agent`] is immutable configuration: a model adapter, tool sources,
//! permissions, observers. [`Agent::start`] opens a session and returns a
//! [`LoopDriver`], the mutable runtime that owns the transcript. The host
//! pulls the loop forward with [`LoopDriver::next`], which returns either
//! [`LoopStep::Finished`] or [`LoopStep::Interrupt`]: an approval to give
//! (blocking), or a cooperative pause where the host may add input.

mod cache;
mod model;
mod transcript;

pub use cache::{
    CacheBreakpoint, PromptCacheMode, PromptCacheRequest, PromptCacheRetention, PromptCacheStrategy,
};
pub use model::{
    ModelAdapter, ModelError, ModelErrorKind, ModelSession, ModelTurn, ModelTurnEvent,
    ModelTurnResult, SessionConfig, TurnRequest,
};
pub use transcript::{TranscriptGuard, TranscriptView};
