//! SQLite's append path: each write is committed before it returns.
//!
//! An entry is one statement (an autocommit), a rewrite one transaction,
//! and what the recorder held back and hands over together
//! ([`LogWriter::write_all`]) one transaction too: one commit for the
//! entries a step gathered before something slow began. A failure waits
//! for the next flush.

use crate::recover::Mark;
use crate::sqlite::{archive, check_lease, db, insert_items};
use crate::store::{LeaseToken, LogEntry, LogWriter};
use crate::{StoreError, StoreResult};
use rusqlite::{Connection, params};
use std::sync::{Arc, Mutex};

/// Writes each entry before returning; failures wait for `flush`.
pub(crate) struct SqliteLogWriter {
    conn: Arc<Mutex<Connection>>,
    lease: LeaseToken,
    failure: Mutex<Option<StoreError>>,
}

impl SqliteLogWriter {
    pub(crate) fn new(conn: Arc<Mutex<Connection>>, lease: LeaseToken) -> Self {
        Self {
            conn,
            lease,
            failure: Mutex::new(None),
        }
    }

    fn conn(&self) -> std::sync::MutexGuard<'_, Connection> {
        self.conn.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Writes `entries` in one transaction (a rewrite is a transaction of
    /// its own, so a run holding one is written entry by entry).
    fn try_write_all(&self, entries: &[LogEntry]) -> StoreResult<()> {
        let conn = self.conn();
        if entries
            .iter()
            .any(|entry| matches!(entry, LogEntry::Rewrite { .. }))
        {
            return entries
                .iter()
                .try_for_each(|entry| self.try_write(&conn, entry));
        }
        let tx = conn.unchecked_transaction().map_err(db)?;
        for entry in entries {
            self.try_write(&tx, entry)?;
        }
        tx.commit().map_err(db)
    }

    fn try_write(&self, conn: &Connection, entry: &LogEntry) -> StoreResult<()> {
        let id = self.lease.session_id.as_str();
        // Each statement checks the lease, so a worker that lost it can
        // never write into the session again.
        let written = match entry {
            LogEntry::Item { index, item } => conn
                .prepare_cached(
                    "INSERT INTO items (session_id, seq, item)
                     SELECT ?1, ?2, ?3 WHERE EXISTS
                        (SELECT 1 FROM leases WHERE session_id = ?1 AND owner = ?4)
                     ON CONFLICT (session_id, seq) DO UPDATE SET item = excluded.item",
                )
                .and_then(|mut insert| {
                    insert.execute(params![
                        id,
                        *index as i64,
                        serde_json::to_string(item).unwrap_or_default(),
                        self.lease.owner
                    ])
                }),
            LogEntry::Mark(mark) => conn
                .prepare_cached(
                    "INSERT INTO marks (session_id, mark)
                     SELECT ?1, ?2 WHERE EXISTS
                        (SELECT 1 FROM leases WHERE session_id = ?1 AND owner = ?3)",
                )
                .and_then(|mut insert| {
                    insert.execute(params![
                        id,
                        serde_json::to_string(mark).unwrap_or_default(),
                        self.lease.owner
                    ])
                }),
            LogEntry::Rewrite {
                items,
                archived,
                checkpoint_len,
                fresh_ids,
                point,
            } => {
                let tx = conn.unchecked_transaction().map_err(db)?;
                check_lease(&tx, &self.lease.session_id, &self.lease.owner)?;
                archive(&tx, &self.lease.session_id, archived)?;
                tx.execute("DELETE FROM items WHERE session_id = ?1", params![id])
                    .map_err(db)?;
                insert_items(&tx, &self.lease.session_id, 0, items)?;
                let mark = Mark::Rewritten {
                    fresh_ids: *fresh_ids,
                    point: *point,
                };
                tx.execute(
                    "UPDATE sessions SET transcript_len = ?2 WHERE id = ?1",
                    params![id, *checkpoint_len as i64],
                )
                .map_err(db)?;
                tx.execute(
                    "INSERT INTO marks (session_id, mark) VALUES (?1, ?2)",
                    params![id, serde_json::to_string(&mark)?],
                )
                .map_err(db)?;
                tx.commit().map(|()| 1)
            }
        }
        .map_err(db)?;
        if written == 0 {
            return Err(StoreError::LeaseLost(self.lease.session_id.clone()));
        }
        Ok(())
    }
}

#[async_trait::async_trait]
impl LogWriter for SqliteLogWriter {
    fn write(&self, entry: LogEntry) {
        let written = self.try_write(&self.conn(), &entry);
        self.note(written);
    }

    /// One commit for all of them.
    fn write_all(&self, entries: Vec<LogEntry>) {
        let written = self.try_write_all(&entries);
        self.note(written);
    }

    async fn flush(&self) -> StoreResult<()> {
        self.take_failure()
    }

    /// Every write is committed before `write` returns.
    fn stored(&self) -> Option<StoreResult<()>> {
        Some(self.take_failure())
    }
}

impl SqliteLogWriter {
    /// Keeps the first failure for the next flush.
    fn note(&self, written: StoreResult<()>) {
        if let Err(err) = written {
            let mut failure = self.failure.lock().unwrap_or_else(|e| e.into_inner());
            failure.get_or_insert(err);
        }
    }

    /// The first failure since the last flush, taken.
    fn take_failure(&self) -> StoreResult<()> {
        match self
            .failure
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .take()
        {
            Some(err) => Err(err),
            None => Ok(()),
        }
    }
}
