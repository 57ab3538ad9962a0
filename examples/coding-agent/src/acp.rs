//! `coding-agent --acp`: the same agent served to editors (Zed and others)
//! over the Agent Client Protocol on stdin and stdout.
//!
//! The editor starts `coding-agent --acp` as its agent process. Each ACP
//! session gets the coding agent for the working directory the editor
//! gives (the tools, the permission policy, the MCP servers of the config
//! file), its approvals asked as ACP permission requests. Sessions are
//! kept in the same SQLite store as the terminal's, so `session/load` opens
//! a stored session (one started in the terminal too) where it stopped,
//! and `coding-agent --resume ID` continues one an editor started. The
//! editor's mode picker offers the approval modes (ask, auto-edit,
//! full-auto), its prompt box the slash commands (`/compact`, `/clear`,
//! `/help`), and its plan view the agent's todo list (`todo_write`). When
//! the editor offers its buffers, the file tools read and write through
//! them (`buffers.rs`); shell commands stay in the agent's own sandbox.
//! The MCP servers are connected once and shared by every session, so
//! their roots (MCP `roots`) are the directories of the sessions opened so
//! open: announced empty at startup, each new or loaded session adds its
//! own, a closed one (`session/close`) takes it away, and the servers are
//! told of each change.
//!
//! Standard output carries the protocol only: notes go to standard error.

use crate::app::agent_builder_with;
use crate::context::{ContextControl, ContextKeeper};
use crate::policy::ApprovalMode;
use crate::policy::SessionAllowList;
use crate::sessions::Sessions;
use crate::todo::TODO_TOOL;
use agentkit_acp::{AcpError, AcpServer, CommandCall, SessionMode, SessionModes, SlashCommand};
use agentkit_loop::ModelAdapter;
use agentkit_mcp::{McpRoot, McpServerManager};
use std::collections::{BTreeSet, HashMap};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

/// The approval modes as ACP session modes: the editor's mode picker
/// chooses what runs without a permission request, as `exec --approval`
/// does.
fn modes() -> SessionModes {
    let modes = ApprovalMode::ALL
        .into_iter()
        .map(|mode| {
            let name = match mode {
                ApprovalMode::Ask => "Ask",
                ApprovalMode::AutoEdit => "Auto-edit",
                ApprovalMode::FullAuto => "Full auto",
            };
            SessionMode::new(mode.name(), name).with_description(mode.describe())
        })
        .collect();
    SessionModes::new(modes, |mode, request| {
        ApprovalMode::from_name(mode).is_some_and(|mode| mode.approves(request))
    })
}

/// Each session's `/compact` and `/clear` handle, by session id.
type Controls = Arc<Mutex<HashMap<String, ContextControl>>>;

/// The slash commands an editor offers, as the terminal has them.
fn commands() -> Vec<SlashCommand> {
    vec![
        SlashCommand::new(
            "compact",
            "Summarize the conversation so far (before the next model call)",
        ),
        SlashCommand::new(
            "clear",
            "Start a fresh conversation (the next message goes alone)",
        ),
        SlashCommand::new("help", "List these commands"),
    ]
}

/// Runs a slash command sent as a prompt; the text is the agent's answer.
fn run_command(controls: &Controls, call: &CommandCall) -> Result<String, agentkit_acp::BoxError> {
    let control = controls
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .get(&call.session_id)
        .cloned()
        .ok_or_else(|| format!("no session {}", call.session_id))?;
    Ok(match call.name.as_str() {
        "compact" => {
            control.compact();
            "The conversation will be summarized before the next model call.".to_owned()
        }
        "clear" => {
            control.clear();
            "Cleared: the next message starts a fresh conversation (the saved session stays)."
                .to_owned()
        }
        _ => commands()
            .iter()
            .map(|c| format!("/{}: {}", c.name, c.description))
            .collect::<Vec<_>>()
            .join("\n"),
    })
}

/// The directories of the sessions open on this connection, offered to
/// the shared MCP servers as their roots.
#[derive(Clone)]
struct SessionRoots {
    manager: McpServerManager,
    /// Each open session's directory, by session id.
    dirs: Arc<Mutex<HashMap<String, PathBuf>>>,
    /// Held while the list is read and sent, so a late update never
    /// overwrites a newer one.
    sending: Arc<tokio::sync::Mutex<()>>,
}

impl SessionRoots {
    fn new(manager: McpServerManager) -> Self {
        Self {
            manager,
            dirs: Arc::default(),
            sending: Arc::default(),
        }
    }

    /// Adds a session's directory.
    fn add(&self, session: &str, dir: &Path) {
        self.dirs
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .insert(session.to_owned(), dir.to_path_buf());
        self.send();
    }

    /// Takes a closed session's directory away (unless another open
    /// session has it too).
    fn remove(&self, session: &str) {
        self.dirs
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .remove(session);
        self.send();
    }

    /// Sends the union of the directories; the servers hear of it in the
    /// background (the editor's request does not wait on them). The
    /// manager tells them only when the list really changed.
    fn send(&self) {
        let this = self.clone();
        tokio::spawn(async move {
            let _sending = this.sending.lock().await;
            let dirs: BTreeSet<PathBuf> = this
                .dirs
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .values()
                .cloned()
                .collect();
            let roots = dirs
                .iter()
                .map(|dir| McpRoot::directory(dir).name(root_name(dir)))
                .collect();
            this.manager.set_roots(roots).await;
        });
    }
}

/// A root's name: the directory's last component.
fn root_name(dir: &Path) -> String {
    dir.file_name()
        .map(|name| name.to_string_lossy().into_owned())
        .unwrap_or_else(|| dir.display().to_string())
}

/// Serves ACP on stdio until the editor closes the connection.
pub async fn serve<M>(
    model: M,
    window: usize,
    sessions: &Sessions,
    mcp: Option<McpServerManager>,
) -> Result<(), AcpError>
where
    M: ModelAdapter + Clone + Send + Sync + 'static,
    agentkit_loop::LoopDriver<M::Session>: Send,
{
    let controls = Controls::default();
    let registered = controls.clone();
    let roots = mcp.clone().map(SessionRoots::new);
    let closing = (roots.clone(), controls.clone());
    AcpServer::new(move |request| {
        if let Some(roots) = &roots {
            roots.add(&request.session_id, &request.cwd);
        }
        // "Always" in the terminal is a per-session allow-list; over ACP the
        // editor's "allow always" answers play that part.
        let always = SessionAllowList::default();
        let control = ContextControl::default();
        registered
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .insert(request.session_id.clone(), control.clone());
        let keeper = ContextKeeper::new(model.clone(), window, control);
        let files = crate::buffers::fs_config(&request.cwd, request.editor_files.clone());
        Ok(agent_builder_with(
            model.clone(),
            &request.cwd,
            always,
            mcp.as_ref(),
            keeper,
            files,
        ))
    })
    .agent_info("coding-agent", env!("CARGO_PKG_VERSION"))
    .on_session_closed(move |id| {
        let (roots, controls) = &closing;
        if let Some(roots) = roots {
            roots.remove(id);
        }
        controls
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .remove(id);
    })
    .session_modes(modes())
    .slash_commands(commands(), move |call| run_command(&controls, call))
    .plan_tool(TODO_TOOL)
    .session_store(sessions.store())
    .session_lease_ttl(sessions.lease_ttl())
    .serve_stdio()
    .await
}
