//! Mutators: code that may rewrite the transcript at fixed points
//! (compaction, redaction, repair).
//!
//! A mutator gets a cheap view of the transcript and returns a new one only
//! when it changes something, so an idle mutator costs nothing per round. A
//! rewritten transcript is validated before the loop goes on: a mutator that
//! breaks the tool-call pairing fails the turn with `LoopError::Mutator`
//! instead of failing at the provider later.

use crate::TranscriptView;
use agentkit_core::{Item, SessionId};
use serde::{Deserialize, Serialize};

/// Where mutators run.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum MutationPoint {
    /// After a tool round's results were appended.
    AfterToolResult,
    /// After a turn ended (finished, cancelled, or failed).
    AfterTurnEnded,
}

/// What a mutator sees.
#[derive(Clone, Debug)]
pub struct MutationContext {
    /// The session.
    pub session_id: SessionId,
    /// Where it runs.
    pub point: MutationPoint,
}

/// Rewrites the transcript at mutation points.
#[async_trait::async_trait]
pub trait LoopMutator: Send + Sync {
    /// A name for events and errors.
    fn name(&self) -> &str;

    /// Returns `Some(new transcript)` to rewrite it, `None` to leave it.
    async fn mutate(
        &self,
        ctx: &MutationContext,
        transcript: TranscriptView,
    ) -> Result<Option<Vec<Item>>, String>;
}
