//! A rewrite is not run again after a kill: a mutator that is not
//! idempotent rewrites before a model call, the worker dies while that
//! call streams, and the resumed session makes the call without running
//! the mutator a second time. Two rows: the call after a round, and the
//! first call of a turn the host started with new input.

use super::tools::registry;
use agentkit_core::Item;
use agentkit_loop::{
    Agent, LoopInterrupt, LoopMutator, LoopStep, MutationContext, MutationPoint, TranscriptView,
};
use agentkit_store::{NewSession, SessionLease, SessionStore};
use agentkit_testkit::{GuardedTool, ScriptedModel, ScriptedTurn};
use serde_json::json;
use std::sync::Arc;
use std::time::Duration;

/// Before every model call but a session's first, appends " +" to the
/// first user message: each run shows.
pub struct StampBeforeCalls;

#[async_trait::async_trait]
impl LoopMutator for StampBeforeCalls {
    fn name(&self) -> &str {
        "stamp"
    }

    async fn mutate(
        &self,
        ctx: &MutationContext,
        transcript: TranscriptView,
    ) -> Result<Option<Vec<Item>>, agentkit_loop::MutateError> {
        let mut items = transcript.to_vec();
        if ctx.point != MutationPoint::BeforeModelCall || items.len() < 2 {
            return Ok(None);
        }
        let mut stamped = Item::user(format!("{} +", items[0].text_content()));
        stamped.id = items[0].id.clone();
        items[0] = stamped;
        Ok(Some(items))
    }
}

/// Where the stamped model call is.
#[derive(Clone, Copy, Debug)]
pub enum Stamped {
    /// After a tool round.
    AfterARound,
    /// First in a turn the host started with new input.
    FirstOfATurn,
}

pub async fn a_rewrite_is_not_run_again_after_a_kill(store: Arc<dyn SessionStore>, case: Stamped) {
    let id: agentkit_core::SessionId = format!("s-stamped-{case:?}").into();
    let agent = |lease: &SessionLease, model: ScriptedModel| {
        lease
            .record(
                Agent::builder()
                    .model(model)
                    .add_tool_source(registry(&GuardedTool::new("danger"), store.clone()))
                    .mutator(StampBeforeCalls)
                    .input(vec![Item::user("go")]),
            )
            .build()
            .unwrap()
    };
    let lease = SessionLease::create(store.clone(), NewSession::new().with_id(id.clone()))
        .await
        .unwrap();
    let token = lease.token().clone();
    let opening = match case {
        Stamped::AfterARound => ScriptedTurn::tool_call("c1", "slow", json!({ "ms": 1 })),
        Stamped::FirstOfATurn => ScriptedTurn::text("hi"),
    };
    let first = agent(
        &lease,
        ScriptedModel::new([
            opening,
            // Streams for ten minutes: the worker dies first.
            ScriptedTurn::new()
                .delay(Duration::from_secs(600))
                .say("never seen"),
        ]),
    );
    let mut session = lease.open(&first).await.unwrap();
    let step = session.next().await.unwrap();
    match case {
        Stamped::AfterARound => assert!(
            matches!(step, LoopStep::Interrupt(LoopInterrupt::AfterToolResult(_))),
            "{step:?}"
        ),
        Stamped::FirstOfATurn => {
            assert!(matches!(step, LoopStep::Finished(_)), "{step:?}");
            let LoopStep::Interrupt(LoopInterrupt::AwaitingInput(request)) =
                session.next().await.unwrap()
            else {
                panic!("no input asked for")
            };
            request
                .submit(&mut session, vec![Item::user("more")])
                .unwrap();
            session.save().await.unwrap();
        }
    }
    // The next step stamps, then calls the model; it dies meanwhile.
    let driver = session.driver_mut();
    tokio::select! {
        step = driver.next() => panic!("the call never ends: {step:?}"),
        () = async {
            let waited = std::time::Instant::now();
            while store.load(&id).await.unwrap().items[0].text_content() != "go +" {
                assert!(waited.elapsed() < Duration::from_secs(60), "the stamp was never stored");
                tokio::time::sleep(Duration::from_millis(10)).await;
            }
        } => {}
    }
    drop(session);
    store.release(&token).await.unwrap();

    let lease = SessionLease::acquire(store.clone(), &id).await.unwrap();
    let model = ScriptedModel::new([ScriptedTurn::text("done")]);
    let second = agent(&lease, model.clone());
    let mut resumed = lease.open(&second).await.unwrap();
    let LoopStep::Finished(turn) = resumed.next().await.unwrap() else {
        panic!("not finished")
    };
    assert_eq!(turn.items.last().unwrap().text_content(), "done");
    let transcript = resumed.transcript().to_vec();
    assert_eq!(transcript[0].text_content(), "go +", "stamped once");
    assert_eq!(
        model.requests()[0].transcript.to_vec()[0].text_content(),
        "go +",
        "the model saw the one stamp"
    );
    agentkit_core::validate_transcript(&transcript).unwrap();
    resumed.close().await.unwrap();
}
