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
//!
//! # Example
//!
//! The README's example (it runs as a doc-test here and in the README):
//!
//! ```rust
//! use agentkit_core::{Delta, Item, TurnId};
//! use agentkit_http::testing::{ScriptedResponse, TestServer};
//! use agentkit_loop::{ModelAdapter, ModelSession, ModelTurn, ModelTurnEvent, PromptCacheRequest, SessionConfig, TranscriptView, TurnRequest};
//! use agentkit_provider_anthropic::{AnthropicAdapter, AnthropicConfig};
//!
//! # tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap().block_on(async {
//! // A local server that answers like Anthropic, so this runs offline.
//! let server = TestServer::start([ScriptedResponse::sse(concat!(
//!     "data: {\"type\":\"message_start\",\"message\":{\"id\":\"msg_1\",\"usage\":{\"input_tokens\":20,\"output_tokens\":1}}}\n\n",
//!     "data: {\"type\":\"content_block_start\",\"index\":0,\"content_block\":{\"type\":\"text\",\"text\":\"\"}}\n\n",
//!     "data: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"text_delta\",\"text\":\"391\"}}\n\n",
//!     "data: {\"type\":\"content_block_stop\",\"index\":0}\n\n",
//!     "data: {\"type\":\"message_delta\",\"delta\":{\"stop_reason\":\"end_turn\"},\"usage\":{\"output_tokens\":3}}\n\n",
//!     "data: {\"type\":\"message_stop\"}\n\n",
//! ))])
//! .await?;
//!
//! let key = std::env::var("ANTHROPIC_API_KEY").unwrap_or_default();
//! let mut config = AnthropicConfig::new(key, "claude-sonnet-4-5").with_max_tokens(2048).with_thinking(1024);
//! config.base_url = format!("{}/v1", server.url()); // the stand-in: delete this line
//! let adapter = AnthropicAdapter::new(config)?;
//! let session_config = SessionConfig::new("demo").with_cache(PromptCacheRequest::automatic());
//! let mut session = adapter.start_session(session_config).await?;
//! let request = TurnRequest::new(
//!     "demo",
//!     TurnId::new("turn-1"),
//!     TranscriptView::from_items(vec![
//!         Item::system("You are terse."),
//!         Item::user("What is 17 × 23?"),
//!     ]),
//! );
//! let mut turn = session.begin_turn(request, None).await?;
//! let mut answer = String::new();
//! while let Some(event) = turn.next_event().await? {
//!     if let ModelTurnEvent::Delta(Delta::AppendText { chunk, .. }) = event {
//!         answer.push_str(&chunk);
//!     }
//! }
//! assert_eq!(answer, "391");
//! // Extended thinking and the cache breakpoints went out with the request.
//! let sent = server.requests()[0].json();
//! assert_eq!(sent["thinking"]["budget_tokens"], 1024);
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! # }).unwrap();
//! ```

mod adapter;
mod config;
mod request;
mod stream;
mod usage;

pub use adapter::{AnthropicAdapter, AnthropicSession, AnthropicTurn};
pub use config::{ANTHROPIC_BASE_URL, ANTHROPIC_VERSION, AnthropicConfig, ToolChoice};

// The README's example is compiled with the doc-tests.
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
struct ReadmeDoctests;
