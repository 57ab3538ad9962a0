//! Loading stored sessions for `session/load`.
//!
//! The ACP server keeps live sessions in memory. An editor reopening a
//! conversation from an earlier run sends `session/load`; the server then
//! asks its [`SessionLoader`] for what was stored, rebuilds the agent (from
//! the transcript, or from a driver snapshot when the store has one), and
//! replays the conversation to the editor as `session/update`s before it
//! answers. A session store (`agentkit-store`) implements this trait; the
//! in-memory [`MemorySessions`] serves tests and single-process hosts.

use crate::BoxError;
use agentkit_core::Item;
use agentkit_loop::{LoopSnapshot, TranscriptObserver};
use std::collections::HashMap;
use std::sync::{Arc, Mutex};

/// What a store holds for one session.
#[derive(Clone, Debug)]
#[non_exhaustive]
pub enum StoredSession {
    /// The transcript only: the session starts idle with these items.
    Transcript(Vec<Item>),
    /// A driver snapshot: the session resumes exactly where it stopped.
    Snapshot(Box<LoopSnapshot>),
}

impl StoredSession {
    /// The items to replay to the editor.
    pub fn transcript(&self) -> &[Item] {
        match self {
            StoredSession::Transcript(items) => items,
            StoredSession::Snapshot(snapshot) => &snapshot.transcript,
        }
    }
}

/// Finds stored sessions by id.
#[async_trait::async_trait]
pub trait SessionLoader: Send + Sync + 'static {
    /// The stored session, or `Ok(None)` if there is none by that id.
    async fn load(&self, session_id: &str) -> Result<Option<StoredSession>, BoxError>;
}

/// Sessions kept in memory: a [`SessionLoader`] plus a
/// [`TranscriptObserver`] per session that records what the agent appends.
///
/// ```
/// use agentkit_acp::{MemorySessions, SessionLoader};
/// use agentkit_core::Item;
/// use agentkit_loop::TranscriptObserver;
///
/// let sessions = MemorySessions::new();
/// let recorder = sessions.recorder("s-1", vec![Item::system("be brief")]);
/// recorder.on_item_appended(1, &Item::user("hi"));
/// let stored = futures::executor::block_on(sessions.load("s-1")).unwrap().unwrap();
/// assert_eq!(stored.transcript().len(), 2);
/// ```
#[derive(Clone, Debug, Default)]
pub struct MemorySessions {
    sessions: Arc<Mutex<HashMap<String, Vec<Item>>>>,
}

impl MemorySessions {
    /// An empty store.
    pub fn new() -> Self {
        Self::default()
    }

    /// Starts (or restarts) recording session `session_id` with the items it
    /// starts from; add the returned observer to the session's agent.
    pub fn recorder(&self, session_id: &str, start: Vec<Item>) -> SessionRecorder {
        self.sessions
            .lock()
            .expect("sessions lock")
            .insert(session_id.to_owned(), start);
        SessionRecorder {
            session_id: session_id.to_owned(),
            sessions: self.sessions.clone(),
        }
    }

    /// Goes on recording a session that was loaded: appends to what is
    /// stored instead of starting over.
    pub fn resume_recorder(&self, session_id: &str) -> SessionRecorder {
        self.sessions
            .lock()
            .expect("sessions lock")
            .entry(session_id.to_owned())
            .or_default();
        SessionRecorder {
            session_id: session_id.to_owned(),
            sessions: self.sessions.clone(),
        }
    }

    /// The recorded transcript of a session.
    pub fn transcript(&self, session_id: &str) -> Option<Vec<Item>> {
        self.sessions
            .lock()
            .expect("sessions lock")
            .get(session_id)
            .cloned()
    }
}

#[async_trait::async_trait]
impl SessionLoader for MemorySessions {
    async fn load(&self, session_id: &str) -> Result<Option<StoredSession>, BoxError> {
        Ok(self.transcript(session_id).map(StoredSession::Transcript))
    }
}

/// Records one session's appended items into [`MemorySessions`].
#[derive(Debug)]
pub struct SessionRecorder {
    session_id: String,
    sessions: Arc<Mutex<HashMap<String, Vec<Item>>>>,
}

impl TranscriptObserver for SessionRecorder {
    fn on_item_appended(&self, _index: usize, item: &Item) {
        if let Some(items) = self
            .sessions
            .lock()
            .expect("sessions lock")
            .get_mut(&self.session_id)
        {
            items.push(item.clone());
        }
    }
}
