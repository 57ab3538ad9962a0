//! Ids are kept inline when short and shared when long since the loop
//! stopped allocating its own (`item-3`, `turn-1`): a session saved before
//! that, with short and long ids, loads, resumes and saves back byte for
//! byte, and the ids it appends continue its own.

use agentkit_core::{Item, ItemKind};
use agentkit_loop::{Agent, LoopStep};
use agentkit_store::{NewSession, SessionLease, SessionStore, SqliteStore};
use agentkit_testkit::{EchoTool, ScriptedModel, ScriptedTurn};
use agentkit_tools_core::ToolRegistry;
use serde_json::json;
use std::sync::Arc;

/// Rows as an earlier version wrote them: a provider's long call id, an
/// imported item's long id, the loop's short ones.
const SAVED: [&str; 4] = [
    r#"{"id":"item-0","kind":"user","parts":[{"type":"text","text":"What is in notes.md?"}]}"#,
    r#"{"id":"imported-2026-11-27T09:58:31Z-0001","kind":"assistant","parts":[{"type":"tool_call","id":"toolu_01A09q90qw90lq917835lq9","name":"echo","input":{"text":"notes"}}]}"#,
    r#"{"id":"item-2","kind":"tool","parts":[{"type":"tool_result","call_id":"toolu_01A09q90qw90lq917835lq9","output":{"kind":"text","value":"notes"},"is_error":false}]}"#,
    r#"{"id":"item-3","kind":"assistant","parts":[{"type":"text","text":"It says notes."}]}"#,
];

#[tokio::test]
async fn a_session_saved_with_short_and_long_ids_resumes_unchanged() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("sessions.db");
    let store: Arc<dyn SessionStore> = Arc::new(SqliteStore::open(&path).unwrap());
    let id = store
        .create(NewSession::new().with_id("s-ids"))
        .await
        .unwrap()
        .id;
    let conn = rusqlite::Connection::open(&path).unwrap();
    for (seq, row) in SAVED.iter().enumerate() {
        conn.execute(
            "INSERT INTO items (session_id, seq, item) VALUES (?1, ?2, ?3)",
            rusqlite::params![id.as_str(), seq as i64, row],
        )
        .unwrap();
    }

    let loaded = store.load(&id).await.unwrap().items;
    let written: Vec<String> = loaded
        .iter()
        .map(|item| serde_json::to_string(item).unwrap())
        .collect();
    assert_eq!(written, SAVED, "each item serializes as it was saved");
    assert_eq!(
        loaded[1].tool_calls().next().unwrap().id,
        "toolu_01A09q90qw90lq917835lq9"
    );

    // Resumed: one more tool round (a call id of another provider's
    // length) and an answer.
    let lease = SessionLease::acquire(store.clone(), &id).await.unwrap();
    let model = ScriptedModel::new([
        ScriptedTurn::tool_call(
            "call_AbCdEf0123456789abcdEfgh",
            "echo",
            json!({ "text": "again" }),
        ),
        ScriptedTurn::text("Same notes."),
    ]);
    let agent = lease
        .record(
            Agent::builder()
                .model(model)
                .add_tool_source(ToolRegistry::new().with(EchoTool::new())),
        )
        .build()
        .unwrap();
    let mut session = lease.open(&agent).await.unwrap();
    session.soft_interrupts().push(Item::user("Read it again."));
    let mut steps = Vec::new();
    while steps.len() < 4 {
        let step = session.next().await.unwrap();
        let finished = matches!(step, LoopStep::Finished(_));
        steps.push(step);
        if finished {
            break;
        }
    }
    assert!(
        matches!(steps.last(), Some(LoopStep::Finished(_))),
        "a tool round and an answer: {steps:?}"
    );
    session.save().await.unwrap();
    let transcript = session.transcript().to_vec();
    session.close().await.unwrap();

    let ids: Vec<&str> = transcript
        .iter()
        .map(|item| item.id.as_ref().unwrap().as_str())
        .collect();
    assert_eq!(
        ids,
        [
            "item-0",
            "imported-2026-11-27T09:58:31Z-0001",
            "item-2",
            "item-3",
            "item-4",
            "item-5",
            "item-6",
            "item-7"
        ],
        "the appended items' ids continue the saved ones"
    );
    let result = transcript[6].tool_results().next().unwrap();
    assert_eq!(transcript[6].kind, ItemKind::Tool);
    assert_eq!(result.call_id, "call_AbCdEf0123456789abcdEfgh");

    // Stored back: the saved rows untouched, the new ones read back equal.
    let mut rows = conn
        .prepare("SELECT item FROM items WHERE session_id = ?1 ORDER BY seq")
        .unwrap();
    let rows: Vec<String> = rows
        .query_map([id.as_str()], |row| row.get(0))
        .unwrap()
        .map(Result::unwrap)
        .collect();
    assert_eq!(rows[..SAVED.len()], SAVED, "the saved rows are unchanged");
    assert_eq!(store.load(&id).await.unwrap().items, transcript);
}
