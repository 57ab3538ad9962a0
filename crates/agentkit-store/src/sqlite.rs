//! The SQLite backend: one file (or memory), the embedded default.
//!
//! Writes are synchronous on the calling thread: SQLite in WAL mode with
//! `synchronous = NORMAL` commits an item row in tens of microseconds, and a
//! committed row survives the process being killed (only a power loss can
//! take the last commits back). So what the recorder hands the append path
//! is committed before the observer returns (`sqlite_log`), and a crash
//! loses at most the items the recorder still held for the step's
//! checkpoint, appended while nothing slow ran since.
//! Several processes may share one file; SQLite serializes their writes.

use crate::recover::Mark;
use crate::sqlite_log::SqliteLogWriter;
use crate::store::{
    Checkpoint, LeaseToken, LogWriter, NewSession, RawInfo, SessionInfo, SessionStore,
    StoredSession, fork_prefix, fork_snapshot, fresh_token, now_ms, parse_json, pending_migrations,
    read_checkpoint,
};
use crate::{StoreError, StoreResult};
use agentkit_core::{Item, SessionId};
use rusqlite::{Connection, OptionalExtension, TransactionBehavior, params};
use std::path::Path;
use std::sync::{Arc, Mutex};
use std::time::Duration;

const BACKEND: &str = "sqlite";

/// Schema migrations, applied in order; the schema version is their count
/// (kept in `PRAGMA user_version`). Never edit one: append a new one.
const MIGRATIONS: &[&str] = &[
    "
CREATE TABLE sessions (
    id TEXT PRIMARY KEY,
    title TEXT,
    created_at INTEGER NOT NULL,
    updated_at INTEGER NOT NULL,
    snapshot TEXT,
    snapshot_version INTEGER,
    transcript_len INTEGER NOT NULL DEFAULT 0,
    usage TEXT NOT NULL DEFAULT '{}',
    forked_from TEXT,
    forked_at INTEGER
);
CREATE INDEX sessions_by_activity ON sessions (updated_at);
CREATE TABLE items (
    session_id TEXT NOT NULL REFERENCES sessions (id) ON DELETE CASCADE,
    seq INTEGER NOT NULL,
    item TEXT NOT NULL,
    PRIMARY KEY (session_id, seq)
) WITHOUT ROWID;
CREATE TABLE marks (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    session_id TEXT NOT NULL REFERENCES sessions (id) ON DELETE CASCADE,
    mark TEXT NOT NULL
);
CREATE INDEX marks_by_session ON marks (session_id, id);
CREATE TABLE leases (
    session_id TEXT PRIMARY KEY REFERENCES sessions (id) ON DELETE CASCADE,
    owner TEXT NOT NULL,
    expires_at INTEGER NOT NULL
);
",
    "
CREATE TABLE archived_items (
    session_id TEXT NOT NULL REFERENCES sessions (id) ON DELETE CASCADE,
    seq INTEGER NOT NULL,
    item TEXT NOT NULL,
    archived_at INTEGER NOT NULL,
    PRIMARY KEY (session_id, seq)
) WITHOUT ROWID;
",
    "
CREATE TABLE events (
    session_id TEXT NOT NULL REFERENCES sessions (id) ON DELETE CASCADE,
    seq INTEGER NOT NULL,
    run_id TEXT NOT NULL,
    event TEXT NOT NULL,
    PRIMARY KEY (session_id, seq)
) WITHOUT ROWID;
",
    "
ALTER TABLE sessions ADD COLUMN cwd TEXT;
",
    "
CREATE TABLE input_log (
    session_id TEXT NOT NULL REFERENCES sessions (id) ON DELETE CASCADE,
    seq INTEGER NOT NULL,
    line TEXT NOT NULL,
    PRIMARY KEY (session_id, seq)
) WITHOUT ROWID;
",
];

/// The newest schema version this build writes.
pub const SQLITE_SCHEMA_VERSION: i64 = MIGRATIONS.len() as i64;

pub(crate) fn db(err: rusqlite::Error) -> StoreError {
    StoreError::database(BACKEND, err)
}

/// SQLite refused a lock without waiting (`SQLITE_BUSY`).
fn is_busy(err: &StoreError) -> bool {
    matches!(err, StoreError::Database { source, .. }
        if source.downcast_ref::<rusqlite::Error>().and_then(rusqlite::Error::sqlite_error_code)
            == Some(rusqlite::ErrorCode::DatabaseBusy))
}

/// Sessions in a SQLite database.
///
/// ```
/// # fn main() -> Result<(), agentkit_store::StoreError> {
/// let dir = tempfile::tempdir().unwrap();
/// let store = agentkit_store::SqliteStore::open(dir.path().join("sessions.db"))?;
/// # drop(store);
/// # Ok(()) }
/// ```
#[derive(Clone)]
pub struct SqliteStore {
    conn: Arc<Mutex<Connection>>,
}

impl std::fmt::Debug for SqliteStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SqliteStore").finish_non_exhaustive()
    }
}

/// How long a statement waits for another connection's lock.
const BUSY_TIMEOUT: Duration = Duration::from_secs(10);

impl SqliteStore {
    /// Opens (or creates) the database at `path` and migrates it.
    /// [`StoreError::SchemaTooNew`] if a newer build wrote it.
    pub fn open(path: impl AsRef<Path>) -> StoreResult<Self> {
        let path = path.as_ref();
        // Switching to WAL upgrades a shared lock to an exclusive one; while
        // another process holds a write lock (migrating the same new file)
        // SQLite answers BUSY at once instead of calling the busy handler,
        // which would deadlock. Opening again after a pause settles it.
        let deadline = std::time::Instant::now() + BUSY_TIMEOUT;
        let mut pause = Duration::from_millis(5);
        loop {
            match Self::open_once(path) {
                Err(err) if is_busy(&err) && std::time::Instant::now() < deadline => {
                    std::thread::sleep(pause);
                    pause = (pause * 2).min(Duration::from_millis(200));
                }
                result => return result,
            }
        }
    }

    fn open_once(path: &Path) -> StoreResult<Self> {
        let conn = Connection::open(path).map_err(db)?;
        // Wait for other processes' locks from the first statement on.
        conn.busy_timeout(BUSY_TIMEOUT).map_err(db)?;
        conn.pragma_update(None, "journal_mode", "wal")
            .map_err(db)?;
        conn.pragma_update(None, "synchronous", "normal")
            .map_err(db)?;
        Self::with_connection(conn)
    }

    /// A private in-memory database (gone when the store is dropped).
    pub fn open_in_memory() -> StoreResult<Self> {
        Self::with_connection(Connection::open_in_memory().map_err(db)?)
    }

    fn with_connection(mut conn: Connection) -> StoreResult<Self> {
        conn.pragma_update(None, "foreign_keys", "on").map_err(db)?;
        conn.busy_timeout(BUSY_TIMEOUT).map_err(db)?;
        migrate(&mut conn)?;
        Ok(Self {
            conn: Arc::new(Mutex::new(conn)),
        })
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Connection> {
        self.conn.lock().unwrap_or_else(|e| e.into_inner())
    }
}

fn migrate(conn: &mut Connection) -> StoreResult<()> {
    let tx = conn
        .transaction_with_behavior(TransactionBehavior::Immediate)
        .map_err(db)?;
    let current: i64 = tx
        .pragma_query_value(None, "user_version", |row| row.get(0))
        .map_err(db)?;
    let pending = pending_migrations(current, MIGRATIONS)?;
    for (offset, migration) in pending.iter().enumerate() {
        tx.execute_batch(migration).map_err(db)?;
        tx.pragma_update(None, "user_version", current + offset as i64 + 1)
            .map_err(db)?;
    }
    tx.commit().map_err(db)
}

const INFO_COLUMNS: &str = "id, title, created_at, updated_at, usage, forked_from, forked_at, cwd,
    (SELECT COUNT(*) FROM items WHERE items.session_id = sessions.id)";

fn info_from_row(row: &rusqlite::Row<'_>) -> rusqlite::Result<RawInfo> {
    Ok(RawInfo {
        id: row.get(0)?,
        title: row.get(1)?,
        created_at: row.get(2)?,
        updated_at: row.get(3)?,
        usage: row.get(4)?,
        forked_from: row.get(5)?,
        forked_at: row.get(6)?,
        cwd: row.get(7)?,
        item_count: row.get(8)?,
    })
}

fn info(conn: &Connection, id: &SessionId) -> StoreResult<SessionInfo> {
    conn.query_row(
        &format!("SELECT {INFO_COLUMNS} FROM sessions WHERE id = ?1"),
        params![id.as_str()],
        info_from_row,
    )
    .optional()
    .map_err(db)?
    .ok_or_else(|| StoreError::NotFound(id.clone()))?
    .parse()
}

fn insert_session(
    conn: &Connection,
    new: &NewSession,
    forked: Option<(&SessionId, usize)>,
) -> StoreResult<SessionId> {
    let id = new
        .id
        .clone()
        .unwrap_or_else(|| SessionId::new(fresh_token("session")));
    let now = now_ms();
    let inserted = conn
        .execute(
            "INSERT INTO sessions (id, title, created_at, updated_at, forked_from, forked_at, cwd)
             VALUES (?1, ?2, ?3, ?3, ?4, ?5, ?6) ON CONFLICT (id) DO NOTHING",
            params![
                id.as_str(),
                new.title,
                now,
                forked.map(|(parent, _)| parent.as_str()),
                forked.map(|(_, at)| at as i64),
                new.cwd_text()
            ],
        )
        .map_err(db)?;
    if inserted == 0 {
        return Err(StoreError::AlreadyExists(id));
    }
    Ok(id)
}

pub(crate) fn insert_items(
    conn: &Connection,
    id: &SessionId,
    first: usize,
    items: &[Item],
) -> StoreResult<()> {
    let mut insert = conn
        .prepare_cached("INSERT INTO items (session_id, seq, item) VALUES (?1, ?2, ?3)")
        .map_err(db)?;
    for (offset, item) in items.iter().enumerate() {
        let json = serde_json::to_string(item)?;
        insert
            .execute(params![id.as_str(), (first + offset) as i64, json])
            .map_err(db)?;
    }
    Ok(())
}

/// Appends `items` to the session's archive.
pub(crate) fn archive(conn: &Connection, id: &SessionId, items: &[Item]) -> StoreResult<()> {
    if items.is_empty() {
        return Ok(());
    }
    let next: i64 = conn
        .query_row(
            "SELECT COALESCE(MAX(seq) + 1, 0) FROM archived_items WHERE session_id = ?1",
            params![id.as_str()],
            |row| row.get(0),
        )
        .map_err(db)?;
    let mut insert = conn
        .prepare_cached(
            "INSERT INTO archived_items (session_id, seq, item, archived_at) VALUES (?1, ?2, ?3, ?4)",
        )
        .map_err(db)?;
    let now = now_ms();
    for (offset, item) in items.iter().enumerate() {
        let json = serde_json::to_string(item)?;
        insert
            .execute(params![id.as_str(), next + offset as i64, json, now])
            .map_err(db)?;
    }
    Ok(())
}

fn load_items(conn: &Connection, id: &SessionId) -> StoreResult<Vec<Item>> {
    load_json(
        conn,
        "SELECT item FROM items WHERE session_id = ?1 ORDER BY seq",
        id,
        "item",
    )
}

/// Parses the one JSON column of every row of `sql`.
fn load_json<T: serde::de::DeserializeOwned>(
    conn: &Connection,
    sql: &str,
    id: &SessionId,
    what: &str,
) -> StoreResult<Vec<T>> {
    let mut query = conn.prepare_cached(sql).map_err(db)?;
    let rows = query
        .query_map(params![id.as_str()], |row| row.get::<_, String>(0))
        .map_err(db)?;
    let mut parsed = Vec::new();
    for row in rows {
        parsed.push(parse_json(id, what, &row.map_err(db)?)?);
    }
    Ok(parsed)
}

/// The checkpoint of `id`, its transcript taken from `items`.
fn checkpoint(
    conn: &Connection,
    id: &SessionId,
    items: &[Item],
) -> StoreResult<Option<agentkit_loop::LoopSnapshot>> {
    let (snapshot, transcript_len): (Option<String>, i64) = conn
        .query_row(
            "SELECT snapshot, transcript_len FROM sessions WHERE id = ?1",
            params![id.as_str()],
            |row| Ok((row.get(0)?, row.get(1)?)),
        )
        .map_err(db)?;
    read_checkpoint(id, snapshot, transcript_len.max(0) as usize, items)
}

/// `Ok` if `owner` holds the lease of `id`.
pub(crate) fn check_lease(conn: &Connection, id: &SessionId, owner: &str) -> StoreResult<()> {
    let holder: Option<String> = conn
        .query_row(
            "SELECT owner FROM leases WHERE session_id = ?1",
            params![id.as_str()],
            |row| row.get(0),
        )
        .optional()
        .map_err(db)?;
    if holder.as_deref() == Some(owner) {
        Ok(())
    } else {
        Err(StoreError::LeaseLost(id.clone()))
    }
}

#[async_trait::async_trait]
impl SessionStore for SqliteStore {
    async fn create(&self, new: NewSession) -> StoreResult<SessionInfo> {
        let conn = self.lock();
        let id = insert_session(&conn, &new, None)?;
        info(&conn, &id)
    }

    async fn acquire(&self, id: &SessionId, ttl: Duration) -> StoreResult<LeaseToken> {
        let mut conn = self.lock();
        let tx = conn
            .transaction_with_behavior(TransactionBehavior::Immediate)
            .map_err(db)?;
        info(&tx, id)?;
        let owner = fresh_token("lease");
        let now = now_ms();
        let taken = tx
            .execute(
                "INSERT INTO leases (session_id, owner, expires_at) VALUES (?1, ?2, ?3)
                 ON CONFLICT (session_id) DO UPDATE
                 SET owner = excluded.owner, expires_at = excluded.expires_at
                 WHERE leases.expires_at <= ?4",
                params![id.as_str(), owner, now + ttl.as_millis() as i64, now],
            )
            .map_err(db)?;
        if taken == 0 {
            let holder: String = tx
                .query_row(
                    "SELECT owner FROM leases WHERE session_id = ?1",
                    params![id.as_str()],
                    |row| row.get(0),
                )
                .map_err(db)?;
            return Err(StoreError::Busy {
                session: id.clone(),
                owner: holder,
            });
        }
        tx.commit().map_err(db)?;
        Ok(LeaseToken {
            session_id: id.clone(),
            owner,
            ttl,
        })
    }

    async fn renew(&self, lease: &LeaseToken) -> StoreResult<()> {
        let renewed = self
            .lock()
            .execute(
                "UPDATE leases SET expires_at = ?3 WHERE session_id = ?1 AND owner = ?2",
                params![
                    lease.session_id.as_str(),
                    lease.owner,
                    now_ms() + lease.ttl.as_millis() as i64
                ],
            )
            .map_err(db)?;
        if renewed == 0 {
            return Err(StoreError::LeaseLost(lease.session_id.clone()));
        }
        Ok(())
    }

    async fn release(&self, lease: &LeaseToken) -> StoreResult<()> {
        self.lock()
            .execute(
                "DELETE FROM leases WHERE session_id = ?1 AND owner = ?2",
                params![lease.session_id.as_str(), lease.owner],
            )
            .map_err(db)?;
        Ok(())
    }

    fn log_writer(&self, lease: &LeaseToken) -> Arc<dyn LogWriter> {
        Arc::new(SqliteLogWriter::new(self.conn.clone(), lease.clone()))
    }

    async fn save(&self, lease: &LeaseToken, checkpoint: Checkpoint<'_>) -> StoreResult<()> {
        let mut conn = self.lock();
        let tx = conn
            .transaction_with_behavior(TransactionBehavior::Immediate)
            .map_err(db)?;
        let id = &lease.session_id;
        check_lease(&tx, id, &lease.owner)?;
        archive(&tx, id, checkpoint.archived)?;
        if let Some((first, items)) = checkpoint.items {
            tx.execute(
                "DELETE FROM items WHERE session_id = ?1 AND seq >= ?2",
                params![id.as_str(), first as i64],
            )
            .map_err(db)?;
            insert_items(&tx, id, first, items)?;
        }
        tx.execute(
            "DELETE FROM items WHERE session_id = ?1 AND seq >= ?2",
            params![id.as_str(), checkpoint.transcript_len as i64],
        )
        .map_err(db)?;
        tx.execute(
            "UPDATE sessions SET snapshot = ?2, snapshot_version = ?3, transcript_len = ?4,
                usage = ?5, updated_at = ?6, title = COALESCE(title, ?7)
             WHERE id = ?1",
            params![
                id.as_str(),
                checkpoint.snapshot_json,
                checkpoint.snapshot_version,
                checkpoint.transcript_len as i64,
                serde_json::to_string(checkpoint.usage)?,
                now_ms(),
                checkpoint.title,
            ],
        )
        .map_err(db)?;
        tx.execute(
            "DELETE FROM marks WHERE session_id = ?1",
            params![id.as_str()],
        )
        .map_err(db)?;
        tx.commit().map_err(db)
    }

    async fn archived(&self, id: &SessionId) -> StoreResult<Vec<Item>> {
        let mut conn = self.lock();
        let tx = conn.transaction().map_err(db)?;
        info(&tx, id)?;
        load_json(
            &tx,
            "SELECT item FROM archived_items WHERE session_id = ?1 ORDER BY seq",
            id,
            "archived item",
        )
    }

    async fn load(&self, id: &SessionId) -> StoreResult<StoredSession> {
        let mut conn = self.lock();
        // One read transaction: a consistent picture while a writer works.
        let tx = conn.transaction().map_err(db)?;
        let info = info(&tx, id)?;
        let items = load_items(&tx, id)?;
        let checkpoint = checkpoint(&tx, id, &items)?;
        let marks: Vec<Mark> = load_json(
            &tx,
            "SELECT mark FROM marks WHERE session_id = ?1 ORDER BY id",
            id,
            "mark",
        )?;
        Ok(StoredSession {
            info,
            checkpoint,
            items,
            marks,
        })
    }

    async fn info(&self, id: &SessionId) -> StoreResult<SessionInfo> {
        info(&self.lock(), id)
    }

    async fn list(&self) -> StoreResult<Vec<SessionInfo>> {
        let conn = self.lock();
        let mut query = conn
            .prepare(&format!(
                "SELECT {INFO_COLUMNS} FROM sessions ORDER BY updated_at DESC, id"
            ))
            .map_err(db)?;
        let rows = query.query_map([], info_from_row).map_err(db)?;
        rows.map(|row| row.map_err(db)?.parse()).collect()
    }

    async fn fork(&self, id: &SessionId, at: usize, new: NewSession) -> StoreResult<SessionInfo> {
        let mut conn = self.lock();
        let tx = conn
            .transaction_with_behavior(TransactionBehavior::Immediate)
            .map_err(db)?;
        let parent = info(&tx, id)?;
        let items = load_items(&tx, id)?;
        let prefix = fork_prefix(id, &items, at)?;
        let checkpoint = checkpoint(&tx, id, &items)?;
        let new = NewSession {
            title: new.title.or(parent.title),
            cwd: new.cwd.or(parent.cwd),
            ..new
        };
        let child = insert_session(&tx, &new, Some((id, at)))?;
        insert_items(&tx, &child, 0, prefix)?;
        if let Some(snapshot) = fork_snapshot(checkpoint, &child, at) {
            tx.execute(
                "UPDATE sessions SET snapshot = ?2, snapshot_version = ?3, transcript_len = ?4
                 WHERE id = ?1",
                params![
                    child.as_str(),
                    serde_json::to_string(&snapshot)?,
                    snapshot.version,
                    at as i64
                ],
            )
            .map_err(db)?;
        }
        let info = info(&tx, &child)?;
        tx.commit().map_err(db)?;
        Ok(info)
    }

    async fn append_inputs(
        &self,
        lease: &LeaseToken,
        from: usize,
        lines: &[String],
    ) -> StoreResult<()> {
        let mut conn = self.lock();
        let tx = conn
            .transaction_with_behavior(TransactionBehavior::Immediate)
            .map_err(db)?;
        let id = lease.session_id.as_str();
        check_lease(&tx, &lease.session_id, &lease.owner)?;
        tx.execute(
            "DELETE FROM input_log WHERE session_id = ?1 AND seq >= ?2",
            params![id, from as i64],
        )
        .map_err(db)?;
        {
            let mut insert = tx
                .prepare_cached("INSERT INTO input_log (session_id, seq, line) VALUES (?1, ?2, ?3)")
                .map_err(db)?;
            for (n, line) in lines.iter().enumerate() {
                insert
                    .execute(params![id, (from + n) as i64, line])
                    .map_err(db)?;
            }
        }
        tx.commit().map_err(db)
    }

    async fn input_lines(&self, id: &SessionId) -> StoreResult<Vec<String>> {
        let mut conn = self.lock();
        let tx = conn.transaction().map_err(db)?;
        info(&tx, id)?;
        let mut query = tx
            .prepare("SELECT line FROM input_log WHERE session_id = ?1 ORDER BY seq")
            .map_err(db)?;
        let lines = query
            .query_map(params![id.as_str()], |row| row.get(0))
            .map_err(db)?
            .collect::<Result<_, _>>()
            .map_err(db)?;
        Ok(lines)
    }

    async fn delete(&self, id: &SessionId) -> StoreResult<()> {
        let mut conn = self.lock();
        let tx = conn
            .transaction_with_behavior(TransactionBehavior::Immediate)
            .map_err(db)?;
        info(&tx, id)?;
        let holder: Option<String> = tx
            .query_row(
                "SELECT owner FROM leases WHERE session_id = ?1 AND expires_at > ?2",
                params![id.as_str(), now_ms()],
                |row| row.get(0),
            )
            .optional()
            .map_err(db)?;
        if let Some(owner) = holder {
            return Err(StoreError::Busy {
                session: id.clone(),
                owner,
            });
        }
        tx.execute("DELETE FROM sessions WHERE id = ?1", params![id.as_str()])
            .map_err(db)?;
        tx.commit().map_err(db)
    }
}

#[async_trait::async_trait]
impl crate::EventLog for SqliteStore {
    async fn append_events(
        &self,
        id: &SessionId,
        events: &[crate::StoredEvent],
    ) -> StoreResult<()> {
        let mut conn = self.lock();
        let tx = conn.transaction().map_err(db)?;
        {
            let mut insert = tx
                .prepare_cached(
                    "INSERT INTO events (session_id, seq, run_id, event) VALUES (?1, ?2, ?3, ?4)
                     ON CONFLICT (session_id, seq) DO NOTHING",
                )
                .map_err(db)?;
            for event in events {
                insert
                    .execute(rusqlite::params![
                        id.as_str(),
                        event.seq as i64,
                        event.run_id,
                        event.event
                    ])
                    .map_err(db)?;
            }
        }
        tx.commit().map_err(db)
    }

    async fn events_after(
        &self,
        id: &SessionId,
        after: u64,
    ) -> StoreResult<Vec<crate::StoredEvent>> {
        let conn = self.lock();
        let mut select = conn
            .prepare_cached(
                "SELECT seq, run_id, event FROM events WHERE session_id = ?1 AND seq > ?2 ORDER BY seq",
            )
            .map_err(db)?;
        let rows = select
            .query_map(rusqlite::params![id.as_str(), after as i64], |row| {
                Ok(crate::StoredEvent {
                    seq: row.get::<_, i64>(0)?.max(0) as u64,
                    run_id: row.get(1)?,
                    event: row.get(2)?,
                })
            })
            .map_err(db)?;
        rows.collect::<Result<_, _>>().map_err(db)
    }
}

#[cfg(test)]
mod tests {

    /// Another process holds the write lock of a new database (it is
    /// creating it): opening waits for it instead of failing at once.
    #[test]
    fn opening_waits_for_a_writer_of_a_new_database() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("sessions.db");
        let mut writer = Connection::open(&path).unwrap();
        let tx = writer
            .transaction_with_behavior(TransactionBehavior::Immediate)
            .unwrap();
        tx.execute_batch("CREATE TABLE other (x INTEGER)").unwrap();
        let opener = std::thread::spawn({
            let path = path.clone();
            move || SqliteStore::open(path).map(|_| ())
        });
        std::thread::sleep(Duration::from_millis(300));
        tx.commit().unwrap();
        opener.join().unwrap().unwrap();
    }
    use super::*;

    #[tokio::test]
    async fn a_version_1_database_is_migrated_and_keeps_its_sessions() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("v1.db");
        {
            // What a build with the first schema only left behind.
            let conn = Connection::open(&path).unwrap();
            conn.execute_batch(MIGRATIONS[0]).unwrap();
            conn.pragma_update(None, "user_version", 1).unwrap();
            conn.execute(
                "INSERT INTO sessions (id, title, created_at, updated_at) VALUES ('old', 'from v1', 1, 1)",
                [],
            )
            .unwrap();
        }
        let store = SqliteStore::open(&path).unwrap();
        let version: i64 = store
            .lock()
            .pragma_query_value(None, "user_version", |row| row.get(0))
            .unwrap();
        assert_eq!(version, SQLITE_SCHEMA_VERSION);
        assert_eq!(SQLITE_SCHEMA_VERSION, 5);
        let listed = store.list().await.unwrap();
        assert_eq!(listed.len(), 1);
        assert_eq!(listed[0].title.as_deref(), Some("from v1"));
        assert_eq!(
            listed[0].cwd, None,
            "the added column is empty for old rows"
        );
        assert!(store.archived(&"old".into()).await.unwrap().is_empty());
    }
}
