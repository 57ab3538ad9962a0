//! Mutators: code that may rewrite the transcript at fixed points
//! (compaction, redaction, repair).
//!
//! A mutator gets a cheap view of the transcript and returns a new one only
//! when it changes something, so an idle mutator costs nothing per round. A
//! rewritten transcript is validated before the loop goes on: a mutator that
//! breaks the tool-call pairing fails the turn with `LoopError::Mutator`
//! instead of failing at the provider later.

use crate::TranscriptView;
use agentkit_core::{Item, SessionId, Usage};
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
    /// Right before a model request is sent, after pending input was merged.
    BeforeModelCall,
}

/// What a mutator sees.
#[derive(Clone, Debug)]
#[non_exhaustive]
pub struct MutationContext {
    /// The session.
    pub session_id: SessionId,
    /// Where it runs.
    pub point: MutationPoint,
    /// `true` when the provider refused the last request as too long for
    /// its context window: a compactor should shrink the transcript now,
    /// whatever its own trigger says. The request is retried once after.
    pub forced: bool,
    /// What the provider reported for the last model call, if it reported
    /// anything: a measurement of the transcript's size in tokens.
    pub last_call: Option<LastCallUsage>,
}

impl MutationContext {
    /// A context for `point`, not forced, with no usage known.
    pub fn new(session_id: impl Into<SessionId>, point: MutationPoint) -> Self {
        Self {
            session_id: session_id.into(),
            point,
            forced: false,
            last_call: None,
        }
    }

    /// The same context, forced (see [`MutationContext::forced`]).
    pub fn with_forced(mut self, forced: bool) -> Self {
        self.forced = forced;
        self
    }

    /// The same context with the last call's usage.
    pub fn with_last_call(mut self, last_call: Option<LastCallUsage>) -> Self {
        self.last_call = last_call;
        self
    }
}

/// The provider's usage report of the last model call, and where the
/// transcript stood then: input plus output tokens measure the transcript up
/// to `transcript_len` items; only later items need an estimate.
#[derive(Clone, Debug, PartialEq)]
pub struct LastCallUsage {
    /// The usage the provider reported.
    pub usage: Usage,
    /// The transcript's length once the answer was appended.
    pub transcript_len: usize,
}

/// A mutator's rewrite, with an optional account of what it compacted.
#[derive(Clone, Debug, PartialEq)]
#[non_exhaustive]
pub struct Rewrite {
    /// The new transcript.
    pub items: Vec<Item>,
    /// Set by compactors: reported as `AgentEvent::CompactionApplied`.
    pub compaction: Option<CompactionReport>,
}

impl Rewrite {
    /// A rewrite with no compaction report.
    pub fn new(items: Vec<Item>) -> Self {
        Self {
            items,
            compaction: None,
        }
    }

    /// The same rewrite with a compaction report.
    pub fn with_compaction(mut self, report: CompactionReport) -> Self {
        self.compaction = Some(report);
        self
    }
}

/// What a compaction did, in tokens (as the compactor counted them).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct CompactionReport {
    /// The strategy (`elide_tool_outputs`, `drop_oldest_exchanges`, `summarize`).
    pub strategy: String,
    /// Tokens before.
    pub tokens_before: usize,
    /// Tokens after.
    pub tokens_after: usize,
    /// Original items kept out of the new transcript (archived, not lost):
    /// they went to transcript observers through `on_transcript_rewritten`.
    pub archived_items: usize,
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
    ) -> Result<Option<Vec<Item>>, MutateError>;

    /// Like [`mutate`](Self::mutate), with a report of what was compacted.
    /// The driver calls this one; the default wraps `mutate`.
    async fn rewrite(
        &self,
        ctx: &MutationContext,
        transcript: TranscriptView,
    ) -> Result<Option<Rewrite>, MutateError> {
        Ok(self.mutate(ctx, transcript).await?.map(Rewrite::new))
    }
}

/// Why a mutator failed: what a host can match on, instead of a string.
///
/// ```
/// use agentkit_loop::{ModelError, ModelErrorKind, MutateError};
///
/// let err = MutateError::from(ModelError::new(ModelErrorKind::Server, "503"));
/// assert!(matches!(err, MutateError::Model(_)));
/// let err = MutateError::from("the redaction rules are missing");
/// assert_eq!(err.to_string(), "the redaction rules are missing");
/// ```
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
#[non_exhaustive]
pub enum MutateError {
    /// A model call the mutator made (a summary) failed.
    #[error("its model call failed: {0}")]
    Model(#[from] crate::ModelError),
    /// Something the mutator needs is not available (a file, a service).
    #[error("{0} is unavailable")]
    Unavailable(String),
    /// Anything else, in the mutator's words.
    #[error("{0}")]
    Other(String),
}

impl From<String> for MutateError {
    fn from(message: String) -> Self {
        MutateError::Other(message)
    }
}

impl From<&str> for MutateError {
    fn from(message: &str) -> Self {
        MutateError::Other(message.to_owned())
    }
}
