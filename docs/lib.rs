//! The agentkit book as doc-tests: each chapter is included as the doc
//! comment of a module, so `cargo test --doc -p agentkit-book` compiles and
//! runs every Rust block in it. The MCP chapter's blocks start the MCP
//! reference server, installed by `cargo xtask fixtures` (a step of
//! `cargo xtask ci`). Build the readable book with `cargo xtask book`.

#[doc = include_str!("src/introduction.md")]
pub mod introduction {}
#[doc = include_str!("src/getting-started.md")]
pub mod getting_started {}
#[doc = include_str!("src/coding-agent.md")]
pub mod coding_agent {}
#[doc = include_str!("src/transcript.md")]
pub mod transcript {}
#[doc = include_str!("src/deltas.md")]
pub mod deltas {}
#[doc = include_str!("src/tools.md")]
pub mod tools {}
#[doc = include_str!("src/permissions.md")]
pub mod permissions {}
#[doc = include_str!("src/builtin-tools.md")]
pub mod builtin_tools {}
#[doc = include_str!("src/loop.md")]
pub mod agent_loop {}
#[doc = include_str!("src/interrupts.md")]
pub mod interrupts {}
#[doc = include_str!("src/soft-interrupts.md")]
pub mod soft_interrupts {}
#[doc = include_str!("src/cancellation.md")]
pub mod cancellation {}
#[doc = include_str!("src/observers.md")]
pub mod observers {}
#[doc = include_str!("src/usage.md")]
pub mod usage {}
#[doc = include_str!("src/compaction.md")]
pub mod compaction {}
#[doc = include_str!("src/tasks.md")]
pub mod tasks {}
#[doc = include_str!("src/background.md")]
pub mod background {}
#[doc = include_str!("src/subagents.md")]
pub mod subagents {}
#[doc = include_str!("src/snapshots.md")]
pub mod snapshots {}
#[doc = include_str!("src/replay.md")]
pub mod replay {}
#[doc = include_str!("src/sessions.md")]
pub mod sessions {}
#[doc = include_str!("src/providers.md")]
pub mod providers {}
#[doc = include_str!("src/mcp.md")]
pub mod mcp {}
#[doc = include_str!("src/context.md")]
pub mod context {}
#[doc = include_str!("src/acp.md")]
pub mod acp {}
#[doc = include_str!("src/server.md")]
pub mod server {}
#[doc = include_str!("src/tracing.md")]
pub mod tracing {}
#[doc = include_str!("src/testing.md")]
pub mod testing {}
#[doc = include_str!("src/reliability.md")]
pub mod reliability {}
#[doc = include_str!("src/umbrella.md")]
pub mod umbrella {}
#[doc = include_str!("src/performance.md")]
pub mod performance {}
#[doc = include_str!("src/architecture.md")]
pub mod architecture {}
