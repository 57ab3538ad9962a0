//! The PostgreSQL backend: many workers, on many machines, one database.
//!
//! Leases are rows whose expiry uses the server's clock, so workers with
//! skewed clocks still agree. Every write checks the lease token in the same
//! statement or transaction. Items are handed to a writer task over a
//! channel, so the loop never waits for the network inside an observer; the
//! task writes them in order, and [`crate::Session`] waits for it before
//! every checkpoint. A crash loses only the items still in flight (those
//! appended in the last few milliseconds) or held for the step's checkpoint,
//! whose one statement writes them with it.

use crate::pg_log::{PgLogWriter, write_log};
use crate::recover::Mark;
use crate::store::{
    Checkpoint, LeaseToken, LogWriter, NewSession, RawInfo, SessionInfo, SessionStore,
    StoredSession, fork_prefix, fork_snapshot, fresh_token, now_ms, parse_json, pending_migrations,
    read_checkpoint,
};
use crate::{StoreError, StoreResult};
use agentkit_core::{Item, SessionId};
use deadpool_postgres::{Object, Pool};
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::mpsc;
use tokio_postgres::{Client, GenericClient, Row};

const BACKEND: &str = "postgres";

/// Schema migrations, applied in order; the version is their count, kept in
/// `agentkit_store_schema`. Never edit one: append a new one.
const MIGRATIONS: &[&str] = &[
    "
CREATE TABLE agentkit_sessions (
    id TEXT PRIMARY KEY,
    title TEXT,
    created_at BIGINT NOT NULL,
    updated_at BIGINT NOT NULL,
    snapshot TEXT,
    snapshot_version BIGINT,
    transcript_len BIGINT NOT NULL DEFAULT 0,
    usage TEXT NOT NULL DEFAULT '{}',
    forked_from TEXT,
    forked_at BIGINT
);
CREATE INDEX agentkit_sessions_by_activity ON agentkit_sessions (updated_at);
CREATE TABLE agentkit_items (
    session_id TEXT NOT NULL REFERENCES agentkit_sessions (id) ON DELETE CASCADE,
    seq BIGINT NOT NULL,
    item TEXT NOT NULL,
    PRIMARY KEY (session_id, seq)
);
CREATE TABLE agentkit_marks (
    id BIGSERIAL PRIMARY KEY,
    session_id TEXT NOT NULL REFERENCES agentkit_sessions (id) ON DELETE CASCADE,
    mark TEXT NOT NULL
);
CREATE INDEX agentkit_marks_by_session ON agentkit_marks (session_id, id);
CREATE TABLE agentkit_leases (
    session_id TEXT PRIMARY KEY REFERENCES agentkit_sessions (id) ON DELETE CASCADE,
    owner TEXT NOT NULL,
    expires_at TIMESTAMPTZ NOT NULL
);
",
    "
CREATE TABLE agentkit_archived_items (
    session_id TEXT NOT NULL REFERENCES agentkit_sessions (id) ON DELETE CASCADE,
    seq BIGINT NOT NULL,
    item TEXT NOT NULL,
    archived_at BIGINT NOT NULL,
    PRIMARY KEY (session_id, seq)
);
",
    "
CREATE TABLE agentkit_events (
    session_id TEXT NOT NULL REFERENCES agentkit_sessions (id) ON DELETE CASCADE,
    seq BIGINT NOT NULL,
    run_id TEXT NOT NULL,
    event TEXT NOT NULL,
    PRIMARY KEY (session_id, seq)
);
",
    "
ALTER TABLE agentkit_sessions ADD COLUMN cwd TEXT;
",
    "
CREATE TABLE agentkit_input_log (
    session_id TEXT NOT NULL REFERENCES agentkit_sessions (id) ON DELETE CASCADE,
    seq BIGINT NOT NULL,
    line TEXT NOT NULL,
    PRIMARY KEY (session_id, seq)
);
",
];

/// The newest schema version this build writes.
pub const PG_SCHEMA_VERSION: i64 = MIGRATIONS.len() as i64;

/// Serializes migrations of workers that open the database together.
const MIGRATION_LOCK: i64 = 0x6167_656e_746b_6974;

pub(crate) fn db(err: tokio_postgres::Error) -> StoreError {
    StoreError::database(BACKEND, err)
}

/// Sessions in a PostgreSQL database.
///
/// `PgStore::connect("host=/run/postgresql user=agent dbname=agents")`
/// takes a libpq-style connection string (key=value or a `postgresql://`
/// URL) and connects without TLS: a Unix socket, loopback, or a private
/// network. Managed services require TLS: [`PgStore::builder`] with
/// [`PgStoreBuilder::tls_roots_pem`](crate::PgStoreBuilder::tls_roots_pem).
/// Sessions share a pool of connections (see
/// [`PgStoreBuilder::max_connections`](crate::PgStoreBuilder::max_connections)).
#[derive(Clone)]
pub struct PgStore {
    pool: Pool,
    /// What the leases this store takes say about their holder.
    holder: Option<String>,
}

impl std::fmt::Debug for PgStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PgStore").finish_non_exhaustive()
    }
}

impl PgStore {
    /// Connects without TLS (a Unix socket, a private network) and
    /// migrates. [`StoreError::SchemaTooNew`] if a newer build wrote the
    /// database. [`PgStore::builder`] sets TLS and the pool size.
    pub async fn connect(conninfo: &str) -> StoreResult<Self> {
        Self::builder(conninfo).connect().await
    }

    /// A builder: TLS, pool size.
    pub fn builder(conninfo: &str) -> crate::PgStoreBuilder {
        crate::PgStoreBuilder::new(conninfo)
    }

    /// A store over a pool of connections; migrates the database first.
    pub(crate) async fn from_pool(pool: Pool, holder: Option<String>) -> StoreResult<Self> {
        let mut object = get(&pool).await?;
        let client: &mut Client = &mut object;
        migrate(client).await?;
        drop(object);
        Ok(Self { pool, holder })
    }

    async fn conn(&self) -> StoreResult<Object> {
        get(&self.pool).await
    }
}

/// A connection from the pool (opened when none is idle).
pub(crate) async fn get(pool: &Pool) -> StoreResult<Object> {
    pool.get()
        .await
        .map_err(|err| StoreError::database(BACKEND, err))
}

async fn migrate(client: &mut Client) -> StoreResult<()> {
    let tx = client.transaction().await.map_err(db)?;
    tx.execute("SELECT pg_advisory_xact_lock($1)", &[&MIGRATION_LOCK])
        .await
        .map_err(db)?;
    tx.batch_execute("CREATE TABLE IF NOT EXISTS agentkit_store_schema (version BIGINT NOT NULL)")
        .await
        .map_err(db)?;
    let current: i64 = tx
        .query_opt("SELECT version FROM agentkit_store_schema", &[])
        .await
        .map_err(db)?
        .map_or(0, |row| row.get(0));
    let pending = pending_migrations(current, MIGRATIONS)?;
    for migration in pending {
        tx.batch_execute(migration).await.map_err(db)?;
    }
    if !pending.is_empty() {
        tx.execute("DELETE FROM agentkit_store_schema", &[])
            .await
            .map_err(db)?;
        tx.execute(
            "INSERT INTO agentkit_store_schema (version) VALUES ($1)",
            &[&PG_SCHEMA_VERSION],
        )
        .await
        .map_err(db)?;
    }
    tx.commit().await.map_err(db)
}

const INFO_COLUMNS: &str = "id, title, created_at, updated_at, usage, forked_from, forked_at, cwd,
    (SELECT COUNT(*) FROM agentkit_items WHERE agentkit_items.session_id = agentkit_sessions.id)";

fn info_from_row(row: &Row) -> RawInfo {
    RawInfo {
        id: row.get(0),
        title: row.get(1),
        created_at: row.get(2),
        updated_at: row.get(3),
        usage: row.get(4),
        forked_from: row.get(5),
        forked_at: row.get(6),
        cwd: row.get(7),
        item_count: row.get(8),
    }
}

async fn info(client: &impl GenericClient, id: &SessionId) -> StoreResult<SessionInfo> {
    client
        .query_opt(
            &format!("SELECT {INFO_COLUMNS} FROM agentkit_sessions WHERE id = $1"),
            &[&id.as_str()],
        )
        .await
        .map_err(db)?
        .map(|row| info_from_row(&row))
        .ok_or_else(|| StoreError::NotFound(id.clone()))?
        .parse()
}

async fn insert_session(
    client: &impl GenericClient,
    new: &NewSession,
    forked: Option<(&SessionId, usize)>,
) -> StoreResult<SessionId> {
    let id = new
        .id
        .clone()
        .unwrap_or_else(|| SessionId::new(fresh_token("session")));
    let inserted = client
        .execute(
            "INSERT INTO agentkit_sessions (id, title, created_at, updated_at, forked_from, forked_at, cwd)
             VALUES ($1, $2, $3, $3, $4, $5, $6) ON CONFLICT (id) DO NOTHING",
            &[
                &id.as_str(),
                &new.title,
                &now_ms(),
                &forked.map(|(parent, _)| parent.as_str()),
                &forked.map(|(_, at)| at as i64),
                &new.cwd_text(),
            ],
        )
        .await
        .map_err(db)?;
    if inserted == 0 {
        return Err(StoreError::AlreadyExists(id));
    }
    Ok(id)
}

pub(crate) async fn insert_items(
    client: &impl GenericClient,
    id: &SessionId,
    first: usize,
    items: &[Item],
) -> StoreResult<()> {
    if items.is_empty() {
        return Ok(());
    }
    // One statement for the whole batch: the rows travel as two arrays.
    let seqs: Vec<i64> = (first..first + items.len()).map(|i| i as i64).collect();
    let json: Vec<String> = items
        .iter()
        .map(serde_json::to_string)
        .collect::<Result<_, _>>()?;
    client
        .execute(
            "INSERT INTO agentkit_items (session_id, seq, item)
             SELECT $1, seq, item FROM UNNEST($2::BIGINT[], $3::TEXT[]) AS rows (seq, item)",
            &[&id.as_str(), &seqs, &json],
        )
        .await
        .map_err(db)?;
    Ok(())
}

/// Locks the session's lease row for the rest of `tx` and checks that
/// `lease` still holds it: every write that replaces rows starts here, so
/// a worker whose lease expired cannot overwrite its successor's.
pub(crate) async fn hold_lease(tx: &impl GenericClient, lease: &LeaseToken) -> StoreResult<()> {
    let holder: Option<String> = tx
        .query_opt(
            "SELECT owner FROM agentkit_leases WHERE session_id = $1 FOR UPDATE",
            &[&lease.session_id.as_str()],
        )
        .await
        .map_err(db)?
        .map(|row| row.get(0));
    if holder.as_deref() != Some(lease.owner.as_str()) {
        return Err(StoreError::LeaseLost(lease.session_id.clone()));
    }
    Ok(())
}

/// Appends `items` to the session's archive (one statement, like
/// [`insert_items`]).
pub(crate) async fn archive(
    client: &impl GenericClient,
    id: &SessionId,
    items: &[Item],
) -> StoreResult<()> {
    if items.is_empty() {
        return Ok(());
    }
    let json: Vec<String> = items
        .iter()
        .map(serde_json::to_string)
        .collect::<Result<_, _>>()?;
    client
        .execute(
            "INSERT INTO agentkit_archived_items (session_id, seq, item, archived_at)
             SELECT $1, base.next + rows.n - 1, rows.item, $3
             FROM UNNEST($2::TEXT[]) WITH ORDINALITY AS rows (item, n),
                  (SELECT COALESCE(MAX(seq) + 1, 0) AS next
                   FROM agentkit_archived_items WHERE session_id = $1) AS base",
            &[&id.as_str(), &json, &now_ms()],
        )
        .await
        .map_err(db)?;
    Ok(())
}

async fn load_items(client: &impl GenericClient, id: &SessionId) -> StoreResult<Vec<Item>> {
    load_json(
        client,
        "SELECT item FROM agentkit_items WHERE session_id = $1 ORDER BY seq",
        id,
        "item",
    )
    .await
}

/// Parses the one JSON column of every row of `sql` (whose only parameter
/// is the session id).
async fn load_json<T: serde::de::DeserializeOwned>(
    client: &impl GenericClient,
    sql: &str,
    id: &SessionId,
    what: &str,
) -> StoreResult<Vec<T>> {
    let rows = client.query(sql, &[&id.as_str()]).await.map_err(db)?;
    rows.iter()
        .map(|row| parse_json(id, what, row.get::<_, &str>(0)))
        .collect()
}

async fn checkpoint_columns(
    client: &impl GenericClient,
    id: &SessionId,
) -> StoreResult<(Option<String>, usize)> {
    let row = client
        .query_one(
            "SELECT snapshot, transcript_len FROM agentkit_sessions WHERE id = $1",
            &[&id.as_str()],
        )
        .await
        .map_err(db)?;
    Ok((row.get(0), row.get::<_, i64>(1).max(0) as usize))
}

#[async_trait::async_trait]
impl SessionStore for PgStore {
    async fn create(&self, new: NewSession) -> StoreResult<SessionInfo> {
        let mut object = self.conn().await?;
        let client: &mut Client = &mut object;
        let id = insert_session(&*client, &new, None).await?;
        info(&*client, &id).await
    }

    async fn acquire(&self, id: &SessionId, ttl: Duration) -> StoreResult<LeaseToken> {
        let mut object = self.conn().await?;
        let client: &mut Client = &mut object;
        info(&*client, id).await?;
        let owner = match &self.holder {
            Some(holder) => format!("{holder} {}", fresh_token("lease")),
            None => fresh_token("lease"),
        };
        let taken = client
            .execute(
                "INSERT INTO agentkit_leases (session_id, owner, expires_at)
                 VALUES ($1, $2, clock_timestamp() + $3::DOUBLE PRECISION * INTERVAL '1 millisecond')
                 ON CONFLICT (session_id) DO UPDATE
                 SET owner = excluded.owner, expires_at = excluded.expires_at
                 WHERE agentkit_leases.expires_at <= clock_timestamp()",
                &[&id.as_str(), &owner, &(ttl.as_millis() as f64)],
            )
            .await
            .map_err(db)?;
        if taken == 0 {
            let holder = client
                .query_opt(
                    "SELECT owner FROM agentkit_leases WHERE session_id = $1",
                    &[&id.as_str()],
                )
                .await
                .map_err(db)?
                .map(|row| row.get(0))
                .unwrap_or_default();
            return Err(StoreError::Busy {
                session: id.clone(),
                owner: holder,
            });
        }
        Ok(LeaseToken {
            session_id: id.clone(),
            owner,
            ttl,
        })
    }

    async fn renew(&self, lease: &LeaseToken) -> StoreResult<()> {
        let client = self.conn().await?;
        let renew = client.prepare_cached(RENEW).await.map_err(db)?;
        let renewed = client
            .execute(
                &renew,
                &[
                    &lease.session_id.as_str(),
                    &lease.owner,
                    &(lease.ttl.as_millis() as f64),
                ],
            )
            .await
            .map_err(db)?;
        if renewed == 0 {
            return Err(StoreError::LeaseLost(lease.session_id.clone()));
        }
        Ok(())
    }

    async fn release(&self, lease: &LeaseToken) -> StoreResult<()> {
        self.conn()
            .await?
            .execute(
                "DELETE FROM agentkit_leases WHERE session_id = $1 AND owner = $2",
                &[&lease.session_id.as_str(), &lease.owner],
            )
            .await
            .map_err(db)?;
        Ok(())
    }

    fn log_writer(&self, lease: &LeaseToken) -> Arc<dyn LogWriter> {
        let (sender, receiver) = mpsc::unbounded_channel();
        tokio::spawn(write_log(self.pool.clone(), lease.clone(), receiver));
        Arc::new(PgLogWriter { sender })
    }

    async fn save(&self, lease: &LeaseToken, checkpoint: Checkpoint<'_>) -> StoreResult<()> {
        if checkpoint.archived.is_empty() {
            return save_checkpoint_only(&self.pool, lease, &checkpoint).await;
        }
        let mut object = self.conn().await?;
        let client: &mut Client = &mut object;
        let tx = client.transaction().await.map_err(db)?;
        let id = &lease.session_id;
        hold_lease(&tx, lease).await?;
        archive(&tx, id, checkpoint.archived).await?;
        let keep = match checkpoint.items {
            Some((first, _)) => first.min(checkpoint.transcript_len),
            None => checkpoint.transcript_len,
        };
        tx.execute(
            "DELETE FROM agentkit_items WHERE session_id = $1 AND seq >= $2",
            &[&id.as_str(), &(keep as i64)],
        )
        .await
        .map_err(db)?;
        if let Some((first, items)) = checkpoint.items {
            insert_items(&tx, id, first, items).await?;
        }
        tx.execute(
            "UPDATE agentkit_sessions SET snapshot = $2, snapshot_version = $3, transcript_len = $4,
                usage = $5, updated_at = $6, title = COALESCE(title, $7)
             WHERE id = $1",
            &[
                &id.as_str(),
                &checkpoint.snapshot_json,
                &i64::from(checkpoint.snapshot_version),
                &(checkpoint.transcript_len as i64),
                &serde_json::to_string(checkpoint.usage)?,
                &now_ms(),
                &checkpoint.title,
            ],
        )
        .await
        .map_err(db)?;
        tx.execute(
            "DELETE FROM agentkit_marks WHERE session_id = $1",
            &[&id.as_str()],
        )
        .await
        .map_err(db)?;
        tx.commit().await.map_err(db)
    }

    async fn archived(&self, id: &SessionId) -> StoreResult<Vec<Item>> {
        let mut object = self.conn().await?;
        let client: &mut Client = &mut object;
        info(&*client, id).await?;
        load_json(
            &*client,
            "SELECT item FROM agentkit_archived_items WHERE session_id = $1 ORDER BY seq",
            id,
            "archived item",
        )
        .await
    }

    async fn append_inputs(
        &self,
        lease: &LeaseToken,
        from: usize,
        lines: &[String],
    ) -> StoreResult<()> {
        let mut object = self.conn().await?;
        let client: &mut Client = &mut object;
        let tx = client.transaction().await.map_err(db)?;
        let id = lease.session_id.as_str();
        hold_lease(&tx, lease).await?;
        tx.execute(
            "DELETE FROM agentkit_input_log WHERE session_id = $1 AND seq >= $2",
            &[&id, &(from as i64)],
        )
        .await
        .map_err(db)?;
        // One statement for every line.
        let seqs: Vec<i64> = (from..from + lines.len()).map(|n| n as i64).collect();
        tx.execute(
            "INSERT INTO agentkit_input_log (session_id, seq, line)
             SELECT $1, * FROM UNNEST($2::BIGINT[], $3::TEXT[])",
            &[&id, &seqs, &lines],
        )
        .await
        .map_err(db)?;
        tx.commit().await.map_err(db)
    }

    async fn input_lines(&self, id: &SessionId) -> StoreResult<Vec<String>> {
        let object = self.conn().await?;
        let client: &Client = &object;
        info(client, id).await?;
        let rows = client
            .query(
                "SELECT line FROM agentkit_input_log WHERE session_id = $1 ORDER BY seq",
                &[&id.as_str()],
            )
            .await
            .map_err(db)?;
        Ok(rows.iter().map(|row| row.get(0)).collect())
    }

    async fn load(&self, id: &SessionId) -> StoreResult<StoredSession> {
        let mut object = self.conn().await?;
        let client: &mut Client = &mut object;
        let tx = client
            .build_transaction()
            .isolation_level(tokio_postgres::IsolationLevel::RepeatableRead)
            .read_only(true)
            .start()
            .await
            .map_err(db)?;
        let info = info(&tx, id).await?;
        let (snapshot, transcript_len) = checkpoint_columns(&tx, id).await?;
        let items = load_items(&tx, id).await?;
        let checkpoint = read_checkpoint(id, snapshot, transcript_len, &items)?;
        let marks: Vec<Mark> = load_json(
            &tx,
            "SELECT mark FROM agentkit_marks WHERE session_id = $1 ORDER BY id",
            id,
            "mark",
        )
        .await?;
        tx.commit().await.map_err(db)?;
        Ok(StoredSession {
            info,
            checkpoint,
            items,
            marks,
        })
    }

    async fn info(&self, id: &SessionId) -> StoreResult<SessionInfo> {
        info(&**self.conn().await?, id).await
    }

    async fn list(&self) -> StoreResult<Vec<SessionInfo>> {
        let mut object = self.conn().await?;
        let client: &mut Client = &mut object;
        let rows = client
            .query(
                &format!(
                    "SELECT {INFO_COLUMNS} FROM agentkit_sessions ORDER BY updated_at DESC, id"
                ),
                &[],
            )
            .await
            .map_err(db)?;
        rows.iter().map(|row| info_from_row(row).parse()).collect()
    }

    async fn fork(&self, id: &SessionId, at: usize, new: NewSession) -> StoreResult<SessionInfo> {
        let mut object = self.conn().await?;
        let client: &mut Client = &mut object;
        let tx = client.transaction().await.map_err(db)?;
        let parent = info(&tx, id).await?;
        let items = load_items(&tx, id).await?;
        let prefix = fork_prefix(id, &items, at)?;
        let (snapshot, transcript_len) = checkpoint_columns(&tx, id).await?;
        let checkpoint = read_checkpoint(id, snapshot, transcript_len, &items)?;
        let new = NewSession {
            title: new.title.or(parent.title),
            cwd: new.cwd.or(parent.cwd),
            ..new
        };
        let child = insert_session(&tx, &new, Some((id, at))).await?;
        insert_items(&tx, &child, 0, prefix).await?;
        if let Some(snapshot) = fork_snapshot(checkpoint, &child, at) {
            tx.execute(
                "UPDATE agentkit_sessions SET snapshot = $2, snapshot_version = $3, transcript_len = $4
                 WHERE id = $1",
                &[
                    &child.as_str(),
                    &serde_json::to_string(&snapshot)?,
                    &i64::from(snapshot.version),
                    &(at as i64),
                ],
            )
            .await
            .map_err(db)?;
        }
        let info = info(&tx, &child).await?;
        tx.commit().await.map_err(db)?;
        Ok(info)
    }

    async fn delete(&self, id: &SessionId) -> StoreResult<()> {
        let mut object = self.conn().await?;
        let client: &mut Client = &mut object;
        let tx = client.transaction().await.map_err(db)?;
        info(&tx, id).await?;
        let holder: Option<String> = tx
            .query_opt(
                "SELECT owner FROM agentkit_leases
                 WHERE session_id = $1 AND expires_at > clock_timestamp() FOR UPDATE",
                &[&id.as_str()],
            )
            .await
            .map_err(db)?
            .map(|row| row.get(0));
        if let Some(owner) = holder {
            return Err(StoreError::Busy {
                session: id.clone(),
                owner,
            });
        }
        tx.execute(
            "DELETE FROM agentkit_sessions WHERE id = $1",
            &[&id.as_str()],
        )
        .await
        .map_err(db)?;
        tx.commit().await.map_err(db)
    }
}

/// Extends a lease: $1 session, $2 owner, $3 milliseconds.
const RENEW: &str = "UPDATE agentkit_leases
    SET expires_at = clock_timestamp() + $3::DOUBLE PRECISION * INTERVAL '1 millisecond'
    WHERE session_id = $1 AND owner = $2";

/// The common save, one statement (one round trip, one transaction): it
/// checks the lease, writes the items the rows do not hold yet (the step's
/// last ones, held back for it: $9 indexes, $10 JSON, all below $3), trims
/// the rows past the transcript, clears the journal and stores the
/// checkpoint. The parts touch disjoint rows.
const SAVE_CHECKPOINT: &str = "WITH lease AS (
        SELECT 1 FROM agentkit_leases WHERE session_id = $1 AND owner = $2 FOR UPDATE
    ), items AS (
        INSERT INTO agentkit_items (session_id, seq, item)
        SELECT $1, seq, item FROM UNNEST($9::BIGINT[], $10::TEXT[]) AS rows (seq, item)
        WHERE EXISTS (SELECT 1 FROM lease)
        ON CONFLICT (session_id, seq) DO UPDATE SET item = excluded.item
    ), trimmed AS (
        DELETE FROM agentkit_items
        WHERE session_id = $1 AND seq >= $3 AND EXISTS (SELECT 1 FROM lease)
    ), cleared AS (
        DELETE FROM agentkit_marks WHERE session_id = $1 AND EXISTS (SELECT 1 FROM lease)
    )
    UPDATE agentkit_sessions SET snapshot = $4, snapshot_version = $5,
        transcript_len = $3, usage = $6, updated_at = $7, title = COALESCE(title, $8)
    WHERE id = $1 AND EXISTS (SELECT 1 FROM lease)";

/// [`SAVE_CHECKPOINT`] with this checkpoint (its `archived` is empty).
async fn save_checkpoint_only(
    pool: &Pool,
    lease: &LeaseToken,
    checkpoint: &Checkpoint<'_>,
) -> StoreResult<()> {
    let (first, items) = checkpoint.items.unwrap_or((0, &[]));
    let seqs: Vec<i64> = (first..first + items.len()).map(|i| i as i64).collect();
    let json: Vec<String> = items
        .iter()
        .map(serde_json::to_string)
        .collect::<Result<_, _>>()?;
    let client = get(pool).await?;
    let statement = client.prepare_cached(SAVE_CHECKPOINT).await.map_err(db)?;
    let saved = client
        .execute(
            &statement,
            &[
                &lease.session_id.as_str(),
                &lease.owner,
                &(checkpoint.transcript_len as i64),
                &checkpoint.snapshot_json,
                &i64::from(checkpoint.snapshot_version),
                &serde_json::to_string(checkpoint.usage)?,
                &now_ms(),
                &checkpoint.title,
                &seqs,
                &json,
            ],
        )
        .await
        .map_err(db)?;
    if saved == 0 {
        return Err(StoreError::LeaseLost(lease.session_id.clone()));
    }
    Ok(())
}

#[async_trait::async_trait]
impl crate::EventLog for PgStore {
    async fn append_events(
        &self,
        id: &SessionId,
        events: &[crate::StoredEvent],
    ) -> StoreResult<()> {
        if events.is_empty() {
            return Ok(());
        }
        let seqs: Vec<i64> = events.iter().map(|e| e.seq as i64).collect();
        let runs: Vec<&str> = events.iter().map(|e| e.run_id.as_str()).collect();
        let bodies: Vec<&str> = events.iter().map(|e| e.event.as_str()).collect();
        let mut object = self.conn().await?;
        let client: &mut Client = &mut object;
        client
            .execute(
                "INSERT INTO agentkit_events (session_id, seq, run_id, event)
                 SELECT $1::TEXT, * FROM UNNEST($2::BIGINT[], $3::TEXT[], $4::TEXT[])
                 ON CONFLICT (session_id, seq) DO NOTHING",
                &[&id.as_str(), &seqs, &runs, &bodies],
            )
            .await
            .map_err(db)?;
        Ok(())
    }

    async fn events_after(
        &self,
        id: &SessionId,
        after: u64,
    ) -> StoreResult<Vec<crate::StoredEvent>> {
        let mut object = self.conn().await?;
        let client: &mut Client = &mut object;
        let rows = client
            .query(
                "SELECT seq, run_id, event FROM agentkit_events
                 WHERE session_id = $1 AND seq > $2 ORDER BY seq",
                &[&id.as_str(), &(after as i64)],
            )
            .await
            .map_err(db)?;
        Ok(rows
            .iter()
            .map(|row| crate::StoredEvent {
                seq: row.get::<_, i64>(0).max(0) as u64,
                run_id: row.get(1),
                event: row.get(2),
            })
            .collect())
    }
}
