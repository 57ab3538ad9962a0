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

use crate::WeatherTool;
use agentkit_core::{
    DeltaFolder, FinishReason, Item, ItemKind, Part, TokenUsage, ToolCallPart, TurnId, Usage,
    validate_transcript,
};
use agentkit_loop::{
    Agent, LoopDriver, LoopInterrupt, LoopStep, ModelAdapter, ModelError, ModelSession, ModelTurn,
    ModelTurnEvent, ModelTurnResult, SessionConfig, TranscriptView, TurnRequest, TurnResult,
};
use agentkit_tools_core::ToolRegistry;
use std::sync::Arc;
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

/// Reads `turn` to its end (no time limit: wrap it in one). A stream that
/// fails mid-way gives an outcome with its `error` set, after checking the
/// stream is then over.
pub async fn read_to_end(mut turn: impl ModelTurn) -> Outcome {
    let mut events = Vec::new();
    loop {
        match turn.next_event().await {
            Ok(Some(event)) => events.push(event),
            Ok(None) => {
                return Outcome {
                    events,
                    error: None,
                };
            }
            Err(error) => {
                // After an error the stream is over.
                assert_eq!(turn.next_event().await, Ok(None));
                let error = Some(error);
                return Outcome { events, error };
            }
        }
    }
}

/// [`run_turn`] with another time limit (a real, slow server).
pub async fn run_turn_within<A: ModelAdapter>(
    limit: Duration,
    adapter: A,
    request: TurnRequest,
) -> Result<Outcome, ModelError> {
    tokio::time::timeout(limit, async move {
        let mut session = adapter.start_session(SessionConfig::new("s-1")).await?;
        let turn = session.begin_turn(request).await?;
        Ok(read_to_end(turn).await)
    })
    .await
    .expect("the model call finished in time")
}

/// A request for session `s-1`, model call `turn-1`, with `items` and the
/// [`WeatherTool`] offered: what the adapters' recorded traffic asks.
pub fn weather_request(items: Vec<Item>) -> TurnRequest {
    let mut request = TurnRequest::new(
        "s-1",
        TurnId::new("turn-1"),
        TranscriptView::from_items(items),
    );
    request.available_tools = vec![Arc::new(WeatherTool::spec())].into();
    request
}

/// The whole path through `adapter`: an agent with the [`WeatherTool`],
/// the system prompt "Be brief." and the question "Weather in Genève?" runs
/// its turn to the end within [`LIMIT`] (the model is expected to call the
/// tool once, then answer). Checks the transcript is valid and is system,
/// user, the assistant's call, the tool's result, the answer; returns the
/// driver and the turn's result.
pub async fn weather_round<M: ModelAdapter>(adapter: M) -> (LoopDriver<M::Session>, TurnResult) {
    let agent = Agent::builder()
        .model(adapter)
        .add_tool_source(ToolRegistry::new().with(WeatherTool))
        .transcript(vec![Item::system("Be brief.")])
        .input(vec![Item::user("Weather in Genève?")])
        .build()
        .expect("the agent builds");
    let run = async {
        let mut driver = agent
            .start(SessionConfig::new("e2e"))
            .await
            .expect("it starts");
        loop {
            match driver.next().await.expect("a step") {
                LoopStep::Finished(result) => return (driver, result),
                LoopStep::Interrupt(LoopInterrupt::AfterToolResult(_)) => {}
                other => panic!("unexpected step {other:?}"),
            }
        }
    };
    let (driver, result) = tokio::time::timeout(LIMIT, run)
        .await
        .expect("the round finished in time");
    let items = driver.transcript().to_vec();
    validate_transcript(&items).expect("a valid transcript");
    let kinds: Vec<ItemKind> = items.iter().map(|i| i.kind).collect();
    assert_eq!(
        kinds,
        [
            ItemKind::System,
            ItemKind::User,
            ItemKind::Assistant,
            ItemKind::Tool,
            ItemKind::Assistant
        ]
    );
    (driver, result)
}

/// One test per piece size (whole, 1, 7 and 4,096 bytes) for a recording:
/// `replayed!(name, replay, check)` writes a module `name` whose tests each
/// call `check(replay("name", piece).await)`, where `replay` (a function or
/// closure in the calling file) serves the recording `name` cut into reads
/// of `piece` bytes (`0`: whole) and returns what the adapter decoded.
/// Needs tokio's `macros` feature in the calling crate.
#[macro_export]
macro_rules! replayed {
    ($name:ident, $replay:expr, $check:expr) => {
        mod $name {
            use super::*;
            #[tokio::test]
            async fn whole() {
                ($check)(($replay)(stringify!($name), 0).await);
            }
            #[tokio::test]
            async fn pieces_of_1() {
                ($check)(($replay)(stringify!($name), 1).await);
            }
            #[tokio::test]
            async fn pieces_of_7() {
                ($check)(($replay)(stringify!($name), 7).await);
            }
            #[tokio::test]
            async fn pieces_of_4096() {
                ($check)(($replay)(stringify!($name), 4096).await);
            }
        }
    };
}
