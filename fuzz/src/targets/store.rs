//! `store`: session rows read back by agentkit-store (SQLite).
//!
//! A row may come from an older or newer version, or be damaged: a column
//! of the wrong SQL type, JSON that no longer parses, a transcript length
//! past the stored items, text that is not UTF-8. Inputs describe one
//! session's rows as JSON (`snapshot`, `transcript_len`, `usage`, `items`,
//! `marks`, `created_at`, `forked_at`; a JSON array of bytes stands for a
//! BLOB); they are written with plain SQL into a database the store made,
//! then read through the public API: `info`, `list`, `load`, and a lease
//! opening the session with an agent (checkpoint recovery and resume).
//! Properties: never a panic, only `StoreError`s; rows taken unchanged from
//! a real session (`"valid": true`) open, with the transcript they hold.

use crate::{Outcome, Target, mutated};
use agentkit_core::{Item, SessionId};
use agentkit_loop::{Agent, LoopSnapshot};
use agentkit_store::{SessionLease, SessionStore, SqliteStore};
use agentkit_testkit::{ScriptedModel, ScriptedTurn};
use proptest::prelude::*;
use proptest::strategy::BoxedStrategy;
use rusqlite::types::Value as Sql;
use serde_json::{Value, json};
use std::sync::{Arc, OnceLock};

/// The target.
pub const TARGET: Target = Target {
    name: "store",
    about: "session rows: damaged columns give StoreError, real rows open",
    check,
    generate,
};

/// Rows of real sessions, from the snapshot target's seeds.
fn valid_rows() -> &'static [Value] {
    static ROWS: OnceLock<Vec<Value>> = OnceLock::new();
    ROWS.get_or_init(|| {
        super::snapshot::seeds()
            .iter()
            .filter_map(|seed| serde_json::from_slice::<LoopSnapshot>(seed).ok())
            .map(|mut snapshot| {
                let items: Vec<Value> = snapshot
                    .transcript
                    .iter()
                    .map(|item| json!(serde_json::to_string(item).unwrap_or_default()))
                    .collect();
                let len = snapshot.transcript.len();
                snapshot.transcript.clear();
                json!({
                    "valid": true,
                    "snapshot": serde_json::to_string(&snapshot).unwrap_or_default(),
                    "transcript_len": len,
                    "usage": "{}",
                    "items": items,
                    "marks": ["{\"mark\":\"model_call_started\"}"],
                    "created_at": 1_700_000_000_000i64,
                    "forked_at": null,
                })
            })
            .collect()
    })
}

fn encoded_rows() -> &'static [&'static [u8]] {
    static ROWS: OnceLock<Vec<&'static [u8]>> = OnceLock::new();
    ROWS.get_or_init(|| {
        valid_rows()
            .iter()
            .map(|row| {
                let mut row = row.clone();
                row["valid"] = json!(false);
                &*Box::leak(
                    serde_json::to_vec_pretty(&row)
                        .unwrap_or_default()
                        .into_boxed_slice(),
                )
            })
            .collect()
    })
}

/// Values a damaged column may hold.
fn damage() -> impl Strategy<Value = Value> {
    prop_oneof![
        Just(Value::Null),
        Just(json!(-1)),
        Just(json!(i64::MAX)),
        Just(json!(i64::MIN)),
        Just(json!(1.5e300)),
        Just(json!("")),
        Just(json!("{")),
        Just(json!("[]")),
        Just(json!("{\"version\": 99}")),
        Just(json!([0xC3, 0x28, 0xFF])),
        Just(json!(3)),
    ]
}

const FIELDS: &[&str] = &[
    "snapshot",
    "transcript_len",
    "usage",
    "created_at",
    "forked_at",
];

fn generate() -> BoxedStrategy<Vec<u8>> {
    let rows = valid_rows().len();
    let damaged = (
        0..rows,
        proptest::collection::vec(
            (0..FIELDS.len() + 2, damage(), any::<prop::sample::Index>()),
            0..3,
        ),
    )
        .prop_map(|(row, edits)| {
            let mut row = valid_rows()[row].clone();
            for (field, value, index) in edits {
                row["valid"] = json!(false);
                match FIELDS.get(field) {
                    Some(name) => row[*name] = value,
                    None => {
                        let key = if field == FIELDS.len() {
                            "items"
                        } else {
                            "marks"
                        };
                        if let Some(list) = row[key].as_array_mut()
                            && !list.is_empty()
                        {
                            let at = index.index(list.len());
                            list[at] = value;
                        }
                    }
                }
            }
            serde_json::to_vec(&row).unwrap_or_default()
        });
    prop_oneof![3 => damaged, 1 => mutated(encoded_rows())].boxed()
}

fn sql(value: &Value) -> Sql {
    match value {
        Value::Null => Sql::Null,
        Value::Bool(b) => Sql::Integer(i64::from(*b)),
        Value::Number(n) => n
            .as_i64()
            .map(Sql::Integer)
            .unwrap_or_else(|| Sql::Real(n.as_f64().unwrap_or(0.0))),
        Value::String(s) => Sql::Text(s.clone()),
        Value::Array(bytes) => Sql::Blob(
            bytes
                .iter()
                .map(|b| b.as_u64().unwrap_or(0) as u8)
                .collect(),
        ),
        Value::Object(_) => Sql::Text(value.to_string()),
    }
}

fn write_rows(path: &std::path::Path, row: &Value) -> rusqlite::Result<()> {
    let conn = rusqlite::Connection::open(path)?;
    conn.execute(
        "INSERT INTO sessions (id, title, created_at, updated_at, snapshot, snapshot_version,
             transcript_len, usage, forked_from, forked_at)
         VALUES ('s1', 't', ?1, ?1, ?2, 2, ?3, ?4, NULL, ?5)",
        rusqlite::params![
            sql(&row["created_at"]),
            sql(&row["snapshot"]),
            sql(&row["transcript_len"]),
            sql(&row["usage"]),
            sql(&row["forked_at"]),
        ],
    )?;
    let empty = Vec::new();
    for (seq, item) in row["items"].as_array().unwrap_or(&empty).iter().enumerate() {
        conn.execute(
            "INSERT INTO items (session_id, seq, item) VALUES ('s1', ?1, ?2)",
            rusqlite::params![seq as i64, sql(item)],
        )?;
    }
    for mark in row["marks"].as_array().unwrap_or(&empty) {
        conn.execute(
            "INSERT INTO marks (session_id, mark) VALUES ('s1', ?1)",
            rusqlite::params![sql(mark)],
        )?;
    }
    Ok(())
}

fn check(input: &[u8]) -> Outcome {
    let Ok(row) = serde_json::from_slice::<Value>(input) else {
        return Ok(());
    };
    // Memory-backed when the system has it: a database per input on a
    // real disk spends most of its time in fsync.
    let dir = match tempfile::tempdir_in("/dev/shm") {
        Ok(dir) => dir,
        Err(_) => tempfile::tempdir().map_err(|e| e.to_string())?,
    };
    let path = dir.path().join("sessions.db");
    let store = SqliteStore::open(&path).map_err(|e| format!("open: {e}"))?;
    if write_rows(&path, &row).is_err() {
        // A constraint refused the row (a NULL in a NOT NULL column): the
        // store can never meet it.
        return Ok(());
    }
    let store: Arc<dyn SessionStore> = Arc::new(store);
    let id = SessionId::new("s1");
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_time()
        .build()
        .map_err(|e| e.to_string())?;
    runtime.block_on(async {
        let _ = store.info(&id).await;
        let _ = store.list().await;
        let loaded = store.load(&id).await;
        let agent = Agent::builder()
            .model(ScriptedModel::new([ScriptedTurn::text("Again.")]))
            .build()
            .map_err(|e| e.to_string())?;
        let opened = match SessionLease::acquire(store.clone(), &id).await {
            Ok(lease) => lease
                .open(&agent)
                .await
                .map(|session| session.driver().transcript().to_vec()),
            Err(err) => Err(err),
        };
        if row["valid"] == json!(true) {
            let items: Vec<Item> = row["items"]
                .as_array()
                .into_iter()
                .flatten()
                .filter_map(|i| serde_json::from_str(i.as_str()?).ok())
                .collect();
            let loaded = loaded.map_err(|e| format!("real rows do not load: {e}"))?;
            if loaded.items != items {
                return Err("loaded items differ from the rows".to_owned());
            }
            let transcript = opened.map_err(|e| format!("real rows do not open: {e}"))?;
            if transcript.len() < items.len() {
                return Err("the opened session lost stored items".to_owned());
            }
        }
        Ok(())
    })
}
