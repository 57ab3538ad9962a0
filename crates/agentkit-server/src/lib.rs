//! Agents as a service: any agentkit [`Agent`](agentkit_loop::Agent) served
//! over HTTP with the AG-UI protocol.
//!
//! A frontend posts an AG-UI `RunAgentInput` to `/agui` and reads the run as
//! server-sent events: `RUN_STARTED`, `TEXT_MESSAGE_START/CONTENT/END`,
//! `TOOL_CALL_START/ARGS/END/RESULT`, `RUN_FINISHED` (or `RUN_ERROR`), so
//! existing AG-UI clients work unchanged. A call that needs approval ends
//! the run with an *interrupt* outcome; the next run request answers it in
//! `resume`. What AG-UI leaves to the server has routes of its own:
//! messages typed while the agent works (queued as steer, urgent or
//! follow-up), cancel, listing and loading sessions, and the session's
//! whole event stream, which a client that reconnects with `Last-Event-ID`
//! picks up where it left off.
//!
//! `GET /` serves a small chat page speaking those same routes, so a person
//! can use a served agent from a browser.
//!
//! Sessions live in an [`agentkit_store`] store (SQLite for one replica),
//! leased by the replica that drives them. Every request carries a bearer
//! token naming a tenant; a tenant sees only its own sessions, and
//! another's answer 404.
//!
//! # Example
//!
//! ```
//! use agentkit_loop::Agent;
//! use agentkit_server::AgentServer;
//! use agentkit_store::SqliteStore;
//! use agentkit_testkit::{ScriptedModel, ScriptedTurn};
//! use std::sync::Arc;
//!
//! # tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap().block_on(async {
//! let model = ScriptedModel::new([ScriptedTurn::text("Hello!")]);
//! let server = AgentServer::builder()
//!     .store(Arc::new(SqliteStore::open_in_memory()?))
//!     .agent(move |_session| Agent::builder().model(model.clone()))
//!     .tenant("secret-token", "acme")
//!     .build()?;
//! let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
//! let address = listener.local_addr()?;
//! tokio::spawn(async move { axum::serve(listener, server.router()).await });
//! // POST http://{address}/agui with `Authorization: Bearer secret-token`.
//! # let _ = address;
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! # }).unwrap();
//! ```

mod agui;
mod error;
mod forward;
mod host;
mod hub;
mod page;
mod server;
mod stream;
mod tenant;
mod translate;

pub use agui::{Message, ResumeEntry, RunAgentInput};
pub use error::ServerError;
pub use server::{AgentServer, BuildError, ServerBuilder, SessionContext};
pub use tenant::Tenant;

// The README's example is compiled with the doc-tests.
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
struct ReadmeDoctests;
