//! Amazon Bedrock for agentkit: the Converse API, streamed
//! (`ConverseStream`).
//!
//! [`BedrockAdapter`] implements the loop's
//! [`ModelAdapter`](agentkit_loop::ModelAdapter) for every model family
//! Converse serves (Anthropic, Llama, Nova ...). [`eventstream`] decodes
//! the AWS event-stream framing answers come in, [`sigv4`] signs requests
//! with AWS Signature Version 4, and [`credentials`] finds the credentials
//! (environment, then the shared credentials file). What it guarantees:
//! - text, images, tool calls and results, and signed reasoning map to
//!   Converse content blocks; system items to `system`;
//! - tool calls arrive whole, their streamed input parsed at block end;
//!   reasoning keeps its signature so it can go back;
//! - usage counts cache reads and writes; stop reasons map to finish
//!   reasons, Bedrock's own kept under `bedrock.stop_reason`;
//! - exceptions, in the stream or as HTTP errors, are typed: throttling is
//!   retryable, validation (a too-long prompt as context length) and
//!   access errors are not.

mod adapter;
mod config;
pub mod credentials;
pub mod eventstream;
mod request;
pub mod sigv4;
mod stream;

pub use adapter::{BedrockAdapter, BedrockSession, BedrockTurn};
pub use config::{BedrockConfig, ToolChoice};

// The README's example is compiled with the doc-tests.
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
struct ReadmeDoctests;
