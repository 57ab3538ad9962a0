//! agentkit: a toolkit for building agents on large language models.
//!
//! This crate gathers the agentkit crates behind features, so an
//! application can depend on one crate and turn on what it uses. Each part
//! is re-exported under a short module name; [`prelude`] holds the names
//! almost every agent needs.
//!
//! | feature | module | crate |
//! | --- | --- | --- |
//! | (always) | [`core`] | `agentkit-core`: transcript, deltas, ids, cancellation |
//! | `tools` | `tools` | `agentkit-tools-core`: tools, sources, permissions |
//! | `loop` (default) | `agent` | `agentkit-loop`: `Agent`, `LoopDriver` |
//! | `reporting` | `reporting` | `agentkit-reporting`: observers |
//! | `compaction` | `compaction` | `agentkit-compaction`: context budgets |
//! | `testkit` | `testkit` | `agentkit-testkit`: `ScriptedModel` |
//! | `http` | `http` | `agentkit-http`: streaming client, retries, provider errors |
//! | `loop` (default) | [`provider`] | `DynModel`, the provider picked from the environment, structured answers |
//! | `openai` | `openai` | `agentkit-provider-openai`: the Responses API, Chat Completions, Azure OpenAI and compatible servers with their presets |
//! | `anthropic` | `anthropic` | `agentkit-provider-anthropic`: Messages API |
//! | `gemini` | `gemini` | `agentkit-provider-gemini`: Google Gemini's native API |
//! | `mcp` | `mcp` | `agentkit-mcp`: MCP servers as a tool source |
//! | `fs` | `fs` | `agentkit-tool-fs`: filesystem tools |
//! | `shell` | `shell` | `agentkit-tool-shell`: the `shell_exec` tool |
//! | `store` | `store` | `agentkit-store`: durable sessions (SQLite) |
//! | `store-postgres` | `store` | the same, with the PostgreSQL backend |
//! | `context` | `context` | `agentkit-context`: `AGENTS.md` and Agent Skills |
//! | `acp` | `acp` | `agentkit-acp`: serving agents to editors over ACP |
//! | `subagent` | `subagent` | `agentkit-subagent`: an agent offered to another as a tool |
//! | `server` | `server` | `agentkit-server`: any agent served over HTTP (AG-UI), per tenant |
//! | `schemars` | | `provider::output_schema_for`: schemas derived from Rust types |
//! | `full` | | everything above |
//!
//! # Example
//!
//! The README's example (it runs as a doc-test here and in the README):
//!
//! ```rust
//! # #[cfg(feature = "testkit")] {
//! use agentkit::prelude::*;
//! use agentkit::testkit::{ScriptedModel, ScriptedTurn};
//!
//! # tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap().block_on(async {
//! let agent = Agent::builder()
//!     .model(ScriptedModel::new([ScriptedTurn::text("Hello!")]))
//!     .input(vec![Item::user("hi")])
//!     .build()?;
//! let mut driver = agent.start(SessionConfig::new("demo")).await?;
//! let LoopStep::Finished(result) = driver.next().await? else { unreachable!() };
//! assert_eq!(result.finish_reason, FinishReason::Completed);
//! # Ok::<(), LoopError>(())
//! # }).unwrap();
//! # }
//! ```

pub use agentkit_core as core;

#[cfg(feature = "acp")]
pub use agentkit_acp as acp;
#[cfg(feature = "compaction")]
pub use agentkit_compaction as compaction;
#[cfg(feature = "context")]
pub use agentkit_context as context;
#[cfg(feature = "http")]
pub use agentkit_http as http;
#[cfg(feature = "loop")]
pub use agentkit_loop as agent;
#[cfg(feature = "loop")]
pub mod provider;
#[cfg(feature = "mcp")]
pub use agentkit_mcp as mcp;
#[cfg(feature = "anthropic")]
pub use agentkit_provider_anthropic as anthropic;
#[cfg(feature = "gemini")]
pub use agentkit_provider_gemini as gemini;
#[cfg(feature = "openai")]
pub use agentkit_provider_openai as openai;
#[cfg(feature = "reporting")]
pub use agentkit_reporting as reporting;
#[cfg(feature = "server")]
pub use agentkit_server as server;
#[cfg(feature = "store")]
pub use agentkit_store as store;
#[cfg(feature = "subagent")]
pub use agentkit_subagent as subagent;
#[cfg(feature = "testkit")]
pub use agentkit_testkit as testkit;
#[cfg(feature = "fs")]
pub use agentkit_tool_fs as fs;
#[cfg(feature = "shell")]
pub use agentkit_tool_shell as shell;
#[cfg(feature = "tools")]
pub use agentkit_tools_core as tools;

/// The names most agents use, for `use agentkit::prelude::*`.
pub mod prelude {
    pub use agentkit_core::{
        CancellationController, FinishReason, Item, ItemKind, Part, ToolCallPart, ToolResultPart,
    };
    #[cfg(feature = "loop")]
    pub use agentkit_loop::{
        Agent, AgentEvent, LoopDriver, LoopError, LoopInterrupt, LoopObserver, LoopStep,
        SessionConfig, TurnResult,
    };
    #[cfg(feature = "tools")]
    pub use agentkit_tools_core::{
        SafeDefaultPermissions, Tool, ToolContext, ToolError, ToolRegistry, ToolRequest,
        ToolResult, ToolSpec, TypedTool,
    };
}

// The README's example is compiled and run with the doc-tests.
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
struct ReadmeDoctests;
