//! Saved sessions, in the SQLite session store of `agentkit-store`.
//!
//! Every session lives in one database, `sessions.db` under the state
//! directory. The store's recorder appends each item as it happens and
//! [`agentkit_store::Session`] saves the driver's snapshot at every yield,
//! so a process killed mid-turn loses at most the item being written, and
//! `--resume` picks the session up exactly where it stopped: a pending
//! approval is asked again, queued messages are still queued.
//!
//! A session is leased by one process at a time. A process that was killed
//! keeps its lease until it expires (`CODING_AGENT_LEASE_MS`, 10 s by
//! default), so `--resume` right after a crash waits that long at most; a
//! session another live `coding-agent` drives is refused.
//!
//! The workspace a session works in is kept on its first item (the system
//! prompt) as metadata, so `--resume` goes back to the same directory.

use agentkit_core::{Item, ItemKind, SessionId};
use agentkit_store::{
    NewSession, SessionInfo, SessionLease, SessionStore, SqliteStore, StoreError,
};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

/// The metadata key of the system item that names the session's workspace.
pub const WORKSPACE_KEY: &str = "coding_agent.workspace";

/// How long a lease lasts without renewal unless `CODING_AGENT_LEASE_MS`
/// says otherwise: how long `--resume` may wait after a crash.
pub const DEFAULT_LEASE: Duration = Duration::from_secs(10);

/// Why a session could not be saved, found or opened.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum SessionError {
    /// The state directory could not be created.
    #[error("{path}: {source}")]
    Io {
        /// The directory.
        path: PathBuf,
        /// What failed.
        source: std::io::Error,
    },
    /// The store failed.
    #[error("session store: {0}")]
    Store(#[from] StoreError),
    /// No session with this id (or no session at all).
    #[error("no saved session {0}; `--list` shows them")]
    NotFound(String),
    /// Another live process drives the session.
    #[error("session {0} is open in another coding-agent; quit that one first")]
    InUse(String),
}

/// The sessions of one state directory (or of memory, for the demo).
#[derive(Clone)]
pub struct Sessions {
    store: Arc<SqliteStore>,
    lease: Duration,
}

impl std::fmt::Debug for Sessions {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Sessions")
            .field("lease", &self.lease)
            .finish_non_exhaustive()
    }
}

impl Sessions {
    /// Opens (or creates) `dir/sessions.db`.
    pub fn open(dir: &Path) -> Result<Self, SessionError> {
        std::fs::create_dir_all(dir).map_err(|source| SessionError::Io {
            path: dir.to_path_buf(),
            source,
        })?;
        Ok(Self {
            store: Arc::new(SqliteStore::open(dir.join("sessions.db"))?),
            lease: lease_from_env(),
        })
    }

    /// Sessions kept in memory only: the offline demo saves nothing.
    pub fn in_memory() -> Result<Self, SessionError> {
        Ok(Self {
            store: Arc::new(SqliteStore::open_in_memory()?),
            lease: lease_from_env(),
        })
    }

    /// The default directory: `$CODING_AGENT_STATE_DIR`, else
    /// `$XDG_STATE_HOME/coding-agent`, else `~/.local/state/coding-agent`.
    pub fn default_dir() -> PathBuf {
        let var = |name| std::env::var_os(name).filter(|v| !v.is_empty());
        if let Some(dir) = var("CODING_AGENT_STATE_DIR") {
            return dir.into();
        }
        if let Some(dir) = var("XDG_STATE_HOME") {
            return PathBuf::from(dir).join("coding-agent");
        }
        var("HOME")
            .map(|home| PathBuf::from(home).join(".local/state/coding-agent"))
            .unwrap_or_else(|| std::env::temp_dir().join("coding-agent-state"))
    }

    /// The store, for the ACP server.
    pub fn store(&self) -> Arc<dyn SessionStore> {
        self.store.clone()
    }

    /// How long this process's leases last without renewal.
    pub fn lease_ttl(&self) -> Duration {
        self.lease
    }

    /// Every session, the most recently active first.
    pub async fn list(&self) -> Result<Vec<SessionInfo>, SessionError> {
        Ok(self.store.list().await?)
    }

    /// The session `id`, or the most recent one, and the workspace it
    /// worked in (when it recorded one).
    pub async fn find(
        &self,
        id: Option<&str>,
    ) -> Result<(SessionInfo, Option<PathBuf>), SessionError> {
        let id = match id {
            Some(id) => SessionId::new(id),
            None => self
                .list()
                .await?
                .into_iter()
                .next()
                .map(|info| info.id)
                .ok_or_else(|| SessionError::NotFound("(there are none yet)".into()))?,
        };
        let stored = match self.store.load(&id).await {
            Ok(stored) => stored,
            Err(StoreError::NotFound(id)) => return Err(SessionError::NotFound(id.to_string())),
            Err(error) => return Err(error.into()),
        };
        let workspace = stored.items.first().and_then(workspace_of);
        Ok((stored.info, workspace))
    }

    /// Creates a session for the workspace `cwd` (editors list sessions by
    /// it) and leases it.
    pub async fn create(&self, cwd: &Path) -> Result<SessionLease, SessionError> {
        let info = self
            .store
            .create(NewSession::new().with_id(new_id()).with_cwd(cwd))
            .await?;
        Ok(SessionLease::acquire_with_ttl(self.store.clone(), &info.id, self.lease).await?)
    }

    /// Leases a stored session. While another process's lease has not
    /// expired (a process that was killed keeps it until then) it waits,
    /// telling `waiting` once; a lease that is still renewed after twice
    /// its lifetime belongs to a live process: [`SessionError::InUse`].
    pub async fn lease(
        &self,
        id: &SessionId,
        mut waiting: impl FnMut(Duration),
    ) -> Result<SessionLease, SessionError> {
        let limit = self.lease * 2 + Duration::from_secs(1);
        let start = Instant::now();
        let mut told = false;
        loop {
            match SessionLease::acquire_with_ttl(self.store.clone(), id, self.lease).await {
                Ok(lease) => return Ok(lease),
                Err(StoreError::Busy { .. }) if start.elapsed() < limit => {
                    if !told {
                        waiting(limit);
                        told = true;
                    }
                    tokio::time::sleep(Duration::from_millis(100)).await;
                }
                Err(StoreError::Busy { session, .. }) => {
                    return Err(SessionError::InUse(session.to_string()));
                }
                Err(StoreError::NotFound(id)) => {
                    return Err(SessionError::NotFound(id.to_string()));
                }
                Err(error) => return Err(error.into()),
            }
        }
    }
}

/// The system item that starts a session in `workspace`: `prompt`, with the
/// workspace kept as metadata for `--resume`.
pub fn system_item(prompt: String, workspace: &Path) -> Item {
    let mut item = Item::system(prompt);
    item.metadata.insert(
        WORKSPACE_KEY.into(),
        workspace.to_string_lossy().into_owned().into(),
    );
    item
}

fn workspace_of(item: &Item) -> Option<PathBuf> {
    if item.kind != ItemKind::System {
        return None;
    }
    item.metadata
        .get(WORKSPACE_KEY)
        .and_then(|value| value.as_str())
        .map(PathBuf::from)
}

/// `CODING_AGENT_LEASE_MS`, else [`DEFAULT_LEASE`]. Tests shorten it so a
/// resume after a kill does not wait long.
fn lease_from_env() -> Duration {
    std::env::var("CODING_AGENT_LEASE_MS")
        .ok()
        .and_then(|ms| ms.trim().parse::<u64>().ok())
        .filter(|ms| *ms >= 100)
        .map_or(DEFAULT_LEASE, Duration::from_millis)
}

/// A fresh session id, short enough to type: `s` and the time in
/// milliseconds.
fn new_id() -> String {
    let millis = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_millis())
        .unwrap_or_default();
    format!("s{millis}")
}

/// `false` when no token was counted: the server reported no usage (a
/// count of zero would be a lie).
pub fn tokens_known(usage: &agentkit_core::Usage) -> bool {
    usage.tokens.total() > 0
}

/// What `--list` prints: a header and one line per session (id, last
/// activity, items, tokens, cost when known, title).
pub fn list_lines(sessions: &[SessionInfo], now: SystemTime) -> Vec<String> {
    let mut lines = vec![format!(
        "{:<16} {:<14} {:>6} {:>9} {:>9}  {}",
        "ID", "LAST ACTIVITY", "ITEMS", "TOKENS", "COST", "TITLE"
    )];
    for info in sessions {
        let cost = info
            .usage
            .cost
            .as_ref()
            .filter(|cost| cost.currency == "USD")
            .map_or_else(|| "-".to_owned(), |cost| format!("${:.4}", cost.amount));
        lines.push(format!(
            "{:<16} {:<14} {:>6} {:>9} {:>9}  {}",
            info.id,
            ago(now, info.last_activity),
            info.item_count,
            if tokens_known(&info.usage) {
                info.usage.tokens.total().to_string()
            } else {
                "?".to_owned()
            },
            cost,
            info.title.as_deref().unwrap_or("(untitled)")
        ));
    }
    lines
}

/// `just now`, `5 min ago`, `3 h ago`, `2 days ago`.
fn ago(now: SystemTime, then: SystemTime) -> String {
    let secs = now.duration_since(then).unwrap_or_default().as_secs();
    match secs {
        0..60 => "just now".into(),
        60..3_600 => format!("{} min ago", secs / 60),
        3_600..86_400 => format!("{} h ago", secs / 3_600),
        _ => format!("{} days ago", secs / 86_400),
    }
}

/// The first line of `text`, at most `max` characters.
pub fn shorten(text: &str, max: usize) -> String {
    let line = text.lines().find(|l| !l.trim().is_empty()).unwrap_or("");
    let line = line.trim();
    if line.chars().count() <= max {
        line.to_owned()
    } else {
        let cut: String = line.chars().take(max.saturating_sub(1)).collect();
        format!("{cut}…")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn create_find_and_list() {
        let dir = tempfile::tempdir().unwrap();
        let sessions = Sessions::open(&dir.path().join("state")).unwrap();
        assert!(sessions.list().await.unwrap().is_empty());
        assert!(matches!(
            sessions.find(None).await,
            Err(SessionError::NotFound(_))
        ));
        let lease = sessions.create(Path::new("/work")).await.unwrap();
        let id = lease.session_id().clone();
        lease.release().await.unwrap();
        let (info, workspace) = sessions.find(None).await.unwrap();
        assert_eq!(info.id, id);
        // Nothing saved yet: no system item, so no workspace.
        assert_eq!(workspace, None);
        assert!(matches!(
            sessions.find(Some("nope")).await,
            Err(SessionError::NotFound(id)) if id == "nope"
        ));
        let lines = list_lines(&sessions.list().await.unwrap(), SystemTime::now());
        assert_eq!(lines.len(), 2);
        assert!(lines[1].starts_with(id.as_str()), "{lines:?}");
        assert!(lines[1].contains("just now") && lines[1].ends_with("(untitled)"));
        // No usage reported: the tokens are unknown, not 0.
        let columns: Vec<&str> = lines[1].split_whitespace().collect();
        assert_eq!(columns[4], "?", "{lines:?}");
    }

    #[tokio::test]
    async fn a_live_lease_is_refused_after_waiting() {
        let dir = tempfile::tempdir().unwrap();
        let mut sessions = Sessions::open(dir.path()).unwrap();
        sessions.lease = Duration::from_millis(200);
        let held = sessions.create(Path::new("/work")).await.unwrap();
        let id = held.session_id().clone();
        // The holder keeps its lease alive by renewing it.
        let store = sessions.store.clone();
        let token = held.token().clone();
        let renew = tokio::spawn(async move {
            loop {
                store.renew(&token).await.unwrap();
                tokio::time::sleep(Duration::from_millis(50)).await;
            }
        });
        let mut told = 0;
        let result = sessions.lease(&id, |_| told += 1).await;
        assert!(matches!(result, Err(SessionError::InUse(_))), "{result:?}");
        assert_eq!(told, 1);
        renew.abort();
        // Once it stops renewing, the lease expires and can be taken.
        drop(renew.await);
        std::mem::forget(held); // a crash: the lease is not released
        assert!(sessions.lease(&id, |_| {}).await.is_ok());
    }

    #[test]
    fn ages_and_titles_read_well() {
        let now = SystemTime::now();
        assert_eq!(ago(now, now), "just now");
        assert_eq!(ago(now, now - Duration::from_secs(300)), "5 min ago");
        assert_eq!(ago(now, now - Duration::from_secs(7_300)), "2 h ago");
        assert_eq!(ago(now, now - Duration::from_secs(200_000)), "2 days ago");
        assert_eq!(shorten("  hello  ", 10), "hello");
        assert_eq!(shorten("abcdefghijkl", 5), "abcd…");
    }

    #[test]
    fn the_workspace_is_read_back_from_the_system_item() {
        let item = system_item("be useful".into(), Path::new("/work/project"));
        assert_eq!(workspace_of(&item), Some(PathBuf::from("/work/project")));
        assert_eq!(workspace_of(&Item::user("hi")), None);
    }
}
