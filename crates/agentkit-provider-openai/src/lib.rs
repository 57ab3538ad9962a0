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
//!
//! # Example
//!
//! The README's example (it runs as a doc-test here and in the README):
//!
//! ```rust
//! use agentkit_core::{Delta, Item, TurnId};
//! use agentkit_http::testing::{ScriptedResponse, TestServer};
//! use agentkit_loop::{ModelAdapter, ModelSession, ModelTurn, ModelTurnEvent, SessionConfig, TurnRequest, TranscriptView};
//! use agentkit_provider_openai::{OpenAiAdapter, OpenAiConfig};
//!
//! # tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap().block_on(async {
//! // A local server that answers like OpenAI, so this runs offline.
//! let server = TestServer::start([ScriptedResponse::sse(concat!(
//!     "data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"Bonjour\"},\"finish_reason\":\"stop\"}]}\n\n",
//!     "data: [DONE]\n\n",
//! ))])
//! .await?;
//!
//! // OpenAI itself...
//! let key = std::env::var("OPENAI_API_KEY").unwrap_or_default();
//! let mut config = OpenAiConfig::openai(key, "gpt-4o-mini").with_max_tokens(512);
//! // ...or a local server: OpenAiConfig::compatible("http://127.0.0.1:11434/v1", "llama3.2")
//! config.base_url = format!("{}/v1", server.url()); // the stand-in: delete this line
//! let adapter = OpenAiAdapter::new(config)?;
//!
//! let mut session = adapter.start_session(SessionConfig::new("demo")).await?;
//! let request = TurnRequest::new(
//!     "demo",
//!     TurnId::new("turn-1"),
//!     TranscriptView::from_items(vec![Item::user("Say hello in French.")]),
//! );
//! let mut turn = session.begin_turn(request, None).await?;
//! let mut answer = String::new();
//! while let Some(event) = turn.next_event().await? {
//!     match event {
//!         ModelTurnEvent::Delta(Delta::AppendText { chunk, .. }) => answer.push_str(&chunk),
//!         ModelTurnEvent::Finished(result) => println!("[{:?}]", result.finish_reason),
//!         _ => {}
//!     }
//! }
//! assert_eq!(answer, "Bonjour");
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! # }).unwrap();
//! ```

mod adapter;
mod azure;
mod config;
mod presets;
mod request;
mod responses;
mod stream;
mod usage;

pub use adapter::{OpenAiAdapter, OpenAiSession, OpenAiTurn};
pub use azure::{
    AZURE_CHAT_API_VERSION, AZURE_RESPONSES_API_VERSION, AzureCredential, AzureOpenAi,
};
pub use config::{MaxTokensField, OPENAI_BASE_URL, OpenAiConfig, Quirks, ToolChoice};
pub use presets::Preset;
pub use responses::hosted::mcp_approval_response;
pub use responses::{ResponsesAdapter, ResponsesConfig, ResponsesSession, ResponsesTurn};

// The README's example is compiled with the doc-tests.
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
struct ReadmeDoctests;
