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
//! full-auto).
//!
//! Standard output carries the protocol only: notes go to standard error.

use crate::app::agent_builder;
use crate::context::{ContextControl, ContextKeeper};
use crate::policy::ApprovalMode;
use crate::policy::SessionAllowList;
use crate::sessions::Sessions;
use agentkit_acp::{AcpError, AcpServer, SessionMode, SessionModes};
use agentkit_loop::ModelAdapter;
use agentkit_mcp::McpServerManager;

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
    AcpServer::new(move |request| {
        // "Always" in the terminal is a per-session allow-list; over ACP the
        // editor's "allow always" answers play that part.
        let always = SessionAllowList::default();
        let keeper = ContextKeeper::new(model.clone(), window, ContextControl::default());
        Ok(agent_builder(
            model.clone(),
            &request.cwd,
            always,
            mcp.as_ref(),
            keeper,
        ))
    })
    .agent_info("coding-agent", env!("CARGO_PKG_VERSION"))
    .session_modes(modes())
    .session_store(sessions.store())
    .session_lease_ttl(sessions.lease_ttl())
    .serve_stdio()
    .await
}
