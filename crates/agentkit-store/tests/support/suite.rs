//! The shared suite: each function runs against any [`Backend`].

use super::Backend;
use super::tools::{danger, danger_needs_approval, redacting, registry};
use agentkit_core::{FinishReason, Item, SessionId, TokenUsage, Usage, validate_transcript};
use agentkit_loop::{Agent, LoopInterrupt, LoopStep, ModelSession};
use agentkit_store::{NewSession, Session, SessionLease, SessionStore, StoreError};
use agentkit_testkit::{GuardedTool, ScriptedModel, ScriptedTurn};
use serde_json::json;
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

async fn open(backend: &impl Backend) -> Arc<dyn SessionStore> {
    backend.open().await.expect("the store opens")
}

/// An agent recording into `lease`, with the test tools.
fn test_agent(
    lease: &SessionLease,
    model: ScriptedModel,
    danger: &GuardedTool,
    peek: Arc<dyn SessionStore>,
) -> Agent<ScriptedModel> {
    lease
        .record(
            Agent::builder()
                .model(model)
                .add_tool_source(registry(danger, peek))
                .permissions(danger_needs_approval()),
        )
        .build()
        .unwrap()
}

async fn submit<S: ModelSession>(session: &mut Session<S>, text: &str) -> LoopStep {
    match session.next().await.unwrap() {
        LoopStep::Interrupt(LoopInterrupt::AwaitingInput(request)) => {
            request.submit(session, vec![Item::user(text)]).unwrap()
        }
        other => panic!("expected AwaitingInput, got {other:?}"),
    }
    session.next().await.unwrap()
}

fn texts(items: &[Item]) -> Vec<String> {
    items.iter().map(Item::text_content).collect()
}

fn usage(input: u64, output: u64) -> Usage {
    Usage::from_tokens(TokenUsage {
        input_tokens: input,
        output_tokens: output,
        ..TokenUsage::default()
    })
}

/// Items are in the database while the turn still runs: a tool reading the
/// store from another connection sees the user message and its own call
/// before it returns.
pub async fn appends_items_as_they_happen(backend: &impl Backend) {
    let store = open(backend).await;
    let lease = SessionLease::create(store.clone(), NewSession::new().with_id("s-append"))
        .await
        .unwrap();
    let model = ScriptedModel::new([
        ScriptedTurn::tool_call("c1", "peek", json!({ "session": "s-append", "expect": 2 })),
        ScriptedTurn::text("done"),
    ]);
    let agent = test_agent(&lease, model, &danger(), open(backend).await);
    let mut session = lease.open(&agent).await.unwrap();
    let step = submit(&mut session, "count the items\nplease").await;
    assert!(
        matches!(step, LoopStep::Interrupt(LoopInterrupt::AfterToolResult(_))),
        "{step:?}"
    );
    let transcript = session.transcript().to_vec();
    assert_eq!(
        transcript[2]
            .tool_results()
            .next()
            .unwrap()
            .output
            .to_text(),
        "stored: 2"
    );
    let LoopStep::Finished(turn) = session.next().await.unwrap() else {
        panic!("not finished")
    };
    assert_eq!(turn.items.last().unwrap().text_content(), "done");
    let expected = session.transcript().to_vec();
    session.close().await.unwrap();

    let other = open(backend).await;
    let stored = other.load(&"s-append".into()).await.unwrap();
    assert_eq!(stored.items, expected);
    validate_transcript(&stored.items).unwrap();
    assert_eq!(stored.info.item_count, 4);
    assert_eq!(
        stored.info.title.as_deref(),
        Some("count the items"),
        "derived from the first line"
    );
}

/// A session stopped at an approval shows the same approval again in
/// another worker, which then finishes the turn; the tool runs once.
pub async fn resume_surfaces_a_pending_approval_again(backend: &impl Backend) {
    let store = open(backend).await;
    let lease = SessionLease::create(store.clone(), NewSession::new().with_id("s-approval"))
        .await
        .unwrap();
    let first_danger = danger();
    let model = ScriptedModel::new([ScriptedTurn::tool_call(
        "c1",
        "danger",
        json!({ "what": "x" }),
    )]);
    let agent = test_agent(&lease, model, &first_danger, store.clone());
    let mut session = lease.open(&agent).await.unwrap();
    let LoopStep::Interrupt(LoopInterrupt::ApprovalRequest(first)) =
        submit(&mut session, "do it").await
    else {
        panic!("expected an approval")
    };
    // The worker goes away without answering.
    drop(session);

    let store2 = open(backend).await;
    let id = "s-approval".into();
    let lease = loop {
        // The dropped session releases its lease in the background.
        match SessionLease::acquire(store2.clone(), &id).await {
            Ok(lease) => break lease,
            Err(StoreError::Busy { .. }) => tokio::time::sleep(Duration::from_millis(20)).await,
            Err(err) => panic!("{err}"),
        }
    };
    let danger = super::tools::danger();
    let model = ScriptedModel::new([ScriptedTurn::text("it is done")]);
    let agent = test_agent(&lease, model.clone(), &danger, store2.clone());
    let mut session = lease.open(&agent).await.unwrap();
    let LoopStep::Interrupt(LoopInterrupt::ApprovalRequest(again)) = session.next().await.unwrap()
    else {
        panic!("the approval was not surfaced again")
    };
    assert_eq!(again.call.id, first.call.id);
    assert_eq!(again.request.request_kind, "danger.run");
    again.approve(&mut session).unwrap();
    let step = session.next().await.unwrap();
    assert!(
        matches!(step, LoopStep::Interrupt(LoopInterrupt::AfterToolResult(_))),
        "{step:?}"
    );
    let LoopStep::Finished(turn) = session.next().await.unwrap() else {
        panic!("not finished")
    };
    assert_eq!(turn.items.last().unwrap().text_content(), "it is done");
    assert_eq!(danger.runs(), 1);
    assert_eq!(first_danger.runs(), 0);
    let seen = model.requests()[0].transcript.to_vec();
    let result = seen.iter().flat_map(Item::tool_results).next().unwrap();
    assert_eq!(result.output.to_text(), "danger done");
    validate_transcript(&session.transcript().to_vec()).unwrap();
    session.close().await.unwrap();
}

/// Input submitted and soft-interrupt messages queued at a pause survive a
/// restart and reach the model in the next worker.
pub async fn queued_input_and_messages_survive_a_restart(backend: &impl Backend) {
    let store = open(backend).await;
    let lease = SessionLease::create(store.clone(), NewSession::new().with_id("s-queue"))
        .await
        .unwrap();
    let model = ScriptedModel::new([ScriptedTurn::tool_call("c1", "slow", json!({ "ms": 5 }))]);
    let agent = test_agent(&lease, model, &danger(), store.clone());
    let mut session = lease.open(&agent).await.unwrap();
    let LoopStep::Interrupt(LoopInterrupt::AfterToolResult(info)) =
        submit(&mut session, "go").await
    else {
        panic!("expected the after-tool pause")
    };
    info.submit(&mut session, vec![Item::user("extra input")])
        .unwrap();
    session.save().await.unwrap();
    // Only the queue changes after that save: the driver's generation
    // moves, so closing saves again.
    session
        .soft_interrupts()
        .push(Item::user("typed meanwhile"));
    session.close().await.unwrap();

    let store2 = open(backend).await;
    let stored = store2.load(&"s-queue".into()).await.unwrap();
    let checkpoint = stored.checkpoint.unwrap();
    assert_eq!(texts(&checkpoint.pending_input), ["extra input"]);
    assert_eq!(checkpoint.soft_interrupts.len(), 1);

    let lease = SessionLease::acquire(store2.clone(), &"s-queue".into())
        .await
        .unwrap();
    let model = ScriptedModel::new([ScriptedTurn::text("first"), ScriptedTurn::text("second")]);
    let agent = test_agent(&lease, model.clone(), &danger(), store2.clone());
    let mut session = lease.open(&agent).await.unwrap();
    let LoopStep::Finished(turn) = session.next().await.unwrap() else {
        panic!("not finished")
    };
    assert_eq!(turn.items.last().unwrap().text_content(), "second");
    let requests = model.requests();
    assert_eq!(requests.len(), 2);
    assert!(texts(&requests[0].transcript.to_vec()).contains(&"extra input".to_owned()));
    assert!(texts(&requests[1].transcript.to_vec()).contains(&"typed meanwhile".to_owned()));
    validate_transcript(&session.transcript().to_vec()).unwrap();
    session.close().await.unwrap();
}

/// Two workers race for one session, many times: exactly one wins each
/// race, the other gets `Busy`.
pub async fn two_workers_race_and_one_wins(backend: &impl Backend) {
    let first = open(backend).await;
    let second = open(backend).await;
    let id = first.create(NewSession::new()).await.unwrap().id;
    for _ in 0..10 {
        let (a, b) = tokio::join!(
            SessionLease::acquire(first.clone(), &id),
            SessionLease::acquire(second.clone(), &id)
        );
        let (winner, loser) = match (a, b) {
            (Ok(winner), Err(loser)) | (Err(loser), Ok(winner)) => (winner, loser),
            (a, b) => panic!("expected one winner: {a:?} / {b:?}"),
        };
        assert!(
            matches!(&loser, StoreError::Busy { session, owner } if *session == id && owner == &winner.token().owner),
            "{loser:?}"
        );
        winner.release().await.unwrap();
    }
}

/// A lease nobody renews expires and another worker takes over; the old
/// holder's writes are refused from then on. An open session's heartbeat
/// keeps its lease alive well past the ttl.
pub async fn leases_expire_unless_renewed(backend: &impl Backend) {
    let first = open(backend).await;
    let second = open(backend).await;
    let id = first.create(NewSession::new()).await.unwrap().id;
    let crashed = SessionLease::acquire_with_ttl(first.clone(), &id, Duration::from_millis(200))
        .await
        .unwrap();
    assert!(matches!(
        SessionLease::acquire(second.clone(), &id).await,
        Err(StoreError::Busy { .. })
    ));
    tokio::time::sleep(Duration::from_millis(400)).await;
    let taken = SessionLease::acquire_with_ttl(second.clone(), &id, Duration::from_millis(300))
        .await
        .unwrap();
    assert!(matches!(
        first.renew(crashed.token()).await,
        Err(StoreError::LeaseLost(_))
    ));
    // The old holder's append path is fenced off too.
    let writer = first.log_writer(crashed.token());
    writer.write(agentkit_store::LogEntry::Item {
        index: 0,
        item: Item::user("late"),
    });
    assert!(matches!(
        writer.flush().await,
        Err(StoreError::LeaseLost(_))
    ));
    assert!(first.load(&id).await.unwrap().items.is_empty());
    std::mem::forget(crashed);

    // An open session renews its 300 ms lease in the background.
    let model = ScriptedModel::new([]);
    let agent = test_agent(&taken, model, &danger(), second.clone());
    let session = taken.open(&agent).await.unwrap();
    tokio::time::sleep(Duration::from_millis(1000)).await;
    assert!(matches!(
        SessionLease::acquire(first.clone(), &id).await,
        Err(StoreError::Busy { .. })
    ));
    session.close().await.unwrap();

    // A session whose lease was taken over stops at its next save.
    let lease = SessionLease::acquire(first.clone(), &id).await.unwrap();
    let token = lease.token().clone();
    let model = ScriptedModel::new([ScriptedTurn::text("never stored")]);
    let agent = test_agent(&lease, model, &danger(), first.clone());
    let mut session = lease.open(&agent).await.unwrap();
    first.release(&token).await.unwrap(); // revoked, as by an operator
    let usurper = SessionLease::acquire(second.clone(), &id).await.unwrap();
    let LoopStep::Interrupt(LoopInterrupt::AwaitingInput(request)) = session.next().await.unwrap()
    else {
        panic!("expected AwaitingInput")
    };
    request
        .submit(&mut session, vec![Item::user("hello?")])
        .unwrap();
    assert!(matches!(
        session.next().await,
        Err(StoreError::LeaseLost(_))
    ));
    assert!(matches!(
        session.next().await,
        Err(StoreError::LeaseLost(_))
    ));
    assert!(second.load(&id).await.unwrap().items.is_empty());
    drop(session);
    usurper.release().await.unwrap();
    SessionLease::acquire(first.clone(), &id)
        .await
        .unwrap()
        .release()
        .await
        .unwrap();
}

/// Lists show title, activity, item count and usage; a fork copies a valid
/// prefix and goes its own way; delete removes a session unless leased.
pub async fn list_fork_and_delete(backend: &impl Backend) {
    let store = open(backend).await;
    let lease = SessionLease::create(
        store.clone(),
        NewSession::new()
            .with_id("s-parent")
            .with_title("Parent")
            .with_cwd("/work/project"),
    )
    .await
    .unwrap();
    let model = ScriptedModel::new([
        ScriptedTurn::new()
            .usage(usage(10, 2))
            .call("c1", "slow", json!({ "ms": 1 }))
            .finish(FinishReason::ToolCall),
        ScriptedTurn::new()
            .usage(usage(20, 3))
            .say("done")
            .finish(FinishReason::Completed),
    ]);
    let agent = test_agent(&lease, model, &danger(), store.clone());
    let mut session = lease.open(&agent).await.unwrap();
    submit(&mut session, "question one").await;
    let LoopStep::Finished(_) = session.next().await.unwrap() else {
        panic!("not finished")
    };
    session.close().await.unwrap();
    let other = store
        .create(NewSession::new().with_id("s-other"))
        .await
        .unwrap();
    assert!(matches!(
        store.create(NewSession::new().with_id("s-other")).await,
        Err(StoreError::AlreadyExists(id)) if id.as_str() == "s-other"
    ));
    assert!(matches!(
        SessionLease::acquire(store.clone(), &"s-missing".into()).await,
        Err(StoreError::NotFound(_))
    ));

    let list = store.list().await.unwrap();
    assert_eq!(list.len(), 2);
    let parent = list.iter().find(|s| s.id.as_str() == "s-parent").unwrap();
    assert_eq!(parent.title.as_deref(), Some("Parent"));
    assert_eq!(parent.cwd.as_deref(), Some(Path::new("/work/project")));
    assert_eq!(parent.item_count, 4);
    assert_eq!(parent.usage.tokens.input_tokens, 30);
    assert_eq!(parent.usage.tokens.output_tokens, 5);
    assert!(parent.last_activity >= parent.created_at);
    assert_eq!(other.item_count, 0);
    assert_eq!(other.cwd, None, "no working directory was given");

    let id = parent.id.clone();
    assert!(matches!(
        store.fork(&id, 2, NewSession::new()).await,
        Err(StoreError::ForkBreaksTranscript { at: 2, .. })
    ));
    assert!(matches!(
        store.fork(&id, 9, NewSession::new()).await,
        Err(StoreError::ForkOutOfRange { at: 9, len: 4, .. })
    ));
    let fork = store
        .fork(&id, 1, NewSession::new().with_id("s-fork"))
        .await
        .unwrap();
    assert_eq!(fork.forked_from, Some((id.clone(), 1)));
    assert_eq!(
        fork.cwd.as_deref(),
        Some(Path::new("/work/project")),
        "a fork keeps its parent's working directory"
    );
    assert_eq!(fork.title.as_deref(), Some("Parent"));
    assert_eq!(fork.item_count, 1);

    let lease = SessionLease::acquire(store.clone(), &fork.id)
        .await
        .unwrap();
    let model = ScriptedModel::new([ScriptedTurn::text("another way")]);
    let agent = test_agent(&lease, model.clone(), &danger(), store.clone());
    let mut forked = lease.open(&agent).await.unwrap();
    let LoopStep::Finished(_) = submit(&mut forked, "question two").await else {
        panic!("not finished")
    };
    assert_eq!(
        texts(&forked.transcript().to_vec()),
        ["question one", "question two", "another way"]
    );
    let item_ids: Vec<_> = forked
        .transcript()
        .to_vec()
        .iter()
        .map(|i| i.id.clone())
        .collect();
    let mut unique = item_ids.clone();
    unique.sort();
    unique.dedup();
    assert_eq!(
        unique.len(),
        item_ids.len(),
        "item ids stay unique: {item_ids:?}"
    );

    // The parent is untouched; a leased session cannot be deleted.
    assert_eq!(store.load(&id).await.unwrap().items.len(), 4);
    assert!(matches!(
        store.delete(&fork.id).await,
        Err(StoreError::Busy { .. })
    ));
    forked.close().await.unwrap();
    store.delete(&id).await.unwrap();
    assert!(matches!(
        store.load(&id).await,
        Err(StoreError::NotFound(_))
    ));
    assert!(matches!(
        store.delete(&id).await,
        Err(StoreError::NotFound(_))
    ));
    let left: Vec<_> = store
        .list()
        .await
        .unwrap()
        .into_iter()
        .map(|s| s.id)
        .collect();
    assert_eq!(left.len(), 2);
    assert!(left.contains(&fork.id));
    assert_eq!(store.load(&fork.id).await.unwrap().items.len(), 3);
}

/// A mutator's rewrite (same length, so indices cannot reveal it) is what
/// the store holds after the next yield.
pub async fn rewrites_by_mutators_are_stored(backend: &impl Backend) {
    let store = open(backend).await;
    let lease = SessionLease::create(store.clone(), NewSession::new().with_id("s-rewrite"))
        .await
        .unwrap();
    let model = ScriptedModel::new([
        ScriptedTurn::tool_call("c1", "slow", json!({ "ms": 1 })),
        ScriptedTurn::text("done"),
    ]);
    let agent = lease
        .record(redacting(model, store.clone()))
        .build()
        .unwrap();
    let mut session = lease.open(&agent).await.unwrap();
    submit(&mut session, "go").await;
    let LoopStep::Finished(_) = session.next().await.unwrap() else {
        panic!("not finished")
    };
    let expected = session.transcript().to_vec();
    assert_eq!(
        expected[2].tool_results().next().unwrap().output.to_text(),
        "[redacted]"
    );
    session.close().await.unwrap();
    let id = "s-rewrite".into();
    assert_eq!(store.load(&id).await.unwrap().items, expected);
    // The original result the rewrite replaced is archived, not lost.
    let archived = store.archived(&id).await.unwrap();
    assert_eq!(archived.len(), 1, "{archived:?}");
    assert_eq!(archived[0].id, expected[2].id);
    let original = archived[0].tool_results().next().unwrap().output.to_text();
    assert_ne!(original, "[redacted]");
    assert!(!original.is_empty());
    assert!(matches!(
        store.archived(&"nope".into()).await,
        Err(StoreError::NotFound(_))
    ));
    // Deleting the session deletes its archive too.
    store.delete(&id).await.unwrap();
    assert!(matches!(
        store.archived(&id).await,
        Err(StoreError::NotFound(_))
    ));
}

/// Opening runs the migrations once; a database from a newer build is
/// refused with a typed error.
pub async fn newer_schemas_are_refused(backend: &impl Backend) {
    let store = open(backend).await;
    store
        .create(NewSession::new().with_id("kept"))
        .await
        .unwrap();
    drop(store);
    // Opening again migrates nothing and keeps the data.
    assert_eq!(open(backend).await.list().await.unwrap().len(), 1);
    backend.set_schema_version(99).await;
    match backend.open().await {
        Err(StoreError::SchemaTooNew {
            found: 99,
            supported,
        }) => assert!(supported < 99),
        other => panic!("expected SchemaTooNew, got {:?}", other.map(|_| ())),
    }
}

/// A session records its input log into the store; any process reads it
/// back, replays it to the stored transcript, and forks a new session from
/// one of its steps.
pub async fn input_logs_are_stored_replayed_and_forked(backend: &impl Backend) {
    use agentkit_loop::replay::Input;
    let store = open(backend).await;
    let lease = SessionLease::create(store.clone(), NewSession::new().with_id("s-inputs"))
        .await
        .unwrap();
    let model = ScriptedModel::new([
        ScriptedTurn::tool_call("c1", "slow", json!({ "ms": 5 })),
        ScriptedTurn::text("first answer"),
        ScriptedTurn::text("second answer"),
    ]);
    let agent = test_agent(&lease, model, &danger(), store.clone());
    let mut session = lease.open(&agent).await.unwrap();
    session.record_inputs();
    let LoopStep::Interrupt(LoopInterrupt::AfterToolResult(_)) = submit(&mut session, "go").await
    else {
        panic!("expected the after-tool pause")
    };
    assert!(matches!(
        session.next().await.unwrap(),
        LoopStep::Finished(_)
    ));
    // Saved with the checkpoints, before the session closes.
    let midway = agentkit_store::load_input_log(&*store, &"s-inputs".into())
        .await
        .unwrap()
        .expect("recorded");
    assert!(
        midway
            .inputs
            .iter()
            .any(|i| matches!(i, Input::ToolDone { .. }))
    );
    let LoopStep::Finished(_) = submit(&mut session, "again").await else {
        panic!("expected the second turn to finish")
    };
    let transcript = session.transcript().to_vec();
    // As stored: through JSON (which leaves the observer settings out).
    let recorded = agentkit_loop::replay::InputLog::from_json_lines(
        &session.driver().input_log().unwrap().to_json_lines(),
    )
    .unwrap();
    session.close().await.unwrap();

    let store2 = open(backend).await;
    let log = agentkit_store::load_input_log(&*store2, &"s-inputs".into())
        .await
        .unwrap()
        .expect("recorded");
    assert_eq!(
        log, recorded,
        "the stored log is the driver's, line for line"
    );
    let replayed = log.replay().unwrap();
    assert_eq!(replayed.transcript, transcript);
    assert_eq!(
        store2.load(&"s-inputs".into()).await.unwrap().items,
        transcript
    );

    // Fork where the second turn was submitted: a new session answers it
    // with another model.
    let step = log
        .inputs
        .iter()
        .rposition(|i| matches!(i, Input::Submit { .. }))
        .unwrap();
    let mut snapshot = log.fork_at(step + 1).unwrap();
    snapshot.session_id = "s-inputs-fork".into();
    let agent = Agent::builder()
        .model(ScriptedModel::new([ScriptedTurn::text("another answer")]))
        .build()
        .unwrap();
    let mut fork = agent
        .resume(agentkit_loop::SessionConfig::new("s-inputs-fork"), snapshot)
        .await
        .unwrap();
    let LoopStep::Finished(turn) = fork.next().await.unwrap() else {
        panic!("the forked turn finishes")
    };
    assert_eq!(turn.items.last().unwrap().text_content(), "another answer");
    let forked = fork.transcript().to_vec();
    assert_eq!(
        forked[..forked.len() - 1],
        transcript[..transcript.len() - 1]
    );
    validate_transcript(&forked).unwrap();

    // A session that recorded nothing has no log; an unknown one is an error.
    let silent = store2.create(NewSession::new()).await.unwrap().id;
    assert_eq!(
        agentkit_store::load_input_log(&*store2, &silent)
            .await
            .unwrap(),
        None
    );
    assert!(matches!(
        store2.input_lines(&"nope".into()).await,
        Err(StoreError::NotFound(_))
    ));
}

/// Waits until the store holds `len` items of `id` (a backend may write
/// through a task), for at most a minute.
async fn wait_for_rows(store: &Arc<dyn SessionStore>, id: &SessionId, len: usize) -> Vec<Item> {
    let waited = std::time::Instant::now();
    loop {
        let items = store.load(id).await.unwrap().items;
        if items.len() >= len {
            return items;
        }
        assert!(
            waited.elapsed() < Duration::from_secs(60),
            "{} of {len} rows stored",
            items.len()
        );
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}

/// A compaction in the middle of a step, then the worker dies while the
/// next call runs, before any checkpoint: the rows followed the rewrite,
/// so the resumed session holds the rewritten transcript and the model's
/// answer after it, and the call that had started is answered as
/// interrupted instead of the model being asked again.
pub async fn a_kill_after_a_compaction_keeps_what_followed_it(backend: &impl Backend) {
    let store = open(backend).await;
    let id: SessionId = "s-compacted".into();
    let model = ScriptedModel::new([
        ScriptedTurn::tool_call("c1", "slow", json!({ "ms": 1 })),
        ScriptedTurn::tool_call("c2", "slow", json!({ "ms": 600_000 })),
        ScriptedTurn::text("c2 was interrupted"),
    ]);
    // One agent per lease: its recorder writes under that lease.
    let agent = |lease: &SessionLease| {
        lease
            .record(redacting(model.clone(), store.clone()).input(vec![Item::user("go")]))
            .build()
            .unwrap()
    };
    let lease = SessionLease::create(store.clone(), NewSession::new().with_id(id.as_str()))
        .await
        .unwrap();
    let token = lease.token().clone();
    let first = agent(&lease);
    let mut session = lease.open(&first).await.unwrap();
    // Driven without checkpoints: what survives is what the recorder wrote.
    let driver = session.driver_mut();
    let stored = loop {
        tokio::select! {
            step = driver.next() => match step.unwrap() {
                LoopStep::Interrupt(LoopInterrupt::AfterToolResult(_)) => {}
                other => panic!("{other:?}"),
            },
            // user, c1's call and (redacted) result, c2's call
            items = wait_for_rows(&store, &id, 4) => break items,
        }
    };
    let result = |item: &Item| item.tool_results().next().unwrap().clone();
    assert_eq!(result(&stored[2]).output.to_text(), "[redacted]");
    assert_eq!(stored[3].tool_calls().next().unwrap().id.as_str(), "c2");
    // Killed while c2 runs: no checkpoint; the lease goes (as it would
    // expire).
    drop(session);
    store.release(&token).await.unwrap();
    let lease = SessionLease::acquire(store.clone(), &id).await.unwrap();
    let second = agent(&lease);
    let mut resumed = lease.open(&second).await.unwrap();
    loop {
        match resumed.next().await.unwrap() {
            LoopStep::Interrupt(LoopInterrupt::AfterToolResult(_)) => {}
            LoopStep::Finished(_) => break,
            other => panic!("{other:?}"),
        }
    }
    let transcript = resumed.transcript().to_vec();
    validate_transcript(&transcript).unwrap();
    assert_eq!(transcript.len(), 6, "{:?}", texts(&transcript));
    assert_eq!(transcript[..4], stored[..4]);
    let answer = result(&transcript[4]);
    assert_eq!(answer.call_id.as_str(), "c2");
    assert!(answer.is_error, "answered as interrupted: {answer:?}");
    assert_eq!(transcript[5].text_content(), "c2 was interrupted");
    assert_eq!(
        model.requests().len(),
        3,
        "the model was not asked for c2 again"
    );
    // c1's original result was archived with the rewrite, once.
    let archived = store.archived(&id).await.unwrap();
    let originals = archived
        .iter()
        .filter(|item| item.id == stored[2].id)
        .count();
    assert_eq!(originals, 1, "{archived:?}");
    resumed.close().await.unwrap();
}
