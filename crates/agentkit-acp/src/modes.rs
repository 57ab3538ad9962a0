//! Session modes: named approval policies the editor switches between.
//!
//! An editor shows an agent's modes as a picker (Zed: "Ask", "Auto-edit",
//! "Full auto"). The host names its modes and says, for each, which
//! approval requests it answers without asking; the server offers them in
//! `session/new` and `session/load`, follows `session/set_mode`, reports
//! the change as a `current_mode_update`, and before asking the editor for
//! a permission checks whether the session's current mode approves it.

use agent_client_protocol::v1::schema as acp;
use agentkit_tools_core::ApprovalRequest;
use std::sync::Arc;

/// One mode the editor offers.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct SessionMode {
    /// Its id in the protocol (`ask`, `auto-edit`).
    pub id: String,
    /// What the editor shows.
    pub name: String,
    /// A longer explanation, if any.
    pub description: Option<String>,
}

impl SessionMode {
    /// A mode with this id and name.
    pub fn new(id: impl Into<String>, name: impl Into<String>) -> Self {
        Self {
            id: id.into(),
            name: name.into(),
            description: None,
        }
    }

    /// Sets the description.
    pub fn with_description(mut self, description: impl Into<String>) -> Self {
        self.description = Some(description.into());
        self
    }
}

type Approves = dyn Fn(&str, &ApprovalRequest) -> bool + Send + Sync;

/// The modes of every session and what each approves without asking; the
/// first mode is where a session starts.
///
/// ```
/// use agentkit_acp::{SessionMode, SessionModes};
///
/// let modes = SessionModes::new(
///     vec![SessionMode::new("ask", "Ask"), SessionMode::new("yolo", "Approve everything")],
///     |mode, _request| mode == "yolo",
/// );
/// assert_eq!(modes.default_mode(), "ask");
/// ```
#[derive(Clone)]
pub struct SessionModes {
    modes: Vec<SessionMode>,
    approves: Arc<Approves>,
}

impl std::fmt::Debug for SessionModes {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SessionModes")
            .field("modes", &self.modes)
            .finish_non_exhaustive()
    }
}

impl SessionModes {
    /// `modes` (at least one; the first is the default), and `approves`:
    /// whether the mode with this id approves the request unasked.
    pub fn new(
        modes: Vec<SessionMode>,
        approves: impl Fn(&str, &ApprovalRequest) -> bool + Send + Sync + 'static,
    ) -> Self {
        Self {
            modes,
            approves: Arc::new(approves),
        }
    }

    /// The id sessions start in.
    pub fn default_mode(&self) -> &str {
        self.modes.first().map_or("", |mode| mode.id.as_str())
    }

    /// `true` when `id` is one of the modes.
    pub(crate) fn contains(&self, id: &str) -> bool {
        self.modes.iter().any(|mode| mode.id == id)
    }

    /// `true` when `mode` approves `request` without asking.
    pub(crate) fn approves(&self, mode: &str, request: &ApprovalRequest) -> bool {
        (self.approves)(mode, request)
    }

    /// The protocol's picture of the modes, `current` selected.
    pub(crate) fn state(&self, current: &str) -> acp::SessionModeState {
        let available = self
            .modes
            .iter()
            .map(|mode| {
                acp::SessionMode::new(mode.id.clone(), mode.name.clone())
                    .description(mode.description.clone())
            })
            .collect();
        acp::SessionModeState::new(current.to_owned(), available)
    }
}
