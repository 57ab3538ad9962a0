//! How to reach the Messages API and what to ask it for.
//!
//! Anthropic requires an output-token limit on every request and versions
//! its API by header, so both have defaults here. Extended thinking is opt-in
//! with a token budget; beta features are named in the `anthropic-beta`
//! header.

use agentkit_http::{HttpConfig, PriceTable};
use serde_json::{Map, Value};
use std::sync::Arc;

/// Anthropic's endpoint root.
pub const ANTHROPIC_BASE_URL: &str = "https://api.anthropic.com/v1";

/// The `anthropic-version` this adapter speaks.
pub const ANTHROPIC_VERSION: &str = "2023-06-01";

/// Which tool the model may or must call.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum ToolChoice {
    /// The model decides (the default).
    Auto,
    /// The model must call some tool.
    Any,
    /// The model must not call tools.
    None,
    /// The model must call this tool.
    Tool(String),
}

/// Configuration of an [`AnthropicAdapter`](crate::AnthropicAdapter).
///
/// Its `Debug` output hides the API key.
///
/// ```
/// use agentkit_provider_anthropic::{AnthropicAdapter, AnthropicConfig};
///
/// let config = AnthropicConfig::new("sk-ant-test", "claude-sonnet-4-5")
///     .with_max_tokens(4_096)
///     .with_thinking(2_048);
/// assert_eq!(config.max_tokens, 4_096);
/// assert_eq!(config.thinking_budget, Some(2_048));
/// assert!(!format!("{config:?}").contains("sk-ant-test"), "the key stays out of logs");
/// let adapter = AnthropicAdapter::new(config).expect("a valid configuration");
/// # let _ = adapter;
/// ```
#[derive(Clone, PartialEq)]
#[non_exhaustive]
pub struct AnthropicConfig {
    /// The API root, up to and including `/v1`; `/messages` is appended.
    pub base_url: String,
    /// The `x-api-key`; `None` for gateways that authenticate otherwise.
    pub api_key: Option<String>,
    /// The model name.
    pub model: String,
    /// The output-token limit (required by the API).
    pub max_tokens: u32,
    /// Extended thinking's token budget; `None` leaves thinking off.
    pub thinking_budget: Option<u32>,
    /// The tool choice sent when tools are offered.
    pub tool_choice: Option<ToolChoice>,
    /// The `anthropic-version` header.
    pub api_version: String,
    /// Beta features, sent as `anthropic-beta`.
    pub betas: Vec<String>,
    /// Extra headers.
    pub extra_headers: Vec<(String, String)>,
    /// Extra top-level body fields (`temperature`, `metadata` ...), merged
    /// last.
    pub extra_body: Map<String, Value>,
    /// Timeouts and retries.
    pub http: HttpConfig,
    /// Prices to compute each call's cost from (the API reports none).
    pub prices: Option<Arc<PriceTable>>,
}

impl AnthropicConfig {
    /// Anthropic with this key and model, 4096 output tokens.
    pub fn new(api_key: impl Into<String>, model: impl Into<String>) -> Self {
        Self {
            base_url: ANTHROPIC_BASE_URL.to_owned(),
            api_key: Some(api_key.into()),
            model: model.into(),
            max_tokens: 4096,
            thinking_budget: None,
            tool_choice: None,
            api_version: ANTHROPIC_VERSION.to_owned(),
            betas: Vec::new(),
            extra_headers: Vec::new(),
            extra_body: Map::new(),
            http: HttpConfig::default(),
            prices: None,
        }
    }

    /// Turns extended thinking on with this budget (it must be below
    /// `max_tokens`).
    pub fn with_thinking(mut self, budget_tokens: u32) -> Self {
        self.thinking_budget = Some(budget_tokens);
        self
    }

    /// Adds a beta feature.
    pub fn with_beta(mut self, beta: impl Into<String>) -> Self {
        self.betas.push(beta.into());
        self
    }

    /// The URL requests are posted to.
    pub fn endpoint(&self) -> String {
        format!("{}/messages", self.base_url.trim_end_matches('/'))
    }
}

// The shared `with_*` methods (`with_base_url`, `with_max_tokens` ...).
agentkit_http::config_builders!(AnthropicConfig: base_url, api_key, max_tokens,
    tool_choice(ToolChoice), header, body_field, http, prices);

impl std::fmt::Debug for AnthropicConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AnthropicConfig")
            .field("base_url", &self.base_url)
            .field("api_key", &self.api_key.as_ref().map(|_| "<redacted>"))
            .field("model", &self.model)
            .field("max_tokens", &self.max_tokens)
            .field("thinking_budget", &self.thinking_budget)
            .field("tool_choice", &self.tool_choice)
            .field("api_version", &self.api_version)
            .field("betas", &self.betas)
            .field("extra_headers", &self.extra_headers)
            .field("extra_body", &self.extra_body)
            .field("http", &self.http)
            .field("prices", &self.prices)
            .finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn debug_hides_the_key() {
        let shown = format!("{:?}", AnthropicConfig::new("sk-ant-secret", "claude-test"));
        assert!(
            !shown.contains("sk-ant-secret") && shown.contains("<redacted>"),
            "{shown}"
        );
        assert_eq!(
            AnthropicConfig::new("k", "m").endpoint(),
            "https://api.anthropic.com/v1/messages"
        );
    }
}
