//! The `SessionStore` trait: what a backend stores and how it is reached.
//!
//! A backend keeps, per session, one row of metadata (title, timestamps,
//! usage totals), the latest *checkpoint* (the driver's [`LoopSnapshot`] as
//! a JSON document, its transcript left out), the transcript's items one
//! row each, a short journal of what happened since the checkpoint, and a
//! lease. Hosts rarely call this trait directly: [`crate::SessionLease`] and
//! [`crate::Session`] drive it.

use crate::{StoreResult, recover::Mark};
use agentkit_core::{Item, SessionId, Usage};
use agentkit_loop::LoopSnapshot;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

/// What to create.
#[derive(Clone, Debug, Default)]
pub struct NewSession {
    /// The id; a fresh one is generated when `None`.
    pub id: Option<SessionId>,
    /// A title for lists; when `None`, the first user message's first line
    /// becomes the title.
    pub title: Option<String>,
    /// The working directory the session's agent runs in, for lists that
    /// show (or filter by) the project a session belongs to. Stored as text:
    /// a path that is not UTF-8 is kept lossily.
    pub cwd: Option<PathBuf>,
}

impl NewSession {
    /// A session with a generated id and no title yet.
    pub fn new() -> Self {
        Self::default()
    }

    /// Uses this id.
    pub fn with_id(mut self, id: impl Into<SessionId>) -> Self {
        self.id = Some(id.into());
        self
    }

    /// Sets the title.
    pub fn with_title(mut self, title: impl Into<String>) -> Self {
        self.title = Some(title.into());
        self
    }

    /// Sets the working directory.
    pub fn with_cwd(mut self, cwd: impl Into<PathBuf>) -> Self {
        self.cwd = Some(cwd.into());
        self
    }

    /// The working directory as the backends store it.
    pub(crate) fn cwd_text(&self) -> Option<String> {
        self.cwd
            .as_ref()
            .map(|cwd| cwd.to_string_lossy().into_owned())
    }
}

/// A session as lists show it.
#[derive(Clone, Debug, PartialEq)]
#[non_exhaustive]
pub struct SessionInfo {
    /// The id.
    pub id: SessionId,
    /// The title, if one was given or derived.
    pub title: Option<String>,
    /// When it was created.
    pub created_at: SystemTime,
    /// The last write (item, checkpoint).
    pub last_activity: SystemTime,
    /// Items stored.
    pub item_count: u64,
    /// Usage summed over every finished turn.
    pub usage: Usage,
    /// The session and item count this one was forked from.
    pub forked_from: Option<(SessionId, u64)>,
    /// The working directory it was created with ([`NewSession::cwd`]); a
    /// fork keeps its parent's unless given its own.
    pub cwd: Option<PathBuf>,
}

/// A lease: the right to drive one session until `ttl` passes unrenewed.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LeaseToken {
    /// The session.
    pub session_id: SessionId,
    /// A token unique to this acquisition; every write checks it.
    pub owner: String,
    /// How long the lease lasts without renewal.
    pub ttl: Duration,
}

/// What a session holds, as [`SessionStore::load`] returns it.
#[derive(Clone, Debug)]
pub struct StoredSession {
    /// The session's row.
    pub info: SessionInfo,
    /// The last checkpoint, its transcript filled from the item rows.
    pub checkpoint: Option<LoopSnapshot>,
    /// Every stored item, the checkpoint's and those appended after it.
    pub items: Vec<Item>,
    /// What the driver did after the checkpoint, in order.
    pub(crate) marks: Vec<Mark>,
}

/// A checkpoint to save.
#[derive(Clone, Debug)]
pub struct Checkpoint<'a> {
    /// The snapshot, serialized with an empty transcript.
    pub snapshot_json: String,
    /// The snapshot's [`LoopSnapshot::version`].
    pub snapshot_version: u32,
    /// The transcript's length.
    pub transcript_len: usize,
    /// Items to write first: `(first index, items)`. Rows from that index on
    /// are replaced; `None` when the item rows already match.
    pub items: Option<(usize, &'a [Item])>,
    /// The session's usage totals.
    pub usage: &'a Usage,
    /// A title to set if the session has none.
    pub title: Option<String>,
    /// Items a mutator (compaction, redaction) removed from the transcript
    /// since the last checkpoint, oldest first: kept as archived, in the
    /// same transaction as the rewritten transcript.
    pub archived: &'a [Item],
}

/// One record of the append path: an item, a journal mark, or a rewrite.
#[derive(Clone, Debug)]
#[non_exhaustive]
pub enum LogEntry {
    /// An item appended at `index`.
    Item {
        /// Its index in the transcript.
        index: usize,
        /// The item.
        item: Item,
    },
    /// Something the driver did that the next checkpoint will include.
    Mark(Mark),
    /// A mutator rewrote the transcript (compaction) and kept the items the
    /// step appended since the checkpoint at its end: the rows become
    /// `items`, `archived` joins the archive, the checkpoint now covers the
    /// first `checkpoint_len` rows, and a [`Mark::Rewritten`] is journaled,
    /// all in one transaction. Appends and marks then go on at once
    /// instead of waiting for the next checkpoint.
    Rewrite {
        /// The whole new transcript.
        items: Vec<Item>,
        /// What it no longer holds unchanged.
        archived: Vec<Item>,
        /// How many of `items` precede this step's own.
        checkpoint_len: usize,
        /// How many item ids the rewrite may have generated.
        fresh_ids: u64,
        /// Where the mutator ran, journaled with the rewrite
        /// ([`Mark::Rewritten`]).
        point: Option<agentkit_loop::MutationPoint>,
    },
}

/// The synchronous append path, called from transcript observers.
///
/// `write` must not block the loop for long: SQLite writes the row before it
/// returns (tens of microseconds), PostgreSQL hands it to a writer task.
#[async_trait::async_trait]
pub trait LogWriter: Send + Sync {
    /// Records one entry, in order.
    fn write(&self, entry: LogEntry);

    /// Records several entries, in order, as one write where the backend
    /// can (SQLite: one transaction; PostgreSQL: one statement). The
    /// recorder hands over what it held back this way (see
    /// [`Recorder`](crate::Recorder)). The default writes them one by one.
    fn write_all(&self, entries: Vec<LogEntry>) {
        for entry in entries {
            self.write(entry);
        }
    }

    /// Waits until every entry written so far is durable; returns the first
    /// failure since the last flush.
    async fn flush(&self) -> StoreResult<()>;

    /// What [`flush`](Self::flush) would return, without waiting, when
    /// every entry written so far is durable already (a writer that stores
    /// each entry before [`write`](Self::write) returns, like SQLite's);
    /// `None` when a flush has to wait (a writer task, like PostgreSQL's).
    /// `Some` takes the failure like a flush does. The recorder asks before
    /// each tool call: a synchronous store then costs the call no future
    /// and no allocation. The default is `None`.
    fn stored(&self) -> Option<StoreResult<()>> {
        None
    }
}

/// A backend: SQLite, PostgreSQL, or your own.
///
/// Every write that touches a leased session checks the lease token, so a
/// worker whose lease was taken over can no longer change the session.
///
/// A host drives sessions through [`SessionLease`](crate::SessionLease);
/// it calls the store directly to list, inspect, fork and delete them:
///
/// ```
/// use agentkit_core::Item;
/// use agentkit_loop::{Agent, LoopStep};
/// use agentkit_store::{NewSession, SessionLease, SessionStore, SqliteStore, StoreError};
/// use agentkit_testkit::{ScriptedModel, ScriptedTurn};
/// use std::sync::Arc;
///
/// # tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap().block_on(async {
/// let store = Arc::new(SqliteStore::open_in_memory()?);
/// let lease = SessionLease::create(store.clone(), NewSession::new().with_id("s1")).await?;
/// let agent = lease
///     .record(Agent::builder()
///         .model(ScriptedModel::new([ScriptedTurn::text("Hi.")]))
///         .input(vec![Item::user("Plan the release")]))
///     .build()?;
/// let mut session = lease.open(&agent).await?;
/// assert!(matches!(session.next().await?, LoopStep::Finished(_)));
///
/// // Listed with a title taken from the first user message.
/// let listed = store.list().await?;
/// assert_eq!(listed[0].title.as_deref(), Some("Plan the release"));
/// assert_eq!(listed[0].item_count, 2);
///
/// // A fork keeps the first item only, as a new idle session.
/// let fork = store.fork(&"s1".into(), 1, NewSession::new().with_id("s2")).await?;
/// assert_eq!(store.load(&fork.id).await?.items.len(), 1);
///
/// // Deleting a session someone drives is refused until the lease is gone.
/// assert!(matches!(store.delete(&"s1".into()).await, Err(StoreError::Busy { .. })));
/// session.close().await?;
/// store.delete(&"s1".into()).await?;
/// assert_eq!(store.list().await?.len(), 1);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// # }).unwrap();
/// ```
#[async_trait::async_trait]
pub trait SessionStore: Send + Sync + 'static {
    /// Creates a session (no checkpoint, no items).
    async fn create(&self, new: NewSession) -> StoreResult<SessionInfo>;

    /// Takes the session's lease for `ttl`, or fails with
    /// [`StoreError::Busy`](crate::StoreError::Busy) while another worker's
    /// lease has not expired.
    async fn acquire(&self, id: &SessionId, ttl: Duration) -> StoreResult<LeaseToken>;

    /// Extends the lease by its ttl from now;
    /// [`StoreError::LeaseLost`](crate::StoreError::LeaseLost) if another
    /// worker took it.
    async fn renew(&self, lease: &LeaseToken) -> StoreResult<()>;

    /// Gives the lease up (a no-op if it was lost).
    async fn release(&self, lease: &LeaseToken) -> StoreResult<()>;

    /// The append path for a leased session.
    fn log_writer(&self, lease: &LeaseToken) -> Arc<dyn LogWriter>;

    /// Saves a checkpoint and clears the journal, in one transaction.
    async fn save(&self, lease: &LeaseToken, checkpoint: Checkpoint<'_>) -> StoreResult<()>;

    /// Everything stored for a session.
    async fn load(&self, id: &SessionId) -> StoreResult<StoredSession>;

    /// The items mutators removed from a session's transcript (compacted,
    /// redacted), in the order they were removed: nothing the session once
    /// held is lost silently.
    async fn archived(&self, id: &SessionId) -> StoreResult<Vec<Item>>;

    /// One session's row.
    async fn info(&self, id: &SessionId) -> StoreResult<SessionInfo>;

    /// Every session, most recently active first.
    async fn list(&self) -> StoreResult<Vec<SessionInfo>>;

    /// A new session holding the first `at` items of `id`, idle (nothing
    /// pending). Fails if `at` would cut a tool call from its result.
    async fn fork(&self, id: &SessionId, at: usize, new: NewSession) -> StoreResult<SessionInfo>;

    /// Writes lines of the session's input log (JSON lines, header first:
    /// see `agentkit_loop::replay`) from line `from` on, replacing any
    /// stored there (`from == 0` starts the log over). Fenced by the lease
    /// like [`save`](Self::save).
    async fn append_inputs(
        &self,
        lease: &LeaseToken,
        from: usize,
        lines: &[String],
    ) -> StoreResult<()>;

    /// The session's recorded input log as JSON lines, in order; empty when
    /// it recorded none. [`load_input_log`](crate::load_input_log) reads it
    /// as an `InputLog`.
    async fn input_lines(&self, id: &SessionId) -> StoreResult<Vec<String>>;

    /// Deletes a session and everything stored for it;
    /// [`StoreError::Busy`](crate::StoreError::Busy) while another worker
    /// holds its lease.
    async fn delete(&self, id: &SessionId) -> StoreResult<()>;
}

pub(crate) fn now_ms() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as i64)
}

pub(crate) fn time_from_ms(ms: i64) -> SystemTime {
    UNIX_EPOCH + Duration::from_millis(ms.max(0) as u64)
}

/// A token no other acquisition shares: process id, time and a counter.
pub(crate) fn fresh_token(prefix: &str) -> String {
    use std::sync::atomic::{AtomicU64, Ordering};
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    let nanos = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos());
    format!(
        "{prefix}-{}-{nanos:x}-{}",
        std::process::id(),
        COUNTER.fetch_add(1, Ordering::Relaxed)
    )
}

/// The title derived from the first user message: its first line, at most
/// 80 characters.
pub(crate) fn derived_title<'a>(items: impl IntoIterator<Item = &'a Item>) -> Option<String> {
    let first = items
        .into_iter()
        .find(|item| item.kind == agentkit_core::ItemKind::User)?;
    let text = first.text_content();
    let line = text.lines().find(|l| !l.trim().is_empty())?.trim();
    Some(line.chars().take(80).collect())
}

/// Checks that the first `at` of `items` form a valid transcript.
pub(crate) fn fork_prefix<'a>(
    id: &SessionId,
    items: &'a [Item],
    at: usize,
) -> StoreResult<&'a [Item]> {
    if at > items.len() {
        return Err(crate::StoreError::ForkOutOfRange {
            session: id.clone(),
            at,
            len: items.len(),
        });
    }
    let prefix = &items[..at];
    agentkit_core::validate_transcript(prefix).map_err(|reason| {
        crate::StoreError::ForkBreaksTranscript {
            session: id.clone(),
            at,
            reason,
        }
    })?;
    Ok(prefix)
}

/// The checkpoint a fork starts from: the parent's, idle, nothing pending.
pub(crate) fn fork_snapshot(
    parent: Option<LoopSnapshot>,
    new_id: &SessionId,
    prefix_len: usize,
) -> Option<LoopSnapshot> {
    let mut snapshot = parent?;
    snapshot.session_id = new_id.clone();
    snapshot.transcript = Vec::new();
    snapshot.pending_input.clear();
    snapshot.round.clear();
    snapshot.soft_interrupts.clear();
    snapshot.phase = agentkit_loop::SnapshotPhase::Idle;
    // Item ids stay unique: the parent's counter is at least the prefix.
    snapshot.next_item_index = snapshot.next_item_index.max(prefix_len as u64);
    Some(snapshot)
}

/// The migrations a database at schema `current` still needs, or
/// [`StoreError::SchemaTooNew`](crate::StoreError::SchemaTooNew) if it is
/// newer than `migrations` knows.
pub(crate) fn pending_migrations<'a>(
    current: i64,
    migrations: &'a [&'a str],
) -> StoreResult<&'a [&'a str]> {
    let supported = migrations.len() as i64;
    if current > supported {
        return Err(crate::StoreError::SchemaTooNew {
            found: current,
            supported,
        });
    }
    Ok(&migrations[current.max(0) as usize..])
}

/// Reads a checkpoint back: the snapshot document with its transcript
/// taken from the first `transcript_len` item rows.
pub(crate) fn read_checkpoint(
    id: &SessionId,
    snapshot_json: Option<String>,
    transcript_len: usize,
    items: &[Item],
) -> StoreResult<Option<LoopSnapshot>> {
    let Some(json) = snapshot_json else {
        return Ok(None);
    };
    let mut snapshot: LoopSnapshot = serde_json::from_str(&json)
        .map_err(|err| crate::StoreError::corrupt(id, format!("checkpoint: {err}")))?;
    let Some(transcript) = items.get(..transcript_len) else {
        return Err(crate::StoreError::corrupt(
            id,
            format!(
                "the checkpoint covers {transcript_len} items but {} are stored",
                items.len()
            ),
        ));
    };
    snapshot.transcript = transcript.to_vec();
    Ok(Some(snapshot))
}

pub(crate) fn parse_json<T: serde::de::DeserializeOwned>(
    id: &SessionId,
    what: &str,
    json: &str,
) -> StoreResult<T> {
    serde_json::from_str(json)
        .map_err(|err| crate::StoreError::corrupt(id, format!("{what}: {err}")))
}

/// A session row before its JSON is parsed.
pub(crate) struct RawInfo {
    pub(crate) id: String,
    pub(crate) title: Option<String>,
    pub(crate) created_at: i64,
    pub(crate) updated_at: i64,
    pub(crate) usage: String,
    pub(crate) forked_from: Option<String>,
    pub(crate) forked_at: Option<i64>,
    pub(crate) item_count: i64,
    pub(crate) cwd: Option<String>,
}

impl RawInfo {
    pub(crate) fn parse(self) -> StoreResult<SessionInfo> {
        let id = SessionId::new(self.id);
        let usage = parse_json(&id, "usage", &self.usage)?;
        Ok(SessionInfo {
            title: self.title,
            created_at: time_from_ms(self.created_at),
            last_activity: time_from_ms(self.updated_at),
            item_count: self.item_count.max(0) as u64,
            usage,
            forked_from: self.forked_from.map(|parent| {
                (
                    SessionId::new(parent),
                    self.forked_at.unwrap_or(0).max(0) as u64,
                )
            }),
            cwd: self.cwd.map(PathBuf::from),
            id,
        })
    }
}

/// The input log session `id` recorded into `store`
/// ([`Session::record_inputs`](crate::Session::record_inputs)), ready to
/// [`replay`](agentkit_loop::replay::InputLog::replay) or
/// [`fork_at`](agentkit_loop::replay::InputLog::fork_at); `None` when it
/// recorded none.
pub async fn load_input_log(
    store: &dyn SessionStore,
    id: &SessionId,
) -> StoreResult<Option<agentkit_loop::replay::InputLog>> {
    let lines = store.input_lines(id).await?;
    if lines.is_empty() {
        return Ok(None);
    }
    agentkit_loop::replay::InputLog::from_json_lines(&lines.join("\n"))
        .map(Some)
        .map_err(|err| crate::StoreError::Corrupt {
            session: id.clone(),
            message: format!("input log: {err}"),
        })
}
