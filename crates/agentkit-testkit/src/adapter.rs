//! Running one model call of any [`ModelAdapter`] to its end and reading
//! what it streamed: what every adapter's test suite does against its local
//! server, whatever the provider.
//!
//! ```
//! use agentkit_core::{FinishReason, Item, TurnId};
//! use agentkit_loop::{TranscriptView, TurnRequest};
//! use agentkit_testkit::{ScriptedModel, ScriptedTurn, adapter};
//!
//! # tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap().block_on(async {
//! let model = ScriptedModel::new([ScriptedTurn::text("Bonjour")]);
//! let request = TurnRequest::new("s", TurnId::new("t"), TranscriptView::from_items(vec![Item::user("Hi")]));
//! let outcome = adapter::run_turn(model, request).await.unwrap();
//! assert_eq!(outcome.parts()[0].as_text(), Some("Bonjour"));
//! assert_eq!(outcome.finish_reason(), Some(FinishReason::Completed));
//! assert!(outcome.error.is_none());
//! # });
//! ```

use agentkit_core::{DeltaFolder, FinishReason, Part, TokenUsage, ToolCallPart, Usage};
use agentkit_loop::{
    ModelAdapter, ModelError, ModelSession, ModelTurn, ModelTurnEvent, ModelTurnResult,
    SessionConfig, TurnRequest,
};
use std::time::Duration;

/// How long [`run_turn`] lets a model call take on a loaded machine.
pub const LIMIT: Duration = Duration::from_secs(20);

/// What one model call streamed: its events, and the error that ended it,
/// if any.
#[derive(Debug)]
#[non_exhaustive]
pub struct Outcome {
    /// Every event, in order.
    pub events: Vec<ModelTurnEvent>,
    /// The error that ended the stream (after it, the stream was over).
    pub error: Option<ModelError>,
}

impl Outcome {
    /// The answer's parts, folded from its deltas. Panics if the deltas do
    /// not fit together or a part was left open.
    pub fn parts(&self) -> Vec<Part> {
        let mut folder = DeltaFolder::new();
        for event in &self.events {
            if let ModelTurnEvent::Delta(delta) = event {
                folder.apply(delta).expect("deltas fit together");
            }
        }
        folder.finish().expect("every part committed")
    }

    /// The tool calls, in order.
    pub fn tool_calls(&self) -> Vec<ToolCallPart> {
        self.events
            .iter()
            .filter_map(|e| match e {
                ModelTurnEvent::ToolCall(call) => Some(call.clone()),
                _ => None,
            })
            .collect()
    }

    /// The last usage report (the last one of a call wins).
    pub fn last_usage(&self) -> Option<Usage> {
        self.events.iter().rev().find_map(|e| match e {
            ModelTurnEvent::Usage(usage) => Some(usage.clone()),
            _ => None,
        })
    }

    /// The last usage report's token counts.
    pub fn usage(&self) -> Option<TokenUsage> {
        self.last_usage().map(|u| u.tokens)
    }

    /// The `Finished` event's result.
    pub fn finished(&self) -> Option<&ModelTurnResult> {
        self.events.iter().find_map(|e| match e {
            ModelTurnEvent::Finished(result) => Some(result),
            _ => None,
        })
    }

    /// The `Finished` event's finish reason.
    pub fn finish_reason(&self) -> Option<FinishReason> {
        self.finished().map(|r| r.finish_reason.clone())
    }

    /// The warnings, in order.
    pub fn warnings(&self) -> Vec<String> {
        self.events
            .iter()
            .filter_map(|e| match e {
                ModelTurnEvent::Warning(w) => Some(w.clone()),
                _ => None,
            })
            .collect()
    }
}

/// Starts a session of `adapter`, begins one model call with `request` and
/// reads it to its end within [`LIMIT`]; `Err` when the call did not start.
/// A stream that fails mid-way is an `Ok` outcome with its `error` set, after
/// checking the stream is then over.
pub async fn run_turn<A: ModelAdapter>(
    adapter: A,
    request: TurnRequest,
) -> Result<Outcome, ModelError> {
    run_turn_within(LIMIT, adapter, request).await
}

/// [`run_turn`] with another time limit (a real, slow server).
pub async fn run_turn_within<A: ModelAdapter>(
    limit: Duration,
    adapter: A,
    request: TurnRequest,
) -> Result<Outcome, ModelError> {
    tokio::time::timeout(limit, async move {
        let mut session = adapter.start_session(SessionConfig::new("s-1")).await?;
        let mut turn = session.begin_turn(request).await?;
        let mut events = Vec::new();
        loop {
            match turn.next_event().await {
                Ok(Some(event)) => events.push(event),
                Ok(None) => {
                    return Ok(Outcome {
                        events,
                        error: None,
                    });
                }
                Err(error) => {
                    // After an error the stream is over.
                    assert_eq!(turn.next_event().await, Ok(None));
                    let error = Some(error);
                    return Ok(Outcome { events, error });
                }
            }
        }
    })
    .await
    .expect("the model call finished in time")
}
