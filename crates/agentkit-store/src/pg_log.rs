//! PostgreSQL's append path: a writer task per leased session.
//!
//! The recorder's observers must not wait for the network, so
//! [`PgLogWriter`] hands each entry to a task over a channel; the task
//! writes whatever queued up in one statement per batch, in order, and a
//! flush waits for it (a checkpoint, and each tool call before it runs:
//! the call's start is then stored). A rewrite is one transaction of its
//! own, between the batches before and after it.

use crate::postgres::{archive, db, get, hold_lease, insert_items};
use crate::recover::Mark;
use crate::store::{LeaseToken, LogEntry, LogWriter};
use crate::{StoreError, StoreResult};
use agentkit_core::SessionId;
use deadpool_postgres::Pool;
use tokio::sync::{mpsc, oneshot};

pub(super) enum Command {
    Write(LogEntry),
    WriteAll(Vec<LogEntry>),
    Flush(oneshot::Sender<StoreResult<()>>),
}

/// Hands entries to the writer task; never blocks.
pub(super) struct PgLogWriter {
    pub(super) sender: mpsc::UnboundedSender<Command>,
}

#[async_trait::async_trait]
impl LogWriter for PgLogWriter {
    fn write(&self, entry: LogEntry) {
        // The task only stops when this writer is dropped.
        let _ = self.sender.send(Command::Write(entry));
    }

    /// One command: the task writes them in one batch.
    fn write_all(&self, entries: Vec<LogEntry>) {
        let _ = self.sender.send(Command::WriteAll(entries));
    }

    async fn flush(&self) -> StoreResult<()> {
        let (done, wait) = oneshot::channel();
        if self.sender.send(Command::Flush(done)).is_err() {
            return Err(StoreError::corrupt(
                &SessionId::new(""),
                "the log writer task stopped",
            ));
        }
        wait.await.unwrap_or_else(|_| {
            Err(StoreError::corrupt(
                &SessionId::new(""),
                "the log writer task stopped",
            ))
        })
    }
}

/// Writes entries in order, batching whatever queued up while the last
/// batch was written; the first failure is reported at the next flush.
pub(super) async fn write_log(
    pool: Pool,
    lease: LeaseToken,
    mut commands: mpsc::UnboundedReceiver<Command>,
) {
    let mut failure: Option<StoreError> = None;
    let mut batch = Vec::new();
    while let Some(command) = commands.recv().await {
        let mut next = Some(command);
        while let Some(command) = next.take() {
            match command {
                Command::Write(entry) => {
                    batch.push(entry);
                    next = commands.try_recv().ok();
                }
                Command::WriteAll(entries) => {
                    batch.extend(entries);
                    next = commands.try_recv().ok();
                }
                Command::Flush(done) => {
                    write_batch(&pool, &lease, &mut batch, &mut failure).await;
                    let _ = done.send(failure.take().map_or(Ok(()), Err));
                }
            }
        }
        write_batch(&pool, &lease, &mut batch, &mut failure).await;
    }
}

async fn write_batch(
    pool: &Pool,
    lease: &LeaseToken,
    batch: &mut Vec<LogEntry>,
    failure: &mut Option<StoreError>,
) {
    // Runs of items and marks are one statement each; a rewrite is a
    // transaction between them.
    let mut rest: &[LogEntry] = batch;
    while !rest.is_empty() {
        let run = rest
            .iter()
            .position(|entry| matches!(entry, LogEntry::Rewrite { .. }))
            .unwrap_or(rest.len());
        let written = if run > 0 {
            write_entries(pool, lease, &rest[..run]).await
        } else {
            write_rewrite(pool, lease, &rest[0]).await
        };
        if let Err(err) = written {
            failure.get_or_insert(err);
            break;
        }
        rest = &rest[run.max(1)..];
    }
    batch.clear();
}

/// Replaces the rows with a rewritten transcript, archives what it dropped,
/// moves the checkpoint's coverage and journals the rewrite, in one
/// transaction under the lease.
async fn write_rewrite(pool: &Pool, lease: &LeaseToken, entry: &LogEntry) -> StoreResult<()> {
    let LogEntry::Rewrite {
        items,
        archived,
        checkpoint_len,
        fresh_ids,
        point,
    } = entry
    else {
        return Ok(());
    };
    let id = &lease.session_id;
    let mut object = get(pool).await?;
    let client: &mut tokio_postgres::Client = &mut object;
    let tx = client.transaction().await.map_err(db)?;
    hold_lease(&tx, lease).await?;
    archive(&tx, id, archived).await?;
    tx.execute(
        "DELETE FROM agentkit_items WHERE session_id = $1",
        &[&id.as_str()],
    )
    .await
    .map_err(db)?;
    insert_items(&tx, id, 0, items).await?;
    tx.execute(
        "UPDATE agentkit_sessions SET transcript_len = $2 WHERE id = $1",
        &[&id.as_str(), &(*checkpoint_len as i64)],
    )
    .await
    .map_err(db)?;
    let mark = serde_json::to_string(&Mark::Rewritten {
        fresh_ids: *fresh_ids,
        point: *point,
    })?;
    tx.execute(
        "INSERT INTO agentkit_marks (session_id, mark) VALUES ($1, $2)",
        &[&id.as_str(), &mark],
    )
    .await
    .map_err(db)?;
    tx.commit().await.map_err(db)
}

/// Writes items ($3 indexes, $4 JSON) and marks ($5, in order) of session
/// $1 if lease $2 still holds, in one statement (one round trip); returns
/// how many rows it wrote. Each part checks the lease, so a worker that lost
/// it can never write into the session again.
const WRITE_ENTRIES: &str = "WITH lease AS (
        SELECT 1 FROM agentkit_leases WHERE session_id = $1 AND owner = $2
    ), items AS (
        INSERT INTO agentkit_items (session_id, seq, item)
        SELECT $1, seq, item FROM UNNEST($3::BIGINT[], $4::TEXT[]) AS rows (seq, item)
        WHERE EXISTS (SELECT 1 FROM lease)
        ON CONFLICT (session_id, seq) DO UPDATE SET item = excluded.item
        RETURNING 1
    ), marks AS (
        INSERT INTO agentkit_marks (session_id, mark)
        SELECT $1, mark FROM UNNEST($5::TEXT[]) WITH ORDINALITY AS rows (mark, n)
        WHERE EXISTS (SELECT 1 FROM lease)
        ORDER BY n
        RETURNING 1
    )
    SELECT (SELECT COUNT(*) FROM items) + (SELECT COUNT(*) FROM marks)";

async fn write_entries(pool: &Pool, lease: &LeaseToken, entries: &[LogEntry]) -> StoreResult<()> {
    let mut seqs = Vec::new();
    let mut items = Vec::new();
    let mut marks = Vec::new();
    for entry in entries {
        match entry {
            LogEntry::Item { index, item } => {
                seqs.push(*index as i64);
                items.push(serde_json::to_string(item)?);
            }
            LogEntry::Mark(mark) => marks.push(serde_json::to_string(mark)?),
            // Written by `write_rewrite`, never in a run.
            LogEntry::Rewrite { .. } => {}
        }
    }
    let client = get(pool).await?;
    let statement = client.prepare_cached(WRITE_ENTRIES).await.map_err(db)?;
    let written: i64 = client
        .query_one(
            &statement,
            &[
                &lease.session_id.as_str(),
                &lease.owner,
                &seqs,
                &items,
                &marks,
            ],
        )
        .await
        .map_err(db)?
        .get(0);
    if written < entries.len() as i64 {
        return Err(StoreError::LeaseLost(lease.session_id.clone()));
    }
    Ok(())
}
