//! How to reach a Chat Completions endpoint and what to ask it for.
//!
//! The same adapter talks to OpenAI and to the many servers that copy its
//! API (Ollama, vLLM, llama.cpp's server, OpenRouter, Groq). They differ in
//! small ways that break requests: the name of the output-token limit, and
//! whether the `developer` role exists. The two constructors pick the right
//! defaults for each family; every field can still be changed.

use agentkit_http::{HttpConfig, PriceTable};
use serde_json::{Map, Value};
use std::sync::Arc;

/// OpenAI's own endpoint.
pub const OPENAI_BASE_URL: &str = "https://api.openai.com/v1";

/// Which tool the model may or must call.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum ToolChoice {
    /// The model decides (the provider's default).
    Auto,
    /// The model must not call tools.
    None,
    /// The model must call at least one tool.
    Required,
    /// The model must call this tool.
    Tool(String),
}

/// The request field that carries the output-token limit.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum MaxTokensField {
    /// `max_completion_tokens`: what OpenAI wants (reasoning models refuse
    /// the older field).
    MaxCompletionTokens,
    /// `max_tokens`: what most compatible servers understand.
    MaxTokens,
}

/// What a compatible server accepts beyond the common request, where
/// servers differ in ways that break requests. The defaults are OpenAI's;
/// the [presets](crate::Preset) set each server's.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct Quirks {
    /// Send `stream_options: {include_usage: true}` (Mistral and some
    /// gateways refuse the field and report usage anyway).
    pub stream_usage: bool,
    /// Send `prompt_cache_key` / `prompt_cache_retention` when the turn
    /// asks for caching (OpenAI's fields; strict servers refuse them).
    pub prompt_cache: bool,
    /// Send the assistant's reasoning back as `reasoning_content` beside
    /// its tool calls: DeepSeek's thinking mode wants it within a tool
    /// round.
    pub reasoning_content_back: bool,
    /// The `tool_choice` value that forces a tool call: `required`, or
    /// Mistral's `any`.
    pub required_tool_choice: &'static str,
}

impl Default for Quirks {
    fn default() -> Self {
        Self {
            stream_usage: true,
            prompt_cache: true,
            reasoning_content_back: false,
            required_tool_choice: "required",
        }
    }
}

/// Configuration of an [`OpenAiAdapter`](crate::OpenAiAdapter).
///
/// Its `Debug` output hides the API key.
///
/// ```
/// use agentkit_provider_openai::{OpenAiAdapter, OpenAiConfig};
///
/// // OpenAI itself.
/// let openai = OpenAiConfig::openai("sk-test", "gpt-4o-mini").with_max_tokens(1_024);
/// assert_eq!(openai.endpoint(), "https://api.openai.com/v1/chat/completions");
/// assert!(!format!("{openai:?}").contains("sk-test"), "the key stays out of logs");
///
/// // Any compatible server (Ollama, llama.cpp, vLLM) by base URL.
/// let local = OpenAiConfig::compatible("http://127.0.0.1:11434/v1", "llama3.2");
/// assert_eq!(local.endpoint(), "http://127.0.0.1:11434/v1/chat/completions");
/// let adapter = OpenAiAdapter::new(local).expect("a valid configuration");
/// # let _ = adapter;
/// ```
#[derive(Clone, PartialEq)]
#[non_exhaustive]
pub struct OpenAiConfig {
    /// The API root, up to and including `/v1`; `/chat/completions` is
    /// appended.
    pub base_url: String,
    /// The bearer token; `None` for local servers that need none.
    pub api_key: Option<String>,
    /// The model name.
    pub model: String,
    /// The output-token limit, if any.
    pub max_tokens: Option<u32>,
    /// Which field carries `max_tokens`.
    pub max_tokens_field: MaxTokensField,
    /// The tool choice sent when tools are offered (omitted otherwise).
    pub tool_choice: Option<ToolChoice>,
    /// `true` to send developer items with the `developer` role; `false` to
    /// send them as `system`, for servers that do not know the role.
    pub developer_role: bool,
    /// Extra headers (`OpenAI-Organization`, `HTTP-Referer` for OpenRouter
    /// ...).
    pub extra_headers: Vec<(String, String)>,
    /// Extra top-level body fields (`temperature`, `reasoning_effort`,
    /// `seed` ...), merged last so they can override ours.
    pub extra_body: Map<String, Value>,
    /// Timeouts and retries.
    pub http: HttpConfig,
    /// Prices to compute each call's cost from when the server reports
    /// none (OpenRouter reports it; OpenAI does not).
    pub prices: Option<Arc<PriceTable>>,
    /// A query string appended to every URL (`?api-version=...` on
    /// Azure), with its `?`; empty for none.
    pub query: String,
    /// What this server accepts beyond the common request.
    pub quirks: Quirks,
}

impl OpenAiConfig {
    /// OpenAI itself, with this key and model.
    pub fn openai(api_key: impl Into<String>, model: impl Into<String>) -> Self {
        Self {
            base_url: OPENAI_BASE_URL.to_owned(),
            api_key: Some(api_key.into()),
            model: model.into(),
            max_tokens: None,
            max_tokens_field: MaxTokensField::MaxCompletionTokens,
            tool_choice: None,
            developer_role: true,
            extra_headers: Vec::new(),
            extra_body: Map::new(),
            http: HttpConfig::default(),
            prices: None,
            query: String::new(),
            quirks: Quirks::default(),
        }
    }

    /// A compatible server at `base_url` (for example
    /// `http://127.0.0.1:11434/v1` for Ollama), without a key.
    pub fn compatible(base_url: impl Into<String>, model: impl Into<String>) -> Self {
        Self {
            base_url: base_url.into(),
            api_key: None,
            max_tokens_field: MaxTokensField::MaxTokens,
            developer_role: false,
            ..Self::openai("", model)
        }
    }

    /// The URL requests are posted to.
    pub fn endpoint(&self) -> String {
        format!(
            "{}/chat/completions{}",
            self.base_url.trim_end_matches('/'),
            self.query
        )
    }
}

// The shared `with_*` methods (`with_base_url`, `with_max_tokens` ...).
agentkit_http::config_builders!(OpenAiConfig: base_url, api_key, max_tokens,
    tool_choice(ToolChoice), header, body_field, http, prices);

impl std::fmt::Debug for OpenAiConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("OpenAiConfig")
            .field("base_url", &self.base_url)
            .field("api_key", &self.api_key.as_ref().map(|_| "<redacted>"))
            .field("model", &self.model)
            .field("max_tokens", &self.max_tokens)
            .field("max_tokens_field", &self.max_tokens_field)
            .field("tool_choice", &self.tool_choice)
            .field("developer_role", &self.developer_role)
            .field("extra_headers", &self.extra_headers)
            .field("extra_body", &self.extra_body)
            .field("http", &self.http)
            .field("prices", &self.prices)
            .field("query", &self.query)
            .field("quirks", &self.quirks)
            .finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn debug_hides_the_key_and_endpoints_join_cleanly() {
        let config = OpenAiConfig::openai("sk-secret", "gpt-test");
        let shown = format!("{config:?}");
        assert!(
            !shown.contains("sk-secret") && shown.contains("<redacted>"),
            "{shown}"
        );
        assert_eq!(
            OpenAiConfig::compatible("http://127.0.0.1:11434/v1/", "m").endpoint(),
            "http://127.0.0.1:11434/v1/chat/completions"
        );
    }
}
