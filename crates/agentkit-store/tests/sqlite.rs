//! The shared suite against SQLite files in temporary directories.

mod support;

use agentkit_store::{SessionStore, SqliteStore, StoreResult};
use std::path::PathBuf;
use std::sync::Arc;
use support::Backend;

struct Sqlite {
    _dir: tempfile::TempDir,
    path: PathBuf,
}

impl Sqlite {
    fn new() -> Self {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("sessions.db");
        Self { _dir: dir, path }
    }
}

impl Backend for Sqlite {
    async fn open(&self) -> StoreResult<Arc<dyn SessionStore>> {
        Ok(Arc::new(SqliteStore::open(&self.path)?))
    }

    async fn set_schema_version(&self, version: i64) {
        let conn = rusqlite::Connection::open(&self.path).unwrap();
        conn.pragma_update(None, "user_version", version).unwrap();
    }
}

shared_suite!(Sqlite::new());

impl support::unrecorded::Refusing for Sqlite {
    async fn refuse_calls(&self) {
        rusqlite::Connection::open(&self.path)
            .unwrap()
            .execute_batch(
                "CREATE TRIGGER refuse BEFORE INSERT ON items WHEN NEW.item LIKE '%\"tool_call\"%' \
                 BEGIN SELECT RAISE(ABORT, 'disk full'); END",
            )
            .unwrap();
    }

    async fn accept(&self) {
        rusqlite::Connection::open(&self.path)
            .unwrap()
            .execute_batch("DROP TRIGGER refuse")
            .unwrap();
    }
}

/// The file refuses an answer's row: none of its calls runs unrecorded.
#[tokio::test]
async fn a_refused_answer_runs_none_of_its_calls() {
    let backend = Sqlite::new();
    let store = backend.open().await.unwrap();
    support::unrecorded::a_refused_answer_runs_none_of_its_calls(store, &backend).await;
}

/// A rewrite the rows cannot follow: the next call does not run unrecorded.
#[tokio::test]
async fn a_call_after_an_unfollowed_rewrite_does_not_run_unrecorded() {
    let backend = Sqlite::new();
    let store = backend.open().await.unwrap();
    support::unrecorded::a_call_after_an_unfollowed_rewrite_does_not_run_unrecorded(store).await;
}

/// A non-idempotent rewrite before a model call, a kill while the call
/// streams: resumed from the file, the call is made without a second run.
#[tokio::test]
async fn a_rewrite_is_not_run_again_after_a_kill() {
    use support::stamp::{Stamped, a_rewrite_is_not_run_again_after_a_kill};
    for case in [Stamped::AfterARound, Stamped::FirstOfATurn] {
        let backend = Sqlite::new();
        a_rewrite_is_not_run_again_after_a_kill(backend.open().await.unwrap(), case).await;
    }
}

/// A call runs only once the file holds its start (its answer's row after
/// the checkpoint, or its `ToolStarted` mark): read over a connection of
/// the probe's own.
#[tokio::test]
async fn a_call_starts_only_after_its_start_is_stored() {
    use support::starts::{PROBED, start_known};

    let backend = Sqlite::new();
    let store = backend.open().await.unwrap();
    let path = backend.path.clone();
    let probe = move |call_id: &str| {
        let conn = rusqlite::Connection::open(&path).unwrap();
        let column = |sql: &str| -> Vec<String> {
            let mut statement = conn.prepare(sql).unwrap();
            statement
                .query_map([PROBED], |row| row.get(0))
                .unwrap()
                .collect::<Result<_, _>>()
                .unwrap()
        };
        let items = column(
            "SELECT item FROM items WHERE session_id = ?1 AND seq >=
                (SELECT transcript_len FROM sessions WHERE id = ?1)",
        );
        let marks = column("SELECT mark FROM marks WHERE session_id = ?1");
        let snapshot: Option<String> = conn
            .query_row(
                "SELECT snapshot FROM sessions WHERE id = ?1",
                [PROBED],
                |row| row.get(0),
            )
            .unwrap();
        start_known(call_id, &items, &marks, snapshot.as_deref())
    };
    support::starts::calls_run_only_once_their_start_is_stored(store, probe).await;
}

#[tokio::test]
async fn an_in_memory_store_works_too() {
    support::suite::appends_items_as_they_happen(&InMemory(Arc::new(
        SqliteStore::open_in_memory().unwrap(),
    )))
    .await;
}

/// One in-memory database shared by every "connection".
struct InMemory(Arc<SqliteStore>);

impl Backend for InMemory {
    async fn open(&self) -> StoreResult<Arc<dyn SessionStore>> {
        Ok(self.0.clone())
    }

    async fn set_schema_version(&self, _version: i64) {
        unreachable!("not used with memory databases")
    }
}

#[tokio::test]
async fn events_are_kept_in_order_and_never_rewritten() {
    let backend = Sqlite::new();
    let store = SqliteStore::open(&backend.path).unwrap();
    support::events::events_are_kept_in_order_and_never_rewritten(&store).await;
}

/// Writes committed to the file by any connection but `watch` (SQLite's
/// `data_version` moves with each).
fn data_version(watch: &rusqlite::Connection) -> i64 {
    watch
        .pragma_query_value(None, "data_version", |row| row.get(0))
        .unwrap()
}

#[tokio::test]
async fn idle_steps_write_nothing_to_the_file() {
    use agentkit_core::Item;
    use agentkit_loop::{Agent, LoopInterrupt, LoopStep};
    use agentkit_store::{NewSession, SessionLease};
    use agentkit_testkit::{ScriptedModel, ScriptedTurn};
    use std::time::Duration;

    let backend = Sqlite::new();
    let store: Arc<dyn SessionStore> = Arc::new(SqliteStore::open(&backend.path).unwrap());
    let id = store.create(NewSession::new()).await.unwrap().id;
    // A long lease: its renewal (a write) does not come during the test.
    let lease = SessionLease::acquire_with_ttl(store.clone(), &id, Duration::from_secs(600))
        .await
        .unwrap();
    // The queued message is delivered in the turn: a second answer.
    let model = ScriptedModel::new([ScriptedTurn::text("hello"), ScriptedTurn::text("noted")]);
    let agent = lease.record(Agent::builder().model(model)).build().unwrap();
    let mut session = lease.open(&agent).await.unwrap();
    let watch = rusqlite::Connection::open(&backend.path).unwrap();
    let mut step = session.next().await.unwrap();
    let before = data_version(&watch);
    for _ in 0..20 {
        assert!(matches!(
            step,
            LoopStep::Interrupt(LoopInterrupt::AwaitingInput(_))
        ));
        session.save().await.unwrap();
        step = session.next().await.unwrap();
    }
    assert_eq!(data_version(&watch), before, "20 idle steps wrote nothing");
    // A real change is written: a queued message, then a turn.
    session.soft_interrupts().push_text("queued while idle");
    session.save().await.unwrap();
    let queued = data_version(&watch);
    assert_ne!(queued, before, "the queued message was saved");
    let LoopStep::Interrupt(LoopInterrupt::AwaitingInput(request)) = step else {
        panic!("idle")
    };
    request
        .submit(&mut session, vec![Item::user("hi")])
        .unwrap();
    assert!(matches!(
        session.next().await.unwrap(),
        LoopStep::Finished(_)
    ));
    assert_ne!(data_version(&watch), queued, "the turn was saved");
    let len = session.transcript().len();
    assert_eq!(len, 4, "hi, hello, the queued message, noted");
    session.close().await.unwrap();
    assert_eq!(store.load(&id).await.unwrap().items.len(), len);
}

/// A call saved before inputs were kept as text (a parsed `Value`, written
/// pretty and with its own key order by an older version) loads, compares
/// equal to its value and saves back as the same JSON value.
#[tokio::test]
async fn a_call_input_saved_as_a_parsed_value_still_loads() {
    use agentkit_core::{Part, ToolInput};
    use agentkit_store::NewSession;
    use serde_json::json;

    let backend = Sqlite::new();
    let store = backend.open().await.unwrap();
    let id = store.create(NewSession::new()).await.unwrap().id;
    let old = r#"{
      "id": "item-1",
      "kind": "assistant",
      "parts": [
        {
          "type": "tool_call",
          "id": "call_1",
          "name": "fs_read",
          "input": { "path": "notes é.txt", "range": [1, 20.5, null], "opts": { "b": true, "a": "x\"y" } }
        }
      ]
    }"#;
    let conn = rusqlite::Connection::open(&backend.path).unwrap();
    conn.execute(
        "INSERT INTO items (session_id, seq, item) VALUES (?1, 0, ?2)",
        rusqlite::params![id.as_str(), old],
    )
    .unwrap();

    let loaded = store.load(&id).await.unwrap();
    let [item] = loaded.items.as_slice() else {
        panic!("one item expected: {:?}", loaded.items);
    };
    let Some(Part::ToolCall(call)) = item.parts.first() else {
        panic!("a tool call expected: {item:?}");
    };
    let value = json!({ "path": "notes é.txt", "range": [1, 20.5, null], "opts": { "b": true, "a": "x\"y" } });
    assert_eq!(call.input, value);
    assert_eq!(
        call.input.as_str(),
        value.to_string(),
        "kept as compact text"
    );
    assert_eq!(
        call.input,
        ToolInput::from_json(
            r#"{"opts":{"a":"x\"y","b":true},"range":[1,20.5,null],"path":"notes é.txt"}"#
        )
        .unwrap()
    );
    let old_value: serde_json::Value = serde_json::from_str(old).unwrap();
    assert_eq!(
        serde_json::to_value(item).unwrap(),
        old_value,
        "saved back unchanged"
    );
}

/// Answers saved before the finish reason was a field of the item kept it
/// as an `agentkit.finish_reason` metadata entry (and, before that, wrote
/// it on every answer): they load with the reason in the field, and save
/// back in the new form.
#[tokio::test]
async fn a_finish_reason_saved_as_metadata_still_loads() {
    use agentkit_core::FinishReason;
    use agentkit_store::NewSession;
    use serde_json::json;

    let backend = Sqlite::new();
    let store = backend.open().await.unwrap();
    let id = store.create(NewSession::new()).await.unwrap().id;
    let rows = [
        r#"{"id":"item-1","kind":"assistant","parts":[{"type":"text","text":"The list goes"}],"metadata":{"agentkit.finish_reason":"max_tokens","agentkit.provider":"openai"}}"#,
        r#"{"id":"item-2","kind":"assistant","parts":[{"type":"text","text":"Done."}],"metadata":{"agentkit.finish_reason":"completed"}}"#,
    ];
    let conn = rusqlite::Connection::open(&backend.path).unwrap();
    for (seq, row) in rows.iter().enumerate() {
        conn.execute(
            "INSERT INTO items (session_id, seq, item) VALUES (?1, ?2, ?3)",
            rusqlite::params![id.as_str(), seq as i64, row],
        )
        .unwrap();
    }

    let loaded = store.load(&id).await.unwrap();
    let [cut, done] = loaded.items.as_slice() else {
        panic!("two items expected: {:?}", loaded.items);
    };
    assert_eq!(cut.finish_reason(), Some(FinishReason::MaxTokens));
    assert_eq!(done.finish_reason(), Some(FinishReason::Completed));
    assert_eq!(
        serde_json::to_value(cut).unwrap(),
        json!({
            "id": "item-1", "kind": "assistant",
            "parts": [{ "type": "text", "text": "The list goes" }],
            "metadata": { "agentkit.provider": "openai" },
            "finish_reason": "max_tokens"
        }),
        "saved back in the new form, the other entry kept"
    );
    assert_eq!(
        serde_json::to_value(done).unwrap(),
        json!({
            "id": "item-2", "kind": "assistant",
            "parts": [{ "type": "text", "text": "Done." }]
        }),
        "a reason the content says is not stored"
    );
}

/// Runs a session whose mutator redacts each tool result (a rewrite that
/// keeps the step's items at its end, so the rows follow it at once) while
/// `refuse` makes the database turn writes down, driven without
/// checkpoints; then the database works again and the host saves. Returns
/// the final transcript and what the store archived.
async fn redact_while_the_database_refuses(
    refuse: &str,
) -> (Vec<agentkit_core::Item>, Vec<agentkit_core::Item>) {
    use agentkit_core::Item;
    use agentkit_loop::{LoopInterrupt, LoopStep};
    use agentkit_store::{NewSession, SessionLease};
    use agentkit_testkit::{ScriptedModel, ScriptedTurn};
    use serde_json::json;

    let backend = Sqlite::new();
    let store: Arc<dyn SessionStore> = Arc::new(SqliteStore::open(&backend.path).unwrap());
    let lease = SessionLease::create(store.clone(), NewSession::new().with_id("s-refused"))
        .await
        .unwrap();
    let model = ScriptedModel::new([
        ScriptedTurn::tool_call("c1", "slow", json!({ "ms": 1 })),
        ScriptedTurn::text("done"),
    ]);
    let agent = lease
        .record(support::tools::redacting(model, store.clone()).input(vec![Item::user("go")]))
        .build()
        .unwrap();
    let mut session = lease.open(&agent).await.unwrap();
    let admin = rusqlite::Connection::open(&backend.path).unwrap();
    admin.execute_batch(refuse).unwrap();
    loop {
        match session.driver_mut().next().await.unwrap() {
            LoopStep::Interrupt(LoopInterrupt::AfterToolResult(_)) => {}
            LoopStep::Finished(_) => break,
            other => panic!("{other:?}"),
        }
    }
    admin
        .execute_batch("DROP TRIGGER IF EXISTS refuse")
        .unwrap();
    // The first save reports the refused write; the next one stores the
    // transcript whole.
    assert!(session.save().await.is_err(), "the refusal is reported");
    session.save().await.unwrap();
    let transcript = session.transcript().to_vec();
    session.close().await.unwrap();
    let id = "s-refused".into();
    assert_eq!(store.load(&id).await.unwrap().items, transcript);
    (transcript, store.archived(&id).await.unwrap())
}

/// The original result a rewrite replaced, with the number of times the
/// archive holds it.
fn originals(transcript: &[agentkit_core::Item], archived: &[agentkit_core::Item]) -> usize {
    let redacted = &transcript[2];
    assert_eq!(
        redacted.tool_results().next().unwrap().output.to_text(),
        "[redacted]"
    );
    archived
        .iter()
        .filter(|item| {
            item.id == redacted.id
                && item.tool_results().next().unwrap().output.to_text() != "[redacted]"
        })
        .count()
}

/// The database refuses the rewrite itself (its delete of the old rows):
/// the items the rewrite archived are archived by the checkpoint instead,
/// not lost.
#[tokio::test]
async fn a_refused_rewrite_loses_nothing_it_archived() {
    let (transcript, archived) = redact_while_the_database_refuses(
        "CREATE TRIGGER refuse BEFORE DELETE ON items BEGIN SELECT RAISE(ABORT, 'disk full'); END",
    )
    .await;
    assert_eq!(originals(&transcript, &archived), 1, "{archived:?}");
}

/// The rewrite is stored, and a later write is refused: the checkpoint
/// does not archive the rewrite's items a second time.
#[tokio::test]
async fn a_write_refused_after_a_rewrite_archives_once() {
    let (transcript, archived) = redact_while_the_database_refuses(
        "CREATE TRIGGER refuse BEFORE INSERT ON items WHEN NEW.seq >= 3 \
         BEGIN SELECT RAISE(ABORT, 'disk full'); END",
    )
    .await;
    assert_eq!(originals(&transcript, &archived), 1, "{archived:?}");
}
