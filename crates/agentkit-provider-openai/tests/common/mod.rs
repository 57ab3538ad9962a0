//! Helpers shared by the adapter tests: running one turn of any adapter
//! against the local server and reading what it produced.

#![allow(dead_code)]

use agentkit_core::{DeltaFolder, FinishReason, Part, TokenUsage, ToolCallPart, Usage};
use agentkit_loop::{
    ModelAdapter, ModelError, ModelSession, ModelTurn, ModelTurnEvent, SessionConfig, TurnRequest,
};
use std::time::Duration;

/// The longest a test turn may take.
pub const LIMIT: Duration = Duration::from_secs(20);

/// A fixture file's text.
pub fn fixture(name: &str) -> String {
    let path = format!("{}/tests/fixtures/{name}", env!("CARGO_MANIFEST_DIR"));
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{path}: {e}"))
}

/// What one turn produced: its events, and the error that ended it, if any.
pub struct Outcome {
    pub events: Vec<ModelTurnEvent>,
    pub error: Option<ModelError>,
}

impl Outcome {
    pub fn parts(&self) -> Vec<Part> {
        let mut folder = DeltaFolder::new();
        for event in &self.events {
            if let ModelTurnEvent::Delta(delta) = event {
                folder.apply(delta).expect("deltas fit together");
            }
        }
        folder.finish().expect("every part committed")
    }

    pub fn tool_calls(&self) -> Vec<ToolCallPart> {
        self.events
            .iter()
            .filter_map(|e| match e {
                ModelTurnEvent::ToolCall(call) => Some(call.clone()),
                _ => None,
            })
            .collect()
    }

    pub fn last_usage(&self) -> Option<Usage> {
        self.events.iter().rev().find_map(|e| match e {
            ModelTurnEvent::Usage(usage) => Some(usage.clone()),
            _ => None,
        })
    }

    pub fn usage(&self) -> Option<TokenUsage> {
        self.last_usage().map(|u| u.tokens)
    }

    pub fn finish_reason(&self) -> Option<FinishReason> {
        self.finished().map(|r| r.finish_reason.clone())
    }

    pub fn finished(&self) -> Option<&agentkit_loop::ModelTurnResult> {
        self.events.iter().find_map(|e| match e {
            ModelTurnEvent::Finished(result) => Some(result),
            _ => None,
        })
    }

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

/// Runs one turn of `adapter` to its end; `Err` when the turn did not
/// start.
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
                    // After an error the turn is over.
                    assert_eq!(turn.next_event().await, Ok(None));
                    return Ok(Outcome {
                        events,
                        error: Some(error),
                    });
                }
            }
        }
    })
    .await
    .expect("the turn finished in time")
}
