//! Errors `next()` and the handles can return.

use crate::ModelError;
use agentkit_core::TranscriptError;
use agentkit_tools_core::CatalogError;

/// A loop failure.
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
#[non_exhaustive]
pub enum LoopError {
    /// The call does not fit the driver's state (an unresolved approval, an
    /// approval that does not exist, input submitted mid-round).
    #[error("invalid state: {0}")]
    InvalidState(String),
    /// The model call failed. The transcript is unchanged by the failed call;
    /// calling `next()` again retries it.
    #[error("model error: {0}")]
    Model(#[from] ModelError),
    /// The tool catalog could not be built (a name collision under
    /// `CollisionPolicy::Error`).
    #[error("tool catalog: {0}")]
    Catalog(#[from] CatalogError),
    /// A mutator failed or left the transcript invalid.
    #[error("mutator {mutator}: {message}")]
    Mutator {
        /// The mutator's name.
        mutator: String,
        /// What went wrong.
        message: String,
    },
    /// The transcript broke its invariant (a bug, or a bad preloaded one).
    #[error("invalid transcript: {0}")]
    Transcript(#[from] TranscriptError),
    /// A snapshot cannot be resumed.
    #[error("cannot resume snapshot: {0}")]
    Snapshot(String),
    /// The agent is misconfigured.
    #[error("invalid configuration: {0}")]
    Config(String),
}
