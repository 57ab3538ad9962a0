//! The scripted model.

use agentkit_core::{Delta, FinishReason, PartId, PartKind, ToolCallPart, ToolInput, Usage};
use agentkit_loop::{
    ModelAdapter, ModelError, ModelErrorKind, ModelSession, ModelTurn, ModelTurnEvent,
    ModelTurnResult, SessionConfig, TurnRequest,
};
use serde_json::Value;
use std::collections::VecDeque;
use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};
use std::time::Duration;

/// One step of a scripted turn.
#[derive(Clone, Debug)]
#[non_exhaustive]
pub enum ScriptStep {
    /// Emit this event.
    Event(ModelTurnEvent),
    /// Fail the stream with this error.
    Fail(ModelError),
    /// Wait this long (tokio time, so paused-clock tests run instantly).
    Delay(Duration),
    /// Emit a tool call whose input is parsed from this JSON text when it
    /// is emitted, as an adapter parses a streamed call: each session (and
    /// each play of the turn) holds an input of its own.
    RawCall {
        /// The call's id.
        id: String,
        /// The tool's name.
        name: String,
        /// The input, as JSON text.
        input: String,
    },
}

/// A scripted model turn, built step by step.
///
/// [`text`](Self::text) and [`tool_call`](Self::tool_call) cover most
/// tests; the builder methods script anything a provider can do.
///
/// ```
/// use agentkit_core::{FinishReason, TokenUsage, Usage};
/// use agentkit_loop::{ModelError, ModelErrorKind};
/// use agentkit_testkit::ScriptedTurn;
/// use serde_json::json;
/// use std::time::Duration;
///
/// let answer = ScriptedTurn::text("Hello."); // says it, finishes Completed
/// let call = ScriptedTurn::tool_call("c1", "fs_read_file", json!({ "path": "a.txt" }));
/// // Streamed in pieces, slowly, with usage, cut off by the token limit:
/// let long = ScriptedTurn::new()
///     .say_chunks(&["Once ", "upon ", "a "])
///     .delay(Duration::from_millis(50))
///     .usage(Usage::from_tokens(TokenUsage { output_tokens: 3, ..Default::default() }))
///     .finish(FinishReason::MaxTokens);
/// // A provider failure part-way through the stream:
/// let flaky = ScriptedTurn::new()
///     .say("Half")
///     .fail(ModelError::new(ModelErrorKind::Overloaded, "try later"));
/// # let _ = (answer, call, long, flaky);
/// ```
#[derive(Clone, Debug, Default)]
pub struct ScriptedTurn {
    steps: Vec<ScriptStep>,
    /// When set, `begin_turn` itself fails with this error.
    begin_error: Option<ModelError>,
    parts: usize,
}

impl ScriptedTurn {
    /// An empty turn; add steps, then end it with [`finish`](Self::finish).
    pub fn new() -> Self {
        Self::default()
    }

    /// A turn that answers `text` and completes.
    pub fn text(text: &str) -> Self {
        Self::new().say(text).finish(FinishReason::Completed)
    }

    /// A turn that calls one tool.
    pub fn tool_call(id: &str, name: &str, input: Value) -> Self {
        Self::new()
            .call(id, name, input)
            .finish(FinishReason::ToolCall)
    }

    /// A turn whose request fails before streaming.
    pub fn failing(error: ModelError) -> Self {
        Self {
            begin_error: Some(error),
            ..Self::default()
        }
    }

    /// Streams `text` as one text part, in one chunk.
    pub fn say(self, text: &str) -> Self {
        self.say_chunks(&[text])
    }

    /// Streams one text part in these chunks.
    pub fn say_chunks(mut self, chunks: &[&str]) -> Self {
        let part_id = PartId::new(format!("part-{}", self.parts));
        self.parts += 1;
        self.steps
            .push(ScriptStep::Event(ModelTurnEvent::Delta(Delta::BeginPart {
                part_id: part_id.clone(),
                kind: PartKind::Text,
            })));
        for chunk in chunks {
            self.steps.push(ScriptStep::Event(ModelTurnEvent::Delta(
                Delta::AppendText {
                    part_id: part_id.clone(),
                    chunk: (*chunk).into(),
                },
            )));
        }
        self.steps.push(ScriptStep::Event(ModelTurnEvent::Delta(
            Delta::CommitPart { part_id },
        )));
        self
    }

    /// Emits a raw delta.
    pub fn delta(mut self, delta: Delta) -> Self {
        self.steps
            .push(ScriptStep::Event(ModelTurnEvent::Delta(delta)));
        self
    }

    /// Emits a tool call.
    pub fn call(mut self, id: &str, name: &str, input: Value) -> Self {
        self.steps.push(ScriptStep::Event(ModelTurnEvent::ToolCall(
            ToolCallPart::new(id, name, input),
        )));
        self
    }

    /// Emits a tool call whose input is parsed from `input` (JSON text)
    /// when it is emitted, as a real adapter parses the call it streams:
    /// unlike [`call`](Self::call), whose input every play shares, each
    /// play holds an input of its own (what a memory measurement should
    /// count). Input that is not JSON fails the stream with a decoding
    /// error.
    pub fn call_json(mut self, id: &str, name: &str, input: &str) -> Self {
        self.steps.push(ScriptStep::RawCall {
            id: id.to_owned(),
            name: name.to_owned(),
            input: input.to_owned(),
        });
        self
    }

    /// Reports usage.
    pub fn usage(mut self, usage: Usage) -> Self {
        self.steps
            .push(ScriptStep::Event(ModelTurnEvent::Usage(usage)));
        self
    }

    /// Waits before the next step.
    pub fn delay(mut self, duration: Duration) -> Self {
        self.steps.push(ScriptStep::Delay(duration));
        self
    }

    /// Fails the stream at this point.
    pub fn fail(mut self, error: ModelError) -> Self {
        self.steps.push(ScriptStep::Fail(error));
        self
    }

    /// Ends the turn with this reason.
    pub fn finish(mut self, reason: FinishReason) -> Self {
        self.steps.push(ScriptStep::Event(ModelTurnEvent::Finished(
            ModelTurnResult::new(reason),
        )));
        self
    }
}

#[derive(Default)]
struct Shared {
    script: Mutex<VecDeque<ScriptedTurn>>,
    /// When set, every session plays its own copy of this script.
    per_session: Option<Vec<ScriptedTurn>>,
    record: bool,
    requests: Mutex<Vec<TurnRequest>>,
}

/// A model that plays a script; clones share the script and the recording.
///
/// Each model call takes the next [`ScriptedTurn`] (streamed text, tool
/// calls, usage, errors, delays); [`requests`](Self::requests) shows what
/// the loop sent, so a test can assert on what the model saw.
///
/// ```
/// use agentkit_core::{FinishReason, Item};
/// use agentkit_loop::{Agent, SessionConfig};
/// use agentkit_testkit::{Approvals, ScriptedModel, ScriptedTurn, run_to_finish};
/// use serde_json::json;
///
/// # tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap().block_on(async {
/// let model = ScriptedModel::new([
///     // Streamed in two chunks, then a call of a tool the agent lacks.
///     ScriptedTurn::new()
///         .say_chunks(&["Let me ", "look."])
///         .call("call-1", "search", json!({ "query": "rust" }))
///         .finish(FinishReason::ToolCall),
///     ScriptedTurn::text("I could not search."),
/// ]);
/// let agent = Agent::builder()
///     .model(model.clone()) // clones share the script and the recording
///     .input(vec![Item::user("Find something about Rust.")])
///     .build()?;
/// let mut driver = agent.start(SessionConfig::new("test")).await?;
/// let run = run_to_finish(&mut driver, Approvals::ApproveAll).await.unwrap();
/// assert_eq!(run.result.finish_reason, FinishReason::Completed);
///
/// // Two model calls; the second saw the (failed) tool result.
/// let requests = model.requests();
/// assert_eq!(requests.len(), 2);
/// assert_eq!(requests[1].transcript.len(), 3); // user, call, result
/// assert_eq!(model.remaining(), 0);
/// # Ok::<(), agentkit_loop::LoopError>(())
/// # }).unwrap();
/// ```
#[derive(Clone)]
pub struct ScriptedModel {
    shared: Arc<Shared>,
}

impl Default for ScriptedModel {
    fn default() -> Self {
        Self {
            shared: Arc::new(Shared {
                record: true,
                ..Shared::default()
            }),
        }
    }
}

impl ScriptedModel {
    /// A model that will play these turns, in order, across all sessions.
    pub fn new(turns: impl IntoIterator<Item = ScriptedTurn>) -> Self {
        let model = Self::default();
        model.push_turns(turns);
        model
    }

    /// A model whose every session plays its own copy of these turns, for
    /// tests and benchmarks that run many sessions at once.
    pub fn per_session(turns: impl IntoIterator<Item = ScriptedTurn>) -> Self {
        Self {
            shared: Arc::new(Shared {
                per_session: Some(turns.into_iter().collect()),
                record: true,
                ..Shared::default()
            }),
        }
    }

    /// Stops recording requests (benchmarks with many sessions).
    pub fn without_recording(self) -> Self {
        let shared = Arc::try_unwrap(self.shared).unwrap_or_else(|shared| Shared {
            script: Mutex::new(
                shared
                    .script
                    .lock()
                    .unwrap_or_else(|e| e.into_inner())
                    .clone(),
            ),
            per_session: shared.per_session.clone(),
            record: false,
            requests: Mutex::new(Vec::new()),
        });
        Self {
            shared: Arc::new(Shared {
                record: false,
                ..shared
            }),
        }
    }

    /// Appends turns to the script.
    pub fn push_turns(&self, turns: impl IntoIterator<Item = ScriptedTurn>) {
        self.shared
            .script
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .extend(turns);
    }

    /// Every request received so far, in order.
    pub fn requests(&self) -> Vec<TurnRequest> {
        self.shared
            .requests
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clone()
    }

    /// How many turns are left in the shared script.
    pub fn remaining(&self) -> usize {
        self.shared
            .script
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .len()
    }
}

#[async_trait::async_trait]
impl ModelAdapter for ScriptedModel {
    type Session = ScriptedSession;

    async fn start_session(&self, _config: SessionConfig) -> Result<ScriptedSession, ModelError> {
        Ok(ScriptedSession {
            shared: self.shared.clone(),
            own: self.shared.per_session.as_ref().map(|_| 0),
        })
    }
}

/// A session of a [`ScriptedModel`].
pub struct ScriptedSession {
    shared: Arc<Shared>,
    /// For [`ScriptedModel::per_session`]: the next turn of the shared
    /// script this session plays (a copy is made when the turn begins, so
    /// an idle session holds no script of its own).
    own: Option<usize>,
}

#[async_trait::async_trait]
impl ModelSession for ScriptedSession {
    type Turn = ScriptedTurnStream;

    async fn begin_turn(&mut self, request: TurnRequest) -> Result<ScriptedTurnStream, ModelError> {
        if self.shared.record {
            self.shared
                .requests
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .push(request);
        }
        let turn = match &mut self.own {
            Some(next) => {
                let turn = self.shared.per_session.as_ref().and_then(|t| t.get(*next));
                *next += 1;
                turn.cloned()
            }
            None => self
                .shared
                .script
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .pop_front(),
        };
        let turn = turn.ok_or_else(|| {
            ModelError::new(ModelErrorKind::Other, "the script has no more turns")
        })?;
        if let Some(error) = turn.begin_error {
            return Err(error);
        }
        Ok(ScriptedTurnStream {
            steps: turn.steps.into(),
            delay: None,
        })
    }
}

/// The stream of one scripted turn.
pub struct ScriptedTurnStream {
    steps: VecDeque<ScriptStep>,
    /// The delay being waited out, if any.
    delay: Option<Pin<Box<tokio::time::Sleep>>>,
}

impl ModelTurn for ScriptedTurnStream {
    fn poll_next_event(
        &mut self,
        cx: &mut Context<'_>,
    ) -> Poll<Result<Option<ModelTurnEvent>, ModelError>> {
        loop {
            if let Some(delay) = &mut self.delay {
                std::task::ready!(delay.as_mut().poll(cx));
                self.delay = None;
            }
            return Poll::Ready(match self.steps.pop_front() {
                None => Ok(None),
                Some(ScriptStep::Event(event)) => Ok(Some(event)),
                Some(ScriptStep::Fail(error)) => Err(error),
                Some(ScriptStep::RawCall { id, name, input }) => {
                    match ToolInput::from_json(&input) {
                        Ok(input) => Ok(Some(ModelTurnEvent::ToolCall(ToolCallPart::new(
                            id, name, input,
                        )))),
                        Err(err) => Err(ModelError::new(
                            ModelErrorKind::Protocol,
                            format!("scripted call input is not JSON: {err}"),
                        )),
                    }
                }
                Some(ScriptStep::Delay(duration)) => {
                    self.delay = Some(Box::pin(tokio::time::sleep(duration)));
                    continue;
                }
            });
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use agentkit_core::TurnId;
    use agentkit_loop::TranscriptView;

    fn request() -> TurnRequest {
        TurnRequest {
            session_id: "s".into(),
            turn_id: TurnId::new("turn-0"),
            transcript: TranscriptView::default(),
            available_tools: Default::default(),
            metadata: Default::default(),
            cache: None,
            output_schema: None,
        }
    }

    async fn first_event(session: &mut ScriptedSession) -> Option<ModelTurnEvent> {
        let mut turn = session.begin_turn(request()).await.unwrap();
        turn.next_event().await.unwrap()
    }

    #[tokio::test]
    async fn shared_scripts_are_consumed_across_sessions_and_per_session_ones_are_not() {
        let shared = ScriptedModel::new([ScriptedTurn::text("a"), ScriptedTurn::text("b")]);
        let mut one = shared.start_session(SessionConfig::new("1")).await.unwrap();
        let mut two = shared.start_session(SessionConfig::new("2")).await.unwrap();
        first_event(&mut one).await;
        first_event(&mut two).await;
        assert_eq!(shared.remaining(), 0);
        assert_eq!(shared.requests().len(), 2);
        let err = one.begin_turn(request()).await.err().unwrap();
        assert!(err.message.contains("no more turns"));

        let own = ScriptedModel::per_session([ScriptedTurn::text("a")]).without_recording();
        for name in ["1", "2"] {
            let mut session = own.start_session(SessionConfig::new(name)).await.unwrap();
            assert!(first_event(&mut session).await.is_some());
        }
        assert!(own.requests().is_empty(), "recording is off");
    }

    #[tokio::test]
    async fn failures_and_delays_are_played() {
        let model = ScriptedModel::new([
            ScriptedTurn::failing(ModelError::new(ModelErrorKind::RateLimited, "429")),
            ScriptedTurn::new()
                .delay(Duration::from_millis(1))
                .fail(ModelError::new(ModelErrorKind::Protocol, "cut")),
        ]);
        let mut session = model.start_session(SessionConfig::new("s")).await.unwrap();
        assert_eq!(
            session.begin_turn(request()).await.err().unwrap().kind,
            ModelErrorKind::RateLimited
        );
        let mut turn = session.begin_turn(request()).await.unwrap();
        assert_eq!(
            turn.next_event().await.unwrap_err().kind,
            ModelErrorKind::Protocol
        );
    }

    #[tokio::test]
    async fn raw_calls_are_parsed_per_play_and_bad_json_fails_the_stream() {
        let turn = ScriptedTurn::new().call_json("c1", "echo", r#"{"text":"hi"}"#);
        let model =
            ScriptedModel::per_session([turn, ScriptedTurn::new().call_json("c2", "echo", "{")]);
        let mut inputs = Vec::new();
        for id in ["a", "b"] {
            let mut session = model.start_session(SessionConfig::new(id)).await.unwrap();
            let mut turn = session.begin_turn(request()).await.unwrap();
            match turn.next_event().await.unwrap() {
                Some(ModelTurnEvent::ToolCall(call)) => {
                    assert_eq!((call.id.as_str(), call.name.as_str()), ("c1", "echo"));
                    assert_eq!(call.input, serde_json::json!({ "text": "hi" }));
                    inputs.push(call.input);
                }
                other => panic!("expected the call, got {other:?}"),
            }
            drop(turn);
            let mut bad = session.begin_turn(request()).await.unwrap();
            assert_eq!(
                bad.next_event().await.unwrap_err().kind,
                ModelErrorKind::Protocol
            );
        }
        // Each play parsed its own input, as a real adapter does.
        assert_ne!(inputs[0].as_str().as_ptr(), inputs[1].as_str().as_ptr());
    }
}
