//! OpenAI Chat Completions and the Responses API for agentkit, streaming.
//!
//! [`ResponsesAdapter`] speaks the Responses API (`POST /responses`), what
//! OpenAI now recommends: reasoning round-tripped (encrypted when nothing
//! is stored), function calls, structured output through `text.format`.
//! [`OpenAiAdapter`] implements the loop's
//! [`ModelAdapter`](agentkit_loop::ModelAdapter) against
//! `POST {base_url}/chat/completions` with `stream: true`, so it works with
//! OpenAI and with every server that copies the API: Ollama, vLLM,
//! llama.cpp's server, OpenRouter, Groq. Configure it with
//! [`OpenAiConfig::openai`] or [`OpenAiConfig::compatible`].
//!
//! What the adapter guarantees:
//! - every transcript item and part maps to a message the API accepts;
//!   reasoning is never replayed as text, and no assistant message without
//!   content or tool calls is sent;
//! - streamed text and reasoning (`reasoning_content` / `reasoning`) become
//!   parts; tool calls are assembled by index (servers that repeat the id and
//!   name in every fragment are handled) and their arguments checked as JSON;
//! - usage (cached and reasoning tokens included) is reported;
//!   `prompt_cache_key` comes from the turn's
//!   [`PromptCacheRequest`](agentkit_loop::PromptCacheRequest);
//! - retries of the HTTP layer are reported as `Warning` events at the start
//!   of the turn; a stream cut before its finish reason, or holding broken
//!   tool arguments, is a `Protocol` error.

mod adapter;
mod config;
mod error;
mod request;
mod responses;
mod stream;
mod usage;

pub use adapter::{OpenAiAdapter, OpenAiSession, OpenAiTurn};
pub use config::{MaxTokensField, OPENAI_BASE_URL, OpenAiConfig, ToolChoice};
pub use responses::{ResponsesAdapter, ResponsesConfig, ResponsesSession, ResponsesTurn};

// The README's example is compiled with the doc-tests.
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
struct ReadmeDoctests;
