//! A call never runs while the store cannot record that it started: after
//! a write the database refused, or after a rewrite the item rows could not
//! follow, the store holds nothing a resume would read as the call's start
//! (the answer asking for it is not in the rows) until the next checkpoint.
//! Such a call is answered as failed instead of running, the transcript
//! stays valid, and the session goes on once a checkpoint stored it whole.

use agentkit_core::{FinishReason, Item, validate_transcript};
use agentkit_loop::{
    Agent, LoopInterrupt, LoopMutator, LoopStep, ModelSession, MutationContext, MutationPoint,
    TranscriptView,
};
use agentkit_store::{NewSession, Session, SessionLease, SessionStore};
use agentkit_testkit::{AskFor, GuardedTool, ScriptedModel, ScriptedSession, ScriptedTurn};
use agentkit_tools_core::ToolRegistry;
use serde_json::json;
use std::sync::Arc;

/// A backend whose database can be made to refuse the rows of answers
/// asking for tool calls.
pub trait Refusing {
    /// From now on, an item row holding a tool call is refused.
    fn refuse_calls(&self) -> impl Future<Output = ()>;
    /// Accepts every write again.
    fn accept(&self) -> impl Future<Output = ()>;
}

/// What the error answering an unrecorded call says.
const NOT_RECORDED: &str = "could not record that call";

/// The result text of call `id` in `items`, and whether it is an error.
fn result_of(items: &[Item], id: &str) -> (String, bool) {
    let result = items
        .iter()
        .flat_map(Item::tool_results)
        .find(|result| result.call_id.as_str() == id)
        .unwrap_or_else(|| panic!("no result for {id}"));
    (result.output.to_text(), result.is_error)
}

/// Saves until the store holds the session whole again (the first save may
/// report the refused write).
async fn save_whole<S: ModelSession>(session: &mut Session<S>) {
    if session.save().await.is_err() {
        session.save().await.unwrap();
    }
}

/// Opens session `id` of `store` recording an agent with `model`, the
/// `counted` tool (allowed) and `mutator`, started with the input "go".
async fn open_counted(
    store: &Arc<dyn SessionStore>,
    id: &str,
    model: ScriptedModel,
    mutator: Option<ReplaceFirstInput>,
) -> (Session<ScriptedSession>, GuardedTool) {
    let counted = GuardedTool::new("counted");
    let lease = SessionLease::create(store.clone(), NewSession::new().with_id(id))
        .await
        .unwrap();
    let mut builder = Agent::builder()
        .model(model)
        .add_tool_source(ToolRegistry::new().with(counted.clone()))
        .permissions(AskFor::kinds("ask."))
        .input(vec![Item::user("go")]);
    if let Some(mutator) = mutator {
        builder = builder.mutator(mutator);
    }
    let agent = lease.record(builder).build().unwrap();
    (lease.open(&agent).await.unwrap(), counted)
}

/// `step` is the pause after a tool round.
fn after_round(step: LoopStep) {
    let LoopStep::Interrupt(LoopInterrupt::AfterToolResult(_)) = step else {
        panic!("expected the pause after a round: {step:?}")
    };
}

/// The database refuses the row of an answer asking for two calls: neither
/// runs (both are answered as not recorded); once it accepts writes again
/// the session finishes, and the store holds the valid transcript.
pub async fn a_refused_answer_runs_none_of_its_calls(
    store: Arc<dyn SessionStore>,
    backend: &impl Refusing,
) {
    let model = ScriptedModel::new([
        ScriptedTurn::new()
            .call("a", "counted", json!({}))
            .call("b", "counted", json!({}))
            .finish(FinishReason::ToolCall),
        ScriptedTurn::text("done"),
    ]);
    let (mut session, counted) = open_counted(&store, "s-refused-calls", model, None).await;
    backend.refuse_calls().await;
    after_round(session.driver_mut().next().await.unwrap());
    assert_eq!(
        counted.runs(),
        0,
        "a call ran while its start was unrecorded"
    );
    let transcript = session.transcript().to_vec();
    for id in ["a", "b"] {
        let (text, is_error) = result_of(&transcript, id);
        assert!(is_error && text.contains(NOT_RECORDED), "{id}: {text}");
    }
    backend.accept().await;
    save_whole(&mut session).await;
    assert!(matches!(
        session.next().await.unwrap(),
        LoopStep::Finished(_)
    ));
    let transcript = session.transcript().to_vec();
    validate_transcript(&transcript).unwrap();
    let id = session.session_id().clone();
    session.close().await.unwrap();
    assert_eq!(store.load(&id).await.unwrap().items, transcript);
}

/// Before the first model call of the session, replaces the user's message
/// with a new item (a new id): the rows cannot follow that rewrite.
struct ReplaceFirstInput;

#[async_trait::async_trait]
impl LoopMutator for ReplaceFirstInput {
    fn name(&self) -> &str {
        "replace"
    }

    async fn mutate(
        &self,
        ctx: &MutationContext,
        transcript: TranscriptView,
    ) -> Result<Option<Vec<Item>>, agentkit_loop::MutateError> {
        let items = transcript.to_vec();
        if ctx.point != MutationPoint::BeforeModelCall || items.len() != 1 {
            return Ok(None);
        }
        let mut replaced = Item::user(format!("{} (rephrased)", items[0].text_content()));
        replaced.id = Some("rephrased".into());
        Ok(Some(vec![replaced]))
    }
}

/// A rewrite the rows cannot follow, then an answer asking for a call: the
/// call does not run (the answer is not in the rows until the step's
/// checkpoint); the next round's call, after that checkpoint, runs.
pub async fn a_call_after_an_unfollowed_rewrite_does_not_run_unrecorded(
    store: Arc<dyn SessionStore>,
) {
    let model = ScriptedModel::new([
        ScriptedTurn::tool_call("first", "counted", json!({})),
        ScriptedTurn::tool_call("second", "counted", json!({})),
        ScriptedTurn::text("done"),
    ]);
    let (mut session, counted) =
        open_counted(&store, "s-rephrased", model, Some(ReplaceFirstInput)).await;
    after_round(session.next().await.unwrap());
    assert_eq!(
        counted.runs(),
        0,
        "the call ran while its start was unrecorded"
    );
    let (text, is_error) = result_of(&session.transcript().to_vec(), "first");
    assert!(is_error && text.contains(NOT_RECORDED), "{text}");
    // The checkpoint stored the rewritten transcript: calls run again.
    after_round(session.next().await.unwrap());
    assert_eq!(counted.runs(), 1);
    assert!(!result_of(&session.transcript().to_vec(), "second").1);
    assert!(matches!(
        session.next().await.unwrap(),
        LoopStep::Finished(_)
    ));
    let transcript = session.transcript().to_vec();
    validate_transcript(&transcript).unwrap();
    assert_eq!(transcript[0].text_content(), "go (rephrased)");
    let id = session.session_id().clone();
    session.close().await.unwrap();
    assert_eq!(store.load(&id).await.unwrap().items, transcript);
}
