//! Google Gemini for agentkit: the native `streamGenerateContent` API,
//! streaming over server-sent events (`alt=sse`).
//!
//! [`GeminiAdapter`] implements the loop's
//! [`ModelAdapter`](agentkit_loop::ModelAdapter). What it guarantees:
//! - every transcript item maps to Gemini `contents` (system and developer
//!   items to `systemInstruction`, tool results to `functionResponse` parts
//!   named after their call);
//! - function calls become tool calls (with an id of our own when Gemini
//!   sends none), thought summaries become reasoning parts, and every
//!   `thoughtSignature` goes back on the part it came with;
//! - usage counts cached prompt tokens and thoughts; safety, recitation and
//!   prompt blocks finish as [`FinishReason::Blocked`](agentkit_core::FinishReason::Blocked),
//!   with Gemini's own reason under `gemini.finish_reason`;
//! - errors are typed: a bad key, quota, rate limit or overload each has
//!   its kind, and a stream cut before its finish reason is a protocol
//!   error.
//!
//! ```rust
//! use agentkit_core::{Delta, Item, TurnId};
//! use agentkit_http::testing::{ScriptedResponse, TestServer};
//! use agentkit_loop::{ModelAdapter, ModelSession, ModelTurn, ModelTurnEvent, SessionConfig, TranscriptView, TurnRequest};
//! use agentkit_provider_gemini::{GeminiAdapter, GeminiConfig};
//!
//! # tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap().block_on(async {
//! // A local server that answers like Gemini, so this runs offline.
//! let server = TestServer::start([ScriptedResponse::sse(concat!(
//!     "data: {\"candidates\":[{\"content\":{\"role\":\"model\",\"parts\":[{\"text\":\"Bonjour\"}]},",
//!     "\"finishReason\":\"STOP\"}]}\r\n\r\n",
//! ))])
//! .await?;
//!
//! let key = std::env::var("GEMINI_API_KEY").unwrap_or_default();
//! let config = GeminiConfig::new(key, "gemini-2.5-flash")
//!     .with_base_url(format!("{}/v1beta", server.url())); // the stand-in: delete this line
//! let adapter = GeminiAdapter::new(config)?;
//! let mut session = adapter.start_session(SessionConfig::new("demo")).await?;
//! let request = TurnRequest::new(
//!     "demo",
//!     TurnId::new("turn-1"),
//!     TranscriptView::from_items(vec![Item::user("Say hello in French.")]),
//! );
//! let mut turn = session.begin_turn(request).await?;
//! let mut answer = String::new();
//! while let Some(event) = turn.next_event().await? {
//!     if let ModelTurnEvent::Delta(Delta::AppendText { chunk, .. }) = event {
//!         answer.push_str(&chunk);
//!     }
//! }
//! assert_eq!(answer, "Bonjour");
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! # }).unwrap();
//! ```

mod adapter;
mod config;
mod request;
mod stream;

pub use adapter::{GeminiAdapter, GeminiSession, GeminiTurn};
pub use config::{GEMINI_BASE_URL, GeminiConfig, ToolChoice};

// The README's example is compiled with the doc-tests.
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
struct ReadmeDoctests;
