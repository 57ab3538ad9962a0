//! Anthropic's Messages API for agentkit, streaming.
//!
//! [`AnthropicAdapter`] implements the loop's
//! [`ModelAdapter`](agentkit_loop::ModelAdapter) against
//! `POST {base_url}/messages` with `stream: true`.
//!
//! What the adapter guarantees:
//! - system and developer items go to the `system` field; tool calls and
//!   results become `tool_use` / `tool_result` blocks, and consecutive tool
//!   results share one user message;
//! - extended thinking comes back as `Reasoning` parts holding the signature
//!   unchanged, redacted thinking as the part's `encrypted` data, and both
//!   are sent back exactly so;
//! - `cache_control` breakpoints (at most four) follow the turn's
//!   [`PromptCacheRequest`](agentkit_loop::PromptCacheRequest); usage reports
//!   cache reads and writes;
//! - every stream event type is handled (`ping` and unknown ones are
//!   ignored); an `overloaded_error` is `Overloaded`; a stream cut before the
//!   message ends, or a tool input that is not JSON, is a `Protocol` error;
//! - retries of the HTTP layer open the turn as `Warning` events.

mod adapter;
mod config;
mod error;
mod request;
mod stream;
mod usage;

pub use adapter::{AnthropicAdapter, AnthropicSession, AnthropicTurn};
pub use config::{ANTHROPIC_BASE_URL, ANTHROPIC_VERSION, AnthropicConfig, ToolChoice};

// The README's example is compiled with the doc-tests.
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
struct ReadmeDoctests;
