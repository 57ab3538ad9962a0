//! How to reach Gemini and what to ask it for.
//!
//! The key goes in the `x-goog-api-key` header (never in the URL, where
//! proxies and logs would keep it); the model is part of the path.

use agentkit_http::{HttpConfig, PriceTable};
use serde_json::{Map, Value};
use std::sync::Arc;

/// Google's Gemini API root (the Developer API, not Vertex AI).
pub const GEMINI_BASE_URL: &str = "https://generativelanguage.googleapis.com/v1beta";

/// Which function the model may or must call.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum ToolChoice {
    /// The model decides (`AUTO`, the default).
    Auto,
    /// No function calls (`NONE`).
    None,
    /// At least one function call (`ANY`).
    Required,
    /// This function (`ANY` restricted to one name).
    Tool(String),
}

/// Configuration of a [`GeminiAdapter`](crate::GeminiAdapter).
///
/// Its `Debug` output hides the key.
///
/// ```
/// use agentkit_provider_gemini::GeminiConfig;
///
/// let config = GeminiConfig::new("AIza-test", "gemini-2.5-flash").with_thinking(Some(1024));
/// assert_eq!(
///     config.endpoint(),
///     "https://generativelanguage.googleapis.com/v1beta/models/gemini-2.5-flash:streamGenerateContent?alt=sse"
/// );
/// assert!(!format!("{config:?}").contains("AIza-test"));
/// ```
#[derive(Clone, PartialEq)]
#[non_exhaustive]
pub struct GeminiConfig {
    /// The API root, up to and including the version (`.../v1beta`).
    pub base_url: String,
    /// The API key (`GEMINI_API_KEY` or `GOOGLE_API_KEY`).
    pub api_key: Option<String>,
    /// The model name (`gemini-2.5-flash`), without `models/`.
    pub model: String,
    /// The output-token limit (`maxOutputTokens`).
    pub max_tokens: Option<u32>,
    /// Thinking: `None` leaves the model's default; `Some(budget)` asks
    /// for thought summaries, with a token budget when `budget` is set.
    pub thinking: Option<Option<u32>>,
    /// The tool choice sent when tools are offered.
    pub tool_choice: Option<ToolChoice>,
    /// Extra headers.
    pub extra_headers: Vec<(String, String)>,
    /// Extra `generationConfig` fields (`temperature`, `topP` ...), merged
    /// last.
    pub generation_config: Map<String, Value>,
    /// Timeouts and retries.
    pub http: HttpConfig,
    /// Prices to compute each call's cost from.
    pub prices: Option<Arc<PriceTable>>,
}

impl GeminiConfig {
    /// Gemini with this key and model.
    pub fn new(api_key: impl Into<String>, model: impl Into<String>) -> Self {
        Self {
            base_url: GEMINI_BASE_URL.to_owned(),
            api_key: Some(api_key.into()),
            model: model.into(),
            max_tokens: None,
            thinking: None,
            tool_choice: None,
            extra_headers: Vec::new(),
            generation_config: Map::new(),
            http: HttpConfig::default(),
            prices: None,
        }
    }

    /// Asks for thought summaries, with a token budget when given.
    pub fn with_thinking(mut self, budget: Option<u32>) -> Self {
        self.thinking = Some(budget);
        self
    }

    /// The URL requests are posted to.
    pub fn endpoint(&self) -> String {
        let model = self.model.trim_start_matches("models/");
        format!(
            "{}/models/{model}:streamGenerateContent?alt=sse",
            self.base_url.trim_end_matches('/')
        )
    }
}

// The shared `with_*` methods (`with_base_url`, `with_max_tokens` ...).
agentkit_http::config_builders!(GeminiConfig: base_url, api_key, max_tokens,
    tool_choice(ToolChoice), header, http, prices);

impl std::fmt::Debug for GeminiConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("GeminiConfig")
            .field("base_url", &self.base_url)
            .field("api_key", &self.api_key.as_ref().map(|_| "<redacted>"))
            .field("model", &self.model)
            .field("max_tokens", &self.max_tokens)
            .field("thinking", &self.thinking)
            .field("tool_choice", &self.tool_choice)
            .field("extra_headers", &self.extra_headers)
            .field("generation_config", &self.generation_config)
            .field("http", &self.http)
            .finish_non_exhaustive()
    }
}
