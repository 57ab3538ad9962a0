//! Saved sessions: one JSON file per session, holding the driver's
//! [`LoopSnapshot`] and a little metadata, rewritten after every step.
//!
//! The interface is three calls (save, list, load) so that moving to the
//! SQLite session store (`agentkit-store`) changes this module only. Files
//! are written to a temporary name and renamed, so a process killed
//! mid-write leaves the previous snapshot intact.

use agentkit_core::ItemKind;
use agentkit_loop::LoopSnapshot;
use serde::{Deserialize, Serialize};
use std::path::{Path, PathBuf};
use std::time::{SystemTime, UNIX_EPOCH};

/// Why a session could not be saved or loaded.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum SessionError {
    /// Reading or writing the state directory failed.
    #[error("{path}: {source}")]
    Io {
        /// The file or directory.
        path: PathBuf,
        /// What failed.
        source: std::io::Error,
    },
    /// A session file is not valid.
    #[error("{path} is not a session file: {source}")]
    Format {
        /// The file.
        path: PathBuf,
        /// The parse error.
        source: serde_json::Error,
    },
    /// No session with this id (or no session at all).
    #[error("no saved session {0}; `--list` shows them")]
    NotFound(String),
}

/// What `--list` shows of a session.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct SessionInfo {
    /// The session id (`--resume ID`).
    pub id: String,
    /// The workspace it worked in.
    pub workspace: PathBuf,
    /// Seconds since the Unix epoch of the last save.
    pub updated: u64,
    /// The first user message, shortened.
    pub title: String,
    /// Items in the transcript.
    pub items: usize,
}

#[derive(Serialize, Deserialize)]
struct SessionFile {
    info: SessionInfo,
    snapshot: LoopSnapshot,
}

/// The sessions under one state directory.
#[derive(Clone, Debug)]
pub struct SessionStore {
    dir: PathBuf,
}

impl SessionStore {
    /// Sessions under `dir` (created on first save).
    pub fn new(dir: impl Into<PathBuf>) -> Self {
        Self { dir: dir.into() }
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

    /// A fresh session id.
    pub fn new_id() -> String {
        let millis = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map(|d| d.as_millis())
            .unwrap_or_default();
        format!("s{millis}")
    }

    fn path(&self, id: &str) -> PathBuf {
        self.dir.join(format!("{id}.json"))
    }

    /// Saves the snapshot of a session working in `workspace`.
    pub fn save(&self, snapshot: &LoopSnapshot, workspace: &Path) -> Result<(), SessionError> {
        let io = |path: &Path| {
            let path = path.to_path_buf();
            move |source| SessionError::Io { path, source }
        };
        std::fs::create_dir_all(&self.dir).map_err(io(&self.dir))?;
        let id = snapshot.session_id.to_string();
        let title = snapshot
            .transcript
            .iter()
            .find(|item| item.kind == ItemKind::User)
            .map(|item| shorten(&item.text_content(), 60))
            .unwrap_or_default();
        let file = SessionFile {
            info: SessionInfo {
                id: id.clone(),
                workspace: workspace.to_path_buf(),
                updated: SystemTime::now()
                    .duration_since(UNIX_EPOCH)
                    .map(|d| d.as_secs())
                    .unwrap_or_default(),
                title,
                items: snapshot.transcript.len(),
            },
            snapshot: snapshot.clone(),
        };
        let path = self.path(&id);
        let temp = self.dir.join(format!(".{id}.json.tmp"));
        let json = serde_json::to_vec(&file).map_err(|source| SessionError::Format {
            path: path.clone(),
            source,
        })?;
        std::fs::write(&temp, json).map_err(io(&temp))?;
        std::fs::rename(&temp, &path).map_err(io(&path))
    }

    /// Every readable saved session, the most recent first.
    pub fn list(&self) -> Result<Vec<SessionInfo>, SessionError> {
        let entries = match std::fs::read_dir(&self.dir) {
            Ok(entries) => entries,
            Err(err) if err.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
            Err(source) => {
                return Err(SessionError::Io {
                    path: self.dir.clone(),
                    source,
                });
            }
        };
        let mut sessions = Vec::new();
        for entry in entries.flatten() {
            let path = entry.path();
            let is_session = path.extension().is_some_and(|e| e == "json")
                && !entry.file_name().to_string_lossy().starts_with('.');
            // A file this version cannot read (damaged, or from a newer
            // version) is left out of the list rather than hiding the rest.
            if is_session && let Ok(file) = read(&path) {
                sessions.push(file.info);
            }
        }
        sessions.sort_by(|a, b| b.updated.cmp(&a.updated).then(b.id.cmp(&a.id)));
        Ok(sessions)
    }

    /// Loads a session by id, or the most recent one.
    pub fn load(&self, id: Option<&str>) -> Result<(SessionInfo, LoopSnapshot), SessionError> {
        let id = match id {
            Some(id) => id.to_owned(),
            None => self
                .list()?
                .into_iter()
                .next()
                .map(|info| info.id)
                .ok_or_else(|| SessionError::NotFound("(there are none yet)".into()))?,
        };
        let path = self.path(&id);
        if !path.is_file() {
            return Err(SessionError::NotFound(id));
        }
        let file = read(&path)?;
        Ok((file.info, file.snapshot))
    }
}

fn read(path: &Path) -> Result<SessionFile, SessionError> {
    let bytes = std::fs::read(path).map_err(|source| SessionError::Io {
        path: path.to_path_buf(),
        source,
    })?;
    serde_json::from_slice(&bytes).map_err(|source| SessionError::Format {
        path: path.to_path_buf(),
        source,
    })
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
    use agentkit_core::{Item, SessionId};
    use agentkit_loop::{SNAPSHOT_VERSION, SnapshotPhase};

    fn snapshot(id: &str, text: &str) -> LoopSnapshot {
        LoopSnapshot {
            version: SNAPSHOT_VERSION,
            session_id: SessionId::new(id),
            transcript: vec![Item::system("be brief"), Item::user(text)],
            pending_input: Vec::new(),
            round: Vec::new(),
            phase: SnapshotPhase::Idle,
            next_turn_index: 1,
            next_item_index: 2,
            soft_interrupts: Vec::new(),
            turn: None,
            ended_turn: None,
            mutation_due: None,
            next_turn_cache: None,
            soft_queue_id: None,
            background: Vec::new(),
        }
    }

    #[test]
    fn save_list_load() {
        let dir = tempfile::tempdir().unwrap();
        let store = SessionStore::new(dir.path().join("state"));
        assert!(store.list().unwrap().is_empty());
        assert!(matches!(store.load(None), Err(SessionError::NotFound(_))));

        store
            .save(&snapshot("s1", "fix the tests"), dir.path())
            .unwrap();
        store
            .save(&snapshot("s2", "second\nline"), dir.path())
            .unwrap();
        store
            .save(&snapshot("s1", "fix the tests"), dir.path())
            .unwrap();
        std::fs::write(dir.path().join("state/broken.json"), "{").unwrap();
        let list = store.list().unwrap();
        assert_eq!(list.len(), 2);
        assert!(matches!(
            store.load(Some("broken")),
            Err(SessionError::Format { .. })
        ));
        assert_eq!(list.iter().find(|s| s.id == "s2").unwrap().title, "second");

        let (info, loaded) = store.load(Some("s1")).unwrap();
        assert_eq!(info.title, "fix the tests");
        assert_eq!(loaded, snapshot("s1", "fix the tests"));
        assert!(matches!(
            store.load(Some("nope")),
            Err(SessionError::NotFound(id)) if id == "nope"
        ));
    }

    #[test]
    fn shorten_cuts_long_lines() {
        assert_eq!(shorten("  hello  ", 10), "hello");
        assert_eq!(shorten("abcdefghijkl", 5), "abcd…");
    }
}
