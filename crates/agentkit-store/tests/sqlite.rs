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
