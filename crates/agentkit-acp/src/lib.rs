//! Serves any agentkit agent to editors over the Agent Client Protocol.
//!
//! ACP is the JSON-RPC protocol editors (Zed, and others) use to drive
//! coding agents: the editor starts the agent as a child process and speaks
//! newline-delimited JSON-RPC on its stdin and stdout. [`AcpServer`] maps it
//! onto agentkit:
//!
//! | ACP | agentkit |
//! | --- | --- |
//! | `initialize` | protocol v1, `loadSession` with a [`SessionLoader`] |
//! | `session/new` | the host's factory builds an `Agent`; `Agent::start` |
//! | `session/load` | [`SessionLoader`] or (feature `store`) a session store, then the transcript replayed as updates |
//! | `session/prompt` | a user item; the turn runs with `LoopDriver::next` |
//! | `session/prompt` during a turn | a soft interrupt (`driver.soft_interrupts()`) |
//! | `session/cancel` | the turn's cancellation; it ends with `stopReason: cancelled` |
//! | `session/close` | the turn cancelled, the agent stopped, then [`AcpServer::on_session_closed`] |
//! | `session/set_mode` | the host's [`SessionModes`]: which approvals are given unasked |
//! | `session/list` | (feature `store`) the stored sessions, by working directory |
//! | `available_commands_update`, a `/command` prompt | the host's [`SlashCommand`]s and their handler |
//! | `plan` | every call of the host's todo tool ([`AcpServer::plan_tool`]) |
//! | `session/update` | text and reasoning deltas, tool calls and results |
//! | `session/request_permission` | `PendingApproval`: allow once, allow always (scoped by [`ALWAYS_SCOPE`]), reject |
//! | `elicitation/create` (agent to editor) | `PendingQuestion` (an MCP server's elicitation), when the editor announced the `elicitation` capability for its mode; declined otherwise |
//!
//! The protocol types of the `agent-client-protocol` crate stay inside this
//! crate: a host deals in agentkit types only.
//!
//! # Example
//!
//! The README's example (it serves an editor on stdin and stdout until the
//! editor hangs up, so here it is compiled, not run):
//!
//! ```no_run
//! use agentkit_acp::AcpServer;
//! use agentkit_loop::Agent;
//! use agentkit_testkit::{ScriptedModel, ScriptedTurn};
//!
//! # async fn run() -> Result<(), agentkit_acp::AcpError> {
//! let model = ScriptedModel::new([ScriptedTurn::text("Hello from agentkit.")]);
//! AcpServer::new(move |session| {
//!     eprintln!("new session in {}", session.cwd.display());
//!     Ok(Agent::builder().model(model.clone()))
//! })
//! .agent_info("my-agent", "0.1.0")
//! .serve_stdio()
//! .await
//! # }
//! ```

mod commands;
mod elicit;
mod error;
mod files;
mod kind;
mod loader;
mod modes;
mod server;
mod session;
#[cfg(feature = "store")]
mod store;
mod updates;

pub use commands::{CommandCall, SlashCommand};
pub use elicit::QUESTION_META;
pub use error::{AcpError, BoxError};
pub use files::EditorFiles;
pub use kind::ToolKind;
pub use loader::{MemorySessions, SessionLoader, SessionRecorder, StoredSession};
pub use modes::{SessionMode, SessionModes};
pub use server::{AcpServer, EditorMcpServer, SessionRequest};
pub use session::{ALWAYS_LABEL, ALWAYS_SCOPE, APPROVAL_META, QUESTION_ASKS};

// The README's example is compiled with the doc-tests.
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
struct ReadmeDoctests;
