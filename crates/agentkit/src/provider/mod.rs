//! Choosing the model at run time, and structured answers.
//!
//! [`DynModel`] erases an adapter's type so a host can pick OpenAI,
//! Anthropic or any compatible server from its configuration;
//! `model_from_env` does the picking from documented environment
//! variables (see `ProviderConfig`; both exist with any provider feature:
//! `openai`, `anthropic`, `gemini`, `bedrock`). [`parse_structured`] turns an answer
//! given under an [`OutputSchema`](agentkit_loop::OutputSchema) into a Rust
//! type.

mod dyn_model;
#[cfg(any(
    feature = "openai",
    feature = "anthropic",
    feature = "gemini",
    feature = "bedrock"
))]
mod env;
mod structured;

pub use dyn_model::{DynModel, DynSession, DynTurn};
#[cfg(any(
    feature = "openai",
    feature = "anthropic",
    feature = "gemini",
    feature = "bedrock"
))]
pub use env::{
    ConfigError, DEFAULT_ANTHROPIC_MODEL, DEFAULT_GEMINI_MODEL, DEFAULT_OPENAI_MODEL,
    ProviderConfig, ProviderKind, model_from_env,
};
#[cfg(feature = "schemars")]
pub use structured::output_schema_for;
pub use structured::{StructuredOutputError, parse_structured, parse_structured_items};
